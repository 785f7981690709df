"""Back end, step 3: routing on the grid's cell outputs, with exact lengths (issue 12).

The routing-resource graph (as in VPR, Betz and Rose 1997) has one node per *wire*: output
``d`` of cell ``(x, y)`` (SPEC section 2), which is input ``opposite(d)`` of the neighbour on
side ``d``, plus one node per input lane of the grid's edge. A wire carries one signal; a cell
can drive any of its 4 outputs with any of its 4 inputs (a pass cell: straight, turn, crossing,
fan-out to several sides), or with a LUT of them (a logic cell, whose spare outputs still pass
other signals through). Wire ``w`` feeds the cell ``dest[w]``, whose 4 outputs are the next
wires (including the one back towards ``w``'s cell: a U-turn, two subcycles of delay).

A net's route is a tree of wires from its source (the outputs of its driver's cell, or its
input lane) with the *depth* of each wire (the source wire is 1). A sink is a cell (a LUT
input: any wire entering that cell) or an output lane (one wire leaving the grid). The
timing (:mod:`.timing`) gives each LUT sink a *target*: the depth its wire must have, so that
every operand of a LUT arrives in the same wave. The search for such a sink runs on states
``(wire, depth)`` (a time-expanded graph) and must reach the goal at exactly the target, so it
pads the route with detours as needed; without a target it is an ordinary A* maze route.

Congestion is negotiated as in PathFinder (McMurchie and Ebeling 1995): every net is ripped
up and rerouted in each iteration; a wire used by several nets costs
``(base + history) * (1 + present * (users))``, the present factor growing each iteration and
the history of overused wires accumulating, until no wire has two users. The base cost is 1
plus :data:`NEW_CELL_COST` for a wire of a cell nothing else uses yet, so routes and padding
crowd into cells that are already in use (the report counts cells).

The search runs compiled (:func:`.maze.search`, numba) on the graph's arrays and the
congestion kept here as numpy arrays; trees, goals and the negotiation stay in Python.
Measured on ``priority`` (173 LUT4s, 66 x 66, idle 2-core machine, 2026-12-07): 11
PathFinder iterations 6.9 s in Python, 1.0 s compiled.
"""

import numpy as np

from . import maze

__all__ = ["RoutingGraph", "Router", "NEW_CELL_COST", "HEURISTIC_WEIGHT"]

#: Extra cost of a wire in a cell that carries nothing else (fewer cells used).
NEW_CELL_COST = 0.6
#: The weight of the distance in the search without a target (weighted A*: a path at most
#: this factor dearer than the cheapest). Measured on `cavlc` (213 logic cells at pitch 4 on
#: 84 x 84, 2026-12-07): routing 26 s with 61,451 searches at 1.0, 9 s with 38,885 at 1.3
#: (fewer PathFinder iterations too), the same cells within 0.1 %; `i2c` on 104 x 104 did
#: not converge at 1.0 and routed in 8 s at 1.3. (Tried before in pure Python at 1.4, it had
#: slowed convergence on smaller circuits.)
HEURISTIC_WEIGHT = 1.3
#: States a targeted search may expand before it gives up on a sink.
MAX_EXPANSIONS = 60000
#: PathFinder's schedule: the history cost an overused wire gains per extra user and
#: iteration, and the factor of the present-congestion cost per iteration.
HISTORY_FACTOR, PRESENT_GROWTH = 1.0, 1.3

_STEP = ((0, -1), (1, 0), (0, 1), (-1, 0))


class RoutingGraph:
    """Wires of a ``width`` x ``height`` grid whose usable cells are ``allowed`` (a set of
    ``(x, y)``).

    Wire ``4 * (y * width + x) + d`` is output ``d`` of cell ``(x, y)``; the input lane ``i``
    of side ``s`` is wire :meth:`lane_wire` ``(s, i)``. ``dest[w]`` is the cell index
    (``y * width + x``) a wire feeds (-1 off the grid), ``side[w]`` the side it enters by.
    """

    def __init__(self, width, height, allowed):
        self.width, self.height = width, height
        n = width * height
        self.cells = n
        self.allowed = [False] * n
        for x, y in allowed:
            self.allowed[y * width + x] = True
        self.lane_base = [4 * n, 4 * n + width, 4 * n + width + height,
                          4 * n + 2 * width + height]
        total = 4 * n + 2 * (width + height)
        self.wires = total
        self.dest = [-1] * total
        self.side = [0] * total
        self.owner = [-1] * total          # the cell computing the wire (-1: an input lane)
        for y in range(height):
            for x in range(width):
                c = y * width + x
                for d in range(4):
                    w = 4 * c + d
                    self.owner[w] = c
                    nx, ny = x + _STEP[d][0], y + _STEP[d][1]
                    if 0 <= nx < width and 0 <= ny < height:
                        self.dest[w] = ny * width + nx
                    self.side[w] = (d + 2) % 4
        for s in range(4):
            for i in range(width if s in (0, 2) else height):
                w = self.lane_base[s] + i
                self.dest[w] = self.boundary_cell(s, i)
                self.side[w] = s
        self.xs = [c % width for c in range(n)]
        self.ys = [c // width for c in range(n)]
        # the same as arrays, for the compiled search (:mod:`.maze`)
        self.dest_array = np.array(self.dest, np.int32)
        self.owner_array = np.array(self.owner, np.int32)
        self.allowed_array = np.array(self.allowed, np.bool_)
        self.xs_array = np.array(self.xs, np.int32)
        self.ys_array = np.array(self.ys, np.int32)

    def boundary_cell(self, side, lane):
        """Cell index of the boundary cell of lane ``lane`` on ``side`` (SPEC section 2)."""
        w, h = self.width, self.height
        x, y = ((lane, 0), (w - 1, lane), (lane, h - 1), (0, lane))[side]
        return y * w + x

    def lane_wire(self, side, lane):
        """The wire of input lane ``lane`` on ``side``."""
        return self.lane_base[side] + lane

    def output_wire(self, side, lane):
        """The wire of output lane ``lane`` on ``side``: output ``side`` of its boundary
        cell."""
        return 4 * self.boundary_cell(side, lane) + side

    def distance(self, a, b):
        """Manhattan distance between cells ``a`` and ``b`` (indices)."""
        return abs(self.xs[a] - self.xs[b]) + abs(self.ys[a] - self.ys[b])


class Router:
    """PathFinder on a :class:`RoutingGraph` (module docstring).

    :param nets: list of ``(sources, sinks)``: ``sources`` the wires a net starts on (its
        driver cell's 4 outputs, or its lane), ``sinks`` a list of ``("cell", index)`` or
        ``("wire", w)`` goals.
    :param reserved: cells whose outputs are the nets' sources (logic cells): counted as used.
    :param closed: cells no net may enter unless the cell is one of its sinks (logic cells
        whose LUTs read all 4 sides: a signal passing through would take an operand's side).
    """

    def __init__(self, graph, nets, reserved=(), closed=()):
        self.g = graph
        self.nets = nets
        self._closed = np.zeros(graph.cells, np.bool_)
        self._closed[list(closed)] = True
        # a net may enter the closed cells it reads
        self._sink_cells = [sorted({goal for kind, goal in sinks if kind == "cell"})
                            for _, sinks in nets]
        n = graph.wires
        self.occ = np.zeros(n, np.int32)
        self.hist = np.zeros(n, np.float64)
        self.cell_use = np.zeros(graph.cells, np.int32)
        for c in reserved:
            self.cell_use[c] += 1
        self._tree_depth = np.full(n, -1, np.int32)
        self._work = maze.Workspace(n, MAX_EXPANSIONS)
        self._taken = np.zeros(n, np.bool_)
        self.trees = [dict() for _ in nets]       # wire -> (depth, parent wire or -1)
        self.goals = [[None] * len(sinks) for _, sinks in nets]
        self.present = 0.5
        self.budget = None                        # net reroutes left, or None (no limit)
        self.reroutes = 0                         # net reroutes so far

    # Occupancy --------------------------------------------------------------------------------
    def _add(self, net, wire, depth, parent):
        self.trees[net][wire] = (depth, parent)
        self.occ[wire] += 1
        owner = self.g.owner[wire]
        if owner >= 0:
            self.cell_use[owner] += 1

    def _remove(self, net, wire):
        """Take ``wire`` out of ``net``'s tree (what hangs from it is the caller's)."""
        del self.trees[net][wire]
        self.occ[wire] -= 1
        owner = self.g.owner[wire]
        if owner >= 0:
            self.cell_use[owner] -= 1

    def state(self):
        """A copy of what routing and padding change (:meth:`restore` puts it back): to try
        padding for another period on the same routes."""
        return (self.occ.copy(), self.hist.copy(), self.cell_use.copy(),
                [dict(t) for t in self.trees], [list(g) for g in self.goals], self.present,
                self.reroutes)

    def restore(self, state):
        """Back to ``state`` (from :meth:`state`; used once: the router takes it over)."""
        (self.occ, self.hist, self.cell_use, self.trees, self.goals, self.present,
         self.reroutes) = state

    def scratch_taken(self):
        """A boolean array, one per wire, all False, for :func:`.maze.stub` (which leaves it
        so)."""
        return self._taken

    def rip_up(self, net):
        for wire in list(self.trees[net]):
            self._remove(net, wire)
        self.goals[net] = [None] * len(self.nets[net][1])

    def overused(self):
        """Wires with more than one net."""
        return np.flatnonzero(self.occ > 1).tolist()

    # Search -----------------------------------------------------------------------------------
    def route_net(self, net, targets):
        """Rip up and route ``net``; ``targets[i]`` is sink ``i``'s depth or ``None``.
        :returns: the list of sinks that could not be routed at their target."""
        self.rip_up(net)
        sources, sinks = self.nets[net]
        order = sorted(range(len(sinks)),
                       key=lambda i: (targets[i] is None, targets[i] or 0, i))
        failed = []
        for i in order:
            path = self._search(net, sources, sinks[i], targets[i])
            if path is None:
                failed.append(i)
                path = self._search(net, sources, sinks[i], None)
                if path is None:
                    raise _Unroutable(net, i)
            tree = self.trees[net]
            for wire, depth, parent in path:
                if wire not in tree:
                    self._add(net, wire, depth, parent)
            self.goals[net][i] = path[-1][0] if path else None
        return failed

    def _search(self, net, sources, sink, target, free_only=False):
        """The cheapest path to ``sink`` from ``net``'s tree or ``sources`` (at exactly
        ``target`` wires if not None; only unused wires if ``free_only``): a list of
        ``(wire, depth, parent)``, or None. The search itself is :func:`.maze.search`."""
        g = self.g
        tree = self.trees[net]
        kind, goal = sink
        goal_cell, goal_wire = (goal, -1) if kind == "cell" else (-1, goal)
        tree_wires = np.fromiter(tree, np.int32, len(tree))
        depth = self._tree_depth
        if len(tree):
            depth[tree_wires] = np.fromiter((d for d, _ in tree.values()), np.int32, len(tree))
        closed = self._closed
        opened = [c for c in self._sink_cells[net] if closed[c]]
        closed[opened] = False
        ws = self._work
        try:
            wires, depths, parent = maze.search(
                g.dest_array, g.owner_array, g.allowed_array, g.xs_array, g.ys_array,
                self.occ, self.hist, self.cell_use, self.present, NEW_CELL_COST,
                HEURISTIC_WEIGHT,
                tree_wires, depth, closed, np.asarray(sources, np.int32), goal_cell, goal_wire,
                -1 if target is None else target, free_only, MAX_EXPANSIONS,
                ws.keys, ws.vals, ws.stamps, ws.wire_keys, ws.wire_vals, ws.wire_stamps,
                ws.seen, ws.next_stamp(), ws.ints, ws.floats, ws.order, ws.intree)
        finally:
            depth[tree_wires] = -1
            closed[opened] = True
        if parent == -2:
            return None
        if parent == -3:                    # the goal is already in the tree
            w = int(wires[0])
            return [(w, int(depths[0]), tree[w][1])]
        result = []
        for w, d in zip(wires.tolist(), depths.tolist()):
            result.append((w, d, parent))
            parent = w
        return result

    # PathFinder -------------------------------------------------------------------------------
    def iterate(self, targets, *, order=None):
        """Reroute every net once; ``targets[net][sink]``. Then raise the history of overused
        wires. :returns: ``(overused wires, failed sinks as (net, sink))``."""
        failed = []
        for net in (order if order is not None else range(len(self.nets))):
            self.reroutes += 1
            if self.budget is not None and self.reroutes > self.budget:
                raise TimeoutError("routing budget spent")
            for i in self.route_net(net, targets[net]):
                failed.append((net, i))
        over = self.overused()
        for w in over:
            self.hist[w] += HISTORY_FACTOR * (self.occ[w] - 1)
        self.present *= PRESENT_GROWTH
        return over, failed

    def users(self, wire):
        """Nets whose tree holds ``wire``."""
        return [n for n, tree in enumerate(self.trees) if wire in tree]

    def sink_path(self, net, sink):
        """The wires from the source to sink ``sink`` of ``net`` (source first)."""
        tree = self.trees[net]
        w = self.goals[net][sink]
        path = []
        while w != -1 and w is not None:
            path.append(w)
            w = tree[w][1]
        path.reverse()
        return path


class _Unroutable(Exception):
    def __init__(self, net, sink):
        super().__init__(f"net {net} sink {sink} cannot be reached")
        self.net, self.sink = net, sink
