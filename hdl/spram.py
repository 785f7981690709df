"""One bank of the multiplexed engine's configuration memory (:class:`ConfigBank`): 4-bit words,
one port (a write or a read each cycle), read latency one cycle; an iCE40 SB_SPRAM256KA when
built for iCE40 and it fits, an inferred :class:`amaranth.lib.memory.Memory` elsewhere and in
simulation (SPEC section 7, "Engines")."""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int

__all__ = ["ConfigBank", "SPRAM_NIBBLES", "uses_spram"]

#: 4-bit words in one iCE40 SB_SPRAM256KA (16 K x 16 bits).
SPRAM_NIBBLES = 16384 * 4


def uses_spram(platform, depth, init):
    """True if a bank of ``depth`` 4-bit words with contents ``init`` becomes an SB_SPRAM256KA
    on ``platform``: an iCE40 platform (UltraPlus parts have SPRAM), a depth that fits, and no
    initial contents (SPRAM cannot be initialised)."""
    from amaranth.vendor import SiliconBluePlatform
    return (isinstance(platform, SiliconBluePlatform) and depth <= SPRAM_NIBBLES
            and not any(init) and getattr(platform, "device", "").startswith("iCE40UP"))


class ConfigBank(wiring.Component):
    """``depth`` words of 4 bits with one port.

    Timing: in a cycle where :attr:`w_en` is high, word :attr:`addr` becomes :attr:`w_data`;
    otherwise :attr:`r_data` is word :attr:`addr` in the next cycle (it holds its value in the
    cycle after a write only on the inferred memory: do not read it then).

    On an iCE40 UltraPlus platform (:func:`uses_spram`) the bank is one SB_SPRAM256KA: address
    bits 2 and up select the 16-bit word, bits 0 and 1 the nibble (``MASKWREN`` on writes, a
    4:1 multiplexer on reads). Its contents are undefined at power-up.

    Parameters
    ----------
    depth : int
        Words (at least 1).
    init : list of int
        Initial contents (default all zero).

    Members
    -------
    addr : In(range(depth)); w_data : In(4); w_en : In(1); r_data : Out(4)
    """

    def __init__(self, *, depth, init=()):
        self._depth = check_int(depth, "depth", minimum=1)
        self._init = list(init)
        super().__init__({"addr": In(range(self._depth)), "w_data": In(4), "w_en": In(1),
                          "r_data": Out(4)})

    depth = property(lambda self: self._depth)

    def elaborate(self, platform):
        m = Module()
        if uses_spram(platform, self._depth, self._init):
            address = Signal(16)
            m.d.comb += address.eq(self.addr)
            nibble, mask = Signal(2), Signal(4)
            m.d.sync += nibble.eq(address[:2])
            m.d.comb += mask.eq(Const(1, 4) << address[:2])
            data = Signal(16)
            m.submodules.spram = Instance(
                "SB_SPRAM256KA",
                i_ADDRESS=address[2:16], i_DATAIN=Cat(*[self.w_data] * 4),
                i_MASKWREN=mask, i_WREN=self.w_en,
                i_CHIPSELECT=Const(1, 1), i_CLOCK=ClockSignal("sync"), i_STANDBY=Const(0, 1),
                i_SLEEP=Const(0, 1), i_POWEROFF=Const(1, 1), o_DATAOUT=data)
            m.d.comb += self.r_data.eq(data.word_select(nibble, 4))
            return m
        m.submodules.memory = memory = Memory(shape=4, depth=self._depth, init=self._init)
        write, read = memory.write_port(), memory.read_port(domain="sync")
        m.d.comb += [write.addr.eq(self.addr), write.data.eq(self.w_data),
                     write.en.eq(self.w_en), read.addr.eq(self.addr), self.r_data.eq(read.data)]
        return m

