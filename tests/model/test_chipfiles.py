"""bitgrid.chipfiles: the checks of `bitgrid bitstream slice` and `join` on chip files."""

import pytest

from bitgrid import Configuration, bitstream
from bitgrid.chipfiles import bitstream_stem, chip_stem, place_join, slice_folder, \
    stem_chip_files
from bitgrid.mesh import MeshError, MeshShape, write_slices


def test_stems():
    assert bitstream_stem("x/adder.BGBS") == "adder"
    assert bitstream_stem("adder.v1") == "adder.v1"
    assert chip_stem("x/adder.c0r12.bgbs") == "adder"
    assert chip_stem("adder.bgbs") == "adder.bgbs"


def test_slice_folder(tmp_path):
    bs = bitstream.Bitstream(Configuration(8, 4))
    folder = tmp_path / "new" / "chips"
    assert slice_folder("a.bgbs", bs, MeshShape.parse("2x1"), folder) == (4, 4)
    assert folder.is_dir()
    with pytest.raises(MeshError, match=r"^a.bgbs: cannot slice a 8 x 4 grid into a 3x1 mesh: "):
        slice_folder("a.bgbs", bs, MeshShape.parse("3x1"), folder)
    (tmp_path / "file").write_text("")
    with pytest.raises(MeshError, match=r"file: is a file, not a folder$"):
        slice_folder("a.bgbs", bs, MeshShape.parse("2x1"), tmp_path / "file")


@pytest.fixture
def chips(tmp_path):
    """The chip files of an 8 x 4 grid sliced 2x1: ``{(col, row): path}``."""
    return write_slices(bitstream.Bitstream(Configuration(8, 4)), MeshShape.parse("2x1"),
                        str(tmp_path), stem="g")


def test_stem_chip_files(chips, tmp_path):
    stem = str(tmp_path / "g")
    assert stem_chip_files(stem, MeshShape.parse("2x1")) == [chips[(0, 0)], chips[(1, 0)]]
    assert stem_chip_files(stem + ".bgbs", MeshShape.parse("2x1")) == list(chips.values())
    with pytest.raises(MeshError, match=r"missing chip file .*g.c0r1.bgbs: a 1x2 mesh"):
        stem_chip_files(stem, MeshShape.parse("1x2"))
    with pytest.raises(MeshError, match=r"g.c1r0.bgbs: chip file outside the 1x1 mesh"):
        stem_chip_files(stem, MeshShape.parse("1x1"))


def test_place_join(chips, tmp_path):
    shape = MeshShape.parse("2x1")
    files = list(chips.values())
    assert place_join(files, shape, str(tmp_path / "out.bgbs")) == chips
    with pytest.raises(MeshError, match=r"is for chip \(1, 0\), outside the 1x1 mesh"):
        place_join(files, MeshShape.parse("1x1"), "out.bgbs")
    with pytest.raises(MeshError, match=r"^missing chip files for chips c0r1, c1r1: a 2x2 mesh"):
        place_join(files, MeshShape.parse("2x2"), "out.bgbs")
    other = tmp_path / "h.c1r0.bgbs"
    other.write_bytes(open(chips[(1, 0)], "rb").read())
    with pytest.raises(MeshError, match=r"different bitstreams \(g, h\)"):
        place_join([chips[(0, 0)], str(other)], shape, "out.bgbs")
    with pytest.raises(MeshError, match=r"^-o .* is one of the chip files being joined"):
        place_join(files, shape, chips[(1, 0)])
