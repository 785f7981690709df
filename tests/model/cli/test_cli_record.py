"""``bitgrid emulate --save-vectors``: a run of --inputs or --steps recorded as a
``bitgrid-vectors-v1`` file that ``--vectors`` of ``emulate`` and ``sim`` accept (issue 10: the
output of ``emulate --json`` was not a vector file)."""

import json
import os

import pytest
from click.testing import CliRunner

from bitgrid.cli import main
from bitgrid.stimulus import record_vectors
from bitgrid.vectors import load_case
from support.conformance import load_conformance


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _stream_file(tmp_path, case, count=None):
    """The conformance case's inputs as a JSON edge-input stream file."""
    steps = json.load(open(os.path.splitext(case.bitstream_path)[0] + ".json"))["steps"]
    path = tmp_path / "stream.json"
    path.write_text(json.dumps([step["in"] for step in steps[:count]]))
    return path


def test_recorded_outputs_are_the_conformance_outputs(tmp_path):
    # The conformance file's outputs were made independently of this run: recording its
    # inputs must reproduce them step for step.
    case = load_conformance("random_8x8")
    out = tmp_path / "rec" / "random_run.json"
    out.parent.mkdir()
    result = invoke("emulate", case.bitstream_path, "--inputs", _stream_file(tmp_path, case),
                    "--save-vectors", out)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}: {len(case.steps)} steps of a 8 x 8 grid" in result.output
    recorded = load_case(out)
    assert recorded.name == "random_run"
    assert recorded.steps == case.steps
    assert os.path.samefile(recorded.bitstream_path, case.bitstream_path)
    assert not os.path.isabs(json.loads(out.read_text())["bitstream"])   # relative: movable
    result = invoke("emulate", case.bitstream_path, "--vectors", out)
    assert result.exit_code == 0, result.output
    assert f"PASS: random_run: all {len(case.steps)} steps match" in result.output


def test_record_steps_alone_and_the_json_output_agree(tmp_path):
    case = load_conformance("edge_io_hello")
    out = tmp_path / "zeros.json"
    result = invoke("emulate", case.bitstream_path, "--steps", 5, "--json",
                    "--save-vectors", out)
    assert result.exit_code == 0
    printed = json.loads(result.stdout)
    saved = json.loads(out.read_text())
    assert saved["format"] == "bitgrid-vectors-v1"
    assert [s["out"] for s in saved["steps"]] == [s["out"] for s in printed["steps"]]
    assert all(int(word, 16) == 0 for s in saved["steps"] for word in s["in"].values())


def test_record_refuses_vectors_and_checks_the_path_first(tmp_path):
    case = load_conformance("random_2x2")
    vectors = os.path.splitext(case.bitstream_path)[0] + ".json"
    result = invoke("emulate", case.bitstream_path, "--vectors", vectors,
                    "--save-vectors", tmp_path / "x.json")
    assert result.exit_code == 2
    assert result.output == ("error: --save-vectors records a run of --inputs or --steps; "
                             "--vectors already is a vector file\n")
    missing = tmp_path / "no" / "x.json"
    result = invoke("emulate", case.bitstream_path, "--steps", 2, "--save-vectors", missing)
    assert result.exit_code == 2
    assert result.output == f"error: {missing}: folder {missing.parent} does not exist\n"
    assert os.listdir(tmp_path) == []


def test_record_vectors_library(tmp_path):
    case = load_conformance("random_2x2")
    path = tmp_path / "r.json"
    doc = record_vectors(path, case.bitstream_path, case.load_bitstream().config,
                         case.inputs[:3], name="mine", description="three steps")
    assert (doc["name"], doc["description"], len(doc["steps"])) == ("mine", "three steps", 3)
    assert load_case(path).steps == case.steps[:3]


@pytest.mark.icarus
def test_recorded_file_passes_sim_on_icarus(tmp_path):
    case = load_conformance("random_2x2")
    out = tmp_path / "rec.json"
    stream = _stream_file(tmp_path, case, count=12)
    assert invoke("emulate", case.bitstream_path, "--inputs", stream,
                  "--save-vectors", out).exit_code == 0
    result = invoke("sim", case.bitstream_path, "--vectors", out, "--simulator", "icarus")
    assert result.exit_code == 0, result.output
    assert "PASS: rec: all 12 steps match the vector file and the reference emulator" \
        in result.output
