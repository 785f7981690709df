"""Simulator child processes that die with their parent (:func:`run`).

Every command of a simulator build or run (``iverilog``, ``vvp``, ``verilator``, ``make``, a
Verilator model) is started here, by :func:`bitgrid._overrides.cocotb_runner`, so that none is
left running, reparented to init, when the Python process that started it ends:

* **killed** (SIGKILL, the OOM killer, a crash): on Linux the child gets SIGKILL from the
  kernel when its parent thread exits (``prctl(PR_SET_PDEATHSIG)``, set between fork and exec;
  a parent that died before that is noticed and the child exits at once);
* **terminated** (SIGTERM, e.g. by a job controller or ``timeout``): while a child runs, a
  SIGTERM handler (installed only if the process had none, and only in the main thread) raises
  :class:`Terminated`, and the child is ended before the exception goes on; the process then
  exits with status 143 (128 + SIGTERM), as it would have without the handler;
* **interrupted** (Ctrl-C, or any other exception while waiting): the child is ended too.

Ending a child means SIGTERM, then SIGKILL after :data:`GRACE_SECONDS`.
"""

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading

__all__ = ["Terminated", "GRACE_SECONDS", "run", "ending_on_sigterm", "parent_death_signal"]

#: Seconds between SIGTERM and SIGKILL when a child is ended.
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


def _end(process):
    """End ``process`` (SIGTERM, then SIGKILL after :data:`GRACE_SECONDS`) and reap it."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        process.wait(GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()


def run(command, *, cwd=None, env=None, stdout=None, stderr=None):
    """Run ``command`` (a list) to its end and return its exit status; the child dies with
    this process (module docstring).

    :raises Terminated: on SIGTERM (the child is ended first).
    :raises OSError: if the command cannot be started.
    """
    with ending_on_sigterm():
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=stdout, stderr=stderr,
                                   preexec_fn=parent_death_signal())
        try:
            return process.wait()
        finally:
            _end(process)
