"""Exact minimal expressions for every 4-input LUT (SPEC section 3), for ``bitgrid disasm``.

Every 16-bit LUT ``f`` (bit ``a`` is the output for address ``a = N | E<<1 | S<<2 | W<<3``)
gets one expression of ``n, e, s, w`` that is minimal under this **cost model**, compared in
this order:

1. *leaves*: how many times an input is written (``n ^ e ^ w`` has 3, ``~(n & e)`` 2,
   the constants ``0`` and ``1`` have 0);
2. *operators*: the number of ``~``, ``&``, ``|``, ``^``, ``?:`` and ``maj`` written, each 1
   (so ``~(n | e)`` beats ``~n & ~e``);
3. a fixed order of forms: an outer ``~`` first, then ``&``, ``|``, ``^``, ``?:`` (select
   ``n``, ``e``, ``s``, ``w``), ``maj``; then the operand with fewer leaves on the left, then
   the operands by increasing table value (only to make the choice deterministic).

The expressions searched are built from the inputs and these forms: ``~x``, ``x & y``,
``x | y``, ``x ^ y`` of any expressions, ``v ? x : y`` with an input ``v`` as the select and any
expressions as the branches, and ``maj(a, b, c)`` of three *literals* (an input or its
negation) on three different inputs. The search is exhaustive over that grammar, level by
level in the number of leaves (every sub-expression of a minimal expression is minimal for its
own function, so level ``k`` is built from levels ``i + j = k``); the largest minimal
expressions have 8 leaves.

The result is a table of 65,536 *recipes* (:func:`generate`, about 10 s), kept in the package
as ``minimal.npz`` and loaded on first use (:func:`table`); ``python -m bitgrid.asm.minimise``
writes it again. :func:`expression` gives a LUT's text and :func:`leaves` its leaf count.
"""

import functools
import os
import sys

import numpy as np

from ..cell import COPY

__all__ = ["NOT", "AND", "OR", "XOR", "MUX", "MAJ", "CONST", "LITERAL", "INPUTS", "MAJ_TRIPLES",
           "generate", "table", "expression", "leaves", "TABLE_PATH"]

#: The input tables: ``n`` is 0xAAAA (bit ``a`` set when address bit 0 is set), and so on.
INPUTS = COPY
_NAMES = "nesw"
#: Recipe operators (the ``op`` of a table row). ``MUX + v`` is the select on input ``v``.
CONST, LITERAL, NOT, AND, OR, XOR, MUX, MAJ = 0, 1, 2, 3, 4, 5, 6, 10
_MASK = 0xFFFF
#: ``maj`` forms of the grammar: ``(inputs, negated)`` for each triple of different inputs and
#: each choice of literal polarities; a MAJ recipe's ``a`` is an index into this tuple.
MAJ_TRIPLES = tuple(((i, j, k), (p & 1, p >> 1 & 1, p >> 2 & 1))
                    for i in range(4) for j in range(i + 1, 4) for k in range(j + 1, 4)
                    for p in range(8))

#: The packaged table (written by :func:`main`).
TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "minimal.npz")


_NONE = np.iinfo(np.int64).max


def _literal(index, negated):
    return INPUTS[index] ^ (_MASK if negated else 0)


def _maj(a, b, c):
    return (a & b) | (a & c) | (b & c)


def generate(progress=None):
    """Search the grammar of the module docstring exhaustively.

    :param progress: optional callable ``progress(leaves, count)`` called after each level.
    :returns: a dict of numpy arrays of 65,536 entries indexed by the LUT: ``op`` (uint8, one
        of the recipe operators), ``a`` and ``b`` (uint16: the operand LUTs; for ``MAJ``,
        ``a`` indexes :data:`MAJ_TRIPLES`; for ``LITERAL``, ``a`` is the input index and ``b``
        1 if negated), ``leaves`` and ``cost`` (uint8: leaves and operators of the expression).
    """
    size = 1 << 16
    level = np.full(size, 255, np.uint8)      # leaves of the minimal expression
    cost = np.zeros(size, np.uint8)           # operators of the minimal expression
    op = np.zeros(size, np.uint8)
    a = np.zeros(size, np.uint16)
    b = np.zeros(size, np.uint16)
    for value in (0, _MASK):
        level[value], op[value] = 0, CONST
    members = {}
    first = []
    for index in range(4):
        for negated in (0, 1):
            f = _literal(index, negated)
            level[f], cost[f], op[f], a[f], b[f] = 1, negated, LITERAL, index, negated
            first.append(f)
    members[1] = np.array(sorted(first), np.uint16)
    if progress:
        progress(1, len(first))
    k = 1
    while (level == 255).any():
        k += 1
        # key = operators << 42 | form << 38 | left level << 34 | left index << 17 | right index
        best = np.full(size, _NONE, np.int64)

        def offer(results, keys):
            fresh = level[results] == 255
            np.minimum.at(best, results[fresh], keys[fresh])

        for i in range(1, k):
            j = k - i
            if i > j or i not in members or j not in members:
                continue
            lv, rv, base = _pairs(members, cost, i, j)
            for form, result in ((AND, lv & rv), (OR, lv | rv), (XOR, lv ^ rv)):
                offer(result.ravel(), (base | (form << 38)).ravel())
        # v ? x : y with x of i leaves and y of k - 1 - i leaves
        for i in range(1, k - 1):
            j = k - 1 - i
            if i not in members or j not in members:
                continue
            lv, rv, base = _pairs(members, cost, i, j)
            for v, select in enumerate(INPUTS):
                result = (lv & np.uint16(select)) | (rv & np.uint16(select ^ _MASK))
                offer(result.ravel(), (base | ((MUX + v) << 38)).ravel())
        if k == 3:
            for index, (inputs, negated) in enumerate(MAJ_TRIPLES):
                f = _maj(*(_literal(x, p) for x, p in zip(inputs, negated)))
                key = ((sum(negated) + 1) << 42) | (MAJ << 38) | index
                if level[f] == 255 and key < best[f]:
                    best[f] = key
        found = np.nonzero(best != _NONE)[0]
        keys = best[found]
        # An outer ~ of a function of this level: operators + 1, first on ties (form 0).
        negation = np.full(size, _NONE, np.int64)
        negation[found ^ _MASK] = ((keys >> 42) + 1) << 42
        new = np.union1d(found, found ^ _MASK)
        _commit(level, cost, op, a, b, members, k, new, best, negation)
        if progress:
            progress(k, len(members[k]))
    return {"op": op, "a": a, "b": b, "leaves": level, "cost": cost}


def _pairs(members, cost, i, j):
    """Operand grids of levels ``i`` and ``j`` and the keys' common part."""
    left, right = members[i], members[j]
    lcost = cost[left].astype(np.int64)[:, None]
    rcost = cost[right].astype(np.int64)[None, :]
    li = np.arange(len(left), dtype=np.int64)[:, None] << 17
    ri = np.arange(len(right), dtype=np.int64)[None, :]
    base = ((lcost + rcost + 1) << 42) | (i << 34) | li | ri
    return left[:, None], right[None, :], base


def _commit(level, cost, op, a, b, members, k, new, direct, negation):
    """Record level ``k``: for each LUT in ``new``, the better of its direct form (``direct``
    keys) and the outer ~ of its complement's direct form (``negation`` keys)."""
    new = new.astype(np.int64)
    dkey, nkey = direct[new], negation[new]
    use_not = nkey <= dkey          # NOT sorts first on equal operators
    for f, key, negate in zip(new.tolist(), np.where(use_not, nkey, dkey).tolist(),
                              use_not.tolist()):
        level[f] = k
        cost[f] = key >> 42
        if negate:
            op[f], a[f], b[f] = NOT, f ^ _MASK, 0
            continue
        form = (key >> 38) & 0xF
        if form == MAJ:
            op[f], a[f], b[f] = MAJ, key & 0x1FFFF, 0
            continue
        i = (key >> 34) & 0xF
        j = k - i - (1 if form >= MUX else 0)
        op[f] = form
        a[f] = members[i][(key >> 17) & 0x1FFFF]
        b[f] = members[j][key & 0x1FFFF]
    members[k] = np.array(sorted(new.tolist()), np.uint16)


@functools.lru_cache(maxsize=1)
def table():
    """The recipes of :func:`generate` (the same dict), from the packaged ``minimal.npz``, or
    computed (about 3 s) if that file is missing or unreadable."""
    try:
        with np.load(TABLE_PATH) as data:
            result = {key: data[key].copy() for key in ("op", "a", "b", "leaves", "cost")}
        if all(len(v) == 1 << 16 for v in result.values()):
            return result
    except (OSError, ValueError, KeyError):
        pass
    return generate()


# Printing: a form's precedence (higher binds tighter). Operands of a binary operator are
# bare only if they are atoms, a ~, or the same associative operator: ``(n & e) ^ w``, never
# ``n & e ^ w``, so nobody needs to remember the precedence of & over ^ to read the output.
_ATOM, _UNARY, _BINARY, _MUX = 3, 2, 1, 0
_SYMBOL = {AND: "&", OR: "|", XOR: "^"}


def _render(f, recipes, memo):
    """``(text, kind, op)`` of LUT ``f``."""
    if f in memo:
        return memo[f]
    op, a, b = int(recipes["op"][f]), int(recipes["a"][f]), int(recipes["b"][f])
    if op == CONST:
        result = ("1" if f else "0", _ATOM, op)
    elif op == LITERAL:
        result = (("~" if b else "") + _NAMES[a], _UNARY if b else _ATOM, op)
    elif op == NOT:
        text, kind, _ = _render(a, recipes, memo)
        result = ("~" + (text if kind >= _UNARY else f"({text})"), _UNARY, op)
    elif op == MAJ:
        inputs, negated = MAJ_TRIPLES[a]
        args = ", ".join(("~" if p else "") + _NAMES[x] for x, p in zip(inputs, negated))
        result = (f"maj({args})", _ATOM, op)
    elif op in _SYMBOL:
        parts = []
        for g in (a, b):
            text, kind, child = _render(g, recipes, memo)
            bare = kind >= _UNARY or (kind == _BINARY and child == op)
            parts.append(text if bare else f"({text})")
        result = (f" {_SYMBOL[op]} ".join(parts), _BINARY, op)
    else:
        parts = []
        for g in (a, b):
            text, kind, child = _render(g, recipes, memo)
            parts.append(text if kind > _MUX else f"({text})")
        result = (f"{_NAMES[op - MUX]} ? {parts[0]} : {parts[1]}", _MUX, MUX)
    memo[f] = result
    return result


_MEMO = {}


def expression(lut):
    """The minimal expression (module docstring) of the 16-bit LUT ``lut``, as text: for
    example ``expression(0x9696)`` is ``"n ^ e ^ s"`` and ``expression(0xE8E8)`` is
    ``"maj(n, e, s)"``.

    :raises ValueError: if ``lut`` is not an integer in 0..0xFFFF.
    """
    if isinstance(lut, bool) or not isinstance(lut, (int, np.integer)) or not 0 <= lut <= _MASK:
        raise ValueError(f"A LUT is a 16-bit table 0..0xFFFF, not {lut!r}")
    return _render(int(lut), table(), _MEMO)[0]


def leaves(lut):
    """Leaves (inputs written) of the minimal expression of ``lut``: 0 for the constants, at
    most 8."""
    return int(table()["leaves"][int(lut)])


def main(argv=None):
    """Write the packaged table again: ``python -m bitgrid.asm.minimise [PATH]``."""
    from bitgrid.files import atomic_write
    import io
    path = (argv if argv is not None else sys.argv[1:]) or [TABLE_PATH]
    result = generate(lambda k, count: print(f"{count:6} functions of {k} leaves",
                                             file=sys.stderr))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **result)
    atomic_write(path[0], buffer.getvalue())
    print(f"wrote {path[0]}", file=sys.stderr)


if __name__ == "__main__":
    main()
