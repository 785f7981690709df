"""The one-cell state machine: a small sequential design in one cell and its neighbours
(issue 23: a register loop placed next to the logic that feeds it), and the one-cell function.

A cell's four outputs are four arbitrary functions of its four inputs (SPEC section 3). A
design whose state bits and input bits number at most 4 together (at most 3 state bits) is
therefore one cell ``X`` at ``(1, 0)`` of a 3 x 2 box (a 4 x 2 grid): each of its four LUTs is a
next-state function or an output function of the design, as a truth table over its four
inputs. Each state bit leaves ``X`` on an E, S or W side whose neighbour sends it straight
back (a *reflector*: a loop of two cells, one period of 2 subcycles, so the machine takes a
new input row every cycle); input bits enter ``X`` by its N side (grid lane N1) or through a
side neighbour that relays an edge lane (W lane 0, S lane 1, E lane 0); one output bit
leaves by ``X``'s own N side (N1 out), the others through the relaying neighbours. Before row
0 the lanes are 0 and every cell output is 0, so the machine steps from its reset state on
zero inputs: that state (every flip-flop's ``init``) must be 0 and stay 0 under zero inputs
(the sequence detector's state 0 does), otherwise the design is not taken here. A 1-bit input
that zeroes every next state and that no output reads (a synchronous reset) does not count
among the four: the reflectors apply it (``q & ~rst``), fed from S lane 1 of a 3 x 3 box by
paths of equal length, and the design's one other input and one output use X's N side. The
timing
(skews, latency) comes from the LUTs (:class:`bitgrid.library.Block`, the reflectors' outputs
declared as registers).

A combinational design of at most 4 input bits and 4 output bits is the same cell without
state: each output a LUT of X over the four inputs (a 2 x 2 multiplier is 4 cells).

:func:`compile_one_cell` returns the program, or None for a design this does not fit.
"""

import time

from ..cell import COPY
from ..library import Block, LibraryError
from ..terms import E, N, S, W
from .blocks import standalone_report

__all__ = ["compile_one_cell"]

#: X's neighbour on each side, the edge lane it relays for X, and the lane's side.
_NEIGHBOURS = {E: ((2, 0), (E, 0)), S: ((1, 1), (S, 1)), W: ((0, 0), (W, 0))}
#: X's position.
_X = (1, 0)
#: With a synchronous reset: the side each reflector (by X's side) reads rst from, and the
#: cells that carry rst from S lane 1 of a 3 x 3 box to the three reflectors by paths of the
#: same length (3 cells: the same wave), as {cell: [(output, input copied)]}.
_RESET_SIDE = {E: S, W: S, S: E}
_RESET_TREE = {(1, 2): [(W, S), (E, S)], (0, 2): [(N, E)], (0, 1): [(N, S)],
               (2, 2): [(N, W)], (2, 1): [(N, S), (W, S)]}
#: The copy of one input, by side (SPEC section 3).


def _reset(netlist, state, inputs):
    """The input bit ``(port, index, net)`` that is a synchronous reset to 0 (every next
    state is 0 while it is 1, and no output reads it), or None."""
    names = state + [net for _, _, net in inputs]
    outputs = [net for port in netlist.outputs.values() for net in port.bits]
    for bit in inputs:
        others = [net for net in names if net != bit[2]]
        if len(others) > 4:
            continue
        ok = True
        for address in range(1 << len(others)):
            base = {net: (address >> i) & 1 for i, net in enumerate(others)}
            high, low = (netlist.settle({**base, bit[2]: v}) for v in (1, 0))
            if any(high[netlist.dffs[q].d] for q in state) or \
                    any(high[net] != low[net] for net in outputs):
                ok = False
                break
        if ok:
            return bit
    return None


def _functions(netlist, variables, reset=None):
    """{net: truth table over ``variables`` (list of nets, variable i = address bit i)} of
    every flip-flop input and output bit of ``netlist`` (with the ``reset`` net held 0)."""
    wanted = [d.d for d in netlist.dffs.values()] + [net for port in netlist.outputs.values()
                                                     for net in port.bits]
    tables = dict.fromkeys(wanted, 0)
    for address in range(1 << len(variables)):
        values = {net: (address >> i) & 1 for i, net in enumerate(variables)}
        if reset is not None:
            values[reset] = 0
        values = netlist.settle(values)
        for net in wanted:
            tables[net] |= values[net] << address
    return tables


def _table_over_sides(table, sides):
    """A 16-entry LUT (SPEC section 3: address N | E<<1 | S<<2 | W<<3) computing ``table``, a
    truth table over variables read on ``sides`` (variable i on ``sides[i]``)."""
    lut = 0
    for address in range(16):
        index = sum(((address >> int(side)) & 1) << i for i, side in enumerate(sides))
        lut |= ((table >> index) & 1) << address
    return lut


def compile_one_cell(netlist, *, width=None, height=None):
    """The one-cell program of ``netlist`` (module docstring), or None if it does not fit
    (or does not fit a ``width`` x ``height`` grid, when given).

    :returns: a :class:`~bitgrid.compiler.backend.CompileResult` or None.
    """
    from ..ports import PortMap
    from .backend import CompileResult
    started = time.perf_counter()
    state = list(netlist.dffs)
    inputs = [(name, i, net) for name, port in netlist.inputs.items()
              for i, net in enumerate(port.bits)]
    outputs = [(name, i, net) for name, port in netlist.outputs.items()
               for i, net in enumerate(port.bits)]
    if len(state) > 3 or len(state) + len(inputs) > 5 or not outputs or not inputs:
        return None
    if any(dff.init for dff in netlist.dffs.values()):
        return None
    reset = _reset(netlist, state, inputs) if state else None
    if reset is not None:
        inputs = [bit for bit in inputs if bit[2] != reset[2]]
        if len(inputs) > 1 or len(outputs) > 1:
            return None                 # with a reset: X's N side only
    if len(state) + len(inputs) > 4:
        return None
    variables = state + [net for _, _, net in inputs]
    tables = _functions(netlist, variables, reset=reset and reset[2])
    if any(tables[netlist.dffs[q].d] & 1 for q in state):
        return None                     # state 0 does not stay 0 under zero inputs
    full = (1 << (1 << len(variables))) - 1
    if any(tables[net] == full for _, _, net in outputs):
        return None                     # a constant 1: no input's path times its first row
    sides = [E, S, W][:len(state)]
    relays = [side for side in (W, S, E) if side not in sides]
    input_sides = ([N] + relays)[:len(inputs)]
    output_sides = [N] + relays
    if len(outputs) > len(output_sides):
        return None
    cells = {_X: [0, 0, 0, 0]}
    variable_sides = sides + input_sides
    registers = set()
    ports = {}
    for side, q in zip(sides, state):
        cells[_X][side] = _table_over_sides(tables[netlist.dffs[q].d], variable_sides)
        xy, _ = _NEIGHBOURS[side]
        tables_ = cells.setdefault(xy, [0, 0, 0, 0])
        back = side.opposite
        if reset is None:
            tables_[back] = COPY[back]                      # back into X
        else:                                                # 0 when rst
            rst = _RESET_SIDE[side]
            tables_[back] = COPY[back] & ~COPY[rst] & 0xFFFF
        registers.add((*xy, back))
    if reset is not None:
        for xy, copies in _RESET_TREE.items():
            tables_ = cells.setdefault(xy, [0, 0, 0, 0])
            for out, source in copies:
                tables_[out] = COPY[source]
        ports[reset[0]] = ("in", {reset[1]: (S, 1)})
    for (name, i, _), side in zip(inputs, input_sides):
        if side == N:
            bit = (N, _X[0])
        else:
            xy, (lane_side, lane) = _NEIGHBOURS[side]
            tables_ = cells.setdefault(xy, [0, 0, 0, 0])
            tables_[side.opposite] = COPY[lane_side]        # the edge lane on into X
            bit = (lane_side, lane)
        ports.setdefault(name, ("in", {}))[1][i] = bit
    for (name, i, net), side in zip(outputs, output_sides):
        cells[_X][side] = _table_over_sides(tables[net], variable_sides)
        if side == N:
            bit = (N, _X[0])
        else:
            xy, (lane_side, lane) = _NEIGHBOURS[side]
            cells.setdefault(xy, [0, 0, 0, 0])[lane_side] = COPY[side.opposite]  # to the edge
            bit = (lane_side, lane)
        ports.setdefault(name, ("out", {}))[1][i] = bit
    design_ports = {**netlist.inputs, **netlist.outputs}
    block_ports = [(name, direction, [bits[i] for i in range(len(bits))],
                   design_ports[name].signed)
                   for name, (direction, bits) in ports.items()]
    try:
        kind = "state machine" if state else "function"
        block = Block(f"one-cell {kind} of {netlist.name}", 3,
                      2 if reset is None else 3,
                      {xy: tuple(t) for xy, t in cells.items()}, block_ports,
                      registers=registers)
        alone = block.standalone(width=width, height=height)
    except LibraryError:
        return None
    config = alone.config
    portmap = PortMap(config.width, config.height,
                      [alone.portmap[name] for name in design_ports],
                      period=alone.portmap.period, latency=alone.portmap.latency)
    report = standalone_report(config, portmap, netlist, "one-cell", started)
    return CompileResult(config, portmap, report)

