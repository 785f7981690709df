"""``bitgrid bist``: the built-in self-test of a grid (:mod:`bitgrid.bist`), on the emulator or
the RTL grid, with injected faults; writes the ``bitgrid-defects-v1`` map."""

import click

from bitgrid.terms import SIMULATORS

from .common import check_writable
from .errors import EXIT_MISMATCH, EXIT_OK, BadInput, explain
from .params import SizeType
from .progress import Bar, Stages, progress_options

__all__ = ["bist"]

#: The self-test's stages as the progress display names them.
_STAGES = {"plan": "planning the tests", "run": "self-test", "diagnose": "diagnosis"}


def _table(head, rows):
    rows = [tuple(str(v) for v in row) for row in rows]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(v.rjust(w) for v, w in zip(row, widths)) + " |"
              for row in rows]
    return "\n".join(lines)


@click.command("bist")
@click.option("--size", type=SizeType(), metavar="WxH",
              help="Grid size in cells, e.g. 8x8 (required unless --table).")
@click.option("--target", type=click.Choice(("emu", "sim")), default="emu", show_default=True,
              help="emu: the reference emulator with the faults injected; sim: the RTL grid "
                   "in cocotb with the faults compiled into the gateware (test only).")
@click.option("--simulator", type=click.Choice(SIMULATORS), default="icarus",
              show_default=True, help="RTL simulator of --target sim.")
@click.option("--inject", "injects", multiple=True, metavar="X,Y:KIND[:SIDE[:ADDR]]",
              help="A hardware fault to inject (repeatable): X,Y:stuck0 or X,Y:stuck1 (every "
                   "output, or :SIDE one of N E S W), X,Y:lut:SIDE:ADDR (bit ADDR, 0..15 or "
                   "inputs in brackets like [ns], of that output's LUT reads inverted), "
                   "X,Y:dead (every output stuck, values from --seed).")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True,
              help="Chooses the stuck values of injected dead cells.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="MAP.json",
              help="Write the defect map (bitgrid-defects-v1) here (required unless --table).")
@click.option("--table", is_flag=True,
              help="Print the self-test's cost for square grids 4x4 .. 64x64 (configurations "
                   "and subcycles) and exit.")
@click.option("--accuracy", type=click.IntRange(1, 1000), metavar="RUNS",
              help="Measure the diagnosis on RUNS random sets of 1, 2, 4 and 8 faults on the "
                   "emulator (--size, default 8x8) and print the table; exit.")
@progress_options
def bist(size, target, simulator, injects, seed, output, table, accuracy, show_progress):
    """Run the built-in self-test of a grid and write its defect map.

    Three test configurations (every cell a copy cell: straight paths, north-east and
    north-west staircases), each run for 16 frames so that every cell sees all 16 of its LUT
    addresses, find stuck outputs, flipped LUT bits and dead cells from the edge outputs
    alone (docs/bist.md). The map lists the cells a placer must avoid.

    \b
    Example:
      bitgrid bist --size 8x8 --inject 3,2:stuck0:E --inject 5,5:lut:N:[ns] -o out/defects.json

    Exit status: 0 the grid is clean (an empty map is written), 1 defects were found (the
    map lists them), 2 bad input or a missing tool.
    """
    from bitgrid import bist as _bist
    if table:
        click.echo(_table(("grid", "configurations", "frames", "hold (subcycles per frame)",
                           "subcycles"), _bist.cost_table()))
        return EXIT_OK
    if accuracy:
        width, height = size or (8, 8)
        with Bar(show_progress, desc="fault counts", unit=" counts") as progress:
            rows = _bist.accuracy_table(width, height, runs=accuracy, progress=progress)
        click.echo(f"{width} x {height} grid, random faults (seeds 0..{accuracy - 1}):")
        click.echo(_table(("faults", "runs", "map exact", "runs missing a visible fault",
                           "of those flagged incomplete", "extra cells per run"), rows))
        return EXIT_OK
    if size is None or output is None:
        raise BadInput("give --size WxH and -o MAP.json (or --table); see 'bitgrid bist --help'")
    from bitgrid import defects as _defects
    from bitgrid.faultmodel import FaultError, FaultSet
    width, height = size
    try:
        faults = FaultSet(width, height, injects, seed=seed)
    except FaultError as error:
        raise BadInput(f"--inject: {error}") from None
    check_writable(output)
    explain("simulation", "the self-test's simulation failed: {error}")
    try:
        with Stages(show_progress, names=_STAGES, units={"run": "sc"}) as progress:
            result = _bist.run(width, height, target=target, faults=faults,
                               simulator=simulator, progress=progress)
    except _bist.BistMemoryError as error:     # refused before any work
        raise BadInput(str(error)) from None
    _defects.save(output, result.defects)
    click.echo(result.summary())
    if result.untestable:
        click.echo("  not testable (they feed only faulty outputs of a defective cell): "
                   + ", ".join(f"({x}, {y}) output {d.letter}" for x, y, d in result.untestable))
    if faults:
        expected = faults.defects()
        same = expected == result.defects
        click.echo(f"injected {len(faults.faults)} fault(s): the map "
                   f"{'matches' if same else 'differs from'} the injected defects"
                   + ("" if same else ": " + "; ".join(str(d) for d in expected)))
    click.echo(f"wrote {output}")
    return EXIT_OK if result.clean else EXIT_MISMATCH
