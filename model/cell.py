"""Cell conventions: directions, LUT addressing and the two views of a cell's configuration.

Everything here follows ``SPEC.md`` sections 2 and 3:

* directions are indexed ``N=0, E=1, S=2, W=3`` for inputs and outputs alike;
* a cell's LUT address is ``a = N | E<<1 | S<<2 | W<<3`` (input N is address bit 0);
* the *table view* is four 16-bit integers ``[N, E, S, W]``; bit ``a`` of ``LUT[d]`` is output
  ``d`` for address ``a``;
* the *word view* is one 64-bit integer, the contents of a 16 x 4 memory: word ``a`` (bits
  ``4a .. 4a+3``) holds the four outputs for address ``a``, bit ``d`` of the word being output
  ``d``. So bit ``4a + d`` of the word view equals bit ``a`` of ``LUT[d]``.
"""

import inspect

from .checks import check_int
from .terms import DIRECTIONS, Direction, E, N, S, W

__all__ = [
    "Direction", "N", "E", "S", "W", "DIRECTIONS",
    "address", "tables_to_word", "word_to_tables", "lut_from_function",
    "PASS_THROUGH", "REFLECTOR", "COPY", "COPY_N", "COPY_E", "COPY_S", "COPY_W", "ZERO",
]

#: LUT that forwards input N (bit a of the table is bit 0 of a), and likewise for E, S, W.
COPY_N, COPY_E, COPY_S, COPY_W = 0xAAAA, 0xCCCC, 0xF0F0, 0xFF00
#: The LUT that copies input ``d``, by side (``COPY[S]`` is :data:`COPY_S`); also the mask of
#: the LUT addresses whose bit ``d`` is set. Every module takes its copy tables from here.
COPY = (COPY_N, COPY_E, COPY_S, COPY_W)
#: Tables of the unconfigured cell: every output constant 0 (SPEC section 3).
ZERO = (0, 0, 0, 0)
#: Every signal continues straight on: output N copies input S, and so on (SPEC section 3).
PASS_THROUGH = (COPY_S, COPY_W, COPY_N, COPY_E)
#: Each output echoes the input on its own side (SPEC section 3).
REFLECTOR = (COPY_N, COPY_E, COPY_S, COPY_W)


def address(n, e, s, w):
    """The LUT address (0..15) of a cell whose inputs are ``n, e, s, w`` (each 0 or 1)."""
    return (int(n) & 1) | (int(e) & 1) << 1 | (int(s) & 1) << 2 | (int(w) & 1) << 3


def _check_tables(tables):
    tables = tuple(tables)
    if len(tables) != 4:
        raise ValueError(f"A cell has 4 LUTs [N, E, S, W], not {len(tables)}")
    result = []
    for d, lut in zip(DIRECTIONS, tables):
        result.append(check_int(lut, f"LUT {d.name}", minimum=0, maximum=0xFFFF))
    return tuple(result)


def tables_to_word(tables):
    """Convert the table view ``[N, E, S, W]`` (four 16-bit ints) to the 64-bit word view.

    :raises ValueError: if there are not four tables or one is not a 16-bit integer.
    """
    tables = _check_tables(tables)
    word = 0
    for a in range(16):
        for d in range(4):
            word |= ((tables[d] >> a) & 1) << (4 * a + d)
    return word


def word_to_tables(word):
    """Convert the 64-bit word view to the table view, a tuple ``(N, E, S, W)`` of 16-bit ints.

    :raises ValueError: if ``word`` is not an integer in ``0 .. 2**64 - 1``.
    """
    word = check_int(word, "A cell's word view", minimum=0, maximum=(1 << 64) - 1)
    tables = [0, 0, 0, 0]
    for a in range(16):
        for d in range(4):
            tables[d] |= ((word >> (4 * a + d)) & 1) << a
    return tuple(tables)


def lut_from_function(function):
    """Build one 16-bit LUT from a boolean function of the cell's inputs.

    ``function`` is called for each of the 16 addresses with the keyword arguments it names
    among ``n, e, s, w`` (each ``0`` or ``1``; any it does not name are ignored, so
    ``lambda n, s: n ^ s`` is fine), and its truth value is bit ``a`` of the LUT. A constant
    ``0``/``1``/``False``/``True`` gives a constant output.

    :raises TypeError: if ``function`` is neither callable nor a constant, or takes an argument
        other than ``n, e, s, w``.
    """
    if isinstance(function, (bool, int)) and function in (0, 1):
        return 0xFFFF if function else 0
    if not callable(function):
        raise TypeError(f"A LUT is given by a function of n, e, s, w or by 0/1, not {function!r}")
    params = inspect.signature(function).parameters
    names = [p for p in params if params[p].kind not in (inspect.Parameter.VAR_KEYWORD,
                                                          inspect.Parameter.VAR_POSITIONAL)]
    inputs = [d.input_name for d in DIRECTIONS]
    unknown = [p for p in names if p not in inputs]
    if unknown:
        raise TypeError(f"LUT functions take arguments among n, e, s, w; got {', '.join(unknown)}")
    lut = 0
    for a in range(16):
        bits = {name: (a >> d) & 1 for d, name in enumerate(inputs)}
        if function(**{p: bits[p] for p in names}):
            lut |= 1 << a
    return lut
