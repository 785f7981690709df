"""Link pin maps on the boards (boards/links.py): the resources are added to each platform,
requested in a tiny elaboratable and turned into the platform's constraint file with
``platform.prepare`` (no place and route); the package pins and I/O types there are checked
against tables written out here by hand from the board schematics/pinouts."""

import re

import pytest
from amaranth.build import ResourceError
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import io

from bitgrid.boards import BOARDS
from bitgrid.boards.links import LINK_PINOUTS, add_link_resources, link_resource_name

MEMBERS = (("tx_clk", "o"), ("tx_data", "o"), ("rx_clk", "i"), ("rx_data", "i"))

# Board family -> side -> member -> package pins (lane 0 first), at each side's most lanes.
EXPECTED_PINS = {
    "icebreaker": {   # PMOD1A / PMOD1B, top row 1-4 transmits, bottom row 7-10 receives
        "E": {"tx_clk": ["4"], "tx_data": ["2", "47", "45"],
              "rx_clk": ["3"], "rx_data": ["48", "46", "44"]},
        "W": {"tx_clk": ["43"], "tx_data": ["38", "34", "31"],
              "rx_clk": ["42"], "rx_data": ["36", "32", "28"]},
    },
    "ulx3s": {        # the + ball of each pair: J2 GP18, GP19-21 / GP17, GP16-14; J1 GP8 ...
        "E": {"tx_clk": ["H18"], "tx_data": ["F17", "D18", "C18"],
              "rx_clk": ["L16"], "rx_data": ["N16", "N17", "U18"]},
        "W": {"tx_clk": ["A4"], "tx_data": ["A2", "C4"],
              "rx_clk": ["G3"], "rx_data": ["F4", "H4"]},
    },
    "tangnano9k": {
        "E": {"tx_clk": ["79"], "tx_data": ["80", "81", "82"],
              "rx_clk": ["83"], "rx_data": ["84", "85", "86"]},
        "W": {"tx_clk": ["25"], "tx_data": ["26", "27", "28"],
              "rx_clk": ["35"], "rx_data": ["29", "30", "39"]},
    },
}

# The complement balls of the ULX3S pairs (GN), in the same order.
ULX3S_N = {"E": {"tx_clk": ["H17"], "tx_data": ["G18", "E17", "D17"],
                 "rx_clk": ["L17"], "rx_data": ["M17", "P16", "U17"]},
           "W": {"tx_clk": ["A5"], "tx_data": ["B1", "B4"],
                 "rx_clk": ["F3"], "rx_data": ["E3", "G5"]}}

EXPECTED_ATTRS = {"icebreaker": {"IO_STANDARD": "SB_LVCMOS"}, "ulx3s": {"IO_TYPE": "LVDS"},
                  "tangnano9k": {"IO_TYPE": "LVCMOS33"}}
MAX_LANES = {"icebreaker": {"E": 3, "W": 3}, "ulx3s": {"E": 3, "W": 2},
             "tangnano9k": {"E": 3, "W": 3}}


def family(name):
    return "ulx3s" if name.startswith("ulx3s") else name


class LinkUser(Elaboratable):
    """Requests every link resource and puts a buffer on each member."""

    def __init__(self, names):
        self.names = names

    def elaborate(self, platform):
        m = Module()
        for name in self.names:
            pins = platform.request(name, 0, dir="-")
            for member, direction in MEMBERS:
                m.submodules[f"{name}_{member}"] = io.Buffer(direction, getattr(pins, member))
        return m


def constraints(platform, names):
    """{port name: (site, attribute text)} from the platform's constraint file."""
    plan = platform.prepare(LinkUser(names), "top")
    text = next(v for k, v in plan.files.items() if k.endswith((".lpf", ".pcf", ".cst")))
    text = text if isinstance(text, str) else text.decode()
    sites, attrs = {}, {}
    for port, site in re.findall(r'LOCATE COMP "([^"]+)" SITE "([^"]+)";', text):   # ECP5
        sites[port] = site
    for port, rest in re.findall(r'IOBUF PORT "([^"]+)" (.*);', text):
        attrs[port] = rest
    for port, site in re.findall(r"^set_io (\S+) (\S+)$", text, re.M):              # iCE40
        sites[port] = site
    for port, site in re.findall(r'IO_LOC "([^"]+)" (\S+);', text):                  # Gowin
        sites[port] = site
    for port, rest in re.findall(r'IO_PORT "([^"]+)" (.*);', text):
        attrs[port] = rest
    return sites, attrs


def port_names(resource, member, count, suffix):
    base = f"{resource}_0__{member}__{suffix}"
    return [base] if member.endswith("clk") else [f"{base}[{i}]" for i in range(count)]


def test_every_board_has_link_pins():
    assert set(LINK_PINOUTS) == set(BOARDS)


@pytest.mark.parametrize("name", list(BOARDS))
@pytest.mark.parametrize("sides", ["E", "W", "EW"])
def test_link_pins_exact(name, sides):
    fam = family(name)
    lanes = min(MAX_LANES[fam][s] for s in sides)
    platform = BOARDS[name].platform()
    names = add_link_resources(platform, name, sides=sides, lanes=lanes)
    assert names == [f"link_{s.lower()}" for s in sides]
    for resource_name in names:
        assert platform.lookup(resource_name, 0).attrs == EXPECTED_ATTRS[fam]
    sites, attrs = constraints(platform, names)
    suffix = "p" if fam == "ulx3s" else "io"
    expected_sites = {}
    for side in sides:
        for member, _ in MEMBERS:
            pins = EXPECTED_PINS[fam][side][member][:lanes]
            ports = port_names(link_resource_name(side), member, len(pins), suffix)
            expected_sites.update(zip(ports, pins))
    assert {p: s for p, s in sites.items() if p.startswith("link_")} == expected_sites
    if fam == "ulx3s":            # true LVDS: the + ball placed, the pair's - ball implied
        assert all(attrs[p] == "IO_TYPE=LVDS" for p in expected_sites)
    elif fam == "tangnano9k":
        assert all(attrs[p] == "IO_TYPE=LVCMOS33" for p in expected_sites)


@pytest.mark.parametrize("side", ["E", "W"])
def test_ulx3s_pairs_complements(side):
    pinout = LINK_PINOUTS["ulx3s-85f"][side]
    platform = BOARDS["ulx3s-85f"].platform()
    add_link_resources(platform, "ulx3s-85f", side, pinout.max_lanes)
    resource = platform.lookup(link_resource_name(side), 0)
    for sub, (member, direction) in zip(resource.ios, MEMBERS):
        pairs = sub.ios[0]
        assert sub.name == member
        assert pairs.dir == direction
        assert pairs.p.map_names(platform._conn_pins, resource) == \
            EXPECTED_PINS["ulx3s"][side][member][:pinout.max_lanes]
        assert pairs.n.map_names(platform._conn_pins, resource) == \
            ULX3S_N[side][member][:pinout.max_lanes]


@pytest.mark.parametrize("name", list(BOARDS))
def test_too_many_lanes(name):
    fam = family(name)
    for side, most in MAX_LANES[fam].items():
        header = LINK_PINOUTS[name][side].header
        platform = BOARDS[name].platform()
        with pytest.raises(ValueError) as info:
            add_link_resources(platform, name, sides=side, lanes=most + 1)
        assert str(info.value) == (
            f"{most + 1} lanes do not fit link side {side} of the {name} ({header}): it has "
            f"pins for at most {most} data lanes each way besides the forwarded clocks; use "
            f"lanes={most} or fewer")
        with pytest.raises(ResourceError):        # nothing was added
            platform.lookup(link_resource_name(side), 0)


def test_bad_sides_and_boards():
    platform = BOARDS["icebreaker"].platform()
    with pytest.raises(ValueError) as info:
        add_link_resources(platform, "icebreaker", sides="N")
    assert str(info.value) == ("the icebreaker has no link pins for side N; it has sides "
                               "E (PMOD1A), W (PMOD1B)")
    with pytest.raises(ValueError) as info:
        add_link_resources(platform, "icebreaker", sides="Q")
    assert str(info.value) == "unknown link side 'Q'; sides are N, E, S, W"
    with pytest.raises(ValueError, match="link side E is given twice"):
        add_link_resources(platform, "icebreaker", sides="E,e")
    with pytest.raises(ValueError, match="no link side given"):
        add_link_resources(platform, "icebreaker", sides="")
    with pytest.raises(ValueError, match=r"^lanes must be an integer of at least 1, not 0$"):
        add_link_resources(platform, "icebreaker", lanes=0)
    with pytest.raises(ValueError) as info:
        add_link_resources(platform, "arty", sides="E")
    assert str(info.value).startswith("no link pins are defined for board 'arty'; boards with "
                                      "link pins: icebreaker, ulx3s-12f")
    # a Board object works as well as its name, and a list of sides as well as a string
    assert add_link_resources(platform, BOARDS["icebreaker"], ["w", "E"]) == ["link_w",
                                                                              "link_e"]


def test_request_gives_lane_widths():
    platform = BOARDS["tangnano9k"].platform()
    add_link_resources(platform, "tangnano9k", "W", lanes=3)
    pins = platform.request("link_w", 0, dir="-")
    assert [len(getattr(pins, m)) for m, _ in MEMBERS] == [1, 3, 1, 3]
