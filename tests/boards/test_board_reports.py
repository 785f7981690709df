"""The engine fields of board build reports and their listings: ``engine_rates`` (subcycles and
cell evaluations per second from the Fmax and the engine's cycles per subcycle), ``bitgrid
boards`` (largest grid built per board and engine, from the measured builds and build
reports) and the bench part's rows per engine."""

import json
import os

from click.testing import CliRunner

from bitgrid.boards import BOARDS
from bitgrid.boards.measured import MEASURED, entry_from_report, largest, rates
from bitgrid.boards.toolflow import engine_rates, format_report
from bitgrid.cli import main
from bitgrid.hdl.grid import Grid


class _Multiplexed:
    engine, cycles_per_subcycle = "multiplexed", 40


def _report(folder, board, grid, fmax, **extra):
    width, height = map(int, grid.split("x"))
    report = {"board": board, "fpga": BOARDS[board].fpga, "grid": grid,
              "cells": width * height, "storage": "memory", "build_seconds": 100.0,
              "date": "2026-12-01T15:00", "summary": {}, "stage_seconds": {"yosys": 1.0},
              "fmax_mhz": {"clk": {"achieved": fmax, "constraint": 100.0}}, **extra}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(report, f)
    return report


def test_engine_rates():
    """Direct grid: one cycle a subcycle, so 100 MHz is 1e8 subcycles/s and, on 64 x 64,
    2048 cells a subcycle: 2.048e11 cell evaluations/s; a 40-cycle engine a fortieth; no
    Fmax, no rates; the lowest clock counts."""
    fmax = {"a": {"achieved": 100.0, "constraint": 100.0},
            "b": {"achieved": 150.0, "constraint": 100.0}}
    assert engine_rates(Grid(2, 2, pipelined=True), 4096, fmax) == {
        "engine": "direct", "pipelined": True, "cycles_per_subcycle": 1,
        "subcycles_per_second": 1e8, "cell_evaluations_per_second": 2.048e11}
    multiplexed = engine_rates(_Multiplexed(), 4096, fmax)
    assert multiplexed["engine"] == "multiplexed" and not multiplexed["pipelined"]
    assert multiplexed["subcycles_per_second"] == 2.5e6
    assert multiplexed["cell_evaluations_per_second"] == 2.5e6 * 2048
    assert engine_rates(None, 16, {})["subcycles_per_second"] is None


def test_format_report_names_engine_and_rates():
    report = {"board": "ulx3s-85f", "fpga": "x", "grid": "64x64", "cells": 4096,
              "storage": "memory", "build_seconds": 10.0, "stage_seconds": {}, "clock_mhz": 25.0,
              "fmax_mhz": {"clk": {"achieved": 100.0, "constraint": 100.0}},
              **engine_rates(Grid(2, 2, pipelined=True), 4096,
                             {"clk": {"achieved": 100.0, "constraint": 100.0}})}
    lines = format_report(report)
    assert "direct engine, memory storage, pipelined" in lines[0]
    assert "  at that Fmax: 1e+08 subcycles/s (1 cycle(s) a subcycle), 2.05e+11 cell " \
        "evaluations/s" in lines


def test_measured_builds_and_largest():
    """The measured entries name known boards and give cells x Fmax / 2 (the 85F 64 x 64 at
    35.42 MHz: 7.25e10); the largest per board and engine wins, then the higher Fmax."""
    assert all(e["board"] in BOARDS for e in MEASURED)
    big = largest(MEASURED)[("ulx3s-85f", "direct")]
    assert big["grid"] == "64x64"
    assert rates(big) == (35.42e6, 35.42e6 * 2048)
    extra = dict(big, fmax_mhz=90.0)
    assert largest(MEASURED + [extra])[("ulx3s-85f", "direct")] is extra
    assert entry_from_report({"board": "icebreaker", "cells": 4, "fmax_mhz": {}}) is None


def test_boards_lists_largest_per_engine(tmp_path):
    """A report with a larger direct grid replaces the measured one; a multiplexed build gets
    its own row with its cycles per subcycle; a board with neither says so."""
    _report(tmp_path / "a", "ulx3s-85f", "80x80", 90.0, engine="direct", pipelined=True)
    _report(tmp_path / "b", "ulx3s-85f", "192x192", 60.0, engine="multiplexed",
            cycles_per_subcycle=2400)
    result = CliRunner().invoke(main, ["boards", "--json", "--reports", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.output)}
    built = rows["ulx3s-85f"]["built"]
    assert built["direct"]["grid"] == "80x80" and built["direct"]["pipelined"] is True
    assert built["direct"]["cell_evaluations_per_second"] == 80 * 80 / 2 * 90e6
    assert built["multiplexed"]["subcycles_per_second"] == 60e6 / 2400
    assert built["multiplexed"]["source"] == str(tmp_path / "b" / "report.json")
    assert rows["ulx3s-25f"]["built"] == {}
    text = CliRunner().invoke(main, ["boards", "--reports", str(tmp_path)]).output
    table = text.split("per board and engine")[1].splitlines()
    assert any(line.split()[:3] == ["ulx3s-85f", "multiplexed", "192x192"] for line in table)
    assert any(line.split()[:2] == ["ulx3s-25f", "-"] and "not built yet" in line
               for line in table)


def test_bench_rows_per_engine(tmp_path):
    """The bench part lists the direct row of every board and, after it, a row per other
    engine that has a report (subcycles/s = Fmax / cycles per subcycle)."""
    from bitgrid.bench import boards as part
    _report(tmp_path / "a", "icebreaker", "6x4", 30.0)
    _report(tmp_path / "b", "icebreaker", "128x128", 20.0, engine="multiplexed",
            cycles_per_subcycle=8192)
    result = part.measure(roots=[str(tmp_path)], progress=False)
    mine = [r for r in result["rows"] if r["board"] == "icebreaker"]
    assert [(r["engine"], r["grid"]) for r in mine] == [("direct", "6x4"),
                                                       ("multiplexed", "128x128")]
    assert mine[1]["subcycles"]["value"] == 20e6 / 8192
    assert mine[1]["cell_updates"]["value"] == 128 * 128 / 2 * 20e6 / 8192
    assert "icebreaker (multiplexed): cached:" in part.format_part(result)
