"""The host runtime against the simulated host controller (``bitgrid run --target sim``).

:func:`run_host_cases` builds (or finds in the cache, see :mod:`bitgrid.sim.runner`) the
simulation model of a :class:`~bitgrid.hdl.host.HostController` — the logic of a board top
without its pins — and runs :mod:`bitgrid.sim.testbench.host` on it: inside cocotb, the host
runtime's :class:`~bitgrid.host.ProtocolTarget` loads each configuration and steps it over a
bit-level UART model on the controller's ``rx``/``tx`` pins, so every byte crosses the same
protocol path as with a real serial port.
"""

import dataclasses
import typing

from bitgrid.config import Configuration
from bitgrid.host import LinkError, Status, TargetError
from bitgrid.terms import Edges
from bitgrid.vectors import Mismatch, format_mismatches

from . import runner as _runner
from .jobs import JOB_FORMATS, RESULT_FORMATS
from .api import make_case

__all__ = ["HostCase", "HostResult", "run_host_cases", "run_host_case", "HOST_JOB_FORMAT",
           "HOST_RESULT_FORMAT", "TEST_MODULE"]

#: Formats of the job file (runner to test bench) and of the result file (test bench to
#: runner).
HOST_JOB_FORMAT, HOST_RESULT_FORMAT = JOB_FORMATS["host"], RESULT_FORMATS["host"]
#: The cocotb test module run on a host-controller build.
TEST_MODULE = "bitgrid.sim.testbench.host"

#: Simulated seconds the host waits for an answer before sending a request again. A load
#: commit of a 32 x 32 grid takes about 10 000 cycles; at 10 ns per cycle this is 200 000.
DEFAULT_TIMEOUT_S = 2e-3


class HostCase(typing.NamedTuple):
    """A configuration and the edge inputs of each step, with the expected outputs (or None)."""
    name: str
    config: Configuration
    inputs: list
    expected: list = None
    readback: bool = False       # read the configuration back through the protocol and check it

    @property
    def width(self):
        return self.config.width

    @property
    def height(self):
        return self.config.height


@dataclasses.dataclass
class HostResult:
    """The outcome of one case on the simulated host controller.

    :attr outputs: the edge outputs that each STEP answered, :class:`~bitgrid.Edges`.
    :attr mismatches: :class:`~bitgrid.vectors.Mismatch` es against the expected outputs.
    :attr readback_errors: ``(row, address, loaded, read)`` of frames read back differently
        (None if no readback was asked for).
    :attr retransmissions: requests the host sent again during this case.
    :attr status: the device's STATUS counters after the case (a dict).
    :attr corrupted_writes: indices of the writes the fault injector corrupted (whole run).
    """
    name: str
    steps: int
    outputs: list
    mismatches: list
    readback_errors: list
    retransmissions: int
    status: dict
    corrupted_writes: list
    build_seconds: float
    build_cached: bool
    run_seconds: float
    process_seconds: float
    sim_time_ns: float

    @property
    def ok(self):
        return not self.mismatches and not self.readback_errors

    def summary(self):
        if self.ok:
            return f"{self.name}: all {self.steps} steps match"
        parts = []
        if self.mismatches:
            parts.append(format_mismatches(self.mismatches))
        if self.readback_errors:
            parts.append(f"{len(self.readback_errors)} frame(s) read back differently")
        return f"{self.name}: " + "\n".join(parts)


def _words(steps):
    """Edges as JSON lists for the job file."""
    return [list(e) for e in steps]


def run_host_cases(cases, *, simulator="icarus", storage="ff", divisor=_runner.HOST_DIVISOR,
                   corrupt_writes=(), timeout_s=DEFAULT_TIMEOUT_S, retries=4, clock_ns=10,
                   keep=False, quiet=False):
    """Run :class:`HostCase` s of one grid size in one simulator process, one host session.

    :param corrupt_writes: indices of host writes (from 0: the first write is the resynchronising
        delimiter, then IDENTIFY, then the requests in order) in which one bit is flipped on the
        line.
    :returns: list of :class:`HostResult`.
    :raises ValueError: for cases of different sizes or bad options.
    :raises ToolMissingError: if the simulator is not installed.
    :raises SimulationError: if the build or the simulator fails.
    :raises LinkError, TargetError: if the host session failed (no valid answer after the
        retries, or the device refused a request).
    """
    cases = list(cases)
    if not cases:
        raise ValueError("no cases to run")
    sizes = {(c.width, c.height) for c in cases}
    if len(sizes) != 1:
        raise ValueError(f"one host session runs one grid size, not {sorted(sizes)}")
    (width, height), = sizes
    for case in cases:
        if case.expected is not None and len(case.expected) != len(case.inputs):
            raise ValueError(f"{case.name}: {len(case.expected)} expected outputs for "
                             f"{len(case.inputs)} inputs")
    build = _runner.build(width, height, storage=storage, simulator=simulator, quiet=quiet,
                          top="host", divisor=divisor)
    job = {
        "format": HOST_JOB_FORMAT, "width": width, "height": height, "divisor": divisor,
        "clock_ns": clock_ns, "timeout_s": timeout_s, "retries": retries,
        "corrupt_writes": list(corrupt_writes),
        "cases": [{"name": c.name, "luts": c.config.luts.reshape(-1).tolist(),
                   "inputs": _words(c.inputs),
                   "expected": None if c.expected is None else _words(c.expected),
                   "readback": bool(c.readback)} for c in cases],
    }
    result, seconds = _runner.run_testbench(build, job, keep=keep, quiet=quiet,
                                            test_module=TEST_MODULE)
    error = result.get("error")
    if error:
        if error["kind"] == "TargetError":
            status = error.get("status")
            try:
                status = Status(status)
            except ValueError:
                pass                           # a status this runtime does not know
            raise TargetError(status, error["message"])
        raise LinkError(error["message"])
    out = []
    for case in result["cases"]:
        out.append(HostResult(
            name=case["name"], steps=case["steps"],
            outputs=[Edges(*o) for o in case["outputs"]],
            mismatches=[Mismatch(*m) for m in case["mismatches"]],
            readback_errors=case["readback_errors"],
            retransmissions=case["retransmissions"], status=case["status"],
            corrupted_writes=result.get("corrupted_writes", []),
            build_seconds=build.seconds, build_cached=build.cached,
            run_seconds=case["wall_seconds"], process_seconds=seconds,
            sim_time_ns=case["sim_time_ns"]))
    return out


def run_host_case(config, inputs, *, expected=None, name="run", readback=False, **options):
    """Run one configuration on the simulated host controller; see :func:`run_host_cases`.

    The configuration and edge words are checked as :func:`bitgrid.sim.make_case` checks them,
    before anything is built.
    """
    checked = make_case(config, inputs, expected=expected, name=name)
    return run_host_cases([HostCase(name, checked.config, checked.inputs, checked.expected,
                                    readback)], **options)[0]
