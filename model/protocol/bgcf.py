"""BGCF v1, the BitGrid runtime control protocol of the original BitGrid Python toolchain: its
frame, its messages and their payloads, and this project's extensions (docs/serve.md).

The protocol is defined by the original toolchain (``docs/runtime_protocol.md`` and
``bitgrid/protocol.py`` there); this module is written from that definition. All fields are
little-endian.

Frame: a 16-byte header, then ``length`` payload bytes::

    0   4s  magic     b"BGCF"
    4   u8  version   1
    5   u8  type      a MsgType
    6   u8  flags     STEP: bit 0 marks a forwarded step (not forwarded again)
    7   u8  reserved  0
    8   u16 seq       the sender's counter (wraps)
    10  u16 length    payload bytes (0 to 65,535)
    12  u32 crc32     zlib CRC-32 of header bytes 4..11 followed by the payload

A receiver resynchronises by dropping bytes until the magic (:class:`FrameReader`).

Extensions (old clients ignore them): HELLO's ``features`` word says which of
:class:`Feature` a server has; the extension messages (types 0x20 and up) are answered only by
a server that announces them, and an old server answers them with ERROR ``UNKNOWN_TYPE``.
"""

import enum
import struct
import typing
import zlib

__all__ = ["MAGIC", "VERSION", "HEADER_SIZE", "MAX_PAYLOAD", "MsgType", "ErrorCode", "Feature",
           "StepFlag", "LinkFlag", "BgcfError", "Frame", "pack_frame", "FrameReader",
           "Hello", "LoadChunk", "Link", "Status", "PortInfo", "encode_hello", "decode_hello",
           "encode_load_chunk", "decode_load_chunk", "encode_step", "decode_step",
           "encode_values", "decode_values", "encode_error", "decode_error", "encode_link",
           "decode_link", "encode_link_ack", "decode_link_ack", "encode_readback",
           "decode_readback", "encode_config_chunk", "decode_config_chunk", "encode_status",
           "decode_status", "encode_ports", "decode_ports", "RowInfo", "Rows", "encode_rows", "decode_rows",
           "DIRECTION_CODES"]

MAGIC = b"BGCF"
VERSION = 1
_HEADER = struct.Struct("<4sBBBBHHI")
HEADER_SIZE = _HEADER.size                  # 16
#: The largest payload a frame carries (its u16 ``length``).
MAX_PAYLOAD = 0xFFFF


class MsgType(enum.IntEnum):
    """Message types. 0x01 to 0x7F are the original protocol's; 0x20 to 0x25 are this
    project's extensions (behind :class:`Feature` bits)."""
    HELLO = 0x01        # both ways: u16 width, u16 height, u16 proto_version, u32 features
    LOAD_CHUNK = 0x02   # u16 session_id, u32 total_bytes, u32 offset, u16 chunk_len, bytes
    APPLY = 0x03        # commit the fully loaded session with the highest number; resets
    STEP = 0x04         # u32 subcycles (with StepFlag.SYNC, then u64 counter to end at)
    SET_INPUTS = 0x05   # u16 count, count x {u8 name_len, name, u64 value}
    GET_OUTPUTS = 0x06  # no payload; answered with OUTPUTS
    OUTPUTS = 0x07      # as SET_INPUTS
    QUIT = 0x08         # close this connection
    SHUTDOWN = 0x09     # stop the server
    LINK = 0x0A         # a seam link to a peer server (:class:`Link`)
    UNLINK = 0x0B       # tear down every link
    LINK_ACK = 0x0C     # u16 lanes accepted
    # Extensions (this project's).
    READBACK = 0x20     # u32 offset, u16 max_len: a piece of the running program (BGBS)
    CONFIG_CHUNK = 0x21  # u32 total_bytes, u32 offset, u16 chunk_len, bytes
    GET_STATUS = 0x22   # no payload; answered with STATUS
    STATUS = 0x23       # u64 subcycle, u8 phase, u8 loaded, u16 links
    GET_PORTS = 0x24    # no payload; answered with PORTS
    PORTS = 0x25        # u16 count, count x {u8 direction, u8 name_len, name, u16 width}
    GET_ROWS = 0x26     # no payload; answered with ROWS
    ROWS = 0x27         # the rows of the named output ports (:class:`Rows`)
    ERROR = 0x7F        # u16 code, u8 msg_len, message


class ErrorCode(enum.IntEnum):
    """The ``code`` of an ERROR frame (this project's numbering; the original sends code 1
    for every error)."""
    UNKNOWN_TYPE = 1      # a message type the server does not know
    BAD_CRC = 2           # a frame whose CRC does not match (it is dropped)
    BAD_VERSION = 3       # a frame of another protocol version (it is dropped)
    BAD_PAYLOAD = 4       # a payload too short, too long or malformed
    BAD_CHUNK = 5         # a chunk out of order, overlapping, past total_bytes or oversized
    INCOMPLETE = 6        # APPLY with no fully loaded session
    BAD_PROGRAM = 7       # the loaded bytes are not a BitGrid program for this grid
    UNKNOWN_NAME = 8      # SET_INPUTS of a name that is no input
    TOO_WIDE = 9          # a value with bits beyond its lanes
    NO_PROGRAM = 10       # STEP or GET_OUTPUTS before any program was applied
    LINK_FAILED = 11      # LINK could not reach or agree with the peer
    PEER_LOST = 12        # a linked peer stopped answering during STEP
    TARGET_FAILED = 13    # the target behind the server failed (a board, a simulator)


class Feature(enum.IntFlag):
    """HELLO ``features`` bits of this project's servers (an old client ignores them)."""
    READBACK = 1 << 0     # READBACK / CONFIG_CHUNK
    STATUS = 1 << 1       # GET_STATUS / STATUS: the subcycle counter and the phase
    PORT_NAMES = 1 << 2   # GET_PORTS / PORTS, and port-map names in SET_INPUTS / OUTPUTS
    SYNC_STEP = 1 << 3    # STEP flag SYNC (a forwarded step to a subcycle count)
    DUPLEX_LINK = 1 << 4  # LINK flag DUPLEX (the link carries both directions)
    #: GET_ROWS / ROWS, and OUTPUTS that leave out a named output port with no whole row
    #: since the inputs last changed (docs/serve.md, "Rows")
    ROWS = 1 << 5


class StepFlag(enum.IntFlag):
    """STEP ``flags``."""
    FORWARDED = 1 << 0    # original: a step forwarded by a linked peer; not forwarded again
    #: Extension: after the u32 the payload carries a u64, the subcycle counter the step ends
    #: at; a server already there runs no subcycle (a mesh of servers steps every chip once).
    SYNC = 1 << 1


class LinkFlag(enum.IntFlag):
    """LINK's ``reserved`` byte, which this project reads as flags (the original sends 0)."""
    #: Extension: after each forwarded step the owner reads the peer's ``remote_in`` bus as an
    #: output and drives its own ``local_out`` bus as an input with it.
    DUPLEX = 1 << 0


#: LINK's ``dir`` codes: N, E, S, W as 0 to 3 (SPEC section 2).
DIRECTION_CODES = "NESW"


class BgcfError(Exception):
    """A frame or a payload that breaks the protocol: ``code`` (:class:`ErrorCode`) and the
    message for the ERROR frame."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message


class Frame(typing.NamedTuple):
    """One received frame. ``problem`` is None for a good frame, else the :class:`ErrorCode`
    (``BAD_CRC`` or ``BAD_VERSION``) of a frame that must be dropped."""
    type: int
    flags: int
    seq: int
    payload: bytes
    version: int = VERSION
    problem: typing.Optional[ErrorCode] = None


def _crc(header_fields, payload):
    return zlib.crc32(payload, zlib.crc32(header_fields)) & 0xFFFFFFFF


def pack_frame(msg_type, payload=b"", *, seq=0, flags=0, version=VERSION):
    """The bytes of one frame (header and payload).

    :raises ValueError: for a payload over :data:`MAX_PAYLOAD` bytes or a field out of range.
    """
    payload = bytes(payload)
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"a BGCF payload is at most {MAX_PAYLOAD} bytes, not {len(payload)}")
    for name, value, top in (("type", msg_type, 0xFF), ("flags", flags, 0xFF),
                             ("seq", seq, 0xFFFF), ("version", version, 0xFF)):
        if not 0 <= int(value) <= top:
            raise ValueError(f"BGCF {name} {value} is out of range 0..{top}")
    fields = struct.pack("<BBBBHH", version, int(msg_type), flags, 0, seq, len(payload))
    return _HEADER.pack(MAGIC, version, int(msg_type), flags, 0, seq, len(payload),
                        _crc(fields, payload)) + payload


class FrameReader:
    """Frames out of a byte stream: :meth:`feed` bytes as they arrive, iterate
    :meth:`frames`. Bytes before a magic are dropped (resynchronisation); a frame of another
    version or with a bad CRC comes out with its ``problem`` set (its bytes are dropped: a
    bad-CRC frame's magic is skipped so that a real frame inside it is still found). The buffer
    never holds more than one header and :data:`MAX_PAYLOAD` bytes, so memory stays bounded
    whatever arrives."""

    def __init__(self):
        self._buffer = bytearray()
        #: Bytes dropped while looking for a magic.
        self.dropped = 0

    def feed(self, data):
        self._buffer += data

    def frames(self):
        """Yield every whole frame buffered so far (:class:`Frame`)."""
        buffer = self._buffer
        while True:
            start = buffer.find(MAGIC)
            if start < 0:
                keep = len(MAGIC) - 1           # a magic may start in the last 3 bytes
                drop = max(len(buffer) - keep, 0)
                self.dropped += drop
                del buffer[:drop]
                return
            if start:
                self.dropped += start
                del buffer[:start]
            if len(buffer) < HEADER_SIZE:
                return
            _, version, kind, flags, _reserved, seq, length, crc = _HEADER.unpack_from(buffer)
            if version != VERSION:
                del buffer[:len(MAGIC)]
                yield Frame(kind, flags, seq, b"", version, ErrorCode.BAD_VERSION)
                continue
            if len(buffer) < HEADER_SIZE + length:
                return
            payload = bytes(buffer[HEADER_SIZE:HEADER_SIZE + length])
            if _crc(bytes(buffer[4:12]), payload) != crc:
                del buffer[:len(MAGIC)]
                yield Frame(kind, flags, seq, b"", version, ErrorCode.BAD_CRC)
                continue
            del buffer[:HEADER_SIZE + length]
            yield Frame(kind, flags, seq, payload, version)


# -- payloads ----------------------------------------------------------------------------------

class _Reader:
    """Strict reading of a payload: every read checks the bytes are there."""

    def __init__(self, payload, what):
        self.payload, self.offset, self.what = bytes(payload), 0, what

    def take(self, size):
        end = self.offset + size
        if end > len(self.payload):
            raise BgcfError(ErrorCode.BAD_PAYLOAD, f"{self.what} payload is truncated "
                                                   f"({len(self.payload)} bytes)")
        data, self.offset = self.payload[self.offset:end], end
        return data

    def unpack(self, fmt):
        fmt = struct.Struct("<" + fmt)
        return fmt.unpack(self.take(fmt.size))

    def text(self, size):
        try:
            return self.take(size).decode("utf-8")
        except UnicodeDecodeError:
            raise BgcfError(ErrorCode.BAD_PAYLOAD, f"{self.what}: a name is not UTF-8") from None

    def end(self, *, strict=True):
        if strict and self.offset != len(self.payload):
            raise BgcfError(ErrorCode.BAD_PAYLOAD, f"{self.what} payload has "
                                                   f"{len(self.payload) - self.offset} bytes "
                                                   "too many")


class Hello(typing.NamedTuple):
    width: int = 0
    height: int = 0
    proto_version: int = VERSION
    features: int = 0


def encode_hello(hello):
    return struct.pack("<HHHI", *hello)


def decode_hello(payload):
    """A HELLO payload (a client's may be empty or short: the original sends zeros)."""
    reader = _Reader(payload, "HELLO")
    hello = Hello(*reader.unpack("HHHI"))
    return hello


class LoadChunk(typing.NamedTuple):
    session: int
    total: int
    offset: int
    data: bytes


def encode_load_chunk(session, total, offset, data):
    return struct.pack("<HIIH", session, total, offset, len(data)) + bytes(data)


def decode_load_chunk(payload):
    reader = _Reader(payload, "LOAD_CHUNK")
    session, total, offset, length = reader.unpack("HIIH")
    data = reader.take(length)
    reader.end()
    return LoadChunk(session, total, offset, data)


def encode_step(subcycles, until=None):
    """STEP payload: ``subcycles``, and with the SYNC flag the counter ``until``."""
    payload = struct.pack("<I", subcycles)
    return payload if until is None else payload + struct.pack("<Q", until)


def decode_step(payload, flags=0):
    """``(subcycles, until)``: ``until`` is None unless ``flags`` has :attr:`StepFlag.SYNC`.
    An empty STEP payload means 1 subcycle, as the original reads it."""
    if not payload:
        return 1, None
    reader = _Reader(payload, "STEP")
    (subcycles,) = reader.unpack("I")
    until = reader.unpack("Q")[0] if flags & StepFlag.SYNC else None
    reader.end()
    return subcycles, until


def encode_values(values):
    """SET_INPUTS / OUTPUTS payload of ``values``, a mapping name -> u64 (or pairs)."""
    items = list(values.items() if hasattr(values, "items") else values)
    if len(items) > 0xFFFF:
        raise ValueError(f"at most 65,535 names per message, not {len(items)}")
    parts = [struct.pack("<H", len(items))]
    for name, value in items:
        raw = name.encode("utf-8")
        if not 0 < len(raw) <= 0xFF:
            raise ValueError(f"a BGCF name is 1 to 255 bytes of UTF-8, not {name!r}")
        if not 0 <= value < 1 << 64:
            raise ValueError(f"{name}={value}: a BGCF value is an unsigned 64-bit integer")
        parts += [bytes([len(raw)]), raw, struct.pack("<Q", value)]
    return b"".join(parts)


def decode_values(payload, what="SET_INPUTS"):
    """The list of ``(name, value)`` pairs of a SET_INPUTS / OUTPUTS payload, in order.

    :raises BgcfError: ``BAD_PAYLOAD`` for a truncated or overlong payload.
    """
    reader = _Reader(payload, what)
    (count,) = reader.unpack("H")
    items = []
    for _ in range(count):
        (length,) = reader.unpack("B")
        name = reader.text(length)
        (value,) = reader.unpack("Q")
        items.append((name, value))
    reader.end()
    return items


def encode_error(code, message):
    raw = message.encode("utf-8")[:255]
    while True:                                 # never cut a UTF-8 sequence in two
        try:
            raw.decode("utf-8")
            break
        except UnicodeDecodeError:
            raw = raw[:-1]
    return struct.pack("<HB", int(code), len(raw)) + raw


def decode_error(payload):
    """``(code, message)`` of an ERROR payload (an unknown code stays an int)."""
    reader = _Reader(payload, "ERROR")
    code, length = reader.unpack("HB")
    message = reader.take(length).decode("utf-8", errors="replace")
    known = code in ErrorCode._value2member_map_
    return (ErrorCode(code) if known else code), message


class Link(typing.NamedTuple):
    """LINK: the owner's bus ``local_out`` drives the peer's input ``remote_in`` across the
    seam on side ``direction`` (``"N"`` ... ``"W"``) of the owner; ``lanes`` 0 means as many as
    both seams have; ``flags`` are :class:`LinkFlag`."""
    direction: str
    local_out: str
    remote_in: str
    host: str
    port: int
    lanes: int = 0
    flags: int = 0


def encode_link(link):
    parts = [bytes([DIRECTION_CODES.index(link.direction), link.flags])]
    for text in (link.local_out, link.remote_in, link.host):
        raw = text.encode("utf-8")
        parts += [struct.pack("<H", len(raw)), raw]
    parts.append(struct.pack("<HH", link.port, link.lanes))
    return b"".join(parts)


def decode_link(payload):
    reader = _Reader(payload, "LINK")
    code, flags = reader.unpack("BB")
    if code >= len(DIRECTION_CODES):
        raise BgcfError(ErrorCode.BAD_PAYLOAD, f"LINK direction {code}: use 0 to 3 (N, E, S, W)")
    texts = []
    for _ in range(3):
        (length,) = reader.unpack("H")
        texts.append(reader.text(length))
    port, lanes = reader.unpack("HH")
    reader.end()
    return Link(DIRECTION_CODES[code], *texts, port, lanes, flags)


def encode_link_ack(lanes):
    return struct.pack("<H", lanes)


def decode_link_ack(payload):
    reader = _Reader(payload, "LINK_ACK")
    (lanes,) = reader.unpack("H")
    return lanes


def encode_readback(offset, max_len):
    return struct.pack("<IH", offset, max_len)


def decode_readback(payload):
    reader = _Reader(payload, "READBACK")
    offset, max_len = reader.unpack("IH")
    reader.end()
    return offset, max_len


def encode_config_chunk(total, offset, data):
    return struct.pack("<IIH", total, offset, len(data)) + bytes(data)


def decode_config_chunk(payload):
    """``(total, offset, data)`` of a CONFIG_CHUNK payload."""
    reader = _Reader(payload, "CONFIG_CHUNK")
    total, offset, length = reader.unpack("IIH")
    data = reader.take(length)
    reader.end()
    return total, offset, data


class Status(typing.NamedTuple):
    """STATUS: the subcycle counter (since the last reset), the phase (0 = A, 1 = B) of the
    next subcycle, whether a program runs, how many links the server owns."""
    subcycle: int
    phase: int
    loaded: bool
    links: int


def encode_status(status):
    return struct.pack("<QBBH", status.subcycle, status.phase, int(status.loaded), status.links)


def decode_status(payload):
    reader = _Reader(payload, "STATUS")
    subcycle, phase, loaded, links = reader.unpack("QBBH")
    return Status(subcycle, phase, bool(loaded), links)


class PortInfo(typing.NamedTuple):
    """One name of PORTS: ``direction`` ``"in"`` or ``"out"``, ``width`` in bits."""
    name: str
    direction: str
    width: int


def encode_ports(ports):
    parts = [struct.pack("<H", len(ports))]
    for port in ports:
        raw = port.name.encode("utf-8")
        parts += [bytes([port.direction == "out", len(raw)]), raw,
                  struct.pack("<H", port.width)]
    return b"".join(parts)


def decode_ports(payload):
    reader = _Reader(payload, "PORTS")
    (count,) = reader.unpack("H")
    ports = []
    for _ in range(count):
        direction, length = reader.unpack("BB")
        name = reader.text(length)
        (width,) = reader.unpack("H")
        ports.append(PortInfo(name, "out" if direction else "in", width))
    reader.end()
    return ports


class RowInfo(typing.NamedTuple):
    """One named output port in ROWS: its ``name`` (the first word's, for a port of more than
    64 bits), its bits' ``first_skew`` and ``last_skew`` (subcycles after the latency),
    whether it has a ``whole`` row (all its bits read for one row whose inputs were all
    applied after their last change), that ``row`` (the design cycle since reset; 0 if none)
    and, without one, the subcycles ``missing`` until the first such row is complete."""
    name: str
    first_skew: int
    last_skew: int
    whole: bool
    row: int
    missing: int


class Rows(typing.NamedTuple):
    """ROWS: the port map's ``period`` and ``latency`` (subcycles), the first input bit's
    skew ``input_skew``, the subcycle counter, the counter at which the inputs last changed
    (``changed``) and a :class:`RowInfo` per named output port.

    Payload: u32 period, u32 latency, i16 input_skew, u64 subcycle, u64 changed, u16 count,
    count x {u8 name_len, name, i16 first_skew, i16 last_skew, u8 whole, u64 row,
    u32 missing} (skews may be negative: docs/ports.md)."""
    period: int
    latency: int
    input_skew: int
    subcycle: int
    changed: int
    ports: list


def encode_rows(rows):
    parts = [struct.pack("<IIhQQH", rows.period, rows.latency, rows.input_skew, rows.subcycle,
                         rows.changed, len(rows.ports))]
    for port in rows.ports:
        raw = port.name.encode("utf-8")
        parts += [bytes([len(raw)]), raw,
                  struct.pack("<hhBQI", port.first_skew, port.last_skew, int(port.whole),
                              port.row, min(port.missing, 0xFFFFFFFF))]
    return b"".join(parts)


def decode_rows(payload):
    reader = _Reader(payload, "ROWS")
    period, latency, input_skew, subcycle, changed, count = reader.unpack("IIhQQH")
    ports = []
    for _ in range(count):
        (length,) = reader.unpack("B")
        name = reader.text(length)
        first, last, whole, row, missing = reader.unpack("hhBQI")
        ports.append(RowInfo(name, first, last, bool(whole), row, missing))
    reader.end()
    return Rows(period, latency, input_skew, subcycle, changed, ports)
