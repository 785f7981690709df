"""Back end, step 4 and 5: wave timing and the design-clock period (issue 12; SPEC section 4).

Every cell output carries, for row ``k`` of the inputs, its value at subcycle ``tag + k * P``
(``P`` the period, even). A cell ``(x, y)`` updates on the subcycles of its parity, so its tag
has the parity of ``x + y``; it reads its inputs one subcycle earlier, so every input signal
of a LUT must arrive with tag ``tag - 1`` exactly (the operands of a LUT in the same wave).

A connection from driver ``u`` to sink ``v`` through ``r`` flip-flops, routed over ``l`` wires
(the driver's output wire to the wire entering ``v``, both counted), gives::

    tag(v) = tag(u) + l - r * P

so a flip-flop is a wire ``P`` subcycles shorter than it is (a register moves its value one
design cycle, that is ``P`` subcycles, later: retiming in the sense of Leiserson and Saxe,
with route lengths as the delays). Around any loop the lengths sum to ``P`` times its
registers, and ``P`` is the smallest even value for which the difference constraints
``tag(v) - tag(u) >= lmin(u, v) - r * P`` have a solution (no positive cycle: the maximum
cycle ratio, found by Bellman-Ford longest paths and a search over even ``P``). Routes are then
padded to the exact length ``tag(v) - tag(u) + r * P`` (the router's targets); padding is
even because every route between two cells has the parity of their distance.

Bounds: an input pin's tag (of its lane, one less than its boundary cell's) is at least its
boundary cell's parity minus 1 (the skew, ``tag + 1 - parity``, is then >= 0); a cell's tag
is at least its parity; a cell with a flip-flop gate at least ``P`` plus its parity (its row
-1 is computed after reset, :mod:`.pack`); the start block's tag is its parity exactly (it
first outputs 1 on its first update). Output pins take whatever tag their route gives (their
skew in the port map).

After the longest-path (as soon as possible) solution, a few sweeps move every free node to
the end of its feasible range that needs less padding (inputs as late as their readers allow):
the coordinate descent of min-area retiming, approximated.
"""

import numpy as np

__all__ = ["TimingError", "solve_tags", "minimum_period"]

#: Largest period tried (subcycles).
MAX_PERIOD = 4096


class TimingError(ValueError):
    """No solution (a loop longer than :data:`MAX_PERIOD` subcycles per register)."""


def _longest(n, lower, us, vs, ws, fixed_upper=None):
    """Longest-path tags from ``lower`` over edges ``u -> v`` of weight ``w``; ``None`` if a
    positive cycle exists."""
    tags = lower.astype(np.int64).copy()
    if not len(us):
        return tags
    for _ in range(n + 2):
        cand = tags[us] + ws
        new = tags.copy()
        np.maximum.at(new, vs, cand)
        if fixed_upper is not None and (new[fixed_upper[0]] > fixed_upper[1]).any():
            return None
        if (new == tags).all():
            return tags
        tags = new
    return None


def solve_tags(n, lower, edges, period, *, fixed=(), weights_out=None, sweeps=4):
    """Tags for ``n`` nodes, or ``None`` if ``period`` is too short.

    :param lower: array of lower bounds (right parity).
    :param edges: list of ``(u, v, lmin, registers)``.
    :param fixed: nodes whose tag must stay at its lower bound (the start block).
    :param weights_out: per node, the padding saved per step later (its distinct out nets).
    """
    lower = np.asarray(lower, dtype=np.int64)
    if edges:
        us = np.array([e[0] for e in edges], dtype=np.int64)
        vs = np.array([e[1] for e in edges], dtype=np.int64)
        ws = np.array([e[2] - e[3] * period for e in edges], dtype=np.int64)
    else:
        us = vs = ws = np.zeros(0, dtype=np.int64)
    fixed = list(fixed)
    upper = (np.array(fixed, dtype=np.int64), lower[fixed]) if fixed else None
    tags = _longest(n, lower, us, vs, ws, upper)
    if tags is None:
        return None
    # Coordinate descent: move nodes to the cheaper end of their feasible range.
    fixed_set = set(fixed)
    ins = [[] for _ in range(n)]
    outs = [[] for _ in range(n)]
    for i, (u, v, _, _) in enumerate(edges):
        ins[v].append(i)
        outs[u].append(i)
    wl = ws.tolist()
    ul, vl = us.tolist(), vs.tolist()
    t = tags.tolist()
    for _ in range(sweeps):
        moved = False
        for x in range(n - 1, -1, -1):
            if x in fixed_set or not outs[x]:
                continue
            w_out = len(outs[x]) if weights_out is None else weights_out[x]
            w_in = len(ins[x])
            if w_out <= w_in:
                continue
            hi = min(t[vl[i]] - wl[i] for i in outs[x])
            if hi > t[x]:
                t[x] = hi
                moved = True
        if not moved:
            break
    return np.array(t, dtype=np.int64)


def minimum_period(n, lower_of, edges, *, fixed=()):
    """The smallest even period with a solution and its tags: ``(period, tags)``.

    :param lower_of: callable ``period -> lower bounds`` (gate cells depend on the period).
    :raises TimingError: if no period up to :data:`MAX_PERIOD` works.
    """
    def ok(p):
        return _longest(n, np.asarray(lower_of(p), dtype=np.int64),
                        *_arrays(edges, p),
                        (np.array(list(fixed), dtype=np.int64),
                         np.asarray(lower_of(p), dtype=np.int64)[list(fixed)])
                        if fixed else None) is not None

    if not any(e[3] for e in edges):
        return 2
    p = 2
    while not ok(p):
        p *= 2
        if p > MAX_PERIOD:
            raise TimingError(f"a feedback loop needs more than {MAX_PERIOD} subcycles")
    lo, hi = p // 2, p           # lo fails (or is 1), hi works
    while hi - lo > 2:
        mid = (lo + hi) // 2
        mid += mid % 2
        if mid >= hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    if lo >= 2 and lo % 2 == 0 and ok(lo):
        hi = lo
    return hi


def _arrays(edges, period):
    us = np.array([e[0] for e in edges], dtype=np.int64)
    vs = np.array([e[1] for e in edges], dtype=np.int64)
    ws = np.array([e[2] - e[3] * period for e in edges], dtype=np.int64)
    return us, vs, ws
