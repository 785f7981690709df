"""The fault model of the self-test (``bitgrid.faultmodel``): the text form, the reduction of a
fault set to stuck outputs and flipped LUT bits, and :class:`FaultyEmulator` against the
reference emulator running a configuration edited by hand (an independent statement of what
each fault does)."""

import random

import numpy as np
import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid.defects import Defect, DefectMap
from bitgrid.faultmodel import (Fault, FaultError, FaultSet, FaultyEmulator, format_address,
                                parse_address, parse_fault)
from bitgrid.terms import E, N, S, W


@pytest.mark.parametrize("text, fault", [
    ("3,2:stuck0:E", Fault(3, 2, "stuck0", E)),
    ("0,0:stuck1", Fault(0, 0, "stuck1")),
    ("1,5:lut:w:5", Fault(1, 5, "lut", W, 5)),
    ("1,5:lut:N:0xf", Fault(1, 5, "lut", N, 15)),
    ("1,5:lut:S:[ns]", Fault(1, 5, "lut", S, 5)),
    ("1,5:lut:S:[]", Fault(1, 5, "lut", S, 0)),
    ("4,4:DEAD", Fault(4, 4, "dead")),
])
def test_parse_fault(text, fault):
    assert parse_fault(text) == fault


@pytest.mark.parametrize("text, message", [
    ("3:stuck0", "fault 3:stuck0: start with the cell X,Y"),
    ("3,2:broken", "fault 3,2:broken: the kind is one of stuck0, stuck1, lut, dead"),
    ("3,2:lut:E", "fault 3,2:lut:E: a lut fault names the output and the address"),
    ("3,2:lut:E:16", "address 16 is not a LUT address 0..15"),
    ("3,2:lut:E:[nx]", "address '[nx]': in brackets give the inputs that are 1"),
    ("3,2:lut:Q:1", "fault 3,2:lut:Q:1: Unknown side 'Q'"),
    ("3,2:dead:N", "fault 3,2:dead:N: a dead cell has no side"),
    ("3,2:stuck0:N:1", "fault 3,2:stuck0:N:1: write X,Y:stuck0 or X,Y:stuck0:SIDE"),
])
def test_parse_fault_errors(text, message):
    with pytest.raises(FaultError) as info:
        parse_fault(text)
    assert str(info.value).startswith(message)


def test_addresses():
    assert [parse_address(f"[{''.join(c for i, c in enumerate('nesw') if a >> i & 1)}]")
            for a in range(16)] == list(range(16))
    assert format_address(5) == "5 [ns]" and format_address(0) == "0 []"


def test_fault_set_reduction():
    faults = FaultSet(4, 4, ["1,1:stuck1", "2,0:lut:E:3", "2,0:lut:E:9", "1,1:lut:N:0",
                             "0,3:stuck0:W", "3,3:dead"], seed=5)
    dead = faults.dead_values(3, 3)
    assert faults.forced == {**{(1, 1, d): 1 for d in range(4)}, (0, 3, 3): 0,
                             **{(3, 3, d): dead[d] for d in range(4)}}
    assert faults.flips == {(2, 0, 1): (1 << 3) | (1 << 9)}     # (1, 1, N) is stuck: hidden
    assert faults.defects() == DefectMap(4, 4, [Defect(1, 1, "dead"), Defect(2, 0, "lut", E),
                                                Defect(0, 3, "stuck0", W),
                                                Defect(3, 3, "dead")])
    assert FaultSet(4, 4, ["3,3:dead"], seed=5).dead_values(3, 3) == dead
    hdl = faults.hdl_faults()
    assert (2, 0, "lut", 1, 3) in hdl and (2, 0, "lut", 1, 9) in hdl and len(hdl) == 11
    assert FaultSet.from_hdl(4, 4, hdl).forced == faults.forced
    assert FaultSet.from_hdl(4, 4, hdl).flips == faults.flips


@pytest.mark.parametrize("faults, message", [
    (["4,0:stuck0"], "fault 4,0:stuck0: cell (4, 0) is outside the 4 x 4 grid"),
    (["1,1:stuck0:N", "1,1:stuck1"], "fault 1,1:stuck1: output N of (1, 1) is already stuck "
                                     "at 0"),
    ([Fault(1, 1, "lut", N)], "fault 1,1:lut:N: a lut fault names the output and the address"),
    ([Fault(1, 1, "stuck0", N, 3)], "fault 1,1:stuck0:N:3: only a lut fault has an address"),
    ([42], "a fault is a Fault or its text form X,Y:KIND[:SIDE[:ADDR]], not 42"),
])
def test_fault_set_errors(faults, message):
    with pytest.raises(FaultError) as info:
        FaultSet(4, 4, faults)
    assert str(info.value) == message


def _random_edges(rng, width, height):
    return Edges(rng.getrandbits(width), rng.getrandbits(height), rng.getrandbits(width),
                 rng.getrandbits(height))


@pytest.mark.parametrize("seed", range(4))
def test_flipped_bits_are_an_edited_configuration(seed):
    """LUT flips only: the faulty emulator equals the reference emulator running the
    configuration with those bits inverted, at every subcycle."""
    rng = random.Random(seed)
    config = Configuration.random(6, 4, seed=seed)
    faults = [f"{rng.randrange(6)},{rng.randrange(4)}:lut:{rng.choice('NESW')}:"
              f"{rng.randrange(16)}" for _ in range(5)]
    luts = config.luts.copy()
    for text in set(faults):
        f = parse_fault(text)
        luts[f.y, f.x, f.output] ^= 1 << f.address
    faulty, edited = FaultyEmulator(config, faults), Emulator(Configuration(6, 4, luts))
    for _ in range(40):
        edges = _random_edges(rng, 6, 4)
        assert faulty.step(edges) == edited.step(edges)
        assert (faulty.outputs == edited.outputs).all()
    assert faulty.config == config                 # the configuration as loaded


@pytest.mark.parametrize("seed", range(4))
def test_stuck_outputs(seed):
    """Stuck outputs are constant from reset on (before the cell first updates, unlike a
    constant LUT); once every cell has updated, the run equals the reference emulator with
    those LUTs constant."""
    rng = random.Random(seed)
    config = Configuration.random(4, 4, seed=10 + seed)
    faults = FaultSet(4, 4, ["0,0:stuck1:N", "3,1:stuck1:E", "2,2:dead", "1,3:stuck0"],
                      seed=seed)
    luts = config.luts.copy()
    for (x, y, d), v in faults.forced.items():
        luts[y, x, d] = 0xFFFF if v else 0
    faulty, edited = FaultyEmulator(config, faults), Emulator(Configuration(4, 4, luts))
    assert faulty.edge_outputs().n & 1 == 1 and faulty.edge_outputs().e >> 1 & 1 == 1
    for (x, y, d), v in faults.forced.items():
        assert faulty.outputs[d, y, x] == v
    for t in range(40):
        edges = _random_edges(rng, 4, 4)
        a, b = faulty.step(edges), edited.step(edges)
        if t >= 1:
            assert a == b and (faulty.outputs == edited.outputs).all()
    faulty.reset()
    assert faulty.outputs[0, 0, 0] == 1 and faulty.subcycle == 0


def test_fault_set_size_checked():
    with pytest.raises(FaultError, match="the faults are for a 4 x 4 grid, the configuration "
                                         "is 6 x 4"):
        FaultyEmulator(Configuration(6, 4), FaultSet(4, 4, ["1,1:dead"]))
    assert not FaultSet(4, 4) and FaultSet(4, 4, ["1,1:dead"])
    assert np.array_equal(FaultSet(2, 2).apply_luts(Configuration(2, 2)).luts,
                          Configuration(2, 2).luts)
