"""``bitgrid emulate --mpi``: the emulation of :mod:`bitgrid.mpi` across the ranks of
``mpiexec`` (docs/mpi.md).

Every rank runs the same command line. The root rank (0) reads the program and the stimulus and
prints exactly what ``bitgrid emulate`` prints without ``--mpi`` (the edge outputs of each
subcycle, or the verdict of ``--vectors``), plus one line on standard error saying how the grid
was split; the other ranks print nothing and exit with the root's status. Bad input found on
the root exits 2 on every rank with the one error line printed by the root.
"""

import sys
import time

import click

from .common import load_bitstream, print_steps, run_stimulus, verdict
from .errors import EXIT_BAD_INPUT, BadInput
from .params import MeshType

__all__ = ["mpi_options", "check_mpi_options", "emulate_mpi"]


def mpi_options(function):
    """The options ``--mpi``, ``--procs``, ``--halo`` and ``--emulator`` of ``emulate`` (the
    last one's value is the parameter ``engine``)."""
    function = click.option(
        "--emulator", "engine", type=click.Choice(("auto", "kernel", "fast", "reference")),
        default="auto", show_default=True,
        help="With --mpi: the emulator of each tile: the compiled kernel (auto's choice where "
             "numba is installed), the bit-parallel FastEmulator or the reference.")(function)
    function = click.option(
        "--halo", type=click.IntRange(min=1), default=1, show_default=True, metavar="K",
        help="With --mpi: subcycles between exchanges. 1 exchanges the edge lanes of every "
             "tile every subcycle (the seam contract, SPEC section 8); K >= 2 keeps a halo of "
             "K cells (rounded up to even) around each tile and exchanges it every K "
             "subcycles.")(function)
    function = click.option(
        "--procs", type=MeshType(), metavar="COLSxROWS",
        help="With --mpi: tiles across x tiles down, COLS * ROWS = the ranks of mpiexec "
             "(default: the split that cuts the fewest lanes).")(function)
    function = click.option(
        "--mpi", is_flag=True,
        help="Split the grid over the ranks of mpiexec, one tile each (docs/mpi.md), e.g. "
             "mpiexec -n 4 bitgrid emulate adder8.bgbs --vectors adder8.json --mpi")(function)
    return function


def check_mpi_options(mpi, procs, halo, engine, save_path):
    """Bad input (exit 2): the MPI options without ``--mpi``."""
    if not mpi and (procs is not None or halo != 1 or engine != "auto"):
        raise BadInput("--procs, --halo and --emulator split a run over MPI ranks: add --mpi "
                       "(under mpiexec -n N)")


def emulate_mpi(bitstream, vectors, inputs, steps, as_json, save_path, procs, halo, engine):
    """The body of ``bitgrid emulate --mpi`` on every rank (see the module docstring)."""
    try:
        from bitgrid import mpi
        MPI = mpi.import_mpi()
    except ImportError as error:
        raise BadInput(str(error)) from None
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()

    def load():
        if save_path is not None:
            raise BadInput("--save-vectors records a run on the reference emulator; run it "
                           "without --mpi")
        bs = load_bitstream(bitstream)
        case, stream = run_stimulus(bs, vectors, inputs, steps, as_json)
        shape = (mpi.Decomposition.choose(bs.width, bs.height, comm.Get_size())
                 if procs is None else mpi.Decomposition(bs.width, bs.height, procs))
        if len(shape) != comm.Get_size():
            raise BadInput(f"--procs {shape.shape} makes {len(shape)} tiles for "
                           f"{comm.Get_size()} ranks; give COLSxROWS with COLS * ROWS = "
                           f"{comm.Get_size()}, or leave --procs out")
        try:
            mpi.check_halo(shape, halo)
        except ValueError as error:
            raise BadInput(str(error)) from None
        return bs, case, stream

    try:
        bs, case, stream = mpi.on_root(comm, load)
    except ValueError as error:        # a bad size or file on the root: one error line
        raise BadInput(str(error)) from None
    config = bs.config if rank == 0 else None
    started = time.monotonic()
    try:
        result = mpi.run(config, stream if rank == 0 else None, comm=comm, procs=procs,
                         halo=halo, emulator=engine)
    except Exception as error:      # noqa: BLE001 - never leave the other ranks waiting
        if comm.Get_size() == 1:
            raise
        click.echo(f"error: rank {rank}: {type(error).__name__}: {error}", err=True)
        comm.Abort(EXIT_BAD_INPUT)
    elapsed = time.monotonic() - started
    status = 0
    if rank == 0:
        status = _report(bs, case, stream, result, elapsed, as_json)
    status = comm.bcast(status, root=0)
    sys.exit(status)


def _report(bs, case, stream, result, elapsed, as_json):
    """Print on the root what ``emulate`` prints; the exit status."""
    from bitgrid.vectors import compare_step
    outputs = result.edges()
    d = result.decomposition
    sent = sum(s.bytes_sent for s in result.stats)
    ranks = f"{len(d)} rank{'s' if len(d) != 1 else ''}"
    split = (f"mpi: {ranks}, {d.shape} tiles, "
             f"{'seam exchange every subcycle' if result.halo == 1 else f'halo {result.halo}'}"
             f", {result.emulator} emulator per tile; {sent} bytes exchanged")
    click.echo(split, err=True)
    if case is None:
        print_steps(stream, outputs, bs.width, bs.height, as_json)
        return 0
    mismatches = [m for t, o in enumerate(outputs)
                  for m in compare_step(t, case.steps[t][1], o, bs.width, bs.height)]
    click.echo(f"emulator (MPI, {ranks}): {len(stream)} subcycles of a {bs.width} x "
               f"{bs.height} grid in {elapsed * 1e3:.1f} ms")
    return verdict(case.name, mismatches, len(stream))
