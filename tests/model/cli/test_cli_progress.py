"""Progress on long commands (issue 39 item 5): every command that can run long takes
--progress, --no-progress and -q; the display is on stderr only, never on stdout; the
self-test names its stages and refuses up front a grid that would not fit the memory."""

import click
import pytest
from click.testing import CliRunner

from bitgrid import bist, bitstream, ports
from bitgrid.cli import main
from bitgrid.cli.progress import Bar, Stages, progress_options
from support import port_programs

#: Every command that can run for minutes on a large grid or design.
LONG_COMMANDS = ("compile", "place", "asm", "eval", "view", "verilog", "bist", "asic",
                 "emulate", "sim", "run")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("command", LONG_COMMANDS)
def test_every_long_command_has_the_same_progress_options(command):
    text = invoke(command, "--help").output
    assert "--progress / --no-progress" in text
    assert "-q, --quiet" in text


def _probe():
    seen = []

    @click.command()
    @progress_options
    def command(show_progress):
        seen.append(show_progress)
    return command, seen


@pytest.mark.parametrize("args, shown", [((), False), (("--progress",), True),
                                         (("--no-progress",), False), (("-q",), False),
                                         (("--progress", "-q"), False),
                                         (("--quiet",), False)])
def test_the_options_resolve_to_one_flag(args, shown):
    """Not a terminal (CliRunner): off unless --progress; -q wins over --progress."""
    command, seen = _probe()
    result = CliRunner().invoke(command, list(args))
    assert result.exit_code == 0, result.output
    assert seen == [shown]


def test_displays_off_do_nothing(capsys):
    bar, stages = Bar(False, desc="x"), Stages(False)
    bar(1, 2)
    stages("plan", 1, 3)
    bar.close()
    stages.close()
    assert capsys.readouterr() == ("", "")


def test_stages_draw_on_stderr_only(capsys):
    with Stages(True, names={"plan": "planning the tests"}) as stages:
        stages("plan", 1, 3)
        stages("run", 5, 10, detail="opt_clean")
    out, err = capsys.readouterr()
    assert out == ""
    assert "planning the tests" in err and "/3 " in err          # tqdm draws at its own pace
    assert "run" in err and "/10 " in err


def test_bist_reports_each_stage_in_order():
    calls = []
    bist.run(4, 4, progress=lambda stage, done, total: calls.append((stage, done, total)))
    stages = [c[0] for c in calls]
    assert stages[:3] == ["plan"] * 3 and stages[-1] == "diagnose"
    run = [c for c in calls if c[0] == "run"]
    total = bist.Plan(4, 4).subcycles
    assert [c[1] for c in run] == list(range(1, total + 1))       # every subcycle, in order
    assert {c[2] for c in run} == {total}
    assert [c[1:] for c in calls[:3]] == [(0, 3), (1, 3), (2, 3)]


def test_bist_refuses_a_grid_past_the_memory_before_any_work():
    with pytest.raises(bist.BistMemoryError) as caught:
        bist.run(64, 64, memory=64 * 64 * bist.BYTES_PER_CELL - 1,
                 progress=lambda *a: pytest.fail("work started"))
    error = caught.value
    assert error.estimate == 64 * 64 * bist.BYTES_PER_CELL
    assert error.largest == 62            # the largest even square under the budget
    assert "at most 62 x 62" in str(error)


def test_bist_cli_refuses_4096_squared_here_in_one_line(tmp_path, monkeypatch):
    """A 4096 x 4096 self-test needs about 55 GiB of paths and states: refused with the
    estimate and what fits, exit 2, nothing written."""
    monkeypatch.setattr("bitgrid.resources.available_memory", lambda: 24 << 30)
    out = tmp_path / "d.json"
    result = invoke("bist", "--size", "4096x4096", "-o", out)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "needs about 54.69 GiB" in result.output and "at most 2712 x 2712" in result.output
    assert not out.exists()


def test_bist_cli_shows_its_stages_when_asked(tmp_path):
    result = invoke("bist", "--size", "4x4", "-o", tmp_path / "d.json", "--progress")
    assert result.exit_code == 0, result.output
    assert "planning the tests" in result.stderr and "self-test" in result.stderr
    assert "diagnosis" in result.stderr
    assert "planning" not in result.stdout
    quiet = invoke("bist", "--size", "4x4", "-o", tmp_path / "d.json", "--progress", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_eval_quiet_keeps_stderr_empty(tmp_path):
    """-q wins over --progress: the rows on stdout, nothing on stderr."""
    config, portmap, _ = port_programs.signed_routes()
    program, portfile = tmp_path / "p.bgbs", tmp_path / "p.ports.json"
    bitstream.save(program, config)
    ports.save(portfile, portmap, config)
    (tmp_path / "in.csv").write_text("a,b\n-8,0xf\n7,3\n")
    result = invoke("eval", program, "--ports", portfile, "--csv", tmp_path / "in.csv",
                    "--progress", "-q")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout == "q,r\n-8,-1\n7,3\n"
    shown = invoke("eval", program, "--ports", portfile, "--csv", tmp_path / "in.csv",
                   "--progress")
    assert "subcycles" in shown.stderr and shown.stdout == result.stdout


def test_run_quiet_silences_the_simulator_build_lines(tmp_path):
    """-q reaches bitgrid.sim: no ``bitgrid sim: building/cached ...`` line, only the run's
    one-line summary (a result, on stderr without vectors)."""
    from bitgrid.bitstream import save
    from bitgrid.config import Configuration
    path = tmp_path / "p.bgbs"
    save(path, Configuration(2, 2))
    result = invoke("sim", path, "--steps", 4, "-q")
    assert result.exit_code == 0, result.output
    assert "bitgrid sim:" not in result.stderr
    assert "icarus: 4 subcycles" in result.stderr
    # the host runtime's sim target too
    result = invoke("run", path, "--steps", 4, "--target", "sim", "-q")
    assert result.exit_code == 0, result.output
    assert "bitgrid sim:" not in result.stderr


def test_eval_quiet_on_the_sim_target(tmp_path):
    """-q reaches the simulator's build lines through bitgrid eval --target sim too."""
    assert invoke("macro", "adder", "bits=2", "-o", tmp_path / "a.bgbs").exit_code == 0
    (tmp_path / "in.csv").write_text("a,b\n1,2\n3,3\n")
    result = invoke("eval", tmp_path / "a.bgbs", "--ports", tmp_path / "a.ports.json", "--csv",
                    tmp_path / "in.csv", "--target", "sim", "-q")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["sum", "3", "6"]
    assert result.stderr == ""
