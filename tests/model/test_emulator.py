"""What only the reference emulator has (SPEC sections 2 to 4): its input planes and its
writable state, and the locality of edge inputs measured on that state. The cases every
emulator shares (conformance, random programs against an independent model, the SPEC timing
properties, the API) are in ``test_emulator_contract.py``.
"""

import random

import numpy as np

from bitgrid import Configuration, Edges, Emulator
from bitgrid.cell import PASS_THROUGH


def random_word(rng, lanes):
    return rng.getrandbits(lanes)


def random_edges(rng, width, height):
    return Edges(random_word(rng, width), random_word(rng, height), random_word(rng, width),
                 random_word(rng, height))


def fill(width, height, tables):
    config = Configuration(width, height)
    for y in range(height):
        for x in range(width):
            config[x, y] = tables
    return config


def parity_mask(width, height, p):
    return np.array([[(x + y) % 2 == p for x in range(width)] for y in range(height)])


def test_edge_input_affects_only_active_boundary_cells_of_its_step():
    """Two emulators in the same state get different edge inputs for one step: only outputs
    of boundary cells of that step's phase, on the changed side, may differ."""
    rng = random.Random(5)
    width, height = 8, 6
    config = Configuration.random(width, height, seed=5)
    for t0 in (0, 1, 4, 7):
        a, b = Emulator(config), Emulator(config)
        for _ in range(t0):
            edges = random_edges(rng, width, height)
            a.step(edges)
            b.step(edges)
        base = random_edges(rng, width, height)
        for side in "nesw":
            lanes = width if side in "ns" else height
            changed = base._replace(**{side: getattr(base, side) ^ ((1 << lanes) - 1)})
            a2, b2 = _clone(a), _clone(b)
            a2.step(base)
            b2.step(changed)
            allowed = np.zeros((height, width), dtype=bool)
            if side == "n":
                allowed[0, :] = True
            elif side == "s":
                allowed[height - 1, :] = True
            elif side == "w":
                allowed[:, 0] = True
            else:
                allowed[:, width - 1] = True
            allowed &= parity_mask(width, height, t0 % 2)
            differ = (a2.outputs != b2.outputs).any(axis=0)
            assert not (differ & ~allowed).any()
    # the check is not vacuous: an inverted full edge on a random grid changes something
    a, b = Emulator(config), Emulator(config)
    a.step(Edges(0, 0, 0, 0))
    b.step(Edges(0xFF, 0x3F, 0xFF, 0x3F))
    assert (a.outputs != b.outputs).any()


def _clone(emulator):
    other = Emulator(emulator.config)
    other.outputs[...] = emulator.outputs
    other.subcycle = emulator.subcycle
    return other


def test_inputs_planes():
    config = Configuration.random(4, 2, seed=4)
    emulator = Emulator(config)
    rng = random.Random(4)
    for _ in range(3):
        emulator.step(random_edges(rng, 4, 2))
    edges = Edges(0b1001, 0b10, 0b0110, 0b01)
    inp = emulator.inputs(edges)
    o = emulator.outputs
    assert inp.shape == (4, 2, 4)
    for y in range(2):
        for x in range(4):
            assert inp[0, y, x] == (o[2, y - 1, x] if y else (edges.n >> x) & 1)
            assert inp[1, y, x] == (o[3, y, x + 1] if x < 3 else (edges.e >> y) & 1)
            assert inp[2, y, x] == (o[0, y + 1, x] if y < 1 else (edges.s >> x) & 1)
            assert inp[3, y, x] == (o[1, y, x - 1] if x else (edges.w >> y) & 1)


def test_outputs_state_can_be_set():
    """Writing the outputs (in place or by assignment) sets the state the next subcycle reads:
    a pass-through cell forwards a 1 planted in its western neighbour's E output."""
    emulator = Emulator(fill(4, 2, PASS_THROUGH))
    emulator.outputs[1, 0, 0] = 1                # E output of (0, 0); (1, 0) is odd
    emulator.subcycle = 1
    emulator.step()
    assert emulator.outputs[1, 0, 1] == 1
    planted = np.zeros((4, 2, 4), dtype=np.uint8)
    planted[3, 1, 3] = 1                         # W output of (3, 1), read by (2, 1): odd
    emulator.reset()
    emulator.outputs = planted
    assert np.array_equal(emulator.outputs, planted)
    emulator.subcycle = 1
    assert emulator.step() == Edges(0, 0, 0, 0)
    assert emulator.outputs[3, 1, 2] == 1 and emulator.outputs[3, 1, 3] == 1
    emulator.subcycle = 3
    emulator.step()                               # (1, 1) is even: not updated in phase B
    assert emulator.outputs[3, 1, 1] == 0
    emulator.subcycle = 4
    assert emulator.step().w == 0b00             # (1, 1) takes the 1; (0, 1) is odd
    assert emulator.step().w == 0b10             # and (0, 1) outputs it on W_out[1]

