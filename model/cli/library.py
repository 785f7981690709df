"""``bitgrid macro``: list the macros of :mod:`bitgrid.library`, describe one, or write one as
a BitGrid program alone on a grid with its port map (docs/library.md)."""

import click

from .asm import ports_path
from .common import check_writable
from .errors import BadInput

__all__ = ["macro"]


def _parse_params(macro, items):
    """``["bits=8", "carry_in=true"]`` -> ``{"bits": 8, "carry_in": True}`` by the macro's
    parameter kinds."""
    kinds = {p.name: p.kind for p in macro.params}
    params = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise BadInput(f"parameters are NAME=VALUE (e.g. bits=8), not {item!r}")
        if name not in kinds:
            raise BadInput(f"macro {macro.name} has no parameter {name!r}; its parameters are "
                           f"{', '.join(kinds) or '(none)'}")
        if name in params:
            raise BadInput(f"parameter {name} is given twice; give it once")
        kind = kinds[name]
        if kind == "int":
            try:
                value = int(text, 0)
            except ValueError:
                raise BadInput(f"{name} is an integer, not {text!r}") from None
        elif kind == "bool":
            if text.lower() not in ("true", "false", "1", "0"):
                raise BadInput(f"{name} is true or false, not {text!r}")
            value = text.lower() in ("true", "1")
        else:
            value = text.upper() if len(text) == 1 else text
        params[name] = value
    return params


@click.command()
@click.argument("name", required=False)
@click.argument("params", nargs=-1, metavar="[PARAM=VALUE]...")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the block alone on a grid as this BGBS program, and its port map "
                   "beside it as OUT.ports.json.")
def macro(name, params, output):
    """List the library's macros, describe one, or write one as a program.

    Without NAME: every macro with one line. With NAME: its parameters, ports (lanes and skews
    of the box), cells and latency. With -o: the block alone on a grid (its ports on the grid
    edges) as a BitGrid program plus port map, ready for `bitgrid eval`.

    \b
    Examples:
      bitgrid macro
      bitgrid macro multiplier bits=4
      bitgrid macro multiplier bits=4 -o out/mul4.bgbs
      -> out/mul4.bgbs and out/mul4.ports.json
    """
    from bitgrid import bitstream, ports
    from bitgrid.library import MACROS
    if name is None:
        if params or output:
            raise BadInput("give a macro NAME before parameters or -o (bitgrid macro lists "
                           "them)")
        width = max(len(n) for n in MACROS)
        for macro_ in MACROS.values():
            click.echo(f"{macro_.name.ljust(width)}  {macro_.doc}")
        return
    if name not in MACROS:
        raise BadInput(f"no macro {name!r}; the macros are {', '.join(MACROS)}")
    found = MACROS[name]
    block = found.build(**_parse_params(found, params))
    if output is None:
        click.echo(f"{block.name}: {found.doc}")
        for param in found.params:
            click.echo(f"  param {param.describe()}")
        click.echo(f"  box {block.width} x {block.height} cells, {block.cell_count} "
                   f"configured; latency {block.latency} subcycles, period {block.period}")
        for port in block.ports:
            lanes = " ".join(f"{b.side.letter}{b.lane}" + (f"+{b.skew}" if b.skew else "")
                             for b in port.bits)
            click.echo(f"  {port.direction:3} {port.name}[{port.width}]: {lanes}")
        return
    check_writable(output)
    ports_file = ports_path(output)
    check_writable(ports_file)
    alone = block.standalone()
    bitstream.save(output, alone.config)
    ports.save(ports_file, alone.portmap, alone.config)
    config = alone.config
    click.echo(f"wrote {output}: {block.name} on a {config.width} x {config.height} grid, "
               f"{int((config.luts != 0).any(axis=2).sum())} cells configured")
    names = ", ".join(p.name for p in alone.portmap.ports)
    click.echo(f"wrote {ports_file}: ports {names}; period {alone.portmap.period}, latency "
               f"{alone.portmap.latency} subcycles")
