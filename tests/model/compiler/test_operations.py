"""The arithmetic blocks (issue 23): Yosys' coarse netlist read into operations
(bitgrid.compiler.operations) and the library block placed for one (bitgrid.compiler.blocks).

The table below is written by hand from the designs' Verilog (not read back from the code):
which block each test design is, with which parameters and port connections. Designs that
are more than one operation are not recognised, and a recognised design's program runs
right against Python (the end-to-end runs are in test_compile.py)."""

import random

import pytest

from bitgrid.compiler import CompileError, compile, compile_netlist, designs, synthesize
from bitgrid.compiler.blocks import compile_operation
from bitgrid.compiler.operations import recognise
from bitgrid.evaluate import evaluate
from bitgrid.library import build

#: top -> (kind, macro, params, {block port: design port}, inverted outputs)
EXPECTED = {
    **{f"mul{n}{s}": ("multiply", "multiplier", {"bits": n, "signed": s == "s"},
                      {"a": "a", "b": "b", "p": "p"}, set())
       for n in range(2, 9) for s in "us"},
    "add8": ("add", "adder", {"bits": 8, "carry_in": True},
             {"a": "a", "b": "b", "cin": "cin", "sum": "s"}, set()),
    "add16": ("add", "adder", {"bits": 16, "carry_in": True},
              {"a": "a", "b": "b", "cin": "cin", "sum": "s"}, set()),
    "cmp8u": ("compare", "comparator", {"bits": 8, "signed": False},
              {"a": "a", "b": "b", "lt": "lt", "eq": "eq", "gt": "gt"}, set()),
    "cmp8s": ("compare", "comparator", {"bits": 8, "signed": True},
              {"a": "a", "b": "b", "lt": "lt", "eq": "eq", "gt": "gt"}, set()),
    "counter8": ("accumulate", "accumulator", {"bits": 8, "addend": 1, "reset": True},
                 {"q": "count", "x": "en", "rst": "rst"}, set()),
    "acc8": ("accumulate", "accumulator", {"bits": 16, "addend": 8, "reset": True},
             {"q": "sum", "x": "x", "rst": "rst"}, set()),
    # count = count + x[i] for each i (designs.popcount): a chain of $add
    "popcount8": ("popcount", "popcount", {"bits": 8}, {"x": "x", "count": "count"}, set()),
    "popcount16": ("popcount", "popcount", {"bits": 16}, {"x": "x", "count": "count"}, set()),
    # p = ^x
    "parity16": ("reduce", "reduction", {"bits": 16, "op": "xor"}, {"x": "x", "y": "p"}, set()),
}


#: Tops whose recognition runs in the fast set (the others synthesise for seconds each).
FAST = ("mul2u", "mul3s", "mul4u", "add8", "cmp8u", "cmp8s", "counter8", "acc8", "popcount8",
        "parity16", "crc8", "detector")


def _tops():
    return [designs.design(n, **p).top for n, p in designs.TEST_DESIGNS]


def test_table_matches_the_compile_tests():
    from support.design_models import BLOCK_DESIGNS
    assert set(EXPECTED) == set(BLOCK_DESIGNS) and set(FAST) < set(_tops())


@pytest.mark.parametrize("case", [
    pytest.param(case, id=top, marks=() if top in FAST else pytest.mark.slow)
    for case, top in zip(designs.TEST_DESIGNS, _tops())])
def test_each_test_design_is_its_operation_or_none(synthesized, case):
    design, synthesis = synthesized(case[0], **case[1])
    operation = synthesis.operation
    if design.top not in EXPECTED:
        assert operation is None
        return
    kind, macro, params, ports, inverted = EXPECTED[design.top]
    assert (operation.kind, operation.macro, operation.params, operation.ports,
            set(operation.inverted)) == (kind, macro, params, ports, inverted)


def _synthesize(tmp_path, verilog, top):
    path = tmp_path / f"{top}.v"
    path.write_text(verilog)
    return synthesize(path, top=top)


@pytest.mark.parametrize("verilog", [
    # glue around the product
    "module t(input [3:0] a, input [3:0] b, output [7:0] p); assign p = a * b + 1; endmodule",
    # a subtraction (no block yet)
    "module t(input [3:0] a, input [3:0] b, output [4:0] d); assign d = a - b; endmodule",
    # an output port the operation does not drive
    "module t(input [3:0] a, input [3:0] b, output [4:0] s, output z); assign s = a + b; "
    "assign z = 1; endmodule",
    # signed operands of two widths (sign extension is not free)
    "module t(input signed [3:0] a, input signed [2:0] b, output signed [6:0] p); "
    "assign p = a * b; endmodule",
    # a register that starts at 5
    "module t(input clk, input en, output reg [3:0] q); initial q = 5; "
    "always @(posedge clk) if (en) q <= q + 1'b1; endmodule",
])
def test_designs_that_are_not_one_operation(tmp_path, verilog):
    assert _synthesize(tmp_path, verilog, "t").operation is None


def test_an_input_nothing_reads_is_a_lane_the_block_ignores(tmp_path):
    """Like an Amaranth design's unused ``rst``: the block is the program, and the input
    is a port whose lane no cell reads (its values change nothing)."""
    verilog = ("module t(input [3:0] a, input [3:0] b, input c, output [4:0] s); "
               "assign s = a + b; endmodule")
    path = tmp_path / "t.v"
    path.write_text(verilog)
    result = compile(path, top="t")
    assert result.report["back_end"] == "blocks"
    rows = [{"a": a, "b": b, "c": (a ^ b) & 1} for a in range(16) for b in range(16)]
    assert [r["s"] for r in evaluate(result.config, result.portmap, rows)] == \
        [r["a"] + r["b"] for r in rows]
    assert result.portmap["c"].direction == "in"


def test_comparisons_with_inverted_outputs(tmp_path):
    """le, ge and ne are gt, lt and eq inverted at their lanes; every pair of 6-bit signed
    values, against Python."""
    verilog = ("module t(input signed [5:0] a, input signed [5:0] b, output le, output ge, "
               "output ne); assign le = a <= b; assign ge = a >= b; assign ne = a != b; "
               "endmodule")
    synthesis = _synthesize(tmp_path, verilog, "t")
    operation = synthesis.operation
    assert (operation.macro, operation.params, set(operation.inverted)) == \
        ("comparator", {"bits": 6, "signed": True}, {"lt", "gt", "eq"})
    result = compile_operation(operation, synthesis.netlist)
    rows = [{"a": a, "b": b} for a in range(-32, 32) for b in range(-32, 32)]
    assert evaluate(result.config, result.portmap, rows, target="fast") == \
        [{"le": int(r["a"] <= r["b"]), "ge": int(r["a"] >= r["b"]),
          "ne": int(r["a"] != r["b"])} for r in rows]


def test_narrow_unsigned_operand_is_zero_extended(tmp_path):
    """A 5 x 3 product is the 5 x 5 block with b's top lanes undriven; a 4-bit sum of 6-bit
    operands is the adder's low bits."""
    synthesis = _synthesize(tmp_path, "module t(input [4:0] a, input [2:0] b, output [7:0] p);"
                            " assign p = a * b; endmodule", "t")
    assert synthesis.operation.params == {"bits": 5, "signed": False}
    result = compile_operation(synthesis.operation, synthesis.netlist)
    rows = [{"a": a, "b": b} for a in range(32) for b in range(8)]
    assert [r["p"] for r in evaluate(result.config, result.portmap, rows)] == \
        [r["a"] * r["b"] for r in rows]
    assert [p.width for p in result.portmap.ports] == [5, 3, 8]


def test_block_is_a_candidate_and_wins(synthesized):
    """compile_netlist keeps the block (fewer cells x period than every LUT mapping) and lists
    every candidate; without the operation the best of the others is kept."""
    _, synthesis = synthesized("counter", n=8)
    with_block = compile_netlist(synthesis.netlist, alternatives=synthesis.alternatives,
                                 operation=synthesis.operation)
    assert with_block.report["mapping"] == "blocks"
    assert with_block.report["blocks"] == ["accumulator(bits=8, addend=1, reset=True)"]
    assert (with_block.report["cells"]["total"], with_block.portmap.period) == (16, 2)
    others = [c for c in with_block.report["candidates"] if c["mapping"] != "blocks"]
    # the sweep on each mapping (the general back end only where no block takes the design)
    assert {c["mapping"] for c in others} == {"lut4", "lut3", "lut2"}
    assert all(c["cells"] * c["period"] > 16 * 2 for c in others)
    without = compile_netlist(synthesis.netlist, alternatives=synthesis.alternatives)
    assert without.report["mapping"] != "blocks"
    kept = without.report["cells"]["total"] * without.portmap.period
    # the smallest of its candidates (the general back end's too, tried without a block)
    assert kept == min(c["cells"] * c["period"] for c in without.report["candidates"])
    assert kept <= min(c["cells"] * c["period"] for c in others)


def test_block_at_a_given_size_and_too_small(synthesized):
    _, synthesis = synthesized("adder", n=8)
    result = compile_operation(synthesis.operation, synthesis.netlist, width=6, height=10)
    assert (result.config.width, result.config.height) == (6, 10)
    rows = [{"a": a, "b": b, "cin": c} for a in (0, 1, 200, 255) for b in (0, 77, 255)
            for c in (0, 1)]
    assert [r["s"] for r in evaluate(result.config, result.portmap, rows)] == \
        [r["a"] + r["b"] + r["cin"] for r in rows]
    with pytest.raises(CompileError, match=r"does not fit a 2 x 4 grid: its adder\(bits=8, "
                       r"carry_in=True\) block needs a 2 x 8 grid; give a larger "):
        compile_operation(synthesis.operation, synthesis.netlist, width=2, height=4)


def test_too_small_names_the_block_when_it_is_the_smallest(synthesized):
    """Where neither the block nor a LUT mapping fits, the error names the smallest layout:
    the block's."""
    _, synthesis = synthesized("multiplier", n=4)
    with pytest.raises(CompileError, match=r"multiplier\(bits=4, signed=False\) block needs "
                       r"a 12 x 12 grid"):
        compile_netlist(synthesis.netlist, width=10, height=10,
                        alternatives=synthesis.alternatives, operation=synthesis.operation)


def test_region_and_defects_skip_the_block(synthesized, tmp_path):
    """The blocks do not place around a region or defects yet: the LUT mappings do."""
    design, _ = synthesized("comparator", n=8)
    path = designs.write(design, tmp_path)
    result = compile(path, top=design.top, region="0,0,41,31")
    assert result.report["back_end"] != "blocks"
    assert "blocks" not in {c["mapping"] for c in result.report["candidates"]}


def test_large_block_designs_skip_the_lut_mappings(synthesized):
    """Above BLOCK_SEARCH_LUTS LUTs the block is kept without compiling the LUT mappings."""
    from bitgrid.compiler.backend import BLOCK_SEARCH_LUTS
    _, synthesis = synthesized("multiplier", n=5)
    assert len(synthesis.netlist.luts) > BLOCK_SEARCH_LUTS
    result = compile_netlist(synthesis.netlist, alternatives=synthesis.alternatives,
                             operation=synthesis.operation)
    assert [c["mapping"] for c in result.report["candidates"]] == ["blocks"]
    from bitgrid.library import MACROS
    assert result.report["cells"]["total"] == MACROS["multiplier"].build(bits=5).cell_count


def test_counter_with_enable_and_no_reset(tmp_path):
    """The README's counter ($dffe: no reset) is the accumulator of its enable."""
    synthesis = _synthesize(tmp_path, "module counter(input clk, input en, output reg [7:0] "
                            "count); initial count = 0; always @(posedge clk) if (en) count "
                            "<= count + 1; endmodule", "counter")
    operation = synthesis.operation
    assert (operation.macro, operation.params, operation.ports) == \
        ("accumulator", {"bits": 8, "addend": 1, "reset": False}, {"q": "count", "x": "en"})
    result = compile_operation(operation, synthesis.netlist)
    rows = [{"en": e} for e in [1, 1, 0, 1, 1] * 60]
    expected = [sum(r["en"] for r in rows[:k]) % 256 for k in range(len(rows))]
    assert [r["count"] for r in evaluate(result.config, result.portmap, rows)] == expected


@pytest.mark.parametrize("expression,op,inverted,model", [
    ("&x", "and", set(), lambda x: int(x == 63)),
    ("|x", "or", set(), lambda x: int(x != 0)),
    ("x != 0", "or", set(), lambda x: int(x != 0)),
    ("!x", "or", {"y"}, lambda x: int(x == 0)),
    ("^x", "xor", set(), lambda x: bin(x).count("1") & 1),
    ("~^x", "xor", {"y"}, lambda x: 1 - (bin(x).count("1") & 1)),
])
def test_reductions(tmp_path, expression, op, inverted, model):
    """Each reduction of a 6-bit port is the reduction row (inverted where Yosys' cell is),
    on every word against Python."""
    synthesis = _synthesize(tmp_path, f"module t(input [5:0] x, output y); assign y = "
                            f"{expression}; endmodule", "t")
    operation = synthesis.operation
    assert (operation.kind, operation.params, set(operation.inverted)) == \
        ("reduce", {"bits": 6, "op": op}, inverted)
    result = compile_operation(operation, synthesis.netlist)
    rows = [{"x": x} for x in range(64)]
    assert [r["y"] for r in evaluate(result.config, result.portmap, rows, target="fast")] == \
        [model(r["x"]) for r in rows]


@pytest.mark.parametrize("verilog,bits,width", [
    # an adder tree written out, bits in another order
    ("module t(input [4:0] x, output [2:0] count); assign count = (x[3] + x[0]) + "
     "(x[1] + (x[4] + x[2])); endmodule", 5, 3),
    # a count modulo 4 (every partial sum kept to the output's 2 bits)
    ("module t(input [6:0] x, output reg [1:0] count); integer i; always @* begin count = 0;"
     " for (i = 0; i < 7; i = i + 1) count = count + x[i]; end endmodule", 7, 2),
])
def test_popcounts(tmp_path, verilog, bits, width):
    synthesis = _synthesize(tmp_path, verilog, "t")
    assert (synthesis.operation.kind, synthesis.operation.params) == ("popcount",
                                                                      {"bits": bits})
    result = compile_operation(synthesis.operation, synthesis.netlist)
    rows = [{"x": x} for x in range(1 << bits)]
    assert [r["count"] for r in evaluate(result.config, result.portmap, rows,
                                         target="fast")] == \
        [bin(r["x"]).count("1") % (1 << width) for r in rows]


@pytest.mark.parametrize("verilog", [
    # a bit counted twice
    "module t(input [3:0] x, output [2:0] c); assign c = x[0] + x[1] + x[2] + x[3] + x[0]; "
    "endmodule",
    # a bit left out
    "module t(input [3:0] x, output [2:0] c); assign c = x[0] + x[1] + x[2]; endmodule",
    # the bits of two ports
    "module t(input [1:0] x, input [1:0] z, output [2:0] c); assign c = x[0] + x[1] + z[0] "
    "+ z[1]; endmodule",
    # a partial sum truncated below the count
    "module t(input [3:0] x, output [2:0] c); wire s = x[0] + x[1]; assign c = s + x[2] + "
    "x[3]; endmodule",
])
def test_sums_of_bits_that_are_not_a_popcount(tmp_path, verilog):
    assert _synthesize(tmp_path, verilog, "t").operation is None


@pytest.mark.parametrize("verilog, top, model", [
    ("module t(input [7:0] a, input [7:0] b, output [7:0] s, output cout); "
     "assign {cout, s} = a + b; endmodule", "adder",
     lambda a, b: {"s": (a + b) % 256, "cout": (a + b) >> 8}),
    ("module t(input [5:0] a, input [5:0] b, output [5:0] lo, output [5:0] hi); "
     "assign {hi, lo} = a * b; endmodule", "multiplier",
     lambda a, b: {"lo": a * b % 64, "hi": a * b >> 6}),
    # three output ports, the top bit of the sum not used
    ("module t(input [5:0] a, input [5:0] b, output [1:0] x, output [2:0] y, output z); "
     "wire [6:0] t = a + b; assign {z, y, x} = t[5:0]; endmodule", "adder",
     lambda a, b: {"x": (a + b) % 4, "y": (a + b) >> 2 & 7, "z": (a + b) >> 5 & 1}),
])
def test_a_result_over_several_output_ports(tmp_path, verilog, top, model):
    """{cout, s} = a + b (the EPFL adder's port shape) and the like: the block's output
    lanes split over the design's ports, every operand pair checked (65,536 rows for the
    adder: on the compiled emulator, whose contract tests hold it to the reference)."""
    path = tmp_path / "t.v"
    path.write_text(verilog)
    result = compile(path, top="t")
    assert result.report["back_end"] == "blocks" and result.report["blocks"][0].startswith(top)
    width = 8 if top == "adder" and "7:0" in verilog else 6
    rows = [{"a": a, "b": b} for a in range(1 << width) for b in range(1 << width)]
    assert evaluate(result.config, result.portmap, rows, target="fast") == \
        [model(**r) for r in rows]


@pytest.mark.parametrize("widths", [(3, 3, 6, 6), (3, 3, 2, 6), (4, 3, 7, 8), (2, 4, 1, 3)])
def test_multiply_add_is_the_multiplier_with_its_addend(tmp_path, widths):
    """y = a * b + c on the multiplier's free array inputs (the same cells), every row of
    up to 16 input bits against Python's a * b + c (truncated to y); where the LUT mappings
    are tried beside the block (few LUTs) the smaller program is kept, right either way."""
    wa, wb, wc, wy = widths
    verilog = (f"module t(input [{wa - 1}:0] a, input [{wb - 1}:0] b, input [{wc - 1}:0] c, "
               f"output [{wy - 1}:0] y); assign y = a * b + c; endmodule")
    bits = max(wa, wb)
    operation = _synthesize(tmp_path, verilog, "t").operation
    assert (operation.kind, operation.params) == ("multiply-add", {"bits": bits,
                                                                   "signed": False,
                                                                   "addend": wc})
    result = compile(tmp_path / "t.v", top="t")
    if result.report["back_end"] == "blocks":
        # the same cells (one pass cell more where the top addend bit's S lane meets the grid)
        assert result.report["cells"]["total"] <= build("multiplier", bits=bits).cell_count + 1
    rows = [{"a": a, "b": b, "c": c} for a in range(1 << wa) for b in range(1 << wb)
            for c in range(1 << wc)]
    assert evaluate(result.config, result.portmap, rows) == \
        [{"y": (r["a"] * r["b"] + r["c"]) % (1 << wy)} for r in rows]


def test_a_truncated_product_before_the_add_is_not_a_multiply_add(tmp_path):
    verilog = ("module t(input [3:0] a, input [3:0] b, input [7:0] c, output [7:0] y); "
               "wire [4:0] p = a * b; assign y = p + c; endmodule")
    assert _synthesize(tmp_path, verilog, "t").operation is None


@pytest.mark.parametrize("reset", [True, False])
def test_multiply_accumulate_is_the_mac_block(tmp_path, reset):
    """acc <= acc + a * b (with or without a synchronous reset) at period 2, every row
    against the register's meaning."""
    body = ("if (rst) acc <= 0; else acc <= acc + a * b;" if reset else "acc <= acc + a * b;")
    verilog = (f"module t(input clk, {'input rst, ' if reset else ''}input [3:0] a, "
               f"input [3:0] b, output reg [9:0] acc); initial acc = 0; "
               f"always @(posedge clk) {body} endmodule")
    path = tmp_path / "t.v"
    path.write_text(verilog)
    result = compile(path, top="t")
    assert result.report["blocks"] == [f"mac(bits=4, acc_bits=10, reset={reset})"]
    assert result.portmap.period == 2
    rng = random.Random(7)
    rows = [{"a": rng.randrange(16), "b": rng.randrange(16),
             **({"rst": int(rng.random() < 0.1)} if reset else {})} for _ in range(300)]
    expected, acc = [], 0
    for row in rows:
        expected.append({"acc": acc})
        acc = 0 if row.get("rst") else (acc + row["a"] * row["b"]) % 1024
    assert evaluate(result.config, result.portmap, rows) == expected


def test_multiplication_by_a_constant(tmp_path):
    """y = a * 13: the multiplier with b fixed is a candidate; whichever program is kept,
    every a gives a * 13."""
    verilog = "module t(input [5:0] a, output [11:0] y); assign y = a * 6'd13; endmodule"
    operation = _synthesize(tmp_path, verilog, "t").operation
    assert (operation.kind, operation.params) == ("multiply", {"bits": 6, "constant": 13})
    result = compile(tmp_path / "t.v", top="t")
    rows = [{"a": a} for a in range(64)]
    assert evaluate(result.config, result.portmap, rows) == [{"y": a * 13} for a in range(64)]
