# amaranth: UnusedElaboratable=no
"""The latch configuration store (``storage="latch"``, ``bitgrid.hdl.latch``, SPEC section 7):
the word lines in Amaranth's simulator against a model of the one-cycle pulse, the whole grid
on Icarus and Verilator against the shared conformance vectors and the reference emulator
(loaded through the configuration port, with readback), and a bounded Yosys proof that the
latch grid and the flip-flop grid have the same outputs for every input sequence."""

import os
import random

import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid import Configuration, Edges, Emulator, sim
from bitgrid.cell import PASS_THROUGH
from bitgrid.hdl.cell import Cell, cell_module_name
from bitgrid.hdl.grid import Grid
from bitgrid.hdl.latch import LATCH_MODULE, WordLines
from bitgrid.hdl.verilog import grid_verilog
from support.conformance import conformance_cases, load_conformance
from support.gateware import raises_exactly, simulate, yosys

MARKS = {"icarus": pytest.mark.icarus, "verilator": pytest.mark.verilator}


# --- Constructors ------------------------------------------------------------------------------

def test_cell_members():
    """A latch cell takes 16 word lines instead of a write enable: no decoder in the cell."""
    dut = Cell(storage="latch")
    assert dut.signature.members == wiring.Signature({
        "i": In(4), "o": Out(4), "en": In(1), "cfg_addr": In(4), "cfg_data": In(4),
        "cfg_wl": In(16), "cfg_rdata": Out(4)}).members
    assert cell_module_name("latch") == "bitgrid_cell_latch"
    assert cell_module_name("latch", 0xAB) == "bitgrid_cell_latch_00000000000000ab"


def test_grid_verilog_has_latch_module():
    """The Verilog of a latch grid defines the latch word module once and instantiates it 16
    times per cell module; a flip-flop grid has none."""
    text = grid_verilog(2, 2, storage="latch")
    assert text.count(f"module {LATCH_MODULE} ") == 1
    assert text.count(f"  {LATCH_MODULE} #(") == 16
    assert LATCH_MODULE not in grid_verilog(2, 2, storage="ff")


def test_pipelined_latch_refused():
    with raises_exactly(ValueError, "A pipelined grid needs storage 'ff' or 'memory', not "
                                    "'latch'"):
        Grid(2, 2, storage="latch", pipelined=True)


# --- Word lines in Amaranth's simulator ----------------------------------------------------------

def test_word_lines_pulse():
    """Random frame writes (seeded): after a write in cycle t, exactly word line 16 * row +
    addr is high in cycle t + 1 and none in other cycles; the data lines hold the frame from
    t + 1 until the next write. The model is written out here, cycle by cycle."""
    width, height = 4, 6
    dut = WordLines(width, height)
    rng = random.Random(0x1A7C)
    writes = [(rng.random() < 0.4, rng.randrange(height), rng.randrange(16),
               rng.getrandbits(4 * width)) for _ in range(200)]
    seen = []

    async def testbench(ctx):
        for write, row, addr, data in writes:
            ctx.set(dut.write, write)
            ctx.set(dut.row, row)
            ctx.set(dut.addr, addr)
            ctx.set(dut.data, data)
            await ctx.tick()
            seen.append((ctx.get(dut.lines), ctx.get(dut.held)))

    simulate(dut, testbench, name="latch_word_lines")
    held = 0
    for (write, row, addr, data), (lines, got_held) in zip(writes, seen):
        if write:
            held = data
        assert lines == ((1 << (16 * row + addr)) if write else 0)
        assert got_held == held


def test_word_lines_elaborate():
    Fragment.get(Grid(2, 4, storage="latch"), None)


# --- Verilog simulators ------------------------------------------------------------------------

#: Conformance cases run with the latch store: every case of at most this many cells.
MAX_CELLS = 128


#: Grid sizes of the default (fast) set: one build on Icarus (8 x 8, about 30 s more at load 6,
#: runs in the slow set's test_conformance_icarus_all).
FAST_SIZES = ((2, 2),)

#: Grid sizes of the Verilator run (slow set): one build each.
VERILATOR_SIZES = ((2, 2), (8, 8))


def _cases(sizes=None):
    """The conformance cases of at most :data:`MAX_CELLS` cells (of ``sizes`` only, if
    given), a seeded random program and a pass-through grid of 2 x 2."""
    cases = []
    for name in conformance_cases():
        case = load_conformance(name)
        if case.width * case.height <= MAX_CELLS and (
                sizes is None or (case.width, case.height) in sizes):
            cases.append(sim.make_case(case.load_bitstream(), case.inputs,
                                       expected=case.outputs, name=case.name))
    # A random differential case and straight routes (the emulator is the reference).
    rng = np.random.default_rng(0x1A7)
    steps = [Edges(*(int(v) for v in rng.integers(0, 4, size=4))) for _ in range(100)]
    cases.append(sim.make_case(Configuration.random(2, 2, 0x1A7), steps, name="random-2x2",
                               idle_cycles=0))
    through = Configuration(2, 2, np.broadcast_to(np.array(PASS_THROUGH, dtype=np.uint16),
                                                  (2, 2, 4)))
    cases.append(sim.make_case(through, steps, name="pass-through-2x2"))
    return cases


def _check(results, cases):
    assert [r.name for r in results] == [c.name for c in cases]
    failed = [r.summary() for r in results if not r.ok]
    assert not failed, "\n".join(failed)
    for case, result in zip(cases, results):
        assert result.storage == "latch"
        assert result.readback_ok and result.config_valid and not result.config_error
        assert result.outputs == Emulator(case.config).run(case.inputs)
    assert len(cases) >= 4


@pytest.mark.icarus
def test_conformance_icarus():
    """The conformance cases of 2 x 2 (loaded through the configuration port, read back frame
    by frame), a random 2 x 2 program and a pass-through grid, on Icarus."""
    cases = _cases(FAST_SIZES)
    _check(sim.run_cases(cases, simulator="icarus", storage="latch", quiet=True), cases)


@pytest.mark.icarus
@pytest.mark.slow
def test_conformance_icarus_all():
    """Every conformance case up to 128 cells (2 x 16, 8 x 10, 16 x 8 too) on Icarus."""
    cases = _cases()
    _check(sim.run_cases(cases, simulator="icarus", storage="latch", quiet=True), cases)


@pytest.mark.verilator
@pytest.mark.slow
def test_conformance_verilator():
    """The cases of 2 x 2 and 8 x 8 on Verilator (one build per grid size, a minute or more
    each on a cold cache; Icarus runs every size in the slow set)."""
    cases = _cases(VERILATOR_SIZES)
    _check(sim.run_cases(cases, simulator="verilator", storage="latch", quiet=True), cases)


# --- Formal: latch grid = flip-flop grid ---------------------------------------------------------

def _equivalence(tmp_path, width, height, depth, gate_storage="latch", mutate=None):
    gold = grid_verilog(width, height, storage="ff", name="gold")
    gate = grid_verilog(width, height, storage=gate_storage, name="gate")
    if mutate:
        gate = mutate(gate)
    (tmp_path / "gold.v").write_text(gold)
    (tmp_path / "gate.v").write_text(gate)
    # async2sync models each latch as "q = en ? d : q of the previous clock", the reading
    # of a latch whose enable and data come from registers of the same clock.
    script = ("read_verilog gold.v; hierarchy -top gold; proc; flatten; design -stash gold; "
              "read_verilog gate.v; hierarchy -top gate; proc; flatten; design -stash gate; "
              "design -copy-from gold -as gold gold; design -copy-from gate -as gate gate; "
              "async2sync; miter -equiv -flatten -make_outputs -ignore_gold_x gold gate miter; "
              "hierarchy -top miter; opt -fast; "
              f"tee -q -o result.txt sat -seq {depth} -set-init-zero -prove trigger 0 miter")
    yosys(script, cwd=tmp_path, outputs=["result.txt"])
    text = (tmp_path / "result.txt").read_text()
    proved, failed = "SUCCESS!" in text, "FAIL!" in text
    assert proved != failed, text[-2000:]
    return proved


@pytest.mark.slow
def test_equivalent_to_flip_flops(tmp_path):
    """A 2 x 2 grid: every input sequence of 6 cycles from power-up (frame writes, steps,
    resets, readback, commits) gives the same outputs, readback and flags with the latch
    store as with the flip-flop store (bounded model check, Yosys sat: about 30 s of CPU;
    12 cycles take many minutes)."""
    assert _equivalence(tmp_path, 2, 2, 6)


@pytest.mark.slow
def test_equivalence_finds_a_difference(tmp_path):
    """The check fails on a latch store whose word lines open one word too far (address + 1
    in the latch word's enable): the proof is not vacuous."""
    def mutate(text):
        return text.replace(".en(cfg_wl[0])", ".en(cfg_wl[1])", 1)
    assert ".en(cfg_wl[0])" in grid_verilog(2, 2, storage="latch", name="gate")
    assert not _equivalence(tmp_path, 2, 2, 6, mutate=mutate)
