"""The board resource model (bitgrid.boards.resources): the largest grid per board, the refusal
of a too-large `bitgrid build` before any tool runs, and what `bitgrid boards` shows.

The measured builds (docs/boards.md, "Measured builds") are the reference: each largest grid
built must fit the estimate, and the grids that do not fit by the measured per-cell cost
(iCEBreaker 6 x 6, 8 x 4; the Tang Nano 9K's 16 x 16 and 18 x 16, whose rows beyond the 224
LUT-RAM sites would be flip-flop cells; the 16 x 16 failed in placement) must be refused. No
tool runs here.
"""

import json

import pytest
from click.testing import CliRunner

from bitgrid.boards import BOARDS, GridTooLargeError, check_fits, max_grid, toolflow
from bitgrid.boards.resources import grid_needs
from bitgrid.cli import main

#: The largest grids placed and routed (docs/boards.md, 2026-11-30).
BUILT = {"icebreaker": (6, 4), "tangnano9k": (16, 14), "ulx3s-12f": (24, 24),
         "ulx3s-85f": (64, 64)}

#: Measured use of the builds above, for the model's error: (resource, used).
MEASURED = {"icebreaker": ("LC", 4860), "tangnano9k": ("LUT4", 5041),
            "ulx3s-12f": ("LUT4", 9083), "ulx3s-85f": ("LUT4", 54558)}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("name", list(BUILT))
def test_every_measured_build_fits_the_estimate(name):
    check_fits(name, BUILT[name])
    largest = max_grid(name)
    assert largest[0] * largest[1] >= BUILT[name][0] * BUILT[name][1]


@pytest.mark.parametrize("name", list(MEASURED))
def test_estimate_is_within_5_percent_of_the_measured_use(name):
    resource, used = MEASURED[name]
    need, _ = grid_needs(name, BUILT[name])[resource]
    assert abs(need - used) <= 0.05 * used


def test_largest_grids():
    """iCEBreaker and Tang Nano 9K: the largest built is the largest that fits."""
    assert max_grid("icebreaker") == (6, 4)
    # 16 x 16 would be 14 rows of RAM16SDP4 (the platform's 224 sites) and 2 of flip-flop
    # cells: refused by the flip-flops, as its build failed in placement.
    assert max_grid("tangnano9k") == (16, 14)
    assert grid_needs("tangnano9k", (16, 16))["RAM16SDP4"][0] == 224
    # With a link side (about 1,200 LUTs, docs/two-boards.md): two iCEBreakers take 4 x 4.
    assert max_grid("icebreaker", links=1) == (4, 4)
    # ECP5 by LUT4 (12.86 a cell): the docs' "about 28 x 28" on the 12F.
    assert max_grid("ulx3s-12f") == (28, 28)
    assert max_grid("ulx3s-85f") >= (64, 64)


@pytest.mark.parametrize("name, size, resource", [
    ("icebreaker", (6, 6), "logic cells"),           # the 2.5-minute "no BELs remaining"
    ("icebreaker", (8, 4), "logic cells"),           # "about 5,900 LCs" (docs/boards.md)
    ("tangnano9k", (16, 16), "flip-flops"),          # 2 flip-flop rows: failed in placement
    ("tangnano9k", (18, 16), "LUT4"),                # 12 rows in LUT RAM, 4 in flip-flops
    ("ulx3s-12f", (32, 32), "LUT4"),
    ("ulx3s-85f", (96, 96), "LUT4"),
])
def test_too_large_grids_are_refused(name, size, resource):
    with pytest.raises(GridTooLargeError, match=resource) as error:
        check_fits(name, size)
    largest = max_grid(name)
    assert f"the largest estimated to fit is {largest[0]}x{largest[1]}" in str(error.value)


def test_defaults_fit():
    for board in BOARDS.values():
        check_fits(board, board.default_size)


def test_ff_storage_costs_more_on_ecp5():
    assert max_grid("ulx3s-85f", storage="ff")[0] < max_grid("ulx3s-85f")[0]
    with pytest.raises(ValueError, match="no resource estimate for 'sram' storage"):
        grid_needs("icebreaker", (2, 2), storage="sram")


def _no_tool(monkeypatch):
    ran = []
    monkeypatch.setattr(toolflow, "tool_env", lambda board: ran.append("tool_env") or {})

    def stage(argv, cwd, log_path, **kw):
        ran.append(argv[0])
        open(log_path, "w").close()
        return 0
    monkeypatch.setattr(toolflow, "_run_stage", stage)
    return ran


def test_build_refuses_a_too_large_grid_before_any_tool(monkeypatch, tmp_path):
    ran = _no_tool(monkeypatch)
    out = tmp_path / "out"
    result = invoke("build", "--board", "icebreaker", "--size", "6x6", "--output", out)
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: a grid of 6x6 cells does not fit the icebreaker: it needs about 6540 logic cells, the "
        "board has 5280; the largest estimated to fit is 6x4 (bitgrid boards); use a smaller "
        "--size, or --force to try anyway")
    assert ran == [] and not out.exists()


def test_build_refuses_a_tile_with_its_link(monkeypatch, tmp_path):
    ran = _no_tool(monkeypatch)
    result = invoke("build", "--board", "icebreaker", "--size", "6x4", "--link", "E",
                    "--output", tmp_path / "out")
    assert result.exit_code == 2
    assert "a grid of 6x4 cells with 1 link side(s) does not fit the icebreaker" in result.output
    assert "the largest estimated to fit is 4x4" in result.output
    assert ran == []


def test_build_force_tries_anyway(monkeypatch, tmp_path):
    ran = _no_tool(monkeypatch)
    result = invoke("build", "--board", "icebreaker", "--size", "6x6", "--force",
                    "--output", tmp_path / "out")
    # The stub Yosys writes nothing: the build got as far as running it.
    assert result.exit_code == 2
    assert "synthesis (Yosys) ended without writing bitgrid.json" in result.output
    assert ran == ["tool_env", "yosys"]           # tool_env stubbed: the plain name


def test_boards_shows_link_signalling_and_estimate():
    result = invoke("boards")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split("  ")[:1] == ["board"] and "largest (est.)" in lines[0]
    assert "links" in lines[0]
    boards = lines[1:lines.index("")]                # the first table; then the builds
    rows = {line.split()[0]: line for line in boards}
    assert "6x4" in rows["icebreaker"] and "single-ended LVCMOS33" in rows["icebreaker"]
    assert "single-ended LVCMOS33" in rows["tangnano9k"]
    for name in ("ulx3s-12f", "ulx3s-25f", "ulx3s-45f", "ulx3s-85f"):
        assert "LVDS pairs" in rows[name]
    assert "iceprog (flash)" in rows["icebreaker"]
    assert "openFPGALoader (sram)" in rows["ulx3s-85f"]


def test_boards_json_has_the_estimate():
    rows = {row["name"]: row for row in json.loads(invoke("boards", "--json").output)}
    assert rows["icebreaker"]["largest_grid_estimate"] == "6x4"
    assert rows["tangnano9k"]["largest_grid_estimate"] == "16x14"
    assert rows["ulx3s-85f"]["link_signalling"] == "LVDS pairs"
    assert rows["icebreaker"]["link_signalling"] == "single-ended LVCMOS33"
    assert rows["icebreaker"]["program_to"] == "flash"


def test_tang_nano_flip_flop_rows():
    """With the board's 224 LUT-RAM sites (two flip-flop rows) the 16 x 16 grid needs the
    5,865 DFF positions nextpnr counted in the build that failed in placement: more than the
    usable 85 % of 6,480; with 240 sites (one flip-flop row, 4,953 counted) the estimate fits
    (that build failed in placement too, docs/boards.md)."""
    import dataclasses

    from bitgrid.boards.lutram import gowin_ram16sdp4, with_lut_ram
    from bitgrid.boards.platforms import HimbaechelGowin
    board = BOARDS["tangnano9k"]
    assert grid_needs(board, (16, 16))["FF"] == (5865, 5508)
    with pytest.raises(GridTooLargeError, match="flip-flops"):
        check_fits(board, (16, 16))
    wider = dataclasses.replace(board, platform=with_lut_ram(HimbaechelGowin, gowin_ram16sdp4,
                                                             sites=240))
    assert abs(grid_needs(wider, (16, 16))["FF"][0] - 4953) <= 0.05 * 4953
