"""bitgrid.compiler.frontend: Verilog through Yosys to a LUT4 + flip-flop netlist (issue 12).

Every test design is checked against its independent Python model (tests/support/
design_models.py): exhaustively when its inputs have at most 16 bits, else on 10,000 random
rows; combinational netlists through a bit-parallel evaluator (itself checked against
Netlist.simulate), sequential ones through Netlist.simulate.
"""

import random

import pytest

from bitgrid.compiler import CompileError, synthesize
from bitgrid.netlist import MAX_LUT_INPUTS
from support.design_models import (TEST_DESIGNS, bit_parallel, crc8_byte, input_bits,
                                   machines_design, machines_rows, model_rows, rows_for)

RARE_RESET = {"rst": 0.02}


def _id(case):
    name, params = case
    return name + "".join(f"-{k}{v}" for k, v in params.items())


def test_crc8_model_check_value():
    """The model is CRC-8/SMBUS: its check value over b"123456789" is 0xF4."""
    crc = 0
    for byte in b"123456789":
        crc = crc8_byte(crc ^ byte)
    assert crc == 0xF4


@pytest.mark.parametrize("case", TEST_DESIGNS, ids=_id)
def test_design_matches_model(synthesized, case):
    name, params = case
    design, result = synthesized(name, **params)
    netlist = result.netlist
    assert netlist.name == design.top
    assert result.stats["luts"] == len(netlist.luts) > 0
    assert all(1 <= len(lut.inputs) <= MAX_LUT_INPUTS for lut in netlist.luts.values())
    rows = rows_for(netlist, weights=RARE_RESET)
    if not design.sequential and input_bits(netlist) <= 16:
        assert len(rows) == 1 << input_bits(netlist)
    expected = model_rows(name, params, rows)
    if netlist.dffs:
        assert result.stats["clock"] == "clk" and "clk" not in netlist.inputs
        assert netlist.simulate(rows) == expected
    else:
        assert result.stats["clock"] is None
        assert netlist.simulate(rows[:300]) == expected[:300]
        assert bit_parallel(netlist, rows) == expected


def test_ports_keep_names_widths_and_signedness(synthesized):
    _, result = synthesized("multiplier", n=5, signed=True)
    netlist = result.netlist
    assert {k: (len(p.bits), p.signed) for k, p in netlist.inputs.items()} == \
        {"a": (5, True), "b": (5, True)}
    assert {k: (len(p.bits), p.signed) for k, p in netlist.outputs.items()} == \
        {"p": (10, True)}


def write(tmp_path, text, name="d.v"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_initial_values_enable_and_sync_reset(tmp_path):
    """init 0b1010 from an initial block; the enable and the synchronous reset are logic."""
    path = write(tmp_path, """
module r(input clk, input en, input rst, input [3:0] d, output reg [3:0] q);
  initial q = 4'b1010;
  always @(posedge clk) if (rst) q <= 4'd3; else if (en) q <= d;
endmodule""")
    netlist = synthesize(path, top="r").netlist
    assert sorted(d.init for d in netlist.dffs.values()) == [0, 0, 1, 1]
    rows = [dict(en=0, rst=0, d=5), dict(en=1, rst=0, d=5), dict(en=0, rst=0, d=9),
            dict(en=1, rst=1, d=9), dict(en=1, rst=0, d=12), dict(en=0, rst=0, d=0)]
    assert [o["q"] for o in netlist.simulate(rows)] == [10, 10, 5, 5, 3, 12]


def test_falling_edge_clock(tmp_path):
    """All flip-flops on the falling edge of one clock: one design clock all the same."""
    path = write(tmp_path, """
module f(input clk, input d, output reg q);
  always @(negedge clk) q <= d;
endmodule""")
    result = synthesize(path, top="f")
    assert result.stats["clock_edge"] == "falling"
    assert [o["q"] for o in result.netlist.simulate([{"d": 1}, {"d": 0}, {"d": 0}])] == \
        [0, 1, 0]


def test_top_parameters_and_submodules(tmp_path):
    path = write(tmp_path, """
module inv #(parameter W = 2)(input [W-1:0] a, output [W-1:0] y);
  assign y = ~a;
endmodule
module top #(parameter N = 3)(input [N-1:0] a, output [N-1:0] y);
  inv #(.W(N)) u(.a(a), .y(y));
endmodule""")
    netlist = synthesize(path, top="top", parameters={"N": 6}).netlist
    assert len(netlist.inputs["a"].bits) == 6
    assert [o["y"] for o in netlist.simulate([{"a": 5}, {"a": 63}])] == [58, 0]


def test_constant_and_passthrough_outputs(tmp_path):
    path = write(tmp_path, """
module c(input [1:0] a, output [1:0] same, output [2:0] k);
  assign same = a;
  assign k = 3'b101;
endmodule""")
    netlist = synthesize(path, top="c").netlist
    assert netlist.simulate([{"a": 2}, {"a": 1}]) == [{"same": 2, "k": 5}, {"same": 1, "k": 5}]


# --- Refused designs: one line saying what and why ----------------------------------------

BAD = {
    "syntax": ("module s(input a, output b);\n  assign b = a +;\nendmodule\n", "s",
               r"d\.v:2: .*syntax error"),
    "missing top": ("module m(input a, output b); assign b = a; endmodule\n", "nope",
                    r"no module nope .*the modules are: m"),
    "latch": ("module l(input en, input d, output reg q);\n"
              "  always @* if (en) q = d;\nendmodule\n", "l", r"latch \(l\.q\).*flip-flops"),
    "tristate": ("module t(input en, input d, output y);\n"
                 "  assign y = en ? d : 1'bz;\nendmodule\n", "t", r"tristate"),
    "inout": ("module io(inout p, input d, output y);\n  assign y = p & d;\nendmodule\n",
              "io", r"inout"),
    "async reset": ("module a(input clk, input rst, input d, output reg q);\n"
                    "  always @(posedge clk or posedge rst) if (rst) q <= 0; else q <= d;\n"
                    "endmodule\n", "a", r"asynchronous reset"),
    "two clocks": ("module k(input c1, input c2, input d, output reg q, output reg r);\n"
                   "  always @(posedge c1) q <= d;\n  always @(posedge c2) r <= d;\n"
                   "endmodule\n", "k", r"several clocks \(c1, c2\)"),
    "both edges": ("module e(input clk, input d, output reg q, output reg r);\n"
                   "  always @(posedge clk) q <= d;\n  always @(negedge clk) r <= d;\n"
                   "endmodule\n", "e", r"both edges of clock clk"),
    "derived clock": ("module g(input clk, input d, output reg q);\n  reg half = 0;\n"
                      "  always @(posedge clk) half <= ~half;\n"
                      "  always @(posedge half) q <= d;\nendmodule\n", "g",
                      r"several clocks|driven by logic|logic drives"),
    "clock as data": ("module cd(input clk, input d, output reg q, output y);\n"
                      "  always @(posedge clk) q <= d;\n  assign y = clk & d;\nendmodule\n",
                      "cd", r"clock clk is also used as data"),
    "memory": ("module mem(input clk, input we, input [9:0] addr, input [7:0] d,\n"
               "    output reg [7:0] q);\n  reg [7:0] m [0:1023];\n"
               "  always @(posedge clk) begin if (we) m[addr] <= d; q <= m[addr]; end\n"
               "endmodule\n", "mem", r"memory deeper than 64 words .*no block RAM"),
    "no outputs": ("module z(input a);\nendmodule\n", "z", r"no output ports"),
    "undriven clock": ("module u(input d, output reg q);\n  wire clk;\n"
                       "  always @(posedge clk) q <= d;\nendmodule\n", "u",
                       r"reads clk, which nothing drives"),
    "undriven data": ("module ud(input [1:0] d, output [1:0] y);\n  wire [1:0] t;\n"
                      "  assign y = d & t;\nendmodule\n", "ud", r"reads t, which nothing drives"),
    "constant clock": ("module c0(input d, output reg q);\n"
                       "  always @(posedge 1'b0) q <= d;\nendmodule\n", "c0",
                       r"flip-flops with a constant clock"),
    "comb loop": ("module cl(input a, output y);\n  wire w;\n  assign w = ~(w & a);\n"
                  "  assign y = w;\nendmodule\n", "cl", r"[Cc]ombinational loop|logic loop"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_refused(tmp_path, case):
    text, top, pattern = BAD[case]
    with pytest.raises(CompileError, match=pattern) as info:
        synthesize(write(tmp_path, text), top=top)
    assert "\n" not in str(info.value)


def test_small_memory_becomes_flip_flops(tmp_path):
    path = write(tmp_path, """
module rf(input clk, input we, input [1:0] wa, input [1:0] ra, input [3:0] d,
          output [3:0] q);
  reg [3:0] m [0:3];
  always @(posedge clk) if (we) m[wa] <= d;
  assign q = m[ra];
endmodule""")
    netlist = synthesize(path, top="rf").netlist
    assert len(netlist.dffs) == 16
    rows = [dict(we=1, wa=2, ra=0, d=9), dict(we=1, wa=1, ra=2, d=4),
            dict(we=0, wa=2, ra=1, d=0), dict(we=0, wa=0, ra=2, d=0)]
    assert [o["q"] for o in netlist.simulate(rows)][1:] == [9, 4, 9]


def test_missing_file_and_bad_top_name(tmp_path):
    with pytest.raises(CompileError, match="no such file"):
        synthesize(tmp_path / "none.v", top="x")
    with pytest.raises(CompileError, match="--top must be a module name"):
        synthesize(write(tmp_path, "module x(output y); assign y = 1; endmodule"),
                   top="x; shell")


@pytest.mark.parametrize("seed, count, cycles", [
    (5, 12, 1000), pytest.param(6, 60, 5000, marks=pytest.mark.slow)])
def test_random_state_machines(tmp_path, seed, count, cycles):
    """Random Moore/Mealy machines with a synchronous reset, all in one design (one Yosys run):
    12 machines for 1,000 cycles (the slow set: 60 for 5,000)."""
    rng = random.Random(seed)
    machines, text = machines_design(rng, count)
    netlist = synthesize(write(tmp_path, text), top="machines").netlist
    assert "clk" not in netlist.inputs
    rows = rows_for(netlist, count=cycles, seed=seed, weights={"rst": 0.03})
    assert netlist.simulate(rows) == machines_rows(machines, rows)


def test_bit_blasted_ports_become_buses(tmp_path):
    """An ABC-style netlist (escaped single-bit ports \\B[0], \\B[1], ...) has its buses back,
    bit i the port name[i]; an illegal name is made legal; the program computes the design."""
    path = tmp_path / "blasted.v"
    path.write_text("module top(\\B[1] , \\B[0] , \\c-d , \\M[0] , \\M[1] );\n"
                    "  input \\B[1] , \\B[0] , \\c-d ;\n  output \\M[0] , \\M[1] ;\n"
                    "  assign \\M[0] = \\B[0] & \\c-d ;\n  assign \\M[1] = \\B[1] ^ \\B[0] ;\n"
                    "endmodule\n")
    synthesis = synthesize(path, top="top")
    netlist = synthesis.netlist
    assert {n: len(p.bits) for n, p in netlist.inputs.items()} == {"B": 2, "c_d": 1}
    assert {n: len(p.bits) for n, p in netlist.outputs.items()} == {"M": 2}
    rows = [{"B": b, "c_d": c} for b in range(4) for c in range(2)]
    assert [r["M"] for r in netlist.simulate(rows)] == \
        [(r["B"] & 1 & r["c_d"]) | ((((r["B"] >> 1) ^ r["B"]) & 1) << 1) for r in rows]


def test_port_buses_refuses_a_name_clash():
    from bitgrid.compiler.frontend import port_buses
    ports = {"a-b": {"direction": "input", "bits": [2]},
             "a_b": {"direction": "input", "bits": [3]}}
    with pytest.raises(CompileError, match="ports a-b and a_b both become a_b"):
        port_buses(ports)
    # a bus whose bits 0 .. k - 1 are not all there stays bit by bit, names made legal
    assert set(port_buses({"x[0]": {"direction": "input", "bits": [2]},
                           "x[2]": {"direction": "input", "bits": [3]}})) == {"x_0_", "x_2_"}


# --- Simulation-only statements: dropped with a note, as synthesis tools do (issue 39) -----

SIMULATION_ONLY = """module sim(input clk, input [3:0] a, input [3:0] b, output [3:0] s,
                     output reg [3:0] q);
  initial $display("hello");
  assign s = a + b;
  always @(posedge clk) begin
    q <= a ^ b;
    $display("q=%d", q); $write("w");
    if (a == 4'hf) $finish;
    if (a == 4'he) $stop(1);
    assert (a != 4'hd);
  end
  initial $monitor("m %d", a);
  always @* assert (b != 4'h3);
  always @(posedge clk) $fdisplay(32'h8000_0002, "(%d)", a);
  initial begin $display("$finish (a string, not a call)"); $finish; end // $stop: a comment
endmodule
"""


def test_simulation_only_statements_are_dropped_naming_their_lines(tmp_path):
    """$display, $write, $monitor, $finish, $stop, $fdisplay and immediate assertions, in
    initial and always blocks: each is dropped and named with its line (a $finish in a
    string or a comment is none), and the design computes what it says."""
    path = write(tmp_path, SIMULATION_ONLY)
    result = synthesize(path, top="sim")
    assert result.dropped == tuple(f"{what} at {path}:{line}" for what, line in [
        ("$display", 3), ("$display", 7), ("$write", 7), ("$finish", 8), ("$stop", 9),
        ("assert", 10), ("$monitor", 12), ("assert", 13), ("$fdisplay", 14), ("$display", 15),
        ("$finish", 15)])
    assert result.stats["clock"] == "clk"
    rng = random.Random(39)
    rows = [{"a": rng.randrange(16), "b": rng.randrange(16)} for _ in range(200)]
    expected = [{"s": (r["a"] + r["b"]) & 15,
                 "q": 0 if k == 0 else rows[k - 1]["a"] ^ rows[k - 1]["b"]}
                for k, r in enumerate(rows)]
    assert result.netlist.simulate(rows) == expected


def test_a_design_without_simulation_statements_drops_nothing(synthesized):
    _, result = synthesized("multiplier", n=2, signed=False)
    assert result.dropped == ()


def test_the_note_names_each_dropped_statement():
    from bitgrid.compiler.frontend import dropped_note
    assert dropped_note(()) is None
    assert dropped_note(("$display at d.v:2", "assert at d.v:7")) == (
        "dropped simulation-only statements, as synthesis tools do (a BitGrid program cannot "
        "print, stop a simulation or check an assertion): $display at d.v:2, assert at d.v:7")
    many = tuple(f"$display at d.v:{line}" for line in range(1, 11))
    assert dropped_note(many).endswith("$display at d.v:8 and 2 more")


def test_finish_in_an_included_file_and_other_system_tasks_are_refused(tmp_path):
    """Only the source files given are rewritten: a $finish in an included file is refused,
    as is a system task that synthesis does not drop ($error in a procedure); both name the
    line. The include of a rewritten source is still found beside it."""
    (tmp_path / "stop.vh").write_text("initial $stop;\n")
    (tmp_path / "k.vh").write_text("localparam K = 2;\n")
    with pytest.raises(CompileError) as info:
        synthesize(write(tmp_path, "module i(input a, output y);\n  assign y = a;\n"
                                   '  `include "stop.vh"\nendmodule\n'), top="i")
    assert str(info.value).endswith("stop.vh:1: $stop in an included file cannot be dropped "
                                    "(bitgrid drops it in the source files given): remove it, "
                                    "or put it between `ifndef SYNTHESIS and `endif")
    path = write(tmp_path, "module e(input clk, input a, output y);\n  assign y = a;\n"
                           '  always @(posedge clk) $error("no");\nendmodule\n')
    with pytest.raises(CompileError) as info:
        synthesize(path, top="e")
    assert str(info.value) == (
        f"{path}:3: $error is a simulation-only system task that bitgrid cannot drop (it drops "
        "$display, $write, $monitor, $strobe, $finish, $stop, $fdisplay, $fwrite and "
        "assertions): remove it, or put it between `ifndef SYNTHESIS and `endif")
    path = write(tmp_path, '`include "k.vh"\nmodule k(input [1:0] a, output [2:0] y);\n'
                           "  assign y = a + K;\n  initial $finish;\nendmodule\n", name="k.v")
    result = synthesize(path, top="k")
    assert result.dropped == (f"$finish at {path}:4",)
    assert result.netlist.simulate([{"a": a} for a in range(4)]) == \
        [{"y": a + 2} for a in range(4)]


@pytest.mark.parametrize("text, message", [
    ("(* blackbox *) module bb(input a, output y); endmodule\n"
     "module top(input a, output y);\n  bb u(.a(a), .y(y));\nendmodule\n",
     "the design instantiates module bb (at {path}:3), which has no contents here (a black "
     "box, such as a vendor primitive): BitGrid maps only logic it is given; give the "
     "module's Verilog source too"),
    ("module top(input a, output y);\n  assign y = a ^ $anyseq;\nendmodule\n",
     "the design uses $anyseq (at {path}:2), which only formal verification gives a meaning: "
     "hardware cannot build it; remove it or put it between `ifdef FORMAL and `endif"),
    ("// nothing here\n", "no module top in the design (--top names the top module); {path} "
                          "declares no module: give the Verilog source of the design"),
])
def test_what_cannot_be_mapped_is_refused_naming_its_line(tmp_path, text, message):
    """The design's own constructs are refused as such, with their line, never as a bug."""
    path = write(tmp_path, text)
    with pytest.raises(CompileError) as info:
        synthesize(path, top="top")
    assert str(info.value) == message.format(path=path)


def test_yosys_passes_are_reported_as_yosys_starts_them(tmp_path):
    """Issue 39 item 5: synthesis reports Yosys' passes (a count and the pass's name)."""
    source = tmp_path / "mul.v"
    source.write_text("module mul(input [5:0] a, input [5:0] b, output [11:0] p);\n"
                      "  assign p = a * b;\nendmodule\n")
    seen = []
    result = synthesize(source, top="mul", passes=lambda done, name: seen.append((done, name)))
    assert result.netlist.outputs["p"].bits
    counts = [done for done, _ in seen]
    assert counts == sorted(counts) and counts[-1] >= 10
    names = {name for _, name in seen}
    assert any(name.startswith("ABC pass") for name in names)
    assert any("JSON backend" in name for name in names)


def test_compile_progress_takes_the_pass_name_when_it_can(tmp_path):
    from bitgrid.compiler.flow import _takes_detail
    assert _takes_detail(lambda stage, done, total, detail=None: None)
    assert not _takes_detail(lambda stage, done, total: None)
    assert _takes_detail(lambda *args: None)
