"""The general back end: one packed design placed, routed, timed, padded and emitted on any
grid, region or defect map, with fixed pins (issues 12 and 36; docs/compiler.md, "The
general back end").

:func:`compile_general` tries placements (:data:`PAD_SEEDS` seeds per grid size, growing the
grid when none pads) and returns the first program; :func:`compile_on` is one placement:

1. :mod:`.place`: simulated annealing with a wire-length and wave-timing cost;
2. :mod:`.route`: PathFinder negotiated congestion on the graph of cell outputs, without
   length targets (to learn what each connection needs);
3. :mod:`.timing`: wave tags for every cell, the smallest even period ``P`` that every
   feedback loop can be padded to, and the tags that need the least padding (a linear
   program); then :mod:`.pad` lengthens each route where it stands (stubs in free wires, a
   trombone where a stub does not fit, a local negotiation); only if that fails (and
   ``reroute``) are all nets routed again with exact targets, a connection whose target
   cannot be met given a longer one and the tags solved again;
4. the configuration (LUT tables of logic, pass and delay cells) and the port map, with the
   per-bit skews of inputs and outputs (:mod:`bitgrid.ports`) so that no delay cells are
   spent on aligning port bits, and the report.
"""

import math
import time

import numpy as np

from ..cell import COPY
from ..config import Configuration, check_grid_size
from ..defects import DefectMap
from ..ports import PortMap
from .errors import CompileError
from .pack import prepare
from .pad import pad_routes
from .place import connections, place
from .route import Router, RoutingGraph, _Unroutable
from .timing import TimingError, free_period, minimum_period, solve_tags, solve_waves

__all__ = ["compile_general", "compile_on", "RouteFailure", "WaveTiming", "PAD_SEEDS",
           "HOPELESS_UNPADDED", "OBJECTIVES", "figure_of_merit", "even_up", "auto_size",
           "allowed_cells"]

#: LUT tables copying one input: N, E, S, W (SPEC section 3).
#: PathFinder iterations without and with length targets, at most (on the EPFL `router`
#: circuit, 60 LUT4s on a roomy 36 x 36 grid, 2026-12-07, the last overused wire went after
#: 12 to 35; on `cavlc`, 213 logic cells at pitch 4 on 84 x 84, after 60 to 110).
UNTARGETED_ITERATIONS, TARGETED_ITERATIONS = 150, 40
#: Routing without targets gives up when the last this many iterations left no fewer than
#: 90 % of the fewest overused wires before them and more than :data:`CROWDED_WIRES` (a
#: placement too dense stalls at hundreds: `cavlc` at pitch 3 on 64 x 64 went from 1,569 to
#: 270 in 20 iterations, then crept to 259 in 25 more, about 0.7 s each; a placement near
#: routing keeps all its iterations for its last few wires).
STALL_ITERATIONS = 12
#: ... and when this many iterations in a row found no fewer overused wires than before,
#: however few (`i2c`, 350 logic cells at pitch 4 on 104 x 104, 2026-12-07: 1 to 3 wires
#: from iteration 25 to 150, two high-fan-out nets into closed cells in a full corner).
TAIL_ITERATIONS = 40
#: Placement seeds tried on each grid size with padding alone (stubs, trombones and local
#: negotiation, :mod:`.pad`: a second each on small designs) before the one attempt that
#: also routes every net again with exact targets (tens of seconds).
PAD_SEEDS = 4
#: Placement seeds tried per grid size with more room: logic on a lattice of pitch 3 (one cell in 9,
#: none next to the edge) and port bits on every other lane (:func:`.place.place`). Denser
#: placements pad with fewer cells when they pad; these pad more often.
ROOMY_SEEDS = 2
#: At a period that is not the last to try, padding is attempted only when the wires it
#: needs are at most this share of the routes' (on the EPFL control circuits, 2026-12-07,
#: no attempt above 13 % padded, and each failed one took up to a minute on 173 LUT4s;
#: ``barrel8`` padded at 5 %, ``crc8`` at period 2 with 31 %).
PAD_TRY_SHARE = 0.25
#: Designs without flip-flops of more logic cells than this try roomy placements first (on
#: the EPFL ``ctrl`` and ``router`` circuits, 47 and 60 LUT4s, 2026-12-07, dense placements
#: on the first size left 27 to 48 wires overused after routing; roomy ones routed).
ROOMY_FIRST_BLOCKS = 24
#: Routing that stalls with more wires than this overused on every seed of a size ends
#: the attempts at that pitch (the placer packs as tightly on a larger grid; `cavlc` at
#: pitch 3 stalled at 270 on 64 x 64 and at pitch 4 routed on 84 x 84, 2026-12-07).
CROWDED_WIRES = 30
#: As a candidate, more connections than this left unpadded on every seed of a size (or
#: routing congested before padding) end the attempt (the placer packs as tightly on a
#: larger grid); failed tries of 41- to 59-LUT machines took 60 to 155 s before.
HOPELESS_UNPADDED = 12
#: Net reroutes routing may spend on one grid size: a base plus a share per connection. A
#: count, not a time, so that a compile gives the same program on every machine and load.
ROUTE_REROUTES, ROUTE_REROUTES_PER_CONNECTION = 4000, 40


class RouteFailure(Exception):
    """One placement that did not route; ``unpadded``: the connections padding left short
    (0 when it failed otherwise); ``overused``: the wires routing left with several signals
    (0 when it converged)."""

    def __init__(self, message, unpadded=0, overused=0):
        super().__init__(message)
        self.unpadded = unpadded
        self.overused = overused


def compile_general(netlist, *, width, height, region, defects, fixed, seed, progress,
                    candidate=False, any_period=False, objective="area-time", macro=None):
    """Compile ``netlist`` on the general back end: packed (:func:`.pack.prepare`), then
    placed and routed.

    :func:`compile_on` runs on :data:`PAD_SEEDS` placement seeds per grid size (3 sizes when
    the size is chosen here, else the given one with three times the seeds) and
    :data:`ROOMY_SEEDS` per size with more room between blocks (in the order below), padded alone, and the first that pads is
    returned; if none does, one more on the largest size routes every net again with exact
    targets (slow). As a ``candidate`` beside the sweep it does only for a design with
    flip-flops, and it stops growing the grid
    when every placement is far from padding (more than :data:`HOPELESS_UNPADDED` connections
    short): a few seconds at most on small designs. A design with flip-flops goes through
    the stages with exact tags, then (none padding) again with wave windows
    (:class:`WaveTiming`: denser, and `bitgrid place` reads back only some). Designs of more than
    :data:`ROOMY_FIRST_BLOCKS` logic cells also try pitch 4 (one logic cell in 16, on twice
    the grid), and a pitch whose routing stalled crowded (:data:`CROWDED_WIRES`) on every
    seed of a size (or far from routing on one) is not tried on larger ones. (Keeping the best of the placements that
    pad instead of the first: on the sequential designs, 2026-12-06, ``gray8`` 96 to 84 cells
    and nothing else better, for 2 to 10 times the compile time.)

    :param width, height: grid size, or None: :func:`auto_size` (grown to hold ``fixed``).
    :param region: ``(x0, y0, x1, y1)`` or None; ``defects``: a
        :class:`bitgrid.defects.DefectMap` or None.
    :param fixed: ``{(port, bit): (side, lane)}`` of pinned port bits.
    :param progress: ``progress(stage, done, total)`` or None.
    :param any_period: a placement may pad at a longer period than its loops need (a design
        without flip-flops: longer than 2), :meth:`WaveTiming.periods`; else only at the
        shortest (a combinational program stays fully pipelined).
    :param objective: ``area``: keep the placement of the fewest cells among the seeds of the
        first stage (density and grid size) where one pads, not the first that pads at the
        shortest period (:func:`figure_of_merit`).
    :param macro: a library block laid out inside the grid (:class:`.compose.Macro`): its
        cells are not used, the ports of ``netlist`` it names are its ports' wires inside the
        grid, their waves tied to its timing; None.
    :returns: :class:`.backend.CompileResult`.
    :raises CompileError: for a bad region or pin lane, or when no placement routes.
    """
    times = {}
    started = time.perf_counter()
    design = prepare(netlist, through=macro.through(netlist) if macro is not None else None)
    times["pack"] = time.perf_counter() - started
    if progress is not None:
        progress("pack", 1, 1)
    auto = width is None or height is None
    if region is not None:
        region = tuple(int(v) for v in region)
        if len(region) != 4:
            raise CompileError(f"a region is x0,y0,x1,y1, not {region!r}")
    if auto:
        width, height = auto_size(design, width, height, region)
        if macro is not None:           # the glue's room beside the macro's
            width, height = macro.grid_for(width, height)
        for side, lane in fixed.values():      # a grid that holds the pins' lanes
            if side in (0, 2):
                width = max(width, even_up(lane + 1))
            else:
                height = max(height, even_up(lane + 1))
    for (name, i), (side, lane) in fixed.items():
        along = width if side in (0, 2) else height
        if not 0 <= lane < along:
            raise CompileError(f"pins put {name}[{i}] on lane {lane} of side {'NESW'[side]}, "
                               f"which a {width} x {height} grid does not have (lanes 0 to "
                               f"{along - 1}); give a larger --size or another lane")
    attempts = 3 if auto and region is None else 1
    last = None
    # dense placements (logic on a quarter of the cells) and roomy ones (they pad more
    # often, with more cells and longer loops): with flip-flops, dense on every size first
    # (short loops); without, dense on the first size, roomy on every size, then dense on
    # the larger sizes (on 15 random expressions of 10 to 28 LUT4s, 2026-12-07: 0.7 to 8 s a
    # compile, against up to 18 s dense first, for 6 % more cells). A pitch stops growing
    # after a size where every seed was congested or far from padding (as a candidate);
    # last, one that routes every net again with exact targets (slow; not as a candidate).
    # one size (given, or a region's): as many placements as three sizes would have had
    more = 3 // attempts
    dense = [(2, a, PAD_SEEDS * more) for a in range(attempts)]
    roomy = [(3, a, ROOMY_SEEDS * more) for a in range(attempts)]
    roomier = [(4, a, ROOMY_SEEDS * more) for a in range(attempts)]
    large = len(design.blocks) > ROOMY_FIRST_BLOCKS
    if netlist.dffs:
        stages = dense + roomy + (roomier if large else [])
    elif large:
        stages = roomy + roomier + dense    # dense placements of larger logic did not route
    else:
        stages = dense[:1] + roomy + dense[1:]
    # with flip-flops, the stages with exact tags (every program read back by `bitgrid
    # place`), then again with wave windows (most of them read back, :class:`WaveTiming`)
    for windows in ((False, True) if netlist.dffs else (False,)):
        hopeless = set()
        best = None
        for pitch, attempt, seeds in stages:
            if pitch in hopeless:
                continue
            w, h = width + 6 * attempt, height + 6 * attempt
            if auto and region is None and defects is None and pitch > 2:
                grow = 1.5 if pitch == 3 else 2         # as much room per block as the pitch
                w, h = even_up(w * grow), even_up(h * grow)
            fewest = None
            crowded = 0                 # seeds whose routing stalled with many wires overused
            for k in range(seeds):
                try:
                    result = compile_on(netlist, design, w, h, region, defects, fixed,
                                        seed + k, progress, times, started, reroute=False,
                                        pitch=pitch, period="any" if any_period else None,
                                        windows=windows, macro=macro)
                except RouteFailure as failure:
                    last = failure
                    if failure.unpadded:
                        fewest = min(fewest or failure.unpadded, failure.unpadded)
                    crowded += failure.overused > CROWDED_WIRES
                    if failure.overused > 3 * CROWDED_WIRES:
                        crowded = seeds     # far from routing: the other seeds are as dense
                        break
                    continue
                if result.portmap.period == result.report["shortest_period"] \
                        and objective != "area":
                    return result           # padded at the shortest period the loops allow
                if best is None or figure_of_merit(result, objective) < figure_of_merit(
                        best, objective):
                    best = result           # else the best of the rest of this stage
            if best is not None:
                return best
            if candidate and (fewest is None or fewest > HOPELESS_UNPADDED) \
                    or crowded == seeds:
                hopeless.add(pitch)     # a larger grid gives the placer no more room
    if (not candidate or netlist.dffs) and (netlist.dffs or not any_period):
        # on the largest dense size (a design without flip-flops pads at any period: at the
        # last, nothing needs padding); as a candidate too for a state machine (the sweep's
        # loops are long: `uart_rx`, 27 LUT4s, 2026-12-07: 562 cells at period 28 here
        # with exact tags; the sweep 3,200 at 210; padded with windows above, 332 at 28)
        grow = 6 * (attempts - 1)
        try:
            return compile_on(netlist, design, width + grow, height + grow, region, defects,
                              fixed, seed, progress, times, started, reroute=True,
                              macro=macro)
        except RouteFailure as failure:
            last = failure
    raise CompileError(f"{last}; try a larger --size or region")


#: What the compiler can minimise among the programs of one design (:func:`figure_of_merit`):
#: ``area-time`` (cells x period: area x time per row), ``area`` (cells, then period: the
#: smallest program, for a grid it must fit).
OBJECTIVES = ("area-time", "area")


def figure_of_merit(result, objective="area-time"):
    """What is minimised among the programs of one design (a :class:`.backend.CompileResult`
    each): cells used times the period, then the cells, then the grid's area; for the
    ``area`` objective the cells, then the period, then the grid's area."""
    cells, period = result.report["cells"]["total"], result.portmap.period
    grid = result.config.width * result.config.height
    if objective == "area":
        return cells, period, grid
    return cells * period, cells, grid


def even_up(v):
    """``v`` rounded up to an even grid side, at least 2."""
    return max(2, int(v) + (int(v) % 2))


def auto_size(design, width, height, region):
    """``(width, height)`` for ``design`` where not given: the region's extent, or a square
    with room for the blocks on their slots and the port bits on the edges."""
    if region is not None:
        return (even_up(region[2] + 1) if width is None else width,
                even_up(region[3] + 1) if height is None else height)
    n = len(design.blocks)
    io = max(sum(p.direction == "in" for p in design.pins),
             sum(p.direction == "out" for p in design.pins))
    # Logic sits on the odd-odd cells (a quarter of the grid, :mod:`.place`), with room.
    side = max(4, even_up(2 * math.ceil(math.sqrt(n * 1.4)) + 6), even_up(math.ceil(io / 3)))
    return (side if width is None else width, side if height is None else height)


def allowed_cells(width, height, region, defects):
    """The usable ``(x, y)`` cells: inside ``region`` (if any), not in ``defects``.

    :raises CompileError: for a region off the grid or a defect map of another size."""
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


class WaveTiming:
    """Node numbering and constraint building for :mod:`.timing`."""

    def __init__(self, design, graph, placement, windows=False, ties=None):
        self.design, self.graph, self.pl = design, graph, placement
        self.nb = len(design.blocks)
        self.conns = connections(design)
        # pins tied to each other ({pin: offset}): each exactly its offset after the others
        # (a macro's ports inside the grid, :mod:`.compose`); the connections into them are
        # timed and padded, their window is the whole period
        self.ties = dict(ties or {})
        self.start = [b for b, block in enumerate(design.blocks) if block.start]
        # nodes whose window is one update wide (early = late): the input bits (a row is
        # held for the whole period); with flip-flops, unless ``windows``, every node (exact
        # tags): `bitgrid place` (:mod:`bitgrid.relocate`) reads the netlist of any such
        # program back; with windows (loops stay exact, :func:`.timing.solve_waves`) only
        # some (it refuses the others)
        self.equal = [self.nb + i for i, pin in enumerate(design.pins) if pin.direction == "in"]
        if not windows and any(registers for *_, registers in self.conns):
            self.equal = list(range(self.nb + len(design.pins)))
        self.equal = sorted(set(self.equal) | {self.nb + i for i in self.ties})
        self.widest = 0             # the widest window of the last exact solve (subcycles)

    def node(self, end):
        kind, i = end
        return i if kind == "block" else self.nb + i

    def parity(self, end):
        kind, i = end
        g = self.graph
        c = self.pl.block_cell[i] if kind == "block" else self.pl.pin_cell(g, i)
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
            if pin.direction == "in" and (self.pl.pin_lane[i] is not None
                                          or i in self.pl.inner):
                lower.append(self.parity(("pin", i)) - 1 + registered[self.nb + i] * period)
            elif i in self.ties:        # the cell beyond the lane reads it
                lower.append(1 - self.parity(("pin", i)))
            else:
                lower.append(0)
        return lower

    def tie_list(self):
        """The ties as :func:`.timing.solve_waves` takes them: ``(u, v, d)``."""
        pins = sorted(self.ties)
        return [(self.nb + pins[0], self.nb + i, self.ties[i] - self.ties[pins[0]])
                for i in pins[1:]]

    def edges(self, lengths):
        """Constraint edges for connections into blocks and tied output pins (the other
        outputs are free)."""
        result, index = [], []
        for k, (n, s, driver, sink, registers) in enumerate(self.conns):
            if sink[0] != "block" and sink[1] not in self.ties:
                continue
            result.append((self.node(driver), self.node(sink), lengths[k], registers))
            index.append(k)
        return result, index

    def bounds(self, lengths):
        """The constraint edges with each tie as two (a loop through a macro is as long as
        its timing), for the period searches."""
        edges, _ = self.edges(lengths)
        for u, v, d in self.tie_list():
            edges += [(u, v, d, 0), (v, u, -d, 0)]
        return edges

    def periods(self, lengths, any_period=True):
        """The periods worth padding for, shortest first: the loops' minimum, then (with
        ``any_period``) doublings up to the period at which nothing needs padding (designs
        without flip-flops only; :func:`.timing.free_period`)."""
        edges = self.bounds(lengths)
        n = self.nb + len(self.design.pins)
        first = minimum_period(n, self.lower, edges, fixed=self.start)
        if not any_period:
            return [first]
        free = free_period(n, self.lower(first), edges, fixed=self.start, equal=self.equal)
        periods = [first]
        while free is not None and periods[-1] < free:
            periods.append(min(free, 2 * periods[-1]))
        return periods

    def solve(self, lengths, period=None, exact=True):
        """``(period, tags, targets per connection)``; targets ``None`` for outputs; None if
        ``period`` (given) is too short.

        ``exact``: the wave windows of :func:`.timing.solve_waves` (every row held for the
        whole period, operands within ``period - 2`` subcycles of each other; ``tags`` are
        the late ends); False: exactly balanced tags by :func:`.timing.solve_tags`' greedy
        descent (the placer's estimate)."""
        edges, index = self.edges(lengths)
        n = self.nb + len(self.design.pins)
        if period is None:
            period = minimum_period(n, self.lower, self.bounds(lengths), fixed=self.start)
        nets = [self.conns[k][0] for k in index]
        targets = [None] * len(self.conns)
        if exact:
            waves = solve_waves(n, self.lower(period), edges, period, fixed=self.start,
                                equal=self.equal, nets=nets, ties=self.tie_list())
            if waves is None:
                return None
            for delay, k in zip(waves.delays.tolist(), index):
                targets[k] = delay
            self.widest = int((waves.late - waves.early).max(initial=0))
            return period, waves.late, targets
        tags = solve_tags(n, self.lower(period), edges, period, fixed=self.start, nets=nets,
                          exact=False)
        if tags is None:
            return None
        for (u, v, _, registers), k in zip(edges, index):
            targets[k] = int(tags[v] - tags[u] + registers * period)
        return period, tags, targets


def _stalled(counts):
    """Whether routing stalled crowded, given the overused wires after each iteration so far
    (:data:`STALL_ITERATIONS`)."""
    if len(counts) <= STALL_ITERATIONS:
        return False
    recent = min(counts[-STALL_ITERATIONS:])
    if recent > CROWDED_WIRES and recent > 0.9 * min(counts[:-STALL_ITERATIONS]):
        return True
    tail = TAIL_ITERATIONS          # a few wires left: no new fewest in this many
    return len(counts) > tail and min(counts[-tail:]) >= min(counts[:-tail])


def compile_on(netlist, design, width, height, region, defects, fixed, seed, progress,
                times, started, *, reroute=True, pitch=2, period=None, windows=False,
                macro=None):
    """One placement (seed ``seed``, logic slots of ``pitch``: 3 also spreads the port bits,
    :func:`.place.place`) routed, timed, padded and emitted on a ``width`` x ``height`` grid.

    :param reroute: where padding fails, route every net again with exact targets (slow).
    :param windows: wave windows for a design with flip-flops too (:class:`WaveTiming`).
    :param macro: as for :func:`compile_general`.
    :param period: subcycles per row (even), or None: the shortest the loops allow, or
        ``"any"``: the shortest of :meth:`WaveTiming.periods` at which padding succeeds on
        these routes (a design without flip-flops always pads at the last, which needs none).
    :returns: :class:`.backend.CompileResult`.
    :raises RouteFailure: when routing or padding fails (``unpadded``: the connections left
        short); :raises CompileError: for a grid that cannot hold the design.
    """
    try:
        width, height = check_grid_size(width, height)
    except ValueError as error:
        raise CompileError(str(error)) from None
    allowed = allowed_cells(width, height, region, defects)
    site = macro.site(width, height) if macro is not None else None
    if site is not None:
        allowed -= site.blocked
    graph = RoutingGraph(width, height, allowed)
    nblocks = len(design.blocks)
    if nblocks > len(allowed):
        raise CompileError(f"the design needs {nblocks} cells for its logic alone, the "
                           f"{'region' if region else 'grid'} has {len(allowed)} usable "
                           f"cells; try --size {even_up(math.ceil(math.sqrt(nblocks * 3)))}x"
                           f"{even_up(math.ceil(math.sqrt(nblocks * 3)))}")
    # Placement.
    t = time.perf_counter()
    conns = connections(design)

    def place_solve(lengths, current):
        try:
            # a greedy descent at each temperature, the LP once routed: as good as the LP
            # throughout and a third less compile time; the longest-path tags here pad as
            # often but with more cells (sequential designs, 16 seeds each, 2026-12-07)
            result = WaveTiming(design, graph, current).solve(lengths, exact=False)
        except TimingError:
            return None
        return None if result is None else [x if x is not None else lengths[k]
                                            for k, x in enumerate(result[2])]

    try:
        # no logic on a macro's port cells (their sides are its wires')
        slots = allowed - {(graph.xs[c], graph.ys[c]) for c, _ in site.inner.values()} \
            if site is not None else allowed
        placement = place(design, graph, slots, pins=fixed, seed=seed, progress=progress,
                          solve=place_solve, pitch=pitch, spread_pins=pitch > 2,
                          inner=site.inner if site is not None else None,
                          closed_lanes=site.closed if site is not None else ())
    except ValueError as error:
        raise CompileError(str(error)) from None
    times["place"] = time.perf_counter() - t
    ties = site.ties if site is not None else {}
    tied = {i: ties[(pin.port, pin.index)] for i, pin in enumerate(design.pins)
            if (pin.port, pin.index) in ties}
    timing = WaveTiming(design, graph, placement, windows, tied)
    # Routing nets.
    rnets, reserved = [], []
    for b, block in enumerate(design.blocks):
        reserved.append(placement.block_cell[b])
    for net in design.nets:
        if net.driver[0] == "block":
            c = placement.block_cell[net.driver[1]]
            sources = [4 * c + d for d in range(4)]
        elif net.driver[1] in placement.inner:
            sources = [placement.inner[net.driver[1]][1]]
        else:
            side, lane = placement.pin_lane[net.driver[1]]
            sources = [graph.lane_wire(side, lane)]
        sinks = []
        for sink, _ in net.sinks:
            if sink[0] == "block":
                sinks.append(("cell", placement.block_cell[sink[1]]))
            elif sink[1] in placement.inner:
                sinks.append(("wire", placement.inner[sink[1]][1]))
            else:
                side, lane = placement.pin_lane[sink[1]]
                sinks.append(("wire", graph.output_wire(side, lane)))
        rnets.append((sources, sinks))
    closed = [placement.block_cell[b] for b, block in enumerate(design.blocks)
              if len(block.inputs) >= 4]
    router = Router(graph, rnets, reserved, closed)
    order = sorted(range(len(rnets)), key=lambda n: -len(rnets[n][1]))
    conn_index = {(n, s): k for k, (n, s, *_rest) in enumerate(conns)}
    t = time.perf_counter()
    router.budget = ROUTE_REROUTES + ROUTE_REROUTES_PER_CONNECTION * len(conns)
    # Stage 1: no targets.
    none_targets = [[None] * len(sinks) for _, sinks in rnets]
    try:
        counts = []                 # overused wires after each iteration
        for it in range(UNTARGETED_ITERATIONS):
            over, _ = router.iterate(none_targets, order=order)
            if progress is not None:
                progress("route", it + 1, 0)
            if not over:
                break
            counts.append(len(over))
            if _stalled(counts):
                break
        if over:
            raise RouteFailure(f"routing did not converge ({len(over)} wires wanted by "
                               f"several signals on a {width} x {height} grid)",
                               overused=len(over))
        lengths = [0] * len(conns)
        for k, (n, s, *_rest) in enumerate(conns):
            lengths[k] = router.trees[n][router.goals[n][s]][0]
        unpadded = _route_cells(router, design, placement)
        times["route"] = time.perf_counter() - t
        # Stage 2: timing and exact targets.
        t = time.perf_counter()
        lmin = list(lengths)
        periods = [period] if isinstance(period, int) else timing.periods(
            lmin, any_period=period == "any")
        wires = sum(len(tree) for tree in router.trees)
        attempted = []
        for p in periods:
            # the shortest period that pads (a longer one widens every window, so fewer
            # connections need padding, :func:`.timing.solve_waves`)
            last = p == periods[-1]
            solved = timing.solve(lmin, p)
            if solved is None:
                raise RouteFailure("no timing solution")
            period, tags, targets = solved
            demand = sum(t - lmin[k] for k, t in enumerate(targets) if t is not None)
            if not last and demand > PAD_TRY_SHARE * wires:
                continue                    # far from padding: not worth the attempt
            before = router.state() if not last else None
            attempted.append(period)
            per_net = [[targets[conn_index[(n, s)]] for s in range(len(sinks))]
                       for n, (_, sinks) in enumerate(rnets)]
            padded = pad_routes(router, per_net)
            if not padded.failed or before is None:
                break
            router.restore(before)
        if progress is not None:
            progress("timing", 1, 0)
        if padded.failed and not reroute:
            raise RouteFailure(f"{len(padded.failed)} connections could not be padded to "
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
                # a loop made longer than the period allows: a longer period (SPR's
                # latency padding), else the same
                solved = timing.solve(lmin, period) or timing.solve(lmin)
                if solved is None:
                    raise RouteFailure("no timing solution")
                period, tags, targets = solved
        if padded.failed and (over or failed):
            raise RouteFailure(f"routing with balanced delays did not converge "
                                f"({len(over)} wires wanted by several signals, "
                                f"{len(failed)} connections off their wave) on a {width} x "
                                f"{height} grid")
    except TimeoutError:
        raise RouteFailure(f"routing spent its budget of reroutes on the {width} x {height} grid") from None
    except _Unroutable:
        raise RouteFailure(f"a connection cannot be routed on the {width} x {height} grid "
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
        "periods_tried": attempted, "shortest_period": periods[0],
        "widest_window": timing.widest,
        # a macro's time base: its ports' tags less their ties (:mod:`.compose`)
        "macro_time": (int(tags[timing.nb + min(timing.ties)]) - timing.ties[min(timing.ties)]
                       if timing.ties else None),
        "times": {**{k: round(v, 4) for k, v in times.items()},
                  "total": round(time.perf_counter() - started, 4)},
    }
    from .backend import CompileResult
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
    # The side each operand enters by: its route's last wire (the goal).
    entering = {}
    for n, net in enumerate(design.nets):
        for s, (sink, registers) in enumerate(net.sinks):
            if sink[0] == "block":
                entering[(sink[1], net.name, registers)] = graph.side[router.goals[n][s]]
    net_tables = {}
    for b, block in enumerate(design.blocks):
        if block.start:
            continue
        sides = [entering[(b, net, registers)] for net, registers in block.inputs]
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
            if owner < 0 or parent == -1 and net.driver[0] == "pin":
                continue                # a lane, or a macro's output inside the grid
            x, y, d = owner % width, owner // width, w % 4
            if parent == -1:
                if net.driver[0] != "block":
                    raise AssertionError("a lane net's source is its lane")
                table = 0xFFFF if design.blocks[net.driver[1]].start else net_tables[net.name]
            else:
                if graph.dest[parent] != owner:
                    raise AssertionError("broken route tree")
                table = COPY[graph.side[parent]]
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
    latency = max([t + 1 for i, t in out_tags.items() if i not in placement.inner] + [1])
    bits = {}
    for i, pin in enumerate(design.pins):
        if i in placement.inner:
            continue                    # a macro's port, not the program's
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
        if (name, "in") in bits:        # (a macro's port is not)
            ports.append({"name": name, "direction": "in", "signed": port.signed,
                          "bits": [bits[(name, "in")][i] for i in range(len(port.bits))]})
    for name, port in netlist.outputs.items():
        if (name, "out") in bits:
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
