"""``bitgrid verilog``: the Verilog of a grid."""

import time

import click

from bitgrid.files import atomic_write
from bitgrid.terms import STORAGES

from .common import check_writable, load_bitstream
from .engine import check_engine_options, engine_options
from .errors import explain
from .params import SizeType
from .progress import StageTimer, progress_options

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
@engine_options
@progress_options
def verilog(size, storage, init_path, output, engine, evaluators, show_progress):
    """Write the Verilog of a WxH grid (top module bitgrid_grid). Example:

    \b
      bitgrid verilog --size 128x128 --engine multiplexed --evaluators 4 -o out/mux.v
    """
    from bitgrid.hdl.verilog import grid_verilog
    width, height = size or (None, None)
    init = load_bitstream(init_path, width, height).config if init_path else None
    if size is None:
        width, height = (init.width, init.height) if init else (8, 8)
    check_engine_options(engine, evaluators, width)
    if output != "-":
        check_writable(output)
    explain("memory", f"not enough memory to generate the Verilog of a {width} x {height} "
                      "grid ({error}); try a smaller --size, or free some memory")
    started = time.monotonic()
    engine_args = {"engine": engine, "evaluators": evaluators} if engine != "direct" else {}
    # a 256 x 256 direct grid takes about 100 s (2-core machine): say what runs meanwhile
    with StageTimer(f"generating the Verilog of the {width} x {height} grid (Amaranth, then "
                    "Yosys)", on=show_progress):
        text = grid_verilog(width, height, storage=storage, init=init, **engine_args)
    if output == "-":
        click.echo(text, nl=False)
    else:
        atomic_write(output, text)      # whole or not at all (a full disk leaves no half file)
    if output != "-":
        kind = f"{storage} storage" if engine == "direct" else "multiplexed engine"
        click.echo(f"wrote {output}: {width} x {height} grid, {kind}, "
                   f"{len(text)} bytes in {time.monotonic() - started:.1f} s", err=True)
