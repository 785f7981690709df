"""The compiler's test and benchmark designs, as Verilog text (issue 12).

:data:`DESIGNS` maps a name to a function ``(**params) -> Design``; :func:`design` builds one
and :func:`write` writes its Verilog to a folder. Each design is a plain synthesizable
Verilog-2005 module whose top is ``Design.top``; the sequential ones are clocked by ``clk``
(rising edge) and reset synchronously. The tests (``tests/model/compiler``) check every design
against an independent Python model; ``bitgrid bench compile`` measures them.

=============  ===============================================  =========================
name           ports                                            parameters
=============  ===============================================  =========================
multiplier     a, b (n bits), p = a * b (2n bits)               n, signed
adder          a, b (n bits), cin; s = a + b + cin (n+1 bits)   n
comparator     a, b (n bits); lt, eq, gt                        n, signed
popcount       x (n bits); count (ones in x)                    n
parity         x (n bits); p (xor of the bits of x)             n
crc8           data (8 bits); crc: CRC-8, polynomial 0x07,      (none)
               initial 0, MSB first (CRC-8/SMBUS of one byte)
barrel         x (n bits), sh (log2 n bits); y: x rotated       n (a power of 2)
               left by sh
alu            a, b (8 bits), op (3 bits); y (8 bits), zero     (none)
               op 0 a+b, 1 a-b, 2 a&b, 3 a|b, 4 a^b, 5 a<<1,
               6 a>>1, 7 (a<b) unsigned
counter        clk, rst, en; count (n bits): +1 when en          n
accumulator    clk, rst, x (n bits); sum (2n bits) += x          n
detector       clk, rst, bit; found: the last four bits were     (none)
               1011 (overlapping, Moore)
register       clk, d (n bits); q <= d                          n
delay          clk, d (n bits); q: d of ``depth`` cycles ago     depth, n
regmul         clk, a, b (n bits); p <= a * b                    n
pipemac        clk, a, b, c (n bits); m <= a * b, c1 <= c,       n
               y <= m + c1 (2n + 1 bits, two stages)
regadd         clk, a, b (n bits); s <= a + b (n + 1 bits)        n
regfile        clk, we, wa, ra (log2 words bits), wd (width      words, width,
               bits); m[wa] <= wd when we; rd = m[ra]; with     read_ports
               more read ports ra1, rd1, ra2, rd2 ...
fifo           clk, rst, push, pop, din (width bits); dout,      depth, width,
               full, empty; first word first, a push when full  registered
               and a pop when empty ignored; ``registered``:
               dout the word the last pop took (a register)
rom            addr (log2 entries bits); data (width bits) from  entries, width
               a fixed pseudo-random table (a ``case``)
dds            clk, step (log2 entries + 2 bits); out (width     entries, width
               bits): a table (a ``case``) at the top bits of a
               phase accumulator, phase <= phase + step
muladd         a, b (n bits), c (2n bits); y = a * b + c (2n)   n
mac            clk, rst, a, b (n bits); q (acc bits) <=         n, acc
               rst ? 0 : q + a * b
addc           a, b (n bits); {cout, s} = a + b                 n
=============  ===============================================  =========================

:data:`STATE_DESIGNS` are the designs of issue 40 (state: registers, delay lines, registered
operations, a register file, a FIFO and a ROM), for ``bitgrid bench compile``.
"""

import pathlib
import typing

__all__ = ["Design", "DESIGNS", "TEST_DESIGNS", "STATE_DESIGNS", "ARITHMETIC_DESIGNS",
           "SEQUENTIAL_DESIGNS", "design", "write"]


class Design(typing.NamedTuple):
    """A test design: ``name`` (also the file stem), ``top`` (the module), ``verilog`` (the
    source text), ``params`` (what it was built with) and ``sequential`` (has a clock)."""
    name: str
    top: str
    verilog: str
    params: dict
    sequential: bool = False


def multiplier(n=8, signed=False):
    s = "signed " if signed else ""
    top = f"mul{n}{'s' if signed else 'u'}"
    return top, (f"module {top}(input {s}[{n - 1}:0] a, input {s}[{n - 1}:0] b,\n"
                 f"    output {s}[{2 * n - 1}:0] p);\n  assign p = a * b;\nendmodule\n")


def adder(n=8):
    top = f"add{n}"
    return top, (f"module {top}(input [{n - 1}:0] a, input [{n - 1}:0] b, input cin,\n"
                 f"    output [{n}:0] s);\n  assign s = a + b + cin;\nendmodule\n")


def comparator(n=8, signed=False):
    s = "signed " if signed else ""
    top = f"cmp{n}{'s' if signed else 'u'}"
    return top, (f"module {top}(input {s}[{n - 1}:0] a, input {s}[{n - 1}:0] b,\n"
                 "    output lt, output eq, output gt);\n"
                 "  assign lt = a < b;\n  assign eq = a == b;\n  assign gt = a > b;\n"
                 "endmodule\n")


def popcount(n=8):
    top, width = f"popcount{n}", n.bit_length()
    return top, (f"module {top}(input [{n - 1}:0] x, output reg [{width - 1}:0] count);\n"
                 "  integer i;\n  always @* begin\n    count = 0;\n"
                 f"    for (i = 0; i < {n}; i = i + 1)\n      count = count + x[i];\n"
                 "  end\nendmodule\n")


def parity(n=8):
    top = f"parity{n}"
    return top, (f"module {top}(input [{n - 1}:0] x, output p);\n  assign p = ^x;\n"
                 "endmodule\n")


def crc8():
    return "crc8", ("module crc8(input [7:0] data, output reg [7:0] crc);\n"
                    "  integer i;\n  always @* begin\n    crc = data;\n"
                    "    for (i = 0; i < 8; i = i + 1)\n"
                    "      crc = crc[7] ? (crc << 1) ^ 8'h07 : crc << 1;\n"
                    "  end\nendmodule\n")


def barrel(n=8):
    if n < 2 or n & (n - 1):
        raise ValueError(f"barrel: n must be a power of 2 of at least 2, not {n}")
    top, k = f"barrel{n}", n.bit_length() - 1
    return top, (f"module {top}(input [{n - 1}:0] x, input [{k - 1}:0] sh,\n"
                 f"    output [{n - 1}:0] y);\n"
                 f"  wire [{2 * n - 1}:0] twice = {{x, x}} << sh;\n"
                 f"  assign y = twice[{2 * n - 1}:{n}];\nendmodule\n")


def alu():
    return "alu", ("module alu(input [7:0] a, input [7:0] b, input [2:0] op,\n"
                   "    output reg [7:0] y, output zero);\n"
                   "  always @* case (op)\n"
                   "    3'd0: y = a + b;\n    3'd1: y = a - b;\n    3'd2: y = a & b;\n"
                   "    3'd3: y = a | b;\n    3'd4: y = a ^ b;\n    3'd5: y = a << 1;\n"
                   "    3'd6: y = a >> 1;\n    default: y = {7'd0, a < b};\n"
                   "  endcase\n  assign zero = y == 8'd0;\nendmodule\n")


def counter(n=8):
    top = f"counter{n}"
    return top, (f"module {top}(input clk, input rst, input en, output reg [{n - 1}:0] count);\n"
                 "  initial count = 0;\n"
                 "  always @(posedge clk)\n    if (rst) count <= 0;\n"
                 "    else if (en) count <= count + 1'b1;\nendmodule\n")


def accumulator(n=8):
    top = f"acc{n}"
    return top, (f"module {top}(input clk, input rst, input [{n - 1}:0] x,\n"
                 f"    output reg [{2 * n - 1}:0] sum);\n  initial sum = 0;\n"
                 "  always @(posedge clk)\n    if (rst) sum <= 0;\n    else sum <= sum + x;\n"
                 "endmodule\n")


def detector():
    return "detector", ("module detector(input clk, input rst, input bit_in, output found);\n"
                        "  // Moore machine: state = length of the prefix of 1011 matched\n"
                        "  reg [2:0] state;\n  initial state = 0;\n"
                        "  always @(posedge clk)\n    if (rst) state <= 0;\n"
                        "    else case (state)\n"
                        "      3'd0: state <= bit_in ? 3'd1 : 3'd0;\n"
                        "      3'd1: state <= bit_in ? 3'd1 : 3'd2;\n"
                        "      3'd2: state <= bit_in ? 3'd3 : 3'd0;\n"
                        "      3'd3: state <= bit_in ? 3'd4 : 3'd2;\n"
                        "      default: state <= bit_in ? 3'd1 : 3'd2;\n"
                        "    endcase\n  assign found = state == 3'd4;\nendmodule\n")


def register(n=32):
    top = f"reg{n}"
    return top, (f"module {top}(input clk, input [{n - 1}:0] d, output reg [{n - 1}:0] q);\n"
                 "  initial q = 0;\n  always @(posedge clk) q <= d;\nendmodule\n")


def delay(depth=16, n=8):
    top = f"delay{depth}x{n}"
    stages = "".join(f"      s[{i}] <= s[{i - 1}];\n" for i in range(1, depth))
    return top, (f"module {top}(input clk, input [{n - 1}:0] d, output [{n - 1}:0] q);\n"
                 f"  reg [{n - 1}:0] s [0:{depth - 1}];\n  integer i;\n"
                 f"  initial for (i = 0; i < {depth}; i = i + 1) s[i] = 0;\n"
                 f"  always @(posedge clk) begin\n      s[0] <= d;\n{stages}  end\n"
                 f"  assign q = s[{depth - 1}];\nendmodule\n")


def regmul(n=8):
    top = f"regmul{n}"
    return top, (f"module {top}(input clk, input [{n - 1}:0] a, input [{n - 1}:0] b,\n"
                 f"    output reg [{2 * n - 1}:0] p);\n  initial p = 0;\n"
                 "  always @(posedge clk) p <= a * b;\nendmodule\n")


def pipemac(n=4):
    top = f"pipemac{n}"
    return top, (f"module {top}(input clk, input [{n - 1}:0] a, input [{n - 1}:0] b,\n"
                 f"    input [{2 * n - 1}:0] c, output reg [{2 * n}:0] y);\n"
                 f"  reg [{2 * n - 1}:0] m, c1;\n  initial begin m = 0; c1 = 0; y = 0; end\n"
                 "  always @(posedge clk) begin m <= a * b; c1 <= c; y <= m + c1; end\n"
                 "endmodule\n")


def muladd(n=8):
    top = f"muladd{n}"
    return top, (f"module {top}(input [{n - 1}:0] a, input [{n - 1}:0] b,\n"
                 f"    input [{2 * n - 1}:0] c, output [{2 * n - 1}:0] y);\n"
                 "  assign y = a * b + c;\nendmodule\n")


def mac(n=8, acc=20):
    top = f"mac{n}x{acc}"
    return top, (f"module {top}(input clk, input rst, input [{n - 1}:0] a, "
                 f"input [{n - 1}:0] b,\n    output reg [{acc - 1}:0] q);\n"
                 "  initial q = 0;\n"
                 "  always @(posedge clk) if (rst) q <= 0; else q <= q + a * b;\nendmodule\n")


def addc(n=16):
    top = f"addc{n}"
    return top, (f"module {top}(input [{n - 1}:0] a, input [{n - 1}:0] b, "
                 f"output [{n - 1}:0] s, output cout);\n"
                 "  assign {cout, s} = a + b;\nendmodule\n")


def _bits(count):
    return max(1, (count - 1).bit_length())


def regfile(words=8, width=8, read_ports=1):
    top = f"regfile{words}x{width}" + (f"r{read_ports}" if read_ports > 1 else "")
    a = _bits(words)
    names = [("ra", "rd")] + [(f"ra{p}", f"rd{p}") for p in range(1, read_ports)]
    addresses = "".join(f" input [{a - 1}:0] {ra}," for ra, _ in names)
    data = ", ".join(f"output [{width - 1}:0] {rd}" for _, rd in names)
    reads = "".join(f"  assign {rd} = m[{ra}];\n" for ra, rd in names)
    return top, (f"module {top}(input clk, input we, input [{a - 1}:0] wa,{addresses}\n"
                 f"    input [{width - 1}:0] wd, {data});\n"
                 f"  reg [{width - 1}:0] m [0:{words - 1}];\n  integer i;\n"
                 f"  initial for (i = 0; i < {words}; i = i + 1) m[i] = 0;\n"
                 f"  always @(posedge clk) if (we) m[wa] <= wd;\n{reads}endmodule\n")


def regadd(n=16):
    top = f"regadd{n}"
    return top, (f"module {top}(input clk, input [{n - 1}:0] a, input [{n - 1}:0] b,\n"
                 f"    output reg [{n}:0] s);\n  initial s = 0;\n"
                 "  always @(posedge clk) s <= a + b;\nendmodule\n")


def fifo(depth=8, width=8, registered=False):
    top = f"fifo{depth}x{width}" + ("r" if registered else "")
    a = _bits(depth)
    read = ("  reg [{w}:0] q = 0;\n  assign dout = q;\n"
            "  always @(posedge clk) if (do_pop) q <= m[rp];\n".format(w=width - 1)
            if registered else "  assign dout = m[rp];\n")
    return top, (f"module {top}(input clk, input rst, input push, input pop,\n"
                 f"    input [{width - 1}:0] din, output [{width - 1}:0] dout, output full,\n"
                 "    output empty);\n"
                 f"  reg [{width - 1}:0] m [0:{depth - 1}];\n"
                 f"  reg [{a - 1}:0] rp, wp;\n  reg [{a}:0] n;\n  integer i;\n"
                 f"  initial begin rp = 0; wp = 0; n = 0;\n"
                 f"    for (i = 0; i < {depth}; i = i + 1) m[i] = 0; end\n"
                 f"  assign full = n == {depth};\n  assign empty = n == 0;\n"
                 "  wire do_push = push && !full, do_pop = pop && !empty;\n" + read +
                 "  always @(posedge clk)\n"
                 "    if (rst) begin rp <= 0; wp <= 0; n <= 0; end\n"
                 "    else begin\n"
                 "      if (do_push) begin m[wp] <= din; "
                 f"wp <= wp == {depth - 1} ? 0 : wp + 1; end\n"
                 f"      if (do_pop) rp <= rp == {depth - 1} ? 0 : rp + 1;\n"
                 "      n <= n + do_push - do_pop;\n"
                 "    end\nendmodule\n")


def _case_table(output, select, entries, width, seed, shift):
    """An ``always @*`` block setting ``output`` from a fixed pseudo-random table of
    ``entries`` values of ``width`` bits (a linear congruential sequence from ``seed``, each
    value shifted right by ``shift``) by a ``case`` on ``select``."""
    a = _bits(entries)
    value, lines = seed, []
    for k in range(entries):
        value = (value * 1103515245 + 12345) & 0x7FFFFFFF
        lines.append(f"      {a}'d{k}: {output} = {width}'d{(value >> shift) % (1 << width)};\n")
    return (f"  always @* begin\n    case ({select})\n" + "".join(lines)
            + f"      default: {output} = {width}'d0;\n    endcase\n  end\n")


def dds(entries=16, width=8):
    """A phase accumulator (2 more bits than the table's address) read through a table at its
    top bits: a direct digital synthesiser."""
    top = f"dds{entries}x{width}"
    a = _bits(entries)
    return top, (f"module {top}(input clk, input [{a + 1}:0] step, "
                 f"output reg [{width - 1}:0] out);\n"
                 f"  reg [{a + 1}:0] phase = 0;\n"
                 "  always @(posedge clk) phase <= phase + step;\n"
                 + _case_table("out", f"phase[{a + 1}:2]", entries, width, 0x1F2E3D4C, 9)
                 + "endmodule\n")


def rom(entries=64, width=8):
    top = f"rom{entries}x{width}"
    a = _bits(entries)
    return top, (f"module {top}(input [{a - 1}:0] addr, output reg [{width - 1}:0] data);\n"
                 + _case_table("data", "addr", entries, width, 0x2545F491, 7) + "endmodule\n")


def lfsr(n=16):
    """A Fibonacci LFSR with an enable (taps of a maximal-length polynomial), init 1."""
    taps = {4: (3, 2), 8: (7, 5, 4, 3), 16: (15, 13, 12, 10), 24: (23, 22, 21, 16),
            32: (31, 21, 1, 0)}[n]
    top = f"lfsr{n}"
    feedback = " ^ ".join(f"q[{t}]" for t in taps)
    return top, (f"module {top}(input clk, input en, output reg [{n - 1}:0] q);\n"
                 "  initial q = 1;\n"
                 f"  always @(posedge clk) if (en) q <= {{q[{n - 2}:0], {feedback}}};\n"
                 "endmodule\n")


def gray(n=8):
    """A Gray-code counter: a binary count with an enable, shown as its Gray code."""
    top = f"gray{n}"
    return top, (f"module {top}(input clk, input rst, input en, output [{n - 1}:0] g);\n"
                 f"  reg [{n - 1}:0] b;\n  initial b = 0;\n"
                 "  always @(posedge clk) if (rst) b <= 0; else if (en) b <= b + 1'b1;\n"
                 "  assign g = b ^ (b >> 1);\nendmodule\n")


def bcd(digits=2):
    """A BCD counter of ``digits`` decimal digits with an enable and a carry out."""
    top = f"bcd{digits}"
    n = 4 * digits
    steps = "".join(
        f"      if (d[{4 * i + 3}:{4 * i}] == 4'd9) d[{4 * i + 3}:{4 * i}] <= 0;\n"
        f"      else begin d[{4 * i + 3}:{4 * i}] <= d[{4 * i + 3}:{4 * i}] + 1'b1; "
        "carry = 0; end\n" if i == 0 else
        f"      if (carry) begin\n"
        f"        if (d[{4 * i + 3}:{4 * i}] == 4'd9) d[{4 * i + 3}:{4 * i}] <= 0;\n"
        f"        else begin d[{4 * i + 3}:{4 * i}] <= d[{4 * i + 3}:{4 * i}] + 1'b1; "
        "carry = 0; end\n      end\n" for i in range(digits))
    return top, (f"module {top}(input clk, input rst, input en, output reg [{n - 1}:0] d,\n"
                 "    output last);\n  reg carry;\n  initial d = 0;\n"
                 f"  assign last = en && d == {n}'h{'9' * digits};\n"
                 "  always @(posedge clk)\n    if (rst) d <= 0;\n"
                 f"    else if (en) begin\n      carry = 1;\n{steps}    end\nendmodule\n")


def uart_tx(divisor=4):
    """An 8N1 UART transmitter: ``start`` with ``data`` loads a frame when idle; ``divisor``
    clocks a bit."""
    top = f"uart_tx{divisor}"
    c = _bits(divisor)
    return top, (f"module {top}(input clk, input rst, input start, input [7:0] data,\n"
                 "    output tx, output busy);\n"
                 f"  reg [8:0] shift;\n  reg [3:0] count;\n  reg [{c - 1}:0] tick;\n"
                 "  initial begin shift = 9'h1ff; count = 0; tick = 0; end\n"
                 "  assign tx = shift[0];\n  assign busy = count != 0;\n"
                 "  always @(posedge clk)\n"
                 "    if (rst) begin shift <= 9'h1ff; count <= 0; tick <= 0; end\n"
                 "    else if (!busy) begin\n"
                 "      if (start) begin shift <= {data, 1'b0}; count <= 4'd10; "
                 "tick <= 0; end\n"
                 f"    end else if (tick == {divisor - 1}) begin\n"
                 "      tick <= 0; shift <= {1'b1, shift[8:1]}; count <= count - 1'b1;\n"
                 "    end else tick <= tick + 1'b1;\nendmodule\n")


def uart_rx(divisor=4):
    """An 8N1 UART receiver sampling mid-bit: ``valid`` for one cycle with ``data``."""
    top = f"uart_rx{divisor}"
    c = _bits(divisor)
    return top, (f"module {top}(input clk, input rst, input rx, output reg [7:0] data,\n"
                 "    output reg valid);\n"
                 f"  reg [3:0] count;\n  reg [{c - 1}:0] tick;\n"
                 "  initial begin data = 0; valid = 0; count = 0; tick = 0; end\n"
                 "  always @(posedge clk) begin\n    valid <= 0;\n"
                 "    if (rst) begin count <= 0; tick <= 0; end\n"
                 f"    else if (count == 0) begin\n"
                 f"      if (!rx) begin count <= 4'd10; tick <= {divisor // 2}; end\n"
                 f"    end else if (tick == {divisor - 1}) begin\n"
                 "      tick <= 0; count <= count - 1'b1;\n"
                 "      if (count == 4'd10 && rx) count <= 0;\n"
                 "      else if (count > 4'd1) data <= {rx, data[7:1]};\n"
                 "      else valid <= rx;\n"
                 "    end else tick <= tick + 1'b1;\n  end\nendmodule\n")


def traffic():
    """A traffic-light controller: a 4-state machine with a 3-bit timer and a request."""
    return "traffic", ("module traffic(input clk, input rst, input req, output [2:0] light);\n"
                       "  reg [1:0] state;\n  reg [2:0] timer;\n"
                       "  initial begin state = 0; timer = 0; end\n"
                       "  assign light = state == 0 ? 3'b001 : state == 1 ? 3'b010 :\n"
                       "                 state == 2 ? 3'b100 : 3'b110;\n"
                       "  always @(posedge clk)\n"
                       "    if (rst) begin state <= 0; timer <= 0; end\n"
                       "    else if (timer != 0) timer <= timer - 1'b1;\n"
                       "    else case (state)\n"
                       "      0: if (req) begin state <= 1; timer <= 3'd2; end\n"
                       "      1: begin state <= 2; timer <= 3'd5; end\n"
                       "      2: begin state <= 3; timer <= 3'd1; end\n"
                       "      default: begin state <= 0; timer <= 3'd4; end\n"
                       "    endcase\nendmodule\n")


#: name -> (builder, sequential)
_BUILDERS = {
    "multiplier": (multiplier, False), "adder": (adder, False),
    "comparator": (comparator, False), "popcount": (popcount, False),
    "parity": (parity, False), "crc8": (crc8, False), "barrel": (barrel, False),
    "alu": (alu, False), "counter": (counter, True), "accumulator": (accumulator, True),
    "detector": (detector, True),
    "register": (register, True), "delay": (delay, True), "regmul": (regmul, True),
    "pipemac": (pipemac, True), "regadd": (regadd, True), "regfile": (regfile, True),
    "fifo": (fifo, True), "rom": (rom, False), "dds": (dds, True), "muladd": (muladd, False),
    "mac": (mac, True), "addc": (addc, False), "lfsr": (lfsr, True), "gray": (gray, True),
    "bcd": (bcd, True), "uart_tx": (uart_tx, True), "uart_rx": (uart_rx, True),
    "traffic": (traffic, True),
}
#: The design names.
DESIGNS = tuple(_BUILDERS)

#: ``(name, params)`` of every test design of issue 12: the n x n multipliers for n = 2..8,
#: unsigned and signed, then adders, comparators, population counts, parity, CRC-8, a barrel
#: shifter, the ALU, a counter, an accumulator and the sequence detector.
TEST_DESIGNS = tuple(
    [("multiplier", {"n": n, "signed": s}) for s in (False, True) for n in range(2, 9)]
    + [("adder", {"n": 8}), ("adder", {"n": 16}), ("comparator", {"n": 8}),
       ("comparator", {"n": 8, "signed": True}), ("popcount", {"n": 8}),
       ("popcount", {"n": 16}), ("parity", {"n": 16}), ("crc8", {}), ("barrel", {"n": 8}),
       ("alu", {}), ("counter", {"n": 8}), ("accumulator", {"n": 8}), ("detector", {})])


#: ``(name, params)`` of the state designs of issue 40 (``bitgrid bench compile``, series
#: ``state``): registers and delay lines, registered operations, register files, FIFOs and
#: ROMs.
STATE_DESIGNS = (
    ("register", {"n": 32}), ("delay", {"depth": 16, "n": 8}), ("regmul", {"n": 8}),
    ("regadd", {"n": 16}), ("pipemac", {"n": 4}), ("regfile", {"words": 8, "width": 8}),
    ("regfile", {"words": 16, "width": 8, "read_ports": 2}),
    ("regfile", {"words": 32, "width": 16}), ("regfile", {"words": 64, "width": 32}),
    ("fifo", {"depth": 4, "width": 8}), ("fifo", {"depth": 8, "width": 8}),
    ("fifo", {"depth": 16, "width": 8}), ("fifo", {"depth": 64, "width": 8}),
    ("dds", {"entries": 16, "width": 8}), ("dds", {"entries": 64, "width": 8}),
    ("rom", {"entries": 16, "width": 8}), ("rom", {"entries": 64, "width": 8}),
    ("rom", {"entries": 256, "width": 8}))


#: ``(name, params)`` of the arithmetic designs of issue 37 (series ``arithmetic``): a
#: multiply-add, a multiply-accumulate and ``{cout, s} = a + b``.
ARITHMETIC_DESIGNS = (
    ("muladd", {"n": 8}), ("mac", {"n": 8, "acc": 20}), ("addc", {"n": 16}),
    ("addc", {"n": 128}))


#: ``(name, params)`` of the sequential designs of issue 36 that no library block recognises
#: (series ``sequential``): LFSRs, Gray and BCD counters, UART transmitter and receiver, a
#: traffic-light machine and the sequence detector.
SEQUENTIAL_DESIGNS = (
    ("lfsr", {"n": 8}), ("lfsr", {"n": 16}), ("gray", {"n": 8}), ("bcd", {"digits": 2}),
    ("uart_tx", {"divisor": 4}), ("uart_rx", {"divisor": 4}), ("traffic", {}),
    ("detector", {}))


def design(name, **params):
    """The design ``name`` (one of :data:`DESIGNS`) built with ``params``.

    :raises ValueError: for an unknown name or a bad parameter.
    """
    if name not in _BUILDERS:
        raise ValueError(f"no design {name!r}; the designs are {', '.join(DESIGNS)}")
    builder, sequential = _BUILDERS[name]
    try:
        top, verilog = builder(**params)
    except TypeError as error:
        raise ValueError(f"design {name}: {error}") from None
    return Design(top, top, verilog, dict(params), sequential)


def write(design_, folder):
    """Write ``design_``'s Verilog to ``folder/<name>.v``; returns the path."""
    path = pathlib.Path(folder) / f"{design_.name}.v"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(design_.verilog)
    return path
