"""Relocating a program around the bad cells of a grid (``bitgrid place``, SPEC section 10).

:func:`relocate` takes a program (a :class:`~bitgrid.config.Configuration`, optionally its
port map, :mod:`bitgrid.ports`) and a defect map (:mod:`bitgrid.defects`: every listed cell is
unusable, whatever its kind) and returns a program that uses no bad cell and keeps the
program's edge-to-edge behaviour. The strategies, tried in this order (the first three exact:
every path from an edge input to an edge output keeps its length and parity, so every used
edge output has the same value at every subcycle, whatever the bad cells do):

``unchanged``
    no bad cell holds a cell output that a used edge output depends on (through real LUT
    support, :mod:`bitgrid.analysis`): the program is returned as it is. A bad cell the
    program does not use, or uses only for outputs nothing reads, needs no change.
``detour``
    every bad cell on the program's paths holds only *wires* (cell outputs that copy one
    input): each wire chain through a bad cell, from the cell output that feeds it to the LUTs
    that read it, is re-routed through free cells along a path of exactly the same number of
    cells (so the same length and parity). The feeding LUT may be copied to another output of
    its cell, and the reading LUTs have their address bits swapped to read the side the new
    chain arrives from (a LUT that ignores that side reads it instead of the old one).
``move``
    (with a port map) the whole program moved by an offset ``(dx, dy)`` with ``dx + dy`` even
    (every cell keeps its parity, SPEC section 10) so that no used cell is bad; every used edge
    lane must stay on its side (a program with I/O on W and E moves north or south); the port
    map's lanes move with it.
``compile``
    (with a port map) re-timed, not exact per subcycle: the program's netlist
    (:func:`extract_netlist`: logic LUTs become netlist LUTs, wires become nets, loops and
    held rows flip-flops) is placed anew around the bad cells by the compiler back end
    (:func:`bitgrid.compiler.backend.compile_netlist`) with every port bit pinned to its
    lane. The design-cycle behaviour (one output row per input row, ``bitgrid eval``) is
    kept; the new port map has the back end's latency and period, and
    :attr:`Relocation.latency_change` says by how much the latency changed. The new program
    is run against the original on :data:`VERIFY_ROWS` random rows first, and refused if a
    row differs (a netlist read back wrong is never placed).

If none applies, :class:`RelocationError` says why for each strategy (a bad cell holds logic,
a lane's boundary cell is bad, no free path of the right length, no room to move, a loop the
netlist cannot hold): the caller refuses (``bitgrid place``: exit 2).

*Used* edge outputs: with a port map, the bits of its output ports; without one, every edge
output lane whose cell output is not the constant 0 LUT. Edge inputs that no used output
depends on may carry anything.
"""

import typing

from .analysis import CellOutput, DependencyGraph, EdgeInput, EdgeOutput, path_timing
from .cell import COPY
from .config import Configuration
from .defects import DefectMap
from .extract import RelocationError, _is_wire, _relevant, extract_netlist, used_outputs
from .terms import DIRECTIONS, Direction

__all__ = ["RelocationError", "Relocation", "STRATEGIES", "used_outputs", "bad_cells_in_use",
           "relocate", "extract_netlist"]

#: The strategies of :func:`relocate`, in the order they are tried.
STRATEGIES = ("unchanged", "detour", "move", "compile")
#: Random rows the ``compile`` strategy runs on the original and the re-placed program.
VERIFY_ROWS = 256
#: Most states the exact-length path search visits for one wire chain.
SEARCH_LIMIT = 200_000


class Relocation(typing.NamedTuple):
    """The result of :func:`relocate`.

    * ``config``: the relocated :class:`~bitgrid.config.Configuration` (same grid size);
    * ``portmap``: the port map moved along (None if none was given);
    * ``strategy``: the strategy that worked, one of :data:`STRATEGIES`;
    * ``changes``: human-readable lines, one per change (empty for ``unchanged``);
    * ``latency_change``: subcycles the port map's latency changed by (0 for the exact
      strategies; ``compile`` re-times);
    * ``offset``: ``(dx, dy)`` of a ``move`` (``(0, 0)`` otherwise).
    """
    config: Configuration
    portmap: typing.Any
    strategy: str
    changes: tuple
    latency_change: int = 0
    offset: tuple = (0, 0)


def bad_cells_in_use(config, defects, portmap=None):
    """The bad cells ``(x, y)`` of ``defects`` (a :class:`~bitgrid.defects.DefectMap`) that
    hold a cell output some used edge output depends on, sorted (row by row)."""
    graph = config if isinstance(config, DependencyGraph) else DependencyGraph(config)
    bad = _bad(defects, graph.width, graph.height)
    relevant = _relevant(graph, used_outputs(graph, portmap))
    return sorted({(n.x, n.y) for n in relevant if (n.x, n.y) in bad},
                  key=lambda c: (c[1], c[0]))


def _bad(defects, width, height):
    if isinstance(defects, DefectMap):
        defects.check_grid(width, height)
        return defects.bad_cells
    return frozenset(tuple(c) for c in defects)


def relocate(config, defects, *, portmap=None, strategies=STRATEGIES, progress=None):
    """Relocate ``config`` around the bad cells of ``defects`` (module docstring).

    :param config: the program, a :class:`~bitgrid.config.Configuration`.
    :param defects: a :class:`~bitgrid.defects.DefectMap` for the same grid size (or an
        iterable of cells ``(x, y)``).
    :param portmap: the program's :class:`~bitgrid.ports.PortMap` (or None).
    :param strategies: which of :data:`STRATEGIES` to try, in that order.
    :param progress: ``progress(stage, done, total)`` for the compiler back end's stages
        (``compile`` only, the long one), or None.
    :returns: a :class:`Relocation`.
    :raises RelocationError: if no strategy applies (the message gives each one's reason).
    :raises bitgrid.defects.DefectMapError: for a defect map of another grid size.
    :raises bitgrid.ports.PortMapError: for a port map of another grid size.
    """
    if not isinstance(config, Configuration):
        raise TypeError(f"relocate needs a Configuration, not {config!r}")
    unknown = set(strategies) - set(STRATEGIES)
    if unknown:
        raise ValueError(f"strategies are among {', '.join(STRATEGIES)}, not "
                         f"{', '.join(sorted(unknown))}")
    if portmap is not None:
        portmap.check_grid(config.width, config.height)
    graph = DependencyGraph(config)
    bad = _bad(defects, config.width, config.height)
    outputs = used_outputs(graph, portmap)
    in_use = bad_cells_in_use(graph, bad, portmap)
    if not in_use and "unchanged" in strategies:
        return Relocation(config.copy(), portmap, "unchanged", ())
    reasons = []
    if "detour" in strategies:
        try:
            new, changes = _detour(config, bad, outputs)
        except RelocationError as error:
            reasons.append(f"detour: {error}")
        else:
            _check_same_timing(config, new, outputs)
            return Relocation(new, portmap, "detour", tuple(changes))
    if "move" in strategies:
        if portmap is None:
            reasons.append("move: moving the program changes its lanes; give its port map "
                           "(--ports) so that the lanes move with it")
        else:
            try:
                return _move(config, graph, bad, outputs, portmap)
            except RelocationError as error:
                reasons.append(f"move: {error}")
    if "compile" in strategies:
        if portmap is None:
            reasons.append("compile: re-placing needs the program's port map (--ports)")
        else:
            try:
                return _compile(config, portmap, bad, progress)
            except RelocationError as error:
                reasons.append(f"compile: {error}")
    cells = ", ".join(f"({x}, {y})" for x, y in in_use)
    raise RelocationError(f"no relocation around the bad cell{'s' * (len(in_use) != 1)} "
                          f"{cells} that the program uses: " + "; ".join(reasons))


def _check_same_timing(old, new, outputs):
    before, after = path_timing(old, outputs), path_timing(new, outputs)
    if before.paths != after.paths or before.sequential != after.sequential:
        raise AssertionError("a detour changed the path timing; this is a bug in "
                             "bitgrid.relocate")


# Detours ---------------------------------------------------------------------------------------

def _chain(graph, relevant, outputs, node):
    """The maximal wire chain through ``node``: ``(source, wires, readers)``: ``source`` feeds
    ``wires[0]``; each wire feeds only the next one; ``readers`` read ``wires[-1]`` (cell
    outputs of one cell, or one edge output)."""
    def readers(n):
        return [r for r in graph.readers(n) if r in relevant or r in outputs]

    wires = [node]
    while True:
        (source,) = graph.sources(wires[0])
        if isinstance(source, CellOutput) and _is_wire(graph, source) \
                and readers(source) == [wires[0]] and source not in wires:
            wires.insert(0, source)
            continue
        break
    while True:
        following = readers(wires[-1])
        if len(following) == 1 and isinstance(following[0], CellOutput) \
                and _is_wire(graph, following[0]) and following[0] not in wires:
            wires.append(following[0])
            continue
        break
    return source, wires, readers(wires[-1])


def _detour(config, bad, outputs):
    """Re-route every wire chain through a bad cell (module docstring): ``(config, changes)``.

    :raises RelocationError: if a bad cell holds logic, or a chain has no free path of its
        length."""
    config = config.copy()
    changes = []
    outputs = set(outputs)
    for _ in range(16 * len(bad) + 16):
        graph = DependencyGraph(config)
        relevant = _relevant(graph, outputs)
        hits = sorted(n for n in relevant if (n.x, n.y) in bad)
        if not hits:
            return config, changes
        logic = [n for n in hits if not _is_wire(graph, n)]
        if logic:
            raise RelocationError(f"bad cell ({logic[0].x}, {logic[0].y}) holds logic "
                                  f"(output {logic[0].d.letter} is no wire), which a detour "
                                  "cannot move")
        source, wires, readers = _chain(graph, relevant, outputs, hits[0])
        config = _reroute(config, graph, relevant, bad, source, wires, readers, changes)
    raise RelocationError("the detours did not converge")


def _reroute(config, graph, relevant, bad, source, wires, readers, changes):
    chain = set(wires)
    others = {}             # cell -> relevant outputs not in the chain
    for n in relevant:
        if n not in chain:
            others.setdefault((n.x, n.y), set()).add(n.d)
    width, height = graph.width, graph.height

    def reads(cell, side):
        """True if a relevant output of ``cell`` outside the chain reads input ``side``."""
        return any(side in graph.support(cell[0], cell[1], d) for d in others.get(cell, ()))

    def usable(cell, entering, leaving):
        if cell in bad or not (0 <= cell[0] < width and 0 <= cell[1] < height):
            return False
        return leaving not in others.get(cell, ()) and not reads(cell, entering)

    first, last = wires[0], wires[-1]
    for node, lane in ((first, source), (last, readers[0])):
        if not isinstance(lane, CellOutput) and (node.x, node.y) in bad:
            where = "enters" if isinstance(lane, EdgeInput) else "leaves"
            raise RelocationError(f"bad cell ({node.x}, {node.y}) is where {lane} {where} the "
                                  "grid: a lane's boundary cell cannot be avoided (put the "
                                  "port on another lane)")
    # Where the new chain may start: (first cell, entering side, the source's new output).
    starts = []
    if isinstance(source, EdgeInput):
        starts.append(((first.x, first.y), Direction(source.side), None))
    else:
        p = (source.x, source.y)
        for d in DIRECTIONS:
            if d != source.d and d in others.get(p, ()):
                continue
            if d != source.d and CellOutput(p[0], p[1], d) in chain:
                continue
            dx, dy = d.step
            starts.append(((p[0] + dx, p[1] + dy), d.opposite, d))
    # Where it may end: {last cell: [(leaving side, reader side)]}.
    ends = {}
    if len(readers) == 1 and isinstance(readers[0], EdgeOutput):
        ends[(last.x, last.y)] = [(Direction(last.d), None)]
        target_cell = None
    else:
        target_cell = (readers[0].x, readers[0].y)
        old_side = Direction(last.d).opposite
        for k in DIRECTIONS:
            if k != old_side and reads(target_cell, k):
                continue
            dx, dy = k.step
            ends.setdefault((target_cell[0] + dx, target_cell[1] + dy), []).append(
                (k.opposite, k))
    path = _find_path(starts, ends, len(wires), usable, bad, target_cell, source)
    if path is None:
        x, y = next((n.x, n.y) for n in wires if (n.x, n.y) in bad)
        raise RelocationError(f"no free path of {len(wires)} cells for the wire "
                              f"{wires[0]} .. {wires[-1]} through bad cell ({x}, {y}) "
                              "(a path must keep its length; free the cells around it or "
                              "leave room beside the wire)")
    cells, entering, leaving, source_side, reader_side = path
    # Apply: remove the old wires, write the new ones, move the source, remap the readers.
    for n in wires:
        tables = list(config[n.x, n.y])
        tables[n.d] = 0
        config[n.x, n.y] = tables
    for cell, came, out in zip(cells, entering, leaving):
        tables = list(config[cell])
        tables[out] = COPY[came]
        config[cell] = tables
    if isinstance(source, CellOutput) and source_side != source.d:
        tables = list(config[source.x, source.y])
        tables[source_side] = tables[source.d]
        only_reader = [r for r in graph.readers(source) if r in relevant] == [wires[0]]
        if only_reader:
            tables[source.d] = 0
        config[source.x, source.y] = tables
    old_side = Direction(wires[-1].d).opposite
    if target_cell is not None and reader_side != old_side:
        tables = list(config[target_cell])
        for r in readers:
            tables[r.d] = _swap_inputs(tables[r.d], old_side, reader_side)
        config[target_cell] = tables
    route = " ".join(f"({x},{y})" for x, y in cells)
    changes.append(f"wire {wires[0]} .. {wires[-1]} ({len(wires)} cells) re-routed through "
                   f"{route}")
    return config


def _swap_inputs(lut, a, b):
    """``lut`` with address bits ``a`` and ``b`` exchanged (SPEC section 3)."""
    result = 0
    for address in range(16):
        bit_a, bit_b = address >> a & 1, address >> b & 1
        swapped = address & ~((1 << a) | (1 << b)) | bit_a << b | bit_b << a
        result |= ((lut >> swapped) & 1) << address
    return result


def _find_path(starts, ends, length, usable, bad, target_cell, source):
    """A self-avoiding path of exactly ``length`` cells from a start to an end (depth-first,
    pruned by distance, at most :data:`SEARCH_LIMIT` steps): ``(cells, entering sides,
    leaving sides, source side, reader side)`` or None."""
    end_cells = list(ends)
    blocked = {target_cell} if target_cell else set()
    if isinstance(source, CellOutput):
        blocked.add((source.x, source.y))

    def distance(cell):
        return min(abs(cell[0] - e[0]) + abs(cell[1] - e[1]) for e in end_cells)

    budget = [SEARCH_LIMIT]

    def search(cells, came, went):
        """Extend the path; returns ``(reader_side,)`` once complete, else None."""
        budget[0] -= 1
        if budget[0] < 0:
            return None
        here = cells[-1]
        if len(cells) == length:
            for leaving, reader_side in ends.get(here, ()):
                if leaving != came[-1] and usable(here, came[-1], leaving):
                    went.append(leaving)
                    return (reader_side,)
            return None
        remaining = length - len(cells)
        for leaving in DIRECTIONS:
            if leaving == came[-1] or not usable(here, came[-1], leaving):
                continue
            dx, dy = leaving.step
            following = (here[0] + dx, here[1] + dy)
            if following in cells or following in blocked or following in bad \
                    or distance(following) > remaining - 1:
                continue
            cells.append(following)
            came.append(leaving.opposite)
            went.append(leaving)
            found = search(cells, came, went)
            if found is not None:
                return found
            cells.pop()
            came.pop()
            went.pop()
        return None

    for cell, entering, source_side in starts:
        if cell in blocked or cell in bad or distance(cell) > length - 1:
            continue
        cells, came, went = [cell], [entering], []
        found = search(cells, came, went)
        if found is not None:
            return cells, came, went, source_side, found[0]
        if budget[0] < 0:
            return None
    return None


# Moves -----------------------------------------------------------------------------------------

def _move(config, graph, bad, outputs, portmap):
    relevant = _relevant(graph, outputs)
    cells = {(n.x, n.y) for n in relevant}
    used_sides = {Direction(b.side) for p in portmap.ports for b in p.bits}
    width, height = config.width, config.height
    xs = [x for x, _ in cells] or [0]
    ys = [y for _, y in cells] or [0]
    candidates = []
    for dy in range(-min(ys), height - max(ys)):
        for dx in range(-min(xs), width - max(xs)):
            if (dx + dy) % 2 or (dx, dy) == (0, 0):
                continue
            if dx and used_sides & {Direction.W, Direction.E}:
                continue
            if dy and used_sides & {Direction.N, Direction.S}:
                continue
            candidates.append((abs(dx) + abs(dy), dx, dy))
    for _, dx, dy in sorted(candidates):
        if any((x + dx, y + dy) in bad for x, y in cells):
            continue
        moved = Configuration(width, height)
        for y in range(height):
            for x in range(width):
                if (x, y) in cells or any(config[x, y]):
                    if 0 <= x + dx < width and 0 <= y + dy < height \
                            and (x + dx, y + dy) not in bad:
                        moved[x + dx, y + dy] = config[x, y]
        if not _same_after_move(graph, DependencyGraph(moved), relevant, outputs, dx, dy):
            continue

        def lane(port, bit):
            step = dy if bit.side in (Direction.W, Direction.E) else dx
            return bit.side, bit.lane + step, bit.skew

        new_map = portmap.map_bits(lane)
        return Relocation(moved, new_map, "move",
                          (f"program moved by ({dx}, {dy}); its port map's lanes moved "
                           "with it",), 0, (dx, dy))
    raise RelocationError("no offset with x + y even keeps every used cell off the bad cells "
                          "and every used lane on its side")


def _shift(node, dx, dy):
    if isinstance(node, CellOutput):
        return CellOutput(node.x + dx, node.y + dy, node.d)
    lane = node.lane + (dy if node.side in (Direction.W, Direction.E) else dx)
    return type(node)(node.side, lane)


def _same_after_move(old, new, relevant, outputs, dx, dy):
    """True if every used output and every cell output it depends on reads, after the move,
    exactly the moved nodes it read before (the same LUTs over the same sources)."""
    for node in list(relevant) + list(outputs):
        moved = _shift(node, dx, dy)
        if isinstance(moved, CellOutput) and not new.inside(moved.x, moved.y):
            return False
        if isinstance(moved, EdgeOutput) and new.boundary_cell(moved.side, moved.lane) != \
                _shift_cell(old.boundary_cell(node.side, node.lane), dx, dy):
            return False
        before = [_shift(s, dx, dy) for s in old.sources(node)]
        if list(new.sources(moved)) != before:
            return False
    return True


def _shift_cell(cell, dx, dy):
    return cell[0] + dx, cell[1] + dy


# Re-placing through the compiler back end ------------------------------------------------------

def _compile(config, portmap, bad, progress=None):
    """Extract the netlist and place it anew around ``bad`` with the compiler back end, every
    port bit pinned to its lane: exact per design cycle (row), re-timed."""
    netlist = extract_netlist(config, portmap)
    try:
        from .compiler.backend import compile_netlist
        from .compiler.errors import CompileError
    except ImportError as error:                    # pragma: no cover - a partial install
        raise RelocationError(f"the compiler back end is not available ({error})") from None
    defects = DefectMap(config.width, config.height,
                        [{"x": x, "y": y, "kind": "dead"} for x, y in sorted(bad)])
    pins = {port.name: [(bit.side, bit.lane) for bit in port.bits] for port in portmap.ports}
    try:
        result = compile_netlist(netlist, width=config.width, height=config.height,
                                 defects=defects, pins=pins, progress=progress)
    except CompileError as error:
        # The compiler's advice to try a larger --size does not apply here: the grid is the
        # chip's, and bitgrid place has no --size.
        message = str(error)
        for advice in ("; try a larger --size or region", " or a larger --size or region",
                       "; try a larger --size"):
            message = message.replace(advice, "")
        raise RelocationError(message) from None
    except ValueError as error:         # a port map or netlist the back end could not make
        raise RelocationError(f"the compiler back end failed: {error}") from None
    new = result.portmap
    _check_same_rows(config, portmap, result.config, new)
    change = new.latency - portmap.latency
    cells = result.report.get("cells", {}).get("total")
    line = (f"re-placed by the compiler back end ({len(netlist.luts)} LUTs"
            + (f", {cells} cells" if cells is not None else "")
            + f"), every port on its lane; latency {portmap.latency} -> {new.latency} "
            f"({change:+d} subcycles), period {portmap.period} -> {new.period}")
    return Relocation(result.config, new, "compile", (line,), change)


def _check_same_rows(config, portmap, new_config, new_portmap, rows=VERIFY_ROWS):
    """The re-placed program against the original on ``rows`` random rows (``bitgrid eval``
    on the fast emulator, both from reset): the netlist read back and compiled anew must give
    every output row the original gives.

    :raises RelocationError: naming the first row and port that differ (the netlist read
        back is not the program's; the program is refused rather than relocated wrongly).
    """
    import random
    from .evaluate import evaluate
    rng = random.Random(0)
    stimulus = [{port.name: port.minimum + rng.getrandbits(port.width) for port in
                 portmap.inputs} for _ in range(rows)]
    before = evaluate(config, portmap, stimulus, target="fast")
    after = evaluate(new_config, new_portmap, stimulus, target="fast")
    for k, (old, new) in enumerate(zip(before, after)):
        for name in old:
            if old[name] != new[name]:
                raise RelocationError(
                    f"the program re-placed from the netlist read back gives {name} = "
                    f"{new[name]} on random row {k}, the original {old[name]}: bitgrid could "
                    "not read this program's netlist exactly; please report it")
