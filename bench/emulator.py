"""Throughput of the emulators, in cell updates per second: the reference emulator
(``bitgrid.emulator.Emulator``), the bit-parallel one (``bitgrid.fastemu.FastEmulator``) and the
bit-parallel one running many input streams at once (lane-parallel mode).

A subcycle evaluates half of the grid (the cells of one parity, SPEC section 4), so a
``W x H`` grid run for ``n`` subcycles performs ``W * H / 2 * n`` cell updates; with ``k``
streams it performs ``k`` times as many *stream-cell updates*. Each size runs a uniformly random
configuration with random edge inputs at every subcycle (a pool of inputs generated before the
timed loop and cycled through). The timed loop is the public ``step`` call, edge-word checking
and edge-output packing included. Each figure is the best of a few timed rounds (the machine
may be shared), each round running at least ``min_seconds``.

Run ``bitgrid bench emulator`` (or ``python -m bitgrid.bench emulator``); it prints a table
(and writes JSON with ``--json``) and takes well under a minute. :func:`measure`
is the emulator part of the suite (``make bench``, ``bitgrid bench emulator``): the same
measurements as figures with units, plus growth exponents.
"""

import time

import numpy as np

from bitgrid import Configuration, Edges, Emulator
from bitgrid.fastemu import FastEmulator

from .common import Progress, check_sizes, exponents, figure, timer, value

__all__ = ["DEFAULT_SIZES", "DEFAULT_STREAMS", "SUITE_SIZES", "QUICK_SIZES", "run", "run_fast",
           "run_streams", "measure", "format_part"]

#: Grid sizes (square, cells per side) of the default run.
DEFAULT_SIZES = (64, 256, 1024)
#: Grid sizes of the emulator part of ``make bench`` and of ``python -m bitgrid.bench --quick``.
SUITE_SIZES = (32, 64, 128, 256, 512, 1024)
QUICK_SIZES = (64, 256, 1024)
#: Streams of the lane-parallel figures.
DEFAULT_STREAMS = 64
#: Edge inputs generated per measurement (cycled through by longer runs).
_POOL = 64


def _default_steps(size):
    """Enough subcycles for a stable figure: about 16 million cell updates, at least 16."""
    return max(16, (32 << 20) // (size * size))


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


def _measure(kind, size, *, steps, seed, streams=None, threads=None, rounds=1,
             min_seconds=0.0):
    rng = np.random.default_rng(seed)
    config = Configuration.random(size, size, seed=seed)
    count = _default_steps(size) if steps is None else int(steps)
    if kind == "simple":
        emulator = Emulator(config)
    else:
        emulator = FastEmulator(config, streams=streams, threads=threads)
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
    """Time the bit-parallel emulator (one stream) like :func:`run`: the same dicts with
    ``emulator="fast"``, plus ``threads``, ``memory_bytes`` (its arrays, see
    ``FastEmulator.nbytes``) and ``config_bytes`` (8 bytes per cell)."""
    return [_measure("fast", size, steps=steps, seed=seed, threads=threads, rounds=rounds,
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
    return row


def measure(sizes=SUITE_SIZES, *, steps=None, seed=1, streams=DEFAULT_STREAMS, threads=None,
            emulators=("simple", "fast", "streams"), rounds=None, min_seconds=None,
            progress=True):
    """The emulator part of the suite: every emulator on every size, side by side in one run.

    :param sizes: square grid sides.
    :param steps: subcycles per timed round (``None``: about 16M cell updates per size).
    :param streams: streams of the lane-parallel figures (``0``: none).
    :param emulators: which of ``"simple"``, ``"fast"``, ``"streams"`` to measure.
    :param rounds, min_seconds: timed rounds per figure (the best counts) and their least
        duration; ``None``: 3 rounds of 0.2 s (2 for streams).
    :param progress: a progress bar and a line per figure on stderr.
    :returns: ``{"part": "emulator", "rows": [...], "speedup": [...], "exponents": {...},
        "seconds": figure}``. Each row has ``emulator``, ``size``, ``cells``, ``subcycles`` and
        the figures ``rate`` (``cell-updates/s``, or ``stream-cell-updates/s`` for
        ``"streams"``), ``seconds_per_subcycle``, ``seconds``, ``cpu_seconds`` and, for the fast
        emulator, ``memory`` (bytes of its arrays) and ``threads``. The exponents fit
        ``seconds_per_subcycle`` against ``cells`` per emulator.
    """
    sizes = check_sizes(sizes)
    emulators = tuple(e for e in emulators if e != "streams" or streams)
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
                bar.start(f"{kind} {size}x{size}")
                if kind == "simple":
                    result = run([size], steps, seed, **{"rounds": 3, "min_seconds": 0.2,
                                                         **options})[0]
                elif kind == "fast":
                    result = run_fast([size], steps, seed, threads=threads, **options)[0]
                else:
                    result = run_streams([size], streams, steps, seed, threads=threads,
                                         **options)[0]
                row = found[kind] = _figures(result)
                rows.append(row)
                bar.done(f"emulator {kind:>7} {size:>5} x {size:<5} "
                         f"{result['rate']:.3e} {result['unit']}")
            if "simple" in found and "fast" in found:
                speedup.append({"size": size, "cells": size * size,
                                "fast_over_simple": figure(value(found["fast"]["rate"])
                                                           / value(found["simple"]["rate"]),
                                                           "1")})
    return {"part": "emulator", "rows": rows, "speedup": speedup,
            "exponents": exponents(rows, ["seconds_per_subcycle"], group="emulator"),
            "seconds": figure(timer() - started, "s")}


def format_part(part):
    """The emulator part (see :func:`measure`) as a text table, one line per size."""
    rows = part["rows"]
    sizes = sorted({r["size"] for r in rows})
    by = {(r["emulator"], r["size"]): r for r in rows}
    streams = next((r["streams"] for r in rows if "streams" in r), None)
    lines = ["Emulators: cell updates per second (cells evaluated per second, half the grid per "
             "subcycle)",
             f"{'grid':>11} {'cells':>9} {'simple':>10} {'fast':>10} {'speedup':>8} "
             f"{'threads':>7} {'CPU use':>7}" + (f" {f'{streams} streams':>12} {'threads':>7} "
                                                  f"{'CPU use':>7}" if streams else ""),
             f"{'':>21} {'(cell-updates/s)':>21} {'':>24}"
             + (" (stream-cell-updates/s)" if streams else "")]
    for size in sizes:
        simple, fast, lanes = (by.get((k, size)) for k in ("simple", "fast", "streams"))
        line = f"{size:>5} x {size:<5}{size * size:>9} "
        line += f"{value(simple['rate']):>10.3e} " if simple else f"{'-':>10} "
        line += f"{value(fast['rate']):>10.3e} " if fast else f"{'-':>10} "
        line += (f"{value(fast['rate']) / value(simple['rate']):>7.1f}x "
                 if simple and fast else f"{'-':>8} ")
        line += f"{fast['threads']:>7} {_cpu_use(fast):>7}" if fast else f"{'-':>7} {'-':>7}"
        if streams:
            line += (f" {value(lanes['rate']):>12.3e} {lanes['threads']:>7} "
                     f"{_cpu_use(lanes):>7}" if lanes else f" {'-':>12} {'-':>7} {'-':>7}")
        lines.append(line)
    lines.append("CPU use: process CPU time over wall time of the timed rounds (below the "
                 "threads: the machine was busy)")
    return "\n".join(lines)


def _cpu_use(row):
    return f"{value(row['cpu_seconds']) / value(row['seconds']):.2f}"


if __name__ == "__main__":      # the same as `bitgrid bench emulator`
    import sys

    from bitgrid.cli.bench import bench
    bench(["emulator", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
