"""The configuration builder ``bitgrid.program``: exact LUT values of each helper, error
messages, and the route latency of SPEC section 4 checked on the reference emulator.

Expected LUTs are literals from SPEC section 3 (copy N/E/S/W = 0xAAAA/0xCCCC/0xF0F0/0xFF00,
pass-through = 0xF0F0, 0xFF00, 0xAAAA, 0xCCCC) or computed here from those literals.
"""

import pytest

from bitgrid import Configuration, Edges, Emulator, GridSizeError, tables_to_word
from bitgrid.cell import Direction
from bitgrid.program import Program, parse_side, route_latency

COPY = {"N": 0xAAAA, "E": 0xCCCC, "S": 0xF0F0, "W": 0xFF00}     # SPEC section 3
SPEC_PASS_TABLES = (0xF0F0, 0xFF00, 0xAAAA, 0xCCCC)
SPEC_PASS_WORD = 0xFB73EA62D951C840
SIDES = "NESW"
OPPOSITE = {"N": "S", "E": "W", "S": "N", "W": "E"}


def only(side, lut):
    """Tables (N, E, S, W) with ``lut`` on output ``side`` and 0 elsewhere."""
    return tuple(lut if s == side else 0 for s in SIDES)


# Sides -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, expected", [("N", Direction.N), ("e", Direction.E),
                                            ("south", Direction.S), (" West ", Direction.W),
                                            (Direction.E, Direction.E), (3, Direction.W),
                                            (0, Direction.N)])
def test_parse_side(name, expected):
    assert parse_side(name) is expected


@pytest.mark.parametrize("bad, text", [("X", "'X'"), ("up", "'up'"), (4, "4"), (-1, "-1"),
                                       (True, "True"), (None, "None"), (1.0, "1.0")])
def test_parse_side_rejects(bad, text):
    with pytest.raises(ValueError) as info:
        parse_side(bad)
    assert str(info.value) == f"Unknown side {text}; use one of N, E, S, W"


# Grid and cells ----------------------------------------------------------------------------------
def test_new_program_is_unconfigured():
    program = Program(4, 2)
    assert (program.width, program.height) == (4, 2)
    config = program.config
    assert isinstance(config, Configuration)
    assert (config.width, config.height) == (4, 2)
    assert config == Configuration(4, 2)
    assert program.render() == ".    .    .    .\n.    .    .    ."


@pytest.mark.parametrize("size", [(3, 2), (2, 0), (0, 2), (2, 5)])
def test_grid_size_rules(size):
    with pytest.raises(GridSizeError):
        Program(*size)


def test_config_is_a_copy():
    program = Program(2, 2)
    config = program.config
    program.straight(0, 0, "E")
    assert config[0, 0] == (0, 0, 0, 0)
    assert program.config[0, 0] == only("E", COPY["W"])
    config[1, 1] = (1, 2, 3, 4)
    assert program.tables(1, 1) == (0, 0, 0, 0)


def test_pass_through_is_spec_value():
    program = Program(2, 2)
    assert program.pass_through(1, 0) == SPEC_PASS_TABLES
    assert program.config[1, 0] == SPEC_PASS_TABLES
    assert tables_to_word(program.config[1, 0]) == SPEC_PASS_WORD
    assert program.configured(1, 0) == frozenset(Direction)
    for xy in ((0, 0), (0, 1), (1, 1)):
        assert program.config[xy] == (0, 0, 0, 0)


@pytest.mark.parametrize("source", SIDES)
@pytest.mark.parametrize("dest", SIDES)
def test_connect_every_pair(source, dest):
    program = Program(2, 2)
    assert program.connect(0, 1, source, dest) == only(dest, COPY[source])
    assert program.configured(0, 1) == {Direction[dest]}


@pytest.mark.parametrize("heading", SIDES)
def test_straight(heading):
    program = Program(2, 2)
    assert program.straight(1, 1, heading) == only(heading, COPY[OPPOSITE[heading]])


@pytest.mark.parametrize("source, dest", [("W", "S"), ("W", "N"), ("N", "E"), ("S", "W"),
                                          ("E", "N")])
def test_turn(source, dest):
    program = Program(2, 2)
    assert program.turn(0, 0, source, dest) == only(dest, COPY[source])


@pytest.mark.parametrize("source, dest", [("W", "E"), ("N", "S"), ("E", "E")])
def test_turn_needs_perpendicular_sides(source, dest):
    with pytest.raises(ValueError) as info:
        Program(2, 2).turn(0, 0, source, dest)
    assert str(info.value) == f"A turn needs perpendicular sides, not {source} and {dest}"


def test_cross():
    program = Program(4, 4)
    # Default: heading east (E = input W) and south (S = input N).
    assert program.cross(0, 0) == (0, COPY["W"], COPY["N"], 0)
    assert program.cross(1, 0, "W", "N") == (COPY["S"], 0, 0, COPY["E"])
    assert program.cross(2, 0, "e", "n") == (COPY["S"], COPY["W"], 0, 0)
    with pytest.raises(ValueError) as info:
        program.cross(3, 0, "N", "S")
    assert str(info.value) == "horizontal heading must be E or W, not N"
    with pytest.raises(ValueError) as info:
        program.cross(3, 0, "E", "W")
    assert str(info.value) == "vertical heading must be N or S, not W"
    program.straight(3, 1, "S")
    with pytest.raises(ValueError) as info:
        program.cross(3, 1)
    assert str(info.value) == "Output S of cell (3, 1) is already configured"
    assert program.tables(3, 1) == only("S", COPY["N"])      # unchanged, E not set


def test_cell_functions():
    program = Program(2, 2)
    # Full adder: sum = n ^ e ^ w, carry = majority(n, e, w); from the SPEC copy literals.
    sum_lut = COPY["N"] ^ COPY["E"] ^ COPY["W"]
    carry_lut = ((COPY["N"] & COPY["E"]) | (COPY["N"] & COPY["W"])
                 | (COPY["E"] & COPY["W"]))
    assert (sum_lut, carry_lut) == (0x9966, 0xEE88)
    tables = program.cell(1, 0, e=lambda n, e, w: n ^ e ^ w,
                          s=lambda n, e, w: (n & e) | (n & w) | (e & w))
    assert tables == (0, 0x9966, 0xEE88, 0)
    # Constants, and outputs added later to the same cell.
    assert program.cell(1, 0, n=1) == (0xFFFF, 0x9966, 0xEE88, 0)
    assert program.cell(1, 0, w=0) == (0xFFFF, 0x9966, 0xEE88, 0)
    assert program.configured(1, 0) == frozenset(Direction)
    # Any subset of inputs, in any order.
    assert program.cell(0, 1, n=lambda w, s: w and not s) == (0x0F00, 0, 0, 0)
    assert program.cell(0, 1, e=True, s=False) == (0x0F00, 0xFFFF, 0, 0)
    # None leaves an output alone (constant 0, not configured).
    assert program.cell(1, 1, n=None, e=None) == (0, 0, 0, 0)
    assert program.configured(1, 1) == frozenset()


def test_cell_configured_twice():
    program = Program(2, 2)
    program.cell(1, 0, e=lambda w: w)
    with pytest.raises(ValueError) as info:
        program.cell(1, 0, n=lambda s: s, e=lambda n: n)
    assert str(info.value) == "Output E of cell (1, 0) is already configured"
    assert program.tables(1, 0) == only("E", COPY["W"])      # N was not set either
    with pytest.raises(ValueError) as info:
        program.pass_through(1, 0)
    assert str(info.value) == "Output E of cell (1, 0) is already configured"
    with pytest.raises(ValueError) as info:
        program.set_tables(1, 0, SPEC_PASS_TABLES)
    assert str(info.value) == "Output E of cell (1, 0) is already configured"
    with pytest.raises(ValueError) as info:
        program.straight(1, 0, "E")
    assert str(info.value) == "Output E of cell (1, 0) is already configured"


def test_cell_bad_function():
    program = Program(2, 2)
    with pytest.raises(TypeError):
        program.cell(0, 0, e=lambda x: x)
    with pytest.raises(TypeError):
        program.cell(0, 0, e=2)
    assert program.configured(0, 0) == frozenset()


def test_set_tables():
    program = Program(2, 2)
    assert program.set_tables(0, 1, (1, 2, 3, 0xFFFF)) == (1, 2, 3, 0xFFFF)
    assert program.config[0, 1] == (1, 2, 3, 0xFFFF)
    with pytest.raises(ValueError):
        program.set_tables(1, 1, (1, 2, 3, 0x10000))


@pytest.mark.parametrize("xy", [(4, 0), (0, 2), (-1, 0), (0, -1), (10, 10)])
def test_cells_outside_grid(xy):
    program = Program(4, 2)
    message = f"Cell ({xy[0]}, {xy[1]}) is outside the 4 x 2 grid"
    for call in (lambda: program.cell(*xy, e=1), lambda: program.pass_through(*xy),
                 lambda: program.connect(*xy, "W", "E"), lambda: program.turn(*xy, "W", "S"),
                 lambda: program.cross(*xy), lambda: program.route(*xy, "E"),
                 lambda: program.tables(*xy), lambda: program.set_tables(*xy, (0, 0, 0, 0))):
        with pytest.raises(IndexError) as info:
            call()
        assert str(info.value) == message


def test_coordinates_must_be_integers():
    with pytest.raises(TypeError) as info:
        Program(2, 2).cell(0.0, 0, e=1)
    assert str(info.value) == "Cell x must be an integer, not 0.0"
    with pytest.raises(TypeError) as info:
        Program(2, 2).straight(0, True, "E")
    assert str(info.value) == "Cell y must be an integer, not True"


def test_unknown_side_in_helpers():
    program = Program(2, 2)
    for call in (lambda: program.connect(0, 0, "Q", "E"), lambda: program.straight(0, 0, "Q"),
                 lambda: program.route(0, 0, "Q")):
        with pytest.raises(ValueError) as info:
            call()
        assert str(info.value) == "Unknown side 'Q'; use one of N, E, S, W"


# Routes ------------------------------------------------------------------------------------------
def test_route_to_edge():
    program = Program(4, 4)
    assert program.route(0, 1, "E") == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert program.route(3, 2, "W") == [(3, 2), (2, 2), (1, 2), (0, 2)]
    assert program.route(2, 3, "N") == [(2, 3), (2, 2), (2, 1), (2, 0)]
    assert program.route(1, 0, "S", 2) == [(1, 0), (1, 1)]
    config = program.config
    for x in range(4):
        assert config[x, 1][1] == COPY["W"]
        assert config[x, 2][3] == COPY["E"]
        assert config[2, x][0] == COPY["S"]
    assert config[1, 0] == only("S", COPY["N"])
    # The crossings share a cell but not an output.
    assert config[2, 1] == (COPY["S"], COPY["W"], 0, 0)
    assert config[2, 2] == (COPY["S"], 0, 0, COPY["E"])
    assert config[1, 1] == (0, COPY["W"], COPY["N"], 0)
    assert config[0, 0] == (0, 0, 0, 0)
    assert program.render() == (".    S    N    .\n"
                                "E    ES   NE   E\n"
                                "W    W    NW   W\n"
                                ".    .    N    .")


def test_route_errors_change_nothing():
    program = Program(4, 2)
    with pytest.raises(IndexError) as info:
        program.route(2, 0, "E", 3)
    assert str(info.value) == "Cell (4, 0) is outside the 4 x 2 grid"
    with pytest.raises(ValueError) as info:
        program.route(0, 0, "E", 0)
    assert str(info.value) == "Route length must be an integer of at least 1, not 0"
    program.straight(2, 1, "E")
    with pytest.raises(ValueError) as info:
        program.route(0, 1, "E")
    assert str(info.value) == "Output E of cell (2, 1) is already configured"
    expected = Configuration(4, 2)
    expected[2, 1] = only("E", COPY["W"])
    assert program.config == expected


def test_route_latency_formula():
    assert route_latency(0, 0, 4) == 4
    assert route_latency(0, 0, 4, start=1) == 5
    assert route_latency(0, 1, 4) == 5
    assert route_latency(0, 1, 4, start=3) == 4
    assert route_latency(3, 3, 1, start=2) == 1
    with pytest.raises(ValueError) as info:
        route_latency(0, 0, 0)
    assert str(info.value) == "Route length must be an integer of at least 1, not 0"


@pytest.mark.parametrize("row", [0, 1])
@pytest.mark.parametrize("start", [0, 1, 2, 3])
def test_route_latency_on_emulator(row, start):
    """A W->E lane on row ``row`` of a 6 x 2 grid; W_in[row] goes from 0 to 1 at subcycle
    ``start``. E_out[row] is 1 exactly from subcycle start + latency - 1 on (SPEC section 4)."""
    program = Program(6, 2)
    program.route(0, row, "E")
    latency = route_latency(0, row, 6, start)
    # Independent of the formula: the lane is 6 cells; the first cell (0, row) updates on
    # subcycles of parity row.
    assert latency == 6 + (0 if start % 2 == row % 2 else 1)
    emulator = Emulator(program.config)
    seen = []
    for t in range(start + 12):
        out = emulator.step(Edges(w=(1 << row) if t >= start else 0))
        seen.append((out.e >> row) & 1)
    first = seen.index(1)
    assert first == start + latency - 1
    assert all(seen[first:])
