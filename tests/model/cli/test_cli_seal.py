"""Sealed port maps (issue 39, item 1; docs/ports.md, "A port map belongs to one program").

Every tool that writes a port map seals it over the program and every field that changes a
value; every command that reads one refuses a broken seal with exit 2 and one line. A map
without a seal (written by hand) is checked against the program's paths instead: refused
where the paths show it reads another row or an input reaches nothing, accepted with one
note otherwise. The break-it cases of the issue are here: lanes swapped, the latency moved,
a sign flipped, a port's bits reordered.

The 8-bit adder block (``bitgrid macro adder bits=8``) is the issue's ``add8``: a 2 x 8
program whose bits carry skews, so every edit of a lane or skew changes a value.
"""

import copy
import json

import pytest
from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.cli import main
from bitgrid.config import Configuration
from bitgrid.ports import PortMap, SealError

ROWS = [(1, 2), (200, 100), (3, 4), (255, 255), (0, 0), (128, 127)]
SUMS = "sum\n" + "".join(f"{a + b}\n" for a, b in ROWS)
SEAL_ERROR = ("was changed after it was written (its seal does not match its lanes, skews, "
              "signs, latency or period)")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def add8(tmp_path):
    """``(program, port map document, csv)``: the 8-bit adder block alone on a grid."""
    program = tmp_path / "add8.bgbs"
    result = invoke("macro", "adder", "bits=8", "-o", program)
    assert result.exit_code == 0, result.output
    names = [p.name for p in ports.load(tmp_path / "add8.ports.json").ports]
    assert names == ["a", "b", "sum"]
    csv = tmp_path / "in.csv"
    csv.write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in ROWS))
    return program, json.loads((tmp_path / "add8.ports.json").read_text()), csv


def _eval(tmp_path, program, document, csv, name="edited"):
    path = tmp_path / f"{name}.ports.json"
    path.write_text(json.dumps(document))
    return path, invoke("eval", program, "--ports", path, "--csv", csv)


def _swap_lanes(document):
    bits = document["ports"][0]["bits"]
    bits[0], bits[1] = bits[1], bits[0]


def _move_latency(document):
    document["latency"] += 2


def _flip_sign(document):
    document["ports"][2]["signed"] = True


def _reorder_bits(document):
    document["ports"][2]["bits"].reverse()


def _swap_lane_numbers(document):
    """The lanes of a[0] and a[1] swapped, each bit's skew left where it was."""
    bits = document["ports"][0]["bits"]
    bits[0]["lane"], bits[1]["lane"] = bits[1]["lane"], bits[0]["lane"]


EDITS = {"lanes swapped": _swap_lanes, "latency moved": _move_latency,
         "sign flipped": _flip_sign, "bits reordered": _reorder_bits,
         "lane numbers swapped": _swap_lane_numbers}


def test_the_written_map_is_sealed_and_right(add8, tmp_path):
    program, document, csv = add8
    assert document["seal"].startswith("sha256:") and len(document["seal"]) == 71
    config = bitstream.load(program).config
    assert document["seal"] == PortMap.from_json(document).seal_for(config.digest())
    path, result = _eval(tmp_path, program, document, csv)
    assert (result.exit_code, result.stdout, result.stderr) == (0, SUMS, "")


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_sealed_map_is_refused(add8, tmp_path, edit):
    """Each edit gives wrong rows (shown with the seal removed below); with the seal, eval
    refuses it with one line and prints no row."""
    program, document, csv = add8
    edited = copy.deepcopy(document)
    EDITS[edit](edited)
    path, result = _eval(tmp_path, program, edited, csv)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (f"error: {path} {SEAL_ERROR}: use the port map written with "
                             f"{program}, or write both again with the tool that made them "
                             "(names may be changed freely)\n")


@pytest.mark.parametrize("command", ("view", "transform", "place", "disasm", "eval"))
def test_every_reader_checks_the_seal(add8, tmp_path, command):
    program, document, csv = add8
    edited = copy.deepcopy(document)
    _move_latency(edited)
    path = tmp_path / "edited.ports.json"
    path.write_text(json.dumps(edited))
    (tmp_path / "none.defects.json").write_text(json.dumps(
        {"format": "bitgrid-defects-v1", "width": 2, "height": 8, "defects": []}))
    args = {"view": ("view", program, "--ports", path, "-o", tmp_path / "v.svg"),
            "transform": ("transform", program, "--ports", path, "--rotate", "180", "-o",
                          tmp_path / "t.bgbs"),
            "place": ("place", program, "--ports", path, "--defects",
                      tmp_path / "none.defects.json", "-o", tmp_path / "p.bgbs"),
            "disasm": ("disasm", program, "--ports", path, "-o", tmp_path / "d.bga"),
            "eval": ("eval", program, "--ports", path, "--csv", csv)}[command]
    before = sorted(p.name for p in tmp_path.iterdir())
    result = invoke(*args)
    assert result.exit_code == 2
    assert SEAL_ERROR in result.stderr and result.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_names_and_port_order_are_free(add8, tmp_path):
    """Renaming ports (even swapping two names) and moving them in the file keep the seal."""
    program, document, csv = add8
    edited = copy.deepcopy(document)
    edited["ports"][0]["name"], edited["ports"][1]["name"] = "y", "x"
    edited["ports"][2]["name"] = "total"
    edited["ports"].reverse()
    csv.write_text("x,y\n" + "".join(f"{b},{a}\n" for a, b in ROWS))
    path, result = _eval(tmp_path, program, edited, csv)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == SUMS.replace("sum\n", "total\n")


def test_a_seal_without_a_program_digest_is_refused(add8, tmp_path):
    program, document, csv = add8
    del document["program"]
    path, result = _eval(tmp_path, program, document, csv)
    assert result.exit_code == 2
    assert result.stderr == (f"error: {path}: a seal without the program's digest: the map "
                             "was changed after it was written; use the port map written "
                             "with the program\n")


def test_seal_is_of_the_program_too():
    """The same port map sealed for two programs has two seals; a seal that is not a digest
    is refused when the file is read."""
    portmap = PortMap(4, 2, [{"name": "a", "direction": "in",
                              "bits": [{"side": "W", "lane": 0}]}])
    one = portmap.for_program(Configuration(4, 2))
    other = Configuration(4, 2)
    other.luts[0, 0, 1] = 0xAAAA
    two = portmap.for_program(other)
    assert one.seal != two.seal and one.program != two.program
    assert one.check_program(Configuration(4, 2)) is one
    with pytest.raises(SealError):
        PortMap.from_json(dict(one.to_json(), latency=2)).check_program(Configuration(4, 2))
    with pytest.raises(ports.PortMapError, match="Seal: a digest is 'sha256:'"):
        PortMap.from_json(dict(one.to_json(), seal="sha256:00"))


def test_replace_drops_the_seal():
    portmap = PortMap(4, 2, ()).for_program(Configuration(4, 2))
    assert portmap.sealed
    assert not portmap.replace(latency=2).sealed


# Maps without a seal: checked against the program's paths ---------------------------------

def _unsealed(document):
    document = copy.deepcopy(document)
    del document["seal"]
    return document


def test_an_unsealed_map_that_is_right_runs_with_a_note(add8, tmp_path):
    program, document, csv = add8
    path, result = _eval(tmp_path, program, _unsealed(document), csv)
    assert result.exit_code == 0
    assert result.stdout == SUMS
    assert result.stderr.startswith(f"note: {path} carries no seal")
    assert result.stderr.count("\n") == 1


def test_an_unsealed_latency_outside_its_window_is_refused(add8, tmp_path):
    """add8's latency is 4 with period 2: 4 and 5 read each row in its own window, 6 reads
    the next row's sum (the issue's "every row shows the next row's sum")."""
    program, document, csv = add8
    for latency, status in ((5, 0), (6, 2), (8, 2)):
        edited = _unsealed(document)
        edited["latency"] = latency
        path, result = _eval(tmp_path, program, edited, csv)
        assert result.exit_code == status, (latency, result.stderr)
        if status == 0:
            assert result.stdout == SUMS
        else:
            assert result.stdout == ""
            assert result.stderr.startswith(f"error: {path} (not sealed: written by hand or "
                                            f"by an older bitgrid) does not fit {program}: "
                                            f"latency {latency} reads sum[")
            assert "too late" in result.stderr and result.stderr.count("\n") == 1


def test_an_unsealed_input_on_a_lane_nothing_reads_is_refused(add8, tmp_path):
    """a[7] moved to a W lane the adder's cells do not read: the real a[7] lane would be 0."""
    program, document, csv = add8
    edited = _unsealed(document)
    config = bitstream.load(program).config
    used = {(b["side"], b["lane"]) for p in edited["ports"] if p["direction"] == "in"
            for b in p["bits"]}
    free = [lane for lane in range(config.height) if ("W", lane) not in used]
    if not free:    # every W lane is taken: use a N lane of the left column
        edited["ports"][0]["bits"][7] = {"side": "N", "lane": 0, "skew": 9}
    else:
        edited["ports"][0]["bits"][7]["lane"] = free[0]
    path, result = _eval(tmp_path, program, edited, csv)
    assert result.exit_code == 2, result.stdout
    assert "input a[7] on " in result.stderr
    assert "reaches no output port bit through the program's cells" in result.stderr


def test_an_unsealed_skew_that_reads_an_earlier_row_is_named(add8, tmp_path):
    """Lanes of a[0] and a[1] swapped with their skews left: the paths cannot tell this from
    a register, but the note names the bit that is read a row early (never silent)."""
    program, document, csv = add8
    edited = _unsealed(document)
    _swap_lane_numbers(edited)
    path, result = _eval(tmp_path, program, edited, csv)
    assert result.exit_code == 0
    assert result.stdout != SUMS                    # the edit really gives wrong rows
    assert "reads a[1] 1 row before the row it reads other inputs in" in result.stderr


@pytest.mark.parametrize("edit", ["lanes swapped", "sign flipped", "bits reordered"])
def test_unsealed_edits_the_paths_cannot_show_are_noted(add8, tmp_path, edit):
    """Which bit is which and the signs are not in the paths: such an unsealed map runs
    (its rows differ from the sums: the edit is real) with the note saying so."""
    program, document, csv = add8
    edited = _unsealed(document)
    EDITS[edit](edited)
    path, result = _eval(tmp_path, program, edited, csv)
    if result.exit_code == 0:
        assert result.stdout != SUMS
    assert "which bit is which, signs and lanes of equal timing cannot be checked" in \
        result.stderr


def test_every_writer_seals(tmp_path):
    """asm, compile, macro, transform and place all write a seal that matches."""
    source = tmp_path / "xor.bga"
    source.write_text("grid 4 x 2\nin a N 0\nin b W 0\nout y E 0\n"
                      "cell 0,0: E = n ^ w\ncell 1..3,0: E = w\n")
    (tmp_path / "none.defects.json").write_text(json.dumps(
        {"format": "bitgrid-defects-v1", "width": 4, "height": 2, "defects": []}))
    runs = {
        "asm": (("asm", source, "-o", tmp_path / "xor.bgbs"), tmp_path / "xor"),
        "transform": (("transform", tmp_path / "xor.bgbs", "--ports",
                       tmp_path / "xor.ports.json", "--rotate", "90", "--retime", "-o",
                       tmp_path / "t.bgbs"), tmp_path / "t"),
        "place": (("place", tmp_path / "xor.bgbs", "--ports", tmp_path / "xor.ports.json",
                   "--defects", tmp_path / "none.defects.json", "-o", tmp_path / "p.bgbs"),
                  tmp_path / "p"),
        "macro": (("macro", "adder", "bits=2", "-o", tmp_path / "m.bgbs"), tmp_path / "m"),
        "compile": (("compile", "--expr", "y = a ^ b", "--vars", "a:1,b:1", "-o",
                     tmp_path / "c"), tmp_path / "c" / "expr"),
    }
    for name, (args, stem) in runs.items():
        result = invoke(*args)
        assert result.exit_code == 0, (name, result.output)
        document = json.loads(stem.with_suffix(".ports.json").read_text())
        config = bitstream.load(stem.with_suffix(".bgbs")).config
        assert document["seal"] == PortMap.from_json(document).seal_for(config.digest()), name
