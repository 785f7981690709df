"""The frame format of the inter-chip link layer (SPEC section 8): its constants and a pure-Python
codec, the reference of the gateware (:class:`bitgrid.hdl.link.layer.LinkLayer`) and what tests,
documentation and benches use to build and read frames.

A frame is a run of :data:`~bitgrid.hdl.link.Symbol` values (a byte and a control flag), given
here as ``(byte, ctrl)`` tuples:

* DATA: ``[ctrl 0x01] seq ack payload... crc_hi crc_lo``, the payload least significant byte
  first in :func:`payload_bytes` bytes (unused high bits zero);
* ACK: ``[ctrl 0x02] ack crc_hi crc_lo``.

The CRC is :data:`LINK_FRAME_CRC` (CRC-16/XMODEM) over the kind byte
(the control code) and every byte before the CRC, appended most significant byte first, so the
CRC of a whole good frame is the residue 0. ``seq`` and ``ack`` count modulo 256; ``ack`` is the
next sequence number the frame's sender expects to receive (a cumulative acknowledgement).
"""

import enum
import typing

from amaranth.lib import crc

from bitgrid.checks import check_int

__all__ = ["LINK_FRAME_CRC", "FrameKind", "Frame", "FrameError", "MAX_PAYLOAD_BITS",
           "SEQUENCE_MODULUS", "check_payload_bits", "payload_bytes", "frame_symbols",
           "frame_crc", "encode_data", "encode_ack", "decode", "line_efficiency"]

#: The CRC of every link-layer frame: CRC-16/XMODEM from :mod:`amaranth.lib.crc.catalog`
#: (polynomial 0x1021, initial value 0, no reflection, no final XOR, check value 0x31C3) over
#: 8-bit data words, appended most significant byte first. The gateware builds its CRC stages
#: from this definition (``LINK_FRAME_CRC.algorithm``). It is the host protocol's algorithm too,
#: but a definition of its own: either may change without the other.
LINK_FRAME_CRC = crc.catalog.CRC16_XMODEM(data_width=8)

#: Largest payload of one DATA frame, in bits.
MAX_PAYLOAD_BITS = 64

#: Sequence and acknowledgement numbers count modulo this.
SEQUENCE_MODULUS = 256


class FrameKind(enum.IntEnum):
    """The control code that opens a frame (its *kind byte*, covered by the CRC)."""
    DATA = 0x01     #: seq, ack, payload, CRC
    ACK = 0x02      #: ack, CRC


class Frame(typing.NamedTuple):
    """A decoded frame. ``seq`` and ``payload`` are ``None`` for an ACK frame."""
    kind: FrameKind
    seq: typing.Optional[int]
    ack: int
    payload: typing.Optional[int]


class FrameError(ValueError):
    """A run of symbols that is not a good frame (wrong length, stray control symbol, bad CRC)."""


def check_payload_bits(payload_bits):
    """Return ``payload_bits`` if it is an integer from 1 to :data:`MAX_PAYLOAD_BITS`.

    :raises ValueError: otherwise.
    """
    return check_int(payload_bits, "payload_bits", minimum=1, maximum=MAX_PAYLOAD_BITS)


def payload_bytes(payload_bits):
    """Bytes of payload in a DATA frame: ``ceil(payload_bits / 8)``."""
    return (check_payload_bits(payload_bits) + 7) // 8


def frame_symbols(kind, payload_bits=None):
    """Length of a frame in symbols: ``5 + payload_bytes(payload_bits)`` for DATA, 4 for ACK
    (``payload_bits`` is needed only for DATA)."""
    kind = FrameKind(kind)
    if kind == FrameKind.ACK:
        return 4
    if payload_bits is None:
        raise ValueError("A DATA frame's length depends on payload_bits")
    return 5 + payload_bytes(payload_bits)


def frame_crc(kind, body):
    """:data:`LINK_FRAME_CRC` of the kind byte followed by ``body`` (the bytes before the CRC)."""
    return LINK_FRAME_CRC.compute(bytes([int(kind)]) + bytes(body))


def _check_number(name, value):
    return check_int(value, name, minimum=0, maximum=SEQUENCE_MODULUS - 1)


def _frame(kind, body):
    crc = frame_crc(kind, body)
    return ([(int(kind), 1)] + [(byte, 0) for byte in body]
            + [(crc >> 8, 0), (crc & 0xFF, 0)])


def encode_data(seq, ack, payload, payload_bits):
    """The symbols of a DATA frame, as ``(byte, ctrl)`` tuples.

    :raises ValueError: for ``seq`` or ``ack`` outside 0..255, a bad ``payload_bits``, or a
        ``payload`` that is not an integer from 0 to ``2**payload_bits - 1``.
    """
    size = payload_bytes(payload_bits)
    _check_number("seq", seq)
    _check_number("ack", ack)
    check_int(payload, "payload", minimum=0, maximum=(1 << payload_bits) - 1)
    return _frame(FrameKind.DATA, bytes([seq, ack]) + payload.to_bytes(size, "little"))


def encode_ack(ack):
    """The symbols of an ACK frame, as ``(byte, ctrl)`` tuples."""
    return _frame(FrameKind.ACK, bytes([_check_number("ack", ack)]))


def decode(symbols, payload_bits=None):
    """Decode one whole frame.

    :param symbols: ``(byte, ctrl)`` pairs (or :data:`~bitgrid.hdl.link.Symbol`-like objects
        with ``data`` and ``ctrl``), from the opening control symbol to the last CRC byte.
    :param payload_bits: if given, a DATA frame must have exactly the length of
        :func:`frame_symbols`, and payload bits above ``payload_bits`` are dropped (the gateware
        ignores them too); if ``None``, the payload is whatever lies between ``ack`` and the CRC.
    :returns: a :class:`Frame`.
    :raises FrameError: if the frame is empty, does not open with a DATA or ACK control code,
        holds a control symbol after the first, has the wrong length, or fails its CRC.
    """
    pairs = []
    for symbol in symbols:
        if isinstance(symbol, tuple):
            byte, ctrl = symbol
        else:
            byte, ctrl = symbol.data, symbol.ctrl
        pairs.append((int(byte), int(ctrl)))
    if not pairs:
        raise FrameError("Empty frame")
    code, ctrl = pairs[0]
    if not ctrl or code not in tuple(FrameKind):
        raise FrameError(f"A frame must open with control code 0x01 (DATA) or 0x02 (ACK), "
                         f"not {'control' if ctrl else 'data'} byte 0x{code:02x}")
    kind = FrameKind(code)
    for position, (byte, ctrl) in enumerate(pairs[1:], 1):
        if ctrl:
            raise FrameError(f"Control symbol 0x{byte:02x} at position {position} truncates "
                             f"the {kind.name} frame")
    if kind == FrameKind.ACK:
        expected = "4"
        good_length = len(pairs) == 4
    elif payload_bits is not None:
        expected = str(frame_symbols(kind, payload_bits))
        good_length = len(pairs) == frame_symbols(kind, payload_bits)
    else:
        expected = "at least 6"
        good_length = len(pairs) >= 6
    if not good_length:
        raise FrameError(f"A {kind.name} frame has {expected} symbols, not {len(pairs)}")
    body = bytes(byte for byte, _ in pairs[1:])
    if frame_crc(kind, body) != 0:
        raise FrameError(f"Bad CRC: 0x{int.from_bytes(body[-2:], 'big'):04x} received, "
                         f"0x{frame_crc(kind, body[:-2]):04x} computed")
    if kind == FrameKind.ACK:
        return Frame(kind, None, body[0], None)
    payload = int.from_bytes(body[2:-2], "little")
    if payload_bits is not None:
        payload &= (1 << payload_bits) - 1
    return Frame(kind, body[0], body[1], payload)


def line_efficiency(payload_bits, *, ack_frames=0.0):
    """Fraction of the symbols on a busy line that carry payload bits: ``payload_bits`` over the
    8 bits of each symbol of a DATA frame, plus ``ack_frames`` ACK frames per DATA frame (0 when
    every acknowledgement rides on a DATA frame going the other way, 1 for a one-way stream).
    The link layer leaves no gap between frames; the physical layer's own overhead (idle and
    training symbols, line coding) is not included."""
    symbols = frame_symbols(FrameKind.DATA, payload_bits) + ack_frames * frame_symbols(
        FrameKind.ACK)
    return payload_bits / (8 * symbols)
