"""Simulators die with their parent (:mod:`bitgrid.sim.processes`): a ``bitgrid sim`` ended by
SIGKILL or SIGTERM leaves no ``vvp`` behind (issue 10, "orphaned simulators").

The processes are found in ``/proc`` (no psutil): a ``vvp`` whose command line names the run
folder of the ``bitgrid sim`` under test, so that other helpers' simulators never count.
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

pytestmark = pytest.mark.icarus


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


def _descendant_vvp(root):
    """Pids of the ``vvp`` processes below ``root``."""
    table = _processes()
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        for child in children.get(pid, ()):
            if table[child][1] and os.path.basename(table[child][1][0]) == "vvp":
                found.append(child)
            pending.append(child)
    return found


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
    """A ``bitgrid sim`` of a 2x2 conformance case for 10**6 steps (minutes on Icarus), started
    in its own process group; yields ``(process, vvp pid)`` once vvp runs. Cleans up whatever
    is left."""
    started = []

    def start():
        command = [sys.executable, "-m", "bitgrid", "sim",
                   os.path.join(conformance_dir(), "random_2x2.bgbs"), "--steps", "1000000"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        started.append(process)
        # The first run may build the model (Verilog and iverilog): allow for it.
        vvp = _wait_for(lambda: _descendant_vvp(process.pid), 300)
        assert vvp, "vvp never started under bitgrid sim"
        started.append(vvp[0])
        return process, vvp[0]
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
def test_vvp_dies_with_bitgrid_sim(long_sim, signum):
    process, vvp = long_sim()
    time.sleep(0.5)
    assert process.poll() is None and _alive(vvp)
    os.kill(process.pid, signum)
    status = process.wait(30)
    assert status == (-signal.SIGKILL if signum == signal.SIGKILL else 128 + signal.SIGTERM)
    assert _wait_for(lambda: not _alive(vvp), 10), \
        f"vvp {vvp} outlived its parent ({signal.Signals(signum).name})"


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
