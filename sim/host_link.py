"""The simulated board as a target: ``open_target("sim", ...)`` (``bitgrid run --target sim``).

:func:`open_sim_target` builds (or finds in the cache) the simulation model of a
:class:`~bitgrid.hdl.host.HostController` (a board top without its pins), starts it in cocotb
with the test bench :mod:`bitgrid.sim.host_link_bench` in a background thread, and returns an
ordinary :class:`~bitgrid.host.ProtocolTarget` over a :class:`SimLinkTransport`: the host
runtime runs in this process, and every byte it sends crosses a Unix-domain socket to the test
bench, which drives it onto the controller's ``rx`` pin through the bit-level UART model
(:class:`bitgrid.sim.testbench.host.UartModel`) and sends back what the controller answers on
``tx``. Closing the target ends the simulator.

The socket carries messages (:func:`send_message`, :func:`receive_message`): the host sends
``op (1 byte) | length (4, little-endian) | data``; the test bench answers each ``WRITE`` and
``READ`` with ``simulation time in seconds (8, little-endian double) | length (4) | data``:

* :data:`WRITE`: send ``data`` on the UART (the answer carries no data);
* :data:`READ`: ``data`` is the timeout in simulated seconds (a double); the answer holds the
  bytes received until a frame delimiter arrived or the timeout passed;
* :data:`QUIT`: end the simulation (no answer).

The transport's :meth:`~SimLinkTransport.clock` is the simulation time of the last answer, so
the target's timeouts count simulated time (as with
:class:`bitgrid.sim.testbench.host.SimUartTransport`).
"""

import os
import shutil
import socket
import struct
import tempfile
import threading

from bitgrid.checks import check_int, check_real
from bitgrid.host import DEFAULT_RETRIES, ProtocolTarget, Transport
from bitgrid.protocol.host import LinkError, check_protocol_size
from bitgrid.terms import check_simulator, check_storage

from . import runner as _runner
from .host import HOST_JOB_FORMAT

__all__ = ["WRITE", "READ", "QUIT", "LINK_TEST_MODULE", "DEFAULT_TIMEOUT_S", "send_message",
           "receive_message", "SimLinkTransport", "open_sim_target"]

#: Message operations, host to test bench.
WRITE, READ, QUIT = b"W", b"R", b"Q"
#: The cocotb test module that serves the socket.
LINK_TEST_MODULE = "bitgrid.sim.host_link_bench"
#: Simulated seconds the host waits for an answer before sending a request again (as
#: :data:`bitgrid.sim.host.DEFAULT_TIMEOUT_S`: a load commit of a 32 x 32 grid takes about
#: 10 000 cycles, 100 us at 10 ns per cycle).
DEFAULT_TIMEOUT_S = 2e-3

_HEADER = struct.Struct("<cI")
_ANSWER = struct.Struct("<dI")


def _receive_exactly(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def send_message(sock, op, data=b""):
    """Send one host message (:data:`WRITE`, :data:`READ` or :data:`QUIT`)."""
    sock.sendall(_HEADER.pack(op, len(data)) + bytes(data))


def receive_message(sock):
    """``(op, data)`` of the next host message, or ``(None, b"")`` if the host closed the
    socket."""
    header = _receive_exactly(sock, _HEADER.size)
    if header is None:
        return None, b""
    op, length = _HEADER.unpack(header)
    data = _receive_exactly(sock, length) if length else b""
    return (None, b"") if data is None else (op, data)


def send_answer(sock, seconds, data=b""):
    """Answer a :data:`WRITE` or :data:`READ` (test bench side)."""
    sock.sendall(_ANSWER.pack(seconds, len(data)) + bytes(data))


class _Simulation:
    """The simulator run (:func:`bitgrid.sim.runner.run_testbench`) in a background thread."""

    def __init__(self, build, job, *, keep, quiet):
        self.error = None
        self.result = None
        self._thread = threading.Thread(target=self._run, args=(build, job, keep, quiet),
                                        name="bitgrid-sim-target", daemon=True)
        self._thread.start()

    def _run(self, build, job, keep, quiet):
        try:
            self.result, _ = _runner.run_testbench(build, job, keep=keep, quiet=quiet,
                                               test_module=LINK_TEST_MODULE)
        except BaseException as error:       # reported by the thread that waits for it
            self.error = error

    def alive(self):
        return self._thread.is_alive()

    def wait(self):
        """Wait for the simulator to end; re-raise its error, if any."""
        self._thread.join()
        if self.error is not None:
            raise self.error


class SimLinkTransport(Transport):
    """A :class:`~bitgrid.host.Transport` to the simulated UART of a host controller, over the
    socket of :func:`open_sim_target`.

    :param sock: the connected socket.
    :param simulation: the simulator run to wait for in :meth:`close` (None: none).
    :param folder: a folder (of the socket) to remove in :meth:`close`.
    :param name: what messages call the device.
    :param to_device: optional fault injector ``f(bytes) -> bytes`` applied to each write (as
        :class:`~bitgrid.host.LoopbackTransport`'s).
    :param build: the :class:`~bitgrid.sim.build.Build` simulated (kept for reports: its
        ``seconds`` and ``cached``).
    :raises LinkError: (from :meth:`write`, :meth:`read`) if the simulator has gone away.
    """

    def __init__(self, sock, simulation=None, folder=None, *, name="sim", to_device=None,
                 build=None):
        self.name = name
        self.build = build
        self._to_device = to_device or (lambda data: data)
        self._sock = sock
        self._simulation = simulation
        self._folder = folder
        self._now = 0.0
        self.writes = 0

    def clock(self):
        """Simulation time in seconds, as of the last write or read."""
        return self._now

    def _call(self, op, data):
        try:
            send_message(self._sock, op, data)
            header = _receive_exactly(self._sock, _ANSWER.size)
            if header is None:
                raise OSError("the test bench closed the socket")
            self._now, length = _ANSWER.unpack(header)
            answer = _receive_exactly(self._sock, length) if length else b""
            if answer is None:
                raise OSError("the test bench closed the socket")
        except OSError as error:
            raise LinkError(f"the simulation of the host controller ended: {error}") from None
        return answer

    def write(self, data):
        self.writes += 1
        self._call(WRITE, self._to_device(bytes(data)))

    def read(self, timeout):
        return self._call(READ, struct.pack("<d", timeout))

    def close(self):
        """End the simulation and wait for the simulator to exit.

        :raises bitgrid.sim.SimulationError: if the simulator failed.
        """
        if self._sock is None:
            return
        try:
            send_message(self._sock, QUIT)
        except OSError:
            pass
        self._sock.close()
        self._sock = None
        try:
            if self._simulation is not None:
                self._simulation.wait()
        finally:
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)


def _connect(listener, simulation):
    """Accept the test bench's connection while its simulator runs."""
    while True:
        try:
            sock, _ = listener.accept()
            sock.settimeout(None)
            return sock
        except socket.timeout:
            if not simulation.alive():
                simulation.wait()            # raises the simulator's error, if it had one
                raise _runner.SimulationError("the simulator ended before its test bench "
                                              "connected to the host")


def open_sim_target(width, height, *, simulator="icarus", storage="ff",
                    divisor=_runner.HOST_DIVISOR, clock_ns=10, timeout=DEFAULT_TIMEOUT_S,
                    retries=DEFAULT_RETRIES, to_device=None, quiet=False, keep=False,
                    engine="direct", evaluators=None):
    """A :class:`~bitgrid.host.ProtocolTarget` on the simulated host controller of a ``width``
    x ``height`` grid of ``storage``, in ``simulator``.

    :param divisor: clock cycles per UART bit of the controller.
    :param clock_ns: clock period of the simulation, in ns.
    :param timeout: simulated seconds to wait for each answer before sending a request again.
    :param retries: how many times a request is sent again.
    :param to_device: optional fault injector on the bytes sent (see :class:`SimLinkTransport`).
    :param quiet: no progress messages from the build and the run.
    :param keep: keep the run folder (job, result, simulator log).
    :param engine, evaluators: the controller's grid engine (``"direct"`` or
        ``"multiplexed"``, see :func:`bitgrid.hdl.engines.make_grid`).
    :raises ValueError: for a bad size or option (before anything is built).
    :raises bitgrid.toolchain.ToolMissingError: if the simulator is not installed.
    :raises bitgrid.sim.SimulationError: if the build or the simulator fails.
    :raises LinkError: if the controller does not answer IDENTIFY.
    """
    width, height = check_protocol_size(width, height)
    check_simulator(simulator)
    check_storage(storage)
    divisor = check_int(divisor, "divisor", minimum=4)
    clock_ns = check_int(clock_ns, "clock_ns", minimum=1)
    timeout = check_real(timeout, "timeout", minimum=0)
    retries = check_int(retries, "retries", minimum=0)
    build = _runner.build(width, height, storage=storage, simulator=simulator, quiet=quiet,
                          top="host", divisor=divisor, engine=engine, evaluators=evaluators)
    folder = tempfile.mkdtemp(prefix="bitgrid-link-")
    path = os.path.join(folder, "uart.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    transport = None
    try:
        listener.bind(path)
        listener.listen(1)
        listener.settimeout(0.1)
        job = {"format": HOST_JOB_FORMAT, "width": width, "height": height,
               "divisor": divisor, "clock_ns": clock_ns, "socket": path, "cases": []}
        simulation = _Simulation(build, job, keep=keep, quiet=quiet)
        sock = _connect(listener, simulation)
        transport = SimLinkTransport(sock, simulation, folder, name=f"sim ({simulator})",
                                     to_device=to_device, build=build)
        return ProtocolTarget(transport, timeout=timeout, retries=retries)
    except BaseException:
        if transport is not None:
            try:
                transport.close()
            except Exception:     # the error that brought us here is the one to report
                pass
        else:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        listener.close()
