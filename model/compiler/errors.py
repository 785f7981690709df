"""The one error of the compiler (``bitgrid compile``, issue 12).

Front end (Yosys, Amaranth, ``--expr``) and back end (packing, placement, routing, timing) raise
:class:`CompileError` with one line saying what is wrong and what to do; the command line turns
it into ``error: ...`` and exit status 2 (it is a :class:`ValueError`, see
:mod:`bitgrid.cli.errors`).
"""

__all__ = ["CompileError"]


class CompileError(ValueError):
    """A design that cannot be compiled: a syntax error, an unsupported construct (latches,
    tristates, several clocks, ...), or a design that does not fit the given size or region.
    The message is one line and says what to do."""
