"""The compiled inner loops of the general back end alone (issue 36): the router's search and
the padding stubs (bitgrid.compiler.maze) against independent models on small grids (a
Dijkstra over wires, every closed walk enumerated), and the placer's moves
(bitgrid.compiler.anneal) against the cost recomputed from scratch."""

import heapq
import random

import numpy as np
import pytest

from bitgrid.compiler import anneal, general, maze
from bitgrid.compiler.place import AnnealState, connections, place
from bitgrid.compiler.route import HEURISTIC_WEIGHT, NEW_CELL_COST, RoutingGraph

from test_backend_designs import random_netlist


def _graph(rng, width, height, holes):
    cells = [(x, y) for x in range(width) for y in range(height)]
    allowed = set(cells) - set(rng.sample(cells, holes))
    return RoutingGraph(width, height, allowed)


def _congestion(rng, g):
    occ = np.array([rng.choice((0, 0, 0, 1, 2)) for _ in range(g.wires)], np.int32)
    hist = np.array([rng.choice((0.0, 0.0, 0.5, 2.0)) for _ in range(g.wires)])
    use = np.array([rng.choice((0, 0, 1, 3)) for _ in range(g.cells)], np.int32)
    return occ, hist, use


def _wire_cost(g, occ, hist, use, present, w):
    base = 1.0 + hist[w]
    if g.owner[w] >= 0 and use[g.owner[w]] == 0:
        base += NEW_CELL_COST
    return base * (1.0 + present * occ[w])


def _run(g, occ, hist, use, present, sources, goal_cell, goal_wire, target, tree=None,
         closed=(), free_only=False, weight=1.0):
    tree = tree or {}
    depth = np.full(g.wires, -1, np.int32)
    for w, d in tree.items():
        depth[w] = d
    closed_cells = np.zeros(g.cells, np.bool_)
    closed_cells[list(closed)] = True
    ws = maze.Workspace(g.wires, 100000)
    return maze.search(g.dest_array, g.owner_array, g.allowed_array, g.xs_array, g.ys_array,
                       occ, hist, use, present, NEW_CELL_COST, weight,
                       np.array(list(tree), np.int32), depth, closed_cells,
                       np.array(sources, np.int32), goal_cell, goal_wire, target, free_only,
                       100000, ws.keys, ws.vals, ws.stamps, ws.wire_keys, ws.wire_vals,
                       ws.wire_stamps, ws.seen, ws.next_stamp(), ws.ints, ws.floats, ws.order,
                       ws.intree)


def _next_wires(g, w, goal_wire, closed, tree):
    """The wires a route may take after ``w`` (the router's rules, written again)."""
    c = g.dest[w]
    if c < 0 or not g.allowed[c]:
        return []
    out = []
    for d in range(4):
        w2 = 4 * c + d
        c2 = g.dest[w2]
        if w2 != goal_wire and (c2 < 0 or not g.allowed[c2] or c2 in closed):
            continue
        if w2 in tree:
            continue
        out.append(w2)
    return out


def _is_goal(g, w, goal_cell, goal_wire):
    return w == goal_wire if goal_wire >= 0 else g.dest[w] == goal_cell


def _starts(g, sources, goal_cell, goal_wire, tree):
    """``(wire, cost so far)`` the search may begin on."""
    starts = [(w, 0.0) for w in tree]
    for w in sources:
        if w in tree:
            continue
        c = g.dest[w]
        goal = _is_goal(g, w, goal_cell, goal_wire)
        if (c < 0 and w != goal_wire) or (c >= 0 and not g.allowed[c] and not goal):
            continue
        starts.append((w, None))
    return starts


@pytest.mark.parametrize("weight", (1.0, HEURISTIC_WEIGHT))
@pytest.mark.parametrize("seed", range(40))
def test_untargeted_search_finds_the_cheapest_route(seed, weight):
    """Without a target the search is A* on wires: at weight 1 its path costs what a plain
    Dijkstra over the same rules finds, at the router's weight at most that factor more, on
    random 3 x 3 to 6 x 5 grids with holes, congestion, closed cells, a net's tree and cell
    or output-wire goals."""
    rng = random.Random(seed)
    g = _graph(rng, rng.randint(3, 6), rng.randint(3, 5), rng.randint(0, 3))
    occ, hist, use = _congestion(rng, g)
    present = rng.choice((0.5, 1.3, 4.0))
    usable = [c for c in range(g.cells) if g.allowed[c]]
    src_cell = rng.choice(usable)
    sources = [4 * src_cell + d for d in range(4)]
    if rng.random() < 0.3:
        goal_cell, goal_wire = -1, g.output_wire(rng.randrange(4), 0)
    else:
        goal_cell, goal_wire = rng.choice(usable), -1
    tree = {}
    if rng.random() < 0.5:                   # a branch of the net already routed
        w = rng.choice(sources)
        for depth in range(1, rng.randint(2, 4)):
            tree[w] = depth
            nxt = _next_wires(g, w, -1, set(), tree)
            if not nxt:
                break
            w = rng.choice(nxt)
    closed = set(rng.sample(usable, min(2, len(usable)))) - {goal_cell, src_cell}
    # Dijkstra over wires.
    dist = {}
    heap = []
    for w, cost in _starts(g, sources, goal_cell, goal_wire, tree):
        cost = _wire_cost(g, occ, hist, use, present, w) if cost is None else cost
        heapq.heappush(heap, (cost, w))
    best = None
    while heap:
        cost, w = heapq.heappop(heap)
        if w in dist:
            continue
        dist[w] = cost
        if _is_goal(g, w, goal_cell, goal_wire):
            best = cost
            break
        for w2 in _next_wires(g, w, goal_wire, closed, tree):
            if w2 not in dist:
                heapq.heappush(heap, (cost + _wire_cost(g, occ, hist, use, present, w2), w2))
    wires, depths, parent = _run(g, occ, hist, use, present, sources, goal_cell, goal_wire,
                                 -1, tree, closed, weight=weight)
    if best is None:
        assert parent == -2
        return
    assert parent != -2
    if parent == -3:                         # the goal is a tree wire
        assert best == 0.0 and int(wires[0]) in tree
        return
    got = sum(_wire_cost(g, occ, hist, use, present, int(w)) for w in wires)
    if weight == 1.0:
        assert got == pytest.approx(best)
    else:
        assert best - 1e-9 <= got <= weight * best + 1e-9
    # and the path is a route: from a tree wire or a source, wire after wire
    assert parent in tree or (parent == -1 and int(wires[0]) in sources)
    for a, b in zip([parent] + wires.tolist(), wires.tolist()):
        if a >= 0:
            assert b in _next_wires(g, a, goal_wire, closed, tree)
    assert _is_goal(g, int(wires[-1]), goal_cell, goal_wire)


@pytest.mark.parametrize("seed", range(40))
def test_targeted_search_routes_at_exactly_its_length(seed):
    """With a target the path is a route of exactly that many wires, no wire twice, none of
    the net's tree, over free wires only when asked; it costs no less than the cheapest such
    route (every simple route enumerated), and one is found whenever the enumeration finds
    one."""
    rng = random.Random(1000 + seed)
    g = _graph(rng, rng.randint(3, 4), rng.randint(3, 4), rng.randint(0, 2))
    occ, hist, use = _congestion(rng, g)
    present = 1.0
    usable = [c for c in range(g.cells) if g.allowed[c]]
    src_cell, goal_cell = rng.sample(usable, 2)
    sources = [4 * src_cell + d for d in range(4)]
    distance = g.distance(src_cell, goal_cell)
    target = distance + 2 * rng.randint(0, 3)
    free_only = rng.random() < 0.3
    best = None
    path = []

    def dfs(w, cost):
        nonlocal best
        if len(path) == target:
            if g.dest[w] == goal_cell and (best is None or cost < best):
                best = cost
            return
        for w2 in _next_wires(g, w, -1, set(), {}):
            if w2 in path or (free_only and occ[w2]):
                continue
            path.append(w2)
            dfs(w2, cost + _wire_cost(g, occ, hist, use, present, w2))
            path.pop()

    for w, _ in _starts(g, sources, goal_cell, -1, {}):
        if free_only and occ[w]:
            continue
        path.append(w)
        dfs(w, _wire_cost(g, occ, hist, use, present, w))
        path.pop()
    wires, depths, parent = _run(g, occ, hist, use, present, sources, goal_cell, -1, target,
                                 free_only=free_only)
    assert (parent != -2) == (best is not None)
    if best is None:
        return
    wires = wires.tolist()
    assert parent == -1 and wires[0] in sources
    assert len(wires) == target and depths.tolist() == list(range(1, target + 1))
    assert len(set(wires)) == target
    for a, b in zip(wires, wires[1:]):
        assert b in _next_wires(g, a, -1, set(), {})
    assert g.dest[wires[-1]] == goal_cell
    if free_only:
        assert not any(occ[w] for w in wires)
    got = sum(_wire_cost(g, occ, hist, use, present, w) for w in wires)
    assert got >= best - 1e-9


def _closed_walks(g, occ, start, length):
    """Every walk of exactly ``length`` free distinct wires out of ``start`` and back."""
    found = []
    path = []

    def dfs(cell):
        if len(path) == length:
            if cell == start:
                found.append(list(path))
            return
        for d in range(4):
            w = 4 * cell + d
            c = g.dest[w]
            if c < 0 or not g.allowed[c] or occ[w] or w in path:
                continue
            if c == start and len(path) + 1 != length:
                continue
            path.append(w)
            dfs(c)
            path.pop()

    dfs(start)
    return found


@pytest.mark.parametrize("seed", range(30))
def test_stub_is_the_longest_closed_walk_of_free_wires(seed):
    """A padding stub out of a cell and back over free wires: the longest of every length
    up to the amount asked (every closed walk enumerated on a 3 x 3 or 4 x 3 grid), its
    wires distinct, free and chained, and the scratch array left clean."""
    rng = random.Random(2000 + seed)
    g = _graph(rng, rng.randint(3, 4), 3, rng.randint(0, 2))
    occ = np.array([rng.choice((0, 0, 0, 1)) for _ in range(g.wires)], np.int32)
    use = np.array([rng.choice((0, 1)) for _ in range(g.cells)], np.int32)
    start = rng.choice([c for c in range(g.cells) if g.allowed[c]])
    amount = 2 * rng.randint(1, 5)
    taken = np.zeros(g.wires, np.bool_)
    walk = maze.stub(start, amount, g.dest_array, g.allowed_array, occ, use, g.xs_array,
                     g.ys_array, 10 ** 6, taken).tolist()
    assert not taken.any()
    longest = max((n for n in range(2, amount + 1, 2) if _closed_walks(g, occ, start, n)),
                  default=0)
    assert len(walk) == longest
    if walk:
        assert walk in _closed_walks(g, occ, start, len(walk))


@pytest.mark.parametrize("seed", range(8))
def test_annealer_moves_keep_the_cost_and_the_arrays_consistent(seed):
    """Random moves at every temperature, on random placements of random netlists: the total
    the moves keep incrementally equals the cost recomputed from scratch, every block sits
    on its own logic slot, every pin on a lane of its own, and the fixed pins stay."""
    rng = random.Random(seed)
    netlist = random_netlist(rng, inputs=rng.randint(3, 8), luts=rng.randint(5, 30),
                             outputs=rng.randint(1, 4))
    design = general.prepare(netlist)
    width, height = general.auto_size(design, None, None, None)
    graph = RoutingGraph(width, height, {(x, y) for x in range(width)
                                          for y in range(height)})
    pl = place(design, graph, {(x, y) for x in range(width) for y in range(height)},
               seed=seed, effort=0.01)
    lanes = [(s, i) for s in range(4) for i in range(width if s in (0, 2) else height)]
    movable = [i for i, p in enumerate(design.pins) if i % 3 and not (
        p.direction == "out" and p.net is None)]
    fixed = {i: pl.pin_lane[i] for i in range(len(design.pins)) if i not in movable}
    slots = [y * width + x for x in range(width) for y in range(height)]
    state = AnnealState(design, graph, pl, connections(design), lanes, False, movable, slots, 1)
    state.target[:] = [rng.choice((-1.0, 1.0, 3.0, 6.0)) for _ in state.target]
    anneal.seed(seed)
    total = state.total()
    for temperature in (1e9, 10.0, 1.0, 0.1, 1e-9):
        accepted, total = state.moves(300, temperature, float(width), total)
        assert 0 <= accepted <= 300
        assert total == pytest.approx(state.total())
    state.sync()
    cells = pl.block_cell
    assert len(set(cells)) == len(cells) and set(cells) <= set(slots)
    for b, c in enumerate(cells):
        assert state.occupied[c] == b
    assert (state.occupied >= 0).sum() == len(cells)
    by_lane = {}
    for i, lane in enumerate(pl.pin_lane):
        key = (design.pins[i].direction, lane)
        assert key not in by_lane
        by_lane[key] = i
        assert state.pin_at[state.pin_dir[i], state.lane_base[lane[0]] + lane[1]] == i
    for i, lane in fixed.items():
        assert pl.pin_lane[i] == lane
