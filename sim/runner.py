"""Runs of a cocotb test bench on a simulator build (:func:`run_testbench`).

The simulation layer is split along its seams; this module runs, the others hold:

* :mod:`bitgrid.sim.backends`: the simulators as data (tools, versions, build arguments);
* :mod:`bitgrid.sim.cache`: the cache folder, its keys and the Verilog stage;
* :mod:`bitgrid.sim.builds`: simulator builds (:func:`build`, :class:`Build`);
* :mod:`bitgrid.sim.jobs`: the job and result files between the runner and a test bench;
* :mod:`bitgrid.processes`: the simulator processes, which die with their parent;
* :mod:`bitgrid.sim.waves`: the viewer's save file of a waveform dump;
* :mod:`bitgrid._overrides`: the cocotb runner with edited commands.

The names of those modules that callers used from here are re-exported.
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bitgrid import processes
from bitgrid.terms import STORAGES
from bitgrid.toolchain import find_tool, setup_environment  # noqa: F401 (patched by tests)

from . import jobs
from .backends import (BACKENDS, SIMULATORS, WAVE_FORMATS, Backend, LibraryMissingError,
                       available, backend as _backend, simulator_version, wave_format)
from .builds import (HOST_DIVISOR, HOST_TOP, TOP, Build, SimulationError, build,
                    grid_verilog_file, host_verilog_file, runner_for)
from .cache import cache_dir, cached_verilog, progress
from .jobs import JOB_ENV, JOB_FORMAT, RESULT_FORMAT, read_job, write_result

__all__ = ["SIMULATORS", "STORAGES", "TOP", "TESTBENCH_MODULE", "WAVE_FORMATS", "Backend",
           "BACKENDS", "Build", "SimulationError", "cache_dir", "grid_verilog_file", "build",
           "run_testbench", "check_plusargs", "simulator_version", "wave_format",
           "available", "LibraryMissingError",
           "HOST_TOP", "HOST_DIVISOR", "host_verilog_file", "cached_verilog", "JOB_ENV",
           "JOB_FORMAT", "RESULT_FORMAT", "read_job", "write_result"]

#: The cocotb test module of the grid.
TESTBENCH_MODULE = "bitgrid.sim.testbench.grid"

def _wave_arguments(backend, build_, waves_path):
    """``(test_args, plusargs, suffix)`` of a run that dumps waveforms to ``waves_path`` (none
    if it is None); the file's folder is made and an old file removed.

    :raises ValueError: if ``build_`` is not a waveform build of the file's format."""
    if waves_path is None:
        return [], [], []
    fmt = wave_format(waves_path)
    if build_.waves != fmt:
        raise ValueError(f"Dumping {fmt.upper()} needs a build made with waves={fmt!r}")
    path = str(Path(waves_path).resolve())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return ([a.format(path=path) for a in backend.wave_test_args.get(fmt, ())],
            [a.format(path=path) for a in backend.wave_plusargs],
            list(backend.wave_suffix.get(fmt, ())))


def _remove_partial_run(run_dir, waves_path):
    """Remove the run folder and the waveform dump (if any) of an interrupted run."""
    shutil.rmtree(run_dir, ignore_errors=True)
    if waves_path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(Path(waves_path).resolve())


def check_plusargs(plusargs):
    """``plusargs`` (run-time arguments of the simulator, e.g. ``+verilator+rand+reset+2``) as a
    tuple of strings.

    :raises TypeError: if it is a string or holds something other than strings.
    :raises ValueError: for an argument that does not start with ``+``.
    """
    if isinstance(plusargs, (str, bytes)):
        raise TypeError(f"plusargs must be a list of strings, not the string {plusargs!r}")
    plusargs = tuple(plusargs)
    for arg in plusargs:
        if not isinstance(arg, str):
            raise TypeError(f"plusargs must be strings, not {arg!r}")
        if not arg.startswith("+") or len(arg) < 2:
            raise ValueError(f"A plusarg starts with '+' (e.g. +verilator+rand+reset+2), "
                             f"not {arg!r}")
    return plusargs


def run_testbench(build_, job, *, waves_path=None, keep=False, quiet=False,
              test_module=TESTBENCH_MODULE, plusargs=()):
    """Run a cocotb test bench on ``build_`` with ``job``.

    :param build_: a :class:`~bitgrid.sim.builds.Build`.
    :param job: the job object (see :mod:`bitgrid.sim.jobs`); its ``result`` entry is set here.
    :param waves_path: dump waveforms to this file (``build_`` must be a waveform build of the
        matching format).
    :param keep: keep the run folder (job, result, log) even when the run succeeds.
    :param test_module: the cocotb test module (:mod:`bitgrid.sim.testbench.host` for a host
        build).
    :param plusargs: run-time arguments of the simulator (:func:`check_plusargs`), after the
        waveform ones.
    :returns: ``(result, seconds)``: the test bench's result object and the wall time of the run.
    :raises SimulationError: if the simulator or the test bench failed without producing a result.
    :raises KeyboardInterrupt: on Ctrl-C, :class:`bitgrid.processes.Terminated` on SIGTERM: the
        simulator has been ended, and the run folder and the waveform dump removed.
    """
    backend = _backend(build_.simulator)
    backend.require()
    extra_plusargs = check_plusargs(plusargs)
    test_args, plusargs, suffix = _wave_arguments(backend, build_, waves_path)
    plusargs = plusargs + list(extra_plusargs)
    run_dir = Path(tempfile.mkdtemp(prefix="bitgrid-sim-"))
    job_path, result_path = jobs.write_job(run_dir, job)
    log = run_dir / "sim.log"
    results_xml = run_dir / "results.xml"
    runner = runner_for(backend, suffix=suffix)
    count = len(job.get("cases", ()))
    label = (f"{build_.simulator} {'host ' if build_.toplevel == HOST_TOP else ''}"
             f"{build_.width}x{build_.height} {build_.storage}")
    what = ("the simulation behind the host link" if build_.toplevel == HOST_TOP
             else f"{count} case{'s' if count != 1 else ''}")
    progress(f"running {what} on {label}"
             f"{f' (waves: {waves_path})' if waves_path is not None else ''} ...", quiet)
    extra_env = {JOB_ENV: str(job_path), "COCOTB_LOG_LEVEL": os.environ.get(
        "COCOTB_LOG_LEVEL", "INFO")}
    start = time.monotonic()
    failure = None
    try:
        runner.test(test_module=test_module, hdl_toplevel=build_.toplevel,
                    hdl_toplevel_lang="verilog", build_dir=build_.directory,
                    test_dir=run_dir, results_xml=str(results_xml), extra_env=extra_env,
                    waves=backend.wave_runner_flag and waves_path is not None,
                    test_args=test_args, plusargs=plusargs, log_file=log)
    except (KeyboardInterrupt, processes.Terminated):
        # Ctrl-C or SIGTERM: the simulator has been ended; its half-written dump and the run
        # folder go with it.
        _remove_partial_run(run_dir, waves_path)
        raise
    except SystemExit as error:          # cocotb exits under pytest when a test failed
        failure = f"exit status {error.code}"
    except (RuntimeError, subprocess.CalledProcessError) as error:
        failure = str(error)
    seconds = time.monotonic() - start
    result = jobs.read_result(result_path)
    from cocotb_tools.check_results import get_results
    try:
        tests, failed = get_results(results_xml)
    except RuntimeError:
        tests = failed = None               # no results file: the simulator never finished
    label = f"{build_.simulator} {build_.width}x{build_.height} {build_.storage}"
    complete = result is not None and result.get("complete")
    if tests is None and not complete:
        done = "" if result is None else f" after {len(result.get('cases', ()))} case(s)"
        raise SimulationError(f"the {label} simulator produced no results{done}: it crashed "
                              f"or was killed{f' ({failure})' if failure else ''}; run "
                              f"folder {run_dir}", log)
    if not complete:
        raise SimulationError(f"{label} simulation did not finish "
                              f"({failure or f'{failed} of {tests} cocotb tests failed'}); "
                              f"run folder {run_dir}", log)
    if failed and not result.get("failed"):
        raise SimulationError(f"{label}: cocotb reports {failed} failing test(s) but the "
                              f"test bench found no mismatch; run folder {run_dir}", log)
    if keep:
        result["run_dir"] = str(run_dir)        # job, result and log, for a closer look
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    return result, seconds

