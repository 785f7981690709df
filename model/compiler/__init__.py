"""The BitGrid compiler: Verilog, Amaranth and expressions to a BitGrid program (issue 12).

The flow: a front end (:mod:`.frontend`: Verilog through Yosys; :mod:`.amaranth`: Amaranth
through its RTLIL back end into the same Yosys flow; :mod:`.expr`: the ``--expr`` shorthand,
generating Verilog) gives a :class:`bitgrid.netlist.Netlist` of 4-input LUTs and flip-flops;
the back end (:func:`compile_netlist`) packs, places, routes and balances it into a
:class:`bitgrid.config.Configuration` with its :class:`bitgrid.ports.PortMap`;
:func:`compile` (:mod:`.flow`) runs the whole flow and :func:`write_outputs` writes
``TOP.bgbs``, ``TOP.ports.json`` and ``TOP.report.json``.

Names are imported on first use, so that ``import bitgrid.compiler`` does not load Amaranth.
"""

import importlib

__all__ = ["CompileError", "compile", "write_outputs", "output_paths", "synthesize",
           "netlist_from_json", "SynthesisResult", "elaborate_amaranth", "netlist_from_amaranth", "load_amaranth",
           "expression_design", "parse_expression", "compile_netlist", "CompileResult"]

_HOMES = {
    "CompileError": ".errors",
    "compile": ".flow", "write_outputs": ".flow", "output_paths": ".flow",
    "synthesize": ".frontend", "netlist_from_json": ".frontend", "SynthesisResult": ".frontend",
    "elaborate_amaranth": ".amaranth", "netlist_from_amaranth": ".amaranth",
    "load_amaranth": ".amaranth",
    "expression_design": ".expr", "parse_expression": ".expr",
    "compile_netlist": ".backend", "CompileResult": ".backend",
}


def __getattr__(name):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'bitgrid.compiler' has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
