"""The project's two example programs, built with :class:`bitgrid.program.Program` from the
macros of :mod:`bitgrid.library` (the one definition of the adder column and the text lanes).

* :func:`adder` -- an ``n``-bit ripple-carry adder, one full-adder cell per bit
  (:class:`Adder`).
* :func:`text_lanes` -- ``k`` pass-through lanes carrying a text stream west to east
  (:class:`TextLanes`).

Both expose the same interface: ``config`` (a :class:`~bitgrid.config.Configuration`),
``program`` (the :class:`~bitgrid.program.Program` it came from), ``encode(...)`` (a list of
:class:`~bitgrid.emulator.Edges`, one per subcycle), ``decode(outputs)`` (from the list of edge
outputs of those subcycles), ``latency`` (subcycles, see each class), ``used_inputs`` (an
``Edges`` mask of the input lanes the program reads; every other input lane is ignored and may
carry noise), ``with_noise(inputs, seed)``, ``run(...)`` on the reference emulator and
``save_case(directory, ...)`` which writes a ``bitgrid-vectors-v1`` case for the command line
and the RTL simulators.

Edge words are integers with bit ``i`` = lane ``i`` (SPEC section 1): lane ``i`` of N/S is column
``x = i``, lane ``i`` of E/W is row ``y = i``. Subcycle ``t`` updates the cells with
``(x + y) % 2 == t % 2`` (SPEC section 4).
"""

import random

from . import library
from .checks import check_int
from .emulator import Emulator
from .terms import DIRECTIONS, Edges, side_lanes
from .program import Program
from .vectors import save_case as _save_case

__all__ = ["Adder", "adder", "TextLanes", "text_lanes", "save_adder_case", "save_text_case",
           "DEFAULT_TEXT"]

#: The sentence :func:`save_text_case` sends by default.
DEFAULT_TEXT = "Hello, BitGrid! The quick brown fox jumps over the lazy dog."


def _even_at_least(value, minimum=2):
    return max(minimum, value + (value % 2))


def _noise(inputs, used, width, height, seed):
    """``inputs`` with random bits on every lane that ``used`` does not mark."""
    rng = random.Random(seed)
    result = []
    for edges in inputs:
        edges = Edges.coerce(edges)
        words = []
        for side in DIRECTIONS:
            mask = used[side]
            noise = rng.getrandbits(side_lanes(side, width, height)) & ~mask
            words.append((edges[side] & mask) | noise)
        result.append(Edges(*words))
    return result


class Adder:
    """An ``bits``-bit ripple-carry adder on a ``width`` x ``height`` grid.

    Layout (one row per bit; ``c`` is the adder column, by default the east column
    ``width - 1``)::

        row i < bits:  W_in[i]=a_i -> [E=w] ... [E=w] -> FA(c, i) -> [E=w, W=e] ... -> E_out[i]
                                                             ^ b_i travels west from E_in[i]
        column c:      N_in[c]=carry in -> FA(c,0) -> FA(c,1) -> ... -> FA(c,bits-1)
                       -> [S=n] ... -> S_out[c] = carry out

    * Full-adder cell ``(c, i)``: input W is ``a_i``, E is ``b_i``, N is the carry in;
      output E is the sum ``n ^ e ^ w``, output S the carry ``majority(n, e, w)``.
    * Cells ``(x, i)`` with ``x < c`` pass ``a_i`` east; cells with ``x > c`` pass ``b_i`` west
      and the sum bit east (two routes in one cell).
    * If ``bits < height``, cells ``(c, bits .. height-1)`` carry the carry-out south.

    I/O map (lanes):

    ======================= =========================================================
    ``W_in[i]``, i < bits   bit ``i`` of operand ``a``
    ``E_in[i]``, i < bits   bit ``i`` of operand ``b``
    ``N_in[c]``             carry in (0 for a plain ``a + b``)
    ``E_out[i]``, i < bits  bit ``i`` of the sum
    ``S_out[c]``            carry out, bit ``bits`` of the sum
    every other lane        inputs ignored (may carry noise); outputs constant 0
    ======================= =========================================================

    Timing: hold ``a``, ``b`` (and the carry in) for :attr:`latency` subcycles; the sum is on
    the edge outputs read after the last of them. Latency for operands first applied at a
    subcycle of parity ``p`` (:meth:`latency_from`)::

        max(p + c, width - c - p) + bits + max(width - 1 - c, height - bits)

    which is ``width + height - 1 + p`` for the default column. :attr:`latency` is the larger of
    the two parities, so it holds from any starting subcycle, and it is tight: with one subcycle
    less some operand change is not yet visible (``tests/test_examples.py`` checks both). The
    network has no feedback, so the result does not depend on the previous operands.

    :param bits: operand width ``n >= 1``.
    :param width: grid width in cells, even, ``>= 2``. Default: ``height``, so ``adder(8)`` fills
        an 8 x 8 grid. A narrower grid is faster (one subcycle less per column).
    :param height: grid height in cells, even, ``>= bits``. Default: ``bits`` rounded up to even.
    :param column: the adder column ``c``, ``0 <= c < width``. Default ``width - 1``, which gives
        the least latency (``width + bits - 1``, the Manhattan distance from ``a_0`` to the top
        sum bit, plus the parity subcycle).
    """

    def __init__(self, bits, width=None, height=None, column=None):
        bits = check_int(bits, "Adder bits", minimum=1)
        if height is None:
            height = _even_at_least(bits)
        if width is None:
            width = height
        program = Program(width, height)
        if height < bits:
            raise ValueError(f"A {bits}-bit adder needs a grid at least {bits} cells high, "
                             f"not {height}")
        if column is None:
            column = width - 1
        column = check_int(column, "Adder column", minimum=0, maximum=width - 1)
        self.bits, self.width, self.height, self.column = bits, width, height, column
        c = column
        # The adder column is the library's ripple-carry adder (bitgrid.library, "adder").
        library.build("adder", bits=bits, carry_in=True).place(program, c, 0)
        for i in range(bits):
            if c > 0:
                program.route(0, i, "E", c)                 # a_i east to the adder column
            if c < width - 1:
                program.route(width - 1, i, "W", width - 1 - c)   # b_i west
                program.route(c + 1, i, "E")                      # sum bit east to E_out[i]
        if bits < height:
            program.route(c, bits, "S")                     # carry out south to S_out[c]
        self.program = program
        self.config = program.config

    # I/O map --------------------------------------------------------------------------------
    @property
    def mask(self):
        """``2**bits - 1``."""
        return (1 << self.bits) - 1

    @property
    def used_inputs(self):
        """:class:`Edges` mask of the input lanes the adder reads (a, b and the carry in)."""
        return Edges(n=1 << self.column, e=self.mask, s=0, w=self.mask)

    def latency_from(self, start):
        """Subcycles to hold operands first applied at subcycle ``start`` (only its parity
        matters) until the sum can be read; see the class docstring."""
        p, c, w, h, n = start % 2, self.column, self.width, self.height, self.bits
        return max(p + c, w - c - p) + n + max(w - 1 - c, h - n)

    @property
    def latency(self):
        """Subcycles to hold each operand pair, valid from any starting subcycle: the larger of
        :meth:`latency_from` for the two parities. The sum is read after the last of them."""
        return max(self.latency_from(0), self.latency_from(1))

    def inputs(self, a, b, carry=0):
        """The edge inputs for operands ``a``, ``b`` (``0 <= a, b < 2**bits``) and carry in.

        :raises ValueError: for an operand out of range.
        """
        a = check_int(a, "Operand a", minimum=0, maximum=self.mask)
        b = check_int(b, "Operand b", minimum=0, maximum=self.mask)
        carry = check_int(carry, "Carry in", minimum=0, maximum=1)
        return Edges(n=carry << self.column, e=b, s=0, w=a)

    def result(self, outputs):
        """The ``bits + 1``-bit sum in one :class:`Edges` of edge outputs: ``E_out`` lanes
        ``0 .. bits-1`` and the carry out ``S_out[c]`` as bit ``bits``."""
        outputs = Edges.coerce(outputs)
        return (outputs.e & self.mask) | ((outputs.s >> self.column) & 1) << self.bits

    def encode(self, pairs, carry=0):
        """Edge-input stream for ``pairs`` ``[(a, b), ...]``: each pair held for
        :attr:`latency` subcycles, one :class:`Edges` per subcycle."""
        stream = []
        for a, b in pairs:
            stream.extend([self.inputs(a, b, carry)] * self.latency)
        return stream

    def decode(self, outputs, start=0):
        """The sums from the edge outputs of a stream made by :meth:`encode`: the outputs
        read at the last subcycle of each pair's hold. ``start`` skips that many leading
        subcycles (if the stream did not begin the run)."""
        hold = self.latency
        outputs = outputs[start:]
        return [self.result(outputs[k + hold - 1])
                for k in range(0, len(outputs) - hold + 1, hold)]

    def with_noise(self, inputs, seed=None):
        """``inputs`` with random bits on every lane the adder ignores."""
        return _noise(inputs, self.used_inputs, self.width, self.height, seed)

    def run(self, pairs, carry=0, emulator=None):
        """Add ``pairs`` on the reference emulator (a fresh one unless given); return the
        sums."""
        emulator = emulator or Emulator(self.config)
        return self.decode(emulator.run(self.encode(pairs, carry)))

    def describe(self):
        """One paragraph for a vector case's ``description``."""
        return (f"{self.bits}-bit ripple-carry adder on a {self.width}x{self.height} grid "
                f"(bitgrid.examples.adder, full-adder column x={self.column}): a on W_in lanes "
                f"0..{self.bits - 1}, b on E_in lanes 0..{self.bits - 1}, carry in on "
                f"N_in[{self.column}] (0); sum bits on E_out lanes 0..{self.bits - 1}, carry out "
                f"on S_out[{self.column}]. Each pair is held {self.latency} subcycles and the "
                f"sum is valid at the last of them.")

    def save_case(self, directory, pairs, name=None, *, noise_seed=None, order=0):
        """Write a ``bitgrid-vectors-v1`` case (``name.json`` + ``name.bgbs``) that adds
        ``pairs`` (each held :attr:`latency` subcycles). With ``noise_seed``, the ignored input
        lanes carry random bits. Returns the JSON path."""
        name = name or f"adder{self.bits}"
        inputs = self.encode(pairs)
        if noise_seed is not None:
            inputs = self.with_noise(inputs, noise_seed)
        sums = ", ".join(f"{a}+{b}" for a, b in pairs)
        return _save_case(directory, name, self.config, inputs, order=order,
                          description=f"{self.describe()} Pairs: {sums}.")


def adder(n, width=None, height=None, column=None):
    """An ``n``-bit ripple-carry adder (:class:`Adder`); ``adder(8)`` is on an 8 x 8 grid."""
    return Adder(n, width=width, height=height, column=column)


class TextLanes:
    """``lanes`` pass-through lanes carrying a text stream west to east.

    Layout: lane ``i`` is row ``y = first_row + i``, a straight route of ``width`` cells, each
    with only output E set (``E = w``). ``W_in[y]`` enters, ``E_out[y]`` leaves. All other cells
    are unconfigured, so noise on any other input lane (N, S, E, and the unused W rows) reaches
    no lane.

    I/O map:

    ================================== ==================================================
    ``W_in[first_row + i]``, i < lanes bit ``i`` of the current word
    ``E_out[first_row + i]``           bit ``i`` of the word, :attr:`latency` subcycles on
    every other lane                   inputs ignored; outputs constant 0
    ================================== ==================================================

    Encoding: the text's UTF-8 bytes form a bit stream (byte 0 first, least significant bit
    first), cut into ``lanes``-bit words (the last word padded with 0); with 8 lanes, one word is
    one byte.

    Timing (SPEC section 4): a lane cell updates every other subcycle and holds its output in
    between, so a lane takes a new bit once every :attr:`period` = 2 subcycles; faster, the
    first cell would miss values. Word ``j`` is applied on subcycles ``2j`` and ``2j + 1`` of
    the stream (every lane samples exactly once in those two, whatever the parity of its row and
    of the starting subcycle) and is on the outputs read after subcycle ``2j + latency - 1``,
    with :attr:`latency` = ``width + 1``: a lane of ``width`` cells takes ``width`` subcycles,
    plus one for the lanes whose first cell samples on the second subcycle of the hold. This is
    tight: one subcycle earlier, those lanes still show the previous word. Throughput: one word
    (one byte with 8 lanes) per 2 subcycles.

    :param lanes: number of lanes, ``1 <= lanes <= height - first_row``.
    :param width: grid width in cells (even, >= 2); the lane length.
    :param height: grid height (even, >= 2). Default: ``first_row + lanes`` rounded up to even.
    :param first_row: row of lane 0.
    """

    #: Subcycles per word.
    period = 2

    def __init__(self, lanes=8, width=8, height=None, first_row=0):
        lanes = check_int(lanes, "Text lanes", minimum=1)
        first_row = check_int(first_row, "first_row", minimum=0)
        if height is None:
            height = _even_at_least(first_row + lanes)
        program = Program(width, height)
        if first_row + lanes > height:
            raise ValueError(f"{lanes} lanes from row {first_row} do not fit in a grid "
                             f"{height} cells high")
        # The lanes are the library's text-stream macro (bitgrid.library, "text_stream").
        library.build("text_stream", lanes=lanes, length=width).place(program, 0, first_row)
        self.lanes, self.width, self.height, self.first_row = lanes, width, height, first_row
        self.program = program
        self.config = program.config

    @property
    def mask(self):
        """``2**lanes - 1``: the lane bits of a word."""
        return (1 << self.lanes) - 1

    @property
    def used_inputs(self):
        """:class:`Edges` mask of the input lanes read (the W rows of the lanes)."""
        return Edges(w=self.mask << self.first_row)

    @property
    def latency(self):
        """Subcycles from the first subcycle of a word to the one after which it can be read:
        ``width + 1``."""
        return self.width + 1

    def words(self, text):
        """The ``lanes``-bit words of ``text`` (UTF-8, see the class docstring)."""
        data = text.encode("utf-8")
        bits = int.from_bytes(data, "little")
        count = -(-8 * len(data) // self.lanes)
        return [(bits >> (j * self.lanes)) & self.mask for j in range(count)]

    def encode(self, text):
        """Edge inputs, one :class:`Edges` per subcycle: each word held for 2 subcycles, then
        ``latency - 2`` subcycles of zeros so that the last word reaches the outputs. Length
        ``2 * len(words) + latency - 2``."""
        stream = []
        for word in self.words(text):
            stream.extend([Edges(w=word << self.first_row)] * self.period)
        stream.extend([Edges()] * (self.latency - self.period))
        return stream

    def decode_words(self, outputs, start=0):
        """The words in ``outputs`` (edge outputs from the start of an :meth:`encode` stream,
        or from index ``start``): word ``j`` is read at index ``start + 2j + latency - 1``."""
        first = start + self.latency - 1
        return [(Edges.coerce(outputs[t]).e >> self.first_row) & self.mask
                for t in range(first, len(outputs), self.period)]

    def decode(self, outputs, length=None, errors="strict", start=0):
        """The text in ``outputs`` (see :meth:`decode_words`; ``start`` skips that many
        leading subcycles).

        :param length: number of UTF-8 bytes to keep. Default: every complete byte, minus the
            NUL bytes that padding the last word can add when ``lanes > 8``.
        """
        words = self.decode_words(outputs, start)
        bits = 0
        for j, word in enumerate(words):
            bits |= word << (j * self.lanes)
        count = len(words) * self.lanes // 8
        data = bits.to_bytes(count, "little") if count else b""
        if length is not None:
            data = data[:length]
        else:
            # Bytes wholly inside the padding of the last word are NUL; at most (lanes-1)//8.
            for _ in range((self.lanes - 1) // 8):
                if data.endswith(b"\x00"):
                    data = data[:-1]
        return data.decode("utf-8", errors)

    def with_noise(self, inputs, seed=None):
        """``inputs`` with random bits on every lane the program ignores."""
        return _noise(inputs, self.used_inputs, self.width, self.height, seed)

    def run(self, text, emulator=None, noise_seed=None):
        """Send ``text`` through the lanes on the reference emulator; return what arrives."""
        emulator = emulator or Emulator(self.config)
        inputs = self.encode(text)
        if noise_seed is not None:
            inputs = self.with_noise(inputs, noise_seed)
        return self.decode(emulator.run(inputs))

    def describe(self):
        rows = f"{self.first_row}..{self.first_row + self.lanes - 1}"
        return (f"{self.lanes} pass lanes W->E on a {self.width}x{self.height} grid "
                f"(bitgrid.examples.text_lanes): rows {rows}, W_in -> E_out; UTF-8 text, "
                f"{self.lanes} bits per word, LSB first, each word held 2 subcycles; word j is "
                f"on E_out after subcycle 2j+{self.latency - 1}.")

    def save_case(self, directory, text, name="text_lanes", *, noise_seed=None, order=0):
        """Write a ``bitgrid-vectors-v1`` case sending ``text``; with ``noise_seed``, the
        ignored input lanes carry random bits. Returns the JSON path."""
        inputs = self.encode(text)
        if noise_seed is not None:
            inputs = self.with_noise(inputs, noise_seed)
        return _save_case(directory, name, self.config, inputs, order=order,
                          description=f"{self.describe()} Text: {text!r}.")


def text_lanes(lanes=8, width=8, height=None, first_row=0):
    """``lanes`` text lanes W->E (:class:`TextLanes`); the default is 8 lanes on an 8 x 8
    grid, one byte per 2 subcycles, latency 9 subcycles."""
    return TextLanes(lanes, width=width, height=height, first_row=first_row)


def save_adder_case(directory, n=8, pairs=None, name=None, *, width=None, height=None,
                    column=None, noise_seed=None, order=0, count=24, seed=0):
    """Write a ``bitgrid-vectors-v1`` case of the ``n``-bit adder (:func:`adder`) adding
    ``pairs``. Default pairs: the corner cases ``0+0``, ``max+max``, ``max+1``, ``1+max`` and
    ``count`` pairs from ``random.Random(seed)``. Returns the JSON path."""
    example = adder(n, width=width, height=height, column=column)
    if pairs is None:
        top = example.mask
        rng = random.Random(seed)
        pairs = [(0, 0), (top, top), (top, 1), (1, top)]
        pairs += [(rng.randint(0, top), rng.randint(0, top)) for _ in range(count)]
    return example.save_case(directory, pairs, name, noise_seed=noise_seed, order=order)


def save_text_case(directory, text=DEFAULT_TEXT, name="text_lanes", *, lanes=8, width=8,
                   height=None, first_row=0, noise_seed=None, order=0):
    """Write a ``bitgrid-vectors-v1`` case of :func:`text_lanes` sending ``text``. Returns the
    JSON path."""
    example = text_lanes(lanes, width=width, height=height, first_row=first_row)
    return example.save_case(directory, text, name, noise_seed=noise_seed, order=order)
