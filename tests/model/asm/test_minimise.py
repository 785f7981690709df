"""The minimiser (bitgrid.asm.minimise): every one of the 65,536 LUTs gets an expression that
evaluates to it, and the expressions are minimal in (leaves, operators) as checked against an
independent brute-force enumeration of expression trees."""

import numpy as np
import pytest

from bitgrid.asm import minimise, parse_expression
from bitgrid.cell import lut_from_function

MASK = 0xFFFF
VARS = (0xAAAA, 0xCCCC, 0xF0F0, 0xFF00)


@pytest.fixture(scope="module")
def expressions():
    return [minimise.expression(lut) for lut in range(1 << 16)]


def test_every_lut_is_exact(expressions):
    # Read back by the assembler's parser: asm of every single LUT's text gives that LUT.
    wrong = [lut for lut, text in enumerate(expressions) if parse_expression(text) != lut]
    assert wrong == []


def _python(text):
    """The expression as Python over table integers (an evaluator independent of the
    assembler): ``~ & ^ |`` have the same precedence in Python; ``c ? x : y`` (at the top of
    an expression or of a parenthesised group, as the minimiser prints it) becomes
    ``c & x | ~c & y``."""
    depth, question = 0, None
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and c == "?" and question is None:
            question = i
        elif depth == 0 and c == ":" and question is not None:
            c, x, y = (_python(part) for part in (text[:question], text[question + 1:i],
                                                   text[i + 1:]))
            return f"(({c}) & ({x}) | ~({c}) & ({y}))"
    out, i = [], 0
    while i < len(text):
        if text[i] == "(":
            depth, j = 1, i + 1
            while depth:
                depth += (text[j] == "(") - (text[j] == ")")
                j += 1
            out.append("(" + _python(text[i + 1:j - 1]) + ")")
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def test_every_lut_is_exact_in_python(expressions):
    names = {"n": VARS[0], "e": VARS[1], "s": VARS[2], "w": VARS[3],
             "maj": lambda a, b, c: (a & b) | (a & c) | (b & c), "__builtins__": {}}
    # The constant 1 is the all-ones table (the minimiser writes constants only alone).
    wrong = [lut for lut, text in enumerate(expressions)
             if (MASK if text == "1" else eval(_python(text), names) & MASK) != lut]
    assert wrong == []


def _leaf_count(text):
    return sum(text.count(v) for v in "nesw")


def test_leaves_counted_in_text(expressions):
    # The table's leaf count is the number of inputs written in the text (maj has no n/e/s/w
    # letters in its name).
    counts = minimise.table()["leaves"]
    sample = range(0, 1 << 16, 97)
    assert [_leaf_count(expressions[f]) for f in sample] == [int(counts[f]) for f in sample]


def _brute_force(max_leaves, max_ops):
    """All (function, operators) pairs of expression trees with k leaves, k <= max_leaves,
    from the grammar of the docstring, by combining every achievable pair (not only the best
    ones): literal, ~x, x & y, x | y, x ^ y, v ? x : y, maj of three literals."""
    trees = {0: {(0, 0), (MASK, 0)}}
    trees[1] = set()
    for v in VARS:
        for negations in range(max_ops + 1):
            trees[1].add((v ^ (MASK if negations % 2 else 0), negations))

    def negate(pairs):
        out = set(pairs)
        frontier = set(pairs)
        while frontier:
            frontier = {(f ^ MASK, ops + 1) for f, ops in frontier if ops + 1 <= max_ops} - out
            out |= frontier
        return out

    for k in range(2, max_leaves + 1):
        pairs = set()
        for i in range(1, k):
            for fa, oa in trees[i]:
                for fb, ob in trees[k - i]:
                    ops = oa + ob + 1
                    if ops <= max_ops:
                        pairs.update(((fa & fb, ops), (fa | fb, ops), (fa ^ fb, ops)))
        for i in range(1, k - 1):
            for fa, oa in trees[i]:
                for fb, ob in trees[k - 1 - i]:
                    ops = oa + ob + 1
                    if ops <= max_ops:
                        for v in VARS:
                            pairs.add(((fa & v) | (fb & ~v & MASK), ops))
        if k == 3:
            for a in range(4):
                for b in range(a + 1, 4):
                    for c in range(b + 1, 4):
                        for p in range(8):
                            x, y, z = (VARS[q] ^ (MASK if p >> bit & 1 else 0)
                                       for bit, q in enumerate((a, b, c)))
                            pairs.add(((x & y) | (x & z) | (y & z), 1 + bin(p).count("1")))
        trees[k] = negate(pairs)
    best = {}
    for k in sorted(trees):
        for f, ops in trees[k]:
            if f not in best or (k, ops) < best[f]:
                best[f] = (k, ops)
    return best


def test_minimal_against_brute_force():
    best = _brute_force(4, 7)
    table = minimise.table()
    leaves, cost = table["leaves"], table["cost"]
    mine = {f: (int(leaves[f]), int(cost[f])) for f in range(1 << 16) if leaves[f] <= 4}
    assert mine == best
    # Every other LUT needs more than 4 leaves, in the table too.
    assert int(np.count_nonzero(leaves <= 4)) == len(best)


@pytest.mark.parametrize("function, text", [
    (lambda n, e, w: n ^ e ^ w, "n ^ e ^ w"),
    (lambda n, e, w: (n & e) | (n & w) | (e & w), "maj(n, e, w)"),
    (lambda n: n, "n"),
    (lambda s: 1 - s, "~s"),
    (lambda n, e: 1 - (n & e), "~(n & e)"),
    (lambda n, e: 1 - (n | e), "~(n | e)"),
    (lambda n, e: n ^ e ^ 1, "~(n ^ e)"),
    (lambda n, e, s, w: n ^ e ^ s ^ w, "n ^ e ^ s ^ w"),
    (lambda n, e, s: e if s else n, "s ? e : n"),
    (lambda n, e, s, w: n & e & s & w, "n & e & s & w"),
    (0, "0"),
    (1, "1"),
])
def test_known_forms(function, text):
    assert minimise.expression(lut_from_function(function)) == text


def test_bad_lut():
    for bad in (-1, 1 << 16, 1.5, True, "0x1"):
        with pytest.raises(ValueError, match="16-bit"):
            minimise.expression(bad)


@pytest.mark.slow
def test_minimal_against_brute_force_5_leaves():
    best = _brute_force(5, 10)
    table = minimise.table()
    leaves, cost = table["leaves"], table["cost"]
    assert {f: (int(leaves[f]), int(cost[f])) for f in range(1 << 16) if leaves[f] <= 5} == best


@pytest.mark.slow
def test_packaged_table_is_the_search():
    fresh = minimise.generate()
    packaged = minimise.table()
    for key in ("op", "a", "b", "leaves", "cost"):
        assert np.array_equal(fresh[key], packaged[key]), key
