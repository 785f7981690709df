"""Back end, step 2: placement by simulated annealing (issue 12).

The placer puts every block of a :class:`~.pack.Design` on a usable cell (one block per
cell) and every port bit on an edge lane whose boundary cell is usable (input bits on input
lanes, output bits on output lanes; ``pins`` fixes some). It follows VPR's annealer (Betz and
Rose 1997; the schedule of Swartz and Betz): random moves and swaps within a range window,
accepted by the Metropolis rule, the temperature lowered by a factor that depends on the
acceptance rate, and the window shrunk to keep about 44 % of moves accepted.

Cost, per connection ``c`` (driver to sink): its estimated length ``l_c`` in wires (the
Manhattan distance of the cells, plus one per lane end) divided by the square root of its
net's fan-out (a tree shares its trunk), plus ``TIMING_WEIGHT * |l_c - t_c|``, ``t_c`` being
its length in the wave timing of the last temperature (:mod:`.timing`, re-solved at every
temperature): a connection shorter than its wave needs padding, a longer one delays every
later wave (the timing-driven cost of VPR, with padding instead of slack). A block with more
inputs than usable neighbours (at the edge of the region) pays :data:`EDGE_PENALTY` per
missing side, and two blocks side by side that exchange no signal pay
:data:`ADJACENT_PENALTY`: a cell's input sides are taken by its LUT's operands, so a block's
neighbours must be routing cells or its own drivers and readers (the initial placement puts
blocks on one parity of the chessboard, none touching).
"""

import math
import random

from .pack import logic_levels


__all__ = ["Placement", "place", "TIMING_WEIGHT", "EDGE_PENALTY", "ADJACENT_PENALTY"]

#: Weight of a connection's distance from its wave length.
TIMING_WEIGHT = 0.7
#: Cost per input a block cannot receive at its cell.
EDGE_PENALTY = 8.0
#: Cost of two blocks side by side that do not exchange a signal (their inputs take the
#: sides that would pass other signals).
ADJACENT_PENALTY = 3.0
#: Cost per input of a block that none of its neighbours can bring (a neighbour brings one
#: if it is free or drives the block).
DEFICIT_PENALTY = 12.0


class Placement:
    """Where things are: ``block_cell[i]`` (cell index), ``pin_lane[i]`` (``(side, lane)`` or
    ``None`` for an output bit with no net)."""

    def __init__(self, block_cell, pin_lane):
        self.block_cell = block_cell
        self.pin_lane = pin_lane


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
    side, lane = placement.pin_lane[i]
    return graph.boundary_cell(side, lane)


def place(design, graph, allowed, *, pins=None, seed=0, solve=None, progress=None,
          effort=1.0, pitch=2, spread_pins=False):
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
            if graph.boundary_cell(side, lane) in usable:
                lanes.append((side, lane))
    in_pins = [i for i, p in enumerate(design.pins) if p.direction == "in"]
    out_pins = [i for i, p in enumerate(design.pins) if p.direction == "out"]
    pin_lane = [None] * len(design.pins)
    taken = {"in": set(), "out": set()}
    for i, p in enumerate(design.pins):
        key = (p.port, p.index)
        if key in pins:
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
    loose = sum(1 for i in range(len(design.pins)) if pin_lane[i] is None)
    spread = spread_pins and loose <= len(spaced)
    if spread:
        lanes = spaced
        shared = set(fixed_lanes)
        taken = {"in": shared, "out": shared}
    for direction, group in (("in", in_pins), ("out", out_pins)):
        free = [lane for lane in lanes if lane not in taken[direction]]
        need = sum(1 for i in group if pin_lane[i] is None)
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
            if pin_lane[i] is None:
                pin_lane[i] = free.pop(0)
                taken[direction].add(pin_lane[i])
    placement = Placement(block_cell, pin_lane)
    movable_pins = [i for i, p in enumerate(design.pins)
                    if (p.port, p.index) not in pins and not (p.direction == "out"
                                                              and p.net is None)]
    _anneal(design, graph, placement, conns, occupied, lanes, spread, movable_pins, rng,
            solve, progress, effort, slot_set, unit)
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


def _anneal(design, graph, pl, conns, occupied, lanes, spread, movable_pins, rng, solve,
            progress, effort, slot_set, unit):
    nb = len(design.blocks)
    fanout = [len(net.sinks) for net in design.nets]
    weight = [1.0 / math.sqrt(fanout[n]) for n, *_ in conns]
    touches = {}
    for k, (_, _, driver, sink, _) in enumerate(conns):
        touches.setdefault(driver, []).append(k)
        if sink != driver:
            touches.setdefault(sink, []).append(k)
    targets = [None] * len(conns)
    xs, ys, width = graph.xs, graph.ys, graph.width
    allowed = graph.allowed
    # Missing input sides per cell.
    sides_ok = {}

    def usable_sides(c):
        if c not in sides_ok:
            x, y = xs[c], ys[c]
            n = 0
            for dx, dy in ((0, -1), (1, 0), (0, 1), (-1, 0)):
                nx, ny = x + dx, y + dy
                if 0 <= nx < width and 0 <= ny < graph.height and allowed[ny * width + nx]:
                    n += 1
            sides_ok[c] = n
        return sides_ok[c]

    ninputs = [len(b.inputs) for b in design.blocks]
    # Pins a block at their boundary cell can serve directly (it reads the input lane, or
    # drives the output lane); any other pin there would need a side the block uses.
    direct = [set() for _ in range(nb)]
    for net in design.nets:
        for sink, registers in net.sinks:
            if registers:
                continue
            if net.driver[0] == "block" and sink[0] == "pin":
                direct[net.driver[1]].add(sink[1])
            elif net.driver[0] == "pin" and sink[0] == "block":
                direct[sink[1]].add(net.driver[1])

    def pins_at(c):
        return [i for i, lane in enumerate(pl.pin_lane)
                if lane is not None and graph.boundary_cell(*lane) == c]

    boundary = set()
    for c in range(graph.cells):
        if xs[c] in (0, width - 1) or ys[c] in (0, graph.height - 1):
            boundary.add(c)

    def clash(c, b):
        """Would block ``b`` at cell ``c`` block a pin's lane?"""
        if c not in boundary:
            return False
        return any(i not in direct[b] for i in pins_at(c))

    def edge_cost(b, c):
        missing = ninputs[b] - usable_sides(c)
        return EDGE_PENALTY * missing if missing > 0 else 0.0

    linked, feeds = set(), set()
    for net in design.nets:
        for sink, _ in net.sinks:
            if net.driver[0] == "block" and sink[0] == "block":
                linked.add((net.driver[1], sink[1]))
                linked.add((sink[1], net.driver[1]))
                feeds.add((net.driver[1], sink[1]))
    neighbours = {}

    def around(c):
        if c not in neighbours:
            x, y = xs[c], ys[c]
            neighbours[c] = [(y + dy) * width + x + dx
                             for dx, dy in ((0, -1), (1, 0), (0, 1), (-1, 0))
                             if 0 <= x + dx < width and 0 <= y + dy < graph.height]
        return neighbours[c]

    def pairs(b, c, at):
        """Unlinked blocks next to block ``b`` at ``c`` (``at(cell)``: block there)."""
        result = set()
        for n in around(c):
            other = at(n)
            if other is not None and other != b and (b, other) not in linked:
                result.add((min(b, other), max(b, other)))
        return result

    def deficit(b, c, at):
        """Penalty for the inputs of block ``b`` at ``c`` that no neighbour can bring: a
        neighbour brings one if it is a free usable cell or a block that ``b`` reads."""
        supply = 0
        for n in around(c):
            if not allowed[n]:
                continue
            other = at(n)
            if other is None or (other, b) in feeds:
                supply += 1
        missing = ninputs[b] - supply
        return DEFICIT_PENALTY * missing if missing > 0 else 0.0

    def adjacency_total():
        found = set()
        for b in range(nb):
            found |= pairs(b, pl.block_cell[b], occupied.get)
        return ADJACENT_PENALTY * len(found) + sum(
            deficit(b, pl.block_cell[b], occupied.get) for b in range(nb))

    def end_cell(end):
        kind, i = end
        if kind == "block":
            return pl.block_cell[i]
        side, lane = pl.pin_lane[i]
        return graph.boundary_cell(side, lane)

    def length(k):
        _, _, driver, sink, _ = conns[k]
        a, b = end_cell(driver), end_cell(sink)
        extra = (driver[0] == "pin") + (sink[0] == "pin")
        if a == b and extra == 0:
            return 2
        return abs(xs[a] - xs[b]) + abs(ys[a] - ys[b]) + extra

    def ccost(k):
        l = length(k)
        t = targets[k]
        c = l * weight[k]
        if t is not None and l > t:
            c += TIMING_WEIGHT * (l - t)
        return c

    def retime():
        if solve is None:
            return
        result = solve([length(k) for k in range(len(conns))], pl)
        if result is not None:
            targets[:] = result

    retime()
    cost = [ccost(k) for k in range(len(conns))]
    total = sum(cost) + sum(edge_cost(b, pl.block_cell[b]) for b in range(nb)) + \
        adjacency_total()
    movables = [("block", b) for b in range(nb)] + [("pin", i) for i in movable_pins]
    if not movables:
        return
    cell_list = [c for c in range(graph.cells) if allowed[c]]
    lane_index = {}
    for side, lane in lanes:
        lane_index.setdefault(side, []).append(lane)
    def lane_key(direction, lane):
        # spread: one pin per lane whatever its direction (every lane of ``lanes`` takes both)
        return lane if spread else (direction, lane)

    pin_at = {}
    for i, p in enumerate(design.pins):
        if pl.pin_lane[i] is not None:
            pin_at[lane_key(p.direction, pl.pin_lane[i])] = i
    n = len(movables)
    rlim = float(max(graph.width, graph.height))
    moves_per_t = max(100, int(effort * 10 * n ** 1.2))

    def try_move(obj, temperature):
        nonlocal total
        kind, i = obj
        if kind == "block":
            c0 = pl.block_cell[i]
            r = max(1, int(rlim / unit))
            x = xs[c0] + unit * rng.randint(-r, r)
            y = ys[c0] + unit * rng.randint(-r, r)
            if not (0 <= x < width and 0 <= y < graph.height):
                return False
            c1 = y * width + x
            if c1 == c0 or c1 not in slot_set:
                return False
            other = occupied.get(c1)
            if ninputs[i] > usable_sides(c1) or (other is not None
                                                 and ninputs[other] > usable_sides(c0)):
                return False
            if clash(c1, i) or (other is not None and clash(c0, other)):
                return False
            affected = set(touches.get(obj, ()))
            if other is not None:
                affected.update(touches.get(("block", other), ()))
            old = sum(cost[k] for k in affected) + edge_cost(i, c0)
            old_pairs = pairs(i, c0, occupied.get)
            if other is not None:
                old += edge_cost(other, c1)
                old_pairs |= pairs(other, c1, occupied.get)
            old += ADJACENT_PENALTY * len(old_pairs)

            def after(c):
                if c == c1:
                    return i
                if c == c0:
                    return other
                return occupied.get(c)
            near = {i} if other is None else {i, other}
            for c in around(c0) + around(c1):
                b = occupied.get(c)
                if b is not None:
                    near.add(b)
            old += sum(deficit(b, pl.block_cell[b], occupied.get) for b in near)
            pl.block_cell[i] = c1
            if other is not None:
                pl.block_cell[other] = c0
            new_costs = {k: ccost(k) for k in affected}
            new = sum(new_costs.values()) + edge_cost(i, c1)
            new_pairs = pairs(i, c1, after)
            if other is not None:
                new += edge_cost(other, c0)
                new_pairs |= pairs(other, c0, after)
            new += ADJACENT_PENALTY * len(new_pairs)
            new += sum(deficit(b, pl.block_cell[b], after) for b in near)
            delta = new - old
            if delta <= 0 or rng.random() < math.exp(-delta / temperature):
                occupied[c1] = i
                if other is not None:
                    occupied[c0] = other
                else:
                    del occupied[c0]
                for k, v in new_costs.items():
                    cost[k] = v
                total += delta
                return True
            pl.block_cell[i] = c0
            if other is not None:
                pl.block_cell[other] = c1
            return False
        # A pin: to another lane of the same direction (swap if taken).
        p = design.pins[i]
        lane0 = pl.pin_lane[i]
        side = rng.randrange(4) if rng.random() < 0.3 else lane0[0]
        choices = lane_index.get(side)
        if not choices:
            return False
        lane1 = (side, rng.choice(choices))
        if lane1 == lane0:
            return False
        other = pin_at.get(lane_key(p.direction, lane1))
        if other is not None and other not in movable_set:
            return False
        c_new, c_old = graph.boundary_cell(*lane1), graph.boundary_cell(*lane0)
        b_new, b_old = occupied.get(c_new), occupied.get(c_old)
        if b_new is not None and i not in direct[b_new]:
            return False
        if other is not None and b_old is not None and other not in direct[b_old]:
            return False
        affected = set(touches.get(obj, ()))
        if other is not None:
            affected.update(touches.get(("pin", other), ()))
        old = sum(cost[k] for k in affected)
        pl.pin_lane[i] = lane1
        if other is not None:
            pl.pin_lane[other] = lane0
        new_costs = {k: ccost(k) for k in affected}
        delta = sum(new_costs.values()) - old
        if delta <= 0 or rng.random() < math.exp(-delta / temperature):
            pin_at[lane_key(p.direction, lane1)] = i
            if other is not None:
                pin_at[lane_key(p.direction, lane0)] = other
            else:
                del pin_at[lane_key(p.direction, lane0)]
            for k, v in new_costs.items():
                cost[k] = v
            total += delta
            return True
        pl.pin_lane[i] = lane0
        if other is not None:
            pl.pin_lane[other] = lane1
        return False

    movable_set = set(movable_pins)
    # Initial temperature: 20 x the standard deviation of random move deltas (VPR).
    samples = []
    for _ in range(min(200, 4 * n)):
        before = total
        if try_move(rng.choice(movables), 1e9):
            samples.append(total - before)
    if len(samples) > 1:
        mean = sum(samples) / len(samples)
        sd = math.sqrt(sum((s - mean) ** 2 for s in samples) / len(samples))
    else:
        sd = 1.0
    temperature = max(1e-3, 20 * sd)
    step = 0
    stop = 0.002 * max(1.0, total) / max(1, len(conns))
    while temperature > stop:
        accepted = 0
        for _ in range(moves_per_t):
            if try_move(movables[rng.randrange(n)], temperature):
                accepted += 1
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
        rlim = min(float(max(graph.width, graph.height)), max(float(unit), rlim * (1 - 0.44 + rate)))
        retime()
        cost[:] = [ccost(k) for k in range(len(conns))]
        total = sum(cost) + sum(edge_cost(b, pl.block_cell[b]) for b in range(nb)) + \
            adjacency_total()
        step += 1
        if progress is not None:
            progress("place", step, 0)
        if step > 400:
            break
    # A final greedy pass at zero temperature.
    for _ in range(moves_per_t):
        try_move(movables[rng.randrange(n)], 1e-9)
