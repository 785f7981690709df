"""The readable table of ``bitgrid asic`` (bitgrid.asic.report.format_table) with a place and
route result: its own table, not a raw JSON line."""

import json

from bitgrid.asic.pnr import PlaceRoute
from bitgrid.asic.report import format_table

_PART = {"area_um2": 10.0, "cells": {"INVX1": 1}}
REPORT = {
    "width": 2, "height": 2, "storage": "ff", "library": "OSU 0.18 um", "corner": "tt",
    "area": {"grid_um2": 160.0, "per_cell_um2": 40.0, "per_lut4_um2": 10.0,
             "cell_alone_um2": 40.0, "per_cell_nand2_eq": 2.5, "per_cell_transistors_est": 10,
             "split_per_cell": {k: dict(_PART) for k in (
                 "configuration_store", "lut_read_mux", "output_registers", "glue")}},
    "cells": {"grid": {"INVX1": 16}, "cell": {"INVX1": 4}},
    "timing": None,
}
PLACE_ROUTE = PlaceRoute(
    width=2, height=2, storage="ff", pdk="osu018", top="bitgrid_grid", project_dir="/p",
    def_path="/p/layout/bitgrid_grid.def", die_um=(398.4, 276.0), die_area_um2=109958.4,
    lvs_clean=True, lvs={"clean": True, "result": "Circuits match uniquely.", "errors": 0},
    timing={"worst_path_ns": 2.578, "clock_mhz": 387.9, "startpoint": "DFFPOSX1_38",
            "endpoint": "DFFPOSX1_186",
            "assumptions": ["wire delays extracted from the routed layout: qrouter's per-net "
                            "RC, turned into SDF interconnect delays by qflow's rc2dly"]},
    cells={"DFFPOSX1": 381, "INVX1": 375}, seconds={"placement": 333.1})


def test_place_route_is_a_table():
    """As report.json holds it (JSON: the die size a list), the place-and-route result is a
    table of lines of at most 100 characters with the die, LVS and routed timing."""
    report = dict(REPORT, place_route=json.loads(json.dumps(PLACE_ROUTE.as_dict())))
    table = format_table(report)
    assert "{" not in table and '"' not in table
    assert all(len(line) <= 100 for line in table.splitlines())
    assert "398.4 x 276.0 um = 109,958 um2" in table
    assert "LVS             clean (Circuits match uniquely.; errors 0)" in table
    assert "worst path 2.578 ns (DFFPOSX1_38 -> DFFPOSX1_186)" in table
    assert "cells           756" in table


def test_worst_path_names_each_instance_once():
    """The path's start flip-flop appears once (its CLK and Q pins are one instance)."""
    path = [("r0/CLK", "DFFPOSX1"), ("r0/Q", "DFFPOSX1"), ("i0/Y", "INVX1"),
            ("i1/Y", "INVX1"), ("r1/D", "DFFPOSX1")]
    timing = {"worst_path_ns": 0.5, "phase_clock_mhz": 2000.0, "startpoint": "r0",
              "endpoint": "r1", "assumptions": ["ideal clock"],
              "path": [{"pin": p, "cell": c, "incr_ns": 0.1, "time_ns": 0.1} for p, c in path]}
    table = format_table(dict(REPORT, timing=timing))
    assert "    through DFFPOSX1 > INVX1 > INVX1 > DFFPOSX1\n" in table
