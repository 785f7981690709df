"""A small builder for grid configurations: :class:`Program`.

A :class:`Program` is a ``width`` x ``height`` grid (cells, both even, SPEC section 1) whose
cells are filled in one *output* at a time. Each output ``d`` of a cell is a boolean function of
the cell's four inputs ``n, e, s, w`` (SPEC section 3: address ``a = N | E<<1 | S<<2 | W<<3``,
LUT order ``[N, E, S, W]``), turned into a 16-bit LUT by
:func:`bitgrid.cell.lut_from_function`. An output that is never set stays constant 0, like an
unconfigured cell (SPEC section 3).

Every output may be set **once**: setting an output that is already set raises
:class:`ValueError`. Outputs are the unit of allocation, so one cell can hold two independent
routes (a cross-over, or a lane running east beside a lane running west) and still catch two
routes that collide on the same output.

Coordinates follow SPEC section 2: ``x`` grows to the east, ``y`` to the south, ``(0, 0)`` is
the north-west cell. Sides are given as ``"N"``, ``"E"``, ``"S"``, ``"W"`` (any case, or the
full names ``"north"`` ...), as :class:`bitgrid.terms.Direction` or as the index ``0..3``
(:func:`bitgrid.terms.parse_side`).

Timing (SPEC section 4): cell ``(x, y)`` updates on the subcycles ``t`` with
``t % 2 == (x + y) % 2``, and a signal moves one cell per subcycle. A straight route of
``length`` cells therefore delivers its input at its far end ``length`` subcycles after the input
is first applied, or ``length + 1`` if the first cell does not update on that subcycle; see
:func:`route_latency`.
"""

from .cell import lut_from_function
from .checks import check_int
from .config import Configuration, check_grid_size
from .terms import DIRECTIONS, Direction, parity, parse_side

__all__ = ["Program", "parse_side", "route_latency"]


def _copy_input(side):
    """A LUT function that forwards input ``side``."""
    return {"n": lambda n: n, "e": lambda e: e, "s": lambda s: s,
            "w": lambda w: w}[side.input_name]


def route_latency(x, y, length, start=0):
    """Subcycles from applying an input at subcycle ``start`` to a straight route of ``length``
    cells whose first cell is ``(x, y)``, until its last cell's output carries it (SPEC 4).

    The first cell reads the input on the first subcycle ``t >= start`` with
    ``t % 2 == (x + y) % 2``; each further cell adds one subcycle. The value is therefore
    ``length`` if the first cell's parity matches ``start``, else ``length + 1``. The input must
    be held for that many subcycles (at least until the first cell has read it), and the output
    is readable after subcycle ``start + route_latency(...) - 1``.

    :raises ValueError: if ``length`` is not an integer of at least 1.
    """
    length = check_int(length, "Route length", minimum=1)
    return length + ((x + y - start) % 2)


class Program:
    """A configuration under construction for a ``width`` x ``height`` grid (cells).

    :param width, height: grid size in cells, even and at least 2 (SPEC section 1).
    :raises bitgrid.GridSizeError: for a size SPEC section 1 does not allow.
    """

    def __init__(self, width, height):
        self._width, self._height = check_grid_size(width, height)
        self._config = Configuration(self._width, self._height)
        self._set = {}          # (x, y) -> set of Direction already configured

    # Geometry ---------------------------------------------------------------------------------
    @property
    def width(self):
        """Grid width in cells."""
        return self._width

    @property
    def height(self):
        """Grid height in cells."""
        return self._height

    @property
    def config(self):
        """The :class:`~bitgrid.config.Configuration` built so far (a copy: later changes to
        the program do not alter it, and changes to it do not alter the program)."""
        return self._config.copy()

    def _check_xy(self, x, y):
        check_int(x, "Cell x", error=TypeError)
        check_int(y, "Cell y", error=TypeError)
        if not (0 <= x < self._width and 0 <= y < self._height):
            raise IndexError(f"Cell ({x}, {y}) is outside the {self._width} x {self._height} "
                             "grid")

    @staticmethod
    def parity(x, y):
        """Phase of cell ``(x, y)``: 0 if it updates on even subcycles (phase A), 1 if on odd
        ones (phase B). SPEC section 4 (:func:`bitgrid.terms.parity`)."""
        return parity(x, y)

    def tables(self, x, y):
        """The LUTs of cell ``(x, y)`` as a tuple ``(N, E, S, W)`` of 16-bit ints (SPEC 3)."""
        self._check_xy(x, y)
        return self._config[x, y]

    def configured(self, x, y):
        """The set of :class:`~bitgrid.cell.Direction` outputs of ``(x, y)`` set so far."""
        self._check_xy(x, y)
        return frozenset(self._set.get((x, y), ()))

    # Cells ------------------------------------------------------------------------------------
    def cell(self, x, y, *, n=None, e=None, s=None, w=None):
        """Set outputs of cell ``(x, y)``.

        Each of ``n, e, s, w`` is the function for that *output*: a callable taking some of the
        keyword arguments ``n, e, s, w`` (the cell's *inputs*, each 0 or 1) and returning a truth
        value, or a constant ``0``/``1``. ``None`` leaves the output as it is (constant 0 if
        never set). For example ``cell(3, 0, e=lambda n, e, w: n ^ e ^ w)``.

        :returns: the cell's tables ``(N, E, S, W)`` after the change.
        :raises IndexError: ``Cell (x, y) is outside the W x H grid``.
        :raises ValueError: ``Output E of cell (x, y) is already configured`` (nothing is changed
            then).
        :raises TypeError: for a function that is neither callable nor 0/1, or that takes an
            argument other than ``n, e, s, w``.
        """
        self._check_xy(x, y)
        functions = dict(zip(DIRECTIONS, (n, e, s, w)))
        luts = {}
        done = self._set.setdefault((x, y), set())
        for d, function in functions.items():
            if function is None:
                continue
            if d in done:
                raise ValueError(f"Output {d.name} of cell ({x}, {y}) is already configured")
            luts[d] = lut_from_function(function)
        tables = list(self._config[x, y])
        for d, lut in luts.items():
            tables[d] = lut
            done.add(d)
        self._config[x, y] = tables
        return tuple(tables)

    def set_tables(self, x, y, tables):
        """Set all four LUTs of ``(x, y)`` from raw tables ``(N, E, S, W)`` (16-bit ints).

        :raises ValueError: if any output of the cell is already configured, or the tables are
            not four 16-bit ints.
        """
        self._check_xy(x, y)
        done = self._set.setdefault((x, y), set())
        if done:
            first = min(done)
            raise ValueError(f"Output {first.name} of cell ({x}, {y}) is already configured")
        self._config[x, y] = tuple(tables)
        done.update(DIRECTIONS)
        return self._config[x, y]

    def connect(self, x, y, source, dest):
        """Make output ``dest`` of ``(x, y)`` copy input ``source``: the signal that enters the
        cell on side ``source`` leaves it on side ``dest``. ``source == dest`` echoes the input
        back where it came from (as the SPEC's reflector does).

        :returns: the cell's tables ``(N, E, S, W)``.
        :raises ValueError: for an unknown side or an output already configured.
        """
        source, dest = parse_side(source), parse_side(dest)
        return self.cell(x, y, **{dest.input_name: _copy_input(source)})

    def straight(self, x, y, heading):
        """Carry a signal straight through ``(x, y)`` towards ``heading``: for ``heading="E"``
        the output E copies input W. Sets only that one output."""
        heading = parse_side(heading)
        return self.connect(x, y, heading.opposite, heading)

    def turn(self, x, y, source, dest):
        """Turn a corner: the signal entering on ``source`` leaves on the perpendicular side
        ``dest`` (for example ``turn(x, y, "W", "S")`` sends a signal coming from the west on
        to the south).

        :raises ValueError: ``A turn needs perpendicular sides, not W and E``.
        """
        source, dest = parse_side(source), parse_side(dest)
        if source % 2 == dest % 2:
            raise ValueError(f"A turn needs perpendicular sides, not {source.name} and "
                             f"{dest.name}")
        return self.connect(x, y, source, dest)

    def cross(self, x, y, horizontal="E", vertical="S"):
        """A cross-over: a signal heading ``horizontal`` (``"E"`` or ``"W"``) and one heading
        ``vertical`` (``"N"`` or ``"S"``) pass through ``(x, y)`` without touching. With the
        defaults, output E copies input W and output S copies input N.

        :raises ValueError: if ``horizontal`` is not E/W or ``vertical`` is not N/S.
        """
        horizontal, vertical = parse_side(horizontal), parse_side(vertical)
        if horizontal not in (Direction.E, Direction.W):
            raise ValueError(f"horizontal heading must be E or W, not {horizontal.name}")
        if vertical not in (Direction.N, Direction.S):
            raise ValueError(f"vertical heading must be N or S, not {vertical.name}")
        opposite = {horizontal: horizontal.opposite, vertical: vertical.opposite}
        for d in (horizontal, vertical):
            if d in self.configured(x, y):
                raise ValueError(f"Output {d.name} of cell ({x}, {y}) is already configured")
        return self.cell(x, y, **{d.input_name: _copy_input(src)
                                  for d, src in opposite.items()})

    def pass_through(self, x, y):
        """Every signal continues straight on: the SPEC's pass-through cell,
        tables ``(0xF0F0, 0xFF00, 0xAAAA, 0xCCCC)`` (SPEC section 3). Sets all four outputs."""
        return self.cell(x, y, **{d.input_name: _copy_input(d.opposite) for d in DIRECTIONS})

    # Lanes ------------------------------------------------------------------------------------
    def route(self, x, y, heading, length=None):
        """A straight lane of ``length`` cells from ``(x, y)`` towards ``heading``, each cell
        carrying the signal straight on (:meth:`straight`). With ``length=None`` the lane runs to
        the grid edge, so it starts from an edge input when ``(x, y)`` is a boundary cell and
        ends on the edge output of side ``heading``.

        Only the one output per cell is set, so the cells stay free for other routes (for
        example a crossing lane). Latency: :func:`route_latency`.

        :returns: the list of cells ``[(x, y), ...]`` in signal order.
        :raises IndexError: if the lane leaves the grid (naming the first outside cell).
        :raises ValueError: for an unknown heading, ``length < 1``, or a cell output already
            configured (then no cell of the lane is changed).
        """
        heading = parse_side(heading)
        self._check_xy(x, y)
        dx, dy = heading.step
        if length is None:
            length = {Direction.N: y + 1, Direction.S: self._height - y,
                      Direction.W: x + 1, Direction.E: self._width - x}[heading]
        length = check_int(length, "Route length", minimum=1)
        cells = [(x + i * dx, y + i * dy) for i in range(length)]
        for cx, cy in cells:
            self._check_xy(cx, cy)
            if heading in self._set.get((cx, cy), ()):
                raise ValueError(f"Output {heading.name} of cell ({cx}, {cy}) is already "
                                 "configured")
        for cx, cy in cells:
            self.straight(cx, cy, heading)
        return cells

    def __repr__(self):
        used = sum(1 for v in self._set.values() if v)
        return f"Program({self._width} x {self._height}, {used} cells configured)"

    def render(self):
        """A text map of the grid, one line per row: ``.`` for an unused cell, else the set
        outputs in N, E, S, W order (for example ``ES``), cells separated by spaces."""
        width = 4
        lines = []
        for y in range(self._height):
            row = []
            for x in range(self._width):
                done = self._set.get((x, y), ())
                row.append(("".join(d.name for d in DIRECTIONS if d in done) or ".").ljust(width))
            lines.append(" ".join(row).rstrip())
        return "\n".join(lines)
