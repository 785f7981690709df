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
from support.conformance import bad_stream_cases, conformance_dir, load_conformance


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
    assert "input [3:0] i__e;" in text and "output [1:0] o__n;" in text
    result = invoke("verilog", "--size", "3x4")
    assert result.exit_code == 2
    assert "Grid width must be even" in result.output


def test_verilog_progress_names_the_stage(tmp_path):
    """Issue 39 item 5: a long generation says what runs (not a terminal: only with
    --progress)."""
    out = tmp_path / "g.v"
    result = CliRunner().invoke(main, ["verilog", "--size", "2x2", "-o", str(out), "--progress"])
    assert result.exit_code == 0
    assert "generating the Verilog of the 2 x 2 grid (Amaranth, then Yosys)" in result.stderr
    result = CliRunner().invoke(main, ["verilog", "--size", "2x2", "-o", str(out)])
    assert "generating" not in result.stderr


def test_example_writes_replayable_case(tmp_path):
    result = invoke("example", "adder", "--bits", "4", "-o", tmp_path)
    assert result.exit_code == 0
    result = invoke("emulate", tmp_path / "adder4.bgbs", "--vectors", tmp_path / "adder4.json")
    assert result.exit_code == 0


def test_sim_on_the_latch_store(tmp_path):
    """bitgrid sim --storage latch (issue 27): the ASIC latch array passes a conformance case
    on Icarus; with --mesh it is refused in one line."""
    bgbs, vectors = case_paths("random_2x2")
    result = invoke("sim", bgbs, "--vectors", vectors, "--storage", "latch")
    assert result.exit_code == 0, result.output
    assert "(latch storage)" in result.output and "PASS" in result.output
    result = invoke("sim", bgbs, "--steps", "2", "--storage", "latch", "--mesh", "2x2")
    assert result.exit_code == 2
    assert result.output == ("error: --storage latch (the ASIC latch array) runs on a single "
                             "direct grid; leave out --mesh\n")


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
    assert "input [15:0] i__e;" in out.read_text()       # 2 x 16: sixteen E lanes


# -- bitstream slice / join (bitgrid.mesh) -----------------------------------------------------

@pytest.mark.parametrize("command", [["bitstream", "slice"], ["bitstream", "join"]])
def test_slice_join_help_has_example(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0
    assert result.output.startswith("Usage: ")
    assert "--mesh COLSxROWS" in result.output
    assert "Example" in result.output and "<stem>.c<col>r<row>.bgbs" in result.output


@pytest.mark.parametrize("name, mesh, tile", [
    ("random_8x8", "2x2", "4 x 4"), ("random_32x32", "2x2", "16 x 16"),
    ("random_32x32", "4x4", "8 x 8"), ("adder8", "1x2", "2 x 8"),
    ("adder8_colmajor", "1x2", "2 x 8"), ("adder8_snake", "1x2", "2 x 8"),
    ("edge_io_hello", "2x2", "8 x 4")])
def test_slice_then_join_reproduces_the_bytes(tmp_path, name, mesh, tile):
    bgbs, _ = case_paths(name)
    original = open(bgbs, "rb").read()
    chips = tmp_path / "chips"
    result = invoke("bitstream", "slice", bgbs, "--mesh", mesh, "-o", chips)
    assert result.exit_code == 0, result.output
    cols, rows = (int(v) for v in mesh.split("x"))
    order = bitstream.load(bgbs).order
    names = [f"{name}.c{c}r{r}.bgbs" for r in range(rows) for c in range(cols)]
    assert sorted(os.listdir(chips)) == sorted(names)
    assert f"into a {mesh} mesh of {tile} tiles:" in result.output
    for n in names:
        assert str(chips / n) in result.output
        assert bitstream.load(chips / n).order == order        # the source's scan order
    out = tmp_path / "joined.bgbs"
    result = invoke("bitstream", "join", *[chips / n for n in reversed(names)], "--mesh", mesh,
                    "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == original
    out.unlink()
    result = invoke("bitstream", "join", "--from", chips / name, "--mesh", mesh, "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == original


def test_slice_join_errors_exit_2(tmp_path):
    bgbs, _ = case_paths("random_8x8")
    chips = tmp_path / "chips"
    assert invoke("bitstream", "slice", bgbs, "--mesh", "2x2", "-o", chips).exit_code == 0
    c = [chips / f"random_8x8.c{col}r{row}.bgbs" for row in range(2) for col in range(2)]
    (tmp_path / "other").mkdir()
    small = tmp_path / "other" / "random_8x8.c1r1.bgbs"
    bitstream.save(small, bitstream.load(c[3]).config.region(0, 0, 2, 2))
    snake = tmp_path / "snake" / "random_8x8.c1r1.bgbs"
    snake.parent.mkdir()
    bitstream.save(snake, bitstream.load(c[3]).config, bitstream.ScanOrder.SNAKE)
    stranger = tmp_path / "small.c1r1.bgbs"
    bitstream.save(stranger, bitstream.load(c[3]).config)
    corrupt = tmp_path / "bad" / "random_8x8.c1r1.bgbs"
    corrupt.parent.mkdir()
    corrupt.write_bytes(c[3].read_bytes()[:-1])
    (tmp_path / "file").write_text("")
    out = tmp_path / "out.bgbs"
    cases = [
        (["bitstream", "slice", bgbs, "--mesh", "3x1"],
         "error: {}: cannot slice a 8 x 8 grid into a 3x1 mesh: a grid 8 cells in width does "
         "not split into 3 chip columns of equal size; use a mesh whose column count divides "
         "8 with an even quotient (for 8 cells: 1, 2, 4)".format(bgbs)),
        (["bitstream", "slice", bgbs, "--mesh", "8x1"],
         "8 chip columns would make tiles 1 cell in width: tiles need an even width and "
         "height"),
        (["bitstream", "slice", bgbs, "--mesh", "2by2"],
         "Invalid value for '--mesh': mesh '2by2' is not of the form COLSxROWS"),
        (["bitstream", "slice", bgbs, "--mesh", "2x2", "-o", tmp_path / "file"],
         "is a file; see 'main bitstream slice --help'"),
        (["bitstream", "slice", tmp_path / "none.bgbs", "--mesh", "2x2"],
         "No such file or directory"),
        (["bitstream", "join", c[0], c[1], c[2], "--mesh", "2x2", "-o", out],
         "error: missing chip file for chip c1r1: a 2x2 mesh needs one file per chip "
         "(<stem>.c<col>r<row>.bgbs); add them, or check --mesh"),
        (["bitstream", "join", c[0], c[1], c[2], small, "--mesh", "2x2", "-o", out],
         "error: tile c1r1 is 2 x 2 cells, tile c0r0 is 4 x 4: all tiles of a mesh have the "
         "same size; slice the logical bitstream again"),
        (["bitstream", "join", c[0], c[1], c[2], stranger, "--mesh", "2x2", "-o", out],
         "error: the chip files come from different bitstreams (random_8x8, small): give the "
         "files of one slice"),
        (["bitstream", "join", c[0], c[1], c[2], c[3], "--mesh", "2x2", "-o", c[1]],
         f"error: -o {c[1]} is one of the chip files being joined; write the joined bitstream "
         "to another file"),
        (["bitstream", "join", c[0], c[1], c[2], snake, "--mesh", "2x2", "-o", out],
         "error: the tiles have different scan orders (c0r0 row-major, c1r0 row-major, c0r1 "
         "row-major, c1r1 snake); choose the order of the joined bitstream with --order"),
        (["bitstream", "join", c[0], c[1], c[2], corrupt, "--mesh", "2x2", "-o", out],
         f"error: {corrupt}: bad bitstream: truncated payload: payload is 127 bytes, a 4 x 4 "
         "grid needs 128"),
        (["bitstream", "join", c[0], c[1], c[2], c[3], "--mesh", "2x1", "-o", out],
         f"error: {c[2]} is for chip (0, 1), outside the 2x1 mesh; check --mesh"),
        (["bitstream", "join", c[0], c[0], "--mesh", "2x2", "-o", out],
         f"error: {c[0]} and {c[0]} are both for chip (0, 0); give one file per chip"),
        (["bitstream", "join", bgbs, "--mesh", "1x1", "-o", out],
         f"error: {bgbs}: cannot tell which chip it is for; chip files are named "
         "<stem>.c<col>r<row>.bgbs"),
        (["bitstream", "join", "--from", tmp_path / "nothing", "--mesh", "1x2", "-o", out],
         f"error: missing chip files {tmp_path / 'nothing'}.c0r0.bgbs, "
         f"{tmp_path / 'nothing'}.c0r1.bgbs: a 1x2 mesh needs one file per chip; slice the "
         "logical bitstream again with `bitgrid bitstream slice BITSTREAM --mesh 1x2`"),
        (["bitstream", "join", "--from", chips / "random_8x8", "--mesh", "2x1", "-o", out],
         f"error: {c[2]}, {c[3]}: chip files outside the 2x1 mesh; check --mesh, or remove the "
         "chip files of an earlier slice"),
        (["bitstream", "join", c[0], "--from", chips / "random_8x8", "--mesh", "1x1", "-o",
          out], "error: give either the chip files or --from STEM, not both"),
        (["bitstream", "join", "--mesh", "1x1", "-o", out],
         "error: nothing to join: give the chip files"),
        (["bitstream", "join", *c, "--mesh", "2x2", "-o", tmp_path / "no" / "x.bgbs"],
         "does not exist"),
        (["bitstream", "join", *c, "--mesh", "2x2"], "Missing option '-o' / '--output'"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, [str(a) for a in args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    assert not out.exists()
    result = invoke("bitstream", "join", c[0], c[1], c[2], snake, "--mesh", "2x2", "-o", out,
                    "--order", "row-major")
    assert result.exit_code == 0, result.output
    assert out.read_bytes() == open(bgbs, "rb").read()
