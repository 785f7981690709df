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

Among the tags that satisfy the constraints, :func:`solve_tags` finds those that need the least
padding, exactly: the minimum-area retiming of Leiserson and Saxe with shared fan-out (as in
superconducting-logic path balancing), a small linear program solved by HiGHS
(``scipy.optimize.linprog``). With tags
``T = 2 k + parity`` (``k`` an integer), a connection ``e`` from ``u`` to ``v`` needs
``pad(e) = T(v) - T(u) + r P - l(e) >= 0`` wires of padding; a net's sinks share the padding
of its trunk, the smallest of theirs (the padding stage, :mod:`.pad`, puts it there), so a net
costs ``sum(pad(e)) - (sinks - 1) * min(pad(e))``. For each net of several sinks a variable
``M`` (the trunk's end, ``M <= k(v) - b(e)`` for each sink and ``M >= k(u)``) turns the
minimum into linear constraints; every constraint is a difference of two variables, so the
constraint matrix is totally unimodular and the simplex vertex HiGHS returns is integral (the
solution is checked, and the longest-path one kept if the check fails). A tiny weight on
every tag keeps the waves as early as the least padding allows (latency).
"""

import numpy as np

import typing

__all__ = ["TimingError", "Waves", "solve_tags", "solve_waves", "check_waves", "minimum_period",
           "free_period", "padding"]

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


def solve_tags(n, lower, edges, period, *, fixed=(), nets=None, exact=True):
    """Tags for ``n`` nodes that need the least padding (module docstring), or ``None`` if
    ``period`` is too short.

    :param lower: ``n`` lower bounds (each of its node's parity).
    :param edges: list of ``(u, v, lmin, registers)``: ``T(v) - T(u) >= lmin - registers *
        period``.
    :param fixed: nodes whose tag must stay at its lower bound (the start block).
    :param nets: per edge, the net it belongs to (edges of one net share their trunk's
        padding); ``None``: every edge its own net.
    :param exact: False: not the LP but a greedy descent from the longest-path tags (each
        node moved to the end of its feasible range that pads fewer nets), cheap enough for
        the placer to call at every temperature.
    :returns: an ``int64`` array of ``n`` tags.
    """
    lower = np.asarray(lower, dtype=np.int64)
    us, vs, ws = _arrays(edges, period)
    fixed = list(fixed)
    upper = (np.array(fixed, dtype=np.int64), lower[fixed]) if fixed else None
    tags = _longest(n, lower, us, vs, ws, upper)
    if tags is None or not len(edges):
        return tags
    groups = nets if nets is not None else range(len(edges))
    if not exact:
        return _descent(n, tags, us, vs, ws, fixed, groups)
    balanced = _least_padding(n, lower, us, vs, ws, fixed, groups)
    return tags if balanced is None else balanced


def padding(tags, edges, period, nets=None):
    """Wires of padding ``tags`` need: the sum over nets of their connections' padding, less
    what the sinks of a net share on its trunk (module docstring)."""
    us, vs, ws = _arrays(edges, period)
    pads = np.asarray(tags)[vs] - np.asarray(tags)[us] - ws
    groups = {}
    for e, net in enumerate(nets if nets is not None else range(len(edges))):
        groups.setdefault(net, []).append(int(pads[e]))
    return sum(sum(p) - (len(p) - 1) * min(p) for p in groups.values())


def _descent(n, tags, us, vs, ws, fixed, nets, sweeps=4):
    """From the longest-path ``tags``, move each node with more nets out than connections in
    as late as its readers allow (a greedy version of minimum-area retiming)."""
    fixed = set(fixed)
    ins = [0] * n
    outs = [[] for _ in range(n)]
    out_nets = [set() for _ in range(n)]
    for e, (u, v, net) in enumerate(zip(us.tolist(), vs.tolist(), nets)):
        ins[v] += 1
        outs[u].append(e)
        out_nets[u].add(net)
    wl, vl = ws.tolist(), vs.tolist()
    t = tags.tolist()
    for _ in range(sweeps):
        moved = False
        for x in range(n - 1, -1, -1):
            if x in fixed or not outs[x] or len(out_nets[x]) <= ins[x]:
                continue
            latest = min(t[vl[e]] - wl[e] for e in outs[x])
            if latest > t[x]:
                t[x] = latest
                moved = True
        if not moved:
            break
    return np.array(t, dtype=np.int64)


def _trunks(nets):
    """The edges of each net of several sinks (``nets``: the net of each edge): the groups
    that share a trunk's padding."""
    groups = {}
    for e, net in enumerate(nets):
        groups.setdefault(net, []).append(e)
    return [g for g in groups.values() if len(g) > 1]


def _least_padding(n, lower, us, vs, ws, fixed, nets):
    """The LP of the module docstring (``scipy.optimize.linprog``, HiGHS' dual simplex);
    ``None`` if it fails or returns a solution that does not check."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix
    parity = lower % 2
    k_low = (lower - parity) // 2
    # k(v) - k(u) >= b(e): 2 (k(v) - k(u)) + parity(v) - parity(u) >= w(e)
    bound = -((parity[vs] - parity[us] - ws) // 2)
    shared = _trunks(nets)
    ncols = n + len(shared)
    cost = np.full(ncols, 1e-4)
    np.add.at(cost, vs, 1.0)
    np.add.at(cost, us, -1.0)
    # rows "a - b >= c", written for linprog as "b - a <= -c"
    big, small, rhs = list(vs), list(us), list(bound)
    for j, group in enumerate(shared):
        m, u = n + j, int(us[group[0]])
        cost[m] -= len(group) - 1
        cost[u] += len(group) - 1
        big.append(m), small.append(u), rhs.append(0)              # M >= k(u)
        for e in group:                                              # M <= k(v) - b(e)
            big.append(int(vs[e])), small.append(m), rhs.append(int(bound[e]))
    rows = len(rhs)
    matrix = coo_matrix((np.concatenate([np.ones(rows), -np.ones(rows)]),
                         (np.concatenate([np.arange(rows)] * 2),
                          np.concatenate([small, big]))), shape=(rows, ncols))
    bounds = [(float(k_low[i]), None) for i in range(n)] + [(None, None)] * len(shared)
    for i in fixed:
        bounds[i] = (float(k_low[i]), float(k_low[i]))
    result = linprog(cost, A_ub=matrix.tocsr(), b_ub=-np.asarray(rhs, dtype=float),
                     bounds=bounds, method="highs-ds")
    if result.status != 0:
        return None
    tags = 2 * np.rint(result.x[:n]).astype(np.int64) + parity
    if (tags < lower).any() or (tags[vs] - tags[us] < ws).any() \
            or (fixed and (tags[fixed] != lower[fixed]).any()):
        return None
    return tags


class Waves(typing.NamedTuple):
    """Wave windows (:func:`solve_waves`): per node its ``late`` tag (the first update that
    computes a row, from which it is read) and its ``early`` one (the row's window ends at
    ``early + P - 2``), ``int64`` arrays of ``n``; per edge its ``delay`` in subcycles (the
    route's length with padding, at least ``lmin``)."""
    late: np.ndarray
    early: np.ndarray
    delays: np.ndarray


def solve_waves(n, lower, edges, period, *, fixed=(), equal=(), nets=None, ties=()):
    """Windows and delays that need the least padding when every row of a design's inputs is
    held for the whole ``period`` (SPEC section 4), or ``None`` if there are none.

    A row held ``P`` subcycles reaches each cell as a *window* of updates, not one: a cell
    whose operands carry row ``k`` over updates ``[late(u) + a, early(u) + a + P - 2]`` (``a``
    the connection's delay) computes it over the intersection, so ``late(v)`` is the latest of
    its operands' ``late + a - r P`` and ``early(v)`` the earliest of their ``early + a -
    r P``, and the design is right while every window holds an update: ``late(v) - early(v) <=
    P - 2``. Operands need not arrive together, only within ``P - 2`` subcycles of each
    other; with ``P = 2`` this is :func:`solve_tags`' exact balance. Around a loop both sums
    are ``r P`` (a loop is exact), and a flip-flop gate's window is one row's, so register
    gating (:mod:`.pack`) holds as with exact tags.

    A mixed-integer program (HiGHS through ``scipy.optimize.milp``), in half-subcycles (every
    tag ``2 k + parity``, every padding ``2 p``): minimise the padding, shared on a net's trunk
    as in :func:`solve_tags`, subject to ``late(v) - late(u) - 2 p(e) >= w(e)``, ``early(v) -
    early(u) - 2 p(e) <= w(e)`` (``w = lmin - r P``), ``0 <= late(v) - early(v) <= P - 2``,
    the lower bounds on ``late``, ``early = late`` on the ``equal`` nodes (an input bit's
    window is the whole period) and both at the lower bound on the ``fixed`` ones.

    :param lower, edges, fixed, nets: as for :func:`solve_tags` (``edges``: ``(u, v, lmin,
        registers)``, whose ``lmin - registers * period`` has the parity of ``lower[v] -
        lower[u]``).
    :param equal: nodes whose window is the whole period (input pins).
    :param ties: ``(u, v, d)``: ``v``'s window exactly ``d`` subcycles after ``u``'s (the
        input bits of a block placed as a macro, whose skews are fixed relative to each
        other: :mod:`.compose`).
    :returns: :class:`Waves`, checked by :func:`check_waves`.
    :raises ValueError: for an edge or a tie of the wrong parity.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix
    lower = np.asarray(lower, dtype=np.int64)
    us, vs, ws = _arrays(edges, period)
    m = len(edges)
    parity = lower % 2
    odd = (ws + parity[us] - parity[vs]) % 2
    if odd.any():
        raise ValueError(f"edge {int(np.flatnonzero(odd)[0])} has the wrong parity")
    bound = (ws + parity[us] - parity[vs]) // 2
    k_low = (lower - parity) // 2
    half = (period - 2) // 2
    shared = _trunks(nets if nets is not None else range(m))
    L, E, Pd, Mt = 0, n, 2 * n, 2 * n + m          # column offsets
    ncols = Mt + len(shared)
    cost = np.zeros(ncols)
    cost[Pd:Mt] = 1.0
    cost[L:E] = 1e-4                               # as early as the least padding allows
    rows, cols, vals, lo, hi = [], [], [], [], []

    def row(entries, low, high):
        r = len(lo)
        for c, v in entries:
            rows.append(r), cols.append(c), vals.append(v)
        lo.append(low), hi.append(high)

    for e in range(m):
        u, v, b = int(us[e]), int(vs[e]), float(bound[e])
        row([(L + v, 1), (L + u, -1), (Pd + e, -1)], b, np.inf)
        row([(E + v, 1), (E + u, -1), (Pd + e, -1)], -np.inf, b)
    equal = set(equal) | set(fixed)
    for v in range(n):
        row([(L + v, 1), (E + v, -1)], 0, 0 if v in equal else half)
    for u, v, d in ties:
        if (d + parity[u] - parity[v]) % 2:
            raise ValueError(f"nodes {u} and {v} cannot be {d} subcycles apart (parity)")
        k = (d + int(parity[u]) - int(parity[v])) // 2
        for column in (L, E):
            row([(column + v, 1), (column + u, -1)], k, k)
    for j, group in enumerate(shared):
        cost[Mt + j] = -(len(group) - 1)
        for e in group:
            row([(Mt + j, 1), (Pd + e, -1)], -np.inf, 0)
    lb = np.full(ncols, -np.inf)
    ub = np.full(ncols, np.inf)
    lb[L:E] = k_low
    lb[Pd:] = 0
    for v in fixed:
        ub[L + v] = k_low[v]
    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), ncols)).tocsr()
    result = milp(cost, constraints=LinearConstraint(matrix, lo, hi),
                  integrality=np.ones(ncols), bounds=Bounds(lb, ub))
    if result.status != 0 or result.x is None:
        return None
    x = np.rint(result.x).astype(np.int64)
    late = 2 * x[L:E] + parity
    early = 2 * x[E:Pd] + parity
    delays = np.array([e[2] for e in edges], dtype=np.int64) + 2 * x[Pd:Mt]
    waves = Waves(late, early, delays)
    problem = check_waves(waves, lower, edges, period, fixed=fixed, equal=equal, ties=ties)
    if problem:
        raise AssertionError(f"wave windows do not check: {problem}")
    return waves


def check_waves(waves, lower, edges, period, *, fixed=(), equal=(), ties=()):
    """What is wrong with ``waves`` (:func:`solve_waves`' conditions, module docstring), or
    ``""``: every delay at least its ``lmin`` and of its parity, every window inside its
    operands' and holding an update, the bounds, the ties."""
    late, early, delays = (np.asarray(a, dtype=np.int64) for a in waves)
    lower = np.asarray(lower, dtype=np.int64)
    for e, (u, v, lmin, registers) in enumerate(edges):
        arrive = delays[e] - registers * period
        if delays[e] < lmin or (delays[e] - lmin) % 2:
            return f"edge {e}: delay {delays[e]} for a route of {lmin}"
        if late[v] < late[u] + arrive or early[v] > early[u] + arrive:
            return f"edge {e}: window [{late[v]}, {early[v]}] not inside its operand's"
    for v in range(len(late)):
        if (late[v] - lower[v]) % 2 or (early[v] - lower[v]) % 2 or late[v] < lower[v]:
            return f"node {v}: tags {late[v]}, {early[v]} against lower bound {lower[v]}"
        if not 0 <= late[v] - early[v] <= period - 2:
            return f"node {v}: window {late[v] - early[v]} for period {period}"
        if v in equal and late[v] != early[v]:
            return f"node {v}: a held input's window is the whole period"
    for v in fixed:
        if late[v] != lower[v]:
            return f"node {v} moved from {lower[v]}"
    for u, v, d in ties:
        if late[v] - late[u] != d or early[v] - early[u] != d:
            return f"nodes {u} and {v}: {late[v] - late[u]} subcycles apart, not {d}"
    return ""


def minimum_period(n, lower_of, edges, *, fixed=()):
    """The smallest even period with a solution.

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
    return _smallest_even(ok, f"a feedback loop needs more than {MAX_PERIOD} subcycles")


def _smallest_even(ok, message):
    """The smallest even period from 2 for which ``ok(period)`` holds, given that it holds for
    every longer one: doublings, then a bisection.

    :raises TimingError: ``message``, past :data:`MAX_PERIOD`."""
    period = 2
    while not ok(period):
        period *= 2
        if period > MAX_PERIOD:
            raise TimingError(message)
    lo = period // 2                # fails (or is 1)
    while period - lo > 2:
        mid = (period + lo) // 2
        mid += mid % 2
        if ok(mid):
            period = mid
        else:
            lo = mid
    return period


def free_period(n, lower, edges, *, fixed=(), equal=()):
    """The smallest even period at which no connection needs padding (:func:`solve_waves`
    with every delay its ``lmin``), for a design without flip-flops; ``None`` when an edge
    goes through a flip-flop (its loops must be exact whatever the period).

    With the delays fixed, the windows are difference constraints (``late(v) >= late(u) + l``,
    ``early(u) >= early(v) - l``, ``early(v) >= late(v) - (P - 2)``, ``late(v) >= early(v)``),
    feasible when their graph has no positive cycle (Bellman-Ford, as :func:`minimum_period`),
    and more so the longer the period: a doubling, then a bisection.

    :raises TimingError: if no period up to :data:`MAX_PERIOD` works.
    """
    if any(e[3] for e in edges):
        return None
    lower = np.asarray(lower, dtype=np.int64)
    us, vs, ws = _arrays(edges, 2)
    nodes = np.arange(n, dtype=np.int64)
    tied = np.array(sorted(set(equal) | set(fixed)), dtype=np.int64)
    far = 2 * (int(np.abs(ws).sum()) + int(np.abs(lower).sum()) + 2)
    start = np.concatenate([lower, lower - far])          # late, then early (same parity)
    fixed = np.array(sorted(fixed), dtype=np.int64)
    upper = (fixed, lower[fixed]) if len(fixed) else None

    # edges a -> b of weight w: x(b) >= x(a) + w (late nodes 0..n-1, early ones n..2n-1)
    a = np.concatenate([us, n + vs, nodes, n + nodes, n + tied])
    b = np.concatenate([vs, n + us, n + nodes, nodes, tied])
    window = np.concatenate([np.zeros(2 * len(us), np.int64), np.ones(n, np.int64),
                             np.zeros(n + len(tied), np.int64)])
    base = np.concatenate([ws, -ws, np.full(n, 2), np.zeros(n + len(tied), np.int64)])

    def ok(period):             # early(v) >= late(v) - (P - 2): the window rows' weights
        return _longest(2 * n, start, a, b, base - window * period, upper) is not None

    return _smallest_even(ok, f"rows need a period of more than {MAX_PERIOD} subcycles")


def _arrays(edges, period):
    us = np.array([e[0] for e in edges], dtype=np.int64)
    vs = np.array([e[1] for e in edges], dtype=np.int64)
    ws = np.array([e[2] - e[3] * period for e in edges], dtype=np.int64)
    return us, vs, ws
