"""The reference emulator: the golden model every other target is compared with.

It follows SPEC sections 2 to 4 literally and evaluates whole numpy arrays per subcycle (no
per-cell Python loop). State is ``outputs``, an array of shape ``(4, height, width)`` and dtype
``uint8``: ``outputs[d, y, x]`` is output ``d`` (``N=0, E=1, S=2, W=3``) of cell ``(x, y)``.
"""


import numpy as np

from .config import Configuration
from .terms import Edges

__all__ = ["Edges", "Emulator"]


def _word_bits(word, count):
    """Lane bits of ``word`` as a uint8 array of ``count`` elements."""
    raw = np.frombuffer(int(word).to_bytes((count + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:count]


def _bits_word(bits):
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


class Emulator:
    """Reference emulator of one grid (SPEC sections 2-4).

    :param config: the :class:`~bitgrid.config.Configuration` to run (copied).

    After construction (and after :meth:`reset`) every output is 0 and the subcycle counter is
    0, so the first :meth:`step` runs phase A (cells with ``(x + y)`` even).

    Implementation: the outputs live in a buffer with a one-cell border, shape
    ``(4, height + 2, width + 2)``; :attr:`outputs` is its interior. Before a subcycle the edge
    inputs are written into the border, as the outputs of virtual cells facing the grid (the N
    input of ``(x, 0)`` is the S output of virtual cell ``(x, -1)``, and so on), so every cell
    reads its inputs the same way. The cells of one parity are two strided blocks (even rows
    and odd rows), and only those two blocks are evaluated in a subcycle.
    """

    def __init__(self, config):
        if not isinstance(config, Configuration):
            raise TypeError(f"Emulator needs a Configuration, not {config!r}")
        self.width, self.height = config.width, config.height
        self._state = np.zeros((4, self.height + 2, self.width + 2), dtype=np.uint8)
        # The cells of parity p are two strided blocks, starting at cell (x, y) = (p, 0) and
        # (1 - p, 1). For each block, views of the bordered state (fixed for the emulator's
        # life: the state is only ever changed in place) give its four inputs and its outputs.
        self._blocks = [[(0, p), (1, 1 - p)] for p in (0, 1)]
        self._views = [[self._block_views(r, c) for r, c in blocks] for blocks in self._blocks]
        half = (self.height // 2, self.width // 2)
        self._addr = np.empty(half, dtype=np.uint8)
        self._shifted = np.empty(half, dtype=np.uint8)
        self._bits = np.empty((4,) + half, dtype=np.uint16)
        self.load(config)
        self.reset()

    def _block_views(self, r, c):
        """Views for the block of cells (x, y) = (c, r) + (2i, 2j), which sit at (r + 1, c + 1)
        in the bordered state: (N input, E input, S input, W input, outputs)."""
        s, h, w = self._state, self.height, self.width

        def block(array, row, col):     # every other row and column from (row, col)
            return array[..., row:row + h:2, col:col + w:2]

        return (block(s[2], r, c + 1),      # N input: S output of the cell to the north
                block(s[3], r + 1, c + 2),  # E input: W output of the cell to the east
                block(s[0], r + 2, c + 1),  # S input: N output of the cell to the south
                block(s[1], r + 1, c),      # W input: E output of the cell to the west
                block(s, r + 1, c + 1))     # the block's own four outputs

    @property
    def outputs(self):
        """Outputs ``(4, height, width)``, dtype ``uint8``: ``outputs[d, y, x]`` is output
        ``d`` of cell ``(x, y)``. A view of the emulator's state: writing into it changes the
        state; assigning an array copies it in."""
        return self._state[:, 1:-1, 1:-1]

    @outputs.setter
    def outputs(self, value):
        self._state[:, 1:-1, 1:-1] = value

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
        if (config.width, config.height) != (self.width, self.height):
            raise ValueError(f"Configuration is {config.width} x {config.height}, the emulator "
                             f"is {self.width} x {self.height}")
        self.config = config.copy()
        luts = np.moveaxis(self.config.luts, 2, 0)          # (4, H, W), direction-major
        # LUTs of each block, contiguous, in the order of _blocks.
        self._block_luts = [[np.ascontiguousarray(luts[:, r::2, c::2]) for r, c in blocks]
                            for blocks in self._blocks]

    def _check_edges(self, edges):
        edges.check_lanes(self.width, self.height)

    def inputs(self, edges):
        """The four input planes, shape ``(4, height, width)``, that the cells see now with
        edge inputs ``edges``: ``inputs[d, y, x]`` is input ``d`` of cell ``(x, y)``."""
        o, h, w = self.outputs, self.height, self.width
        edges = Edges.coerce(edges)
        inp = np.empty_like(o)
        inp[0, 1:, :] = o[2, :-1, :]        # N input = S output of the cell to the north
        inp[0, 0, :] = _word_bits(edges.n, w)
        inp[1, :, :-1] = o[3, :, 1:]        # E input = W output of the cell to the east
        inp[1, :, w - 1] = _word_bits(edges.e, h)
        inp[2, :-1, :] = o[0, 1:, :]        # S input = N output of the cell to the south
        inp[2, h - 1, :] = _word_bits(edges.s, w)
        inp[3, :, 1:] = o[1, :, :-1]        # W input = E output of the cell to the west
        inp[3, :, 0] = _word_bits(edges.w, h)
        return inp

    def step(self, edge_inputs=None):
        """Run one subcycle with ``edge_inputs`` on the edge buses and return the edge outputs.

        :param edge_inputs: anything :meth:`Edges.coerce` accepts; default all zero.
        :returns: :class:`Edges` read after the subcycle's outputs are stored.
        :raises ValueError: if an edge word has bits beyond its lane count.
        """
        edges = Edges.coerce(edge_inputs)
        self._check_edges(edges)
        state, h, w = self._state, self.height, self.width
        # Edge inputs as outputs of the virtual border cells (see the class docstring).
        state[2, 0, 1:w + 1] = _word_bits(edges.n, w)      # S output of row -1
        state[0, h + 1, 1:w + 1] = _word_bits(edges.s, w)  # N output of row H
        state[1, 1:h + 1, 0] = _word_bits(edges.w, h)      # E output of column -1
        state[3, 1:h + 1, w + 1] = _word_bits(edges.e, h)  # W output of column W
        parity = self.subcycle % 2
        addr, shifted, bits = self._addr, self._shifted, self._bits
        for views, luts in zip(self._views[parity], self._block_luts[parity]):
            n_in, e_in, s_in, w_in, out = views
            np.copyto(addr, n_in)                   # address a = N | E<<1 | S<<2 | W<<3
            np.left_shift(e_in, 1, out=shifted)
            addr |= shifted
            np.left_shift(s_in, 2, out=shifted)
            addr |= shifted
            np.left_shift(w_in, 3, out=shifted)
            addr |= shifted
            # Output d is bit a of LUT d; all the updating cells commit together.
            np.right_shift(luts, addr, out=bits)
            np.bitwise_and(bits, 1, out=out, casting="unsafe")
        self.subcycle += 1
        return self.edge_outputs()

    def edge_outputs(self):
        """The edge outputs now, as :class:`Edges` (SPEC section 2)."""
        o = self.outputs
        return Edges(n=_bits_word(o[0, 0, :]), e=_bits_word(o[1, :, -1]),
                     s=_bits_word(o[2, -1, :]), w=_bits_word(o[3, :, 0]))

    def run(self, edge_inputs):
        """Run one subcycle per element of ``edge_inputs``; return the list of edge outputs."""
        return [self.step(e) for e in edge_inputs]
