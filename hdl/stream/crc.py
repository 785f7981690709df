"""Checksums on packet streams, over any :class:`amaranth.lib.crc.Algorithm` (for instance one
of :mod:`amaranth.lib.crc.catalog`):

* :class:`CRCAppender`: the packet passes through, and its CRC follows it;
* :class:`CRCVerifier`: the packet passes through, checksum included, and each end token says
  whether the checksum matched.

The CRC is appended in the word order under which a good packet leaves the algorithm's residue
in the CRC register (:meth:`amaranth.lib.crc.Parameters.residue`): most significant word first
for an algorithm without output reflection (CRC-16/XMODEM: high byte first), least significant
first for a reflected one (CRC-32/ISO-HDLC), so the verifier needs no knowledge of where the
checksum starts.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int

from . import packet_layout

__all__ = ["CRCAppender", "CRCVerifier", "checked_layout", "crc_words"]


def crc_words(algorithm, value, data_width=8):
    """The words :class:`CRCAppender` appends for the CRC ``value`` (a list of integers)."""
    count = algorithm.crc_width // data_width
    words = [(value >> (data_width * i)) & ((1 << data_width) - 1) for i in range(count)]
    return words if algorithm.reflect_output else words[::-1]


def checked_layout(data_width=8):
    """``StructLayout({"data": data_width, "first": 1, "end": 1, "ok": 1})``: the output of
    :class:`CRCVerifier` (``ok`` is meaningful on end tokens)."""
    return data.StructLayout({"data": data_width, "first": 1, "end": 1, "ok": 1})


class _Stage(wiring.Component):
    """What both stages share: the checked ``algorithm`` and ``data_width``, and the
    ``amaranth.lib.crc`` parameters they make; ``members(data_width)`` gives the signature."""

    def __init__(self, algorithm, *, data_width=8):
        if not isinstance(algorithm, crc.Algorithm):
            raise TypeError(f"algorithm must be an amaranth.lib.crc.Algorithm, "
                            f"not {algorithm!r}")
        data_width = check_int(data_width, "data_width", minimum=1)
        if algorithm.crc_width % data_width:
            raise ValueError(f"data_width must divide the CRC width of {algorithm.crc_width} "
                             f"bits, not {data_width!r}")
        self._algorithm, self._data_width = algorithm, data_width
        self._parameters = algorithm(data_width)
        super().__init__(self.members(data_width))

    @property
    def algorithm(self):
        return self._algorithm

    @property
    def data_width(self):
        return self._data_width


class CRCAppender(_Stage):
    """Appends the CRC of each packet to it.

    Words pass from :attr:`i` to :attr:`o` in the same cycle (latency 0, ``ready`` passed
    back); the CRC of a packet runs from its ``first`` word to its ``last``. In the cycles
    after the ``last`` word is taken, the ``crc_width // data_width`` CRC words follow on
    :attr:`o` (:func:`crc_words` order), the last of them flagged ``last``, while :attr:`i` is
    not ready. A packet and its CRC are therefore ``len(packet) + crc_width // data_width``
    words on :attr:`o`, without a gap while :attr:`o` is ready, and the next packet may follow
    the last CRC word at once.

    Parameters
    ----------
    algorithm : amaranth.lib.crc.Algorithm
    data_width : int
        Bits per word; must divide the CRC width. Default 8.

    Members
    -------
    i : In(stream.Signature(packet_layout(data_width)))
    o : Out(stream.Signature(packet_layout(data_width)))

    Raises
    ------
    TypeError
        For an ``algorithm`` that is not an :class:`amaranth.lib.crc.Algorithm`.
    ValueError
        For a ``data_width`` that is not a positive integer dividing the CRC width.
    """

    @staticmethod
    def members(data_width):
        return {"i": In(stream.Signature(packet_layout(data_width))),
                "o": Out(stream.Signature(packet_layout(data_width)))}

    def elaborate(self, platform):
        m = Module()
        width = self._data_width
        count = self._algorithm.crc_width // width
        m.submodules.processor = processor = self._parameters.create()
        m.d.comb += processor.data.eq(self.i.payload.data)
        offset = Signal(range(count))
        with m.FSM():
            with m.State("DATA"):
                m.d.comb += [self.o.valid.eq(self.i.valid),
                             self.o.payload.data.eq(self.i.payload.data),
                             self.o.payload.first.eq(self.i.payload.first),
                             self.i.ready.eq(self.o.ready)]
                with m.If(self.i.valid & self.i.ready):
                    m.d.comb += [processor.valid.eq(1), processor.start.eq(self.i.payload.first)]
                    with m.If(self.i.payload.last):
                        m.d.sync += offset.eq(0)
                        m.next = "CRC"
            with m.State("CRC"):
                index = Signal.like(offset)
                m.d.comb += index.eq(offset if self._algorithm.reflect_output
                                     else count - 1 - offset)
                m.d.comb += [self.o.valid.eq(1),
                             self.o.payload.data.eq(processor.crc.word_select(index, width)),
                             self.o.payload.last.eq(offset == count - 1)]
                with m.If(self.o.ready):
                    m.d.sync += offset.eq(offset + 1)
                    with m.If(offset == count - 1):
                        m.next = "DATA"
        return m


class CRCVerifier(_Stage):
    """Checks the CRC at the end of each packet.

    Tokens pass from :attr:`i` to :attr:`o` unchanged, checksum words included, in the same
    cycle (latency 0, ``ready`` passed back). The CRC restarts with each ``first`` word and
    takes every data word (``end`` low) after it (a token with both ``first`` and ``end`` only
    restarts it, for a user that abandons a packet); on an end token, ``ok`` is set if the words
    since the ``first`` one end with their checksum (:func:`crc_words` order), that is, the CRC
    register holds the algorithm's residue. :attr:`match` says the same at any time, for the
    words taken up to the cycle before (a user that counts words instead of sending end tokens
    reads it in the cycle after the last word).

    Parameters
    ----------
    algorithm : amaranth.lib.crc.Algorithm
    data_width : int
        Bits per word; must divide the CRC width. Default 8.

    Members
    -------
    i : In(stream.Signature(StructLayout({"data": data_width, "first": 1, "end": 1})))
    o : Out(stream.Signature(checked_layout(data_width)))
    match : Out(1)

    Raises
    ------
    TypeError
        For an ``algorithm`` that is not an :class:`amaranth.lib.crc.Algorithm`.
    ValueError
        For a ``data_width`` that is not a positive integer dividing the CRC width.
    """

    @staticmethod
    def members(data_width):
        return {"i": In(stream.Signature(data.StructLayout(
                    {"data": data_width, "first": 1, "end": 1}))),
                "o": Out(stream.Signature(checked_layout(data_width))),
                "match": Out(1)}

    def elaborate(self, platform):
        m = Module()
        m.submodules.processor = processor = self._parameters.create()
        taken = self.i.valid & self.i.ready & ~self.i.payload.end
        m.d.comb += [
            processor.data.eq(self.i.payload.data),
            processor.valid.eq(taken),
            processor.start.eq(self.i.valid & self.i.ready & self.i.payload.first),
            self.match.eq(processor.match_detected),
            self.o.valid.eq(self.i.valid),
            self.o.payload.data.eq(self.i.payload.data),
            self.o.payload.first.eq(self.i.payload.first),
            self.o.payload.end.eq(self.i.payload.end),
            self.o.payload.ok.eq(self.i.payload.end & processor.match_detected),
            self.i.ready.eq(self.o.ready),
        ]
        return m
