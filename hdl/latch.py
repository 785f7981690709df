"""The latch configuration store (SPEC section 7, storage kind ``"latch"``; docs/asic.md).

A cell with ``storage="latch"`` keeps its 64 configuration bits in a 16 x 4 array of
transparent-high D latches, one 4-bit latch word per LUT address. The words are written
through *word lines* shared by a row of cells and *data lines* shared by a column: the grid's
:class:`WordLines` turns a frame write into one pulse on word line ``addr`` of row ``row``,
with the frame's data held on the data lines, so no address decoder sits in any cell (the
flip-flop store needs one per cell).

Write timing (glitch-free by construction): the frame write accepted at the clock edge that
ends cycle ``t`` sets, at that edge, a one-hot row register and a one-hot address register (a
pulse: both clear at the next edge) and the data register (held until the next write, which
the grid's configuration port accepts no earlier than ``3 + width / 2`` cycles later). A word
line is the AND of one row bit and one address bit: both inputs rise together from 0 and fall
together to 0, so the word line makes exactly one pulse, one clock cycle long, during which
the data lines are already stable; they stay stable for at least 3 more cycles after the
word line closes (setup and hold). Seen at clock edges, the latch store therefore behaves
exactly as the flip-flop store: the word written in cycle ``t`` reads back from cycle
``t + 1`` on.

Latches are not an Amaranth construct: each latch word is an :class:`~amaranth.hdl.Instance`
of the Verilog module :data:`LATCH_MODULE` (:data:`LATCH_VERILOG`, which
:func:`bitgrid.hdl.verilog.grid_verilog` writes beside the cell modules). A latch-store cell
or grid runs in Verilog simulators (Icarus, Verilator) and in synthesis, not in Amaranth's
simulator.
"""

from amaranth.hdl import Cat, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int

__all__ = ["LATCH_MODULE", "LATCH_VERILOG", "latch_word", "WordLines"]

#: Verilog module name of one 4-bit latch word.
LATCH_MODULE = "bitgrid_latch"

#: Verilog of :data:`LATCH_MODULE`: ``q`` follows ``d`` while ``en`` is high and holds while it
#: is low. ``INIT`` is the power-up value in simulation (the fixed-configuration build);
#: synthesis (Yosys defines ``SYNTHESIS``) ignores it, as an ASIC latch has no power-up value.
LATCH_VERILOG = """\
module bitgrid_latch #(parameter WIDTH = 4, parameter [WIDTH-1:0] INIT = 0) (
  input wire en,
  input wire [WIDTH-1:0] d,
  output reg [WIDTH-1:0] q
);
`ifndef SYNTHESIS
  initial q = INIT;
`endif
  always @*
    if (en)
      q = d;
endmodule
"""


def latch_word(*, en, d, q, init=0):
    """An :class:`~amaranth.hdl.Instance` of :data:`LATCH_MODULE`: 4-bit latch word ``q``
    (a 4-bit signal), transparent while ``en`` (1 bit) is high, holding ``d`` (4 bits) when it
    falls; ``init`` (0..15) is its power-up value in simulation."""
    return Instance(LATCH_MODULE, p_WIDTH=4, p_INIT=check_int(init, "Latch init", minimum=0,
                                                                maximum=15),
                    i_en=en, i_d=d, o_q=q)


class WordLines(wiring.Component):
    """Word lines and data lines of a ``width`` x ``height`` latch-store grid (see the module
    docstring for the timing).

    Members
    -------
    write : In(1)
        A frame write is accepted this cycle (the grid's ``w_en & w_ready``).
    row : In(range(height))
        The frame's row.
    addr : In(4)
        The frame's LUT address.
    data : In(4 * width)
        The frame (bit ``4x + d`` is bit ``addr`` of ``LUT[d]`` of cell ``(x, row)``).
    lines : Out(16 * height)
        Word lines: bit ``16 y + a`` opens word ``a`` of every cell of row ``y``; a one-cycle
        pulse in the cycle after the write, glitch-free (the AND of two one-hot registers).
    held : Out(4 * width)
        Data lines: the frame of the last write, registered and held until the next write.

    Raises
    ------
    ValueError
        For a ``width`` or ``height`` that is not a positive integer.
    """

    def __init__(self, width, height):
        self._width = check_int(width, "Word line width", minimum=1)
        self._height = check_int(height, "Word line height", minimum=1)
        super().__init__({
            "write": In(1), "row": In(range(height)), "addr": In(4), "data": In(4 * width),
            "lines": Out(16 * height), "held": Out(4 * width),
        })

    def elaborate(self, platform):
        m = Module()
        # Reset-less, as the flip-flop store is: a reset in the cycle of a frame write does
        # not cancel the write.
        rows = Signal(self._height, reset_less=True)     # one-hot row, a one-cycle pulse
        addrs = Signal(16, reset_less=True)              # one-hot address, the same pulse
        held = Signal(4 * self._width, reset_less=True)
        m.d.sync += [rows.eq(0), addrs.eq(0)]
        with m.If(self.write):
            m.d.sync += [rows.eq(1 << self.row), addrs.eq(1 << self.addr), held.eq(self.data)]
        m.d.comb += self.held.eq(held)
        m.d.comb += self.lines.eq(Cat(addrs & rows[y].replicate(16)
                                      for y in range(self._height)))
        return m
