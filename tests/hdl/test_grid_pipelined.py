# amaranth: UnusedElaboratable=no
"""The pipelined direct grid (``Grid(pipelined=True)``, the boards' grid: per-row enables and
configuration registers, a three-cycle readback with ``r_ready``; SPEC sections 4 and 7)
against the reference emulator in Amaranth's simulator: every small conformance case loaded
through the configuration port and read back; random mixes of steps, idle cycles, readbacks
at changing addresses and reloads, where every cycle with ``r_ready`` high must show the frame
addressed in the previous cycle; a step in the first cycle of ``valid``."""

import random

import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid.hdl.grid import Grid
from bitgrid.vectors import compare_step, format_mismatches
from support.conformance import conformance_cases, load_conformance
from support.gateware import raises_exactly, simulate
from test_grid import (begin, get_edges, load, make_grid, random_edges, set_edges, step,
                       write_frame)


async def readback(ctx, dut, width, height, *, limit=8):
    """Every frame, holding ``row`` and ``addr`` until ``r_ready`` (at most ``limit``
    cycles)."""
    result = Configuration(width, height)
    for row in range(height):
        for address in range(16):
            ctx.set(dut.cfg.row, row)
            ctx.set(dut.cfg.addr, address)
            for _ in range(limit):
                await ctx.tick()
                if ctx.get(dut.cfg.r_ready):
                    break
            else:
                raise AssertionError(f"r_ready stayed low for {limit} cycles")
            result.set_frame(row, address, ctx.get(dut.cfg.r_data))
    return result


def test_pipelined_flag():
    """``pipelined`` is a flag; the latch store has no pipelined port."""
    with raises_exactly(ValueError, "pipelined must be True or False, not 1"):
        Grid(2, 2, pipelined=1)
    with pytest.raises(ValueError, match="'latch'"):
        Grid(2, 2, storage="latch", pipelined=True)


def _small_cases():
    return [name for name in conformance_cases()
            if (lambda c: c.width * c.height <= 128)(load_conformance(name))]


@pytest.mark.parametrize("name", _small_cases())
def test_conformance_pipelined(name):
    """Load the case through the configuration port, read it back, replay every step with
    the edge outputs and the counter checked after each."""
    case = load_conformance(name)
    config = case.load_bitstream().config
    dut = Grid(case.width, case.height, storage="memory", pipelined=True)
    problems, seen = [], {}

    async def testbench(ctx):
        await load(ctx, dut, config)
        assert (ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error)) == (1, 0)
        seen["readback"] = await readback(ctx, dut, case.width, case.height)
        for t, (inputs, expected) in enumerate(case.steps):
            actual = await step(ctx, dut, inputs)
            problems.extend(compare_step(t, expected, actual, case.width, case.height))
            assert ctx.get(dut.subcycle) == t + 1

    simulate(dut, testbench, name=f"grid_pipelined_{name}")
    assert len(case.steps) > 0
    assert seen["readback"] == config
    assert not problems, f"{name}:\n{format_mismatches(problems)}"


@pytest.mark.parametrize("storage", ["ff", "memory", "mixed"])
@pytest.mark.parametrize("width, height", [(4, 6), (2, 18), (18, 2)])
def test_random_mix_against_emulator(storage, width, height):
    """Random cycles (seeded) of steps, idle cycles and readback addresses that change or
    hold, with a reload halfway: after every cycle the edge outputs and counter equal the
    emulator's, and in every cycle where ``r_ready`` is high ``r_data`` is the frame of the
    current configuration at the previous cycle's row and address; ``r_ready`` does rise
    (2 x 18 has three readback groups, 18 x 2 three enable segments a row, the last of two
    cells)."""
    seed = 100 * width + height + len(storage)
    rng = random.Random(seed)
    configs = [Configuration.random(width, height, seed=seed + k) for k in range(2)]
    dut = make_grid(width, height, storage, init=configs[0], pipelined=True)
    emulator = Emulator(configs[0])
    problems, ready = [], [0]

    async def testbench(ctx):
        previous = (0, 0)
        for cycle in range(260):
            if cycle == 130:
                await load(ctx, dut, configs[1])
                emulator.load(configs[1])
                previous = (ctx.get(dut.cfg.row), ctx.get(dut.cfg.addr))
            if rng.random() < 0.3:
                previous = (rng.randrange(height), rng.randrange(16))
            ctx.set(dut.cfg.row, previous[0])
            ctx.set(dut.cfg.addr, previous[1])
            edges = random_edges(rng, width, height)
            if rng.random() < 0.3:
                expected = emulator.step(edges)
                actual = await step(ctx, dut, edges)
            else:
                set_edges(ctx, dut, edges)
                await ctx.tick()
                expected, actual = emulator.edge_outputs(), get_edges(ctx, dut)
            if actual != expected or ctx.get(dut.subcycle) != emulator.subcycle:
                problems.append(f"cycle {cycle}: {actual} != {expected}")
            if ctx.get(dut.cfg.r_ready):
                ready[0] += 1
                want = emulator.config.frame(*previous)
                if ctx.get(dut.cfg.r_data) != want:
                    problems.append(f"cycle {cycle}: r_data {ctx.get(dut.cfg.r_data):#x} "
                                    f"!= frame {previous} {want:#x}")

    simulate(dut, testbench, name=f"grid_pipelined_mix_{storage}_{width}x{height}")
    assert not problems, "\n".join(problems[:10])
    assert ready[0] > 20


def test_step_in_the_first_valid_cycle():
    """A step in the cycle where ``valid`` first reads 1 after a commit runs (the per-row
    copies of ``valid`` take its next value); one in the cycle after a frame write does
    not (valid has dropped)."""
    width, height = 4, 2
    config = Configuration.random(width, height, seed=77)
    dut = Grid(width, height, storage="memory", pipelined=True)
    emulator = Emulator(config)
    seen = []

    async def testbench(ctx):
        await load(ctx, dut, config)
        seen.append(ctx.get(dut.cfg.valid))
        edges = Edges(0b1010, 0b01, 0b0110, 0b10)
        seen.append(await step(ctx, dut, edges) == emulator.step(edges))
        seen.append(ctx.get(dut.subcycle))
        await begin(ctx, dut)
        await write_frame(ctx, dut, 0, 3, 0xFFFF)
        before = get_edges(ctx, dut)
        seen.append(await step(ctx, dut, Edges(0xF, 0x3, 0xF, 0x3)) == before)
        seen.append(ctx.get(dut.subcycle))

    simulate(dut, testbench, name="grid_pipelined_first_valid")
    assert seen == [1, True, 1, True, 1]


@pytest.mark.slow
def test_replicas_survive_synthesis(tmp_path):
    """ECP5 synthesis of a 4 x 16 pipelined grid with the boards' KEEP_REPLICAS command keeps
    a register of valid, of the phase and of the address per row and a row register per
    readback group (16 + 16 + 64 + 2 x 3 flip-flops); without it Yosys merges them: the check
    can fail. About 2 minutes of CPU."""
    from amaranth.back import rtlil
    from bitgrid.boards.toolflow import KEEP_REPLICAS
    from support.gateware import yosys
    (tmp_path / "g.il").write_text(rtlil.convert(
        Grid(4, 16, storage="memory", pipelined=True), name="top"))
    counts = {}
    for keep in (True, False):
        yosys(f"read_rtlil g.il; {KEEP_REPLICAS if keep else ''}; synth_ecp5 -top top; "
              f"tee -q -o s.json stat -json", cwd=tmp_path, outputs=["s.json"])
        import json
        counts[keep] = json.loads((tmp_path / "s.json").read_text())[
            "design"]["num_cells_by_type"]["TRELLIS_FF"]
    copies = 16 + 16 + 64 + 2 * 3
    assert counts[True] - counts[False] >= copies - (1 + 1 + 4 + 3)


def test_early_step_against_emulator():
    """``early_step=True`` (what the boards' host controller builds): ``step_early`` is
    driven one cycle ahead of ``step``, as the protocol engine's ``step_next``; random runs of
    steps and idle cycles (seeded) give the emulator's edge outputs and counter after every
    cycle. A ``step`` without ``step_early`` in the cycle before does not update the cells
    (the rows' copies of the request are registers): the check can fail. 18 cells a row:
    three enable segments (:data:`Grid.ENABLE_SEGMENT`), the last of two cells."""
    width, height = 18, 4
    rng = random.Random(46)
    config = Configuration.random(width, height, seed=46)
    dut = Grid(width, height, storage="memory", pipelined=True, early_step=True, init=config)
    emulator = Emulator(config)
    problems, late = [], []

    async def testbench(ctx):
        plan = [rng.random() < 0.4 for _ in range(200)] + [False]
        for cycle, stepping in enumerate(plan[:-1]):
            edges = random_edges(rng, width, height)
            set_edges(ctx, dut, edges)
            ctx.set(dut.step, stepping)
            ctx.set(dut.step_early, plan[cycle + 1])
            await ctx.tick()
            expected = emulator.step(edges) if stepping else emulator.edge_outputs()
            if get_edges(ctx, dut) != expected or ctx.get(dut.subcycle) != emulator.subcycle:
                problems.append(f"cycle {cycle}: {get_edges(ctx, dut)} != {expected}")
        before = get_edges(ctx, dut)
        ctx.set(dut.step_early, 0)
        ctx.set(dut.step, 1)
        set_edges(ctx, dut, Edges(0xF, 0x3F, 0xF, 0x3F))
        await ctx.tick()
        ctx.set(dut.step, 0)
        await ctx.tick()
        late.append(get_edges(ctx, dut) == before)

    simulate(dut, testbench, name="grid_pipelined_early_step")
    assert not problems, "\n".join(problems[:10])
    assert late == [True]


def test_early_step_needs_pipelined():
    with raises_exactly(ValueError, "early_step is an option of the pipelined grid "
                                    "(pipelined=True)"):
        Grid(2, 2, early_step=True)
    assert "step_early" in Grid(2, 2, pipelined=True, early_step=True).signature.members
    assert "step_early" not in Grid(2, 2, pipelined=True).signature.members
