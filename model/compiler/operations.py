"""Arithmetic operations recognised in Yosys' coarse netlist, for the arithmetic blocks.

FPGA flows do not build adders and multipliers out of general LUTs: they keep Yosys' coarse
cells (``$add``, ``$mul``, ``$lt``, ...) and map them onto carry chains and DSP blocks. The
BitGrid compiler does the same with the library's hand-placed, fully pipelined blocks
(:mod:`bitgrid.library`): the front end also writes the design as Yosys has it before
techmapping (``proc; flatten; opt -fast; wreduce``), :func:`coarse_from_json` reads it, and
:func:`recognise` finds a design that *is* one arithmetic operation on its ports. The back end
(:mod:`.blocks`) then places that block as one more candidate beside the LUT mappings, and the
smaller program wins (:func:`bitgrid.compiler.backend.compile_netlist`).

Recognised (every input and output port of the design taking part, the clock aside):

=============  ==========================================  ==================================
operation      Yosys cells                                  block
=============  ==========================================  ==================================
multiply       one ``$mul`` of two input ports              ``multiplier(bits, signed)``
               or of an input port and a constant           ``multiplier(bits, constant)``
multiply-add   ``$mul`` of two input ports, then ``$add``   ``multiplier(bits, addend)``
               of the product and a third (unsigned)
add            ``$add`` of two input ports, optionally      ``adder(bits, carry_in)``
               then ``$add`` of a 1-bit carry-in port
compare        ``$lt $le $gt $ge $eq $ne`` of the same two  ``comparator(bits, signed)``, an
               input ports, each to a 1-bit output port     output inverted for le, ge, ne
accumulate     ``$add`` of the register and an input port   ``accumulator(bits, addend,
               (or of 1 with an enable) into ``$dff``,      reset)``
               ``$dffe``, ``$sdff`` (reset to 0), ``$sdffe``
multiply-      ``$mul``, ``$add`` of it and the register    ``mac(bits, acc_bits, reset)``
accumulate     into ``$dff``, ``$sdff`` (reset 0)
reduce         one ``$reduce_and``, ``$reduce_or``,          ``reduction(bits, op)``, the
               ``$reduce_bool``, ``$reduce_xor``,            output inverted for xnor and not
               ``$reduce_xnor`` or ``$logic_not`` of an
               input port
popcount       ``$add`` cells (a chain or a tree) that add   ``popcount(bits)``
               every bit of one input port once
=============  ==========================================  ==================================

An unsigned operand narrower than the block is zero-extended for free (a lane no port drives
is 0); a signed one must have the block's width. Anything else (glue logic, a second operation,
a register with a non-zero initial value) is not recognised: :func:`recognise` returns None and
the LUT mappings are the only candidates.

Registered operations (issue 40): plain registers (``$dff`` on the rising edge, initial value
0) between the input ports and the operation, or between it and the output ports, are taken
out before matching (:func:`without_registers`), the same number on every input and on every
output; the operation's ``lag`` is their sum. The block is then the same block with every input
applied ``lag`` rows later (its input skews grow by ``lag * P``): a register delays rows, which
a pipeline already does. That is exact when the design's outputs are the same in its first
``lag + 1`` cycles with all inputs 0 (the registers' 0 through the operation is the
operation of 0), which the back end checks before using the block.
"""

import dataclasses
import typing

__all__ = ["Coarse", "Operation", "coarse_from_json", "recognise", "without_registers"]

#: Cell types that only carry a name (no logic).
_IGNORED = frozenset({"$scopeinfo"})
#: Comparison cells: (block output, inverted).
#: Reduction cells: (block op, inverted).
_REDUCE = {"$reduce_and": ("and", False), "$reduce_or": ("or", False),
           "$reduce_bool": ("or", False), "$logic_not": ("or", True),
           "$reduce_xor": ("xor", False), "$reduce_xnor": ("xor", True)}
_COMPARE = {"$lt": ("lt", False), "$gt": ("gt", False), "$eq": ("eq", False),
            "$ge": ("lt", True), "$le": ("gt", True), "$ne": ("eq", True)}


class Coarse(typing.NamedTuple):
    """A module of Yosys' coarse netlist: ``inputs`` and ``outputs`` ({port: tuple of bits}),
    ``cells`` (tuple of ``(type, parameters, connections)``, parameters as ints, connections
    {pin: tuple of bits}), ``init`` ({bit: 0/1} from the wires' ``init`` attributes). A bit is
    an int (a net) or ``"0"``/``"1"``/``"x"`` (a constant)."""
    inputs: dict
    outputs: dict
    cells: tuple
    init: dict


@dataclasses.dataclass(frozen=True)
class Operation:
    """A design recognised as one arithmetic operation: build ``macro`` with ``params`` (a
    macro of :data:`bitgrid.library.MACROS`), connect design port ``ports[block_port]`` to
    each block port, and invert the block outputs in ``inverted``.

    :param kind: ``"multiply"``, ``"add"``, ``"compare"``, ``"accumulate"``, ``"reduce"``,
        ``"popcount"``, ``"multiply-add"``, ``"multiply-accumulate"``, ``"memory"`` or ``"rom"``
        (:mod:`.memories`).
    :param ports: {block port: design port}; a design port may be narrower than its block
        port (unsigned: zero-extended inputs, truncated outputs). A block output may also be
        several design outputs, ``((name, first block bit), ...)`` from bit 0 up (``{cout,
        s} = a + b``: ``(("s", 0), ("cout", 16))``).
    :param lag: rows every input is applied later (registers in front of or behind the
        operation); ``input_lags``: {block input port: rows} more for some inputs (a memory's
        transparent synchronous read port: its address registered).
    """
    kind: str
    macro: str
    params: dict
    ports: dict
    inverted: frozenset = frozenset()
    lag: int = 0
    input_lags: typing.Mapping = dataclasses.field(default_factory=dict)

    def describe(self):
        """``multiplier(bits=8, signed=True)`` for the report (``, 2 registers deep`` after it
        for a registered one); a memory's contents are not written out."""
        text = self.macro + "(" + ", ".join(f"{k}={v}" for k, v in self.params.items()
                                            if k != "init") + ")"
        return text + (f", {self.lag} register{'s' if self.lag > 1 else ''} deep"
                       if self.lag else "")

    @property
    def design_ports(self):
        """The design's ports taking part (a set of names)."""
        return {name for value in self.ports.values()
                for name in ([value] if isinstance(value, str) else [n for n, _ in value])}

    @property
    def history(self):
        """Rows an output reaches back: the registers in front of the block's inputs."""
        return self.lag + max(self.input_lags.values(), default=0)


def _parameter(value):
    if isinstance(value, str) and value and set(value) <= set("01"):
        return int(value, 2)
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def coarse_from_json(document, top):
    """The :class:`Coarse` module ``top`` of Yosys JSON ``document`` (a dict), or None if it
    is not there."""
    module = document.get("modules", {}).get(top)
    if module is None:
        return None
    inputs, outputs = {}, {}
    for name, port in module.get("ports", {}).items():
        bits = tuple(port["bits"])
        if port["direction"] == "input":
            inputs[name] = bits
        elif port["direction"] == "output":
            outputs[name] = bits
        else:
            return None
    cells = tuple((cell["type"], {k: _parameter(v) for k, v in cell.get("parameters",
                                                                          {}).items()},
                   {k: tuple(v) for k, v in cell.get("connections", {}).items()})
                  for cell in module.get("cells", {}).values()
                  if cell["type"] not in _IGNORED)
    init = {}
    for wire in module.get("netnames", {}).values():
        value = wire.get("attributes", {}).get("init")
        if isinstance(value, str) and set(value) <= set("01x"):
            for position, bit in enumerate(reversed(wire["bits"])):
                if position < len(value) and value[position] != "x":
                    init[bit] = int(value[position])
    return Coarse(inputs, outputs, cells, init)


def _operand(bits, coarse, signed):
    """``(port, width)`` if ``bits`` are a whole input port, zero-extended when unsigned
    (constant ``"0"`` bits after it), else None."""
    for name, port in coarse.inputs.items():
        n = len(port)
        if tuple(bits[:n]) == port and (len(bits) == n or not signed
                                         and all(b == "0" for b in bits[n:])):
            return name, n
    return None


def _output(bits, coarse):
    """The output port whose bits are exactly ``bits``, or None."""
    for name, port in coarse.outputs.items():
        if port == tuple(bits):
            return name
    return None


def _outputs(bits, coarse):
    """The output port that ``bits`` are (a name, as :func:`_output`), or the output ports
    that its low bits are, one after the other (``((name, offset), ...)``, as in ``{cout, s} =
    a + b``), or None."""
    whole = _output(bits, coarse)
    if whole is not None:
        return whole
    bits, slices, offset = tuple(bits), [], 0
    while offset < len(bits):
        found = next((n for n, port in coarse.outputs.items() if port and n not in dict(slices)
                      and bits[offset:offset + len(port)] == port), None)
        if found is None:
            break
        slices.append((found, offset))
        offset += len(coarse.outputs[found])
    if not slices:
        return None
    return slices[0][0] if len(slices) == 1 else tuple(slices)


def _output_of(bits, coarse):
    """The output port that is ``bits`` cut short (its bits a prefix of them) or ``bits``
    followed by constant 0 bits (a zero-extended result), or None."""
    bits = tuple(bits)
    for name, port in coarse.outputs.items():
        if port and (bits[:len(port)] == port or port[:len(bits)] == bits
                     and all(bit == "0" for bit in port[len(bits):])):
            return name
    return None


def _width(mapping, coarse):
    """Bits of the design outputs of ``mapping`` (a name or slices, :func:`_outputs`)."""
    if isinstance(mapping, str):
        return len(coarse.outputs[mapping])
    return mapping[-1][1] + len(coarse.outputs[mapping[-1][0]])


def _signed(parameters):
    return bool(parameters.get("A_SIGNED")) and bool(parameters.get("B_SIGNED", 1))


def recognise(coarse, inputs, outputs):
    """The :class:`Operation` that ``coarse`` is, or None.

    :param coarse: a :class:`Coarse` (or None).
    :param inputs, outputs: the design's data port names (the LUT netlist's: the clock
        removed); every one must take part, but inputs that nothing reads (an Amaranth
        design's unused ``rst``), which the block's program takes on lanes it ignores.
    """
    from .memories import recognise_memory        # (it builds on this module's helpers)
    if coarse is None or not coarse.cells:
        return None
    stripped = without_registers(coarse)
    for form, lag in ((coarse, 0), stripped or (None, 0)):
        if form is None or not form.cells:
            continue
        for match in (_multiply, _multiply_by_constant, _multiply_add, _add, _compare,
                      _accumulate, _multiply_accumulate, _reduce, _popcount, recognise_memory):
            operation = match(form)
            if operation is not None:
                used = operation.design_ports
                unread = {n for n, bits in form.inputs.items() if not _read(form, bits)}
                if used <= set(inputs) | set(outputs) \
                        and (set(inputs) | set(outputs)) - used <= unread:
                    return (dataclasses.replace(operation, lag=operation.lag + lag) if lag
                            else operation)
    return None


def _read(coarse, bits):
    """Whether a cell of ``coarse`` reads any of ``bits``."""
    wanted = set(bits)
    return any(wanted & set(b) for _, _, pins in coarse.cells
               for pin, b in pins.items() if pin not in ("Q", "Y", "RD_DATA"))


def without_registers(coarse):
    """``(coarse, lag)`` with the plain registers on its ports taken out (module docstring), or
    None when there are none, when some other register is left, or when their numbers differ
    between the inputs (those the remaining cells read) or between the outputs.

    A register (``$dff``, rising edge, every initial value 0) whose ``Q`` is exactly an output
    port (and read by no cell) makes the port its ``D``; one whose ``D`` is exactly an input
    port has its ``Q`` bits read as the port's. Repeated, so chains come out whole.
    """
    cells = list(coarse.cells)
    outputs = dict(coarse.outputs)
    deep_in = dict.fromkeys(coarse.inputs, 0)
    deep_out = dict.fromkeys(coarse.outputs, 0)

    def read_by_cells(bits, but=None):
        wanted = set(bits)
        return any(wanted & set(b) for cell in cells if cell is not but
                   for pin, b in cell[2].items() if pin not in ("Q", "Y"))

    def plain(cell):
        kind, parameters, pins = cell
        return (kind == "$dff" and parameters.get("CLK_POLARITY", 1) == 1
                and not any(coarse.init.get(bit, 0) for bit in pins["Q"]))

    while True:
        for cell in cells:
            if not plain(cell):
                continue
            q, d = tuple(cell[2]["Q"]), tuple(cell[2]["D"])
            output = next((n for n, bits in outputs.items() if bits == q), None)
            if output is not None and not read_by_cells(q, but=cell):
                cells.remove(cell)
                outputs[output] = d
                deep_out[output] += 1
                break
            source = next((n for n, bits in coarse.inputs.items() if bits == d), None)
            if source is not None and not any(set(q) & set(b) for b in outputs.values()):
                cells.remove(cell)
                rename = dict(zip(q, d))
                cells = [(kind, parameters, {pin: tuple(rename.get(b, b) for b in bits)
                                             for pin, bits in pins.items()})
                         for kind, parameters, pins in cells]
                deep_in[source] += 1
                break
        else:
            break
    if any(kind == "$dff" for kind, _, _ in cells):
        return None
    read = [n for n, bits in coarse.inputs.items() if read_by_cells(bits)]
    ins = {deep_in[n] for n in read} or {0}
    outs = {deep_out[n] for n in outputs} or {0}
    if len(ins) != 1 or len(outs) != 1:
        return None
    lag = min(ins) + min(outs)
    if lag == 0:
        return None
    return coarse._replace(cells=tuple(cells), outputs=outputs), lag


def _binary(cell, coarse):
    """``(signed, (a, width), (b, width))`` of a two-operand cell on input ports, or None."""
    _, parameters, pins = cell
    signed = _signed(parameters)
    if bool(parameters.get("A_SIGNED")) != bool(parameters.get("B_SIGNED")):
        return None
    a, b = _operand(pins["A"], coarse, signed), _operand(pins["B"], coarse, signed)
    if a is None or b is None or a[0] == b[0]:
        return None
    if signed and a[1] != b[1]:
        return None
    return signed, a, b


def _constant(bits):
    """The value of ``bits`` if every one is a constant ``"0"``/``"1"``, else None."""
    if not all(bit in ("0", "1") for bit in bits):
        return None
    return sum(int(bit) << i for i, bit in enumerate(bits))


def _multiply_by_constant(coarse):
    """``a * K`` (unsigned): the multiplier with ``b`` fixed (``constant``); the output port
    may go on past the product in constant 0 bits (Yosys narrows the product)."""
    if len(coarse.cells) != 1 or coarse.cells[0][0] != "$mul":
        return None
    _, parameters, pins = coarse.cells[0]
    if parameters.get("A_SIGNED") or parameters.get("B_SIGNED"):
        return None
    for own, other in (("A", "B"), ("B", "A")):
        value = _constant(pins[other])
        if value is not None:
            operand = _operand(pins[own], coarse, False)
            break
    else:
        return None
    if operand is None:
        return None
    y = tuple(pins["Y"])
    bits = max(operand[1], value.bit_length(), 2)
    product = _output_of(y, coarse)
    # a product Yosys cut below its full width must not reach the port's bits past it
    if product is None or len(y) < operand[1] + value.bit_length() \
            and len(coarse.outputs[product]) > len(y) \
            or len(coarse.outputs[product]) > 2 * bits:
        return None
    return Operation("multiply", "multiplier", {"bits": bits, "constant": value},
                     {"a": operand[0], "p": product})


def _multiply(coarse):
    if len(coarse.cells) != 1 or coarse.cells[0][0] != "$mul":
        return None
    operands = _binary(coarse.cells[0], coarse)
    product = _outputs(coarse.cells[0][2]["Y"], coarse)
    if operands is None or product is None:
        return None
    signed, (a, wa), (b, wb) = operands
    bits = max(wa, wb, 2)
    width = _width(product, coarse)
    if width > 2 * bits or signed and width != 2 * bits:
        return None
    return Operation("multiply", "multiplier", {"bits": bits, "signed": signed},
                     {"a": a, "b": b, "p": product})


def _product_read(bits, product):
    """How many bits of ``product`` (a ``$mul``'s output) the operand ``bits`` reads: its low
    bits are the product's, up to the shorter of the two, and the rest constant 0; None if
    it is not the product."""
    bits = tuple(bits)
    kept = min(len(product), len(bits))
    if bits[:kept] == product[:kept] and all(bit == "0" for bit in bits[kept:]):
        return kept
    return None


def _multiply_add(coarse):
    """``a * b + c`` (unsigned; ``c`` at most ``2 n`` bits, the result at most ``2 n``): the
    multiplier with its addend (:func:`bitgrid.library.multiplier.multiplier`)."""
    if len(coarse.cells) != 2 or {c[0] for c in coarse.cells} != {"$mul", "$add"}:
        return None
    mul = next(c for c in coarse.cells if c[0] == "$mul")
    add = next(c for c in coarse.cells if c[0] == "$add")
    operands = _binary(mul, coarse)
    if operands is None or operands[0] or _signed(add[1]):
        return None
    _, (a, wa), (b, wb) = operands
    bits = max(wa, wb, 2)
    product = tuple(mul[2]["Y"])
    for own, other in (("A", "B"), ("B", "A")):
        kept = _product_read(add[2][own], product)
        if kept is not None:
            addend = _operand(add[2][other], coarse, False)
            break
    else:
        return None
    result = _outputs(add[2]["Y"], coarse)
    if addend is None or result is None or addend[1] > 2 * bits or addend[0] in (a, b):
        return None
    width = _width(result, coarse)
    # a product cut below its full width (wa + wb bits) must not reach the result's bits
    if width > 2 * bits or kept < wa + wb and width > kept:
        return None
    return Operation("multiply-add", "multiplier",
                     {"bits": bits, "signed": False, "addend": addend[1]},
                     {"a": a, "b": b, "c": addend[0], "p": result})


def _add(coarse):
    cells = coarse.cells
    if not 1 <= len(cells) <= 2 or any(c[0] != "$add" for c in cells):
        return None
    carry = None
    if len(cells) == 2:
        first, second = cells
        if tuple(second[2]["A"]) != tuple(first[2]["Y"]):
            first, second = second, first
        if tuple(second[2]["A"]) != tuple(first[2]["Y"]) or _signed(second[1]):
            return None
        carry = _operand(second[2]["B"], coarse, False)
        if carry is None or carry[1] != 1:
            return None
        total = second[2]["Y"]
    else:
        first, total = cells[0], cells[0][2]["Y"]
    operands = _binary(first, coarse)
    result = _outputs(total, coarse)
    if operands is None or result is None or operands[0]:
        return None
    _, (a, wa), (b, wb) = operands
    bits = max(wa, wb)
    if _width(result, coarse) > bits + 1 or len(first[2]["Y"]) < len(total):
        return None
    ports = {"a": a, "b": b, "sum": result}
    if carry is not None:
        ports["cin"] = carry[0]
    return Operation("add", "adder", {"bits": bits, "carry_in": carry is not None}, ports)


def _compare(coarse):
    if not all(c[0] in _COMPARE for c in coarse.cells):
        return None
    found, ports, inverted, kinds = None, {}, set(), set()
    for cell in coarse.cells:
        operands = _binary(cell, coarse)
        result = _output(cell[2]["Y"], coarse)
        if operands is None or result is None or found not in (None, operands):
            return None
        found = operands
        output, invert = _COMPARE[cell[0]]
        if output in ports:
            return None
        ports[output] = result
        if invert:
            inverted.add(output)
    signed, (a, wa), (b, wb) = found
    ports.update(a=a, b=b)
    return Operation("compare", "comparator", {"bits": max(wa, wb), "signed": signed}, ports,
                     frozenset(inverted))


def _accumulate(coarse):
    adds = [c for c in coarse.cells if c[0] == "$add"]
    registers = [c for c in coarse.cells if c[0] in ("$dff", "$dffe", "$sdff", "$sdffe")]
    if len(adds) != 1 or len(registers) != 1 or len(coarse.cells) != 2:
        return None
    (_, add_parameters, add), (kind, parameters, register) = adds[0], registers[0]
    q = tuple(register["Q"])
    state = _output(q, coarse)
    if (state is None or tuple(register["D"]) != tuple(add["Y"]) or tuple(add["A"]) != q
            or _signed(add_parameters) or parameters.get("CLK_POLARITY", 1) != 1
            or any(coarse.init.get(bit, 0) for bit in q)):
        return None
    ports = {"q": state}
    if kind in ("$dffe", "$sdffe"):
        # q <= rst ? 0 : en ? q + 1 : q, that is q + en: a 1-bit addend
        if tuple(add["B"]) != ("1",) or parameters.get("EN_POLARITY", 1) != 1:
            return None
        addend = _operand(register["EN"], coarse, False)
    else:
        addend = _operand(add["B"], coarse, False)
    if addend is None or addend[1] > len(q):
        return None
    ports["x"] = addend[0]
    reset = kind in ("$sdff", "$sdffe")
    if reset:
        rst = _operand(register["SRST"], coarse, False)
        if (rst is None or rst[1] != 1 or parameters.get("SRST_POLARITY", 1) != 1
                or parameters.get("SRST_VALUE", 0) != 0):
            return None
        ports["rst"] = rst[0]
    return Operation("accumulate", "accumulator",
                     {"bits": len(q), "addend": addend[1], "reset": reset}, ports)


def _multiply_accumulate(coarse):
    """``acc <= acc + a * b`` (unsigned) into ``$dff`` or ``$sdff`` (reset value and initial
    value 0), ``acc`` an output port: the ``mac`` block."""
    kinds = [c[0] for c in coarse.cells]
    registers = [c for c in coarse.cells if c[0] in ("$dff", "$sdff")]
    if len(kinds) != 3 or kinds.count("$add") != 1 or kinds.count("$mul") != 1 \
            or len(registers) != 1:
        return None
    add, mul = (next(c for c in coarse.cells if c[0] == k) for k in ("$add", "$mul"))
    register = registers[0]
    operands = _binary(mul, coarse)
    if operands is None or operands[0] or _signed(add[1]):
        return None
    _, (a, wa), (b, wb) = operands
    q, parameters = tuple(register[2]["Q"]), register[1]
    state = _output(q, coarse)
    if (state is None or tuple(register[2]["D"]) != tuple(add[2]["Y"])
            or parameters.get("CLK_POLARITY", 1) != 1
            or any(coarse.init.get(bit, 0) for bit in q)):
        return None
    product = tuple(mul[2]["Y"])
    for own, other in (("A", "B"), ("B", "A")):
        kept = _product_read(add[2][other], product) if tuple(add[2][own]) == q else None
        if kept is not None:
            break
    else:
        return None
    if kept < wa + wb and kept < len(q):
        return None                      # a product cut below the register's width
    ports = {"a": a, "b": b, "acc": state}
    reset = register[0] == "$sdff"
    if reset:
        rst = _operand(register[2]["SRST"], coarse, False)
        if (rst is None or rst[1] != 1 or parameters.get("SRST_POLARITY", 1) != 1
                or parameters.get("SRST_VALUE", 0) != 0):
            return None
        ports["rst"] = rst[0]
    # the block's acc is the register after the row's edge: the Verilog register a row later
    return Operation("multiply-accumulate", "mac",
                     {"bits": max(wa, wb, 2), "acc_bits": len(q), "reset": reset}, ports,
                     lag=1)


def _reduce(coarse):
    if len(coarse.cells) != 1 or coarse.cells[0][0] not in _REDUCE:
        return None
    kind, parameters, pins = coarse.cells[0]
    operand = _operand(pins["A"], coarse, False)
    result = _output(pins["Y"], coarse)
    if operand is None or result is None or len(coarse.outputs[result]) != 1 \
            or len(pins["A"]) != operand[1]:
        return None
    op, inverted = _REDUCE[kind]
    return Operation("reduce", "reduction", {"bits": operand[1], "op": op},
                     {"x": operand[0], "y": result}, frozenset({"y"} if inverted else ()))


def _popcount(coarse):
    """``$add`` cells summing every bit of one input port once, each sum kept wide enough
    (its width at least that of the count so far, or of the output: sums modulo the output's
    width are exact)."""
    cells = coarse.cells
    if not cells or any(c[0] != "$add" or _signed(c[1]) for c in cells):
        return None
    by_output = {}
    for cell in cells:
        by_output[cell[2]["Y"][0]] = cell
    bit_of = {}
    for name, port in coarse.inputs.items():
        for i, bit in enumerate(port):
            bit_of[bit] = (name, i)
    roots = [c for c in cells if _output(c[2]["Y"], coarse) is not None]
    if len(roots) != 1:
        return None
    root = roots[0]
    result = _output(root[2]["Y"], coarse)
    width = len(coarse.outputs[result])
    leaves, used = [], set()

    def walk(bits):
        """The count of leaves under ``bits`` (an operand), or None if it is no such sum."""
        bits = tuple(bits)
        while len(bits) > 1 and bits[-1] == "0":
            bits = bits[:-1]
        if len(bits) == 1 and bits[0] in bit_of:
            leaves.append(bit_of[bits[0]])
            return 1
        cell = by_output.get(bits[0])
        if cell is None or id(cell) in used or tuple(cell[2]["Y"][:len(bits)]) != bits:
            return None
        used.add(id(cell))
        a, b = walk(cell[2]["A"]), walk(cell[2]["B"])
        if a is None or b is None:
            return None
        count = a + b
        if min(len(bits), len(cell[2]["Y"])) < min(count.bit_length(), width):
            return None                  # truncated below the output's width: not a count
        return count

    used.add(id(root))
    a, b = walk(root[2]["A"]), walk(root[2]["B"])
    if a is None or b is None or len(used) != len(cells):
        return None
    count = a + b
    if min(len(root[2]["Y"]), width) < min(count.bit_length(), width):
        return None
    ports = {name for name, _ in leaves}
    if len(ports) != 1:
        return None
    port = ports.pop()
    n = len(coarse.inputs[port])
    if sorted(i for _, i in leaves) != list(range(n)) or width > n.bit_length():
        return None
    return Operation("popcount", "popcount", {"bits": n}, {"x": port, "count": result})
