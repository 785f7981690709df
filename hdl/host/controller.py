"""The host controller: a grid behind the host link (:class:`HostController`), and
:func:`attach_grid`, which wires a :class:`~.engine.ProtocolEngine` to the grid it drives."""

from amaranth.hdl import (C, ClockDomain, ClockSignal, DomainRenamer, Instance, Module, ResetSignal,
                          Signal)
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.hdl.engines import make_grid

from .engine import ProtocolEngine
from .uart import UARTReceiver, UARTTransmitter, check_divisor

__all__ = ["HostController", "attach_grid"]


class HostController(wiring.Component):
    """A grid behind the host link: :class:`UARTReceiver`, :class:`ProtocolEngine`,
    :class:`UARTTransmitter` and a :class:`~bitgrid.hdl.grid.Grid`; what a board top
    instantiates.

    With ``links`` (sides such as ``"E"``), the grid is a :class:`~bitgrid.hdl.mesh.MeshTile`
    that exchanges those sides' edge lanes with a neighbouring chip (``lanes`` SDR lanes per
    direction on ``link_ports``, see :mod:`bitgrid.boards.links`): a STEP of ``n`` raises the
    tile's step budget by ``n`` and is answered when the tile has run them, as the barrier
    allows; RESET (and a load) resets the links too, so both chips are reset before a run.

    ``engine`` (:data:`bitgrid.hdl.engines.ENGINES`) chooses the grid: ``"direct"`` (a
    :class:`~bitgrid.hdl.grid.Grid` of ``storage``) or ``"multiplexed"`` (a
    :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid` of ``evaluators``); IDENTIFY reports it.
    ``staged=False``: loads go straight into the grid (no staging memory; see
    :class:`~.engine.ProtocolEngine`), for a grid whose configuration fills the device; the
    default (None) stages loads for the direct grid and not for the multiplexed engine (its
    grids are sized to fill the block RAM, with no room for a second copy).

    Members
    -------
    rx : In(1)
    tx : Out(1)
    valid : Out(1)
        The grid holds a checked configuration (for an LED).
    load_failed : Out(1)
        The last load was rejected (for an LED).
    """

    def __init__(self, width, height, *, divisor, storage="ff", init=None, links="", lanes=1,
                 link_ports=None, pipelined=False, engine="direct", evaluators=None,
                 staged=None):
        self._divisor = check_divisor(divisor)
        if links:
            if init is not None:
                raise ValueError("A controller with links loads its configuration at run time; "
                                 "init is not supported")
            from bitgrid.hdl.mesh import MeshTile
            self.grid = MeshTile(width, height, links=links, lanes=lanes, storage=storage,
                                 link_ports=link_ports, engine=engine, evaluators=evaluators)
        else:
            # pipelined: the boards' grid (per-row enables, registered readback; Grid).
            # early_step: each row registers the engine's next step (engine.step_next).
            options = {"pipelined": True, "early_step": True} if pipelined else {}
            if engine != "direct":
                # The protocol engine holds its edge inputs through a STEP: no latch needed.
                options["latch_edges"] = False
            self.grid = make_grid(width, height, engine=engine, evaluators=evaluators,
                                  storage=storage, init=init, **options)
        # A multiplexed grid keeps its configuration in memory, whatever the board's storage.
        if staged is None:
            staged = engine == "direct"
        # The pipelined grid's boards (ECP5, Gowin) also send answers from a shift register.
        self.engine = ProtocolEngine(width, height, engine=engine, staged=staged,
                                     registered_answer=bool(pipelined) and not links,
                                     storage="memory" if engine == "multiplexed" else storage)
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "valid": Out(1),
                          "load_failed": Out(1)})

    def elaborate(self, platform):
        m = Module()
        grid_rst = Signal()
        m.submodules.receiver = receiver = UARTReceiver(divisor=self._divisor)
        m.submodules.transmitter = transmitter = UARTTransmitter(divisor=self._divisor)
        m.submodules.engine = engine = self.engine
        # The grid runs in its own domain: the same clock, reset by the domain's reset or the
        # engine's (a load, RESET). A domain rather than a ResetInserter, so that the reset
        # also reaches cells that are Verilog instances (Grid's cells='instances' or 'flat': their rst port
        # is the domain's ResetSignal, which a ResetInserter does not change).
        m.domains.grid = ClockDomain("grid", local=True)
        m.submodules.grid = DomainRenamer("grid")(self.grid)
        grid = self.grid
        engine_rst = Signal()
        rst_in = Signal()
        m.d.comb += [ClockSignal("grid").eq(ClockSignal("sync")),
                     rst_in.eq(engine_rst | ResetSignal("sync", allow_reset_less=True)),
                     ResetSignal("grid").eq(grid_rst)]
        if getattr(platform, "family", None) == "ecp5":
            # The grid reset reaches every cell's output flip-flops: on ECP5 it goes through a
            # global buffer (nextpnr promotes only clocks by itself); 7 ns of general routing
            # from one flip-flop to the LSR pins of a 32 x 32 grid otherwise.
            m.submodules.grid_rst_buffer = Instance(
                "DCCA", i_CLKI=rst_in, i_CE=C(1, 1), o_CLKO=grid_rst)
        else:
            m.d.comb += grid_rst.eq(rst_in)
        m.d.comb += [receiver.rx.eq(self.rx), self.tx.eq(transmitter.tx)]
        wiring.connect(m, receiver.data, engine.rx)
        wiring.connect(m, engine.tx, transmitter.data)
        attach_grid(m, engine, grid, grid_rst)
        m.d.comb += [engine_rst.eq(engine.grid_rst),
                     self.valid.eq(grid.cfg.valid), self.load_failed.eq(engine.load_failed)]
        return m


def attach_grid(m, engine, grid, grid_rst):
    """Wire a :class:`ProtocolEngine` to the grid it drives, in module ``m``: the configuration
    port, the edge buses, the subcycle counter and stepping. ``grid`` is a
    :class:`~bitgrid.hdl.grid.Grid` or :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid`
    (``step`` follows the engine's ``step``, held until ``step_ready``; the answer waits for
    ``step_ready`` to rise again) or a
    :class:`~bitgrid.hdl.mesh.MeshTile` (each step request raises its ``limit`` by one subcycle,
    and the engine's ``busy`` holds the STEP answer until the tile has run them); ``grid_rst``
    is the grid's reset (it also clears the tile's budget). The caller adds the grid to ``m``
    in a domain with that reset."""
    wiring.connect(m, engine.cfg, grid.cfg)
    if hasattr(grid, "limit"):
        limit = Signal.like(grid.limit)
        with m.If(grid_rst):
            m.d.sync += limit.eq(0)
        with m.Elif(engine.step):
            m.d.sync += limit.eq(limit + 1)
        m.d.comb += [grid.limit.eq(limit),
                     engine.busy.eq(engine.step | (grid.subcycle != limit))]
    else:
        # A grid with the step handshake (SPEC section 7): the engine holds each request until
        # it is accepted and answers once the last subcycle's outputs are out.
        m.d.comb += [grid.step.eq(engine.step), engine.step_ready.eq(grid.step_ready),
                     engine.busy.eq(~grid.step_ready)]
        if getattr(grid, "early_step", False):
            m.d.comb += grid.step_early.eq(engine.step_next)
    m.d.comb += engine.subcycle.eq(grid.subcycle)
    wiring.connect(m, engine.edges_in, grid.i)
    wiring.connect(m, grid.o, engine.edges_out)
