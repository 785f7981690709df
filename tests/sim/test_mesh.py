# amaranth: UnusedElaboratable=no
"""Mesh tiles and simulated meshes (``bitgrid.hdl.mesh``, ``bitgrid.sim.mesh``, SPEC section 8).

* The lane bookkeeping of the link frames, checked against the geometry of SPEC section 2
  computed here from cell coordinates.
* :class:`MeshTile` and :class:`Mesh`: constructor checks, members, link order.
* A lone tile in Amaranth's simulator: without links it runs as a plain grid (compared with the
  reference emulator); with a link and no neighbour it runs subcycle 0 and then waits at the
  barrier for ever, counting stalls.
* Simulated meshes in cocotb, on Icarus and on Verilator: conformance programs and random
  ones, sliced into tiles, match the reference emulator of the *whole* grid at every subcycle,
  without faults and under each kind of link fault (bit flips, dropped and duplicated frames,
  bit slips, lane skew, different clock rates, a disconnect), and the counters show that the
  faults were injected and survived.

Measured (2 cores): a 2x2 mesh of 4x4 tiles runs about 100 cycles per subcycle without faults;
a group of nine 24-step cases runs in about 60 s on Icarus. The Verilator build of the 2x2 mesh
takes about 25 s.
"""

import json
import os
import pathlib
import random
import shutil

import pytest
from amaranth.hdl import Fragment, Shape
from amaranth.lib.wiring import In, Out
from click.testing import CliRunner

from bitgrid import Configuration, Edges, Emulator
from bitgrid.cli import main
from bitgrid.faults import FaultSpec
from bitgrid.hdl.grid import EdgeSignature
from bitgrid.hdl.link import FaultControlSignature, LanePinsSignature
from bitgrid.hdl.link.layer import LinkLayer
from bitgrid.hdl.mesh import (LinkSetSignature, LinkStatusSignature, Mesh, MeshTile,
                              TileLinkSignature, fresh_lanes, mesh_links, tile_links)
from bitgrid.mesh import MeshEmulator, MeshShape
from bitgrid.terms import lane_parity_offset
from bitgrid.sim.api import make_case
from bitgrid.sim.mesh import MeshDesign, run_mesh_cases, run_mesh_vector_files
from support.conformance import conformance_dir, load_conformance
from support.gateware import raises_exactly, simulate

SIMULATORS = ("icarus", "verilator")
MARKS = {"icarus": pytest.mark.icarus, "verilator": pytest.mark.verilator}


# --- Lane bookkeeping against SPEC section 2 ------------------------------------------------------

def _boundary_cell(side, lane, width, height):
    """The cell whose output leaves on ``side`` at ``lane`` (SPEC section 2)."""
    return {"N": (lane, 0), "S": (lane, height - 1), "W": (0, lane),
            "E": (width - 1, lane)}[side]


@pytest.mark.parametrize("width, height", [(2, 2), (4, 4), (4, 6), (8, 2)])
@pytest.mark.parametrize("side", "NESW")
def test_lane_parity_offset(side, width, height):
    lanes = width if side in "NS" else height
    for lane in range(lanes):
        x, y = _boundary_cell(side, lane, width, height)
        assert (x + y) % 2 == (lane + lane_parity_offset(side)) % 2


@pytest.mark.parametrize("width, height", [(4, 4), (2, 6), (6, 2)])
@pytest.mark.parametrize("side, peer", [("E", "W"), ("W", "E"), ("S", "N"), ("N", "S")])
def test_fresh_lanes_follow_the_global_parity(side, peer, width, height):
    """Two tiles side by side in a global grid: the frame of subcycle ``t`` carries the lanes
    whose sending cell updated in ``t`` (global parity ``t % 2``), and those are exactly the
    lanes whose receiving cell updates in ``t + 1``."""
    lanes = width if side in "NS" else height
    # Global offsets of the two tiles (even, SPEC section 4).
    dx, dy = {"E": (width, 0), "W": (-width, 0), "S": (0, height), "N": (0, -height)}[side]
    for t in range(4):
        sent = fresh_lanes(side, lanes, t)
        expect_sent = [i for i in range(lanes)
                       if sum(_boundary_cell(side, i, width, height)) % 2 == t % 2]
        assert sent == expect_sent
        receivers = []
        for i in range(lanes):
            x, y = _boundary_cell(peer, i, width, height)
            if (x + dx + y + dy) % 2 == (t + 1) % 2:
                receivers.append(i)
        assert receivers == sent
        assert len(sent) == lanes // 2


def test_tile_links_and_order():
    assert [tile_links(2, 2, c, r) for r in range(2) for c in range(2)] == ["ES", "SW", "NE",
                                                                          "NW"]
    assert tile_links(1, 1, 0, 0) == ""
    assert tile_links(3, 1, 1, 0) == "EW"
    assert mesh_links(2, 2) == [(0, 0, "E"), (0, 0, "S"), (1, 0, "S"), (1, 0, "W"),
                                (0, 1, "N"), (0, 1, "E"), (1, 1, "N"), (1, 1, "W")]
    assert mesh_links(2, 1) == [(0, 0, "E"), (1, 0, "W")]


# --- Constructors -----------------------------------------------------------------------------

class TestMeshTile:
    def test_members(self):
        tile = MeshTile(4, 6, links="WE", lanes=2)
        assert tile.links == "EW"
        assert (tile.width, tile.height, tile.lanes) == (4, 6, 2)
        assert tile.payload_bits("E") == 3 and tile.payload_bits("N") == 2
        members = tile.signature.members
        assert members["link"] == Out(LinkSetSignature("EW", 2))
        assert set(members["link"].signature.members) == {"e", "w"}
        assert members["link"].signature.members["e"] == Out(TileLinkSignature(2))
        assert tile.link["E"] is tile.link.e and tile.link["west"] is tile.link.w
        assert tile.link.e.pins.signature == LanePinsSignature(2)
        assert "faults" not in tile.link.e.signature.members
        assert Shape.cast(members["limit"].shape).width == 32
        assert members["i"] == In(EdgeSignature(4, 6)) and members["o"] == Out(EdgeSignature(4, 6))
        Fragment.get(tile, None)

    def test_faults_members(self):
        tile = MeshTile(4, 4, links="N", faults=True)
        assert tile.link.n.signature == TileLinkSignature(1, faults=True)
        assert tile.link.n.status.signature == LinkStatusSignature(faults=True)
        assert "flips" in tile.link.n.status.signature.members
        assert tile.link.n.faults.signature.flip() == FaultControlSignature(1)

    def test_link_sides_are_canonical(self):
        assert MeshTile(4, 4, links="wn").links == "NW"

    @pytest.mark.parametrize("links", ["X", "NN", 3, "nEsWn"])
    def test_bad_links(self, links):
        with raises_exactly(ValueError, f"Links must be a string of distinct sides from 'NESW', "
                                        f"not {links!r}"):
            MeshTile(4, 4, links=links)

    @pytest.mark.parametrize("lanes", [0, -1, 1.5, True])
    def test_bad_lanes(self, lanes):
        with raises_exactly(ValueError, f"lanes must be an integer of at least 1, not {lanes!r}"):
            MeshTile(4, 4, lanes=lanes)

    def test_bad_counter_width(self):
        with raises_exactly(ValueError, "counter_width must be an integer of at least 9, not 8"):
            MeshTile(4, 4, counter_width=8)

    def test_bad_size(self):
        with pytest.raises(ValueError, match="must be even"):
            MeshTile(3, 4)

    @pytest.mark.parametrize("option, value, message", [
        ("ddr", 1, "ddr must be True or False, not 1"),
        ("faults", None, "faults must be True or False, not None"),
        ("expose_state", "yes", "expose_state must be True or False, not 'yes'"),
        ("storage", "sram", "Storage must be one of 'ff', 'memory', not 'sram'"),
        ("fault_seed", -1, "fault_seed must be an integer of at least 0, not -1"),
        ("line_delay", -1, "line_delay must be an integer from 0 to 4096, not -1"),
    ])
    def test_bad_option(self, option, value, message):
        with raises_exactly(ValueError, message):
            MeshTile(4, 4, links="E", **{option: value})

    @pytest.mark.parametrize("option, value", [("replay_depth", 3), ("timeout", 4)])
    def test_link_layer_option_checked_when_built(self, option, value):
        """The options of the link parts are checked by the parts, when the tile is built."""
        with pytest.raises(ValueError) as expected:
            LinkLayer(2, **{option: value})
        with raises_exactly(ValueError, str(expected.value)):
            MeshTile(4, 4, links="E", **{option: value})


class TestMesh:
    def test_members(self):
        mesh = Mesh(2, 2, 4, 4, faults=True)
        assert (mesh.width, mesh.height) == (8, 8)
        assert mesh.link_list() == mesh_links(2, 2)
        members = mesh.signature.members
        assert members["i"] == In(EdgeSignature(8, 8)) and members["o"] == Out(EdgeSignature(8, 8))
        assert "clk_3" in members and "clk_4" not in members and "clk90_0" not in members
        assert Shape.cast(members["rst"].shape).width == 4
        assert members["status"].dimensions == (8,)
        assert members["faults"].dimensions == (8,)

    def test_ddr_has_quarter_clocks(self):
        assert "clk90_1" in Mesh(2, 1, 2, 2, ddr=True).signature.members

    def test_tile_options_checked_when_built(self):
        with raises_exactly(ValueError, "lanes must be an integer of at least 1, not 0"):
            Mesh(2, 1, 2, 2, lanes=0)

    def test_single_tile_has_no_links(self):
        members = Mesh(1, 1, 2, 2).signature.members
        assert "status" not in members and "faults" not in members

    @pytest.mark.parametrize("cols, rows", [(0, 1), (1, -1), (True, 1)])
    def test_bad_shape(self, cols, rows):
        name, value = ("cols", cols) if not (isinstance(cols, int) and cols >= 1
                                             and not isinstance(cols, bool)) else ("rows", rows)
        with raises_exactly(ValueError, f"Mesh {name} must be an integer of at least 1, not "
                                        f"{value!r}"):
            Mesh(cols, rows, 2, 2)


# --- A lone tile in Amaranth's simulator --------------------------------------------------------

async def _load(ctx, cfg_port, config):
    ctx.set(cfg_port.begin, 1)
    await ctx.tick()
    ctx.set(cfg_port.begin, 0)
    for row, address, frame in config.frames():
        ctx.set(cfg_port.row, row)
        ctx.set(cfg_port.addr, address)
        ctx.set(cfg_port.w_data, frame)
        ctx.set(cfg_port.w_en, 1)
        await ctx.tick().until(cfg_port.w_ready)
    ctx.set(cfg_port.w_en, 0)
    ctx.set(cfg_port.crc, config.frames_crc())
    ctx.set(cfg_port.commit, 1)
    await ctx.tick().until(cfg_port.w_ready)
    ctx.set(cfg_port.commit, 0)
    await ctx.tick()
    assert ctx.get(cfg_port.valid) == 1


def test_tile_without_links_runs_as_a_grid():
    config = Configuration.random(4, 4, seed=5)
    rng = random.Random(5)
    inputs = [Edges(rng.getrandbits(4), rng.getrandbits(4), rng.getrandbits(4),
                    rng.getrandbits(4)) for _ in range(12)]
    expected = Emulator(config).run(inputs)
    dut = MeshTile(4, 4)
    seen = []

    async def testbench(ctx):
        await _load(ctx, dut.cfg, config)
        for t, edges in enumerate(inputs):
            for port, word in zip((dut.i.n, dut.i.e, dut.i.s, dut.i.w), edges):
                ctx.set(port, word)
            ctx.set(dut.limit, t + 1)
            await ctx.tick()
            assert ctx.get(dut.subcycle) == t + 1
            await ctx.tick()                      # budget spent: no step in this cycle
            assert ctx.get(dut.subcycle) == t + 1
            seen.append(Edges(*(ctx.get(p) for p in (dut.o.n, dut.o.e, dut.o.s, dut.o.w))))
        assert ctx.get(dut.stalls) == 0

    simulate(dut, testbench, name="mesh_tile_alone")
    assert seen == expected


def test_tile_waits_at_the_barrier_for_its_neighbour():
    """With a link to a neighbour that never answers, subcycle 0 runs (it needs only the reset
    state) and subcycle 1 never does; the tile counts the cycles it waits."""
    config = Configuration.random(4, 4, seed=6)
    dut = MeshTile(4, 4, links="E")

    async def testbench(ctx):
        await _load(ctx, dut.cfg, config)
        ctx.set(dut.limit, 10)
        for _ in range(200):
            await ctx.tick()
        assert ctx.get(dut.subcycle) == 1
        assert 195 <= ctx.get(dut.stalls) <= 200
        assert ctx.get(dut.link.e.status.aligned) == 0

    simulate(dut, testbench, name="mesh_tile_barrier")


# --- Simulated meshes in cocotb ---------------------------------------------------------------

def _random_case(width, height, steps, seed, name):
    rng = random.Random(seed)
    config = Configuration.random(width, height, seed=seed)
    inputs = [(rng.getrandbits(width), rng.getrandbits(height), rng.getrandbits(width),
               rng.getrandbits(height)) for _ in range(steps)]
    return make_case(config, inputs, name=name)


def _conformance_case(name):
    case = load_conformance(name)
    return make_case(case.load_bitstream().config, case.inputs, expected=case.outputs,
                     name=case.name)


#: One scenario per fault kind: (spec, counters that must be > 0 after it).
FAULT_SCENARIOS = [
    ("none", ()),
    ("flip=2e-3", ("flips", "retransmits")),
    ("drop=0.05", ("drops", "retransmits", "timeouts")),
    ("dup=0.05", ("duplicates", "sequence_errors")),
    ("slip=3", ("slips", "align_losses")),
    ("clock=1.6", ()),
    ("disconnect=1", ("disconnects", "align_losses")),
    ("all,flip=1e-3,drop=0.05,dup=0.05,seed=5",
     ("flips", "drops", "duplicates", "slips", "disconnects", "retransmits")),
]


def _check(results):
    report = "\n".join(r.summary() for r in results if not r.ok)
    assert not report, report


def _check_faults(results, scenarios):
    for result, (spec, must) in zip(results, scenarios):
        totals = result.totals()
        for name in must:
            assert totals[name] > 0, f"{spec}: no {name} ({totals})"
        parsed = FaultSpec.parse(spec)
        if parsed.slip:
            assert totals["slips"] == parsed.slip
        if parsed.disconnect:
            assert totals["disconnects"] == parsed.disconnect
        if not parsed.enabled:
            # A clean line: every frame sent once, nothing lost or repeated.
            assert (totals["retransmits"], totals["crc_errors"], totals["sequence_errors"],
                    totals["align_losses"]) == (0, 0, 0, 0)
            assert sum(totals[k] for k in ("flips", "slips", "drops", "duplicates",
                                           "disconnects")) == 0
        # One frame per link and subcycle (the last one may still be on its way).
        assert totals["frames_sent"] >= len(result.links) * (result.steps - 1)


@pytest.mark.parametrize("simulator", [
    pytest.param("icarus", marks=[MARKS["icarus"], pytest.mark.slow]),    # 369 s at load 8
    pytest.param("verilator", marks=MARKS["verilator"])])
def test_mesh_2x2_conformance(simulator):
    """The shared random_8x8 case on 2 x 2 chips of 4 x 4 cells: every subcycle's global edge
    outputs equal the vector file's and the 8 x 8 reference emulator's (with every fault at
    once in the slow set, test_conformance_on_a_mesh_with_faults)."""
    cases = [_conformance_case("random_8x8")]
    scenarios = [("none", ())]
    results = run_mesh_cases(cases, "2x2", simulator=simulator,
                             case_faults=[s for s, _ in scenarios], quiet=True)
    _check(results)
    _check_faults(results, scenarios)


@pytest.mark.parametrize("simulator", [
    pytest.param("icarus", marks=[MARKS["icarus"], pytest.mark.slow]),
    pytest.param("verilator", marks=MARKS["verilator"])])
def test_mesh_2x2_random_under_every_fault(simulator):
    """One random 8 x 8 program per fault scenario on 2 x 2 chips: the outputs equal the
    reference emulator's at every subcycle, and the counters show the injected faults (on
    Verilator in the fast set; on Icarus, about 80 s at load 6, in the slow set)."""
    cases = [_random_case(8, 8, 16, 100 + i, spec) for i, (spec, _) in
             enumerate(FAULT_SCENARIOS)]
    results = run_mesh_cases(cases, "2x2", simulator=simulator,
                             case_faults=[s for s, _ in FAULT_SCENARIOS], quiet=True)
    _check(results)
    _check_faults(results, FAULT_SCENARIOS)
    clock = results[[s for s, _ in FAULT_SCENARIOS].index("clock=1.6")]
    assert len(set(clock.stalls)) > 1      # tiles at two clock rates wait different amounts


def _multilane_params():
    return [pytest.param("icarus", marks=MARKS["icarus"]),
            pytest.param("verilator", marks=[MARKS["verilator"], pytest.mark.slow])]


@pytest.mark.parametrize("simulator", _multilane_params())
def test_mesh_two_ddr_lanes_with_skew(simulator):
    """Two DDR lanes per link on a 2 x 1 mesh: lane skew (absorbed by the deskew) and every
    fault at once."""
    scenarios = [("none", ()), ("skew=6", ()), ("all,skew=6,flip=1e-3,seed=3",
                                                 ("flips", "slips", "retransmits"))]
    cases = [_random_case(8, 4, 16, 200 + i, spec) for i, (spec, _) in enumerate(scenarios)]
    results = run_mesh_cases(cases, "2x1", simulator=simulator, lanes=2, ddr=True,
                             case_faults=[s for s, _ in scenarios], quiet=True)
    _check(results)
    _check_faults(results, scenarios)


#: (input, output) latencies of the links' I/O buffers: the model's 1, and 3 as ECP5's DDR
#: output register (ODDRX1F) takes; all in the slow set (each about 35-60 s on Icarus); the
#: fast set has (3, 3) on a 2 x 1 mesh, test_mesh_at_slow_buffers_2x1.
BUFFER_LATENCIES = [(1, 1), (1, 3), (3, 1), (3, 3)]


def _check_latencies(results, latencies):
    assert (results[0].design.input_latency, results[0].design.output_latency) == latencies
    _check(results)
    _check_faults(results, [("none", ())])


@pytest.mark.icarus
def test_mesh_at_slow_buffers_2x1():
    """A random 8 x 4 program (12 steps) on 2 x 1 chips with two DDR lanes per link whose I/O
    buffers take 3 cycles each way: the emulator's outputs at every subcycle, and every frame
    sent once on the clean line (the fast-set case of test_mesh_at_buffer_latencies)."""
    latencies = (3, 3)
    cases = [_random_case(8, 4, 12, 300, "slow-buffers")]
    results = run_mesh_cases(cases, "2x1", lanes=2, ddr=True, input_latency=latencies[0],
                             output_latency=latencies[1], quiet=True)
    _check_latencies(results, latencies)


@pytest.mark.icarus
@pytest.mark.slow
@pytest.mark.parametrize("latencies", [
    pytest.param(latencies, id=f"in{latencies[0]}-out{latencies[1]}")
    for latencies in BUFFER_LATENCIES if latencies[0] != latencies[1]])
def test_mesh_at_buffer_latencies(latencies):
    """random_8x8 on 2 x 2 chips with two DDR lanes per link whose I/O buffers take
    ``latencies`` cycles (input, output): the vector file's and the emulator's outputs at every
    subcycle, and on the clean line every frame is sent once (the link layer's timeout allows
    for the longer trip: no retransmission). The unequal pairs only: (3, 3) runs in the fast
    set (test_mesh_at_slow_buffers_2x1, on 2 x 1), (1, 1) in every other mesh test; each
    took 45 to 60 s (2026-12-07, 2-core machine, both cores busy)."""
    cases = [_conformance_case("random_8x8")]
    results = run_mesh_cases(cases, "2x2", lanes=2, ddr=True, input_latency=latencies[0],
                             output_latency=latencies[1], quiet=True)
    _check_latencies(results, latencies)


#: Conformance cases and the mesh shapes their grids split into (even tiles).
CONFORMANCE_MESHES = [("random_8x8", "2x2"), ("adder8", "1x2"), ("edge_io_hello", "2x2"),
                      ("identity_we_9lane", "2x1"), ("random_32x32", "2x2"),
                      ("adder8_snake", "1x2")]


def _fault_meshes():
    """CONFORMANCE_MESHES on both simulators, but random_32x32 on Verilator only (99 s on
    Icarus, 2026-12-07, 2-core machine, both cores busy; the 8 x 8 programs cover Icarus)."""
    return [pytest.param(s, name, shape, marks=MARKS[s], id=f"{name}-{shape}-{s}")
            for name, shape in CONFORMANCE_MESHES for s in SIMULATORS
            if not (name == "random_32x32" and s == "icarus")]


@pytest.mark.slow
@pytest.mark.parametrize("simulator, name, shape", _fault_meshes())
def test_conformance_on_a_mesh_with_faults(simulator, name, shape):
    """Every conformance program whose grid splits, on a mesh, with every fault kind at once."""
    path = os.path.join(conformance_dir(), f"{name}.json")
    results = run_mesh_vector_files([path], shape, simulator=simulator, faults="all,seed=11",
                                    quiet=True)
    _check(results)


def test_mesh_emulator_agrees_with_the_cocotb_outputs():
    """The software mesh (per-chip emulators exchanging lanes) gives the same outputs as one
    emulator: the reference the gateware mesh is compared with is the whole grid's."""
    case = load_conformance("random_8x8")
    config = case.load_bitstream().config
    mesh = MeshEmulator(config, MeshShape(2, 2))
    assert [mesh.step(e) for e in case.inputs] == case.outputs


# --- Options and the command line -------------------------------------------------------------

def test_design_for_grid():
    design = MeshDesign.for_grid(16, 8, "2x2", lanes=2, ddr=True)
    assert (design.tile_width, design.tile_height, design.width, design.height) == (8, 4, 16, 8)
    assert design.stem == "mesh-2x2-8x4-ff-2ddr-faults"
    slow = MeshDesign.for_grid(16, 8, "2x2", lanes=2, ddr=True, input_latency=1,
                               output_latency=3)
    assert slow.stem == "mesh-2x2-8x4-ff-2ddr-faults-io13"
    assert str(slow) == ("2x2 mesh of 8x4 ff tiles, 2 DDR lane(s) per link, I/O buffer latency "
                         "1 in, 3 out")
    assert slow.verilog_arguments()["output_latency"] == 3
    with pytest.raises(ValueError, match="even"):
        MeshDesign.for_grid(8, 10, "2x2")


def test_case_faults_must_match_the_cases():
    case = _random_case(4, 4, 2, 1, "x")
    with raises_exactly(ValueError, "case_faults has 2 entries for 1 cases"):
        run_mesh_cases([case], "2x2", case_faults=["none", "none"])


@pytest.mark.parametrize("option, value, message", [
    ("lanes", 0, "lanes must be an integer from 1 to 16, not 0"),
    ("lanes", 17, "lanes must be an integer from 1 to 16, not 17"),
    ("line_delay", -1, "line_delay must be an integer from 0 to 4096, not -1"),
    ("stall_cycles", 0, "stall_cycles must be an integer from 1 to 1000000000, not 0"),
    ("ddr", 1, "ddr must be True or False, not 1"),
    ("input_latency", 0, "input_latency must be an integer from 1 to 8, not 0"),
    ("output_latency", 9, "output_latency must be an integer from 1 to 8, not 9"),
])
def test_mesh_options_checked_before_building(option, value, message):
    case = _random_case(4, 4, 2, 1, "x")
    with raises_exactly(ValueError, message):
        run_mesh_cases([case], "2x2", **{option: value})


def _cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_link_options_need_a_mesh():
    path = os.path.join(conformance_dir(), "random_8x8.bgbs")
    result = _cli("sim", path, "--steps", "1", "--faults", "all")
    assert result.exit_code == 2
    assert ("--faults, --lanes, --ddr and --line-delay describe the links of a mesh: add "
            "--mesh COLSxROWS") in result.output


def test_cli_mesh_that_does_not_split():
    path = os.path.join(conformance_dir(), "identity_we_9lane.bgbs")
    result = _cli("sim", path, "--steps", "1", "--mesh", "2x2")
    assert result.exit_code == 2
    assert "error:" in result.output and "even" in result.output


def test_cli_bad_fault_spec():
    path = os.path.join(conformance_dir(), "random_8x8.bgbs")
    result = _cli("sim", path, "--steps", "1", "--mesh", "2x2", "--faults", "skew=99")
    assert result.exit_code == 2
    assert "skew=99: skew must be an integer number of bit times between 0 and 15" in \
        result.output


@pytest.mark.parametrize("spec, message", [
    ("flip=0.1", "flip=0.1: flip must be a probability from 0 to 0.005 (with more bit errors "
                 "the links lose most frames and the mesh stalls)"),
    ("drop=0.9", "drop=0.9: drop must be a probability from 0 to 0.5 (with more dropped frames "
                 "the mesh stalls waiting for a delivery)"),
    ("clock=1e9", "clock=1e9: clock must be a clock period ratio from 1/16 to 16 (1 = same "
                  "clock; a slower neighbour stalls the mesh)"),
    ("disconnect=1e9", "disconnect=1e9: disconnect must be an integer count from 0 to 10000"),
])
def test_cli_fault_rates_at_which_a_mesh_stalls(spec, message):
    """Rates at which a mesh cannot progress are refused before anything is built: exit 2, the
    error on one line, no traceback."""
    path = os.path.join(conformance_dir(), "random_8x8.bgbs")
    result = _cli("sim", path, "--steps", "4", "--mesh", "2x2", "--faults", spec)
    assert result.exit_code == 2
    assert result.output == (f"error: Invalid value for '--faults': {message}; see "
                             "'main sim --help'\n")
    assert "Traceback" not in result.output


def test_cli_more_disconnects_than_steps():
    path = os.path.join(conformance_dir(), "random_8x8.bgbs")
    result = _cli("sim", path, "--steps", "4", "--mesh", "2x2", "--faults", "disconnect=5")
    assert (result.exit_code, result.output) == (
        2, "error: disconnect=5: a run of 4 steps takes at most 4 disconnects (1 per step)\n")


def test_run_mesh_cases_checks_the_spec_against_the_steps():
    case = _random_case(4, 4, 2, 1, "x")
    with raises_exactly(ValueError, "slip=9: a run of 2 steps takes at most 8 slips (4 per step)"):
        run_mesh_cases([case], "2x2", faults="slip=9")


@pytest.mark.icarus
@pytest.mark.slow
def test_cli_mesh_run_pass_and_mismatch(tmp_path):
    """``bitgrid sim --mesh``: exit 0 and the counters when every step matches, 1 with a
    mismatch report when the vector file is wrong (first 16 steps of random_8x8)."""
    source = pathlib.Path(conformance_dir())
    shutil.copy(source / "random_8x8.bgbs", tmp_path / "random_8x8.bgbs")
    doc = json.loads((source / "random_8x8.json").read_text())
    doc["steps"] = doc["steps"][:16]
    good = tmp_path / "random_8x8.json"
    good.write_text(json.dumps(doc))
    result = _cli("sim", str(tmp_path / "random_8x8.bgbs"), "--vectors", str(good),
                  "--mesh", "2x2", "--faults", "drop=0.1,seed=2")
    assert result.exit_code == 0, result.output
    assert "PASS: random_8x8: all 16 steps match" in result.output
    assert "injected: flips 0, slips 0, drops " in result.output
    assert "chip (1,1) W:" in result.output
    step = doc["steps"][5]["out"]
    step["N"] = f"0x{int(step['N'], 16) ^ 1:02x}"
    bad = tmp_path / "wrong.json"
    doc["name"] = "wrong"
    bad.write_text(json.dumps(doc))
    result = _cli("sim", str(tmp_path / "random_8x8.bgbs"), "--vectors", str(bad),
                  "--mesh", "2x2")
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.output and "step 5" in result.output


# --- Two host controllers with a link: two boards as one grid --------------------------------

@pytest.mark.parametrize("grid_engine", ["direct",
                                         pytest.param("multiplexed", marks=pytest.mark.slow)])
def test_two_protocol_engines_with_linked_tiles_run_one_grid(grid_engine):
    """What two linked boards do, minus the UARTs: two :class:`ProtocolEngine` s, each with a
    4 x 4 :class:`MeshTile` (sides E and W joined pin to pin), each loaded over the host
    protocol with its slice of one 8 x 4 program and stepped one subcycle per STEP request by
    its own host process. Each STEP is answered only when the tile has run it (the barrier
    waits for the other chip), and the joined edge outputs equal the 8 x 4 emulator's. The
    same with the tiles' grids on the multiplexed engine (SPEC section 7: a step takes many
    clocks; the tile and the engine wait for ``step_ready``)."""
    from amaranth.hdl import Module, ResetInserter, Signal
    from bitgrid.hdl.host import ProtocolEngine, attach_grid
    from bitgrid.host import (Command, DeviceModel, LoopbackTransport, ProtocolTarget,
                              decode_frame, edge_block_size, unpack_edges)
    from bitgrid.mesh import join_edges, slice_configuration, split_edges

    shape = MeshShape(2, 1)
    config = Configuration.random(8, 4, seed=21)
    rng = random.Random(21)
    inputs = [Edges(rng.getrandbits(8), rng.getrandbits(4), rng.getrandbits(8),
                    rng.getrandbits(4)) for _ in range(6)]
    expected = Emulator(config).run(inputs)
    slices = slice_configuration(config, shape)
    per_chip = {chip: [] for chip in shape.chips()}
    for edges in inputs:
        for chip, chip_edges in split_edges(edges, shape, 4, 4).items():
            per_chip[chip].append(chip_edges)

    m = Module()
    chips = {}
    for chip, links in (((0, 0), "E"), ((1, 0), "W")):
        engine = ProtocolEngine(4, 4)
        tile = MeshTile(4, 4, links=links, engine=grid_engine)
        rst = Signal(name=f"rst_{chip[0]}")
        m.submodules[f"engine_{chip[0]}"] = engine
        m.submodules[f"tile_{chip[0]}"] = ResetInserter(rst)(tile)
        attach_grid(m, engine, tile, rst)               # as HostController does
        m.d.comb += rst.eq(engine.grid_rst)
        chips[chip] = (engine, tile)
    a, b = chips[(0, 0)][1].link["E"].pins, chips[(1, 0)][1].link["W"].pins
    m.d.comb += [b.rx_clk.eq(a.tx_clk), b.rx_data.eq(a.tx_data),
                 a.rx_clk.eq(b.tx_clk), a.rx_data.eq(b.tx_data)]

    outputs = {chip: [] for chip in chips}

    def host(chip):
        engine = chips[chip][0]
        log = []
        transport = LoopbackTransport(DeviceModel(4, 4),
                                      to_device=lambda data: (log.append(bytes(data)), data)[1])
        target = ProtocolTarget(transport, timeout=0.01)
        target.load(slices[chip])
        load = b"".join(log)
        steps = []
        for edges in per_chip[chip]:
            start = len(log)
            target.step(1, edges)
            steps.append(log[start:])

        async def send(ctx, data, limit=20000):
            ctx.set(engine.tx.ready, 1)
            answers = []
            for frame in [data[i:j + 1] for i, j in _frames(data) if j > i]:
                for byte in frame:
                    ctx.set(engine.rx.valid, 1)
                    ctx.set(engine.rx.payload, byte)
                    await ctx.tick()
                ctx.set(engine.rx.valid, 0)
                out = bytearray()
                for _ in range(limit):
                    await ctx.tick()
                    if ctx.get(engine.tx.valid):
                        out.append(ctx.get(engine.tx.payload))
                        if out[-1] == 0:
                            break
                else:
                    raise AssertionError(f"chip {chip}: no answer to {frame.hex()} (subcycle "
                                         f"{ctx.get(chips[chip][1].subcycle)}, aligned "
                                         f"{[ctx.get(getattr(t, 'status_' + t.links.lower()).aligned) for _, t in chips.values()]})")
                await ctx.tick()
                answers.append(bytes(out))
            return answers

        async def process(ctx):
            for answer in await send(ctx, load):
                assert decode_frame(answer[:-1])[0] == 0
            for frames in steps:
                answers = await send(ctx, b"".join(frames))
                status, body = decode_frame(answers[-1][:-1])
                assert status == 0 and body[0] == 0x80 | Command.STEP, body
                outputs[chip].append(unpack_edges(body[-edge_block_size(4, 4):], 4, 4))
        return process

    from amaranth.sim import Simulator
    from support.gateware import CLOCK_PERIOD
    sim = Simulator(m)
    sim.add_clock(CLOCK_PERIOD)
    for chip in chips:
        sim.add_testbench(host(chip))
    sim.run()
    joined = [join_edges({chip: outputs[chip][t] for chip in chips}, shape, 4, 4)
              for t in range(len(inputs))]
    assert joined == expected


def _frames(data):
    """``(start, end)`` of each delimited frame in ``data`` (``end`` is the delimiter; a lone
    delimiter, which a host sends to resynchronise, gives ``start == end``)."""
    spans, start = [], 0
    for i, byte in enumerate(data):
        if byte == 0:
            spans.append((start, i))
            start = i + 1
    return spans
