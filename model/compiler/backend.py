"""The compiler's back end: a LUT netlist to a BitGrid program and its port map (issue 12).

:func:`compile_netlist` runs, in order (docs/compiler.md describes each with the papers and
tools it follows):

1. :mod:`.pack`: clean-up, flip-flop gating with the start signal, LUT collapsing, packing of
   LUTs that share inputs into one cell;
2. :mod:`.place`: simulated annealing with a wire-length and wave-timing cost;
3. :mod:`.route`: PathFinder negotiated congestion on the graph of cell outputs, without
   length targets (to learn what each connection needs);
4. :mod:`.timing`: wave tags for every cell, the smallest even period ``P`` that every
   feedback loop can be padded to, and the padding targets of the routes; then
   :mod:`.pad` lengthens each route where it stands (stubs in free wires, a trombone where
   a stub does not fit); only if that fails are all nets routed again with exact targets,
   a connection whose target cannot be met given a longer one and the tags solved again;
5. the configuration (LUT tables of logic, pass and delay cells) and the port map, with the
   per-bit skews of inputs and outputs (:mod:`bitgrid.ports`) so that no delay cells are
   spent on aligning port bits.

The program is fully pipelined: a new row of inputs every ``P`` subcycles (``P = 2``, one
full cycle, for a design without feedback), every row's outputs ``latency`` subcycles later,
each output bit ``skew`` subcycles earlier or later as the port map says; a flip-flop holds
its ``init`` in design cycle 0 (:mod:`.pack`, register gating). The result is checked
against :meth:`bitgrid.netlist.Netlist.simulate` by the tests in tests/model/compiler.
"""

import math
import numbers
import time
import typing

import numpy as np

from ..config import Configuration, check_grid_size
from ..netlist import START
from ..defects import DefectMap
from ..ports import PortMap
from ..terms import parse_side
from .errors import CompileError
from .pack import prepare
from .pad import pad_routes
from .place import connections, place
from .route import Router, RoutingGraph, _Unroutable
from .timing import TimingError, minimum_period, solve_tags

__all__ = ["CompileError", "CompileResult", "compile_netlist"]

#: LUT tables copying one input: N, E, S, W (SPEC section 3).
_COPY = (0xAAAA, 0xCCCC, 0xF0F0, 0xFF00)
#: PathFinder iterations without and with length targets.
UNTARGETED_ITERATIONS, TARGETED_ITERATIONS = 30, 40
#: Placement seeds tried on each grid size with padding alone (stubs, trombones and local
#: negotiation, :mod:`.pad`: a second each on small designs) before the one attempt that
#: also routes every net again with exact targets (tens of seconds).
PAD_SEEDS = 4
#: As a candidate, more connections than this left unpadded on every seed of a size (or
#: routing congested before padding) end the attempt (the placer packs as tightly on a
#: larger grid); failed tries of 41- to 59-LUT machines took 60 to 155 s before.
HOPELESS_UNPADDED = 12
#: Largest sequential design (Yosys LUT4s) on which the general back end is tried beside the
#: sweep by default (its period is set by the placed loops, the sweep's by its rows: issue 36
#: item 4; ``bitgrid bench compile``, series ``sequential``).
GENERAL_CANDIDATE_LUTS = 32
#: Net reroutes routing may spend on one grid size: a base plus a share per connection. A
#: count, not a time, so that a compile gives the same program on every machine and load.
ROUTE_REROUTES, ROUTE_REROUTES_PER_CONNECTION = 4000, 40


#: With a library block for the design (``operation``), the LUT mappings are compiled beside it
#: only up to this many LUTs (above, on every test design, they took 4 to 120 times the
#: block's cells and most of the compile time). A memory's block is always kept alone: its
#: mappings are a loop per stored bit for the sequential back ends.
BLOCK_SEARCH_LUTS = 32


class CompileResult(typing.NamedTuple):
    """A compiled program: ``config`` (:class:`~bitgrid.config.Configuration`), ``portmap``
    (:class:`~bitgrid.ports.PortMap`) and ``report`` (a JSON-serialisable dict: ``grid``,
    ``region``, ``bounding_box``, ``cells`` (logic, routing, delay, total), ``luts``,
    ``flip_flops``, ``blocks``, ``period``, ``latency``, ``times`` in seconds per stage)."""
    config: Configuration
    portmap: PortMap
    report: dict




class _RouteFailure(Exception):
    """One placement that did not route; ``unpadded``: the connections padding left short
    (0 when it failed otherwise)."""

    def __init__(self, message, unpadded=0):
        super().__init__(message)
        self.unpadded = unpadded


def _figure_of_merit(result):
    """What :func:`compile_netlist` minimises among the programs of one design: cells used
    times the period (area x time per row; the period is 2 for every combinational program),
    then the cells, then the grid's area."""
    cells = result.report["cells"]["total"]
    return (cells * result.portmap.period, cells, result.config.width * result.config.height)


def compile_netlist(netlist, *, width=None, height=None, region=None, defects=None,
                    pins=None, seed=0, progress=None, alternatives=None, operation=None):
    """Pack, place, route and time ``netlist`` into a program (module docstring).

    Each mapping of the design (``netlist`` and the ``alternatives``) is compiled, and so is
    the library block of ``operation`` (:mod:`.blocks`; without a region, defect map or pins;
    a block is kept without compiling the mappings above :data:`BLOCK_SEARCH_LUTS` LUTs),
    and the program with the fewest cells x period is kept (:func:`_figure_of_merit`); only
    ``netlist`` falls back to the older back ends (fixed pins; a region or defect map the
    sweep does not fit); a small state machine is also tried in one cell
    (:mod:`.onecell`) and, up to :data:`GENERAL_CANDIDATE_LUTS` LUT4s, on the general back
    end with padding alone (``lut4, general``). The report names the mapping kept
    (``mapping``: ``lut4``, ``lut3``, ``lut2``, ``blocks``, ``one-cell``, ``lut4, general``
    or a mapping ``, retimed``) and lists every candidate's back end, cells and period
    (``candidates``); ``times["total"]`` covers them all.

    :param netlist: a :class:`bitgrid.netlist.Netlist` (the LUT4 mapping).
    :param alternatives: ``{name: Netlist}``, other mappings of the same design (same ports
        and flip-flops), such as :attr:`bitgrid.compiler.SynthesisResult.alternatives`; or
        None.
    :param operation: the :class:`~.operations.Operation` the design is
        (:attr:`bitgrid.compiler.SynthesisResult.operation`), or None.
    :param width, height: grid size in cells (even); ``None``: chosen to fit.
    :param region: ``(x0, y0, x1, y1)``, corners inclusive (SPEC section 10): only those cells
        are used and the ports are on the grid-edge lanes whose boundary cell is inside.
    :param defects: a :class:`bitgrid.defects.DefectMap` (its cells are never used).
    :param pins: ``{port: [(side, lane), ...]}``, one per bit, least significant first: port
        bits kept on those lanes.
    :param seed: placement seed.
    :param progress: ``progress(stage, done, total)`` (total 0 when unknown), or ``None``.
    :returns: :class:`CompileResult`.
    :raises CompileError: if the design does not fit the size or region (naming how many cells
        or lanes it needs and has), or cannot be routed there (the LUT4 mapping's error when
        no mapping fits).
    """
    started = time.perf_counter()
    options = dict(width=width, height=height, region=region, defects=defects, pins=pins,
                   seed=seed, progress=progress)
    candidates, errors = [], []
    if operation is not None and region is None and defects is None and not pins:
        from .blocks import compile_operation
        try:
            candidates.append(("blocks", compile_operation(operation, netlist, width=width,
                                                           height=height)))
        except CompileError as error:
            errors.append(error)
    block_only = bool(candidates) and (len(netlist.luts) > BLOCK_SEARCH_LUTS
                                       or operation.kind == "memory")
    retimed = None
    if netlist.dffs and not pins and not block_only:
        from .retime import compile_retimed
        retimed = compile_retimed(netlist, alternatives, **options)
        if retimed is not None:
            candidates.append((f"{retimed.report.get('mapping', 'lut4')}, retimed", retimed))
    if netlist.dffs and region is None and defects is None and not pins and retimed is None \
            and not block_only and len(netlist.luts) <= GENERAL_CANDIDATE_LUTS:
        # a small state machine: the general back end's loops are short when it pads
        try:
            candidates.append(("lut4, general", _compile_older(
                netlist, width, height, None, None, None, seed, progress,
                candidate=True)))
        except CompileError as error:
            errors.append(error)
    if region is None and defects is None and not pins and retimed is None:
        from .onecell import compile_one_cell
        one = compile_one_cell(netlist, width=width, height=height)
        if one is not None:
            candidates.append(("one-cell", one))
    mappings = [("lut4", netlist), *(alternatives or {}).items()]
    if block_only or retimed is not None:
        # the block: the LUT mappings are far larger (docs/compiler.md); registers retimed:
        # the sequential back end's loops only make the period longer
        mappings = []
    for name, candidate in mappings:
        if candidate is not netlist and pins:
            continue
        try:
            candidates.append((name, _compile_mapping(candidate, fallback=candidate is netlist,
                                                      **options)))
        except CompileError as error:
            errors.append(error)
    if not candidates:
        # the mapping that needs the smallest grid names the size (the sweep's errors say
        # what it needs: ``needs``); else the LUT4 mapping's error
        raise min(errors, key=lambda e: getattr(e, "needs", (float("inf"),)))
    name, best = min(candidates, key=lambda c: _figure_of_merit(c[1]))
    report = dict(best.report, mapping=name,
                  candidates=[{"mapping": n, "back_end": r.report.get("back_end"),
                               "cells": r.report["cells"]["total"],
                               "period": r.portmap.period} for n, r in candidates])
    report["times"] = dict(report.get("times", {}),
                           total=round(time.perf_counter() - started, 4))
    return best._replace(report=report)


def _compile_mapping(netlist, *, width, height, region, defects, pins, seed, progress,
                     fallback):
    """One mapping of the design: the sweep; the older back ends with fixed pins, or (with
    ``fallback``) where the sweep does not fit a region or defect map."""
    if not pins:
        try:
            return _compile_sweep(netlist, width, height, region, defects, progress)
        except CompileError as error:
            if region is None and defects is None or not fallback:
                raise
            first = error       # a region or defects: the older back ends route around them
        try:
            return _compile_older(netlist, width, height, region, defects, pins, seed,
                                  progress)
        except CompileError:
            raise first from None
    return _compile_older(netlist, width, height, region, defects, pins, seed, progress)


def _compile_older(netlist, width, height, region, defects, pins, seed, progress, *,
                   candidate=False):
    """The systolic back end (combinational) or the general one (flip-flops): they take
    fixed pins and place around any region or defect map, for small designs.

    The general back end tries :data:`PAD_SEEDS` placements per grid size, padded alone, and
    returns the first that pads; if none does, on the last size, it routes every net again
    with exact targets (slow). As a ``candidate`` beside the sweep it never does (and stops
    growing the grid when every placement is far from padding): a few seconds at most on
    small designs. (Keeping the best of the placements that pad instead of the first: on
    the sequential designs, 2026-12-06, ``gray8`` 96 to 84 cells and nothing else better,
    for 2 to 10 times the compile time.)"""
    reads_start = any(START in lut.inputs for lut in netlist.luts.values())
    if not netlist.dffs and not reads_start \
            and _systolic_sides(netlist, _check_pins(netlist, pins)):
        return _compile_systolic(netlist, width, height, region, defects, pins, progress)
    times = {}
    started = time.perf_counter()
    design = prepare(netlist)
    times["pack"] = time.perf_counter() - started
    if progress is not None:
        progress("pack", 1, 1)
    fixed = _check_pins(netlist, pins)
    auto = width is None or height is None
    if region is not None:
        region = tuple(int(v) for v in region)
        if len(region) != 4:
            raise CompileError(f"a region is x0,y0,x1,y1, not {region!r}")
    if auto:
        width, height = _auto_size(design, width, height, region)
        for side, lane in fixed.values():      # a grid that holds the pins' lanes
            if side in (0, 2):
                width = max(width, _even_up(lane + 1))
            else:
                height = max(height, _even_up(lane + 1))
    for (name, i), (side, lane) in fixed.items():
        along = width if side in (0, 2) else height
        if not 0 <= lane < along:
            raise CompileError(f"pins put {name}[{i}] on lane {lane} of side {'NESW'[side]}, "
                               f"which a {width} x {height} grid does not have (lanes 0 to "
                               f"{along - 1}); give a larger --size or another lane")
    attempts = 3 if auto and region is None else 1
    last = None
    for attempt in range(attempts):
        # a few placements padded alone (fast), then on the last size one that may route
        # every net again with exact targets (slow)
        tries = [(seed + k, False) for k in range(PAD_SEEDS)]
        if attempt == attempts - 1 and not candidate:
            tries.append((seed, True))
        fewest = None
        for try_seed, reroute in tries:
            try:
                return _compile_on(netlist, design, width, height, region, defects, fixed,
                                   try_seed, progress, times, started, reroute=reroute)
            except _RouteFailure as failure:
                last = failure
                if failure.unpadded:
                    fewest = min(fewest or failure.unpadded, failure.unpadded)
        if candidate and (fewest is None or fewest > HOPELESS_UNPADDED):
            break       # far from fitting (or congested before padding): a larger grid gives
            #             the placer no more room
        width, height = width + 6, height + 6
    raise CompileError(f"{last}; try a larger --size or region")


def _compile_sweep(netlist, width, height, region, defects, progress):
    """The default: the sweep back end (:mod:`.sweep`)."""
    from .sweep import compile_sweep
    started = time.perf_counter()
    width, height, region, allowed = _grid_and_cells(width, height, region, defects)
    config, portmap, report = compile_sweep(netlist, width=width, height=height,
                                            region=region, allowed=allowed,
                                            progress=progress)
    report["times"]["total"] = round(time.perf_counter() - started, 4)
    return CompileResult(config, portmap, report)


def _grid_and_cells(width, height, region, defects):
    """``(width, height, region, allowed)``: the grid (from the region or the defect map if
    not given), the region as a tuple, the usable cells (None: all, or no grid given).

    :raises CompileError: for a bad region, size or a lone width or height.
    """
    if region is not None:
        region = tuple(int(v) for v in region)
        if len(region) != 4:
            raise CompileError(f"a region is x0,y0,x1,y1, not {region!r}")
    if defects is not None and (width is None or height is None):
        if not isinstance(defects, DefectMap):
            raise TypeError(f"defects must be a bitgrid.defects.DefectMap, not {defects!r}")
        width, height = defects.width, defects.height
    if region is not None and (width is None or height is None):
        if width is None and height is None and region[2] % 2 == 0 and region[3] % 2 == 0:
            # the grid (even sides) would end a column and a row beyond the region
            raise CompileError(
                f"the region {','.join(map(str, region))} ends on column {region[2]} and row "
                f"{region[3]}, but without --size the grid is {_even_up(region[2] + 1)} x "
                f"{_even_up(region[3] + 1)} (sides are even): the region would touch neither "
                "its E nor its S edge, where the outputs leave; end the region on an odd "
                f"column or row (e.g. {region[0]},{region[1]},{region[2] + 1},"
                f"{region[3] + 1}) or give --size")
        width = _even_up(region[2] + 1) if width is None else width
        height = _even_up(region[3] + 1) if height is None else height
    allowed = None
    if width is not None and height is not None:
        try:
            width, height = check_grid_size(width, height)
        except ValueError as error:
            raise CompileError(str(error)) from None
        allowed = _allowed_cells(width, height, region, defects)
    elif width is not None or height is not None:
        raise CompileError("give both the width and the height of the grid, or neither")
    return width, height, region, allowed


def _compile_systolic(netlist, width, height, region, defects, pins, progress):
    """Combinational netlists with fixed pins: the systolic back end (:mod:`.systolic`)."""
    from .systolic import compile_combinational
    started = time.perf_counter()
    fixed = _check_pins(netlist, pins)
    width, height, region, allowed = _grid_and_cells(width, height, region, defects)
    config, portmap, report = compile_combinational(
        netlist, width=width, height=height, region=region, allowed=allowed, pins=fixed,
        progress=progress)
    report["times"]["total"] = round(time.perf_counter() - started, 4)
    return CompileResult(config, portmap, report)


def _systolic_sides(netlist, fixed):
    """Whether the fixed lanes ``fixed`` (from :func:`_check_pins`) suit the systolic back end:
    inputs on N and W lanes, outputs on S and E lanes (its signals flow east and south). Pins
    elsewhere (a program relocated with its lanes kept, :mod:`bitgrid.relocate`) go to the
    general back end."""
    return all((side in (0, 3)) if name in netlist.inputs else (side in (1, 2))
               for (name, _), (side, _lane) in fixed.items())


def _check_pins(netlist, pins):
    fixed = {}
    if not pins:
        return fixed
    for name, lanes in pins.items():
        port = netlist.inputs.get(name) or netlist.outputs.get(name)
        if port is None:
            raise CompileError(f"pins name port {name!r}, which the design does not have")
        if len(lanes) != len(port.bits):
            raise CompileError(f"pins give {len(lanes)} lanes for port {name}, which has "
                               f"{len(port.bits)} bits")
        for i, (side, lane) in enumerate(lanes):
            try:
                side = int(parse_side(side))
            except ValueError as error:
                raise CompileError(f"pins give {name}[{i}] side {side!r}: {error}") from None
            if isinstance(lane, bool) or not isinstance(lane, numbers.Integral) or lane < 0:
                raise CompileError(f"pins give {name}[{i}] lane {lane!r}: a lane is a whole "
                                   "number from 0")
            fixed[(name, i)] = (side, int(lane))
    return fixed


def _even_up(v):
    return max(2, int(v) + (int(v) % 2))


def _auto_size(design, width, height, region):
    if region is not None:
        return (_even_up(region[2] + 1) if width is None else width,
                _even_up(region[3] + 1) if height is None else height)
    n = len(design.blocks)
    io = max(sum(p.direction == "in" for p in design.pins),
             sum(p.direction == "out" for p in design.pins))
    # Logic sits on the odd-odd cells (a quarter of the grid, :mod:`.place`), with room.
    side = max(4, _even_up(2 * math.ceil(math.sqrt(n * 1.4)) + 6), _even_up(math.ceil(io / 3)))
    return (side if width is None else width, side if height is None else height)


def _allowed_cells(width, height, region, defects):
    cells = {(x, y) for x in range(width) for y in range(height)}
    if region is not None:
        x0, y0, x1, y1 = region
        if not (0 <= x0 <= x1 < width and 0 <= y0 <= y1 < height):
            raise CompileError(f"region {x0},{y0},{x1},{y1} is not inside the {width} x "
                               f"{height} grid")
        cells = {(x, y) for x, y in cells if x0 <= x <= x1 and y0 <= y <= y1}
    if defects is not None:
        if not isinstance(defects, DefectMap):
            raise TypeError(f"defects must be a bitgrid.defects.DefectMap, not {defects!r}")
        try:
            defects.check_grid(width, height)
        except ValueError as error:
            raise CompileError(str(error)) from None
        cells -= set(defects.bad_cells)
    return cells


class _Timing:
    """Node numbering and constraint building for :mod:`.timing`."""

    def __init__(self, design, graph, placement):
        self.design, self.graph, self.pl = design, graph, placement
        self.nb = len(design.blocks)
        self.conns = connections(design)
        self.start = [b for b, block in enumerate(design.blocks) if block.start]

    def node(self, end):
        kind, i = end
        return i if kind == "block" else self.nb + i

    def parity(self, end):
        kind, i = end
        g = self.graph
        if kind == "block":
            c = self.pl.block_cell[i]
        else:
            side, lane = self.pl.pin_lane[i]
            c = g.boundary_cell(side, lane)
        return (g.xs[c] + g.ys[c]) % 2

    def lower(self, period):
        """Lower bounds: a cell's parity; a lane's parity - 1; a driver of an output through
        ``r`` flip-flops ``r * period`` more (the output's row 0 after subcycle 0)."""
        design = self.design
        registered = [0] * (self.nb + len(design.pins))
        for net in design.nets:
            for sink, registers in net.sinks:
                if sink[0] == "pin":
                    u = self.node(net.driver)
                    registered[u] = max(registered[u], registers)
        lower = []
        for b, block in enumerate(design.blocks):
            # (the start cell's tag is its parity: it steps to 1 on its first update, and
            # pins read it through flip-flops from a buffer cell, :mod:`.pack`)
            rows = 0 if block.start else registered[b]
            lower.append(self.parity(("block", b)) + rows * period)
        for i, pin in enumerate(design.pins):
            if pin.direction == "in" and self.pl.pin_lane[i] is not None:
                lower.append(self.parity(("pin", i)) - 1 + registered[self.nb + i] * period)
            else:
                lower.append(0)
        return lower

    def edges(self, lengths):
        """Constraint edges for connections into blocks (outputs are free)."""
        result, index = [], []
        for k, (n, s, driver, sink, registers) in enumerate(self.conns):
            if sink[0] != "block":
                continue
            result.append((self.node(driver), self.node(sink), lengths[k], registers))
            index.append(k)
        return result, index

    def solve(self, lengths, period=None):
        """``(period, tags, targets per connection)``; targets ``None`` for outputs; None if
        ``period`` (given) is too short."""
        edges, index = self.edges(lengths)
        n = self.nb + len(self.design.pins)
        if period is None:
            period = minimum_period(n, self.lower, edges, fixed=self.start)
        tags = solve_tags(n, self.lower(period), edges, period, fixed=self.start,
                          nets=[self.conns[k][0] for k in index])
        if tags is None:
            return None
        targets = [None] * len(self.conns)
        for (u, v, _, registers), k in zip(edges, index):
            targets[k] = int(tags[v] - tags[u] + registers * period)
        return period, tags, targets


def _compile_on(netlist, design, width, height, region, defects, fixed, seed, progress,
                times, started, *, reroute=True, pitch=2, spread_pins=False):
    try:
        width, height = check_grid_size(width, height)
    except ValueError as error:
        raise CompileError(str(error)) from None
    allowed = _allowed_cells(width, height, region, defects)
    graph = RoutingGraph(width, height, allowed)
    nblocks = len(design.blocks)
    if nblocks > len(allowed):
        raise CompileError(f"the design needs {nblocks} cells for its logic alone, the "
                           f"{'region' if region else 'grid'} has {len(allowed)} usable "
                           f"cells; try --size {_even_up(math.ceil(math.sqrt(nblocks * 3)))}x"
                           f"{_even_up(math.ceil(math.sqrt(nblocks * 3)))}")
    # Placement.
    t = time.perf_counter()
    conns = connections(design)

    def place_solve(lengths, current):
        try:
            result = _Timing(design, graph, current).solve(lengths)
        except TimingError:
            return None
        return None if result is None else [x if x is not None else lengths[k]
                                            for k, x in enumerate(result[2])]

    try:
        placement = place(design, graph, allowed, pins=fixed, seed=seed, progress=progress,
                          solve=place_solve, pitch=pitch, spread_pins=spread_pins)
    except ValueError as error:
        raise CompileError(str(error)) from None
    times["place"] = time.perf_counter() - t
    timing = _Timing(design, graph, placement)
    # Routing nets.
    rnets, reserved = [], []
    for b, block in enumerate(design.blocks):
        reserved.append(placement.block_cell[b])
    for net in design.nets:
        if net.driver[0] == "block":
            c = placement.block_cell[net.driver[1]]
            sources = [4 * c + d for d in range(4)]
        else:
            side, lane = placement.pin_lane[net.driver[1]]
            sources = [graph.lane_wire(side, lane)]
        sinks = []
        for sink, _ in net.sinks:
            if sink[0] == "block":
                sinks.append(("cell", placement.block_cell[sink[1]]))
            else:
                side, lane = placement.pin_lane[sink[1]]
                sinks.append(("wire", graph.output_wire(side, lane)))
        rnets.append((sources, sinks))
    router = Router(graph, rnets, reserved)
    order = sorted(range(len(rnets)), key=lambda n: -len(rnets[n][1]))
    conn_index = {(n, s): k for k, (n, s, *_rest) in enumerate(conns)}
    t = time.perf_counter()
    router.budget = ROUTE_REROUTES + ROUTE_REROUTES_PER_CONNECTION * len(conns)
    # Stage 1: no targets.
    none_targets = [[None] * len(sinks) for _, sinks in rnets]
    try:
        for it in range(UNTARGETED_ITERATIONS):
            over, _ = router.iterate(none_targets, order=order)
            if progress is not None:
                progress("route", it + 1, 0)
            if not over:
                break
        else:
            raise _RouteFailure(f"routing did not converge ({len(over)} wires wanted by "
                                f"several signals on a {width} x {height} grid)")
        lengths = [0] * len(conns)
        for k, (n, s, *_rest) in enumerate(conns):
            lengths[k] = router.trees[n][router.goals[n][s]][0]
        unpadded = _route_cells(router, design, placement)
        times["route"] = time.perf_counter() - t
        # Stage 2: timing and exact targets.
        t = time.perf_counter()
        lmin = list(lengths)
        solved = timing.solve(lmin)
        if solved is None:
            raise _RouteFailure("no timing solution")
        period, tags, targets = solved
        per_net = [[targets[conn_index[(n, s)]] for s in range(len(sinks))]
                   for n, (_, sinks) in enumerate(rnets)]
        padded = pad_routes(router, per_net)
        if progress is not None:
            progress("timing", 1, 0)
        if padded.failed and not reroute:
            raise _RouteFailure(f"{len(padded.failed)} connections could not be padded to "
                                f"their wave on a {width} x {height} grid",
                                len(padded.failed))
        router.present = 0.5
        over, failed = [], padded.failed
        for it in range(TARGETED_ITERATIONS if padded.failed else 0):
            per_net = [[targets[conn_index[(n, s)]] for s in range(len(sinks))]
                       for n, (_, sinks) in enumerate(rnets)]
            over, failed = router.iterate(per_net, order=order)
            if progress is not None:
                progress("timing", it + 1, 0)
            if not over and not failed:
                break
            bump = set()
            for n, s in failed:
                bump.add(conn_index[(n, s)])
            if over and it >= 6 and it % 3 == 0:
                for w in over:
                    users = router.users(w)
                    # Later, everyone on an overused wire gets a longer wave.
                    for n in (users if it >= 20 else users[1:]):
                        for s in range(len(rnets[n][1])):
                            k = conn_index[(n, s)]
                            if targets[k] is not None and w in router.sink_path(n, s):
                                bump.add(k)
            if bump:
                for k in bump:
                    lmin[k] = max(lmin[k], targets[k] + 2)
                solved = timing.solve(lmin)
                if solved is None:
                    raise _RouteFailure("no timing solution")
                period, tags, targets = solved
        if padded.failed and (over or failed):
            raise _RouteFailure(f"routing with balanced delays did not converge "
                                f"({len(over)} wires wanted by several signals, "
                                f"{len(failed)} connections off their wave) on a {width} x "
                                f"{height} grid")
    except TimeoutError:
        raise _RouteFailure(f"routing spent its budget of reroutes on the {width} x {height} grid") from None
    except _Unroutable:
        raise _RouteFailure(f"a connection cannot be routed on the {width} x {height} grid "
                            "(no path between its cells)") from None
    times["timing"] = time.perf_counter() - t
    config, portmap, cells = _emit(netlist, design, graph, placement, router, timing, tags,
                                   period, width, height)
    routing = min(cells["routing"], unpadded)
    report = {
        "back_end": "general",
        "grid": [width, height],
        "region": list(region) if region is not None else None,
        "bounding_box": cells["box"],
        "cells": {"logic": cells["logic"], "routing": routing,
                  "delay": cells["routing"] - routing,
                  "total": cells["logic"] + cells["routing"]},
        "luts": len(netlist.luts), "flip_flops": len(netlist.dffs),
        "packed_luts": design.luts, "blocks": len(design.blocks),
        "period": period, "latency": portmap.latency,
        "times": {**{k: round(v, 4) for k, v in times.items()},
                  "total": round(time.perf_counter() - started, 4)},
    }
    return CompileResult(config, portmap, report)


def _route_cells(router, design, placement):
    logic = set(placement.block_cell)
    used = set()
    for tree in router.trees:
        for w in tree:
            owner = router.g.owner[w]
            if owner >= 0 and owner not in logic:
                used.add(owner)
    return len(used)


def _emit(netlist, design, graph, placement, router, timing, tags, period, width, height):
    luts = np.zeros((height, width, 4), dtype=np.uint16)
    nb = len(design.blocks)
    # Wire -> (net index, tag).
    carried = {}
    for n, tree in enumerate(router.trees):
        source_tag = int(tags[timing.node(design.nets[n].driver)])
        for w, (depth, _) in tree.items():
            carried[w] = (n, source_tag + depth - 1)
    incoming = {}
    for w, c in enumerate(graph.dest):
        if c >= 0 and w in carried:
            n, tag = carried[w]
            incoming.setdefault(c, {})[(design.nets[n].name, tag)] = graph.side[w]
    net_tables = {}
    for b, block in enumerate(design.blocks):
        c = placement.block_cell[b]
        tau = int(tags[b])
        if block.start:
            continue
        sides = []
        for net, registers in block.inputs:
            side = incoming.get(c, {}).get((net, tau - 1 + registers * period))
            if side is None:
                raise AssertionError(f"block {b}: input {net} (+{registers}) missing at tag "
                                     f"{tau - 1 + registers * period}")
            sides.append(side)
        for net, inputs, table in block.luts:
            cell_table = 0
            for a in range(16):
                addr = 0
                for bit, i in enumerate(inputs):
                    addr |= ((a >> sides[i]) & 1) << bit
                cell_table |= ((table >> addr) & 1) << a
            net_tables[net] = cell_table
    for n, tree in enumerate(router.trees):
        net = design.nets[n]
        for w, (depth, parent) in tree.items():
            owner = graph.owner[w]
            if owner < 0:
                continue
            x, y, d = owner % width, owner // width, w % 4
            if parent == -1:
                if net.driver[0] != "block":
                    raise AssertionError("a lane net's source is its lane")
                table = 0xFFFF if design.blocks[net.driver[1]].start else net_tables[net.name]
            else:
                if graph.dest[parent] != owner:
                    raise AssertionError("broken route tree")
                table = _COPY[graph.side[parent]]
            luts[y, x, d] = table
    # Output bits of nets stored inverted: the cell driving the lane inverts.
    for n, net in enumerate(design.nets):
        for s, (sink, _) in enumerate(net.sinks):
            if sink[0] == "pin" and design.pins[sink[1]].invert:
                w = router.goals[n][s]
                owner = graph.owner[w]
                luts[owner // width, owner % width, w % 4] ^= 0xFFFF
    config = Configuration(width, height, luts)
    # Port map.
    ports = []
    out_tags = {}
    for n, net in enumerate(design.nets):
        source_tag = int(tags[timing.node(net.driver)])
        for s, (sink, registers) in enumerate(net.sinks):
            if sink[0] == "pin":
                depth = router.trees[n][router.goals[n][s]][0]
                out_tags[sink[1]] = source_tag + depth - 1 - registers * period
    latency = max([t + 1 for t in out_tags.values()] + [1])
    bits = {}
    for i, pin in enumerate(design.pins):
        side, lane = placement.pin_lane[i]
        if pin.direction == "in":
            c = graph.boundary_cell(side, lane)
            used = any(net.driver == ("pin", i) for net in design.nets)
            skew = int(tags[nb + i]) + 1 - (graph.xs[c] + graph.ys[c]) % 2 if used else 0
            if skew < 0:
                raise AssertionError(f"negative input skew {skew}")
        else:
            skew = out_tags[i] + 1 - latency if i in out_tags else 0
            if i in out_tags and out_tags[i] < 0:
                raise AssertionError(f"output {pin.port}[{pin.index}] before row 0")
        bits.setdefault((pin.port, pin.direction), {})[pin.index] = \
            {"side": "NESW"[side], "lane": lane, **({"skew": skew} if skew else {})}
    for name, port in netlist.inputs.items():
        ports.append({"name": name, "direction": "in", "signed": port.signed,
                      "bits": [bits[(name, "in")][i] for i in range(len(port.bits))]})
    for name, port in netlist.outputs.items():
        ports.append({"name": name, "direction": "out", "signed": port.signed,
                      "bits": [bits[(name, "out")][i] for i in range(len(port.bits))]})
    portmap = PortMap(width, height, ports, period=period, latency=latency)
    used = (luts != 0).any(axis=2)
    logic = {placement.block_cell[b] for b in range(nb)}
    ys, xs = np.nonzero(used)
    box = [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())] if len(xs) else None
    all_cells = {int(y) * width + int(x) for y, x in zip(ys, xs)} | logic
    cells = {"logic": len(logic), "routing": len(all_cells - logic), "box": box}
    return config, portmap, cells
