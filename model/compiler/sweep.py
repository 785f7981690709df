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

Inputs enter on the N lanes, one per column, ranked by first use or by the output cones
(:data:`MODES`; lazily: only where they displace no job), or on the W lanes of column 0 (all
are tried); outputs leave on the E lanes of the last column (a second copy
or a constant on an S lane), or as soon as they are finished on the S lane of their column
(also tried). A result carried down the vertical is dropped on an empty track, or swapped
into the track of the next job's operand where that operand is read for the last time
(:meth:`_Sweep._resolve`).

Flip-flops (SPEC section 4's timing, issue 12's cycle semantics): a flip-flop ``q <= d``
with initial value ``init`` becomes a loop carrying ``q XOR init``, so that the grid's reset
value 0 is the initial value; its next state is ``start & (d ^ init)`` (``start`` 0 for the
rows before row 0, 1 from row 0 on: a cell of constant-1 tables at the north-west corner,
which outputs 0 until its first update) and its readers see ``q`` through a folded inverter
when ``init`` is 1. The sweep treats ``q`` as an input injected on the N lane of its column
``c`` and the next state as a result that stays on its track ``r``; after the sweep, a
*return route* on the cells' N and W outputs (unused by the sweep) carries it from its track
at column ``a`` up to a margin row above the strip, along it and down column ``c``'s N lane
back into the strip. The loop then takes ``2 (max(a - c, 0) + r + D)`` subcycles (``D`` the
margin row's depth, counted from the strip): every loop is made exactly the design-clock
period ``P`` by choosing ``a`` and ``D`` per flip-flop (distinct columns and margin rows, so
the returns never share a wire). ``P / 2`` copies of the design run interleaved (C-slow), all
on the same inputs (a row is held for ``P`` subcycles) from the same initial state, so they
agree.

:mod:`.strip` builds the configuration of a finished sweep (with the return routes) and places
it in the grid, leading its lanes to the edges (regions, defect maps).
"""

import time
import typing

from ..netlist import CONST0, CONST1
from .errors import CompileError
from .lower import lower_sequential
from .strip import _TABLE_N, _TABLE_W, LEADS, START, Stuck, build_layout, embed, offsets

__all__ = ["compile_sweep", "lower_sequential", "START"]

#: How many rows of a column's vertical one more gate of a chain is worth when the jobs of a
#: column are chosen (earliest end first, a chain's end moved up by this per extra gate).
CHAIN_BONUS = 8
#: Columns ahead in which a defect keeps a net from being dropped on its track (so that few
#: nets must move off their tracks just before a defect): tried in turn while none fits.
DEFECT_LOOKAHEAD = (6, 12, 3)
#: Most gates one job computes down a column's vertical.
CHAIN_LIMIT = 6
#: The ways the sweep is run, the best result kept: ``(lanes, order, gap, early, lazy)``:
#: inputs on N lanes (one a column) or W lanes (all in column 0, every ``gap``-th track),
#: ranked by first use, by a depth-first walk of the output cones (``"dfs"``), or by the same
#: walk with the outputs of the fewest sources first (``"cone"``: an ALU's slices in order,
#: its comparison, whose cone is every bit, last); with ``early``, a finished output leaves
#: on the S lane of a column whose vertical is free below it instead of riding its track to
#: the last column (cheaper for the multipliers' low product bits, dearer for the adders');
#: with ``lazy``, an N-lane input enters only in a column where it displaces no job (else
#: where it displaces at most one), so that inputs arrive as the gates reach them
#: (``alu``: 3,704 cells instead of 4,930, its LUT2 mapping).
MODES = tuple((lanes, order, gap, early, lazy) for early in (True, False)
              for lanes, order, gap, lazy in (("W", "dfs", 1, False), ("N", "first", 1, False),
                                              ("N", "cone", 1, True), ("W", "dfs", 2, False),
                                              ("W", "first", 1, False)))
#: Work the search may spend once it has a layout, in cells swept (columns x tracks summed
#: over the attempts): a count, not a time, so that a compile gives the same program on
#: every machine and load.
SEARCH_STEPS = 1_500_000
#: A carried result whose drop row the planner chooses (:meth:`_Sweep._resolve`).
_FLEX = -1
#: Most tracks tried for an automatic grid.
MAX_TRACKS = 2048
#: What a sweep attempt at a given grid size returns when its layout is taller than the grid.
_TOO_TALL = object()


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




class _Job(typing.NamedTuple):
    """One segment of a column's vertical: ``kind`` ``"gate"`` (pick the upper operand up at
    ``start``, compute the ``(gate, row, pair)`` steps of ``at`` on the way down),
    ``"unary"`` (compute at ``start``), ``"move"`` (a net off its track before a defect),
    ``"emit"`` (a copy down to the S lane) or ``"inject"``; the result dropped on track
    ``drop`` (None: it stays where it was computed); ``end`` the last row the segment uses."""
    kind: str
    start: int
    end: int
    gate: object
    at: object
    drop: object
    pair: object


# The sweep -------------------------------------------------------------------------------------
class _Sweep:
    """Schedule ``gates`` on a strip of ``height`` tracks (module docstring).

    After :meth:`run`: ``cells`` ``{(x, y): {side: table}}`` (sides 1 = E, 2 = S of strip
    cells, ``y`` counted in the strip), ``injected`` ``{net: column}``, ``w_inputs`` ``{net:
    row}``, ``placed`` ``{net: (column, row)}`` (where a net went onto its track),
    ``emitted`` ``[(column, port, index)]`` (S lanes), ``final`` (the last column) and
    ``row`` (``{net: track}``, at the end the nets left on the tracks).
    """

    def __init__(self, gates, outputs, sources, returns, height, *, w_lanes=False,
                 n_only=(), gap=1, order="dfs", blocked=(), no_inject=(), lookahead=6,
                 swaps=True, early_outputs=True, lazy=False):
        self.gates = gates
        self.lazy = lazy
        self.height = height
        # readers in the gates' order (lists, not sets: a compile must not depend on the
        # process's string hashing)
        self.readers = {}
        for net, (ins, _) in gates.items():
            for i in dict.fromkeys(ins):
                self.readers.setdefault(i, []).append(net)
        self.left = {net: len(r) for net, r in self.readers.items()}
        self.out_left = {}
        for _, _, net in outputs:
            if net not in (CONST0, CONST1):
                self.out_left[net] = self.out_left.get(net, 0) + 1
        self.ret_left = {}
        for net in returns:
            self.ret_left[net] = self.ret_left.get(net, 0) + 1
        self.outputs = outputs
        # defective cells (strip coordinates): no track passes them (a net moves off its track
        # the column before) and no vertical crosses them
        self.cut = {}
        for x, y in blocked:
            self.cut.setdefault(x, set()).add(y)
        self.x = 0
        # carried results may be swapped into the track the next job frees (not with defects)
        self.swaps = swaps and not blocked
        self.early_outputs = early_outputs and not blocked
        self.no_inject = set(no_inject)     # columns whose N lane crosses a defect
        self.lookahead = lookahead
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
        elif order == "cone":
            rank = self._dfs_order(outputs, returns, by_cone=True)
        else:
            rank = self._first_use()
        forced = [s for s in needed if s == START]
        rest = sorted((s for s in needed if s != START), key=lambda s: rank.get(s, 1 << 30))
        if w_lanes:
            regular = [s for s in rest if s not in n_only]
            dead = set().union(*(self.cut.get(k, set()) for k in range(lookahead)))
            rows = [y for y in range(0, height - 1, gap) if y not in dead]
            for net, y in zip(regular, rows):
                self._put(net, y, 0, initial=True)
                self.w_inputs[net] = y
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

    def _dfs_order(self, outputs, returns, by_cone=False):
        """Sources ranked by a depth-first walk of the output cones, output bits in order
        (least significant first): the operands of one gate come out next to each other.
        With ``by_cone``, the outputs with the fewest sources in their cones first."""
        roots = [net for _, _, net in outputs] + list(returns)
        if by_cone:
            size = {root: sum(1 for _ in self._sources_under(root, set())) for root in roots}
            roots = sorted(roots, key=size.get)
        rank, seen = {}, set()
        for root in roots:
            for n in self._sources_under(root, seen):
                rank.setdefault(n, len(rank))
        return rank

    def _sources_under(self, root, seen):
        """The sources of ``root``'s cone not in ``seen``, depth first (operands in order);
        every net visited is added to ``seen``."""
        stack = [root]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in self.gates:
                stack.extend(reversed(self.gates[n][0]))
            else:
                yield n

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
        self.x = x
        dead = set().union(*(self.cut.get(x + k, set()) for k in range(self.lookahead)))
        free = [t is None and y not in dead for y, t in enumerate(self.tracks)]
        jobs = self._plan(free)
        inject = None
        cut = self.cut.get(x, ())
        if self.pending_sources and (x not in self.no_inject
                                     or self.pending_sources[0] == START):
            first_free = next((y for y in range(H) if free[y]), None)
            if first_free is not None and any(c <= first_free for c in cut):
                first_free = None
            if first_free is not None and any(j.kind == "move" and j.start <= first_free
                                              for j in jobs):
                first_free = None
            with_inject = None
            if first_free is not None:
                with_inject = [j for j in jobs if j.start > first_free]
                # an input enters where it displaces at most one job (lazy: none)
                if self.pending_sources[0] == START \
                        or len(with_inject) + (0 if self.lazy else 1) >= len(jobs):
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
        cands, forced = [], []
        here = self.cut.get(self.x, set())
        soon, later = self.cut.get(self.x + 1, set()), self.cut.get(self.x + 2, set())
        for y in sorted(soon | later):
            h = self.tracks[y] if y < H else None
            if h is None:
                continue
            # a defect ahead: the net moves down off its track, to a free track below that
            # the vertical reaches without crossing a defect
            d = below[y + 1] if y + 1 < H else None
            while d is not None and d in later:
                d = below[d + 1] if d + 1 < H else None
            if d is not None and any(y < c <= d for c in here):
                d = None
            if d is None:
                if y in soon:
                    raise Stuck(f"column {self.x}: no free track below a defect ahead")
                continue
            forced.append(_Job("move", y, d, h, None, d, None))
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
                    # end: the drop row as the priority (a swap may take the result earlier)
                    end = (drop if drop not in (None, _FLEX) else
                           steps[-1][1] if drop is None else H + steps[-1][1])
                    if drop is not None and self.swaps:
                        drop = _FLEX    # the planner drops it (a free track, or a swap)
                    cands.append(_Job("gate", y, end, g, steps, drop, first[2]))
        if not cands:                # a second bit of one output net: out on an S lane
            for y, h in enumerate(self.tracks):
                if h is not None and self.out_left.get(h, 0) > 1 \
                        and all(g in self.done for g in self.readers.get(h, ())):
                    cands.append(_Job("emit", y, H, h, None, None, None))
                    break
        elif self.early_outputs:
            # a finished output leaves on an S lane now instead of riding its track to the
            # last column (chosen last: only where the vertical is free down to the bottom)
            for y, h in enumerate(self.tracks):
                if h is not None and self.out_left.get(h, 0) and not self.ret_left.get(h) \
                        and all(g in self.done for g in self.readers.get(h, ())):
                    cands.append(_Job("emit", y, 2 * H, h, None, None, None))
        def gates_of(j):
            if j.kind != "gate":
                return {j.gate}
            return {g for g, _, _ in j.at} | {p for _, _, p in j.at if p}

        cut = self.cut.get(self.x, ())
        if cut:
            cands = [j for j in cands if not any(j.start <= c <= j.end for c in cut)]
        cands.sort(key=lambda j: (j.end - CHAIN_BONUS * (len(gates_of(j)) - 1), j.end,
                                  -self._height_of.get(j.gate, 0)))
        if self.swaps:      # (never with defects, so no forced moves)
            return self._select(cands, below, gates_of)
        chosen, taken = [], set()
        for j in forced + cands:
            mine = gates_of(j) if j.kind != "move" else set()
            if mine & taken or any(j.start <= c.end and c.start <= j.end for c in chosen):
                if j.kind == "move":
                    raise Stuck(f"column {self.x}: two nets must leave tracks before defects")
                continue
            if j.kind != "move" and any(j.start <= y <= j.end for y in
                                        (f.start for f in forced)):
                continue
            chosen.append(j)
            taken |= mine
        chosen.sort(key=lambda j: j.start)
        return chosen

    def _frees(self, job):
        """Whether ``job`` picks its upper operand up for good (its last use), so that its
        track can take the result the job above carries down (a swap)."""
        # the same test as the pick-up in _execute
        return job.kind == "gate" and not self._needed(
            self.tracks[job.start], minus={job.gate} | ({job.pair} if job.pair else set()))

    def _resolve(self, jobs, below):
        """``jobs`` (sorted by start) with every carried result given its drop row: the
        nearest free track below its last gate if that comes before the next job, else the
        next job's start if that job frees its track (a swap: the cell drops the carried
        result on the track and picks the next operand up); None if some result has nowhere
        to go or two jobs overlap."""
        H = self.height
        out, last = [], -1
        for k, j in enumerate(jobs):
            if j.start <= last:
                return None
            if j.drop is _FLEX:
                c = j.at[-1][1]
                f = below[c + 1] if c + 1 < H else None
                nxt = jobs[k + 1] if k + 1 < len(jobs) else None
                if f is not None and (nxt is None or f < nxt.start):
                    j = j._replace(drop=f, end=f)
                elif nxt is not None and nxt.start > c and self._frees(nxt):
                    j = j._replace(drop=nxt.start, end=nxt.start)
                    out.append(j)
                    last = nxt.start - 1        # the next job starts in the swap cell
                    continue
                else:
                    return None
            out.append(j)
            last = j.end
        return out

    def _select(self, cands, below, gates_of):
        """The column's jobs, chosen greedily in ``cands``' order (earliest end first) while
        the set stays feasible (:meth:`_resolve`); carried results are dropped on free tracks
        or swapped into the track the next job frees."""
        chosen, taken = [], set()
        for j in cands:
            mine = gates_of(j)
            if mine & taken:
                continue
            trial = sorted(chosen + [j], key=lambda c: c.start)
            if self._resolve(trial, below) is None:
                continue
            chosen = trial
            taken |= mine
        return self._resolve(chosen, below) if chosen else []

    def _chains(self, first, upper, below):
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
            low = self.tracks[r]
            carried = pair if pair else (g if self._needed(low, minus=done) else None)
            if carried is None:
                out.append((list(steps), None))
                return out
            d = below[r + 1] if r + 1 < H else None
            if d is not None or self.swaps:
                out.append((list(steps), d if d is not None else _FLEX))
            if len(steps) >= CHAIN_LIMIT or self.out_left.get(carried, 0) or \
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
        cut = self.cut.get(x, ())
        for y in range(H):
            h = self.tracks[y]
            if y in cut:
                if h is not None or v is not None and v_keep:
                    raise Stuck(f"column {x}: a net runs into the defect at row {y}")
                self.tracks[y] = None
                v = None
                continue
            cell = {}
            e_net, s_net = h, v
            if job is None and queue and queue[0].start == y:
                job = queue.pop(0)
                step = 0
                if job.kind == "move":
                    cell[2] = _TABLE_W
                    e_net, s_net, v_keep = None, h, True
                elif job.kind == "emit":
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
                if queue and queue[0].start == y:       # a swap: the next job starts here
                    job, step = queue.pop(0), 0
                    cell[2] = _TABLE_W
                    s_net = h
                    progress = True
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
            raise Stuck(f"column {x}: {v} reached the bottom with nowhere to go")
        return progress

    def _pair(self, g, a, b):
        """Gates on the same two operands as ``g`` (computed in the same cell if possible)."""
        of_b = set(self.readers.get(b, ()))
        both = [p for p in self.readers.get(a, ()) if p in of_b and p not in self.done]
        return [p for p in both if len(self.gates[p][0]) == 2]

    def _do_gate(self, x, y, gate, pair, h, v, cell):
        """Compute ``gate`` (and ``pair``) from ``h`` on the track and ``v`` on the vertical
        at ``(x, y)``; returns ``(e_net, s_net, s_keep)``."""
        results = [gate] + ([pair] if pair else [])
        for g in results:
            self._compute(g)
        outs = ([h] if self._needed(h) else []) + results
        if len(outs) > 2 or self._needed(v) and v not in self.row:
            raise Stuck(f"column {x} row {y}: {outs} do not fit a cell")
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
            left = len(self.gates) - len(self.done)
            if not left and not self.pending_sources and not self._extra_outputs():
                break
            if x >= limit:
                raise Stuck(f"more than {limit} columns")
            changed = self.column(x)
            idle = 0 if changed else idle + 1
            if idle > 2:
                raise Stuck(f"no progress at column {x} with {left} gates left "
                             f"on {self.height} tracks")
            x += 1
        self.final = x - 1          # -1: no column was swept

    def _extra_outputs(self):
        """Output bits that still need an S lane: more bits of one net than tracks."""
        return any(self.out_left.get(n, 0) > 1 and n in self.row for n in self.out_left)


# The compile -----------------------------------------------------------------------------------
def compile_sweep(netlist, *, width=None, height=None, region=None, allowed=None,
                  progress=None):
    """Compile ``netlist`` by the sweep (module docstring).

    :param width, height: the grid (both or neither; ``None``: the smallest found).
    :param region: ``(x0, y0, x1, y1)`` (corners inclusive) or None; :param allowed: the
        usable cells (region and defects applied), a set of ``(x, y)``, or None for all. The
        layout is moved to the first offset where it and the pass cells leading its lanes to
        the grid's edges use only allowed cells.
    :returns: ``(config, portmap, report)``.
    :raises CompileError: if it does not fit the given size, region or defect map (naming
        the size it needs).
    """
    if width is not None:
        n_in = sum(len(p.bits) for p in netlist.inputs.values())
        n_out = sum(len(p.bits) for p in netlist.outputs.values())
        if n_in > width + height:
            raise CompileError(f"the design has {n_in} input bits but only {width + height} "
                               f"input lanes (N and W edges) on the {width} x {height} grid: "
                               "give a larger --size, or none")
        if n_out > width + height:
            raise CompileError(f"the design has {n_out} output bits but only "
                               f"{width + height} output lanes (S and E edges) on the {width} "
                               f"x {height} grid: give a larger --size, or none")
    times = {}
    t0 = time.perf_counter()
    gates, outputs, state, sources = lower_sequential(netlist)
    times["pack"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    returns = [d for d, _ in state.values()]
    limit = 8 * (len(gates) + len(sources)) + 64
    room = height if region is None else (region[3] - region[1] + 1)
    # every track count up to the grid's height is tried: the margin rows a layout with
    # flip-flops needs above its strip are known only once it is laid out (embed refuses a
    # layout that does not fit)
    cap = MAX_TRACKS if height is None else max(2, room)
    best, errors, tried, steps = None, [], 0, 0

    x0, y0, x1, y1 = region if region is not None else (0, 0, (width or 1) - 1,
                                                         (height or 1) - 1)
    holes = set()
    if allowed is not None:
        holes = {(x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)} - allowed
    n_regular = sum(len(p.bits) for p in netlist.inputs.values())

    def attempt(H, mode, lookahead=DEFECT_LOOKAHEAD[0]):
        nonlocal best, tried, steps
        lanes, order, gap, early, lazy = mode
        origin = (x0 if lanes == "N" or x0 == 0 else x0 + n_regular, y0)
        margin = len(state) + 2 if holes else 0    # margin rows above the strip (guessed)
        for _ in range(3 if holes else 1):
            top = origin[1] + margin
            blocked = {(x - origin[0], y - top) for x, y in holes
                       if x >= origin[0] and top <= y < top + H}
            try:
                sweep = _Sweep(gates, outputs, sources, returns, H, w_lanes=lanes == "W",
                               n_only=set(state) | {START}, gap=gap, order=order,
                               early_outputs=early, lazy=lazy,
                               blocked=blocked,
                               no_inject={x - origin[0] for x, y in holes
                                          if origin[1] <= y < top},
                               lookahead=lookahead)
                try:
                    sweep.run(limit=limit)
                finally:
                    steps += (sweep.x + 1) * H
                layout = build_layout(netlist, sweep, state, outputs, H, margin=margin,
                                      holes=frozenset((x - origin[0], y - origin[1])
                                                      for x, y in holes))
            except Stuck as stuck:
                errors.append(str(stuck))
                return False
            if layout.margin == margin:
                break
            margin = layout.margin
        tried += 1
        if progress is not None:
            progress("place_route", tried, 0)
        h, w = layout.luts.shape[:2]
        if width is None:
            built = embed(netlist, layout, w, h, 0, 0)
        else:
            built = None
            for led in LEADS:
                for ox, oy in [origin] + offsets(layout, width, height, region):
                    built = embed(netlist, layout, width, height, ox, oy, allowed, led)
                    if built is not None:
                        break
                if built is not None:
                    break
            if built is None:
                errors.append(f"it needs {w} x {h} cells")
                # more tracks only make the layout taller: no later height of this mode fits
                return _TOO_TALL if h > room else True
        key = (built[2]["cells"]["total"], built[0].width * built[0].height)
        if best is None or key < best[0]:
            best = (key, built)
        return True

    start = max(4, len(sources) // 2 + 2)

    def spent():
        return best is not None and steps > SEARCH_STEPS

    for lookahead in DEFECT_LOOKAHEAD if holes else DEFECT_LOOKAHEAD[:1]:
        for mode in MODES:
            H, found = min(start, cap), None
            while H <= cap and not spent():
                fitted = attempt(H, mode, lookahead)
                if fitted is _TOO_TALL:
                    break
                if fitted:
                    found = H
                    break
                if H == cap:
                    break
                H = min(cap, max(H + 2, int(H * 1.3)))
            if found is not None:
                start = max(4, int(found * 0.8))
                for more in (int(found * 1.3) + 2, int(found * 1.7) + 4):
                    if more <= cap and not spent():
                        attempt(more, mode, lookahead)
        if best is not None:
            break
    best = best[1] if best is not None else None
    if best is None and netlist.dffs and region is not None and region[0] + region[1] > 1:
        raise CompileError(
            f"the region {','.join(map(str, region))} does not contain the grid's north-west "
            "corner: a design with flip-flops starts its layout there (its start cell must "
            "be at cell 0,0, docs/compiler.md); give a region that starts at 0,0, or none")
    if best is None and width is not None:
        free, _, free_report = compile_sweep(netlist)
        where = (f"the region {','.join(map(str, region))}" if region is not None
                 else f"a {width} x {height} grid")
        extra = ("; a region needs the grid's W or N edge for the inputs and its E or S "
                 "edge for the outputs" if region is not None else "")
        holes = allowed is not None and len(allowed) < width * height and region is None
        extra += ("; with flip-flops the layout starts at the grid's north-west corner"
                  if netlist.dffs and (region is not None or holes) else "")
        error = CompileError(
            f"the design does not fit {where}{' with these defects' if holes else ''}: "
            f"the sweep lays it out on {free.width} x {free.height} "
            f"({free_report['cells']['total']} cells used){extra}; give a larger --size or "
            "region, or none")
        error.needs = (free.width * free.height, free_report["cells"]["total"])
        raise error
    if best is None:
        raise CompileError(f"the sweep back end found no layout ({errors[-1] if errors else ''})")
    config, portmap, report = best
    report["region"] = list(region) if region is not None else None
    times["place_route"] = time.perf_counter() - t1
    report["times"] = {k: round(v, 4) for k, v in times.items()}
    return config, portmap, report


