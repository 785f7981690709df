"""BGBS version 1 bitstreams: reader and writer (SPEC section 5).

A BGBS file is a 24-byte little-endian header followed by the payload: one 64-bit record per
cell in scan order, each record the four LUTs ``N, E, S, W`` as little-endian 16-bit values.

The reader is strict: it checks every header field, the payload length and the CRC-32, and
raises :class:`BitstreamError` naming the first problem found. It never returns a partly read
configuration.
"""

import enum
import errno
import os
import stat
import struct
import zlib

import numpy as np

from .config import Configuration, GridSizeError, check_grid_size

__all__ = ["ScanOrder", "Bitstream", "BitstreamError", "read", "write", "load", "save",
           "HEADER_SIZE", "MAGIC", "VERSION"]

MAGIC = b"BGBS"
VERSION = 1
HEADER_SIZE = 24
_HEADER = struct.Struct("<4sHHHHBBIIH")
assert _HEADER.size == HEADER_SIZE


class ScanOrder(enum.IntEnum):
    """Order of the cell records in the payload (SPEC section 5, header offset 12)."""
    ROW_MAJOR = 0     #: y outer, x inner
    COLUMN_MAJOR = 1  #: x outer, y inner
    SNAKE = 2         #: row-major, odd rows run east to west

    @classmethod
    def parse(cls, value):
        """Accept a ``ScanOrder``, its code (0, 1, 2) or its name (``row-major``,
        ``column-major``/``col-major``, ``snake``, case-insensitive)."""
        if isinstance(value, str):
            key = value.strip().lower().replace("_", "-")
            names = {"row-major": cls.ROW_MAJOR, "row": cls.ROW_MAJOR, "0": cls.ROW_MAJOR,
                     "column-major": cls.COLUMN_MAJOR, "col-major": cls.COLUMN_MAJOR,
                     "column": cls.COLUMN_MAJOR, "1": cls.COLUMN_MAJOR,
                     "snake": cls.SNAKE, "2": cls.SNAKE}
            if key not in names:
                raise ValueError(f"Unknown scan order {value!r}; use row-major, column-major "
                                 "or snake")
            return names[key]
        return cls(value)

    @property
    def label(self):
        return {0: "row-major", 1: "column-major", 2: "snake"}[int(self)]


class BitstreamError(ValueError):
    """A bitstream that SPEC section 5 does not allow.

    :attr reason: a short machine-readable reason, one of ``truncated header``, ``bad magic``,
        ``unsupported version``, ``bad header size``, ``bad order``, ``bad flags``,
        ``bad reserved``, ``bad size``, ``bad payload_bits``, ``truncated payload``,
        ``trailing data``, ``crc mismatch``, ``dimension mismatch``; from :func:`load` also
        ``not a file`` (a FIFO, device or socket).
    """

    def __init__(self, reason, detail):
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


def _scan_indices(width, height, order):
    """(ys, xs): the cell coordinates of payload records 0, 1, ... in ``order``."""
    ys, xs = np.mgrid[0:height, 0:width]
    if order == ScanOrder.ROW_MAJOR:
        return ys.reshape(-1), xs.reshape(-1)
    if order == ScanOrder.COLUMN_MAJOR:
        return ys.T.reshape(-1), xs.T.reshape(-1)
    if order == ScanOrder.SNAKE:
        xs = xs.copy()
        xs[1::2] = xs[1::2, ::-1]
        return ys.reshape(-1), xs.reshape(-1)
    raise ValueError(f"Unknown scan order {order!r}")


def _parse_header(data):
    """``(width, height, order, crc)`` from the first :data:`HEADER_SIZE` bytes of ``data``,
    every header field checked (SPEC section 5).

    :raises BitstreamError: ``truncated header`` if ``data`` is shorter than a header, or the
        first bad field.
    """
    if len(data) < HEADER_SIZE:
        raise BitstreamError("truncated header",
                             f"file is {len(data)} bytes, a BGBS header is {HEADER_SIZE}")
    (magic, version, header_size, w, h, order, flags, payload_bits, crc,
     reserved) = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise BitstreamError("bad magic", f"expected {MAGIC!r}, found {magic!r}; "
                             "this is not a BGBS bitstream")
    if version != VERSION:
        raise BitstreamError("unsupported version",
                             f"version {version}; this reader supports BGBS version 1")
    if header_size != HEADER_SIZE:
        raise BitstreamError("bad header size",
                             f"header_size {header_size}, BGBS v1 requires {HEADER_SIZE}")
    if order not in tuple(ScanOrder):
        raise BitstreamError("bad order",
                             f"order {order}; valid orders are 0 (row-major), "
                             "1 (column-major), 2 (snake)")
    if flags != 0:
        raise BitstreamError("bad flags", f"flags 0x{flags:02x}; BGBS v1 requires 0")
    if reserved != 0:
        raise BitstreamError("bad reserved", f"reserved field 0x{reserved:04x}, must be 0")
    try:
        check_grid_size(w, h, what="bitstream")
    except GridSizeError as error:
        raise BitstreamError("bad size", str(error)) from None
    if payload_bits != w * h * 64:
        raise BitstreamError("bad payload_bits", f"payload_bits {payload_bits}, a {w} x {h} "
                             f"grid needs {w * h * 64}")
    return w, h, order, crc


def _check_payload_size(size, w, h):
    """Check that a payload of ``size`` bytes is the ``w * h * 8`` of a ``w`` x ``h`` grid.

    :raises BitstreamError: ``truncated payload`` or ``trailing data``.
    """
    expected = w * h * 8
    if size < expected:
        raise BitstreamError("truncated payload",
                             f"payload is {size} bytes, a {w} x {h} grid needs {expected}")
    if size > expected:
        raise BitstreamError("trailing data", f"payload is {size} bytes, longer than the "
                             f"{expected} that a {w} x {h} grid needs")


class Bitstream:
    """A configuration together with the scan order it was (or will be) serialised in.

    :attr config: the :class:`~bitgrid.config.Configuration`.
    :attr order: the :class:`ScanOrder`.
    :attr crc32: the payload CRC-32 (as in zlib) of the serialised form.
    """

    def __init__(self, config, order=ScanOrder.ROW_MAJOR):
        self.config = config
        self.order = ScanOrder.parse(order)

    @property
    def width(self):
        return self.config.width

    @property
    def height(self):
        return self.config.height

    def payload(self):
        """The payload bytes: ``width * height * 8`` bytes, records in scan order."""
        ys, xs = _scan_indices(self.width, self.height, self.order)
        return self.config.luts[ys, xs].astype("<u2").tobytes()

    @property
    def crc32(self):
        return zlib.crc32(self.payload())

    def to_bytes(self):
        """Serialise to BGBS v1 bytes."""
        payload = self.payload()
        header = _HEADER.pack(MAGIC, VERSION, HEADER_SIZE, self.width, self.height,
                              int(self.order), 0, self.width * self.height * 64,
                              zlib.crc32(payload), 0)
        return header + payload

    @classmethod
    def from_bytes(cls, data, *, width=None, height=None):
        """Parse BGBS v1 bytes.

        :param width, height: if given, the size of the grid the bitstream is for; a bitstream
            of another size is rejected (``dimension mismatch``).
        :raises BitstreamError: for the first problem found (see :class:`BitstreamError`).
        """
        data = bytes(data)
        w, h, order, crc = _parse_header(data)
        payload = data[HEADER_SIZE:]
        _check_payload_size(len(payload), w, h)
        actual = zlib.crc32(payload)
        if actual != crc:
            raise BitstreamError("crc mismatch", f"header says 0x{crc:08x}, payload has "
                                 f"0x{actual:08x}; the file is corrupted")
        if (width is not None and width != w) or (height is not None and height != h):
            raise BitstreamError("dimension mismatch", f"bitstream is for a {w} x {h} grid, "
                                 f"the target grid is {width} x {height}")
        luts = np.empty((h, w, 4), dtype=np.uint16)
        ys, xs = _scan_indices(w, h, order)
        luts[ys, xs] = np.frombuffer(payload, dtype="<u2").reshape(-1, 4)
        return cls(Configuration(w, h, luts), ScanOrder(order))


def read(data, *, width=None, height=None):
    """Parse BGBS bytes into a :class:`Bitstream`; see :meth:`Bitstream.from_bytes`."""
    return Bitstream.from_bytes(data, width=width, height=height)


def write(config, order=ScanOrder.ROW_MAJOR):
    """Serialise a :class:`~bitgrid.config.Configuration` to BGBS v1 bytes in ``order``."""
    return Bitstream(config, order).to_bytes()


def load(path, *, width=None, height=None):
    """Read and parse a BGBS file, reading no more than the header says it holds.

    The header is read and checked first; the size it implies (:data:`HEADER_SIZE` plus 8
    bytes per cell) is compared with the file's size before the payload is read, so that a
    huge or endless file fails at once. Only regular files are read: a FIFO, a device such as
    ``/dev/zero`` or a socket is refused without reading (it is opened without blocking).

    :raises OSError: if the file cannot be opened or read (``IsADirectoryError`` for a folder).
    :raises BitstreamError: ``not a file`` for a FIFO, device or socket, ``truncated header``,
        ``truncated payload`` or ``trailing data`` for a file of the wrong size, else as
        :meth:`Bitstream.from_bytes`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(mode):
            raise BitstreamError("not a file", f"this is {_file_kind(mode)}; give the path "
                                 "of a .bgbs file")
        file = open(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    with file:
        header = _read_exactly(file, HEADER_SIZE)
        w, h, _, _ = _parse_header(header)
        _check_payload_size(os.fstat(fd).st_size - HEADER_SIZE, w, h)
        expected = w * h * 8
        # One byte more than the payload: a file that grew since fstat is trailing data.
        payload = _read_exactly(file, expected + 1)
        _check_payload_size(len(payload), w, h)
    return Bitstream.from_bytes(header + payload, width=width, height=height)


def _file_kind(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _read_exactly(file, size):
    """Up to ``size`` bytes from ``file``: fewer only at its end."""
    chunks, left = [], size
    while left:
        chunk = file.read(min(left, 1 << 24))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def save(path, config, order=ScanOrder.ROW_MAJOR):
    """Write ``config`` to a BGBS file in ``order``, whole or not at all
    (:func:`bitgrid.files.atomic_write`)."""
    from .files import atomic_write
    atomic_write(path, write(config, order))
