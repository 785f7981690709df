"""The viewer's colours and sizes, shared by the pictures (:mod:`.picture`) and the HTML
stepper (:mod:`.page`), so both show a program the same way.

Cell backgrounds are a chessboard of the two phases (SPEC section 4): phase A cells (``x + y``
even) light, phase B cells a shade darker, tinted by what the cell holds.
"""

__all__ = ["BACKGROUND", "CONTENT_LEGEND", "ARROW", "VALUE", "PORT", "GRID_LINE", "UPDATED", "TEXT",
           "DETAIL_MAX_SIDE", "TURN_CUT", "BACKGROUND_KEYS", "contents"]

#: Background per (content, phase): content ``"blank"`` (unconfigured), ``"pass"`` (copies
#: only), ``"logic"`` (an expression or an inverted copy), ``"const"`` (constant 1 outputs and
#: zeros only); phase 0 (A) and 1 (B). Unconfigured cells are white and light grey, so no other
#: content is grey: constants are lilac.
BACKGROUND = {
    ("blank", 0): "#ffffff", ("blank", 1): "#ececec",
    ("pass", 0): "#dcebf7", ("pass", 1): "#c3d8ea",
    ("logic", 0): "#fcefc7", ("logic", 1): "#efdca6",
    ("const", 0): "#f1def5", ("const", 1): "#dfc3e8",
}
BACKGROUND_KEYS = ("blank", "pass", "logic", "const")
#: What the legends call each content's colour (phase A / phase B shades of one hue) and the
#: content itself.
CONTENT_LEGEND = {
    "blank": ("white / light grey", "unconfigured"),
    "pass": ("blue", "pass cells (arrows)"),
    "logic": ("yellow", "logic (output = expression of n, e, s, w)"),
    "const": ("lilac", "constant 1 outputs"),
}
#: Arrows of pass outputs when no run is shown.
ARROW = "#1f4e79"
#: A signal's colour by value, 0 and 1.
VALUE = {0: "#5b6670", 1: "#d62728"}
#: Port labels by direction.
PORT = {"in": "#1f5fbf", "out": "#2a8a2a"}
GRID_LINE = "#9aa4ad"
#: The corner mark of the cells that updated in the subcycle just run (the HTML page).
UPDATED = "#ff9f1c"
TEXT = "#222222"
#: How far the arrow of a turn (a copy to a side next to its input's) passes from the cell's
#: centre towards the corner it cuts, in cells: straight passes cross at the centre, turns do
#: not, so two turns never look like a crossing.
TURN_CUT = 0.2
#: Grids up to this many cells on their longer side are drawn cell by cell (arrows,
#: expressions, lane numbers); larger ones as one pixel block per cell.
DETAIL_MAX_SIDE = 32


def contents(kinds):
    """The content of every cell, as indices into :data:`BACKGROUND_KEYS`: an int array of the
    shape of ``kinds`` without its last axis, from the LUT kind codes ``kinds`` (``(..., 4)``,
    :func:`bitgrid.view.functions.kinds`)."""
    import numpy as np

    from .functions import COPY, LOGIC, NOT, ZERO
    kinds = np.asarray(kinds)
    logic = ((kinds >= NOT) & (kinds <= LOGIC)).any(axis=-1)
    copies = ((kinds >= COPY) & (kinds < NOT)).any(axis=-1)
    blank = (kinds == ZERO).all(axis=-1)
    result = np.full(kinds.shape[:-1], BACKGROUND_KEYS.index("const"), dtype=np.uint8)
    result[copies] = BACKGROUND_KEYS.index("pass")
    result[logic] = BACKGROUND_KEYS.index("logic")
    result[blank] = BACKGROUND_KEYS.index("blank")
    return result
