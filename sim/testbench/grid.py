"""The cocotb test bench of a grid (Verilog top ``bitgrid_grid``).

This module is loaded by cocotb inside the simulator (the runner passes it as ``test_module``).
Its one test, :func:`run_job`, reads a *job* from the JSON file named by ``$BITGRID_SIM_JOB``::

    {"format": "bitgrid-sim-job-v1", "width": W, "height": H, "result": "<path>",
     "clock_ns": 10, "idle_cycles": 1,
     "faults": optional, the (x, y, kind, output, address) lists of a faulty build (test
               only): the reference emulator is then the fault model,
     "cases": [{"name": "...", "luts": [... H*W*4 LUT tables, row-major, N E S W ...],
                "inputs": [[n, e, s, w], ...], "expected": [[n, e, s, w], ...] or null,
                "crc": null or an int to commit instead of the right CRC,
                "fixed": optional, true: the configuration is compiled into the gateware
                         (a fixed-configuration build): not loaded, only read back,
                "idle_cycles": optional, overrides the job's}]}

and for every case, in one simulation: pulses reset, loads the configuration through the
configuration port, reads every frame back, runs the steps, and compares the edge outputs with
the case's expected outputs and with the reference emulator (:class:`bitgrid.Emulator`, run
here, in the simulator's Python). The result file (``job["result"]``) gets::

    {"format": "bitgrid-sim-result-v1", "complete": true, "failed": <bool>,
     "plusargs": [the simulator's plusargs, as cocotb saw them],
     "cases": [{"name", "steps", "outputs": [[n, e, s, w], ...],
                "mismatches": [[step, side, lane, expected, actual], ...],
                "emulator_mismatches": [...], "config_valid", "config_error",
                "readback_errors": [[row, addr, expected, actual], ...], "subcycle", "phase",
                "step_start" (simulator time steps, where the first step begins),
                "sim_time_ns", "wall_seconds"}]}

``outputs`` are the edge outputs read after each step. An output lane that reads X or Z is
read as 0 in ``outputs`` and reported as a mismatch with ``actual = -1``. The cocotb test fails
(after writing the result) when anything differs, so the test bench also works in a plain cocotb
flow.

Timing: see :mod:`bitgrid.sim.testbench.base` and :class:`GridTestbench`.
"""

import time

import cocotb
from cocotb.simtime import get_sim_time

from .. import jobs
from .base import (ConfigPort, Results, StepChecker, Testbench, TestbenchError, case_config,
                   case_edges)

__all__ = ["GridTestbench", "run_case", "case_failed", "run_job"]


class GridTestbench(Testbench):
    """Drives a ``bitgrid_grid`` top: its clock, reset, edge buses, configuration port
    (:class:`~bitgrid.sim.testbench.base.ConfigPort`, prefix ``cfg__``) and ``step``.

    * :meth:`step`: the edge inputs and ``step = 1`` until a rising edge where ``step_ready``
      is high (the step handshake of SPEC section 7; a top without ``step_ready`` is always
      ready), then, if ``step_ready`` fell (a multiplexed grid computing), ``step = 0`` until
      it is high again, then ``idle_cycles`` cycles with ``step = 0`` (inputs kept), then the
      outputs are read. With ``idle_cycles = 0``
      consecutive steps are back to back (``step`` stays high) and every cycle runs a subcycle.
    * :meth:`reset` clears the cells' outputs and the subcycle counter (not the configuration).

    :raises TestbenchError: if the ports do not have the widths of a ``width`` x ``height`` grid.
    """

    def __init__(self, dut, width, height, *, period_ns=10, idle_cycles=1):
        super().__init__(dut, period_ns=period_ns)
        self.width, self.height = width, height
        self.idle_cycles = self.default_idle_cycles = idle_cycles
        self._stepping = False
        self.config_port = ConfigPort(dut, "cfg__", self._falling)
        # The step handshake (SPEC section 7): a top without `step_ready` is always ready.
        self._step_ready = dut.step_ready if hasattr(dut, "step_ready") else None
        self._check_ports()

    def _check_ports(self):
        (i_n, i_e, _, _), (o_n, _, _, o_w) = self._inputs, self._outputs
        for name, length, bits in (("i__n", len(i_n), self.width), ("i__e", len(i_e), self.height),
                                   ("o__n", len(o_n), self.width), ("o__w", len(o_w), self.height),
                                   ("cfg__w_data", len(self.config_port), 4 * self.width)):
            if length != bits:
                raise TestbenchError(f"{name} has {length} bits; a {self.width} x "
                                     f"{self.height} grid needs {bits}")

    def idle(self):
        """Every input of the design to 0."""
        super().idle()
        self.dut.step.value = 0
        self.config_port.idle()
        self._stepping = False

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

    async def step(self, edges):
        """Run one subcycle with edge inputs ``edges`` and return :meth:`outputs` after it."""
        self.drive_edges(edges)
        self.dut.step.value = 1
        self._stepping = True
        if self._step_ready is not None:
            # `step_ready` is a register: its value now is the one the rising edge sees.
            await self._until_step_ready()
        await self.cycle()                       # the subcycle runs (starts) at the rising edge
        if self._step_ready is not None and not int(self._step_ready.value):
            self._end_steps()                    # a multiplexed grid computes for many clocks
            await self._until_step_ready()
        if self.idle_cycles:
            self._end_steps()
            await self.cycle(self.idle_cycles)
        return self.outputs()

    async def _until_step_ready(self):
        """Wait (whole cycles) until ``step_ready`` reads high at a falling edge."""
        for _ in range(self.STEP_TIMEOUT):
            if int(self._step_ready.value):
                return
            await self.cycle()
        raise TestbenchError(f"step_ready stayed low for {self.STEP_TIMEOUT} cycles")

    #: Cycles to wait for ``step_ready`` before declaring the grid stuck.
    STEP_TIMEOUT = 1 << 20

    async def finish_steps(self):
        """Lower ``step`` and wait one cycle; returns ``(subcycle, phase)``."""
        self._end_steps()
        await self.cycle()
        return int(self.dut.subcycle.value), int(self.dut.phase.value)


async def run_case(testbench, case, faults=None):
    """Run one case of a job on ``testbench``; returns the case's result object. ``faults``
    (the job's, of a faulty grid) make the reference emulator the fault model."""
    width, height = testbench.width, testbench.height
    start_wall, start_sim = time.monotonic(), get_sim_time("ns")
    config = case_config(case, width, height)
    inputs, expected = case_edges(case)
    testbench.idle_cycles = case.get("idle_cycles", testbench.default_idle_cycles)
    await testbench.reset()
    if case.get("fixed"):
        await testbench.cycle()
        valid, error = testbench.config_port.status()
    else:
        valid, error = await testbench.load(config, case.get("crc"))
    load_wall = time.monotonic()
    readback = await testbench.readback(config)
    readback_wall = time.monotonic()
    checker = StepChecker(config, expected, width, height, faults)
    step_start = get_sim_time("step")          # the waveform viewer's marker
    for t, edges in enumerate(inputs):
        checker.check(t, edges, *await testbench.step(edges))
    subcycle, phase = await testbench.finish_steps()
    return {
        "name": case.get("name", "case"),
        "steps": len(inputs),
        **checker.entries(),
        "config_valid": valid,
        "config_error": error,
        "readback_errors": [list(r) for r in readback],
        "subcycle": subcycle,
        "phase": phase,
        "step_start": step_start,
        "sim_time_ns": get_sim_time("ns") - start_sim,
        "wall_seconds": time.monotonic() - start_wall,
        "load_seconds": load_wall - start_wall,
        "readback_seconds": readback_wall - load_wall,
    }


def case_failed(result):
    """Whether a case result shows any difference from the expectations (a case that commits a
    deliberately wrong CRC expects the load to be refused and no subcycle to run)."""
    if result.get("expect_rejected"):
        return ((result["config_valid"], result["config_error"]) != (0, 1)
                or result["subcycle"] != 0)
    return bool(result["mismatches"] or result["emulator_mismatches"]
                or result["readback_errors"]
                or (result["config_valid"], result["config_error"]) != (1, 0)
                or result["subcycle"] != result["steps"]
                or result["phase"] != result["steps"] % 2)


@cocotb.test()
async def run_job(dut):
    """Run every case of the job named by ``$BITGRID_SIM_JOB``."""
    job = jobs.read_job("grid")
    testbench = GridTestbench(dut, job["width"], job["height"], period_ns=job.get("clock_ns", 10),
                          idle_cycles=job.get("idle_cycles", 1))
    results = Results(job, "grid", plusargs=sorted(
        f"+{name}" if value is True else f"+{name}={value}"
        for name, value in cocotb.plusargs.items()))
    for case in job["cases"]:
        result = await run_case(testbench, case, job.get("faults"))
        if case.get("crc") is not None:
            result["expect_rejected"] = True
        results.add(result, case_failed(result))
    results.finish()
