"""The names a BGCF server reads and drives: edge bus words and port-map ports (docs/serve.md).

* Edge buses by side, as the original toolchain names them: ``N``, ``E``, ``S``, ``W``, each a
  lane vector (bit ``i`` is lane ``i``, SPEC section 1). A BGCF value is 64 bits, so a side of
  more than 64 lanes is cut into words: ``N`` holds lanes 0 to 63, ``N.1`` lanes 64 to 127,
  ``N.2`` lanes 128 to 191, and so on.
* With a port map bound to the running program (:mod:`bitgrid.ports`), its port names too:
  an input port drives its lanes, an output port reads them (unsigned, least significant bit
  first; the port map's timing, period, latency and skew, is the client's to follow, as
  ``bitgrid eval`` does). A port of more than 64 bits is cut into words as a side is: ``a``
  holds its bits 0 to 63, ``a.1`` bits 64 to 127, and so on (:func:`word_names`), so a port
  of any width is offered. A port whose name ends in ``.`` and digits (it would read as a
  word of another name) or whose words are already names is not offered.

Every name maps to a list of ``(side, lane)`` bits, value bit ``j`` being ``bits[j]``. A
client joins the words back into whole values (:func:`bitgrid.bgcf.client.join_words`).
"""

import re

from bitgrid.protocol.bgcf import BgcfError, ErrorCode
from bitgrid.terms import DIRECTIONS, E, N, S, W, Edges, side_lanes

__all__ = ["WORD_LANES", "MAX_NAME_BYTES", "Names", "word_names", "word_of", "bus_word_names",
           "boundary_cell", "unserved_ports"]

#: Most UTF-8 bytes of a name on the wire (its u8 length).
MAX_NAME_BYTES = 255

#: Lanes of one BGCF value.
WORD_LANES = 64

#: A word name ``NAME.K`` (``K`` at least 1): the lanes ``64 K`` to ``64 K + 63`` of ``NAME``.
_WORD = re.compile(r"(.+)\.([1-9][0-9]*)\Z")


def word_names(name, bits):
    """``{word name: bits}`` of a value of ``len(bits)`` bits called ``name``, cut into words
    of :data:`WORD_LANES`: ``name`` the first 64 bits, ``name.1`` the next 64, and so on.

    :param bits: the value's bits (any items, least significant first; none: no words).
    """
    bits = tuple(bits)
    return {(name if word == 0 else f"{name}.{word}"): bits[first:first + WORD_LANES]
            for word, first in enumerate(range(0, len(bits), WORD_LANES))}


def word_of(name):
    """``(base name, word index)`` of a word name: ``("a", 2)`` for ``a.2``, ``("a", 0)`` for
    ``a`` (a name without a word suffix is word 0 of itself)."""
    match = _WORD.match(name)
    return (match.group(1), int(match.group(2))) if match else (name, 0)


def bus_word_names(width, height):
    """``{name: bits}`` of the edge bus words of a ``width`` x ``height`` grid, in SPEC side
    order (``N``, ``N.1``, ..., ``E``, ...): :func:`word_names` of each side's lanes."""
    names = {}
    for side in DIRECTIONS:
        lanes = side_lanes(side, width, height)
        names.update(word_names(side.letter, [(side, lane) for lane in range(lanes)]))
    return names


def boundary_cell(side, lane, width, height):
    """``(x, y)`` of the cell that drives and reads lane ``lane`` on ``side`` (SPEC section 2)."""
    return {N: (lane, 0), S: (lane, height - 1), W: (0, lane), E: (width - 1, lane)}[side]


def unserved_ports(portmap):
    """The ports of ``portmap`` (a :class:`bitgrid.ports.PortMap`) a server cannot offer by
    name, each with why: ``[(port name, reason)]``, empty when every port is served.

    A name (or one of its words ``NAME.K``) that is an edge bus word (``N``, ``E.1``, ...) or
    a word of another port, a name that reads as a word (it ends in ``.`` and digits), and a
    word name longer than :data:`MAX_NAME_BYTES` bytes of UTF-8 cannot be told apart or sent.
    """
    buses = bus_word_names(portmap.width, portmap.height)
    taken = {"in": set(buses), "out": set(buses)}
    problems = []
    for port in portmap.ports:
        words = word_names(port.name, range(port.width))
        clash = [word for word in words if word in taken[port.direction]]
        if word_of(port.name)[1]:
            problems.append((port.name, "it reads as word "
                             f"{word_of(port.name)[1]} of {word_of(port.name)[0]}"))
        elif clash:
            what = "an edge bus word" if clash[0] in buses else "a word of another port"
            problems.append((port.name, f"{clash[0]} is {what}"))
        elif any(len(word.encode("utf-8")) > MAX_NAME_BYTES for word in words):
            problems.append((port.name, f"a name on the wire is at most {MAX_NAME_BYTES} "
                                        "bytes of UTF-8"))
        else:
            taken[port.direction].update(words)
    return problems


class Names:
    """The input and output names of a ``width`` x ``height`` grid: the bus words, and the
    ports of ``portmap`` (a :class:`bitgrid.ports.PortMap`, or None)."""

    def __init__(self, width, height, portmap=None):
        self.width, self.height = width, height
        buses = bus_word_names(width, height)
        self.inputs, self.outputs = dict(buses), dict(buses)
        self.ports = []
        if portmap is not None:
            for port in portmap.ports:
                names = self.inputs if port.direction == "in" else self.outputs
                words = word_names(port.name, [(bit.side, bit.lane) for bit in port.bits])
                if word_of(port.name)[1] or any(word in names for word in words) or \
                        any(len(word.encode("utf-8")) > MAX_NAME_BYTES for word in words):
                    continue        # not offered (unserved_ports says why)
                names.update(words)
                self.ports.append(port)

    def lanes(self, name):
        """Bits of input or output ``name`` (None if neither)."""
        bits = self.inputs.get(name, self.outputs.get(name))
        return None if bits is None else len(bits)

    def set(self, edges, items):
        """``edges`` (:class:`~bitgrid.terms.Edges`, the inputs) with every ``(name, value)``
        of ``items`` applied in order; all or nothing.

        :raises BgcfError: ``UNKNOWN_NAME`` for a name that is no input, ``TOO_WIDE`` for a
            value with bits beyond its lanes (``edges`` is not changed).
        """
        words = list(edges)
        for name, value in items:
            bits = self.inputs.get(name)
            if bits is None:
                raise BgcfError(ErrorCode.UNKNOWN_NAME,
                                f"no input named {name!r}: the inputs are "
                                f"{', '.join(self.inputs)}")
            if value >> len(bits):
                raise BgcfError(ErrorCode.TOO_WIDE, f"{name}=0x{value:x} has bits beyond its "
                                                    f"{len(bits)} lanes")
            for j, (side, lane) in enumerate(bits):
                words[side] = words[side] & ~(1 << lane) | ((value >> j) & 1) << lane
        return Edges(*words)

    def get(self, edges, name):
        """The value of output ``name`` in ``edges`` (the edge outputs)."""
        value = 0
        for j, (side, lane) in enumerate(self.outputs[name]):
            value |= ((edges[side] >> lane) & 1) << j
        return value

    def values(self, edges):
        """Every output's ``(name, value)``, bus words first (what OUTPUTS carries)."""
        return [(name, self.get(edges, name)) for name in self.outputs]

    def parity_masks(self, name):
        """``(mask A, mask B)``: the value bits of output ``name`` whose boundary cell updates in
        phase A (``x + y`` even) and in phase B."""
        masks = [0, 0]
        for j, (side, lane) in enumerate(self.outputs[name]):
            x, y = boundary_cell(side, lane, self.width, self.height)
            masks[(x + y) % 2] |= 1 << j
        return tuple(masks)

