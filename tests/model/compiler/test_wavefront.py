"""The wavefront back end (bitgrid.compiler.wavefront, gates): 2-input decomposition checked
exhaustively against the LUT tables; compiled programs run on the emulator, rows streamed back
to back, against Netlist.simulate (exhaustive where the inputs are at most 12 bits) and the
designs' independent Python models."""

import random

import pytest

from bitgrid.compiler import CompileError
from bitgrid.compiler.gates import CONST, GateDag, decompose
from bitgrid.compiler.wavefront import compile_wavefront
from bitgrid.evaluate import evaluate
from bitgrid.netlist import CONST0, CONST1, Dff, InputPort, Lut, Netlist, OutputPort
from support.design_models import model_rows, rows_for


def _value(dag, literal, values):
    node, neg = literal
    if node == CONST:
        return neg
    return dag.evaluate(node, values, {}) ^ neg


def _check_table(table, n):
    cost, expr = decompose(table, n)
    dag = GateDag()
    literals = [(dag.new_input("x", i), 0) for i in range(n)]
    literal = dag.build(expr, literals)
    for address in range(1 << n):
        values = {literals[i][0]: address >> i & 1 for i in range(n)}
        assert _value(dag, literal, values) == table >> address & 1, (n, hex(table), address)
    assert len(dag.gates) <= cost
    return cost


def test_decompose_every_table_up_to_3_inputs():
    for n in range(4):
        for table in range(1 << (1 << n)):
            _check_table(table, n)
    # known minima: a 2-input gate is one cell function; XOR3 and MAJ3 need 2 and 4 gates
    assert decompose(0x96, 3)[0] == 2
    assert decompose(0xE8, 3)[0] == 4


def test_decompose_random_4_input_tables():
    rng = random.Random(12)
    for table in [0x6996, 0x8000, 0xFFFE, 0xCAFE] + [rng.randrange(1 << 16) for _ in range(150)]:
        _check_table(table, 4)
    assert decompose(0x6996, 4)[0] == 3          # XOR4


def test_gate_normalisation_shares_complements():
    dag = GateDag()
    a, b = (dag.new_input("a", 0), 0), (dag.new_input("b", 0), 0)
    xor = dag.gate(0b0110, a, b)
    xnor = dag.gate(0b1001, b, a)
    assert xor[0] == xnor[0] and xor[1] != xnor[1] and len(dag.gates) == 1
    assert dag.gate(0b1100, a, b) == b            # depends on b only (bit va | vb << 1)
    assert dag.gate(0b0101, a, b) == (a[0], 1)    # not a
    assert dag.gate(0b1000, a, (CONST, 1)) == a    # a & 1
    assert dag.gate(0b1000, a, (CONST, 0)) == (CONST, 0)


def _run(netlist, rows, result):
    got = evaluate(result.config, result.portmap, rows, target="emu")
    return got, netlist.simulate(rows)


def _exhaustive_rows(netlist):
    rows = rows_for(netlist, exhaustive_limit=12, count=600, seed=3)
    random.Random(5).shuffle(rows)
    return rows


def _random_netlist(rng, n_inputs, n_luts):
    inputs = {f"i{k}": InputPort((f"x{k}",)) for k in range(n_inputs)}
    nets = [f"x{k}" for k in range(n_inputs)]
    luts = {}
    for k in range(n_luts):
        arity = rng.randint(1, min(4, len(nets)))
        sources = rng.sample(nets[-6:] if rng.random() < 0.6 else nets, arity)
        luts[f"l{k}"] = Lut(tuple(sources), rng.randrange(1 << (1 << arity)))
        nets.append(f"l{k}")
    picks = rng.sample(nets[n_inputs:], min(3, n_luts)) + [rng.choice(nets[:n_inputs]),
                                                            CONST1, CONST0]
    outputs = {"y": OutputPort(tuple(picks))}
    return Netlist("random", inputs, outputs, luts)


@pytest.mark.parametrize("seed", range(6))
def test_random_lut_dags(seed):
    rng = random.Random(seed)
    netlist = _random_netlist(rng, rng.randint(3, 6), rng.randint(2, 6))
    result = compile_wavefront(netlist)
    rows = _exhaustive_rows(netlist)
    got, expected = _run(netlist, rows * 2, result)
    assert got == expected
    assert result.portmap.period == 2
    report = result.report
    assert report["cells"]["total"] == report["cells"]["logic"] + report["cells"]["routing"]
    assert report["cells"]["total"] == sum(1 for y in range(result.config.height)
                                           for x in range(result.config.width)
                                           if any(result.config[x, y]))


@pytest.mark.parametrize("name, params", [("adder", {"n": 4}), ("parity", {"n": 8}),
                                          ("multiplier", {"n": 2}),
                                          ("multiplier", {"n": 2, "signed": True})])
def test_designs_on_the_emulator(synthesized, name, params):
    design, synthesis = synthesized(name, **params)
    netlist = synthesis.netlist
    result = compile_wavefront(netlist)
    rows = _exhaustive_rows(netlist)
    got, expected = _run(netlist, rows, result)
    assert got == expected
    assert got == model_rows(name, params, rows)


@pytest.mark.slow
@pytest.mark.parametrize("name, params", [("adder", {"n": 8}), ("crc8", {}),
                                          ("comparator", {"n": 8}), ("popcount", {"n": 8}),
                                          ("parity", {"n": 16})])
def test_larger_designs_on_the_emulator(synthesized, name, params):
    design, synthesis = synthesized(name, **params)
    netlist = synthesis.netlist
    result = compile_wavefront(netlist)
    rows = rows_for(netlist, exhaustive_limit=12, count=2000, seed=7)
    got, expected = _run(netlist, rows, result)
    assert got == expected == model_rows(name, params, rows)


def test_only_every_cell_n_w_in_e_s_out():
    """Routable by construction: no configured cell reads E or S or drives N or W."""
    netlist = _random_netlist(random.Random(9), 5, 5)
    config = compile_wavefront(netlist).config
    for y in range(config.height):
        for x in range(config.width):
            n_table, e_table, s_table, w_table = config[x, y]
            assert n_table == 0 and w_table == 0
            for table in (e_table, s_table):
                for address in range(16):   # E (bit 1) and S (bit 2) inputs do not matter
                    assert table >> address & 1 == table >> (address & 0b1001) & 1


def test_refusals():
    flop = Netlist("f", {"a": InputPort(("a",))}, {"q": OutputPort(("q",))},
                   dffs={"q": Dff("a")})
    with pytest.raises(CompileError, match="combinational"):
        compile_wavefront(flop)
    netlist = _random_netlist(random.Random(1), 4, 4)
    with pytest.raises(CompileError, match="region"):
        compile_wavefront(netlist, width=8, height=8, region=(0, 0, 3, 3))
    with pytest.raises(CompileError, match="larger --size"):
        compile_wavefront(netlist, width=2, height=2)
