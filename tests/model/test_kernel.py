"""The compiled emulator kernel (bitgrid.kernel) and FastEmulator's batched ``run(n,
inputs=lanes)``: every conformance case in one batched call, random differential runs against
the reference emulator (random configurations with walls, pass-through and reflector cells,
random edge stimulus every subcycle, widths around the 64-cell words, odd and even half sizes,
non-square grids) under many plans (threads, pass depths, tile heights: the temporal blocking
and the band boundaries), runs split into calls at odd subcycles, and the lane-array API and
its errors. The cases every emulator shares run in ``test_emulator_contract.py``, where the
default ``FastEmulator`` is the kernel.
"""

import os
import random

import numpy as np
import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid import kernel
from bitgrid.cell import PASS_THROUGH
from bitgrid.fastemu import FastEmulator, anf_tables
from support.configs import mixed_config
from support.conformance import conformance_cases, load_conformance

pytestmark = pytest.mark.skipif(not kernel.available(), reason="numba is not installed")


def random_lanes(rng, steps, width, height):
    count = 2 * (width + height)
    return np.array([[rng.getrandbits(1) for _ in range(count)] for _ in range(steps)],
                    dtype=np.uint8).reshape(steps, count)


def reference_run(config, lanes, reference=None):
    """The reference emulator on a lane array: the output lane array, built lane by lane
    from the Edges words (independently of the kernel's lane helpers)."""
    width, height = config.width, config.height
    reference = reference or Emulator(config)
    result = np.zeros_like(lanes)
    counts = (width, height, width, height)
    for t, row in enumerate(lanes):
        words, offset = [], 0
        for count in counts:
            words.append(sum(int(b) << i for i, b in enumerate(row[offset:offset + count])))
            offset += count
        edges = reference.step(Edges(*words))
        offset = 0
        for word, count in zip(edges, counts):
            result[t, offset:offset + count] = [(word >> i) & 1 for i in range(count)]
            offset += count
    return result


# Conformance: every case in one batched call.

@pytest.mark.parametrize("name", conformance_cases())
def test_conformance_case_batched(name):
    case = load_conformance(name)
    emulator = FastEmulator(case.load_bitstream().config, kernel=True)
    lanes = kernel.edges_to_lanes(case.inputs, case.width, case.height)
    outputs = emulator.run(len(case.inputs), inputs=lanes)
    assert kernel.lanes_to_edges(outputs, case.width, case.height) == list(case.outputs)
    assert emulator.subcycle == len(case.inputs)


# Random differential runs against the reference.

SIZES = [(2, 2), (2, 40), (40, 2), (6, 10), (62, 6), (64, 4), (66, 8), (126, 12), (128, 16),
         (130, 66), (256, 6), (258, 10), (6, 130), (384, 4), (194, 34)]


@pytest.mark.parametrize("width, height", SIZES)
def test_random_differential(width, height):
    rng = random.Random(7 * width + height)
    config = mixed_config(width, height, rng)
    steps = 30 if width * height > 4000 else 60
    lanes = random_lanes(rng, steps, width, height)
    reference = Emulator(config)
    expected = reference_run(config, lanes, reference)
    emulator = FastEmulator(config, kernel=True)
    assert np.array_equal(emulator.run(steps, inputs=lanes), expected)
    assert np.array_equal(emulator.outputs, reference.outputs)
    assert reference.outputs.any()


PLANS = [
    (130, 66, {"threads": 2}),
    (130, 66, {"threads": 2, "depth": 3, "tile_rows": 5}),
    (128, 64, {"threads": 1, "depth": 7, "tile_rows": 3}),
    (258, 40, {"threads": 3, "depth": 4, "tile_rows": 2}),
    (66, 48, {"threads": 4, "depth": 6, "tile_rows": 1}),
    (194, 20, {"threads": 2, "depth": 5, "tile_rows": 4}),
    (64, 16, {"threads": 2, "depth": 2, "tile_rows": 100}),
    (6, 12, {"threads": 3, "depth": 2, "tile_rows": 1}),
]


@pytest.mark.parametrize("width, height, options", PLANS)
def test_random_differential_plans(width, height, options):
    """The results do not depend on the plan: bands per thread, pass depth, tile height."""
    rng = random.Random(width * height + len(options))
    config = mixed_config(width, height, rng)
    steps = 41
    lanes = random_lanes(rng, steps, width, height)
    expected = reference_run(config, lanes)
    planes = np.zeros((16, (height // 2 + 2) * ((width // 2 + 63) // 64)), dtype=np.uint64)
    coef = kernel.pack_coefficients(anf_tables(config.luts), width, height)
    outputs = np.zeros_like(lanes)
    plan = kernel.make_plan(width, height, **options)
    assert plan.threads == options["threads"] and plan.depth >= 1
    kernel.advance(planes, coef, width, height, 0, lanes, outputs, plan=plan)
    assert np.array_equal(outputs, expected), plan


def test_split_calls_and_step_interleave():
    """Calls of any length (an odd one first, so later calls start on phase B), single steps
    and the state setter in between give the reference's results."""
    rng = random.Random(3)
    width, height = 70, 14
    config = mixed_config(width, height, rng)
    reference, emulator = Emulator(config), FastEmulator(config, kernel=True)
    for count in (3, 1, 8, 0, 5, 12):
        lanes = random_lanes(rng, count, width, height)
        assert np.array_equal(emulator.run(count, inputs=lanes),
                              reference_run(config, lanes, reference))
        edges = Edges(rng.getrandbits(width), rng.getrandbits(height), rng.getrandbits(width),
                      rng.getrandbits(height))
        assert emulator.step(edges) == reference.step(edges)
        assert emulator.subcycle == reference.subcycle
    planted = rng.getrandbits(1) * np.ones((4, height, width), np.uint8)
    planted[1, 3, 5] ^= 1
    emulator.outputs = planted
    reference.outputs = planted
    lanes = random_lanes(rng, 9, width, height)
    assert np.array_equal(emulator.run(9, inputs=lanes), reference_run(config, lanes, reference))
    assert np.array_equal(emulator.outputs, reference.outputs)


def test_legacy_run_list_and_broadcast_row():
    """``run(list of Edges)`` keeps its form on the kernel; one lane row holds for all
    subcycles; no inputs is all zero."""
    rng = random.Random(9)
    config = mixed_config(10, 6, rng)
    inputs = [Edges(rng.getrandbits(10), rng.getrandbits(6), rng.getrandbits(10),
                    rng.getrandbits(6)) for _ in range(12)]
    assert FastEmulator(config, kernel=True).run(inputs) == Emulator(config).run(inputs)
    assert FastEmulator(config, kernel=True).run([]) == []
    row = random_lanes(rng, 1, 10, 6)[0]
    expected = reference_run(config, np.tile(row, (7, 1)))
    assert np.array_equal(FastEmulator(config).run(7, inputs=row), expected)
    assert np.array_equal(FastEmulator(config).run(7, inputs=row.astype(bool)), expected)
    zeros = reference_run(config, np.zeros((5, 32), np.uint8))
    assert np.array_equal(FastEmulator(config).run(5), zeros)
    # The numpy code answers the batched form too.
    assert np.array_equal(FastEmulator(config, kernel=False).run(7, inputs=row), expected)


def test_wide_signal_crosses_words_and_bands():
    """A 1 on W_in travels east through pass-through cells across the 64-cell words and a 1
    on N_in south across the band boundaries of two threads, on a 260 x 40 grid."""
    width, height = 260, 40
    config = Configuration(width, height, np.broadcast_to(np.array(PASS_THROUGH, np.uint16),
                                                           (height, width, 4)))
    lanes = np.zeros((width + 4, 2 * (width + height)), np.uint8)
    n_lanes, e_lanes, s_lanes, w_lanes = kernel.lane_slices(width, height)
    lanes[:, w_lanes.start + 7] = 1          # W_in[7]
    lanes[:, n_lanes.start + 131] = 1        # N_in[131]
    emulator = FastEmulator(config, kernel=True, threads=2)
    out = emulator.run(len(lanes), inputs=lanes)
    assert np.array_equal(out, reference_run(config, lanes))
    # Straight routes: width (+1) subcycles to the E edge, height (+1) to the S edge.
    assert out[width, e_lanes.start + 7] == 1 and not out[width - 2, e_lanes].any()
    assert out[height, s_lanes.start + 131] == 1 and not out[height - 2, s_lanes].any()


# The lane arrays and errors.

def test_lane_helpers_round_trip():
    rng = random.Random(1)
    edges = [Edges(rng.getrandbits(70), rng.getrandbits(6), rng.getrandbits(70),
                   rng.getrandbits(6)) for _ in range(5)]
    lanes = kernel.edges_to_lanes(edges, 70, 6)
    assert lanes.shape == (5, 152) and kernel.lane_count(70, 6) == 152
    n, e, s, w = kernel.lane_slices(70, 6)
    assert (n, e, s, w) == (slice(0, 70), slice(70, 76), slice(76, 146), slice(146, 152))
    assert all(lanes[0, e.start + i] == (edges[0].e >> i) & 1 for i in range(6))
    assert kernel.lanes_to_edges(lanes, 70, 6) == edges
    with pytest.raises(ValueError, match="N=0x10 has bits beyond its 4 lanes"):
        kernel.edges_to_lanes([Edges(n=16)], 4, 2)


def test_bad_inputs():
    config = Configuration.random(8, 4, seed=1)
    emulator = FastEmulator(config, kernel=True)
    with pytest.raises(ValueError, match=r"lane array of shape \(3, 24\) .* not \(3, 23\)"):
        emulator.run(3, inputs=np.zeros((3, 23), np.uint8))
    with pytest.raises(ValueError, match="0 or 1"):
        emulator.run(2, inputs=np.full((2, 24), 2, np.uint8))
    with pytest.raises(ValueError, match="at least 0"):
        emulator.run(-1)
    with pytest.raises(TypeError, match="takes no inputs"):
        emulator.run([Edges()], inputs=np.zeros((1, 24), np.uint8))
    assert emulator.subcycle == 0 and not emulator.outputs.any()       # nothing ran
    with pytest.raises(ValueError, match="one stream"):
        FastEmulator(config, kernel=True, streams=2)
    with pytest.raises(ValueError, match="runs one stream"):
        FastEmulator(config, kernel=False, streams=2).run(2)
    with pytest.raises(TypeError, match="kernel must be True, False or None"):
        FastEmulator(config, kernel="yes")
    planes = np.zeros((16, 3 * 1), np.uint64)
    coef = kernel.pack_coefficients(anf_tables(config.luts), 8, 4)
    lanes = np.zeros((2, 24), np.uint8)
    with pytest.raises(ValueError, match=r"planes must be a C-contiguous uint64 array of "
                                         r"shape \(16, 4\)"):
        kernel.advance(planes, coef, 8, 4, 0, lanes, np.zeros_like(lanes))
    with pytest.raises(ValueError, match="outputs have 1 rows for 2 subcycles"):
        kernel.advance(np.zeros((16, 4), np.uint64), coef, 8, 4, 0, lanes,
                       np.zeros((1, 24), np.uint8))


def test_default_choice_and_plan():
    config = Configuration.random(8, 4, seed=1)
    assert FastEmulator(config).kernel is True
    assert FastEmulator(config, chunk_words=4).kernel is False       # the numpy code's knob
    assert FastEmulator(config, streams=3).kernel is False
    small = kernel.make_plan(64, 64)
    assert small.threads == 1 and small.depth >= 1 << 20              # one pass per call
    assert kernel.make_plan(1024, 1024, threads=2).threads == 2
    assert kernel.make_plan(128, 128).threads == 1                    # below MIN_WORDS
    assert kernel.make_plan(256, 256).threads == min(2, os.cpu_count() or 1)
    assert kernel.make_plan(8, 6, threads=8).threads == 1             # bands of 4 rows at least
    assert kernel.warm_up() >= 0


@pytest.mark.slow
@pytest.mark.parametrize("width, height, options", [
    (1024, 1024, {}), (1024, 1024, {"threads": 2, "depth": 9, "tile_rows": 7}),
    (2050, 260, {"threads": 2, "depth": 13, "tile_rows": 3})])
def test_large_grids_against_reference(width, height, options):
    """Grids beyond the caches, with the default plan and with temporal blocking over several
    tiles and passes, against the reference, every subcycle's edges and the final state."""
    rng = np.random.default_rng(width + height)
    luts = rng.integers(0, 1 << 16, size=(height, width, 4), dtype=np.uint16)
    luts[rng.random((height, width)) < 0.2] = PASS_THROUGH
    config = Configuration(width, height, luts)
    steps = 40
    lanes = rng.integers(0, 2, size=(steps, 2 * (width + height)), dtype=np.uint8)
    reference = Emulator(config)
    expected = reference_run(config, lanes, reference)
    planes = np.zeros((16, (height // 2 + 2) * ((width // 2 + 63) // 64)), dtype=np.uint64)
    coef = kernel.pack_coefficients(anf_tables(config.luts), width, height)
    outputs = np.zeros_like(lanes)
    kernel.advance(planes, coef, width, height, 0, lanes, outputs,
                   plan=kernel.make_plan(width, height, **options))
    assert np.array_equal(outputs, expected)
    emulator = FastEmulator(config, kernel=True)
    emulator.run(steps, inputs=lanes)
    assert np.array_equal(emulator.outputs, reference.outputs)
