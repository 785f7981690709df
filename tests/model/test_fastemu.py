"""The bit-parallel emulator (bitgrid.fastemu): differential runs against the reference
emulator on many grid sizes (around the 64-cell word boundaries too) and block plans, what its
API adds or does differently (options, state as a property), and the lane-parallel
(multi-stream) mode. The cases every emulator shares (conformance, random programs against an
independent model, the SPEC timing properties, the API) are in ``test_emulator_contract.py``.
"""

import os
import random

import numpy as np
import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid.cell import PASS_THROUGH
from bitgrid.fastemu import FastEmulator, anf_tables
from support.configs import mixed_config
from support.conformance import conformance_cases, load_conformance


def random_edges(rng, width, height):
    return Edges(rng.getrandbits(width), rng.getrandbits(height), rng.getrandbits(width),
                 rng.getrandbits(height))


# Conformance cases in the lane-parallel mode.


@pytest.mark.parametrize("name", conformance_cases())
def test_conformance_case_in_one_of_many_streams(name):
    """Stream 2 of 5 runs the case; the others run random inputs and must not disturb it."""
    case = load_conformance(name)
    emulator = FastEmulator(case.load_bitstream().config, streams=5)
    rng = random.Random(name)
    for t, (inputs, expected) in enumerate(case.steps):
        edges = [random_edges(rng, case.width, case.height) for _ in range(5)]
        edges[2] = inputs
        assert emulator.step(edges)[2] == expected, f"{name}: step {t}"


def test_conformance_run_and_streams():
    """run() reproduces a case, and so does every stream of a lane-parallel run of it."""
    case = load_conformance("random_8x8")
    config = case.load_bitstream().config
    assert FastEmulator(config).run(case.inputs) == case.outputs
    emulator = FastEmulator(config, streams=3)
    for inputs, expected in case.steps:
        assert emulator.step([inputs] * 3) == [expected] * 3


# Differential tests against the reference emulator.

SIZES = [(2, 2), (2, 40), (40, 2), (62, 6), (64, 4), (66, 8), (130, 66), (128, 128),
         (4, 2), (126, 4), (256, 2), (256, 6), (384, 4), (258, 6), (6, 130), (194, 10)]


def run_differential(config, rng, steps, **options):
    width, height = config.width, config.height
    reference, fast = Emulator(config), FastEmulator(config, **options)
    for t in range(steps):
        edges = random_edges(rng, width, height)
        expected = reference.step(edges)
        assert fast.step(edges) == expected, f"{width} x {height}, step {t}"
        if t in (0, 1, steps // 2):
            assert np.array_equal(fast.outputs, reference.outputs), f"state at step {t}"
    assert fast.edge_outputs() == reference.edge_outputs()
    assert np.array_equal(fast.outputs, reference.outputs)
    assert fast.subcycle == reference.subcycle == steps
    return reference


@pytest.mark.parametrize("width, height", SIZES)
def test_random_differential(width, height):
    for seed in range(4):
        rng = random.Random(1000 * width + 10 * height + seed)
        config = mixed_config(width, height, rng) if seed else \
            Configuration.random(width, height, seed=seed + width * height)
        steps = 40 if width * height > 4096 else 70
        reference = run_differential(config, rng, steps)
        assert reference.outputs.any()


def test_random_sizes():
    """Random even sizes up to 300 x 40 (and 40 x 300), a few subcycles each."""
    rng = random.Random(2024)
    for _ in range(60):
        width, height = 2 * rng.randint(1, 150), 2 * rng.randint(1, 20)
        if rng.random() < 0.3:
            width, height = height, width
        run_differential(mixed_config(width, height, rng), rng, 16)


@pytest.mark.parametrize("width, height, options", [
    (66, 8, {"chunk_words": 1}), (130, 66, {"chunk_words": 5, "threads": 2}),
    (128, 128, {"chunk_words": 64, "threads": 3}), (2, 40, {"chunk_words": 2, "threads": 2}),
    (258, 6, {"threads": 2})])
def test_random_differential_block_plans(width, height, options):
    """The result does not depend on how a subcycle is cut into blocks and threads."""
    rng = random.Random(width * height)
    run_differential(mixed_config(width, height, rng), rng, 30, **options)


def test_signal_crosses_word_boundaries():
    """A 1 on W_in travels east through pass-through cells across the 64-cell words of both
    parities (the carries of the shifted planes) and leaves on E_out after W (+1) steps."""
    width, height = 260, 4
    config = Configuration(width, height, np.broadcast_to(np.array(PASS_THROUGH, np.uint16),
                                                           (height, width, 4)))
    for y0 in range(height):
        reference, fast = Emulator(config), FastEmulator(config)
        for t in range(width + 2):
            assert fast.step(Edges(w=1 << y0, e=1 << y0)) == \
                reference.step(Edges(w=1 << y0, e=1 << y0))
        assert fast.edge_outputs().e == fast.edge_outputs().w == 1 << y0
        assert np.array_equal(fast.outputs, reference.outputs)


# The API shared with the reference emulator.


def test_reset_and_load_like_reference():
    rng = random.Random(5)
    first, second = mixed_config(70, 6, rng), mixed_config(70, 6, rng)
    reference, fast = Emulator(first), FastEmulator(first)
    inputs = [random_edges(rng, 70, 6) for _ in range(30)]
    for t, edges in enumerate(inputs):
        if t == 9:
            reference.load(second)
            fast.load(second)
            assert fast.subcycle == 9 and fast.config == second
            assert np.array_equal(fast.outputs, reference.outputs)    # load keeps the state
        if t == 20:
            reference.reset()
            fast.reset()
        assert fast.step(edges) == reference.step(edges), t
    assert np.array_equal(fast.outputs, reference.outputs)


def test_options_and_load_checked():
    config = Configuration(4, 2, np.full((2, 4, 4), 0xFFFF))
    emulator = FastEmulator(config)
    with pytest.raises(TypeError, match="FastEmulator needs a Configuration"):
        emulator.load(np.zeros((2, 4, 4)))
    for bad in (0, -1, 1.5, True):
        for option in ("streams", "threads", "chunk_words"):
            with pytest.raises(ValueError) as info:
                FastEmulator(config, **{option: bad})
            bound = "from 1 to 64" if option == "streams" else "of at least 1"
            assert str(info.value) == f"{option} must be an integer {bound}, not {bad!r}"


def test_outputs_can_be_set():
    """Assigning the outputs sets the state the next subcycle reads, as in the reference;
    writing into the returned array does not."""
    rng = random.Random(11)
    config = mixed_config(130, 6, rng)
    planted = np.array([[[rng.getrandbits(1) for _ in range(130)] for _ in range(6)]
                        for _ in range(4)], dtype=np.uint8)
    reference, fast = Emulator(config), FastEmulator(config)
    reference.outputs = planted
    fast.outputs = planted
    assert np.array_equal(fast.outputs, planted)
    fast.outputs[0] = 1 - planted[0]             # a copy: no effect
    assert np.array_equal(fast.outputs, planted)
    reference.subcycle = fast.subcycle = 3
    for _ in range(5):
        edges = random_edges(rng, 130, 6)
        assert fast.step(edges) == reference.step(edges)
    assert np.array_equal(fast.outputs, reference.outputs)
    with pytest.raises(ValueError, match="shape"):
        fast.outputs = np.zeros((4, 130, 6), np.uint8)
    with pytest.raises(ValueError, match="0 or 1"):
        fast.outputs = planted * 2


def test_edge_cells_only_read_their_own_parity_edges():
    """A 2 x 2 grid of inverters (every output = NOT of its own-side input), fed ones and
    zeros: edge inputs reach only the boundary cells of their step's parity."""
    inverters = [0x5555, 0x3333, 0x0F0F, 0x00FF]             # NOT N, NOT E, NOT S, NOT W
    config = Configuration(2, 2, np.broadcast_to(np.array(inverters), (2, 2, 4)))
    fast, reference = FastEmulator(config), Emulator(config)
    for t in range(6):
        edges = Edges(3, 3, 3, 3) if t % 3 else Edges()
        assert fast.step(edges) == reference.step(edges)
        assert np.array_equal(fast.outputs, reference.outputs)


# Lane-parallel mode.

@pytest.mark.parametrize("streams, width, height", [
    (1, 66, 8), (7, 130, 10), (64, 66, 8), (64, 2, 2), (7, 2, 40), (5, 128, 4),
    (64, 260, 130)])
def test_streams_equal_separate_runs(streams, width, height):
    rng = random.Random(streams * 1000 + width)
    config = mixed_config(width, height, rng)
    references = [Emulator(config) for _ in range(streams)]
    fast = FastEmulator(config, streams=streams)
    assert fast.streams == streams
    if width * height > 16384:
        assert fast.threads > 1 or os.cpu_count() == 1     # the automatic choice
    for t in range(24):
        inputs = [random_edges(rng, width, height) for _ in range(streams)]
        expected = [r.step(e) for r, e in zip(references, inputs)]
        assert fast.step(inputs) == expected, t
    assert fast.edge_outputs() == [r.edge_outputs() for r in references]
    outputs = fast.outputs
    assert outputs.shape == (streams, 4, height, width)
    for i, reference in enumerate(references):
        assert np.array_equal(outputs[i], reference.outputs), i


def test_streams_block_plans_and_api():
    rng = random.Random(77)
    config = mixed_config(70, 12, rng)
    inputs = [[random_edges(rng, 70, 12) for _ in range(9)] for _ in range(12)]
    plain = FastEmulator(config, streams=9)
    split = FastEmulator(config, streams=9, chunk_words=40, threads=2)   # streams per block
    rows = FastEmulator(config, streams=9, chunk_words=3, threads=2)     # rows per block
    results = plain.run(inputs)
    assert split.run(inputs) == results == rows.run(inputs)
    assert np.array_equal(split.outputs, plain.outputs)
    assert np.array_equal(rows.outputs, plain.outputs)
    assert plain.subcycle == 12 and plain.phase == 0
    # None: all streams zero; a stream's bad word is named; a wrong count is refused.
    other = FastEmulator(config, streams=9)
    other.run(inputs)
    assert plain.step(None) == other.step([Edges()] * 9)
    with pytest.raises(ValueError, match=r"Stream 4: Edge input E=0x1000 has bits beyond "
                                         r"its 12 lanes"):
        plain.step([Edges()] * 4 + [Edges(e=1 << 12)] + [Edges()] * 4)
    with pytest.raises(ValueError, match="for 9 streams, got 8"):
        plain.step([Edges()] * 8)
    assert plain.subcycle == 13
    # Outputs can be set per stream or for all streams at once.
    planted = np.zeros((4, 12, 70), np.uint8)
    planted[1, 3, 5] = 1
    plain.outputs = planted
    assert np.array_equal(plain.outputs, np.broadcast_to(planted, (9, 4, 12, 70)))
    plain.reset()
    assert not plain.outputs.any() and plain.subcycle == 0


def test_streams_none_is_all_zero():
    config = Configuration.random(6, 4, seed=2)
    fast = FastEmulator(config, streams=3)
    reference = Emulator(config)
    for _ in range(4):
        assert fast.step(None) == [reference.step(None)] * 3


# Helpers.

def test_anf_tables():
    rng = np.random.default_rng(3)
    tables = rng.integers(0, 1 << 16, size=200, dtype=np.uint16)
    anf = anf_tables(tables)
    assert np.array_equal(anf_tables(anf), tables)           # an involution
    for table, coefficients in zip(tables[:20], anf[:20]):
        for a in range(16):
            value = 0
            for m in range(16):
                if m & ~a == 0:
                    value ^= int(coefficients) >> m & 1
            assert value == int(table) >> a & 1
    assert list(anf_tables([0xAAAA, 0xCCCC, 0xF0F0, 0xFF00, 0xFFFF, 0])) == \
        [0x2, 0x4, 0x10, 0x100, 0x1, 0]                      # copy N/E/S/W: one monomial


def test_streams_are_1_to_64():
    """The README's bound: up to 64 input streams of one program at once."""
    assert FastEmulator(Configuration(4, 4), streams=64).outputs.shape[0] == 64
    for bad in (0, 65):
        with pytest.raises(ValueError, match=f"streams must be an integer from 1 to 64, not "
                                             f"{bad}"):
            FastEmulator(Configuration(4, 4), streams=bad)
