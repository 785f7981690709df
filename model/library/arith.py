"""Arithmetic macros: full adder, ripple-carry adder, comparator and counter (SPEC sections 3
and 4). The pipelined multiplier is in :mod:`bitgrid.library.multiplier`.

All are fully pipelined: a new row every period (2 subcycles; the counter's state loop is two
cells long, so it too counts once per full cycle). Operand bits are skewed at the ports (bit
``i`` one subcycle after bit ``i - 1``), as the carry ripples one cell per subcycle.
"""

from ..terms import E, N, S, W
from .basic import sketch
from .block import Block, block_from_program

__all__ = ["SUM", "CARRY", "full_adder", "adder", "comparator", "counter", "accumulator",
           "accumulator_bit", "reduction", "popcount", "invert_input", "REDUCTIONS"]

#: The reductions of :func:`reduction`: the two-input function the row applies.
REDUCTIONS = {"and": lambda n, w: n & w, "or": lambda n, w: n | w, "xor": lambda n, w: n ^ w}


def invert_input(tables, side):
    """The four LUT tables ``tables`` (N, E, S, W) of a cell reading input ``side``
    complemented: every table's entry ``a`` becomes its entry ``a ^ (1 << side)`` (SPEC
    section 3: input N is address bit 0)."""
    bit = 1 << int(side)
    return tuple(sum(((t >> (a ^ bit)) & 1) << a for a in range(16)) for t in tables)


def SUM(n, e, w):
    """The full adder's sum: ``n ^ e ^ w`` (carry in, b, a)."""
    return n ^ e ^ w


def CARRY(n, e, w):
    """The full adder's carry: majority of ``n, e, w``."""
    return (n & e) | (n & w) | (e & w)


def full_adder():
    """One cell: a (W), b (E), carry in (N) -> sum (E), carry out (S)."""
    program = sketch(1, 1)
    program.cell(0, 0, e=SUM, s=CARRY)
    ports = [("a", "in", [(W, 0)]), ("b", "in", [(E, 0)]), ("cin", "in", [(N, 0)]),
             ("sum", "out", [(E, 0)]), ("cout", "out", [(S, 0)])]
    return block_from_program("full_adder()", program, 1, 1, ports,
                              doc="One cell: inputs a (W), b (E), carry in (N); outputs sum "
                              "= a ^ b ^ cin (E) and carry out = majority (S).")


def adder(bits, carry_in):
    """An ``bits``-bit ripple-carry adder: a column of full-adder cells (carry south)."""
    program = sketch(1, bits)
    for i in range(bits):
        if i == 0 and not carry_in:
            program.cell(0, 0, e=lambda e, w: e ^ w, s=lambda e, w: e & w)
        else:
            program.cell(0, i, e=SUM, s=CARRY)
    ports = [("a", "in", [(W, i) for i in range(bits)]),
             ("b", "in", [(E, i) for i in range(bits)])]
    if carry_in:
        ports.append(("cin", "in", [(N, 0)]))
    ports.append(("sum", "out", [(E, i) for i in range(bits)] + [(S, 0)]))
    cin = " + cin (N lane 0)" if carry_in else ""
    return block_from_program(f"adder(bits={bits}, carry_in={carry_in})", program, 1, bits,
                              ports,
                              doc=f"A column of {bits} full-adder cells, bit i on row i: a on W "
                              f"lanes, b on E lanes{cin}; sum = a + b{' + cin' if carry_in else ''} "
                              f"({bits + 1} bits): E lanes 0..{bits - 1}, the carry out of S "
                              "lane 0 as the top bit. The carry moves one row per subcycle, so "
                              "bit i is skewed by i subcycles at every port.")


def comparator(bits, signed=False):
    """Comparison of ``a`` and ``b``: ``lt``, ``eq``, ``gt``; two's complement with
    ``signed`` (the top bits complemented on the way in: ``a < b`` signed is ``a ^ m < b ^ m``
    unsigned, ``m`` the top bit)."""
    program = sketch(2, bits + 1)
    for i in range(bits):
        # Column 0: the borrow of a - b ripples south; E carries the difference bit d_i.
        if i == 0:
            program.cell(0, 0, s=lambda e, w: (1 - w) & e, e=lambda e, w: e ^ w)
        else:
            program.cell(0, i, s=lambda n, e, w: ((1 - w) & e) | ((1 - (w ^ e)) & n),
                         e=lambda e, w: e ^ w)
        # Column 1: b_i on to column 0 (W), and the "all equal so far" chain south.
        if i == 0:
            program.cell(1, 0, w=lambda e: e, s=lambda w: 1 - w)
        else:
            program.cell(1, i, w=lambda e: e, s=lambda n, w: n & (1 - w))
    program.cell(0, bits, s=lambda n: n, e=lambda n: n)           # lt on, and over to col 1
    program.cell(1, bits, e=lambda n: n, s=lambda n, w: (1 - n) & (1 - w))   # eq, gt
    ports = [("a", "in", [(W, i) for i in range(bits)], signed),
             ("b", "in", [(E, i) for i in range(bits)], signed),
             ("lt", "out", [(S, 0)]), ("gt", "out", [(S, 1)]), ("eq", "out", [(E, bits)])]
    kind = "Signed (two's complement, the top bits complemented)" if signed else "Unsigned"
    cells = {(x, y): program.tables(x, y) for x in range(2) for y in range(bits + 1)}
    if signed:       # a's top bit enters (0, bits - 1) from W, b's (1, bits - 1) from E
        cells[(0, bits - 1)] = invert_input(cells[(0, bits - 1)], W)
        cells[(1, bits - 1)] = invert_input(cells[(1, bits - 1)], E)
    return Block(f"comparator(bits={bits}{', signed=True' if signed else ''})",
                              2, bits + 1, cells, ports,
                              doc=f"{kind} compare of {bits}-bit a (W lanes 0..{bits - 1}) "
                              f"and b (E lanes 0..{bits - 1}): lt = a < b (S lane 0), gt = "
                              f"a > b (S lane 1), eq = a == b (E lane {bits}). Column 0 "
                              "ripples the borrow of a - b south, column 1 passes b west and "
                              "ripples 'all difference bits 0' south.")


def reduction(bits, op):
    """``y = x[0] op x[1] op ... op x[bits - 1]``: one row of an even number of cells, each
    combining its N lane's bit with the result so far (W); the first cell also takes a bit on
    its W lane and the last one on its E lane, so ``bits`` bits take ``bits - 2`` cells
    (``bits - 1`` for odd ``bits``)."""
    fn = REDUCTIONS[op]
    if bits <= 2:
        program = sketch(1, 1)
        program.cell(0, 0, e=fn if bits == 2 else (lambda n: n))
        lanes = [(N, 0)] + ([(W, 0)] if bits == 2 else [])
        width = 1
    else:
        width = bits - 2 if bits % 2 == 0 else bits - 1
        program = sketch(width, 1)
        three = {"and": lambda n, e, w: n & e & w, "or": lambda n, e, w: n | e | w,
                 "xor": lambda n, e, w: n ^ e ^ w}[op]
        for i in range(width):
            program.cell(i, 0, e=three if i == width - 1 and bits % 2 == 0 else fn)
        lanes = [(W, 0)] + [(N, i) for i in range(width)] + ([(E, 0)] if bits % 2 == 0
                                                                else [])
    ports = [("x", "in", lanes), ("y", "out", [(E, 0)])]
    where = ("x_0 on N lane 0" + (", x_1 on W lane 0" if bits == 2 else "") if bits <= 2 else
             f"x_0 on W lane 0, x_i on N lane i - 1" + (f", x_{bits - 1} on E lane 0"
                                                        if bits % 2 == 0 else ""))
    return block_from_program(f"reduction(bits={bits}, op={op!r})", program, width, 1, ports,
                              doc=f"The {op.upper()} of the {bits} bits of x ({where}) in "
                              f"{width} cell{'s' * (width != 1)}: each combines the bit of its "
                              "N lane with the result so far (W) and sends it E; y leaves on "
                              "E lane 0.")


def popcount(bits):
    """``count`` = the number of ones in ``x``: column ``i`` adds ``x_i`` to the count so far
    (a half adder per count bit, the carry south); ``x`` on the N lanes."""
    width = bits.bit_length()
    program = sketch(bits, width)
    for i in range(bits):
        for j in range(width):
            if (1 << j) > i + 1:
                break            # the count of i + 1 bits has no bit j yet: the cell stays 0
            if i == 0:
                program.cell(0, 0, e=lambda n: n)
            elif j == width - 1:     # the top bit: no carry out (the count fits)
                program.cell(i, j, e=lambda n, w: n ^ w)
            else:
                program.cell(i, j, e=lambda n, w: n ^ w, s=lambda n, w: n & w)
    ports = [("x", "in", [(N, i) for i in range(bits)]),
             ("count", "out", [(E, j) for j in range(width)])]
    return block_from_program(f"popcount(bits={bits})", program, bits, width, ports,
                              doc=f"The number of ones in the {bits} bits of x (N lanes 0.."
                              f"{bits - 1}), count ({width} bits) on E lanes 0..{width - 1}. "
                              "Column i adds x_i to the count so far, which runs E on row j "
                              "for bit j: each cell is a half adder (the carry S); a cell whose "
                              "count bit cannot be 1 yet (2**j > i + 1) stays empty.")


def counter(bits):
    """A ``bits``-bit counter: adds the ``en`` input every design cycle."""
    program = sketch(2, bits)
    for i in range(bits):
        # Cell (0, i): count bit i (from the loop cell, E) plus the carry (N).
        outputs = {"e": lambda n, e: n ^ e}
        outputs["s"] = lambda n, e: n & e
        program.cell(0, i, **outputs)
        # Cell (1, i): the state loop back to (0, i), and the count out of E.
        program.cell(1, i, w=lambda w: w, e=lambda w: w)
    ports = [("en", "in", [(N, 0)]), ("count", "out", [(E, i) for i in range(bits)]),
             ("carry", "out", [(S, 0)])]
    return block_from_program(f"counter(bits={bits})", program, 2, bits, ports, feedback=True,
                              doc=f"A {bits}-bit counter: row k of count is the sum of en over "
                              f"rows 0..k, modulo 2**{bits} (0 after reset). Bit i is a loop of "
                              "two cells, (0, i) adding the carry from N and (1, i) sending the "
                              "new bit back and out of E: the loop takes one full cycle, so it "
                              "counts once per design cycle. carry (S lane 0) is 1 in the row "
                              "where the count wraps to 0.")


def accumulator_bit(has_carry, has_x):
    """(sum, carry) LUT functions of an accumulator bit: q (E) + x (W) + carry (N), the
    missing inputs 0 (the accumulator's and the multiply-accumulate's adder cells)."""
    def total(n, e, w):
        return e ^ (n & has_carry) ^ (w & has_x)

    def carry(n, e, w):
        a, b = n & has_carry, w & has_x
        return (e & a) | (e & b) | (a & b)
    return total, carry


def accumulator(bits, addend, reset):
    """A ``bits``-bit register ``q`` that adds the ``addend``-bit input ``x`` every design
    cycle: ``q <= rst ? 0 : q + x`` (without ``reset``: ``q <= q + x``), 0 after reset."""
    if addend > bits:
        from .block import LibraryError
        raise LibraryError(f"Macro accumulator: the addend ({addend} bits) is wider than the "
                           f"register ({bits} bits)")
    program = sketch(2, bits)
    for i in range(bits):
        # Cell (0, i): q_i (the loop, E) + x_i (W) + the carry (N); the carry on south, and
        # q_i itself out of W: the register's output.
        total, carry = accumulator_bit(i > 0, i < addend)
        program.cell(0, i, e=total, s=carry if i < bits - 1 else None, w=lambda e: e)
        # Cell (1, i): the new q_i back to (0, i); rst comes down column 1.
        if reset:
            program.cell(1, i, w=lambda n, w: w & (1 - n),
                         s=(lambda n: n) if i < bits - 1 else None)
        else:
            program.cell(1, i, w=lambda w: w)
    ports = [("x", "in", [(W, i) for i in range(addend)])]
    if reset:
        ports.append(("rst", "in", [(N, 1)]))
    ports.append(("q", "out", [(W, i) for i in range(bits)]))
    rst = "rst ? 0 : " if reset else ""
    return block_from_program(
        f"accumulator(bits={bits}, addend={addend}, reset={reset})", program, 2, bits, ports,
        registers={(1, i, W) for i in range(bits)},
        doc=f"A {bits}-bit register q <= {rst}q + x, x of {addend} bits on W lanes "
        f"0..{addend - 1}{', rst on N lane 1' if reset else ''}, q on W lanes 0..{bits - 1}; "
        "row k of q is the register after k clock edges (0 in row 0: the state before row "
        "k's inputs, as a Verilog register's output). Bit i is a loop of two cells: (0, i) "
        "adds x_i and the carry from N to q_i and sends q_i out of W, (1, i) sends the sum "
        f"back{' (0 when rst)' if reset else ''}; the loop takes one full cycle, so the "
        "period is 2, and the carry ripples one row a subcycle (bit i skewed by i).")
