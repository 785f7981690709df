"""Assembling ports and timing, and the round trip text -> bitstream -> text -> bitstream on
every conformance program, random configurations and random port maps."""

import random

import numpy as np
import pytest

from support.conformance import conformance_cases, load_conformance

from bitgrid.asm import AsmError, assemble, assemble_program, disassemble
from bitgrid.bitstream import Bitstream, ScanOrder
from bitgrid.cell import COPY_W, PASS_THROUGH, REFLECTOR
from bitgrid.config import Configuration
from bitgrid.evaluate import evaluate
from bitgrid.ports import PortMap, PortMapError
from bitgrid.program import route_latency


def ports(text):
    _, portmap = assemble(text, file="p.bga")
    return portmap


def error(text):
    with pytest.raises(AsmError) as info:
        assemble(text, file="p.bga")
    return str(info.value)


WIRES = """grid 4 x 4
cell 0..3,0..3: E = w
"""


def test_one_lane_latency_is_the_route_latency():
    portmap = ports(WIRES + "in a W 0\nout y E 0\n")
    expected = PortMap(4, 4, [{"name": "a", "direction": "in", "bits": [{"side": "W", "lane": 0}]},
                              {"name": "y", "direction": "out",
                               "bits": [{"side": "E", "lane": 0}]}],
                       period=2, latency=route_latency(0, 0, 4))
    assert portmap == expected
    assert ports(WIRES + "in a W 1\nout y E 1\n").latency == route_latency(0, 1, 4) == 5


def test_lanes_of_both_parities_need_skews():
    text = WIRES + "in a[0..3] W 0..3\nout y[0..3] E 0..3\n"
    message = error(text)
    assert message == ("p.bga:4:5: the paths disagree: a[0] -> y[0] takes 4 subcycles "
                       "(latency 4), a[1] -> y[1] takes 5 (latency 5); declare 'latency N' "
                       "(subcycles), with a 'skew' on the bits whose paths differ"), message
    skewed = WIRES + "in a[0..3] W 0..3 skew 0, 1, 0, 1\nout y[0..3] E 0..3 skew 0,1,0,1\n"
    config, portmap = assemble(skewed)
    assert portmap.latency == 4
    assert [b.skew for b in portmap["a"].bits] == [0, 1, 0, 1]
    # The computed timing is right: the emulator gives every row back unchanged.
    rows = [{"a": v} for v in (5, 10, 15, 0, 9, 6, 3)]
    assert evaluate(config, portmap, rows) == [{"y": r["a"]} for r in rows]


def test_declared_latency_is_kept():
    portmap = ports(WIRES + "latency 7\nperiod 4\nin a W 0\nout y E 0\n")
    assert (portmap.latency, portmap.period) == (7, 4)


def test_port_forms():
    text = """grid 8 x 4
    latency 3
    in  a[3..0] W 0..3 signed      # bit 3 on lane W0
    in  b[0..1] N 0, 2
    in  b[2..3] S 1..0             # a port declared in two pieces
    in  c N 4..5, S 4, E 3 skew 2
    out "odd.name" E 0..1 skew 0..1
    out q[0..2] E 2, N 7, S 7 skew -1, 0, 1
    """
    portmap = ports(text)
    a = portmap["a"]
    assert a.signed and [(b.side.name, b.lane) for b in a.bits] == \
        [("W", 3), ("W", 2), ("W", 1), ("W", 0)]
    assert [(b.side.name, b.lane) for b in portmap["b"].bits] == \
        [("N", 0), ("N", 2), ("S", 1), ("S", 0)]
    assert [(b.side.name, b.lane, b.skew) for b in portmap["c"].bits] == \
        [("N", 4, 2), ("N", 5, 2), ("S", 4, 2), ("E", 3, 2)]
    assert [b.skew for b in portmap["odd.name"].bits] == [0, 1]
    assert [(b.side.name, b.lane, b.skew) for b in portmap["q"].bits] == \
        [("E", 2, -1), ("N", 7, 0), ("S", 7, 1)]
    assert [p.name for p in portmap.ports] == ["a", "b", "c", "odd.name", "q"]


@pytest.mark.parametrize("decl, message", [
    ("in a W 4", "p.bga:4:8: lane 4 is outside the W edge of the 4 x 4 grid (lanes 0..3)"),
    ("in a[0..1] W 0", "p.bga:4:4: port a names 2 bits on 1 lanes"),
    ("in a W 0\nin b W 0", "p.bga:5:8: input lane W0 already carries bit 0 of port a (at "
                           "p.bga:4:8)"),
    ("in a[0] W 0\nin a[0] N 0", "p.bga:5:11: bit 0 of port a is declared twice; first at "
                                 "p.bga:4:11"),
    ("in a W 0\nout a E 0", "p.bga:5:5: port a is an input port (declared at p.bga:4:4)"),
    ("in a[1] W 0\nout y E 0", "p.bga:4:4: port a has no bit 0"),
    ("in a[0..1] W 0..1 skew 1, 2, 3", "p.bga:4:24: port a has 2 bits and 3 skews"),
    ("in a W 0 fast", "p.bga:4:10: unknown port option 'fast'; use signed or skew"),
    ("in a X 0", "p.bga:4:6: unknown side 'X'; use N, E, S, W"),
    ("latency 2\nin a W 0\nout y E 0 skew -5",
     "p.bga:6:5: Port y bit 0 skew must be an integer of at least -1, not -5"),
    ("in a W 0\nout y S 0", "p.bga:5:5: no output port depends on an input port"),
    ("latency 1\nlatency 2\nin a W 0", "p.bga:5:1: the latency is given twice; first at "
                                       "p.bga:4:1"),
])
def test_port_errors(decl, message):
    text = WIRES + "\n" + decl + "\n"
    got = error(text)
    assert got.startswith(message), got


# Round trips -----------------------------------------------------------------------------------
def round_trip(config, portmap=None, order=ScanOrder.ROW_MAJOR):
    text = disassemble(config, portmap, order=order)
    result = assemble_program(text)
    assert result.config == config
    assert result.portmap == portmap
    assert result.order == order
    return text


@pytest.mark.parametrize("name", conformance_cases())
def test_round_trip_conformance(name):
    case = load_conformance(name)
    bs = case.load_bitstream()
    text = disassemble(bs)
    result = assemble_program(text)
    with open(case.bitstream_path, "rb") as file:
        assert Bitstream(result.config, result.order).to_bytes() == file.read()


def test_conformance_full_adder_reads_as_written():
    text = disassemble(load_conformance("full_adder1").load_bitstream())
    assert "cell 1,0: E = n ^ e ^ w, S = maj(n, e, w)" in text
    assert "cell 0,0: E = w                    # wire" in text


@pytest.mark.parametrize("width, height, seed", [(2, 2, 1), (4, 6, 2), (8, 8, 3), (16, 4, 4)])
def test_round_trip_random(width, height, seed):
    round_trip(Configuration.random(width, height, seed))


@pytest.mark.parametrize("seed", range(12))
def test_round_trip_structured(seed):
    # Few distinct cells, so that runs and rectangles merge, with every routing shape.
    rng = random.Random(seed)
    palette = [(0, 0, 0, 0)] * 4 + [PASS_THROUGH, REFLECTOR, (0, COPY_W, 0, 0),
                                    (0, COPY_W, COPY_W, 0), (0xFFFF, 0, 0, 0),
                                    (0, COPY_W, 0xAAAA, 0), (0x1234, 0, 0, 0x8000)]
    width, height = rng.choice([(2, 2), (6, 4), (10, 10), (24, 18)])
    luts = np.array([[palette[rng.randrange(len(palette))] for _ in range(width)]
                     for _ in range(height)], dtype=np.uint16)
    order = rng.choice(list(ScanOrder))
    round_trip(Configuration(width, height, luts), order=order)


def random_portmap(rng, width, height):
    lanes = [(side, i) for side in "NS" for i in range(width)] + \
            [(side, i) for side in "EW" for i in range(height)]
    latency = rng.randrange(0, 20)
    used = {"in": set(), "out": set()}
    result = []
    for index in range(rng.randrange(1, 6)):
        direction = rng.choice(["in", "out"])
        free = [lane for lane in lanes if lane not in used[direction]]
        if not free:
            continue
        count = rng.randrange(1, min(len(free), 9) + 1)
        chosen = rng.sample(free, count)
        used[direction].update(chosen)
        low = 0 if direction == "in" else 1 - latency
        skews = [rng.choice([max(0, low), max(0, low), rng.randrange(low, 6)]) for _ in chosen]
        if rng.random() < 0.5:
            skews = [skews[0]] * count
        name = rng.choice(["a{}", "sum{}", "x_{}", "p$q{}", "bus.lo{}", "q{}.", "x{}..y"])
        result.append({"name": name.format(index),
                       "direction": direction, "signed": rng.random() < 0.3,
                       "bits": [{"side": s, "lane": i, "skew": k}
                                for (s, i), k in zip(chosen, skews)]})
    return PortMap(width, height, result, period=rng.choice([2, 2, 4, 6]), latency=latency)


@pytest.mark.parametrize("seed", range(20))
def test_round_trip_port_maps(seed):
    rng = random.Random(seed)
    width, height = rng.choice([(2, 2), (4, 8), (12, 6)])
    config = Configuration.random(width, height, seed) if seed % 2 else Configuration(width,
                                                                                        height)
    round_trip(config, random_portmap(rng, width, height))


def test_round_trip_odd_names_and_skews():
    portmap = PortMap(6, 4, [
        {"name": "q.", "direction": "out", "bits": [
            {"side": "E", "lane": i, "skew": k} for i, k in enumerate([-1, 0, 1, 5])] + [
            {"side": "N", "lane": 5, "skew": 4}, {"side": "S", "lane": 0, "skew": 3}]},
        {"name": "a..b", "direction": "in", "signed": True,
         "bits": [{"side": "W", "lane": 3}, {"side": "W", "lane": 1}]},
        {"name": "in", "direction": "in", "bits": [{"side": "E", "lane": 0, "skew": 7}]}],
        period=4, latency=2)
    text = round_trip(Configuration.random(6, 4, 5), portmap)
    assert 'out "q."[0..5] E 0..3, N 5, S 0 skew -1..1, 5..3' in text
    assert 'in  "a..b"[0..1] W 3, 1 signed' in text


@pytest.mark.slow
def test_round_trip_large_random():
    round_trip(Configuration.random(256, 256, 7))


def test_lattices_and_runs():
    config = Configuration(20, 8)
    for x in (0, 3, 6, 9):
        for y in (1, 4, 7):
            config[x, y] = (0, 0xCCCC, 0, 0)      # E = e
    config[2, 0] = config[17, 0] = (0, 0, 0xAAAA, 0)    # a far pair: no lattice of 2
    for x in range(10, 14):
        config[x, 2] = PASS_THROUGH
    text = round_trip(config)
    lines = [" ".join(line.split("#")[0].split()) for line in text.splitlines()
             if line.startswith("cell")]
    assert lines == ["cell 2,0: S = n", "cell 17,0: S = n", "cell 0..9 by 3,1..7 by 3: E = e",
                     "cell 10..13,2: pass"]


def test_round_trip_port_map_without_ports():
    round_trip(Configuration(4, 2), PortMap(4, 2, [], period=6, latency=3))
    assert assemble("grid 2 x 2\nperiod 4\n")[1] == PortMap(2, 2, [], period=4, latency=0)
    assert assemble("grid 2 x 2\n")[1] is None


def test_disassemble_needs_a_configuration():
    with pytest.raises(TypeError):
        disassemble(b"BGBS")


def test_progress_reports_lines():
    text = "grid 64 x 64\n" + "".join(f"cell {i % 64},{i // 64}: E = w\n" for i in range(3000))
    calls = []
    assemble_program(text, progress=lambda line, lines: calls.append((line, lines)))
    assert calls == [(1, 3002), (1025, 3002), (2049, 3002)]


@pytest.mark.parametrize("body, kind", [
    ("E = w", "wire"),
    ("S = w", "turn"),
    ("N = n", "echo"),
    ("E = w, S = n", "crossing"),
    ("E = w, W = e", "wires"),
    ("E = S = w", "fan-out"),
    ("E = n, S = w", "routing"),
    ("N = 1", "constant"),
    ("E = ~w", None),
    ("pass", None),
    ("reflect", None),
])
def test_routing_comments(body, kind):
    text = disassemble(assemble(f"grid 2 x 2\ncell 1,1: {body}\n")[0])
    line = text.splitlines()[-1]
    assert line.split("#")[0].split(":", 1)[1].strip() == body
    assert (line.split("# ")[1] if "#" in line else None) == kind


# A declared latency checked against the paths (bitgrid eval of each latency: only 3 is right).
ADDER2 = """grid 2 x 2
latency {latency}
in  a[0..1] W 0..1
in  b[0] N 0
in  b[1] E 1
out s[0..1] E 0..1
out c S 0
cell 0,0: E = n ^ w, S = n & w
cell 1,0: E = w
cell 0,1: E = n ^ e ^ w, S = maj(n, e, w)
cell 1,1: W = e, E = w
"""


@pytest.mark.parametrize("latency, warning", [
    (1, "p.bga:2:1: latency 1 reads every output port bit 1 row too early (each shows an "
        "earlier row's result): the path b[0] -> s[0] takes 2 subcycles and needs latency 2..3 "
        "with these skews"),
    (2, None),      # s[1] one row early, s[0] and c right: like a shift register, not reported
    (3, None),
    (4, "p.bga:2:1: latency 4 reads s[0] 1 row too late (it shows a later row's result): the "
        "path b[0] -> s[0] takes 2 subcycles and needs latency 2..3 with these skews"),
    (9, "p.bga:2:1: latency 9 reads s[0] 3 rows too late"),
])
def test_declared_latency_is_checked(latency, warning):
    text = ADDER2.format(latency=latency)
    result = assemble_program(text, file="p.bga")
    rows = [{"a": a, "b": b} for a in range(4) for b in range(4)]
    if latency > result.portmap.timing_limit:
        # more than the 2 x 2 program can hold: evaluate refuses it (PortMap.check_program)
        with pytest.raises(PortMapError, match="more than the program can hold"):
            evaluate(result.config, result.portmap, rows)
    else:
        right = evaluate(result.config, result.portmap, rows) == \
            [{"s": (r["a"] + r["b"]) % 4, "c": (r["a"] + r["b"]) // 4} for r in rows]
        assert right == (latency == 3)
    if warning is None:
        assert result.warnings == ()
    else:
        assert len(result.warnings) == 1 and result.warnings[0].startswith(warning), \
            result.warnings
