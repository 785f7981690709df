"""Blocks: placing, claiming cells, the errors, the timing at odd offsets, and the promise that
a block reads and drives nothing outside its ports (so blocks can sit side by side)."""

import random

import pytest

from bitgrid.cell import lut_from_function
from bitgrid.config import Configuration
from bitgrid.emulator import Emulator
from bitgrid.evaluate import evaluate
from bitgrid.library import MACROS, Block, LibraryError, build
from bitgrid.ports import PortMap
from bitgrid.program import Program
from bitgrid.terms import DIRECTIONS, Edges, side_lanes

from support.library import input_stream, read_rows

#: One build per macro with its default parameters, plus small variants.
BLOCKS = [(name, {}) for name in MACROS] + [
    ("multiplier", {"bits": 3}), ("adder", {"bits": 3, "carry_in": True}),
    ("wire", {"heading": "N", "length": 3, "bits": 2}), ("counter", {"bits": 3})]


def _rows(block, count, seed):
    rng = random.Random(seed)
    return [{p.name: rng.randrange(1 << p.width) for p in block.inputs} for _ in range(count)]


@pytest.mark.parametrize("name,params", BLOCKS)
def test_ports_alone_decide_the_outputs(name, params):
    """Random bits on every lane that is no input port change no output, and every output lane
    that is no output port stays 0 on every subcycle."""
    block = build(name, **params)
    alone = block.standalone()
    portmap, config = alone.portmap, alone.config
    rows = _rows(block, 24, 1)
    clean = input_stream(portmap, rows)
    used_in = {(b.side, b.lane) for p in portmap.inputs for b in p.bits}
    used_out = {(b.side, b.lane) for p in portmap.outputs for b in p.bits}
    rng = random.Random(2)
    noisy = []
    for edges in clean:
        words = list(edges)
        for side in DIRECTIONS:
            for lane in range(side_lanes(side, config.width, config.height)):
                if (side, lane) not in used_in and rng.random() < 0.5:
                    words[side] |= 1 << lane
        noisy.append(Edges(*words))
    quiet = Emulator(config).run(clean)
    loud = Emulator(config).run(noisy)
    assert read_rows(portmap, loud, len(rows)) == read_rows(portmap, quiet, len(rows))
    for edges in loud:
        for side in DIRECTIONS:
            for lane in range(side_lanes(side, config.width, config.height)):
                if (side, lane) not in used_out:
                    assert not (edges[side] >> lane) & 1, (side, lane)


@pytest.mark.parametrize("name,params", [("comparator", {"bits": 2}), ("inverter", {"bits": 3}),
                                         ("delay", {"subcycles": 2, "bits": 3}),
                                         ("text_stream", {"lanes": 3, "length": 4})])
def test_odd_offset_adds_one_subcycle(name, params):
    """Placed one row down (an odd offset, every cell's parity swapped), the same input skews
    work and every output comes exactly one subcycle later (Block.timing_at)."""
    block = build(name, **params)
    assert block.height % 2 == 1 and all(b.side.letter != "N" for p in block.ports
                                         for b in p.bits)
    width, height = block.width + block.width % 2, block.height + 1
    program = Program(width, height)
    assert block.place(program, 0, 1) == block.latency + 1 == block.timing_at(0, 1)
    extra = width - block.width                 # E outputs carried to the edge by pass cells
    ports = []
    for port in block.ports:
        bits = []
        for bit in port.bits:
            x, y = block.bit_cell(bit, 0, 1)
            skew = bit.skew
            if bit.side.letter == "E" and extra:
                assert port.direction == "out"
                program.route(x + 1, y, "E", extra)
                skew += extra
            lane = y if bit.side.letter in "WE" else x
            bits.append({"side": bit.side.letter, "lane": lane, "skew": skew})
        ports.append({"name": port.name, "direction": port.direction, "bits": bits})
    moved = PortMap(width, height, ports, period=2, latency=block.latency + 1)
    alone = block.standalone()
    rows = _rows(block, 40, 5)
    expected = evaluate(alone.config, alone.portmap, rows)
    assert evaluate(program.config, moved, rows) == expected
    # ... and one subcycle earlier is not enough for some row.
    assert evaluate(program.config, moved.replace(latency=block.latency), rows) != expected


def test_place_claims_the_box_and_refuses_overlap_and_the_edge():
    block = build("adder", bits=4)
    program = Program(4, 6)
    block.place(program, 1, 1)
    for y in range(1, 5):
        assert program.tables(1, y) == block.tables(0, y - 1)
        assert len(program.configured(1, y)) == 4
    before = program.config
    with pytest.raises(LibraryError, match=r"at \(1, 2\) overlaps cell \(1, 2\)"):
        block.place(program, 1, 2)
    with pytest.raises(LibraryError, match=r"\(1 x 4 cells\) at \(3, 3\) does not fit the "
                                           r"4 x 6 grid"):
        block.place(program, 3, 3)
    with pytest.raises(LibraryError, match="does not fit"):
        block.place(program, -1, 0)
    with pytest.raises(TypeError, match="Program"):
        block.place(before, 0, 0)
    assert program.config == before
    # The claimed cells refuse routes too.
    with pytest.raises(ValueError, match="already configured"):
        program.route(0, 2, "E")


def test_two_blocks_side_by_side_run_as_each_alone():
    """A counter with a comparator right under it (the counter's carry output runs into the
    comparator's box, whose cells do not read it): each gives, row for row, what it gives
    alone."""
    top = build("counter", bits=2).standalone()           # 2 x 2 grid, en on N
    bottom = build("comparator", bits=1).standalone()     # 2 x 2 grid
    config = Configuration(2, 4)
    config.luts[0:2] = top.config.luts
    config.luts[2:4] = bottom.config.luts
    ports = [top.portmap["en"].to_json(), top.portmap["count"].to_json()]
    for p in bottom.portmap.ports:
        entry = p.to_json()
        entry["name"] = "c_" + entry["name"]
        for bit in entry["bits"]:
            if bit["side"] in "WE":
                bit["lane"] += 2
            if entry["direction"] == "out":      # one latency for both: read later by skew
                bit["skew"] = bit.get("skew", 0) + bottom.portmap.latency - top.portmap.latency
        ports.append(entry)
    both = PortMap(2, 4, ports, period=2, latency=top.portmap.latency)
    rng = random.Random(4)
    rows = [{"en": rng.randrange(2), "c_a": rng.randrange(2), "c_b": rng.randrange(2)}
            for _ in range(60)]
    together = evaluate(config, both, rows)
    alone_1 = evaluate(top.config, top.portmap, [{"en": r["en"]} for r in rows])
    alone_2 = evaluate(bottom.config, bottom.portmap,
                       [{"a": r["c_a"], "b": r["c_b"]} for r in rows])
    assert [r["count"] for r in together] == [r["count"] for r in alone_1]
    assert [(r["c_lt"], r["c_eq"], r["c_gt"]) for r in together] == \
        [(r["lt"], r["eq"], r["gt"]) for r in alone_2] == \
        [(int(r["c_a"] < r["c_b"]), int(r["c_a"] == r["c_b"]), int(r["c_a"] > r["c_b"]))
         for r in rows]


@pytest.mark.parametrize("kwargs,message", [
    ({"bits": 0}, r"multiplier parameter bits must be an integer from 2 to 64, not 0"),
    ({"bits": "8"}, r"not '8'"),
    ({"size": 8}, r"Macro multiplier has no parameter 'size'; its parameters are bits")])
def test_parameters_are_checked(kwargs, message):
    with pytest.raises(LibraryError, match=message):
        build("multiplier", **kwargs)


def test_unknown_macro_and_choices():
    with pytest.raises(LibraryError, match=r"No macro 'mul'; the macros are wire, turn"):
        build("mul")
    with pytest.raises(LibraryError, match=r"heading must be one of 'N', 'E', 'S', 'W'"):
        build("wire", heading="X")
    with pytest.raises(LibraryError, match="perpendicular"):
        build("turn", source="W", dest="E")
    with pytest.raises(LibraryError, match=r"value must fit 2 bits \(0..3\)"):
        build("constant", value=4, bits=2)
    # A box of more than 65,536 cells is refused before anything is built, for every macro
    # whose parameters could ask for one; 65,536 itself is allowed.
    for name, params in (("wire", {"length": 4096, "bits": 4096}),
                         ("wire", {"length": 257, "bits": 256, "heading": "N"}),
                         ("delay", {"subcycles": 4096, "bits": 17}),
                         ("text_stream", {"lanes": 17, "length": 4096})):
        with pytest.raises(LibraryError, match="a block has at most 65,536"):
            build(name, **params)
    from bitgrid.library.basic import check_box
    check_box("delay(subcycles=4096, bits=16)", 4096, 16)      # exactly 65,536: allowed


def test_blocks_refuse_leaks_and_unpipelined_cells():
    copy_w = 0xFF00
    with pytest.raises(LibraryError, match=r"reads input W from outside the box, lane W0, "
                                           r"which is no input port"):
        Block("leak", 1, 1, {(0, 0): (0, copy_w, 0, 0)}, [("out", "out", [("E", 0)])])
    with pytest.raises(LibraryError, match=r"output S of cell \(0, 0\) leaves the box on lane "
                                           r"S0, which is no output port"):
        Block("spill", 1, 1, {(0, 0): (0, copy_w, copy_w, 0)},
              [("in", "in", [("W", 0)]), ("out", "out", [("E", 0)])])
    # Cell (1, 0) reads a directly (W) and through two more cells (S): not one design cycle.
    cells = {(0, 0): (0, lut_from_function(lambda w: w), lut_from_function(lambda w: w), 0),
             (0, 1): (0, lut_from_function(lambda n: n), 0, 0),
             (1, 1): (lut_from_function(lambda w: w), 0, 0, 0),
             (1, 0): (0, lut_from_function(lambda w, s: w ^ s), 0, 0)}
    with pytest.raises(LibraryError, match=r"inputs of cell \(1, [01]\) do not come from the "
                                           r"same design cycle \(paths differ by 2"):
        Block("skewed", 2, 2, cells, [("in", "in", [("W", 0)]), ("out", "out", [("E", 0)])])


def test_macro_descriptions():
    for macro in MACROS.values():
        assert macro.doc and "\n" not in macro.doc
        for param in macro.params:
            assert param.describe().startswith(f"{param.name}: ")
        block = macro.build()
        configured = sum(any(block.tables(x, y)) for x in range(block.width)
                         for y in range(block.height))            # counted over the box
        assert block.doc and block.cell_count == configured
        assert block.period == 2


def test_adder_refuses_a_sum_wider_than_a_port():
    # The sum of a bits-bit adder has bits + 1 bits (the carry out) and a port at most 4096, so
    # bits=4096 is refused by the parameter's own range, not later by the port map.
    with pytest.raises(LibraryError, match=r"adder parameter bits must be an integer from 1 to "
                                           r"4095, not 4096"):
        build("adder", bits=4096)
    block = build("adder", bits=4095)
    assert [len(p.bits) for p in block.ports if p.name == "sum"] == [4096]
