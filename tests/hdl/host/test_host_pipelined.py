# amaranth: UnusedElaboratable=no
"""The protocol engine driving the pipelined direct grid (``Grid(pipelined=True)``, what the
ECP5 and Gowin boards build) in Amaranth's simulator: a conformance program loaded, read back
(READBACK waits for ``r_ready``) and run through the engine (answers from a shift register,
``registered_answer``, and the grid's rows registering its ``step_next``, ``early_step``, as the
boards build them) answers byte for byte as the Python model of the
engine (``bitgrid.host.DeviceModel``)."""

from amaranth.hdl import Fragment, Module, ResetInserter, Signal

from bitgrid.hdl.grid import Grid
from bitgrid.hdl.host import HostController, ProtocolEngine
from bitgrid.hdl.host.controller import attach_grid
from bitgrid.host import run_vectors
from support.conformance import load_conformance
from support.host import EngineBench
from test_host_gateware import record_session, replay_against_model


class PipelinedBench(EngineBench):
    """:class:`EngineBench` with the pipelined grid, wired as HostController wires it."""

    def __init__(self, width, height, storage):
        self.engine = ProtocolEngine(width, height, storage=storage, registered_answer=True)
        self.grid = Grid(width, height, storage=storage, pipelined=True, early_step=True)
        m = Module()
        rst = Signal()
        m.submodules.grid = ResetInserter(rst)(self.grid)
        m.submodules.engine = self.engine
        attach_grid(m, self.engine, self.grid, rst)
        m.d.comb += rst.eq(self.engine.grid_rst)
        self.top = m


def test_conformance_and_readback_through_engine():
    """Load, run the vectors, read every frame back: every answer equals the model's, and the
    readback is the program's configuration."""
    case = load_conformance("full_adder1")
    config = case.load_bitstream().config
    seen = {}

    def script(target):
        run_vectors(target, case)
        seen["readback"] = target.readback()

    frames = record_session(case.width, case.height, script)
    bench = PipelinedBench(case.width, case.height, "memory")
    replay_against_model(bench, frames, case.width, case.height, "host_pipelined", "memory")
    assert seen["readback"] == config


def test_controller_builds_the_pipelined_grid():
    """``HostController(pipelined=True)`` builds it and an engine that answers from a shift
    register; the default builds neither."""
    for pipelined in (True, False):
        controller = HostController(2, 2, divisor=4, pipelined=pipelined)
        Fragment.get(controller, None)
        assert controller.grid.pipelined is pipelined
        assert controller.engine.registered_answer is pipelined
        assert controller.grid.early_step is pipelined
