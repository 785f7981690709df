"""Emulation across MPI ranks (:mod:`bitgrid.mpi`): strong and weak scaling on this machine, and
the communication volume per exchange against the computation per rank.

Each measurement starts ``mpiexec -n R`` (:func:`bitgrid.mpi.mpiexec_command`) on a worker that
runs a uniformly random configuration with random edge inputs at every subcycle through
:func:`bitgrid.mpi.run` and writes the per-rank statistics (:class:`bitgrid.mpi.RankStats`) as
JSON. The time is that of the subcycles alone (from a barrier after every rank built its tile
to its last subcycle, the slowest rank counting); start-up, tile building and the gathering of
the outputs are not in it.

* *Strong scaling*: one grid (default 512 x 512), 1, 2 and 4 ranks.
* *Weak scaling*: one tile per rank of a fixed size (default 512 x 512): grids 512 x 512,
  1024 x 512 and 1024 x 1024 on 1, 2 and 4 ranks.

Each is run with the seam exchange (``halo=1``: a message per inner side and subcycle) and
with k-deep halos (default ``halo=8`` and ``32``). The machine has 2 cores: 4 ranks are oversubscribed,
so they show the cost of the decomposition (redundant halo cells, messages) and not a speed-up.
Per rank and exchange the table gives the bytes sent and the cells evaluated; with the
per-core rate and a network's latency and bandwidth they give a cluster's figure
(docs/performance.md, "Emulation across processes").

``bitgrid bench mpi`` (or ``python -m bitgrid.bench.mpi``) prints the table (``--json FILE``
also writes it); it is the ``mpi`` part of ``make bench``.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from .common import Progress, figure, timer, value

__all__ = ["SUITE_SIZES", "QUICK_SIZES", "measure", "format_part", "worker"]

#: Tile sides (square) of the suite: the strong-scaling grid and the weak-scaling tile.
SUITE_SIZES = (512,)
QUICK_SIZES = (256,)
#: Rank counts measured.
RANKS = (1, 2, 4)
#: Halos measured: the seam exchange, 8-deep and 32-deep halos.
HALOS = (1, 8, 32)
#: Cell updates per measurement (all ranks): about a second of one core's work.
_WORK = 3e8


def worker(spec_path, out_path):
    """Run under mpiexec: one :func:`bitgrid.mpi.run` as ``spec_path`` (JSON: ``width``,
    ``height``, ``steps``, ``halo``, ``emulator``, ``seed``) says; the root writes the
    per-rank statistics to ``out_path`` (JSON)."""
    from mpi4py import MPI

    from bitgrid import mpi
    from bitgrid.config import Configuration
    from bitgrid.files import atomic_write
    comm = MPI.COMM_WORLD
    with open(spec_path) as file:
        spec = json.load(file)
    config = inputs = None
    if comm.Get_rank() == 0:
        rng = np.random.default_rng(spec["seed"])
        w, h = spec["width"], spec["height"]
        config = Configuration(w, h, rng.integers(0, 1 << 16, size=(h, w, 4), dtype=np.uint16))
        pool = [tuple(int.from_bytes(rng.bytes(n // 8 + 1), "little") & ((1 << n) - 1)
                      for n in (w, h, w, h)) for _ in range(64)]
        inputs = [pool[t % len(pool)] for t in range(spec["steps"])]
    result = mpi.run(config, inputs, comm=comm, halo=spec["halo"],
                     emulator=spec["emulator"])
    if comm.Get_rank() == 0:
        atomic_write(out_path, json.dumps({
            "shape": str(result.decomposition.shape), "emulator": result.emulator,
            "stats": [s._asdict() for s in result.stats]}))


def _launch(ranks, spec):
    from bitgrid import mpi
    with tempfile.TemporaryDirectory(prefix="bitgrid-bench-mpi-") as folder:
        spec_path, out_path = os.path.join(folder, "spec.json"), os.path.join(folder, "out.json")
        with open(spec_path, "w") as file:
            json.dump(spec, file)
        code = "import sys; from bitgrid.bench.mpi import worker; worker(*sys.argv[1:])"
        argv, env = mpi.mpiexec_command(ranks, [sys.executable, "-c", code, spec_path,
                                                out_path])
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode:
            raise RuntimeError(f"mpiexec -n {ranks} failed: {done.stderr.strip()[-500:]}")
        with open(out_path) as file:
            return json.load(file)


def _row(kind, ranks, width, height, halo, emulator, steps, seed):
    spec = dict(width=width, height=height, steps=steps, halo=halo, emulator=emulator,
                seed=seed)
    result = _launch(ranks, spec)
    stats = result["stats"]
    wall = max(s["wall_s"] for s in stats)
    exchanges = max(s["exchanges"] for s in stats)
    busiest = max(stats, key=lambda s: s["bytes_sent"])
    rounds = busiest["exchanges"] or None        # one rank: no exchange
    return {
        "series": kind, "ranks": ranks, "size": [width, height], "cells": width * height,
        "halo": halo, "emulator": result["emulator"], "tiles": result["shape"], "subcycles": steps,
        "rate": figure(width * height // 2 * steps / wall, "cell-updates/s"),
        # Load-proof: the cell updates of the grid per CPU second of all the ranks together
        # (waiting included), and the CPU seconds per exchange of the busiest rank.
        "cpu_rate": figure(width * height // 2 * steps / sum(s["cpu_s"] for s in stats),
                           "cell-updates/s"),
        "cpu_seconds": figure(sum(s["cpu_s"] for s in stats), "s"),
        "seconds": figure(wall, "s"),
        "seconds_per_subcycle": figure(wall / steps, "s/subcycle"),
        "exchange_share": figure(max(s["exchange_s"] for s in stats) / wall, "1"),
        "redundant_share": figure(sum(s["cell_updates"] for s in stats)
                                  / sum(s["tile_cell_updates"] for s in stats) - 1, "1"),
        "exchanges": exchanges,
        # The busiest rank (most bytes): what it sends per exchange round (all its sides) and
        # what it evaluates between two rounds.
        "bytes_per_exchange": figure(busiest["bytes_sent"] / rounds, "bytes") if rounds else None,
        "messages_per_exchange": figure(busiest["messages"] / rounds, "1") if rounds else None,
        "cells_per_exchange": busiest["cell_updates"] / rounds if rounds else None,
    }


def measure(sizes=SUITE_SIZES, *, ranks=RANKS, halos=HALOS, emulator="auto", seed=1,
            work=_WORK, progress=True):
    """Strong and weak scaling (see the module docstring).

    :param sizes: square sides: each is the strong-scaling grid and the weak-scaling tile.
    :param ranks: rank counts (the first should be 1: the baseline of the efficiencies).
    :param halos: the ``halo`` values of :func:`bitgrid.mpi.run` to measure.
    :param emulator: the emulator of each tile (:data:`bitgrid.mpi.EMULATORS`).
    :param work: cell updates per measurement (the subcycles are this over half the grid,
        16 to 4096, a multiple of the halo).
    :returns: ``{"part": "mpi", "rows": [...], "seconds": figure}``; each row has
        ``series`` (``"strong"`` or ``"weak"``), ``ranks``, ``size`` ``[W, H]``, ``halo``,
        ``emulator``, ``tiles``, the figures ``rate`` (cell-updates/s of the whole grid), ``seconds``,
        ``seconds_per_subcycle``, ``exchange_share`` (the slowest rank's time in exchanges
        over the run), ``redundant_share`` (halo cells evaluated over tile cells),
        ``bytes_per_exchange``, ``messages_per_exchange`` and ``cells_per_exchange`` (of the
        rank that sends most), ``cpu_rate`` (cell-updates/s per CPU second of all ranks),
        ``cpu_seconds``, and ``efficiency`` and ``cpu_efficiency`` (against 1 rank of the same
        series and halo).
    """
    started = timer()
    plan = []
    for size in sizes:
        for halo in halos:
            for r in ranks:
                plan.append(("strong", r, size, size, halo))
            for r in ranks:
                cols = next(c for c in range(1, r + 1) if r % c == 0 and c * c >= r)
                plan.append(("weak", r, size * cols, size * (r // cols), halo))
    rows = []
    with Progress(len(plan), "mpi", progress) as bar:
        for kind, r, w, h, halo in plan:
            bar.start(f"{kind} {r} ranks {w}x{h} halo {halo}")
            steps = max(16, min(4096, int(work / (w * h / 2))))
            steps -= steps % max(1, halo)
            row = _row(kind, r, w, h, halo, emulator, steps, seed)
            rows.append(row)
            bar.done(f"mpi {kind:>6} {r} ranks {w:>5} x {h:<5} halo {halo}: "
                     f"{value(row['rate']):.3e} cell-updates/s")
    for row in rows:
        base = next((b for b in rows if b["series"] == row["series"] and b["ranks"] == 1
                     and b["halo"] == row["halo"]
                     and (b["size"] == row["size"] if row["series"] == "strong"
                          else b["cells"] * row["ranks"] == row["cells"])), None)
        if base is not None:
            ideal = value(base["rate"]) * (row["ranks"] if row["series"] == "weak" else 1)
            speed = value(row["rate"]) / ideal if row["series"] == "weak" else \
                value(row["rate"]) / value(base["rate"]) / row["ranks"]
            row["efficiency"] = figure(speed, "1")
            row["cpu_efficiency"] = figure(value(row["cpu_rate"]) / value(base["cpu_rate"]),
                                           "1")
    return {"part": "mpi", "rows": rows, "cores": len(os.sched_getaffinity(0)),
            "seconds": figure(timer() - started, "s")}


def format_part(part):
    """The MPI part (see :func:`measure`) as a text table."""
    lines = [f"Emulation across MPI ranks ({part.get('cores', '?')} cores; more ranks than "
             "cores are oversubscribed): whole-grid cell-updates/s, subcycles only",
             f"{'series':>6} {'ranks':>5} {'grid':>11} {'tiles':>5} {'halo':>4} "
             f"{'cell-upd/s':>10} {'effic.':>6} {'per CPU-s':>10} {'CPU eff.':>8} "
             f"{'exch.':>5} {'redund.':>7} "
             f"{'bytes/exch':>10} {'msgs/exch':>9} {'cells/exch':>10} {'bytes/cell':>10}"]
    for row in part["rows"]:
        w, h = row["size"]
        eff, cpu_eff = row.get("efficiency"), row.get("cpu_efficiency")
        cells = row["cells_per_exchange"]
        sent = value(row["bytes_per_exchange"])
        if cells is None:
            traffic = f"{'-':>10} {'-':>9} {'-':>10} {'-':>10}"
        else:
            traffic = (f"{sent:>10.0f} {value(row['messages_per_exchange']):>9.0f} "
                       f"{cells:>10.0f} {sent / cells:>10.4f}")
        lines.append(
            f"{row['series']:>6} {row['ranks']:>5} {f'{w} x {h}':>11} {row['tiles']:>5} "
            f"{row['halo']:>4} {value(row['rate']):>10.3e} "
            f"{f'{value(eff):.2f}' if eff else '-':>6} {value(row['cpu_rate']):>10.3e} "
            f"{f'{value(cpu_eff):.2f}' if cpu_eff else '-':>8} "
            f"{value(row['exchange_share']):>5.2f} {value(row['redundant_share']):>7.3f} "
            + traffic)
    lines.append("effic.: rate over the 1-rank rate (strong) or over ranks x the 1-rank rate "
                 "(weak); per CPU-s: cell updates per CPU second of all ranks together "
                 "(waiting included; on a loaded machine the fairer figure); CPU eff.: that "
                 "over the 1-rank figure; exch.: the slowest rank's share of time in exchanges; redund.: halo "
                 "cells evaluated per tile cell; per exchange (the rank that sends most): "
                 "bytes sent, messages, cell updates between two exchanges")
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench mpi`
    from bitgrid.cli.bench import bench
    bench(["mpi", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
