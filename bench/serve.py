"""``bitgrid serve`` over loopback TCP (docs/serve.md): request round trips, and the lockstep
rate of a 2 x 2 mesh of linked servers per forwarding policy.

What is measured
----------------
* *Round trips*: one ``bitgrid serve`` process per target (``emu``, ``fast``) on an ``n`` x
  ``n`` random program; a client sends STEP 1 and GET_OUTPUTS and waits for OUTPUTS (and the
  HELLO that :class:`~bitgrid.bgcf.BgcfClient` sends behind every request), ``ROUND_TRIPS``
  times: round trips per second of wall time.
* *Linked mesh*: four ``bitgrid serve --target emu`` processes, each an ``n`` x ``n`` tile of a
  ``2n`` x ``2n`` random program, linked by duplex links (the north-west server owns E and S,
  the north-east S, the south-west E) with ``--link-forward`` ``both``, ``phase`` and
  ``cycle``; one STEP of ``MESH_STEPS`` subcycles to the north-west server: mesh subcycles per
  second. Each subcycle costs a message exchange with every linked peer (SET_INPUTS, STEP,
  GET_OUTPUTS, OUTPUTS), so this is bound by loopback latency and Python, not by the grid.

Separate processes (``python -m bitgrid serve``), so the servers do not share an interpreter
lock. Not a test: nothing is asserted.
"""

import contextlib
import random
import re
import subprocess
import sys

from .common import Progress, figure, timer, value

__all__ = ["SUITE_SIZES", "QUICK_SIZES", "ROUND_TRIPS", "MESH_STEPS", "POLICIES", "measure",
           "format_part", "quick_options"]

SUITE_SIZES = (8, 32)
QUICK_SIZES = (8,)
ROUND_TRIPS = 2000
MESH_STEPS = 1000
POLICIES = ("both", "phase", "cycle")


@contextlib.contextmanager
def _server(target, size, forward="both"):
    """A ``bitgrid serve`` process on a free port; yields the port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bitgrid", "serve", "--target", target, "--size",
         f"{size}x{size}", "--port", "0", "--link-forward", forward],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        line = process.stderr.readline()
        match = re.search(r"at [^ ]+:(\d+);", line)
        if not match:
            raise RuntimeError(f"bitgrid serve did not start: {line.strip()}"
                               f"{process.stderr.read().strip()}")
        yield int(match.group(1))
    finally:
        process.terminate()
        process.wait(10)


def _round_trips(target, size, count, rng):
    from bitgrid import Configuration, bitstream
    from bitgrid.bgcf import BgcfClient
    with _server(target, size) as port, BgcfClient(port=port) as client:
        client.load(bitstream.write(Configuration.random(size, size, seed=rng.getrandbits(32))))
        client.step(1)
        client.outputs()                    # warm: a kernel compiles on first use
        start = timer()
        for _ in range(count):
            client.step(1)
            client.outputs()
        return count / (timer() - start)


def _linked_mesh(size, policy, steps, rng):
    from bitgrid import Configuration, bitstream
    from bitgrid.bgcf import BgcfClient
    from bitgrid.mesh import MeshShape, slice_configuration
    config = Configuration.random(2 * size, 2 * size, seed=rng.getrandbits(32))
    tiles = slice_configuration(config, MeshShape(2, 2))
    with contextlib.ExitStack() as stack:
        ports = {chip: stack.enter_context(_server("emu", size, policy)) for chip in tiles}
        clients = {chip: stack.enter_context(BgcfClient(port=port))
                   for chip, port in ports.items()}
        for chip, tile in tiles.items():
            clients[chip].load(bitstream.write(tile))
        for chip, side, peer, back in (((0, 0), "E", (1, 0), "W"), ((0, 0), "S", (0, 1), "N"),
                                       ((1, 0), "S", (1, 1), "N"), ((0, 1), "E", (1, 1), "W")):
            clients[chip].link(side, side, back, "127.0.0.1", ports[peer], duplex=True)
        master = clients[0, 0]
        start = timer()
        master.step(steps)
        master.check()
        return steps / (timer() - start)


def measure(sizes=SUITE_SIZES, *, round_trips=ROUND_TRIPS, mesh_steps=MESH_STEPS,
            progress=True, seed=1):
    """The serve part of the suite.

    :returns: ``{"part": "serve", "round_trips": [...], "mesh": [...], "seconds"}``: rows of
        ``target``, ``size`` and ``round_trips_per_s`` (``1/s``); rows of ``policy``, ``size``
        (the tile side) and ``subcycles_per_s`` (``subcycles/s``).
    """
    rng = random.Random(seed)
    started = timer()
    trips, mesh = [], []
    with Progress(len(sizes) * (2 + len(POLICIES)), "serve", progress) as bar:
        for size in sizes:
            for target in ("emu", "fast"):
                bar.start(f"{target} {size}x{size}")
                rate = _round_trips(target, size, round_trips, rng)
                trips.append({"target": target, "size": size,
                              "round_trips_per_s": figure(rate, "1/s")})
                bar.done(f"serve {target:>4} {size:>4} x {size:<4} {rate:9.0f} round trips/s")
            for policy in POLICIES:
                bar.start(f"2x2 mesh {policy} {size}x{size} tiles")
                rate = _linked_mesh(size, policy, mesh_steps, rng)
                mesh.append({"policy": policy, "size": size,
                             "subcycles_per_s": figure(rate, "subcycles/s")})
                bar.done(f"serve 2x2 mesh of {size} x {size} tiles, {policy:>5}: "
                         f"{rate:8.0f} subcycles/s")
    return {"part": "serve", "round_trips": trips, "mesh": mesh,
            "seconds": figure(timer() - started, "s")}


def quick_options():
    return {"sizes": QUICK_SIZES, "round_trips": 300, "mesh_steps": 200}


def format_part(part):
    """The serve part (see :func:`measure`) as text tables."""
    lines = ["bitgrid serve over loopback TCP: STEP 1 + GET_OUTPUTS round trips",
             f"{'target':>7} {'grid':>11} {'round trips/s':>14}"]
    for r in part["round_trips"]:
        lines.append(f"{r['target']:>7} {r['size']:>5} x {r['size']:<5}"
                     f"{value(r['round_trips_per_s']):>14.0f}")
    lines += ["", "2 x 2 mesh of linked bitgrid serve processes (duplex links), one STEP",
              f"{'policy':>7} {'tile':>11} {'subcycles/s':>12}"]
    for r in part["mesh"]:
        lines.append(f"{r['policy']:>7} {r['size']:>5} x {r['size']:<5}"
                     f"{value(r['subcycles_per_s']):>12.0f}")
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench serve`
    from bitgrid.cli.bench import bench
    bench(["serve", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
