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
from .config import Configuration
from .decomposition import Decomposition, check_halo, halo_depth
from .tile_engines import EMULATORS, FAST_MIN_CELLS, auto_emulator, tile_engine

__all__ = ["Decomposition", "Tile", "RankStats", "MpiRun", "run", "run_edges", "halo_depth",
           "check_halo", "on_root", "import_mpi", "find_mpiexec", "mpiexec_command",
           "FAST_MIN_CELLS", "EMULATORS"]

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


# -- Lane arrays -------------------------------------------------------------------------------
#
# Stimulus and responses are lane arrays, the format of bitgrid.kernel: uint8 (subcycles,
# 2 * (W + H)), one byte (0 or 1) per lane, the buses N (W lanes), E (H), S (W), W (H) in
# that order.

def _lane_slices(width, height):
    """``{side: slice}`` of the four buses in a lane array of a ``width`` x ``height`` grid."""
    from .kernel import lane_slices
    return dict(zip(_SIDES, lane_slices(width, height)))


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
            emulator = auto_emulator(self.ew * self.eh)
        #: The engine of the extended tile (``.name``: the emulator's name).
        self.engine = tile_engine(region, emulator)
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
