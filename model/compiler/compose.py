"""A memory and the logic around it: the memory's library block as a macro, the logic on the
general back end above it, joined by exactly timed wires (issues 36 item 5 and 40).

A FIFO, a register file behind address counters or a table read at a computed address is one
Yosys memory (``$mem_v2``) whose address, data and enable come from logic, not from the
design's ports. :func:`split_memory` cuts the memory out of the coarse netlist: the logic
left (the *glue*) gets an output port per memory input (``bgmem_we``, ``bgmem_waddr``,
``bgmem_wdata``, ``bgmem_raddr``, ``bgmem_raddr1``...), and the memory alone is recognised
as the design's memories are (:func:`.memories.recognise_memory`) with those ports as its
inputs and the design's output ports as its read data. The front end maps the glue into LUT4s
with a second Yosys run (:func:`glue_script`).

:func:`compile_composition` lays the block out alone (its inputs on its N side, its read data
on its S side: :func:`bitgrid.library.memory.register_file`) and compiles the glue on the
general back end on a grid above it, each ``bgmem_*`` bit pinned to the S lane over the
block's input and *tied* to the others (:func:`.timing.solve_waves`' ``ties``): its wave
comes exactly the block's skew after the others', so the block sees every row as its own
port timing asks (a row on each input for the whole period from its skew; the block works at
any even period). The glue's period (its loops') is the program's. The port map joins the
glue's ports and the block's read data, which leaves on the grid's S edge, at the block's
latency after the glue's wave.

Limits (the other candidates compile these): the read data must be whole output ports read
by nothing else (no logic after the memory), the read ports combinational (no register lag),
and no region, defect map or fixed pins.
"""

import copy
import time
import typing

from ..library import MACROS, LibraryError
from ..ports import PortMap
from ..terms import N, S
from .errors import CompileError
from .memories import recognise_memory
from .operations import Coarse, Operation

__all__ = ["Composition", "split_memory", "gate_writes", "glue_script", "compile_composition",
           "GLUE_PREFIX"]

#: Prefix of the glue's output ports that carry the memory's inputs.
GLUE_PREFIX = "bgmem_"


class Composition(typing.NamedTuple):
    """A design split by :func:`split_memory`: ``operation`` (the memory's
    :class:`.operations.Operation`, its inputs mapped to the glue's ``bgmem_*`` output ports,
    its read data to the design's output ports) and ``glue`` (the
    :class:`~bitgrid.netlist.Netlist` of the rest, whose outputs are the design's other
    outputs and the ``bgmem_*`` ports)."""
    operation: Operation
    glue: typing.Any


def split_memory(document, top):
    """``(glue document, operation)`` if module ``top`` of the coarse Yosys JSON ``document``
    has exactly one memory whose read data are whole output ports that nothing else reads and
    that :func:`.memories.recognise_memory` takes on its own (combinational reads); else
    None. The glue document is ``top`` without the memory cell and the read data ports, with
    an output port per memory input (:data:`GLUE_PREFIX`)."""
    module = document.get("modules", {}).get(top)
    if module is None:
        return None
    cells = module.get("cells", {})
    memories = [name for name, cell in cells.items() if cell["type"] == "$mem_v2"]
    if len(memories) != 1:
        return None
    memory = cells[memories[0]]
    pins = {k: tuple(v) for k, v in memory.get("connections", {}).items()}
    parameters = memory.get("parameters", {})
    try:
        width, reads = int(str(parameters["WIDTH"]), 2), int(str(parameters["RD_PORTS"]), 2)
        abits, writes = int(str(parameters["ABITS"]), 2), int(str(parameters["WR_PORTS"]), 2)
    except (KeyError, ValueError):
        return None
    if writes > 1 or not reads:
        return None
    ports = module.get("ports", {})
    outputs = {name: tuple(p["bits"]) for name, p in ports.items()
               if p["direction"] == "output"}
    data = pins.get("RD_DATA", ())
    read_bits = set(b for b in data if isinstance(b, int))
    taken = {}
    for r in range(reads):
        bits = data[r * width:(r + 1) * width]
        name = next((n for n, p in outputs.items() if p == bits), None)
        if name is None:
            return None
        taken[name] = bits
    for name, bits in outputs.items():          # read data nowhere else
        if name not in taken and read_bits & set(bits):
            return None
    for name, cell in cells.items():
        if name == memories[0]:
            continue
        directions = cell.get("port_directions", {})
        for port, bits in cell.get("connections", {}).items():
            if directions.get(port, "input") != "output" and read_bits & set(
                    b for b in bits if isinstance(b, int)):
                return None
    # the glue's new outputs: one port per distinct memory input
    inputs = {}

    def expose(name, bits):
        bits = tuple(bits)
        for other, known in inputs.items():
            if known == bits:
                return other
        inputs[GLUE_PREFIX + name] = bits
        return GLUE_PREFIX + name

    if writes:
        resolve, canonical = _write_muxes(cells)
        pins["WR_DATA"] = tuple(resolve(b) for b in pins["WR_DATA"])
        pins["WR_ADDR"] = tuple(resolve(b) for b in pins["WR_ADDR"])
        if len({canonical(b) for b in pins["WR_EN"]}) != 1:
            return None                 # byte lanes: not this block
        # always an enable (constant 1 if every row writes): the glue gates it with the
        # start net (:func:`gate_writes`)
        enable = resolve(pins["WR_EN"][0])
        pins["WR_EN"] = ((enable,) if enable != "1" else ("we",)) * len(pins["WR_EN"])
        expose("we", pins["WR_EN"][:1])     # ("we",): constant 1 in the glue (below)
        expose("waddr", pins["WR_ADDR"])
        expose("wdata", pins["WR_DATA"])
    for r in range(reads):
        expose("raddr" + (str(r) if r else ""), pins["RD_ADDR"][r * abits:(r + 1) * abits])
    alone = Coarse(dict(inputs), dict(taken), (("$mem_v2", _parameters(parameters), pins),),
                   {})
    operation = recognise_memory(alone)
    if operation is None or operation.lag or operation.input_lags:
        return None
    glue = copy.deepcopy(module)
    del glue["cells"][memories[0]]
    for name in taken:
        del glue["ports"][name]
    for name, bits in inputs.items():
        if name in glue["ports"]:
            return None                 # a design port with that name
        glue["ports"][name] = {"direction": "output",
                               "bits": ["1" if bit == "we" else bit for bit in bits]}
    return {"creator": document.get("creator", ""), "modules": {top: glue}}, operation


def gate_writes(glue):
    """``glue`` (a :class:`~bitgrid.netlist.Netlist` from :func:`split_memory`'s document)
    with its ``bgmem_we`` output ANDed with the start net (:data:`bitgrid.netlist.START`: 0
    in the rows before row 0, 1 from row 0 on). The block's lanes are 0 after reset, but
    the glue's logic may compute a 1 there before its row 0 (``we = !nwe`` on a lane still
    0), and a write then would change the memory's initial contents."""
    from ..netlist import START, Lut, Netlist, OutputPort
    name = GLUE_PREFIX + "we"
    if name not in glue.outputs:
        return glue
    (enable,) = glue.outputs[name].bits
    gated = name + "$started"
    luts = dict(glue.luts)
    luts[gated] = Lut((enable, START), 0b1000)
    outputs = dict(glue.outputs)
    outputs[name] = OutputPort((gated,), False)
    return Netlist(glue.name, glue.inputs, outputs, luts, glue.dffs)


def _write_muxes(cells):
    """``(resolve, canonical)`` for the ``$mux`` cells Yosys puts in front of a memory's write
    port: ``resolve(bit)`` is the bit that ``bit`` stands for where the port does not care
    (``en ? d : x`` is ``d``, ``en ? 1 : 0`` is ``en``, through any number of them; other bits
    are themselves); ``canonical(bit)`` is the same value for bits that the same muxes of the
    same bits compute (the write enable is a mux per data bit)."""
    rename, driven = {}, {}
    for cell in cells.values():
        c = cell.get("connections", {})
        if cell["type"] != "$mux" or len(c.get("S", ())) != 1:
            continue
        a, b, y = c["A"], c["B"], c["Y"]
        for i, bit in enumerate(y):
            driven[bit] = (a[i], b[i], c["S"][0])
        if all(bit == "x" for bit in a):
            source = b
        elif all(bit == "x" for bit in b):
            source = a
        elif all(bit == "0" for bit in a) and all(bit == "1" for bit in b):
            source = list(c["S"]) * len(y)
        else:
            continue
        rename.update(zip(y, source))

    def resolve(bit):
        seen = 0
        while bit in rename and seen <= len(rename):
            bit, seen = rename[bit], seen + 1
        return bit

    memo = {}

    def canonical(bit, depth=0):
        if bit not in driven or depth > len(driven):
            return bit
        if bit not in memo:
            a, b, select = driven[bit]
            memo[bit] = ("mux", canonical(a, depth + 1), canonical(b, depth + 1), select)
        return memo[bit]
    return resolve, canonical


def _parameters(parameters):
    """The memory cell's parameters as :func:`.operations.coarse_from_json` reads them."""
    from .operations import _parameter
    return {k: _parameter(v) for k, v in parameters.items()}


def glue_script(source, top, output):
    """The Yosys commands that map the glue (a JSON file ``source``) into LUT4s and flip-flops
    as the front end maps designs (:func:`.frontend.yosys_script`), written to ``output``
    (paths relative to Yosys' folder)."""
    return [f"read_json {source}", f"hierarchy -top {top}",
            f"synth -flatten -top {top} -noabc",
            "dfflegalize -cell $_DFF_P_ 01 -cell $_DFF_N_ 01",
            "abc -lut 4", "opt_clean -purge", f"write_json {output}"]


def compile_composition(composition, netlist, *, seed=0, progress=None,
                        objective="area-time"):
    """The program of a design split by :func:`split_memory`: the memory's block at the
    grid's south-west, the glue above it on the general back end (module docstring).

    :param netlist: the whole design's :class:`~bitgrid.netlist.Netlist` (its ports name the
        program's; the compiler checks the program against it).
    :returns: :class:`~bitgrid.compiler.backend.CompileResult` (report ``back_end``
        ``"compose"``, ``blocks`` the block's name, ``glue`` the general back end's report).
    :raises CompileError: if the block or the glue cannot be laid out.
    """
    from .backend import CompileResult
    from .blocks import standalone_report
    from .general import compile_general, even_up
    started = time.perf_counter()
    operation, glue = composition
    try:
        block = MACROS[operation.macro].build(**operation.params)
    except LibraryError as error:
        raise CompileError(f"the {operation.describe()} block: {error}") from None
    first = block.standalone()
    fixed, ties = {}, {}
    for port in first.portmap.ports:
        if port.direction != "in":
            continue
        name = operation.ports.get(port.name)
        if not isinstance(name, str) or name not in glue.outputs:
            raise CompileError(f"the {operation.describe()} block's input {port.name} is "
                               "not one of the glue's outputs")
        for i, bit in enumerate(port.bits):
            if bit.side != N:
                raise CompileError(f"the {block.name} block takes {port.name} on its "
                                   f"{bit.side.letter} side, not N")
            fixed[(name, i)] = (int(S), bit.lane)
            ties[(name, i)] = bit.skew
    for name in glue.outputs:
        if name.startswith(GLUE_PREFIX) and not any(k[0] == name for k in fixed):
            raise CompileError(f"the glue's {name} feeds no input of the block")
    result = compile_general(glue, width=None, height=None, region=None, defects=None,
                             fixed=fixed, seed=seed, progress=progress,
                             objective=objective, ties=ties, closed_sides=(int(S),),
                             any_period=False)
    gconfig, gmap = result.config, result.portmap
    gw, gh = gconfig.width, gconfig.height
    width = max(gw, even_up(block.width))
    alone = block.standalone(width=width)
    if gh % 2:
        raise CompileError(f"the glue's grid is {gh} rows high: an odd offset for the block")
    # the block's time base: where its inputs' waves are (every tie holds)
    glue_ports = {p.name: p for p in gmap.ports}
    bases = set()
    for port in alone.portmap.ports:
        if port.direction == "in":
            own = glue_ports[operation.ports[port.name]]
            for bit, at in zip(port.bits, own.bits):
                if (at.side, at.lane) != (S, bit.lane):
                    raise CompileError(f"the glue put {own.name} on {at.side.letter}{at.lane}, "
                                       f"not S{bit.lane} over the block")
                bases.add(gmap.latency + at.skew - bit.skew)
    if len(bases) != 1:
        raise CompileError(f"the glue's waves into the {block.name} block are not its skews "
                           f"apart (block times {sorted(bases)}): a compiler bug")
    base = bases.pop()
    times = {}                          # output bit -> subcycle + 1 of its row 0 (latency + skew)
    for port in gmap.ports:
        if port.direction == "out":
            for i, bit in enumerate(port.bits):
                times[(port.name, i)] = (bit, gmap.latency + bit.skew)
    names = {}
    for port in alone.portmap.ports:
        if port.direction == "out" and port.name in operation.ports:
            name = operation.ports[port.name]
            names[name] = port
            for i, bit in enumerate(port.bits):
                if bit.side == S:
                    bit = bit._replace(lane=bit.lane)
                elif bit.side == S.opposite or bit.side == N:
                    raise CompileError(f"the {block.name} block's {port.name} leaves N")
                else:           # E or W: rows below the glue
                    bit = bit._replace(lane=bit.lane + gh)
                times[(name, i)] = (bit, base + alone.portmap.latency + bit.skew)
    latency = max([t for _, t in times.values()] + [1])
    ports = []
    for name, port in netlist.inputs.items():
        own = glue_ports.get(name)
        if own is None:
            raise CompileError(f"input {name} is not the glue's")
        ports.append({"name": name, "direction": "in", "signed": port.signed,
                      "bits": [bit.to_json() for bit in own.bits]})
    for name, port in netlist.outputs.items():
        bits = []
        for i in range(len(port.bits)):
            if (name, i) not in times:
                raise CompileError(f"output {name}[{i}] is neither the glue's nor the block's")
            bit, t = times[(name, i)]
            bits.append(bit._replace(skew=t - latency).to_json())
        ports.append({"name": name, "direction": "out", "signed": port.signed, "bits": bits})
    height = gh + alone.config.height
    luts = _stack(gconfig, alone.config, width, height)
    from ..config import Configuration
    config = Configuration(width, height, luts)
    portmap = PortMap(width, height, ports, period=gmap.period, latency=latency)
    report = standalone_report(config, portmap, netlist, "compose", started,
                               blocks=[block.name], operation=operation.kind,
                               glue={k: result.report[k] for k in
                                     ("grid", "cells", "luts", "flip_flops", "period")})
    report["period"] = gmap.period
    return CompileResult(config, portmap, report)


def _stack(top, bottom, width, height):
    """The LUT array of configuration ``top`` above ``bottom`` on a ``width`` x ``height``
    grid (each at x = 0)."""
    import numpy as np
    luts = np.zeros((height, width, 4), dtype=np.uint16)
    luts[:top.height, :top.width] = top.luts
    luts[top.height:top.height + bottom.height, :bottom.width] = bottom.luts
    return luts
