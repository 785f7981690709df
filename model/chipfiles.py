"""Chip files of a mesh (SPEC section 8): the checks that ``bitgrid bitstream slice`` and
``join`` make on folders and file names before they slice or join (:mod:`bitgrid.mesh` does
the slicing and joining itself).

A chip file is the BGBS of one chip, named ``<stem>.c<col>r<row>.bgbs``
(:func:`bitgrid.mesh.chip_filename`). Every check raises :class:`~bitgrid.mesh.MeshError` (a
:class:`ValueError`) with a message that says what to do.
"""

import glob
import os
import re

from .mesh import MeshError, chip_filename, parse_chip_filename, place_chip_files

__all__ = ["bitstream_stem", "chip_stem", "slice_folder", "stem_chip_files", "place_join"]


def bitstream_stem(path):
    """The name of a bitstream file without its folder and ``.bgbs``: ``x/adder.bgbs`` ->
    ``adder``."""
    return re.sub(r"\.bgbs$", "", os.path.basename(str(path)), flags=re.IGNORECASE)


def chip_stem(path):
    """The bitstream name a chip file was sliced from: ``x/adder.c0r1.bgbs`` -> ``adder``."""
    return re.sub(r"\.c\d+r\d+\.bgbs$", "", os.path.basename(str(path)), flags=re.IGNORECASE)


def slice_folder(source, bitstream, shape, directory):
    """Check that ``bitstream`` (read from the file ``source``) slices into ``shape`` and that
    ``directory`` can hold its chip files, and make the folder if it is missing.

    :returns: ``(tile_width, tile_height)``.
    :raises MeshError: ``<source>: cannot slice a W x H grid into a CxR mesh: ...``, or
        ``<directory>: is a file, not a folder``.
    """
    try:
        tile = shape.tile_size(bitstream.width, bitstream.height)
    except ValueError as error:
        raise MeshError(f"{source}: cannot slice a {bitstream.width} x {bitstream.height} grid "
                        f"into a {shape} mesh: {error}") from None
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise MeshError(f"{directory}: is a file, not a folder")
    os.makedirs(directory, exist_ok=True)
    return tile


def stem_chip_files(stem, shape):
    """The chip files ``<stem>.c<col>r<row>.bgbs`` of every chip of ``shape`` (``stem`` may
    include a folder and end in ``.bgbs``).

    :raises MeshError: if one is missing, or if chip files of ``stem`` exist for chips outside
        ``shape`` (an earlier slice into another mesh).
    """
    stem = stem[:-5] if stem.lower().endswith(".bgbs") else stem
    files = [chip_filename(stem, col, row) for col, row in shape.chips()]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise MeshError(f"missing chip file{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(missing)}: a {shape} mesh needs one file per chip; "
                        "slice the logical bitstream again with `bitgrid bitstream slice "
                        f"BITSTREAM --mesh {shape}`")
    others = sorted(p for p in glob.glob(glob.escape(stem) + ".c*r*.bgbs")
                    if (parse_chip_filename(p) or (0, 0)) not in shape)
    if others:
        raise MeshError(f"{', '.join(others)}: chip file{'s' if len(others) > 1 else ''} "
                        f"outside the {shape} mesh; check --mesh, or remove the chip files of "
                        "an earlier slice")
    return files


def place_join(files, shape, output):
    """``{(col, row): path}`` of the chip files to join into ``output``, checked: each names its
    chip, one file per chip of ``shape`` and none outside it, all of one slice (one stem), and
    ``output`` is not one of them.

    :raises MeshError: with the first problem found, in that order.
    """
    placed = place_chip_files(files)
    for chip, path in placed.items():
        if chip not in shape:
            raise MeshError(f"{path} is for chip ({chip[0]}, {chip[1]}), outside the {shape} "
                            "mesh; check --mesh")
    missing = [f"c{c}r{r}" for c, r in shape.chips() if (c, r) not in placed]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise MeshError(f"missing chip file{plural} for chip{plural} {', '.join(missing)}: a "
                        f"{shape} mesh needs one file per chip (<stem>.c<col>r<row>.bgbs); add "
                        "them, or check --mesh")
    stems = {chip_stem(path) for path in placed.values()}
    if len(stems) > 1:
        raise MeshError(f"the chip files come from different bitstreams "
                        f"({', '.join(sorted(stems))}): give the files of one slice")
    if any(os.path.realpath(output) == os.path.realpath(path) for path in placed.values()):
        raise MeshError(f"-o {output} is one of the chip files being joined; write the joined "
                        "bitstream to another file")
    return placed
