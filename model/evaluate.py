"""Running a program by port names (``bitgrid eval``): rows of port values in, rows out.

A program's port map (:mod:`bitgrid.ports`, ``bitgrid-ports-v1``) names groups of edge lanes
as ports and gives the program's timing. :func:`evaluate` turns a list of *rows* (one dict
``{input port: int}`` per design cycle) into the per-subcycle edge inputs, runs them on a
target, and reads each output port at the subcycle the port map says it holds that row's
value, giving one dict ``{output port: int}`` per row. It is cycle based, as a Verilog
simulation is (issue 12): row ``k`` holds the inputs during design cycle ``k``; a
combinational output reflects row ``k``, a registered output the state after ``k`` clock edges.

Timing (exactly the module docstring of :mod:`bitgrid.ports`, SPEC section 4), with ``P`` the
period, ``L`` the latency and ``s`` a bit's skew (all in subcycles, subcycle 0 the first after
reset):

* rows stream through the pipeline, one per period: an input bit carries row ``k`` during
  subcycles ``k*P + s .. (k+1)*P + s - 1``; before row 0 reaches it the lane is 0, after the
  last row it keeps the last row's value (the *drain*). Lanes that no input port names are 0.
* output bit ``s`` of row ``k`` is read after subcycle ``k*P + L + s - 1`` (index ``k*P + L +
  s - 1`` of the list of per-subcycle edge outputs).
* ``n`` rows run :meth:`PortMap.cycles_needed(n) <bitgrid.ports.PortMap.cycles_needed>` =
  ``(n - 1)*P + L + max(output skew)`` subcycles from reset: the fill and drain are added
  here, the caller gives only the rows.

The pieces, one each, shared by every target: :func:`edge_inputs` (rows -> per-subcycle
:class:`~bitgrid.terms.Edges`), :func:`run_edges` (run them on a target), :func:`sample`
(per-subcycle edge outputs -> rows). The ``fast`` target works on arrays instead
(:func:`run_fast`): the rows' values as bit arrays (:func:`input_bits`), the stimulus built
and the outputs sampled one window of subcycles at a time (:func:`lane_window`, at most
:data:`WINDOW_BYTES` of lanes), so its memory does not grow with the run. Port values are
integers of any width everywhere (1 to 4096 bits: :mod:`bitgrid.values`), never packed into
64-bit machine integers. Targets (:data:`TARGETS`): ``emu`` (the reference
:class:`~bitgrid.emulator.Emulator`), ``fast`` (:class:`~bitgrid.fastemu.FastEmulator`),
``sim`` (the RTL grid in cocotb through :func:`bitgrid.sim.run_case`, on Icarus or Verilator),
``mesh:COLSxROWS`` (the program split over a simulated mesh of chips joined by links,
:func:`bitgrid.sim.mesh.run_mesh_case`), the host runtime's ``loopback`` and
``serial:PORT``, and ``bgcf:HOST:PORT``, any BGCF server (``bitgrid serve`` on any target, a
board behind it), driven by its edge bus words (:func:`bitgrid.host.open_target`).

CSV files of rows: :mod:`bitgrid.csvrows` (re-exported here).
"""

import numpy as np

from .checks import check_int
from .config import Configuration
from .csvrows import (MAX_CSV_BYTES, CsvError, format_csv, parse_csv, parse_value,
                      read_csv)
from .ports import MAX_ROWS, MAX_SUBCYCLES, PortMap
from .values import from_bits, to_bits

__all__ = ["TARGETS", "CsvError", "check_target", "check_rows", "edge_inputs", "lane_inputs",
           "input_bits", "lane_window", "sample_lanes", "sample_points", "output_rows",
           "run_fast", "subcycle_bytes", "window_subcycles",
           "run_edges", "sample", "evaluate", "check_subcycles", "parse_value", "read_csv",
           "parse_csv", "format_csv",
           "MAX_ROWS", "MAX_SUBCYCLES", "MAX_CSV_BYTES", "WINDOW_BYTES"]

#: The targets :func:`evaluate` runs on (``serial:PORT`` names a port, e.g.
#: ``serial:/dev/ttyUSB0``; ``mesh:2x2`` a simulated mesh of 2 x 2 chips; ``bgcf:HOST:PORT`` a
#: BGCF server, e.g. ``bgcf:127.0.0.1:7700``).
TARGETS = ("emu", "fast", "sim", "mesh:COLSxROWS", "loopback", "serial:PORT",
           "bgcf:HOST:PORT")
# MAX_SUBCYCLES (bitgrid.ports): most subcycles one evaluation runs (rows x period plus the
# latency and skews; about 1 KiB of memory each while running).
#: Most subcycles one STEP request of the host protocol runs (protocol.host.MAX_STEPS).
_MAX_STEP_REQUEST = 0xFFFF
#: Most bytes the lane arrays of one window of the ``fast`` target take (:func:`run_fast`): a
#: run of any number of subcycles goes through the emulator in windows of at most this, so
#: that its memory does not grow with the rows, the period or the latency.
WINDOW_BYTES = 64 << 20
#: Bytes per subcycle of a window besides its two lane arrays (the index arrays that build
#: the input lanes, int64).
_SUBCYCLE_EXTRA = 64


# Rows and stimulus ----------------------------------------------------------------------------

def check_rows(portmap, rows):
    """``rows`` as a list of dicts ``{input port: int}``, each giving every input port of
    ``portmap`` a value that fits it (:meth:`bitgrid.ports.Port.encode`).

    :raises ValueError: ``Row 3: no value for input port b`` / ``Row 0: 'c' is not a port;
        the input ports are a, b`` / ``Row 2: Value 300 does not fit port a (8 bits, ...)`` /
        more than :data:`MAX_ROWS` rows.
    :raises TypeError: if ``rows`` is not a list of mappings, or for a value that is not an
        integer (``Row 1: port a value must be an integer, not '7'``).
    """
    if not isinstance(portmap, PortMap):
        raise TypeError(f"Expected a PortMap, not {portmap!r}")
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise TypeError(f"Rows are a list of dicts {{port: value}}, not {rows!r}")
    rows = list(rows)
    if len(rows) > MAX_ROWS:
        raise ValueError(f"{len(rows)} rows: at most {MAX_ROWS} in one evaluation")
    names = [port.name for port in portmap.inputs]
    bounds = [(port, port.minimum, port.maximum) for port in portmap.inputs]
    result = []
    for k, row in enumerate(rows):
        if not hasattr(row, "keys"):
            raise TypeError(f"Row {k} is not a dict {{port: value}}: {row!r}")
        for name in row:
            if name not in names:
                kind = ("is an output port" if name in portmap else "is not a port")
                raise ValueError(f"Row {k}: {name!r} {kind}; the input ports are "
                                 f"{', '.join(names) or '(none)'}")
        clean = {}
        for port, low, high in bounds:
            if port.name not in row:
                raise ValueError(f"Row {k}: no value for input port {port.name}")
            value = row[port.name]
            if type(value) is not int:
                value = check_int(value, f"Row {k}: port {port.name} value", error=TypeError)
            if not low <= value <= high:
                try:
                    port.encode(value)          # raises, with the port's wording
                except ValueError as error:
                    raise ValueError(f"Row {k}: {error}") from None
            clean[port.name] = value
        result.append(clean)
    return result


def check_subcycles(portmap, count):
    """The subcycles that running ``count`` rows takes (:meth:`PortMap.cycles_needed
    <bitgrid.ports.PortMap.cycles_needed>`), if at most :data:`MAX_SUBCYCLES`.

    :raises ValueError: ``100 rows of period 2 with latency 10000000 and output skew up to 0
        need 10000198 subcycles, more than 4194304 ...``.
    """
    total = portmap.cycles_needed(count)
    if total > MAX_SUBCYCLES:
        skew = portmap.depth - portmap.latency
        raise ValueError(f"{count} row{'s' if count != 1 else ''} of period {portmap.period} "
                         f"with latency "
                         f"{portmap.latency} and output skew up to {skew} need {total} "
                         f"subcycles, more than {MAX_SUBCYCLES} in one evaluation; check the "
                         "port map's period, latency and skews, or split the rows")
    return total


def input_bits(portmap, rows):
    """The input ports' values of ``rows`` as bit arrays (:func:`bitgrid.values.to_bits`).

    :param rows: checked rows (:func:`check_rows`), one per design cycle.
    :returns: ``{input port name: uint8 array (len(rows), port.width)}``, 0/1, column ``i``
        the port's bit ``i`` (two's complement for negative values), any width.
    """
    return {port.name: to_bits([row[port.name] for row in rows], port.width)
            for port in portmap.inputs}


def lane_window(portmap, bits, count, start, stop):
    """The edge inputs of subcycles ``start .. stop - 1`` of a run of ``count`` rows (see the
    module docstring) as a lane array: shape ``(stop - start, 2 * (width + height))`` of 0/1
    ``uint8``, the buses N, E, S, W side by side (:func:`bitgrid.kernel.lane_slices`); row
    ``t - start`` is applied during subcycle ``t``.

    :param bits: the rows' input bits, ``{input port name: array (count, width)}``
        (:func:`input_bits`).
    :param count: the rows of the whole run (the last one is held after the end).
    """
    from .kernel import lane_count, lane_slices
    width, height = portmap.width, portmap.height
    lanes = np.zeros((max(0, stop - start), lane_count(width, height)), dtype=np.uint8)
    if not count or not len(lanes):
        return lanes
    period, last = portmap.period, count - 1
    offsets = [side.start for side in lane_slices(width, height)]
    t = np.arange(start, stop)
    for port in portmap.inputs:
        values = bits[port.name]
        for i, bit in enumerate(port.bits):
            # bit row (t - skew) // period of the input bit (the last row after the end, 0
            # before the first)
            row = np.clip((t - bit.skew) // period, 0, last)
            lanes[:, offsets[int(bit.side)] + bit.lane] = np.where(t >= bit.skew,
                                                                   values[row, i], 0)
    return lanes


def lane_inputs(portmap, rows):
    """The edge inputs of every subcycle that runs ``rows`` (see the module docstring), as a
    lane array: shape ``(portmap.cycles_needed(len(rows)), 2 * (width + height))`` of 0/1
    ``uint8`` (:func:`lane_window` of the whole run); row ``t`` is applied during subcycle
    ``t``.

    :param rows: checked rows (:func:`check_rows`), one per design cycle.
    """
    rows = check_rows(portmap, rows)
    if not rows:
        return lane_window(portmap, {}, 0, 0, 0)
    total = check_subcycles(portmap, len(rows))
    return lane_window(portmap, input_bits(portmap, rows), len(rows), 0, total)


def edge_inputs(portmap, rows):
    """The edge inputs of every subcycle that runs ``rows`` (see the module docstring).

    :param rows: checked rows (:func:`check_rows`), one per design cycle.
    :returns: list of :class:`~bitgrid.terms.Edges`, ``portmap.cycles_needed(len(rows))`` long
        (empty for no rows); element ``t`` is applied during subcycle ``t``
        (:func:`lane_inputs` as edge words).
    """
    from .kernel import lanes_to_edges
    lanes = lane_inputs(portmap, rows)
    return lanes_to_edges(lanes, portmap.width, portmap.height) if len(lanes) else []


def _sample_window(portmap, outputs, start, into):
    """Copy into ``into`` (``{output port: array (count, width)}``) every output bit read
    after one of the subcycles ``start .. start + len(outputs) - 1``, whose edge outputs are
    the rows of the lane array ``outputs`` (row ``k`` of a port's array holds the bits read
    for row ``k``: after subcycle ``k*period + latency + skew - 1``)."""
    from .kernel import lane_slices
    offsets = [side.start for side in lane_slices(portmap.width, portmap.height)]
    period, stop = portmap.period, start + len(outputs)
    for port in portmap.outputs:
        target = into[port.name]
        count = len(target)
        for i, bit in enumerate(port.bits):
            base = portmap.latency + bit.skew - 1          # row k is read after base + k*P
            first = max(0, -(-(start - base) // period))
            end = min(count, -(-(stop - base) // period))
            if first < end:
                t = base + np.arange(first, end) * period - start
                target[first:end, i] = outputs[t, offsets[int(bit.side)] + bit.lane]


def output_rows(portmap, bits, count):
    """``count`` output rows (list of dicts ``{output port: int}``, signed ports
    sign-extended; empty dicts for a port map without outputs) from the output ports' bit
    arrays ``{output port name: array (count, width)}`` (Python integers of any width:
    :func:`bitgrid.values.from_bits`)."""
    columns = {port.name: from_bits(bits[port.name], signed=port.signed)
               for port in portmap.outputs}
    return [{name: column[r] for name, column in columns.items()} for r in range(count)]


def sample_lanes(portmap, outputs, count):
    """:func:`sample` from a lane array of edge outputs (``FastEmulator.run(n,
    inputs=lanes)``: row ``t`` the edge outputs after subcycle ``t``), vectorised.

    :raises ValueError: if ``outputs`` has fewer rows than ``portmap.cycles_needed(count)``.
    """
    count = check_int(count, "Rows", minimum=0)
    if count and len(outputs) < portmap.cycles_needed(count):
        raise ValueError(f"{len(outputs)} subcycles of outputs; {count} rows need "
                         f"{portmap.cycles_needed(count)}")
    bits = {port.name: np.zeros((count, port.width), dtype=np.uint8)
            for port in portmap.outputs}
    _sample_window(portmap, np.asarray(outputs), 0, bits)
    return output_rows(portmap, bits, count)


def subcycle_bytes(portmap):
    """Bytes one subcycle of a window of :func:`run_fast` takes while it runs: its input and
    output lanes (``2 * (width + height)`` bytes each) and the index arrays that build
    them."""
    from .kernel import lane_count
    return 2 * lane_count(portmap.width, portmap.height) + _SUBCYCLE_EXTRA


def window_subcycles(portmap, budget=WINDOW_BYTES):
    """Subcycles per window of :func:`run_fast` for ``budget`` bytes (at least 1)."""
    return max(1, int(budget) // subcycle_bytes(portmap))


def run_fast(config, portmap, bits, count, *, window=None, progress=None):
    """Run ``count`` rows on the bit-parallel emulator (:class:`~bitgrid.fastemu.FastEmulator`,
    batched on lane arrays) and read the output ports' bits, in windows of at most ``window``
    subcycles: one emulator runs the whole stream of ``portmap.cycles_needed(count)``
    subcycles, each window's input lanes built (:func:`lane_window`) and its outputs sampled
    (the bits read in it) before the next, so memory stays near ``window *``
    :func:`subcycle_bytes` however long the run. The result does not depend on ``window``.

    :param config: the :class:`~bitgrid.config.Configuration` (of the port map's grid).
    :param bits: the rows' input bits (:func:`input_bits`), ``{input port: array (count,
        width)}``.
    :param window: subcycles per window; default :func:`window_subcycles` (:data:`WINDOW_BYTES`).
    :param progress: optional callable ``progress(done, total)`` in subcycles, after each
        window.
    :returns: ``{output port name: uint8 array (count, width)}`` of 0/1, row ``k`` the bits
        read for row ``k`` (:func:`output_rows` makes integers of them).
    :raises ValueError: for a ``window`` below 1.
    """
    from .fastemu import FastEmulator
    count = check_int(count, "Rows", minimum=0)
    window = window_subcycles(portmap) if window is None else check_int(window, "Window",
                                                                        minimum=1)
    outputs = {port.name: np.zeros((count, port.width), dtype=np.uint8)
               for port in portmap.outputs}
    if not count:
        return outputs
    total = portmap.cycles_needed(count)
    engine = FastEmulator(config)
    for start in range(0, total, window):
        stop = min(total, start + window)
        lanes = lane_window(portmap, bits, count, start, stop)
        _sample_window(portmap, engine.run(stop - start, inputs=lanes), start, outputs)
        del lanes
        _report(progress, stop, total)
    return outputs


def sample_points(portmap, count):
    """For ``count`` rows, the subcycle index at which each output bit is read: a list (one
    entry per row) of dicts ``{output port: [index of bit 0, index of bit 1, ...]}``, index
    ``k*period + latency + skew - 1`` (SPEC section 4; :mod:`bitgrid.ports`)."""
    count = check_int(count, "Rows", minimum=0)
    return [{port.name: [k * portmap.period + portmap.latency + bit.skew - 1
                         for bit in port.bits] for port in portmap.outputs}
            for k in range(count)]


def sample(portmap, outputs, count):
    """The output rows of ``count`` rows from the per-subcycle edge outputs.

    :param outputs: a sequence (or a dict by subcycle index) of :class:`~bitgrid.terms.Edges`,
        element ``t`` the edge outputs after subcycle ``t``; it must hold every index of
        :func:`sample_points`.
    :returns: list of ``count`` dicts ``{output port: int}`` (decoded, sign-extended for signed
        ports).
    """
    rows = []
    for points in sample_points(portmap, count):
        row = {}
        for port in portmap.outputs:
            bits = [(outputs[t][int(bit.side)] >> bit.lane) & 1
                    for t, bit in zip(points[port.name], port.bits)]
            row[port.name] = port.decode(bits)
        rows.append(row)
    return rows


# Targets --------------------------------------------------------------------------------------

def check_target(target):
    """``target`` if it is one of :data:`TARGETS`.

    :raises ValueError: ``Unknown target 'x': use emu, fast, sim, mesh:COLSxROWS, loopback or
        serial:PORT``, or for a bad mesh shape.
    """
    if target in ("emu", "fast", "sim", "loopback"):
        return target
    if isinstance(target, str) and target.startswith("serial:") and len(target) > 7:
        return target
    if isinstance(target, str) and target.startswith("bgcf:"):
        from .bgcf.target import parse_address
        parse_address(target[len("bgcf:"):])            # raises for a bad address
        return target
    if isinstance(target, str) and target.startswith("mesh:"):
        from .mesh import MeshShape
        MeshShape.parse(target[len("mesh:"):])          # raises for a bad shape
        return target
    raise ValueError(f"Unknown target {target!r}: use emu, fast, sim, mesh:COLSxROWS, "
                     "loopback, serial:PORT or bgcf:HOST:PORT")


def _report(progress, done, total):
    if progress is not None:
        progress(done, total)


def run_edges(config, steps, *, target="emu", simulator="icarus", needed=None, progress=None,
              baudrate=115200, timeout=None):
    """Run ``config`` from reset with the edge inputs ``steps`` (one per subcycle) on
    ``target``; return the edge outputs after each subcycle.

    :param needed: optional set of the subcycle indices whose outputs are wanted; a host-runtime
        target (``loopback``, ``serial:``, ``bgcf:``) then runs the subcycles between them in one request
        each and returns a dict ``{index: Edges}`` holding only those (the other targets return
        every subcycle's outputs as a list either way).
    :param progress: optional callable ``progress(done, total)`` in subcycles.
    :param baudrate, timeout: of a ``serial:`` target (:func:`bitgrid.host.open_target`;
        ``timeout`` in seconds per answer, of a ``bgcf:`` target too, None for the target's default).
    :raises ValueError: for an unknown target or simulator.
    :raises bitgrid.sim.SimulationError: if the RTL simulation fails, the grid does not accept
        or read back the configuration, or disagrees with the reference emulator.
    :raises bitgrid.host.LinkError: if a host-runtime target does not answer.
    """
    target = check_target(target)
    if not isinstance(config, Configuration):
        raise TypeError(f"Expected a Configuration, not {config!r}")
    total = len(steps)
    if target in ("emu", "fast"):
        if target == "emu":
            from .emulator import Emulator
            engine = Emulator(config)
        else:
            from .fastemu import FastEmulator
            engine = FastEmulator(config)
        outputs = []
        for t, edges in enumerate(steps):
            outputs.append(engine.step(edges))
            if (t + 1) % 4096 == 0:
                _report(progress, t + 1, total)
        _report(progress, total, total)
        return outputs
    if target == "sim":
        from .terms import check_simulator
        check_simulator(simulator)
        from bitgrid.sim import SimulationError, run_case
        _report(progress, 0, total)
        result = run_case(config, steps, simulator=simulator, name="eval",
                          quiet=progress is None)
        if not result.ok:
            raise SimulationError(f"the {simulator} grid did not run the program as the "
                                  f"reference emulator does: {result.summary(limit=3)}")
        _report(progress, total, total)
        return list(result.outputs)
    if target.startswith("mesh:"):
        from bitgrid.sim import SimulationError
        from bitgrid.sim.mesh import run_mesh_case
        _report(progress, 0, total)
        result = run_mesh_case(config, steps, target[len("mesh:"):], simulator=simulator,
                               name="eval", quiet=progress is None)
        if not result.ok:
            raise SimulationError(f"the simulated mesh did not run the program as the "
                                  f"reference emulator does: {result.summary(limit=3)}")
        _report(progress, total, total)
        return list(result.outputs)
    from .host import open_target
    needed = set(range(total)) if needed is None else {t for t in needed if 0 <= t < total}
    outputs = {}
    with open_target(target, width=config.width, height=config.height, baudrate=baudrate,
                     timeout=timeout, simulator=simulator, quiet=progress is None) as device:
        device.load(config)
        t = 0
        while t < total:
            # Run subcycles t .. end - 1 in one request: same inputs, no output wanted between.
            end = t + 1
            while end < total and end - t < _MAX_STEP_REQUEST and steps[end] == steps[t] \
                    and end - 1 not in needed:
                end += 1
            edges = device.step(end - t, steps[t])
            if end - 1 in needed:
                outputs[end - 1] = edges
            t = end
            _report(progress, t, total)
    return outputs


def evaluate(config, portmap, rows, *, target="emu", simulator="icarus", progress=None,
             baudrate=115200, timeout=None):
    """Run the program ``config`` by port names: one output row per input row.

    :param config: :class:`~bitgrid.config.Configuration` of a ``portmap.width`` x
        ``portmap.height`` grid.
    :param portmap: its :class:`~bitgrid.ports.PortMap` (ports, period, latency, skews).
    :param rows: list of dicts ``{input port: int}``, one per design cycle, every input port
        given (for a port map without inputs: a list of empty dicts, one per cycle).
    :param target: one of :data:`TARGETS`.
    :param simulator: ``"icarus"`` or ``"verilator"``, for ``sim``.
    :param progress: optional callable ``progress(done, total)`` in subcycles.
    :param baudrate, timeout: of a ``serial:`` target (see :func:`run_edges`).
    :returns: list of dicts ``{output port: int}``, one per row (module docstring for when each
        is read).
    :raises bitgrid.ports.PortMapError: if the port map is for another grid size, records
        another program's digest, or has timing the program cannot hold
        (:meth:`bitgrid.ports.PortMap.check_program`).
    :raises ValueError: for a row that lacks or mis-names a port, or a value that does not fit;
        for an unknown target.
    :raises TypeError: for rows that are not dicts of integers.
    """
    if not isinstance(config, Configuration):
        raise TypeError(f"Expected a Configuration, not {config!r}")
    if not isinstance(portmap, PortMap):
        raise TypeError(f"Expected a PortMap, not {portmap!r}")
    portmap.check_program(config)
    check_target(target)
    rows = check_rows(portmap, rows)
    if not rows:
        return []
    check_subcycles(portmap, len(rows))
    if target == "fast":            # batched on lane arrays, in windows: no Python per subcycle
        bits = run_fast(config, portmap, input_bits(portmap, rows), len(rows),
                        progress=progress)
        return output_rows(portmap, bits, len(rows))
    steps = edge_inputs(portmap, rows)
    needed = {t for points in sample_points(portmap, len(rows))
              for indices in points.values() for t in indices}
    outputs = run_edges(config, steps, target=target, simulator=simulator, needed=needed,
                        progress=progress, baudrate=baudrate, timeout=timeout)
    return sample(portmap, outputs, len(rows))
