"""Throughput of the reference emulator, in cell updates per second.

A subcycle evaluates half of the grid (the cells of one parity, SPEC section 4), so a
``W x H`` grid run for ``n`` subcycles performs ``W * H / 2 * n`` cell updates. Each size runs a
uniformly random configuration with fresh random edge inputs at every subcycle (generated before
the timed loop). The timed loop is the public ``Emulator.step`` call, edge-word checking and
edge-output packing included.

Run ``python -m bench.emulator`` (or ``python bench/emulator.py``) from the repository root; it
prints one line per grid size and takes a few seconds.
"""

import argparse
import time

import numpy as np

from bitgrid import Configuration, Edges, Emulator

__all__ = ["DEFAULT_SIZES", "run", "main"]

#: Grid sizes (square, cells per side) of the default run.
DEFAULT_SIZES = (64, 256, 1024)


def _default_steps(size):
    """Enough subcycles for a stable figure: about 16 million cell updates, at least 16."""
    return max(16, (32 << 20) // (size * size))


def _random_word(rng, lanes):
    return int.from_bytes(rng.bytes((lanes + 7) // 8), "little") & ((1 << lanes) - 1)


def run(sizes=DEFAULT_SIZES, steps=None, seed=1):
    """Time the emulator on square random grids.

    :param sizes: grid sides in cells (even).
    :param steps: subcycles per size; ``None`` picks a count per size (see ``_default_steps``).
    :param seed: seed of the configurations and edge inputs.
    :returns: a list of ``dict(size, cells, subcycles, seconds, cell_updates_per_s)``, one per
        size, where ``cells`` is ``size * size`` and ``cell_updates_per_s`` is
        ``cells / 2 * subcycles / seconds``.
    """
    results = []
    for size in sizes:
        count = _default_steps(size) if steps is None else int(steps)
        rng = np.random.default_rng(seed)
        config = Configuration.random(size, size, seed=seed)
        edges = [Edges(*(_random_word(rng, size) for _ in range(4))) for _ in range(count)]
        emulator = Emulator(config)
        emulator.step(edges[0])               # warm-up (first-touch allocations)
        emulator.reset()
        start = time.perf_counter()
        for e in edges:
            emulator.step(e)
        seconds = time.perf_counter() - start
        cells = size * size
        results.append({"size": size, "cells": cells, "subcycles": count, "seconds": seconds,
                        "cell_updates_per_s": cells / 2 * count / seconds})
    return results


def format_table(results):
    lines = [f"{'grid':>11} {'cells':>9} {'subcycles':>9} {'seconds':>8} {'cell-updates/s':>15}"]
    for r in results:
        lines.append(f"{r['size']:>5} x {r['size']:<5}{r['cells']:>9} {r['subcycles']:>9} "
                     f"{r['seconds']:>8.3f} {r['cell_updates_per_s']:>15.3e}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES),
                        help="square grid sides in cells (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=None,
                        help="subcycles per size (default: about 16M cell updates per size)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(format_table(run(args.sizes, args.steps, args.seed)))


if __name__ == "__main__":
    main()
