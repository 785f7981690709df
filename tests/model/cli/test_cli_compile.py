"""``bitgrid compile`` on the command line: bad input exits 2 with one line saying what is not
supported and why (the front end's refusals are in tests/model/compiler/test_frontend.py)."""

import json
import re

import pytest
from click.testing import CliRunner

from bitgrid.cli import main


def invoke(*args):
    return CliRunner().invoke(main, ["compile", *[str(a) for a in args]],
                              catch_exceptions=False)


def write(tmp_path, text, name="d.v"):
    path = tmp_path / name
    path.write_text(text)
    return path


LATCH = "module l(input en, input d, output reg q);\n  always @* if (en) q = d;\nendmodule\n"
SYNTAX = "module s(input a, output b);\n  assign b = a +;\nendmodule\n"
TWO_CLOCKS = ("module k(input c1, input c2, input d, output reg q, output reg r);\n"
              "  always @(posedge c1) q <= d;\n  always @(posedge c2) r <= d;\nendmodule\n")
MEMORY = ("module mem(input clk, input we, input [9:0] addr, input [7:0] d, output reg [7:0] q);"
          "\n  reg [7:0] m [0:1023];\n"
          "  always @(posedge clk) begin if (we) m[addr] <= d; q <= m[addr]; end\nendmodule\n")
TRISTATE = "module t(input en, input d, output y);\n  assign y = en ? d : 1'bz;\nendmodule\n"


@pytest.mark.parametrize("text, top, pattern", [
    (SYNTAX, "s", "d.v:2: syntax error"),
    (LATCH, "nope", "no module nope in the design (--top names the top module); the modules "
                    "are: l"),
    (LATCH, "l", "latch (l.q): a BitGrid stores state only in flip-flops"),
    (TRISTATE, "t", "tristate driver"),
    (TWO_CLOCKS, "k", "several clocks (c1, c2): a BitGrid runs one design clock"),
    (MEMORY, "mem", "memory deeper than 64 words"),
])
def test_refused_designs(tmp_path, text, top, pattern):
    result = invoke(write(tmp_path, text), "--top", top, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and pattern in result.stderr
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "out" / f"{top}.bgbs").exists()


@pytest.mark.parametrize("args, pattern", [
    ([], "nothing to compile"),
    (["{v}", "{v2}"], "--top NAME is needed with Verilog sources (the top module's name) "
                      "(the sources declare l, m)"),
    (["{v}", "--top", "l", "--expr", "p = a"], "not several"),
    (["--expr", "p = a * b"], "--expr needs --vars"),
    (["--vars", "a:8"], "nothing to compile"),
    (["--expr", "p = a * b", "--vars", "a:8"], "b is not declared"),
    (["--expr", "p = a / b", "--vars", "a:8,b:8"], "no division"),
    (["--expr", "p = a ** b", "--vars", "a:8,b:8"], "the operator ** is not supported"),
    (["--expr", "p = a", "--vars", "a:8", "--region", "1,2,3"],
     "--region '1,2,3' is not x0,y0,x1,y1"),
    (["--expr", "p = a", "--vars", "a:8", "--size", "7x8"], "even"),
    (["--expr", "p = a", "--vars", "a:8", "--defects", "{missing}"], "No such file"),
    (["{v}", "--top", "l", "--param", "W"], "write NAME=VALUE"),
    (["--amaranth", "no_such_module_here:Top"], "cannot import no_such_module_here"),
    (["--amaranth", "just_a_name"], "--amaranth takes module:Name"),
])
def test_bad_options(tmp_path, args, pattern):
    v = write(tmp_path, LATCH)
    v2 = tmp_path / "m.v"
    v2.write_text("module m(input a, output y); assign y = a; endmodule\n")
    args = [a.format(v=v, v2=v2, missing=tmp_path / "none.json") for a in args]
    result = invoke(*args, "-o", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert pattern in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1


def test_output_named_like_a_file_is_refused(tmp_path):
    """-o is a folder: -o x.bgbs would make a folder called x.bgbs; refused, nothing made."""
    result = invoke("--expr", "p = a", "--vars", "a:2", "-o", tmp_path / "x.bgbs")
    assert result.exit_code == 2
    assert "-o is the folder that NAME.bgbs" in result.stderr
    assert result.stderr.count("\n") == 1 and not (tmp_path / "x.bgbs").exists()


def test_output_dash_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("--expr", "p = a", "--vars", "a:2", "-o", "-")
    assert result.exit_code == 2 and "-o -: -o is the folder" in result.stderr
    assert not (tmp_path / "-").exists()


def test_a_source_with_a_byte_order_mark_compiles(tmp_path):
    source = tmp_path / "bom.v"
    source.write_bytes(b"\xef\xbb\xbfmodule bom(input [1:0] a, output [1:0] y); "
                       b"assign y = ~a; endmodule\n")
    result = invoke(source, "--top", "bom", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "bom.bgbs").exists()


def test_too_small_size_names_a_size_that_fits(tmp_path):
    """The "does not fit" message names the smallest layout over the mappings compiled (the
    LUT4 one alone named 26 x 18 here; now the multiplier block's grid), and that size does
    fit."""
    args = ["--expr", "p = a * b", "--vars", "a:3,b:3"]
    result = invoke(*args, "--size", "4x4", "-o", tmp_path / "small")
    assert result.exit_code == 2
    size = re.search(r"(?:lays it out on|block needs a) (\d+) x (\d+)", result.stderr)
    assert size, result.stderr
    fits = invoke(*args, "--size", f"{size[1]}x{size[2]}", "-o", tmp_path / "fits")
    assert fits.exit_code == 0, fits.stderr
    report = json.loads((tmp_path / "fits" / "expr.report.json").read_text())
    assert report["grid"] == [int(size[1]), int(size[2])]


def test_a_size_the_sweep_cannot_fit_goes_to_the_general_back_end(tmp_path):
    """8 x 8 holds neither the multiplier block nor the sweep's layout (the message above named
    larger grids); the general back end lays the product out there, its row held for the
    period it needs, checked against the design before it is written."""
    result = invoke("--expr", "p = a * b", "--vars", "a:3,b:3", "--size", "8x8",
                    "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out" / "expr.report.json").read_text())
    assert report["grid"] == [8, 8]
    assert report["back_end"] in ("general", "systolic")
    assert report["checked"] == 64


def test_a_region_off_the_e_and_s_edges_goes_to_the_general_back_end(tmp_path):
    """The sweep's outputs leave by the E and S edges, so it refuses a region that touches
    neither on the grid its size implies (102 x 102 for 0,0,100,100); the general back end
    puts the port bits on any lane inside the region."""
    result = invoke("--expr", "p = a", "--vars", "a:8", "--region", "0,0,100,100",
                    "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out" / "expr.report.json").read_text())
    assert report["grid"] == [102, 102] and report["back_end"] == "general"
    x0, y0, x1, y1 = report["bounding_box"]
    assert x1 <= 100 and y1 <= 100


def test_a_region_takes_its_corners_in_either_order(tmp_path):
    """``--region 5,5,0,0`` is ``0,0,5,5``, as ``bitgrid isolate`` reads it (one rule,
    SPEC section 10); a region of three numbers is exit 2 with one line."""
    result = invoke("--expr", "y = a ^ b", "--vars", "a:1,b:1", "--region", "5,5,0,0",
                    "-o", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out" / "expr.report.json").read_text())
    x0, y0, x1, y1 = report["bounding_box"]
    assert 0 <= x0 <= x1 <= 5 and 0 <= y0 <= y1 <= 5
    result = invoke("--expr", "y = a ^ b", "--vars", "a:1,b:1", "--region", "5,5,0",
                    "-o", tmp_path / "bad")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: --region '5,5,0' is not x0,y0,x1,y1 (four cell coordinates of at least 0, "
        "corners inclusive), for example 0,0,3,7"]


def test_help_has_an_example():
    result = invoke("--help")
    assert result.exit_code == 0
    assert 'bitgrid compile --expr "p = a * b" --vars a:8,b:8' in result.stdout


def test_display_is_dropped_with_one_note_and_the_program_is_right(tmp_path):
    """``initial $display`` and a ``$display`` in an always block are dropped with one note on
    stderr naming their lines (issue 39), and the program computes the design."""
    source = write(tmp_path, "module x(input [1:0] a, input [1:0] b, output [1:0] y);\n"
                             '  initial $display("hello");\n  assign y = a ^ b;\n'
                             '  always @* $display("y=%d", y);\nendmodule\n')
    result = invoke(source, "--top", "x", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "note: dropped simulation-only statements, as synthesis tools do (a BitGrid program "
        f"cannot print, stop a simulation or check an assertion): $display at {source}:2, "
        f"$display at {source}:4\n")
    report = json.loads((tmp_path / "out" / "x.report.json").read_text())
    assert report["dropped"] == [f"$display at {source}:2", f"$display at {source}:4"]
    rows = [(a, b) for a in range(4) for b in range(4)]
    (tmp_path / "in.csv").write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in rows))
    evaluated = CliRunner().invoke(main, ["eval", str(tmp_path / "out" / "x.bgbs"), "--ports",
                                          str(tmp_path / "out" / "x.ports.json"), "--csv",
                                          str(tmp_path / "in.csv")], catch_exceptions=False)
    assert evaluated.exit_code == 0, evaluated.output
    assert evaluated.stdout.splitlines() == ["y"] + [str(a ^ b) for a, b in rows]


def test_one_module_is_the_top(tmp_path):
    """A source with one module needs no --top: the module is the top (its name names the
    files)."""
    source = write(tmp_path, "module inv2(input [1:0] a, output [1:0] y); assign y = ~a; "
                             "endmodule\n")
    result = invoke(source, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "inv2.bgbs").exists()
