"""Memories recognised in Yosys' coarse netlist (:mod:`.operations`' matchers, for the
storage blocks of :mod:`bitgrid.library.memory`).

:func:`recognise_memory` finds a design that is one Yosys memory (``$mem_v2`` after
``memory -nomap``) with every port a design port: with one write port it is the
``register_file`` block, without any the ``rom`` block (docs/compiler.md, "Memories" and
"ROMs"). It is one of :func:`.operations.recognise`'s matchers and returns an
:class:`.operations.Operation` or None.
"""

from .operations import Operation, _operand, _output_of

__all__ = ["MAX_READ_PORTS", "recognise_memory"]

#: Most read ports of the register file block.
MAX_READ_PORTS = 4


def _value(value, count):
    """The int of ``count`` bits of a Yosys constant parameter (:func:`_bits_of`)."""
    return sum(bit << i for i, bit in enumerate(_bits_of(value, count)))


def _bits_of(value, count):
    """``count`` bits (least significant first) of a Yosys constant parameter: an int, or a
    string of 0/1/x, most significant first, x read as 0 (an undefined value may be any)."""
    if isinstance(value, int):
        return [(value >> i) & 1 for i in range(count)]
    text = str(value)[::-1]
    return [int(text[i] == "1") if i < len(text) else 0 for i in range(count)]


def _write_port_nets(coarse, memory):
    """``resolve(bit)``: the bit that a bit driven by the ``$mux`` cells in front of
    ``memory``'s write port stands for, or None when some other cell is left (address
    registers aside, :func:`_address_register`): a mux with one side all ``x`` is its other
    side (any value may stand for x, and the write enable is 0 there), ``S ? 1 : 0`` is ``S``
    and ``S ? 0 : 1`` is ``("~", S)``."""
    rename = {}
    for kind, parameters, pins in coarse.cells:
        if pins is memory[2] or _address_register(coarse, memory, (kind, parameters, pins)):
            continue
        if kind != "$mux" or len(pins["S"]) != 1:
            return None
        source = mux_source(pins["A"], pins["B"], pins["S"])
        if source is None:
            return None
        rename.update(zip(pins["Y"], source))
    return resolver(rename)


def mux_source(a, b, select, inverted=True):
    """The bits a ``$mux`` (``select ? b : a``, one select bit) in front of a write port
    stands for, or None: a side all ``x`` is the other side (any value may stand for x, and
    the write enable is 0 there), ``S ? 1 : 0`` is ``S`` and (with ``inverted``)
    ``S ? 0 : 1`` is ``("~", S)``."""
    if all(bit == "x" for bit in a):
        return list(b)
    if all(bit == "x" for bit in b):
        return list(a)
    if all(bit == "0" for bit in a) and all(bit == "1" for bit in b):
        return list(select) * len(a)
    if inverted and all(bit == "1" for bit in a) and all(bit == "0" for bit in b):
        return [("~",) + tuple(select)] * len(a)       # S ? 0 : 1, an active-low S
    return None


def resolver(rename):
    """``resolve(bit)``: ``bit`` followed through ``rename`` (``{bit: bit it stands for}``)
    to its end (a loop of renames ends where it closes)."""
    def resolve(bit):
        seen = 0
        while bit in rename and seen <= len(rename):
            bit, seen = rename[bit], seen + 1
        return bit
    return resolve


def _address_register(coarse, memory, cell):
    """Whether ``cell`` is a plain register (``$dff`` on the write clock's rising edge,
    initial value 0) from an input port to one of ``memory``'s read addresses (which
    Yosys keeps outside the memory when it has an initial value)."""
    kind, parameters, pins = cell
    if kind != "$dff" or parameters.get("CLK_POLARITY", 1) != 1 \
            or tuple(pins["CLK"]) != tuple(memory[2]["WR_CLK"]) \
            or any(coarse.init.get(bit, 0) for bit in pins["Q"]):
        return False
    q, address = tuple(pins["Q"]), tuple(memory[2]["RD_ADDR"])
    abits = memory[1].get("ABITS")
    slices = {address[k:k + abits] for k in range(0, len(address), abits or 1)}
    return q in slices and _operand(tuple(pins["D"]), coarse, False) is not None


def recognise_memory(coarse):
    """The :class:`.operations.Operation` of ``coarse`` if it is one memory (``$mem_v2``)
    with one write port on the design clock's rising edge (the ``register_file`` block) or
    none (the ``rom`` block), and 1 to :data:`MAX_READ_PORTS` read ports, combinational or
    synchronous on the same clock (all transparent, or all not, or combinational), every port
    a whole design port; else None. A read past the last word lands where Yosys' memory_map
    reads (:func:`bitgrid.library.memory.read_word`), so the block agrees with the netlist.
    A synchronous read port without transparency is the block with every input a row later
    (``lag`` 1, its row 0 gated to the register's start where that is not word 0); a
    transparent one reads the current contents at the address of the row before (its
    address a row later), as does a register in front of a read address (``m[ra_q]``,
    ``ra_q <= ra``)."""
    memories = [c for c in coarse.cells if c[0] == "$mem_v2"]
    if len(memories) != 1:
        return None
    memory = memories[0]
    _, p, pins = memory
    resolve = _write_port_nets(coarse, memory)
    if resolve is None:
        return None
    words, width, abits = p.get("SIZE"), p.get("WIDTH"), p.get("ABITS")
    reads = p.get("RD_PORTS")
    if not all(isinstance(v, int) for v in (words, width, abits, reads)):
        return None
    rom = p.get("WR_PORTS") == 0
    if (not 1 <= reads <= MAX_READ_PORTS or p.get("OFFSET", 0) or words < 2
            or not words <= 1 << abits <= 1 << 16 or p.get("RD_WIDE_CONTINUATION", 0)):
        return None
    if not rom and (p.get("WR_PORTS") != 1 or p.get("WR_CLK_ENABLE") != 1
                    or p.get("WR_CLK_POLARITY") != 1 or p.get("WR_WIDE_CONTINUATION", 0)):
        return None
    enable = {resolve(bit) for bit in pins["WR_EN"]}
    ports, we_low = {}, False
    if not rom and enable != {"1"}:                   # else every row writes
        if len(enable) != 1:
            return None                  # per-bit enables (byte lanes): not this block
        net = next(iter(enable))
        we_low = isinstance(net, tuple)               # ("~", net): if (!wen) m[a] <= d
        we = _operand(net[1:] if we_low else (net,), coarse, False)
        if we is None or we[1] != 1:
            return None
        ports["we"] = we[0]
    if not rom:
        for name, bits in (("waddr", pins["WR_ADDR"]), ("wdata", pins["WR_DATA"])):
            operand = _operand(tuple(resolve(b) for b in bits), coarse, False)
            if operand is None:
                return None
            ports[name] = operand[0]
    clocked = _bits_of(p.get("RD_CLK_ENABLE", 0), reads)
    polarity = _bits_of(p.get("RD_CLK_POLARITY", 0), reads)
    transparent = _bits_of(p.get("RD_TRANSPARENCY_MASK", 0), reads)
    collision = _bits_of(p.get("RD_COLLISION_X_MASK", 0), reads)
    registered = {tuple(c[2]["Q"]): tuple(c[2]["D"]) for c in coarse.cells
                  if _address_register(coarse, memory, c)}
    kinds, lags = set(), {}
    for port in range(reads):
        suffix = "" if port == 0 else str(port)
        bits = tuple(pins["RD_ADDR"][port * abits:(port + 1) * abits])
        if bits in registered:                        # m[ra_q], ra_q <= ra: transparent
            if clocked[port]:
                return None
            bits, lags[f"raddr{suffix}"] = registered[bits], 1
            kinds.add("transparent")
        address = _operand(bits, coarse, False)
        data = _output_of(pins["RD_DATA"][port * width:(port + 1) * width], coarse)
        if address is None or data is None:
            return None
        ports[f"raddr{suffix}"], ports[f"rdata{suffix}"] = address[0], data
        if clocked[port]:
            clock = tuple(pins["RD_CLK"][port:port + 1])
            if (not polarity[port] or clock != (tuple(pins["WR_CLK"]) or clock)
                    or not isinstance(clock[0], int) or pins["RD_EN"][port] != "1"
                    or pins["RD_SRST"][port] != "0" or pins["RD_ARST"][port] != "0"
                    or collision[port]):
                return None
            kinds.add("transparent" if transparent[port] and not rom else "registered")
            if transparent[port] and not rom:
                lags[f"raddr{suffix}"] = 1
        else:
            kinds.add("combinational")
    if "registered" in kinds and len(kinds) > 1:
        return None                      # the others are not a row late
    init = _value(p.get("INIT", 0), words * width)
    params = {"words": words, "width": width, "read_ports": reads, "init": init}
    if kinds == {"registered"} and reads == 1:
        # a row late, row 0 would be a read of address 0: gate it to the register's start
        start = _value(p.get("RD_INIT_VALUE", 0), width)
        if start != init & ((1 << width) - 1):
            params["first_row"] = start
    if rom:
        if len(set(ports.values())) != len(ports):
            return None                  # two read ports on one address port
        return Operation("rom", "rom", params, ports, lag=int(kinds == {"registered"}))
    params.update(abits=abits, write_enable="we" in ports)
    if we_low:
        params["we_low"] = True
    # a single-port RAM: the first read port at the write address (the same lanes)
    if ports["raddr"] == ports["waddr"] and "raddr" not in lags:
        params["shared_address"] = True
        del ports["raddr"]
    if len(set(ports.values())) != len(ports):
        return None                      # one design port on two of the block's ports
    return Operation("memory", "register_file", params, ports,
                     lag=int(kinds == {"registered"}),
                     input_lags=lags)
