"""Every compiled program checked: the program on the bit-parallel emulator against the
design's own netlist simulation (issue 23, stage *check*).

:func:`check_program` runs after the back end and before anything is written: a combinational
design with at most :data:`EXHAUSTIVE_BITS` input bits on every input combination, a larger
one on :data:`RANDOM_ROWS` random rows (every bit pattern of the all-0 and all-1 corners
first); a sequential design on :data:`RANDOM_ROWS` random cycles from reset, in phases in which
each 1-bit input (a reset, an enable) is 1 with a probability of 1/16, 1/2 or 15/16, so that
counters get to count and resets are seen, then :data:`STARTUP_RUNS` short runs from reset
with every 1-bit input held at 0 or 1 (what a program does around its row 0: a write enable
held off, a reset held on). The reference is
:meth:`bitgrid.netlist.Netlist.simulate` (sequential) or its vectorised form
(:func:`simulate_bits`, combinational). A mismatch is a compiler bug: a
:class:`~bitgrid.compiler.errors.CompileError` naming the first differing row, its inputs,
the port and both values. Rows are seeded, so a check is the same on every run.

Values of any width (issues 36 and 39): the rows' values are Python integers
(:func:`check_rows`), turned once into bit arrays of shape ``(rows, port width)``
(:func:`bitgrid.values.to_bits`); the program's run (:func:`bitgrid.evaluate.run_fast`) and
the netlist's simulation (:func:`simulate_bits`) both give bit arrays, compared bit for bit.
Integers come back only for the message. A 1-bit port and a 4096-bit one are alike.

Memory (issue 39 item 6): :func:`check_plan` estimates, before anything runs, what the check
holds: the emulator of the grid (:data:`CELL_BYTES` a cell), every row's input and output
bits, one window of the emulator's run (:func:`bitgrid.evaluate.subcycle_bytes` a subcycle)
and one piece of the netlist simulation (a byte per net and row). It sizes the window and the
pieces to fit :data:`MEMORY_SHARE` of the memory available (:func:`available_memory`): the
emulator runs the whole stream of subcycles in windows, carrying its state from one to the
next, and the simulation goes through the rows in pieces, each compared and dropped before
the next; the verdict does not depend on either. Only when the rows' own bits do not fit are
fewer rows checked (a seeded sample, said in a note); when not even the emulator fits, the
check refuses up front with its estimate and what to do.

Time (issue 40 item 3): a check runs at most :data:`CHECK_CELL_UPDATES` cell updates and
:data:`bitgrid.ports.MAX_SUBCYCLES` subcycles (:func:`time_rows`); a program of a long
period is checked on fewer rows (a seeded sample, at least :data:`MIN_CHECK_ROWS`), said in a
note, never refused for the length of its own check.
"""

import itertools
import random
import typing

import numpy as np

from ..checks import check_int
from ..resources import available_memory, format_bytes
from ..values import from_bits, to_bits
from .errors import CompileError

__all__ = ["EXHAUSTIVE_BITS", "RANDOM_ROWS", "CELL_BYTES", "MEMORY_SHARE", "CheckPlan",
           "CHECK_CELL_UPDATES", "MIN_CHECK_ROWS", "check_rows", "check_plan", "time_rows",
           "simulate_bits", "simulate_rows", "check_program", "startup_rows", "STARTUP_RUNS",
           "STARTUP_ROWS"]

#: Combinational designs with at most this many input bits are checked on every combination.
EXHAUSTIVE_BITS = 16
#: Rows (design cycles) of a random check.
RANDOM_ROWS = 1000
#: The probabilities of a 1 on a 1-bit input in the phases of a sequential check.
_PHASES = (0.5, 1 / 16, 15 / 16)
#: Bytes per grid cell of the bit-parallel emulator at its peak (its packed state and
#: coefficients, the configuration's copy and the temporaries of loading it: about 170
#: measured on a 1024 x 1024 grid).
CELL_BYTES = 192
#: The share of the available memory (:func:`available_memory`) a check plans to use.
MEMORY_SHARE = 0.5
#: Bytes a Python dict of one row takes, and each entry beyond the integer's bytes.
_ROW_DICT_BYTES, _ENTRY_BYTES = 240, 48
#: Bytes per row and net of a piece of the combinational simulation, beyond the net values
#: (the address array a LUT is read with).
_SIMULATION_EXTRA = 16
#: Fewest subcycles of a window and rows of a piece a plan allows (below, it refuses).
_MIN_WINDOW, _MIN_PIECE = 64, 64
#: Most cell updates (subcycles x grid cells) a check runs: about 15 to 25 s of the compiled
#: kernel on these 2-core machines (2e9 to 4e9 updates/s, ``bitgrid bench emulator``). A
#: program whose rows would take more is checked on fewer of them (:func:`time_rows`).
CHECK_CELL_UPDATES = 5 * 10 ** 10
#: Rows a check keeps however long its rows are (when the evaluator's bound allows them).
MIN_CHECK_ROWS = 16


def _random_value(port, rng, p=0.5):
    if len(port.bits) == 1:
        value = int(rng.random() < p)
    else:
        value = rng.getrandbits(len(port.bits))
    if port.signed and value >> (len(port.bits) - 1):
        value -= 1 << len(port.bits)
    return value


def check_rows(netlist, *, seed=0):
    """The input rows the check drives: ``[{port: int}]`` (see the module docstring), the
    values Python integers of the port's width (any width; negative for a signed port)."""
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


# Memory -----------------------------------------------------------------------------------------

class CheckPlan(typing.NamedTuple):
    """How a check fits its memory (:func:`check_plan`); sizes in bytes.

    :attr rows: rows checked; :attr planned: rows the check chose (``rows < planned`` only
        when the rows' bits would not fit: then a seeded sample of ``rows`` of them).
    :attr piece: rows of one piece of the netlist simulation.
    :attr window: subcycles of one window of the emulator's run.
    :attr estimate: bytes the check holds at its peak with these sizes.
    :attr budget: bytes it may use (:data:`MEMORY_SHARE` of the memory available).
    """
    rows: int
    planned: int
    piece: int
    window: int
    estimate: int
    budget: int


def time_rows(config, portmap, planned):
    """The rows of the ``planned`` a check runs: as many as fit :data:`CHECK_CELL_UPDATES`
    cell updates on ``config``'s grid and :data:`bitgrid.ports.MAX_SUBCYCLES` subcycles
    (:meth:`~bitgrid.ports.PortMap.cycles_needed`), but at least :data:`MIN_CHECK_ROWS` (or
    ``planned``) where the subcycle bound allows, and at least 1.

    So a check never refuses the program the compiler just made because running its rows
    would be too long (issue 40 item 3): a design of period 7,766 subcycles is checked on
    fewer rows, and :func:`check_program` says so.
    """
    from ..ports import MAX_SUBCYCLES
    cells = max(1, config.width * config.height)

    def fits(count, limit):
        return portmap.cycles_needed(count) <= limit

    def most(limit):                    # cycles_needed grows with the count: bisect
        low, high = 0, planned
        while low < high:
            middle = (low + high + 1) // 2
            if fits(middle, limit):
                low = middle
            else:
                high = middle - 1
        return low

    bound = most(MAX_SUBCYCLES)
    timed = most(CHECK_CELL_UPDATES // cells)
    return max(min(planned, 1), min(bound, max(timed, min(planned, MIN_CHECK_ROWS))))


def check_plan(netlist, config, portmap, rows, *, memory=None):
    """Plan the check of ``rows`` rows of ``netlist`` compiled to ``config`` with ``portmap``
    into ``memory`` bytes (default: :func:`available_memory`), of which it uses
    :data:`MEMORY_SHARE` (see the module docstring).

    The fixed part is the emulator (``width * height *`` :data:`CELL_BYTES`); each row holds
    its input and output bits (a byte each), its dict of values and, for a sequential design,
    its reference outputs; a subcycle of a window :func:`bitgrid.evaluate.subcycle_bytes`; a
    row of a simulation piece a byte per net. The window and the piece come after each other,
    so each may take what the rows leave.

    :returns: a :class:`CheckPlan`.
    :raises CompileError: if the emulator and the smallest window and piece do not fit:
        ``the check after compile needs about 30.2 GiB ... (--no-check skips it)``.
    """
    from ..evaluate import WINDOW_BYTES, subcycle_bytes
    from ..kernel import available as kernel_available
    planned = check_int(rows, "Rows", minimum=0)
    budget = int((available_memory() if memory is None else memory) * MEMORY_SHARE)
    in_bits = sum(len(p.bits) for p in netlist.inputs.values())
    out_bits = sum(len(p.bits) for p in netlist.outputs.values())

    def entries(ports):
        return sum(_ENTRY_BYTES + len(p.bits) // 8 for p in ports.values())

    per_row = in_bits + out_bits + _ROW_DICT_BYTES + entries(netlist.inputs)
    if netlist.dffs:                # Netlist.simulate's rows of integers, then their bits
        per_row += out_bits + _ROW_DICT_BYTES + entries(netlist.outputs)
    nets = len(netlist.luts) + in_bits + 2
    per_piece_row = nets + _SIMULATION_EXTRA + 2 * out_bits
    per_subcycle = subcycle_bytes(portmap)
    if not kernel_available():      # the numpy engine: edge words per subcycle as well
        per_subcycle += 1024 + per_subcycle // 2
    fixed = config.width * config.height * CELL_BYTES
    smallest = max(min(_MIN_WINDOW, portmap.cycles_needed(max(planned, 1))) * per_subcycle,
                   0 if netlist.dffs else min(_MIN_PIECE, planned) * per_piece_row)
    fit = (budget - fixed - smallest) // per_row if budget > fixed + smallest else 0
    count = min(planned, fit)
    if count < min(planned, 1):
        need = fixed + smallest + min(planned, 1) * per_row
        raise CompileError(
            f"the check after compile needs about {format_bytes(need)} (the emulator of the "
            f"{config.width} x {config.height} grid and its rows), more than the "
            f"{format_bytes(budget)} it may use ({MEMORY_SHARE:.0%} of the memory available now); "
            "free some memory, or skip the check with --no-check (nothing was written)")
    left = budget - fixed - count * per_row
    total = portmap.cycles_needed(count) if count else 0
    window = max(1, min(left // per_subcycle, WINDOW_BYTES // per_subcycle, total or 1))
    if netlist.dffs:
        piece = count
        sizes = window * per_subcycle
    else:
        piece = max(1, min(count, left // per_piece_row))
        sizes = max(window * per_subcycle, piece * per_piece_row)
    return CheckPlan(count, planned, piece, window, fixed + count * per_row + sizes, budget)


# The reference ---------------------------------------------------------------------------------

def simulate_bits(netlist, inputs, count):
    """The outputs of ``netlist`` for ``count`` rows given as bit arrays.

    A combinational design is simulated on all rows at once, one numpy array of a byte per
    row and net (each net's array dropped after its last reader); a sequential one row after
    row by :meth:`~bitgrid.netlist.Netlist.simulate` (row ``k`` the design cycle ``k`` from
    reset).

    :param inputs: ``{input port: array (count, width)}`` of 0/1 (:func:`bitgrid.values.to_bits`;
        a port left out is 0).
    :returns: ``{output port: uint8 array (count, width)}`` of 0/1, any width.
    """
    from ..netlist import CONST0, CONST1
    count = check_int(count, "Rows", minimum=0)
    if netlist.dffs:
        rows = [{} for _ in range(count)]
        for name, port in netlist.inputs.items():
            if name in inputs:
                for row, value in zip(rows, from_bits(inputs[name], signed=port.signed)):
                    row[name] = value
        results = netlist.simulate(rows)
        return {name: to_bits([r[name] for r in results], len(port.bits))
                for name, port in netlist.outputs.items()}
    zeros = np.zeros(count, dtype=np.uint8)
    values = {CONST0: zeros, CONST1: np.ones(count, dtype=np.uint8)}
    for name, port in netlist.inputs.items():
        columns = (np.ascontiguousarray(np.asarray(inputs[name], dtype=np.uint8).T)
                   if name in inputs else None)
        for i, net in enumerate(port.bits):
            values[net] = zeros if columns is None else columns[i]
    order = netlist.order
    kept = {net for port in netlist.outputs.values() for net in port.bits}
    last = {}
    for step, net in enumerate(order):
        for source in netlist.luts[net].inputs:
            last[source] = step
    for step, net in enumerate(order):
        lut = netlist.luts[net]
        address = np.zeros(count, dtype=np.uint8)
        for i, source in enumerate(lut.inputs):
            address |= values[source] << i
        table = np.array([(lut.table >> a) & 1 for a in range(1 << len(lut.inputs))],
                         dtype=np.uint8)
        values[net] = table[address]
        for source in set(lut.inputs) | {net}:
            if last.get(source, -1) <= step and source in netlist.luts and source not in kept:
                del values[source]
    return {name: (np.stack([values[net] for net in port.bits], axis=1) if port.bits
                   else np.zeros((count, 0), dtype=np.uint8))
            for name, port in netlist.outputs.items()}


def simulate_rows(netlist, rows):
    """:meth:`~bitgrid.netlist.Netlist.simulate` of ``netlist`` over ``rows`` (a list of
    ``{port: int}``, any width; :func:`simulate_bits` on their bits): the same list of
    ``{port: int}``, signed ports sign-extended."""
    if netlist.dffs:
        return netlist.simulate(rows)
    inputs = {name: to_bits([int(r.get(name, 0)) for r in rows], len(port.bits))
              for name, port in netlist.inputs.items()}
    bits = simulate_bits(netlist, inputs, len(rows))
    columns = {name: from_bits(bits[name], signed=port.signed)
               for name, port in netlist.outputs.items()}
    return [{name: column[k] for name, column in columns.items()} for k in range(len(rows))]


# The check -------------------------------------------------------------------------------------

def _check_ports(netlist, portmap):
    """The port map declares exactly the netlist's ports, with their widths and signs."""
    for direction, ports in (("in", netlist.inputs), ("out", netlist.outputs)):
        declared = {p.name: p for p in portmap.ports if p.direction == direction}
        for name, port in ports.items():
            mine = declared.pop(name, None)
            if mine is None or mine.width != len(port.bits) or mine.signed != port.signed:
                found = ("not in the port map" if mine is None else
                         f"{mine.width} bits{' signed' if mine.signed else ''} in the port map")
                raise CompileError(
                    f"compiler bug: {direction}put port {name} of the design "
                    f"({len(port.bits)} bits{' signed' if port.signed else ''}) is {found}; "
                    "nothing was written (please report it; --no-check skips this check)")
        if declared:
            raise CompileError(
                f"compiler bug: the port map has {direction}put port{'s' * (len(declared) > 1)} "
                f"{', '.join(declared)}, which the design has not; nothing was written "
                "(please report it; --no-check skips this check)")


def _first_difference(netlist, got, expected, start, stop):
    """``(row, port)`` of the first row in ``start .. stop - 1`` where ``got`` and
    ``expected`` (bit arrays of rows ``start ..``, ``got`` of every row) differ, the first
    such port in the netlist's order; None if they agree."""
    first = None
    for name in netlist.outputs:
        rows = np.flatnonzero((got[name][start:stop] != expected[name]).any(axis=1))
        if len(rows) and (first is None or rows[0] + start < first[0]):
            first = (int(rows[0]) + start, name)
    return first


def check_program(netlist, config, portmap, *, seed=0, progress=None, piece=None, window=None,
                  memory=None, notes=None):
    """Run ``config`` with ``portmap`` on the bit-parallel emulator (``fast``) and compare
    every output row with the netlist's, in the window and pieces of :func:`check_plan`.

    :param progress: ``progress("check", done, total)``: the emulator's subcycles, then the
        rows simulated.
    :param piece, window: rows of a simulation piece (of a combinational design: a sequential
        one is simulated in one run from reset) and subcycles of an emulator window instead of
        the plan's; the verdict is the same for any.
    :param memory: bytes available instead of :func:`available_memory` (the plan uses
        :data:`MEMORY_SHARE` of them).
    :param notes: a list to which a one-line note is appended when fewer rows than planned
        are checked (they would not fit the memory).
    :returns: the number of rows checked.
    :raises CompileError: at the first differing row: ``compiler bug: ...`` with the row, its
        inputs, the port, the program's and the design's values; a port map whose ports are
        not the design's (``compiler bug``); a check that does not fit the memory
        (:func:`check_plan`).
    """
    _check_ports(netlist, portmap)
    rows = check_rows(netlist, seed=seed)
    planned = len(rows)
    timed = time_rows(config, portmap, planned)
    plan = check_plan(netlist, config, portmap, timed, memory=memory)
    if plan.rows < planned:
        keep = sorted(random.Random(seed).sample(range(planned), plan.rows))
        rows = [rows[k] for k in keep]
        if notes is not None:
            why = (f"the others would not fit the {format_bytes(plan.budget)} it may use"
                   if plan.rows < timed else
                   f"a row takes {portmap.period} subcycles of the {config.width} x "
                   f"{config.height} grid, and all {planned} would take too long")
            notes.append(f"the check ran on {plan.rows} of its {planned} rows: {why}")
    piece = plan.piece if piece is None else check_int(piece, "Piece", minimum=1)
    window = plan.window if window is None else check_int(window, "Window", minimum=1)
    if netlist.dffs:
        piece = max(1, len(rows))       # one run from reset
    count = len(rows)
    subcycles = portmap.cycles_needed(count) if count else 0
    total = subcycles + count

    def report(done, _total=None):
        if progress is not None:
            progress("check", done, total)

    report(0)
    _compare(netlist, config, portmap, rows, piece, window, report, subcycles)
    report(total)
    if netlist.dffs and count:
        # short runs from reset with each 1-bit input held (a write enable held off, a
        # reset held): what a program does before and just after its row 0 (a write of
        # its logic's start-up values into a memory's initial contents, say), which one
        # long random run rarely shows
        for rows in startup_rows(netlist, seed=seed):
            _compare(netlist, config, portmap, rows, len(rows), window, None, 0)
            count += len(rows)
    return count


#: Short runs from reset in the check of a sequential design (:func:`startup_rows`), and
#: their rows.
STARTUP_RUNS = 8
STARTUP_ROWS = 12


def startup_rows(netlist, *, seed=0):
    """:data:`STARTUP_RUNS` lists of :data:`STARTUP_ROWS` input rows, each a run from
    reset in which every 1-bit input is held at 0 or 1 (all 0, all 1, then seeded at
    random) and the wider inputs are random."""
    rng = random.Random(seed + 1)
    single = [name for name, port in netlist.inputs.items() if len(port.bits) == 1]
    runs = []
    for run in range(STARTUP_RUNS):
        held = {name: (run == 1 if run < 2 else rng.randrange(2)) for name in single}
        runs.append([{name: int(held[name]) if name in held else _random_value(port, rng)
                      for name, port in netlist.inputs.items()}
                     for _ in range(STARTUP_ROWS)])
    return runs


def _compare(netlist, config, portmap, rows, piece, window, report, subcycles):
    """Run ``rows`` from reset and compare them with the netlist's, ``piece`` rows of the
    simulation at a time (:func:`check_program`).

    :raises CompileError: at the first differing row."""
    from ..evaluate import run_fast
    count = len(rows)
    inputs = {name: to_bits([row[name] for row in rows], len(port.bits))
              for name, port in netlist.inputs.items()}
    got = run_fast(config, portmap, inputs, count, window=window, progress=report)
    for start in range(0, count, piece):
        stop = min(count, start + piece)
        expected = simulate_bits(netlist, {name: bits[start:stop]
                                           for name, bits in inputs.items()}, stop - start)
        first = _first_difference(netlist, got, expected, start, stop)
        if first is not None:
            k, name = first
            port = netlist.outputs[name]
            have = from_bits(got[name][k:k + 1], signed=port.signed)[0]
            want = from_bits(expected[name][k - start:k - start + 1], signed=port.signed)[0]
            values = ", ".join(f"{n}={v}" for n, v in rows[k].items()) or "no inputs"
            raise CompileError(
                f"compiler bug: the program differs from the design in row {k} ({values}): "
                f"{name} is {have}, the design gives {want}; nothing was written (please "
                "report it; --no-check skips this check)")
        del expected
        if report is not None:
            report(subcycles + stop)
