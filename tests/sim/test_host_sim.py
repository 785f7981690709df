"""The host runtime against the simulated host controller (``bitgrid.sim.host``, ``bitgrid run
--target sim``): the gateware of a board top without its pins (UART, protocol engine, grid) runs
in cocotb, and the host's ProtocolTarget talks to it through a bit-level UART model on the
``rx``/``tx`` pins, so the code path is the one of a real serial port.

Conformance cases of small grids reproduce their vector files exactly (and read back their
configuration) on Icarus (the 8 x 8 ones in the slow set), and one size on Verilator; a frame corrupted on the line is answered
with an error (counted by the device) and sent again, and the run still matches.

Cost (2 cores, shared with another CI job, warm build cache): about 60-90 s in all, nearly all
of it simulated UART traffic (about 25 000 clock cycles per second on Icarus for these grids;
a STEP request and its answer are about 900 cycles at 4 cycles per bit). Cold cache: add about
1 s per Icarus build and 5-25 s for the Verilator build.
"""

import json
import os

import pytest
from click.testing import CliRunner

from bitgrid.cli import main
from bitgrid.host import Command
from bitgrid.sim import runner
from bitgrid.sim.host import HostCase, run_host_case, run_host_cases
from support.conformance import conformance_dir, load_conformance


def host_case(name, readback=False):
    case = load_conformance(name)
    return HostCase(case.name, case.load_bitstream().config, case.inputs, case.outputs,
                    readback)


def check(results, names):
    assert [r.name for r in results] == names
    for result in results:
        assert result.ok, result.summary()
        assert result.readback_errors in (None, [])
        assert result.status["valid"] and not result.status["load_failed"]
        assert result.status["subcycle"] == result.steps


# Write indices of the session (see bitgrid.sim.host.run_host_cases): 0 the resynchronising
# delimiter, 1 IDENTIFY, 2 LOAD_BEGIN, 3... the LOAD_CHUNKs of the first case.
CORRUPT = (3, 20)


@pytest.mark.icarus
@pytest.mark.slow
def test_2x2_icarus_with_corrupted_frames():
    """Both 2x2 conformance cases in one host session, with readback, while two request frames
    are corrupted on the line: each is answered with a CRC error, sent again, and the runs
    match their vector files exactly."""
    results = run_host_cases([host_case("full_adder1", readback=True),
                              host_case("random_2x2", readback=True)],
                             simulator="icarus", corrupt_writes=CORRUPT)
    check(results, ["full_adder1", "random_2x2"])
    first = results[0]
    assert first.corrupted_writes == list(CORRUPT)
    # The device saw the bad frames (CRC errors, or a framing error if a COBS code was hit)
    # and the host sent each of them again; nothing was executed twice.
    errors = first.status["crc_errors"] + first.status["framing_errors"]
    assert errors == len(CORRUPT)
    assert first.retransmissions == len(CORRUPT)
    assert first.status["command_errors"] == 0
    assert results[1].retransmissions == 0


@pytest.mark.icarus
@pytest.mark.slow
@pytest.mark.parametrize("name", ["adder8", "random_8x8"])
def test_conformance_icarus(name):
    """The 8 x 8 conformance cases through the simulated UART (40-60 s each at load 6: slow
    set; the fast set runs the 2 x 2 cases, test_2x2_icarus_with_corrupted_frames)."""
    check(run_host_cases([host_case(name)], simulator="icarus"), [name])


@pytest.mark.verilator
def test_2x2_verilator_with_corrupted_frame():
    results = run_host_cases([host_case("full_adder1")], simulator="verilator",
                             corrupt_writes=(5,))
    check(results, ["full_adder1"])
    assert results[0].retransmissions == 1


def case_paths(name):
    vectors = os.path.join(conformance_dir(), f"{name}.json")
    with open(vectors) as file:
        bitstream = json.load(file)["bitstream"]
    return os.path.join(conformance_dir(), bitstream), vectors


@pytest.mark.icarus
@pytest.mark.slow
def test_cli_run_target_sim(tmp_path):
    """``bitgrid run --target sim``: exit 0 when every step matches, 1 on a mismatch (a vector
    file with one output flipped), 2 for a missing simulator."""
    bitstream, vectors = case_paths("full_adder1")
    result = CliRunner().invoke(main, ["run", bitstream, "--vectors", vectors, "--target", "sim",
                                       "--steps", "8"])
    assert result.exit_code == 0, result.output
    assert "PASS: full_adder1: all 8 steps match" in result.output
    assert "sim (icarus)" in result.output

    with open(vectors) as file:
        data = json.load(file)
    step = data["steps"][2]
    key = next(k for k in step["out"])
    value = step["out"][key]
    step["out"][key] = hex(int(value, 16) ^ 1) if isinstance(value, str) else value ^ 1
    data["bitstream"] = bitstream
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["run", bitstream, "--vectors", str(bad), "--target",
                                       "sim", "--steps", "4"])
    assert result.exit_code == 1, result.output
    assert "MISMATCH: full_adder1" in result.output and "first at step 2" in result.output


def test_cli_run_target_sim_missing_simulator(monkeypatch, tmp_path):
    from bitgrid import toolchain
    real = toolchain.find_tool
    monkeypatch.setattr(toolchain, "find_tool",
                        lambda name: None if name == "verilator" else real(name))
    monkeypatch.setattr(runner, "find_tool", toolchain.find_tool)
    monkeypatch.setenv("BITGRID_CACHE", str(tmp_path / "cache"))
    bitstream, vectors = case_paths("full_adder1")
    result = CliRunner().invoke(main, ["run", bitstream, "--vectors", vectors, "--target", "sim",
                                       "--simulator", "verilator"])
    assert result.exit_code == 2, result.output
    assert "verilator" in result.output


def test_write_indices_are_the_documented_ones():
    """CORRUPT names LOAD_CHUNK requests: the host's writes, in order, are the delimiter,
    IDENTIFY, LOAD_BEGIN, then the chunks (checked on the Python device model)."""
    from bitgrid.host import DeviceModel, LoopbackTransport, ProtocolTarget, decode_frame
    writes = []
    transport = LoopbackTransport(DeviceModel(2, 2),
                                  to_device=lambda data: (writes.append(data), data)[1])
    ProtocolTarget(transport).load(host_case("full_adder1").config)
    assert writes[0] == b"\x00"
    assert all(w[0] == 0 for w in writes[1:])          # each request after a delimiter
    commands = [decode_frame(w[1:-1])[1][0] for w in writes[1:]]
    assert commands[:2] == [Command.IDENTIFY, Command.LOAD_BEGIN]
    assert all(commands[i - 1] == Command.LOAD_CHUNK for i in CORRUPT)


def test_bad_input_rejected_before_any_build(tmp_path, monkeypatch):
    from bitgrid import Configuration, Edges
    from bitgrid.vectors import VectorFormatError
    built = []
    monkeypatch.setattr(runner, "build", lambda *a, **k: built.append(a))
    with pytest.raises(VectorFormatError, match="does not fit the 2 lanes"):
        run_host_case(Configuration(2, 2), [Edges(n=4)])
    assert built == []


@pytest.mark.icarus
def test_reset_and_reload_clear_the_cell_outputs_icarus():
    """RESET and a load clear every cell output, not only the counter (SPEC section 4): in the
    simulated controller the cells are Verilog instances, which a reset of the grid reaches
    only through the grid's clock domain (found by bitgrid serve's protocol suite)."""
    from bitgrid import Configuration, Emulator
    from bitgrid.host import open_target
    from bitgrid.terms import Edges
    config = Configuration.random(2, 2, seed=11)
    with open_target("sim", width=2, height=2, simulator="icarus", quiet=True) as target:
        target.load(config)
        target.step(5, Edges(n=3, e=1, s=2, w=3))
        target.reset()
        assert target.get_edges() == Edges()
        assert target.step(1, Edges()) == Emulator(config).step(Edges())
        target.step(4, Edges(n=1, e=3))
        target.load(config)
        assert target.get_edges() == Edges()
        assert target.step(1, Edges()) == Emulator(config).step(Edges())
