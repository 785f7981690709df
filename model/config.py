"""A grid's configuration: the four LUTs of every cell, and its configuration frames.

The canonical in-memory form is a numpy array ``luts`` of shape ``(height, width, 4)`` and dtype
``uint16``: ``luts[y, x, d]`` is LUT ``d`` (``N=0, E=1, S=2, W=3``) of cell ``(x, y)`` in the
table view of SPEC section 3.

A *configuration frame* is what the gateware's configuration port writes or reads in one
transfer (SPEC section 7): one LUT address ``a`` of one row ``y`` of cells, that is word ``a`` of
the 16 x 4 memory of each cell in the row. As an integer of ``4 * width`` bits, bit ``4x + d`` is
output ``d`` of cell ``(x, y)`` for address ``a``. A whole configuration is ``16 * height``
frames. The frame *record*, the byte string that the gateware's CRC runs over, is
``row`` (2 bytes, little-endian), ``a`` (1 byte), then the frame (``width / 2`` bytes,
little-endian); see :func:`frame_record` and :meth:`Configuration.frames_crc`.
"""

import hashlib
import zlib

import numpy as np
from amaranth.lib import crc

from .cell import tables_to_word, word_to_tables
from .checks import check_int

__all__ = ["Configuration", "GridSizeError", "check_grid_size", "frame_record", "FRAME_CRC"]

#: The CRC over configuration frame records, shared by host code and gateware: CRC-32 as in
#: zlib (CRC-32/ISO-HDLC), one byte at a time.
FRAME_CRC = crc.catalog.CRC32_ISO_HDLC(data_width=8)


class GridSizeError(ValueError):
    """A grid size that SPEC section 1 does not allow (odd, zero, or too large)."""


def check_grid_size(width, height, *, what="grid"):
    """Check a grid size, in cells: both even, at least 2, at most 65534 (the BGBS fields
    are 16-bit), and at most 2**26 cells in all (BGBS ``payload_bits`` is a 32-bit field).

    :raises GridSizeError: naming the offending dimension and value.
    """
    for name, value in (("width", width), ("height", height)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise GridSizeError(f"{what.capitalize()} {name} must be an integer number of cells, "
                                f"not {value!r}")
        if value < 2 or value % 2 or value > 0xFFFE:
            raise GridSizeError(f"{what.capitalize()} {name} must be even and between 2 and "
                                f"65534 cells (SPEC section 1), not {value}")
    if width * height * 64 >= 1 << 32:
        raise GridSizeError(f"A {width} x {height} {what} has more than 2**26 cells, more than "
                            "a BGBS bitstream can hold (SPEC section 5)")
    return int(width), int(height)


def frame_record(row, address, frame, width):
    """The bytes of one configuration frame record, over which the frame CRC runs.

    :param row: cell row ``y``.
    :param address: LUT address ``a``, 0..15.
    :param frame: the frame, an integer of ``4 * width`` bits.
    :param width: grid width in cells (even).
    """
    return (row.to_bytes(2, "little") + bytes([address]) + frame.to_bytes(width // 2, "little"))


class Configuration:
    """The LUTs of a ``width`` x ``height`` grid (cells).

    :param width, height: grid size in cells; even and at least 2 (SPEC section 1).
    :param luts: optional array-like of shape ``(height, width, 4)`` holding 16-bit LUT tables
        ``[N, E, S, W]`` per cell. Defaults to all zero (every cell unconfigured).
    :raises GridSizeError: for a size SPEC section 1 does not allow.
    :raises ValueError: if ``luts`` has the wrong shape or a value outside 16 bits.
    """

    def __init__(self, width, height, luts=None):
        self._width, self._height = check_grid_size(width, height)
        if luts is None:
            self.luts = np.zeros((self._height, self._width, 4), dtype=np.uint16)
        else:
            array = np.asarray(luts)
            if array.shape != (self._height, self._width, 4):
                raise ValueError(f"LUT array for a {width} x {height} grid must have shape "
                                 f"({height}, {width}, 4), not {array.shape}")
            if array.size and not np.issubdtype(array.dtype, np.integer):
                raise ValueError(f"LUT tables are 16-bit integers, not {array.dtype} values")
            if array.size and (array.min() < 0 or array.max() > 0xFFFF):
                raise ValueError("LUT tables are 16-bit values")
            self.luts = array.astype(np.uint16, copy=True)

    @property
    def width(self):
        """Grid width in cells."""
        return self._width

    @property
    def height(self):
        """Grid height in cells."""
        return self._height

    @classmethod
    def random(cls, width, height, seed=None):
        """A configuration with uniformly random LUTs, from ``numpy.random.default_rng(seed)``."""
        rng = np.random.default_rng(seed)
        return cls(width, height, rng.integers(0, 1 << 16, size=(height, width, 4),
                                               dtype=np.uint16))

    def _check_xy(self, x, y):
        if not (0 <= x < self._width and 0 <= y < self._height):
            raise IndexError(f"Cell ({x}, {y}) is outside the {self._width} x {self._height} grid")

    def __getitem__(self, xy):
        """``config[x, y]`` is the table view ``(N, E, S, W)`` of cell ``(x, y)``."""
        x, y = xy
        self._check_xy(x, y)
        return tuple(int(v) for v in self.luts[y, x])

    def __setitem__(self, xy, tables):
        """``config[x, y] = (N, E, S, W)`` sets the four LUTs of cell ``(x, y)``."""
        x, y = xy
        self._check_xy(x, y)
        tables_to_word(tables)  # validates
        self.luts[y, x] = tables

    def word(self, x, y):
        """The 64-bit word view of cell ``(x, y)`` (SPEC section 3)."""
        return tables_to_word(self[x, y])

    def set_word(self, x, y, word):
        """Set cell ``(x, y)`` from its 64-bit word view."""
        self[x, y] = word_to_tables(word)

    def __eq__(self, other):
        if not isinstance(other, Configuration):
            return NotImplemented
        return self.luts.shape == other.luts.shape and bool((self.luts == other.luts).all())

    def __repr__(self):
        used = int((self.luts != 0).any(axis=2).sum())
        return f"Configuration({self._width} x {self._height}, {used} cells configured)"

    def digest(self):
        """``"sha256:<64 hex digits>"`` of the grid size and every LUT table: the identity of
        a program that a port map records (``bitgrid-ports-v1``'s ``program``), the same for
        the same configuration however it was stored (BGBS or assembly)."""
        data = hashlib.sha256(b"bitgrid-configuration-v1")
        data.update(self._width.to_bytes(4, "little") + self._height.to_bytes(4, "little"))
        data.update(np.ascontiguousarray(self.luts, dtype="<u2").tobytes())
        return "sha256:" + data.hexdigest()

    def copy(self):
        return Configuration(self._width, self._height, self.luts)

    # Slicing and joining (tiles of a mesh, SPEC sections 4 and 8).
    def region(self, x, y, width, height):
        """The configuration of the ``width`` x ``height`` sub-grid whose north-west cell is
        ``(x, y)``. Offsets and sizes must be even so that the parity pattern is kept."""
        if x % 2 or y % 2:
            raise ValueError("Region offsets must be even to keep the phase pattern (SPEC 4)")
        if x < 0 or y < 0 or x + width > self._width or y + height > self._height:
            raise IndexError("Region lies outside the grid")
        return Configuration(width, height, self.luts[y:y + height, x:x + width])

    # Frames (SPEC section 7).
    def _check_frame_address(self, row, address):
        check_int(row, "Frame row", minimum=0, maximum=self._height - 1, error=IndexError)
        check_int(address, "Frame LUT address", minimum=0, maximum=15, error=IndexError)

    def frame(self, row, address):
        """Configuration frame ``(row, address)``: an int of ``4 * width`` bits where bit
        ``4x + d`` is bit ``address`` of LUT ``d`` of cell ``(x, row)``.

        :raises IndexError: for a row or address outside the grid.
        """
        self._check_frame_address(row, address)
        bits = (self.luts[row, :, :] >> np.uint16(address)) & 1     # (width, 4)
        packed = np.packbits(bits.astype(np.uint8).reshape(-1), bitorder="little")
        return int.from_bytes(packed.tobytes(), "little")

    def set_frame(self, row, address, frame):
        """Write configuration frame ``(row, address)`` (see :meth:`frame`).

        :raises IndexError: for a row or address outside the grid.
        :raises ValueError: for a frame that is negative or wider than ``4 * width`` bits.
        """
        self._check_frame_address(row, address)
        frame = check_int(frame, f"A frame of a {self._width}-cell row", minimum=0,
                          maximum=(1 << (4 * self._width)) - 1)
        raw = np.frombuffer(frame.to_bytes(self._width // 2, "little"), dtype=np.uint8)
        bits = np.unpackbits(raw, bitorder="little").reshape(self._width, 4).astype(np.uint16)
        mask = np.uint16(~(1 << address) & 0xFFFF)
        self.luts[row] = (self.luts[row] & mask) | (bits << np.uint16(address))

    def frames(self):
        """Every frame in the canonical load order, rows outer and LUT addresses inner:
        a list of ``(row, address, frame)``."""
        return [(y, a, self.frame(y, a)) for y in range(self._height) for a in range(16)]

    def frames_crc(self):
        """CRC-32 (:data:`FRAME_CRC`) over the frame records of :meth:`frames`, in that order:
        the value the gateware's configuration port must have computed when the load is
        committed (SPEC section 7)."""
        data = b"".join(frame_record(y, a, f, self._width) for y, a, f in self.frames())
        # FRAME_CRC is zlib's CRC-32 (tests/test_config.py checks the two agree); zlib computes
        # it in C, where FRAME_CRC.compute() takes seconds on large grids.
        return zlib.crc32(data)
