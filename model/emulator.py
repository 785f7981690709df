"""The reference emulator: the golden model every other target is compared with.

It follows SPEC sections 2 to 4 literally and evaluates whole numpy arrays per subcycle (no
per-cell Python loop). State is ``outputs``, an array of shape ``(4, height, width)`` and dtype
``uint8``: ``outputs[d, y, x]`` is output ``d`` (``N=0, E=1, S=2, W=3``) of cell ``(x, y)``.
"""

import typing

import numpy as np

from .config import Configuration

__all__ = ["Edges", "Emulator"]


class Edges(typing.NamedTuple):
    """The four edge buses of a grid, each an integer word where bit ``i`` is lane ``i``
    (SPEC section 1): N and S have ``width`` lanes (lane ``i`` is column ``x = i``), E and W have
    ``height`` lanes (lane ``i`` is row ``y = i``). This is the word form of the
    ``bitgrid-vectors-v1`` files."""
    n: int = 0
    e: int = 0
    s: int = 0
    w: int = 0

    @classmethod
    def coerce(cls, value):
        """Accept ``Edges``, a mapping with keys ``N, E, S, W`` (any case; missing keys are 0),
        a 4-sequence ``(n, e, s, w)`` or ``None`` (all zero)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, typing.Mapping):
            keys = {str(k).lower(): v for k, v in value.items()}
            unknown = set(keys) - set("nesw")
            if unknown:
                raise ValueError(f"Edge buses are N, E, S, W; unknown {sorted(unknown)}")
            return cls(**{k: _to_word(v) for k, v in keys.items()})
        return cls(*(_to_word(v) for v in value))

    def lanes(self, side, count):
        """The bits of bus ``side`` (``"N"``, ...) as a list of ``count`` ints."""
        word = getattr(self, side.lower())
        return [(word >> i) & 1 for i in range(count)]


def _to_word(value):
    if isinstance(value, str):
        return int(value, 16)
    if isinstance(value, (int, np.integer)):
        return int(value)
    bits = np.asarray(value, dtype=np.uint8)   # a sequence of lane bits
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


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
    """

    def __init__(self, config):
        if not isinstance(config, Configuration):
            raise TypeError(f"Emulator needs a Configuration, not {config!r}")
        self.width, self.height = config.width, config.height
        self.config = config.copy()
        # LUTs direction-major, (4, H, W), for whole-array evaluation.
        self._luts = np.ascontiguousarray(np.moveaxis(self.config.luts, 2, 0))
        ys, xs = np.mgrid[0:self.height, 0:self.width]
        self._parity = [((xs + ys) % 2) == p for p in (0, 1)]
        self.reset()

    def reset(self):
        """Clear every output and the subcycle counter (SPEC section 4)."""
        self.outputs = np.zeros((4, self.height, self.width), dtype=np.uint8)
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
        self._luts = np.ascontiguousarray(np.moveaxis(self.config.luts, 2, 0))

    def _check_edges(self, edges):
        for side, count in (("n", self.width), ("s", self.width),
                            ("e", self.height), ("w", self.height)):
            word = getattr(edges, side)
            if word < 0 or word >> count:
                raise ValueError(f"Edge input {side.upper()}=0x{word:x} has bits beyond its "
                                 f"{count} lanes")

    def inputs(self, edges):
        """The four input planes, shape ``(4, height, width)``, that the cells see now with
        edge inputs ``edges``: ``inputs[d, y, x]`` is input ``d`` of cell ``(x, y)``."""
        o, h, w = self.outputs, self.height, self.width
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
        inp = self.inputs(edges)
        addr = (inp[0] | (inp[1] << 1) | (inp[2] << 2) | (inp[3] << 3)).astype(np.uint16)
        new = ((self._luts >> addr[None]) & 1).astype(np.uint8)
        np.copyto(self.outputs, new, where=self._parity[self.subcycle % 2][None])
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
