"""``bitgrid isolate``: prove that regions of a BitGrid program are walled off from each other
(:mod:`bitgrid.isolate`), optionally building the walls first."""

import sys

import click

from .common import check_writable, load_bitstream
from .errors import EXIT_MISMATCH, EXIT_OK, BadInput

__all__ = ["isolate"]


@click.command()
@click.argument("bitstream", metavar="PROGRAM", type=click.Path(dir_okay=False))
@click.option("--region", "regions", multiple=True, required=True, metavar="X0,Y0,X1,Y1",
              help="A region of cells, corners inclusive, either corner first (SPEC section "
                   "10); repeat for more. "
                   "With one region, the rest of the grid is the other.")
@click.option("--port", "ports", multiple=True, metavar="PORT",
              help="A node allowed to carry a signal across: X,Y:D (output D of cell X,Y, "
                   "e.g. 4,3:E), in:W3 / out:E2 (an edge input or output lane; also W_in[3], "
                   "E_out[2]) or W3 (both lanes). Repeatable.")
@click.option("--wall", is_flag=True,
              help="First build a wall of all-zero cells around every region (cell ports on "
                   "a ring become pass cells straight across), write it to -o, then prove it.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), metavar="OUT.bgbs",
              help="With --wall: where to write the walled program.")
def isolate(bitstream, regions, ports, wall, output):
    """Prove from the LUTs of PROGRAM (a .bgbs BitGrid program) that no cell output of one
    region, and no edge output next to it, depends on another region's cells or on the edge
    lanes entering it, except through the declared ports. Only real LUT dependencies count
    (an input a LUT ignores is no path), never a cell's position.

    Exit status: 0 isolated; 1 a leak (each leaking path printed cell by cell, e.g.
    W_in[3] -> (0,3).E -> (1,3).E); 2 bad input. Examples, with a program on a 16 x 8 grid:

    \b
      bitgrid isolate prog.bgbs --region 0,0,6,7
      bitgrid isolate prog.bgbs --region 0,0,6,7 --region 9,0,15,7 --port 7,3:E --port 8,3:E
      bitgrid isolate prog.bgbs --region 0,0,6,7 --wall --port 7,3:E -o walled.bgbs
    """
    from bitgrid import bitstream as _bitstream
    from bitgrid import isolate as iso
    bs = load_bitstream(bitstream)
    config = bs.config
    if wall and not output:
        raise BadInput("--wall writes the walled program: give -o OUT.bgbs")
    if output and not wall:
        raise BadInput("-o is for --wall (the walled program); without --wall nothing is "
                       "written")
    try:
        parsed = [iso.parse_region(text) for text in regions]
        nodes = [node for text in ports for node in iso.parse_port(text, bs.width, bs.height)]
        if wall:
            check_writable(output)
            for region in parsed:
                ring = set(iso.wall_ring(iso.check_region(region, bs.width, bs.height), bs.width,
                                         bs.height))
                own = [n for n in nodes if getattr(n, "x", None) is not None
                       and (n.x, n.y) in ring]
                config = iso.build_wall(config, region, own)
        leaks = iso.check_isolation(config, parsed, nodes)
    except iso.IsolationError as error:
        raise BadInput(str(error)) from None
    if wall:
        _bitstream.save(output, config, bs.order)
        click.echo(f"wrote {output}: {len(parsed)} region{'s' * (len(parsed) != 1)} walled "
                   "with all-zero cells")
    names = ", ".join(f"region {i + 1} ({r})" for i, r in enumerate(parsed))
    if len(parsed) == 1:
        names += " and the rest of the grid"
    if leaks:
        for leak in leaks:
            click.echo("LEAK: " + iso.format_leak(leak, parsed))
        click.echo(f"NOT ISOLATED: {len(leaks)} leaking pair{'s' * (len(leaks) != 1)} "
                   f"between {names}")
        sys.exit(EXIT_MISMATCH)
    click.echo(f"ISOLATED: {names}, through {len(nodes)} port node"
               f"{'s' * (len(nodes) != 1)}")
    sys.exit(EXIT_OK)
