"""The cocotb test bench of a simulated mesh (Verilog top ``bitgrid_mesh``, a
:class:`bitgrid.hdl.mesh.Mesh`).

Loaded by cocotb inside the simulator (the runner passes it as ``test_module``). Its one test,
:func:`run_mesh_job`, reads a job (format :data:`MESH_JOB_FORMAT`) from ``$BITGRID_SIM_JOB``::

    {"format": ..., "cols", "rows", "tile_width", "tile_height", "lanes", "ddr",
     "links": [[col, row, side], ...], "faults": "<FaultSpec text>", "clock_ns": 10,
     "stall_cycles": 20000,
     "cases": [{"name", "luts": [... global grid, H*W*4 tables ...], "inputs": [[n, e, s, w]],
                "expected": [[n, e, s, w]] or null, "faults": optional, overrides the job's,
                "fixed": optional, true: the configuration is compiled into the gateware
                         (a fixed-configuration mesh): not loaded, only read back}]}

For every case, in one simulation: starts every tile's clock (neighbouring tiles at different
rates when the fault spec says ``clock=R``), resets the mesh, loads each tile's slice of the
configuration through that tile's configuration port (all tiles at once, each in its own clock
domain) and reads it back, arms the fault models, then runs the steps one subcycle at a time:
the global edge inputs of step ``t`` are set, every tile's step budget is raised to ``t + 1``,
and when every tile has run subcycle ``t`` the global edge outputs are compared with the
reference emulator of the *whole* grid and with the expected outputs, and every cell's outputs
in every tile (the tiles' ``state`` ports) with the emulator's state. The tiles meanwhile
exchange their boundary lanes over the simulated links, under the barrier; slips and
disconnects are fired a few cycles after a step starts, so that they hit frames in flight.

The result (format :data:`MESH_RESULT_FORMAT`) holds per case the outputs, mismatches, readback
errors, every link's counters (link layer, physical layer and injected faults), each tile's
stall cycles, and the cycles and simulated time the steps took.
"""

import time

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import Event, FallingEdge, RisingEdge, Timer

from bitgrid.faults import FaultSpec
from bitgrid.mesh import MeshShape, slice_configuration

from .. import jobs
from .base import (ConfigPort, Results, StepChecker, Testbench, TestbenchError, case_config,
                   case_edges, read_word)

__all__ = ["MESH_JOB_FORMAT", "MESH_RESULT_FORMAT", "MeshTestbench", "run_mesh_job",
           "LINK_COUNTERS", "FAULT_COUNTERS"]

MESH_JOB_FORMAT, MESH_RESULT_FORMAT = jobs.JOB_FORMATS["mesh"], jobs.RESULT_FORMATS["mesh"]
#: Counters of each link read after every case (see bitgrid.hdl.mesh.LinkStatusSignature).
LINK_COUNTERS = ("frames_sent", "retransmits", "timeouts", "crc_errors", "sequence_errors",
                 "acks_sent", "align_losses", "header_errors")
FAULT_COUNTERS = ("flips", "slips", "drops", "duplicates", "disconnects")


class MeshTestbench(Testbench):
    """Owns the clocks, reset, configuration ports and fault commands of a ``bitgrid_mesh`` top.

    Signals are driven right after a falling edge of the clock of their tile's domain and read
    at a falling edge, as in :class:`~bitgrid.sim.testbench.grid.GridTestbench`; :meth:`cycle`
    counts tile 0's clock. The shared ``limit`` and the global edge inputs only change while
    every tile is idle (its budget spent).
    """

    def __init__(self, dut, job):
        super().__init__(dut, period_ns=job.get("clock_ns", 10), clock=dut.clk_0)
        self.shape = MeshShape(job["cols"], job["rows"])
        self.tile_w, self.tile_h = job["tile_width"], job["tile_height"]
        self.width = self.shape.cols * self.tile_w
        self.height = self.shape.rows * self.tile_h
        self.lanes, self.ddr = job["lanes"], job["ddr"]
        self.links = [tuple(link) for link in job["links"]]
        self.spec = self.job_spec = FaultSpec.parse(job.get("faults") or "none")
        self.stall_cycles = job.get("stall_cycles", 20000)
        self.tiles = list(self.shape.chips())           # (col, row), index = row * cols + col
        self._subcycle = [getattr(dut, f"subcycle__{i}") for i in range(len(self.tiles))]
        self._clock_tasks = []         # Clock drivers, stopped when the clock ratio changes
        self._pending = []             # fault events started and not yet over
        self._busy = {}                # link -> Event set when its last fault event is over
        self.clocks = [getattr(dut, f"clk_{i}") for i in range(len(self.tiles))]
        self.falling = [FallingEdge(c) for c in self.clocks]
        self.ports = [ConfigPort(dut, f"cfg__{i}__", self.falling[i])
                      for i in range(len(self.tiles))]
        self._started = False
        self.rng = self.spec.rng("bench")

    def period_ps(self, index):
        """Clock period of tile ``index`` in ps (a multiple of 4, for the 90-degree clock):
        tiles of odd ``col + row`` run ``spec.clock`` times slower than the others, so every
        link joins two different clock rates."""
        col, row = self.tiles[index]
        ratio = self.spec.clock if (col + row) % 2 else 1.0
        return int(round(self.period_ns * 1000 * ratio / 4)) * 4

    def use_faults(self, spec):
        """Faults of the next case (a :class:`~bitgrid.faults.FaultSpec`); the clocks restart at
        the next :meth:`reset` if the clock ratio changes."""
        if self._started and spec.clock != self.spec.clock:
            for clock in self._clock_tasks:
                clock.stop()
            self._clock_tasks = []
            self._started = False
        self.spec = spec
        self.rng = spec.rng("bench")

    async def start(self):
        """Drive every input, start the clocks (low first) and hold reset."""
        if self._started:
            return
        dut = self.dut
        dut.rst.value = (1 << len(self.tiles)) - 1
        dut.limit.value = 0
        self.idle()
        for port in self.ports:
            port.idle()
        self.clear_faults()
        for index, clock in enumerate(self.clocks):
            clock.value = 0
            period = self.period_ps(index)
            driver = Clock(clock, period, unit="ps")
            driver.start(start_high=False)
            self._clock_tasks.append(driver)
        if self.ddr:
            # Each quarter-period clock starts a quarter of its period after its tile's clock.
            starts = [cocotb.start_soon(self._clock90(getattr(dut, f"clk90_{index}"),
                                                      self.period_ps(index),
                                                      self.period_ps(index) // 4))
                      for index in range(len(self.tiles))]
            for task in starts:
                self._clock_tasks.append(await task)
        await RisingEdge(self.clocks[0])
        self._started = True

    @staticmethod
    async def _clock90(handle, period, delay):
        """Start a clock of ``period`` on ``handle`` after ``delay`` ps; returns the driver."""
        handle.value = 0
        if delay:
            await Timer(delay, unit="ps")
        driver = Clock(handle, period, unit="ps")
        driver.start(start_high=False)
        return driver

    async def reset(self):
        """Reset every tile (grid, links) for a few cycles of the slowest clock. The lane skews
        of the fault spec are set while reset is held: a skew is a property of the cable, there
        before the link first aligns."""
        await self.start()
        self.dut.limit.value = 0
        self.dut.rst.value = (1 << len(self.tiles)) - 1
        self.clear_faults()
        if self.spec.skew and self.links:
            skews = self.spec.lane_skews(len(self.links), self.lanes)
            for k in range(len(self.links)):
                getattr(self.dut, f"faults__{k}__skew").value = self.spec.skew_value(skews[k])
        await Timer(4 * max(self.period_ps(i) for i in range(len(self.tiles))), unit="ps")
        await self.falling[0]
        self.dut.rst.value = 0

    def clear_faults(self):
        for k in range(len(self.links)):
            for name in ("flip", "slip", "slip_lane", "skew", "disconnect", "drop", "duplicate",
                         "seed"):
                handle = getattr(self.dut, f"faults__{k}__{name}", None)
                if handle is not None:
                    handle.value = 0

    def arm_faults(self):
        """Set the continuous faults (flips, drops, duplicates) and the seed of the fault
        models' generators on every link."""
        spec = self.spec
        if not spec.enabled or not self.links:
            return
        for k in range(len(self.links)):
            port = lambda name: getattr(self.dut, f"faults__{k}__{name}")
            port("seed").value = spec.seed & 0xffff
            port("flip").value = spec.threshold("flip")
            port("drop").value = spec.threshold("drop")
            port("duplicate").value = spec.threshold("dup")

    async def _fire(self, event, delay):
        """Apply one scheduled :class:`~bitgrid.faults.FaultEvent` after ``delay`` cycles of
        the transmitting tile's clock; events of one link take turns (a disconnect period ends
        before the link's next event starts)."""
        col, row, _ = self.links[event.link]
        falling = self.falling[row * self.shape.cols + col]
        for _ in range(delay):
            await falling
        previous = self._busy.get(event.link)
        finished = Event()
        self._busy[event.link] = finished
        if previous is not None:
            await previous.wait()
        try:
            await self._apply(event, falling)
        finally:
            finished.set()

    async def _apply(self, event, falling):
        port = lambda name: getattr(self.dut, f"faults__{event.link}__{name}")
        if event.kind == "slip":
            port("slip_lane").value = event.lane
            port("slip").value = 1
            await falling
            port("slip").value = 0
        elif event.kind == "disconnect":
            port("disconnect").value = 1
            for _ in range(self.spec.disconnect_cycles):
                await falling
            port("disconnect").value = 0
        await falling                 # one quiet cycle, so that the next event is its own

    def schedule(self, steps):
        """Slips and disconnects by step: ``{step: [event, ...]}``."""
        if not self.links or not (self.spec.slip or self.spec.disconnect) or steps < 1:
            return {}
        spec = self.spec.replace(disconnect_cycles=1)
        events = spec.schedule(max(steps, 2 * max(spec.disconnect, 1) + 2), len(self.links),
                               lanes=self.lanes)
        by_step = {}
        for event in events:
            if event.kind != "reconnect":
                by_step.setdefault(min(event.cycle, steps - 1), []).append(event)
        return by_step

    def state_mismatches(self, t, emulator):
        """``[step, col, row, x, y, direction, expected, actual]`` for every cell output of
        every tile that differs from ``emulator`` (the whole grid's; global ``x, y``)."""
        found = []
        reference = emulator.outputs                    # (4, height, width)
        for index, (col, row) in enumerate(self.tiles):
            word, unknown = read_word(getattr(self.dut, f"state__{index}"))
            for y in range(self.tile_h):
                for x in range(self.tile_w):
                    for d in range(4):
                        bit = 4 * (y * self.tile_w + x) + d
                        gx, gy = col * self.tile_w + x, row * self.tile_h + y
                        expected = int(reference[d, gy, gx])
                        actual = -1 if unknown >> bit & 1 else word >> bit & 1
                        if actual != expected:
                            found.append([t, col, row, gx, gy, d, expected, actual])
        return found

    def subcycles(self):
        return [int(handle.value) for handle in self._subcycle]   # every cycle: handles found once

    def link_status(self):
        """Every link's counters: a list of dicts in link order."""
        status = []
        for k, (col, row, side) in enumerate(self.links):
            entry = {"link": [col, row, side]}
            for name in ("aligned",) + LINK_COUNTERS + FAULT_COUNTERS:
                handle = getattr(self.dut, f"status__{k}__{name}", None)
                if handle is not None:
                    value, unknown = read_word(handle)
                    entry[name] = -1 if unknown else value       # -1: X (a test bench error)
            status.append(entry)
        return status

    async def load(self, config, fixed=False):
        """Load each tile's slice of ``config`` through its port, all tiles at once, and read
        them back (with ``fixed``, the slices are compiled into the gateware: only read
        back). Returns ``(valid, error, readback_errors)`` with per-tile lists."""
        slices = slice_configuration(config, self.shape)
        tasks = [cocotb.start_soon(self._load_one(i, slices[tile], fixed))
                 for i, tile in enumerate(self.tiles)]
        results = [await task for task in tasks]
        return ([r[0] for r in results], [r[1] for r in results],
                [[i, *e] for i, r in enumerate(results) for e in r[2]])

    async def _load_one(self, index, config, fixed):
        port = self.ports[index]
        await self.falling[index]
        valid, error = port.status() if fixed else await port.load(config)
        readback = await port.readback(config)
        port.idle()
        return valid, error, readback

    async def run_step(self, t, edges, events):
        """Run subcycle ``t`` with global edge inputs ``edges``; returns ``(outputs, unknown,
        cycles)`` with ``cycles`` counted on tile 0's clock, or raises :class:`TestbenchError` if
        the mesh makes no progress for ``stall_cycles`` cycles."""
        self.drive_edges(edges)
        self.dut.limit.value = t + 1
        for event in events:
            self._pending.append(cocotb.start_soon(self._fire(event, self.rng.randrange(2, 40))))
        cycles = idle = 0
        last = None
        while True:
            await self.falling[0]
            cycles += 1
            now = self.subcycles()
            if all(s == t + 1 for s in now):
                return (*self.outputs(), cycles)
            idle = 0 if now != last else idle + 1
            last = now
            if idle >= self.stall_cycles:
                aligned = [f"chip ({c},{r}) {side}" for (c, r, side), link in
                           zip(self.links, self.link_status()) if link.get("aligned") != 1]
                raise TestbenchError(f"no tile advanced for {self.stall_cycles} cycles (tiles "
                                     f"at subcycles {', '.join(map(str, now))}); receivers not "
                                     f"aligned: {', '.join(aligned) or 'none'}")

    async def finish_faults(self):
        """Wait until every fault event started so far is over."""
        for task in self._pending:
            await task
        self._pending = []
        self._busy = {}


async def run_case(testbench, case):
    """Run one case of a job; returns its result object."""
    start_wall, start_sim = time.monotonic(), get_sim_time("ns")
    width, height = testbench.width, testbench.height
    config = case_config(case, width, height)
    inputs, expected = case_edges(case)
    faults = case.get("faults")
    testbench.use_faults(testbench.job_spec if faults is None else FaultSpec.parse(faults))
    await testbench.reset()
    valid, error, readback = await testbench.load(config, case.get("fixed", False))
    testbench.arm_faults()
    schedule = testbench.schedule(len(inputs))
    checker = StepChecker(config, expected, width, height)
    step_cycles, state_mismatches = [], []
    stalled = None
    run_start = get_sim_time("ns")
    for t, edges in enumerate(inputs):
        try:
            actual, unknown, cycles = await testbench.run_step(t, edges, schedule.get(t, ()))
        except TestbenchError as exc:
            stalled = str(exc)
            break
        step_cycles.append(cycles)
        checker.check(t, edges, actual, unknown)
        state_mismatches += testbench.state_mismatches(t, checker.emulator)
    run_ns = get_sim_time("ns") - run_start
    # Let the scheduled faults finish (so that every one is counted), then read the counters.
    await testbench.finish_faults()
    tiles = range(len(testbench.tiles))
    await Timer(2 * max(testbench.period_ps(i) for i in tiles), unit="ps")
    status = testbench.link_status()
    stalls = [int(getattr(testbench.dut, f"stalls__{i}").value) for i in tiles]
    testbench.clear_faults()
    return {
        "name": case.get("name", "case"),
        "steps": len(inputs),
        **checker.entries(),
        "state_mismatches": state_mismatches[:100],
        "state_mismatch_count": len(state_mismatches),
        "config_valid": valid,
        "config_error": error,
        "readback_errors": readback,
        "subcycles": testbench.subcycles(),
        "stalled": stalled,
        "faults": str(testbench.spec),
        "links": status,
        "stalls": stalls,
        "step_cycles": step_cycles,
        "run_ns": run_ns,
        "sim_time_ns": get_sim_time("ns") - start_sim,
        "wall_seconds": time.monotonic() - start_wall,
    }


def case_failed(result):
    """Whether a mesh case result shows any difference or a stall."""
    return bool(result["mismatches"] or result["emulator_mismatches"]
                or result["state_mismatch_count"]
                or result["readback_errors"] or result["stalled"]
                or not all(result["config_valid"]) or any(result["config_error"])
                or any(s != result["steps"] for s in result["subcycles"]))


@cocotb.test()
async def run_mesh_job(dut):
    """Run every case of the job named by ``$BITGRID_SIM_JOB``."""
    job = jobs.read_job("mesh")
    testbench = MeshTestbench(dut, job)
    results = Results(job, "mesh")
    for case in job["cases"]:
        result = await run_case(testbench, case)
        results.add(result, case_failed(result))
    results.finish()
