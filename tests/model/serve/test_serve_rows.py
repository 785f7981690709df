"""Whole rows of named output ports through a BGCF server (issue 39 item 2): a named read
gives the value of one whole row or says how many subcycles are missing, never a mix."""

import random

import pytest

from bitgrid.bgcf import BgcfClient
from bitgrid.bgcf.rows import RowReader
from bitgrid.library import build
from bitgrid.ports import PortMap
from bitgrid.program import Program
from bitgrid.protocol.bgcf import Feature, Rows, decode_rows, encode_rows, RowInfo

from support.bgcf import connected, serving
from support.library import run_rows
from support.port_programs import hops, odd_lanes, skewed_routes, xor_loop


def _wide_routes():
    """A 70 x 2 program: ``a`` (70 bits, N lanes 0..69) runs south to S lanes 0..69 as
    ``q``, a port of two BGCF words (``q`` and ``q.1``)."""
    program = Program(70, 2)
    for x in range(70):
        program.route(x, 0, "S")
    times = [hops(x, 0, 2) for x in range(70)]
    latency = min(times)
    ports = [{"name": "a", "direction": "in", "bits": [{"side": "N", "lane": x}
                                                        for x in range(70)]},
             {"name": "q", "direction": "out",
              "bits": [{"side": "S", "lane": x, "skew": t - latency}
                       for x, t in enumerate(times)]}]
    return program.config, PortMap(70, 2, ports, period=2, latency=latency)


def _multiplier():
    alone = build("multiplier", bits=3).standalone()
    return alone.config, alone.portmap


def _retimed(stages):
    """A 4-bit delay line of ``stages`` registers, compiled: the registers are port timing
    (history ``stages`` rows), the break-it case of a served read mixing two rows."""
    from bitgrid.compiler import compile_netlist
    from bitgrid.netlist import Dff, InputPort, Netlist, OutputPort
    dffs = {}
    for s in range(stages):
        for i in range(4):
            dffs[f"s{s}_{i}"] = Dff(f"d{i}" if s == 0 else f"s{s - 1}_{i}")
    netlist = Netlist("line", {"d": InputPort(tuple(f"d{i}" for i in range(4)))},
                      {"q": OutputPort(tuple(f"s{stages - 1}_{i}" for i in range(4)))}, {},
                      dffs)
    result = compile_netlist(netlist)
    assert result.portmap.history == stages
    return result.config, result.portmap


PROGRAMS = {
    "delay_line": lambda: _retimed(6),
    "skewed_routes": lambda: skewed_routes()[:2],
    "xor_loop": lambda: xor_loop()[:2],         # period 4, state across rows
    "odd_lanes": lambda: odd_lanes()[:2],
    "multiplier": _multiplier,
    "wide": _wide_routes,
}


def _row_inputs(portmap, history, k):
    """Row ``k``'s input values as the grid took them: bit ``i`` of a port the value in
    effect (the last SET_INPUTS at or before) at subcycle ``k * period + skew_i``."""
    row = {}
    for port in portmap.inputs:
        value = 0
        for i, bit in enumerate(port.bits):
            t = k * portmap.period + bit.skew
            current = [values for counter, values in history if counter <= t][-1]
            value |= (current[port.name] >> i & 1) << i
        row[port.name] = port.decode([value >> i & 1 for i in range(port.width)]) \
            if port.signed else value
    return row


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_named_reads_are_whole_rows_or_say_what_is_missing(name):
    config, portmap = PROGRAMS[name]()
    portmap = portmap.for_program(config)
    rng = random.Random(name)
    with serving("fast", config.width, config.height, program=config,
                 portmap=portmap) as server, connected(server) as client:
        assert client.hello().features & Feature.ROWS
        history = [(0, {p.name: 0 for p in portmap.inputs})]
        counter, reads, checked = 0, 0, 0
        for _ in range(40):
            if rng.random() < 0.6 and portmap.inputs:
                values = {p.name: rng.getrandbits(p.width) for p in portmap.inputs}
                client.set_values(values)
                if values != history[-1][1]:        # the same values again change nothing
                    history.append((counter, values))
            n = rng.choice([0, 1, 2, 3, 5, 8, 13, 40, 300])
            client.step(n)
            counter += n
            values, missing = client.read()
            rows = client.rows()
            assert rows.subcycle == counter and rows.period == portmap.period
            for info in rows.ports:
                port = portmap[info.name]
                if info.whole:
                    assert info.name in values and info.name not in missing
                    k = info.row
                    # its inputs are the current ones, and its value the design's for them
                    assert k * portmap.period + rows.input_skew >= history[-1][0]
                    expected = run_rows(config, portmap, [_row_inputs(portmap, history, j)
                                                          for j in range(k + 1)])[k]
                    got = values[info.name]
                    want = expected[info.name] % (1 << port.width)
                    assert got == want, (name, k, info.name)
                    checked += 1
                else:
                    assert info.name not in values and missing[info.name] == info.missing
                    # stepping exactly the missing subcycles gives a whole row
                    client.step(info.missing)
                    counter += info.missing
                    assert client.read()[1].get(info.name) is None
                    reads += 1
        assert checked >= 10 and reads >= 1


def test_a_served_adder_read_too_early_says_so():
    """The break-it case: an adder read 4 subcycles after its inputs (its latency, not its
    skews) used to print a value mixed from two rows."""
    config, portmap = skewed_routes()[:2]
    portmap = portmap.for_program(config)
    with serving("emu", 8, 8, program=config, portmap=portmap) as server, \
            connected(server) as client:
        client.step(30)
        client.set_values({"a": 0b1010, "b": 0b11})
        client.step(10)
        values, missing = client.read()
        # row 15 takes the new inputs from subcycle 30 on; its last bit of qa (skew 5) is read
        # after subcycle 30 + 10 + 5 - 1: 5 more than the 40 run
        assert "qa" not in values and missing["qa"] == 5
        assert "qb" in values or missing["qb"] > 0
        client.step(missing["qa"])
        values, missing = client.read()
        assert values["qa"] == 0b1010 and values["qb"] == 0b11 and not missing


def test_reads_from_a_server_without_a_port_map_have_no_rows():
    with serving("emu", 4, 4) as server, connected(server) as client:
        client.load(bytes(__import__("bitgrid").bitstream.write(
            __import__("bitgrid").Configuration(4, 4))))
        assert client.rows() == Rows(0, 0, 0, 0, 0, [])
        values, missing = client.read()
        assert set(values) == {"N", "E", "S", "W"} and missing == {}


def test_rows_payload_round_trip():
    rows = Rows(2, 10, 1, 123456789012, 77,
                [RowInfo("qa", 0, 5, True, 12, 0), RowInfo("q.x", 3, 3, False, 0, 9)])
    assert decode_rows(encode_rows(rows)) == rows


def test_row_reader_stops_only_at_the_end_of_a_step():
    config, portmap = skewed_routes()[:2]
    reader = RowReader(portmap, portmap.outputs)
    # skews of qa and qb span -1 .. 5: tail = 6 + 2 + 1
    assert reader.tail == 9
    stops = reader.stops(0, 1000)
    assert stops and min(stops) >= 1000 - 9 and max(stops) <= 999


@pytest.mark.parametrize("name", ["skewed_routes", "xor_loop", "wide"])
def test_eval_through_a_server_gives_the_local_rows(name):
    """``bgcf:HOST:PORT``: the rows of any BGCF server are the reference emulator's."""
    from bitgrid.evaluate import evaluate
    config, portmap = PROGRAMS[name]()
    portmap = portmap.for_program(config)
    rng = random.Random(7)
    rows = [{p.name: rng.getrandbits(p.width) for p in portmap.inputs} for _ in range(25)]
    with serving("fast", config.width, config.height) as server:
        served = evaluate(config, portmap, rows, target=f"bgcf:127.0.0.1:{server.port}")
    assert served == evaluate(config, portmap, rows, target="emu")


def test_eval_through_a_server_refuses_what_cannot_run():
    from bitgrid.evaluate import check_target, evaluate
    from bitgrid.host import LinkError, TargetError
    config, portmap = skewed_routes()[:2]
    with serving("fast", 4, 4) as server:
        with pytest.raises(TargetError, match="runs a 4 x 4 grid and the program is 8 x 8"):
            evaluate(config, portmap, [{"a": 1, "b": 1}],
                     target=f"bgcf:127.0.0.1:{server.port}")
        port = server.port
    with pytest.raises(LinkError, match=f"cannot reach a BGCF server at 127.0.0.1:{port}"):
        evaluate(config, portmap, [{"a": 1, "b": 1}], target=f"bgcf:127.0.0.1:{port}")
    for bad in ("bgcf:host:0", "bgcf:host:x", "bgcf:[::1", "bgcf:127.0.0.1:9200:1",
                "bgcf:host:\u0661", "bgcf:a:b:c", "bgcf:[]:5", "bgcf:[zz]:5"):
        with pytest.raises(ValueError, match="bgcf:"):
            check_target(bad)


def test_bgcf_addresses():
    from bitgrid.bgcf.target import parse_address
    from bitgrid.bgcf import DEFAULT_PORT
    assert parse_address("10.0.0.2:7700") == ("10.0.0.2", 7700)
    assert parse_address("[::1]:7701") == ("::1", 7701)
    assert parse_address("::1") == ("::1", DEFAULT_PORT)
    assert parse_address("board") == ("board", DEFAULT_PORT)
    assert parse_address(":9000") == ("127.0.0.1", 9000)
