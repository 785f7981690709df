"""The compile part of the benchmark suite: its rows, table and goals (figures are not
asserted as timings; the counts are checked against the compile report they come from)."""

from bitgrid.bench import PARTS, common, quick_options, report, suite_options
from bitgrid.bench import compile as bench_compile
from bitgrid.compiler import designs


def test_registered():
    assert "compile" in PARTS
    assert suite_options()["compile"] == {"designs": bench_compile.SUITE_DESIGNS}
    assert quick_options()["compile"] == {"designs": bench_compile.QUICK_DESIGNS}
    # The suite compiles every test design and the growth series of the issue.
    plan = bench_compile._plan(bench_compile.SUITE_DESIGNS)
    tests = [(n, p) for s, n, p in plan if s == "test designs"]
    assert tests == list(designs.TEST_DESIGNS)
    assert [p["n"] for s, n, p in plan if s == "multiplier"] == [4, 6, 8, 10, 12, 14, 16]
    assert [p["n"] for s, n, p in plan if s == "adder"] == [8, 16, 24, 32, 48, 64]


def test_measure_and_table():
    plan = [("test designs", "parity", {"n": 4}), ("adder", "adder", {"n": 2}),
            ("adder", "adder", {"n": 3})]
    part = bench_compile.measure(plan, progress=False)
    assert [r["top"] for r in part["rows"]] == ["parity4", "add2", "add3"]
    for row in part["rows"]:
        assert "error" not in row, row
        cells = [common.value(row[k]) for k in ("logic_cells", "routing_cells", "delay_cells")]
        assert sum(cells) == common.value(row["total_cells"]) == row["cells"]
        assert common.value(row["period"]) == 2
        assert set(row["stage_seconds"]) >= {"synthesis"}
    assert "seconds" in part["exponents"]["adder"]
    text = bench_compile.format_part(part)
    assert "parity n=4" in text and "-- adder" in text


def test_goals_from_rows():
    fig = common.figure

    def row(series, design, params, luts, cells, seconds, period=2):
        return {"series": series, "design": design, "params": params, "top": design,
                "yosys_luts": fig(luts, "LUTs"), "total_cells": fig(cells, "cells"),
                "cells_per_lut": fig(cells / luts, "1"), "period": fig(period, "subcycles"),
                "seconds": fig(seconds, "s")}
    part = {"rows": [row("test designs", "multiplier", {"n": 8}, 157, 300, 20),
                     row("test designs", "crc8", {}, 8, 30, 1),
                     row("1000 LUTs", "multiplier", {"n": 21}, 1010, 2500, 70)]}
    met = {t["name"]: t["met"] for t in report.targets({"compile": part})}
    assert (met["compile_mul8"], met["compile_3x"], met["compile_1000"]) == \
        (True, False, False)
