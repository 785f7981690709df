"""Blocks: placed-anywhere pieces of a BitGrid program with named ports and a timing contract.

A :class:`Block` is what a macro of :mod:`bitgrid.library` builds: the LUTs of a ``width`` x
``height`` box of cells in *local* coordinates (``(0, 0)`` is the box's north-west cell; SPEC
section 2), named ports on the box's boundary, and its timing.

Ports (the vocabulary of :mod:`bitgrid.ports`): each port is a :class:`bitgrid.ports.Port`
whose bits are :class:`bitgrid.ports.PortBit` ``(side, lane, skew)`` with ``lane`` the index
*along that side of the box*, as if the box were a grid: an input bit ``(W, i)`` is the W input
of local cell ``(0, i)``, an output bit ``(E, i)`` the E output of ``(width - 1, i)``, ``(N, i)``
is cell ``(i, 0)``, ``(S, i)`` is cell ``(i, height - 1)``. Bits are least significant first.

Timing (SPEC section 4, the semantics of :mod:`bitgrid.ports` with the block's own clock):
with the block placed at an *even* offset (``x + y`` even), design cycle ``k`` starts at
subcycle ``k * period``; an input bit with skew ``s`` must carry row ``k``'s value during
subcycles ``k * period + s`` .. ``(k + 1) * period + s - 1``, and an output bit with skew
``s`` holds row ``k``'s result after subcycle ``k * period + latency + s - 1``. Every macro
takes a new row every ``period`` subcycles (2 for all combinational macros: fully pipelined).

At an *odd* offset every cell changes parity (SPEC section 10) and updates one subcycle later:
the same input windows still work (each input's first cell samples on the first subcycle of its
window, and the window is at least 2 subcycles long), and every output comes one subcycle
later, so the latency is ``latency + 1`` (:meth:`Block.timing_at`).

The skews and the latency are not typed in by the macros: :func:`solve_timing` derives them from
the LUTs (each LUT's real support), checking that every input of every LUT arrives from the
same design cycle (one wave), and :class:`Block` refuses a box whose LUTs read an input from
outside that is not an input port, or drive an output to the outside that is not an output port
(so blocks can be placed side by side without touching each other).

Errors: :class:`LibraryError` (a :class:`ValueError`) with one line naming the macro and cell.
"""

import collections

from ..analysis import support
from ..cell import COPY_E, COPY_N, COPY_S, COPY_W
from ..ports import Port, PortBit, PortMap
from ..program import Program
from ..terms import DIRECTIONS, Direction, E, N, S, W, parity

__all__ = ["LibraryError", "Block", "Standalone", "support", "solve_timing", "logic_census"]


#: The copies of one input and their inverses (LUTs that are routing, not logic).
_COPIES = frozenset(c ^ m for c in (COPY_N, COPY_E, COPY_S, COPY_W) for m in (0, 0xFFFF))


class LibraryError(ValueError):
    """A macro parameter, placement or block that is not valid; the message names it."""


def _boundary_cell(side, index, width, height):
    """Local cell of bit ``index`` on ``side`` of a ``width`` x ``height`` box."""
    return {N: (index, 0), S: (index, height - 1), W: (0, index), E: (width - 1, index)}[side]


def _on_boundary(x, y, side, width, height):
    """The index along ``side`` if ``(x, y)`` faces outside on ``side``, else None."""
    if side == N and y == 0 or side == S and y == height - 1:
        return x
    if side == W and x == 0 or side == E and x == width - 1:
        return y
    return None


class _Timing:
    """Result of :func:`solve_timing`: ``inputs`` {(port, bit): T}, ``outputs`` {(port, bit): T}
    with T the subcycle (for design cycle 0, block at offset (0, 0)) on which the bit's cell
    samples it (inputs) or computes it (outputs), and ``times`` {(x, y, d): T} of every LUT that
    depends on an input."""

    def __init__(self, inputs, outputs, times):
        self.inputs, self.outputs, self.times = inputs, outputs, times


def solve_timing(name, width, height, cells, ports, *, period=2, feedback=False,
                 registers=()):
    """Derive when every LUT of a box computes, from the LUTs' support (SPEC section 4).

    Each LUT ``(x, y, d)`` that depends on anything gets a subcycle ``T`` (that of design cycle
    0): a LUT reading inputs computes one subcycle after the LUTs that drive them, and a LUT
    reading an input port bit computes on the subcycle it samples it. ``T`` has the parity of
    the cell. The times of each connected group of LUTs are fixed up to a shift by a multiple of
    ``period``, chosen so that its earliest input is sampled on subcycle 0 or 1.

    :param cells: {(x, y): (N, E, S, W)} LUT tables.
    :param ports: :class:`~bitgrid.ports.Port` objects with local lanes (skews ignored).
    :param feedback: allow loops whose length is a multiple of ``period`` (state carried from
        one design cycle to the next, e.g. a counter); without it every loop is an error.
    :param registers: LUTs ``(x, y, d)`` that hold state: their readers use the value of the
        design cycle before (a link ``1 - period`` subcycles long), so that every loop
        through them closes exactly and the inputs of a stateful block are timed without
        the one-period ambiguity of ``feedback``.
    :raises LibraryError: for a LUT whose inputs come from different design cycles, a loop,
        or a LUT reading an undeclared outside input.
    """
    in_bits = {}
    for port in ports:
        if port.direction == "in":
            for i, bit in enumerate(port.bits):
                in_bits[(bit.side, bit.lane)] = (port.name, i)
    luts = {}
    for (x, y), tables in cells.items():
        for d in DIRECTIONS:
            sup = support(tables[d])
            if sup:
                luts[(x, y, d)] = sup
    # Constraint graph: node -> [(node, offset)] with T(b) = T(a) + offset.
    graph = collections.defaultdict(list)

    def link(a, b, offset):
        graph[a].append((b, offset))
        graph[b].append((a, -offset))

    for (x, y, d), sup in luts.items():
        for side in sup:
            dx, dy = side.step
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height:
                source = (nx, ny, side.opposite)
                if source in luts:
                    link(source, (x, y, d), 1 - period if source in registers else 1)
                # else: a constant input, no timing constraint
            else:
                index = _on_boundary(x, y, side, width, height)
                key = (side, index)
                if key not in in_bits:
                    raise LibraryError(f"Macro {name}: output {d.letter} of cell ({x}, {y}) "
                                       f"reads input {side.letter} from outside the box, lane "
                                       f"{side.letter}{index}, which is no input port")
                link(("in",) + in_bits[key], (x, y, d), 0)
    times = {}
    for start in list(graph):
        if start in times:
            continue
        component = {start: 0}
        queue = collections.deque([start])
        while queue:
            node = queue.popleft()
            for other, offset in graph[node]:
                value = component[node] + offset
                if other not in component:
                    component[other] = value
                    queue.append(other)
                elif component[other] != value:
                    diff = value - component[other]
                    if not (feedback and diff % period == 0):
                        where = other if other[0] != "in" else node
                        raise LibraryError(
                            f"Macro {name}: the inputs of cell ({where[0]}, {where[1]}) do not "
                            f"come from the same design cycle (paths differ by {abs(diff)} "
                            "subcycles): not pipelined")
        # Shift so the earliest input (or, without inputs, the earliest LUT) is at 0 or 1.
        keys = [n for n in component if n[0] == "in"] or list(component)
        low = min(component[n] for n in keys)
        probe = next(n for n in keys if component[n] == low)
        if probe[0] == "in":
            reader = next(o for o, off in graph[probe] if off == 0)
            cell_parity = parity(reader[0], reader[1])
        else:
            cell_parity = parity(probe[0], probe[1])
        shift = cell_parity - low
        for node, value in component.items():
            times[node] = value + shift
    for node, value in times.items():
        if node[0] != "in" and value % 2 != parity(node[0], node[1]):
            raise LibraryError(f"Macro {name}: cell ({node[0]}, {node[1]}) would compute on a "
                               "subcycle of the wrong parity")
    inputs, outputs = {}, {}
    for port in ports:
        for i, bit in enumerate(port.bits):
            if port.direction == "in":
                node = ("in", port.name, i)
                if node not in times:
                    raise LibraryError(f"Macro {name}: input {port.name} bit {i} "
                                       f"({bit.side.letter}{bit.lane}) is read by no cell")
                inputs[(port.name, i)] = times[node]
            else:
                x, y = _boundary_cell(bit.side, bit.lane, width, height)
                lut = (x, y, bit.side)
                # A constant output is valid after the cell's first update.
                outputs[(port.name, i)] = times.get(lut, parity(x, y))
    luts_times = {n: t for n, t in times.items() if n[0] != "in"}
    return _Timing(inputs, outputs, luts_times)


class Standalone:
    """A block alone on a grid with every port bit on a grid edge lane: ``config`` (a
    :class:`~bitgrid.config.Configuration`), ``portmap`` (a :class:`~bitgrid.ports.PortMap`
    with the block's period and latency), ``program`` (the :class:`~bitgrid.program.Program`)
    and ``offset`` (the block's position). What ``bitgrid eval`` and the tests run."""

    def __init__(self, block, program, portmap, offset):
        self.block, self.program, self.portmap, self.offset = block, program, portmap, offset
        self.config = program.config

    def __repr__(self):
        return (f"Standalone({self.block.name}, {self.program.width} x {self.program.height} "
                f"grid, latency {self.portmap.latency})")


class Block:
    """A box of cells built by a macro (see the module docstring).

    :param name: the block's name, for messages (e.g. ``"multiplier(bits=8)"``).
    :param width, height: the box in cells, at least 1 each (odd sizes are fine).
    :param cells: {(x, y): (N, E, S, W)} LUT tables of local cells; cells not listed are
        all-zero (they still belong to the box).
    :param ports: :class:`~bitgrid.ports.Port` objects (or ``(name, direction, [(side, index),
        ...])`` tuples) with local indices; skews are derived (:func:`solve_timing`).
    :param period: subcycles per design cycle (even, >= 2).
    :param feedback: the block holds state across design cycles (see :func:`solve_timing`).
    :param registers: the LUTs ``(x, y, d)`` that hold that state (see :func:`solve_timing`).
    :param output_delays: {(port, bit): cycles}: that output bit shows the result of design
        cycle ``k - cycles`` in row ``k`` (a shift register's taps); default 0.
    :param doc: one paragraph for the docs: what the block computes and its port layout.
    :raises LibraryError: for a port bit off the box, a bit used twice, a boundary output that
        is not a port but not constant 0, or LUTs that are not pipelined.

    Attributes: ``name``, ``width``, ``height``, ``cells`` (a dict, read-only by convention),
    ``ports`` (tuple of :class:`~bitgrid.ports.Port` with skews), ``latency``, ``period``,
    ``times`` ({(x, y, d): subcycle} of each LUT for design cycle 0), ``registers`` (the
    LUTs declared registers), ``doc``.
    """

    def __init__(self, name, width, height, cells, ports, *, period=2, feedback=False,
                 registers=(), output_delays=None, doc=""):
        self.name = str(name)
        if not (isinstance(width, int) and isinstance(height, int) and width >= 1
                and height >= 1):
            raise LibraryError(f"Macro {name}: a box is at least 1 x 1 cells, not {width!r} x "
                               f"{height!r}")
        if period < 2 or period % 2:
            raise LibraryError(f"Macro {name}: the period is an even number of subcycles, not "
                               f"{period!r}")
        self.width, self.height, self.period, self.doc = width, height, period, doc
        self.feedback = feedback
        clean = {}
        for (x, y), tables in cells.items():
            if not (0 <= x < width and 0 <= y < height):
                raise LibraryError(f"Macro {name}: cell ({x}, {y}) is outside the {width} x "
                                   f"{height} box")
            tables = tuple(int(t) for t in tables)
            if any(t for t in tables):
                clean[(x, y)] = tables
        self.cells = clean
        ports = [self._coerce_port(p) for p in ports]
        used = {}
        for port in ports:
            for i, bit in enumerate(port.bits):
                key = (port.direction, bit.side, bit.lane)
                if key in used:
                    raise LibraryError(f"Macro {name}: port {port.name} bit {i} uses "
                                       f"{port.direction}put {bit.side.letter}{bit.lane}, "
                                       f"already bit {used[key][1]} of {used[key][0]}")
                used[key] = (port.name, i)
        # Boundary outputs that are not ports must stay 0, so blocks can sit side by side.
        for (x, y), tables in self.cells.items():
            for d in DIRECTIONS:
                index = _on_boundary(x, y, d, width, height)
                if index is not None and tables[d] and ("out", d, index) not in used:
                    raise LibraryError(f"Macro {name}: output {d.letter} of cell ({x}, {y}) "
                                       f"leaves the box on lane {d.letter}{index}, which is no "
                                       "output port")
        self.registers = frozenset(registers)
        timing = solve_timing(self.name, width, height, self.cells, ports, period=period,
                              feedback=feedback, registers=self.registers)
        delays = dict(output_delays or {})
        for key, cycles in delays.items():
            timing.outputs[key] -= cycles * period
        out_times = list(timing.outputs.values())
        self.latency = min(out_times) + 1 if out_times else 0
        placed = []
        for port in ports:
            bits = []
            for i, bit in enumerate(port.bits):
                if port.direction == "in":
                    skew = timing.inputs[(port.name, i)]
                else:
                    skew = timing.outputs[(port.name, i)] + 1 - self.latency
                bits.append(PortBit(bit.side, bit.lane, skew))
            placed.append(port._replace(bits=tuple(bits)))
        self.ports = tuple(placed)
        self.times = timing.times

    def _coerce_port(self, port):
        if isinstance(port, Port):
            raw = port
        else:
            pname, direction, bits = port[:3]
            signed = port[3] if len(port) > 3 else False
            raw = Port(pname, direction, tuple(PortBit(Direction(_side(b[0])), int(b[1]))
                                                for b in bits), signed)
        if raw.direction not in ("in", "out"):
            raise LibraryError(f"Macro {self.name}: port {raw.name} direction is 'in' or "
                               f"'out', not {raw.direction!r}")
        for i, bit in enumerate(raw.bits):
            lanes = self.width if bit.side in (N, S) else self.height
            if not 0 <= bit.lane < lanes:
                raise LibraryError(f"Macro {self.name}: port {raw.name} bit {i} is lane "
                                   f"{bit.side.letter}{bit.lane}, off the {self.width} x "
                                   f"{self.height} box")
        return raw

    # Access -----------------------------------------------------------------------------------
    def __repr__(self):
        return (f"Block({self.name}, {self.width} x {self.height}, {self.cell_count} cells, "
                f"latency {self.latency}, period {self.period})")

    @property
    def cell_count(self):
        """Number of configured cells (cells with a LUT that is not all-zero)."""
        return len(self.cells)

    def tables(self, x, y):
        """The LUTs ``(N, E, S, W)`` of local cell ``(x, y)`` (all-zero if not configured)."""
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise IndexError(f"Cell ({x}, {y}) is outside the {self.width} x {self.height} "
                             f"box of {self.name}")
        return self.cells.get((x, y), (0, 0, 0, 0))

    def port(self, name):
        """The :class:`~bitgrid.ports.Port` called ``name``.

        :raises KeyError: naming the block's ports."""
        for port in self.ports:
            if port.name == name:
                return port
        raise KeyError(f"{self.name} has no port {name!r}; its ports are "
                       f"{', '.join(p.name for p in self.ports)}")

    @property
    def inputs(self):
        """The input ports."""
        return tuple(p for p in self.ports if p.direction == "in")

    @property
    def outputs(self):
        """The output ports."""
        return tuple(p for p in self.ports if p.direction == "out")

    @property
    def depth(self):
        """Subcycles until the last output bit of design cycle 0 is readable."""
        return self.latency + max((b.skew for p in self.outputs for b in p.bits), default=0)

    def timing_at(self, x, y):
        """The latency of the block placed with its north-west cell at ``(x, y)`` of a grid:
        :attr:`latency` at an even offset, one more at an odd one (module docstring)."""
        return self.latency + (x + y) % 2

    def bit_cell(self, bit, x=0, y=0):
        """The grid cell ``(gx, gy)`` of port bit ``bit`` for the block placed at ``(x, y)``:
        the input (or output) ``bit.side`` of that cell is the bit."""
        bx, by = _boundary_cell(bit.side, bit.lane, self.width, self.height)
        return x + bx, y + by

    # Placing ----------------------------------------------------------------------------------
    def place(self, program, x, y):
        """Write the block into ``program`` (a :class:`~bitgrid.program.Program`) with its
        north-west cell at ``(x, y)``. Every cell of the box is claimed (all four outputs set,
        all-zero where the block has nothing), so later routes cannot run through it.

        :returns: the latency at that offset (:meth:`timing_at`).
        :raises LibraryError: ``Macro adder(bits=4) (3 x 4 cells) at (6, 0) does not fit the
            8 x 8 grid`` or ``... at (2, 2) overlaps cell (3, 2), already configured``; the
            program is unchanged then.
        """
        if not isinstance(program, Program):
            raise TypeError(f"place() needs a bitgrid.program.Program, not {program!r}")
        for value, what in ((x, "x"), (y, "y")):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Block {what} must be an integer, not {value!r}")
        if x < 0 or y < 0 or x + self.width > program.width or y + self.height > program.height:
            raise LibraryError(f"Macro {self.name} ({self.width} x {self.height} cells) at "
                               f"({x}, {y}) does not fit the {program.width} x "
                               f"{program.height} grid")
        for by in range(self.height):
            for bx in range(self.width):
                if program.configured(x + bx, y + by):
                    raise LibraryError(f"Macro {self.name} at ({x}, {y}) overlaps cell "
                                       f"({x + bx}, {y + by}), already configured")
        for by in range(self.height):
            for bx in range(self.width):
                program.set_tables(x + bx, y + by, self.tables(bx, by))
        return self.timing_at(x, y)

    def standalone(self, *, width=None, height=None):
        """The block alone on a grid, at offset (0, 0), each port bit on the grid edge lane of
        its side (:class:`Standalone`). The grid is the box rounded up to even sizes (or
        ``width`` x ``height`` if given, at least that); where the box does not reach the E or
        S edge, E and S port bits are carried there by pass cells, and the skews and latency
        are adjusted for them (each pass cell is one subcycle).

        :raises LibraryError: if the given size is smaller than the box.
        """
        gw = width if width is not None else self.width + self.width % 2
        gh = height if height is not None else self.height + self.height % 2
        if gw < self.width or gh < self.height:
            raise LibraryError(f"Macro {self.name} ({self.width} x {self.height} cells) does "
                               f"not fit a {gw} x {gh} grid")
        program = Program(gw, gh)
        self.place(program, 0, 0)
        extend = {E: gw - self.width, S: gh - self.height, N: 0, W: 0}
        for port in self.ports:
            for bit in port.bits:
                k = extend[bit.side]
                if not k:
                    continue
                cx, cy = self.bit_cell(bit)
                dx, dy = bit.side.step
                heading = bit.side if port.direction == "out" else bit.side.opposite
                if port.direction == "out":
                    program.route(cx + dx, cy + dy, heading, k)
                else:
                    program.route(cx + k * dx, cy + k * dy, heading, k)
        # Input bits carried by k pass cells are sampled k subcycles earlier at the edge.
        in_shift = {}
        for port in self.inputs:
            for i, bit in enumerate(port.bits):
                in_shift[(port.name, i)] = bit.skew - extend[bit.side]
        lift = max(0, -min(in_shift.values(), default=0))
        lift += lift % 2                      # keep the block's phase: shift by whole cycles
        ports = []
        out_times = []
        for port in self.outputs:
            for bit in port.bits:
                out_times.append(self.latency + bit.skew + extend[bit.side] + lift)
        latency = min(out_times) if out_times else 0
        for port in self.ports:
            bits = []
            for i, bit in enumerate(port.bits):
                lane = bit.lane
                if port.direction == "in":
                    skew = in_shift[(port.name, i)] + lift
                else:
                    skew = self.latency + bit.skew + extend[bit.side] + lift - latency
                bits.append({"side": bit.side.letter, "lane": lane, "skew": skew})
            ports.append({"name": port.name, "direction": port.direction,
                          "signed": port.signed, "bits": bits})
        portmap = PortMap(gw, gh, ports, period=self.period, latency=latency)
        return Standalone(self, program, portmap, (0, 0))


def logic_census(cells):
    """Count the logic cells of ``cells`` ({(x, y): (N, E, S, W)} LUT tables) by what their
    LUTs do, from the LUTs alone: a LUT is *logic* if it is neither constant nor a copy or an
    inverted copy of one input. Returns ``{"full adders": k, "half adders": k, "gates": k}``:
    a cell with two or more logic outputs reading all four inputs between them is a full adder
    (three addends, or two and a partial product, plus the carry), one with two or more logic
    outputs reading fewer a half adder, one with a single logic output a gate."""
    census = {"full adders": 0, "half adders": 0, "gates": 0}
    for tables in cells.values():
        logic = [t for t in tables if len(support(t)) >= 2
                 or (len(support(t)) == 1 and t not in _COPIES)]
        if not logic:
            continue
        if len(logic) == 1:
            census["gates"] += 1
        elif len(frozenset().union(*map(support, logic))) == 4:
            census["full adders"] += 1
        else:
            census["half adders"] += 1
    return census


def _side(side):
    from ..terms import parse_side
    return parse_side(side)


def block_from_program(name, program, width, height, ports, **options):
    """A :class:`Block` from the north-west ``width`` x ``height`` cells of a
    :class:`~bitgrid.program.Program` (a convenient way to draw a block with the builder's
    ``cell``, ``route``, ``turn`` and ``cross``)."""
    cells = {}
    for y in range(height):
        for x in range(width):
            tables = program.tables(x, y)
            if any(tables):
                cells[(x, y)] = tables
    return Block(name, width, height, cells, ports, **options)
