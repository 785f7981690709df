"""Suite-wide pytest hooks. Helpers live in the ``support`` package (``tests/support``)."""

from support.conformance import conformance_dir


def pytest_report_header(config):
    """Say where the shared conformance cases are read from (``../shared/conformance`` or
    ``$BITGRID_CONFORMANCE``)."""
    return f"bitgrid conformance cases: {conformance_dir()}"
