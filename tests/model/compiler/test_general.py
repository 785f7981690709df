"""The general back end alone (bitgrid.compiler.general, issue 36): programs at periods with
wave windows (operands that arrive up to ``period - 2`` subcycles apart), the periods it pads
for, the router's closed cells, and the ``area`` objective; every program run on the emulator
against Netlist.simulate on rows streamed back to back (the independent cycle model), where a
window too narrow shows as a wrong row."""

import random
import time

import pytest

from bitgrid.compiler import compile_netlist
from bitgrid.compiler import general
from bitgrid.compiler.route import Router, RoutingGraph
from bitgrid.evaluate import evaluate

from test_backend_designs import _rows, random_netlist


def _on(netlist, *, period, seed=0, pitch=3, size=None):
    """One placement of ``netlist`` at ``period`` (or ``"any"``), or None if it does not
    route or pad there."""
    design = general.prepare(netlist)
    width, height = size or general.auto_size(design, None, None, None)
    try:
        return general.compile_on(netlist, design, width, height, None, None, {}, seed, None,
                                  {}, time.perf_counter(), reroute=False, pitch=pitch,
                                  period=period)
    except general.RouteFailure:
        return None


def _same(netlist, result, count=200, seed=0):
    rows = _rows(netlist, count, random.Random(seed))
    want = netlist.simulate(rows)
    got = evaluate(result.config, result.portmap, rows, target="fast")
    bad = [k for k in range(count) if want[k] != got[k]]
    assert not bad, (f"{len(bad)} of {count} rows differ, first {bad[0]}: inputs "
                     f"{rows[bad[0]]}, expected {want[bad[0]]}, got {got[bad[0]]}; period "
                     f"{result.portmap.period}")


@pytest.mark.parametrize("seed", range(6))
def test_windows_at_every_period_give_the_right_rows(seed):
    """A random combinational netlist placed once per period: at a longer period fewer
    wires pad the operands (none at the last of :meth:`WaveTiming.periods`), and every
    program is right on 200 random rows back to back."""
    rng = random.Random(seed)
    netlist = random_netlist(rng, inputs=rng.randint(4, 7), luts=rng.randint(8, 16),
                             outputs=3)
    compiled = {}
    for period in (2, 6, 12, 40):
        result = _on(netlist, period=period, seed=seed, size=(16, 16))
        if result is not None:
            assert result.portmap.period == period
            _same(netlist, result, seed=seed)
            compiled[period] = result.report["cells"]["delay"]
    assert 40 in compiled, "the longest period needs no padding, so it always pads"
    assert compiled[40] == 0


@pytest.mark.parametrize("seed", range(4))
def test_any_period_is_the_shortest_attempted_that_pads(seed):
    rng = random.Random(100 + seed)
    netlist = random_netlist(rng, inputs=6, luts=rng.randint(10, 18), outputs=3)
    result = _on(netlist, period="any", seed=seed, size=(16, 16))
    assert result is not None
    tried = result.report["periods_tried"]
    assert tried == sorted(set(tried)) and tried[-1] == result.portmap.period
    _same(netlist, result, seed=seed)
    if len(tried) > 1:          # the one before did not pad on the same placement
        assert _on(netlist, period=tried[-2], seed=seed, size=(16, 16)) is None


def test_a_state_machine_keeps_its_loops_exact_at_its_period():
    from test_backend_designs import counter
    netlist = counter(4, init=5)
    result = _on(netlist, period="any", pitch=2)
    assert result is not None
    assert result.report["periods_tried"] == [result.portmap.period]
    rows = [{"en": (k // 3) % 2} for k in range(60)]
    got = evaluate(result.config, result.portmap, rows, target="fast")
    assert got == netlist.simulate(rows)


def test_a_closed_cell_takes_only_its_own_operands():
    """A 5 x 1 strip: a net from cell 0 to cell 4 must cross cell 2; closed (a logic cell
    reading all 4 sides) it is refused, so the net has no route."""
    graph = RoutingGraph(5, 1, {(x, 0) for x in range(5)})
    nets = [([4 * 0 + d for d in range(4)], [("cell", 4)])]
    open_router = Router(graph, nets)
    assert open_router.route_net(0, [None]) == []
    assert graph.owner[next(w for w in open_router.trees[0] if graph.owner[w] == 2)] == 2
    closed = Router(graph, nets, closed=[2])
    from bitgrid.compiler.route import _Unroutable
    with pytest.raises(_Unroutable):
        closed.route_net(0, [None])
    # a net whose sink is the closed cell enters it
    to_two = Router(graph, [([0, 1, 2, 3], [("cell", 2)])], closed=[2])
    assert to_two.route_net(0, [None]) == []


def test_the_area_objective_keeps_the_fewest_cells():
    rng = random.Random(7)
    netlist = random_netlist(rng, inputs=8, luts=34, outputs=4)
    area = compile_netlist(netlist, objective="area")
    candidates = area.report["candidates"]
    assert area.report["cells"]["total"] == min(c["cells"] for c in candidates)
    assert {c["back_end"] for c in candidates} >= {"sweep", "general"}
    _same(netlist, area)
    default = compile_netlist(netlist)
    assert default.report["cells"]["total"] * default.portmap.period == min(
        c["cells"] * c["period"] for c in default.report["candidates"])
    with pytest.raises(ValueError, match="objective"):
        compile_netlist(netlist, objective="speed")


def test_routing_gives_up_only_when_it_stalls_crowded():
    """PathFinder's stop rule (general._stalled): a crowded count that stopped falling ends
    routing; a falling one, or a few wires left however long they stay, do not."""
    window = general.STALL_ITERATIONS
    crowded = [1500, 900, 500, 300] + [280] * (window - 4) + [270] * window
    assert general._stalled(crowded)                     # 270 > 0.9 * 280
    assert not general._stalled(crowded[:window])        # not past one window yet
    falling = [1500, 900, 500, 300] + [280] * (window - 4) + [240] * window
    assert not general._stalled(falling)                 # 240 < 0.9 * 280
    few = [1500, 900, 500, 300] + [12] * (window - 4) + [12] * window
    assert not general._stalled(few)                     # 12 <= CROWDED_WIRES: keep going
    tail = general.TAIL_ITERATIONS
    stuck = [300, 100, 40, 10] + [2] * tail
    assert not general._stalled(stuck)                   # 2 first reached within the tail
    assert general._stalled(stuck + [3])                  # no fewer than 2 in the last tail
    assert not general._stalled(stuck + [1])              # a new fewest
