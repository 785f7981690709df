"""A program's netlist read back: :func:`extract_netlist` turns a BitGrid program and its
port map into the :class:`~bitgrid.netlist.Netlist` it computes, for the compiler to place
anew around bad cells (:mod:`bitgrid.relocate`'s ``compile`` strategy, ``bitgrid place``);
the wire and use helpers the relocation strategies share (:func:`used_outputs`).
"""

from .analysis import CellOutput, DependencyGraph, EdgeInput, EdgeOutput, path_timing
from .cell import COPY
from .netlist import CONST0, CONST1, InputPort, Lut, Netlist, OutputPort
from .terms import Direction, parity

__all__ = ["RelocationError", "used_outputs", "extract_netlist"]


class RelocationError(ValueError):
    """No exact relocation exists with the strategies tried; the message says what blocks it
    and what to do."""


def used_outputs(graph, portmap=None):
    """The used edge outputs of the program of ``graph`` (module docstring), a list of
    :class:`~bitgrid.analysis.EdgeOutput`."""
    if portmap is not None:
        return sorted({EdgeOutput(bit.side, bit.lane) for port in portmap.outputs
                       for bit in port.bits})
    used = []
    for node in graph.edge_outputs():
        (cell,) = graph.sources(node)
        if graph.luts[cell.y, cell.x, cell.d]:
            used.append(node)
    return used


def _relevant(graph, outputs):
    return {n for n in graph.upstream(outputs) if isinstance(n, CellOutput)}


def _is_wire(graph, node):
    """True if cell output ``node`` copies exactly one input (its LUT is a COPY table)."""
    lut = int(graph.luts[node.y, node.x, node.d])
    return lut in COPY


def _copied(graph, node):
    """The input side a wire ``node`` copies."""
    lut = int(graph.luts[node.y, node.x, node.d])
    return Direction(COPY.index(lut))


def extract_netlist(config, portmap, *, name="program"):
    """The LUT netlist (:mod:`bitgrid.netlist`) of a program with a port map, for a
    compiler back end to place anew.

    Each used logic cell output (a LUT that is no wire) becomes a netlist LUT over the
    nets its real support reads; wire chains collapse to the net they carry; edge inputs of
    the port map's input bits are the input port nets, other edge inputs the constant 0 (the
    lanes ``bitgrid eval`` drives 0); constant LUTs are :data:`~bitgrid.netlist.CONST0` /
    ``CONST1``. The result is combinational (no flip-flops) when every path to each output bit
    has a length (with the bit's skews) within one period ending at the latency: exact at the
    port map's design cycles.

    A program with loops (sequential state), or whose outputs hold earlier rows, is extracted
    with flip-flops (:func:`_extract_sequential`): a loop of ``c`` subcycles carries
    ``c / period`` registers.

    :raises RelocationError: for a path outside the period window (its rows would mix), or a
        program with loops whose timing does not fit whole design cycles.
    """
    graph = DependencyGraph(config)
    outputs = used_outputs(graph, portmap)
    timing = path_timing(graph, outputs)
    if timing.loops:
        return _extract_sequential(config, graph, portmap, outputs, name)
    in_bits = {}
    for port in portmap.inputs:
        for i, bit in enumerate(port.bits):
            in_bits[EdgeInput(bit.side, bit.lane)] = (f"{port.name}[{i}]", bit.skew)
    try:
        _check_windows(timing, portmap, in_bits)
    except RelocationError as error:
        try:        # a pipeline whose outputs hold earlier rows (a shift register)
            return _extract_sequential(config, graph, portmap, outputs, name)
        except RelocationError:
            raise error from None
    nets, luts = {}, {}

    def net(node):
        if node in nets:
            return nets[node]
        if isinstance(node, EdgeInput):
            result = in_bits.get(node, (CONST0, 0))[0]
        elif isinstance(node, EdgeOutput):
            result = net(graph.sources(node)[0])
        elif graph.is_constant(node):
            result = CONST1 if graph.luts[node.y, node.x, node.d] else CONST0
        elif _is_wire(graph, node):
            result = net(graph.driver(node.x, node.y, _copied(graph, node)))
        else:
            support = sorted(graph.support(node.x, node.y, node.d))
            inputs = tuple(net(graph.driver(node.x, node.y, k)) for k in support)
            lut = int(graph.luts[node.y, node.x, node.d])
            table = 0
            for address in range(1 << len(support)):
                full = sum(((address >> i) & 1) << k for i, k in enumerate(support))
                table |= ((lut >> full) & 1) << address
            result = f"c{node.x}_{node.y}_{node.d.letter}"
            luts[result] = Lut(inputs, table)
        nets[node] = result
        return result

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(graph.upstream(outputs)) + 1000))
    try:
        out_ports = {port.name: OutputPort(tuple(net(EdgeOutput(b.side, b.lane))
                                                 for b in port.bits), port.signed)
                     for port in portmap.outputs}
    finally:
        sys.setrecursionlimit(limit)
    in_ports = {port.name: InputPort(tuple(f"{port.name}[{i}]" for i in range(port.width)),
                                     port.signed) for port in portmap.inputs}
    return Netlist(name, in_ports, out_ports, luts)


def _check_windows(timing, portmap, in_bits):
    """Every path from an input bit to an output bit within the output's design-cycle window.

    :raises RelocationError: naming the first path outside."""
    for port in portmap.outputs:
        for bit in port.bits:
            out = EdgeOutput(bit.side, bit.lane)
            due = portmap.latency + bit.skew
            for source in sorted({s for s, _ in timing.paths[out] if s in in_bits}):
                skew_in = in_bits[source][1]
                for length in timing.lengths(out, source, start=skew_in):
                    real = skew_in + length
                    if not due - portmap.period < real <= due:
                        raise RelocationError(
                            f"output {port.name} lane {out} sees input {source} after {real} "
                            f"subcycles, outside the window {due - portmap.period + 1}..{due} "
                            "of its design cycle")


def _extract_sequential(config, graph, portmap, outputs, name):
    """The netlist, with flip-flops, of a program with loops (see :func:`extract_netlist`).

    Every used cell output ``n`` gets a *sample window* ``[a(n), b(n)]`` (subcycles, of the
    cell's update parity): its value after each subcycle ``k * period + t - 1``, ``a <= t <=
    b``, is its net's value in design cycle ``k`` (always just after an update of the cell,
    SPEC section 4). The output bits start it at their cells (``latency + skew``, rounded to
    the cell's parity), and a cell output read by ``v`` is sampled over ``v``'s window moved
    one subcycle earlier, the windows of its readers joined (a reader's moved by whole
    periods, or the joined window moved later by whole periods, whichever keeps the join
    narrowest: a reader that reads it a period later than its window reads it through a
    flip-flop, never ahead of it). A program compiled with exact tags has windows of one subcycle; one compiled
    with wave windows (:func:`bitgrid.compiler.timing.solve_waves`: operands within ``period -
    2`` subcycles of each other) joins them up to ``period - 2`` wide, the most a row is held
    at a cell. An edge ``u -> v`` then carries the whole periods between ``v``'s window moved
    back one subcycle and ``u``'s; a loop of ``c`` subcycles carries ``c / period``.
    Flip-flops start with the value the cell has at the window's end in a run from reset with
    every input 0 (the lanes before the first row). An input bit of skew ``s`` must be read by
    a cell sampled within ``s + 1 .. s + period`` (the row's window).

    :raises RelocationError: if the paths through a cell output differ by more than a row's
        window, or an input is read outside its row's window (the port map's latency does not
        fit).
    """
    period, latency = portmap.period, portmap.latency
    relevant = _relevant(graph, outputs)
    window, read = {}, {}           # cell output -> (a, b); output lane -> its read time
    for port in portmap.outputs:
        for bit in port.bits:
            (node,) = graph.sources(EdgeOutput(bit.side, bit.lane))
            due = latency + bit.skew
            wanted = due if (due - 1) % 2 == parity(node.x, node.y) else due - 1
            if window.get(node, (wanted, wanted)) != (wanted, wanted):
                raise RelocationError(f"cell output {node} drives two output bits read at "
                                      "different times")
            window[node] = (wanted, wanted)
            read[(bit.side, bit.lane)] = wanted
    in_bits = {}
    for port in portmap.inputs:
        for i, bit in enumerate(port.bits):
            in_bits[EdgeInput(bit.side, bit.lane)] = (f"{port.name}[{i}]", bit.skew)

    def settle(node, low, high):
        """Sample ``node`` over ``low .. high`` too (moved by whole periods); True if its
        window changed."""
        if node not in window:
            window[node] = (low, high)
            return True
        a, b = window[node]
        # the reader's window moved by d periods, or this one moved later by e (its other
        # readers then read it through e more flip-flops): never a reader ahead of its
        # source; the narrowest join, then the least moved
        joins = []
        for d in range(max(0, (a - high) // period - 1), max(0, (b - low) // period + 2)):
            joins.append((min(a, low + d * period), max(b, high + d * period), d))
        for e in range(1, max(1, (high - a) // period + 2) + 1):
            joins.append((min(a + e * period, low), max(b + e * period, high), e))
        *joined, _ = min(joins, key=lambda w: (w[1] - w[0], w[2]))
        joined = tuple(joined)
        if joined[1] - joined[0] > period - 2:
            raise RelocationError(f"the paths through {node} differ by more than the "
                                  f"{period - 2} subcycles a row is held: not a synchronous "
                                  "program")
        if joined == (a, b):
            return False
        window[node] = joined
        return True

    queue = list(window)
    while True:
        while queue:
            node = queue.pop()
            a, b = window[node]
            for source in graph.sources(node):
                if isinstance(source, CellOutput) and source in relevant \
                        and settle(source, a - 1, b - 1):
                    queue.append(source)
        # a cell that reads an input bit of skew s is sampled in the row's window s+1..s+P
        for node in list(window):
            for source in graph.sources(node):
                if source in in_bits and window[node][0] < in_bits[source][1] + 1:
                    short = in_bits[source][1] + 1 - window[node][0]
                    shift = period * -(-short // period)
                    a, b = window[node]
                    window[node] = (a + shift, b + shift)
                    queue.append(node)
        if not queue:
            break
    for node, (a, b) in window.items():
        for source in graph.sources(node):
            if source in in_bits:
                skew = in_bits[source][1]
                if not skew + 1 <= a <= b <= skew + period:
                    raise RelocationError(
                        f"{node} reads input {source} at subcycles {a}..{b} of its row, "
                        f"outside the row's window {skew + 1}..{skew + period} (the port map's "
                        "latency does not fit the paths)")
    sample = {node: b for node, (a, b) in window.items()}
    # The history of every sampled output in a run from reset with all inputs 0.
    depth = max(sample.values(), default=0)
    history = _history(config, depth)
    nets, luts, dffs, todo = {}, {}, {}, []

    def delay(source, node):
        """The whole periods from ``source``'s window to ``node``'s moved back one."""
        (a, b), (c, d) = window[source], window[node]
        registers = (b + 1 - d) // period
        if not a - registers * period <= c - 1 <= d - 1 <= b - registers * period:
            raise RelocationError(f"{node} reads {source} across a row boundary: not a "
                                  "synchronous program")
        return registers

    def resolve(node, d, seen=()):
        key = (node, d)
        if key in nets:
            return nets[key]
        if isinstance(node, EdgeInput):
            if node not in in_bits:
                result = CONST0
            elif d == 0:
                result = in_bits[node][0]
            else:
                result = f"{in_bits[node][0]}@{d}"
                todo.append(("in", node, d))
        elif graph.is_constant(node):
            result = CONST1 if graph.luts[node.y, node.x, node.d] else CONST0
        elif _is_wire(graph, node):
            source = graph.driver(node.x, node.y, _copied(graph, node))
            if node in seen:                        # a ring of wires only: it holds its 0
                result = CONST0
            else:
                extra = delay(source, node) if isinstance(source, CellOutput) else 0
                result = resolve(source, d + extra, seen + (node,))
        else:
            result = f"c{node.x}_{node.y}_{node.d.letter}" + (f"@{d}" if d else "")
            todo.append(("lut" if d == 0 else "dff", node, d))
        nets[key] = result
        return result

    def lane(bit):
        """An output bit's net: its cell output, through the registers between the cell's
        window and the lane's read time."""
        (node,) = graph.sources(EdgeOutput(bit.side, bit.lane))
        a, b = window[node]
        wanted = read[(bit.side, bit.lane)]
        registers = (b - wanted) // period
        if not a <= wanted + registers * period <= b:
            raise RelocationError(f"output lane {bit.side.letter}{bit.lane} is read across a "
                                  "row boundary: not a synchronous program")
        return resolve(node, registers)

    out_ports = {port.name: OutputPort(tuple(lane(b) for b in port.bits), port.signed)
                 for port in portmap.outputs}
    while todo:
        kind, node, d = todo.pop()
        net = nets[(node, d)]
        if net in luts or net in dffs:
            continue
        if kind == "in":
            dffs[net] = (resolve(node, d - 1), 0)
        elif kind == "dff":
            index = sample[node] - 1 - d * period
            init = int(history[index][node.d, node.y, node.x]) if index >= 0 else 0
            dffs[net] = (resolve(node, d - 1), init)
        else:
            support = sorted(graph.support(node.x, node.y, node.d))
            inputs = []
            for k in support:
                source = graph.driver(node.x, node.y, k)
                extra = delay(source, node) if isinstance(source, CellOutput) else 0
                inputs.append(resolve(source, extra))
            lut = int(graph.luts[node.y, node.x, node.d])
            table = 0
            for address in range(1 << len(support)):
                full = sum(((address >> i) & 1) << k for i, k in enumerate(support))
                table |= ((lut >> full) & 1) << address
            luts[net] = Lut(tuple(inputs), table)
    from .netlist import Dff
    in_ports = {port.name: InputPort(tuple(f"{port.name}[{i}]" for i in range(port.width)),
                                     port.signed) for port in portmap.inputs}
    return Netlist(name, in_ports, out_ports, luts,
                   {net: Dff(d, init) for net, (d, init) in dffs.items()})


def _history(config, steps):
    """Cell outputs after each of ``steps`` subcycles from reset with every edge input 0: a
    list of arrays ``(4, height, width)``."""
    from .emulator import Emulator
    emulator = Emulator(config)
    result = []
    for _ in range(steps):
        emulator.step()
        result.append(emulator.outputs.copy())
    return result
