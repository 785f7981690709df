"""Children that die with their parent (:mod:`bitgrid.processes`): the exit status, the
parent-death signal, and the whole process group of a child ended at once on Ctrl-C or any
other exception, with the files it was writing removed (issue 39, "clean interrupts").

Each interrupt is sent to a small Python process of its own (so that the test process is
never interrupted); its children are found in ``/proc`` (:mod:`support.processes`).
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from bitgrid import processes
from support.processes import alive, all_running, process_table, wait_for

#: A command that runs on for a minute with a child of its own: the shell's background
#: ``sleep`` is in the command's process group, not a child of this process.
TOOL_WITH_A_CHILD = ["sh", "-c", "sleep 61 & exec sleep 62"]


def test_run_returns_the_exit_status():
    assert processes.run([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    assert processes.run([sys.executable, "-c", "pass"]) == 0


def test_children_read_no_terminal():
    """Standard input is /dev/null unless given: a child in a group of its own that read the
    terminal would be stopped (SIGTTIN)."""
    assert processes.run([sys.executable, "-c",
                          "import sys; raise SystemExit(len(sys.stdin.read()) + 7)"]) == 7


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
    assert not alive(child)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_parent_death_signal_is_set_in_the_child():
    """A child started by :func:`processes.run` in a process that is then SIGKILLed (no handler
    runs) is killed by the kernel."""
    code = ("import sys; from bitgrid import processes; "
            "processes.run([sys.executable, '-c', 'import time; time.sleep(600)'])")
    middle = subprocess.Popen([sys.executable, "-c", code])
    try:
        sleeper = wait_for(lambda: [pid for pid, (ppid, _) in process_table().items()
                                    if ppid == middle.pid], 30)
        assert sleeper
        os.kill(middle.pid, signal.SIGKILL)
        middle.wait()
        assert wait_for(lambda: not alive(sleeper[0]), 10)
    finally:
        if middle.poll() is None:
            middle.kill()
            middle.wait()


def _interrupted(code, tmp_path):
    """Run Python ``code`` (which starts :data:`TOOL_WITH_A_CHILD` through
    :mod:`bitgrid.processes`) in a process of its own, SIGINT it once both sleeps run;
    ``(exit status, seconds from SIGINT to exit, the sleeps' pids, stderr)``."""
    process = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        sleeps = wait_for(lambda: all_running(process.pid, "sleep", 2), 30)
        assert sleeps, "the command never started"
        os.kill(process.pid, signal.SIGINT)
        started = time.monotonic()
        status = process.wait(10)
        return status, time.monotonic() - started, sleeps, process.stderr.read()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_ctrl_c_ends_the_childs_whole_group_at_once(tmp_path):
    """Ctrl-C (SIGINT to this process alone, as a job controller sends it) while a child runs:
    the child and the child's own child are gone before the KeyboardInterrupt goes on, well
    within :data:`~bitgrid.processes.GRACE_SECONDS` (they end on SIGTERM)."""
    code = ("from bitgrid import processes\n"
            "try:\n"
            f"    processes.run({TOOL_WITH_A_CHILD!r})\n"
            "except KeyboardInterrupt:\n"
            "    raise SystemExit(130)\n")
    status, seconds, sleeps, errors = _interrupted(code, tmp_path)
    assert status == 130, errors
    assert seconds < processes.GRACE_SECONDS
    assert [pid for pid in sleeps if alive(pid)] == []


def test_ctrl_c_removes_the_half_written_output(tmp_path):
    """The files named as a command's ``outputs`` are removed when it is interrupted, and
    kept when it ends."""
    code = ("from bitgrid import processes\n"
            "assert processes.run(['sh', '-c', 'echo done > kept.bin'],"
            " outputs=['kept.bin']) == 0\n"
            "processes.run(['sh', '-c', 'echo half > out.bin; sleep 61 & exec sleep 62'],"
            " outputs=['out.bin'])\n")
    status, _, sleeps, errors = _interrupted(code, tmp_path)
    # An uncaught KeyboardInterrupt ends Python by SIGINT.
    assert status == -signal.SIGINT and errors.rstrip().endswith("KeyboardInterrupt"), errors
    assert not (tmp_path / "out.bin").exists()
    assert (tmp_path / "kept.bin").read_text() == "done\n"
    assert [pid for pid in sleeps if alive(pid)] == []


def test_started_ends_a_child_left_running_and_keeps_what_it_wrote(tmp_path):
    """Leaving the block normally while the child still runs ends it (and its group), but
    its outputs stay: only an exception makes them half written."""
    output = tmp_path / "out.txt"
    with processes.started(["sh", "-c", f"echo kept > {output}; sleep 61 & exec sleep 62"],
                           outputs=[output]) as process:
        sleeps = wait_for(lambda: all_running(os.getpid(), "sleep", 2), 30)
    assert process.returncode == -signal.SIGTERM
    assert [pid for pid in sleeps if alive(pid)] == []
    assert output.read_text() == "kept\n"
