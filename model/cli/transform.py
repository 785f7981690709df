"""``bitgrid transform``: move, rotate or mirror a BitGrid program and its port map
(:mod:`bitgrid.transform`)."""

import os

import click

from .common import check_writable, load_bitstream, load_portmap
from .errors import BadInput
from .params import SizeType

__all__ = ["transform", "ports_path_for", "vectors_path_for", "write_all", "same_file",
           "check_not_inputs"]


def _offset(text):
    try:
        dx, dy = (int(v) for v in text.split(","))
    except ValueError:
        raise BadInput(f"--move {text!r}: give the offset as DX,DY in cells, e.g. --move 2,0 "
                       "(east 2) or --move 0,-2 (north 2)") from None
    return dx, dy


def same_file(a, b):
    """Whether paths ``a`` and ``b`` name one file (the same inode, through links; or the same
    absolute path when either does not exist yet)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_not_inputs(outputs, inputs):
    """Refuse (exit 2) an output that would overwrite one of the command's input files.

    :param outputs: ``(path, what)`` pairs, e.g. ``("o.ports.json", "the port map")``.
    :param inputs: ``(option, path)`` pairs of the inputs (``path`` None when not given).
    """
    for path, what in outputs:
        for option, source in inputs:
            if source is not None and source != "-" and same_file(path, source):
                raise BadInput(f"{path} ({what}) is the input {option} {source}; write "
                               "the output to a new file")


def write_all(files):
    """Write every ``(path, content)`` of ``files`` (:func:`bitgrid.files.atomic_write`), all or
    none: if one fails, the files written before it get their old content back (or are removed
    if they did not exist), and the error is raised."""
    from bitgrid.files import atomic_write
    done = []                                   # (path, hard link to its old content or None)
    try:
        for path, content in files:
            backup = None
            if os.path.isfile(path):
                backup = f"{path}.{os.getpid()}.old"
                try:
                    os.link(os.path.realpath(path), backup)
                except OSError:
                    backup = None
            done.append((path, backup))
            atomic_write(path, content)
    except BaseException:
        for path, backup in done[:-1]:
            try:
                if backup is not None:
                    os.replace(backup, os.path.realpath(path))
                else:
                    os.remove(path)
            except OSError:
                pass
        if done and done[-1][1] is not None:
            _remove(done[-1][1])
        raise
    for _, backup in done:
        if backup is not None:
            _remove(backup)


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def vectors_path_for(output):
    """The vector file written beside ``output``: ``OUT.bgbs`` -> ``OUT.json``."""
    root = output[:-len(".bgbs")] if output.endswith(".bgbs") else output
    return root + ".json"


def ports_path_for(output):
    """The port-map file written beside ``output``: ``OUT.bgbs`` -> ``OUT.ports.json``."""
    root = output[:-len(".bgbs")] if output.endswith(".bgbs") else output
    return root + ".ports.json"


@click.command()
@click.argument("bitstream", metavar="PROGRAM", type=click.Path(dir_okay=False))
@click.option("--move", "offset", metavar="DX,DY",
              help="Move every cell by DX cells east and DY cells south (negative: west, "
                   "north). All-zero cells may fall off the grid, no other; a side may leave "
                   "the edge where its lanes are idle (no port there, with --ports).")
@click.option("--rotate", type=click.Choice(["90", "180", "270"]),
              help="Rotate clockwise by this many degrees (90 and 270 swap width and height).")
@click.option("--mirror", type=click.Choice(["x", "y"]),
              help="Mirror: x reverses x (east <-> west), y reverses y (north <-> south).")
@click.option("--size", type=SizeType(), metavar="WxH",
              help="With --move: the size of the new grid (default: the program's own).")
@click.option("--ports", "ports_in", type=click.Path(dir_okay=False), metavar="P.json",
              help="The program's port map (bitgrid-ports-v1): moved with the program and "
                   "written as OUT.ports.json.")
@click.option("--vectors", "vectors_in", type=click.Path(dir_okay=False), metavar="CASE.json",
              help="A bitgrid-vectors-v1 file of PROGRAM: written re-indexed (and re-timed) as "
                   "OUT.json, with its own expectations, for --vectors of emulate, sim and "
                   "run.")
@click.option("--retime", is_flag=True,
              help="Allow a transform that swaps every cell's phase (rotate 90/270, mirror, "
                   "odd move) by delaying the program one subcycle at its ports (latency + 1), "
                   "or where odd-parity cells output 1 on all-zero inputs, advancing it "
                   "(latency - 1; docs/transform.md).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              metavar="OUT.bgbs", help="The transformed BitGrid program.")
def transform(bitstream, offset, rotate, mirror, size, ports_in, vectors_in, retime, output):
    """Move, rotate or mirror PROGRAM (a BitGrid program, .bgbs), with its port map.

    Each LUT moves with its cell and has its address bits and outputs re-indexed (a cell
    rotated by 90 degrees reads on E what it read on N). Even moves and --rotate 180 keep
    every cell's phase and every timing. --rotate 90/270, a --mirror and odd moves swap every
    cell's phase (SPEC section 10): they are refused unless --retime, which delays the program
    by one subcycle (every input skew and the latency + 1 in the port map), or advances it
    (- 1) where a delay cannot work. Examples:

    \b
      bitgrid transform adder.bgbs --ports adder.ports.json --rotate 180 -o adder_r.bgbs
      bitgrid transform cmp.bgbs --ports cmp.ports.json --move 0,2 --size 2x12 -o low.bgbs
      bitgrid transform adder.bgbs --ports adder.ports.json --mirror x --retime -o m.bgbs
      bitgrid transform adder8.bgbs --vectors adder8.json --rotate 90 --retime -o r.bgbs
      bitgrid sim r.bgbs --vectors r.json
    """
    from bitgrid import bitstream as _bitstream
    from bitgrid import transform as tf
    chosen = [name for name, value in (("--move", offset), ("--rotate", rotate),
                                       ("--mirror", mirror)) if value is not None]
    if len(chosen) != 1:
        raise BadInput("give exactly one of --move DX,DY, --rotate 90|180|270 and --mirror "
                       "x|y" + (f" (not {' and '.join(chosen)})" if chosen else ""))
    if size is not None and offset is None:
        raise BadInput("--size goes with --move; a rotation or mirror keeps the program's "
                       "size (90 and 270 degrees swap width and height)")
    bs = load_bitstream(bitstream)
    portmap = None
    if ports_in is not None:
        portmap = load_portmap(ports_in, bs.config, bitstream)
    case = None
    if vectors_in is not None:
        from bitgrid.vectors import BadStreamCase, load_case
        case = load_case(vectors_in)
        if isinstance(case, BadStreamCase):
            raise BadInput(f"{vectors_in}: a bitgrid-badstream-v1 case (a bitstream that must "
                           "be rejected) has no steps to transform; give a bitgrid-vectors-v1 "
                           "file")
        if (case.width, case.height) != (bs.width, bs.height):
            raise BadInput(f"{vectors_in}: a vector case of a {case.width} x {case.height} "
                           f"grid, the program is {bs.width} x {bs.height}")
    ports_out = ports_path_for(output) if portmap is not None else None
    vectors_out = vectors_path_for(output) if case is not None else None
    outputs = [(output, "the transformed program")]
    if ports_out is not None:
        outputs.append((ports_out, "its port map, from -o"))
    if vectors_out is not None:
        outputs.append((vectors_out, "its vector file, from -o"))
    check_not_inputs(outputs, [("PROGRAM", bitstream), ("--ports", ports_in),
                               ("--vectors", vectors_in)])
    for path, _ in outputs:
        check_writable(path)
    result = tf.transform(bs.config, portmap, move=_offset(offset) if offset else None,
                          rotate=int(rotate) if rotate else None, mirror=mirror, size=size,
                          retime=retime, steps=case.steps if case is not None else None)
    document = None
    if case is not None:
        import json
        from bitgrid.vectors import case_document
        steps = tf.transform_steps(case.steps, result)
        name = os.path.splitext(os.path.basename(output))[0]
        document = case_document(
            name, result.config.width, result.config.height, steps,
            bitstream=os.path.basename(output), origin=f"bitgrid transform of {case.name}",
            description=f"{case.name} under {result.geometry.name}"
                        + {0: "", 1: ", one subcycle later (re-timed)",
                           -1: ", one subcycle earlier (re-timed)"}[result.latency_added])
    files = [(output, _bitstream.write(result.config, bs.order))]
    if ports_out is not None:
        files.append((ports_out, result.portmap.for_program(result.config).dumps()))
    if document is not None:
        files.append((vectors_out, json.dumps(document, indent=1) + "\n"))
    write_all(files)
    geometry = result.geometry
    timing = ("every cell's phase kept, timing unchanged" if not geometry.swaps_parity else
              "every cell's phase swapped, re-timed: latency + 1 subcycle (inputs one "
              "subcycle later)" if result.latency_added > 0 else
              "every cell's phase swapped, re-timed: latency - 1 subcycle (inputs one "
              "subcycle earlier)")
    click.echo(f"wrote {output}: {geometry.name}, {geometry.new_width} x "
               f"{geometry.new_height} grid; {timing}"
               + (f"; port map {ports_out}" if ports_out else "")
               + (f"; vectors {vectors_out}" if vectors_out else ""), err=True)
