"""The one-cell state machine (bitgrid.compiler.onecell, issue 23): small sequential designs
in one cell whose state loops through its neighbours, period 2, against independent models."""

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
    # five variables and no reset
    "module t(input clk, input a, input b, output reg [2:0] q); initial q = 0; "
    "always @(posedge clk) q <= {q[1:0], a ^ b ^ q[2]}; endmodule",
])
def test_designs_that_do_not_fit_one_cell(tmp_path, verilog):
    assert compile_one_cell(_synthesize(tmp_path, verilog).netlist) is None
