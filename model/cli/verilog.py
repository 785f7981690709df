"""``bitgrid verilog``: the Verilog of a grid."""

import time

import click

from bitgrid.files import atomic_write
from bitgrid.terms import STORAGES

from .common import check_writable, load_bitstream
from .errors import explain
from .params import SizeType

__all__ = ["verilog"]


@click.command()
@click.option("--size", "size", type=SizeType(),
              help="Grid size in cells, WxH (both even, at least 2). Default: the size of the "
                   "--init bitstream, else 8x8.")
@click.option("--storage", type=click.Choice(STORAGES), default="ff", show_default=True,
              help="Configuration storage: flip-flops, or a 16 x 4 LUT memory per cell.")
@click.option("--init", "init_path", type=click.Path(dir_okay=False),
              help="BGBS bitstream to build in as the power-up configuration.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="Output file ('-' for standard output).")
def verilog(size, storage, init_path, output):
    """Write the Verilog of a WxH grid (top module bitgrid_grid)."""
    from bitgrid.hdl.verilog import grid_verilog
    width, height = size or (None, None)
    init = load_bitstream(init_path, width, height).config if init_path else None
    if size is None:
        width, height = (init.width, init.height) if init else (8, 8)
    if output != "-":
        check_writable(output)
    explain("memory", f"not enough memory to generate the Verilog of a {width} x {height} "
                      "grid ({error}); try a smaller --size, or free some memory")
    started = time.monotonic()
    text = grid_verilog(width, height, storage=storage, init=init)
    if output == "-":
        click.echo(text, nl=False)
    else:
        atomic_write(output, text)      # whole or not at all (a full disk leaves no half file)
    if output != "-":
        click.echo(f"wrote {output}: {width} x {height} grid, {storage} storage, "
                   f"{len(text)} bytes in {time.monotonic() - started:.1f} s", err=True)
