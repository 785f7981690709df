"""``bitgrid asic`` end to end (bitgrid.asic.flow, model/cli/asic.py): YoWASP Yosys to a PDK's
liberty, the area split, OpenSTA, the report files and the errors. The storage elements of
the synthesised netlists are counted by the liberty's own storage groups and checked against
the architecture (64 configuration bits and 4 output registers per cell, SPEC section 3);
the store's area against the LEF sizes of its cells (an independent source)."""

import json

import pytest
from click.testing import CliRunner

from bitgrid.asic.pdk import find_pdk, read_lef_sizes
from bitgrid.cli import main


def _run(args):
    return CliRunner().invoke(main, ["asic", "--no-progress", *args])


def _storage_counts(cells, library):
    counts = {"ff": 0, "latch": 0, "comb": 0}
    for kind, count in cells.items():
        counts[library[kind].kind] += count
    return counts


def _check_report(report, pdk, storage, width, height):
    lib = find_pdk(pdk)
    library = lib.cells()
    cell = _storage_counts(report["cells"]["cell"], library)
    grid = _storage_counts(report["cells"]["grid"], library)
    if storage == "latch":
        assert (cell["latch"], cell["ff"]) == (64, 4)
        assert grid["latch"] == 64 * width * height
    else:
        assert (cell["latch"], cell["ff"]) == (0, 68)
        assert grid["latch"] == 0 and grid["ff"] >= 68 * width * height
    split = report["area"]["split_per_cell"]
    assert sum(split["output_registers"]["cells"].values()) == 4
    assert split["configuration_store"]["cells"].get(
        max(split["configuration_store"]["cells"], key=split["configuration_store"]["cells"].get)
    ) == 64
    area = report["area"]
    assert area["per_cell_um2"] == pytest.approx(area["grid_um2"] / (width * height), rel=1e-4)
    assert area["per_lut4_um2"] == pytest.approx(area["per_cell_um2"] / 4, rel=1e-4)
    parts = sum(part["area_um2"] for part in split.values())
    assert parts == pytest.approx(area["per_cell_um2"], abs=0.01)
    timing = report["timing"]
    assert timing["worst_path_ns"] > 0
    assert timing["phase_clock_mhz"] == pytest.approx(1000 / timing["worst_path_ns"], rel=1e-3)
    assert timing["path"][0]["pin"].endswith("/CLK")
    assert library[timing["path"][0]["cell"]].kind == "ff"
    assert library[timing["path"][-1]["cell"]].kind == "ff"
    assert any("ideal clock" in text for text in timing["assumptions"])
    return library


def test_sky130_latch_2x2(tmp_path):
    """The latch store on sky130: 64 latches and 4 flip-flops per cell, the store's area is
    64 times the LEF size of the latch cell used, and the report files agree with stdout."""
    out = tmp_path / "asic"
    result = _run(["--pdk", "sky130", "--size", "2x2", "--storage", "latch", "-o", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert (report["pdk"], report["storage"], report["width"], report["height"]) == (
        "sky130", "latch", 2, 2)
    _check_report(report, "sky130", "latch", 2, 2)
    store = report["area"]["split_per_cell"]["configuration_store"]
    sizes = read_lef_sizes(find_pdk("sky130").lef)
    assert store["area_um2"] == pytest.approx(
        sum(sizes[kind] * n for kind, n in store["cells"].items()), rel=1e-3)
    assert result.output == (out / "report.txt").read_text()
    assert "latch storage" in result.output and "phase clock" in result.output
    for key in ("rtl", "netlist", "cell_netlist"):
        assert (tmp_path / report["files"][key]).exists() or \
            (out / report["files"][key]).exists()
    netlist = (out / "synth" / "bitgrid_grid.mapped.v").read_text()
    assert "sky130_fd_sc_hd__dlxtp_1" in netlist and "lpflow" not in netlist


@pytest.mark.slow
@pytest.mark.parametrize("pdk", ["sky130", "gf180", "osu018"])
@pytest.mark.parametrize("storage", ["ff", "latch"])
def test_every_pdk(tmp_path, pdk, storage):
    """Both storage kinds on the three PDKs (2 x 2; --json)."""
    result = _run(["--pdk", pdk, "--size", "2x2", "--storage", storage, "--json",
                   "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    library = _check_report(report, pdk, storage, 2, 2)
    assert not any("lpflow" in kind or "probe" in kind for kind in report["cells"]["grid"])
    if pdk == "osu018" and storage == "latch":
        assert report["zero_area_cells_from_lef"] == ["LATCH"]
        assert report["cells"]["cell"]["LATCH"] == 64
        assert library["LATCH"].area == pytest.approx(56.0)


@pytest.mark.parametrize("args, message", [
    (["--pdk", "sky130", "--size", "3x2"], "even"),
    (["--pdk", "gf180", "--pdk-root", "/nonexistent"], "ciel enable --pdk gf180mcu"),
    (["--pdk", "sky130", "--storage", "memory"], "'memory' is not one of 'ff', 'latch'"),
])
def test_bad_input(tmp_path, args, message):
    result = _run([*args, "-o", str(tmp_path / "x")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_sta_missing_names_the_package(monkeypatch, tmp_path):
    """Without Debian's OpenSTA the flow stops with the apt-get line (exit 2 in the CLI)."""
    import bitgrid.asic.sta as sta
    from bitgrid.toolchain import ToolMissingError
    monkeypatch.setattr(sta, "find_tool", lambda name: None)
    with pytest.raises(ToolMissingError) as info:
        sta.run_sta(tmp_path / "x.v", "top", tmp_path / "x.lib", tmp_path)
    assert str(info.value) == (
        "sta was not found on PATH (needed to time the synthesised netlist (Debian's "
        "OpenSTA)). Install it with: apt-get install --no-install-recommends opensta")


@pytest.mark.parametrize("content, message", [
    (b"", "has no cell sky130_fd_sc_hd__nand2_1 (cut short, or another library's)"),
    (b"library (x) {\n  cell (y) {\n    area : 1;\n  }\n}\n", "has no cell sky130_fd_sc_hd__nand2"),
    (b"not gzip", "cannot read the sky130 liberty or LEF"),
])
def test_bad_liberty_writes_nothing(tmp_path, content, message):
    """A PDK root whose liberty is empty, another library's or not gzip: exit 2 with the
    reinstall command, before any output is written."""
    folder = tmp_path / "root/sky130A/libs.ref/sky130_fd_sc_hd/lib"
    folder.mkdir(parents=True)
    name = "sky130_fd_sc_hd__tt_025C_1v80.lib" + (".gz" if content == b"not gzip" else "")
    (folder / name).write_bytes(content)
    result = _run(["--pdk", "sky130", "--pdk-root", str(tmp_path / "root"),
                   "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert message in result.output and "ciel enable --pdk sky130" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_sta_missing_stops_before_synthesis(monkeypatch, tmp_path):
    """Without OpenSTA the command stops at once (exit 2, the apt-get line), not after the
    synthesis with a half-written folder; --no-timing does not need it."""
    import bitgrid.asic.sta as sta
    monkeypatch.setattr(sta, "find_tool", lambda name: None)
    result = _run(["--pdk", "sky130", "-o", str(tmp_path / "x")])
    assert result.exit_code == 2, result.output
    assert "apt-get install --no-install-recommends opensta" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_osu018_ff_names_no_lef_sized_cell(tmp_path):
    """The note on cells sized from the LEF names only cells the design uses: OSU018's LATCH
    (area 0 in its liberty) is not in a flip-flop grid (about 8 s of CPU, --no-timing)."""
    result = _run(["--pdk", "osu018", "--no-timing", "--json", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert "LATCH" not in report["cells"]["grid"]
    assert report["zero_area_cells_from_lef"] == []
    assert "sized from the LEF" not in (tmp_path / "report.txt").read_text()
