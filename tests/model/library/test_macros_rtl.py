"""The macros on the RTL grid (cocotb on Icarus): every macro at one size on one 8 x 8 grid,
all cases in one batched ``run_cases`` call, plus the 8 x 8 multiplier on random pairs; the
rows read back from the simulator's edge outputs must equal the Python models and the
simulator must agree with the reference emulator on every subcycle."""

import itertools
import random

import pytest

from bitgrid.library import build
from bitgrid.sim import make_case, run_cases

from support.library import input_stream, read_rows

pytestmark = pytest.mark.icarus


def _pairs(bits, *names):
    rows = [dict(zip(names, v)) for v in itertools.product(range(1 << bits), repeat=len(names))]
    random.Random(bits).shuffle(rows)
    return rows


def _bits(count, seed, name="in", width=1):
    rng = random.Random(seed)
    return [{name: rng.randrange(1 << width)} for _ in range(count)]


def _shift(rows, length):
    return [{"q": sum(rows[k - j]["in"] << j for j in range(length) if k - j >= 0)}
            for k in range(len(rows))]


def _count(rows, bits):
    total = list(itertools.accumulate(r["en"] for r in rows))
    return [{"count": t % (1 << bits), "carry": int(r["en"] and t % (1 << bits) == 0)}
            for r, t in zip(rows, total)]


def _cases():
    """(name, block, rows, expected rows) for every macro, each fitting an 8 x 8 grid."""
    text = list("Grid \u2192 RTL".encode("utf-8"))
    counter_rows = _bits(40, 1, "en")
    shift_rows = _bits(30, 2)
    return [
        ("wire", build("wire", length=3, heading="S", bits=2), _pairs(2, "in"),
         lambda r: {"out": r["in"]}),
        ("turn", build("turn", source="N", dest="E"), _bits(8, 3),
         lambda r: {"out": r["in"]}),
        ("cross", build("cross"), _pairs(1, "h_in", "v_in") * 2,
         lambda r: {"h_out": r["h_in"], "v_out": r["v_in"]}),
        ("fanout", build("fanout", copies=3), _bits(8, 4),
         lambda r: {"out0": r["in"], "out1": r["in"], "out2": r["in"]}),
        ("delay", build("delay", subcycles=5, bits=2), _pairs(2, "in") * 2,
         lambda r: {"out": r["in"]}),
        ("constant", build("constant", value=5, bits=3), [{}] * 3, lambda r: {"out": 5}),
        ("inverter", build("inverter", bits=3), _pairs(3, "in"),
         lambda r: {"out": 7 - r["in"]}),
        ("full_adder", build("full_adder"), _pairs(1, "a", "b", "cin"),
         lambda r: {"sum": (r["a"] + r["b"] + r["cin"]) & 1,
                    "cout": (r["a"] + r["b"] + r["cin"]) >> 1}),
        ("adder", build("adder", bits=4, carry_in=True),
         [dict(r, cin=k % 2) for k, r in enumerate(_pairs(4, "a", "b"))],
         lambda r: {"sum": r["a"] + r["b"] + r["cin"]}),
        ("comparator", build("comparator", bits=4), _pairs(4, "a", "b"),
         lambda r: {"lt": int(r["a"] < r["b"]), "eq": int(r["a"] == r["b"]),
                    "gt": int(r["a"] > r["b"])}),
        ("multiplier", build("multiplier", bits=2), _pairs(2, "a", "b") * 2,
         lambda r: {"p": r["a"] * r["b"]}),
        ("text_stream", build("text_stream", lanes=8, length=8), [{"in": b} for b in text],
         lambda r: {"out": r["in"]}),
        ("counter", build("counter", bits=3), counter_rows, _count(counter_rows, 3)),
        ("shift_register", build("shift_register", length=4), shift_rows,
         _shift(shift_rows, 4)),
        ("reduction", build("reduction", bits=6, op="xor"), _pairs(6, "x")[:24],
         lambda r: {"y": bin(r["x"]).count("1") & 1}),
        ("popcount", build("popcount", bits=5), _pairs(5, "x"),
         lambda r: {"count": bin(r["x"]).count("1")}),
    ]


def _check(results, prepared):
    for result, (name, alone, rows, expected) in zip(results, prepared):
        assert result.emulator_mismatches == [], name
        got = read_rows(alone.portmap, result.outputs, len(rows))
        assert got == expected, name


def _prepare(cases, width=None, height=None):
    prepared = []
    for name, block, rows, model in cases:
        alone = block.standalone(width=width, height=height)
        expected = model if isinstance(model, list) else [model(r) for r in rows]
        prepared.append((name, alone, rows, expected))
    sims = [make_case(alone.config, input_stream(alone.portmap, rows), name=name)
            for name, alone, rows, _ in prepared]
    return prepared, sims


def test_every_macro_on_icarus_in_one_batch():
    prepared, sims = _prepare(_cases(), width=8, height=8)
    assert len({(p[1].config.width, p[1].config.height) for p in prepared}) == 1
    assert {p[0] for p in prepared} == {
        "wire", "turn", "cross", "fanout", "delay", "constant", "inverter", "full_adder",
        "adder", "comparator", "multiplier", "text_stream", "counter", "shift_register",
        "reduction", "popcount"}
    _check(run_cases(sims, simulator="icarus", quiet=True), prepared)


def test_multiplier_8_on_icarus_random_pairs():
    rng = random.Random(88)
    rows = [{"a": 255, "b": 255}, {"a": 0, "b": 255}, {"a": 255, "b": 1}]
    rows += [{"a": rng.randrange(256), "b": rng.randrange(256)} for _ in range(200)]
    prepared, sims = _prepare([("multiplier8", build("multiplier", bits=8), rows,
                                lambda r: {"p": r["a"] * r["b"]})])
    _check(run_cases(sims, simulator="icarus", quiet=True), prepared)


@pytest.mark.slow
@pytest.mark.parametrize("bits", [5, 6])
def test_multiplier_all_pairs_on_icarus_slow(bits):
    prepared, sims = _prepare([(f"multiplier{bits}", build("multiplier", bits=bits),
                                _pairs(bits, "a", "b"), lambda r: {"p": r["a"] * r["b"]})])
    _check(run_cases(sims, simulator="icarus", quiet=True), prepared)


@pytest.mark.slow
def test_eight_bit_adder_and_comparator_on_icarus_slow():
    # 2,048 of the 65,536 pairs on the RTL (all of them run on the emulator, test_macros.py).
    rows = random.Random(8).sample(_pairs(8, "a", "b"), 2048)
    prepared, sims = _prepare([
        ("adder8", build("adder", bits=8), rows, lambda r: {"sum": r["a"] + r["b"]}),
        ("comparator8", build("comparator", bits=8), rows,
         lambda r: {"lt": int(r["a"] < r["b"]), "eq": int(r["a"] == r["b"]),
                    "gt": int(r["a"] > r["b"])})], width=8, height=10)
    _check(run_cases(sims, simulator="icarus", quiet=True), prepared)
