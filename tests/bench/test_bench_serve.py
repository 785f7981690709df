"""The serve part of the benchmarks (bench/serve.py) works: real `bitgrid serve` processes on a
tiny grid. Never a timing."""

from bitgrid.bench import PARTS, quick_options, serve, suite_options
from bitgrid.bench.common import value


def test_serve_part_measures_round_trips_and_a_linked_mesh():
    part = serve.measure((4,), round_trips=5, mesh_steps=6, progress=False)
    assert [(r["target"], r["size"]) for r in part["round_trips"]] == [("emu", 4), ("fast", 4)]
    assert [(r["policy"], r["size"]) for r in part["mesh"]] == \
        [("both", 4), ("phase", 4), ("cycle", 4)]
    for row in part["round_trips"]:
        assert value(row["round_trips_per_s"]) > 0
        assert row["round_trips_per_s"]["unit"] == "1/s"
    for row in part["mesh"]:
        assert value(row["subcycles_per_s"]) > 0
    text = serve.format_part(part)
    assert text.count("\n") == 2 + 2 + 3 + 2


def test_serve_part_in_the_suite():
    assert "serve" in PARTS
    assert suite_options()["serve"]["sizes"] == serve.SUITE_SIZES
    assert quick_options()["serve"]["sizes"] == serve.QUICK_SIZES
