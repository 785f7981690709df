"""The MPI part of the benchmarks (bench/mpi.py) works and counts the traffic right: a tiny grid
on 1 and 2 ranks. Never a timing."""

from bitgrid.bench import PARTS, mpi, quick_options, suite_options
from bitgrid.bench.common import value


def test_mpi_part_counts_bytes_and_cells():
    part = mpi.measure((8,), ranks=(2,), halos=(2,), emulator="reference", work=1e3,
                       progress=False)
    rows = {(r["series"], r["ranks"]): r for r in part["rows"]}
    assert sorted(rows) == [("strong", 2), ("weak", 2)]
    # 8 x 8 on 2 ranks, halo 2: tiles 4 x 8 extended by 2 columns; each rank sends one strip of
    # 2 columns x 8 rows x 4 outputs = 64 bits and evaluates 6 x 8 / 2 cells per subcycle, 2
    # subcycles per exchange.
    two = rows[("strong", 2)]
    assert two["tiles"] == "2x1" and two["emulator"] == "reference"
    assert value(two["bytes_per_exchange"]) == 8
    assert value(two["messages_per_exchange"]) == 1
    assert two["cells_per_exchange"] == 6 * 8 // 2 * 2
    assert abs(value(two["redundant_share"]) - 0.5) < 1e-12
    assert two["exchanges"] == two["subcycles"] // 2
    weak = rows[("weak", 2)]
    assert weak["size"] == [16, 8] and weak["cells_per_exchange"] == 10 * 8 // 2 * 2
    for row in part["rows"]:
        assert value(row["rate"]) > 0 and value(row["cpu_rate"]) > 0
        assert row["subcycles"] % 2 == 0
        assert "efficiency" not in row          # no 1-rank row to compare with
    text = mpi.format_part(part)
    assert text.count("\n") == 2 + len(part["rows"])


def test_mpi_part_in_the_suite():
    assert "mpi" in PARTS
    assert suite_options()["mpi"]["sizes"] == mpi.SUITE_SIZES
    assert quick_options()["mpi"]["sizes"] == mpi.QUICK_SIZES
