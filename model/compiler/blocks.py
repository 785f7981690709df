"""The arithmetic-block back end: a design recognised as one operation
(:func:`.operations.recognise`) becomes the library block for it, alone on a grid.

:func:`compile_operation` builds the block (:data:`bitgrid.library.MACROS`), inverts the
outputs the operation asks for (``le``, ``ge``, ``ne`` of a comparison: the LUT that drives
the lane, so the timing is unchanged), places it at the grid's north-west corner
(:meth:`bitgrid.library.Block.standalone`: port bits on the edge lanes, the skews and latency
derived from the LUTs) and renames the block's ports to the design's. The result is a
:class:`~bitgrid.compiler.backend.CompileResult` like every back end's; its report says
``back_end: "blocks"`` and names the block (``blocks``).
"""

import itertools
import time

from ..analysis import support
from ..library import MACROS, Block, LibraryError
from ..library.block import logic_census
from ..ports import Port, PortBit, PortMap
from ..terms import DIRECTIONS, E, N, S, W
from .errors import CompileError

__all__ = ["compile_operation", "standalone_report"]


def standalone_report(config, portmap, netlist, back_end, started, **extra):
    """The back-end report (as every back end's: ``cells`` logic / routing / delay / total,
    ``bounding_box``, ``grid``, ``period``, ``latency``, ...) of a program that is one block
    alone on its grid, the cells counted from ``config`` (a
    :class:`~bitgrid.config.Configuration`), ``extra`` entries added; ``started`` is the
    :func:`time.perf_counter` of the stage's start."""
    used = [(x, y) for y in range(config.height) for x in range(config.width)
            if config.luts[y, x].any()]
    logic = sum(logic_census({xy: config[xy] for xy in used}).values())
    xs, ys = [x for x, _ in used], [y for _, y in used]
    return {
        "back_end": back_end, **extra,
        "grid": [config.width, config.height], "region": None,
        "bounding_box": [min(xs), min(ys), max(xs), max(ys)],
        "cells": {"logic": logic, "routing": len(used) - logic, "delay": 0,
                  "total": len(used)},
        "luts": len(netlist.luts), "flip_flops": len(netlist.dffs),
        "period": portmap.period, "latency": portmap.latency,
        "times": {"place_route": round(time.perf_counter() - started, 4)},
    }


def _with_inverted_outputs(block, names):
    """``block`` with the output ports ``names`` (1 bit each) inverted at their lanes."""
    if not names:
        return block
    cells = dict(block.cells)
    for port in block.outputs:
        if port.name in names:
            for bit in port.bits:
                x, y = block.bit_cell(bit)
                tables = list(cells.get((x, y), (0, 0, 0, 0)))
                tables[bit.side] ^= 0xFFFF
                cells[(x, y)] = tuple(tables)
    return Block(block.name + " with " + ", ".join(sorted(names)) + " inverted", block.width,
                 block.height, cells, block.ports, period=block.period, doc=block.doc)


def _zero_rows_agree(netlist, lag):
    """Whether ``netlist``'s outputs are the same in its first ``lag + 1`` cycles with every
    input 0: then a registered operation is its block with the inputs ``lag`` rows later."""
    rows = netlist.simulate([{}] * (lag + 1))
    return all(row == rows[0] for row in rows)


def _spare_lanes(config, ports, direction):
    """The edge lanes no port of ``direction`` uses whose boundary cell ignores that side
    (``"in"``: no LUT reads it) or drives 0 there (``"out"``), as
    :class:`~bitgrid.ports.PortBit` s."""
    taken = {(bit.side, bit.lane) for port in ports for bit in port.bits
             if port.direction == direction}
    free = []
    for side in DIRECTIONS:
        lanes = config.width if side in (N, S) else config.height
        for lane in range(lanes):
            x, y = {N: (lane, 0), S: (lane, config.height - 1), W: (0, lane),
                    E: (config.width - 1, lane)}[side]
            tables = [int(t) for t in config.luts[y, x]]
            spare = (not any(side in support(t) for t in tables) if direction == "in"
                     else tables[side] == 0)
            if (side, lane) not in taken and spare:
                free.append(PortBit(side, lane))
    return free


def _take(pool, count, what):
    """``count`` lanes from the iterator ``pool`` (:func:`_spare_lanes`), as a tuple.

    :raises CompileError: if the pool runs out (naming ``what`` the lanes were for)."""
    bits = tuple(itertools.islice(pool, count))
    if len(bits) < count:
        raise CompileError(f"the block leaves no edge lanes for {what}")
    return bits


def compile_operation(operation, netlist, *, width=None, height=None):
    """The program of ``operation`` (an :class:`.operations.Operation`) for ``netlist``'s
    ports.

    :param netlist: the design's :class:`~bitgrid.netlist.Netlist` (its port names, widths
        and signedness; LUT and flip-flop counts for the report).
    :param width, height: the grid (cells); None: the block's box rounded up to even.
    A registered operation (``operation.lag`` rows, and ``input_lags`` for some inputs,
    :mod:`.operations`) is the same block with those input skews ``lag * P`` later, when the
    design's first ``history + 1`` cycles on zero inputs agree (else CompileError, and the
    LUT mappings are the candidates).

    :returns: :class:`~bitgrid.compiler.backend.CompileResult`.
    :raises CompileError: if the block does not fit the given size.
    """
    from .backend import CompileResult
    started = time.perf_counter()
    history = operation.history
    gated = operation.params.get("first_row", -1) >= 0     # the block shows row 0 itself
    if history and not gated and not _zero_rows_agree(netlist, history):
        raise CompileError(f"the {operation.describe()} block: the design's first "
                           f"{history + 1} cycles on zero inputs differ, so its "
                           "registers are not the block's inputs later")
    try:
        block = MACROS[operation.macro].build(**operation.params)
        block = _with_inverted_outputs(block, operation.inverted)
    except LibraryError as error:
        raise CompileError(f"the {operation.describe()} block: {error}") from None
    gw, gh = block.width + block.width % 2, block.height + block.height % 2
    if width is not None and width < gw or height is not None and height < gh:
        error = CompileError(f"the design does not fit a {width} x {height} grid: its "
                             f"{operation.describe()} block needs a {gw} x {gh} grid; give a "
                             "larger --size, or none")
        error.needs = (gw * gh, block.cell_count)     # as the sweep's: the smallest is named
        raise error
    alone = block.standalone(width=width, height=height)
    design_ports = {**netlist.inputs, **netlist.outputs}
    # lanes the block ignores (for design input bits it does not read) or leaves 0 (for
    # design output bits the operation makes 0)
    spare = {d: iter(_spare_lanes(alone.config, alone.portmap.ports, d)) for d in ("in", "out")}
    ports = []
    for port in alone.portmap.ports:
        mapping = operation.ports.get(port.name)
        if mapping is None:
            continue                    # a block output the design does not use
        for name, offset in ((mapping, 0),) if isinstance(mapping, str) else mapping:
            own = design_ports[name]
            bits = port.bits[offset:offset + len(own.bits)]
            # design bits past the block's (a memory's address beyond its words, its read
            # data zero-extended)
            bits += _take(spare[port.direction], len(own.bits) - len(bits), f"port {name}")
            lag = operation.lag + operation.input_lags.get(port.name, 0)
            if port.direction == "in" and lag:      # registers in front: rows come later
                bits = tuple(bit._replace(skew=bit.skew + lag * alone.portmap.period)
                             for bit in bits)
            ports.append(port._replace(name=name, bits=bits, signed=own.signed))
    for name, own in netlist.inputs.items():        # inputs nothing reads (Amaranth's rst)
        if name not in operation.design_ports:
            ports.append(Port(name, "in", _take(spare["in"], len(own.bits), f"port {name}"),
                              own.signed))
    portmap = PortMap(alone.portmap.width, alone.portmap.height, ports,
                      period=alone.portmap.period, latency=alone.portmap.latency,
                      history=history)
    extra = ({"registers": {"kind": "block", "lag": operation.lag,
                            "history": history}} if history else {})
    report = standalone_report(alone.config, portmap, netlist, "blocks", started,
                               blocks=[block.name], operation=operation.kind, **extra)
    return CompileResult(alone.config, portmap, report)
