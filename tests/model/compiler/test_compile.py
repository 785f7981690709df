"""The whole compiler, end to end (issue 12): each test design
(:data:`bitgrid.compiler.designs.TEST_DESIGNS`) compiled into a program and run by port names
(bitgrid.evaluate) against its independent Python model (tests/support/design_models.py),
exhaustively where the inputs have at most 16 bits and on 10,000 random rows otherwise; random
expressions and random state machines compiled through Yosys and run against Python; every
test design on the RTL grid (Icarus) and on a 2 x 2 mesh, one simulator batch per grid size;
the command line and the Python API on all three front ends.

The list of designs under test is TEST_DESIGNS itself: a design that does not compile is a
failing test. The fast set runs the small designs of :data:`FAST` (each compiles in a second
or two); the slow set (``make test-slow``) every other test design, the larger random batches,
and the RTL and mesh runs of every design (one test per design: each has its own grid size,
so its own simulator build).
"""

import json
import random

import pytest
from click.testing import CliRunner

import bitgrid
from bitgrid import bitstream, ports
from bitgrid.cli import main
from bitgrid.compiler import CompileError, compile_netlist, designs, synthesize
from bitgrid.compiler.expr import expression_design
from bitgrid.compiler.backend import _compile_sweep
from bitgrid.evaluate import edge_inputs, evaluate, sample
from support.design_models import (BLOCK_DESIGNS, eval_expression, input_bits,
                                   machines_design, machines_rows, model_rows,
                                   random_expression, rows_for, run_rows, run_streams,
                                   split_rows)

#: Sequential designs: a reset in 0.3% of the cycles and the counter enabled in 90%, so that
#: counters and accumulators run far enough to wrap around between resets.
RARE_RESET = {"rst": 0.003, "en": 0.9}
#: Sequential designs run their 10,000 cycles as this many independent runs from reset, side by
#: side (625 cycles each).
STREAMS = 16

#: Tops of the test designs in the fast set (the others are in the slow set).
FAST = ("mul2u", "mul2s", "popcount8", "crc8", "cmp8s", "counter8")
#: Test designs whose program does not fit a 64 x 64 grid (docs/compiler.md says why).
TOO_LARGE_FOR_64 = ("alu",)


def _top(case):
    name, params = case
    return designs.design(name, **params).top


def _cases():
    return [pytest.param(case, id=_top(case),
                         marks=() if _top(case) in FAST else (pytest.mark.slow,))
            for case in designs.TEST_DESIGNS]


def test_fast_designs_are_test_designs():
    """Every name of FAST is the top of a test design (a renamed design fails here, not by
    silently moving to the slow set), and the fast set is a strict part of them."""
    tops = [_top(case) for case in designs.TEST_DESIGNS]
    assert len(set(tops)) == len(tops) == len(designs.TEST_DESIGNS)
    assert set(FAST) < set(tops)


@pytest.fixture(scope="session")
def compiled(synthesized):
    """``compiled(name, blocks=True, **params) -> (Design, SynthesisResult, CompileResult)``,
    cached: what ``bitgrid compile`` makes (the arithmetic block where the design is one
    operation), or with ``blocks=False`` the best LUT mapping (the sweep)."""
    cache = {}

    def get(name, blocks=True, **params):
        key = (name, blocks, tuple(sorted(params.items())))
        if key not in cache:
            design, synthesis = synthesized(name, **params)
            cache[key] = design, synthesis, compile_netlist(
                synthesis.netlist, alternatives=synthesis.alternatives, seed=1,
                operation=synthesis.operation if blocks else None)
        return cache[key]
    return get


def _sweep_cases():
    return [pytest.param(case, id=_top(case), marks=pytest.mark.slow)
            for case in designs.TEST_DESIGNS if _top(case) in BLOCK_DESIGNS]


@pytest.mark.parametrize("case", _sweep_cases())
def test_block_design_lut_mappings_on_the_emulator(compiled, case):
    """The LUT mappings (the sweep) of the designs the library has a block for, against the
    model as in :func:`test_design_on_the_emulator`."""
    _run_design(compiled, case, blocks=False)


@pytest.mark.parametrize("case", _cases())
def test_design_on_the_emulator(compiled, case):
    """The program of a test design, on the bit-parallel emulator: every input combination
    where the inputs have at most 16 bits (combinational designs), else 10,000 random rows
    (sequential designs: 10,000 random cycles, as 16 runs of 625 from reset), against the
    model; the first 48 rows also on the reference emulator; ports keep their names, widths
    and signedness; a combinational design is fully pipelined (period 2)."""
    design, synthesis, result = _run_design(compiled, case)
    if design.top in BLOCK_DESIGNS:         # a candidate; kept unless a LUT mapping is smaller
        assert "blocks" in {c["mapping"] for c in result.report["candidates"]}
        assert result.report["back_end"] == "blocks" or design.top in ("mul2u", "mul2s")
    # the largest direct grid a supported board holds (ULX3S-85F), but for the designs the
    # benchmark names (docs/compiler.md: the sweep lays the ALU out on 140 x 59)
    fits = result.config.width <= 64 and result.config.height <= 64
    assert fits == (design.top not in TOO_LARGE_FOR_64), (design.top, result.report["grid"])


def _run_design(compiled, case, blocks=True):
    """Compile ``case`` and run it against the model (see :func:`test_design_on_the_emulator`);
    returns ``(design, synthesis, result)``."""
    name, params = case
    design, synthesis, result = compiled(name, blocks=blocks, **params)
    netlist = synthesis.netlist
    rows = rows_for(netlist, count=10_000, weights=RARE_RESET)
    if design.sequential or input_bits(netlist) > 16:
        assert len(rows) == 10_000
    else:
        assert len(rows) == 1 << input_bits(netlist)
    if design.sequential:
        chunks = split_rows(rows, STREAMS)
        expected = [out for chunk in chunks for out in model_rows(name, params, chunk)]
        got = [out for run in run_streams(result.config, result.portmap, chunks)
               for out in run]
    else:
        expected = model_rows(name, params, rows)
        got = run_rows(result.config, result.portmap, rows)
    bad = [k for k in range(len(rows)) if got[k] != expected[k]]
    assert not bad, (f"{design.top}: {len(bad)} of {len(rows)} rows differ; first, row "
                     f"{bad[0]}: inputs {rows[bad[0]]}, expected {expected[bad[0]]}, got "
                     f"{got[bad[0]]}")
    assert evaluate(result.config, result.portmap, rows[:48], target="emu") == expected[:48]
    portmap = result.portmap
    assert {p.name: (p.width, p.signed) for p in portmap.inputs} == \
        {k: (len(v.bits), v.signed) for k, v in netlist.inputs.items()}
    assert {p.name: (p.width, p.signed) for p in portmap.outputs} == \
        {k: (len(v.bits), v.signed) for k, v in netlist.outputs.items()}
    if design.sequential:
        assert portmap.period % 2 == 0
    else:
        assert portmap.period == 2      # fully pipelined: a new row every full cycle
    return design, synthesis, result


def _round_up(value, quantum):
    return -(-value // quantum) * quantum


def _rtl_batch(compiled, cases, rows_each, *, mesh, fixed=False):
    """Every case's program on the RTL grid in Icarus (``mesh`` false) or on a 2 x 2 mesh of
    them (``mesh`` true), its outputs decoded by port names and compared with the model.

    Each program keeps the grid it was compiled for, except that for the mesh a side that is
    not a multiple of 4 (a 2 x 2 mesh needs even tiles) is recompiled on the next one; the
    simulator runs one batch (one build, one process) per grid size. Also checks that the
    simulated grid agrees with the reference emulator on every subcycle."""
    from bitgrid.sim import make_case, run_cases
    from bitgrid.sim.mesh import run_mesh_cases
    jobs, sim_cases = [], []
    for name, params in cases:
        design, synthesis, result = compiled(name, **params)
        if mesh:
            width = _round_up(result.config.width, 4)
            height = _round_up(result.config.height, 4)
            if (width, height) != (result.config.width, result.config.height):
                result = compile_netlist(synthesis.netlist, width=width, height=height,
                                         alternatives=synthesis.alternatives, seed=1,
                                         operation=synthesis.operation)
        rows = rows_for(synthesis.netlist, count=rows_each, exhaustive_limit=0,
                        weights=RARE_RESET)
        jobs.append((design, name, params, result.portmap, rows))
        sim_cases.append(make_case(result.config, edge_inputs(result.portmap, rows),
                                   name=design.name))
    runs = run_mesh_cases(sim_cases, "2x2", quiet=True, fixed=fixed,
                          lanes=MESH_FIXED_LANES if fixed else 1) if mesh else \
        run_cases(sim_cases, quiet=True, fixed=fixed)
    for (design, name, params, portmap, rows), run in zip(jobs, runs):
        assert not run.emulator_mismatches, (design.top, run.emulator_mismatches[:3])
        assert sample(portmap, run.outputs, len(rows)) == model_rows(name, params, rows), \
            design.top


def test_icarus_batch_small(compiled):
    """The 2 x 2 multiplier on the RTL grid in Icarus, decoded by port names (one small
    build in the fast set)."""
    _rtl_batch(compiled, [("multiplier", {"n": 2, "signed": False})], 24, mesh=False)


#: Every test design runs in the slow set on the RTL grid in Icarus, and some on a 2 x 2 mesh of
#: RTL grids (:data:`MESH_DESIGNS`); ``mul2u`` on Icarus in the fast set
#: (:func:`test_icarus_batch_small`).
#:
#: The programs up to 50 x 26 cells (every one but the ALU's: the arithmetic designs compile to
#: library blocks of at most 24 x 24) are loaded through the grid's configuration port
#: (:data:`RTL_DESIGNS`). The ALU's (140 x 59) is compiled into the gateware (a
#: fixed-configuration build, SPEC section 7: present from power-up, read back, then run;
#: :data:`FIXED_RTL_DESIGNS`): a load takes about ``16 * height * (4 + width / 2)`` clocks
#: (the frame CRC takes a byte a clock), each clock costing Icarus about 0.7 us a cell, so it
#: grows with the square of the grid. Measured 2026-12-02 on the 2-core machine with the
#: other core busy, before the blocks: through the port 5 to 31 s per design; fixed alu 219 s
#: (each with its synthesis, compile, Verilog and simulator build).
RTL_DESIGNS = ("mul2s", "mul3u", "mul3s", "mul4u", "mul4s", "mul5u", "mul5s", "mul6u",
               "mul6s", "mul7u", "mul7s", "mul8u", "mul8s", "add8", "add16", "cmp8u", "cmp8s",
               "popcount8", "popcount16", "parity16", "crc8", "barrel8", "counter8", "acc8",
               "detector")
FIXED_RTL_DESIGNS = ("alu",)
#: The test designs that also run on a 2 x 2 mesh: one of each kind (signed and unsigned
#: multipliers, adder, comparator, popcount, CRC, barrel shifter, and every sequential one).
#: The mesh's contract (SPEC section 8) does not depend on the program, and every design runs
#: on the single RTL grid above; a mesh run took 15 to 48 s per design, the ALU's (168 x 44,
#: latency 201 subcycles, each step waiting for every link's frame) 500 s (2026-12-07, 2-core
#: machine, the other core busy). ``mul8s`` is compiled into the tiles' gateware
#: (:data:`FIXED_MESH_DESIGNS`), so the mesh's fixed-configuration path keeps a test.
MESH_DESIGNS = ("mul3s", "mul4u", "mul8s", "add16", "cmp8s", "popcount16", "crc8", "barrel8",
                "counter8", "acc8", "detector")
FIXED_MESH_DESIGNS = ("mul8s",)
#: Lanes per link direction of the meshes that run the larger programs: a step waits for
#: every link's frame of boundary lanes, about 90 clocks over one lane and 36 over eight
#: (mul4u's 36 x 36 mesh, measured).
MESH_FIXED_LANES = 8


def _slow_cases(tops):
    return [pytest.param(case, id=_top(case)) for case in designs.TEST_DESIGNS
            if _top(case) in tops]


def test_rtl_designs_are_test_designs():
    """Every test design is on an RTL simulator once (through the port, compiled into the
    gateware, or ``mul2u`` in the fast set), and the lists name nothing else."""
    tops = {_top(case) for case in designs.TEST_DESIGNS}
    assert len(RTL_DESIGNS) + len(FIXED_RTL_DESIGNS) + 1 == len(tops)
    assert set(RTL_DESIGNS) | set(FIXED_RTL_DESIGNS) | {"mul2u"} == tops
    assert set(FIXED_MESH_DESIGNS) < set(MESH_DESIGNS) < tops
    assert {_top(case) for case in designs.TEST_DESIGNS
            if designs.design(case[0], **case[1]).sequential} <= set(MESH_DESIGNS)


@pytest.mark.slow
@pytest.mark.parametrize("case", _slow_cases(RTL_DESIGNS))
def test_design_on_icarus(compiled, case):
    """Test designs on the RTL grid in Icarus (:data:`RTL_DESIGNS`): 16 rows (cycles), 8 for
    a sequential one (its period is many subcycles). One design a test: each has a grid size
    of its own, so this is one simulator batch (one build, one process) per grid size."""
    _rtl_batch(compiled, [case], 8 if designs.design(case[0], **case[1]).sequential else 16,
               mesh=False)


@pytest.mark.slow
@pytest.mark.parametrize("case", _slow_cases(FIXED_RTL_DESIGNS))
def test_large_design_on_icarus(compiled, case):
    """The larger test designs on the RTL grid in Icarus (:data:`FIXED_RTL_DESIGNS`), each
    program compiled into the gateware (a fixed-configuration build, SPEC section 7), read
    back and run: 16 rows (cycles), 8 for a sequential one."""
    _rtl_batch(compiled, [case], 8 if designs.design(case[0], **case[1]).sequential else 16,
               mesh=False, fixed=True)


@pytest.mark.slow
@pytest.mark.parametrize("case", _slow_cases(MESH_DESIGNS))
def test_design_on_a_2x2_mesh(compiled, case):
    """The test designs of :data:`MESH_DESIGNS` on a 2 x 2 mesh of RTL grids (Icarus): 8 rows
    (cycles), 4 for a sequential one. The programs of :data:`FIXED_MESH_DESIGNS` are compiled
    into the tiles' gateware (each tile its slice) and their links have
    :data:`MESH_FIXED_LANES` lanes; the others are loaded through the four tiles'
    configuration ports, over one-lane links."""
    _rtl_batch(compiled, [case], 4 if designs.design(case[0], **case[1]).sequential else 8,
               mesh=True, fixed=_top(case) in FIXED_MESH_DESIGNS)


# --- Random differential runs through Yosys -------------------------------------------------

def _expression_batch(tmp_path, seed, designs_, per_design):
    """``designs_`` programs of ``per_design`` random expressions each (over a:3, b:s3, c:2,
    so 256 input combinations), compiled through Yosys; every one must compile, and match
    Python's own evaluation of the expressions on every input combination."""
    rng = random.Random(seed)
    for d in range(designs_):
        text = "; ".join(f"p{i} = {random_expression(rng, ['a', 'b', 'c'], 2, ['c'])}"
                         for i in range(per_design))
        text += "; used = a + b + c"
        top = f"r{seed}_{d}"
        _, verilog = expression_design(text, "a:3,b:s3,c:2", top=top)
        path = tmp_path / f"{top}.v"
        path.write_text(verilog)
        synthesis = synthesize(path, top=top)
        rows = rows_for(synthesis.netlist)
        assert len(rows) == 256
        expected = [eval_expression(text, row) for row in rows]
        # every mapping of the front end, each compiled on its own
        for mapping in (synthesis.netlist, *synthesis.alternatives.values()):
            result = compile_netlist(mapping, seed=d)
            got = run_rows(result.config, result.portmap, rows)
            assert got == expected, text
            assert result.portmap.period == 2


def _machine_batch(tmp_path, seed, designs_, machines, cycles):
    """``designs_`` designs of ``machines`` random state machines each (2 to 7 states, a 2-bit
    input, Moore and Mealy outputs), compiled through Yosys; every one must compile, and
    match the machines' tables for ``cycles`` cycles of random inputs (a reset in 5%)."""
    rng = random.Random(seed)
    for d in range(designs_):
        top = f"g{seed}_{d}"
        group, text = machines_design(rng, machines, top=top)
        path = tmp_path / f"{top}.v"
        path.write_text(text)
        synthesis = synthesize(path, top=top)
        rows = rows_for(synthesis.netlist, count=cycles, seed=d, weights={"rst": 0.05})
        expected = machines_rows(group, rows)
        # every mapping of the front end, each compiled on its own (the LUT4 one also by
        # the general back end where it is small enough)
        for mapping in (synthesis.netlist, *synthesis.alternatives.values()):
            result = compile_netlist(mapping, seed=d)
            assert evaluate(result.config, result.portmap, rows, target="fast") == \
                expected, text
            assert result.portmap.period % 2 == 0


def test_random_expressions_fast(tmp_path):
    _expression_batch(tmp_path, 7, 1, 3)


def test_random_state_machines_fast(tmp_path):
    _machine_batch(tmp_path, 8, 1, 2, 100)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [21, 22])
def test_random_expressions_compiled(tmp_path, seed):
    _expression_batch(tmp_path, seed, 5, 3)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [31])
def test_random_state_machines_compiled(tmp_path, seed):
    _machine_batch(tmp_path, seed, 4, 2, 500)


# --- Options -------------------------------------------------------------------------------

def test_size_region_and_defects(synthesized):
    from bitgrid.defects import Defect, DefectMap
    _, synthesis = synthesized("adder", n=2)
    netlist = synthesis.netlist
    rows = rows_for(netlist)
    expected = model_rows("adder", {"n": 2}, rows)
    free = compile_netlist(netlist, seed=1)
    # A region along the west side of a larger grid (its ports on the grid's edge lanes
    # there: inputs enter by N and W, outputs leave by S), sized for the sweep's layout (the
    # general back end's, smaller, is not tried in a region): no cell outside it is
    # configured.
    sweep = _compile_sweep(netlist, None, None, None, None, None)
    x0, y0, x1, y1 = sweep.report["bounding_box"]
    width, height = sweep.config.width + 8, sweep.config.height + 8
    region = (0, 0, x1 - x0 + 3, height - 1)
    boxed = compile_netlist(netlist, width=width, height=height, region=region, seed=1)
    assert (boxed.config.width, boxed.config.height) == (width, height)
    luts = boxed.config.luts
    for y in range(height):
        for x in range(width):
            if not (region[0] <= x <= region[2] and region[1] <= y <= region[3]):
                assert not luts[y, x].any(), (x, y)
    assert evaluate(boxed.config, boxed.portmap, rows, target="fast") == expected
    # Defects: the listed cells stay unconfigured and the program still works.
    used = [(x, y) for y in range(free.config.height) for x in range(free.config.width)
            if free.config.luts[y, x].any()]
    bad = used[3::7][:6]         # cells of the free layout, spread over it
    defects = DefectMap(free.config.width + 4, free.config.height + 4,
                        [Defect(x, y, "dead") for x, y in bad])
    avoided = compile_netlist(netlist, width=defects.width, height=defects.height,
                              defects=defects, seed=1)
    for x, y in bad:
        assert not avoided.config.luts[y, x].any()
    assert evaluate(avoided.config, avoided.portmap, rows, target="fast") == expected


def test_does_not_fit(synthesized):
    _, synthesis = synthesized("multiplier", n=8, signed=False)
    with pytest.raises(CompileError, match="(?i)size|fit|cells|lanes"):
        compile_netlist(synthesis.netlist, width=4, height=4)


# --- Command line and Python API, all three front ends ------------------------------------

def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _eval_csv(tmp_path, folder, top, rows):
    header = list(rows[0])
    csv = tmp_path / f"{top}.csv"
    csv.write_text(",".join(header) + "\n" + "".join(
        ",".join(str(r[k]) for k in header) + "\n" for r in rows))
    result = invoke("eval", folder / f"{top}.bgbs", "--ports", folder / f"{top}.ports.json",
                    "--csv", csv)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    names = lines[0].split(",")
    return [dict(zip(names, map(int, line.split(",")))) for line in lines[1:]]


def test_cli_expr_then_eval(tmp_path):
    out = tmp_path / "mul"
    result = invoke("compile", "--expr", "p = a * b", "--vars", "a:2,b:s2", "-o", out)
    assert result.exit_code == 0, result.output
    assert "expr:" in result.stdout and "period 2" in result.stdout
    report = json.loads((out / "expr.report.json").read_text())
    assert report["front_end"] == "expr" and report["top"] == "expr"
    assert report["period"] == 2 and report["yosys"]["luts"] > 0
    assert set(report["times"]) >= {"synthesis", "parse"}
    assert report["cells"]["total"] == (report["cells"]["logic"] + report["cells"]["routing"]
                                        + report["cells"]["delay"])
    portmap = ports.load(out / "expr.ports.json")
    assert bitstream.load(out / "expr.bgbs").width == portmap.width == report["grid"][0]
    rows = [{"a": a, "b": b} for a in range(4) for b in range(-2, 2)]
    assert _eval_csv(tmp_path, out, "expr", rows) == [{"p": r["a"] * r["b"]} for r in rows]


COUNTER = """module counter(input clk, input en, output reg [3:0] count);
  initial count = 4'd9;
  always @(posedge clk) if (en) count <= count + 1'b1;
endmodule
"""


def test_cli_verilog_then_eval(tmp_path):
    source = tmp_path / "counter.v"
    source.write_text(COUNTER)
    result = invoke("compile", source, "--top", "counter", "-o", tmp_path / "c", "--seed", 2)
    assert result.exit_code == 0, result.output
    rows = [{"en": e} for e in (1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1)]
    count, expected = 9, []
    for row in rows:
        expected.append({"count": count})
        count = (count + row["en"]) % 16
    assert _eval_csv(tmp_path, tmp_path / "c", "counter", rows) == expected
    report = json.loads((tmp_path / "c" / "counter.report.json").read_text())
    assert report["clock"] == "clk" and report["front_end"] == "verilog"


AMARANTH = """
from amaranth import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class MulAdd(wiring.Component):
    def __init__(self, width=4):
        super().__init__({"a": In(signed(width)), "b": In(width), "c": In(width),
                          "y": Out(signed(2 * width + 2))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self.a + self.b + self.c)
        return m
"""


def test_cli_amaranth_then_eval(tmp_path, monkeypatch):
    (tmp_path / "muladd_design.py").write_text(AMARANTH)
    monkeypatch.chdir(tmp_path)
    result = invoke("compile", "--amaranth", "muladd_design:MulAdd(width=2)", "-o", "am")
    assert result.exit_code == 0, result.output
    rows = [{"a": a, "b": b, "c": c} for a in range(-2, 2) for b in range(4) for c in (0, 3)]
    assert _eval_csv(tmp_path, tmp_path / "am", "MulAdd", rows) == \
        [{"y": r["a"] + r["b"] + r["c"]} for r in rows]


def test_python_api_all_front_ends(tmp_path):
    from amaranth import Elaboratable, Module, Signal
    rows = [{"a": a, "b": b} for a in range(4) for b in range(4)]
    by_expr = bitgrid.compile(expr="y = a ^ b", vars="a:2,b:2")
    source = tmp_path / "x.v"
    source.write_text("module x(input [1:0] a, input [1:0] b, output [1:0] y);\n"
                      "  assign y = a ^ b;\nendmodule\n")
    by_verilog = bitgrid.compile(source, top="x")

    class Xor(Elaboratable):
        def __init__(self):
            self.a, self.b, self.y = Signal(2), Signal(2), Signal(2)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.y.eq(self.a ^ self.b)
            return m
    by_amaranth = bitgrid.compile(Xor())
    assert by_amaranth.report["top"] == "Xor"
    for result in (by_expr, by_verilog, by_amaranth):
        assert evaluate(result.config, result.portmap, rows) == \
            [{"y": r["a"] ^ r["b"]} for r in rows]


def test_cli_does_not_fit(tmp_path):
    result = invoke("compile", "--expr", "p = a * b", "--vars", "a:8,b:8", "--size", "4x4",
                    "-o", tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
