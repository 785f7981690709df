"""The inter-chip link (SPEC section 8): the interfaces its layers share.

A link joins one side of a :class:`~bitgrid.hdl.mesh.MeshTile` to the opposite side of its
neighbour. Each direction is independent and has the same layers (docs/mesh.md):

* the **physical layer** (:mod:`bitgrid.hdl.link.phy`): a source-synchronous LVDS-style lane
  set, a forwarded clock and ``lanes`` data lanes, SDR or DDR. It carries a stream of
  :data:`Symbol` values (a byte and a control flag) and hides its own control symbols (idle,
  training, lane alignment). Pins: :class:`LanePinsSignature`.
* the **fault models** (:mod:`bitgrid.hdl.link.faults`): optional stages inside the physical
  layer, present only in simulation builds, that corrupt the line on command
  (:class:`FaultControlSignature`).
* the **link layer** (:mod:`bitgrid.hdl.link.layer`): frames with a sequence number, an
  acknowledgement and a CRC (:data:`bitgrid.protocol.link.LINK_FRAME_CRC`), go-back-N retransmission
  from a replay buffer, and credit (a full replay buffer stalls the sender).

Symbol control codes: the link layer uses control codes ``0x00..0x7f``; ``0x80..0xff`` belong to
the physical layer, which never delivers them.
"""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int
from bitgrid.hdl.signature import ParametricSignature

__all__ = ["Symbol", "SymbolStream", "LanePinsSignature", "FaultControlSignature",
           "FaultCountersSignature", "PHY_CONTROL_BASE"]

#: First control code reserved for the physical layer.
PHY_CONTROL_BASE = 0x80


class Symbol(data.Struct):
    """One symbol of the link: a byte and a flag that marks it a control code (9 bits)."""
    data: unsigned(8)
    ctrl: unsigned(1)


def SymbolStream(*, always_ready=False):
    """An :mod:`amaranth.lib.stream` signature carrying :class:`Symbol` payloads (valid, ready,
    payload; ``always_ready`` for a receiver that cannot be stalled, such as a line)."""
    return stream.Signature(Symbol, always_ready=always_ready)


class LanePinsSignature(ParametricSignature):
    """The pins of one link side, seen from the chip (``Out(LanePinsSignature(n))``).

    Members
    -------
    tx_clk : Out(1)
        Forwarded clock of the transmit lanes.
    tx_data : Out(lanes)
        Transmit data lanes; bit ``i`` is lane ``i``.
    rx_clk : In(1)
        Forwarded clock received from the neighbour.
    rx_data : In(lanes)
        Receive data lanes.

    Raises
    ------
    ValueError
        If ``lanes`` is not a positive integer.
    """

    parameters = ("lanes",)

    def __init__(self, lanes):
        self.lanes = check_int(lanes, "lanes", minimum=1)
        super().__init__({
            "tx_clk": Out(1), "tx_data": Out(lanes),
            "rx_clk": In(1), "rx_data": In(lanes),
        })


class FaultControlSignature(ParametricSignature):
    """Commands to the fault models of one transmit direction, seen from whoever drives them
    (a test bench): ``Out(FaultControlSignature(lanes))``. All zero means no faults.

    Probabilities are ``threshold / 65536`` per event, drawn from the fault model's own LFSR;
    ``0xffff`` means always (see :meth:`bitgrid.faults.FaultSpec.threshold`).

    Members
    -------
    flip : Out(16)
        Probability that one line bit is inverted (per bit, per lane).
    slip : Out(1)
        A one-cycle pulse: lane ``slip_lane`` drops one bit (a bit slip).
    slip_lane : Out(range(lanes))
    skew : Out(4 * lanes)
        Extra delay of lane ``i`` in bit times (0 to :data:`bitgrid.faults.MAX_SKEW_BITS`), in
        bits ``4i..4i+3``.
    disconnect : Out(1)
        While high, every data lane reads 0 (a pulled cable).
    drop : Out(16)
        Probability that a whole link-layer frame is dropped.
    duplicate : Out(16)
        Probability that a whole link-layer frame is sent twice.
    seed : Out(16)
        A change restarts the fault models' random generators from a state derived from the
        new value and the build's per-link start state: different seeds, different faults,
        without a new build (:attr:`bitgrid.faults.FaultSpec.seed`).
    """

    parameters = ("lanes",)

    def __init__(self, lanes):
        self.lanes = check_int(lanes, "lanes", minimum=1)
        super().__init__({
            "flip": Out(16), "slip": Out(1), "slip_lane": Out(range(max(lanes, 2))),
            "skew": Out(4 * lanes), "disconnect": Out(1),
            "drop": Out(16), "duplicate": Out(16), "seed": Out(16),
        })


class FaultCountersSignature(ParametricSignature):
    """What the fault models did (16-bit counters that saturate), seen from the fault models:
    ``Out(FaultCountersSignature())``.

    Members
    -------
    flips, slips, drops, duplicates : Out(16)
    disconnects : Out(16)
        Rising edges of ``disconnect``.
    """

    def __init__(self):
        super().__init__({name: Out(16) for name in
                          ("flips", "slips", "drops", "duplicates", "disconnects")})


