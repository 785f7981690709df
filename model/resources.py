"""What this machine has for a run: the memory a process can take now. One definition for
every command that plans its work to the memory there is (compile's check, bitgrid bist;
issue 39 item 6)."""

import os

__all__ = ["available_memory", "format_bytes"]


def available_memory():
    """Bytes of memory this process can take now: ``MemAvailable`` of ``/proc/meminfo``
    (Linux), or the free physical pages (``os.sysconf``), at most what a cgroup (v2) limit
    leaves; 4 GiB when none of them can be read."""
    found = None
    try:
        with open("/proc/meminfo", encoding="ascii") as file:
            for line in file:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if found is None:
        try:
            found = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            found = 4 << 30
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as file:
            limit = file.read().strip()
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as file:
            used = int(file.read().strip())
        if limit.isdigit():
            found = min(found, max(0, int(limit) - used))
    except (OSError, ValueError):
        pass
    return found


def format_bytes(size):
    """``size`` bytes in GiB (in MiB below 1 GiB), two decimals: ``"3.20 GiB"``."""
    return f"{size / (1 << 30):.2f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.2f} MiB"
