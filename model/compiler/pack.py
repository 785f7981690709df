"""Back end, step 1: netlist clean-up, register gating and packing into cells (issue 12).

Input: a :class:`bitgrid.netlist.Netlist`. Output: a :class:`Design`, the graph the placer and
router work on:

* *blocks*: one per BitGrid cell that computes logic, each holding 1 to 4 LUTs that read the
  same at most 4 *signals* (every LUT of a cell sees the cell's 4 inputs, SPEC section 3), and
  the *start block*, a cell whose LUTs are constant 1 (see below);
* *pins*: one per input port bit (a source) and one per output port bit (a sink);
* *nets*: the signal of one driver (a LUT, an input bit or the start block) with its sinks,
  each sink a ``(block or output pin, registers)`` pair: a sink reading the driver through
  ``r`` flip-flops sees it ``r`` design cycles late (timing, :mod:`.timing`).

Steps (each the usual one of FPGA technology mapping, e.g. ABC's and VPR's packers):

1. *Clean-up*: constants folded into LUT tables, inputs a table does not depend on dropped,
   duplicate inputs merged, buffers (identity LUTs) replaced by their input, logic that no
   output depends on removed.
2. *Register gating*: a grid cell is 0 after reset (SPEC section 4), but a flip-flop must hold
   its ``init`` in design cycle 0 whatever its pipeline held before. Every flip-flop ``q <= d``
   becomes ``q <= start ? d : init``: ``start`` (the net :data:`START`) is 0 for the rows
   before row 0 and 1 from row 0 on, produced by one cell whose LUTs are all 1 (it outputs 0
   before its first update and 1 after, so with its route delayed to the right length it
   steps exactly at row 0; :mod:`.timing` fixes the length). The gate is a LUT and is merged
   into ``d``'s LUT where that fits.
3. *LUT collapsing*: a LUT whose every reader can absorb it (the union of inputs stays within
   4) is folded into its readers (as ABC's ``lutpack`` / ``mfs`` would).
4. *Packing*: LUTs whose input signals together number at most 4 share a cell (for example
   the sum and carry of a full adder: 3 inputs, 2 outputs), at most :data:`MAX_LUTS_PER_CELL`
   per cell so that each output still has sides to leave by (up to
   :data:`SAME_INPUT_LUTS_PER_CELL` where all of them read the very same inputs: the output
   bits of a 16-word piece of a table), and of one logic level (a
   cell's LUTs compute in one wave). Greedy, best-gain first (the affinity of VPR's
   AAPack: shared inputs).
"""

import collections
import typing

from ..netlist import CONST0, CONST1, START

__all__ = ["START", "MAX_LUTS_PER_CELL", "SAME_INPUT_LUTS_PER_CELL", "Block", "Pin", "Net",
           "Design", "prepare", "logic_levels"]

#: Most LUTs packed into one cell (a cell has 4 outputs; every LUT needs one side to leave).
MAX_LUTS_PER_CELL = 2
#: Most LUTs per cell where every LUT of the cell reads the very same inputs (a table's
#: output bits, a decoder's outputs): their inputs come in once, so the cell costs its
#: neighbours no more input sides than one LUT does.
SAME_INPUT_LUTS_PER_CELL = 4


class Block(typing.NamedTuple):
    """A cell's worth of logic: ``luts`` (tuple of ``(net, inputs, table)``, ``inputs`` being
    signal indices into :attr:`inputs`), ``inputs`` (tuple of signals ``(net, registers)``),
    ``gate`` (True if a LUT of it gates a flip-flop: its row -1 must be computed after reset,
    :mod:`.timing`), ``start`` (True for the start block: every output constant 1)."""
    luts: tuple
    inputs: tuple
    gate: bool = False
    start: bool = False


class Pin(typing.NamedTuple):
    """A port bit: ``port`` name, ``index`` (bit), ``direction`` ``"in"``/``"out"``, ``net``
    (the input bit's net, or the net an output reads: ``None`` for a constant 0 output),
    ``registers`` (flip-flops between that net and the output), ``invert`` (1 if the net is
    stored inverted: the output lane's cell inverts it)."""
    port: str
    index: int
    direction: str
    net: typing.Optional[str]
    registers: int = 0
    invert: int = 0


class Net(typing.NamedTuple):
    """A routed signal: ``name``, ``driver`` (``("block", i)`` or ``("pin", i)``) and ``sinks``
    (tuple of ``(("block", i) or ("pin", i), registers)``)."""
    name: str
    driver: tuple
    sinks: tuple


class Design(typing.NamedTuple):
    """The packed design: ``blocks``, ``pins``, ``nets`` (see the classes), ``luts`` (LUTs
    after clean-up), ``flip_flops`` (flip-flops kept)."""
    name: str
    blocks: list
    pins: list
    nets: list
    luts: int
    flip_flops: int


# Truth-table helpers --------------------------------------------------------------------------
def _evaluate(inputs, table, values):
    """Bit of ``table`` for input nets ``inputs`` given ``values`` (net -> 0/1)."""
    a = 0
    for b, net in enumerate(inputs):
        a |= values[net] << b
    return (table >> a) & 1


def simplify_lut(inputs, table):
    """``(inputs, table)`` with constants folded, duplicate inputs merged and inputs the table
    does not depend on dropped. Inputs are net names; :data:`CONST0`/:data:`CONST1` fold."""
    unique = []
    for net in inputs:
        if net not in (CONST0, CONST1) and net not in unique:
            unique.append(net)

    def table_of(names):
        result = 0
        for a in range(1 << len(names)):
            values = {CONST0: 0, CONST1: 1}
            values.update((n, (a >> b) & 1) for b, n in enumerate(names))
            result |= _evaluate(inputs, table, values) << a
        return result

    new = table_of(unique)
    i = 0
    while i < len(unique):
        k = len(unique)
        depends = any(((new >> a) & 1) != ((new >> (a | 1 << i)) & 1)
                      for a in range(1 << k) if not (a >> i) & 1)
        if depends:
            i += 1
            continue
        kept = 0
        for a in range(1 << (k - 1)):
            full = (a & ((1 << i) - 1)) | ((a >> i) << (i + 1))
            kept |= ((new >> full) & 1) << a
        unique.pop(i)
        new = kept
    return tuple(unique), new


def compose(outer_inputs, outer_table, net, inner_inputs, inner_table):
    """The LUT ``outer`` with its input ``net`` replaced by the LUT ``inner``: ``(inputs,
    table)`` over the union of inputs (possibly more than 4; the caller checks)."""
    union = [i for i in outer_inputs if i != net]
    for i in inner_inputs:
        if i not in union:
            union.append(i)
    k = len(union)
    table = 0
    for a in range(1 << k):
        values = {n: (a >> b) & 1 for b, n in enumerate(union)}
        inner_a = sum(values[n] << b for b, n in enumerate(inner_inputs))
        values[net] = (inner_table >> inner_a) & 1
        outer_a = sum(values[n] << b for b, n in enumerate(outer_inputs))
        if (outer_table >> outer_a) & 1:
            table |= 1 << a
    return tuple(union), table


# Preparation ----------------------------------------------------------------------------------
def _clean(luts, dffs, outputs, input_nets):
    """Fold constants and buffers until nothing changes; remove what no output needs.
    ``luts``: net -> (inputs, table); ``dffs``: net -> (d, init); ``outputs``: list of
    (port, index, net). All modified in place."""
    alias = {}

    def resolve(net):
        seen = []
        while net in alias:
            seen.append(net)
            net = alias[net]
        for s in seen:
            alias[s] = net
        return net

    changed = True
    while changed:
        changed = False
        for net in list(luts):
            inputs, table = luts[net]
            inputs = tuple(resolve(i) for i in inputs)
            inputs, table = simplify_lut(inputs, table)
            if not inputs:
                alias[net] = CONST1 if table & 1 else CONST0
                del luts[net]
                changed = True
            elif len(inputs) == 1 and table == 0b10:
                alias[net] = inputs[0]
                del luts[net]
                changed = True
            else:
                if (inputs, table) != luts[net]:
                    changed = True
                luts[net] = (inputs, table)
        for net in list(dffs):
            d, init = dffs[net]
            d = resolve(d)
            dffs[net] = (d, init)
            if d == (CONST1 if init else CONST0):       # never changes
                alias[net] = d
                del dffs[net]
                changed = True
            elif d == net:                              # holds its init for ever
                alias[net] = CONST1 if init else CONST0
                del dffs[net]
                changed = True
    for i, (port, index, net) in enumerate(outputs):
        outputs[i] = (port, index, resolve(net))
    # Remove what no output needs.
    needed, stack = set(), [net for _, _, net in outputs]
    while stack:
        net = stack.pop()
        if net in needed:
            continue
        needed.add(net)
        if net in luts:
            stack.extend(luts[net][0])
        elif net in dffs:
            stack.append(dffs[net][0])
    for net in list(luts):
        if net not in needed:
            del luts[net]
    for net in list(dffs):
        if net not in needed:
            del dffs[net]


def _readers(luts):
    readers = collections.defaultdict(set)
    for net, (inputs, _) in luts.items():
        for i in inputs:
            readers[i].add(net)
    return readers


def _collapse(luts, protected):
    """Fold every LUT whose readers are all LUTs that can absorb it (inputs stay <= 4)."""
    readers = _readers(luts)
    changed = True
    while changed:
        changed = False
        for net in list(luts):
            if net in protected or net not in luts:
                continue
            users = readers.get(net, set())
            if not users or any(u not in luts for u in users):
                continue
            inner_inputs, inner_table = luts[net]
            new = {}
            for u in users:
                inputs, table = compose(*luts[u], net, inner_inputs, inner_table)
                inputs, table = simplify_lut(inputs, table)
                if len(inputs) > 4:
                    break
                new[u] = (inputs, table)
            else:
                for u, (inputs, table) in new.items():
                    for i in luts[u][0]:
                        readers[i].discard(u)
                    luts[u] = (inputs, table)
                    for i in inputs:
                        readers[i].add(u)
                for i in inner_inputs:
                    readers[i].discard(net)
                del luts[net]
                readers.pop(net, None)
                changed = True


def cleaned(netlist):
    """``(luts, dffs, outputs, input_nets)`` of ``netlist`` after :func:`_clean`: ``luts``
    ``net -> (inputs, table)``, ``dffs`` ``net -> (d, init)``, ``outputs`` ``[(port, index,
    net)]``, ``input_nets`` the input ports' nets (shared by both back ends)."""
    luts = {net: (tuple(l.inputs), l.table) for net, l in netlist.luts.items()}
    dffs = {net: (f.d, f.init) for net, f in netlist.dffs.items()}
    input_nets = {net for port in netlist.inputs.values() for net in port.bits}
    outputs = [(name, i, net) for name, port in netlist.outputs.items()
               for i, net in enumerate(port.bits)]
    _clean(luts, dffs, outputs, input_nets)
    return luts, dffs, outputs, input_nets


def prepare(netlist, *, max_luts_per_cell=MAX_LUTS_PER_CELL,
            same_input_luts_per_cell=SAME_INPUT_LUTS_PER_CELL, through=None):
    """Clean, gate, collapse and pack ``netlist`` (module docstring) into a :class:`Design`.

    :param max_luts_per_cell: most LUTs a cell holds; ``same_input_luts_per_cell``: most
        where every LUT of the cell reads the very same inputs (at least as many).
    :param through: ``(outputs, inputs)``: nets of output bits and of input bits between
        which a macro passes waves in a fixed time (:mod:`.compose`): a LUT reading one of
        ``inputs`` is a logic level after the LUTs driving ``outputs``, so that no cell holds
        LUTs on both sides of the macro (a cell's LUTs share one tag); or None.
    :raises ValueError: for a loop of logic through the macro without a flip-flop."""
    luts, dffs, outputs, input_nets = cleaned(netlist)
    # Register gating where the reset state is not the initial state (module docstring).
    encoding, _ = _encodings(luts, dffs)
    gates = set()
    for q, (d, init) in list(dffs.items()):
        if d not in (CONST0, CONST1) and encoding.get(d, 0) == init:
            continue
        gate = f"$gate:{q}"
        while gate in luts or gate in dffs or gate in input_nets:
            gate += "'"
        luts[gate] = ((START, d), init | init << 2 | 1 << 3)
        dffs[q] = (gate, init)
        gates.add(gate)
    _clean(luts, dffs, outputs, input_nets)
    gates &= set(luts)
    # Merge each gate with the LUT it gates where that LUT has no other reader.
    readers = _readers(luts)
    output_nets = {net for _, _, net in outputs}
    dff_ds = collections.Counter(d for d, _ in dffs.values())
    for gate in sorted(gates):
        inputs, table = luts[gate]
        d = [i for i in inputs if i != START]
        if len(d) != 1 or d[0] not in luts:
            continue
        d = d[0]
        if readers[d] != {gate} or d in output_nets or dff_ds[d]:
            continue
        new_inputs, new_table = simplify_lut(*compose(inputs, table, d, *luts[d]))
        if len(new_inputs) <= 4:
            luts[gate] = (new_inputs, new_table)
            del luts[d]
            readers = _readers(luts)
    protected = set(gates) | output_nets | {d for d, _ in dffs.values()}
    _collapse(luts, protected)
    _clean(luts, dffs, outputs, input_nets)
    gates &= set(luts)
    # Physical tables: every net of a register's cone is stored XOR its encoding.
    encoding, _ = _encodings(luts, dffs)
    for q, (d, init) in dffs.items():
        if encoding.get(d, 0) != init:
            raise AssertionError(f"flip-flop {q}: encoding {encoding.get(d)} != init {init}")
    for net, (inputs, table) in list(luts.items()):
        mask = sum(encoding.get(i, 0) << b for b, i in enumerate(inputs))
        flip = encoding.get(net, 0)
        physical = 0
        for a in range(1 << len(inputs)):
            physical |= (((table >> (a ^ mask)) & 1) ^ flip) << a
        luts[net] = (inputs, physical)
    return _pack(netlist, luts, dffs, outputs, gates,
                 (max_luts_per_cell, max(max_luts_per_cell, same_input_luts_per_cell)),
                 encoding, through)


def _encodings(luts, dffs):
    """The reset-state encoding of every net (module docstring): ``(encoding, cone)``.

    ``encoding[net]`` is the net's value in the state where every input is 0 and every
    flip-flop holds its init, for the nets in ``cone`` (those some flip-flop depends on);
    0 for the others. The grid stores a net XOR its encoding, so that every cell of the cone
    maps all-zero inputs to 0 and the whole pipeline is 0 before the first row's wave.
    """
    cone, stack = set(), [d for d, _ in dffs.values()]
    while stack:
        net = stack.pop()
        if net in cone:
            continue
        cone.add(net)
        if net in luts:
            stack.extend(luts[net][0])
        elif net in dffs:
            stack.append(dffs[net][0])
    value = {CONST0: 0, CONST1: 1, START: 0}
    for q, (_, init) in dffs.items():
        value[q] = init

    def get(net):
        if net in value:
            return value[net]
        if net not in luts:
            return 0                       # an input bit
        stack = [net]
        while stack:
            top = stack[-1]
            pending = [i for i in luts[top][0] if i not in value and i in luts]
            if pending:
                stack.extend(pending)
                continue
            inputs, table = luts[top]
            a = sum(value.get(i, 0) << b for b, i in enumerate(inputs))
            value[top] = (table >> a) & 1
            stack.pop()
        return value[net]

    encoding = {}
    for net in cone:
        if net in luts:
            encoding[net] = get(net)
        elif net in dffs:
            encoding[net] = dffs[net][1]
    for net in luts:
        if net not in cone:
            encoding[net] = 0
    for net, (_, init) in dffs.items():      # a flip-flop's wire is its d's, delayed
        encoding[net] = init
    return encoding, cone


def _signal(net, dffs):
    """``(driver net, registers)`` for a net read by a LUT or an output."""
    registers = 0
    while net in dffs:
        net = dffs[net][0]
        registers += 1
    return net, registers


def logic_levels(preds):
    """Logic level of every node: the longest path to it from a node without predecessors
    (level 0). ``preds``: ``{node: [nodes it reads in the same wave]}`` (registers cut).

    :raises ValueError: for a loop (logic without a flip-flop).
    """
    level, state = {}, {}           # state: 1 open (on the current path), 2 done
    for node in preds:
        stack = [node]
        while stack:
            x = stack[-1]
            if state.get(x) == 2:
                stack.pop()
                continue
            state[x] = 1
            pending = [p for p in preds[x] if state.get(p) != 2]
            if any(state.get(p) == 1 for p in pending):
                raise ValueError("a loop of logic without a flip-flop")
            if pending:
                stack.extend(pending)
                continue
            level[x] = 1 + max((level[p] for p in preds[x]), default=-1)
            state[x] = 2
            stack.pop()
    return level


def _pack(netlist, luts, dffs, outputs, gates, limits, encoding, through=None):
    max_luts, max_same = limits
    # LUTs with their input signals.
    items = {}
    for net, (inputs, table) in luts.items():
        items[net] = (tuple(_signal(i, dffs) for i in inputs), table)
    # Logic levels (registers cut): a cell's LUTs compute in the same wave, so only LUTs of
    # the same level share a cell, which keeps the cells' graph free of loops without
    # flip-flops (a LUT reading another, even through a third cell, is a level higher).
    preds = {net: [i for i, r in items[net][0] if r == 0 and i in items] for net in items}
    if through is not None:             # a macro's outputs come after its inputs' drivers
        before = [net for net in through[0] if net in items]
        after = set(through[1])
        for net in items:
            if any(i in after for i, r in items[net][0] if r == 0):
                preds[net] = preds[net] + before
    level = logic_levels(preds)
    # Greedy pairing by shared signals.
    order = sorted(items, key=lambda n: (-len(items[n][0]), n))
    by_signal = collections.defaultdict(list)
    for net in order:
        for s in items[net][0]:
            by_signal[s].append(net)
    group_of, groups = {}, []
    for net in order:
        if net in group_of:
            continue
        group = [net]
        signals = set(items[net][0])
        group_of[net] = len(groups)
        while len(group) < max_same:
            best, best_gain = None, 0
            candidates = set()
            for s in signals:
                candidates.update(by_signal[s])
            for other in sorted(candidates):
                if other in group_of:
                    continue
                other_signals = set(items[other][0])
                union = signals | other_signals
                if len(union) > 4:
                    continue
                if len(group) >= max_luts and (other_signals != signals
                                               or any(set(items[n][0]) != signals
                                                      for n in group)):
                    continue        # beyond max_luts: only LUTs of the very same inputs
                if level[other] != level[net]:
                    continue        # one cell, one wave: LUTs of one logic level only
                gain = len(signals & other_signals) * 4 - len(union - signals)
                if gain > best_gain:
                    best, best_gain = other, gain
            if best is None:
                break
            group.append(best)
            group_of[best] = len(groups)
            signals |= set(items[best][0])
        groups.append(group)
    blocks = []
    block_of = {}
    for group in groups:
        signals = []
        for net in group:
            for s in items[net][0]:
                if s not in signals:
                    signals.append(s)
        block_luts = tuple((net, tuple(signals.index(s) for s in items[net][0]),
                            items[net][1]) for net in group)
        for net in group:
            block_of[net] = len(blocks)
        blocks.append(Block(block_luts, tuple(signals), gate=any(n in gates for n in group)))
    # Pins.
    pins, pin_of = [], {}
    for name, port in netlist.inputs.items():
        for i, net in enumerate(port.bits):
            pin_of[net] = len(pins)
            pins.append(Pin(name, i, "in", net))
    for name, index, net in outputs:
        if net == CONST0:
            pins.append(Pin(name, index, "out", None))
            continue
        if net == CONST1:
            net = START
        driver, registers = _signal(net, dffs)
        if driver == START and registers:
            # start r rows late: a buffer cell reads it through the registers (the start
            # cell's tag is fixed, so a pin could not be given the rows' length)
            key = f"$start:{registers}"
            if key not in block_of:
                block_of[key] = len(blocks)
                blocks.append(Block(((key, (0,), 0b10),), ((START, registers),)))
            driver, registers = key, 0
        pins.append(Pin(name, index, "out", driver, registers, encoding.get(driver, 0)))
    # Start block, if anything reads it.
    uses_start = any(START in [s for s, _ in b.inputs] for b in blocks) or \
        any(p.direction == "out" and p.net == START for p in pins)
    if uses_start:
        block_of[START] = len(blocks)
        blocks.append(Block((), (), start=True))
    # Nets.
    sinks = collections.defaultdict(list)
    for b, block in enumerate(blocks):
        for net, registers in block.inputs:
            sinks[net].append((("block", b), registers))
    for p, pin in enumerate(pins):
        if pin.direction == "out" and pin.net is not None:
            sinks[pin.net].append((("pin", p), pin.registers))
    nets = []
    for net in sorted(sinks, key=str):
        if net in block_of:
            driver = ("block", block_of[net])
        elif net in pin_of:
            driver = ("pin", pin_of[net])
        else:       # a constant the clean-up left (cannot happen: constants fold)
            raise AssertionError(f"net {net} has no driver")
        nets.append(Net(net, driver, tuple(sinks[net])))
    return Design(netlist.name, blocks, pins, nets, len(luts), len(dffs))
