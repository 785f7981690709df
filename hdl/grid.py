"""The BitGrid grid: a W x H array of cells with edge buses, two-phase stepping and a
frame-addressed, CRC-checked configuration port (SPEC sections 2, 4 and 7)."""

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_bool, check_int
from bitgrid.config import Configuration, check_grid_size
from bitgrid.terms import DIRECTIONS, GATEWARE_STORAGES, check_storage, side_lanes
from .cell import Cell, cell_instance, check_cell_faults
from .config_gate import config_gate, record_bytes
from .flat import flat_instance
from .latch import WordLines
from .signature import ParametricSignature

__all__ = ["EdgeSignature", "ConfigSignature", "Grid", "REPLICA", "CELL_FORMS", "check_cell_form",
           "rows_in_lut_ram"]

#: How :class:`Grid` writes its cells (its ``cells`` parameter): ``"modules"``, a
#: :class:`~bitgrid.hdl.cell.Cell` submodule each (Amaranth's simulator, synthesis);
#: ``"instances"``, an instance each of a cell module written once per distinct module
#: (:func:`bitgrid.hdl.verilog.grid_verilog`: boards, ASIC, Verilator); ``"flat"``, every cell
#: in one Verilog module of :mod:`bitgrid.hdl.flat` (Icarus Verilog).
CELL_FORMS = ("modules", "instances", "flat")


def check_cell_form(cells):
    """``cells`` if it is one of :data:`CELL_FORMS`; else :exc:`ValueError`."""
    if not isinstance(cells, str) or cells not in CELL_FORMS:
        raise ValueError(f"cells must be one of {', '.join(CELL_FORMS)}, not {cells!r}")
    return cells

#: The attribute of the pipelined grid's replicated registers (per-row copies of valid, the
#: phase and the configuration address; the readback's per-group row): identical flip-flops
#: that synthesis would merge back into one. A build marks their flip-flops ``keep``
#: (:data:`bitgrid.boards.toolflow.KEEP_REPLICAS`, a Yosys command after ``read_rtlil``).
REPLICA = {"bitgrid_replica": 1}


class EdgeSignature(ParametricSignature):
    """The four edge buses of a ``width`` x ``height`` grid in one direction, seen from the side
    that drives them (SPEC section 2): a grid takes its edge inputs as ``In(EdgeSignature(...))``
    and drives its edge outputs as ``Out(EdgeSignature(...))``. Bit ``i`` of a bus is lane ``i``
    (the word form of :class:`bitgrid.Edges`); in Verilog a member is flattened to
    ``<member>__<side>``, e.g. ``i__n``.

    Members
    -------
    n, s : Out(width)
        Lane ``x`` is column ``x`` (north and south edges).
    e, w : Out(height)
        Lane ``y`` is row ``y`` (east and west edges).

    Raises
    ------
    ValueError
        For a ``width`` or ``height`` that is not a positive integer.
    """

    parameters = ("width", "height")

    def __init__(self, width, height):
        self.width = check_int(width, "Edge width", minimum=1)
        self.height = check_int(height, "Edge height", minimum=1)
        super().__init__({side.input_name: Out(self.lanes(side)) for side in DIRECTIONS})

    def lanes(self, side):
        """Lanes of the bus on ``side`` (a letter, a :class:`~bitgrid.terms.Direction` or an
        index): ``width`` for N and S, ``height`` for E and W."""
        return side_lanes(side, self.width, self.height)


class ConfigSignature(ParametricSignature):
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
       ``w_ready`` is high and ``w_en`` low. One cycle later ``valid`` rises if the CRCs match;
       otherwise ``error`` rises and the grid stays stopped until a good load.

    Any frame write drops ``valid``, so a grid never runs a half-written configuration.
    Readback: in a cycle where ``r_ready`` is high, ``r_data`` is the frame at the ``row`` and
    ``addr`` of the previous cycle, provided the grid did not step in that cycle. The direct
    grid's ``r_ready`` is always high (latency one cycle);
    :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid` gathers a frame from its block RAM in
    ``width / 2 + 4`` cycles after ``row`` or ``addr`` change, with ``r_ready`` low meanwhile:
    hold ``row`` and ``addr`` and wait for ``r_ready``.

    Members
    -------
    begin : Out(1)
    row : Out(range(height))
    addr : Out(4)
    w_data : Out(4 * width)
    w_en : Out(1)
    w_ready : In(1)
    r_data : In(4 * width)
    r_ready : In(1)
        ``r_data`` holds the frame at the previous cycle's ``row`` and ``addr`` (reads as 1
        when not connected).
    commit : Out(1)
    crc : Out(32)
    valid : In(1)
        The configuration is complete and checked; ``step`` is honoured.
    error : In(1)
        The last commit failed its CRC check.
    """

    parameters = ("width", "height")

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
            "r_ready": In(1, init=1),
            "commit": Out(1),
            "crc": Out(32),
            "valid": In(1),
            "error": In(1),
        })


def rows_in_lut_ram(kinds, width, sites):
    """The storage kind of each row once a platform's LUT-RAM sites are handed out: the
    ``"memory"`` rows of ``kinds`` in order, ``width`` sites a row, while ``sites`` last, and
    every later ``"memory"`` row ``"ff"`` (flip-flops: the same ports and timing, SPEC section 3);
    ``sites`` None: ``kinds`` unchanged. A row is never split, so a row's cells have one
    storage kind (``docs/boards.md``, "Mixed storage by row").

    :param kinds: one kind per row, ``"ff"`` or ``"memory"``.
    :param width: cells a row.
    :param sites: LUT-RAM primitives the platform can place (``lut_ram_sites`` of
        :func:`bitgrid.boards.lutram.with_lut_ram`), or None.
    :returns: a tuple of ``len(kinds)`` kinds.
    """
    kinds = tuple(kinds)
    if sites is None:
        return kinds
    rows = sites // width
    result = []
    for kind in kinds:
        if kind == "memory":
            kind = "memory" if rows > 0 else "ff"
            rows -= 1
        result.append(kind)
    return tuple(result)


def grid_members(width, height, counter_width):
    """The members every grid engine has (SPEC section 7), as a dict for
    :class:`amaranth.lib.wiring.Component`: ``i`` and ``o`` (:class:`EdgeSignature`), ``step``,
    ``step_ready``, ``phase``, ``subcycle`` (``counter_width`` bits) and ``cfg``
    (:class:`ConfigSignature`). :class:`Grid` and
    :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid` both build on it."""
    return {
        "i": In(EdgeSignature(width, height)),
        "o": Out(EdgeSignature(width, height)),
        "step": In(1),
        "step_ready": Out(1),
        "phase": Out(1),
        "subcycle": Out(counter_width),
        "cfg": In(ConfigSignature(width, height)),
    }


class Grid(wiring.Component):
    """A ``width`` x ``height`` BitGrid (SPEC sections 2, 4 and 7).

    Edge buses (SPEC section 2): bit ``x`` of ``i.n`` feeds input N of cell ``(x, 0)``, bit
    ``x`` of ``i.s`` input S of ``(x, height-1)``, bit ``y`` of ``i.w`` input W of ``(0, y)``,
    bit ``y`` of ``i.e`` input E of ``(width-1, y)``; the buses of :attr:`o` carry the matching
    outputs of the same cells.

    Timing (SPEC section 4): on a clock edge where :attr:`step` is high and the configuration is
    valid (:attr:`step_ready` is always high in this engine), the cells of parity
    ``subcycle % 2`` update from their neighbours' outputs and the edge inputs present in that
    cycle, and :attr:`subcycle` increments; the new edge outputs are
    visible in the next cycle. Cells of one parity only ever update together: the grid never
    updates all cells at once. Sync reset clears every output and the counter, not the
    configuration.

    Parameters
    ----------
    width, height : int
        Size in cells, even and at least 2.
    storage : ``"ff"``, ``"memory"`` or ``"latch"``
        Configuration storage back end, see :data:`bitgrid.terms.GATEWARE_STORAGES` and
        :class:`Cell`. ``"latch"`` adds the row word lines of
        :class:`bitgrid.hdl.latch.WordLines` (Verilog simulators and synthesis only, not
        Amaranth's simulator).
    row_storage : sequence of ``"ff"`` / ``"memory"``, or None
        The storage kind of each row, ``height`` items (row ``y`` first is row 0), instead of
        ``storage`` for every row (default None). On a platform that limits its LUT-RAM
        primitives (``lut_ram_sites``, :func:`bitgrid.boards.lutram.with_lut_ram`) the
        ``"memory"`` rows beyond the sites keep flip-flops (:func:`rows_in_lut_ram`); the
        rows' kinds never change the grid's ports or timing.
    init : :class:`bitgrid.Configuration` or None
        Configuration present after power-up (default: all cells unconfigured).
    counter_width : int
        Width of :attr:`subcycle` in bits (default 32; it wraps around).
    cells : ``"modules"``, ``"instances"`` or ``"flat"``
        How the cells are written (:data:`CELL_FORMS`): a :class:`Cell` submodule each
        (default); an :class:`amaranth.hdl.Instance` each of a Verilog module defined elsewhere
        (:func:`~bitgrid.hdl.cell.cell_instance`), so that
        :func:`bitgrid.hdl.verilog.grid_verilog` can emit each distinct cell module once; or
        one instance of the flat module of :mod:`bitgrid.hdl.flat` for the whole grid (event-
        driven simulators; ``storage="ff"`` only, not ``pipelined``, no ``faults``; readback
        reads the configuration at ``cfg.addr`` even while the grid steps, which the port's
        contract leaves open). The last two cannot run in Amaranth's simulator.
    expose_state : bool
        Add the :attr:`state` member (every cell's outputs), for test benches that compare
        whole states (default false).
    faults : tuple
        Test only (the self-test's RTL runs, :mod:`bitgrid.bist`): injected hardware faults
        as ``(x, y, kind, output, address)`` tuples, ``kind`` ``"stuck0"``, ``"stuck1"`` or
        ``"lut"`` (see :func:`bitgrid.hdl.cell.check_cell_faults`;
        :meth:`bitgrid.faultmodel.FaultSet.hdl_faults` makes them). Default none: the grid
        and its netlist are unchanged.

    pipelined : bool
        The boards' grid (default false; :class:`bitgrid.hdl.host.HostController` builds it
        for boards): per row and segment of :data:`ENABLE_SEGMENT` cells, registered copies
        of ``valid`` and the phase make that segment's parity enables (no net to half the
        grid), and the segment's address and the row's write enable are
        registered (the frame data once), so a frame is written one cycle after it is
        accepted (inside the ``w_ready`` gap); readback is three cycles deep (cells, a
        register per group of 8 rows, :attr:`cfg` ``.r_data``) with ``r_ready`` high once
        ``row`` and ``addr`` have been held for three cycles without a step in the second
        (:class:`ConfigSignature`). Stepping is unchanged: one subcycle per clock.
    early_step : bool
        Only with ``pipelined``: add the :attr:`step_early` member, and take each segment's
        copy of the step request from it, a register per row and segment, so that the parity
        enables are one LUT after the segment's own registers and the step request's one net (from the
        driver's step register to every row) ends in flip-flops (default false: the enables
        are one LUT after the driver's ``step``, a net to ``2 x height`` LUTs). The grid
        then runs a subcycle in a cycle where :attr:`step` is high only if
        :attr:`step_early` was high in the cycle before: the driver gives the next value of
        its step register (:class:`bitgrid.hdl.host.ProtocolEngine` ``.step_next``).

    Members
    -------
    i : In(:class:`EdgeSignature`)
        Edge inputs ``i.n``, ``i.e``, ``i.s``, ``i.w`` (Verilog ``i__n`` ...).
    o : Out(:class:`EdgeSignature`)
        Edge outputs ``o.n`` ... (Verilog ``o__n`` ...).
    step : In(1)
        Run one subcycle in this cycle.
    step_ready : Out(1)
        The step handshake of SPEC section 7 shared by every engine: a step is accepted on a
        clock where :attr:`step` and :attr:`step_ready` are both high, and its edge outputs are
        on :attr:`o` (with :attr:`phase` and :attr:`subcycle` advanced) once
        :attr:`step_ready` is high again. The direct grid runs a subcycle per clock, so it
        drives the constant 1 (:class:`~bitgrid.hdl.multiplexed.MultiplexedGrid` lowers it
        while it computes).
    phase : Out(1)
        Phase of the next subcycle: 0 for A (even cells), 1 for B. Equal to ``subcycle[0]``.
    subcycle : Out(counter_width)
        Subcycles run since reset.
    cfg : In(:class:`ConfigSignature`)
        Configuration port.
    step_early : In(1)
        Only with ``early_step``: the value :attr:`step` will have in the next cycle.
    state : Out(4 * width * height)
        Only with ``expose_state``: bit ``4 * (y * width + x) + d`` is output ``d`` of cell
        ``(x, y)`` (row-major, the layout of :attr:`bitgrid.Emulator.outputs` read in that
        order).

    Raises
    ------
    GridSizeError
        For an odd, zero or negative size.
    ValueError
        For an unknown storage kind, an ``init`` of another size, a fault outside the grid
        or malformed, ``pipelined`` with ``storage="latch"``, ``early_step`` without
        ``pipelined``, or a ``row_storage`` that is not
        ``height`` kinds of :data:`bitgrid.terms.STORAGES` (or is given with ``"latch"``).
    """

    def __init__(self, width, height, *, storage="ff", init=None, counter_width=32,
                 cells="modules", expose_state=False, faults=(), pipelined=False,
                 row_storage=None, early_step=False):
        self._width, self._height = check_grid_size(width, height)
        self._storage = check_storage(storage, GATEWARE_STORAGES)
        self._row_storage = self._check_row_storage(row_storage)
        if init is None:
            init = Configuration(self._width, self._height)
        if not isinstance(init, Configuration):
            raise TypeError(f"init must be a Configuration, not {init!r}")
        if (init.width, init.height) != (self._width, self._height):
            raise ValueError(f"init is a {init.width} x {init.height} configuration, the grid "
                             f"is {self._width} x {self._height}")
        counter_width = check_int(counter_width, "counter_width", minimum=1)
        self._init = init.copy()
        self._cells = check_cell_form(cells)
        self._expose_state = check_bool(expose_state, "expose_state")
        self._pipelined = check_bool(pipelined, "pipelined")
        if self._pipelined and self._storage == "latch":
            raise ValueError("A pipelined grid needs storage 'ff' or 'memory', not 'latch'")
        self._early_step = check_bool(early_step, "early_step")
        if self._early_step and not self._pipelined:
            raise ValueError("early_step is an option of the pipelined grid (pipelined=True)")
        self._faults = self._check_faults(faults)
        if cells == "flat" and (set(self._row_storage) != {"ff"} or self._pipelined
                                or self._faults):
            raise ValueError("The flat cells (cells='flat') model storage 'ff' without "
                             "pipelining or faults")
        state = {"state": Out(4 * width * height)} if self._expose_state else {}
        early = {"step_early": In(1)} if self._early_step else {}
        super().__init__({**state, **early, **grid_members(width, height, counter_width)})

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
    def expose_state(self):
        """See the ``expose_state`` parameter."""
        return self._expose_state

    @property
    def cells(self):
        """How the cells are written, see the ``cells`` parameter."""
        return self._cells

    @property
    def pipelined(self):
        """See the ``pipelined`` parameter."""
        return self._pipelined

    @property
    def early_step(self):
        """See the ``early_step`` parameter."""
        return self._early_step

    @property
    def row_storage(self):
        """The storage kind of each row as given (``row_storage``, else ``storage`` for every
        row), a tuple of ``height`` kinds; a platform may still move ``"memory"`` rows to
        flip-flops (:meth:`storage_of_rows`)."""
        return self._row_storage

    def storage_of_rows(self, platform=None):
        """The storage kind each row is built with on ``platform``: :attr:`row_storage`, with
        the ``"memory"`` rows beyond the platform's ``lut_ram_sites`` in ``"ff"``
        (:func:`rows_in_lut_ram`; a platform without the attribute, or None, changes nothing).
        """
        return rows_in_lut_ram(self._row_storage, self._width,
                               getattr(platform, "lut_ram_sites", None))

    def _check_row_storage(self, row_storage):
        if row_storage is None:
            return (self._storage,) * self._height
        if isinstance(row_storage, (str, bytes)) or not hasattr(row_storage, "__len__"):
            raise ValueError(f"row_storage must be a sequence of {self._height} storage kinds "
                             f"(one a row), not {row_storage!r}")
        if self._storage == "latch":
            raise ValueError("row_storage cannot be given with storage 'latch' (its word "
                             "lines serve the whole grid)")
        if len(row_storage) != self._height:
            raise ValueError(f"row_storage has {len(row_storage)} kinds, the grid has "
                             f"{self._height} rows")
        return tuple(check_storage(kind) for kind in row_storage)

    def _check_faults(self, faults):
        """``{(x, y): cell faults}`` of the ``faults`` argument (see :class:`Grid`)."""
        if isinstance(faults, (str, bytes)):
            raise ValueError(f"faults must be a list of (x, y, kind, output, address), not "
                             f"{faults!r}")
        cells = {}
        for fault in faults:
            try:
                x, y, *rest = fault
            except (TypeError, ValueError):
                raise ValueError(f"A grid fault is (x, y, kind, output, address), not "
                                 f"{fault!r}") from None
            if not (isinstance(x, int) and isinstance(y, int) and 0 <= x < self._width
                    and 0 <= y < self._height):
                raise ValueError(f"Fault {fault!r}: the cell is outside the {self._width} x "
                                 f"{self._height} grid")
            cells.setdefault((x, y), []).append(tuple(rest))
        return {cell: check_cell_faults(f) for cell, f in sorted(cells.items())}

    @property
    def faults(self):
        """The test-only faults as a tuple of ``(x, y, kind, output, address)``."""
        return tuple((x, y, *f) for (x, y), faults in self._faults.items() for f in faults)

    @property
    def init(self):
        """The power-up :class:`~bitgrid.Configuration` (a copy)."""
        return self._init.copy()

    def cell_types(self):
        """One :class:`Cell` per distinct power-up configuration in the grid, keyed by
        :attr:`Cell.module_name` (a single ``bitgrid_cell_<storage>`` for the default all-zero
        ``init``)."""
        kinds = self._row_storage
        distinct = {(kinds[y], self._init.word(x, y))
                    for y in range(self._height) for x in range(self._width)}
        cells = [Cell(storage=kind, init=word) for kind, word in sorted(distinct)]
        # Faulty cells (test only) are modules of their own.
        cells += [Cell(storage=kinds[y], init=self._init.word(x, y), faults=faults)
                  for (x, y), faults in self._faults.items()]
        return {cell.module_name: cell for cell in cells}

    @property
    def record_bytes(self):
        """Bytes in one frame record: ``w_ready`` is low this many cycles after a write."""
        return record_bytes(self._width)

    def elaborate(self, platform):
        m = Module()
        w, h = self._width, self._height
        cfg = self.cfg

        # The frame CRC and the valid / error gate, shared with the multiplexed engine
        # (hdl/config_gate.py); configuration state survives reset: only a load changes it.
        gate = config_gate(m, cfg, w)
        valid, valid_next, write = gate.valid, gate.valid_next, gate.write

        # Phase and subcycle counter.
        subcycle = Signal.like(self.subcycle)
        run = Signal()
        m.d.comb += [
            self.step_ready.eq(1),
            run.eq(self.step & valid),
            self.subcycle.eq(subcycle),
            self.phase.eq(subcycle[0]),
        ]
        with m.If(run):
            m.d.sync += subcycle.eq(subcycle + 1)

        # Per-parity enables and per-row write enables: shared by the whole grid, or in a
        # pipelined grid made per row from registers (_pipeline_port).
        if self._pipelined:
            enable, row_addr, row_we, data_lines = self._pipeline_port(
                m, run, valid_next, subcycle, write)
            segment = self.ENABLE_SEGMENT
        else:
            shared = [Signal(name=f"en_{p}") for p in (0, 1)]
            m.d.comb += [en.eq(run & (subcycle[0] == p)) for p, en in enumerate(shared)]
            enable = [[shared]] * h
            segment = w
            row_addr = [[cfg.addr]] * h
            row_we = [Signal(name=f"we_{y}") for y in range(h)]
            m.d.comb += [we.eq(write & (cfg.row == y)) for y, we in enumerate(row_we)]
            data_lines = cfg.w_data
        if self._storage == "latch":
            # Word lines per row and held data lines per column (bitgrid.hdl.latch).
            m.submodules.word_lines = lines = WordLines(w, h)
            m.d.comb += [lines.write.eq(write), lines.row.eq(cfg.row), lines.addr.eq(cfg.addr),
                         lines.data.eq(cfg.w_data)]
            data_lines = lines.held

        if self._cells == "flat":
            # Every cell in one Verilog module (bitgrid.hdl.flat), its readback frame
            # registered as the cell grid's is.
            state = self.state if self._expose_state else None
            rframe = Signal(4 * w, name="rframe")
            m.submodules.cells = flat_instance(
                w, h, self._init, en=shared,
                cfg_we=write, cfg_row=cfg.row, cfg_addr=cfg.addr, cfg_data=cfg.w_data,
                i=self.i, o=self.o, rframe=rframe, state=state)
            m.d.comb += cfg.r_ready.eq(1)
            m.d.sync += cfg.r_data.eq(rframe)
            return m

        # The cells: Cell submodules, or instances of cell modules written once per distinct
        # configuration (see bitgrid.hdl.verilog); both wired the same way.
        words = [[self._init.word(x, y) for x in range(w)] for y in range(h)]
        kinds = self.storage_of_rows(platform)           # per row (docs/boards.md)
        if self._cells == "instances":
            outs = [[Signal(4, name=f"o_{x}_{y}") for x in range(w)] for y in range(h)]
            rdata = [[Signal(4, name=f"rdata_{x}_{y}") for x in range(w)] for y in range(h)]
        else:
            cells = [[Cell(storage=kinds[y], init=words[y][x],
                           faults=self._faults.get((x, y), ())) for x in range(w)]
                     for y in range(h)]
            outs = [[cell.o for cell in row] for row in cells]
            rdata = [[cell.cfg_rdata for cell in row] for row in cells]
        for y in range(h):
            for x in range(w):
                ports = {
                    "i": Cat(outs[y - 1][x][2] if y > 0 else self.i.n[x],
                             outs[y][x + 1][3] if x < w - 1 else self.i.e[y],
                             outs[y + 1][x][0] if y < h - 1 else self.i.s[x],
                             outs[y][x - 1][1] if x > 0 else self.i.w[y]),
                    "en": enable[y][x // segment][(x + y) % 2],
                    "cfg_addr": row_addr[y][x // segment],
                    "cfg_data": data_lines[4 * x:4 * x + 4],
                    **({"cfg_wl": lines.lines[16 * y:16 * y + 16]} if self._storage == "latch"
                       else {"cfg_we": row_we[y]}),
                }
                if self._cells == "instances":
                    m.submodules[f"cell_{x}_{y}"] = cell_instance(
                        kinds[y], words[y][x], o=outs[y][x], cfg_rdata=rdata[y][x],
                        faults=self._faults.get((x, y), ()), **ports)
                else:
                    cell = m.submodules[f"cell_{x}_{y}"] = cells[y][x]
                    m.d.comb += [getattr(cell, name).eq(value) for name, value in ports.items()]
        m.d.comb += [
            self.o.n.eq(Cat(outs[0][x][0] for x in range(w))),
            self.o.s.eq(Cat(outs[h - 1][x][2] for x in range(w))),
            self.o.e.eq(Cat(outs[y][w - 1][1] for y in range(h))),
            self.o.w.eq(Cat(outs[y][0][3] for y in range(h))),
        ]

        if self._expose_state:
            m.d.comb += self.state.eq(Cat(outs[y][x] for y in range(h) for x in range(w)))

        rows = [Cat(rdata[y]) for y in range(h)]
        if self._pipelined:
            self._pipeline_readback(m, rows, run)
        else:
            # Readback, registered.
            m.d.comb += cfg.r_ready.eq(1)
            m.d.sync += cfg.r_data.eq(Array(rows)[cfg.row])
        return m

    #: Rows per group of the pipelined readback's first stage.
    READBACK_GROUP = 8

    #: Cells of a row per copy of the pipelined grid's enable and address registers: each
    #: segment of a row has its own registered ``valid``, phase, (with ``early_step``) step
    #: and address, and its own parity enables, so an enable LUT drives
    #: ``ENABLE_SEGMENT / 2`` cells placed together. At 32 x 32 on the ULX3S-85F the one
    #: enable a row and parity had 6.4 ns of routing to its 16 cells, the largest part of the
    #: critical path; with the enables split, the row's one address register had 10.3 ns
    #: (docs/boards.md).
    ENABLE_SEGMENT = 8

    def _pipeline_port(self, m, run, valid_next, subcycle, write):
        """The registered configuration port and enables of a pipelined grid: per row and
        segment of :data:`ENABLE_SEGMENT` cells, copies of ``valid`` and the phase (loaded with
        their next values) and a parity enable made from them and ``step`` (one LUT driving a
        few cells placed together instead of one net to half the grid), and a copy of the
        address (the cells' read address while they do not step); the row's write enable and
        the frame data once, registered (a write lands one cycle after it is accepted, within
        the ``w_ready`` gap). Returns ``(enable[y][k][p], row_addr[y][k], row_we[y],
        data_lines)``, ``k`` the segment ``x // ENABLE_SEGMENT``."""
        w, h, cfg = self._width, self._height, self.cfg
        keep = REPLICA            # one copy per row or segment: Yosys must not merge them
        phase_next = subcycle[0] ^ run
        segments = -(-w // self.ENABLE_SEGMENT)
        enable, row_addr, row_we = [], [], []
        for y in range(h):
            row, addresses = [], []
            for k in range(segments):
                suffix = f"{y}" if segments == 1 else f"{y}_{k}"
                valid_copy = Signal(init=1, reset_less=True, name=f"valid_{suffix}",
                                    attrs=keep)
                phase_copy = Signal(name=f"phase_{suffix}", attrs=keep)
                m.d.sync += [valid_copy.eq(valid_next), phase_copy.eq(phase_next)]
                if self._early_step:
                    # The step request of this cycle, registered per segment from the
                    # driver's next value (reset_less: it follows step, not the grid's reset).
                    step_copy = Signal(reset_less=True, name=f"step_{suffix}", attrs=keep)
                    m.d.sync += step_copy.eq(self.step_early)
                else:
                    step_copy = self.step
                pair = [Signal(name=f"en_{p}_{suffix}") for p in (0, 1)]
                m.d.comb += [pair[0].eq(step_copy & valid_copy & ~phase_copy),
                             pair[1].eq(step_copy & valid_copy & phase_copy)]
                row.append(pair)
                addr = Signal(4, name=f"addr_{suffix}", attrs=keep)
                m.d.sync += addr.eq(cfg.addr)
                addresses.append(addr)
            enable.append(row)
            row_addr.append(addresses)
            we = Signal(name=f"we_{y}")
            m.d.sync += we.eq(write & (cfg.row == y))
            row_we.append(we)
        data_lines = Signal(4 * w, name="w_data_r")
        m.d.sync += data_lines.eq(cfg.w_data)
        return enable, row_addr, row_we, data_lines

    def _pipeline_readback(self, m, rows, run):
        """The pipelined readback: the cells read the registered address (cycle 1), a
        register per group of :data:`READBACK_GROUP` rows takes its row (cycle 2), ``r_data``
        takes the group's (cycle 3); ``r_ready`` is high when the ``row`` and ``addr`` of
        the last three cycles were the same and the grid did not step while the cells read."""
        cfg, h = self.cfg, self._height
        size = self.READBACK_GROUP
        groups = [rows[g:g + size] for g in range(0, h, size)]
        row_r = Signal.like(cfg.row, name="rb_row")
        addr_r = Signal(4, name="rb_addr")
        m.d.sync += [row_r.eq(cfg.row), addr_r.eq(cfg.addr)]
        high = row_r // size
        stage = []
        for g, group in enumerate(groups):
            # The row within the group: a register per group (it fans out to the group's
            # multiplexers only), equal to row_r % size.
            select = Signal(range(size), name=f"rb_sel_{g}", attrs=REPLICA)
            m.d.sync += select.eq(cfg.row % size)
            frame = Signal(len(rows[0]), name=f"rb_group_{g}")
            m.d.sync += frame.eq(Array(group)[select])
            stage.append(frame)
        high_r = Signal.like(high, name="rb_high")
        m.d.sync += [high_r.eq(high), cfg.r_data.eq(Array(stage)[high_r])]
        # r_data is the frame at the row and address of three cycles back, read by the cells
        # two cycles back: ready if those equal the previous cycle's and no step ran then.
        same = Signal(2, name="rb_same")      # x(t-1) == x(t-2), x(t-2) == x(t-3)
        ran = Signal(2, name="rb_ran")        # a step ran in t-1, t-2
        held = (cfg.row == row_r) & (cfg.addr == addr_r)
        m.d.sync += [same.eq(Cat(held, same[0])), ran.eq(Cat(run, ran[0]))]
        m.d.comb += cfg.r_ready.eq(same[0] & same[1] & ~ran[1])
