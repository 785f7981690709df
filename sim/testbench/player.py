"""The cocotb test bench of the stimulus player (Verilog top ``bitgrid_player``,
:class:`bitgrid.hdl.player.Player`): the fast path of :func:`bitgrid.sim.run_cases`.

It takes the same job as :mod:`bitgrid.sim.testbench.grid` and writes the same result, but no
Python runs per subcycle: for each case it writes the configuration frames and the stimulus to
files, pulses the memories' reload inputs, starts the player's sequencer with one command
(load through the configuration port, read back, run up to
:data:`~bitgrid.hdl.player.STIMULUS_DEPTH` steps) and waits, in one trigger, for ``done``; the
simulator runs the load, the CRC commit and the subcycles natively. It then reads the response
and readback files and compares them with the reference emulator as the step-by-step bench
does (:class:`~bitgrid.sim.testbench.base.StepChecker`). A longer case runs as several
commands, the grid keeping its state between them (a few cycles with ``step`` low between
commands, which the direct grid ignores).

The memory files sit in the run folder (the simulator's working directory), named by
:data:`FILES`; the runner passes them as plusargs (:func:`plusargs`). A case's result has the
entries of the grid bench (``load_seconds`` and ``readback_seconds``: the load and readback
commands) plus ``step_seconds`` (the stepping commands) and ``native_seconds`` (all three: wall
time of the simulator running on its own), and ``load_cpu_seconds``, ``step_cpu_seconds``: the
CPU time of the simulator process in the load and stepping commands (the fair figure on a
loaded machine).

The clock is cocotb's C++ clock (``impl="gpi"``): no Python per clock edge either.
"""

import os
import time

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import RisingEdge

from bitgrid.hdl.player import PLUSARGS, STIMULUS_DEPTH, pack_edges, unpack_edges
from bitgrid.terms import Edges

from .. import jobs
from .base import Results, StepChecker, Testbench, case_config, case_edges
from .grid import case_failed

__all__ = ["FILES", "plusargs", "PlayerTestbench", "read_memory", "run_case", "run_job"]

#: The file of each player memory, in the run folder.
FILES = {"frames": "player-frames.hex", "stimulus": "player-stimulus.hex",
         "responses": "player-responses.bin", "readback": "player-readback.bin"}


def plusargs():
    """The plusargs that name the memory files (relative to the run folder)."""
    return tuple(f"+{PLUSARGS[name]}={path}" for name, path in FILES.items())


def read_memory(path, count, bits):
    """``[(word, unknown), ...]``: the first ``count`` words of a ``$writememb`` file of
    ``bits``-bit words, X/Z bits as 0 in ``word`` and set in ``unknown``.

    :raises AssertionError: if the file has fewer words (a cocotb failure)."""
    words = []
    with open(path) as file:
        for line in file:
            text = line.split("//")[0].strip()
            if not text or text.startswith("@"):
                continue
            for token in text.split():
                token = token.replace("_", "")
                word = int(token.translate(_KNOWN), 2)
                unknown = int(token.translate(_UNKNOWN), 2)
                words.append((word, unknown))
    assert len(words) >= count, f"{path} holds {len(words)} words, expected {count}"
    return words[:count]


_KNOWN = str.maketrans("xXzZ", "0000")
_UNKNOWN = str.maketrans("01xXzZ", "001111")


class PlayerTestbench(Testbench):
    """Drives a ``bitgrid_player`` top (see :mod:`bitgrid.hdl.player` for its ports): files,
    reloads, commands.

    :param directory: the run folder (where the memory files are).
    """

    clock_impl = "gpi"

    def __init__(self, dut, width, height, directory, *, period_ns=10, idle_cycles=1):
        super().__init__(dut, period_ns=period_ns, edges=False)
        self.width, self.height = width, height
        self.idle_cycles = self.default_idle_cycles = idle_cycles
        self.files = {name: os.path.join(directory, path) for name, path in FILES.items()}

    def idle(self):
        for name in ("reload_frames", "reload_stimulus", "start", "do_load", "do_readback",
                     "steps", "idle_cycles", "crc"):
            getattr(self.dut, name).value = 0

    def write_frames(self, config):
        """Write the frame file of ``config`` (one hex word per frame, in load order)."""
        digits = self.width                          # 4 * width bits
        with open(self.files["frames"], "w") as file:
            file.writelines(f"{frame:0{digits}x}\n" for _, _, frame in config.frames())

    def write_stimulus(self, inputs):
        """Write the stimulus file (one hex word per step, :func:`pack_edges`)."""
        w, h = self.width, self.height
        with open(self.files["stimulus"], "w") as file:
            file.writelines(f"{pack_edges(e, w, h):x}\n" for e in inputs)
            if not inputs:
                file.write("0\n")

    async def reload(self, frames=False, stimulus=False):
        """Pulse the reload inputs (the memories read their files at the rising edge)."""
        self.dut.reload_frames.value = int(frames)
        self.dut.reload_stimulus.value = int(stimulus)
        await self.cycle()
        self.dut.reload_frames.value = 0
        self.dut.reload_stimulus.value = 0

    async def command(self, *, load=False, readback=False, steps=0, crc=0):
        """Run one sequencer command and wait (one trigger) until it is done."""
        dut = self.dut
        dut.do_load.value = int(load)
        dut.do_readback.value = int(readback)
        dut.steps.value = steps
        dut.idle_cycles.value = self.idle_cycles
        dut.crc.value = crc
        dut.start.value = 1
        await self.cycle()
        dut.start.value = 0
        if not int(dut.done.value) or int(dut.busy.value):
            await RisingEdge(dut.done)
        await self.cycle()                 # the files are written at the edge done rises

    def responses(self, count):
        """The edge outputs of the last command's ``count`` steps: ``[(Edges, unknown Edges)]``."""
        w, h = self.width, self.height
        if not count:
            return []
        return [(Edges(*unpack_edges(word, w, h)), Edges(*unpack_edges(unknown, w, h)))
                for word, unknown in read_memory(self.files["responses"], count,
                                                 2 * (w + h))]

    def readback_errors(self, config):
        """``[(row, addr, expected, actual)]`` of the frames read back differently (``actual``
        -1 if a bit was X or Z)."""
        frames = config.frames()
        words = read_memory(self.files["readback"], len(frames), 4 * self.width)
        errors = []
        for (row, address, expected), (actual, unknown) in zip(frames, words):
            actual = -1 if unknown else actual
            if actual != expected:
                errors.append((row, address, expected, actual))
        return errors


async def run_case(testbench, case, faults=None):
    """Run one job case on the player (commands: load, readback, then the steps); the result
    entries of :func:`bitgrid.sim.testbench.grid.run_case`, plus ``step_seconds`` and
    ``native_seconds``."""
    width, height = testbench.width, testbench.height
    dut = testbench.dut
    start_wall, start_sim = time.monotonic(), get_sim_time("ns")
    config = case_config(case, width, height)
    inputs, expected = case_edges(case)
    testbench.idle_cycles = case.get("idle_cycles", testbench.default_idle_cycles)
    fixed = bool(case.get("fixed"))
    await testbench.reset()
    testbench.write_frames(config)
    chunks = [inputs[i:i + STIMULUS_DEPTH] for i in range(0, len(inputs), STIMULUS_DEPTH)]
    chunks = chunks or [[]]
    testbench.write_stimulus(chunks[0])
    await testbench.reload(frames=True, stimulus=True)
    began, began_cpu = time.monotonic(), time.process_time()
    if fixed:
        await testbench.cycle()
    else:
        crc = config.frames_crc() if case.get("crc") is None else case["crc"]
        await testbench.command(load=True, crc=crc)
    load_seconds = time.monotonic() - began
    load_cpu_seconds = time.process_time() - began_cpu
    valid, error = int(dut.valid.value), int(dut.error.value)
    checker = StepChecker(config, expected, width, height, faults)
    began = time.monotonic()
    await testbench.command(readback=True)
    readback_seconds = time.monotonic() - began
    readback = testbench.readback_errors(config)
    step_start = get_sim_time("step")
    step_seconds = step_cpu_seconds = 0.0
    offset = 0
    for index, chunk in enumerate(chunks):
        if index:
            testbench.write_stimulus(chunk)
            await testbench.reload(stimulus=True)
        began, began_cpu = time.monotonic(), time.process_time()
        await testbench.command(steps=len(chunk))
        step_seconds += time.monotonic() - began
        step_cpu_seconds += time.process_time() - began_cpu
        for t, (actual, unknown) in enumerate(testbench.responses(len(chunk))):
            checker.check(offset + t, chunk[t], actual, unknown)
        offset += len(chunk)
    return {
        "name": case.get("name", "case"),
        "steps": len(inputs),
        **checker.entries(),
        "config_valid": valid,
        "config_error": error,
        "readback_errors": [list(r) for r in readback],
        "subcycle": int(dut.subcycle.value),
        "phase": int(dut.phase.value),
        "step_start": step_start,
        "sim_time_ns": get_sim_time("ns") - start_sim,
        "wall_seconds": time.monotonic() - start_wall,
        "load_seconds": load_seconds,
        "readback_seconds": readback_seconds,
        "step_seconds": step_seconds,
        "step_cpu_seconds": step_cpu_seconds,
        "load_cpu_seconds": load_cpu_seconds,
        "native_seconds": load_seconds + readback_seconds + step_seconds,
    }


@cocotb.test()
async def run_job(dut):
    """Run every case of the job named by ``$BITGRID_SIM_JOB`` on the player."""
    job = jobs.read_job("grid")
    testbench = PlayerTestbench(dut, job["width"], job["height"],
                                os.path.dirname(os.path.abspath(job["result"])),
                                period_ns=job.get("clock_ns", 10),
                                idle_cycles=job.get("idle_cycles", 1))
    own = set(PLUSARGS.values())
    results = Results(job, "grid", plusargs=sorted(
        f"+{name}" if value is True else f"+{name}={value}"
        for name, value in cocotb.plusargs.items() if name not in own))
    for case in job["cases"]:
        result = await run_case(testbench, case, job.get("faults"))
        if case.get("crc") is not None:
            result["expect_rejected"] = True
        results.add(result, case_failed(result))
    results.finish()
