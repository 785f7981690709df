"""Seam links between BGCF servers (docs/serve.md, "Links"): :class:`PeerLink` is one link a
server owns, a connection to the peer server over which it forwards each of its subcycles.

Per subcycle of the owner (:meth:`PeerLink.send`, then :meth:`PeerLink.collect`): SET_INPUTS of
the owner's seam output to the peer's seam input (under the forwarding policy), STEP 1 with the
FORWARDED flag (and SYNC, the counter to reach, to a peer of ours), GET_OUTPUTS; then the
peer's OUTPUTS, from which a duplex link drives the owner's own seam input.
"""

import socket

from bitgrid.protocol.bgcf import (
    BgcfError, ErrorCode, Feature, FrameReader, Hello, LinkFlag, MsgType, StepFlag, decode_error,
    decode_hello, decode_ports, decode_values, encode_hello, encode_step, encode_values,
    pack_frame)

from .names import Names

__all__ = ["FORWARD_POLICIES", "PeerLink"]

#: Seam forwarding policies (``--link-forward``), as the original toolchain's: ``both`` sends
#: every lane after every subcycle; ``phase`` only the lanes whose boundary cell the subcycle
#: updated (the others are sent as before: results are the same); ``cycle`` sends the seam only
#: after phase B subcycles (fewer messages, but the peer sees the seam a subcycle late on every
#: other subcycle: results differ from one big grid).
FORWARD_POLICIES = ("both", "phase", "cycle")


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
