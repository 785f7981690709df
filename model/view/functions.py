"""What each cell of a configuration does, in the terms a picture shows (SPEC section 3).

Every output ``d`` of a cell is one 16-bit LUT over the address ``a = N | E<<1 | S<<2 | W<<3``.
The viewer sorts each LUT into one of these *kinds* (the codes of :data:`KINDS`):

* ``ZERO`` / ``ONE``: a constant output (0x0000 / 0xFFFF);
* ``COPY_N`` .. ``COPY_W``: the output copies one input (a pass: straight on, a turn, or
  back where it came from), code ``COPY + side``;
* ``NOT_N`` .. ``NOT_W``: the output is one input inverted, code ``NOT + side``;
* ``LOGIC``: anything else, shown as an expression of ``n, e, s, w``.

A cell whose four LUTs are all 0 is *unconfigured* (SPEC section 3) and drawn blank. A *pass
cell* has only copies and zeros: arrows, straight (the copied input faces the output), a turn
(an adjacent side), a reflection (the same side), a crossing (two straight passes at right
angles) or a fan-out (one input copied to several outputs).

:func:`expression` prints a LUT as its minimal expression, the same text as ``bitgrid disasm``.
"""

import numpy as np

from bitgrid import cell
from bitgrid.terms import DIRECTIONS

__all__ = ["ZERO", "ONE", "COPY", "NOT", "LOGIC", "KINDS", "lut_kind", "kinds", "expression",
           "cell_summary"]

ZERO, ONE, COPY, NOT, LOGIC = 0, 1, 2, 6, 10
#: Kind codes and their names: ``{0: "zero", 1: "one", 2: "copy N", ..., 10: "logic"}``.
KINDS = {ZERO: "zero", ONE: "one", **{COPY + d: f"copy {d.letter}" for d in DIRECTIONS},
         **{NOT + d: f"not {d.letter}" for d in DIRECTIONS}, LOGIC: "logic"}

_KIND_TABLE = np.full(1 << 16, LOGIC, dtype=np.uint8)
_KIND_TABLE[0x0000], _KIND_TABLE[0xFFFF] = ZERO, ONE
for _d, _lut in enumerate(cell.COPY):
    _KIND_TABLE[_lut] = COPY + _d
    _KIND_TABLE[_lut ^ 0xFFFF] = NOT + _d
del _d, _lut


def lut_kind(lut):
    """The kind code (:data:`KINDS`) of one 16-bit LUT.

    :raises ValueError: for a value outside 0..0xFFFF.
    """
    if not 0 <= int(lut) <= 0xFFFF:
        raise ValueError(f"A LUT is a 16-bit table, not {lut!r}")
    return int(_KIND_TABLE[int(lut)])


def kinds(config):
    """The kind codes of every LUT of ``config``: an array ``(height, width, 4)`` of
    ``uint8``, indexed like ``config.luts[y, x, d]``."""
    return _KIND_TABLE[config.luts]


def expression(lut):
    """The minimal expression of the 16-bit LUT ``lut`` (bit ``a`` for address ``a``; SPEC
    section 3): ``"0"``, ``"n"``, ``"~w"``, ``"n ^ w"``, ``"maj(n, e, s)"``, ``"~w & (s ? e :
    n)"``: the text ``bitgrid disasm`` writes (:func:`bitgrid.asm.minimise.expression`, whose
    docstring has the grammar and the cost model).

    :raises ValueError: for a value outside 0..0xFFFF.
    """
    from bitgrid.asm.minimise import expression as minimal
    return minimal(lut)


def cell_summary(tables):
    """A one-line description of a cell's four LUTs ``(N, E, S, W)``: ``"unconfigured"``,
    ``"pass: W->E"``, ``"pass: W->E, N->S (crossing)"``, ``"fan-out: W->N,E"``, or the
    expressions ``"E = n ^ w"`` of its outputs, ``;``-separated."""
    codes = [lut_kind(t) for t in tables]
    if all(c == ZERO for c in codes):
        return "unconfigured"
    parts = []
    if all(c == ZERO or COPY <= c < NOT for c in codes):
        sources = {}
        for d, c in zip(DIRECTIONS, codes):
            if c != ZERO:
                sources.setdefault(DIRECTIONS[c - COPY], []).append(d)
        moves = [f"{src.letter}->{','.join(d.letter for d in outs)}"
                 for src, outs in sources.items()]
        straight = [src for src, outs in sources.items() if outs == [src.opposite]]
        fan_out = any(len(outs) > 1 for outs in sources.values())
        label = "fan-out" if fan_out else "pass"
        note = ""
        if len(straight) == 2 and straight[0] % 2 != straight[1] % 2:
            note = " (crossing)"
        return f"{label}: {', '.join(moves)}{note}"
    for d, lut, c in zip(DIRECTIONS, tables, codes):
        if c != ZERO:
            parts.append(f"{d.letter} = {expression(lut)}")
    return "; ".join(parts)
