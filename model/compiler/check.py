"""Every compiled program checked: the program on the bit-parallel emulator against the
design's own netlist simulation (issue 23, stage *check*).

:func:`check_program` runs after the back end and before anything is written: a combinational
design with at most :data:`EXHAUSTIVE_BITS` input bits on every input combination, a larger
one on :data:`RANDOM_ROWS` random rows (every bit pattern of the all-0 and all-1 corners
first); a sequential design on :data:`RANDOM_ROWS` random cycles from reset, in phases in which
each 1-bit input (a reset, an enable) is 1 with a probability of 1/16, 1/2 or 15/16, so that
counters get to count and resets are seen. The reference is
:meth:`bitgrid.netlist.Netlist.simulate` (sequential) or its vectorised form
(:func:`simulate_rows`, combinational). A mismatch is a compiler bug: a
:class:`~bitgrid.compiler.errors.CompileError` naming the first differing row, its inputs,
the port and both values. Rows are seeded, so a check is the same on every run.
"""

import itertools
import random

import numpy as np

from .errors import CompileError

__all__ = ["EXHAUSTIVE_BITS", "RANDOM_ROWS", "check_rows", "simulate_rows", "check_program"]

#: Combinational designs with at most this many input bits are checked on every combination.
EXHAUSTIVE_BITS = 16
#: Rows (design cycles) of a random check.
RANDOM_ROWS = 1000
#: The probabilities of a 1 on a 1-bit input in the phases of a sequential check.
_PHASES = (0.5, 1 / 16, 15 / 16)


def _random_value(port, rng, p=0.5):
    if len(port.bits) == 1:
        value = int(rng.random() < p)
    else:
        value = rng.getrandbits(len(port.bits))
    if port.signed and value >> (len(port.bits) - 1):
        value -= 1 << len(port.bits)
    return value


def check_rows(netlist, *, seed=0):
    """The input rows the check drives: ``[{port: int}]`` (see the module docstring)."""
    inputs = netlist.inputs
    total = sum(len(p.bits) for p in inputs.values())
    rng = random.Random(seed)
    if not netlist.dffs and total <= EXHAUSTIVE_BITS:
        ranges = []
        for port in inputs.values():
            n = len(port.bits)
            ranges.append(range(-(1 << (n - 1)), 1 << (n - 1)) if port.signed
                          else range(1 << n))
        rows = [dict(zip(inputs, values)) for values in itertools.product(*ranges)]
        return rows or [{}]
    if not netlist.dffs:
        corners = [{name: (-1 if port.signed else (1 << len(port.bits)) - 1) * ones
                    for name, port in inputs.items()} for ones in (0, 1)]
        return corners + [{name: _random_value(port, rng) for name, port in inputs.items()}
                          for _ in range(RANDOM_ROWS - 2)]
    rows = []
    for phase in range(4):
        chances = {name: rng.choice(_PHASES) if phase else 0.5 for name in inputs}
        rows += [{name: _random_value(port, rng, chances[name])
                  for name, port in inputs.items()} for _ in range(RANDOM_ROWS // 4)]
    return rows


def simulate_rows(netlist, rows):
    """:meth:`~bitgrid.netlist.Netlist.simulate` of a combinational ``netlist`` over all
    ``rows`` at once (numpy arrays of one value per row): the same list of ``{port: int}``."""
    if netlist.dffs:
        return netlist.simulate(rows)
    from ..netlist import CONST0, CONST1
    count = len(rows)
    values = {CONST0: np.zeros(count, dtype=np.int64), CONST1: np.ones(count, dtype=np.int64)}
    for name, port in netlist.inputs.items():
        column = np.array([int(r.get(name, 0)) for r in rows], dtype=np.int64)
        for i, net in enumerate(port.bits):
            values[net] = (column >> i) & 1
    for net in netlist.order:
        lut = netlist.luts[net]
        address = np.zeros(count, dtype=np.int64)
        for i, source in enumerate(lut.inputs):
            address |= values[source] << i
        values[net] = (lut.table >> address) & 1
    results = [{} for _ in range(count)]
    for name, port in netlist.outputs.items():
        column = np.zeros(count, dtype=np.int64)
        for i, net in enumerate(port.bits):
            column |= values[net] << i
        if port.signed and port.bits:
            top = 1 << (len(port.bits) - 1)
            column = np.where(column & top, column - 2 * top, column)
        for result, value in zip(results, column.tolist()):
            result[name] = value
    return results


def check_program(netlist, config, portmap, *, seed=0, progress=None):
    """Run ``config`` with ``portmap`` on the bit-parallel emulator (``fast``) and compare
    every output row with the netlist's.

    :returns: the number of rows checked.
    :raises CompileError: at the first differing row: ``compiler bug: ...`` with the row, its
        inputs, the port, the program's and the design's values.
    """
    from ..evaluate import evaluate
    rows = check_rows(netlist, seed=seed)
    if progress is not None:
        progress("check", 0, 1)
    expected = simulate_rows(netlist, rows)
    got = evaluate(config, portmap, rows, target="fast")
    for k, (row, want, have) in enumerate(zip(rows, expected, got)):
        for name, value in want.items():
            if have.get(name) != value:
                inputs = ", ".join(f"{n}={v}" for n, v in row.items()) or "no inputs"
                raise CompileError(
                    f"compiler bug: the program differs from the design in row {k} ({inputs}): "
                    f"{name} is {have.get(name)}, the design gives {value}; nothing was "
                    "written (please report it; --no-check skips this check)")
    if progress is not None:
        progress("check", 1, 1)
    return len(rows)
