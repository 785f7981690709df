"""Every macro of bitgrid.library on the reference emulator, fully pipelined (a new row every
period), against independent Python models: exhaustive where the inputs are few, all operand
pairs up to 8 bits in the slow set, random pairs otherwise."""

import itertools
import random

import pytest

from bitgrid.evaluate import evaluate
from bitgrid.library import MACROS, LibraryError, build

from support.library import run_block


def run(block, rows):
    """Output rows of ``block`` alone on a grid, by bitgrid.evaluate on the emulator."""
    alone = block.standalone()
    return evaluate(alone.config, alone.portmap, rows)


def all_values(bits, *names):
    """Rows with every combination of ``names`` over ``bits`` bits each, in a shuffled order
    (so neighbouring rows differ in many bits)."""
    rows = [dict(zip(names, values))
            for values in itertools.product(range(1 << bits), repeat=len(names))]
    random.Random(bits).shuffle(rows)
    return rows


# Wires and friends ---------------------------------------------------------------------------
@pytest.mark.parametrize("heading", "NESW")
@pytest.mark.parametrize("length", [1, 2, 5])
def test_wire_copies_every_value(heading, length):
    block = build("wire", length=length, heading=heading, bits=3)
    rows = all_values(3, "in") * 2
    assert [r["out"] for r in run(block, rows)] == [r["in"] for r in rows]
    assert block.latency == length


@pytest.mark.parametrize("source,dest", [(s, d) for s in "NESW" for d in "NESW"
                                         if "NESW".index(s) % 2 != "NESW".index(d) % 2])
def test_turn(source, dest):
    block = build("turn", source=source, dest=dest)
    rows = [{"in": v} for v in (0, 1, 1, 0, 1, 0, 0, 1)]
    assert [r["out"] for r in run(block, rows)] == [r["in"] for r in rows]


@pytest.mark.parametrize("horizontal", "EW")
@pytest.mark.parametrize("vertical", "NS")
def test_cross_keeps_signals_apart(horizontal, vertical):
    block = build("cross", horizontal=horizontal, vertical=vertical)
    rows = all_values(1, "h_in", "v_in") * 3
    out = run(block, rows)
    assert [(r["h_out"], r["v_out"]) for r in out] == [(r["h_in"], r["v_in"]) for r in rows]


@pytest.mark.parametrize("copies", [1, 2, 3])
def test_fanout(copies):
    block = build("fanout", copies=copies)
    rows = [{"in": v} for v in (1, 0, 0, 1, 1, 1, 0)]
    out = run(block, rows)
    for k in range(copies):
        assert [r[f"out{k}"] for r in out] == [r["in"] for r in rows]


@pytest.mark.parametrize("subcycles", [1, 2, 3, 8])
def test_delay(subcycles):
    block = build("delay", subcycles=subcycles, bits=2)
    rows = all_values(2, "in") * 3
    assert [r["out"] for r in run(block, rows)] == [r["in"] for r in rows]
    assert block.latency == subcycles


def test_constant_every_value():
    for value in range(16):
        block = build("constant", value=value, bits=4)
        assert [r["out"] for r in run(block, [{}] * 3)] == [value] * 3


def test_inverter_every_value():
    block = build("inverter", bits=4)
    rows = all_values(4, "in")
    assert [r["out"] for r in run(block, rows)] == [15 - r["in"] for r in rows]


# Arithmetic ----------------------------------------------------------------------------------
def test_full_adder_truth_table():
    block = build("full_adder")
    rows = all_values(1, "a", "b", "cin") * 2
    out = run(block, rows)
    assert [(r["sum"], r["cout"]) for r in out] == \
        [((r["a"] + r["b"] + r["cin"]) & 1, (r["a"] + r["b"] + r["cin"]) >> 1) for r in rows]


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5])
def test_adder_all_pairs(bits):
    block = build("adder", bits=bits)
    rows = all_values(bits, "a", "b")
    assert [r["sum"] for r in run(block, rows)] == [r["a"] + r["b"] for r in rows]


@pytest.mark.parametrize("bits", [1, 3, 4])
def test_adder_with_carry_in(bits):
    block = build("adder", bits=bits, carry_in=True)
    rows = [dict(r, cin=c) for r in all_values(bits, "a", "b") for c in (0, 1)]
    assert [r["sum"] for r in run(block, rows)] == [r["a"] + r["b"] + r["cin"] for r in rows]


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5])
def test_comparator_all_pairs(bits):
    block = build("comparator", bits=bits)
    rows = all_values(bits, "a", "b")
    out = run(block, rows)
    assert [(r["lt"], r["eq"], r["gt"]) for r in out] == \
        [(int(r["a"] < r["b"]), int(r["a"] == r["b"]), int(r["a"] > r["b"])) for r in rows]


def signed_values(bits, *names):
    """Rows of every combination of two's complement ``bits``-bit values of ``names``."""
    span = range(-(1 << (bits - 1)), 1 << (bits - 1))
    rows = [dict(zip(names, values)) for values in itertools.product(span, repeat=len(names))]
    random.Random(bits).shuffle(rows)
    return rows


@pytest.mark.parametrize("bits", [1, 2, 3, 5])
def test_signed_comparator_all_pairs(bits):
    rows = signed_values(bits, "a", "b")
    out = run(build("comparator", bits=bits, signed=True), rows)
    assert [(r["lt"], r["eq"], r["gt"]) for r in out] == \
        [(int(r["a"] < r["b"]), int(r["a"] == r["b"]), int(r["a"] > r["b"])) for r in rows]


@pytest.mark.parametrize("bits,addend,reset", [(1, 1, True), (3, 1, True), (5, 3, True),
                                               (4, 4, False), (6, 2, False)])
def test_accumulator_adds_and_resets(bits, addend, reset):
    """q after k rows is the sum of x since the last reset (exclusive of row k), mod 2**bits;
    resets in about 1 row of 12, so the register wraps between them."""
    rng = random.Random(bits * 10 + addend)
    rows = [{"x": rng.randrange(1 << addend), **({"rst": int(rng.random() < 1 / 12)}
                                                    if reset else {})} for _ in range(600)]
    expected, q = [], 0
    for row in rows:
        expected.append(q)
        q = 0 if row.get("rst") else (q + row["x"]) % (1 << bits)
    block = build("accumulator", bits=bits, addend=addend, reset=reset)
    assert [r["q"] for r in run(block, rows)] == expected
    assert block.period == 2 and block.cell_count == 2 * bits


def test_accumulator_refuses_a_wider_addend():
    with pytest.raises(LibraryError, match="wider than the register"):
        build("accumulator", bits=4, addend=5)


@pytest.mark.parametrize("bits,acc_bits,reset", [(2, 4, True), (2, 7, False), (3, 3, True),
                                                 (3, 9, True), (4, 12, False)])
def test_mac_accumulates_products(bits, acc_bits, reset):
    """acc in row k is the register after row k's edge: the sum of a * b since the last
    reset (rows up to k), modulo 2**acc_bits; resets in about 1 row of 12. Every operand pair
    appears."""
    rng = random.Random(bits * 100 + acc_bits)
    rows = all_values(bits, "a", "b") * 3
    for row in rows:
        if reset:
            row["rst"] = int(rng.random() < 1 / 12)
    expected, acc = [], 0
    for row in rows:
        acc = 0 if row.get("rst") else (acc + row["a"] * row["b"]) % (1 << acc_bits)
        expected.append(acc)
    block = build("mac", bits=bits, acc_bits=acc_bits, reset=reset)
    assert [r["acc"] for r in run(block, rows)] == expected
    assert block.period == 2


def test_mac_8_is_the_multiplier_and_two_cells_a_register_bit():
    block = build("mac", bits=8, acc_bits=20)
    plain = build("multiplier", bits=8)
    # 20 adder and loop cells, and the carry and rst passes between product rows 0 .. 16
    assert block.cell_count == plain.cell_count + 2 * 20 + 2 * 8


@pytest.mark.parametrize("bits", [1, 2, 3, 5])
def test_counter_counts_enables(bits):
    rng = random.Random(bits)
    rows = [{"en": rng.randint(0, 1)} for _ in range(40 << bits)]
    out = run(build("counter", bits=bits), rows)
    total = list(itertools.accumulate(r["en"] for r in rows))
    assert [r["count"] for r in out] == [t % (1 << bits) for t in total]
    wraps = [int(r["en"] == 1 and t % (1 << bits) == 0) for r, t in zip(rows, total)]
    assert [r["carry"] for r in out] == wraps


@pytest.mark.parametrize("length", [1, 2, 3, 6])
def test_shift_register_holds_the_last_inputs(length):
    rng = random.Random(length)
    rows = [{"in": rng.randint(0, 1)} for _ in range(64)]
    out = run(build("shift_register", length=length), rows)
    for k, row in enumerate(out):
        expected = sum(rows[k - j]["in"] << j for j in range(length) if k - j >= 0)
        assert row["q"] == expected, k


def test_text_stream_carries_utf8():
    text = "BitGrid \u2192 \u00e9t\u00e9, 8 lanes"
    data = text.encode("utf-8")
    out = run(build("text_stream", lanes=8, length=8), [{"in": b} for b in data])
    assert bytes(r["out"] for r in out).decode("utf-8") == text


# The multiplier ------------------------------------------------------------------------------
@pytest.mark.parametrize("bits", [2, 3, 4, 5])
def test_multiplier_all_pairs(bits):
    block = build("multiplier", bits=bits)
    rows = all_values(bits, "a", "b")
    assert [r["p"] for r in run(block, rows)] == [r["a"] * r["b"] for r in rows]


def test_multiplier_8_random_and_corner_pairs():
    rng = random.Random(8)
    rows = [{"a": a, "b": b} for a in (0, 1, 255) for b in (0, 1, 255)]
    rows += [{"a": rng.randrange(256), "b": rng.randrange(256)} for _ in range(600)]
    assert [r["p"] for r in run(build("multiplier", bits=8), rows)] == \
        [r["a"] * r["b"] for r in rows]


@pytest.mark.parametrize("bits", [2, 3, 4, 5])
def test_signed_multiplier_all_pairs(bits):
    rows = signed_values(bits, "a", "b")
    block = build("multiplier", bits=bits, signed=True)
    assert [r["p"] for r in run(block, rows)] == [r["a"] * r["b"] for r in rows]
    # the same cells and timing as the unsigned array: only LUTs change
    plain = build("multiplier", bits=bits)
    assert (block.cells.keys(), block.latency) == (plain.cells.keys(), plain.latency)


@pytest.mark.parametrize("bits,addend", [(2, 1), (2, 3), (2, 4), (3, 5), (3, 6)])
def test_multiply_add_every_triple(bits, addend):
    """p = a * b + c mod 2**(2 bits) for every a, b, c: the addend on the array's free
    inputs, in the multiplier's own cells."""
    rows = [{"a": a, "b": b, "c": c} for a in range(1 << bits) for b in range(1 << bits)
            for c in range(1 << addend)]
    block = build("multiplier", bits=bits, addend=addend)
    assert [r["p"] for r in run(block, rows)] == \
        [(r["a"] * r["b"] + r["c"]) % (1 << 2 * bits) for r in rows]
    assert block.cells.keys() == build("multiplier", bits=bits).cells.keys()


def test_multiply_add_8_random():
    rng = random.Random(816)
    rows = [{"a": rng.randrange(256), "b": rng.randrange(256), "c": rng.randrange(1 << 16)}
            for _ in range(600)] + [{"a": 255, "b": 255, "c": (1 << 16) - 1}]
    assert [r["p"] for r in run(build("multiplier", bits=8, addend=16), rows)] == \
        [(r["a"] * r["b"] + r["c"]) % (1 << 16) for r in rows]
    with pytest.raises(LibraryError, match="unsigned"):
        build("multiplier", bits=4, signed=True, addend=3)


def test_signed_multiplier_8_corners_and_random_pairs():
    rng = random.Random(88)
    rows = [{"a": a, "b": b} for a in (-128, -1, 0, 1, 127) for b in (-128, -1, 0, 1, 127)]
    rows += [{"a": rng.randrange(-128, 128), "b": rng.randrange(-128, 128)} for _ in range(600)]
    assert [r["p"] for r in run(build("multiplier", bits=8, signed=True), rows)] == \
        [r["a"] * r["b"] for r in rows]


@pytest.mark.slow
@pytest.mark.parametrize("bits", [6, 7, 8])
def test_multiplier_all_pairs_slow(bits):
    block = build("multiplier", bits=bits)
    rows = all_values(bits, "a", "b")
    assert [r["p"] for r in run(block, rows)] == [r["a"] * r["b"] for r in rows]


@pytest.mark.slow
@pytest.mark.parametrize("name,check", [
    ("adder", lambda r, o: o["sum"] == r["a"] + r["b"]),
    ("comparator", lambda r, o: (o["lt"], o["eq"], o["gt"]) == (
        r["a"] < r["b"], r["a"] == r["b"], r["a"] > r["b"]))])
def test_eight_bit_all_pairs_slow(name, check):
    rows = all_values(8, "a", "b")
    out = run(build(name, bits=8), rows)
    assert all(check(r, o) for r, o in zip(rows, out))


def test_every_macro_is_tested_here():
    """A new macro needs its own test above, or in its own module (this list is the
    reminder): register_file and rom in test_memory.py."""
    tested = {"register_file", "rom", "mac", "wire", "turn", "cross", "fanout", "delay", "constant", "inverter", "full_adder",
              "adder", "comparator", "counter", "shift_register", "text_stream", "multiplier",
              "accumulator", "reduction", "popcount"}
    assert set(MACROS) == tested


def test_evaluate_agrees_with_the_independent_driver():
    """bitgrid.evaluate and the test's own reading of the port-map timing (support.library)
    give the same rows."""
    rng = random.Random(3)
    for block, rows in [
            (build("multiplier", bits=3), all_values(3, "a", "b")),
            (build("counter", bits=3), [{"en": rng.randint(0, 1)} for _ in range(50)]),
            (build("comparator", bits=3), all_values(3, "a", "b"))]:
        assert run(block, rows) == run_block(block, rows)


@pytest.mark.parametrize("bits", [1, 2, 3, 7, 8, 11])
def test_popcount_every_word(bits):
    """Every word of up to 11 bits (a shuffled sample of 600 above 9) against bin().count."""
    rows = all_values(bits, "x")
    if len(rows) > 600:
        rows = random.Random(bits).sample(rows, 600)
    block = build("popcount", bits=bits)
    assert [r["count"] for r in run(block, rows)] == [bin(r["x"]).count("1") for r in rows]
    # a half adder per count bit that can be 1: 1 + 2 + 2 + 3 + 3 + 3 + 3 + 4 for 8 bits
    assert block.cell_count == sum(k.bit_length() for k in range(1, bits + 1))


@pytest.mark.parametrize("op,model", [("and", lambda x, n: int(x == (1 << n) - 1)),
                                      ("or", lambda x, n: int(x != 0)),
                                      ("xor", lambda x, n: bin(x).count("1") & 1)])
@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 8, 9])
def test_reduction_every_word(op, model, bits):
    rows = all_values(bits, "x")
    block = build("reduction", bits=bits, op=op)
    assert [r["y"] for r in run(block, rows)] == [model(r["x"], bits) for r in rows]
    assert block.cell_count == (1 if bits <= 2 else bits - 2 if bits % 2 == 0 else bits - 1)


@pytest.mark.parametrize("bits,constant,addend", [(2, 3, 0), (3, 5, 0), (4, 0, 0), (4, 13, 0),
                                                  (3, 6, 6)])
def test_multiplier_by_a_constant(bits, constant, addend):
    """b fixed: no b port, every a (and addend) against a * K (+ c)."""
    block = build("multiplier", bits=bits, constant=constant, addend=addend)
    assert "b" not in [p.name for p in block.ports]
    rows = [{"a": a, **({"c": c} if addend else {})} for a in range(1 << bits)
            for c in range(1 << addend)]
    assert [r["p"] for r in run(block, rows)] == \
        [(r["a"] * constant + r.get("c", 0)) % (1 << 2 * bits) for r in rows]
    assert block.cell_count < build("multiplier", bits=bits).cell_count
    with pytest.raises(LibraryError, match="unsigned"):
        build("multiplier", bits=4, constant=16)
