"""Registers absorbed into port timing (issue 40): a feed-forward design compiled at period 2.

A BitGrid program is a wave pipeline: the value a net holds for row ``k`` passes a cell
``P`` subcycles after the value for row ``k - 1`` (SPEC section 4, :mod:`.sweep`). A design
register ``q <= d`` that is not in a feedback loop only says that ``q`` in design cycle ``k``
is ``d`` of cycle ``k - 1``: the same net one row later. So it needs no cells: the design is
compiled as if every such register were a wire, and the rows are renumbered per net instead
(the retiming of Leiserson and Saxe, 1991, with the rows of the wave pipeline as its clock).

The *lag* ``r(v)`` of a net says which design cycle the combinational copy of the design
computes in wave ``j``: ``v(j + r(v))``. A LUT's inputs and output share a lag; a register's
output lags its input by one: ``r(q) = r(d) + 1``. :func:`absorb_registers` solves these
equalities (a weighted union-find); a design where they disagree (a register on some paths
of a reconvergence and not others, or any feedback loop) is not retimed and keeps the
sequential back end. The port map then moves each port bit by its lag: an input bit of lag
``r`` (at most 0) is applied ``-r * P`` subcycles later, an output bit of lag ``r`` read
``r * P`` subcycles earlier (:func:`apply_lags`); the latency stays.

Initial values. Design cycle 0 of a register ``q`` is wave ``-r(q)``; there the copy must show
``init``, not what the wave computed from the rows before row 0. Where zero inputs keep every
register at its ``init`` (the initial state is the rest state: a multiply, an add, a delay
line, every register reset to 0 after logic that maps 0 to 0), the lanes' zeros before row 0
are that rest, so every register is a wire, however deep, and every output is read in a wave
of 0 or later. Otherwise two cases are exact:

* *lane registers*: ``q``'s input is an input bit or another lane register, and every
  ``init`` on the way is 0. The lane carries 0 before its row 0 (docs/ports.md), so wave
  ``-r(q)`` reads 0: ``q`` is a wire.
* *gated registers* of lag 1: ``q = start ? d : init`` with :data:`bitgrid.netlist.START`, 0
  in the rows before row 0 (the start cell the sweep already builds for state machines), so
  wave -1 shows ``init`` and every later wave ``d``. One LUT per register, folded by the
  clean-up into the LUT that computes ``d`` where it has an input to spare.

A component of the design whose gated registers cannot all have lag 1 with its inputs at lag 0
or less (two register stages after logic) is not retimed (None, with the reason).
"""

import typing

from ..netlist import CONST0, CONST1, START, Lut, Netlist
from .errors import CompileError

__all__ = ["Retimed", "absorb_registers", "apply_lags", "compile_retimed"]


#: Why a design whose lags contradict each other keeps its registers.
_DISAGREEMENT = ("a feedback loop, or paths that meet after unequal numbers of registers (it "
                 "keeps its registers)")


class Retimed(typing.NamedTuple):
    """A design with its registers absorbed: ``netlist`` (combinational; its gated registers
    read :data:`~bitgrid.netlist.START`), ``input_lags`` and ``output_lags`` (``{(port,
    bit index): lag}``, design cycles; inputs at most 0), ``registers`` (how many were
    absorbed) and ``gated`` (how many of them needed a start gate)."""
    netlist: Netlist
    input_lags: dict
    output_lags: dict
    registers: int
    gated: int


class _Lags:
    """A union-find over nets with an offset to the root: ``lag(v) = lag(root) + offset``."""

    def __init__(self):
        self.parent, self.offset = {}, {}

    def find(self, net):
        if net not in self.parent:
            self.parent[net], self.offset[net] = net, 0
            return net, 0
        path = []
        while self.parent[net] != net:
            path.append(net)
            net = self.parent[net]
        root = net
        for node in reversed(path):         # compress, keeping offsets to the root
            parent = self.parent[node]
            if parent != root:
                self.offset[node] += self.offset[parent]
            self.parent[node] = root
        return root, self.offset[path[0]] if path else 0

    def join(self, a, b, difference):
        """Record ``lag(b) - lag(a) = difference``; False if it contradicts what is known."""
        (ra, oa), (rb, ob) = self.find(a), self.find(b)
        if ra == rb:
            return ob - oa == difference
        self.parent[rb] = ra                 # lag(rb) = lag(ra) + oa + difference - ob
        self.offset[rb] = oa + difference - ob
        return True


def absorb_registers(netlist):
    """The design with its registers absorbed into port timing (module docstring).

    :param netlist: a :class:`~bitgrid.netlist.Netlist` with flip-flops.
    :returns: ``(Retimed, None)``, or ``(None, reason)`` when the design keeps its registers
        (no flip-flops, a feedback loop, unequal register counts on reconverging paths, gated
        registers at different depths, or an input needed before its row).
    """
    if not netlist.dffs:
        return None, "no registers"
    lags = _Lags()
    constants = {CONST0, CONST1, START}
    for net, lut in netlist.luts.items():
        lags.find(net)
        for source in lut.inputs:
            if source not in constants and not lags.join(source, net, 0):
                return None, _DISAGREEMENT
    for q, dff in netlist.dffs.items():
        lags.find(q)
        if dff.d not in constants and not lags.join(dff.d, q, 1):
            return None, _DISAGREEMENT
    input_nets = {net for port in netlist.inputs.values() for net in port.bits}
    for net in input_nets:
        lags.find(net)

    lane = {}

    def is_lane(q):
        """A lane register: init 0, fed by an input bit or a lane register (memoised)."""
        chain = []
        while q not in lane:
            dff = netlist.dffs[q]
            if dff.init:
                lane[q] = False
                break
            if dff.d in input_nets or dff.d == CONST0:
                lane[q] = True
                break
            if dff.d not in netlist.dffs:
                lane[q] = False
                break
            chain.append(q)
            q = dff.d
        for net in chain:
            lane[net] = lane[q]
        return lane[q]

    gated = set() if _rest_is_reset(netlist) else {q for q in netlist.dffs if not is_lane(q)}
    # One shift per component: gated registers at lag 1, inputs at lag 0 or less, and
    # where nothing is gated the outputs at lag 0 or less (rows read in steady state).
    shift = {}
    for q in gated:
        root, offset = lags.find(q)
        if shift.setdefault(root, 1 - offset) != 1 - offset:
            return None, ("its registers after logic sit at different depths (two or more "
                          "register stages after logic)")
    output_nets = {net for port in netlist.outputs.values() for net in port.bits
                   if net not in constants}
    highest = {}
    for net in output_nets:
        root, offset = lags.find(net)
        highest[root] = max(highest.get(root, offset), offset)
    for net in input_nets:
        root, offset = lags.find(net)
        if root not in shift:
            shift[root] = -highest.get(root, offset)
    for net in input_nets:
        root, offset = lags.find(net)
        if offset + shift[root] > 0:
            return None, ("an input would be needed before its row (registers on inputs "
                          "after others went through logic)")

    def lag(net):
        if net in constants:
            return 0
        root, offset = lags.find(net)
        return offset + shift.get(root, -highest.get(root, offset))

    luts = dict(netlist.luts)
    for q, dff in netlist.dffs.items():
        if q in gated:              # at lag 1 (its component's shift)
            # start ? d : init; inputs (start, d): address start | d << 1
            luts[q] = Lut((START, dff.d), dff.init | dff.init << 2 | 1 << 3)
        else:
            luts[q] = Lut((dff.d,), 0b10)
    combinational = Netlist(netlist.name, netlist.inputs, netlist.outputs, luts)
    input_lags = {(name, i): lag(net) for name, port in netlist.inputs.items()
                  for i, net in enumerate(port.bits)}
    output_lags = {(name, i): lag(net) for name, port in netlist.outputs.items()
                   for i, net in enumerate(port.bits)}
    return Retimed(combinational, input_lags, output_lags, len(netlist.dffs), len(gated)), None


def _rest_is_reset(netlist):
    """Whether the registers' initial values are what zero inputs keep them at: every ``d``
    is its register's ``init`` with every input 0 and every register at its ``init``. Then the
    rows before row 0 (the lanes' zeros) leave every register at its ``init``, and all of them
    are wires, however many stages deep."""
    values = {net: 0 for port in netlist.inputs.values() for net in port.bits}
    values.update({q: dff.init for q, dff in netlist.dffs.items()})
    values = netlist.settle(values)
    return all(values[dff.d] == dff.init for dff in netlist.dffs.values())


def apply_lags(portmap, retimed):
    """``portmap`` (of the combinational copy) with every port bit moved by its lag: an input
    bit of lag ``r`` gets skew ``skew - r * P``, an output bit ``skew - r * P``; its
    ``history`` (the rows an output reaches back: a server's whole rows wait for them) is the
    largest output lag less the smallest input lag.

    :returns: the new :class:`~bitgrid.ports.PortMap`, or None when an output bit would be
        read before subcycle 1 (``latency + skew < 1``).
    """
    period = portmap.period
    ports = []
    for port in portmap.ports:
        lags = retimed.input_lags if port.direction == "in" else retimed.output_lags
        bits = tuple(bit._replace(skew=bit.skew - lags[(port.name, i)] * period)
                     for i, bit in enumerate(port.bits))
        if port.direction == "out" and any(portmap.latency + b.skew < 1 for b in bits):
            return None
        ports.append(port._replace(bits=bits))
    history = max(0, max(retimed.output_lags.values(), default=0)
                  - min(retimed.input_lags.values(), default=0))
    return portmap.replace(ports=ports, history=history)


def compile_retimed(netlist, alternatives=None, *, pins=None, **options):
    """``netlist``'s registers absorbed into port timing (:mod:`.retime`) and the
    combinational copy compiled (with the copies of the ``alternatives``); None where the
    design keeps its registers (a feedback loop, unequal register depths) or the copy does
    not compile or cannot be read as early as its lags need. The report says ``registers``:
    ``"retimed"`` with the counts.

    :param options: :func:`~.backend.compile_netlist`'s grid options (``pins`` is ignored: the
        caller retimes only without fixed pins).
    :returns: a :class:`~.backend.CompileResult`, or None.
    """
    from .backend import compile_netlist
    retimed, _ = absorb_registers(netlist)
    if retimed is None:
        return None
    copies = {}
    for name, other in (alternatives or {}).items():
        copy, _ = absorb_registers(other)
        if copy is not None and copy.input_lags == retimed.input_lags \
                and copy.output_lags == retimed.output_lags:
            copies[name] = copy.netlist
    try:
        result = compile_netlist(retimed.netlist, alternatives=copies, **options)
    except CompileError:
        return None
    portmap = apply_lags(result.portmap, retimed)
    if portmap is None:
        return None
    report = dict(result.report, luts=len(netlist.luts), flip_flops=len(netlist.dffs),
                  registers={"kind": "retimed", "absorbed": retimed.registers,
                             "gated": retimed.gated, "history": portmap.history})
    return result._replace(portmap=portmap, report=report)
