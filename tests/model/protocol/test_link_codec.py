"""The link layer's frame CRC (``bitgrid.protocol.link.LINK_FRAME_CRC``) against an independent
bit-serial CRC-16/XMODEM. The rest of the codec is tested in
``tests/hdl/link/test_link_layer.py``, with the gateware that must send the same symbols."""

import random

from bitgrid.protocol import link


def xmodem(data):
    """CRC-16/XMODEM one bit at a time: polynomial 0x1021, initial 0, no reflection, no XOR."""
    value = 0
    for byte in data:
        value ^= byte << 8
        for _ in range(8):
            value = ((value << 1) ^ 0x1021 if value & 0x8000 else value << 1) & 0xFFFF
    return value


def test_crc_is_xmodem():
    rng = random.Random(4)
    for length in range(0, 40):
        data = bytes(rng.randrange(256) for _ in range(length))
        assert link.LINK_FRAME_CRC.compute(data) == xmodem(data)


def test_frames_carry_the_crc_of_kind_and_body():
    rng = random.Random(5)
    for _ in range(50):
        bits = rng.randint(1, 64)
        seq, ack, payload = rng.randrange(256), rng.randrange(256), rng.getrandbits(bits)
        symbols = link.encode_data(seq, ack, payload, bits)
        data = bytes(byte for byte, _ in symbols)
        assert xmodem(data[:-2]) == int.from_bytes(data[-2:], "big")
        assert xmodem(data) == 0                       # the residue the gateware checks
    ack = bytes(byte for byte, _ in link.encode_ack(0x5A))
    assert xmodem(ack[:-2]) == int.from_bytes(ack[-2:], "big")

