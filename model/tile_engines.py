"""The emulators a tile of a decomposed grid runs on (:mod:`bitgrid.mpi`), behind one
interface: ``advance(phase, inputs)`` runs a batch of subcycles on a lane array (the format
of :mod:`bitgrid.kernel`: uint8 ``(subcycles, 2 * (W + H))``, buses N, E, S, W) and returns
the edge outputs of each; ``begin``, ``read(rows, cols)``, ``write(rows, cols, values)`` and
``end`` exchange cell outputs (the halos). :func:`tile_engine` makes one by name
(:data:`EMULATORS`).
"""

import numpy as np

__all__ = ["EMULATORS", "FAST_MIN_CELLS", "tile_engine", "auto_emulator"]

#: Without numba, ``emulator="auto"`` runs tiles of at least this many cells (halo included) on
#: the bit-parallel :class:`~bitgrid.fastemu.FastEmulator`, smaller ones on the reference.
FAST_MIN_CELLS = 256 * 256

#: Per-tile emulators: ``"auto"``, ``"kernel"`` (:func:`bitgrid.kernel.advance`), ``"fast"``
#: (:class:`~bitgrid.fastemu.FastEmulator`), ``"reference"``
#: (:class:`~bitgrid.emulator.Emulator`).
EMULATORS = ("auto", "kernel", "fast", "reference")


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


def tile_engine(config, name):
    """The engine running emulator ``name`` (one of :data:`EMULATORS` but ``"auto"``) on a
    tile ``config``."""
    if name == "kernel":
        from .kernel import available
        if not available():
            raise ValueError("the 'kernel' emulator needs numba (pip install numba); use 'fast' or "
                             "'reference'")
        return _KernelEngine(config)
    return _EmulatorEngine(config, name)


def auto_emulator(cells):
    from .kernel import available
    if available():
        return "kernel"
    return "fast" if cells >= FAST_MIN_CELLS else "reference"
