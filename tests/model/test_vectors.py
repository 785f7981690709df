"""``bitgrid-vectors-v1`` / ``bitgrid-badstream-v1`` files (shared conformance README):
loading, format errors, step comparison, and writing new cases that replay on the emulator.
"""

import json
import os
import random

import pytest

from bitgrid import Configuration, Edges, Emulator, vectors
from bitgrid.bitstream import load as load_bitstream
from bitgrid.vectors import (BadStreamCase, Mismatch, VectorCase, VectorFormatError,
                             compare_step, format_mismatches, load_case, make_case, save_case)
from support.conformance import conformance_cases, conformance_dir, load_conformance

# The README's table of cases: name -> (width, height, steps, bitstream).
README_CASES = {
    "identity_we_9lane": (8, 10, 69, "identity_we_9lane.bgbs"),
    "adder8": (2, 16, 168, "adder8.bgbs"),
    "adder8_colmajor": (2, 16, 168, "adder8_colmajor.bgbs"),
    "adder8_snake": (2, 16, 168, "adder8_snake.bgbs"),
    "edge_io_hello": (16, 8, 54, "edge_io_hello.bgbs"),
    "full_adder1": (2, 2, 100, "full_adder1.bgbs"),
    "random_2x2": (2, 2, 200, "random_2x2.bgbs"),
    "random_8x8": (8, 8, 128, "random_8x8.bgbs"),
    "random_32x32": (32, 32, 64, "random_32x32.bgbs"),
}
README_BAD = {
    "bad_magic": (2, 16, "bad magic"),
    "bad_crc": (8, 8, "crc mismatch"),
    "dims_mismatch_4x16": (8, 8, "dimension mismatch"),
    "bad_version": (2, 16, "unsupported version"),
}


def raw_json(name):
    with open(os.path.join(conformance_dir(), f"{name}.json"), encoding="utf-8") as file:
        return json.load(file)


def test_case_lists_match_readme():
    assert set(conformance_cases()) == set(README_CASES)


@pytest.mark.parametrize("name", sorted(README_CASES))
def test_load_conformance_case(name):
    width, height, steps, bitstream = README_CASES[name]
    case = load_conformance(name)
    assert isinstance(case, VectorCase)
    assert (case.name, case.width, case.height, len(case.steps)) == (name, width, height, steps)
    assert case.bitstream_path == os.path.join(conformance_dir(), bitstream)
    assert os.path.isabs(case.bitstream_path) and os.path.exists(case.bitstream_path)
    raw = raw_json(name)
    assert case.description == raw["description"] and case.description
    for (inputs, outputs), step in zip(case.steps, raw["steps"]):
        assert isinstance(inputs, Edges) and isinstance(outputs, Edges)
        assert tuple(inputs) == tuple(int(step["in"][s], 16) for s in "NESW")
        assert tuple(outputs) == tuple(int(step["out"][s], 16) for s in "NESW")
    assert case.inputs == [i for i, _ in case.steps]
    assert case.outputs == [o for _, o in case.steps]
    assert case.load_bitstream().config.width == width


@pytest.mark.parametrize("name", sorted(README_BAD))
def test_load_badstream_case(name):
    width, height, reason = README_BAD[name]
    case = load_conformance(name)
    assert isinstance(case, BadStreamCase)
    assert (case.name, case.width, case.height, case.expect_error) == (name, width, height,
                                                                       reason)
    assert case.bitstream_path == os.path.join(conformance_dir(), f"{name}.bgbs")


# Malformed files.

def _valid():
    return {"format": "bitgrid-vectors-v1", "name": "t", "description": "", "width": 4,
            "height": 2, "bitstream": "t.bgbs",
            "steps": [{"in": {"N": "0x0", "E": "0x0", "S": "0x0", "W": "0x0"},
                       "out": {"N": "0xf", "E": "0x3", "S": "0x0", "W": "0x1"}}]}


def _with(path_keys, value):
    obj = _valid()
    target = obj
    for key in path_keys[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path_keys[-1]]
    else:
        target[path_keys[-1]] = value
    return json.dumps(obj)


MALFORMED = {
    "bad_json": ('{"format": "bitgrid-vectors-v1", "width": 4,', "not a JSON vector file ("),
    "top_level_list": ("[1, 2]", "top level must be a JSON object"),
    "missing_width": (_with(["width"], KeyError), "missing field 'width'"),
    "missing_height": (_with(["height"], KeyError), "missing field 'height'"),
    "missing_bitstream": (_with(["bitstream"], KeyError), "missing field 'bitstream'"),
    "bitstream_not_str": (_with(["bitstream"], 5), "bitstream must be a file name"),
    "wrong_format": (_with(["format"], "bitgrid-vectors-v2"),
                     "format is 'bitgrid-vectors-v2', expected 'bitgrid-vectors-v1'"),
    "missing_format": (_with(["format"], KeyError),
                       "missing field 'format' (expected 'bitgrid-vectors-v1')"),
    "odd_width": (_with(["width"], 3), "width must be an even integer of at least 2, not 3"),
    "zero_height": (_with(["height"], 0), "height must be an even integer of at least 2, not 0"),
    "bool_width": (_with(["width"], True), "width must be an even integer of at least 2, not True"),
    "str_width": (_with(["width"], "4"), "width must be an even integer of at least 2, not '4'"),
    "missing_steps": (_with(["steps"], KeyError), "'steps' must be a list"),
    "steps_not_list": (_with(["steps"], {"0": 1}), "'steps' must be a list"),
    "step_without_out": (_with(["steps", 0, "out"], KeyError),
                         "steps[0] must have 'in' and 'out'"),
    "missing_side": (_with(["steps", 0, "in", "W"], KeyError),
                     "steps[0].in: expected an object with keys N, E, S, W"),
    "extra_side": (_with(["steps", 0, "in", "X"], "0x0"),
                   "steps[0].in: expected an object with keys N, E, S, W"),
    "non_hex": (_with(["steps", 0, "out", "E"], "0xg"), "steps[0].out.E: '0xg' is not a hex"),
    "no_0x": (_with(["steps", 0, "in", "N"], "ff"),
              "steps[0].in.N: expected a hex string like '0x1f', got 'ff'"),
    "int_word": (_with(["steps", 0, "in", "S"], 3),
                 "steps[0].in.S: expected a hex string like '0x1f', got 3"),
    "too_wide_n": (_with(["steps", 0, "in", "N"], "0x10"),
                   "steps[0].in.N: 0x10 has bits beyond its 4 lanes"),
    "too_wide_e": (_with(["steps", 0, "out", "E"], "0x4"),
                   "steps[0].out.E: 0x4 has bits beyond its 2 lanes"),
    # what int(text, 16) takes but a hex word is not (issue 10, lenient parsing)
    "underscore": (_with(["steps", 0, "in", "N"], "0x0_1"), "steps[0].in.N: '0x0_1' is not a hex"),
    "trailing_space": (_with(["steps", 0, "in", "E"], "0x1 "),
                       "steps[0].in.E: '0x1 ' is not a hex"),
    "deep": ('{"steps": ' + "[" * 100000 + "]" * 100000 + "}",
             "nested too deeply to be a vector file"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_files(name, tmp_path):
    text, message = MALFORMED[name]
    path = tmp_path / "case.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VectorFormatError) as info:
        load_case(str(path))
    assert message in str(info.value)
    assert str(info.value).startswith(f"{path}: ")          # every message names the file
    assert isinstance(info.value, ValueError)


def test_a_program_binary_or_huge_file_is_not_a_vector_file(tmp_path, monkeypatch):
    from bitgrid import vectors
    from bitgrid.bitstream import save
    program = tmp_path / "p.bgbs"
    save(program, Configuration(2, 2))
    with pytest.raises(VectorFormatError) as info:
        load_case(program)
    assert str(info.value) == (f"{program} looks like a BGBS BitGrid program, not a vector file "
                               "(give it as the PROGRAM argument)")
    binary = tmp_path / "b.json"
    binary.write_bytes(b'{"name": "\xe3"}')
    with pytest.raises(VectorFormatError) as info:
        load_case(binary)
    assert str(info.value) == f"{binary}: not a JSON vector file (byte 10 is not UTF-8 text)"
    monkeypatch.setattr(vectors, "MAX_FILE_BYTES", 8)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(_valid()))
    with pytest.raises(VectorFormatError,
                       match=f"^{big}: larger than 0 MiB, too large to be a vector file$"):
        load_case(big)


def test_valid_template_loads(tmp_path):
    """The template of the malformed cases is itself valid (each case has one defect)."""
    path = tmp_path / "case.json"
    path.write_text(json.dumps(_valid()), encoding="utf-8")
    case = load_case(str(path))
    assert case.steps == [(Edges(0, 0, 0, 0), Edges(0xF, 0x3, 0, 0x1))]
    assert case.bitstream_path == str(tmp_path / "t.bgbs")


def test_missing_file(tmp_path):
    with pytest.raises(OSError):
        load_case(str(tmp_path / "nope.json"))


# compare_step and Mismatch.

def test_compare_step_fields():
    expected = Edges(n=0b1010, e=0b01, s=0b0000, w=0b11)
    actual = Edges(n=0b1001, e=0b01, s=0b1000, w=0b10)
    mismatches = compare_step(7, expected, actual, 4, 2)
    assert mismatches == [
        Mismatch(7, "N", 0, 0, 1),
        Mismatch(7, "N", 1, 1, 0),
        Mismatch(7, "S", 3, 0, 1),
        Mismatch(7, "W", 0, 1, 0),
    ]
    m = mismatches[0]
    assert (m.step, m.side, m.lane, m.expected, m.actual) == (7, "N", 0, 0, 1)
    assert str(m) == "step 7: N_out lane 0: expected 0, got 1"
    assert compare_step(0, expected, expected, 4, 2) == []


def test_compare_step_lane_ranges():
    # E/W have `height` lanes, N/S `width` lanes; lanes beyond them are not compared.
    assert compare_step(0, Edges(e=0), Edges(e=0b100), 4, 2) == []
    assert compare_step(0, Edges(n=0), Edges(n=0b10000), 4, 2) == []
    assert compare_step(0, Edges(e=0), Edges(e=0b10), 4, 2) == [Mismatch(0, "E", 1, 0, 1)]
    assert compare_step(0, Edges(s=0), Edges(s=0b1000), 4, 2) == [Mismatch(0, "S", 3, 0, 1)]


def test_format_mismatches():
    mismatches = [Mismatch(t, "E", 0, 1, 0) for t in range(25)]
    text = format_mismatches(mismatches)
    lines = text.splitlines()
    assert len(lines) == 21
    assert lines[0] == "step 0: E_out lane 0: expected 1, got 0"
    assert lines[-1] == "... and 5 more mismatching lanes"
    assert format_mismatches(mismatches[:2], limit=5).count("\n") == 1
    assert format_mismatches([]) == ""


# make_case / save_case.

def test_make_case_matches_emulator_and_format():
    config = Configuration.random(10, 6, seed=31)
    rng = random.Random(31)
    inputs = [Edges(rng.getrandbits(10), rng.getrandbits(6), rng.getrandbits(10),
                    rng.getrandbits(6)) for _ in range(12)]
    obj = make_case("demo", config, inputs, description="random demo")
    assert obj["format"] == "bitgrid-vectors-v1"
    assert (obj["name"], obj["description"], obj["width"], obj["height"], obj["bitstream"]) == (
        "demo", "random demo", 10, 6, "demo.bgbs")
    assert isinstance(obj["origin"], str) and obj["origin"]
    expected = Emulator(config).run(inputs)
    assert len(obj["steps"]) == 12
    for step, edges, out in zip(obj["steps"], inputs, expected):
        # lower-case hex, zero-padded to ceil(lanes / 4) digits (README)
        for side, digits in (("N", 3), ("E", 2), ("S", 3), ("W", 2)):
            for part in ("in", "out"):
                text = step[part][side]
                assert text.startswith("0x") and len(text) == 2 + digits
                assert text == text.lower()
        assert step["in"] == {s: f"0x{getattr(edges, s.lower()):0{d}x}"
                              for s, d in (("N", 3), ("E", 2), ("S", 3), ("W", 2))}
        assert tuple(int(step["out"][s], 16) for s in "NESW") == tuple(out)


def test_save_case_round_trip_and_replay(tmp_path):
    config = Configuration.random(6, 4, seed=77)
    rng = random.Random(77)
    inputs = [{"N": rng.getrandbits(6), "E": rng.getrandbits(4), "S": rng.getrandbits(6),
               "W": rng.getrandbits(4)} for _ in range(30)]
    path = save_case(str(tmp_path / "cases"), "saved", config, inputs, description="d",
                     order=2)
    assert path == str(tmp_path / "cases" / "saved.json")
    assert os.path.exists(tmp_path / "cases" / "saved.bgbs")
    assert (tmp_path / "cases" / "saved.bgbs").read_bytes()[12] == 2      # snake order byte
    case = load_case(path)
    assert isinstance(case, VectorCase)
    assert (case.name, case.description, case.width, case.height) == ("saved", "d", 6, 4)
    stream = case.load_bitstream()
    assert stream.config == config and stream.order == 2
    assert case.inputs == [Edges.coerce(i) for i in inputs]
    # The saved case replays on a fresh emulator from the file on disk ...
    emulator = Emulator(load_bitstream(case.bitstream_path).config)
    for t, (edges, expected) in enumerate(case.steps):
        assert compare_step(t, expected, emulator.step(edges), 6, 4) == []
    # ... and its outputs are not trivially zero.
    assert any(any(o) for o in case.outputs)


def test_saved_case_detects_a_wrong_emulator(tmp_path):
    """Replaying a saved case on another configuration reports mismatches: the comparison
    can fail."""
    config = Configuration.random(4, 4, seed=1)
    inputs = [Edges(0xF, 0xF, 0xF, 0xF)] * 6
    case = load_case(save_case(str(tmp_path), "c", config, inputs))
    other = Emulator(Configuration.random(4, 4, seed=2))
    total = sum(len(compare_step(t, o, other.step(i), 4, 4))
                for t, (i, o) in enumerate(case.steps))
    assert total > 0


def test_badstream_needs_expect_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "bitgrid-badstream-v1", "width": 2, "height": 2, '
                    '"bitstream": "x.bgbs"}')
    with pytest.raises(VectorFormatError, match="expect_error"):
        load_case(str(path))


def test_a_device_is_not_read_as_a_vector_file():
    """/dev/urandom is refused at once (not read up to the size limit)."""
    with pytest.raises(vectors.VectorFormatError) as info:
        vectors.load_case("/dev/urandom")
    assert str(info.value) == ("/dev/urandom: not a vector file: this is a device or socket; "
                               "give the path of a vector file")


def test_a_large_file_is_refused_from_its_size(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text("[" + " " * 100 + "]")
    monkeypatch.setattr(vectors, "MAX_FILE_BYTES", 64)
    with pytest.raises(vectors.VectorFormatError, match="larger than 0 MiB"):
        vectors.load_case(path)
