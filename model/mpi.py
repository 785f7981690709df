"""Emulation across processes with MPI: one tile of the grid per rank, exactly one grid's results.

``mpiexec -n N bitgrid emulate PROGRAM --vectors FILE --mpi`` (docs/mpi.md) and :func:`run`
split a ``W x H`` grid into ``cols x rows`` tiles (:class:`Decomposition`), one per MPI rank,
each run by a single-process emulator, and give exactly the edge outputs of one emulator of the
whole grid (SPEC sections 2 to 4), gathered on the root rank.

Tiles
    Columns and rows of tiles may differ in size (a 64-cell side splits in 3 as 22, 22, 20), but
    every tile starts at an even offset and has an even width and height, so its parity pattern
    is the global one (SPEC section 4) and its configuration is the global one cut out
    (:meth:`bitgrid.config.Configuration.region`). Rank ``r`` holds tile ``(r % cols, r //
    cols)``: ``col`` grows to the east, ``row`` to the south (the chip numbering of
    :mod:`bitgrid.mesh`). Without ``procs`` the shape is chosen to cut the fewest lanes.

Seam exchange (``halo=1``)
    The contract of a chip mesh (SPEC section 8): before subcycle ``t`` every rank sends the
    edge outputs of each inner side of its tile (its state after ``t - 1``) to the neighbour
    on that side, which uses them as that side's edge inputs. One message per inner side and
    subcycle, ``ceil(L / 8)`` bytes for a side of ``L`` lanes.

k-deep halos (``halo=k``, ``k >= 2``)
    Each rank emulates its tile plus a border of ``h`` cells on each inner side (``h = k``
    rounded up to even, so the extended tile keeps the parity pattern), the halo, whose cells
    belong to the neighbours. After each exchange the halo holds the neighbours' true state, and
    the rank runs ``k`` subcycles without any message: a wrong value enters the halo from its
    open outer border (edge inputs 0) and moves one cell per subcycle, so after ``k <= h``
    subcycles it has not reached the tile. Then the halos are refreshed in one round of
    messages: to each neighbour on a side the tile's strip of ``h`` cells along it (``h x L``
    cells for a side of ``L``), to each diagonal neighbour the tile's ``h x h`` corner block
    next to it. Each message carries the 4 outputs of its cells (``4 * h * L`` bits for a
    side), once per ``k`` subcycles; the price is more bytes and the halo's cells evaluated
    redundantly, for ``k`` times fewer rounds of messages (their latency paid once per ``k``
    subcycles).

Emulators
    Each tile runs on the compiled kernel (``emulator="kernel"``, :func:`bitgrid.kernel.advance`:
    the packed planes of the tile, all the subcycles between two exchanges in one call, one
    thread per rank), on :class:`bitgrid.fastemu.FastEmulator` (``"fast"``) or on the reference
    :class:`bitgrid.emulator.Emulator` (``"reference"``), the last two one ``step`` per
    subcycle. ``"auto"`` takes the kernel where numba is installed, else the fast emulator for
    tiles of at least :data:`FAST_MIN_CELLS` cells and the reference below.

Waiting
    On a machine with more ranks than cores (the tests run 9 ranks on 2 cores), a rank that
    waits for a message yields the processor between polls instead of spinning in MPI, so
    that the rank it waits for can run (``wait="yield"``, the default there).

The stimulus and the configuration are needed on the root rank only (others pass ``None``):
the root sends each rank the configuration of its extended tile alone (so a rank holds its
tile, not the grid) and broadcasts the stimulus (1 bit per lane and subcycle). Every function
here that takes ``comm`` is collective: all ranks of ``comm`` call it together.
"""

import os
import time
import typing

import numpy as np

from .checks import check_int
from .config import Configuration, check_grid_size
from .mesh import MeshShape

__all__ = ["Decomposition", "Tile", "RankStats", "MpiRun", "run", "run_edges", "halo_depth",
           "check_halo", "on_root", "import_mpi", "find_mpiexec", "mpiexec_command", "FAST_MIN_CELLS", "EMULATORS"]

#: Without numba, ``emulator="auto"`` runs tiles of at least this many cells (halo included) on
#: the bit-parallel :class:`~bitgrid.fastemu.FastEmulator`, smaller ones on the reference.
FAST_MIN_CELLS = 256 * 256

#: Per-tile emulators: ``"auto"``, ``"kernel"`` (:func:`bitgrid.kernel.advance`), ``"fast"``
#: (:class:`~bitgrid.fastemu.FastEmulator`), ``"reference"``
#: (:class:`~bitgrid.emulator.Emulator`).
EMULATORS = ("auto", "kernel", "fast", "reference")

_SIDES = "nesw"


def import_mpi():
    """``mpi4py.MPI`` (which initialises MPI).

    :raises ImportError: with what to install, if mpi4py or an MPI library is missing.
    """
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(f"MPI emulation needs mpi4py and an MPI library ({error}); install "
                          "them with: pip install 'bitgrid[mpi]' (mpi4py and MPICH from PyPI)"
                          ) from None
    return MPI


def find_mpiexec():
    """The path of ``mpiexec``: the one beside the running Python (a virtualenv's, where the
    ``mpich`` wheel puts it) or else the first on ``PATH``; None if there is none."""
    import shutil
    import sys
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("mpiexec")


def mpiexec_command(ranks, args, *, mpiexec=None):
    """``(argv, env)`` that start ``args`` (a program and its arguments) on ``ranks`` ranks of
    this machine, however many cores it has: ``env`` is :data:`os.environ` plus, for Open
    MPI, ``OMPI_ALLOW_RUN_AS_ROOT=1`` and ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`` (it refuses to
    run as root otherwise), and Open MPI also gets ``--oversubscribe`` (it refuses more ranks
    than cores otherwise). MPICH needs neither.

    :raises FileNotFoundError: if there is no ``mpiexec`` (say what to install).
    """
    import subprocess
    ranks = check_int(ranks, "ranks", minimum=1)
    mpiexec = mpiexec or find_mpiexec()
    if mpiexec is None:
        raise FileNotFoundError("no mpiexec found beside this Python or on PATH; install one "
                                "with: pip install 'bitgrid[mpi]' (mpi4py and MPICH)")
    try:
        version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                                 timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        version = ""
    env = dict(os.environ)
    argv = [mpiexec]
    if "open mpi" in version.lower() or "open-mpi" in version.lower():
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        argv.append("--oversubscribe")
    return argv + ["-n", str(ranks)] + [str(a) for a in args], env


def _world(comm):
    return import_mpi().COMM_WORLD if comm is None else comm


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


# -- Lane arrays -------------------------------------------------------------------------------
#
# Stimulus and responses are lane arrays, the format of bitgrid.kernel: uint8 (subcycles,
# 2 * (W + H)), one byte (0 or 1) per lane, the buses N (W lanes), E (H), S (W), W (H) in
# that order.

def _lane_slices(width, height):
    """``{side: slice}`` of the four buses in a lane array of a ``width`` x ``height`` grid."""
    from .kernel import lane_slices
    return dict(zip(_SIDES, lane_slices(width, height)))


# -- Per-tile engines --------------------------------------------------------------------------

class _EmulatorEngine:
    """A tile on :class:`~bitgrid.emulator.Emulator` or :class:`~bitgrid.fastemu.FastEmulator`
    (one ``step`` per subcycle)."""

    def __init__(self, config, name):
        self.name, self.width, self.height = name, config.width, config.height
        if name == "fast":
            from .fastemu import FastEmulator
            self.emulator = FastEmulator(config, threads=1)
        else:
            from .emulator import Emulator
            self.emulator = Emulator(config)
        self._state = None

    def advance(self, phase, inputs):
        from .kernel import edges_to_lanes, lanes_to_edges
        edges = lanes_to_edges(inputs, self.width, self.height)
        return edges_to_lanes([self.emulator.step(e) for e in edges], self.width, self.height)

    def begin(self):
        """Start reading and writing cell outputs (:meth:`read`, :meth:`write`)."""
        self._state = self.emulator.outputs     # the reference's is a view; the fast one's a copy

    def read(self, rows, cols):
        return self._state[:, rows, cols]

    def write(self, rows, cols, values):
        self._state[:, rows, cols] = values

    def end(self):
        if self.name == "fast":
            self.emulator.outputs = self._state
        self._state = None


class _KernelEngine:
    """A tile on the compiled kernel (:func:`bitgrid.kernel.advance`): packed planes, many
    subcycles per call, one thread (the ranks are the parallelism).

    Cell ``(x, y)`` (even-aligned regions only: every strip here starts at even coordinates
    and has even sizes) is bit ``i % 64`` of word ``i // 64``, ``i = x // 2``, of padded row
    ``1 + y // 2`` of plane ``((x + y) % 2, d, y % 2)`` (bitgrid.kernel, "Layout")."""

    name = "kernel"

    def __init__(self, config):
        from . import kernel
        from .fastemu import anf_tables
        self._kernel = kernel
        self.width, self.height = w, h = config.width, config.height
        self._hg, self._nw = h // 2, (w // 2 + 63) // 64
        self.planes = np.zeros((16, (self._hg + 2) * self._nw), dtype=np.uint64)
        self.coef = kernel.pack_coefficients(anf_tables(config.luts), w, h)
        self.plan = kernel.make_plan(w, h, threads=1)
        kernel.warm_up()        # load the machine code now, not in the first exchange period
        # [parity, direction, group, padded row, word]
        self._view = self.planes.reshape(2, 4, 2, self._hg + 2, self._nw)

    def advance(self, phase, inputs):
        inputs = np.ascontiguousarray(inputs, dtype=np.uint8)
        outputs = np.empty_like(inputs)
        self._kernel.advance(self.planes, self.coef, self.width, self.height, phase, inputs,
                             outputs, plan=self.plan)
        return outputs

    def begin(self):
        pass

    end = begin

    def _words(self, rows, cols):
        """The blocks ``(p, g, o)`` and the word range holding the even-aligned region."""
        i0, i1 = cols.start // 2, cols.stop // 2
        w0, w1 = i0 // 64, (i1 - 1) // 64 + 1
        j = slice(1 + rows.start // 2, 1 + rows.stop // 2)
        return j, slice(w0, w1), i0 - 64 * w0, i1 - 64 * w0

    def read(self, rows, cols):
        j, words, a, b = self._words(rows, cols)
        raw = np.ascontiguousarray(self._view[:, :, :, j, words]).view(np.uint8)
        bits = np.unpackbits(raw, axis=-1, bitorder="little")[..., a:b]    # [p, d, g, j, i]
        out = np.empty((4, rows.stop - rows.start, cols.stop - cols.start), dtype=np.uint8)
        for p in range(2):
            for g in range(2):
                out[:, g::2, (p + g) % 2::2] = bits[p, :, g]
        return out

    def write(self, rows, cols, values):
        j, words, a, b = self._words(rows, cols)
        block = np.ascontiguousarray(self._view[:, :, :, j, words])
        bits = np.unpackbits(block.view(np.uint8), axis=-1, bitorder="little")
        for p in range(2):
            for g in range(2):
                bits[p, :, g, :, a:b] = values[:, g::2, (p + g) % 2::2]
        packed = np.packbits(bits, axis=-1, bitorder="little")
        self._view[:, :, :, j, words] = packed.view(np.uint64)


def _engine(config, name):
    """The engine running emulator ``name`` (one of :data:`EMULATORS` but ``"auto"``) on a
    tile ``config``."""
    if name == "kernel":
        from .kernel import available
        if not available():
            raise ValueError("the 'kernel' emulator needs numba (pip install numba); use 'fast' or "
                             "'reference'")
        return _KernelEngine(config)
    return _EmulatorEngine(config, name)


def _auto_emulator(cells):
    from .kernel import available
    if available():
        return "kernel"
    return "fast" if cells >= FAST_MIN_CELLS else "reference"


# -- One rank's tile ---------------------------------------------------------------------------

class RankStats(typing.NamedTuple):
    """What one rank did, for the communication-to-computation ratio (docs/performance.md).

    ``cell_updates``: cells evaluated (extended tile, halo included: half its cells per
    subcycle); ``tile_cell_updates``: those of its own tile; ``exchanges``: rounds of messages,
    refreshes of the seams (one per subcycle) or of the halos (one per ``halo`` subcycles); ``messages`` and ``bytes_sent``: payload sent to neighbours (the
    gathering of the results is not counted); ``compute_s``, ``exchange_s``, ``wall_s``:
    seconds of advancing the emulator, of exchanging (waiting included) and of all the
    subcycles (from a barrier after every rank built its tile; the gathering not included);
    ``cpu_s``: the process's CPU seconds over the same span (waiting included: MPI spins, or
    the poll yields); ``setup_s``: seconds of building the tile's emulator."""
    rank: int
    tile: tuple
    extended: tuple
    cell_updates: int
    tile_cell_updates: int
    exchanges: int
    messages: int
    bytes_sent: int
    compute_s: float
    exchange_s: float
    wall_s: float
    cpu_s: float
    setup_s: float


class Tile:
    """Rank ``rank``'s part of a run: its tile of ``decomposition`` plus the halo (the
    *extended tile*), and, after :meth:`build`, the engine that runs it.

    :param halo: subcycles between exchanges (see the module docstring).
    :ivar extent: ``(x, y, width, height)`` of the extended tile in the grid.
    """

    def __init__(self, decomposition, rank, *, halo=1):
        self.decomposition = d = decomposition
        self.rank = rank
        self.col, self.row = col, row = d.tile(rank)
        self.x0, self.x1, self.y0, self.y1 = d.bounds(col, row)
        self.halo = halo
        self.depth = depth = check_halo(d, halo)
        # Neighbour ranks by side (None at the grid's edge).
        self.neighbours = {"n": d.rank(col, row - 1), "e": d.rank(col + 1, row),
                           "s": d.rank(col, row + 1), "w": d.rank(col - 1, row)}
        #: The orthogonal and the diagonal neighbours (a halo's corners come from these).
        self.neighbours_all = dict(self.neighbours, ne=d.rank(col + 1, row - 1),
                                   nw=d.rank(col - 1, row - 1), se=d.rank(col + 1, row + 1),
                                   sw=d.rank(col - 1, row + 1))
        pad = {side: depth if self.neighbours[side] is not None else 0 for side in _SIDES}
        # The extended tile, in grid coordinates, and the tile inside it (local coordinates).
        self.ex0, self.ex1 = self.x0 - pad["w"], self.x1 + pad["e"]
        self.ey0, self.ey1 = self.y0 - pad["n"], self.y1 + pad["s"]
        self.lx0, self.lx1 = pad["w"], pad["w"] + self.x1 - self.x0
        self.ly0, self.ly1 = pad["n"], pad["n"] + self.y1 - self.y0
        self.ew, self.eh = ew, eh = self.ex1 - self.ex0, self.ey1 - self.ey0
        self.extent = (self.ex0, self.ey0, ew, eh)
        self.inner = [side for side in _SIDES if self.neighbours[side] is not None]
        self.outer = [side for side in _SIDES if self.neighbours[side] is None]
        self._grid = _lane_slices(d.width, d.height)
        self._local = _lane_slices(ew, eh)
        self.engine = None

    def build(self, region, emulator="auto"):
        """Make the engine of the extended tile; returns the tile.

        :param region: the extended tile's :class:`~bitgrid.config.Configuration` (the grid's
            ``config.region(*tile.extent)``).
        :param emulator: one of :data:`EMULATORS`.
        """
        if emulator not in EMULATORS:
            raise ValueError(f"emulator must be one of {', '.join(EMULATORS)}, not "
                             f"{emulator!r}")
        if (region.width, region.height) != (self.ew, self.eh):
            raise ValueError(f"the extended tile is {self.ew} x {self.eh} cells, not "
                             f"{region.width} x {region.height}")
        if emulator == "auto":
            emulator = _auto_emulator(self.ew * self.eh)
        #: The engine of the extended tile (``.name``: the emulator's name).
        self.engine = _engine(region, emulator)
        return self

    def _span(self, side):
        """The extended tile's lanes of ``side`` in grid lanes, and the tile's own lanes in the
        extended tile's: ``(grid slice, tile slice)``."""
        if side in "ns":
            return slice(self.ex0, self.ex1), slice(self.lx0, self.lx1)
        return slice(self.ey0, self.ey1), slice(self.ly0, self.ly1)

    def inputs(self, stimulus, t0, t1):
        """The extended tile's edge inputs of subcycles ``t0`` to ``t1 - 1``, a lane array:
        its outer sides cut from the whole grid's ``stimulus`` lane array, the inner sides 0."""
        block = np.zeros((t1 - t0, 2 * (self.ew + self.eh)), dtype=np.uint8)
        for side in self.outer:
            span = self._span(side)[0]
            grid = self._grid[side]
            block[:, self._local[side]] = stimulus[t0:t1, grid][:, span]
        return block

    def record(self, outputs, t0, recorded):
        """Copy the tile's own lanes of its outer sides from the extended tile's ``outputs``
        (a lane array of subcycles ``t0``...) into ``recorded`` (``{side: (T, lanes)}``)."""
        for side in self.outer:
            own = self._span(side)[1]
            recorded[side][t0:t0 + len(outputs)] = outputs[:, self._local[side]][:, own]

    def lanes(self, side):
        """Lanes of the tile's (and, in seam mode, the extended tile's) side ``side``."""
        return self.x1 - self.x0 if side in "ns" else self.y1 - self.y0


# -- Messages ----------------------------------------------------------------------------------

def _waitall(MPI, requests, spin):
    if spin:
        MPI.Request.Waitall(requests)
        return
    while not MPI.Request.Testall(requests):
        os.sched_yield()


def _oversubscribed(MPI, comm):
    """True if this node runs more ranks of ``comm`` than this process may use cores."""
    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        ranks = local.Get_size()
    finally:
        local.Free()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        cores = os.cpu_count() or 1
    return ranks > cores


_OPPOSITE = {"n": "s", "s": "n", "e": "w", "w": "e", "ne": "sw", "sw": "ne", "nw": "se",
             "se": "nw"}
_CONFIG_TAG = 100          # the extended tile's configuration, from the root
# The tag of a message: the direction it arrives from.
_TAG = {"n": 1, "e": 2, "s": 3, "w": 4, "ne": 5, "nw": 6, "se": 7, "sw": 8}


class _Exchanger:
    """Preallocated buffers and a counter of what was sent."""

    def __init__(self, MPI, comm, spin):
        self.MPI, self.comm, self.spin = MPI, comm, spin
        self.messages = self.bytes = self.exchanges = 0
        self.seconds = 0.0

    def prepare(self, sends, receives):
        """Persistent requests for ``receives`` (``[(rank, side, buffer)]``, ``side`` the side
        the message arrives on) and ``sends`` (``[(rank, side, buffer)]``, ``side`` the side it
        leaves by): set up once, started by every :meth:`swap`."""
        comm = self.comm
        requests = [comm.Recv_init(buf, source=rank, tag=_TAG[side])
                    for rank, side, buf in receives]
        requests += [comm.Send_init(buf, dest=rank, tag=_TAG[_OPPOSITE[side]])
                     for rank, side, buf in sends]
        return requests, len(sends), sum(buf.nbytes for _, _, buf in sends)

    def swap(self, prepared):
        """Start the requests of :meth:`prepare` and wait for all of them."""
        started = time.perf_counter()
        requests, count, nbytes = prepared
        if requests:
            self.MPI.Prequest.Startall(requests)
            _waitall(self.MPI, requests, self.spin)
        self.messages += count
        self.bytes += nbytes
        self.seconds += time.perf_counter() - started

    @staticmethod
    def release(prepared):
        for request in prepared[0]:
            request.Free()


#: Subcycles of stimulus cut out per block in the seam exchange (bounds the memory).
_BLOCK = 1024


def _run_seam(tile, stimulus, steps, exchanger, recorded):
    """Seam exchange: every subcycle, each inner side's edge-output lanes to its neighbour."""
    engine, local = tile.engine, tile._local
    inner = tile.inner
    send = {side: np.zeros((tile.lanes(side) + 7) // 8, dtype=np.uint8) for side in inner}
    recv = {side: np.zeros_like(send[side]) for side in inner}
    prepared = exchanger.prepare([(tile.neighbours[s], s, send[s]) for s in inner],
                                 [(tile.neighbours[s], s, recv[s]) for s in inner])
    current = np.zeros(2 * (tile.ew + tile.eh), dtype=np.uint8)    # edge outputs after reset
    compute = 0.0
    for t0 in range(0, steps, _BLOCK):
        t1 = min(t0 + _BLOCK, steps)
        block = tile.inputs(stimulus, t0, t1)
        out = np.empty_like(block)
        for u in range(t1 - t0):
            if inner:
                for side in inner:
                    send[side][:] = np.packbits(current[local[side]], bitorder="little")
                exchanger.swap(prepared)
                exchanger.exchanges += 1
                row = block[u]
                for side in inner:
                    row[local[side]] = np.unpackbits(recv[side], count=tile.lanes(side),
                                                     bitorder="little")
            started = time.perf_counter()
            current = out[u] = engine.advance((t0 + u) % 2, block[u:u + 1])[0]
            compute += time.perf_counter() - started
        tile.record(out, t0, recorded)
    exchanger.release(prepared)
    return compute


def _strips(tile):
    """The halo exchange plan: ``[(direction, rank, send region, receive region)]``, one per
    neighbour (4 sides and the diagonal ones), each region ``(rows, cols)`` in local
    coordinates of the extended tile: the tile's own strip (or corner block) next to that
    neighbour, and the halo strip (or corner) that comes from it."""
    d, ly0, ly1, lx0, lx1 = tile.depth, tile.ly0, tile.ly1, tile.lx0, tile.lx1
    own = {"n": slice(ly0, ly0 + d), "s": slice(ly1 - d, ly1),
           "w": slice(lx0, lx0 + d), "e": slice(lx1 - d, lx1)}
    halo = {"n": slice(ly0 - d, ly0), "s": slice(ly1, ly1 + d),
            "w": slice(lx0 - d, lx0), "e": slice(lx1, lx1 + d)}
    rows, cols = slice(ly0, ly1), slice(lx0, lx1)
    plan = []
    for direction, rank in tile.neighbours_all.items():
        if rank is None:
            continue
        if direction in ("n", "s"):
            plan.append((direction, rank, (own[direction], cols), (halo[direction], cols)))
        elif direction in ("e", "w"):
            plan.append((direction, rank, (rows, own[direction]), (rows, halo[direction])))
        else:                                       # a corner: "ne" is rows n, columns e
            r, c = direction
            plan.append((direction, rank, (own[r], own[c]), (halo[r], halo[c])))
    return plan


def _cells(region):
    rows, cols = region
    return 4 * (rows.stop - rows.start) * (cols.stop - cols.start)


def _shape(region):
    rows, cols = region
    return (4, rows.stop - rows.start, cols.stop - cols.start)


def _run_halo(tile, stimulus, steps, exchanger, recorded):
    """k-deep halos: refresh the halos (one round of messages to the up to 8 neighbours), then
    ``halo`` subcycles in one call of the engine."""
    engine, k = tile.engine, tile.halo
    plan = _strips(tile)
    send = {dn: np.zeros((_cells(own) + 7) // 8, dtype=np.uint8) for dn, _, own, _ in plan}
    recv = {dn: np.zeros_like(buf) for dn, buf in send.items()}
    prepared = exchanger.prepare([(rank, dn, send[dn]) for dn, rank, _, _ in plan],
                                 [(rank, dn, recv[dn]) for dn, rank, _, _ in plan])
    compute = 0.0
    for t0 in range(0, steps, k):
        t1 = min(t0 + k, steps)
        if plan:
            engine.begin()
            for dn, _, own, _ in plan:
                send[dn][:] = np.packbits(engine.read(*own), axis=None)
            exchanger.swap(prepared)
            for dn, _, _, halo in plan:
                values = np.unpackbits(recv[dn], count=_cells(halo)).reshape(_shape(halo))
                engine.write(*halo, values)
            engine.end()
            exchanger.exchanges += 1
        block = tile.inputs(stimulus, t0, t1)
        started = time.perf_counter()
        out = engine.advance(t0 % 2, block)
        compute += time.perf_counter() - started
        tile.record(out, t0, recorded)
    exchanger.release(prepared)
    return compute


# -- The run -----------------------------------------------------------------------------------

class MpiRun(typing.NamedTuple):
    """The result of :func:`run` on each rank.

    ``outputs``: on the root, the whole grid's edge outputs after each subcycle as a lane
    array ``(T, 2 * (W + H))`` of ``uint8`` (the format of :mod:`bitgrid.kernel`: buses N, E,
    S, W, one byte per lane); ``None`` elsewhere. ``stats``: on the root, one
    :class:`RankStats` per rank (rank order); elsewhere this rank's alone. ``decomposition``,
    ``halo`` and ``emulator`` (the root tile's) say how it ran."""
    outputs: typing.Optional[np.ndarray]
    stats: list
    decomposition: Decomposition
    halo: int
    emulator: str

    def edges(self):
        """The root's outputs as a list of :class:`Edges`, one per subcycle (None elsewhere)."""
        if self.outputs is None:
            return None
        from .kernel import lanes_to_edges
        d = self.decomposition
        return lanes_to_edges(self.outputs, d.width, d.height)


def on_root(comm, function, root=0):
    """Run ``function()`` on the root rank only and give its result to every rank (collective).

    If it raises, the root re-raises the exception and every other rank raises
    :class:`SystemExit` with status 2 (quietly: the root reports the error), so that a bad file
    read on the root never leaves the other ranks waiting.
    """
    comm = _world(comm)
    if comm.Get_rank() == root:
        try:
            result = function()
        except BaseException:
            comm.bcast((False, None), root=root)
            raise
        comm.bcast((True, result), root=root)
        return result
    ok, result = comm.bcast(None, root=root)
    if not ok:
        raise SystemExit(2)
    return result



def run(config, inputs, *, comm=None, procs=None, halo=1, emulator="auto", wait=None,
        root=0):
    """Run ``config`` on the ranks of ``comm``, one tile each, with edge inputs ``inputs``
    (collective; SPEC sections 2-4 and 8).

    :param config: the whole grid's :class:`~bitgrid.config.Configuration` (root; ``None``
        elsewhere).
    :param inputs: the edge inputs of each subcycle (root; ``None`` elsewhere): a list of
        anything :meth:`Edges.coerce` takes, or a lane array ``(T, 2 * (W + H))`` of 0/1
        (:mod:`bitgrid.kernel`). At least one subcycle.
    :param comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).
    :param procs: the tile shape ``"COLSxROWS"`` or a :class:`~bitgrid.mesh.MeshShape` with
        ``COLS * ROWS`` equal to the ranks; default :meth:`Decomposition.choose`.
    :param halo: subcycles between exchanges: 1 the seam exchange, ``k >= 2`` a halo of
        :func:`halo_depth` cells (at most the smallest tile's side).
    :param emulator: the emulator of each tile, one of :data:`EMULATORS`.
    :param wait: ``"spin"`` (wait inside MPI) or ``"yield"`` (poll, yielding the processor);
        default ``$BITGRID_MPI_WAIT``, else ``"yield"`` when this node runs more ranks than
        it has cores and ``"spin"`` otherwise.
    :returns: :class:`MpiRun` (outputs gathered on the root).
    :raises ValueError: on every rank, for a shape, halo, emulator or stimulus that does not fit
        (checked on the root first, before any tile is built).
    """
    MPI = import_mpi()
    comm = _world(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    if wait not in (None, "spin", "yield"):
        raise ValueError(f"wait must be 'spin' or 'yield', not {wait!r}")
    if emulator not in EMULATORS:
        raise ValueError(f"emulator must be one of {', '.join(EMULATORS)}, not {emulator!r}")

    def plan():
        from .kernel import available, edges_to_lanes, lane_count
        if not isinstance(config, Configuration):
            raise TypeError(f"run needs a Configuration on the root rank, not {config!r}")
        if emulator == "kernel" and not available():
            raise ValueError("the 'kernel' emulator needs numba (pip install numba); use 'fast' or "
                             "'reference'")
        w, h = config.width, config.height
        decomposition = (Decomposition.choose(w, h, size) if procs is None
                         else Decomposition(w, h, procs))
        if len(decomposition) != size:
            raise ValueError(f"--procs {decomposition.shape} makes {len(decomposition)} tiles "
                             f"for {size} ranks: give COLSxROWS with COLS * ROWS = {size}")
        check_halo(decomposition, halo)
        if isinstance(inputs, np.ndarray):
            lanes = np.asarray(inputs)
            if lanes.ndim != 2 or lanes.shape[1] != lane_count(w, h) or (lanes > 1).any():
                raise ValueError(f"a lane array of inputs has shape (subcycles, "
                                 f"{lane_count(w, h)}) and values 0 and 1")
        else:
            lanes = edges_to_lanes(list(inputs), w, h)
        if not len(lanes):
            raise ValueError("nothing to run: give at least one subcycle of edge inputs")
        # Packed for the broadcast: 1 bit per lane.
        packed = np.packbits(lanes.astype(np.uint8), axis=1, bitorder="little")
        return decomposition, packed, lanes.shape[1]

    # Checked on the root; a failure there raises the same error on every rank.
    decomposition, packed, count = _share_checked(comm, plan, root)
    stimulus = np.unpackbits(packed, axis=1, count=count, bitorder="little")
    steps = len(stimulus)
    wait = wait or os.environ.get("BITGRID_MPI_WAIT") or None
    if wait not in (None, "spin", "yield"):
        raise ValueError(f"$BITGRID_MPI_WAIT must be 'spin' or 'yield', not {wait!r}")
    spin = (wait == "spin") if wait is not None else not _oversubscribed(MPI, comm)
    started = time.perf_counter()
    tile = Tile(decomposition, rank, halo=halo)
    # Each rank gets the configuration of its extended tile alone, never the whole grid's.
    if rank == root:
        for other in range(size):
            if other != root:
                extent = Tile(decomposition, other, halo=halo).extent
                comm.send(config.region(*extent), dest=other, tag=_CONFIG_TAG)
        region = config.region(*tile.extent)
    else:
        region = comm.recv(source=root, tag=_CONFIG_TAG)
    tile.build(region, emulator)
    recorded = {side: np.zeros((steps, tile.lanes(side)), dtype=np.uint8) for side in tile.outer}
    setup = time.perf_counter() - started
    comm.Barrier()                  # every tile built: the timed run starts together
    started, cpu = time.perf_counter(), time.process_time()
    exchanger = _Exchanger(MPI, comm, spin)
    body = _run_seam if tile.depth == 0 else _run_halo
    compute = body(tile, stimulus, steps, exchanger, recorded)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    tw, th = tile.x1 - tile.x0, tile.y1 - tile.y0
    stats = RankStats(rank=rank, tile=(tile.col, tile.row),
                      extended=(tile.ex0, tile.ey0, tile.ew, tile.eh),
                      cell_updates=tile.ew * tile.eh // 2 * steps,
                      tile_cell_updates=tw * th // 2 * steps,
                      exchanges=exchanger.exchanges, messages=exchanger.messages,
                      bytes_sent=exchanger.bytes, compute_s=compute,
                      exchange_s=exchanger.seconds, wall_s=wall, cpu_s=cpu,
                      setup_s=setup)
    pieces = comm.gather((stats, (tile.x0, tile.y0), recorded), root=root)
    if rank != root:
        return MpiRun(None, [stats], decomposition, halo, tile.engine.name)
    return MpiRun(_assemble(pieces, decomposition, steps), [p[0] for p in pieces],
                  decomposition, halo, tile.engine.name)

def _share_checked(comm, plan, root):
    """:func:`on_root` for :func:`run`: an error found on the root is raised on every rank (the
    same ValueError or TypeError), as a library call expects."""
    if comm.Get_rank() == root:
        try:
            result = plan()
        except (ValueError, TypeError) as error:
            comm.bcast((False, error), root=root)
            raise
        comm.bcast((True, result), root=root)
        return result
    ok, result = comm.bcast(None, root=root)
    if not ok:
        raise result
    return result



def _assemble(pieces, decomposition, steps):
    """The whole grid's edge outputs (a lane array) from each tile's outer-side lanes."""
    from .kernel import lane_count
    w, h = decomposition.width, decomposition.height
    out = np.zeros((steps, lane_count(w, h)), dtype=np.uint8)
    grid = _lane_slices(w, h)
    for _, (x0, y0), recorded in pieces:
        for side, lanes in recorded.items():
            first = grid[side].start + (x0 if side in "ns" else y0)
            out[:, first:first + lanes.shape[1]] = lanes
    return out


def run_edges(config, inputs, **options):
    """:func:`run`, returning the list of output :class:`Edges` on the root (``None``
    elsewhere): the form of :meth:`bitgrid.emulator.Emulator.run`."""
    return run(config, inputs, **options).edges()
