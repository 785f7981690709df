"""The built-in self-test: find the stuck outputs, wrong LUT bits and dead cells of a grid from
its edges alone, and write them as a ``bitgrid-defects-v1`` map (SPEC section 10).

Test configurations (:class:`Plan`, three for every grid size)
    Every cell of a test configuration is the same *copy cell*: each output copies one input,
    a different one per output, so the outputs form paths from an edge input lane to an edge
    output lane (``lines``), and every cell output lies on exactly one path.

    ========  ================================  =========================================
    test      outputs N, E, S, W copy inputs    paths
    ========  ================================  =========================================
    straight  S, W, N, E (pass-through)         rows and columns
    stairs-ne W, S, E, N                        staircases to the north-east / south-west
    stairs-nw E, N, W, S                        staircases to the north-west / south-east
    ========  ================================  =========================================

    Each test runs 16 *frames*; in a frame the edge inputs are held for ``hold`` subcycles
    (twice the longest path, plus 4), long enough for every output to settle. The lanes are
    driven so that in frame ``k`` every cell sees one address, ``k`` or ``k`` with its bit pairs
    swapped: over the 16 frames every cell sees every one of its 16 addresses, in every test.
    The last subcycle of each frame is the *sample*; the subcycle before it must show the same
    edge outputs (a lane that still changes is *unsettled*, itself a failure).

What a fault does to the samples
    The cells downstream of a faulty output copy it to the end of its path unchanged, so each
    edge output lane shows the value of the last faulty output on its path. Per test, a faulty
    output shows its *function* of the address: constant for a stuck output, the copy function
    with some addresses inverted for flipped LUT bits. The three tests copy three different
    inputs into each output, so a stuck output (the same constant in every test) and a set of
    flipped bits (the same addresses in every test) are told apart whenever two tests see the
    output cleanly.

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
    5. Adaptive step (with a ``probe``, as :func:`run` gives): a lane still unexplained holds
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
from .config import Configuration, check_grid_size
from .defects import Defect, DefectMap
from .faultmodel import FaultSet, FaultyEmulator, format_address
from .terms import DIRECTIONS, Direction, Edges, N, E, S, W

__all__ = ["TESTS", "Plan", "Test", "Finding", "BistResult", "plan", "settle", "run",
           "diagnose", "observe", "cost_table", "random_faults", "trial", "accuracy_table",
           "TARGETS", "BYTES_PER_CELL", "BistMemoryError", "memory_estimate", "check_memory"]

#: Test configurations: name -> the input each output (N, E, S, W) copies.
TESTS = {
    "straight": (S, W, N, E),
    "stairs-ne": (W, S, E, N),
    "stairs-nw": (E, N, W, S),
}
#: Where the self-test runs: the reference emulator with injected faults, or the RTL grid in
#: cocotb with the same faults compiled in (:mod:`bitgrid.sim`).
TARGETS = ("emu", "sim")
#: Frames per test: one per LUT address.
FRAMES = 16

Output = typing.Tuple[int, int, int]         # (x, y, d)
Lane = typing.Tuple[int, int]                # (side, lane)


class Test(typing.NamedTuple):
    """One test configuration of a :class:`Plan`.

    :attr name: a key of :data:`TESTS`.
    :attr config: the :class:`~bitgrid.Configuration` (every cell the same copy cell).
    :attr frames: 16 :class:`~bitgrid.Edges`, the edge inputs held in each frame.
    :attr hold: subcycles per frame.
    :attr lines: ``{output lane (side, lane): [outputs (x, y, d) from upstream to the edge]}``.
    :attr line_of: ``{output (x, y, d): (output lane, position on its line)}``.
    """
    name: str
    config: Configuration
    frames: list
    hold: int
    lines: dict
    line_of: dict

    @property
    def subcycles(self):
        return FRAMES * self.hold

    def stimulus(self):
        """The edge inputs of every subcycle: each frame held ``hold`` subcycles."""
        return [edges for edges in self.frames for _ in range(self.hold)]


def _trace(width, height, source):
    """The paths of a copy cell whose output ``d`` copies input ``source[d]``: ``(lines,
    line_of)`` as in :class:`Test`."""
    copier = {s: d for d, s in enumerate(source)}        # input side -> output copying it
    steps = [Direction(d).step for d in DIRECTIONS]       # plain tuples: no enum in the loop
    follow = [copier[Direction(d).opposite] for d in DIRECTIONS]
    lines, line_of = {}, {}
    starts = [(x, 0, N) for x in range(width)] + [(x, height - 1, S) for x in range(width)]
    starts += [(0, y, W) for y in range(height)] + [(width - 1, y, E) for y in range(height)]
    for x, y, side in starts:
        path = []
        d = copier[side]
        while True:
            path.append((x, y, d))
            dx, dy = steps[d]
            nx, ny = x + dx, y + dy
            if not (0 <= nx < width and 0 <= ny < height):
                lane = (d, x if d in (N, S) else y)
                break
            x, y, d = nx, ny, follow[d]
        lines[lane] = path
        for position, output in enumerate(path):
            line_of[output] = (lane, position)
    return lines, line_of


def _frame_bits(name, side, lane, width):
    """Which bit of the frame number edge input ``lane`` of ``side`` carries in test ``name``,
    so that every cell sees a permutation of the frame number as its address (module
    docstring)."""
    if name == "straight":
        return int(side)
    if name == "stairs-nw":             # the mirror image of stairs-ne (x -> W-1-x, E <-> W)
        side = {E: W, W: E}.get(side, side)
        if side in (N, S):
            lane = width - 1 - lane
    odd = lane % 2
    return {N: (0, 1), E: (0, 1), S: (3, 2), W: (3, 2)}[side][odd]


def _frames(name, width, height):
    frames = []
    for k in range(FRAMES):
        words = []
        for side in DIRECTIONS:
            count = width if side in (N, S) else height
            words.append(sum(((k >> _frame_bits(name, side, i, width)) & 1) << i
                             for i in range(count)))
        frames.append(Edges(*words))
    return frames


#: Bytes a self-test holds per cell at its peak: the test paths of :class:`Plan` (2.8 kB per
#: cell, measured at 512 x 512) and the settled states of the diagnosis (16 frames x 4 outputs
#: in several arrays).
BYTES_PER_CELL = 3500


class BistMemoryError(ValueError):
    """A self-test that would not fit the memory there is (:func:`check_memory`); ``estimate``
    and ``available`` in bytes, ``largest`` the side of the largest square grid that fits."""

    def __init__(self, message, estimate, available, largest):
        super().__init__(message)
        self.estimate, self.available, self.largest = estimate, available, largest


def memory_estimate(width, height):
    """Bytes a self-test of a ``width`` x ``height`` grid holds at its peak (a bound from
    :data:`BYTES_PER_CELL`)."""
    return width * height * BYTES_PER_CELL


def check_memory(width, height, memory=None):
    """Refuse, before any work, a self-test that would not fit ``memory`` bytes (default:
    :func:`bitgrid.resources.available_memory`).

    :raises BistMemoryError: with the estimate and the largest square grid that fits.
    """
    from .resources import available_memory, format_bytes
    available = available_memory() if memory is None else memory
    estimate = memory_estimate(width, height)
    if estimate > available:
        largest = max(2, int((available / BYTES_PER_CELL) ** 0.5) // 2 * 2)
        raise BistMemoryError(
            f"a self-test of a {width} x {height} grid needs about {format_bytes(estimate)} "
            f"(its test paths and settled states), and {format_bytes(available)} is available: "
            f"test a grid of at most {largest} x {largest} here, or free memory",
            estimate, available, largest)


class Plan:
    """The self-test of a ``width`` x ``height`` grid: three :class:`Test` s, 16 frames each.
    ``progress``, if given, is called as ``progress("plan", tests planned, 3)``.

    :raises GridSizeError: for a size SPEC section 1 does not allow.
    """

    def __init__(self, width, height, *, progress=None):
        self.width, self.height = check_grid_size(width, height)
        self.tests = []
        for number, (name, source) in enumerate(TESTS.items()):
            if progress is not None:
                progress("plan", number, len(TESTS))
            tables = tuple(COPY[s] for s in source)
            config = Configuration(self.width, self.height,
                                   np.broadcast_to(np.array(tables, dtype=np.uint16),
                                                   (self.height, self.width, 4)).copy())
            lines, line_of = _trace(self.width, self.height, source)
            hold = 2 * max(len(p) for p in lines.values()) + 4
            self.tests.append(Test(name, config, _frames(name, self.width, self.height), hold,
                                   lines, line_of))

    @property
    def configurations(self):
        """Test configurations loaded: 3 for every size."""
        return len(self.tests)

    @property
    def subcycles(self):
        """Subcycles run in all: ``16 * (hold of each test)``, linear in ``width + height``."""
        return sum(t.subcycles for t in self.tests)

    def __repr__(self):
        return (f"Plan({self.width} x {self.height}: {self.configurations} configurations, "
                f"{self.subcycles} subcycles)")


def plan(width, height):
    """The :class:`Plan` of a ``width`` x ``height`` grid."""
    return Plan(width, height)


def cost_table(sizes=(4, 8, 16, 32, 64)):
    """Rows ``(size, configurations, frames, hold per test, subcycles)`` of square grids, the
    self-test's cost (the table of docs/bist.md)."""
    rows = []
    for n in sizes:
        p = Plan(n, n)
        rows.append((f"{n}x{n}", p.configurations, FRAMES * p.configurations,
                     "/".join(str(t.hold) for t in p.tests), p.subcycles))
    return rows


def random_faults(width, height, count, seed):
    """A :class:`~bitgrid.faultmodel.FaultSet` of ``count`` random faults (cell, kind, output
    and address uniform; dead cells' values from ``seed``)."""
    import random
    from .faultmodel import Fault, FaultError
    rng = random.Random(seed)
    while True:
        faults = []
        for _ in range(count):
            x, y, d = rng.randrange(width), rng.randrange(height), Direction(rng.randrange(4))
            kind = rng.choice(("stuck0", "stuck1", "lut", "dead"))
            faults.append(Fault(x, y, kind, None if kind == "dead" else d,
                                rng.randrange(16) if kind == "lut" else None))
        try:
            return FaultSet(width, height, faults, seed=seed)
        except FaultError:           # an output stuck at both values: draw again
            continue


def _emulated_samples(the_plan, faults):
    result = {}
    for test in the_plan.tests:
        emulator = FaultyEmulator(test.config, faults)
        result[test.name] = observe(test, [emulator.step(e) for e in test.stimulus()])
    return result


def trial(width, height, count, seed):
    """One measured run of the self-test on the emulator with :func:`random_faults`.

    :returns: ``(exact, missed, extra, explained)``: the map equals the injected defects
        (:meth:`~bitgrid.faultmodel.FaultSet.defects`); the number of *visible* injected
        faults (the samples change without them) whose cell is not in the map; the number of
        cells in the map that have no injected fault; :attr:`BistResult.explained`.
    """
    faults = random_faults(width, height, count, seed)
    the_plan = Plan(width, height)
    samples = _emulated_samples(the_plan, faults)

    def probe(config, test):
        emulator = FaultyEmulator(config, faults)
        return observe(test, [emulator.step(e) for e in test.stimulus()])
    result = diagnose(the_plan, samples, probe=probe)
    reported = result.defects.bad_cells
    missed = 0
    for fault in faults.faults:
        if (fault.x, fault.y) in reported:
            continue
        others = FaultSet(width, height, [f for f in faults.faults if f != fault],
                          seed=faults.seed)
        missed += _emulated_samples(the_plan, others) != samples
    extra = len(reported - {(f.x, f.y) for f in faults.faults})
    return result.defects == faults.defects(), missed, extra, result.explained


def accuracy_table(width=8, height=8, counts=(1, 2, 4, 8), runs=20, progress=None):
    """Rows ``(faults, runs, exact, runs missing a visible fault, of those flagged as not
    explained, extra cells per run)`` of :func:`trial` s with seeds ``0 .. runs - 1`` (the
    second table of docs/bist.md)."""
    rows = []
    for i, count in enumerate(counts):
        results = [trial(width, height, count, seed) for seed in range(runs)]
        rows.append((count, runs, sum(r[0] for r in results), sum(r[1] > 0 for r in results),
                     sum(r[1] > 0 and not r[3] for r in results),
                     f"{sum(r[2] for r in results) / runs:.2f}"))
        if progress is not None:
            progress(i + 1, len(counts))
    return rows


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


# --- Running the tests ------------------------------------------------------------------------

class Samples(typing.NamedTuple):
    """The samples of one test: per frame, the edge outputs at its last subcycle (``last``) and
    at the one before (``before``), as :class:`~bitgrid.Edges`."""
    last: list
    before: list


def observe(test, outputs):
    """The :class:`Samples` of ``test`` from the edge outputs of every subcycle of its
    :meth:`Test.stimulus` (a list of :class:`~bitgrid.Edges`).

    :raises ValueError: for a list of another length."""
    outputs = list(outputs)
    if len(outputs) != test.subcycles:
        raise ValueError(f"test {test.name} runs {test.subcycles} subcycles, got "
                         f"{len(outputs)} outputs")
    h = test.hold
    return Samples([Edges(*outputs[(k + 1) * h - 1]) for k in range(FRAMES)],
                   [Edges(*outputs[(k + 1) * h - 2]) for k in range(FRAMES)])


def _run_emu(the_plan, faults, progress):
    samples = {}
    done, total = 0, the_plan.subcycles
    for test in the_plan.tests:
        emulator = FaultyEmulator(test.config, faults)
        outputs = []
        for t, edges in enumerate(test.stimulus()):
            outputs.append(emulator.step(edges))
            if progress is not None:
                progress("run", done + t + 1, total)
        done += test.subcycles
        samples[test.name] = observe(test, outputs)
    return samples


def _run_sim(the_plan, faults, simulator, quiet):
    from . import sim
    cases = [sim.make_case(t.config, t.stimulus(), name=f"bist-{t.name}")
             for t in the_plan.tests]
    results = sim.run_cases(cases, simulator=simulator, quiet=quiet,
                            faults=faults if faults else None)
    return {t.name: observe(t, r.outputs) for t, r in zip(the_plan.tests, results)}


def run(width, height, *, target="emu", faults=(), seed=0, simulator="icarus", progress=None,
        quiet=False, memory=None):
    """Run the self-test on a ``width`` x ``height`` grid and diagnose it.

    :param target: ``"emu"`` (:class:`~bitgrid.faultmodel.FaultyEmulator`) or ``"sim"`` (the
        RTL grid in cocotb on ``simulator``, with ``faults`` compiled into the gateware: one
        cached build per fault set, one simulator process for the three tests, and one
        per probe run of the adaptive step).
    :param faults: the injected hardware faults: a :class:`~bitgrid.faultmodel.FaultSet` or
        faults for one (:class:`~bitgrid.faultmodel.Fault` or their text form); ``seed``
        chooses the stuck values of dead cells.
    :param progress: called as ``progress(stage, done, total)``: ``"plan"`` (tests planned of
        3), ``"run"`` (subcycles run of all, emulator target), ``"diagnose"`` (total None).
    :param memory: bytes this run may take (default: :func:`bitgrid.resources.available_memory`).
    :returns: :class:`BistResult`.
    :raises ValueError: for an unknown target, a bad fault or grid size
        (:class:`~bitgrid.faultmodel.FaultError`, :class:`~bitgrid.GridSizeError`).
    :raises BistMemoryError: before any work, when :func:`memory_estimate` passes ``memory``.
    :raises ToolMissingError, SimulationError: from the simulator (``target="sim"``).
    """
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    check_memory(width, height, memory)
    the_plan = Plan(width, height, progress=progress)
    if not isinstance(faults, FaultSet):
        faults = FaultSet(width, height, faults, seed=seed)
    elif (faults.width, faults.height) != (width, height):
        raise ValueError(f"the faults are for a {faults.width} x {faults.height} grid, not "
                         f"{width} x {height}")
    if target == "emu":
        samples = _run_emu(the_plan, faults, progress)

        def probe(config, test):
            emulator = FaultyEmulator(config, faults)
            return observe(test, [emulator.step(e) for e in test.stimulus()])
    else:
        samples = _run_sim(the_plan, faults, simulator, quiet)

        def probe(config, test):
            from . import sim
            case = sim.make_case(config, test.stimulus(), name=f"bist-probe-{test.name}")
            result = sim.run_cases([case], simulator=simulator, quiet=quiet,
                                   faults=faults if faults else None)[0]
            return observe(test, result.outputs)
    if progress is not None:
        progress("diagnose", 0, None)
    result = diagnose(the_plan, samples, probe=probe)
    result.target = target
    return result


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
    :attr configurations, subcycles: the cost of the run: the :class:`Plan`'s and the
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
    """Diagnose a grid from the :class:`Samples` of each test of ``the_plan`` (``{test name:
    Samples}``); the method is in the module docstring.

    :param probe: for the adaptive step, a function ``probe(config, test)`` that runs
        ``test.stimulus()`` on the grid with another configuration ``config`` and returns its
        :class:`Samples` (None: no adaptive step); at most ``max_probes`` runs.

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
