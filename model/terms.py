"""The project's vocabulary, each term defined once: sides, edge buses, parity, storage kinds,
engines and simulator names.

Every other module imports these; none defines its own list of sides or storage kinds.

* Sides (SPEC section 2): :class:`Direction` ``N=0, E=1, S=2, W=3``, the index used in LUT order,
  address bits, edge bus names and link sides. ``x`` grows to the east and ``y`` to the south, so
  one step north is ``(0, -1)``.
* Edge buses (SPEC section 1): :class:`Edges`, four integer words, bit ``i`` of a word is lane
  ``i``.
* Parity (SPEC section 4): cell ``(x, y)`` has parity ``(x + y) % 2`` and updates on the
  subcycles of that parity (phase A = parity 0).
* Regions (SPEC section 10): :class:`Region`, a rectangle of cells ``x0,y0,x1,y1``, corners
  inclusive, read by :func:`parse_region` with the corners in either order (``3,3,0,0`` is
  ``0,0,3,3``) wherever a region is taken (``bitgrid compile --region``, ``bitgrid isolate``).
* Storage kinds of a cell's configuration (SPEC section 7), engines, and the RTL simulators.
"""

import enum
import re
import typing

import numpy as np

from .checks import check_choice

__all__ = [
    "Direction", "N", "E", "S", "W", "DIRECTIONS", "SIDES", "parse_side", "parse_sides",
    "side_lanes", "Edges", "parse_hex", "parity", "lane_parity_offset", "Region",
    "parse_region",
    "STORAGES", "GATEWARE_STORAGES", "check_storage", "ENGINES", "SIMULATORS",
    "check_simulator",
]


class Direction(enum.IntEnum):
    """A side of a cell or a grid (SPEC section 2). The value is the index used everywhere:
    in LUT order, in address bits and in edge bus names."""
    N = 0
    E = 1
    S = 2
    W = 3

    @property
    def opposite(self):
        """The direction facing this one: ``N.opposite is S``."""
        return Direction((self + 2) % 4)

    @property
    def step(self):
        """Cell offset ``(dx, dy)`` of one step towards this side: ``N.step == (0, -1)``."""
        return ((0, -1), (1, 0), (0, 1), (-1, 0))[self]

    @property
    def letter(self):
        """The side's letter, ``"N"``, ``"E"``, ``"S"`` or ``"W"``."""
        return self.name

    @property
    def input_name(self):
        """The name of this input in LUT functions: ``"n"``, ``"e"``, ``"s"`` or ``"w"``."""
        return self.name.lower()


N, E, S, W = Direction.N, Direction.E, Direction.S, Direction.W
#: The four sides in SPEC order.
DIRECTIONS = (N, E, S, W)
#: The side letters in SPEC order: ``"NESW"`` (iterate it for ``"N", "E", "S", "W"``).
SIDES = "NESW"

_SIDE_NAMES = {"n": N, "north": N, "e": E, "east": E, "s": S, "south": S, "w": W, "west": W}


def parse_side(side):
    """The :class:`Direction` named by ``side``: ``"N"``/``"north"`` (any case), a
    ``Direction``, or an index ``0..3``.

    :raises ValueError: ``Unknown side 'X'; use one of N, E, S, W``.
    """
    if isinstance(side, Direction):
        return side
    if isinstance(side, str):
        key = side.strip().lower()
        if key in _SIDE_NAMES:
            return _SIDE_NAMES[key]
    elif isinstance(side, (int, np.integer)) and not isinstance(side, bool) and 0 <= side <= 3:
        return Direction(int(side))
    raise ValueError(f"Unknown side {side!r}; use one of N, E, S, W")


def parse_sides(text, *, what="sides"):
    """A set of sides given as letters (``"ne"``, ``"W"``, ``""``) in canonical order: the
    string of distinct letters in N, E, S, W order (``"EN"`` gives ``"NE"``).

    :raises ValueError: if ``text`` is not a string, or has a letter other than N, E, S, W, or
        has one twice.
    """
    if not isinstance(text, str):
        raise ValueError(f"{what.capitalize()} must be a string of distinct sides from "
                         f"{SIDES!r}, not {text!r}")
    letters = text.upper()
    if set(letters) - set(SIDES) or len(set(letters)) != len(letters):
        raise ValueError(f"{what.capitalize()} must be a string of distinct sides from "
                         f"{SIDES!r}, not {text!r}")
    return "".join(side for side in SIDES if side in letters)


def side_lanes(side, width, height):
    """Lanes of the edge bus on ``side`` of a ``width`` x ``height`` grid (SPEC section 1):
    ``width`` for N and S, ``height`` for E and W."""
    return width if parse_side(side) in (N, S) else height


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
        a 4-sequence ``(n, e, s, w)`` or ``None`` (all zero). A word is an ``int``, a hex
        string (:func:`parse_hex`), or a sequence of lane bits (lane 0 first)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, typing.Mapping):
            keys = {str(k).lower(): v for k, v in value.items()}
            unknown = set(keys) - set("nesw")
            if unknown:
                raise ValueError(f"Edge buses are N, E, S, W; unknown {sorted(unknown)}")
            if len(keys) != len(value):
                raise ValueError(f"Edge buses are N, E, S, W, each once: {sorted(value)} "
                                 "names one twice")
            return cls(**{k: _to_word(v) for k, v in keys.items()})
        if not isinstance(value, (list, tuple, np.ndarray)):
            raise ValueError(f"Edge inputs are Edges, a mapping of N, E, S, W or 4 words, not "
                             f"{value!r}")
        words = [_to_word(v) for v in value]
        if len(words) != 4:
            raise ValueError(f"Edge buses are given as 4 words (N, E, S, W), not {len(words)}")
        return cls(*words)

    def side(self, side):
        """The word of bus ``side`` (a letter, a :class:`Direction` or an index)."""
        return self[parse_side(side)]

    def check_lanes(self, width, height, *, what="Edge input"):
        """``self``, if every word fits the lanes of its side of a ``width`` x ``height`` grid
        (:func:`side_lanes`; no negative words).

        :raises ValueError: for the first side (N, E, S, W order) that does not fit:
            ``Edge input N=0x10 has bits beyond its 4 lanes`` (``what`` names the buses).
        """
        for side in DIRECTIONS:
            word, count = self[side], side_lanes(side, width, height)
            if word < 0 or word >> count:
                raise ValueError(f"{what} {side.letter}=0x{word:x} has bits beyond its {count} "
                                 "lanes")
        return self

    def hex_words(self, width, height):
        """``{"N": "0x..", "E": .., "S": .., "W": ..}``: each word in lower-case hex of its
        side's lanes of a ``width`` x ``height`` grid (``bitgrid-vectors-v1``, the CLI's JSON
        steps; :func:`parse_hex` reads them back)."""
        return {side.letter: f"0x{self[side]:0{(side_lanes(side, width, height) + 3) // 4}x}"
                for side in DIRECTIONS}

    def lanes(self, side, count):
        """The bits of bus ``side`` (``"N"``, ...) as a list of ``count`` ints."""
        word = self.side(side)
        return [(word >> i) & 1 for i in range(count)]


_HEX = re.compile(r"(0[xX])?[0-9a-fA-F]+")


def parse_hex(text, *, prefix=False):
    """The value of a hex word: hex digits, after ``0x`` (required with ``prefix``, else
    optional), nothing else: no ``_``, sign or space, which ``int(text, 16)`` would take.
    ``0b...`` and ``0o...`` are refused, not read as hex. Every hex word a user gives (edge
    words of a vector file, an edge-input stream, :meth:`Edges.coerce`) is read here.

    :raises ValueError: ``expected a hex string like '0x1f', got 3``, ``'0x0_1' is not a hex
        word (hex digits, optionally after 0x, e.g. 0x1f)`` or ``'0b1' looks like a binary
        number; ...``."""
    if not isinstance(text, str) or prefix and not text[:2].lower() == "0x":
        raise ValueError(f"expected a hex string like '0x1f', got {text!r}")
    if text[:2].lower() in ("0b", "0o") and len(text) > 2:
        kind = "a binary" if text[1] in "bB" else "an octal"
        raise ValueError(f"{text!r} looks like {kind} number; the words are hex: write the "
                         "value in hex (0x...)")
    if not _HEX.fullmatch(text):
        raise ValueError(f"{text!r} is not a hex word (hex digits, "
                         f"{'after' if prefix else 'optionally after'} 0x, e.g. 0x1f)")
    return int(text, 16)


def _to_word(value):
    if isinstance(value, str):
        return parse_hex(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise ValueError(f"A bus word is an int, a hex string or a list of lane bits, not "
                         f"{value!r}")
    bits = list(value)                          # a sequence of lane bits, lane 0 first
    if any(bit not in (0, 1) for bit in bits):
        raise ValueError(f"Lane bits are 0 or 1, not {bits!r}")
    return sum(int(bit) << lane for lane, bit in enumerate(bits))


def parity(x, y):
    """The parity of cell ``(x, y)``, 0 or 1 (SPEC section 4): it updates on the subcycles
    ``t`` with ``t % 2 == parity(x, y)``; parity 0 is phase A."""
    return (x + y) % 2


def lane_parity_offset(side):
    """Parity of the boundary cell of lane 0 on ``side`` of a grid of even width and height
    (SPEC sections 1 and 4): the cell of lane ``i`` has parity ``(i + offset) % 2``. 0 for N and
    W (cells ``(i, 0)``, ``(0, i)``), 1 for S and E (cells ``(i, H-1)``, ``(W-1, i)``)."""
    return (0, 1, 1, 0)[parse_side(side)]


class Region(typing.NamedTuple):
    """A rectangle of cells, corners inclusive (SPEC section 10): ``x0 <= x <= x1``,
    ``y0 <= y <= y1``. :func:`parse_region` makes one from text or four ints."""
    x0: int
    y0: int
    x1: int
    y1: int

    def __contains__(self, xy):
        x, y = xy
        return self.x0 <= x <= self.x1 and self.y0 <= y <= self.y1

    def cells(self):
        """The region's cells ``(x, y)``, row by row."""
        return [(x, y) for y in range(self.y0, self.y1 + 1) for x in range(self.x0, self.x1 + 1)]

    def overlaps(self, other):
        return not (self.x1 < other.x0 or other.x1 < self.x0 or self.y1 < other.y0
                    or other.y1 < self.y0)

    def inside(self, width, height):
        """Whether the region lies inside a ``width`` x ``height`` grid."""
        return 0 <= self.x0 <= self.x1 < width and 0 <= self.y0 <= self.y1 < height

    def __str__(self):
        return f"{self.x0},{self.y0},{self.x1},{self.y1}"


_DIGITS = re.compile(r"[0-9]+")


def parse_region(value):
    """A :class:`Region` from ``"x0,y0,x1,y1"`` or four ints (cell coordinates of at least 0,
    corners inclusive; either corner first, so ``"3,3,0,0"`` is ``0,0,3,3``: SPEC section 10).

    :raises ValueError: ``region '1,2,3' is not x0,y0,x1,y1 ...`` (each caller names its
        option or raises its own error class with this text)."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        # ASCII digits only: int() would also take "+1", "1_0" and other scripts' digits
        numbers = [int(p) for p in parts] if all(_DIGITS.fullmatch(p) for p in parts) else None
    else:
        numbers = list(value) if isinstance(value, (tuple, list)) else None
    if numbers is None or len(numbers) != 4 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
            for v in numbers):
        raise ValueError(f"region {value!r} is "
                         "not x0,y0,x1,y1 (four cell coordinates of at least 0, corners "
                         "inclusive), for example 0,0,3,7")
    x0, y0, x1, y1 = (int(v) for v in numbers)
    return Region(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


#: Storage kinds of a cell's configuration (SPEC section 7): ``"ff"`` keeps the 64 LUT bits in
#: flip-flops (portable, ASIC-like), ``"memory"`` in a 16 x 4 LUT memory with a combinational
#: read port (one TRELLIS_DPR16X4 on ECP5, one RAM16SDP4 on Gowin). A fixed configuration
#: compiled into the gateware is either kind with ``init``.
STORAGES = ("ff", "memory")

#: Every storage kind of the gateware: :data:`STORAGES` and ``"latch"``, a 16 x 4 latch array
#: per cell written through word lines shared by a row of cells (:mod:`bitgrid.hdl.latch`),
#: for ASIC flows; it runs in Verilog simulators and synthesis only (not on FPGA boards, nor
#: in Amaranth's simulator).
GATEWARE_STORAGES = STORAGES + ("latch",)

#: Grid engines (SPEC section 7): ``"direct"``, one physical cell per BitGrid cell, a subcycle
#: per clock (:class:`bitgrid.hdl.grid.Grid`); ``"multiplexed"``, cells in block RAM, a few
#: evaluated per clock (:class:`bitgrid.hdl.multiplexed.MultiplexedGrid`). Built by
#: :func:`bitgrid.hdl.engines.make_grid`.
ENGINES = ("direct", "multiplexed")

#: RTL simulators the project drives through cocotb.
SIMULATORS = ("icarus", "verilator")


def check_storage(storage, kinds=STORAGES):
    """``storage`` if it is one of ``kinds`` (default :data:`STORAGES`; the cell, the grid and
    the RTL simulation pass :data:`GATEWARE_STORAGES`).

    :raises ValueError: ``Storage must be one of 'ff', 'memory', not 'x'``."""
    return check_choice(storage, "Storage", kinds)


def check_simulator(simulator):
    """``simulator`` if it is one of :data:`SIMULATORS`.

    :raises ValueError: ``Simulator must be one of 'icarus', 'verilator', not 'x'``."""
    return check_choice(simulator, "Simulator", SIMULATORS)
