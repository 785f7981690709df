"""The BitGrid grid: a W x H array of cells with edge buses, two-phase stepping and a
frame-addressed, CRC-checked configuration port (SPEC sections 2, 4 and 7)."""

from amaranth.hdl import Array, Cat, Const, Module, Signal
from amaranth.lib import crc, wiring
from amaranth.lib.wiring import In, Out

from ..config import FRAME_CRC, Configuration, GridSizeError, check_grid_size
from .cell import Cell, _check_storage

__all__ = ["ConfigSignature", "Grid"]


class ConfigSignature(wiring.Signature):
    """The configuration port of a ``width`` x ``height`` grid, seen from the host that drives it
    (the grid takes ``In(ConfigSignature(...))``). SPEC section 7.

    A *frame* is one LUT address ``addr`` of one row ``row`` of cells: ``4 * width`` bits where
    bit ``4x + d`` is bit ``addr`` of ``LUT[d]`` of cell ``(x, row)``.

    Loading a configuration:

    1. pulse ``begin``: the grid stops running (``valid`` falls, ``step`` is ignored) and the
       frame CRC restarts;
    2. for each of the ``16 * height`` frames, rows outer and addresses inner, present ``row``,
       ``addr`` and ``w_data`` with ``w_en`` high; the frame is written on the first cycle where
       ``w_ready`` is also high. The grid runs every frame *record* (``row`` as 2 bytes, ``addr``
       as 1 byte, then the frame as ``width / 2`` bytes, all little-endian) through CRC-32
       (:data:`bitgrid.config.FRAME_CRC`, one byte per cycle), so ``w_ready`` is low for
       ``3 + width / 2`` cycles after each write;
    3. set ``crc`` to the CRC-32 of all frame records in that order
       (:meth:`bitgrid.Configuration.frames_crc`) and hold ``commit`` high until a cycle where
       ``w_ready`` is high and ``w_en`` low. One cycle later ``valid`` rises if the CRCs match; otherwise ``error``
       rises and the grid stays stopped until a good load.

    Any frame write drops ``valid``, so a grid never runs a half-written configuration.
    Readback: ``r_data`` is the frame at the ``row`` and ``addr`` of the previous cycle
    (latency one cycle), provided the grid did not step in that cycle.

    Members
    -------
    begin : Out(1)
    row : Out(range(height))
    addr : Out(4)
    w_data : Out(4 * width)
    w_en : Out(1)
    w_ready : In(1)
    r_data : In(4 * width)
    commit : Out(1)
    crc : Out(32)
    valid : In(1)
        The configuration is complete and checked; ``step`` is honoured.
    error : In(1)
        The last commit failed its CRC check.
    """

    def __init__(self, width, height):
        self.width, self.height = check_grid_size(width, height)
        super().__init__({
            "begin": Out(1),
            "row": Out(range(height)),
            "addr": Out(4),
            "w_data": Out(4 * width),
            "w_en": Out(1),
            "w_ready": In(1),
            "r_data": In(4 * width),
            "commit": Out(1),
            "crc": Out(32),
            "valid": In(1),
            "error": In(1),
        })

    def __eq__(self, other):
        return (isinstance(other, ConfigSignature) and
                (self.width, self.height) == (other.width, other.height))

    def __repr__(self):
        return f"ConfigSignature({self.width}, {self.height})"


class Grid(wiring.Component):
    """A ``width`` x ``height`` BitGrid (SPEC sections 2, 4 and 7).

    Edge buses (SPEC section 2): bit ``x`` of :attr:`n_in` feeds input N of cell ``(x, 0)``, bit
    ``x`` of :attr:`s_in` input S of ``(x, height-1)``, bit ``y`` of :attr:`w_in` input W of
    ``(0, y)``, bit ``y`` of :attr:`e_in` input E of ``(width-1, y)``; the ``*_out`` buses carry
    the matching outputs of the same cells.

    Timing (SPEC section 4): on a clock edge where :attr:`step` is high and the configuration is
    valid, the cells of parity ``subcycle % 2`` update from their neighbours' outputs and the edge
    inputs present in that cycle, and :attr:`subcycle` increments; the new edge outputs are
    visible in the next cycle. Cells of one parity only ever update together: the grid never
    updates all cells at once. Sync reset clears every output and the counter, not the
    configuration.

    Parameters
    ----------
    width, height : int
        Size in cells, even and at least 2.
    storage : ``"ff"`` or ``"memory"``
        Configuration storage back end, see :data:`bitgrid.hdl.cell.STORAGE_KINDS`.
    init : :class:`bitgrid.Configuration` or None
        Configuration present after power-up (default: all cells unconfigured).
    counter_width : int
        Width of :attr:`subcycle` in bits (default 32; it wraps around).

    Members
    -------
    n_in, s_in : In(width)
    e_in, w_in : In(height)
    n_out, s_out : Out(width)
    e_out, w_out : Out(height)
    step : In(1)
        Run one subcycle in this cycle.
    phase : Out(1)
        Phase of the next subcycle: 0 for A (even cells), 1 for B. Equal to ``subcycle[0]``.
    subcycle : Out(counter_width)
        Subcycles run since reset.
    cfg : In(:class:`ConfigSignature`)
        Configuration port.

    Raises
    ------
    GridSizeError
        For an odd, zero or negative size.
    ValueError
        For an unknown storage kind, or an ``init`` of another size.
    """

    def __init__(self, width, height, *, storage="ff", init=None, counter_width=32):
        self._width, self._height = check_grid_size(width, height)
        self._storage = _check_storage(storage)
        if init is None:
            init = Configuration(self._width, self._height)
        if not isinstance(init, Configuration):
            raise TypeError(f"init must be a Configuration, not {init!r}")
        if (init.width, init.height) != (self._width, self._height):
            raise ValueError(f"init is a {init.width} x {init.height} configuration, the grid "
                             f"is {self._width} x {self._height}")
        if not isinstance(counter_width, int) or counter_width < 1:
            raise ValueError(f"counter_width must be a positive integer, not {counter_width!r}")
        self._init = init.copy()
        super().__init__({
            "n_in": In(width), "e_in": In(height), "s_in": In(width), "w_in": In(height),
            "n_out": Out(width), "e_out": Out(height), "s_out": Out(width), "w_out": Out(height),
            "step": In(1),
            "phase": Out(1),
            "subcycle": Out(counter_width),
            "cfg": In(ConfigSignature(width, height)),
        })

    @property
    def width(self):
        return self._width

    @property
    def height(self):
        return self._height

    @property
    def storage(self):
        return self._storage

    @property
    def record_bytes(self):
        """Bytes in one frame record: ``w_ready`` is low this many cycles after a write."""
        return 3 + self._width // 2

    def elaborate(self, platform):
        m = Module()
        w, h = self._width, self._height
        cfg = self.cfg

        # Configuration state survives reset: only a load changes it.
        valid = Signal(init=1, reset_less=True)
        error = Signal(reset_less=True)
        m.d.comb += [cfg.valid.eq(valid), cfg.error.eq(error)]

        # Frame CRC engine: one record byte per cycle.
        m.submodules.crc = crc_engine = FRAME_CRC.create()
        record = Signal(8 * self.record_bytes)
        remaining = Signal(range(self.record_bytes + 1))
        m.d.comb += [
            cfg.w_ready.eq(remaining == 0),
            crc_engine.start.eq(cfg.begin),
            crc_engine.data.eq(record[:8]),
            crc_engine.valid.eq(remaining != 0),
        ]
        with m.If(remaining != 0):
            m.d.sync += [record.eq(record >> 8), remaining.eq(remaining - 1)]
        write = Signal()
        row16 = Signal(16)
        m.d.comb += row16.eq(cfg.row)
        m.d.comb += write.eq(cfg.w_en & cfg.w_ready)
        with m.If(write):
            m.d.sync += [
                record.eq(Cat(row16, cfg.addr, Const(0, 4), cfg.w_data)),
                remaining.eq(self.record_bytes),
                valid.eq(0),
            ]
        with m.If(cfg.begin):
            m.d.sync += [valid.eq(0), error.eq(0)]
        with m.Elif(cfg.commit & cfg.w_ready & ~cfg.w_en):
            match = crc_engine.crc == cfg.crc
            m.d.sync += [valid.eq(match), error.eq(~match)]

        # Phase and subcycle counter.
        subcycle = Signal.like(self.subcycle)
        run = Signal()
        m.d.comb += [
            run.eq(self.step & valid),
            self.subcycle.eq(subcycle),
            self.phase.eq(subcycle[0]),
        ]
        with m.If(run):
            m.d.sync += subcycle.eq(subcycle + 1)

        # The cells, with per-parity enables.
        cells = [[None] * w for _ in range(h)]
        for y in range(h):
            for x in range(w):
                cell = Cell(storage=self._storage, init=self._init.word(x, y))
                m.submodules[f"cell_{x}_{y}"] = cells[y][x] = cell
                m.d.comb += [
                    cell.en.eq(run & (subcycle[0] == (x + y) % 2)),
                    cell.cfg_addr.eq(cfg.addr),
                    cell.cfg_data.eq(cfg.w_data[4 * x:4 * x + 4]),
                    cell.cfg_we.eq(write & (cfg.row == y)),
                ]
        for y in range(h):
            for x in range(w):
                i = cells[y][x].i
                m.d.comb += [
                    i[0].eq(cells[y - 1][x].o[2] if y > 0 else self.n_in[x]),
                    i[1].eq(cells[y][x + 1].o[3] if x < w - 1 else self.e_in[y]),
                    i[2].eq(cells[y + 1][x].o[0] if y < h - 1 else self.s_in[x]),
                    i[3].eq(cells[y][x - 1].o[1] if x > 0 else self.w_in[y]),
                ]
        m.d.comb += [
            self.n_out.eq(Cat(cells[0][x].o[0] for x in range(w))),
            self.s_out.eq(Cat(cells[h - 1][x].o[2] for x in range(w))),
            self.e_out.eq(Cat(cells[y][w - 1].o[1] for y in range(h))),
            self.w_out.eq(Cat(cells[y][0].o[3] for y in range(h))),
        ]

        # Readback, registered.
        rows = Array(Cat(cells[y][x].cfg_rdata for x in range(w)) for y in range(h))
        m.d.sync += cfg.r_data.eq(rows[cfg.row])
        return m
