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

Diagnosis: :mod:`bitgrid.diagnose` (:func:`diagnose`, :func:`settle`).
"""

import typing

import numpy as np

from .cell import COPY
from .config import Configuration, check_grid_size
from .diagnose import FRAMES, BistResult, Finding, diagnose, settle
from .faultmodel import FaultSet, FaultyEmulator
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
