"""``bitgrid bitstream``: inspect, convert, slice and join BGBS bitstreams (SPEC sections 5
and 8)."""

import click

from bitgrid.bitstream import Bitstream, ScanOrder
from bitgrid.chipfiles import bitstream_stem, place_join, slice_folder, stem_chip_files
from bitgrid.files import atomic_write
from bitgrid.mesh import MeshError

from .common import check_writable, load_bitstream
from .errors import BadInput
from .params import MeshType, SizeType

__all__ = ["bitstream"]

_ORDERS = click.Choice([order.label for order in ScanOrder])


@click.group()
def bitstream():
    """Inspect and convert BitGrid programs (BGBS files, SPEC section 5)."""


@bitstream.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--size", type=SizeType(), help="Also check that it is for a WxH grid.")
@click.option("--cells", "view", type=click.Choice(["table", "word"]),
              help="List every configured cell in the table view [N, E, S, W] or the 64-bit "
                   "word view.")
@click.option("--all", "show_all", is_flag=True, help="With --cells, list unconfigured cells "
                                                      "too.")
def inspect(file, size, view, show_all):
    """Check FILE and print its header (exit 2 with the reason if it is bad)."""
    width, height = size if size else (None, None)
    bs = load_bitstream(file, width, height)
    luts = bs.config.luts
    configured = int((luts != 0).any(axis=2).sum())
    click.echo(f"file:          {file}")
    click.echo("format:        BGBS version 1, header 24 bytes, flags 0")
    click.echo(f"grid:          {bs.width} x {bs.height} cells")
    click.echo(f"order:         {int(bs.order)} ({bs.order.label})")
    click.echo(f"payload:       {bs.width * bs.height * 64} bits "
               f"({bs.width * bs.height * 8} bytes)")
    click.echo(f"payload CRC32: 0x{bs.crc32:08x} (ok)")
    click.echo(f"frame CRC32:   0x{bs.config.frames_crc():08x} (configuration port load)")
    click.echo(f"configured:    {configured} of {bs.width * bs.height} cells")
    if view:
        click.echo(f"{'x':>5} {'y':>5}  " + ("LUT N   LUT E   LUT S   LUT W" if view == "table"
                                             else "word"))
        for y in range(bs.height):
            for x in range(bs.width):
                tables = bs.config[x, y]
                if not show_all and not any(tables):
                    continue
                if view == "table":
                    body = "  ".join(f"0x{t:04x}" for t in tables)
                else:
                    body = f"0x{bs.config.word(x, y):016x}"
                click.echo(f"{x:>5} {y:>5}  {body}")


@bitstream.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.argument("destination", type=click.Path(dir_okay=False))
@click.option("--order", type=_ORDERS, default="row-major", show_default=True,
              help="Scan order of the output.")
def convert(source, destination, order):
    """Rewrite SOURCE in another scan order as DESTINATION (same configuration)."""
    bs = load_bitstream(source)
    check_writable(destination)
    out = Bitstream(bs.config, ScanOrder.parse(order))
    atomic_write(destination, out.to_bytes())
    click.echo(f"wrote {destination}: {bs.width} x {bs.height}, {out.order.label} "
               f"(was {bs.order.label}), payload CRC32 0x{out.crc32:08x}")


@bitstream.command("slice")
@click.argument("source", metavar="BITSTREAM", type=click.Path(dir_okay=False))
@click.option("--mesh", type=MeshType(), required=True, metavar="COLSxROWS",
              help="The mesh: chips across x chips down, e.g. 2x2. Each chip's tile is the "
                   "grid divided by it, and must have an even width and height.")
@click.option("-o", "--output", "directory", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Folder for the chip files (made if missing).")
def slice_command(source, mesh, directory):
    """Cut BITSTREAM into one BGBS per chip of a mesh (SPEC section 8).

    Chip (col, row) gets the tile whose north-west cell is (col * tile width, row * tile
    height), in a file named <stem>.c<col>r<row>.bgbs (column first; c0r0 is the north-west
    chip), in the scan order of BITSTREAM. `bitgrid bitstream join` is the inverse.

    \b
    Example: bitgrid bitstream slice adder.bgbs --mesh 2x1 -o chips
             -> chips/adder.c0r0.bgbs (west)  chips/adder.c1r0.bgbs (east)
    """
    from bitgrid.mesh import write_slices
    bs = load_bitstream(source)
    tile_w, tile_h = slice_folder(source, bs, mesh, directory)
    paths = write_slices(bs, mesh, directory, stem=bitstream_stem(source))
    click.echo(f"sliced {source} ({bs.width} x {bs.height}, {bs.order.label}) into a {mesh} "
               f"mesh of {tile_w} x {tile_h} tiles:")
    for (col, row), path in paths.items():
        click.echo(f"  chip ({col}, {row}): {path}")


@bitstream.command("join")
@click.argument("files", nargs=-1, metavar="FILE...", type=click.Path(dir_okay=False))
@click.option("--mesh", type=MeshType(), required=True, metavar="COLSxROWS",
              help="The mesh: chips across x chips down, e.g. 2x2.")
@click.option("--from", "stem", metavar="STEM",
              help="Take the chip files STEM.c<col>r<row>.bgbs (STEM may include a folder) "
                   "instead of listing them.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The joined logical bitstream.")
@click.option("--order", type=_ORDERS,
              help="Scan order of the output (default: the chip files' own, which must "
                   "agree).")
def join_command(files, mesh, stem, output, order):
    """Join one BGBS per chip of a mesh into the logical bitstream (the inverse of
    `bitgrid bitstream slice`).

    Each FILE's chip comes from its name, <stem>.c<col>r<row>.bgbs; every chip of the mesh
    needs exactly one file, and all tiles must have the same size.

    \b
    Examples: bitgrid bitstream join chips/adder.c0r0.bgbs chips/adder.c1r0.bgbs \\
                  --mesh 2x1 -o adder.bgbs
              bitgrid bitstream join --from chips/adder --mesh 2x1 -o adder.bgbs
    """
    from bitgrid.mesh import join_bitstreams
    if files and stem:
        raise BadInput("give either the chip files or --from STEM, not both")
    if not files and not stem:
        raise BadInput(f"nothing to join: give the chip files (<stem>.c<col>r<row>.bgbs) or "
                       f"--from STEM for the {mesh} mesh")
    placed = place_join(stem_chip_files(stem, mesh) if stem else files, mesh, output)
    tiles = {chip: load_bitstream(path) for chip, path in placed.items()}
    check_writable(output)
    try:
        joined = join_bitstreams(tiles, mesh, order=order)
    except MeshError as error:
        if "choose the order" not in str(error):
            raise
        raise BadInput(f"{error} with --order") from None
    atomic_write(output, joined.to_bytes())
    tile_w, tile_h = tiles[(0, 0)].width, tiles[(0, 0)].height
    click.echo(f"joined {len(tiles)} chip file{'s' if len(tiles) != 1 else ''} ({mesh} mesh of "
               f"{tile_w} x {tile_h} tiles) into {output}: {joined.width} x {joined.height}, "
               f"{joined.order.label}, payload CRC32 0x{joined.crc32:08x}")
