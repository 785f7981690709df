"""``bitgrid bist``: exit 0 for a clean grid, 1 with defects (the map written either way), 2
with one line for bad input; ``--table`` is the table of docs/bist.md."""

import json
import pathlib

import pytest
from click.testing import CliRunner

from bitgrid import defects
from bitgrid.cli import main

DOCS = pathlib.Path(__file__).resolve().parents[3] / "docs" / "bist.md"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_clean_grid(tmp_path):
    out = tmp_path / "map.json"
    result = invoke("bist", "--size", "4x4", "-o", out)
    assert result.exit_code == 0, result.output
    assert "no defects found" in result.output
    assert defects.load(out) == defects.DefectMap(4, 4)


def test_defects_found(tmp_path):
    out = tmp_path / "map.json"
    result = invoke("bist", "--size", "6x4", "--inject", "2,1:stuck1:S", "--inject",
                    "5,3:lut:E:[es]", "--inject", "0,0:dead", "--seed", "3", "-o", out)
    assert result.exit_code == 1, result.output
    assert json.loads(out.read_text())["defects"] == [
        {"x": 0, "y": 0, "kind": "dead"}, {"x": 2, "y": 1, "kind": "stuck1", "output": "S"},
        {"x": 5, "y": 3, "kind": "lut", "output": "E"}]
    assert "lut at (5, 3) output E addresses 6 [es]" in result.output
    assert "the map matches the injected defects" in result.output
    assert "not testable" in result.output            # the outputs into the dead cell


def test_table_is_in_the_docs():
    result = invoke("bist", "--table")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[2].split("|")[1:-1] == ["   4x4 ", " 3 ".rjust(16), " 48 ".rjust(8),
                                         "12/18/18".rjust(27) + " ", "768".rjust(10) + " "]
    assert result.output in DOCS.read_text()


@pytest.mark.parametrize("args, message", [
    (["--size", "4x4"], "error: give --size WxH and -o MAP.json (or --table)"),
    (["--size", "4x4", "--inject", "4,0:dead", "-o", "x.json"],
     "error: --inject: fault 4,0:dead: cell (4, 0) is outside the 4 x 4 grid"),
    (["--size", "4x4", "--inject", "1,1:lut:N", "-o", "x.json"],
     "error: --inject: fault 1,1:lut:N: a lut fault names the output and the address"),
    (["--size", "5x4", "-o", "x.json"], "error: Invalid value for '--size'"),
    (["--size", "4x4", "-o", "/nonexistent/x.json"],
     "error: /nonexistent/x.json: folder /nonexistent does not exist"),
])
def test_bad_input(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["bist", *args])
    assert result.exit_code == 2
    assert result.output.startswith(message), result.output
    assert len(result.output.splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def test_output_dash_is_refused(tmp_path, monkeypatch):
    """-o - (standard output) is no file name here: refused in one line, nothing written."""
    from click.testing import CliRunner
    from bitgrid.cli import main
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["bist", "--size", "4x4", "-o", "-"])
    assert result.exit_code == 2
    assert result.output == ("error: -o -: this command writes a file, not standard output; "
                             "give a file name (./- for a file called -)\n")
    assert not (tmp_path / "-").exists()
