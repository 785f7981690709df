# amaranth: UnusedElaboratable=no
"""The LUT-RAM primitives of bitgrid.boards.lutram against the inferred memory of the cell:
a formal proof with YoWASP Yosys (``miter -equiv`` plus ``sat``) that a cell built through a
platform's ``lut_ram_16x4`` factory, read with the primitive's simulation model from Yosys'
own techlibs (``+/ecp5/common_sim.vh``, which ``cells_sim.v`` includes, and ``+/gowin/cells_sim.v``), behaves as the cell with the
inferred :class:`amaranth.lib.memory.Memory` (which tests/hdl/test_synth.py proves equal to
flip-flop storage); the site limit that builds a grid's last rows in flip-flops, proved equal
as a whole grid to the grid with inferred memory; and the board platforms carrying the
factories."""

import random

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from bitgrid import Configuration
from bitgrid.boards import BOARDS, get_board
from bitgrid.boards.lutram import LUT_RAMS, gowin_ram16sdp4, trellis_dpr16x4, with_lut_ram
from bitgrid.hdl.cell import Cell
from bitgrid.hdl.grid import Grid
from support.gateware import prove_miter

#: family -> the simulation models of its primitives in Yosys' techlibs.
MODELS = {"ecp5": "+/ecp5/common_sim.vh", "gowin": "+/gowin/cells_sim.v"}


class _Platform:
    """Just what the cell and the grid ask a platform for."""

    def __init__(self, factory, sites=None):
        self.lut_ram_16x4 = factory
        self.lut_ram_sites = sites


class _WritableCell(wiring.Component):
    """A cell with its configuration port; readback compared while ``en`` is low only (the
    only time the Cell documents it)."""

    def __init__(self, word):
        self._word = word
        super().__init__({"i": In(4), "en": In(1), "o": Out(4), "cfg_addr": In(4),
                          "cfg_data": In(4), "cfg_we": In(1), "rdata": Out(4)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.cell = cell = Cell(storage="memory", init=self._word)
        m.d.comb += [
            cell.i.eq(self.i), cell.en.eq(self.en), self.o.eq(cell.o),
            cell.cfg_addr.eq(self.cfg_addr), cell.cfg_data.eq(self.cfg_data),
            cell.cfg_we.eq(self.cfg_we),
            self.rdata.eq(Mux(self.en, 0, cell.cfg_rdata)),
        ]
        return m


def primitive_equivalence(cwd, family, gold_word, gate_word, depth):
    """Prove with Yosys that the cell with inferred memory (``gold_word``) and the cell with
    ``family``'s primitive (``gate_word``) have equal outputs and readback for ``depth``
    cycles from their initial state, writes at any address at any time; True (proved) or
    False (counterexample)."""
    (cwd / "gold.il").write_text(rtlil.convert(_WritableCell(gold_word), name="gold"))
    (cwd / "gate.il").write_text(rtlil.convert(_WritableCell(gate_word), name="gate",
                                               platform=_Platform(LUT_RAMS[family])))
    return _prove_miter(cwd, family, depth)


def _prove_miter(cwd, family, depth):
    """Run Yosys' bounded equivalence proof of ``cwd/gold.il`` against ``cwd/gate.il`` (with
    ``family``'s primitive model) for ``depth`` cycles: True (proved) or False."""
    # The model is read as ordinary Verilog (not -lib): its behaviour is what is compared.
    # memory_map turns both memories into flip-flops with init values, which `sat` reads.
    # hierarchy derives the model with the cell's parameters (INITVAL, INIT_d); gold after.
    return prove_miter(f"read_rtlil gate.il; read_verilog {MODELS[family]}; "
                       "hierarchy -check -top gate; read_rtlil gold.il; proc; "
                       "miter -equiv -flatten -make_outputs gold gate miter; "
                       "hierarchy -top miter; memory_map; opt_clean; opt -full",
                       f"-seq {depth}", cwd=cwd)


@pytest.mark.parametrize("family", sorted(LUT_RAMS))
def test_primitive_equals_inferred_memory(tmp_path, family):
    """For a random configuration and for every write/read sequence of 6 cycles, the cell
    through the family's primitive gives the same outputs and readback as the inferred
    memory; a one-bit difference in the primitive's initial word (bit 41: word 10, LUT[1]) is
    found, so the proof can fail and the primitive's init bit order is the word view."""
    word = random.Random(0x1AB).getrandbits(64)
    assert primitive_equivalence(tmp_path, family, word, word, 6)
    assert not primitive_equivalence(tmp_path, family, word, word ^ (1 << 41), 6)


def test_primitive_init_layouts():
    """The init parameters of both primitives for the SPEC's pass-through word: ECP5's INITVAL
    is the word view; Gowin's INIT_d is the truth table of LUT[d] (N copies input S, E copies
    W, S copies N, W copies E: SPEC section 3's pass-through)."""
    from amaranth.hdl import Signal
    word = 0xFB73EA62D951C840
    ports = dict(read_addr=Signal(4), read_data=Signal(4), write_addr=Signal(4),
                 write_data=Signal(4), write_en=Signal())
    ecp5 = trellis_dpr16x4(init=word, **ports)
    assert ecp5.parameters["INITVAL"].value == word
    gowin = gowin_ram16sdp4(init=word, **ports)
    # Truth tables of single inputs: input k of address a is bit k of a.
    table = {k: sum(((a >> k) & 1) << a for a in range(16)) for k in range(4)}
    copies = {0: 2, 1: 3, 2: 0, 3: 1}
    for d in range(4):
        assert gowin.parameters[f"INIT_{d}"].value == table[copies[d]], d
    with pytest.raises(ValueError, match="64-bit word view"):
        trellis_dpr16x4(init=1 << 64, **ports)


def _instances(fragment_text, name):
    return fragment_text.count(f"cell \\{name} ")


def test_sites_turn_the_last_rows_to_flip_flops():
    """A platform with 9 sites and a 4 x 4 grid: the first two rows (8 cells) are primitives,
    the last two keep their configuration in flip-flops (a row is never split: not 9); with
    16 sites every cell is a primitive; a negative or non-integer site count is refused."""
    text = rtlil.convert(Grid(4, 4, storage="memory"), name="top",
                         platform=_Platform(gowin_ram16sdp4, 9))
    assert _instances(text, "RAM16SDP4") == 8
    assert "$mem" not in text
    assert text.count("wire width 64 ") >= 8
    assert rtlil.convert(Grid(4, 4, storage="memory"), name="top",
                         platform=_Platform(trellis_dpr16x4, 16)).count(
        "cell \\TRELLIS_DPR16X4 ") == 16
    for sites in (-1, 2.5, True):
        with pytest.raises(ValueError, match="non-negative"):
            with_lut_ram(type("P", (), {}), gowin_ram16sdp4, sites=sites)


def test_tang_nano_rows_beyond_224_sites_are_flip_flops():
    """The Tang Nano 9K platform (224 RAM16SDP4) builds a 16 x 16 grid with rows 0 to 13 in
    primitives and rows 14 and 15 in flip-flops; its 16 x 14 default is all primitives."""
    board = get_board("tangnano9k")
    for height, memory_rows in ((16, 14), (14, 14)):
        grid = Grid(16, height, storage="memory", pipelined=True)
        assert grid.storage_of_rows(board.platform()) == \
            ("memory",) * memory_rows + ("ff",) * (height - memory_rows)


def mixed_grid_equivalence(cwd, gold_config, gate_config, depth):
    """Prove with Yosys that a pipelined 2 x 4 grid on a Gowin platform with 4 LUT-RAM sites
    (rows 0 and 1 in RAM16SDP4, rows 2 and 3 in flip-flops; ``gate_config``) and the same
    grid in flip-flops only (``gold_config``) have equal outputs on every port for ``depth``
    cycles from power-up, any inputs on every port (steps, frame writes, commits, readback);
    True (proved) or False (counterexample)."""
    gold = Grid(2, 4, storage="ff", pipelined=True, init=gold_config)
    gate = Grid(2, 4, storage="memory", pipelined=True, init=gate_config)
    (cwd / "gold.il").write_text(rtlil.convert(gold, name="gold"))
    (cwd / "gate.il").write_text(rtlil.convert(gate, name="gate",
                                               platform=_Platform(gowin_ram16sdp4, 4)))
    return _prove_miter(cwd, "gowin", depth)


def test_mixed_grid_equals_flip_flop_grid(tmp_path):
    """The board's mixed grid (primitive rows and flip-flop rows, pipelined) is the all
    flip-flop grid for 4 cycles of any inputs from power-up; a one-bit difference in a
    primitive row's configuration (cell (1, 1), bit 21) is found."""
    config = Configuration.random(2, 4, seed=0x3D)
    other = config.copy()
    other.set_word(1, 1, config.word(1, 1) ^ (1 << 21))
    assert mixed_grid_equivalence(tmp_path, config, config, 4)
    assert not mixed_grid_equivalence(tmp_path, config, other, 4)


def test_board_platforms_carry_the_factories():
    """The ECP5 and Gowin boards instantiate their family's primitive; iCE40 has none; a
    platform subclass keeps its class name (amaranth-boards and the tests name them)."""
    for board in BOARDS.values():
        platform = board.platform()
        factory = getattr(platform, "lut_ram_16x4", None)
        if board.family == "ice40":
            assert factory is None
        else:
            assert getattr(factory, "factory", factory) is LUT_RAMS[board.family], board.name
    cls = with_lut_ram(type("P", (), {}), trellis_dpr16x4, sites=3)
    assert cls.__name__ == "P" and cls().lut_ram_sites == 3
    assert cls().lut_ram_16x4 is trellis_dpr16x4
