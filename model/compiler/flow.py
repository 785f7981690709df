"""The whole compile flow: a design (Verilog, Amaranth or an expression) to a BitGrid program.

:func:`compile` runs a front end (:mod:`.frontend`, :mod:`.amaranth`, :mod:`.expr`) and the back
end (:func:`bitgrid.compiler.backend.compile_netlist`) and merges their reports;
:func:`write_outputs` writes ``TOP.bgbs``, ``TOP.ports.json`` and ``TOP.report.json``.
``bitgrid compile`` (:mod:`bitgrid.cli.compile`) is this on the command line.

The report (``TOP.report.json``, a JSON object) holds the back end's figures (``grid``,
``region``, ``bounding_box``, ``cells``: logic, routing, delay and total cells used,
``luts``, ``flip_flops``, ``period`` and ``latency`` in subcycles) and adds ``top``,
``front_end`` (``verilog``, ``amaranth`` or ``expr``), ``sources``, ``yosys`` (the LUT4 and
flip-flop counts of Yosys' mapping), ``clock`` (the clock port removed, or null), ``times``
(seconds per stage: ``elaborate`` for Amaranth, ``synthesis``, ``parse``, then the back
end's ``pack``, ``place``, ``route``, ``timing``..., and ``check``), ``checked`` (the rows the
program was checked on against the design, 0 with ``check=False``) and ``total_time``
(seconds), ``dropped`` (the simulation-only statements the front end dropped, each
``"CONSTRUCT at FILE:LINE"``: ``$display``, ``$finish``, assertions...; empty if none). A
design the library has a block for also names it (``blocks``, ``operation``); a check that ran
on fewer rows than it chose, because they would not fit the memory, says so in
``check_notes`` (a list of one-line notes, only then).
"""

import json
import inspect
import os
import pathlib
import tempfile
import time

from .. import bitstream, defects as _defects, ports as _ports
from ..files import atomic_write
from ..terms import parse_region as _parse_region
from .errors import CompileError

__all__ = ["compile", "front_end", "write_outputs", "parse_region", "read_defects",
           "output_paths"]


def parse_region(region):
    """``(x0, y0, x1, y1)`` from ``"x0,y0,x1,y1"`` or four ints (corners inclusive, either
    corner first: :func:`bitgrid.terms.parse_region`, SPEC section 10), or None.

    :raises CompileError: for another form.
    """
    if region is None:
        return None
    try:
        return tuple(_parse_region(region))
    except ValueError as error:
        raise CompileError(f"--{error}") from None


def read_defects(defects):
    """``defects`` as :func:`compile` takes it: a :class:`~bitgrid.defects.DefectMap` or None
    as it is, a path read as a ``bitgrid-defects-v1`` file.

    :raises CompileError: if the file cannot be read.
    :raises bitgrid.defects.DefectMapError: if it is not a defect map.
    """
    if not isinstance(defects, (str, os.PathLike)):
        return defects
    try:
        return _defects.load(defects)
    except OSError as error:
        raise CompileError(f"{os.fspath(defects)}: cannot read the defect map: "
                           f"{error.strerror or error}") from None


def _is_elaboratable(value):
    try:
        from amaranth.hdl import Elaboratable
    except ImportError:
        return False
    return isinstance(value, Elaboratable)


def _takes_detail(callback):
    """Whether ``callback`` takes a fourth argument (a progress callback's ``detail``)."""
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind(None, None, None, None)
    except TypeError:
        return False
    return True


def front_end(design=None, *, top=None, amaranth=None, expr=None, vars=None,
              parameters=None, ports=None, passes=None):
    """Run the front end that the arguments name (see :func:`compile`).

    :returns: ``(SynthesisResult, info)``, ``info`` the report's ``front_end`` and
        ``sources`` entries.
    :raises CompileError: for a bad combination of arguments or a refused design.
    """
    given = [name for name, value in (("design", design), ("amaranth", amaranth),
                                      ("expr", expr)) if value is not None]
    if len(given) != 1:
        raise CompileError("give one design: Verilog sources with --top, --amaranth "
                           "module:Name, or --expr" + (f" (got {', '.join(given)})"
                                                       if given else ""))
    if expr is None and vars is not None:
        raise CompileError("--vars goes with --expr")
    if expr is not None:
        from .expr import expression_design
        from .frontend import synthesize
        if parameters:
            raise CompileError("--param goes with Verilog sources")
        name = top or "expr"
        _, verilog = expression_design(expr, vars, top=name)
        with tempfile.TemporaryDirectory(prefix="bitgrid-expr-") as folder:
            path = pathlib.Path(folder) / f"{name}.v"
            path.write_text(verilog)
            result = synthesize(path, top=name, passes=passes)
        return result, {"front_end": "expr", "sources": [expr]}
    if amaranth is not None or _is_elaboratable(design):
        from .amaranth import load_amaranth, netlist_from_amaranth
        if parameters:
            raise CompileError("--param goes with Verilog sources (give Amaranth parameters "
                               "as module:Name(width=8))")
        elaboratable = load_amaranth(amaranth) if amaranth is not None else design
        result = netlist_from_amaranth(elaboratable, name=top, ports=ports)
        source = amaranth if amaranth is not None else type(design).__name__
        return result, {"front_end": "amaranth", "sources": [source]}
    from .frontend import synthesize
    sources = [design] if isinstance(design, (str, os.PathLike)) else list(design)
    if top is None:
        raise CompileError("--top NAME is needed: the top module of the Verilog sources")
    result = synthesize(sources, top=top, parameters=parameters, passes=passes)
    return result, {"front_end": "verilog", "sources": [str(s) for s in sources]}


def compile(design=None, *, top=None, amaranth=None, expr=None, vars=None, parameters=None,
            ports=None, width=None, height=None, region=None, defects=None, pins=None,
            seed=0, progress=None, check=True, objective="area-time"):
    """Compile a design into a BitGrid program (issue 12): one of

    * ``design``: Verilog/SystemVerilog source paths (a path or a list; ``.il`` files are
      RTLIL) with ``top`` (the top module) and ``parameters`` (``{name: value}`` for the top's
      parameters), or an Amaranth elaboratable object (``top``: the module name, default its
      class name; ``ports``: for a plain Elaboratable);
    * ``amaranth="mypkg.alu:ALU(width=8)"`` (see :func:`.amaranth.load_amaranth`);
    * ``expr="p = a * b"`` with ``vars="a:8,b:8"`` (:mod:`.expr`; ``top`` default ``expr``).

    Back-end options (:func:`~bitgrid.compiler.backend.compile_netlist`): ``width`` and
    ``height`` (the grid in cells; default the smallest that fits), ``region`` (``(x0, y0,
    x1, y1)`` or ``"x0,y0,x1,y1"``, corners inclusive: only those cells are used), ``defects``
    (a :class:`~bitgrid.defects.DefectMap` or the path of a ``bitgrid-defects-v1`` file: its
    cells are avoided), ``pins``, ``seed`` (placement), ``objective`` (``"area-time"``: the
    fewest cells x period; ``"area"``: the fewest cells), ``progress`` (``progress(stage, done,
    total)``; the front end reports stage ``"synthesis"``, the check ``"check"``).

    With ``check`` (the default) the program is run on the bit-parallel emulator against the
    netlist's own simulation before it is returned (:func:`.check.check_program`: every input
    combination up to 16 input bits, else 1,000 random rows or cycles); the report's
    ``checked`` gives the rows (0 without the check).

    :returns: a :class:`~bitgrid.compiler.backend.CompileResult` ``(config, portmap,
        report)``; the report is described in this module's docstring.
    :raises CompileError: for a refused design (what and why), one that does not fit, or a
        program that differs from the design (``compiler bug: ...``, naming the row and port),
        or a defect map file that cannot be read.
    :raises bitgrid.defects.DefectMapError: for a defect map file that is not a defect map.
    :raises bitgrid.toolchain.ToolMissingError: if Yosys is not installed.
    """
    from .backend import compile_netlist
    started = time.perf_counter()
    region = parse_region(region)
    defects = read_defects(defects)
    passes = None
    if progress is not None:
        progress("synthesis", 0, 0)
        # Yosys' passes as it starts them: a count (the total is not known before), and the
        # pass's name to a callback that takes one (``progress(stage, done, total, detail)``)
        detailed = _takes_detail(progress)

        def passes(done, name):
            if detailed:
                progress("synthesis", done, 0, name)
            else:
                progress("synthesis", done, 0)
    synthesis, info = front_end(design, top=top, amaranth=amaranth, expr=expr, vars=vars,
                                parameters=parameters, ports=ports, passes=passes)
    netlist = synthesis.netlist
    result = compile_netlist(netlist, width=width, height=height, region=region,
                             defects=defects, pins=pins, seed=seed, progress=progress,
                             alternatives=synthesis.alternatives,
                             operation=synthesis.operation, objective=objective,
                             composition=synthesis.composition)
    checked = 0
    if check:
        from .check import check_program
        started_check = time.perf_counter()
        notes = []
        checked = check_program(netlist, result.config, result.portmap, progress=progress,
                                notes=notes)
        result.report.setdefault("times", {})["check"] = round(
            time.perf_counter() - started_check, 4)
        if notes:                   # fewer rows than planned: past the memory or the time
            result.report["check_notes"] = notes
    report = {"top": netlist.name, **info,
              "yosys": {"luts": synthesis.stats["luts"],
                        "flip_flops": synthesis.stats["flip_flops"]},
              "clock": synthesis.stats["clock"], "dropped": list(synthesis.dropped)}
    report.update(result.report)
    if synthesis.stats.get("compose_failed"):     # (the front end's part of it)
        report.setdefault("compose_failed", synthesis.stats["compose_failed"])
    # the subcycles from a row's start to its last output bit (latency + the last skew): when
    # a whole row can be read (docs/ports.md, docs/serve.md "Rows")
    report["depth"] = result.portmap.depth
    report["checked"] = checked
    report["times"] = {**synthesis.stats.get("times", {}), **result.report.get("times", {})}
    report["total_time"] = time.perf_counter() - started
    return result._replace(report=report)


def output_paths(directory, top):
    """``(bgbs, ports, report)`` paths that :func:`write_outputs` writes for ``top``."""
    directory = pathlib.Path(directory)
    return (directory / f"{top}.bgbs", directory / f"{top}.ports.json",
            directory / f"{top}.report.json")


def write_outputs(result, directory, *, top=None):
    """Write ``result`` (a :class:`~bitgrid.compiler.backend.CompileResult`) into
    ``directory`` (made if missing): ``TOP.bgbs`` (the program, BGBS, SPEC section 5),
    ``TOP.ports.json`` (``bitgrid-ports-v1``) and ``TOP.report.json``; ``top`` defaults to
    ``result.report["top"]``. Each file is written atomically.

    :returns: the three paths.
    :raises OSError: if the folder cannot be made or a file cannot be written.
    """
    top = top or result.report.get("top") or "design"
    paths = output_paths(directory, top)
    pathlib.Path(directory).mkdir(parents=True, exist_ok=True)
    bitstream.save(paths[0], result.config)
    _ports.save(paths[1], result.portmap, result.config)
    atomic_write(paths[2], json.dumps(result.report, indent=2, sort_keys=False) + "\n")
    return paths
