"""The check stage (bitgrid.compiler.check, issue 23): every compiled program run on the
bit-parallel emulator against the design's netlist before anything is written."""

import json
import random

import pytest
from click.testing import CliRunner

from bitgrid.cli import main
from bitgrid.compiler import CompileError, compile_netlist, designs
from bitgrid.compiler.check import RANDOM_ROWS, check_program, check_rows, simulate_rows
from bitgrid.netlist import InputPort, Lut, Netlist, OutputPort


def _xor_and():
    """y = a ^ b, z = a & b (two 1-bit inputs, two LUTs)."""
    return Netlist("t", {"a": InputPort(("a",)), "b": InputPort(("b",))},
                   {"y": OutputPort(("y",)), "z": OutputPort(("z",))},
                   {"y": Lut(("a", "b"), 0b0110), "z": Lut(("a", "b"), 0b1000)})


def test_rows_exhaustive_random_and_sequential(synthesized):
    assert sorted((r["a"], r["b"]) for r in check_rows(_xor_and())) == \
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    _, mul8s = synthesized("multiplier", n=8, signed=True)
    rows = check_rows(mul8s.netlist)
    assert len(rows) == 1 << 16 and min(r["a"] for r in rows) == -128
    _, add16 = synthesized("adder", n=16)                    # 33 input bits: random
    rows = check_rows(add16.netlist)
    assert len(rows) == RANDOM_ROWS
    assert rows[:2] == [{"a": 0, "b": 0, "cin": 0}, {"a": 65535, "b": 65535, "cin": 1}]
    assert rows == check_rows(add16.netlist)                 # seeded: the same every run
    _, counter = synthesized("counter", n=8)                 # sequential: phases of 1-bit odds
    rows = check_rows(counter.netlist)
    assert len(rows) == RANDOM_ROWS
    # each quarter holds each 1-bit input at one of the odds 1/16, 1/2, 15/16 (the first 1/2)
    for port in ("rst", "en"):
        quarters = [sum(r[port] for r in rows[k:k + 250]) for k in range(0, 1000, 250)]
        assert 90 <= quarters[0] <= 160
        assert all(q <= 40 or 90 <= q <= 160 or q >= 210 for q in quarters), quarters


def test_vectorised_simulation_agrees_with_simulate(synthesized):
    """simulate_rows (numpy, all rows at once) against Netlist.simulate (row by row)."""
    for name, params in (("multiplier", {"n": 5, "signed": True}), ("crc8", {}),
                         ("alu", {})):
        _, synthesis = synthesized(name, **params)
        netlist = synthesis.netlist
        rng = random.Random(5)
        rows = [{n: rng.randrange(-(1 << (len(p.bits) - 1)), 1 << (len(p.bits) - 1))
                 if p.signed else rng.randrange(1 << len(p.bits))
                 for n, p in netlist.inputs.items()} for _ in range(300)]
        assert simulate_rows(netlist, rows) == netlist.simulate(rows)


def test_a_wrong_program_is_a_compiler_bug(synthesized):
    """One LUT bit flipped in the compiled adder: the check names the first differing row,
    its inputs and the port, and says nothing was written."""
    _, synthesis = synthesized("adder", n=8)
    result = compile_netlist(synthesis.netlist, operation=synthesis.operation)
    assert check_program(synthesis.netlist, result.config, result.portmap) == RANDOM_ROWS
    config = result.config.copy()
    tables = list(config[0, 3])
    tables[1] ^= 1 << 0b1000             # the sum LUT (E) of bit 3, at a = 1, b = 0, carry 0
    config[0, 3] = tuple(tables)
    with pytest.raises(CompileError, match=r"compiler bug: the program differs from the design "
                       r"in row \d+ \(a=\d+, b=\d+, cin=\d\): s is \d+, the design gives \d+; "
                       r"nothing was written"):
        check_program(synthesis.netlist, config, result.portmap)


def test_cli_checks_by_default_and_no_check_skips(tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    done = runner.invoke(main, ["compile", "--expr", "y = a ^ b", "--vars", "a:4,b:4",
                                "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "checked on 256 rows" in done.output
    assert json.loads((out / "expr.report.json").read_text())["checked"] == 256
    done = runner.invoke(main, ["compile", "--expr", "y = a ^ b", "--vars", "a:4,b:4",
                                "--no-check", "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "not checked" in done.output
    assert json.loads((out / "expr.report.json").read_text())["checked"] == 0


def test_a_missing_defect_map_is_a_compile_error(tmp_path):
    """The Python API's defects="nofile" is a CompileError naming the file (issue 27), not a
    FileNotFoundError from deep inside."""
    from bitgrid.compiler import CompileError, compile
    with pytest.raises(CompileError, match=f"{tmp_path / 'nofile'}: cannot read the defect "
                                           "map: No such file or directory"):
        compile(expr="y = a ^ b", vars="a:1,b:1", defects=tmp_path / "nofile")
