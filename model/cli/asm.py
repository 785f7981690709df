"""``bitgrid asm`` and ``bitgrid disasm``: BitGrid assembly text to a BGBS program and its port
map, and back (docs/asm.md)."""

import os
import pathlib

import click

from bitgrid.bitstream import Bitstream
from bitgrid.files import atomic_write

from .common import check_writable, load_bitstream, load_portmap
from .errors import BadInput
from .progress import Bar, progress_options

__all__ = ["asm", "disasm", "ports_path"]


def ports_path(bitstream_path):
    """The port map written beside a bitstream: ``out/adder.bgbs`` -> ``out/adder.ports.json``
    (another name keeps its suffix: ``x.bin`` -> ``x.bin.ports.json``)."""
    root, ext = os.path.splitext(os.fspath(bitstream_path))
    return (root if ext.lower() == ".bgbs" else os.fspath(bitstream_path)) + ".ports.json"


def _refuse_same(path, option, other, what):
    """Bad input if the output ``path`` is the file ``other`` (an input, or another output):
    writing it would destroy that file."""
    same = os.path.realpath(path) == os.path.realpath(other)
    if not same and os.path.exists(path) and os.path.exists(other):
        same = os.path.samefile(path, other)
    if same:
        raise BadInput(f"{path}: {option} names {what} itself; write to another file")


def _write_both(path, data, ports_file, ports_text):
    """Write the bitstream ``data`` to ``path`` and, unless ``ports_file`` is None, the port
    map ``ports_text`` to ``ports_file``: both or neither (if the port map cannot be written,
    the bitstream file is put back as it was, or removed if it is new)."""
    old = None
    if ports_file is not None and os.path.isfile(path):
        with open(path, "rb") as file:
            old = file.read()
    atomic_write(path, data)
    if ports_file is None:
        return
    try:
        atomic_write(ports_file, ports_text)
    except BaseException:
        if old is not None:
            atomic_write(path, old)
        elif os.path.isfile(path):
            os.unlink(path)
        raise


@click.command()
@click.argument("program", metavar="PROGRAM.bga", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="The BGBS program to write (default: PROGRAM with .bgbs). The port map, "
                   "when the text declares ports, goes beside it as OUT.ports.json.")
@click.option("--ports", "ports_out", type=click.Path(dir_okay=False),
              help="Write the port map here instead of OUT.ports.json.")
@progress_options
def asm(program, output, ports_out, show_progress):
    """Assemble BitGrid assembly text (docs/asm.md) into a BitGrid program.

    Writes the BGBS bitstream and, if the text declares ports (or a period or latency), its
    port map (bitgrid-ports-v1): both whole, or neither. Errors name the file, line and
    column (exit 2); a declared latency that reads some output in another row than its
    inputs is a warning (the files are written).

    \b
    Example:
      bitgrid asm docs/examples/adder4.bga -o out/adder4.bgbs
      -> out/adder4.bgbs and out/adder4.ports.json
    """
    from bitgrid.asm import EXTENSION, assemble_program
    if output is None:
        root, ext = os.path.splitext(program)
        output = (root if ext.lower() == EXTENSION else program) + ".bgbs"
    check_writable(output)
    _refuse_same(output, "-o", program, "the program")
    with Bar(show_progress, desc="assembling", unit=" lines", delay=1) as bar:
        result = assemble_program(pathlib.Path(program), progress=bar)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    ports_file = None
    if result.portmap is not None:
        ports_file = ports_out or ports_path(output)
        check_writable(ports_file)
        _refuse_same(ports_file, "--ports", program, "the program")
        _refuse_same(ports_file, "--ports", output, "the bitstream (-o)")
    bitstream = Bitstream(result.config, result.order)
    _write_both(output, bitstream.to_bytes(), ports_file,
                result.portmap.for_program(result.config).dumps() if ports_file is not None
                else None)
    configured = int((result.config.luts != 0).any(axis=2).sum())
    click.echo(f"wrote {output}: {result.config.width} x {result.config.height} grid, "
               f"{configured} cell{'' if configured == 1 else 's'} configured, "
               f"{bitstream.order.label}")
    if ports_file is not None:
        portmap = result.portmap
        names = ", ".join(p.name for p in portmap.ports) or "(none)"
        click.echo(f"wrote {ports_file}: ports {names}; "
                   f"period {portmap.period}, latency {portmap.latency} subcycles")
    else:
        stale = ports_out or ports_path(output)
        note = (f"; {stale} is from an earlier run and does not belong to this program"
                if os.path.exists(stale) else "")
        click.echo(f"no port map: the text declares no ports{note}")


@click.command()
@click.argument("bitstream", type=click.Path(dir_okay=False))
@click.option("--ports", "ports_file", type=click.Path(dir_okay=False),
              help="The program's port map (bitgrid-ports-v1): its ports, period and latency "
                   "are written as declarations.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the text here (default: print it).")
def disasm(bitstream, ports_file, output):
    """Print a BitGrid program as BitGrid assembly text (docs/asm.md).

    Each LUT is written as its minimal expression of n, e, s, w; pass-through cells as
    `pass`, routing cells with a comment (wire, turn, crossing, fan-out); unconfigured cells
    are left out. `bitgrid asm` of the text gives the identical bitstream (and port map).

    \b
    Example:
      bitgrid disasm out/adder4.bgbs --ports out/adder4.ports.json -o adder4.bga
    """
    from bitgrid.asm import disassemble
    bs = load_bitstream(bitstream)
    portmap = None
    if ports_file is not None:
        portmap = load_portmap(ports_file, bs.config, bitstream)
    if output is not None:
        check_writable(output)
        _refuse_same(output, "-o", bitstream, "the bitstream")
        if ports_file is not None:
            _refuse_same(output, "-o", ports_file, "the port map")
    text = disassemble(bs, portmap, source=os.path.basename(bitstream))
    if output is None:
        click.echo(text, nl=False)
    else:
        atomic_write(output, text)
        click.echo(f"wrote {output}", err=True)
