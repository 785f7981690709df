"""bitgrid.transform: the LUT address permutation on all 16 addresses and all 24 side maps,
the composition rules on random configurations, every conformance case transformed and run on
its transformed vectors (lanes re-indexed here from the geometry, independently of the code
under test), port maps moved with their programs, and the refusals."""

import itertools
import random

import numpy as np
import pytest

from bitgrid import transform as tf
from bitgrid.config import Configuration
from bitgrid.emulator import Emulator
from bitgrid.evaluate import evaluate
from bitgrid.ports import PortMap
from bitgrid.program import Program
from bitgrid.terms import DIRECTIONS, E, Edges, N, S, W
from support import port_programs
from support.conformance import conformance_cases, load_conformance

#: The transforms of the module docstring, as (keyword arguments, does it swap parity).
TRANSFORMS = [({"rotate": 90}, True), ({"rotate": 180}, False), ({"rotate": 270}, True),
              ({"mirror": "x"}, True), ({"mirror": "y"}, True)]


# Independent geometry: where a boundary lane goes, straight from the definitions -------------

def lane_map(kind, value, width, height):
    """``f(side, lane) -> (side, lane)`` for a rotation or mirror of a width x height grid,
    written out per side from the cell maps of the module docstring."""
    if kind == "rotate" and value == 90:        # (x, y) -> (H-1-y, x): N->E, E->S, S->W, W->N
        table = {N: lambda i: (E, i), E: lambda i: (S, height - 1 - i),
                 S: lambda i: (W, i), W: lambda i: (N, height - 1 - i)}
    elif kind == "rotate" and value == 180:
        table = {N: lambda i: (S, width - 1 - i), S: lambda i: (N, width - 1 - i),
                 E: lambda i: (W, height - 1 - i), W: lambda i: (E, height - 1 - i)}
    elif kind == "rotate":                      # 270: (x, y) -> (y, W-1-x): N->W, W->S ...
        table = {N: lambda i: (W, width - 1 - i), W: lambda i: (S, i),
                 S: lambda i: (E, width - 1 - i), E: lambda i: (N, i)}
    elif value == "x":                          # (x, y) -> (W-1-x, y)
        table = {N: lambda i: (N, width - 1 - i), S: lambda i: (S, width - 1 - i),
                 E: lambda i: (W, i), W: lambda i: (E, i)}
    else:                                       # (x, y) -> (x, H-1-y)
        table = {N: lambda i: (S, i), S: lambda i: (N, i),
                 E: lambda i: (E, height - 1 - i), W: lambda i: (W, height - 1 - i)}
    return lambda side, lane: table[side](lane)


def map_edges(edges, mapping, lanes):
    words = [0, 0, 0, 0]
    for side in DIRECTIONS:
        for lane in range(lanes[side]):
            if edges[side] >> lane & 1:
                new_side, new_lane = mapping(side, lane)
                words[new_side] |= 1 << new_lane
    return Edges(*words)


def odd_cell_wakes_up(config):
    """Whether some odd-parity cell outputs 1 for all-zero inputs (then one subcycle of delay
    cannot re-time a parity swap)."""
    for y in range(config.height):
        for x in range(config.width):
            if (x + y) % 2 and any(t & 1 for t in config[x, y]):
                return True
    return False


# LUTs -----------------------------------------------------------------------------------------

def new_address(a, sides):
    """Address of the transformed cell for old address ``a``: the input now on side
    ``sides[k]`` carries what input ``k`` did."""
    bits = {d: (a >> d) & 1 for d in DIRECTIONS}
    return sum(bits[d] << sides[d] for d in DIRECTIONS)


@pytest.mark.parametrize("sides", list(itertools.permutations(DIRECTIONS)),
                         ids=lambda s: "".join(d.letter for d in s))
def test_lut_address_permutation_on_every_address(sides):
    for a in range(16):
        assert tf.permute_lut(1 << a, sides) == 1 << new_address(a, sides)
    # A LUT is the OR of its minterms.
    rng = random.Random(hash(sides) & 0xFFFF)
    for lut in [rng.randrange(1 << 16) for _ in range(20)]:
        expected = sum(1 << new_address(a, sides) for a in range(16) if lut >> a & 1)
        assert tf.permute_lut(lut, sides) == expected


def test_copy_luts_follow_their_side():
    # SPEC section 3: copy N/E/S/W are 0xAAAA / 0xCCCC / 0xF0F0 / 0xFF00.
    copy = {N: 0xAAAA, E: 0xCCCC, S: 0xF0F0, W: 0xFF00}
    rot90 = tf.rotate(90, 4, 4).sides
    assert [tf.permute_lut(copy[d], rot90) for d in (N, E, S, W)] == \
        [copy[E], copy[S], copy[W], copy[N]]
    mirror_x = tf.mirror("x", 4, 4).sides
    assert [tf.permute_lut(copy[d], mirror_x) for d in (N, E, S, W)] == \
        [copy[N], copy[W], copy[S], copy[E]]
    # N xor W (0x55AA ^ ... computed from the copies) rotated by 90 becomes E xor N.
    assert tf.permute_lut(copy[N] ^ copy[W], rot90) == copy[E] ^ copy[N]


@pytest.mark.parametrize("kwargs", [k for k, _ in TRANSFORMS], ids=str)
def test_pass_through_and_reflector_are_symmetric(kwargs):
    # SPEC section 3 reference tables: both cells look the same from every side.
    (kind, value), = kwargs.items()
    geometry = getattr(tf, kind)(value, 4, 4)
    for tables in [(0xF0F0, 0xFF00, 0xAAAA, 0xCCCC), (0xAAAA, 0xCCCC, 0xF0F0, 0xFF00)]:
        assert tf.permute_tables(tables, geometry.sides) == tables


# Composition ----------------------------------------------------------------------------------

def apply(config, kind, *args, **kwargs):
    geometry = getattr(tf, kind)(*args, config.width, config.height, **kwargs)
    return tf.transform_config(config, geometry)


@pytest.mark.parametrize("size", [(2, 2), (8, 8), (8, 4), (6, 10)])
def test_composition_rules(size):
    for seed in range(5):
        config = Configuration.random(*size, seed=seed)
        r90 = apply(config, "rotate", 90)
        assert (r90.width, r90.height) == (size[1], size[0])
        four = config
        for _ in range(4):
            four = apply(four, "rotate", 90)
        assert four == config
        assert apply(r90, "rotate", 270) == config
        assert apply(r90, "rotate", 90) == apply(config, "rotate", 180)
        assert apply(apply(config, "mirror", "x"), "mirror", "x") == config
        assert apply(apply(config, "mirror", "y"), "mirror", "y") == config
        assert apply(apply(config, "mirror", "x"), "mirror", "y") == apply(config, "rotate",
                                                                             180)
        # mirror x then rotate 90 is the transpose: mirror y after rotating 90 the other way
        assert apply(apply(config, "mirror", "x"), "rotate", 90) == \
            apply(apply(config, "rotate", 270), "mirror", "x")


def test_move_there_and_back():
    config = Configuration.random(8, 6, seed=4)
    moved = apply(config, "move", 3, 2, new_width=12, new_height=8)
    assert moved.luts[2:8, 3:11].tolist() == config.luts.tolist()
    assert int((moved.luts != 0).sum()) == int((config.luts != 0).sum())
    back = apply(moved, "move", -3, -2, new_width=8, new_height=6)
    assert back == config


# Conformance cases ----------------------------------------------------------------------------

def run(config, inputs):
    emulator = Emulator(config)
    return [emulator.step(edges) for edges in inputs]


@pytest.mark.parametrize("kwargs, swaps", TRANSFORMS, ids=[str(k) for k, _ in TRANSFORMS])
@pytest.mark.parametrize("name", conformance_cases())
def test_conformance_case_rotated_or_mirrored(name, kwargs, swaps):
    case = load_conformance(name)
    config = case.load_bitstream().config
    width, height = case.width, case.height
    lanes = {N: width, S: width, E: height, W: height}
    (kind, value), = kwargs.items()
    mapping = lane_map(kind, value, width, height)
    if swaps:
        with pytest.raises(tf.TransformError, match="swaps the phase of every cell"):
            tf.transform(config, **kwargs)
        if odd_cell_wakes_up(config):
            with pytest.raises(tf.TransformError, match=r"cannot re-time .* \(odd parity\)"):
                tf.transform(config, retime=True, **kwargs)
            return
    result = tf.transform(config, retime=swaps, **kwargs)
    assert result.latency_added == (1 if swaps else 0)
    inputs = [map_edges(i, mapping, lanes) for i in case.inputs]
    expected = [map_edges(o, mapping, lanes) for o in case.outputs]
    if swaps:       # one subcycle later: an all-zero step first
        inputs, expected = [Edges()] + inputs, [Edges()] + expected
    assert run(result.config, inputs) == expected


def test_some_conformance_cases_are_re_timed():
    # The re-timing path is exercised by real cases, not only refused.
    timed = [name for name in conformance_cases()
             if not odd_cell_wakes_up(load_conformance(name).load_bitstream().config)]
    assert len(timed) >= 3


@pytest.mark.parametrize("name", conformance_cases())
def test_conformance_case_moved(name):
    # Moves into a larger grid: the sides that stay on the edge shift their lanes; a side that
    # leaves the edge is allowed only if the program neither reads nor drives it.
    case = load_conformance(name)
    config = case.load_bitstream().config
    width, height = case.width, case.height
    lanes = {N: width, S: width, E: height, W: height}
    moves = [((0, 2), (width, height + 2)), ((2, 0), (width + 2, height)),
             ((0, 0), (width + 2, height + 2)), ((2, 2), (width + 2, height + 2)),
             ((1, 0), (width + 2, height)), ((0, 1), (width, height + 2))]
    ran = 0
    for (dx, dy), size in moves:
        kept = {N: dy == 0, W: dx == 0, S: dy + height == size[1], E: dx + width == size[0]}
        leaving = [d for d in DIRECTIONS if not kept[d]]
        used = any(_touches(config, d) for d in leaving)
        swaps = (dx + dy) % 2 == 1
        if used or swaps and odd_cell_wakes_up(config):
            with pytest.raises(tf.TransformError):
                tf.transform(config, move=(dx, dy), size=size, retime=True)
            continue
        result = tf.transform(config, move=(dx, dy), size=size, retime=True)

        def mapping(side, lane):
            return side, lane + (dx if side in (N, S) else dy)

        def keep(edges):
            return Edges(*[edges[d] if kept[d] else 0 for d in DIRECTIONS])

        # The sides that leave were never driven (their outputs in the case are all 0).
        assert all(o[d] == 0 for o in case.outputs for d in leaving)
        inputs = [map_edges(keep(i), mapping, lanes) for i in case.inputs]
        expected = [map_edges(keep(o), mapping, lanes) for o in case.outputs]
        if swaps:
            inputs, expected = [Edges()] + inputs, [Edges()] + expected
        assert run(result.config, inputs) == expected
        ran += 1
    if name in ("identity_we_9lane", "edge_io_hello"):
        assert ran >= 2


def _touches(config, side):
    """Whether a boundary cell of ``side`` reads that side's input or drives its output."""
    w, h = config.width, config.height
    cells = {N: [(x, 0) for x in range(w)], S: [(x, h - 1) for x in range(w)],
             W: [(0, y) for y in range(h)], E: [(w - 1, y) for y in range(h)]}[side]
    for x, y in cells:
        tables = config[x, y]
        if tables[side]:
            return True
        for lut in tables:          # does the LUT change when input `side` flips?
            if any((lut >> a & 1) != (lut >> (a ^ (1 << side)) & 1) for a in range(16)):
                return True
    return False


# Port maps ------------------------------------------------------------------------------------

BUILDERS = [port_programs.skewed_routes, port_programs.signed_routes, port_programs.xor_loop,
            port_programs.odd_lanes]


@pytest.mark.parametrize("kwargs, swaps", TRANSFORMS, ids=[str(k) for k, _ in TRANSFORMS])
@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_port_map_moves_with_the_program(builder, kwargs, swaps):
    config, portmap, model = builder()
    rng = random.Random(7)
    rows = [{p.name: rng.randint(p.minimum, p.maximum) for p in portmap.inputs}
            for _ in range(24)]
    result = tf.transform(config, portmap, retime=True, **kwargs)
    assert result.portmap.latency == portmap.latency + (1 if swaps else 0)
    assert evaluate(result.config, result.portmap, rows) == model(rows)


def test_rotated_port_lanes_by_hand():
    # signed_routes (4 x 4): a on W lanes 0..3, r on S lanes 0..3. Rotated by 90 degrees W
    # becomes N with lane 3 - y, S becomes W with the same lane; inputs one subcycle later.
    config, portmap, _ = port_programs.signed_routes()
    result = tf.transform(config, portmap, rotate=90, retime=True)
    a, r = result.portmap["a"], result.portmap["r"]
    assert [(b.side, b.lane, b.skew) for b in a.bits] == [(N, 3 - y, 1) for y in range(4)]
    assert [(b.side, b.lane) for b in r.bits] == [(W, x) for x in range(4)]
    assert [b.skew for b in r.bits] == [b.skew for b in portmap["r"].bits]
    assert result.portmap.latency == portmap.latency + 1


def test_moved_port_map():
    # xor_loop (8 x 8; ports on W, N and E) moved 2 south into 8 x 10 is refused (N side
    # leaves the edge); moved (0, 0) into 8 x 10 (S side leaves, nothing there) is fine.
    config, portmap, model = port_programs.xor_loop()
    with pytest.raises(tf.TransformError, match=r"cell \(1, 0\) drives its output to the N "
                                                r"edge"):
        tf.transform(config, portmap, move=(0, 2), size=(8, 10))
    result = tf.transform(config, portmap, move=(0, 0), size=(8, 10))
    assert result.portmap.height == 10 and result.portmap["e"].bits[0].lane == 3
    rows = [{"t": t, "d": t ^ 1} for t in (1, 1, 0, 1)]
    assert evaluate(result.config, result.portmap, rows) == model(rows)


# Refusals -------------------------------------------------------------------------------------

def test_cell_falling_off_is_named():
    program = Program(4, 4)
    program.cell(3, 1, n=1)
    with pytest.raises(tf.TransformError, match=r"^cell \(3, 1\) would move to \(5, 1\), "
                                                r"outside the 4 x 4 grid"):
        tf.transform(program.config, move=(2, 0))
    # All-zero cells may fall off: columns 2 and 3 here.
    program = Program(4, 4)
    program.cell(1, 1, n=1)
    moved = tf.transform(program.config, move=(2, 0)).config
    assert moved[3, 1] == (0xFFFF, 0, 0, 0)
    assert int((moved.luts != 0).sum()) == 1


def test_port_bit_leaving_the_edge_is_named():
    config, portmap, _ = port_programs.signed_routes()
    ports_only = portmap.replace(ports=[p for p in portmap.ports if p.name in ("a", "q")])
    blank = Configuration(4, 4)
    with pytest.raises(tf.TransformError, match=r"port a bit 0 \(W lane 0\) leaves the "
                                                r"grid's edge under move 2,0"):
        tf.transform(blank, ports_only, move=(2, 0), size=(6, 4))


def test_reading_a_side_that_leaves():
    program = Program(4, 4)
    program.cell(0, 2, e=lambda w: w)          # reads W, W leaves the edge when moved east
    with pytest.raises(tf.TransformError, match=r"cell \(0, 2\) reads its input from the W "
                                                r"edge \(lane 2\), but move 2,0"):
        tf.transform(program.config, move=(2, 0), size=(6, 4))


def test_retime_refused_for_a_cell_that_wakes_up():
    program = Program(4, 4)
    program.cell(2, 1, e=lambda n: not n)        # odd parity, outputs 1 for all-zero inputs
    with pytest.raises(tf.TransformError, match=r"cannot re-time mirror y: cell \(2, 1\) "
                                                r"\(odd parity\) outputs 1 on E"):
        tf.transform(program.config, mirror="y", retime=True)
    # An even cell may: it updates first in the original too.
    program = Program(4, 4)
    program.cell(1, 1, e=lambda n: not n)
    assert tf.transform(program.config, mirror="y", retime=True).latency_added == 1


@pytest.mark.parametrize("kwargs, message", [
    ({}, "Give exactly one of move, rotate and mirror"),
    ({"rotate": 90, "mirror": "x"}, "Give exactly one of move, rotate and mirror, not rotate "
                                    "and mirror"),
    ({"rotate": 45}, "Rotation must be one of 90, 180, 270"),
    ({"mirror": "z"}, "Mirror axis must be one of 'x', 'y'"),
    ({"rotate": 180, "size": (8, 8)}, "A new size goes with a move"),
    ({"move": (1.5, 0)}, "Move dx must be an integer"),
    ({"move": (0, 10 ** 21)}, "Move dy must be an integer from -65534 to 65534"),
    ({"move": (-65535, 0)}, "Move dx must be an integer from -65534 to 65534"),
    ({"move": (0, 0), "size": (3, 4)}, "Grid width must be even"),
])
def test_bad_arguments(kwargs, message):
    config = Configuration(4, 4)
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        tf.transform(config, **kwargs)


def test_largest_moves():
    # An empty program may be moved as far as a grid reaches; a configured cell falls off.
    assert not tf.transform(Configuration(4, 4), move=(65534, -65534)).config.luts.any()
    program = Program(4, 4)
    program.cell(1, 1, e=1)
    with pytest.raises(tf.TransformError, match=r"cell \(1, 1\) would move to \(65535, 1\)"):
        tf.transform(program.config, move=(65534, 0))


def test_transform_edges_matches_the_lane_map():
    # The module's own edge re-indexing (for users' vectors) against the independent map.
    rng = np.random.default_rng(3)
    for (kwargs, _) in TRANSFORMS:
        (kind, value), = kwargs.items()
        geometry = getattr(tf, kind)(value, 8, 6)
        mapping = lane_map(kind, value, 8, 6)
        for _ in range(10):
            edges = Edges(*(int(v) for v in rng.integers(0, 1 << 8, size=4) & [255, 63, 255,
                                                                                 63]))
            assert tf.transform_edges(edges, geometry) == \
                map_edges(edges, mapping, {N: 8, S: 8, E: 6, W: 6})


@pytest.mark.parametrize("offset, size, added", [((0, 2), (8, 8), 0), ((0, 1), (8, 6), 1),
                                                 ((0, 3), (8, 8), 1)])
def test_moved_lanes_by_port_names(offset, size, added):
    # Four W -> E routes of an 8 x 4 grid (both lane parities), stacked lower in a taller
    # grid: the N and S sides leave the edge (nothing there), W and E lanes shift by dy.
    program = Program(8, 4)
    for y in range(4):
        program.route(0, y, "E")
    times = [port_programs.hops(0, y, 8) for y in range(4)]
    portmap = PortMap(8, 4, [
        {"name": "a", "direction": "in", "bits": [{"side": "W", "lane": y} for y in range(4)]},
        {"name": "q", "direction": "out",
         "bits": [{"side": "E", "lane": y, "skew": t - 8} for y, t in enumerate(times)]}],
        latency=8)
    result = tf.transform(program.config, portmap, move=offset, size=size, retime=bool(added))
    assert [b.lane for b in result.portmap["q"].bits] == [offset[1] + y for y in range(4)]
    assert result.portmap.latency == 8 + added
    rows = [{"a": v} for v in (5, 10, 15, 0, 3, 12, 9)]
    assert evaluate(result.config, result.portmap, rows) == [{"q": r["a"]} for r in rows]


def test_vector_steps_refused_where_they_cannot_be_right():
    # A program cropped to a narrower grid: cell (1, 0) now faces the new E edge, which it
    # drives, and the old file says nothing about that lane.
    program = Program(4, 2)
    program.route(0, 0, "E", length=2)
    result = tf.transform(program.config, move=(0, 0), size=(2, 2))
    with pytest.raises(tf.TransformError, match=r"cell \(1, 0\) of the new grid drives E "
                                                r"lane 0, which faces no lane of the old grid"):
        tf.transform_steps([(Edges(), Edges())], result)
    # A file claiming an output the program cannot drive any more (W leaves the edge).
    program = Program(4, 2)
    program.route(2, 0, "E")
    result = tf.transform(program.config, move=(2, 0), size=(6, 2))
    with pytest.raises(tf.TransformError, match=r"step 1 expects an output on W lane 1"):
        tf.transform_steps([(Edges(), Edges()), (Edges(), Edges(w=2))], result)
    steps = tf.transform_steps([(Edges(w=1), Edges(e=1))], result)
    assert steps == [(Edges(), Edges(e=1))]          # W input dropped, E lane 0 kept


def test_idle_lanes_may_leave_the_edge():
    # Moved 2 rows down in a 4 x 4 grid, the N side leaves the edge: cell (0, 0) now reads the
    # all-zero cell above it (0, as the unnamed N lane 0 was) and cell (2, 0) drives into it.
    config, portmap, model = port_programs.idle_lanes()
    result = tf.transform(config, portmap, move=(0, 2), size=(4, 4))
    rows = [{"a": v} for v in (1, 0, 1, 1, 0, 0, 1)]
    assert evaluate(result.config, result.portmap, rows) == model(rows)
    assert [(b.side, b.lane) for b in result.portmap["q"].bits] == [(E, 2)]
    # Vector steps that keep N lanes 0 and 2 quiet allow it too, and re-index.
    quiet = [(Edges(w=1), Edges()), (Edges(n=0b1010, w=1), Edges(e=1))]
    result = tf.transform(config, move=(0, 2), size=(4, 4), steps=quiet)
    assert tf.transform_steps(quiet, result) == [(Edges(w=4), Edges()), (Edges(w=4), Edges(e=4))]


@pytest.mark.parametrize("kwargs, message", [
    ({}, r"cell \(0, 0\) reads its input from the N edge \(lane 0\), but move 0,2 takes that "
         r"boundary off the edge \(the cell lands at \(0, 2\) of the 4 x 4 grid\); move the "
         r"program so that its N side stays on the edge, or give its port map \(--ports\) if "
         r"no port uses that lane$"),
    ({"ports": [{"name": "c", "direction": "in", "bits": [{"side": "N", "lane": 0}]}]},
     r"cell \(0, 0\) reads its input from the N edge \(lane 0, bit 0 of port c\), but move "
     r"0,2 .* stays on the edge$"),
    ({"ports": [{"name": "d", "direction": "out", "bits": [{"side": "N", "lane": 1},
                                                           {"side": "N", "lane": 2}]}]},
     r"cell \(2, 0\) drives its output to the N edge \(lane 2, bit 1 of port d\)"),
    ({"steps": [(Edges(), Edges()), (Edges(n=1), Edges())]},
     r"cell \(0, 0\) reads its input from the N edge \(lane 0, which step 1 of the vector "
     r"file drives with 1\)"),
    ({"steps": [(Edges(), Edges()), (Edges(), Edges(n=4))]},
     r"cell \(2, 0\) drives its output to the N edge \(lane 2, where step 1 of the vector "
     r"file expects a 1\)"),
])
def test_busy_lanes_may_not_leave_the_edge(kwargs, message):
    config, portmap, model = port_programs.idle_lanes()
    if "ports" in kwargs:
        portmap = portmap.replace(ports=portmap.ports + tuple(
            PortMap(4, 2, kwargs["ports"], latency=4).ports))
    elif "steps" not in kwargs:
        portmap = None
    steps = kwargs.get("steps")
    with pytest.raises(tf.TransformError, match="^" + message):
        tf.transform(config, portmap if "steps" not in kwargs else None, move=(0, 2),
                     size=(4, 4), steps=steps)


# Advancing by one subcycle (odd-parity cells that wake up) -----------------------------------

def test_advanced_when_odd_cells_wake_up():
    config, portmap, model = port_programs.inverter_route()
    rows = [{"a": v} for v in (0, 1, 1, 0, 1, 0, 0)]
    model = model(rows)
    assert model == [{"q": 1 - r["a"]} for r in rows]
    assert evaluate(config, portmap, rows) == model
    for kwargs in ({"mirror": "y"}, {"mirror": "x"}, {"rotate": 90}, {"rotate": 270}):
        result = tf.transform(config, portmap, retime=True, **kwargs)
        assert result.latency_added == -1
        assert result.portmap.latency == 5
        assert [b.skew for b in result.portmap["a"].bits] == [0]
        assert evaluate(result.config, result.portmap, rows) == model
    # A vector file loses its step 0 (all zero here: nothing enters before skew 1).
    steps = [(Edges(), Edges()), (Edges(w=1), Edges()), (Edges(w=1), Edges(e=1))]
    result = tf.transform(config, mirror="y", retime=True, steps=steps)
    assert result.latency_added == -1
    assert tf.transform_steps(steps, result) == [(Edges(w=2), Edges()),
                                                  (Edges(w=2), Edges(e=2))]


@pytest.mark.parametrize("options, message", [
    ({}, r"and it cannot run one subcycle earlier either: that needs its port map \(--ports\) "
         r"or a vector file \(--vectors\)"),
    ({"skew": 0}, r"cannot run one subcycle earlier either: bit 0 of input port a enters on "
                  r"the first subcycle \(skew 0\)"),
    ({"wake_even": True}, r"cannot run one subcycle earlier either: cell \(1, 1\) \(even "
                          r"parity\) outputs 1 on S for all-zero inputs"),
    ({"steps": [(Edges(w=1), Edges())]}, r"either: step 0 of the vector file has inputs"),
    ({"late": True}, r"either: bit 0 of output port q is read after the first subcycle"),
])
def test_advance_refused(options, message):
    config, portmap, _ = port_programs.inverter_route(skew=options.get("skew", 1),
                                     wake_even=options.get("wake_even", False))
    if options.get("late"):
        portmap = portmap.replace(latency=1)
    given = portmap if options and "steps" not in options else None
    with pytest.raises(tf.TransformError, match=r"^cannot re-time mirror y: cell \(1, 0\) \(odd "
                                                r"parity\) outputs 1 on E for all-zero inputs, "
                                                r"so delaying .*" + message):
        tf.transform(config, given, mirror="y", retime=True, steps=options.get("steps"))


def test_advanced_port_map_of_latency_0():
    # With latency 0 the outputs' skews go down instead (each was read at latency + skew >= 2).
    portmap = PortMap(4, 2, [
        {"name": "a", "direction": "in", "bits": [{"side": "W", "lane": 0, "skew": 1}]},
        {"name": "q", "direction": "out", "bits": [{"side": "E", "lane": 0, "skew": 6}]}],
        latency=0)
    moved = tf.transform_portmap(portmap, tf.mirror("y", 4, 2), latency_added=-1)
    assert moved.latency == 0
    assert [b.skew for b in moved["a"].bits] == [0] and [b.skew for b in moved["q"].bits] == [5]
