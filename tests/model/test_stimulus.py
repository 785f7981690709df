"""bitgrid.stimulus: edge-input streams, vector files and the run options that pick the inputs
of each subcycle."""

import json
import os

import pytest

from bitgrid import Edges
from bitgrid.stimulus import (StimulusError, load_inputs, load_vectors,
                              parse_inputs, stimulus)
from support.conformance import conformance_dir, load_conformance


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
    ("1 2 3\n", "f: step 0 (line 1): expected 4 hex words N E S W, got 3"),
    ("0 0 0 0\n\n1 2 3 4 5\n", "f: step 1 (line 3): expected 4 hex words N E S W, got 5"),
    ("0 0 g 0\n", "f: step 0 (line 1): S: 'g' is not a hex word (hex digits, optionally after "
                  "0x, e.g. 0x1f)"),
    ('{"N": "0x1"}', "f: malformed edge-input stream: a JSON edge-input stream is a list of "
                     '{"N": "0x..", ...} objects, one per subcycle'),
    ('[{"Q": "0x1"}]', "f: step 0: unknown or repeated side 'Q' (the sides are N, E, S, W)"),
    ('[{"N": "0x1", "n": "0x1"}]', "f: step 0: unknown or repeated side 'n'"),
    ('[{"N": "0x1"', "f: malformed edge-input stream: not valid JSON ("),
    ('[{}, 3]', "f: step 1: expected an object with keys among N, E, S, W, got 3"),
])
def test_malformed_streams(text, message):
    with pytest.raises(StimulusError) as info:
        parse_inputs(text, 2, 2, where="f")
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


# What the parser read leniently before (outside testing, issue 10): floats, lane "bits" above
# 1, 0x0_1 and 0b1 read as hex, header lines with a raw int() error, values that overflowed.
@pytest.mark.parametrize("text, message", [
    ('[{"N": 1.0}]', "f: step 0: N: 1.0 is not a word: give a hex string like \"0x1f\", an "
                     "integer or a list of lane bits (0 or 1, lane 0 first)"),
    ('[{}, {"E": 1e400}]', "f: step 1: E: Infinity is not a word"),
    ('[{"N": [1, 0, 2]}]', "f: step 0: N: lane 2 is 2; lane bits are 0 or 1"),
    ('[{"N": [300]}]', "f: step 0: N: lane 0 is 300; lane bits are 0 or 1"),
    ('[{"N": [1e400]}]', "f: step 0: N: lane 0 is Infinity; lane bits are 0 or 1"),
    ('[{"N": [true]}]', "f: step 0: N: lane 0 is true; lane bits are 0 or 1"),
    ('[{"N": [0.5]}]', "f: step 0: N: lane 0 is 0.5; lane bits are 0 or 1"),
    ('[{"N": [1, 1, 1, 1, 1, 1, 1, 1, 1]}]', "f: step 0: N: 9 lane bits for its 8 lanes"),
    ('[{"W": 300}]', "f: step 0: W: has bits beyond its 8 lanes"),
    ('[{"W": -1}]', "f: step 0: W: -1 is negative"),
    ('[{"W": true}]', "f: step 0: W: true is not a word"),
    ('[{"W": null}]', "f: step 0: W: null is not a word"),
    ('[{"S": "0x0_1"}]', "f: step 0: S: '0x0_1' is not a hex word"),
    ('[{"S": " 0x1"}]', "f: step 0: S: ' 0x1' is not a hex word"),
    ('[{"S": "0b1"}]', "f: step 0: S: '0b1' looks like a binary number; the words are hex: "
                       "write the value in hex (0x...)"),
    ("0 0 0 0\n0x0_1 0 0 0\n", "f: step 1 (line 2): N: '0x0_1' is not a hex word"),
    ("0 0 0 0b1\n", "f: step 0 (line 1): W: '0b1' looks like a binary number"),
    ("0 0 0o7 0\n", "f: step 0 (line 1): S: '0o7' looks like an octal number"),
    ("0 -1 0 0\n", "f: step 0 (line 1): E: '-1' is not a hex word"),
    ("0 +1 0 0\n", "f: step 0 (line 1): E: '+1' is not a hex word"),
    ("N E S W\n1 2 3 4\n", "f: step 0 (line 1): 'N E S W' looks like a header line; start it "
                           "with '#' to make it a comment"),
    ("n_in, e_in, s_in, w_in\n", "f: step 0 (line 1): 'n_in, e_in, s_in, w_in' looks like a "
                                 "header line"),
    ("[" * 100000 + "]" * 100000, "f: malformed edge-input stream: JSON nested too deeply"),
])
def test_lenient_forms_are_refused_naming_file_step_and_side(text, message):
    with pytest.raises(StimulusError) as info:
        parse_inputs(text, 8, 8, where="f")
    assert str(info.value).startswith(message)


def test_the_accepted_word_forms():
    text = json.dumps([{"N": "0xff", "E": "1f", "S": 255, "W": [1, 0, 1, 1]},
                       {"n": "0XaB", "w": []}])
    assert parse_inputs(text, 8, 8) == [Edges(0xFF, 0x1F, 0xFF, 0b1101), Edges(n=0xAB)]
    assert parse_inputs("0xff 0Xf ff 0b\n", 8, 8) == [Edges(0xFF, 0xF, 0xFF, 0xB)]  # 0b: hex


@pytest.mark.parametrize("full, over, side, lanes", [
    ("3 0 0 0", "4 0 0 0", "N", 2), ("0 0 3 0", "0 0 4 0", "S", 2),
    ("0 f 0 0", "0 10 0 0", "E", 4), ("0 0 0 f", "0 0 0 10", "W", 4)])
def test_bits_beyond_the_lanes(full, over, side, lanes):
    assert len(parse_inputs(full, 2, 4)) == 1                 # every lane set: still fits
    with pytest.raises(StimulusError) as info:
        parse_inputs("0 0 0 0\n" + over, 2, 4, where="f")
    assert str(info.value) == f"f: step 1 (line 2): {side}: has bits beyond its {lanes} lanes"


def test_more_steps_than_a_run_takes(monkeypatch):
    monkeypatch.setattr("bitgrid.stimulus.MAX_STEPS", 3)
    assert len(parse_inputs("0 0 0 0\n" * 3, 2, 2)) == 3
    with pytest.raises(StimulusError, match="^f: more than 3 steps, the most a run takes$"):
        parse_inputs("0 0 0 0\n" * 4, 2, 2, where="f")
    with pytest.raises(StimulusError, match="^f: more than 3 steps"):
        parse_inputs(json.dumps([{}] * 4), 2, 2, where="f")


def test_steps_bound():
    from bitgrid.stimulus import MAX_STEPS
    with pytest.raises(StimulusError, match=r"^--steps 1000001: give 0 to 1000000 subcycles$"):
        stimulus(2, 2, steps=MAX_STEPS + 1)
    with pytest.raises(StimulusError, match=r"^--steps -1: give 0 to 1000000 subcycles$"):
        stimulus(2, 2, steps=-1)


def test_load_inputs_refuses_programs_binary_and_huge_files(tmp_path, monkeypatch):
    from bitgrid.bitstream import save
    from bitgrid.config import Configuration
    program = tmp_path / "p.bgbs"
    save(program, Configuration(2, 2))
    with pytest.raises(StimulusError) as info:
        load_inputs(program, 2, 2)
    assert str(info.value) == (f"{program} is not an edge-input stream (it looks like a BGBS "
                               "BitGrid program: give it as the PROGRAM argument)")
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"0 0 0 0\n\xff\xfe")
    with pytest.raises(StimulusError, match=f"^{binary}: not an edge-input stream: byte 8 is "
                                            "not UTF-8 text$"):
        load_inputs(binary, 2, 2)
    monkeypatch.setattr("bitgrid.stimulus.MAX_INPUT_BYTES", 16)
    big = tmp_path / "big.txt"
    big.write_text("0 0 0 0\n" * 3)
    with pytest.raises(StimulusError, match=f"^{big}: larger than 0 MiB"):
        load_inputs(big, 2, 2)


def test_load_inputs_reads_the_file_and_names_it(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("1 0 0 0\n")
    assert load_inputs(path, 2, 2) == [Edges(n=1)]
    path.write_text("1 0 0\n")
    with pytest.raises(StimulusError, match=f"^{path}: step 0 \\(line 1\\): expected 4"):
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
    from support.conformance import bad_stream_cases
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


def test_a_byte_order_mark_is_skipped_in_either_form():
    """Editors put a UTF-8 BOM before the first word; the text form read it as part of the N
    word (``'\\ufeff0' is not a hex word``), the JSON form skipped it."""
    from bitgrid.stimulus import parse_inputs
    from bitgrid.terms import Edges
    assert parse_inputs("\ufeff1 2 3 4\n", 4, 4) == [Edges(1, 2, 3, 4)]
    assert parse_inputs('\ufeff[{"N": "0x1"}]', 4, 4) == [Edges(1, 0, 0, 0)]
