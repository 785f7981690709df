"""Back end, step 2: placement by simulated annealing (issue 12).

The placer puts every block of a :class:`~.pack.Design` on a usable cell (one block per
cell) and every port bit on an edge lane whose boundary cell is usable (input bits on input
lanes, output bits on output lanes; ``pins`` fixes some). It follows VPR's annealer (Betz and
Rose 1997; the schedule of Swartz and Betz): random moves and swaps within a range window,
accepted by the Metropolis rule, the temperature lowered by a factor that depends on the
acceptance rate, and the window shrunk to keep about 44 % of moves accepted.

Cost, per connection ``c`` (driver to sink): its estimated length ``l_c`` in wires (the
Manhattan distance of the cells, plus one per lane end) divided by the square root of its
net's fan-out (a tree shares its trunk), times :data:`LOOP_WEIGHT` on a loop of blocks (it
sets the period), plus ``TIMING_WEIGHT * |l_c - t_c|``, ``t_c`` being
its length in the wave timing of the last temperature (:mod:`.timing`, re-solved at every
temperature): a connection shorter than its wave needs padding, a longer one delays every
later wave (the timing-driven cost of VPR, with padding instead of slack). A block with more
inputs than usable neighbours (at the edge of the region) pays :data:`EDGE_PENALTY` per
missing side, and two blocks side by side that exchange no signal pay
:data:`ADJACENT_PENALTY`: a cell's input sides are taken by its LUT's operands, so a block's
neighbours must be routing cells or its own drivers and readers (the initial placement puts
blocks on one parity of the chessboard, none touching).

The moves run compiled (:mod:`.anneal`, numba) on the arrays of :class:`AnnealState`, a
temperature's batch per call; the schedule, the timing solve at each temperature and the
full cost between batches stay here. Measured on ``priority`` (173 LUT4s, 66 x 66 grid,
about 130 temperatures of 7,500 moves; idle 2-core machine, numba cache warm, 2026-12-07):
placement 9.8 s in Python, 1.6 s compiled, of which the timing solves are 1.2 s.
"""

import math
import random

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from . import anneal
from .pack import logic_levels


__all__ = ["Placement", "AnnealState", "place", "TIMING_WEIGHT", "EDGE_PENALTY", "ADJACENT_PENALTY"]

#: Weight of a connection's distance from its wave length.
TIMING_WEIGHT = 0.7
#: Weight of a connection on a loop of blocks (registers in a cycle with their next-state
#: logic): the placed loops set a sequential design's period (issue 36 item 4). On the
#: sequential designs (2026-12-07, one compile each; cells x period summed over the six the
#: general back end lays out): 1 (none) 16,916; 4: 18,262; 10: 14,206; 20: 8,404 (`uart_tx`
#: 518 cells at period 24 to 337 at 16, `traffic` period 18 to 12); 40: 10,868.
LOOP_WEIGHT = 20.0
#: Cost per input a block cannot receive at its cell.
EDGE_PENALTY = 8.0
#: Cost of two blocks side by side that do not exchange a signal (their inputs take the
#: sides that would pass other signals).
ADJACENT_PENALTY = 3.0
#: Cost per input of a block that none of its neighbours can bring (a neighbour brings one
#: if it is free or drives the block).
DEFICIT_PENALTY = 12.0


class Placement:
    """Where things are: ``block_cell[i]`` (cell index), ``pin_lane[i]`` (``(side, lane)``,
    or ``None`` for a pin inside the grid), ``inner`` ``{pin: (cell, wire)}``: the pins on a
    macro's ports inside the grid (:mod:`.compose`), each with the cell beside the macro that
    reads or drives it and the wire its route starts or ends on."""

    def __init__(self, block_cell, pin_lane, inner=None):
        self.block_cell = block_cell
        self.pin_lane = pin_lane
        self.inner = dict(inner or {})

    def pin_cell(self, graph, i):
        """The cell pin ``i`` is read or driven by: its lane's boundary cell, or an inner
        pin's cell."""
        if i in self.inner:
            return self.inner[i][0]
        side, lane = self.pin_lane[i]
        return graph.boundary_cell(side, lane)


def connection_length(graph, design, placement, driver, sink):
    """Estimated wires of a connection (see the module docstring)."""
    a = _end_cell(graph, design, placement, driver)
    b = _end_cell(graph, design, placement, sink)
    extra = (driver[0] == "pin") + (sink[0] == "pin")
    if a == b and extra == 0:
        return 2
    return graph.distance(a, b) + extra


def _end_cell(graph, design, placement, end):
    kind, i = end
    if kind == "block":
        return placement.block_cell[i]
    return placement.pin_cell(graph, i)


def place(design, graph, allowed, *, pins=None, seed=0, solve=None, progress=None,
          effort=1.0, pitch=2, spread_pins=False, inner=None, closed_lanes=()):
    """Place ``design`` on ``graph`` (usable cells ``allowed``).

    :param pins: ``{(port, index): (side, lane)}`` of fixed port bits.
    :param solve: callable ``(lengths, placement) -> targets`` (per connection, in :func:`connections`
        order) for the timing term; ``None``: wire length only.
    :param pitch: blocks go on the cells whose x and y are ``pitch - 1`` modulo ``pitch`` (2:
        one cell in 4 is a logic slot; 3: one in 9, more routing room between blocks, and
        none next to the boundary cells the port lanes use), or on any cell when those are
        too few.
    :param spread_pins: port bits (not fixed by ``pins``) only on odd lanes and one per
        boundary cell, when those lanes hold them.
    :param inner: ``{(port, index): (cell, wire)}`` of port bits inside the grid (a macro's
        ports, :class:`Placement`), fixed.
    :param closed_lanes: ``(side, lane)`` no port bit takes (under a macro: a route from
        there would have to go around it).
    :raises ValueError: if the blocks or pins do not fit (the message says how many).
    """
    rng = random.Random(seed)
    pins = pins or {}
    cells = sorted(allowed, key=lambda xy: (xy[1], xy[0]))
    cell_ids = [y * graph.width + x for x, y in cells]
    nblocks = len(design.blocks)
    if nblocks > len(cell_ids):
        raise ValueError(f"the design needs {nblocks} logic cells but only {len(cell_ids)} "
                         "cells are usable")
    # Lanes whose boundary cell is usable.
    usable = set(cell_ids)
    # Logic slots: cells on a lattice of ``pitch``, so that blocks never touch and the cells
    # between them form connected routing channels (as in an island-style FPGA); all cells
    # when the slots are too few.
    margin = pitch - 1 if pitch > 2 else 0      # roomy: as far from every edge
    slots = [c for c in cell_ids if graph.xs[c] % pitch == pitch - 1
             and graph.ys[c] % pitch == pitch - 1
             and margin <= graph.xs[c] < graph.width - margin
             and margin <= graph.ys[c] < graph.height - margin]
    unit = pitch                    # the annealer's move step
    if len(slots) < nblocks:
        slots, unit = list(cell_ids), 1
    slot_set = set(slots)
    lanes = []
    for side in range(4):
        for lane in range(graph.width if side in (0, 2) else graph.height):
            if graph.boundary_cell(side, lane) in usable and (side, lane) not in closed_lanes:
                lanes.append((side, lane))
    in_pins = [i for i, p in enumerate(design.pins) if p.direction == "in"]
    out_pins = [i for i, p in enumerate(design.pins) if p.direction == "out"]
    pin_lane = [None] * len(design.pins)
    taken = {"in": set(), "out": set()}
    inner = {i: (inner or {})[(p.port, p.index)] for i, p in enumerate(design.pins)
             if (p.port, p.index) in (inner or {})}
    for i, p in enumerate(design.pins):
        key = (p.port, p.index)
        if key in pins and i not in inner:
            lane = pins[key]
            if lane in taken[p.direction]:
                raise ValueError(f"port {p.port} bit {p.index}: lane {'NESW'[lane[0]]}"
                                 f"{lane[1]} is given twice")
            pin_lane[i] = lane
            taken[p.direction].add(lane)
    # Port bits on every other lane, one per boundary cell, when the edges hold them: an
    # input lane and an output lane at one boundary cell, or pins side by side, take every
    # side of the boundary cells between them.
    fixed_lanes = taken["in"] | taken["out"]
    spaced = [lane for lane in lanes if lane[1] % 2 == 1 and lane not in fixed_lanes]
    loose = sum(1 for i in range(len(design.pins)) if pin_lane[i] is None and i not in inner)
    spread = spread_pins and loose <= len(spaced)
    if spread:
        lanes = spaced
        shared = set(fixed_lanes)
        taken = {"in": shared, "out": shared}
    for direction, group in (("in", in_pins), ("out", out_pins)):
        free = [lane for lane in lanes if lane not in taken[direction]]
        need = sum(1 for i in group if pin_lane[i] is None and i not in inner)
        if need > len(free):
            raise ValueError(f"the design has {len(group)} {direction}put bits but only "
                             f"{len(free) + len(group) - need} {direction}put lanes reach "
                             "usable cells")
    conns = connections(design)
    # Initial placement: blocks by logic level from west to east, pins on the W/E sides.
    level = _levels(design)
    span = max(level) + 1 if level else 1
    xs = sorted({x for x, _ in cells})
    columns = {}
    for x, y in cells:
        columns.setdefault(x, []).append(y)
    order = sorted(range(nblocks), key=lambda b: (level[b], b))
    block_cell = [None] * nblocks
    occupied = {}
    free_cells = list(cell_ids)
    rng.shuffle(free_cells)
    # Fill columns in proportion to level.
    target_x = {b: xs[min(len(xs) - 1, int(level[b] * len(xs) / span))] for b in order}
    by_x = {}
    for c in slots:
        by_x.setdefault(graph.xs[c], []).append(c)
    for col in by_x.values():
        col.sort(key=lambda c: abs(graph.ys[c] - graph.height / 2))
    def sides(c):
        x, y = graph.xs[c], graph.ys[c]
        return sum(1 for dx, dy in ((0, -1), (1, 0), (0, 1), (-1, 0))
                   if 0 <= x + dx < graph.width and 0 <= y + dy < graph.height
                   and graph.allowed[(y + dy) * graph.width + x + dx])

    for b in order:
        x0 = target_x[b]
        need = len(design.blocks[b].inputs)
        roomy = len(cell_ids) > 2.5 * nblocks
        for relax in (0, 1, 2):
            for dx in sorted(by_x, key=lambda x: abs(x - x0)):
                col = [c for c in by_x[dx] if c not in occupied
                       and (relax == 2 or (sides(c) >= max(need, 4 if roomy else 0)
                                           and (relax or not roomy
                                                or (graph.xs[c] + graph.ys[c]) % 2 == 0)))]
                if col:
                    c = col[0]
                    block_cell[b] = c
                    occupied[c] = b
                    break
            if block_cell[b] is not None:
                break
    for direction, group, prefer in (("in", in_pins, 3), ("out", out_pins, 1)):
        free = [lane for lane in lanes if lane not in taken[direction]]
        free.sort(key=lambda sl: (sl[0] != prefer, sl[0], sl[1]))
        for i in group:
            if pin_lane[i] is None and i not in inner:
                pin_lane[i] = free.pop(0)
                taken[direction].add(pin_lane[i])
    placement = Placement(block_cell, pin_lane, inner)
    movable_pins = [i for i, p in enumerate(design.pins)
                    if (p.port, p.index) not in pins and i not in inner
                    and not (p.direction == "out" and p.net is None)]
    _anneal(design, graph, placement, conns, lanes, spread, movable_pins, rng, solve,
            progress, effort, slot_set, unit)
    return placement


def connections(design):
    """Every connection ``(net index, sink index, driver, sink, registers)``."""
    result = []
    for n, net in enumerate(design.nets):
        for s, (sink, registers) in enumerate(net.sinks):
            result.append((n, s, net.driver, sink, registers))
    return result


def _levels(design):
    """Logic level of each block (longest path from the inputs, registers cut)."""
    nb = len(design.blocks)
    preds = [[] for _ in range(nb)]
    for net in design.nets:
        if net.driver[0] != "block":
            continue
        for sink, registers in net.sinks:
            if sink[0] == "block" and registers == 0:
                preds[sink[1]].append(net.driver[1])
    levels = logic_levels(dict(enumerate(preds)))
    return [levels[b] for b in range(nb)]


def _in_loops(nb, drv, snk):
    """Which connections (driver and sink objects, blocks below ``nb``) lie on a loop of
    blocks (a strongly connected component, registers or not): a boolean array."""
    blocks = (drv < nb) & (snk < nb)
    if not blocks.any():
        return np.zeros(len(drv), np.bool_)
    graph = scipy.sparse.coo_matrix((np.ones(int(blocks.sum())), (drv[blocks], snk[blocks])),
                                    shape=(nb, nb)).tocsr()
    count, label = scipy.sparse.csgraph.connected_components(graph, connection="strong")
    size = np.bincount(label, minlength=count)
    inside = np.zeros(len(drv), np.bool_)
    k = np.flatnonzero(blocks)
    same = label[drv[k]] == label[snk[k]]
    inside[k] = same & ((size[label[drv[k]]] > 1) | (drv[k] == snk[k]))
    return inside


def _csr(lists):
    """``(start, items)`` arrays of a list of integer lists."""
    start = np.zeros(len(lists) + 1, np.int64)
    start[1:] = np.cumsum([len(x) for x in lists])
    items = np.array([v for x in lists for v in x], np.int64)
    return start, items


class AnnealState:
    """A placement as the arrays :mod:`.anneal` works on (built from ``pl``, a
    :class:`Placement`; :meth:`sync` writes them back to it).

    :param conns: :func:`connections` of ``design``; ``lanes``: the ``(side, lane)`` pins may
        take; ``spread``: one pin per lane whatever its direction; ``movable_pins``: indices
        of the pins the annealer may move; ``slots``: the cells blocks may take; ``unit``:
        the step of a block move.
    """

    def __init__(self, design, graph, pl, conns, lanes, spread, movable_pins, slots, unit):
        self.pl, self.graph, self.unit = pl, graph, unit
        nb = self.nb = len(design.blocks)
        npins = len(design.pins)
        width, height = graph.width, graph.height
        self.width, self.height = width, height
        self.xs, self.ys = graph.xs_array.astype(np.int64), graph.ys_array.astype(np.int64)
        self.allowed = graph.allowed_array

        def obj(end):
            return end[1] if end[0] == "block" else nb + end[1]

        fanout = [len(net.sinks) for net in design.nets]
        self.weight = np.array([1.0 / math.sqrt(fanout[n]) for n, *_ in conns], np.float64)
        drv = self.drv = np.array([obj(c[2]) for c in conns], np.int64)
        snk = self.snk = np.array([obj(c[3]) for c in conns], np.int64)
        self.weight[_in_loops(nb, drv, snk)] *= LOOP_WEIGHT
        touches = [[] for _ in range(nb + npins)]
        for k in range(len(conns)):
            touches[drv[k]].append(k)
            if snk[k] != drv[k]:
                touches[snk[k]].append(k)
        self.touch = _csr(touches)
        self.target = np.full(len(conns), -1.0)     # wave lengths (-1: none)
        usable = self.usable = np.zeros(graph.cells, np.int64)
        for c in range(graph.cells):
            for dx, dy in ((0, -1), (1, 0), (0, 1), (-1, 0)):
                nx, ny = graph.xs[c] + dx, graph.ys[c] + dy
                if 0 <= nx < width and 0 <= ny < height and graph.allowed[ny * width + nx]:
                    usable[c] += 1
        self.ninputs = np.array([len(b.inputs) for b in design.blocks], np.int64)
        # Pins a block at their boundary cell can serve directly (it reads the input lane,
        # or drives the output lane); any other pin there would need a side the block uses.
        direct = [set() for _ in range(nb)]
        linked = [set() for _ in range(nb)]
        feeds = [set() for _ in range(nb)]       # the blocks each block reads
        for net in design.nets:
            for sink, registers in net.sinks:
                if net.driver[0] == "block" and sink[0] == "block":
                    linked[net.driver[1]].add(sink[1])
                    linked[sink[1]].add(net.driver[1])
                    feeds[sink[1]].add(net.driver[1])
                if registers:
                    continue
                if net.driver[0] == "block" and sink[0] == "pin":
                    direct[net.driver[1]].add(sink[1])
                elif net.driver[0] == "pin" and sink[0] == "block":
                    direct[sink[1]].add(net.driver[1])
        self.direct = _csr([sorted(x) for x in direct])
        self.link = _csr([sorted(x) for x in linked])
        self.feed = _csr([sorted(x) for x in feeds])
        self.boundary = np.zeros(graph.cells, np.bool_)
        for c in range(graph.cells):
            if graph.xs[c] in (0, width - 1) or graph.ys[c] in (0, height - 1):
                self.boundary[c] = True
        self.is_slot = np.zeros(graph.cells, np.bool_)
        self.is_slot[list(slots)] = True
        self.block_cell = np.array(pl.block_cell, np.int64)
        self.occupied = np.full(graph.cells, -1, np.int64)
        self.occupied[self.block_cell] = np.arange(nb)
        self.lane_base = np.array([0, width, width + height, 2 * width + height], np.int64)
        self.boundary_cells = np.array([graph.boundary_cell(s, i) for s in range(4)
                                        for i in range(width if s in (0, 2) else height)],
                                       np.int64)
        # (an inner pin, fixed: lane N0 in the arrays, its own cell, on no lane)
        lanes_of = [lane if lane is not None else (0, 0) for lane in pl.pin_lane]
        self.pin_side = np.array([lane[0] for lane in lanes_of], np.int64)
        self.pin_lane = np.array([lane[1] for lane in lanes_of], np.int64)
        self.pin_cell = self.boundary_cells[self.lane_base[self.pin_side] + self.pin_lane]
        for i, (cell, _) in pl.inner.items():
            self.pin_cell[i] = cell
        self.pin_dir = np.array([0 if spread or p.direction == "in" else 1
                                 for p in design.pins], np.int64)
        self.pin_at = np.full((2, 2 * (width + height)), -1, np.int64)
        on_lanes = np.array([i for i in range(npins) if i not in pl.inner], np.int64)
        self.pin_at[self.pin_dir[on_lanes], self.lane_base[self.pin_side[on_lanes]]
                    + self.pin_lane[on_lanes]] = on_lanes
        self.movable_pin = np.zeros(npins, np.bool_)
        self.movable_pin[movable_pins] = True
        self.side_lanes = _csr([[lane for side, lane in lanes if side == s] for s in range(4)])
        self.movables = np.array(list(range(nb)) + [nb + i for i in movable_pins], np.int64)
        self.cost = np.zeros(len(conns), np.float64)
        self.mark = np.zeros(len(conns) + 1, np.int64)
        self.weights = (TIMING_WEIGHT, EDGE_PENALTY, ADJACENT_PENALTY, DEFICIT_PENALTY)

    def sync(self):
        """Write the arrays back to the :class:`Placement`."""
        self.pl.block_cell[:] = self.block_cell.tolist()
        self.pl.pin_lane[:] = [None if i in self.pl.inner else lane for i, lane in
                               enumerate(zip(self.pin_side.tolist(), self.pin_lane.tolist()))]

    def lengths(self):
        """Estimated wires per connection (a list)."""
        return anneal.lengths(self.nb, self.drv, self.snk, self.block_cell, self.pin_cell,
                              self.xs, self.ys).tolist()

    def total(self):
        """The placement's cost, every connection's recomputed (:func:`.anneal.total`)."""
        return anneal.total(self.nb, self.drv, self.snk, self.block_cell, self.pin_cell,
                            self.occupied, self.allowed, self.width, self.height, self.xs,
                            self.ys, self.weight, self.target, self.cost, self.ninputs,
                            self.usable, *self.link, *self.feed, *self.weights)

    def moves(self, count, temperature, rlim, total, record=None):
        """``count`` moves (:func:`.anneal.moves`): ``(accepted, total after)``; the deltas
        of the accepted moves go to ``record`` if given."""
        return anneal.moves(
            count, temperature, rlim, self.unit,
            np.zeros(0) if record is None else record, self.nb, self.movables, self.drv,
            self.snk, self.block_cell, self.pin_cell, self.pin_side, self.pin_lane,
            self.pin_dir, self.movable_pin, self.pin_at, self.lane_base, *self.side_lanes,
            self.boundary_cells, self.occupied, self.is_slot, self.allowed, self.boundary,
            self.width, self.height, self.xs, self.ys, self.weight, self.target, self.cost,
            self.ninputs, self.usable, *self.touch, *self.direct, *self.link, *self.feed,
            self.mark, total, *self.weights)


def _anneal(design, graph, pl, conns, lanes, spread, movable_pins, rng, solve, progress,
            effort, slots, unit):
    """Anneal ``pl`` in place: the schedule here, the moves in :func:`.anneal.moves`."""
    state = AnnealState(design, graph, pl, conns, lanes, spread, movable_pins, slots, unit)
    anneal.seed(rng.randrange(2 ** 31))

    def retime():
        if solve is None:
            return
        state.sync()
        result = solve(state.lengths(), pl)
        if result is not None:
            state.target[:] = [-1.0 if t is None else t for t in result]

    retime()
    total = state.total()
    n = len(state.movables)
    if not n:
        return
    width, height = graph.width, graph.height
    rlim = float(max(width, height))
    moves_per_t = max(100, int(effort * 10 * n ** 1.2))
    # Initial temperature: 20 x the standard deviation of random move deltas (VPR).
    samples = np.zeros(min(200, 4 * n))
    accepted, total = state.moves(len(samples), 1e9, rlim, total, samples)
    sd = float(samples[:accepted].std()) if accepted > 1 else 1.0
    temperature = max(1e-3, 20 * sd)
    step = 0
    stop = 0.002 * max(1.0, total) / max(1, len(conns))
    while temperature > stop:
        accepted, total = state.moves(moves_per_t, temperature, rlim, total)
        rate = accepted / moves_per_t
        if rate > 0.96:
            alpha = 0.5
        elif rate > 0.8:
            alpha = 0.9
        elif rate > 0.15:
            alpha = 0.95
        else:
            alpha = 0.8
        temperature *= alpha
        rlim = min(float(max(width, height)), max(float(unit), rlim * (1 - 0.44 + rate)))
        retime()
        total = state.total()
        step += 1
        if progress is not None:
            progress("place", step, 0)
        if step > 400:
            break
    # A final greedy pass at zero temperature.
    state.moves(moves_per_t, 1e-9, rlim, total)
    state.sync()
