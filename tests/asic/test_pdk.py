"""The PDK files of the ASIC flow (bitgrid.asic.pdk): the liberty reader against the LEF (an
independent source of every cell's size), pin directions and storage kinds against the cell
naming conventions of each library, gzip and plain files alike, and the errors for missing
files."""

import gzip
import re

import pytest

from bitgrid.asic.pdk import (PDKS, PdkMissingError, find_pdk, read_lef_sizes,
                              read_liberty_cells)
from support.gateware import raises_exactly


@pytest.fixture(scope="module")
def sky130():
    return find_pdk("sky130")


def test_sky130_areas_match_lef(sky130):
    """Every sky130_fd_sc_hd cell's liberty area is its LEF SIZE (w x h in um) to 0.1 % (the
    PDK's own data differ by rounding, e.g. dfsbp_2: 30.0152 against 30.0288); the library
    has hundreds of cells."""
    cells = read_liberty_cells(sky130.liberty)
    sizes = read_lef_sizes(sky130.lef)
    common = sorted(set(cells) & set(sizes))
    assert len(common) > 300
    for name in common:
        assert cells[name].area == pytest.approx(sizes[name], rel=1e-3), name


def test_sky130_storage_kinds_and_pins(sky130):
    """Flip-flops are the df/edf/sdf cells, latches the dl cells other than the delay
    gates and the clock gates (their names, SkyWater's convention); a latch has inputs D and
    GATE and output Q."""
    cells = sky130.cells()
    for name, cell in cells.items():
        base = name.split("__")[1]
        if re.match(r"(df|edf|sdf|sedf|dfb|dfr|dfs|dfx|dfbb)", base):
            assert cell.kind == "ff", name
        elif re.match(r"dl(x|r|ss|rb|rt)", base):
            assert cell.kind == "latch", name
        elif re.match(r"(nand|nor|and|or|xor|xnor|inv|buf|mux|a\d|o\d)", base):
            assert cell.kind == "comb", name
    latch = cells["sky130_fd_sc_hd__dlxtp_1"]
    assert latch.pins == {"D": "input", "GATE": "input", "Q": "output"}
    assert latch.outputs == ("Q",)
    assert cells["sky130_fd_sc_hd__nand2_1"].pins == {"A": "input", "B": "input",
                                                     "Y": "output"}


def test_plain_and_gzip_read_the_same(sky130, tmp_path):
    """A real PDK root holds plain files: the reader gives the same cells for both."""
    plain = tmp_path / "lib.lib"
    with gzip.open(sky130.liberty, "rb") as file:
        plain.write_bytes(file.read())
    assert read_liberty_cells(plain) == read_liberty_cells(sky130.liberty)
    copy = sky130.plain_liberty(tmp_path / "cache")
    assert copy.suffix == ".lib" and copy.read_bytes() == plain.read_bytes()


def test_plain_pdk_root(sky130, tmp_path):
    """A PDK root with uncompressed files (a ciel/volare layout) is found through pdk_root."""
    folder = tmp_path / "sky130A/libs.ref/sky130_fd_sc_hd/lib"
    folder.mkdir(parents=True)
    with gzip.open(sky130.liberty, "rb") as file:
        (folder / sky130.liberty.name[:-3]).write_bytes(file.read())
    pdk = find_pdk("sky130", tmp_path)
    assert pdk.liberty.suffix == ".lib" and pdk.lef is None


def test_gf180():
    pdk = find_pdk("gf180")
    cells = pdk.cells()
    assert cells["gf180mcu_fd_sc_mcu7t5v0__latq_1"].kind == "latch"
    assert cells["gf180mcu_fd_sc_mcu7t5v0__dffq_1"].kind == "ff"
    assert cells["gf180mcu_fd_sc_mcu7t5v0__nand2_1"].pins["ZN"] == "output"


def test_osu018_latch_area_from_lef():
    """OSU018's liberty gives LATCH area 0 (issue 14); the flow takes the LEF size, 5.6 x 10
    um, and the other cells keep their liberty area, which equals their LEF size."""
    pdk = find_pdk("osu018")
    assert read_liberty_cells(pdk.liberty)["LATCH"].area == 0
    cells = pdk.cells()
    assert cells["LATCH"].area == pytest.approx(56.0)
    assert cells["LATCH"].kind == "latch"
    assert pdk.zero_area_cells() == ["LATCH"]
    sizes = read_lef_sizes(pdk.lef)
    for name in ("NAND2X1", "DFFPOSX1", "MUX2X1", "INVX1"):
        assert cells[name].area == pytest.approx(sizes[name]), name


def test_missing_pdk_names_the_install(tmp_path):
    with pytest.raises(PdkMissingError) as info:
        find_pdk("gf180", tmp_path)
    assert "ciel enable --pdk gf180mcu" in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_unknown_pdk():
    with raises_exactly(ValueError, "PDK must be one of 'sky130', 'gf180', 'osu018', not "
                                    "'tsmc7'"):
        find_pdk("tsmc7")
    with raises_exactly(ValueError, "Corner must be one of 'tt', not 'ss'"):
        find_pdk("sky130", corner="ss")
    assert PDKS == ("sky130", "gf180", "osu018")
