"""The generic cocotb test bench of a grid (Verilog top ``bitgrid_grid``).

This module is loaded by cocotb inside the simulator (the runner passes it as ``test_module``).
Its one test, :func:`run_job`, reads a *job* from the JSON file named by ``$BITGRID_SIM_JOB``::

    {"format": "bitgrid-sim-job-v1", "width": W, "height": H, "result": "<path>",
     "clock_ns": 10, "idle_cycles": 1,
     "cases": [{"name": "...", "luts": [... H*W*4 LUT tables, row-major, N E S W ...],
                "inputs": [[n, e, s, w], ...], "expected": [[n, e, s, w], ...] or null,
                "crc": null or an int to commit instead of the right CRC,
                "idle_cycles": optional, overrides the job's}]}

and for every case, in one simulation: pulses reset, loads the configuration through the
configuration port, reads every frame back, runs the steps, and compares the edge outputs with
the case's expected outputs and with the reference emulator (:class:`bitgrid.Emulator`, run
here, in the simulator's Python). The result file (``job["result"]``) gets::

    {"format": "bitgrid-sim-result-v1", "complete": true, "failed": <bool>,
     "cases": [{"name", "steps", "outputs": [[n, e, s, w], ...],
                "mismatches": [[step, side, lane, expected, actual], ...],
                "emulator_mismatches": [...], "config_valid", "config_error",
                "readback_errors": [[row, addr, expected, actual], ...], "subcycle", "phase",
                "sim_time_ns", "wall_seconds"}]}

``outputs`` are the edge outputs read after each step. An output lane that reads X or Z is
read as 0 in ``outputs`` and reported as a mismatch with ``actual = -1``. The cocotb test fails (after
writing the result) when anything differs, so the bench also works in a plain cocotb flow.

Timing (all signals are driven right after a falling edge of ``clk`` and sampled at a falling
edge, half a period away from the rising edge where the design samples them, so Icarus and
Verilator agree): see :class:`GridBench`.
"""

import time

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, RisingEdge

from ..config import Configuration
from ..emulator import Edges, Emulator
from ..vectors import SIDES, compare_step
from .runner import JOB_FORMAT, RESULT_FORMAT, read_job, write_result

__all__ = ["ConfigPort", "GridBench", "BenchError", "run_job", "read_word", "compare_outputs"]


class BenchError(AssertionError):
    """The design did not follow the port protocol (for example ``w_ready`` never rose)."""


def read_word(handle):
    """``(word, unknown)``: the value of ``handle`` as an int with X/Z bits as 0, and the mask
    of the X/Z bits."""
    value = handle.value
    if value.is_resolvable:
        return int(value), 0
    text = str(value)                        # most significant bit first
    word = unknown = 0
    for char in text:
        word <<= 1
        unknown <<= 1
        if char == "1":
            word |= 1
        elif char != "0":
            unknown |= 1
    return word, unknown


class ConfigPort:
    """Drives one configuration port (:class:`~bitgrid.hdl.grid.ConfigSignature`) whose signals
    are the top-level ports ``<prefix>begin``, ``<prefix>row`` ... of ``dut``; ``falling`` is the
    falling-edge trigger of the clock of the port's domain. Timing as :class:`GridBench`."""

    #: Cycles to wait for ``w_ready`` before declaring the port stuck.
    READY_TIMEOUT = 10000

    def __init__(self, dut, prefix, falling):
        self._port = {name: getattr(dut, prefix + name) for name in (
            "begin", "row", "addr", "w_data", "w_en", "w_ready", "r_data", "commit", "crc",
            "valid", "error")}
        self._prefix = prefix
        self._falling = falling

    def idle(self):
        """Every input of the port to 0."""
        for name in ("begin", "row", "addr", "w_data", "w_en", "commit", "crc"):
            self._port[name].value = 0

    async def cycle(self, count=1):
        for _ in range(count):
            await self._falling

    async def _wait_ready(self, what):
        for _ in range(self.READY_TIMEOUT):
            if int(self._port["w_ready"].value):
                return
            await self._falling
        raise BenchError(f"{self._prefix}w_ready stayed low for {self.READY_TIMEOUT} cycles "
                         f"({what})")

    async def load(self, config, crc=None):
        """Load ``config`` (a :class:`~bitgrid.Configuration`) through the port, committing
        ``crc`` (default: :meth:`~bitgrid.Configuration.frames_crc`).

        :returns: ``(valid, error)`` read after the commit.
        """
        port = self._port
        port["begin"].value = 1
        await self.cycle()
        port["begin"].value = 0
        for row, address, frame in config.frames():
            port["row"].value = row
            port["addr"].value = address
            port["w_data"].value = frame
            port["w_en"].value = 1
            await self._wait_ready(f"frame row {row} address {address}")
            await self.cycle()                   # written at the rising edge just passed
        port["w_en"].value = 0
        port["crc"].value = config.frames_crc() if crc is None else crc
        port["commit"].value = 1
        await self._wait_ready("commit")
        await self.cycle()                       # committed at the rising edge just passed
        port["commit"].value = 0
        return int(port["valid"].value), int(port["error"].value)

    async def readback(self, config):
        """Read every frame back and compare it with ``config``.

        :returns: list of ``(row, addr, expected, actual)`` for the differing frames (an X bit
            reads as ``-1`` for the whole frame).
        """
        port = self._port
        frames = config.frames()
        errors = []
        port["row"].value, port["addr"].value = frames[0][0], frames[0][1]
        for index, (row, address, expected) in enumerate(frames):
            await self.cycle()                   # r_data <= frame at the rising edge
            actual, unknown = read_word(port["r_data"])
            if index + 1 < len(frames):
                port["row"].value, port["addr"].value = frames[index + 1][:2]
            if unknown:
                actual = -1
            if actual != expected:
                errors.append((row, address, expected, actual))
        return errors


class GridBench:
    """Drives a ``bitgrid_grid`` top: owns its clock, reset and the drivers of its ports.

    Timing, with ``period`` the clock period (rising edges at ``period/2 + k*period``):

    * every input is written right after a falling edge and sampled by the design at the next
      rising edge; outputs are read at a falling edge, half a period after the rising edge that
      changed them;
    * :meth:`reset` holds ``rst`` for two rising edges with every input at 0;
    * :meth:`load`: ``begin`` for one cycle; then each frame is presented with ``w_en`` high
      until a cycle where ``w_ready`` is high (the write happens at that cycle's rising edge);
      then ``commit`` with the CRC until ``w_ready`` is high; ``valid`` and ``error`` are read
      at the falling edge right after the committing edge;
    * :meth:`readback`: one frame address per cycle, ``r_data`` read one cycle later;
    * :meth:`step`: the edge inputs and ``step = 1`` for one cycle, then ``idle_cycles`` cycles
      with ``step = 0`` (inputs kept), then the outputs are read. With ``idle_cycles = 0``
      consecutive steps are back to back (``step`` stays high) and every cycle runs a subcycle.
    """

    def __init__(self, dut, width, height, *, period_ns=10, idle_cycles=1):
        self.dut = dut
        self.width, self.height = width, height
        self.period_ns = period_ns
        self.idle_cycles = self.default_idle_cycles = idle_cycles
        self._clock = None
        self._stepping = False
        self._falling = FallingEdge(dut.clk)
        self._inputs = (dut.i__n, dut.i__e, dut.i__s, dut.i__w)
        self._outputs = (dut.o__n, dut.o__e, dut.o__s, dut.o__w)
        self.config_port = ConfigPort(dut, "cfg__", self._falling)
        self._check_ports()

    def _check_ports(self):
        for handle, bits in ((self.dut.i__n, self.width), (self.dut.i__e, self.height),
                             (self.dut.o__n, self.width), (self.dut.o__w, self.height),
                             (self.dut.cfg__w_data, 4 * self.width)):
            if len(handle) != bits:
                raise BenchError(f"{handle._name} has {len(handle)} bits; a {self.width} x "
                                 f"{self.height} grid needs {bits}")

    async def cycle(self, count=1):
        """Wait for ``count`` falling edges of the clock."""
        for _ in range(count):
            await self._falling

    def idle(self):
        """Every input of the design to 0."""
        dut = self.dut
        for handle in self._inputs:
            handle.value = 0
        dut.step.value = 0
        self.config_port.idle()
        self._stepping = False

    async def start(self):
        """Drive every input (so that nothing is X at time 0) and start the clock, low first:
        no rising edge at time 0."""
        if self._clock is None:
            self.idle()
            self.dut.rst.value = 1
            self.dut.clk.value = 0
            self._clock = cocotb.start_soon(
                Clock(self.dut.clk, self.period_ns, unit="ns").start(start_high=False))
            # Icarus sees x -> 0 at time 0 as a falling edge, Verilator does not: synchronise on
            # the first rising edge so that both simulators run the same cycles.
            await RisingEdge(self.dut.clk)
            await self.cycle()

    async def reset(self, cycles=2):
        """Synchronous reset for ``cycles`` rising edges, every input at 0. Clears the cells'
        outputs and the subcycle counter (not the configuration)."""
        await self.start()
        self.idle()
        self.dut.rst.value = 1
        await self.cycle(cycles)
        self.dut.rst.value = 0

    async def load(self, config, crc=None):
        """Load ``config`` through the configuration port (:meth:`ConfigPort.load`)."""
        self._end_steps()
        return await self.config_port.load(config, crc)

    async def readback(self, config):
        """Read every frame back and compare it with ``config`` (:meth:`ConfigPort.readback`)."""
        self._end_steps()
        return await self.config_port.readback(config)

    def _end_steps(self):
        if self._stepping:
            self.dut.step.value = 0
            self._stepping = False

    def outputs(self):
        """``(edges, unknown)``: the edge outputs as :class:`~bitgrid.Edges`, and the X/Z lanes
        as :class:`~bitgrid.Edges` of masks."""
        words = [read_word(handle) for handle in self._outputs]
        return Edges(*(w for w, _ in words)), Edges(*(u for _, u in words))

    async def step(self, edges):
        """Run one subcycle with edge inputs ``edges`` and return :meth:`outputs` after it."""
        for handle, word in zip(self._inputs, edges):
            handle.value = word
        self.dut.step.value = 1
        self._stepping = True
        await self.cycle()                       # the subcycle runs at the rising edge
        if self.idle_cycles:
            self._end_steps()
            await self.cycle(self.idle_cycles)
        return self.outputs()

    async def finish_steps(self):
        """Lower ``step`` and wait one cycle; returns ``(subcycle, phase)``."""
        self._end_steps()
        await self.cycle()
        return int(self.dut.subcycle.value), int(self.dut.phase.value)


def compare_outputs(step, expected, actual, unknown, width, height):
    """Mismatches between :class:`Edges`, lanes that read X/Z reported with ``actual = -1``."""
    flipped = Edges(*(a ^ (u & ~(a ^ e)) for e, a, u in zip(expected, actual, unknown)))
    found = compare_step(step, expected, flipped, width, height)
    lanes = dict(zip(SIDES, unknown))
    return [m._replace(actual=-1) if lanes[m.side] >> m.lane & 1 else m for m in found]


async def run_case(bench, case):
    """Run one case of a job on ``bench``; returns the case's result object."""
    width, height = bench.width, bench.height
    start_wall, start_sim = time.monotonic(), get_sim_time("ns")
    config = Configuration(width, height, _luts(case["luts"], width, height))
    inputs = [Edges(*i) for i in case["inputs"]]
    expected = case.get("expected")
    expected = None if expected is None else [Edges(*o) for o in expected]
    bench.idle_cycles = case.get("idle_cycles", bench.default_idle_cycles)
    await bench.reset()
    valid, error = await bench.load(config, case.get("crc"))
    load_wall = time.monotonic()
    readback = await bench.readback(config)
    readback_wall = time.monotonic()
    emulator = Emulator(config)
    mismatches, emulator_mismatches, outputs = [], [], []
    for t, edges in enumerate(inputs):
        actual, unknown = await bench.step(edges)
        outputs.append(list(actual))
        reference = emulator.step(edges)
        emulator_mismatches += compare_outputs(t, reference, actual, unknown, width, height)
        if expected is not None:
            mismatches += compare_outputs(t, expected[t], actual, unknown, width, height)
    subcycle, phase = await bench.finish_steps()
    return {
        "name": case.get("name", "case"),
        "steps": len(inputs),
        "outputs": outputs,
        "mismatches": [list(m) for m in mismatches],
        "emulator_mismatches": [list(m) for m in emulator_mismatches],
        "config_valid": valid,
        "config_error": error,
        "readback_errors": [list(r) for r in readback],
        "subcycle": subcycle,
        "phase": phase,
        "sim_time_ns": get_sim_time("ns") - start_sim,
        "wall_seconds": time.monotonic() - start_wall,
        "load_seconds": load_wall - start_wall,
        "readback_seconds": readback_wall - load_wall,
    }


def _luts(flat, width, height):
    import numpy as np
    return np.asarray(flat, dtype=np.uint16).reshape(height, width, 4)


def case_failed(result, expect_valid=True):
    """Whether a case result shows any difference from the expectations."""
    return bool(result["mismatches"] or result["emulator_mismatches"]
                or result["readback_errors"]
                or (result["config_valid"], result["config_error"]) != (1, 0)
                or result["subcycle"] != result["steps"]
                or result["phase"] != result["steps"] % 2)



@cocotb.test()
async def run_job(dut):
    """Run every case of the job named by ``$BITGRID_SIM_JOB``."""
    job = read_job(JOB_FORMAT)
    bench = GridBench(dut, job["width"], job["height"], period_ns=job.get("clock_ns", 10),
                      idle_cycles=job.get("idle_cycles", 1))
    out = {"format": RESULT_FORMAT, "complete": False, "failed": False, "cases": []}
    for case in job["cases"]:
        result = await run_case(bench, case)
        # A case that commits a deliberately wrong CRC expects the load to be refused.
        if case.get("crc") is not None:
            result["expect_rejected"] = True
            failed = ((result["config_valid"], result["config_error"]) != (0, 1)
                      or result["subcycle"] != 0)
        else:
            failed = case_failed(result)
        result["failed"] = failed
        out["cases"].append(result)
        out["failed"] = out["failed"] or failed
        write_result(job["result"], out)
    out["complete"] = True
    write_result(job["result"], out)
    bad = [c["name"] for c in out["cases"] if c["failed"]]
    assert not bad, f"cases with differences: {', '.join(bad)}"
