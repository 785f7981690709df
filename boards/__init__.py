"""The supported boards: the registry (:data:`BOARDS`, :class:`Board`, :func:`get_board`).

The rest of the board layer has a module each; their public names are re-exported here:

* :mod:`bitgrid.boards.platforms`: the amaranth-boards platforms and their quirks, the YoWASP
  tools (:func:`make_platform`, :data:`TOOLS`);
* :mod:`bitgrid.boards.top`: :class:`BoardTop`, one top for every board (host controller on the
  UART, status LEDs, optional links);
* :mod:`bitgrid.boards.toolflow`: :func:`build` (synthesis, place and route, packing, with a
  check of every stage's output) and its report (:func:`format_report`);
* :mod:`bitgrid.boards.programmer`: :func:`flash` (openFPGALoader or iceprog, into the
  board's SRAM or flash) and :func:`check_design` (IDENTIFY over the UART afterwards);
* :mod:`bitgrid.boards.image`: :func:`check_image`, what an FPGA image must be before it is
  programmed (its family's header, the device, the build report beside it);
* :mod:`bitgrid.boards.resources`: :func:`max_grid` and :func:`check_fits`, the largest grid
  a board holds, estimated from the measured costs;
* :mod:`bitgrid.boards.progress`: :class:`LogFollower`, progress lines from the tools' logs;
* :mod:`bitgrid.boards.links`: the link pins of boards that join into a mesh.

See ``docs/boards.md``.
"""

from dataclasses import dataclass, field

from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.ulx3s import (ULX3S_12F_Platform, ULX3S_25F_Platform, ULX3S_45F_Platform,
                                   ULX3S_85F_Platform)

from .lutram import gowin_ram16sdp4, trellis_dpr16x4, with_lut_ram
from .platforms import PRODUCTS, TOOLS, HimbaechelGowin, make_platform, no_programmer

__all__ = ["Board", "BOARDS", "BoardTop", "BuildError", "FlashError", "ImageError",
           "GridTooLargeError", "UnknownBoardError", "get_board", "make_platform", "build",
           "flash", "check_design", "check_image", "max_grid", "check_fits", "format_report",
           "TOOLS", "DEFAULT_BAUD", "LED_FUNCTIONS"]


@dataclass(frozen=True)
class Board:
    """One supported board.

    :param name: the name on the command line.
    :param family: ``"ice40"``, ``"ecp5"`` or ``"gowin"``.
    :param fpga: the device, for listings.
    :param platform: the amaranth-boards platform class (with the quirks of
        :mod:`bitgrid.boards.platforms` worked around).
    :param default_size: the grid built without ``--size``, ``(width, height)``.
    :param storage: the grid's storage back end, ``"ff"`` or ``"memory"``.
    :param flash_tool: the programmer the platform uses.
    :param flash_args: its arguments before the memory option and the FPGA image.
    :param program_to: what ``bitgrid flash`` writes by default: ``"sram"`` (lost at power-off)
        or ``"flash"`` (the configuration flash, kept), as the amaranth-boards platform does.
    :param jtag_idcode: the device's JTAG IDCODE as the FPGA image carries it (ECP5
        ``VERIFY_ID``, Gowin command 0x06), or None where the image names no device (iCE40).
    :param capacity: the device's resources that bound the grid, ``{name: available}`` (names
        of :data:`bitgrid.boards.resources.CELL_COSTS`).
    :param usb_serial: ``(vid, pid, interface)`` of the board's USB serial port (the UART of
        the host link), for finding it; ``interface`` None if the chip has one.
    :param leds: what each ``("led", n)`` resource shows, in order (:data:`LED_FUNCTIONS`).
    :param pnr_target_mhz: the clock frequency nextpnr is asked to meet (None: the board's
        clock). Above the board clock it makes the timing-driven placer work for a higher Fmax,
        the figure the benchmarks report; the board still runs at its own clock.
    :param pipelined: build the pipelined direct grid (``Grid(pipelined=True)``: per-row
        enables, registered configuration port, three-cycle readback), for Fmax; not on the
        iCE40, whose grid is small and whose logic cells are all used.
    """
    name: str
    family: str
    fpga: str
    platform: type
    default_size: tuple
    storage: str
    flash_tool: str
    flash_args: tuple = ()
    program_to: str = "sram"
    jtag_idcode: int = None
    capacity: dict = field(default_factory=dict, compare=False)
    usb_serial: tuple = None
    leds: tuple = ("heartbeat", "valid", "error", "activity")
    notes: str = field(default="", compare=False)
    pnr_target_mhz: float = None
    pipelined: bool = False

    @property
    def bitstream_suffix(self):
        return PRODUCTS[self.family][1]


#: ECP5 JTAG IDCODEs (prjtrellis docs/architecture/bitstream_format.rst; the 12F is a 25F die
#: with its own IDCODE), LUT4 and distributed-RAM (TRELLIS_RAMW, 64 bits) sites as Lattice
#: specifies them (DS1044: 12/24/44/84 k LUTs, 97/194/351/669 kbit distributed RAM).
_ECP5 = {"12f": (0x21111043, 12000, 1552), "25f": (0x41111043, 24288, 3036),
         "45f": (0x41112043, 43848, 5616), "85f": (0x41113043, 83640, 10455)}


#: RAM16SDP4 primitives a Tang Nano 9K grid uses, of the GW1NR-9's 270 sites: 224, the most
#: that placed and routed (16x14; 256 did not). A 16 x 16 grid would keep rows 14 and 15 in
#: flip-flops; it did not place (nor with 240 sites and one flip-flop row): docs/boards.md.
TANGNANO9K_LUT_RAM_SITES = 224


def _ulx3s(size, platform, default_size):
    idcode, luts, ramw = _ECP5[size]
    return Board(f"ulx3s-{size}", "ecp5", f"Lattice ECP5 LFE5U-{size.upper()} (CABGA381)",
                 with_lut_ram(no_programmer(platform), trellis_dpr16x4), default_size, "memory",
                 "openFPGALoader",
                 ("-b", "ulx3s"), program_to="sram", jtag_idcode=idcode,
                 capacity={"LUT4": luts, "RAMW": ramw}, usb_serial=(0x0403, 0x6015, None),
                 pnr_target_mhz=100.0, pipelined=True)


BOARDS = {board.name: board for board in [
    # iCE40 UP5K: 5280 logic cells and no LUT RAM: flip-flop storage, about 140 logic cells a
    # cell (78 LUT4, 68 FFs); 6x4 is the largest that fits with the host controller (92 %).
    # iceprog writes the SPI flash unless given -S (amaranth-boards runs it without).
    Board("icebreaker", "ice40", "Lattice iCE40 UP5K (SG48)", ICEBreakerPlatform, (6, 4), "ff",
          "iceprog", (), program_to="flash", capacity={"LC": 5280},
          usb_serial=(0x0403, 0x6010, 1),                 # FT2232H, UART on interface B
          leds=("error", "run")),                         # led 0 is red, led 1 green
    # ECP5: about 13 LUT4 (with the LUT RAM's) and one RAMW a cell; 12F: 24x24 built (9083
    # LUT4, under the 12k the LFE5U-12F is specified for); 25F and 45F not built yet.
    _ulx3s("12f", ULX3S_12F_Platform, (24, 24)),
    _ulx3s("25f", ULX3S_25F_Platform, (32, 32)),
    _ulx3s("45f", ULX3S_45F_Platform, (48, 48)),
    _ulx3s("85f", ULX3S_85F_Platform, (64, 64)),
    # GW1NR-9: 270 RAM16SDP4 sites, one per cell; nextpnr-himbaechel cannot legalise 256 of
    # them (16x16) even with LUTs at 65 %; 16x14 (224) places and routes. Rows beyond 224
    # sites are flip-flop rows (hdl.grid.rows_in_lut_ram); 16x16 so did not place either.
    Board("tangnano9k", "gowin", "Gowin GW1NR-LV9 (QN88)",
          with_lut_ram(HimbaechelGowin, gowin_ram16sdp4, sites=TANGNANO9K_LUT_RAM_SITES),
          (16, 14), "memory",
          "openFPGALoader", ("-b", "tangnano9k"), program_to="sram", jtag_idcode=0x1100481B,
          capacity={"LUT4": 8640, "FF": 6480, "RAM16SDP4": 270},
          usb_serial=(0x0403, 0x6010, 1),                 # BL702 as an FT2232, UART on B
          leds=("heartbeat", "valid", "error", "activity", "run"), pipelined=True),
]}


class UnknownBoardError(ValueError):
    """A board name that is not in :data:`BOARDS`; the message lists the supported ones."""

    def __init__(self, name):
        self.name = name
        super().__init__(f"unknown board {name!r}; supported boards: {', '.join(BOARDS)}")


def get_board(name):
    """The :class:`Board` called ``name`` (a :class:`Board` is returned as it is).

    :raises UnknownBoardError: listing the supported boards.
    """
    if isinstance(name, Board):
        return name
    try:
        return BOARDS[name]
    except (KeyError, TypeError):
        raise UnknownBoardError(name) from None


# Re-exports (after the registry: these modules import it).
from .top import DEFAULT_BAUD, LED_FUNCTIONS, BoardTop  # noqa: E402
from .toolflow import BuildError, build, format_report  # noqa: E402
from .resources import GridTooLargeError, check_fits, max_grid  # noqa: E402
from .programmer import FlashError, check_design, flash  # noqa: E402
from .image import ImageError, check_image  # noqa: E402
