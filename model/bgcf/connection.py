"""The protocol state of one BGCF client connection (docs/serve.md, "Messages"):
:class:`Connection` reads a client's frames and answers them, over the grid's
:class:`~bitgrid.bgcf.server.GridService`; it holds the client's load sessions (bounded:
:data:`MAX_SESSIONS` of at most one program each) and its reply counter.
"""

from bitgrid.bitstream import HEADER_SIZE
from bitgrid.protocol.bgcf import (
    MAX_PAYLOAD, VERSION, BgcfError, ErrorCode, Feature, FrameReader, Hello, MsgType,
    decode_link, decode_load_chunk, decode_readback, decode_step, decode_values,
    encode_config_chunk, encode_error, encode_hello, encode_link_ack, encode_ports,
    encode_rows, encode_status, encode_values, pack_frame)

__all__ = ["FEATURES", "MAX_SESSIONS", "DEFAULT_PORT", "Connection", "program_size"]

#: What this server announces in HELLO.
FEATURES = (Feature.READBACK | Feature.STATUS | Feature.PORT_NAMES | Feature.SYNC_STEP
            | Feature.DUPLEX_LINK | Feature.ROWS)
#: Load sessions one connection may hold at once (each at most one program in size).
MAX_SESSIONS = 4
#: The original toolchain's port.
DEFAULT_PORT = 9000


#: Messages that carry no payload (one that has one is refused).
_NO_PAYLOAD = frozenset({MsgType.APPLY, MsgType.GET_OUTPUTS, MsgType.UNLINK, MsgType.GET_STATUS,
                         MsgType.GET_PORTS, MsgType.GET_ROWS})


def program_size(width, height):
    """Bytes of a BGBS program (SPEC section 5) for a ``width`` x ``height`` grid."""
    return HEADER_SIZE + width * height * 8


class _Session:
    """One load session of a connection: ``total`` bytes, received in order."""

    def __init__(self, total):
        self.total, self.data = total, bytearray()

    @property
    def complete(self):
        return len(self.data) == self.total


class Connection:
    """The protocol state of one client connection (its load sessions, its reply counter and
    whether its stream is in step) over ``service``: :meth:`receive` bytes, get the reply
    bytes.

    ``closed`` is set by QUIT, ``shutdown`` by SHUTDOWN.
    """

    def __init__(self, service):
        self.service = service
        self.reader = FrameReader()
        self.sessions = {}
        self.seq = 0
        self.closed = self.shutdown = False
        #: Frames dropped (bad CRC, other version) since the last good frame: a stream out of
        #: step while it is not 0 (:meth:`receive`).
        self.bad_frames = 0
        self._dropped_before = 0        # reader.dropped at the last good frame

    def _frame(self, kind, payload=b""):
        frame = pack_frame(kind, payload, seq=self.seq)
        self.seq = (self.seq + 1) & 0xFFFF
        return frame

    def error(self, code, message):
        self.service.log(f"error {ErrorCode(code).name}: {message}")
        return self._frame(MsgType.ERROR, encode_error(code, message))

    def receive(self, data):
        """Feed ``data`` (bytes from the client); the bytes to send back.

        Resynchronisation (docs/serve.md, "Errors"): bytes before a magic are dropped without
        an answer; of the frames dropped (bad CRC, another version) until the next good frame,
        only the first is answered (ERROR ``BAD_CRC`` or ``BAD_VERSION``), so that a burst of
        garbage gets at most one ERROR however many false magics it holds. The good frame that
        ends it is answered as usual, and the server log gets one line of what was dropped.
        """
        self.reader.feed(data)
        replies = []
        for frame in self.reader.frames():
            if self.closed or self.shutdown:
                break
            if frame.problem is not None:
                if not self.bad_frames:
                    replies.append(self._bad_frame_error(frame))
                self.bad_frames += 1
                continue
            self._in_step()
            try:
                reply = self.handle(frame)
            except BgcfError as error:
                reply = self.error(error.code, error.message)
            if reply:
                replies.append(reply)
        return b"".join(replies)

    def _bad_frame_error(self, frame):
        """The ERROR that answers the first frame dropped since the last good one."""
        later = "; later bad frames are dropped unanswered until a good one"
        if frame.problem == ErrorCode.BAD_CRC:
            return self.error(ErrorCode.BAD_CRC, f"frame of type 0x{frame.type:02x} has a bad "
                                                 f"CRC: dropped{later}")
        return self.error(frame.problem, f"BGCF version {frame.version}: this server speaks "
                                         f"version {VERSION}: dropped{later}")

    def _in_step(self):
        """A good frame has been read: log what was dropped before it, if anything."""
        dropped = self.reader.dropped - self._dropped_before
        if dropped or self.bad_frames:
            self.service.log(f"resynchronised: dropped {dropped} bytes before a magic and "
                             f"{self.bad_frames} bad frames since the last good frame")
        self._dropped_before = self.reader.dropped
        self.bad_frames = 0

    def handle(self, frame):
        """The reply to one good frame (bytes, or None for messages without one)."""
        service, kind, payload = self.service, frame.type, frame.payload
        if kind in _NO_PAYLOAD and payload:
            raise BgcfError(ErrorCode.BAD_PAYLOAD, f"{MsgType(kind).name} has no payload, not "
                                                   f"{len(payload)} bytes")
        if kind == MsgType.HELLO:           # a client's HELLO payload says nothing we use
            return self._frame(MsgType.HELLO, encode_hello(
                Hello(service.width, service.height, VERSION, int(FEATURES))))
        if kind == MsgType.LOAD_CHUNK:
            self._load_chunk(decode_load_chunk(payload))
        elif kind == MsgType.APPLY:
            self._apply()
        elif kind == MsgType.STEP:
            subcycles, until = decode_step(payload, frame.flags)
            service.step(subcycles, flags=frame.flags, until=until)
        elif kind == MsgType.SET_INPUTS:
            service.set_inputs(decode_values(payload))
        elif kind == MsgType.GET_OUTPUTS:
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
            return self._frame(MsgType.STATUS, encode_status(service.status()))
        elif kind == MsgType.GET_PORTS:
            return self._frame(MsgType.PORTS, encode_ports(service.ports()))
        elif kind == MsgType.GET_ROWS:
            return self._frame(MsgType.ROWS, encode_rows(service.row_status()))
        else:
            raise BgcfError(ErrorCode.UNKNOWN_TYPE, f"unknown message type 0x{kind:02x}")
        return None

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
                f"leaves a gap after byte {received}"
            raise BgcfError(ErrorCode.BAD_CHUNK,
                            f"session {chunk.session}: the chunk at byte {chunk.offset} "
                            f"{problem}: send chunks in order (next: byte {received})")
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
