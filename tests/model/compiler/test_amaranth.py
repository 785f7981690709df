"""bitgrid.compiler.amaranth: Amaranth designs through RTLIL into the Yosys flow, and the
``module:Name(args)`` loader of ``--amaranth``."""

import sys

import pytest

from bitgrid.compiler import CompileError, load_amaranth, netlist_from_amaranth

DESIGN = '''
from amaranth import ClockDomain, Elaboratable, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out


class Acc(wiring.Component):
    """total += x every clock (signed), synchronous reset rst, initial value 5."""

    def __init__(self, width=4):
        self.width = width
        super().__init__({"x": In(signed(width)),
                          "total": Out(signed(2 * width), init=5)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.total.eq(self.total + self.x)
        return m


class Inverter(Elaboratable):
    def __init__(self):
        self.a = Signal(3)
        self.y = Signal(3)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(~self.a)
        return m


class LocalSync(wiring.Component):
    """Defines its own sync domain: Amaranth leaves its clock constant 0."""
    a: In(2)
    y: Out(2)

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain()
        m.d.sync += self.y.eq(self.a)
        return m


def broken(width):
    raise RuntimeError("width " + str(width) + " is not supported")


instance = Inverter()
instance._MustUse__silence = True      # not every test elaborates it
'''


@pytest.fixture
def module(tmp_path, monkeypatch):
    (tmp_path / "amaranth_designs_h7.py").write_text(DESIGN)
    monkeypatch.chdir(tmp_path)
    yield "amaranth_designs_h7"
    sys.modules.pop("amaranth_designs_h7", None)


def test_component_with_clock_reset_and_init(module):
    result = netlist_from_amaranth(load_amaranth(f"{module}:Acc(width=3)"))
    netlist = result.netlist
    assert netlist.name == "Acc" and result.stats["clock"] == "clk"
    assert {k: (len(p.bits), p.signed) for k, p in netlist.inputs.items()} == \
        {"x": (3, True), "rst": (1, False)}
    assert {k: (len(p.bits), p.signed) for k, p in netlist.outputs.items()} == \
        {"total": (6, True)}
    rows = [dict(x=-4, rst=0), dict(x=3, rst=0), dict(x=1, rst=1), dict(x=2, rst=0),
            dict(x=-1, rst=0)]
    # Amaranth's reset goes back to the init value (5).
    assert [o["total"] for o in netlist.simulate(rows)] == [5, 1, 4, 5, 7]


def test_plain_elaboratable_ports_from_attributes(module):
    for text in (f"{module}:Inverter", f"{module}:instance", f"{module}.py:Inverter"):
        netlist = netlist_from_amaranth(load_amaranth(text)).netlist
        assert netlist.simulate([{"a": 2}, {"a": 7}]) == [{"y": 5}, {"y": 0}]


def test_name(module):
    assert netlist_from_amaranth(load_amaranth(f"{module}:Inverter"),
                                 name="inv").netlist.name == "inv"


@pytest.mark.parametrize("text, pattern", [
    ("{m}:Nope", "has no Nope"),
    ("{m}:Acc(width=x)", "arguments must be Python literals"),
    ("{m}:broken(3)", r"broken\(3\) raised RuntimeError: width 3 is not supported"),
    ("{m}:DESIGN_MISSING.attr", "has no"),
    ("{m}", "--amaranth takes module:Name"),
    ("{m}:Acc(**{{}})", "not supported|literals"),
    ("{m}:1 + 2", "Name or Name"),
    ("no_such_module_h7:X", "cannot import no_such_module_h7"),
    ("missing/file.py:X", "no such Python file"),
])
def test_refused(module, text, pattern):
    with pytest.raises(CompileError, match=pattern):
        load_amaranth(text.format(m=module))


def test_clock_domain_defined_inside_is_refused(module):
    """A design that defines its own ``sync`` domain would otherwise compile to nothing (its
    flip-flops on a constant clock): refused, in one line."""
    with pytest.raises(CompileError, match=r"flip-flops with a constant clock .*"
                       r"m\.domains\.sync = ClockDomain\(\)") as info:
        netlist_from_amaranth(load_amaranth(f"{module}:LocalSync"))
    assert "\n" not in str(info.value)


def test_not_an_elaboratable(module):
    with pytest.raises(CompileError, match="not an Amaranth"):
        load_amaranth(f"{module}:wiring")
