"""The example programs on the reference emulator: the ripple-carry adder and the text lanes.

Expected sums are ``a + b`` computed here, expected texts are the sentences sent; neither comes
from the code under test. Noise masks are built here from the I/O maps in the docstrings.
"""

import itertools
import random

import pytest

from bitgrid import Edges, Emulator, vectors
from bitgrid.examples import (DEFAULT_TEXT, Adder, TextLanes, adder, save_adder_case,
                              save_text_case, text_lanes)


def noisy(inputs, used, width, height, rng):
    """``inputs`` with random bits on every input lane outside ``used`` (dict side -> mask)."""
    lanes = {"n": width, "e": height, "s": width, "w": height}
    result = []
    for edges in inputs:
        words = {}
        for side, count in lanes.items():
            mask = used.get(side, 0)
            words[side] = (getattr(edges, side) & mask) | (rng.getrandbits(count) & ~mask)
        result.append(Edges(**words))
    return result


def adder_lanes(n, column):
    """Input lanes the adder reads, from its documented I/O map."""
    return {"w": (1 << n) - 1, "e": (1 << n) - 1, "n": 1 << column}


def adder_edges(n, column, a, b):
    return Edges(n=0, e=b, s=0, w=a)


def adder_sum(n, column, out):
    """Sum from edge outputs, per the I/O map: E_out lanes 0..n-1, carry on S_out[column]."""
    return (out.e & ((1 << n) - 1)) | (((out.s >> column) & 1) << n)


def run_held(example, pairs, holds, lead=0, noise_rng=None):
    """Apply each pair for its hold (subcycles) after ``lead`` idle subcycles; return the sums
    read at the last subcycle of each hold."""
    n, c = example.bits, example.column
    inputs = [Edges()] * lead
    ends = []
    for (a, b), hold in zip(pairs, holds):
        inputs += [adder_edges(n, c, a, b)] * hold
        ends.append(len(inputs) - 1)
    if noise_rng is not None:
        inputs = noisy(inputs, adder_lanes(n, c), example.width, example.height, noise_rng)
    outputs = Emulator(example.config).run(inputs)
    return [adder_sum(n, c, outputs[t]) for t in ends]


def parity_holds(example, pairs, lead, shorten=None):
    """Holds of ``latency_from(start)`` for each pair, the start parity following the stream;
    pairs starting on parity ``shorten`` get one subcycle less."""
    holds, t = [], lead
    for _ in pairs:
        hold = example.latency_from(t)
        if shorten is not None and t % 2 == shorten:
            hold -= 1
        holds.append(hold)
        t += hold
    return holds


# Geometry and I/O map ----------------------------------------------------------------------------
def test_adder8_fits_8x8():
    example = adder(8)
    assert (example.config.width, example.config.height) == (8, 8)
    assert (example.width, example.height, example.column) == (8, 8, 7)
    assert example.latency == 16
    assert (example.latency_from(0), example.latency_from(1)) == (15, 16)
    # Every cell of the 8 x 8 grid is used: 7 pass cells and one full adder per row.
    assert all(any(example.config[x, y]) for x in range(8) for y in range(8))


@pytest.mark.parametrize("n, size", [(1, (2, 2)), (2, (2, 2)), (3, (4, 4)), (5, (6, 6)),
                                     (16, (16, 16))])
def test_adder_default_size(n, size):
    example = adder(n)
    assert (example.width, example.height) == size


def test_adder_io_words():
    example = adder(8)
    assert example.inputs(0x12, 0xA5) == Edges(n=0, e=0xA5, s=0, w=0x12)
    assert example.inputs(1, 2, carry=1) == Edges(n=0x80, e=2, s=0, w=1)
    assert example.result(Edges(n=0xFF, e=0x34, s=0x80, w=0xFF)) == 0x134
    assert example.result(Edges(e=0xFF, s=0x7F)) == 0xFF
    assert example.used_inputs == Edges(n=0x80, e=0xFF, s=0, w=0xFF)
    assert adder(3, width=6, column=2).used_inputs == Edges(n=0x4, e=0x7, s=0, w=0x7)


def test_adder_errors():
    with pytest.raises(ValueError) as info:
        adder(0)
    assert str(info.value) == "Adder bits must be an integer of at least 1, not 0"
    with pytest.raises(ValueError) as info:
        adder(8, height=6)
    assert str(info.value) == "A 8-bit adder needs a grid at least 8 cells high, not 6"
    with pytest.raises(ValueError) as info:
        adder(4, width=4, column=4)
    assert str(info.value) == "Adder column must be an integer from 0 to 3, not 4"
    with pytest.raises(ValueError):
        adder(4, width=3)
    example = adder(4)
    with pytest.raises(ValueError) as info:
        example.inputs(16, 0)
    assert str(info.value) == "Operand a must be an integer from 0 to 15, not 16"
    with pytest.raises(ValueError) as info:
        example.inputs(0, -1)
    assert str(info.value) == "Operand b must be an integer from 0 to 15, not -1"
    with pytest.raises(ValueError) as info:
        example.inputs(0, 0, carry=2)
    assert str(info.value) == "Carry in must be an integer from 0 to 1, not 2"


# Exhaustive small adders -------------------------------------------------------------------------
GEOMETRIES = [  # (n, width, height, column)
    (1, None, None, None), (2, None, None, None), (3, None, None, None), (4, None, None, None),
    (1, 4, 2, 0), (2, 6, 2, 2), (3, 2, 6, None), (3, 6, 4, 0), (4, 4, 4, 1), (4, 8, 4, 5),
]


@pytest.mark.parametrize("n, width, height, column", GEOMETRIES)
def test_adder_exhaustive(n, width, height, column):
    """Every (a, b) pair, in random order, each held ``latency`` subcycles: through the
    example's own encode/decode from an even subcycle, and read by this test's I/O map from an
    odd subcycle with noise on every ignored input lane."""
    example = Adder(n, width=width, height=height, column=column)
    pairs = list(itertools.product(range(1 << n), repeat=2))
    random.Random(n * 100).shuffle(pairs)
    expected = [a + b for a, b in pairs]
    inputs = example.encode(pairs)
    assert len(inputs) == len(pairs) * example.latency
    assert example.decode(Emulator(example.config).run(inputs)) == expected
    got = run_held(example, pairs, [example.latency] * len(pairs), lead=1,
                   noise_rng=random.Random(7 + n))
    assert got == expected


@pytest.mark.parametrize("n, width, height, column", GEOMETRIES)
def test_adder_latency_tight(n, width, height, column):
    """``latency_from(p)`` is enough for every pair after every other (exhaustive pairs in random
    order, so all sorts of previous operands), and one subcycle less fails for some pair, for
    each start parity p. So ``latency`` (the larger) is tight as well."""
    example = Adder(n, width=width, height=height, column=column)
    pairs = list(itertools.product(range(1 << n), repeat=2))
    rng = random.Random(n)
    # Repeat the shuffled pairs so that every kind of transition starts on both parities.
    pairs = [p for _ in range(max(1, 64 // len(pairs))) for p in rng.sample(pairs, len(pairs))]
    expected = [a + b for a, b in pairs]
    # Showing that one subcycle less fails needs only some transitions: 96 of them.
    few = pairs[:96]
    shown = set()
    for lead in (0, 1):
        holds = parity_holds(example, pairs, lead)
        assert run_held(example, pairs, holds, lead) == expected
        for parity in (0, 1):
            short = parity_holds(example, few, lead, shorten=parity)
            if short == parity_holds(example, few, lead):
                continue            # no pair of this stream starts on that parity
            assert run_held(example, few, short, lead) != expected[:96], (lead, parity)
            shown.add(parity)
    assert shown == {0, 1}
    assert example.latency == max(example.latency_from(0), example.latency_from(1))


def test_adder_latency_tight_carry_chain():
    """The 8-bit adder on 8 x 8: 0+0 then 255+1 (the carry ripples through every bit) is not
    ready one subcycle before ``latency_from(start)`` for either start parity."""
    example = adder(8)
    for lead in (0, 1):
        start = example.latency + lead
        ok = example.latency_from(start)
        pairs = [(0, 0), (255, 1)]
        assert run_held(example, pairs, [example.latency, ok], lead) == [0, 256]
        assert run_held(example, pairs, [example.latency, ok - 1], lead)[1] != 256


# The 8-bit adder ---------------------------------------------------------------------------------
CORNERS = [(0, 0), (255, 255), (255, 1), (1, 255), (128, 128), (127, 1), (0, 255), (255, 0),
           (170, 85), (85, 170), (1, 1), (254, 1), (128, 127)]


def test_adder8_random_and_corners():
    example = adder(8)
    rng = random.Random(2024)
    pairs = CORNERS + [(rng.randrange(256), rng.randrange(256)) for _ in range(300)] + CORNERS
    assert example.run(pairs) == [a + b for a, b in pairs]
    # From an odd subcycle, with noise on the ignored lanes, read by this test's I/O map.
    pairs = CORNERS + pairs[len(CORNERS):len(CORNERS) + 80]
    got = run_held(example, pairs, [example.latency] * len(pairs), lead=1,
                   noise_rng=random.Random(99))
    assert got == [a + b for a, b in pairs]


def test_adder8_carry_in():
    example = adder(8)
    pairs = [(0, 0), (255, 0), (100, 27), (255, 255)]
    assert example.run(pairs, carry=1) == [a + b + 1 for a, b in pairs]


def test_adder8_own_noise_helper():
    example = adder(8)
    pairs = [(3, 4), (200, 100), (255, 255)]
    inputs = example.with_noise(example.encode(pairs), seed=5)
    assert any(e.s or e.n & 0x7F for e in inputs)          # there is noise
    assert example.decode(Emulator(example.config).run(inputs)) == [7, 300, 510]


# Text lanes --------------------------------------------------------------------------------------
SENTENCE = "The quick brown fox jumps over the lazy dog; BitGrid 0123456789!"


def text_used(example):
    return {"w": ((1 << example.lanes) - 1) << example.first_row}


def test_text_lanes_default_layout():
    example = text_lanes()
    assert (example.width, example.height, example.lanes) == (8, 8, 8)
    assert example.latency == 9 and example.period == 2
    for y in range(8):
        for x in range(8):
            assert example.config[x, y] == (0, 0xFF00, 0, 0)        # E = input W only
    inputs = example.encode("Hi")
    assert inputs[:4] == [Edges(w=ord("H"))] * 2 + [Edges(w=ord("i"))] * 2
    assert len(inputs) == 2 * 2 + 9 - 2


@pytest.mark.parametrize("lead", [0, 1])
def test_text_lanes_sentence_with_noise(lead):
    example = text_lanes()
    inputs = [Edges()] * lead + example.encode(SENTENCE)
    inputs = noisy(inputs, text_used(example), 8, 8, random.Random(lead + 1))
    outputs = Emulator(example.config).run(inputs)
    assert example.decode(outputs[lead:]) == SENTENCE
    assert example.decode(outputs, start=lead) == SENTENCE
    # Read independently: byte j is on E_out after subcycle 2j + 8 of the stream.
    data = bytes(outputs[lead + 2 * j + 8].e for j in range(len(SENTENCE)))
    assert data == SENTENCE.encode()


@pytest.mark.parametrize("lead", [0, 1])
def test_text_lanes_latency_tight(lead):
    """One subcycle earlier than claimed, the lanes whose first cell samples on the second
    subcycle of a word's hold still carry the previous word."""
    example = text_lanes()
    outputs = Emulator(example.config).run([Edges()] * lead + example.encode(SENTENCE))
    stream = outputs[lead:]
    early = [stream[2 * j + example.latency - 2].e for j in range(len(SENTENCE))]
    assert bytes(early) != SENTENCE.encode()
    assert example.decode([Edges()] + stream) != SENTENCE    # every read one subcycle early
    # Exactly the lanes that sample late differ: row y samples at stream subcycle 2j + k where
    # k = (y - lead) % 2, so the late lanes are the rows with y % 2 != lead % 2.
    late = sum(1 << y for y in range(8) if y % 2 != lead % 2)
    data = SENTENCE.encode()
    for j in range(1, len(data)):
        assert early[j] & ~late == data[j] & ~late
        assert early[j] & late == data[j - 1] & late


def test_text_lanes_faster_than_period_fails():
    """A new byte every subcycle is too fast: the lanes cannot carry it (SPEC section 4)."""
    example = text_lanes()
    inputs = [Edges(w=b) for b in SENTENCE.encode()] + [Edges()] * 9
    outputs = Emulator(example.config).run(inputs)
    received = {outputs[t].e for t in range(len(outputs))}
    assert not set(SENTENCE.encode()) <= received


@pytest.mark.parametrize("lanes, width, height, first_row", [
    (1, 2, None, 0), (3, 4, 6, 1), (7, 6, None, 0), (12, 4, 14, 2), (16, 10, 16, 0)])
def test_text_lanes_other_shapes(lanes, width, height, first_row):
    example = TextLanes(lanes, width=width, height=height, first_row=first_row)
    assert example.latency == width + 1
    text = "Grüße, BitGrid ✓"
    inputs = noisy(example.encode(text), text_used(example), example.width, example.height,
                   random.Random(lanes))
    outputs = Emulator(example.config).run(inputs)
    assert example.decode(outputs) == text
    assert example.run(text, noise_seed=3) == text


def test_text_lanes_errors():
    with pytest.raises(ValueError) as info:
        text_lanes(0)
    assert str(info.value) == "Text lanes must be an integer of at least 1, not 0"
    with pytest.raises(ValueError) as info:
        text_lanes(2, first_row=-1)
    assert str(info.value) == "first_row must be an integer of at least 0, not -1"
    with pytest.raises(ValueError) as info:
        text_lanes(8, height=6)
    assert str(info.value) == "8 lanes from row 0 do not fit in a grid 6 cells high"


# Vector cases ------------------------------------------------------------------------------------
def replay(case):
    emulator = Emulator(case.load_bitstream().config)
    return [emulator.step(i) for i in case.inputs]


def test_adder_save_case(tmp_path):
    example = adder(8)
    pairs = [(0, 0), (255, 255), (255, 1), (17, 42)]
    path = example.save_case(tmp_path, pairs, noise_seed=11)
    case = vectors.load_case(path)
    assert case.name == "adder8" and (case.width, case.height) == (8, 8)
    assert len(case.steps) == len(pairs) * 16
    assert replay(case) == case.outputs
    assert case.load_bitstream().config == example.config
    assert [adder_sum(8, 7, case.outputs[16 * k + 15]) for k in range(4)] == \
        [a + b for a, b in pairs]
    assert "E_out" in case.description and "S_out[7]" in case.description


def test_text_save_case(tmp_path):
    example = text_lanes()
    path = example.save_case(tmp_path, "Hello World", name="hello", noise_seed=4, order=2)
    case = vectors.load_case(path)
    assert case.name == "hello" and (case.width, case.height) == (8, 8)
    assert replay(case) == case.outputs
    assert any(i.n or i.s or i.e for i in case.inputs)       # noise was written
    assert example.decode(case.outputs) == "Hello World"


def test_module_case_writers(tmp_path):
    case = vectors.load_case(save_adder_case(tmp_path, 4, noise_seed=1, order=1))
    example = adder(4)
    assert case.name == "adder4" and (case.width, case.height) == (4, 4)
    assert replay(case) == case.outputs
    sums = example.decode(case.outputs)
    assert sums[:4] == [0, 30, 16, 16] and len(sums) == 28
    pairs = [(i.w & 15, i.e & 15) for i in case.inputs[::example.latency]]
    assert sums == [a + b for a, b in pairs]
    case = vectors.load_case(save_text_case(tmp_path, noise_seed=2))
    assert replay(case) == case.outputs
    assert text_lanes().decode(case.outputs) == DEFAULT_TEXT
