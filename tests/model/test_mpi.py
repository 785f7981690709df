"""Emulation across MPI ranks (bitgrid.mpi, ``bitgrid emulate --mpi``) against one emulator.

The runs start ``mpiexec`` (MPICH from PyPI, or Open MPI with the root and oversubscription
settings of :func:`bitgrid.mpi.mpiexec_command`) on 1, 2, 4 and 9 ranks of this 2-core
machine. Each launch runs a batch of cases (tests/support/mpi_worker.py) so that the start-up
of the ranks is paid once. Every output is compared with the reference
:class:`~bitgrid.emulator.Emulator` of the whole grid run in this process, and with the
expected outputs of the shared conformance cases; the pytest process itself never
initialises MPI.
"""

import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from bitgrid import mpi
from bitgrid.emulator import Emulator
from bitgrid.terms import Edges
from support.conformance import REPO, conformance_cases, conformance_dir, load_conformance

WORKER = os.path.join(REPO, "tests", "support", "mpi_worker.py")


def _launch(ranks, args, timeout=600):
    argv, env = mpi.mpiexec_command(ranks, args)
    env["BITGRID_MPI_WAIT"] = "yield"       # the test runs share the cores: never spin
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


def _random_case(rng, width, height, steps, **options):
    luts = rng.integers(0, 1 << 16, size=(height, width, 4), dtype=np.uint16)
    inputs = [tuple(int.from_bytes(rng.bytes(n // 8 + 1), "little") & ((1 << n) - 1)
                    for n in (width, height, width, height)) for _ in range(steps)]
    return dict(luts=luts, inputs=inputs, **options)


def _run_worker(tmp_path, ranks, cases):
    cases_path, results_path = tmp_path / "cases.pickle", tmp_path / "results.pickle"
    cases_path.write_bytes(pickle.dumps(cases))
    done = _launch(ranks, [sys.executable, WORKER, cases_path, results_path])
    assert done.returncode == 0, done.stderr[-3000:]
    return pickle.loads(results_path.read_bytes())


def _reference(case):
    from bitgrid.config import Configuration
    luts = case["luts"]
    emulator = Emulator(Configuration(luts.shape[1], luts.shape[0], luts))
    return [tuple(emulator.step(Edges(*e))) for e in case["inputs"]]


def _tile_sizes(bounds):
    return [b - a for a, b in zip(bounds, bounds[1:])]


def _check_stats(case, result):
    """Messages and bytes of each rank, counted from the tile sizes (independently of the
    exchange code): seam exchange one message of ceil(L / 8) bytes per inner side and subcycle;
    a halo of depth h one round every k subcycles, to each neighbour on a side 4 * h * L bits
    (L the tile's side), to each diagonal neighbour 4 * h * h bits."""
    steps, halo = len(case["inputs"]), case.get("halo", 1)
    xs, ys = result["xs"], result["ys"]
    cols, rows = len(xs) - 1, len(ys) - 1
    widths, heights = _tile_sizes(xs), _tile_sizes(ys)
    depth = 0 if halo == 1 else halo + halo % 2
    for stats in result["stats"]:
        col, row = stats["tile"]
        inner = {"n": row > 0, "s": row < rows - 1, "w": col > 0, "e": col < cols - 1}
        w, h = widths[col], heights[row]
        if depth == 0:
            per_step = sum(math.ceil((w if s in "ns" else h) / 8) for s in inner if inner[s])
            assert stats["bytes_sent"] == steps * per_step
            assert stats["messages"] == steps * sum(inner.values())
            assert stats["exchanges"] == (steps if any(inner.values()) else 0)
        else:
            rounds = math.ceil(steps / halo)
            corners = sum(inner[a] and inner[b] for a in "ns" for b in "ew")
            per_round = sum(math.ceil(4 * depth * (w if s in "ns" else h) / 8)
                            for s in inner if inner[s]) + corners * math.ceil(depth ** 2 / 2)
            assert stats["bytes_sent"] == rounds * per_round
            assert stats["messages"] == rounds * (sum(inner.values()) + corners)
            assert stats["exchanges"] == (rounds if any(inner.values()) else 0)
            wide = w + depth * (inner["w"] + inner["e"])
            assert stats["extended"][2:] == (wide, h + depth * (inner["n"] + inner["s"]))
        assert stats["tile_cell_updates"] == w * h // 2 * steps


# -- The decomposition (no MPI) ----------------------------------------------------------------

@pytest.mark.parametrize("cells, parts, sizes", [
    (64, 3, [22, 22, 20]), (8, 4, [2, 2, 2, 2]), (10, 3, [4, 4, 2]), (16, 1, [16]),
    (12, 5, [4, 2, 2, 2, 2]),
])
def test_split_sizes(cells, parts, sizes):
    d = mpi.Decomposition(cells, 2, f"{parts}x1")
    assert _tile_sizes(d.xs) == sizes
    assert d.xs[0] == 0 and d.xs[-1] == cells


@pytest.mark.parametrize("width, height, ranks, shape", [
    (8, 8, 4, "2x2"), (8, 16, 2, "1x2"), (16, 8, 2, "2x1"), (64, 64, 9, "3x3"),
    (2, 16, 4, "1x4"), (12, 12, 6, "3x2"), (8, 8, 1, "1x1"), (32, 8, 4, "4x1"),
])
def test_choose_cuts_fewest_lanes(width, height, ranks, shape):
    assert str(mpi.Decomposition.choose(width, height, ranks).shape) == shape


def test_tiles_cover_the_grid_once():
    d = mpi.Decomposition(22, 14, "3x2")
    seen = np.zeros((14, 22), dtype=int)
    for rank in range(len(d)):
        x0, x1, y0, y1 = d.bounds(*d.tile(rank))
        assert x0 % 2 == y0 % 2 == 0 and (x1 - x0) % 2 == (y1 - y0) % 2 == 0
        seen[y0:y1, x0:x1] += 1
        assert d.rank(*d.tile(rank)) == rank
    assert (seen == 1).all()


@pytest.mark.parametrize("call, message", [
    (lambda: mpi.Decomposition.choose(4, 4, 5), "use at most 4 ranks"),
    (lambda: mpi.Decomposition(8, 8, "5x1"), "at most 4 tile columns"),
    (lambda: mpi.Decomposition(7, 8, "1x1"), "even"),
    (lambda: mpi.check_halo(mpi.Decomposition(8, 8, "4x1"), 3), "use --halo 2 or less"),
    (lambda: mpi.halo_depth(0), "halo"),
])
def test_bad_shapes_and_halos(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("halo, depth", [(1, 0), (2, 2), (3, 4), (4, 4), (7, 8)])
def test_halo_depth(halo, depth):
    assert mpi.halo_depth(halo) == depth


# -- Runs on 1, 2, 4 and 9 ranks against one emulator -----------------------------------------

# Engines: the compiled kernel (packed planes; strips read and written across word bounds:
# 260 cells make tiles of 130 + 4 cells, 67 per parity, two words a row), the bit-parallel
# FastEmulator and the reference.
_CASES = {   # ranks: [(width, height, steps, options)]
    1: [(8, 6, 30, {"emulator": "reference"}), (12, 10, 25, {"halo": 4, "emulator": "fast"}),
        (10, 8, 20, {"emulator": "kernel"})],
    2: [(12, 10, 60, {"emulator": "reference"}), (10, 12, 50, {"halo": 2, "procs": "1x2"}),
        (16, 6, 41, {"halo": 3, "emulator": "fast"}), (8, 8, 37, {"halo": 4}),
        (260, 8, 30, {"halo": 4, "emulator": "kernel"}), (12, 8, 25, {"emulator": "kernel"})],
    4: [(12, 10, 60, {"emulator": "reference"}), (16, 14, 45, {"halo": 3}),
        (16, 8, 40, {"procs": "4x1", "halo": 2, "emulator": "reference"}),
        (6, 20, 33, {"procs": "1x4", "emulator": "fast"}), (20, 16, 50, {"halo": 6}),
        (140, 12, 24, {"halo": 2, "emulator": "kernel"})],
    9: [(12, 12, 40, {"emulator": "reference"}), (18, 16, 36, {"halo": 4, "emulator": "fast"}),
        (18, 4, 30, {"procs": "9x1", "halo": 2}),
        (390, 12, 20, {"halo": 2, "emulator": "kernel"})],
}


@pytest.mark.parametrize("ranks", [1, 2, 4, pytest.param(9, marks=pytest.mark.slow)])
def test_random_runs_equal_one_emulator(tmp_path, ranks):
    rng = np.random.default_rng(1000 + ranks)
    cases = [_random_case(rng, w, h, t, **o) for w, h, t, o in _CASES[ranks]]
    results = _run_worker(tmp_path, ranks, cases)
    for case, result in zip(cases, results):
        assert "error" not in result, result
        assert result["outputs"] == _reference(case)
        assert len(result["stats"]) == ranks
        assert result["emulator"] == case.get("emulator", "kernel")     # numba is installed
        _check_stats(case, result)


def _conformance_case(name):
    case = load_conformance(name)
    config = case.load_bitstream().config
    return case, dict(luts=config.luts, inputs=[tuple(e) for e in case.inputs])


def test_conformance_cases(tmp_path):
    """Every conformance case on 4 ranks, with the seam exchange and with a 2-deep halo."""
    ranks = 4
    names = conformance_cases()
    loaded = [_conformance_case(name) for name in names]
    runs = [(name, case, dict(c, halo=halo)) for halo in (1, 2) for name, (case, c)
            in zip(names, loaded)]
    results = _run_worker(tmp_path, ranks, [c for _, _, c in runs])
    for (name, case, _), result in zip(runs, results):
        if case.width // 2 * (case.height // 2) < ranks:        # 2 x 2 grids: one tile only
            assert result["error"][0] == "ValueError" and "use at most" in result["error"][1]
            continue
        assert "error" not in result, (name, result)
        expected = [tuple(o) for _, o in case.steps]
        assert result["outputs"] == expected, name


# -- The command line under mpiexec ------------------------------------------------------------

def _emulate(ranks, *args):
    return _launch(ranks, [sys.executable, "-m", "bitgrid", "emulate", *args])


def _conformance_files(name):
    return (os.path.join(conformance_dir(), f"{name}.bgbs"),
            os.path.join(conformance_dir(), f"{name}.json"))


def test_cli_passes_a_conformance_case():
    ranks = 2
    program, vectors = _conformance_files("random_32x32")
    done = _emulate(ranks, program, "--vectors", vectors, "--mpi", "--halo", "2", "--procs",
                    "1x2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "PASS: random_32x32: all 64 steps match"
    assert done.stdout.count("PASS") == 1           # the root alone prints
    assert f"mpi: {ranks} ranks" in done.stderr


def test_cli_prints_the_steps_of_one_emulator(tmp_path):
    program, _ = _conformance_files("edge_io_hello")
    case = load_conformance("edge_io_hello")
    words = tmp_path / "in.txt"
    words.write_text("".join(f"{e.n:x} {e.e:x} {e.s:x} {e.w:x}\n" for e in case.inputs[:20]))
    from click.testing import CliRunner

    from bitgrid.cli import main
    plain = CliRunner().invoke(main, ["emulate", program, "--inputs", str(words), "--json"])
    spread = _emulate(2, program, "--inputs", words, "--json", "--mpi")
    assert plain.exit_code == spread.returncode == 0, spread.stderr
    assert spread.stdout == plain.output


def test_cli_mismatch_and_bad_input(tmp_path):
    import json
    program, vectors = _conformance_files("random_8x8")
    document = json.loads(open(vectors).read())
    step = document["steps"][50]["out"]
    step["S"] = f"0x{int(step['S'], 16) ^ 0x4:02x}"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(document))
    done = _emulate(2, program, "--vectors", wrong, "--mpi")
    assert done.returncode == 1
    assert "MISMATCH: random_8x8: 1 lane(s) differ, first at step 50" in done.stdout
    assert "step 50: S_out lane 2" in done.stdout
    missing = _emulate(2, tmp_path / "none.bgbs", "--vectors", vectors, "--mpi")
    assert missing.returncode == 2
    assert missing.stderr.count("error:") == 1 and "none.bgbs" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_cli_mpi_options_need_mpi():
    from click.testing import CliRunner

    from bitgrid.cli import main
    program, vectors = _conformance_files("random_8x8")
    result = CliRunner().invoke(main, ["emulate", program, "--vectors", vectors, "--halo", "2"])
    assert result.exit_code == 2
    assert "add --mpi" in result.output


# -- Slow: larger grids, longer runs, the kernel and the bit-parallel emulator ----------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("ranks", [4, 9])
def test_larger_random_runs(tmp_path, ranks):
    rng = np.random.default_rng(77 + ranks)
    cases = [_random_case(rng, 64, 48, 300, halo=1, emulator="fast"),
             _random_case(rng, 66, 40, 257, halo=5),
             _random_case(rng, 48, 64, 200, halo=8, emulator="fast"),
             _random_case(rng, 400, 64, 300, halo=8, emulator="kernel"),
             _random_case(rng, 300, 130, 150, halo=1, emulator="kernel")]
    results = _run_worker(tmp_path, ranks, cases)
    for case, result in zip(cases, results):
        assert "error" not in result, result
        assert result["outputs"] == _reference(case)
        _check_stats(case, result)


def test_cli_without_mpi4py_says_what_to_install(monkeypatch):
    from click.testing import CliRunner

    from bitgrid.cli import main

    def missing():
        raise ImportError("MPI emulation needs mpi4py and an MPI library (No module named "
                          "'mpi4py'); install them with: pip install 'bitgrid[mpi]'")
    monkeypatch.setattr(mpi, "import_mpi", missing)
    program, vectors = _conformance_files("random_8x8")
    result = CliRunner().invoke(main, ["emulate", program, "--vectors", vectors, "--mpi"])
    assert result.exit_code == 2
    assert result.output.count("error:") == 1 and "pip install 'bitgrid[mpi]'" in result.output
