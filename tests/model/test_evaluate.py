"""bitgrid.evaluate: rows of port values through hand-built programs (support.port_programs),
checked against what each program is built to compute, on the emulators, the host runtime's
loopback and one RTL simulation; the per-subcycle stimulus and sampling against hand-written
timelines; rows and CSV refused with the row, line and column named."""

import random

import pytest

from bitgrid import evaluate as ev
from bitgrid.ports import PortMap, PortMapError
from bitgrid.program import Program
from bitgrid.terms import Edges
from support import port_programs

BUILDERS = [port_programs.skewed_routes, port_programs.signed_routes, port_programs.xor_loop,
            port_programs.odd_lanes]


def random_rows(portmap, count, seed):
    rng = random.Random(seed)
    return [{p.name: rng.randint(p.minimum, p.maximum) for p in portmap.inputs}
            for _ in range(count)]


@pytest.mark.parametrize("target", ["emu", "fast"])
@pytest.mark.parametrize("builder", BUILDERS, ids=lambda b: b.__name__)
def test_programs_compute_their_model(builder, target):
    config, portmap, model = builder()
    rows = random_rows(portmap, 40, seed=len(builder.__name__))
    assert ev.evaluate(config, portmap, rows, target=target) == model(rows)


def test_loopback_target_runs_the_same_rows():
    # The host runtime's protocol target: subcycles between samples go in one STEP request.
    config, portmap, model = port_programs.xor_loop()
    rows = random_rows(portmap, 12, seed=3)
    assert ev.evaluate(config, portmap, rows, target="loopback") == model(rows)


def test_every_signed_value():
    config, portmap, model = port_programs.signed_routes()
    rows = [{"a": a, "b": b} for a in range(-8, 8) for b in range(16)]
    result = ev.evaluate(config, portmap, rows)
    assert result == model(rows)
    assert min(r["q"] for r in result) == -8 and min(r["r"] for r in result) == -8


def test_xor_loop_is_a_running_parity():
    config, portmap, _ = port_programs.xor_loop()
    rows = [{"t": t, "d": 0} for t in (1, 0, 0, 1, 1, 0, 1)]
    assert [r["q"] for r in ev.evaluate(config, portmap, rows)] == [1, 1, 1, 0, 1, 1, 0]


def test_one_subcycle_early_reads_the_previous_row():
    # The sample index k*P + L + s - 1 is the first at which the row's value is there: with a
    # latency one smaller every output still shows the previous row (row 0: the reset zeros).
    config, portmap, model = port_programs.odd_lanes()
    early = portmap.replace(latency=portmap.latency - 1)
    rows = random_rows(portmap, 20, seed=5)
    expected = [{"qa": 0, "qb": 0}] + model(rows)[:-1]
    assert ev.evaluate(config, early, rows) == expected


def test_edge_inputs_timeline():
    # Two ports on a 4 x 4 grid, period 4: a on W lane 1 (skew 0), b on N lanes 0 and 2
    # (skews 0 and 3). Output on E lane 0 with latency 1 (never reached: only the inputs are
    # looked at here). Written out by hand from the ports module's timing rules.
    portmap = PortMap(4, 4, [
        {"name": "a", "direction": "in", "bits": [{"side": "W", "lane": 1}]},
        {"name": "b", "direction": "in",
         "bits": [{"side": "N", "lane": 0}, {"side": "N", "lane": 2, "skew": 3}]},
        {"name": "q", "direction": "out", "bits": [{"side": "E", "lane": 0, "skew": 2}]}],
        period=4, latency=1)
    rows = [{"a": 1, "b": 2}, {"a": 0, "b": 3}]
    steps = ev.edge_inputs(portmap, rows)
    # cycles_needed: (2 - 1) * 4 + 1 + 2 = 7 subcycles.
    w = [0b10, 0b10, 0b10, 0b10, 0, 0, 0]
    n = [0, 0, 0, 0b100, 0b101, 0b101, 0b101]  # bit 1 (lane 2) from 3; bit 0 row 1 from 4
    assert steps == [Edges(n=nn, w=ww) for nn, ww in zip(n, w)]
    points = ev.sample_points(portmap, 2)
    assert points == [{"q": [2]}, {"q": [6]}]


def test_sample_decodes_each_bit_at_its_own_index():
    portmap = PortMap(2, 2, [{"name": "q", "direction": "out", "signed": True, "bits": [
        {"side": "S", "lane": 1}, {"side": "E", "lane": 0, "skew": 1}]}], latency=1)
    outputs = [Edges(s=0b10), Edges(e=0b1), Edges(), Edges(e=1)]
    # row 0: bit 0 at index 0 (S lane 1 = 1), bit 1 at index 1 (E lane 0 = 1): -1;
    # row 1: bit 0 at index 2 (0), bit 1 at index 3 (1): -2.
    assert ev.sample(portmap, outputs, 2) == [{"q": -1}, {"q": -2}]


@pytest.mark.icarus
def test_rtl_simulation_gives_the_same_rows():
    # One RTL run (Icarus, cached build of the 8 x 8 grid) of the program with every kind of
    # skew.
    config, portmap, model = port_programs.skewed_routes()
    rows = random_rows(portmap, 16, seed=11)
    assert ev.evaluate(config, portmap, rows, target="sim") == model(rows)


def test_no_rows_runs_nothing():
    config, portmap, _ = port_programs.signed_routes()
    assert ev.evaluate(config, portmap, []) == []
    assert ev.edge_inputs(portmap, []) == []


def test_port_map_without_inputs_takes_empty_rows():
    # A constant-1 output (cell (1, 0), N output = 1): no input port, rows are empty dicts.
    program = Program(2, 2)
    program.cell(1, 0, n=1)
    portmap = PortMap(2, 2, [{"name": "one", "direction": "out",
                              "bits": [{"side": "N", "lane": 1}]}], latency=2)
    assert ev.evaluate(program.config, portmap, [{}] * 3) == [{"one": 1}] * 3


@pytest.mark.parametrize("rows, message", [
    ([{"a": 1}], "Row 0: no value for input port b"),
    ([{"a": 1, "b": 2, "c": 3}], "Row 0: 'c' is not a port; the input ports are a, b"),
    ([{"a": 1, "b": 2, "q": 3}], "Row 0: 'q' is an output port"),
    ([{"a": 1, "b": 2}, {"a": 8, "b": 0}],
     "Row 1: Value 8 does not fit port a (4 bits, signed: -8..7)"),
    ([{"a": -1, "b": -1}], "Row 0: Value -1 does not fit port b (4 bits, unsigned: 0..15)"),
])
def test_bad_rows(rows, message):
    config, portmap, _ = port_programs.signed_routes()
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        ev.evaluate(config, portmap, rows)


def test_bad_values_targets_and_sizes():
    config, portmap, _ = port_programs.signed_routes()
    with pytest.raises(TypeError, match="port a value must be an integer"):
        ev.evaluate(config, portmap, [{"a": "1", "b": 0}])
    with pytest.raises(ValueError, match="Unknown target 'board'"):
        ev.evaluate(config, portmap, [{"a": 1, "b": 0}], target="board")
    other, _, _ = port_programs.xor_loop()
    with pytest.raises(PortMapError, match="port map is for a 4 x 4 grid, the program is 8 x 8"):
        ev.evaluate(other, portmap, [{"a": 1, "b": 0}])


def test_runs_too_long_are_refused_before_anything_is_built():
    # A latency or skew far beyond any program (a typo in the port map) would need petabytes
    # of stimulus: one clear ValueError, before edge inputs are built.
    config, portmap, _ = port_programs.signed_routes()
    rows = [{"a": 1, "b": 2}] * 3
    late = portmap.replace(latency=10 ** 12)
    message = (r"^3 rows of period 2 with latency 1000000000000 and output skew up to 1 need "
               r"1000000000005 subcycles, more than 4194304 in one evaluation")
    with pytest.raises(ValueError, match=message):
        ev.edge_inputs(late, rows)
    # evaluate refuses it sooner still: the program cannot hold such a latency.
    with pytest.raises(ValueError, match=r"latency or skew of 1000000000000 subcycles is more "
                                         r"than the program can hold"):
        ev.evaluate(config, late, rows)
    skewed = portmap.map_bits(lambda port, bit: bit._replace(skew=bit.skew + 2 ** 30)
                              if port.direction == "out" else bit)
    with pytest.raises(ValueError, match=r"output skew up to 1073741825 need"):
        ev.edge_inputs(skewed, rows)
    # The bound itself (signed_routes' output skews reach 1): exactly MAX_SUBCYCLES pass.
    assert ev.check_subcycles(portmap.replace(latency=ev.MAX_SUBCYCLES - 5), 3) == \
        ev.MAX_SUBCYCLES


# CSV --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [("12", 12), (" -3 ", -3), ("0xff", 255),
                                         ("0XFF", 255), ("-0x10", -16), ("1_000", 1000),
                                         ("0x_f", None), ("", None), ("1.5", None),
                                         ("0x", None), ("abc", None), ("--1", None),
                                         ("1__0", None), ("٣", None), ("+5", None)])
def test_parse_value(text, value):
    if value is None:
        with pytest.raises(ValueError, match="not a decimal or 0x hex integer"):
            ev.parse_value(text)
    else:
        assert ev.parse_value(text) == value


def test_csv_round_trip():
    _, portmap, _ = port_programs.signed_routes()
    text = "b, a\n\n0xf,-8\n3,7\n"
    assert ev.parse_csv(text, portmap) == [{"b": 15, "a": -8}, {"b": 3, "a": 7}]
    assert ev.format_csv(portmap, [{"q": -8, "r": -1}, {"q": 7, "r": 3}]) == "q,r\n-8,-1\n7,3\n"


@pytest.mark.parametrize("text, message", [
    ("", "in.csv: empty; the first line names the input ports (a,b)"),
    ("\n\n", "in.csv: empty"),
    ("a,b\n", "in.csv: no rows after the header"),
    ("a,c\n1,2\n", "in.csv:1: column 2: no port 'c'; the input ports are a, b"),
    ("a,b,q\n1,2,3\n", "in.csv:1: column 3: q is an output port"),
    ("a\n1\n", "in.csv:1: no column for input port b"),
    ("a,a,b\n", "in.csv:1: column 2: port a is named twice"),
    ("a,b\n1,2\n3\n", "in.csv:3: 1 value, the header has 2 (a, b)"),
    ("a,b\n1,2,3\n", "in.csv:2: 3 values, the header has 2 (a, b)"),
    ("a,b,\n1,2,\n", "in.csv:1: column 3 has no name (a trailing comma?); the header names "
                     "the input ports (a, b)"),
    ("a,b\n1,2\n\n1,16\n", "in.csv:4: column 2 (b): value 16 does not fit port b (4 bits, "
                           "unsigned: 0..15)"),
    ("a,b\n1,x\n", "in.csv:2: column 2 (b): not a decimal or 0x hex integer: 'x'"),
    ("a,b\n1,2\n,\n", "in.csv:3: column 1 (a): an empty field is not a decimal or 0x hex "
                     "integer; give every port a value"),
    ("a,b\n1, \n", "in.csv:2: column 2 (b): an empty field is not"),
    ("a,b\n1,\"2\n", "in.csv:2: not CSV"),
    ("a,b\n1,2\x00\n", "in.csv:2: a NUL byte"),
])
def test_csv_errors(text, message):
    _, portmap, _ = port_programs.signed_routes()
    with pytest.raises(ev.CsvError) as error:
        ev.parse_csv(text, portmap, where="in.csv")
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_csv_file_not_text(tmp_path):
    _, portmap, _ = port_programs.signed_routes()
    path = tmp_path / "in.csv"
    path.write_bytes(b"a,b\n1,2\n\xff\xfe\n")
    with pytest.raises(ev.CsvError, match=r"in.csv:3: not UTF-8 text \(byte 0xff\)"):
        ev.read_csv(path, portmap)


def test_csv_for_a_port_map_without_inputs():
    portmap = PortMap(2, 2, [{"name": "q", "direction": "out",
                              "bits": [{"side": "N", "lane": 1}]}], latency=1)
    with pytest.raises(ev.CsvError, match="no input ports.*--cycles N"):
        ev.parse_csv("q\n1\n", portmap)


@pytest.mark.parametrize("seed", range(6))
def test_random_skews_and_periods(seed):
    # W -> E routes of an 8 x 8 grid; each input bit gets a random skew and lane, the period is
    # 2, 4 or 6: every output bit's skew is worked out from SPEC section 4 (the first cell
    # waits for its parity), and the output equals the input row by row.
    rng = random.Random(seed)
    program = Program(8, 8)
    for y in range(8):
        program.route(0, y, "E")
    lanes = rng.sample(range(8), 5)
    skews = [rng.randrange(0, 5) for _ in lanes]
    times = [s + port_programs.hops(0, y, 8, start=s) for y, s in zip(lanes, skews)]
    latency = rng.randint(1, min(times))
    signed = rng.random() < 0.5
    portmap = PortMap(8, 8, [
        {"name": "a", "direction": "in", "signed": signed,
         "bits": [{"side": "W", "lane": y, "skew": s} for y, s in zip(lanes, skews)]},
        {"name": "q", "direction": "out", "signed": signed,
         "bits": [{"side": "E", "lane": y, "skew": t - latency} for y, t in zip(lanes, times)]}],
        period=rng.choice([2, 4, 6]), latency=latency)
    rows = random_rows(portmap, 30, seed)
    assert ev.evaluate(program.config, portmap, rows) == [{"q": r["a"]} for r in rows]


@pytest.mark.slow
@pytest.mark.icarus
def test_mesh_of_chips_gives_the_same_rows():
    # The period-4 loop split over a simulated 2 x 2 mesh (4 x 4 tiles, the loop on tile 0,
    # the odd-lane route crossing into tile 1).
    config, portmap, model = port_programs.xor_loop()
    rows = random_rows(portmap, 8, seed=13)
    assert ev.evaluate(config, portmap, rows, target="mesh:2x2") == model(rows)


def test_bad_mesh_shape():
    config, portmap, _ = port_programs.xor_loop()
    with pytest.raises(ValueError) as error:
        ev.evaluate(config, portmap, [{"t": 0, "d": 0}], target="mesh:2by2")
    assert "COLSxROWS" in str(error.value)
