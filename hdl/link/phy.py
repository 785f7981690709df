"""The physical layer of the inter-chip link (SPEC section 8): a source-synchronous LVDS-style
lane set, a forwarded clock and ``lanes`` data lanes, SDR or DDR.

The line code (line symbols, control codes, PRBS-7) is :mod:`bitgrid.hdl.link.linecode`; this
module re-exports its names, and those of the two halves, so that ``bitgrid.hdl.link.phy`` is
the one import for the physical layer.

Components
----------
* :class:`PhyTx` (``sync``): symbols to a parallel bit vector, ``k`` bits per lane per cycle
  (``k = 1`` SDR, ``k = 2`` DDR).
* :class:`LaneAligner` (receive domain): bit alignment of one lane.
* :class:`PhyRx`: bit alignment, lane deskew, removal of PHY control codes, crossing into
  ``sync``, PRBS checker, counters.
* :class:`LinkPhy`: the component a tile uses: both directions, I/O buffers
  (:mod:`bitgrid.hdl.link.ddr`), forwarded clocks and the optional fault models
  (:mod:`bitgrid.hdl.link.faults`).
"""

from amaranth.hdl import Cat, ClockDomain, Module, ResetSignal, Signal
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out, connect, flipped

from bitgrid._overrides import silence_unused
from bitgrid.checks import check_bool, check_int
from . import FaultControlSignature, FaultCountersSignature, LanePinsSignature, SymbolStream
from .ddr import MAX_LATENCY, InputBuffer, OutputBuffer
from .faults import BitFaults, FrameFaults
from .linecode import (ALIGN, DESKEW_DEPTH, IDLE, LINE_BITS, MAX_DESKEW_SYMBOLS,
                       MIN_ALIGN_SPACING, PRBS_TAPS, check_align_interval, check_line_delay,
                       check_lock_count, line_symbol, prbs7)
from .receiver import LaneAligner, PhyRx
from .transmitter import PhyTx

__all__ = ["IDLE", "ALIGN", "LINE_BITS", "MIN_ALIGN_SPACING", "DESKEW_DEPTH",
           "MAX_DESKEW_SYMBOLS", "PRBS_TAPS", "line_symbol", "prbs7", "PhyTx", "LaneAligner",
           "PhyRx", "LinkPhy"]


class LinkPhy(wiring.Component):
    """The physical layer of one link side (SPEC section 8): :class:`PhyTx`, :class:`PhyRx`, the
    line buffers (:mod:`bitgrid.hdl.link.ddr`) and, if ``faults``, the fault models.

    Clocking
    --------
    * SDR (``ddr=False``): one bit per lane per ``sync`` cycle, launched by the rising edge of
      ``sync``. The forwarded clock :attr:`pins.tx_clk <LanePinsSignature>` is the *inverted*
      ``sync`` clock (made by a DDR output register sending 0 then 1, so it has the same
      output delay as the data), whose rising edge is in the middle of each bit; the receiver
      samples its lanes on the rising edge of ``rx_clk``.
    * DDR (``ddr=True``): two bits per lane per ``sync`` cycle (rising-edge bit first) from
      DDR output registers. The forwarded clock is a copy of ``sync`` shifted by 90 degrees,
      taken from a domain named ``sync90`` that the design must provide (a PLL output on
      hardware; test benches drive it with ``add_clock(..., phase=period / 4)``), so its
      edges fall in the middle of the bits; the receiver captures on both edges of ``rx_clk``
      (DDR input registers).
    * The receive logic runs in a local domain ``phy_rx`` clocked by ``rx_clk`` whose reset is
      the ``sync`` reset through a :class:`~amaranth.lib.cdc.ResetSynchronizer`; symbols and
      status cross into ``sync`` (:class:`PhyRx`), so the two chips' ``sync`` clocks may differ
      (the receiver's ``sync`` must be at least ``lanes * k / 10`` of the sender's, plus margin).
    * The forwarded clock runs all the time, idle or not (an idle line sends IDLE and ALIGN).

    On a real platform, pass ``ports``: an object with :class:`amaranth.lib.io.PortLike`
    attributes ``tx_clk``, ``tx_data``, ``rx_clk``, ``rx_data``; the I/O buffers then are
    :class:`amaranth.lib.io.DDRBuffer`/:class:`~amaranth.lib.io.FFBuffer` and :attr:`pins` is
    unused. Without a platform (simulation, Verilog export) :attr:`pins` carries the line through
    cycle-exact models of those buffers.

    Latency (clean line, both sides' ``sync`` at the same frequency, any ``lanes``): from the
    cycle a lone symbol is taken on the sender's :attr:`tx` to the cycle it is valid on the
    receiver's :attr:`rx`, measured in simulation: 16..25 cycles SDR, 12..16 cycles DDR (waiting
    for the next word, 0..10/k cycles, serialisation of one word, I/O registers, bit aligner,
    deskew FIFO and the AsyncFIFO's synchronisers), plus one word (10/k cycles) when an ALIGN
    word intervenes. ``tests/test_link_phy.py::TestLink::test_latency`` checks the bounds.
    These figures are for I/O buffers of latency 1; each cycle of :attr:`extra_latency` (the
    buffers' further latency and ``line_delay``) adds one cycle.

    Parameters
    ----------
    lanes : int
        Data lanes per direction.
    ddr : bool
        Double data rate (default false).
    faults : bool
        Add the fault models and the :attr:`faults`/:attr:`fault_counters` members (default
        false; for simulation builds).
    align_interval : int
        At least one ALIGN word every ``align_interval`` words (default 16, at least
        :data:`MIN_ALIGN_SPACING`).
    lock_count : int
        Consecutive valid symbols (one of them ALIGN) that lock a lane (default 8).
    ports : object or None
        I/O ports on a real platform (see above).
    fault_seed : int
        Seed of the fault models' random generators (default 1); give every link of a mesh
        its own, or their faults strike in the same cycles.
    line_delay : int
        Extra transmit latency in ``sync`` cycles (default 0): a register pipeline on the line
        bits before the output buffers, standing for a longer cable or a SerDes, so that
        simulations and benchmarks can vary the link latency.
    input_latency, output_latency : int
        Latency *t2* of the receive and *t1* of the transmit I/O buffers in cycles, 1 to
        :data:`~bitgrid.hdl.link.ddr.MAX_LATENCY` (default 1; on ECP5 the DDR output takes 3,
        see :mod:`bitgrid.hdl.link.ddr`): the simulation model runs at these latencies, and on
        a real platform they must state the primitives'. Read back from the buffers as
        :attr:`input_latency`, :attr:`output_latency` and :attr:`extra_latency`.

    Members
    -------
    tx : In(SymbolStream())
        Symbols to send (``sync``); ready when the PHY takes a symbol.
    rx : Out(SymbolStream(always_ready=True))
        Received symbols (``sync``), in order; PHY control codes removed.
    pins : Out(LanePinsSignature(lanes))
    aligned : Out(1)
        The receiver is locked and deskewed (``sync``).
    prbs : In(1)
        PRBS test mode (``sync``): send PRBS-7 on every lane and check the received lanes; set
        it at both ends.
    align_losses : Out(16)
    header_errors : Out(32)
    prbs_errors : Out(32)
        Counters of :class:`PhyRx`, in ``sync``.
    faults : In(FaultControlSignature(lanes))
        Only if ``faults``: commands to the fault models of the transmit direction.
    fault_counters : Out(FaultCountersSignature())
        Only if ``faults``: what the fault models did.
    """

    def __init__(self, lanes, *, ddr=False, faults=False, align_interval=16, lock_count=8,
                 ports=None, fault_seed=1, line_delay=0, input_latency=1, output_latency=1):
        self._lanes = check_int(lanes, "lanes", minimum=1)
        self._ddr = check_bool(ddr, "ddr")
        self._k = 2 if ddr else 1
        self._faults = check_bool(faults, "faults")
        self._align_interval = check_align_interval(align_interval)
        self._lock_count = check_lock_count(lock_count)
        self._ports = ports
        self._fault_seed = check_int(fault_seed, "fault_seed", minimum=0)
        self._line_delay = check_line_delay(line_delay)

        def port(name):
            return None if ports is None else getattr(ports, name)

        input_latency = check_int(input_latency, "input_latency", minimum=1, maximum=MAX_LATENCY)
        output_latency = check_int(output_latency, "output_latency", minimum=1,
                                   maximum=MAX_LATENCY)
        # The line buffers, built here so that the latencies are the buffers' own.
        # (Not elaborated if the PHY is not: silence_unused.)
        self._tx_data = silence_unused(OutputBuffer(
            self._lanes, ddr=self._ddr, port=port("tx_data"), latency=output_latency))
        self._tx_clk = silence_unused(OutputBuffer(
            1, ddr=True, domain="sync90" if self._ddr else "sync", port=port("tx_clk"),
            latency=output_latency))
        self._rx_data = silence_unused(InputBuffer(
            self._lanes, ddr=self._ddr, domain="phy_rx", port=port("rx_data"),
            latency=input_latency))
        members = {
            "tx": In(SymbolStream()),
            "rx": Out(SymbolStream(always_ready=True)),
            "pins": Out(LanePinsSignature(self._lanes)),
            "aligned": Out(1),
            "prbs": In(1),
            "align_losses": Out(16),
            "header_errors": Out(32),
            "prbs_errors": Out(32),
        }
        if self._faults:
            members["faults"] = In(FaultControlSignature(self._lanes))
            members["fault_counters"] = Out(FaultCountersSignature())
        super().__init__(members)

    @property
    def lanes(self):
        return self._lanes

    @property
    def ddr(self):
        return self._ddr

    @property
    def bits_per_cycle(self):
        return self._k

    @property
    def input_latency(self):
        """Latency *t2* of the receive I/O buffers (cycles of the receive clock)."""
        return self._rx_data.latency

    @property
    def output_latency(self):
        """Latency *t1* of the transmit I/O buffers (``sync`` cycles)."""
        return self._tx_data.latency

    @property
    def line_delay(self):
        return self._line_delay

    @property
    def extra_latency(self):
        """Cycles this link's line adds to a frame's trip beyond a PHY with buffers of latency 1
        and no ``line_delay``: ``line_delay + (output_latency - 1) + (input_latency - 1)``.
        A link layer's timeout must allow for it twice per round trip."""
        return self._line_delay + (self.output_latency - 1) + (self.input_latency - 1)

    def elaborate(self, platform):
        m = Module()
        lanes, k, ddr = self._lanes, self._k, self._ddr
        ports = self._ports if platform is not None else None

        # Transmit.
        m.submodules.tx = tx = PhyTx(lanes, ddr=ddr, align_interval=self._align_interval)
        m.d.comb += tx.prbs.eq(self.prbs)
        bits = tx.o
        if self._faults:
            m.submodules.frame_faults = frame_faults = FrameFaults(seed=self._fault_seed)
            connect(m, flipped(self.tx), frame_faults.i)
            connect(m, frame_faults.o, tx.i)
            m.d.comb += [frame_faults.drop.eq(self.faults.drop),
                         frame_faults.duplicate.eq(self.faults.duplicate),
                         frame_faults.run_seed.eq(self.faults.seed)]
            m.submodules.bit_faults = bit_faults = BitFaults(lanes, k, seed=self._fault_seed)
            m.d.comb += bit_faults.i.eq(tx.o)
            connect(m, flipped(self.faults), bit_faults.ctl)
            bits = bit_faults.o
            for name in FaultCountersSignature().members:
                m.d.comb += getattr(self.fault_counters, name).eq(
                    getattr(bit_faults.counters, name) | getattr(frame_faults.counters, name))
        else:
            connect(m, flipped(self.tx), tx.i)
        for stage in range(self._line_delay):
            delayed = Signal.like(bits, name=f"line_delay_{stage}")
            m.d.sync += delayed.eq(bits)
            bits = delayed

        m.submodules.tx_data = tx_data = self._tx_data
        if ddr:
            m.d.comb += [tx_data.o[j].eq(Cat(bits[lane * k + j] for lane in range(lanes)))
                         for j in range(k)]
        else:
            m.d.comb += tx_data.o.eq(bits)
        m.submodules.tx_clk = tx_clk = self._tx_clk
        m.d.comb += [tx_clk.o[0].eq(1 if ddr else 0), tx_clk.o[1].eq(0 if ddr else 1)]
        m.d.comb += [self.pins.tx_data.eq(tx_data.pins), self.pins.tx_clk.eq(tx_clk.pins)]

        # Receive.
        m.domains.phy_rx = cd_rx = ClockDomain("phy_rx", local=True)
        if ports is None:
            m.d.comb += cd_rx.clk.eq(self.pins.rx_clk)
        else:
            m.submodules.rx_clk = rx_clk = io.Buffer("i", ports.rx_clk)
            m.d.comb += cd_rx.clk.eq(rx_clk.i)
        m.submodules.rx_reset = ResetSynchronizer(ResetSignal("sync", allow_reset_less=True),
                                                  domain="phy_rx")
        m.submodules.rx_data = rx_data = self._rx_data
        m.d.comb += rx_data.pins.eq(self.pins.rx_data)
        m.submodules.rx = rx = PhyRx(lanes, ddr=ddr, align_interval=self._align_interval,
                                     lock_count=self._lock_count, domain="phy_rx")
        if ddr:
            m.d.comb += rx.i.eq(Cat(rx_data.i[j][lane] for lane in range(lanes)
                                    for j in range(k)))
        else:
            m.d.comb += rx.i.eq(rx_data.i)
        connect(m, rx.o, flipped(self.rx))
        m.d.comb += [
            rx.prbs.eq(self.prbs),
            self.aligned.eq(rx.aligned),
            self.align_losses.eq(rx.align_losses),
            self.header_errors.eq(rx.header_errors),
            self.prbs_errors.eq(rx.prbs_errors),
        ]
        return m
