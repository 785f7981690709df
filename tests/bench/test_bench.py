"""The benchmark suite (``make bench``, ``bitgrid bench``): functional checks on tiny sizes.

No timing is asserted here; these only check that every part runs, returns figures with the
right keys and units, writes valid JSON, fits exponents correctly, and that the command line
works and rejects bad sizes with exit status 2.
"""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bitgrid import bench
from bitgrid.bench import common, emulator, report, sim, verilog
from bitgrid.cli import main

MACHINE = {"nproc": 2, "cpu_model": "test", "python": "3", "load_average": [0.0, 0.0, 0.0]}


def figures(obj, path="doc"):
    """Every ``{"value", "unit"}`` figure in ``obj``, with its path."""
    if isinstance(obj, dict):
        if set(obj) == {"value", "unit"}:
            yield path, obj
            return
        for key, item in obj.items():
            yield from figures(item, f"{path}.{key}")
    elif isinstance(obj, list):
        for index, item in enumerate(obj):
            yield from figures(item, f"{path}[{index}]")


def check_units(obj):
    found = list(figures(obj))
    assert found
    for path, item in found:
        assert item["unit"] in common.UNITS, path
        assert item["value"] is None or isinstance(item["value"], (int, float)), path


def unit(row, key):
    return row[key]["unit"]


# --- the exponent fit -----------------------------------------------------------------------

def test_fit_exponent_synthetic():
    cells = [16, 64, 256, 1024, 4096]
    fit = common.fit_exponent(cells, [3 * c ** 1.5 for c in cells])
    assert fit["exponent"] == pytest.approx(1.5)
    assert fit["prefactor"] == pytest.approx(3)
    assert fit["r2"] == pytest.approx(1)
    assert fit["points"] == 5


def test_fit_exponent_needs_two_sizes():
    assert common.fit_exponent([64, 64], [1.0, 2.0]) is None
    assert common.fit_exponent([64], [1.0]) is None
    assert common.fit_exponent([16, 64], [None, 2.0]) is None


def test_exponents_by_series():
    rows = [{"kind": kind, "cells": c, "cost": common.figure(a * c ** b, "s")}
            for kind, a, b in (("linear", 2.0, 1.0), ("square", 0.5, 2.0))
            for c in (4, 16, 64, 256)]
    fits = common.exponents(rows, ["cost"], group="kind")
    assert fits["linear"]["cost"]["exponent"] == {"value": pytest.approx(1.0), "unit": "1"}
    assert fits["square"]["cost"]["exponent"]["value"] == pytest.approx(2.0)
    assert fits["square"]["cost"]["local_exponent"]["value"] == pytest.approx(2.0)
    assert fits["square"]["cost"]["prefactor"] == {"value": pytest.approx(0.5), "unit": "s"}
    assert fits["linear"]["cost"]["cost_unit"] == "s"


def test_figure_rejects_unknown_unit():
    assert common.figure(3, "s") == {"value": 3, "unit": "s"}
    with pytest.raises(ValueError):
        common.figure(3, "parsecs")


# --- the parts, on tiny sizes ---------------------------------------------------------------

def test_emulator_part():
    part = emulator.measure([4, 8], steps=4, rounds=1, min_seconds=0, streams=4,
                            progress=False)
    assert part["part"] == "emulator"
    kinds = {(r["emulator"], r["size"]) for r in part["rows"]}
    assert kinds == {(k, s) for k in ("simple", "fast", "kernel", "streams") for s in (4, 8)}
    for row in part["rows"]:
        assert row["cells"] == row["size"] ** 2
        expected = "stream-cell-updates/s" if row["emulator"] == "streams" else "cell-updates/s"
        assert unit(row, "rate") == expected
        assert unit(row, "seconds_per_subcycle") == "s/subcycle"
        assert unit(row, "seconds") == "s"
        # the definition: cells / 2 per subcycle (times the streams)
        rate = row["cells"] / 2 * row.get("streams", 1) / row["seconds_per_subcycle"]["value"]
        assert row["rate"]["value"] == pytest.approx(rate)
    fast = [r for r in part["rows"] if r["emulator"] in ("fast", "kernel")]
    assert all(unit(r, "memory") == "bytes" and r["threads"] >= 1 for r in fast)
    assert [s["size"] for s in part["speedup"]] == [4, 8]
    assert set(part["speedup"][0]) == {"size", "cells", "fast_over_simple", "kernel_over_fast",
                                       "kernel_over_simple"}
    assert set(part["exponents"]) == {"simple", "fast", "kernel", "streams"}
    assert part["exponents"]["fast"]["seconds_per_subcycle"]["exponent"]["unit"] == "1"
    check_units(part)
    assert "cell-updates/s" in emulator.format_part(part)


def test_verilog_part():
    part = verilog.measure([2, 4], progress=False)
    assert [r["size"] for r in part["rows"]] == [2, 4]
    for row in part["rows"]:
        assert unit(row, "seconds") == "s" and row["seconds"]["value"] > 0
        assert unit(row, "bytes") == "bytes" and row["bytes"]["value"] > 1000
        assert unit(row, "bytes_per_cell") == "bytes/cell"
    assert set(part["exponents"]["all"]) == {"seconds", "bytes"}
    check_units(part)
    assert "4 x 4" in verilog.format_part(part)


@pytest.mark.icarus
@pytest.mark.slow
def test_sim_part_icarus_and_amaranth():
    part = sim.measure([2], simulators=("icarus", "amaranth"), steps=8, progress=False,
                       missing="raise", player_steps=8)
    assert part["cold"] and part["skipped"] == [] and part["runtime"] == {}
    modes = {(r["simulator"], r["mode"]): r for r in part["rows"]}
    assert set(modes) == {("icarus", "player"), ("icarus", "step"), ("amaranth", "step")}
    assert unit(modes["icarus", "player"], "cpu_subcycles_per_s") == "subcycles/s"
    assert modes["icarus", "player"]["agrees"]
    assert [g["simulator"] for g in part["goals"]] == ["verilator", "icarus", "icarus"]
    rows = {s: r for (s, mode), r in modes.items() if mode == "step"}
    for row in modes.values():
        assert row["size"] == 2 and row["steps"] == 8 and row["agrees"]
        assert unit(row, "build_seconds") == "s"
        assert unit(row, "subcycles_per_s") == "subcycles/s"
        assert unit(row, "cell_updates_per_s") == "cell-updates/s"
        assert row["cell_updates_per_s"]["value"] == pytest.approx(
            2 * row["subcycles_per_s"]["value"])
    icarus = rows["icarus"]
    assert not icarus["build_cached"]                  # a fresh cache: a cold build
    for key in ("cached_build_seconds", "load_seconds", "readback_seconds", "process_seconds"):
        assert unit(icarus, key) == "s"
    assert [v["size"] for v in part["verilog"]] == [2]
    check_units(part)
    assert "icarus" in sim.format_part(part)


def test_sim_part_rejects_bad_options():
    with pytest.raises(ValueError):
        sim.measure([2], simulators=("modelsim",), progress=False)
    with pytest.raises(ValueError):
        sim.measure([2], simulators=("amaranth",), steps=0, progress=False)


# --- the document, the report, the command line ---------------------------------------------

def test_suite_document_is_valid_json(tmp_path):
    options = {"emulator": {"sizes": (4,), "steps": 2, "rounds": 1, "min_seconds": 0,
                            "streams": 2},
               "sim": {"sizes": (2,), "simulators": ("amaranth",), "steps": 4}}
    doc = bench.run_suite(["emulator", "sim"], options=options, progress=False,
                          machine=MACHINE)
    path = tmp_path / "sub" / "bench.json"
    bench.write_json(doc, path)
    loaded = json.loads(path.read_text())
    assert loaded["format"] == common.FORMAT
    assert set(loaded["parts"]) == {"emulator", "sim"}
    assert loaded["seconds"]["unit"] == "s"
    names = {t["name"]: t for t in loaded["targets"]}
    assert set(names) == set(report.TARGETS)
    assert names["fast_1024"]["met"] is None            # 1024 x 1024 not measured here
    assert names["verilog_128"]["value"] is None
    check_units(loaded)
    text = bench.format_suite(loaded)
    assert "Growth exponents" in text and "Performance goals" in text
    _speaks_to_users(text)


def test_suite_keeps_going_after_a_failing_part():
    options = {"emulator": {"sizes": (4,), "steps": 2, "rounds": 1, "min_seconds": 0},
               "sim": {"sizes": (2,), "simulators": ("nonesuch",)}}
    doc = bench.run_suite(["sim", "emulator"], options=options, progress=False,
                          machine=MACHINE)
    assert "error" in doc["parts"]["sim"] and "rows" in doc["parts"]["emulator"]
    assert "sim: not measured: " in bench.format_suite(doc)
    _speaks_to_users(bench.format_suite(doc))


def test_targets_on_synthetic_figures():
    fig = common.figure
    parts = {"emulator": {"rows": [
        {"emulator": "fast", "size": 1024, "rate": fig(1.2e9, "cell-updates/s")},
        {"emulator": "streams", "size": 1024, "streams": 64,
         "rate": fig(5e9, "stream-cell-updates/s")}]},
        "verilog": {"rows": [{"size": 128, "seconds": fig(31.0, "s")}],
                    "exponents": {"all": {"bytes": {"exponent": fig(0.97, "1"),
                                                    "local_exponent": fig(1.01, "1")}}}},
        "sim": {"rows": [{"simulator": "verilator", "size": 32, "build_seconds": fig(40, "s"),
                          "build_cached": False}]}}
    met = {t["name"]: t["met"] for t in report.targets(parts)}
    assert met == {"fast_1024": True, "streams": False, "verilog_128": False,
                   "verilog_linear": True, "verilator_32": True, "compile_mul8": None,
                   "compile_median_3x": None, "compile_6x": None, "compile_total": None,
                   "compile_counter8": None, "compile_acc8": None, "compile_detector": None,
                   "compile_1000": None, "compile_outside_median": None,
                   "compile_outside_40": None, "compile_outside_growth": None,
                   "kernel_256": None,
                   "kernel_4096": None, "kernel_small": None, "state_period2": None,
                   "state_regfile": None, "state_regfile32": None, "state_regfile_time": None,
                   "state_delay": None, "state_rom": None, "state_registered": None,
                   "arith_sop": None, "arith_adder_shapes": None}
    text = report.format_targets(report.targets(parts))
    assert text.splitlines()[1] == ("       reached  fast emulator at 1024 x 1024: >= 1e9 "
                                    "cell-updates/s: 1.2e+09 cell-updates/s")
    assert "   not reached  lane-parallel mode: >= 1e10 stream-cell-updates/s: 5e+09" in text
    _speaks_to_users(text)


def test_kernel_targets_on_synthetic_figures():
    """Each size of a kernel goal must reach it; the 10x goal compares with the better of the
    reference and the numpy code."""
    fig = common.figure

    def row(kind, size, rate):
        return {"emulator": kind, "size": size, "rate": fig(rate, "cell-updates/s")}

    rows = [row("kernel", 128, 6e9), row("kernel", 256, 4.9e9), row("kernel", 1024, 3.1e9),
            row("kernel", 16, 1e8), row("fast", 16, 2e6), row("simple", 16, 1.1e7),
            row("kernel", 64, 1e9), row("fast", 64, 5e7), row("simple", 64, 4e7)]
    found = {t["name"]: t for t in report.targets({"emulator": {"rows": rows}})}
    assert found["kernel_256"]["met"] is False
    assert found["kernel_256"]["value"]["value"] == 4.9e9
    assert found["kernel_4096"]["met"] is True                  # 4096 not measured: 1024 counts
    assert found["kernel_4096"]["where"] == "lowest at 1024 x 1024 of 1 size"
    assert found["kernel_small"]["met"] is False                # 1e8 / 1.1e7 = 9.1
    assert found["kernel_small"]["value"]["value"] == pytest.approx(1e8 / 1.1e7)
    goals = {g["size"]: g for g in emulator.kernel_goals({"rows": rows})}
    assert goals[64]["met"] and goals[64]["value"] == pytest.approx(20.0)
    assert not goals[256]["met"] and goals[128]["met"]


def _speaks_to_users(text):
    """User-facing text: no project-internal words (issue 10)."""
    for word in ("issue", "MISSED", "NOT MET", "FAILED", "target"):
        assert word.lower() not in text.lower(), (word, text)


def _plot_doc():
    fig = common.figure
    rows = [{"emulator": "fast", "size": s, "cells": s * s,
             "rate": fig(1e6 * s, "cell-updates/s"),
             "seconds_per_subcycle": fig(1e-6 * s, "s/subcycle")} for s in (4, 8)]
    doc = {"created": "now", "machine": MACHINE, "parts": {
        "emulator": {"rows": rows, "exponents": common.exponents(
            rows, ["seconds_per_subcycle"], group="emulator")}}}
    return doc


def test_plot(tmp_path):
    path = report.plot(_plot_doc(), tmp_path / "scaling.png")
    assert path is not None
    assert (tmp_path / "scaling.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib(tmp_path, monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib fails
    assert report.plot(_plot_doc(), tmp_path / "scaling.png") is None
    assert not (tmp_path / "scaling.png").exists()
    assert "matplotlib" in capsys.readouterr().err


def test_machine_info():
    info = common.machine_info(tools=False)
    assert info["nproc"] >= 1 and info["python"] and info["numpy"]
    assert info["memory"] is None or info["memory"]["unit"] == "bytes"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_cli_bench_emulator_json(tmp_path):
    out = tmp_path / "out.json"
    result = invoke("bench", "emulator", "--size", 64, "--json", out, "--quiet")
    assert result.exit_code == 0, result.output
    assert "64 x 64" in result.output
    doc = json.loads(out.read_text())
    assert doc["format"] == common.FORMAT
    rows = doc["parts"]["emulator"]["rows"]
    assert {r["emulator"] for r in rows} == {"simple", "fast", "kernel", "streams"}
    assert {r["size"] for r in rows} == {64}
    assert {r["rate"]["unit"] for r in rows} == {"cell-updates/s", "stream-cell-updates/s"}
    check_units(doc)


@pytest.mark.parametrize("command", ["emulator", "verilog", "sim"])
@pytest.mark.parametrize("size", ["3", "0", "-2", "abc", "8x16", "7x7"])
def test_cli_bench_bad_size_exits_2(command, size):
    result = invoke("bench", command, "--size", size)
    assert result.exit_code == 2, result.output
    assert "--size" in result.output


@pytest.mark.parametrize("command", [["bench"], ["bench", "emulator"], ["bench", "verilog"],
                                     ["bench", "sim"]])
def test_cli_bench_help(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert result.output.startswith("Usage: ")
    if command != ["bench"]:
        assert "--size" in result.output and "--json" in result.output


def test_cli_bench_sim_amaranth_json_stdout():
    result = invoke("bench", "sim", "--simulator", "amaranth", "--size", 2, "--steps", 4,
                    "--json", "-", "--quiet")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["parts"]["sim"]["rows"][0]["simulator"] == "amaranth"


def test_python_dash_m_bitgrid_bench_help():
    result = subprocess.run([sys.executable, "-m", "bitgrid.bench", "--help"],
                            capture_output=True, text=True, check=True)
    assert "--quick" in result.stdout and "--json" in result.stdout


def test_suite_command_options(monkeypatch, tmp_path):
    # `python -m bitgrid.bench` is the `bitgrid bench` group: without a command it runs the
    # suite; several parts may follow one --parts, as `make bench` always allowed.
    from bitgrid.cli import bench as cli_bench
    calls = {}

    def run_suite(parts, *, quick, options, progress):
        calls.update(parts=tuple(parts), quick=quick, options=options, progress=progress)
        return common.document({"verilog": {"part": "verilog", "error": "ToolMissingError: x"}})

    monkeypatch.setattr(cli_bench, "run_suite", run_suite)
    out = tmp_path / "suite.json"
    result = CliRunner().invoke(cli_bench.bench, ["--parts", "emulator", "verilog", "--quick",
                                                  "--json", str(out), "--plot", "",
                                                  "--no-progress"])
    assert result.exit_code == 1, result.output            # a part failed
    assert calls["parts"] == ("emulator", "verilog")
    assert calls["quick"] is True and calls["progress"] is False
    assert calls["options"]["verilog"]["sizes"] == verilog.QUICK_SIZES
    assert "verilog: not measured: ToolMissingError: x" in result.output
    assert json.loads(out.read_text())["parts"]["verilog"]["error"] == "ToolMissingError: x"
    result = CliRunner().invoke(cli_bench.bench, ["--parts", "emulator", "--parts", "mesh",
                                                  "--json", "-", "--plot", ""])
    assert result.exit_code == 1 and calls["parts"] == ("emulator", "mesh")
    assert calls["quick"] is False and calls["progress"] is True
    result = CliRunner().invoke(cli_bench.bench, ["--parts", "nothing"])
    assert result.exit_code == 2 and "Invalid value for '--parts'" in result.output


def test_emulator_part_too_busy_note():
    """A two-thread kernel row with CPU time well below two cores' worth gets the note; one
    that got both cores (or runs one thread) does not."""
    def row(size, threads, cpu):
        return emulator._figures({"emulator": "kernel", "size": size, "cells": size * size,
                                  "subcycles": 10, "seconds": 1.0, "cpu_seconds": cpu,
                                  "rate": 1e9, "unit": "cell-updates/s", "threads": threads,
                                  "memory_bytes": 1})
    text = emulator.format_part({"rows": [row(128, 2, 1.1), row(256, 2, 1.95),
                                          row(64, 1, 0.5)]})
    note = next(line for line in text.splitlines() if line.startswith("Too busy"))
    assert "128 x 128" in note and "256 x 256" not in note and "64 x 64" not in note
    assert "Too busy" not in emulator.format_part({"rows": [row(256, 2, 1.95)]})


def test_state_and_arithmetic_targets_on_synthetic_figures():
    """The goals of the state and arithmetic series from made-up rows: cells per stored bit,
    a registered operation against the same one alone, sums of products per LUT4."""
    fig = common.figure

    def row(series, design, params, top, cells, period=2, luts=100, seconds=1.0):
        return {"series": series, "design": design, "params": params, "top": top,
                "total_cells": fig(cells, "cells"), "period": fig(period, "subcycles"),
                "yosys_luts": fig(luts, "1"), "seconds": fig(seconds, "s"),
                "cells_per_lut": fig(cells / luts, "1")}

    rows = [row("state", "regfile", {"words": 32, "width": 16}, "regfile32x16", 2500,
                seconds=25.0),
            row("state", "regfile", {"words": 8, "width": 8}, "regfile8x8", 384),
            row("state", "delay", {"depth": 16, "n": 8}, "delay16x8", 64),
            row("state", "fifo", {"depth": 8, "width": 8}, "fifo8x8", 900, period=6),
            row("state", "regmul", {"n": 8}, "regmul8", 550),
            row("test designs", "multiplier", {"n": 8}, "mul8u", 500),
            row("arithmetic", "mac", {"n": 8, "acc": 20}, "mac8x20", 500, luts=100),
            row("arithmetic", "addc", {"n": 16}, "addc16", 40)]
    found = {t["name"]: t for t in report.targets({"compile": {"rows": rows}})}
    assert found["state_period2"]["met"] is False and "fifo8x8" in found["state_period2"]["where"]
    assert found["state_regfile"]["value"]["value"] == pytest.approx(6.0)   # 384 / 64
    assert found["state_regfile32"]["met"] is True                          # 2,500 <= 2,560
    assert found["state_regfile_time"]["met"] is False                      # 25 s
    assert found["state_delay"]["value"]["value"] == pytest.approx(0.5)
    assert found["state_rom"]["value"] is None                              # no ROM row
    assert found["state_registered"]["value"]["value"] == pytest.approx(1.1)
    assert found["arith_sop"]["met"] is False                               # 5 cells a LUT
    assert found["arith_adder_shapes"]["value"]["value"] == pytest.approx(1.25)


def test_outside_targets_on_synthetic_figures():
    """Median, worst and growth of the outside circuits from made-up rows: cells = 3 x
    LUT4^1.5 gives an exponent of 1.5 (over 1.3), worst at 3 x 400^0.5 = 60 per LUT4."""
    fig = common.figure
    rows = [{"series": "outside", "design": "outside", "params": {}, "top": f"c{luts}",
             "total_cells": fig(3 * luts ** 1.5, "cells"), "period": fig(40, "subcycles"),
             "yosys_luts": fig(luts, "1"), "seconds": fig(1.0, "s"),
             "cells_per_lut": fig(3 * luts ** 0.5, "1")} for luts in (4, 25, 100, 400)]
    found = {t["name"]: t for t in report.targets({"compile": {"rows": rows}})}
    assert found["compile_outside_growth"]["value"]["value"] == pytest.approx(1.5)
    assert found["compile_outside_growth"]["met"] is False
    assert "4 to 400 LUT4s" in found["compile_outside_growth"]["where"]
    assert found["compile_outside_40"]["value"]["value"] == pytest.approx(60)
    assert found["compile_outside_median"]["value"]["value"] == pytest.approx(30)   # c100
