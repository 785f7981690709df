"""bitgrid.defects: the bitgrid-defects-v1 map (SPEC section 10)."""

import json

import pytest

from bitgrid import defects
from bitgrid.defects import Defect, DefectMap, DefectMapError
from bitgrid.terms import Direction


def test_round_trip_through_a_file(tmp_path):
    original = DefectMap(6, 4, [{"x": 5, "y": 3, "kind": "stuck1", "output": "W"},
                                Defect(0, 1, "dead"), {"x": 2, "y": 0, "kind": "lut"}])
    path = tmp_path / "map.json"
    defects.save(path, original)
    document = json.loads(path.read_text())
    assert document == {"format": "bitgrid-defects-v1", "width": 6, "height": 4, "defects": [
        {"x": 2, "y": 0, "kind": "lut"}, {"x": 0, "y": 1, "kind": "dead"},
        {"x": 5, "y": 3, "kind": "stuck1", "output": "W"}]}
    again = defects.load(path)
    assert again == original
    assert again.bad_cells == {(5, 3), (0, 1), (2, 0)}
    assert Defect(5, 3, "stuck1", Direction.W) in again.defects


@pytest.mark.parametrize("document, message", [
    ({"format": "bitgrid-defects-v0", "width": 4, "height": 4, "defects": []}, "not a"),
    ({"format": "bitgrid-defects-v1", "width": 3, "height": 4, "defects": []}, "even"),
    ({"format": "bitgrid-defects-v1", "width": 4, "height": 4,
      "defects": [{"x": 4, "y": 0, "kind": "dead"}]}, "x"),
    ({"format": "bitgrid-defects-v1", "width": 4, "height": 4,
      "defects": [{"x": 0, "y": 0, "kind": "melted"}]}, "kind"),
    ({"format": "bitgrid-defects-v1", "width": 4, "height": 4,
      "defects": [{"x": 0, "y": 0, "kind": "stuck0", "output": "Q"}]}, "side"),
    ({"format": "bitgrid-defects-v1", "width": 4, "height": 4,
      "defects": [{"x": 0, "y": 0, "kind": "dead"}, {"x": 0, "y": 0, "kind": "lut"}]},
     "twice"),
    ({"format": "bitgrid-defects-v1", "width": 4, "height": 4, "defects": {}}, "list"),
    ({"format": "bitgrid-defects-v1", "width": 4, "height": 4, "defects": [], "x": 1},
     "unknown"),
])
def test_bad_maps_are_refused_with_the_reason(document, message, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(DefectMapError, match=message):
        defects.load(path)


def test_garbage_file(tmp_path):
    path = tmp_path / "garbage.json"
    path.write_bytes(b"\xff\x00 not json")
    with pytest.raises(DefectMapError, match="not a JSON defect map"):
        defects.load(path)


def test_check_grid():
    grid = DefectMap(4, 4)
    assert grid.check_grid(4, 4) is grid
    with pytest.raises(DefectMapError, match="4 x 4 grid, not 8 x 8"):
        grid.check_grid(8, 8)
