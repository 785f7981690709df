"""The sweep back end's layouts: return routes, the configuration of a finished sweep and its
placement in a grid (issue 12; :mod:`.sweep` explains the scheme).

:func:`build_layout` turns a finished :class:`~.sweep._Sweep` into a :class:`Layout` (the
cells' tables in the layout's own coordinates, with the flip-flops' return routes planned by
:func:`plan_returns`); :func:`embed` places a layout at an offset of a grid, leads its lanes
to the grid's edges and writes the port map (SPEC section 4's tags: every cell's wave tag is
``x + y``, so a translation only moves the lanes' skews); :func:`offsets` lists the offsets
to try in a region or around defects.
"""

import typing

import numpy as np

from ..cell import COPY_E, COPY_N, COPY_S, COPY_W
from ..config import Configuration
from ..netlist import CONST0, CONST1, START
from ..ports import PortMap
from .errors import CompileError

__all__ = ["START", "Stuck", "Layout", "plan_returns", "build_layout", "embed", "offsets"]

#: LUT tables copying one input: N, E, S, W (SPEC section 3).
#: The strip's pass tables (its cells read W and N only): the same copies.
_TABLE_W, _TABLE_N = COPY_W, COPY_N
#: How the lanes are led to the edges when a layout is fitted into a grid (see :func:`embed`).
LEADS = (("W", "E"), ("W", "S"), ("N", "E"), ("N", "S"))
#: Most offsets tried when a layout is fitted into a region or around defects.
MAX_OFFSETS = 4000


class Stuck(Exception):
    """The sweep cannot go on with this many tracks (or a layout cannot be finished)."""


# Return routes ---------------------------------------------------------------------------------
def plan_returns(items, min_half=1, avoid=None):
    """Choose per flip-flop the return column ``a`` and the margin depth ``D``.

    :param items: ``[(q, c, r, earliest)]``: injection column, track row, earliest return
        column (the first after ``d`` reached its track).
    :param avoid: ``avoid(c, r, a, D)`` true if that return route would cross a defect.
    :returns: ``(half, {q: (a, D)})`` with ``half = P / 2 = max(a - c, 0) + r + D`` for all.
    """
    avoid = avoid or (lambda c, r, a, D: False)
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
                    if a >= e and a not in cols and D not in depths and not avoid(c, r, a, D):
                        found = (a, D)
                        break
                elif D not in depths:
                    for a in range(e, c + 1):
                        if a not in cols and not avoid(c, r, a, D):
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


def _route_cells(c, r, a, D, M):
    """The cells of a return route (layout coordinates, ``M`` margin rows)."""
    m, Y = M - D, M + r
    cells = {(a, y) for y in range(m, Y + 1)}
    cells |= {(x, m) for x in range(min(a, c), max(a, c) + 1)}
    cells |= {(c, y) for y in range(m, M)}
    return cells


def build_layout(netlist, sweep, state, outputs, H, margin=0, holes=frozenset()):
    """The :class:`Layout` of a finished sweep, with the return routes of its flip-flops
    (``margin``: at least that many rows above the strip; ``holes``: cells, in layout
    coordinates with ``margin`` rows, that the return routes must not use)."""
    # return routes: choose columns and depths
    items = []
    for q, (d, _) in state.items():
        c = sweep.injected[q]
        r = sweep.row[d]
        px = sweep.placed.get(d, (0, 0))[0] if d not in sweep.w_inputs else -1
        items.append((q, c, r, px + 1))
    avoid = ((lambda c, r, a, D: D > margin or bool(_route_cells(c, r, a, D, margin) & holes))
             if holes else None)
    try:
        half, plan = plan_returns(items, avoid=avoid)
    except CompileError:
        if not holes:
            raise
        half, plan = plan_returns(items)
    # a start cell needs a row above the strip (its N lane is no edge input)
    M = max([D for _, D in plan.values()] + [margin if state else 0]
            + [1 if START in sweep.injected else 0])
    final = max([sweep.final + 1] + [a for a, _ in plan.values()])
    # output lanes: E lanes at the last column (one per net; further copies on S lanes)
    e_rows = {}
    for port, index, net in outputs:
        if (port, index) in {(p, i) for _, p, i in sweep.emitted}:
            continue
        if net in (CONST0, CONST1):
            continue
        if net not in sweep.row:
            raise Stuck(f"output net {net} is not on a track")
        r = sweep.row[net]
        if r in e_rows.values():
            raise Stuck(f"two output bits of net {net} want track {r}")
        e_rows[(port, index)] = r
    busy = set(e_rows.values()) | set(sweep.row.values())
    free_rows = [r for r in range(H) if r not in busy]
    consts = [(p, i, n) for p, i, n in outputs if n in (CONST0, CONST1)]
    if len(consts) > len(free_rows):
        raise Stuck("no track left for the constant outputs")
    for (p, i, n), r in zip(consts, free_rows):
        e_rows[(p, i)] = r
    # grid size: even; the last column odd so that width = final + 1 is even
    if final % 2 == 0:
        final += 1
    Wd = final + 1
    Ht = M + H
    unused = sum(1 for port in netlist.inputs.values() for net in port.bits
                 if net not in sweep.injected and net not in sweep.w_inputs)
    spare = (Ht - len(sweep.w_inputs)) + (Wd - len(sweep.injected))
    Ht += max(0, unused - spare)       # rows whose W lanes take the unused input bits
    Ht += Ht % 2
    luts = np.zeros((Ht, Wd, 4), dtype=np.uint16)
    logic = set()
    for (x, y), cell in sweep.cells.items():
        for side, table in cell.items():
            luts[M + y, x, side] = table
            if table not in (_TABLE_W, _TABLE_N):
                logic.add((x, M + y))
    # tracks carried on to the last column for the E outputs
    const_rows = {e_rows[(p, i)]: n for p, i, n in consts}
    for key, r in e_rows.items():
        if r in const_rows:
            if const_rows[r] == CONST1:
                luts[M + r, final, 1] = 0xFFFF
                logic.add((final, M + r))
            continue
        for x in range(sweep.final + 1, final + 1):
            luts[M + r, x, 1] = _TABLE_W
    # S-lane outputs below the strip (through the rows added for evenness and lanes)
    s_out = {}
    for x, p, i in sweep.emitted:
        for y in range(M + H, Ht):
            luts[y, x, 2] = COPY_N
        s_out[(p, i)] = (x, Ht - 1)
    # N-lane inputs through the margin; the start cell; the returns
    for net, c in sweep.injected.items():
        if net == START:
            luts[0, c, 2] = 0xFFFF
            logic.add((c, 0))
            for y in range(1, M):
                luts[y, c, 2] = COPY_N
        elif net in state:
            continue
        else:
            for y in range(M):
                luts[y, c, 2] = COPY_N
    for q, (d, _) in state.items():
        a, D = plan[q]
        c, r = sweep.injected[q], sweep.row[d]
        m = M - D
        Y = M + r
        for x in range(sweep.final + 1, a):
            luts[Y, x, 1] = COPY_W
        luts[Y, a, 0] = COPY_W
        for y in range(Y - 1, m, -1):
            luts[y, a, 0] = COPY_S
        if a > c:
            luts[m, a, 3] = COPY_S
            for x in range(a - 1, c, -1):
                luts[m, x, 3] = COPY_E
            luts[m, c, 2] = COPY_E
        elif a < c:
            luts[m, a, 1] = COPY_S
            for x in range(a + 1, c):
                luts[m, x, 1] = COPY_W
            luts[m, c, 2] = COPY_W
        else:
            luts[m, c, 2] = COPY_S
        for y in range(m + 1, M):
            luts[y, c, 2] = COPY_N
        # the loop's length, checked: T(out of the last margin cell) = c + M - 1 + P
        length = (Y - m) + abs(a - c) + (M - 1 - m)
        assert a + Y + length == c + M - 1 + 2 * half, (q, a, c, Y, m, half)
    period = 2 * half if state else 2
    ins = {}
    for name, port in netlist.inputs.items():
        for i, net in enumerate(port.bits):
            if net in sweep.injected:
                ins[(name, i)] = ("N", sweep.injected[net])
            elif net in sweep.w_inputs:
                ins[(name, i)] = ("W", M + sweep.w_inputs[net])
    outs = {}
    for (p, i), r in e_rows.items():
        outs[(p, i)] = ("E", M + r)
    for (p, i), (x, y) in s_out.items():
        outs[(p, i)] = ("S", x)
    start = sweep.injected.get(START)
    return Layout(luts, frozenset(logic), ins, outs, period, start, len(sweep.gates), H, M)


class Layout(typing.NamedTuple):
    """A finished sweep: ``luts`` ``(h, w, 4)``, ``logic`` (its logic cells), ``ins``
    ``{(port, bit): (side, lane)}`` (N lanes are columns, W lanes rows of the layout),
    ``outs`` likewise (E, S), ``period``, ``start`` (the start cell's column, or None), and
    figures for the report."""
    luts: object
    logic: frozenset
    ins: dict
    outs: dict
    period: int
    start: object
    gates: int
    tracks: int
    margin: int


def embed(netlist, layout, width, height, ox, oy, allowed=None, led=("W", "E")):
    """``layout`` at offset ``(ox, oy)`` of a ``width`` x ``height`` grid, its input lanes
    led in from the N and W edges and its outputs out to the E and S edges by pass cells
    (``led``: the W-lane inputs from the W edge, or from the N edge down columns left of the
    layout then east; the E-lane outputs to the E edge, or east then down columns right of
    the layout to the S edge; every crossing is a W-E with an N-S pass):
    ``(config, portmap, report)``, or None if a cell it needs is not in ``allowed`` (a set
    of ``(x, y)``, None for all) or the start cell would not be at tag 0 or 1 (SPEC section
    4: its step from 0 to 1 must fall between the copies of rows -1 and 0)."""
    h, w = layout.luts.shape[:2]
    w_ins = sorted(k for k, (side, _) in layout.ins.items() if side == "W")
    e_outs = sorted(k for k, (side, _) in layout.outs.items() if side == "E")
    if ox + w + (len(e_outs) if led[1] == "S" else 0) > width or oy + h > height:
        return None
    if led[0] == "N" and ox < len(w_ins):
        return None
    if layout.start is not None and ox + layout.start + oy > 1:
        return None
    luts = np.zeros((height, width, 4), dtype=np.uint16)
    luts[oy:oy + h, ox:ox + w] = layout.luts
    in_lanes, out_lanes = {}, {}
    for key, (side, lane) in layout.ins.items():
        if side == "N":
            x = ox + lane
            luts[:oy, x, 2] = COPY_N
            in_lanes[key] = ("N", x, x)
        elif led[0] == "W":
            y = oy + lane
            luts[y, :ox, 1] = COPY_W
            in_lanes[key] = ("W", y, y)
        else:
            y, x = oy + lane, ox - len(w_ins) + w_ins.index(key)
            luts[:y, x, 2] = COPY_N
            luts[y, x, 1] = COPY_N
            luts[y, x + 1:ox, 1] = COPY_W
            in_lanes[key] = ("N", x, x)
    for key, (side, lane) in layout.outs.items():
        if side == "E" and led[1] == "E":
            y = oy + lane
            luts[y, ox + w:, 1] = COPY_W
            out_lanes[key] = ("E", y, width - 1 + y)
        elif side == "E":
            y, x = oy + lane, ox + w + e_outs.index(key)
            luts[y, ox + w:x, 1] = COPY_W
            luts[y, x, 2] = COPY_W
            luts[y + 1:, x, 2] = COPY_N
            out_lanes[key] = ("S", x, x + height - 1)
        else:
            x = ox + lane
            luts[oy + h:, x, 2] = COPY_N
            out_lanes[key] = ("S", x, x + height - 1)
    used = (luts != 0).any(axis=2)
    ys, xs = np.nonzero(used)
    cells = {(int(x), int(y)) for y, x in zip(ys, xs)}
    if allowed is not None and not cells <= allowed:
        return None
    taken = {(side, lane) for side, lane, _ in in_lanes.values()}
    spare = [lane for lane in ([("W", y) for y in range(height)]
                               + [("N", x) for x in range(width)]) if lane not in taken]
    if allowed is not None:
        inside = [(sd, ln) for sd, ln in spare
                  if ((0, ln) if sd == "W" else (ln, 0)) in allowed]
        spare = inside + [lane for lane in spare if lane not in inside]
    latency = max([t + 1 for _, _, t in out_lanes.values()] + [1])
    ports = []
    for name, port in netlist.inputs.items():
        bits = []
        for i in range(len(port.bits)):
            if (name, i) in in_lanes:
                side, lane, tag = in_lanes[(name, i)]
                skew = tag - tag % 2
            elif spare:
                (side, lane), skew = spare.pop(0), 0
            else:
                return None
            bits.append({"side": side, "lane": lane, **({"skew": skew} if skew else {})})
        ports.append({"name": name, "direction": "in", "signed": port.signed, "bits": bits})
    for name, port in netlist.outputs.items():
        bits = []
        for i in range(len(port.bits)):
            side, lane, tag = out_lanes[(name, i)]
            skew = tag + 1 - latency
            bits.append({"side": side, "lane": lane, **({"skew": skew} if skew else {})})
        ports.append({"name": name, "direction": "out", "signed": port.signed, "bits": bits})
    portmap = PortMap(width, height, ports, period=layout.period, latency=latency)
    logic = {(x + ox, y + oy) for x, y in layout.logic}
    box = [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())] if len(xs) else None
    report = {
        "back_end": "sweep",
        "grid": [width, height],
        "region": None,
        "bounding_box": box,
        "cells": {"logic": len(logic & cells), "routing": len(cells - logic),
                  "delay": 0, "total": len(cells)},
        "luts": len(netlist.luts), "flip_flops": len(netlist.dffs),
        "gates": layout.gates, "tracks": layout.tracks, "margin_rows": layout.margin,
        "period": layout.period, "latency": latency,
    }
    return Configuration(width, height, luts), portmap, report


def offsets(layout, width, height, region):
    """Offsets ``(ox, oy)`` to try, the smallest tags first."""
    h, w = layout.luts.shape[:2]
    x0, y0 = (region[0], region[1]) if region is not None else (0, 0)
    found = sorted(((x, y) for x in range(x0, width - w + 1) for y in range(y0, height - h + 1)),
                   key=lambda o: (o[0] + o[1], o[1]))
    return found[:MAX_OFFSETS]
