"""The systolic back end: combinational netlists on a south-east flowing grid (issue 12).

The physics (SPEC sections 3 and 4): cell ``(x, y)`` updates on the subcycles of parity
``x + y`` and reads its neighbours' outputs of the subcycle before, so a value moves one cell
per subcycle. If every signal moves only east or south, a cell's output holds row ``k`` at
subcycle ``x + y + 2 k`` (its *wave tag* is ``x + y``), whatever path brought its operands:
every monotone path between two cells has the same length, so the operands of every cell
arrive in the same wave and no delay padding is ever needed. The grid is then fully pipelined
(period 2: a new row every cycle) and the problem is a pure routing one on a directed
acyclic graph, as in bit-level systolic arrays (Kung and Leiserson, 1979) and the clock-zoned
layouts of QCA and RSFQ logic.

Each used cell reads at most its N and W inputs and drives at most its E and S outputs:

* a *logic* cell computes one or two gates of the same at most 2 operands (one entering by N,
  the other by W); a second output not taken by a gate may pass an operand on (the E output a
  gate, the S output a copy of the N input, say);
* a *pass* cell copies an input to each output it drives: straight, turn, crossing (N to S and
  W to E at once) or fan-out (one input to both outputs).

Flow (:func:`compile_combinational`):

1. :mod:`.decompose`: the netlist's LUTs (up to 4 inputs) into gates of at most 2 inputs,
   shared by structural hashing; inverters folded into their readers; gates of the same two
   operands paired into one cell (a half adder is one cell).
2. Input port bits on N and W lanes, every second lane (ports alternately on N and W; every
   port on N with the bits interleaved; each port's bits alternately on N and W: each
   arrangement is tried and the one with the fewest cells kept).
3. Placement (:func:`_place_geometric`), gate by gate in topological order (levels, then the
   operands' mean position): each gate on the free cell strictly south-east of all its
   operands' cells (so that each operand keeps two ways in and can branch off to its other
   readers first) with the least wire length, a small pull towards the north-west corner and
   a cost for logic cells within 2 cells; logic cells never touch.
4. The grid is cropped to the layout plus :data:`CROP_MARGIN` (or kept at ``--size``).
5. Routing by negotiated congestion (:class:`_Negotiator`, PathFinder: McMurchie and Ebeling
   1995) on the directed acyclic graph of E and S wires: every net ripped up and rerouted
   each iteration from its source over A* searches towards each sink; a LUT operand may enter
   its cell by N or W; an output bit may leave by any free S or E lane (the router picks).
   If routing does not converge, the placement is spread (every coordinate ``v`` to
   ``k v + k - 1``, :data:`SCALES`) and routed again; last, with gates unpaired.
6. The configuration: a gate's table over the sides its operands entered by, a copy of the
   input side for a pass. The port map: input bit on lane at boundary cell ``(x, y)`` has
   skew ``x + y - (x + y) % 2``; an output bit leaving ``(x, y)`` has tag ``x + y``; the
   latency is the largest tag plus 1, each output's skew its tag plus 1 minus the latency.

Sequential netlists (feedback needs routes that go back north or west with loops padded to
the period) go to the general back end (:mod:`.backend`).
"""

import heapq
import math
import time

import numpy as np

from ..cell import COPY_N, COPY_W
from ..config import Configuration
from ..netlist import CONST0, CONST1
from ..ports import PortMap
from .errors import CompileError
from .lower import lower

__all__ = ["compile_combinational"]

#: Input lanes used: every LANE_STEP-th, from 1 (so that N and W lanes enter distinct cells).
LANE_STEP = 2

_E, _S = 0, 1          # the two output wires of a cell: 2 * cell + _E / _S


def _blocks(gates, pair=True):
    """Cells of logic: ``[(operands, [(net, table), ...])]``, gates of the same two operands
    paired (at most two per cell: one per output) if ``pair``."""
    by_inputs = {}
    for net in sorted(gates):
        inputs, table = gates[net]
        by_inputs.setdefault(frozenset(inputs) if len(inputs) == 2 and pair else (net,),
                             []).append(net)
    blocks = []
    for key, nets in by_inputs.items():
        for k in range(0, len(nets), 2):
            group = nets[k:k + 2]
            operands = gates[group[0]][0]
            members = []
            for net in group:
                inputs, table = gates[net]
                if inputs != operands:      # the same pair in the other order
                    table = ((table & 1) | ((table >> 1) & 1) << 2
                             | ((table >> 2) & 1) << 1 | (table & 8))
                members.append((net, table))
            blocks.append((tuple(operands), members))
    return blocks


# The grid --------------------------------------------------------------------------------------
class _Grid:
    """Wires of a ``width`` x ``height`` grid: ``2 c`` the E output of cell ``c``, ``2 c + 1``
    its S output (``c = y * width + x``), ``2 n + x`` the N input lane ``x``, ``2 n + width +
    y`` the W input lane ``y``."""

    def __init__(self, width, height, allowed):
        self.w, self.h = width, height
        self.n = width * height
        self.allowed = allowed                 # set of cell indices
        self.user = {}                          # wire -> net
        self.cell_use = [0] * self.n           # wires in or out of a cell, logic counted
        self.logic = {}                         # cell -> block index

    def lane_n(self, x):
        return 2 * self.n + x

    def lane_w(self, y):
        return 2 * self.n + self.w + y

    def dest(self, wire):
        """Cell a wire enters, or -1 (it leaves the grid)."""
        n, w = self.n, self.w
        if wire >= 2 * n:
            i = wire - 2 * n
            return i if i < w else (i - w) * w
        c, d = divmod(wire, 2)
        x, y = c % w, c // w
        if d == _E:
            return c + 1 if x + 1 < w else -1
        return c + w if y + 1 < self.h else -1

    def owner(self, wire):
        return wire // 2 if wire < 2 * self.n else -1

    def inputs_of(self, c):
        """``(N input wire, W input wire)`` of cell ``c`` (-1 where none)."""
        x, y = c % self.w, c // self.w
        north = 2 * (c - self.w) + _S if y > 0 else self.lane_n(x)
        west = 2 * (c - 1) + _E if x > 0 else self.lane_w(y)
        return north, west

    def use(self, wire, net):
        self.user[wire] = net
        o = self.owner(wire)
        if o >= 0:
            self.cell_use[o] += 1
        d = self.dest(wire)
        if d >= 0:
            self.cell_use[d] += 1

    def free(self, wire):
        self.user.pop(wire)
        o = self.owner(wire)
        if o >= 0:
            self.cell_use[o] -= 1
        d = self.dest(wire)
        if d >= 0:
            self.cell_use[d] -= 1


class _Failed(Exception):
    pass


def _inputs_arrangement(netlist, used, strategy):
    """``{(port, index): ("N" or "W", lane)}`` for the input bits."""
    ports = [(name, len(p.bits)) for name, p in netlist.inputs.items()]
    lanes = {}
    if strategy == "NW":
        offsets = {"N": 0, "W": 0}
        for k, (name, width) in enumerate(ports):
            side = "NW"[k % 2]
            for i in range(width):
                lanes[(name, i)] = (side, offsets[side] + i)
            offsets[side] += width
    elif strategy in ("N", "W"):
        order = []
        for i in range(max((w for _, w in ports), default=0)):
            for name, width in ports:
                if i < width:
                    order.append((name, i))
        for lane, key in enumerate(order):
            lanes[key] = (strategy, lane)
    else:        # "split": every port's bits alternately on N and W
        offsets = {"N": 0, "W": 0}
        for name, width in ports:
            for i in range(width):
                side = "NW"[i % 2]
                lanes[(name, i)] = (side, offsets[side])
                offsets[side] += 1
    return lanes


STRATEGIES = ("NW", "N", "split")
#: Spreads of the placement tried in turn (free cells between logic cells, plus one).
SCALES = (1, 2, 3)
#: Designs of at most this many logic cells try every input arrangement at the first spread
#: that routes (larger ones keep the first arrangement that routes).
SMALL_DESIGN = 40


def compile_combinational(netlist, *, width=None, height=None, region=None, allowed=None,
                          pins=None, progress=None):
    """Compile a combinational ``netlist`` (no flip-flops) by the systolic flow.

    :param width, height: the grid (``None``: the smallest that holds the layout).
    :param region: ``(x0, y0, x1, y1)`` or None; :param allowed: set of usable ``(x, y)``
        (region and defects already applied) or None for all.
    :param pins: ``{(port, index): (side, lane)}`` fixed lanes (sides as ints N=0..W=3).
    :returns: ``(config, portmap, report)`` as :class:`~.backend.CompileResult` holds.
    :raises CompileError: if no arrangement fits (after growing an automatic grid).
    """
    times = {}
    t0 = time.perf_counter()
    gates, outputs = lower(netlist)
    blocks = _blocks(gates)
    times["pack"] = time.perf_counter() - t0
    used_inputs = {net for ops, _ in blocks for net in ops}
    used_inputs |= {net for _, _, net in outputs}
    fixed = width is not None and height is not None
    n_in = sum(len(p.bits) for p in netlist.inputs.values())
    best, errors = None, []
    t1 = time.perf_counter()
    if fixed:
        w, h = width, height
        x0, y0, x1, y1 = region if region is not None else (0, 0, w - 1, h - 1)
        n_out = sum(len(p.bits) for p in netlist.outputs.values())
        lanes_in = (x1 - x0 + 1 if y0 == 0 else 0) + (y1 - y0 + 1 if x0 == 0 else 0)
        lanes_out = (x1 - x0 + 1 if y1 == h - 1 else 0) + (y1 - y0 + 1 if x1 == w - 1 else 0)
        where = "region" if region is not None else f"{w} x {h} grid"
        if n_in > lanes_in:
            raise CompileError(f"the design has {n_in} input bits but only {lanes_in} input "
                               f"lanes (N and W edges) on the {where}: give a larger --size or region, "
                               "or none")
        if n_out > lanes_out:
            raise CompileError(f"the design has {n_out} output bits but only {lanes_out} "
                               f"output lanes (S and E edges) on the {where}: give a larger --size or "
                               "region, or none")
    else:
        side = int(4 * math.sqrt(len(blocks) + 4)) + 2 * n_in + 8
        w = h = side + side % 2
    strategies = STRATEGIES
    if region is not None and region[0] != 0:
        strategies = ("N",)
    elif region is not None and region[1] != 0:
        strategies = ("W",)
    unpaired = _blocks(gates, pair=False)
    for scale, blocks in [(k, blocks) for k in SCALES] + [(1, unpaired), (2, unpaired)]:
        if pins and scale > 1:
            continue
        for strategy in strategies:
            if pins and strategy != strategies[0]:
                break
            ws, hs = (w, h) if fixed else (w * scale, h * scale)
            try:
                result = _attempt_negotiated(netlist, gates, blocks, outputs, ws, hs,
                                             not fixed, region, allowed, pins, strategy, 1,
                                             progress, scale)
            except _Failed as failure:
                errors.append(str(failure))
                if getattr(failure, "over", 0) > STALL_WIRES:
                    break               # far from routing: spread the placement first
                continue
            if best is None or result[2]["cells"]["total"] < best[2]["cells"]["total"]:
                best = result
            if len(blocks) > SMALL_DESIGN:
                break                   # the first arrangement that routes (compile time)
        if best is not None:
            break
    if best is None:
        raise CompileError(f"the systolic back end found no layout ({errors[0]}); try a "
                           "larger --size or region")
    times["place_route"] = time.perf_counter() - t1
    config, portmap, report = best
    report["times"] = {k: round(v, 4) for k, v in times.items()}
    return config, portmap, report


def _even(v):
    return max(2, v + v % 2)


def _order(blocks, gates, in_lanes, net_of_input):
    pos = {}
    for key, (side, lane) in in_lanes.items():
        pos[net_of_input[key]] = (lane, 0) if side == "N" else (0, lane)
    block_of = {}
    for b, (_, members) in enumerate(blocks):
        for net, _ in members:
            block_of[net] = b
    blevel = [None] * len(blocks)

    def lev(b):
        if blevel[b] is not None:
            return blevel[b]
        stack = [b]
        while stack:
            top = stack[-1]
            ops = blocks[top][0]
            todo = [block_of[n] for n in ops if n in block_of and blevel[block_of[n]] is None]
            if todo:
                stack.extend(todo)
                continue
            blevel[top] = 1 + max([blevel[block_of[n]] if n in block_of else 0 for n in ops],
                                  default=0)
            stack.pop()
        return blevel[b]

    for b in range(len(blocks)):
        lev(b)
    # Position estimate: the mean of the operands' (x + y) and (x - y) as they are known.
    est = dict(pos)
    keyed = []
    for b in sorted(range(len(blocks)), key=lambda b: blevel[b]):
        ops = blocks[b][0]
        pts = [est[n] for n in ops if n in est]
        if pts:
            x = sum(p[0] for p in pts) / len(pts)
            y = sum(p[1] for p in pts) / len(pts)
        else:
            x = y = 0
        for net, _ in blocks[b][1]:
            est[net] = (x + 0.5, y + 0.5)
        keyed.append((blevel[b], x + y, x - y, b))
    keyed.sort()
    return [b for *_, b in keyed]


# Negotiated routing on a geometric placement (the flow used) ---------------------------------
#: Placement cost of each logic cell within 2 cells (spreads logic for the routes).
CROWD_COST = 1.0
#: Cells kept beyond the last logic cell (room for the routes to the output lanes).
CROP_MARGIN = 4
#: PathFinder iterations before a layout is given up (then a sparser or larger one is tried).
ITERATIONS = 40
#: Iterations without fewer overused wires after which a layout is given up.
STALL = 5
#: ... unless it has fewer overused wires than this (a few conflicts take more iterations).
STALL_WIRES = 12


def _place_geometric(blocks, src, order, width, height, allowed, mode, limits=None):
    """Cells for the blocks, in ``order``: each gate at the free cell that dominates its
    operands (they can enter by N and W) with the least wire length, logic never next to
    logic (``mode`` 1) or on the odd-odd cells only (``mode`` 2). ``src`` maps a net to its
    source position (lanes at row or column -1); block nets are added. :returns: cells."""
    cell_of = [None] * len(blocks)
    logic = set()
    full = len(allowed) == width * height
    reach = {}

    def reachable(net):
        # Cells a monotone route from ``net``'s source reaches over usable cells (only
        # computed when some cells are unusable: defects or a region).
        if net not in reach:
            px, py = src[net]
            todo = [c for c in ((px + 1, py), (px, py + 1)) if c in allowed]
            seen = set(todo)
            while todo:
                x, y = todo.pop()
                for c in ((x + 1, y), (x, y + 1)):
                    if c in allowed and c not in seen:
                        seen.add(c)
                        todo.append(c)
            reach[net] = seen
        return reach[net]

    for b in order:
        operands, members = blocks[b]
        pts = [src[n] for n in operands]
        sets = [] if full else [reachable(n) for n in operands]
        X = max([p[0] for p in pts] + [0])
        Y = max([p[1] for p in pts] + [0])
        best = None
        for r in range(0, width + height):
            for x in range(max(X + 1, 0), min(width, X + r + 2)):
                for y in range(max(Y + 1, 0), min(height, Y + r + 2)):
                    if max(x - X - 1, y - Y - 1) != r and r:
                        continue
                    if (x, y) in logic or (x, y) not in allowed:
                        continue
                    if limits and b in limits and (x > limits[b][0] or y > limits[b][1]):
                        continue
                    if mode == 2 and not (x % 2 and y % 2):
                        continue
                    if mode == 1 and any((x + dx, y + dy) in logic for dx, dy in
                                         ((1, 0), (-1, 0), (0, 1), (0, -1))):
                        continue
                    if not _feasible(pts, x, y):
                        continue
                    if sets and not all((x, y) in r_ for r_ in sets):
                        continue
                    crowd = sum((x + dx, y + dy) in logic for dx in (-2, -1, 0, 1, 2)
                                for dy in (-2, -1, 0, 1, 2))
                    cost = (sum((x - px) + (y - py) for px, py in pts) + 0.3 * (x + y)
                            + CROWD_COST * crowd)
                    if best is None or cost < best[0]:
                        best = (cost, x, y)
            if best is not None and r >= 2:
                break
        if best is None:
            raise _Failed(f"no cell for the gate of {members[0][0]}")
        _, x, y = best
        logic.add((x, y))
        cell_of[b] = (x, y)
        for net, _ in members:
            src[net] = (x, y)
    return cell_of


def _feasible(pts, x, y):
    # Strictly south-east of every operand: each operand keeps two ways in and can branch
    # off to its other readers before this cell.
    return all(px < x and py < y for px, py in pts)


class _Negotiator:
    """PathFinder (McMurchie and Ebeling 1995) on the south-east wires of a grid: every net
    ripped up and rerouted each iteration, a wire's cost ``(1 + history) * (1 + present *
    others)``, until no wire carries two nets."""

    def __init__(self, grid, nets):
        self.g = grid
        self.nets = nets          # name -> (roots: list of wires, fixed: bool, sinks)
        self.occ = {}
        self.hist = {}
        self.tree = {n: {} for n in nets}
        self.chosen = {}          # output bit -> the lane wire its net reached
        self.present = 0.5

    def _add(self, wire):
        self.occ[wire] = self.occ.get(wire, 0) + 1

    def _remove(self, wire):
        self.occ[wire] -= 1

    def cost(self, wire):
        o = self.occ.get(wire, 0)
        return (1.0 + self.hist.get(wire, 0.0)) * (1.0 + self.present * o)

    def route(self, name):
        g = self.g
        roots, sinks = self.nets[name]
        for wire in self.tree[name]:
            self._remove(wire)
        tree = {}
        self.tree[name] = tree
        if len(roots) == 1 and roots[0] >= 2 * g.n:     # an input lane
            tree[roots[0]] = -1
            self._add(roots[0])
        order = sorted(sinks, key=lambda s: s[1])
        claimed = set()
        for goals, _, (gx, gy), key in order:
            if key is not None:
                goals = [w for w in goals if w not in claimed]
            hit = [w for w in goals if w in tree]
            if hit:
                wire = hit[0]
            else:
                path = self._search(tree, roots, goals, gx, gy)
                if path is None:
                    raise _Failed(f"net {name} cannot reach its sink at ({gx}, {gy})")
                for wire, parent in path:
                    tree[wire] = parent
                    self._add(wire)
                wire = path[-1][0] if path else None
            if key is not None:
                claimed.add(wire)
                self.chosen[key] = wire

    def _search(self, tree, roots, goals, gx, gy):
        g = self.g
        W = g.w
        goals = set(goals)
        heap = []
        seen = {}

        def h(wire):
            c = g.dest(wire)
            if c < 0:
                return 0
            return max(0, gx - c % W) + max(0, gy - c // W)

        def push(wire, cost, parent):
            c = g.dest(wire)
            if wire not in goals:
                if c < 0 or c not in g.allowed:
                    return
                if c % W > gx or c // W > gy:
                    return
            heapq.heappush(heap, (cost + h(wire), cost, wire, parent))

        for wire in tree:
            c = g.dest(wire)
            if c < 0 or c not in g.allowed:
                continue
            for o in self._outputs(c):
                if o not in tree:
                    push(o, self.cost(o), wire)
        for o in roots:
            if o not in tree and o < 2 * g.n:
                push(o, self.cost(o), None)
        while heap:
            f, cost, wire, parent = heapq.heappop(heap)
            if wire in seen:
                continue
            seen[wire] = parent
            if wire in goals:
                path = []
                while wire is not None and wire not in tree:
                    path.append((wire, -1 if seen[wire] is None else seen[wire]))
                    wire = seen[wire]
                path.reverse()
                return path
            c = g.dest(wire)
            if c < 0:
                continue
            for o in self._outputs(c):
                if o not in seen and o not in tree:
                    push(o, cost + self.cost(o), wire)
        return None

    def _outputs(self, c):
        return (2 * c + _E, 2 * c + _S)

    def run(self, order, progress=None):
        best, since = None, 0
        for it in range(ITERATIONS):
            for name in order:
                self.route(name)
            over = [w for w, o in self.occ.items() if o > 1]
            if progress is not None:
                progress("route", it + 1, 0)
            if not over:
                return it + 1
            if best is None or len(over) < best:
                best, since = len(over), 0
            else:
                since += 1
                if since >= STALL and best > STALL_WIRES:
                    break
            for w in over:
                self.hist[w] = self.hist.get(w, 0.0) + 1.0
            self.present *= 1.5
        failure = _Failed(f"routing did not converge ({len(over)} wires wanted by several "
                          "nets)")
        failure.over = len(over)
        raise failure


def _attempt_negotiated(netlist, gates, blocks, outputs, width, height, crop, region,
                        allowed, pins, strategy, mode, progress, scale=1):
    """One layout: lanes, geometric placement, crop, output lanes, negotiated routing."""
    cells = ({(x, y) for x in range(width) for y in range(height)} if allowed is None
             else {(x, y) for x, y in allowed if x < width and y < height})
    # Input lanes.
    in_lanes = {}
    if pins:
        for key, (side, lane) in pins.items():
            if key[0] in netlist.inputs:
                if side not in (0, 3):
                    raise CompileError(f"input {key[0]}[{key[1]}]: the systolic back end "
                                       "reads inputs on N and W lanes only")
                in_lanes[key] = ("N" if side == 0 else "W", lane)
    x0, y0 = (region[0], region[1]) if region is not None else (0, 0)
    arrangement = _inputs_arrangement(netlist, None, strategy)
    taken = set(in_lanes.values())
    step, first = LANE_STEP, 1
    for side, room in (("N", width - x0), ("W", height - y0)):
        count = sum(1 for s_, _ in arrangement.values() if s_ == side)
        if count and LANE_STEP * (count - 1) + 2 > room:
            step, first = 1, 0
    for key, (side, lane) in arrangement.items():
        if key in in_lanes:
            continue
        lane = step * lane + first + (x0 if side == "N" else y0)
        while (side, lane) in taken or (((lane, 0) if side == "N" else (0, lane)) not in cells
                                        and lane < max(width, height)):
            lane += 1
        in_lanes[key] = (side, lane)
        taken.add((side, lane))
    if any(side == "N" for side, _ in in_lanes.values()) and y0 != 0:
        raise _Failed("the region does not touch the grid's N edge (inputs enter by N and W)")
    if any(side == "W" for side, _ in in_lanes.values()) and x0 != 0:
        raise _Failed("the region does not touch the grid's W edge (inputs enter by N and W)")
    net_of_input = {(name, i): net for name, port in netlist.inputs.items()
                    for i, net in enumerate(port.bits)}
    src = {}
    for key, (side, lane) in in_lanes.items():
        if lane >= (width if side == "N" else height):
            raise _Failed(f"{lane + 1} {side} lanes needed, the grid has "
                          f"{width if side == 'N' else height}")
        # A lane as a source just outside its boundary cell: readers strictly east and south.
        src[net_of_input[key]] = (lane, -1) if side == "N" else (-1, lane)
    order = _order(blocks, gates, in_lanes, net_of_input)
    # Gates driving output bits on fixed lanes stay north-west of their lane.
    limits = {}
    if pins:
        block_of_net = {net: b for b, (_, members) in enumerate(blocks) for net, _ in members}
        drivers = {(port, index): net for port, index, net in outputs}
        for key, (side, lane) in pins.items():
            b = block_of_net.get(drivers.get(key))
            if b is None or side not in (1, 2):
                continue
            lx, ly = limits.get(b, (width - 1, height - 1))
            limits[b] = (min(lx, lane - 1), ly) if side == 2 else (lx, min(ly, lane - 1))
    if scale > 1:
        # A spread copy of the placement (every coordinate v >= 0 to scale * v + scale - 1):
        # the same order, so the same dominance, with scale - 1 free cells between logic.
        def f(v):
            return v if v < 0 else scale * v + scale - 1
        sw, sh = width // scale, height // scale
        small = _place_geometric(blocks, dict(src), order, sw, sh,
                                 {(x, y) for x in range(sw) for y in range(sh)
                                  if (f(x), f(y)) in cells}, mode)
        in_lanes = {key: (side, f(lane)) for key, (side, lane) in in_lanes.items()}
        src = {net: (f(x), f(y)) for net, (x, y) in src.items()}
        cell_of = [(f(x), f(y)) for x, y in small]
        if any((x, y) not in cells for x, y in cell_of):
            raise _Failed("the spread placement meets unusable cells")
        for b, (_, members) in enumerate(blocks):
            for net, _ in members:
                src[net] = cell_of[b]
    else:
        cell_of = _place_geometric(blocks, src, order, width, height, cells, mode, limits)
    # Crop.
    xs = [x for x, _ in cell_of] + [l for s, l in in_lanes.values() if s == "N"] + [0]
    ys = [y for _, y in cell_of] + [l for s, l in in_lanes.values() if s == "W"] + [0]
    if crop:
        w2, h2 = min(width, _even(max(xs) + CROP_MARGIN)), min(height, _even(max(ys) + CROP_MARGIN))
    else:
        w2, h2 = width, height
    g = _Grid(w2, h2, {y * w2 + x for x, y in cells if x < w2 and y < h2})
    W = w2
    # Output lanes: E lane y is the E output of (w2 - 1, y), S lane x the S output of
    # (x, h2 - 1).
    rx1 = region[2] if region is not None else w2 - 1
    ry1 = region[3] if region is not None else h2 - 1
    lanes = {}
    if rx1 == w2 - 1:
        for y in range(y0, min(ry1, h2 - 1) + 1):
            if (y * W + w2 - 1) in g.allowed:
                lanes[(1, y)] = 2 * (y * W + w2 - 1) + _E
    if ry1 == h2 - 1:
        for x in range(x0, min(rx1, w2 - 1) + 1):
            if ((h2 - 1) * W + x) in g.allowed:
                lanes[(2, x)] = 2 * ((h2 - 1) * W + x) + _S
    if not lanes and outputs:
        raise _Failed("the region does not touch the grid's S or E edge (outputs leave by "
                      "S and E)")
    out_lane, free_lanes = {}, dict(lanes)
    for key, (side, lane) in (pins or {}).items():
        if key[0] in netlist.outputs:
            if side not in (1, 2):
                raise CompileError(f"output {key[0]}[{key[1]}]: the systolic back end drives "
                                   "outputs on S and E lanes only")
            if (side, lane) not in free_lanes:
                raise _Failed(f"output {key[0]}[{key[1]}]: lane {'NESW'[side]}{lane} is not "
                              "free on the grid's S or E edge")
            out_lane[key] = (side, lane)
            free_lanes.pop((side, lane))
    for port, index, net in outputs:
        if net in (CONST0, CONST1) and (port, index) not in out_lane:
            if not free_lanes:
                raise _Failed("no free output lane for a constant output")
            key = max(free_lanes)
            out_lane[(port, index)] = key
            free_lanes.pop(key)
    # Nets.
    cell_index = [y * W + x for x, y in cell_of]
    nets = {}

    def roots_of(net):
        if net in block_net:
            c = block_net[net]
            return [2 * c + _E, 2 * c + _S]
        for key, n in net_of_input.items():
            if n == net:
                side, lane = in_lanes[key]
                return [g.lane_n(lane) if side == "N" else g.lane_w(lane)]
        raise AssertionError(f"net {net} has no source")
    block_net = {}
    for b, (_, members) in enumerate(blocks):
        for net, _ in members:
            block_net[net] = cell_index[b]
    sinks = {}
    for b, (operands, _) in enumerate(blocks):
        c = cell_index[b]
        for net in operands:
            sinks.setdefault(net, []).append((g.inputs_of(c), 0, (c % W, c // W)))
    pool = sorted(lanes[k] for k in free_lanes)
    for port, index, net in outputs:
        if net in (CONST0, CONST1):
            continue
        key = (port, index)
        if key in out_lane:             # a fixed lane
            wire = lanes[out_lane[key]]
            c = wire // 2
            sinks.setdefault(net, []).append(([wire], 0, (c % W, c // W), key))
        else:                           # any free S or E lane: the router chooses
            sinks.setdefault(net, []).append((pool, 0, (w2 - 1, h2 - 1), key))
    for net, ss in sinks.items():
        root = src[net]
        ss = [(goals, abs(p[0] - root[0]) + abs(p[1] - root[1]) if key is None
               else 2 * (w2 + h2) - max(root), p, key) for goals, _, p, *rest in ss
              for key in [rest[0] if rest else None]]
        nets[net] = (roots_of(net), ss)
    router = _Negotiator(g, nets)
    order_nets = sorted(nets, key=lambda n: (-len(nets[n][1]), str(n)))
    router.run(order_nets, progress)
    side_of = {w: k for k, w in lanes.items()}
    for key, wire in router.chosen.items():
        out_lane[key] = side_of[wire]
    # Operand sides.
    operand_side = []
    for b, (operands, _) in enumerate(blocks):
        north, west = g.inputs_of(cell_index[b])
        sides = []
        for net in operands:
            tree = router.tree[net]
            sides.append(0 if north in tree else 3)
        if len(sides) == 2 and sides[0] == sides[1]:
            raise AssertionError("two operands on one side")
        operand_side.append(tuple(sides))
    g.logic = {c: b for b, c in enumerate(cell_index)}
    return _emit(netlist, g, router.tree, blocks, operand_side, out_lane, lanes, in_lanes,
                 outputs, w2, h2, region)


def _emit(netlist, g, trees, blocks, operand_side, out_lane, lanes, in_lanes, outputs, w2, h2,
          region):
    W = g.w
    luts = np.zeros((h2, w2, 4), dtype=np.uint16)
    gate_table = {}
    for b, (operands, members) in enumerate(blocks):
        sides = operand_side[b]
        for net, table in members:
            cell_table = 0
            for a in range(16):
                addr = 0
                for i, side in enumerate(sides):
                    addr |= ((a >> side) & 1) << i
                cell_table |= ((table >> addr) & 1) << a
            gate_table[net] = cell_table
    north_lanes = 2 * g.n
    for net, tree in trees.items():
        for wire, parent in tree.items():
            c = g.owner(wire)
            if c < 0:
                continue
            x, y, d = c % W, c // W, (1 if wire % 2 == _E else 2)
            if parent == -1:
                table = gate_table[net]
            else:
                from_north = (parent >= north_lanes and parent - north_lanes < W) or \
                    (parent < north_lanes and parent % 2 == _S)
                table = COPY_N if from_north else COPY_W
            luts[y, x, d] = table
    for port, index, net in outputs:
        if net == CONST1:
            wire = lanes[out_lane[(port, index)]]
            c = wire // 2
            luts[c // W, c % W, 1 if wire % 2 == _E else 2] = 0xFFFF
    config = Configuration(w2, h2, luts)
    out_tags = {}
    for key, (side, lane) in out_lane.items():
        x, y = (w2 - 1, lane) if side == 1 else (lane, h2 - 1)
        out_tags[key] = x + y
    latency = max([t + 1 for t in out_tags.values()] + [1])
    ports = []
    for name, port in netlist.inputs.items():
        bits = []
        for i in range(len(port.bits)):
            side, lane = in_lanes[(name, i)]
            x, y = (lane, 0) if side == "N" else (0, lane)
            skew = x + y - (x + y) % 2 if port.bits[i] in trees else 0
            bits.append({"side": side, "lane": lane, **({"skew": skew} if skew else {})})
        ports.append({"name": name, "direction": "in", "signed": port.signed, "bits": bits})
    for name, port in netlist.outputs.items():
        bits = []
        for i in range(len(port.bits)):
            side, lane = out_lane[(name, i)]
            skew = out_tags[(name, i)] + 1 - latency
            bits.append({"side": "NESW"[side], "lane": lane, **({"skew": skew} if skew else {})})
        ports.append({"name": name, "direction": "out", "signed": port.signed, "bits": bits})
    portmap = PortMap(w2, h2, ports, period=2, latency=latency)
    used = (luts != 0).any(axis=2)
    logic = {(c % W, c // W) for c in g.logic}
    ys, xs = np.nonzero(used)
    all_cells = {(int(x), int(y)) for y, x in zip(ys, xs)} | logic
    box = ([min(x for x, _ in all_cells), min(y for _, y in all_cells),
            max(x for x, _ in all_cells), max(y for _, y in all_cells)] if all_cells else None)
    report = {
        "back_end": "systolic",
        "grid": [w2, h2],
        "region": list(region) if region is not None else None,
        "bounding_box": box,
        "cells": {"logic": len(logic), "routing": len(all_cells - logic), "delay": 0,
                  "total": len(all_cells)},
        "luts": len(netlist.luts), "flip_flops": 0,
        "gates": sum(len(m) for _, m in blocks), "blocks": len(blocks),
        "period": 2, "latency": latency,
    }
    return config, portmap, report
