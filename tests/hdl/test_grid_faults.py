# amaranth: UnusedElaboratable=no
"""The test-only ``faults`` option of the gateware grid and cell (``bitgrid.hdl``): off by
default, checked, and in Amaranth's simulator the faulty grid runs exactly as the fault model
(:class:`bitgrid.faultmodel.FaultyEmulator`) at every subcycle, with the readback unchanged."""

import random
import re

import pytest

from bitgrid import Configuration, Edges
from bitgrid.faultmodel import FaultSet, FaultyEmulator
from bitgrid.hdl.cell import Cell, cell_module_name, check_cell_faults
from bitgrid.hdl.grid import Grid
from support.gateware import raises_exactly, simulate


def test_default_has_no_faults():
    assert Grid(4, 4).faults == () and Cell().faults == ()
    assert cell_module_name("ff") == "bitgrid_cell_ff"
    assert cell_module_name("memory", 0x12) == "bitgrid_cell_memory_0000000000000012"


def test_module_names():
    faults = (("lut", 3, 5), ("stuck0", 1, None))
    assert check_cell_faults(faults) == (("stuck0", 1, None), ("lut", 3, 5))
    assert cell_module_name("ff", 0, faults) == "bitgrid_cell_ff_fault_s0e_lw5"
    grid = Grid(4, 2, faults=[(1, 0, "stuck1", 2, None), (3, 1, "lut", 0, 15)],
                cells="instances")
    assert sorted(grid.cell_types()) == ["bitgrid_cell_ff", "bitgrid_cell_ff_fault_ln15",
                                         "bitgrid_cell_ff_fault_s1s"]


@pytest.mark.parametrize("faults, message", [
    ([("stuck2", 0, None)], "Cell fault kind must be one of stuck0, stuck1, lut, not "
                            "'stuck2'"),
    ([("lut", 4, 0)], "Cell fault output must be 0..3 (N, E, S, W), not 4"),
    ([("lut", 0, 16)], "A lut fault's address must be 0..15, not 16"),
    ([("stuck0", 0, 3)], "A stuck0 fault has no address, not 3"),
    ([("stuck0", 0, None), ("stuck1", 0, None)], "Output 0 cannot be stuck at both 0 and 1"),
    (["x"], "A cell fault is (kind, output, address), not 'x'"),
])
def test_cell_fault_errors(faults, message):
    with raises_exactly(ValueError, message):
        Cell(faults=faults)


def test_grid_fault_errors():
    with raises_exactly(ValueError, "Fault (4, 0, 'stuck0', 0, None): the cell is outside the "
                                    "4 x 2 grid"):
        Grid(4, 2, faults=[(4, 0, "stuck0", 0, None)])
    with raises_exactly(ValueError, "A grid fault is (x, y, kind, output, address), not 7"):
        Grid(4, 2, faults=[7])


def test_verilog_has_the_faulty_modules():
    from bitgrid.hdl.verilog import grid_verilog
    plain = grid_verilog(2, 2)
    assert plain == grid_verilog(2, 2, faults=())
    faulty = grid_verilog(2, 2, faults=[[0, 1, "stuck1", 0, None]])
    assert re.findall(r"^module (\w+)", faulty, re.M) == [
        "bitgrid_grid", "bitgrid_cell_ff", "bitgrid_cell_ff_fault_s1n"]
    assert re.findall(r"^module (\w+)", plain, re.M) == ["bitgrid_grid", "bitgrid_cell_ff"]


@pytest.mark.parametrize("storage", ["ff", "memory"])
def test_faulty_grid_runs_as_the_fault_model(storage):
    """Random LUTs, random edge streams, stuck outputs (one facing an edge), flipped LUT bits
    and a dead cell: every step's edge outputs equal :class:`FaultyEmulator` 's, from reset
    on, and not the fault-free grid's."""
    rng = random.Random(7)
    config = Configuration.random(4, 4, seed=3)
    faults = FaultSet(4, 4, ["0,0:stuck1:N", "1,2:stuck0:E", "2,1:lut:W:0", "2,1:lut:W:13",
                             "3,3:lut:S:6", "1,1:dead"], seed=2)
    dut = Grid(4, 4, storage=storage, init=config, faults=faults.hdl_faults())
    emulator = FaultyEmulator(config, faults)
    seen = []

    async def testbench(ctx):
        first = Edges(ctx.get(dut.o.n), ctx.get(dut.o.e), ctx.get(dut.o.s), ctx.get(dut.o.w))
        assert first == emulator.edge_outputs() and first.n & 1 == 1
        for _ in range(60):
            edges = Edges(rng.getrandbits(4), rng.getrandbits(4), rng.getrandbits(4),
                          rng.getrandbits(4))
            for member, word in zip("nesw", edges):
                ctx.set(getattr(dut.i, member), word)
            ctx.set(dut.step, 1)
            await ctx.tick()
            ctx.set(dut.step, 0)
            actual = Edges(ctx.get(dut.o.n), ctx.get(dut.o.e), ctx.get(dut.o.s),
                           ctx.get(dut.o.w))
            assert actual == emulator.step(edges)
            seen.append((edges, actual))
        # Readback shows the configuration as loaded (the flipped bits are on the read path).
        ctx.set(dut.cfg.row, 1)
        ctx.set(dut.cfg.addr, 0)
        await ctx.tick()
        frame = ctx.get(dut.cfg.r_data)
        assert frame == sum((int(config.luts[1, x, d]) & 1) << (4 * x + d)
                            for x in range(4) for d in range(4))

    simulate(dut, testbench, name=f"grid_faults_{storage}")
    from bitgrid import Emulator
    clean = Emulator(config)
    assert [clean.step(e) for e, _ in seen] != [a for _, a in seen]
