"""A BGCF server as a :class:`~bitgrid.host.Target`: ``bgcf:HOST:PORT`` of ``bitgrid eval``
(issue 39 item 2).

Any server (``bitgrid serve`` on any of its targets, a board behind it, another
implementation) runs rows exactly as the local targets do: :func:`bitgrid.evaluate.run_edges`
drives the four edge buses by their word names (``N``, ``N.1``, ..., :func:`bitgrid.bgcf.names.
bus_word_names`) with the port map's timing, and reads them back after the subcycles it
needs. The server's own port names are not used, so its port map (if any) does not matter.

Each :meth:`BgcfTarget.step` is one SET_INPUTS, one STEP and one GET_OUTPUTS: a round trip
per request, whatever the number of subcycles.
"""

import socket

from bitgrid.config import Configuration
from bitgrid.host import DeviceStatus, Identity, LinkError, Status, Target, TargetError
from bitgrid.protocol.bgcf import ErrorCode, Feature
from bitgrid.terms import Edges

from .client import BgcfClient, ServerError, edge_values
from .connection import DEFAULT_PORT
from .names import bus_word_names

__all__ = ["BgcfTarget", "parse_address"]

#: Most subcycles of one STEP (its u32).
_MAX_STEP = 2**32 - 1


def parse_address(text):
    """``(host, port)`` of ``HOST:PORT``, ``HOST`` or ``:PORT`` (``[::1]:PORT`` for IPv6);
    the host defaults to 127.0.0.1 and the port to :data:`~bitgrid.bgcf.DEFAULT_PORT`.

    :raises ValueError: ``bgcf:HOST:PORT: the port is a number from 1 to 65535``.
    """
    host, port = text, None
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise ValueError(f"bgcf:{text}: an IPv6 host is written [ADDRESS]:PORT")
        host, rest = text[1:close], text[close + 1:]
        port = rest[1:] if rest.startswith(":") else (None if not rest else "")
        import ipaddress
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"bgcf:{text}: [{host}] is not an IPv6 address (bgcf:[::1]:7700)") \
                from None
    elif text.count(":") == 1:
        host, port = text.split(":")
    elif ":" in text:                   # a bare IPv6 address, or a mistyped HOST:PORT
        import ipaddress
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            raise ValueError(f"bgcf:{text}: write bgcf:HOST:PORT (e.g. bgcf:127.0.0.1:7700; an "
                             "IPv6 host in brackets, bgcf:[::1]:7700)") from None
    if port is not None:
        if not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
            raise ValueError(f"bgcf:{text}: the port is a number from 1 to 65535 "
                             "(bgcf:HOST:PORT, e.g. bgcf:127.0.0.1:7700)")
        port = int(port)
    return host or "127.0.0.1", DEFAULT_PORT if port is None else port


class BgcfTarget(Target):
    """The grid of the BGCF server at ``host:port``, driven by its edge bus words.

    :param timeout: seconds to wait for the connection and each answer.
    :raises LinkError: if the server cannot be reached or does not answer HELLO.
    """

    def __init__(self, host="127.0.0.1", port=DEFAULT_PORT, *, timeout=10.0):
        self.name = f"the BGCF server at {host}:{port}"
        try:
            self._client = BgcfClient(host, port, timeout=timeout)
        except OSError as error:
            raise LinkError(f"cannot reach a BGCF server at {host}:{port} "
                            f"({error.strerror or error}): start one with bitgrid serve") \
                from None
        try:
            hello = self._call(self._client.hello)
        except BaseException:
            self._client.close()
            raise
        self.width, self.height = hello.width, hello.height
        self._features = hello.features
        self._words = bus_word_names(self.width, self.height)
        self._edges = Edges()
        self._loaded = 0

    def _call(self, call, *args):
        """``call(*args)`` with the client's errors as the host runtime's."""
        try:
            return call(*args)
        except ServerError as error:
            if error.code in (ErrorCode.BAD_PROGRAM, ErrorCode.TARGET_FAILED,
                              ErrorCode.NO_PROGRAM):
                raise TargetError(Status.NOT_VALID, f"{self.name}: {error}") from None
            raise LinkError(f"{self.name} refused a request: {error}") from None
        except (OSError, socket.timeout) as error:
            raise LinkError(f"{self.name}: {error}") from None

    def identify(self):
        return Identity(1, (0, 0), self.width, self.height, "emulator", 64,
                        Feature.READBACK if self._features & Feature.READBACK else 0, 0)

    def load(self, config):
        """LOAD_CHUNK and APPLY ``config`` (it replaces the server's program and resets it).

        :raises ValueError: for a configuration of another size than the server's grid.
        :raises TargetError: if the server refuses it.
        """
        if not isinstance(config, Configuration):
            raise TypeError(f"load needs a Configuration, not {config!r}")
        if (config.width, config.height) != (self.width, self.height):
            raise TargetError(Status.NOT_VALID,
                              f"{self.name} runs a {self.width} x {self.height} grid and the "
                              f"program is {config.width} x {config.height}: serve it with "
                              f"bitgrid serve --size {config.width}x{config.height} (or "
                              "--program PROGRAM)")
        from bitgrid.bitstream import Bitstream
        self._call(self._client.load, Bitstream(config).to_bytes())
        self._edges = Edges()
        self._loaded += 1

    def step(self, n=1, edges=None):
        if edges is not None:
            self.set_edges(edges)
        while n > 0:
            count = min(n, _MAX_STEP)
            self._call(self._client.step, count)
            n -= count
        return self.get_edges()

    def set_edges(self, edges):
        edges = Edges.coerce(edges)
        self._call(self._client.set_inputs, edge_values(edges, self.width, self.height))
        self._edges = edges

    def get_edges(self):
        values = self._call(self._client.outputs)
        buses = [0, 0, 0, 0]
        for name, bits in self._words.items():
            side, first = bits[0]
            buses[side] |= values.get(name, 0) << first
        return Edges(*buses)

    def readback(self):
        if not self._features & Feature.READBACK:
            raise TargetError(Status.NOT_VALID, f"{self.name} does not read back programs")
        from bitgrid.bitstream import Bitstream
        data = self._call(self._client.readback)
        return Bitstream.from_bytes(data, width=self.width, height=self.height).config

    def status(self):
        subcycle = 0
        if self._features & Feature.STATUS:
            subcycle = self._call(self._client.status).subcycle & 0xFFFFFFFF
        return DeviceStatus(self._loaded > 0, False, False, subcycle, 0, self._loaded,
                            0, 0, 0, 0, 0)

    def reset(self):
        """Reload the program last loaded (APPLY resets the server's grid)."""
        raise TargetError(Status.NOT_VALID, f"{self.name}: load the program again to reset "
                                            "its grid")

    def close(self):
        self._client.close()
