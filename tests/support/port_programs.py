"""Hand-built programs with port maps, and what they compute, for the tests of
``bitgrid.evaluate`` and ``bitgrid.transform``.

Each builder returns ``(config, portmap, model)``: ``model(rows)`` is the expected output rows,
computed here from what the program is built to do (identity routes, an XOR loop), never by the
code under test. Latencies are worked out from SPEC section 4 by hand: a straight or bent route
of ``n`` cells whose first cell is ``(x, y)`` delivers its input ``n + (x + y) % 2`` subcycles
after it is applied at an even subcycle.
"""

import itertools

from bitgrid.ports import PortMap
from bitgrid.program import Program

__all__ = ["skewed_routes", "signed_routes", "xor_loop", "odd_lanes", "idle_lanes",
           "inverter_route", "hops"]


def hops(x, y, cells, start=0):
    """Subcycles a route of ``cells`` cells starting at ``(x, y)`` takes from an input applied
    at subcycle ``start`` (SPEC section 4: the first cell waits for its parity)."""
    return cells + (x + y - start) % 2


def skewed_routes():
    """An 8 x 8 program whose port bits all take different paths.

    ``a`` (4 bits, W lanes 0..3): bit ``i`` runs east along row ``i`` to column ``7 - i``,
    turns south and leaves on S lane ``7 - i`` as bit ``i`` of ``qa``: ``15 - 2i`` cells.
    ``b`` (2 bits, N lanes 0 and 1, bit 0 with input skew 3, so it reaches its first cell one
    subcycle late) runs straight south to S lanes 0 and 1 (8 cells) as ``qb``. Latency 10 (bit
    3 of ``a``); the output skews make up the rest, and bit 1 of ``b`` (9 subcycles) has
    output skew -1.
    """
    program = Program(8, 8)
    in_a, out_a = [], []
    for i in range(4):
        column = 7 - i
        program.route(0, i, "E", length=column)
        program.turn(column, i, "W", "S")
        if i < 7:
            program.route(column, i + 1, "S")
        in_a.append({"side": "W", "lane": i})
        out_a.append((column, hops(0, i, column + 1 + 7 - i)))
    in_b, out_b = [], []
    b_skews = [3, 0]
    for x in range(2):
        program.route(x, 0, "S")
        in_b.append({"side": "N", "lane": x, "skew": b_skews[x]})
        out_b.append((x, b_skews[x] + hops(x, 0, 8, start=b_skews[x])))
    latency = 10
    assert [t for _, t in out_a + out_b] == [15, 14, 11, 10, 12, 9]
    ports = [
        {"name": "a", "direction": "in", "bits": in_a},
        {"name": "b", "direction": "in", "bits": in_b},
        {"name": "qa", "direction": "out",
         "bits": [{"side": "S", "lane": lane, "skew": t - latency} for lane, t in out_a]},
        {"name": "qb", "direction": "out",
         "bits": [{"side": "S", "lane": lane, "skew": t - latency} for lane, t in out_b]},
    ]
    portmap = PortMap(8, 8, ports, period=2, latency=latency)

    def model(rows):
        return [{"qa": row["a"], "qb": row["b"]} for row in rows]

    return program.config, portmap, model


def signed_routes():
    """A 4 x 4 program of crossing routes: ``a`` (4 bits, signed, W lanes 0..3) runs straight
    east to ``q`` (signed, E lanes 0..3); ``b`` (4 bits, unsigned, N lanes 0..3) runs straight
    south to ``r``, read as a signed port (S lanes 0..3): ``r`` is ``b`` in two's complement."""
    program = Program(4, 4)
    for i in range(4):
        program.route(0, i, "E")
        program.route(i, 0, "S")
    times = [hops(0, i, 4) for i in range(4)]
    latency = min(times)
    skewed = [t - latency for t in times]
    ports = [
        {"name": "a", "direction": "in", "signed": True,
         "bits": [{"side": "W", "lane": y} for y in range(4)]},
        {"name": "b", "direction": "in", "bits": [{"side": "N", "lane": x} for x in range(4)]},
        {"name": "q", "direction": "out", "signed": True,
         "bits": [{"side": "E", "lane": y, "skew": skewed[y]} for y in range(4)]},
        {"name": "r", "direction": "out", "signed": True,
         "bits": [{"side": "S", "lane": x, "skew": skewed[x]} for x in range(4)]},
    ]
    portmap = PortMap(4, 4, ports, period=2, latency=latency)

    def model(rows):
        return [{"q": row["a"], "r": row["b"] - 16 if row["b"] >= 8 else row["b"]}
                for row in rows]

    return program.config, portmap, model


def xor_loop():
    """An 8 x 8 program with a design clock of period 4: a loop of four cells through
    (0, 0) -> (1, 0) -> (1, 1) -> (0, 1) -> (0, 0) (4 subcycles round trip) where (0, 0) XORs
    the input ``t`` (W lane 0) into the value coming round, so ``q`` (N lane 1, the N output
    of (1, 0)) after design cycle ``k`` is the XOR of rows 0..k. Beside it ``d`` (W lane 3,
    an odd-parity lane) runs straight east to E lane 3 as ``e`` (9 subcycles)."""
    program = Program(8, 8)
    program.cell(0, 0, e=lambda w, s: w ^ s)
    program.cell(1, 0, s=lambda w: w, n=lambda w: w)
    program.cell(1, 1, w=lambda n: n)
    program.cell(0, 1, n=lambda e: e)
    program.route(0, 3, "E")
    latency = 2                     # (0, 0) at subcycle 4k, (1, 0) at 4k + 1
    ports = [
        {"name": "t", "direction": "in", "bits": [{"side": "W", "lane": 0}]},
        {"name": "d", "direction": "in", "bits": [{"side": "W", "lane": 3}]},
        {"name": "q", "direction": "out", "bits": [{"side": "N", "lane": 1}]},
        {"name": "e", "direction": "out",
         "bits": [{"side": "E", "lane": 3, "skew": hops(0, 3, 8) - latency}]},
    ]
    portmap = PortMap(8, 8, ports, period=4, latency=latency)

    def model(rows):
        running = itertools.accumulate((row["t"] for row in rows), lambda a, b: a ^ b)
        return [{"q": q, "e": row["d"]} for q, row in zip(running, rows)]

    return program.config, portmap, model


def odd_lanes():
    """An 8 x 4 program on the sides whose lane 0 cell has parity 1 (SPEC section 4): ``a``
    (4 bits, E lanes 0..3) runs west to W lanes 0..3 as ``qa``; ``b`` (8 bits, S lanes 0..7)
    runs north to N lanes 0..7 as ``qb``. Even lanes of E and S start on odd cells."""
    program = Program(8, 4)
    for y in range(4):
        program.route(7, y, "W")
    for x in range(8):
        program.route(x, 3, "N")
    a_times = [hops(7, y, 8) for y in range(4)]
    b_times = [hops(x, 3, 4) for x in range(8)]
    assert a_times == [9, 8, 9, 8] and b_times[:2] == [5, 4]
    latency = min(a_times + b_times)
    ports = [
        {"name": "a", "direction": "in", "bits": [{"side": "E", "lane": y} for y in range(4)]},
        {"name": "b", "direction": "in", "bits": [{"side": "S", "lane": x} for x in range(8)]},
        {"name": "qa", "direction": "out",
         "bits": [{"side": "W", "lane": y, "skew": t - latency}
                  for y, t in enumerate(a_times)]},
        {"name": "qb", "direction": "out",
         "bits": [{"side": "N", "lane": x, "skew": t - latency}
                  for x, t in enumerate(b_times)]},
    ]
    portmap = PortMap(8, 4, ports, period=2, latency=latency)

    def model(rows):
        return [{"qa": row["a"], "qb": row["b"]} for row in rows]

    return program.config, portmap, model


def idle_lanes():
    """A 4 x 2 program whose row-0 cells touch the N edge on lanes no port uses: ``a`` (W lane
    0) runs east to ``q`` (E lane 0), latency 4; cell (0, 0) computes ``n ^ w`` (so it reads N
    lane 0, which the port map drives 0) and cell (2, 0) also drives N lane 2 (read by no
    port)."""
    program = Program(4, 2)
    program.cell(0, 0, e=lambda n, w: n ^ w)
    program.cell(1, 0, e=lambda w: w)
    program.cell(2, 0, e=lambda w: w, n=lambda w: w)
    program.cell(3, 0, e=lambda w: w)
    portmap = PortMap(4, 2, [
        {"name": "a", "direction": "in", "bits": [{"side": "W", "lane": 0}]},
        {"name": "q", "direction": "out", "bits": [{"side": "E", "lane": 0}]}],
        latency=hops(0, 0, 4))

    def model(rows):
        return [{"q": row["a"]} for row in rows]

    return program.config, portmap, model


def inverter_route(skew=1, wake_even=False):
    """``q = not a`` along row 0 of a 4 x 2 grid: the inverter is cell (1, 0), of odd parity,
    so it outputs 1 on the first odd subcycle, before any row reaches it. Input ``a`` (W lane
    0) has skew ``skew``; cell (0, 0) (even) reads it at the first even subcycle of its window,
    ``2k + 2`` for skew 1 or 2, ``2k`` for skew 0, and the value leaves cell (3, 0) three
    subcycles later: latency 6 for skew 1 and 2, 4 for skew 0 (by hand, SPEC section 4).
    ``wake_even`` adds an even cell, (1, 1), whose S output is constant 1."""
    program = Program(4, 2)
    program.cell(0, 0, e=lambda w: w)
    program.cell(1, 0, e=lambda w: not w)
    program.cell(2, 0, e=lambda w: w)
    program.cell(3, 0, e=lambda w: w)
    if wake_even:
        program.cell(1, 1, s=1)
    portmap = PortMap(4, 2, [
        {"name": "a", "direction": "in", "bits": [{"side": "W", "lane": 0, "skew": skew}]},
        {"name": "q", "direction": "out", "bits": [{"side": "E", "lane": 0}]}],
        latency=4 if skew == 0 else 6)

    def model(rows):
        return [{"q": 1 - row["a"]} for row in rows]

    return program.config, portmap, model
