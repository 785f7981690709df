"""A bit-parallel emulator: the reference semantics (SPEC sections 2 to 4), 64 cells per word.

:class:`FastEmulator` has the public API of :class:`bitgrid.emulator.Emulator` and produces the
same edge outputs and states bit for bit, but evaluates a subcycle with word operations on bit
planes instead of one byte per cell. It has two engines over the same packed state: the
compiled kernel of :mod:`bitgrid.kernel` (numba; many subcycles per call, SIMD, threads and
temporal blocking; the default where numba is installed, for one stream) and the numpy code
described below (whole-array operations, one subcycle per call; lane-parallel streams).
``run(n, inputs=lanes)`` is the batched form: the stimulus of ``n`` subcycles as one lane
array ``(n, 2 * (W + H))`` of ``uint8`` (buses N, E, S, W), the edge outputs returned the same
way.

Packing (checkerboard compaction)
    A subcycle updates only the cells of one parity, and every neighbour of an updating cell has
    the other parity. So each parity ``p`` is stored on its own: in row ``y`` it holds the
    ``n = W / 2`` cells ``x = 2i + o`` with ``o = (p + y) % 2``, cell ``i`` being bit ``i % 64``
    of word ``i // 64`` (``nw = ceil(n / 64)`` words per row; the bits above ``n`` are padding
    cells with all-zero coefficients, so their outputs stay 0 whatever they read). The rows of a parity are split into two *row groups* by ``g = y % 2`` (row ``y = 2j + g``
    is row ``j`` of group ``g``), so that every row of a group has the same offset ``o``. The
    state is one ``uint64`` array ``[parity, direction, stream, group, row, word]`` with one
    border row above and below the ``H / 2`` rows of each group.

Neighbours as shifts
    For an updating cell ``(x, y) = (2i + o, y)`` of parity ``p`` (``q = 1 - p`` is the other
    parity):

    * N input = output S of ``(x, y - 1)``, which in parity ``q`` has the same offset ``o``, so
      the same index ``i``: the same word of the row above (no shift). Row 0 reads the N edge,
      placed in a border row.
    * S input = output N of ``(x, y + 1)``: the same word of the row below; row ``H - 1`` reads
      the S edge from a border row.
    * E input = output W of ``(x + 1, y)``: index ``i`` when ``o = 0``, index ``i + 1`` when
      ``o = 1`` (the plane shifted down by one bit, carrying bit 0 of the next word into bit 63;
      the last cell ``i = n - 1`` takes the E edge).
    * W input = output E of ``(x - 1, y)``: index ``i`` when ``o = 1``, index ``i - 1`` when
      ``o = 0`` (shifted up by one bit with the carry from the previous word; cell ``i = 0``
      takes the W edge).

    Since ``o = (p + g) % 2``, in each subcycle one row group shifts its E input and the other
    its W input. The N and S inputs of both groups are plain (strided) views of the state.

LUT evaluation (algebraic normal form)
    Each LUT is stored in algebraic normal form (its Reed-Muller / Moebius transform):
    ``out = XOR over subsets m of {N, E, S, W} of c[m] AND (product of the inputs in m)``, with
    the coefficient index ``m`` laid out like the LUT address. It is evaluated Horner-style,
    one input per level: ``t[k] = c[2k] ^ (N & c[2k+1])`` (8 per output), then the same with E,
    S and W, halving each time. That is 15 nodes of 2 operations, 30 word operations per
    output plane and 120 per subcycle and word of 64 cells (a 16-way multiplexer tree needs
    45). The 64 coefficient planes take exactly the 64 configuration bits per cell. Each level
    runs for all four outputs (and both row groups) in one numpy call, on blocks of rows of
    about :data:`DEFAULT_CHUNK_WORDS` words: large enough that numpy's per-call cost is small,
    small enough to keep the temporaries near the processor.

Lane-parallel mode
    ``FastEmulator(config, streams=k)`` runs ``k`` independent input streams of the same
    configuration at once. Streams are one more array axis of the state; the coefficient planes
    are shared and broadcast over it by numpy (never copied per stream). :meth:`step` then takes
    and returns a list of ``k`` edge words, and :attr:`outputs` has shape ``(k, 4, H, W)``.

Threads
    The chunks of a subcycle are independent (they write disjoint rows of one parity and read
    the other), and numpy releases the GIL in its loops, so large runs are split between
    threads. ``threads=None`` uses the number of CPUs, at most 2, once a subcycle covers at
    least 16384 words (a million cell updates, all streams together), and one thread below.
"""

import concurrent.futures
import os
import sys
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import kernel as _kernel
from .checks import check_int
from .config import Configuration
from .cell import COPY
from .terms import Edges

__all__ = ["FastEmulator", "anf_tables"]

if sys.byteorder != "little":     # the packing reads words as little-endian bytes
    raise ImportError("bitgrid.fastemu needs a little-endian machine")

_U64 = np.uint64
_ONE = np.uint64(1)
_BIT63 = np.uint64(63)
_NOT_ONE = ~np.uint64(1)

#: Default block size, in 64-bit words per plane (all streams and row groups of the block
#: together): the whole of one parity of a 1024 x 1024 grid. The temporaries of a block are
#: 56 times this, its coefficients 64 times.
DEFAULT_CHUNK_WORDS = 8192

#: Grids with fewer words per subcycle (all streams) than this run on one thread.
_THREAD_MIN_WORDS = 16384

_pool = None
_pool_lock = threading.Lock()


def _executor():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=max(1, (os.cpu_count() or 1) - 1),
                thread_name_prefix="bitgrid-fastemu")
        return _pool


def anf_tables(luts):
    """Algebraic normal form of 16-bit truth tables (any array shape, values ``uint16``).

    Bit ``m`` of the result is the coefficient of the monomial made of the inputs whose address
    bits are set in ``m`` (N is bit 0): ``lut(a) = XOR over m with m & ~a == 0 of bit m``.
    The transform is its own inverse.
    """
    tables = np.array(luts, dtype=np.uint16)
    for bit, mask in enumerate(COPY):         # the addresses with bit ``bit`` set
        tables ^= (tables << np.uint16(1 << bit)) & np.uint16(mask)
    return tables


def _pack_cells(bits, nw):
    """Pack cell bits along the last axis (length ``n <= 64 * nw``) into ``nw`` uint64 words."""
    n = bits.shape[-1]
    padded = np.zeros(bits.shape[:-1] + (nw * 64,), dtype=np.uint8)
    padded[..., :n] = bits
    packed = np.packbits(padded, axis=-1, bitorder="little")
    return packed.view("<u8").astype(_U64, copy=False)


def _unpack_cells(words, n):
    """Inverse of :func:`_pack_cells`: uint64 words ``(..., nw)`` -> uint8 bits ``(..., n)``."""
    raw = np.ascontiguousarray(words, dtype="<u8").view(np.uint8)
    return np.unpackbits(raw, axis=-1, count=n, bitorder="little")


#: Most input streams of one lane-parallel emulator (``streams=k``).
MAX_STREAMS = 64


class FastEmulator:
    """Bit-parallel emulator of one grid (SPEC sections 2-4); see the module docstring.

    :param config: the :class:`~bitgrid.config.Configuration` to run (copied).
    :param streams: ``None`` (default) for one stream with the API of
        :class:`~bitgrid.emulator.Emulator`; or the number ``k``, 1 to :data:`MAX_STREAMS`
        (64), of independent input streams to run side by side (lane-parallel mode).
    :param threads: threads to split a subcycle over; ``None`` chooses (see the module
        docstring), ``1`` runs everything on the calling thread.
    :param chunk_words: words per row block of the numpy code (a tuning knob; results do not
        depend on it).
    :param kernel: ``True`` to run on the compiled kernel (:mod:`bitgrid.kernel`), ``False``
        for the numpy code; ``None`` (default) chooses the kernel when numba is installed, the
        grid has one stream and no ``chunk_words`` is given. With the kernel, ``threads`` is
        the kernel's thread count (:func:`bitgrid.kernel.make_plan`).

    After construction (and after :meth:`reset`) every output is 0 and the subcycle counter is
    0, so the first :meth:`step` runs phase A (cells with ``(x + y)`` even).

    Differences from the reference emulator: :attr:`outputs` is unpacked on demand (a fresh
    array; assign to the property to change the state), and there is no ``inputs()``.
    """

    def __init__(self, config, *, streams=None, threads=None, chunk_words=None, kernel=None):
        if not isinstance(config, Configuration):
            raise TypeError(f"FastEmulator needs a Configuration, not {config!r}")
        if streams is not None:
            streams = check_int(streams, "streams", minimum=1, maximum=MAX_STREAMS)
        if threads is not None:
            threads = check_int(threads, "threads", minimum=1)
        if chunk_words is not None:
            chunk_words = check_int(chunk_words, "chunk_words", minimum=1)
        if kernel is not None and not isinstance(kernel, bool):
            raise TypeError(f"kernel must be True, False or None, not {kernel!r}")
        if kernel is None:
            kernel = _kernel.available() and streams is None and chunk_words is None
        elif kernel and not _kernel.available():
            raise ValueError("kernel=True needs numba (pip install numba)")
        elif kernel and streams is not None:
            raise ValueError("The compiled kernel runs one stream; use kernel=False with "
                             "streams")
        self.kernel = kernel
        self.width, self.height = config.width, config.height
        self.streams = streams
        self._k = 1 if streams is None else streams
        self._n = self.width // 2                   # cells of one parity in a row
        self._nw = (self._n + 63) // 64             # words per row
        self._hg = self.height // 2                 # rows per row group
        self._lastbit = _U64((self._n - 1) % 64)    # bit of cell n - 1 in the last word
        self._state = np.zeros((2, 4, self._k, 2, self._hg + 2, self._nw), dtype=_U64)
        self._state8 = self._state.view(np.uint8)     # (..., 8 * nw): bytes, little-endian
        # Edge bits of the current subcycle for the E-shifted and W-shifted row groups.
        self._ebits = np.zeros((self._k, self._hg), dtype=_U64)
        self._wbits = np.zeros((self._k, self._hg), dtype=_U64)
        words = self._k * 2 * self._hg * self._nw
        if kernel:
            self._kplan = _kernel.make_plan(self.width, self.height, threads=threads)
            self._planes = self._state.reshape(16, -1)      # a view: the kernel's layout
            assert np.shares_memory(self._planes, self._state)
            self._threads = self._kplan.threads
            self._scratch_buffer = np.zeros(0, dtype=_U64)
        else:
            if threads is None:
                threads = min(os.cpu_count() or 1, 2) if words >= _THREAD_MIN_WORDS else 1
            else:
                threads = min(threads, words)
            self._plan_chunks(chunk_words or DEFAULT_CHUNK_WORDS, threads)
        self._plan_edges()
        self.load(config)
        self.reset()

    # Layout and chunk plan.

    def _plan_chunks(self, chunk_words, threads):
        """Split the work of a subcycle into blocks of rows (and, for small grids with many
        streams, of streams) of about ``chunk_words`` words, and give each a thread."""
        k, hg, nw = self._k, self._hg, self._nw
        per_stream = 2 * hg * nw
        if threads > 1:         # at least one block per thread
            chunk_words = min(chunk_words, -(-k * per_stream // threads))
        if per_stream >= chunk_words:
            sc, rows = 1, max(1, chunk_words // (2 * nw))
        else:
            sc, rows = max(1, min(k, chunk_words // per_stream)), hg
        self._row_blocks = [(j0, min(rows, hg - j0)) for j0 in range(0, hg, rows)]
        blocks = [(j, s0, min(sc, k - s0)) for j in range(len(self._row_blocks))
                  for s0 in range(0, k, sc)]
        threads = max(1, min(threads, len(blocks)))
        self._threads = threads
        # Contiguous runs of blocks per thread (rows outer, streams inner: a thread reuses the
        # coefficients of a row block for all its streams while they are in cache).
        bounds = [round(i * len(blocks) / threads) for i in range(threads + 1)]
        self._thread_blocks = [blocks[bounds[i]:bounds[i + 1]] for i in range(threads)]
        shape = (sc, 2, min(rows, hg), nw)
        shapes = {"t1": (8, 4) + shape, "t2": (4, 4) + shape, "t3": (2, 4) + shape,
                  "e": shape, "w": shape, "tmp": (sc, shape[2] * nw)}
        # One allocation (huge pages once it is big enough), cut into per-thread scratch.
        sizes = {name: int(np.prod(s)) for name, s in shapes.items()}
        buffer = self._scratch_buffer = np.empty(threads * sum(sizes.values()), dtype=_U64)
        self._scratch, offset = [], 0
        for _ in range(threads):
            scratch = {}
            for name, s in shapes.items():
                scratch[name] = buffer[offset:offset + sizes[name]].reshape(s)
                offset += sizes[name]
            self._scratch.append(scratch)

    def _block_views(self, p, j, s0, sc, scratch):
        """The arrays one block of parity ``p`` reads and writes (see the module docstring)."""
        st, nw, q = self._state, self._nw, 1 - p
        j0, rows = self._row_blocks[j]
        sP, sD, sS, sG, sR, sW = st.strides
        # N/S inputs for both row groups as one view: group 0 (y = 2j) reads group 1 of the
        # other parity at padded row j (S outputs of row y - 1; padded row 0 is the N edge)
        # and, for S, padded row j + 1; group 1 reads group 0 one padded row further down.
        stride_g = -sG + sR
        shape = (sc, 2, rows, nw)
        strides = (sS, stride_g, sR, sW)
        n_in = as_strided(st[q, 2, s0, 1, j0], shape=shape, strides=strides, writeable=False)
        s_in = as_strided(st[q, 0, s0, 1, j0 + 1], shape=shape, strides=strides,
                          writeable=False)
        for view in (n_in, s_in):          # a safety net for the strides above
            start = view.__array_interface__["data"][0] - st.__array_interface__["data"][0]
            spans = [s * (m - 1) for s, m in zip(view.strides, view.shape)]
            assert start + sum(min(0, x) for x in spans) >= 0
            assert start + sum(max(0, x) for x in spans) + st.itemsize <= st.nbytes
        rows_slice = slice(1 + j0, 1 + j0 + rows)
        g_e = 1 - p      # the row group with o = 1: E input shifted, W input direct
        g_w = p          # the row group with o = 0: W input shifted, E input direct
        ss = slice(s0, s0 + sc)
        sub = (slice(None, sc), slice(None), slice(None, rows))
        e_buf = scratch["e"][sub]
        w_buf = scratch["w"][sub]
        tmp = scratch["tmp"][:sc, :rows * nw]

        def flat(view):             # (sc, rows, nw) with contiguous rows -> (sc, rows * nw)
            flat_view = view.reshape(sc, rows * nw)
            assert np.shares_memory(flat_view, view)
            return flat_view

        return {
            "n": n_in[None, None], "s": s_in,
            "e_direct_src": st[q, 3, ss, g_w, rows_slice], "e_direct_dst": e_buf[:, g_w],
            "e_shift_src": flat(st[q, 3, ss, g_e, rows_slice]),
            "e_shift_dst": flat(e_buf[:, g_e]),
            "w_direct_src": st[q, 1, ss, g_e, rows_slice], "w_direct_dst": w_buf[:, g_e],
            "w_shift_src": flat(st[q, 1, ss, g_w, rows_slice]),
            "w_shift_dst": flat(w_buf[:, g_w]),
            "e_keep": ~(_ONE << self._lastbit),
            "carry": nw > 1, "clear": nw > 1 and self._n % 64 == 0,
            "tmp": tmp,
            "e_edge": e_buf[:, g_e, :, nw - 1], "e_bits": self._ebits[ss, j0:j0 + rows],
            "w_edge": w_buf[:, g_w, :, 0], "w_bits": self._wbits[ss, j0:j0 + rows],
            "e": e_buf[None, None], "w": w_buf,
            "t1": scratch["t1"][(slice(None), slice(None)) + sub],
            "t2": scratch["t2"][(slice(None), slice(None)) + sub],
            "t3": scratch["t3"][(slice(None), slice(None)) + sub],
            "out": st[p, :, ss, :, rows_slice],
            "coef": (j, s0),
        }

    @property
    def threads(self):
        """Number of threads a subcycle is split over."""
        return self._threads

    @property
    def nbytes(self):
        """Bytes held in numpy arrays: state, coefficient planes, scratch and edge buffers
        (not counting :attr:`config`, the copy of the configuration, 8 bytes per cell)."""
        arrays = [self._state, self._ebits, self._wbits, self._coef_buffer, self._scratch_buffer]
        return sum(a.nbytes for a in arrays)

    # Public API (as bitgrid.emulator.Emulator).

    def reset(self):
        """Clear every output and the subcycle counter (SPEC section 4)."""
        self._state[...] = 0
        self.subcycle = 0

    @property
    def phase(self):
        """Phase of the next subcycle: 0 (A, even cells) or 1 (B, odd cells)."""
        return self.subcycle % 2

    def load(self, config):
        """Replace the configuration, keeping outputs and counter.

        :raises ValueError: if ``config`` is not for a grid of this size.
        """
        if not isinstance(config, Configuration):
            raise TypeError(f"FastEmulator needs a Configuration, not {config!r}")
        if (config.width, config.height) != (self.width, self.height):
            raise ValueError(f"Configuration is {config.width} x {config.height}, the emulator "
                             f"is {self.width} x {self.height}")
        self.config = config.copy()
        anf = anf_tables(self.config.luts)                  # (H, W, 4)
        if self.kernel:
            self._coef_buffer = _kernel.pack_coefficients(anf, self.width, self.height)
            return
        nw = self._nw
        # coefs[p][j]: (2, 8, 4, 2, rows, nw) = [bit N of m, m >> 1, output d, group, row, word]
        # for row block j of parity p, contiguous.
        # One allocation for all blocks: big enough for numpy to ask the kernel for huge pages,
        # which matters when the coefficients are streamed from memory every subcycle.
        sizes = [2 * 8 * 4 * 2 * rows * nw for _, rows in self._row_blocks]
        buffer = self._coef_buffer = np.empty(2 * sum(sizes), dtype=_U64)
        offsets = np.cumsum([0] + sizes * 2)
        coefs = [[buffer[offsets[p * len(sizes) + i]:offsets[p * len(sizes) + i + 1]]
                  .reshape(2, 8, 4, 2, rows, nw) for i, (_, rows) in enumerate(self._row_blocks)]
                 for p in range(2)]
        shifts = np.arange(16, dtype=np.uint16)
        for p in range(2):
            for g in range(2):
                o = (p + g) % 2
                cells = anf[g::2, o::2, :]                 # (hg, n, 4): rows y = 2j + g
                for (j0, rows), block in zip(self._row_blocks, coefs[p]):
                    # (rows, n, 4, 16) bits -> (16, 4, rows, nw) words -> the block's order
                    bits = (cells[j0:j0 + rows, :, :, None] >> shifts) & 1
                    planes = _pack_cells(bits.astype(np.uint8).transpose(3, 2, 0, 1), nw)
                    block[:, :, :, g] = planes.reshape(8, 2, 4, rows, nw).transpose(1, 0, 2, 3, 4)
        self._coefs = coefs
        self._plans = [[[self._bind(p, block, t) for block in self._thread_blocks[t]]
                        for t in range(self._threads)] for p in range(2)]

    def _bind(self, p, block, thread):
        views = self._block_views(p, *block, self._scratch[thread])
        j, _ = views.pop("coef")
        coef = self._coefs[p][j]
        views["c0"] = coef[0][:, :, None]
        views["c1"] = coef[1][:, :, None]
        return views

    def _check_edges(self, edges, stream=None):
        where = "" if stream is None else f"Stream {stream}: "
        edges.check_lanes(self.width, self.height, what=f"{where}Edge input")

    def _coerce_inputs(self, edge_inputs):
        if self.streams is None:
            edges = [Edges.coerce(edge_inputs)]
            self._check_edges(edges[0])
            return edges
        if edge_inputs is None:
            return [Edges()] * self._k
        edges = [Edges.coerce(e) for e in edge_inputs]
        if len(edges) != self._k:
            raise ValueError(f"Expected edge inputs for {self._k} streams, got {len(edges)}")
        for i, e in enumerate(edges):
            self._check_edges(e, i)
        return edges

    def step(self, edge_inputs=None):
        """Run one subcycle with ``edge_inputs`` on the edge buses and return the edge outputs.

        :param edge_inputs: one stream: anything :meth:`Edges.coerce` accepts (default all
            zero). ``k`` streams: a sequence of ``k`` such values, or ``None`` (all zero).
        :returns: :class:`Edges` read after the subcycle's outputs are stored; a list of ``k``
            of them with ``streams=k``.
        :raises ValueError: if an edge word has bits beyond its lane count (nothing changes).
        """
        if self.kernel:
            edges = Edges.coerce(edge_inputs)
            self._check_edges(edges)
            lanes = _kernel.edges_to_lanes([edges], self.width, self.height)
            return _kernel.lanes_to_edges(self._run_kernel(lanes), self.width, self.height)[0]
        edges = self._coerce_inputs(edge_inputs)
        p = self.subcycle % 2
        self._place_edges(p, edges)
        plans = self._plans[p]
        if self._threads == 1:
            _run_blocks(plans[0])
        else:
            pool = _executor()
            futures = [pool.submit(_run_blocks, plan) for plan in plans[1:]]
            _run_blocks(plans[0])
            for f in futures:
                f.result()
        self.subcycle += 1
        return self.edge_outputs()

    def _plan_edges(self):
        """Index arrays that move the edge words in and out of the packed state with a few
        whole-array numpy calls (see :meth:`_place_edges` and :meth:`edge_outputs`)."""
        k, hg, nw, w, h = self._k, self._hg, self._nw, self.width, self.height
        i = np.arange(k)[:, None]
        j = np.arange(h) // 2                      # row y = 2j + g of group g = y % 2
        g = np.arange(h) % 2
        # Edge inputs: the bits of each stream's N, S, E, W words (W, W, H, H lanes; each word
        # in whole bytes), unpacked in that order and followed by a 0 bit, are picked into:
        # the N and S border rows (nw * 64 bits each, parity p's cells), then the E bits of
        # the rows of group 1 - p and the W bits of the rows of group p (H / 2 each).
        wb, hb = 8 * ((w + 7) // 8), 8 * ((h + 7) // 8)
        base = {"n": 0, "s": wb, "e": 2 * wb, "w": 2 * wb + hb}
        zero = 2 * wb + 2 * hb

        def lanes(side, first, count):              # lanes first, first + 2, ... or zero
            x = first + 2 * np.arange(count)
            return np.where(x < (w if side in "ns" else h), base[side] + x, zero)

        self._in_bytes = (wb // 8, hb // 8)
        self._in_pick = [np.concatenate([lanes("n", p, 64 * nw), lanes("s", 1 - p, 64 * nw),
                                         lanes("e", 1 - p, hg), lanes("w", p, hg)])
                         for p in range(2)]
        # Edge outputs: bytes of the state gathered per stream (rows 0 and H - 1 of the N and
        # S planes of both parities, then per row y the byte holding bit n - 1 of the E plane
        # and the byte holding bit 0 of the W plane), unpacked, followed by a 0 bit, and the
        # lane bits picked in order: N lanes, S lanes (both padded to whole bytes), E, W.
        index = np.ravel_multi_index
        shape = self._state8.shape
        nb = 8 * nw
        row_bytes = np.arange(nb)
        last_byte = 8 * (nw - 1) + int(self._lastbit) // 8

        def row(p, d, grp, r):
            return index((p, d, i, grp, r, row_bytes[None, :]), shape)

        gather = [row(0, 0, 0, 1), row(1, 0, 0, 1), row(1, 2, 1, hg), row(0, 2, 1, hg),
                  index((1 - g, 1, i, g, 1 + j, last_byte), shape),
                  index((g, 3, i, g, 1 + j, 0), shape)]
        self._out_gather = np.concatenate([np.broadcast_to(a, (k, a.shape[-1]))
                                           for a in gather], axis=1)
        nbits = 8 * self._out_gather.shape[1]
        x = np.arange(w)
        # Row 0 (group 0, padded row 1): parity 0 holds the even x, parity 1 the odd x.
        # Row H - 1 (group 1, padded row hg): parity 1 holds the even x, parity 0 the odd x.
        north = np.where(x % 2 == 0, x // 2, 8 * nb + x // 2)
        south = np.where(x % 2 == 0, 16 * nb + x // 2, 24 * nb + x // 2)
        y = np.arange(h)
        east = 32 * nb + 8 * y + int(self._lastbit) % 8
        west = 32 * nb + 8 * h + 8 * y

        def padded(picks, lanes_):
            return np.concatenate([picks, np.full(8 * ((lanes_ + 7) // 8) - lanes_, nbits)])

        self._out_pick = np.concatenate([padded(north, w), padded(south, w), padded(east, h),
                                         padded(west, h)])
        self._out_nbits = nbits
        self._out_bytes = np.cumsum([0, wb // 8, wb // 8, hb // 8, hb // 8])

    def _place_edges(self, p, edges):
        """Write the edge inputs of a parity-``p`` subcycle where its blocks read them:
        N_in[x] feeds (x, 0), held by parity p at x = 2i + p, and goes into the border row
        above group 1 of the other parity's S plane; S_in[x] feeds (x, H - 1), held at
        x = 2i + 1 - p, into the border row below group 0 of the N plane. E_in[y] feeds the
        last cell of the rows whose E input is shifted (group 1 - p), W_in[y] the first cell of
        the rows whose W input is shifted (group p): they are ORed in by the blocks."""
        st, q, hg, nw, k = self._state, 1 - p, self._hg, self._nw, self._k
        wbytes, hbytes = self._in_bytes
        raw = b"".join(e.n.to_bytes(wbytes, "little") + e.s.to_bytes(wbytes, "little")
                       + e.e.to_bytes(hbytes, "little") + e.w.to_bytes(hbytes, "little")
                       for e in edges)
        raw = np.frombuffer(raw, dtype=np.uint8).reshape(k, -1)
        bits = np.unpackbits(raw, axis=1, count=8 * raw.shape[1] + 1, bitorder="little")
        picked = np.take(bits, self._in_pick[p], axis=1)
        rows = np.packbits(picked[:, :128 * nw], axis=1, bitorder="little")
        rows = rows.view("<u8").reshape(k, 2, nw)
        st[q, 2, :, 1, 0] = rows[:, 0]
        st[q, 0, :, 0, hg + 1] = rows[:, 1]
        np.left_shift(picked[:, 128 * nw:128 * nw + hg], self._lastbit, out=self._ebits,
                      dtype=_U64, casting="unsafe")
        np.copyto(self._wbits, picked[:, 128 * nw + hg:], casting="unsafe")

    def edge_outputs(self):
        """The edge outputs now (SPEC section 2): :class:`Edges`, or a list of ``k`` of them
        with ``streams=k``."""
        raw = np.take(self._state8.reshape(-1), self._out_gather)
        bits = np.unpackbits(raw, axis=1, count=self._out_nbits + 1, bitorder="little")
        packed = np.packbits(np.take(bits, self._out_pick, axis=1), axis=1, bitorder="little")
        a, b, c, d, e = self._out_bytes
        result = [Edges(int.from_bytes(row[a:b].tobytes(), "little"),
                        int.from_bytes(row[c:d].tobytes(), "little"),
                        int.from_bytes(row[b:c].tobytes(), "little"),
                        int.from_bytes(row[d:e].tobytes(), "little")) for row in packed]
        return result[0] if self.streams is None else result

    def run(self, edge_inputs, inputs=None):
        """Run many subcycles: ``run(edge_inputs)`` or ``run(n, inputs=lanes)``.

        ``run(edge_inputs)``: one subcycle per element of the sequence ``edge_inputs``; returns
        the list of edge outputs (with ``streams=k``, each element is a list of ``k`` inputs
        and each result a list of ``k`` :class:`Edges`).

        ``run(n, inputs=lanes)`` (the batched form, one stream): ``n`` subcycles with the
        stimulus as a lane array ``(n, 2 * (width + height))`` of 0/1 ``uint8`` (or ``bool``)
        values, the buses N, E, S, W concatenated, lane ``i`` of each bus at column
        ``offset + i`` (:func:`bitgrid.kernel.lane_slices`); ``inputs=None`` is all zero, and
        a single row ``(2 * (width + height),)`` holds for every subcycle. Returns the edge
        outputs after each subcycle as a new lane array of the same shape (row ``t`` is what
        :meth:`step` would return after subcycle ``t``). On the compiled kernel this runs
        without Python per subcycle.

        :raises ValueError: for a lane array of the wrong shape or with values other than 0
            and 1, or a word with bits beyond its lanes (nothing runs).
        """
        if isinstance(edge_inputs, (int, np.integer)) and not isinstance(edge_inputs, bool):
            return self._run_lanes(edge_inputs, inputs)
        if inputs is not None:
            raise TypeError("run(edge_inputs) takes no inputs=; use run(n, inputs=lanes)")
        if self.kernel:
            edge_inputs = list(edge_inputs)
            if not edge_inputs:
                return []
            lanes = _kernel.edges_to_lanes(edge_inputs, self.width, self.height)
            return _kernel.lanes_to_edges(self._run_kernel(lanes), self.width, self.height)
        return [self.step(e) for e in edge_inputs]

    def run_held(self, n, edge_inputs=None):
        """Run ``n`` subcycles (one stream) with ``edge_inputs`` held on the edge buses; the
        edge outputs after the last one (:class:`Edges`). On the compiled kernel this runs in
        batches without Python per subcycle.

        :raises ValueError: for a word with bits beyond its lanes (nothing runs).
        """
        edges = Edges.coerce(edge_inputs)
        self._check_edges(edges)
        if not self.kernel or self.streams is not None:
            for _ in range(n):
                self.step(edges)
            return self.edge_outputs()
        row = _kernel.edges_to_lanes([edges], self.width, self.height)[0]
        while n:
            batch = min(n, 1024)
            self._run_lanes(batch, row)
            n -= batch
        return self.edge_outputs()

    def _run_lanes(self, n, inputs):
        if self.streams is not None:
            raise ValueError("run(n, inputs=lanes) runs one stream; this emulator has "
                             f"{self.streams}")
        n = int(n)
        if n < 0:
            raise ValueError(f"The subcycle count must be at least 0, not {n}")
        count = _kernel.lane_count(self.width, self.height)
        if inputs is None:
            lanes = np.zeros((n, count), dtype=np.uint8)
        else:
            array = np.asarray(inputs)
            if array.shape == (count,):
                array = np.broadcast_to(array, (n, count))
            if array.shape != (n, count):
                raise ValueError(f"Inputs are a lane array of shape ({n}, {count}) for {n} "
                                 f"subcycles of a {self.width} x {self.height} grid, not "
                                 f"{array.shape}")
            if array.size and array.dtype != np.bool_ and ((array != 0) & (array != 1)).any():
                raise ValueError("Input lanes are bits: every value must be 0 or 1")
            lanes = np.ascontiguousarray(array, dtype=np.uint8)
        if self.kernel:
            return self._run_kernel(lanes)
        edges = _kernel.lanes_to_edges(lanes, self.width, self.height)
        return _kernel.edges_to_lanes([self.step(e) for e in edges], self.width, self.height)

    def _run_kernel(self, lanes):
        """The kernel over lane array ``lanes``: returns the output lane array. Long runs go
        in calls of about 2**29 cell updates (a fraction of a second), so that Ctrl-C stops
        them between calls, with the state and counter of the last call completed."""
        outputs = np.empty_like(lanes)
        chunk = max(64, (1 << 30) // (self.width * self.height))
        for t0 in range(0, lanes.shape[0], chunk):
            t1 = min(t0 + chunk, lanes.shape[0])
            _kernel.advance(self._planes, self._coef_buffer, self.width, self.height,
                            self.subcycle % 2, lanes[t0:t1], outputs[t0:t1], plan=self._kplan)
            self.subcycle += t1 - t0
        return outputs

    @property
    def outputs(self):
        """Outputs ``(4, height, width)`` (``(k, 4, height, width)`` with ``streams=k``), dtype
        ``uint8``: ``outputs[d, y, x]`` is output ``d`` of cell ``(x, y)``. Unlike the simple
        emulator's, this is a fresh array unpacked from the bit planes: writing into it does
        not change the state, assigning an array to the property does."""
        k, hg, n = self._k, self._hg, self._n
        result = np.empty((k, 4, self.height, self.width), dtype=np.uint8)
        for p in range(2):
            for g in range(2):
                o = (p + g) % 2
                bits = _unpack_cells(self._state[p, :, :, g, 1:hg + 1], n)   # (4, k, hg, n)
                result[:, :, g::2, o::2] = bits.transpose(1, 0, 2, 3)
        return result[0] if self.streams is None else result

    @outputs.setter
    def outputs(self, value):
        shape = (4, self.height, self.width)
        full = shape if self.streams is None else (self._k,) + shape
        array = np.asarray(value)
        try:
            array = np.broadcast_to(array, full)
        except ValueError:
            raise ValueError(f"Outputs have shape {full}, not {array.shape}") from None
        if array.size and ((array != 0) & (array != 1)).any():
            raise ValueError("Outputs are bits: every value must be 0 or 1")
        array = array.astype(np.uint8).reshape((self._k,) + shape)
        for p in range(2):
            for g in range(2):
                o = (p + g) % 2
                bits = array[:, :, g::2, o::2].transpose(1, 0, 2, 3)        # (4, k, hg, n)
                self._state[p, :, :, g, 1:self._hg + 1] = _pack_cells(bits, self._nw)


def _run_blocks(blocks):
    """Evaluate blocks of one parity (see the module docstring): gather the E and W inputs
    (one row group direct, the other shifted by a bit with the edge cell filled in), then the
    four levels of the ANF evaluation for all outputs at once."""
    band, bxor, bor = np.bitwise_and, np.bitwise_xor, np.bitwise_or
    lsh, rsh, copy = np.left_shift, np.right_shift, np.copyto
    for b in blocks:
        # E input: W outputs of the cells to the east. With several words per row, the shift
        # runs over the rows of a stream as one flat word sequence, so the last word of a row
        # takes a carry from the next row into its bit 63: either a padding bit (harmless: no
        # cell reads it) or, when 64 divides n, the edge cell n - 1, which is then cleared.
        copy(b["e_direct_dst"], b["e_direct_src"])
        src, dst, tmp = b["e_shift_src"], b["e_shift_dst"], b["tmp"]
        rsh(src, _ONE, out=dst)                       # cell i reads cell i + 1
        if b["carry"]:
            lsh(src[:, 1:], _BIT63, out=tmp[:, 1:])
            bor(dst[:, :-1], tmp[:, 1:], out=dst[:, :-1])
        edge = b["e_edge"]
        if b["clear"]:
            band(edge, b["e_keep"], out=edge)
        bor(edge, b["e_bits"], out=edge)
        # W input: E outputs of the cells to the west (the same the other way round; bit 0 of
        # a row's first word is the edge cell 0).
        copy(b["w_direct_dst"], b["w_direct_src"])
        src, dst = b["w_shift_src"], b["w_shift_dst"]
        lsh(src, _ONE, out=dst)                       # cell i reads cell i - 1
        if b["carry"]:
            rsh(src[:, :-1], _BIT63, out=tmp[:, :-1])
            bor(dst[:, 1:], tmp[:, :-1], out=dst[:, 1:])
        edge = b["w_edge"]
        if b["clear"]:
            band(edge, _NOT_ONE, out=edge)
        bor(edge, b["w_bits"], out=edge)
        # ANF, Horner style over N, E, S, W.
        t1, t2, t3 = b["t1"], b["t2"], b["t3"]
        band(b["c1"], b["n"], out=t1)
        bxor(t1, b["c0"], out=t1)
        band(t1[1::2], b["e"], out=t2)
        bxor(t2, t1[0::2], out=t2)
        band(t2[1::2], b["s"], out=t3)
        bxor(t3, t2[0::2], out=t3)
        out = b["out"]
        band(t3[1], b["w"], out=out)
        bxor(out, t3[0], out=out)
