"""From a configuration (and port map) back to BitGrid assembly text (docs/asm.md).

:func:`disassemble` writes every configured cell (a cell with a non-zero LUT; SPEC section 3)
as a ``cell`` statement, each output as its minimal expression
(:func:`bitgrid.asm.minimise.expression`), outputs with the same LUT together (``E = S = w``),
the SPEC's pass-through and reflector cells as ``pass`` and ``reflect``, and runs of identical
cells as one statement over a range (``cell 1..6,0: E = w``). Routing cells get a comment
saying what they are: ``wire``, ``turn``, ``echo``, ``crossing``, ``wires`` (straight wires
that do not cross, e.g. one E and one W), ``fan-out``, ``routing`` (other copies of inputs),
``constant``.
Assembling the text gives back the same configuration, scan order and port map.
"""

from ..bitstream import Bitstream, ScanOrder
from ..config import Configuration
from ..terms import DIRECTIONS
from .lexer import AsmError, tokenize
from .minimise import INPUTS, expression
from .parser import SHORTHANDS

__all__ = ["disassemble"]

_COPIES = {table: side for side, table in zip(DIRECTIONS, INPUTS)}


def _ranges(values):
    """``[2, 3, 4, 7]`` -> ``"2..4, 7"`` (runs of step +1 or -1)."""
    parts, i = [], 0
    while i < len(values):
        j = i
        step = values[i + 1] - values[i] if i + 1 < len(values) else 0
        if step in (1, -1):
            while j + 1 < len(values) and values[j + 1] - values[j] == step:
                j += 1
        if j > i:
            parts.append(f"{values[i]}..{values[j]}")
        else:
            parts.append(str(values[i]))
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


def _blocks(luts):
    """Rectangles of equal configured cells: ``[(x0, x1, y0, y1, tables)]`` row-major."""
    height, width = luts.shape[:2]
    cells = {(x, y): tuple(int(v) for v in luts[y, x])
             for y, x in zip(*luts.any(axis=2).nonzero())}
    done, blocks = set(), []
    for y in range(height):
        for x in range(width):
            tables = cells.get((x, y))
            if tables is None or (x, y) in done:
                continue
            x1 = x
            while cells.get((x1 + 1, y)) == tables and (x1 + 1, y) not in done:
                x1 += 1
            y1 = y
            while all(cells.get((cx, y1 + 1)) == tables and (cx, y1 + 1) not in done
                      for cx in range(x, x1 + 1)):
                y1 += 1
            done.update((cx, cy) for cx in range(x, x1 + 1) for cy in range(y, y1 + 1))
            blocks.append((x, x1, y, y1, tables))
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
    for x0, x1, y0, y1, tables in blocks:
        xs = f"{x0}..{x1}" if x1 > x0 else f"{x0}"
        ys = f"{y0}..{y1}" if y1 > y0 else f"{y0}"
        body = _body(tables)
        rows.append((f"cell {xs},{ys}:", body, None if body in SHORTHANDS else _kind(tables)))
    pad = max((len(head) for head, _, _ in rows), default=0)
    for head, body, kind in rows:
        line = f"{head:<{pad}} {body}"
        if kind:
            line = f"{line:<{pad + 24}}  # {kind}"
        lines.append(line)
    return "\n".join(lines) + "\n"
