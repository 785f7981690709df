"""The host link's frame path (``docs/host-protocol.md``), built from the stream stages of
:mod:`bitgrid.hdl.stream`:

* :class:`FrameReceiver`: received bytes through a :class:`~bitgrid.hdl.stream.COBSDecoder`
  and a :class:`~bitgrid.hdl.stream.CRCVerifier` (:data:`~bitgrid.protocol.host.HOST_CRC`)
  into a frame buffer, and the framing verdict of each frame;
* :class:`FrameSender`: the answer's bytes through a :class:`~bitgrid.hdl.stream.CRCAppender`
  and a :class:`~bitgrid.hdl.stream.COBSEncoder` to the line.

Both buffers are ``amaranth.lib.memory.Memory`` marked for block RAM (:data:`BLOCK_RAM`).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int
from bitgrid.hdl.stream import COBSDecoder, COBSEncoder, CRCAppender, CRCVerifier, packet_layout
from bitgrid.protocol.host import HOST_CRC, MIN_BODY, Status

__all__ = ["BLOCK_RAM", "FrameReceiver", "FrameSender", "verdict_layout"]

#: Yosys attribute that puts a memory in block RAM (SB_RAM40_4K, DP16KD, Gowin BSRAM) even when
#: it is small: LUT RAM is what the grid's cells need on ECP5 and Gowin (the Tang Nano 9K has
#: 270 RAM16SDP4 sites, a 16 x 16 grid takes 256).
BLOCK_RAM = {"ram_style": "block"}

#: The CRC algorithm of host frames (:data:`bitgrid.protocol.host.HOST_CRC` is its 8-bit form).
_ALGORITHM = HOST_CRC.algorithm


def verdict_layout(max_body):
    """``StructLayout({"status": 8, "length": range(max_body + 1)})``: a frame's framing
    verdict (:attr:`Status.OK` or one of ``FRAMING_ERRORS``) and its decoded length."""
    return data.StructLayout({"status": 8, "length": range(max_body + 1)})


class FrameReceiver(wiring.Component):
    """Decodes the frames received on :attr:`rx` into a frame buffer of ``max_body`` bytes.

    At each delimiter that ends a frame, :attr:`frame` is valid for one cycle (in the cycle the
    delimiter is on :attr:`rx`) with the frame's decoded length and its framing verdict, the
    first that applies of BAD_FRAME (a COBS block cut short), TOO_LONG (over ``max_body``
    bytes), TOO_SHORT (under ``MIN_BODY``), BAD_CRC, else OK. The decoded bytes are in the
    buffer from address 0 (read on :attr:`read_addr`, the byte is on :attr:`read_data` the next
    cycle) and the first ``head`` bytes also on :attr:`head`; both hold still until the next
    frame starts. While :attr:`busy` is high, received bytes are dropped, and so is the rest of
    any frame that one of them began, up to its delimiter (a UART has no flow control);
    :attr:`dropped` is high for one cycle for each frame dropped so (in the cycle its first byte
    is on :attr:`rx`; a bare delimiter is no frame).

    Parameters
    ----------
    max_body : int
        Frame buffer size in bytes, ``MIN_BODY`` to 65535.
    head : int
        Leading bytes kept in registers, 1 to ``max_body``. Default 6.

    Members
    -------
    rx : In(stream.Signature(8, always_ready=True))
    busy : In(1)
    dropped : Out(1)
    frame : Out(stream.Signature(verdict_layout(max_body), always_ready=True))
    head : Out(8 * head)
    read_addr : In(range(max_body))
    read_data : Out(8)
    """

    def __init__(self, *, max_body, head=6):
        self._max_body = check_int(max_body, "max_body", minimum=MIN_BODY, maximum=0xFFFF)
        self._head = check_int(head, "head", minimum=1, maximum=self._max_body)
        super().__init__({
            "rx": In(stream.Signature(8, always_ready=True)),
            "busy": In(1),
            "dropped": Out(1),
            "frame": Out(stream.Signature(verdict_layout(max_body), always_ready=True)),
            "head": Out(8 * head),
            "read_addr": In(range(max_body)),
            "read_data": Out(8),
        })

    def elaborate(self, platform):
        m = Module()
        maxb = self._max_body
        m.submodules.decoder = decoder = COBSDecoder()
        m.submodules.verifier = verifier = CRCVerifier(_ALGORITHM)
        m.submodules.buffer = buffer = Memory(shape=8, depth=maxb, init=[], attrs=BLOCK_RAM)
        write = buffer.write_port()
        read = buffer.read_port(domain="sync")
        m.d.comb += [read.addr.eq(self.read_addr), self.read_data.eq(read.data)]

        # Drop what comes while the engine is busy, and the rest of a frame begun meanwhile.
        discard = Signal()
        byte = self.rx.payload
        m.d.comb += [decoder.i.payload.eq(byte), decoder.o.ready.eq(1)]
        with m.If(self.rx.valid):
            with m.If(byte == 0):
                m.d.sync += discard.eq(0)
                m.d.comb += decoder.i.valid.eq(~discard & ~self.busy)
            with m.Elif(self.busy | discard):
                m.d.sync += discard.eq(1)
                m.d.comb += self.dropped.eq(~discard)
            with m.Else():
                m.d.comb += decoder.i.valid.eq(1)

        # Decoded bytes through the CRC into the buffer; the verdict on the end token.
        length = Signal(range(maxb + 1))
        overflow = Signal()
        token = decoder.o.payload
        m.d.comb += [verifier.i.valid.eq(decoder.o.valid), verifier.i.payload.data.eq(token.data),
                     verifier.i.payload.end.eq(token.end),
                     verifier.i.payload.first.eq(length == 0), verifier.o.ready.eq(1)]
        stored = Signal()
        m.d.comb += [stored.eq(verifier.o.valid & ~token.end & (length < maxb)),
                     write.addr.eq(length), write.data.eq(token.data), write.en.eq(stored)]
        with m.If(verifier.o.valid & ~token.end):
            with m.If(length < maxb):
                m.d.sync += length.eq(length + 1)
            with m.Else():
                m.d.sync += overflow.eq(1)
        for i in range(self._head):
            with m.If(stored & (length == i)):
                m.d.sync += self.head[8 * i:8 * i + 8].eq(token.data)
        verdict = self.frame.payload
        m.d.comb += [self.frame.valid.eq(verifier.o.valid & token.end), verdict.length.eq(length)]
        with m.If(token.error):
            m.d.comb += verdict.status.eq(Status.BAD_FRAME)
        with m.Elif(overflow):
            m.d.comb += verdict.status.eq(Status.TOO_LONG)
        with m.Elif(length < MIN_BODY):
            m.d.comb += verdict.status.eq(Status.TOO_SHORT)
        with m.Elif(~verifier.o.payload.ok):
            m.d.comb += verdict.status.eq(Status.BAD_CRC)
        with m.Else():
            m.d.comb += verdict.status.eq(Status.OK)
        with m.If(self.frame.valid):
            m.d.sync += [length.eq(0), overflow.eq(0)]
        return m


class FrameSender(wiring.Component):
    """Sends each answer body taken on :attr:`i` (``first`` on its first byte, ``last`` on
    its last) as a frame: its CRC appended (most significant byte first), COBS-encoded, and a
    delimiter.

    :attr:`i` takes a byte per cycle until ``last``, then nothing until the delimiter is out:
    the 2 CRC bytes follow in the next 2 cycles, the frame waits in the encoder's buffer
    (``max_body + 1`` bytes), and its first encoded byte is valid on :attr:`tx` 5 cycles after
    the ``last`` byte was taken; then one byte every 2 cycles while :attr:`tx` is ready, and
    the delimiter in the cycle after the last one is taken.
    :attr:`done` is high in the cycle the delimiter is taken.

    Parameters
    ----------
    max_body : int
        Longest frame body, CRC included, in bytes: ``MIN_BODY`` to 253 (a COBS block).

    Members
    -------
    i : In(stream.Signature(packet_layout(8)))
    tx : Out(stream.Signature(8))
    done : Out(1)
    """

    def __init__(self, *, max_body):
        self._max_body = check_int(max_body, "max_body", minimum=MIN_BODY, maximum=253)
        super().__init__({
            "i": In(stream.Signature(packet_layout(8))),
            "tx": Out(stream.Signature(8)),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.appender = appender = CRCAppender(_ALGORITHM)
        m.submodules.encoder = encoder = COBSEncoder(max_packet=self._max_body, attrs=BLOCK_RAM)
        wiring.connect(m, wiring.flipped(self.i), appender.i)
        wiring.connect(m, appender.o, encoder.i)
        wiring.connect(m, encoder.o, wiring.flipped(self.tx))
        # The only zero on a COBS line is the delimiter.
        m.d.comb += self.done.eq(self.tx.valid & self.tx.ready & (self.tx.payload == 0))
        return m
