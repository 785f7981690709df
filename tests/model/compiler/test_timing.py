"""The wave timing alone (bitgrid.compiler.timing): the least-padding tags on hand-made graphs
with known optima, against an exhaustive search on random small graphs, and the period."""

import itertools
import random

import numpy as np
import pytest

from bitgrid.compiler.timing import TimingError, minimum_period, padding, solve_tags


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
