"""Simulators and their build tools die with their parent (:mod:`bitgrid.processes`): a
``bitgrid sim`` ended by SIGKILL, SIGTERM or Ctrl-C leaves no ``vvp`` or Verilator model behind
(issue 10, "orphaned simulators"), and Ctrl-C during a build ends the build's tools and what
they started (issue 39, "clean interrupts"; the C++ compilers under ``make``) at once, leaves
no half-made build and exits 130.

The processes are found in ``/proc`` (no psutil, :mod:`support.processes`): only those below
the ``bitgrid sim`` under test (found while it lives) count, so that other simulators running
on the machine never do.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from support.conformance import conformance_dir
from support.processes import alive, all_running, descendants, wait_for

#: The simulator process of each simulator: vvp, or the Verilator model (named after the top:
#: ``bitgrid sim`` runs the stimulus player).
SIMULATOR_PROCESS = {"icarus": "vvp", "verilator": "bitgrid_player"}


@pytest.fixture
def long_sim():
    """Starts a ``bitgrid sim`` of a 2x2 conformance case for 10**6 steps (minutes), in its own
    process group; returns ``(process, simulator pid)`` once the simulator runs. Cleans up
    whatever is left."""
    started = []

    def start(simulator="icarus"):
        command = [sys.executable, "-m", "bitgrid", "sim",
                   os.path.join(conformance_dir(), "random_2x2.bgbs"), "--steps", "1000000",
                   "--simulator", simulator]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        started.append(process)
        # The first run may build the model (Verilog and the simulator's build): allow for it.
        name = SIMULATOR_PROCESS[simulator]
        found = wait_for(lambda: descendants(process.pid, name), 600)
        assert found, f"{name} never started under bitgrid sim"
        started.append(found[0])
        return process, found[0]
    yield start
    for item in started:
        pid = item.pid if isinstance(item, subprocess.Popen) else item
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for item in started:
        if isinstance(item, subprocess.Popen):
            item.wait()


#: The exit status of ``bitgrid sim`` ended by each signal.
STATUS = {signal.SIGKILL: -signal.SIGKILL, signal.SIGTERM: 128 + signal.SIGTERM,
          signal.SIGINT: 130}


@pytest.mark.parametrize("signum", STATUS, ids=lambda signum: signal.Signals(signum).name)
@pytest.mark.parametrize("simulator", [pytest.param("icarus", marks=pytest.mark.icarus),
                                       pytest.param("verilator", marks=pytest.mark.verilator)])
def test_simulator_dies_with_bitgrid_sim(long_sim, simulator, signum):
    process, child = long_sim(simulator)
    time.sleep(0.5)
    assert process.poll() is None and alive(child)
    os.kill(process.pid, signum)
    status = process.wait(30)
    assert status == STATUS[signum]
    assert wait_for(lambda: not alive(child), 10), \
        f"{simulator} process {child} outlived its parent ({signal.Signals(signum).name})"


#: A stand-in for ``iverilog`` and ``vvp``: answers the version question, and otherwise runs
#: on for a minute with a child of its own (as ``make`` has its compilers).
FAKE_TOOL = """#!/bin/sh
case "$1" in -V|-v) echo "Icarus Verilog version 99.0 (stand-in)"; exit 0;; esac
sleep 61 &
exec sleep 62
"""


def test_ctrl_c_during_a_build_ends_its_tools_at_once_and_exits_130(tmp_path):
    """``bitgrid sim`` interrupted (SIGINT, as Ctrl-C sends it) while the simulator's build
    runs: the build command and its own child are ended within a couple of seconds, the
    command exits 130 with one line, and no build folder is left in the cache (a stand-in
    build tool, so that nothing is really built)."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("iverilog", "vvp"):
        (tools / name).write_text(FAKE_TOOL)
        (tools / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{tools}{os.pathsep}{os.environ['PATH']}",
               BITGRID_CACHE=str(tmp_path / "cache"))
    command = [sys.executable, "-m", "bitgrid", "sim",
               os.path.join(conformance_dir(), "random_2x2.bgbs"), "--steps", "4",
               "--simulator", "icarus"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        children = wait_for(lambda: all_running(process.pid, "sleep", 2), 120)
        assert children, "the build never started under bitgrid sim"
        os.kill(process.pid, signal.SIGINT)
        started = time.monotonic()
        status = process.wait(10)
        seconds = time.monotonic() - started
        errors = process.stderr.read()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert status == 130 and seconds < 3, (status, seconds, errors)
    assert errors.splitlines()[-1] == "interrupted"
    assert not [pid for pid in children if alive(pid)]
    build = tmp_path / "cache" / "sim" / "build"
    assert [entry.name for entry in build.iterdir() if not entry.name.endswith(".lock")] == []
