"""bitgrid.compiler.expr: the --expr shorthand, checked against Python's own evaluation.

The random differential test batches many random expressions as the outputs of one design
(one Yosys run) and compares the synthesised netlist with eval() on every input combination.
"""

import random

import pytest

from bitgrid.compiler import CompileError, synthesize
from bitgrid.compiler.expr import expression_design, parse_expression, parse_vars
from support.design_models import (bit_parallel, eval_expression, random_expression,
                                   rows_for, wrap)


def synth(tmp_path, text, variables, top="expr"):
    _, verilog = expression_design(text, variables, top=top)
    path = tmp_path / f"{top}.v"
    path.write_text(verilog)
    return synthesize(path, top=top).netlist


def test_multiplier_ports_and_values(tmp_path):
    netlist = synth(tmp_path, "p = a * b", "a:8,b:8")
    assert {k: (len(p.bits), p.signed) for k, p in netlist.inputs.items()} == \
        {"a": (8, False), "b": (8, False)}
    assert {k: (len(p.bits), p.signed) for k, p in netlist.outputs.items()} == {"p": (16, False)}
    rows = rows_for(netlist)
    assert len(rows) == 65536
    assert bit_parallel(netlist, rows) == [{"p": r["a"] * r["b"]} for r in rows]


def test_signed_operands_and_inferred_widths():
    expression = parse_expression("d = a - b; m = a * c; n = ~a", "a:8,b:8,c:s4")
    assert [(v.name, v.width, v.signed) for v in expression.outputs] == \
        [("d", 9, True), ("m", 12, True), ("n", 9, True)]


def test_declared_output_width_wraps(tmp_path):
    netlist = synth(tmp_path, "p = a * b; q = a - b", "a:4,b:4,p:4,q:s3")
    rows = rows_for(netlist)
    expected = [{"p": wrap(r["a"] * r["b"], 4), "q": wrap(r["a"] - r["b"], 3, True)}
                for r in rows]
    assert bit_parallel(netlist, rows) == expected


def test_later_statements_use_earlier_outputs(tmp_path):
    netlist = synth(tmp_path, "s = a + b; t = s * s", "a:3,b:s3")
    rows = rows_for(netlist)
    assert bit_parallel(netlist, rows) == \
        [{"s": r["a"] + r["b"], "t": (r["a"] + r["b"]) ** 2} for r in rows]


@pytest.mark.parametrize("seed, batches, variables", [
    (12, 4, "a:4,b:s4,c:2,d:s2"),
    pytest.param(13, 6, "a:6,b:s6,c:3,d:s3", marks=pytest.mark.slow),
])
def test_random_expressions_match_python(tmp_path, seed, batches, variables):
    """Random expressions, 50 per design (one Yosys run), against eval() on every input
    combination (the fast set: 200 expressions on 12 input bits), or on 10,000 random rows
    (the slow set: 300 expressions on 18 input bits)."""
    rng = random.Random(seed)
    total_bits = sum(int(v.split(":")[1].lstrip("s")) for v in variables.split(","))
    for batch in range(batches):
        text = "; ".join(f"p{i} = {random_expression(rng, ['a', 'b', 'c', 'd'], 3, ['c'])}"
                         for i in range(50))
        text += "; used = a + b + c + d"        # every variable used (unused ones are refused)
        netlist = synth(tmp_path, text, variables, top=f"rand{batch}")
        rows = rows_for(netlist, seed=batch)
        assert len(rows) == min(1 << total_bits, 10_000)
        got = bit_parallel(netlist, rows)
        for row, out in zip(rows, got):
            assert out == eval_expression(text, row), (text, row)


@pytest.mark.parametrize("text, variables, pattern", [
    ("p = a * b", "a:8", r"b is not declared: give its width in --vars"),
    ("p = a / b", "a:8,b:8", r"no division"),
    ("p = a and b", "a:8,b:8", r"and/or are not supported"),
    ("p = a < b < c", "a:2,b:2,c:2", r"one comparison at a time"),
    ("p = a << b", "a:4,b:s3", r"shift amount must not be negative"),
    ("p = a +", "a:4", r"syntax error"),
    ("a = a + 1", "a:4", r"a is an input"),
    ("p = a; p = a", "a:4", r"assigned twice"),
    ("p = a", "a:4,b:4", r"declares b, which the expression does not use"),
    ("p = f(a)", "a:4", r"functions are abs"),
    ("p = a", "a:0", r"1 to 1024 bits"),
    ("p = a", "a:x8", r"the width is a number"),
    ("p = a", "a", r"write NAME:WIDTH"),
    ("p = wire", "wire:4", r"Verilog keyword"),
    ("", "a:4", r"needs a statement"),
    ("p = a << 2000", "a:4", r"at most 1024"),
])
def test_refused(text, variables, pattern):
    with pytest.raises(CompileError, match=pattern):
        parse_expression(text, variables)


def test_vars_forms():
    assert parse_vars({"a": 8, "b": "s4", "c": (3, True)}) == \
        parse_vars("a:8, b:s4, c:s3")
