"""``bitgrid asic``: synthesise a grid to an open PDK's standard cells, with area and static
timing (issue 14; docs/asic.md)."""


import click

from bitgrid.asic.flow import ASIC_STORAGES
from bitgrid.asic.pdk import CORNERS, PDKS

from .errors import BadInput
from .params import SizeType
from .progress import progress_options

__all__ = ["asic"]


#: Most cells of a grid the ASIC flow takes (synthesis and timing; docs/asic.md's times).
MAX_CELLS = 256
#: Most cells with --place-route (GrayWolf's placement grows fastest).
MAX_PLACE_ROUTE_CELLS = 16


@click.command()
@click.option("--pdk", type=click.Choice(PDKS), default=None,
              help="Standard-cell library: sky130 (sky130_fd_sc_hd), gf180 "
                   "(gf180mcu_fd_sc_mcu7t5v0, 5 V) or osu018 (Debian qflow-tech-osu018). "
                   "Required, except with --tinytapeout (which sizes on sky130).")
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
@progress_options
@click.option("--place-route", is_flag=True,
              help="Also place, route, extract and LVS-check the grid with qflow (GrayWolf, "
                   "qrouter, magic, netgen) and time the routed netlist, in DIR/pnr; osu018 "
                   "only (sky130 and gf180 need OpenROAD, not installable here). A 2x2 tile "
                   "takes about 2.5 minutes.")
@click.option("--tinytapeout", is_flag=True,
              help="Write a Tiny Tapeout project folder into DIR instead (info.yaml, src/ "
                   "with the tt_um_bitgrid_WxH top, test/ with its cocotb test); the tile "
                   "count comes from a sky130 synthesis of its core.")
@click.option("--vectors", "vectors_path", type=click.Path(dir_okay=False),
              help="With --tinytapeout: the bitgrid-vectors-v1 case its test checks through "
                   "the pins (default: the shared conformance case of the size, else a "
                   "random program).")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Output folder: grid.v, synth/ (netlists, logs), report.json, report.txt.")
def asic(pdk, pdk_root, size, storage, corner, no_timing, as_json, show_progress, place_route,
         tinytapeout, vectors_path, out_dir):
    """Synthesise a WxH grid to standard cells and report area and timing.

    Runs YoWASP Yosys (synth, dfflibmap, abc to the PDK's liberty) on the grid and on one
    cell, splits the cell's area into configuration store, LUT read multiplexers, output
    registers and glue, and times the grid with OpenSTA at the typical corner (ideal clock;
    the assumptions are printed). Example:

        bitgrid asic --pdk sky130 --size 8x8 --storage latch -o out/asic-sky130-latch

    Place and route a 2x2 tile on OSU018, and write a Tiny Tapeout project:

        bitgrid asic --pdk osu018 --place-route -o out/asic-osu018

        bitgrid asic --tinytapeout --size 2x2 -o out/tt
    """
    from bitgrid.asic.flow import run_asic
    from bitgrid.asic.report import format_table
    from bitgrid.asic.sta import StaError
    from bitgrid.asic.synth import SynthesisError
    width, height = size
    if not out_dir.strip():
        raise BadInput("-o is empty: give the folder for the netlist and the report")
    if width * height > MAX_CELLS:
        raise BadInput(f"--size {width}x{height}: the ASIC flow takes grids of at most "
                       f"{MAX_CELLS} cells (16x16; synthesis alone takes 2 to 5 minutes for "
                       "8x8 on a 2-core machine and grows with the cells); give a smaller --size")
    if place_route and width * height > MAX_PLACE_ROUTE_CELLS:
        raise BadInput(f"--size {width}x{height}: --place-route takes grids of at most "
                       f"{MAX_PLACE_ROUTE_CELLS} cells (4x4; GrayWolf did not place 8x8 in 40 "
                       "minutes); give a smaller --size")
    progress = show_progress and not as_json      # JSON output: nothing else on the terminal
    if tinytapeout:
        from .asic_layout import tinytapeout_command
        return tinytapeout_command(pdk=pdk, pdk_root=pdk_root, width=width, height=height,
                                   storage=storage, vectors_path=vectors_path,
                                   out_dir=out_dir, progress=progress, as_json=as_json,
                                   place_route=place_route)
    if pdk is None:
        raise BadInput("give the standard-cell library with --pdk sky130, gf180 or osu018")
    if vectors_path is not None:
        raise BadInput("--vectors goes with --tinytapeout (the case its test checks)")
    if place_route:
        from .asic_layout import check_place_route
        check_place_route(pdk)
    try:
        report = run_asic(pdk=pdk, pdk_root=pdk_root, width=width, height=height,
                          storage=storage, corner=corner, out_dir=out_dir, progress=progress,
                          timing=not no_timing)
    except (SynthesisError, StaError) as error:
        raise BadInput(str(error)) from None
    if place_route:
        from .asic_layout import place_route_command
        report = place_route_command(report, width=width, height=height, storage=storage,
                                     pdk=pdk, out_dir=out_dir, progress=progress)
    if as_json:
        import json
        click.echo(json.dumps(report, indent=2))
    else:
        click.echo(format_table(report), nl=False)
