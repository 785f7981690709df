# amaranth: UnusedElaboratable=no
"""COBS stream components (``bitgrid.hdl.stream.cobs``) against the PyPI ``cobs`` package, on
random packets (with zeros, runs of 254 and 255 non-zero bytes, empty ones), with random idle
input cycles and back pressure."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from cobs import cobs

from bitgrid.hdl.stream import COBSDecoder, COBSEncoder
from support.gateware import raises_exactly
from support.streams import exchange


def packets(rng, count):
    """Random packets: empty, all zero, runs of non-zero bytes around 254, mixtures."""
    fixed = [b"", b"\x00", b"\x00\x00", b"\x01", b"\x11" * 253, b"\x22" * 254, b"\x33" * 255,
             b"\x44" * 254 + b"\x00", b"\x00" + b"\x55" * 254, b"\x66" * 508, b"\x77" * 509]
    rnd = []
    for _ in range(count):
        kind = rng.randrange(3)
        if kind == 0:
            rnd.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))))
        elif kind == 1:
            rnd.append(bytes(rng.choice((0, rng.randrange(1, 256)))
                             for _ in range(rng.randrange(1, 30))))
        else:
            run = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(250, 260)))
            rnd.append(bytes(rng.randrange(256) for _ in range(rng.randrange(3))) + run)
    return fixed + rnd


class TestConstructor:
    @pytest.mark.parametrize("max_packet", [0, -1, 1.5, True, "8"])
    def test_max_packet(self, max_packet):
        with raises_exactly(ValueError, f"max_packet must be an integer of at least 1, "
                                        f"not {max_packet!r}"):
            COBSEncoder(max_packet=max_packet)

    def test_depth(self):
        assert COBSEncoder(max_packet=1).depth == 2
        assert COBSEncoder(max_packet=254).depth == 256
        assert COBSEncoder(max_packet=600).depth == 603


@pytest.mark.parametrize("p_valid, p_ready", [(1.0, 1.0), (0.6, 0.4)])
def test_decoder_matches_cobs_package(p_valid, p_ready):
    rng = random.Random(f"decode {p_valid} {p_ready}")
    data = packets(rng, 12)
    line = [0, 0]                                    # bare delimiters are no packet
    for packet in data:
        line += list(cobs.encode(packet)) + [0] + [0] * rng.randrange(2)
    broken = [0x05, 0x11, 0x22, 0]                   # a block cut short by its delimiter
    out = exchange(COBSDecoder(), line + broken, rng=rng, p_valid=p_valid, p_ready=p_ready,
                   until=lambda out: sum(t["end"] for t in out) == len(data) + 1)
    got, current = [], []
    for token in out:
        if token["end"]:
            assert token["data"] == 0
            got.append((bytes(current), token["error"]))
            current = []
        else:
            assert token["error"] == 0
            current.append(token["data"])
    with pytest.raises(cobs.DecodeError):
        cobs.decode(bytes(broken[:-1]))
    assert got == [(packet, 0) for packet in data] + [(b"\x11\x22", 1)]


@pytest.mark.parametrize("p_valid, p_ready", [(1.0, 1.0), (0.5, 0.3)])
def test_encoder_matches_cobs_package(p_valid, p_ready):
    rng = random.Random(f"encode {p_valid} {p_ready}")
    data = [packet for packet in packets(rng, 12) if packet]     # a packet has a last byte
    words = [{"data": byte, "last": index == len(packet) - 1}
             for packet in data for index, byte in enumerate(packet)]
    expected = b"".join(cobs.encode(packet) + b"\x00" for packet in data)
    encoder = COBSEncoder(max_packet=max(map(len, data)))
    out = exchange(encoder, words, rng=rng, p_valid=p_valid, p_ready=p_ready,
                   until=lambda out: out.count(0) == len(data))
    assert bytes(out) == expected


def test_encoder_drops_bytes_beyond_max_packet():
    rng = random.Random(3)
    words = [{"data": 0x10 + k, "last": k == 5} for k in range(6)] + [{"data": 7, "last": 1}]
    out = exchange(COBSEncoder(max_packet=4), words, rng=rng, until=lambda out: out.count(0) == 2)
    assert bytes(out) == cobs.encode(bytes([0x10, 0x11, 0x12, 0x13])) + b"\0" \
        + cobs.encode(b"\x07") + b"\0"


class _RoundTrip(wiring.Component):
    """A :class:`COBSEncoder` into a :class:`COBSDecoder`."""

    def __init__(self, max_packet):
        self.encoder, self.decoder = COBSEncoder(max_packet=max_packet), COBSDecoder()
        super().__init__({"i": In(self.encoder.i.signature.flip()),
                          "o": Out(self.decoder.o.signature)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.encoder, m.submodules.decoder = self.encoder, self.decoder
        wiring.connect(m, wiring.flipped(self.i), self.encoder.i)
        wiring.connect(m, self.encoder.o, self.decoder.i)
        wiring.connect(m, self.decoder.o, wiring.flipped(self.o))
        return m


def test_round_trip():
    """Encoder into decoder, with back pressure: every packet comes back."""
    rng = random.Random("round trip")
    data = [packet for packet in packets(rng, 6) if packet]
    words = [{"data": byte, "last": index == len(packet) - 1}
             for packet in data for index, byte in enumerate(packet)]
    out = exchange(_RoundTrip(max(map(len, data))), words, rng=rng, p_ready=0.5,
                   until=lambda out: sum(t["end"] for t in out) == len(data))
    got, current = [], []
    for token in out:
        if token["end"]:
            got.append(bytes(current))
            current = []
        else:
            current.append(token["data"])
    assert got == data


def test_encoder_latency():
    """The first encoded byte is valid 3 cycles after the ``last`` byte was taken, the next
    ones every 2 cycles, the delimiter in the cycle after the last (the docstring's figures)."""
    from support.gateware import simulate
    encoder = COBSEncoder(max_packet=8)
    packet = b"\x11\x00\x22"
    seen = []

    async def testbench(ctx):
        ctx.set(encoder.o.ready, 1)
        for index, byte in enumerate(packet):
            ctx.set(encoder.i.valid, 1)
            ctx.set(encoder.i.payload, {"data": byte, "last": index == len(packet) - 1})
            assert ctx.get(encoder.i.ready)
            await ctx.tick()
        ctx.set(encoder.i.valid, 0)
        for cycle in range(1, 20):
            if ctx.get(encoder.o.valid):
                seen.append((cycle, ctx.get(encoder.o.payload)))
            await ctx.tick()

    simulate(encoder, testbench)
    encoded = cobs.encode(packet)
    assert seen == [(3 + 2 * k, byte) for k, byte in enumerate(encoded)] \
        + [(3 + 2 * len(encoded) - 1, 0)]
