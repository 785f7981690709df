"""Targets: one API over everything that runs a BitGrid program.

* :class:`Target` is the API: :meth:`~Target.identify`, :meth:`~Target.load`,
  :meth:`~Target.step`, :meth:`~Target.set_edges`, :meth:`~Target.get_edges`,
  :meth:`~Target.readback`, :meth:`~Target.status`, :meth:`~Target.reset`.
* :class:`EmulatorTarget` runs the reference emulator directly (no protocol).
* :class:`ProtocolTarget` speaks the host protocol (:mod:`bitgrid.protocol.host`) over a byte
  :class:`~bitgrid.host.Transport`: a real board, the Python device model, or the simulated
  board.
* :func:`open_target` opens one from a command-line spec (``emu``, ``loopback``, ``sim``,
  ``serial:PORT``); :func:`run_vectors` runs a ``bitgrid-vectors-v1`` case on any target and
  returns the mismatches.
"""

import abc

from bitgrid.checks import check_int, check_real
from bitgrid.config import Configuration, frame_record
from bitgrid.emulator import Emulator
from bitgrid.protocol.host import (
    FRAMING_RESPONSE, GATEWARE_VERSION, MAX_BODY_LIMIT, PROTOCOL_VERSION, Command, DeviceStatus,
    Feature, Identity, LinkError, NoAnswerError, Status, TargetError, answer_code,
    check_protocol_size, check_steps, command_spec, decode_frame, encode_frame, pack_edges,
    unpack_outputs)
from bitgrid.terms import Edges, check_simulator
from bitgrid.vectors import compare_step

from .device import DeviceModel
from .transports import LoopbackTransport, SerialTransport

__all__ = ["Target", "EmulatorTarget", "ProtocolTarget", "TARGETS", "DEFAULT_TIMEOUT",
           "DEFAULT_RETRIES", "open_target", "run_vectors"]

#: How many times :class:`ProtocolTarget` sends a request again by default. On a line where one
#: byte in 100 is flipped, lost or added (both ways), a request and its answer are damaged about
#: one time in five; 8 retries make giving up on a request rarer than one in a million.
DEFAULT_RETRIES = 8

#: What :meth:`ProtocolTarget._next_frame` returns for a frame it cannot read.
_DAMAGED = object()


class Target(abc.ABC):
    """One BitGrid that runs programs: the emulator, a simulated board or a real one.

    Stepping follows SPEC section 4 and ``bitgrid.Emulator``: :meth:`step` runs subcycles with
    the edge inputs last set and returns the edge outputs after them. :meth:`load` replaces the
    configuration and resets outputs and the subcycle counter.
    """

    width = height = None
    #: What messages call the target (``emu``, ``loopback``, a serial port, ``sim (icarus)``).
    name = "target"

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
    """An emulator as a target: the reference :class:`~bitgrid.emulator.Emulator` (``emu``),
    or any class with its API given as ``engine`` (a function of a
    :class:`~bitgrid.config.Configuration`): :class:`~bitgrid.fastemu.FastEmulator`
    (``fast``), a :class:`~bitgrid.mesh.MeshEmulator` of a shape (``mesh:COLSxROWS``). Without
    a size, it takes the size of the first configuration loaded."""

    def __init__(self, width=None, height=None, *, engine=Emulator, name="emu"):
        self.width, self.height = (width, height)
        self.name = name
        self._engine = engine
        self._emulator = engine(Configuration(width, height)) if width else None
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
        emulator = self._engine(config)
        self.width, self.height = config.width, config.height
        self._emulator = emulator
        self._loaded += 1

    def step(self, n=1, edges=None):
        emulator = self._require()
        if edges is not None:
            self.set_edges(edges)
        held = getattr(emulator, "run_held", None)
        if held is not None:
            return held(n, self._edges)
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

    Requests are sent one at a time (stop and wait), each after a delimiter (an empty frame,
    ignored by the device) that ends any partial frame left on the line. A request is sent
    again, with the same sequence number, when no answer comes within ``timeout`` seconds, when
    the device answers that it could not read a frame, or when a frame arrives that cannot be
    read (bad COBS or CRC) or is an answer to this request of the wrong length for its command
    and status (:func:`~bitgrid.protocol.host.answer_length`: two answers merged by a lost
    delimiter), once the frames received already hold no good answer; the device answers a
    repeated request again without executing it twice. Answers to earlier requests are
    dropped. The loopback's virtual clock and the simulated board's time make timeouts cost no
    real time there.

    :param timeout: seconds to wait for each answer (in the transport's clock).
    :param retries: how many times a request is sent again (default :data:`DEFAULT_RETRIES`).
    :param clock: the clock of the timeouts, a function returning seconds (default the
        transport's :meth:`~bitgrid.host.Transport.clock`: wall-clock time, or the simulation
        time of a simulated board, so that its timeouts do not depend on how fast the simulator
        runs).
    :raises NoAnswerError: if the device does not answer IDENTIFY.
    :raises LinkError: if it answers as no BitGrid of this protocol version would.
    """

    def __init__(self, transport, *, timeout=1.0, retries=DEFAULT_RETRIES, clock=None):
        self.transport = transport
        self.name = transport.name
        self.timeout = check_real(timeout, "timeout", minimum=0)
        self._clock = clock or transport.clock
        self.retries = check_int(retries, "retries", minimum=0)
        self.retransmissions = 0
        self._sequence = 0
        self._received = bytearray()
        self.transport.write(b"\x00")    # end any partial frame left on the line
        self.identity = self.identify()
        self.width, self.height = self.identity.width, self.identity.height

    def close(self):
        self.transport.close()

    def _next_frame(self, deadline):
        """The next frame body from the device (CRC checked and removed), :data:`_DAMAGED` for
        a frame that cannot be read, or None at the ``deadline`` (None: when no whole frame
        has been received yet)."""
        while True:
            while b"\x00" in self._received:
                end = self._received.index(0)
                encoded, self._received = bytes(self._received[:end]), self._received[end + 1:]
                if not encoded:
                    continue
                body = _readable(encoded)
                return _DAMAGED if body is None else body
            if deadline is None:
                return None
            remaining = deadline - self._clock()
            if remaining <= 0:
                return None
            self._received += self.transport.read(min(remaining, 0.05))

    def _answer_length(self, command, status):
        """Bytes of the answer body to ``command`` with ``status`` (an unknown command has
        no data)."""
        spec = command_spec(command)
        if spec is None or status != Status.OK:
            return 3
        return 3 + spec.answer_length(self.width, self.height)

    def request(self, command, payload=b""):
        """Send one request and return the answer's data (of the command's answer length).

        :raises TargetError: if the device answers with an error status.
        :raises NoAnswerError: if no valid answer comes after the retries.
        """
        self._sequence = (self._sequence + 1) & 0xFF
        # A delimiter first ends whatever partial frame noise left on the line (a lost
        # delimiter, bytes added after one), so that it does not swallow this request.
        frame = b"\x00" + encode_frame(bytes([command, self._sequence]) + bytes(payload))
        timeouts = damaged = 0
        for attempt in range(self.retries + 1):
            if attempt:
                self.retransmissions += 1
            self.transport.write(frame)
            deadline = self._clock() + self.timeout
            while True:
                body = self._next_frame(deadline)
                if body is None:
                    if deadline is not None:
                        timeouts += 1
                    break                      # timeout, or nothing good came: send again
                ours = body is not _DAMAGED and body[0] == answer_code(command) \
                    and body[1] == self._sequence
                if body is _DAMAGED or body[0] == FRAMING_RESPONSE or \
                        ours and len(body) != self._answer_length(command, status=body[2]):
                    # A frame damaged on the way, the device's word that it could not read
                    # one, or an answer merged with another: look through the frames received
                    # already (stale ones, or the answer itself), then send again.
                    damaged += 1
                    deadline = None
                    continue
                if ours:
                    status = body[2]
                    if status != Status.OK:
                        known = status in Status._value2member_map_
                        status = Status(status) if known else status
                        name = status.name if known else f"status 0x{status:02x}"
                        raise TargetError(status, f"{_name(command)} refused: {name}")
                    return body[3:]
                # an answer to an earlier request: drop it
        attempts = self.retries + 1
        if damaged:
            hint = ("the answers could not be read: check the baud rate and the line, and that "
                    f"the board runs an FPGA image of host protocol version {PROTOCOL_VERSION}")
        else:
            hint = "nothing answered: check the port, the board and its FPGA image"
        raise NoAnswerError(f"no valid answer to {_name(command)} from {self.transport.name} "
                            f"after {attempts} attempts ({timeouts} timed out, {damaged} "
                            f"damaged): {hint}", command=command, attempts=attempts,
                            timeouts=timeouts, damaged=damaged)

    def identify(self):
        """The device's :class:`Identity`.

        :raises LinkError: if the device is not a BitGrid of this protocol version, or reports
            a grid size the protocol cannot carry.
        """
        identity = Identity.from_bytes(self.request(Command.IDENTIFY))
        if identity.protocol != PROTOCOL_VERSION:
            raise LinkError(f"{self.transport.name} speaks host protocol version "
                            f"{identity.protocol}, this host version {PROTOCOL_VERSION}: "
                            f"program the board with this version's FPGA image")
        try:
            check_protocol_size(identity.width, identity.height)
        except ValueError as error:
            raise LinkError(f"{self.transport.name} reports a grid the protocol cannot carry: "
                            f"{error}") from None
        return identity

    def load(self, config):
        self._check_size(config)
        self.request(Command.LOAD_BEGIN)
        for row, address, frame in config.frames():
            self.request(Command.LOAD_CHUNK, frame_record(row, address, frame, self.width))
        self.request(Command.LOAD_APPLY, config.frames_crc().to_bytes(4, "little"))

    def _edges_answer(self, data):
        return unpack_outputs(data, self.width, self.height)[1]

    def step(self, n=1, edges=None):
        payload = check_steps(n).to_bytes(2, "little")
        if edges is not None:
            payload += pack_edges(edges, self.width, self.height)
        return self._edges_answer(self.request(Command.STEP, payload))

    def set_edges(self, edges):
        self.request(Command.SET_EDGES, pack_edges(edges, self.width, self.height))

    def get_edges(self):
        return self._edges_answer(self.request(Command.GET_EDGES))

    def subcycle(self):
        return unpack_outputs(self.request(Command.GET_EDGES), self.width, self.height)[0]

    def readback(self):
        config = Configuration(self.width, self.height)
        for row in range(self.height):
            for address in range(16):
                where = row.to_bytes(2, "little") + bytes([address])
                data = self.request(Command.READBACK, where)
                if data[:3] != where:
                    raise LinkError(f"READBACK of row {row}, address {address} answered the "
                                    f"record of row {int.from_bytes(data[:2], 'little')}, "
                                    f"address {data[2]}")
                config.set_frame(row, address, int.from_bytes(data[3:], "little"))
        return config

    def status(self):
        return DeviceStatus.from_bytes(self.request(Command.STATUS))

    def reset(self):
        self.request(Command.RESET)


def _readable(encoded):
    """The body of the frame ``encoded`` (delimiters excluded), or else of the frame it ends
    with, or None. A device frame whose delimiter was lost or damaged runs into the next one;
    the next one is still whole at the end, where it is found: the COBS code chain from its
    first byte lands exactly on the end, and it passes the CRC. Only the last
    ``MAX_BODY_LIMIT + 1`` bytes can hold one (a COBS-encoded body is a byte longer)."""
    for start in range(max(len(encoded) - MAX_BODY_LIMIT - 1, 0), len(encoded) - 3):
        position = start
        while position < len(encoded):
            position += encoded[position]
        if position != len(encoded):
            continue
        status, body = decode_frame(encoded[start:])
        if status == Status.OK and len(body) >= 3:
            return body
    return None


def _name(command):
    """The name of a command byte for messages."""
    return Command(command).name if command in Command._value2member_map_ else \
        f"command 0x{command:02x}"


#: The target specs :func:`open_target` takes (``serial:PORT`` names a port).
TARGETS = ("emu", "fast", "mesh:COLSxROWS", "loopback", "sim", "serial:PORT", "bgcf:HOST:PORT")

#: Seconds :class:`ProtocolTarget` waits for an answer, by target kind, when no timeout is
#: given: wall-clock for a serial port and the Python model, simulated for the simulated board
#: (:data:`bitgrid.sim.host_link.DEFAULT_TIMEOUT_S`).
DEFAULT_TIMEOUT = 1.0


def open_target(spec, *, width=None, height=None, baudrate=115200, timeout=None,
                simulator="icarus", storage="ff", quiet=False, engine="direct",
                evaluators=None):
    """A :class:`Target` from a command-line spec (one of :data:`TARGETS`):

    * ``emu``: the reference emulator (:class:`EmulatorTarget`; ``width``, ``height`` optional);
    * ``fast``: the bit-parallel emulator (:class:`~bitgrid.fastemu.FastEmulator`);
    * ``mesh:COLSxROWS``: a mesh of emulated chips exchanging their seams every subcycle
      (:class:`~bitgrid.mesh.MeshEmulator`; the grid must split into the mesh's tiles);
    * ``loopback``: the Python device model of a ``width`` x ``height`` grid behind the protocol;
    * ``sim``: the host controller gateware of a ``width`` x ``height`` grid of ``storage``,
      simulated by ``simulator`` (``icarus`` or ``verilator``) in cocotb, over a simulated UART,
      its grid of ``engine`` (``"direct"`` or ``"multiplexed"`` with ``evaluators``)
      (:func:`bitgrid.sim.host_link.open_sim_target`; builds or finds the simulation model
      first; ``quiet`` silences the build's progress messages; ``timeout`` counts simulated
      seconds);
    * ``serial:PORT``: a board on a serial port at ``baudrate``;
    * ``bgcf:HOST:PORT``: the grid of a BGCF server (``bitgrid serve`` on any target, a board
      behind it: :class:`bitgrid.bgcf.target.BgcfTarget`; ``timeout`` in seconds per answer,
      default 10).

    Close the target (or use it as a context manager) when done: this ends the simulator of a
    ``sim`` target.

    :param timeout: seconds to wait for each answer (default :data:`DEFAULT_TIMEOUT`, and for
        ``sim`` :data:`bitgrid.sim.host_link.DEFAULT_TIMEOUT_S` of simulated time).
    :raises ValueError: for an unknown spec or bad options.
    :raises LinkError: if a device cannot be opened or does not answer.
    :raises bitgrid.toolchain.ToolMissingError: if the simulator of ``sim`` is not installed.
    :raises bitgrid.sim.SimulationError: if the simulation model cannot be built or run.
    """
    if spec == "emu":
        return EmulatorTarget(width, height)
    if spec == "fast":
        from bitgrid.fastemu import FastEmulator
        return EmulatorTarget(width, height, engine=FastEmulator, name="fast")
    if isinstance(spec, str) and spec.startswith("mesh:"):
        from bitgrid.mesh import MeshEmulator, MeshShape
        shape = MeshShape.parse(spec[len("mesh:"):])
        if width is not None:
            shape.tile_size(width, height)
        return EmulatorTarget(width, height, engine=lambda config: MeshEmulator(config, shape),
                              name=f"mesh {shape}")
    if spec == "loopback":
        return ProtocolTarget(LoopbackTransport(DeviceModel(width, height)),
                              timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
    if spec == "sim":
        from bitgrid.sim.host_link import open_sim_target
        options = {} if timeout is None else {"timeout": timeout}
        if engine != "direct":
            options.update(engine=engine, evaluators=evaluators)
        return open_sim_target(width, height, simulator=check_simulator(simulator),
                               storage=storage, quiet=quiet, **options)
    if isinstance(spec, str) and spec.startswith("serial:") and len(spec) > len("serial:"):
        transport = SerialTransport(spec[len("serial:"):], baudrate)
        try:
            # Connect with one retry (a missing board is reported in 2 timeouts), then retry
            # as often as on any other link.
            target = ProtocolTarget(transport, retries=1,
                                    timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
        except LinkError:
            transport.close()
            raise
        target.retries = DEFAULT_RETRIES
        return target
    if isinstance(spec, str) and spec.startswith("bgcf:"):
        from bitgrid.bgcf.target import BgcfTarget, parse_address
        host, port = parse_address(spec[len("bgcf:"):])
        return BgcfTarget(host, port, timeout=10.0 if timeout is None else timeout)
    raise ValueError(f"unknown target {spec!r}: use emu, fast, mesh:COLSxROWS, loopback, sim, "
                     "serial:PORT or bgcf:HOST:PORT")


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
