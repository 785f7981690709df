"""From a configuration (and port map) back to BitGrid assembly text (docs/asm.md).

:func:`disassemble` writes every configured cell (a cell with a non-zero LUT; SPEC section 3)
as a ``cell`` statement, each output as its minimal expression
(:func:`bitgrid.asm.minimise.expression`), outputs with the same LUT together (``E = S = w``),
the SPEC's pass-through and reflector cells as ``pass`` and ``reflect``, and runs of identical
cells as one statement over ranges (``cell 1..6,0: E = w``, ``cell 0..21 by 3, 0..6 by 2:
...``). Routing cells get a comment
saying what they are: ``wire``, ``turn``, ``echo``, ``crossing``, ``wires`` (straight wires
that do not cross, e.g. one E and one W), ``fan-out``, ``routing`` (other copies of inputs),
``constant``.
Assembling the text gives back the same configuration, scan order and port map.
"""

import bisect

from ..bitstream import Bitstream, ScanOrder
from ..config import Configuration
from ..terms import DIRECTIONS
from .lexer import AsmError, tokenize
from .minimise import INPUTS, expression
from .parser import SHORTHANDS

__all__ = ["disassemble"]

_COPIES = {table: side for side, table in zip(DIRECTIONS, INPUTS)}


def _ranges(values):
    """``[2, 3, 4, 7, 9, 11, 13]`` -> ``"2..4, 7..13 by 2"``: runs of step 1 (of 2 or more
    values) and of a larger step (of 3 or more), either direction, else single values."""
    parts, i = [], 0
    while i < len(values):
        j = i
        if i + 1 < len(values):
            step = values[i + 1] - values[i]
            while step and j + 1 < len(values) and values[j + 1] - values[j] == step:
                j += 1
            if abs(step) > 1 and j - i < 2:
                j = i
        if j == i:
            parts.append(str(values[i]))
        else:
            step = abs(values[i + 1] - values[i])
            parts.append(f"{values[i]}..{values[j]}" + (f" by {step}" if step > 1 else ""))
        i = j + 1
    return ", ".join(parts)


def _lanes(bits):
    groups = []         # [side, [lanes]]
    for bit in bits:
        if groups and groups[-1][0] == bit.side:
            groups[-1][1].append(bit.lane)
        else:
            groups.append([bit.side, [bit.lane]])
    return ", ".join(f"{side.name} {_ranges(lanes)}" for side, lanes in groups)


def _name(name):
    """A port name as the text writes it: a plain word, or in quotes if it does not read back
    as one (``q.``, ``a..b``)."""
    try:
        tokens = list(tokenize(name))
    except AsmError:
        tokens = []
    if len(tokens) == 3 and tokens[0].kind == "name" and tokens[0].text == name:
        return name
    return '"' + name + '"'


def _port_line(port):
    bits = f"[0..{port.width - 1}]" if port.width > 1 else ""
    line = f"{port.direction:<3} {_name(port.name)}{bits} {_lanes(port.bits)}"
    skews = [bit.skew for bit in port.bits]
    if any(skews):
        line += f" skew {skews[0]}" if len(set(skews)) == 1 else f" skew {_ranges(skews)}"
    if port.signed:
        line += " signed"
    return line


def _kind(tables):
    """The routing kind of a cell (for the comment), or None for logic."""
    outputs = {side: table for side, table in zip(DIRECTIONS, tables) if table}
    if all(table == 0xFFFF for table in outputs.values()):
        return "constant"
    if not all(table in _COPIES for table in outputs.values()):
        return None
    sources = {side: _COPIES[table] for side, table in outputs.items()}
    if len(sources) == 1:
        (side, source), = sources.items()
        if source == side.opposite:
            return "wire"
        return "echo" if source == side else "turn"
    if len(set(sources.values())) == 1:
        return "fan-out"
    if all(source == side.opposite for side, source in sources.items()):
        # Two wires at right angles cross; otherwise they run side by side.
        return "crossing" if len(sources) == 2 and len({side % 2 for side in sources}) == 2 \
            else "wires"
    return "routing"


def _body(tables):
    for name, shorthand in SHORTHANDS.items():
        if tuple(tables) == shorthand and name != "zero":
            return name
    groups = {}
    for side, table in zip(DIRECTIONS, tables):
        if table:
            groups.setdefault(table, []).append(side)
    return ", ".join(" = ".join(side.name for side in sides) + " = " + expression(table)
                     for table, sides in groups.items())


def _axis(values):
    """A coordinate range as text: ``3``, ``1..6`` or ``0..21 by 3``."""
    if len(values) == 1:
        return str(values[0])
    return f"{values[0]}..{values[-1]}" + (f" by {values.step}" if values.step > 1 else "")


def _progression(first, step, limit, same):
    """The longest ``range(first, ..., step)`` below ``limit`` whose every value passes
    ``same``."""
    last = first
    while last + step < limit and same(last + step):
        last += step
    return range(first, last + 1, step)


def _blocks(luts):
    """Lattices of equal configured cells, ``[(xs, ys, tables)]`` with ``xs`` and ``ys``
    ascending ranges, in row-major order of their first cell. A lattice grows along x with
    step 1 when the next cell is equal, else with the distance to the next equal cell if
    that reaches 3 cells; then along y likewise (the same xs in each row)."""
    height, width = luts.shape[:2]
    cells = {}
    rows, columns = {}, {}        # (y, tables) -> [x ...], (x, tables) -> [y ...], ascending
    for y, x in zip(*luts.any(axis=2).nonzero()):
        x, y = int(x), int(y)
        tables = tuple(int(v) for v in luts[y, x])
        cells[(x, y)] = tables
        rows.setdefault((y, tables), []).append(x)
        columns.setdefault((x, tables), []).append(y)
    for ys in columns.values():
        ys.sort()
    done, blocks = set(), []

    def free(x, y, tables):
        return cells.get((x, y)) == tables and (x, y) not in done

    def after(values, value, test):
        """The first of ``values`` beyond ``value`` that passes ``test``, or None."""
        return next((v for v in values[bisect.bisect_right(values, value):] if test(v)), None)

    for (x, y), tables in cells.items():        # row-major: luts.nonzero() order
        if (x, y) in done:
            continue
        xs = _progression(x, 1, width, lambda cx: free(cx, y, tables))
        if len(xs) == 1:
            other = after(rows[(y, tables)], x, lambda cx: free(cx, y, tables))
            if other is not None:
                wide = _progression(x, other - x, width, lambda cx: free(cx, y, tables))
                xs = wide if len(wide) >= 3 else xs

        def row_free(cy):
            return all(free(cx, cy, tables) for cx in xs)

        ys = _progression(y, 1, height, row_free)
        if len(ys) == 1:
            other = after(columns[(x, tables)], y, lambda cy: free(x, cy, tables))
            if other is not None and row_free(other):
                tall = _progression(y, other - y, height, row_free)
                ys = tall if len(tall) >= 3 else ys
        done.update((cx, cy) for cx in xs for cy in ys)
        blocks.append((xs, ys, tables))
    return blocks


def disassemble(config, portmap=None, *, order=None, source=None):
    """BitGrid assembly text for ``config``; :func:`bitgrid.asm.assemble` of the text gives
    the same configuration (and port map, and scan order).

    :param config: a :class:`~bitgrid.config.Configuration`, or a
        :class:`~bitgrid.bitstream.Bitstream` (its scan order is kept).
    :param portmap: optional :class:`~bitgrid.ports.PortMap` of the program; its ports,
        ``period`` and ``latency`` are written as declarations.
    :param order: the :class:`~bitgrid.bitstream.ScanOrder` to record (default: the
        bitstream's, else row-major, which needs no ``order`` line).
    :param source: optional file name for the header comment.
    :returns: the text (str), one statement per line, ending with a newline.
    :raises TypeError: if ``config`` is neither.
    :raises bitgrid.ports.PortMapError: if the port map is for another grid size.
    """
    if isinstance(config, Bitstream):
        order = config.order if order is None else order
        config = config.config
    if not isinstance(config, Configuration):
        raise TypeError(f"disassemble takes a Configuration or a Bitstream, not {config!r}")
    order = ScanOrder.parse(order if order is not None else ScanOrder.ROW_MAJOR)
    lines = ["# BitGrid assembly (docs/asm.md)" + (f", disassembled from {source}"
                                                   if source else "")]
    lines.append(f"grid {config.width} x {config.height}")
    if order != ScanOrder.ROW_MAJOR:
        lines.append(f"order {order.label}")
    if portmap is not None:
        portmap.check_grid(config.width, config.height)
        lines += ["", f"period {portmap.period}", f"latency {portmap.latency}"]
        lines += [_port_line(port) for port in portmap.ports]
    blocks = _blocks(config.luts)
    if blocks:
        lines.append("")
    rows = []
    for xs, ys, tables in blocks:
        body = _body(tables)
        rows.append((f"cell {_axis(xs)},{_axis(ys)}:", body,
                     None if body in SHORTHANDS else _kind(tables)))
    pad = max((len(head) for head, _, _ in rows), default=0)
    for head, body, kind in rows:
        line = f"{head:<{pad}} {body}"
        if kind:
            line = f"{line:<{pad + 24}}  # {kind}"
        lines.append(line)
    return "\n".join(lines) + "\n"
