"""The host protocol's wire format (``docs/host-protocol.md``), defined once for the host
runtime (:mod:`bitgrid.host`), its Python device model (:class:`bitgrid.host.DeviceModel`) and
the gateware protocol engine (:mod:`bitgrid.hdl.host`).

* Framing: :func:`encode_frame`, :func:`decode_frame`: COBS (the ``cobs`` package) with 0x00 as
  delimiter, around a body ``command | sequence | payload | CRC`` where the CRC is
  :data:`HOST_CRC` (CRC-16/GENIBUS), most significant byte first.
* Answer lengths: :func:`answer_length` says how long the answer to each command is, so a host
  can refuse one of the wrong length (two answers merged by a lost delimiter).
* Answers: ``0x80 | command`` (:func:`answer_code`), the sequence echoed, a :class:`Status`
  byte, and the command's answer data when the status is OK; a frame that cannot be read is
  answered with :data:`FRAMING_RESPONSE`, sequence 0 and one of :data:`FRAMING_ERRORS`.
* The command table :data:`COMMANDS`: for each :class:`Command` a :class:`CommandSpec` with its
  request fields (so its accepted payload lengths), its preconditions (:class:`Check`), its
  effect (:class:`Effect`) and its answer (:class:`Answer`). Lengths that depend on the grid
  size are :class:`Size` values, evaluated with :meth:`Size.length`.
* Payloads: the edge block (:func:`pack_edges`, :func:`unpack_edges`), the outputs
  (:func:`pack_outputs`), the :class:`Identity` and :class:`DeviceStatus` structures.

Rules every implementation follows (the table's fields document the rest):

1. A good frame whose (command, sequence) is the last executed request's is a *replay*: it is
   not checked or executed again; its answer has the status of the first execution and data
   from the current state (the replayed request did not change it).
2. Otherwise: an unknown command gives UNKNOWN_COMMAND; a payload length not in
   :meth:`CommandSpec.lengths` gives BAD_LENGTH; then the :attr:`CommandSpec.checks` are tested
   in order and the first that fails gives its :attr:`Check.status` (and, with
   :attr:`Check.ends_load`, ends the load and marks it failed); then the :attr:`CommandSpec.effect`
   runs and the answer is OK.
3. Every good frame counts in ``frames_ok``; every executed request answered with an error in
   ``command_errors``, and those in :data:`LOAD_REJECTS` also in ``load_rejects``. A device that
   drops a frame unread (one that arrived while it was busy with a request: a UART has no flow
   control) counts it in ``frames_dropped``.
"""

import enum
import struct
import typing

from amaranth.lib import crc
from cobs import cobs

from bitgrid.checks import check_int
from bitgrid.config import check_grid_size
from bitgrid.terms import DIRECTIONS, STORAGES, Edges, N, S

__all__ = [
    "PROTOCOL_VERSION", "GATEWARE_VERSION", "HOST_CRC", "host_crc", "MAX_BODY_LIMIT",
    "MIN_BODY", "MAX_STEPS", "COUNTER_WIDTH", "COUNTER_MAX", "Command", "Status", "Feature",
    "FEATURES", "STORAGE_CODES", "FRAMING_RESPONSE", "FRAMING_ERRORS", "LOAD_REJECTS",
    "answer_code", "encode_frame", "decode_frame", "answer_length",
    "Size", "EDGE_BLOCK", "FRAME", "Field", "Check", "Effect", "Answer", "CommandSpec",
    "COMMANDS", "command_spec",
    "frame_bytes", "edge_block_size", "pack_edges", "unpack_edges", "pack_outputs",
    "unpack_outputs", "max_payload", "max_body", "check_protocol_size",
    "Identity", "device_identity", "DeviceStatus", "STATUS_COUNTERS",
    "LinkError", "NoAnswerError", "TargetError", "check_steps",
]

#: The protocol version IDENTIFY reports. 2: the frame CRC is CRC-16/GENIBUS (was
#: CRC-16/XMODEM) and STATUS counts dropped frames (``frames_dropped``).
PROTOCOL_VERSION = 2
#: (major, minor) reported by IDENTIFY for this gateware and for the device model.
GATEWARE_VERSION = (0, 1)

#: The CRC of every host-protocol frame body: CRC-16/GENIBUS (also CRC-16/EPC, /DARC, /I-CODE:
#: polynomial 0x1021, initial value 0xFFFF, no reflection, final XOR 0xFFFF, check value
#: 0xD64E), one byte at a time, appended most significant byte first, so the CRC register after
#: a whole good body, trailer included, holds the residue 0x1D0F. Neither the initial value nor
#: the residue is 0, and that is what makes the usual damage of a lost or flipped delimiter
#: fail the check every time: two frames merged into one (``A 0x00 B``: B's check starts from
#: what A left, not from 0xFFFF) and zeros added before or after a frame (a delimiter read as
#: the COBS code 0x01). CRC-16/XMODEM (initial value and residue 0) passed all of them.
HOST_CRC = crc.catalog.CRC16_GENIBUS(data_width=8)

#: Largest frame body (command byte to CRC) any grid size may need: the COBS encoder of the
#: gateware only emits codes below 0xFF, so bodies stay under 254 bytes.
MAX_BODY_LIMIT = 253
#: Smallest readable body: command, sequence and the 2 CRC bytes.
MIN_BODY = 4
#: Most subcycles one STEP runs (its ``n`` field is 2 bytes).
MAX_STEPS = 0xFFFF
#: Width in bits of the subcycle counter reported in IDENTIFY and in the outputs.
COUNTER_WIDTH = 32
#: The STATUS error counters are 16 bits and saturate at this value.
COUNTER_MAX = 0xFFFF


class Command(enum.IntEnum):
    """Request command bytes. An answer carries :func:`answer_code` ``(command)``."""
    IDENTIFY = 0x01
    LOAD_BEGIN = 0x02
    LOAD_CHUNK = 0x03
    LOAD_APPLY = 0x04
    STEP = 0x05
    SET_EDGES = 0x06
    GET_EDGES = 0x07
    READBACK = 0x08
    STATUS = 0x09
    RESET = 0x0A


class Status(enum.IntEnum):
    """Answer status codes: 0 is OK, anything else an error."""
    OK = 0x00
    BAD_FRAME = 0x01        #: COBS violation: the frame ended inside a code block
    BAD_CRC = 0x02          #: the frame CRC does not match
    TOO_SHORT = 0x03        #: fewer than 4 decoded bytes (command, sequence, CRC)
    TOO_LONG = 0x04         #: more decoded bytes than the device's frame buffer holds
    UNKNOWN_COMMAND = 0x05
    BAD_LENGTH = 0x06       #: payload length wrong for the command
    BAD_ARGUMENT = 0x07     #: row or LUT address out of range
    NOT_LOADING = 0x08      #: LOAD_CHUNK or LOAD_APPLY without LOAD_BEGIN
    BAD_ORDER = 0x09        #: a configuration frame out of the canonical order, or one too many
    INCOMPLETE = 0x0A       #: LOAD_APPLY before all 16 * height frames were staged
    CONFIG_CRC = 0x0B       #: the staged frames' CRC differs from the one LOAD_APPLY gives
    APPLY_FAILED = 0x0C     #: the grid's own commit check failed (the grid is stopped)
    NOT_VALID = 0x0D        #: STEP while the grid holds no valid configuration


#: Command byte of the answer to a frame that could not be read (framing and CRC errors).
FRAMING_RESPONSE = 0xFF
#: Status codes answered with :data:`FRAMING_RESPONSE` and sequence 0, in the order they are
#: checked: COBS structure, length limit, minimum length, CRC.
FRAMING_ERRORS = (Status.BAD_FRAME, Status.TOO_LONG, Status.TOO_SHORT, Status.BAD_CRC)
#: Status codes that reject a load (also counted as command errors).
LOAD_REJECTS = (Status.INCOMPLETE, Status.CONFIG_CRC, Status.APPLY_FAILED)


class Feature(enum.IntFlag):
    """IDENTIFY feature bits."""
    STAGED_LOAD = 1 << 0    #: a load is staged and CRC-checked before it replaces the running one
    READBACK = 1 << 1       #: READBACK reads the running configuration
    REPLAY = 1 << 2         #: a repeated (command, sequence) is answered again, not re-executed
    MULTIPLEXED = 1 << 3    #: the grid is the multiplexed engine (SPEC section 7); else direct


#: The features of the gateware and of the device model.
FEATURES = Feature.STAGED_LOAD | Feature.READBACK | Feature.REPLAY
#: IDENTIFY storage byte of each storage kind (``bitgrid.terms.STORAGES``), and of the emulator.
STORAGE_CODES = {**{storage: code for code, storage in enumerate(STORAGES)}, "emulator": 0xFF}


def answer_code(command):
    """The command byte of the answer to ``command``: ``0x80 | command``."""
    return 0x80 | int(command)


# --- Framing ---------------------------------------------------------------------------------

def host_crc(data):
    """:data:`HOST_CRC` of ``data`` (bytes), an int of 16 bits."""
    return HOST_CRC.compute(data)


def encode_frame(body):
    """The wire form of a frame body without its CRC: COBS(body + CRC, MSB first) + 0x00."""
    body = bytes(body)
    return cobs.encode(body + host_crc(body).to_bytes(2, "big")) + b"\x00"


def decode_frame(encoded, max_body=None):
    """Decode one frame (its bytes between two delimiters, delimiters excluded).

    :param max_body: the device's frame buffer size in bytes (None: no limit).
    :returns: ``(status, body)``: :attr:`Status.OK` and the body without its CRC, or one of
        :data:`FRAMING_ERRORS` (the first that applies, in their order) and ``None``. Bytes
        with a 0x00 inside (two frames, not one) are BAD_FRAME.
    """
    try:
        decoded = cobs.decode(bytes(encoded))
    except cobs.DecodeError:
        return Status.BAD_FRAME, None
    if max_body is not None and len(decoded) > max_body:
        return Status.TOO_LONG, None
    if len(decoded) < MIN_BODY:
        return Status.TOO_SHORT, None
    if host_crc(decoded[:-2]) != int.from_bytes(decoded[-2:], "big"):
        return Status.BAD_CRC, None
    return Status.OK, decoded[:-2]


# --- Sizes and the command table -------------------------------------------------------------

def frame_bytes(width):
    """Bytes of one configuration frame: ``4 * width`` bits (one LUT address of every cell of
    a row, docs/design.md)."""
    return width // 2


def edge_block_size(width, height):
    """Bytes of an edge block: the N, E, S, W words, little-endian, of ``ceil(lanes / 8)`` bytes
    each (N and S have ``width`` lanes, E and W ``height``)."""
    return 2 * ((width + 7) // 8) + 2 * ((height + 7) // 8)


class Size(typing.NamedTuple):
    """A byte count that may depend on the grid size: ``fixed`` bytes, plus ``edge_block``
    edge blocks (:func:`edge_block_size`), plus ``frame`` configuration frames
    (:func:`frame_bytes`)."""
    fixed: int = 0
    edge_block: int = 0
    frame: int = 0

    def length(self, width=None, height=None):
        """The byte count for a ``width`` x ``height`` grid (a fixed count needs no size)."""
        return (self.fixed + (self.edge_block and self.edge_block * edge_block_size(width, height))
                + (self.frame and self.frame * frame_bytes(width)))

    def __str__(self):
        parts = [str(self.fixed)] if self.fixed or not (self.edge_block or self.frame) else []
        parts += ["edge block"] * self.edge_block + ["frame"] * self.frame
        return " + ".join(parts)


#: One edge block; one configuration frame.
EDGE_BLOCK = Size(edge_block=1)
FRAME = Size(frame=1)


class Field(typing.NamedTuple):
    """A field of a request payload. Fields follow each other in table order, integers are
    little-endian. An ``optional`` field (only at the end) may be left out entirely."""
    name: str
    size: Size
    optional: bool = False


class Check(enum.Enum):
    """A precondition of a command, tested after the payload length. When it does not hold,
    the request is refused with :attr:`status`; with :attr:`ends_load`, the load in progress
    also ends and is marked failed (STATUS flag ``load_failed``).

    Each check reads the state before the request and the request's fields:
    """
    #: A load is in progress (LOAD_BEGIN executed, no LOAD_APPLY since).
    LOADING = ("loading", Status.NOT_LOADING, False)
    #: Field ``row`` < height and field ``address`` < 16.
    ADDRESS = ("address", Status.BAD_ARGUMENT, False)
    #: ``16 * row + address`` is the number of frames staged so far (the canonical order).
    IN_ORDER = ("in order", Status.BAD_ORDER, False)
    #: All ``16 * height`` frames are staged.
    COMPLETE = ("complete", Status.INCOMPLETE, True)
    #: The CRC-32 (``bitgrid.config.FRAME_CRC``) of the staged records equals field ``crc``.
    CONFIG_CRC = ("config crc", Status.CONFIG_CRC, True)
    #: The grid holds a valid configuration.
    VALID = ("valid", Status.NOT_VALID, False)

    def __init__(self, description, status, ends_load):
        self.description = description
        self.status = status
        self.ends_load = ends_load


class Effect(enum.Enum):
    """What an accepted (OK) request does, before its answer is assembled."""
    NONE = "none"                #: nothing
    BEGIN_LOAD = "begin load"    #: start a load: no frame staged, the staging CRC restarts
    STAGE = "stage"              #: stage field ``frame``; the whole record goes through the CRC
    #: end the load, replace the running configuration with the staged one, reset the grid
    #: (cell outputs and subcycle counter); the gateware answers APPLY_FAILED if the grid's own
    #: commit check fails
    APPLY = "apply"
    #: set the edge inputs from field ``edges`` if present, then run ``n`` subcycles
    STEP = "step"
    SET_EDGES = "set edges"      #: set the edge inputs from field ``edges``
    RESET = "reset"              #: clear every cell output and the subcycle counter


class Answer(enum.Enum):
    """The data of an OK answer (after the status byte), assembled from the state after the
    request. The value is its :class:`Size`."""
    EMPTY = Size(0)                      #: no data
    IDENTITY = Size(15)                  #: :meth:`Identity.to_bytes`
    OUTPUTS = Size(4, edge_block=1)      #: :func:`pack_outputs`: subcycle and edge outputs
    STATUS = Size(21)                    #: :meth:`DeviceStatus.to_bytes`
    #: the frame record at the request's ``row``, ``address`` of the running configuration
    #: (``bitgrid.config.frame_record``)
    RECORD = Size(3, frame=1)

    @property
    def size(self):
        return self.value


class CommandSpec(typing.NamedTuple):
    """One row of the command table.

    :attr command: the :class:`Command`.
    :attr request: the payload's :class:`Field` s in order.
    :attr checks: the :class:`Check` s, in the order they are tested (after the length).
    :attr effect: the :class:`Effect` of an accepted request.
    :attr answer: the :class:`Answer` data of an OK answer.
    :attr summary: one line for documentation.
    """
    command: Command
    request: tuple
    checks: tuple
    effect: Effect
    answer: Answer
    summary: str

    def lengths(self, width, height):
        """The payload lengths accepted, ascending: the required fields, and the required plus
        the optional ones (if any)."""
        required = sum(f.size.length(width, height) for f in self.request if not f.optional)
        total = sum(f.size.length(width, height) for f in self.request)
        return (required,) if total == required else (required, total)

    def layout(self, width, height):
        """``{field name: (offset, length)}`` of every request field, in bytes."""
        layout, offset = {}, 0
        for f in self.request:
            size = f.size.length(width, height)
            layout[f.name] = (offset, size)
            offset += size
        return layout

    def fields(self, payload, width, height):
        """``{field name: bytes}`` of the fields present in ``payload`` (whose length must be
        one of :meth:`lengths`)."""
        return {name: bytes(payload[offset:offset + size])
                for name, (offset, size) in self.layout(width, height).items()
                if offset + size <= len(payload)}

    def answer_length(self, width, height):
        """Bytes of data in an OK answer (after the status byte)."""
        return self.answer.size.length(width, height)


def _spec(command, request, checks, effect, answer, summary):
    return CommandSpec(command, tuple(Field(*f) for f in request), tuple(checks), effect,
                       answer, summary)


#: The command table, ``{Command: CommandSpec}`` in code order.
COMMANDS = {spec.command: spec for spec in (
    _spec(Command.IDENTIFY, (), (), Effect.NONE, Answer.IDENTITY,
          "who the device is: protocol and gateware version, grid size, features"),
    _spec(Command.LOAD_BEGIN, (), (), Effect.BEGIN_LOAD, Answer.EMPTY,
          "start a load (the running configuration keeps running)"),
    _spec(Command.LOAD_CHUNK, (("row", Size(2)), ("address", Size(1)), ("frame", FRAME)),
          (Check.LOADING, Check.ADDRESS, Check.IN_ORDER), Effect.STAGE, Answer.EMPTY,
          "stage the next configuration frame record"),
    _spec(Command.LOAD_APPLY, (("crc", Size(4)),),
          (Check.LOADING, Check.COMPLETE, Check.CONFIG_CRC), Effect.APPLY, Answer.EMPTY,
          "end the load: run the staged configuration if complete and its CRC-32 matches"),
    _spec(Command.STEP, (("n", Size(2)), ("edges", EDGE_BLOCK, True)), (Check.VALID,),
          Effect.STEP, Answer.OUTPUTS,
          "optionally set the edge inputs, run n subcycles, answer the outputs"),
    _spec(Command.SET_EDGES, (("edges", EDGE_BLOCK),), (), Effect.SET_EDGES, Answer.EMPTY,
          "set the edge inputs"),
    _spec(Command.GET_EDGES, (), (), Effect.NONE, Answer.OUTPUTS, "answer the outputs"),
    _spec(Command.READBACK, (("row", Size(2)), ("address", Size(1))), (Check.ADDRESS,),
          Effect.NONE, Answer.RECORD, "read one frame record of the running configuration"),
    _spec(Command.STATUS, (), (), Effect.NONE, Answer.STATUS, "flags and counters"),
    _spec(Command.RESET, (), (), Effect.RESET, Answer.EMPTY,
          "clear the cell outputs and the subcycle counter"),
)}


def command_spec(code):
    """The :class:`CommandSpec` of command byte ``code``, or None for an unknown command."""
    return COMMANDS.get(code)


def answer_length(command, status, width=None, height=None):
    """Bytes of an answer body to ``command`` (a :class:`Command`) with ``status``, without the
    CRC: command, sequence and status, and the command's data if ``status`` is OK. A grid size
    is needed only for answers whose data depends on it (OUTPUTS, RECORD).

    :raises KeyError: for a command not in :data:`COMMANDS`.
    """
    data = COMMANDS[command].answer.size.length(width, height) if status == Status.OK else 0
    return 3 + data


def max_payload(width, height):
    """Largest request or answer payload (between sequence byte and CRC; an answer's payload is
    its status byte and data) of any command, for a ``width`` x ``height`` grid."""
    return max(max(max(spec.lengths(width, height)), 1 + spec.answer_length(width, height))
               for spec in COMMANDS.values())


def max_body(width, height):
    """Largest frame body, command byte to CRC, of any request or answer."""
    return 2 + max_payload(width, height) + 2


def check_protocol_size(width, height):
    """``(width, height)`` if the grid size is valid (``bitgrid.config.check_grid_size``) and
    its frames fit the protocol (:func:`max_body` at most :data:`MAX_BODY_LIMIT`).

    :raises ValueError: otherwise.
    """
    width, height = check_grid_size(width, height)
    if max_body(width, height) > MAX_BODY_LIMIT:
        raise ValueError(f"A {width} x {height} grid needs frames of {max_body(width, height)} "
                         f"bytes; the protocol allows at most {MAX_BODY_LIMIT}")
    return width, height


# --- Payloads --------------------------------------------------------------------------------

def _bus_lanes(width, height):
    """(side, lanes, bytes) of the four edge buses in block order N, E, S, W."""
    return [(side, width if side in (N, S) else height,
             ((width if side in (N, S) else height) + 7) // 8) for side in DIRECTIONS]


def pack_edges(edges, width, height):
    """The edge block of :class:`~bitgrid.Edges` ``edges``."""
    edges = Edges.coerce(edges)
    return b"".join(edges[side].to_bytes(size, "little")
                    for side, _, size in _bus_lanes(width, height))


def unpack_edges(block, width, height):
    """:class:`~bitgrid.Edges` from an edge block; bits beyond a bus's lane count are dropped."""
    words, offset = [], 0
    for _, lanes, size in _bus_lanes(width, height):
        words.append(int.from_bytes(block[offset:offset + size], "little") & ((1 << lanes) - 1))
        offset += size
    return Edges(*words)


def pack_outputs(subcycle, edges, width, height):
    """:attr:`Answer.OUTPUTS` data: ``subcycle`` modulo 2**32 (4 bytes), then the edge block of
    the edge outputs ``edges``."""
    return (subcycle % (1 << COUNTER_WIDTH)).to_bytes(4, "little") + pack_edges(edges, width,
                                                                                height)


def unpack_outputs(data, width, height):
    """``(subcycle, Edges)`` from :attr:`Answer.OUTPUTS` data."""
    return int.from_bytes(data[:4], "little"), unpack_edges(data[4:], width, height)


_IDENTIFY = struct.Struct("<2sBBBHHBBHH")
_STATUS = struct.Struct("<BIH7H")
assert _IDENTIFY.size == Answer.IDENTITY.size.fixed and _STATUS.size == Answer.STATUS.size.fixed


class LinkError(OSError):
    """The link to a device failed: no device, no answer, or answers that make no sense."""


class NoAnswerError(LinkError):
    """A request got no valid answer however often it was sent: no device on the line, a device
    that does not speak this protocol version, or a line too noisy for the retries.

    :attr command: the :class:`Command` (or command byte) sent.
    :attr attempts: how many times it was sent.
    :attr timeouts: attempts that saw no answer at all in time.
    :attr damaged: frames received meanwhile that could not be read (bad COBS or CRC, a wrong
        length) or that were the device's own framing answers.
    """

    def __init__(self, message, *, command=None, attempts=0, timeouts=0, damaged=0):
        self.command, self.attempts = command, attempts
        self.timeouts, self.damaged = timeouts, damaged
        super().__init__(message)


class TargetError(RuntimeError):
    """The target refused a request; :attr:`status` is the :class:`Status` it answered."""

    def __init__(self, status, message):
        self.status = status
        super().__init__(message)


class Identity(typing.NamedTuple):
    """What IDENTIFY reports: ``"BG"``, then these fields (version as two bytes, width and
    height 2 bytes, storage as its :data:`STORAGE_CODES` byte, features and max_payload 2
    bytes)."""
    protocol: int
    version: tuple
    width: int
    height: int
    storage: str
    counter_width: int
    features: Feature
    max_payload: int

    @property
    def engine(self):
        """``"multiplexed"`` if :attr:`Feature.MULTIPLEXED` is set, else ``"direct"`` (what
        gateware from before the flag reports)."""
        return "multiplexed" if Feature.MULTIPLEXED in self.features else "direct"

    def to_bytes(self):
        """The :attr:`Answer.IDENTITY` data (15 bytes)."""
        return _IDENTIFY.pack(b"BG", self.protocol, *self.version, self.width, self.height,
                              STORAGE_CODES.get(self.storage, 0), self.counter_width,
                              int(self.features), self.max_payload)

    @classmethod
    def from_bytes(cls, data):
        """Parse :attr:`Answer.IDENTITY` data.

        :raises LinkError: if the magic is not ``b"BG"`` (not a BitGrid) or the length is wrong.
        """
        if len(data) != _IDENTIFY.size:
            raise LinkError(f"IDENTIFY answered {len(data)} bytes of data, not "
                            f"{_IDENTIFY.size}: not a BitGrid")
        magic, proto, major, minor, width, height, storage, cw, features, maxp = \
            _IDENTIFY.unpack(data)
        if magic != b"BG":
            raise LinkError(f"IDENTIFY answered with magic {magic!r}, not b'BG': not a BitGrid")
        names = {v: k for k, v in STORAGE_CODES.items()}
        return cls(proto, (major, minor), width, height, names.get(storage, str(storage)), cw,
                   Feature(features), maxp)


def device_identity(width, height, storage, engine="direct", *, staged=True):
    """The :class:`Identity` of the gateware (and of the device model) for a ``width`` x
    ``height`` grid of ``storage`` and ``engine`` (``"multiplexed"`` sets
    :attr:`Feature.MULTIPLEXED`); ``staged=False`` (loads written straight into the grid)
    clears :attr:`Feature.STAGED_LOAD`."""
    features = FEATURES | (Feature.MULTIPLEXED if engine == "multiplexed" else 0)
    if not staged:
        features &= ~Feature.STAGED_LOAD
    return Identity(PROTOCOL_VERSION, GATEWARE_VERSION, width, height, storage, COUNTER_WIDTH,
                    features, max_payload(width, height))


class DeviceStatus(typing.NamedTuple):
    """What STATUS reports: a flags byte (bit 0 valid, 1 loading, 2 load_failed), subcycle
    (4 bytes), staged (2 bytes), then the :data:`STATUS_COUNTERS` (2 bytes each, saturating at
    :data:`COUNTER_MAX`)."""
    valid: bool             #: the grid holds a checked configuration and steps
    loading: bool           #: a load is in progress (LOAD_BEGIN seen, no LOAD_APPLY yet)
    load_failed: bool       #: the last LOAD_APPLY was rejected
    subcycle: int
    staged: int             #: configuration frames staged so far
    frames_ok: int          #: frames with a good CRC
    framing_errors: int     #: BAD_FRAME, TOO_SHORT, TOO_LONG
    crc_errors: int         #: BAD_CRC
    command_errors: int     #: good frames answered with an error
    load_rejects: int       #: INCOMPLETE, CONFIG_CRC, APPLY_FAILED
    replays: int            #: repeated requests answered without executing them again
    #: frames dropped unread because they arrived while the device was busy with a request
    frames_dropped: int = 0

    def to_bytes(self):
        """The :attr:`Answer.STATUS` data (21 bytes); the subcycle is taken modulo 2**32."""
        flags = int(self.valid) | int(self.loading) << 1 | int(self.load_failed) << 2
        return _STATUS.pack(flags, self.subcycle % (1 << COUNTER_WIDTH), self.staged,
                            *self[5:])

    @classmethod
    def from_bytes(cls, data):
        """Parse :attr:`Answer.STATUS` data.

        :raises LinkError: for data of the wrong length.
        """
        if len(data) != _STATUS.size:
            raise LinkError(f"STATUS answered {len(data)} bytes of data, not {_STATUS.size}")
        flags, subcycle, staged, *counters = _STATUS.unpack(data)
        return cls(bool(flags & 1), bool(flags & 2), bool(flags & 4), subcycle, staged,
                   *counters)


#: The STATUS counters, in wire order.
STATUS_COUNTERS = DeviceStatus._fields[5:]


def check_steps(n):
    """``n`` if it is a subcycle count one STEP can carry (0 to :data:`MAX_STEPS`).

    :raises ValueError: otherwise.
    """
    return check_int(n, "STEP's subcycle count", minimum=0, maximum=MAX_STEPS)
