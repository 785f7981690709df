"""Lowering for the sweep and systolic back ends (issue 12): a LUT netlist into gates of at most
2 inputs, the form both back ends lay out (a cell reads its W and N inputs, docs/compiler.md).

:func:`lower_sequential` (flip-flops allowed) cleans the netlist (:func:`.pack.cleaned`), turns
each flip-flop into a gated next state carried as ``q XOR init``, decomposes every LUT
(:mod:`.decompose`), then folds inverters into their readers and merges gates of the same
operands and function until nothing changes; :func:`lower` is the same for a combinational
netlist.
"""

from ..netlist import CONST0, CONST1
from .decompose import decompose_luts
from .errors import CompileError
from .pack import _clean, _readers, cleaned, compose, simplify_lut
from .strip import START

__all__ = ["lower", "lower_sequential"]


def lower_sequential(netlist):
    """``(gates, outputs, state, sources)`` of ``netlist`` (flip-flops allowed).

    ``gates``: ``net -> (inputs, table)`` with 1 or 2 inputs, acyclic (flip-flop outputs are
    sources); ``outputs``: ``[(port, index, net)]`` (a net, an input bit, a flip-flop output
    or a constant); ``state``: ``{q: (d, init)}`` with ``d`` the gated next state
    (``start ? d : init``); ``sources``: the nets that enter the strip (input bits in port
    order, then :data:`START` and the flip-flop outputs if there are flip-flops or a gate
    reads :data:`START`, as the gates of registers retimed into port timing do:
    :mod:`.retime`).
    """
    luts, dffs, outputs, input_nets = cleaned(netlist)
    state_in = {}
    for q, (d, init) in dffs.items():
        gate = f"{q}$next"
        # the loop carries q XOR init (so that the grid's reset 0 is the initial value):
        # next = start & (d ^ init); inputs (start, d), address start | d << 1
        luts[gate] = ((START, d), 0b0010 if init else 0b1000)
        state_in[q] = (gate, init)
    inverted = {q for q, (_, init) in dffs.items() if init}
    if inverted:
        for net, (ins, table) in list(luts.items()):
            for i, name in enumerate(ins):
                if name in inverted:
                    table = sum(((table >> (a ^ (1 << i))) & 1) << a
                                for a in range(1 << len(ins)))
            luts[net] = (ins, table)
        for k, (port, index, net) in enumerate(outputs):
            if net in inverted:
                luts.setdefault(f"{net}$value", ((net,), 0b01))
                outputs[k] = (port, index, f"{net}$value")
    sources_set = input_nets | set(dffs) | {START}
    protected = {net for _, _, net in outputs} | {g for g, _ in state_in.values()}
    gates, alias = decompose_luts(luts, protected=protected)
    for net, target in alias.items():
        gates[net] = (((target,), 0b10) if target not in (CONST0, CONST1)
                      else ((), int(target == CONST1)))
    # The gated next states are pseudo-outputs, so that the clean-up keeps them.
    pseudo = [("$next", q, g) for q, (g, _) in state_in.items()]
    every = outputs + pseudo
    changed = True
    while True:
        _clean(gates, {}, every, sources_set)
        if not changed:
            break
        names = {net for _, _, net in every}
        changed = _fold_inverters(gates, names)
        changed |= _share(gates, every)
    outputs = every[:len(outputs)]
    state = {q: (net, state_in[q][1]) for (_, q, net) in every[len(outputs):]}
    sources = [net for port in netlist.inputs.values() for net in port.bits]
    if state or any(START in inputs for inputs, _ in gates.values()) \
            or any(net == START for _, _, net in outputs):
        sources += [START] + sorted(state)       # START: also a retimed register's gate
    return gates, outputs, state, sources


# Lowering --------------------------------------------------------------------------------------
def lower(netlist):
    """``(gates, outputs)``: ``gates`` ``net -> (inputs, table)`` with 1 or 2 inputs, acyclic;
    ``outputs`` a list of ``(port, index, net)`` (net possibly an input bit or a constant).

    :raises CompileError: if the netlist has flip-flops (the systolic flow is combinational).
    """
    if netlist.dffs:
        raise CompileError("the systolic back end takes combinational netlists only")
    gates, outputs, _, _ = lower_sequential(netlist)
    return gates, outputs


def _fold_inverters(gates, output_nets):
    changed = False
    readers = _readers(gates)
    for net in list(gates):
        inputs, table = gates[net]
        if len(inputs) != 1 or table != 0b01 or net in output_nets:
            continue
        users = readers.get(net, set())
        if not users:
            continue
        for u in users:
            uin, utab = gates[u]
            gates[u] = simplify_lut(*compose(uin, utab, net, inputs, table))
        del gates[net]
        readers = _readers(gates)
        changed = True
    return changed


def _share(gates, outputs):
    """Structural hashing: gates with the same operands and function become one."""
    seen, alias = {}, {}
    for net in sorted(gates):
        inputs, table = gates[net]
        if len(inputs) == 2 and inputs[0] > inputs[1]:
            inputs = (inputs[1], inputs[0])
            table = ((table & 1) | ((table >> 1) & 1) << 2 | ((table >> 2) & 1) << 1
                     | (table & 8))
        key = (inputs, table)
        if key in seen:
            alias[net] = seen[key]
        else:
            seen[key] = net
    if not alias:
        return False
    for net, target in alias.items():
        gates[net] = ((target,), 0b10)       # a buffer: the clean-up removes it
    return True
