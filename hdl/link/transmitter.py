"""The transmit half of the link's physical layer (SPEC section 8): :class:`PhyTx`, symbols to
line bits (line code: :mod:`bitgrid.hdl.link.linecode`)."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_bool, check_int
from . import Symbol, SymbolStream
from .linecode import (ALIGN, IDLE, LINE_BITS, MIN_ALIGN_SPACING, check_align_interval,
                       encode_symbol, line_value, prbs_seed, prbs_step)

__all__ = ["PhyTx"]


class PhyTx(wiring.Component):
    """The transmit half of the physical layer (domain ``sync``).

    Symbols from :attr:`i` are packed into words of ``lanes`` symbols (lane 0 first), encoded
    (module docstring) and serialised, ``k`` bits per lane per cycle, LSB (``h0``) first, so a
    word takes ``10 / k`` cycles. ``i.ready`` is high while the word being assembled has a free
    lane: up to one symbol per cycle is taken, at most ``lanes`` per word. When a word is due
    (every ``10 / k`` cycles) it holds the symbols taken so far and IDLE in the other lanes,
    except that an ALIGN word is sent instead (the symbols wait for the next word) when
    ``align_interval - 1`` words have been sent since the last ALIGN word, or when no symbol is
    waiting and at least ``MIN_ALIGN_SPACING - 1`` have.

    Throughput: ``min(1, lanes * k / 10)`` symbols per cycle, less ``1 / align_interval`` for
    the ALIGN words. Latency: a symbol taken in cycle ``t`` is on :attr:`o` (its first line
    bit) at the latest in cycle ``t + 10 / k + 1`` (unless an ALIGN word intervenes).

    Parameters
    ----------
    lanes : int
    ddr : bool
        ``k = 2`` bits per lane per cycle if true, else 1.
    align_interval : int
        At least one ALIGN word in every ``align_interval`` words
        (``MIN_ALIGN_SPACING``..4096, default 16).

    Members
    -------
    i : In(SymbolStream())
        Symbols to send.
    o : Out(lanes * k)
        Line bits of this cycle, bit ``lane * k + j`` = lane ``lane``, ``j``-th in time order.
        Registered; consumed every cycle.
    prbs : In(1)
        While high (from the next cycle on) every lane sends its PRBS-7 sequence
        (x^7 + x^6 + 1) instead of symbols, and :attr:`i` is not taken.
    """

    def __init__(self, lanes, *, ddr=False, align_interval=16):
        self._lanes = check_int(lanes, "lanes", minimum=1)
        self._k = 2 if check_bool(ddr, "ddr") else 1
        self._align_interval = check_align_interval(align_interval)
        super().__init__({
            "i": In(SymbolStream()),
            "o": Out(self._lanes * self._k),
            "prbs": In(1),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def bits_per_cycle(self):
        return self._k

    def elaborate(self, platform):
        m = Module()
        lanes, k = self._lanes, self._k
        period = LINE_BITS // k

        phase = Signal(range(period))
        last = Signal()
        m.d.comb += last.eq(phase == period - 1)
        m.d.sync += phase.eq(Mux(last, 0, phase + 1))

        prbs = Signal()
        m.d.sync += prbs.eq(self.prbs)

        buf = [Signal(Symbol, name=f"buf{lane}") for lane in range(lanes)]
        fill = Signal(range(lanes + 1))
        m.d.comb += self.i.ready.eq((fill < lanes) & ~prbs)
        accept = Signal()
        m.d.comb += accept.eq(self.i.valid & self.i.ready)

        since = Signal(range(self._align_interval))
        send_align = Signal()
        pending = Signal()
        m.d.comb += [
            pending.eq((fill != 0) | accept),
            send_align.eq((since == self._align_interval - 1) |
                          (~pending & (since >= MIN_ALIGN_SPACING - 1))),
        ]

        with m.If(accept):
            for lane in range(lanes):
                with m.If(fill == lane):
                    m.d.sync += buf[lane].eq(self.i.payload)
            m.d.sync += fill.eq(fill + 1)

        # The word due at the end of this cycle.
        idle = Const({"data": IDLE, "ctrl": 1}, Symbol)
        align_line = Const(line_value(ALIGN, 1), LINE_BITS)
        word = []
        for lane in range(lanes):
            sym = Signal(Symbol, name=f"word{lane}")
            with m.If(fill > lane):
                m.d.comb += sym.eq(buf[lane])
            with m.Elif(accept & (fill == lane)):
                m.d.comb += sym.eq(self.i.payload)
            with m.Else():
                m.d.comb += sym.eq(idle)
            word.append(Mux(send_align, align_line, encode_symbol(sym)))

        with m.If(last):
            with m.If(send_align):
                m.d.sync += since.eq(0)
            with m.Else():
                m.d.sync += [since.eq(since + 1), fill.eq(0)]

        out = []
        for lane in range(lanes):
            sr = Signal(LINE_BITS, name=f"sr{lane}")
            with m.If(last):
                m.d.sync += sr.eq(word[lane])
            with m.Else():
                m.d.sync += sr.eq(sr >> k)
            state = Signal(7, init=prbs_seed(lane), name=f"prbs{lane}")
            prbs_bits = Signal(k, name=f"prbs_bits{lane}")
            m.d.sync += prbs_bits.eq(prbs_step(m, "sync", state, k, f"prbs{lane}"))
            out.append(Mux(prbs, prbs_bits, sr[:k]))
        m.d.comb += self.o.eq(Cat(*out))
        return m
