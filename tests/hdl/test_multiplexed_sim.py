"""The multiplexed engine (``bitgrid.hdl.multiplexed``) in Icarus and Verilator through
``bitgrid.sim.run_cases(engine="multiplexed")``: every shared conformance case, loaded through
the configuration port and read back, plus a seeded random differential case per size; one build
per (simulator, size), all the cases of a size in one simulator process.

The fast set runs the smallest size on Icarus (the stimulus player, and the step-by-step
test bench once); the other sizes and Verilator are in the slow set."""

import numpy as np
import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid import sim
from support.conformance import conformance_cases, load_conformance

#: (width, height) of every conformance case, with the evaluators each size is built with
#: (the most a row allows, capped at 8: a subcycle then takes (height + 1) * 1..2 + 3 clocks).
SIZES = {(2, 2): 2, (2, 16): 2, (8, 8): 4, (8, 10): 2, (16, 8): 8, (32, 32): 8}
FAST = {(2, 2)}


def _params():
    params = []
    for simulator in ("icarus", "verilator"):
        for (width, height), evaluators in SIZES.items():
            slow = simulator == "verilator" or (width, height) not in FAST
            params.append(pytest.param(simulator, width, height, evaluators,
                                       id=f"{simulator}-{width}x{height}-mux{evaluators}",
                                       marks=[pytest.mark.slow] if slow else []))
    return params


def _cases(width, height):
    cases = [sim.make_case(c.load_bitstream(), c.inputs, expected=c.outputs, name=c.name)
             for c in map(load_conformance, conformance_cases())
             if (c.width, c.height) == (width, height)]
    rng = np.random.default_rng(900 + width + height)
    edges = [Edges(int(rng.integers(0, 1 << width)), int(rng.integers(0, 1 << height)),
                   int(rng.integers(0, 1 << width)), int(rng.integers(0, 1 << height)))
             for _ in range(40)]
    cases.append(sim.make_case(Configuration.random(width, height, seed=width * height),
                               edges, name=f"random-{width}x{height}"))
    return cases


def test_sizes_cover_every_conformance_case():
    sizes = {(c.width, c.height) for c in map(load_conformance, conformance_cases())}
    assert sizes and sizes <= set(SIZES), sorted(sizes - set(SIZES))


@pytest.mark.parametrize("simulator, width, height, evaluators", _params())
def test_group(simulator, width, height, evaluators):
    """Every case matches its vector file (conformance cases) and the emulator bit for bit,
    the configuration reads back whole, and the subcycle counter equals the steps run."""
    cases = _cases(width, height)
    results = sim.run_cases(cases, simulator=simulator, engine="multiplexed",
                            evaluators=evaluators, quiet=True)
    failed = [r.summary() for r in results if not r.ok]
    assert not failed, "\n".join(failed)
    for case, result in zip(cases, results):
        assert result.readback_ok and result.config_valid and not result.config_error
        assert result.steps == result.subcycle == len(case.inputs)
        assert result.outputs == Emulator(case.config).run(case.inputs)


def test_step_by_step_bench():
    """The cocotb step-by-step test bench (waveforms, debugging) waits for step_ready and
    r_ready: the 2 x 2 conformance cases pass on it too."""
    cases = _cases(2, 2)
    results = sim.run_cases(cases, simulator="icarus", engine="multiplexed", player=False,
                            quiet=True)
    assert [r.summary() for r in results if not r.ok] == []
    assert all(r.readback_ok and not r.player for r in results)
    for case, result in zip(cases, results):
        assert result.outputs == Emulator(case.config).run(case.inputs)
