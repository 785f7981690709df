"""The register file block (bitgrid.library.memory) on the reference emulator against a
Python model of ``always @(posedge clk) if (we) m[waddr] <= wdata; assign rdata = m[raddr]``:
every sequence of writes and reads of a 2 x 1 file, random traffic otherwise (writes and reads
of the same word in the same row, addresses past the last word, initial contents, up to three
read ports)."""

import itertools
import random

import pytest

from bitgrid.evaluate import evaluate
from bitgrid.library import LibraryError, build
from bitgrid.library.memory import address_bits, read_word, register_file


def reference(words, ports, rows, init=None):
    """Read data of each row: every port's word before the row's write; past the end the
    word the address's path down the tree of the words ends at (Yosys' memory_map: the bits
    that would lead past the end read as 0), written out here from that rule."""
    def landing(address):
        word = 0
        for k in reversed(range(address_bits(words))):
            if address >> k & 1 and word + (1 << k) < words:
                word |= 1 << k
        return word

    memory, out = list(init or [0] * words), []
    for row in rows:
        out.append({f"rdata{p}": memory[landing(row[f"raddr{p}"])] for p in ports})
        if row["we"] and row["waddr"] < words:
            memory[row["waddr"]] = row["wdata"]
    return out


def suffixes(read_ports):
    return ["" if p == 0 else str(p) for p in range(read_ports)]


def traffic(words, width, read_ports, count, seed):
    """Random rows; a third of the reads are of the word written in the same row."""
    rng, n = random.Random(seed), address_bits(words)
    rows = []
    for _ in range(count):
        row = {"we": int(rng.random() < 0.6), "waddr": rng.randrange(1 << n),
               "wdata": rng.randrange(1 << width)}
        for p in suffixes(read_ports):
            row[f"raddr{p}"] = row["waddr"] if rng.random() < 0.3 else rng.randrange(1 << n)
        rows.append(row)
    return rows


def run(block, rows):
    alone = block.standalone()
    return evaluate(alone.config, alone.portmap, rows)


def test_every_two_row_program_of_a_two_word_file():
    """Every pair of rows of every input (we, waddr, wdata, raddr) of a 2 x 1 file, then a
    read of each word: 16 x 16 sequences back to back, so each starts from the state the one
    before left."""
    block = register_file(2, 1)
    inputs = [dict(zip(("we", "waddr", "wdata", "raddr"), v))
              for v in itertools.product((0, 1), repeat=4)]
    rows = [row for a, b in itertools.product(inputs, repeat=2)
            for row in (a, b, {"we": 0, "waddr": 0, "wdata": 0, "raddr": 0},
                        {"we": 0, "waddr": 0, "wdata": 0, "raddr": 1})]
    assert run(block, rows) == reference(2, [""], rows)


@pytest.mark.parametrize("words,width,read_ports", [
    (2, 3, 1), (4, 2, 1), (5, 3, 1), (8, 8, 1), (3, 2, 2), (4, 3, 2), (8, 4, 3)])
def test_random_traffic(words, width, read_ports):
    rows = traffic(words, width, read_ports, 400, seed=words * 100 + width * 10 + read_ports)
    block = register_file(words, width, read_ports)
    assert run(block, rows) == reference(words, suffixes(read_ports), rows)
    assert block.period == 2


def test_initial_contents_are_kept():
    init = [0x5A, 0x00, 0xFF, 0x81, 0x3C, 0x7E]
    rows = [{"we": 0, "waddr": 0, "wdata": 0, "raddr": a} for a in range(6)]
    rows += traffic(6, 8, 1, 300, seed=6)
    block = register_file(6, 8, init=init)
    assert run(block, rows) == reference(6, [""], rows, init)


def test_cells_per_bit():
    """The one-read-port array is 6 cells a bit; the decoders a column per address bit and
    one for we, on every row (module docstring)."""
    block = register_file(32, 16)
    array = 32 * 16 * 6
    decoder = 32 * 2 * (1 + 2 * 5)
    # the last word's and the last bit's passes are not needed
    assert array < block.cell_count <= array + decoder
    assert (block.width, block.height) == (1 + 2 * 5 + 3 * 16, 64)


def test_macro_and_refusals():
    block = build("register_file", words=4, width=2, read_ports=2)
    assert [p.name for p in block.ports] == ["we", "waddr", "wdata", "raddr", "rdata",
                                             "raddr1", "rdata1"]
    with pytest.raises(LibraryError, match="init needs 4 words of 2 bits"):
        register_file(4, 2, init=[0, 1, 2, 4])
    with pytest.raises(LibraryError, match="at most"):
        build("register_file", words=4096, width=64)


def test_without_write_enable_every_row_writes():
    rows = [{k: v for k, v in row.items() if k != "we"} for row in traffic(4, 3, 1, 200, 9)]
    block = build("register_file", words=4, width=3, write_enable=False, init=0b101_000_111_010)
    assert "we" not in [p.name for p in block.ports]
    assert run(block, rows) == reference(4, [""], [dict(r, we=1) for r in rows],
                                         [0b010, 0b111, 0b000, 0b101])


@pytest.mark.parametrize("words,width,read_ports", [(2, 1, 1), (4, 3, 1), (5, 4, 1), (16, 8, 1),
                                                    (8, 4, 2), (4, 3, 3)])
def test_rom_reads_its_table(words, width, read_ports):
    """Every address on every port (past the last word: 0) against the table."""
    rng = random.Random(words * 10 + width)
    table = [rng.randrange(1 << width) for _ in range(words)]
    table[0] |= 1                                      # not all 0
    n = address_bits(words)
    rows = [{f"raddr{p}": (a + 3 * i) % (1 << n) for i, p in enumerate(suffixes(read_ports))}
            for a in range(1 << n)] * 2
    block = build("rom", words=words, width=width, read_ports=read_ports,
                  init=sum(v << (i * width) for i, v in enumerate(table)))
    assert run(block, rows) == [
        {f"rdata{p}": table[read_word(words, row[f"raddr{p}"])]
         for p in suffixes(read_ports)} for row in rows]
    if read_ports == 1:       # a cell a bit, the decoder a column per address bit, and for
        # an odd number of words a row of passes that takes the read data to an even edge
        assert block.cell_count <= words * width + words * n + (words % 2) * width


def test_rom_of_zeros_is_refused():
    with pytest.raises(LibraryError, match="all 0"):
        build("rom", words=4, width=2, init=0)


@pytest.mark.parametrize("words,width,read_ports", [(2, 1, 1), (4, 3, 1), (8, 4, 2)])
def test_shared_address_reads_at_the_write_address(words, width, read_ports):
    """A single-port RAM: read port 1 reads word waddr before the row's write; the others
    their own addresses. Fewer cells than with its own decoder."""
    rows = traffic(words, width, read_ports, 300, seed=words + 40)
    block = register_file(words, width, read_ports, shared_address=True)
    assert "raddr" not in [p.name for p in block.ports]
    got = run(block, [{k: v for k, v in r.items() if k != "raddr"} for r in rows])
    assert got == reference(words, suffixes(read_ports), [dict(r, raddr=r["waddr"])
                                                          for r in rows])
    assert block.cell_count < register_file(words, width, read_ports).cell_count


@pytest.mark.parametrize("words", [3, 5, 6, 12, 24, 40])
def test_reads_past_the_end_land_where_yosys_memory_map_does(words):
    """read_word against the values Yosys' memory_map gives (measured on its netlists of
    these depths, 2026-12-06): past the end, each address bit that would lead past the
    last word reads as 0."""
    measured = {3: [2], 5: [4, 4, 4], 6: [4, 5], 12: [8, 9, 10, 11],
                24: list(range(16, 24)), 40: list(range(32, 40)) * 3}
    n = address_bits(words)
    assert [read_word(words, a) for a in range(words, 1 << n)] == measured[words]
    assert [read_word(words, a) for a in range(words)] == list(range(words))


def test_an_active_low_write_enable_writes_on_0():
    rows = traffic(4, 3, 1, 200, seed=77)
    block = build("register_file", words=4, width=3, we_low=True)
    assert run(block, [dict(r, we=1 - r["we"]) for r in rows]) == reference(4, [""], rows)


@pytest.mark.parametrize("words,width", [(2, 1), (4, 3), (5, 4), (16, 6)])
def test_first_row_gate(words, width):
    """A registered read (every input a row later, as the compiler applies it) shows
    first_row in row 0 and the read of the row before from row 1 on."""
    from bitgrid.ports import PortMap
    init = [(7 * i + 5) % (1 << width) for i in range(words)]
    start = (init[0] + 1) % (1 << width)
    alone = register_file(words, width, init=init, first_row=start).standalone()
    late = PortMap(alone.portmap.width, alone.portmap.height,
                   [p._replace(bits=tuple(b._replace(skew=b.skew + 2) for b in p.bits))
                    if p.direction == "in" else p for p in alone.portmap.ports],
                   period=2, latency=alone.portmap.latency, history=1)
    rows = traffic(words, width, 1, 150, seed=words + 90)
    rows = [dict(r, raddr=r["raddr"] % words, waddr=r["waddr"] % words) for r in rows]
    reads = reference(words, [""], rows, init)
    expected = [{"rdata": start}] + reads[:-1]
    assert evaluate(alone.config, late, rows) == expected
