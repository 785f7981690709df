"""Independent Python models of the compiler's test designs (:mod:`bitgrid.compiler.designs`),
row generators, and a bit-parallel evaluator of combinational netlists.

A model takes the list of input rows (dicts port -> int, signed ports as negative ints) and
returns the list of output rows, with issue 12's cycle semantics: outputs are sampled just
before the clock edge that ends cycle k (a register shows the state after k edges).
Written from each design's description in the designs module's table, not from its Verilog.
"""

import functools
import random

import numpy as np

from bitgrid.compiler.designs import TEST_DESIGNS
from bitgrid.netlist import CONST0, CONST1

__all__ = ["MODELS", "TEST_DESIGNS", "model_rows", "rows_for", "bit_parallel",
           "crc8_byte", "input_bits", "random_expression", "wrap", "eval_expression",
           "RandomMachine", "machines_design", "machines_rows", "split_rows",
           "run_streams", "run_rows"]


def _combinational(function):
    def model(rows, **params):
        return [function(row, **params) for row in rows]
    return model


def _wrap(value, bits, signed=False):
    value &= (1 << bits) - 1
    if signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def crc8_byte(byte):
    """CRC-8 (polynomial x^8 + x^2 + x + 1, initial 0, MSB first) of one byte."""
    crc = byte
    for _ in range(8):
        crc = ((crc << 1) ^ 0x107) if crc & 0x80 else crc << 1
    return crc & 0xff


def _alu(row):
    a, b, op = row["a"], row["b"], row["op"]
    y = [a + b, a - b, a & b, a | b, a ^ b, a << 1, a >> 1, int(a < b)][op] & 0xff
    return {"y": y, "zero": int(y == 0)}


def _counter(rows, n=8):
    count, out = 0, []
    for row in rows:
        out.append({"count": count})
        count = 0 if row["rst"] else (count + row["en"]) % (1 << n)
    return out


def _accumulator(rows, n=8):
    total, out = 0, []
    for row in rows:
        out.append({"sum": total})
        total = 0 if row["rst"] else (total + row["x"]) % (1 << (2 * n))
    return out


def _detector(rows):
    history, out = [], []
    for row in rows:
        out.append({"found": int(history[-4:] == [1, 0, 1, 1])})
        history = [] if row["rst"] else history + [row["bit_in"]]
    return out


#: design name -> model(rows, **params) -> output rows
MODELS = {
    "multiplier": _combinational(lambda r, n=8, signed=False: {"p": r["a"] * r["b"]}),
    "adder": _combinational(lambda r, n=8: {"s": r["a"] + r["b"] + r["cin"]}),
    "comparator": _combinational(lambda r, n=8, signed=False: {
        "lt": int(r["a"] < r["b"]), "eq": int(r["a"] == r["b"]), "gt": int(r["a"] > r["b"])}),
    "popcount": _combinational(lambda r, n=8: {"count": bin(r["x"]).count("1")}),
    "parity": _combinational(lambda r, n=8: {"p": bin(r["x"]).count("1") & 1}),
    "crc8": _combinational(lambda r: {"crc": crc8_byte(r["data"])}),
    "barrel": _combinational(lambda r, n=8: {
        "y": ((r["x"] << r["sh"]) | (r["x"] >> (n - r["sh"]))) & ((1 << n) - 1)}),
    "alu": _combinational(_alu),
    "counter": _counter,
    "accumulator": _accumulator,
    "detector": _detector,
}

def input_bits(netlist):
    """Total number of input bits of ``netlist``."""
    return sum(len(p.bits) for p in netlist.inputs.values())


def _port_range(port):
    bits = len(port.bits)
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if port.signed else (0, (1 << bits) - 1)


def rows_for(netlist, *, count=10_000, seed=1, exhaustive_limit=16, weights=None):
    """Input rows for ``netlist``: every combination of its inputs if they have at most
    ``exhaustive_limit`` bits (and it has no flip-flops), else ``count`` random rows (seeded).
    ``weights`` maps a port to the probability that a 1-bit port is 1 (e.g. a rare reset)."""
    ports = list(netlist.inputs.items())
    total = input_bits(netlist)
    if total <= exhaustive_limit and not netlist.dffs:
        rows = []
        for value in range(1 << total):
            row, shift = {}, 0
            for name, port in ports:
                bits = len(port.bits)
                raw = (value >> shift) & ((1 << bits) - 1)
                row[name] = _wrap(raw, bits, port.signed)
                shift += bits
            rows.append(row)
        return rows
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        row = {}
        for name, port in ports:
            if weights and name in weights:
                row[name] = int(rng.random() < weights[name])
            else:
                row[name] = rng.randint(*_port_range(port))
        rows.append(row)
    return rows


def model_rows(name, params, rows):
    """The model's output rows for design ``name`` built with ``params``."""
    return MODELS[name](rows, **params)


def bit_parallel(netlist, rows):
    """Outputs of the combinational ``netlist`` for ``rows`` (dicts port -> int), evaluated
    with every net as one Python int of ``len(rows)`` bits (bit r = the net in row r): an
    evaluator of the netlist semantics of :mod:`bitgrid.netlist` independent of
    :meth:`~bitgrid.netlist.Netlist.simulate`, fast enough for 2**16 rows."""
    if netlist.dffs:
        raise ValueError("bit_parallel evaluates combinational netlists only")
    n = len(rows)
    mask = (1 << n) - 1
    values = {CONST0: 0, CONST1: mask}
    for name, port in netlist.inputs.items():
        column = np.array([row.get(name, 0) for row in rows], dtype=np.int64)
        for i, net in enumerate(port.bits):
            bits = ((column >> i) & 1).astype(np.uint8)
            values[net] = int.from_bytes(np.packbits(bits, bitorder="little").tobytes(),
                                         "little")
    for net in netlist.order:
        lut = netlist.luts[net]
        ins = [values[i] for i in lut.inputs]
        out = 0
        for address in range(1 << len(ins)):
            if not (lut.table >> address) & 1:
                continue
            term = mask
            for j, v in enumerate(ins):
                term &= v if (address >> j) & 1 else ~v & mask
            out |= term
        values[net] = out
    columns = {}
    for name, port in netlist.outputs.items():
        total = np.zeros(n, dtype=object)
        for i, net in enumerate(port.bits):
            raw = values[net].to_bytes((n + 7) // 8, "little")
            bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[:n]
            total = total + (bits.astype(object) << i)
        width = len(port.bits)
        if port.signed:
            total = np.array([v - (1 << width) if v >> (width - 1) else v for v in total],
                             dtype=object)
        columns[name] = total
    return [{name: int(columns[name][r]) for name in columns} for r in range(n)]


# --- Random expressions (the --expr shorthand's Python semantics) ----------------------------

_BINARY = ("+", "-", "*", "&", "|", "^", "<", "<=", ">", ">=", "==", "!=")


def random_expression(rng, names, depth=3, shift_names=()):
    """A random expression in ``--expr`` syntax over the variables ``names`` (Python syntax
    and semantics: evaluate it with :func:`eval` on ints for the expected value).
    ``shift_names`` are unsigned variables that may be shift amounts."""
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.2:
            return str(rng.randint(0, 9))
        return rng.choice(names)
    kind = rng.random()
    sub = lambda: random_expression(rng, names, depth - 1, shift_names)  # noqa: E731
    if kind < 0.55:
        return f"({sub()} {rng.choice(_BINARY)} {sub()})"
    if kind < 0.65:
        return f"({rng.choice(('-', '~', 'not '))}{sub()})"
    if kind < 0.75:
        amount = rng.choice(shift_names) if shift_names and rng.random() < 0.5 \
            else str(rng.randint(0, 3))
        return f"({sub()} {rng.choice(('<<', '>>'))} {amount})"
    if kind < 0.85:
        return f"({sub()} if {sub()} else {sub()})"
    if kind < 0.92:
        return f"abs({sub()})"
    return f"{rng.choice(('min', 'max'))}({sub()}, {sub()})"


def wrap(value, bits, signed=False):
    """``value`` kept mod ``2**bits`` (read as two's complement if ``signed``)."""
    return _wrap(value, bits, signed)


def eval_expression(text, row):
    """The outputs of ``--expr`` ``text`` for inputs ``row`` (Python's own evaluation)."""
    scope = dict(row)
    out = {}
    for name, code in _compiled(text):
        scope[name] = out[name] = int(eval(code, _BUILTINS, scope))
    return out


_BUILTINS = {"__builtins__": {"abs": abs, "min": min, "max": max}}


@functools.lru_cache(maxsize=64)
def _compiled(text):
    statements = []
    for statement in text.split(";"):
        name, _, expression = statement.partition("=")
        statements.append((name.strip(), compile(expression.strip(), "<expr>", "eval")))
    return tuple(statements)


# --- Random state machines --------------------------------------------------------------------

class RandomMachine:
    """A random synchronous state machine: ``states`` states (initial state ``init``), a
    2-bit input ``x``, a synchronous reset ``rst`` (to ``init``), a 2-bit Moore output and a
    1-bit Mealy output, from random tables. :meth:`verilog` writes it as module ``name``
    (ports clk, rst, x, moore, mealy); :meth:`run` is its model."""

    def __init__(self, rng, name, states=None):
        self.name = name
        self.states = states or rng.randint(2, 7)
        self.init = rng.randrange(self.states)
        self.next = [[rng.randrange(self.states) for _ in range(4)] for _ in range(self.states)]
        self.moore = [rng.randrange(4) for _ in range(self.states)]
        self.mealy = [[rng.randrange(2) for _ in range(4)] for _ in range(self.states)]

    def verilog(self):
        bits = max(1, (self.states - 1).bit_length())
        lines = [f"module {self.name}(input clk, input rst, input [1:0] x, "
                 "output reg [1:0] moore, output reg mealy);",
                 f"  reg [{bits - 1}:0] state;", f"  initial state = {self.init};",
                 "  always @(posedge clk)", f"    if (rst) state <= {self.init};",
                 "    else case ({state, x})"]
        for s in range(self.states):
            for x in range(4):
                lines.append(f"      {{{bits}'d{s}, 2'd{x}}}: state <= {self.next[s][x]};")
        lines += [f"      default: state <= {self.init};", "    endcase",
                  "  always @* begin", "    moore = 0; mealy = 0;", "    case (state)"]
        for s in range(self.states):
            cases = " ".join(f"if (x == {x}) mealy = {self.mealy[s][x]};" for x in range(4))
            lines.append(f"      {s}: begin moore = {self.moore[s]}; {cases} end")
        lines += ["    endcase", "  end", "endmodule"]
        return "\n".join(lines) + "\n"

    def run(self, rows):
        """Outputs per row (sampled before the clock edge ending the row's cycle)."""
        state, out = self.init, []
        for row in rows:
            out.append({"moore": self.moore[state], "mealy": self.mealy[state][row["x"]]})
            state = self.init if row["rst"] else self.next[state][row["x"]]
        return out


def machines_design(rng, count, top="machines"):
    """``count`` :class:`RandomMachine` s sharing the inputs of one top module ``top`` (outputs
    ``moore<i>``, ``mealy<i>``): ``(machines, verilog)``."""
    machines = [RandomMachine(rng, f"m{i}") for i in range(count)]
    ports = ", ".join(f"output [1:0] moore{i}, output mealy{i}" for i in range(count))
    body = "\n".join(f"  m{i} u{i}(.clk(clk), .rst(rst), .x(x), .moore(moore{i}), "
                     f".mealy(mealy{i}));" for i in range(count))
    text = "".join(m.verilog() for m in machines)
    text += f"module {top}(input clk, input rst, input [1:0] x, {ports});\n{body}\nendmodule\n"
    return machines, text


def machines_rows(machines, rows):
    """The outputs of :func:`machines_design`'s top for ``rows``."""
    runs = [m.run(rows) for m in machines]
    return [{f"{kind}{i}": run[k][kind] for i, run in enumerate(runs)
             for kind in ("moore", "mealy")} for k in range(len(rows))]


# --- Running compiled programs by port names --------------------------------------------------

def split_rows(rows, streams=64):
    """``rows`` cut into at most ``streams`` consecutive chunks of nearly equal length (none
    empty): the independent runs of :func:`run_streams`."""
    size = -(-len(rows) // streams) if rows else 1
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def run_streams(config, portmap, chunks):
    """The output rows of program ``config`` with ``portmap`` for each list of input rows in
    ``chunks``, every chunk a separate run from reset (the flip-flops at their initial values),
    side by side in the bit-parallel emulator's lane-parallel mode, through bitgrid.evaluate's
    stimulus (:func:`~bitgrid.evaluate.edge_inputs`) and sampling
    (:func:`~bitgrid.evaluate.sample`): a list of output-row lists, one per chunk. A chunk
    shorter than the others holds its last subcycle's inputs while they finish (after its
    own rows were sampled, so it does not change them)."""
    from bitgrid.evaluate import edge_inputs, sample
    from bitgrid.fastemu import FastEmulator
    steps = [edge_inputs(portmap, chunk) for chunk in chunks]
    emulator = FastEmulator(config, streams=len(chunks))
    outputs = [[] for _ in chunks]
    for t in range(max(len(s) for s in steps)):
        for out, edges in zip(outputs, emulator.step([s[min(t, len(s) - 1)] for s in steps])):
            out.append(edges)
    return [sample(portmap, out[:len(step)], len(chunk))
            for chunk, step, out in zip(chunks, steps, outputs)]


def run_rows(config, portmap, rows, *, streams=64):
    """The output rows of the combinational program ``config`` with ``portmap`` for input
    ``rows`` (each row's outputs depend on that row only): :func:`run_streams` on
    :func:`split_rows`, concatenated; fewer than ``4 * streams`` rows run in order through
    :func:`bitgrid.evaluate.evaluate` on the bit-parallel emulator."""
    from bitgrid.evaluate import evaluate
    if len(rows) < 4 * streams:
        return evaluate(config, portmap, rows, target="fast")
    return [out for chunk in run_streams(config, portmap, split_rows(rows, streams))
            for out in chunk]


#: Test designs that are one arithmetic operation (tests/model/compiler): the library block is
#: a candidate, and what compiles but for mul2u and mul2s, where the one-cell function is smaller;
#: the slow set also runs their LUT mappings (the sweep) against the models.
BLOCK_DESIGNS = tuple(f"mul{n}{s}" for s in "us" for n in range(2, 9)) + (
    "add8", "add16", "cmp8u", "cmp8s", "counter8", "acc8", "popcount8", "popcount16",
    "parity16")
