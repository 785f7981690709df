"""``bitgrid asm`` and ``bitgrid disasm``: files written, errors (exit 2, one line naming file,
line and column), and the round trip through the command line."""

import json

import pytest
from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.cli import main
from support.conformance import bad_stream_cases, conformance_cases, load_conformance

PROGRAM = """# y = a xor b, one design cycle per 2 subcycles
grid 4 x 2
in  a W 0
in  b N 1
out y E 0
cell 0,0: E = w
cell 1,0: E = n ^ w
cell 2..3,0: E = w
"""


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_asm_writes_bitstream_and_port_map(tmp_path):
    source = tmp_path / "xor.bga"
    source.write_text(PROGRAM)
    result = invoke("asm", source, "-o", tmp_path / "out.bgbs")
    assert result.exit_code == 0, result.output
    config = bitstream.load(tmp_path / "out.bgbs").config
    assert config[1, 0][1] == 0x55AA            # n ^ w: bit a set when bit 0 != bit 3
    portmap = ports.load(tmp_path / "out.ports.json")
    assert [p.name for p in portmap.ports] == ["a", "b", "y"]
    assert portmap.latency == 4
    assert "wrote" in result.output and "latency 4" in result.output


def test_asm_default_output_name(tmp_path):
    source = tmp_path / "xor.bga"
    source.write_text(PROGRAM.replace("in  a W 0\nin  b N 1\nout y E 0\n", ""))
    result = invoke("asm", source)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "xor.bgbs").exists()
    assert not (tmp_path / "xor.ports.json").exists()       # no ports declared
    assert "no port map: the text declares no ports\n" in result.output
    (tmp_path / "xor.ports.json").write_text("{}")
    result = invoke("asm", source)
    assert f"{tmp_path / 'xor.ports.json'} is from an earlier run" in result.output


@pytest.mark.parametrize("text, message", [
    ("grid 4 x 2\ncell 0,0: Q = w\n", "{f}:2:11: unknown side 'Q'; use N, E, S, W"),
    ("grid 4 x 2\ncell 0,0: E = w\ncell 0,0: E = n\n",
     "{f}:3:11: output E of cell (0, 0) is set twice; first at {f}:2:11"),
    ("", "{f}: no 'grid W x H' line"),
])
def test_asm_errors(tmp_path, text, message):
    source = tmp_path / "bad.bga"
    source.write_text(text)
    result = invoke("asm", source, "-o", tmp_path / "out.bgbs")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: " + message.format(f=source)), lines[0]
    assert not (tmp_path / "out.bgbs").exists()


def test_asm_missing_file(tmp_path):
    result = invoke("asm", tmp_path / "none.bga")
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {tmp_path / 'none.bga'}: No such file")


def test_disasm_prints_and_round_trips(tmp_path):
    source = tmp_path / "xor.bga"
    source.write_text(PROGRAM)
    invoke("asm", source, "-o", tmp_path / "out.bgbs")
    result = invoke("disasm", tmp_path / "out.bgbs", "--ports", tmp_path / "out.ports.json")
    assert result.exit_code == 0
    assert "cell 1,0:    E = n ^ w" in result.output
    assert "in  a W 0" in result.output and "latency 4" in result.output
    (tmp_path / "back.bga").write_text(result.output)
    assert invoke("asm", tmp_path / "back.bga", "-o", tmp_path / "back.bgbs").exit_code == 0
    assert (tmp_path / "back.bgbs").read_bytes() == (tmp_path / "out.bgbs").read_bytes()
    assert json.loads((tmp_path / "back.ports.json").read_text()) == \
        json.loads((tmp_path / "out.ports.json").read_text())


@pytest.mark.parametrize("name", conformance_cases())
def test_disasm_asm_conformance_bytes(tmp_path, name):
    path = load_conformance(name).bitstream_path
    result = invoke("disasm", path, "-o", tmp_path / "p.bga")
    assert result.exit_code == 0
    assert invoke("asm", tmp_path / "p.bga", "-o", tmp_path / "p.bgbs").exit_code == 0
    with open(path, "rb") as file:
        assert (tmp_path / "p.bgbs").read_bytes() == file.read()


def test_disasm_errors(tmp_path):
    (tmp_path / "x.bgbs").write_bytes(b"BGBX" + bytes(40))
    result = invoke("disasm", tmp_path / "x.bgbs")
    assert result.exit_code == 2 and result.output.startswith("error: ")
    good = load_conformance("full_adder1").bitstream_path
    other = ports.PortMap(4, 4, [])
    ports.save(tmp_path / "p.json", other)
    result = invoke("disasm", good, "--ports", tmp_path / "p.json")
    assert result.exit_code == 2
    assert f"{tmp_path / 'p.json'} is for a 4 x 4 grid, {good} is 2 x 2: give the port map " \
        "written with this program" in result.output


def test_help_has_examples():
    for command in ("asm", "disasm"):
        result = invoke(command, "--help")
        assert result.exit_code == 0 and "Example" in result.output


def test_asm_writes_both_files_or_neither(tmp_path):
    source = tmp_path / "xor.bga"
    source.write_text(PROGRAM)
    # The port map cannot be written (a full device): no bitstream is left behind ...
    result = invoke("asm", source, "-o", tmp_path / "out.bgbs", "--ports", "/dev/full")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and result.output.startswith("error: /dev/full: ")
    assert not (tmp_path / "out.bgbs").exists()
    # ... and an earlier bitstream keeps its content.
    (tmp_path / "out.bgbs").write_bytes(b"old")
    result = invoke("asm", source, "-o", tmp_path / "out.bgbs", "--ports", "/dev/full")
    assert result.exit_code == 2
    assert (tmp_path / "out.bgbs").read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bgbs", "xor.bga"]


@pytest.mark.parametrize("name", bad_stream_cases())
def test_disasm_refuses_bad_bitstreams_like_emulate(tmp_path, name):
    case = load_conformance(name)
    result = invoke("disasm", case.bitstream_path, "-o", tmp_path / "p.bga")
    if name == "dims_mismatch_4x16":        # a valid 4 x 16 program on its own
        assert result.exit_code == 0 and "grid 4 x 16" in (tmp_path / "p.bga").read_text()
        return
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and case.expect_error in result.output
    assert not (tmp_path / "p.bga").exists()


def test_asm_warns_of_a_declared_latency_read_in_another_row(tmp_path):
    source = tmp_path / "xor.bga"
    source.write_text(PROGRAM.replace("grid 4 x 2\n", "grid 4 x 2\nlatency 6\n"))
    result = invoke("asm", source, "-o", tmp_path / "out.bgbs")
    assert result.exit_code == 0
    assert (f"warning: {source}:3:1: latency 6 reads y[0] 1 row too late (it shows a later "
            "row's result): the path b[0] -> y[0] takes 4 subcycles and needs latency 4..5"
            ) in result.output
    assert ports.load(tmp_path / "out.ports.json").latency == 6     # written as declared


def test_outputs_never_overwrite_the_inputs(tmp_path):
    source = tmp_path / "xor.bga"
    source.write_text(PROGRAM)
    (tmp_path / "link.bga").symlink_to(source)
    cases = [
        (("asm", source, "-o", source), f"{source}: -o names the program itself"),
        (("asm", source, "-o", tmp_path / "link.bga"), "-o names the program itself"),
        (("asm", source, "-o", tmp_path / "x.bgbs", "--ports", source),
         f"{source}: --ports names the program itself"),
        (("asm", source, "-o", tmp_path / "x.bgbs", "--ports", tmp_path / "x.bgbs"),
         "--ports names the bitstream (-o) itself"),
    ]
    for args, message in cases:
        result = invoke(*args)
        assert result.exit_code == 2 and message in result.output, (args, result.output)
        assert result.output.count("\n") == 1
    assert source.read_text() == PROGRAM and not (tmp_path / "x.bgbs").exists()
    assert invoke("asm", source, "-o", tmp_path / "x.bgbs").exit_code == 0
    program = (tmp_path / "x.bgbs").read_bytes()
    for args, message in [
            (("disasm", tmp_path / "x.bgbs", "-o", tmp_path / "x.bgbs"),
             "-o names the bitstream itself"),
            (("disasm", tmp_path / "x.bgbs", "--ports", tmp_path / "x.ports.json",
              "-o", tmp_path / "x.ports.json"), "-o names the port map itself")]:
        result = invoke(*args)
        assert result.exit_code == 2 and message in result.output, result.output
    assert (tmp_path / "x.bgbs").read_bytes() == program
    assert (tmp_path / "x.ports.json").read_text().startswith('{"format": "bitgrid-ports-v1"')
