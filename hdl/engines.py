"""The grid engines (SPEC section 7): :data:`ENGINES`, :func:`check_engine` and
:func:`make_grid`, the one place that builds a grid of either engine (host controller, mesh
tile, simulator builds, board tops)."""

from bitgrid.terms import ENGINES

__all__ = ["ENGINES", "check_engine", "make_grid", "DEFAULT_EVALUATORS"]

#: Evaluators of a multiplexed grid when none are given.
DEFAULT_EVALUATORS = 2


def check_engine(engine):
    """``engine`` if it is one of :data:`ENGINES`, else :class:`ValueError` naming it."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    return engine


def make_grid(width, height, *, engine="direct", evaluators=None, storage="ff", init=None,
              **options):
    """A ``width`` x ``height`` grid of ``engine``: a :class:`~bitgrid.hdl.grid.Grid` with
    ``storage``, ``init`` and the other ``options``, or a
    :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid` with ``evaluators`` (default
    :data:`DEFAULT_EVALUATORS`, at most ``width / 2``) and ``init`` (its storage is block RAM;
    ``storage`` is not used, and of the options only ``counter_width`` and ``latch_edges``).

    :raises ValueError: for an unknown engine, ``evaluators`` on a direct grid, or an option
        the multiplexed engine does not have; and what the grid's constructor raises.
    """
    check_engine(engine)
    if engine == "direct":
        if evaluators is not None:
            raise ValueError("evaluators is an option of the multiplexed engine, not the "
                             "direct grid")
        from .grid import Grid
        return Grid(width, height, storage=storage, init=init, **options)
    unknown = set(options) - {"counter_width", "latch_edges"}
    if unknown:
        raise ValueError(f"the multiplexed engine has no option {', '.join(sorted(unknown))}")
    from .multiplexed import MultiplexedGrid
    if evaluators is None:
        evaluators = min(DEFAULT_EVALUATORS, max(2, width // 2))
    return MultiplexedGrid(width, height, evaluators=evaluators, init=init, **options)
