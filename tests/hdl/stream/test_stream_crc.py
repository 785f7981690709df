# amaranth: UnusedElaboratable=no
"""CRC stream stages (``bitgrid.hdl.stream.crc``) against the software model of
``amaranth.lib.crc`` (``Parameters.compute``), for the algorithms the project uses and a
reflected one, with random idle input cycles and back pressure."""

import random

import pytest
from amaranth.lib.crc import catalog

from bitgrid.hdl.stream import CRCAppender, CRCVerifier
from bitgrid.hdl.stream.crc import crc_words
from support.gateware import raises_exactly
from support.streams import exchange

ALGORITHMS = [catalog.CRC16_XMODEM, catalog.CRC32_ISO_HDLC, catalog.CRC8_AUTOSAR]


def random_packets(rng, count, width=8):
    return [[rng.randrange(1 << width) for _ in range(rng.randrange(1, 12))]
            for _ in range(count)]


class TestConstructor:
    @pytest.mark.parametrize("cls", [CRCAppender, CRCVerifier])
    def test_algorithm(self, cls):
        with raises_exactly(TypeError, "algorithm must be an amaranth.lib.crc.Algorithm, "
                                       "not 'CRC16'"):
            cls("CRC16")

    @pytest.mark.parametrize("cls", [CRCAppender, CRCVerifier])
    @pytest.mark.parametrize("width", [0, 3, 1.0])
    def test_data_width(self, cls, width):
        message = (f"data_width must be an integer of at least 1, not {width!r}" if width != 3
                   else "data_width must divide the CRC width of 16 bits, not 3")
        with raises_exactly(ValueError, message):
            cls(catalog.CRC16_XMODEM, data_width=width)


def test_crc_words_order():
    """High byte first for CRC-16/XMODEM (as the host protocol sends it), low first for the
    reflected CRC-32."""
    assert crc_words(catalog.CRC16_XMODEM, 0x1234) == [0x12, 0x34]
    assert crc_words(catalog.CRC32_ISO_HDLC, 0x11223344) == [0x44, 0x33, 0x22, 0x11]


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("p_valid, p_ready", [(1.0, 1.0), (0.5, 0.4)])
def test_appender(algorithm, p_valid, p_ready):
    rng = random.Random(f"append {algorithm.crc_width} {p_valid}")
    data = random_packets(rng, 10)
    words = [{"data": b, "first": k == 0, "last": k == len(p) - 1}
             for p in data for k, b in enumerate(p)]
    out = exchange(CRCAppender(algorithm), words, rng=rng, p_valid=p_valid, p_ready=p_ready,
                   until=lambda out: sum(t["last"] for t in out) == len(data))
    expected = []
    for packet in data:
        crc = algorithm(8).compute(packet)
        expected += [{"data": b, "first": k == 0, "last": 0} for k, b in enumerate(packet)]
        tail = crc_words(algorithm, crc)
        expected += [{"data": b, "first": 0, "last": k == len(tail) - 1}
                     for k, b in enumerate(tail)]
    assert out == [{k: int(v) for k, v in t.items()} for t in expected]


@pytest.mark.parametrize("algorithm", ALGORITHMS, ids=lambda a: type(a).__name__)
@pytest.mark.parametrize("p_valid, p_ready", [(1.0, 1.0), (0.5, 0.4)])
def test_verifier(algorithm, p_valid, p_ready):
    """Good packets pass, every packet with one bit flipped (in data or checksum) fails."""
    rng = random.Random(f"verify {algorithm.crc_width} {p_valid}")
    cases = []
    for packet in random_packets(rng, 12):
        coded = packet + crc_words(algorithm, algorithm(8).compute(packet))
        good = rng.random() < 0.5
        if not good:
            where = rng.randrange(len(coded))
            coded[where] ^= 1 << rng.randrange(8)
        cases.append((coded, good))
    words = []
    for coded, _ in cases:
        words += [{"data": b, "first": k == 0} for k, b in enumerate(coded)] + [{"end": 1}]
    out = exchange(CRCVerifier(algorithm), words, rng=rng, p_valid=p_valid, p_ready=p_ready,
                   until=lambda out: sum(t["end"] for t in out) == len(cases))
    assert [t["data"] for t in out if not t["end"]] == [b for coded, _ in cases for b in coded]
    assert [t["ok"] for t in out if t["end"]] == [int(good) for _, good in cases]


def test_appender_into_verifier_16bit_words():
    """With 16-bit words the CRC-32 takes two words; an appended packet verifies."""
    from amaranth.lib.crc import catalog as c
    algorithm = c.CRC32_ISO_HDLC
    rng = random.Random(5)
    packet = [rng.randrange(1 << 16) for _ in range(5)]
    words = [{"data": b, "first": k == 0, "last": k == 4} for k, b in enumerate(packet)]
    out = exchange(CRCAppender(algorithm, data_width=16), words, rng=rng,
                   until=lambda out: any(t["last"] for t in out))
    coded = [t["data"] for t in out]
    assert coded[:5] == packet
    assert coded[5:] == crc_words(algorithm, algorithm(16).compute(packet), 16)
    check = [{"data": b, "first": k == 0} for k, b in enumerate(coded)] + [{"end": 1}]
    verdict = exchange(CRCVerifier(algorithm, data_width=16), check, rng=rng,
                       until=lambda out: any(t["end"] for t in out))
    assert verdict[-1]["ok"] == 1


def test_verifier_first_end_token_restarts():
    """A token with ``first`` and ``end`` abandons a packet: the CRC register restarts, so an
    end token right after it reports the empty packet's verdict (the residue of no words: the
    initial value, which for CRC-16/XMODEM is the residue 0), whatever was taken before; and
    the words of an abandoned packet never count towards the next one."""
    algorithm = catalog.CRC16_XMODEM
    rng = random.Random(7)
    packet = [0x12, 0x34, 0x56]
    coded = packet + crc_words(algorithm, algorithm(8).compute(packet))
    words = ([{"data": 0xA5, "first": 1}, {"data": 0x5A}]         # a packet cut short
             + [{"first": 1, "end": 1}] + [{"end": 1}]           # abandoned, then an empty end
             + [{"data": b, "first": k == 0} for k, b in enumerate(coded)] + [{"end": 1}])
    out = exchange(CRCVerifier(algorithm), words, rng=rng,
                   until=lambda out: sum(t["end"] for t in out) == 3)
    assert [t["ok"] for t in out if t["end"]] == [0, 1, 1]
