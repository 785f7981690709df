"""``bitgrid asic``: synthesise a grid to an open PDK's standard cells, with area and static
timing (issue 14; docs/asic.md)."""

import sys

import click

from bitgrid.asic.flow import ASIC_STORAGES
from bitgrid.asic.pdk import CORNERS, PDKS

from .errors import BadInput
from .params import SizeType

__all__ = ["asic"]


@click.command()
@click.option("--pdk", type=click.Choice(PDKS), required=True,
              help="Standard-cell library: sky130 (sky130_fd_sc_hd), gf180 "
                   "(gf180mcu_fd_sc_mcu7t5v0, 5 V) or osu018 (Debian qflow-tech-osu018).")
@click.option("--pdk-root", type=click.Path(file_okay=False),
              help="open_pdks root (ciel/volare) holding sky130A/ and gf180mcuD/. Default: "
                   "$PDK_ROOT, else the shared folder ../shared/pdk.")
@click.option("--size", "size", type=SizeType(), default="2x2", show_default=True,
              help="Grid size in cells, WxH (both even, at least 2).")
@click.option("--storage", type=click.Choice(ASIC_STORAGES), default="ff", show_default=True,
              help="Configuration store: flip-flops, or latches on shared word lines.")
@click.option("--corner", type=click.Choice(CORNERS), default="tt", show_default=True,
              help="Process corner of the liberty data (typical only).")
@click.option("--no-timing", is_flag=True, help="Skip static timing (OpenSTA).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON, not a table.")
@click.option("--progress/--no-progress", default=None,
              help="Print each step on stderr (default: when stderr is a terminal).")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Output folder: grid.v, synth/ (netlists, logs), report.json, report.txt.")
def asic(pdk, pdk_root, size, storage, corner, no_timing, as_json, progress, out_dir):
    """Synthesise a WxH grid to standard cells and report area and timing.

    Runs YoWASP Yosys (synth, dfflibmap, abc to the PDK's liberty) on the grid and on one
    cell, splits the cell's area into configuration store, LUT read multiplexers, output
    registers and glue, and times the grid with OpenSTA at the typical corner (ideal clock;
    the assumptions are printed). Example:

        bitgrid asic --pdk sky130 --size 8x8 --storage latch -o out/asic-sky130-latch
    """
    from bitgrid.asic.flow import run_asic
    from bitgrid.asic.report import format_table
    from bitgrid.asic.sta import StaError
    from bitgrid.asic.synth import SynthesisError
    width, height = size
    if progress is None:
        progress = sys.stderr.isatty()
    try:
        report = run_asic(pdk=pdk, pdk_root=pdk_root, width=width, height=height,
                          storage=storage, corner=corner, out_dir=out_dir, progress=progress,
                          timing=not no_timing)
    except (SynthesisError, StaError) as error:
        raise BadInput(str(error)) from None
    if as_json:
        import json
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(format_table(report), nl=False)
