"""The Amaranth front end: an Amaranth design through its RTLIL back end into the Yosys flow.

A design is an :class:`amaranth.lib.wiring.Component` (its signature gives the ports, names,
widths and signedness) or a plain :class:`amaranth.hdl.Elaboratable` (its ports are
``ports=``, or else every :class:`~amaranth.hdl.Signal` attribute of the object; Amaranth
decides which are inputs and outputs). :func:`load_amaranth` finds one from the command line's
``module:Name`` text (``mypkg.alu:ALU(width=8)``, or a file ``path/alu.py:ALU``).

The ``sync`` clock domain becomes the design clock: its ``clk`` is removed from the ports as in
:mod:`.frontend`; its reset ``rst`` (synchronous, as Amaranth's are) stays an input port, to be
held 0 when not used. Another clock domain is refused as a second clock. ``init`` values of
signals are the flip-flops' initial values.
"""

import ast
import importlib
import importlib.util
import os
import pathlib
import sys
import tempfile

from .errors import CompileError
from .frontend import synthesize

__all__ = ["load_amaranth", "elaborate_amaranth", "netlist_from_amaranth"]


def _literal(node, text):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CompileError(f"{text}: arguments must be Python literals (numbers, strings, "
                           "True/False, tuples, lists), not "
                           f"{ast.get_source_segment(text, node) or '?'}") from None


def _import(module_text):
    """The module named ``module_text`` (a dotted name, searched from the current folder
    first, or a ``.py`` file path)."""
    if module_text.endswith(".py") or os.sep in module_text or "/" in module_text:
        path = pathlib.Path(module_text)
        if not path.is_file():
            raise CompileError(f"{module_text}: no such Python file")
        name = f"_bitgrid_design_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_text)
    finally:
        if added:
            sys.path.remove(cwd)


def load_amaranth(text):
    """The Amaranth elaboratable that ``text`` (``module:Name``, ``module:Name(args)`` or
    ``path/file.py:Name(...)``) names: a class or factory is called (with the literal
    arguments given, else none), an existing instance is used as is.

    :raises CompileError: a malformed text, a module that cannot be imported, a missing name,
        non-literal arguments, a constructor that raised, or an object that is not an
        Amaranth elaboratable.
    """
    from amaranth.hdl import Elaboratable
    if not isinstance(text, str) or ":" not in text:
        raise CompileError(f"--amaranth takes module:Name (e.g. mypkg.alu:ALU(width=8)), not "
                           f"{text!r}")
    module_text, _, expression = text.partition(":")
    try:
        tree = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        raise CompileError(f"--amaranth {text}: after the colon comes Name or Name(args), not "
                           f"{expression!r}") from None
    call = None
    if isinstance(tree, ast.Call):
        call, tree = tree, tree.func
    chain = []
    while isinstance(tree, ast.Attribute):
        chain.insert(0, tree.attr)
        tree = tree.value
    if not isinstance(tree, ast.Name):
        raise CompileError(f"--amaranth {text}: after the colon comes Name or Name(args)")
    chain.insert(0, tree.id)
    try:
        module = _import(module_text)
    except CompileError:
        raise
    except Exception as error:      # noqa: BLE001 - any error of the user's module
        raise CompileError(f"cannot import {module_text}: {type(error).__name__}: "
                           f"{error}".splitlines()[0]) from None
    target = module
    for name in chain:
        if not hasattr(target, name):
            raise CompileError(f"{module_text} has no {'.'.join(chain)}")
        target = getattr(target, name)
    if call is not None or (callable(target) and not isinstance(target, Elaboratable)):
        args = [_literal(a, expression) for a in call.args] if call else []
        kwargs = {k.arg: _literal(k.value, expression) for k in call.keywords} if call else {}
        if call is not None and any(k.arg is None for k in call.keywords):
            raise CompileError(f"--amaranth {text}: ** arguments are not supported")
        try:
            target = target(*args, **kwargs)
        except Exception as error:      # noqa: BLE001 - the user's constructor
            raise CompileError(f"{expression.strip()} raised {type(error).__name__}: "
                               f"{error}".splitlines()[0]) from None
    if not isinstance(target, Elaboratable):
        raise CompileError(f"{text} is a {type(target).__name__}, not an Amaranth "
                           "Elaboratable or Component")
    return target


def _signal_ports(elaboratable):
    from amaranth.hdl import Signal
    ports = []
    for value in vars(elaboratable).values():
        if isinstance(value, Signal):
            ports.append(value)
    return ports


def elaborate_amaranth(elaboratable, *, name=None, ports=None):
    """The RTLIL text of ``elaboratable`` with top module ``name`` (default: its class name).

    :raises CompileError: for an object that is not an elaboratable, a plain elaboratable
        without ports, or an error Amaranth raised while elaborating (its message).
    """
    from amaranth.back import rtlil
    from amaranth.hdl import Elaboratable, Signal
    from amaranth.lib import wiring
    if not isinstance(elaboratable, Elaboratable):
        raise CompileError(f"{elaboratable!r} is not an Amaranth Elaboratable or Component")
    name = name or type(elaboratable).__name__
    if ports is None and not isinstance(elaboratable, wiring.Component):
        ports = _signal_ports(elaboratable)
        if not ports:
            raise CompileError(f"{type(elaboratable).__name__} is a plain Elaboratable with no "
                               "Signal attributes: make it a wiring.Component or give ports=")
    # Signals Amaranth could not name (``self.a, self.b = Signal(), Signal()`` is "$signal")
    # take their attribute's name while converting.
    renamed = []
    if not isinstance(elaboratable, wiring.Component):
        for attribute, value in vars(elaboratable).items():
            if isinstance(value, Signal) and value.name.startswith("$") and \
                    any(value is port for port in ports):
                renamed.append((value, value.name))
                value.name = attribute
    try:
        return name, rtlil.convert(elaboratable, name=name, ports=ports)
    except Exception as error:      # noqa: BLE001 - Amaranth's elaboration errors
        text = " ".join(str(error).split()) or type(error).__name__
        raise CompileError(f"Amaranth could not elaborate {name}: {type(error).__name__}: "
                           f"{text}") from None
    finally:
        for signal, original in renamed:
            signal.name = original


def netlist_from_amaranth(elaboratable, *, name=None, ports=None):
    """Synthesise an Amaranth design (see the module docstring) like a Verilog one.

    :returns: a :class:`~.frontend.SynthesisResult`; its ``stats["times"]`` has
        ``"elaborate"`` (seconds in Amaranth) besides Yosys' ``"synthesis"`` and ``"parse"``.
    :raises CompileError: as :func:`elaborate_amaranth` and :func:`.frontend.synthesize`.
    """
    import time
    start = time.perf_counter()
    name, text = elaborate_amaranth(elaboratable, name=name, ports=ports)
    elaborate = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="bitgrid-amaranth-") as folder:
        path = pathlib.Path(folder) / f"{name}.il"
        path.write_text(text)
        result = synthesize(path, top=name)
    result.stats["times"] = {"elaborate": elaborate, **result.stats["times"]}
    return result
