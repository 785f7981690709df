"""Child processes that die with their parent, and everything they start too (:func:`run`,
:func:`started`).

Every command of a simulator build or run (``iverilog``, ``vvp``, ``verilator``, ``make`` and
the C++ compilers it starts, a Verilator model; through
:func:`bitgrid._overrides.cocotb_runner`), of a board build (Yosys, nextpnr, the packers) and of
the ASIC flow's qflow stages is started here, so that none is left running, reparented to init,
when the Python process that started it ends (issue 10, "orphaned simulators"; issue 39, "clean
interrupts"). Each child leads a process group of its own, which holds whatever it starts
(``make``'s compilers, a shell script's tools); ending a child ends its whole group:

* **interrupted** (Ctrl-C, or any other exception while waiting): the group is ended before
  the exception goes on (the CLI then exits 130, :mod:`bitgrid.cli.errors`). In its own group
  a child does not get the terminal's SIGINT itself: this process decides when it stops;
* **terminated** (SIGTERM, e.g. by a job controller or ``timeout``): while a child runs, a
  SIGTERM handler (installed only if the process had none, and only in the main thread) raises
  :class:`Terminated`, and the group is ended before the exception goes on; the process then
  exits with status 143 (128 + SIGTERM), as it would have without the handler;
* **exiting** with children still running (started in another thread, e.g. the simulator
  behind ``bitgrid serve --target sim``): their groups are ended at interpreter exit
  (:mod:`atexit`);
* **killed** (SIGKILL, the OOM killer, a crash): on Linux the child gets SIGKILL from the
  kernel when its parent thread exits (``prctl(PR_SET_PDEATHSIG)``, set between fork and exec;
  a parent that died before that is noticed and the child exits at once). Its own children
  are not reached this way.

Ending a group means SIGTERM to every process in it at once (``make`` removes the half-written
target it was making), then SIGKILL to whatever is left after :data:`GRACE_SECONDS`. Children
read no terminal: their standard input is ``/dev/null`` unless told otherwise.
"""

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

__all__ = ["Terminated", "GRACE_SECONDS", "run", "started", "end_all", "ending_on_sigterm",
           "parent_death_signal"]

#: Seconds between SIGTERM and SIGKILL when a child's group is ended.
GRACE_SECONDS = 2.0

_PR_SET_PDEATHSIG = 1           # <linux/prctl.h>


class Terminated(SystemExit):
    """Raised in the main thread by the SIGTERM handler of :func:`ending_on_sigterm`; exit
    status 143 (128 + SIGTERM)."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


def _libc_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _libc_prctl()


def parent_death_signal(signum=signal.SIGKILL):
    """A ``preexec_fn`` that makes the child get ``signum`` when its parent thread exits (on
    Linux; None elsewhere). If the parent is already gone when it runs, the child exits with
    status 1 before exec."""
    if _prctl is None:
        return None
    parent = os.getpid()

    def preexec():
        _prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
        if os.getppid() != parent:          # the parent died before prctl took effect
            os._exit(1)
    return preexec


def _own_group_and_parent_death():
    """The ``preexec_fn`` of every child: a process group of its own (led by the child), and
    :func:`parent_death_signal`."""
    death = parent_death_signal()

    def preexec():
        os.setpgid(0, 0)
        if death is not None:
            death()
    return preexec


def _on_sigterm(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def ending_on_sigterm():
    """Within the block, SIGTERM raises :class:`Terminated` (so that ``finally`` clauses run and
    end the children), if the process has the default SIGTERM action and this is the main
    thread; otherwise nothing changes. The previous handler is restored afterwards."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


#: Children started here that may still run (ended at exit by :func:`end_all`).
_running = set()
_running_lock = threading.Lock()


def _signal_group(group, signum):
    """Send ``signum`` to process group ``group``; whether any process was in it."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    except PermissionError:             # only a process of another user is left: not ours
        return False
    return True


def _group_runs(group):
    """Whether a process of group ``group`` still runs: on Linux, one that is no zombie in
    ``/proc`` (an orphaned zombie may wait long for its reaper, e.g. in a container whose init
    reaps none); elsewhere, whether the group can be signalled."""
    if not os.path.isdir("/proc/self"):
        return _signal_group(group, 0)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as file:
                fields = file.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == group and fields[0] != b"Z":
            return True
    return False


def _end(process):
    """End ``process`` and its process group: SIGTERM to the group, then, once the child has
    exited or :data:`GRACE_SECONDS` have passed, SIGKILL to what is left of it; the child is
    reaped. A child that has exited already is only reaped (its group is not touched: a
    finished command may leave a server behind on purpose)."""
    if process.poll() is not None:
        return
    group = process.pid
    _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(GRACE_SECONDS)
    # The child's own children (compilers under make) may take a moment longer to exit.
    while time.monotonic() < deadline and _group_runs(group):
        time.sleep(0.02)
    _signal_group(group, signal.SIGKILL)
    process.wait()


def end_all():
    """End every child started here that still runs (and its group); for interpreter exit,
    registered with :mod:`atexit`."""
    with _running_lock:
        processes = list(_running)
    for process in processes:
        _end(process)


atexit.register(end_all)


def _remove(paths):
    for path in paths:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(path)


@contextlib.contextmanager
def started(command, *, stdin=subprocess.DEVNULL, outputs=(), **options):
    """Start ``command`` (a list) in a process group of its own, a child that dies with this
    process (module docstring), and yield its :class:`subprocess.Popen`. If the block is left
    by an exception (Ctrl-C's KeyboardInterrupt, :class:`Terminated`, any other) or while the
    child still runs, the child and its group are ended first; after an exception the files
    ``outputs`` are removed too.

    :param stdin: the child's standard input (``/dev/null`` by default).
    :param outputs: paths of the files the command writes in place (not atomically): half
        written if it is interrupted.
    :param options: further :class:`subprocess.Popen` arguments (``cwd``, ``env``, ``stdout``,
        ``stderr``, ...).
    :raises Terminated: on SIGTERM in the block (the child is ended first).
    :raises OSError: if the command cannot be started.
    """
    with ending_on_sigterm():
        process = subprocess.Popen(command, stdin=stdin,
                                   preexec_fn=_own_group_and_parent_death(), **options)
        with _running_lock:
            _running.add(process)
        interrupted = True
        try:
            yield process
            interrupted = False
        finally:
            try:
                _end(process)
            finally:
                with _running_lock:
                    _running.discard(process)
                if interrupted:
                    _remove(outputs)


def run(command, *, cwd=None, env=None, stdin=subprocess.DEVNULL, stdout=None, stderr=None,
        outputs=()):
    """Run ``command`` (a list) to its end and return its exit status; the child and whatever
    it starts die with this process (module docstring), and the files ``outputs`` it writes
    are removed if it is interrupted (:func:`started`).

    :raises KeyboardInterrupt: on Ctrl-C (the child's group is ended first).
    :raises Terminated: on SIGTERM (the child's group is ended first).
    :raises OSError: if the command cannot be started.
    """
    with started(command, cwd=cwd, env=env, stdin=stdin, stdout=stdout, stderr=stderr,
                 outputs=outputs) as process:
        return process.wait()
