"""The Tiny Tapeout top: a small grid behind a nibble-wide pin port (issue 14; docs/asic.md,
section "Tiny Tapeout").

:class:`PinPort` is the pin protocol only: it turns nibbles strobed in on ``uio_in`` into the
grid's own configuration port (SPEC section 7: frames, the frame CRC-32 and its commit gate,
:class:`bitgrid.hdl.grid.ConfigSignature`) and into step and reset requests, and it multiplexes
the grid's edge lanes onto the 8 ``ui_in`` and 8 ``uo_out`` pins in banks of 8.
:class:`TinyTapeoutTop` joins it to a :class:`bitgrid.hdl.grid.Grid`. The protocol:

Pins (``uio_oe`` is ``0b1110_0000``)

=============  ===  ======================================================================
pin            dir  meaning
=============  ===  ======================================================================
``ui_in[7:0]`` in   edge input lanes of the selected bank
``uo_out[7:0]`` out edge output lanes of the selected bank
``uio[3:0]``   in   the nibble
``uio[4]``     in   strobe: the nibble is taken at each rising edge
``uio[5]``     out  phase of the next subcycle (0 A, 1 B)
``uio[6]``     out  valid: a checked configuration is loaded; steps run
``uio[7]``     out  error: the last load failed its CRC check
=============  ===  ======================================================================

Every input pin passes a two-flip-flop synchroniser, so the host may drive the pins
asynchronously to ``clk``; it must hold the strobe high for at least 2 clock cycles and low for
at least 2, and hold ``uio[3:0]`` and ``ui_in`` stable from the strobe's rising edge until 2
cycles after it. A strobe is then taken 3 cycles after its rising edge on the pin.

Lanes: the edge buses in the order N, E, S, W, lane 0 first (``2 * (width + height)`` bits,
padded with zeros to whole banks); bank ``b`` is bits ``8b .. 8b+7``. ``uo_out`` shows bank
``b`` of the edge outputs, and the sampled ``ui_in`` is written into bank ``b`` of the edge
inputs every cycle: select a bank first, then drive its lanes (a bank keeps its inputs while
another one is selected). A 2 x 2 grid has 8 lanes: one bank, no selection needed.

Commands (a nibble; the ones that take data are followed by it):

========  ======  =========================================================================
nibble    name    effect
========  ======  =========================================================================
``0x1``   LOAD    start a load (the grid stops, ``valid`` and ``error`` fall), then take
                  ``16 * height`` frames of ``width`` nibbles each (rows outer, LUT addresses
                  inner, each frame least significant nibble first, the frame of
                  :meth:`bitgrid.Configuration.frame`), then the 8 nibbles of the frames'
                  CRC-32 (:meth:`bitgrid.Configuration.frames_crc`, least significant
                  first); the load is committed after the last one: ``valid`` rises if the
                  CRC matches, otherwise ``error``
``0x2``   STEP    run one subcycle (ignored without a valid configuration, as the grid does)
``0x3``   BANK    the next nibble selects the lane bank (values past the last bank select
                  none: the outputs read 0)
``0x4``   RESET   clear every cell output and the subcycle counter (the configuration stays)
other     -       ignored
========  ======  =========================================================================

A LOAD, once begun, takes exactly its nibbles (no command is decoded until the last CRC nibble);
``rst_n`` aborts it. ``rst_n`` low resets everything, including ``valid``: after a reset the grid waits for a load
(on silicon the configuration flip-flops power up with random contents).
Readback is not on the pins (the grid's port has it; the pin protocol does not expose it).
"""

from amaranth.hdl import Array, Cat, Const, Module, ResetInserter, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.config import check_grid_size
from bitgrid.hdl.grid import ConfigSignature, EdgeSignature, Grid
from bitgrid.terms import DIRECTIONS, GATEWARE_STORAGES, check_storage

__all__ = ["PinPort", "TinyTapeoutTop", "COMMANDS", "lane_banks", "UIO_OE", "top_name"]

#: Command nibbles of the pin protocol.
COMMANDS = {"LOAD": 0x1, "STEP": 0x2, "BANK": 0x3, "RESET": 0x4}
#: ``uio_oe``: bits 5, 6 and 7 are outputs.
UIO_OE = 0b1110_0000


def lane_banks(width, height):
    """Banks of 8 pins the ``2 * (width + height)`` edge lanes of a grid take (ceil of /8)."""
    width, height = check_grid_size(width, height)
    return (2 * (width + height) + 7) // 8


def top_name(width, height):
    """The Tiny Tapeout module name of a ``width`` x ``height`` grid, ``tt_um_bitgrid_WxH``."""
    width, height = check_grid_size(width, height)
    return f"tt_um_bitgrid_{width}x{height}"


class PinPort(wiring.Component):
    """The pin protocol of the module docstring, for a ``width`` x ``height`` grid.

    Members
    -------
    ui_in : In(8)
    uo_out : Out(8)
    uio_in : In(8)
    uio_out, uio_oe : Out(8)
    cfg : Out(ConfigSignature(width, height))
        To the grid's configuration port.
    edges_in : Out(EdgeSignature(width, height))
        To the grid's edge inputs.
    edges_out : In(EdgeSignature(width, height))
        From the grid's edge outputs.
    step : Out(1)
        One subcycle (registered; high one cycle per STEP).
    grid_rst : Out(1)
        Reset of the grid's outputs and counter (one cycle per RESET).
    phase : In(1)
        The grid's phase.

    Raises
    ------
    GridSizeError
        For an odd, zero or negative size.
    """

    def __init__(self, width, height):
        self._width, self._height = check_grid_size(width, height)
        self._banks = lane_banks(width, height)
        super().__init__({
            "ui_in": In(8), "uo_out": Out(8), "uio_in": In(8), "uio_out": Out(8),
            "uio_oe": Out(8),
            "cfg": Out(ConfigSignature(width, height)),
            "edges_in": Out(EdgeSignature(width, height)),
            "edges_out": In(EdgeSignature(width, height)),
            "step": Out(1), "grid_rst": Out(1), "phase": In(1),
        })

    @property
    def banks(self):
        return self._banks

    def elaborate(self, platform):
        m = Module()
        w, h = self._width, self._height
        cfg = self.cfg

        # Two-flip-flop synchronisers on every input pin; strobe edge detection.
        ui_meta, ui = Signal(8), Signal(8)
        uio_meta, uio = Signal(5), Signal(5)
        strobe_last = Signal()
        m.d.sync += [ui_meta.eq(self.ui_in), ui.eq(ui_meta),
                     uio_meta.eq(self.uio_in[:5]), uio.eq(uio_meta), strobe_last.eq(uio[4])]
        take = Signal()
        nibble = Signal(4)
        m.d.comb += [take.eq(uio[4] & ~strobe_last), nibble.eq(uio[:4])]

        # Edge lanes in banks of 8: N, E, S, W, lane 0 first.
        lanes = 2 * (w + h)
        bank = Signal(4)
        inputs = Array(Signal(8, name=f"in_bank{b}") for b in range(self._banks))
        with m.If(bank < self._banks):
            m.d.sync += inputs[bank].eq(ui)
        flat_in = Cat(*inputs)
        offset = 0
        for side in DIRECTIONS:
            bus = getattr(self.edges_in, side.input_name)
            m.d.comb += bus.eq(flat_in[offset:offset + len(bus)])
            offset += len(bus)
        flat_out = Cat(*(getattr(self.edges_out, side.input_name) for side in DIRECTIONS),
                       Const(0, 8 * self._banks - lanes))
        out_banks = Array(flat_out[8 * b:8 * b + 8] for b in range(self._banks))
        with m.If(bank < self._banks):
            m.d.comb += self.uo_out.eq(out_banks[bank])

        # Status pins.
        m.d.comb += [self.uio_oe.eq(UIO_OE),
                     self.uio_out.eq(Cat(Const(0, 5), self.phase, cfg.valid, cfg.error))]

        # Configuration writes: a frame is assembled from nibbles, then written through the
        # grid's port (w_en held until w_ready); its row and address are latched with it.
        assembly = Signal(4 * w)
        count = Signal(range(max(w, 8) + 1))
        row = Signal(range(h))
        addr = Signal(4)
        pending = Signal()
        m.d.comb += cfg.w_en.eq(pending)
        with m.If(pending & cfg.w_ready):
            m.d.sync += pending.eq(0)
        crc = Signal(32)
        committing = Signal()
        m.d.comb += [cfg.commit.eq(committing), cfg.crc.eq(crc)]
        with m.If(committing & cfg.w_ready & ~cfg.w_en):
            m.d.sync += committing.eq(0)

        # The grid starts stopped: begin in the first cycle after reset.
        start = Signal(init=1)
        m.d.sync += start.eq(0)
        begin = Signal()
        m.d.comb += cfg.begin.eq(start | begin)
        m.d.sync += [begin.eq(0), self.step.eq(0), self.grid_rst.eq(0)]

        with m.FSM():
            with m.State("COMMAND"):
                with m.If(take):
                    with m.Switch(nibble):
                        with m.Case(COMMANDS["LOAD"]):
                            m.d.sync += [begin.eq(1), row.eq(0), addr.eq(0), count.eq(0),
                                         committing.eq(0)]
                            m.next = "FRAME"
                        with m.Case(COMMANDS["STEP"]):
                            m.d.sync += self.step.eq(1)
                        with m.Case(COMMANDS["BANK"]):
                            m.next = "BANK"
                        with m.Case(COMMANDS["RESET"]):
                            m.d.sync += self.grid_rst.eq(1)
            with m.State("BANK"):
                with m.If(take):
                    m.d.sync += bank.eq(nibble)
                    m.next = "COMMAND"
            with m.State("FRAME"):
                with m.If(take):
                    frame = Cat(assembly[4:], nibble)
                    m.d.sync += [assembly.eq(frame), count.eq(count + 1)]
                    with m.If(count == w - 1):
                        m.d.sync += [cfg.w_data.eq(frame), cfg.row.eq(row), cfg.addr.eq(addr),
                                     pending.eq(1), count.eq(0), addr.eq(addr + 1)]
                        with m.If(addr == 15):
                            with m.If(row == h - 1):
                                m.next = "CRC"
                            with m.Else():
                                m.d.sync += row.eq(row + 1)
            with m.State("CRC"):
                with m.If(take):
                    m.d.sync += [crc.eq(Cat(crc[4:], nibble)), count.eq(count + 1)]
                    with m.If(count == 7):
                        m.d.sync += [committing.eq(1), count.eq(0)]
                        m.next = "COMMAND"
        return m


class TinyTapeoutTop(wiring.Component):
    """A ``width`` x ``height`` :class:`~bitgrid.hdl.grid.Grid` behind a :class:`PinPort`: the
    logic of a Tiny Tapeout ``tt_um_`` module (the Verilog wrapper,
    :func:`bitgrid.asic.tinytapeout.project_verilog`, adds ``ena`` and turns ``rst_n`` into
    the sync reset).

    Parameters
    ----------
    width, height : int
        Grid size in cells, even and at least 2.
    storage : str
        Configuration storage of the cells, one of :data:`bitgrid.terms.GATEWARE_STORAGES`.

    Members
    -------
    ui_in : In(8)
    uo_out : Out(8)
    uio_in : In(8)
    uio_out, uio_oe : Out(8)

    Raises
    ------
    GridSizeError, ValueError
        For a bad size or storage kind.
    """

    def __init__(self, width, height, *, storage="ff"):
        self._width, self._height = check_grid_size(width, height)
        self._storage = check_storage(storage, GATEWARE_STORAGES)
        super().__init__({"ui_in": In(8), "uo_out": Out(8), "uio_in": In(8),
                          "uio_out": Out(8), "uio_oe": Out(8)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.port = port = PinPort(self._width, self._height)
        grid = Grid(self._width, self._height, storage=self._storage)
        m.submodules.grid = ResetInserter(port.grid_rst)(grid)
        wiring.connect(m, port.cfg, grid.cfg)
        wiring.connect(m, port.edges_in, grid.i)
        wiring.connect(m, grid.o, port.edges_out)
        m.d.comb += [grid.step.eq(port.step), port.phase.eq(grid.phase),
                     port.ui_in.eq(self.ui_in), port.uio_in.eq(self.uio_in),
                     self.uo_out.eq(port.uo_out), self.uio_out.eq(port.uio_out),
                     self.uio_oe.eq(port.uio_oe)]
        return m
