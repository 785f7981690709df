"""The one place where errors become exit statuses (bitgrid.cli.errors): bad input and library
errors exit 2 with one line, a command's own wording, Ctrl-C 130, and an unexpected exception
(a bug) exit 2 with one ``internal error`` line that says where to report it, never a
traceback."""

import os

import click
import pytest
from click.testing import CliRunner

from bitgrid.cli import main
from bitgrid.cli.errors import REPORT_TO, Group, explain, message
from support.conformance import load_conformance


def invoke(*args, command=main):
    return CliRunner().invoke(command, [str(a) for a in args], catch_exceptions=False)


def _bitstream():
    return load_conformance("random_2x2").bitstream_path


def test_unexpected_exception_is_one_line_internal_error(monkeypatch):
    class Broken:
        def __init__(self, config):
            raise RuntimeError("boom\n  on two lines")

    monkeypatch.setattr("bitgrid.cli.run.Emulator", Broken)
    result = invoke("emulate", _bitstream(), "--steps", "1")
    assert result.exit_code == 2
    assert result.output == (f"error: internal error: RuntimeError: boom on two lines; this is "
                             f"a bug in bitgrid, please report it to {REPORT_TO}\n")


def test_ctrl_c_exits_130(monkeypatch):
    class Interrupted:
        def __init__(self, config):
            raise KeyboardInterrupt

    monkeypatch.setattr("bitgrid.cli.run.Emulator", Interrupted)
    result = invoke("emulate", _bitstream(), "--steps", "1")
    assert result.exit_code == 130
    assert result.output == "interrupted\n"


def test_command_wording_of_a_library_error(tmp_path):
    port = tmp_path / "no-such-port"
    result = invoke("run", _bitstream(), "--steps", "1", "--target", f"serial:{port}")
    assert result.exit_code == 2
    assert result.output.startswith(f"error: no device: cannot open serial port {port}: ")
    assert result.output.count("\n") == 1
    result = invoke("run", _bitstream(), "--steps", "1", "--target", "bogus")
    assert result.exit_code == 2
    assert result.output.startswith("error: unknown target 'bogus'")


def test_unreadable_file_names_the_file(tmp_path):
    missing = tmp_path / "missing.txt"
    result = invoke("emulate", _bitstream(), "--inputs", missing)
    assert result.exit_code == 2
    assert result.output == f"error: {missing}: No such file or directory\n"


def test_message_defaults_and_templates():
    error = FileNotFoundError(2, "No such file or directory", "x.bgbs")
    assert message(error) == "x.bgbs: No such file or directory"
    assert message(ValueError("bad size")) == "bad size"
    assert message(ValueError("bad size"), {"value": "the size: {error}"}) == "the size: bad size"
    assert message(KeyError("k")).startswith("internal error: KeyError: 'k'; this is a bug")


def test_explain_takes_known_kinds_only():
    @click.command()
    def command():
        explain("weather", "{error}")

    result = CliRunner().invoke(command, [])
    assert isinstance(result.exception, ValueError)
    assert "kind must be one of tool, simulation, link, target, build, flash, file, value, memory" \
        in str(result.exception)


def test_group_maps_the_errors_of_its_commands():
    @click.group(cls=Group)
    def group():
        pass

    @group.command()
    @click.argument("what")
    def fail(what):
        explain("file", "cannot write {where}{error}")
        if what == "file":
            raise PermissionError(13, "Permission denied", "out.v")
        raise ZeroDivisionError("division by zero")

    result = invoke("fail", "file", command=group)
    assert (result.exit_code, result.output) == (2, "error: cannot write out.v: Permission "
                                                    "denied\n")
    result = invoke("fail", "bug", command=group)
    assert result.exit_code == 2
    assert result.output.startswith("error: internal error: ZeroDivisionError: division by "
                                    "zero; this is a bug in bitgrid")
    assert "Traceback" not in result.output and os.linesep not in result.output[:-1]


@pytest.mark.parametrize("args, line", [
    (["emulate", "--zzz"], "error: No such option '--zzz'; see 'bitgrid emulate --help'"),
    (["bogus"], "error: No such command 'bogus'; see 'bitgrid --help'"),
    (["sim", "x.bgbs", "--simulator", "xsim"],
     "error: Invalid value for '--simulator': 'xsim' is not one of 'icarus', 'verilator'; see "
     "'bitgrid sim --help'"),
    (["emulate"], "error: Missing argument 'PROGRAM'; see 'bitgrid emulate --help'"),
])
def test_usage_errors_are_one_line(args, line):
    """A usage error is one line naming the help to read, not click's usage block, exit 2."""
    result = CliRunner().invoke(main, args, prog_name="bitgrid")
    assert (result.exit_code, result.output) == (2, line + "\n")


def test_no_command_prints_the_help():
    result = CliRunner().invoke(main, [], prog_name="bitgrid")
    assert result.output.startswith("Usage: bitgrid [OPTIONS] COMMAND [ARGS]...")
    assert "Commands:" in result.output
