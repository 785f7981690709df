"""The emulator contract (SPEC sections 2 to 4, and 8 for the mesh): every emulator runs the same
cases, parametrised over the implementation, in the manner of Amaranth's ``test_lib_fifo.py``.

Implementations: the reference :class:`bitgrid.Emulator`, the bit-parallel
:class:`bitgrid.fastemu.FastEmulator` (its default: the compiled kernel where numba is
installed; the compiled kernel on two threads; its numpy code, with its default plan and with
tiny row blocks over two threads),
and :class:`bitgrid.mesh.MeshEmulator` in several mesh shapes (each only on the grids it splits
into equal even tiles). The cases: every shared conformance case step by step, random programs
compared cycle by cycle (edges and every cell's outputs) with :class:`SimpleGrid`, an
independent per-cell model written below from the SPEC text, the timing properties of the SPEC,
and the API they share (edge input forms, lane checks, reset, run). What only one emulator has
(the reference's ``inputs`` planes and writable state, the fast emulator's streams and block
plans, the mesh's link traffic) is tested in ``test_emulator.py``, ``test_fastemu.py`` and
``test_mesh_slice.py``.
"""

import random
import typing

import numpy as np
import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid.cell import PASS_THROUGH, REFLECTOR
from bitgrid.fastemu import FastEmulator
from bitgrid.mesh import MeshEmulator, MeshShape
from bitgrid.terms import DIRECTIONS, SIDES, parity, side_lanes
from bitgrid.vectors import compare_step, format_mismatches
from support.conformance import conformance_cases, load_conformance

ALL_ONES = (0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF)


class Implementation(typing.NamedTuple):
    name: str
    build: typing.Callable            # Configuration -> emulator
    fits: typing.Callable             # (width, height) -> bool
    loads: bool = False               # has load() and a config attribute


def _always(width, height):
    return True


def _mesh(shape):
    shape = MeshShape.parse(shape)

    def fits(width, height):
        try:
            shape.tile_size(width, height)
        except ValueError:
            return False
        return True

    return Implementation(f"mesh-{shape}", lambda config: MeshEmulator(config, shape), fits)


IMPLEMENTATIONS = [
    Implementation("reference", Emulator, _always, loads=True),
    Implementation("fast", FastEmulator, _always, loads=True),
    Implementation("fast-blocks", lambda config: FastEmulator(config, chunk_words=2, threads=2),
                   _always, loads=True),
    Implementation("fast-numpy", lambda config: FastEmulator(config, kernel=False), _always,
                   loads=True),
    Implementation("kernel-threads", lambda config: FastEmulator(config, kernel=True, threads=2),
                   _always, loads=True),
    *(_mesh(shape) for shape in ("2x1", "1x2", "2x2", "4x1", "1x4", "3x3", "4x4")),
]

#: A size every implementation takes (tiles of 12, 8 or 6 cells for the mesh shapes above).
SIZE = (24, 24)


def implementations(*, loads=False):
    return [pytest.param(impl, id=impl.name) for impl in IMPLEMENTATIONS
            if impl.loads or not loads]


def sized(cases, size_of):
    """``(impl, case)`` parameters for every implementation that takes the case's size."""
    return [pytest.param(impl, case, id=f"{impl.name}-{case}") for case in cases
            for impl in IMPLEMENTATIONS if impl.fits(*size_of(case))]


def random_edges(rng, width, height):
    return Edges(*(rng.getrandbits(side_lanes(side, width, height)) for side in DIRECTIONS))


def fill(width, height, tables):
    return Configuration(width, height, np.broadcast_to(np.array(tables, np.uint16),
                                                        (height, width, 4)))


def parity_mask(width, height, p):
    return np.array([[parity(x, y) == p for x in range(width)] for y in range(height)])


class SimpleGrid:
    """SPEC sections 2-4, one cell at a time, in plain Python (no numpy, no shared code).

    ``out[y][x][d]`` is output d of cell (x, y). The N input of (x, y) is the S output of
    (x, y-1), or lane x of the N edge input on row 0; and so on for E, S, W. Subcycle t updates
    the cells with (x + y) % 2 == t % 2 from the state before the subcycle; all of them commit
    together.
    """

    def __init__(self, config):
        self.w, self.h = config.width, config.height
        self.luts = [[config[x, y] for x in range(self.w)] for y in range(self.h)]
        self.out = [[[0, 0, 0, 0] for _ in range(self.w)] for _ in range(self.h)]
        self.t = 0

    def cell_inputs(self, x, y, edges):
        n_in, e_in, s_in, w_in = edges
        n = self.out[y - 1][x][2] if y > 0 else (n_in >> x) & 1
        e = self.out[y][x + 1][3] if x < self.w - 1 else (e_in >> y) & 1
        s = self.out[y + 1][x][0] if y < self.h - 1 else (s_in >> x) & 1
        w = self.out[y][x - 1][1] if x > 0 else (w_in >> y) & 1
        return n, e, s, w

    def step(self, edges):
        new = {}
        for y in range(self.h):
            for x in range(self.w):
                if (x + y) % 2 != self.t % 2:
                    continue
                n, e, s, w = self.cell_inputs(x, y, edges)
                a = n + 2 * e + 4 * s + 8 * w
                new[x, y] = [(self.luts[y][x][d] >> a) & 1 for d in range(4)]
        for (x, y), outs in new.items():
            self.out[y][x] = outs
        self.t += 1
        return Edges(sum(self.out[0][x][0] << x for x in range(self.w)),
                     sum(self.out[y][self.w - 1][1] << y for y in range(self.h)),
                     sum(self.out[self.h - 1][x][2] << x for x in range(self.w)),
                     sum(self.out[y][0][3] << y for y in range(self.h)))

    def planes(self):
        return np.array([[[self.out[y][x][d] for x in range(self.w)] for y in range(self.h)]
                         for d in range(4)], dtype=np.uint8)


# --- Conformance: every shared case, step by step --------------------------------------------

def _case_size(name):
    case = load_conformance(name)
    return case.width, case.height


CONFORMANCE = sized(conformance_cases(), _case_size)


def test_every_implementation_runs_conformance_cases():
    """No implementation is left out of the conformance cases (a mesh shape that split none of
    them would otherwise pass by running nothing)."""
    counts = {impl.name: 0 for impl in IMPLEMENTATIONS}
    for param in CONFORMANCE:
        counts[param.values[0].name] += 1
    # No shared case splits into 3 x 3 even tiles: that shape runs the random programs only.
    counts.pop("mesh-3x3")
    assert min(counts.values()) >= 2, counts
    assert counts["reference"] == len(conformance_cases())


@pytest.mark.parametrize("impl, name", CONFORMANCE)
def test_conformance_case(impl, name):
    case = load_conformance(name)
    assert hasattr(case, "steps"), f"{name} is not a bitgrid-vectors-v1 case"
    assert len(case.steps) > 0
    config = case.load_bitstream().config
    emulator, model = impl.build(config), SimpleGrid(config)
    for t, (inputs, expected) in enumerate(case.steps):
        assert (emulator.subcycle, emulator.phase) == (t, t % 2)
        actual = emulator.step(inputs)
        if actual != expected:
            mismatches = compare_step(t, expected, actual, case.width, case.height)
            pytest.fail(f"{name} on {impl.name}: step {t} differs:\n"
                        f"{format_mismatches(mismatches)}")
        assert emulator.edge_outputs() == expected
        model.step(inputs)
    assert emulator.subcycle == len(case.steps)
    assert np.array_equal(emulator.outputs, model.planes())


@pytest.mark.parametrize("impl, name", sized(["random_8x8", "adder8"], _case_size))
def test_run_equals_the_case(impl, name):
    case = load_conformance(name)
    assert impl.build(case.load_bitstream().config).run(case.inputs) == case.outputs


@pytest.mark.parametrize("impl, name", sized(["adder8"], _case_size))
def test_adder8_adds(impl, name):
    """The functional claim of adder8: after each 12-step window, E_out lanes 0..7 show
    (a + b) mod 256 for the a on W lanes and b on E lanes."""
    case = load_conformance(name)
    outputs = impl.build(case.load_bitstream().config).run(case.inputs)
    windows = 0
    for t in range(11, len(case.steps), 12):
        inputs = case.steps[t][0]
        a, b = inputs.w & 0xFF, inputs.e & 0xFF
        assert outputs[t].e & 0xFF == (a + b) % 256
        windows += 1
    assert windows == 14


# --- Random programs against the independent model -------------------------------------------

RANDOM_SIZES = [(2, 2), (4, 2), (2, 6), (6, 4), (8, 8), (10, 4), (12, 12), (16, 8), (4, 16),
                (24, 12), (24, 16)]


def mixed_config(width, height, rng):
    """Random LUTs mixed with the structured cells of SPEC's table: walls (all zero),
    pass-through and reflector cells."""
    config = Configuration(width, height)
    for y in range(height):
        for x in range(width):
            kind = rng.random()
            if kind < 0.1:
                config[x, y] = (0, 0, 0, 0)
            elif kind < 0.25:
                config[x, y] = PASS_THROUGH
            elif kind < 0.35:
                config[x, y] = REFLECTOR
            else:
                config[x, y] = tuple(rng.getrandbits(16) for _ in range(4))
    return config


def test_every_implementation_runs_random_programs():
    counts = {impl.name: sum(impl.fits(*size) for size in RANDOM_SIZES)
              for impl in IMPLEMENTATIONS}
    assert min(counts.values()) >= 2, counts


@pytest.mark.parametrize("impl, size", sized(RANDOM_SIZES, lambda size: size))
def test_random_program(impl, size):
    width, height = size
    rng = random.Random(f"{width}x{height}")
    config = mixed_config(width, height, rng)
    emulator, model = impl.build(config), SimpleGrid(config)
    changed = 0
    for t in range(3 * (width + height) + 20):
        edges = random_edges(rng, width, height)
        assert emulator.step(edges) == model.step(edges), f"step {t}"
        assert np.array_equal(emulator.outputs, model.planes()), f"step {t}"
        changed += int(model.planes().any())
    assert changed > 0
    assert emulator.subcycle == model.t


# --- SPEC timing properties --------------------------------------------------------------------

@pytest.mark.parametrize("impl", implementations())
def test_reset_state(impl):
    width, height = SIZE
    emulator = impl.build(Configuration.random(width, height, seed=1))
    assert emulator.outputs.shape == (4, height, width)
    assert emulator.outputs.dtype == np.uint8
    assert not emulator.outputs.any()
    assert (emulator.subcycle, emulator.phase) == (0, 0)
    assert emulator.edge_outputs() == Edges(0, 0, 0, 0)
    rng = random.Random(1)
    for _ in range(7):
        emulator.step(random_edges(rng, width, height))
    assert emulator.outputs.any()
    assert (emulator.subcycle, emulator.phase) == (7, 1)
    emulator.reset()
    assert not emulator.outputs.any()
    assert (emulator.subcycle, emulator.phase) == (0, 0)
    assert emulator.edge_outputs() == Edges(0, 0, 0, 0)


@pytest.mark.parametrize("impl", implementations())
def test_phase_order(impl):
    """All-ones LUTs: subcycle 0 sets exactly the even cells, subcycle 1 the odd ones."""
    width, height = SIZE
    emulator = impl.build(fill(width, height, ALL_ONES))
    even = parity_mask(width, height, 0)
    first = emulator.step()
    for d in range(4):
        assert np.array_equal(emulator.outputs[d], even.astype(np.uint8))
    assert emulator.phase == 1
    # After subcycle 0: N lanes x even (row 0), S lanes x odd (row 23), W lanes y even
    # (column 0), E lanes y odd (column 23).
    evens, odds = int("01" * 12, 2), int("10" * 12, 2)
    assert first == Edges(n=evens, e=odds, s=odds, w=evens)
    emulator.step()
    assert emulator.outputs.all()


@pytest.mark.parametrize("impl", implementations())
def test_inverter_cells_alternate_by_phase(impl):
    """With constant-1 LUTs on odd cells and zero LUTs on even ones, the even cells never
    change and the odd cells switch on in subcycle 1, not in subcycle 0."""
    width, height = SIZE
    odd = parity_mask(width, height, 1)
    luts = np.zeros((height, width, 4), np.uint16)
    luts[odd] = ALL_ONES
    emulator = impl.build(Configuration(width, height, luts))
    emulator.step(Edges(*((1 << side_lanes(s, width, height)) - 1 for s in SIDES)))
    assert not emulator.outputs.any()
    emulator.step()
    assert np.array_equal(emulator.outputs[0], odd.astype(np.uint8))


@pytest.mark.parametrize("impl", implementations())
def test_edge_input_is_used_in_its_own_step_only(impl):
    """Reflector cells echo each input on its own side, so N_out[x] is N_in[x] as sampled by
    cell (x, 0) in its last update. An input held for a single step reaches exactly the lanes
    of that step's phase, in that step, and is neither latched early nor late."""
    width, height = SIZE
    emulator = impl.build(fill(width, height, REFLECTOR))
    full = (1 << width) - 1
    evens, odds = int("01" * 12, 2), int("10" * 12, 2)
    zero, ones = Edges(), Edges(full, full, full, full)
    assert emulator.step(zero) == zero                                     # t=0, phase A
    assert emulator.step(ones) == Edges(n=odds, e=evens, s=evens, w=odds)  # t=1
    assert emulator.step(zero) == Edges(n=odds, e=evens, s=evens, w=odds)  # t=2
    assert emulator.step(zero) == zero                          # t=3: odd lanes read 0 again
    assert emulator.step(ones) == Edges(n=evens, e=odds, s=odds, w=evens)  # t=4
    assert emulator.step(ones) == ones
    # interior cells never change: reflectors only echo their own inputs
    assert not emulator.outputs[:, 1:-1, 1:-1].any()


@pytest.mark.parametrize("impl", implementations())
@pytest.mark.parametrize("y0", [2, 3])
def test_signal_moves_one_cell_per_subcycle_west_to_east(impl, y0):
    """A 1 held on W_in[y0] travels east through pass-through cells: after step t exactly the
    cells x <= t - first of row y0 have output E = 1, where first is 0 if (0, y0) is even
    and 1 otherwise; E_out[y0] rises after W (+1) subcycles."""
    width, height = SIZE
    emulator = impl.build(fill(width, height, PASS_THROUGH))
    first = y0 % 2
    for t in range(width + 3):
        out = emulator.step(Edges(w=1 << y0))
        outputs = emulator.outputs
        reached = np.array([x <= t - first for x in range(width)], dtype=np.uint8)
        assert np.array_equal(outputs[1, y0], reached), t
        assert not np.delete(outputs, y0, axis=1).any()     # nothing leaks into other rows
        assert not outputs[[0, 2, 3]].any()                 # nor into other directions
        assert out.e == ((1 << y0) if t >= width - 1 + first else 0)
        assert (out.n, out.s, out.w) == (0, 0, 0)


@pytest.mark.parametrize("impl", implementations())
def test_signal_moves_north_to_south_and_pulses(impl):
    """A one-step pulse on N_in[x0] moves south one cell per subcycle and, since a cell holds
    its output for two subcycles, reaches S_out[x0] for two consecutive steps."""
    width, height = SIZE
    x0 = 2                                   # (2, 0) is even: it takes the pulse at t = 0
    emulator = impl.build(fill(width, height, PASS_THROUGH))
    seen = []
    for t in range(height + 4):
        out = emulator.step(Edges(n=1 << x0) if t == 0 else Edges())
        seen.append(out.s)
        expected = [1 if t - 1 <= y <= t else 0 for y in range(height)]
        assert list(emulator.outputs[2, :, x0]) == expected, t
    assert seen == [0] * (height - 1) + [1 << x0, 1 << x0] + [0] * 3


@pytest.mark.parametrize("impl", implementations())
def test_signal_both_directions_through_the_same_cells(impl):
    """Pass-through cells carry E-W and W-E traffic on the same row independently."""
    width, height = SIZE
    emulator = impl.build(fill(width, height, PASS_THROUGH))
    outs = [emulator.step(Edges(e=0b01, w=0b01)) for _ in range(width + 1)]
    # row 0: (0, 0) is even and gets W_in at t=0; (23, 0) is odd and gets E_in at t=1.
    assert [o.e & 1 for o in outs] == [0] * (width - 1) + [1, 1]
    assert [o.w & 1 for o in outs] == [0] * width + [1]


# --- The shared API ----------------------------------------------------------------------------

@pytest.mark.parametrize("impl", implementations())
def test_edge_input_forms(impl):
    """Every form :meth:`Edges.coerce` takes steps the same as the equivalent Edges."""
    width, height = SIZE
    config = Configuration.random(width, height, seed=8)
    a, b = impl.build(config), impl.build(config)
    assert a.step({"n": "0x5", "E": "0x3"}) == b.step(Edges(n=5, e=3, s=0, w=0))
    assert a.step(None) == b.step((0, 0, 0, 0))
    assert a.step([[1, 0, 1, 1], 0, "0xf", np.int64(2)]) == b.step(Edges(13, 0, 15, 2))
    assert np.array_equal(a.outputs, b.outputs)


@pytest.mark.parametrize("impl", implementations())
def test_edge_words_beyond_lane_count_rejected(impl):
    """A word wider than its side is refused with the reference's message; a failed step
    changes nothing."""
    width, height = SIZE
    emulator = impl.build(Configuration.random(width, height, seed=3))
    full = (1 << width) - 1
    emulator.step(Edges(full, full, full, full))                 # the widest legal words
    state, edges_now = emulator.outputs, emulator.edge_outputs()
    for edges, text in [(Edges(n=1 << 24), "N=0x1000000"), (Edges(s=-1), "S=0x-1"),
                        (Edges(e=full + 1), "E=0x1000000"), (Edges(w=1 << 30), "W=0x40000000")]:
        with pytest.raises(ValueError) as info:
            emulator.step(edges)
        assert str(info.value) == f"Edge input {text} has bits beyond its 24 lanes"
    assert emulator.subcycle == 1
    assert np.array_equal(emulator.outputs, state)
    assert emulator.edge_outputs() == edges_now


@pytest.mark.parametrize("impl", implementations())
def test_run_equals_steps(impl):
    width, height = SIZE
    config = Configuration.random(width, height, seed=12)
    rng = random.Random(12)
    inputs = [random_edges(rng, width, height) for _ in range(20)]
    a, b = impl.build(config), impl.build(config)
    assert a.run(inputs) == [b.step(e) for e in inputs]
    assert np.array_equal(a.outputs, b.outputs)
    assert a.subcycle == b.subcycle == 20


@pytest.mark.parametrize("impl", implementations(loads=True))
def test_config_is_copied_and_load_keeps_state(impl):
    config = fill(4, 2, ALL_ONES)
    emulator = impl.build(config)
    config[0, 0] = (0, 0, 0, 0)                 # does not reach the emulator
    emulator.step()
    assert emulator.outputs[:, 0, 0].all()
    assert emulator.config[0, 0] == ALL_ONES
    emulator.load(fill(4, 2, (0, 0, 0, 0)))
    assert emulator.subcycle == 1 and emulator.outputs[:, 0, 0].all()
    emulator.step()                             # odd cells compute 0 now
    assert emulator.outputs[:, 0, 0].all() and not emulator.outputs[:, 0, 1].any()
    with pytest.raises(ValueError) as info:
        emulator.load(Configuration(2, 2))
    assert str(info.value) == "Configuration is 2 x 2, the emulator is 4 x 2"


@pytest.mark.parametrize("impl", implementations())
def test_needs_a_configuration(impl):
    with pytest.raises(TypeError, match=r"^(Fast|Mesh)?Emulator needs a Configuration"):
        impl.build(np.zeros((2, 2, 4)))
