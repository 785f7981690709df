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
    FRAMING_RESPONSE, GATEWARE_VERSION, PROTOCOL_VERSION, Command, DeviceStatus, Feature,
    Identity, LinkError, Status, TargetError, answer_code, check_steps, decode_frame,
    encode_frame, max_body, pack_edges, unpack_outputs)
from bitgrid.terms import Edges, check_simulator
from bitgrid.vectors import compare_step

from .device import DeviceModel
from .transports import LoopbackTransport, SerialTransport

__all__ = ["Target", "EmulatorTarget", "ProtocolTarget", "TARGETS", "open_target",
           "run_vectors"]


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
    """The reference emulator as a target. Without a size, it takes the size of the first
    configuration loaded."""

    name = "emu"

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

    :param timeout: seconds to wait for each answer (in the transport's clock).
    :param retries: how many times a request is sent again.
    :param clock: the clock of the timeouts, a function returning seconds (default the
        transport's :meth:`~bitgrid.host.Transport.clock`: wall-clock time, or the simulation
        time of a simulated board, so that its timeouts do not depend on how fast the simulator
        runs).
    :raises LinkError: if the device does not answer IDENTIFY.
    """

    def __init__(self, transport, *, timeout=1.0, retries=4, clock=None):
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
                if body[0] == answer_code(command) and body[1] == self._sequence:
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
        return Identity.from_bytes(self.request(Command.IDENTIFY))

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
                data = self.request(Command.READBACK, row.to_bytes(2, "little") + bytes([address]))
                config.set_frame(row, address, int.from_bytes(data[3:], "little"))
        return config

    def status(self):
        return DeviceStatus.from_bytes(self.request(Command.STATUS))

    def reset(self):
        self.request(Command.RESET)


#: The target specs :func:`open_target` takes (``serial:PORT`` names a port).
TARGETS = ("emu", "loopback", "sim", "serial:PORT")

#: Seconds :class:`ProtocolTarget` waits for an answer, by target kind, when no timeout is
#: given: wall-clock for a serial port and the Python model, simulated for the simulated board
#: (:data:`bitgrid.sim.host_link.DEFAULT_TIMEOUT_S`).
DEFAULT_TIMEOUT = 1.0


def open_target(spec, *, width=None, height=None, baudrate=115200, timeout=None,
                simulator="icarus", storage="ff", quiet=False):
    """A :class:`Target` from a command-line spec (one of :data:`TARGETS`):

    * ``emu``: the reference emulator (:class:`EmulatorTarget`; ``width``, ``height`` optional);
    * ``loopback``: the Python device model of a ``width`` x ``height`` grid behind the protocol;
    * ``sim``: the host controller gateware of a ``width`` x ``height`` grid of ``storage``,
      simulated by ``simulator`` (``icarus`` or ``verilator``) in cocotb, over a simulated UART
      (:func:`bitgrid.sim.host_link.open_sim_target`; builds or finds the simulation model
      first; ``quiet`` silences the build's progress messages; ``timeout`` counts simulated
      seconds);
    * ``serial:PORT``: a board on a serial port at ``baudrate``.

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
    if spec == "loopback":
        return ProtocolTarget(LoopbackTransport(DeviceModel(width, height)),
                              timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
    if spec == "sim":
        from bitgrid.sim.host_link import open_sim_target
        options = {} if timeout is None else {"timeout": timeout}
        return open_sim_target(width, height, simulator=check_simulator(simulator),
                               storage=storage, quiet=quiet, **options)
    if isinstance(spec, str) and spec.startswith("serial:") and len(spec) > len("serial:"):
        transport = SerialTransport(spec[len("serial:"):], baudrate)
        try:
            return ProtocolTarget(transport, retries=1,
                                  timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
        except LinkError:
            transport.close()
            raise
    raise ValueError(f"unknown target {spec!r}: use emu, loopback, sim or serial:PORT")


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
