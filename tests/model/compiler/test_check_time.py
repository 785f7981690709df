"""The check after compile sized to its time (issue 40 item 3): rows that would run past the
check's cell-update budget or the evaluator's subcycle bound are sampled down and said in a
note; the program is never refused for the length of its own check."""

import pytest

from bitgrid.compiler import compile_netlist
from bitgrid.compiler import check as check_module
from bitgrid.compiler.check import MIN_CHECK_ROWS, check_program, time_rows
from bitgrid.netlist import InputPort, Lut, Netlist, OutputPort


def _rotxor(width=12):
    a = tuple(f"a{i}" for i in range(width))
    luts = {f"y{i}": Lut((a[i], a[(i + 1) % width]), 0b0110) for i in range(width)}
    return Netlist(f"rotxor{width}", {"a": InputPort(a, False)},
                   {"y": OutputPort(tuple(luts), False)}, luts)


@pytest.fixture(scope="module")
def compiled():
    netlist = _rotxor()
    result = compile_netlist(netlist)
    return netlist, result.config, result.portmap


def _most_by_brute_force(portmap, limit, planned):
    count = 0
    while count < planned and portmap.cycles_needed(count + 1) <= limit:
        count += 1
    return count


def test_every_row_when_the_budget_allows(compiled):
    _, config, portmap = compiled
    assert time_rows(config, portmap, 1000) == 1000
    assert time_rows(config, portmap, 0) == 0


@pytest.mark.parametrize("updates_in_rows", [20, 100, 333])
def test_rows_cut_to_the_cell_update_budget(compiled, monkeypatch, updates_in_rows):
    _, config, portmap = compiled
    cells = config.width * config.height
    budget = portmap.cycles_needed(updates_in_rows) * cells + cells // 2
    monkeypatch.setattr(check_module, "CHECK_CELL_UPDATES", budget)
    assert time_rows(config, portmap, 1000) == updates_in_rows
    assert time_rows(config, portmap, 1000) == _most_by_brute_force(portmap, budget // cells,
                                                                     1000)


def test_a_floor_of_rows_however_long_they_are(compiled, monkeypatch):
    _, config, portmap = compiled
    monkeypatch.setattr(check_module, "CHECK_CELL_UPDATES", 1)
    assert time_rows(config, portmap, 1000) == MIN_CHECK_ROWS
    assert time_rows(config, portmap, 5) == 5


def test_the_evaluators_subcycle_bound_is_kept_even_under_the_floor(compiled, monkeypatch):
    _, config, portmap = compiled
    monkeypatch.setattr("bitgrid.ports.MAX_SUBCYCLES", portmap.cycles_needed(3))
    assert time_rows(config, portmap, 1000) == 3
    monkeypatch.setattr("bitgrid.ports.MAX_SUBCYCLES", 0)
    assert time_rows(config, portmap, 1000) == 1        # one row is always run


def test_a_long_check_runs_fewer_rows_and_says_so(compiled, monkeypatch):
    netlist, config, portmap = compiled
    cells = config.width * config.height
    monkeypatch.setattr(check_module, "CHECK_CELL_UPDATES", portmap.cycles_needed(40) * cells)
    notes = []
    assert check_program(netlist, config, portmap, notes=notes) == 40
    assert notes == [f"the check ran on 40 of its 4096 rows: a row takes {portmap.period} "
                     f"subcycles of the {config.width} x {config.height} grid, and all 4096 "
                     "would take too long"]
