"""bitgrid.terms: the one vocabulary (SPEC sections 1, 2, 4 and 7)."""

import numpy as np
import pytest

from bitgrid import terms
from bitgrid.terms import DIRECTIONS, Direction, Edges, E, N, S, W


def test_directions_are_spec_indices():
    assert [int(d) for d in DIRECTIONS] == [0, 1, 2, 3]
    assert [d.letter for d in DIRECTIONS] == list(terms.SIDES) == ["N", "E", "S", "W"]
    assert [d.input_name for d in DIRECTIONS] == ["n", "e", "s", "w"]


@pytest.mark.parametrize("side", DIRECTIONS)
def test_opposite_and_step(side):
    # A step towards a side and a step towards its opposite cancel, and y grows to the south.
    (dx, dy), (ox, oy) = side.step, side.opposite.step
    assert (dx + ox, dy + oy) == (0, 0) and abs(dx) + abs(dy) == 1
    assert side.opposite.opposite is side and side.opposite is not side
    assert {N: (0, -1), E: (1, 0), S: (0, 1), W: (-1, 0)}[side] == side.step


@pytest.mark.parametrize("text, side", [("N", N), ("east", E), (" s ", S), ("West", W), (3, W),
                                        (Direction.E, E)])
def test_parse_side(text, side):
    assert terms.parse_side(text) is side


@pytest.mark.parametrize("bad", ["x", "", 4, -1, True, None, 1.0])
def test_parse_side_rejects(bad):
    with pytest.raises(ValueError, match="use one of N, E, S, W"):
        terms.parse_side(bad)


def test_parse_sides_orders_and_rejects():
    assert terms.parse_sides("wSe") == "ESW"
    assert terms.parse_sides("") == ""
    for bad in ("NN", "NX", 3):
        with pytest.raises(ValueError, match="distinct sides from 'NESW'"):
            terms.parse_sides(bad, what="links")


def test_edges_coerce_and_lanes():
    assert Edges.coerce(None) == Edges(0, 0, 0, 0)
    assert Edges.coerce({"N": 5, "w": "ff"}) == Edges(n=5, w=255)
    assert Edges.coerce([1, 2, 3, [1, 0, 1]]) == Edges(1, 2, 3, 5)
    assert Edges.coerce((1, "0xa", [1, 0, 1], np.int64(2))) == Edges(1, 10, 5, 2)
    edges = Edges(1, 2, 3, 4)
    assert Edges.coerce(edges) is edges
    assert Edges(n=0b1011).lanes("N", 5) == [1, 1, 0, 1, 0]
    assert Edges(1, 2, 3, 4).side(S) == 3 and Edges(1, 2, 3, 4).side("w") == 4
    with pytest.raises(ValueError, match="unknown"):
        Edges.coerce({"x": 1})
    with pytest.raises(ValueError, match="4 words"):
        Edges.coerce([1, 2, 3])


def test_lane_parity_offset_matches_boundary_cells():
    width, height = 6, 4
    cells = {N: lambda i: (i, 0), S: lambda i: (i, height - 1),
             W: lambda i: (0, i), E: lambda i: (width - 1, i)}
    for side, cell in cells.items():
        for lane in range(4):
            assert terms.parity(*cell(lane)) == (lane + terms.lane_parity_offset(side)) % 2


def test_storage_and_simulator_checks():
    assert terms.check_storage("memory") == "memory"
    assert terms.check_simulator("verilator") == "verilator"
    with pytest.raises(ValueError) as info:
        terms.check_storage("latch")
    assert str(info.value) == "Storage must be one of 'ff', 'memory', not 'latch'"
    with pytest.raises(ValueError) as info:
        terms.check_simulator("xsim")
    assert str(info.value) == "Simulator must be one of 'icarus', 'verilator', not 'xsim'"


def test_side_lanes():
    assert [terms.side_lanes(side, 4, 6) for side in terms.SIDES] == [4, 6, 4, 6]
    assert terms.side_lanes(terms.W, 2, 8) == 8 and terms.side_lanes("south", 2, 8) == 2


def test_edges_check_lanes():
    edges = terms.Edges(0xF, 0x3, 0xF, 0x3)
    assert edges.check_lanes(4, 2) is edges
    for bad, message in [(terms.Edges(n=0x10), "Edge input N=0x10 has bits beyond its 4 lanes"),
                         (terms.Edges(e=0x4), "Edge input E=0x4 has bits beyond its 2 lanes"),
                         (terms.Edges(w=-1), "Edge input W=0x-1 has bits beyond its 2 lanes")]:
        with pytest.raises(ValueError) as info:
            bad.check_lanes(4, 2)
        assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        terms.Edges(s=0x1F).check_lanes(4, 2, what="Stream 3: Edge input")
    assert str(info.value) == "Stream 3: Edge input S=0x1f has bits beyond its 4 lanes"


def test_edges_lane_bits_are_0_or_1():
    assert Edges.coerce([[True, 0, 1], 0, 0, 0]).n == 0b101
    for bad in ([300], [2], [0.5], ["1"]):
        with pytest.raises(ValueError, match="Lane bits are 0 or 1"):
            Edges.coerce([bad, 0, 0, 0])


def test_side_lanes():
    assert [terms.side_lanes(side, 4, 6) for side in terms.SIDES] == [4, 6, 4, 6]


@pytest.mark.parametrize("value", ["1,2,5,7", "5,7,1,2", " 5, 2,1 ,7", (1, 7, 5, 2), [5, 2, 1, 7],
                                   terms.Region(1, 2, 5, 7)])
def test_a_region_takes_its_corners_in_either_order(value):
    """One region rule for every command that takes one (SPEC section 10): corners
    inclusive, either corner first."""
    region = terms.parse_region(value)
    assert region == terms.Region(1, 2, 5, 7) and str(region) == "1,2,5,7"
    assert (1, 2) in region and (5, 7) in region and (0, 2) not in region
    assert (5, 8) not in region
    assert len(region.cells()) == 5 * 6 and region.cells()[:2] == [(1, 2), (2, 2)]
    assert region.inside(6, 8) and not region.inside(5, 8) and not region.inside(6, 7)


@pytest.mark.parametrize("value", ["1,2,3", "a,b,c,d", "1,2,3,4,5", "", (1, 2, 3, -1),
                                   (True, 1, 2, 3), (1.5, 2, 3, 4), 5, None, "+1,0,5,5",
                                   "1_0,0,15,5", "\u0663,0,5,5", "0x1,0,5,5"])
def test_a_bad_region_says_the_form(value):
    with pytest.raises(ValueError, match=r"is not x0,y0,x1,y1 \(four cell coordinates of at "
                                         r"least 0, corners inclusive\), for example 0,0,3,7"):
        terms.parse_region(value)


def test_regions_overlap_when_they_share_a_cell():
    a = terms.Region(0, 0, 2, 3)
    assert a.overlaps(terms.Region(2, 3, 4, 4)) and not a.overlaps(terms.Region(3, 0, 4, 3))
    assert not a.overlaps(terms.Region(0, 4, 2, 5))


@pytest.mark.parametrize("text, prefix, value", [("1f", False, 31), ("0x1F", False, 31),
                                                 ("0X0", True, 0), ("0xffffffffffffffffff", True,
                                                                    (1 << 72) - 1)])
def test_hex_words(text, prefix, value):
    assert terms.parse_hex(text, prefix=prefix) == value


@pytest.mark.parametrize("text, prefix, message", [
    ("0x0_1", False, "'0x0_1' is not a hex word (hex digits, optionally after 0x, e.g. 0x1f)"),
    (" 0x1", False, "' 0x1' is not a hex word"), ("-1", False, "'-1' is not a hex word"),
    ("+1", False, "'+1' is not a hex word"), ("", False, "'' is not a hex word"),
    ("0x", False, "'0x' is not a hex word"), ("0xg", True, "'0xg' is not a hex word (hex "
                                                         "digits, after 0x, e.g. 0x1f)"),
    ("1f", True, "expected a hex string like '0x1f', got '1f'"),
    (3, False, "expected a hex string like '0x1f', got 3"),
    ("0b101", False, "'0b101' looks like a binary number; the words are hex"),
    ("0o17", True, "expected a hex string like '0x1f', got '0o17'")])
def test_what_int_would_take_is_not_a_hex_word(text, prefix, message):
    """One strict reading of hex for every file and API (issue 27): ``int(text, 16)`` takes
    ``_``, a sign and spaces; these are refused with the word quoted."""
    with pytest.raises(ValueError) as error:
        terms.parse_hex(text, prefix=prefix)
    assert str(error.value).startswith(message)


def test_edges_take_strict_hex_words():
    assert Edges.coerce({"N": "0x3", "e": "f"}) == Edges(3, 15, 0, 0)
    for word in ("0x0_1", "-1", " 1"):
        with pytest.raises(ValueError, match="is not a hex word"):
            Edges.coerce({"N": word})


def test_hex_words_are_padded_to_their_lanes_and_read_back():
    """Each word in hex of its side's lanes: N and S of a 9-wide grid take 3 digits, E and W
    of a 4-high grid 1 (the vector file's form; parse_hex reads them back)."""
    edges = Edges(0x1ff, 0x3, 0, 0xf)
    words = edges.hex_words(9, 4)
    assert words == {"N": "0x1ff", "E": "0x3", "S": "0x000", "W": "0xf"}
    assert Edges.coerce({k: terms.parse_hex(v, prefix=True) for k, v in words.items()}) == edges


@pytest.mark.parametrize("value, message", [
    (b"abcd", "Edge inputs are Edges, a mapping of N, E, S, W or 4 words"),
    ({"n": 1, "N": 2}, "each once"), ({"N": 1.5}, "A bus word is an int"),
    ({"N": None}, "A bus word is an int"), ({"N": {1}}, "A bus word is an int"),
    ({"N": True}, "A bus word is an int")])
def test_edges_refuse_what_is_not_a_word(value, message):
    """A value that is not a bus word is a ValueError naming the form, never a wrong word (a
    bytes object read as four words, a set as lane bits) or a TypeError."""
    with pytest.raises(ValueError, match=message):
        Edges.coerce(value)
