"""Simulators die with their parent (:mod:`bitgrid.sim.processes`): a ``bitgrid sim`` ended by
SIGKILL or SIGTERM leaves no ``vvp`` or Verilator model behind (issue 10, "orphaned
simulators").

The processes are found in ``/proc`` (no psutil): the simulator process below the ``bitgrid
sim`` under test (its pid, found while the parent lives), so that other simulators running on
the machine never count.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bitgrid.sim import processes
from support.conformance import conformance_dir

def _processes():
    """``{pid: (ppid, argv)}`` of every process readable in /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rpartition(")")[2].split()[:2]
        if state != "Z":
            found[int(entry.name)] = (int(ppid), [a.decode(errors="replace") for a in argv if a])
    return found


def _descendants(root, name):
    """Pids of the processes running executable ``name`` below ``root``."""
    table = _processes()
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        for child in children.get(pid, ()):
            if table[child][1] and os.path.basename(table[child][1][0]) == name:
                found.append(child)
            pending.append(child)
    return found


#: The simulator process of each simulator: vvp, or the Verilator model (named after the top:
#: ``bitgrid sim`` runs the stimulus player).
SIMULATOR_PROCESS = {"icarus": "vvp", "verilator": "bitgrid_player"}


def _alive(pid):
    table = _processes()
    return pid in table


def _wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return predicate()


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
        found = _wait_for(lambda: _descendants(process.pid, name), 600)
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


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("simulator", [pytest.param("icarus", marks=pytest.mark.icarus),
                                       pytest.param("verilator", marks=pytest.mark.verilator)])
def test_simulator_dies_with_bitgrid_sim(long_sim, simulator, signum):
    process, child = long_sim(simulator)
    time.sleep(0.5)
    assert process.poll() is None and _alive(child)
    os.kill(process.pid, signum)
    status = process.wait(30)
    assert status == (-signal.SIGKILL if signum == signal.SIGKILL else 128 + signal.SIGTERM)
    assert _wait_for(lambda: not _alive(child), 10), \
        f"{simulator} process {child} outlived its parent ({signal.Signals(signum).name})"


def test_run_ends_the_child_on_an_exception(tmp_path):
    """An exception while waiting (here a SIGTERM handler's, as in the CLI) ends the child."""
    marker = tmp_path / "pid"
    script = (f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); "
              "time.sleep(600)")

    def stop(signum, frame):
        raise processes.Terminated()
    previous = signal.signal(signal.SIGALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.5)
        with pytest.raises(processes.Terminated) as raised:
            processes.run([sys.executable, "-c", script])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert raised.value.code == 143
    child = int(marker.read_text())
    assert not _alive(child)


def test_run_returns_the_exit_status():
    assert processes.run([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert processes.run([sys.executable, "-c", "pass"]) == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_parent_death_signal_is_set_in_the_child():
    """A child started by :func:`processes.run` in a process that is then SIGKILLed (no handler
    runs) is killed by the kernel."""
    code = ("import sys; from bitgrid.sim import processes; "
            "processes.run([sys.executable, '-c', 'import time; time.sleep(600)'])")
    middle = subprocess.Popen([sys.executable, "-c", code])
    try:
        sleeper = _wait_for(lambda: [pid for pid, (ppid, _) in _processes().items()
                                     if ppid == middle.pid], 30)
        assert sleeper
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait()
        assert _wait_for(lambda: not _alive(sleeper[0]), 10)
    finally:
        if middle.poll() is None:
            middle.kill()
            middle.wait()
