"""Simulator options reachable from ``bitgrid sim`` and the API (issue 10): the
fixed-configuration build (the program compiled into the gateware as the grid's ``init``),
extra build arguments, run-time plusargs, and a simulator that dies without results being
reported as such (not as "1 failing test")."""

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bitgrid import Edges
from bitgrid.cli import main
from bitgrid.sim import SimulationError, api, builds, make_case, run_case, run_vector_case, runner
from bitgrid.sim.jobs import JOB_FORMATS
from support.conformance import conformance_dir, load_conformance


def _cli(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.output


def _case_file(name):
    return Path(conformance_dir()) / f"{name}.json", Path(conformance_dir()) / f"{name}.bgbs"


# --- The fixed-configuration build ----------------------------------------------------------

@pytest.mark.icarus
@pytest.mark.parametrize("storage", ["ff", pytest.param("memory", marks=pytest.mark.slow)])
def test_fixed_configuration_matches_the_vectors_without_a_load(storage):
    case = load_conformance("random_2x2")
    result = run_vector_case(case, fixed=True, storage=storage, quiet=True)
    assert result.ok, result.summary()
    assert result.fixed and " fixed, " in result.summary()
    assert result.steps == 200 and result.subcycle == 200
    loaded = run_vector_case(case, storage=storage, quiet=True)
    assert result.outputs == loaded.outputs
    # A load takes simulated time; the fixed build skips it (readback and steps remain).
    assert result.sim_time_ns < loaded.sim_time_ns


@pytest.mark.icarus
def test_a_fixed_case_on_an_unconfigured_build_reads_back_wrong():
    """The fixed case relies on the build: on a build without ``init`` its readback finds the
    frames empty (so a fixed run that passes did run the compiled-in configuration)."""
    case = load_conformance("random_2x2")
    sim_case = api._vector_sim_case(case)
    plain = runner.build(2, 2, quiet=True)
    job = {"format": JOB_FORMATS["grid"], "width": 2, "height": 2, "clock_ns": 10,
           "idle_cycles": 1, "cases": [dict(api.job_case(sim_case), fixed=True)]}
    out, _ = runner.run_testbench(plain, job, quiet=True)
    raw = out["cases"][0]
    assert raw["readback_errors"] and all(r[3] == 0 for r in raw["readback_errors"])
    assert raw["emulator_mismatches"]


def test_fixed_refuses_a_crc_case_and_bad_options():
    case = make_case(load_conformance("random_2x2").load_bitstream().config, [Edges()] * 2,
                     crc=5)
    with pytest.raises(ValueError, match="never loaded"):
        api.run_cases([case], fixed=True)
    with pytest.raises(TypeError, match="fixed must be True or False"):
        api.run_cases([], fixed="yes")
    with pytest.raises(TypeError, match="list of strings"):
        api.run_cases([], build_args="--x-assign unique")
    with pytest.raises(ValueError, match="starts with '\\+'"):
        api.run_cases([], plusargs=["verilator+rand+reset+2"])


@pytest.mark.icarus
def test_cli_fixed_passes_the_vector_file():
    vectors, bgbs = _case_file("random_2x2")
    status, output = _cli("sim", bgbs, "--vectors", vectors, "--fixed")
    assert status == 0, output
    assert "PASS: random_2x2" in output


@pytest.mark.parametrize("args, words", [
    (["--fixed", "--mesh", "1x1"], "single grid"),
    (["--plusarg", "verilator+rand"], "starts with '+'"),
    (["--build-arg", "'--x-assign"], "--build-arg"),
])
def test_cli_refuses_bad_sim_options(args, words):
    vectors, bgbs = _case_file("random_2x2")
    status, output = _cli("sim", bgbs, "--vectors", vectors, *args)
    assert status == 2, output
    assert words in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1


# --- Plusargs and build arguments -----------------------------------------------------------

@pytest.mark.icarus
def test_plusargs_reach_the_simulator():
    case = load_conformance("random_2x2")
    result = run_vector_case(case, plusargs=["+bitgrid_probe", "+bitgrid_seed=42"], quiet=True)
    assert result.ok, result.summary()
    assert {"+bitgrid_probe", "+bitgrid_seed=42"} <= set(result.plusargs)
    plain = run_vector_case(case, quiet=True)
    assert "+bitgrid_probe" not in plain.plusargs


@pytest.mark.icarus
def test_icarus_build_args_make_their_own_build():
    plain = runner.build(2, 2, quiet=True)
    defined = runner.build(2, 2, quiet=True, build_args=["-DBITGRID_PROBE=1"])
    assert defined.directory != plain.directory
    record = json.loads((defined.directory / builds.BUILD_RECORD).read_text())
    assert record["build_args"][-1:] == ["-DBITGRID_PROBE=1"]
    case = load_conformance("random_2x2")
    assert run_vector_case(case, build_args=["-DBITGRID_PROBE=1"], quiet=True).ok


@pytest.mark.verilator
@pytest.mark.slow
def test_verilator_x_assign_unique_and_random_reset_from_the_cli():
    """Verilator with X values randomised (``--x-assign unique --x-initial unique``) and every
    variable reset to a random value (``+verilator+rand+reset+2``): the 2x2 case still matches
    (the grid resets what it uses), from ``bitgrid sim``."""
    vectors, bgbs = _case_file("random_2x2")
    status, output = _cli("sim", bgbs, "--vectors", vectors, "--simulator", "verilator",
                          "--build-arg", "--x-assign unique --x-initial unique",
                          "--plusarg", "+verilator+rand+reset+2")
    assert status == 0, output
    assert "PASS: random_2x2" in output
    build = runner.build(2, 2, simulator="verilator", quiet=True, top="player",
                         build_args=["--x-assign", "unique", "--x-initial", "unique"])
    assert build.cached                     # made by `bitgrid sim` (the stimulus player)
    record = json.loads((build.directory / builds.BUILD_RECORD).read_text())
    assert record["build_args"][-4:] == ["--x-assign", "unique", "--x-initial", "unique"]
    result = run_vector_case(load_conformance("random_2x2"), simulator="verilator",
                             build_args=["--x-assign", "unique", "--x-initial", "unique"],
                             plusargs=["+verilator+rand+reset+2"], quiet=True)
    assert result.ok and "+verilator+rand+reset+2" in result.plusargs


# --- A simulator that dies -------------------------------------------------------------------

def _children_named(name):
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and argv[0] \
                and os.path.basename(argv[0].decode()) == name:
            found.append(int(entry.name))
    return found


@pytest.mark.icarus
def test_a_killed_simulator_is_reported_as_producing_no_results():
    config = load_conformance("random_2x2").load_bitstream().config
    runner.build(2, 2, quiet=True)
    killed = []

    def kill_vvp():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            for pid in _children_named("vvp"):
                time.sleep(1.0)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.1)
    thread = threading.Thread(target=kill_vvp)
    thread.start()
    try:
        with pytest.raises(SimulationError) as raised:
            run_case(config, [Edges()] * 200000, quiet=True)
    finally:
        thread.join()
    assert killed
    message = str(raised.value)
    assert "produced no results" in message and "crashed or was killed" in message
    assert "failing test" not in message and "cocotb tests failed" not in message
    assert "full log:" in message
