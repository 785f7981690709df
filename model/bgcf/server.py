"""``bitgrid serve``: a BGCF v1 server (:mod:`bitgrid.protocol.bgcf`) in front of any target of
the host runtime (:mod:`bitgrid.host`), with server-to-server seam links (docs/serve.md).

* :class:`GridService` is the grid behind the server: one :class:`~bitgrid.host.Target`, the
  edge inputs, the bound port map and the links, shared by every connection under one lock.
* :class:`PeerLink` is one seam link this server owns: a connection to a peer server.
* :class:`Connection` reads one client's frames and answers them; :class:`BgcfServer` accepts
  connections (a thread each) until SHUTDOWN.

Lockstep (SPEC section 8): a STEP that is not forwarded runs one subcycle at a time; after each
one, every link sends the peer SET_INPUTS (this server's seam output) and STEP 1 with the
FORWARDED flag, then GET_OUTPUTS, and waits for OUTPUTS: the peer has stepped (and forwarded
further) before this server runs its next subcycle. A duplex link drives this server's own seam
input from that OUTPUTS. Forwarded steps carry the SYNC extension (the counter to reach), so a
peer reached along two paths (the far chip of a 2 x 2 mesh) steps once. A cell on the seam only
reads neighbour lanes that did not change in the subcycle it runs (SPEC section 4), so values
sent after the owner's subcycle ``t`` are exactly what the peer's subcycle ``t`` needs.
"""

import socket
import socketserver
import threading
import time

from bitgrid.bitstream import Bitstream, BitstreamError, HEADER_SIZE
from bitgrid.host import LinkError, TargetError
from bitgrid.protocol.bgcf import (
    MAX_PAYLOAD, VERSION, BgcfError, ErrorCode, Feature, FrameReader, Hello, LinkFlag, MsgType,
    PortInfo, Status, StepFlag, decode_error, decode_hello, decode_link, decode_load_chunk,
    decode_ports, decode_readback, decode_step, decode_values, encode_config_chunk, encode_error,
    encode_hello, encode_link_ack, encode_ports, encode_status, encode_step, encode_values,
    pack_frame)
from bitgrid.terms import Edges

from .names import Names

__all__ = ["FORWARD_POLICIES", "FEATURES", "MAX_SESSIONS", "DEFAULT_PORT", "GridService",
           "PeerLink", "Connection", "BgcfServer", "program_size"]

#: Seam forwarding policies (``--link-forward``), as the original toolchain's: ``both`` sends
#: every lane after every subcycle; ``phase`` only the lanes whose boundary cell the subcycle
#: updated (the others are sent as before: results are the same); ``cycle`` sends the seam only
#: after phase B subcycles (fewer messages, but the peer sees the seam a subcycle late on every
#: other subcycle: results differ from one big grid).
FORWARD_POLICIES = ("both", "phase", "cycle")
#: What this server announces in HELLO.
FEATURES = (Feature.READBACK | Feature.STATUS | Feature.PORT_NAMES | Feature.SYNC_STEP
            | Feature.DUPLEX_LINK)
#: Load sessions one connection may hold at once (each at most one program in size).
MAX_SESSIONS = 4
#: The original toolchain's port.
DEFAULT_PORT = 9000
#: Subcycles a target runs per call while a long STEP runs: batches start at 1 and double
#: while one takes less than :data:`_BATCH_SECONDS`, so that a stop request is seen soon.
_STEP_BATCH = 65536
_BATCH_SECONDS = 0.05


def program_size(width, height):
    """Bytes of a BGBS program (SPEC section 5) for a ``width`` x ``height`` grid."""
    return HEADER_SIZE + width * height * 8


class PeerLink:
    """One seam link: this server's output ``local_out`` drives input ``remote_in`` of the peer
    at ``host:port``, ``lanes`` lanes of it.

    :raises BgcfError: ``LINK_FAILED`` if the peer cannot be reached or does not answer HELLO.
    """

    def __init__(self, link, names, *, timeout):
        self.link = link
        self.local_out, self.remote_in = link.local_out, link.remote_in
        self.duplex = bool(link.flags & LinkFlag.DUPLEX)
        self.timeout = timeout
        where = f"{link.host}:{link.port}"
        self.where = where
        try:
            self.socket = socket.create_connection((link.host, link.port), timeout=timeout)
        except UnicodeError:
            raise BgcfError(ErrorCode.LINK_FAILED, f"LINK to {where}: {link.host!r} is not a "
                                                   "host name or address") from None
        except OSError as error:
            raise BgcfError(ErrorCode.LINK_FAILED, f"LINK to {where}: "
                                                   f"{error.strerror or error}") from None
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = FrameReader()
        try:
            self.socket.sendall(pack_frame(MsgType.HELLO, encode_hello(Hello())))
            kind, payload = self._receive()
            if kind != MsgType.HELLO:
                raise BgcfError(ErrorCode.LINK_FAILED, f"LINK to {where}: the peer answered "
                                                       f"HELLO with message 0x{kind:02x}")
            self.peer = decode_hello(payload)
            local = names.lanes(link.local_out)
            remote = self._remote_lanes(link.remote_in)
            seam = local if remote is None else min(local, remote)
            if link.lanes > seam:
                raise BgcfError(ErrorCode.LINK_FAILED,
                                f"LINK of {link.lanes} lanes: {link.local_out} here and "
                                f"{link.remote_in} at {where} have {seam} in common")
            self.lanes = link.lanes or seam
        except BgcfError:
            self.close()
            raise
        self.sync = bool(self.peer.features & Feature.SYNC_STEP)
        self.mask = (1 << self.lanes) - 1
        self.masks = tuple(m & self.mask for m in names.parity_masks(link.local_out))
        self.last_sent = 0

    def _remote_lanes(self, name):
        """Lanes of the peer's input ``name``, from its PORTS (a server of ours) or, for a
        server without port names (the original's), from its grid size if ``name`` is a bus
        word (None if unknown).

        :raises BgcfError: ``LINK_FAILED`` if the peer lists its inputs and ``name`` is not one.
        """
        if not self.peer.features & Feature.PORT_NAMES:
            return Names(self.peer.width, self.peer.height).lanes(name)
        self.socket.sendall(pack_frame(MsgType.GET_PORTS))
        kind, payload = self._receive()
        if kind != MsgType.PORTS:
            raise BgcfError(ErrorCode.LINK_FAILED, f"LINK to {self.where}: the peer answered "
                                                   f"GET_PORTS with message 0x{kind:02x}")
        inputs = {port.name: port.width for port in decode_ports(payload)
                  if port.direction == "in"}
        if name not in inputs:
            raise BgcfError(ErrorCode.LINK_FAILED, f"LINK: the peer at {self.where} has no "
                                                   f"input named {name!r}: its inputs are "
                                                   f"{', '.join(inputs)}")
        return inputs[name]

    def close(self):
        try:
            self.socket.close()
        except OSError:
            pass

    def _receive(self):
        """The next good frame from the peer: ``(type, payload)``.

        :raises BgcfError: ``PEER_LOST`` if the peer closes the connection or is silent for
            the timeout.
        """
        while True:
            for frame in self._reader.frames():
                if frame.problem is None:
                    return frame.type, frame.payload
            try:
                data = self.socket.recv(65536)
            except OSError as error:
                raise BgcfError(ErrorCode.PEER_LOST, f"the peer at {self.where} stopped "
                                                     f"answering ({error})") from None
            if not data:
                raise BgcfError(ErrorCode.PEER_LOST, f"the peer at {self.where} closed the link")
            self._reader.feed(data)

    def send(self, outputs, names, subcycle, policy):
        """After this server's subcycle ``subcycle - 1`` (so its counter is ``subcycle``):
        send the seam (under ``policy``), STEP 1 and GET_OUTPUTS to the peer; :meth:`collect`
        reads the answer.

        :param outputs: this server's edge outputs (:class:`~bitgrid.terms.Edges`).
        :raises BgcfError: ``PEER_LOST`` if the peer is gone.
        """
        value = names.get(outputs, self.local_out) & self.mask
        finished = (subcycle - 1) % 2                # the phase of the subcycle just run
        self._sent = True
        if policy == "phase":
            mask = self.masks[finished]
            value = self.last_sent & ~mask | value & mask
        elif policy == "cycle":
            self._sent = finished == 1
        frames = []
        if self._sent:
            self.last_sent = value
            frames.append(pack_frame(MsgType.SET_INPUTS,
                                     encode_values({self.remote_in: value})))
        flags = StepFlag.FORWARDED | (StepFlag.SYNC if self.sync else 0)
        frames.append(pack_frame(MsgType.STEP, encode_step(1, subcycle if self.sync else None),
                                 flags=flags))
        frames.append(pack_frame(MsgType.GET_OUTPUTS))
        try:
            self.socket.sendall(b"".join(frames))
        except OSError as error:
            raise BgcfError(ErrorCode.PEER_LOST, f"the peer at {self.where} is gone "
                                                 f"({error.strerror or error})") from None
        self._pending = True

    def drain(self):
        """Read the answer of a :meth:`send` not collected (another link failed): the next
        step must not read it as its own."""
        if self._pending:
            try:
                self.collect()
            except BgcfError:
                pass

    def collect(self):
        """Wait for the peer's OUTPUTS after :meth:`send`: it has stepped (and forwarded the
        step on). Returns the value of the peer's ``remote_in`` bus as an output for a duplex
        link under the policy (None when nothing is to be driven).

        :raises BgcfError: ``PEER_LOST`` if the peer is gone or answers with an error.
        """
        while True:
            kind, payload = self._receive()
            if kind in (MsgType.ERROR, MsgType.OUTPUTS):
                self._pending = False
            if kind == MsgType.ERROR:
                code, message = decode_error(payload)
                raise BgcfError(ErrorCode.PEER_LOST, f"the peer at {self.where} refused the "
                                                     f"step: {message}")
            if kind == MsgType.OUTPUTS:
                break
        if not self.duplex or not self._sent:
            return None
        values = dict(decode_values(payload, "OUTPUTS"))
        if self.remote_in not in values:
            raise BgcfError(ErrorCode.PEER_LOST, f"the peer at {self.where} has no output "
                                                 f"{self.remote_in!r} for the duplex link")
        return values[self.remote_in] & self.mask


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
        """SET_INPUTS: every ``(name, value)``, all or nothing (:meth:`Names.set`)."""
        with self._state:
            self.inputs = self.names.set(self.inputs, items)

    def outputs(self):
        """The ``(name, value)`` of every output after the last subcycle run."""
        with self._state:
            self._require()
            return self.names.values(self._outputs)

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
        """Run ``subcycles`` on the target in batches; stops early (the subcycles run so far
        stay run) once :meth:`stop` is called."""
        batch = 1
        while subcycles and not self.stopping.is_set():
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
                    (link.host == self.address[0] or _is_local(link.host)):
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


def _is_local(host):
    """Whether ``host`` names this machine's loopback (or any) address."""
    return host in ("localhost", "0.0.0.0", "::", "") or host.startswith("127.") or host == "::1"


class _Session:
    """One load session of a connection: ``total`` bytes, received in order."""

    def __init__(self, total):
        self.total, self.data = total, bytearray()

    @property
    def complete(self):
        return len(self.data) == self.total


class Connection:
    """The protocol state of one client connection (its load sessions and its reply
    counter) over ``service``: :meth:`receive` bytes, get the reply bytes.

    ``closed`` is set by QUIT, ``shutdown`` by SHUTDOWN.
    """

    def __init__(self, service):
        self.service = service
        self.reader = FrameReader()
        self.sessions = {}
        self.seq = 0
        self.closed = self.shutdown = False

    def _frame(self, kind, payload=b""):
        frame = pack_frame(kind, payload, seq=self.seq)
        self.seq = (self.seq + 1) & 0xFFFF
        return frame

    def error(self, code, message):
        self.service.log(f"error {ErrorCode(code).name}: {message}")
        return self._frame(MsgType.ERROR, encode_error(code, message))

    def receive(self, data):
        """Feed ``data`` (bytes from the client); the bytes to send back."""
        self.reader.feed(data)
        replies = []
        for frame in self.reader.frames():
            if self.closed or self.shutdown:
                break
            if frame.problem == ErrorCode.BAD_CRC:
                replies.append(self.error(ErrorCode.BAD_CRC, f"frame of type 0x{frame.type:02x} "
                                                             "has a bad CRC: dropped"))
                continue
            if frame.problem == ErrorCode.BAD_VERSION:
                replies.append(self.error(ErrorCode.BAD_VERSION,
                                          f"BGCF version {frame.version}: this server speaks "
                                          f"version {VERSION}"))
                continue
            try:
                reply = self.handle(frame)
            except BgcfError as error:
                reply = self.error(error.code, error.message)
            if reply:
                replies.append(reply)
        return b"".join(replies)

    def handle(self, frame):
        """The reply to one good frame (bytes, or None for messages without one)."""
        service, kind, payload = self.service, frame.type, frame.payload
        if kind == MsgType.HELLO:
            decode_hello(payload + bytes(max(0, 10 - len(payload))))   # any client HELLO
            return self._frame(MsgType.HELLO, encode_hello(
                Hello(service.width, service.height, VERSION, int(FEATURES))))
        if kind == MsgType.LOAD_CHUNK:
            self._load_chunk(decode_load_chunk(payload))
        elif kind == MsgType.APPLY:
            self._expect_empty(payload, "APPLY")
            self._apply()
        elif kind == MsgType.STEP:
            subcycles, until = decode_step(payload, frame.flags)
            service.step(subcycles, flags=frame.flags, until=until)
        elif kind == MsgType.SET_INPUTS:
            service.set_inputs(decode_values(payload))
        elif kind == MsgType.GET_OUTPUTS:
            self._expect_empty(payload, "GET_OUTPUTS")
            return self._frame(MsgType.OUTPUTS, encode_values(service.outputs()))
        elif kind == MsgType.QUIT:
            self.closed = True
        elif kind == MsgType.SHUTDOWN:
            self.shutdown = True
            service.stop()
        elif kind == MsgType.LINK:
            lanes = service.link(decode_link(payload))
            return self._frame(MsgType.LINK_ACK, encode_link_ack(lanes))
        elif kind == MsgType.UNLINK:
            self._expect_empty(payload, "UNLINK")
            service.unlink()
        elif kind == MsgType.READBACK:
            offset, max_len = decode_readback(payload)
            data = service.readback()
            if offset > len(data):
                raise BgcfError(ErrorCode.BAD_PAYLOAD, f"READBACK at byte {offset}: the "
                                                       f"program is {len(data)} bytes")
            piece = data[offset:offset + min(max_len, MAX_PAYLOAD - 10)]
            return self._frame(MsgType.CONFIG_CHUNK, encode_config_chunk(len(data), offset,
                                                                         piece))
        elif kind == MsgType.GET_STATUS:
            self._expect_empty(payload, "GET_STATUS")
            return self._frame(MsgType.STATUS, encode_status(service.status()))
        elif kind == MsgType.GET_PORTS:
            self._expect_empty(payload, "GET_PORTS")
            return self._frame(MsgType.PORTS, encode_ports(service.ports()))
        else:
            raise BgcfError(ErrorCode.UNKNOWN_TYPE, f"unknown message type 0x{kind:02x}")
        return None

    @staticmethod
    def _expect_empty(payload, what):
        if payload:
            raise BgcfError(ErrorCode.BAD_PAYLOAD, f"{what} has no payload, not "
                                                   f"{len(payload)} bytes")

    def _load_chunk(self, chunk):
        expected = program_size(self.service.width, self.service.height)
        if chunk.total != expected:
            raise BgcfError(ErrorCode.BAD_CHUNK,
                            f"session {chunk.session}: a program for this "
                            f"{self.service.width} x {self.service.height} grid is {expected} "
                            f"bytes, not {chunk.total}")
        session = self.sessions.get(chunk.session)
        if session is None:
            if len(self.sessions) >= MAX_SESSIONS:
                raise BgcfError(ErrorCode.BAD_CHUNK, f"{MAX_SESSIONS} load sessions are open "
                                                     "already: APPLY or reuse one")
            session = self.sessions[chunk.session] = _Session(chunk.total)
        received = len(session.data)
        if chunk.offset != received:
            problem = "overlaps bytes received" if chunk.offset < received else \
                "leaves a gap after byte {received}"
            raise BgcfError(ErrorCode.BAD_CHUNK,
                            f"session {chunk.session}: the chunk at byte {chunk.offset} "
                            f"{problem.format(received=received)}: send chunks in order "
                            f"(next: byte {received})")
        if received + len(chunk.data) > session.total:
            raise BgcfError(ErrorCode.BAD_CHUNK,
                            f"session {chunk.session}: the chunk of {len(chunk.data)} bytes at "
                            f"byte {chunk.offset} runs past total_bytes {session.total}")
        session.data += chunk.data

    def _apply(self):
        complete = [sid for sid, s in self.sessions.items() if s.complete]
        if not complete:
            partial = ", ".join(f"session {sid}: {len(s.data)} of {s.total} bytes"
                                for sid, s in sorted(self.sessions.items())) or "no session"
            raise BgcfError(ErrorCode.INCOMPLETE, f"APPLY: no fully loaded session ({partial}); "
                                                  "the running program is unchanged")
        session = self.sessions.pop(max(complete))
        self.service.apply(bytes(session.data))


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
            while not server.stopping.is_set():
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
                if connection.shutdown:
                    server.service.log("SHUTDOWN: stopping")
                    server.stopping.set()
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
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.connections = set()
        super().__init__((host, port), _Handler)
        service.address = (host, self.port)

    @property
    def port(self):
        return self.server_address[1]

    def shutdown(self):
        """Stop :meth:`serve_forever`, any STEP that runs, and every connection."""
        self.stopping.set()
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
