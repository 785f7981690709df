"""Bad input to the ``bitgrid`` command line found by outside testing (issue 10) ends as one
``error:`` line with exit 2 that names the file, the step and the field: never a traceback,
never exit 1 (the mismatch status), never an ``internal error`` (a bug)."""

import json
import os

import pytest
from click.testing import CliRunner

from bitgrid.cli import main
from support.conformance import conformance_dir, load_conformance


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _program():
    return load_conformance("random_8x8").bitstream_path


def _vectors():
    return os.path.join(conformance_dir(), "random_8x8.json")


def _bad_input(result, expected):
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"error: {expected}"), result.output


@pytest.mark.parametrize("name, text, expected", [
    ("deep.json", "[" * 100000 + "]" * 100000,
     "{}: malformed edge-input stream: JSON nested too deeply"),
    ("deep_item.json", "[{\"N\": " + "[" * 50000 + "]" * 50000 + "}]",
     "{}: malformed edge-input stream: JSON nested too deeply"),
    ("lane300.json", '[{"N": [300]}]', "{}: step 0: N: lane 0 is 300; lane bits are 0 or 1"),
    ("inf.json", '[{}, {"E": [1e400]}]', "{}: step 1: E: lane 0 is Infinity; lane bits are 0 "
                                         "or 1"),
    ("word300.json", '[{"E": 300}]', "{}: step 0: E: has bits beyond its 8 lanes"),
    ("word_inf.json", '[{"E": 1e400}]', "{}: step 0: E: Infinity is not a word"),
    ("float.json", '[{"E": 1.5}]', "{}: step 0: E: 1.5 is not a word"),
    ("underscore.txt", "0 0 0 0\n0x0_1 0 0 0\n", "{}: step 1 (line 2): N: '0x0_1' is not a hex "
                                                 "word"),
    ("binary.txt", "0 0b1 0 0\n", "{}: step 0 (line 1): E: '0b1' looks like a binary number"),
    ("header.txt", "N E S W\n1 2 3 4\n", "{}: step 0 (line 1): 'N E S W' looks like a header "
                                         "line; start it with '#'"),
])
def test_bad_inputs_exit_2_naming_file_step_and_side(tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    _bad_input(invoke("emulate", _program(), "--inputs", path), expected.format(path))


def test_a_program_given_as_inputs(tmp_path):
    _bad_input(invoke("emulate", _program(), "--inputs", _program()),
               f"{_program()} is not an edge-input stream (it looks like a BGBS BitGrid "
               "program: give it as the PROGRAM argument)")


@pytest.mark.parametrize("steps", [str(10 ** 30), "1000001", "-1"])
def test_steps_beyond_the_bound_exit_2(steps):
    result = invoke("emulate", _program(), "--steps", steps)
    assert result.exit_code == 2
    assert f"Invalid value for '--steps': {steps} is not in the range 0<=x<=1000000" \
        in result.output
    assert "Traceback" not in result.output


def test_steps_bound_is_in_the_help():
    for command in ("emulate", "sim", "run"):
        result = invoke(command, "--help")
        assert "Subcycles to run, at most 1000000" in " ".join(result.output.split())


def test_memory_error_in_verilog_generation(tmp_path, monkeypatch):
    def grid_verilog(width, height, **options):
        raise MemoryError

    monkeypatch.setattr("bitgrid.hdl.verilog.grid_verilog", grid_verilog)
    target = tmp_path / "big.v"
    result = invoke("verilog", "--size", "4096x4096", "-o", target)
    _bad_input(result, "not enough memory to generate the Verilog of a 4096 x 4096 grid (the "
                       "system refused more memory); try a smaller --size, or free some memory")
    assert os.listdir(tmp_path) == []


def test_memory_error_elsewhere_is_not_an_internal_error(monkeypatch):
    class Hungry:
        def __init__(self, config):
            raise MemoryError("cannot allocate 8 GB")

    monkeypatch.setattr("bitgrid.cli.run.Emulator", Hungry)
    _bad_input(invoke("emulate", _program(), "--steps", "1"),
               "out of memory (cannot allocate 8 GB); try a smaller grid or fewer steps, or "
               "free some memory")


@pytest.mark.parametrize("part, bound", [("emulator", "1<=x<=1073741824"),
                                         ("sim", "1<=x<=1000000"), ("mesh", "5<=x<=1000000")])
def test_bench_steps_are_bounded(part, bound):
    result = invoke("bench", part, "--steps", str(10 ** 30))
    assert result.exit_code == 2
    assert f"Invalid value for '--steps': {10 ** 30} is not in the range {bound}" in result.output


def test_bench_compile_outside_needs_verilog_files(tmp_path):
    """--outside refuses a folder without .v files before anything is compiled."""
    result = invoke("bench", "compile", "--outside", str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path} holds no .v file: give a folder of Verilog files" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("args, message", [
    (["--series", "nope"], "no series 'nope'; the series are test designs, multiplier, adder, "
                           "1000 LUTs, state, arithmetic, sequential"),
    (["--series", "sequential", "--quick"], "--series picks from the full suite")])
def test_bench_compile_series_are_checked(args, message):
    """--series names a series of the suite, checked before anything is compiled."""
    result = invoke("bench", "compile", *args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_series_plan_picks_the_suites_rows():
    from bitgrid.bench.compile import series_plan
    from bitgrid.compiler.designs import SEQUENTIAL_DESIGNS
    assert series_plan(["sequential"]) == [("sequential", n, p) for n, p in SEQUENTIAL_DESIGNS]


def _vector_file(tmp_path, steps_text):
    path = tmp_path / "v.json"
    path.write_text('{"format": "bitgrid-vectors-v1", "width": 8, "height": 8, "bitstream": '
                    f'{json.dumps(_program())}, "steps": {steps_text}}}')
    return path


def test_deep_vector_file_exits_2(tmp_path):
    path = _vector_file(tmp_path, "[" * 100000 + "]" * 100000)
    _bad_input(invoke("emulate", _program(), "--vectors", path),
               f"malformed vector file: {path}: nested too deeply to be a vector file")


@pytest.mark.parametrize("word, message", [
    ('"0x0_1"', "'0x0_1' is not a hex word"), ('"0x1 "', "'0x1 ' is not a hex word"),
    ('1', "expected a hex string like '0x1f', got 1")])
def test_lenient_vector_words_exit_2(tmp_path, word, message):
    step = ('{"in": {"N": WORD, "E": "0x0", "S": "0x0", "W": "0x0"}, '
            '"out": {"N": "0x0", "E": "0x0", "S": "0x0", "W": "0x0"}}').replace("WORD", word)
    path = _vector_file(tmp_path, f"[{step}]")
    _bad_input(invoke("emulate", _program(), "--vectors", path),
               f"malformed vector file: {path}: steps[0].in.N: {message}")


def test_a_program_given_as_vectors(tmp_path):
    _bad_input(invoke("emulate", _program(), "--vectors", _program()),
               f"malformed vector file: {_program()} looks like a BGBS BitGrid program, not a "
               "vector file (give it as the PROGRAM argument)")


def test_a_binary_file_given_as_vectors(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b'{"format": "\xff"}')
    _bad_input(invoke("emulate", _program(), "--vectors", path),
               f"malformed vector file: {path}: not a JSON vector file (byte 12 is not UTF-8 "
               "text)")


@pytest.mark.parametrize("args, message", [
    (("asic", "--pdk", "sky130", "--size", "64x64", "-o", "{tmp}/a"),
     "--size 64x64: the ASIC flow takes grids of at most 256 cells (16x16; synthesis alone "
     "takes 2 to 5 minutes for 8x8 on a 2-core machine and grows with the cells); give a "
     "smaller --size"),
    (("asic", "--pdk", "osu018", "--size", "8x8", "--place-route", "-o", "{tmp}/a"),
     "--size 8x8: --place-route takes grids of at most 16 cells (4x4; GrayWolf did not place "
     "8x8 in 40 minutes); give a smaller --size"),
    (("asic", "--pdk", "sky130", "--size", "2x2", "-o", ""),
     "-o is empty: give the folder for the netlist and the report"),
    (("compile", "--expr", "y = a ^ b", "--vars", "a:1,b:1", "--top", "", "-o", "{tmp}/c"),
     "--top is empty: give the top module's name (with --expr: the program's name), or leave "
     "--top out"),
    (("compile", "--expr", "y = a ^ b", "--vars", "a:1,b:1", "-o", ""),
     "-o is empty: give the folder for the program, its port map and report"),
    (("compile", "--expr", "y = a ^ b", "--vars", "a:1,b:1", "--defects", "{tmp}/none.json",
      "-o", "{tmp}/c"), "{tmp}/none.json: cannot read the defect map: No such file or "
     "directory"),
])
def test_refused_up_front(tmp_path, args, message):
    """Work without a bound or with an empty name is refused before anything runs (issue 27):
    one line, exit 2, nothing written."""
    result = invoke(*[str(a).replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == 2
    assert result.output == f"error: {message.replace('{tmp}', str(tmp_path))}\n"
    assert list(tmp_path.iterdir()) == []


def test_an_empty_output_path_is_refused():
    from bitgrid.cli.common import check_writable
    from bitgrid.cli.errors import BadInput
    for path in ("", " "):
        with pytest.raises(BadInput, match="^the output path is empty: give a file or folder "
                                           "name$"):
            check_writable(path)


def test_bench_streams_are_bounded():
    result = invoke("bench", "emulator", "--streams", "65")
    assert result.exit_code == 2
    assert "Invalid value for '--streams': 65 is not in the range 0<=x<=64" in result.output


@pytest.mark.parametrize("text", ["[" * 100000 + "]" * 100000,
                                  '{"a":' * 100000 + "1" + "}" * 100000])
def test_deep_port_and_defect_maps_exit_2(tmp_path, text):
    """A port map or defect map nested 100,000 deep is the file's fault, not an internal
    error (a RecursionError, issue 39)."""
    path = tmp_path / "deep.json"
    path.write_text(text)
    program = load_conformance("random_2x2").bitstream_path
    _bad_input(invoke("disasm", program, "--ports", path),
               f"{path}: nested too deeply to be a port map")
    _bad_input(invoke("place", program, "--defects", path, "-o", tmp_path / "p.bgbs"),
               f"{path}: nested too deeply to be a defect map")
