"""The stimulus player (:mod:`bitgrid.hdl.player`, :mod:`bitgrid.sim.testbench.player`): whole
cases handed to the simulator at once, the configuration loaded through the real configuration
port by the player's sequencer.

Checked against independent models: the reference :class:`~bitgrid.Emulator` run here (not the
one inside the test bench), the step-by-step test bench, and the frames of
:meth:`bitgrid.Configuration.frames` (what readback must return).
"""

import numpy as np
import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid import sim
from bitgrid.hdl.player import pack_edges, unpack_edges
from bitgrid.sim.testbench.player import read_memory


def _random_edges(rng, width, height, count):
    return [Edges(int(rng.integers(0, 1 << width)), int(rng.integers(0, 1 << height)),
                  int(rng.integers(0, 1 << width)), int(rng.integers(0, 1 << height)))
            for _ in range(count)]


def _emulate(config, inputs):
    emulator = Emulator(config)
    return [emulator.step(edges) for edges in inputs]


# --- No simulator ---------------------------------------------------------------------------

def test_edge_words_round_trip():
    rng = np.random.default_rng(5)
    for width, height in ((2, 2), (4, 6), (32, 32), (6, 2)):
        for edges in _random_edges(rng, width, height, 20):
            word = pack_edges(edges, width, height)
            assert word < 1 << (2 * (width + height))
            assert unpack_edges(word, width, height) == tuple(edges)
    # The documented layout: N at bit 0, then E, S, W.
    assert pack_edges(Edges(n=0b01, e=0b10, s=0b11, w=0b01), 2, 2) == 0b01_11_10_01


def test_memory_file_with_unknown_bits(tmp_path):
    path = tmp_path / "m.bin"
    path.write_text("// comment\n@0\n0101\n1x0z\n0000_1111\n")
    assert read_memory(path, 3, 4) == [(0b0101, 0), (0b1000, 0b0101), (0b00001111, 0)]
    with pytest.raises(AssertionError, match="holds 3 words, expected 4"):
        read_memory(path, 4, 4)


def test_player_option_is_checked(monkeypatch):
    monkeypatch.setattr(sim.runner, "build", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(TypeError, match="player must be True, False or None"):
        sim.run_case(Configuration(2, 2), [Edges()], player="yes")


# --- Icarus ---------------------------------------------------------------------------------

def _flipped(config, inputs):
    """A configuration that differs from ``config`` in one LUT bit (so in one payload bit of
    one frame) and gives other outputs on ``inputs`` (the reference emulator decides), with
    the frame it is in."""
    reference = _emulate(config, inputs)
    for y in range(config.height):
        for x in range(config.width):
            for d in range(4):
                for address in range(16):
                    luts = config.luts.copy()
                    luts[y, x, d] ^= 1 << address
                    other = Configuration(config.width, config.height, luts)
                    if _emulate(other, inputs) != reference:
                        return other, (y, address, 1 << (4 * x + d))
    raise AssertionError("no single LUT bit changes the outputs")


@pytest.mark.icarus
def test_configuration_goes_through_the_port():
    """A flipped payload bit in one frame changes the outputs; with the old CRC the grid
    refuses the load (error rises, valid stays low) and no subcycle runs."""
    width, height = 4, 4
    rng = np.random.default_rng(11)
    config = Configuration.random(width, height, 11)
    inputs = _random_edges(rng, width, height, 12)
    flipped, (row, address, bit) = _flipped(config, inputs)
    frames, other = config.frames(), flipped.frames()
    differing = [i for i, (a, b) in enumerate(zip(frames, other)) if a != b]
    assert differing == [16 * row + address]
    assert frames[differing[0]][2] ^ other[differing[0]][2] == bit
    cases = [sim.make_case(config, inputs, name="original"),
             sim.make_case(flipped, inputs, name="flipped"),
             sim.make_case(flipped, inputs, name="flipped-old-crc", crc=config.frames_crc())]
    original, changed, refused = sim.run_cases(cases, player=True, quiet=True)
    assert original.player and changed.player
    assert original.ok and changed.ok, original.summary() + "\n" + changed.summary()
    assert original.outputs == _emulate(config, inputs)
    assert changed.outputs == _emulate(flipped, inputs)
    assert changed.outputs != original.outputs
    assert (refused.config_valid, refused.config_error) == (False, True)
    assert refused.subcycle == 0
    assert refused.outputs == [Edges()] * len(inputs)        # reset outputs, nothing ran
    assert refused.readback_ok                               # the frames were written


@pytest.mark.icarus
@pytest.mark.slow
def test_player_matches_step_by_step_and_the_emulator():
    """Random configurations of a non-square grid, steps back to back and with idle cycles;
    a fixed configuration; the same outputs from the player, the step-by-step bench and the
    reference emulator."""
    width, height = 4, 6
    cases = []
    for index, idle in enumerate((0, 1, 3)):
        rng = np.random.default_rng(300 + index)
        cases.append(sim.make_case(Configuration.random(width, height, 300 + index),
                                   _random_edges(rng, width, height, 40),
                                   name=f"random-idle{idle}", idle_cycles=idle))
    cases.append(sim.make_case(Configuration.random(width, height, 9), [], name="no-steps"))
    played = sim.run_cases(cases, player=True, quiet=True)
    stepped = sim.run_cases(cases, player=False, quiet=True)
    for case, fast, slow in zip(cases, played, stepped):
        assert fast.ok, fast.summary()
        assert (fast.player, slow.player) == (True, False)
        assert fast.outputs == slow.outputs == _emulate(case.config, case.inputs)
        assert fast.subcycle == slow.subcycle == len(case.inputs)
        assert fast.phase == len(case.inputs) % 2
        assert fast.native_seconds is not None and slow.native_seconds is None
    fixed = sim.run_cases(cases[:1], player=True, fixed=True, quiet=True)[0]
    assert fixed.ok and fixed.fixed, fixed.summary()
    assert fixed.outputs == played[0].outputs


@pytest.mark.icarus
def test_wrong_expected_output_is_reported_by_the_player():
    width, height = 2, 2
    config = Configuration.random(width, height, 4)
    inputs = _random_edges(np.random.default_rng(4), width, height, 6)
    expected = _emulate(config, inputs)
    expected[3] = expected[3]._replace(e=expected[3].e ^ 0b10)
    result = sim.run_case(config, inputs, expected=expected, player=True, quiet=True)
    assert result.player and not result.ok
    assert [(m.step, m.side, m.lane) for m in result.mismatches] == [(3, "E", 1)]
    assert not result.emulator_mismatches


@pytest.mark.icarus
@pytest.mark.slow
def test_case_longer_than_the_stimulus_memory():
    """More steps than the memories hold run as several commands; the grid keeps its state
    (70 000 subcycles on Icarus and the reference emulator: estimated 20 to 40 s of CPU, not
    measured on the loaded machine of its writing)."""
    from bitgrid.hdl.player import STIMULUS_DEPTH
    width, height = 2, 2
    count = STIMULUS_DEPTH + 4500
    rng = np.random.default_rng(21)
    config = Configuration.random(width, height, 21)
    inputs = _random_edges(rng, width, height, count)
    result = sim.run_case(config, inputs, player=True, idle_cycles=0, quiet=True)
    assert result.ok, result.summary()
    assert result.subcycle == count
    assert result.outputs == _emulate(config, inputs)


def test_step_by_step_option_is_checked(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from bitgrid.bitstream import save
    from bitgrid.cli import main
    monkeypatch.setattr(sim.runner, "build", lambda *a, **k: pytest.fail("built"))
    path = tmp_path / "g.bgbs"
    save(path, Configuration(4, 4))
    result = CliRunner().invoke(main, ["sim", str(path), "--steps", "2", "--mesh", "2x1",
                                       "--step-by-step"])
    assert result.exit_code == 2, result.output
    assert "--step-by-step is an option of a single grid" in result.output
    assert "Traceback" not in result.output


def test_too_many_idle_cycles_for_the_player(monkeypatch):
    from bitgrid.hdl.player import MAX_IDLE_CYCLES
    monkeypatch.setattr(sim.runner, "build", lambda *a, **k: pytest.fail("built"))
    case = sim.make_case(Configuration(2, 2), [Edges()], idle_cycles=MAX_IDLE_CYCLES + 1)
    with pytest.raises(ValueError, match="at most 65535 idle cycles per step"):
        sim.run_cases([case], player=True)
