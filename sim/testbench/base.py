"""What every cocotb test bench of this project shares: the clock, reset, the edge buses, the
configuration port driver, X-aware reads, and the case and result bookkeeping of a job.

Timing (all signals are driven right after a falling edge of the clock and sampled at a falling
edge, half a period away from the rising edge where the design samples them, so that Icarus and
Verilator agree):

* :meth:`Testbench.start` drives every input (nothing is X at time 0), holds ``rst`` and starts
  the clock low first (no rising edge at time 0), then synchronises on the first rising edge
  and the falling edge after it (Icarus sees x -> 0 at time 0 as a falling edge, Verilator does
  not);
* :meth:`Testbench.reset` holds ``rst`` for ``cycles`` rising edges with every input at 0;
* the edge buses are the top's ports ``i__n`` ... ``i__w`` (inputs) and ``o__n`` ... ``o__w``
  (outputs), :class:`~bitgrid.hdl.grid.EdgeSignature` flattened by Amaranth.
"""

import numpy as np
import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from bitgrid.config import Configuration
from bitgrid.emulator import Emulator
from bitgrid.terms import SIDES, Edges
from bitgrid.vectors import compare_step

from .. import jobs

__all__ = ["TestbenchError", "Testbench", "ConfigPort", "read_word", "compare_outputs",
           "edge_ports", "case_config", "case_edges", "StepChecker", "Results"]


class TestbenchError(AssertionError):
    """The design did not follow the port protocol (for example ``w_ready`` never rose)."""

    __test__ = False                 # not a pytest test class


def read_word(handle):
    """``(word, unknown)``: the value of ``handle`` as an int with X/Z bits as 0, and the mask
    of the X/Z bits."""
    value = handle.value
    if value.is_resolvable:
        return int(value), 0
    word = unknown = 0
    for char in str(value):                  # most significant bit first
        word <<= 1
        unknown <<= 1
        if char == "1":
            word |= 1
        elif char != "0":
            unknown |= 1
    return word, unknown


def edge_ports(dut, direction):
    """The four edge bus handles ``<direction>__n`` ... ``<direction>__w`` of ``dut``
    (``direction``: ``"i"`` or ``"o"``), in N, E, S, W order."""
    return tuple(getattr(dut, f"{direction}__{side.lower()}") for side in SIDES)


def compare_outputs(step, expected, actual, unknown, width, height):
    """Mismatches between :class:`~bitgrid.Edges`, lanes that read X/Z reported with
    ``actual = -1``."""
    flipped = Edges(*(a ^ (u & ~(a ^ e)) for e, a, u in zip(expected, actual, unknown)))
    found = compare_step(step, expected, flipped, width, height)
    lanes = dict(zip(SIDES, unknown))
    return [m._replace(actual=-1) if lanes[m.side] >> m.lane & 1 else m for m in found]


def case_config(case, width, height):
    """The :class:`~bitgrid.Configuration` of a job case (``luts``: ``H*W*4`` LUT tables,
    row-major, N E S W)."""
    return Configuration(width, height,
                         np.asarray(case["luts"], dtype=np.uint16).reshape(height, width, 4))


def case_edges(case):
    """``(inputs, expected)`` of a job case as lists of :class:`~bitgrid.Edges` (``expected``
    None if the case has none)."""
    expected = case.get("expected")
    return ([Edges(*i) for i in case["inputs"]],
            None if expected is None else [Edges(*o) for o in expected])


class StepChecker:
    """Checks the edge outputs of every step against the reference emulator
    (:class:`~bitgrid.Emulator` of ``config``, run here) and against ``expected`` (a list of
    :class:`~bitgrid.Edges`, or None); lanes that read X/Z are mismatches with ``actual = -1``.
    With ``faults`` (the job's ``(x, y, kind, output, address)`` lists of a faulty grid) the
    reference is :class:`bitgrid.faultmodel.FaultyEmulator` with those faults.
    """

    def __init__(self, config, expected, width, height, faults=None):
        if faults:
            from bitgrid.faultmodel import FaultSet, FaultyEmulator
            self.emulator = FaultyEmulator(config, FaultSet.from_hdl(width, height, faults))
        else:
            self.emulator = Emulator(config)
        self.expected = expected
        self.width, self.height = width, height
        self.outputs, self.mismatches, self.emulator_mismatches = [], [], []

    def check(self, t, edges, actual, unknown):
        """Step the emulator with the inputs ``edges`` of step ``t`` and compare ``actual``
        (with the X/Z masks ``unknown``)."""
        self.outputs.append(list(actual))
        reference = self.emulator.step(edges)
        self.emulator_mismatches += compare_outputs(t, reference, actual, unknown, self.width,
                                                    self.height)
        if self.expected is not None:
            self.mismatches += compare_outputs(t, self.expected[t], actual, unknown,
                                               self.width, self.height)

    def entries(self):
        """The ``outputs``, ``mismatches`` and ``emulator_mismatches`` entries of a case
        result."""
        return {"outputs": self.outputs,
                "mismatches": [list(m) for m in self.mismatches],
                "emulator_mismatches": [list(m) for m in self.emulator_mismatches]}


class Results:
    """The result file of a job (:mod:`bitgrid.sim.jobs`), written after every case so that a
    simulator that dies leaves what it had.

    :param kind: ``"grid"``, ``"host"`` or ``"mesh"``; ``entries``: extra top-level entries.
    """

    def __init__(self, job, kind, **entries):
        self.path = job["result"]
        self.out = jobs.new_result(kind, **entries)

    def add(self, result, failed):
        """Append a case's result (its ``failed`` entry set to ``failed``) and write."""
        result["failed"] = bool(failed)
        self.out["cases"].append(result)
        self.out["failed"] = self.out["failed"] or result["failed"]
        self.write()

    def write(self):
        jobs.write_result(self.path, self.out)

    def finish(self):
        """Mark the result complete and write it; then fail the cocotb test if a case failed
        (so that a test bench also works in a plain cocotb flow)."""
        self.out["complete"] = True
        self.write()
        bad = [c["name"] for c in self.out["cases"] if c.get("failed")]
        assert not bad, f"cases with differences: {', '.join(bad)}"


class ConfigPort:
    """Drives one configuration port (:class:`~bitgrid.hdl.grid.ConfigSignature`) whose signals
    are the top-level ports ``<prefix>begin``, ``<prefix>row`` ... of ``dut``; ``falling`` is the
    falling-edge trigger of the clock of the port's domain.

    * :meth:`load`: ``begin`` for one cycle; then each frame is presented with ``w_en`` high
      until a cycle where ``w_ready`` is high (the write happens at that cycle's rising edge);
      then ``commit`` with the CRC until ``w_ready`` is high; ``valid`` and ``error`` are read
      at the falling edge right after the committing edge;
    * :meth:`readback`: one frame address per cycle, ``r_data`` read one cycle later, or
      once ``r_ready`` is high (a multiplexed grid gathers a frame in many cycles; a port
      without ``r_ready`` is always ready).
    """

    #: Cycles to wait for ``w_ready`` before declaring the port stuck.
    READY_TIMEOUT = 10000

    def __init__(self, dut, prefix, falling):
        self._port = {name: getattr(dut, prefix + name) for name in (
            "begin", "row", "addr", "w_data", "w_en", "w_ready", "r_data", "commit", "crc",
            "valid", "error")}
        if hasattr(dut, prefix + "r_ready"):
            self._port["r_ready"] = getattr(dut, prefix + "r_ready")
        self._prefix = prefix
        self._falling = falling

    def __len__(self):
        """Bits of ``w_data``."""
        return len(self._port["w_data"])

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
        raise TestbenchError(f"{self._prefix}w_ready stayed low for {self.READY_TIMEOUT} "
                             f"cycles ({what})")

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

    def status(self):
        """``(valid, error)`` as the port shows them now (of a configuration compiled into the
        gateware, which is never loaded)."""
        return int(self._port["valid"].value), int(self._port["error"].value)

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
            if "r_ready" in port:
                for _ in range(self.READY_TIMEOUT):
                    if int(port["r_ready"].value):
                        break
                    await self.cycle()
                else:
                    raise TestbenchError(f"{self._prefix}r_ready stayed low for "
                                         f"{self.READY_TIMEOUT} cycles (readback)")
            actual, unknown = read_word(port["r_data"])
            if index + 1 < len(frames):
                port["row"].value, port["addr"].value = frames[index + 1][:2]
            if unknown:
                actual = -1
            if actual != expected:
                errors.append((row, address, expected, actual))
        return errors


class Testbench:
    """The base of the test benches: owns ``dut``'s clock (``clock``, default ``dut.clk``, of
    ``period_ns``), its reset (``rst``) and, with ``edges``, its edge buses. Subclasses add
    their ports to :meth:`idle`. Timing: see the module docstring.
    """

    __test__ = False                 # not a pytest test class
    #: cocotb's clock implementation (``Clock(impl=...)``): None lets cocotb choose, ``"gpi"``
    #: toggles the clock in C++ (no Python per edge).
    clock_impl = None

    def __init__(self, dut, *, period_ns=10, edges=True, clock=None):
        self.dut = dut
        self.period_ns = period_ns
        self.clk = dut.clk if clock is None else clock
        self._clock = None
        self._falling = FallingEdge(self.clk)
        self._inputs = edge_ports(dut, "i") if edges else ()
        self._outputs = edge_ports(dut, "o") if edges else ()

    async def cycle(self, count=1):
        """Wait for ``count`` falling edges of the clock."""
        for _ in range(count):
            await self._falling

    def idle(self):
        """Every input of the design to 0 (the edge inputs here; subclasses add theirs)."""
        for handle in self._inputs:
            handle.value = 0

    async def start(self):
        """Drive every input, hold ``rst`` and start the clock (once)."""
        if self._clock is None:
            self.idle()
            self.dut.rst.value = 1
            self.clk.value = 0
            self._clock = cocotb.start_soon(
                Clock(self.clk, self.period_ns, unit="ns", impl=self.clock_impl).start(
                    start_high=False))
            await RisingEdge(self.clk)
            await self.cycle()

    async def reset(self, cycles=2):
        """Synchronous reset for ``cycles`` rising edges, every input at 0."""
        await self.start()
        self.idle()
        self.dut.rst.value = 1
        await self.cycle(cycles)
        self.dut.rst.value = 0

    def drive_edges(self, edges):
        """Set the edge inputs to ``edges`` (:class:`~bitgrid.Edges`)."""
        for handle, word in zip(self._inputs, edges):
            handle.value = word

    def outputs(self):
        """``(edges, unknown)``: the edge outputs as :class:`~bitgrid.Edges`, and the X/Z lanes
        as :class:`~bitgrid.Edges` of masks."""
        words = [read_word(handle) for handle in self._outputs]
        return Edges(*(w for w, _ in words)), Edges(*(u for _, u in words))
