"""Processes seen in ``/proc`` (no psutil), for the tests of children that must die with their
parent (:mod:`bitgrid.processes`): only processes below a given one count, so that other
processes running on the machine never do. Zombies count as gone."""

import os
import time
from pathlib import Path

__all__ = ["process_table", "descendants", "all_running", "alive", "wait_for"]


def process_table():
    """``{pid: (ppid, argv)}`` of every process readable in /proc that is not a zombie."""
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


def descendants(root, name=None):
    """Pids of the processes below ``root`` (running executable ``name``, if given)."""
    table = process_table()
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        for child in children.get(pid, ()):
            argv = table[child][1]
            if name is None or argv and os.path.basename(argv[0]) == name:
                found.append(child)
            pending.append(child)
    return found


def all_running(root, name, count):
    """The sorted pids of the processes running ``name`` below ``root`` once there are
    ``count`` of them, else None (for :func:`wait_for`)."""
    found = descendants(root, name)
    return sorted(found) if len(found) == count else None


def alive(pid):
    """Whether ``pid`` runs (and is no zombie)."""
    return pid in process_table()


def wait_for(predicate, seconds, interval=0.05):
    """The first true value of ``predicate()`` within ``seconds``, else its last value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()
