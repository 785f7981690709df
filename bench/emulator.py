"""Throughput of the emulators, in cell updates per second, side by side in one run: the
reference emulator (``bitgrid.emulator.Emulator``, "simple"), the bit-parallel numpy code
(``FastEmulator(config, kernel=False)``, "fast", the fast emulator before the compiled
kernel), the compiled kernel through the batched API (``FastEmulator(config).run(n,
inputs=lanes)``, "kernel", :mod:`bitgrid.kernel`) and the numpy code running many input
streams at once (lane-parallel mode, "streams").

A subcycle evaluates half of the grid (the cells of one parity, SPEC section 4), so a
``W x H`` grid run for ``n`` subcycles performs ``W * H / 2 * n`` cell updates; with ``k``
streams it performs ``k`` times as many *stream-cell updates*. Each size runs a uniformly random
configuration with random edge inputs at every subcycle (a pool of inputs generated before the
timed loop and cycled through). The timed loop is the public ``step`` call, edge-word checking
and edge-output packing included; for "kernel" it is one ``run(n, inputs=lanes)`` call per
batch of subcycles, with the random lane array made before the timed loop. Each figure is the
best of a few timed rounds (the machine may be shared), each round running at least
``min_seconds``; ``cpu_seconds`` says how much of a core (or two) the round really got.

Run ``bitgrid bench emulator`` (or ``python -m bitgrid.bench emulator``); it prints a table
(and writes JSON with ``--json``) and takes well under a minute. :func:`measure`
is the emulator part of the suite (``make bench``, ``bitgrid bench emulator``): the same
measurements as figures with units, plus growth exponents.
"""

import time

import numpy as np

from bitgrid import Configuration, Edges, Emulator
from bitgrid import kernel as bitgrid_kernel
from bitgrid.fastemu import FastEmulator

from .common import Progress, check_sizes, exponents, figure, timer, value

__all__ = ["DEFAULT_SIZES", "DEFAULT_STREAMS", "SUITE_SIZES", "QUICK_SIZES", "KINDS",
           "KERNEL_GOALS", "CEILINGS", "run", "run_fast", "run_kernel", "run_streams", "measure",
           "format_part", "kernel_goals"]

#: Grid sizes (square, cells per side) of the default run.
DEFAULT_SIZES = (64, 256, 1024)
#: Grid sizes of the emulator part of ``make bench`` and of ``python -m bitgrid.bench --quick``.
SUITE_SIZES = (16, 64, 128, 256, 1024, 4096)
QUICK_SIZES = (64, 256, 1024)
#: Kinds measured, in table order.
KINDS = ("simple", "fast", "kernel", "streams")
#: The goals of the compiled kernel (cell-updates/s through the batched API, on 2 cores) and
#: the ceilings quoted with them for these 2 cores (a bit-sliced AVX2 kernel: per core 12e9 in
#: L1, 9e9 in L2, 1.4e9 when the configuration streams from memory, 8 bytes per update).
KERNEL_GOALS = {16: ("10x", 10.0), 64: ("10x", 10.0), 128: ("5e9", 5e9), 256: ("5e9", 5e9),
                1024: ("3e9", 3e9), 4096: ("3e9", 3e9)}
CEILINGS = {"L1": 2 * 12e9, "L2": 2 * 9e9, "memory": 2 * 1.4e9}
#: A multi-threaded kernel row whose CPU time over wall time is below this share of its thread
#: count gets a "too busy to tell" note: the threads did not get their cores, so the figure
#: cannot say whether they ran in parallel.
BUSY_SHARE = 0.8
#: Streams of the lane-parallel figures.
DEFAULT_STREAMS = 64
#: The lane-parallel figures stop at this size (64 streams of 4096 x 4096 hold 0.5 GB of state
#: and take minutes).
STREAMS_MAX_SIZE = 1024
#: Edge inputs generated per measurement (cycled through by longer runs).
_POOL = 64


def _default_steps(size):
    """Enough subcycles for a stable figure: about 4 million cell updates, at least 16."""
    return max(16, (8 << 20) // (size * size))


def _random_word(rng, lanes):
    return int.from_bytes(rng.bytes((lanes + 7) // 8), "little") & ((1 << lanes) - 1)


def _random_edges(rng, size):
    return Edges(*(_random_word(rng, size) for _ in range(4)))


def _time(emulator, inputs, steps, rounds, min_seconds):
    """Best time per subcycle over ``rounds`` rounds of at least ``steps`` subcycles and
    ``min_seconds`` each. Returns ``(subcycles, wall seconds, CPU seconds)`` of the best
    round (CPU time of the whole process, all threads)."""
    emulator.step(inputs[0])               # warm-up (first-touch allocations)
    emulator.reset()
    best = None
    for _ in range(rounds):
        count, start, cpu = 0, time.perf_counter(), time.process_time()
        while True:
            for i in range(steps):
                emulator.step(inputs[i % len(inputs)])
            count += steps
            seconds = time.perf_counter() - start
            if seconds >= min_seconds:
                break
        if best is None or seconds / count < best[1] / best[0]:
            best = (count, seconds, time.process_time() - cpu)
    return best


def _kernel_steps(size):
    """Subcycles per ``run`` call of the kernel: about 1G cell updates, 64 to 65,536 (long
    calls let the temporal blocking run deep passes on large grids)."""
    return max(64, min(65536, (1 << 31) // (size * size)))


def _time_kernel(emulator, lanes, rounds, min_seconds):
    """:func:`_time` for the batched call ``emulator.run(n, inputs=lanes)``."""
    emulator.run(2, inputs=lanes[:2])      # warm-up (compiled code loaded, pages touched)
    emulator.reset()
    best = None
    for _ in range(rounds):
        count, start, cpu = 0, time.perf_counter(), time.process_time()
        while True:
            emulator.run(len(lanes), inputs=lanes)
            count += len(lanes)
            seconds = time.perf_counter() - start
            if seconds >= min_seconds:
                break
        if best is None or seconds / count < best[1] / best[0]:
            best = (count, seconds, time.process_time() - cpu)
    return best


def _measure(kind, size, *, steps, seed, streams=None, threads=None, rounds=1,
             min_seconds=0.0):
    rng = np.random.default_rng(seed)
    config = Configuration.random(size, size, seed=seed)
    count = _default_steps(size) if steps is None else int(steps)
    if kind == "simple":
        emulator = Emulator(config)
    elif kind == "kernel":
        emulator = FastEmulator(config, threads=threads, kernel=True)
    else:
        emulator = FastEmulator(config, streams=streams, threads=threads, kernel=False)
    if kind == "kernel":
        count = _kernel_steps(size) if steps is None else int(steps)
        lanes = rng.integers(0, 2, size=(count, 4 * size), dtype=np.uint8)
        subcycles, seconds, cpu_seconds = _time_kernel(emulator, lanes, rounds, min_seconds)
    else:
        if streams is None:
            inputs = [_random_edges(rng, size) for _ in range(min(count, _POOL))]
        else:
            pool = max(1, min(count, _POOL // streams + 1))
            inputs = [[_random_edges(rng, size) for _ in range(streams)] for _ in range(pool)]
        subcycles, seconds, cpu_seconds = _time(emulator, inputs, count, rounds, min_seconds)
    cells = size * size
    rate = cells / 2 * subcycles * (streams or 1) / seconds
    result = {"emulator": kind, "size": size, "cells": cells, "subcycles": subcycles,
              "seconds": seconds, "cpu_seconds": cpu_seconds}
    if streams is None:
        result.update(cell_updates_per_s=rate, rate=rate, unit="cell-updates/s")
    else:
        result.update(streams=streams, stream_cell_updates_per_s=rate, rate=rate,
                      unit="stream-cell-updates/s")
    if kind != "simple":
        result["threads"] = emulator.threads
        result["memory_bytes"] = emulator.nbytes
        result["config_bytes"] = cells * 8
    return result


def run(sizes=DEFAULT_SIZES, steps=None, seed=1, *, rounds=1, min_seconds=0.0):
    """Time the reference emulator on square random grids.

    :param sizes: grid sides in cells (even).
    :param steps: subcycles per size; ``None`` picks a count per size (see ``_default_steps``).
    :param seed: seed of the configurations and edge inputs.
    :param rounds, min_seconds: timed rounds (the best counts) and their least duration.
    :returns: a list of ``dict(size, cells, subcycles, seconds, cell_updates_per_s)``, one per
        size, where ``cells`` is ``size * size`` and ``cell_updates_per_s`` is
        ``cells / 2 * subcycles / seconds`` (plus ``emulator="simple"``, the figure again as
        ``rate`` with its ``unit``, ``"cell-updates/s"``, and ``cpu_seconds``, the process CPU
        time of the run: well below ``seconds`` means the machine was busy).
    """
    return [_measure("simple", size, steps=steps, seed=seed, rounds=rounds,
                     min_seconds=min_seconds) for size in sizes]


def run_fast(sizes=DEFAULT_SIZES, steps=None, seed=1, *, threads=None, rounds=3,
             min_seconds=0.2):
    """Time the bit-parallel numpy code (one stream, ``kernel=False``) like :func:`run`: the
    same dicts with ``emulator="fast"``, plus ``threads``, ``memory_bytes`` (its arrays, see
    ``FastEmulator.nbytes``) and ``config_bytes`` (8 bytes per cell)."""
    return [_measure("fast", size, steps=steps, seed=seed, threads=threads, rounds=rounds,
                     min_seconds=min_seconds) for size in sizes]


def run_kernel(sizes=DEFAULT_SIZES, steps=None, seed=1, *, threads=None, rounds=3,
               min_seconds=0.5):
    """Time the compiled kernel through the batched API (``FastEmulator(config,
    kernel=True).run(n, inputs=lanes)``, ``n = steps`` subcycles per call, default
    ``_kernel_steps``): dicts as :func:`run_fast` with ``emulator="kernel"``."""
    return [_measure("kernel", size, steps=steps, seed=seed, threads=threads, rounds=rounds,
                     min_seconds=min_seconds) for size in sizes]


def run_streams(sizes=DEFAULT_SIZES, streams=DEFAULT_STREAMS, steps=None, seed=1, *,
                threads=None, rounds=2, min_seconds=0.2):
    """Time the lane-parallel mode (``FastEmulator(config, streams=streams)``): dicts with
    ``emulator="streams"``, ``streams`` and ``stream_cell_updates_per_s`` (also as ``rate``,
    unit ``"stream-cell-updates/s"``)."""
    results = []
    for size in sizes:
        count = max(2, (_default_steps(size) if steps is None else int(steps)) // streams)
        results.append(_measure("streams", size, steps=count, seed=seed, streams=streams,
                                threads=threads, rounds=rounds, min_seconds=min_seconds))
    return results


def _figures(result):
    """A result dict of :func:`_measure` as a row of figures with units."""
    row = {"emulator": result["emulator"], "size": result["size"], "cells": result["cells"],
           "subcycles": result["subcycles"],
           "rate": figure(result["rate"], result["unit"]),
           "seconds_per_subcycle": figure(result["seconds"] / result["subcycles"],
                                          "s/subcycle"),
           "seconds": figure(result["seconds"], "s"),
           "cpu_seconds": figure(result["cpu_seconds"], "s")}
    if "streams" in result:
        row["streams"] = result["streams"]
    if "threads" in result:
        row["threads"] = result["threads"]
        row["memory"] = figure(result["memory_bytes"], "bytes")
    # The rate on free cores: per CPU-second of the process, times its threads (on a busy
    # machine the wall-time rate says how much of the cores the run got, this one what the
    # code does with a core; threads waiting at a barrier count as busy).
    if result["cpu_seconds"] > 0:
        row["cpu_rate"] = figure(result["rate"] * result["seconds"] / result["cpu_seconds"]
                                 * result.get("threads", 1), result["unit"])
    return row


def measure(sizes=SUITE_SIZES, *, steps=None, seed=1, streams=DEFAULT_STREAMS, threads=None,
            emulators=KINDS, rounds=None, min_seconds=None, progress=True):
    """The emulator part of the suite: every emulator on every size, side by side in one run.

    :param sizes: square grid sides.
    :param steps: subcycles per timed round (``None``: about 4M cell updates per size; the
        kernel runs 64 times as many per call).
    :param streams: streams of the lane-parallel figures (``0``: none).
    :param emulators: which of ``"simple"``, ``"fast"``, ``"kernel"``, ``"streams"`` to
        measure (``"kernel"`` only where numba is installed).
    :param rounds, min_seconds: timed rounds per figure (the best counts) and their least
        duration; ``None``: 3 rounds of 0.2 s (2 for streams).
    :param progress: a progress bar and a line per figure on stderr.
    :returns: ``{"part": "emulator", "rows": [...], "speedup": [...], "exponents": {...},
        "seconds": figure}``. Each row has ``emulator``, ``size``, ``cells``, ``subcycles`` and
        the figures ``rate`` (``cell-updates/s``, or ``stream-cell-updates/s`` for
        ``"streams"``), ``seconds_per_subcycle``, ``seconds``, ``cpu_seconds`` and, for the fast
        emulator and the kernel, ``memory`` (bytes of its arrays) and ``threads``. The
        exponents fit ``seconds_per_subcycle`` against ``cells`` per emulator. ``speedup``
        has per size ``fast_over_simple`` and, with the kernel, ``kernel_over_fast`` and
        ``kernel_over_simple``.
    """
    sizes = check_sizes(sizes)
    emulators = tuple(e for e in emulators if (e != "streams" or streams)
                      and (e != "kernel" or bitgrid_kernel.available()))
    options = {}
    if rounds is not None:
        options["rounds"] = rounds
    if min_seconds is not None:
        options["min_seconds"] = min_seconds
    started = timer()
    rows, speedup = [], []
    with Progress(len(sizes) * len(emulators), "emulator", progress) as bar:
        for size in sizes:
            found = {}
            for kind in emulators:
                if kind == "streams" and size > STREAMS_MAX_SIZE:
                    bar.done(f"emulator streams {size:>5} x {size:<5} not measured (above "
                             f"{STREAMS_MAX_SIZE} x {STREAMS_MAX_SIZE})")
                    continue
                bar.start(f"{kind} {size}x{size}")
                if kind == "simple":
                    result = run([size], steps, seed, **{"rounds": 3, "min_seconds": 0.2,
                                                         **options})[0]
                elif kind == "fast":
                    result = run_fast([size], steps, seed, threads=threads, **options)[0]
                elif kind == "kernel":
                    result = run_kernel([size], None if steps is None else 64 * steps, seed,
                                        threads=threads, **options)[0]
                else:
                    result = run_streams([size], streams, steps, seed, threads=threads,
                                         **options)[0]
                row = found[kind] = _figures(result)
                rows.append(row)
                bar.done(f"emulator {kind:>7} {size:>5} x {size:<5} "
                         f"{result['rate']:.3e} {result['unit']}")
            ratios = {}
            for a, b in (("fast", "simple"), ("kernel", "fast"), ("kernel", "simple")):
                if a in found and b in found:
                    ratios[f"{a}_over_{b}"] = figure(value(found[a]["rate"])
                                                     / value(found[b]["rate"]), "1")
            if ratios:
                speedup.append({"size": size, "cells": size * size, **ratios})
    return {"part": "emulator", "rows": rows, "speedup": speedup,
            "exponents": exponents(rows, ["seconds_per_subcycle"], group="emulator"),
            "seconds": figure(timer() - started, "s")}


def format_part(part):
    """The emulator part (see :func:`measure`) as text: one line per size with every kind side
    by side, then the kernel against its goals and the ceilings."""
    rows = part["rows"]
    sizes = sorted({r["size"] for r in rows})
    by = {(r["emulator"], r["size"]): r for r in rows}
    streams = next((r["streams"] for r in rows if "streams" in r), None)
    lines = ["Emulators: cell updates per second (cells evaluated per second, half the grid per "
             "subcycle)",
             f"{'grid':>11} {'simple':>10} {'fast':>10} {'threads':>7} {'CPU':>5} "
             f"{'kernel':>10} {'threads':>7} {'CPU':>5} {'free cores':>10} {'kernel/fast':>11}"
             + (f" {f'{streams} streams':>12}" if streams else ""),
             f"{'':>11} {'(step)':>10} {'(numpy)':>10} {'':>13} {'(batched)':>10} {'':>13} "
             f"{'(estimate)':>10}"]
    for size in sizes:
        simple, fast, kern, lanes = (by.get((k, size)) for k in KINDS)
        line = f"{size:>5} x {size:<5}"
        line += f"{value(simple['rate']):>10.3e} " if simple else f"{'-':>10} "
        line += (f"{value(fast['rate']):>10.3e} {fast['threads']:>7} {_cpu_use(fast):>5} "
                 if fast else f"{'-':>10} {'-':>7} {'-':>5} ")
        line += (f"{value(kern['rate']):>10.3e} {kern['threads']:>7} {_cpu_use(kern):>5} "
                 if kern else f"{'-':>10} {'-':>7} {'-':>5} ")
        line += (f"{value(kern['cpu_rate']):>10.3e} " if kern and "cpu_rate" in kern
                 else f"{'-':>10} ")
        line += (f"{value(kern['rate']) / value(fast['rate']):>10.1f}x"
                 if kern and fast else f"{'-':>11}")
        if streams:
            line += f" {value(lanes['rate']):>12.3e}" if lanes else f" {'-':>12}"
        lines.append(line)
    lines.append("CPU: process CPU time over wall time of the timed rounds (below the threads: "
                 "the machine was busy); free cores: the kernel's cell updates per CPU-second "
                 "times its threads" + ("; streams: stream-cell-updates/s of the numpy code"
                                        if streams else ""))
    busy = [s for s in sizes if (k := by.get(("kernel", s))) and k["threads"] > 1
            and _cpu_ratio(k) < BUSY_SHARE * k["threads"]]
    if busy:
        lines.append("Too busy to tell whether the kernel's threads ran in parallel at "
                     + ", ".join(f"{s} x {s}" for s in busy) + f" (CPU below {BUSY_SHARE:.0%} "
                     "of the threads: the machine did not give the run its cores)")
    goals = kernel_goals(part)
    if goals:
        lines.append("Compiled kernel against its goals (2 cores; ceilings for these 2 cores: "
                     f"{CEILINGS['L1']:.1e} in L1, {CEILINGS['L2']:.1e} in L2, "
                     f"{CEILINGS['memory']:.1e} from memory):")
        for goal in goals:
            lines.append(f"  {goal['size']:>5} x {goal['size']:<5} {goal['measured']:<32} "
                         f"goal {goal['goal']:<18} {'reached' if goal['met'] else 'not reached'}")
    return "\n".join(lines)


def kernel_goals(part):
    """The kernel's goals (:data:`KERNEL_GOALS`) against the rows of an emulator part: a list
    of ``{"size", "goal", "measured", "value", "met"}`` for the sizes measured (``value``: the
    rate, or the ratio for the 10x goals). The 10x goals compare
    with the better of the reference and the numpy code at that size (the emulators before the
    kernel), so they need both rows."""
    by = {(r["emulator"], r["size"]): r for r in part["rows"]}
    result = []
    for size, (text, goal) in KERNEL_GOALS.items():
        kern, fast, simple = (by.get((k, size)) for k in ("kernel", "fast", "simple"))
        if kern is None:
            continue
        rate = value(kern["rate"])
        if text.endswith("x"):
            if fast is None or simple is None:
                continue
            ratio = rate / max(value(fast["rate"]), value(simple["rate"]))
            result.append({"size": size, "goal": f">= {text} the best before it",
                           "measured": f"{rate:.2e} ({ratio:.1f}x)", "value": ratio,
                           "met": ratio >= goal})
        else:
            result.append({"size": size, "goal": f">= {text} cell-updates/s",
                           "measured": f"{rate:.2e} cell-updates/s", "value": rate,
                           "met": rate >= goal})
    return result


def _cpu_ratio(row):
    return value(row["cpu_seconds"]) / value(row["seconds"])


def _cpu_use(row):
    return f"{_cpu_ratio(row):.2f}"


if __name__ == "__main__":      # the same as `bitgrid bench emulator`
    import sys

    from bitgrid.cli.bench import bench
    bench(["emulator", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
