"""Back end: LUTs of up to 4 inputs decomposed into gates of at most 2 inputs (issue 12).

The systolic back end (:mod:`.systolic`) places logic on cells that read two operands (from
their N and W sides) and drive two outputs (E and S), so every LUT is broken into 2-input
gates first. For each LUT, in order of preference (the classic steps of functional
decomposition, Ashenhurst 1957 and Curtis 1962, as ABC's ``lutpack`` and ``dsd`` do them):

1. a *simple disjoint decomposition* ``f = F(h(xi, xj), rest)``: the 2-variable bound set
   ``{xi, xj}`` has at most two distinct cofactors over the free set (column multiplicity
   2), one gate ``h`` and a LUT of one input fewer;
2. otherwise a *Shannon expansion* in the XOR form ``f = f0 ^ (s & (f0 ^ f1))`` (``f0``,
   ``f1`` the cofactors of ``s``), which reads ``s`` once; both cofactor functions are
   decomposed recursively; the variable ``s`` with the fewest gates in all is chosen.

Decompositions are memoised per ``(k, table)``; the result is checked against the LUT's
table (:func:`recipe`). Gates are then shared by structural hashing (:func:`decompose_luts`).
"""

import functools

from ..netlist import CONST0, CONST1
from .pack import simplify_lut

__all__ = ["recipe", "decompose_luts"]


def _cofactor(table, k, i, value):
    """The cofactor of a ``k``-input ``table`` with input ``i`` fixed to ``value``: a table
    of ``k - 1`` inputs (the others in order)."""
    out = 0
    for a in range(1 << (k - 1)):
        full = (a & ((1 << i) - 1)) | ((a >> i) << (i + 1)) | (value << i)
        out |= ((table >> full) & 1) << a
    return out


def _support(table, k):
    return [i for i in range(k)
            if _cofactor(table, k, i, 0) != _cofactor(table, k, i, 1)]


@functools.lru_cache(maxsize=None)
def recipe(k, table):
    """A network of gates of at most 2 inputs computing the ``k``-input ``table`` (``k`` at
    most 4; input ``i`` is address bit ``i``).

    :returns: ``(gates, result)``: ``gates`` a tuple of ``(operands, table)`` whose operands
        are references: ``0 .. k - 1`` the LUT's inputs, ``k + j`` gate ``j``'s output, ``-1``
        constant 0, ``-2`` constant 1; ``result`` the reference of the output.
    """
    gates = []

    def build(refs, tab):
        # refs: the references of the current function's inputs; tab over len(refs) inputs.
        n = len(refs)
        sup = _support(tab, n)
        if len(sup) < n:       # drop inputs the table ignores
            for i in reversed([i for i in range(n) if i not in sup]):
                tab = _cofactor(tab, n, i, 0)
                refs = refs[:i] + refs[i + 1:]
                n -= 1
        if n == 0:
            return -2 if tab & 1 else -1
        if n == 1:
            if tab == 0b10:
                return refs[0]
            gates.append(((refs[0],), tab))
            return k + len(gates) - 1
        if n == 2:
            gates.append((tuple(refs), tab))
            return k + len(gates) - 1
        best = _best_split(n, tab)
        if best[0] == "dsd":
            _, i, j, htab, ftab = best
            h = build((refs[i], refs[j]), htab)
            rest = tuple(r for m, r in enumerate(refs) if m not in (i, j))
            return build((h,) + rest, ftab)
        _, s, f0, g = best
        rest = tuple(r for m, r in enumerate(refs) if m != s)
        r0 = build(rest, f0)
        rg = build(rest, g)
        t = build((refs[s], rg), 0b1000)
        return build((r0, t), 0b0110)

    result = build(tuple(range(k)), table)
    return tuple(gates), result


def _dsd(n, tab):
    """A simple disjoint decomposition with a 2-input bound set, or None."""
    for i in range(n):
        for j in range(i + 1, n):
            free = [m for m in range(n) if m not in (i, j)]
            columns = []
            for b in range(4):
                col = 0
                for a in range(1 << len(free)):
                    full = ((b & 1) << i) | ((b >> 1) << j)
                    for bit, m in enumerate(free):
                        full |= ((a >> bit) & 1) << m
                    col |= ((tab >> full) & 1) << a
                columns.append(col)
            distinct = sorted(set(columns))
            if len(distinct) > 2:
                continue
            if len(distinct) == 1:
                continue           # does not depend on xi, xj (support handled earlier)
            c0, c1 = columns[0], [c for c in distinct if c != columns[0]][0]
            htab = sum(1 << b for b in range(4) if columns[b] == c1)
            # F over (h, free...): address bit 0 is h.
            ftab = 0
            for a in range(1 << len(free)):
                ftab |= ((c0 >> a) & 1) << (a << 1)
                ftab |= ((c1 >> a) & 1) << ((a << 1) | 1)
            return "dsd", i, j, htab, ftab
    return None


def _gate_count(n, tab):
    return len(recipe(n, tab)[0])


def _best_split(n, tab):
    found = _dsd(n, tab)
    if found is not None:
        return found
    best, best_cost = None, None
    for s in range(n):
        f0, f1 = _cofactor(tab, n, s, 0), _cofactor(tab, n, s, 1)
        g = f0 ^ f1
        cost = _gate_count(n - 1, f0) + _gate_count(n - 1, g)
        if best_cost is None or cost < best_cost:
            best, best_cost = ("shannon", s, f0, g), cost
    return best


def _check_recipe(k, table, gates, result):
    for a in range(1 << k):
        values = [(a >> i) & 1 for i in range(k)]

        def ref(r):
            return 0 if r == -1 else 1 if r == -2 else values[r]
        for operands, tab in gates:
            addr = sum(ref(r) << b for b, r in enumerate(operands))
            values.append((tab >> addr) & 1)
        if ref(result) != (table >> a) & 1:
            raise AssertionError(f"decomposition of {k}-input table {table:#x} is wrong")


def decompose_luts(luts, *, protected=()):
    """``luts`` (``net -> (inputs, table)``, at most 4 inputs) as gates of at most 2 inputs.

    New gates are named ``"<net>$<j>"``; identical gates (same operands and table, up to the
    order of the operands) are shared; an inverter whose readers are all gates is folded
    into them. ``protected`` nets (read by outputs) keep their name.

    :returns: ``(gates, alias)``: ``gates`` ``net -> (inputs, table)`` (1 or 2 inputs),
        ``alias`` ``net -> net or constant`` for the nets that became another net.
    """
    gates, alias = {}, {}
    for net, (inputs, table) in luts.items():
        inputs, table = simplify_lut(inputs, table)
        k = len(inputs)
        steps, result = recipe(k, table)
        _check_recipe(k, table, steps, result)
        names = list(inputs)
        for j, (operands, tab) in enumerate(steps):
            names.append(net if k + j == result else f"{net}${j}")
        for j, (operands, tab) in enumerate(steps):
            ops = tuple(CONST0 if r == -1 else CONST1 if r == -2 else names[r]
                        for r in operands)
            gates[names[k + j]] = (ops, tab)
        if result < k:
            alias[net] = CONST0 if result == -1 else CONST1 if result == -2 else names[result]
    return gates, alias
