"""Every command's file arguments, fed files that are not what they should be (issue 39, item
3): empty, binary, a valid file cut in half, JSON nested 100,000 deep (lists and objects),
a few MB of random bytes, and a file of another kind (a program given as a port map and the
other way round). Each ends with exit 2 and one ``error:`` line on standard error: never a
traceback, never an ``internal error`` or a word of a bug in bitgrid, which are for bitgrid's
own faults.

The commands run in-process (click's CliRunner); none builds a simulator or a board (``sim``
and ``serve`` refuse the file before they would), and ``compile`` of a source runs Yosys,
whose syntax error is the refusal.
"""

import json
import random

import pytest
from click.testing import CliRunner

from bitgrid.cli import main

#: The file kinds of the arguments, each with the kinds of file it is fed by mistake.
WRONG_KINDS = {
    "program": ("ports",), "ports": ("program", "vectors"), "vectors": ("program", "ports"),
    "defects": ("program", "ports"), "inputs": ("program",), "csv": ("program",),
    "bga": ("program",), "verilog": ("program",),
}

#: ``(name, kind, arguments)``: ``{file}`` is the file fed; ``{program}``, ``{ports}``...
#: are valid files of those kinds, ``{out}`` a folder to write into.
COMMANDS = [
    ("asm", "bga", ["asm", "{file}", "-o", "{out}/x.bgbs"]),
    ("disasm", "program", ["disasm", "{file}"]),
    ("disasm --ports", "ports", ["disasm", "{program}", "--ports", "{file}"]),
    ("bitstream inspect", "program", ["bitstream", "inspect", "{file}"]),
    ("bitstream convert", "program", ["bitstream", "convert", "{file}", "{out}/x.bgbs"]),
    ("bitstream slice", "program", ["bitstream", "slice", "{file}", "--mesh", "1x1", "-o",
                                    "{out}"]),
    ("bitstream join", "program", ["bitstream", "join", "{file}", "--mesh", "1x1", "-o",
                                   "{out}/x.bgbs"]),
    ("eval", "program", ["eval", "{file}", "--ports", "{ports}", "--csv", "{csv}"]),
    ("eval --ports", "ports", ["eval", "{program}", "--ports", "{file}", "--csv", "{csv}"]),
    ("eval --csv", "csv", ["eval", "{program}", "--ports", "{ports}", "--csv", "{file}"]),
    ("view", "program", ["view", "{file}", "-o", "{out}/x.svg"]),
    ("view --ports", "ports", ["view", "{program}", "--ports", "{file}", "-o", "{out}/x.svg"]),
    ("view --vectors", "vectors", ["view", "{program}", "--vectors", "{file}", "-o",
                                   "{out}/x.svg"]),
    ("view --inputs", "inputs", ["view", "{program}", "--inputs", "{file}", "-o",
                                 "{out}/x.svg"]),
    ("view --csv", "csv", ["view", "{program}", "--ports", "{ports}", "--csv", "{file}", "-o",
                           "{out}/x.svg"]),
    ("transform", "program", ["transform", "{file}", "--mirror", "x", "-o", "{out}/x.bgbs"]),
    ("transform --ports", "ports", ["transform", "{program}", "--mirror", "x", "--ports",
                                    "{file}", "-o", "{out}/x.bgbs"]),
    ("transform --vectors", "vectors", ["transform", "{program}", "--mirror", "x",
                                        "--vectors", "{file}", "-o", "{out}/x.bgbs"]),
    ("place", "program", ["place", "{file}", "--defects", "{defects}", "-o", "{out}/x.bgbs"]),
    ("place --defects", "defects", ["place", "{program}", "--defects", "{file}", "-o",
                                    "{out}/x.bgbs"]),
    ("place --ports", "ports", ["place", "{program}", "--defects", "{defects}", "--ports",
                                "{file}", "-o", "{out}/x.bgbs"]),
    ("emulate", "program", ["emulate", "{file}", "--steps", "1"]),
    ("emulate --inputs", "inputs", ["emulate", "{program}", "--inputs", "{file}"]),
    ("emulate --vectors", "vectors", ["emulate", "{program}", "--vectors", "{file}"]),
    ("sim", "program", ["sim", "{file}", "--steps", "1"]),
    ("sim --inputs", "inputs", ["sim", "{program}", "--inputs", "{file}"]),
    ("sim --vectors", "vectors", ["sim", "{program}", "--vectors", "{file}"]),
    ("run", "program", ["run", "{file}", "--steps", "1"]),
    ("run --inputs", "inputs", ["run", "{program}", "--inputs", "{file}"]),
    ("run --vectors", "vectors", ["run", "{program}", "--vectors", "{file}"]),
    ("isolate", "program", ["isolate", "{file}", "--region", "0,0,1,1"]),
    ("verilog --init", "program", ["verilog", "--size", "2x2", "--init", "{file}", "-o",
                                   "{out}/x.v"]),
    ("serve --program", "program", ["serve", "--program", "{file}", "--port", "1"]),
    ("serve --ports", "ports", ["serve", "--program", "{program}", "--ports", "{file}",
                                "--port", "1"]),
    ("compile --defects", "defects", ["compile", "--expr", "y = a", "--vars", "a:1",
                                      "--defects", "{file}", "-o", "{out}/c"]),
    ("compile", "verilog", ["compile", "{file}", "--top", "t", "-o", "{out}/c"]),
]

#: Bad contents that do not depend on the kind of the argument.
DEPTH = 100_000
FIXED = {
    "empty": b"",
    "binary": bytes(range(256)) * 16,
    "deep list": b"[" * DEPTH + b"]" * DEPTH,
    "deep object": b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
    "huge": random.Random(39).randbytes(3 << 20),
}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _arguments(template, file, valid, out):
    return [str(a).format(file=file, out=out, **{k: str(v) for k, v in valid.items()})
            for a in template]


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """Valid files of every kind, for one 2 x 2 adder: ``{kind: path}``."""
    folder = tmp_path_factory.mktemp("valid")
    program = folder / "add.bgbs"
    for args in (["macro", "adder", "bits=2", "-o", program],
                 ["disasm", program, "-o", folder / "add.bga"],
                 ["emulate", program, "--steps", "4", "--save-vectors", folder / "v.json"]):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
    (folder / "in.txt").write_text("0 0 0 0\n1 0 0 0\n3 1 2 0\n")     # cut: 2 words
    (folder / "in.csv").write_text("a,b\n1,2\n3,3\n")
    (folder / "defects.json").write_text(json.dumps(
        {"format": "bitgrid-defects-v1", "width": 2, "height": 2, "defects": []}))
    (folder / "t.v").write_text("module t(input [1:0] a, output [1:0] y);\n"
                                "  assign y = ~a;\nendmodule\n")
    return {"program": program, "ports": folder / "add.ports.json",
            "vectors": folder / "v.json", "inputs": folder / "in.txt", "csv": folder / "in.csv",
            "defects": folder / "defects.json", "bga": folder / "add.bga",
            "verilog": folder / "t.v"}


def test_the_valid_files_are_taken(valid, tmp_path):
    """The files the fuzzed ones stand in for are good: what fails below is the fuzzed file."""
    result = invoke("eval", valid["program"], "--ports", valid["ports"], "--csv", valid["csv"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["sum", "3", "6"]
    taken = {"asm", "emulate --vectors", "emulate --inputs", "place --defects", "compile"}
    for name, kind, args in COMMANDS:
        if name in taken:
            result = invoke(*_arguments(args, valid[kind], valid, tmp_path))
            assert result.exit_code == 0, (name, result.output)


CASES = [pytest.param(kind, args, bad, id=f"{name}: {bad}")
         for name, kind, args in COMMANDS
         for bad in (*FIXED, "truncated", *(f"a {k} file" for k in WRONG_KINDS[kind]))]


@pytest.mark.parametrize("kind, args, bad", CASES)
def test_a_bad_file_is_one_error_line(valid, tmp_path, kind, args, bad):
    if bad in FIXED:
        data = FIXED[bad]
    elif bad == "truncated":
        whole = valid[kind].read_bytes()
        data = whole[:len(whole) // 2]
    else:
        data = valid[bad.split()[1]].read_bytes()
    suffix = valid[kind].suffix
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    result = invoke(*_arguments(args, path, valid, out))
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in ("Traceback", "internal error", "bug"):
        assert word not in result.stderr, result.stderr
    assert str(path) in lines[0] or path.name in lines[0], lines[0]     # names the file
