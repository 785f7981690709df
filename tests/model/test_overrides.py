"""The private cocotb and Amaranth internals that :mod:`bitgrid._overrides` relies on still exist
with the expected signatures; an upgrade that changes one fails here, by name."""

import importlib
import inspect
import warnings

import pytest

from bitgrid import _overrides


@pytest.mark.parametrize("module, owner, attribute", _overrides.PRIVATE_NAMES,
                         ids=[f"{o or m}.{a}" for m, o, a in _overrides.PRIVATE_NAMES])
def test_private_name_exists(module, owner, attribute):
    target = importlib.import_module(module)
    if owner is not None:
        target = getattr(target, owner)
    assert hasattr(target, attribute), f"{module}.{owner or ''}.{attribute} is gone"


def test_cocotb_runner_hooks_have_the_expected_signatures():
    from cocotb_tools.runner import Runner, get_runner
    assert list(inspect.signature(Runner._build_command).parameters) == ["self"]
    assert list(inspect.signature(Runner._get_sim_cmd_suffix).parameters) == ["self"]
    assert list(inspect.signature(Runner._execute_cmds).parameters) == [
        "self", "cmds", "cwd", "stdout"]
    for simulator in ("icarus", "verilator"):
        runner = _overrides.cocotb_runner(simulator, replacements={"-g2012": ("-g2005",)},
                                          make_args=("OPT_FAST=-O0",), suffix=("-vcd",))
        assert isinstance(runner, type(get_runner(simulator)))
        assert runner._get_sim_cmd_suffix()[-1:] == ["-vcd"]


def test_build_commands_are_edited(monkeypatch, tmp_path):
    """The override edits whatever cocotb's ``_build_command`` returns: replaced arguments,
    make arguments, and the copy of kept files before ``make``."""
    from cocotb_tools.runner import get_runner
    base = type(get_runner("verilator"))
    monkeypatch.setattr(base, "_build_command", lambda self: [
        ["verilator", "--public-flat-rw", "top.v"], ["make", "-C", "build"]])
    runner = _overrides.cocotb_runner(
        "verilator", replacements={"--public-flat-rw": ("--public-depth", "1")},
        make_args=("OPT_FAST=-O0",), before_make=[tmp_path / "verilated.o"])
    runner.build_dir = tmp_path
    assert runner._build_command() == [
        ["verilator", "--public-depth", "1", "top.v"],
        ["cp", str(tmp_path / "verilated.o"), str(tmp_path)],
        ["make", "-C", "build", "OPT_FAST=-O0"]]


def test_commands_run_through_processes(monkeypatch, tmp_path):
    """The runner's commands go through :func:`bitgrid.processes.run` (the parent-death
    signal), with cocotb's environment and log file, and a failing one raises what cocotb's
    own ``_execute_cmds`` raises."""
    from bitgrid import processes
    calls = []

    def fake_run(command, **options):
        calls.append((command, options))
        return 0 if command[0] == "true" else 5
    monkeypatch.setattr(processes, "run", fake_run)
    runner = _overrides.cocotb_runner("icarus")
    runner.env = {"A": "1"}
    with open(tmp_path / "log", "w") as log:
        runner._execute_cmds([["true", "x"]], tmp_path, log)
        with pytest.raises(RuntimeError, match="return code: 5"):
            runner._execute_cmds([["false"]], tmp_path, log)
    assert calls[0][0] == ["true", "x"]
    assert calls[0][1]["cwd"] == tmp_path and calls[0][1]["env"] == {"A": "1"}
    assert calls[0][1]["stdout"] is not None


def test_silence_unused_sets_the_flag_amaranth_reads():
    from amaranth._unused import MustUse
    from amaranth.hdl import Elaboratable, Module

    class Top(Elaboratable):
        def elaborate(self, platform):
            return Module()
    # MustUse.__del__ returns early on this flag (the only thing the override relies on).
    assert "self._MustUse__silence" in inspect.getsource(MustUse.__del__)
    top = Top()
    assert _overrides.silence_unused(top) is top and top._MustUse__silence is True
    other = Top()
    assert other._MustUse__silence is False
    _overrides.silence_unused(other)


def test_tool_env_var_names():
    assert _overrides.tool_env_var("yosys") == "YOSYS"
    assert _overrides.tool_env_var("nextpnr-ice40") == "NEXTPNR_ICE40"
    assert list(inspect.signature(
        importlib.import_module("amaranth._toolchain").tool_env_var).parameters) == ["name"]


def test_gowin_chipdb_device():
    from amaranth_boards.tang_nano_9k import TangNano9kPlatform
    assert isinstance(inspect.getattr_static(TangNano9kPlatform, "_chipdb_device"), property)
    assert _overrides.gowin_chipdb_device(TangNano9kPlatform()) == "GW1N-9C"
