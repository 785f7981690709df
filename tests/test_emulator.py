"""The reference emulator (SPEC sections 2 to 4): every shared conformance case, the timing
properties of the SPEC, input checking, and a differential test against a deliberately simple
per-cell model written below from the SPEC text.
"""

import random

import numpy as np
import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid.cell import PASS_THROUGH, REFLECTOR
from bitgrid.vectors import compare_step, format_mismatches
from conftest import conformance_cases, load_conformance

ALL_ONES = (0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF)


def random_word(rng, lanes):
    return rng.getrandbits(lanes)


def random_edges(rng, width, height):
    return Edges(random_word(rng, width), random_word(rng, height), random_word(rng, width),
                 random_word(rng, height))


class SimpleGrid:
    """SPEC sections 2-4, one cell at a time, in plain Python (no numpy, no shared code).

    ``out[y][x][d]`` is output d of cell (x, y). The N input of (x, y) is the S output of
    (x, y-1), or N_in[x] on row 0; and so on for E, S, W. Subcycle t updates the cells with
    (x + y) % 2 == t % 2 from the state before the subcycle; all of them commit together.
    """

    def __init__(self, config):
        self.w, self.h = config.width, config.height
        self.luts = [[config[x, y] for x in range(self.w)] for y in range(self.h)]
        self.out = [[[0, 0, 0, 0] for _ in range(self.w)] for _ in range(self.h)]
        self.t = 0

    def cell_inputs(self, x, y, n_in, e_in, s_in, w_in):
        n = self.out[y - 1][x][2] if y > 0 else (n_in >> x) & 1
        e = self.out[y][x + 1][3] if x < self.w - 1 else (e_in >> y) & 1
        s = self.out[y + 1][x][0] if y < self.h - 1 else (s_in >> x) & 1
        w = self.out[y][x - 1][1] if x > 0 else (w_in >> y) & 1
        return n, e, s, w

    def step(self, n_in, e_in, s_in, w_in):
        new = {}
        for y in range(self.h):
            for x in range(self.w):
                if (x + y) % 2 != self.t % 2:
                    continue
                n, e, s, w = self.cell_inputs(x, y, n_in, e_in, s_in, w_in)
                a = n + 2 * e + 4 * s + 8 * w
                new[x, y] = [(self.luts[y][x][d] >> a) & 1 for d in range(4)]
        for (x, y), outs in new.items():
            self.out[y][x] = outs
        self.t += 1
        n_out = sum(self.out[0][x][0] << x for x in range(self.w))
        s_out = sum(self.out[self.h - 1][x][2] << x for x in range(self.w))
        e_out = sum(self.out[y][self.w - 1][1] << y for y in range(self.h))
        w_out = sum(self.out[y][0][3] << y for y in range(self.h))
        return n_out, e_out, s_out, w_out

    def planes(self):
        return np.array([[[self.out[y][x][d] for x in range(self.w)] for y in range(self.h)]
                         for d in range(4)], dtype=np.uint8)


def fill(width, height, tables):
    config = Configuration(width, height)
    for y in range(height):
        for x in range(width):
            config[x, y] = tables
    return config


def parity_mask(width, height, p):
    return np.array([[(x + y) % 2 == p for x in range(width)] for y in range(height)])


# Conformance: every shared case, step by step.

@pytest.mark.parametrize("name", conformance_cases())
def test_conformance_case(name):
    case = load_conformance(name)
    assert hasattr(case, "steps"), f"{name} is not a bitgrid-vectors-v1 case"
    assert len(case.steps) > 0
    config = case.load_bitstream().config
    emulator = Emulator(config)
    for t, (inputs, expected) in enumerate(case.steps):
        assert emulator.subcycle == t
        assert emulator.phase == t % 2
        actual = emulator.step(inputs)
        if actual != expected:
            mismatches = compare_step(t, expected, actual, case.width, case.height)
            pytest.fail(f"{name}: step {t} differs:\n{format_mismatches(mismatches)}")
        assert emulator.edge_outputs() == expected
    assert emulator.subcycle == len(case.steps)


def test_conformance_run_matches_outputs():
    case = load_conformance("random_8x8")
    emulator = Emulator(case.load_bitstream().config)
    assert emulator.run(case.inputs) == case.outputs


def test_adder8_adds():
    """The functional claim of adder8: after each 12-step window, E_out lanes 0..7 show
    (a + b) mod 256 for the a on W lanes and b on E lanes."""
    case = load_conformance("adder8")
    outputs = Emulator(case.load_bitstream().config).run(case.inputs)
    windows = 0
    for t in range(11, len(case.steps), 12):
        inputs = case.steps[t][0]
        a, b = inputs.w & 0xFF, inputs.e & 0xFF
        assert outputs[t].e & 0xFF == (a + b) % 256
        windows += 1
    assert windows == 14


# SPEC properties.

def test_reset_state():
    emulator = Emulator(Configuration.random(6, 4, seed=1))
    assert emulator.outputs.shape == (4, 4, 6)
    assert emulator.outputs.dtype == np.uint8
    assert not emulator.outputs.any()
    assert (emulator.subcycle, emulator.phase) == (0, 0)
    assert emulator.edge_outputs() == Edges(0, 0, 0, 0)
    rng = random.Random(1)
    for _ in range(7):
        emulator.step(random_edges(rng, 6, 4))
    assert emulator.outputs.any()
    assert (emulator.subcycle, emulator.phase) == (7, 1)
    emulator.reset()
    assert not emulator.outputs.any()
    assert (emulator.subcycle, emulator.phase) == (0, 0)
    assert emulator.outputs.shape == (4, 4, 6) and emulator.outputs.dtype == np.uint8


def test_phase_order():
    """All-ones LUTs: subcycle 0 sets exactly the even cells, subcycle 1 the odd ones."""
    emulator = Emulator(fill(6, 4, ALL_ONES))
    even = parity_mask(6, 4, 0)
    emulator.step()
    for d in range(4):
        assert np.array_equal(emulator.outputs[d], even.astype(np.uint8))
    assert emulator.phase == 1
    emulator.step()
    assert emulator.outputs.all()
    # Edge outputs after subcycle 0 on the 6 x 4 grid: N_out lanes x even (row 0),
    # S_out lanes x odd (row 3), W_out lanes y even (column 0), E_out lanes y odd (column 5).
    emulator.reset()
    assert emulator.step() == Edges(n=0b010101, e=0b1010, s=0b101010, w=0b0101)


def test_inverter_cells_alternate_by_phase():
    """With constant-1 LUTs on odd cells and zero LUTs on even ones, the even cells never
    change and the odd cells switch on in subcycle 1, not in subcycle 0."""
    config = Configuration(4, 4)
    odd = parity_mask(4, 4, 1)
    for y in range(4):
        for x in range(4):
            if odd[y, x]:
                config[x, y] = ALL_ONES
    emulator = Emulator(config)
    emulator.step(Edges(0xF, 0xF, 0xF, 0xF))
    assert not emulator.outputs.any()
    emulator.step()
    assert np.array_equal(emulator.outputs[0], odd.astype(np.uint8))


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


def test_edge_input_is_used_in_its_own_step_only():
    """Reflector cells echo each input on its own side, so N_out[x] is N_in[x] as sampled by
    cell (x, 0) in its last update. An input held for a single step reaches exactly the lanes
    of that step's phase, in that step, and is neither latched early nor late."""
    width, height = 8, 4
    emulator = Emulator(fill(width, height, REFLECTOR))
    zero = Edges()
    ones = Edges(0xFF, 0xF, 0xFF, 0xF)
    assert emulator.step(zero) == zero                       # t=0, phase A
    assert emulator.step(ones) == Edges(n=0b10101010, e=0b0101, s=0b01010101, w=0b1010)  # t=1
    assert emulator.step(zero) == Edges(n=0b10101010, e=0b0101, s=0b01010101, w=0b1010)  # t=2
    assert emulator.step(zero) == zero                       # t=3: odd lanes read 0 again
    assert emulator.step(ones) == Edges(n=0b01010101, e=0b1010, s=0b10101010, w=0b0101)  # t=4
    assert emulator.step(ones) == Edges(0xFF, 0xF, 0xFF, 0xF)
    # interior cells never change: reflectors only echo their own inputs
    assert not emulator.outputs[:, 1:-1, 1:-1].any()


@pytest.mark.parametrize("y0", [2, 3])
def test_signal_moves_one_cell_per_subcycle_west_to_east(y0):
    """A 1 held on W_in[y0] travels east through pass-through cells: after step t exactly the
    cells x <= t - first of row y0 have output E = 1, where first is 0 if (0, y0) is even
    and 1 otherwise; E_out[y0] rises after W (+1) subcycles."""
    width, height = 10, 6
    emulator = Emulator(fill(width, height, PASS_THROUGH))
    first = y0 % 2
    for t in range(width + 3):
        out = emulator.step(Edges(w=1 << y0))
        reached = np.array([x <= t - first for x in range(width)], dtype=np.uint8)
        assert np.array_equal(emulator.outputs[1, y0], reached), t
        others = np.delete(emulator.outputs, y0, axis=1)
        assert not others.any()                    # nothing leaks into other rows
        assert not emulator.outputs[[0, 2, 3]].any()   # nor into other directions
        assert out.e == ((1 << y0) if t >= width - 1 + first else 0)
        assert (out.n, out.s, out.w) == (0, 0, 0)


def test_signal_moves_north_to_south_and_pulses():
    """A one-step pulse on N_in[x0] moves south one cell per subcycle and, since a cell holds
    its output for two subcycles, reaches S_out[x0] for two consecutive steps."""
    width, height = 4, 8
    x0 = 2                                   # (2, 0) is even: it takes the pulse at t = 0
    emulator = Emulator(fill(width, height, PASS_THROUGH))
    seen = []
    for t in range(height + 4):
        out = emulator.step(Edges(n=1 << x0) if t == 0 else Edges())
        seen.append(out.s)
        column = emulator.outputs[2, :, x0]
        expected = [1 if t - 1 <= y <= t else 0 for y in range(height)]
        assert list(column) == expected, t
    assert seen == [0] * (height - 1) + [1 << x0, 1 << x0] + [0] * 3


def test_signal_both_directions_through_the_same_cells():
    """Pass-through cells carry E-W and W-E traffic on the same row independently."""
    width, height = 6, 2
    emulator = Emulator(fill(width, height, PASS_THROUGH))
    outs = [emulator.step(Edges(e=0b01, w=0b01)) for _ in range(width + 1)]
    # row 0: (0,0) is even and gets W_in at t=0; (5,0) is odd and gets E_in at t=1.
    assert [o.e & 1 for o in outs] == [0] * (width - 1) + [1, 1]
    assert [o.w & 1 for o in outs] == [0] * width + [1]


# Input handling and the rest of the API.

def test_edge_words_beyond_lane_count_rejected():
    emulator = Emulator(Configuration.random(4, 2, seed=3))
    emulator.step(Edges(0xF, 0x3, 0xF, 0x3))          # the widest legal words
    state = emulator.outputs.copy()
    for edges, side, text in [(Edges(n=0x10), "N", "0x10"), (Edges(s=0x1F), "S", "0x1f"),
                              (Edges(e=0x4), "E", "0x4"), (Edges(w=0x7), "W", "0x7")]:
        with pytest.raises(ValueError) as info:
            emulator.step(edges)
        lanes = 4 if side in "NS" else 2
        assert str(info.value) == (f"Edge input {side}={text} has bits beyond its {lanes} "
                                   "lanes")
    with pytest.raises(ValueError, match="has bits beyond"):
        emulator.step(Edges(n=-1))
    assert emulator.subcycle == 1                     # failed steps change nothing
    assert np.array_equal(emulator.outputs, state)


def test_edges_coerce_forms():
    assert Edges.coerce(None) == Edges(0, 0, 0, 0)
    assert Edges.coerce({"N": "0x3", "w": 5}) == Edges(n=3, w=5)
    assert Edges.coerce((1, "0xa", [1, 0, 1], np.int64(2))) == Edges(1, 10, 5, 2)
    e = Edges(1, 2, 3, 4)
    assert Edges.coerce(e) is e
    assert e.lanes("S", 4) == [1, 1, 0, 0]
    with pytest.raises(ValueError, match="unknown"):
        Edges.coerce({"X": 1})
    emulator_a = Emulator(Configuration.random(4, 4, seed=8))
    emulator_b = Emulator(Configuration.random(4, 4, seed=8))
    assert (emulator_a.step({"n": "0x5", "e": "0x3"})
            == emulator_b.step(Edges(n=5, e=3, s=0, w=0)))


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


def test_config_is_copied_and_load_keeps_state():
    config = fill(4, 2, ALL_ONES)
    emulator = Emulator(config)
    config[0, 0] = (0, 0, 0, 0)                 # does not reach the emulator
    emulator.step()
    assert emulator.outputs[:, 0, 0].all()
    emulator.load(fill(4, 2, (0, 0, 0, 0)))
    assert emulator.subcycle == 1 and emulator.outputs[:, 0, 0].all()
    emulator.step()                             # odd cells compute 0 now
    assert emulator.outputs[:, 0, 0].all() and not emulator.outputs[:, 0, 1].any()
    with pytest.raises(ValueError, match="Configuration is 2 x 2, the emulator is 4 x 2"):
        emulator.load(Configuration(2, 2))
    with pytest.raises(TypeError, match="Emulator needs a Configuration"):
        Emulator(np.zeros((2, 2, 4)))


def test_run_equals_steps():
    config = Configuration.random(6, 6, seed=12)
    rng = random.Random(12)
    inputs = [random_edges(rng, 6, 6) for _ in range(20)]
    a, b = Emulator(config), Emulator(config)
    assert a.run(inputs) == [b.step(e) for e in inputs]
    assert np.array_equal(a.outputs, b.outputs)


# Differential test against SimpleGrid.

@pytest.mark.parametrize("width, height, seed", [
    (2, 2, 101), (4, 2, 102), (2, 6, 103), (6, 4, 104), (8, 8, 105), (10, 4, 106)])
def test_random_differential(width, height, seed):
    rng = random.Random(seed)
    config = Configuration(width, height)
    for y in range(height):
        for x in range(width):
            # mix fully random cells with the structured ones of SPEC's table and walls
            kind = rng.random()
            if kind < 0.1:
                config[x, y] = (0, 0, 0, 0)
            elif kind < 0.25:
                config[x, y] = PASS_THROUGH
            elif kind < 0.35:
                config[x, y] = REFLECTOR
            else:
                config[x, y] = tuple(rng.getrandbits(16) for _ in range(4))
    emulator, simple = Emulator(config), SimpleGrid(config)
    changed = 0
    for t in range(60):
        edges = random_edges(rng, width, height)
        expected = simple.step(*edges)
        actual = emulator.step(edges)
        assert tuple(actual) == expected, f"step {t}"
        assert np.array_equal(emulator.outputs, simple.planes()), f"step {t}"
        changed += int(simple.planes().any())
    assert changed > 0
    assert emulator.subcycle == 60


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


def test_edges_coerce_needs_four_words():
    with pytest.raises(ValueError, match="4 words"):
        Edges.coerce((1, 2))
