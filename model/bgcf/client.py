"""A BGCF v1 client (:mod:`bitgrid.protocol.bgcf`) for ``bitgrid serve`` and for the original
toolchain's servers.

Messages without an answer (LOAD_CHUNK, APPLY, SET_INPUTS, STEP, UNLINK) are sent at once; an
ERROR the server sends for one of them is raised by the next call that waits for an answer
(:meth:`BgcfClient.check` waits for nothing else). So ``client.step(1)`` followed by
``client.outputs()`` raises for a refused step, and :meth:`BgcfClient.load` checks before it
returns. Every request is followed by a HELLO, whose answer ends the reading, so that no
answer is ever left over for the next call, whatever the server refused.
"""

import os
import socket

from bitgrid.protocol.bgcf import (
    ErrorCode, Feature, FrameReader, Hello, Link, LinkFlag, MsgType, decode_config_chunk,
    decode_error, decode_hello, decode_link_ack, decode_ports, decode_rows, decode_status,
    decode_values,
    encode_hello, encode_link, encode_load_chunk, encode_readback, encode_step, encode_values,
    pack_frame)

from .connection import DEFAULT_PORT

__all__ = ["BgcfClient", "ServerError", "DEFAULT_CHUNK", "edge_values", "run_vectors",
           "split_words", "join_words", "join_ports"]

#: Bytes per LOAD_CHUNK (the original client's size).
DEFAULT_CHUNK = 1024


class ServerError(Exception):
    """An ERROR frame from the server: ``code`` (an :class:`ErrorCode`, or an int for a code
    this project does not know) and ``message``."""

    def __init__(self, code, message):
        name = code.name if isinstance(code, ErrorCode) else f"code {code}"
        super().__init__(f"{message} ({name})")
        self.code, self.message = code, message


class BgcfClient:
    """One connection to a BGCF server at ``host:port``.

    :param timeout: seconds to wait for the connection and for each answer.
    :raises OSError: if the server cannot be reached.
    """

    def __init__(self, host="127.0.0.1", port=DEFAULT_PORT, *, timeout=10.0):
        self.host, self.port = host, port
        self.socket = socket.create_connection((host, port), timeout=timeout)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.socket.settimeout(timeout)
        self._reader = FrameReader()
        self.seq = 0
        self.server = None

    def close(self):
        self.socket.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- frames ----------------------------------------------------------------------------

    def send(self, kind, payload=b"", flags=0):
        """Send one frame (no answer is awaited)."""
        self.socket.sendall(pack_frame(kind, payload, seq=self.seq, flags=flags))
        self.seq = (self.seq + 1) & 0xFFFF

    def _frames(self):
        """Good frames from the server, as they come (bad ones are skipped).

        :raises ConnectionError: if the server closes the connection or is silent for the
            timeout.
        """
        while True:
            for frame in self._reader.frames():
                if frame.problem is None:
                    yield frame
            try:
                data = self.socket.recv(65536)
            except socket.timeout:
                raise ConnectionError(f"no answer from {self.host}:{self.port} within "
                                      f"{self.socket.gettimeout()} s") from None
            if not data:
                raise ConnectionError(f"{self.host}:{self.port} closed the connection")
            self._reader.feed(data)

    def request(self, kind, answer, payload=b""):
        """Send one request and return the payload of its ``answer``.

        A HELLO goes right after it (no extra wait: both are in flight together), and
        everything up to HELLO's answer is read, so no answer is left over for the next call.

        :raises ServerError: for the first ERROR that comes before HELLO's answer (one for
            this request, or for a message sent before without an answer).
        """
        frames = pack_frame(kind, payload, seq=self.seq)
        self.seq = (self.seq + 1) & 0xFFFF
        if kind != MsgType.HELLO:
            frames += pack_frame(MsgType.HELLO, encode_hello(Hello()), seq=self.seq)
            self.seq = (self.seq + 1) & 0xFFFF
        self.socket.sendall(frames)
        errors, result = [], None
        for frame in self._frames():
            if frame.type == MsgType.ERROR:
                errors.append(ServerError(*decode_error(frame.payload)))
            elif frame.type == MsgType.HELLO:          # the last answer: all are in
                result = frame.payload if kind == MsgType.HELLO else result
                break
            elif frame.type == answer and result is None:
                result = frame.payload
        if errors:
            raise errors[0]
        if result is None:
            raise ServerError(ErrorCode.BAD_PAYLOAD, f"the server did not answer message "
                                                     f"0x{kind:02x}")
        return result

    # -- messages --------------------------------------------------------------------------

    def hello(self):
        """HELLO: the server's :class:`~bitgrid.protocol.bgcf.Hello` (grid size, version,
        features)."""
        self.server = decode_hello(self.request(MsgType.HELLO, MsgType.HELLO,
                                                encode_hello(Hello())))
        return self.server

    def check(self):
        """Wait until the server has handled everything sent so far (a HELLO round trip).

        :raises ServerError: for an ERROR the server sent meanwhile.
        """
        self.hello()

    def load(self, program, *, session=1, chunk=DEFAULT_CHUNK):
        """LOAD_CHUNK the BGBS ``program`` (bytes or a file path) in pieces of ``chunk`` bytes,
        APPLY it and check that the server took it.

        :raises ServerError: if the server refuses a chunk or the program.
        """
        if isinstance(program, (str, os.PathLike)):
            with open(program, "rb") as file:
                program = file.read()
        data = bytes(program)
        for offset in range(0, len(data), chunk) or [0]:
            piece = data[offset:offset + chunk]
            self.send(MsgType.LOAD_CHUNK, encode_load_chunk(session, len(data), offset, piece))
        self.send(MsgType.APPLY)
        self.check()

    def set_inputs(self, values=None, **named):
        """SET_INPUTS ``values`` (a mapping name -> unsigned 64-bit value, or pairs) and
        ``named``: the names as the server has them (words, see :meth:`set_values`)."""
        values = dict(values or {}, **named)
        self.send(MsgType.SET_INPUTS, encode_values(values))

    def set_values(self, values):
        """SET_INPUTS of whole values of any width (a mapping name -> unsigned value): each
        cut into its words ``name``, ``name.1``, ... (:func:`split_words`; 64 bits each, as
        the server names a side or a port of more than 64 lanes). On a server with port
        names every word the server has is set, zeros included; on another, as many words
        as the value needs.

        :raises ValueError: for a negative value, or one with bits beyond the lanes of a name
            of several words or beyond 64 bits (nothing is sent; a word's own lanes are the
            server's to check: TOO_WIDE).
        """
        widths = None
        server = self.server or self.hello()
        if server.features & Feature.PORT_NAMES:
            widths = {p.name: p.width for p in self.ports() if p.direction == "in"}
        self.set_inputs(split_words(values, widths))

    def step(self, subcycles=1):
        """STEP ``subcycles`` (0 to 2**32 - 1) subcycles."""
        self.send(MsgType.STEP, encode_step(subcycles))

    def outputs(self):
        """GET_OUTPUTS: ``{name: value}`` of every output, words as the server sends them."""
        return dict(decode_values(self.request(MsgType.GET_OUTPUTS, MsgType.OUTPUTS),
                                  "OUTPUTS"))

    def values(self):
        """GET_OUTPUTS as whole values: ``{name: value}`` with the words ``name.1``,
        ``name.2``, ... joined into ``name`` (:func:`join_words`). A server with
        :attr:`~bitgrid.protocol.bgcf.Feature.ROWS` leaves out a named output port that has
        no whole row yet (:meth:`read`)."""
        return join_words(self.outputs())

    def rows(self):
        """GET_ROWS: the :class:`~bitgrid.protocol.bgcf.Rows` of the named output ports
        (extension: their whole rows, docs/serve.md "Rows")."""
        self._require(Feature.ROWS, "whole rows")
        return decode_rows(self.request(MsgType.GET_ROWS, MsgType.ROWS))

    def read(self):
        """The outputs as whole values, and what is not whole yet: ``(values, missing)``,
        ``values`` as :meth:`values` gives them, ``missing`` ``{port: subcycles}`` for each
        named output port with no whole row since the inputs last changed (the subcycles to
        STEP before it has one). A server without
        :attr:`~bitgrid.protocol.bgcf.Feature.ROWS` gives no ``missing`` (its named ports are
        read as they are, whatever rows their bits hold)."""
        server = self.server or self.hello()
        values = self.values()
        missing = {}
        if server.features & Feature.ROWS:
            missing = {info.name: info.missing for info in self.rows().ports
                       if not info.whole}
        return values, missing

    def link(self, direction, local_out, remote_in, host, port, lanes=0, *, duplex=False):
        """LINK: the server's ``local_out`` drives ``remote_in`` of the server at
        ``host:port`` across its side ``direction`` (``"N"`` ... ``"W"``); the lanes the server
        accepted. ``duplex`` (an extension) also drives ``local_out`` from the peer's
        ``remote_in``."""
        link = Link(direction, local_out, remote_in, host, port, lanes,
                    LinkFlag.DUPLEX if duplex else 0)
        return decode_link_ack(self.request(MsgType.LINK, MsgType.LINK_ACK, encode_link(link)))

    def unlink(self):
        self.send(MsgType.UNLINK)

    def quit(self):
        """QUIT: the server closes this connection."""
        self.send(MsgType.QUIT)

    def shutdown(self):
        """SHUTDOWN: the server stops."""
        self.send(MsgType.SHUTDOWN)

    # -- extensions ------------------------------------------------------------------------

    def _require(self, feature, what):
        server = self.server or self.hello()
        if not server.features & feature:
            raise ServerError(ErrorCode.UNKNOWN_TYPE, f"the server at {self.host}:{self.port} "
                                                      f"has no {what} (HELLO features "
                                                      f"0x{server.features:x})")

    def readback(self):
        """The running program as BGBS bytes (extension READBACK)."""
        self._require(Feature.READBACK, "readback")
        data, total = bytearray(), None
        while total is None or len(data) < total:
            payload = self.request(MsgType.READBACK, MsgType.CONFIG_CHUNK,
                                   encode_readback(len(data), 0xFFFF))
            total, offset, piece = decode_config_chunk(payload)
            if offset != len(data) or not piece and len(data) < total:
                raise ServerError(ErrorCode.BAD_PAYLOAD, f"CONFIG_CHUNK at byte {offset} of "
                                                         f"{total} after {len(data)} bytes")
            data += piece
        return bytes(data)

    def status(self):
        """The subcycle counter, phase, whether a program runs and the links (extension)."""
        self._require(Feature.STATUS, "status")
        return decode_status(self.request(MsgType.GET_STATUS, MsgType.STATUS))

    def ports(self):
        """Every input and output name with its width (extension)."""
        self._require(Feature.PORT_NAMES, "port names")
        return decode_ports(self.request(MsgType.GET_PORTS, MsgType.PORTS))


def split_words(values, widths=None):
    """``[(word name, word)]`` of whole values cut into BGCF words of 64 bits: ``name`` the
    bits 0 to 63, ``name.1`` the bits 64 to 127, and so on (:func:`bitgrid.bgcf.names.word_names`).

    :param values: a mapping name -> unsigned integer of any width.
    :param widths: the server's input names and widths (``{name: bits}``, from GET_PORTS), or
        None when unknown: then a value gives as many words as it needs (at least one), else
        every word the server has for the name (zeros included), and a value wider than the
        lanes of a name of several words is refused (one of a single word goes as it is: the
        server refuses it, TOO_WIDE).
    :raises ValueError: ``a=0x1ffff has bits beyond its 16 lanes`` / ``a=-1: a value is an
        unsigned integer``.
    """
    from .names import WORD_LANES
    mask = (1 << WORD_LANES) - 1
    words = []
    for name, value in values.items():
        value = int(value)
        if value < 0:
            raise ValueError(f"{name}={value}: a value is an unsigned integer")
        if widths is not None and name in widths:
            names, lanes = [name], widths[name]
            while f"{name}.{len(names)}" in widths:
                lanes += widths[f"{name}.{len(names)}"]
                names.append(f"{name}.{len(names)}")
            if (len(names) > 1 or value >> WORD_LANES) and value >> lanes:
                raise ValueError(f"{name}=0x{value:x} has bits beyond its {lanes} lanes")
        else:
            names = [name if k == 0 else f"{name}.{k}"
                     for k in range(max(1, -(-value.bit_length() // WORD_LANES)))]
        words += [(word, value >> (WORD_LANES * k) & mask) for k, word in enumerate(names)]
    return words


def join_words(values):
    """``{name: value}`` with every word ``name.K`` of a name the mapping also has joined
    into it (bits ``64 K`` and up), the inverse of :func:`split_words`; other names as they
    are, in their order."""
    from .names import WORD_LANES, word_of
    joined = {}
    for name, value in values.items():
        base, word = word_of(name)
        if word and base in values:
            joined[base] = joined.get(base, 0) | value << (WORD_LANES * word)
        else:
            joined[name] = joined.get(name, 0) | value
    return joined


def join_ports(ports):
    """The :class:`~bitgrid.protocol.bgcf.PortInfo` list of GET_PORTS with the words of a
    name joined (:func:`join_words`): ``[(name, direction, width)]``, a name's width the sum
    of its words'."""
    from .names import word_of
    present = {(p.name, p.direction) for p in ports}
    joined = {}
    for p in ports:
        base, word = word_of(p.name)
        key = (base, p.direction) if word and (base, p.direction) in present \
            else (p.name, p.direction)
        joined[key] = joined.get(key, 0) + p.width
    return [(name, direction, width) for (name, direction), width in joined.items()]


def edge_values(edges, width, height):
    """``{name: value}`` of the edge bus words (:func:`bitgrid.bgcf.names.bus_word_names`)
    for :class:`~bitgrid.terms.Edges` ``edges``."""
    from .names import bus_word_names
    words = bus_word_names(width, height)
    return {name: edges[bits[0][0]] >> bits[0][1] & ((1 << len(bits)) - 1)
            for name, bits in words.items()}


def run_vectors(client, case, steps=None):
    """Run the ``bitgrid-vectors-v1`` ``case`` through ``client``: load its program, then
    per step SET_INPUTS of the four buses, STEP 1 and GET_OUTPUTS, compared with the case.

    :returns: the list of :class:`~bitgrid.vectors.Mismatch` (empty if every step matched).
    :raises ServerError: if the server refuses the program or a step.
    """
    from bitgrid.terms import Edges
    from bitgrid.vectors import compare_step
    from .names import bus_word_names
    client.load(case.bitstream_path)
    words = bus_word_names(case.width, case.height)
    mismatches = []
    for t, (inputs, expected) in enumerate(case.steps[:steps]):
        client.set_inputs(edge_values(inputs, case.width, case.height))
        client.step(1)
        values = client.outputs()
        buses = [0, 0, 0, 0]
        for name, bits in words.items():
            side, first = bits[0]
            buses[side] |= values[name] << first
        mismatches += compare_step(t, expected, Edges(*buses), case.width, case.height)
    return mismatches
