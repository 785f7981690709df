"""A damaged simulation cache entry is rebuilt, with one line saying so (issue 10): a truncated
cached Verilog file, a truncated or missing ``sim.vvp``, a build record without the products'
sizes and digests. Runs in a private cache (``$BITGRID_CACHE``), on a 2x2 grid with Icarus."""

import hashlib
import json

import pytest

from bitgrid.sim import builds, cache, run_vector_case, runner
from support.conformance import load_conformance

pytestmark = pytest.mark.icarus


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BITGRID_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "sim"


def _lines(capfd):
    return capfd.readouterr().err.splitlines()


def test_file_record_and_problems(tmp_path):
    path = tmp_path / "entry"
    path.write_bytes(b"x" * 1000)
    record = cache.file_record(path)
    assert record == {"size": 1000, "sha256": hashlib.sha256(b"x" * 1000).hexdigest()}
    assert cache.record_problem(path, record) is None
    path.write_bytes(b"x" * 10)
    assert cache.record_problem(path, record) == "is 10 bytes, 1000 were written (truncated)"
    path.write_bytes(b"y" * 1000)
    assert "SHA-256 differs" in cache.record_problem(path, record)
    path.unlink()
    assert cache.record_problem(path, record) == "is missing"
    assert cache.record_problem(path, None) == "has no recorded size and SHA-256"


def test_truncated_verilog_is_generated_again(private_cache, capfd):
    first = runner.grid_verilog_file(2, 2)
    text = first.read_bytes()
    manifest = json.loads(first.with_suffix(".json").read_text())
    assert manifest["file"] == cache.file_record(first)
    _lines(capfd)
    assert runner.grid_verilog_file(2, 2) == first
    assert not any("again" in line for line in _lines(capfd))     # a good entry is reused
    first.write_bytes(text[:len(text) // 3])                      # a disk filled up
    again = runner.grid_verilog_file(2, 2)
    lines = _lines(capfd)
    assert again == first and first.read_bytes() == text
    damaged = [line for line in lines if "generating it again" in line]
    assert len(damaged) == 1 and str(first) in damaged[0] and "truncated" in damaged[0]
    # A lost manifest: the file cannot be checked, so it is made again too.
    first.with_suffix(".json").unlink()
    assert runner.grid_verilog_file(2, 2) == first
    assert any("no readable manifest" in line for line in _lines(capfd))
    assert first.read_bytes() == text


@pytest.mark.parametrize("damage", ["truncate", pytest.param("remove", marks=pytest.mark.slow),
                                    pytest.param("old-record", marks=pytest.mark.slow)])
def test_damaged_icarus_build_is_built_again(private_cache, capfd, damage):
    build = runner.build(2, 2, simulator="icarus")
    vvp = build.directory / "sim.vvp"
    record = json.loads((build.directory / builds.BUILD_RECORD).read_text())
    assert record["products"] == {"sim.vvp": cache.file_record(vvp)}
    good = vvp.read_bytes()
    assert runner.build(2, 2, simulator="icarus").cached
    _lines(capfd)
    if damage == "truncate":
        vvp.write_bytes(good[:100])
    elif damage == "remove":
        vvp.unlink()
    else:                               # a build made before products were recorded
        del record["products"]
        (build.directory / builds.BUILD_RECORD).write_text(json.dumps(record))
    again = runner.build(2, 2, simulator="icarus")
    lines = _lines(capfd)
    assert not again.cached and again.directory == build.directory
    # The same size (sim.vvp names its temporary build folder, of the same length), recorded.
    assert vvp.stat().st_size == len(good)
    assert builds._build_problem(again.directory) is None
    damaged = [line for line in lines if "is damaged" in line]
    assert len(damaged) == 1, lines
    assert {"truncate": "sim.vvp is 100 bytes", "remove": "sim.vvp is missing",
            "old-record": "bitgrid-build.json"}[damage] in damaged[0]
    # ... and it runs: a conformance case of that size passes on the rebuilt model (the grid
    # top: step by step).
    case = load_conformance("random_2x2")
    result = run_vector_case(case, player=False)
    assert result.ok, result.summary()
