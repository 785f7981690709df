"""``bitgrid view``: pictures and pages written from the command line, the run checked against
a vector file (exit 1 on a mismatch), and every refusal one line with exit 2."""

import json
import sys

import pytest
from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.cli import main
from support import port_programs
from support.conformance import bad_stream_cases, conformance_dir, load_conformance
from support.view import page_block, svg_ids, svg_texts, svg_tree


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def program(tmp_path):
    config, portmap, _ = port_programs.skewed_routes()
    path, portfile = tmp_path / "routes.bgbs", tmp_path / "routes.ports.json"
    bitstream.save(path, config)
    ports.save(portfile, portmap, config)
    return path, portfile, portmap


def test_svg_with_ports_and_a_run(program, tmp_path):
    path, portfile, portmap = program
    inputs = tmp_path / "in.txt"
    inputs.write_text("# N E S W\n3 0 0 f\n")
    out = tmp_path / "routes.svg"
    result = invoke("view", path, "--ports", portfile, "--inputs", inputs, "--steps", 12,
                    "--frame", 11, "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout == (f"wrote {out}: 8 x 8 grid, {_configured(path)} cells configured, "
                             "signals after 11 of 12 subcycles\n")
    root = svg_tree(out.read_bytes())
    texts = svg_texts(root)
    assert "routes.bgbs" in texts
    for port in portmap.ports:
        for i in range(port.width):
            assert any(f"{port.name}[{i}]" in t.split(" | ") for t in texts), (port.name, i)
    assert "arrow-0-0-W-E" in svg_ids(root, "arrow-")          # bit 0 of a starts east


def _configured(path):
    return int((bitstream.load(path).config.luts != 0).any(axis=2).sum())


def test_html_with_vectors_passes(tmp_path):
    case = f"{conformance_dir()}/adder8.json"
    out = tmp_path / "adder8.html"
    result = invoke("view", f"{conformance_dir()}/adder8.bgbs", "--vectors", case,
                    "--title", "the adder", "-o", out)
    assert result.exit_code == 0, result.output
    steps = len(json.load(open(case))["steps"])
    assert result.stdout == f"PASS: adder8: all {steps} steps match\n"
    assert "wrote" in result.stderr
    data = page_block(out.read_text(encoding="utf-8"))
    assert (data["title"], data["frames"]) == ("the adder", steps + 1)


def test_a_run_that_differs_from_the_vector_file_exits_1(tmp_path):
    document = json.load(open(f"{conformance_dir()}/random_2x2.json"))
    document["bitstream"] = f"{conformance_dir()}/random_2x2.bgbs"
    out = document["steps"][3]["out"]
    out["E"] = hex(int(out["E"], 16) ^ 1)
    vectors = tmp_path / "bad.json"
    vectors.write_text(json.dumps(document))
    picture = tmp_path / "r.png"
    result = invoke("view", f"{conformance_dir()}/random_2x2.bgbs", "--vectors", vectors,
                    "-o", picture)
    assert result.exit_code == 1
    assert result.stdout.startswith("MISMATCH: random_2x2: 1 lane(s) differ, first at step 3\n"
                                    "step 3: E_out lane 0")
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"   # drawn all the same


@pytest.mark.parametrize("args, message", [
    (("-o", "{tmp}/p.jpg"), "{tmp}/p.jpg: give a file name ending in .svg, .png or .html"),
    (("--frame", 1, "-o", "{tmp}/p.svg"),
     "--frame shows the signals of a run: add --vectors, --inputs, --csv or --steps"),
    (("--steps", 4, "--frame", 1, "-o", "{tmp}/p.html"),
     "--frame chooses the subcycle of an .svg or .png picture; the HTML page steps through "
     "all of them"),
    (("--steps", 4, "--frame", 5, "-o", "{tmp}/p.svg"),
     "--frame 5: the run has 4 subcycles; give 0 to 4"),
    (("--ports", "{tmp}/other.ports.json", "-o", "{tmp}/p.svg"),
     "{tmp}/other.ports.json is for a 4 x 4 grid, {tmp}/routes.bgbs is 8 x 8: give the port "
     "map written with this program"),
    (("--ports", "{tmp}/routes.bgbs", "-o", "{tmp}/p.svg"),
     "{tmp}/routes.bgbs looks like a BGBS BitGrid program, not a port map (give it as the "
     "PROGRAM argument)"),
    (("--vectors", "{tmp}/in.txt", "--inputs", "{tmp}/in.txt", "-o", "{tmp}/p.svg"),
     "give either --vectors or --inputs, not both"),
    (("-o", "{tmp}/missing/p.svg"), "{tmp}/missing/p.svg: folder {tmp}/missing does not exist"),
])
def test_refusals(program, tmp_path, args, message):
    path, _, _ = program
    ports.save(tmp_path / "other.ports.json", ports.PortMap(4, 4))
    (tmp_path / "in.txt").write_text("0 0 0 0\n")
    args = [str(a).replace("{tmp}", str(tmp_path)) for a in args]
    result = invoke("view", path, *args)
    assert result.exit_code == 2, result.output
    first = message.replace("{tmp}", str(tmp_path))
    assert result.stderr.startswith(f"error: {first}") and result.stderr.count("\n") == 1
    assert not list(tmp_path.glob("p.*"))


def test_a_missing_program_and_a_missing_matplotlib(program, tmp_path, monkeypatch):
    result = invoke("view", tmp_path / "none.bgbs", "-o", tmp_path / "p.html")
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path}/none.bgbs: No such file or directory\n"
    path, _, _ = program
    monkeypatch.setitem(sys.modules, "matplotlib", None)       # import matplotlib fails
    result = invoke("view", path, "-o", tmp_path / "p.svg")
    assert result.exit_code == 2
    assert result.stderr == ("error: SVG and PNG pictures need matplotlib: pip install "
                             "'bitgrid[view]' (or write .html, which needs nothing more)\n")
    result = invoke("view", path, "-o", tmp_path / "p.html")     # a page needs no matplotlib
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", bad_stream_cases())
def test_a_bitstream_the_spec_refuses_is_not_drawn(name, tmp_path):
    """Every bad-stream case but the one whose header is sound for another grid size."""
    case = load_conformance(name)
    result = invoke("view", case.bitstream_path, "-o", tmp_path / "p.html")
    if case.expect_error == "dimension mismatch":          # a good 4 x 16 program
        assert result.exit_code == 0 and "4 x 16 grid" in result.stdout
        return
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {case.bitstream_path}: bad bitstream: "
                                    f"{case.expect_error}")
    assert not (tmp_path / "p.html").exists()


def test_help_has_an_example():
    result = invoke("view", "--help")
    assert result.exit_code == 0
    assert "bitgrid view out/adder8.bgbs --vectors out/adder8.json -o out/adder8.html" in \
        result.output


def test_a_long_run_shows_progress_when_asked(tmp_path):
    """--progress draws a bar of the run's subcycles on stderr; without it (and no terminal)
    stderr has only the one line the command writes."""
    case = f"{conformance_dir()}/adder8.bgbs"
    out = tmp_path / "long.html"
    result = invoke("view", case, "--steps", "3000", "--progress", "-o", out)
    assert result.exit_code == 0, result.output
    assert "running" in result.stderr and "/3000 " in result.stderr
    assert result.stdout == f"wrote {out}: 2 x 16 grid, 16 cells configured, 3000 subcycles\n"
    quiet = invoke("view", case, "--steps", "3000", "-o", out)
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_record_reports_progress():
    from bitgrid.config import Configuration
    from bitgrid.terms import Edges
    from bitgrid.view import record
    calls = []
    trace = record(Configuration(2, 2), [Edges()] * 2500,
                   progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1024, 2500), (2048, 2500), (2500, 2500)]
    assert trace.subcycles == 2500


def test_csv_rows_by_port_name_run_through_the_pipeline(tmp_path):
    """--csv with --ports: the rows run as bitgrid eval runs them; the page holds the run, and
    the product of each row is on the E lanes of the port map at the subcycle it says."""
    from bitgrid.library import build
    from support.library import input_stream
    from support.view import emulator_frames, unpack_bits
    alone = build("multiplier", bits=3).standalone()
    program, portmap_path = tmp_path / "mul3.bgbs", tmp_path / "mul3.ports.json"
    bitstream.save(program, alone.config)
    ports.save(portmap_path, alone.portmap, alone.config)
    rows = [{"a": 3, "b": 5}, {"a": 7, "b": 7}, {"a": 6, "b": 2}]
    (tmp_path / "in.csv").write_text("a,b\n" + "".join(f"{r['a']},{r['b']}\n" for r in rows))
    out = tmp_path / "mul3.html"
    result = invoke("view", program, "--ports", portmap_path, "--csv", tmp_path / "in.csv",
                    "-o", out)
    assert result.exit_code == 0, result.output
    data = page_block(out.read_text(encoding="utf-8"))
    stream = input_stream(alone.portmap, rows)                 # the test's own timing
    frames = emulator_frames(alone.config, stream)
    assert data["frames"] == len(frames)
    values = unpack_bits(data["values"], frames.size).reshape(frames.shape)
    assert (values == frames).all()
    p, east = alone.portmap["p"], alone.config.width - 1
    assert {b.side.letter for b in p.bits} == {"E"}
    for k, row in enumerate(rows):                 # output E of cell (east, lane), after ...
        bits = [int(frames[k * 2 + alone.portmap.latency + b.skew, 1, b.lane, east])
                for b in p.bits]
        assert sum(v << i for i, v in enumerate(bits)) == row["a"] * row["b"]
    for args, message in [
            (("--csv", tmp_path / "in.csv"), "--csv names ports: give the program's port map"),
            (("--ports", portmap_path, "--csv", tmp_path / "in.csv", "--steps", "0"),
             "--steps 0: nothing to run"),
            (("--ports", portmap_path, "--csv", tmp_path / "in.csv", "--inputs", out),
             "give one of --vectors, --inputs and --csv"),
            (("--ports", portmap_path, "--csv", tmp_path / "nothing.csv"), "nothing.csv")]:
        bad = invoke("view", program, *args, "-o", tmp_path / "bad.svg")
        assert bad.exit_code == 2 and bad.stderr.count("\n") == 1, (args, bad.output)
        assert message in bad.stderr, (args, bad.stderr)
    assert not (tmp_path / "bad.svg").exists()
