"""Registers absorbed into port timing (bitgrid.compiler.retime, issue 40).

Two models check the retiming: a wave model of the combinational copy (each output row k is
the copy's value in wave ``k - lag``; inputs in wave j hold their row ``j + lag``, 0 before
row 0; START is 1 from wave 0) against :meth:`Netlist.simulate` on random feed-forward
netlists; and compiled programs on the emulator against the same simulation (the compile's
own check, and the evaluator by port names here)."""

import random

import pytest

from bitgrid.compiler import compile_netlist
from bitgrid.compiler.retime import absorb_registers
from bitgrid.evaluate import evaluate
from bitgrid.netlist import CONST1, START, Dff, InputPort, Lut, Netlist, OutputPort


def wave_model(retimed, rows):
    """Output rows of ``retimed`` by the module's wave semantics."""
    comb = retimed.netlist
    out_rows = []
    for k in range(len(rows)):
        row = {}
        for name, port in comb.outputs.items():
            value = 0
            for i, net in enumerate(port.bits):
                j = k - retimed.output_lags[(name, i)]
                inputs = {}
                for iname, iport in comb.inputs.items():
                    for b, inet in enumerate(iport.bits):
                        r = j + retimed.input_lags[(iname, b)]
                        inputs[inet] = (rows[r].get(iname, 0) >> b) & 1 if r >= 0 else 0
                values = _settle_with_start(comb, inputs, int(j >= 0))
                value |= values[net] << i
            if port.signed and value >> (len(port.bits) - 1):
                value -= 1 << len(port.bits)
            row[name] = value
        out_rows.append(row)
    return out_rows


def _settle_with_start(netlist, inputs, start):
    values = {"$0": 0, "$1": 1, START: start, **inputs}
    for net in netlist.order:
        lut = netlist.luts[net]
        values[net] = lut.evaluate([values[i] for i in lut.inputs])
    return values


def _random_rows(netlist, count, rng):
    return [{name: rng.getrandbits(len(port.bits)) for name, port in netlist.inputs.items()}
            for _ in range(count)]


def _feed_forward(rng, *, registered_inputs, registered_outputs, width=3, inits=True):
    """A random netlist: inputs a, b (``width`` bits), optionally a register on each input bit,
    a layer of random 2- and 3-input LUTs, optionally a register on each output bit."""
    a = tuple(f"a{i}" for i in range(width))
    b = tuple(f"b{i}" for i in range(width))
    dffs, luts = {}, {}
    sources = list(a + b)
    if registered_inputs:
        sources = []
        for net in a + b:
            dffs[f"{net}_r"] = Dff(net, 0)
            sources.append(f"{net}_r")
    outs = []
    for i in range(width + 1):
        ins = tuple(rng.sample(sources, rng.choice((2, 3))))
        luts[f"f{i}"] = Lut(ins, rng.getrandbits(1 << len(ins)))
        net = f"f{i}"
        if registered_outputs:
            dffs[f"q{i}"] = Dff(net, rng.getrandbits(1) if inits else 0)
            net = f"q{i}"
        outs.append(net)
    return Netlist("ff", {"a": InputPort(a), "b": InputPort(b)}, {"y": OutputPort(tuple(outs))},
                   luts, dffs)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("shape", [(False, True), (True, False), (True, True)])
def test_wave_model_equals_the_design(seed, shape):
    rng = random.Random(seed)
    netlist = _feed_forward(rng, registered_inputs=shape[0], registered_outputs=shape[1])
    retimed, reason = absorb_registers(netlist)
    assert retimed is not None, reason
    assert all(lag <= 0 for lag in retimed.input_lags.values())
    rows = _random_rows(netlist, 24, rng)
    assert wave_model(retimed, rows) == netlist.simulate(rows)


def test_lags_of_the_usual_shapes():
    """An output register: output lag 1 (read a row early), gated; a register on each input
    and on the output: inputs at lag -1; a delay line of 3: input at -3, nothing gated."""
    rng = random.Random(1)
    out_reg = _feed_forward(rng, registered_inputs=False, registered_outputs=True)
    retimed, _ = absorb_registers(out_reg)
    assert set(retimed.output_lags.values()) == {1} and set(retimed.input_lags.values()) == {0}
    assert retimed.gated == retimed.registers == 4
    both = _feed_forward(rng, registered_inputs=True, registered_outputs=True)
    retimed, _ = absorb_registers(both)
    read = {src[:-2] for lut in both.luts.values() for src in lut.inputs}    # "a0_r" -> "a0"
    assert {lag for (port, i), lag in retimed.input_lags.items() if f"{port}{i}" in read} \
        == {-1}                          # (an input bit no LUT reads is alone, at lag 0)
    assert set(retimed.output_lags.values()) == {1}
    assert (retimed.registers, retimed.gated) == (10, 4)
    d = ("d0", "d1")
    dffs = {"s0_0": Dff("d0"), "s0_1": Dff("d1")}
    for stage in (1, 2):
        for i in range(2):
            dffs[f"s{stage}_{i}"] = Dff(f"s{stage - 1}_{i}")
    line = Netlist("line", {"d": InputPort(d)}, {"q": OutputPort(("s2_0", "s2_1"))}, {}, dffs)
    retimed, _ = absorb_registers(line)
    assert set(retimed.input_lags.values()) == {-3} and set(retimed.output_lags.values()) == {0}
    assert retimed.gated == 0
    rows = [{"d": v} for v in (1, 2, 3, 0, 2, 1, 3)]
    assert wave_model(retimed, rows) == line.simulate(rows) == \
        [{"q": 0}] * 3 + [{"q": v} for v in (1, 2, 3, 0)]


def test_a_constant_register_is_the_start_net():
    netlist = Netlist("c", {}, {"y": OutputPort(("q",))}, {}, {"q": Dff(CONST1, 0)})
    retimed, _ = absorb_registers(netlist)
    assert retimed.output_lags == {("y", 0): 1}
    assert wave_model(retimed, [{}] * 3) == netlist.simulate([{}] * 3) == \
        [{"y": 0}, {"y": 1}, {"y": 1}]


@pytest.mark.parametrize("netlist, reason", [
    (Netlist("loop", {"a": InputPort(("a0",))}, {"y": OutputPort(("q",))},
             {"n": Lut(("a0", "q"), 0b0110)}, {"q": Dff("n")}), "feedback loop"),
    (Netlist("skew", {"a": InputPort(("a0",))}, {"y": OutputPort(("n",))},
             {"n": Lut(("a0", "q"), 0b0110)}, {"q": Dff("a0")}), "unequal numbers"),
    (Netlist("two", {"a": InputPort(("a0",))}, {"y": OutputPort(("q2",))},
             {"n": Lut(("a0",), 0b01)}, {"q1": Dff("n"), "q2": Dff("q1", 1)}),
     "different depths|first cycle"),
])
def test_what_keeps_its_registers(netlist, reason):
    retimed, why = absorb_registers(netlist)
    assert retimed is None
    assert any(part in why for part in reason.split("|")), why


@pytest.mark.parametrize("shape", [(False, True), (True, False), (True, True)])
def test_compiled_at_period_2_and_right_on_the_emulator(shape):
    """The whole back end: period 2, the registers in the report, every row right from row 0
    (the emulator through the port map against the design's own simulation)."""
    rng = random.Random(7)
    netlist = _feed_forward(rng, registered_inputs=shape[0], registered_outputs=shape[1],
                            width=4)
    result = compile_netlist(netlist)
    assert result.portmap.period == 2
    assert result.report["registers"]["kind"] == "retimed"
    rows = _random_rows(netlist, 40, rng)
    assert evaluate(result.config, result.portmap, rows, target="fast") == \
        netlist.simulate(rows)


# Verilog designs through the whole flow (Yosys, the back end, the compile's own check) -----

def _compile_verilog(tmp_path, text, top):
    from bitgrid.compiler import compile
    path = tmp_path / f"{top}.v"
    path.write_text(text)
    return compile(path, top=top)


def _rows_right(result, rows, expected):
    assert evaluate(result.config, result.portmap, rows, target="fast") == expected


REG32 = "module reg32(input clk, input [31:0] d, output reg [31:0] q); " \
        "always @(posedge clk) q <= d; endmodule"
DELAY = """module delay4(input clk, input [7:0] d, output [7:0] q);
  reg [7:0] s0, s1, s2, s3;
  always @(posedge clk) begin s0 <= d; s1 <= s0; s2 <= s1; s3 <= s2; end
  assign q = s3;
endmodule"""
RMUL = """module rmul(input clk, input [5:0] a, input [5:0] b, output reg [11:0] p);
  reg [5:0] ar, br;
  always @(posedge clk) begin ar <= a; br <= b; p <= ar * br; end
endmodule"""
REQ = """module req(input clk, input [3:0] a, input [3:0] b, output reg e, output reg [4:0] s);
  always @(posedge clk) begin e <= a == b; s <= a + b; end
endmodule"""
COUNT = """module count(input clk, input en, output reg [3:0] q);
  always @(posedge clk) if (en) q <= q + 1;
endmodule"""


def test_a_register_is_wire_at_period_2(tmp_path):
    """32 flip-flops, no LUT: two cells a bit (5,250 cells at period 70 before retiming)."""
    result = _compile_verilog(tmp_path, REG32, "reg32")
    assert result.portmap.period == 2
    assert result.report["cells"]["total"] <= 2 * 32
    assert result.report["registers"] == {"kind": "retimed", "absorbed": 32, "gated": 0,
                                          "history": 1}
    rows = [{"d": (0x9E3779B9 * k) & 0xFFFFFFFF} for k in range(10)]
    _rows_right(result, rows, [{"q": 0}] + [{"q": r["d"]} for r in rows[:-1]])


def test_a_delay_line_is_port_timing(tmp_path):
    result = _compile_verilog(tmp_path, DELAY, "delay4")
    assert result.portmap.period == 2 and result.report["cells"]["total"] <= 2 * 8
    rows = [{"d": (37 * k + 5) & 0xFF} for k in range(12)]
    _rows_right(result, rows, [{"q": 0}] * 4 + [{"q": r["d"]} for r in rows[:-4]])


def test_a_registered_multiply_is_the_multiplier_block_two_rows_later(tmp_path):
    result = _compile_verilog(tmp_path, RMUL, "rmul")
    assert result.portmap.period == 2
    assert result.report["blocks"] == ["multiplier(bits=6)"] or \
        result.report["blocks"][0].startswith("multiplier")
    assert result.report["registers"] == {"kind": "block", "lag": 2, "history": 2}
    rows = [{"a": (7 * k + 3) % 64, "b": (11 * k + 1) % 64} for k in range(12)]
    _rows_right(result, rows, [{"p": 0}] * 2 + [{"p": r["a"] * r["b"]} for r in rows[:-2]])


def test_an_operation_whose_zero_is_not_its_reset_is_retimed_with_gates(tmp_path):
    """``a == b`` is 1 on zero inputs but the register starts at 0: not the comparator block
    two rows later; the LUT copy, its first row gated, at period 2."""
    result = _compile_verilog(tmp_path, REQ, "req")
    assert result.portmap.period == 2
    assert result.report["registers"]["kind"] == "retimed"
    rows = [{"a": k % 16, "b": (k * 5) % 16} for k in range(12)]
    expected = [{"e": 0, "s": 0}] + [{"e": int(r["a"] == r["b"]), "s": r["a"] + r["b"]}
                                     for r in rows[:-1]]
    _rows_right(result, rows, expected)


def test_a_counter_keeps_its_loop(tmp_path):
    result = _compile_verilog(tmp_path, COUNT, "count")
    assert "registers" not in result.report
    rows = [{"en": int(k % 3 != 0)} for k in range(12)]
    got = evaluate(result.config, result.portmap, rows, target="fast")
    count, expected = 0, []
    for row in rows:
        expected.append({"q": count})
        count = (count + row["en"]) % 16
    assert got == expected


def test_registers_at_rest_are_wires_however_deep():
    """Zero inputs keep every register at its init (an AND and an XOR of the inputs, three
    stages after them, one before): no gate, outputs read in waves of 0 or later."""
    a, b = ("a0", "a1"), ("b0", "b1")
    luts = {"x0": Lut(("ar0", "b0"), 0b1000), "x1": Lut(("ar1", "b1"), 0b0110)}
    dffs = {"ar0": Dff("a0"), "ar1": Dff("a1")}
    for i in range(2):
        dffs[f"p{i}"] = Dff(f"x{i}")
        dffs[f"q{i}"] = Dff(f"p{i}")
        dffs[f"r{i}"] = Dff(f"q{i}")
    netlist = Netlist("deep", {"a": InputPort(a), "b": InputPort(b)},
                      {"y": OutputPort(("r0", "r1"))}, luts, dffs)
    retimed, reason = absorb_registers(netlist)
    assert retimed is not None, reason
    assert retimed.gated == 0
    assert set(retimed.output_lags.values()) == {0}
    assert {retimed.input_lags[("a", 0)], retimed.input_lags[("b", 0)]} == {-4, -3}
    rng = random.Random(3)
    rows = _random_rows(netlist, 30, rng)
    assert wave_model(retimed, rows) == netlist.simulate(rows)
    result = compile_netlist(netlist)
    assert result.portmap.period == 2
    assert evaluate(result.config, result.portmap, rows, target="fast") == netlist.simulate(rows)
