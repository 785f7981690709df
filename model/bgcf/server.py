"""``bitgrid serve``: a BGCF v1 server (:mod:`bitgrid.protocol.bgcf`) in front of any target of
the host runtime (:mod:`bitgrid.host`), with server-to-server seam links (docs/serve.md).

* :class:`GridService` is the grid behind the server: one :class:`~bitgrid.host.Target`, the
  edge inputs, the bound port map and the links, shared by every connection under one lock.
* :class:`~bitgrid.bgcf.links.PeerLink` is one seam link this server owns: a connection to a
  peer server.
* :class:`~bitgrid.bgcf.connection.Connection` reads one client's frames and answers them;
  :class:`BgcfServer` accepts connections (a thread each) until SHUTDOWN.

Lockstep (SPEC section 8): a STEP that is not forwarded runs one subcycle at a time; after each
one, every link sends the peer SET_INPUTS (this server's seam output) and STEP 1 with the
FORWARDED flag, then GET_OUTPUTS, and waits for OUTPUTS: the peer has stepped (and forwarded
further) before this server runs its next subcycle. A duplex link drives this server's own seam
input from that OUTPUTS. Forwarded steps carry the SYNC extension (the counter to reach), so a
peer reached along two paths (the far chip of a 2 x 2 mesh) steps once. A cell on the seam only
reads neighbour lanes that did not change in the subcycle it runs (SPEC section 4), so values
sent after the owner's subcycle ``t`` are exactly what the peer's subcycle ``t`` needs.
"""

import ipaddress
import socket
import socketserver
import threading
import time

from bitgrid.bitstream import Bitstream, BitstreamError
from bitgrid.host import LinkError, TargetError
from bitgrid.protocol.bgcf import BgcfError, ErrorCode, LinkFlag, PortInfo, Rows, Status, StepFlag
from bitgrid.terms import Edges

from .connection import DEFAULT_PORT, Connection
from .links import FORWARD_POLICIES, PeerLink
from .names import WORD_LANES, Names, word_names
from .rows import RowReader

__all__ = ["GridService", "BgcfServer", "is_loopback"]

#: Subcycles a target runs per call while a long STEP runs: batches start at 1 and double
#: while one takes less than :data:`_BATCH_SECONDS`, so that a stop request is seen soon.
_STEP_BATCH = 65536
_BATCH_SECONDS = 0.05


class GridService:
    """The grid behind a server: ``target`` (a :class:`~bitgrid.host.Target` of a known
    size), its edge inputs, the running program and its port map, and the links.

    :param program: a :class:`~bitgrid.config.Configuration` to load first, or None.
    :param portmap: a :class:`~bitgrid.ports.PortMap` bound to ``program`` (its names are
        offered while that program runs), or None.
    :param forward: the seam forwarding policy (one of :data:`FORWARD_POLICIES`).
    :param link_timeout: seconds to wait for a peer's answer.
    :param log: a function taking one line, or None.
    """

    def __init__(self, target, *, program=None, portmap=None, forward="both",
                 link_timeout=10.0, log=None):
        if forward not in FORWARD_POLICIES:
            raise ValueError(f"unknown forwarding policy {forward!r}: use "
                             f"{', '.join(FORWARD_POLICIES)}")
        self.target = target
        self.width, self.height = target.width, target.height
        self.forward = forward
        self.link_timeout = link_timeout
        self.log = log or (lambda line: None)
        # Two locks: ``_stepping`` is held for as long as the target is used (a load, a whole
        # linked STEP); ``_state`` only for moments, so that a peer's forwarded SET_INPUTS,
        # SYNC step and GET_OUTPUTS are served while a linked STEP waits for that peer.
        self._stepping = threading.RLock()
        self._state = threading.RLock()
        self.portmap = portmap
        self.links = []
        self.program = None
        self.names = Names(self.width, self.height)
        self.rows = None
        self.inputs = self._outputs = Edges()
        self.subcycle = 0
        self.stopping = threading.Event()
        #: ``(host, port)`` the server listens on (set by :class:`BgcfServer`): a LINK to it
        #: is refused.
        self.address = None
        if program is not None:
            self._run(program)

    # -- the program -----------------------------------------------------------------------

    def _run(self, config):
        """Load ``config`` on the target and reset (outputs, counter and edge inputs)."""
        with self._stepping:
            try:
                self.target.load(config)
            except (TargetError, LinkError, ValueError) as error:
                raise BgcfError(ErrorCode.TARGET_FAILED, f"{self.target.name} refused the "
                                                         f"program: {error}") from None
            bound = self.portmap is not None and \
                self.portmap.program in (None, config.digest())
            with self._state:
                self.program = config
                self.inputs = self._outputs = Edges()
                self.subcycle = 0
                self.names = Names(self.width, self.height, self.portmap if bound else None)
                self.rows = RowReader(self.portmap, self.names.ports) if bound else None

    def apply(self, data):
        """APPLY: run the BGBS program ``data`` (bytes); the running one keeps running if it
        is refused.

        :raises BgcfError: ``BAD_PROGRAM`` naming what is wrong with it.
        """
        try:
            bitstream = Bitstream.from_bytes(data, width=self.width, height=self.height)
        except BitstreamError as error:
            raise BgcfError(ErrorCode.BAD_PROGRAM, f"not a BitGrid program for this "
                                                   f"{self.width} x {self.height} grid: "
                                                   f"{error}") from None
        self._run(bitstream.config)
        self.log(f"applied a {self.width} x {self.height} program ({len(data)} bytes)")

    def _require(self):
        if self.program is None:
            raise BgcfError(ErrorCode.NO_PROGRAM, "no program is running: LOAD_CHUNK and "
                                                  "APPLY one first")

    def _target(self, call, *args):
        try:
            return call(*args)
        except (TargetError, LinkError) as error:
            raise BgcfError(ErrorCode.TARGET_FAILED, f"{self.target.name}: {error}") from None

    # -- inputs and outputs ----------------------------------------------------------------

    def set_inputs(self, items):
        """SET_INPUTS: every ``(name, value)``, all or nothing (:meth:`Names.set`); a change
        of an input port's lanes starts the wait for a whole row (:mod:`bitgrid.bgcf.rows`)."""
        with self._state:
            old, self.inputs = self.inputs, self.names.set(self.inputs, items)
            if self.rows:
                self.rows.inputs_changed(self.subcycle, old, self.inputs)

    def outputs(self):
        """The ``(name, value)`` of every output after the last subcycle run: the bus words
        as they are; a named output port (its words) with the value of its latest whole row
        (:mod:`bitgrid.bgcf.rows`), left out while it has none."""
        with self._state:
            self._require()
            values = self.names.values(self._outputs)
            if not self.rows:
                return values
            named = {}
            for port, whole in zip(self.rows.outputs, self.rows.values(self.subcycle).values()):
                words = word_names(port.port.name, range(port.port.width))
                for k, word in enumerate(words):
                    named[word] = None if whole is None else \
                        whole[1] >> (WORD_LANES * k) & ((1 << WORD_LANES) - 1)
            return [(name, named.get(name, value)) for name, value in values
                    if named.get(name, value) is not None]

    def row_status(self):
        """GET_ROWS: the :class:`~bitgrid.protocol.bgcf.Rows` of the named output ports
        (period 0 and none without a port map)."""
        with self._state:
            self._require()
            if not self.rows:
                return Rows(0, 0, 0, self.subcycle, 0, [])
            return self.rows.rows(self.subcycle)

    # -- stepping --------------------------------------------------------------------------

    def step(self, subcycles, *, flags=0, until=None):
        """STEP: run ``subcycles`` subcycles with the inputs last set.

        A forwarded step (``flags`` has FORWARDED) is not forwarded again, unless it is a SYNC
        step (``until`` given): that runs only if this server's counter is
        ``until - subcycles`` (and is forwarded on), and not at all if the counter is already
        ``until``.

        :raises BgcfError: ``NO_PROGRAM``; ``BAD_PAYLOAD`` for a SYNC step to a counter this
            server cannot be at; ``PEER_LOST`` if a link fails (the link is dropped; the
            subcycles run so far stay run).
        """
        with self._state:
            self._require()
            if until is not None and until == self.subcycle:
                return                  # reached along another path of the mesh already
        with self._stepping:
            if until is not None and until == self.subcycle:
                return                  # reached along another path while this one waited
            if until is not None and until != self.subcycle + subcycles:
                raise BgcfError(ErrorCode.BAD_PAYLOAD,
                                f"out of step: this server is at subcycle {self.subcycle}, "
                                f"the step ends at {until}: load every linked server before "
                                "stepping any")
            if flags & StepFlag.FORWARDED and until is None or not self.links:
                self._run_local(subcycles)
                return
            for done in range(subcycles):
                if self.stopping.is_set():
                    return
                self._run_local(1)
                links = list(self.links)
                # Every peer is sent its step first, then every answer is awaited: the peers
                # step at once (a peer reached twice steps once, SYNC).
                for stage in ("send", "collect"):
                    for link in links:
                        try:
                            if stage == "send":
                                link.send(self._outputs, self.names, self.subcycle,
                                          self.forward)
                                continue
                            value = link.collect()
                        except BgcfError as error:
                            for other in links:
                                if other is not link:
                                    other.drain()
                            self.links.remove(link)
                            link.close()
                            raise BgcfError(error.code, f"{error.message}; the link is "
                                                        f"dropped after {done + 1} of "
                                                        f"{subcycles} subcycles") from None
                        if value is not None:
                            self.set_inputs([(link.local_out, value)])

    def _run_local(self, subcycles):
        """Run ``subcycles`` on the target; stops early (the subcycles run so far stay run)
        once :meth:`stop` is called. With named output ports, the step also stops after each
        subcycle of its end at which one of their bits is read, and keeps those bits
        (:class:`~bitgrid.bgcf.rows.RowReader`)."""
        start, reader = self.subcycle, self.rows
        stops = [t + 1 for t in reader.stops(start, start + subcycles)] if reader else []
        for end in stops + [start + subcycles]:
            self._run_batches(end - self.subcycle)
            if self.subcycle != end:
                return                  # stopped
            if reader and end in stops:
                with self._state:
                    reader.capture(end - 1, self._outputs)

    def _run_batches(self, subcycles):
        """Run ``subcycles`` on the target in batches (growing while each takes under
        :data:`_BATCH_SECONDS`, to at most :data:`_STEP_BATCH`); stops early once :meth:`stop`
        is called."""
        batch = 1
        while subcycles > 0 and not self.stopping.is_set():
            batch = min(subcycles, batch)
            with self._state:
                inputs = self.inputs
            started = time.monotonic()
            outputs = self._target(self.target.step, batch, inputs)
            with self._state:
                self._outputs = outputs
                self.subcycle += batch
            subcycles -= batch
            if time.monotonic() - started < _BATCH_SECONDS:
                batch = min(2 * batch, _STEP_BATCH)

    def stop(self):
        """End any STEP that runs (at its next batch) and refuse new ones: the server stops."""
        self.stopping.set()

    def status(self):
        with self._state:
            return Status(self.subcycle, self.subcycle % 2, self.program is not None,
                          len(self.links))

    def ports(self):
        with self._state:
            names = self.names
        return [PortInfo(name, "in", len(bits)) for name, bits in names.inputs.items()] + \
            [PortInfo(name, "out", len(bits)) for name, bits in names.outputs.items()]

    def readback(self):
        """The running program as BGBS bytes, read back from the target."""
        with self._stepping:
            self._require()
            config = self._target(self.target.readback)
        return Bitstream(config).to_bytes()

    # -- links -----------------------------------------------------------------------------

    def link(self, link):
        """LINK: connect to the peer and own the link; the number of lanes.

        :raises BgcfError: ``LINK_FAILED`` for an unknown name or an unreachable peer.
        """
        with self._stepping:
            names = self.names
            if link.local_out not in names.outputs:
                raise BgcfError(ErrorCode.LINK_FAILED,
                                f"LINK: no output named {link.local_out!r} here: the outputs "
                                f"are {', '.join(names.outputs)}")
            if link.flags & LinkFlag.DUPLEX and link.local_out not in names.inputs:
                raise BgcfError(ErrorCode.LINK_FAILED,
                                f"LINK: a duplex link drives {link.local_out!r} as an input "
                                "too, and no input has that name")
            for other in self.links:
                if (other.link.host, other.link.port, other.remote_in) == \
                        (link.host, link.port, link.remote_in):
                    raise BgcfError(ErrorCode.LINK_FAILED,
                                    f"LINK: {link.remote_in} at {link.host}:{link.port} is "
                                    "linked already: UNLINK first")
            if self.address is not None and link.port == self.address[1] and \
                    (link.host == self.address[0] or is_loopback(link.host)):
                raise BgcfError(ErrorCode.LINK_FAILED, f"LINK to {link.host}:{link.port}: "
                                                       "that is this server itself")
            peer = PeerLink(link, names, timeout=self.link_timeout)
            self.links.append(peer)
        self.log(f"linked {link.direction}: {link.local_out} -> {link.remote_in} at "
                 f"{link.host}:{link.port}, {peer.lanes} lanes"
                 f"{' (duplex)' if peer.duplex else ''}")
        return peer.lanes

    def unlink(self):
        """UNLINK: close every link this server owns."""
        with self._stepping:
            for link in self.links:
                link.close()
            self.links = []

    def close(self):
        self.unlink()


def is_loopback(host):
    """Whether ``host`` (a name or an address) is this machine's loopback: ``localhost``,
    127.0.0.0/8 or ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Handler(socketserver.BaseRequestHandler):
    def setup(self):
        with self.server.lock:
            self.server.connections.add(self.request)

    def finish(self):
        with self.server.lock:
            self.server.connections.discard(self.request)

    def handle(self):
        server = self.server
        connection = Connection(server.service)
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(0.5)
        server.service.log(f"client {self.client_address[0]}:{self.client_address[1]} "
                           "connected")
        try:
            while not server.service.stopping.is_set():
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    break
                if not data:
                    break
                reply = connection.receive(data)
                if reply:
                    try:
                        sock.sendall(reply)
                    except OSError:
                        break
                if connection.shutdown:            # the service is stopping already
                    server.service.log("SHUTDOWN: stopping")
                    threading.Thread(target=server.shutdown, daemon=True).start()
                if connection.closed or connection.shutdown:
                    break
        finally:
            server.service.log(f"client {self.client_address[0]}:{self.client_address[1]} "
                               "left")


class BgcfServer(socketserver.ThreadingTCPServer):
    """A TCP server of :class:`GridService` ``service`` on ``(host, port)`` (port 0: any free
    port, see :attr:`port`). Each connection gets a thread; their requests are served one at a
    time under the service's lock. :meth:`serve_forever` returns after a SHUTDOWN message or
    :meth:`shutdown`.

    :raises OSError: if the address cannot be bound.
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, service, host="127.0.0.1", port=DEFAULT_PORT):
        self.service = service
        self.lock = threading.Lock()
        self.connections = set()
        super().__init__((host, port), _Handler)
        service.address = (host, self.port)

    @property
    def port(self):
        return self.server_address[1]

    def shutdown(self):
        """Stop :meth:`serve_forever`, any STEP that runs, and every connection."""
        self.service.stop()
        super().shutdown()
        with self.lock:
            for connection in self.connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def server_close(self):
        super().server_close()
        self.service.close()
