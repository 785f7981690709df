"""The router's search, compiled: A* over wires, or over ``(wire, depth)`` states to an exact
length (numba; :class:`.route.Router` is its only caller).

One call finds the cheapest path for one sink of one net (:meth:`.route.Router._search` says
what the search means: a sink is a cell or an output wire, a target depth makes it a search in
the time-expanded graph that pads with detours, ``free_only`` admits only unused wires).
Everything is flat arrays: the routing graph (``dest``, ``owner``, ``allowed``, ``xs``,
``ys``), the congestion (``occ``, ``hist``, ``cell_use``), the net's tree as ``tree_depth``
(depth of each wire in it, -1 elsewhere) and ``closed`` cells. States live in a pool, a
binary heap orders them by ``(f, tie, counter)`` and an open-addressing hash table maps a
state's key ``wire << 16 | depth`` to its best state; the table is reset in O(1) by a stamp.

Compiled with ``@njit(cache=True)``: the first call on a machine compiles for a few seconds
and writes numba's cache (``__pycache__`` beside this file or ``$NUMBA_CACHE_DIR``).
"""

import numpy as np
from numba import njit

__all__ = ["Workspace", "search"]

_HASH_BITS = 20
_INF = 1e30


class Workspace:
    """Buffers one router reuses for every search: the hash table (keys, state index and the
    stamp of the search that wrote each slot), a per-wire stamp of the wires seen, and the
    pool of states and heap entries (room for every wire as a start and 4 states per
    expansion: allocating them per search cost a third of the search's time)."""

    def __init__(self, wires, max_expansions):
        size = 1 << _HASH_BITS
        self.keys = np.zeros(size, np.int64)
        self.vals = np.zeros(size, np.int32)
        self.stamps = np.zeros(size, np.int32)
        # the same, indexed by wire, for the search without a target (a state per wire)
        self.wire_keys = np.zeros(wires, np.int64)
        self.wire_vals = np.zeros(wires, np.int32)
        self.wire_stamps = np.zeros(wires, np.int32)
        self.seen = np.zeros(wires, np.int32)
        self.stamp = 0
        cap = wires + 4 * max(wires, max_expansions) + 8
        self.ints = np.zeros((4, cap), np.int32)        # wire, depth, parent, heap
        self.floats = np.zeros((3, cap), np.float64)    # cost, f, tie
        self.order = np.zeros(cap, np.int64)            # the heap's counter
        self.intree = np.zeros(cap, np.bool_)

    def next_stamp(self):
        """A new stamp: every slot and wire of older searches reads as empty."""
        self.stamp += 1
        if self.stamp >= 2 ** 31 - 1:
            self.stamps[:] = 0
            self.wire_stamps[:] = 0
            self.seen[:] = 0
            self.stamp = 1
        return self.stamp


@njit(cache=True, inline="always")
def _less(f, t, n, i, j):
    if f[i] != f[j]:
        return f[i] < f[j]
    if t[i] != t[j]:
        return t[i] < t[j]
    return n[i] < n[j]


@njit(cache=True)
def _heap_push(heap, size, f, t, n, item):
    heap[size] = item
    k = size
    while k > 0:
        p = (k - 1) >> 1
        if _less(f, t, n, heap[k], heap[p]):
            heap[k], heap[p] = heap[p], heap[k]
            k = p
        else:
            break
    return size + 1


@njit(cache=True)
def _heap_pop(heap, size, f, t, n):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    k = 0
    while True:
        left = 2 * k + 1
        if left >= size:
            break
        right = left + 1
        m = left
        if right < size and _less(f, t, n, heap[right], heap[left]):
            m = right
        if _less(f, t, n, heap[m], heap[k]):
            heap[k], heap[m] = heap[m], heap[k]
            k = m
        else:
            break
    return top, size


@njit(cache=True)
def _lookup(keys, vals, stamps, stamp, key, mask, direct):
    """Slot of ``key`` (``vals`` holds its state) or of the empty slot where it goes (as
    ``-slot - 1``); ``direct``: the table is indexed by the key's wire (no collisions)."""
    if direct:
        s = key >> 16
        return s if stamps[s] == stamp else -s - 1
    s = ((key * 0x27D4EB2F165667C5) >> 32) & mask
    while True:
        if stamps[s] != stamp:
            return -s - 1
        if keys[s] == key:
            return s
        s = (s + 1) & mask


@njit(cache=True)
def _wire_cost(w, owner, hist, cell_use, occ, present, new_cell_cost):
    """What taking wire ``w`` costs (module docstring): its history, a new cell, its users."""
    base = 1.0 + hist[w]
    o = owner[w]
    if o >= 0 and cell_use[o] == 0:
        base += new_cell_cost
    return base * (1.0 + present * occ[w])


@njit(cache=True)
def _to_goal(w, c, goal_wire, goal_cell, gx, gy, extra, xs, ys):
    """The fewest wires from wire ``w`` (into cell ``c``, -1: a lane out) to the goal."""
    if w == goal_wire:
        return 0
    if c < 0:
        return 1 << 30
    if c == goal_cell and goal_wire < 0:
        return 0
    return abs(xs[c] - gx) + abs(ys[c] - gy) + extra


@njit(cache=True)
def search(dest, owner, allowed, xs, ys, occ, hist, cell_use, present, new_cell_cost, weight,
           tree_wires, tree_depth, closed, sources, goal_cell, goal_wire, target, free_only,
           max_expansions, keys, vals, stamps, wire_keys, wire_vals, wire_stamps, seen, stamp,
           ints, floats, order, intree):
    """The cheapest path to the goal (module docstring; ``target`` < 0: no target).

    Without a target the search is weighted A*: ``f = cost + weight * distance``; a weight
    of 1 gives the cheapest path, a weight ``w`` > 1 one that costs at most ``w`` times it,
    found with fewer expansions. With a target, ``f = cost + (target - depth)`` (every wire
    costs at least 1).

    :returns: ``(wires, depths)`` of the new wires in order from the tree (or a source) to the
        goal, and the wire they hang from (-1: a source); ``wires`` has length 0 and the wire
        is -2 when there is no path (or more than ``max_expansions`` states were expanded);
        when the goal is already a tree wire, that wire alone with its depth.
    """
    targeted = target >= 0
    if not targeted:                    # a state per wire: every wire may be expanded
        keys, vals, stamps = wire_keys, wire_vals, wire_stamps
        max_expansions = max(max_expansions, dest.shape[0])
    mask = keys.shape[0] - 1
    direct = not targeted
    if goal_wire >= 0:
        goal_cell_ = owner[goal_wire]
        extra = 1
    else:
        goal_cell_ = goal_cell
        extra = 0
    gx, gy = xs[goal_cell_], ys[goal_cell_]
    cap = min(ints.shape[1], tree_wires.shape[0] + sources.shape[0] + 4 * max_expansions + 8)
    s_wire, s_depth, s_parent, heap = ints[0], ints[1], ints[2], ints[3]
    s_cost, h_f, h_t = floats[0], floats[1], floats[2]
    h_n = order
    s_intree = intree
    nstates = 0
    hsize = 0
    counter = 0
    # Start states: the tree's wires (cost 0), then the sources not in the tree.
    nstart = tree_wires.shape[0] + sources.shape[0]
    for j in range(nstart):
        if j < tree_wires.shape[0]:
            w = tree_wires[j]
            depth = tree_depth[w]
            cost = 0.0
            intree = True
        else:
            w = sources[j - tree_wires.shape[0]]
            if tree_depth[w] >= 0:
                continue
            c = dest[w]
            if free_only and occ[w] > 0:
                continue
            if c < 0 and w != goal_wire:
                continue
            is_goal = (w == goal_wire) if goal_wire >= 0 else (c == goal_cell_)
            if c >= 0 and not allowed[c] and not is_goal:
                continue
            depth = 1
            cost = _wire_cost(w, owner, hist, cell_use, occ, present, new_cell_cost)
            intree = False
        hw = _to_goal(w, dest[w], goal_wire, goal_cell_, gx, gy, extra, xs, ys)
        if targeted:
            if depth + hw > target:
                continue
            f = cost + (target - depth)
            tie = float(target - depth - hw)
            key = (np.int64(w) << 16) | depth
        else:
            f = cost + weight * hw
            tie = float(-depth)
            key = np.int64(w) << 16
        slot = _lookup(keys, vals, stamps, stamp, key, mask, direct)
        if slot >= 0:
            if s_cost[vals[slot]] <= cost:
                continue
        else:
            slot = -slot - 1
            stamps[slot] = stamp
            keys[slot] = key
        st = nstates
        nstates += 1
        vals[slot] = st
        s_wire[st] = w
        s_depth[st] = depth
        s_parent[st] = -1
        s_cost[st] = cost
        s_intree[st] = intree
        seen[w] = stamp
        h_f[st] = f
        h_t[st] = tie
        h_n[st] = counter
        counter += 1
        hsize = _heap_push(heap, hsize, h_f, h_t, h_n, st)
    expansions = 0
    while hsize > 0:
        st, hsize = _heap_pop(heap, hsize, h_f, h_t, h_n)
        w = s_wire[st]
        depth = s_depth[st]
        cost = s_cost[st]
        if targeted:
            key = (np.int64(w) << 16) | depth
        else:
            key = np.int64(w) << 16
        slot = _lookup(keys, vals, stamps, stamp, key, mask, direct)
        if s_cost[vals[slot]] < cost:
            continue
        c = dest[w]
        is_goal = (w == goal_wire) if goal_wire >= 0 else (c == goal_cell_)
        if is_goal and (not targeted or depth == target):
            # Reconstruct: the states from the goal back to a tree wire or a start.
            n = 0
            k = st
            while k >= 0 and not s_intree[k]:
                n += 1
                k = s_parent[k]
            if n == 0:                       # the goal is already in the tree
                out_w = np.empty(1, np.int32)
                out_d = np.empty(1, np.int32)
                out_w[0] = w
                out_d[0] = depth
                return out_w, out_d, -3
            out_w = np.empty(n, np.int32)
            out_d = np.empty(n, np.int32)
            if k < 0:
                parent = -1
                d0 = 0
            else:
                parent = s_wire[k]
                d0 = s_depth[k]
            k = st
            for j in range(n - 1, -1, -1):
                out_w[j] = s_wire[k]
                k = s_parent[k]
            for j in range(n):
                out_d[j] = d0 + j + 1
            return out_w, out_d, parent
        expansions += 1
        if expansions > max_expansions:
            break
        if c < 0 or not allowed[c]:
            continue
        nd = depth + 1
        for d in range(4):
            w2 = 4 * c + d
            c2 = dest[w2]
            if w2 != goal_wire:
                if c2 < 0 or not allowed[c2] or closed[c2]:
                    continue
            if tree_depth[w2] >= 0:
                continue
            if free_only and occ[w2] > 0:
                continue
            hw = _to_goal(w2, c2, goal_wire, goal_cell_, gx, gy, extra, xs, ys)
            if targeted:
                if nd + hw > target:
                    continue
                if seen[w2] == stamp:
                    k = st
                    on = False
                    while k >= 0:
                        if s_wire[k] == w2:
                            on = True
                            break
                        k = s_parent[k]
                    if on:
                        continue
            ncost = cost + _wire_cost(w2, owner, hist, cell_use, occ, present, new_cell_cost)
            if targeted:
                key2 = (np.int64(w2) << 16) | nd
            else:
                key2 = np.int64(w2) << 16
            slot = _lookup(keys, vals, stamps, stamp, key2, mask, direct)
            if slot >= 0:
                if s_cost[vals[slot]] <= ncost:
                    continue
            else:
                slot = -slot - 1
                stamps[slot] = stamp
                keys[slot] = key2
            if nstates >= cap:
                break
            st2 = nstates
            nstates += 1
            vals[slot] = st2
            s_wire[st2] = w2
            s_depth[st2] = nd
            s_parent[st2] = st
            s_cost[st2] = ncost
            s_intree[st2] = False
            seen[w2] = stamp
            if targeted:
                h_f[st2] = ncost + target - nd
                h_t[st2] = float(target - nd - hw)
            else:
                h_f[st2] = ncost + weight * hw
                h_t[st2] = float(-nd)
            h_n[st2] = counter
            counter += 1
            hsize = _heap_push(heap, hsize, h_f, h_t, h_n, st2)
    return np.empty(0, np.int32), np.empty(0, np.int32), -2


@njit(cache=True)
def stub(start, amount, dest, allowed, occ, cell_use, xs, ys, max_steps, taken):
    """The longest walk of at most ``amount`` (even) free, distinct wires out of cell
    ``start`` and back to it (:func:`.pad._stub`): for each length from ``amount`` down by 2,
    a depth-first search that tries wires into cells already in use first (then by side N,
    E, S, W) and gives up after ``max_steps`` visited states.

    :param taken: a boolean scratch array, one per wire, all False (left so).
    :returns: the walk's wires in order (length 0: none found).
    """
    sx, sy = xs[start], ys[start]
    path = np.empty(amount, np.int64)
    cells = np.empty(amount + 1, np.int64)
    options = np.empty((amount + 1, 4), np.int64)
    count = np.zeros(amount + 1, np.int64)
    pos = np.zeros(amount + 1, np.int64)
    for length in range(amount, 0, -2):
        steps = 0
        level = 0
        cells[0] = start
        entering = True
        found = False
        while level >= 0:
            if entering:
                entering = False
                cell = cells[level]
                remaining = length - level
                ok = True
                if remaining == 0:
                    if cell == start:
                        found = True
                        break
                    ok = False
                elif abs(xs[cell] - sx) + abs(ys[cell] - sy) > remaining:
                    ok = False
                else:
                    steps += 1
                    if steps > max_steps:
                        break
                if not ok:
                    level -= 1
                    if level >= 0:
                        taken[path[level]] = False
                    continue
                # Options: (new cell and not the start, side) ascending.
                n = 0
                for first in range(2):
                    for d in range(4):
                        w = 4 * cell + d
                        c = dest[w]
                        if c < 0 or not allowed[c] or occ[w] != 0 or taken[w]:
                            continue
                        fresh = 1 if (cell_use[c] == 0 and c != start) else 0
                        if fresh != first:
                            continue
                        if c == start and remaining != 1:
                            continue
                        options[level, n] = w
                        n += 1
                count[level] = n
                pos[level] = 0
            if pos[level] < count[level]:
                w = options[level, pos[level]]
                pos[level] += 1
                path[level] = w
                taken[w] = True
                level += 1
                cells[level] = dest[w]
                entering = True
            else:
                level -= 1
                if level >= 0:
                    taken[path[level]] = False
        for j in range(min(level, amount)):
            taken[path[j]] = False
        if found:
            return path[:length].copy()
    return np.empty(0, np.int64)
