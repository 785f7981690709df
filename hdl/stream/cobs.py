"""Consistent Overhead Byte Stuffing (COBS) in gateware, byte for byte the transformation of the
PyPI ``cobs`` package (``cobs.cobs.encode`` / ``decode``) that the host software uses, with a
zero byte as the delimiter after each packet.

* :class:`COBSDecoder`: delimited COBS bytes in, packet bytes and an end token out; latency 0.
* :class:`COBSEncoder`: packet bytes in, the encoded packet and its delimiter out; it stores
  the packet in a buffer memory (block RAM where it is marked so) before sending it.
"""

from amaranth.hdl import C, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int

from . import packet_layout

__all__ = ["COBSDecoder", "COBSEncoder", "decoded_layout"]


def decoded_layout():
    """``StructLayout({"data": 8, "end": 1, "error": 1})``: a decoded byte (``end`` low), or
    the end token of a packet (``end`` high, ``data`` 0) with ``error`` set when the packet's
    COBS encoding was cut short."""
    return data.StructLayout({"data": 8, "end": 1, "error": 1})


class COBSDecoder(wiring.Component):
    """COBS decoder: the inverse of ``cobs.cobs.encode`` on every packet between delimiters.

    Each zero byte on :attr:`i` ends a packet: after the packet's decoded bytes, :attr:`o`
    carries an end token, with ``error`` set if the delimiter cut a COBS block short (the
    condition on which ``cobs.cobs.decode`` raises). A delimiter with no byte since the last
    one is not a packet and produces nothing; an empty packet (encoded as ``01``) produces an
    end token alone. The decoder holds no data: a byte is on :attr:`o` in the cycle it is on
    :attr:`i` (latency 0, combinational), and a code byte that decodes to nothing is taken at
    once; otherwise :attr:`i` ``ready`` follows :attr:`o` ``ready``.

    Members
    -------
    i : In(stream.Signature(8))
        COBS bytes and delimiters.
    o : Out(stream.Signature(decoded_layout()))
        Decoded bytes and end tokens.
    """

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(8)),
            "o": Out(stream.Signature(decoded_layout())),
        })

    def elaborate(self, platform):
        m = Module()
        remaining = Signal(8)        # data bytes left in the current block
        zero_pending = Signal()      # the block before ended with an implicit zero
        in_packet = Signal()         # a byte has come since the last delimiter
        emit = Signal()
        byte = self.i.payload
        with m.If(byte == 0):
            m.d.comb += [emit.eq(in_packet), self.o.payload.end.eq(1),
                         self.o.payload.error.eq(remaining != 0)]
        with m.Elif(remaining == 0):
            m.d.comb += emit.eq(zero_pending)            # the zero a code byte stands for
        with m.Else():
            m.d.comb += [emit.eq(1), self.o.payload.data.eq(byte)]
        m.d.comb += [self.o.valid.eq(self.i.valid & emit),
                     self.i.ready.eq(self.o.ready | ~emit)]
        with m.If(self.i.valid & self.i.ready):
            with m.If(byte == 0):
                m.d.sync += [remaining.eq(0), zero_pending.eq(0), in_packet.eq(0)]
            with m.Elif(remaining == 0):
                m.d.sync += [remaining.eq(byte - 1), zero_pending.eq(byte != 0xFF),
                             in_packet.eq(1)]
            with m.Else():
                m.d.sync += remaining.eq(remaining - 1)
        return m


class COBSEncoder(wiring.Component):
    """COBS encoder: sends ``cobs.cobs.encode(packet)`` and a zero delimiter for each packet
    taken on :attr:`i`.

    The packet is encoded on the way into a buffer memory of ``max_packet + max_packet // 254
    + 1`` bytes (a non-zero byte one place further on, each block's code byte written into the
    slot left for it when the block ends), then the buffer is sent as it stands. :attr:`i`
    takes a byte per cycle, except one cycle after each block of 254 non-zero bytes; it is not
    ready from a packet's ``last`` byte until its delimiter has been taken. The first encoded
    byte is valid on :attr:`o` 3 cycles after the ``last`` byte was taken; then one byte every
    2 cycles (each is read from the buffer before it is offered) while :attr:`o` is ready,
    and the delimiter in the cycle after the last one is taken. Bytes of a packet beyond
    ``max_packet`` are dropped.

    Parameters
    ----------
    max_packet : int
        Longest packet in bytes, at least 1.
    attrs : dict or None
        Attributes of the buffer memory (``{"ram_style": "block"}`` puts it in block RAM).

    Members
    -------
    i : In(stream.Signature(packet_layout(8)))
        Packet bytes; ``last`` marks the end of a packet (``first`` is not used).
    o : Out(stream.Signature(8))
        Encoded bytes, each packet followed by a zero.

    Raises
    ------
    ValueError
        For a ``max_packet`` that is not a positive integer.
    """

    def __init__(self, *, max_packet, attrs=None):
        self._max_packet = check_int(max_packet, "max_packet", minimum=1)
        self._attrs = dict(attrs or {})
        super().__init__({
            "i": In(stream.Signature(packet_layout(8))),
            "o": Out(stream.Signature(8)),
        })

    @property
    def max_packet(self):
        return self._max_packet

    @property
    def depth(self):
        """Bytes of the buffer: the longest encoded packet, without its delimiter."""
        return self._max_packet + self._max_packet // 254 + 1

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        m.submodules.buffer = buffer = Memory(shape=8, depth=depth, init=[], attrs=self._attrs)
        w_port = buffer.write_port()
        r_port = buffer.read_port(domain="sync")
        code_pos = Signal(range(depth))         # slot of the current block's code byte
        w_pos = Signal(range(depth + 1), init=1)    # next free slot
        code = Signal(8)
        m.d.comb += code.eq(w_pos - code_pos)   # 1 + the block's data bytes
        send = Signal(range(depth + 1))         # buffer byte being sent
        m.d.comb += r_port.addr.eq(send)

        def write(addr, value):
            return [w_port.addr.eq(addr), w_port.data.eq(value), w_port.en.eq(1)]

        with m.FSM():
            with m.State("ENCODE"):
                byte, room = self.i.payload.data, w_pos < depth
                # (A block fills only in packets of 254 bytes or more.)
                full = (code == 0xFF) if self._max_packet >= 254 else C(0)
                with m.If(self.i.valid & full & room):
                    # A full block: its code now, and the next block's slot.
                    m.d.comb += write(code_pos, 0xFF)
                    m.d.sync += [code_pos.eq(w_pos), w_pos.eq(w_pos + 1)]
                with m.Else():
                    m.d.comb += self.i.ready.eq(1)
                    with m.If(self.i.valid & room):
                        with m.If(byte == 0):
                            m.d.comb += write(code_pos, code)
                            m.d.sync += code_pos.eq(w_pos)
                        with m.Else():
                            m.d.comb += write(w_pos, byte)
                        m.d.sync += w_pos.eq(w_pos + 1)
                    with m.If(self.i.valid & self.i.payload.last):
                        m.next = "FINAL"
            with m.State("FINAL"):
                m.d.comb += write(code_pos, code)       # the last block's code
                m.d.sync += send.eq(0)
                m.next = "READ"
            with m.State("READ"):
                m.next = "SEND"                         # r_port.data holds `send` next cycle
            with m.State("SEND"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(r_port.data)]
                with m.If(self.o.ready):
                    m.d.sync += send.eq(send + 1)
                    with m.If(send + 1 == w_pos):
                        m.next = "DELIMITER"
                    with m.Else():
                        m.next = "READ"
            with m.State("DELIMITER"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(0)]
                with m.If(self.o.ready):
                    m.d.sync += [code_pos.eq(0), w_pos.eq(1)]
                    m.next = "ENCODE"
        return m
