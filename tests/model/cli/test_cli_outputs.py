"""Every file the ``bitgrid`` command line writes appears whole or not at all
(bitgrid.files.atomic_write): a full disk leaves the target as it was and no temporary file,
and exits 2 naming the file; ``bench --json PATH`` checks PATH before measuring anything."""

import errno
import os

import pytest
from click.testing import CliRunner

from bitgrid import files
from bitgrid.bitstream import load
from bitgrid.cli import main
from support.conformance import load_conformance

OLD = b"the old content\n"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def full_disk(monkeypatch):
    """The disk fills up when a written file is flushed."""
    def fsync(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", fsync)


def _program(name="random_8x8"):
    return load_conformance(name).bitstream_path


def _check_kept(result, folder, target, before):
    assert result.exit_code == 2, result.output
    assert result.output.endswith(f"error: {target}: No space left on device\n")
    assert result.output.count("error:") == 1
    assert sorted(os.listdir(folder)) == before           # no temporary file left
    if OLD is not None and os.path.exists(target):
        assert open(target, "rb").read() == OLD


def test_verilog_on_a_full_disk_keeps_the_old_file(tmp_path, full_disk):
    target = tmp_path / "grid.v"
    target.write_bytes(OLD)
    result = invoke("verilog", "--size", "2x2", "-o", target)
    _check_kept(result, tmp_path, target, ["grid.v"])


def test_verilog_writes_the_whole_file(tmp_path):
    target = tmp_path / "grid.v"
    target.write_bytes(OLD)
    assert invoke("verilog", "--size", "2x2", "-o", target).exit_code == 0
    text = target.read_text()
    assert text.rstrip().endswith("endmodule") and "module bitgrid_grid" in text
    assert os.listdir(tmp_path) == ["grid.v"]


def test_convert_on_a_full_disk_leaves_no_empty_program(tmp_path, full_disk):
    target = tmp_path / "out.bgbs"
    result = invoke("bitstream", "convert", _program(), target, "--order", "snake")
    _check_kept(result, tmp_path, target, [])
    target.write_bytes(OLD)
    result = invoke("bitstream", "convert", _program(), target, "--order", "snake")
    _check_kept(result, tmp_path, target, ["out.bgbs"])


def test_join_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch):
    chips = tmp_path / "chips"
    assert invoke("bitstream", "slice", _program(), "--mesh", "2x1", "-o", chips).exit_code == 0
    target = tmp_path / "joined.bgbs"
    target.write_bytes(OLD)

    def fsync(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", fsync)
    result = invoke("bitstream", "join", "--from", chips / "random_8x8", "--mesh", "2x1",
                    "-o", target)
    _check_kept(result, tmp_path, target, ["chips", "joined.bgbs"])


def test_demo_on_a_full_disk_stops_with_one_line(tmp_path, full_disk):
    result = invoke("demo", "-o", tmp_path, "--simulator", "icarus")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == (f"error: {tmp_path / 'bitgrid_8x8.v'}: No space "
                                              "left on device")
    assert os.listdir(tmp_path) == []


def test_written_files_are_complete(tmp_path):
    target = tmp_path / "out.bgbs"
    assert invoke("bitstream", "convert", _program(), target).exit_code == 0
    assert load(target).config == load(_program()).config
    assert os.listdir(tmp_path) == ["out.bgbs"]


@pytest.mark.parametrize("command", [["bench", "--parts", "emulator"],
                                     ["bench", "emulator", "--size", "4"],
                                     ["bench", "verilog", "--size", "4"]])
def test_bench_json_path_is_checked_before_measuring(tmp_path, monkeypatch, command):
    measured = []
    monkeypatch.setattr("bitgrid.cli.bench.run_part", lambda *a, **k: measured.append(a))
    monkeypatch.setattr("bitgrid.cli.bench.run_suite", lambda *a, **k: measured.append(a))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = blocker / "bench.json"
    result = invoke(*command, "--json", bad)
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {bad}: cannot make its folder {blocker}: ")
    assert result.output.count("\n") == 1
    assert measured == []
    result = invoke(*command, "--json", tmp_path)
    assert result.exit_code == 2
    assert "is a folder" in result.output or "is a directory" in result.output
    assert measured == []


def test_bench_json_folder_is_made_up_front_and_written_whole(tmp_path):
    target = tmp_path / "new" / "emulator.json"
    result = invoke("bench", "emulator", "--size", "4", "--streams", "0", "--steps", "4",
                    "--quiet", "--json", target)
    assert result.exit_code == 0, result.output
    import json
    assert json.loads(target.read_text())["parts"]["emulator"]["part"] == "emulator"
    assert os.listdir(target.parent) == ["emulator.json"]


def test_example_on_a_full_disk_keeps_the_old_files(tmp_path, monkeypatch):
    assert invoke("example", "adder", "-o", tmp_path).exit_code == 0
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    assert sorted(before) == ["adder8.bgbs", "adder8.json"]

    def fsync(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", fsync)
    result = invoke("example", "adder", "-o", tmp_path, "--seed", "2")
    assert result.exit_code == 2
    assert result.output == f"error: {tmp_path / 'adder8.bgbs'}: No space left on device\n"
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before


def test_slice_on_a_full_disk_leaves_no_chip_file(tmp_path, full_disk):
    chips = tmp_path / "chips"
    result = invoke("bitstream", "slice", _program(), "--mesh", "2x1", "-o", chips)
    assert result.exit_code == 2
    assert result.output == (f"error: {chips / 'random_8x8.c0r0.bgbs'}: No space left on "
                             "device\n")
    assert os.listdir(chips) == []
