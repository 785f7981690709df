"""``--waves`` writes a GTKWave save file beside the dump (issue 10): every signal it names
exists in the VCD (its header parsed here independently of :mod:`bitgrid.sim.waves`), the edge
buses, the stepping signals and the configuration port are grouped, and the marker sits where
``step`` first rises (after the configuration load and readback)."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bitgrid.cli import main
from bitgrid.sim import run_vector_case, waves
from support.conformance import conformance_dir, load_conformance

pytestmark = pytest.mark.icarus


def _vcd(path):
    """``(names, changes)``: full GTKWave names of the header's variables, and per variable id
    its value changes ``[(time, value)]``."""
    text = Path(path).read_text()
    header, _, body = text.partition("$enddefinitions")
    scopes, names, ids = [], set(), {}
    for token in re.findall(r"\$scope \S+ (\S+) \$end|(\$upscope)|\$var \S+ (\d+) (\S+) (\S+)"
                            r"(?: (\[\S+\]))? \$end", header):
        scope, up, width, ident, name, bits = token
        if scope:
            scopes.append(scope)
        elif up:
            scopes.pop()
        else:
            full = ".".join(scopes) + "." + name + bits
            names.add(full)
            ids[full] = ident
    changes, now = {}, 0
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("#"):
            now = int(line[1:])
        elif line[:1] in "01xz" and len(line) > 1:
            changes.setdefault(line[1:], []).append((now, line[0]))
        elif line.startswith("b"):
            value, ident = line[1:].split()
            changes.setdefault(ident, []).append((now, value))
    return names, ids, changes


def _save_file(path):
    lines = Path(path).read_text().splitlines()
    signals = [line for line in lines if line and line[0] not in "@-[*"]
    groups = [line[1:] for i, line in enumerate(lines)
              if line.startswith("-") and lines[i - 1] == "@800200"]
    ends = [line[1:] for i, line in enumerate(lines)
            if line.startswith("-") and lines[i - 1] == "@1000200"]
    star = [line for line in lines if line.startswith("*")]
    return lines, signals, groups, ends, star


def test_save_file_names_signals_of_the_vcd_and_marks_the_first_step(tmp_path):
    dump = tmp_path / "run.vcd"
    result = run_vector_case(load_conformance("random_2x2"), waves=dump, quiet=True)
    assert result.ok, result.summary()
    assert result.save_file == str(tmp_path / "run.gtkw")
    lines, signals, groups, ends, star = _save_file(result.save_file)
    names, ids, changes = _vcd(dump)
    assert signals and set(signals) <= names, set(signals) - names
    assert groups == ends == ["stepping", "edge inputs", "edge outputs", "reset",
                              "configuration port"]
    for port in ("i__n[1:0]", "i__e[1:0]", "o__s[1:0]", "o__w[1:0]", "phase", "step",
                 "subcycle[31:0]", "cfg__valid", "clk"):
        assert f"bitgrid_grid.{port}" in signals
    assert f'[dumpfile] "{dump.resolve()}"' in lines
    # The marker: where `step` first goes high, after the load (not at time 0).
    marker = int(star[0].split()[1])
    assert int(star[0].split()[2]) == marker           # named marker A
    assert f"[timestart] {marker}" in lines
    first_step = next(t for t, v in changes[ids["bitgrid_grid.step"]] if v == "1")
    clock_ps = 10_000
    assert 0 < marker <= first_step < marker + clock_ps
    # Most of the trace is the load and readback: the marker is far from time 0.
    assert marker > 20 * clock_ps
    assert waves.vcd_signals(dump).keys() == names


def test_cli_says_where_the_save_file_is(tmp_path):
    dump = tmp_path / "cli.vcd"
    case = Path(conformance_dir())
    result = CliRunner().invoke(main, ["sim", str(case / "random_2x2.bgbs"), "--vectors",
                                       str(case / "random_2x2.json"), "--waves", str(dump)])
    assert result.exit_code == 0, result.output
    assert f"GTKWave save file: {tmp_path / 'cli.gtkw'}" in result.output
    assert (tmp_path / "cli.gtkw").is_file()


def test_fst_save_file_names_are_derived(tmp_path):
    dump = tmp_path / "x.fst"
    dump.write_bytes(b"")
    path = waves.write_save_file(dump, top="bitgrid_grid", simulator="verilator", marker=500,
                                 widths={"clk": 1, "i__n": 4, "subcycle": 32})
    lines, signals, groups, _, _ = _save_file(path)
    assert signals == ["TOP.bitgrid_grid.clk", "TOP.bitgrid_grid.subcycle[31:0]",
                       "TOP.bitgrid_grid.i__n[3:0]"]
    assert groups == ["stepping", "edge inputs"]
