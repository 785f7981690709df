"""LUT4 netlists as DAGs of 2-input gates (for the wavefront back end, :mod:`.wavefront`).

A BitGrid cell that reads two inputs (N and W) and drives two outputs (E and S) computes any two
functions of its two inputs, so a netlist of LUTs with up to 4 inputs is first decomposed into
2-input gates. Inversions are free (they fold into the reading gate's table), so a signal is a
*literal* ``(node, neg)``; constants are the literals ``(CONST, 0)`` and ``(CONST, 1)``.

:class:`GateDag` holds the gates with common sub-expressions shared (hash-consing):
``gates[g] = (a, b, table)`` for node ``g``, operands ``a < b`` (node ids) and ``table`` a
4-bit truth table, bit ``va | vb << 1`` (operand values) being the gate's value; every gate is
normalised so that ``table`` bit 0 is 0 (the complement is a negated literal). Input bits are
nodes too (``inputs[node] = (port, bit)``).

Decomposition (:func:`decompose`): for each LUT the cheapest of: drop unused inputs; a gate of
one input and a cofactor (``v & f1``, ``v | f0``, ``v ^ f0``...); a disjoint decomposition
``F(h(B), rest)`` for a bound set ``B``; a Shannon split ``f0 ^ (v & (f0 ^ f1))``. Costs are
counted in gates, memoised per truth table.
"""

import functools
import itertools

__all__ = ["CONST", "GateDag", "decompose", "netlist_gates"]

#: The constant node (a literal ``(CONST, c)`` is the constant ``c``).
CONST = -1


def _support(n, table):
    used = []
    for v in range(n):
        for a in range(1 << n):
            if not a >> v & 1 and (table >> a & 1) != (table >> (a | 1 << v) & 1):
                used.append(v)
                break
    return used


def _restrict(n, table, keep):
    """The table of ``table`` (over ``n`` variables) as a function of the variables ``keep``
    only (the others must not matter: they are set to 0)."""
    out = 0
    for a in range(1 << len(keep)):
        full = 0
        for i, v in enumerate(keep):
            if a >> i & 1:
                full |= 1 << v
        if table >> full & 1:
            out |= 1 << a
    return out


def _cofactors(n, table, v):
    """(f0, f1) over the n - 1 other variables (in order)."""
    rest = [u for u in range(n) if u != v]
    f0 = f1 = 0
    for a in range(1 << (n - 1)):
        full = 0
        for i, u in enumerate(rest):
            if a >> i & 1:
                full |= 1 << u
        if table >> full & 1:
            f0 |= 1 << a
        if table >> (full | 1 << v) & 1:
            f1 |= 1 << a
    return f0, f1, rest


# An expression: ("const", c) | ("var", i, neg) | ("gate", t4, e0, e1)  (vars are positions).
@functools.lru_cache(maxsize=None)
def _best(n, table):
    """(cost, expression) of the function ``table`` of ``n`` <= 4 variables 0..n-1."""
    mask = (1 << (1 << n)) - 1
    table &= mask
    if table == 0 or table == mask:
        return 0, ("const", 1 if table else 0)
    used = _support(n, table)
    if len(used) < n:
        cost, expr = _best(len(used), _restrict(n, table, used))
        return cost, _rename(expr, used)
    if n == 1:
        return 0, ("var", 0, 1 if table == 1 else 0)
    if n == 2:
        return 1, ("gate", table, ("var", 0, 0), ("var", 1, 0))
    best = None

    def offer(cost, expr):
        nonlocal best
        if best is None or cost < best[0]:
            best = (cost, expr)

    for v in range(n):
        f0, f1, rest = _cofactors(n, table, v)
        m = (1 << (1 << (n - 1))) - 1
        var = ("var", v, 0)
        if f0 == 0 or f0 == m or f1 == 0 or f1 == m or f1 == f0 ^ m:
            if f0 == 0:      # v & f1
                sub, t = f1, 0b1000
            elif f0 == m:    # ~v | f1
                sub, t = f1, 0b1101
            elif f1 == 0:    # ~v & f0
                sub, t = f0, 0b0100
            elif f1 == m:    # v | f0
                sub, t = f0, 0b1110
            else:            # v ^ f0
                sub, t = f0, 0b0110
            cost, expr = _best(n - 1, sub)
            offer(cost + 1, ("gate", t, var, _rename(expr, rest)))
        else:
            c0, e0 = _best(n - 1, f0)
            cd, ed = _best(n - 1, f0 ^ f1)
            c1, e1 = _best(n - 1, f1)
            # f = f0 ^ (v & (f0 ^ f1))  or  f1 ^ (~v & (f0 ^ f1))
            inner = ("gate", 0b1000, var, _rename(ed, rest))
            offer(c0 + cd + 2, ("gate", 0b0110, _rename(e0, rest), inner))
            inner = ("gate", 0b0100, var, _rename(ed, rest))
            offer(c1 + cd + 2, ("gate", 0b0110, _rename(e1, rest), inner))
    # Disjoint decompositions F(h(B), free).
    for size in range(2, n):
        for bound in itertools.combinations(range(n), size):
            free = [u for u in range(n) if u not in bound]
            columns = {}
            for b in range(1 << size):
                col = 0
                for f in range(1 << len(free)):
                    full = 0
                    for i, u in enumerate(bound):
                        if b >> i & 1:
                            full |= 1 << u
                    for i, u in enumerate(free):
                        if f >> i & 1:
                            full |= 1 << u
                    if table >> full & 1:
                        col |= 1 << f
                columns.setdefault(col, []).append(b)
            if len(columns) != 2:
                continue
            (col0, _), (col1, bs1) = sorted(columns.items(), key=lambda kv: kv[1][0])
            h = sum(1 << b for b in bs1)
            # F over (free..., h) with h the last variable
            k = len(free)
            big = 0
            for a in range(1 << (k + 1)):
                col = col1 if a >> k & 1 else col0
                if col >> (a & ((1 << k) - 1)) & 1:
                    big |= 1 << a
            ch, eh = _best(size, h)
            cf, ef = _best(k + 1, big)
            offer(ch + cf, _substitute(ef, list(free), _rename(eh, list(bound))))
    return best


def _rename(expr, names):
    kind = expr[0]
    if kind == "const":
        return expr
    if kind == "var":
        return ("var", names[expr[1]], expr[2])
    return ("gate", expr[1], _rename(expr[2], names), _rename(expr[3], names))


def _substitute(expr, names, last):
    """Rename variables ``i < len(names)`` to ``names[i]`` and variable ``len(names)`` to the
    expression ``last``."""
    kind = expr[0]
    if kind == "const":
        return expr
    if kind == "var":
        if expr[1] == len(names):
            return _negate(last) if expr[2] else last
        return ("var", names[expr[1]], expr[2])
    return ("gate", expr[1], _substitute(expr[2], names, last),
            _substitute(expr[3], names, last))


def _negate(expr):
    kind = expr[0]
    if kind == "const":
        return ("const", 1 - expr[1])
    if kind == "var":
        return ("var", expr[1], 1 - expr[2])
    return ("gate", expr[1] ^ 0xF, expr[2], expr[3])


class GateDag:
    """2-input gates with shared sub-expressions (module docstring)."""

    def __init__(self):
        self.gates = {}       # node -> (a, b, table)
        self.inputs = {}      # node -> (port, bit)
        self._keys = {}
        self._next = 0

    def new_input(self, port, bit):
        node = self._next
        self._next += 1
        self.inputs[node] = (port, bit)
        return node

    def gate(self, table, la, lb):
        """The literal of ``table`` (bit ``va | vb << 1``) of the literals ``la``, ``lb``."""
        (a, na), (b, nb) = la, lb
        if a == CONST and b == CONST:
            return CONST, table >> (na | nb << 1) & 1
        if a == CONST or b == CONST:
            if a == CONST:
                table = _swap(table)
                (a, na), (b, nb) = (b, nb), (a, na)
            # b constant: value nb
            bit0, bit1 = table >> (nb << 1) & 1, table >> (1 | nb << 1) & 1
            return _unary(bit0, bit1, a, na)
        if na:
            table = ((table & 0b0101) << 1) | ((table & 0b1010) >> 1)
        if nb:
            table = ((table & 0b0011) << 2) | ((table & 0b1100) >> 2)
        if a == b:
            return _unary(table & 1, table >> 3 & 1, a, 0)
        if a > b:
            a, b, table = b, a, _swap(table)
        # depends on one operand only?
        if (table & 0b0101) >> 0 == (table & 0b1010) >> 1:       # not on a
            return _unary(table & 1, table >> 2 & 1, b, 0)
        if table & 0b0011 == (table & 0b1100) >> 2:               # not on b
            return _unary(table & 1, table >> 1 & 1, a, 0)
        neg = table & 1
        if neg:
            table ^= 0xF
        key = (a, b, table)
        node = self._keys.get(key)
        if node is None:
            node = self._next
            self._next += 1
            self._keys[key] = node
            self.gates[node] = key
        return node, neg

    def build(self, expr, literals):
        """The literal of ``expr`` (module expressions) with variable ``i`` = ``literals[i]``."""
        kind = expr[0]
        if kind == "const":
            return CONST, expr[1]
        if kind == "var":
            node, neg = literals[expr[1]]
            return node, neg ^ expr[2]
        left = self.build(expr[2], literals)
        right = self.build(expr[3], literals)
        return self.gate(expr[1], left, right)

    def evaluate(self, node, values, cache):
        """The value of ``node`` for input values ``values`` (node -> 0/1)."""
        if node in cache:
            return cache[node]
        if node in self.inputs:
            return values[node]
        stack = [node]
        while stack:
            top = stack[-1]
            if top in cache:
                stack.pop()
                continue
            if top in self.inputs:
                cache[top] = values[top]
                stack.pop()
                continue
            a, b, table = self.gates[top]
            missing = [x for x in (a, b) if x not in cache and x not in self.inputs]
            if missing:
                stack.extend(missing)
                continue
            va = cache[a] if a in cache else values[a]
            vb = cache[b] if b in cache else values[b]
            cache[top] = table >> (va | vb << 1) & 1
            stack.pop()
        return cache[node]


def _swap(table):
    """The table with its two operands exchanged."""
    return (table & 0b1001) | ((table & 0b0010) << 1) | ((table & 0b0100) >> 1)


def _unary(bit0, bit1, node, neg):
    """The literal of the function (bit0 at 0, bit1 at 1) of literal (node, neg)."""
    if bit0 == bit1:
        return CONST, bit0
    if neg:
        bit0, bit1 = bit1, bit0
    return node, bit0   # bit0 = 1 means negated


def decompose(table, n):
    """(cost in gates, expression) for a LUT of ``n`` <= 4 inputs (module docstring)."""
    return _best(n, table & ((1 << (1 << n)) - 1))


def netlist_gates(netlist):
    """The :class:`GateDag` of the combinational ``netlist`` and its outputs.

    :returns: ``(dag, outputs)``, ``outputs[port]`` a list of literals, least significant bit
        first.
    """
    from ..netlist import CONST0, CONST1
    dag = GateDag()
    literal = {CONST0: (CONST, 0), CONST1: (CONST, 1)}
    for port, spec in netlist.inputs.items():
        for i, net in enumerate(spec.bits):
            literal[net] = (dag.new_input(port, i), 0)
    for net in netlist.order:
        lut = netlist.luts[net]
        _, expr = decompose(lut.table, len(lut.inputs))
        literal[net] = dag.build(expr, [literal[i] for i in lut.inputs])
    outputs = {port: [literal[net] for net in spec.bits]
               for port, spec in netlist.outputs.items()}
    return dag, outputs
