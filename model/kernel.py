"""The compiled emulator kernel: many subcycles per call, no Python per subcycle (numba).

This module runs the bit-sliced evaluation of :mod:`bitgrid.fastemu` (checkerboard-compacted
bit planes, 64 cells of one parity per ``uint64`` word, LUTs in algebraic normal form) as
machine code compiled by numba, over a whole batch of subcycles per call:
:func:`advance` takes the stimulus of ``n`` subcycles as one array of lane bits and fills
the edge outputs of every subcycle into another. :class:`bitgrid.fastemu.FastEmulator` uses it
(``kernel=True``, the default when numba is installed); this module is its engine and the
entry point for code that runs tiles of a bigger grid (the MPI emulation).

Layout (SPEC sections 2 to 4; the same packing as :mod:`bitgrid.fastemu`)
    ``n = W / 2`` cells of one parity per row, ``nw = ceil(n / 64)`` words per row,
    ``hg = H / 2`` rows per row group. Row ``y = 2j + g`` of parity ``p`` holds the cells
    ``x = 2i + o``, ``o = (p + g) % 2``, cell ``i`` in bit ``i % 64`` of word ``i // 64``.

    * ``planes``: ``uint64`` array ``(16, (hg + 2) * nw)``; plane ``(p * 4 + d) * 2 + g`` holds
      output ``d`` (N, E, S, W) of the parity-``p`` cells of row group ``g``, one border row
      above and below the ``hg`` rows (padded row ``j + 1`` is row ``j``). It is
      ``FastEmulator``'s state array ``(2, 4, 1, 2, hg + 2, nw)`` reshaped (one stream).
    * ``coef``: ``uint64`` array ``(256, hg * nw)`` from :func:`pack_coefficients`; row
      ``((p * 2 + g) * 4 + d) * 16 + m`` holds ANF coefficient ``m`` of output ``d`` for those
      cells (8 bytes of configuration per cell, as in the configuration itself).

Stimulus and response: lane arrays
    ``uint8`` arrays of shape ``(n, 2 * (W + H))``, one row per subcycle, one byte (0 or 1) per
    edge lane, the four buses concatenated in SPEC order: N (``W`` lanes, lane ``i`` is column
    ``x = i``), E (``H``, row ``y``), S (``W``), W (``H``); see :func:`lane_slices`,
    :func:`edges_to_lanes` and :func:`lanes_to_edges`. Row ``t`` of the inputs is on the
    edge buses during subcycle ``t``; row ``t`` of the outputs is what
    :meth:`~bitgrid.emulator.Emulator.step` returns after it (latency 0: the edge outputs
    after the subcycle's commit).

Evaluation
    A subcycle of parity ``p`` updates, per row group, a contiguous run of words: the N and S
    inputs are the other parity's S and N planes at a fixed offset (the border rows carry the
    N and S edge lanes), the E and W inputs a one-bit shift of the other parity's W and E
    planes in one of the groups (with the E and W edge lanes put into the end words), and the
    four outputs are Horner evaluations of the ANF: 15 AND-XOR pairs each, which the compiler
    turns into SIMD instructions over consecutive words (one ``vpternlogq`` per pair with
    AVX-512).

Temporal blocking and threads (split tiling)
    ``advance`` runs the subcycles in passes of ``depth`` subcycles. The rows are cut into one
    band per thread. In a pass each thread first runs its band as a *trapezoid*: at the
    ``s``-th subcycle of the pass it updates the rows of its band at least ``s`` rows away from
    a neighbouring band (those rows depend only on rows it owns or rows that do not change in
    the pass). Within the band it sweeps north to south in tiles of ``tile_rows`` rows whose
    boundaries move one row north per subcycle (a parallelogram in row and time), so a tile
    runs all ``depth`` subcycles while its rows' coefficients stay in the cache: a grid larger
    than the caches reads its configuration from memory once per pass instead of once per
    subcycle. After a barrier, the rows left out (a *triangle* of ``2 s`` rows around each band
    boundary at subcycle ``s``) are updated, and a second barrier ends the pass. Every cell is
    updated exactly once per subcycle, in an order that respects every dependency, so the
    results are those of the reference emulator bit for bit. The threads are ordinary Python
    threads running compiled code without the GIL (``nogil``), meeting at barriers made of
    atomic counters (they spin, then yield the core).

Compilation
    ``@njit(cache=True)``: the first call on a machine compiles for a few seconds and writes the
    machine code to numba's cache (``__pycache__`` beside this file, or
    ``$NUMBA_CACHE_DIR``); later processes load it (well under a second). :func:`available`
    says whether numba can be imported (without it ``FastEmulator`` runs its numpy code).
"""

import concurrent.futures
import os
import sys
import threading

import numpy as np

from .terms import Edges

__all__ = ["available", "lane_count", "lane_slices", "edges_to_lanes", "lanes_to_edges",
           "pack_coefficients", "advance", "make_plan", "Plan", "MIN_WORDS", "warm_up"]

try:                                    # numba is a dependency, but keep the numpy fallback
    import numba
    from numba import carray, njit
    from numba.core import cgutils, types
    from numba.extending import intrinsic
except ImportError:                     # pragma: no cover - exercised only without numba
    numba = None

#: Grids whose parity has fewer words than this per thread run on one thread: below it, the
#: two barriers of a pass and the serial triangle cost more than the work they split (measured:
#: 128 x 128, 128 words per parity, runs 5.2e9 cell updates/s on one thread and 3.2e9 on two;
#: 256 x 256, 512 words, 7.6e9 on one and 8.2e9 on two; so 256 x 256 is the smallest on two).
MIN_WORDS = 256


def available():
    """Whether the compiled kernel can run here (numba imports)."""
    return numba is not None


def lane_count(width, height):
    """Lanes of the four edge buses together: ``2 * (width + height)``."""
    return 2 * (width + height)


def lane_slices(width, height):
    """Column slices of the N, E, S, W buses in a lane array (in that order)."""
    bounds = np.cumsum([0, width, height, width, height])
    return tuple(slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]))


def edges_to_lanes(edges, width, height):
    """A sequence of :class:`~bitgrid.terms.Edges` (or anything ``Edges.coerce`` accepts) as
    a lane array ``(len(edges), 2 * (width + height))`` of ``uint8``.

    :raises ValueError: if a word has bits beyond its lanes (``Edges.check_lanes``).
    """
    edges = [Edges.coerce(e).check_lanes(width, height) for e in edges]
    wb, hb = (width + 7) // 8, (height + 7) // 8
    raw = b"".join(e.n.to_bytes(wb, "little") + e.e.to_bytes(hb, "little")
                   + e.s.to_bytes(wb, "little") + e.w.to_bytes(hb, "little") for e in edges)
    bytes_ = np.frombuffer(raw, dtype=np.uint8).reshape(len(edges), 2 * (wb + hb))
    result = np.empty((len(edges), lane_count(width, height)), dtype=np.uint8)
    offset = 0
    for side, lanes in zip(lane_slices(width, height), (wb, hb, wb, hb)):
        count = side.stop - side.start
        bits = np.unpackbits(bytes_[:, offset:offset + lanes], axis=1, count=count,
                             bitorder="little")
        result[:, side] = bits
        offset += lanes
    return result


def lanes_to_edges(lanes, width, height):
    """The rows of a lane array ``(n, 2 * (width + height))`` as a list of ``n``
    :class:`~bitgrid.terms.Edges`."""
    lanes = np.asarray(lanes, dtype=np.uint8)
    words = []
    for side in lane_slices(width, height):
        packed = np.packbits(lanes[:, side], axis=1, bitorder="little")
        words.append([int.from_bytes(row.tobytes(), "little") for row in packed])
    return [Edges(*w) for w in zip(*words)]


def pack_coefficients(anf, width, height):
    """The coefficient array ``coef`` ``(256, hg * nw)`` of ``uint64`` (see the module
    docstring) from the ANF tables ``anf`` ``(height, width, 4)`` (``fastemu.anf_tables`` of
    a configuration's LUTs)."""
    n, hg = width // 2, height // 2
    nw = (n + 63) // 64
    coef = np.zeros((2, 2, 4, 16, hg, nw * 64), dtype=np.uint8)
    shifts = np.arange(16, dtype=np.uint16)
    for p in range(2):
        for g in range(2):
            o = (p + g) % 2
            cells = anf[g::2, o::2, :]                       # (hg, n, 4)
            bits = (cells[..., None] >> shifts) & 1          # (hg, n, 4, 16)
            coef[p, g, :, :, :, :n] = bits.transpose(2, 3, 0, 1)
    packed = np.packbits(coef, axis=-1, bitorder="little").view("<u8")
    return np.ascontiguousarray(packed.astype(np.uint64, copy=False).reshape(256, hg * nw))


class Plan:
    """How :func:`advance` cuts the work: ``threads`` bands of rows, passes of ``depth``
    subcycles, tiles of ``tile_rows`` rows (see the module docstring). Results never depend
    on the plan."""

    def __init__(self, width, height, *, threads=1, depth=None, tile_rows=None):
        self.width, self.height = width, height
        threads = max(1, min(int(threads), height // 4))
        bands = np.linspace(0, height, threads + 1).round().astype(np.int64)
        self.bands = bands
        self.threads = threads
        smallest = int(np.diff(bands).min())
        nw = (width // 2 + 63) // 64
        if depth is None:
            # One pass per call on one thread; with threads, passes short enough that the
            # triangles (serial work around the band boundaries) stay a small share.
            depth = 1 << 30 if threads == 1 else max(1, smallest // 4)
        self.depth = max(1, int(depth)) if threads == 1 else max(1, min(int(depth),
                                                                         smallest // 2))
        if tile_rows is None:
            # About 1 MB of coefficients per tile (both parities: 1 KB per row and word).
            tile_rows = max(8, (1 << 20) // (1024 * nw))
        self.tile_rows = max(1, int(tile_rows))

    def __repr__(self):
        return (f"Plan({self.width} x {self.height}, threads={self.threads}, "
                f"depth={self.depth}, tile_rows={self.tile_rows})")


def make_plan(width, height, *, threads=None, depth=None, tile_rows=None):
    """The :class:`Plan` :func:`advance` uses by default: one thread below
    :data:`MIN_WORDS` words of one parity per thread, else up to 2 (or ``threads``)."""
    if threads is None:
        words = (height // 2) * ((width // 2 + 63) // 64) * 2      # one parity, both groups
        threads = max(1, min(os.cpu_count() or 1, 2, words // MIN_WORDS))
    return Plan(width, height, threads=threads, depth=depth, tile_rows=tile_rows)


_pool = None
_pool_size = 0
#: One multi-threaded call at a time owns the pool: the threads of a call meet at barriers, so
#: all of them must run at once (the pool has at least as many workers as a call needs).
_pool_lock = threading.Lock()


def _executor(workers):
    """The pool, with at least ``workers`` threads (call with ``_pool_lock`` held)."""
    global _pool, _pool_size
    if _pool_size < workers:
        if _pool is not None:
            _pool.shutdown(wait=True)
        _pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers,
                                                      thread_name_prefix="bitgrid-kernel")
        _pool_size = workers
    return _pool


def advance(planes, coef, width, height, phase, inputs, outputs, *, plan=None):
    """Run ``n = len(inputs)`` subcycles on packed state, in place.

    :param planes: the state, ``uint64`` ``(16, (H / 2 + 2) * nw)`` (module docstring),
        C-contiguous; changed in place to the state after the ``n`` subcycles.
    :param coef: the coefficients, ``uint64`` ``(256, H / 2 * nw)`` (:func:`pack_coefficients`).
    :param width, height: the grid size in cells (even, at least 2).
    :param phase: parity of the first subcycle (the subcycle counter modulo 2).
    :param inputs: lane array ``(n, 2 * (W + H))`` of ``uint8`` 0/1 (module docstring).
    :param outputs: lane array of the same shape, filled with the edge outputs after each
        subcycle.
    :param plan: a :class:`Plan` (default :func:`make_plan` for this size).
    :raises ValueError: for arrays of the wrong shape or type (nothing is changed).
    """
    if numba is None:
        raise RuntimeError("bitgrid.kernel needs numba (pip install numba)")
    n_lanes = lane_count(width, height)
    hg, nw = height // 2, (width // 2 + 63) // 64
    checks = [(planes, (16, (hg + 2) * nw), np.uint64, "planes"),
              (coef, (256, hg * nw), np.uint64, "coef")]
    for array, shape, dtype, name in checks:
        if (not isinstance(array, np.ndarray) or array.shape != shape or array.dtype != dtype
                or not array.flags.c_contiguous):
            raise ValueError(f"{name} must be a C-contiguous {np.dtype(dtype).name} array of "
                             f"shape {shape}")
    for array, name in ((inputs, "inputs"), (outputs, "outputs")):
        if (not isinstance(array, np.ndarray) or array.ndim != 2 or array.shape[1] != n_lanes
                or array.dtype != np.uint8 or not array.flags.c_contiguous):
            raise ValueError(f"{name} must be a C-contiguous uint8 array of shape "
                             f"(subcycles, {n_lanes})")
    if outputs.shape[0] != inputs.shape[0]:
        raise ValueError(f"outputs have {outputs.shape[0]} rows for {inputs.shape[0]} "
                         "subcycles of inputs")
    steps = inputs.shape[0]
    if steps == 0:
        return
    plan = plan or make_plan(width, height)
    geometry = np.array([width, height, int(phase) & 1, steps, plan.depth, plan.tile_rows,
                         plan.threads], dtype=np.int64)
    _record_all(planes, geometry, outputs)
    bands = plan.bands
    if plan.threads == 1:
        sync = np.zeros(2, dtype=np.int64)
        _thread_main(planes, coef, geometry, bands, inputs, outputs, sync, 0)
        _fill_held(geometry, outputs)
        return
    sync = np.zeros(16, dtype=np.int64)
    with _pool_lock:
        pool = _executor(plan.threads - 1)
        futures = [pool.submit(_thread_main, planes, coef, geometry, bands, inputs, outputs,
                               sync, tid) for tid in range(1, plan.threads)]
        try:
            _thread_main(planes, coef, geometry, bands, inputs, outputs, sync, 0)
        finally:
            for future in futures:
                future.result()
    _fill_held(geometry, outputs)


if numba is not None:
    _jit = njit(cache=True, nogil=True)

    @intrinsic
    def _atomic_add(typingctx, array, index, value):
        """``array[index] += value`` atomically (sequentially consistent); returns the old
        value."""
        sig = types.int64(array, index, value)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            return builder.atomic_rmw("add", ptr, args[2], "seq_cst")

        return sig, codegen

    @intrinsic
    def _atomic_load(typingctx, array, index):
        """``array[index]`` read with acquire ordering."""
        sig = types.int64(array, index)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
            return builder.load_atomic(ptr, "acquire", 8)

        return sig, codegen

    @intrinsic
    def _yield_cpu(typingctx):
        """``sched_yield()``: give the core to another thread while waiting at a barrier."""
        sig = types.int64()

        def codegen(context, builder, signature, args):
            fnty = cgutils.ir.FunctionType(cgutils.ir.IntType(32), [])
            fn = cgutils.get_or_insert_function(builder.module, fnty, "sched_yield")
            result = builder.call(fn, [])
            return builder.sext(result, cgutils.ir.IntType(64))

        return sig, codegen

    @intrinsic
    def _pointer(typingctx, array, index):
        """The address of ``array[index]`` (a 1-D array) as a raw pointer."""
        sig = types.CPointer(array.dtype)(array, index)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])

        return sig, codegen

    @intrinsic
    def _pointer2(typingctx, array, row, col):
        """The address of ``array[row, col]`` (a 2-D array) as a raw pointer."""
        sig = types.CPointer(array.dtype)(array, row, col)

        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], args[2]])

        return sig, codegen

    @_jit
    def _view(array, row, start, size):
        """``array[row, start:start + size]`` of a C-contiguous 2-D array, as an array
        without a reference count (the caller keeps ``array`` alive)."""
        return carray(_pointer2(array, row, start), size)

    @_jit
    def _barrier(sync, threads):
        """A sense-counting barrier on ``sync[0]`` (arrivals) and ``sync[8]`` (generation)."""
        generation = _atomic_load(sync, 8)
        if _atomic_add(sync, 0, 1) == threads - 1:
            _atomic_add(sync, 0, -threads)
            _atomic_add(sync, 8, 1)
            return
        spins = 0
        while _atomic_load(sync, 8) == generation:
            spins += 1
            if spins > 200:
                _yield_cpu()

    @_jit
    def _place_borders(planes, width, height, p, t, inputs, top, bottom):
        """Edge lanes N (before row 0 is updated) and S (before row H - 1) of subcycle ``t``
        into the other parity's border rows."""
        n, hg = width // 2, height // 2
        nw = (n + 63) // 64
        q = 1 - p
        row = inputs[t]
        if top:                         # N_in[x] feeds (x, 0): parity p at x = 2i + p
            plane = planes[(q * 4 + 2) * 2 + 1]
            for w in range(nw):
                word = np.uint64(0)
                for b in range(min(64, n - 64 * w)):
                    word |= np.uint64(row[2 * (64 * w + b) + p] & 1) << np.uint64(b)
                plane[w] = word
        if bottom:                      # S_in[x] feeds (x, H - 1): parity p at x = 2i + 1 - p
            plane = planes[(q * 4 + 0) * 2 + 0]
            base = width + height + 1 - p
            for w in range(nw):
                word = np.uint64(0)
                for b in range(min(64, n - 64 * w)):
                    word |= np.uint64(row[base + 2 * (64 * w + b)] & 1) << np.uint64(b)
                plane[(hg + 1) * nw + w] = word

    @_jit
    def _update_group(planes, coef, width, height, p, g, j0, j1, t, inputs, ein, win):
        """Update rows ``j0 <= j < j1`` of row group ``g`` of parity ``p`` (subcycle ``t``)."""
        n = width // 2
        nw = (n + 63) // 64
        q = 1 - p
        o = (p + g) & 1
        k0, size = j0 * nw, (j1 - j0) * nw
        lastbit = np.uint64((n - 1) % 64)
        one, top = np.uint64(1), np.uint64(63)
        # Views without reference counts (carray over a pointer), each starting where its
        # loop starts, so that every loop index runs from 0: the loops compile to SIMD code.
        n_in = _view(planes, (q * 4 + 2) * 2 + 1 - g, g * nw + k0, size)   # S out, row above
        s_in = _view(planes, (q * 4 + 0) * 2 + 1 - g, (g + 1) * nw + k0, size)  # N out, below
        e_lanes = width
        w_lanes = 2 * width + height
        if o == 0:          # E input direct, W input shifted up (cell i reads i - 1)
            e_in = _view(planes, (q * 4 + 3) * 2 + g, nw + k0, size)
            e_q = _view(planes, (q * 4 + 1) * 2 + g, nw + k0 - 1, size + 1)
            w_in = carray(_pointer(win, 0), size)
            for i in range(size):
                w_in[i] = (e_q[i + 1] << one) | (e_q[i] >> top)
            for j in range(j0, j1):         # the first word of a row takes the W edge lane
                i = (j - j0) * nw
                bit = np.uint64(inputs[t, w_lanes + 2 * j + g])
                w_in[i] = (e_q[i + 1] << one) | bit
        else:               # E input shifted down (cell i reads i + 1), W input direct
            w_in = _view(planes, (q * 4 + 1) * 2 + g, nw + k0, size)
            w_q = _view(planes, (q * 4 + 3) * 2 + g, nw + k0, size + 1)
            e_in = carray(_pointer(ein, 0), size)
            for i in range(size):
                e_in[i] = (w_q[i] >> one) | (w_q[i + 1] << top)
            for j in range(j0, j1):         # the last word of a row takes the E edge lane
                i = (j - j0) * nw + nw - 1
                bit = np.uint64(inputs[t, e_lanes + 2 * j + g])
                e_in[i] = (w_q[i] >> one) | (bit << lastbit)
        base = ((p * 2 + g) * 4) * 16
        for d in range(4):
            out = _view(planes, (p * 4 + d) * 2 + g, nw + k0, size)
            c = base + d * 16
            rows = (_view(coef, c, k0, size), _view(coef, c + 1, k0, size),
                    _view(coef, c + 2, k0, size), _view(coef, c + 3, k0, size),
                    _view(coef, c + 4, k0, size), _view(coef, c + 5, k0, size),
                    _view(coef, c + 6, k0, size), _view(coef, c + 7, k0, size),
                    _view(coef, c + 8, k0, size), _view(coef, c + 9, k0, size),
                    _view(coef, c + 10, k0, size), _view(coef, c + 11, k0, size),
                    _view(coef, c + 12, k0, size), _view(coef, c + 13, k0, size),
                    _view(coef, c + 14, k0, size), _view(coef, c + 15, k0, size))
            _anf(out, rows, n_in, e_in, s_in, w_in, size)

    @_jit
    def _anf(out, c, n_in, e_in, s_in, w_in, size):
        """``out[i]`` = the ANF with coefficients ``c[m][i]`` (16 contiguous rows) of the
        inputs ``n_in[i]``, ``e_in[i]``, ``s_in[i]``, ``w_in[i]``, Horner over N, E, S, W.
        Every array is 1-D and contiguous and every index runs from 0, so the loop compiles
        to SIMD code."""
        c0, c1, c2, c3, c4, c5, c6, c7 = c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        c8, c9, c10, c11, c12, c13, c14, c15 = (c[8], c[9], c[10], c[11], c[12], c[13],
                                                 c[14], c[15])
        for i in range(size):
            nn = n_in[i]
            ee = e_in[i]
            ss = s_in[i]
            ww = w_in[i]
            a0 = c0[i] ^ (nn & c1[i])
            a1 = c2[i] ^ (nn & c3[i])
            a2 = c4[i] ^ (nn & c5[i])
            a3 = c6[i] ^ (nn & c7[i])
            a4 = c8[i] ^ (nn & c9[i])
            a5 = c10[i] ^ (nn & c11[i])
            a6 = c12[i] ^ (nn & c13[i])
            a7 = c14[i] ^ (nn & c15[i])
            b0 = a0 ^ (ee & a1)
            b1 = a2 ^ (ee & a3)
            b2 = a4 ^ (ee & a5)
            b3 = a6 ^ (ee & a7)
            e0 = b0 ^ (ss & b1)
            e1 = b2 ^ (ss & b3)
            out[i] = e0 ^ (ww & e1)

    @_jit
    def _record(planes, width, height, p, a, b, row):
        """Edge outputs of the parity-``p`` cells of rows ``a <= y < b`` into lane row
        ``row``."""
        n, hg = width // 2, height // 2
        nw = (n + 63) // 64
        lastbit = np.uint64((n - 1) % 64)
        one = np.uint64(1)
        e_lanes, w_lanes = width, 2 * width + height
        for g in range(2):
            j0 = (a - g + 1) // 2
            j1 = (b - g + 1) // 2
            if (p + g) & 1:     # cells (W - 1, y) have parity p: their E outputs
                plane = planes[(p * 4 + 1) * 2 + g]
                for j in range(j0, j1):
                    word = plane[nw + j * nw + nw - 1]
                    row[e_lanes + 2 * j + g] = np.uint8((word >> lastbit) & one)
            else:               # cells (0, y) have parity p: their W outputs
                plane = planes[(p * 4 + 3) * 2 + g]
                for j in range(j0, j1):
                    row[w_lanes + 2 * j + g] = np.uint8(plane[nw + j * nw] & one)
        if a == 0:              # row 0: cells x = 2i + p, N outputs
            plane = planes[(p * 4 + 0) * 2 + 0]
            for i in range(n):
                row[2 * i + p] = np.uint8((plane[nw + i // 64] >> np.uint64(i % 64)) & one)
        if b == height:         # row H - 1: cells x = 2i + 1 - p, S outputs
            plane = planes[(p * 4 + 2) * 2 + 1]
            base = width + height
            for i in range(n):
                word = plane[nw + (hg - 1) * nw + i // 64]
                row[base + 2 * i + 1 - p] = np.uint8((word >> np.uint64(i % 64)) & one)

    @_jit
    def _fill_held(geometry, outputs):
        """Lanes of the cells a subcycle does not update keep their value: copy them from the
        row before (rows 1 to n - 1)."""
        width, height, phase = geometry[0], geometry[1], geometry[2]
        lanes = outputs.shape[1]
        # updated[p][lane] = 0xFF where subcycles of parity p update the lane's cell, else 0.
        updated = np.zeros((2, lanes), dtype=np.uint8)
        for x in range(width):
            updated[x & 1, x] = 0xFF                              # N lane x: cell (x, 0)
            updated[(x + 1) & 1, width + height + x] = 0xFF       # S lane x: cell (x, H - 1)
        for y in range(height):
            updated[(y + 1) & 1, width + y] = 0xFF                # E lane y: cell (W - 1, y)
            updated[y & 1, 2 * width + height + y] = 0xFF         # W lane y: cell (0, y)
        for t in range(1, outputs.shape[0]):
            mask = updated[(phase + t) & 1]
            before, row = outputs[t - 1], outputs[t]
            for lane in range(lanes):
                row[lane] = (row[lane] & mask[lane]) | (before[lane] & ~mask[lane])

    @_jit
    def _record_all(planes, geometry, outputs):
        """Row 0 of ``outputs`` from the state before the run (both parities)."""
        width, height = geometry[0], geometry[1]
        for p in range(2):
            _record(planes, width, height, p, 0, height, outputs[0])

    @_jit
    def _step_rows(planes, coef, width, height, phase, t, a, b, inputs, outputs, ein, win):
        """Subcycle ``t`` of the call on rows ``a <= y < b``."""
        p = (phase + t) & 1
        _place_borders(planes, width, height, p, t, inputs, a == 0, b == height)
        for g in range(2):
            j0 = (a - g + 1) // 2
            j1 = (b - g + 1) // 2
            if j0 < j1:
                _update_group(planes, coef, width, height, p, g, j0, j1, t, inputs, ein, win)
        _record(planes, width, height, p, a, b, outputs[t])

    @_jit
    def _trapezoid(planes, coef, geometry, b0, b1, top_inner, bottom_inner, s0, steps,
                   inputs, outputs, ein, win):
        """Phase 1 of a pass over band ``b0 <= y < b1``: subcycles ``s0 .. s0 + steps - 1``
        in parallelogram tiles, leaving out the rows near inner band boundaries."""
        width, height, phase, tile_rows = geometry[0], geometry[1], geometry[2], geometry[5]
        tiles = max(1, (b1 - b0 + tile_rows - 1) // tile_rows)
        for i in range(tiles):
            for s in range(steps):
                lo = b0 + s if top_inner else b0
                hi = b1 - s if bottom_inner else b1
                a = lo if i == 0 else max(lo, b0 + i * tile_rows - s)
                b = hi if i == tiles - 1 else min(hi, b0 + (i + 1) * tile_rows - s)
                if a < b:
                    _step_rows(planes, coef, width, height, phase, s0 + s, a, b, inputs,
                               outputs, ein, win)

    @_jit
    def _triangle(planes, coef, geometry, boundary, s0, steps, inputs, outputs, ein, win):
        """Phase 2 of a pass: the rows ``boundary - s <= y < boundary + s`` left out at the
        ``s``-th subcycle of the pass."""
        width, height, phase = geometry[0], geometry[1], geometry[2]
        for s in range(1, steps):
            _step_rows(planes, coef, width, height, phase, s0 + s, boundary - s, boundary + s,
                       inputs, outputs, ein, win)

    @_jit
    def _thread_main(planes, coef, geometry, bands, inputs, outputs, sync, tid):
        """Everything thread ``tid`` does in a call: its band's trapezoid and the triangle
        below it (if any) in every pass, with two barriers per pass."""
        width, height = geometry[0], geometry[1]
        total, depth, threads = geometry[3], geometry[4], geometry[6]
        nw = (width // 2 + 63) // 64
        size = (height // 2) * nw
        ein = np.empty(size, dtype=np.uint64)
        win = np.empty(size, dtype=np.uint64)
        b0, b1 = bands[tid], bands[tid + 1]
        for s0 in range(0, total, depth):
            steps = min(depth, total - s0)
            _trapezoid(planes, coef, geometry, b0, b1, tid > 0, tid < threads - 1, s0,
                       steps, inputs, outputs, ein, win)
            if threads > 1:
                _barrier(sync, threads)
                if tid < threads - 1:
                    _triangle(planes, coef, geometry, b1, s0, steps, inputs, outputs, ein,
                              win)
                _barrier(sync, threads)


def warm_up():
    """Compile the kernel (or load it from numba's cache) by running a 4 x 2 grid; returns the
    seconds it took. The set-up step (``make setup``) calls it, so that no test pays the
    first compilation."""
    import time
    start = time.perf_counter()
    if numba is not None:
        planes = np.zeros((16, 3), dtype=np.uint64)
        coef = np.zeros((256, 1), dtype=np.uint64)
        lanes = np.zeros((2, lane_count(4, 2)), dtype=np.uint8)
        advance(planes, coef, 4, 2, 0, lanes, np.empty_like(lanes))
    return time.perf_counter() - start

