"""The sweep back end's own properties (bitgrid.compiler.sweep, strip; issue 12): the same
program whatever the process's string hashing, feedback loops of exactly one period, and
layouts moved around defects and into regions, every result checked against
Netlist.simulate on the reference emulator."""

import os
import random
import subprocess
import sys

from bitgrid.compiler.backend import _compile_sweep, compile_netlist
from bitgrid.defects import Defect, DefectMap
from bitgrid.evaluate import evaluate
from bitgrid.netlist import Dff, InputPort, Lut, Netlist, OutputPort

_PROGRAM = """
import hashlib, sys
sys.path.insert(0, {here!r})
from test_sweep import ring
from bitgrid.compiler.backend import compile_netlist
r = compile_netlist(ring(5))
print(hashlib.sha256(r.config.luts.tobytes()).hexdigest(), r.portmap.period)
"""


def ring(n):
    """A twisted ring counter of ``n`` flip-flops with mixed initial values and an enable,
    plus a combinational output: feedback, inits 0 and 1, a register read by logic."""
    inputs = {"en": InputPort(("en",)), "x": InputPort(("x0", "x1"))}
    luts, dffs = {}, {}
    for i in range(n):
        prev = f"q{(i - 1) % n}"
        # q_i <= en ? (i == 0 ? ~q_{n-1} : q_{i-1}) : q_i
        luts[f"d{i}"] = Lut(("en", prev, f"q{i}"), 0b01110010 if i == 0 else 0b11100100)
        dffs[f"q{i}"] = Dff(f"d{i}", i % 2)
    luts["y"] = Lut(("q0", "x0", "x1"), 0b10010110)
    outputs = {"q": OutputPort(tuple(f"q{i}" for i in range(n))), "y": OutputPort(("y",))}
    return Netlist("ring", inputs, outputs, luts, dffs)


def _rows(count, seed):
    rng = random.Random(seed)
    return [{"en": int(rng.random() < 0.7), "x": rng.randrange(4)} for _ in range(count)]


def _check(netlist, result, rows):
    assert evaluate(result.config, result.portmap, rows) == netlist.simulate(rows)


def test_the_same_program_whatever_the_hash_seed():
    here = os.path.dirname(os.path.abspath(__file__))
    seen = set()
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", _PROGRAM.format(here=here)], env=env,
                             capture_output=True, text=True, check=True).stdout
        seen.add(out.strip())
    assert len(seen) == 1, seen


def _sweep(netlist):
    """The sweep's program (``compile_netlist`` keeps the general back end's where that is
    smaller, as on small rings)."""
    return _compile_sweep(netlist, None, None, None, None, None)


def test_feedback_loops_take_one_period():
    netlist = ring(5)
    result = _sweep(netlist)
    assert result.report["back_end"] == "sweep"
    assert result.portmap.period > 2 and result.portmap.period % 2 == 0
    _check(netlist, result, _rows(120, 1))


def test_around_random_defects():
    netlist = ring(4)
    free = _sweep(netlist)
    width, height = free.config.width + 6, free.config.height + 6
    rng = random.Random(7)
    # defects among the cells of the strip (not the margin rows of the feedback returns above
    # it: those the layout cannot always avoid)
    top = free.report["margin_rows"] + 2
    used = sorted((x, y) for y in range(free.config.height) for x in range(free.config.width)
                  if free.config.luts[y, x].any() and y >= top)
    bad = rng.sample(used, 4)
    defects = DefectMap(width, height, [Defect(x, y, "dead") for x, y in bad])
    result = compile_netlist(netlist, width=width, height=height, defects=defects)
    for x, y in bad:
        assert not result.config.luts[y, x].any(), (x, y)
    _check(netlist, result, _rows(100, 2))


def test_combinational_layout_in_a_region_off_the_west_edge():
    # an adder in the east part of a grid: no W lanes, so its inputs come down from the N
    # edge; nothing outside the region is configured
    n = 3
    inputs = {"a": InputPort(tuple(f"a{i}" for i in range(n))),
              "b": InputPort(tuple(f"b{i}" for i in range(n)))}
    luts, carry, sums = {}, None, []
    for i in range(n):
        ins = (f"a{i}", f"b{i}") + ((carry,) if carry else ())
        luts[f"s{i}"] = Lut(ins, 0b10010110 if carry else 0b0110)
        luts[f"c{i}"] = Lut(ins, 0b11101000 if carry else 0b1000)
        carry = f"c{i}"
        sums.append(f"s{i}")
    netlist = Netlist("add", inputs, {"s": OutputPort(tuple(sums + [carry]))}, luts)
    free = compile_netlist(netlist)
    width, height = 2 * free.config.width + 24, free.config.height + 4
    region = (12, 0, width - 1, height - 1)
    result = compile_netlist(netlist, width=width, height=height, region=region)
    luts = result.config.luts
    outside = [(x, y) for y in range(height) for x in range(width)
               if luts[y, x].any() and not region[0] <= x <= region[2]]
    assert not outside
    rows = [{"a": a, "b": b} for a in range(8) for b in range(8)]
    _check(netlist, result, rows)


# The cone order and lazy inputs (the ALU's slices in order) ---------------------------------
#: y0 = a0 & a1 & a2 & a3 (a chain of three gates, a cone of 4 sources), y1 = a1 ^ b1,
#: y2 = a2 ^ b2 (cones of 2).
_SLICES = {"g0": (("a0", "a1"), 0b1000), "g1": (("g0", "a2"), 0b1000),
           "y0": (("g1", "a3"), 0b1000), "y1": (("a1", "b1"), 0b0110),
           "y2": (("a2", "b2"), 0b0110)}
_SLICE_OUTPUTS = [("y", 0, "y0"), ("y", 1, "y1"), ("y", 2, "y2")]
_SLICE_SOURCES = ["a0", "a1", "a2", "a3", "b1", "b2"]


def test_cone_order_walks_the_outputs_of_fewest_sources_first():
    from bitgrid.compiler.sweep import _Sweep
    sweep = _Sweep(_SLICES, _SLICE_OUTPUTS, _SLICE_SOURCES, [], 8)
    # worked by hand: y1's cone (a1, b1), then y2's (a2, b2), then the rest of y0's
    assert sweep._dfs_order(_SLICE_OUTPUTS, [], by_cone=True) == \
        {"a1": 0, "b1": 1, "a2": 2, "b2": 3, "a0": 4, "a3": 5}
    # the plain walk takes the outputs in port order: y0's cone first
    assert sweep._dfs_order(_SLICE_OUTPUTS, []) == \
        {"a0": 0, "a1": 1, "a2": 2, "a3": 3, "b1": 4, "b2": 5}


def test_lazy_inputs_enter_no_earlier_and_the_layout_is_exact(monkeypatch):
    from bitgrid.compiler import sweep as sweep_module
    from bitgrid.compiler.sweep import _Sweep
    columns = {}
    for lazy in (False, True):
        sweep = _Sweep(_SLICES, _SLICE_OUTPUTS, _SLICE_SOURCES, [], 8, order="cone", lazy=lazy)
        sweep.run(limit=200)
        columns[lazy] = sweep.injected
    assert set(columns[True]) == set(columns[False]) == set(_SLICE_SOURCES)
    assert all(columns[True][s] >= columns[False][s] for s in _SLICE_SOURCES)
    for lazy in (False, True):          # in the cone order, one a column at most
        assert sorted(_SLICE_SOURCES, key=columns[lazy].get) == \
            ["a1", "b1", "a2", "b2", "a0", "a3"]
        assert len(set(columns[lazy].values())) == len(_SLICE_SOURCES)
    assert columns[True] != columns[False]
    # the lazy mode alone, on a design with feedback and on the ALU-like slices
    monkeypatch.setattr(sweep_module, "MODES", (("N", "cone", 1, True, True),))
    netlist = ring(5)
    _check(netlist, compile_netlist(netlist), _rows(120, 3))
    luts = {net: Lut(ins, table) for net, (ins, table) in _SLICES.items()}
    slices = Netlist("slices", {"a": InputPort(("a0", "a1", "a2", "a3")),
                                "b": InputPort(("b1", "b2"))},
                     {"y": OutputPort(("y0", "y1", "y2"))}, luts, {})
    result = compile_netlist(slices)
    rows = [{"a": a, "b": b} for a in range(16) for b in range(4)]
    assert evaluate(result.config, result.portmap, rows) == slices.simulate(rows)
