"""``bitgrid serve --target sim``: the conformance cases through BGCF into the RTL grid behind
the board's host controller, simulated in cocotb (the 2 x 2 cases on Verilator in the fast
set; on Icarus, and every case but the 32 x 32 one on Verilator, in the slow set: Icarus loads
a 32 x 32 program in about 40 s)."""

import pytest

from bitgrid import bitstream
from bitgrid.bgcf.client import run_vectors
from bitgrid.host import open_target

from support.bgcf import connected, serving
from support.conformance import conformance_cases, load_conformance


def run_on_sim(names, simulator):
    case = load_conformance(names[0])
    target = open_target("sim", width=case.width, height=case.height, simulator=simulator,
                         quiet=True)
    with serving(target) as server, connected(server, timeout=300) as client:
        for name in names:
            assert run_vectors(client, load_conformance(name)) == [], name
        read = bitstream.read(client.readback()).config
        assert read == load_conformance(names[-1]).load_bitstream().config


@pytest.mark.verilator
def test_2x2_cases_through_serve_on_verilator():
    run_on_sim(["full_adder1", "random_2x2"], "verilator")


@pytest.mark.icarus
@pytest.mark.slow
def test_2x2_cases_through_serve_on_icarus():
    """(33-49 s in the fast set, 2026-12-07: Icarus runs the UART's frames bit by bit.)"""
    run_on_sim(["full_adder1", "random_2x2"], "icarus")


@pytest.mark.verilator
@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in conformance_cases() if name != "random_32x32"])
def test_conformance_through_serve_on_verilator(name):
    """Every conformance case but random_32x32 (270 s: 2026-12-07, 2-core machine, both cores
    busy; the 32 x 32 grid runs on Verilator in tests/sim/test_sim.py and on a mesh)."""
    run_on_sim([name], "verilator")
