"""Running configurations and vector cases on the simulated gateware (the API under
``bitgrid sim``).

Every function checks all of its input first and raises the model's exceptions
(:class:`~bitgrid.BitstreamError`, :class:`~bitgrid.vectors.VectorFormatError`,
:class:`~bitgrid.GridSizeError`, ``ValueError`` for a bad option) before anything is built or
simulated; then it builds (or finds in the cache) one simulation model per grid size and runs
all the cases of that size in one simulator process.
"""

import dataclasses
import os
import typing

from bitgrid import bitstream as _bitstream
from bitgrid.checks import check_int
from bitgrid.config import Configuration, GridSizeError, check_grid_size
from bitgrid.terms import GATEWARE_STORAGES, SIDES, Edges, check_simulator, check_storage
from bitgrid.vectors import (BadStreamCase, Mismatch, VectorCase, VectorFormatError,
                             format_mismatches, load_case)

from . import backends
from . import builds as _builds
from . import runner as _runner
from .jobs import JOB_FORMATS

__all__ = ["SimCase", "SimResult", "FrameMismatch", "make_case", "run_case", "run_cases",
           "run_vector_case", "run_vector_file", "run_vector_files"]


class FrameMismatch(typing.NamedTuple):
    """A configuration frame that read back differently from what was loaded (``actual`` is
    -1 if some bit read X or Z)."""
    row: int
    addr: int
    expected: int
    actual: int

    def __str__(self):
        actual = "X" if self.actual < 0 else f"0x{self.actual:x}"
        return (f"frame row {self.row} address {self.addr}: wrote 0x{self.expected:x}, "
                f"read {actual}")


class SimCase(typing.NamedTuple):
    """A checked job for the simulator: a configuration, the edge inputs of each step and,
    optionally, the expected edge outputs of each step. Build it with :func:`make_case`."""
    name: str
    config: Configuration
    inputs: list
    expected: list = None
    crc: int = None          # commit this CRC instead of the right one (tests of the CRC check)
    idle_cycles: int = None  # cycles with step low after each step; None: run_cases' default

    @property
    def width(self):
        return self.config.width

    @property
    def height(self):
        return self.config.height


@dataclasses.dataclass
class SimResult:
    """The outcome of one case on one simulator.

    :attr outputs: the grid's edge outputs after each step, :class:`~bitgrid.Edges` (a lane
        that read X or Z is 0 here and a mismatch below).
    :attr mismatches: :class:`~bitgrid.vectors.Mismatch` es against the expected outputs (the
        vector file); empty when no expected outputs were given.
    :attr emulator_mismatches: mismatches against the reference emulator, with the emulator's
        value as ``expected``.
    :attr readback_ok: every frame read back equal to the configuration.
    :attr readback_errors: the :class:`FrameMismatch` es.
    :attr config_valid: ``cfg.valid`` after the load (the grid accepted the configuration).
    :attr config_error: ``cfg.error`` after the load (the CRC check failed).
    :attr subcycle: the grid's subcycle counter after the last step (should equal ``steps``).
    :attr build_seconds: time spent building the model now (0.0 if it came from the cache).
    :attr run_seconds: wall time of the case inside the simulator.
    :attr process_seconds: wall time of the whole simulator process (shared by the cases run
        together).
    :attr sim_time_ns: simulated time of the case.
    :attr waves: the waveform file written, if any.
    :attr run_dir: the folder of the simulator run (job, result, ``sim.log``) when kept.
    :attr fixed: the configuration was compiled into the gateware, not loaded.
    :attr plusargs: the simulator's plusargs, as the test bench saw them.
    :attr save_file: the GTKWave save file written beside :attr:`waves`, if any.
    :attr player, native_seconds, load_seconds: see below.
    """
    name: str
    simulator: str
    storage: str
    width: int
    height: int
    steps: int
    outputs: list
    mismatches: list
    emulator_mismatches: list
    readback_ok: bool
    readback_errors: list
    config_valid: bool
    config_error: bool
    subcycle: int
    phase: int
    build_seconds: float
    build_cached: bool
    run_seconds: float
    process_seconds: float
    sim_time_ns: float
    waves: str = None
    run_dir: str = None
    fixed: bool = False
    plusargs: list = dataclasses.field(default_factory=list)
    save_file: str = None
    #: The case ran on the stimulus player (:mod:`bitgrid.hdl.player`), not step by step.
    player: bool = False
    #: With the player: wall time of its commands (the simulator running on its own: load,
    #: readback and subcycles), of which :attr:`load_seconds` for the load; else None.
    native_seconds: float = None
    load_seconds: float = None

    @property
    def ok(self):
        """No mismatch of any kind, configuration accepted and read back, and the counter equal
        to the steps run."""
        return (not self.mismatches and not self.emulator_mismatches and self.readback_ok
                and self.config_valid and not self.config_error
                and self.subcycle == self.steps
                and self.phase == self.steps % 2)

    def summary(self, limit=10):
        """A human-readable report (several lines if something differs)."""
        head = (f"{self.name}: {self.simulator} {self.width}x{self.height} {self.storage}"
                f"{' fixed' if self.fixed else ''}, {self.steps} steps: ")
        if self.ok:
            return head + "OK"
        lines = [head + "FAILED"]
        if not self.config_valid or self.config_error:
            lines.append(f"  configuration was not accepted (cfg.valid={int(self.config_valid)}, "
                         f"cfg.error={int(self.config_error)})")
        if self.readback_errors:
            lines.append(f"  {len(self.readback_errors)} frame(s) read back wrong:")
            lines += ["    " + str(f) for f in self.readback_errors[:limit]]
        if self.subcycle != self.steps:
            lines.append(f"  subcycle counter is {self.subcycle} after {self.steps} steps")
        lines += mismatch_lines(self.mismatches, self.emulator_mismatches, limit)
        return "\n".join(lines)


def mismatch_lines(mismatches, emulator_mismatches, limit=10):
    """Report lines (indented) for the mismatches against the vector file and against the
    reference emulator, at most ``limit`` of each."""
    lines = []
    for what, found in (("the vector file", mismatches),
                        ("the reference emulator", emulator_mismatches)):
        if found:
            lines.append(f"  {len(found)} mismatching lane(s) against {what}:")
            lines += ["    " + line for line in format_mismatches(found, limit).splitlines()]
    return lines


def _configuration(config, width=None, height=None):
    """A :class:`Configuration` from a Configuration, a Bitstream, BGBS bytes or a BGBS path."""
    if width is not None or height is not None:
        if width is None or height is None:
            raise ValueError("Give both width and height, or neither")
        check_grid_size(width, height)
    if isinstance(config, _bitstream.Bitstream):
        config = config.config
    elif isinstance(config, (bytes, bytearray, memoryview)):
        config = _bitstream.read(config, width=width, height=height).config
    elif isinstance(config, (str, os.PathLike)):
        config = _bitstream.load(config, width=width, height=height).config
    if not isinstance(config, Configuration):
        raise TypeError(f"Expected a Configuration, a Bitstream, BGBS bytes or a BGBS file "
                        f"path, not {config!r}")
    if width is not None and (config.width, config.height) != (width, height):
        raise GridSizeError(f"The configuration is for a {config.width} x {config.height} grid, "
                            f"the simulated grid is {width} x {height}")
    return config


def _edges_list(values, width, height, what):
    if isinstance(values, (str, bytes)) or not isinstance(values, typing.Iterable):
        raise VectorFormatError(f"{what} must be a list of edge words, one per step")
    lanes = (width, height, width, height)
    result = []
    for t, value in enumerate(values):
        try:
            edges = Edges.coerce(value)
        except (TypeError, ValueError) as error:
            raise VectorFormatError(f"{what}[{t}]: {error}") from None
        for side, word, count in zip(SIDES, edges, lanes):
            if not isinstance(word, int) or word < 0 or word >> count:
                raise VectorFormatError(f"{what}[{t}].{side} = {word!r} does not fit the "
                                        f"{count} lanes of a {width} x {height} grid")
        result.append(edges)
    return result


def make_case(config, steps, *, expected=None, name="case", width=None, height=None, crc=None,
              idle_cycles=None):
    """Check and bundle one job for the simulator.

    :param config: a :class:`~bitgrid.Configuration`, a :class:`~bitgrid.Bitstream`, BGBS bytes
        or the path of a BGBS file.
    :param steps: the edge inputs of each step: anything :meth:`bitgrid.Edges.coerce` takes.
    :param expected: optional expected edge outputs, one per step.
    :param width, height: optional size of the simulated grid; the configuration must match.
    :param crc: commit this CRC instead of the right one (the grid must refuse the load).
    :param idle_cycles: clock cycles with ``step`` low after each step (0: steps back to back);
        default: the one given to :func:`run_cases`.
    :raises BitstreamError: for a bad bitstream (including a size other than ``width`` x
        ``height``).
    :raises GridSizeError: for a bad size, or a configuration of another size.
    :raises VectorFormatError: for malformed steps or expected outputs.
    """
    config = _configuration(config, width, height)
    inputs = _edges_list(steps, config.width, config.height, "steps")
    if expected is not None:
        expected = _edges_list(expected, config.width, config.height, "expected")
        if len(expected) != len(inputs):
            raise VectorFormatError(f"{len(inputs)} steps but {len(expected)} expected outputs")
    if crc is not None:
        check_int(crc, "crc", minimum=0, maximum=(1 << 32) - 1)
    if idle_cycles is not None:
        check_int(idle_cycles, "idle_cycles", minimum=0)
    return SimCase(str(name), config, inputs, expected, crc, idle_cycles)


def _check_options(simulator, storage, waves):
    check_simulator(simulator)
    check_storage(storage, GATEWARE_STORAGES)
    if waves is not None:
        backends.wave_format(waves)


def run_cases(cases, *, simulator="icarus", storage="ff", waves=None, idle_cycles=1,
              keep=False, quiet=False, fixed=False, build_args=(), plusargs=(), faults=None,
              player=None, engine="direct", evaluators=None):
    """Run :class:`SimCase` s (see :func:`make_case`); cases of one grid size share one build
    and one simulator process.

    :param waves: path of a ``.vcd`` or ``.fst`` file to dump (only with cases of one size).
    :param fixed: compile each case's configuration into the gateware (the grid's ``init``:
        present from power-up, never loaded, still read back) instead of loading it through
        the configuration port; one build and one simulator process per configuration.
    :param build_args: extra arguments of the simulator's compiler (e.g. ``("--x-assign",
        "unique")`` for Verilator); a separate cached build.
    :param plusargs: run-time arguments of the simulator (e.g. ``("+verilator+rand+reset+2",)``).
    :param idle_cycles: clock cycles with ``step`` low after each step (0: back to back).
    :param faults: test only: a :class:`bitgrid.faultmodel.FaultSet` of the cases' grid size;
        the cases run on a grid with those hardware faults (a separate cached build, see
        :class:`bitgrid.hdl.grid.Grid`), and the reference emulator of
        :attr:`SimResult.emulator_mismatches` is the fault model
        (:class:`bitgrid.faultmodel.FaultyEmulator`) with the same faults.
    :param keep: keep the simulator's run folder (job, result and log; see
        :attr:`SimResult.run_dir`).
    :param quiet: no progress lines on stderr.
    :param player: run on the stimulus player (:mod:`bitgrid.hdl.player`: the whole stimulus
        handed over at once, the configuration loaded through the configuration port by its
        sequencer, no Python per subcycle) if true, step by step from the test bench (every
        port driven from Python each cycle: for waveforms and debugging) if false; default
        (None): the player, unless ``waves`` is given or ``$BITGRID_SIM_STEP_BY_STEP``
        (:data:`STEP_BY_STEP_ENV`) is set and not empty. The results are the same.
    :param engine, evaluators: the grid engine: ``"direct"`` (default) or ``"multiplexed"``
        with ``evaluators`` cells per clock (:func:`bitgrid.hdl.engines.make_grid`); the same
        results, a subcycle takes many clocks.
    :returns: list of :class:`SimResult`, in the order of ``cases``.
    :raises ValueError: for an unknown simulator, storage or waveform extension, a plusarg
        without ``+``, or ``fixed`` with a case that commits a wrong ``crc``.
    :raises TypeError: for build arguments or plusargs that are not a list of strings.
    :raises ToolMissingError: if the simulator is not installed.
    :raises SimulationError: if a build or a simulation fails (mismatches are results).
    """
    cases = list(cases)
    for case in cases:
        if not isinstance(case, SimCase):
            raise TypeError(f"run_cases takes SimCase objects (see make_case), not {case!r}")
    _check_options(simulator, storage, waves)
    check_int(idle_cycles, "idle_cycles", minimum=0)
    build_args = _builds.check_build_args(build_args)
    plusargs = _runner.check_plusargs(plusargs)
    if not isinstance(fixed, bool):
        raise TypeError(f"fixed must be True or False, not {fixed!r}")
    if fixed and any(case.crc is not None for case in cases):
        raise ValueError("A fixed configuration is never loaded, so it has no CRC to get "
                         "wrong: run crc cases without fixed")
    hdl_faults = _check_faults(faults, cases, fixed)
    if player is None:
        player = waves is None and not os.environ.get(STEP_BY_STEP_ENV)
    if not isinstance(player, bool):
        raise TypeError(f"player must be True, False or None, not {player!r}")
    if player:
        from bitgrid.hdl.player import MAX_IDLE_CYCLES
        idle = max([idle_cycles] + [c.idle_cycles for c in cases if c.idle_cycles is not None])
        if idle > MAX_IDLE_CYCLES:
            raise ValueError(f"The stimulus player counts at most {MAX_IDLE_CYCLES} idle "
                             f"cycles per step, not {idle}: run with player=False")
    groups = {}
    for index, case in enumerate(cases):
        group = (case.width, case.height, case.config.luts.tobytes() if fixed else None)
        groups.setdefault(group, []).append(index)
    if waves is not None and len(groups) > 1:
        raise ValueError("A waveform file holds one grid size (and, with fixed, one "
                         "configuration); run them separately")
    backends.backend(simulator).require(None if waves is None else backends.wave_format(waves))
    results = [None] * len(cases)
    for (width, height, _), indices in groups.items():
        build = _runner.build(width, height, storage=storage, simulator=simulator,
                              waves=None if waves is None else backends.wave_format(waves),
                              quiet=quiet, init=cases[indices[0]].config if fixed else None,
                              build_args=build_args, faults=hdl_faults,
                              top="player" if player else "grid", engine=engine,
                              evaluators=evaluators)
        job = {"format": JOB_FORMATS["grid"], "width": width, "height": height,
               "clock_ns": 10, "idle_cycles": idle_cycles,
               **({"faults": [list(f) for f in hdl_faults]} if hdl_faults else {}),
               "cases": [dict(job_case(cases[i]), **({"fixed": True} if fixed else {}))
                         for i in indices]}
        if player:
            from .testbench.player import plusargs as player_plusargs
            out, seconds = _runner.run_testbench(
                build, job, waves_path=waves, keep=keep, quiet=quiet,
                plusargs=player_plusargs() + plusargs, test_module=PLAYER_TESTBENCH)
        else:
            out, seconds = _runner.run_testbench(build, job, waves_path=waves, keep=keep,
                                                 quiet=quiet, plusargs=plusargs)
        save_file = None if waves is None else _save_file(waves, build, out, width, height)
        for i, raw in zip(indices, out["cases"]):
            results[i] = _result(raw, cases[i], build, seconds, waves, out.get("run_dir"))
            results[i].fixed = fixed
            results[i].plusargs = list(out.get("plusargs", ()))
            results[i].save_file = save_file
            results[i].player = player
            results[i].native_seconds = raw.get("native_seconds")
            results[i].load_seconds = raw.get("load_seconds")
    return results


#: Set (not empty), this environment variable makes step by step the default of
#: :func:`run_cases` (to compare the two modes, e.g. the test suite's times).
STEP_BY_STEP_ENV = "BITGRID_SIM_STEP_BY_STEP"
#: The cocotb test module of the stimulus player.
PLAYER_TESTBENCH = "bitgrid.sim.testbench.player"


def _check_faults(faults, cases, fixed):
    """The :meth:`~bitgrid.faultmodel.FaultSet.hdl_faults` of ``faults`` (``()`` for None).

    :raises TypeError: if ``faults`` is not a FaultSet.
    :raises ValueError: with ``fixed``, or with a case of another grid size."""
    if faults is None:
        return ()
    from bitgrid.faultmodel import FaultSet
    if not isinstance(faults, FaultSet):
        raise TypeError(f"faults must be a bitgrid.faultmodel.FaultSet, not {faults!r}")
    if fixed:
        raise ValueError("A faulty grid is built without a fixed configuration: run it "
                         "without fixed")
    for case in cases:
        if (case.width, case.height) != (faults.width, faults.height):
            raise ValueError(f"{case.name} is a {case.width} x {case.height} case, the faults "
                             f"are for a {faults.width} x {faults.height} grid")
    return faults.hdl_faults()


def _save_file(waves, build, out, width, height):
    """Write the GTKWave save file beside ``waves`` (:func:`bitgrid.sim.waves.write_save_file`),
    marked where the first case starts stepping; returns its path as text."""
    from . import waves as _waves
    starts = [c.get("step_start") for c in out["cases"] if c.get("step_start") is not None]
    widths = {"clk": 1, "rst": 1, "step": 1, "phase": 1, "subcycle": 32,
              **{f"{d}__{side.lower()}": lanes for d in "io"
                 for side, lanes in zip(SIDES, (width, height, width, height))}}
    return os.fspath(_waves.write_save_file(waves, top=build.toplevel, simulator=build.simulator,
                                            marker=starts[0] if starts else None,
                                            widths=widths))


def job_case(case):
    """The job entry of a :class:`SimCase` (see :mod:`bitgrid.sim.testbench.grid`)."""
    return {"name": case.name,
            "luts": [int(v) for v in case.config.luts.reshape(-1)],
            "inputs": [list(e) for e in case.inputs],
            "expected": None if case.expected is None else [list(e) for e in case.expected],
            "crc": case.crc,
            **({} if case.idle_cycles is None else {"idle_cycles": case.idle_cycles})}


def _result(raw, case, build, seconds, waves, run_dir):
    return SimResult(
        name=raw["name"], simulator=build.simulator, storage=build.storage, width=build.width,
        height=build.height, steps=raw["steps"], outputs=[Edges(*o) for o in raw["outputs"]],
        mismatches=[Mismatch(*m) for m in raw["mismatches"]],
        emulator_mismatches=[Mismatch(*m) for m in raw["emulator_mismatches"]],
        readback_ok=not raw["readback_errors"],
        readback_errors=[FrameMismatch(*r) for r in raw["readback_errors"]],
        config_valid=bool(raw["config_valid"]), config_error=bool(raw["config_error"]),
        subcycle=raw["subcycle"], phase=raw["phase"], build_seconds=build.seconds,
        build_cached=build.cached, run_seconds=raw["wall_seconds"], process_seconds=seconds,
        sim_time_ns=raw["sim_time_ns"], waves=None if waves is None else os.fspath(waves),
        run_dir=run_dir)


def run_case(config, steps, *, expected=None, simulator="icarus", storage="ff", waves=None,
             name="case", width=None, height=None, idle_cycles=1, keep=False, quiet=False,
             fixed=False, build_args=(), plusargs=(), faults=None, player=None,
             engine="direct", evaluators=None):
    """Run one configuration with the edge inputs ``steps`` on ``simulator`` and compare the
    edge outputs with ``expected`` (if given) and with the reference emulator.

    See :func:`make_case` for the arguments and the errors raised before any build, and
    :func:`run_cases` for the rest (``fixed``, ``build_args``, ``plusargs``, ``faults``,
    ``player``, ``engine``, ``evaluators``).

    :returns: :class:`SimResult`.
    """
    _check_options(simulator, storage, waves)
    case = make_case(config, steps, expected=expected, name=name, width=width, height=height)
    return run_cases([case], simulator=simulator, storage=storage, waves=waves,
                     idle_cycles=idle_cycles, keep=keep, quiet=quiet, fixed=fixed,
                     build_args=build_args, plusargs=plusargs, faults=faults,
                     player=player, engine=engine, evaluators=evaluators)[0]


def _vector_sim_case(case):
    if isinstance(case, BadStreamCase):
        raise VectorFormatError(f"{case.name} is a bitgrid-badstream-v1 case (a bitstream that "
                                "must be rejected), not a vector case")
    if not isinstance(case, VectorCase):
        raise TypeError(f"Expected a VectorCase, not {case!r}")
    bitstream = case.load_bitstream()            # checked against the case's size
    return make_case(bitstream.config, case.inputs, expected=case.outputs, name=case.name,
                     width=case.width, height=case.height)


def run_vector_case(case, *, simulator="icarus", storage="ff", waves=None, idle_cycles=1,
                    keep=False, quiet=False, fixed=False, build_args=(), plusargs=(),
                    player=None):
    """Run a loaded ``bitgrid-vectors-v1`` case (:class:`~bitgrid.vectors.VectorCase`);
    the options as :func:`run_case`.

    :raises BitstreamError: if its bitstream is bad or of another size.
    """
    _check_options(simulator, storage, waves)
    return run_cases([_vector_sim_case(case)], simulator=simulator, storage=storage,
                     waves=waves, idle_cycles=idle_cycles, keep=keep, quiet=quiet,
                     fixed=fixed, build_args=build_args, plusargs=plusargs,
                     player=player)[0]


def run_vector_file(path, *, simulator="icarus", storage="ff", waves=None, idle_cycles=1,
                    keep=False, quiet=False, fixed=False, build_args=(), plusargs=(),
                    player=None):
    """Run the ``bitgrid-vectors-v1`` case file ``path`` (JSON, with its BGBS beside it);
    the options as :func:`run_case`.

    :raises VectorFormatError: if the file is malformed (or is a bad-bitstream case).
    :raises BitstreamError: if its bitstream is bad or not of the case's size.
    """
    return run_vector_files([path], simulator=simulator, storage=storage, waves=waves,
                            idle_cycles=idle_cycles, keep=keep, quiet=quiet, fixed=fixed,
                            build_args=build_args, plusargs=plusargs, player=player)[0]


def run_vector_files(paths, *, simulator="icarus", storage="ff", waves=None, idle_cycles=1,
                     keep=False, quiet=False, fixed=False, build_args=(), plusargs=(),
                     player=None):
    """Run several case files; cases of one grid size share a build and a simulator process.
    Every file is loaded and checked before anything is built; the options
    as :func:`run_case`.

    :returns: list of :class:`SimResult`, in the order of ``paths``.
    """
    _check_options(simulator, storage, waves)
    cases = [_vector_sim_case(load_case(p)) for p in paths]
    return run_cases(cases, simulator=simulator, storage=storage, waves=waves,
                     idle_cycles=idle_cycles, keep=keep, quiet=quiet, fixed=fixed,
                     build_args=build_args, plusargs=plusargs, player=player)
