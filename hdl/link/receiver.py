"""The receive half of the link's physical layer (SPEC section 8): :class:`LaneAligner` (bit
alignment of one lane) and :class:`PhyRx` (alignment, lane deskew, removal of PHY control
codes, crossing into ``sync``, PRBS checker, counters). Line code:
:mod:`bitgrid.hdl.link.linecode`."""

from amaranth.hdl import Cat, DomainRenamer, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO, SyncFIFO
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_bool, check_int
from . import Symbol, SymbolStream
from .linecode import (ALIGN, BAD, DESKEW_DEPTH, IDLE, LINE_BITS, LOSS_THRESHOLD, LOSS_WINDOW,
                       check_align_interval, check_lock_count)

__all__ = ["LaneAligner", "PhyRx"]


class LaneAligner(wiring.Component):
    """Bit alignment of one receive lane (domain ``sync``; :class:`PhyRx` renames it).

    Every cycle ``k`` line bits enter (:attr:`i`, earliest in bit 0); every 10 bits a line symbol
    at the current bit offset is decoded. A symbol is *invalid* if its header is ``00``/``11`` or
    it is a control code ``>= 0x80`` other than IDLE and ALIGN.

    * Hunting: an invalid symbol, or more than ``align_interval`` valid symbols without an ALIGN,
      slips the offset by one bit (the next symbol takes 11 bits). ``lock_count`` consecutive
      valid symbols, one of them ALIGN, lock the lane.
    * Locked: symbols are output (:attr:`valid`, :attr:`symbol`, an invalid one as the internal
      code ``0x80``). :data:`LOSS_THRESHOLD` invalid symbols within one window of
      :data:`LOSS_WINDOW` symbols, or ``2 * align_interval`` symbols without an ALIGN, drop the
      lock (:attr:`lost` pulses) and hunting resumes at the same offset.
    * While :attr:`enable` is low the lane is held hunting.

    Latency: :attr:`symbol` is valid in the cycle after the one that brought its last bit.

    Members
    -------
    i : In(k)
    enable : In(1)
    valid : Out(1)
    symbol : Out(Symbol)
    locked : Out(1)
    bad : Out(1)
        Pulses with :attr:`valid` for an invalid symbol received while locked.
    lost : Out(1)
        Pulses when the lane loses lock.
    """

    def __init__(self, *, ddr=False, align_interval=16, lock_count=8):
        self._k = 2 if check_bool(ddr, "ddr") else 1
        self._align_interval = check_align_interval(align_interval)
        self._lock_count = check_lock_count(lock_count)
        super().__init__({
            "i": In(self._k), "enable": In(1),
            "valid": Out(1), "symbol": Out(Symbol),
            "locked": Out(1), "bad": Out(1), "lost": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        k = self._k
        width = LINE_BITS + k - 1

        sr = Signal(width)
        sr_next = Signal(width)
        m.d.comb += sr_next.eq(Cat(sr[k:], self.i))
        m.d.sync += sr.eq(sr_next)

        fill = Signal(range(LINE_BITS))
        slip = Signal()
        total = Signal(range(LINE_BITS + k))
        m.d.comb += total.eq(fill + k - slip)
        complete = Signal()
        m.d.comb += complete.eq(total >= LINE_BITS)
        window = Signal(LINE_BITS)
        with m.If(complete):
            m.d.sync += fill.eq(total - LINE_BITS)
            with m.Switch(total - LINE_BITS):
                for extra in range(k):
                    with m.Case(extra):
                        m.d.comb += window.eq(sr_next[width - LINE_BITS - extra:width - extra])
        with m.Else():
            m.d.sync += fill.eq(total)
        m.d.sync += slip.eq(0)

        h0, h1, code = window[0], window[1], window[2:]
        is_align = Signal()
        is_bad = Signal()
        m.d.comb += [
            is_align.eq(h0 & ~h1 & (code == ALIGN)),
            is_bad.eq((h0 == h1) | (h0 & code[7] & (code != ALIGN) & (code != IDLE))),
        ]

        locked = Signal()
        good = Signal(range(self._lock_count + 1))
        seen_align = Signal()
        since = Signal(range(2 * self._align_interval + 1))
        win_count = Signal(range(LOSS_WINDOW))
        bad_count = Signal(range(LOSS_THRESHOLD + 1))
        since_next = Mux(is_align, 0, since + 1)

        m.d.comb += self.locked.eq(locked)
        m.d.sync += [self.valid.eq(0), self.bad.eq(0), self.lost.eq(0)]
        with m.If(~self.enable):
            m.d.sync += [locked.eq(0), good.eq(0), seen_align.eq(0), since.eq(0)]
        with m.Elif(complete & ~locked):
            with m.If(is_bad | (since_next > self._align_interval)):
                m.d.sync += [slip.eq(1), good.eq(0), seen_align.eq(0), since.eq(0)]
            with m.Else():
                m.d.sync += [since.eq(since_next), seen_align.eq(seen_align | is_align)]
                with m.If(good < self._lock_count):
                    m.d.sync += good.eq(good + 1)
                with m.If((good + 1 >= self._lock_count) & (seen_align | is_align)):
                    m.d.sync += [locked.eq(1), win_count.eq(0), bad_count.eq(0)]
        with m.Elif(complete & locked):
            m.d.sync += [
                self.valid.eq(1),
                self.bad.eq(is_bad),
                self.symbol.data.eq(Mux(is_bad, BAD, code)),
                self.symbol.ctrl.eq(is_bad | h0),
                since.eq(since_next),
                win_count.eq(win_count + 1),
            ]
            with m.If(win_count == LOSS_WINDOW - 1):
                m.d.sync += bad_count.eq(0)
            with m.Elif(is_bad):
                m.d.sync += bad_count.eq(bad_count + 1)
            with m.If(((bad_count + is_bad) >= LOSS_THRESHOLD) |
                      (since_next >= 2 * self._align_interval)):
                m.d.sync += [locked.eq(0), good.eq(0), seen_align.eq(0), since.eq(0),
                             self.lost.eq(1)]
        return m


class _CounterBridge(wiring.Component):
    """Copies counters from ``src_domain`` to ``dst_domain`` with a toggle handshake: a new
    snapshot every few destination cycles, always a value the source really held."""

    def __init__(self, width, src_domain, dst_domain):
        self._src, self._dst = src_domain, dst_domain
        super().__init__({"i": In(width), "o": Out(width)})

    def elaborate(self, platform):
        m = Module()
        snapshot = Signal.like(self.i)
        req = Signal()
        ack = Signal()
        req_dst = Signal()
        ack_src = Signal()
        m.submodules.req_sync = FFSynchronizer(req, req_dst, o_domain=self._dst)
        m.submodules.ack_sync = FFSynchronizer(ack, ack_src, o_domain=self._src)
        with m.If(req == ack_src):
            m.d[self._src] += [snapshot.eq(self.i), req.eq(~req)]
        with m.If(req_dst != ack):
            m.d[self._dst] += [self.o.eq(snapshot), ack.eq(req_dst)]
        return m


class PhyRx(wiring.Component):
    """The receive half of the physical layer.

    Runs in ``domain`` (the receive clock domain, clocked by the forwarded clock, which the
    parent must create: :class:`LinkPhy` does) except :attr:`o`, :attr:`aligned`, :attr:`prbs`
    and the counters, which are in ``sync``.

    1. Bit alignment per lane (:class:`LaneAligner`).
    2. Lane deskew: each locked lane writes its symbols into a FIFO of :data:`DESKEW_DEPTH`
       symbols. Until aligned, a lane whose oldest symbol is not ALIGN discards it, and one
       holding ALIGN waits for the others (discarding it if its FIFO overflows); when every lane
       holds ALIGN the lanes are aligned. Then one word (a symbol from each lane) is read
       whenever every lane has one. This absorbs a skew of up to
       :data:`~bitgrid.hdl.link.linecode.MAX_DESKEW_SYMBOLS` symbols
       (``10 * MAX_DESKEW_SYMBOLS`` bit times) between any two lanes. A word with ALIGN on some
       lanes but not all (a slipped lane, or a bit error in an ALIGN symbol), a FIFO overflow or
       a lane losing lock ends alignment (counted in :attr:`align_losses`) and deskew starts again.
    3. Symbols of aligned words except control codes ``>= 0x80`` cross into ``sync`` through an
       :class:`~amaranth.lib.fifo.AsyncFIFO` of 8 words and leave on :attr:`o`, one per cycle,
       in order. :attr:`o` cannot be stalled, so ``sync`` must read faster than the line
       delivers: ``f_sync >= f_line * lanes * k / 10`` (with margin); otherwise symbols are
       lost when the FIFO is full.
    4. PRBS checker: while :attr:`prbs` is high, each lane checks its bits against PRBS-7
       (self-synchronising: bit ``n`` must equal received bit ``n - 7`` XOR ``n - 6``, so one
       flipped line bit counts 3 errors) and :attr:`prbs_errors` counts the mismatches, after
       32 receive cycles of warm-up. It is 0 while :attr:`prbs` is low. Bit alignment is
       suspended meanwhile.

    Members
    -------
    i : In(lanes * k)
        Line bits in ``domain``, bit ``lane * k + j`` = lane ``lane``, ``j``-th in time order.
    o : Out(SymbolStream(always_ready=True))
    aligned : Out(1)
        Every lane is locked and the lanes are deskewed (synchronised into ``sync``).
    prbs : In(1)
    align_losses : Out(16)
        Times ``aligned`` fell (wraps around).
    header_errors : Out(32)
        Invalid symbols received on locked lanes (wraps around).
    prbs_errors : Out(32)
        PRBS bit errors since :attr:`prbs` rose (saturates).

    The counters are copied from the receive domain a few ``sync`` cycles after they change.
    """

    def __init__(self, lanes, *, ddr=False, align_interval=16, lock_count=8, domain="phy_rx"):
        self._lanes = check_int(lanes, "lanes", minimum=1)
        self._ddr = check_bool(ddr, "ddr")
        self._k = 2 if ddr else 1
        self._align_interval = check_align_interval(align_interval)
        self._lock_count = check_lock_count(lock_count)
        if not isinstance(domain, str):
            raise TypeError(f"domain must be a domain name, not {domain!r}")
        self._domain = domain
        super().__init__({
            "i": In(self._lanes * self._k),
            "o": Out(SymbolStream(always_ready=True)),
            "aligned": Out(1),
            "prbs": In(1),
            "align_losses": Out(16),
            "header_errors": Out(32),
            "prbs_errors": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        lanes, k, rx = self._lanes, self._k, self._domain

        prbs = Signal()
        m.submodules.prbs_sync = FFSynchronizer(self.prbs, prbs, o_domain=rx)

        # 1. Bit alignment and 2. deskew FIFOs.
        aligners, fifos = [], []
        for lane in range(lanes):
            aligner = LaneAligner(ddr=self._ddr, align_interval=self._align_interval,
                                  lock_count=self._lock_count)
            m.submodules[f"aligner{lane}"] = aligner = DomainRenamer(rx)(aligner)
            fifo = DomainRenamer(rx)(SyncFIFO(width=Symbol.as_shape().size, depth=DESKEW_DEPTH))
            m.submodules[f"deskew{lane}"] = fifo
            m.d.comb += [
                aligner.i.eq(self.i[lane * k:(lane + 1) * k]),
                aligner.enable.eq(~prbs),
                fifo.w_data.eq(aligner.symbol),
                fifo.w_en.eq(aligner.valid),
            ]
            aligners.append(aligner)
            fifos.append(fifo)

        heads = [Symbol(fifo.r_data) for fifo in fifos]
        head_align = [(h.ctrl == 1) & (h.data == ALIGN) for h in heads]
        all_ready = Cat(f.r_rdy for f in fifos).all()
        all_align = Cat(*head_align).all()
        any_align = Cat(*head_align).any()
        # A word must have ALIGN on no lane or on every lane (an invalid symbol in an ALIGN word,
        # typically a slipped lane, also ends alignment).
        mismatch = any_align & ~all_align
        all_locked = Cat(a.locked for a in aligners).all()
        overflow = Cat(f.w_en & ~f.w_rdy for f in fifos).any()

        aligned = Signal()
        word_valid = Signal()
        align_losses = Signal(16)
        header_errors = Signal(32)
        with m.If(~aligned):
            for fifo, is_align in zip(fifos, head_align):
                m.d.comb += fifo.r_en.eq(fifo.r_rdy & (~is_align | (fifo.w_en & ~fifo.w_rdy) |
                                                       ~all_locked))
            with m.If(all_locked & all_ready & all_align):
                m.d.comb += [fifo.r_en.eq(1) for fifo in fifos]
                m.d[rx] += aligned.eq(1)
        with m.Else():
            with m.If(~all_locked | overflow):
                m.d[rx] += [aligned.eq(0), align_losses.eq(align_losses + 1)]
            with m.Elif(all_ready):
                m.d.comb += [fifo.r_en.eq(1) for fifo in fifos]
                with m.If(mismatch):
                    m.d[rx] += [aligned.eq(0), align_losses.eq(align_losses + 1)]
                with m.Else():
                    m.d.comb += word_valid.eq(1)
        m.d[rx] += header_errors.eq(header_errors + sum(a.bad for a in aligners))

        # 3. Crossing into sync: words of lanes symbols and a mask of those to deliver.
        sym_bits = Symbol.as_shape().size
        cross = AsyncFIFO(width=lanes * (sym_bits + 1), depth=8, w_domain=rx, r_domain="sync")
        m.submodules.cross = cross
        mask = Cat(~(h.ctrl & h.data[7]) for h in heads)
        m.d.comb += [
            cross.w_data.eq(Cat(*(f.r_data for f in fifos), mask)),
            cross.w_en.eq(word_valid & mask.any()),
        ]
        cur = Signal(lanes * sym_bits)
        cur_mask = Signal(lanes)
        lowest = Signal(lanes)
        m.d.comb += lowest.eq(cur_mask & -cur_mask)
        rest = Signal(lanes)
        m.d.comb += rest.eq(cur_mask & ~lowest)
        for lane in range(lanes):
            with m.If(lowest[lane]):
                m.d.comb += self.o.payload.eq(cur[lane * sym_bits:(lane + 1) * sym_bits])
        m.d.comb += self.o.valid.eq(cur_mask.any())
        m.d.sync += cur_mask.eq(rest)
        with m.If((rest == 0) & cross.r_rdy):
            m.d.comb += cross.r_en.eq(1)
            m.d.sync += [cur.eq(cross.r_data[:lanes * sym_bits]),
                         cur_mask.eq(cross.r_data[lanes * sym_bits:])]

        m.submodules.aligned_sync = FFSynchronizer(aligned, self.aligned, o_domain="sync")

        # 4. PRBS checker.
        prbs_errors = Signal(32)
        warmup = Signal(range(33))
        errors = []
        for lane in range(lanes):
            history = Signal(7, name=f"prbs_history{lane}")
            bits = [history[i] for i in range(7)]
            for j in range(k):
                bit = self.i[lane * k + j]
                errors.append(bit ^ bits[-7] ^ bits[-6])
                bits.append(bit)
            m.d[rx] += history.eq(Cat(*bits[-7:]))
        with m.If(~prbs):
            m.d[rx] += [prbs_errors.eq(0), warmup.eq(0)]
        with m.Elif(warmup != 32):
            m.d[rx] += warmup.eq(warmup + 1)
        with m.Elif(prbs_errors < 2**32 - 2 * lanes):
            m.d[rx] += prbs_errors.eq(prbs_errors + sum(errors))

        m.submodules.counters = bridge = _CounterBridge(80, rx, "sync")
        m.d.comb += [
            bridge.i.eq(Cat(align_losses, header_errors, prbs_errors)),
            Cat(self.align_losses, self.header_errors, self.prbs_errors).eq(bridge.o),
        ]
        return m
