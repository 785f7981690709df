"""The ``--expr`` shorthand: a one-line expression as a Verilog design (issue 12).

``bitgrid compile --expr "p = a * b" --vars a:8,b:8`` builds a module ``expr`` with inputs
``a``, ``b`` (8 bits, unsigned) and output ``p``, and compiles it like any Verilog design.

Syntax: Python expression syntax, one or more ``OUTPUT = EXPRESSION`` statements separated by
``;``. A later statement may use an earlier output. Values are exact integers, as in Python:

* operators ``+ - * & | ^ ~ << >>`` (``>>`` arithmetic), unary ``-``, comparisons
  ``< <= > >= == !=`` (one per comparison; 1 or 0), ``not x`` (1 if x is 0),
  ``x if c else y`` (``c`` true when not 0), ``abs(x)``, ``min(x, y)``, ``max(x, y)``;
* non-negative integer literals (``0x`` hex, ``0b`` binary); shift amounts must be constants
  or unsigned variables.

Variables (``--vars``): ``NAME:WIDTH`` (unsigned), ``NAME:sWIDTH`` (two's complement) or
``NAME:uWIDTH``. Every input needs one. An output is as wide as its exact value range needs
(signed if it can be negative: ``a - b`` of two 8-bit inputs is a signed 9-bit output), unless
``--vars`` gives it a width, then its value is wrapped to that width (kept mod ``2**WIDTH``,
read as signed for ``sWIDTH``).

:func:`parse_expression` checks the text and infers the widths (interval arithmetic on the
value ranges); :func:`expression_design` writes the Verilog, where every operation is one
wire wide enough for its exact value, so the Verilog result equals the Python value.
"""

import ast
import re
import typing

from .errors import CompileError

__all__ = ["MAX_WIDTH", "Variable", "Expression", "parse_vars", "parse_expression",
           "expression_design"]

#: How the message names an operator that is not supported.
_UNSUPPORTED = {ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
                ast.MatMult: "@"}

#: Widest value (bits) of a variable or an intermediate result.
MAX_WIDTH = 1024

_VERILOG_KEYWORDS = set("""always and assign automatic begin buf bufif0 bufif1 case casex casez
cell cmos config deassign default defparam design disable edge else end endcase endconfig
endfunction endgenerate endmodule endprimitive endspecify endtable endtask event for force
forever fork function generate genvar highz0 highz1 if ifnone incdir include initial inout
input instance integer join large liblist library localparam macromodule medium module nand
negedge nmos nor noshowcancelled not notif0 notif1 or output parameter pmos posedge primitive
pull0 pull1 pulldown pullup pulsestyle_onevent pulsestyle_ondetect rcmos real realtime reg
release repeat rnmos rpmos rtran rtranif0 rtranif1 scalared showcancelled signed small specify
specparam strong0 strong1 supply0 supply1 table task time tran tranif0 tranif1 tri tri0 tri1
triand trior trireg unsigned use uwire vectored wait wand weak0 weak1 while wire wor xnor xor
bit byte int logic shortint longint string type var""".split())


class Variable(typing.NamedTuple):
    """A port of an expression design: ``name``, ``width`` (bits), ``signed``."""
    name: str
    width: int
    signed: bool = False

    @property
    def lo(self):
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def hi(self):
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


def _check_name(name, what):
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name or ""):
        raise CompileError(f"{what} {name!r}: a name is a letter followed by letters, digits "
                           "and _")
    if name in _VERILOG_KEYWORDS:
        raise CompileError(f"{what} {name!r} is a Verilog keyword; choose another name")
    return name


def parse_vars(text):
    """``{name: Variable}`` from ``--vars`` text ``a:8,b:s8`` (or a dict ``{name: width}``,
    ``{name: "s8"}``, ``{name: (width, signed)}``).

    :raises CompileError: for a malformed entry, a name given twice, a width outside 1 to
        :data:`MAX_WIDTH`.
    """
    if text is None:
        return {}
    if isinstance(text, dict):
        items = list(text.items())
    elif isinstance(text, str):
        items = []
        for entry in filter(None, (e.strip() for e in text.split(","))):
            name, colon, spec = entry.partition(":")
            if not colon:
                raise CompileError(f"--vars entry {entry!r}: write NAME:WIDTH, e.g. a:8 or "
                                   "b:s8 (signed)")
            items.append((name.strip(), spec.strip()))
    else:
        raise CompileError(f"--vars is text such as a:8,b:s8, not {text!r}")
    variables = {}
    for name, spec in items:
        _check_name(name, "--vars name")
        if isinstance(spec, tuple):
            width, signed = spec
        elif isinstance(spec, int) and not isinstance(spec, bool):
            width, signed = spec, False
        else:
            match = re.fullmatch(r"([su]?)(\d+)", str(spec))
            if not match:
                raise CompileError(f"--vars {name}:{spec}: the width is a number, s before it "
                                   "for signed (a:8, b:s8)")
            width, signed = int(match.group(2)), match.group(1) == "s"
        if not 1 <= width <= MAX_WIDTH:
            raise CompileError(f"--vars {name}: the width must be 1 to {MAX_WIDTH} bits, not "
                               f"{width}")
        if signed and width < 2:
            raise CompileError(f"--vars {name}: a signed variable has at least 2 bits")
        if name in variables:
            raise CompileError(f"--vars gives {name} twice")
        variables[name] = Variable(name, width, bool(signed))
    return variables


def _width(lo, hi):
    """(bits, signed) of the narrowest two's complement or unsigned type holding lo..hi."""
    if lo >= 0:
        return max(1, hi.bit_length()), False
    return max((-lo - 1).bit_length(), hi.bit_length()) + 1, True


class _Node(typing.NamedTuple):
    wire: str           # the Verilog name holding the value
    lo: int
    hi: int

    @property
    def width(self):
        return _width(self.lo, self.hi)[0]

    @property
    def signed(self):
        return self.lo < 0


class Expression(typing.NamedTuple):
    """A parsed expression design: ``inputs`` and ``outputs`` (lists of :class:`Variable`),
    ``lines`` (the Verilog body) and ``text`` (the source)."""
    inputs: list
    outputs: list
    lines: list
    text: str


class _Builder:
    def __init__(self, text, variables):
        self.text = text
        self.variables = variables
        self.symbols = {}
        self.lines = []
        self.used = set()

    def fail(self, node, message):
        where = ast.get_source_segment(self.text, node) if node is not None else None
        raise CompileError(f"--expr: {message}" + (f" (at {where!r})" if where else ""))

    def emit(self, node, lo, hi, expression):
        width, signed = _width(lo, hi)
        if width > MAX_WIDTH:
            self.fail(node, f"a value {width} bits wide; at most {MAX_WIDTH}")
        wire = f"t{len(self.lines)}_"
        kind = "signed " if signed else ""
        self.lines.append(f"  wire {kind}[{width - 1}:0] {wire} = {expression};")
        return _Node(wire, lo, hi)

    @staticmethod
    def signed(node):
        """``node`` as a signed Verilog operand."""
        return node.wire if node.signed else f"$signed({{1'b0, {node.wire}}})"

    def operands(self, nodes, result_signed):
        if result_signed or any(n.signed for n in nodes):
            return [self.signed(n) for n in nodes]
        return [n.wire for n in nodes]

    def visit(self, node):
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            self.fail(node, f"{type(node).__name__} is not supported; use + - * & | ^ ~ << >> "
                      "comparisons, not, x if c else y, abs, min, max")
        return method(node)

    def visit_Name(self, node):
        if node.id in self.symbols:
            return self.symbols[node.id]
        if node.id not in self.variables:
            self.fail(node, f"{node.id} is not declared: give its width in --vars (e.g. "
                      f"--vars {node.id}:8, or {node.id}:s8 for signed)")
        self.used.add(node.id)
        variable = self.variables[node.id]
        return _Node(variable.name, variable.lo, variable.hi)

    def visit_Constant(self, node):
        if isinstance(node.value, bool) or not isinstance(node.value, int) or node.value < 0:
            self.fail(node, "constants are non-negative integers")
        width = max(1, node.value.bit_length())
        if width > MAX_WIDTH:
            self.fail(node, f"a constant wider than {MAX_WIDTH} bits")
        return _Node(f"{width}'d{node.value}", node.value, node.value)

    def visit_UnaryOp(self, node):
        a = self.visit(node.operand)
        if isinstance(node.op, ast.UAdd):
            return a
        if isinstance(node.op, ast.USub):
            lo, hi = -a.hi, -a.lo
            (x,) = self.operands([a], lo < 0)
            return self.emit(node, lo, hi, f"-{x}")
        if isinstance(node.op, ast.Invert):
            lo, hi = -a.hi - 1, -a.lo - 1
            (x,) = self.operands([a], True)
            return self.emit(node, lo, hi, f"~{x}")
        if isinstance(node.op, ast.Not):
            return self.emit(node, 0, 1, f"{a.wire} == 0")
        self.fail(node, "unsupported unary operator")

    def visit_BinOp(self, node):
        a, b = self.visit(node.left), self.visit(node.right)
        op = node.op
        if isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
            if isinstance(op, ast.Add):
                lo, hi, symbol = a.lo + b.lo, a.hi + b.hi, "+"
            elif isinstance(op, ast.Sub):
                lo, hi, symbol = a.lo - b.hi, a.hi - b.lo, "-"
            else:
                products = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
                lo, hi, symbol = min(products), max(products), "*"
            x, y = self.operands([a, b], lo < 0)
            return self.emit(node, lo, hi, f"{x} {symbol} {y}")
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            symbol = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}[type(op)]
            if a.lo >= 0 and b.lo >= 0:
                top = (1 << max(a.hi.bit_length(), b.hi.bit_length())) - 1
                lo, hi = 0, (min(a.hi, b.hi) if symbol == "&" else top)
            elif symbol == "&" and (a.lo >= 0 or b.lo >= 0):
                lo, hi = 0, a.hi if a.lo >= 0 else b.hi
            else:
                width = max(_width(a.lo, a.hi)[0] + (not a.signed),
                            _width(b.lo, b.hi)[0] + (not b.signed))
                lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
            x, y = self.operands([a, b], lo < 0)
            return self.emit(node, lo, hi, f"{x} {symbol} {y}")
        if isinstance(op, (ast.LShift, ast.RShift)):
            if b.lo < 0:
                self.fail(node, "a shift amount must not be negative (use an unsigned "
                          "variable or a constant)")
            if b.hi > MAX_WIDTH:
                self.fail(node, f"a shift amount of up to {b.hi}; at most {MAX_WIDTH}")
            if isinstance(op, ast.LShift):
                candidates = [a.lo << b.lo, a.lo << b.hi, a.hi << b.lo, a.hi << b.hi]
                symbol = "<<"
            else:
                candidates = [a.lo >> b.lo, a.lo >> b.hi, a.hi >> b.lo, a.hi >> b.hi]
                symbol = ">>>" if a.signed else ">>"
            lo, hi = min(candidates), max(candidates)
            (x,) = self.operands([a], lo < 0)
            return self.emit(node, lo, hi, f"{x} {symbol} {b.wire}")
        symbol = _UNSUPPORTED.get(type(op), type(op).__name__)
        self.fail(node, f"the operator {symbol} is not supported (the operators are + - * & | "
                        "^ ~ << >>; no division, modulo or power)")

    def visit_Compare(self, node):
        if len(node.ops) != 1:
            self.fail(node, "one comparison at a time: write (a < b) & (b < c)")
        a, b = self.visit(node.left), self.visit(node.comparators[0])
        symbol = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                  ast.NotEq: "!="}.get(type(node.ops[0]))
        if symbol is None:
            self.fail(node, "comparisons are < <= > >= == !=")
        x, y = self.operands([a, b], False)
        return self.emit(node, 0, 1, f"{x} {symbol} {y}")

    def visit_IfExp(self, node):
        c, a, b = self.visit(node.test), self.visit(node.body), self.visit(node.orelse)
        lo, hi = min(a.lo, b.lo), max(a.hi, b.hi)
        x, y = self.operands([a, b], lo < 0)
        return self.emit(node, lo, hi, f"({c.wire} != 0) ? {x} : {y}")

    def visit_BoolOp(self, node):
        self.fail(node, "and/or are not supported: use & and | on comparisons")

    def visit_Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if node.keywords or name not in ("abs", "min", "max") or \
                len(node.args) != (1 if name == "abs" else 2):
            self.fail(node, "the functions are abs(x), min(x, y) and max(x, y)")
        args = [self.visit(a) for a in node.args]
        if name == "abs":
            (a,) = args
            if a.lo >= 0:
                return a
            lo = 0 if a.hi >= 0 else -a.hi
            hi = max(-a.lo, abs(a.hi))
            (x,) = self.operands([a], False)
            return self.emit(node, lo, hi, f"({x} < 0) ? -{x} : {x}")
        a, b = args
        if name == "min":
            lo, hi = min(a.lo, b.lo), min(a.hi, b.hi)
        else:
            lo, hi = max(a.lo, b.lo), max(a.hi, b.hi)
        x, y = self.operands([a, b], lo < 0 or a.signed or b.signed)
        pick = "<" if name == "min" else ">"
        return self.emit(node, lo, hi, f"({x} {pick} {y}) ? {x} : {y}")


def parse_expression(text, variables):
    """Parse ``--expr`` ``text`` with ``--vars`` ``variables`` (see the module docstring).

    :returns: an :class:`Expression`.
    :raises CompileError: a syntax error, an undeclared or unused name, an unsupported
        operator, an output named twice or like an input, a value wider than
        :data:`MAX_WIDTH` bits.
    """
    if not isinstance(text, str) or not text.strip():
        raise CompileError('--expr needs a statement such as "p = a * b"')
    variables = parse_vars(variables)
    try:
        tree = ast.parse(text.strip())
    except SyntaxError as error:
        raise CompileError(f"--expr: syntax error at column {error.offset or '?'}: "
                           f"{error.msg} (write OUTPUT = EXPRESSION; ...)") from None
    builder = _Builder(text.strip(), variables)
    outputs = []
    for statement in tree.body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 or \
                not isinstance(statement.targets[0], ast.Name):
            builder.fail(statement, "each statement is OUTPUT = EXPRESSION")
        name = _check_name(statement.targets[0].id, "--expr output")
        if name in builder.symbols:
            builder.fail(statement, f"output {name} is assigned twice")
        node = builder.visit(statement.value)
        if name in builder.used:
            builder.fail(statement, f"{name} is an input; outputs need other names")
        builder.symbols[name] = node
        declared = variables.get(name)
        if declared is not None:
            outputs.append((declared, node))
        else:
            width, signed = _width(node.lo, node.hi)
            outputs.append((Variable(name, width, signed), node))
    if not outputs:
        raise CompileError('--expr needs a statement such as "p = a * b"')
    output_names = {v.name for v, _ in outputs}
    inputs = [v for name, v in variables.items() if name not in output_names]
    unused = [v.name for v in inputs if v.name not in builder.used]
    if unused:
        raise CompileError(f"--vars declares {', '.join(unused)}, which the expression does not "
                           "use")
    lines = list(builder.lines)
    for variable, node in outputs:
        lines.append(f"  assign {variable.name} = {node.wire};")
    return Expression(inputs, [v for v, _ in outputs], lines, text.strip())


def expression_design(text, variables, *, top="expr"):
    """The Verilog module for ``--expr text --vars variables``.

    :returns: ``(expression, verilog_text)``: the :class:`Expression` and the module ``top``.
    :raises CompileError: as :func:`parse_expression`.
    """
    _check_name(top, "top")
    expression = parse_expression(text, variables)
    ports = []
    for direction, group in (("input", expression.inputs), ("output", expression.outputs)):
        for v in group:
            if v.name == top:
                raise CompileError(f"--expr: {v.name} is the design's name too; choose another")
            ports.append(f"{direction} {'signed ' if v.signed else ''}[{v.width - 1}:0] "
                         f"{v.name}")
    comment = expression.text.replace("*/", "* /")
    verilog = (f"/* bitgrid compile --expr: {comment} */\n"
               f"module {top}(\n    " + ",\n    ".join(ports) + ");\n"
               + "\n".join(expression.lines) + "\nendmodule\n")
    return expression, verilog
