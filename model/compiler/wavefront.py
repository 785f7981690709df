"""The wavefront back end: a grid that is fully pipelined by construction (issue 12, SPEC 4).

Cell ``(x, y)`` works in wave ``x + y``: at period 2 it computes design row ``k`` at subcycle
``x + y + 2k``. If every cell reads only its N and W inputs and drives only its E and S outputs,
every used edge goes from wave ``w`` to wave ``w + 1``, so no path needs delay balancing: the
grid is a *brick-wall network* of 2-input, 2-output gates.

Geometry (tracks). The wire between two diagonals ``d`` and ``d + 1`` at anti-diagonal position
``j = x - y + 1`` (E output of ``(x, y)``) or ``j = x - y`` (S output) is *track* ``j``; cell
``(x, y)`` of diagonal ``d = x + y`` joins tracks ``u = x - y`` (its W input, S output) and
``u + 1`` (its N input, E output), ``u = d (mod 2)``. Input ``W[y]`` enters track ``-y`` at
diagonal ``y``, ``N[x]`` track ``x + 1`` at diagonal ``x``; the E output of ``(W-1, y)`` and the
S output of ``(x, H-1)`` leave the grid. A signal on a track moves to its neighbour (a straight
pass) or stays (a turn); a cell may also copy one input to both outputs (fan-out), drop a dead
signal, or compute any two functions of its inputs (two 2-input gates, e.g. a half adder).

Compilation: :func:`bitgrid.compiler.gates.netlist_gates` gives a DAG of 2-input gates; a greedy
router walks the diagonals, each cell choosing its two outputs by a score (gates computed,
outputs delivered, no needed signal lost, copies for fan-out, signals moved toward the operand
they meet next, away from the grid's dying edges); the grid grows until the router succeeds.

Timing (:mod:`bitgrid.ports`): period 2; input ``N[x]`` has skew ``x``, ``W[y]`` skew ``y``; an
output leaving a cell of diagonal ``D`` holds row ``k`` after ``2k + D + 1`` subcycles, so the
port map's ``latency`` is the largest ``D + 1`` and each output bit's skew ``D + 1 - latency``
(zero or negative).

Not supported (:class:`CompileError`): flip-flops, a region smaller than the grid.
"""

import time

from ..config import Configuration
from ..ports import PortMap
from .backend import CompileResult
from .errors import CompileError
from .gates import CONST, netlist_gates

__all__ = ["compile_wavefront", "route"]

_LOSS = 10_000
_DEBUG = bool(__import__("os").environ.get("BITGRID_WAVEFRONT_DEBUG"))


def _pull(distance):
    distance = abs(distance)
    return distance * distance if distance <= 12 else 24 * distance - 144


class _Fail(Exception):
    pass


def _track_range(d, width, height):
    """(lowest, highest) track of diagonal ``d``'s cells, or None outside the grid."""
    x0, x1 = max(0, d - height + 1), min(width - 1, d)
    if x0 > x1:
        return None
    return 2 * x0 - d, 2 * x1 - d + 1


class _Router:
    def __init__(self, dag, outputs, width, height, bad, order, layout='north', spacing=1,
                 matching=True, copy_bonus=15, attract=0):
        self.dag, self.width, self.height, self.bad = dag, width, height, bad
        self.margin = 4
        self.layout = layout
        self.spacing = spacing
        self.matching = matching
        self.copy_bonus = copy_bonus
        self.attract = attract
        self.gates = dag.gates
        # live gates: reachable from outputs
        need = set()
        stack = [node for bits in outputs.values() for node, _ in bits if node != CONST]
        while stack:
            node = stack.pop()
            if node in need:
                continue
            need.add(node)
            if node in self.gates:
                stack.extend(self.gates[node][:2])
        self.users = {n: [] for n in need}
        for g in need:
            if g in self.gates:
                a, b, _ = self.gates[g]
                self.users[a].append(g)
                self.users[b].append(g)
        self.pending = {g for g in need if g in self.gates}
        self.out_bits = {n: [] for n in need}
        self.const_bits = []
        for port, bits in outputs.items():
            for i, (node, neg) in enumerate(bits):
                if node == CONST:
                    self.const_bits.append((port, i, neg))
                else:
                    self.out_bits[node].append((port, i, neg))
        self.needs = {n: len(self.users[n]) + len(self.out_bits[n]) for n in need}
        # input lanes
        self.entry = {}          # (diag) -> list of (track, node, side, lane)
        self.lanes = {}          # node -> (side, lane)
        inputs = [n for n in order if n in need]
        north = [("N", x) for x in range(width) if (x, 0) not in bad]
        west = [("W", y) for y in range(height) if (0, y) not in bad]
        # the inputs in track order: W lanes (bottom up) then N lanes, centred on the corner
        if self.layout == "split":
            m = min(len(west), max(len(inputs) - len(north), (len(inputs) + 1) // 2))
            side_lanes = west[:m][::-1] + north
        else:
            spacing = self.spacing
            side_lanes = north[::spacing] + [l for i, l in enumerate(north) if i % spacing] \
                + west
        if len(inputs) > len(side_lanes):
            raise _Fail("inputs")
        self.entry_track = {}
        for node, (side, lane) in zip(inputs, side_lanes):
            track, diag = (lane + 1, lane) if side == "N" else (-lane, lane)
            self.entry.setdefault(diag, []).append((track, node))
            self.lanes[node] = (side, lane)
            self.entry_track[node] = track
        self.all_inputs = set(dag.inputs)

    # -- estimates --------------------------------------------------------------------------
    def _est(self, node, pos, memo):
        if node in memo:
            return memo[node]
        if node in pos:
            value = sum(pos[node]) / len(pos[node])
        elif node in self.entry_track:
            value = self.entry_track[node]
        elif node in self.gates and node in self.pending:
            a, b, _ = self.gates[node]
            memo[node] = 0.0   # guards recursion (a DAG: not needed, but cheap)
            ea, eb = self._est(a, pos, memo), self._est(b, pos, memo)
            known = [e for e in (ea, eb) if e is not None]
            value = sum(known) / len(known) if known else None
        else:
            value = None
        memo[node] = value
        return value

    def _partner_target(self, node, gate, pos, memo, near):
        a, b, _ = self.gates[gate]
        other = b if a == node else a
        if other in pos:
            return min(pos[other], key=lambda t: abs(t - near))
        return self._est(other, pos, memo)

    def run(self):
        width, height, bad = self.width, self.height, self.bad
        tracks = {}
        cells = {}            # (x, y) -> (lo_out, hi_out, lo_in, hi_in, exits)
        delivered = []        # (port, bit, neg, side, lane, diag)
        self.used_exits = set()
        last = width + height - 2
        for d in range(last + 1):
            for track, node in self.entry.get(d, ()):
                tracks[track] = node
            rng = _track_range(d, width, height)
            lo_d, hi_d = rng
            ahead = _track_range(min(d + self.margin, last), width, height)
            pos = {}
            for t, node in tracks.items():
                pos.setdefault(node, []).append(t)
            memo = {}
            self._pos, self._memo = pos, memo
            # targets per copy
            target = {}
            duty = {}
            for node, ts in pos.items():
                ts.sort()
                goals = []
                mean = sum(ts) / len(ts)
                ready = []
                for g in self.users[node]:
                    if g in self.pending:
                        goal = self._partner_target(node, g, pos, memo, mean)
                        if goal is not None:
                            goals.append(goal)
                            ga, gb, _ = self.gates[g]
                            ready.append((gb if ga == node else ga) in pos)
                groups = {t: [] for t in ts}
                if len(goals) >= len(ts):
                    ordered = sorted(goals)
                    for i, t in enumerate(ts):
                        groups[t] = ordered[i * len(goals) // len(ts):
                                            (i + 1) * len(goals) // len(ts)]
                else:
                    for goal in goals:
                        groups[min(ts, key=lambda t: abs(t - goal))].append(goal)
                # a copy heads for a ready partner first (estimates only if none is ready)
                ready_goals = {goal for goal, r in zip(goals, ready) if r}
                outs = self.needs[node] - len(goals)
                for t in ts:
                    if groups[t]:
                        first = [g for g in groups[t] if g in ready_goals] or groups[t]
                        goal = min(first, key=lambda g: abs(g - t))
                        goal = min(max(goal, ahead[0] + 1), ahead[1] - 1)
                        target[t] = goal
                        duty[t] = len(groups[t])
                    else:
                        target[t] = t
                        duty[t] = 0
                if outs > 0:
                    free = [t for t in ts if not groups[t]] or ts
                    t = min(free, key=lambda t: min(t - lo_d, hi_d - t))
                    if not groups[t]:
                        target[t] = lo_d - 4 if t - lo_d <= hi_d - t else hi_d + 4
                    duty[t] = duty[t] + outs
            if self.matching:
                self._match(pos, target, ahead)
            # free tracks head for the nearest signal that needs a copy
            needy = [t for node, ts in pos.items() if self.needs[node] > len(ts)
                     and sum(g in self.pending for g in self.users[node]) > 1 for t in ts]
            self._free_target = {}
            if needy and self.attract:
                for t in range(lo_d, hi_d + 1):
                    if t not in tracks:
                        self._free_target[t] = min(needy, key=lambda n: abs(n - t))
            remaining = {node: len(ts) for node, ts in pos.items()}
            kept = {}
            new_tracks = {}
            x0 = max(0, d - height + 1)
            x1 = min(width - 1, d)
            for x in range(x0, x1 + 1):
                y = d - x
                u = x - y
                a = tracks.get(u)
                b = tracks.get(u + 1)
                for n in (a, b):
                    if n is not None:
                        remaining[n] -= 1
                if (x, y) in bad:
                    for n in (a, b):
                        if n is not None and self.needs[n] > 0 and not kept.get(n) \
                                and not remaining[n]:
                            raise _Fail("defect")
                    continue
                if a is None and b is None:
                    continue
                choice = self._choose(x, y, u, a, b, target, duty, kept, remaining)
                if _DEBUG:
                    print("   cell", (x, y), "u", u, self._name(a) if a is not None else "-",
                          target.get(u), self._name(b) if b is not None else "-",
                          target.get(u + 1), "->", choice[:2])
                lo, hi, computed, deliveries = choice
                for g in computed:
                    self.pending.discard(g)
                    ga, gb, _ = self.gates[g]
                    self.needs[ga] -= 1
                    self.needs[gb] -= 1
                for side_index, node, bit in deliveries:
                    self.needs[node] -= 1
                    self.out_bits[node].remove(bit)
                    if side_index == 0:
                        delivered.append((bit, "S", x, d))
                        self.used_exits.add(("S", x))
                    else:
                        delivered.append((bit, "E", y, d))
                        self.used_exits.add(("E", y))
                exit_lo, exit_hi = y == height - 1, x == width - 1
                if lo is not None and not exit_lo:
                    new_tracks[u] = lo[1]
                    kept[lo[1]] = kept.get(lo[1], 0) + 1
                if hi is not None and not exit_hi:
                    new_tracks[u + 1] = hi[1]
                    kept[hi[1]] = kept.get(hi[1], 0) + 1
                cells[(x, y)] = (lo, hi, a, b)
                for n in {a, b} | set(computed):
                    if n is not None and self.needs.get(n, 0) > 0 and not kept.get(n) \
                            and not remaining.get(n):
                        raise _Fail(f"lost at diagonal {d}")
            if _DEBUG:
                print(d, " ".join(f"{t}:{self._name(n)}" for t, n in sorted(new_tracks.items())
                                  if self.needs.get(n, 0) > 0))
            # drop dead entries
            tracks = {t: n for t, n in new_tracks.items() if self.needs.get(n, 0) > 0}
            if not self.pending and all(v == 0 for v in self.needs.values()):
                break
        if self.pending or any(v > 0 for v in self.needs.values()):
            raise _Fail("unfinished")
        return cells, delivered

    def _match(self, pos, target, ahead):
        """Pair copies of the operands of ready gates, nearest first; a matched pair heads for
        its midpoint."""
        candidates = []
        for g in self.pending:
            a, b, _ = self.gates[g]
            if a in pos and b in pos:
                for ta in pos[a]:
                    for tb in pos[b]:
                        candidates.append((abs(ta - tb), ta, tb))
        candidates.sort()
        matched = set()
        for _, ta, tb in candidates:
            if ta in matched or tb in matched:
                continue
            matched.add(ta)
            matched.add(tb)
            mid = min(max((ta + tb) / 2, ahead[0] + 1), ahead[1] - 1)
            target[ta] = target[tb] = mid

    def _name(self, node):
        if node in self.dag.inputs:
            return "%s%d" % self.dag.inputs[node]
        return f"g{node}"

    def _choose(self, x, y, u, a, b, target, duty, kept, remaining):
        """The best (lo, hi, computed, deliveries) for cell (x, y); lo/hi are
        ("copy", node) / ("gate", node) / None."""
        height, width, bad = self.height, self.width, self.bad
        exits = (y == height - 1, x == width - 1)
        blocked = ((x, y + 1) in bad, (x + 1, y) in bad)
        options = [None]
        for n in (a, b):
            if n is not None and ("copy", n) not in options:
                options.append(("copy", n))
        gates_here = []
        if a is not None and b is not None and a != b:
            for g in self.users[a]:
                if g in self.pending:
                    ga, gb, _ = self.gates[g]
                    if {ga, gb} == {a, b}:
                        gates_here.append(g)
                        options.append(("gate", g))
        tracks = (u, u + 1)
        best = None
        for lo in options:
            for hi in options:
                score = 0
                outs = (lo, hi)
                computed = {o[1] for o in outs if o is not None and o[0] == "gate"}
                score += 100 * len(computed)
                # uses consumed
                used = {}
                for g in computed:
                    ga, gb, _ = self.gates[g]
                    used[ga] = used.get(ga, 0) + 1
                    used[gb] = used.get(gb, 0) + 1
                deliveries = []
                keep_here = {}
                taken = {}
                for i, o in enumerate(outs):
                    if o is None:
                        continue
                    node = o[1]
                    if exits[i]:
                        bits = self.out_bits.get(node, [])
                        k = taken.get(node, 0)
                        if k < len(bits):
                            taken[node] = k + 1
                            deliveries.append((i, node, bits[k]))
                            score += 50
                        else:
                            score -= 5
                    elif blocked[i]:
                        score -= 5
                    else:
                        keep_here[node] = keep_here.get(node, 0) + 1
                        goal = self._goal(o, a, b, u, target)
                        score -= _pull(goal - tracks[i])
                for node in set(keep_here) | set(used) | set(taken) | {a, b} - {None}:
                    left = self.needs.get(node, 0) - used.get(node, 0) - taken.get(node, 0)
                    have = kept.get(node, 0) + remaining.get(node, 0) + keep_here.get(node, 0)
                    if left > 0 and have == 0:
                        score -= _LOSS
                    if keep_here.get(node, 0) == 2:
                        others = kept.get(node, 0) + remaining.get(node, 0)
                        score += self.copy_bonus if left > others + 1 else -3
                    if left <= 0 and keep_here.get(node):
                        score -= 3
                for n, t in ((a, u), (b, u + 1)):
                    if n is not None and duty.get(t, 0) > 0 and not keep_here.get(n) \
                            and not used.get(n) and not taken.get(n):
                        score -= 20
                if (a is None) != (b is None) and self._free_target:
                    free_track = u if a is None else u + 1
                    goal = self._free_target.get(free_track)
                    if goal is not None:
                        for i, o in enumerate(outs):
                            if o is None:
                                score -= self.attract * _pull(goal - tracks[i])
                                break
                if best is None or score > best[0]:
                    best = (score, lo, hi, computed, deliveries)
        return best[1], best[2], best[3], best[4]

    def _goal(self, out, a, b, u, target):
        kind, node = out
        if kind == "copy":
            if node == a and node == b:
                return (target.get(u, u) + target.get(u + 1, u + 1)) / 2
            return target.get(u, u) if node == a else target.get(u + 1, u + 1)
        # a new gate: toward its users' partners
        goals = []
        pos = self._pos
        for g in self.users[node]:
            ga, gb, _ = self.gates[g]
            other = gb if ga == node else ga
            est = self._est(other, pos, self._memo)
            if est is not None:
                goals.append(est)
        if goals:
            return min(goals, key=lambda t: abs(t - u - 0.5))
        return u + 0.5


class _TokenRouter(_Router):
    """A router whose every copy of a signal is a *token* carrying the set of its consumers
    (gates, and output bits ``("out", port, bit, neg)``): each gate has exactly one token of
    each operand, and the two head for each other; a token with several consumers splits into
    a free neighbour track (fan-out); a cell computes a gate when its two tokens both hold it and
    what is left of them fits its other output."""

    def _consumers(self, node):
        return frozenset(self.users[node]) | frozenset(("out",) + bit
                                                       for bit in self.out_bits[node])

    def _item_goal(self, node, consumers, here, loc, pos, memo, band, final):
        goals = []
        for c in consumers:
            if c[0] == "out" if isinstance(c, tuple) else False:
                continue
            a, b, _ = self.gates[c]
            other = b if a == node else a
            t = loc.get((other, c))
            if t is not None:
                goals.append((t, True))
            else:
                e = self._est(other, pos, memo)
                if e is not None:
                    goals.append((e, False))
        if goals:
            ready = [g for g, r in goals if r] or [g for g, _ in goals]
            goal = min(ready, key=lambda g: abs(g - here))
            return min(max(goal, band[0] + 1), band[1] - 1)
        if final:     # outputs only, near the end: toward the nearer edge
            lo, hi = final
            return lo - 4 if here - lo <= hi - here else hi + 4
        return here

    def run(self):
        width, height, bad = self.width, self.height, self.bad
        tokens = {}           # track -> (node, frozenset consumers)
        cells = {}
        delivered = []
        self.used_exits = set()
        last = width + height - 2
        pending = set(self.pending)
        undelivered = sum(len(v) for v in self.out_bits.values())
        for d in range(last + 1):
            for track, node in self.entry.get(d, ()):
                tokens[track] = (node, self._consumers(node))
            lo_d, hi_d = _track_range(d, width, height)
            band = _track_range(min(d + self.margin, last), width, height)
            final = (lo_d, hi_d) if d >= min(width, height) - 2 else None
            pos = {}
            loc = {}
            for t, (node, cons) in tokens.items():
                pos.setdefault(node, []).append(t)
                for c in cons:
                    loc[(node, c)] = t
            memo = {}
            self.pending = pending
            new_tokens = {}
            needy = [t for t, (n, c) in tokens.items() if len(c) >= 2]
            free_goal = {}
            if needy and self.attract:
                for t in range(lo_d, hi_d + 1):
                    if t not in tokens:
                        near = min(needy, key=lambda n: abs(n - t))
                        if abs(near - t) <= 4:
                            free_goal[t] = near
            for x in range(max(0, d - height + 1), min(width - 1, d) + 1):
                y = d - x
                u = x - y
                ta, tb = tokens.get(u), tokens.get(u + 1)
                if ta is None and tb is None:
                    continue
                if (x, y) in bad:
                    raise _Fail("defect")
                exits = (y == height - 1, x == width - 1)
                blocked = ((x, y + 1) in bad, (x + 1, y) in bad)
                outcomes = [([t for t in (ta, tb) if t is not None], (), 0)]
                if ta is not None and tb is not None and ta[0] != tb[0]:
                    shared = [c for c in ta[1] & tb[1] if not isinstance(c, tuple)]
                    subsets = [(g,) for g in shared] + \
                        [(g, h) for i, g in enumerate(shared) for h in shared[i + 1:]]
                    for sub in subsets:
                        rest_a, rest_b = ta[1] - set(sub), tb[1] - set(sub)
                        items = [(g, self._consumers(g)) for g in sub]
                        if rest_a:
                            items.append((ta[0], rest_a))
                        if rest_b:
                            items.append((tb[0], rest_b))
                        if len(items) <= 2:
                            outcomes.append((items, sub, 100 * len(sub)))
                single = ta if tb is None else tb if ta is None else None
                if single is not None and len(single[1]) >= 2:
                    goals = []
                    for c in single[1]:
                        g = self._item_goal(single[0], {c}, u + 0.5, loc, pos, memo, band,
                                            final)
                        goals.append((g, repr(c), c))
                    goals.sort()
                    half = len(goals) // 2
                    low = frozenset(c for _, _, c in goals[:half])
                    high = frozenset(c for _, _, c in goals[half:])
                    outcomes.append(([(single[0], low), (single[0], high)], "split",
                                     self.copy_bonus))
                best = None
                for items, sub, base in outcomes:
                    orders = [items] if len(items) == 0 else \
                        [[items[0], None], [None, items[0]]] if len(items) == 1 else \
                        [items, items[::-1]]
                    for order in orders:
                        score = base
                        placed = []
                        for i, item in enumerate(order):
                            if item is None:
                                placed.append(None)
                                continue
                            node, cons = item
                            track = u + i
                            if exits[i]:
                                outs = [c for c in cons if isinstance(c, tuple)]
                                if len(cons) == 1 and outs:
                                    score += 50
                                    placed.append(("exit", node, outs[0]))
                                else:
                                    score -= _LOSS
                                    placed.append(None)
                            elif blocked[i]:
                                score -= _LOSS
                                placed.append(None)
                            else:
                                goal = self._item_goal(node, cons, track, loc, pos, memo,
                                                       band, final)
                                score -= _pull(goal - track) * (0.5 if sub == "split" else 1)
                                placed.append(("keep", node, cons))
                        if len(items) == 1 and free_goal:
                            goal = free_goal.get(u if ta is None else u + 1)
                            if goal is not None and goal not in (u, u + 1):
                                i = order.index(None)
                                score -= self.attract * _pull(goal - (u + i))
                        if best is None or score > best[0]:
                            best = (score, order, placed, sub)
                score, order, placed, sub = best
                if sub == "split":
                    sub = ()
                if score <= -_LOSS / 2:
                    raise _Fail(f"lost at diagonal {d}")
                for g in sub:
                    pending.discard(g)
                outs_cell = []
                for i, item in enumerate(placed):
                    if item is None:
                        outs_cell.append(None)
                        continue
                    kind, node = item[0], item[1]
                    out = ("gate", node) if node in sub else ("copy", node)
                    outs_cell.append(out)
                    if kind == "keep":
                        new_tokens[u + i] = (node, item[2])
                    else:
                        bit = item[2][1:]
                        undelivered -= 1
                        if i == 0:
                            delivered.append((bit, "S", x, d))
                            self.used_exits.add(("S", x))
                        else:
                            delivered.append((bit, "E", y, d))
                            self.used_exits.add(("E", y))
                cells[(x, y)] = (outs_cell[0], outs_cell[1],
                                 ta[0] if ta else None, tb[0] if tb else None)
            tokens = new_tokens
            if _DEBUG:
                print(d, " ".join(f"{t}:{self._name(n)}/{len(c)}"
                                  for t, (n, c) in sorted(tokens.items())))
            if not pending and not undelivered:
                break
        if pending or undelivered:
            raise _Fail("unfinished")
        return cells, delivered


def _output_table(out, a, b, dag):
    """16-bit LUT of a cell output ``out`` given its W input node ``a`` and N input ``b``."""
    if out is None:
        return 0
    kind, node = out[0], out[1]
    neg = out[2] if len(out) > 2 else 0
    table = 0
    for address in range(16):
        vn, vw = address & 1, address >> 3 & 1
        value_of = {}
        if b is not None:
            value_of[b] = vn
        if a is not None:
            value_of[a] = vw
        if kind == "copy":
            v = value_of[node]
        else:
            ga, gb, t = dag.gates[node]
            v = t >> (value_of[ga] | value_of[gb] << 1) & 1
        if v ^ neg:
            table |= 1 << address
    return table


def route(dag, outputs, width, height, *, bad=frozenset(), order=None, layout="north",
          spacing=1, matching=True, copy_bonus=15, attract=0, router="score"):
    """Route the gate DAG on a ``width`` x ``height`` grid.

    :returns: ``(config, lanes, delivered, constants, stats)`` or raises ``_Fail``.
    """
    order = list(order if order is not None else sorted(dag.inputs))
    kind = _TokenRouter if router == "token" else _Router
    router = kind(dag, outputs, width, height, bad, order, layout, spacing, matching,
                  copy_bonus, attract)
    cells, delivered = router.run()
    config = Configuration(width, height)
    logic = routing = 0
    exit_neg = {}
    for bit, side, lane, diag in delivered:
        exit_neg[(side, lane)] = bit[2]
    for (x, y), (lo, hi, a, b) in cells.items():
        lo_o = lo and (lo[0], lo[1], exit_neg.get(("S", x), 0) if y == height - 1 else 0)
        hi_o = hi and (hi[0], hi[1], exit_neg.get(("E", y), 0) if x == width - 1 else 0)
        if y == height - 1 and lo is not None and ("S", x) not in router.used_exits:
            lo_o = None
        if x == width - 1 and hi is not None and ("E", y) not in router.used_exits:
            hi_o = None
        s_table = _output_table(lo_o, a, b, dag)
        e_table = _output_table(hi_o, a, b, dag)
        if not (s_table or e_table or lo_o or hi_o):
            continue
        config[x, y] = (0, e_table, s_table, 0)
        if any(o is not None and o[0] == "gate" for o in (lo_o, hi_o)):
            logic += 1
        else:
            routing += 1
    # constants: any unused exit lane
    constants = []
    free = [("S", x, x + height - 1) for x in range(width)
            if ("S", x) not in router.used_exits and (x, height - 1) not in bad] + \
           [("E", y, width - 1 + y) for y in range(height)
            if ("E", y) not in router.used_exits and (width - 1, y) not in bad]
    if len(free) < len(router.const_bits):
        raise _Fail("constants")
    for (port, i, value), (side, lane, diag) in zip(router.const_bits, free):
        if value:
            x, y = (lane, height - 1) if side == "S" else (width - 1, lane)
            tables = list(config[x, y])
            tables[2 if side == "S" else 1] = 0xFFFF
            if not any(config[x, y]):
                routing += 1
            config[x, y] = tuple(tables)
        constants.append(((port, i, value), side, lane, diag))
    return config, router.lanes, delivered, constants, {"logic": logic, "routing": routing}


#: Router settings tried in turn on each grid size (input lane spacing, bonus for a useful
#: copy, pull of free tracks toward signals that need a copy, pairing of ready operands).
PARAMETERS = tuple(dict(spacing=sp, copy_bonus=cb, attract=at, matching=m)
                   for m in (False, True) for sp in (1, 2) for cb in (15, 40) for at in (0, 1)) \
    + tuple(dict(router="token", spacing=1, copy_bonus=cb, attract=at)
            for cb in (40, 100) for at in (0, 0.3))


def _input_order(netlist, dag):
    """Input nodes, the ports' bits interleaved (a0 b0 a1 b1 ...)."""
    by_port = {}
    for node, (port, bit) in dag.inputs.items():
        by_port.setdefault(port, []).append((bit, node))
    lists = [sorted(v) for v in by_port.values()]
    order = []
    for i in range(max((len(v) for v in lists), default=0)):
        for v in lists:
            if i < len(v):
                order.append(v[i][1])
    return order


def compile_wavefront(netlist, *, width=None, height=None, region=None, defects=None,
                      pins=None, seed=0, progress=None, time_limit=120.0):
    """Compile a combinational ``netlist`` with the wavefront strategy (module docstring).

    Same arguments and result as :func:`bitgrid.compiler.compile_netlist`: returns a
    :class:`~bitgrid.compiler.backend.CompileResult` ``(config, portmap, report)``, period 2.

    Grid sizes are tried smallest first (squares and near-squares, the side growing by 2 or
    12 %), each with the router
    settings :data:`PARAMETERS`, until one routes or ``time_limit`` seconds have passed;
    ``seed`` is accepted for the shared signature (the router is deterministic).

    :raises CompileError: for flip-flops, pins, a region that is not the whole grid, or a grid
        too small (one line saying what to do).
    """
    start = time.perf_counter()
    if netlist.dffs:
        raise CompileError("the wavefront strategy compiles combinational designs only; this "
                           f"design has {len(netlist.dffs)} flip-flops: use the default "
                           "strategy")
    if pins:
        raise CompileError("the wavefront strategy chooses its own pins: leave out pins")
    dag, outputs = netlist_gates(netlist)
    order = _input_order(netlist, dag)
    t_pack = time.perf_counter() - start
    bad = frozenset(defects.bad_cells) if defects is not None else frozenset()
    fixed = width is not None and height is not None
    if region is not None:
        x0, y0, x1, y1 = region
        if fixed and (x0, y0, x1, y1) == (0, 0, width - 1, height - 1):
            pass
        else:
            raise CompileError("the wavefront strategy needs the whole grid (its inputs enter "
                               "at the N and W edges, its outputs leave at E and S): leave out "
                               "--region")
    n_in = len(dag.inputs)
    n_out = sum(len(v) for v in outputs.values())
    if fixed:
        sizes = [(width, height)]
    else:
        side = 2
        while side * side < len(dag.gates) or 2 * side < max(n_in, n_out):
            side += 2
        sizes = []
        steps = []
        while side <= 256:
            steps.append(side)
            side = max(side + 2, int(side * 1.12) // 2 * 2)
        for s in steps:
            for w, h in ((s, s), (s + 2, s), (s, s + 2)):
                if (width is None or w == width) and (height is None or h == height) \
                        and (w, h) not in sizes:
                    sizes.append((w, h))
    result = None
    tried = 0
    last_error = None
    for w, h in sizes:
        for params in PARAMETERS:
            tried += 1
            if progress is not None:
                progress("route", tried, 0)
            try:
                result = route(dag, outputs, w, h, bad=bad, order=order, **params)
                break
            except _Fail as error:
                last_error = error
        if result is not None or time.perf_counter() - start > time_limit:
            break
    if result is None:
        if fixed:
            raise CompileError(f"the design does not fit a {width} x {height} grid with the "
                               f"wavefront strategy ({last_error}): try a larger --size")
        raise CompileError("the wavefront strategy found no grid for this design within "
                           f"{time_limit:.0f} s: use the default strategy")
    config, lanes, delivered, constants, stats = result
    w, h = config.width, config.height
    t_route = time.perf_counter() - start - t_pack
    ports = []
    for name, spec in netlist.inputs.items():
        bits = []
        for i in range(len(spec.bits)):
            node = next(n for n, pb in dag.inputs.items() if pb == (name, i))
            if node in lanes:
                side, lane = lanes[node]
            else:   # an unused input bit: any free lane of the N/W edges is fine
                side, lane = None, None
            bits.append([side, lane])
        ports.append([name, "in", bits, spec.signed])
    # unused input bits: free lanes
    taken = {tuple(v) for v in lanes.values()}
    spare = iter([("N", x) for x in range(w) if ("N", x) not in taken]
                 + [("W", y) for y in range(h) if ("W", y) not in taken])
    port_list = []
    for name, _, bits, signed in ports:
        out_bits = []
        for side, lane in bits:
            if side is None:
                side, lane = next(spare)
            out_bits.append({"side": side, "lane": lane, "skew": lane})
        port_list.append({"name": name, "direction": "in", "signed": signed,
                          "bits": out_bits})
    exits = {}
    for bit, side, lane, diag in delivered:
        exits[(bit[0], bit[1])] = (side, lane, diag)
    for bit, side, lane, diag in constants:
        exits[(bit[0], bit[1])] = (side, lane, diag)
    latency = max((diag + 1 for _, _, diag in exits.values()), default=1)
    for name, spec in netlist.outputs.items():
        out_bits = []
        for i in range(len(spec.bits)):
            side, lane, diag = exits[(name, i)]
            out_bits.append({"side": side, "lane": lane, "skew": diag + 1 - latency})
        port_list.append({"name": name, "direction": "out", "signed": spec.signed,
                          "bits": out_bits})
    portmap = PortMap(w, h, port_list, period=2, latency=latency)
    t_total = time.perf_counter() - start
    used = [(x, y) for y in range(h) for x in range(w) if any(config[x, y])]
    box = ([min(x for x, _ in used), min(y for _, y in used), max(x for x, _ in used),
            max(y for _, y in used)] if used else None)
    report = {"strategy": "wavefront", "grid": [w, h], "region": None, "bounding_box": box,
              "cells": {"logic": stats["logic"], "routing": stats["routing"], "delay": 0,
                        "total": stats["logic"] + stats["routing"]},
              "luts": len(netlist.luts), "flip_flops": 0, "gates": len(dag.gates),
              "period": 2, "latency": latency, "sizes_tried": tried,
              "times": {"pack": t_pack, "route": t_route, "timing": t_total - t_pack - t_route}}
    return CompileResult(config, portmap, report)
