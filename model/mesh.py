"""Meshes of chips: slicing one logical configuration into one tile per chip, and back.

A *mesh* (SPEC sections 1 and 8) is ``cols`` x ``rows`` chips joined edge to edge through links.
Chip ``(col, row)`` holds the tile whose north-west cell is ``(col * tile_w, row * tile_h)`` of
the logical grid; chips are numbered like cells: ``col`` grows to the east, ``row`` to the
south, and ``(0, 0)`` is the north-west chip. Tiles must have even width and height, so that
every tile has the parity pattern of the logical grid at its place (SPEC section 4) and the
configuration is cut without any change.

* :class:`MeshShape`: the shape of a mesh, ``COLSxROWS`` on the command line.
* :func:`slice_configuration` / :func:`join_configurations`: one
  :class:`~bitgrid.config.Configuration` to one per chip and back (exact inverses).
* :func:`slice_bitstream` / :func:`join_bitstreams` and :func:`write_slices`: the same on BGBS
  bitstreams. Every chip's bitstream keeps the scan order of the source file; the chip files
  are named :func:`chip_filename` ``<stem>.c<col>r<row>.bgbs`` (``adder.c1r0.bgbs`` is the
  chip in column 1, row 0).
* :func:`split_edges` / :func:`join_edges`: the edge buses of the whole mesh against the edge
  buses of each chip. Only the outer sides of the outer chips carry the mesh's inputs and
  outputs; the inner sides are joined by links.
* :class:`MeshEmulator`: a pure-Python reference of a mesh, one
  :class:`~bitgrid.emulator.Emulator` per chip exchanging the inner edge lanes every subcycle,
  with the API of :class:`~bitgrid.emulator.Emulator`. It must match one big emulator exactly
  (SPEC section 8); ``tests/test_mesh_slice.py`` checks that it does.
"""

import os
import re
from dataclasses import dataclass

import numpy as np

from .bitstream import Bitstream, ScanOrder
from .bitstream import load as load_bitstream
from .checks import check_int
from .config import Configuration, check_grid_size
from .emulator import Emulator
from .files import atomic_write
from .terms import DIRECTIONS, N, S, Edges, parse_side

__all__ = ["MeshShape", "MeshError", "slice_configuration", "join_configurations",
           "slice_bitstream", "place_chip_files", "join_bitstreams", "write_slices",
           "chip_filename", "parse_chip_filename", "split_edges", "join_edges", "MeshEmulator"]



class MeshError(ValueError):
    """A set of tiles (or chip files) that does not make the mesh: a missing, extra or
    duplicated tile, tiles of different sizes or scan orders."""


@dataclass(frozen=True)
class MeshShape:
    """A mesh of ``cols`` x ``rows`` chips (both positive integers).

    ``str(shape)`` is the command line form ``COLSxROWS``, for example ``2x2``.
    """
    cols: int
    rows: int

    def __post_init__(self):
        for name in ("cols", "rows"):
            object.__setattr__(self, name, check_int(getattr(self, name), f"Mesh {name}",
                                                     minimum=1))

    @classmethod
    def parse(cls, text):
        """Parse ``COLSxROWS`` (``2x2``, ``4X1``), the form of ``--mesh``; a ``MeshShape`` is
        returned as it is.

        :raises ValueError: naming the text, if it is not two positive integers joined by x.
        """
        if isinstance(text, cls):
            return text
        match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", str(text))
        if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
            raise ValueError(f"mesh {text!r} is not of the form COLSxROWS (chips across x "
                             "chips down, both at least 1), for example 2x2")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self):
        return f"{self.cols}x{self.rows}"

    def __len__(self):
        return self.cols * self.rows

    def chips(self):
        """The chips ``(col, row)`` in row-major order (rows outer, columns inner)."""
        for row in range(self.rows):
            for col in range(self.cols):
                yield (col, row)

    def __contains__(self, chip):
        try:
            col, row = chip
        except (TypeError, ValueError):
            return False
        return (isinstance(col, (int, np.integer)) and isinstance(row, (int, np.integer))
                and 0 <= col < self.cols and 0 <= row < self.rows)

    def tile_size(self, width, height):
        """The size ``(tile_w, tile_h)`` of each chip's tile for a ``width`` x ``height``
        logical grid.

        :raises ValueError: if the grid does not split into equal tiles, or the tiles would
            have an odd width or height (SPEC section 4: tiles keep the parity pattern only if
            both are even); the message says which sizes would work.
        """
        sizes = []
        check_grid_size(width, height)
        for what, cells, chips in (("width", width, self.cols), ("height", height, self.rows)):
            across, one = ("columns", "column") if what == "width" else ("rows", "row")
            chips_text = f"{chips} chip {across if chips > 1 else one}"
            advice = (f"use a mesh whose {one} count divides {cells} with an even quotient "
                      f"({_good_counts(cells)})")
            if cells % chips:
                raise ValueError(f"a grid {cells} cells in {what} does not split into "
                                 f"{chips_text} of equal size; {advice}")
            tile = cells // chips
            if tile % 2:
                raise ValueError(f"{chips_text} would make tiles {tile} "
                                 f"cell{'s' if tile != 1 else ''} in {what}: tiles "
                                 "need an even width and height to keep the phase parity of "
                                 f"the logical grid (SPEC section 4); {advice}")
            sizes.append(tile)
        return tuple(sizes)

    def neighbour(self, chip, side):
        """The chip on ``side`` (anything :func:`bitgrid.terms.parse_side` takes) of ``chip``,
        or None at the mesh's edge.

        :raises ValueError: for an unknown side."""
        dc, dr = parse_side(side).step
        other = (chip[0] + dc, chip[1] + dr)
        return other if other in self else None

    def links(self):
        """The inner links: ``((col, row), side, (col2, row2))`` for every pair of neighbours,
        with ``side`` ``"E"`` or ``"S"`` of the first chip (it faces ``W``/``N`` of the
        second)."""
        for chip in self.chips():
            for side in ("E", "S"):
                other = self.neighbour(chip, side)
                if other is not None:
                    yield chip, side, other


def _good_counts(cells):
    counts = [str(n) for n in range(1, cells + 1) if cells % n == 0 and (cells // n) % 2 == 0]
    return "for " + str(cells) + " cells: " + ", ".join(counts) if counts else \
        f"no chip count splits {cells} cells into even tiles"


def _shape(shape):
    return MeshShape.parse(shape)


def _chip_name(chip):
    return f"c{chip[0]}r{chip[1]}"


# -- Configurations ----------------------------------------------------------------------------

def slice_configuration(config, shape):
    """Cut ``config`` into one tile per chip of ``shape``.

    :returns: ``{(col, row): Configuration}`` in row-major chip order.
    :raises ValueError: if the grid does not split into equal even tiles
        (:meth:`MeshShape.tile_size`).
    """
    shape = _shape(shape)
    if isinstance(config, Bitstream):
        config = config.config
    if not isinstance(config, Configuration):
        raise TypeError(f"slice_configuration takes a Configuration or a Bitstream, not "
                        f"{config!r}")
    tile_w, tile_h = shape.tile_size(config.width, config.height)
    return {(col, row): config.region(col * tile_w, row * tile_h, tile_w, tile_h)
            for col, row in shape.chips()}


def _check_tiles(tiles, shape, what="tile"):
    """Check that ``tiles`` has exactly the chips of ``shape``; returns them in chip order."""
    keys = list(tiles)
    extra = [k for k in keys if k not in shape]
    if extra:
        raise MeshError(f"{what} {_describe(extra[0])} is outside the {shape} mesh (columns "
                        f"0..{shape.cols - 1}, rows 0..{shape.rows - 1}); check --mesh")
    missing = [chip for chip in shape.chips() if chip not in tiles]
    if missing:
        raise MeshError(f"missing {what}{'s' if len(missing) > 1 else ''} "
                        f"{', '.join(_chip_name(c) for c in missing)} of the {shape} mesh; "
                        f"every chip (col, row) needs one")
    return [(chip, tiles[chip]) for chip in shape.chips()]


def _describe(key):
    try:
        return _chip_name(key)
    except (TypeError, IndexError):
        return repr(key)


def join_configurations(tiles, shape):
    """Join one tile per chip into the logical configuration: the inverse of
    :func:`slice_configuration`.

    :param tiles: ``{(col, row): Configuration}`` with every chip of ``shape``.
    :raises MeshError: for a missing or extra tile, or tiles of different sizes.
    """
    shape = _shape(shape)
    ordered = _check_tiles(tiles, shape)
    first_chip, first = ordered[0]
    tile_w, tile_h = first.width, first.height
    for chip, tile in ordered:
        if (tile.width, tile.height) != (tile_w, tile_h):
            raise MeshError(f"tile {_chip_name(chip)} is {tile.width} x {tile.height} cells, "
                            f"tile {_chip_name(first_chip)} is {tile_w} x {tile_h}: all tiles "
                            "of a mesh have the same size; slice the logical bitstream again")
    luts = np.zeros((tile_h * shape.rows, tile_w * shape.cols, 4), dtype=np.uint16)
    for (col, row), tile in ordered:
        luts[row * tile_h:(row + 1) * tile_h, col * tile_w:(col + 1) * tile_w] = tile.luts
    return Configuration(tile_w * shape.cols, tile_h * shape.rows, luts)


# -- Bitstreams --------------------------------------------------------------------------------

def chip_filename(stem, col, row):
    """The file name of chip ``(col, row)``'s bitstream: ``<stem>.c<col>r<row>.bgbs``."""
    return f"{stem}.c{col}r{row}.bgbs"


_CHIP_FILE = re.compile(r"\.c(\d+)r(\d+)\.bgbs$", re.IGNORECASE)


def parse_chip_filename(path):
    """``(col, row)`` from a name ending in ``.c<col>r<row>.bgbs``, or None."""
    match = _CHIP_FILE.search(os.path.basename(str(path)))
    return (int(match.group(1)), int(match.group(2))) if match else None


def place_chip_files(paths):
    """``{(col, row): path}`` for chip files named ``<stem>.c<col>r<row>.bgbs``.

    :raises MeshError: for a name that does not say its chip, or two files of one chip.
    """
    placed = {}
    for path in paths:
        chip = parse_chip_filename(path)
        if chip is None:
            raise MeshError(f"{path}: cannot tell which chip it is for; chip files are named "
                            "<stem>.c<col>r<row>.bgbs, as `bitgrid bitstream slice` writes "
                            "them")
        if chip in placed:
            raise MeshError(f"{placed[chip]} and {path} are both for chip ({chip[0]}, "
                            f"{chip[1]}); give one file per chip")
        placed[chip] = path
    return placed


def _as_bitstream(source):
    if isinstance(source, Bitstream):
        return source
    if isinstance(source, Configuration):
        return Bitstream(source)
    return load_bitstream(source)


def slice_bitstream(source, shape):
    """Slice a logical bitstream into one bitstream per chip.

    :param source: a :class:`~bitgrid.bitstream.Bitstream`, or the path of a BGBS file.
    :returns: ``{(col, row): Bitstream}``, each in the scan order of ``source``.
    :raises BitstreamError: for a bad BGBS file.
    :raises ValueError: if the grid does not split into equal even tiles.
    """
    bitstream = _as_bitstream(source)
    return {chip: Bitstream(tile, bitstream.order)
            for chip, tile in slice_configuration(bitstream.config, shape).items()}


def write_slices(source, shape, directory=".", stem=None):
    """Slice ``source`` (a path or a :class:`~bitgrid.bitstream.Bitstream`) and write one BGBS
    file per chip, ``<directory>/<stem>.c<col>r<row>.bgbs``.

    :param stem: default: the source file's name without ``.bgbs`` (``"bitstream"`` for an
        in-memory bitstream).
    :returns: ``{(col, row): path}`` in row-major chip order.
    """
    if stem is None:
        stem = "bitstream" if isinstance(source, (Bitstream, Configuration)) else \
            re.sub(r"\.bgbs$", "", os.path.basename(str(source)), flags=re.IGNORECASE)
    slices = slice_bitstream(source, shape)
    paths = {}
    for (col, row), bitstream in slices.items():
        path = os.path.join(directory, chip_filename(stem, col, row))
        atomic_write(path, bitstream.to_bytes())       # whole or not at all
        paths[(col, row)] = path
    return paths


def join_bitstreams(sources, shape, order=None):
    """Join one bitstream per chip into the logical bitstream: the inverse of
    :func:`slice_bitstream`.

    :param sources: ``{(col, row): Bitstream or path}``; or a sequence of paths, each placed by
        its name ``...c<col>r<row>.bgbs`` (:func:`parse_chip_filename`).
    :param order: scan order of the result; default the tiles' own, which must then agree.
    :raises MeshError: a missing, duplicated or extra tile, tiles of different sizes, or of
        different scan orders without ``order``.
    :raises BitstreamError: for a bad BGBS file.
    """
    shape = _shape(shape)
    if not isinstance(sources, dict):
        sources = place_chip_files(sources)
    _check_tiles(sources, shape)
    tiles = {chip: _as_bitstream(source) for chip, source in sources.items()}
    if order is None:
        orders = {bs.order for bs in tiles.values()}
        if len(orders) > 1:
            listing = ", ".join(f"{_chip_name(c)} {tiles[c].order.label}"
                                for c in shape.chips())
            raise MeshError(f"the tiles have different scan orders ({listing}); choose the "
                            "order of the joined bitstream")
        order = orders.pop()
    config = join_configurations({chip: bs.config for chip, bs in tiles.items()}, shape)
    return Bitstream(config, ScanOrder.parse(order))


# -- Edge buses --------------------------------------------------------------------------------

def _bits(word, count):
    return [(word >> i) & 1 for i in range(count)]


def _mask(count):
    return (1 << count) - 1


def split_edges(edges, shape, tile_w, tile_h):
    """The edge inputs of each chip from the edge inputs of the whole mesh.

    The mesh's ``N`` bus has ``cols * tile_w`` lanes, lane ``x`` going to lane ``x % tile_w``
    of chip ``(x // tile_w, 0)``; likewise ``S`` to the bottom row of chips and ``W``/``E``
    (``rows * tile_h`` lanes) to the first/last column. Inner sides (joined by links) are 0
    here.

    :returns: ``{(col, row): Edges}`` in row-major chip order.
    :raises ValueError: if a bus has bits beyond its lanes.
    """
    shape = _shape(shape)
    edges = Edges.coerce(edges)
    edges.check_lanes(shape.cols * tile_w, shape.rows * tile_h)
    out = {}
    for col, row in shape.chips():
        n = (edges.n >> (col * tile_w)) & _mask(tile_w) if row == 0 else 0
        s = (edges.s >> (col * tile_w)) & _mask(tile_w) if row == shape.rows - 1 else 0
        w = (edges.w >> (row * tile_h)) & _mask(tile_h) if col == 0 else 0
        e = (edges.e >> (row * tile_h)) & _mask(tile_h) if col == shape.cols - 1 else 0
        out[(col, row)] = Edges(n, e, s, w)
    return out


def join_edges(chip_edges, shape, tile_w, tile_h):
    """The edge outputs of the whole mesh from the edge outputs of each chip: the outer sides
    of the outer chips (the inverse of :func:`split_edges` on those sides).

    :param chip_edges: ``{(col, row): Edges}`` with every chip of ``shape``.
    """
    shape = _shape(shape)
    _check_tiles(chip_edges, shape, what="chip")
    n = e = s = w = 0
    for col in range(shape.cols):
        n |= (Edges.coerce(chip_edges[(col, 0)]).n & _mask(tile_w)) << (col * tile_w)
        s |= (Edges.coerce(chip_edges[(col, shape.rows - 1)]).s & _mask(tile_w)) \
            << (col * tile_w)
    for row in range(shape.rows):
        w |= (Edges.coerce(chip_edges[(0, row)]).w & _mask(tile_h)) << (row * tile_h)
        e |= (Edges.coerce(chip_edges[(shape.cols - 1, row)]).e & _mask(tile_h)) \
            << (row * tile_h)
    return Edges(n, e, s, w)


# -- The reference mesh ------------------------------------------------------------------------

class MeshEmulator:
    """A mesh of chips in software: one :class:`~bitgrid.emulator.Emulator` per chip, running
    the tiles of ``config`` and exchanging the lanes of their inner sides every subcycle, as
    links do (SPEC section 8: chip subcycle ``t`` uses its neighbours' edge outputs of
    ``t - 1``).

    Same API as :class:`~bitgrid.emulator.Emulator`: :meth:`step` takes and returns the edge
    buses of the whole mesh (:class:`~bitgrid.emulator.Edges`), :attr:`outputs` is the cell
    state of the whole logical grid.

    :param config: the logical :class:`~bitgrid.config.Configuration`.
    :param shape: a :class:`MeshShape` or ``"COLSxROWS"``.
    :raises ValueError: if the grid does not split into equal even tiles.
    """

    def __init__(self, config, shape):
        if not isinstance(config, Configuration):
            raise TypeError(f"MeshEmulator needs a Configuration, not {config!r}")
        self.shape = _shape(shape)
        self.width, self.height = config.width, config.height
        self.tile_w, self.tile_h = self.shape.tile_size(config.width, config.height)
        self.config = config.copy()
        self.chips = {chip: Emulator(tile)
                      for chip, tile in slice_configuration(config, self.shape).items()}
        self.subcycle = 0
        #: Lane bits carried over inner links so far (for link traffic estimates).
        self.link_bits = 0

    def reset(self):
        """Reset every chip: all outputs 0, subcycle counter 0."""
        for emulator in self.chips.values():
            emulator.reset()
        self.subcycle = 0
        self.link_bits = 0

    @property
    def phase(self):
        return self.subcycle % 2

    def _inner_inputs(self, chip, own):
        """``own`` (the chip's share of the mesh inputs) with the inner sides filled from the
        neighbours' current edge outputs (their state after subcycle ``t - 1``)."""
        words = own._asdict()
        for side in DIRECTIONS:
            other = self.shape.neighbour(chip, side)
            if other is None:
                continue
            words[side.input_name] = self._outputs_now[other][side.opposite]
            self.link_bits += self.tile_w if side in (N, S) else self.tile_h
        return Edges(**words)

    def step(self, edge_inputs=None):
        """Run one subcycle on every chip with ``edge_inputs`` on the mesh's outer edge buses
        and return the mesh's edge outputs.

        :raises ValueError: if an edge word has bits beyond its lane count.
        """
        own = split_edges(edge_inputs, self.shape, self.tile_w, self.tile_h)
        self._outputs_now = {chip: emu.edge_outputs() for chip, emu in self.chips.items()}
        inputs = {chip: self._inner_inputs(chip, own[chip]) for chip in self.chips}
        outputs = {chip: self.chips[chip].step(inputs[chip]) for chip in self.chips}
        self.subcycle += 1
        return join_edges(outputs, self.shape, self.tile_w, self.tile_h)

    def run(self, edge_inputs):
        """One subcycle per element of ``edge_inputs``; the list of mesh edge outputs."""
        return [self.step(e) for e in edge_inputs]

    def edge_outputs(self):
        """The mesh's edge outputs now."""
        return join_edges({chip: emu.edge_outputs() for chip, emu in self.chips.items()},
                          self.shape, self.tile_w, self.tile_h)

    @property
    def outputs(self):
        """The cell outputs of the whole logical grid, ``(4, height, width)`` uint8 (a copy,
        assembled from the chips)."""
        state = np.zeros((4, self.height, self.width), dtype=np.uint8)
        for (col, row), emulator in self.chips.items():
            state[:, row * self.tile_h:(row + 1) * self.tile_h,
                  col * self.tile_w:(col + 1) * self.tile_w] = emulator.outputs
        return state
