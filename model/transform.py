"""Moving, rotating and mirroring programs (``bitgrid transform``), with their port maps.

A transform is a :class:`Geometry`: a map of cells ``(x, y) -> (x', y')`` of a ``width`` x
``height`` grid into a ``new_width`` x ``new_height`` grid, and the map of sides it induces
(``sides[d]`` is where old side ``d`` points now). Coordinates as SPEC section 2: ``x`` east,
``y`` south, ``(0, 0)`` the north-west cell.

============  ==============================  ================  =========================
transform     cell (x, y) goes to             sides             new grid
============  ==============================  ================  =========================
move DX,DY    (x + DX, y + DY)                unchanged         ``--size`` (default same)
rotate 90     (H - 1 - y, x)   (clockwise)    N->E->S->W->N     H x W
rotate 180    (W - 1 - x, H - 1 - y)          N<->S, E<->W      W x H
rotate 270    (y, W - 1 - x)                  N->W->S->E->N     H x W
mirror x      (W - 1 - x, y)  (x reversed)    E<->W             W x H
mirror y      (x, H - 1 - y)  (y reversed)    N<->S             W x H
============  ==============================  ================  =========================

Cells (SPEC section 3): the input a moved cell reads on side ``sides[d]`` comes from the image
of the neighbour it read on side ``d``, so its LUT for output ``sides[d]`` is its old LUT for
output ``d`` with the address bits permuted the same way (:func:`permute_lut`: new address bit
``sides[d]`` is old address bit ``d``).

Edges: lane ``i`` of old side ``d`` faces boundary cell ``b``; it becomes the lane of side
``sides[d]`` facing the image of ``b``. Rotations and mirrors keep every side on the grid's
edge. A move may take a side off the edge (``move 2,0`` puts the old W boundary at column 2):
that is allowed only if no cell of that boundary reads its input from that side or drives its
output there, and no port bit is on that side (:class:`TransformError` names the cell or port),
except on lanes that the port map or the vector file shows to be idle (:func:`check_edges`);
the new grid's edge lanes that face no old edge lane carry inputs 0. Cells that would fall off
the new grid must be all-zero (else an error names the first).

Timing (SPEC sections 4 and 10). Even moves and the 180-degree rotation keep every cell's
parity and so every timing: the program runs exactly as before, on the re-indexed lanes.
Rotations by 90 and 270 degrees, single mirrors and odd moves swap the parity of every cell
(the grid's sides are even), so every cell would update one subcycle away from where it used
to. They are **refused** unless ``retime=True`` (``--retime``), which delays the whole program
by one subcycle: run the transformed program with every input one subcycle later and it gives
every output one subcycle later, exactly (the port map: every input skew + 1, latency + 1; a
vector file: one all-zero step first). That holds because the cells that now update first
(the old odd-parity cells) see only the reset zeros on that first subcycle; so re-timing
requires each of them to output 0 for all-zero inputs (bit 0 of all four LUTs clear). Where an
old odd-parity cell does not (an inverter, say), the program is *advanced* by one subcycle
instead (latency - 1, every input skew - 1; a vector file loses its step 0): exact when every
old even-parity cell outputs 0 for all-zero inputs and nothing enters on the first subcycle
(every input skew at least 1 and every output read after subcycle 1 or later, or step 0 of the
vector file all-zero), for then the original's first subcycle leaves every output 0, as reset
does. When neither works the refusal names the cells, port bit or step in the way.
"""

import typing

import numpy as np

from .analysis import support_masks
from .checks import check_choice, check_int
from .config import Configuration, check_grid_size
from .ports import PortBit, PortMap, PortMapError
from .terms import DIRECTIONS, E, Edges, N, S, W, Direction, side_lanes

__all__ = ["TransformError", "Geometry", "move", "rotate", "mirror", "permute_lut",
           "permute_tables", "transform_config", "transform_portmap", "transform_edges",
           "transform_steps", "check_edges", "check_timing", "Transformed", "transform",
           "ROTATIONS", "AXES", "MAX_OFFSET"]

#: Rotations in degrees (clockwise: north turns to east).
ROTATIONS = (90, 180, 270)
#: Mirror axes: ``x`` reverses x (east <-> west), ``y`` reverses y (north <-> south).
AXES = ("x", "y")
#: Largest move in either direction, in cells (the largest grid side, SPEC section 1).
MAX_OFFSET = 65534


class TransformError(ValueError):
    """A transform that cannot be applied to this program; the message names the cell, side or
    port and what to do."""


class Geometry(typing.NamedTuple):
    """A cell map ``(x, y) -> (a*x + b*y + ox, c*x + d*y + oy)`` from a ``width`` x ``height``
    grid into a ``new_width`` x ``new_height`` one, with ``sides[k]`` the new direction of old
    side ``k``. Build one with :func:`move`, :func:`rotate` or :func:`mirror`."""
    name: str
    width: int
    height: int
    new_width: int
    new_height: int
    matrix: tuple                   # (a, b, c, d)
    offset: tuple                   # (ox, oy)
    sides: tuple                    # sides[k]: Direction

    def cell(self, x, y):
        """The image ``(x', y')`` of cell ``(x, y)`` (it may lie outside the new grid)."""
        a, b, c, d = self.matrix
        ox, oy = self.offset
        return a * x + b * y + ox, c * x + d * y + oy

    @property
    def swaps_parity(self):
        """True if every cell's parity ``(x + y) % 2`` changes (SPEC section 10)."""
        x, y = self.cell(0, 0)
        return (x + y) % 2 == 1

    def inside(self, x, y):
        """Whether ``(x, y)`` is a cell of the new grid."""
        return 0 <= x < self.new_width and 0 <= y < self.new_height

    def keeps_edge(self, side):
        """Whether the old boundary on ``side`` lands on the new grid's boundary on
        ``sides[side]`` (always for rotations and mirrors; for a move only if it does not
        shift away from that edge)."""
        side = Direction(side)
        x, y = self.cell(*_boundary_cell(side, 0, self.width, self.height))
        new = self.sides[side]
        return {N: y == 0, S: y == self.new_height - 1, W: x == 0,
                E: x == self.new_width - 1}[new]

    def lane(self, side, lane):
        """``(new side, new lane)`` of lane ``lane`` of old side ``side``, or ``None`` if that
        side leaves the edge or the lane's cell falls off the new grid."""
        side = Direction(side)
        if not self.keeps_edge(side):
            return None
        x, y = self.cell(*_boundary_cell(side, lane, self.width, self.height))
        if not self.inside(x, y):
            return None
        new = self.sides[side]
        return new, (x if new in (N, S) else y)


def _boundary_cell(side, lane, width, height):
    """The cell that lane ``lane`` of ``side`` faces (SPEC section 2)."""
    return {N: (lane, 0), S: (lane, height - 1), W: (0, lane), E: (width - 1, lane)}[side]


def move(dx, dy, width, height, *, new_width=None, new_height=None):
    """The move of every cell by ``(dx, dy)`` cells, into a ``new_width`` x ``new_height``
    grid (default: the same size).

    :raises ValueError: for a non-integer offset, one beyond :data:`MAX_OFFSET` cells, or a
        bad new size.
    """
    width, height = check_grid_size(width, height)
    new_width, new_height = check_grid_size(width if new_width is None else new_width,
                                            height if new_height is None else new_height)
    # Beyond these every cell falls off: a bound that keeps the arithmetic in machine words.
    dx = check_int(dx, "Move dx", minimum=-MAX_OFFSET, maximum=MAX_OFFSET)
    dy = check_int(dy, "Move dy", minimum=-MAX_OFFSET, maximum=MAX_OFFSET)
    return Geometry(f"move {dx},{dy}", width, height, new_width, new_height, (1, 0, 0, 1),
                    (dx, dy), DIRECTIONS)


def rotate(degrees, width, height):
    """The clockwise rotation by ``degrees`` (90, 180 or 270) of a ``width`` x ``height`` grid
    (see the module docstring for the cell and side maps).

    :raises ValueError: ``Rotation must be one of 90, 180, 270, not 45``.
    """
    degrees = check_choice(degrees, "Rotation", ROTATIONS)
    width, height = check_grid_size(width, height)
    if degrees == 90:
        return Geometry("rotate 90", width, height, height, width, (0, -1, 1, 0),
                        (height - 1, 0), (E, S, W, N))
    if degrees == 180:
        return Geometry("rotate 180", width, height, width, height, (-1, 0, 0, -1),
                        (width - 1, height - 1), (S, W, N, E))
    return Geometry("rotate 270", width, height, height, width, (0, 1, -1, 0),
                    (0, width - 1), (W, N, E, S))


def mirror(axis, width, height):
    """The mirror image reversing ``axis`` (``"x"``: east <-> west; ``"y"``: north <-> south)
    of a ``width`` x ``height`` grid.

    :raises ValueError: ``Mirror axis must be one of 'x', 'y', not 'z'``.
    """
    axis = check_choice(axis, "Mirror axis", AXES)
    width, height = check_grid_size(width, height)
    if axis == "x":
        return Geometry("mirror x", width, height, width, height, (-1, 0, 0, 1),
                        (width - 1, 0), (N, W, S, E))
    return Geometry("mirror y", width, height, width, height, (1, 0, 0, -1),
                    (0, height - 1), (S, E, N, W))


_move, _rotate, _mirror = move, rotate, mirror     # (transform's keyword arguments hide them)


# LUTs -----------------------------------------------------------------------------------------

def _address_map(sides):
    """``new[a]``: the new address of old address ``a`` (old bit ``k`` goes to bit
    ``sides[k]``), for all 16 addresses."""
    return [sum(((a >> k) & 1) << int(sides[k]) for k in range(4)) for a in range(16)]


def permute_lut(lut, sides):
    """The 16-bit LUT whose bit ``a'`` is bit ``a`` of ``lut``, where address ``a'`` has bit
    ``sides[k]`` equal to bit ``k`` of ``a`` (SPEC section 3: address bit 0 is input N). So a
    LUT of ``n`` rotated by 90 degrees (``sides = (E, S, W, N)``) becomes a LUT of ``e``.

    :raises ValueError: if ``lut`` is not a 16-bit integer or ``sides`` not a permutation of
        the four directions.
    """
    lut = check_int(lut, "LUT", minimum=0, maximum=0xFFFF)
    sides = _check_sides(sides)
    new = _address_map(sides)
    return sum(((lut >> a) & 1) << new[a] for a in range(16))


def permute_tables(tables, sides):
    """The tables ``[N, E, S, W]`` of a cell turned by ``sides``: new LUT ``sides[k]`` is old
    LUT ``k`` with its addresses permuted (:func:`permute_lut`)."""
    sides = _check_sides(sides)
    tables = list(tables)
    if len(tables) != 4:
        raise ValueError(f"A cell has 4 tables (N, E, S, W), not {len(tables)}")
    result = [0] * 4
    for k in range(4):
        result[int(sides[k])] = permute_lut(tables[k], sides)
    return tuple(result)


def _check_sides(sides):
    sides = tuple(Direction(s) for s in sides)
    if sorted(sides) != list(DIRECTIONS):
        raise ValueError(f"sides must map N, E, S, W onto all four directions, not {sides}")
    return sides


_TABLES = {}


def _lut_table(sides):
    """The permuted value of every 16-bit LUT (``uint16`` array of 65536), cached."""
    if sides not in _TABLES:
        values = np.arange(1 << 16, dtype=np.uint32)
        result = np.zeros(1 << 16, dtype=np.uint32)
        for a, target in enumerate(_address_map(sides)):
            result |= ((values >> a) & 1) << target
        _TABLES[sides] = result.astype(np.uint16)
    return _TABLES[sides]


# Configurations, port maps, edges -------------------------------------------------------------

def transform_config(config, geometry):
    """Re-index the cells and LUTs of ``config`` by ``geometry``: the configuration alone, with
    no check of its edges (:func:`check_edges`) or timing (:func:`check_timing`).

    :returns: a new :class:`~bitgrid.config.Configuration` of ``geometry.new_width`` x
        ``geometry.new_height``.
    :raises TransformError: ``cell (7, 2) would move to (9, 2), outside the 8 x 8 grid``
        (the first configured cell in row-major order that falls off).
    """
    _check_config(config, geometry)
    ys, xs = np.nonzero((config.luts != 0).any(axis=2))
    a, b, c, d = geometry.matrix
    ox, oy = geometry.offset
    nx, ny = a * xs + b * ys + ox, c * xs + d * ys + oy
    off = (nx < 0) | (nx >= geometry.new_width) | (ny < 0) | (ny >= geometry.new_height)
    if off.any():
        i = int(np.argmax(off))
        raise TransformError(f"cell ({xs[i]}, {ys[i]}) would move to ({nx[i]}, {ny[i]}), "
                             f"outside the {geometry.new_width} x {geometry.new_height} grid; "
                             "only all-zero cells may fall off (choose another offset or a "
                             "larger --size)")
    table = _lut_table(geometry.sides)
    luts = np.zeros((geometry.new_height, geometry.new_width, 4), dtype=np.uint16)
    for k in range(4):
        luts[ny, nx, int(geometry.sides[k])] = table[config.luts[ys, xs, k]]
    return Configuration(geometry.new_width, geometry.new_height, luts)


def _check_config(config, geometry):
    if not isinstance(config, Configuration):
        raise TypeError(f"Expected a Configuration, not {config!r}")
    if not isinstance(geometry, Geometry):
        raise TypeError(f"Expected a Geometry (see move, rotate, mirror), not {geometry!r}")
    if (config.width, config.height) != (geometry.width, geometry.height):
        raise TransformError(f"The transform is for a {geometry.width} x {geometry.height} "
                             f"grid, the program is {config.width} x {config.height}")


def check_edges(config, geometry, *, portmap=None, steps=None):
    """Check that no boundary cell of a side that ``geometry`` takes off the edge (a move)
    reads its input from that side or drives its output there (real LUT support,
    :func:`bitgrid.analysis.support_masks`; a constant-0 output drives nothing), except on a
    lane known to be idle. Beyond a boundary that leaves the edge lies an all-zero cell, which
    gives 0 and ignores what it is given, so a lane that always carries 0 in and whose output
    nobody reads may leave the edge:

    * with ``portmap`` (:class:`~bitgrid.ports.PortMap`), a lane that no input port names is
      driven 0 (docs/ports.md), and an output lane that no output port names is read by nobody;
    * with ``steps`` (a vector file's ``(inputs, expected outputs)`` pairs), a lane whose input
      is 0 and whose expected output is 0 in every step;
    * with both, a lane must be idle for each; with neither, no lane is known to be idle.

    :raises TransformError: ``cell (0, 2) reads its input from the W edge (lane 2), but move
        2,0 takes that boundary off the edge ...``, naming the port bit or the step that keeps
        the lane busy.
    """
    _check_config(config, geometry)
    if portmap is not None and not isinstance(portmap, PortMap):
        raise TypeError(f"Expected a PortMap, not {portmap!r}")
    masks = support_masks(config.luts)
    bits = {}
    for port in (portmap.ports if portmap is not None else ()):
        for i, bit in enumerate(port.bits):
            bits[(port.direction, bit.side, bit.lane)] = f"bit {i} of port {port.name}"
    steps = None if steps is None else list(steps)
    for side in DIRECTIONS:
        if geometry.keeps_edge(side):
            continue
        for lane in range(side_lanes(side, config.width, config.height)):
            x, y = _boundary_cell(side, lane, config.width, config.height)
            reads = any(masks[y, x, k] >> side & 1 for k in range(4))
            drives = config.luts[y, x, side] != 0
            for busy, what, direction, column in ((reads, "reads its input from", "in", 0),
                                                   (drives, "drives its output to", "out", 1)):
                if not busy:
                    continue
                why = _busy_lane(direction, column, side, lane, bits, portmap, steps)
                if why is None:
                    continue
                nx, ny = geometry.cell(x, y)
                raise TransformError(
                    f"cell ({x}, {y}) {what} the {side.letter} edge (lane {lane}{why}), but "
                    f"{geometry.name} takes that boundary off the edge (the cell lands at "
                    f"({nx}, {ny}) of the {geometry.new_width} x {geometry.new_height} grid); "
                    f"move the program so that its {side.letter} side stays on the edge"
                    + ("" if portmap is not None or steps is not None else
                       ", or give its port map (--ports) if no port uses that lane"))


def _busy_lane(direction, column, side, lane, bits, portmap, steps):
    """Why lane ``lane`` of ``side`` is not idle in ``direction`` (see :func:`check_edges`):
    a text for the message (``""`` when nothing says it is idle), or None if it is idle."""
    if portmap is None and steps is None:
        return ""
    if (direction, side, lane) in bits:
        return ", " + bits[(direction, side, lane)]
    for t, pair in enumerate(steps or ()):
        if Edges.coerce(pair[column])[side] >> lane & 1:
            return (f", which step {t} of the vector file drives with 1" if direction == "in"
                    else f", where step {t} of the vector file expects a 1")
    return None


def check_timing(config, geometry, *, retime=False, portmap=None, steps=None):
    """Subcycles of latency the transform adds: 0 if it keeps every cell's parity; if it swaps
    them and ``retime`` is true, 1 (delay) or, where delaying cannot work, -1 (advance; see the
    module docstring).

    Delay (+1) needs every cell of odd parity to output 0 for all-zero inputs (bit 0 of its
    four LUTs clear). Advance (-1) needs every cell of even parity to do so, and nothing to
    enter on the first subcycle: with ``portmap``, every input bit's skew at least 1 and every
    output bit read no earlier than after subcycle 1 (``latency + skew >= 2``); with ``steps``
    (a vector file's ``(inputs, expected outputs)`` pairs), all-zero inputs in step 0. Without
    either, nothing shows that, and advancing is not possible.

    :raises TransformError: if it swaps the parity without ``retime``, or with ``retime`` when
        neither works (naming the cells, port bits or step in the way).
    """
    _check_config(config, geometry)
    if not geometry.swaps_parity:
        return 0
    if not retime:
        raise TransformError(f"{geometry.name} swaps the phase of every cell (SPEC section 10), "
                             "which changes the program's timing: add --retime to delay it "
                             "by one subcycle at its ports (latency + 1), or use an even move "
                             "or a 180-degree rotation")
    first = config.luts & 1
    odd = (np.add.outer(np.arange(config.height), np.arange(config.width)) % 2) == 1
    wakes = first.any(axis=2)
    if not (odd & wakes).any():
        return 1
    blocker = _advance_blocker(first, ~odd & wakes, portmap, steps)
    if blocker is None:
        return -1
    raise TransformError(f"cannot re-time {geometry.name}: {_waker(first, odd & wakes, 'odd')}, "
                         "so delaying the program by one subcycle changes what it does on its "
                         f"first subcycle; and it cannot run one subcycle earlier either: "
                         f"{blocker}; use an even move or a 180-degree rotation instead")


def _waker(first, cells, parity):
    y, x = (int(v) for v in np.argwhere(cells)[0])
    outputs = "".join(d.letter for d in DIRECTIONS if first[y, x, d])
    return f"cell ({x}, {y}) ({parity} parity) outputs 1 on {outputs} for all-zero inputs"


def _advance_blocker(first, even_wakers, portmap, steps):
    """Why the program cannot be advanced by one subcycle (see :func:`check_timing`), or
    None if it can."""
    if even_wakers.any():
        return _waker(first, even_wakers, "even")
    if portmap is None and steps is None:
        return ("that needs its port map (--ports) or a vector file (--vectors) to show that "
                "no input enters on the first subcycle")
    for port in (portmap.ports if portmap is not None else ()):
        for i, bit in enumerate(port.bits):
            if port.direction == "in" and bit.skew < 1:
                return (f"bit {i} of input port {port.name} enters on the first subcycle "
                        "(skew 0)")
            if port.direction == "out" and portmap.latency + bit.skew < 2:
                return (f"bit {i} of output port {port.name} is read after the first "
                        "subcycle")
    steps = list(steps or ())
    if steps and any(Edges.coerce(steps[0][0])):
        return "step 0 of the vector file has inputs"
    return None


def transform_portmap(portmap, geometry, *, latency_added=0):
    """The port map of the transformed program: every bit on its new side and lane; with
    ``latency_added`` (-1, 0 or 1, from :func:`check_timing`) every input skew and the latency
    change by that much (for -1 with latency 0, every output skew goes down by 1 instead).

    :raises TransformError: if the port map is for another grid, or a port bit is on a side
        that leaves the edge or on a lane that falls off.
    """
    if not isinstance(portmap, PortMap):
        raise TypeError(f"Expected a PortMap, not {portmap!r}")
    if (portmap.width, portmap.height) != (geometry.width, geometry.height):
        raise TransformError(f"The port map is for a {portmap.width} x {portmap.height} grid, "
                             f"the program is {geometry.width} x {geometry.height}")
    added = check_int(latency_added, "latency_added", minimum=-1, maximum=1)
    latency, out_skew = portmap.latency + added, 0
    if latency < 0:
        latency, out_skew = 0, -1

    def moved(port, bit):
        index = port.bits.index(bit)
        target = geometry.lane(bit.side, bit.lane)
        if target is None:
            raise TransformError(f"port {port.name} bit {index} ({bit.side.letter} lane "
                                 f"{bit.lane}) leaves the grid's edge under {geometry.name}; "
                                 f"keep the {bit.side.letter} side of the program on the edge")
        side, lane = target
        skew = bit.skew + added if port.direction == "in" else bit.skew + out_skew
        return PortBit(side, lane, skew)

    try:
        return portmap.map_bits(moved, width=geometry.new_width, height=geometry.new_height,
                                latency=latency)
    except PortMapError as error:
        raise TransformError(f"the moved port map does not fit: {error}") from None


def transform_edges(edges, geometry):
    """Edge words of the old grid re-indexed onto the new one (:meth:`Geometry.lane`; lanes
    of a side that leaves the edge, or that fall off, are dropped; new lanes are 0)."""
    edges = Edges.coerce(edges)
    words = [0, 0, 0, 0]
    for side in DIRECTIONS:
        word = edges[side]
        for lane in range(side_lanes(side, geometry.width, geometry.height)):
            if word >> lane & 1:
                target = geometry.lane(side, lane)
                if target is not None:
                    words[target[0]] |= 1 << target[1]
    return Edges(*words)


def transform_steps(steps, result):
    """A vector file's steps for the transformed program: every ``(inputs, expected outputs)``
    pair re-indexed (:func:`transform_edges`); re-timed by a delay, an all-zero step first; by
    an advance, without step 0 (whose inputs must be all zero; module docstring). The
    expectations are the file's own, not recomputed, so running the transformed program on
    them checks the transform.

    :param steps: list of ``(inputs, outputs)`` :class:`~bitgrid.terms.Edges` of the original
        program (a :class:`~bitgrid.vectors.VectorCase`'s ``steps``).
    :param result: the :class:`Transformed` of that program.
    :raises TransformError: if a step shows an output on a side that leaves the edge (the
        file is not this program's), or a cell of the new grid drives an edge lane that faces
        no old lane (no expectation for it exists), or for an advance when step 0 has inputs.
    """
    geometry, config = result.geometry, result.config
    steps = list(steps)
    if result.latency_added < 0:
        if steps and any(Edges.coerce(steps[0][0])):
            raise TransformError("step 0 of the vector file has inputs, so the program "
                                 "cannot run one subcycle earlier on it")
        steps = steps[1:]
    mapped = {}
    for side in DIRECTIONS:
        for lane in range(side_lanes(side, geometry.width, geometry.height)):
            target = geometry.lane(side, lane)
            if target is not None:
                mapped[target] = (side, lane)
    for side in DIRECTIONS:
        for lane in range(side_lanes(side, config.width, config.height)):
            x, y = _boundary_cell(side, lane, config.width, config.height)
            if (side, lane) not in mapped and config.luts[y, x, side]:
                raise TransformError(f"cell ({x}, {y}) of the new grid drives {side.letter} "
                                     f"lane {lane}, which faces no lane of the old grid: the "
                                     "vector file has no expectation for it")
    result_steps = [(Edges(), Edges())] * max(result.latency_added, 0)
    for t, (inputs, outputs) in enumerate(steps):
        for side in DIRECTIONS:
            lanes = side_lanes(side, geometry.width, geometry.height)
            lost = [i for i in range(lanes) if outputs[side] >> i & 1
                    and geometry.lane(side, i) is None]
            if lost:
                raise TransformError(f"step {t} expects an output on {side.letter} lane "
                                     f"{lost[0]}, which {geometry.name} takes off the grid: "
                                     "the vector file is not this program's")
        result_steps.append((transform_edges(inputs, geometry),
                             transform_edges(outputs, geometry)))
    return result_steps


class Transformed(typing.NamedTuple):
    """The result of :func:`transform`: the new ``config``, its ``portmap`` (None if none was
    given), the ``geometry`` and ``latency_added`` (subcycles: 0; when re-timed 1, or -1 when
    advanced)."""
    config: Configuration
    portmap: typing.Optional[PortMap]
    geometry: Geometry
    latency_added: int


def transform(config, portmap=None, *, move=None, rotate=None, mirror=None, size=None,
              retime=False, steps=None):
    """Apply one transform to a program and its port map.

    :param move: ``(dx, dy)`` in cells; ``size`` ``(width, height)`` of the new grid (moves
        only; default the same size).
    :param rotate: 90, 180 or 270 (degrees, clockwise).
    :param mirror: ``"x"`` or ``"y"``.
    :param retime: allow a transform that swaps every cell's parity, by delaying the program
        one subcycle (module docstring).
    :param steps: optional ``(inputs, expected outputs)`` pairs of a vector file of the
        program: like ``portmap``, they say which edge lanes are idle and so may leave the
        edge in a move (:func:`check_edges`), and whether the program may be advanced
        (:func:`check_timing`).
    :returns: :class:`Transformed`.
    :raises ValueError: unless exactly one of ``move``, ``rotate``, ``mirror`` is given, or for
        ``size`` without ``move``.
    :raises TransformError: see :func:`transform_config`, :func:`check_edges`,
        :func:`check_timing` and :func:`transform_portmap`.
    """
    given = [name for name, value in (("move", move), ("rotate", rotate), ("mirror", mirror))
             if value is not None]
    if len(given) != 1:
        raise ValueError("Give exactly one of move, rotate and mirror"
                         + (f", not {' and '.join(given)}" if given else ""))
    if size is not None and move is None:
        raise ValueError("A new size goes with a move; a rotation or mirror keeps the grid's "
                         "own size (a rotation by 90 or 270 degrees swaps width and height)")
    if not isinstance(config, Configuration):
        raise TypeError(f"Expected a Configuration, not {config!r}")
    width, height = config.width, config.height
    if move is not None:
        dx, dy = move
        new_width, new_height = size if size is not None else (None, None)
        geometry = _move(dx, dy, width, height, new_width=new_width, new_height=new_height)
    elif rotate is not None:
        geometry = _rotate(rotate, width, height)
    else:
        geometry = _mirror(mirror, width, height)
    new_config = transform_config(config, geometry)
    steps = None if steps is None else list(steps)
    check_edges(config, geometry, portmap=portmap, steps=steps)
    added = check_timing(config, geometry, retime=retime, portmap=portmap, steps=steps)
    new_portmap = None
    if portmap is not None:
        new_portmap = transform_portmap(portmap, geometry, latency_added=added)
    return Transformed(new_config, new_portmap, geometry, added)
