"""bitgrid.netlist: the compiler's LUT netlist IR and its cycle reference model."""

import itertools
import random

import pytest

from bitgrid.netlist import (CONST0, CONST1, Dff, InputPort, Lut, Netlist, NetlistError,
                             OutputPort)


def full_adder():
    """A 1-bit full adder: two LUT3s over (a, b, cin)."""
    xor3 = sum(1 << a for a in range(8) if bin(a).count("1") % 2)
    maj3 = sum(1 << a for a in range(8) if bin(a).count("1") >= 2)
    return Netlist("fa", {"a": InputPort(("a",)), "b": InputPort(("b",)),
                          "cin": InputPort(("cin",))},
                   {"s": OutputPort(("s",)), "cout": OutputPort(("cout",))},
                   {"s": Lut(("a", "b", "cin"), xor3), "cout": Lut(("a", "b", "cin"), maj3)})


def test_full_adder_exhaustive():
    netlist = full_adder()
    rows = [dict(a=a, b=b, cin=c) for a, b, c in itertools.product((0, 1), repeat=3)]
    for row, out in zip(rows, netlist.simulate(rows)):
        total = row["a"] + row["b"] + row["cin"]
        assert out == {"s": total & 1, "cout": total >> 1}


def counter(bits):
    """A ``bits``-bit counter with enable: q <= q + en, as LUTs (carry chain) and DFFs."""
    luts, dffs = {}, {}
    carry = "en"
    for i in range(bits):
        q = f"q{i}"
        luts[f"d{i}"] = Lut((q, carry), 0b0110)                  # q ^ carry
        if i < bits - 1:
            luts[f"c{i}"] = Lut((q, carry), 0b1000)              # q & carry
            carry = f"c{i}"
        dffs[q] = Dff(f"d{i}", init=1 if i == 0 else 0)
    return Netlist("counter", {"en": InputPort(("en",))},
                   {"q": OutputPort(tuple(f"q{i}" for i in range(bits)))}, luts, dffs)


def test_counter_registered_output_is_the_state_after_k_edges():
    rng = random.Random(3)
    enables = [rng.getrandbits(1) for _ in range(200)]
    outs = counter(4).simulate([{"en": e} for e in enables])
    state = 1                                               # init of q0 = 1
    for enable, out in zip(enables, outs):
        assert out["q"] == state                            # sampled before the edge
        state = (state + enable) % 16


def test_signed_output_and_constants():
    netlist = Netlist("k", {"a": InputPort(("a0", "a1"), signed=True)},
                      {"y": OutputPort(("a0", "a1", CONST1), signed=True),
                       "z": OutputPort((CONST0,))})
    outs = netlist.simulate([{"a": v} for v in (-2, -1, 0, 1)])
    # y = {1, a1, a0} as a 3-bit signed value: 0b1xx is negative.
    assert [o["y"] for o in outs] == [-4 + 2, -4 + 3, -4 + 0, -4 + 1]
    assert all(o["z"] == 0 for o in outs)


@pytest.mark.parametrize("build, message", [
    (lambda: Netlist("x", {"a": InputPort(("a",))}, {}, {"a": Lut((), 0)}), "driven twice"),
    (lambda: Netlist("x", {}, {}, {"y": Lut(("nope",), 1)}), "nothing drives"),
    (lambda: Netlist("x", {}, {"o": OutputPort(("nope",))}), "nothing drives"),
    (lambda: Netlist("x", {"a": InputPort(tuple("abcde"))}, {},
                     {"y": Lut(tuple("abcde"), 0)}), "at most 4"),
    (lambda: Netlist("x", {"a": InputPort(("a",))}, {}, {"y": Lut(("a",), 0b111)}),
     "not 2 bits"),
    (lambda: Netlist("x", {}, {}, {"p": Lut(("q",), 1), "q": Lut(("p",), 1)}),
     "Combinational loop"),
    (lambda: Netlist("x", {}, {}, {}, {"q": Dff("q", init=2)}), "init"),
])
def test_bad_netlists_are_refused(build, message):
    with pytest.raises(NetlistError, match=message):
        build()


def test_loop_through_a_flip_flop_is_allowed_and_order_is_topological():
    netlist = Netlist("t", {"a": InputPort(("a",))}, {"y": OutputPort(("y",))},
                      {"y": Lut(("x", "q"), 0b0110), "x": Lut(("a",), 0b01)},
                      {"q": Dff("y")})
    order = netlist.order
    assert order.index("x") < order.index("y")
    # y = ~a ^ q, q <= y: a toggle register driven by ~a.
    outs = netlist.simulate([{"a": a} for a in (0, 0, 1, 0)])
    assert [o["y"] for o in outs] == [1, 0, 0, 1]
