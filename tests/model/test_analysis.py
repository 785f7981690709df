"""bitgrid.analysis: real LUT support (exhaustive), the dependency graph and path timing
against the reference emulator (impulse runs on random loop-free programs, exact delays of
random routes), and loops."""

import random

import numpy as np
import pytest

from bitgrid.analysis import (CellOutput, DependencyGraph, EdgeInput, EdgeOutput, path_timing,
                              support, support_masks)
from bitgrid.cell import COPY_E, COPY_N, COPY_S, COPY_W, REFLECTOR
from bitgrid.config import Configuration
from bitgrid.emulator import Emulator
from bitgrid.terms import DIRECTIONS, E, Edges, N, S, W, side_lanes

COPY = {N: COPY_N, E: COPY_E, S: COPY_S, W: COPY_W}


def test_support_exhaustive():
    # Independent definition: the LUT depends on input k if some address and the address with
    # bit k flipped give different outputs.
    luts = np.arange(1 << 16, dtype=np.uint32)
    address = np.arange(16)
    bits = (luts[:, None] >> address[None, :]) & 1            # (65536, 16)
    expected = np.zeros(1 << 16, dtype=np.uint8)
    for k in range(4):
        flipped = bits[:, address ^ (1 << k)]
        expected |= ((bits != flipped).any(axis=1).astype(np.uint8) << k)
    assert (support_masks(luts) == expected).all()
    for lut in range(0, 1 << 16, 97):
        assert support(lut) == frozenset(d for d in DIRECTIONS if expected[lut] >> d & 1)


def test_support_reference_values():
    assert support(COPY_N) == {N} and support(COPY_W) == {W}
    assert support(0x6666) == {N, E}                # N xor E
    assert support(0) == support(0xFFFF) == frozenset()
    assert support(0x6996) == {N, E, S, W}          # parity of all four
    with pytest.raises(ValueError):
        support(0x10000)


def _route(width, height, rng, length):
    """A random self-avoiding route from a W edge lane to some edge, each cell copying the
    previous one (one output per cell, reading one input): (config, input, output, cells), or
    None if the walk got stuck."""
    config = Configuration(width, height)
    y0 = rng.randrange(height)
    x, y, came = 0, y0, W
    cells = set()
    while True:
        cells.add((x, y))
        options = []
        for d in DIRECTIONS:
            dx, dy = d.step
            nx, ny = x + dx, y + dy
            if d == came or (nx, ny) in cells:
                continue
            inside = 0 <= nx < width and 0 <= ny < height
            if inside or len(cells) >= length:
                options.append(d)
        if not options:
            return None
        d = rng.choice(options)
        tables = [0, 0, 0, 0]
        tables[d] = COPY[came]
        config[x, y] = tables
        dx, dy = d.step
        if not (0 <= x + dx < width and 0 <= y + dy < height):
            lane = y if d in (E, W) else x
            return config, EdgeInput(W, y0), EdgeOutput(d, lane), len(cells)
        x, y, came = x + dx, y + dy, d.opposite


def _first_rise(config, source, output, steps):
    edges = Edges(**{source.side.letter.lower(): 1 << source.lane})
    emulator = Emulator(config)
    for t in range(steps):
        out = emulator.step(edges)
        if out[output.side] >> output.lane & 1:
            return t + 1
    return None


def test_route_lengths_match_emulator():
    rng = random.Random(5)
    checked = 0
    while checked < 40:
        made = _route(8, 6, rng, rng.randrange(1, 20))
        if made is None:
            continue
        config, source, output, count = made
        parity_wait = source.lane % 2          # the first cell is (0, lane)
        assert path_timing(config).paths[output] == {(source, count + parity_wait)}
        assert _first_rise(config, source, output, 100) == count + parity_wait
        checked += 1


def test_straight_route_length_and_parity():
    config = Configuration(6, 4)
    for x in range(6):
        config[x, 1] = (0, COPY_W, 0, 0)
    timing = path_timing(config)
    # (0, 1) has parity 1: six cells plus one subcycle of parity wait
    assert timing.paths[EdgeOutput(E, 1)] == {(EdgeInput(W, 1), 7)}
    assert timing.lengths(EdgeOutput(E, 1), start=1) == [6]
    assert timing.latency(EdgeOutput(E, 0)) is None
    assert _first_rise(config, EdgeInput(W, 1), EdgeOutput(E, 1), 20) == 7


def _random_dag(width, height, rng):
    """Random LUTs that read only inputs N and W: signals flow south and east, no loops."""
    config = Configuration(width, height)
    for y in range(height):
        for x in range(width):
            tables = []
            for _ in DIRECTIONS:
                table2 = rng.randrange(16)          # a function of (n, w)
                lut = 0
                for a in range(16):
                    n, w = a & 1, a >> 3 & 1
                    lut |= ((table2 >> (n | w << 1)) & 1) << a
                tables.append(lut)
            config[x, y] = tables
    return config


def _run(config, inputs):
    emulator = Emulator(config)
    return [emulator.step(e) for e in inputs]


@pytest.mark.parametrize("seed", range(6))
def test_impulse_delays_within_path_lengths(seed):
    # A pulse of two subcycles on one lane at subcycle s: every output lane that differs from
    # the run without the pulse, at index t, has a path of length L (for inputs changing at
    # s) with t in {s + L - 1, s + L}; and no loop exists.
    rng = random.Random(seed)
    width, height = 6, 4
    config = _random_dag(width, height, rng)
    timing = path_timing(config)
    assert timing.loops == []
    steps = 30
    base = [Edges(*(rng.getrandbits(side_lanes(d, width, height)) for d in DIRECTIONS))
            for _ in range(steps)]
    reference = _run(config, base)
    graph = DependencyGraph(config)
    for source in graph.edge_inputs():
        for s in (3, 4):
            pulsed = list(base)
            for t in (s, s + 1):
                words = list(pulsed[t])
                words[source.side] ^= 1 << source.lane
                pulsed[t] = Edges(*words)
            outputs = _run(config, pulsed)
            for output in graph.edge_outputs():
                allowed = set()
                for length in timing.lengths(output, source, start=s):
                    allowed |= {s + length - 1, s + length}
                for t in range(steps):
                    differs = (outputs[t][output.side] ^ reference[t][output.side]) \
                        >> output.lane & 1
                    if differs:
                        assert t in allowed, (str(source), str(output), t, sorted(allowed))


def test_loop_found_with_length():
    # Two reflector cells facing each other: (1, 1).E -> (2, 1).W -> (1, 1).E, a 2-cycle;
    # a ring of four turning cells: length 4.
    config = Configuration(8, 4)
    config[1, 1] = REFLECTOR
    config[2, 1] = REFLECTOR
    ring = {(5, 1): (S, E), (6, 1): (W, S), (6, 2): (N, W), (5, 2): (E, N)}
    for (x, y), (came, out) in ring.items():
        tables = [0, 0, 0, 0]
        tables[out] = COPY[came]
        config[x, y] = tables
    graph = DependencyGraph(config)
    loops = sorted(graph.loops(), key=lambda loop: len(loop.nodes))
    assert [len(loop.nodes) for loop in loops] == [2, 4]
    assert loops[0].shortest == loops[0].period == 2
    assert loops[0].nodes == {CellOutput(1, 1, E), CellOutput(2, 1, W)}
    assert loops[1].shortest == loops[1].period == 4


def test_sequential_dependency_through_loop():
    # W_in[1] -> (0, 1) copies W to E; (1, 1) ORs its W input with its E input and sends it
    # E; (2, 1) echoes W back to W (a loop between (1, 1).E and (2, 1).W) and also on to E.
    config = Configuration(4, 2)
    config[0, 1] = (0, COPY_W, 0, 0)
    config[1, 1] = (0, COPY_W | COPY_E, 0, 0)
    config[2, 1] = (0, COPY_W, 0, COPY_W)
    config[3, 1] = (0, COPY_W, 0, 0)
    timing = path_timing(config)
    output = EdgeOutput(E, 1)
    assert timing.sequential[output] == {EdgeInput(W, 1)}
    assert timing.paths[output] == frozenset()
    assert len(timing.loops) == 1


def test_graph_edges_follow_support_only():
    config = Configuration(2, 2)
    config[0, 0] = (0, 0x6666, 0, 0)     # E = N xor E: reads N_in[0] and (1, 0).W
    graph = DependencyGraph(config)
    assert set(graph.sources(CellOutput(0, 0, E))) == {EdgeInput(N, 0), CellOutput(1, 0, W)}
    assert graph.readers(EdgeInput(W, 0)) == ()
    assert set(graph.readers(CellOutput(1, 0, W))) == {CellOutput(0, 0, E)}
    assert graph.readers(CellOutput(1, 0, E)) == (EdgeOutput(E, 0),)
    assert EdgeInput(E, 0) != EdgeOutput(E, 0)
