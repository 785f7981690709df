"""A memory and the logic around it: the memory's library block as a macro inside the grid
of the general back end, which places and routes the logic around it with exactly timed
wires (issues 36 item 5 and 40).

A FIFO, a register file behind address counters, a table read at a computed address (a phase
accumulator's) or a memory whose read data feed more logic is one Yosys memory (``$mem_v2``)
whose ports are not the design's. :func:`split_memory` cuts the memory out of the coarse
netlist: the logic left (the *glue*) gets an output port per memory input (``bgmem_we``,
``bgmem_waddr``, ``bgmem_wdata``, ``bgmem_raddr``, ``bgmem_raddr1``...) and an input port per
read port (``bgmem_rdata``...), and the memory alone is recognised as the design's memories
are (:func:`.memories.recognise_memory`) with those ports as its own. The front end maps the
glue into LUT4s with a second Yosys run (:func:`glue_script`) and gates its write enable with
the start net (:func:`gate_writes`).

:func:`compile_composition` compiles the glue on the general back end with the block as a
:class:`Macro`: a box of cells the glue does not use, near the grid's south-west corner, whose
input bits are wires into its N side from the glue cells above and whose read data are wires
out of its S side into the glue cells below. Each such bit is a pin inside the grid
(:class:`.place.Placement`'s ``inner``), and their waves are *tied*
(:func:`.timing.solve_waves`' ``ties``): the inputs exactly the block's skews apart, the
outputs its latency and skews after them, so the block sees every row as its port timing
asks (a row on each input for the whole period from its skew; the block works at any even
period) and the glue reads its results when they are there. The glue's period (its loops',
and any loop through the block) is the program's; the block's LUTs are written into its box.

A registered read port (``if (pop) dout <= m[rp]``: Yosys merges the register, its enable
and its initial value into the port) becomes a combinational read and that register in the
glue. Limits (the other candidates compile these): one memory, one write port with one
enable for all bits, no read port with a reset or transparency, no region, defect map, size
or fixed pins.
"""

import copy
import time
import typing

from ..cell import COPY_N
from ..library import MACROS, LibraryError
from ..ports import Port, PortBit, PortMap
from ..terms import N, S, W
from .errors import CompileError
from .memories import mux_source, recognise_memory, resolver
from .operations import Coarse, Operation

__all__ = ["Composition", "Macro", "MacroSite", "compose_design", "split_memory", "gate_writes",
           "gate_reads", "glue_script", "compile_composition", "GLUE_PREFIX"]

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
    has exactly one memory that :func:`.memories.recognise_memory` takes on its own
    (combinational reads, one write enable); else None. The glue document is ``top`` without
    the memory cell, with an output port per memory input and an input port per read port
    (:data:`GLUE_PREFIX`)."""
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
    data = pins.get("RD_DATA", ())
    if any(not isinstance(bit, int) for bit in data):
        return None
    glue = copy.deepcopy(module)
    del glue["cells"][memories[0]]
    # registered read ports: the read combinational, its register in the glue
    parameters = dict(parameters)
    clocked = _mask(parameters.get("RD_CLK_ENABLE", "0"), reads)
    if any(clocked):
        data = _registers_out(glue, pins, parameters, clocked, width, writes)
        if data is None:
            return None
    # the glue's new inputs: the read data
    taken = {GLUE_PREFIX + "rdata" + (str(r) if r else ""): data[r * width:(r + 1) * width]
             for r in range(reads)}
    # the glue's new outputs: one port per memory input; the memory alone reads each port
    # on bits of its own (``"name.i"``: the same nets on two ports, as a write address that
    # is also the data, stay two ports), constants kept
    inputs, alone_pins = {}, dict(pins)

    def expose(name, bits, share=False):
        bits = tuple(bits)
        for other, known in inputs.items():
            # a read address that is the write address: one port (a single-port RAM)
            if share and known == bits and "addr" in other:
                return tuple(b if isinstance(b, str) and b in "01x" else f"{other}.{i}"
                             for i, b in enumerate(bits))
        name = GLUE_PREFIX + name
        inputs[name] = bits
        return tuple(b if isinstance(b, str) and b in "01x" else f"{name}.{i}"
                     for i, b in enumerate(bits))

    if writes:
        resolve, canonical = _write_muxes(cells)
        if len({canonical(b) for b in pins["WR_EN"]}) != 1:
            return None                 # byte lanes: not this block
        # always an enable (constant 1 if every row writes): the glue gates it with the
        # start net (:func:`gate_writes`)
        enable = resolve(pins["WR_EN"][0])
        alone_pins["WR_EN"] = (f"{GLUE_PREFIX}we.0",) * len(pins["WR_EN"])
        inputs[GLUE_PREFIX + "we"] = (enable,)
        alone_pins["WR_ADDR"] = expose("waddr", (resolve(b) for b in pins["WR_ADDR"]))
        alone_pins["WR_DATA"] = expose("wdata", (resolve(b) for b in pins["WR_DATA"]))
    addresses = []
    for r in range(reads):
        addresses += expose("raddr" + (str(r) if r else ""),
                            pins["RD_ADDR"][r * abits:(r + 1) * abits], share=True)
    alone_pins["RD_ADDR"] = tuple(addresses)
    alone_inputs = {name: tuple(f"{name}.{i}" if not (isinstance(b, str) and b in "01x")
                                or name == GLUE_PREFIX + "we" else b
                                for i, b in enumerate(bits)) for name, bits in inputs.items()}
    alone = Coarse(alone_inputs, dict(taken),
                   (("$mem_v2", _parameters(parameters), alone_pins),), {})
    operation = recognise_memory(alone)
    if operation is None or operation.lag or operation.input_lags:
        return None
    for name, bits in list(inputs.items()) + list(taken.items()):
        if name in glue["ports"]:
            return None                 # a design port with that name
        glue["ports"][name] = {"direction": "output" if name in inputs else "input",
                               "bits": list(bits)}
    return {"creator": document.get("creator", ""), "modules": {top: glue}}, operation


def _mask(value, count):
    """The ``count`` bits (port 0 first) of a Yosys mask parameter (a string, most
    significant first, or an int)."""
    if isinstance(value, int):
        return [(value >> i) & 1 for i in range(count)]
    text = str(value)[::-1]
    return [int(text[i] == "1") if i < len(text) else 0 for i in range(count)]


def _registers_out(glue, pins, parameters, clocked, width, writes):
    """Turn the registered read ports of a memory into combinational ones with a register
    each in the glue module ``glue`` (a ``$dff``, or a ``$dffe`` on the port's enable, its
    initial value the port's): a read of the contents before the clock edge, registered, is a
    read port without transparency. ``pins`` and ``parameters`` are changed to match.

    :returns: the read data bits (new nets for the registered ports), or None for a port
        with a reset, with transparency or on another clock."""
    reads = len(clocked)
    transparent = _mask(parameters.get("RD_TRANSPARENCY_MASK", "0"), reads)
    polarity = _mask(parameters.get("RD_CLK_POLARITY", "0"), reads)
    data = list(pins["RD_DATA"])
    used = [bit for port in glue.get("ports", {}).values() for bit in port["bits"]]
    used += [bit for cell in glue.get("cells", {}).values()
             for bits in cell.get("connections", {}).values() for bit in bits]
    used += [bit for wire in glue.get("netnames", {}).values() for bit in wire["bits"]]
    fresh = max([b for b in used + data if isinstance(b, int)], default=1) + 1
    init = str(parameters.get("RD_INIT_VALUE", "")).rjust(width * reads, "x")[::-1]
    for r in range(reads):
        if not clocked[r]:
            continue
        clock = pins["RD_CLK"][r]
        if transparent[r] or not polarity[r] or pins["RD_ARST"][r] != "0" \
                or pins["RD_SRST"][r] != "0" or writes and clock != pins["WR_CLK"][0]:
            return None
        q = data[r * width:(r + 1) * width]
        d = list(range(fresh, fresh + width))
        fresh += width
        data[r * width:(r + 1) * width] = d
        enable = pins["RD_EN"][r]
        kind = "$dff" if enable == "1" else "$dffe"
        cell = {"type": kind, "parameters": {"WIDTH": width, "CLK_POLARITY": 1},
                "port_directions": {"CLK": "input", "D": "input", "Q": "output"},
                "connections": {"CLK": [clock], "D": d, "Q": q}}
        if kind == "$dffe":
            cell["parameters"]["EN_POLARITY"] = 1
            cell["port_directions"]["EN"] = "input"
            cell["connections"]["EN"] = [enable]
        glue["cells"][f"$bgmem_rdreg{r}"] = cell
        value = init[r * width:(r + 1) * width][::-1]
        # (a wire's name apart from the cell's: Yosys keeps both in one namespace)
        glue.setdefault("netnames", {})[f"$bgmem_rdreg{r}_q"] = {
            "bits": q, "attributes": {"init": value} if set(value) <= set("01") else {}}
    zeros = "0" * reads
    parameters.update(RD_CLK_ENABLE=zeros, RD_TRANSPARENCY_MASK=zeros,
                      RD_COLLISION_X_MASK=zeros)
    pins["RD_DATA"] = tuple(data)
    pins["RD_EN"] = ("1",) * reads
    return tuple(data)


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


def gate_reads(glue, names):
    """``glue`` with every bit of its input ports ``names`` (a block's read data) ANDed with
    the start net where the glue reads it. The glue's logic, and the initial values of its
    flip-flops (:mod:`.pack`'s register gating), take every input as 0 before row 0, as a
    lane is; a block shows its contents there."""
    from ..netlist import START, Dff, Lut, Netlist, OutputPort
    gated = {}
    luts = dict(glue.luts)
    for name in names:
        for net in glue.inputs[name].bits:
            gated[net] = f"{net}$started"
            luts[gated[net]] = Lut((net, START), 0b1000)

    def new(net):
        return gated.get(net, net)
    for net, lut in glue.luts.items():
        luts[net] = Lut(tuple(new(i) for i in lut.inputs), lut.table)
    dffs = {q: Dff(new(dff.d), dff.init) for q, dff in glue.dffs.items()}
    outputs = {k: OutputPort(tuple(new(n) for n in port.bits), port.signed)
               for k, port in glue.outputs.items()}
    return Netlist(glue.name, glue.inputs, outputs, luts, dffs)


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
        source = mux_source(a, b, c["S"], inverted=False)
        if source is not None:
            rename.update(zip(y, source))
    resolve = resolver(rename)

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


def compose_design(document, top, folder, names=None):
    """``(composition, why)``: the :class:`Composition` of the design in the coarse Yosys
    JSON ``document`` if it is a memory and logic around it (:func:`split_memory`), its
    glue mapped by a second Yosys run in ``folder`` (:func:`glue_script`) and its write
    enable gated (:func:`gate_writes`), or None; ``why`` the glue's error where its mapping
    failed (the other back ends compile the design), else None. ``names`` as for
    :func:`.frontend.run_yosys`."""
    import json
    import pathlib
    from .frontend import _tcl_word, netlist_from_json, run_yosys
    split = split_memory(document, top)
    if split is None:
        return None, None
    glue_document, operation = split
    source = pathlib.Path(folder) / "glue.json"
    mapped = pathlib.Path(folder) / "glue.lut4.json"
    source.write_text(json.dumps(glue_document))
    try:
        run_yosys(glue_script(source.name, _tcl_word(top), mapped.name), folder=folder,
                  top=top, names=names)
        glue = netlist_from_json(json.loads(mapped.read_text()), top=top, names=names).netlist
    except CompileError as error:
        return None, f"the logic around the memory: {error}"
    return Composition(operation, gate_writes(glue)), None


def glue_script(source, top, output):
    """The Yosys commands that map the glue (a JSON file ``source``) into LUT4s and flip-flops
    as the front end maps designs (:func:`.frontend.yosys_script`), written to ``output``
    (paths relative to Yosys' folder)."""
    return [f"read_json {source}", f"hierarchy -top {top}",
            f"synth -flatten -top {top} -noabc",
            "dfflegalize -cell $_DFF_P_ 01 -cell $_DFF_N_ 01",
            "abc -lut 4", "opt_clean -purge", f"write_json {output}"]


class MacroSite(typing.NamedTuple):
    """Where a :class:`Macro` is on one grid: ``origin`` (x, y) of its box, ``blocked`` (its
    cells, ``(x, y)``), ``inner`` ``{(port, bit): (cell, wire)}`` (each of its ports' bits:
    the glue cell beside it and the wire between them,
    :class:`.place.Placement`), ``ties`` ``{(port, bit): offset}`` (subcycles: the
    glue's pin of each bit at exactly its offset after the others, :class:`.general.WaveTiming`)
    and ``closed``, the ``(side, lane)`` beside and under the box that no port takes."""
    origin: tuple
    blocked: frozenset
    inner: dict
    ties: dict
    closed: frozenset = frozenset()


class Macro:
    """A library block inside the general back end's grid, :data:`WEST` columns from its W
    edge (no port takes a lane beside it or under it: a route from there would have to go
    around it), its inputs on its N side and its outputs on its S side, each bit a port of
    the glue (``names``: block port -> glue port).

    Where the glue reads the block's outputs (``inner_outputs``), the box is
    :data:`MARGIN` rows and one per output bit above the S edge and each output bit is a
    wire into the glue cell below it; else (a FIFO's read data are output ports, nothing else) the box is against
    the S edge too and its outputs are the grid's S lanes under it, which no other port
    takes (:func:`compile_composition` adds them to the port map).

    An input bit of block skew ``s`` is read by the block's cell from the glue cell above it
    at the glue's tag ``B + s`` (``B`` the block's time base); an output bit of skew ``s``
    is computed at ``B + latency + s - 1`` (:class:`bitgrid.library.Block`'s contract), and
    the glue cell below reads it one subcycle later: these are the ties."""

    #: Columns between the box and the W edge (routes to its first inputs, which are its
    #: decoders', come from there too).
    WEST = 2
    #: Rows between the box and the S edge where the glue reads the block's outputs, beyond
    #: one per output bit (each row's eastward wires take one of them out from under it).
    MARGIN = 2

    def __init__(self, block, names, inner_outputs=True):
        self.block, self.names = block, names
        outputs = sum(port.width for port in block.outputs if port.name in names)
        self.margin = self.MARGIN + outputs if inner_outputs else 0
        self.ties, self.sides = {}, {}
        for port in block.ports:
            name = names.get(port.name)
            if name is None:
                continue
            for i, bit in enumerate(port.bits):
                wanted = N if port.direction == "in" else S
                if bit.side != wanted:
                    raise CompileError(f"the {block.name} block has {port.name} on its "
                                       f"{bit.side.letter} side, not {wanted.letter}")
                if port.direction == "out" and not inner_outputs:
                    continue
                offset = bit.skew if port.direction == "in" \
                    else block.latency + bit.skew - 1
                self.ties[(name, i)] = offset
                self.sides[(name, i)] = (port.direction, bit.lane)

    def through(self, glue):
        """``(outputs, inputs)`` of ``glue`` (nets) on the block's ports: its inputs' and its
        outputs' (:func:`.pack.prepare`)."""
        ports = set(self.names.values())
        return ([net for name, port in glue.outputs.items() if name in ports
                 for net in port.bits],
                [net for name, port in glue.inputs.items() if name in ports
                 for net in port.bits])

    def grid_for(self, width, height):
        """A grid with room for the glue's ``width`` x ``height`` (from
        :func:`.general.auto_size`) and the box with its margin."""
        from .general import even_up
        return (max(width, even_up(self.block.width + self.WEST + 2)),
                even_up(height + self.block.height + self.margin))

    def site(self, width, height):
        """The :class:`MacroSite` on a ``width`` x ``height`` grid.

        :raises CompileError: if the box does not fit."""
        bw, bh = self.block.width, self.block.height
        x0, y0 = self.WEST, height - self.margin - bh
        y0 -= (x0 + y0) % 2                 # an even offset: the block's own timing
        if x0 + bw > width or y0 < 1:
            raise CompileError(f"the {self.block.name} block ({bw} x {bh} cells) does not "
                               f"fit a {width} x {height} grid with the logic around it")
        blocked = frozenset((x0 + x, y0 + y) for y in range(bh) for x in range(bw))
        if not self.margin:                 # the S lanes under the box are its outputs'
            blocked |= frozenset((x0 + x, y) for y in range(y0 + bh, height)
                                 for x in range(bw))
        inner = {}
        for key, (direction, lane) in self.sides.items():
            x = x0 + lane
            if direction == "in":           # the glue cell above drives its S output
                cell = (y0 - 1) * width + x
                inner[key] = (cell, 4 * cell + int(S))
            else:                           # the block's cell drives the glue cell below
                cell = (y0 + bh) * width + x
                inner[key] = (cell, 4 * ((y0 + bh - 1) * width + x) + int(S))
        closed = frozenset([(int(S), x) for x in range(x0 + bw)]
                           + [(int(W), y) for y in range(y0, height)])
        return MacroSite((x0, y0), blocked, inner, dict(self.ties), closed)


def compile_composition(composition, netlist, *, seed=0, progress=None,
                        objective="area-time"):
    """The program of a design split by :func:`split_memory`: the memory's block inside the
    grid of the glue, which the general back end places and routes around it (module
    docstring).

    :param netlist: the whole design's :class:`~bitgrid.netlist.Netlist` (its ports name the
        program's; the compiler checks the program against it).
    :returns: :class:`~bitgrid.compiler.backend.CompileResult` (report ``back_end``
        ``"compose"``, ``blocks`` the block's name, ``glue`` the general back end's cells,
        LUTs, flip-flops and period).
    :raises CompileError: if the block or the glue cannot be laid out.
    """
    from .backend import CompileResult
    from .blocks import standalone_report
    from .general import compile_general
    started = time.perf_counter()
    operation, glue = composition
    try:
        block = MACROS[operation.macro].build(**operation.params)
    except LibraryError as error:
        raise CompileError(f"the {operation.describe()} block: {error}") from None
    names = {port: name for port, name in operation.ports.items() if isinstance(name, str)}
    unused = [name for name in glue.inputs if name not in netlist.inputs
              and not name.startswith(GLUE_PREFIX)]
    if unused:
        glue = _without_inputs(glue, unused)
    glue, direct = _direct_outputs(glue, names)
    if not direct:
        glue = gate_reads(glue, [name for port, name in names.items()
                                 if name in glue.inputs])
    macro = Macro(block, names, inner_outputs=not direct)
    try:
        result = compile_general(glue, width=None, height=None, region=None, defects=None,
                                 fixed={}, seed=seed, progress=progress, objective=objective,
                                 macro=macro, candidate=True)   # (it gives up sooner:
        # fifo8x8 the same 1,082 cells at period 26 in 6 s instead of 21; fifo16x8 refused
        # in 43 s instead of 90, 2026-12-07)
    except ValueError as error:         # (pack: a loop through the block's read)
        raise CompileError(f"the logic around the {block.name} block: {error}") from None
    config, portmap = result.config, result.portmap
    x0, y0 = macro.site(config.width, config.height).origin
    luts = config.luts.copy()
    for (x, y), tables in block.cells.items():
        luts[y0 + y, x0 + x] = tables
    height = config.height
    if direct:
        # the block's outputs leave on the S lanes under it (pass cells down to the edge)
        for port in block.outputs:
            for bit in port.bits:
                bx, by = block.bit_cell(bit)
                for y in range(y0 + by + 1, height):
                    luts[y, x0 + bx, int(S)] = COPY_N
        portmap = _with_outputs(portmap, netlist, direct, block, x0,
                                result.report["macro_time"] + height - (y0 + block.height))
    from ..config import Configuration
    config = Configuration(config.width, config.height, luts)
    report = standalone_report(config, portmap, netlist, "compose", started,
                               blocks=[block.name], operation=operation.kind,
                               glue={k: result.report[k] for k in
                                     ("grid", "cells", "luts", "flip_flops", "period")})
    return CompileResult(config, portmap, report)


def _direct_outputs(glue, names):
    """``(glue, direct)``: where the block's read data are only output ports (each port the
    whole of one read port's data), ``glue`` without those outputs and the read data
    inputs, and ``direct`` ``{design output: block port}``; else ``(glue, {})``."""
    from ..netlist import Netlist
    reads = {name: port for port, name in names.items() if name in glue.inputs}
    if not reads:
        return glue, {}
    read_nets = {net for name in reads for net in glue.inputs[name].bits}
    if any(read_nets & set(lut.inputs) for lut in glue.luts.values()) \
            or any(dff.d in read_nets for dff in glue.dffs.values()):
        return glue, {}
    direct = {}
    for out, port in glue.outputs.items():
        source = next((name for name in reads if glue.inputs[name].bits == port.bits), None)
        if source is not None:
            direct[out] = reads[source]
        elif read_nets & set(port.bits):
            return glue, {}             # part of a read port, or a mix
    inputs = {k: v for k, v in glue.inputs.items() if k not in reads}
    outputs = {k: v for k, v in glue.outputs.items() if k not in direct}
    return Netlist(glue.name, inputs, outputs, glue.luts, glue.dffs), direct


def _with_outputs(portmap, netlist, direct, block, x0, base):
    """``portmap`` with the design outputs ``direct`` (``{output: block port}``) on the S
    lanes under the block (its box at column ``x0``), whose time base is ``base`` (the glue's
    ``macro_time`` plus the pass cells under the box), every output's skew against the
    latency they now share; the ports in ``netlist``'s order."""
    times, have = {}, {p.name: p for p in portmap.ports}
    for port in portmap.ports:
        if port.direction == "out":
            times[port.name] = [(bit, portmap.latency + bit.skew) for bit in port.bits]
    for name, block_port in direct.items():
        times[name] = [(PortBit(S, x0 + bit.lane), base + block.latency + bit.skew)
                       for bit in block.port(block_port).bits]
    latency = max([t for bits in times.values() for _, t in bits] + [1])
    ports = [have[name] for name in netlist.inputs]
    for name, port in netlist.outputs.items():
        ports.append(Port(name, "out", tuple(bit._replace(skew=t - latency)
                                             for bit, t in times[name]), port.signed))
    return PortMap(portmap.width, portmap.height, ports, period=portmap.period,
                   latency=latency)


def _without_inputs(glue, names):
    """``glue`` without the input ports ``names``, which nothing in it reads (the clock of a
    design whose only flip-flops were the memory's).

    :raises CompileError: if something reads one."""
    from ..netlist import Netlist
    read = {net for lut in glue.luts.values() for net in lut.inputs} \
        | {dff.d for dff in glue.dffs.values()} \
        | {net for port in glue.outputs.values() for net in port.bits}
    for name in names:
        if read & set(glue.inputs[name].bits):
            raise CompileError(f"the glue reads {name}, which the design does not have")
    inputs = {k: v for k, v in glue.inputs.items() if k not in names}
    return Netlist(glue.name, inputs, glue.outputs, glue.luts, glue.dffs)
