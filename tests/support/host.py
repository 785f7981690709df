"""Test benches of the host gateware shared by the test files of ``bitgrid.hdl.host``."""

from amaranth.hdl import Module, ResetInserter, Signal

from bitgrid.hdl.engines import make_grid
from bitgrid.hdl.grid import Grid
from bitgrid.hdl.host import ProtocolEngine, attach_grid
from support.gateware import simulate

__all__ = ["EngineBench"]


class EngineBench:
    """A :class:`ProtocolEngine` wired to a :class:`Grid`, driven byte by byte."""

    def __init__(self, width, height, storage="ff", engine="direct", evaluators=None,
                 staged=True):
        self.engine = ProtocolEngine(width, height, storage=storage, engine=engine,
                                     staged=staged)
        self.grid = make_grid(width, height, engine=engine, evaluators=evaluators,
                              storage=storage)
        m = Module()
        rst = Signal()
        m.submodules.grid = ResetInserter(rst)(self.grid)
        m.submodules.engine = self.engine
        attach_grid(m, self.engine, self.grid, rst)     # as HostController does
        m.d.comb += rst.eq(self.engine.grid_rst)
        self.top = m

    async def exchange(self, ctx, data, answers, limit=20000):
        """Send ``data`` one byte per cycle, then collect ``answers`` frames (waiting at most
        ``limit`` cycles; with ``answers == 0``, 64 cycles to see that nothing comes)."""
        engine, out = self.engine, bytearray()
        ctx.set(engine.tx.ready, 1)
        for byte in data:
            ctx.set(engine.rx.valid, 1)
            ctx.set(engine.rx.payload, byte)
            await ctx.tick()
            assert not ctx.get(engine.tx.valid)
        ctx.set(engine.rx.valid, 0)
        for _ in range(limit if answers else 64):
            if answers and out.count(0) == answers:
                break
            await ctx.tick()
            if ctx.get(engine.tx.valid):
                out.append(ctx.get(engine.tx.payload))
        await ctx.tick()           # the delimiter is taken on this edge
        return bytes(out)

    def run(self, testbench, name):
        simulate(self.top, testbench, name=name)
