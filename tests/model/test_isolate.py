"""bitgrid.isolate and ``bitgrid isolate``: walls with a leaking cell on every side and in both
directions (each caught, the path printed cell by cell), walls that only look leaky, ports,
the wall builder, and two programs side by side behind a wall running exactly as each does
alone (reference emulator, random inputs)."""

import random

import numpy as np
import pytest
from click.testing import CliRunner

from bitgrid import bitstream
from bitgrid.analysis import CellOutput, DependencyGraph, EdgeInput, EdgeOutput
from bitgrid.cell import COPY_E, COPY_N, COPY_S, COPY_W, lut_from_function
from bitgrid.cli import main
from bitgrid.config import Configuration
from bitgrid.emulator import Emulator
from bitgrid.isolate import (IsolationError, Region, build_wall, check_isolation, parse_port,
                             parse_region, paste, wall_ring)
from bitgrid.terms import DIRECTIONS, E, Edges, N, S, W, side_lanes

COPY = {N: COPY_N, E: COPY_E, S: COPY_S, W: COPY_W}
REGION = Region(3, 2, 7, 6)             # in a 12 x 10 grid, ring x 2..8, y 1..7


def _walled(seed):
    """Random LUTs everywhere except a zero ring around REGION."""
    config = Configuration.random(12, 10, seed=seed)
    for x, y in wall_ring(REGION, 12, 10):
        config[x, y] = (0, 0, 0, 0)
    return config


def _check_path(config, path):
    graph = DependencyGraph(config)
    for a, b in zip(path, path[1:]):
        assert b in graph.readers(a), (str(a), str(b))


def test_random_program_behind_zero_wall_is_isolated():
    for seed in range(3):
        assert check_isolation(_walled(seed), [REGION]) == []


# The middle ring cell of each side, and the side of the ring cell facing the region.
_SIDES = {N: (5, 1), S: (5, 7), W: (2, 4), E: (8, 4)}


@pytest.mark.parametrize("side", DIRECTIONS, ids=lambda d: d.letter)
@pytest.mark.parametrize("outward", [True, False], ids=["outward", "inward"])
def test_one_leaking_cell_on_each_side_is_caught(side, outward):
    config = _walled(7)
    x, y = _SIDES[side]
    # side is where the ring cell lies relative to the region: outward, the signal comes from
    # the region (input side.opposite) and leaves on side; inward the other way round
    heading = side if outward else side.opposite
    tables = [0, 0, 0, 0]
    tables[heading] = COPY[heading.opposite]
    config[x, y] = tables
    leaks = check_isolation(config, [REGION])
    assert len(leaks) == 1
    (leak,) = leaks
    crossing = CellOutput(x, y, heading)
    assert crossing in leak.path
    _check_path(config, leak.path)
    first, last = leak.path[0], leak.path[-1]
    if outward:
        assert leak.source == REGION and leak.reader is None
        assert (first.x, first.y) in REGION
        assert last == crossing or (last.x, last.y) not in REGION
    else:
        assert leak.source is None and leak.reader == REGION
        assert (last.x, last.y) in REGION
    # declaring the crossing cell output a port makes the wall tight again
    assert check_isolation(config, [REGION], [f"{x},{y}:{heading.letter}"]) == []


def test_wall_cells_that_do_not_really_depend_are_no_leak():
    config = _walled(3)
    config[5, 1] = (0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF)    # constants: read nothing
    config[2, 4] = (COPY_S, 0, 0, 0)                   # a lane along the wall, heading N
    # E output written as a function of the region's side w, which it does not depend on
    config[8, 4] = (0, lut_from_function(lambda n, w: (n & w) | (n & (1 - w))), 0, 0)
    config[5, 7] = (0, 0, lut_from_function(lambda n, s: s & (n | (1 - n))), 0)
    assert check_isolation(config, [REGION]) == []
    config[5, 7] = (0, 0, lut_from_function(lambda n, s: s & n), 0)     # really reads n
    (leak,) = check_isolation(config, [REGION])
    assert leak.path[-2:] == (CellOutput(5, 6, S), CellOutput(5, 7, S))


def test_leak_through_edge_lanes_between_two_regions():
    # Regions on the north edge; a route N_in[1] -> (1,0) S -> (1,1) E ... into region B
    # through the gap: B depends on A (the shortest leaking path starts at A's last cell).
    config = Configuration(10, 4)
    a, b = Region(0, 0, 2, 3), Region(6, 0, 9, 3)
    config[1, 0] = (0, 0, COPY_N, 0)
    config[1, 1] = (0, COPY_N, 0, 0)
    for x in range(2, 7):
        config[x, 1] = (0, COPY_W, 0, 0)
    leaks = check_isolation(config, [a, b])
    assert len(leaks) == 1
    assert leaks[0].source == a and leaks[0].reader == b
    assert leaks[0].path == tuple(CellOutput(x, 1, E) for x in range(2, 7))
    assert check_isolation(config, [a, b], ["5,1:E"]) == []
    # one region: the rest (B and the gap) depends on it, and nothing else leaks
    (leak,) = check_isolation(config, [a])
    assert leak.source == a and leak.path == (CellOutput(2, 1, E), CellOutput(3, 1, E))


def test_parse_port_and_region_forms():
    assert parse_port("4,3:e", 8, 8) == (CellOutput(4, 3, E),)
    assert parse_port("in:W3", 8, 8) == (EdgeInput(W, 3),)
    assert parse_port("W_in[3]", 8, 8) == (EdgeInput(W, 3),)
    assert parse_port("out:E2", 8, 8) == (EdgeOutput(E, 2),)
    assert parse_port("S5", 8, 8) == (EdgeInput(S, 5), EdgeOutput(S, 5))
    assert parse_region(" 3,4 ,1,2") == Region(1, 2, 3, 4)
    for bad in ("4,3", "in:X3", "W8", "9,1:N"):
        with pytest.raises(IsolationError):
            parse_port(bad, 8, 8)
    with pytest.raises(IsolationError):
        parse_region("1,2,3")
    with pytest.raises(IsolationError):
        check_isolation(Configuration(8, 8), ["0,0,3,3", "3,3,5,5"])
    with pytest.raises(IsolationError):
        check_isolation(Configuration(8, 8), ["0,0,8,3"])


def test_build_wall_zeroes_the_ring_sets_ports_and_refuses_a_used_ring():
    config = Configuration.random(12, 10, seed=1)
    inner = config.copy()
    for x, y in wall_ring(REGION, 12, 10):
        inner[x, y] = (0, 0, 0, 0)
    walled = build_wall(inner, REGION, ["8,4:E"])
    assert walled[8, 4] == (0, COPY_W, 0, 0)
    assert sum(1 for x, y in wall_ring(REGION, 12, 10) if any(walled[x, y])) == 1
    leaks = check_isolation(walled, [REGION])
    assert len(leaks) == 1 and CellOutput(8, 4, E) in leaks[0].path
    assert check_isolation(walled, [REGION], ["8,4:E"]) == []
    with pytest.raises(IsolationError, match="not free"):
        build_wall(config, REGION)
    with pytest.raises(IsolationError, match="not on the wall ring"):
        build_wall(inner, REGION, ["5,5:E"])


def _random_inputs(width, height, steps, rng):
    return [Edges(*(rng.getrandbits(side_lanes(d, width, height)) for d in DIRECTIONS))
            for _ in range(steps)]


def _lanes(word, first, count):
    return (word >> first) & ((1 << count) - 1)


def test_two_programs_side_by_side_behind_a_wall_run_as_each_alone():
    # Program A (random LUTs, 4 x 8) at x = 0..3, wall column 4, column 5 free, program B
    # (random LUTs, 6 x 8) at x = 6..11: the walled pair on a 12 x 8 grid gives, lane for lane,
    # the outputs of each program run alone with a zero input where the wall is.
    rng = random.Random(11)
    a = Configuration.random(4, 8, seed=21)
    b = Configuration.random(6, 8, seed=22)
    pair = paste(paste(Configuration(12, 8), a, 0, 0), b, 6, 0)
    pair = build_wall(pair, "0,0,3,7")
    assert check_isolation(pair, ["0,0,3,7"]) == []
    assert check_isolation(pair, ["0,0,3,7", "6,0,11,7"]) == []
    steps = 400
    inputs = _random_inputs(12, 8, steps, rng)
    both, alone_a, alone_b = Emulator(pair), Emulator(a), Emulator(b)
    for t, edges in enumerate(inputs):
        out = both.step(edges)
        out_a = alone_a.step(Edges(n=_lanes(edges.n, 0, 4), e=0, s=_lanes(edges.s, 0, 4),
                                   w=edges.w))
        out_b = alone_b.step(Edges(n=_lanes(edges.n, 6, 6), e=edges.e, s=_lanes(edges.s, 6, 6),
                                   w=0))
        assert _lanes(out.n, 0, 4) == out_a.n and _lanes(out.s, 0, 4) == out_a.s, t
        assert out.w == out_a.w, t
        assert _lanes(out.n, 6, 6) == out_b.n and _lanes(out.s, 6, 6) == out_b.s, t
        assert out.e == out_b.e, t
        # and every cell state is each program's own
        assert (both.outputs[:, :, 0:4] == alone_a.outputs).all(), t
        assert (both.outputs[:, :, 6:12] == alone_b.outputs).all(), t
    # the proof is not vacuous: a leaking wall cell does change B's run
    leaky = pair.copy()
    leaky[4, 3] = (0, COPY_W, 0, 0)
    leaky[5, 3] = (0, COPY_W, 0, 0)
    assert check_isolation(leaky, ["0,0,3,7"]) != []


def test_cli_isolated_leak_and_bad_input(tmp_path):
    config = _walled(5)
    path = tmp_path / "p.bgbs"
    bitstream.save(str(path), config)
    runner = CliRunner()
    result = runner.invoke(main, ["isolate", str(path), "--region", "3,2,7,6"])
    assert result.exit_code == 0, result.output
    assert "ISOLATED" in result.output
    leaky = config.copy()
    leaky[8, 4] = (0, COPY_W, 0, 0)
    bitstream.save(str(path), leaky)
    result = runner.invoke(main, ["isolate", str(path), "--region", "3,2,7,6"])
    assert result.exit_code == 1, result.output
    assert "LEAK: the rest of the grid depends on region 1 (3,2,7,6)" in result.output
    assert "(7,4).E -> (8,4).E" in result.output
    result = runner.invoke(main, ["isolate", str(path), "--region", "3,2,7,6",
                                  "--port", "8,4:E"])
    assert result.exit_code == 0, result.output
    for args in (["--region", "3,2,7"], ["--region", "3,2,7,16"], ["--region", "3,2,7,6",
                                                                   "--port", "x"],
                 ["--region", "3,2,7,6", "--wall"]):
        result = runner.invoke(main, ["isolate", str(path)] + args)
        assert result.exit_code == 2, (args, result.output)
        assert result.output.startswith("error: ")


def test_cli_wall_builds_and_proves(tmp_path):
    config = Configuration.random(12, 10, seed=4)
    for x, y in wall_ring(REGION, 12, 10):
        config[x, y] = (0, 0, 0, 0)
    config[8, 4] = (0, COPY_W, 0, 0)            # a crossing, to become the declared port
    src, out = tmp_path / "p.bgbs", tmp_path / "walled.bgbs"
    bitstream.save(str(src), config)
    runner = CliRunner()
    result = runner.invoke(main, ["isolate", str(src), "--region", "3,2,7,6", "--wall",
                                  "--port", "8,4:E", "-o", str(out)])
    assert result.exit_code == 0, result.output
    walled = bitstream.load(str(out)).config
    assert walled[8, 4] == (0, COPY_W, 0, 0)
    # refused: a ring cell in use that is no port
    config[2, 3] = (0, 0, 0, COPY_E)
    bitstream.save(str(src), config)
    result = runner.invoke(main, ["isolate", str(src), "--region", "3,2,7,6", "--wall",
                                  "--port", "8,4:E", "-o", str(out)])
    assert result.exit_code == 2 and "not free: cell (2, 3)" in result.output
