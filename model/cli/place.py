"""``bitgrid place``: relocate a BitGrid program around the bad cells of a defect map
(:mod:`bitgrid.relocate`)."""

import os
import pathlib

import click

from .common import check_writable, load_bitstream, load_portmap
from .errors import BadInput
from .progress import Stages, progress_options

__all__ = ["place"]


def _ports_beside(path):
    root, ext = os.path.splitext(os.fspath(path))
    return (root if ext.lower() == ".bgbs" else os.fspath(path)) + ".ports.json"


def _load_program(path, ports_path):
    """``(config, portmap or None, order)`` of a .bgbs program or .bga assembly text."""
    from bitgrid.bitstream import ScanOrder
    portmap, order = None, ScanOrder.ROW_MAJOR
    if os.fspath(path).lower().endswith(".bga"):
        from bitgrid import asm
        assembly = asm.assemble_program(pathlib.Path(path))
        config, portmap, order = assembly.config, assembly.portmap, assembly.order
    else:
        bs = load_bitstream(path)
        config, order = bs.config, bs.order
    if ports_path:
        portmap = load_portmap(ports_path, config, path)
    return config, portmap, order


@click.command()
@click.argument("program", metavar="PROGRAM", type=click.Path(dir_okay=False))
@click.option("--defects", "defects_path", required=True, type=click.Path(dir_okay=False),
              metavar="MAP.json", help="The grid's defect map (bitgrid-defects-v1, written by "
                                       "bitgrid bist): every listed cell is unusable.")
@click.option("--ports", "ports_path", type=click.Path(dir_okay=False), metavar="P.json",
              help="The program's port map (bitgrid-ports-v1): its output ports are the "
                   "outputs to keep, and moving the whole program is allowed (the lanes move "
                   "with it). A .bga program brings its own.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              metavar="OUT.bgbs", help="Where to write the relocated program.")
@click.option("--ports-out", type=click.Path(dir_okay=False), metavar="OUT.ports.json",
              help="Where to write the (moved) port map; default beside OUT as "
                   "OUT.ports.json, when there is a port map.")
@click.option("--strategy", "strategies", multiple=True,
              type=click.Choice(["unchanged", "detour", "move", "compile"]),
              help="Only these strategies (repeatable; default all, in the order unchanged, "
                   "detour, move, compile).")
@progress_options
def place(program, defects_path, ports_path, output, ports_out, strategies, show_progress):
    """Relocate PROGRAM (a .bgbs BitGrid program, or .bga assembly text) so that it uses no
    bad cell of the defect map, keeping its edge-to-edge behaviour: exactly (every path from an
    edge input to an edge output keeps its length and parity, so every used output has the
    same value at every subcycle whatever the bad cells do), or re-timed and said so.

    Strategies, in order: unchanged (no bad cell holds anything a used output depends on);
    detour (wires through bad cells re-routed along free paths of the same length); move (with
    a port map: the program moved by an offset that keeps every cell's parity and its lanes on
    their sides); compile (with a port map: its netlist, loops as flip-flops, placed anew by the
    compiler back end, every port on its lane, same outputs per design cycle, latency and
    period re-timed and printed). A map that leaves no way through is refused with the reason
    of each strategy (exit 2). Example:

    \b
      bitgrid place out/meander.bgbs --ports out/meander.ports.json \
          --defects out/grid.defects.json -o out/meander-placed.bgbs
      bitgrid place prog.bga --defects grid.defects.json -o placed.bgbs
    """
    from bitgrid import bitstream as _bitstream
    from bitgrid import defects as _defects
    from bitgrid import ports as _ports
    from bitgrid import relocate as rel
    config, portmap, order = _load_program(program, ports_path)
    defects = _defects.load(defects_path)
    try:
        defects.check_grid(config.width, config.height)
    except _defects.DefectMapError as error:
        raise BadInput(f"{defects_path}: {error}") from None
    check_writable(output)
    if portmap is not None:
        ports_out = ports_out or _ports_beside(output)
        check_writable(ports_out)
    elif ports_out:
        raise BadInput("--ports-out needs a port map: give --ports (or a .bga program that "
                       "declares ports)")
    from .compile import STAGES
    try:
        with Stages(show_progress, names=STAGES) as progress:
            result = rel.relocate(config, defects, portmap=portmap,
                                  strategies=tuple(strategies) or rel.STRATEGIES,
                                  progress=progress)
    except rel.RelocationError as error:
        raise BadInput(f"cannot place {program}: {error}") from None
    _bitstream.save(output, result.config, order)
    if portmap is not None:
        _ports.save(ports_out, result.portmap, result.config)
    used = rel.bad_cells_in_use(config, defects, portmap)
    click.echo(f"{result.strategy}: {len(defects)} defect{'s' * (len(defects) != 1)}, "
               f"{len(used)} bad cell{'s' * (len(used) != 1)} in use")
    for line in result.changes:
        click.echo(f"  {line}")
    if result.strategy == "compile":
        click.echo(f"timing: re-timed, latency {portmap.latency} -> {result.portmap.latency} "
                   f"({result.latency_change:+d} subcycles), period {portmap.period} -> "
                   f"{result.portmap.period}; the same output row for every input row")
    else:
        click.echo("timing: every path keeps its length and parity (latency +0 subcycles)")
    click.echo(f"wrote {output}" + (f" and {ports_out}" if portmap is not None else ""))
