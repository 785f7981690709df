"""The small macros: wires, turns, crossings, fan-out, delays, constants, inverters, the text
stream and the shift register (SPEC sections 3 and 4).

Every builder draws its cells with a :class:`bitgrid.program.Program` used as a sketch pad and
returns a :class:`~bitgrid.library.block.Block`, whose port skews and latency are derived from
the LUTs (:func:`~bitgrid.library.block.solve_timing`).
"""

from ..cell import COPY, lut_from_function
from ..program import Program
from ..terms import E, N, S, W, parse_side
from .block import Block, LibraryError, block_from_program

#: The LUT copying each input side, by side index (N, E, S, W).

__all__ = ["MAX_BLOCK_CELLS", "check_box", "wire", "turn", "cross", "fanout", "delay",
           "constant", "inverter", "text_stream",
           "shift_register"]


#: The most cells of one block's box: a 256 x 256 grid. Larger parameters are refused before
#: anything is built (a block of 4096 x 4096 wires would take minutes and gigabytes).
MAX_BLOCK_CELLS = 1 << 16


def check_box(name, width, height):
    """:raises LibraryError: if a ``width`` x ``height`` box has more than
    :data:`MAX_BLOCK_CELLS` cells (the message names the macro and the limit)."""
    if width * height > MAX_BLOCK_CELLS:
        raise LibraryError(f"Macro {name} would be a {width} x {height} box of "
                           f"{width * height:,} cells; a block has at most "
                           f"{MAX_BLOCK_CELLS:,} (256 x 256): give smaller parameters")


def sketch(width, height):
    """A :class:`Program` big enough for a ``width`` x ``height`` box (rounded up to even)."""
    return Program(width + width % 2, height + height % 2)


def _bus(name, length, heading, bits, doc, function=None):
    """``bits`` parallel straight wires of ``length`` cells heading ``heading``; with
    ``function`` (of the one input ``x``) the first cell computes it instead of copying.

    :raises LibraryError: for a box of more than :data:`MAX_BLOCK_CELLS` cells."""
    heading = parse_side(heading)
    horizontal = heading in (E, W)
    width, height = (length, bits) if horizontal else (bits, length)
    check_box(name, width, height)
    back = heading.opposite
    copy = [0, 0, 0, 0]
    copy[heading] = COPY[back]
    first = list(copy)
    if function is not None:
        first[heading] = lut_from_function(_unary(back.input_name, function))
    copy, first = tuple(copy), tuple(first)
    cells = {}
    for i in range(bits):
        for k in range(length):
            # k cells along the wire from its input end.
            along = k if heading in (E, S) else length - 1 - k
            cells[(along, i) if horizontal else (i, along)] = first if k == 0 else copy
    ports = [("in", "in", [(back, i) for i in range(bits)]),
             ("out", "out", [(heading, i) for i in range(bits)])]
    return Block(name, width, height, cells, ports, doc=doc)


def _unary(arg, function):
    return {"n": lambda n: function(n), "e": lambda e: function(e),
            "s": lambda s: function(s), "w": lambda w: function(w)}[arg]


def wire(length, heading, bits):
    """``bits`` parallel wires of ``length`` cells towards ``heading``: ``in`` enters on the
    opposite side, ``out`` leaves on side ``heading``. Latency ``length`` subcycles."""
    return _bus(f"wire(length={length}, heading={heading}, bits={bits})", length, heading,
                bits, f"{bits} straight wire(s) of {length} cell(s) heading {heading}: each "
                f"cell copies the input on the {parse_side(heading).opposite.letter} side to "
                f"its {heading} output.")


def delay(subcycles, bits):
    """A delay of ``subcycles`` subcycles: ``bits`` wires W -> E of that many cells."""
    return _bus(f"delay(subcycles={subcycles}, bits={bits})", subcycles, "E", bits,
                f"{bits} wire(s) W->E of {subcycles} cells: out is in, {subcycles} subcycles "
                "later (a signal moves one cell per subcycle, SPEC section 4).")


def inverter(bits):
    """``bits`` inverters in a column: ``out = not in``, W -> E, one cell each."""
    return _bus(f"inverter(bits={bits})", 1, "E", bits,
                f"{bits} inverter cell(s) in a column: E output = not W input.",
                function=lambda x: 1 - x)


def turn(source, dest):
    """One cell turning a signal from side ``source`` to the perpendicular side ``dest``."""
    source, dest = parse_side(source), parse_side(dest)
    name = f"turn(source={source.letter}, dest={dest.letter})"
    if source % 2 == dest % 2:
        raise LibraryError(f"Macro {name}: a turn needs perpendicular sides, not "
                           f"{source.letter} and {dest.letter}")
    program = sketch(1, 1)
    program.turn(0, 0, source, dest)
    return block_from_program(name, program, 1, 1, [("in", "in", [(source, 0)]),
                                                    ("out", "out", [(dest, 0)])],
                              doc=f"One cell: the signal entering on {source.letter} leaves "
                              f"on {dest.letter}.")


def cross(horizontal, vertical):
    """One cell carrying a horizontal and a vertical signal across each other."""
    horizontal, vertical = parse_side(horizontal), parse_side(vertical)
    name = f"cross(horizontal={horizontal.letter}, vertical={vertical.letter})"
    program = sketch(1, 1)
    program.cross(0, 0, horizontal, vertical)
    ports = [("h_in", "in", [(horizontal.opposite, 0)]), ("h_out", "out", [(horizontal, 0)]),
             ("v_in", "in", [(vertical.opposite, 0)]), ("v_out", "out", [(vertical, 0)])]
    return block_from_program(name, program, 1, 1, ports,
                              doc=f"One cell, two independent wires: h_in "
                              f"({horizontal.opposite.letter}) -> h_out ({horizontal.letter}) "
                              f"and v_in ({vertical.opposite.letter}) -> v_out "
                              f"({vertical.letter}).")


def fanout(copies):
    """One cell copying the W input to ``copies`` outputs (E, then S, then N)."""
    sides = (E, S, N)[:copies]
    program = sketch(1, 1)
    program.cell(0, 0, **{d.input_name: (lambda w: w) for d in sides})
    ports = [("in", "in", [(W, 0)])]
    ports += [(f"out{k}", "out", [(d, 0)]) for k, d in enumerate(sides)]
    return block_from_program(f"fanout(copies={copies})", program, 1, 1, ports,
                              doc=f"One cell: the W input leaves on {copies} sides "
                              f"({', '.join(d.letter for d in sides)}: out0 .. "
                              f"out{copies - 1}).")


def constant(value, bits):
    """``bits`` cells in a column driving ``value`` (bit ``i`` on row ``i``) out of side E."""
    name = f"constant(value={value}, bits={bits})"
    if value >> bits:
        raise LibraryError(f"Macro {name}: value must fit {bits} bits (0..{(1 << bits) - 1})")
    program = sketch(1, bits)
    for i in range(bits):
        if (value >> i) & 1:
            program.cell(0, i, e=1)
    ports = [("out", "out", [(E, i) for i in range(bits)])]
    return block_from_program(name, program, 1, bits, ports,
                              doc=f"A column of {bits} cell(s) whose E outputs are the bits of "
                              f"{value} (constant cells: LUT 0xFFFF or 0).")


def text_stream(lanes, length):
    """The text-stream demo: ``lanes`` wires W -> E of ``length`` cells, one bit of the stream
    each (bitgrid.examples.text_lanes places it)."""
    return _bus(f"text_stream(lanes={lanes}, length={length})", length, "E", lanes,
                f"{lanes} pass lanes W->E of {length} cells carrying a text stream, one "
                f"{lanes}-bit word (with 8 lanes one UTF-8 byte) per design cycle: word bit i "
                "on lane i.")


def shift_register(length):
    """A serial-in, parallel-out shift register of ``length`` stages: ``q`` bit ``j`` is the
    input of ``j`` design cycles earlier (bit 0 the current one)."""
    name = f"shift_register(length={length})"
    width = 2 * length - 1
    program = sketch(width, 1)
    for x in range(width):
        outputs = {}
        if x < width - 1:
            outputs["e"] = lambda w: w
        if x % 2 == 0:
            outputs["s"] = lambda w: w
        program.cell(x, 0, **outputs)
    ports = [("in", "in", [(W, 0)]), ("q", "out", [(S, 2 * j) for j in range(length)])]
    # Tap j is 2j cells (j design cycles) down the line: read it j cycles "late".
    delays = {("q", j): j for j in range(length)}
    return block_from_program(name, program, width, 1, ports, output_delays=delays,
                              doc=f"A wire of {width} cells W->E with a tap to S every second "
                              f"cell: q[j] (S lane {2} * j) is in from j design cycles "
                              "earlier, so q holds the last "
                              f"{length} inputs, the newest in bit 0.")
