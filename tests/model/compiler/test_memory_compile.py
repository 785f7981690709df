"""Memories in Verilog and Amaranth compiled to the register_file block (issue 40): Yosys'
``$mem_v2`` recognised with its ports, read kinds and initial contents, each program run on
the emulator by port names against a model of the Verilog's meaning, every row from row 0;
shapes the block does not take still compile right on the general back ends."""

import random

import pytest
from amaranth import Module, Signal
from amaranth.lib import memory as amemory, wiring
from amaranth.lib.wiring import In, Out

from bitgrid.compiler import compile
from bitgrid.compiler.blocks import compile_operation
from bitgrid.compiler.flow import front_end
from bitgrid.evaluate import evaluate


def _compile(tmp_path, text, top):
    path = tmp_path / f"{top}.v"
    path.write_text(text)
    return compile(path, top=top)


def _run(result, rows):
    return evaluate(result.config, result.portmap, rows, target="fast")


def _traffic(words, width, count, seed, reads=("ra",), enable="we"):
    rng, bits = random.Random(seed), (words - 1).bit_length()
    rows = []
    for _ in range(count):
        row = {"wa": rng.randrange(words), "wd": rng.randrange(1 << width)}
        if enable:
            row[enable] = int(rng.random() < 0.6)
        for name in reads:
            row[name] = row["wa"] if rng.random() < 0.3 else rng.randrange(1 << bits)
        rows.append(row)
    return rows


def _model(rows, memory, reads=("ra",), kind="combinational", enable="we", out=("rd",)):
    """Read data per row: ``combinational`` the word before the row's write;
    ``registered`` (rd <= m[ra]) that of the row before, 0 in row 0; ``transparent``
    (the address registered) the word, after the writes so far, at the row before's address."""
    memory, expected, previous = list(memory), [], {name: 0 for name in reads}
    last = {name: 0 for name in out}
    for row in rows:
        if kind == "combinational":
            expected.append({o: memory[row[r]] for r, o in zip(reads, out)})
        elif kind == "registered":
            expected.append(dict(last))
            last = {o: memory[row[r]] for r, o in zip(reads, out)}
        else:
            expected.append({o: memory[previous[r]] for r, o in zip(reads, out)})
            previous = {r: row[r] for r in reads}
        if row.get(enable, 1):
            memory[row["wa"]] = row["wd"]
    return expected


def _assert_block(result, period=2):
    assert result.report["back_end"] == "blocks"
    assert result.report["blocks"][0].startswith("register_file")
    assert result.portmap.period == period


COMBINATIONAL = """module rf(input clk, input we, input [2:0] wa, input [2:0] ra, input [4:0] wd,
                   output [4:0] rd);
  reg [4:0] m [0:7];
  integer i;
  initial for (i = 0; i < 8; i = i + 1) m[i] = (i * 7 + 3) % 32;
  always @(posedge clk) if (we) m[wa] <= wd;
  assign rd = m[ra];
endmodule
"""


def test_combinational_read_with_initial_contents(tmp_path):
    result = _compile(tmp_path, COMBINATIONAL, "rf")
    _assert_block(result)
    rows = [{"we": 0, "wa": 0, "wd": 0, "ra": a} for a in range(8)] + _traffic(8, 5, 200, 1)
    assert _run(result, rows) == _model(rows, [(i * 7 + 3) % 32 for i in range(8)])


def test_registered_read(tmp_path):
    text = """module rf(input clk, input we, input [1:0] wa, input [1:0] ra, input [3:0] wd,
                       output reg [3:0] rd);
      reg [3:0] m [0:3];
      integer i;
      initial begin for (i = 0; i < 4; i = i + 1) m[i] = 0; rd = 0; end
      always @(posedge clk) begin if (we) m[wa] <= wd; rd <= m[ra]; end
    endmodule
    """
    result = _compile(tmp_path, text, "rf")
    _assert_block(result)
    assert result.portmap.history == 1
    rows = _traffic(4, 4, 200, 2)
    assert _run(result, rows) == _model(rows, [0] * 4, kind="registered")


def test_transparent_read_by_a_registered_address(tmp_path):
    text = """module rf(input clk, input we, input [1:0] wa, input [1:0] ra, input [3:0] wd,
                       output [3:0] rd);
      reg [3:0] m [0:3];
      reg [1:0] ra_q;
      integer i;
      initial begin for (i = 0; i < 4; i = i + 1) m[i] = 0; ra_q = 0; end
      always @(posedge clk) begin if (we) m[wa] <= wd; ra_q <= ra; end
      assign rd = m[ra_q];
    endmodule
    """
    result = _compile(tmp_path, text, "rf")
    _assert_block(result)
    rows = _traffic(4, 4, 200, 3)
    assert _run(result, rows) == _model(rows, [0] * 4, kind="transparent")


def test_two_read_ports_and_no_write_enable(tmp_path):
    text = """module rf(input clk, input [1:0] wa, input [1:0] ra, input [1:0] rb,
                       input [2:0] wd, output [2:0] da, output [2:0] db);
      reg [2:0] m [0:3];
      integer i;
      initial for (i = 0; i < 4; i = i + 1) m[i] = i;
      always @(posedge clk) m[wa] <= wd;
      assign da = m[ra];
      assign db = m[rb];
    endmodule
    """
    result = _compile(tmp_path, text, "rf")
    _assert_block(result)
    rows = _traffic(4, 3, 200, 4, reads=("ra", "rb"), enable=None)
    assert _run(result, rows) == _model(rows, [0, 1, 2, 3], reads=("ra", "rb"),
                                        enable=None, out=("da", "db"))


class _AmaranthFile(wiring.Component):
    """A 4 x 3 Amaranth memory with a write port, a combinational read port and a
    synchronous one transparent for the write port (its reset ``rst`` unused)."""

    def __init__(self):
        super().__init__({"we": In(1), "wa": In(2), "wd": In(3), "ra": In(2), "rd": Out(3),
                          "rb": In(2), "db": Out(3)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = amemory.Memory(shape=3, depth=4, init=[0, 5, 7, 2])
        write = mem.write_port()
        comb = mem.read_port(domain="comb")
        sync = mem.read_port(transparent_for=(write,))
        m.d.comb += [write.addr.eq(self.wa), write.data.eq(self.wd), write.en.eq(self.we),
                     comb.addr.eq(self.ra), self.rd.eq(comb.data),
                     sync.addr.eq(self.rb), self.db.eq(sync.data)]
        return m


def test_amaranth_memory(tmp_path):
    result = compile(_AmaranthFile(), top="amfile")
    _assert_block(result)
    rows = [dict(row, rst=0) for row in _traffic(4, 3, 200, 5, reads=("ra", "rb"))]
    got = _run(result, rows)
    assert [{"rd": r["rd"]} for r in got] == _model(rows, [0, 5, 7, 2])
    # the transparent port: the address of the row before, the contents after its write
    assert [{"db": r["db"]} for r in got] == _model(rows, [0, 5, 7, 2], reads=("rb",),
                                                    kind="transparent", out=("db",))


@pytest.mark.parametrize("registered", [False, True])
def test_rom_tables(tmp_path, registered):
    """A case table (Yosys' proc_rom makes it a memory without write ports): the rom block;
    registered (data <= table[addr]), the block with its inputs a row later (an unused
    clk of the combinational one is an input the block ignores)."""
    rng = random.Random(32)
    # word 0 is not the data register's start (0): the block's row 0 is gated to it
    table = [41] + [rng.randrange(64) for _ in range(31)]
    cases = "".join(f"      5'd{k}: d = 6'd{v};\n" for k, v in enumerate(table))
    text = (f"module t(input clk, input [4:0] addr, output {'reg ' if registered else ''}"
            "[5:0] data);\n  reg [5:0] d;\n  always @* begin\n    case (addr)\n"
            f"{cases}      default: d = 0;\n    endcase\n  end\n"
            + ("  initial data = 0;\n  always @(posedge clk) data <= d;\n" if registered
               else "  assign data = d;\n") + "endmodule\n")
    result = _compile(tmp_path, text, "t")
    rows = [{"addr": (7 * k) % 32, **({} if registered else {"clk": 0})} for k in range(100)]
    expected = [{"data": table[r["addr"]]} for r in rows]
    if registered:
        expected = [{"data": 0}] + expected[:-1]
    assert _run(result, rows) == expected
    # the rom block, alone (registered, the general back end's retimed program beside it is
    # smaller: 209 cells at period 2 against 402 on 2026-12-07, and is the one kept)
    path = tmp_path / "t.v"
    synthesis, _ = front_end(path, top="t")
    block = compile_operation(synthesis.operation, synthesis.netlist)
    assert block.report["blocks"][0].startswith("rom(words=32, width=6")
    assert _run(block, rows) == expected
    cells = {c["mapping"]: c["cells"] for c in result.report["candidates"]}
    assert cells["blocks"] == block.report["cells"]["total"]
    assert result.report["cells"]["total"] == min(cells.values())


def test_a_table_of_one_address_nibble_is_whole_cells(tmp_path):
    """A 16-entry table of bytes is 8 LUT4s of the same 4 address bits: the general back end
    packs four of them into a cell (one output bit a side) and beats the rom block (192 cells
    on 2026-12-07) on cells at the same period; every address reads its word."""
    rng = random.Random(16)
    table = [rng.randrange(256) for _ in range(16)]
    cases = "".join(f"      4'd{k}: data = 8'd{v};\n" for k, v in enumerate(table))
    text = ("module t(input [3:0] addr, output reg [7:0] data);\n  always @* begin\n"
            f"    case (addr)\n{cases}    endcase\n  end\nendmodule\n")
    result = _compile(tmp_path, text, "t")
    rows = [{"addr": a} for a in list(range(16)) * 2]
    assert _run(result, rows) == [{"data": table[r["addr"]]} for r in rows]
    assert result.report["back_end"] == "general"
    assert result.report["cells"]["logic"] == 2 and result.portmap.period == 2
    cells = {c["mapping"]: c["cells"] for c in result.report["candidates"]}
    assert result.report["cells"]["total"] < cells["blocks"]


@pytest.mark.parametrize("registered", [False, True])
def test_single_port_ram(tmp_path, registered):
    """One address for the write and the read (the commonest RAM): the block with its read
    select chain on the write address columns."""
    read = "always @(posedge clk) rd <= m[a];" if registered else "assign rd = m[a];"
    text = f"""module sp(input clk, input we, input [2:0] a, input [3:0] wd,
                         output {'reg ' if registered else ''}[3:0] rd);
      reg [3:0] m [0:7];
      integer i;
      initial begin for (i = 0; i < 8; i = i + 1) m[i] = 0; {'rd = 0;' if registered else ''} end
      always @(posedge clk) if (we) m[a] <= wd;
      {read}
    endmodule
    """
    result = _compile(tmp_path, text, "sp")
    _assert_block(result)
    assert "shared_address=True" in result.report["blocks"][0]
    rows = [dict(row, a=row["wa"]) for row in _traffic(8, 4, 200, 9, reads=())]
    expected = _model([dict(r, ra=r["wa"]) for r in rows], [0] * 8,
                      kind="registered" if registered else "combinational")
    assert _run(result, [{k: r[k] for k in ("we", "a", "wd")} for r in rows]) == expected


@pytest.mark.parametrize("words,abits", [(5, 3), (24, 5), (8, 6)])
def test_depths_that_are_no_power_of_two_and_wide_addresses(tmp_path, words, abits):
    """24 words on a 5-bit address (293,136 cells at period 2,108 on the sweep before), 8
    words on a 6-bit address: the block, its writes past the end ignored and its reads past
    the end where Yosys' memory_map reads (the check after compile compares every output of
    1,000 random cycles with the netlist), every row against the model here."""
    text = f"""module t(input clk, input we, input [{abits - 1}:0] wa, input [{abits - 1}:0] ra,
                        input [3:0] wd, output [3:0] rd);
      reg [3:0] m [0:{words - 1}];
      integer i;
      initial for (i = 0; i < {words}; i = i + 1) m[i] = i % 16;
      always @(posedge clk) if (we) m[wa] <= wd;
      assign rd = m[ra];
    endmodule
    """
    result = _compile(tmp_path, text, "t")
    _assert_block(result)
    rng = random.Random(words)
    rows = [{"we": int(rng.random() < 0.5), "wa": rng.randrange(1 << abits),
             "ra": rng.randrange(words), "wd": rng.randrange(16)} for _ in range(300)]
    memory, expected = [i % 16 for i in range(words)], []
    for row in rows:
        expected.append({"rd": memory[row["ra"]]})
        if row["we"] and row["wa"] < words:
            memory[row["wa"]] = row["wd"]
    assert _run(result, rows) == expected


def test_an_active_low_write_enable(tmp_path):
    text = """module t(input clk, input wen, input [2:0] wa, input [2:0] ra, input [3:0] wd,
                     output [3:0] rd);
      reg [3:0] m [0:7];
      integer i;
      initial for (i = 0; i < 8; i = i + 1) m[i] = 0;
      always @(posedge clk) if (!wen) m[wa] <= wd;
      assign rd = m[ra];
    endmodule
    """
    result = _compile(tmp_path, text, "t")
    _assert_block(result)
    assert "we_low=True" in result.report["blocks"][0]
    rows = _traffic(8, 4, 200, 12)
    expected = _model(rows, [0] * 8)
    assert _run(result, [dict(r, wen=1 - r.pop("we")) for r in rows]) == expected


@pytest.mark.parametrize("out_bits", [3, 9])
def test_read_data_cut_short_or_zero_extended(tmp_path, out_bits):
    """A read port narrower than the word (the low bits) or wider (zeros above): the block,
    the extra output bits on lanes that stay 0."""
    text = f"""module t(input clk, input we, input [1:0] wa, input [1:0] ra, input [5:0] wd,
                     output [{out_bits - 1}:0] rd);
      reg [5:0] m [0:3];
      integer i;
      initial for (i = 0; i < 4; i = i + 1) m[i] = 9 * i;
      always @(posedge clk) if (we) m[wa] <= wd;
      assign rd = m[ra];
    endmodule
    """
    result = _compile(tmp_path, text, "t")
    _assert_block(result)
    rows = _traffic(4, 6, 200, 13)
    expected = [{"rd": r["rd"] % (1 << out_bits)} for r in _model(rows, [0, 9, 18, 27])]
    assert _run(result, rows) == expected


class _AmaranthSyncFile(wiring.Component):
    """A 4 x 5 Amaranth memory with initial contents and one synchronous read port (not
    transparent): row 0 shows the port's reset 0, not word 0."""

    def __init__(self):
        super().__init__({"we": In(1), "wa": In(2), "wd": In(5), "ra": In(2), "rd": Out(5)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = amemory.Memory(shape=5, depth=4, init=[17, 3, 29, 8])
        write, read = mem.write_port(), mem.read_port()
        m.d.comb += [write.addr.eq(self.wa), write.data.eq(self.wd), write.en.eq(self.we),
                     read.addr.eq(self.ra), self.rd.eq(read.data)]
        return m


def test_amaranth_synchronous_read_with_initial_contents(tmp_path):
    """17,626 cells on the sweep before; now the block with its row 0 gated to the port's
    reset value."""
    result = compile(_AmaranthSyncFile(), top="amsync")
    _assert_block(result)
    assert "in row 0" in result.report["blocks"][0]
    rows = [dict(row, rst=0) for row in _traffic(4, 5, 200, 14)]
    assert _run(result, rows) == _model(rows, [17, 3, 29, 8], kind="registered")


def test_readmemh_files_are_found_as_simulators_find_them(tmp_path, monkeypatch):
    """``$readmemh("t.hex", m)`` reads ``t.hex`` from the folder the compile runs in, as Icarus
    and Verilator do (a file of the same name beside the source is not taken then), else
    beside the source (where Yosys looks); an absolute path is read as it is. A break-it round
    found the file beside the source taken over the one Icarus reads: a wrong table, exit 0."""
    here, there = tmp_path / "run", tmp_path / "src"
    here.mkdir()
    there.mkdir()
    near = [(5 * k + 3) % 256 for k in range(16)]
    far = [(11 * k + 7) % 256 for k in range(16)]
    (here / "t.hex").write_text("\n".join(f"{v:02x}" for v in near) + "\n")
    (there / "t.hex").write_text("\n".join(f"{v:02x}" for v in far) + "\n")
    (tmp_path / "abs.hex").write_text("\n".join(f"{v:02x}" for v in far[::-1]) + "\n")

    def table(name, file):
        path = there / f"{name}.v"
        path.write_text(f"module {name}(input [3:0] a, output [7:0] d);\n"
                        f"  reg [7:0] m [0:15];\n  initial $readmemh(\"{file}\", m);\n"
                        "  assign d = m[a];\nendmodule\n")
        return compile(path, top=name)

    rows = [{"a": a} for a in range(16)]
    monkeypatch.chdir(here)
    assert _run(table("near", "t.hex"), rows) == [{"d": v} for v in near]
    assert _run(table("absolute", tmp_path / "abs.hex"), rows) == [{"d": v} for v in far[::-1]]
    monkeypatch.chdir(tmp_path)
    assert _run(table("beside", "t.hex"), rows) == [{"d": v} for v in far]
