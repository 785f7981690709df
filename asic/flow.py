"""The ASIC flow of ``bitgrid asic`` (issue 14; docs/asic.md): the grid's Verilog, synthesis
of the grid and of one cell to a PDK's standard cells, the area split, static timing, and the
report (JSON plus a readable table).

Files written to the output folder:

* ``grid.v``: the RTL (:func:`bitgrid.hdl.verilog.grid_verilog`, top ``bitgrid_grid``);
* ``synth/bitgrid_grid.mapped.v`` (and ``.json``, ``.stat.json``, ``.yosys.log``): the whole
  grid flattened and mapped (the netlist OpenSTA times and qflow places);
* ``synth/cell/<cell module>.mapped.v``: one cell alone, for the area split;
* ``synth/bitgrid_grid.sta.log``: OpenSTA's report;
* ``report.json`` and ``report.txt``.
"""

import sys
import time
from pathlib import Path

from bitgrid.checks import check_bool
from bitgrid.config import check_grid_size
from bitgrid.files import atomic_write
from bitgrid.terms import check_choice

from . import area as _area
from .pdk import find_pdk
from .report import write_report
from .sta import ASSUMPTIONS, require_sta, run_sta
from .synth import synthesise

__all__ = ["ASIC_STORAGES", "run_asic", "TOP"]

#: Storage kinds the ASIC flow synthesises (SPEC section 7): flip-flops and latches.
ASIC_STORAGES = ("ff", "latch")

#: Module name of the grid top.
TOP = "bitgrid_grid"

#: Transistors per NAND2-equivalent (a static CMOS NAND2 has 4).
TRANSISTORS_PER_NAND2 = 4


def _progress(enabled):
    start = time.monotonic()

    def say(message):
        if enabled:
            print(f"bitgrid asic: [{time.monotonic() - start:6.1f} s] {message}",
                  file=sys.stderr, flush=True)
    return say


def run_asic(*, pdk, width, height, out_dir, storage="ff", pdk_root=None, corner="tt",
             progress=False, timing=True):
    """Synthesise a ``width`` x ``height`` grid with ``storage`` (one of
    :data:`ASIC_STORAGES`) to ``pdk`` (``"sky130"``, ``"gf180"`` or ``"osu018"``), split one
    cell's area, time the grid, and write the report to ``out_dir``.

    :param pdk_root: the PDK root (default ``$PDK_ROOT`` or the shared folder).
    :param progress: print each step with its elapsed time on stderr.
    :param timing: run OpenSTA (default true).
    :returns: the report, a JSON-able dict (``report.json``; see docs/asic.md for its keys).
    :raises GridSizeError, ValueError: for a bad size, storage kind, PDK or corner.
    :raises PdkMissingError: if the PDK's liberty is missing (names the install command).
    :raises ToolMissingError: if YoWASP Yosys or OpenSTA is missing.
    :raises SynthesisError, StaError: if Yosys or OpenSTA fails.
    """
    width, height = check_grid_size(width, height)
    check_choice(storage, "Storage", ASIC_STORAGES)
    check_bool(progress, "progress")
    lib = find_pdk(pdk, pdk_root, corner)
    say = _progress(progress)
    say(f"reading the {lib.name} liberty ({lib.liberty.name})")
    library = lib.cells()               # a bad liberty stops here, before any file is written
    if timing:
        require_sta()                   # and a missing OpenSTA
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    synth_dir = out / "synth"

    say(f"generating the Verilog of a {width} x {height} grid ({storage} storage)")
    from bitgrid.hdl.cell import cell_module_name
    from bitgrid.hdl.verilog import grid_verilog
    rtl = out / "grid.v"
    atomic_write(rtl, grid_verilog(width, height, storage=storage, name=TOP))
    cell_top = cell_module_name(storage)

    say(f"synthesising one cell ({cell_top}) with YoWASP Yosys")
    cell = synthesise(rtl, cell_top, lib, synth_dir / "cell")
    split = _area.cell_split(cell.json, cell_top, library)
    cell_area = _area.count_area(cell.cells, library)

    say(f"synthesising the {width} x {height} grid (flattened) with YoWASP Yosys")
    grid = synthesise(rtl, TOP, lib, synth_dir)
    grid_area = _area.count_area(grid.cells, library)
    cells = width * height
    per_cell = grid_area / cells
    shared = per_cell - cell_area
    split["glue"]["shared_per_cell_um2"] = round(shared, 3)
    split["glue"]["area_um2"] = round(split["glue"]["area_um2"] + shared, 3)

    timing_report = None
    if timing:
        say("timing the grid with OpenSTA")
        t = run_sta(grid.netlist, TOP, grid.liberty, synth_dir)
        timing_report = {
            "worst_path_ns": t.worst_path_ns, "phase_clock_mhz": t.phase_clock_mhz,
            "startpoint": t.startpoint, "endpoint": t.endpoint,
            "path": [{"pin": p, "cell": c, "incr_ns": i, "time_ns": a} for p, c, i, a in t.path],
            "wire_load": t.wire_load, "assumptions": t.assumptions, "log": str(t.log),
        }
    nand2 = lib.nand2_area
    report = {
        "format": "bitgrid-asic-report-v1",
        "pdk": lib.name, "library": lib.title, "corner": lib.corner,
        "liberty": str(lib.liberty), "lef": None if lib.lef is None else str(lib.lef),
        "zero_area_cells_from_lef": [name for name in lib.zero_area_cells()
                                     if name in grid.cells],
        "width": width, "height": height, "storage": storage,
        "area": {
            "grid_um2": round(grid_area, 3),
            "per_cell_um2": round(per_cell, 3),
            "per_lut4_um2": round(per_cell / 4, 3),
            "cell_alone_um2": round(cell_area, 3),
            "split_per_cell": split,
            "nand2_cell": lib.nand2, "nand2_um2": nand2,
            "per_cell_nand2_eq": round(per_cell / nand2, 1),
            "per_cell_transistors_est": round(TRANSISTORS_PER_NAND2 * per_cell / nand2),
        },
        "cells": {"grid": grid.cells, "cell": cell.cells},
        "timing": timing_report,
        "static_timing_assumptions": list(ASSUMPTIONS) if timing_report is None else None,
        "seconds": {"synth_cell": round(cell.seconds, 1), "synth_grid": round(grid.seconds, 1)},
        "files": {"rtl": str(rtl), "netlist": str(grid.netlist), "cell_netlist":
                  str(cell.netlist), "liberty_plain": str(grid.liberty),
                  "report_json": str(out / "report.json"),
                  "report_txt": str(out / "report.txt")},
    }
    write_report(report, out)
    say(f"report written to {out / 'report.json'} and {out / 'report.txt'}")
    return report
