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
    subcycles it has not reached the tile. Then the halos are refreshed from the neighbours, in
    two steps so that the corners come from the diagonal neighbours: first E and W (strips
    ``h`` cells wide, the tile's rows), then N and S (strips ``h`` rows deep, the whole extended
    width, E/W halos included). Each strip carries the 4 outputs of its cells: ``4 * h * L``
    bits per inner side and exchange, for ``k`` subcycles; the price is fewer, larger messages
    (latency paid once per ``k`` subcycles) and the halo's cells evaluated redundantly.

Engines
    Each tile runs on :class:`bitgrid.emulator.Emulator` (``engine="reference"``) or
    :class:`bitgrid.fastemu.FastEmulator` (``"fast"``); ``"auto"`` takes the fast one for tiles
    of at least :data:`FAST_MIN_CELLS` cells.

Waiting
    On a machine with more ranks than cores (the tests run 9 ranks on 2 cores), a rank that
    waits for a message yields the processor between polls instead of spinning in MPI, so
    that the rank it waits for can run (``wait="yield"``, the default there).

The stimulus and the configuration are needed on the root rank only (others pass ``None``);
they are broadcast. Every function here that takes ``comm`` is collective: all ranks of
``comm`` call it together.
"""

import os
import time
import typing

import numpy as np

from .checks import check_int
from .config import Configuration, check_grid_size
from .mesh import MeshShape
from .terms import Edges

__all__ = ["Decomposition", "Tile", "RankStats", "MpiRun", "run", "run_edges", "halo_depth",
           "check_halo", "on_root", "import_mpi", "find_mpiexec", "mpiexec_command", "FAST_MIN_CELLS", "ENGINES"]

#: ``engine="auto"`` runs tiles of at least this many cells (halo included) on the
#: bit-parallel :class:`~bitgrid.fastemu.FastEmulator`, smaller ones on the reference.
FAST_MIN_CELLS = 256 * 256

#: Per-tile engines: ``"auto"``, ``"reference"`` (Emulator), ``"fast"`` (FastEmulator).
ENGINES = ("auto", "reference", "fast")

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


# -- Stimulus as lane bits ---------------------------------------------------------------------

def _word_array(words, lanes):
    """Python int words -> uint8 lane bits ``(len(words), lanes)``."""
    nbytes = (lanes + 7) // 8
    raw = b"".join(int(w).to_bytes(nbytes, "little") for w in words)
    raw = np.frombuffer(raw, dtype=np.uint8).reshape(len(words), nbytes)
    return np.unpackbits(raw, axis=1, count=lanes, bitorder="little")


def _array_words(bits):
    """uint8 lane bits ``(T, lanes)`` -> a list of ``T`` Python int words."""
    packed = np.packbits(bits, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]


def _stimulus_bits(inputs, width, height):
    """``{side: (T, lanes) uint8}`` of a list of :class:`Edges` (checked against the lanes)."""
    edges = [Edges.coerce(e).check_lanes(width, height) for e in inputs]
    lanes = {"n": width, "s": width, "e": height, "w": height}
    return {side: _word_array([getattr(e, side) for e in edges], lanes[side])
            for side in _SIDES}


# -- One rank's tile ---------------------------------------------------------------------------

class RankStats(typing.NamedTuple):
    """What one rank did, for the communication-to-computation ratio (docs/performance.md).

    ``cell_updates``: cells evaluated (extended tile, halo included: half its cells per
    subcycle); ``tile_cell_updates``: those of its own tile; ``exchanges``: refreshes of the
    seams (one per subcycle) or of the halos (one per ``halo`` subcycles, in two rounds of
    messages: E/W, then N/S); ``messages`` and ``bytes_sent``: payload sent to neighbours (the gathering of the
    results is not counted); ``compute_s``, ``exchange_s``, ``wall_s``: seconds of stepping the
    emulator, of exchanging (waiting included) and of all the subcycles (from a barrier after
    every rank built its tile; the gathering not included); ``setup_s``: seconds of building
    the tile's emulator and its inputs."""
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
    setup_s: float


class Tile:
    """Rank ``rank``'s part of a run: its tile of ``decomposition`` plus the halo, and the
    emulator of that extended tile.

    :param config: the whole grid's :class:`~bitgrid.config.Configuration`.
    :param halo: subcycles between exchanges (see the module docstring).
    :param engine: one of :data:`ENGINES`.
    """

    def __init__(self, config, decomposition, rank, *, halo=1, engine="auto"):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        self.decomposition = d = decomposition
        self.rank = rank
        self.col, self.row = col, row = d.tile(rank)
        self.x0, self.x1, self.y0, self.y1 = d.bounds(col, row)
        self.halo = halo
        self.depth = depth = check_halo(d, halo)
        # Neighbour ranks by side (None at the grid's edge).
        self.neighbours = {"n": d.rank(col, row - 1), "e": d.rank(col + 1, row),
                           "s": d.rank(col, row + 1), "w": d.rank(col - 1, row)}
        pad = {side: depth if self.neighbours[side] is not None else 0 for side in _SIDES}
        self.pad = pad
        # The extended tile, in grid coordinates, and the tile inside it (local coordinates).
        self.ex0, self.ex1 = self.x0 - pad["w"], self.x1 + pad["e"]
        self.ey0, self.ey1 = self.y0 - pad["n"], self.y1 + pad["s"]
        self.lx0, self.lx1 = pad["w"], pad["w"] + self.x1 - self.x0
        self.ly0, self.ly1 = pad["n"], pad["n"] + self.y1 - self.y0
        ew, eh = self.ex1 - self.ex0, self.ey1 - self.ey0
        region = config.region(self.ex0, self.ey0, ew, eh)
        if engine == "auto":
            engine = "fast" if ew * eh >= FAST_MIN_CELLS else "reference"
        self.engine = engine
        if engine == "fast":
            from .fastemu import FastEmulator
            self.emulator = FastEmulator(region, threads=1)
        else:
            from .emulator import Emulator
            self.emulator = Emulator(region)

    @property
    def outer(self):
        """The sides of the tile on the grid's edge: those that take the run's edge inputs and
        give its edge outputs."""
        return [side for side in _SIDES if self.neighbours[side] is None]

    def inputs(self, bits):
        """This extended tile's edge-input words for every subcycle: ``{side: [int] * T}`` for
        its outer sides, cut from the whole grid's lane bits ``bits`` (``{side: (T, lanes)}``)."""
        cut = {"n": (self.ex0, self.ex1), "s": (self.ex0, self.ex1),
               "e": (self.ey0, self.ey1), "w": (self.ey0, self.ey1)}
        return {side: _array_words(bits[side][:, slice(*cut[side])]) for side in self.outer}

    def lanes(self, side):
        """``(shift, mask)`` that take the tile's own lanes of side ``side`` out of the
        extended tile's edge word."""
        first, count = ((self.lx0, self.x1 - self.x0) if side in "ns"
                        else (self.ly0, self.y1 - self.y0))
        return first, (1 << count) - 1


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


_OPPOSITE = {"n": "s", "s": "n", "e": "w", "w": "e"}
_TAG = {"n": 1, "e": 2, "s": 3, "w": 4}     # tag of a message by the side it arrives on


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


def _run_seam(tile, words, steps, exchanger, record):
    """Seam exchange: every subcycle, each inner side's edge-output lanes to its neighbour."""
    emulator = tile.emulator
    inner = [side for side in _SIDES if tile.neighbours[side] is not None]
    lanes = {side: (tile.x1 - tile.x0 if side in "ns" else tile.y1 - tile.y0) for side in inner}
    send = {side: np.zeros((lanes[side] + 7) // 8, dtype=np.uint8) for side in inner}
    recv = {side: np.zeros((lanes[side] + 7) // 8, dtype=np.uint8) for side in inner}
    prepared = exchanger.prepare([(tile.neighbours[s], s, send[s]) for s in inner],
                                 [(tile.neighbours[s], s, recv[s]) for s in inner])
    outer = {side: words[side] for side in tile.outer}
    current = emulator.edge_outputs()
    compute = 0.0
    for t in range(steps):
        if inner:
            for side in inner:
                nbytes = send[side].nbytes
                send[side][:] = np.frombuffer(getattr(current, side).to_bytes(nbytes, "little"),
                                              dtype=np.uint8)
            exchanger.swap(prepared)
            exchanger.exchanges += 1
        given = {side: int.from_bytes(recv[side].tobytes(), "little") for side in inner}
        for side, column in outer.items():
            given[side] = column[t]
        started = time.perf_counter()
        current = emulator.step(Edges(**given))
        compute += time.perf_counter() - started
        record(current)
    exchanger.release(prepared)
    return compute


def _strips(tile):
    """The halo exchange plan: ``[(phase, side, send slices, receive slices)]`` in local
    coordinates of the extended tile's ``(4, height, width)`` state; phase 0 is E/W, 1 is N/S."""
    d, ly0, ly1, lx0, lx1 = tile.depth, tile.ly0, tile.ly1, tile.lx0, tile.lx1
    whole = slice(None)
    plan = []
    for side in "ew":
        if tile.neighbours[side] is None:
            continue
        rows = slice(ly0, ly1)
        own = slice(lx1 - d, lx1) if side == "e" else slice(lx0, lx0 + d)
        halo = slice(lx1, lx1 + d) if side == "e" else slice(lx0 - d, lx0)
        plan.append((0, side, (whole, rows, own), (whole, rows, halo)))
    for side in "ns":
        if tile.neighbours[side] is None:
            continue
        own = slice(ly1 - d, ly1) if side == "s" else slice(ly0, ly0 + d)
        halo = slice(ly1, ly1 + d) if side == "s" else slice(ly0 - d, ly0)
        plan.append((1, side, (whole, own, whole), (whole, halo, whole)))
    return plan


def _state(emulator):
    """The emulator's cell outputs ``(4, H, W)`` as an array to change in place, and the
    function that puts a changed array back."""
    from .emulator import Emulator
    if isinstance(emulator, Emulator):
        return emulator.outputs, lambda state: None       # a view of its state
    state = emulator.outputs                               # a fresh, unpacked copy

    def commit(changed):
        emulator.outputs = changed
    return state, commit


def _run_halo(tile, words, steps, exchanger, record):
    """k-deep halos: refresh the halos, then ``halo`` subcycles without messages."""
    emulator, k = tile.emulator, tile.halo
    plan = _strips(tile)
    shapes = {}
    for _, side, own, _ in plan:
        probe = np.zeros((4, tile.ey1 - tile.ey0, tile.ex1 - tile.ex0), dtype=np.uint8)[own]
        shapes[side] = probe.shape
    send = {side: np.zeros((int(np.prod(s)) + 7) // 8, dtype=np.uint8)
            for side, s in shapes.items()}
    recv = {side: np.zeros_like(buf) for side, buf in send.items()}
    phases = [[p for p in plan if p[0] == phase] for phase in (0, 1)]
    prepared = [exchanger.prepare([(tile.neighbours[s], s, send[s]) for _, s, _, _ in strips],
                                  [(tile.neighbours[s], s, recv[s]) for _, s, _, _ in strips])
                for strips in phases]
    outer = {side: words[side] for side in tile.outer}
    compute = 0.0
    t = 0
    while t < steps:
        if plan:
            state, commit = _state(emulator)
            for phase, strips in enumerate(phases):
                if not strips:
                    continue
                for _, side, own, _ in strips:
                    send[side][:] = np.packbits(state[own], axis=None)
                exchanger.swap(prepared[phase])
                for _, side, _, halo in strips:
                    count = int(np.prod(shapes[side]))
                    state[halo] = np.unpackbits(recv[side], count=count).reshape(shapes[side])
            commit(state)
            exchanger.exchanges += 1
        started = time.perf_counter()
        for u in range(t, min(t + k, steps)):
            given = {side: column[u] for side, column in outer.items()}
            record(emulator.step(Edges(**given)))
        compute += time.perf_counter() - started
        t = min(t + k, steps)
    for requests in prepared:
        exchanger.release(requests)
    return compute


# -- The run -----------------------------------------------------------------------------------

class MpiRun(typing.NamedTuple):
    """The result of :func:`run` on each rank.

    ``outputs``: on the root, ``{side: (T, lanes) uint8}`` lane bits of the whole grid's edge
    outputs after each subcycle (``"n", "e", "s", "w"``); ``None`` elsewhere. ``stats``: on the
    root, one :class:`RankStats` per rank (rank order); elsewhere this rank's alone.
    ``decomposition``, ``halo`` and ``engine`` (of the root's tile) say how it ran."""
    outputs: typing.Optional[dict]
    stats: list
    decomposition: Decomposition
    halo: int
    engine: str

    def edges(self):
        """The root's outputs as a list of :class:`Edges`, one per subcycle (None elsewhere)."""
        if self.outputs is None:
            return None
        columns = {side: _array_words(bits) for side, bits in self.outputs.items()}
        return [Edges(*words) for words in zip(*(columns[s] for s in _SIDES))]


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


def run(config, inputs, *, comm=None, procs=None, halo=1, engine="auto", wait=None, root=0):
    """Run ``config`` on the ranks of ``comm``, one tile each, with edge inputs ``inputs``
    (collective; SPEC sections 2-4 and 8).

    :param config: the whole grid's :class:`~bitgrid.config.Configuration` (root; ``None``
        elsewhere).
    :param inputs: the edge inputs of each subcycle, a list of anything :meth:`Edges.coerce`
        takes (root; ``None`` elsewhere). At least one.
    :param comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).
    :param procs: the tile shape ``"COLSxROWS"`` or a :class:`~bitgrid.mesh.MeshShape` with
        ``COLS * ROWS`` equal to the ranks; default :meth:`Decomposition.choose`.
    :param halo: subcycles between exchanges: 1 the seam exchange, ``k >= 2`` a halo of
        :func:`halo_depth` cells (at most the smallest tile's side).
    :param engine: per-tile emulator, one of :data:`ENGINES`.
    :param wait: ``"spin"`` (wait inside MPI) or ``"yield"`` (poll, yielding the processor);
        default ``"yield"`` when this node runs more ranks than it has cores.
    :returns: :class:`MpiRun` (outputs gathered on the root).
    :raises ValueError: on every rank, for a shape, halo or stimulus that does not fit (checked
        on the root first, before any tile is built).
    """
    MPI = import_mpi()
    comm = _world(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    if wait not in (None, "spin", "yield"):
        raise ValueError(f"wait must be 'spin' or 'yield', not {wait!r}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")

    def plan():
        if not isinstance(config, Configuration):
            raise TypeError(f"run needs a Configuration on the root rank, not {config!r}")
        decomposition = (Decomposition.choose(config.width, config.height, size)
                         if procs is None else Decomposition(config.width, config.height, procs))
        if len(decomposition) != size:
            raise ValueError(f"--procs {decomposition.shape} makes {len(decomposition)} tiles "
                             f"for {size} ranks: give COLSxROWS with COLS * ROWS = {size}")
        check_halo(decomposition, halo)
        stream = list(inputs)
        if not stream:
            raise ValueError("nothing to run: give at least one subcycle of edge inputs")
        bits = _stimulus_bits(stream, config.width, config.height)
        return config, decomposition, bits

    # Checked on the root; a failure there raises the same error on every rank.
    checked = _share_checked(comm, plan, root)
    config_, decomposition, bits = checked
    spin = (wait == "spin") if wait is not None else not _oversubscribed(MPI, comm)
    started = time.perf_counter()
    tile = Tile(config_, decomposition, rank, halo=halo, engine=engine)
    steps = bits["n"].shape[0]
    words = tile.inputs(bits)
    setup = time.perf_counter() - started
    comm.Barrier()                  # every tile built: the timed run starts together
    started = time.perf_counter()
    outer = tile.outer
    lanes = {side: tile.lanes(side) for side in outer}
    recorded = {side: [] for side in outer}

    def record(edges):
        for side in outer:
            shift, mask = lanes[side]
            recorded[side].append((getattr(edges, side) >> shift) & mask)

    exchanger = _Exchanger(MPI, comm, spin)
    body = _run_seam if tile.depth == 0 else _run_halo
    compute = body(tile, words, steps, exchanger, record)
    wall = time.perf_counter() - started
    ew, eh = tile.ex1 - tile.ex0, tile.ey1 - tile.ey0
    tw, th = tile.x1 - tile.x0, tile.y1 - tile.y0
    stats = RankStats(rank=rank, tile=(tile.col, tile.row),
                      extended=(tile.ex0, tile.ey0, ew, eh),
                      cell_updates=ew * eh // 2 * steps, tile_cell_updates=tw * th // 2 * steps,
                      exchanges=exchanger.exchanges, messages=exchanger.messages,
                      bytes_sent=exchanger.bytes, compute_s=compute,
                      exchange_s=exchanger.seconds, wall_s=wall, setup_s=setup)
    pieces = comm.gather((stats, (tile.x0, tile.y0, tw, th), recorded), root=root)
    if rank != root:
        return MpiRun(None, [stats], decomposition, halo, tile.engine)
    return MpiRun(_assemble(pieces, config_.width, config_.height, steps),
                  [p[0] for p in pieces], decomposition, halo, tile.engine)


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


def _assemble(pieces, width, height, steps):
    """The whole grid's edge-output lane bits from each tile's outer-side words."""
    out = {"n": np.zeros((steps, width), np.uint8), "s": np.zeros((steps, width), np.uint8),
           "e": np.zeros((steps, height), np.uint8), "w": np.zeros((steps, height), np.uint8)}
    for _, (x0, y0, tw, th), recorded in pieces:
        for side, words in recorded.items():
            first, count = (x0, tw) if side in "ns" else (y0, th)
            out[side][:, first:first + count] = _word_array(words, count)
    return out


def run_edges(config, inputs, **options):
    """:func:`run`, returning the list of output :class:`Edges` on the root (``None``
    elsewhere): the form of :meth:`bitgrid.emulator.Emulator.run`."""
    return run(config, inputs, **options).edges()
