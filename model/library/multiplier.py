"""The pipelined ``n x n`` unsigned multiplier: a carry-save array in which partial products,
sums and carries flow in three different directions (SPEC sections 3 and 4).

Why the array looks the way it does. With a new operand pair every full cycle (period 2),
every cell computes each design cycle once, and a value it reads must have been computed by
its neighbour on the subcycle just before (SPEC section 4). So within one design cycle a
signal only ever flows "forward in time", one cell per subcycle, and a cell whose LUTs read
all four sides (the full-adder cells below: a, b, sum in, carry in) cannot send anything to a
neighbour that also feeds it in the same wave: its four neighbours must be routing cells. Each
full-adder cell therefore sits in a 3 x 2 tile of routing cells.

Layout (local coordinates; ``u = 0 .. n-1`` from west to east, ``v`` from north to south):

* Full-adder cell ``F(u, v)`` at ``(3u, 2v)`` adds the partial product ``a_v & b_(n-1-u)``
  (weight ``v + n - 1 - u``) to a sum (input W) and a carry (input N): output S is the carry,
  output E the sum.
* Operand ``a_v`` enters on W lane ``2v + 1`` and runs east along row ``2v + 1``; the cell
  under each ``F(u, v)`` copies it north into that F's S input.
* Operand ``b_j`` enters on N lane ``3(n - j) - 1`` and runs south along that column; each
  cell of it in an F row copies it west, and the next cell (east of ``F``) on into that F's E
  input.
* The carry of ``F(u, v)`` goes south through one cell to ``F(u, v + 1)`` (weight + 1); the sum
  goes east, south, south, east, east to ``F(u + 1, v + 1)`` (same weight): 5 cells, the
  5 subcycles between those two full adders. In the east column the sum of ``F(n-1, v)`` is
  product bit ``v``, carried east to E lane ``2v``.
* The tail, rows ``v = n .. 2n - 1``, finishes the carry-save addition (no separate
  carry-propagate adder): half-adder cells ``H(u, v)`` (``u >= v - n``) at ``(3u, n + v)``, one
  row each, with no operand lanes: the carry goes straight south to ``H(u, v + 1)``, the sum
  east, south, east, east to ``H(u + 1, v + 1)`` (4 cells; the tail keeps the array's 3
  subcycles per column, so it joins it without delays). Product bit ``v`` leaves on E lane
  ``n + v``.
* The box is ``3n`` cells wide (one more for odd ``n``, so that the E side always reaches the
  edge of a grid it fills) and ``3n`` high.

Cells: ``n**2`` adder cells in the array, of which ``(n - 1)**2`` are full adders (the first
row's are AND gates, the first column's half adders: nothing to add yet), ``n (n - 1) / 2``
half adders and ``n - 1`` XOR gates in the tail (counted from the LUTs by
:func:`bitgrid.library.block.logic_census`), and the routing of the tiles
(:func:`multiplier` reports the totals; docs/library.md lists them for n = 2..8). Latency and
the per-bit skews follow from the LUTs (:func:`bitgrid.library.block.solve_timing`).
"""

from ..terms import E, N, S, W
from .basic import sketch
from .block import Block, logic_census

__all__ = ["multiplier"]


def _full_adder_cell(has_pp, has_sum, has_carry, *, invert_pp=False, constant=0,
                     fixed_b=False):
    """(sum, carry) LUT functions of a full adder cell: partial product ``s & e`` (a from S,
    b from E; inverted with ``invert_pp``; with ``fixed_b`` a constant 1 bit of b: ``s``),
    sum in from W, carry in from N; a missing sum input is ``constant`` (0 or 1), a missing
    carry 0."""
    def parts(n, e, s, w):
        pp = ((s & (e | fixed_b)) ^ invert_pp) if has_pp else 0
        x = w if has_sum else constant
        y = n if has_carry else 0
        return pp, x, y

    def total(n, e, s, w):
        pp, x, y = parts(n, e, s, w)
        return pp ^ x ^ y

    def carry(n, e, s, w):
        pp, x, y = parts(n, e, s, w)
        return (pp & x) | (pp & y) | (x & y)
    return total, carry


def multiplier(bits, signed=False, addend=0, constant=-1):
    """The ``bits`` x ``bits`` pipelined multiplier (see the module docstring): ports ``a``
    (W), ``b`` (N), ``p`` (E, ``2 * bits`` bits); period 2.

    With ``signed`` the operands and the product are two's complement (modified Baugh-Wooley):
    the partial products ``a_i & b_j`` with exactly one of ``i``, ``j`` the top bit are
    inverted, 1 is added at weight ``bits`` (the missing sum input of ``F(0, 1)``) and at
    weight ``2 bits - 1`` (the top product bit inverted). The same cells, the same timing.

    With ``addend`` (unsigned only, 1 .. ``2 bits``) the block is a multiply-add, ``p = a * b
    + c`` modulo ``2**(2 bits)`` with ``c`` of ``addend`` bits, in the same cells: the carry
    save array has a free input at every weight below ``2 bits - 1``, the carry inputs of its
    first row (``c_w``, ``w < bits``, on N lane ``3 (bits - 1 - w)`` into ``F(bits - 1 - w,
    0)``) and the sum inputs of its first column (``bits <= w <= 2 bits - 2`` on W lane ``2 (w
    - bits + 1)`` into ``F(0, w - bits + 1)``), and the tail's last cell adds the top bit from
    its S lane.

    With ``constant`` (0 .. ``2**bits - 1``; -1: none) ``b`` is that constant, folded into
    the partial products (``a_v`` or nothing): no ``b`` port, and the cells that carried ``b``
    down and into the array are left out (unsigned only)."""
    n = bits
    rows = 2 * n
    fixed = constant >= 0
    if fixed and (signed or constant >= 1 << n):
        from .block import LibraryError
        raise LibraryError(f"Macro multiplier: a constant b is unsigned, 0 .. {(1 << n) - 1} "
                           f"for {n} bits, not {constant}{' (signed)' if signed else ''}")
    if addend and signed:
        from .block import LibraryError
        raise LibraryError(f"Macro multiplier: an addend needs unsigned operands (the first "
                           f"column's free input at weight {n} holds the signed form's 1)")

    def exists(u, v):
        return 0 <= u < n and 0 <= v < rows and (v < n or u >= v - n)

    # Drawn with a spare column 0 and row 0 (where the a and b lanes would start), which the
    # box then leaves out: the ports enter the first cells that use them. The box is made of
    # even width so that it fills a grid (the product lanes get one more pass cell).
    width, height = 3 * n + (3 * n) % 2 + 1, 3 * n + 1

    def row(v):
        """Sketch row of adder row v: 2v + 1 in the array, n + v + 1 in the tail."""
        return 2 * v + 1 if v < n else n + v + 1

    program = sketch(width, height)
    for v in range(rows):
        for u in range(n):
            if not exists(u, v):
                continue
            x, y = 3 * u + 1, row(v)
            # F(u, v) forms a_v & b_(n-1-u): Baugh-Wooley inverts it where one index is the top
            invert = signed and v < n and (v == n - 1) != (u == 0)
            # the addend's bits on the free carry (first row) and sum (first column) inputs
            carry_in = v == 0 and n - 1 - u < addend
            sum_in = u == 0 and 1 <= v < n and v + n - 1 < addend
            has_pp = v < n and (not fixed or constant >> (n - 1 - u) & 1)
            total, carry = _full_adder_cell(has_pp, exists(u - 1, v - 1) or sum_in,
                                            exists(u, v - 1) or carry_in, invert_pp=invert,
                                            constant=int(signed and (u, v) == (0, 1)),
                                            fixed_b=fixed)
            if signed and v == rows - 1:                      # + 2**(2n - 1): top bit inverted
                total = (lambda f: lambda n, e, s, w: 1 ^ f(n, e, s, w))(total)
            if addend == 2 * n and v == rows - 1:              # + c_(2n-1) from the S lane
                total = (lambda f: lambda n, e, s, w: s ^ f(n, e, s, w))(total)
            outputs = {"e": total}
            if exists(u, v + 1):
                outputs["s"] = carry
                if v < n:
                    program.connect(x, y + 1, N, S)           # B: carry south
            program.cell(x, y, **outputs)
            if u == n - 1:                                    # product bit v, east
                for px in range(x + 1, width):
                    program.connect(px, y, W, E)
            elif v < n:                                       # sum to F(u + 1, v + 1)
                program.connect(x + 1, y, W, S)               # G
                program.connect(x + 1, y + 1, N, S)           # C
                program.connect(x + 1, y + 2, N, E)           # G of the tile below
                program.connect(x + 2, y + 2, W, E)           # D of the tile below
            else:                                             # tail: E, S, E, E
                program.connect(x + 1, y, W, S)
                program.connect(x + 1, y + 1, N, E)
                program.connect(x + 2, y + 1, W, E)
    for v in range(n):                                        # a_v along row 2v + 2
        y = 2 * v + 2
        for x in range(3 * n - 1):
            if x % 3 == 1:
                program.cell(x, y, n=lambda w: w, e=(lambda w: w) if x < 3 * n - 2 else None)
            else:
                program.connect(x, y, W, E)
    for u in range(n if not fixed else 0):                    # b_(n-1-u) down column 3u + 3
        x = 3 * u + 3
        for y in range(2 * n):
            outputs = {}
            if y < 2 * n - 1:
                outputs["s"] = lambda n: n
            if y % 2 == 1:
                outputs["w"] = lambda n: n
                program.connect(x - 1, y, E, W)               # G: b into F's E input
            program.cell(x, y, **outputs)
    cells = {(x - 1, y - 1): program.tables(x, y) for y in range(1, height)
             for x in range(1, width) if any(program.tables(x, y))}
    ports = [("a", "in", [(W, 2 * v + 1) for v in range(n)], signed),
             ("b", "in", [(N, 3 * (n - j) - 1) for j in range(n)], signed),
             ("p", "out", [(E, row(v) - 1) for v in range(rows)], signed)]
    if fixed:
        del ports[1]
    if addend:
        lanes = [(N, 3 * (n - 1 - w)) if w < n else (W, 2 * (w - n + 1)) if w < 2 * n - 1
                 else (S, 3 * n - 3) for w in range(addend)]
        ports.insert(2, ("c", "in", lanes))
    tail = logic_census({xy: t for xy, t in cells.items() if xy[1] >= 2 * n})
    kind = ("Signed (two's complement, modified Baugh-Wooley: the partial products of one top "
            "bit inverted, 1 added at weights n and 2n - 1)" if signed else "Unsigned")
    return Block(
        f"multiplier(bits={n}{', signed=True' if signed else ''}"
        f"{f', addend={addend}' if addend else ''}{f', constant={constant}' if fixed else ''})",
        width - 1, height - 1,
        cells, ports,
        doc=f"{kind} {n} x {n} multiplier, p = a * b ({2 * n} bits), a new pair every full "
        f"cycle: a on W lanes 1, 3, .. {2 * n - 1}, b on N lanes {3 * n - 1}, {3 * n - 4}, .. 2 "
        f"(bit 0 first), p on E lanes 0, 2, .. {2 * n - 2}, then {2 * n} .. {3 * n - 1}. A "
        f"carry-save array of {n} x {n} adder cells, each forming its partial product a_v & "
        f"b_j and sitting in a 3 x 2 tile of routing cells ({(n - 1) ** 2} full adders; the "
        f"first row's cells are AND gates, the first column's half adders), and a tail of "
        f"{tail['half adders']} half adders and {tail['gates']} XOR gates in 3 x 1 tiles that "
        "finishes the sum." + (f" With addend={addend}: p = a * b + c mod 2**{2 * n}, c on the "
                               "array's free inputs (first row N lanes, first column W lanes, "
                               "the top bit on an S lane)." if addend else ""))
