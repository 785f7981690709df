"""The built-in self-test's diagnosis: from the samples of the test configurations of
:mod:`bitgrid.bist` to the faults, with the settled states of a grid with faults
(:func:`settle`). :mod:`bitgrid.bist` plans and runs the tests and re-exports these.

Diagnosis (:func:`diagnose`)
    1. A lane *fails* if a sample differs from the fault-free grid's or is unsettled.
    2. *Candidates* are the outputs whose path fails in all three tests (a single faulty
       output fails its row or column, its north-east and its north-west staircase, which
       meet in that output alone).
    3. Repeatedly, a candidate is classified from the tests in which it is seen *cleanly*: no
       other candidate downstream of it on its path, and no unclassified candidate upstream on
       the paths into its cell. The address it sees in each frame comes from the settled state
       of the grid with the faults found so far (:func:`settle`). It is fault-free (a ghost:
       it only lies where failing paths cross), stuck at 0 or 1, or has flipped LUT bits at
       the addresses where it read wrong. Candidates seen in more tests go first.
    4. Where the faults found leave lanes unexplained, outputs on two such paths become
       candidates too, and step 3 repeats.
    5. Adaptive step (with a ``probe``, as :func:`bitgrid.bist.run` gives): a lane still unexplained holds
       a fault seen in one test only; its path is tapped (:func:`_tap`: the next cell also
       copies the value into another output with a clean path to the edge) and bisected to
       the first wrong output, ``ceil(log2(path length))`` probe runs.
    6. A cell with all four outputs faulty, a candidate no fault kind explains, a candidate
       never seen cleanly, and every output on a path still unexplained, is reported
       ``dead`` (the placer avoids it either way). The faults found are simulated
       (:func:`settle`); :attr:`BistResult.explained` says whether they reproduce every
       sample.

Faults that cannot be told apart (also in docs/bist.md)
    * A flipped LUT bit at an address a cell never sees in a test, because a stuck neighbour
      holds one of its inputs, is invisible; so is any fault of an output that lies upstream
      of a stuck output on all three of its paths (the outputs into a dead cell:
      :attr:`BistResult.untestable`, left out of the map).
    * An output seen cleanly in one test only: stuck-at-``v`` and flipped bits at exactly the
      addresses where the copied input is ``not v`` look the same; the result says "stuck" and
      notes the alternative.
    * ``dead`` (all four outputs stuck, :mod:`bitgrid.faultmodel`) and four separate faulty
      outputs of one cell are the same thing at the edges: both are reported ``dead``. A dead
      cell whose outputs are all stuck at one value looks like its four neighbours' outputs
      into it stuck at that value; the self-test reports the dead cell.
    * Flipped bits are found at the addresses the cell saw; with faulty neighbours some
      addresses may be missing from :attr:`Finding.addresses`.
"""

import typing

import numpy as np

from .cell import COPY
from .config import Configuration
from .defects import Defect, DefectMap
from .faultmodel import format_address
from .terms import DIRECTIONS, Direction, N, E, S, W

__all__ = ["FRAMES", "settle", "Finding", "BistResult", "diagnose"]

#: Frames per test: one per LUT address.
FRAMES = 16


# --- Settled states ---------------------------------------------------------------------------

def settle(luts, frames, *, limit=None):
    """The settled outputs of a grid with LUT tables ``luts`` (``(H, W, 4)`` uint16) under each
    of ``frames`` (edge inputs held constant), from all outputs 0.

    Every cell is updated at once until nothing changes. Where the outputs settle, that is the
    state the two-phase grid (SPEC section 4) settles in as well: a state that does not change
    under one update of every cell.

    :returns: ``(outputs, addresses, settled)``: outputs ``(F, 4, H, W)`` uint8, the address
        each cell sees ``(F, H, W)`` uint8, and ``settled`` ``(F,)`` bool (False: the frame was
        still changing after ``limit`` updates, default ``4 * (W + H) + 16``).
    """
    luts = np.asarray(luts, dtype=np.uint16)
    height, width = luts.shape[:2]
    tables = np.moveaxis(luts, 2, 0)[None]                        # (1, 4, H, W)
    count = len(frames)
    edge = np.zeros((4, count, max(width, height)), dtype=np.uint8)
    for f, edges in enumerate(frames):
        for side in DIRECTIONS:
            lanes = width if side in (N, S) else height
            word = edges[side]
            edge[side, f, :lanes] = [(word >> i) & 1 for i in range(lanes)]
    out = np.zeros((count, 4, height, width), dtype=np.uint8)
    limit = 4 * (width + height) + 16 if limit is None else limit
    settled = np.zeros(count, dtype=bool)
    for _ in range(limit):
        addr = _addresses(out, edge, width, height)
        new = ((tables >> addr[:, None]) & 1).astype(np.uint8)
        same = (new == out).reshape(count, -1).all(axis=1)
        out = new
        if same.all():
            settled[:] = True
            break
    else:
        settled = same
    return out, _addresses(out, edge, width, height), settled


def _addresses(out, edge, width, height):
    inp = np.empty_like(out)
    inp[:, 0, 1:, :] = out[:, S, :-1, :]
    inp[:, 0, 0, :] = edge[N, :, :width]
    inp[:, 1, :, :-1] = out[:, W, :, 1:]
    inp[:, 1, :, width - 1] = edge[E, :, :height]
    inp[:, 2, :-1, :] = out[:, N, 1:, :]
    inp[:, 2, height - 1, :] = edge[S, :, :width]
    inp[:, 3, :, 1:] = out[:, E, :, :-1]
    inp[:, 3, :, 0] = edge[W, :, :height]
    return (inp[:, 0] | inp[:, 1] << 1 | inp[:, 2] << 2 | inp[:, 3] << 3).astype(np.uint8)


def _lane_bits(out, width, height):
    """``{(side, lane): array of F bits}`` of the edge outputs in settled outputs ``out``."""
    bits = {}
    for x in range(width):
        bits[(N, x)] = out[:, N, 0, x]
        bits[(S, x)] = out[:, S, height - 1, x]
    for y in range(height):
        bits[(W, y)] = out[:, W, y, 0]
        bits[(E, y)] = out[:, E, y, width - 1]
    return bits


# --- Diagnosis --------------------------------------------------------------------------------

class Finding(typing.NamedTuple):
    """One diagnosed fault.

    :attr kind: ``stuck0``, ``stuck1``, ``lut`` or ``dead``.
    :attr output: the :class:`~bitgrid.terms.Direction`, None for a dead cell.
    :attr addresses: for ``lut``: the addresses that read inverted (of those seen).
    :attr note: what could not be told apart, or why a cell is ``dead``; ``""`` if nothing.
    """
    x: int
    y: int
    kind: str
    output: typing.Optional[Direction] = None
    addresses: tuple = ()
    note: str = ""

    def __str__(self):
        where = f"({self.x}, {self.y})" + ("" if self.output is None
                                           else f" output {self.output.letter}")
        text = f"{self.kind} at {where}"
        if self.addresses:
            text += " addresses " + ", ".join(format_address(a) for a in self.addresses)
        return text + (f" ({self.note})" if self.note else "")


class BistResult:
    """What the self-test found.

    :attr defects: the :class:`~bitgrid.defects.DefectMap` (``bitgrid-defects-v1``).
    :attr findings: :class:`Finding` s, one per defect entry, sorted like the map.
    :attr explained: the faults found reproduce every sample (False: the map may be
        incomplete; the failing lanes it does not explain are in :attr:`unexplained_lanes`).
    :attr failing_lanes: ``{test name: number of failing edge output lanes}``.
    :attr untestable: outputs ``(x, y, Direction)`` never seen because they feed only faulty
        outputs of a defective cell (left out of the map: no program uses that cell).
    :attr configurations, subcycles: the cost of the run: the :class:`~bitgrid.bist.Plan`'s and the
        adaptive step's probe runs.
    """

    def __init__(self, the_plan, findings, explained, failing, unexplained):
        self.width, self.height = the_plan.width, the_plan.height
        self.configurations, self.subcycles = the_plan.configurations, the_plan.subcycles
        order = {None: -1, **{d: int(d) for d in DIRECTIONS}}
        self.findings = sorted(findings, key=lambda f: (f.y, f.x, order[f.output]))
        self.defects = DefectMap(self.width, self.height,
                                 [Defect(f.x, f.y, f.kind, f.output) for f in self.findings])
        self.explained = explained
        self.failing_lanes = failing
        self.unexplained_lanes = unexplained
        self.untestable = []
        self.target = None

    @property
    def clean(self):
        """No defect found."""
        return not self.findings

    def summary(self):
        """A human-readable report (one line per finding)."""
        head = (f"self-test of a {self.width} x {self.height} grid"
                f"{f' on {self.target}' if self.target else ''}: {self.configurations} "
                f"configurations, {self.subcycles} subcycles: ")
        if self.clean:
            return head + "no defects found"
        lines = [head + f"{len(self.findings)} defect(s)"]
        lines += [f"  {f}" for f in self.findings]
        if not self.explained:
            lines.append("  the defects found do not explain every failing lane "
                         f"({sum(map(len, self.unexplained_lanes.values()))}): the map may "
                         "be incomplete")
        return "\n".join(lines)


def _feeders(x, y, width, height):
    """The outputs feeding the inputs of cell ``(x, y)`` (edge inputs left out)."""
    result = []
    for side in DIRECTIONS:
        dx, dy = side.step
        nx, ny = x + dx, y + dy
        if 0 <= nx < width and 0 <= ny < height:
            result.append((nx, ny, int(side.opposite)))
    return result


def _faulty_luts(config, known):
    luts = config.luts.copy()
    for (x, y, d), (kind, mask) in known.items():
        if kind == "lut":
            luts[y, x, d] ^= mask
        else:
            luts[y, x, d] = 0xFFFF if kind == "stuck1" else 0
    return luts


def _classify(pairs, tests_seen):
    """``(kind, mask, note)`` of an output from ``pairs`` ``(address, value, configured bit)``
    seen in ``tests_seen`` tests: kind ``None`` (fault-free), ``stuck0``, ``stuck1``, ``lut``
    or ``unexplained``."""
    if all(v == c for _, v, c in pairs):
        return None, 0, ""
    mask, consistent = {}, True
    for a, v, c in pairs:
        if mask.setdefault(a, v ^ c) != v ^ c:
            consistent = False
    values = {v for _, v, _ in pairs}
    stuck = f"stuck{values.pop()}" if len(values) == 1 else None
    bits = sum(1 << a for a, m in mask.items() if m)
    if stuck and consistent:
        addresses = ", ".join(str(a) for a in range(16) if bits >> a & 1)
        return stuck, 0, (f"seen cleanly in {tests_seen} test(s) only: or flipped LUT bits at "
                          f"addresses {addresses}")
    if stuck:
        return stuck, 0, ""
    if consistent:
        unseen = 16 - len(mask)
        return "lut", bits, (f"{unseen} address(es) not seen" if unseen else "")
    return "unexplained", 0, ""


def diagnose(the_plan, samples, *, probe=None, max_probes=64):
    """Diagnose a grid from the :class:`~bitgrid.bist.Samples` of each test of ``the_plan`` (``{test name:
    Samples}``); the method is in the module docstring.

    :param probe: for the adaptive step, a function ``probe(config, test)`` that runs
        ``test.stimulus()`` on the grid with another configuration ``config`` and returns its
        :class:`~bitgrid.bist.Samples` (None: no adaptive step); at most ``max_probes`` runs.

    :returns: :class:`BistResult` (its ``target`` None).
    :raises ValueError: if a test's samples are missing.
    """
    width, height = the_plan.width, the_plan.height
    for test in the_plan.tests:
        if test.name not in samples:
            raise ValueError(f"no samples of test {test.name}")
    observed, settled, failing = {}, {}, {}
    for test in the_plan.tests:
        s = samples[test.name]
        observed[test.name] = {lane: np.array([e[lane[0]] >> lane[1] & 1 for e in s.last])
                               for lane in test.lines}
        settled[test.name] = {lane: np.array([(a[lane[0]] >> lane[1] & 1)
                                              == (b[lane[0]] >> lane[1] & 1)
                                              for a, b in zip(s.last, s.before)])
                              for lane in test.lines}

    def mismatching(known):
        result = {}
        for test in the_plan.tests:
            out, _, _ = settle(_faulty_luts(test.config, known), test.frames)
            expected = _lane_bits(out, width, height)
            result[test.name] = {lane for lane in test.lines
                                 if (observed[test.name][lane] != expected[lane]).any()
                                 or not settled[test.name][lane].all()}
        return result

    failing_sets = mismatching({})
    failing = {name: len(lanes) for name, lanes in failing_sets.items()}
    candidates = sorted(o for o in the_plan.tests[0].line_of
                        if all(t.line_of[o][0] in failing_sets[t.name] for t in the_plan.tests))
    unknown, known, notes, unexplained = set(candidates), {}, {}, set()
    tested = set(candidates)
    tests = the_plan.tests
    while True:
        _resolve(tests, unknown, known, unexplained, notes, observed, settled, width, height)
        # A fault hidden in one test (a stuck neighbour kept its address from its cell there)
        # is no candidate above: look again where the faults found leave lanes unexplained.
        residual = mismatching(known)
        more = {o for o in tests[0].line_of
                if o not in tested and sum(t.line_of[o][0] in residual[t.name]
                                           for t in tests) >= 2}
        if not more:
            break
        unknown |= more
        tested |= more
    probes = []
    if probe is not None:
        probes = _locate(tests, residual, unknown | unexplained, known, notes, observed,
                         probe, width, height, max_probes)
        residual = mismatching(known)

    # Outputs never seen: untestable and harmless if every path of theirs runs into a
    # faulty output of the very cell they feed (that cell is not used); else the cell is
    # reported dead.
    faulty_cells = {o[:2] for o in known} | {o[:2] for o in unexplained}
    untestable, undecided = [], []
    for output in sorted(unknown):
        x, y, d = output
        dx, dy = Direction(d).step
        masked = all(any(o in known for o in t.lines[t.line_of[output][0]]
                         [t.line_of[output][1] + 1:]) for t in tests)
        (untestable if masked and (x + dx, y + dy) in faulty_cells else undecided).append(output)
    explained = not undecided and not unexplained and not any(residual.values())
    # Lanes the faults found do not explain: a fault there may have been taken for another on
    # the same path, or be seen in this one test only (then it may sit anywhere on the path).
    # Every output on such a path is suspect, its cell reported dead.
    suspects = {o for t in tests for lane in residual[t.name] for o in t.lines[lane]
                if o not in known}

    findings, dead = [], {}
    cells = {}
    for (x, y, d), (kind, mask) in known.items():
        cells.setdefault((x, y), {})[d] = (kind, mask)
    for output in undecided:
        dead.setdefault(output[:2], "never seen cleanly: which output and kind cannot be told")
    for output in unexplained:
        dead[output[:2]] = "no fault kind explains its outputs"
    for output in sorted(suspects):
        dead.setdefault(output[:2], "on a path the faults found do not explain")
    for cell, outputs in cells.items():
        if len(outputs) == 4 and cell not in dead:
            dead[cell] = ""
    for (x, y), note in dead.items():
        findings.append(Finding(x, y, "dead", note=note))
    for (x, y), outputs in cells.items():
        if (x, y) in dead:
            continue
        for d, (kind, mask) in outputs.items():
            findings.append(Finding(x, y, kind, Direction(d),
                                    tuple(a for a in range(16) if mask >> a & 1),
                                    notes.get((x, y, d), "")))
    result = BistResult(the_plan, findings, explained, failing,
                        {name: sorted(lanes) for name, lanes in residual.items()})
    result.configurations += len(probes)
    result.subcycles += sum(probes)
    result.untestable = [(x, y, Direction(d)) for x, y, d in untestable]
    return result


def _resolve(tests, unknown, known, unexplained, notes, observed, settled, width, height):
    """Classify the candidates ``unknown`` (a set, changed in place: what is decided moves to
    ``known`` ``{output: (kind, mask)}`` or ``unexplained``), strongest evidence first."""
    addresses = None
    while unknown:
        if addresses is None:
            addresses = {t.name: settle(_faulty_luts(t.config, known), t.frames)[1]
                         for t in tests}
        views = {o: _views(o, tests, unknown | unexplained, known, observed, settled,
                           addresses, width, height) for o in sorted(unknown)}
        decided = {}
        for stage in _STAGES:
            decided = {o: r for o, r in ((o, stage(v)) for o, v in views.items())
                       if r is not None}
            if decided:
                break
        if not decided:
            return
        for output, (kind, mask, note) in decided.items():
            unknown.discard(output)
            if kind == "unexplained":
                unexplained.add(output)
            elif kind is not None:
                known[output] = (kind, mask)
                if note:
                    notes[output] = note
        addresses = None


def _tap(test, output, blocking, known):
    """A configuration that copies the value of ``output`` out of the next cell on its path
    into another output of that cell, whose own path to the edge has no fault or candidate
    on it: ``(config, lane)``, or None (no such output, or ``output`` is the last)."""
    lane, position = test.line_of[output]
    line = test.lines[lane]
    if position + 1 >= len(line):
        return None
    x, y, d = line[position + 1]
    side = Direction(output[2]).opposite          # the input of (x, y) that output feeds
    for e in DIRECTIONS:
        if e in (d, side):
            continue
        tap_lane, tap_position = test.line_of[(x, y, int(e))]
        downstream = test.lines[tap_lane][tap_position + 1:]
        if any(o in blocking or o in known for o in downstream) or (x, y, int(e)) in known:
            continue
        luts = test.config.luts.copy()
        luts[y, x, e] = COPY[side]
        return Configuration(test.config.width, test.config.height, luts), tap_lane
    return None


def _locate(tests, residual, blocking, known, notes, observed, probe, width, height, limit):
    """The adaptive step: for each lane still unexplained, find the first wrong output on its
    path by tapping the path (:func:`_tap`) and bisecting, then classify that output from what
    the tap shows. Classified outputs go into ``known``; returns the subcycles of each probe
    run."""
    runs = []

    def wrong(test, output):
        """``(wrong, values, addresses)`` of ``output`` seen through a tap, or None."""
        tap = _tap(test, output, blocking, known)
        if tap is None or len(runs) >= limit:
            return None
        config, lane = tap
        samples = probe(config, test)
        runs.append(test.subcycles)
        out, addresses, _ = settle(_faulty_luts(config, known), test.frames)
        expected = _lane_bits(out, width, height)[lane]
        values = np.array([e[lane[0]] >> lane[1] & 1 for e in samples.last])
        return bool((values != expected).any()), values, addresses

    for test in tests:
        for lane in list(residual[test.name]):
            line = [o for o in test.lines[lane]]
            if any(o in known for o in line):
                continue              # a fault found already lies on it: not a lone fault
            low, high, seen = 0, len(line) - 1, {}
            while low < high:          # the last output is wrong; find the first
                middle = (low + high) // 2
                answer = wrong(test, line[middle])
                if answer is None:
                    break
                seen[middle] = answer
                if answer[0]:
                    high = middle
                else:
                    low = middle + 1
            if low < high:
                continue
            output = line[low]
            x, y, d = output
            lut = int(test.config.luts[y, x, d])
            if low in seen:
                _, values, addresses = seen[low]
            else:                      # the last output: the test's own samples show it
                values = observed[test.name][lane]
                addresses = settle(_faulty_luts(test.config, known), test.frames)[1]
            pairs = [(int(addresses[k, y, x]), int(values[k]), lut >> int(addresses[k, y, x]) & 1)
                     for k in range(FRAMES)]
            kind, mask, _ = _classify(pairs, 1)
            if kind in ("stuck0", "stuck1", "lut"):
                known[output] = (kind, mask)
                notes[output] = "seen in one test only, located by tapping its path"
    return runs


class _View(typing.NamedTuple):
    """What one test shows of a candidate output: ``values`` (its settled samples, when no
    other candidate or known fault lies downstream of it) and ``pairs`` ``(address, value,
    configured bit)`` when also no unclassified candidate lies upstream of its cell (so the
    addresses it saw are known)."""
    values: list
    pairs: list


def _views(output, tests, blocking, known, observed, settled, addresses, width, height):
    x, y, d = output
    result = []
    for test in tests:
        lane, position = test.line_of[output]
        if any(o in blocking or o in known for o in test.lines[lane][position + 1:]):
            continue
        ok = settled[test.name][lane]
        values = [int(v) for v, good in zip(observed[test.name][lane], ok) if good]
        upstream = set()
        for feeder in _feeders(x, y, width, height):
            f_lane, f_position = test.line_of[feeder]
            upstream.update(test.lines[f_lane][:f_position + 1])
        pairs = None
        if not (upstream & (blocking - {output}) or output in upstream):
            lut = int(test.config.luts[y, x, d])
            pairs = [(int(addresses[test.name][k, y, x]), int(observed[test.name][lane][k]),
                      lut >> int(addresses[test.name][k, y, x]) & 1)
                     for k in range(FRAMES) if ok[k]]
        result.append(_View(values, pairs))
    return result


def _clean(views, count):
    pairs = [v.pairs for v in views if v.pairs is not None]
    if len(pairs) < count or not any(pairs):
        return None
    return _classify([p for ps in pairs for p in ps], len(pairs))


def _constant(views, count):
    """Stuck-at ``v`` if at least ``count`` tests show the output at the constant ``v``
    (whatever it saw: a fault-free output copies a different input in each test)."""
    shown = [v.values for v in views if v.values]
    if len(shown) < count:
        return None
    values = {b for vs in shown for b in vs}
    if len(values) != 1:
        return None
    note = "" if count > 1 else "seen in one test only"
    return f"stuck{values.pop()}", 0, note


#: The order in which candidates are classified: the strongest evidence first.
_STAGES = (lambda v: _clean(v, 3), lambda v: _constant(v, 2), lambda v: _clean(v, 2),
           lambda v: _clean(v, 1), lambda v: _constant(v, 1))
