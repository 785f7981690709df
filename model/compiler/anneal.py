"""The placer's moves, compiled (numba; :func:`.place.place` drives the schedule).

:func:`.place.place` says what a placement costs and how the annealing schedule runs; this
module holds the state as flat arrays (:class:`State`) and runs a batch of moves at one
temperature without Python per move (:func:`moves`), and the full cost (:func:`total`).

Objects: blocks ``0 .. nb - 1`` and port bits ``nb + i``. A connection's ends are objects
(``drv``, ``snk``); an end's cell is its block's cell or its pin's boundary cell
(``pin_cell``). Sets of the pure-Python placer are CSR arrays (``*_start``, ``*_items``):
the connections touching each object, the pins a block serves directly, the blocks linked to
each block (either way) and the blocks each block reads. Random numbers come from numba's
generator, seeded once per placement (the same seed, the same placement).

Compiled with ``@njit(cache=True)`` (numba's cache beside this file or ``$NUMBA_CACHE_DIR``).
"""

import math

import numpy as np
from numba import njit

__all__ = ["seed", "moves", "total", "lengths"]

_DX = np.array([0, 1, 0, -1], np.int64)
_DY = np.array([-1, 0, 1, 0], np.int64)


@njit(cache=True)
def seed(value):
    """Seed numba's generator (used by :func:`moves`)."""
    np.random.seed(value)


@njit(cache=True, inline="always")
def _member(start, items, owner, value):
    for j in range(start[owner], start[owner + 1]):
        if items[j] == value:
            return True
    return False


@njit(cache=True)
def _end_cell(obj, nb, block_cell, pin_cell):
    return block_cell[obj] if obj < nb else pin_cell[obj - nb]


@njit(cache=True)
def _length(k, nb, drv, snk, block_cell, pin_cell, xs, ys):
    a = _end_cell(drv[k], nb, block_cell, pin_cell)
    b = _end_cell(snk[k], nb, block_cell, pin_cell)
    extra = (drv[k] >= nb) + (snk[k] >= nb)
    if a == b and extra == 0:
        return 2
    return abs(xs[a] - xs[b]) + abs(ys[a] - ys[b]) + extra


@njit(cache=True)
def _ccost(k, nb, drv, snk, block_cell, pin_cell, xs, ys, weight, target, timing_weight):
    length = _length(k, nb, drv, snk, block_cell, pin_cell, xs, ys)
    c = length * weight[k]
    t = target[k]
    if t >= 0 and length > t:
        c += timing_weight * (length - t)
    return c


@njit(cache=True)
def lengths(nb, drv, snk, block_cell, pin_cell, xs, ys):
    """Estimated length of every connection (wires; :func:`.place.connection_length`)."""
    out = np.empty(drv.shape[0], np.int64)
    for k in range(drv.shape[0]):
        out[k] = _length(k, nb, drv, snk, block_cell, pin_cell, xs, ys)
    return out


@njit(cache=True)
def _unlinked_near(b, c, skip, occupied, width, height, xs, ys, link_start, link_items):
    """Blocks next to block ``b`` at cell ``c`` that do not exchange a signal with it (not
    counting ``skip``)."""
    n = 0
    x, y = xs[c], ys[c]
    for d in range(4):
        nx, ny = x + _DX[d], y + _DY[d]
        if 0 <= nx < width and 0 <= ny < height:
            other = occupied[ny * width + nx]
            if other >= 0 and other != b and other != skip and \
                    not _member(link_start, link_items, b, other):
                n += 1
    return n


@njit(cache=True)
def _put(i, ci, other, co, block_cell, occupied):
    """Block ``i`` to cell ``ci``, and ``other`` (-1: none, ``co`` left free) to ``co``."""
    block_cell[i] = ci
    occupied[ci] = i
    if other >= 0:
        block_cell[other] = co
        occupied[co] = other
    else:
        occupied[co] = -1


@njit(cache=True)
def _touched(a, b, lowest, touch_start, touch_items, mark, stamp, nb, drv, snk, block_cell,
             pin_cell, xs, ys, weight, target, timing_weight):
    """The cost, recomputed, of the connections of objects ``a`` and ``b`` (those from
    ``lowest`` up), each once (``mark`` set to ``stamp``)."""
    s = 0.0
    for o in (a, b):
        if o < lowest:
            continue
        for j in range(touch_start[o], touch_start[o + 1]):
            k = touch_items[j]
            if mark[k + 1] != stamp:
                mark[k + 1] = stamp
                s += _ccost(k, nb, drv, snk, block_cell, pin_cell, xs, ys, weight, target,
                            timing_weight)
    return s


@njit(cache=True)
def _local(i, ci, other, co, near, nn, block_cell, occupied, allowed, width, height, xs, ys,
           ninputs, usable, link_start, link_items, feed_start, feed_items, edge_penalty,
           adjacent_penalty, deficit_penalty):
    """The terms of a block move that are not per connection, at the present occupancy:
    block ``i`` at ``ci`` and ``other`` (-1: none) at ``co`` (edge penalties, unlinked
    neighbours), and the deficits of the ``nn`` blocks in ``near``."""
    s = _edge(i, ci, ninputs, usable, edge_penalty)
    pairs = _unlinked_near(i, ci, -1, occupied, width, height, xs, ys, link_start, link_items)
    if other >= 0:
        s += _edge(other, co, ninputs, usable, edge_penalty)
        pairs += _unlinked_near(other, co, i, occupied, width, height, xs, ys, link_start,
                                link_items)
    s += adjacent_penalty * pairs
    for j in range(nn):
        b = near[j]
        s += _deficit(b, block_cell[b], occupied, allowed, width, height, xs, ys, ninputs,
                      feed_start, feed_items, deficit_penalty)
    return s


@njit(cache=True)
def _deficit(b, c, occupied, allowed, width, height, xs, ys, ninputs, feed_start, feed_items,
             deficit_penalty):
    supply = 0
    x, y = xs[c], ys[c]
    for d in range(4):
        nx, ny = x + _DX[d], y + _DY[d]
        if 0 <= nx < width and 0 <= ny < height:
            n = ny * width + nx
            if not allowed[n]:
                continue
            other = occupied[n]
            if other < 0 or _member(feed_start, feed_items, b, other):
                supply += 1
    missing = ninputs[b] - supply
    return deficit_penalty * missing if missing > 0 else 0.0


@njit(cache=True)
def _edge(b, c, ninputs, usable, edge_penalty):
    missing = ninputs[b] - usable[c]
    return edge_penalty * missing if missing > 0 else 0.0


@njit(cache=True)
def total(nb, drv, snk, block_cell, pin_cell, occupied, allowed, width, height, xs, ys,
          weight, target, cost, ninputs, usable, link_start, link_items, feed_start,
          feed_items, timing_weight, edge_penalty, adjacent_penalty, deficit_penalty):
    """Recompute every connection's cost into ``cost`` and return the placement's total:
    connections, edge penalties, unlinked neighbour pairs (each pair once), deficits."""
    s = 0.0
    for k in range(drv.shape[0]):
        cost[k] = _ccost(k, nb, drv, snk, block_cell, pin_cell, xs, ys, weight, target,
                         timing_weight)
        s += cost[k]
    pairs = 0
    for b in range(nb):
        c = block_cell[b]
        s += _edge(b, c, ninputs, usable, edge_penalty)
        s += _deficit(b, c, occupied, allowed, width, height, xs, ys, ninputs, feed_start,
                      feed_items, deficit_penalty)
        pairs += _unlinked_near(b, c, -1, occupied, width, height, xs, ys, link_start,
                                link_items)
    return s + adjacent_penalty * (pairs // 2)


@njit(cache=True)
def _clash(c, b, boundary, pin_cell, direct_start, direct_items):
    """Would block ``b`` at cell ``c`` take a side a pin's lane there needs?"""
    if not boundary[c]:
        return False
    for i in range(pin_cell.shape[0]):
        if pin_cell[i] == c and not _member(direct_start, direct_items, b, i):
            return True
    return False


@njit(cache=True)
def moves(count, temperature, rlim, unit, record, nb, movables, drv, snk, block_cell,
          pin_cell, pin_side, pin_lane, pin_dir, movable_pin, pin_at, lane_base, side_lanes_start,
          side_lanes, boundary_cells, occupied, is_slot, allowed, boundary, width, height, xs, ys,
          weight, target, cost, ninputs, usable, touch_start, touch_items, direct_start,
          direct_items, link_start, link_items, feed_start, feed_items, mark, total_cost,
          timing_weight, edge_penalty, adjacent_penalty, deficit_penalty):
    """``count`` random moves of random ``movables`` at ``temperature`` (Metropolis).

    A block moves by up to ``rlim`` cells (in steps of ``unit``) to a logic slot, swapping
    with a block there; a pin moves to another lane (another side three times in ten),
    swapping with a movable pin of its direction there. ``pin_at[dir, lane_base[side] +
    lane]`` is the pin on a lane (-1 none; ``dir`` is 0 for every pin when pins are spread).
    ``cost`` (per connection) and the arrays are updated in place.

    :param record: an array to store the delta of each accepted move in (its length at
        least ``count``), or an empty one.
    :returns: ``(accepted moves, new total cost)``.
    """
    accepted = 0
    stamp = mark[0]
    n = movables.shape[0]
    for _ in range(count):
        obj = movables[np.random.randint(0, n)]
        stamp += 1
        if obj < nb:
            i = obj
            c0 = block_cell[i]
            r = max(1, int(rlim / unit))
            x = xs[c0] + unit * np.random.randint(-r, r + 1)
            y = ys[c0] + unit * np.random.randint(-r, r + 1)
            if not (0 <= x < width and 0 <= y < height):
                continue
            c1 = y * width + x
            if c1 == c0 or not is_slot[c1]:
                continue
            other = occupied[c1]
            if ninputs[i] > usable[c1] or (other >= 0 and ninputs[other] > usable[c0]):
                continue
            if _clash(c1, i, boundary, pin_cell, direct_start, direct_items) or (
                    other >= 0 and _clash(c0, other, boundary, pin_cell, direct_start,
                                          direct_items)):
                continue
            # The blocks whose deficit may change: the two and their neighbours.
            near = np.empty(10, np.int64)
            nn = 0
            near[nn] = i
            nn += 1
            if other >= 0:
                near[nn] = other
                nn += 1
            for cc in (c0, c1):
                cx, cy = xs[cc], ys[cc]
                for d in range(4):
                    nx, ny = cx + _DX[d], cy + _DY[d]
                    if 0 <= nx < width and 0 <= ny < height:
                        b = occupied[ny * width + nx]
                        if b >= 0:
                            dup = False
                            for j in range(nn):
                                if near[j] == b:
                                    dup = True
                            if not dup:
                                near[nn] = b
                                nn += 1
            old = _local(i, c0, other, c1, near, nn, block_cell, occupied, allowed, width,
                         height, xs, ys, ninputs, usable, link_start, link_items, feed_start,
                         feed_items, edge_penalty, adjacent_penalty, deficit_penalty)
            for o in (i, other):
                if o < 0:
                    continue
                for j in range(touch_start[o], touch_start[o + 1]):
                    k = touch_items[j]
                    if mark[k + 1] != stamp:
                        mark[k + 1] = stamp
                        old += cost[k]
            _put(i, c1, other, c0, block_cell, occupied)           # apply the move
            new = _local(i, c1, other, c0, near, nn, block_cell, occupied, allowed, width,
                         height, xs, ys, ninputs, usable, link_start, link_items, feed_start,
                         feed_items, edge_penalty, adjacent_penalty, deficit_penalty)
            stamp += 1
            new += _touched(i, other, 0, touch_start, touch_items, mark, stamp, nb, drv, snk,
                            block_cell, pin_cell, xs, ys, weight, target, timing_weight)
            delta = new - old
            if delta <= 0 or np.random.random() < math.exp(-delta / temperature):
                for o in (i, other):
                    if o < 0:
                        continue
                    for j in range(touch_start[o], touch_start[o + 1]):
                        k = touch_items[j]
                        cost[k] = _ccost(k, nb, drv, snk, block_cell, pin_cell, xs, ys,
                                         weight, target, timing_weight)
                if record.shape[0]:
                    record[accepted] = delta
                accepted += 1
                total_cost += delta
            else:
                _put(i, c0, other, c1, block_cell, occupied)       # undo it
            continue
        # A pin: to another lane of the same direction (swap with a movable pin there).
        i = obj - nb
        side0, lane0 = pin_side[i], pin_lane[i]
        if np.random.random() < 0.3:
            side = np.random.randint(0, 4)
        else:
            side = side0
        m = side_lanes_start[side + 1] - side_lanes_start[side]
        if m == 0:
            continue
        lane1 = side_lanes[side_lanes_start[side] + np.random.randint(0, m)]
        if side == side0 and lane1 == lane0:
            continue
        direction = pin_dir[i]
        other = pin_at[direction, lane_base[side] + lane1]
        if other >= 0 and not movable_pin[other]:
            continue
        c_new = boundary_cells[lane_base[side] + lane1]
        c_old = pin_cell[i]
        b_new, b_old = occupied[c_new], occupied[c_old]
        if b_new >= 0 and not _member(direct_start, direct_items, b_new, i):
            continue
        if other >= 0 and b_old >= 0 and not _member(direct_start, direct_items, b_old,
                                                     other):
            continue
        old = 0.0
        for o in (obj, nb + other):
            if o < nb:
                continue
            for j in range(touch_start[o], touch_start[o + 1]):
                k = touch_items[j]
                if mark[k + 1] != stamp:
                    mark[k + 1] = stamp
                    old += cost[k]
        pin_side[i], pin_lane[i], pin_cell[i] = side, lane1, c_new
        if other >= 0:
            pin_side[other], pin_lane[other], pin_cell[other] = side0, lane0, c_old
        stamp += 1
        new = _touched(obj, nb + other, nb, touch_start, touch_items, mark, stamp, nb, drv,
                       snk, block_cell, pin_cell, xs, ys, weight, target, timing_weight)
        delta = new - old
        if delta <= 0 or np.random.random() < math.exp(-delta / temperature):
            pin_at[direction, lane_base[side] + lane1] = i
            pin_at[direction, lane_base[side0] + lane0] = other
            for o in (obj, nb + other):
                if o < nb:
                    continue
                for j in range(touch_start[o], touch_start[o + 1]):
                    k = touch_items[j]
                    cost[k] = _ccost(k, nb, drv, snk, block_cell, pin_cell, xs, ys, weight,
                                     target, timing_weight)
            if record.shape[0]:
                record[accepted] = delta
            accepted += 1
            total_cost += delta
        else:
            pin_side[i], pin_lane[i], pin_cell[i] = side0, lane0, c_old
            if other >= 0:
                pin_side[other], pin_lane[other], pin_cell[other] = side, lane1, c_new
    mark[0] = stamp
    return accepted, total_cost
