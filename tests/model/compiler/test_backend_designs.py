"""The compiler back end (``bitgrid.compiler.compile_netlist``, issue 12): netlists compiled and
run by port names (bitgrid.evaluate, with the port map's period, latency and skews), compared
row by row with Netlist.simulate (the independent cycle model), on many rows streamed back to
back: hand-made adders, counters, accumulators and shift registers, then random LUT DAGs
(combinational) and random small state machines (LUT DAGs reading flip-flops that feed back).

Every netlist must compile and match: a netlist that does not route is a failing test. The fast
set holds 50 small random combinational and 30 small sequential netlists (in chunks of 10,
each chunk a few seconds); the slow set 200 combinational and 50 sequential more, larger.
"""

import itertools
import random

import pytest

from bitgrid.compiler import CompileError, compile_netlist
from bitgrid.defects import DefectMap
from bitgrid.evaluate import evaluate
from bitgrid.netlist import CONST0, CONST1, Dff, InputPort, Lut, Netlist, OutputPort
from bitgrid.terms import parse_side


def _rows(netlist, count, rng):
    rows = []
    for _ in range(count):
        row = {}
        for name, port in netlist.inputs.items():
            width = len(port.bits)
            row[name] = (rng.randrange(-(1 << (width - 1)), 1 << (width - 1)) if port.signed
                         else rng.randrange(1 << width))
        rows.append(row)
    return rows


def _check(netlist, rows=None, *, count=120, seed=1, target="emu", **options):
    """Compile, run ``rows`` (or ``count`` random rows) on ``target`` (``emu``: the reference
    emulator; ``fast``: the bit-parallel one), compare with Netlist.simulate."""
    result = compile_netlist(netlist, seed=seed, **options)
    if rows is None:
        rows = _rows(netlist, count, random.Random(seed))
    want = netlist.simulate(rows)
    got = evaluate(result.config, result.portmap, rows, target=target)
    bad = [k for k in range(len(rows)) if want[k] != got[k]]
    assert not bad, (f"{netlist}: {len(bad)} of {len(rows)} rows differ, first row "
                     f"{bad[0]}: inputs {rows[bad[0]]}, expected {want[bad[0]]}, got "
                     f"{got[bad[0]]}; report {result.report}")
    return result


def adder(n):
    inputs = {"a": InputPort(tuple(f"a{i}" for i in range(n))),
              "b": InputPort(tuple(f"b{i}" for i in range(n)))}
    luts, carry, sums = {}, CONST0, []
    for i in range(n):
        luts[f"s{i}"] = Lut((f"a{i}", f"b{i}", carry), 0b10010110)
        luts[f"c{i}"] = Lut((f"a{i}", f"b{i}", carry), 0b11101000)
        carry = f"c{i}"
        sums.append(f"s{i}")
    return Netlist("adder", inputs, {"s": OutputPort(tuple(sums + [carry]))}, luts)


def counter(n, *, init=0, enable=True):
    """q <= q + en (or q + 1), ``init`` the flip-flops' initial value."""
    inputs = {"en": InputPort(("en",))} if enable else {}
    luts, dffs, carry = {}, {}, "en" if enable else CONST1
    for i in range(n):
        luts[f"d{i}"] = Lut((f"q{i}", carry), 0b0110)
        luts[f"k{i}"] = Lut((f"q{i}", carry), 0b1000)
        carry = f"k{i}"
        dffs[f"q{i}"] = Dff(f"d{i}", (init >> i) & 1)
    return Netlist("counter", inputs, {"q": OutputPort(tuple(f"q{i}" for i in range(n)))},
                   luts, dffs)


def accumulator(n):
    inputs = {"a": InputPort(tuple(f"a{i}" for i in range(n)))}
    luts, dffs, carry = {}, {}, CONST0
    for i in range(n):
        luts[f"s{i}"] = Lut((f"a{i}", f"q{i}", carry), 0b10010110)
        luts[f"c{i}"] = Lut((f"a{i}", f"q{i}", carry), 0b11101000)
        carry = f"c{i}"
        dffs[f"q{i}"] = Dff(f"s{i}", 0)
    return Netlist("acc", inputs, {"q": OutputPort(tuple(f"q{i}" for i in range(n)))},
                   luts, dffs)


def random_netlist(rng, *, inputs=5, luts=12, dffs=0, outputs=4, name="random"):
    """A random LUT DAG (LUTs read inputs, earlier LUTs and flip-flops) with random tables;
    flip-flops take random nets with random inits (random small state machines)."""
    ports = {}
    nets = []
    widths = []
    left = inputs
    while left:
        w = min(left, rng.randint(1, 3))
        widths.append(w)
        left -= w
    for p, w in enumerate(widths):
        bits = tuple(f"i{p}_{b}" for b in range(w))
        ports[f"in{p}"] = InputPort(bits, signed=rng.random() < 0.3)
        nets.extend(bits)
    qs = [f"q{k}" for k in range(dffs)]
    nets.extend(qs)
    table = {}
    for k in range(luts):
        arity = rng.randint(1, 4)
        chosen = rng.sample(nets, min(arity, len(nets)))
        table[f"n{k}"] = Lut(tuple(chosen), rng.randrange(1 << (1 << len(chosen))))
        nets.append(f"n{k}")
    regs = {q: Dff(rng.choice(nets[-max(1, luts):]), rng.randint(0, 1)) for q in qs}
    outs = {}
    for o in range(outputs):
        w = rng.randint(1, 3)
        outs[f"out{o}"] = OutputPort(tuple(rng.choice(nets) for _ in range(w)),
                                     signed=rng.random() < 0.3)
    return Netlist(name, ports, outs, table, regs)


# Hand-made designs --------------------------------------------------------------------------
def test_adder_4_exhaustive():
    netlist = adder(4)
    rows = [{"a": a, "b": b} for a in range(16) for b in range(16)]
    result = _check(netlist, rows)
    assert result.portmap.period == 2
    report = result.report
    assert report["cells"]["total"] == report["cells"]["logic"] + report["cells"]["routing"] \
        + report["cells"]["delay"]
    assert report["luts"] == 8


def test_adder_8_random_rows():
    _check(adder(8), count=300)


@pytest.mark.parametrize("init", [0, 5, 15])
def test_counter_with_enable_and_init(init):
    result = _check(counter(4, init=init), count=80)
    assert result.portmap.period % 2 == 0


def test_free_running_counter_starts_at_its_init():
    # q <= q + 1 never rests in its reset state: gated by the start signal.
    netlist = counter(3, init=6, enable=False)
    rows = [{} for _ in range(20)]
    result = _check(netlist, rows)
    got = evaluate(result.config, result.portmap, rows)
    assert [r["q"] for r in got] == [(6 + k) % 8 for k in range(20)]


def test_accumulator():
    _check(accumulator(4), count=100)


def test_shift_register_with_mixed_inits():
    # q0 <= d, q1 <= q0, q2 <= q1 with inits 1, 0, 1: registers without feedback are delays.
    netlist = Netlist("shift", {"d": InputPort(("d",))},
                      {"q": OutputPort(("q0", "q1", "q2"))}, {},
                      {"q0": Dff("d", 1), "q1": Dff("q0", 0), "q2": Dff("q1", 1)})
    rows = [{"d": (k * 7 + 3) % 2} for k in range(30)]
    _check(netlist, rows)


def test_wires_constants_and_unused_inputs():
    netlist = Netlist("wires", {"a": InputPort(("a0", "a1", "a2")), "b": InputPort(("b0",))},
                      {"y": OutputPort(("a2", CONST1, CONST0, "a0", "n")),
                       "z": OutputPort(("n",), signed=True)},
                      {"n": Lut(("a0", "b0", CONST1), 0b01100110)})
    _check(netlist, [{"a": a, "b": b} for a in range(8) for b in range(2)] * 3)


# Random differential tests ------------------------------------------------------------------
def _random_combinational(seed, luts=(4, 16), inputs=(2, 8)):
    """A random LUT DAG of ``inputs`` input bits and ``luts`` LUTs (ranges), from ``seed``."""
    rng = random.Random(seed)
    return random_netlist(rng, inputs=rng.randint(*inputs), luts=rng.randint(*luts),
                          outputs=rng.randint(1, 4), name=f"comb{seed}")


def _random_machine(seed, luts=(3, 10), dffs=(1, 4)):
    """A random small state machine: a LUT DAG over 1 to 4 input bits and the flip-flops,
    the flip-flops fed back from its LUTs (random initial values), from ``seed``."""
    rng = random.Random(100_000 + seed)
    return random_netlist(rng, inputs=rng.randint(1, 4), luts=rng.randint(*luts),
                          dffs=rng.randint(*dffs), name=f"fsm{seed}")


def _all_rows(netlist):
    ranges = []
    for port in netlist.inputs.values():
        w = len(port.bits)
        ranges.append(range(-(1 << (w - 1)), 1 << (w - 1)) if port.signed else range(1 << w))
    return [dict(zip(netlist.inputs, values)) for values in itertools.product(*ranges)]


def _chunks(first, count, size=10):
    """``count`` seeds from ``first`` as parameters of ``size`` seeds each."""
    return [pytest.param(range(s, min(s + size, first + count)), id=f"seeds{s}-{s + size - 1}")
            for s in range(first, first + count, size)]


@pytest.mark.parametrize("seeds", _chunks(0, 50))
def test_random_combinational_fast(seeds):
    """Small random LUT DAGs (2 to 8 input bits, 4 to 16 LUTs): every one compiles and matches
    Netlist.simulate on every input combination, twice over, streamed back to back (the
    bit-parallel emulator; every fifth on the reference emulator)."""
    for seed in seeds:
        netlist = _random_combinational(seed)
        _check(netlist, _all_rows(netlist) * 2, seed=seed,
               target="emu" if seed % 5 == 0 else "fast")


@pytest.mark.parametrize("seeds", _chunks(0, 30))
def test_random_state_machines_fast(seeds):
    """Small random state machines (1 to 4 flip-flops fed back through 3 to 10 LUTs): every
    one compiles, with an even period, and matches Netlist.simulate for 100 cycles of
    random inputs."""
    for seed in seeds:
        netlist = _random_machine(seed)
        result = _check(netlist, count=100, seed=seed, target="fast")
        assert result.portmap.period % 2 == 0 and result.portmap.period >= 2


@pytest.mark.slow
@pytest.mark.parametrize("seeds", _chunks(1000, 200, size=25))
def test_random_combinational(seeds):
    """Larger random LUT DAGs (up to 12 input bits, 8 to 60 LUTs): every one compiles and
    matches Netlist.simulate on every input combination."""
    for seed in seeds:
        netlist = _random_combinational(seed, luts=(8, 60), inputs=(4, 12))
        _check(netlist, _all_rows(netlist), seed=seed, target="fast")


@pytest.mark.slow
@pytest.mark.parametrize("seeds", _chunks(1000, 50, size=25))
def test_random_state_machines(seeds):
    """Larger random state machines (up to 8 flip-flops, 6 to 30 LUTs): every one compiles and
    matches Netlist.simulate for 300 cycles."""
    for seed in seeds:
        netlist = _random_machine(seed, luts=(6, 30), dffs=(2, 8))
        _check(netlist, count=300, seed=seed, target="fast")


# Options ------------------------------------------------------------------------------------
def test_size_too_small_is_a_clear_error():
    # 16-bit adder: 32 input bits; a 4 x 4 grid has 8 input lanes (N and W edges).
    with pytest.raises(CompileError, match=r"has 32 input bits but only 8 input lanes"):
        compile_netlist(adder(16), width=4, height=4)


def test_region_and_defects_are_respected():
    netlist = adder(3)
    defects = DefectMap(20, 20, [{"x": 5, "y": 5, "kind": "dead"},
                                 {"x": 6, "y": 4, "kind": "stuck1", "output": "N"}])
    region = (2, 0, 19, 15)
    result = _check(netlist, width=20, height=20, region=region, defects=defects)
    luts = result.config.luts
    used = {(x, y) for y in range(20) for x in range(20) if luts[y, x].any()}
    assert used
    assert all(2 <= x <= 19 and 0 <= y <= 15 for x, y in used)
    assert not used & {(5, 5), (6, 4)}
    for port in result.portmap.ports:
        for bit in port.bits:
            side = bit.side.letter
            assert (side in "NS" and 2 <= bit.lane <= 19) or (side in "EW" and bit.lane <= 15)
            assert side != "W"          # the region does not touch the west edge


def test_a_pin_off_the_grid_is_a_clear_error():
    with pytest.raises(CompileError, match=r"pins put q\[1\] on lane 16 of side E, which a "
                       r"16 x 16 grid does not have"):
        compile_netlist(counter(2), width=16, height=16,
                        pins={"en": [("W", 1)], "q": [("E", 13), ("E", 16)]})
    # without a size the grid grows to hold the lanes
    result = compile_netlist(counter(2), pins={"en": [("W", 1)], "q": [("E", 13), ("E", 16)]})
    assert result.config.height >= 17


@pytest.mark.parametrize("lane, message", [
    (("Q", 3), r"pins give q\[1\] side 'Q'"), (("E", -1), r"pins give q\[1\] lane -1: a lane "
                                                        r"is a whole number from 0"),
    (("E", 2.7), r"pins give q\[1\] lane 2.7"), (("E", True), r"pins give q\[1\] lane True")])
def test_a_bad_pin_side_or_lane_is_a_clear_error(lane, message):
    with pytest.raises(CompileError, match=message):
        compile_netlist(counter(2), pins={"en": [("W", 1)], "q": [("E", 13), lane]})


def test_pins_keep_lanes():
    netlist = adder(2)
    pins = {"a": [("N", 2), ("N", 6)], "b": [("W", 1), ("W", 5)],
            "s": [("E", 13), ("E", 14), ("S", 15)]}
    result = _check(netlist, [{"a": a, "b": b} for a in range(4) for b in range(4)] * 4,
                    width=16, height=16, pins=pins)
    for name, lanes in pins.items():
        got = [(bit.side, bit.lane) for bit in result.portmap[name].bits]
        assert got == [(parse_side(s), lane) for s, lane in lanes]


# The general back end (fixed pins force it; by default it is a candidate for small state
# machines) ------------------------------------------------------------------------------------
def _general(netlist, rows, **options):
    result = _check(netlist, rows, **options)
    assert result.report["back_end"] == "general"
    return result


def test_start_read_through_flip_flops_by_an_output():
    """``q1 <= 1`` from init 0 is the start signal one row late: row 0 shows 0 (the start
    cell's tag is fixed, so the pin reads it from a buffer cell), and a LUT reading it too."""
    inputs = {"i": InputPort(("i",))}
    luts = {"n": Lut(("q1", "i"), 0b0110)}
    dffs = {"q1": Dff(CONST1, 0), "q2": Dff("q1", 0)}
    netlist = Netlist("late", inputs, {"q": OutputPort(("q1", "q2", "n"))}, luts, dffs)
    rows = [{"i": k % 2} for k in range(12)]
    expected = [{"q": (k >= 1) | (k >= 2) << 1 | ((k >= 1) ^ (k % 2)) << 2}
                for k in range(12)]
    assert netlist.simulate(rows) == expected
    _general(netlist, rows, pins={"i": [("W", 3)], "q": [("E", 2), ("E", 4), ("E", 6)]},
             width=16, height=16)


def test_luts_of_different_levels_share_no_cell():
    """``n1`` and ``n4`` read the same signals, but ``n4`` reads ``n2`` which reads ``n1``:
    one cell computing both would need ``n1`` a wave before itself. The packer keeps them
    apart (this netlist's packing once looped forever in placement)."""
    from bitgrid.compiler.pack import prepare
    inputs = {"a": InputPort(("a0", "a1")), "c": InputPort(("c",))}
    luts = {"n1": Lut(("a0", "a1"), 0b0110), "n2": Lut(("n1", "c"), 0b1000),
            "n4": Lut(("a0", "a1", "n2"), 0b10010110)}
    netlist = Netlist("levels", inputs, {"y": OutputPort(("n4", "n1"))}, luts,
                      {"q": Dff("n4", 1)})
    design = prepare(netlist)
    cell_of = {net: b for b, block in enumerate(design.blocks) for net, *_ in block.luts}
    assert cell_of["n1"] != cell_of["n4"]
    rows = [{"a": a, "c": c} for a in range(4) for c in range(2)] * 3
    _general(netlist, rows, pins={"a": [("W", 2), ("W", 4)], "c": [("N", 3)],
                                  "y": [("E", 3), ("E", 5)]}, width=16, height=16)


def test_luts_of_the_same_inputs_share_a_cell_four_at_a_time():
    """Six LUTs of the same four inputs (a table's output bits) pack four and two to a cell;
    four LUTs whose inputs differ (three signals each, five in all) pack two to a cell at
    most, each cell within four signals."""
    from bitgrid.compiler.pack import prepare
    a = tuple(f"a{i}" for i in range(4))
    luts = {f"t{k}": Lut(a, 0x6996 ^ (0x1111 << k) & 0xFFFF) for k in range(6)}
    netlist = Netlist("table", {"a": InputPort(a)}, {"y": OutputPort(tuple(luts))}, luts, {})
    sizes = sorted(len(b.luts) for b in prepare(netlist).blocks)
    assert sizes == [2, 4]
    sizes = [len(b.luts) for b in prepare(netlist, max_luts_per_cell=1,
                                          same_input_luts_per_cell=1).blocks]
    assert sizes == [1] * 6
    b = tuple(f"b{i}" for i in range(5))
    reads = [(0, 1, 4), (1, 2, 4), (2, 3, 4), (0, 2, 4)]
    luts = {f"u{k}": Lut(tuple(b[i] for i in r), 0x96 ^ (1 << k)) for k, r in enumerate(reads)}
    netlist = Netlist("mixed", {"b": InputPort(b)}, {"y": OutputPort(tuple(luts))}, luts, {})
    blocks = prepare(netlist).blocks
    assert max(len(block.luts) for block in blocks) == 2
    assert all(len(block.inputs) <= 4 for block in blocks)
    assert sum(len(block.luts) for block in blocks) == 4


@pytest.mark.parametrize("seeds", _chunks(2000, 20))
def test_general_back_end_on_random_state_machines(seeds):
    """Random small state machines on the general back end alone (pins on fixed lanes), 100
    cycles each against Netlist.simulate: a machine it cannot route is a clear
    CompileError, never a wrong row."""
    for seed in seeds:
        netlist = _random_machine(seed)
        pins, lanes = {}, {"W": 1, "E": 1}
        for name, port in [*netlist.inputs.items(), *netlist.outputs.items()]:
            side = "W" if name in netlist.inputs else "E"
            pins[name] = [(side, lanes[side] + k) for k in range(len(port.bits))]
            lanes[side] += len(port.bits)
        try:
            _general(netlist, None, count=100, seed=seed, target="fast", pins=pins,
                     width=24, height=24)
        except CompileError as error:
            assert "grid" in str(error)


def test_logic_levels_are_longest_paths_and_loops_are_refused():
    from bitgrid.compiler.pack import logic_levels
    preds = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["c", "a"], "e": []}
    assert logic_levels(preds) == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 0}
    # siblings pushed before they are reached are not a loop
    assert logic_levels({"x": ["p", "q"], "q": ["p"], "p": []}) == {"p": 0, "q": 1, "x": 2}
    with pytest.raises(ValueError, match="loop"):
        logic_levels({"a": ["c"], "b": ["a"], "c": ["b"]})
    with pytest.raises(ValueError, match="loop"):
        logic_levels({"a": ["a"]})
