# amaranth: UnusedElaboratable=no
"""The multiplexed engine (``bitgrid.hdl.multiplexed.MultiplexedGrid``, SPEC section 7):
constructor checks and signature, then Amaranth-simulator runs compared step by step with the
reference emulator (random differential runs over sizes and evaluator counts), the
configuration port's contract (load, readback with ``r_ready``, CRC gate, valid/error, a write
or ``begin`` stopping the grid), reset, the step handshake, and every shared conformance case
loaded through the configuration port and read back."""

import random

import pytest
from amaranth.hdl import Fragment, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid import Configuration, Edges, Emulator
from bitgrid.config import FRAME_CRC, frame_record
from bitgrid.hdl.grid import ConfigSignature, EdgeSignature, Grid
from bitgrid.hdl.multiplexed import MultiplexedGrid
from bitgrid.vectors import compare_step, format_mismatches
from support.conformance import conformance_cases, load_conformance
from support.gateware import raises_exactly, simulate


# --- Constructor and signature -------------------------------------------------------------------

class TestConstructor:
    def test_signature_is_the_direct_grids(self):
        for width, height in ((2, 2), (8, 6)):
            assert (MultiplexedGrid(width, height, counter_width=12).signature.members
                    == Grid(width, height, counter_width=12).signature.members)

    def test_members(self):
        dut = MultiplexedGrid(6, 4)
        assert dut.signature.members == wiring.Signature({
            "i": In(EdgeSignature(6, 4)), "o": Out(EdgeSignature(6, 4)),
            "step": In(1), "step_ready": Out(1), "phase": Out(1), "subcycle": Out(32),
            "cfg": In(ConfigSignature(6, 4)),
        }).members
        assert (dut.engine, dut.evaluators, dut.width, dut.height) == ("multiplexed", 2, 6, 4)
        Fragment.get(dut, None)

    @pytest.mark.parametrize("evaluators, message", [
        (1, "evaluators must be an integer from 2 to 4, not 1"),
        (5, "evaluators must be an integer from 2 to 4, not 5"),
    ])
    def test_wrong_evaluators(self, evaluators, message):
        with raises_exactly(ValueError, message):
            MultiplexedGrid(8, 2, evaluators=evaluators)

    def test_init_wrong_size(self):
        with raises_exactly(ValueError, "init is a 2 x 2 configuration, the grid is 4 x 2"):
            MultiplexedGrid(4, 2, init=Configuration(2, 2))

    def test_place_is_a_bijection_per_bank(self):
        """Every cell has its own (bank, slot), and the two cells of one frame byte (x = 2c,
        2c + 1) are in different banks (the frame write stores both in one cycle)."""
        for width, height, evaluators in ((8, 4, 2), (12, 2, 3), (16, 2, 8), (6, 2, 3)):
            dut = MultiplexedGrid(width, height, evaluators=evaluators)
            places = [dut.place(x, y) for y in range(height) for x in range(width)]
            assert len(set(places)) == width * height
            assert all(0 <= b < evaluators and 0 <= s < dut.slots for b, s in places)
            for c in range(width // 2):
                assert dut.place(2 * c, 0)[0] != dut.place(2 * c + 1, 0)[0]


# --- Simulation helpers (the SPEC section 7 handshakes) ------------------------------------------

def random_edges(rng, width, height):
    return Edges(rng.getrandbits(width), rng.getrandbits(height),
                 rng.getrandbits(width), rng.getrandbits(height))


def set_edges(ctx, dut, edges):
    for side, value in zip("nesw", edges):
        ctx.set(getattr(dut.i, side), value)


def get_edges(ctx, dut):
    return Edges(*(ctx.get(getattr(dut.o, side)) for side in "nesw"))


async def until(ctx, signal, limit=100000):
    """Tick until ``signal`` reads 1; returns the ticks waited."""
    for count in range(limit):
        if ctx.get(signal):
            return count
        await ctx.tick()
    raise AssertionError(f"{signal.name} stayed low for {limit} cycles")


async def step(ctx, dut, edges):
    """One subcycle through the step handshake; the edge outputs once step_ready is high
    again, and the clocks the step took (from the accepting edge)."""
    set_edges(ctx, dut, edges)
    ctx.set(dut.step, 1)
    await until(ctx, dut.step_ready)
    await ctx.tick()                                  # accepted at this edge
    ctx.set(dut.step, 0)
    clocks = 1 + await until(ctx, dut.step_ready)
    return get_edges(ctx, dut), clocks


async def write_frame(ctx, dut, row, address, frame):
    cfg = dut.cfg
    ctx.set(cfg.row, row)
    ctx.set(cfg.addr, address)
    ctx.set(cfg.w_data, frame)
    ctx.set(cfg.w_en, 1)
    await until(ctx, cfg.w_ready)
    await ctx.tick()
    ctx.set(cfg.w_en, 0)


async def begin(ctx, dut):
    ctx.set(dut.cfg.begin, 1)
    await ctx.tick()
    ctx.set(dut.cfg.begin, 0)


async def commit(ctx, dut, crc):
    ctx.set(dut.cfg.crc, crc)
    ctx.set(dut.cfg.commit, 1)
    await until(ctx, dut.cfg.w_ready)
    await ctx.tick()
    ctx.set(dut.cfg.commit, 0)


async def load(ctx, dut, config, *, crc=None):
    await begin(ctx, dut)
    for row, address, frame in config.frames():
        await write_frame(ctx, dut, row, address, frame)
    await commit(ctx, dut, config.frames_crc() if crc is None else crc)


async def readback(ctx, dut, width, height):
    """Every frame: row/addr held until a cycle where r_ready is high."""
    result = Configuration(width, height)
    for row in range(height):
        for address in range(16):
            ctx.set(dut.cfg.row, row)
            ctx.set(dut.cfg.addr, address)
            await ctx.tick()
            await until(ctx, dut.cfg.r_ready)
            result.set_frame(row, address, ctx.get(dut.cfg.r_data))
    return result


# --- Runs against the emulator -------------------------------------------------------------------

@pytest.mark.parametrize("width, height, evaluators", [
    (2, 2, 2), (4, 4, 2), (6, 4, 2), (6, 4, 3), (8, 6, 3), (8, 4, 4), (12, 4, 2), (10, 2, 5),
    # 8 and 16 groups a row: the line buffers' long stretches are memories, not registers.
    (32, 4, 2), (34, 2, 2)])
def test_random_against_emulator(width, height, evaluators):
    """A random power-up configuration and random edge inputs: the edge outputs and the
    counter after every step are the emulator's; a step takes (height + 1) * groups + 3
    clocks, groups = ceil(width / 2 / evaluators) rounded up to a power of two."""
    config = Configuration.random(width, height, seed=width * 100 + height * 10 + evaluators)
    dut = MultiplexedGrid(width, height, evaluators=evaluators, init=config)
    emulator = Emulator(config)
    rng = random.Random(evaluators)
    groups = 1
    while groups * evaluators < width // 2:
        groups *= 2
    clocks = set()

    async def testbench(ctx):
        for t in range(20):
            edges = random_edges(rng, width, height)
            actual, taken = await step(ctx, dut, edges)
            clocks.add(taken)
            assert actual == emulator.step(edges), f"step {t}"
            assert (ctx.get(dut.subcycle), ctx.get(dut.phase)) == (t + 1, (t + 1) % 2)

    simulate(dut, testbench, name=f"mux_random_{width}x{height}_{evaluators}")
    assert clocks == {(height + 1) * groups + 3} == {dut.cycles_per_subcycle}


def test_edges_held_by_the_driver_need_no_latch():
    """latch_edges=False (what the host controller builds: its protocol engine holds the edge
    inputs through a STEP): with the inputs held until step_ready, the emulator's outputs."""
    width, height = 8, 4
    config = Configuration.random(width, height, seed=12)
    dut = MultiplexedGrid(width, height, evaluators=4, init=config, latch_edges=False)
    emulator = Emulator(config)
    rng = random.Random(12)

    async def testbench(ctx):
        for t in range(12):
            edges = random_edges(rng, width, height)
            assert (await step(ctx, dut, edges))[0] == emulator.step(edges), f"step {t}"

    simulate(dut, testbench, name="mux_no_latch")


def test_step_held_high_runs_back_to_back():
    """With step held high the grid runs a subcycle after another; step_ready is high for one
    clock between them, and the outputs then are the emulator's."""
    width, height = 6, 4
    config = Configuration.random(width, height, seed=5)
    dut = MultiplexedGrid(width, height, init=config)
    emulator = Emulator(config)
    edges = Edges(0b101101, 0b1011, 0b010011, 0b0110)
    seen = []

    async def testbench(ctx):
        set_edges(ctx, dut, edges)
        ctx.set(dut.step, 1)
        for _ in range(8):
            await ctx.tick()                          # accepted
            assert ctx.get(dut.step_ready) == 0
            await until(ctx, dut.step_ready)
            seen.append((get_edges(ctx, dut), ctx.get(dut.subcycle)))

    simulate(dut, testbench, name="mux_back_to_back")
    assert seen == [(emulator.step(edges), t + 1) for t in range(8)]


def test_edge_inputs_are_taken_at_the_accepting_clock():
    """Edge inputs changed after the step was accepted do not change the subcycle."""
    width, height = 4, 4
    config = Configuration.random(width, height, seed=8)
    dut = MultiplexedGrid(width, height, init=config)
    emulator = Emulator(config)
    rng = random.Random(8)
    seen = []

    async def testbench(ctx):
        for _ in range(10):
            edges = random_edges(rng, width, height)
            set_edges(ctx, dut, edges)
            ctx.set(dut.step, 1)
            await ctx.tick()
            ctx.set(dut.step, 0)
            set_edges(ctx, dut, random_edges(rng, width, height))   # too late for this step
            await until(ctx, dut.step_ready)
            seen.append(get_edges(ctx, dut) == emulator.step(edges))

    simulate(dut, testbench, name="mux_edges_latched")
    assert seen == [True] * 10


# --- The configuration port ----------------------------------------------------------------------

def test_load_readback_run():
    """An unconfigured grid reads back zeros; a load through frames + commit sets valid, reads
    back as loaded, and runs like the emulator; a second load replaces it."""
    width, height = 8, 4
    first = Configuration.random(width, height, seed=21)
    second = Configuration.random(width, height, seed=22)
    dut = MultiplexedGrid(width, height, evaluators=2)
    emulator = Emulator(first)
    rng = random.Random(23)
    seen = {}

    async def testbench(ctx):
        seen["before"] = await readback(ctx, dut, width, height)
        await load(ctx, dut, first)
        seen["flags"] = (ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error))
        seen["first"] = await readback(ctx, dut, width, height)
        for t in range(16):
            edges = random_edges(rng, width, height)
            assert (await step(ctx, dut, edges))[0] == emulator.step(edges), f"step {t}"
        seen["after_steps"] = await readback(ctx, dut, width, height)
        await load(ctx, dut, second)
        seen["second"] = await readback(ctx, dut, width, height)
        seen["flags2"] = (ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error))

    simulate(dut, testbench, name="mux_load")
    assert seen["before"] == Configuration(width, height)
    assert seen["flags"] == (1, 0)
    assert seen["first"] == first == seen["after_steps"]
    assert seen["second"] == second
    assert seen["flags2"] == (1, 0)


def test_write_ready_timing():
    """w_ready is low for record_bytes = 3 + width / 2 cycles after a write, as on the direct
    grid; the commit checks the CRC-32 of the frame records."""
    dut = MultiplexedGrid(6, 2)
    low = []

    async def testbench(ctx):
        assert ctx.get(dut.cfg.w_ready) == 1
        await begin(ctx, dut)
        await write_frame(ctx, dut, 1, 9, 0xABCDEF)
        low.append(await until(ctx, dut.cfg.w_ready))
        await commit(ctx, dut, FRAME_CRC.compute(frame_record(1, 9, 0xABCDEF, 6)))
        low.append((ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error)))
        ctx.set(dut.cfg.row, 0)
        ctx.set(dut.cfg.addr, 3)
        await ctx.tick()
        await until(ctx, dut.cfg.r_ready)             # frame (0, 3) gathered
        ctx.set(dut.cfg.row, 1)
        ctx.set(dut.cfg.addr, 9)
        await ctx.tick()
        assert ctx.get(dut.cfg.r_ready) == 0          # the address changed: a new gather
        low.append(1 + await until(ctx, dut.cfg.r_ready))
        low.append(ctx.get(dut.cfg.r_data))

    simulate(dut, testbench, name="mux_ready")
    # w_ready low for 3 + 6 / 2 cycles; the frame gathered 2 cells a cycle, r_ready
    # 6 / 2 + 4 cycles after the address was presented.
    assert low == [6, (1, 0), 7, 0xABCDEF]


def test_bad_crc_stops_grid():
    """A wrong CRC: error, valid low, steps ignored (outputs and counter stay); a good load
    then runs on from the same outputs, as the emulator's ``load``."""
    width, height = 4, 2
    old = Configuration.random(width, height, seed=31)
    new = Configuration.random(width, height, seed=32)
    dut = MultiplexedGrid(width, height, init=old)
    emulator = Emulator(old)
    rng = random.Random(33)
    log = {}

    async def testbench(ctx):
        for _ in range(5):
            edges = random_edges(rng, width, height)
            assert (await step(ctx, dut, edges))[0] == emulator.step(edges)
        log["running"] = get_edges(ctx, dut)
        await load(ctx, dut, new, crc=new.frames_crc() ^ 0x00010000)
        log["flags"] = (ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error))
        log["stopped"] = []
        for _ in range(3):
            log["stopped"].append(((await step(ctx, dut, random_edges(rng, width, height)))[0],
                                   ctx.get(dut.subcycle)))
        await load(ctx, dut, new)
        log["flags_good"] = (ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error))
        emulator.load(new)
        for t in range(10):
            edges = random_edges(rng, width, height)
            assert (await step(ctx, dut, edges))[0] == emulator.step(edges), f"step {t}"

    simulate(dut, testbench, name="mux_badcrc")
    assert log["running"] != Edges()
    assert log["flags"] == (0, 1)
    assert log["stopped"] == [(log["running"], 5)] * 3
    assert log["flags_good"] == (1, 0)


def test_frame_write_during_a_subcycle_stops_it():
    """A frame written while a subcycle runs drops valid and abandons the subcycle: the
    counter does not advance, step_ready rises, later steps are ignored, and the frame reads
    back."""
    width, height = 8, 4
    config = Configuration.random(width, height, seed=41)
    dut = MultiplexedGrid(width, height, init=config)
    log = {}

    async def testbench(ctx):
        await step(ctx, dut, Edges(1, 2, 3, 4))
        ctx.set(dut.step, 1)
        await ctx.tick()                              # a second subcycle starts
        ctx.set(dut.step, 0)
        await write_frame(ctx, dut, 2, 7, 0x1234_5678)
        log["flags"] = (ctx.get(dut.cfg.valid), ctx.get(dut.subcycle))
        await until(ctx, dut.step_ready, limit=2)
        log["steps"] = [(await step(ctx, dut, Edges(5, 6, 7, 8)))[1:] + (ctx.get(dut.subcycle),)
                        for _ in range(2)]
        log["config"] = await readback(ctx, dut, width, height)

    simulate(dut, testbench, name="mux_write_stops")
    expected = config.copy()
    expected.set_frame(2, 7, 0x1234_5678)
    assert log["flags"] == (0, 1)
    assert log["steps"] == [(1, 1), (1, 1)]           # ignored: ready again the next clock
    assert log["config"] == expected


def _row_prefix(lanes, old, new, rows):
    """The rows ``R`` for which lanes ``0 .. R - 1`` have the ``new`` value and the others
    the ``old`` one (rows are computed in order); empty if no ``R`` fits."""
    bit = lambda value, y: (value >> y) & 1
    return [cut for cut in range(rows + 1)
            if all(bit(lanes, y) == bit(new if y < cut else old, y) for y in range(rows))]


def test_an_abandoned_subcycle_leaves_each_row_in_its_lane():
    """A frame write that abandons a subcycle after any number of clocks: once step_ready is
    high again each E and W lane is its own row's output (the rows the subcycle reached
    show the new outputs, the others the old ones), not another row's: the rotating E/W
    output registers turn the rest of the way round."""
    width, height = 8, 4
    config = Configuration.random(width, height, seed=77)
    dut = MultiplexedGrid(width, height, evaluators=2)
    rst = Signal()
    rng = random.Random(78)
    row, address = 3, 5
    frame = config.frame(row, address)
    cuts = {}

    async def testbench(ctx):
        for clocks in range(dut.cycles_per_subcycle):
            await load(ctx, dut, config)
            ctx.set(rst, 1)
            await ctx.tick()
            ctx.set(rst, 0)
            emulator = Emulator(config)
            first, second = (random_edges(rng, width, height) for _ in range(2))
            old = (await step(ctx, dut, first))[0]
            assert old == emulator.step(first)
            new = emulator.step(second)
            set_edges(ctx, dut, second)
            ctx.set(dut.step, 1)
            await ctx.tick()                          # accepted
            ctx.set(dut.step, 0)
            for _ in range(clocks):
                await ctx.tick()
            await write_frame(ctx, dut, row, address, frame)     # the same frame: abandons
            await until(ctx, dut.step_ready, limit=height + 2)
            lanes = get_edges(ctx, dut)
            await until(ctx, dut.cfg.w_ready)         # the record's CRC done before a begin
            cuts[clocks] = (_row_prefix(lanes.e, old.e, new.e, height),
                            _row_prefix(lanes.w, old.w, new.w, height))

    simulate(dut, testbench, reset=rst, name="mux_abandoned_lanes")
    assert all(e and w for e, w in cuts.values()), cuts
    # Late enough, every row was reached: all lanes new; at once, none: all old.
    assert height in cuts[dut.cycles_per_subcycle - 1][0]
    assert 0 in cuts[0][0] and 0 in cuts[0][1]


def test_reset():
    """Sync reset clears every output and the counter, keeps the configuration and valid;
    afterwards the grid runs like a freshly reset emulator (outputs in block RAM from before
    the reset read as 0)."""
    width, height = 6, 4
    loaded = Configuration.random(width, height, seed=62)
    dut = MultiplexedGrid(width, height, evaluators=3)
    rst = Signal()
    rng = random.Random(63)
    log = {}

    async def testbench(ctx):
        await load(ctx, dut, loaded)
        emulator = Emulator(loaded)
        for _ in range(7):
            edges = random_edges(rng, width, height)
            assert (await step(ctx, dut, edges))[0] == emulator.step(edges)
        log["running"] = (get_edges(ctx, dut), ctx.get(dut.subcycle))
        ctx.set(rst, 1)
        await ctx.tick()
        ctx.set(rst, 0)
        log["reset"] = (get_edges(ctx, dut), ctx.get(dut.subcycle), ctx.get(dut.phase),
                        ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error))
        log["config"] = await readback(ctx, dut, width, height)
        emulator.reset()
        for t in range(10):
            edges = random_edges(rng, width, height)
            assert (await step(ctx, dut, edges))[0] == emulator.step(edges), f"step {t}"

    simulate(dut, testbench, reset=rst, name="mux_reset")
    assert log["running"][0] != Edges() and log["running"][1] == 7
    assert log["reset"] == (Edges(), 0, 0, 1, 0)
    assert log["config"] == loaded


# --- Shared conformance cases --------------------------------------------------------------------

def _conformance_params():
    params = []
    for name in conformance_cases():
        try:
            case = load_conformance(name)
            cells = case.width * case.height
        except BaseException:
            cells = 0
        params.append(pytest.param(name, marks=pytest.mark.slow) if cells > 128 else name)
    return params


@pytest.mark.parametrize("name", _conformance_params())
def test_conformance(name):
    """Load the case's program through the configuration port, read every frame back, then
    replay every step with exact edge outputs and the counter checked, on the most
    evaluators the width allows (the random runs above cover the other counts)."""
    case = load_conformance(name)
    config = case.load_bitstream().config
    counts = [max(2, case.width // 2)]
    problems = []
    for evaluators in counts:
        dut = MultiplexedGrid(case.width, case.height, evaluators=evaluators)

        async def testbench(ctx):
            await load(ctx, dut, config)
            assert (ctx.get(dut.cfg.valid), ctx.get(dut.cfg.error)) == (1, 0)
            assert await readback(ctx, dut, case.width, case.height) == config
            for t, (inputs, expected) in enumerate(case.steps):
                actual = (await step(ctx, dut, inputs))[0]
                problems.extend(compare_step(t, expected, actual, case.width, case.height))
                assert ctx.get(dut.subcycle) == t + 1

        simulate(dut, testbench, name=f"mux_conformance_{name}_{evaluators}")
    assert len(case.steps) > 0
    assert not problems, f"{name}:\n{format_mismatches(problems)}"
