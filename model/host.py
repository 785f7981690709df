"""The host runtime: one API over every target that runs a BitGrid program.

* :class:`Target` is the API: :meth:`~Target.identify`, :meth:`~Target.load`,
  :meth:`~Target.step`, :meth:`~Target.set_edges`, :meth:`~Target.get_edges`,
  :meth:`~Target.readback`, :meth:`~Target.status`, :meth:`~Target.reset`.
* :class:`EmulatorTarget` runs the reference emulator directly (no protocol).
* :class:`ProtocolTarget` speaks the host protocol of ``docs/host-protocol.md`` over a byte
  :class:`Transport`: :class:`SerialTransport` (a real port, through pyserial) or
  :class:`LoopbackTransport` (a Python :class:`DeviceModel` of the gateware's protocol engine,
  with optional fault injection, for tests and for use without a board).
* :func:`run_vectors` runs a ``bitgrid-vectors-v1`` case on any target and returns the
  mismatches (the ``bitgrid run`` command line maps them to its exit status).

The protocol's constants (commands, status codes, the link CRC) live here and are shared with the
gateware (``bitgrid.hdl.host``).
"""

import abc
import enum
import struct
import time
import typing
import zlib

from amaranth.lib import crc
from cobs import cobs

from .config import Configuration, check_grid_size, frame_record
from .emulator import Edges, Emulator
from .vectors import compare_step

__all__ = ["LINK_CRC", "PROTOCOL_VERSION", "GATEWARE_VERSION", "Command", "Status", "Feature",
           "FRAMING_ERRORS", "link_crc", "encode_frame", "decode_frame", "edge_block_size",
           "pack_edges", "unpack_edges", "max_payload", "Identity", "DeviceStatus",
           "LinkError", "TargetError", "DeviceModel", "Transport", "LoopbackTransport",
           "SerialTransport", "Target", "EmulatorTarget", "ProtocolTarget", "open_target",
           "run_vectors"]

from .protocol.host import (  # noqa: F401  (re-exported: bitgrid.host is the runtime's API)
    FEATURES, FRAMING_ERRORS, FRAMING_RESPONSE, GATEWARE_VERSION, HOST_CRC, LOAD_REJECTS,
    MAX_BODY_LIMIT, PROTOCOL_VERSION, STORAGE_CODES, Command, DeviceStatus, Feature, Identity,
    LinkError, Status, TargetError, decode_frame, edge_block_size, encode_frame, host_crc,
    max_body, max_payload, pack_edges, unpack_edges)

#: Old names of the host protocol's CRC (now :data:`bitgrid.protocol.host.HOST_CRC`).
LINK_CRC = HOST_CRC
link_crc = host_crc
_IDENTIFY = __import__("struct").Struct("<2sBBBHHBBHH")
_STATUS = __import__("struct").Struct("<BIH6H")


def _identity(payload):
    return Identity.from_bytes(payload)


def _device_status(payload):
    return DeviceStatus.from_bytes(payload)


# --- The device model ----------------------------------------------------------------------------

class DeviceModel:
    """A Python model of the gateware's protocol engine (``bitgrid.hdl.host.HostController``)
    holding a reference emulator as its grid. :meth:`feed` takes the bytes the host sends and
    returns the bytes the device answers; the gateware tests compare the two byte for byte.

    :param width, height: grid size in cells.
    :param storage: storage name reported by IDENTIFY.
    :param init: power-up :class:`~bitgrid.Configuration` (default all zero).
    """

    COUNTERS = ("frames_ok", "framing_errors", "crc_errors", "command_errors", "load_rejects",
                "replays")

    def __init__(self, width, height, *, storage="ff", init=None):
        self.width, self.height = check_grid_size(width, height)
        self.storage = storage
        self.max_body = max_body(width, height)
        if self.max_body > MAX_BODY_LIMIT:
            raise ValueError(f"A {width} x {height} grid needs frames of {self.max_body} bytes; "
                             f"the protocol allows at most {MAX_BODY_LIMIT}")
        self.emulator = Emulator(init or Configuration(width, height))
        self.valid = True
        self.loading = False
        self.load_failed = False
        self.staged = []
        self.staged_crc = 0
        self.edges_in = Edges()
        self.counters = dict.fromkeys(self.COUNTERS, 0)
        self.last = None              # (command, sequence) of the last executed request
        self.last_status = Status.OK
        self._buffer = bytearray()

    @property
    def config(self):
        """The running configuration."""
        return self.emulator.config

    def _count(self, name):
        self.counters[name] = min(self.counters[name] + 1, 0xFFFF)

    def feed(self, data):
        """Process received bytes; return the bytes sent back (zero or more whole frames)."""
        out = bytearray()
        for byte in bytes(data):
            if byte:
                self._buffer.append(byte)
                continue
            encoded, self._buffer = bytes(self._buffer), bytearray()
            if encoded:                      # an empty frame is a resynchronising delimiter
                out += self._frame(encoded)
        return bytes(out)

    def _frame(self, encoded):
        status, body = decode_frame(encoded, self.max_body)
        if status != Status.OK:
            self._count("crc_errors" if status == Status.BAD_CRC else "framing_errors")
            return encode_frame(bytes([FRAMING_RESPONSE, 0, status]))
        self._count("frames_ok")
        command, sequence, payload = body[0], body[1], body[2:]
        replay = self.last == (command, sequence)
        if replay:
            self._count("replays")
            self._execute(command, payload, replay=True)
            status = self.last_status
        else:
            status = self._execute(command, payload, replay=False)
            self.last, self.last_status = (command, sequence), status
            if status != Status.OK:
                self._count("command_errors")
                if status in LOAD_REJECTS:
                    self._count("load_rejects")
        response = bytes([0x80 | command, sequence, status])
        if status == Status.OK:
            response += self._answer_data(command, payload)
        return encode_frame(response)

    def _outputs(self):
        return (self.emulator.subcycle % (1 << 32)).to_bytes(4, "little") + pack_edges(
            self.emulator.edge_outputs(), self.width, self.height)

    def _answer_data(self, command, payload):
        """The data of an OK answer, from the state after the request (as the gateware
        assembles it)."""
        w, h = self.width, self.height
        if command == Command.IDENTIFY:
            return _IDENTIFY.pack(b"BG", PROTOCOL_VERSION, *GATEWARE_VERSION, w, h,
                                  STORAGE_CODES.get(self.storage, 0), 32, int(FEATURES),
                                  max_payload(w, h))
        if command in (Command.STEP, Command.GET_EDGES):
            return self._outputs()
        if command == Command.READBACK:
            row, address = int.from_bytes(payload[:2], "little"), payload[2]
            return frame_record(row, address, self.config.frame(row, address), w)
        if command == Command.STATUS:
            flags = self.valid | self.loading << 1 | self.load_failed << 2
            return _STATUS.pack(flags, self.emulator.subcycle % (1 << 32), len(self.staged),
                                *(self.counters[k] for k in self.COUNTERS))
        return b""

    def _execute(self, command, payload, replay):
        """The status of one request, with its side effects unless ``replay``; the data of an OK
        answer comes from :meth:`_answer_data`."""
        w, h = self.width, self.height
        block = edge_block_size(w, h)
        if command == Command.IDENTIFY:
            if payload:
                return Status.BAD_LENGTH
            return Status.OK
        if command == Command.LOAD_BEGIN:
            if payload:
                return Status.BAD_LENGTH
            if not replay:
                self.loading, self.staged, self.staged_crc = True, [], 0
            return Status.OK
        if command == Command.LOAD_CHUNK:
            if len(payload) != 3 + w // 2:
                return Status.BAD_LENGTH
            if not self.loading:
                return Status.NOT_LOADING
            row, address = int.from_bytes(payload[:2], "little"), payload[2]
            if row >= h or address >= 16:
                return Status.BAD_ARGUMENT
            if row * 16 + address != len(self.staged):
                return Status.BAD_ORDER
            if not replay:
                self.staged.append(int.from_bytes(payload[3:], "little"))
                self.staged_crc = zlib.crc32(payload, self.staged_crc)
            return Status.OK
        if command == Command.LOAD_APPLY:
            if len(payload) != 4:
                return Status.BAD_LENGTH
            if not self.loading:
                return Status.NOT_LOADING
            if replay:
                return Status.OK
            self.loading = False
            if len(self.staged) != 16 * h:
                self.load_failed = True
                return Status.INCOMPLETE
            if int.from_bytes(payload, "little") != self.staged_crc:
                self.load_failed = True
                return Status.CONFIG_CRC
            config = Configuration(w, h)
            for index, frame in enumerate(self.staged):
                config.set_frame(index // 16, index % 16, frame)
            self.emulator.load(config)
            self.emulator.reset()
            self.valid, self.load_failed = True, False
            return Status.OK
        if command == Command.STEP:
            if len(payload) not in (2, 2 + block):
                return Status.BAD_LENGTH
            if not self.valid:
                return Status.NOT_VALID
            if not replay:
                if len(payload) > 2:
                    self.edges_in = unpack_edges(payload[2:], w, h)
                for _ in range(int.from_bytes(payload[:2], "little")):
                    self.emulator.step(self.edges_in)
            return Status.OK
        if command == Command.SET_EDGES:
            if len(payload) != block:
                return Status.BAD_LENGTH
            if not replay:
                self.edges_in = unpack_edges(payload, w, h)
            return Status.OK
        if command == Command.GET_EDGES:
            if payload:
                return Status.BAD_LENGTH
            return Status.OK
        if command == Command.READBACK:
            if len(payload) != 3:
                return Status.BAD_LENGTH
            row, address = int.from_bytes(payload[:2], "little"), payload[2]
            if row >= h or address >= 16:
                return Status.BAD_ARGUMENT
            return Status.OK
        if command == Command.STATUS:
            if payload:
                return Status.BAD_LENGTH
            return Status.OK
        if command == Command.RESET:
            if payload:
                return Status.BAD_LENGTH
            if not replay:
                self.emulator.reset()
            return Status.OK
        return Status.UNKNOWN_COMMAND


# --- Transports ----------------------------------------------------------------------------------

class Transport(abc.ABC):
    """A byte pipe to a device."""

    name = "transport"

    @abc.abstractmethod
    def write(self, data):
        """Send ``data`` (bytes)."""

    @abc.abstractmethod
    def read(self, timeout):
        """Bytes received, waiting at most ``timeout`` seconds for the first; ``b""`` if none."""

    def close(self):
        pass


class LoopbackTransport(Transport):
    """A transport to a :class:`DeviceModel` (or anything with ``feed(bytes) -> bytes``).

    :param device: the device end.
    :param to_device, to_host: optional fault injectors, ``f(bytes) -> bytes``, applied to each
        write and to each answer (flip bits, drop or add bytes).
    """

    name = "loopback"

    def __init__(self, device, *, to_device=None, to_host=None):
        self.device = device
        self._to_device = to_device or (lambda data: data)
        self._to_host = to_host or (lambda data: data)
        self._pending = bytearray()

    def write(self, data):
        self._pending += self._to_host(self.device.feed(self._to_device(bytes(data))))

    def read(self, timeout):
        data, self._pending = bytes(self._pending), bytearray()
        return data


class SerialTransport(Transport):
    """A serial port through pyserial (``serial:/dev/ttyUSB0``).

    :raises LinkError: if the port cannot be opened.
    """

    def __init__(self, port, baudrate=115200):
        import serial
        self.name = port
        try:
            self._port = serial.Serial(port, baudrate=baudrate, timeout=0)
        except (serial.SerialException, OSError, ValueError) as error:
            raise LinkError(f"cannot open serial port {port}: {error}") from None

    def write(self, data):
        self._port.write(data)
        self._port.flush()

    def read(self, timeout):
        self._port.timeout = timeout
        first = self._port.read(1)
        if not first:
            return b""
        self._port.timeout = 0
        return first + self._port.read(self._port.in_waiting or 0)

    def close(self):
        self._port.close()


# --- Targets -------------------------------------------------------------------------------------

class Target(abc.ABC):
    """One BitGrid that runs programs: the emulator, a simulated board or a real one.

    Stepping follows SPEC section 4 and ``bitgrid.Emulator``: :meth:`step` runs subcycles with
    the edge inputs last set and returns the edge outputs after them. :meth:`load` replaces the
    configuration and resets outputs and the subcycle counter.
    """

    width = height = None

    @abc.abstractmethod
    def identify(self):
        """:class:`Identity` of the target."""

    @abc.abstractmethod
    def load(self, config):
        """Load :class:`~bitgrid.Configuration` ``config`` and reset the grid.

        :raises ValueError: for a configuration of another size.
        :raises TargetError: if the target rejects it (its previous configuration keeps
            running).
        """

    @abc.abstractmethod
    def step(self, n=1, edges=None):
        """Set the edge inputs to ``edges`` (if given), run ``n`` subcycles, return the edge
        outputs as :class:`~bitgrid.Edges`."""

    @abc.abstractmethod
    def set_edges(self, edges):
        """Set the edge inputs used by the next subcycles."""

    @abc.abstractmethod
    def get_edges(self):
        """The edge outputs now, as :class:`~bitgrid.Edges`."""

    @abc.abstractmethod
    def readback(self):
        """The running configuration, read back from the target."""

    @abc.abstractmethod
    def status(self):
        """:class:`DeviceStatus` of the target."""

    @abc.abstractmethod
    def reset(self):
        """Clear every cell output and the subcycle counter (SPEC section 4)."""

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check_size(self, config):
        if not isinstance(config, Configuration):
            raise TypeError(f"load needs a Configuration, not {config!r}")
        if self.width is not None and (config.width, config.height) != (self.width, self.height):
            raise ValueError(f"size mismatch: the configuration is {config.width} x "
                             f"{config.height}, the target's grid is {self.width} x "
                             f"{self.height}")


class EmulatorTarget(Target):
    """The reference emulator as a target. Without a size, it takes the size of the first
    configuration loaded."""

    def __init__(self, width=None, height=None):
        self.width, self.height = (width, height)
        self._emulator = Emulator(Configuration(width, height)) if width else None
        self._edges = Edges()
        self._loaded = 0

    def _require(self):
        if self._emulator is None:
            raise TargetError(Status.NOT_VALID, "no configuration loaded yet")
        return self._emulator

    def identify(self):
        return Identity(PROTOCOL_VERSION, GATEWARE_VERSION, self.width or 0, self.height or 0,
                        "emulator", 0, Feature.READBACK, 0)

    def load(self, config):
        self._check_size(config)
        self.width, self.height = config.width, config.height
        self._emulator = Emulator(config)
        self._loaded += 1

    def step(self, n=1, edges=None):
        emulator = self._require()
        if edges is not None:
            self.set_edges(edges)
        for _ in range(n):
            emulator.step(self._edges)
        return emulator.edge_outputs()

    def set_edges(self, edges):
        self._edges = Edges.coerce(edges)

    def get_edges(self):
        return self._require().edge_outputs()

    def readback(self):
        return self._require().config.copy()

    def status(self):
        emulator = self._emulator
        return DeviceStatus(emulator is not None, False, False,
                            emulator.subcycle if emulator else 0, 0, self._loaded, 0, 0, 0, 0, 0)

    def reset(self):
        self._require().reset()


class ProtocolTarget(Target):
    """A device that speaks the host protocol over ``transport``.

    Requests are sent one at a time (stop and wait). A request is sent again, with the same
    sequence number, when no answer comes within ``timeout`` seconds or when the device answers
    that it could not read a frame; the device answers a repeated request again without
    executing it twice. Answers that fail their CRC or belong to an earlier request are dropped.

    :param clock: the clock of the timeouts, a function returning seconds (default
        :func:`time.monotonic`; a simulated link passes its simulation time, so that its
        timeouts do not depend on how fast the simulator runs).
    :raises LinkError: if the device does not answer IDENTIFY.
    """

    def __init__(self, transport, *, timeout=1.0, retries=4, clock=None):
        self.transport = transport
        self.timeout = timeout
        self._clock = clock or time.monotonic
        self.retries = retries
        self.retransmissions = 0
        self._sequence = 0
        self._received = bytearray()
        self.transport.write(b"\x00")    # end any partial frame left on the line
        self.identity = self.identify()
        self.width, self.height = self.identity.width, self.identity.height
        self._max_body = max_body(self.width, self.height)

    def close(self):
        self.transport.close()

    def _next_frame(self, deadline):
        """The next good frame body from the device, or None at the deadline."""
        while True:
            while b"\x00" in self._received:
                end = self._received.index(0)
                encoded, self._received = bytes(self._received[:end]), self._received[end + 1:]
                if not encoded:
                    continue
                status, body = decode_frame(encoded)
                if status == Status.OK and len(body) >= 3:
                    return body
            remaining = deadline - self._clock()
            if remaining <= 0:
                return None
            self._received += self.transport.read(min(remaining, 0.05))

    def request(self, command, payload=b""):
        """Send one request and return the answer's data.

        :raises TargetError: if the device answers with an error status.
        :raises LinkError: if no valid answer comes after the retries.
        """
        self._sequence = (self._sequence + 1) & 0xFF
        frame = encode_frame(bytes([command, self._sequence]) + bytes(payload))
        for attempt in range(self.retries + 1):
            if attempt:
                self.retransmissions += 1
            self.transport.write(frame)
            deadline = self._clock() + self.timeout
            while True:
                body = self._next_frame(deadline)
                if body is None:
                    break                      # timeout: send again
                if body[0] == FRAMING_RESPONSE:
                    break                      # the device could not read a frame: send again
                if body[0] == 0x80 | command and body[1] == self._sequence:
                    status = body[2]
                    if status != Status.OK:
                        known = status in Status._value2member_map_
                        status = Status(status) if known else status
                        name = status.name if known else f"status 0x{status:02x}"
                        raise TargetError(status, f"{Command(command).name} refused: {name}")
                    return body[3:]
                # an answer to an earlier request: drop it
        raise LinkError(f"no valid answer to {Command(command).name} from "
                        f"{self.transport.name} after {self.retries + 1} attempts")

    def identify(self):
        return _identity(self.request(Command.IDENTIFY))

    def load(self, config):
        self._check_size(config)
        self.request(Command.LOAD_BEGIN)
        for row, address, frame in config.frames():
            self.request(Command.LOAD_CHUNK, frame_record(row, address, frame, self.width))
        self.request(Command.LOAD_APPLY, config.frames_crc().to_bytes(4, "little"))

    def _edges_answer(self, data):
        return unpack_edges(data[4:], self.width, self.height)

    def step(self, n=1, edges=None):
        if not 0 <= n <= 0xFFFF:
            raise ValueError(f"STEP runs 0 to 65535 subcycles per request, not {n}")
        payload = n.to_bytes(2, "little")
        if edges is not None:
            payload += pack_edges(edges, self.width, self.height)
        return self._edges_answer(self.request(Command.STEP, payload))

    def set_edges(self, edges):
        self.request(Command.SET_EDGES, pack_edges(edges, self.width, self.height))

    def get_edges(self):
        return self._edges_answer(self.request(Command.GET_EDGES))

    def subcycle(self):
        return int.from_bytes(self.request(Command.GET_EDGES)[:4], "little")

    def readback(self):
        config = Configuration(self.width, self.height)
        for row in range(self.height):
            for address in range(16):
                data = self.request(Command.READBACK, row.to_bytes(2, "little") + bytes([address]))
                config.set_frame(row, address, int.from_bytes(data[3:], "little"))
        return config

    def status(self):
        return _device_status(self.request(Command.STATUS))

    def reset(self):
        self.request(Command.RESET)


def open_target(spec, *, width=None, height=None, baudrate=115200, timeout=1.0):
    """A :class:`Target` from a command-line spec: ``emu``, ``serial:PORT`` or ``loopback``
    (the Python device model of a ``width`` x ``height`` grid behind the protocol).

    :raises ValueError: for an unknown spec.
    :raises LinkError: if a serial device cannot be opened or does not answer.
    """
    if spec == "emu":
        return EmulatorTarget(width, height)
    if spec == "loopback":
        return ProtocolTarget(LoopbackTransport(DeviceModel(width, height)), timeout=timeout)
    if spec.startswith("serial:") and len(spec) > len("serial:"):
        transport = SerialTransport(spec[len("serial:"):], baudrate)
        try:
            return ProtocolTarget(transport, timeout=timeout, retries=1)
        except LinkError:
            transport.close()
            raise
    raise ValueError(f"unknown target {spec!r}: use emu, loopback or serial:PORT")


def run_vectors(target, case, config=None, steps=None):
    """Run a ``bitgrid-vectors-v1`` case on ``target``: load its configuration (``config``, or
    the case's bitstream), then one subcycle per step with the step's inputs, comparing the edge
    outputs with the case.

    :returns: the list of :class:`~bitgrid.vectors.Mismatch` (empty if every step matched).
    """
    if config is None:
        config = case.load_bitstream().config
    target.load(config)
    mismatches = []
    for t, (inputs, expected) in enumerate(case.steps[:steps]):
        actual = target.step(1, inputs)
        mismatches += compare_step(t, expected, actual, case.width, case.height)
    return mismatches
