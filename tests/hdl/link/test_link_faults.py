# amaranth: UnusedElaboratable=no
"""The link fault models (``bitgrid.hdl.link.faults``: BitFaults, FrameFaults) and the fault
specification of mesh simulations (``bitgrid.faults.FaultSpec``): constructor checks, exact
pass-through with the controls at zero, each fault kind against a software model, counters,
stream rules under random back-pressure, RTLIL conversion, and the command-line form."""

import random

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Fragment, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.faults import ALL, FaultEvent, FaultSpec, threshold
from bitgrid.hdl.link import FaultControlSignature, FaultCountersSignature, SymbolStream
from bitgrid.hdl.link.faults import ALWAYS, BitFaults, FrameFaults, _count, lfsr_advance
from support.gateware import raises_exactly, simulate


# --- Constructors and signatures -----------------------------------------------------------------

class TestConstructors:
    @pytest.mark.parametrize("lanes, bpc", [(1, 1), (4, 2), (3, 1)])
    def test_bit_faults_members(self, lanes, bpc):
        dut = BitFaults(lanes, bpc, seed=5)
        assert (dut.lanes, dut.bits_per_cycle, dut.seed) == (lanes, bpc, 5)
        assert dut.signature.members == wiring.Signature({
            "i": In(lanes * bpc), "o": Out(lanes * bpc),
            "ctl": In(FaultControlSignature(lanes)),
            "counters": Out(FaultCountersSignature()),
        }).members
        assert len(dut.lfsr_init) == lanes * bpc
        assert len(set(dut.lfsr_init)) == lanes * bpc and all(dut.lfsr_init)
        assert dut.lfsr_init == BitFaults(lanes, bpc, seed=5).lfsr_init
        assert dut.lfsr_init != BitFaults(lanes, bpc, seed=6).lfsr_init
        Fragment.get(dut, None)

    def test_frame_faults_members(self):
        dut = FrameFaults(seed=3)
        assert (dut.max_frame, dut.seed) == (16, 3)
        assert FrameFaults(max_frame=5).max_frame == 5
        assert FrameFaults().seed == 1
        assert dut.signature.members == wiring.Signature({
            "i": In(SymbolStream()), "o": Out(SymbolStream()),
            "drop": In(16), "duplicate": In(16), "run_seed": In(16),
            "counters": Out(FaultCountersSignature()),
        }).members
        assert dut.lfsr_init != FrameFaults(seed=4).lfsr_init
        Fragment.get(dut, None)

    @pytest.mark.parametrize("lanes", [0, -1, 1.0, "2", True, None])
    def test_bad_lanes(self, lanes):
        with raises_exactly(ValueError, f"lanes must be an integer of at least 1, not {lanes!r}"):
            BitFaults(lanes, 1)

    @pytest.mark.parametrize("bpc", [0, 3, 1.0, "2", True, None])
    def test_bad_bits_per_cycle(self, bpc):
        with raises_exactly(ValueError,
                            f"bits_per_cycle must be an integer from 1 to 2, not {bpc!r}"):
            BitFaults(2, bpc)

    @pytest.mark.parametrize("seed", [-1, 1.5, "7", False, None])
    def test_bad_seed(self, seed):
        message = f"seed must be an integer of at least 0, not {seed!r}"
        with raises_exactly(ValueError, message):
            BitFaults(1, 1, seed=seed)
        with raises_exactly(ValueError, message):
            FrameFaults(seed=seed)

    @pytest.mark.parametrize("max_frame", [0, -3, 2.0, True, None])
    def test_bad_max_frame(self, max_frame):
        with raises_exactly(ValueError, f"max_frame must be an integer of at least 1, "
                                        f"not {max_frame!r}"):
            FrameFaults(max_frame=max_frame)

    def test_keyword_only(self):
        with pytest.raises(TypeError):
            FrameFaults(16)
        with pytest.raises(TypeError):
            BitFaults(1, 1, 7)

    @pytest.mark.parametrize("make", [lambda: BitFaults(1, 1), lambda: BitFaults(3, 2, seed=9),
                                      lambda: FrameFaults(), lambda: FrameFaults(max_frame=5)])
    def test_rtlil(self, make):
        text = rtlil.convert(make(), name="faults")
        assert "module \\faults" in text


# --- BitFaults -----------------------------------------------------------------------------------

def lane_bits(word, lanes, bpc):
    """Per lane, the bits of one cycle in time order."""
    return [[(word >> (lane * bpc + j)) & 1 for j in range(bpc)] for lane in range(lanes)]


def run_bits(dut, words, *, controls=None, check=None):
    """Drive ``words`` into a BitFaults, one per cycle; ``controls(ctx, cycle)`` sets the
    controls of each cycle. Returns the outputs and the counters after every cycle."""
    outs, counters = [], []

    async def testbench(ctx):
        for cycle, word in enumerate(words):
            if controls is not None:
                controls(ctx, cycle)
            ctx.set(dut.i, word)
            outs.append(ctx.get(dut.o))
            await ctx.tick()
            counters.append({name: ctx.get(getattr(dut.counters, name))
                             for name in ("flips", "slips", "disconnects", "drops",
                                          "duplicates")})

    simulate(dut, testbench, name="bit_faults")
    return outs, counters


def streams(words, lanes, bpc):
    """Per lane, the whole bit stream in time order."""
    result = [[] for _ in range(lanes)]
    for word in words:
        for lane, bits in enumerate(lane_bits(word, lanes, bpc)):
            result[lane] += bits
    return result


class TestBitFaults:
    @pytest.mark.parametrize("lanes", [1, 2, 3, 4])
    @pytest.mark.parametrize("bpc", [1, 2])
    def test_pass_through(self, lanes, bpc):
        rng = random.Random(lanes * 10 + bpc)
        dut = BitFaults(lanes, bpc)
        words = [rng.getrandbits(lanes * bpc) for _ in range(60)]
        outs, counters = run_bits(dut, words)
        assert outs == words  # same cycle: no latency
        assert counters[-1] == dict.fromkeys(counters[-1], 0)

    @pytest.mark.parametrize("bpc", [1, 2])
    def test_flip_rate(self, bpc):
        lanes, cycles, p = 3, 1200, 0.1
        rng = random.Random(bpc)
        dut = BitFaults(lanes, bpc, seed=11)
        words = [rng.getrandbits(lanes * bpc) for _ in range(cycles)]

        def controls(ctx, cycle):
            ctx.set(dut.ctl.flip, threshold(p))

        outs, counters = run_bits(dut, words, controls=controls)
        differing = sum(bin(o ^ w).count("1") for o, w in zip(outs, words))
        bits = cycles * lanes * bpc
        sigma = (bits * p * (1 - p)) ** 0.5
        assert abs(differing - bits * p) < 5 * sigma
        assert counters[-1]["flips"] == differing
        assert [c["flips"] for c in counters] == [
            sum(bin(o ^ w).count("1") for o, w in zip(outs[:n + 1], words[:n + 1]))
            for n in range(cycles)]
        # Exactly the documented generator: bit k flips when its draw is below the threshold.
        states = list(dut.lfsr_init)
        for o, w in zip(outs, words):
            mask = sum((s & 0xffff < threshold(p)) << k for k, s in enumerate(states))
            assert o ^ w == mask
            states = [lfsr_advance(s, 16) for s in states]
        # Every lane bit has its own stream.
        per_bit = [sum((o ^ w) >> k & 1 for o, w in zip(outs, words)) for k in range(lanes * bpc)]
        assert len(set(tuple((o ^ w) >> k & 1 for o, w in zip(outs, words))
                       for k in range(lanes * bpc))) == lanes * bpc
        assert all(per_bit)

    def test_flip_always_and_never(self):
        dut = BitFaults(2, 2)
        words = [random.Random(1).getrandbits(4) for _ in range(40)]

        def controls(ctx, cycle):
            ctx.set(dut.ctl.flip, ALWAYS if cycle < 20 else 0)

        outs, counters = run_bits(dut, words, controls=controls)
        assert outs == [w ^ 0xf for w in words[:20]] + words[20:]
        assert counters[-1]["flips"] == 80

    def test_flip_small_probability_fires(self):
        assert threshold(1e-9) == 1  # the gateware's smallest non-zero rate, 1/65536

    @pytest.mark.parametrize("bpc", [1, 2])
    def test_skew(self, bpc):
        lanes, cycles = 4, 40
        skews = [0, 1, 7, 15]
        rng = random.Random(bpc)
        dut = BitFaults(lanes, bpc)
        words = [rng.getrandbits(lanes * bpc) for _ in range(cycles)]

        def controls(ctx, cycle):
            ctx.set(dut.ctl.skew, FaultSpec.skew_value(skews))

        outs, _ = run_bits(dut, words, controls=controls)
        sent, received = streams(words, lanes, bpc), streams(outs, lanes, bpc)
        for lane, skew in enumerate(skews):
            assert received[lane] == [0] * skew + sent[lane][:len(sent[lane]) - skew]

    @pytest.mark.parametrize("bpc", [1, 2])
    @pytest.mark.parametrize("skew", [1, 4, 15])
    def test_slip(self, bpc, skew):
        lanes, cycles, slip_at, lane = 3, 60, 25, 1
        rng = random.Random(skew)
        dut = BitFaults(lanes, bpc)
        words = [rng.getrandbits(lanes * bpc) for _ in range(cycles)]

        def controls(ctx, cycle):
            ctx.set(dut.ctl.skew, FaultSpec.skew_value([skew] * lanes))
            ctx.set(dut.ctl.slip, cycle == slip_at)
            ctx.set(dut.ctl.slip_lane, lane)

        outs, counters = run_bits(dut, words, controls=controls)
        sent, received = streams(words, lanes, bpc), streams(outs, lanes, bpc)
        for n in range(lanes):
            before = [0] * skew + sent[n]
            if n != lane:
                assert received[n] == before[:len(received[n])]
                continue
            # Up to the slip the lane is delayed by `skew`; from the next cycle on, by one bit
            # less: exactly one bit of the stream (sent[cut - skew]) is lost.
            cut = (slip_at + 1) * bpc
            assert received[n] == (before[:cut] + before[cut + 1:])[:len(received[n])]
            assert received[n][cut:] == sent[n][cut - skew + 1:cut - skew + 1 + len(received[n])
                                                 - cut]
        assert [c["slips"] for c in counters] == [0] * slip_at + [1] * (cycles - slip_at)

    def test_slip_at_zero_delay_wraps(self):
        dut = BitFaults(2, 1)
        rng = random.Random(3)
        words = [rng.getrandbits(2) for _ in range(40)]

        def controls(ctx, cycle):
            ctx.set(dut.ctl.slip, cycle == 10)
            ctx.set(dut.ctl.slip_lane, 0)

        outs, counters = run_bits(dut, words, controls=controls)
        sent, received = streams(words, 2, 1), streams(outs, 2, 1)
        assert received[1] == sent[1]
        # Delay 0 - 1 wraps to 15 bit times: the stream moves by -1 modulo 16 positions.
        assert received[0] == sent[0][:11] + [sent[0][t - 15] if t >= 15 else 0
                                              for t in range(11, 40)]
        assert counters[-1]["slips"] == 1

    def test_slip_lane_out_of_range(self):
        dut = BitFaults(1, 2)  # slip_lane is 1 bit wide: lane 1 does not exist
        words = list(range(4)) * 5

        def controls(ctx, cycle):
            ctx.set(dut.ctl.slip, 1)
            ctx.set(dut.ctl.slip_lane, 1)

        outs, counters = run_bits(dut, words, controls=controls)
        assert outs == words
        assert counters[-1]["slips"] == 0

    def test_repeated_slips(self):
        dut = BitFaults(1, 2)
        rng = random.Random(4)
        words = [rng.getrandbits(2) for _ in range(40)]

        def controls(ctx, cycle):
            ctx.set(dut.ctl.skew, 10)
            ctx.set(dut.ctl.slip, cycle in (12, 13, 20))

        outs, counters = run_bits(dut, words, controls=controls)
        sent, received = streams(words, 1, 2)[0], streams(outs, 1, 2)[0]
        assert received[42:] == sent[42 - 10 + 3:80 - 10 + 3]
        assert counters[-1]["slips"] == 3

    def test_disconnect(self):
        lanes, bpc = 3, 2
        pattern = [0] * 5 + [1] * 3 + [0] * 2 + [1] + [0] * 4 + [1] * 6 + [0] * 3
        dut = BitFaults(lanes, bpc)
        rng = random.Random(5)
        words = [rng.getrandbits(lanes * bpc) for _ in pattern]

        def controls(ctx, cycle):
            ctx.set(dut.ctl.disconnect, pattern[cycle])
            ctx.set(dut.ctl.flip, ALWAYS)

        outs, counters = run_bits(dut, words, controls=controls)
        full = (1 << lanes * bpc) - 1
        assert outs == [0 if d else w ^ full for d, w in zip(pattern, words)]
        edges = [sum(1 for t in range(n + 1) if pattern[t] and (t == 0 or not pattern[t - 1]))
                 for n in range(len(pattern))]
        assert [c["disconnects"] for c in counters] == edges
        assert edges[-1] == 3
        assert counters[-1]["flips"] == pattern.count(0) * lanes * bpc  # none while disconnected

    def test_counter_saturates(self):
        lanes, bpc = 8, 2
        dut = BitFaults(lanes, bpc)

        async def testbench(ctx):
            ctx.set(dut.ctl.flip, ALWAYS)
            await ctx.tick().repeat(4095)
            assert ctx.get(dut.counters.flips) == 4095 * 16
            await ctx.tick()
            assert ctx.get(dut.counters.flips) == 0xffff  # 65536 saturates
            await ctx.tick().repeat(3)
            assert ctx.get(dut.counters.flips) == 0xffff

        simulate(dut, testbench, name="bit_faults_saturate")


# --- FrameFaults ---------------------------------------------------------------------------------

def make_frames(rng, count, *, max_len, start=0):
    """``count`` frames of random length 1..``max_len`` (start symbol included); consecutive
    frames have distinct start codes. A symbol is ``(data, ctrl)``."""
    frames = []
    for n in range(count):
        code = (start + n) % 0x80
        frames.append([(code, 1)] + [(rng.getrandbits(8), 0)
                                     for _ in range(rng.randint(0, max_len - 1))])
    return frames


def run_symbols(dut, items, *, ready=1.0, drop=0, duplicate=0, seed=0, drain=40):
    """Drive ``items`` (symbols ``(data, ctrl)``, or ``None`` for one idle cycle) into a
    FrameFaults, honouring ``i.ready``, with ``o.ready`` high with probability ``ready``.
    Checks the stream rules every cycle. Returns the transferred outputs and the counters."""
    rng = random.Random(seed)
    out = []
    counters = {}

    async def testbench(ctx):
        ctx.set(dut.drop, drop)
        ctx.set(dut.duplicate, duplicate)
        pos, idle, held = 0, 0, None
        while pos < len(items) or idle < drain:
            item = items[pos] if pos < len(items) else None
            ctx.set(dut.i.valid, item is not None)
            if item is not None:
                ctx.set(dut.i.payload.data, item[0])
                ctx.set(dut.i.payload.ctrl, item[1])
            # valid and payload must not depend on ready
            seen = []
            for r in (0, 1):
                ctx.set(dut.o.ready, r)
                seen.append((ctx.get(dut.o.valid), ctx.get(dut.o.payload.data),
                             ctx.get(dut.o.payload.ctrl)))
            assert seen[0] == seen[1] or not seen[0][0] and not seen[1][0]
            o_ready = int(rng.random() < ready)
            ctx.set(dut.o.ready, o_ready)
            valid, data, ctrl = seen[o_ready]
            if held is not None:  # a symbol offered and not taken stays offered
                assert valid and (data, ctrl) == held
            held = (data, ctrl) if valid and not o_ready else None
            if valid and o_ready:
                out.append((data, ctrl))
            if item is None:
                pos += 1
            elif ctx.get(dut.i.ready):
                pos += 1
            idle = idle + 1 if pos >= len(items) and not valid else 0
            await ctx.tick()
        for name in ("flips", "slips", "disconnects", "drops", "duplicates"):
            counters[name] = ctx.get(getattr(dut.counters, name))

    simulate(dut, testbench, name="frame_faults")
    return out, counters


def with_gaps(frames, rng, gap=0.3):
    items = []
    for frame in frames:
        items += frame
        while rng.random() < gap:
            items.append(None)
    return items


def match_frames(frames, out):
    """How each input frame came out: a list of 0 (dropped), 1 or 2 (duplicated)."""
    seen, pos = [], 0
    for frame in frames:
        n = 0
        while n < 2 and out[pos:pos + len(frame)] == frame:
            pos += len(frame)
            n += 1
        seen.append(n)
    assert pos == len(out), "output has symbols that match no input frame"
    return seen


class TestFrameFaults:
    @pytest.mark.parametrize("ready", [1.0, 0.6])
    def test_pass_through(self, ready):
        rng = random.Random(1)
        dut = FrameFaults(max_frame=4)
        items = with_gaps(make_frames(rng, 40, max_len=8), rng)
        items[3:3] = [(0x80, 1), (0x12, 0), (0xff, 1)]  # PHY code, stray data
        out, counters = run_symbols(dut, items, ready=ready, seed=2)
        assert out == [item for item in items if item is not None]
        assert counters == dict.fromkeys(counters, 0)

    def test_pass_through_combinational(self):
        dut = FrameFaults()
        rng = random.Random(3)

        async def testbench(ctx):
            for _ in range(200):
                valid, ready = rng.getrandbits(1), rng.getrandbits(1)
                data, ctrl = rng.getrandbits(8), rng.getrandbits(1)
                ctx.set(dut.i.valid, valid)
                ctx.set(dut.i.payload.data, data)
                ctx.set(dut.i.payload.ctrl, ctrl)
                ctx.set(dut.o.ready, ready)
                assert ctx.get(dut.o.valid) == valid
                assert ctx.get(dut.i.ready) == ready
                if valid:
                    assert (ctx.get(dut.o.payload.data), ctx.get(dut.o.payload.ctrl)) == \
                        (data, ctrl)
                await ctx.tick()

        simulate(dut, testbench, name="frame_faults_comb")

    @pytest.mark.parametrize("ready", [1.0, 0.5])
    def test_drop_all(self, ready):
        rng = random.Random(4)
        frames = make_frames(rng, 30, max_len=6)
        items = with_gaps(frames, rng)
        items += [(0x90, 1), (0x33, 0)]  # PHY code: not a frame, and ends the last one
        dut = FrameFaults()
        out, counters = run_symbols(dut, items, ready=ready, drop=ALWAYS, seed=5)
        assert out == [(0x90, 1), (0x33, 0)]
        assert counters["drops"] == 30
        assert counters["duplicates"] == 0

    @pytest.mark.parametrize("ready, gap", [(1.0, 0.0), (1.0, 0.4), (0.5, 0.0), (0.7, 0.3)])
    def test_duplicate_all(self, ready, gap):
        rng = random.Random(6)
        frames = make_frames(rng, 25, max_len=8)
        frames[5] = frames[5][:1]  # a start symbol alone
        frames[7] = [(7, 1)] + [(n, 0) for n in range(8)]  # 9 symbols: too long to duplicate
        frames[8] = [(8, 1)] + [(n, 0) for n in range(7)]  # exactly max_frame symbols
        dut = FrameFaults(max_frame=8, seed=9)
        out, counters = run_symbols(dut, with_gaps(frames, rng, gap), ready=ready,
                                    duplicate=ALWAYS, seed=7)
        expected = []
        for n, frame in enumerate(frames):
            expected += frame if n == 7 else frame + frame
        assert out == expected
        assert counters["duplicates"] == 24
        assert counters["drops"] == 0

    @pytest.mark.parametrize("max_frame", [1, 2])
    def test_duplicate_small_buffer(self, max_frame):
        rng = random.Random(max_frame)
        frames = make_frames(rng, 20, max_len=3)
        dut = FrameFaults(max_frame=max_frame)
        out, counters = run_symbols(dut, with_gaps(frames, rng), ready=0.6, duplicate=ALWAYS,
                                    seed=3)
        expected = []
        for frame in frames:
            expected += frame + frame if len(frame) <= max_frame else frame
        assert out == expected
        assert counters["duplicates"] == sum(len(frame) <= max_frame for frame in frames)

    def test_duplicate_back_to_back(self):
        """The replay starts in the cycle where the next frame start arrives, and stalls it."""
        dut = FrameFaults()
        frame_a, frame_b = [(1, 1), (10, 0), (11, 0)], [(2, 1), (20, 0)]
        trace = []

        async def testbench(ctx):
            ctx.set(dut.duplicate, ALWAYS)
            ctx.set(dut.o.ready, 1)
            for item in frame_a + frame_b + [None] * 6:
                ctx.set(dut.i.valid, item is not None)
                if item is not None:
                    ctx.set(dut.i.payload.data, item[0])
                    ctx.set(dut.i.payload.ctrl, item[1])
                while True:
                    trace.append((ctx.get(dut.o.valid), ctx.get(dut.o.payload.data),
                                  ctx.get(dut.i.ready)))
                    ready = ctx.get(dut.i.ready)
                    await ctx.tick()
                    if ready or item is None:
                        break

        simulate(dut, testbench, name="frame_faults_b2b")
        assert trace[:12] == [
            (1, 1, 1), (1, 10, 1), (1, 11, 1),           # frame A passes
            (1, 1, 0), (1, 10, 0), (1, 11, 0),           # replayed at once; B's start waits
            (1, 2, 1), (1, 20, 1),                       # frame B passes
            (1, 2, 0), (1, 20, 0),                       # replayed from the first idle cycle
            (0, 20, 1), (0, 20, 1)]

    def test_random_rates(self):
        rng = random.Random(8)
        frames = make_frames(rng, 300, max_len=6)
        dut = FrameFaults(seed=3)
        p_drop, p_dup = 0.25, 0.3
        out, counters = run_symbols(dut, with_gaps(frames, rng, 0.2), ready=0.8,
                                    drop=threshold(p_drop), duplicate=threshold(p_dup), seed=9)
        seen = match_frames(frames, out)
        assert counters["drops"] == seen.count(0)
        assert counters["duplicates"] == seen.count(2)
        n = len(frames)
        for count, p in ((seen.count(0), p_drop), (seen.count(2), (1 - p_drop) * p_dup)):
            assert abs(count - n * p) < 5 * (n * p * (1 - p)) ** 0.5
        # Exactly the documented draws: one per frame start.
        state, expected = dut.lfsr_init, []
        for _ in frames:
            if state & 0xffff < threshold(p_drop):
                expected.append(0)
            else:
                expected.append(2 if state >> 16 < threshold(p_dup) else 1)
            state = lfsr_advance(state, 32)
        assert seen == expected

    def test_counter_helper_saturates(self):
        class Counter(wiring.Component):
            inc: In(8)
            value: Out(16)

            def elaborate(self, platform):
                m = Module()
                _count(m, self.value, self.inc)
                return m

        dut = Counter()

        async def testbench(ctx):
            ctx.set(dut.inc, 255)
            await ctx.tick().repeat(256)
            assert ctx.get(dut.value) == 0xff00
            await ctx.tick().repeat(2)
            assert ctx.get(dut.value) == 0xffff
            ctx.set(dut.inc, 1)
            await ctx.tick()
            assert ctx.get(dut.value) == 0xffff

        simulate(dut, testbench, name="saturate")


# --- FaultSpec -----------------------------------------------------------------------------------

RANGE = {
    "flip": "a probability from 0 to 0.005 (with more bit errors the links lose most frames "
            "and the mesh stalls)",
    "drop": "a probability from 0 to 0.5 (with more dropped frames the mesh stalls waiting for "
            "a delivery)",
    "dup": "a probability between 0 and 1",
    "slip": "an integer count from 0 to 10000",
    "skew": "an integer number of bit times between 0 and 15",
    "disconnect": "an integer count from 0 to 10000",
    "disconnect_cycles": "an integer number of cycles from 1 to 10000 (a longer disconnect is "
                         "a stall)",
    "clock": "a clock period ratio from 1/16 to 16 (1 = same clock; a slower neighbour stalls "
             "the mesh)",
    "seed": "an integer of at least 0",
}
KEYS = "flip, drop, dup, slip, skew, disconnect, disconnect_cycles, clock, seed"


class TestFaultSpec:
    def test_parse_example(self):
        spec = FaultSpec.parse("flip=1e-3,drop=0.02,dup=0.02,slip=3,skew=2,disconnect=1,"
                               "clock=1.3,seed=7")
        assert spec == FaultSpec(flip=0.001, drop=0.02, dup=0.02, slip=3, skew=2, disconnect=1,
                                 clock=1.3, seed=7)
        assert spec.disconnect_cycles == 200
        assert str(spec) == ("flip=0.001,drop=0.02,dup=0.02,slip=3,skew=2,disconnect=1,"
                             "clock=1.3,seed=7")
        assert spec.enabled
        assert spec.describe() == (
            "bit flips 0.001 per bit, frame drops 2%, frame duplicates 2%, 3 bit slips, "
            "lane skew up to 2 bit times, 1 disconnect of 200 cycles, clock period ratio 1.3, "
            "seed 7")

    def test_none(self):
        for spec in (FaultSpec.none(), FaultSpec.parse("none"), FaultSpec.parse(""),
                     FaultSpec.parse("  "), FaultSpec()):
            assert spec == FaultSpec.none()
            assert str(spec) == "none"
            assert not spec.enabled
            assert spec.describe() == "no link faults"
        assert not FaultSpec(seed=5, disconnect_cycles=7).enabled
        assert str(FaultSpec(seed=5)) == "seed=5"

    def test_all(self):
        spec = FaultSpec.parse("all")
        assert spec == ALL
        assert spec.flip > 0 and spec.drop > 0 and spec.dup > 0
        assert spec.slip > 0 and spec.skew > 0 and spec.disconnect > 0 and spec.clock != 1
        assert FaultSpec.parse(str(spec)) == spec
        assert FaultSpec.parse("all, seed=3") == spec.replace(seed=3)
        assert FaultSpec.parse("none,flip=0.005") == FaultSpec(flip=0.005)

    @pytest.mark.parametrize("spec", [
        FaultSpec(flip=1e-7), FaultSpec(drop=0.5, dup=0.3333333333333333),
        FaultSpec(clock=0.77, seed=0), FaultSpec(disconnect=4, disconnect_cycles=1),
        FaultSpec(skew=15, slip=100, flip=2.5e-05),
    ])
    def test_round_trip(self, spec):
        assert FaultSpec.parse(str(spec)) == spec

    def test_random_round_trip(self):
        rng = random.Random(1)
        for _ in range(200):
            spec = FaultSpec(flip=rng.random() ** 4 / 200,
                             drop=rng.choice([0, 0.5, rng.random() * 0.5]),
                             dup=rng.random(), slip=rng.randint(0, 9), skew=rng.randint(0, 15),
                             disconnect=rng.randint(0, 3), disconnect_cycles=rng.randint(1, 999),
                             clock=rng.uniform(1 / 16, 16), seed=rng.randint(0, 1 << 40))
            assert FaultSpec.parse(str(spec)) == spec

    def test_frozen_and_typed(self):
        spec = FaultSpec(flip=0.001, clock=2)
        assert isinstance(spec.flip, float) and isinstance(spec.clock, float)
        with pytest.raises(AttributeError):
            spec.flip = 0.5
        assert hash(spec) == hash(FaultSpec(flip=0.001, clock=2.0))

    def test_spaces(self):
        assert FaultSpec.parse(" flip = 0.005 , seed=2 ") == FaultSpec(flip=0.005, seed=2)

    @pytest.mark.parametrize("text, key, value", [
        ("flip=1.5", "flip", "1.5"), ("flip=-0.1", "flip", "-0.1"), ("drop=2", "drop", "2"),
        ("dup=nan", "dup", "nan"), ("flip=x", "flip", "x"), ("flip=", "flip", ""),
        ("slip=-1", "slip", "-1"), ("slip=1.5", "slip", "1.5"), ("skew=16", "skew", "16"),
        ("skew=-1", "skew", "-1"), ("disconnect=two", "disconnect", "two"),
        ("disconnect_cycles=0", "disconnect_cycles", "0"), ("clock=0", "clock", "0"),
        ("clock=-1", "clock", "-1"), ("clock=inf", "clock", "inf"), ("seed=-3", "seed", "-3"),
        ("seed=0x10", "seed", "0x10"), ("flip=0.001,skew=99", "skew", "99"),
        # Rates at which a mesh cannot progress (docs/mesh.md, "Fault specs"), and just past
        # each bound.
        ("flip=0.1", "flip", "0.1"), ("drop=0.9", "drop", "0.9"), ("clock=1e9", "clock", "1e9"),
        ("disconnect=1e9", "disconnect", "1e9"), ("flip=0.0051", "flip", "0.0051"),
        ("drop=0.51", "drop", "0.51"), ("clock=16.5", "clock", "16.5"),
        ("clock=0.06", "clock", "0.06"), ("disconnect=10001", "disconnect", "10001"),
        ("slip=10001", "slip", "10001"),
        ("disconnect_cycles=10001", "disconnect_cycles", "10001"),
    ])
    def test_bad_value(self, text, key, value):
        with raises_exactly(ValueError, f"{key}={value}: {key} must be {RANGE[key]}"):
            FaultSpec.parse(text)

    @pytest.mark.parametrize("kwargs, key, value", [
        ({"flip": 2}, "flip", "2"), ({"skew": 16}, "skew", "16"), ({"clock": 0}, "clock", "0"),
        ({"slip": 1.0}, "slip", "1.0"), ({"seed": None}, "seed", "None"),
        ({"drop": True}, "drop", "True"),
    ])
    def test_bad_field(self, kwargs, key, value):
        with raises_exactly(ValueError, f"{key}={value}: {key} must be {RANGE[key]}"):
            FaultSpec(**kwargs)
        with raises_exactly(ValueError, f"{key}={value}: {key} must be {RANGE[key]}"):
            FaultSpec().replace(**kwargs)

    def test_bounds_are_accepted(self):
        """Every bound itself is a spec that runs (docs/mesh.md, "Fault specs")."""
        spec = FaultSpec.parse("flip=0.005,drop=0.5,dup=1,slip=10000,disconnect=10000,"
                               "disconnect_cycles=10000,clock=16")
        assert (spec.flip, spec.drop, spec.clock, spec.disconnect_cycles) == (0.005, 0.5, 16, 10000)
        assert FaultSpec.parse("clock=0.0625").clock == 1 / 16

    def test_check_run(self):
        """At most four slips and one disconnect per step of a run."""
        spec = FaultSpec(slip=64, disconnect=16)
        assert spec.check_run(16) is spec
        assert ALL.check_run(1) is ALL
        with raises_exactly(ValueError, "slip=64: a run of 15 steps takes at most 60 slips "
                                        "(4 per step)"):
            spec.check_run(15)
        with raises_exactly(ValueError, "disconnect=2: a run of 1 step takes at most 1 "
                                        "disconnects (1 per step)"):
            FaultSpec(disconnect=2).check_run(1)
        with raises_exactly(ValueError, "steps must be an integer of at least 1, not 0"):
            spec.check_run(0)

    def test_unknown_key(self):
        with raises_exactly(ValueError, f"jitter=3: unknown fault 'jitter'; the keys are {KEYS}"):
            FaultSpec.parse("flip=0.001,jitter=3")

    @pytest.mark.parametrize("text, item", [("flip", "flip"), ("flip=0.001,,seed=2", "(empty)"),
                                            ("0.5", "0.5")])
    def test_not_key_value(self, text, item):
        with raises_exactly(ValueError, f"{item}: a fault must be written KEY=VALUE with KEY one "
                                        f"of {KEYS}, or a preset (none, all) first"):
            FaultSpec.parse(text)

    def test_preset_not_first(self):
        with raises_exactly(ValueError, "all: the preset 'all' must come first"):
            FaultSpec.parse("seed=2,all")

    def test_twice(self):
        with raises_exactly(ValueError, "flip=0.002: flip is given twice"):
            FaultSpec.parse("flip=0.001,flip=0.002")

    def test_not_a_string(self):
        with raises_exactly(TypeError, "A fault specification must be a string, not 3"):
            FaultSpec.parse(3)

    @pytest.mark.parametrize("p, t", [(0, 0), (1e-12, 1), (1 / 65536, 1), (1.5 / 65536, 2),
                                      (1e-3, 66), (0.02, 1311), (0.5, 32768),
                                      (65534.5 / 65536, 0xfffe), (0.99999999, 0xfffe),
                                      (1, 0xffff), (1.0, 0xffff)])
    def test_threshold(self, p, t):
        assert threshold(p) == t
        assert FaultSpec(dup=p).threshold("dup") == t

    @pytest.mark.parametrize("p", [-0.1, 1.01, "0.5", None, True])
    def test_threshold_range(self, p):
        with raises_exactly(ValueError, f"probability must be a number from 0 to 1, "
                                        f"not {p!r}"):
            threshold(p)

    def test_threshold_key(self):
        with raises_exactly(ValueError, "'skew' is not a probability; the probabilities are "
                                        "flip, drop, dup"):
            FaultSpec().threshold("skew")

    def test_describe(self):
        assert FaultSpec(drop=1e-4, slip=1, skew=1, disconnect=2, disconnect_cycles=50,
                         clock=0.5).describe() == (
            "frame drops 0.0001, 1 bit slip, lane skew up to 1 bit time, 2 disconnects of 50 "
            "cycles, clock period ratio 0.5, seed 1")


class TestSchedule:
    def test_deterministic(self):
        spec = FaultSpec(slip=5, disconnect=3, seed=4)
        events = spec.schedule(10_000, 4, lanes=3)
        assert events == spec.schedule(10_000, 4, lanes=3)
        assert events != spec.replace(seed=5).schedule(10_000, 4, lanes=3)
        assert events == spec.schedule(10_000, 4, lanes=3, rng=spec.rng("schedule"))
        assert events == sorted(events)
        assert all(isinstance(e, FaultEvent) for e in events)

    @pytest.mark.parametrize("seed", range(5))
    def test_counts_and_spread(self, seed):
        spec = FaultSpec(slip=7, disconnect=3, disconnect_cycles=100, seed=seed)
        total, start, links, lanes = 5000, 500, 6, 4
        events = spec.schedule(total, links, lanes=lanes, start=start)
        slips = [e for e in events if e.kind == "slip"]
        downs = [e for e in events if e.kind == "disconnect"]
        ups = [e for e in events if e.kind == "reconnect"]
        assert (len(slips), len(downs), len(ups)) == (7, 3, 3)
        for n, e in enumerate(slips):  # one per slot of the run
            assert start + 4500 * n // 7 <= e.cycle < start + 4500 * (n + 1) // 7
            assert 0 <= e.link < links and 0 <= e.lane < lanes
        for n, (down, up) in enumerate(zip(downs, ups)):
            assert (up.cycle - down.cycle, up.link, down.lane, up.lane) == (100, down.link, 0, 0)
            assert start + 1500 * n <= down.cycle and up.cycle < start + 1500 * (n + 1)

    def test_none(self):
        assert FaultSpec().schedule(100, 2) == []

    def test_too_short(self):
        with raises_exactly(ValueError, "300 cycles are too few for 2 disconnect periods of 200 "
                                        "cycles and a reconnect after each"):
            FaultSpec(disconnect=2).schedule(300, 1)

    @pytest.mark.parametrize("kwargs, message", [
        ({"total_cycles": 0}, "total_cycles must be an integer of at least 1, not 0"),
        ({"links": -1}, "links must be an integer of at least 1, not -1"),
        ({"lanes": 0}, "lanes must be an integer of at least 1, not 0"),
        ({"start": 100}, "start must be an integer from 0 to 99, not 100"),
    ])
    def test_bad_arguments(self, kwargs, message):
        args = {"total_cycles": 100, "links": 2} | kwargs
        with raises_exactly(ValueError, message):
            FaultSpec(slip=1).schedule(args.pop("total_cycles"), args.pop("links"), **args)

    def test_lane_skews(self):
        spec = FaultSpec(skew=3, seed=2)
        skews = spec.lane_skews(5, 4)
        assert skews == spec.lane_skews(5, 4)
        assert len(skews) == 5 and all(len(s) == 4 for s in skews)
        assert {s for link in skews for s in link} == {0, 1, 2, 3}
        assert FaultSpec().lane_skews(2, 3) == [[0, 0, 0], [0, 0, 0]]
        assert FaultSpec.skew_value([1, 15, 0, 7]) == 0x70f1


def test_run_seed_changes_the_flips():
    """A new ``ctl.seed`` restarts the generators: the same build flips other bits, and the same
    seed the same bits again."""
    def flips_with(seed):
        dut = BitFaults(1, 1)
        seen = []

        async def testbench(ctx):
            ctx.set(dut.ctl.flip, 6000)
            ctx.set(dut.ctl.seed, seed)
            await ctx.tick()
            await ctx.tick()
            for _ in range(300):
                seen.append(ctx.get(dut.o))
                await ctx.tick()

        simulate(dut, testbench, name=f"bit_faults_seed_{seed}")
        return seen

    first, again, other = flips_with(5), flips_with(5), flips_with(6)
    assert first == again
    assert first != other
    assert 10 < sum(first) < 60 and 10 < sum(other) < 60      # about 300 * 6000 / 65536
