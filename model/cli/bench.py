"""``bitgrid bench`` and ``python -m bitgrid.bench``: the benchmark suite (:mod:`bitgrid.bench`)
as one click group. Without a command it runs the whole suite (``make bench``); each command
runs one part."""

import click

from bitgrid.bench import (PARTS, document, format_part, format_suite, quick_options,
                           run_part, run_suite, suite_options, write_json)
from bitgrid.bench.mesh import STEADY_SKIP
from bitgrid.bench.mesh import quick_options as mesh_quick_options
from bitgrid.bench.sim import SIMULATORS as BENCH_SIMULATORS
from bitgrid.fastemu import MAX_STREAMS
from bitgrid.stimulus import MAX_STEPS
from bitgrid.terms import STORAGES

from .common import check_writable
from .errors import EXIT_MISMATCH, EXIT_OK, Group
from .params import SideType

__all__ = ["bench"]


class _BenchGroup(Group):
    """Also takes ``--parts A B ...`` (several parts after one ``--parts``, as ``make bench``
    always did) for ``--parts A --parts B``."""

    def parse_args(self, ctx, args):
        expanded, taking = [], False
        for arg in args:
            if taking and arg in PARTS and expanded[-1] != "--parts":
                expanded.append("--parts")
            taking = (taking and arg in PARTS) or arg == "--parts"
            expanded.append(arg)
        return super().parse_args(ctx, expanded)


@click.group(cls=_BenchGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--quick", is_flag=True, help="A smaller set of sizes and shorter runs (measured "
                                            "1 to 9 minutes on 2 cores, idle to loaded; the "
                                            "full suite takes several times longer).")
@click.option("--parts", multiple=True, type=click.Choice(PARTS),
              help="Parts to run (repeatable, or several after one --parts; default: all).")
@click.option("--json", "json_path", metavar="FILE", default="out/bench/bench.json",
              show_default=True, help="JSON output ('-': standard output).")
@click.option("--plot", "plot_path", metavar="FILE", default="out/bench/scaling.png",
              show_default=True, help="PNG of the scaling curves ('': none; needs matplotlib).")
@click.option("--no-progress", is_flag=True, help="No progress on standard error.")
@click.option("--build-missing", is_flag=True,
              help="Boards part: build (slowly) each board that has no build report under "
                   "build/ instead of listing it as not built.")
@click.pass_context
def bench(ctx, quick, parts, json_path, plot_path, no_progress, build_missing):
    """Measure performance: the whole suite, or one part with a COMMAND.

    Without a COMMAND (`make bench`, `python -m bitgrid.bench`): every part, their tables on
    standard output, the JSON document and the PNG of the scaling curves written; exit 1 if a
    part failed (it is kept in the JSON as an error; the other parts still run). A COMMAND
    runs one part (its options after it).

    Units: a cell update is one cell evaluated, and a subcycle evaluates half of the grid, so
    cell-updates/s = W * H / 2 * subcycles/s; stream-cell-updates/s sums the streams of the
    lane-parallel mode; times are wall seconds (s); sizes in bytes. Each part also fits
    cost = a * cells**b and prints the growth exponent b. Progress goes to standard error.
    """
    if ctx.invoked_subcommand is not None:
        return
    from bitgrid.bench.report import plot
    for path in (json_path, plot_path):
        if path and path != "-":
            check_writable(path, make_folder=True)     # before minutes of measuring
    options = quick_options() if quick else suite_options()
    if build_missing:
        options["boards"] = {"build_missing": True}
    doc = run_suite(parts or PARTS, quick=quick, options=options, progress=not no_progress)
    if json_path != "-":
        click.echo(format_suite(doc))
    write_json(doc, json_path)
    written = [json_path] if json_path != "-" else []
    if plot_path and plot(doc, plot_path):
        written.append(plot_path)
    if written:
        click.echo(f"wrote {' and '.join(written)}", err=True)
    failed = [name for name, part in doc["parts"].items() if "error" in part]
    ctx.exit(EXIT_MISMATCH if failed else EXIT_OK)


def _part_options(*, sizes=True):
    """The options of every part's command: ``--json``, ``--size`` (unless ``sizes`` is
    false) and ``--quiet``."""
    def decorate(function):
        function = click.option("--json", "json_path", type=click.Path(dir_okay=False,
                                                                       allow_dash=True),
                                help="Also write the figures, each with its unit, and the "
                                     "machine as JSON to this file ('-': standard output, "
                                     "instead of the table).")(function)
        if sizes:
            function = click.option("--size", "sizes", type=SideType(), multiple=True,
                                    help="Square grid side in cells, N for an N x N grid "
                                         "(repeatable; default: the part's sizes in `make "
                                         "bench`).")(function)
        return click.option("--quiet", "-q", is_flag=True,
                            help="No progress on standard error.")(function)
    return decorate


def _run(name, sizes, json_path, quiet, **options):
    """Run one part and print its table (and/or write its JSON)."""
    if json_path and json_path != "-":
        check_writable(json_path, make_folder=True)    # before the measuring
    part = run_part(name, sizes or None, progress=not quiet, **options)
    if json_path != "-":
        click.echo(format_part(part))
    if json_path:
        write_json(document({name: part}), json_path)
        if json_path != "-":
            click.echo(f"wrote {json_path}", err=True)


@bench.command("emulator")
@_part_options()
@click.option("--streams", type=click.IntRange(0, MAX_STREAMS), default=MAX_STREAMS,
              show_default=True,
              help="Streams of the lane-parallel figures (stream-cell-updates/s; 0: skip).")
@click.option("--threads", type=click.IntRange(min=1),
              help="Threads of the fast emulator and the kernel (default: their own choice).")
@click.option("--steps", type=click.IntRange(1, 1 << 30),
              help="Subcycles per timed round, at most 2**30 (default: about 4M cell updates "
                   "per size).")
def bench_emulator(sizes, json_path, quiet, streams, threads, steps):
    """Emulator throughput in cell-updates/s: the reference emulator, the bit-parallel numpy
    code and the compiled kernel (batched run) side by side on random configurations, against
    the kernel's goals, plus the numpy code's lane-parallel mode in stream-cell-updates/s
    (default sizes 16 to 4096; the kernel's steps are 64 times --steps).

    Example: bitgrid bench emulator --size 256 --size 1024 --json emu.json"""
    _run("emulator", sizes, json_path, quiet, streams=streams, threads=threads, steps=steps)


@bench.command("verilog")
@_part_options()
@click.option("--storage", type=click.Choice(STORAGES), default="ff", show_default=True,
              help="Configuration storage of the grid.")
def bench_verilog(sizes, json_path, quiet, storage):
    """Verilog generation (grid_verilog): time in s and size in bytes by grid size (default
    sizes 16 to 256; 256 x 256 takes minutes)."""
    _run("verilog", sizes, json_path, quiet, storage=storage)


@bench.command("sim")
@_part_options()
@click.option("--simulator", "simulators", multiple=True,
              type=click.Choice(BENCH_SIMULATORS),
              help="Simulators to measure (repeatable; default all three; a missing one is an "
                   "error when named, skipped otherwise).")
@click.option("--steps", type=click.IntRange(1, MAX_STEPS), default=256, show_default=True,
              help=f"Random steps per run, back to back (one subcycle per clock cycle; at most "
                   f"{MAX_STEPS}).")
@click.option("--storage", type=click.Choice(STORAGES), default="ff", show_default=True,
              help="Configuration storage of the grid.")
@click.option("--warm", is_flag=True,
              help="Use the normal simulation cache (builds may come from it) instead of a "
                   "fresh temporary one (cold builds).")
def bench_sim(sizes, json_path, quiet, simulators, steps, storage, warm):
    """RTL simulation: build time in s (cold: a fresh temporary BITGRID_CACHE) and simulated
    subcycles/s on Icarus and Verilator (cocotb) and in Amaranth's simulator, with a random
    configuration (default sizes 8, 16, 32; Amaranth 8, 16)."""
    _run("sim", sizes, json_path, quiet, simulators=simulators or None, steps=steps,
         storage=storage, cold=not warm, missing="raise" if simulators else "skip")


@bench.command("mesh")
@_part_options()
@click.option("--quick", is_flag=True, help="Two points, fewer steps (a fraction of the "
                                            "full part's time).")
@click.option("--steps", type=click.IntRange(STEADY_SKIP + 1, MAX_STEPS),
              help=f"Steps per run, at most {MAX_STEPS} (default: 64, or 32 with --quick).")
def bench_mesh(sizes, json_path, quiet, quick, steps):
    """Link mesh: cycles per subcycle of a simulated 2 x 1 mesh (Icarus) against lanes, SDR/DDR
    and line delay, next to the bound of serialisation and latency, and the payload share of
    the line bits (default tile sides 4 and 2)."""
    options = mesh_quick_options() if quick else {}
    sizes = sizes or options.pop("sizes", None)
    if steps is not None:
        options["steps"] = steps
    _run("mesh", sizes, json_path, quiet, **options)


@bench.command("compile")
@_part_options(sizes=False)
@click.option("--quick", is_flag=True, help="A few small test designs and short series.")
@click.option("--seed", type=int, default=0, show_default=True, help="Placement seed.")
@click.option("--outside", type=click.Path(file_okay=False),
              help="Also compile every .v file of this folder (outside designs, such as a "
                   "checkout of the EPFL suite's random_control folder): the file's only "
                   "module, or the one named as the file.")
@click.option("--series", "series", multiple=True, metavar="NAME",
              help="Only this series of the suite (repeatable), e.g. sequential, state, "
                   "arithmetic, multiplier, adder, 'test designs'.")
def bench_compile(json_path, quiet, quick, seed, outside, series):
    """The compiler: for each test design and for growing multipliers (4 to 16 bits) and
    adders (8 to 64 bits), Yosys' LUT count, the cells used (logic, routing, delay), the
    bounding box, period and latency in subcycles, and compile time per stage (s), with the
    growth exponent of compile time against cells used.

    Example: bitgrid bench compile --series sequential"""
    from bitgrid.bench.compile import QUICK_DESIGNS, SUITE_DESIGNS, outside_plan, series_plan
    designs = QUICK_DESIGNS if quick else SUITE_DESIGNS
    try:
        if outside is not None:
            outside_plan(outside)
        if series:
            if quick:
                raise ValueError("--series picks from the full suite; leave out --quick")
            designs = series_plan(series)
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    _run("compile", None, json_path, quiet, designs=designs, seed=seed, outside=outside)


@bench.command("mpi")
@_part_options()
@click.option("--ranks", "ranks", type=click.IntRange(1, 64), multiple=True,
              help="MPI ranks to measure (repeatable; default 1, 2 and 4).")
@click.option("--halo", "halos", type=click.IntRange(min=1), multiple=True,
              help="Subcycles between exchanges (repeatable; default 1, the seam exchange, "
                   "8 and 32).")
def bench_mpi(sizes, json_path, quiet, ranks, halos):
    """Emulation across MPI ranks (bitgrid.mpi, docs/mpi.md): strong scaling of one N x N grid
    and weak scaling of one N x N tile per rank (default N = 512) in cell-updates/s, with the
    bytes and messages each rank sends per exchange and the cell updates between two
    exchanges. Example: bitgrid bench mpi --size 256 --ranks 1 --ranks 2 --halo 8"""
    from bitgrid.bench.mpi import HALOS, RANKS
    _run("mpi", sizes, json_path, quiet, ranks=tuple(ranks) or RANKS,
         halos=tuple(halos) or HALOS)


@bench.command("serve")
@_part_options()
@click.option("--quick", is_flag=True, help="One size, fewer round trips and subcycles.")
def bench_serve(sizes, json_path, quiet, quick):
    """bitgrid serve over loopback TCP (docs/serve.md): STEP 1 + GET_OUTPUTS round trips per
    second on the emu and fast targets, and subcycles per second of a 2 x 2 mesh of linked
    servers (separate processes, duplex links) for each --link-forward policy. --size is the
    grid of the round trips and the tile of the mesh (default 8 and 32).

    Example: bitgrid bench serve --size 16"""
    from bitgrid.bench.serve import quick_options
    options = quick_options() if quick else {}
    if sizes:
        options.pop("sizes", None)
    _run("serve", sizes or options.pop("sizes", None), json_path, quiet, **options)


@bench.command("boards")
@_part_options(sizes=False)
@click.option("--root", "roots", multiple=True, metavar="DIR",
              help="Folder searched for build reports (report.json; repeatable; default: "
                   "build).")
@click.option("--build-missing", is_flag=True,
              help="Build (slowly) each board that has no build report.")
def bench_boards(json_path, quiet, roots, build_missing):
    """FPGA boards: per board, the largest grid placed and routed, its resources, Fmax and cell
    updates per second on the board, read from the report.json of earlier `bitgrid build`
    runs (nothing is rebuilt unless --build-missing)."""
    from bitgrid.bench.boards import ROOTS
    _run("boards", None, json_path, quiet, roots=roots or ROOTS, build_missing=build_missing)
