"""Fixtures of the whole suite. Helpers live in the ``support`` package (``tests/support``)."""

import pytest

from support.conformance import conformance_dir, load_conformance


@pytest.fixture
def conformance():
    """The folder of the shared conformance cases (fails the test if it is missing)."""
    path = conformance_dir()
    load_conformance("random_2x2")      # fails with the set-up hint when the folder is missing
    return path
