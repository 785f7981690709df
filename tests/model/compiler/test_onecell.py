"""The one-cell state machine (bitgrid.compiler.onecell, issue 23): small sequential designs
in one cell whose state loops through its neighbours, period 2, against independent models;
and the one-cell function (up to 4 input and 4 output bits, no state)."""

import random

import pytest

from bitgrid.compiler import compile_netlist, synthesize
from bitgrid.compiler.onecell import compile_one_cell
from bitgrid.evaluate import evaluate

from support.design_models import model_rows


def _synthesize(tmp_path, verilog, top="t"):
    path = tmp_path / f"{top}.v"
    path.write_text(verilog)
    return synthesize(path, top=top)


def test_sequence_detector(synthesized):
    """The detector (3 state bits, an input and a reset): 10 cells (a pass cell takes rst to the
    S edge of the 4 x 4 grid), a new bit every cycle,
    against the design model on 3,000 random cycles with resets in 1 of 40."""
    _, synthesis = synthesized("detector")
    result = compile_one_cell(synthesis.netlist)
    assert result.report["back_end"] == "one-cell"
    assert (result.report["cells"]["total"], result.portmap.period) == (10, 2)   # 9 + a pass cell
    rng = random.Random(7)
    rows = [{"bit_in": rng.randint(0, 1), "rst": int(rng.random() < 1 / 40)}
            for _ in range(3000)]
    assert evaluate(result.config, result.portmap, rows, target="fast") == \
        model_rows("detector", {}, rows)
    best = compile_netlist(synthesis.netlist, alternatives=synthesis.alternatives)
    assert best.report["mapping"] == "one-cell"


def test_two_bit_counter_with_enable_and_no_reset(tmp_path):
    """q <= q + en (2 state bits, 1 input) with two outputs: the top bit (Moore) and the
    carry out q == 3 && en (Mealy), on X's N side and through its W neighbour."""
    synthesis = _synthesize(tmp_path, "module t(input clk, input en, output top, "
                            "output wrap); reg [1:0] q; initial q = 0; always @(posedge clk) "
                            "if (en) q <= q + 1'b1; assign top = q[1]; "
                            "assign wrap = en & (q == 2'd3); endmodule")
    result = compile_one_cell(synthesis.netlist)
    assert result is not None and result.portmap.period == 2
    rng = random.Random(2)
    rows = [{"en": rng.randint(0, 1)} for _ in range(400)]
    expected, q = [], 0
    for row in rows:
        expected.append({"top": q >> 1, "wrap": int(row["en"] and q == 3)})
        q = (q + row["en"]) % 4
    assert evaluate(result.config, result.portmap, rows) == expected


@pytest.mark.parametrize("verilog", [
    # four state bits
    "module t(input clk, input en, output reg [3:0] q); initial q = 0; "
    "always @(posedge clk) if (en) q <= q + 1'b1; endmodule",
    # starts at 1
    "module t(input clk, input en, output reg q); initial q = 1; "
    "always @(posedge clk) if (en) q <= ~q; endmodule",
    # leaves state 0 with zero inputs (a free-running toggle)
    "module t(input clk, output reg q); initial q = 0; always @(posedge clk) q <= ~q; "
    "endmodule",
    # a constant 1 output (no input path sets the time of its first row)
    "module t(input a, output y, output z); assign y = ~a; assign z = 1; endmodule",
    # five input bits, no state
    "module t(input [4:0] a, output y); assign y = ^a; endmodule",
    # five output bits
    "module t(input [1:0] a, input [1:0] b, output [4:0] y); assign y = {a, b, a[0] & b[0]}; "
    "endmodule",
    # five variables and no reset
    "module t(input clk, input a, input b, output reg [2:0] q); initial q = 0; "
    "always @(posedge clk) q <= {q[1:0], a ^ b ^ q[2]}; endmodule",
])
def test_designs_that_do_not_fit_one_cell(tmp_path, verilog):
    assert compile_one_cell(_synthesize(tmp_path, verilog).netlist) is None


@pytest.mark.parametrize("signed", [False, True])
def test_two_by_two_multiplier_is_one_cell(synthesized, signed):
    """mul2u and mul2s: the cell X computes the four product bits from a and b on its four
    sides (5 cells with the pass cell to the E edge), every pair against Python, and
    compile_netlist keeps it."""
    _, synthesis = synthesized("multiplier", n=2, signed=signed)
    result = compile_one_cell(synthesis.netlist)
    assert (result.report["cells"]["total"], result.portmap.period) == (5, 2)
    span = range(-2, 2) if signed else range(4)
    rows = [{"a": a, "b": b} for a in span for b in span]
    assert [r["p"] for r in evaluate(result.config, result.portmap, rows, target="fast")] == \
        [r["a"] * r["b"] for r in rows]
    best = compile_netlist(synthesis.netlist, alternatives=synthesis.alternatives,
                           operation=synthesis.operation)
    assert best.report["mapping"] == "one-cell"


def test_one_cell_function_of_three_inputs(tmp_path):
    """A full adder (3 inputs, 2 outputs): one cell and its relays, every row."""
    synthesis = _synthesize(tmp_path, "module t(input a, input b, input c, output s, "
                            "output co); assign {co, s} = a + b + c; endmodule")
    result = compile_one_cell(synthesis.netlist)
    rows = [{"a": a, "b": b, "c": c} for a in range(2) for b in range(2) for c in range(2)]
    assert evaluate(result.config, result.portmap, rows) == \
        [{"s": (r["a"] + r["b"] + r["c"]) & 1, "co": (r["a"] + r["b"] + r["c"]) >> 1}
         for r in rows]
