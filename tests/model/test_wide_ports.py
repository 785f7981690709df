"""Port values of any width (issue 39 item 4, issue 36 item 7): 1, 63, 64, 65, 128 and 256 bits,
signed and unsigned, through compile's check, ``evaluate`` and ``bitgrid eval`` CSVs, ``bitgrid
serve`` / ``bitgrid client`` names and the viewer; the check in windows and pieces against the
check in one piece, and its memory plan. Every expected value is computed here from the
designs' definitions with Python integers (``_model``), never read from the code under test."""

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.bgcf.client import join_ports, join_words, split_words
from bitgrid.bgcf.names import Names
from bitgrid.cli import main
from bitgrid.compiler import CompileError, compile_netlist
from bitgrid.compiler.check import (
    STARTUP_ROWS, STARTUP_RUNS, check_plan, check_program, check_rows, simulate_bits,
    simulate_rows)
from bitgrid.evaluate import evaluate, input_bits, run_fast
from bitgrid.netlist import Dff, InputPort, Lut, Netlist, OutputPort
from bitgrid.values import from_bits, to_bits
from support.bgcf import connected, serving
from support.library import input_stream, run_rows

WIDTHS = (1, 63, 64, 65, 128, 256)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


# The designs and their models ------------------------------------------------------------------

def _wrap(value, width, signed):
    """``value`` modulo ``2 ** width``, read as two's complement if ``signed``."""
    value %= 1 << width
    return value - (1 << width) if signed and value >> (width - 1) else value


def _model(kind, width, signed, a):
    """What design ``kind`` gives for input ``a``: ``pass`` y = a; ``rotxor`` y = a ^ (a
    rotated right by one bit), as the Verilog ``a ^ {a[0], a[W-1:1]}``."""
    u = a % (1 << width)
    if kind == "pass":
        return _wrap(u, width, signed)
    return _wrap(u ^ ((u >> 1) | ((u & 1) << (width - 1))), width, signed)


def _netlist(kind, width, signed, *, wrong=None):
    """The LUT netlist of ``kind`` (see :func:`_model`); ``wrong``: the bit ``b`` whose LUT of
    ``rotxor`` also reads bits ``b + 2`` and ``b + 3`` and is wrong only when bits ``b`` to
    ``b + 3`` are 1, 0, 1, 0 (address 0b0101)."""
    a = tuple(f"a{i}" for i in range(width))
    if kind == "pass":
        return Netlist(f"pass{width}", {"a": InputPort(a, signed)}, {"y": OutputPort(a, signed)})
    luts = {f"y{i}": Lut((a[i], a[(i + 1) % width]), 0b0110) for i in range(width)}
    if wrong is not None:
        b = wrong
        xor = sum(1 << address for address in range(16) if (address ^ address >> 1) & 1)
        luts[f"y{b}"] = Lut((a[b], a[b + 1], a[b + 2], a[b + 3]), xor ^ (1 << 0b0101))
    return Netlist(f"rotxor{width}", {"a": InputPort(a, signed)},
                   {"y": OutputPort(tuple(luts), signed)}, luts)


#: (kind, width, signed) compiled once per session.
DESIGNS = ([("pass", w, s) for w in WIDTHS for s in (False, True)]
           + [("rotxor", w, w in (64, 128)) for w in WIDTHS if w > 1])


@pytest.fixture(scope="module")
def compiled():
    cache = {}

    def get(kind, width, signed):
        key = (kind, width, signed)
        if key not in cache:
            netlist = _netlist(kind, width, signed)
            cache[key] = netlist, compile_netlist(netlist)
        return cache[key]
    return get


def _extremes(width, signed, count=20, seed=0):
    """The corners of a port's range and random values of it."""
    low, high = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    rng = random.Random(seed + width)
    corners = [low, high, 0, -1 if signed else 1, high - 1 if width > 1 else low]
    return corners + [rng.randint(low, high) for _ in range(count)]


# Values as bit arrays ---------------------------------------------------------------------------

@pytest.mark.parametrize("width", WIDTHS)
def test_bits_of_values_of_any_width(width):
    for signed in (False, True):
        values = _extremes(width, signed)
        bits = to_bits(values, width)
        assert bits.shape == (len(values), width) and bits.dtype == np.uint8
        for row, value in zip(bits.tolist(), values):
            assert row == [(value % (1 << width)) >> i & 1 for i in range(width)]
        assert from_bits(bits, signed=signed) == values
    assert from_bits(np.ones((1, width), dtype=bool)) == [(1 << width) - 1]
    assert from_bits(np.ones((1, width), dtype=np.uint8), signed=True) == [-1]


# Compile's check and evaluate -------------------------------------------------------------------

@pytest.mark.parametrize("kind, width, signed", DESIGNS,
                         ids=[f"{k}{w}{'s' if s else 'u'}" for k, w, s in DESIGNS])
def test_compile_check_and_evaluate(compiled, kind, width, signed):
    netlist, result = compiled(kind, width, signed)
    port = result.portmap["a"]
    assert (port.width, port.signed) == (width, signed)
    # combinational: every combination of one bit, else 1,000 random rows
    assert check_program(netlist, result.config, result.portmap) == (2 if width == 1 else 1000)
    rows = [{"a": a} for a in _extremes(width, signed)]
    expected = [{"y": _model(kind, width, signed, r["a"])} for r in rows]
    assert evaluate(result.config, result.portmap, rows, target="fast") == expected
    assert evaluate(result.config, result.portmap, rows[:4], target="emu") == expected[:4]
    # the rows driven by the tests' own timing model on the reference emulator
    assert run_rows(result.config, result.portmap, rows[:4]) == expected[:4]
    assert simulate_rows(netlist, rows) == expected


def test_wide_verilog_compiles_and_evaluates(tmp_path):
    """The two designs of the issues: a 64-bit rotate-xor (``OverflowError`` before) and a
    shift into bit 63 (a "compiler bug" on bit 63 before), compiled and run by CSV."""
    (tmp_path / "wide.v").write_text("module wide(input [63:0] a, output [63:0] y);\n"
                                     "  assign y = a ^ {a[0], a[63:1]};\nendmodule\n")
    (tmp_path / "w.v").write_text("module w(input [3:0] s, output [63:0] y);\n"
                                  "  assign y = {60'b0, s} << 60;\nendmodule\n")
    done = invoke("compile", tmp_path / "wide.v", "--top", "wide", "-o", tmp_path / "out")
    assert done.exit_code == 0, done.output
    assert "checked on 1000 rows" in done.output
    values = [0, 1, (1 << 64) - 1, 1 << 63, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210]
    csv = tmp_path / "in.csv"
    csv.write_text("a\n0\n1\n0xffff_ffff_ffff_ffff\n0x8000_0000_0000_0000\n"
                   "0x0123_4567_89ab_cdef\n18364758544493064720\n")
    for target in ("fast", "emu"):
        out = invoke("eval", tmp_path / "out/wide.bgbs", "--ports",
                     tmp_path / "out/wide.ports.json", "--csv", csv, "--target", target)
        assert out.exit_code == 0, out.output
        assert out.stdout.split() == ["y"] + [str(_model("rotxor", 64, False, a))
                                              for a in values]
    done = invoke("compile", tmp_path / "w.v", "--top", "w", "-o", tmp_path / "out")
    assert done.exit_code == 0, done.output
    assert "checked on 16 rows" in done.output
    csv.write_text("s\n" + "".join(f"{s}\n" for s in range(16)))
    out = invoke("eval", tmp_path / "out/w.bgbs", "--ports", tmp_path / "out/w.ports.json",
                 "--csv", csv, "--target", "fast")
    assert out.exit_code == 0, out.output
    assert out.stdout.split() == ["y"] + [str((s << 60) % (1 << 64)) for s in range(16)]


@pytest.fixture
def saved(compiled, tmp_path):
    """``saved(kind, width, signed) -> (program path, port map path)``."""
    def save(kind, width, signed):
        _, result = compiled(kind, width, signed)
        program = tmp_path / f"{kind}{width}{'s' * signed}.bgbs"
        portfile = program.with_suffix(".ports.json")
        bitstream.save(program, result.config)
        ports.save(portfile, result.portmap, result.config)
        return program, portfile
    return save


def test_csv_values_past_64_bits(saved, tmp_path):
    """65-bit ports by CSV, hex with separators and negative hex; values that do not fit are
    refused naming the line and column, values of 68 bits taken by a 128-bit port."""
    csv = tmp_path / "in.csv"
    program, portfile = saved("pass", 65, False)
    csv.write_text("a\n0x1_ffff_ffff_ffff_ffff\n0x1_0000_0000_0000_0000\n0xffff_ffff_ffff_ffff\n"
                   "36893488147419103231\n0\n")
    out = invoke("eval", program, "--ports", portfile, "--csv", csv, "--target", "fast")
    assert out.exit_code == 0, out.output
    assert out.stdout.split() == ["y", str(2**65 - 1), str(2**64), str(2**64 - 1),
                                  str(2**65 - 1), "0"]
    csv.write_text("a\n1\n0xffff_ffff_ffff_ffff_f\n")
    out = invoke("eval", program, "--ports", portfile, "--csv", csv)
    assert out.exit_code == 2 and out.stderr.count("\n") == 1
    assert f"{csv}:3: column 1 (a): value {2**68 - 1} does not fit port a (65 bits, " \
           f"unsigned: 0..{2**65 - 1})" in out.stderr
    program, portfile = saved("pass", 65, True)
    csv.write_text("a\n-0x1_0000_0000_0000_0000\n0xffff_ffff_ffff_ffff\n-1\n-0x10\n")
    out = invoke("eval", program, "--ports", portfile, "--csv", csv, "--target", "fast")
    assert out.exit_code == 0, out.output
    assert out.stdout.split() == ["y", str(-2**64), str(2**64 - 1), "-1", "-16"]
    csv.write_text("a\n0x1_0000_0000_0000_0000\n")
    out = invoke("eval", program, "--ports", portfile, "--csv", csv)
    assert out.exit_code == 2 and "(65 bits, signed: " in out.stderr
    program, portfile = saved("rotxor", 128, True)
    csv.write_text("a\n0xffff_ffff_ffff_ffff_f\n-0x8000_0000_0000_0000_0000_0000_0000_0000\n")
    out = invoke("eval", program, "--ports", portfile, "--csv", csv, "--target", "fast")
    assert out.exit_code == 0, out.output
    assert out.stdout.split() == ["y"] + [str(_model("rotxor", 128, True, a))
                                          for a in (2**68 - 1, -2**127)]


# The check in windows and pieces, and its memory -----------------------------------------------

def test_windows_give_the_same_bits(compiled):
    netlist, result = compiled("rotxor", 65, False)
    rows = check_rows(netlist)
    bits = input_bits(result.portmap, rows)
    whole = run_fast(result.config, result.portmap, bits, len(rows))
    assert from_bits(whole["y"]) == [_model("rotxor", 65, False, r["a"]) for r in rows]
    for window in (1, 2, 7, 131):
        pieces = run_fast(result.config, result.portmap, bits, len(rows), window=window)
        assert (pieces["y"] == whole["y"]).all(), window


def test_a_wrong_program_gives_the_same_verdict_in_pieces(compiled):
    """A program of another netlist, wrong in one LUT only when bits 37 to 40 are 1, 0, 1, 0:
    the check names the same first row in one piece and in many small ones."""
    netlist, _ = compiled("rotxor", 65, False)
    wrong = compile_netlist(_netlist("rotxor", 65, False, wrong=37))
    rows = check_rows(netlist)
    first = next(k for k, r in enumerate(rows) if (r["a"] >> 37) & 0b1111 == 0b0101)
    assert first > 2                    # not one of the corners: found in a later piece
    a = rows[first]["a"]
    good = _model("rotxor", 65, False, a)
    message = (f"compiler bug: the program differs from the design in row {first} (a={a}): y "
               f"is {good ^ (1 << 37)}, the design gives {good}; nothing was written")
    for options in ({}, {"piece": 1}, {"piece": 3, "window": 5}, {"window": 64}):
        with pytest.raises(CompileError) as error:
            check_program(netlist, wrong.config, wrong.portmap, **options)
        assert str(error.value).startswith(message), options
    # pieces and windows of any size on the right program: the same pass
    _, right = compiled("rotxor", 65, False)
    assert check_program(netlist, right.config, right.portmap, piece=7, window=3) == 1000


def test_ports_that_differ_are_a_compiler_bug(compiled):
    netlist, result = compiled("pass", 65, False)
    signed = result.portmap.replace(ports=[result.portmap["a"],
                                           result.portmap["y"]._replace(signed=True)])
    with pytest.raises(CompileError, match=r"compiler bug: output port y of the design \(65 "
                                           r"bits\) is 65 bits signed in the port map"):
        check_program(netlist, result.config, signed)


def _register(width, signed):
    """y = a one design cycle late; bit i starts at i % 2."""
    a = tuple(f"a{i}" for i in range(width))
    dffs = {f"q{i}": Dff(a[i], i % 2) for i in range(width)}
    return Netlist(f"reg{width}", {"a": InputPort(a, signed)},
                   {"y": OutputPort(tuple(dffs), signed)}, {}, dffs)


def test_a_wide_sequential_design():
    """A 65-bit signed register: the reference from bit arrays against its model, and the
    compiled program checked in one run and in windows."""
    width, netlist = 65, _register(65, True)
    initial = _wrap(sum(1 << i for i in range(1, width, 2)), width, True)
    values = _extremes(width, True, count=6)
    got = simulate_bits(netlist, {"a": to_bits(values, width)}, len(values))
    assert from_bits(got["y"], signed=True) == [initial] + values[:-1]
    result = compile_netlist(netlist)
    assert result.portmap.period == 2               # retimed: the register is port timing
    assert result.report["registers"]["kind"] == "retimed"
    # 1,000 random rows and the runs from reset with the 1-bit inputs held (none here)
    rows = 1000 + STARTUP_RUNS * STARTUP_ROWS
    assert check_program(netlist, result.config, result.portmap) == rows
    assert check_program(netlist, result.config, result.portmap, window=4093) == rows


def test_the_plan_fits_its_memory(compiled):
    netlist, result = compiled("rotxor", 128, True)
    config, portmap = result.config, result.portmap
    roomy = check_plan(netlist, config, portmap, 1000, memory=16 << 30)
    assert (roomy.rows, roomy.planned, roomy.piece) == (1000, 1000, 1000)
    assert roomy.estimate <= roomy.budget == 8 << 30
    # less memory: smaller windows, every plan within its budget, the same verdict
    windows = []
    for share in (1.0, 0.8, 0.65):
        memory = int(2 * roomy.estimate * share)
        plan = check_plan(netlist, config, portmap, 1000, memory=memory)
        assert plan.estimate <= plan.budget == memory // 2
        windows.append(plan.window)
        assert check_program(netlist, config, portmap, memory=memory) == plan.rows == 1000
    assert windows == sorted(windows, reverse=True) and windows[-1] < windows[0]
    # not even the emulator fits: refused up front with the estimate
    with pytest.raises(CompileError, match=r"the check after compile needs about [\d.]+ MiB "
                                           r"\(the emulator of the \d+ x \d+ grid and its "
                                           r"rows\), more than the 0.03 MiB it may use \(50% of "
                                           r"the memory available now\); free some memory, or "
                                           r"skip the check with --no-check"):
        check_program(netlist, config, portmap, memory=1 << 16)


def test_rows_that_do_not_fit_are_sampled_and_said():
    """Memory for the emulator but not for every row: fewer rows (a seeded sample) and a
    note; found by halving the memory until the plan cuts rows."""
    netlist = _netlist("pass", 256, False)
    result = compile_netlist(netlist)
    high, low = 1 << 32, 0
    while high - low > 1024:            # the least memory that still plans every row
        middle = (high + low) // 2
        try:
            full = check_plan(netlist, result.config, result.portmap, 1000,
                              memory=middle).rows == 1000
        except CompileError:
            full = False
        high, low = (middle, low) if full else (high, middle)
    memory = low
    while True:                         # a little less, but enough for some rows
        plan = check_plan(netlist, result.config, result.portmap, 1000, memory=memory)
        if plan.rows < 1000:
            break
        memory -= 1024
    assert 0 < plan.rows < plan.planned == 1000 and plan.estimate <= plan.budget
    notes = []
    assert check_program(netlist, result.config, result.portmap, memory=memory,
                         notes=notes) == plan.rows
    assert notes == [f"the check ran on {plan.rows} of its 1000 rows: the others would not fit "
                     f"the {plan.budget / (1 << 20):.2f} MiB it may use"]


# Serve and client ---------------------------------------------------------------------------

def test_words_of_whole_values():
    assert split_words({"a": 5}) == [("a", 5)]
    value = (3 << 128) | (7 << 64) | 9
    assert split_words({"a": value}) == [("a", 9), ("a.1", 7), ("a.2", 3)]
    widths = {"a": 64, "a.1": 64, "a.2": 2, "b": 4}
    assert split_words({"a": 9, "b": 1}, widths) == [("a", 9), ("a.1", 0), ("a.2", 0),
                                                     ("b", 1)]
    with pytest.raises(ValueError, match="has bits beyond its 130 lanes"):
        split_words({"a": 1 << 130}, widths)
    # a name of one word: past 64 bits refused here, within them the server's to refuse
    with pytest.raises(ValueError, match="b=0x400000000000000000 has bits beyond its 4 lanes"):
        split_words({"b": 1 << 70}, widths)
    assert split_words({"b": 0x100}, widths) == [("b", 0x100)]
    with pytest.raises(ValueError, match="unsigned"):
        split_words({"a": -1}, widths)
    assert join_words({"N": 1, "a.2": 3, "a": 9, "a.1": 7, "x.1": 4}) == \
        {"N": 1, "a": value, "x.1": 4}


def test_a_130_bit_port_through_the_server():
    netlist = _netlist("pass", 130, True)
    result = compile_netlist(netlist)
    config, portmap = result.config, result.portmap.for_program(result.config)
    names = Names(config.width, config.height, portmap)
    assert [len(names.inputs[n]) for n in ("a", "a.1", "a.2")] == [64, 64, 2]
    assert [len(names.outputs[n]) for n in ("y", "y.1", "y.2")] == [64, 64, 2]
    value = 0x3_0123_4567_89AB_CDEF_FEDC_BA98_7654_3210
    with serving("fast", config.width, config.height, program=config, portmap=portmap) \
            as server, connected(server) as client:
        listed = join_ports(client.ports())
        assert ("a", "in", 130) in listed and ("y", "out", 130) in listed
        client.set_values({"a": value})
        client.step(portmap.depth + portmap.period)           # held: every bit settled
        assert client.values()["y"] == value
        client.set_values({"a": 5})                           # the upper words cleared too
        client.step(portmap.depth + portmap.period)
        out = client.outputs()
        assert (out["y"], out["y.1"], out["y.2"]) == (5, 0, 0)
        with pytest.raises(ValueError, match="has bits beyond its 130 lanes"):
            client.set_values({"a": 1 << 130})
        port = str(server.port)
        done = CliRunner().invoke(main, ["client", "--port", port, "--set", f"a={value:#x}",
                                         "--step", str(portmap.depth + portmap.period),
                                         "--get", "--ports", "--json"])
        assert done.exit_code == 0, done.output
        lines = [json.loads(line) for line in done.output.splitlines()]
        assert lines[0]["outputs"]["y"] == value
        assert {"name": "a", "direction": "in", "width": 130} in lines[1]["ports"]
        done = CliRunner().invoke(main, ["client", "--port", port, "--set",
                                         f"a={1 << 130:#x}"])
        assert done.exit_code == 2 and "has bits beyond its 130 lanes" in done.output


# The viewer ------------------------------------------------------------------------------------

def test_viewer_runs_csv_rows_of_65_bits(saved, compiled, tmp_path):
    from support.view import emulator_frames, page_block, unpack_bits
    program, portfile = saved("rotxor", 65, False)
    _, result = compiled("rotxor", 65, False)
    portmap, config = result.portmap, result.config
    rows = [{"a": a} for a in (2**65 - 1, 2**64 + 5, 0x1_2345_6789_abcd_ef01)]
    (tmp_path / "in.csv").write_text("a\n" + "".join(f"{r['a']:#x}\n" for r in rows))
    out = tmp_path / "wide.html"
    done = invoke("view", program, "--ports", portfile, "--csv", tmp_path / "in.csv", "-o", out)
    assert done.exit_code == 0, done.output
    data = page_block(out.read_text(encoding="utf-8"))
    frames = emulator_frames(config, input_stream(portmap, rows))   # the tests' own timing
    assert data["frames"] == len(frames)
    assert (unpack_bits(data["values"], frames.size).reshape(frames.shape) == frames).all()
    assert [len(p["bits"]) for p in data["ports"]] == [65, 65]
    y = portmap["y"]
    for k, row in enumerate(rows):          # each y bit on its edge cell when it is read
        bits = []
        for b in y.bits:
            frame = k * portmap.period + portmap.latency + b.skew
            x, yy = {"N": (b.lane, 0), "S": (b.lane, config.height - 1), "W": (0, b.lane),
                     "E": (config.width - 1, b.lane)}[b.side.letter]
            bits.append(int(frames[frame, int(b.side), yy, x]))
        assert sum(v << i for i, v in enumerate(bits)) == _model("rotxor", 65, False, row["a"])
