"""Fault models of the inter-chip link (SPEC section 8), for simulation builds only.

The physical layer (:mod:`bitgrid.hdl.link.phy`) instantiates these stages when it is built with
``faults=True`` and hands their controls to the test bench (:class:`FaultControlSignature`):

* :class:`BitFaults` sits on the line bits of one transmit direction: bit flips, per-lane skew,
  bit slips and disconnects;
* :class:`FrameFaults` sits on the symbol stream of one transmit direction: whole link-layer
  frames dropped or sent twice.

Probabilities
-------------
A probability control is a 16-bit threshold ``t``: an event happens when a fresh 16-bit draw
``r`` of the stage's own LFSR is below ``t``, that is with probability ``t / 65536``; as the one
exception, ``t = 0xffff`` means *always* (probability 1), so that a test can ask for certainty.
``0`` never fires. :meth:`bitgrid.faults.FaultSpec.threshold` converts a probability.

The pseudo-random generator is a 32-bit Galois LFSR with the maximal-length polynomial
``x^32 + x^22 + x^2 + x + 1`` (:data:`LFSR_TAPS`), advanced by several steps per draw (a
leap-forward XOR network, :func:`lfsr_advance`) so that consecutive draws do not share bits.
Each generator starts from a state derived from the constructor's ``seed``: the same seed gives
the same faults in every run.
"""

import random
from functools import reduce
from operator import xor

from amaranth.hdl import Const, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int
from bitgrid.faults import MAX_SKEW_BITS
from . import PHY_CONTROL_BASE, FaultControlSignature, FaultCountersSignature, Symbol, SymbolStream

__all__ = ["BitFaults", "FrameFaults", "LFSR_TAPS", "lfsr_advance", "ALWAYS"]

#: Galois mask (right-shifting form) of ``x^32 + x^22 + x^2 + x + 1``.
LFSR_TAPS = 0x80200003

#: The threshold that means "always" (probability 1).
ALWAYS = 0xffff


def lfsr_advance(state, steps=1):
    """The 32-bit LFSR state ``steps`` steps after ``state`` (the software model of the
    generators of :class:`BitFaults` and :class:`FrameFaults`)."""
    for _ in range(steps):
        state = (state >> 1) ^ (LFSR_TAPS if state & 1 else 0)
    return state


def _leap(state, steps):
    """An expression for :func:`lfsr_advance` of the 32-bit signal ``state``."""
    # rows[i]: the set (as a bit mask) of current state bits whose XOR is bit i after the steps.
    rows = [1 << i for i in range(32)]
    for _ in range(steps):
        rows = [(rows[i + 1] if i < 31 else 0) ^ (rows[0] if LFSR_TAPS >> i & 1 else 0)
                for i in range(32)]
    return Cat(*(reduce(xor, (state[j] for j in range(32) if row >> j & 1)) for row in rows))


def _seeds(seed, count, salt):
    """``count`` non-zero 32-bit LFSR start states derived from ``seed``."""
    rng = random.Random(f"bitgrid.hdl.link.faults:{salt}:{seed}")
    return tuple(rng.getrandbits(32) or 1 for _ in range(count))


def _check_seed(seed):
    return check_int(seed, "seed", minimum=0)


def _hit(draw, threshold):
    """The fault fires: the 16-bit ``draw`` is below ``threshold``, or ``threshold`` is
    :data:`ALWAYS`."""
    return (draw < threshold) | (threshold == ALWAYS)


def _reseeding(m, seed):
    """A pulse in the cycle after ``seed`` (a 16-bit control) changes: the generators restart
    from a state derived from it (:func:`_reseeded`), so that a test bench's seed varies the
    faults without a new build."""
    last = Signal(16)
    changed = Signal()
    m.d.sync += last.eq(seed)
    m.d.comb += changed.eq(last != seed)
    return changed


def _reseeded(init, seed):
    """The generator state after a reseed with ``seed``: the build's start state mixed with the
    seed, never zero (a zero LFSR state would stay zero)."""
    return (Const(init, 32) ^ Cat(seed, ~seed)) | 1


def _count(m, counter, amount):
    """Add ``amount`` to the 16-bit ``counter`` in ``sync``, saturating at 0xffff."""
    total = Signal(17)
    m.d.comb += total.eq(counter + amount)
    m.d.sync += counter.eq(Mux(total[16], 0xffff, total[:16]))


class BitFaults(wiring.Component):
    """Line-bit faults of one transmit direction: flips, skew, slips and disconnects.

    The stage passes ``lanes`` lanes of ``bits_per_cycle`` bits per ``sync`` cycle (1 for SDR,
    2 for DDR). Bit ``lane * bits_per_cycle + j`` of :attr:`i` and :attr:`o` is the ``j``-th bit
    of lane ``lane`` in this cycle, in time order (bit 0 first on the line).

    Latency: none. With every control at zero (and no slip since reset) :attr:`o` equals
    :attr:`i` combinationally. Each lane then goes through, in order:

    1. a **delay line** of up to :data:`bitgrid.faults.MAX_SKEW_BITS` bit times. The lane's
       delay is ``(skew_lane - slips_lane) mod 16`` bit times, where ``skew_lane`` is
       ``ctl.skew[4 * lane : 4 * lane + 4]`` and ``slips_lane`` counts the slip pulses of the
       lane since reset. So ``skew`` delays a lane by that many bit times, and a **slip** (a
       cycle with ``ctl.slip`` high and ``ctl.slip_lane == lane``) shortens the delay by one bit
       time from the next cycle on: the lane loses exactly one bit and its stream moves one bit
       position, as in a real bit slip. A slip at delay 0 wraps to delay 15 (the stream moves by
       -1 modulo 16 bit positions; the lane never needs more than 15 bit times of delay).
       Changing ``skew`` while running may glitch a few bits.
    2. **flips**: each output bit is inverted when its own LFSR draw is below ``ctl.flip``
       (probability ``flip / 65536`` per bit; ``0xffff`` inverts every bit). Every lane bit
       position has its own generator, advanced every cycle.
    3. **disconnect**: while ``ctl.disconnect`` is high every output bit is 0 (and flips are
       neither applied nor counted).

    ``ctl.drop`` and ``ctl.duplicate`` are not used here (see :class:`FrameFaults`).

    Parameters
    ----------
    lanes : int
        Number of data lanes, at least 1.
    bits_per_cycle : int
        1 (SDR) or 2 (DDR).
    seed : int
        Seeds the flip generators (non-negative; default 1).

    Members
    -------
    i : In(lanes * bits_per_cycle)
        Line bits from the serializer.
    o : Out(lanes * bits_per_cycle)
        Line bits with the faults applied.
    ctl : In(:class:`FaultControlSignature`)
    counters : Out(:class:`FaultCountersSignature`)
        ``flips``: bits inverted; ``slips``: slip pulses applied to an existing lane;
        ``disconnects``: rising edges of ``ctl.disconnect``. They count up in the cycle after the
        event, saturate at 0xffff and clear on reset. ``drops`` and ``duplicates`` stay 0.

    Raises
    ------
    ValueError
        If ``lanes`` is not a positive integer, ``bits_per_cycle`` not 1 or 2, or ``seed`` not a
        non-negative integer.
    """

    def __init__(self, lanes, bits_per_cycle, *, seed=1):
        self._lanes = check_int(lanes, "lanes", minimum=1)
        self._bits_per_cycle = check_int(bits_per_cycle, "bits_per_cycle", minimum=1, maximum=2)
        self._seed = _check_seed(seed)
        width = lanes * bits_per_cycle
        super().__init__({
            "i": In(width),
            "o": Out(width),
            "ctl": In(FaultControlSignature(lanes)),
            "counters": Out(FaultCountersSignature()),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def bits_per_cycle(self):
        return self._bits_per_cycle

    @property
    def seed(self):
        return self._seed

    @property
    def lfsr_init(self):
        """Start states of the flip generators, one per bit of :attr:`o`. In cycle ``t`` after
        reset, bit ``k`` is inverted when ``lfsr_advance(lfsr_init[k], 16 * t) & 0xffff`` is
        below ``ctl.flip``."""
        return _seeds(self._seed, self._lanes * self._bits_per_cycle, "flip")

    def elaborate(self, platform):
        m = Module()
        ctl, bpc = self.ctl, self._bits_per_cycle

        delayed = []
        slipped = Signal()
        m.d.comb += slipped.eq(ctl.slip & (ctl.slip_lane < self._lanes))
        for lane in range(self._lanes):
            # u[k]: the lane's bit k bit times before the last bit of this cycle.
            history = Signal(MAX_SKEW_BITS, name=f"history_{lane}")
            u = Cat(*reversed([self.i[lane * bpc + j] for j in range(bpc)]), history)
            m.d.sync += history.eq(u[:MAX_SKEW_BITS])
            slips = Signal(4, name=f"slips_{lane}")
            with m.If(slipped & (ctl.slip_lane == lane)):
                m.d.sync += slips.eq(slips + 1)
            delay = Signal(4, name=f"delay_{lane}")
            m.d.comb += delay.eq(ctl.skew[4 * lane:4 * lane + 4] - slips)
            delayed += [u.bit_select(delay + (bpc - 1 - j), 1) for j in range(bpc)]

        flips = []
        reseed = _reseeding(m, ctl.seed)
        for k, init in enumerate(self.lfsr_init):
            state = Signal(32, init=init, name=f"lfsr_{k}")
            m.d.sync += state.eq(Mux(reseed, _reseeded(init, ctl.seed), _leap(state, 16)))
            flip = Signal(name=f"flip_{k}")
            m.d.comb += flip.eq(_hit(state[:16], ctl.flip) & ~ctl.disconnect)
            flips.append(flip)

        m.d.comb += self.o.eq(Mux(ctl.disconnect, 0, Cat(*delayed) ^ Cat(*flips)))

        _count(m, self.counters.flips, sum(flips))
        _count(m, self.counters.slips, slipped)
        disconnected = Signal()
        m.d.sync += disconnected.eq(ctl.disconnect)
        _count(m, self.counters.disconnects, ctl.disconnect & ~disconnected)
        m.d.comb += [self.counters.drops.eq(0), self.counters.duplicates.eq(0)]
        return m


class FrameFaults(wiring.Component):
    """Frame faults of one transmit direction: whole link-layer frames dropped or sent twice.

    A *frame* is a control symbol with a link-layer code (``ctrl == 1``, ``data <``
    :data:`~bitgrid.hdl.link.PHY_CONTROL_BASE`) and the data symbols (``ctrl == 0``) transferred
    after it, up to the next control symbol. The upstream keeps ``i.valid`` high through a frame.
    Data symbols outside a frame, and control symbols of the physical layer, always pass.

    With :attr:`drop` and :attr:`duplicate` both zero the stage is a pass-through: :attr:`o`
    follows :attr:`i` and ``i.ready`` follows ``o.ready`` combinationally (no latency).

    When a frame's first symbol is at the input, the stage draws two 16-bit numbers from its
    LFSR (a new draw after each frame start is transferred) and:

    * if the first is below :attr:`drop` (probability ``drop / 65536``, ``0xffff`` = always),
      swallows the whole frame: ``i.ready`` is 1, ``o.valid`` is 0;
    * otherwise, if the second is below :attr:`duplicate`, passes the frame through while
      copying it into a buffer of ``max_frame`` symbols, and sends the copy again as soon as
      the frame ends: when the next control symbol is at the input (it waits, ``i.ready = 0``)
      or ``i.valid`` is low in a cycle after a transfer of the frame. The replay starts in that
      same cycle and stalls the upstream (``i.ready = 0``) until its last symbol is
      transferred. A frame longer than ``max_frame`` symbols passes once, unduplicated;
    * otherwise passes the frame through.

    ``o.valid`` never depends on ``o.ready`` (amaranth.lib.stream rules); ``o.payload`` and
    ``o.valid`` hold while ``o.valid`` is high and ``o.ready`` low, provided the upstream and
    the two thresholds do.

    Parameters
    ----------
    max_frame : int
        Replay buffer depth in symbols (positive, default 16).
    seed : int
        Seeds the generator (non-negative; default 1).

    Members
    -------
    i : In(:func:`~bitgrid.hdl.link.SymbolStream`)
    o : Out(:func:`~bitgrid.hdl.link.SymbolStream`)
    drop : In(16)
        Probability threshold of a frame drop.
    duplicate : In(16)
        Probability threshold of a frame duplication.
    run_seed : In(16)
        A change restarts the generator from a state derived from the new value (as
        ``FaultControlSignature.seed``; :attr:`seed` is the build's).
    counters : Out(:class:`FaultCountersSignature`)
        ``drops``: frames swallowed; ``duplicates``: frames replayed. They count in the cycle
        after the frame start is swallowed or the replay starts, saturate at 0xffff and clear on
        reset. The other counters stay 0.

    Raises
    ------
    ValueError
        If ``max_frame`` is not a positive integer or ``seed`` not a non-negative integer.
    """

    def __init__(self, *, max_frame=16, seed=1):
        self._max_frame = check_int(max_frame, "max_frame", minimum=1)
        self._seed = _check_seed(seed)
        super().__init__({
            "i": In(SymbolStream()),
            "o": Out(SymbolStream()),
            "drop": In(16),
            "duplicate": In(16),
            "run_seed": In(16),
            "counters": Out(FaultCountersSignature()),
        })

    @property
    def max_frame(self):
        return self._max_frame

    @property
    def seed(self):
        return self._seed

    @property
    def lfsr_init(self):
        """Start state of the generator. Draw ``n`` (``n`` frame starts transferred before it)
        is ``s = lfsr_advance(lfsr_init, 32 * n)``: ``s & 0xffff`` for the drop and ``s >> 16``
        for the duplication."""
        return _seeds(self._seed, 1, "frame")[0]

    def elaborate(self, platform):
        m = Module()
        i, o, depth = self.i, self.o, self._max_frame

        state = Signal(32, init=self.lfsr_init)
        draw = Signal()  # a frame start is transferred or swallowed: next draw
        reseed = _reseeding(m, self.run_seed)
        with m.If(reseed):
            m.d.sync += state.eq(_reseeded(self.lfsr_init, self.run_seed))
        with m.Elif(draw):
            m.d.sync += state.eq(_leap(state, 32))
        hit_drop = Signal()
        hit_dup = Signal()
        m.d.comb += [hit_drop.eq(_hit(state[:16], self.drop)),
                     hit_dup.eq(_hit(state[16:], self.duplicate))]
        is_ctrl = Signal()
        is_start = Signal()
        m.d.comb += [is_ctrl.eq(i.payload.ctrl),
                     is_start.eq(i.payload.ctrl & (i.payload.data < PHY_CONTROL_BASE))]

        m.submodules.buffer = buffer = Memory(shape=Symbol, depth=depth, init=[])
        wr = buffer.write_port()
        rd = buffer.read_port(domain="comb")
        count = Signal(range(depth + 1))
        index = Signal(range(depth))
        m.d.comb += [wr.addr.eq(count), wr.data.eq(i.payload), rd.addr.eq(index)]

        dropped = Signal()
        replayed = Signal()
        _count(m, self.counters.drops, dropped)
        _count(m, self.counters.duplicates, replayed)
        m.d.comb += [getattr(self.counters, name).eq(0)
                     for name in ("flips", "slips", "disconnects")]

        def pass_through():
            m.d.comb += [o.payload.eq(i.payload), o.valid.eq(i.valid), i.ready.eq(o.ready)]

        def replay():
            m.d.comb += [o.payload.eq(rd.data), o.valid.eq(1), i.ready.eq(0)]
            with m.If(o.ready):
                with m.If(index + 1 == count):
                    m.d.sync += index.eq(0)
                    m.next = "PASS"
                with m.Else():
                    m.d.sync += index.eq(index + 1)
                    m.next = "REPLAY"
            with m.Else():
                m.next = "REPLAY"

        with m.FSM():
            for name in ("PASS", "DROP"):
                with m.State(name):
                    with m.If(i.valid & is_start):
                        with m.If(hit_drop):
                            m.d.comb += [i.ready.eq(1), dropped.eq(1), draw.eq(1)]
                            m.next = "DROP"
                        with m.Else():
                            pass_through()
                            with m.If(o.ready):
                                m.d.comb += draw.eq(1)
                                with m.If(hit_dup):
                                    m.d.comb += [wr.addr.eq(0), wr.en.eq(1)]
                                    m.d.sync += count.eq(1)
                                    m.next = "RECORD"
                                with m.Else():
                                    m.next = "PASS"
                    with m.Elif(i.valid & is_ctrl):
                        pass_through()
                        with m.If(o.ready):
                            m.next = "PASS"
                    with m.Else():
                        if name == "DROP":
                            m.d.comb += i.ready.eq(1)  # the rest of a dropped frame
                        else:
                            pass_through()
            with m.State("RECORD"):
                with m.If(~i.valid | is_ctrl):
                    m.d.comb += replayed.eq(1)
                    replay()
                with m.Else():
                    pass_through()
                    with m.If(o.ready):
                        with m.If(count == depth):
                            m.next = "PASS"  # too long to duplicate
                        with m.Else():
                            m.d.comb += wr.en.eq(1)
                            m.d.sync += count.eq(count + 1)
            with m.State("REPLAY"):
                replay()
        return m
