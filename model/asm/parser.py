"""The statements of BitGrid assembly text (docs/asm.md), parsed from tokens, with includes.

:func:`parse` turns a file (or text) into a flat list of statements, each a named tuple with the
:class:`~bitgrid.asm.lexer.Where` of its first token; ``include "file"`` is replaced by the
statements of that file (relative to the including file; a file that includes itself, directly
or through others, is refused). Cell outputs are evaluated at once into their 16-bit LUTs
(SPEC section 3), so the statements hold tables, not expression trees.
"""

import os
import stat
import typing

from ..cell import COPY, PASS_THROUGH, REFLECTOR
from ..terms import Direction
from .lexer import AsmError, Where, tokenize

__all__ = ["Grid", "Order", "Period", "Latency", "PortDecl", "Cell", "Assign", "Place",
           "parse", "parse_expression", "MAX_INCLUDE_DEPTH", "MAX_SOURCE_BYTES"]

#: Includes nested deeper than this are refused (a cycle is refused at once).
MAX_INCLUDE_DEPTH = 64
#: The most values of one range ``A..B`` (more than any grid side or port has).
MAX_RANGE = 1 << 16
#: The largest source file read (bytes).
MAX_SOURCE_BYTES = 64 << 20
#: Expressions nested deeper than this (parentheses, ``maj(...)``, ``?:`` branches) are refused.
MAX_NESTING = 100
#: The largest period, latency or skew magnitude in subcycles (longer than any run,
#: :data:`bitgrid.stimulus.MAX_STEPS`).
MAX_SUBCYCLES = 1_000_000

_MASK = 0xFFFF
_INPUTS = dict(zip("nesw", COPY))
_SIDES = {"N": Direction.N, "E": Direction.E, "S": Direction.S, "W": Direction.W,
          "NORTH": Direction.N, "EAST": Direction.E, "SOUTH": Direction.S, "WEST": Direction.W}
#: Whole-cell shorthands: name -> tables [N, E, S, W] (SPEC section 3).
SHORTHANDS = {
    "pass": PASS_THROUGH,                           # every signal continues straight on
    "reflect": REFLECTOR,                           # each output echoes its own side's input
    "zero": (0, 0, 0, 0),                           # the unconfigured cell, as a wall
}


class Grid(typing.NamedTuple):
    width: int
    height: int
    where: Where


class Order(typing.NamedTuple):
    order: str
    where: Where


class Period(typing.NamedTuple):
    value: int
    where: Where


class Latency(typing.NamedTuple):
    value: int
    where: Where


class PortDecl(typing.NamedTuple):
    """``in``/``out`` NAME[bits] lanes: ``bits`` is a list of ``(bit, side, lane, skew,
    where)`` in the order written."""
    direction: str
    name: str
    bits: list
    signed: bool
    where: Where


class Assign(typing.NamedTuple):
    side: Direction
    table: int
    where: Where        # of the side's letter


class Cell(typing.NamedTuple):
    """``cell X,Y: ...``: ``xs`` and ``ys`` are ranges; ``assigns`` a list of
    :class:`Assign`; ``shorthand`` the name of ``pass``/``reflect``/``zero`` or None."""
    xs: range
    ys: range
    assigns: list
    shorthand: typing.Optional[str]
    where: Where


class Place(typing.NamedTuple):
    """``place NAME(param=value, ...) at X,Y [ports [PREFIX]]``: ``prefix`` is None (no
    ports declared), True (``ports``: the macro's own port names) or the prefix."""
    macro: str
    params: dict
    x: int
    y: int
    prefix: typing.Optional[str]
    where: Where
    param_where: dict


class _Cursor:
    """Reads a token stream with one token of look-ahead: ``token`` and ``peek()``."""

    def __init__(self, tokens):
        self.depth = 0          # expressions being read, one inside another
        self.opened = []        # the '(' tokens not yet closed
        self._tokens = iter(tokens)
        self.token = next(self._tokens)
        self._next = next(self._tokens) if self.token.kind != "end" else self.token

    def peek(self):
        return self._next

    def next(self):
        token = self.token
        if token.kind != "end":
            self.token = self._next
            if self._next.kind != "end":
                self._next = next(self._tokens)
        return token

    def replace(self, token):
        """Put ``token`` in place of the current one."""
        self.token = token

    def at(self, kind, text=None):
        token = self.token
        return token.kind == kind and (text is None or token.text == text)

    def accept(self, kind, text=None):
        if self.at(kind, text):
            return self.next()
        return None

    def expect(self, kind, what):
        if self.token.kind != kind:
            raise AsmError(self.token.where, f"expected {what}, found {self.token}")
        return self.next()

    def keyword(self, text):
        token = self.token
        if token.kind == "name" and token.text.lower() == text:
            return self.next()
        return None

    def number(self, what, *, minimum=0, maximum=None):
        token = self.token
        if token.kind != "number":
            raise AsmError(token.where, f"expected {what} (a number), found {token}")
        if (minimum is not None and token.value < minimum) or (
                maximum is not None and token.value > maximum):
            bound = (f"{minimum}..{maximum}" if maximum is not None and minimum is not None
                     else f"at least {minimum}" if minimum is not None
                     else f"at most {maximum}")
            raise AsmError(token.where, f"{what} must be {bound}, not {token.value}")
        return self.next().value

    def range(self, what, *, minimum=0, maximum=None):
        """``A``, ``A..B`` (either order) or ``A..B by D`` (every ``D``-th value from ``A`` to
        ``B``, ``D`` > 0): a ``range`` of the values, in the order written, of at most
        :data:`MAX_RANGE` values."""
        first_token = self.token
        first = self.number(what, minimum=minimum, maximum=maximum)
        if not self.accept(".."):
            return range(first, first + 1)
        last_token = self.token
        last = self.number(what, minimum=minimum, maximum=maximum)
        step = 1
        if self.keyword("by"):
            step = self.number("the step of a range (A..B by D)", minimum=1)
            if (last - first) % step:
                raise AsmError(last_token.where, f"{first}..{last} by {step} does not end on "
                                                 f"{last}; the values are {first}, "
                                                 f"{first + step if last > first else first - step}"
                                                 ", ...")
        count = abs(last - first) // step + 1     # not len(range): it may not fit a C long
        if count > MAX_RANGE:
            raise AsmError(first_token.where, f"a range holds at most {MAX_RANGE} values, not "
                                              f"{count}")
        step = step if last >= first else -step
        return range(first, last + step, step)

    def end_of_statement(self):
        token = self.token
        if token.kind not in ("newline", "end"):
            raise AsmError(token.where, f"unexpected {token}; one statement per line")
        self.next()


def _side(token):
    side = _SIDES.get(token.text.upper()) if token.kind == "name" else None
    if side is None:
        raise AsmError(token.where, f"unknown side {token.text!r}; use N, E, S, W")
    return side


# Expressions -----------------------------------------------------------------------------------
def _expression(cur):
    cur.depth += 1
    if cur.depth > MAX_NESTING:
        raise AsmError(cur.token.where, f"expression nested deeper than {MAX_NESTING} levels; "
                                        "split it over several cells, or write the table in "
                                        "hex (0x96A5)")
    condition = _or(cur)
    if cur.token.kind == "?":
        cur.next()
        then = _expression(cur)
        cur.expect(":", "':' of 'c ? x : y'")
        other = _expression(cur)
        condition = (condition & then) | (~condition & other & _MASK)
    cur.depth -= 1
    return condition


def _or(cur):
    value = _xor(cur)
    while cur.token.kind == "|":
        cur.next()
        value |= _xor(cur)
    return value


def _xor(cur):
    value = _and(cur)
    while cur.token.kind == "^":
        cur.next()
        value ^= _and(cur)
    return value


def _and(cur):
    value = _unary(cur)
    while cur.token.kind == "&":
        cur.next()
        value &= _unary(cur)
    return value


def _unary(cur):
    invert = 0
    while cur.token.kind in ("~", "!"):     # a loop, not recursion: any number of them
        cur.next()
        invert ^= _MASK
    if cur.token.kind == "name":
        value = _INPUTS.get(cur.token.text)
        if value is not None:
            cur.next()
            return value ^ invert
    return _atom(cur) ^ invert


def _close(cur, opening):
    if cur.token.kind in ("newline", "end"):
        raise AsmError(opening.where, "this '(' is never closed; add ')'")
    return cur.expect(")", "')'")


def _atom(cur):
    token = cur.token
    if token.kind == "number":
        cur.next()
        if token.text[:2].lower() == "0x":
            if token.value > _MASK:
                shown = token.text if len(token.text) <= 24 else token.text[:20] + "..."
                raise AsmError(token.where, f"a LUT table has 16 bits; {shown} is more")
            return token.value
        if token.value in (0, 1):
            return _MASK if token.value else 0
        raise AsmError(token.where, f"a constant is 0 or 1, not {token.text}; write a whole "
                                    "16-bit table in hex, like 0x96A5")
    if token.kind == "name":
        name = token.text.lower()
        if name in _INPUTS:         # upper case (lower case is read by _unary)
            cur.next()
            return _INPUTS[name]
        if name == "maj":
            cur.next()
            opening = cur.expect("(", "'(' after maj")
            cur.opened.append(opening)
            args = [_expression(cur)]
            while cur.accept(","):
                args.append(_expression(cur))
            close = _close(cur, opening)
            cur.opened.pop()
            if len(args) != 3:
                raise AsmError(close.where, f"maj takes 3 arguments, not {len(args)}")
            a, b, c = args
            return (a & b) | (a & c) | (b & c)
        raise AsmError(token.where, f"unknown name {token.text!r} in an expression; the "
                                    "inputs are n, e, s, w, the constants 0 and 1")
    opening = cur.accept("(")
    if opening:
        cur.opened.append(opening)
        value = _expression(cur)
        _close(cur, opening)
        cur.opened.pop()
        return value
    if token.kind in ("newline", "end") and cur.opened:    # "(" and then the end or a ";"
        raise AsmError(cur.opened[-1].where, "this '(' is never closed; add ')'")
    raise AsmError(token.where, f"expected an expression of n, e, s, w, 0 and 1, found {token}")


def parse_expression(text, file="<expression>"):
    """The 16-bit LUT (SPEC section 3) of one expression of ``n, e, s, w``, ``0``, ``1``,
    hex tables and ``~ ! & ^ | ?: maj()``; for example ``parse_expression("n ^ e") == 0x6666``.

    :raises AsmError: naming the column of the problem.
    """
    cur = _Cursor(tokenize(text, file))
    value = _expression(cur)
    cur.end_of_statement()
    if not cur.at("end"):
        raise AsmError(cur.token.where, f"unexpected {cur.token} after the expression")
    return value


# Statements ------------------------------------------------------------------------------------
def _size(cur, what):
    token = cur.token
    value = cur.number(f"the grid {what}", minimum=2, maximum=0xFFFE)
    if value % 2:
        raise AsmError(token.where, f"the grid {what} must be even (SPEC section 1), not "
                                    f"{value}")
    return value


def _grid(cur, where):
    width = _size(cur, "width")
    token = cur.token
    if token.kind == "name" and token.text.lower() == "x":
        cur.next()
    elif token.kind == "name" and token.text[:1].lower() == "x" and token.text[1:].isdigit():
        # "8x8" lexes as 8 and x8: read the height from the name
        cur.replace(token._replace(kind="number", text=token.text[1:],
                                   value=int(token.text[1:]), column=token.column + 1))
    else:
        raise AsmError(token.where, f"expected 'x' between width and height (grid 8 x 8), "
                                    f"found {token}")
    return Grid(width, _size(cur, "height"), where)


def _lanes(cur):
    """``SIDE lanes {, [SIDE] lanes}``: a list of ``(side, lane, where)``."""
    result = []
    side = _side(cur.expect("name", "a side (N, E, S, W) and lanes, like W 2..9"))
    while True:
        where = cur.token.where
        for lane in cur.range("a lane number"):
            result.append((side, lane, where))
        if not cur.at(","):
            return result
        cur.next()
        if cur.at("name"):
            side = _side(cur.next())


def _port(cur, direction, where):
    name_token = cur.accept("string") or cur.expect("name", "a port name")
    name = name_token.value
    indices = None
    if cur.accept("["):
        indices = list(cur.range("a bit number"))
        cur.expect("]", "']' closing the bit range")
    lanes = _lanes(cur)
    if indices is None:
        indices = list(range(len(lanes)))
    if len(indices) != len(lanes):
        raise AsmError(name_token.where, f"port {name} names {len(indices)} bits on "
                                         f"{len(lanes)} lanes; "
                              "give one lane per bit")
    signed = False
    skews = None
    while cur.at("name"):
        token = cur.next()
        word = token.text.lower()
        if word == "signed":
            signed = True
        elif word == "skew":
            if skews is not None:
                raise AsmError(token.where, f"port {name}: skew is given twice; give all the "
                                            "skews after one 'skew'")
            skew_where = cur.token.where
            bound = dict(minimum=-MAX_SUBCYCLES, maximum=MAX_SUBCYCLES)
            skews = list(cur.range("a skew (subcycles)", **bound))
            while cur.accept(","):
                skews += cur.range("a skew (subcycles)", **bound)
            if len(skews) == 1:
                skews = skews * len(lanes)
            if len(skews) != len(lanes):
                raise AsmError(skew_where, f"port {name} has {len(lanes)} bits and "
                                           f"{len(skews)} skews; give one skew, or one per bit")
        else:
            raise AsmError(token.where, f"unknown port option {token.text!r}; use signed or "
                                        "skew")
    skews = skews or [0] * len(lanes)
    bits = [(bit, side, lane, skew, lane_where)
            for bit, (side, lane, lane_where), skew in zip(indices, lanes, skews)]
    return PortDecl(direction, name, bits, signed, name_token.where)


def _cell(cur, where):
    xs = cur.range("the cell's x")
    cur.expect(",", "',' between x and y (cell 3,0: ...)")
    ys = cur.range("the cell's y")
    cur.expect(":", "':' after the cell's coordinates (cell 3,0: E = w)")
    xs = xs if xs.step > 0 else xs[::-1]
    ys = ys if ys.step > 0 else ys[::-1]
    token = cur.token
    if token.kind == "name" and token.text.lower() in SHORTHANDS \
            and cur.peek().kind in ("newline", "end"):
        cur.next()
        return Cell(xs, ys, [], token.text.lower(), where)
    assigns = []
    while True:
        targets = []
        while True:
            token = cur.expect("name", "an output side (N, E, S, W) and '=', like E = w")
            if token.text.lower() in SHORTHANDS:
                raise AsmError(token.where, f"{token.text} stands alone: it sets all four "
                                            f"outputs (cell 0,0: {token.text.lower()})")
            side = _side(token)
            cur.expect("=", f"'=' after output {side.name}")
            targets.append((side, token.where))
            if not (cur.at("name") and cur.peek().kind == "="):
                break
        table = _expression(cur)
        assigns += [Assign(side, table, side_where) for side, side_where in targets]
        if not cur.accept(","):
            return Cell(xs, ys, assigns, None, where)


def _value(cur):
    token = cur.next()
    if token.kind in ("number", "string"):
        return token.value
    if token.kind == "name":
        lower = token.text.lower()
        if lower in ("true", "false"):
            return lower == "true"
        if lower in _SIDES and len(lower) == 1:
            return token.text.upper()
        return token.text
    raise AsmError(token.where, f"expected a parameter value (a number, a name or a "
                                f"\"string\"), found {token}")


def _place(cur, where):
    macro = cur.expect("name", "a macro name (place adder(bits=8) at 0,0)").text
    params, param_where = {}, {}
    if cur.accept("("):
        while not cur.at(")"):
            name = cur.expect("name", "a parameter name")
            cur.expect("=", f"'=' after parameter {name.text}")
            if name.text in params:
                raise AsmError(name.where, f"parameter {name.text} is given twice")
            param_where[name.text] = name.where
            params[name.text] = _value(cur)
            if not cur.accept(","):
                break
        cur.expect(")", "')' closing the parameters")
    if not cur.keyword("at"):
        raise AsmError(cur.token.where, f"expected 'at X,Y' after the macro, found {cur.token}")
    x = cur.number("the x offset")
    cur.expect(",", "',' between x and y")
    y = cur.number("the y offset")
    prefix = None
    if cur.keyword("ports"):
        prefix = cur.next().text if cur.at("name") else True
    return Place(macro, params, x, y, prefix, where, param_where)


def read_source(path):
    """The bytes of the source file ``path`` (at most :data:`MAX_SOURCE_BYTES` + 1 of them),
    or None if it is not a regular file (a folder, a device, a FIFO: opened without blocking,
    so a FIFO with no writer does not hang).

    :raises OSError: if it cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return file.read(MAX_SOURCE_BYTES + 1)


def _read(path, where):
    try:
        data = read_source(path)
    except OSError as error:
        raise AsmError(where, f"cannot read {path}: {error.strerror or error}") from None
    if data is None:
        raise AsmError(where, f"{path} is not a file")
    if len(data) > MAX_SOURCE_BYTES:
        raise AsmError(where, f"{path} is larger than {MAX_SOURCE_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise AsmError(where, f"{path}: byte {error.start} is not UTF-8 text") from None


def parse(text, file="<text>", *, base=None, progress=None, _stack=()):
    """The statements of ``text``, with every ``include`` replaced by its file's statements.

    :param file: the name used in messages (and, with ``base=None``, the folder includes are
        relative to; ``<text>`` means the current folder).
    :param progress: optional callable ``progress(line, lines)``, called now and then with
        the line reached in ``text`` and its number of lines.
    :raises AsmError: ``file:line:column: message`` for the first problem.
    """
    folder = base if base is not None else (
        os.path.dirname(file) if not file.startswith("<") else os.getcwd())
    cur = _Cursor(tokenize(text, file))
    statements = []
    lines = text.count("\n") + 1
    while not cur.at("end"):
        if cur.accept("newline"):
            continue
        if progress is not None and len(statements) % 1024 == 0:
            progress(cur.token.line, lines)
        token = cur.expect("name", "a statement (grid, cell, in, out, place, include, ...)")
        word, where = token.text.lower(), token.where
        if word == "grid":
            statements.append(_grid(cur, where))
        elif word == "order":
            value = cur.expect("name", "a scan order (row-major, column-major, snake)")
            statements.append(Order(value.text, value.where))
        elif word == "period":
            statements.append(Period(cur.number("the period (subcycles)", minimum=2,
                                                maximum=MAX_SUBCYCLES), where))
        elif word == "latency":
            statements.append(Latency(cur.number("the latency (subcycles)",
                                                 maximum=MAX_SUBCYCLES), where))
        elif word in ("in", "out"):
            statements.append(_port(cur, word, where))
        elif word == "cell":
            statements.append(_cell(cur, where))
        elif word == "place":
            statements.append(_place(cur, where))
        elif word == "include":
            name = cur.expect("string", 'a file name in quotes (include "lanes.bga")')
            if not name.value.strip():
                raise AsmError(name.where, 'include names no file; write include "file.bga"')
            if not name.value.isprintable():
                raise AsmError(name.where, "a file name cannot hold control characters (such as "
                                           "NUL)")
            cur.end_of_statement()
            path = os.path.join(folder, name.value)
            key = os.path.realpath(path)
            chain = [entry for entry, _ in _stack] + [os.path.realpath(file)]
            if key in chain:
                raise AsmError(name.where, f"include cycle: {name.value} includes itself "
                                           "through " + " -> ".join(
                                               os.path.basename(p) for p in chain[chain.index(
                                                   key):] + [key]))
            if len(_stack) >= MAX_INCLUDE_DEPTH:
                raise AsmError(name.where, f"includes nested deeper than {MAX_INCLUDE_DEPTH}")
            # Named as the including file is: "lib/top.bga" includes "a.bga" as "lib/a.bga".
            shown = (os.path.normpath(os.path.join(os.path.dirname(file), name.value))
                     if not file.startswith("<") else os.path.normpath(name.value))
            statements += parse(_read(path, name.where), shown,
                                base=os.path.dirname(path),
                                _stack=_stack + ((os.path.realpath(file), name.where),))
            continue
        else:
            raise AsmError(where, f"unknown statement {token.text!r}; use grid, order, period, "
                                  "latency, in, out, cell, place or include")
        cur.end_of_statement()
    return statements
