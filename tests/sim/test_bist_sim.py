"""The self-test on the RTL grid (``bitgrid bist --target sim``): faults compiled into the
gateware (the grid's test-only ``faults`` option) are found and diagnosed as on the emulator;
the faulty RTL runs exactly as the fault model. Two Icarus builds (one per fault set), cached
by their Verilog."""

import json

import pytest
from click.testing import CliRunner

from bitgrid import Configuration, Emulator, bist, sim
from bitgrid.cli import main
from bitgrid.defects import Defect, DefectMap
from bitgrid.faultmodel import FaultSet
from bitgrid.terms import E, N, S, W

pytestmark = pytest.mark.icarus

FAULTS_4X4 = ("0,0:stuck1:N", "3,1:lut:W:9", "1,3:stuck0:E")


def test_bist_command_on_icarus(tmp_path):
    out = tmp_path / "defects.json"
    args = ["bist", "--size", "4x4", "--target", "sim", "-o", str(out)]
    for fault in FAULTS_4X4:
        args += ["--inject", fault]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "the map matches the injected defects" in result.output
    assert json.loads(out.read_text()) == DefectMap(4, 4, [
        Defect(0, 0, "stuck1", N), Defect(3, 1, "lut", W),
        Defect(1, 3, "stuck0", E)]).to_json()
    assert "lut at (3, 1) output W addresses 9 [nw]" in result.output


def test_faulty_rtl_is_the_fault_model():
    """Random configurations on the faulty 4 x 4 build: the test bench's reference is the
    fault model, and nothing differs from it; the fault-free emulator does differ."""
    faults = FaultSet(4, 4, FAULTS_4X4)
    cases, streams = [], []
    for seed in range(3):
        config = Configuration.random(4, 4, seed=seed)
        steps = [((seed * 7 + t) % 16, t % 16, (t * 5) % 16, (t * 3 + seed) % 16)
                 for t in range(40)]
        cases.append(sim.make_case(config, steps, name=f"random-{seed}"))
        streams.append((config, steps))
    results = sim.run_cases(cases, faults=faults, quiet=True)
    for result, (config, steps) in zip(results, streams):
        assert result.ok, result.summary()
        clean = Emulator(config)
        assert [clean.step(s) for s in steps] != result.outputs


def test_dead_cell_and_lut_fault_on_icarus():
    result = bist.run(6, 6, target="sim", faults=["2,3:dead", "5,0:lut:S:[nesw]",
                                                  "0,5:stuck1:W"], seed=1, quiet=True)
    assert result.defects == DefectMap(6, 6, [Defect(5, 0, "lut", S), Defect(2, 3, "dead"),
                                              Defect(0, 5, "stuck1", W)])
    assert result.explained
