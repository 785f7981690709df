"""bitgrid.relocate: programs relocated around random defect maps give, with the defective
cells actually faulty (bitgrid.faultmodel.FaultyEmulator: dead, stuck and flipped-LUT cells),
the same edge outputs at every subcycle as the defect-free program; refusals when no exact
relocation exists; the netlist extraction against the program on the emulator."""

import random

import pytest

from bitgrid import examples
from bitgrid.analysis import DependencyGraph, EdgeOutput, path_timing
from bitgrid.config import Configuration
from bitgrid.defects import Defect, DefectMap
from bitgrid.emulator import Emulator
from bitgrid.faultmodel import Fault, FaultSet, FaultyEmulator
from bitgrid.ports import PortMap
from bitgrid.program import Program
from bitgrid.relocate import (RelocationError, bad_cells_in_use, extract_netlist, relocate,
                              used_outputs)
from bitgrid.terms import DIRECTIONS, Direction, Edges, parse_side, side_lanes


def walk(program, x, y, entering, moves):
    """Lay a wire from cell (x, y), entering on side ``entering``, leaving each cell on the
    side given by the next letter of ``moves``; returns the cell after the last one."""
    came = parse_side(entering)
    for letter in moves:
        leaving = parse_side(letter)
        program.connect(x, y, came, leaving)
        dx, dy = leaving.step
        x, y, came = x + dx, y + dy, leaving.opposite
    return x, y


def _xor_meanders(p):
    """Two meandering wires into an XOR cell at (7, 3), its result meandering on to E_out[3]
    and, through its second output, to E_out[5]. Inputs W0, W1; outputs E3, E5."""
    walk(p, 0, 1, "W", "EESSEEEEE")           # W_in[1] -> (2,1) S (2,3) E ... (6,3) -> X
    walk(p, 0, 0, "W", "EEEEEEESSS")          # W_in[0] -> along row 0, (7,0) S (7,2) -> X
    p.cell(7, 3, e=lambda w, n: w ^ n, s=lambda w, n: w ^ n)
    walk(p, 8, 3, "W", "ENNEESSE")            # X -> (9,3) N (9,1) E (11,1) S (11,3) E_out[3]
    walk(p, 7, 4, "N", "SEEEEE")              # X -> (7,4) S (7,5) E ... (11,5) E_out[5]
    return p


def meanders():
    """A 12 x 8 program: :func:`_xor_meanders` and a straight wire W_in[6] -> E_out[6].
    Inputs W0, W1, W6; outputs E3, E5, E6."""
    p = _xor_meanders(Program(12, 8))
    p.route(0, 6, "E")
    return p


def _ports(width, height, inputs, outputs, latency=0, period=2):
    ports = [{"name": f"i{side}{lane}", "direction": "in",
              "bits": [{"side": side, "lane": lane}]} for side, lane in inputs]
    ports += [{"name": f"o{side}{lane}", "direction": "out",
               "bits": [{"side": side, "lane": lane}]} for side, lane in outputs]
    return PortMap(width, height, ports, period=period, latency=latency)


def _random_inputs(width, height, steps, rng):
    return [Edges(*(rng.getrandbits(side_lanes(d, width, height)) for d in DIRECTIONS))
            for _ in range(steps)]


def _faults(defects, rng):
    """Faults for every defect of the map (a whole-cell entry: dead, or all outputs stuck)."""
    faults = []
    for d in defects:
        if d.kind == "dead":
            faults.append(Fault(d.x, d.y, "dead"))
        elif d.kind == "lut":
            for out in (DIRECTIONS if d.output is None else (d.output,)):
                for address in rng.sample(range(16), 3):
                    faults.append(Fault(d.x, d.y, "lut", out, address))
        else:
            faults.append(Fault(d.x, d.y, d.kind, d.output))
    return FaultSet(defects.width, defects.height, faults, seed=rng.randrange(1000))


def _same_used_outputs(original, relocated, defects, outputs, rng, steps=120, lanes=None):
    """Run the defect-free original and the relocated program on the faulty grid with the same
    random inputs; compare every used output lane at every subcycle."""
    width, height = original.width, original.height
    inputs = _random_inputs(width, height, steps, rng)
    good, bad = Emulator(original), FaultyEmulator(relocated, _faults(defects, rng))
    lanes = lanes or {o: o for o in outputs}
    for t, edges in enumerate(inputs):
        expected, actual = good.step(edges), bad.step(_remap_inputs(edges, lanes))
        for old, new in lanes.items():
            assert (expected[old.side] >> old.lane & 1) == (actual[new.side] >> new.lane & 1), \
                (t, str(old))


def _remap_inputs(edges, lanes):
    return edges


def _random_defects(width, height, cells, rng, count):
    kinds = ("stuck0", "stuck1", "lut", "dead")
    chosen = rng.sample(sorted(cells), count)
    entries = []
    for x, y in chosen:
        kind = rng.choice(kinds)
        output = rng.choice([None, "N", "E", "S", "W"]) if kind != "dead" else None
        entries.append(Defect(x, y, kind, None if output is None else parse_side(output)))
    return DefectMap(width, height, entries)


def test_meander_program_is_as_drawn():
    config = meanders().config
    timing = path_timing(config)
    graph = DependencyGraph(config)
    assert [str(o) for o in used_outputs(graph)] == ["E_out[3]", "E_out[5]", "E_out[6]"]
    assert timing.loops == []
    # W_in[1]: 9 wires, X, 8 wires, one subcycle of parity wait at (0, 1): 19;
    # W_in[0]: 10 wires, X, 8 wires, no wait at (0, 0): 19
    e3 = {(str(i), length) for i, length in timing.paths[EdgeOutput(Direction.E, 3)]}
    assert e3 == {("W_in[1]", 19), ("W_in[0]", 19)}
    e6 = {(str(i), length) for i, length in timing.paths[EdgeOutput(Direction.E, 6)]}
    assert e6 == {("W_in[6]", 12)}


def test_defect_on_unused_cell_needs_no_change():
    adder = examples.adder(4, width=8, height=8)
    config = adder.config
    # rows 4..7 outside the carry column carry nothing
    defects = DefectMap(8, 8, [Defect(1, 5, "dead"), Defect(6, 7, "stuck1"),
                               Defect(0, 6, "lut", Direction.E)])
    assert bad_cells_in_use(config, defects) == []
    result = relocate(config, defects)
    assert result.strategy == "unchanged" and result.config == config
    outputs = used_outputs(DependencyGraph(config))
    _same_used_outputs(config, result.config, defects, outputs, random.Random(1))


def test_random_defects_on_meanders_detour_exactly_or_refuse():
    rng = random.Random(3)
    config = meanders().config
    graph = DependencyGraph(config)
    outputs = used_outputs(graph)
    used = {(n.x, n.y) for n in graph.upstream(outputs) if hasattr(n, "x")}
    counts = {"detour": 0, "unchanged": 0, "refused": 0}
    for trial in range(30):
        defects = _random_defects(12, 8, used | {(rng.randrange(12), rng.randrange(8))},
                                  rng, rng.randrange(1, 3))
        try:
            result = relocate(config, defects)
        except RelocationError as error:
            counts["refused"] += 1
            assert "bad cell" in str(error)
            continue
        counts[result.strategy] += 1
        assert bad_cells_in_use(result.config, defects) == []
        assert path_timing(result.config, outputs).paths == path_timing(config, outputs).paths
        _same_used_outputs(config, result.config, defects, outputs, rng)
    assert counts["detour"] >= 10, counts
    assert counts["refused"] >= 1, counts


def test_bad_boundary_cell_of_a_lane_is_refused():
    config = meanders().config
    defects = DefectMap(12, 8, [Defect(0, 1, "dead")])
    with pytest.raises(RelocationError, match=r"\(0, 1\)"):
        relocate(config, defects)


def test_bad_logic_cell_is_refused_or_moved():
    config = meanders().config
    defects = DefectMap(12, 8, [Defect(7, 3, "stuck0", Direction.E)])
    with pytest.raises(RelocationError, match="holds logic"):
        relocate(config, defects)


def test_move_with_port_map_keeps_behaviour_and_moves_lanes():
    # the XOR meanders on a 12 x 12 grid (W and E I/O only); the XOR cell is bad
    config = _xor_meanders(Program(12, 12)).config
    portmap = _ports(12, 12, [("W", 0), ("W", 1)], [("E", 3), ("E", 5)], latency=14)
    defects = DefectMap(12, 12, [Defect(7, 3, "dead")])
    with pytest.raises(RelocationError, match="give its port map"):
        relocate(config, defects)
    result = relocate(config, defects, portmap=portmap)
    assert result.strategy == "move"
    assert result.offset == (0, 4)          # (0, 2) puts (7, 1) of the N-S wire on (7, 3)
    moved = {(b.side.letter, b.lane) for port in result.portmap.ports for b in port.bits}
    assert moved == {("W", 4), ("W", 5), ("E", 7), ("E", 9)}
    rng = random.Random(5)
    inputs = _random_inputs(12, 12, 100, rng)
    good = Emulator(config)
    bad = FaultyEmulator(result.config, _faults(defects, rng))
    for t, edges in enumerate(inputs):
        w = edges.w & 0b11
        expected, actual = good.step(Edges(w=w)), bad.step(Edges(w=w << 4))
        assert (expected.e >> 3 & 1, expected.e >> 5 & 1) == \
            (actual.e >> 7 & 1, actual.e >> 9 & 1), t
    # no room: the whole height is needed
    full = DefectMap(12, 12, [Defect(7, y, "dead") for y in range(3, 12, 2)])
    with pytest.raises(RelocationError, match="no offset"):
        relocate(config, full, portmap=portmap, strategies=("move",))


def _shift_word(word, by, lanes):
    word = word << by if by >= 0 else word >> -by
    return word & ((1 << lanes) - 1)


def test_extracted_netlist_matches_the_program():
    # the 4-bit adder: one design cycle per row, combinational; rows held 10 subcycles
    adder = examples.adder(4)
    ports = [{"name": "a", "direction": "in", "bits": [{"side": "W", "lane": i}
                                                       for i in range(4)]},
             {"name": "b", "direction": "in", "bits": [{"side": "E", "lane": i}
                                                       for i in range(4)]},
             {"name": "sum", "direction": "out",
              "bits": [{"side": "E", "lane": i} for i in range(4)] + [{"side": "S", "lane": 3}]}]
    portmap = PortMap(4, 4, ports, period=8, latency=8)
    netlist = extract_netlist(adder.config, portmap, name="adder4")
    assert not netlist.dffs
    rows = [{"a": a, "b": b} for a in range(16) for b in range(16)]
    assert netlist.simulate(rows) == [{"sum": r["a"] + r["b"]} for r in rows]
    # a latency whose window misses some paths is refused
    with pytest.raises(RelocationError, match="outside the window"):
        extract_netlist(adder.config, portmap.replace(period=2))


def test_cli_place_detour_move_and_refusal(tmp_path):
    from click.testing import CliRunner

    from bitgrid import bitstream, defects as defects_file, ports as ports_file
    from bitgrid.cli import main
    runner = CliRunner()
    config = meanders().config
    program = tmp_path / "m.bgbs"
    bitstream.save(str(program), config)
    mapping = tmp_path / "grid.defects.json"
    defects_file.save(str(mapping), DefectMap(12, 8, [Defect(4, 3, "dead")]))
    out = tmp_path / "placed.bgbs"
    result = runner.invoke(main, ["place", str(program), "--defects", str(mapping), "-o",
                                  str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("detour: 1 defect, 1 bad cell in use")
    assert "latency +0" in result.output
    placed = bitstream.load(str(out)).config
    assert bad_cells_in_use(placed, DefectMap(12, 8, [Defect(4, 3, "dead")])) == []
    # refusal: the boundary cell of W_in[6]'s straight lane
    defects_file.save(str(mapping), DefectMap(12, 8, [Defect(0, 6, "stuck1")]))
    result = runner.invoke(main, ["place", str(program), "--defects", str(mapping), "-o",
                                  str(out)])
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot place") and "(0, 6)" in result.output
    assert len(result.output.strip().splitlines()) == 1
    # a move with a port map: the port map is written beside the program
    config = _xor_meanders(Program(12, 12)).config
    bitstream.save(str(program), config)
    ports = tmp_path / "m.ports.json"
    ports_file.save(str(ports), _ports(12, 12, [("W", 0), ("W", 1)], [("E", 3), ("E", 5)],
                                       latency=14))
    defects_file.save(str(mapping), DefectMap(12, 12, [Defect(7, 3, "dead")]))
    result = runner.invoke(main, ["place", str(program), "--defects", str(mapping), "--ports",
                                  str(ports), "-o", str(out)])
    assert result.exit_code == 0, result.output
    moved = ports_file.load(str(tmp_path / "placed.ports.json"))
    assert [(b.side.letter, b.lane) for p in moved.ports for b in p.bits] == \
        [("W", 4), ("W", 5), ("E", 7), ("E", 9)]
    # a defect map for another grid size
    defects_file.save(str(mapping), DefectMap(8, 8, []))
    result = runner.invoke(main, ["place", str(program), "--defects", str(mapping), "-o",
                                  str(out)])
    assert result.exit_code == 2 and "8 x 8" in result.output


# Library programs ------------------------------------------------------------------------------

def _embed(block, room=5):
    """``block`` on a grid with at least ``room`` free columns and rows beside it (E and S),
    its ports on the edge lanes (:meth:`bitgrid.library.Block.standalone`, which carries E and
    S port bits to the edge): ``(config, portmap)``."""
    even = lambda v: v + v % 2          # noqa: E731
    alone = block.standalone(width=even(block.width + room), height=even(block.height + room))
    return alone.config, alone.portmap


def _library_blocks():
    from bitgrid.library import MACROS
    blocks = []
    for name, macro in sorted(MACROS.items()):
        try:
            blocks.append(macro.build())
        except ValueError:              # a macro not built yet
            continue
    return blocks


def _rows(portmap, rng, count):
    return [{port.name: rng.randrange(port.minimum, port.maximum + 1)
             for port in portmap.inputs} for _ in range(count)]


def _faulty_rows(config, portmap, defects, rows, rng):
    from bitgrid.evaluate import edge_inputs, sample
    emulator = FaultyEmulator(config, _faults(defects, rng))
    inputs = edge_inputs(portmap, rows)
    return sample(portmap, [emulator.step(e) for e in inputs], len(rows))


def test_library_programs_under_random_defect_maps():
    """Every library macro on a grid with room beside it, under random defect maps: on cells
    it does not use (no change), and on cells it uses: relocated exactly (the same edge outputs
    at every subcycle, or with a move the same output rows on the moved lanes) or refused with
    the reason."""
    from bitgrid.evaluate import evaluate
    rng = random.Random(17)
    outcomes = {}
    for block in _library_blocks():
        config, portmap = _embed(block)
        graph = DependencyGraph(config)
        outputs = used_outputs(graph, portmap)
        used = sorted({(n.x, n.y) for n in graph.upstream(outputs) if hasattr(n, "x")})
        free = sorted({(x, y) for x in range(config.width) for y in range(config.height)}
                      - set(used))
        defects = _random_defects(config.width, config.height, free, rng, min(3, len(free)))
        result = relocate(config, defects, portmap=portmap)
        assert result.strategy == "unchanged", block.name
        _same_used_outputs(config, result.config, defects, outputs, rng, steps=60)
        for trial in range(4):
            defects = _random_defects(config.width, config.height, used, rng, 1)
            try:
                result = relocate(config, defects, portmap=portmap,
                                  strategies=("unchanged", "detour", "move"))
            except RelocationError as error:
                outcomes.setdefault(block.name, []).append("refused")
                assert "bad cell" in str(error) and "detour:" in str(error)
                continue
            outcomes.setdefault(block.name, []).append(result.strategy)
            assert bad_cells_in_use(result.config, defects, result.portmap) == []
            if result.strategy == "move":
                rows = _rows(portmap, rng, 12)
                assert _faulty_rows(result.config, result.portmap, defects, rows, rng) == \
                    evaluate(config, portmap, rows), block.name
            else:
                _same_used_outputs(config, result.config, defects, outputs, rng, steps=60)
    relocated = [s for strategies in outcomes.values() for s in strategies if s != "refused"]
    assert len(relocated) >= len(outcomes), outcomes


@pytest.mark.parametrize("cell", [(1, 0), (1, 1)])
def test_compile_strategy_re_times_and_keeps_rows(cell):
    """A bad logic cell of the 2-bit comparator (not the boundary cell of a port lane): the
    netlist placed anew by the compiler back end, every port on its lane; the same output rows
    (bitgrid.evaluate semantics) with the bad cell running faulty; the latency change said."""
    from bitgrid.evaluate import evaluate
    from bitgrid.library import MACROS
    rng = random.Random(2)
    config, portmap = _embed(MACROS["comparator"].build(bits=2))
    graph = DependencyGraph(config)
    assert any(graph.support(*cell, d) for d in DIRECTIONS)
    defects = DefectMap(config.width, config.height, [Defect(*cell, "dead")])
    with pytest.raises(RelocationError, match="holds logic"):
        relocate(config, defects, portmap=portmap, strategies=("detour",))
    result = relocate(config, defects, portmap=portmap)
    assert result.strategy == "compile"
    assert result.latency_change == result.portmap.latency - portmap.latency
    assert [[(b.side, b.lane) for b in p.bits] for p in result.portmap.ports] == \
        [[(b.side, b.lane) for b in p.bits] for p in portmap.ports]
    assert bad_cells_in_use(result.config, defects, result.portmap) == []
    rows = [{"a": a, "b": b} for a in range(4) for b in range(4)]
    rng.shuffle(rows)
    assert _faulty_rows(result.config, result.portmap, defects, rows, rng) == \
        evaluate(config, portmap, rows)
    expected = [{"lt": int(r["a"] < r["b"]), "gt": int(r["a"] > r["b"]),
                 "eq": int(r["a"] == r["b"])} for r in rows]
    assert evaluate(config, portmap, rows) == expected


MEANDER_BGA = """\
grid 8 x 8
in  a W 1
out y E 5
cell 0..2,1: E = w
cell 3,1:    S = w
cell 3,2..4: S = n
cell 3,5:    E = n
cell 4..7,5: E = w
"""


def test_cli_place_assembly_text(tmp_path):
    """A .bga program brings its port map; the detour keeps the output rows (eval) exactly."""
    from click.testing import CliRunner

    from bitgrid import bitstream, defects as defects_file, ports as ports_file
    from bitgrid.cli import main
    from bitgrid.evaluate import evaluate
    source = tmp_path / "meander.bga"
    source.write_text(MEANDER_BGA)
    mapping = tmp_path / "grid.defects.json"
    defects = DefectMap(8, 8, [Defect(3, 3, "dead")])
    defects_file.save(str(mapping), defects)
    out = tmp_path / "placed.bgbs"
    result = CliRunner().invoke(main, ["place", str(source), "--defects", str(mapping), "-o",
                                       str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("detour:") and "(12 cells)" in result.output
    placed = bitstream.load(str(out)).config
    portmap = ports_file.load(str(tmp_path / "placed.ports.json"))
    assert (portmap.latency, portmap.period) == (13, 2)
    rng = random.Random(9)
    rows = [{"a": rng.randrange(2)} for _ in range(20)]
    assert _faulty_rows(placed, portmap, defects, rows, rng) == [{"y": r["a"]} for r in rows]
    assert evaluate(placed, portmap, rows) == [{"y": r["a"]} for r in rows]


def test_extracted_netlists_of_library_programs_simulate_as_the_programs_run():
    """Every library macro (combinational, pipelined, with loops such as the counter): the
    netlist's cycle model (Netlist.simulate) gives the rows the program gives on the
    reference emulator (bitgrid.evaluate), for random rows."""
    from bitgrid.evaluate import evaluate
    rng = random.Random(23)
    kinds = {}
    for block in _library_blocks():
        config, portmap = _embed(block)
        netlist = extract_netlist(config, portmap, name=block.name)
        rows = _rows(portmap, rng, 24) if portmap.inputs else [{}] * 24
        assert netlist.simulate(rows) == evaluate(config, portmap, rows), block.name
        kinds[block.name.split("(")[0]] = len(netlist.dffs)
    assert kinds["counter"] >= 8 and kinds["shift_register"] >= 7 and kinds["adder"] == 0


@pytest.mark.parametrize("name, params", [("counter", {"bits": 2}), ("counter", {"bits": 4}),
                                          ("shift_register", {"length": 4})])
def test_compile_strategy_relocates_sequential_programs(name, params):
    """Loops become flip-flops: a counter (a toggle loop per bit) and a shift register, a
    used cell dead, re-placed by the compiler back end: the same output rows on the faulty
    grid as the original gives on a healthy one."""
    from bitgrid.evaluate import evaluate
    from bitgrid.library import MACROS
    rng = random.Random(4)
    config, portmap = _embed(MACROS[name].build(**params))
    defects = DefectMap(config.width, config.height, [Defect(0, 3, "dead")])
    assert bad_cells_in_use(config, defects, portmap) == [(0, 3)]
    result = relocate(config, defects, portmap=portmap, strategies=("compile",))
    assert result.strategy == "compile" and result.latency_change > 0
    rows = _rows(portmap, rng, 24)
    assert _faulty_rows(result.config, result.portmap, defects, rows, rng) == \
        evaluate(config, portmap, rows)


def test_cli_place_refusal_gives_no_advice_place_cannot_follow(tmp_path):
    # A column of dead cells cuts every path: every strategy fails, the compiler's among them,
    # and the one line must not send the user to a --size that bitgrid place does not have.
    from click.testing import CliRunner

    from bitgrid import bitstream, defects as defects_file, ports as ports_file
    from bitgrid.cli import main
    p = Program(8, 8)
    for x in range(8):
        p.connect(x, 1, "W", "E")
    program, mapping, ports = (tmp_path / "w.bgbs", tmp_path / "d.json",
                               tmp_path / "w.ports.json")
    bitstream.save(str(program), p.config)
    ports_file.save(str(ports), _ports(8, 8, [("W", 1)], [("E", 1)], latency=8), p.config)
    defects_file.save(str(mapping), DefectMap(8, 8, [Defect(4, y, "dead") for y in range(8)]))
    result = CliRunner().invoke(main, ["place", str(program), "--ports", str(ports),
                                       "--defects", str(mapping), "-o",
                                       str(tmp_path / "out.bgbs")])
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot place") and "compile:" in result.output
    assert "--size" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out.bgbs").exists()


@pytest.mark.parametrize("name, params, relocates", [
    ("traffic", {}, True), ("lfsr", {"n": 8}, True),
    pytest.param("gray", {"n": 8}, True, marks=pytest.mark.slow),     # (15 s)
    ("bcd", {"digits": 2}, False)])
def test_windowed_sequential_programs_are_read_back_right_or_refused(tmp_path, name, params,
                                                                    relocates):
    """State machines compiled on the general back end with wave windows (a LUT's operands
    within a row's window, not in the same subcycle; loops exact): the netlist read back
    simulates as the program runs, and the compile strategy re-places the program around a
    dead cell it uses with the same rows; or either refuses (RelocationError), never a
    netlist or program that differs."""
    from bitgrid.compiler import designs
    from bitgrid.compiler.flow import front_end
    from bitgrid.compiler.general import RouteFailure, auto_size, compile_on
    from bitgrid.compiler.pack import prepare
    from bitgrid.evaluate import evaluate
    design = designs.design(name, **params)
    synthesis, _ = front_end(designs.write(design, tmp_path), top=design.top)
    netlist = synthesis.netlist
    packed = prepare(netlist)
    width, height = auto_size(packed, None, None, None)
    outcomes = []
    for seed in range(4):
        try:
            result = compile_on(netlist, packed, width + 6, height + 6, None, None, {}, seed,
                                None, {}, 0.0, windows=True)
        except RouteFailure:
            continue
        config, portmap = result.config, result.portmap
        rng = random.Random(seed)
        rows = _rows(portmap, rng, 40)
        expected = evaluate(config, portmap, rows)
        try:
            assert extract_netlist(config, portmap).simulate(rows) == expected
        except RelocationError:
            outcomes.append(("refused", result.report["widest_window"]))
            continue
        x, y = next((x, y) for y in range(1, config.height - 1)
                    for x in range(1, config.width - 1)
                    if bad_cells_in_use(config, [(x, y)], portmap))
        defects = DefectMap(config.width, config.height, [Defect(x, y, "dead")])
        try:
            moved = relocate(config, defects, portmap=portmap, strategies=("compile",))
        except RelocationError:
            outcomes.append(("read back, not re-placed", result.report["widest_window"]))
            continue
        assert _faulty_rows(moved.config, moved.portmap, defects, rows, rng) == expected
        outcomes.append(("relocated", result.report["widest_window"]))
    assert outcomes
    # (measured: traffic, lfsr and gray relocated with windows of 2 to 10 subcycles; bcd's
    # windows of 8 refused)
    assert any(kind == "relocated" and window > 0 for kind, window in outcomes) == relocates
