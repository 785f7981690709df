"""Port values of any width as bit arrays: the one conversion between Python integers and the
bits the tools drive and read.

A port of ``width`` bits (1 to :data:`bitgrid.ports.MAX_PORT_BITS`, any number, not limited
to a machine word) holds, per row, an integer; the tools that run many rows at once keep
those values as a 0/1 ``uint8`` array of shape ``(rows, width)``, bit ``i`` (column ``i``)
being the value's bit ``i``, least significant first, two's complement for a negative value.
Python integers appear only at the edges: :func:`to_bits` turns a sequence of them into such
an array, :func:`from_bits` turns an array back into them. No value is ever packed into a
64-bit machine integer, so a 64-bit, 65-bit or 4096-bit port works as a 1-bit one does.

One value at a time, :meth:`bitgrid.ports.Port.encode` and :meth:`~bitgrid.ports.Port.decode`
do the same (with the range check of a port); these are their array forms.
"""

import numpy as np

__all__ = ["to_bits", "from_bits"]


def to_bits(values, width):
    """The bits of ``values`` as an array.

    :param values: a sequence of integers (Python or numpy), each taken modulo
        ``2 ** width`` (a negative value as two's complement; the caller checks that it fits
        its port: :meth:`bitgrid.ports.Port.encode`).
    :param width: bits per value, at least 0.
    :returns: ``uint8`` array of shape ``(len(values), width)``, 0 or 1, column ``i`` the
        bit of weight ``2 ** i``.
    :raises ValueError: for a negative ``width``.
    """
    width = int(width)
    if width < 0:
        raise ValueError(f"A width is at least 0 bits, not {width}")
    values = list(values)
    size = (width + 7) // 8
    mask = (1 << width) - 1
    raw = b"".join((int(v) & mask).to_bytes(size, "little") for v in values)
    data = np.frombuffer(raw, dtype=np.uint8).reshape(len(values), size)
    return np.unpackbits(data, axis=1, count=width, bitorder="little")


def from_bits(bits, *, signed=False):
    """The integers held by the rows of ``bits``.

    :param bits: array-like of shape ``(rows, width)`` of 0/1 values (any integer or bool
        dtype), column ``i`` the bit of weight ``2 ** i``.
    :param signed: read each row as two's complement (bit ``width - 1`` the sign).
    :returns: list of ``rows`` Python integers (``0`` for a row of width 0).
    :raises ValueError: if ``bits`` is not two-dimensional.
    """
    bits = np.asarray(bits)
    if bits.ndim != 2:
        raise ValueError(f"Bits are an array (rows, width), not of shape {bits.shape}")
    rows, width = bits.shape
    packed = np.packbits(bits, axis=1, bitorder="little")      # nonzero is 1
    size = packed.shape[1]
    raw = packed.tobytes()
    values = [int.from_bytes(raw[k * size:(k + 1) * size], "little") for k in range(rows)]
    if signed and width:
        top = 1 << (width - 1)
        values = [v - 2 * top if v & top else v for v in values]
    return values
