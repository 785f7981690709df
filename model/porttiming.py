"""Port timing against a program's paths: the latency a program's paths give its port bits,
and whether a port map's latency and lanes agree with them (docs/ports.md, "Timing").

Everything here reads the LUTs alone, through :func:`bitgrid.analysis.path_timing` (SPEC
section 4): a path of length ``L`` from an input bit of skew ``si`` to an output bit of skew
``so`` is read in its own row when the latency is in ``si + L - so .. si + L - so + period - 1``.

* :func:`compute_latency`: the one latency every path agrees on (``bitgrid asm`` without a
  declared latency);
* :func:`check_latency`: whether a declared latency reads each output in its inputs' row;
* :func:`check_port_timing`: what the command line checks of a port map that carries no seal
  (:attr:`bitgrid.ports.PortMap.seal`): the latency, and that every input bit reaches an
  output port bit.
"""

import typing

__all__ = ["CHECK_CELLS", "PortCheck", "compute_latency", "check_latency", "check_port_timing"]


#: A declared latency is checked against the paths (:func:`check_latency`) in programs of at
#: most this many configured cells (the path analysis of large dense grids is slow).
CHECK_CELLS = 1024


def _port_paths(config, ports):
    """``(outputs, paths, loops)`` of the edge paths between port bits: ``paths`` lists
    ``(in_name, in_skew, out_name, out_skew, length)`` (SPEC section 4 lengths, for inputs
    changing at their skew), ``loops`` ``(out_name, in_name)`` where an output depends on an
    input through a loop."""
    from .analysis import EdgeInput, EdgeOutput, path_timing
    inputs = {}
    for port in ports:
        if port.direction == "in":
            for i, bit in enumerate(port.bits):
                inputs[EdgeInput(bit.side, bit.lane)] = (f"{port.name}[{i}]", bit.skew)
    outputs = {EdgeOutput(bit.side, bit.lane): (f"{port.name}[{i}]", bit.skew)
               for port in ports if port.direction == "out" for i, bit in enumerate(port.bits)}
    paths, loops = [], []
    if not outputs or not inputs:
        return outputs, paths, loops
    timing = path_timing(config, list(outputs))
    for node, (out_name, out_skew) in outputs.items():
        for source in sorted({s for s, _ in timing.paths[node]}, key=str):
            if source not in inputs:
                continue
            in_name, in_skew = inputs[source]
            for length in timing.lengths(node, source, start=in_skew):
                paths.append((in_name, in_skew, out_name, out_skew, length))
        for source in timing.sequential.get(node, ()):
            if source in inputs:
                loops.append((out_name, inputs[source][0]))
    return outputs, paths, loops


def check_latency(config, portmap):
    """Whether ``portmap``'s declared latency reads the output port bits in the rows of the
    inputs they depend on (bitgrid.ports' timing semantics).

    An input bit of skew ``si`` holds row ``k`` for ``period`` subcycles from
    ``k*period + si``; through a path of ``L`` subcycles an output bit of skew ``so`` holds
    that row's value after subcycles ``k*period + si + L - 1`` up to ``period - 1`` later, so
    the path is read in its own row when the latency is in ``si + L - so .. si + L - so +
    period - 1``, ``m`` rows later when it is ``m * period`` more. Two mistakes are found: a
    path read in a *later* row (an output showing the result of inputs not yet applied), and
    every path read the same number of rows *early* (the latency too small by whole design
    cycles). Outputs that carry earlier rows by design, such as a shift register's, read
    different rows on different paths and are not reported; paths through loops (state) are
    not checked.

    :returns: None, or a one-line description of the mistake.
    """
    return _latency_problem(portmap, _row_reads(config, portmap))


def _row_reads(config, portmap):
    """``[(m, path)]``: each path of :func:`_port_paths` with the rows ``m`` by which
    ``portmap``'s latency reads it late (0: in its own row; negative: an earlier row)."""
    _, paths, _ = _port_paths(config, portmap.ports)
    rows = []
    for path in paths:
        in_name, in_skew, out_name, out_skew, length = path
        low = in_skew + length - out_skew
        rows.append(((portmap.latency - low) // portmap.period, path))
    return rows


def _latency_problem(portmap, rows):
    late = next(((m, path) for m, path in rows if m > 0), None)
    early = rows[0] if rows and len({m for m, _ in rows}) == 1 and rows[0][0] < 0 else None
    found = late or early
    if found is None:
        return None
    m, (in_name, in_skew, out_name, out_skew, length) = found
    low = in_skew + length - out_skew
    wanted = f"{low}..{low + portmap.period - 1}" if portmap.period > 1 else f"{low}"
    how = (f"reads {out_name} {_rows(m)} too late (it shows a later row's result)" if m > 0
           else f"reads every output port bit {_rows(-m)} too early (each shows an earlier "
                "row's result)")
    return (f"latency {portmap.latency} {how}: the path {in_name} -> {out_name} takes "
            f"{_subcycles(length)} and needs latency {wanted} with these skews")


def _skew(skew):
    return f" (skew {skew})" if skew else ""


def _rows(count):
    return f"{count} row" + ("" if count == 1 else "s")


def compute_latency(config, ports):
    """The one latency that every combinational path of ``config`` from an input port bit to
    an output port bit agrees on (bitgrid.ports' timing semantics).

    A path of length ``L`` (:func:`bitgrid.analysis.path_timing`, for an input changing at
    subcycle ``skew_in``) from an input bit of skew ``skew_in`` to an output bit of skew
    ``skew_out`` needs ``latency = skew_in + L - skew_out``.

    :param ports: :class:`~bitgrid.ports.Port` objects (with their skews).
    :returns: ``(latency, None)``, or ``(None, problem)`` with a one-line description when the
        paths disagree, none exists, or an output depends on an input through a loop.
    """
    outputs, paths, loops = _port_paths(config, ports)
    if not outputs:
        return None, "the text declares no output port, so there is no latency to compute"
    if loops:
        out_name, in_name = loops[0]
        return None, (f"output {out_name} depends on input {in_name} through a loop (state), "
                      "so its latency is not a path length")
    found = {}      # latency -> (input name, output name, length), skews named
    for in_name, in_skew, out_name, out_skew, length in paths:
        found.setdefault(in_skew + length - out_skew,
                         (in_name + _skew(in_skew), out_name + _skew(out_skew), length))
    if not found:
        return None, "no output port depends on an input port through the cells"
    if len(found) > 1:
        (l1, (i1, o1, n1)), (l2, (i2, o2, n2)) = sorted(found.items())[:2]
        return None, (f"the paths disagree: {i1} -> {o1} takes {_subcycles(n1)} (latency "
                      f"{l1}), {i2} -> {o2} takes {n2} (latency {l2})")
    return next(iter(found)), None


def _subcycles(count):
    return f"{count} subcycle" + ("" if count == 1 else "s")


class PortCheck(typing.NamedTuple):
    """The result of :func:`check_port_timing`: ``problem`` (None, or one line saying why
    the port map gives wrong rows with this program) and ``note`` (one line saying what
    could not be checked)."""
    problem: typing.Optional[str]
    note: str


def check_port_timing(config, portmap):
    """Check a port map that carries no seal against ``config``'s paths: every input bit's
    lane must reach some output port bit through the cells, and the latency must read every
    output in its inputs' row (:func:`check_latency`). Which bit is which, the signs, and
    lanes of the same timing cannot be told from the paths: the note says so.

    The path analysis runs on programs of at most :data:`CHECK_CELLS` configured cells; a
    larger one is only noted.

    :param config: a :class:`~bitgrid.config.Configuration` of the port map's size.
    :param portmap: a :class:`~bitgrid.ports.PortMap`.
    :returns: a :class:`PortCheck`.
    """
    from .analysis import DependencyGraph, EdgeInput, EdgeOutput
    unchecked = "which bit is which, signs and lanes of equal timing cannot be checked"
    configured = int((config.luts != 0).any(axis=2).sum())
    if configured > CHECK_CELLS:
        return PortCheck(None, f"not checked: the program has {configured} configured cells, "
                               f"more than the {CHECK_CELLS} the path check reads, so a wrong "
                               "lane, latency or skew would give wrong rows")
    outputs = {EdgeOutput(bit.side, bit.lane) for port in portmap.outputs for bit in port.bits}
    if outputs:
        graph = DependencyGraph(config)
        for port in portmap.inputs:
            for i, bit in enumerate(port.bits):
                reach = graph.downstream([EdgeInput(bit.side, bit.lane)])
                if not reach & outputs:
                    return PortCheck(
                        f"input {port.name}[{i}] on {bit.side.letter} lane {bit.lane} reaches "
                        "no output port bit through the program's cells (a wrong lane?)",
                        unchecked)
    rows = _row_reads(config, portmap)
    problem = _latency_problem(portmap, rows)
    if problem is None and len({m for m, _ in rows}) > 1:
        m, (in_name, _, out_name, _, _) = min(rows, key=lambda row: row[0])
        unchecked = (f"{out_name} reads {in_name} {_rows(-m)} before the row it reads other "
                     "inputs in (a register between them, or a wrong skew); " + unchecked)
    return PortCheck(problem, "checked against the program's paths: its latency and skews "
                              "agree with them; " + unchecked)
