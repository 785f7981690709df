"""The wave timing alone (bitgrid.compiler.timing): the least-padding tags on hand-made graphs
with known optima, against an exhaustive search on random small graphs, and the period; the
wave windows of rows held for a whole period, against a search over every padding with the
windows propagated as a cell would compute them."""

import itertools
import random

import numpy as np
import pytest

from bitgrid.compiler.timing import (TimingError, Waves, check_waves, free_period,
                                    minimum_period, padding, solve_tags, solve_waves)


def _net_padding(tags, edges, period, nets):
    """Padding as the module defines it, written again: per net, every connection's padding,
    less what its sinks share on the trunk (the smallest)."""
    per_net = {}
    for (u, v, lmin, registers), net in zip(edges, nets):
        per_net.setdefault(net, []).append(tags[v] - tags[u] + registers * period - lmin)
    return sum(sum(p) - (len(p) - 1) * min(p) for p in per_net.values())


def _feasible(tags, lower, edges, period, fixed):
    return all(t >= lo and (t - lo) % 2 == 0 for t, lo in zip(tags, lower)) \
        and all(tags[v] - tags[u] >= lmin - r * period for u, v, lmin, r in edges) \
        and all(tags[i] == lower[i] for i in fixed)


def test_diamond_needs_the_difference_of_its_two_paths():
    # u -> v -> x (2 + 2 wires), u -> w -> x (6 + 2): 4 wires of padding wherever they go
    edges = [(0, 1, 2, 0), (0, 2, 6, 0), (1, 3, 2, 0), (2, 3, 2, 0)]
    nets = [0, 0, 1, 2]
    tags = solve_tags(4, [0, 0, 0, 0], edges, 2, nets=nets)
    assert list(tags[[0, 2, 3]]) == [0, 6, 8]
    assert padding(tags, edges, 2, nets) == 4
    assert _net_padding(tags, edges, 2, nets) == 4


def test_a_fan_out_shares_its_padding_on_the_trunk():
    # u (fixed at 0) drives v1 and v2 on one net; s drives x and y 8 wires away; v1 -> x and
    # v2 -> y are 2 wires. Padding each of u's branches by 4 on the trunk costs 4 wires; the
    # longest-path tags (v1 = v2 = 2) pad v1 -> x and v2 -> y, 8 wires.
    edges = [(0, 1, 2, 0), (0, 2, 2, 0), (1, 4, 2, 0), (2, 5, 2, 0), (3, 4, 8, 0),
             (3, 5, 8, 0)]
    nets = [0, 0, 1, 2, 3, 4]
    lower = [0, 0, 0, 0, 0, 0]
    tags = solve_tags(6, lower, edges, 2, fixed=[0, 3], nets=nets)
    assert list(tags) == [0, 6, 6, 0, 8, 8]
    assert padding(tags, edges, 2, nets) == 4
    # as separate nets, no sharing: 8 either way
    alone = solve_tags(6, lower, edges, 2, fixed=[0, 3])
    assert padding(alone, edges, 2) == 8


def test_tags_keep_their_parity_and_lower_bounds():
    # odd lower bounds (cells of parity 1) and a lane at parity - 1
    lower = [-1, 1, 0, 1]
    edges = [(0, 1, 2, 0), (0, 2, 1, 0), (2, 3, 1, 0), (1, 3, 4, 0)]
    tags = solve_tags(4, lower, edges, 2, nets=[0, 0, 1, 2])
    assert _feasible(list(tags), lower, edges, 2, ())
    assert [t % 2 for t in tags] == [1, 1, 0, 1]


@pytest.mark.parametrize("seed", range(40))
def test_least_padding_against_an_exhaustive_search(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 5)
    lower = [rng.choice((0, 1)) for _ in range(n)]
    edges, nets = [], []
    for v in range(1, n):
        drivers = rng.sample(range(v), rng.randint(1, min(2, v)))
        for u in drivers:
            # a length of the parity the two nodes' tags allow
            lmin = rng.randint(1, 6)
            lmin += (lmin - (lower[v] - lower[u])) % 2
            edges.append((u, v, lmin, 0))
            nets.append(u)              # one net per driver: its edges share a trunk
    fixed = [0] if rng.random() < 0.5 else []
    tags = solve_tags(n, lower, edges, 2, fixed=fixed, nets=nets)
    assert _feasible(list(tags), lower, edges, 2, fixed)
    got = _net_padding(list(tags), edges, 2, nets)
    assert padding(tags, edges, 2, nets) == got
    # every assignment in a window wide enough for the optimum (the longest path is at most
    # 6 (n - 1) wires, so later tags only shift everything)
    ranges = [range(lower[i], lower[i] + 6 * n + 2, 2) if i not in fixed else [lower[i]]
              for i in range(n)]
    best = min(_net_padding(t, edges, 2, nets) for t in itertools.product(*ranges)
               if _feasible(t, lower, edges, 2, fixed))
    assert got == best


def test_a_loop_sets_the_period():
    # u -> v (3 wires) and v -> u (3 wires) through one flip-flop: 6 subcycles at least
    edges = [(0, 1, 3, 0), (1, 0, 3, 1)]
    lower = lambda period: [0, 1]
    assert minimum_period(2, lower, edges) == 6
    assert solve_tags(2, lower(4), edges, 4) is None
    tags = solve_tags(2, lower(6), edges, 6)
    assert tags[1] - tags[0] == 3


def test_a_loop_longer_than_the_largest_period_is_refused():
    edges = [(0, 1, 5000, 0), (1, 0, 5000, 1)]
    with pytest.raises(TimingError):
        minimum_period(2, lambda period: [0, 0], edges)


def test_no_edges():
    assert list(solve_tags(3, np.array([0, 1, 2]), [], 2)) == [0, 1, 2]


def test_the_placers_descent_moves_a_fan_out_as_late_as_its_readers_allow():
    # a (fixed) -> x, then x drives y and z on two nets whose lower bounds are later: one
    # connection in, two nets out, so x waits (8 wires padded before it, not 8 on each net)
    edges = [(0, 1, 1, 0), (1, 2, 1, 0), (1, 3, 1, 0)]
    lower = [0, 1, 10, 10]
    fast = solve_tags(4, lower, edges, 2, fixed=[0], nets=[0, 1, 2], exact=False)
    assert list(fast) == [0, 9, 10, 10]
    exact = solve_tags(4, lower, edges, 2, fixed=[0], nets=[0, 1, 2])
    assert padding(exact, edges, 2, [0, 1, 2]) == padding(fast, edges, 2, [0, 1, 2]) == 8


# Wave windows (rows held for the whole period) --------------------------------------------------

def _windows(n, lower, edges, pads, sources):
    """Each node's window ``(late, early)`` as cells compute it, by propagation in node order
    (edges go from lower to higher nodes): the ``sources`` at their lower bound, every other
    node the latest and earliest arrival of its operands."""
    late, early = {v: lower[v] for v in sources}, {v: lower[v] for v in sources}
    for v in range(n):
        if v in sources:
            continue
        arrivals = [(late[u] + lmin + 2 * p, early[u] + lmin + 2 * p)
                    for (u, w, lmin, _), p in zip(edges, pads) if w == v]
        late[v] = max(max(a for a, _ in arrivals), lower[v])
        early[v] = min(e for _, e in arrivals)
    return late, early


def test_a_window_takes_the_skew_a_period_allows():
    # 0 -> 1 -> 2 (1 + 1 wires) beside 0 -> 2 (6 wires): the two operands of 2 arrive 4
    # subcycles apart. Period 2 pads the short path by 4; period 4 by 2; period 6 not at all.
    edges = [(0, 1, 1, 0), (0, 2, 6, 0), (1, 2, 1, 0)]
    lower = [0, 1, 0]
    for period, pad in ((2, 4), (4, 2), (6, 0), (8, 0)):
        waves = solve_waves(3, lower, edges, period, equal=[0])
        assert int(waves.delays[2] - 1 + waves.delays[0] - 1) == pad
        assert list(waves.late) == [0, 1, 6]
        assert waves.late[2] - waves.early[2] == min(4, period - 2)
        assert check_waves(waves, lower, edges, period, equal=[0]) == ""


def test_period_2_windows_are_the_exact_tags():
    edges = [(0, 1, 2, 0), (0, 2, 6, 0), (1, 3, 2, 0), (2, 3, 2, 0)]
    nets = [0, 0, 1, 2]
    waves = solve_waves(4, [0, 0, 0, 0], edges, 2, equal=[0], nets=nets)
    assert list(waves.late) == list(waves.early)
    tags = solve_tags(4, [0, 0, 0, 0], edges, 2, nets=nets)
    assert int((waves.delays - [e[2] for e in edges]).sum()) == padding(tags, edges, 2, nets)


def test_a_loop_is_exact_whatever_its_window():
    # 0 -> 1 -> 0 through a flip-flop: 3 + 3 wires, so period 6 exactly; 4 is too short
    edges = [(0, 1, 3, 0), (1, 0, 3, 1)]
    waves = solve_waves(2, [0, 1], edges, 6)
    assert list(waves.delays) == [3, 3]
    assert solve_waves(2, [0, 1], edges, 4) is None
    # period 8: the loop is padded to 8
    assert int(solve_waves(2, [0, 1], edges, 8).delays.sum()) == 8


def test_check_waves_names_what_is_wrong():
    edges = [(0, 1, 1, 0), (0, 2, 6, 0), (1, 2, 1, 0)]
    lower = [0, 1, 0]
    good = solve_waves(3, lower, edges, 6, equal=[0])
    assert check_waves(good, lower, edges, 6, equal=[0]) == ""
    assert "window" in check_waves(good, lower, edges, 4, equal=[0])
    short = Waves(good.late, good.early, good.delays - [0, 2, 0])
    assert "delay" in check_waves(short, lower, edges, 6, equal=[0])
    held = Waves(good.late, good.early - [2, 0, 0], good.delays)
    assert check_waves(held, lower, edges, 6, equal=[0]) != ""
    with pytest.raises(ValueError, match="parity"):
        solve_waves(3, lower, [(0, 1, 2, 0)], 6)


def _random_dag(rng, n, *, fan_in, longest):
    """``(lower, sources, edges)``: ``n`` nodes of random parity, node 0 (and maybe 1) a
    source, every other node reading 1 to ``fan_in`` earlier ones over 1 to ``longest`` wires
    (of the parity the two nodes allow)."""
    lower = [rng.choice((0, 1)) for _ in range(n)]
    sources = {0} | ({1} if rng.random() < 0.5 else set())
    edges = []
    for v in range(n):
        if v in sources:
            continue
        for u in rng.sample(range(v), rng.randint(1, min(fan_in, v))):
            lmin = rng.randint(1, longest)
            lmin += (lmin - (lower[v] - lower[u])) % 2
            edges.append((u, v, lmin, 0))
    return lower, sources, edges


@pytest.mark.parametrize("seed", range(30))
def test_least_window_padding_against_an_exhaustive_search(seed):
    rng = random.Random(seed)
    n = rng.randint(3, 4)
    period = rng.choice((2, 4, 6, 8))
    lower, sources, edges = _random_dag(rng, n, fan_in=2, longest=6)
    nets = [u for u, *_ in edges]           # one net per driver: its edges share a trunk
    waves = solve_waves(n, lower, edges, period, fixed=sorted(sources), nets=nets)
    assert check_waves(waves, lower, edges, period, fixed=sorted(sources)) == ""

    def cost(pads):
        per_net = {}
        for p, net in zip(pads, nets):
            per_net.setdefault(net, []).append(2 * p)
        return sum(sum(p) - (len(p) - 1) * min(p) for p in per_net.values())

    # (no path is longer than 7 (n - 1) wires, so no edge needs more padding than that)
    best = None
    for pads in itertools.product(range(7 * (n - 1) // 2 + 1), repeat=len(edges)):
        late, early = _windows(n, lower, edges, pads, sources)
        if all(late[v] - early[v] <= period - 2 for v in range(n)):
            best = cost(pads) if best is None else min(best, cost(pads))
    got = cost([(int(d) - e[2]) // 2 for d, e in zip(waves.delays, edges)])
    assert got == best
    # the propagated windows of the solver's own delays hold an update everywhere
    late, early = _windows(n, lower, edges, [(int(d) - e[2]) // 2 for d, e in
                                             zip(waves.delays, edges)], sources)
    assert all(late[v] - early[v] <= period - 2 for v in range(n))


@pytest.mark.parametrize("seed", range(40))
def test_free_period_is_the_first_that_needs_no_padding(seed):
    """Against the MILP: at the free period no edge is padded, two subcycles less some is."""
    rng = random.Random(seed)
    lower, sources, edges = _random_dag(rng, rng.randint(3, 7), fan_in=3, longest=9)
    n = len(lower)
    period = free_period(n, lower, edges, equal=sorted(sources))
    lmins = [e[2] for e in edges]
    assert list(solve_waves(n, lower, edges, period, equal=sorted(sources)).delays) == lmins
    if period > 2:
        shorter = solve_waves(n, lower, edges, period - 2, equal=sorted(sources))
        assert list(shorter.delays) != lmins


def test_free_period_of_a_design_with_flip_flops_is_none():
    assert free_period(2, [0, 1], [(0, 1, 3, 0), (1, 0, 3, 1)]) is None
    # the diamond of test_a_window_takes_the_skew_a_period_allows: 4 subcycles of skew
    assert free_period(3, [0, 1, 0], [(0, 1, 1, 0), (0, 2, 6, 0), (1, 2, 1, 0)],
                       equal=[0]) == 6


def test_tied_sinks_are_exactly_their_offset_apart():
    # a -> p (3 wires), b -> q (1 wire), a and b fixed at 0; q tied 2 after p: p = 3 and
    # q = 5, so b -> q is padded by 4
    lower = [0, 0, 1, 1]
    edges = [(0, 2, 3, 0), (1, 3, 1, 0)]
    waves = solve_waves(4, lower, edges, 2, fixed=(0, 1), equal=(2, 3), ties=[(2, 3, 2)])
    assert (int(waves.late[2]), int(waves.late[3])) == (3, 5)
    assert waves.delays.tolist() == [3, 5]
    # the other way round: p 4 after q, so a -> p is padded by 2
    waves = solve_waves(4, lower, edges, 2, fixed=(0, 1), equal=(2, 3), ties=[(3, 2, 4)])
    assert (int(waves.late[2]), int(waves.late[3])) == (5, 1)
    assert waves.delays.tolist() == [5, 1]
    assert check_waves(waves, lower, edges, 2, equal=(2, 3), ties=[(3, 2, 4)]) == ""
    assert "not 2" in check_waves(waves, lower, edges, 2, ties=[(3, 2, 2)])
    # free drivers: b moves later instead, nothing is padded
    waves = solve_waves(4, lower, edges, 2, equal=(2, 3), ties=[(2, 3, 2)])
    assert waves.delays.tolist() == [3, 1] and int(waves.late[3] - waves.late[2]) == 2


def test_a_tie_of_the_wrong_parity_is_refused():
    with pytest.raises(ValueError, match="parity"):
        solve_waves(4, [0, 0, 1, 1], [(0, 2, 3, 0), (1, 3, 1, 0)], 2, ties=[(2, 3, 1)])
