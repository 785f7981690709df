"""Cocotb test of a BitGrid Tiny Tapeout project (copied as ``test/test.py`` into the folder
that ``bitgrid asic --tinytapeout`` writes; it imports nothing of BitGrid, so it runs in the
shuttle's own CI).

It drives the pins only, as a host on the demo board would (the pin protocol of
:mod:`bitgrid.asic.tt_top`): a load with a corrupted CRC must raise ``error`` and leave the
grid stopped; then the program of ``case.json`` (a conformance case: its frames, their CRC-32
and every subcycle's edge inputs and expected edge outputs, lanes flattened N, E, S, W) is
loaded through the nibble port and run subcycle by subcycle, and every edge output lane is
compared with the case.
"""

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles

LOAD, STEP, BANK, RESET = 0x1, 0x2, 0x3, 0x4
PHASE, VALID, ERROR = 5, 6, 7


def _case():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "case.json")) as f:
        return json.load(f)


async def send(dut, nibble):
    """One nibble on uio[3:0] with a strobe on uio[4]: 2 cycles high, 2 low."""
    dut.uio_in.value = nibble & 0xF
    await ClockCycles(dut.clk, 1)
    dut.uio_in.value = 0x10 | (nibble & 0xF)
    await ClockCycles(dut.clk, 2)
    dut.uio_in.value = nibble & 0xF
    await ClockCycles(dut.clk, 2)


async def load(dut, case, crc):
    await send(dut, LOAD)
    for frame in case["frames"]:
        for i in range(case["width"]):
            await send(dut, frame >> (4 * i))
    for i in range(8):
        await send(dut, crc >> (4 * i))
    await ClockCycles(dut.clk, 8)


def status(dut, bit):
    return (int(dut.uio_out.value) >> bit) & 1


async def select(dut, bank, case):
    if case["banks"] > 1:
        await send(dut, BANK)
        await send(dut, bank)


@cocotb.test()
async def test_program(dut):
    case = _case()
    banks = case["banks"]
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.ena.value = 1
    dut.ui_in.value = 0
    dut.uio_in.value = 0
    dut.rst_n.value = 0
    await ClockCycles(dut.clk, 10)
    dut.rst_n.value = 1
    await ClockCycles(dut.clk, 4)
    assert int(dut.uio_oe.value) == 0b1110_0000
    assert status(dut, VALID) == 0, "valid after reset, before any load"

    # The CRC gate: a load with a wrong CRC is refused and the grid does not run.
    await load(dut, case, case["crc"] ^ 1)
    assert status(dut, ERROR) == 1, "a load with a wrong CRC did not raise error"
    assert status(dut, VALID) == 0, "a load with a wrong CRC raised valid"

    await load(dut, case, case["crc"])
    assert status(dut, ERROR) == 0, "the good load raised error"
    assert status(dut, VALID) == 1, "the good load did not raise valid"
    await send(dut, RESET)
    await ClockCycles(dut.clk, 4)

    mismatches = []
    for t, step in enumerate(case["steps"]):
        assert status(dut, PHASE) == t % 2, f"phase before subcycle {t}"
        for b in range(banks):
            await select(dut, b, case)
            dut.ui_in.value = (step["in"] >> (8 * b)) & 0xFF
            await ClockCycles(dut.clk, 4)
        await send(dut, STEP)
        await ClockCycles(dut.clk, 2)
        got = 0
        for b in range(banks):
            await select(dut, b, case)
            await ClockCycles(dut.clk, 1)
            got |= int(dut.uo_out.value) << (8 * b)
        if got != step["out"]:
            mismatches.append((t, step["out"], got))
    assert not mismatches, (f"{len(mismatches)} of {len(case['steps'])} subcycles differ; "
                            "first (subcycle, expected lanes, got): "
                            + ", ".join(f"({t}, {e:#x}, {g:#x})" for t, e, g in mismatches[:5]))
