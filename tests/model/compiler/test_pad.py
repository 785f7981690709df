"""Padding routed connections to their exact lengths (``bitgrid.compiler.pad``, issue 36):
hand-made grids and nets with known lengths. Every padded tree is checked wire by wire: each
wire leaves the cell its parent enters, one subcycle deeper, no wire is used twice, and each
sink ends at its target (or is reported failed and left as routed)."""

import itertools

import pytest

from bitgrid.compiler.pad import pad_routes
from bitgrid.compiler.route import Router, RoutingGraph


def _router(width, height, nets, blocked=()):
    cells = [(x, y) for y in range(height) for x in range(width) if (x, y) not in blocked]
    graph = RoutingGraph(width, height, cells)
    routed = []
    for (x0, y0), sinks in nets:
        c = y0 * width + x0
        routed.append(([4 * c + d for d in range(4)],
                       [("cell", y * width + x) for x, y in sinks]))
    router = Router(graph, routed, reserved=[y * width + x for (x, y), _ in nets])
    router.iterate([[None] * len(s) for _, s in routed])
    return router


def _depths(router, net):
    return [router.trees[net][g][0] for g in router.goals[net]]


def _assert_consistent(router):
    g = router.g
    used = list(itertools.chain.from_iterable(router.trees))
    assert len(used) == len(set(used)), "a wire carries two signals"
    for tree in router.trees:
        for w, (depth, parent) in tree.items():
            if parent == -1:
                assert depth == 1
            else:
                assert g.dest[parent] == g.owner[w], f"wire {w} does not leave its parent's cell"
                assert depth == tree[parent][0] + 1
    for n, tree in enumerate(router.trees):
        for s, goal in enumerate(router.goals[n]):
            kind, cell = router.nets[n][1][s]
            assert g.dest[goal] == cell
            assert router.sink_path(n, s)[0] in router.nets[n][0]


@pytest.mark.parametrize("target", [3, 5, 7, 9, 13])
def test_one_connection_is_padded_to_its_target(target):
    router = _router(8, 8, [((2, 3), [(5, 3)])])
    assert _depths(router, 0) == [3]
    result = pad_routes(router, [[target]])
    assert result.failed == []
    assert _depths(router, 0) == [target]
    # stubs add exactly the slack, or one detour routes the connection again at its length
    assert (result.padded, result.detours) in ((target - 3, 0), (0, 1))
    _assert_consistent(router)


def test_a_shared_trunk_carries_the_padding_its_branches_share():
    # a fan-out of two sinks both 4 wires away: targets 8 and 10 need 4 and 6 more, so at
    # least 4 of the padding sits where the paths are shared (or both get their own)
    router = _router(10, 10, [((2, 5), [(6, 5), (4, 7)])])
    assert _depths(router, 0) == [4, 4]
    result = pad_routes(router, [[8, 10]])
    assert result.failed == []
    assert _depths(router, 0) == [8, 10]
    _assert_consistent(router)


def test_a_sink_already_at_its_target_is_not_lengthened():
    router = _router(10, 10, [((2, 5), [(6, 5), (3, 5)])])
    assert _depths(router, 0) == [4, 1]
    result = pad_routes(router, [[10, 1]])
    assert result.failed == []
    assert _depths(router, 0) == [10, 1]
    _assert_consistent(router)


def test_none_targets_and_exact_routes_are_left_alone():
    router = _router(6, 6, [((1, 1), [(4, 1)]), ((1, 4), [(4, 4)])])
    before = [dict(t) for t in router.trees]
    result = pad_routes(router, [[None], [3]])
    assert (result.stubs, result.padded, result.detours, result.failed) == (0, 0, 0, [])
    assert [dict(t) for t in router.trees] == before


def test_a_boxed_in_connection_is_reported_and_left_as_routed():
    # a 3 x 1 grid: the only route is the straight one, no room to lengthen it
    router = _router(3, 1, [((0, 0), [(2, 0)])])
    assert _depths(router, 0) == [2]
    before = dict(router.trees[0])
    result = pad_routes(router, [[6]])
    assert result.failed == [(0, 0)]
    assert router.trees[0] == before
    _assert_consistent(router)


def test_padding_avoids_other_nets_wires():
    nets = [((1, 2), [(5, 2)]), ((3, 0), [(3, 4)]), ((0, 4), [(6, 4)])]
    router = _router(8, 6, nets)
    lengths = [_depths(router, n)[0] for n in range(3)]
    targets = [[lengths[0] + 6], [lengths[1] + 2], [lengths[2] + 4]]
    result = pad_routes(router, targets)
    assert result.failed == []
    assert [_depths(router, n) for n in range(3)] == targets
    _assert_consistent(router)


@pytest.mark.parametrize("wrong", [1, 4])
def test_a_target_shorter_or_of_the_other_parity_is_refused(wrong):
    router = _router(8, 8, [((2, 3), [(5, 3)])])      # a route of 3 wires
    with pytest.raises(ValueError, match="target"):
        pad_routes(router, [[wrong]])
