"""``bitgrid eval``: CSV rows through a program by port names; every bad input exits 2 with one
line naming the file, the line and the column or port."""

import pytest
from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.cli import main
from support import port_programs


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def signed(tmp_path):
    """The signed-routes program (a signed -> q, b unsigned -> r signed) and its port map."""
    config, portmap, _ = port_programs.signed_routes()
    program, portfile = tmp_path / "p.bgbs", tmp_path / "p.ports.json"
    bitstream.save(program, config)
    ports.save(portfile, portmap, config)
    return program, portfile


def write(tmp_path, text, name="in.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("target", ["emu", "fast", "loopback"])
def test_rows_to_stdout(signed, tmp_path, target):
    program, portfile = signed
    csv = write(tmp_path, "a,b\n-8,0xf\n7,3\n0x3,8\n")
    result = invoke("eval", program, "--ports", portfile, "--csv", csv, "--target", target)
    assert result.exit_code == 0, result.output
    assert result.stdout == "q,r\n-8,-1\n7,3\n3,-8\n"


def test_rows_to_a_file(signed, tmp_path):
    program, portfile = signed
    csv = write(tmp_path, "b,a\n1,2\n")
    out = tmp_path / "out.csv"
    result = invoke("eval", program, "--ports", portfile, "--csv", csv, "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text() == "q,r\n2,1\n"
    assert result.stdout == ""
    assert "wrote" in result.stderr


def test_cycles_for_a_port_map_without_inputs(tmp_path):
    # xor_loop's outputs alone (no inputs): all lanes 0, the loop stays 0.
    config, portmap, _ = port_programs.xor_loop()
    program, portfile = tmp_path / "p.bgbs", tmp_path / "p.ports.json"
    bitstream.save(program, config)
    ports.save(portfile, portmap.replace(ports=portmap.outputs), config)
    result = invoke("eval", program, "--ports", portfile, "--cycles", 3)
    assert result.exit_code == 0, result.output
    assert result.stdout == "q,e\n0,0\n0,0\n0,0\n"


@pytest.mark.parametrize("text, message", [
    ("a,c\n1,2\n", "in.csv:1: column 2: no port 'c'; the input ports are a, b"),
    ("a\n1\n", "in.csv:1: no column for input port b; the header names every input port"),
    ("a,b\n1,2\n8,0\n", "in.csv:3: column 1 (a): value 8 does not fit port a (4 bits, "
                        "signed: -8..7)"),
    ("a,b\n1,two\n", "in.csv:2: column 2 (b): not a decimal or 0x hex integer: 'two'"),
    ("", "in.csv: empty; the first line names the input ports (a,b), each further line "
         "gives one row of values"),
])
def test_csv_errors(signed, tmp_path, text, message):
    program, portfile = signed
    csv = write(tmp_path, text)
    result = invoke("eval", program, "--ports", portfile, "--csv", csv)
    assert result.exit_code == 2
    assert result.stderr == f"error: {csv.parent}/{message}\n"
    assert result.stdout == ""


def test_port_map_for_another_size(signed, tmp_path):
    _, portfile = signed
    config, _, _ = port_programs.xor_loop()
    other = tmp_path / "other.bgbs"
    bitstream.save(other, config)
    result = invoke("eval", other, "--ports", portfile, "--csv", write(tmp_path, "a,b\n1,1\n"))
    assert result.exit_code == 2
    assert result.stderr == (f"error: {portfile} is for a 4 x 4 grid, {other} is 8 x 8: "
                             "give the port map written with this program\n")


@pytest.mark.parametrize("args, message", [
    (("--target", "board"), "--target: Unknown target 'board': use emu, fast, sim, "
                            "mesh:COLSxROWS, loopback, serial:PORT or bgcf:HOST:PORT"),
    (("--target", "mesh:3"), "--target: "),
    (("--cycles", "3"), "--cycles is for a port map without input ports"),
    ((), None),
])
def test_option_errors(signed, tmp_path, args, message):
    program, portfile = signed
    extra = ("--csv", write(tmp_path, "a,b\n1,1\n")) if args else ()
    result = invoke("eval", program, "--ports", portfile, *extra, *args)
    assert result.exit_code == 2
    if message is None:
        assert result.stderr == "error: give the input rows with --csv IN.csv (header: a,b)\n"
    else:
        assert result.stderr.startswith(f"error: {message}")
        assert result.stderr.count("\n") == 1


def test_bad_port_map_file(signed, tmp_path):
    program, _ = signed
    bad = write(tmp_path, '{"format": "bitgrid-ports-v1", "width": 4, "height": 4, "ports": '
                          '[{"name": "a", "direction": "in", "bits": [{"side": "W", '
                          '"lane": 4}]}]}', name="bad.json")
    result = invoke("eval", program, "--ports", bad, "--csv", write(tmp_path, "a\n1\n"))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}: Port a bit 0")
    assert result.stderr.count("\n") == 1


def test_dash_output_is_standard_output(signed, tmp_path, monkeypatch):
    program, portfile = signed
    monkeypatch.chdir(tmp_path)
    csv = write(tmp_path, "a,b\n-8,0xf\n")
    result = invoke("eval", program, "--ports", portfile, "--csv", csv, "-o", "-")
    assert result.exit_code == 0, result.output
    assert result.stdout == "q,r\n-8,-1\n"
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("which", ["csv", "ports", "program"])
def test_output_may_not_overwrite_an_input(signed, tmp_path, which):
    program, portfile = signed
    csv = write(tmp_path, "a,b\n1,1\n")
    target = {"csv": csv, "ports": portfile, "program": program}[which]
    option = {"csv": "--csv", "ports": "--ports", "program": "PROGRAM"}[which]
    before = target.read_bytes()
    result = invoke("eval", program, "--ports", portfile, "--csv", csv, "-o", target)
    assert result.exit_code == 2
    assert result.stderr == (f"error: {target} (the output rows) is the input {option} "
                             f"{target}; write the output to a new file\n")
    assert target.read_bytes() == before


def test_port_map_needing_too_many_subcycles(signed, tmp_path):
    program, _ = signed
    config, portmap, _ = port_programs.signed_routes()
    far = portmap.map_bits(lambda port, bit: bit._replace(skew=bit.skew + 10 ** 20)
                           if port.direction == "out" else bit)
    portfile = tmp_path / "far.ports.json"
    ports.save(portfile, far, config)
    result = invoke("eval", program, "--ports", portfile, "--csv", write(tmp_path, "a,b\n1,1\n"))
    assert result.exit_code == 2
    assert result.stderr == (f"error: {portfile}: a latency or skew of 100000000000000000001 "
                             f"subcycles is more than {program} can hold (18: its 16 cells, "
                             "one subcycle each, plus a period): give the port map written "
                             "with this program\n")


def test_missing_serial_device_is_one_line(signed, tmp_path):
    program, portfile = signed
    result = invoke("eval", program, "--ports", portfile, "--csv",
                    write(tmp_path, "a,b\n1,1\n"), "--target", f"serial:{tmp_path}/nothing")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: no device at serial:{tmp_path}/nothing")
    assert result.stderr.count("\n") == 1


def test_rows_from_standard_input(signed):
    program, portfile = signed
    result = CliRunner().invoke(main, ["eval", str(program), "--ports", str(portfile),
                                       "--csv", "-"], input="a,b\n-1,9\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == "q,r\n-1,-7\n"


def test_device_refused(signed):
    program, portfile = signed
    result = invoke("eval", program, "--ports", portfile, "--csv", "/dev/null")
    assert result.exit_code == 2
    assert result.stderr == ("error: /dev/null: not a CSV file: this is a device or socket; "
                             "give the path of a CSV file\n")
