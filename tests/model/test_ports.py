"""bitgrid.ports (bitgrid-ports-v1): port values encoded and decoded on every value of small
widths against two's complement written out here, the timing figures worked by hand, the file
round trip, and every refusal naming the port and bit."""

import json
import re

import pytest

from bitgrid import ports
from bitgrid.ports import Port, PortBit, PortMap, PortMapError, SealError
from bitgrid.terms import E, N, S, W


def port(name="a", direction="in", width=4, signed=False, side=W, skew=0):
    return Port(name, direction, tuple(PortBit(side, i, skew) for i in range(width)), signed)


def example():
    return PortMap(8, 6, [
        {"name": "a", "direction": "in", "bits": [{"side": "W", "lane": 0},
                                                   {"side": "W", "lane": 1, "skew": 2}]},
        {"name": "b", "direction": "in", "signed": True,
         "bits": [{"side": "N", "lane": 7}, {"side": "n", "lane": 6}]},
        {"name": "sum", "direction": "out",
         "bits": [{"side": "E", "lane": 5, "skew": -2}, {"side": "S", "lane": 0, "skew": 3}]},
    ], period=4, latency=9)


@pytest.mark.parametrize("width", [1, 2, 3, 5])
@pytest.mark.parametrize("signed", [False, True])
def test_encode_decode_every_value(width, signed):
    p = port(width=width, signed=signed)
    low, high = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    assert (p.minimum, p.maximum) == (low, high)
    for value in range(low, high + 1):
        pattern = value % (1 << width)                  # two's complement bit pattern
        bits = [(pattern >> i) & 1 for i in range(width)]
        assert p.encode(value) == bits
        assert p.decode(bits) == value
    for value in (low - 1, high + 1):
        with pytest.raises(ValueError, match=f"Value {value} does not fit port a "
                                             f"\\({width} bits?, "):
            p.encode(value)
    if width == 1:
        kind = "signed: -1..0" if signed else "unsigned: 0..1"
        with pytest.raises(ValueError, match=f"^Value 2 does not fit port a \\(1 bit, {kind}\\)$"):
            p.encode(2)


def test_timing_figures_by_hand():
    portmap = example()
    # depth = latency + largest output skew = 9 + 3; n rows need (n - 1) * 4 + 12 subcycles.
    assert portmap.depth == 12
    assert [portmap.cycles_needed(n) for n in (1, 2, 5)] == [12, 16, 28]
    assert PortMap(2, 2, latency=3).depth == 3            # no outputs: the latency
    assert PortMap(2, 2).cycles_needed(1) == 1            # at least one subcycle
    with pytest.raises(ValueError, match="Rows must be an integer"):
        portmap.cycles_needed(0)


def test_access():
    portmap = example()
    assert [p.name for p in portmap.inputs] == ["a", "b"]
    assert [p.name for p in portmap.outputs] == ["sum"]
    assert portmap["b"].bits == (PortBit(N, 7), PortBit(N, 6)) and portmap["b"].signed
    assert portmap["sum"].bits[0] == PortBit(E, 5, -2)
    assert "a" in portmap and "c" not in portmap
    with pytest.raises(KeyError, match="No port 'c'; the ports are a, b, sum"):
        portmap["c"]
    assert repr(portmap) == "PortMap(8 x 6, period 4, latency 9, ports a, b, sum)"


def test_file_round_trip(tmp_path):
    portmap = example()
    path = tmp_path / "p.ports.json"
    ports.save(path, portmap)
    document = json.loads(path.read_text())
    assert document["format"] == "bitgrid-ports-v1"
    assert document["ports"][0]["bits"][1] == {"side": "W", "lane": 1, "skew": 2}
    assert "skew" not in document["ports"][0]["bits"][0]      # default 0 left out
    assert "signed" not in document["ports"][0]
    assert ports.load(path) == portmap
    assert PortMap.from_json(portmap.to_json()) == portmap
    empty = PortMap(2, 2)
    assert PortMap.from_json(json.loads(empty.dumps())) == empty


def test_replace_and_map_bits():
    portmap = example()
    assert portmap.replace(latency=10).latency == 10
    assert portmap.replace(latency=10)["a"] == portmap["a"]
    # A mirror of x on an 8 x 6 grid: N/S lanes x -> 7 - x, E <-> W.
    swap = {N: N, S: S, E: W, W: E}

    def mirrored(p, bit):
        lane = 7 - bit.lane if bit.side in (N, S) else bit.lane
        return PortBit(swap[bit.side], lane, bit.skew)

    moved = portmap.map_bits(mirrored)
    assert moved["a"].bits == (PortBit(E, 0), PortBit(E, 1, 2))
    assert moved["b"].bits == (PortBit(N, 0), PortBit(N, 1))
    assert moved["sum"].bits == (PortBit(W, 5, -2), PortBit(S, 7, 3))
    with pytest.raises(PortMapError,
                       match="^Port a bit 0 lane must be an integer from 0 to 5, not 6"):
        portmap.map_bits(lambda p, bit: PortBit(bit.side, bit.lane + 6, bit.skew))


def test_check_grid():
    portmap = example()
    assert portmap.check_grid(8, 6) is portmap
    with pytest.raises(PortMapError, match="The port map is for a 8 x 6 grid, the program is "
                                           "6 x 8"):
        portmap.check_grid(6, 8)


def test_lane_shared_by_an_input_and_an_output():
    portmap = PortMap(2, 2, [
        {"name": "i", "direction": "in", "bits": [{"side": "W", "lane": 1}]},
        {"name": "o", "direction": "out", "bits": [{"side": "W", "lane": 1}]}], latency=1)
    assert portmap["i"].bits == portmap["o"].bits


def bit(side="W", lane=0, **extra):
    return dict(side=side, lane=lane, **extra)


@pytest.mark.parametrize("ports_, options, message", [
    ([{"name": "1a", "direction": "in", "bits": [bit()]}], {},
     "Port: a port name is a letter or _ followed by letters, digits, _, $ or ., not '1a'"),
    ([{"name": "a b", "direction": "in", "bits": [bit()]}], {},
     "Port: a port name is a letter or _ followed by letters, digits, _, $ or ., not 'a b'"),
    ([{"name": "a", "direction": "in", "bits": [bit()]},
      {"name": "a", "direction": "out", "bits": [bit()]}], {"latency": 1},
     "Port a is declared twice"),
    ([{"name": "a", "direction": "in", "bits": [bit(), bit(lane=1)]},
      {"name": "b", "direction": "in", "bits": [bit(lane=1)]}], {},
     "Port b bit 0: input lane W1 is already bit 1 of port a"),
    ([{"name": "a", "direction": "sideways", "bits": [bit()]}], {}, "Port a direction"),
    ([{"name": "a", "direction": "in", "bits": []}], {},
     "Port a: bits must be a list of 1 to 4096 lanes"),
    ([{"name": "a", "direction": "in", "bits": [bit(lane=4)]}], {}, "Port a bit 0"),
    ([{"name": "a", "direction": "in", "bits": [bit(side="X")]}], {},
     "Port a bit 0: Unknown side 'X'"),
    ([{"name": "a", "direction": "in", "bits": [bit(skew=-1)]}], {}, "Port a bit 0 skew"),
    ([{"name": "a", "direction": "out", "bits": [bit(skew=-3)]}], {"latency": 3},
     "Port a bit 0 skew"),
    ([{"name": "a", "direction": "in", "bits": [bit(colour="red")]}], {}, "Port a bit 0: a bit "
                                                                        "is"),
    ([{"name": "a", "direction": "in", "width": 3, "bits": [bit()]}], {},
     "Port a: unknown keys ['width']"),
    ([{"name": "a", "direction": "in", "signed": 1, "bits": [bit()]}], {}, "Port a signed"),
    ([], {"period": 3}, "Period must be an even integer"),
    ([], {"period": 0}, "Period must be an even integer"),
    ([], {"latency": -1}, "Latency must be an integer"),
    (["a"], {}, "A port is an object"),
])
def test_refusals(ports_, options, message):
    with pytest.raises(PortMapError, match="^" + re.escape(message)):
        PortMap(4, 4, ports_, **options)


def test_output_skew_may_go_down_to_one_subcycle_after_reset():
    portmap = PortMap(4, 4, [{"name": "a", "direction": "out", "bits": [bit(skew=-2)]}],
                      latency=3)
    assert portmap.depth == 1


@pytest.mark.parametrize("document, message", [
    ([], "p.json: not a bitgrid-ports-v1 document"),
    ({"format": "bitgrid-vectors-v1"}, "p.json: format is 'bitgrid-vectors-v1'"),
    ({"format": "bitgrid-ports-v1", "width": 4, "height": 4, "clock": 1},
     r"p.json: unknown keys \['clock'\]"),
    ({"format": "bitgrid-ports-v1", "width": 3, "height": 4}, "p.json: Grid width"),
    ({"format": "bitgrid-ports-v1", "width": 4, "height": 4, "ports": {}},
     "p.json: ports must be a list"),
])
def test_bad_documents(tmp_path, document, message):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(document))
    with pytest.raises(PortMapError, match=f"^{tmp_path}/{message}"):
        ports.load(path)


def test_not_json(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(b"\xff{")
    with pytest.raises(PortMapError, match="p.json: not a JSON port map"):
        ports.load(path)


def test_history_round_trips_and_is_sealed_only_when_set():
    """``history`` (rows an output reaches back, issue 40): written and read back, in the seal
    when not 0, so that a map without it keeps the seal it had."""
    from bitgrid.config import Configuration
    config = Configuration(2, 2)
    plain = PortMap(2, 2, [{"name": "a", "direction": "in", "bits": [{"side": "N", "lane": 0}]},
                           {"name": "y", "direction": "out",
                            "bits": [{"side": "S", "lane": 0}]}], latency=3)
    deep = plain.replace(history=4)
    assert "history" not in plain.to_json() and deep.to_json()["history"] == 4
    assert PortMap.from_json(deep.for_program(config).to_json()).history == 4
    program = config.digest()
    assert plain.seal_for(program) != deep.seal_for(program)
    assert plain.replace(history=0).seal_for(program) == plain.seal_for(program)
    edited = deep.for_program(config).to_json()
    edited["history"] = 1
    with pytest.raises(SealError):
        PortMap.from_json(edited).check_program(config)
    with pytest.raises(PortMapError, match="History"):
        plain.replace(history=-1)
