"""The sweep back end: a netlist scheduled column by column on a strip of cells (issue 12).

The physics (SPEC sections 3 and 4): cell ``(x, y)`` updates on the subcycles of parity
``x + y`` and reads its neighbours' outputs of the subcycle before. If the logic only reads
the W and N inputs of a cell and only drives its E and S outputs, a cell's output holds row
``k`` at subcycle ``x + y + P k`` (its *wave tag* is ``x + y``) whatever path brought its
operands, so operands always meet in the same wave and no delay padding is needed (the
bit-level systolic arrays of Kung and Leiserson, 1979).

Seen column by column, such a grid is a strip of ``H`` horizontal *tracks* (the E outputs of a
row) crossed in every column by one *vertical* (the S outputs of the column, top to bottom):
cell ``(x, y)`` takes the signal on track ``y`` and the one on the vertical and puts any two
functions of them back on the track and the vertical. So a column can pick a signal up,
carry it down, meet an operand on a lower track, compute there, and drop a result into an
empty track below: a gate per segment of the vertical, several segments per column, chains
(a carry rippling down one column) for free. :class:`_Sweep` schedules the 2-input gates of
:func:`lower` that way, greedily, column after column (the list scheduling of high-level
synthesis on a linear array; the vertical segments are chosen as in interval scheduling,
shortest first): it never fails to route, it only needs enough tracks, and it runs in time
linear in columns x tracks.

Inputs enter on the N lanes, one per column, just before their first use (or on the W lanes
of column 0: both are tried); outputs leave on the E lanes of the last column (a second copy
or a constant on an S lane).

Flip-flops (SPEC section 4's timing, issue 12's cycle semantics): every flip-flop ``q <= d``
becomes ``q <= start ? d : init`` (``start`` 0 for the rows before row 0, 1 from row 0 on:
a cell with constant-1 tables at the north-west corner, which outputs 0 until its first
update). The sweep treats ``q`` as an input injected on the N lane of its column ``c`` and
``d`` as a result that stays on its track ``r``; after the sweep, a *return route* on the
cells' N and W outputs (unused by the sweep) carries ``d`` from its track at column ``a`` up
to a margin row above the strip, along it and down the column ``c``'s N lane back into the
strip. The loop then takes ``2 (max(a - c, 0) + r + D)`` subcycles (``D`` the margin row's
depth, counted from the strip): every loop is made exactly the design-clock period ``P`` by
choosing ``a`` and ``D`` per flip-flop (distinct columns and margin rows, so the returns
never share a wire). ``P / 2`` copies of the design run interleaved (C-slow), all on the same
inputs (a row is held for ``P`` subcycles) from the same initial state, so they agree.
"""

import time
import typing

import numpy as np

from ..config import Configuration
from ..netlist import CONST0, CONST1
from ..ports import PortMap
from .decompose import decompose_luts
from .errors import CompileError
from .pack import _clean
from .systolic import _fold_inverters, _share

__all__ = ["compile_sweep", "lower_sequential", "START"]

#: The net of the start signal (0 before row 0, 1 from row 0 on).
START = "$start"
#: How many rows of a column's vertical one more gate of a chain is worth when the jobs of a
#: column are chosen (earliest end first, a chain's end moved up by this per extra gate).
CHAIN_BONUS = 2
#: The ways the sweep is run, the best result kept: ``(lanes, order, gap)``: inputs on N
#: lanes (one a column, just in time) or W lanes (all in column 0, every ``gap``-th track),
#: ranked by first use or by a depth-first walk of the output cones.
MODES = (("N", "first", 1), ("W", "dfs", 1), ("W", "dfs", 2), ("W", "first", 1))
#: Most tracks tried for an automatic grid.
MAX_TRACKS = 2048
#: LUT tables copying one input: N, E, S, W (SPEC section 3).
_COPY_N, _COPY_E, _COPY_S, _COPY_W = 0xAAAA, 0xCCCC, 0xF0F0, 0xFF00


# Lowering --------------------------------------------------------------------------------------
def lower_sequential(netlist):
    """``(gates, outputs, state, sources)`` of ``netlist`` (flip-flops allowed).

    ``gates``: ``net -> (inputs, table)`` with 1 or 2 inputs, acyclic (flip-flop outputs are
    sources); ``outputs``: ``[(port, index, net)]`` (a net, an input bit, a flip-flop output
    or a constant); ``state``: ``{q: (d, init)}`` with ``d`` the gated next state
    (``start ? d : init``); ``sources``: the nets that enter the strip (input bits in port
    order, then :data:`START` and the flip-flop outputs if there are flip-flops).
    """
    luts = {net: (tuple(l.inputs), l.table) for net, l in netlist.luts.items()}
    dffs = {q: (ff.d, ff.init) for q, ff in netlist.dffs.items()}
    input_nets = {net for port in netlist.inputs.values() for net in port.bits}
    outputs = [(name, i, net) for name, port in netlist.outputs.items()
               for i, net in enumerate(port.bits)]
    _clean(luts, dffs, outputs, input_nets)
    state_in = {}
    for q, (d, init) in dffs.items():
        gate = f"{q}$next"
        # the loop carries q XOR init (so that the grid's reset 0 is the initial value):
        # next = start & (d ^ init); inputs (start, d), address start | d << 1
        luts[gate] = ((START, d), 0b0010 if init else 0b1000)
        state_in[q] = (gate, init)
    inverted = {q for q, (_, init) in dffs.items() if init}
    if inverted:
        for net, (ins, table) in list(luts.items()):
            for i, name in enumerate(ins):
                if name in inverted:
                    table = sum(((table >> (a ^ (1 << i))) & 1) << a
                                for a in range(1 << len(ins)))
            luts[net] = (ins, table)
        for k, (port, index, net) in enumerate(outputs):
            if net in inverted:
                luts.setdefault(f"{net}$value", ((net,), 0b01))
                outputs[k] = (port, index, f"{net}$value")
    sources_set = input_nets | set(dffs) | ({START} if dffs else set())
    protected = {net for _, _, net in outputs} | {g for g, _ in state_in.values()}
    gates, alias = decompose_luts(luts, protected=protected)
    for net, target in alias.items():
        gates[net] = (((target,), 0b10) if target not in (CONST0, CONST1)
                      else ((), int(target == CONST1)))
    # The gated next states are pseudo-outputs, so that the clean-up keeps them.
    pseudo = [("$next", q, g) for q, (g, _) in state_in.items()]
    every = outputs + pseudo
    changed = True
    while True:
        _clean(gates, {}, every, sources_set)
        if not changed:
            break
        names = {net for _, _, net in every}
        changed = _fold_inverters(gates, names)
        changed |= _share(gates, every)
    outputs = every[:len(outputs)]
    state = {q: (net, state_in[q][1]) for (_, q, net) in every[len(outputs):]}
    sources = [net for port in netlist.inputs.values() for net in port.bits]
    if state:
        sources += [START] + sorted(state)
    return gates, outputs, state, sources


# Cell tables ----------------------------------------------------------------------------------
def _lut(fn):
    """The 16-bit table of ``fn(w, n)`` (the W input is address bit 3, N bit 0)."""
    table = 0
    for a in range(16):
        if fn((a >> 3) & 1, a & 1):
            table |= 1 << a
    return table


def _gate_lut(inputs, table, h, v):
    """The table of the gate ``(inputs, table)`` in a cell whose W input carries ``h`` and N
    input ``v`` (each operand is one of them)."""
    def fn(w, n):
        values = {h: w, v: n}
        address = 0
        for i, net in enumerate(inputs):
            address |= values[net] << i
        return (table >> address) & 1
    return _lut(fn)


_TABLE_W, _TABLE_N = _lut(lambda w, n: w), _lut(lambda w, n: n)


class _Job(typing.NamedTuple):
    """One segment of a column's vertical: ``kind`` ``"gate"`` (pick the upper operand up at
    ``start``, compute the ``(gate, row, pair)`` steps of ``at`` on the way down),
    ``"unary"`` (compute at ``start``)
    or ``"inject"``; the result dropped on track ``drop`` (None: it stays at ``at``);
    ``end`` the last row the segment uses."""
    kind: str
    start: int
    end: int
    gate: object
    at: object
    drop: object
    pair: object


class _Stuck(Exception):
    """The sweep cannot go on with this many tracks."""


# The sweep -------------------------------------------------------------------------------------
class _Sweep:
    """Schedule ``gates`` on a strip of ``height`` tracks (module docstring).

    After :meth:`run`: ``cells`` ``{(x, y): {side: table}}`` (sides 1 = E, 2 = S of strip
    cells, ``y`` counted in the strip), ``injected`` ``{net: column}``, ``w_inputs`` ``{net:
    row}``, ``placed`` ``{net: (column, row)}`` (where a net went onto its track),
    ``emitted`` ``[(column, port, index)]`` (S lanes), ``final`` (the last column) and
    ``rows`` (``{net: row}`` at the end).
    """

    def __init__(self, gates, outputs, sources, returns, height, *, w_lanes=False,
                 n_only=(), gap=1, order="dfs"):
        self.gates = gates
        self.height = height
        self.readers = {}
        for net, (ins, _) in gates.items():
            for i in ins:
                self.readers.setdefault(i, set()).add(net)
        self.left = {net: len(r) for net, r in self.readers.items()}
        self.out_left = {}
        for _, _, net in outputs:
            if net not in (CONST0, CONST1):
                self.out_left[net] = self.out_left.get(net, 0) + 1
        self.ret_left = {}
        for net in returns:
            self.ret_left[net] = self.ret_left.get(net, 0) + 1
        self.outputs = outputs
        self.done = set()
        self.row = {}                   # net -> track row (each net on at most one track)
        self.tracks = [None] * height
        self.cells = {}
        self.injected, self.w_inputs, self.placed, self.emitted = {}, {}, {}, []
        self._height_of = self._heights()
        needed = [s for s in sources if self._needed(s)]
        self.pending_sources = []
        if order == "dfs":
            rank = self._dfs_order(outputs, returns)
        else:
            rank = self._first_use()
        forced = [s for s in needed if s == START]
        rest = sorted((s for s in needed if s != START), key=lambda s: rank.get(s, 1 << 30))
        if w_lanes:
            regular = [s for s in rest if s not in n_only]
            for k, net in enumerate(regular[:(height - 1) // gap]):
                self._put(net, k * gap, 0, initial=True)
                self.w_inputs[net] = k * gap
            rest = [s for s in rest if s not in self.w_inputs]
        self.pending_sources = forced + rest

    # bookkeeping
    def _heights(self):
        """Longest path (in gates) from each gate to an output: the list-scheduling priority."""
        order, seen = [], set()
        for net in self.gates:
            stack = [(net, False)]
            while stack:
                n, post = stack.pop()
                if post:
                    order.append(n)
                    continue
                if n in seen or n not in self.gates:
                    continue
                seen.add(n)
                stack.append((n, True))
                stack.extend((i, False) for i in self.gates[n][0])
        height = {}
        for n in reversed(order):
            height[n] = 1 + max((height.get(r, 0) for r in self.readers.get(n, ())), default=0)
        return height

    def _dfs_order(self, outputs, returns):
        """Sources ranked by a depth-first walk of the output cones, output bits in order
        (least significant first): the operands of one gate come out next to each other."""
        rank, seen = {}, set()
        roots = [net for _, _, net in outputs] + list(returns)
        for root in roots:
            stack = [root]
            while stack:
                n = stack.pop()
                if n in seen:
                    continue
                seen.add(n)
                if n in self.gates:
                    stack.extend(reversed(self.gates[n][0]))
                else:
                    rank.setdefault(n, len(rank))
        return rank

    def _first_use(self):
        level = {}
        order = sorted(self.gates, key=lambda n: -self._height_of.get(n, 0))
        for n in order:
            level[n] = 1 + max((level.get(i, 0) for i in self.gates[n][0]), default=0)
        first = {}
        for n, (ins, _) in self.gates.items():
            for i in ins:
                first[i] = min(first.get(i, 1 << 30), level[n])
        return first

    def _needed(self, net, minus=()):
        left = self.left.get(net, 0)
        for g in minus:
            if g not in self.done and net in self.gates[g][0]:
                left -= 1
        return left > 0 or self.out_left.get(net, 0) > 0 or self.ret_left.get(net, 0) > 0

    def _put(self, net, r, x, initial=False):
        self.tracks[r] = net
        self.row[net] = r
        if not initial:
            self.placed[net] = (x, r)

    def _free(self, r):
        net = self.tracks[r]
        return net is None or not self._needed(net)

    def _ready(self, g):
        return all(i in self.row or i in (CONST0, CONST1) for i in self.gates[g][0])

    def _compute(self, g):
        if g in self.done:
            return
        self.done.add(g)
        for i in set(self.gates[g][0]):
            self.left[i] -= 1

    # one column
    def column(self, x):
        """Sweep column ``x`` top to bottom (plan its vertical's jobs, then run them);
        returns whether anything changed."""
        H = self.height
        for y in range(H):
            h = self.tracks[y]
            if h is not None and not self._needed(h):
                self.row.pop(h, None)
                self.tracks[y] = None
        free = [t is None for t in self.tracks]
        jobs = self._plan(free)
        inject = None
        if self.pending_sources:
            first_free = next((y for y in range(H) if free[y]), None)
            with_inject = None
            if first_free is not None:
                with_inject = [j for j in jobs if j.start > first_free]
                if len(with_inject) + 1 >= len(jobs) or self.pending_sources[0] == START:
                    inject = _Job("inject", -1, first_free, None, None, first_free, None)
                    jobs = with_inject
        return self._execute(x, jobs, inject)

    def _plan(self, free):
        """The vertical's jobs for this column: non-overlapping segments ``[start, end]``,
        earliest end first (a maximum set of intervals), the more gates the better."""
        H = self.height
        below = [None] * (H + 1)          # nearest free row at or below each row
        nxt = None
        for y in range(H - 1, -1, -1):
            if free[y]:
                nxt = y
            below[y] = nxt
        cands = []
        for y, h in enumerate(self.tracks):
            if h is None:
                continue
            for g in self.readers.get(h, ()):
                if g in self.done:
                    continue
                ins, _ = self.gates[g]
                if len(ins) == 1:
                    if self._needed(h, minus={g}):
                        d = below[y + 1] if y + 1 < H else None
                        if d is not None:
                            cands.append(_Job("unary", y, d, g, None, d, None))
                    continue
                o = ins[1] if ins[0] == h else ins[0]
                r = self.row.get(o)
                if r is None or r <= y:
                    continue
                pair = [p for p in self._pair(g, h, o) if p != g
                        and not self._needed(h, minus={g, p})
                        and not self._needed(o, minus={g, p})]
                first = (g, r, pair[0] if pair else None)
                for steps, drop in self._chains(first, h, below):
                    end = drop if drop is not None else steps[-1][1]
                    cands.append(_Job("gate", y, end, g, steps, drop, first[2]))
        if not cands:                # a second bit of one output net: out on an S lane
            for y, h in enumerate(self.tracks):
                if h is not None and self.out_left.get(h, 0) > 1 \
                        and not (self.readers.get(h, set()) - self.done):
                    cands.append(_Job("emit", y, H, h, None, None, None))
                    break
        def gates_of(j):
            if j.kind != "gate":
                return {j.gate}
            return {g for g, _, _ in j.at} | {p for _, _, p in j.at if p}

        cands.sort(key=lambda j: (j.end - CHAIN_BONUS * (len(gates_of(j)) - 1), j.end,
                                  -self._height_of.get(j.gate, 0)))
        chosen, taken, last = [], set(), -2
        for j in cands:
            mine = gates_of(j)
            if j.start <= last or mine & taken:
                continue
            chosen.append(j)
            taken |= mine
            last = j.end
        return chosen

    def _chains(self, first, upper, below, limit=6):
        """The ways to run the gate ``first`` ``(gate, row, pair)`` (picked-up operand
        ``upper``): ``[(steps, drop)]``, ``steps`` ``[(gate, row, pair)]`` computed down the
        vertical (a result whose only reader's other operand is lower down is carried on
        and computed there: a chain) and ``drop`` the track the last result goes to (None:
        it replaces its track operand)."""
        H = self.height
        out, steps = [], [first]
        done = {first[0]} | ({first[2]} if first[2] else set())
        while True:
            g, r, pair = steps[-1]
            ins = self.gates[g][0]
            low = self.tracks[r]
            carried = pair if pair else (g if self._needed(low, minus=done) else None)
            if carried is None:
                out.append((list(steps), None))
                return out
            d = below[r + 1] if r + 1 < H else None
            if d is not None:
                out.append((list(steps), d))
            if len(steps) >= limit or self.out_left.get(carried, 0) or \
                    self.ret_left.get(carried, 0):
                return out
            users = [u for u in self.readers.get(carried, ()) if u not in self.done]
            if len(users) != 1 or len(self.gates[users[0]][0]) != 2:
                return out
            g2 = users[0]
            o2 = [i for i in self.gates[g2][0] if i != carried][0]
            r2 = self.row.get(o2)
            if r2 is None or r2 <= r:
                return out
            if pair and self._needed(low, minus=done):
                return out
            steps.append((g2, r2, None))
            done.add(g2)

    def _execute(self, x, jobs, inject):
        H = self.height
        progress = False
        v, v_keep, job = None, False, None
        if inject is not None:
            v, v_keep, job = self.pending_sources.pop(0), True, inject
            self.injected[v] = x
            progress = True
        queue = list(jobs)
        for y in range(H):
            h = self.tracks[y]
            cell = {}
            e_net, s_net = h, v
            if job is None and queue and queue[0].start == y:
                job = queue.pop(0)
                step = 0
                if job.kind == "emit":
                    port, index = self._emit_output(h)
                    self.emitted.append((x, port, index))
                    self.out_left[h] -= 1
                    cell[2] = _TABLE_W
                    s_net, v_keep = h, False
                elif job.kind == "unary":
                    self._compute(job.gate)
                    t = self.gates[job.gate][1]
                    cell[1] = _TABLE_W
                    cell[2] = _lut(lambda w, n, t=t: (t >> w) & 1)
                    s_net, v_keep = job.gate, True
                else:                      # pick the upper operand up
                    cell[2] = _TABLE_W
                    s_net, v_keep = h, False
                    if self._needed(h, minus={job.gate} | ({job.pair} if job.pair else set())):
                        cell[1] = _TABLE_W
                    else:
                        e_net = None
                progress = True
            elif job is not None and job.kind == "gate" and step < len(job.at) \
                    and y == job.at[step][1]:
                g, _, pair = job.at[step]
                e_net, s_net, v_keep = self._do_gate(x, y, g, pair, h, v, cell)
                step += 1
                if step == len(job.at) and job.drop is None:
                    job = None
            elif job is not None and y == job.drop:
                cell[1] = _TABLE_N
                e_net, s_net, v_keep = v, None, False
                job = None
            elif e_net is not None and e_net == h:
                g = self._unary_in_place(h)
                if g is not None:
                    t = self.gates[g][1]
                    cell[1] = _lut(lambda w, n, t=t: (t >> w) & 1)
                    self._compute(g)
                    e_net = g
                    progress = True
            if 1 not in cell and e_net is not None:
                cell[1] = _TABLE_W if e_net == h else _TABLE_N
            if 2 not in cell and s_net is not None:
                cell[2] = _TABLE_N if s_net == v else _TABLE_W
            if cell:
                self.cells[(x, y)] = cell
            if e_net != h:
                if h is not None and self.row.get(h) == y:
                    self.row.pop(h, None)
                if e_net is None:
                    self.tracks[y] = None
                else:
                    self._put(e_net, y, x)
            v = s_net
        if v is not None and v_keep:
            raise _Stuck(f"column {x}: {v} reached the bottom with nowhere to go")
        return progress

    def _pair(self, g, a, b):
        """Gates on the same two operands as ``g`` (computed in the same cell if possible)."""
        both = (self.readers.get(a, set()) & self.readers.get(b, set())) - self.done
        return {p for p in both if len(self.gates[p][0]) == 2}

    def _do_gate(self, x, y, gate, pair, h, v, cell):
        """Compute ``gate`` (and ``pair``) from ``h`` on the track and ``v`` on the vertical
        at ``(x, y)``; returns ``(e_net, s_net, s_keep)``."""
        results = [gate] + ([pair] if pair else [])
        for g in results:
            self._compute(g)
        outs = ([h] if self._needed(h) else []) + results
        if len(outs) > 2 or self._needed(v) and v not in self.row:
            raise _Stuck(f"column {x} row {y}: {outs} do not fit a cell")
        e_net = outs[0]
        s_net = outs[1] if len(outs) > 1 else None
        for side, net in ((1, e_net), (2, s_net)):
            if net is None:
                continue
            cell[side] = _TABLE_W if net == h else _gate_lut(*self.gates[net], h, v)
        return e_net, s_net, s_net is not None

    def _unary_in_place(self, h):
        for g in self.readers.get(h, ()):
            if g in self.done or len(self.gates[g][0]) != 1:
                continue
            if self._needed(h, minus={g}):
                continue
            return g
        return None

    def _emit_output(self, net):
        taken = {(p, i) for _, p, i in self.emitted}
        for port, index, n in self.outputs:
            if n == net and (port, index) not in taken:
                return port, index
        raise AssertionError(net)

    def run(self, limit):
        x, idle = 0, 0
        while True:
            left = [g for g in self.gates if g not in self.done]
            if not left and not self.pending_sources and not self._extra_outputs():
                break
            if x >= limit:
                raise _Stuck(f"more than {limit} columns")
            changed = self.column(x)
            idle = 0 if changed else idle + 1
            if idle > 2:
                raise _Stuck(f"no progress at column {x} with {len(left)} gates left "
                             f"on {self.height} tracks")
            x += 1
        self.final = x - 1          # -1: no column was swept
        self.rows = dict(self.row)

    def _extra_outputs(self):
        """Output bits that still need an S lane: more bits of one net than tracks."""
        return any(self.out_left.get(n, 0) > 1 and n in self.row for n in self.out_left)


# Return routes ---------------------------------------------------------------------------------
def _plan_returns(items, min_half=1):
    """Choose per flip-flop the return column ``a`` and the margin depth ``D``.

    :param items: ``[(q, c, r, earliest)]``: injection column, track row, earliest return
        column (the first after ``d`` reached its track).
    :returns: ``(half, {q: (a, D)})`` with ``half = P / 2 = max(a - c, 0) + r + D`` for all.
    """
    if not items:
        return 1, {}
    lower = max(max(e - c, 0) + r + 1 for _, c, r, e in items)
    half = max(lower, min_half)
    order = sorted(items, key=lambda it: -(max(it[3] - it[1], 0) + it[2]))
    for _ in range(4 * len(items) + 64):
        plan, cols, depths = {}, set(), set()
        ok = True
        for q, c, r, e in order:
            found = None
            for D in range(1, half - r + 1):
                rest = half - r - D          # = max(a - c, 0)
                if rest > 0:
                    a = c + rest
                    if a >= e and a not in cols and D not in depths:
                        found = (a, D)
                        break
                elif D not in depths:
                    for a in range(e, c + 1):
                        if a not in cols:
                            found = (a, D)
                            break
                    if found:
                        break
            if found is None:
                ok = False
                break
            plan[q] = found
            cols.add(found[0])
            depths.add(found[1])
        if ok:
            return half, plan
        half += 1
    raise CompileError("the feedback loops could not be given one period")


# The compile -----------------------------------------------------------------------------------
def compile_sweep(netlist, *, width=None, height=None, progress=None):
    """Compile ``netlist`` by the sweep (module docstring).

    :param width, height: the grid (both or neither; ``None``: the smallest found).
    :returns: ``(config, portmap, report)``.
    :raises CompileError: if it does not fit the given size.
    """
    times = {}
    t0 = time.perf_counter()
    gates, outputs, state, sources = lower_sequential(netlist)
    times["pack"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    returns = [d for d, _ in state.values()]
    limit = 8 * (len(gates) + len(sources)) + 64
    margin = len(state) + 2 if state else 0
    cap = MAX_TRACKS if height is None else max(2, height - margin)
    best, errors, tried = None, [], 0

    def attempt(H, mode):
        nonlocal best, tried
        lanes, order, gap = mode
        try:
            sweep = _Sweep(gates, outputs, sources, returns, H, w_lanes=lanes == "W",
                           n_only=set(state) | {START}, gap=gap, order=order)
            sweep.run(limit=limit)
            built = _build(netlist, sweep, state, outputs, H)
        except _Stuck as stuck:
            errors.append(str(stuck))
            return False
        tried += 1
        if progress is not None:
            progress("place_route", tried, 0)
        if width is not None and (built[0].width > width or built[0].height > height):
            errors.append(f"it needs {built[0].width} x {built[0].height} cells")
            return True
        key = (built[2]["cells"]["total"], built[0].width * built[0].height)
        if best is None or key < best[0]:
            best = (key, built)
        return True

    start = max(4, len(sources) // 2 + 2)
    for mode in MODES:
        H, found = min(start, cap), None
        while H <= cap:
            if attempt(H, mode):
                found = H
                break
            if H == cap:
                break
            H = min(cap, max(H + 2, int(H * 1.3)))
        if found is not None:
            for more in (int(found * 1.3) + 2, int(found * 1.7) + 4):
                if more <= cap:
                    attempt(more, mode)
    best = best[1] if best is not None else None
    if best is None:
        raise CompileError(f"the sweep back end found no layout ({errors[-1] if errors else ''})"
                           + (f" within {width} x {height}" if width is not None else ""))
    config, portmap, report = best
    if width is not None:
        config, portmap = _pad(config, portmap, width, height)
        report["grid"] = [width, height]
    times["place_route"] = time.perf_counter() - t1
    report["times"] = {k: round(v, 4) for k, v in times.items()}
    return config, portmap, report


def _build(netlist, sweep, state, outputs, H):
    """The configuration and port map of a finished sweep, with the return routes."""
    # return routes: choose columns and depths
    items = []
    for q, (d, _) in state.items():
        c = sweep.injected[q]
        r = sweep.rows[d]
        px = sweep.placed.get(d, (0, 0))[0] if d not in sweep.w_inputs else -1
        items.append((q, c, r, px + 1))
    half, plan = _plan_returns(items)
    M = max((D for _, D in plan.values()), default=0)
    final = max([sweep.final + 1] + [a for a, _ in plan.values()])
    # output lanes: E lanes at the last column (one per net; further copies on S lanes)
    e_rows = {}
    for port, index, net in outputs:
        if (port, index) in {(p, i) for _, p, i in sweep.emitted}:
            continue
        if net in (CONST0, CONST1):
            continue
        if net not in sweep.rows:
            raise _Stuck(f"output net {net} is not on a track")
        r = sweep.rows[net]
        if r in e_rows.values():
            raise _Stuck(f"two output bits of net {net} want track {r}")
        e_rows[(port, index)] = r
    busy = set(e_rows.values()) | set(sweep.rows.values())
    free_rows = [r for r in range(H) if r not in busy]
    consts = [(p, i, n) for p, i, n in outputs if n in (CONST0, CONST1)]
    if len(consts) > len(free_rows):
        raise _Stuck("no track left for the constant outputs")
    for (p, i, n), r in zip(consts, free_rows):
        e_rows[(p, i)] = r
    # grid size: even; the last column odd so that width = final + 1 is even
    if final % 2 == 0:
        final += 1
    Wd = final + 1
    Ht = M + H + ((M + H) % 2)
    luts = np.zeros((Ht, Wd, 4), dtype=np.uint16)
    logic = set()
    for (x, y), cell in sweep.cells.items():
        for side, table in cell.items():
            luts[M + y, x, side] = table
            if table not in (_TABLE_W, _TABLE_N):
                logic.add((x, M + y))
    # tracks carried on to the last column for the E outputs
    last_x = {}
    for (x, y), cell in sweep.cells.items():
        if 1 in cell:
            last_x[y] = max(last_x.get(y, -1), x)
    const_rows = {e_rows[(p, i)]: n for p, i, n in consts}
    for key, r in e_rows.items():
        if r in const_rows:
            if const_rows[r] == CONST1:
                luts[M + r, final, 1] = 0xFFFF
                logic.add((final, M + r))
            continue
        for x in range(sweep.final + 1, final + 1):
            luts[M + r, x, 1] = _TABLE_W
    # S-lane outputs below the strip (the extra row when M + H is odd)
    s_out = {}
    for x, p, i in sweep.emitted:
        y = M + H - 1
        if Ht > M + H:
            luts[M + H, x, 2] = _COPY_N
            y = M + H
        s_out[(p, i)] = (x, y)
    # N-lane inputs through the margin; the start cell; the returns
    for net, c in sweep.injected.items():
        if net == START:
            luts[0, c, 2] = 0xFFFF
            logic.add((c, 0))
            for y in range(1, M):
                luts[y, c, 2] = _COPY_N
        elif net in state:
            continue
        else:
            for y in range(M):
                luts[y, c, 2] = _COPY_N
    for q, (d, _) in state.items():
        a, D = plan[q]
        c, r = sweep.injected[q], sweep.rows[d]
        m = M - D
        Y = M + r
        for x in range(sweep.final + 1, a):
            luts[Y, x, 1] = _COPY_W
        luts[Y, a, 0] = _COPY_W
        for y in range(Y - 1, m, -1):
            luts[y, a, 0] = _COPY_S
        if a > c:
            luts[m, a, 3] = _COPY_S
            for x in range(a - 1, c, -1):
                luts[m, x, 3] = _COPY_E
            luts[m, c, 2] = _COPY_E
        elif a < c:
            luts[m, a, 1] = _COPY_S
            for x in range(a + 1, c):
                luts[m, x, 1] = _COPY_W
            luts[m, c, 2] = _COPY_W
        else:
            luts[m, c, 2] = _COPY_S
        for y in range(m + 1, M):
            luts[y, c, 2] = _COPY_N
        # the loop's length, checked: T(out of the last margin cell) = c + M - 1 + P
        length = (Y - m) + abs(a - c) + (M - 1 - m)
        assert a + Y + length == c + M - 1 + 2 * half, (q, a, c, Y, m, half)
    period = 2 * half if state else 2
    config = Configuration(Wd, Ht, luts)
    # port map
    out_tags = {}
    for (p, i), r in e_rows.items():
        out_tags[(p, i)] = ("E", M + r, final + M + r)
    for (p, i), (x, y) in s_out.items():
        out_tags[(p, i)] = ("S", x, x + y)
    latency = max([t + 1 for _, _, t in out_tags.values()] + [1])
    ports = []
    for name, port in netlist.inputs.items():
        bits = []
        for net in port.bits:
            if net in sweep.injected:
                c = sweep.injected[net]
                bits.append({"side": "N", "lane": c, **({"skew": c - c % 2} if c > 1 else {})})
            elif net in sweep.w_inputs:
                y = M + sweep.w_inputs[net]
                bits.append({"side": "W", "lane": y, **({"skew": y - y % 2} if y > 1 else {})})
            else:
                bits.append(None)
        # unused bits: any lane no other bit takes
        ports.append([name, port.signed, bits])
    used_n = set(sweep.injected.values())
    used_w = {M + r for r in sweep.w_inputs.values()}
    spare = [("W", y) for y in range(Ht) if y not in used_w] + \
        [("N", x) for x in range(Wd) if x not in used_n]
    port_json = []
    for name, signed, bits in ports:
        for k, b in enumerate(bits):
            if b is None:
                side, lane = spare.pop(0)
                bits[k] = {"side": side, "lane": lane}
        port_json.append({"name": name, "direction": "in", "signed": signed, "bits": bits})
    for name, port in netlist.outputs.items():
        bits = []
        for i in range(len(port.bits)):
            side, lane, tag = out_tags[(name, i)]
            skew = tag + 1 - latency
            bits.append({"side": side, "lane": lane, **({"skew": skew} if skew else {})})
        port_json.append({"name": name, "direction": "out", "signed": port.signed,
                          "bits": bits})
    portmap = PortMap(Wd, Ht, port_json, period=period, latency=latency)
    used = (luts != 0).any(axis=2)
    ys, xs = np.nonzero(used)
    all_cells = {(int(x), int(y)) for y, x in zip(ys, xs)}
    box = ([int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())] if len(xs) else None)
    report = {
        "back_end": "sweep",
        "grid": [Wd, Ht],
        "region": None,
        "bounding_box": box,
        "cells": {"logic": len(logic & all_cells), "routing": len(all_cells - logic),
                  "delay": 0, "total": len(all_cells)},
        "luts": len(netlist.luts), "flip_flops": len(netlist.dffs),
        "gates": len(sweep.gates), "tracks": H, "margin_rows": M,
        "period": period, "latency": latency,
    }
    return config, portmap, report


def _pad(config, portmap, width, height):
    """Place a ``config`` (and its port map) in the top-left corner of a ``width`` x
    ``height`` grid, its E and S outputs carried to the new edges."""
    W0, H0 = config.width, config.height
    if (W0, H0) == (width, height):
        return config, portmap
    luts = np.zeros((height, width, 4), dtype=np.uint16)
    luts[:H0, :W0] = config.luts
    ports = []
    for port in portmap.ports:
        bits = []
        for b in port.bits:
            side, lane, skew = b.side.letter, b.lane, b.skew
            if port.direction == "out" and side == "E":
                for x in range(W0, width):
                    luts[lane, x, 1] = _COPY_W
                skew += width - W0
            elif port.direction == "out" and side == "S":
                for y in range(H0, height):
                    luts[y, lane, 2] = _COPY_N
                skew += height - H0
            bits.append({"side": side, "lane": lane, **({"skew": skew} if skew else {})})
        ports.append({"name": port.name, "direction": port.direction, "signed": port.signed,
                      "bits": bits})
    return (Configuration(width, height, luts),
            PortMap(width, height, ports, period=portmap.period, latency=portmap.latency))
