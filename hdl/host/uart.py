"""8N1 UART receiver and transmitter for the host link (one bit every ``divisor`` clock
cycles), byte streams on the inside."""

from amaranth.hdl import C, Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int

__all__ = ["UARTReceiver", "UARTTransmitter", "check_divisor"]


def check_divisor(divisor):
    """``divisor`` if it is an integer of at least 4 (clock cycles per bit).

    :raises ValueError: otherwise.
    """
    return check_int(divisor, "divisor", minimum=4)


class UARTReceiver(wiring.Component):
    """8N1 UART receiver.

    The line is sampled in the middle of each bit, ``divisor`` cycles apart, after a start bit
    that is still low half a bit after its falling edge. A byte appears on :attr:`data` (a
    stream without back pressure: ``valid`` is high for one cycle) 3 cycles after the middle of
    its stop bit (2 of them in the input synchroniser); a low stop bit pulses :attr:`error`
    instead, and the receiver waits for the line to go high again.

    Members
    -------
    rx : In(1)
        The line (idle high); synchronised inside.
    data : Out(stream.Signature(8, always_ready=True))
    error : Out(1)
    """

    def __init__(self, *, divisor):
        self._divisor = check_divisor(divisor)
        super().__init__({
            "rx": In(1, init=1),
            "data": Out(stream.Signature(8, always_ready=True)),
            "error": Out(1),
        })

    @property
    def divisor(self):
        return self._divisor

    def elaborate(self, platform):
        m = Module()
        line = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, line, init=1)
        timer = Signal(range(self._divisor))
        bit = Signal(range(9))
        shift = Signal(8)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += timer.eq(self._divisor // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(line):
                    m.next = "IDLE"                       # a glitch, not a start bit
                with m.Else():
                    m.d.sync += [timer.eq(self._divisor - 1), bit.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [timer.eq(self._divisor - 1), bit.eq(bit + 1)]
                    with m.If(bit == 8):
                        with m.If(line):
                            m.d.sync += self.data.valid.eq(1)
                            m.next = "IDLE"
                        with m.Else():
                            m.d.sync += self.error.eq(1)
                            m.next = "BREAK"
                    with m.Else():
                        m.d.sync += shift.eq(Cat(shift[1:], line))
            with m.State("BREAK"):
                with m.If(line):
                    m.next = "IDLE"
        with m.If(self.data.valid | self.error):
            m.d.sync += [self.data.valid.eq(0), self.error.eq(0)]
        m.d.comb += self.data.payload.eq(shift)
        return m


class UARTTransmitter(wiring.Component):
    """8N1 UART transmitter: takes a byte from :attr:`data` when idle and sends start bit, 8
    data bits (least significant first) and stop bit, ``divisor`` cycles each.

    Members
    -------
    data : In(stream.Signature(8))
    tx : Out(1)
        The line (idle high).
    """

    def __init__(self, *, divisor):
        self._divisor = check_divisor(divisor)
        super().__init__({"data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    @property
    def divisor(self):
        return self._divisor

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self._divisor))
        shift = Signal(10, init=0x3FF)
        bits = Signal(range(11))
        m.d.comb += [self.tx.eq(shift[0]), self.data.ready.eq(bits == 0)]
        with m.If(bits == 0):
            with m.If(self.data.valid):
                m.d.sync += [shift.eq(Cat(C(0, 1), self.data.payload, C(1, 1))), bits.eq(10),
                             timer.eq(self._divisor - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [shift.eq(Cat(shift[1:], C(1, 1))), bits.eq(bits - 1),
                         timer.eq(self._divisor - 1)]
        return m
