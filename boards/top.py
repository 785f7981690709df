"""The top of every board (:class:`BoardTop`): the host controller on the platform's UART, status
LEDs and, for a board of a mesh, links on the board's link pins."""

from amaranth.hdl import Module, Signal
from amaranth.lib import io, wiring

from bitgrid._overrides import silence_unused
from bitgrid.checks import check_choice, check_int
from bitgrid.config import check_grid_size
from bitgrid.hdl.host import HostController
from bitgrid.terms import ENGINES, parse_sides

from . import get_board
from .links import LINK_PINOUTS, add_link_resources, link_resource_name

__all__ = ["BoardTop", "DEFAULT_BAUD", "LED_FUNCTIONS"]

DEFAULT_BAUD = 115200

# What an LED can show; a board lists them in the order of its ("led", n) resources.
LED_FUNCTIONS = {
    "heartbeat": "blinks at about 1 Hz while the clock runs",
    "run": "on while a checked configuration is loaded, blinking (heartbeat) without one",
    "valid": "a checked configuration is loaded",
    "error": "the last load was rejected (bad CRC or protocol error during a load)",
    "activity": "UART receive activity (stretched to about 20 ms)",
}


class BoardTop(wiring.Component):
    """The top of every board: a :class:`~bitgrid.hdl.host.HostController` with a
    ``width`` x ``height`` grid on the platform's ``("uart", 0)`` resource, and LEDs.

    The UART divisor is ``round(f_clk / baud)`` for the platform's default clock; the baud rate
    error is checked to be under 2 %. The LEDs (``("led", n)``, as many as the board has and
    ``board.leds`` names) show the functions of :data:`LED_FUNCTIONS`.

    :param board: a :class:`Board` or its name.
    :param size: ``(width, height)``; ``board.default_size`` if None.
    :param baud: the UART's bit rate.
    :param link: sides (e.g. ``"E"``) with a link to a neighbouring board on the pins of
        :mod:`bitgrid.boards.links`; the grid is then a :class:`~bitgrid.hdl.mesh.MeshTile` and
        the board one chip of a mesh (docs/two-boards.md). SDR lanes only: DDR needs a
        90-degree clock from a PLL, which the board tops do not make yet.
    :param lanes: data lanes per link direction.
    :param engine: ``"direct"`` (one physical cell per BitGrid cell; pipelined where the
        board says so, :attr:`Board.pipelined`) or ``"multiplexed"`` (cells in block RAM,
        ``evaluators`` per clock; :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid`); SPEC
        section 7.
    :param evaluators: the multiplexed engine's cells per clock (None: its default).
    :raises ValueError: for a bad size, baud rate, side or lane count (the message names the
        board's connectors and how many lanes they carry).
    """

    def __init__(self, board, *, size=None, baud=DEFAULT_BAUD, link="", lanes=1,
                 engine="direct", evaluators=None):
        try:
            self._board = board = get_board(board)
            self._size = check_grid_size(*(size or board.default_size), what="board grid")
            self._baud = check_int(baud, "baud", minimum=1)
            link = parse_sides(link, what="link")
            pinouts = LINK_PINOUTS[board.name]
            for side in link:
                if side not in pinouts:
                    raise ValueError(f"the {board.name} has no link pins on side {side}; it "
                                     f"has sides {', '.join(sorted(pinouts))}")
                if not isinstance(lanes, int) or isinstance(lanes, bool) or \
                        not 1 <= lanes <= pinouts[side].max_lanes:
                    raise ValueError(f"the {board.name} carries 1 to "
                                     f"{pinouts[side].max_lanes} lanes on side {side}, not "
                                     f"{lanes!r}")
            self._link, self._lanes = link, lanes
            self._engine = check_choice(engine, "Engine", ENGINES)
            self._evaluators = evaluators
        except Exception:
            silence_unused(self)               # never built: no "created but never used"
            raise
        self.host = None                       # made in elaborate(): the clock sets the divisor
        super().__init__({})

    @property
    def board(self):
        return self._board

    @property
    def size(self):
        return self._size

    @property
    def engine(self):
        return self._engine

    @property
    def baud(self):
        return self._baud

    @property
    def link(self):
        """Linked sides, in N, E, S, W order (``""``: a single board)."""
        return self._link

    def divisor(self, clk_frequency):
        """Clock cycles per UART bit for a ``clk_frequency`` Hz clock.

        :raises ValueError: if the rate would be off by 2 % or more, or under 4 cycles a bit.
        """
        divisor = round(clk_frequency / self._baud)
        if divisor < 4 or abs(clk_frequency / divisor - self._baud) / self._baud >= 0.02:
            raise ValueError(f"{self._baud} baud cannot be made from a {clk_frequency / 1e6:g} "
                             f"MHz clock within 2 %")
        return divisor

    def _grid_options(self):
        """The HostController options that choose the grid: the engine (only when not the
        direct one) and, for the direct grid, the board's pipelining."""
        if self._engine != "direct":
            return {"engine": self._engine, "evaluators": self._evaluators}
        return {"pipelined": self._board.pipelined and not self._link}

    def elaborate(self, platform):
        m = Module()
        width, height = self._size
        divisor = self.divisor(platform.default_clk_frequency)
        link_ports = {}
        if self._link:
            add_link_resources(platform, self._board.name, sides=self._link, lanes=self._lanes)
            link_ports = {side: platform.request(link_resource_name(side), 0, dir="-")
                          for side in self._link}
        m.submodules.host = host = self.host = HostController(
            width, height, divisor=divisor, storage=self._board.storage, links=self._link,
            lanes=self._lanes, link_ports=link_ports, **self._grid_options())

        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.d.comb += [host.rx.eq(rx.i), tx.o.eq(host.tx)]

        clk = int(platform.default_clk_frequency)
        beat = Signal(range(clk))              # half a period of the heartbeat
        heartbeat = Signal()
        with m.If(beat == clk // 2 - 1):
            m.d.sync += [beat.eq(0), heartbeat.eq(~heartbeat)]
        with m.Else():
            m.d.sync += beat.eq(beat + 1)
        stretch = Signal(range(clk // 50 + 1))    # about 20 ms
        with m.If(~rx.i):
            m.d.sync += stretch.eq(clk // 50)
        with m.Elif(stretch != 0):
            m.d.sync += stretch.eq(stretch - 1)
        shows = {"heartbeat": heartbeat, "valid": host.valid, "error": host.load_failed,
                 "activity": stretch != 0, "run": host.valid | heartbeat}
        for number, function in enumerate(self._board.leds):
            led = io.Buffer("o", platform.request("led", number, dir="-"))
            m.submodules[f"led_{number}"] = led
            m.d.comb += led.o.eq(shows[function])
        return m
