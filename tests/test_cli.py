"""The ``bitgrid`` command line: every sub-command, its help, and the exit status contract
(0 all steps match, 1 mismatch with a report, 2 bad input)."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bitgrid import bitstream
from bitgrid.cli import main
from conftest import bad_stream_cases, conformance_dir, load_conformance


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result


def case_paths(name):
    case = load_conformance(name)
    return case.bitstream_path, os.path.join(conformance_dir(), f"{name}.json")


@pytest.mark.parametrize("command", [[], ["verilog"], ["emulate"], ["sim"], ["bitstream"],
                                     ["bitstream", "inspect"], ["bitstream", "convert"],
                                     ["example"], ["demo"]])
def test_help_everywhere(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert result.output.startswith("Usage: ")


def test_python_dash_m():
    result = subprocess.run([sys.executable, "-m", "bitgrid", "--version"], capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "bitgrid, version 0.1.0"


@pytest.mark.parametrize("name", ["adder8", "adder8_snake", "random_8x8", "random_32x32",
                                  "edge_io_hello"])
def test_emulate_vectors_pass(name):
    bgbs, vectors = case_paths(name)
    result = invoke("emulate", bgbs, "--vectors", vectors)
    steps = len(load_conformance(name).steps)
    assert result.exit_code == 0, result.output
    assert f"PASS: {name}: all {steps} steps match" in result.output


def test_emulate_mismatch_reports_step_side_lane(tmp_path):
    bgbs, vectors = case_paths("random_8x8")
    case = json.load(open(vectors))
    case["bitstream"] = bgbs
    expected = int(case["steps"][5]["out"]["E"], 16)
    case["steps"][5]["out"]["E"] = f"0x{expected ^ 0x08:02x}"      # flip lane 3 of E at step 5
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(case))
    result = invoke("emulate", bgbs, "--vectors", path)
    assert result.exit_code == 1
    assert "MISMATCH: random_8x8: 1 lane(s) differ, first at step 5" in result.output
    assert (f"step 5: E_out lane 3: expected {(expected >> 3 & 1) ^ 1}, "
            f"got {expected >> 3 & 1}") in result.output


@pytest.mark.parametrize("name", bad_stream_cases())
def test_bad_bitstreams_exit_2(name):
    case = load_conformance(name)
    for args in (["bitstream", "inspect", case.bitstream_path,
                  "--size", f"{case.width}x{case.height}"],
                 ["emulate", case.bitstream_path, "--steps", "1"]):
        result = invoke(*args)
        if name == "dims_mismatch_4x16" and args[0] == "emulate":
            assert result.exit_code == 0         # a valid 4x16 bitstream on its own
            continue
        assert result.exit_code == 2
        assert case.expect_error in result.output


def test_size_mismatch_and_malformed_vectors_exit_2(tmp_path):
    adder, _ = case_paths("adder8")
    _, random_vectors = case_paths("random_8x8")
    result = invoke("emulate", adder, "--vectors", random_vectors)
    assert result.exit_code == 2
    assert "size mismatch: the vector file is for a 8 x 8 grid, the bitstream is 2 x 16" \
        in result.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "bitgrid-vectors-v1", "width": 2, "height": 16, '
                   '"bitstream": "x.bgbs", "steps": [{"in": {}}]}')
    result = invoke("emulate", adder, "--vectors", bad)
    assert result.exit_code == 2
    assert "malformed vector file" in result.output
    result = invoke("emulate", tmp_path / "missing.bgbs", "--steps", "1")
    assert result.exit_code == 2
    assert "No such file or directory" in result.output
    result = invoke("emulate", adder)
    assert result.exit_code == 2
    assert "nothing to run" in result.output


def test_emulate_inputs_stream(tmp_path):
    # 2 x 2 reflector grid: each output echoes the input on its own side (SPEC section 3).
    from bitgrid import Configuration, REFLECTOR
    config = Configuration(2, 2)
    for x in range(2):
        for y in range(2):
            config[x, y] = REFLECTOR
    bitstream.save(tmp_path / "refl.bgbs", config)
    (tmp_path / "in.txt").write_text("# N E S W\n3 0 0 0\n3 0 0 0\n")
    result = invoke("emulate", tmp_path / "refl.bgbs", "--inputs", tmp_path / "in.txt",
                    "--json")
    assert result.exit_code == 0
    steps = json.loads(result.output)["steps"]
    # step 0 (phase A) updates (0,0) only: N_out lane 0; step 1 updates (1,0): lane 1 too.
    assert [s["out"]["N"] for s in steps] == ["0x1", "0x3"]
    (tmp_path / "bad.txt").write_text("3 0 0\n")
    result = invoke("emulate", tmp_path / "refl.bgbs", "--inputs", tmp_path / "bad.txt")
    assert result.exit_code == 2
    assert "expected 4 hex words" in result.output


def test_inspect_and_convert(tmp_path):
    adder, _ = case_paths("adder8")
    snake, _ = case_paths("adder8_snake")
    result = invoke("bitstream", "inspect", snake, "--cells", "table")
    assert result.exit_code == 0
    assert "grid:          2 x 16 cells" in result.output
    assert "order:         2 (snake)" in result.output
    assert "    1     0  0x0000  0x9966  0xee88  0x0000" in result.output
    out = tmp_path / "rowmajor.bgbs"
    result = invoke("bitstream", "convert", snake, out, "--order", "row-major")
    assert result.exit_code == 0
    assert out.read_bytes() == open(adder, "rb").read()
    result = invoke("bitstream", "inspect", adder, "--cells", "word")
    assert "    1     0  0x" + f"{bitstream.load(adder).config.word(1, 0):016x}" in result.output


def test_verilog(tmp_path):
    out = tmp_path / "g.v"
    result = invoke("verilog", "--size", "2x4", "--storage", "memory", "-o", out)
    assert result.exit_code == 0
    text = out.read_text()
    assert "module bitgrid_grid(" in text
    assert "input [3:0] e_in;" in text and "output [1:0] n_out;" in text
    result = invoke("verilog", "--size", "3x4")
    assert result.exit_code == 2
    assert "Grid width must be even" in result.output


def test_example_writes_replayable_case(tmp_path):
    result = invoke("example", "adder", "--bits", "4", "-o", tmp_path)
    assert result.exit_code == 0
    result = invoke("emulate", tmp_path / "adder4.bgbs", "--vectors", tmp_path / "adder4.json")
    assert result.exit_code == 0


def test_missing_simulator_says_how_to_install(monkeypatch, tmp_path):
    import bitgrid.toolchain as toolchain
    monkeypatch.setattr(toolchain.shutil, "which", lambda name, *a, **k: None)
    bgbs, vectors = case_paths("random_2x2")
    result = invoke("sim", bgbs, "--vectors", vectors, "--simulator", "icarus")
    assert result.exit_code == 2
    assert "apt-get install iverilog" in result.output


def test_environment_errors_exit_2_without_traceback(tmp_path):
    bgbs, vectors = case_paths("random_2x2")
    cases = [
        (["sim", bgbs, "--steps", "2", "--waves", tmp_path / "x.txt"], "must end in .vcd or .fst"),
        (["sim", bgbs, "--steps", "2", "--waves", tmp_path / "no" / "x.vcd"], "does not exist"),
        (["verilog", "--size", "2x2", "-o", tmp_path / "no" / "g.v"], "does not exist"),
        (["verilog", "--size", "2x2", "-o", tmp_path], "is a directory"),
        (["bitstream", "convert", bgbs, tmp_path / "no" / "x.bgbs"], "does not exist"),
        (["emulate", bgbs, "--vectors", vectors, "--json"], "--json prints the outputs"),
        (["emulate", bgbs, "--vectors", vectors, "--steps", "999"], "has only 200 steps"),
        (["example", "adder", "--bits", "70000"], "70000 is not in the range"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, [str(a) for a in args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    empty = tmp_path / "empty.json"
    case = json.load(open(vectors))
    case["steps"] = []
    empty.write_text(json.dumps(case))
    result = invoke("emulate", bgbs, "--vectors", empty)
    assert result.exit_code == 2 and "has no steps" in result.output
    stream = tmp_path / "obj.json"
    stream.write_text('{"N": "0x1"}')
    result = invoke("emulate", bgbs, "--inputs", stream)
    assert result.exit_code == 2 and "is a list of" in result.output


def test_verilog_size_from_init(tmp_path):
    adder, _ = case_paths("adder8")
    out = tmp_path / "adder.v"
    result = invoke("verilog", "--init", adder, "-o", out)
    assert result.exit_code == 0, result.output
    assert "input [15:0] e_in;" in out.read_text()       # 2 x 16: sixteen E lanes
