"""Pictures of a program (SVG, PNG) drawn with matplotlib: every cell with its function, the
phases, the edge lanes and named ports, and optionally the signals of one frame of a run.

Grids of up to :data:`~bitgrid.view.style.DETAIL_MAX_SIDE` cells on their longer side are drawn
cell by cell: arrows for the copies of pass cells (straight, turns, crossings, fan-out; a ring
at the head of an inverted copy), the expression of every logic output (``E=n^e^w``, written
without spaces; one longer than :data:`MAX_LABEL` characters is broken over lines at its
operators, or shown by its table, ``E=0x6b2c``, when it does not fit; a picture of more than
:data:`MAX_EXPRESSIONS` expressions marks each logic cell ``ƒ`` instead), lane numbers around
the grid and the name of every port bit (``a[3]``). Larger grids are drawn one block per cell
(its content and phase, and with a run, how many of its outputs are 1), with lane numbers
every few lanes and each port's name at its first bit.

With a run, frame ``k`` is shown (the outputs after ``k`` subcycles, SPEC section 4): each
arrow and each output marker takes the colour of its value, and the edge inputs of the subcycle
that made the frame are marked outside the grid. In an SVG, text stays text (searchable), and
each output marker is an element with the id ``out-X-Y-SIDE-VALUE`` (``out-3-0-E-1``).
"""

import io
import os

import numpy as np

from bitgrid.files import atomic_write
from bitgrid.terms import DIRECTIONS, E, N, S, W, parity, side_lanes

from . import style
from .functions import COPY, LOGIC, NOT, ONE, ZERO, expression, kinds

__all__ = ["render_picture", "FORMATS", "MAX_LABEL", "MAX_EXPRESSIONS"]

#: Picture formats by file suffix.
FORMATS = ("svg", "png")
#: The longest expression written on one line of a cell; longer ones are broken over lines
#: (:func:`_wrap`), or shown as the LUT's hex table if they cannot be.
MAX_LABEL = 12
#: The most lines of text in one cell.
MAX_CELL_LINES = 4
#: The most expressions a picture writes; beyond, logic cells get a mark ``ƒ`` (the HTML page
#: has every expression).
MAX_EXPRESSIONS = 2048
#: Resolution of PNG pictures (dots per inch of the figure).
PNG_DPI = 100


def _wrap(side, lut):
    """The lines of output ``side``'s label: ``E=n^w^(e&s)``; an expression longer than
    :data:`MAX_LABEL` characters is broken after a top-level operator (``&``, ``|``, ``^``,
    ``?``, ``:``) into lines of at most ``MAX_LABEL + 2`` characters, the later ones indented
    by two spaces (``S=maj(n,e,w)&`` / ``  maj(n,s,w)``). None if it cannot be broken so."""
    text = expression(lut).replace(" ", "")
    if len(text) <= MAX_LABEL:
        return [f"{side.letter}={text}"]
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and char in "&|^?:":
            pieces.append(text[start:i + 1])
            start = i + 1
    pieces.append(text[start:])
    lines = [f"{side.letter}="]
    for piece in pieces:
        if len(lines[-1]) + len(piece) <= MAX_LABEL + 2 or lines[-1] in (f"{side.letter}=",
                                                                          "  "):
            lines[-1] += piece
        else:
            lines.append("  " + piece)
    return lines if all(len(line) <= MAX_LABEL + 2 for line in lines) else None


def _cell_lines(outputs):
    """The text of a logic cell: ``outputs`` is ``[(side, lut or None for a constant 1)]``;
    each expression on its line(s) (:func:`_wrap`), as long as the cell holds at most
    :data:`MAX_CELL_LINES` lines; the longest expressions are shown by their table
    (``S=0xea80``) until it does."""
    labels = [[f"{side.letter}=1"] if lut is None else _wrap(side, lut)
              for side, lut in outputs]
    labels = [label or [f"{side.letter}=0x{int(lut):04x}"]
              for label, (side, lut) in zip(labels, outputs)]
    while sum(map(len, labels)) > MAX_CELL_LINES:
        k = max(range(len(labels)), key=lambda i: len(labels[i]))
        side, lut = outputs[k]
        labels[k] = [f"{side.letter}=0x{int(lut):04x}"]
    return [line for label in labels for line in label]


def _side_point(x, y, side, inset=0.0):
    """The middle of side ``side`` of cell ``(x, y)`` (cell units, y down), ``inset`` towards
    the centre."""
    dx, dy = side.step
    return (x + 0.5 + dx * (0.5 - inset), y + 0.5 + dy * (0.5 - inset))


def _arrow(x, y, source, out):
    """The polyline of a copy from input side ``source`` to output side ``out`` of cell
    ``(x, y)`` (cell units, y down; the head goes at its last point). A straight pass runs
    through the centre; a turn cuts the corner between its two sides (through a point
    :data:`~bitgrid.view.style.TURN_CUT` from the centre towards that corner), so two turns
    (W->S, N->E) never look like a crossing (W->E, N->S), and the copies of a fan-out visibly
    leave one side."""
    if source == out.opposite:
        return [_side_point(x, y, source, 0.04), (x + 0.5, y + 0.5),
                _side_point(x, y, out, 0.08)]
    if source != out:
        (sx, sy), (ox, oy) = source.step, out.step
        return [_side_point(x, y, source, 0.04),
                (x + 0.5 + (sx + ox) * style.TURN_CUT, y + 0.5 + (sy + oy) * style.TURN_CUT),
                _side_point(x, y, out, 0.08)]
    dx, dy = out.step                          # a reflection: in beside the middle, and out
    px, py = -dy * 0.14, dx * 0.14
    ex, ey = _side_point(x, y, out, 0.04)
    return [(ex - px, ey - py), (x + 0.5 - px + dx * 0.1, y + 0.5 - py + dy * 0.1),
            (x + 0.5 + px + dx * 0.1, y + 0.5 + py + dy * 0.1),
            (ex + px - dx * 0.04, ey + py - dy * 0.04)]


def _head(end, side, size=0.1):
    """A triangle of the arrowhead at ``end`` pointing out of side ``side``."""
    dx, dy = side.step
    bx, by = end[0] - dx * size, end[1] - dy * size
    return [(end[0], end[1]), (bx - dy * size * 0.6, by + dx * size * 0.6),
            (bx + dy * size * 0.6, by - dx * size * 0.6)]


def _frame_note(trace, frame):
    if frame == 0:
        return "reset: every output 0; subcycle 0 (phase A) runs next"
    ran = frame - 1
    return (f"after {frame} of {trace.subcycles} subcycles: subcycle {ran} (phase "
            f"{'AB'[ran % 2]}, cells with x + y {'even' if ran % 2 == 0 else 'odd'}) just ran")


def render_picture(config, path=None, *, portmap=None, trace=None, frame=None, title=None,
                   fmt=None):
    """Draw ``config`` (a :class:`~bitgrid.config.Configuration`) as an SVG or PNG picture.

    :param path: file to write (atomically); its suffix ``.svg``/``.png`` gives the format
        unless ``fmt`` does. ``None``: only return the bytes (``fmt`` needed).
    :param portmap: a :class:`~bitgrid.ports.PortMap` for the grid, whose port bits are
        labelled at their lanes.
    :param trace: a :class:`~bitgrid.view.trace.Trace` of a run of ``config``; with it the
        picture shows the signals of ``frame``.
    :param frame: the frame shown, ``0 .. trace.subcycles`` (default the last).
    :param title: the heading (default: the grid size).
    :returns: the picture's bytes.
    :raises ValueError: for an unknown format, a port map or trace of another grid size, or a
        frame outside the trace.
    :raises ImportError: if matplotlib is not installed (``pip install 'bitgrid[view]'``).
    """
    fmt = _format(path, fmt)
    width, height = config.width, config.height
    if portmap is not None:
        portmap.check_grid(width, height)
    values = None
    if trace is not None:
        if trace.outputs.shape[2:] != (height, width):
            raise ValueError(f"The run is of a {trace.outputs.shape[3]} x "
                             f"{trace.outputs.shape[2]} grid, the program is {width} x {height}")
        frame = trace.subcycles if frame is None else frame
        if not 0 <= frame <= trace.subcycles:
            raise ValueError(f"Frame {frame} is outside the run: give 0 to {trace.subcycles} "
                             f"(the state after that many subcycles)")
        values = trace.outputs[frame]
    elif frame is not None:
        raise ValueError("A frame is shown only with a run (give a trace)")

    import matplotlib
    from matplotlib.figure import Figure

    detail = max(width, height) <= style.DETAIL_MAX_SIDE
    codes = kinds(config)
    expressions = int(((codes == ONE) | (codes == LOGIC)).sum()) <= MAX_EXPRESSIONS
    side = max(width, height)
    if detail:
        cell_in = min(0.9, 30 / side)
        font = cell_in * 72 * 0.11          # a line of 14 monospaced characters fits a cell
        label_cells = max([len(t) for t in _port_labels(portmap).values()] + [0])
        margin = 0.7 + (label_cells * font * 0.62 / (cell_in * 72) + 0.3 if portmap else 0)
    else:
        cell_in = 16 / side
        font = 9.0
        margin = 0.5 / cell_in + (1.0 / cell_in if portmap else 0)
    head_in, foot_in = 0.45, (0.55 if trace is None else 0.75)      # title, legend (inches)
    grid_w, grid_h = (width + 2 * margin) * cell_in, (height + 2 * margin) * cell_in
    fig_w = max(grid_w, 6.0)
    fig_h = grid_h + head_in + foot_in
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "bitgrid",
                                "font.family": "DejaVu Sans"}):
        fig = Figure(figsize=(fig_w, fig_h))
        ax = fig.add_axes([(fig_w - grid_w) / 2 / fig_w, foot_in / fig_h, grid_w / fig_w,
                           grid_h / fig_h])
        ax.set_xlim(-margin, width + margin)
        ax.set_ylim(height + margin, -margin)
        ax.set_axis_off()
        _background(ax, codes, values, detail)
        if detail:
            _grid_lines(ax, width, height)
            _cells(ax, config, codes, values, font, expressions, ids=fmt == "svg")
            _lanes(ax, width, height, font * 0.8, step=1)
        else:
            _lanes(ax, width, height, font * 0.8, step=_lane_step(side))
        if portmap is not None:
            _ports(ax, portmap, font if detail else font * 0.9, detail, margin)
        if trace is not None and frame > 0:
            _edge_inputs(ax, trace.inputs[frame - 1], width, height)
        heading = title or f"{width} x {height} cells"
        fig.text(0.5, 1 - 0.5 * head_in / fig_h, heading, ha="center", va="center",
                 fontsize=12, color=style.TEXT)
        legend = ("phase A: cells with x + y even (lighter), phase B: odd (darker); "
                  + ", ".join(f"{colour}: {what}"
                              for colour, what in style.CONTENT_LEGEND.values()))
        if detail and not expressions:
            legend += (f"; \u0192: logic (more than {MAX_EXPRESSIONS} expressions: see them in "
                       "the HTML page or bitgrid disasm)")
        if trace is not None:
            legend += (f"\nsignals: red 1, dark grey 0; {_frame_note(trace, frame)}")
        fig.text(0.5, 0.5 * foot_in / fig_h, legend, ha="center", va="center", fontsize=7.5,
                 color=style.TEXT, wrap=True)
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, dpi=PNG_DPI, metadata=_metadata(fmt))
    data = buffer.getvalue()
    if path is not None:
        atomic_write(path, data)
    return data


def _format(path, fmt):
    if fmt is None:
        if path is None:
            raise ValueError("Give a file name ending in .svg or .png, or a format")
        fmt = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"A picture is .svg or .png, not {fmt!r}")
    return fmt


def _metadata(fmt):
    # No dates or versions in the file: the same program gives the same bytes.
    return {"Date": None, "Creator": None} if fmt == "svg" else {"Software": None}


def _colour(hex_colour):
    return np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])


def _cell_colours(codes):
    """The background colour (RGB, 0..1) of every cell: an array ``(height, width, 3)``."""
    height, width = codes.shape[:2]
    table = np.array([[_colour(style.BACKGROUND[key, p]) for p in (0, 1)]
                      for key in style.BACKGROUND_KEYS])
    ys, xs = np.mgrid[0:height, 0:width]
    return table[style.contents(codes), parity(xs, ys)]


def _background(ax, codes, values, detail):
    """The chessboard of phases tinted by content; without detail and with a run, cells whose
    outputs are 1 are mixed towards the colour of 1."""
    height, width = codes.shape[:2]
    image = _cell_colours(codes)
    if detail:              # a rectangle per cell: sharp, and cheaper than a resampled image
        from matplotlib.collections import PolyCollection
        boxes = [[(x, y), (x + 1, y), (x + 1, y + 1), (x, y + 1)]
                 for y in range(height) for x in range(width)]
        ax.add_collection(PolyCollection(boxes, facecolors=image.reshape(-1, 3),
                                         edgecolors="none", zorder=0))
        return
    if values is not None:
        ones = values.sum(axis=0)[..., None] / 4.0
        image = image * (1 - ones) + _colour(style.VALUE[1]) * ones
    ax.imshow(image, extent=(0, width, height, 0), interpolation="nearest", zorder=0)


def _grid_lines(ax, width, height):
    from matplotlib.collections import LineCollection
    lines = [[(x, 0), (x, height)] for x in range(width + 1)]
    lines += [[(0, y), (width, y)] for y in range(height + 1)]
    ax.add_collection(LineCollection(lines, colors=style.GRID_LINE, linewidths=0.4, zorder=1))


def _cells(ax, config, codes, values, font, expressions, ids):
    """Arrows, expressions (or, without ``expressions``, a mark ``ƒ`` in each logic cell) and
    output markers of every configured cell. With ``ids`` (an SVG), each arrow is one element
    with the id ``arrow-X-Y-SOURCE-OUTPUT`` (``-not`` added for an inverted copy) and each
    output marker one with the id ``out-X-Y-SIDE-VALUE``; otherwise they are drawn as a few
    collections (much faster)."""
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle, Rectangle
    shafts, shaft_colours, heads, head_colours = [], [], [], []
    background = _cell_colours(codes)
    boxes, box_colours = [], []
    for y in range(config.height):
        for x in range(config.width):
            cell = codes[y, x]
            if not cell.any():
                continue
            lines = []
            for d in DIRECTIONS:
                code = int(cell[d])
                if code == ZERO:
                    continue
                value = None if values is None else int(values[d, y, x])
                colour = style.ARROW if value is None else style.VALUE[value]
                if COPY <= code < LOGIC:
                    source = DIRECTIONS[(code - COPY) % 4]
                    points = _arrow(x, y, source, d)
                    if ids:
                        name = f"arrow-{x}-{y}-{source.letter}-{d.letter}"
                        ax.add_artist(Line2D(*zip(*points), color=colour, linewidth=1.2,
                                             zorder=2, solid_capstyle="round",
                                             solid_joinstyle="round",
                                             gid=name + ("-not" if code >= NOT else "")))
                    else:
                        shafts.append(points)
                        shaft_colours.append(colour)
                    heads.append(_head(points[-1], d))
                    head_colours.append(colour)
                    if code >= NOT:
                        cx, cy = _side_point(x, y, d, 0.2)
                        ax.add_artist(Circle((cx, cy), 0.05, facecolor="white",
                                             edgecolor=colour, linewidth=0.8, zorder=3))
                elif code == ONE:
                    lines.append((d, None))
                else:
                    lines.append((d, int(config.luts[y, x, d])))
                if value is not None:
                    mx, my = _side_point(x, y, d, 0.045)
                    if ids:
                        ax.add_artist(Rectangle((mx - 0.04, my - 0.04), 0.08, 0.08,
                                                facecolor=colour, edgecolor="none", zorder=4,
                                                gid=f"out-{x}-{y}-{d.letter}-{value}"))
                    else:
                        boxes.append([(mx - 0.04, my - 0.04), (mx + 0.04, my - 0.04),
                                      (mx + 0.04, my + 0.04), (mx - 0.04, my + 0.04)])
                        box_colours.append(colour)
            if lines and expressions:
                # Over the arrows of a cell that also passes signals, on a box of the cell's
                # own colour, so both stay readable.
                box = None
                if len(lines) < sum(1 for c in cell if c != ZERO):
                    box = {"facecolor": background[y, x], "edgecolor": "none", "alpha": 0.85,
                           "boxstyle": "square,pad=0.15"}
                ax.text(x + 0.5, y + 0.5, "\n".join(_cell_lines(lines)), ha="center",
                        va="center", multialignment="left", fontsize=font,
                        family="DejaVu Sans Mono", color=style.TEXT, zorder=5, bbox=box,
                        gid=f"cell-{x}-{y}")
            elif lines:
                ax.text(x + 0.5, y + 0.5, "\u0192", ha="center", va="center",
                        fontsize=font * 1.6, color=style.TEXT, zorder=5, gid=f"cell-{x}-{y}")
    if shafts:
        ax.add_collection(LineCollection(shafts, colors=shaft_colours, linewidths=1.2,
                                         zorder=2, capstyle="round", joinstyle="round"))
    if heads:
        ax.add_collection(PolyCollection(heads, facecolors=head_colours, edgecolors="none",
                                         zorder=2))
    if boxes:
        ax.add_collection(PolyCollection(boxes, facecolors=box_colours, edgecolors="none",
                                         zorder=4))


def _lane_step(side):
    step = 1
    while side / step > 16:
        step *= 2
    return step


def _lanes(ax, width, height, font, step):
    """Lane numbers around the grid: N and S lane ``i`` is column ``i``, E and W lane ``j``
    row ``j`` (SPEC section 1)."""
    common = {"fontsize": font, "color": style.GRID_LINE}
    off = 0.3 if step == 1 else 0.012 * max(width, height)
    for i in range(0, width, step):
        ax.text(i + 0.5, -off, str(i), ha="center", va="bottom", **common)
        ax.text(i + 0.5, height + off, str(i), ha="center", va="top", **common)
    for j in range(0, height, step):
        ax.text(-off, j + 0.5, str(j), ha="right", va="center", **common)
        ax.text(width + off, j + 0.5, str(j), ha="left", va="center", **common)


def _port_labels(portmap):
    """``{(side, lane): text}``: the port bits on each lane, ``a[3]`` (a one-bit port by its
    name), input and output bits of one lane joined by ``" | "``."""
    labels = {}
    if portmap is None:
        return labels
    for port in portmap.ports:
        for i, bit in enumerate(port.bits):
            text = port.name if port.width == 1 else f"{port.name}[{i}]"
            key = (bit.side, bit.lane)
            labels[key] = f"{labels[key]} | {text}" if key in labels else text
    return labels


def _lane_position(side, lane, width, height, off):
    """Where a label of lane ``lane`` on ``side`` goes, ``off`` cells outside the grid, with
    its alignment and rotation."""
    if side == N:
        return (lane + 0.5, -off), "center", "bottom", 90
    if side == S:
        return (lane + 0.5, height + off), "center", "top", 90
    if side == W:
        return (-off, lane + 0.5), "right", "center", 0
    return (width + off, lane + 0.5), "left", "center", 0


def _ports(ax, portmap, font, detail, margin):
    width, height = portmap.width, portmap.height
    directions = {}
    for port in portmap.ports:
        for bit in port.bits:
            directions.setdefault((bit.side, bit.lane), set()).add(port.direction)
    if detail:
        for (side, lane), text in _port_labels(portmap).items():
            (px, py), ha, va, rotation = _lane_position(side, lane, width, height, 0.75)
            kind = directions[side, lane]
            colour = style.PORT[next(iter(kind))] if len(kind) == 1 else style.TEXT
            ax.text(px, py, text, ha=ha, va=va, rotation=rotation, fontsize=font,
                    color=colour)
        return
    from matplotlib.collections import LineCollection
    ticks, colours = [], []
    off = 0.04 * max(width, height)
    for port in portmap.ports:
        colour = style.PORT[port.direction]
        for bit in port.bits:
            # Beyond the lane numbers (0.012 side out, 3 digits wide), before the name.
            (px, py), *_ = _lane_position(bit.side, bit.lane, width, height, off * 0.875)
            horizontal = bit.side in (E, W)
            ticks.append([(px - off * 0.15, py), (px + off * 0.15, py)] if horizontal
                         else [(px, py - off * 0.15), (px, py + off * 0.15)])
            colours.append(colour)
        first = port.bits[0]
        (px, py), ha, va, rotation = _lane_position(first.side, first.lane, width, height,
                                                     off * 1.2)
        ax.text(px, py, port.name, ha=ha, va=va, rotation=rotation, fontsize=font,
                color=colour)
    ax.add_collection(LineCollection(ticks, colors=colours, linewidths=1.5))


def _edge_inputs(ax, edges, width, height):
    """Triangles outside the grid at every edge lane, pointing in, coloured by the lane's
    input value."""
    from matplotlib.collections import PolyCollection
    triangles, colours = [], []
    size = 0.12 if max(width, height) <= style.DETAIL_MAX_SIDE else 0.006 * max(width, height)
    for side in DIRECTIONS:
        word = edges.side(side)
        for lane in range(side_lanes(side, width, height)):
            (px, py), *_ = _lane_position(side, lane, width, height, size * 1.2)
            dx, dy = side.opposite.step            # pointing into the grid
            tip = (px + dx * size, py + dy * size)
            triangles.append([tip, (px - dy * size * 0.7, py + dx * size * 0.7),
                              (px + dy * size * 0.7, py - dx * size * 0.7)])
            colours.append(style.VALUE[word >> lane & 1])
    ax.add_collection(PolyCollection(triangles, facecolors=colours, edgecolors="none"))

