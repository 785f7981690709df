"""A LUT netlist: the design the compiler places and routes (``bitgrid compile``, issue 12).

Front ends (Verilog or Amaranth through Yosys, the ``--expr`` shorthand) produce a
:class:`Netlist`; ``bitgrid place`` extracts one from a program; the back end
(:mod:`bitgrid.compiler`) packs it into cells, places, routes and balances it, and writes a
configuration with its port map (:mod:`bitgrid.ports`).

A netlist is single-clock and synchronous. Nets are named by strings. It has:

* input ports: ``name -> InputPort(bits, signed)``, ``bits`` being the port's nets, least
  significant first (the clock is not a port: there is one implicit design clock);
* output ports: ``name -> OutputPort(bits, signed)``, ``bits`` being the nets that drive the
  port (any net, including an input bit or a constant);
* LUTs: ``net -> Lut(inputs, table)``: the net is ``table``'s bit ``a`` where
  ``a = sum(value(inputs[i]) << i)`` (so input 0 is address bit 0, as a cell's input N is,
  SPEC section 3); at most 4 inputs, ``table`` has ``2 ** len(inputs)`` bits;
* flip-flops: ``net -> Dff(d, init)``: the net is the register's output; it takes the value
  of net ``d`` at every clock edge and is ``init`` (0 or 1) before the first one.

:data:`CONST0` and :data:`CONST1` are the constant nets. :data:`START` is the compiler's
first-cycle net: 1 in every design cycle of a simulation (which starts at cycle 0); in a
compiled program it is 0 in the rows before row 0 (the start cell, :mod:`bitgrid.compiler`),
so that a register's first cycle can be gated with it. Combinational loops (a loop of LUTs
with no flip-flop) are not allowed.

Cycle semantics (:meth:`Netlist.simulate`, the reference model for compiled programs): in
design cycle ``k`` the inputs hold row ``k``; outputs are sampled just before the clock edge
that ends cycle ``k``, so a combinational output reflects row ``k`` and a register the state
after ``k`` edges; then every flip-flop takes its ``d``.
"""

import typing

__all__ = ["CONST0", "CONST1", "START", "NetlistError", "Lut", "Dff", "InputPort", "OutputPort",
           "Netlist"]

#: The constant nets.
CONST0, CONST1 = "$0", "$1"
#: The first-cycle net (module docstring): 1 from design cycle 0 on, 0 before it.
START = "$start"
#: Largest LUT arity (a BitGrid cell has 4 inputs).
MAX_LUT_INPUTS = 4


class NetlistError(ValueError):
    """A netlist that breaks the rules above (the message names the net)."""


class Lut(typing.NamedTuple):
    """A LUT: ``inputs`` (tuple of at most 4 nets, input 0 = address bit 0) and ``table``
    (an int of ``2 ** len(inputs)`` bits)."""
    inputs: tuple
    table: int

    def evaluate(self, values):
        """The output for input values ``values`` (a sequence of 0/1 in input order)."""
        address = 0
        for i, v in enumerate(values):
            address |= (int(v) & 1) << i
        return (self.table >> address) & 1


class Dff(typing.NamedTuple):
    """A D flip-flop of the design clock: output net <- ``d`` at each edge; ``init`` 0 or 1."""
    d: str
    init: int = 0


class InputPort(typing.NamedTuple):
    """An input port: ``bits`` (its nets, least significant first), ``signed``."""
    bits: tuple
    signed: bool = False


class OutputPort(typing.NamedTuple):
    """An output port: ``bits`` (the nets driving it, least significant first), ``signed``."""
    bits: tuple
    signed: bool = False


class Netlist:
    """A single-clock LUT4 + flip-flop netlist (see the module docstring).

    :param name: the design's name (the top module's), used for output file names.
    :param inputs, outputs: dicts of :class:`InputPort` / :class:`OutputPort` by port name.
    :param luts: dict ``net -> Lut``; :param dffs: dict ``net -> Dff``.
    :raises NetlistError: from :meth:`check` (called here).
    """

    def __init__(self, name, inputs, outputs, luts=None, dffs=None):
        self.name = name
        self.inputs = {k: InputPort(tuple(v.bits), bool(v.signed)) for k, v in inputs.items()}
        self.outputs = {k: OutputPort(tuple(v.bits), bool(v.signed))
                        for k, v in outputs.items()}
        self.luts = {k: Lut(tuple(v.inputs), int(v.table)) for k, v in (luts or {}).items()}
        self.dffs = {k: Dff(v.d, int(v.init)) for k, v in (dffs or {}).items()}
        self.check()

    def __repr__(self):
        return (f"Netlist({self.name!r}: {len(self.inputs)} inputs, {len(self.outputs)} outputs,"
                f" {len(self.luts)} LUTs, {len(self.dffs)} flip-flops)")

    # Structure --------------------------------------------------------------------------------
    def drivers(self):
        """``net -> kind`` for every driven net: ``"const"``, ``"input"``, ``"lut"``, ``"dff"``."""
        kinds = {CONST0: "const", CONST1: "const", START: "const"}
        for port in self.inputs.values():
            for net in port.bits:
                kinds[net] = "input"
        for net in self.luts:
            kinds[net] = "lut"
        for net in self.dffs:
            kinds[net] = "dff"
        return kinds

    def check(self):
        """Check the rules of the module docstring.

        :raises NetlistError: a net driven twice, a net used but never driven, a LUT with more
            than 4 inputs or a table of the wrong size, a bad ``init``, or a combinational loop.
        """
        seen = {CONST0: "constant", CONST1: "constant", START: "the start net"}

        def drive(net, what):
            if not isinstance(net, str) or not net:
                raise NetlistError(f"{what}: a net is a non-empty string, not {net!r}")
            if net in seen:
                raise NetlistError(f"Net {net} is driven twice ({seen[net]} and {what})")
            seen[net] = what

        for name, port in self.inputs.items():
            if not port.bits:
                raise NetlistError(f"Input port {name} has no bits")
            for i, net in enumerate(port.bits):
                drive(net, f"input {name}[{i}]")
        for net, lut in self.luts.items():
            drive(net, "a LUT")
            if len(lut.inputs) > MAX_LUT_INPUTS:
                raise NetlistError(f"LUT {net} has {len(lut.inputs)} inputs; at most "
                                   f"{MAX_LUT_INPUTS}")
            if not 0 <= lut.table < 1 << (1 << len(lut.inputs)):
                raise NetlistError(f"LUT {net}: table 0x{lut.table:x} is not "
                                   f"{1 << len(lut.inputs)} bits")
        for net, dff in self.dffs.items():
            drive(net, "a flip-flop")
            if dff.init not in (0, 1):
                raise NetlistError(f"Flip-flop {net}: init is 0 or 1, not {dff.init!r}")
        for net, lut in self.luts.items():
            for source in lut.inputs:
                if source not in seen:
                    raise NetlistError(f"LUT {net} reads net {source}, which nothing drives")
        for net, dff in self.dffs.items():
            if dff.d not in seen:
                raise NetlistError(f"Flip-flop {net} reads net {dff.d}, which nothing drives")
        for name, port in self.outputs.items():
            if not port.bits:
                raise NetlistError(f"Output port {name} has no bits")
            for i, source in enumerate(port.bits):
                if source not in seen:
                    raise NetlistError(f"Output {name}[{i}] is net {source}, which nothing "
                                       "drives")
        self._order = self._topological_order()

    def _topological_order(self):
        order, state = [], {}
        for root in self.luts:
            if root in state:
                continue
            stack = [(root, iter(self.luts[root].inputs))]
            state[root] = 1
            while stack:
                net, children = stack[-1]
                for child in children:
                    if child not in self.luts:
                        continue
                    if state.get(child) == 1:
                        raise NetlistError(f"Combinational loop through LUT {child}: every "
                                           "loop needs a flip-flop")
                    if child not in state:
                        state[child] = 1
                        stack.append((child, iter(self.luts[child].inputs)))
                        break
                else:
                    stack.pop()
                    state[net] = 2
                    order.append(net)
        return order

    @property
    def order(self):
        """The LUT nets in topological order (every LUT after the LUTs it reads)."""
        return list(self._order)

    # Reference simulation ---------------------------------------------------------------------
    def settle(self, values):
        """``values`` ({net: 0/1} of every input bit and flip-flop output) with the constants
        and every LUT net added, in topological order: one design cycle's combinational
        logic."""
        values = {CONST0: 0, CONST1: 1, START: 1, **values}
        for net in self._order:
            lut = self.luts[net]
            values[net] = lut.evaluate([values[i] for i in lut.inputs])
        return values

    def simulate(self, rows):
        """Run the design for ``len(rows)`` design cycles (module docstring semantics).

        :param rows: a sequence of dicts ``port name -> int`` (every input port; a signed
            port's value may be negative; missing ports are 0).
        :returns: a list of dicts ``port name -> int``, one per row (signed ports
            sign-extended).
        :raises KeyError: for a row naming an unknown port.
        """
        state = {net: dff.init for net, dff in self.dffs.items()}
        results = []
        for row in rows:
            unknown = set(row) - set(self.inputs)
            if unknown:
                raise KeyError(f"Unknown input ports {sorted(unknown)}")
            values = dict(state)
            for name, port in self.inputs.items():
                value = int(row.get(name, 0))
                for i, net in enumerate(port.bits):
                    values[net] = (value >> i) & 1
            values = self.settle(values)
            out = {}
            for name, port in self.outputs.items():
                value = sum(values[net] << i for i, net in enumerate(port.bits))
                if port.signed and value >> (len(port.bits) - 1):
                    value -= 1 << len(port.bits)
                out[name] = value
            results.append(out)
            state = {net: values[dff.d] for net, dff in self.dffs.items()}
        return results
