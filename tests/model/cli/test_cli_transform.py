"""``bitgrid transform``: the program and its port map written together, the timing reported,
and every refusal one line with exit 2."""

import pytest
from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.cli import main
from bitgrid.evaluate import evaluate
from bitgrid.program import Program
from bitgrid.vectors import load_case
from support import port_programs
from support.conformance import conformance_dir, load_conformance


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def skewed(tmp_path):
    config, portmap, model = port_programs.skewed_routes()
    program, portfile = tmp_path / "p.bgbs", tmp_path / "p.ports.json"
    bitstream.save(program, config, order=2)
    ports.save(portfile, portmap, config)
    return program, portfile, model


@pytest.mark.parametrize("args, added", [(("--rotate", "180"), 0),
                                         (("--rotate", "90", "--retime"), 1),
                                         (("--mirror", "x", "--retime"), 1)])
def test_program_and_port_map_written(skewed, tmp_path, args, added):
    program, portfile, model = skewed
    out = tmp_path / "out.bgbs"
    result = invoke("transform", program, "--ports", portfile, *args, "-o", out)
    assert result.exit_code == 0, result.output
    moved = bitstream.load(out)
    assert int(moved.order) == 2                       # the scan order is kept
    portmap = ports.load(tmp_path / "out.ports.json")
    assert portmap.latency == ports.load(portfile).latency + added
    rows = [{"a": a, "b": a % 4} for a in range(16)]
    assert evaluate(moved.config, portmap, rows) == model(rows)
    assert ("latency + 1 subcycle" in result.stderr) == bool(added)


def test_parity_swap_refused_without_retime(skewed, tmp_path):
    program, portfile, _ = skewed
    out = tmp_path / "out.bgbs"
    result = invoke("transform", program, "--ports", portfile, "--rotate", "270", "-o", out)
    assert result.exit_code == 2
    assert result.stderr == ("error: rotate 270 swaps the phase of every cell (SPEC section "
                             "10), which changes the program's timing: add --retime to delay "
                             "it by one subcycle at its ports (latency + 1), or use an even "
                             "move or a 180-degree rotation\n")
    assert not out.exists() and not (tmp_path / "out.ports.json").exists()


def test_move_with_size(tmp_path):
    program = Program(4, 4)
    program.route(0, 1, "E")
    source = tmp_path / "p.bgbs"
    bitstream.save(source, program.config)
    out = tmp_path / "low.bgbs"
    result = invoke("transform", source, "--move", "0,-2", "--size", "4x2", "-o", out)
    assert result.exit_code == 2           # cell (0, 1) would land on row -1
    assert result.stderr.startswith("error: cell (0, 1) would move to (0, -1), outside the "
                                    "4 x 2 grid")
    result = invoke("transform", source, "--move", "0,2", "--size", "4x6", "-o", out)
    assert result.exit_code == 0, result.output
    assert bitstream.load(out).config[2, 3] == (0, 0xFF00, 0, 0)     # E copies W


@pytest.mark.parametrize("existing", [False, True])
def test_outputs_written_all_or_none(skewed, tmp_path, monkeypatch, existing):
    # The port map cannot be written (a full disk): the program written just before it is
    # taken back, so no half result is left (an old OUT.bgbs keeps its content).
    from bitgrid import files
    program, portfile, _ = skewed
    out = tmp_path / "out.bgbs"
    if existing:
        out.write_bytes(b"old")
    real = files.atomic_write

    def full_disk(path, content, **kwargs):
        if str(path).endswith(".ports.json"):
            raise OSError(28, "No space left on device", str(path))
        return real(path, content, **kwargs)

    monkeypatch.setattr(files, "atomic_write", full_disk)
    monkeypatch.setattr(ports, "atomic_write", full_disk)
    result = invoke("transform", program, "--ports", portfile, "--rotate", "180", "-o", out)
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path}/out.ports.json: No space left on device\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        sorted(["p.bgbs", "p.ports.json"] + (["out.bgbs"] if existing else []))
    if existing:
        assert out.read_bytes() == b"old"


def test_advance_reported(tmp_path):
    # An odd-parity inverter wakes up on the first subcycle: the program runs one subcycle
    # earlier instead of later, and says so.
    config, portmap, model = port_programs.inverter_route()
    source, portfile = tmp_path / "p.bgbs", tmp_path / "p.ports.json"
    bitstream.save(source, config)
    ports.save(portfile, portmap, config)
    out = tmp_path / "r.bgbs"
    result = invoke("transform", source, "--ports", portfile, "--rotate", "90", "--retime",
                    "-o", out)
    assert result.exit_code == 0, result.output
    assert "re-timed: latency - 1 subcycle (inputs one subcycle earlier)" in result.stderr
    moved = ports.load(tmp_path / "r.ports.json")
    assert moved.latency == portmap.latency - 1
    rows = [{"a": v} for v in (1, 0, 0, 1, 1)]
    assert evaluate(bitstream.load(out).config, moved, rows) == model(rows)


def test_move_of_a_program_with_idle_lanes(tmp_path):
    # Its N side leaves the edge: allowed with the port map (no port there), not without.
    config, portmap, model = port_programs.idle_lanes()
    source, portfile = tmp_path / "p.bgbs", tmp_path / "p.ports.json"
    bitstream.save(source, config)
    ports.save(portfile, portmap, config)
    out = tmp_path / "low.bgbs"
    result = invoke("transform", source, "--move", "0,2", "--size", "4x4", "-o", out)
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr.startswith("error: cell (0, 0) reads its input from the N edge (lane "
                                    "0), but move 0,2")
    assert result.stderr.endswith("or give its port map (--ports) if no port uses that lane\n")
    result = invoke("transform", source, "--ports", portfile, "--move", "0,2", "--size", "4x4",
                    "-o", out)
    assert result.exit_code == 0, result.output
    moved = ports.load(tmp_path / "low.ports.json")
    rows = [{"a": v} for v in (0, 1, 1, 0, 1)]
    assert evaluate(bitstream.load(out).config, moved, rows) == model(rows)


@pytest.mark.parametrize("args, message", [
    (("-o", "x.bgbs"), "give exactly one of --move DX,DY, --rotate 90|180|270 and --mirror "
                       "x|y\n"),
    (("--rotate", "90", "--mirror", "x", "-o", "x.bgbs"),
     "give exactly one of --move DX,DY, --rotate 90|180|270 and --mirror x|y (not --rotate "
     "and --mirror)\n"),
    (("--rotate", "180", "--size", "8x8", "-o", "x.bgbs"), "--size goes with --move"),
    (("--move", "2", "-o", "x.bgbs"), "--move '2': give the offset as DX,DY in cells"),
    (("--move", "2,0", "-o", "p.bgbs"), "p.bgbs (the transformed program) is the input "
                                        "PROGRAM p.bgbs; write the output to a new file"),
    (("--ports", "p.ports.json", "--rotate", "180", "-o", "p.ports.json"),
     "p.ports.json (the transformed program) is the input --ports p.ports.json"),
    (("--ports", "p.ports.json", "--rotate", "180", "-o", "p"),
     "p.ports.json (its port map, from -o) is the input --ports p.ports.json"),
    (("--vectors", "v.json", "--rotate", "180", "-o", "v.json"),
     "v.json (the transformed program) is the input --vectors v.json"),
    (("--vectors", "v.json", "--rotate", "180", "-o", "v.bgbs"),
     "v.json (its vector file, from -o) is the input --vectors v.json"),
    (("--rotate", "180", "-o", "link.bgbs"), "link.bgbs (the transformed program) is the "
                                             "input PROGRAM p.bgbs"),
])
def test_usage_errors(skewed, tmp_path, monkeypatch, args, message):
    program, _, _ = skewed
    monkeypatch.chdir(tmp_path)
    # Inputs that an output must not overwrite: a vector file and a hard link to PROGRAM.
    with open(f"{conformance_dir()}/random_8x8.json", "rb") as case:
        (tmp_path / "v.json").write_bytes(case.read())
    (tmp_path / "link.bgbs").hardlink_to(program)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    result = invoke("transform", "p.bgbs", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}")
    assert result.stderr.count("\n") == 1
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_port_map_of_another_size(skewed, tmp_path):
    program, _, _ = skewed
    _, small, _ = port_programs.signed_routes()
    portfile = tmp_path / "small.json"
    ports.save(portfile, small)
    result = invoke("transform", program, "--ports", portfile, "--rotate", "180", "-o",
                    tmp_path / "o.bgbs")
    assert result.exit_code == 2
    assert result.stderr == (f"error: {portfile} is for a 4 x 4 grid, {program} is 8 x 8: "
                             "give the port map written with this program\n")


@pytest.mark.parametrize("name, args", [("adder8", ("--rotate", "90", "--retime")),
                                        ("random_8x8", ("--rotate", "180")),
                                        ("identity_we_9lane", ("--move", "0,1", "--size",
                                                               "8x12", "--retime"))])
def test_vectors_written_and_passing(tmp_path, name, args):
    case = load_conformance(name)
    out = tmp_path / "t.bgbs"
    result = invoke("transform", case.bitstream_path, "--vectors",
                    f"{conformance_dir()}/{name}.json", *args, "-o", out)
    assert result.exit_code == 0, result.output
    check = invoke("emulate", out, "--vectors", tmp_path / "t.json")
    assert check.exit_code == 0, check.output
    assert "PASS" in check.stdout
    retimed = "--retime" in args
    assert len(load_case(tmp_path / "t.json").steps) == len(case.steps) + retimed


def test_vectors_of_another_size(tmp_path):
    case = load_conformance("random_2x2")
    result = invoke("transform", case.bitstream_path, "--vectors",
                    f"{conformance_dir()}/random_8x8.json", "--rotate", "180", "-o",
                    tmp_path / "t.bgbs")
    assert result.exit_code == 2
    assert result.stderr.endswith("random_8x8.json: a vector case of a 8 x 8 grid, the "
                                  "program is 2 x 2\n")
    assert not (tmp_path / "t.bgbs").exists()
    # A bad-stream case has no steps at all.
    result = invoke("transform", case.bitstream_path, "--vectors",
                    f"{conformance_dir()}/bad_crc.json", "--rotate", "180", "-o",
                    tmp_path / "t.bgbs")
    assert result.exit_code == 2
    assert result.stderr.endswith("bad_crc.json: a bitgrid-badstream-v1 case (a bitstream that "
                                  "must be rejected) has no steps to transform; give a "
                                  "bitgrid-vectors-v1 file\n")
    assert not (tmp_path / "t.bgbs").exists()
