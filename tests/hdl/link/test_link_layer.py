# amaranth: UnusedElaboratable=no
"""The link layer of the inter-chip link (SPEC section 8): the frame codec
(``bitgrid.protocol.link``) and the gateware (``bitgrid.hdl.link.layer.LinkLayer``) in Amaranth's
simulator. The gateware sends exactly the codec's symbols; two link layers back to back through
a channel model that throttles, delays, flips bits, drops symbols, drops and duplicates whole
frames and cuts the line deliver every payload exactly once and in order in both directions, and
their counters show the faults (and stay at zero on a clean line); a partner that cannot answer
stalls the sender after ``replay_depth`` frames."""

import collections
import random

import pytest
from amaranth.hdl import Fragment, Module, Shape, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from bitgrid.hdl.link import SymbolStream
from bitgrid.hdl.link.layer import COUNTERS, LinkLayer
from bitgrid.protocol.link import (LINK_FRAME_CRC, Frame, FrameError, FrameKind, decode, encode_ack,
                          encode_data, frame_crc, frame_symbols, line_efficiency, payload_bytes)
from support.gateware import raises_exactly, simulate

PAYLOAD_MESSAGE = "payload_bits must be an integer from 1 to 64, not {!r}"
DEPTH_MESSAGE = "replay_depth must be an integer from 2 to 64, not {!r}"
POWER_MESSAGE = "replay_depth must be one of 2, 4, 8, 16, 32, 64, not {!r}"
TIMEOUT_MESSAGE = "timeout must be an integer of at least 8, not {!r}"


# --- The codec ------------------------------------------------------------------------------------

class TestCodec:
    def test_crc_is_xmodem(self):
        assert LINK_FRAME_CRC.compute(b"123456789") == 0x31C3      # CRC-16/XMODEM check value

    def test_kinds(self):
        assert (FrameKind.DATA, FrameKind.ACK) == (0x01, 0x02)

    @pytest.mark.parametrize("bits, size", [(1, 1), (7, 1), (8, 1), (9, 2), (16, 2), (17, 3),
                                            (63, 8), (64, 8)])
    def test_sizes(self, bits, size):
        assert payload_bytes(bits) == size
        assert frame_symbols(FrameKind.DATA, bits) == 5 + size
        assert len(encode_data(0, 0, 0, bits)) == 5 + size
        assert frame_symbols(FrameKind.ACK) == len(encode_ack(0)) == 4

    def test_data_layout(self):
        symbols = encode_data(0x12, 0x34, 0xABCDE, 20)
        body = bytes([0x12, 0x34, 0xDE, 0xBC, 0x0A])
        crc = LINK_FRAME_CRC.compute(bytes([0x01]) + body)
        assert symbols == ([(0x01, 1)] + [(b, 0) for b in body]
                           + [(crc >> 8, 0), (crc & 0xFF, 0)])
        assert LINK_FRAME_CRC.compute(bytes([0x01]) + body + crc.to_bytes(2, "big")) == 0

    def test_ack_layout(self):
        crc = frame_crc(FrameKind.ACK, b"\x07")
        assert crc == LINK_FRAME_CRC.compute(b"\x02\x07")
        assert encode_ack(7) == [(0x02, 1), (0x07, 0), (crc >> 8, 0), (crc & 0xFF, 0)]

    def test_round_trip(self):
        rng = random.Random(1)
        for _ in range(300):
            bits = rng.randint(1, 64)
            seq, ack, payload = rng.randrange(256), rng.randrange(256), rng.getrandbits(bits)
            symbols = encode_data(seq, ack, payload, bits)
            assert decode(symbols, bits) == Frame(FrameKind.DATA, seq, ack, payload)
            assert decode(symbols) == Frame(FrameKind.DATA, seq, ack, payload)
            assert decode(encode_ack(ack)) == Frame(FrameKind.ACK, None, ack, None)

    def test_every_single_bit_error_is_caught(self):
        symbols = encode_data(200, 17, 0x5A5A, 16)
        for position in range(1, len(symbols)):
            for bit in range(8):
                bad = list(symbols)
                bad[position] = (bad[position][0] ^ (1 << bit), 0)
                with pytest.raises(FrameError, match="Bad CRC"):
                    decode(bad, 16)

    def test_bad_crc_message(self):
        symbols = encode_ack(3)
        crc = frame_crc(FrameKind.ACK, b"\x03")
        symbols[-1] = (symbols[-1][0] ^ 1, 0)
        with raises_exactly(FrameError, f"Bad CRC: 0x{crc ^ 1:04x} received, "
                                        f"0x{crc:04x} computed"):
            decode(symbols)

    def test_malformed(self):
        data = encode_data(1, 2, 3, 8)
        with raises_exactly(FrameError, "Empty frame"):
            decode([])
        with raises_exactly(FrameError, "A frame must open with control code 0x01 (DATA) or "
                                        "0x02 (ACK), not data byte 0x01"):
            decode([(0x01, 0)] + data[1:])
        with raises_exactly(FrameError, "A frame must open with control code 0x01 (DATA) or "
                                        "0x02 (ACK), not control byte 0x03"):
            decode([(0x03, 1)] + data[1:])
        with raises_exactly(FrameError, "Control symbol 0x02 at position 3 truncates the DATA "
                                        "frame"):
            decode(data[:3] + [(0x02, 1)] + data[4:])
        with raises_exactly(FrameError, "A DATA frame has 6 symbols, not 5"):
            decode(data[:-1], 8)
        with raises_exactly(FrameError, "A DATA frame has 7 symbols, not 6"):
            decode(data, 9)
        with raises_exactly(FrameError, "A DATA frame has at least 6 symbols, not 5"):
            decode(data[:-1])
        with raises_exactly(FrameError, "A ACK frame has 4 symbols, not 5"):
            decode(encode_ack(0) + [(0, 0)])
        assert issubclass(FrameError, ValueError)

    def test_decode_drops_padding_bits(self):
        frame = decode(encode_data(0, 0, 0xFF, 8), 5)
        assert frame.payload == 0x1F

    def test_decode_symbol_views(self):
        class Sym:
            def __init__(self, data, ctrl):
                self.data, self.ctrl = data, ctrl
        symbols = [Sym(*pair) for pair in encode_ack(9)]
        assert decode(symbols).ack == 9

    @pytest.mark.parametrize("call, message", [
        (lambda: encode_data(256, 0, 0, 8), "seq must be an integer from 0 to 255, not 256"),
        (lambda: encode_data(0, -1, 0, 8), "ack must be an integer from 0 to 255, not -1"),
        (lambda: encode_data(0, 0, 256, 8), "payload must be an integer from 0 to 255, not 256"),
        (lambda: encode_data(0, 0, -1, 3), "payload must be an integer from 0 to 7, not -1"),
        (lambda: encode_data(0, 0, 0, 0), PAYLOAD_MESSAGE.format(0)),
        (lambda: encode_data(0, 0, 0, 65), PAYLOAD_MESSAGE.format(65)),
        (lambda: encode_ack(1.0), "ack must be an integer from 0 to 255, not 1.0"),
        (lambda: payload_bytes(True), PAYLOAD_MESSAGE.format(True)),
        (lambda: frame_symbols(FrameKind.DATA), "A DATA frame's length depends on payload_bits"),
    ])
    def test_bad_arguments(self, call, message):
        with raises_exactly(ValueError, message):
            call()

    def test_line_efficiency(self):
        assert line_efficiency(16) == 16 / (8 * 7)
        assert line_efficiency(64) == 64 / (8 * 13)
        assert line_efficiency(8, ack_frames=1) == 8 / (8 * 10)


# --- Constructor and signature -------------------------------------------------------------------

class TestConstructor:
    def test_defaults(self):
        dut = LinkLayer(16)
        assert (dut.payload_bits, dut.replay_depth, dut.timeout) == (16, 4, 256)
        Fragment.get(dut, None)

    @pytest.mark.parametrize("bits", [1, 8, 33, 64])
    def test_payload_bits(self, bits):
        Fragment.get(LinkLayer(bits, replay_depth=64, timeout=8), None)

    @pytest.mark.parametrize("bits", [0, 65, -1, 8.0, True, "8", None])
    def test_wrong_payload_bits(self, bits):
        with raises_exactly(ValueError, PAYLOAD_MESSAGE.format(bits)):
            LinkLayer(bits)

    @pytest.mark.parametrize("depth", [0, 1, 128, 256, 4.0, True, "4"])
    def test_wrong_replay_depth(self, depth):
        with raises_exactly(ValueError, DEPTH_MESSAGE.format(depth)):
            LinkLayer(8, replay_depth=depth)

    @pytest.mark.parametrize("depth", [3, 6, 63])
    def test_replay_depth_not_a_power_of_two(self, depth):
        with raises_exactly(ValueError, POWER_MESSAGE.format(depth)):
            LinkLayer(8, replay_depth=depth)

    @pytest.mark.parametrize("timeout", [7, 0, -8, 256.0, False])
    def test_wrong_timeout(self, timeout):
        with raises_exactly(ValueError, TIMEOUT_MESSAGE.format(timeout)):
            LinkLayer(8, timeout=timeout)

    @pytest.mark.parametrize("delay", [-1, 256, 1.0, True])
    def test_wrong_ack_delay(self, delay):
        with raises_exactly(ValueError, f"ack_delay must be an integer from 0 to 255, "
                                        f"not {delay!r}"):
            LinkLayer(8, ack_delay=delay)

    @pytest.mark.parametrize("bits, depth", [(1, 2), (16, 4), (64, 32)])
    def test_members(self, bits, depth):
        dut = LinkLayer(bits, replay_depth=depth)
        assert dut.signature.members == wiring.Signature({
            "send": In(stream.Signature(bits)),
            "recv": Out(stream.Signature(bits, always_ready=True)),
            "recv_seq": Out(8),
            "tx": Out(SymbolStream()),
            "rx": In(SymbolStream(always_ready=True)),
            "credit": Out(range(depth + 1)),
            **{name: Out(16) for name in COUNTERS},
        }).members
        assert dut.credit.shape() == Shape.cast(range(depth + 1))
        assert dut.recv.payload.shape() == unsigned(bits)


# --- One link layer, symbol by symbol ------------------------------------------------------------

def get_symbol(ctx, port):
    value = ctx.get(port.payload.as_value())
    return value & 0xFF, value >> 8


def set_symbol(ctx, port, symbol):
    if symbol is None:
        ctx.set(port.valid, 0)
    else:
        ctx.set(port.valid, 1)
        ctx.set(port.payload.as_value(), symbol[0] | symbol[1] << 8)


def counters(ctx, dut):
    return {name: ctx.get(getattr(dut, name)) for name in COUNTERS}


async def feed(ctx, dut, symbols, delivered=None):
    """Put ``symbols`` on ``dut.rx``, one per cycle, noting every payload delivered."""
    for symbol in symbols:
        set_symbol(ctx, dut.rx, symbol)
        await ctx.tick()
        if delivered is not None and ctx.get(dut.recv.valid):
            delivered.append((ctx.get(dut.recv_seq), ctx.get(dut.recv.payload)))
    set_symbol(ctx, dut.rx, None)


async def offer(ctx, dut, values):
    """Offer ``values`` on ``dut.send`` in consecutive cycles; each must be taken at once."""
    ctx.set(dut.send.valid, 1)
    for value in values:
        ctx.set(dut.send.payload, value)
        assert ctx.get(dut.send.ready)
        await ctx.tick()
    ctx.set(dut.send.valid, 0)


async def capture_frame(ctx, dut, limit=100):
    """Wait (``tx.ready`` high) for a frame on ``dut.tx``; return its symbols and the number of
    cycles waited before its first symbol."""
    ctx.set(dut.tx.ready, 1)
    waited = 0
    while not ctx.get(dut.tx.valid):
        await ctx.tick()
        waited += 1
        assert waited < limit, "no frame"
    symbols = []
    while True:
        assert ctx.get(dut.tx.valid), "a frame must be contiguous"
        symbol = get_symbol(ctx, dut.tx)
        if symbols and symbol[1]:
            break
        symbols.append(symbol)
        await ctx.tick()
        if len(symbols) == frame_symbols(symbols[0][0], dut.payload_bits):
            break
    return symbols, waited


class TestSingle:
    @pytest.mark.parametrize("bits", [1, 8, 13, 64])
    def test_frames_match_codec(self, bits):
        dut = LinkLayer(bits, timeout=1000)
        rng = random.Random(bits)
        payloads = [rng.getrandbits(bits) for _ in range(4)]

        async def testbench(ctx):
            # A payload taken in cycle t opens its frame in cycle t + 2.
            ctx.set(dut.send.valid, 1)
            ctx.set(dut.send.payload, payloads[0])
            assert ctx.get(dut.send.ready) and ctx.get(dut.credit) == 4
            await ctx.tick()
            ctx.set(dut.send.valid, 0)
            assert ctx.get(dut.credit) == 3
            symbols, waited = await capture_frame(ctx, dut)
            assert waited == 1
            assert symbols == encode_data(0, 0, payloads[0], bits)
            # The partner's DATA frame: delivered one cycle after its last symbol; it is
            # acknowledged by an ACK frame, since nothing else is waiting.
            frame = encode_data(0, 1, payloads[1], bits)
            delivered = []
            for symbol in frame:
                set_symbol(ctx, dut.rx, symbol)
                assert not ctx.get(dut.recv.valid)
                await ctx.tick()
            set_symbol(ctx, dut.rx, None)
            assert ctx.get(dut.recv.valid)
            assert (ctx.get(dut.recv_seq), ctx.get(dut.recv.payload)) == (0, payloads[1])
            assert ctx.get(dut.credit) == 3
            await ctx.tick()
            assert not ctx.get(dut.recv.valid)
            assert ctx.get(dut.credit) == 4                   # the frame acknowledged ours
            symbols, waited = await capture_frame(ctx, dut)
            assert waited == 1
            assert symbols == encode_ack(1)
            # A partner frame arrives while a DATA frame is stuck on the line (tx not ready)
            # and another payload waits: the stuck frame keeps the ack it opened with, the next
            # one carries the new ack, and no ACK frame is needed.
            ctx.set(dut.tx.ready, 0)
            await offer(ctx, dut, payloads[2:4])
            await feed(ctx, dut, encode_data(1, 1, 0, bits), delivered)
            assert delivered == [(1, 0)]
            symbols, _ = await capture_frame(ctx, dut)
            assert symbols == encode_data(1, 1, payloads[2], bits)
            symbols, waited = await capture_frame(ctx, dut)
            assert waited == 0                                # no gap between frames
            assert symbols == encode_data(2, 2, payloads[3], bits)
            for _ in range(20):
                assert not ctx.get(dut.tx.valid)
                await ctx.tick()
            assert counters(ctx, dut) == {**dict.fromkeys(COUNTERS, 0),
                                          "frames_sent": 3, "acks_sent": 1}

        simulate(dut, testbench, name=f"link_single_{bits}")

    @pytest.mark.parametrize("delay", [1, 8, 20])
    def test_delayed_ack(self, delay):
        """With ``ack_delay``, an owed acknowledgement rides on a DATA frame that starts within
        the delay; without one it goes out as an ACK frame ``delay`` cycles later than it
        would without a delay."""
        bits = 8
        dut = LinkLayer(bits, timeout=1000, ack_delay=delay)

        async def testbench(ctx):
            ctx.set(dut.tx.ready, 1)
            # Nothing to send: the ACK frame opens 3 + delay cycles after the last symbol.
            await feed(ctx, dut, encode_data(0, 0, 0x5A, bits))
            _, waited = await capture_frame(ctx, dut)
            assert waited == 2 + delay            # t + 3 + delay, t the last symbol
            # A payload offered within the delay carries the ack instead.
            await feed(ctx, dut, encode_data(1, 0, 0xA5, bits))
            for _ in range(delay // 2):
                await ctx.tick()
            await offer(ctx, dut, [0x33])
            symbols, _ = await capture_frame(ctx, dut)
            assert symbols == encode_data(0, 2, 0x33, bits)
            for _ in range(delay + 20):
                assert not ctx.get(dut.tx.valid)
                await ctx.tick()
            assert counters(ctx, dut)["acks_sent"] == 1

        simulate(dut, testbench, name=f"link_delayed_ack_{delay}")

    def test_receive_errors(self):
        bits = 12
        dut = LinkLayer(bits, timeout=1000)

        async def testbench(ctx):
            delivered = []
            good = encode_data(0, 0, 0x123, bits)
            bad = list(good)
            bad[4] = (bad[4][0] ^ 0x10, 0)
            await feed(ctx, dut, bad, delivered)                       # bad CRC
            await feed(ctx, dut, good[:5], delivered)                  # truncated by ...
            await feed(ctx, dut, encode_ack(0), delivered)             # ... a good ACK
            await feed(ctx, dut, good[:3] + [(0x05, 1)], delivered)    # unknown control code
            await feed(ctx, dut, [(0x55, 0), (0x00, 1), (0x7F, 1)], delivered)   # no frame
            await feed(ctx, dut, good, delivered)                      # delivered
            await feed(ctx, dut, good, delivered)                      # duplicate
            await feed(ctx, dut, encode_data(2, 0, 0x456, bits), delivered)   # after a gap
            await feed(ctx, dut, encode_data(1, 0, 0x789, bits), delivered)   # delivered
            await feed(ctx, dut, encode_data(1, 0, 0x789, bits)[:-1], delivered)  # too short...
            await feed(ctx, dut, [(0xAA, 0)] + encode_data(2, 0, 0xABC, bits), delivered)
            await ctx.tick()
            assert delivered == [(0, 0x123), (1, 0x789), (2, 0xABC)]
            # Each good DATA frame owes an acknowledgement. The first opened an ACK frame at
            # once (tx is not ready, so it waits with the ack of that moment); the others
            # collapse into one more ACK frame.
            assert counters(ctx, dut) == {**dict.fromkeys(COUNTERS, 0), "crc_errors": 4,
                                          "sequence_errors": 2, "acks_sent": 1}
            assert (await capture_frame(ctx, dut))[0] == encode_ack(1)
            assert (await capture_frame(ctx, dut))[0] == encode_ack(3)
            assert counters(ctx, dut)["acks_sent"] == 2

        simulate(dut, testbench, name="link_receive_errors")

    def test_ignores_acks_of_unsent_frames(self):
        dut = LinkLayer(8, timeout=1000)

        async def testbench(ctx):
            await feed(ctx, dut, encode_ack(1))       # nothing has been sent
            await ctx.tick()
            assert ctx.get(dut.credit) == 4
            await offer(ctx, dut, [1])
            await ctx.tick()                          # the frame opens: seq 0 is on the line
            assert ctx.get(dut.credit) == 3
            await feed(ctx, dut, encode_ack(2))       # seq 1 has not been sent
            await ctx.tick()
            assert ctx.get(dut.credit) == 3
            await feed(ctx, dut, encode_ack(1))
            await ctx.tick()
            assert ctx.get(dut.credit) == 4
            await feed(ctx, dut, encode_ack(0))       # stale
            await ctx.tick()
            assert ctx.get(dut.credit) == 4
            assert (await capture_frame(ctx, dut))[0] == encode_data(0, 0, 1, 8)

        simulate(dut, testbench, name="link_unsent_acks")

    def test_timeout_resends_in_order(self):
        bits, timeout = 8, 40
        dut = LinkLayer(bits, replay_depth=4, timeout=timeout)

        async def seqs(ctx, count):
            return [decode((await capture_frame(ctx, dut, limit=2 * timeout))[0], bits).seq
                    for _ in range(count)]

        async def testbench(ctx):
            await offer(ctx, dut, range(4))
            assert not ctx.get(dut.send.ready) and ctx.get(dut.credit) == 0
            # Frames 0..3, a timeout, 0..3 again.
            assert await seqs(ctx, 8) == [0, 1, 2, 3, 0, 1, 2, 3]
            assert counters(ctx, dut)["timeouts"] == 1
            await feed(ctx, dut, encode_ack(3))
            await ctx.tick()
            assert ctx.get(dut.credit) == 3
            await offer(ctx, dut, [4, 5])
            # 4 and 5, then 3, 4, 5 again after the next timeout.
            assert await seqs(ctx, 5) == [4, 5, 3, 4, 5]
            assert counters(ctx, dut) == {**dict.fromkeys(COUNTERS, 0), "frames_sent": 13,
                                          "retransmits": 7, "timeouts": 2}

        simulate(dut, testbench, name="link_timeout")


# --- Two link layers through a faulty channel -----------------------------------------------------

class Channel:
    """One direction of the line between two link layers, as seen by the link layer: it takes
    symbols from a ``tx`` (throttling with ``ready`` at random and when its queue is long),
    delivers them ``delay`` cycles later on an ``rx``, and injects faults: per frame ``drop`` and
    ``duplicate`` probabilities; per symbol ``flip`` (one of the 9 bits; a result that is a
    physical-layer control code is swallowed, as the PHY would) and ``lose``; ``cuts``, cycle
    ranges during which everything sent is lost and the receiver sees random ``garbage``."""

    def __init__(self, rng, *, delay=2, throttle=0.0, drop=0.0, duplicate=0.0, flip=0.0,
                 lose=0.0, cuts=(), garbage=0.0):
        self.rng = rng
        self.delay, self.throttle = delay, throttle
        self.drop, self.duplicate, self.flip, self.lose = drop, duplicate, flip, lose
        self.cuts, self.garbage = list(cuts), garbage
        self.queue = collections.deque()      # (cycle due, symbol)
        self.frame = []                       # symbols of the frame being sent, for duplicates
        self.mode = None
        self.connected = True                 # cleared by a test to cut the line at will
        self.injected = collections.Counter()

    def is_cut(self, cycle):
        return not self.connected or any(start <= cycle < end for start, end in self.cuts)

    def ready(self):
        return len(self.queue) < 24 and self.rng.random() >= self.throttle

    def take(self, cycle, symbol, frame_length):
        if self.is_cut(cycle):
            self.injected["cut"] += 1
            return
        if symbol[1]:
            self.frame, self.mode = [], None
            if self.rng.random() < self.drop:
                self.mode = "drop"
                self.injected["drop"] += 1
            elif self.rng.random() < self.duplicate:
                self.mode = "duplicate"
                self.injected["duplicate"] += 1
        if self.mode == "drop":
            return
        self.queue.append((cycle + self.delay, symbol))
        self.frame.append(symbol)
        if self.mode == "duplicate" and len(self.frame) == frame_length(self.frame[0][0]):
            self.queue.extend((cycle + self.delay, s) for s in self.frame)
            self.mode = None

    def output(self, cycle):
        if self.is_cut(cycle):
            self.queue.clear()
            if self.rng.random() < self.garbage:
                return (self.rng.randrange(0x80), 1) if self.rng.random() < 0.2 else (
                    self.rng.randrange(0x100), 0)
            return None
        if not self.queue or self.queue[0][0] > cycle:
            return None
        _, symbol = self.queue.popleft()
        if self.rng.random() < self.lose:
            self.injected["lose"] += 1
            return None
        if self.rng.random() < self.flip:
            self.injected["flip"] += 1
            value = (symbol[0] | symbol[1] << 8) ^ (1 << self.rng.randrange(9))
            symbol = (value & 0xFF, value >> 8)
            if symbol[1] and symbol[0] >= 0x80:
                return None
        return symbol


class Pair:
    """Link layers ``a`` and ``b`` joined by channels ``ab`` (a.tx to b.rx) and ``ba``, a
    producer of random payloads at each ``send`` (with random gaps) and a recorder at each
    ``recv``; :meth:`run` steps all of them one cycle at a time."""

    def __init__(self, bits, count, *, seed=0, ab=None, ba=None, count_ba=None, gaps=0.2,
                 **kwargs):
        self.bits = bits
        self.a, self.b = LinkLayer(bits, **kwargs), LinkLayer(bits, **kwargs)
        self.top = Module()
        self.top.submodules.a, self.top.submodules.b = self.a, self.b
        self.rng = random.Random(seed)
        self.ab = Channel(random.Random(seed + 1), **(ab or {}))
        self.ba = Channel(random.Random(seed + 2), **(ba or {}))
        count_ba = count if count_ba is None else count_ba
        self.payloads = {"a": [self.rng.getrandbits(bits) for _ in range(count)],
                         "b": [self.rng.getrandbits(bits) for _ in range(count_ba)]}
        self.sent = {"a": 0, "b": 0}
        self.received = {"a": [], "b": []}    # by the named end: (seq, payload)
        self.gaps = gaps
        self.cycle = 0
        self.line = {"a": [], "b": []}        # symbols of the frame each end is sending
        self.stuck = {"a": None, "b": None}   # a symbol offered and not taken
        self.frames = {"a": 0, "b": 0}        # whole frames sent

    def frame_length(self, kind):
        return frame_symbols(kind, self.bits)

    def done(self, ctx):
        return (all(len(self.received[x]) == len(self.payloads[y]) for x, y in ("ab", "ba"))
                and all(ctx.get(d.credit) == d.replay_depth for d in (self.a, self.b)))

    async def run(self, ctx, until, limit):
        """Step until ``until(ctx)`` holds (at most ``limit`` cycles), or exactly ``limit``
        cycles if ``until`` is ``None``."""
        ends = (("a", self.a, self.ab, self.b), ("b", self.b, self.ba, self.a))
        for _ in range(limit):
            if until is not None and until(ctx):
                return
            moves = []
            for name, dut, channel, other in ends:
                index = self.sent[name]
                offer = index < len(self.payloads[name]) and self.rng.random() >= self.gaps
                ctx.set(dut.send.valid, offer)
                if offer:
                    ctx.set(dut.send.payload, self.payloads[name][index])
                ready = channel.ready()
                ctx.set(dut.tx.ready, ready)
                set_symbol(ctx, other.rx, channel.output(self.cycle))
                valid = ctx.get(dut.tx.valid)
                symbol = get_symbol(ctx, dut.tx) if valid else None
                # Frames are contiguous, and a symbol offered stays until it is taken.
                if self.line[name] or self.stuck[name]:
                    assert valid, f"{name}.tx: valid fell inside a frame"
                if self.stuck[name]:
                    assert symbol == self.stuck[name], f"{name}.tx: symbol changed before taken"
                moves.append((name, dut, channel, offer and ctx.get(dut.send.ready),
                              symbol, ready))
                if ctx.get(dut.recv.valid):
                    self.received[name].append((ctx.get(dut.recv_seq),
                                                ctx.get(dut.recv.payload)))
            await ctx.tick()
            for name, dut, channel, accepted, symbol, ready in moves:
                if accepted:
                    self.sent[name] += 1
                self.stuck[name] = symbol if symbol and not ready else None
                if symbol and ready:
                    channel.take(self.cycle, symbol, self.frame_length)
                    line = self.line[name]
                    line.append(symbol)
                    if len(line) == self.frame_length(line[0][0]):
                        decode(line, self.bits)        # every frame sent is a good frame
                        self.frames[name] += 1
                        line.clear()
            self.cycle += 1
        if until is None:
            return
        raise AssertionError(f"not done after {limit} cycles: sent {self.sent}, received "
                             f"{ {k: len(v) for k, v in self.received.items()} }")

    def check_delivery(self):
        for receiver, sender in ("ba", "ab"):
            expected = [(i % 256, p) for i, p in enumerate(self.payloads[sender])]
            assert self.received[receiver] == expected, f"{sender} -> {receiver}"

    def simulate(self, testbench, name):
        simulate(self.top, testbench, name=name)


def run_pair(pair, limit, name, quiet=300):
    """Run ``pair`` until both directions are delivered and acknowledged, then ``quiet`` cycles
    more (nothing else may arrive); return the counters of both ends."""
    result = {}

    async def testbench(ctx):
        await pair.run(ctx, pair.done, limit)
        await pair.run(ctx, None, quiet)
        result["a"], result["b"] = counters(ctx, pair.a), counters(ctx, pair.b)

    pair.simulate(testbench, name)
    pair.check_delivery()
    return result["a"], result["b"]


class TestPair:
    @pytest.mark.parametrize("bits, depth", [(5, 4), (16, 2), (64, 8), (8, 64)])
    def test_clean(self, bits, depth):
        """A clean line, throttled and delayed: every counter of a fault stays at zero."""
        pair = Pair(bits, 300, seed=bits, replay_depth=depth,
                    ab={"throttle": 0.2, "delay": 5}, ba={"throttle": 0.1, "delay": 1})
        a, b = run_pair(pair, 20000, f"link_clean_{bits}")
        for end in (a, b):
            assert end["frames_sent"] == 300
            for name in ("retransmits", "timeouts", "crc_errors", "sequence_errors"):
                assert end[name] == 0, name
        assert pair.frames["a"] == a["frames_sent"] + a["acks_sent"]

    @pytest.mark.parametrize("bits, depth, seed, cuts_ab, cuts_ba", [
        (16, 4, 7, [(1500, 1800)], [(3000, 3400)]),
        (3, 2, 8, [(800, 1600)], [(1000, 1700)]),       # both directions down at once
        (40, 16, 9, [(2000, 2100), (4000, 4600)], []),
    ])
    def test_faults(self, bits, depth, seed, cuts_ab, cuts_ba):
        """Every fault at once in both directions, including a cut line and sequence numbers
        past 256 (and b runs out of payloads first, so that ACK frames carry its
        acknowledgements at the end)."""
        faults = {"throttle": 0.2, "delay": 3, "drop": 0.03, "duplicate": 0.03, "flip": 0.005,
                  "lose": 0.003, "garbage": 0.3}
        pair = Pair(bits, 320, count_ba=260, seed=seed, replay_depth=depth, timeout=128,
                    ab={**faults, "cuts": cuts_ab}, ba={**faults, "cuts": cuts_ba})
        a, b = run_pair(pair, 40000, f"link_faults_{bits}")
        for channel in (pair.ab, pair.ba):
            assert all(channel.injected[k] > 0 for k in ("drop", "duplicate", "flip"))
        assert pair.ab.injected["cut"] > 0
        for end in (a, b):
            for name in COUNTERS:
                if name != "acks_sent":
                    assert end[name] > 0, name
            assert end["frames_sent"] > 260
        assert b["acks_sent"] > 0       # b has nothing left to send while a still sends
        assert pair.frames["a"] == a["frames_sent"] + a["acks_sent"]
        assert pair.frames["b"] == b["frames_sent"] + b["acks_sent"]

    @pytest.mark.parametrize("fault, shows, quiet", [
        ("duplicate", ["sequence_errors"], ["crc_errors", "timeouts", "retransmits"]),
        ("drop", ["timeouts", "retransmits"], ["crc_errors"]),
        ("flip", ["crc_errors", "timeouts", "retransmits"], []),
    ])
    def test_single_fault(self, fault, shows, quiet):
        """One kind of fault on the line from a to b: the counters of b (receiving) and a
        (sending) show it and nothing else."""
        pair = Pair(8, 150, count_ba=150, seed=3, timeout=128,
                    ab={"delay": 2, fault: 0.05 if fault != "flip" else 0.01})
        a, b = run_pair(pair, 20000, f"link_{fault}")
        both = {name: a[name] + b[name] for name in COUNTERS}
        for name in shows:
            assert both[name] > 0, name
        for name in quiet:
            assert both[name] == 0, name

    def test_stall_without_acknowledgements(self):
        """With the line from b to a cut, a sends ``replay_depth`` frames, then stalls (send not
        ready, credit 0) and resends them after each timeout; b delivers each once. Joined
        again, the link carries on."""
        depth, timeout = 4, 64
        pair = Pair(10, 40, count_ba=0, seed=11, replay_depth=depth, timeout=timeout,
                    gaps=0.0, ab={"delay": 2})
        pair.ba.connected = False

        async def testbench(ctx):
            await pair.run(ctx, None, 6 * timeout)
            assert pair.sent["a"] == depth
            assert not ctx.get(pair.a.send.ready) and ctx.get(pair.a.credit) == 0
            assert len(pair.received["b"]) == depth
            a, b = counters(ctx, pair.a), counters(ctx, pair.b)
            assert a["timeouts"] >= 4 and a["retransmits"] >= depth * (a["timeouts"] - 1)
            assert b["sequence_errors"] >= depth * (a["timeouts"] - 1) and b["acks_sent"] > 4
            pair.ba.connected = True
            await pair.run(ctx, pair.done, 5000)
            assert counters(ctx, pair.a)["frames_sent"] >= 40

        pair.simulate(testbench, "link_stall")
        pair.check_delivery()
