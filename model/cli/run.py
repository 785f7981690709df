"""``bitgrid emulate``, ``sim`` and ``run``: a program on the reference emulator, on the RTL grid
in cocotb (alone or as a mesh of chips) and on a target of the host runtime."""

import os
import sys
import time

import click

from bitgrid.emulator import Emulator
from bitgrid.stimulus import record_vectors
from bitgrid.terms import GATEWARE_STORAGES, SIMULATORS
from bitgrid.vectors import compare_step

from .engine import check_engine_options, engine_options
from .common import (check_writable, load_bitstream, print_steps, refuse_json_with_vectors,
                     run_options, run_stimulus, verdict)
from .errors import EXIT_MISMATCH, EXIT_OK, BadInput, explain
from .mpi import check_mpi_options, emulate_mpi, mpi_options
from .params import FaultsType, MeshType, Seconds
from .progress import Bar, StageTimer, progress_options

__all__ = ["emulate", "sim", "run"]


@click.command()
@click.argument("bitstream", metavar="PROGRAM", type=click.Path(dir_okay=False))
@run_options
@click.option("--save-vectors", "save_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also record the run (the inputs of --inputs/--steps and the outputs) as a "
                   "bitgrid-vectors-v1 file, for --vectors of emulate, sim and run.")
@mpi_options
@progress_options
def emulate(bitstream, vectors, inputs, steps, as_json, save_path, mpi, procs, halo, engine,
            show_progress):
    """Run PROGRAM (a BitGrid program, .bgbs) on the reference emulator.

    With --vectors, check every step against the file (exit 0 all match, 1 mismatch);
    otherwise print the edge outputs of each subcycle. --save-vectors turns such a run into a
    vector file to check other targets against:

    \b
      bitgrid emulate adder8.bgbs --inputs in.txt --save-vectors adder8_run.json
      bitgrid sim adder8.bgbs --vectors adder8_run.json

    --mpi splits the grid over the ranks of mpiexec, one tile each, with the same results
    (docs/mpi.md): mpiexec -n 4 bitgrid emulate adder8.bgbs --vectors adder8.json --mpi
    """
    check_mpi_options(mpi, procs, halo, engine, save_path)
    if mpi:
        return emulate_mpi(bitstream, vectors, inputs, steps, as_json, save_path, procs, halo,
                           engine)
    bs = load_bitstream(bitstream)
    if save_path is not None:
        if vectors:
            raise BadInput("--save-vectors records a run of --inputs or --steps; --vectors "
                           "already is a vector file")
        check_writable(save_path)
    case, stream = run_stimulus(bs, vectors, inputs, steps, as_json)
    emulator = Emulator(bs.config)
    started = time.monotonic()
    with Bar(show_progress and not as_json, desc="subcycles", unit="sc", delay=1) as bar:
        outputs = []
        for edges in stream:
            outputs.append(emulator.step(edges))
            bar(len(outputs), len(stream))
    elapsed = time.monotonic() - started
    if case is None:
        print_steps(stream, outputs, bs.width, bs.height, as_json)
        if save_path is not None:
            source = f"--inputs {inputs}" if inputs else "all-zero inputs"
            record_vectors(save_path, bitstream, bs.config, stream,
                           description=f"recorded by bitgrid emulate: {len(stream)} subcycles "
                                       f"of {os.path.basename(bitstream)} from {source}")
            click.echo(f"wrote {save_path}: {len(stream)} steps of a {bs.width} x {bs.height} "
                       f"grid (check a target with --vectors {save_path})", err=True)
        return
    mismatches = [m for t, o in enumerate(outputs)
                  for m in compare_step(t, case.steps[t][1], o, bs.width, bs.height)]
    click.echo(f"emulator: {len(stream)} subcycles of a {bs.width} x {bs.height} grid in "
               f"{elapsed * 1e3:.1f} ms")
    sys.exit(verdict(case.name, mismatches, len(stream)))


def _sim_options(mesh, fixed, build_args, plusargs):
    """The keyword arguments of :func:`bitgrid.sim.run_case` for ``--fixed``, ``--build-arg``
    and ``--plusarg``; bad input (exit 2) with ``--mesh`` or a plusarg without ``+``."""
    import shlex
    if mesh is not None and (fixed or build_args or plusargs):
        raise BadInput("--fixed, --build-arg and --plusarg are options of a single grid; "
                       "drop them or --mesh")
    for arg in plusargs:
        if not arg.startswith("+") or len(arg) < 2:
            raise BadInput(f"--plusarg {arg!r}: a plusarg starts with '+', e.g. "
                           "--plusarg +verilator+rand+reset+2")
    split = []
    for arg in build_args:
        try:
            split += shlex.split(arg)
        except ValueError as error:
            raise BadInput(f"--build-arg {arg!r}: {error}") from None
    return {"fixed": fixed, "build_args": tuple(split), "plusargs": tuple(plusargs)}


def _check_mesh_options(bs, mesh, faults, lanes, ddr, line_delay):
    """Bad input (exit 2) if the link options of ``sim`` come without a mesh that has links, or
    if the grid does not split into the mesh's tiles."""
    if mesh is None and (faults is not None or lanes != 1 or ddr or line_delay):
        raise BadInput("--faults, --lanes, --ddr and --line-delay describe the links of a "
                       "mesh: add --mesh COLSxROWS")
    if mesh is not None:
        mesh.tile_size(bs.width, bs.height)
        if len(mesh) == 1 and (faults is not None and faults.enabled or lanes != 1 or ddr
                               or line_delay):
            raise BadInput("a 1x1 mesh has no links for --faults, --lanes, --ddr or "
                           "--line-delay to act on; use a mesh of two chips or more")


@click.command()
@click.argument("bitstream", metavar="PROGRAM", type=click.Path(dir_okay=False))
@run_options
@click.option("--simulator", type=click.Choice(SIMULATORS), default="icarus",
              show_default=True, help="RTL simulator, driven by cocotb.")
@click.option("--storage", type=click.Choice(GATEWARE_STORAGES), default="ff",
              show_default=True,
              help="Configuration storage back end of the simulated grid (latch: the ASIC "
                   "latch array, a single direct grid only).")
@click.option("--waves", type=click.Path(dir_okay=False),
              help="Dump waveforms to this file (.fst or .vcd).")
@click.option("--mesh", type=MeshType(), metavar="COLSxROWS",
              help="Run on a simulated mesh of COLSxROWS chips joined by links (SPEC section 8): "
                   "each chip gets its slice of PROGRAM.")
@click.option("--faults", type=FaultsType(), metavar="SPEC",
              help="With --mesh: link faults to inject, as KEY=VALUE,...: flip (bit error "
                   "probability, <= 0.005), drop and dup (frame probabilities, drop <= 0.5), "
                   "slip (number of bit slips, <= 4 per step), skew (bit times per lane, <= 15), "
                   "disconnect (number of disconnections, <= 1 per step), disconnect_cycles "
                   "(their length, default 200, <= 10000), clock (clock period ratio of "
                   "neighbouring chips, 1/16 to 16), seed; or 'all' (every kind), e.g. "
                   "'all,seed=3' or 'flip=1e-3,drop=0.02'. Beyond these a mesh stalls. See "
                   "docs/mesh.md.")
@click.option("--lanes", type=click.IntRange(1, 16), default=1, show_default=True,
              help="With --mesh: data lanes per link direction.")
@click.option("--ddr", is_flag=True, help="With --mesh: double data rate lanes.")
@click.option("--line-delay", type=click.IntRange(0, 4096), default=0, show_default=True,
              help="With --mesh: extra latency of every link, in cycles.")
@click.option("--fixed", is_flag=True,
              help="Compile PROGRAM into the gateware (the grid's power-up configuration) "
                   "instead of loading it through the configuration port; it is still read "
                   "back. One build per program.")
@click.option("--build-arg", "build_args", multiple=True, metavar="ARGS",
              help="Extra arguments of the simulator's compiler, split like a shell does, e.g. "
                   "--build-arg '--x-assign unique --x-initial unique' (Verilator). "
                   "Repeatable; a separate cached build.")
@click.option("--plusarg", "plusargs", multiple=True, metavar="+ARG",
              help="A run-time argument of the simulator, e.g. +verilator+rand+reset+2. "
                   "Repeatable.")
@click.option("--step-by-step", "step_by_step", is_flag=True,
              help="Drive the grid from the cocotb test bench each clock (slow; for "
                   "debugging) instead of the stimulus player, which runs the whole stimulus "
                   "inside the simulator (docs/player.md). --waves implies it.")
@progress_options
@engine_options
def sim(bitstream, vectors, inputs, steps, as_json, simulator, storage, waves, mesh, faults,
        lanes, ddr, line_delay, fixed, build_args, plusargs, engine, evaluators,
        step_by_step, show_progress):
    """Run PROGRAM (a BitGrid program, .bgbs) on the RTL grid in cocotb (Icarus or Verilator).

    The bitstream is loaded through the grid's configuration port and read back; every step is
    compared with the reference emulator and, with --vectors, with the file. Exit 0 when all
    match, 1 with a mismatch report otherwise.

    With --mesh the grid is split over a mesh of simulated chips, each loading its slice, that
    exchange their boundary lanes over simulated LVDS-style links under the lockstep barrier;
    --faults injects link faults, and the fault and retry counters are printed. Example:

    \b
      bitgrid sim random_8x8.bgbs --vectors random_8x8.json --mesh 2x2 --faults all
      bitgrid sim out/adder8.bgbs --vectors out/adder8.json --engine multiplexed
    """
    from bitgrid.sim import run_case
    bs = load_bitstream(bitstream)
    check_engine_options(engine, evaluators, bs.width)
    if step_by_step and mesh is not None:
        raise BadInput("--step-by-step is an option of a single grid; leave it out with --mesh")
    if engine != "direct" and mesh is not None:
        raise BadInput("--mesh runs the direct grid in each chip; leave out --engine")
    if storage == "latch" and (mesh is not None or engine != "direct"):
        raise BadInput("--storage latch (the ASIC latch array) runs on a single direct grid; "
                       "leave out " + ("--mesh" if mesh is not None else "--engine"))
    refuse_json_with_vectors(vectors, as_json)
    _check_mesh_options(bs, mesh, faults, lanes, ddr, line_delay)
    sim_options = _sim_options(mesh, fixed, build_args, plusargs)
    if waves:
        check_writable(waves)
    case, stream = run_stimulus(bs, vectors, inputs, steps, as_json)
    expected = [o for _, o in case.steps[:len(stream)]] if case else None
    name = case.name if case else "run"
    explain("simulation", f"the {simulator} simulation failed to build or run: {{error}}")
    if mesh is None:
        if engine != "direct":
            sim_options.update(engine=engine, evaluators=evaluators)
        if step_by_step:
            sim_options["player"] = False
        with StageTimer(f"{simulator}: building the {bs.width} x {bs.height} grid, loading "
                        f"it and running {len(stream)} subcycles", on=show_progress):
            result = run_case(bs.config, stream, expected=expected, simulator=simulator,
                              storage=storage, waves=waves, name=name,
                              quiet=not show_progress, **sim_options)
    else:
        from bitgrid.sim.mesh import run_mesh_case
        with StageTimer(f"{simulator}: building the {mesh} mesh, loading it and running "
                        f"{len(stream)} subcycles", on=show_progress):
            result = run_mesh_case(bs.config, stream, mesh, expected=expected, name=name,
                                   simulator=simulator, storage=storage, waves=waves,
                                   faults=faults, lanes=lanes, ddr=ddr,
                                   line_delay=line_delay, quiet=not show_progress)
    grid_kind = f"{storage} storage" if engine == "direct" else "multiplexed engine"
    where = (f"a {bs.width} x {bs.height} grid ({grid_kind})" if mesh is None
             else f"a {bs.width} x {bs.height} grid on a {result.design}")
    ran = len(stream) if mesh is None else len(result.outputs)
    click.echo(f"{simulator}: {ran} subcycles of {where}"
               f"{f' (of {len(stream)} asked for)' if ran != len(stream) else ''}; build "
               f"{result.build_seconds:.1f} s{' (cached)' if result.build_cached else ''}, "
               f"run {result.run_seconds:.1f} s", err=case is None)
    if mesh is not None:
        _print_mesh_counters(result, err=case is None)
    if waves:
        click.echo(f"waveforms: {waves}", err=case is None)
        if getattr(result, "save_file", None):
            click.echo(f"GTKWave save file: {result.save_file} (gtkwave {result.save_file})",
                       err=case is None)
    if case is None:
        print_steps(stream, result.outputs, bs.width, bs.height, as_json)
    if not result.ok:
        click.echo(f"{'STALLED' if getattr(result, 'stalled', None) else 'MISMATCH'}: "
                   f"{result.summary()}")
        sys.exit(EXIT_MISMATCH)
    if case is not None:
        click.echo(f"PASS: {case.name}: all {len(stream)} steps match the vector file and the "
                   "reference emulator; configuration read back intact")
    sys.exit(EXIT_OK)


def _print_mesh_counters(result, err):
    """The fault and retry counters of a mesh run: totals, then one line per link direction
    (what its transmitter sent and injected, what its receiver saw)."""
    injected = result.injected
    totals = result.totals()
    click.echo(f"faults: {result.faults.describe()}", err=err)
    click.echo("injected: " + ", ".join(f"{k} {v}" for k, v in injected.items()) +
               f"; {result.verdict()}", err=err)
    click.echo("link counters: " + ", ".join(f"{k} {v}" for k, v in totals.items()
                                             if k not in injected), err=err)
    if result.step_cycles:
        click.echo(f"rate: {result.cycles_per_subcycle:.1f} cycles per subcycle (tile 0's "
                   f"clock); barrier stalls per tile: {', '.join(map(str, result.stalls))}",
                   err=err)
    for link in result.directions():
        (c0, r0, s0), (c1, r1, s1) = link["from"], link["to"]
        busy = ", ".join(f"{k} {v}" for k, v in link.items()
                         if k not in ("from", "to", "aligned") and v)
        click.echo(f"  chip ({c0},{r0}) {s0} -> chip ({c1},{r1}) {s1}: {busy or 'no traffic'}",
                   err=err)


@click.command()
@click.argument("bitstream", metavar="PROGRAM", type=click.Path(dir_okay=False))
@run_options
@click.option("--target", "target_spec", default="emu", show_default=True,
              help="Where to run: emu (reference emulator), fast (bit-parallel emulator), "
                   "mesh:COLSxROWS (a mesh of emulated chips), serial:PORT (a board over its "
                   "UART, docs/host-protocol.md), loopback (the Python model of the board's "
                   "protocol engine) or sim (the board's host controller gateware in cocotb, "
                   "driven over a simulated UART).")
@click.option("--baud", type=click.IntRange(min=1), default=115200, show_default=True,
              help="Baud rate of a serial target.")
@click.option("--timeout", type=Seconds(0.01), default=1.0, show_default=True,
              help="Seconds to wait for each answer of a serial target.")
@click.option("--simulator", type=click.Choice(SIMULATORS), default="icarus",
              show_default=True, help="RTL simulator of the sim target.")
@engine_options
@progress_options
@click.pass_context
def run(ctx, bitstream, vectors, inputs, steps, as_json, target_spec, baud, timeout,
        simulator, engine, evaluators, show_progress):
    """Run PROGRAM (a BitGrid program, .bgbs) on a target through the host runtime (bitgrid.host).

    With --vectors, check every step against the file (exit 0 all match, 1 mismatch);
    otherwise print the edge outputs of each subcycle. No device, or one that does not answer,
    exits 2.
    """
    from bitgrid.host import open_target, run_vectors
    bs = load_bitstream(bitstream)
    check_engine_options(engine, evaluators, bs.width)
    if engine != "direct" and target_spec != "sim":
        raise BadInput("--engine chooses the grid of the sim target (a board's engine is in "
                       "its FPGA image, an emulator has none): use --target sim")
    case, stream = run_stimulus(bs, vectors, inputs, steps, as_json)
    if ctx.get_parameter_source("timeout") is click.core.ParameterSource.DEFAULT:
        timeout = None          # the target's own: wall-clock 1 s, or simulated time for sim
    explain("link", "no device: {error}")
    explain("simulation", f"the {simulator} simulation failed to build or run: {{error}}")
    engine_args = {"engine": engine, "evaluators": evaluators} if engine != "direct" else {}
    target = open_target(target_spec, width=bs.width, height=bs.height, baudrate=baud,
                         timeout=timeout, simulator=simulator, quiet=not show_progress,
                         **engine_args)
    explain("link", f"the link to {target_spec} failed: {{error}}")
    explain("target", f"{target_spec} refused the program: {{error}}")
    started = time.monotonic()
    with target, StageTimer(f"{target_spec}: loading the program and running {len(stream)} "
                            "subcycles", on=show_progress):
        if case is not None:
            mismatches = run_vectors(target, case, bs.config, steps=len(stream))
        else:
            target.load(bs.config)
            outputs = [target.step(1, edges) for edges in stream]
    elapsed = time.monotonic() - started
    if case is None:
        print_steps(stream, outputs, bs.width, bs.height, as_json)
        return
    # The spec, unless the target names itself more closely ("sim (icarus)").
    label = target_spec if target.name in target_spec else target.name
    click.echo(f"{label}: {len(stream)} subcycles of a {bs.width} x {bs.height} grid "
               f"(load included) in {elapsed * 1e3:.1f} ms")
    sys.exit(verdict(case.name, mismatches, len(stream)))
