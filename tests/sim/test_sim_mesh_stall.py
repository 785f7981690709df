"""A simulated mesh that stops making progress is reported as a stall ("the mesh stopped making
progress at subcycle N: ..."), not as a mismatch with the reference emulator (issue 10).

The stall is made real and cheap: a 4 x 2 grid on 2 x 1 chips with ``stall_cycles=1``, so that
the first wait for a link frame (many cycles) counts as no progress."""

import random

import pytest
from click.testing import CliRunner

from bitgrid import Configuration
from bitgrid.bitstream import write as write_bitstream
from bitgrid.cli import main
from bitgrid.sim import make_case, mesh

pytestmark = pytest.mark.icarus


def _case(steps=6):
    rng = random.Random(4)
    inputs = [(rng.getrandbits(4), rng.getrandbits(2), rng.getrandbits(4), rng.getrandbits(2))
              for _ in range(steps)]
    return Configuration.random(4, 2, seed=4), inputs


def test_a_stall_is_worded_as_a_stall():
    config, inputs = _case()
    result, = mesh.run_mesh_cases([make_case(config, inputs, name="stall")], "2x1",
                                  stall_cycles=1, quiet=True)
    assert result.stalled and not result.ok and not result.survived
    assert result.stalled_at == len(result.step_cycles) < result.steps
    summary = result.summary()
    first, second = summary.splitlines()[:2]
    assert first.endswith("STALLED")
    assert second.startswith(f"  the mesh stopped making progress at subcycle "
                             f"{result.stalled_at} of 6: no tile advanced for 1 cycles")
    assert "did not match" not in summary.lower() and "FAILED" not in summary
    assert result.verdict().startswith("the mesh stopped making progress")


def test_a_mesh_that_runs_is_not_called_stalled():
    config, inputs = _case()
    result, = mesh.run_mesh_cases([make_case(config, inputs, name="runs")], "2x1", quiet=True)
    assert result.ok and result.stalled is None and result.stalled_at is None
    assert result.verdict() == "the mesh matched the reference emulator of the whole grid"


def test_cli_says_stalled(tmp_path, monkeypatch):
    config, inputs = _case()
    path = tmp_path / "grid.bgbs"
    path.write_bytes(write_bitstream(config))
    stream = tmp_path / "inputs.txt"
    stream.write_text("".join(f"{n:x} {e:x} {s:x} {w:x}\n" for n, e, s, w in inputs))
    original = mesh.run_mesh_cases

    def stalling(*args, **options):
        return original(*args, **dict(options, stall_cycles=1))
    monkeypatch.setattr(mesh, "run_mesh_cases", stalling)
    result = CliRunner().invoke(main, ["sim", str(path), "--mesh", "2x1", "--inputs",
                                       str(stream)])
    assert result.exit_code == 1, result.output
    assert "STALLED: " in result.output and "MISMATCH" not in result.output
    assert "the mesh stopped making progress at subcycle" in result.output
    assert "did NOT match" not in result.output
