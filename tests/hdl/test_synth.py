"""Synthesis and formal checks with YoWASP Yosys on the Amaranth RTLIL of the cell and the grid:
technology mapping per FPGA family, equivalence of the two storage back ends (``miter -equiv``
plus ``sat``, no external solver), and the grid's wiring read from the netlist.

Figures measured with the same helpers are in docs/resources.md (``python
tests/support/gateware.py`` measures them again)."""

import json
import random

import pytest
from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid.hdl.cell import Cell
from bitgrid.hdl.grid import Grid
from bitgrid.hdl.verilog import grid_verilog
from support.gateware import summarize, synth_stat, write_rtlil, yosys

PASS_THROUGH_WORD = 0xFB73EA62D951C840
REFLECTOR_WORD = 0xFEDCBA9876543210


# --- Technology mapping --------------------------------------------------------------------------

def test_memory_cell_ecp5(tmp_path):
    """storage="memory" maps to exactly one TRELLIS_DPR16X4 plus the 4 output flip-flops; the
    only logic is the read-address multiplexer (LUT address or configuration address)."""
    counts = synth_stat(Cell(storage="memory", init=PASS_THROUGH_WORD), "ecp5", cwd=tmp_path)
    assert counts["TRELLIS_DPR16X4"] == 1
    assert counts["TRELLIS_FF"] == 4
    assert set(counts) <= {"TRELLIS_DPR16X4", "TRELLIS_FF", "LUT4"}, counts
    assert counts.get("LUT4", 0) <= 4, counts


def test_memory_cell_gowin(tmp_path):
    """On Gowin the same cell maps to one RAM16SDP4 plus 4 flip-flops."""
    counts = synth_stat(Cell(storage="memory", init=REFLECTOR_WORD), "gowin", cwd=tmp_path)
    groups = summarize(counts)
    assert counts["RAM16SDP4"] == 1
    assert groups["FF"] == 4, counts
    assert groups["LUT"] <= 4 and groups["MUX"] == 0 and groups["other"] == 0, counts


def test_ff_cell_ice40(tmp_path):
    """storage="ff" on iCE40: 64 configuration flip-flops plus 4 output flip-flops, and the
    LUT4s for write decoding and the one shared 16:1 read multiplexer (81 with Yosys 0.70; see
    docs/resources.md). The bound catches a mapping that blows up, e.g. lost enables."""
    counts = synth_stat(Cell(storage="ff", init=PASS_THROUGH_WORD), "ice40", cwd=tmp_path)
    groups = summarize(counts)
    assert groups["FF"] == 68, counts
    assert counts["SB_DFFE"] == 64, counts            # configuration: enable, no reset
    assert 40 <= groups["LUT"] <= 100, counts
    assert groups["other"] == 0, counts


def test_memory_grid_ecp5(tmp_path):
    """A 4 x 4 grid with LUT-RAM storage: one TRELLIS_DPR16X4 per cell."""
    counts = synth_stat(Grid(4, 4, storage="memory"), "ecp5", cwd=tmp_path)
    assert counts["TRELLIS_DPR16X4"] == 16


@pytest.mark.slow
def test_storage_cost_ecp5_8x8(tmp_path):
    """8 x 8 on ECP5: the flip-flop back end costs exactly 64 flip-flops per cell more than the
    LUT-RAM back end (everything else is shared), and LUT-RAM uses one DPR16X4 per cell."""
    ff = synth_stat(Grid(8, 8, storage="ff"), "ecp5", cwd=tmp_path, name="grid_ff")
    mem = synth_stat(Grid(8, 8, storage="memory"), "ecp5", cwd=tmp_path, name="grid_mem")
    assert mem["TRELLIS_DPR16X4"] == 64
    assert "TRELLIS_DPR16X4" not in ff
    assert ff["TRELLIS_FF"] - mem["TRELLIS_FF"] == 64 * 64


# --- Formal equivalence of the storage back ends -------------------------------------------------

class _FixedCell(wiring.Component):
    """A cell whose configuration port is tied off: the LUT behaviour alone."""

    def __init__(self, storage, word):
        self._storage, self._word = storage, word
        super().__init__({"i": In(4), "en": In(1), "o": Out(4)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.cell = cell = Cell(storage=self._storage, init=self._word)
        m.d.comb += [cell.i.eq(self.i), cell.en.eq(self.en), self.o.eq(cell.o)]
        return m


class _WritableCell(wiring.Component):
    """A cell with its configuration port; readback is compared only while en is low (the
    only time the Cell documents it)."""

    def __init__(self, storage, word):
        self._storage, self._word = storage, word
        super().__init__({"i": In(4), "en": In(1), "o": Out(4), "cfg_addr": In(4),
                          "cfg_data": In(4), "cfg_we": In(1), "rdata": Out(4)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.cell = cell = Cell(storage=self._storage, init=self._word)
        m.d.comb += [
            cell.i.eq(self.i), cell.en.eq(self.en), self.o.eq(cell.o),
            cell.cfg_addr.eq(self.cfg_addr), cell.cfg_data.eq(self.cfg_data),
            cell.cfg_we.eq(self.cfg_we),
            self.rdata.eq(Mux(self.en, 0, cell.cfg_rdata)),
        ]
        return m


def storage_equivalence(cwd, wrapper, gold_word, gate_word, sat_options):
    """Prove with Yosys that ``wrapper("ff", gold_word)`` and ``wrapper("memory", gate_word)``
    have equal outputs; returns True (proved) or False (counterexample found)."""
    write_rtlil(wrapper("ff", gold_word), "gold", cwd / "gold.il")
    write_rtlil(wrapper("memory", gate_word), "gate", cwd / "gate.il")
    (cwd / "result.txt").unlink(missing_ok=True)
    # memory_map turns the $mem into flip-flops with init values, which `sat` understands.
    # Without -verify, `sat` reports a failed proof in its log instead of as an error.
    yosys("read_rtlil gold.il; read_rtlil gate.il; proc; memory_map; opt_clean; "
          "miter -equiv -flatten -make_outputs gold gate miter; hierarchy -top miter; "
          f"opt -full; tee -q -o result.txt sat {sat_options} -prove trigger 0 miter",
          cwd=cwd, outputs=["result.txt"])
    text = (cwd / "result.txt").read_text()
    proved = "SUCCESS!" in text
    failed = "FAIL!" in text
    assert proved != failed, f"unexpected sat output:\n{text[-2000:]}"
    return proved


def test_storage_equivalence_lut(tmp_path):
    """Without configuration writes, the two back ends with the same configuration behave the
    same for ever (temporal induction), for the SPEC's reference cells and random words; a
    one-bit difference in the configuration is found (the check can fail)."""
    rng = random.Random(0x5A7)
    words = [PASS_THROUGH_WORD, REFLECTOR_WORD] + [rng.getrandbits(64) for _ in range(2)]
    induction = "-tempinduct -seq 1 -set-init-zero"
    for word in words:
        assert storage_equivalence(tmp_path, _FixedCell, word, word, induction), hex(word)
    assert not storage_equivalence(tmp_path, _FixedCell, words[2], words[2] ^ (1 << 37),
                                   induction)


@pytest.mark.parametrize("depth", [
    8,
    pytest.param(20, marks=pytest.mark.slow),
])
def test_storage_equivalence_with_writes(tmp_path, depth):
    """With the configuration port free (writes at any address, any time), the two back ends
    give the same outputs and readback for ``depth`` cycles from the same configuration
    (bounded check from the initial state: a write followed by a read or an update needs two);
    a one-bit difference is found."""
    word = random.Random(0xB0B).getrandbits(64)
    assert storage_equivalence(tmp_path, _WritableCell, word, word, f"-seq {depth}")
    assert not storage_equivalence(tmp_path, _WritableCell, word, word ^ (1 << 63),
                                   f"-seq {depth}")


# --- Netlist structure ---------------------------------------------------------------------------

def test_grid_wiring_from_netlist(tmp_path):
    """Read the shipped Verilog of a 4 x 6 grid (hierarchy kept) and check, for the instance of
    every cell, that each input is driven by the right neighbour's output or edge input bit,
    that the edge outputs are the right cells' outputs (SPEC section 2), and that the cells
    of each parity share one enable, distinct from the other parity's (SPEC section 4)."""
    width, height = 4, 6
    # The Verilog that the project ships (bitgrid verilog, the simulators): every cell is an
    # instance of the one cell module.
    (tmp_path / "grid.v").write_text(grid_verilog(width, height, storage="memory"))
    yosys("read_verilog grid.v; hierarchy -top bitgrid_grid; proc; opt_clean; "
          "write_json grid.json", cwd=tmp_path, outputs=["grid.json"])
    design = json.loads((tmp_path / "grid.json").read_text())
    top = design["modules"]["bitgrid_grid"]
    assert "bitgrid_cell_memory" in design["modules"]
    ports = {name: port["bits"] for name, port in top["ports"].items()}
    cells = {}
    for y in range(height):
        for x in range(width):
            instance = top["cells"][f"cell_{x}_{y}"]
            assert instance["type"] == "bitgrid_cell_memory", instance["type"]
            cells[x, y] = instance["connections"]
    assert len([c for c in top["cells"] if c.startswith("cell_")]) == width * height

    N, E, S, W = range(4)

    def output(x, y, d):
        return cells[x, y]["o"][d]

    for (x, y), conn in cells.items():
        i = conn["i"]
        assert len(i) == 4 and len(conn["o"]) == 4
        assert i[N] == (output(x, y - 1, S) if y > 0 else ports["i__n"][x]), (x, y, "N")
        assert i[E] == (output(x + 1, y, W) if x < width - 1 else ports["i__e"][y]), (x, y, "E")
        assert i[S] == (output(x, y + 1, N) if y < height - 1 else ports["i__s"][x]), (x, y, "S")
        assert i[W] == (output(x - 1, y, E) if x > 0 else ports["i__w"][y]), (x, y, "W")
        # Every output bit is its own net: no output is shorted to another signal.
        assert len(set(conn["o"])) == 4
    for x in range(width):
        assert ports["o__n"][x] == output(x, 0, N)
        assert ports["o__s"][x] == output(x, height - 1, S)
    for y in range(height):
        assert ports["o__w"][y] == output(0, y, W)
        assert ports["o__e"][y] == output(width - 1, y, E)
    # All output nets are distinct across the grid, so the equalities above are not by accident.
    all_outputs = [b for conn in cells.values() for b in conn["o"]]
    assert len(set(all_outputs)) == 4 * width * height
    enables = {p: {cells[x, y]["en"][0] for (x, y) in cells if (x + y) % 2 == p} for p in (0, 1)}
    assert len(enables[0]) == 1 and len(enables[1]) == 1
    assert enables[0] != enables[1]
    assert not set().union(*enables.values()) & set(all_outputs)


def test_verilog_writes_each_cell_module_once():
    """The shipped Verilog holds one module per distinct power-up configuration, and one
    instance per cell, so its size follows the cell count (not Amaranth's submodules)."""
    from bitgrid.cell import tables_to_word
    from bitgrid.examples import adder
    config = adder(8).config
    text = grid_verilog(8, 8, storage="ff", init=config)
    distinct = {tables_to_word(config[x, y]) for x in range(8) for y in range(8)}
    names = {"bitgrid_cell_ff" if word == 0 else f"bitgrid_cell_ff_{word:016x}"
             for word in distinct}
    assert len(names) == 2      # rows of pass-east cells, then the full-adder column
    for name in names:
        assert text.count(f"\nmodule {name}(") == 1
    assert sum(text.count(f"\n  {name} cell_") for name in names) == 64
    plain = grid_verilog(8, 8, storage="ff")
    assert plain.count("\nmodule bitgrid_cell_ff(") == 1
    assert plain.count("\n  bitgrid_cell_ff cell_") == 64
