"""Link pins of the supported boards: where a chip-to-chip link (SPEC section 8) leaves a board.

One link side is a source-synchronous lane set in each direction: a transmit forwarded clock
and ``lanes`` transmit data lanes, and a receive forwarded clock and ``lanes`` receive data
lanes (the members of :class:`bitgrid.hdl.link.LanePinsSignature`: ``tx_clk``, ``tx_data``,
``rx_clk``, ``rx_data``). :func:`add_link_resources` adds them to an amaranth-boards platform as
one resource per side, ``("link_e", 0)``, ``("link_w", 0)``, ... with those four subsignals
(``tx_data``/``rx_data`` are ``lanes`` wide, lane ``i`` being bit ``i``).

The pin maps (:data:`LINK_PINOUTS`; ``docs/two-boards.md`` has the cabling):

* **ULX3S** (ECP5): true LVDS pairs (``IO_TYPE=LVDS``) on the GPIO headers. Only the ECP5's
  left and right banks (2, 3, 6, 7) have true LVDS output drivers, on the A/B pairs; on the
  ULX3S those are the pairs GP/GN 8-13 of J1 (bank 7) and GP/GN 14-21 of J2 (banks 3 and 2).
  Pairs 0-7 and 22-27 sit in the top banks 0 and 1, which have only emulated differential
  outputs. Side E is on J2 (8 pairs: at most 3 lanes), side W on J1 (6 pairs: at most 2
  lanes). The receive clock is on a clock-capable pair: GP17 (GR_PCLK3_0) on J2, GP12
  (PCLKT7_1) on J1.
* **iCEBreaker** (iCE40 UP5K): the UP5K has no true LVDS output on its user pins, so the link
  is single-ended LVCMOS 3.3 V (``IO_STANDARD=SB_LVCMOS``) on a PMOD: side E on PMOD1A, side W
  on PMOD1B, the top row (pins 1-4) transmitting, the bottom row (pins 7-10) receiving: at most
  3 lanes.
* **Tang Nano 9K** (GW1NR-9): single-ended LVCMOS 3.3 V (``IO_TYPE=LVCMOS33``) on the pin
  headers. The GW1NR-9's true LVDS outputs (TLVDS, a 2.5 V bank supply) are not on free header
  pins of this board, which runs its header banks at 3.3 V (even its HDMI pairs can only use
  emulated LVDS). Side E on the right header (bank 0 pins 79-86), side W on the left header
  (bank 2 pins 25-30, 35, 39): at most 3 lanes.

Both ends of a link must use the same signalling: ULX3S LVDS links join ULX3S boards; the
iCEBreaker and the Tang Nano 9K (both LVCMOS 3.3 V) can be joined to each other.
"""

from dataclasses import dataclass

from amaranth.build import Attrs, DiffPairs, Pins, Resource, Subsignal

from bitgrid.checks import check_int
from bitgrid.terms import SIDES

__all__ = ["LinkPinout", "LINK_PINOUTS", "LINK_SIDES", "add_link_resources",
           "link_resource_name"]

#: The sides of a chip, in SPEC order (:data:`bitgrid.terms.SIDES`).
LINK_SIDES = tuple(SIDES)


@dataclass(frozen=True)
class LinkPinout:
    """Where one link side leaves a board.

    :param connector: the platform connector ``(name, number)``, or None for package pins.
    :param header: the header as printed on the board, for people.
    :param tx_clk, rx_clk: the pin (or differential pair number) of each forwarded clock.
    :param tx_data, rx_data: the pins (or pair numbers) of data lanes 0, 1, ...; their length
        is the most lanes the side supports.
    :param differential: True for LVDS pairs (pin ``n`` means ``n+``/``n-`` of the connector).
    :param attrs: the I/O attributes of every pin of the side.
    :param signalling: ``"LVDS"`` or ``"LVCMOS33"``: what the other end must use too.
    :param notes: what shares these pins, and other cautions.
    """
    connector: tuple
    header: str
    tx_clk: str
    tx_data: tuple
    rx_clk: str
    rx_data: tuple
    differential: bool
    attrs: dict
    signalling: str
    notes: str = ""

    @property
    def max_lanes(self):
        return min(len(self.tx_data), len(self.rx_data))

    def resource(self, side, lanes):
        """The amaranth :class:`~amaranth.build.Resource` of this side with ``lanes`` lanes."""
        conn = dict(conn=self.connector) if self.connector else {}

        def io(pins, dir):
            if self.differential:
                return DiffPairs(" ".join(f"{p}+" for p in pins),
                                 " ".join(f"{p}-" for p in pins), dir=dir, **conn)
            return Pins(" ".join(pins), dir=dir, **conn)

        return Resource(link_resource_name(side), 0,
                        Subsignal("tx_clk", io([self.tx_clk], "o")),
                        Subsignal("tx_data", io(self.tx_data[:lanes], "o")),
                        Subsignal("rx_clk", io([self.rx_clk], "i")),
                        Subsignal("rx_data", io(self.rx_data[:lanes], "i")),
                        Attrs(**self.attrs))


_ULX3S = {
    "E": LinkPinout(("gpio", 0), "J2", "18", ("19", "20", "21"), "17", ("16", "15", "14"),
                    True, {"IO_TYPE": "LVDS"}, "LVDS",
                    "GP/GN 14-17 are also wired to the ADC inputs (high impedance, harmless). "
                    "Put a 100 ohm resistor across each receive pair at the receiver."),
    "W": LinkPinout(("gpio", 0), "J1", "8", ("9", "10"), "12", ("11", "13"),
                    True, {"IO_TYPE": "LVDS"}, "LVDS",
                    "On PCB v2.0 and later GP/GN 11-13 are also wired to the ESP32 (its GPIO "
                    "25/26, 32/33, 34/35): the ESP32 must leave them undriven. Put a 100 ohm "
                    "resistor across each receive pair at the receiver."),
}

_ICEBREAKER = {
    "E": LinkPinout(("pmod", 0), "PMOD1A", "1", ("2", "3", "4"), "7", ("8", "9", "10"),
                    False, {"IO_STANDARD": "SB_LVCMOS"}, "LVCMOS33"),
    "W": LinkPinout(("pmod", 1), "PMOD1B", "1", ("2", "3", "4"), "7", ("8", "9", "10"),
                    False, {"IO_STANDARD": "SB_LVCMOS"}, "LVCMOS33"),
}

_TANGNANO9K = {
    "E": LinkPinout(None, "right header", "79", ("80", "81", "82"), "83", ("84", "85", "86"),
                    False, {"IO_TYPE": "LVCMOS33"}, "LVCMOS33",
                    "Pin 86 is also the LCD backlight enable (lane 2 only): leave the LCD "
                    "connector empty."),
    "W": LinkPinout(None, "left header", "25", ("26", "27", "28"), "35", ("29", "30", "39"),
                    False, {"IO_TYPE": "LVCMOS33"}, "LVCMOS33",
                    "Pin 35 (GCLKT_4, a global clock input) is also the RGB LCD clock: leave "
                    "the LCD connector empty."),
}

#: Board name -> side -> :class:`LinkPinout`, for every board of :data:`bitgrid.boards.BOARDS`.
LINK_PINOUTS = {
    "icebreaker": _ICEBREAKER,
    "ulx3s-12f": _ULX3S, "ulx3s-25f": _ULX3S, "ulx3s-45f": _ULX3S, "ulx3s-85f": _ULX3S,
    "tangnano9k": _TANGNANO9K,
}


def link_resource_name(side):
    """The resource name of link side ``side``: ``"link_e"`` for ``"E"``."""
    return f"link_{side.lower()}"


def _parse_sides(sides):
    if isinstance(sides, str):
        items = [c for c in sides.replace(",", " ").split() for c in c]
    else:
        items = list(sides)
    if not items:
        raise ValueError("no link side given; sides are N, E, S, W")
    out = []
    for item in items:
        side = str(item).strip().upper()
        if side not in LINK_SIDES:
            raise ValueError(f"unknown link side {item!r}; sides are N, E, S, W")
        if side in out:
            raise ValueError(f"link side {side} is given twice")
        out.append(side)
    return out


def add_link_resources(platform, board_name, sides="E", lanes=1):
    """Add the link resources of ``sides`` to ``platform`` (``platform.add_resources``).

    :param platform: an amaranth-boards platform instance of the board.
    :param board_name: the board's name in :data:`bitgrid.boards.BOARDS` (or the
        :class:`~bitgrid.boards.Board`).
    :param sides: ``"E"``, ``"EW"``, ``"E,W"`` or a sequence of sides.
    :param lanes: data lanes in each direction, at least 1.
    :returns: the resource names added, in the order of ``sides`` (``["link_e"]``); request
        them with ``platform.request("link_e", 0)``.
    :raises ValueError: for an unknown board or side, a side the board has no link pins for,
        or more lanes than the side's connector has pins for.
    """
    name = getattr(board_name, "name", board_name)
    if name not in LINK_PINOUTS:
        raise ValueError(f"no link pins are defined for board {name!r}; boards with link "
                         f"pins: {', '.join(LINK_PINOUTS)}")
    pinouts = LINK_PINOUTS[name]
    check_int(lanes, "lanes", minimum=1)
    resources = []
    for side in _parse_sides(sides):
        if side not in pinouts:
            have = ", ".join(f"{s} ({p.header})" for s, p in pinouts.items())
            raise ValueError(f"the {name} has no link pins for side {side}; it has sides "
                             f"{have}")
        pinout = pinouts[side]
        if lanes > pinout.max_lanes:
            raise ValueError(f"{lanes} lanes do not fit link side {side} of the {name} "
                             f"({pinout.header}): it has pins for at most {pinout.max_lanes} "
                             "data lanes each way besides the forwarded clocks; use "
                             f"lanes={pinout.max_lanes} or fewer")
        resources.append(pinout.resource(side, lanes))
    platform.add_resources(resources)
    return [resource.name for resource in resources]
