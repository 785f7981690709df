"""The macro library: tested building blocks for BitGrid programs (docs/library.md).

:data:`MACROS` maps each macro's name to its :class:`Macro`; ``MACROS["adder"].build(bits=8)``
(or :func:`build` ``("adder", bits=8)``) returns a :class:`Block`: the LUTs of a box of cells in
local coordinates, named ports on the box's boundary (:class:`bitgrid.ports.Port`, bits as
``(side, index along that side, skew)``), ``latency`` and ``period`` in subcycles, and
``place(program, x, y)``. ``block.standalone()`` puts a block alone on a grid with its ports on
the grid edges (a :class:`~bitgrid.config.Configuration` and a
:class:`~bitgrid.ports.PortMap`), for ``bitgrid eval`` and the tests. Timing semantics: see
:mod:`bitgrid.library.block` (and :mod:`bitgrid.ports`, SPEC section 4).

Every macro is fully pipelined: it takes a new row of inputs every ``period`` = 2 subcycles.
"""

from . import arith, basic, mac as _mac, memory, multiplier as _multiplier
from .block import Block, LibraryError, Standalone, solve_timing, support
from .macro import Macro, Param

__all__ = ["MACROS", "Macro", "Param", "Block", "Standalone", "LibraryError", "build",
           "solve_timing", "support"]

_SIDES = ("N", "E", "S", "W")

#: The storage blocks' row-0 gate (:func:`bitgrid.library.memory.gate_first_row`).
_FIRST_ROW = Param("first_row", "int", -1, "rdata in row 0 instead of a read (one read port; "
                   "-1: a read)", -1)

#: The macros by name, in the order of docs/library.md.
MACROS = {m.name: m for m in (
    Macro("wire", "Straight wires: bits parallel lanes of length cells", [
        Param("length", "int", 1, "cells per lane (= subcycles of latency)", 1, 4096),
        Param("heading", "choice", "E", "direction the signals travel", choices=_SIDES),
        Param("bits", "int", 1, "parallel lanes", 1, 4096)], basic.wire),
    Macro("turn", "One cell turning a signal through 90 degrees", [
        Param("source", "choice", "W", "side the signal enters", choices=_SIDES),
        Param("dest", "choice", "S", "side it leaves (perpendicular)", choices=_SIDES)],
        basic.turn),
    Macro("cross", "One cell carrying two signals across each other", [
        Param("horizontal", "choice", "E", "heading of the horizontal signal", choices=("E", "W")),
        Param("vertical", "choice", "S", "heading of the vertical signal", choices=("N", "S"))],
        basic.cross),
    Macro("fanout", "One cell copying its W input to 2 or 3 sides", [
        Param("copies", "int", 2, "number of copies (E, S, N)", 1, 3)], basic.fanout),
    Macro("delay", "A delay of n subcycles (bits wires of n cells)", [
        Param("subcycles", "int", 2, "delay in subcycles", 1, 4096),
        Param("bits", "int", 1, "parallel lanes", 1, 4096)], basic.delay),
    Macro("constant", "A column of constant cells", [
        Param("value", "int", 0, "the constant (bit i on row i)", 0),
        Param("bits", "int", 1, "width", 1, 4096)], basic.constant),
    Macro("inverter", "A column of inverters", [
        Param("bits", "int", 1, "width", 1, 4096)], basic.inverter),
    Macro("full_adder", "One full-adder cell", [], arith.full_adder),
    Macro("adder", "An n-bit ripple-carry adder, one full-adder cell per bit", [
        # The sum has bits + 1 bits (the carry out), and a port has at most 4096.
        Param("bits", "int", 8, "operand width", 1, 4095),
        Param("carry_in", "bool", False, "take a carry in on N lane 0")], arith.adder),
    Macro("multiplier", "A pipelined n x n multiplier (carry-save array)", [
        Param("bits", "int", 8, "operand width n", 2, 64),
        Param("signed", "bool", False, "two's complement operands and product"),
        Param("addend", "int", 0, "bits of an addend c: p = a * b + c (unsigned; 0: none)",
              0, 128),
        Param("constant", "int", -1, "b fixed to this constant, no b port (unsigned; -1: "
              "b is an input)", -1)],
        _multiplier.multiplier),
    Macro("mac", "Multiply-accumulate: acc <= acc + a * b at period 2, with a reset", [
        Param("bits", "int", 8, "operand width n", 2, 64),
        Param("acc_bits", "int", 20, "register width", 1, 4096),
        Param("reset", "bool", True, "a synchronous reset input rst")], _mac.mac),
    Macro("counter", "An n-bit counter adding its enable input every cycle", [
        Param("bits", "int", 8, "width", 1, 4096)], arith.counter),
    Macro("shift_register", "A serial-in, parallel-out shift register", [
        Param("length", "int", 8, "stages (output bits)", 1, 2048)], basic.shift_register),
    Macro("comparator", "Comparator: a < b, a == b, a > b", [
        Param("bits", "int", 8, "operand width", 1, 4096),
        Param("signed", "bool", False, "two's complement operands")], arith.comparator),
    Macro("accumulator", "An n-bit register adding its addend every cycle, with a reset", [
        Param("bits", "int", 16, "register width", 1, 4096),
        Param("addend", "int", 8, "addend width (at most bits)", 1, 4096),
        Param("reset", "bool", True, "a synchronous reset input rst")], arith.accumulator),
    Macro("reduction", "The AND, OR or XOR of the bits of a word: one row of cells", [
        Param("bits", "int", 16, "input width", 1, 4096),
        Param("op", "choice", "xor", "the reduction", choices=("and", "or", "xor"))],
        arith.reduction),
    Macro("popcount", "The number of ones in a word: a half adder per count bit and input", [
        Param("bits", "int", 8, "input width", 1, 4096)], arith.popcount),
    Macro("register_file", "A register file at period 2: one write port, combinational reads", [
        Param("words", "int", 8, "words", 2, 4096),
        Param("width", "int", 8, "bits per word", 1, 4096),
        Param("read_ports", "int", 1, "combinational read ports", 1, 4),
        Param("init", "int", 0, "initial contents: word i in bits i*width .. (i+1)*width-1", 0),
        Param("write_enable", "bool", True, "a we input (without: every row writes)"),
        Param("shared_address", "bool", False, "the first read port reads at waddr (a "
              "single-port RAM: no raddr)"),
        Param("abits", "int", 0, "bits of waddr (0: just enough for the words)", 0, 16),
        Param("we_low", "bool", False, "we is active low"), _FIRST_ROW],
        memory.register_file),
    Macro("rom", "A read-only memory from a table at period 2: combinational reads", [
        Param("words", "int", 16, "words", 2, 4096),
        Param("width", "int", 8, "bits per word", 1, 4096),
        Param("init", "int", -1, "the table: word i in bits i*width .. (i+1)*width-1 (-1: "
              "word i holds i)", -1),
        Param("read_ports", "int", 1, "read ports", 1, 4), _FIRST_ROW], memory.rom),
    Macro("text_stream", "The text-stream demo: lanes pass wires W to E", [
        Param("lanes", "int", 8, "bits per word (8: one byte per cycle)", 1, 4096),
        Param("length", "int", 8, "cells per lane", 1, 4096)], basic.text_stream),
)}


def build(name, **params):
    """``MACROS[name].build(**params)``.

    :raises LibraryError: for an unknown macro (naming the known ones) or bad parameters.
    """
    try:
        macro = MACROS[name]
    except KeyError:
        raise LibraryError(f"No macro {name!r}; the macros are {', '.join(MACROS)}") from None
    return macro.build(**params)
