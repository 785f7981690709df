"""``bitgrid asic --place-route`` and ``--tinytapeout`` (bitgrid.cli.asic_layout): refusals
with exit 2 and one line, before any work; the Tiny Tapeout folder written with the tile count
of its core's area."""

import re

import pytest
from click.testing import CliRunner

from bitgrid.cli import main


def _run(*args):
    return CliRunner().invoke(main, ["asic", *args])


@pytest.mark.parametrize("pdk", ["sky130", "gf180"])
def test_place_route_refused_without_openroad(pdk, tmp_path):
    result = _run("--pdk", pdk, "--place-route", "-o", str(tmp_path / "o"))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "OpenROAD" in lines[0] and "osu018" in lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_place_route_missing_tool(monkeypatch, tmp_path):
    import shutil
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t: None if t == "qrouter" else real(t))
    result = _run("--pdk", "osu018", "--place-route", "-o", str(tmp_path / "o"))
    assert result.exit_code == 2, result.output
    assert "qrouter" in result.output
    assert "apt-get install -y --no-install-recommends qflow" in result.output
    assert not (tmp_path / "o").exists()


def test_pdk_needed_without_tinytapeout(tmp_path):
    result = _run("-o", str(tmp_path / "o"))
    assert result.exit_code == 2 and "--pdk" in result.output


def test_tinytapeout_refuses_other_pdk_and_wrong_case_size(tmp_path):
    result = _run("--tinytapeout", "--pdk", "gf180", "-o", str(tmp_path / "o"))
    assert result.exit_code == 2 and "sky130" in result.output
    from support.conformance import conformance_dir
    case = f"{conformance_dir()}/random_8x8.json"
    result = _run("--tinytapeout", "--size", "2x2", "--vectors", case, "-o", str(tmp_path / "o"))
    assert result.exit_code == 2 and "--size 8x8" in result.output
    assert not (tmp_path / "o").exists()


def test_tinytapeout_writes_folder_with_tiles(monkeypatch, tmp_path):
    from bitgrid.asic import tinytapeout
    seen = {}

    def area(width, height, work_dir, *, storage, pdk_root):
        seen.update(width=width, height=height, storage=storage)
        return 25_000.0, "test area"                 # 2.31 tiles at 60 %: 2x2
    monkeypatch.setattr(tinytapeout, "core_area", area)
    out = tmp_path / "tt"
    result = _run("--tinytapeout", "--size", "4x4", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert seen == {"width": 4, "height": 4, "storage": "ff"}
    assert "tiles 2x2" in result.output and "lane banks  2" in result.output
    text = (out / "info.yaml").read_text()
    assert re.search(r'^  tiles: "2x2"', text, re.M)
    assert re.search(r'^  top_module:\s+"tt_um_bitgrid_4x4"', text, re.M)
    assert (out / "test" / "case.json").is_file() and (out / "src" / "project.v").is_file()
