"""The multiply-accumulate block: ``acc <= acc + a * b`` at period 2 (SPEC sections 3 and 4).

The pipelined multiplier (:mod:`bitgrid.library.multiplier`) leaves product bit ``v`` on its E
lane ``row(v)`` one subcycle a row later than the lane above (its skews are its rows), which is
exactly how an accumulator's carry ripples down a column. So the accumulator is laid against
the multiplier's E side *stretched* to those rows: in the first column beyond the multiplier,
the cell on row ``row(v)`` adds ``p_v`` (W), the register bit ``acc_v`` (E) and the carry (N),
sends the sum E and the carry S; the carry passes straight down the rows between two product
rows (one subcycle a row, as the product bits are skewed). In the second column the loop cell
on each adder's row sends the sum back W (the register: a loop of two cells, one design cycle
at period 2; 0 when ``rst``, which comes down this column), and out of E as ``acc``. Register
bits past the product's top (``acc_bits > 2 bits``) continue the column one row apart, adding
only the carry. No routing between the two: 2 cells a register bit and a pass cell per row in
between, beside the multiplier's cells.

Output ``acc`` in row ``k`` is the register after row ``k``'s clock edge (the sum over rows
``0 .. k``, as the ``counter`` block's): the loop cell drives it with the value it sends back.
A Verilog register's output (``k`` edges, 0 in row 0) is the same a row later, which is how
the compiler uses it (every input a row later, :mod:`bitgrid.compiler.operations`).
"""

from ..terms import E, N, S, W
from .basic import sketch
from .arith import accumulator_bit
from .block import LibraryError, block_from_program
from .multiplier import multiplier

__all__ = ["mac"]


def mac(bits, acc_bits, reset=True):
    """``acc <= rst ? 0 : acc + a * b`` (without ``reset``: ``acc <= acc + a * b``), unsigned
    ``bits``-bit operands, an ``acc_bits``-bit register (wrapping modulo ``2**acc_bits``).

    :returns: a :class:`~.block.Block`: ``a`` on W lanes, ``b`` and ``rst`` on N lanes,
        ``acc`` on E lanes (see :func:`~.multiplier.multiplier` for ``a`` and ``b``);
        period 2.
    :raises LibraryError: if ``acc_bits`` is not in ``1 .. 4096``.
    """
    if not 1 <= acc_bits <= 4096:
        raise LibraryError(f"Macro mac: acc_bits is 1 .. 4096, not {acc_bits}")
    product = multiplier(bits)
    lanes = [bit.lane for bit in product.port("p").bits]          # E rows of p_v, increasing
    used = min(acc_bits, len(lanes))
    rows = lanes[:used] + [lanes[used - 1] + k for k in range(1, acc_bits - used + 1)]
    x0 = product.width
    width, height = x0 + 2, max(product.height, rows[-1] + 1)
    program = sketch(width, height)
    for (x, y), tables in product.cells.items():
        program.set_tables(x, y, tables)
    last = rows[-1]
    for i, y in enumerate(rows):
        has_p, has_carry = i < used, i > 0
        # the adder: p (W) + acc (E) + carry (N); sum E, carry S
        total, carry = accumulator_bit(has_carry, has_p)
        program.cell(x0, y, e=total, s=carry if y < last else None)
        # the loop cell: the sum back W (0 when rst), out of E; rst on down
        if reset:
            program.cell(x0 + 1, y, w=lambda n, w: w & (1 - n), e=lambda n, w: w & (1 - n),
                         s=(lambda n: n) if y < last else None)
        else:
            program.cell(x0 + 1, y, w=lambda w: w, e=lambda w: w)
    between = set(range(rows[0], last)) - set(rows)
    for y in sorted(between):                                    # the carry and rst between
        program.connect(x0, y, N, S)
        if reset:
            program.connect(x0 + 1, y, N, S)
    ports = [(p.name, "in", [(b.side, b.lane) for b in p.bits])
             for p in (product.port("a"), product.port("b"))]
    if reset:
        ports.append(("rst", "in", [(N, x0 + 1)]))
    ports.append(("acc", "out", [(E, y) for y in rows]))
    return block_from_program(
        f"mac(bits={bits}, acc_bits={acc_bits}, reset={reset})", program, width, height, ports,
        registers={(x0 + 1, y, W) for y in rows},
        doc=f"acc <= {'rst ? 0 : ' if reset else ''}acc + a * b: the {bits} x {bits} "
        f"multiplier with a {acc_bits}-bit accumulator laid against its E side on the "
        "product's rows (the carry passing down between them, as skewed as the product), "
        "a loop of two cells per register bit: period 2. acc on E lanes, row k the register "
        "after row k's edge (its next state; a Verilog register's output is this a row "
        "later).")
