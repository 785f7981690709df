"""A port map is bound to its program (issue 27): every tool that writes a program with its
port map records the program's digest in it, and every command that reads both refuses a port
map of another program, or one whose timing the program cannot hold, with exit 2 and one line;
a port map without a digest (written before there was one) still works, checked against the
program's paths, with a note (the seal: test_cli_seal.py)."""

import json

import pytest
from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.cli import main
from bitgrid.config import Configuration


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _text(op):
    return (f"grid 4 x 2\nin a N 0\nin b W 0\nout y E 0\n"
            f"cell 0,0: E = n {op} w\ncell 1..3,0: E = w\n")


@pytest.fixture
def programs(tmp_path):
    """and.bgbs and xor.bgbs (the same size and ports), each with its port map from asm."""
    made = {}
    for name, op in (("and", "&"), ("xor", "^")):
        source = tmp_path / f"{name}.bga"
        source.write_text(_text(op))
        result = invoke("asm", source, "-o", tmp_path / f"{name}.bgbs")
        assert result.exit_code == 0, result.output
        made[name] = (tmp_path / f"{name}.bgbs", tmp_path / f"{name}.ports.json")
    (tmp_path / "in.csv").write_text("a,b\n0,0\n0,1\n1,0\n1,1\n")
    (tmp_path / "none.defects.json").write_text(json.dumps(
        {"format": "bitgrid-defects-v1", "width": 4, "height": 2, "defects": []}))
    return made


def _commands(tmp_path, program, portfile):
    return {
        "eval": ("eval", program, "--ports", portfile, "--csv", tmp_path / "in.csv"),
        "view": ("view", program, "--ports", portfile, "-o", tmp_path / "v.svg"),
        "transform": ("transform", program, "--ports", portfile, "--rotate", "180", "-o",
                      tmp_path / "t.bgbs"),
        "place": ("place", program, "--ports", portfile, "--defects",
                  tmp_path / "none.defects.json", "-o", tmp_path / "p.bgbs"),
        "disasm": ("disasm", program, "--ports", portfile, "-o", tmp_path / "d.bga"),
    }


COMMANDS = ("eval", "view", "transform", "place", "disasm")


def test_asm_records_the_digest(programs):
    for program, portfile in programs.values():
        document = json.loads(portfile.read_text())
        assert document["program"] == bitstream.load(program).config.digest()
    assert json.loads(programs["and"][1].read_text())["program"] != \
        json.loads(programs["xor"][1].read_text())["program"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_port_map_of_another_program_is_refused(programs, tmp_path, command):
    """The issue's case: xor.bgbs with and.ports.json (same size, same ports) gave AND values
    with exit 0; now every command refuses it and writes nothing."""
    program, _ = programs["xor"]
    _, foreign = programs["and"]
    before = sorted(p.name for p in tmp_path.iterdir())
    result = invoke(*_commands(tmp_path, program, foreign)[command])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"error: {foreign} was written for another program than "
                             f"{program} (its configuration digest differs): give the port "
                             "map written with this program\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_the_own_port_map_is_accepted(programs, tmp_path, command):
    program, own = programs["xor"]
    result = invoke(*_commands(tmp_path, program, own)[command])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    if command == "eval":
        assert result.stdout == "y\n0\n1\n1\n0\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_timing_out_of_range_is_refused(programs, tmp_path, command):
    """A hand-edited latency of 4,000,000 subcycles (the digest and seal removed, as an edit
    would leave them stale) is more than an 8-cell program can hold."""
    program, own = programs["xor"]
    document = json.loads(own.read_text())
    del document["program"], document["seal"]
    document["latency"] = 4_000_000
    edited = tmp_path / "edited.ports.json"
    edited.write_text(json.dumps(document))
    result = invoke(*_commands(tmp_path, program, edited)[command])
    assert result.exit_code == 2
    assert result.stderr == (f"error: {edited}: a latency or skew of 4000000 subcycles is "
                             f"more than {program} can hold (10: its 8 cells, one subcycle "
                             "each, plus a period): give the port map written with this "
                             "program\n")


def test_a_port_map_without_digest_still_works(programs, tmp_path):
    program, own = programs["xor"]
    document = json.loads(own.read_text())
    del document["program"], document["seal"]
    old = tmp_path / "old.ports.json"
    old.write_text(json.dumps(document))
    result = invoke("eval", program, "--ports", old, "--csv", tmp_path / "in.csv")
    assert result.exit_code == 0
    assert result.stdout == "y\n0\n1\n1\n0\n"
    assert result.stderr == (f"note: {old} carries no seal (written by hand or by an older "
                             "bitgrid); checked against the program's paths: its latency and "
                             "skews agree with them; which bit is which, signs and lanes of "
                             "equal timing cannot be checked\n")


@pytest.mark.parametrize("command", ("transform", "place"))
def test_tools_that_move_a_program_record_the_new_digest(programs, tmp_path, command):
    program, own = programs["xor"]
    result = invoke(*_commands(tmp_path, program, own)[command])
    assert result.exit_code == 0, result.output
    out = tmp_path / ("t" if command == "transform" else "p")
    moved = ports.load(out.with_suffix(".ports.json"))
    assert moved.program == bitstream.load(out.with_suffix(".bgbs")).config.digest()


def test_library_and_compile_record_the_digest(tmp_path):
    result = invoke("macro", "adder", "bits=2", "-o", tmp_path / "add.bgbs")
    assert result.exit_code == 0, result.output
    assert ports.load(tmp_path / "add.ports.json").program == \
        bitstream.load(tmp_path / "add.bgbs").config.digest()
    result = invoke("compile", "--expr", "y = a ^ b", "--vars", "a:1,b:1", "-o",
                    tmp_path / "c")
    assert result.exit_code == 0, result.output
    assert ports.load(tmp_path / "c" / "expr.ports.json").program == \
        bitstream.load(tmp_path / "c" / "expr.bgbs").config.digest()


def test_digest_depends_on_every_table_and_the_size():
    config = Configuration(4, 2)
    base = config.digest()
    assert base.startswith("sha256:") and len(base) == 7 + 64
    config.luts[1, 3, 2] = 1
    assert config.digest() != base
    assert Configuration(2, 4).digest() != Configuration(4, 2).digest()
    with pytest.raises(ports.PortMapError, match="a digest is 'sha256:' and 64 hex digits"):
        ports.PortMap(4, 2, program="sha256:xyz")
