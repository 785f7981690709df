"""Meshes in software (model/mesh.py): mesh shapes, slicing and joining configurations and BGBS
bitstreams, the mesh's edge buses against each chip's, and the reference mesh emulator.

The reference mesh (one emulator per chip, inner lanes exchanged every subcycle) must compute
what one big grid computes, in every edge output and every cell state (SPEC section 8): that is
the software proof that slicing is right, independent of the gateware.
``test_emulator_contract.py`` runs it, in several mesh shapes, through the cases every emulator
shares; here are what only the mesh has. Expected tiles and lanes are built here by hand from
loops over cells and lanes.
"""

import random

import pytest

from bitgrid import Bitstream, BitstreamError, Configuration, Edges, Emulator, ScanOrder
from bitgrid import bitstream as bgbs
from bitgrid.mesh import (MeshEmulator, MeshError, MeshShape, chip_filename, join_bitstreams,
                          join_configurations, join_edges, parse_chip_filename,
                          slice_bitstream, slice_configuration, split_edges, write_slices)
from support.conformance import load_conformance

# -- MeshShape ---------------------------------------------------------------------------------


def test_parse_and_str():
    assert MeshShape.parse("2x2") == MeshShape(2, 2)
    assert MeshShape.parse(" 4X1 ") == MeshShape(4, 1)
    assert MeshShape.parse(MeshShape(1, 3)) == MeshShape(1, 3)
    assert str(MeshShape(4, 2)) == "4x2"
    assert len(MeshShape(4, 2)) == 8


@pytest.mark.parametrize("text", ["2", "2x", "x2", "0x2", "2x0", "-1x2", "2x2x2", "axb", "",
                                  "2.5x2"])
def test_parse_rejects_naming_the_text(text):
    with pytest.raises(ValueError) as info:
        MeshShape.parse(text)
    assert str(info.value) == (f"mesh {text!r} is not of the form COLSxROWS (chips across x "
                               "chips down, both at least 1), for example 2x2")


@pytest.mark.parametrize("cols, rows, name, value", [
    (0, 1, "cols", 0), (1, 0, "rows", 0), (-2, 2, "cols", -2), (1.0, 2, "cols", 1.0),
    (True, 2, "cols", True), ("2", 2, "cols", "2")])
def test_shape_validated(cols, rows, name, value):
    with pytest.raises(ValueError) as info:
        MeshShape(cols, rows)
    assert str(info.value) == f"Mesh {name} must be an integer of at least 1, not {value!r}"


def test_chips_row_major_and_neighbours():
    shape = MeshShape(3, 2)
    assert list(shape.chips()) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
    assert (2, 1) in shape and (3, 0) not in shape and (0, -1) not in shape
    assert shape.neighbour((0, 0), "E") == (1, 0)
    assert shape.neighbour((0, 0), "S") == (0, 1)
    assert shape.neighbour((0, 0), "N") is None
    assert shape.neighbour((2, 1), "E") is None
    assert shape.neighbour((2, 1), "w") == (1, 1)
    assert shape.neighbour((2, 1), "north") == (2, 0)
    with pytest.raises(ValueError) as info:
        shape.neighbour((0, 0), "X")
    assert str(info.value) == "Unknown side 'X'; use one of N, E, S, W"
    assert list(shape.links()) == [((0, 0), "E", (1, 0)), ((0, 0), "S", (0, 1)),
                                   ((1, 0), "E", (2, 0)), ((1, 0), "S", (1, 1)),
                                   ((2, 0), "S", (2, 1)), ((0, 1), "E", (1, 1)),
                                   ((1, 1), "E", (2, 1))]


def test_tile_size():
    assert MeshShape(2, 2).tile_size(8, 8) == (4, 4)
    assert MeshShape(1, 2).tile_size(2, 16) == (2, 8)
    assert MeshShape(4, 4).tile_size(32, 32) == (8, 8)
    assert MeshShape(1, 1).tile_size(6, 2) == (6, 2)


def test_tile_size_errors_say_what_to_do():
    with pytest.raises(ValueError) as info:
        MeshShape(3, 1).tile_size(8, 8)
    assert str(info.value) == (
        "a grid 8 cells in width does not split into 3 chip columns of equal size; use a mesh "
        "whose column count divides 8 with an even quotient (for 8 cells: 1, 2, 4)")
    with pytest.raises(ValueError) as info:
        MeshShape(1, 4).tile_size(8, 4)
    assert str(info.value) == (
        "4 chip rows would make tiles 1 cell in height: tiles need an even width and height "
        "to keep the phase parity of the logical grid (SPEC section 4); use a mesh whose row "
        "count divides 4 with an even quotient (for 4 cells: 1, 2)")
    with pytest.raises(ValueError, match="2 chip columns would make tiles 1 cell in width"):
        MeshShape(2, 1).tile_size(2, 2)
    with pytest.raises(ValueError, match="no chip count splits 6 cells into even tiles|"
                                         "for 6 cells: 1, 3"):
        MeshShape(2, 1).tile_size(6, 2)


# -- Configurations ----------------------------------------------------------------------------

def test_slice_configuration_by_hand():
    config = Configuration.random(8, 4, seed=5)
    tiles = slice_configuration(config, MeshShape(2, 1))
    assert list(tiles) == [(0, 0), (1, 0)]
    for (col, row), tile in tiles.items():
        assert (tile.width, tile.height) == (4, 4)
        for y in range(4):
            for x in range(4):
                assert tile[x, y] == config[col * 4 + x, row * 4 + y]


@pytest.mark.parametrize("size, mesh", [((8, 8), "2x2"), ((8, 8), "2x1"), ((8, 8), "1x2"),
                                        ((16, 8), "4x2"), ((32, 32), "4x4"), ((12, 6), "3x1"),
                                        ((2, 2), "1x1")])
def test_join_inverts_slice(size, mesh):
    config = Configuration.random(*size, seed=sum(size))
    tiles = slice_configuration(config, mesh)
    assert len(tiles) == len(MeshShape.parse(mesh))
    assert join_configurations(tiles, mesh) == config
    # and the other way round: slicing the join gives the same tiles
    again = slice_configuration(join_configurations(tiles, mesh), mesh)
    assert all(again[chip] == tiles[chip] for chip in tiles)


def test_join_configurations_errors():
    config = Configuration.random(8, 8, seed=1)
    tiles = slice_configuration(config, "2x2")
    missing = dict(tiles)
    del missing[(1, 0)], missing[(1, 1)]
    with pytest.raises(MeshError) as info:
        join_configurations(missing, "2x2")
    assert str(info.value) == ("missing tiles c1r0, c1r1 of the 2x2 mesh; every chip "
                               "(col, row) needs one")
    extra = dict(tiles)
    extra[(2, 0)] = tiles[(0, 0)]
    with pytest.raises(MeshError) as info:
        join_configurations(extra, "2x2")
    assert str(info.value) == ("tile c2r0 is outside the 2x2 mesh (columns 0..1, rows 0..1); "
                               "check --mesh")
    wrong = dict(tiles)
    wrong[(1, 1)] = Configuration(2, 4)
    with pytest.raises(MeshError) as info:
        join_configurations(wrong, "2x2")
    assert str(info.value) == ("tile c1r1 is 2 x 4 cells, tile c0r0 is 4 x 4: all tiles of a "
                               "mesh have the same size; slice the logical bitstream again")


def test_slice_keeps_unconfigured_walls():
    config = Configuration(4, 4)
    config[3, 0] = (1, 2, 3, 4)
    tiles = slice_configuration(config, "2x2")
    assert tiles[(1, 0)][1, 0] == (1, 2, 3, 4)
    assert not tiles[(0, 0)].luts.any() and not tiles[(0, 1)].luts.any()


# -- Bitstreams --------------------------------------------------------------------------------

def test_chip_filenames():
    assert chip_filename("adder", 1, 0) == "adder.c1r0.bgbs"
    assert parse_chip_filename("out/adder.c1r0.bgbs") == (1, 0)
    assert parse_chip_filename("x.c12r3.BGBS") == (12, 3)
    assert parse_chip_filename("adder.bgbs") is None
    assert parse_chip_filename("adder.c1.bgbs") is None


@pytest.mark.parametrize("order", list(ScanOrder))
def test_bitstream_slices_keep_scan_order(order, tmp_path):
    config = Configuration.random(8, 4, seed=int(order))
    path = tmp_path / "logic.bgbs"
    bgbs.save(path, config, order)
    slices = slice_bitstream(str(path), "2x2")
    assert all(bs.order == order for bs in slices.values())
    assert slices[(1, 1)].config == config.region(4, 2, 4, 2)
    paths = write_slices(str(path), "2x2", str(tmp_path))
    assert [p.rsplit("/", 1)[1] for p in paths.values()] == [
        "logic.c0r0.bgbs", "logic.c1r0.bgbs", "logic.c0r1.bgbs", "logic.c1r1.bgbs"]
    for chip, p in paths.items():
        assert bgbs.load(p).order == order
        assert open(p, "rb").read() == slices[chip].to_bytes()
    joined = join_bitstreams(list(paths.values()), "2x2")
    assert joined.order == order
    assert joined.to_bytes() == path.read_bytes()
    # by position, in any order of the list
    joined = join_bitstreams(list(reversed(list(paths.values()))), "2x2")
    assert joined.to_bytes() == path.read_bytes()


@pytest.mark.parametrize("name, mesh", [("random_8x8", "2x2"), ("random_32x32", "2x2"),
                                        ("random_32x32", "4x4"), ("adder8", "1x2"),
                                        ("adder8_colmajor", "1x2"), ("adder8_snake", "1x2"),
                                        ("edge_io_hello", "2x2"), ("identity_we_9lane", "2x1")])
def test_conformance_bitstreams_round_trip(name, mesh):
    case = load_conformance(name)
    original = open(case.bitstream_path, "rb").read()
    slices = slice_bitstream(case.bitstream_path, mesh)
    joined = join_bitstreams({chip: bs for chip, bs in slices.items()}, mesh)
    assert joined.to_bytes() == original


def test_join_bitstreams_errors(tmp_path):
    config = Configuration.random(4, 4, seed=2)
    slices = slice_bitstream(Bitstream(config), "2x2")
    with pytest.raises(MeshError, match=r"^missing tile c0r1 of the 2x2 mesh"):
        join_bitstreams({c: b for c, b in slices.items() if c != (0, 1)}, "2x2")
    mixed = dict(slices)
    mixed[(1, 1)] = Bitstream(slices[(1, 1)].config, ScanOrder.SNAKE)
    with pytest.raises(MeshError) as info:
        join_bitstreams(mixed, "2x2")
    assert str(info.value) == ("the tiles have different scan orders (c0r0 row-major, c1r0 "
                               "row-major, c0r1 row-major, c1r1 snake); choose the order of "
                               "the joined bitstream")
    assert join_bitstreams(mixed, "2x2", order="snake").config == config
    with pytest.raises(MeshError, match="x.bgbs: cannot tell which chip it is for; chip files are named "
                                        "<stem>.c<col>r<row>.bgbs"):
        join_bitstreams(["x.bgbs"], "1x1")
    with pytest.raises(MeshError, match=r"^b/t.c0r0.bgbs and a/t.c0r0.bgbs are both for chip \(0, 0\); give one file per chip$"):
        join_bitstreams(["b/t.c0r0.bgbs", "a/t.c0r0.bgbs"], "1x1")
    bad = tmp_path / "t.c0r0.bgbs"
    bad.write_bytes(b"BGBX" + bytes(20))
    with pytest.raises(BitstreamError, match="bad magic"):
        join_bitstreams([str(bad)], "1x1")


def test_slice_bitstream_size_error():
    with pytest.raises(ValueError, match="does not split into 3 chip columns"):
        slice_bitstream(Bitstream(Configuration(8, 8)), "3x1")


# -- Edge buses --------------------------------------------------------------------------------

def lane(word, i):
    return (word >> i) & 1


@pytest.mark.parametrize("mesh, tile", [("2x2", (4, 4)), ("3x1", (2, 6)), ("1x3", (6, 2)),
                                        ("4x2", (2, 4)), ("1x1", (4, 2))])
def test_split_edges_by_lane(mesh, tile):
    shape = MeshShape.parse(mesh)
    tile_w, tile_h = tile
    width, height = shape.cols * tile_w, shape.rows * tile_h
    rng = random.Random(mesh)
    edges = Edges(rng.getrandbits(width), rng.getrandbits(height), rng.getrandbits(width),
                  rng.getrandbits(height))
    chips = split_edges(edges, shape, tile_w, tile_h)
    assert list(chips) == list(shape.chips())
    for (col, row), chip in chips.items():
        for i in range(tile_w):
            x = col * tile_w + i
            assert lane(chip.n, i) == (lane(edges.n, x) if row == 0 else 0)
            assert lane(chip.s, i) == (lane(edges.s, x) if row == shape.rows - 1 else 0)
        for i in range(tile_h):
            y = row * tile_h + i
            assert lane(chip.w, i) == (lane(edges.w, y) if col == 0 else 0)
            assert lane(chip.e, i) == (lane(edges.e, y) if col == shape.cols - 1 else 0)
        assert chip.n >> tile_w == 0 and chip.e >> tile_h == 0
    # The outer sides come back whole; inner lanes of the chips are ignored.
    noisy = {chip: Edges(e.n | (rng.getrandbits(tile_w) if chip[1] else 0),
                         e.e | (rng.getrandbits(tile_h) if chip[0] < shape.cols - 1 else 0),
                         e.s | (rng.getrandbits(tile_w) if chip[1] < shape.rows - 1 else 0),
                         e.w | (rng.getrandbits(tile_h) if chip[0] else 0))
             for chip, e in chips.items()}
    assert join_edges(noisy, shape, tile_w, tile_h) == edges


def test_split_edges_checks_lanes():
    with pytest.raises(ValueError, match=r"^Edge input E=0x100 has bits beyond its 8 lanes$"):
        split_edges(Edges(e=0x100), "2x2", 4, 4)
    with pytest.raises(MeshError, match="missing chip c1r1"):
        join_edges({(0, 0): Edges(), (1, 0): Edges(), (0, 1): Edges()}, "2x2", 4, 4)


# -- The reference mesh ------------------------------------------------------------------------

def test_mesh_emulator_carries_a_signal_across_chips():
    # A pass-through row W -> E across 4 chips: the bit needs one subcycle per cell.
    from bitgrid import PASS_THROUGH
    config = Configuration(16, 2)
    for x in range(16):
        config[x, 0] = PASS_THROUGH
    mesh_emu = MeshEmulator(config, "4x1")
    big = Emulator(config)
    arrivals = [t for t in range(20) if mesh_emu.step(Edges(w=1)).e & 1 & big.step(Edges(w=1)).e]
    assert arrivals[0] == 15        # the 16th subcycle: 16 cells, (0, 0) updates in phase A


def test_mesh_emulator_errors():
    with pytest.raises(TypeError):
        MeshEmulator("8x8", "2x2")
    with pytest.raises(ValueError, match="does not split"):
        MeshEmulator(Configuration(8, 8), "3x3")
    with pytest.raises(ValueError, match="bits beyond its 8 lanes"):
        MeshEmulator(Configuration(8, 8), "2x2").step(Edges(n=0x1FF))
