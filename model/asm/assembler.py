"""From parsed statements to a configuration and a port map (docs/asm.md).

:func:`build` applies the statements of :func:`bitgrid.asm.parser.parse` in order: it sets
cell outputs (each output once: a second setting is an error naming both places), places
library macros, collects the port declarations into a :class:`bitgrid.ports.PortMap`, and,
when the text declares ports but no ``latency``, takes the latency of the one macro whose ports
it declares (``place ... ports``, with no ``in``/``out`` lines), or else computes it from the
program's path timing (:func:`bitgrid.porttiming.compute_latency`).
"""

import difflib
import typing

import numpy as np

from ..bitstream import ScanOrder
from ..config import Configuration
from ..ports import Port, PortBit, PortMap, PortMapError
from ..ports import _check_name  # the one rule for port names
from ..porttiming import CHECK_CELLS, check_latency, compute_latency
from ..terms import DIRECTIONS, Direction, side_lanes
from .lexer import AsmError
from .parser import SHORTHANDS, Cell, Grid, Latency, Order, Period, Place, PortDecl

__all__ = ["Assembly", "build"]


class Assembly(typing.NamedTuple):
    """The result of assembling: ``config`` (a :class:`~bitgrid.config.Configuration`),
    ``portmap`` (a :class:`~bitgrid.ports.PortMap`, or None when the text declares no ports,
    period or latency), ``order`` (the :class:`~bitgrid.bitstream.ScanOrder` of the
    ``order`` statement, row-major by default) and ``warnings`` (a tuple of one-line
    ``file:line:column: message`` strings: a declared ``latency`` that reads some output port
    bit in another row's window, :func:`bitgrid.porttiming.check_latency`)."""
    config: Configuration
    portmap: typing.Optional[PortMap]
    order: ScanOrder
    warnings: tuple = ()


class _Port:
    def __init__(self, decl):
        self.direction, self.signed, self.where = decl.direction, decl.signed, decl.where
        self.bits = {}          # bit -> (PortBit, where)


def _once(seen, statement, what):
    if seen is not None:
        raise AsmError(statement.where, f"{what} is given twice; first at {seen.where}")
    return statement


def build(statements, *, file="<text>", library=None):
    """Assemble ``statements`` (from :func:`~bitgrid.asm.parser.parse`) into an
    :class:`Assembly`.

    :param file: the name used for errors of the whole program (a missing ``grid``).
    :param library: the macro table for ``place`` (default :data:`bitgrid.library.MACROS`).
    :raises AsmError: naming the file, line and column of the first problem.
    """
    grid = order = period = latency = None
    luts = claims = None
    ports = {}
    lanes = {}      # (direction, side, lane) -> (port, bit, where)
    periods = []    # (period, where, name, latency) of the macros whose ports are declared
    by_hand = False     # ports declared by in/out statements
    for statement in statements:
        if isinstance(statement, Grid):
            grid = _once(grid, statement, "the grid size")
            luts = np.zeros((grid.height, grid.width, 4), np.uint16)
            claims = _Claims(grid.width, grid.height)
            continue
        if isinstance(statement, Order):
            order = _once(order, statement, "the scan order")
            try:
                ScanOrder.parse(statement.order)
            except ValueError:
                raise AsmError(statement.where, f"unknown scan order {statement.order!r}; use "
                                                "row-major, column-major or snake") from None
            continue
        if isinstance(statement, Period):
            period = _once(period, statement, "the period")
            if statement.value % 2:
                raise AsmError(statement.where, f"the period is an even number of subcycles "
                                                f"(whole cycles), not {statement.value}")
            continue
        if isinstance(statement, Latency):
            latency = _once(latency, statement, "the latency")
            continue
        if grid is None:
            raise AsmError(statement.where, "the grid size comes first: start with a line "
                                            "like 'grid 8 x 8'")
        if isinstance(statement, Cell):
            _cell(statement, grid, luts, claims)
        elif isinstance(statement, Place):
            _place(statement, grid, luts, claims, ports, lanes, library, periods)
        elif isinstance(statement, PortDecl):
            _port(statement, grid, ports, lanes)
            by_hand = True
    if grid is None:
        raise AsmError(None, f"{file}: no 'grid W x H' line; a program starts with its grid "
                             "size")
    config = Configuration(grid.width, grid.height, luts)
    scan = ScanOrder.parse(order.order) if order else ScanOrder.ROW_MAJOR
    if not ports and period is None and latency is None:
        return Assembly(config, None, scan)
    if not ports:       # timing alone: a port map without ports
        return Assembly(config, PortMap(grid.width, grid.height, (),
                                        period=period.value if period else 2,
                                        latency=latency.value if latency else 0), scan)
    if period is None and periods:
        value, where, name, _ = periods[0]
        for other, other_where, other_name, _ in periods[1:]:
            if other != value:
                raise AsmError(other_where, f"{other_name} has period {other}, {name} (at "
                                            f"{where}) has {value}; declare the program's "
                                            "'period'")
        period = Period(value, where)
    declared = latency
    if latency is None and len(periods) == 1 and not by_hand:
        # One macro's ports and no others: its own timing contract at that offset.
        latency = Latency(periods[0][3], periods[0][1])
    portmap = _portmap(grid, ports, period, latency, config, file)
    warnings = ()
    if declared is not None and int((luts != 0).any(axis=2).sum()) <= CHECK_CELLS:
        problem = check_latency(config, portmap)
        if problem:
            warnings = (f"{declared.where}: {problem}",)
    return Assembly(config, portmap, scan, warnings)


class _Claims:
    """Which statement set each cell output: an array ``(height, width, 4)`` of indices into
    :attr:`wheres` (0: not set), so that a range of a million cells is checked and claimed at
    numpy speed."""

    def __init__(self, width, height):
        self.owner = np.zeros((height, width, 4), np.int32)
        self.wheres = [None]

    def claim(self, xs, ys, sides):
        """Claim outputs ``sides`` (a list of ``(Direction, where)``, in the order written) of
        every cell ``xs`` x ``ys`` (ascending ranges, inside the grid): the first output set
        twice, in row-major order of the cells and then the order of ``sides``, is an error
        naming both places. Returns the view of the cells' owners."""
        view = self.owner[ys.start:ys.stop:ys.step, xs.start:xs.stop:xs.step]
        index = [side for side, _ in sides]
        taken = view[:, :, index] > 0
        repeated = np.array([side in index[:i] for i, side in enumerate(index)])
        taken |= repeated
        first = int(taken.argmax())
        if taken.flat[first]:
            iy, ix, i = np.unravel_index(first, taken.shape)
            side, where = sides[i]
            owner = int(view[iy, ix, side])
            earlier = self.wheres[owner] if owner else sides[index.index(side)][1]
            again = ("; the same line twice: its file is included more than once"
                     if earlier == where else "")
            raise AsmError(where, f"output {side.name} of cell ({xs[ix]}, {ys[iy]}) is set "
                                  f"twice; first at {earlier}{again}")
        for side, where in sides:
            view[:, :, side] = len(self.wheres)
            self.wheres.append(where)
        return view


def _check_cells(statement, grid, xs, ys):
    for axis, values, size in (("x", xs, grid.width), ("y", ys, grid.height)):
        if values[-1] >= size:      # the ranges are ascending
            raise AsmError(statement.where, f"cell {axis} {values[-1]} is outside the "
                                            f"{grid.width} x {grid.height} grid (0..{size - 1})")


def _cell(statement, grid, luts, claims):
    xs, ys = statement.xs, statement.ys
    _check_cells(statement, grid, xs, ys)
    cells = luts[ys.start:ys.stop:ys.step, xs.start:xs.stop:xs.step]
    if statement.shorthand is not None:
        claims.claim(xs, ys, [(side, statement.where) for side in DIRECTIONS])
        cells[:, :] = SHORTHANDS[statement.shorthand]
        return
    claims.claim(xs, ys, [(assign.side, assign.where) for assign in statement.assigns])
    for assign in statement.assigns:
        cells[:, :, assign.side] = assign.table


def _port(decl, grid, ports, lanes):
    port = ports.get(decl.name)
    if port is None:
        try:
            _check_name(decl.name, "Port")
        except PortMapError as error:
            raise AsmError(decl.where, str(error)[len("Port: "):]) from None
        port = ports[decl.name] = _Port(decl)
    elif port.direction != decl.direction:
        raise AsmError(decl.where, f"port {decl.name} is an {port.direction}put port (declared "
                                   f"at {port.where}); it cannot also be an {decl.direction}put")
    elif port.signed != decl.signed and decl.signed:
        port.signed = True
    for bit, side, lane, skew, where in decl.bits:
        count = side_lanes(side, grid.width, grid.height)
        if lane >= count:
            raise AsmError(where, f"lane {lane} is outside the {side.name} edge of the "
                                  f"{grid.width} x {grid.height} grid (lanes 0..{count - 1})")
        if bit in port.bits:
            raise AsmError(where, f"bit {bit} of port {decl.name} is declared twice; first at "
                                  f"{port.bits[bit][1]}")
        key = (decl.direction, side, lane)
        if key in lanes:
            other, other_bit, first = lanes[key]
            raise AsmError(where, f"{decl.direction}put lane {side.name}{lane} already carries "
                                  f"bit {other_bit} of port {other} (at {first})")
        lanes[key] = (decl.name, bit, where)
        port.bits[bit] = (PortBit(side, lane, skew), where)


def _portmap(grid, ports, period, latency, config, file):
    entries = []
    for name, port in ports.items():
        missing = [i for i in range(max(port.bits) + 1) if i not in port.bits]
        if missing:
            raise AsmError(port.where, f"port {name} has no bit {missing[0]}; its bits are "
                                       "numbered from 0 without gaps")
        bits = tuple(port.bits[i][0] for i in range(len(port.bits)))
        entries.append(Port(name, port.direction, bits, port.signed))
    period_value = period.value if period else 2
    if latency is None:
        value, problem = compute_latency(config, entries)
        if problem:
            where = next((p.where for p in ports.values() if p.direction == "out"),
                         next(iter(ports.values())).where)
            raise AsmError(where, f"{problem}; declare 'latency N' (subcycles), with a "
                                  "'skew' on the bits whose paths differ")
        latency_value = value
    else:
        latency_value = latency.value
    try:
        return PortMap(grid.width, grid.height, entries, period=period_value,
                       latency=latency_value)
    except PortMapError as error:
        where = latency.where if latency is not None else next(iter(ports.values())).where
        for name, port in ports.items():
            if str(error).startswith(f"Port {name} "):
                where = port.where
                break
        raise AsmError(where, str(error)) from None


def _macros(library):
    if library is not None:
        return library
    from ..library import MACROS
    return MACROS


def _place(statement, grid, luts, claims, ports, lanes, library, periods):
    """Write a library block into the grid; with ``ports``, declare its ports (which must sit
    on grid edge lanes) as program ports, named ``PREFIX.name`` with a prefix."""
    macros = _macros(library)
    macro = macros.get(statement.macro)
    if macro is None:
        close = difflib.get_close_matches(statement.macro, list(macros), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise AsmError(statement.where, f"unknown macro {statement.macro!r}; {hint}the library "
                                        f"has {', '.join(sorted(macros))}")
    try:
        block = macro.build(**statement.params)
    except (ValueError, TypeError) as error:
        where = statement.where
        for name, param_where in statement.param_where.items():
            if f"parameter {name}" in str(error) or f"parameter {name!r}" in str(error):
                where = param_where
        raise AsmError(where, str(error)) from None
    x, y = statement.x, statement.y
    if x + block.width > grid.width or y + block.height > grid.height:
        raise AsmError(statement.where, f"macro {block.name} ({block.width} x {block.height} "
                                        f"cells) at {x},{y} does not fit the {grid.width} x "
                                        f"{grid.height} grid")
    claims.claim(range(x, x + block.width), range(y, y + block.height),
                 [(side, statement.where) for side in DIRECTIONS])
    luts[y:y + block.height, x:x + block.width] = [
        [block.tables(bx, by) for bx in range(block.width)] for by in range(block.height)]
    if statement.prefix is None:
        return
    prefix = "" if statement.prefix is True else statement.prefix + "."
    periods.append((block.period, statement.where, block.name, block.timing_at(x, y)))
    for port in block.ports:
        bits = []
        for i, bit in enumerate(port.bits):
            gx, gy = block.bit_cell(bit, x, y)
            edge = {Direction.N: gy == 0, Direction.S: gy == grid.height - 1,
                    Direction.W: gx == 0, Direction.E: gx == grid.width - 1}[bit.side]
            if not edge:
                # the offset that puts that side on the edge (odd for a box of odd size: it
                # is allowed, the latency is one more)
                at = {Direction.E: (grid.width - block.width, y),
                      Direction.S: (x, grid.height - block.height),
                      Direction.W: (0, y), Direction.N: (x, 0)}[bit.side]
                hint = f" (at {at[0]},{at[1]})" if min(at) >= 0 else ""
                raise AsmError(statement.where, f"port {port.name} bit {i} of {block.name} at "
                                                f"{x},{y} is not on the {bit.side.name} edge of "
                                                "the grid; place the macro against that edge"
                                                f"{hint}, or route the bit there and declare it "
                                                f"with '{port.direction}'")
            lane = gy if bit.side in (Direction.E, Direction.W) else gx
            bits.append((i, bit.side, lane, bit.skew, statement.where))
        _port(PortDecl(port.direction, prefix + port.name, bits, port.signed, statement.where),
              grid, ports, lanes)
