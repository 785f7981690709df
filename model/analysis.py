"""Static analysis of a configuration: real LUT support, the dependency graph, path timing
and loops.

Everything here is computed from the LUTs alone (SPEC sections 2 to 4), never from where a cell
sits or what it was meant to do:

* :func:`support`: the inputs a 16-bit LUT really depends on. With the address
  ``a = N | E<<1 | S<<2 | W<<3`` (SPEC section 3), the LUT depends on input ``k`` if flipping
  bit ``k`` of the address changes the output for some address.
* :class:`DependencyGraph`: nodes are cell outputs :class:`CellOutput` ``(x, y, d)``, edge
  input lanes :class:`EdgeInput` ``(side, lane)`` and edge output lanes :class:`EdgeOutput`
  ``(side, lane)``. Cell output ``(x, y, d)`` reads input ``k`` only if ``k`` is in the real
  support of LUT ``d``; input ``k`` of ``(x, y)`` is output ``k.opposite`` of the neighbour on
  side ``k``, or the edge input lane at the boundary (SPEC section 2). Edge output ``(d, i)``
  reads output ``d`` of its boundary cell. No edge of the graph exists without a real
  dependency, so a node that cannot reach another cannot influence it, at any subcycle.
* :func:`path_timing`: for each edge output, the set of ``(edge input, length)`` pairs of the
  paths between them, and the loops (sequential feedback).

Path length (SPEC section 4, and ``bitgrid.ports``' latency): the number of subcycles from
applying an input (held from subcycle 0 on) until the output carries its effect. A path
``input -> c1 -> ... -> ck -> output`` through ``k`` cells has length ``k + parity(c1)``: the
first cell reads the lane on the first subcycle of its parity (0 or 1), and each further cell,
of the other parity, one subcycle later. So the effect is readable after ``length`` subcycles
have run (index ``length - 1`` of a list of per-subcycle edge outputs). For an input changing at
subcycle ``start`` the length is ``k + (parity(c1) - start) % 2`` (:meth:`Timing.lengths`).
Neighbouring cells always differ in parity, so every path's timing is exact: an output depends
on the value the input had ``length`` subcycles before (the last ``length`` values, for a
held input: ``length`` and ``length + 1`` alternate with the parity of the reading subcycle).

Loops: the strongly connected sets of cell outputs with a cycle (a signal that feeds back on
itself, sequential state). Every cycle has an even length (the grid is bipartite in parity).
"""

import math
import typing
from collections import deque

import numpy as np

from .config import Configuration
from .terms import DIRECTIONS, Direction, E, N, S, W, lane_parity_offset, parity

__all__ = ["support", "support_masks", "CellOutput", "EdgeInput", "EdgeOutput",
           "DependencyGraph", "Loop", "Timing", "path_timing", "format_path"]

#: For input k: the 16-bit mask of the addresses with address bit k = 0.
_LOW = tuple(sum(1 << a for a in range(16) if not (a >> k) & 1) for k in range(4))


def support(lut):
    """The inputs a LUT really depends on, as a ``frozenset`` of
    :class:`~bitgrid.terms.Direction` (SPEC section 3: address ``a = N | E<<1 | S<<2 | W<<3``).

    ``support(0xAAAA) == {N}`` (copy N), ``support(0x6666) == {N, E}`` (N xor E),
    ``support(0) == support(0xFFFF) == frozenset()`` (constants).

    :raises ValueError: if ``lut`` is not an integer in ``0 .. 0xFFFF``.
    """
    if isinstance(lut, bool) or not isinstance(lut, (int, np.integer)) or not 0 <= lut <= 0xFFFF:
        raise ValueError(f"A LUT is a 16-bit integer, not {lut!r}")
    lut = int(lut)
    return frozenset(d for d in DIRECTIONS
                     if (lut & _LOW[d]) != ((lut >> (1 << d)) & _LOW[d]))


def support_masks(luts):
    """Vectorised :func:`support`: for an array of 16-bit LUTs (any shape, e.g. a
    configuration's ``luts`` of shape ``(H, W, 4)``) the array of 4-bit masks of the same
    shape (``uint8``), bit ``k`` set if the LUT depends on input ``k``."""
    luts = np.asarray(luts).astype(np.uint32)
    masks = np.zeros(luts.shape, dtype=np.uint8)
    for k in range(4):
        low = luts & _LOW[k]
        high = (luts >> (1 << k)) & _LOW[k]
        masks |= ((low != high).astype(np.uint8) << k)
    return masks


class CellOutput(typing.NamedTuple):
    """Output ``d`` (a :class:`~bitgrid.terms.Direction`) of cell ``(x, y)``."""
    x: int
    y: int
    d: Direction

    def __str__(self):
        return f"({self.x},{self.y}).{Direction(self.d).letter}"


class EdgeInput(typing.NamedTuple):
    """Edge input lane ``lane`` on ``side`` (``W_in[3]`` feeds input W of cell ``(0, 3)``).
    ``kind`` tells it from the :class:`EdgeOutput` of the same lane (never equal)."""
    side: Direction
    lane: int
    kind: str = "in"

    def __str__(self):
        return f"{Direction(self.side).letter}_in[{self.lane}]"


class EdgeOutput(typing.NamedTuple):
    """Edge output lane ``lane`` on ``side`` (``E_out[3]`` is output E of ``(W-1, 3)``)."""
    side: Direction
    lane: int
    kind: str = "out"

    def __str__(self):
        return f"{Direction(self.side).letter}_out[{self.lane}]"


_STEP = tuple(d.step for d in DIRECTIONS)
_OPPOSITE = tuple(d.opposite for d in DIRECTIONS)


def format_path(path):
    """A path (a list of nodes, signal order) as text: ``W_in[3] -> (0,3).E -> (1,3).N``."""
    return " -> ".join(str(node) for node in path)


class DependencyGraph:
    """The dependency graph of a :class:`~bitgrid.config.Configuration` (module docstring).

    The graph is implicit: :meth:`sources` and :meth:`readers` compute a node's neighbours
    from the support masks (:func:`support_masks`) on demand, so building it costs one numpy
    pass over the LUTs, for any grid size.

    :param config: the configuration (read once; later changes to it are not seen).
    :raises TypeError: if ``config`` is not a Configuration.
    """

    def __init__(self, config):
        if not isinstance(config, Configuration):
            raise TypeError(f"DependencyGraph needs a Configuration, not {config!r}")
        self.width, self.height = config.width, config.height
        self.luts = config.luts.copy()
        #: ``masks[y, x, d]``: the support of LUT ``d`` of cell ``(x, y)`` as a 4-bit mask.
        self.masks = support_masks(self.luts)
        self._masks = self.masks.tolist()       # the same, as lists (fast to index)

    # Geometry ---------------------------------------------------------------------------------
    def inside(self, x, y):
        return 0 <= x < self.width and 0 <= y < self.height

    def boundary_cell(self, side, lane):
        """The cell ``(x, y)`` at lane ``lane`` of ``side`` (SPEC section 2)."""
        side = int(side)
        if side == 0:
            return lane, 0
        if side == 2:
            return lane, self.height - 1
        if side == 3:
            return 0, lane
        return self.width - 1, lane

    def lane_of(self, x, y, side):
        """The edge lane on ``side`` next to cell ``(x, y)``, or None if the cell is not on
        that side's boundary."""
        side = int(side)
        if side == 0 and y == 0 or side == 2 and y == self.height - 1:
            return x
        if side == 3 and x == 0 or side == 1 and x == self.width - 1:
            return y
        return None

    def driver(self, x, y, k):
        """The node feeding input ``k`` of cell ``(x, y)``: output ``k.opposite`` of the
        neighbour on side ``k``, or the edge input lane at the boundary."""
        dx, dy = _STEP[k]
        nx, ny = x + dx, y + dy
        if 0 <= nx < self.width and 0 <= ny < self.height:
            return CellOutput(nx, ny, _OPPOSITE[k])
        return EdgeInput(DIRECTIONS[k], self.lane_of(x, y, k))

    def support(self, x, y, d):
        """The real support of LUT ``d`` of cell ``(x, y)``: a frozenset of Directions."""
        mask = self._masks[y][x][d]
        return frozenset(k for k in DIRECTIONS if mask >> k & 1)

    def is_constant(self, node):
        """True for a cell output whose LUT depends on no input."""
        return isinstance(node, CellOutput) and not self._masks[node.y][node.x][node.d]

    # Edges ------------------------------------------------------------------------------------
    def sources(self, node):
        """The nodes ``node`` reads directly, a tuple (N, E, S, W order of the inputs): the
        drivers of a cell output's real support; an edge output's boundary cell output; none
        for an edge input."""
        if isinstance(node, CellOutput):
            x, y = node.x, node.y
            mask = self._masks[y][x][node.d]
            return tuple(self.driver(x, y, k) for k in DIRECTIONS if mask >> k & 1)
        if isinstance(node, EdgeOutput):
            x, y = self.boundary_cell(node.side, node.lane)
            return (CellOutput(x, y, DIRECTIONS[node.side]),)
        return ()

    def readers(self, node):
        """The nodes that read ``node`` directly (a tuple): the outputs of the neighbouring cell
        whose support includes the facing input, and the edge output lane of a boundary cell
        output; for an edge input lane, the outputs of its boundary cell that read it."""
        if isinstance(node, CellOutput):
            d = node.d
            dx, dy = _STEP[d]
            x, y = node.x + dx, node.y + dy
            if not (0 <= x < self.width and 0 <= y < self.height):
                return (EdgeOutput(DIRECTIONS[d], self.lane_of(node.x, node.y, d)),)
            k = _OPPOSITE[d]
            masks = self._masks[y][x]
            return tuple(CellOutput(x, y, o) for o in DIRECTIONS if masks[o] >> k & 1)
        if isinstance(node, EdgeInput):
            x, y = self.boundary_cell(node.side, node.lane)
            k = node.side
            masks = self._masks[y][x]
            return tuple(CellOutput(x, y, d) for d in DIRECTIONS if masks[d] >> k & 1)
        return ()

    def edge_inputs(self):
        """Every edge input lane, N, E, S, W order."""
        return [EdgeInput(side, lane) for side in DIRECTIONS
                for lane in range(self.width if side in (N, S) else self.height)]

    def edge_outputs(self):
        """Every edge output lane, N, E, S, W order."""
        return [EdgeOutput(side, lane) for side in DIRECTIONS
                for lane in range(self.width if side in (N, S) else self.height)]

    # Searches ---------------------------------------------------------------------------------
    def upstream(self, nodes):
        """Every node some node of ``nodes`` depends on, ``nodes`` included (a set)."""
        return self._closure(nodes, self.sources)

    def downstream(self, nodes):
        """Every node that depends on some node of ``nodes``, ``nodes`` included (a set)."""
        return self._closure(nodes, self.readers)

    @staticmethod
    def _closure(nodes, step):
        seen = set(nodes)
        queue = deque(seen)
        while queue:
            for other in step(queue.popleft()):
                if other not in seen:
                    seen.add(other)
                    queue.append(other)
        return seen

    def find_path(self, sources, targets, *, blocked=()):
        """A shortest dependency path from a node of ``sources`` to a node of ``targets`` that
        passes through no node of ``blocked`` (a blocked source or target is not used): a list
        of nodes in signal order (``path[0]`` in ``sources``, ``path[-1]`` in ``targets``), or
        None if there is none."""
        targets, blocked = set(targets), set(blocked)
        parent = {}
        queue = deque()
        for node in sources:
            if node not in blocked and node not in parent:
                parent[node] = None
                queue.append(node)
        while queue:
            node = queue.popleft()
            if node in targets:
                path = [node]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path[::-1]
            for other in self.readers(node):
                if other not in parent and other not in blocked:
                    parent[other] = node
                    queue.append(other)
        return None

    def loops(self, nodes=None):
        """The loops among ``nodes`` (default: every cell output), a list of :class:`Loop`."""
        if nodes is None:
            nodes = [CellOutput(x, y, d) for y in range(self.height) for x in range(self.width)
                     for d in DIRECTIONS if self.masks[y, x, d]]
        loops = []
        for component in _components(self, nodes):
            if len(component) > 1:
                loops.append(Loop.of(self, component))
        return loops


class Loop(typing.NamedTuple):
    """A loop: a strongly connected set of cell outputs with feedback.

    ``nodes`` (a frozenset of :class:`CellOutput`), ``shortest`` (the length in subcycles of the
    shortest cycle, even) and ``period`` (the gcd of every cycle's length, even: a loop whose
    ``nodes`` form one ring has ``shortest == period ==`` the ring's length).
    """
    nodes: frozenset
    shortest: int
    period: int

    @classmethod
    def of(cls, graph, component):
        component = frozenset(component)
        start = min(component)
        # BFS levels from one node; gcd of level[u] + 1 - level[v] over the component's edges
        # is the gcd of all cycle lengths of a strongly connected graph.
        level = {start: 0}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for other in graph.readers(node):
                if other in component and other not in level:
                    level[other] = level[node] + 1
                    queue.append(other)
        period = 0
        for node in component:
            for other in graph.readers(node):
                if other in component:
                    period = math.gcd(period, abs(level[node] + 1 - level[other]))
        shortest = _shortest_cycle(graph, component)
        return cls(component, shortest, period)

    def __str__(self):
        cells = sorted({(n.x, n.y) for n in self.nodes}, key=lambda c: (c[1], c[0]))
        where = " ".join(f"({x},{y})" for x, y in cells[:8]) + (" ..." if len(cells) > 8 else "")
        return f"loop of {len(self.nodes)} outputs, shortest cycle {self.shortest} " \
               f"subcycles: {where}"


def _shortest_cycle(graph, component):
    """The length of the shortest cycle in a strongly connected ``component``: a ring (every
    node with one reader in it) is its own length; otherwise a breadth-first search from every
    node, each cut off at the best length found so far (2 is the least possible: neighbouring
    cells differ in parity, so every cycle is even)."""
    inside = {node: [r for r in graph.readers(node) if r in component] for node in component}
    if all(len(readers) == 1 for readers in inside.values()):
        return len(component)
    if any(node in inside[other] for node in component for other in inside[node]):
        return 2                                # the least possible
    best = math.inf
    for start in component:
        if best == 2:
            break
        distance = {start: 0}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            if distance[node] + 1 >= best:
                break
            for other in inside[node]:
                if other == start:
                    best = distance[node] + 1
                    queue.clear()
                    break
                if other not in distance:
                    distance[other] = distance[node] + 1
                    queue.append(other)
    return best


def _components(graph, roots):
    """Strongly connected components of the nodes upstream of ``roots`` (iterative Tarjan over
    the :meth:`DependencyGraph.sources` edges), each a list of nodes, sources first: every
    component comes after the components it reads."""
    index, low, on_stack = {}, {}, set()
    stack, result = [], []
    counter = 0
    for root in roots:
        if root in index:
            continue
        work = [(root, iter(graph.sources(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.sources(child))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(component)
    return result


class Timing(typing.NamedTuple):
    """The result of :func:`path_timing`.

    * ``paths``: ``{EdgeOutput: frozenset of (EdgeInput, length)}``, one entry per requested
      output: the lengths (subcycles, inputs applied from subcycle 0, module docstring) of the
      paths that pass through no loop. An output with an empty set depends on no input through
      such a path (it may still be constant or sequential).
    * ``sequential``: ``{EdgeOutput: frozenset of EdgeInput}``: the inputs whose effect reaches
      the output through a loop (state: its effect has no single length).
    * ``loops``: the loops upstream of the requested outputs (list of :class:`Loop`).
    * ``arrivals``: ``{node: frozenset of (EdgeInput, length)}`` for every node upstream of
      the outputs that is not in or after a loop: the same pairs for inner nodes (a cell
      output's length counts the cells up to and including it).
    """
    paths: dict
    sequential: dict
    loops: list
    arrivals: dict

    def lengths(self, output, input=None, *, start=0):
        """The sorted path lengths to ``output`` (from ``input``, or from any input), for
        inputs changing at subcycle ``start`` (module docstring)."""
        result = set()
        for source, length in self.paths[output]:
            if input is None or source == input:
                result.add(_restart(source, length, start))
        return sorted(result)

    def latency(self, output):
        """The longest path length to ``output`` (None if there is no path): the subcycles
        after which every input applied at subcycle 0 has reached it."""
        lengths = [length for _, length in self.paths[output]]
        return max(lengths) if lengths else None


def _restart(source, length, start):
    # length = k + p with p the parity of the lane's boundary cell (0 or 1); for an input
    # changing at subcycle ``start`` it is k + (p - start) % 2 (SPEC section 4).
    p = (source.lane + lane_parity_offset(source.side)) % 2
    return length - p + (p - start) % 2


def path_timing(config, outputs=None):
    """The path timing of ``config`` (a :class:`~bitgrid.config.Configuration` or a
    :class:`DependencyGraph`) for ``outputs`` (edge outputs; default every edge output lane):
    a :class:`Timing`.

    Cost: linear in the number of nodes upstream of the outputs times the number of distinct
    ``(input, length)`` pairs per node.
    """
    graph = config if isinstance(config, DependencyGraph) else DependencyGraph(config)
    if outputs is None:
        outputs = graph.edge_outputs()
    outputs = list(outputs)
    for node in outputs:
        if not isinstance(node, EdgeOutput):
            raise TypeError(f"path_timing takes edge outputs (EdgeOutput), not {node!r}")
    components = _components(graph, outputs)
    arrivals, sequential, loops = {}, {}, []
    tainted = {}        # node -> frozenset of inputs reaching it through a loop
    for component in components:
        if len(component) > 1:
            loop = Loop.of(graph, component)
            loops.append(loop)
            component = loop.nodes
            reach = set()
            for node in component:
                for source in graph.sources(node):
                    if source in component:
                        continue
                    reach |= {i for i, _ in arrivals.get(source, ())}
                    reach |= tainted.get(source, frozenset())
                    if isinstance(source, EdgeInput):
                        reach.add(source)
            reach = frozenset(reach)            # one set shared by the loop's nodes
            for node in component:
                tainted[node] = reach
            continue
        node = component[0]
        if isinstance(node, EdgeInput):
            continue
        pairs, taints = set(), []
        cell = (node.x, node.y) if isinstance(node, CellOutput) else None
        step = 0 if cell is None else 1
        for source in graph.sources(node):
            if isinstance(source, EdgeInput):
                pairs.add((source, 1 + parity(*cell)))
                continue
            pairs |= {(i, length + step) for i, length in arrivals.get(source, ())}
            if source in tainted and tainted[source] not in taints:
                taints.append(tainted[source])
        if taints:                              # shared, not copied, when there is one
            tainted[node] = taints[0] if len(taints) == 1 else frozenset().union(*taints)
        arrivals[node] = frozenset(pairs)
    paths = {node: arrivals.get(node, frozenset()) for node in outputs}
    sequential = {node: tainted.get(node, frozenset()) for node in outputs}
    return Timing(paths, sequential, loops, arrivals)
