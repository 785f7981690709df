"""Walls between regions of a program: the isolation proof and the wall builder (SPEC section
10).

A *region* is a rectangle of cells ``x0,y0,x1,y1``, corners inclusive (:class:`Region`). What
a region *is* (its sources) and what *reads* it (its sinks), for the proof:

* sources of region R: the outputs of R's cells and the edge input lanes entering R (those
  whose boundary cell is in R);
* sinks of region R: the outputs of R's cells and the edge output lanes next to R.

:func:`check_isolation` proves from the LUTs alone, through their real support
(:class:`bitgrid.analysis.DependencyGraph`, never a cell's position or intent), that no sink
of one region depends on a source of another region, except through declared *ports*: nodes
of the dependency graph that are allowed to carry a signal across (a cell output such as
``5,3:E``, or an edge lane). Paths through a port are not leaks. With one region, the other
is the rest of the grid (every cell outside it and every edge lane not entering or leaving
it), in both directions. With several regions, each ordered pair is checked; cells outside all
regions (walls, shared routing) belong to none, and a path may run through them. A node never
depends on anything along a path that does not exist in the graph, at any subcycle, whatever
the state after reset (SPEC section 4): so an empty result is a proof.

Regions must lie inside the grid and must not overlap.

:func:`build_wall` surrounds a region with a ring of all-zero cells (SPEC section 3: the
simplest wall) and sets its declared ports: a port ``x,y:D`` on the ring is a pass cell whose
output ``D`` copies input ``D.opposite`` (the signal crosses the wall straight on). It refuses
a ring that is not free (a ring cell in use, other than the port cells).

Port syntax (:func:`parse_port`): ``X,Y:D`` (output D of cell (X, Y)), ``in:W3`` or
``W_in[3]`` (edge input lane 3 of side W), ``out:E2`` or ``E_out[2]`` (edge output lane),
``W3`` (both lanes W3).
"""

import re
import typing

from .analysis import CellOutput, DependencyGraph, EdgeInput, EdgeOutput, format_path
from .cell import COPY
from .terms import DIRECTIONS, Direction, Region, parse_side, side_lanes
from .terms import parse_region as _parse_region

__all__ = ["IsolationError", "Region", "Leak", "parse_region", "check_region", "parse_port",
           "check_isolation", "wall_ring", "build_wall", "format_leak", "paste"]


class IsolationError(ValueError):
    """Bad input to the isolation proof or the wall builder: a region outside the grid, two
    regions overlapping, a port that names nothing, a wall ring that is not free."""


def parse_region(text):
    """A :class:`~bitgrid.terms.Region` from ``x0,y0,x1,y1`` (corners inclusive, in either
    order: :func:`bitgrid.terms.parse_region`).

    :raises IsolationError: ``region '1,2,3' is not x0,y0,x1,y1 ...``."""
    try:
        return _parse_region(text)
    except ValueError as error:
        raise IsolationError(str(error)) from None


def check_region(region, width, height):
    """``region`` if it lies inside a ``width`` x ``height`` grid.

    :raises IsolationError: naming the region and the grid."""
    if not region.inside(width, height):
        raise IsolationError(f"region {region} does not lie inside the {width} x {height} "
                             "grid (x0,y0,x1,y1 with x0 <= x1 < width, y0 <= y1 < height)")
    return region


_CELL_PORT = re.compile(r"^\s*(\d+)\s*,\s*(\d+)\s*:\s*([NESWnesw])\s*$")
_LANE_PORT = re.compile(r"^\s*(?:(in|out)\s*:\s*)?([NESWnesw])\s*(\d+)\s*$", re.IGNORECASE)
_BRACKET_PORT = re.compile(r"^\s*([NESWnesw])_(in|out)\[(\d+)\]\s*$", re.IGNORECASE)


def parse_port(text, width, height):
    """The dependency-graph nodes named by a port (module docstring), a tuple:
    ``"5,3:E"`` -> ``(CellOutput(5, 3, E),)``; ``"in:W3"``/``"W_in[3]"`` -> ``(EdgeInput(W,
    3),)``; ``"out:E2"``/``"E_out[2]"`` -> ``(EdgeOutput(E, 2),)``; ``"W3"`` -> both lanes.

    :raises IsolationError: for text of none of these forms, or a cell or lane outside a
        ``width`` x ``height`` grid."""
    match = _CELL_PORT.match(str(text))
    if match:
        x, y, d = int(match[1]), int(match[2]), parse_side(match[3])
        if not (x < width and y < height):
            raise IsolationError(f"port {text!r}: cell ({x}, {y}) is outside the {width} x "
                                 f"{height} grid")
        return (CellOutput(x, y, d),)
    match = _LANE_PORT.match(str(text))
    if match:
        kind, side, lane = (match[1] or "").lower(), parse_side(match[2]), int(match[3])
    else:
        match = _BRACKET_PORT.match(str(text))
        if not match:
            raise IsolationError(f"port {text!r} is not X,Y:D (a cell output, e.g. 5,3:E), "
                                 "in:SIDE LANE or out:SIDE LANE (an edge lane, e.g. in:W3, "
                                 "out:E2, W_in[3]) or SIDE LANE (both lanes, e.g. W3)")
        side, kind, lane = parse_side(match[1]), match[2].lower(), int(match[3])
    count = side_lanes(side, width, height)
    if lane >= count:
        raise IsolationError(f"port {text!r}: side {side.letter} has lanes 0..{count - 1}")
    nodes = []
    if kind in ("", "in"):
        nodes.append(EdgeInput(side, lane))
    if kind in ("", "out"):
        nodes.append(EdgeOutput(side, lane))
    return tuple(nodes)


class Leak(typing.NamedTuple):
    """A dependency across a wall: ``reader`` (the region whose sink depends, a
    :class:`Region`, or None for the rest of the grid) depends on ``source`` (likewise) along
    ``path`` (nodes of the dependency graph in signal order: ``path[0]`` a source of
    ``source``, ``path[-1]`` a sink of ``reader``)."""
    source: typing.Optional[Region]
    reader: typing.Optional[Region]
    path: tuple


def _name(region, regions):
    if region is None:
        return "the rest of the grid"
    return f"region {regions.index(region) + 1} ({region})"


def format_leak(leak, regions):
    """One line: ``region 1 (0,0,3,7) depends on the rest of the grid: W_in[3] -> (0,3).E``."""
    cells = [node for node in leak.path if isinstance(node, CellOutput)]
    return (f"{_name(leak.reader, regions)} depends on {_name(leak.source, regions)} through "
            f"{len(cells)} cell output{'s' * (len(cells) != 1)}: {format_path(leak.path)}")


def _owner(graph, node, regions):
    """The region of a node (for an edge lane: of its boundary cell), or None."""
    if isinstance(node, CellOutput):
        xy = (node.x, node.y)
    else:
        xy = graph.boundary_cell(node.side, node.lane)
    for region in regions:
        if xy in region:
            return region
    return None


def _check_regions(regions, width, height):
    regions = [parse_region(r) for r in regions]
    if not regions:
        raise IsolationError("give at least one region (x0,y0,x1,y1)")
    for region in regions:
        check_region(region, width, height)
    for i, a in enumerate(regions):
        for b in regions[i + 1:]:
            if a.overlaps(b):
                raise IsolationError(f"regions {a} and {b} overlap; regions must be disjoint")
    return regions


def _check_ports(ports, width, height):
    nodes = set()
    for port in ports:
        if isinstance(port, str):
            nodes.update(parse_port(port, width, height))
        elif isinstance(port, (CellOutput, EdgeInput, EdgeOutput)):
            nodes.add(port)
        else:
            raise IsolationError(f"a port is a string such as '5,3:E' or a node of "
                                 f"bitgrid.analysis, not {port!r}")
    return nodes


def check_isolation(config, regions, ports=()):
    """Prove that ``regions`` of ``config`` are isolated from each other except through
    ``ports`` (module docstring).

    :param config: a :class:`~bitgrid.config.Configuration` (or a
        :class:`~bitgrid.analysis.DependencyGraph` of one).
    :param regions: :class:`Region` objects, 4-tuples or ``"x0,y0,x1,y1"`` strings.
    :param ports: port strings (:func:`parse_port`) or graph nodes.
    :returns: a list of :class:`Leak`, at most one per ordered pair (reader, source), each
        along a shortest leaking path; empty if the regions are isolated.
    :raises IsolationError: for a region outside the grid, overlapping regions, a bad port.
    """
    graph = config if isinstance(config, DependencyGraph) else DependencyGraph(config)
    regions = _check_regions(regions, graph.width, graph.height)
    blocked = _check_ports(ports, graph.width, graph.height)
    cells = [CellOutput(x, y, d) for y in range(graph.height) for x in range(graph.width)
             for d in DIRECTIONS]
    sources, sinks = {}, {}
    for node in cells + graph.edge_inputs():
        sources.setdefault(_owner(graph, node, regions), []).append(node)
    for node in cells + graph.edge_outputs():
        sinks.setdefault(_owner(graph, node, regions), []).append(node)
    # Pairs (source, reader): every ordered pair of regions; with one region also the rest.
    groups = list(regions) + ([None] if len(regions) == 1 else [])
    leaks = []
    for source in groups:
        readers = [g for g in groups if g != source]
        parents = _search(graph, sources.get(source, ()), blocked)
        for reader in readers:
            found = [node for node in sinks.get(reader, ()) if node in parents]
            if not found:
                continue
            target = min(found, key=lambda node: (parents[node][1], node.__class__.__name__,
                                                  str(node)))
            path = [target]
            while parents[path[-1]][0] is not None:
                path.append(parents[path[-1]][0])
            leaks.append(Leak(source, reader, tuple(path[::-1])))
    return leaks


def _search(graph, starts, blocked):
    """Breadth-first search along dependencies from ``starts``, never entering ``blocked``:
    ``{node: (parent, depth)}``. The start nodes themselves are not entered from outside (a
    path ends at the first sink of another group)."""
    parents = {}
    frontier = []
    for node in starts:
        if node not in blocked and not graph.is_constant(node):
            parents[node] = (None, 0)
            frontier.append(node)
    depth = 0
    while frontier:
        depth += 1
        following = []
        for node in frontier:
            for other in graph.readers(node):
                if other not in parents and other not in blocked:
                    parents[other] = (node, depth)
                    following.append(other)
        frontier = following
    return parents


def wall_ring(region, width, height):
    """The cells of the one-cell ring around ``region`` inside a ``width`` x ``height`` grid
    (corners included; sides on the grid's edge have none), row by row."""
    region = parse_region(region)
    ring = []
    for y in range(region.y0 - 1, region.y1 + 2):
        for x in range(region.x0 - 1, region.x1 + 2):
            if (x, y) in region or not (0 <= x < width and 0 <= y < height):
                continue
            ring.append((x, y))
    return ring


def build_wall(config, region, ports=()):
    """A copy of ``config`` with a wall of all-zero cells around ``region`` and its ports set
    (module docstring).

    :param region: a :class:`Region`, a 4-tuple or ``"x0,y0,x1,y1"``.
    :param ports: cell-output ports ``"X,Y:D"`` (or :class:`~bitgrid.analysis.CellOutput`)
        on the ring: output D of that ring cell copies its input ``D.opposite``; edge-lane
        ports are allowed and need no cell.
    :returns: the new :class:`~bitgrid.config.Configuration` (``config`` is not changed).
    :raises IsolationError: for a region outside the grid, a cell port off the ring, or a ring
        cell in use (the message names the first such cell): move the program or choose a
        region with a free ring.
    """
    width, height = config.width, config.height
    (region,) = _check_regions([region], width, height)
    ring = wall_ring(region, width, height)
    crossings = {}
    for node in _check_ports(ports, width, height):
        if not isinstance(node, CellOutput):
            continue
        if (node.x, node.y) not in ring:
            raise IsolationError(f"port {node} is not on the wall ring around region "
                                 f"{region}; a wall port is a cell output of the ring")
        crossings.setdefault((node.x, node.y), []).append(Direction(node.d))
    result = config.copy()
    for x, y in ring:
        wanted = [0, 0, 0, 0]
        for d in crossings.get((x, y), ()):
            wanted[d] = COPY[d.opposite]
        current = list(config[x, y])
        if current != [0, 0, 0, 0] and current != wanted:
            raise IsolationError(f"the wall ring around region {region} is not free: cell "
                                 f"({x}, {y}) is in use (LUTs {', '.join(f'0x{v:04x}' for v in current)}); "
                                 "move the program or choose a region with a free ring")
        result[x, y] = wanted
    return result


def paste(config, part, x, y):
    """A copy of ``config`` with the configuration ``part`` written at offset ``(x, y)`` (its
    cell (0, 0) at (x, y)). The offset must keep the parity pattern (``x + y`` even, SPEC
    sections 4 and 10).

    :raises IsolationError: for an odd offset or a part that does not fit."""
    if (x + y) % 2:
        raise IsolationError(f"offset ({x}, {y}) swaps every cell's parity (SPEC section 10); "
                             "use an offset with x + y even")
    if x < 0 or y < 0 or x + part.width > config.width or y + part.height > config.height:
        raise IsolationError(f"a {part.width} x {part.height} program at ({x}, {y}) does not "
                             f"fit the {config.width} x {config.height} grid")
    result = config.copy()
    result.luts[y:y + part.height, x:x + part.width] = part.luts
    return result
