"""A grid cut into tiles for :mod:`bitgrid.mpi`: :class:`Decomposition` (even tile
columns and rows, one tile per rank) and the halo depth of a ``--halo`` (:func:`halo_depth`,
:func:`check_halo`).
"""

import numpy as np

from .checks import check_int
from .config import check_grid_size
from .mesh import MeshShape

__all__ = ["Decomposition", "halo_depth", "check_halo"]


# -- The decomposition -------------------------------------------------------------------------

def _split(cells, parts):
    """Even sizes summing to ``cells`` (even), as equal as possible, the larger ones first."""
    pairs, extra = divmod(cells // 2, parts)
    return [2 * (pairs + (i < extra)) for i in range(parts)]


def _bounds(sizes):
    return [int(b) for b in np.cumsum([0] + list(sizes))]


class Decomposition:
    """A ``width`` x ``height`` grid cut into ``shape.cols`` x ``shape.rows`` tiles.

    :param shape: a :class:`~bitgrid.mesh.MeshShape` or ``"COLSxROWS"``.
    :ivar xs: column bounds, ``cols + 1`` even integers from 0 to ``width``; tile column ``c``
        is ``xs[c] <= x < xs[c + 1]``.
    :ivar ys: row bounds likewise.
    :raises ValueError: for a grid size that is not even, or more tile columns than
        ``width / 2`` (or rows than ``height / 2``): every tile is at least 2 x 2.
    """

    def __init__(self, width, height, shape):
        check_grid_size(width, height)
        self.width, self.height = width, height
        self.shape = MeshShape.parse(shape)
        for what, cells, parts in (("columns", width, self.shape.cols),
                                   ("rows", height, self.shape.rows)):
            if parts > cells // 2:
                raise ValueError(f"a {width} x {height} grid has at most {cells // 2} tile "
                                 f"{what} (tiles are at least 2 cells and even); "
                                 f"{self.shape} needs {parts}: use fewer ranks or --procs")
        self.xs = _bounds(_split(width, self.shape.cols))
        self.ys = _bounds(_split(height, self.shape.rows))

    @classmethod
    def choose(cls, width, height, ranks):
        """The shape of ``ranks`` tiles that cuts the fewest lanes (``(cols - 1) * height +
        (rows - 1) * width``), then the most even tiles, then more columns than rows.

        :raises ValueError: if no ``cols x rows = ranks`` fits (say how many ranks would).
        """
        check_grid_size(width, height)
        ranks = check_int(ranks, "ranks", minimum=1)
        best = None
        for cols in range(1, ranks + 1):
            if ranks % cols:
                continue
            rows = ranks // cols
            if cols > width // 2 or rows > height // 2:
                continue
            cut = (cols - 1) * height + (rows - 1) * width
            largest = -(-width // 2 // cols) * -(-height // 2 // rows)
            key = (cut, largest, -cols)
            if best is None or key < best[0]:
                best = (key, cols, rows)
        if best is None:
            raise ValueError(f"{ranks} ranks cannot each take a tile of a {width} x {height} "
                             f"grid (tiles are at least 2 x 2 and even); use at most "
                             f"{(width // 2) * (height // 2)} ranks")
        return cls(width, height, MeshShape(best[1], best[2]))

    def __len__(self):
        return len(self.shape)

    def __repr__(self):
        return f"Decomposition({self.width}, {self.height}, {str(self.shape)!r})"

    def tile(self, rank):
        """``(col, row)`` of rank ``rank``'s tile."""
        return rank % self.shape.cols, rank // self.shape.cols

    def rank(self, col, row):
        """The rank of tile ``(col, row)``, or None outside the shape."""
        if 0 <= col < self.shape.cols and 0 <= row < self.shape.rows:
            return row * self.shape.cols + col
        return None

    def bounds(self, col, row):
        """``(x0, x1, y0, y1)``: tile ``(col, row)`` is ``x0 <= x < x1``, ``y0 <= y < y1``."""
        return self.xs[col], self.xs[col + 1], self.ys[row], self.ys[row + 1]

    def smallest_side(self):
        """The fewest cells across any tile, among the directions that are cut (None if the
        grid is one tile)."""
        sizes = []
        if self.shape.cols > 1:
            sizes += [b - a for a, b in zip(self.xs, self.xs[1:])]
        if self.shape.rows > 1:
            sizes += [b - a for a, b in zip(self.ys, self.ys[1:])]
        return min(sizes) if sizes else None


def halo_depth(halo):
    """Cells of halo for ``halo`` subcycles between exchanges: 0 for the seam exchange
    (``halo=1``), else ``halo`` rounded up to even."""
    halo = check_int(halo, "halo", minimum=1)
    return 0 if halo == 1 else halo + halo % 2


def check_halo(decomposition, halo):
    """The halo depth (:func:`halo_depth`) of ``halo`` on ``decomposition``.

    :raises ValueError: if the halo is deeper than the smallest tile (a halo takes its cells
        from the next tile only), saying the largest ``halo`` that fits."""
    depth = halo_depth(halo)
    side = decomposition.smallest_side()
    if depth and side is not None and depth > side:
        raise ValueError(f"a halo of {depth} cells (for --halo {halo}) is deeper than the "
                         f"smallest tile, {side} cells across: use --halo {side} or less, or "
                         "fewer ranks")
    return depth
