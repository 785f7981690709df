"""bitgrid.stimulus: edge-input streams, vector files and the run options that pick the inputs
of each subcycle."""

import json
import os

import pytest

from bitgrid import Edges
from bitgrid.stimulus import (StimulusError, lane_counts, load_inputs, load_vectors,
                              parse_inputs, stimulus)
from conftest import conformance_dir, load_conformance


def test_lane_counts():
    assert lane_counts(4, 6) == {"N": 4, "E": 6, "S": 4, "W": 6}


def test_text_stream_words_comments_and_commas():
    text = "# N E S W\n1 2 3 4\n\n  f,0,c , 0 # trailing comment\n"
    assert parse_inputs(text, 4, 6) == [Edges(1, 2, 3, 4), Edges(0xF, 0, 0xC, 0)]


def test_json_stream_missing_sides_are_zero():
    text = json.dumps([{"N": "0x3"}, {"e": "0x1f", "W": "0x2"}, {}])
    assert parse_inputs(text, 2, 6) == [Edges(n=3), Edges(e=0x1F, w=2), Edges()]


def test_empty_stream_is_empty():
    assert parse_inputs("# nothing\n\n", 2, 2) == []
    assert parse_inputs("[]", 2, 2) == []


@pytest.mark.parametrize("text, message", [
    ("1 2 3\n", "f: malformed edge-input stream: line 1: expected 4 hex words N E S W, got 3"),
    ("0 0 0 0\n1 2 3 4 5\n", "line 2: expected 4 hex words N E S W, got 5"),
    ("0 0 g 0\n", "f: malformed edge-input stream: invalid literal for int() with base 16"),
    ('{"N": "0x1"}', "a JSON edge-input stream is a list of"),
    ('[{"Q": "0x1"}]', "Edge buses are N, E, S, W; unknown ['q']"),
    ('[{"N": "0x1"', "f: malformed edge-input stream: "),
])
def test_malformed_streams(text, message):
    with pytest.raises(StimulusError) as info:
        parse_inputs(text, 2, 2, where="f")
    assert message in str(info.value)


@pytest.mark.parametrize("full, over, side, lanes", [
    ("3 0 0 0", "4 0 0 0", "N", 2), ("0 0 3 0", "0 0 4 0", "S", 2),
    ("0 f 0 0", "0 10 0 0", "E", 4), ("0 0 0 f", "0 0 0 10", "W", 4)])
def test_bits_beyond_the_lanes(full, over, side, lanes):
    assert len(parse_inputs(full, 2, 4)) == 1                 # every lane set: still fits
    with pytest.raises(StimulusError) as info:
        parse_inputs("0 0 0 0\n" + over, 2, 4, where="f")
    assert str(info.value) == f"f: step 1: {side} has bits beyond its {lanes} lanes"


def test_load_inputs_reads_the_file_and_names_it(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("1 0 0 0\n")
    assert load_inputs(path, 2, 2) == [Edges(n=1)]
    path.write_text("1 0 0\n")
    with pytest.raises(StimulusError, match=f"^{path}: malformed"):
        load_inputs(path, 2, 2)
    with pytest.raises(FileNotFoundError):
        load_inputs(tmp_path / "missing.txt", 2, 2)


def _vectors(name):
    return os.path.join(conformance_dir(), f"{name}.json")


def test_load_vectors_checks_the_size():
    case = load_conformance("random_8x8")
    assert load_vectors(_vectors("random_8x8"), 8, 8).steps == case.steps
    with pytest.raises(StimulusError) as info:
        load_vectors(_vectors("random_8x8"), 2, 16)
    assert str(info.value) == ("size mismatch: the vector file is for a 8 x 8 grid, the "
                               "bitstream is 2 x 16")


def test_load_vectors_refuses_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "bitgrid-vectors-v1", "width": 2}')
    with pytest.raises(StimulusError, match="^malformed vector file: "):
        load_vectors(bad, 2, 2)
    from conftest import bad_stream_cases
    name = bad_stream_cases()[0]
    with pytest.raises(StimulusError, match="is a bitgrid-badstream-v1 case, not a vector file"):
        load_vectors(_vectors(name), 2, 2)


def test_stimulus_from_vectors():
    case = load_conformance("random_8x8")
    got, stream = stimulus(8, 8, vectors=_vectors("random_8x8"))
    assert got.name == "random_8x8" and stream == case.inputs
    got, stream = stimulus(8, 8, vectors=_vectors("random_8x8"), steps=3)
    assert stream == case.inputs[:3]
    with pytest.raises(StimulusError) as info:
        stimulus(8, 8, vectors=_vectors("random_8x8"), steps=len(case.steps) + 1)
    assert str(info.value) == (f"--steps {len(case.steps) + 1}: the vector file has only "
                               f"{len(case.steps)} steps")


def test_stimulus_from_inputs_and_steps(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("1 0 0 0\n2 0 0 0\n")
    assert stimulus(2, 2, inputs=path) == (None, [Edges(n=1), Edges(n=2)])
    # longer: the last input repeats; shorter: cut
    assert stimulus(2, 2, inputs=path, steps=4)[1] == [Edges(n=1)] + [Edges(n=2)] * 3
    assert stimulus(2, 2, inputs=path, steps=1)[1] == [Edges(n=1)]
    # steps alone: zero inputs
    assert stimulus(2, 2, steps=3) == (None, [Edges()] * 3)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert stimulus(2, 2, inputs=empty, steps=2)[1] == [Edges()] * 2


@pytest.mark.parametrize("options, message", [
    ({"vectors": "v.json", "inputs": "i.txt"}, "give either --vectors or --inputs, not both"),
    ({}, "nothing to run: give --vectors FILE, --inputs FILE or --steps N"),
    ({"steps": 0}, "nothing to run"),
])
def test_stimulus_refuses(options, message):
    with pytest.raises(StimulusError, match=message):
        stimulus(2, 2, **options)


def test_stimulus_refuses_empty_files(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    with pytest.raises(StimulusError, match=f"^{empty}: the edge-input stream is empty$"):
        stimulus(2, 2, inputs=empty)
    case = json.load(open(_vectors("random_2x2")))
    case["steps"] = []
    vectors = tmp_path / "none.json"
    vectors.write_text(json.dumps(case))
    with pytest.raises(StimulusError, match="the vector file has no steps"):
        stimulus(2, 2, vectors=vectors)
