"""Fault specifications for simulated meshes (``bitgrid sim --mesh --faults SPEC``).

A :class:`FaultSpec` says which link faults a mesh simulation injects and how often. It is
written on the command line as comma-separated ``KEY=VALUE`` items::

    flip=1e-3,drop=0.02,dup=0.02,slip=3,skew=2,disconnect=1,clock=1.3,seed=7

========================  =====================================================================
key                       meaning (default)
========================  =====================================================================
``flip``                  probability that a line bit is inverted, per bit and lane,
                          0..:data:`MAX_FLIP` (0)
``drop``                  probability that a link-layer frame is swallowed, 0..:data:`MAX_DROP`
                          (0)
``dup``                   probability that a link-layer frame is sent twice, 0..1 (0)
``slip``                  number of bit slips spread over the run, on random links and lanes,
                          0..:data:`MAX_EVENTS`, at most 4 per step of the run (0)
``skew``                  largest per-lane skew in bit times, 0..15; each lane of each link gets
                          a fixed random skew from 0 to this (0)
``disconnect``            number of disconnect periods spread over the run,
                          0..:data:`MAX_EVENTS`, at most one per step of the run (0)
``disconnect_cycles``     length of one disconnect period in cycles,
                          1..:data:`MAX_DISCONNECT_CYCLES` (200)
``clock``                 ratio of neighbouring chips' clock periods, 1/:data:`MAX_CLOCK_RATIO`
                          ..:data:`MAX_CLOCK_RATIO`; 1 = same clock (1)
``seed``                  seed of the schedule, of the lane skews and (its low 16 bits) of the
                          fault models' random generators, >= 0 (1)
========================  =====================================================================

The bounds are those at which a simulated mesh still makes progress (docs/mesh.md, "Fault
specs"): beyond them a run stalls rather than tests the link's repair. The per-run bounds
(slips and disconnects per step) are checked by :meth:`FaultSpec.check_run`.

``none`` (or an empty string) is no fault at all; ``all`` enables every kind at moderate rates
(:data:`ALL`). An item may follow a preset to change it: ``all,seed=3``.

The gateware fault models (:mod:`bitgrid.hdl.link.faults`) take probabilities as 16-bit
thresholds: :func:`threshold` converts one.
"""

import dataclasses
import math
import numbers
import random
from typing import NamedTuple

from .checks import check_int, check_real

__all__ = ["FaultSpec", "FaultEvent", "threshold", "ALL", "MAX_SKEW_BITS", "EVENT_KINDS",
           "MAX_FLIP", "MAX_DROP", "MAX_CLOCK_RATIO", "MAX_EVENTS", "MAX_DISCONNECT_CYCLES",
           "SLIPS_PER_STEP"]

#: Largest per-lane skew the fault models inject, in bit times (the 4-bit ``skew`` field of
#: :class:`bitgrid.hdl.link.FaultControlSignature`; the gateware's delay lines are this long).
#: Not to be confused with what a receiver absorbs, in symbols
#: (:data:`bitgrid.hdl.link.phy.MAX_DESKEW_SYMBOLS`).
MAX_SKEW_BITS = 15

#: Largest bit flip probability: the longest DATA frame (13 symbols, 130 line bits, of a
#: 128 x 128 tile) still arrives intact with probability (1 - 0.005) ** 130 = 0.52, as with
#: :data:`MAX_DROP`; at 0.1 not one frame in 10**5 does and receivers lose alignment.
MAX_FLIP = 0.005
#: Largest frame drop probability: every lost frame costs a retransmission timeout (256 cycles
#: and more), so a link needs 1 / (1 - drop) tries per subcycle; at 0.5 a subcycle without
#: delivery for the bench's stall window of 20000 cycles (about 70 timeouts) has probability
#: 0.5 ** 70, at 0.9 it is 0.9 ** 70 = 6e-4 per link and subcycle: a long run stalls.
MAX_DROP = 0.5
#: Largest ratio of neighbouring clock periods (and 1 / it the smallest): a subcycle of the
#: slower chip, up to about 1000 of its cycles with a retransmission, times the ratio must stay
#: well inside the bench's stall window of 20000 cycles of the faster clock.
MAX_CLOCK_RATIO = 16
#: Largest number of slips or disconnects in a spec (and at most one per step of a run).
MAX_EVENTS = 10000
#: Most slips per step of a run (:meth:`FaultSpec.check_run`); disconnects: one per step.
SLIPS_PER_STEP = 4
#: Longest disconnect period in cycles: half the bench's stall window (20000 cycles without
#: progress), so that the link can realign and retransmit before the bench gives up.
MAX_DISCONNECT_CYCLES = 10000

#: The kinds of :class:`FaultEvent`, in the order a bench applies events of the same cycle.
EVENT_KINDS = ("reconnect", "disconnect", "slip")

_PROBABILITY = "a probability between 0 and 1"
_RANGES = {
    "flip": f"a probability from 0 to {MAX_FLIP} (with more bit errors the links lose most "
            "frames and the mesh stalls)",
    "drop": f"a probability from 0 to {MAX_DROP} (with more dropped frames the mesh stalls "
            "waiting for a delivery)",
    "dup": _PROBABILITY,
    "slip": f"an integer count from 0 to {MAX_EVENTS}",
    "skew": f"an integer number of bit times between 0 and {MAX_SKEW_BITS}",
    "disconnect": f"an integer count from 0 to {MAX_EVENTS}",
    "disconnect_cycles": f"an integer number of cycles from 1 to {MAX_DISCONNECT_CYCLES} (a "
                         "longer disconnect is a stall)",
    "clock": f"a clock period ratio from 1/{MAX_CLOCK_RATIO} to {MAX_CLOCK_RATIO} (1 = same "
             "clock; a slower neighbour stalls the mesh)",
    "seed": "an integer of at least 0",
}
_KEYS = tuple(_RANGES)
_FLOAT_KEYS = ("flip", "drop", "dup", "clock")


def threshold(probability):
    """The 16-bit threshold of the gateware fault models for ``probability`` (0..1).

    The gateware fires when a 16-bit random draw is below the threshold, so the threshold is
    ``ceil(probability * 65536)``: rounded up, so that any non-zero probability gives a non-zero
    threshold. The top value 0xffff means *always* in the gateware, so probability 1 maps to
    0xffff and any other probability to at most 0xfffe.
    """
    probability = check_real(probability, "probability", minimum=0, maximum=1)
    if probability == 1:
        return 0xffff
    return min(math.ceil(probability * 65536), 0xfffe)


def _error(key, value):
    return ValueError(f"{key}={value}: {key} must be {_RANGES[key]}")


def _convert(key, text):
    """The value of ``key`` written as ``text`` (a string) on the command line."""
    text = text.strip()
    try:
        if key in _FLOAT_KEYS:
            value = float(text)
        else:
            value = int(text, 10)
    except ValueError:
        raise _error(key, text) from None
    _check(key, value, text)
    return value


def _check(key, value, text=None):
    """Check the range of one field; ``text`` is how the user wrote it, for the message."""
    shown = value if text is None else text
    if key in _FLOAT_KEYS:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not math.isfinite(value):
            raise _error(key, shown)
        ok = {"clock": 1 / MAX_CLOCK_RATIO <= value <= MAX_CLOCK_RATIO,
              "flip": 0 <= value <= MAX_FLIP,
              "drop": 0 <= value <= MAX_DROP}.get(key, 0 <= value <= 1)
    else:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise _error(key, shown)
        value = int(value)
        ok = {"skew": 0 <= value <= MAX_SKEW_BITS,
              "slip": 0 <= value <= MAX_EVENTS, "disconnect": 0 <= value <= MAX_EVENTS,
              "disconnect_cycles": 1 <= value <= MAX_DISCONNECT_CYCLES}.get(key, value >= 0)
    if not ok:
        raise _error(key, shown)


class FaultEvent(NamedTuple):
    """One scheduled link fault, for a test bench to apply (see :meth:`FaultSpec.schedule`).

    ``kind`` is ``"slip"`` (pulse ``slip`` for one cycle with ``slip_lane = lane``),
    ``"disconnect"`` (raise ``disconnect``) or ``"reconnect"`` (lower it again); ``lane`` is 0
    except for slips.
    """
    cycle: int
    link: int
    kind: str
    lane: int = 0


@dataclasses.dataclass(frozen=True)
class FaultSpec:
    """Which link faults a simulated mesh injects (module docstring for the keys).

    Construct one with :meth:`parse` (the command-line form), :meth:`none`, or directly with
    keyword arguments; every field is checked, and ``str(spec)`` gives back a string that
    :meth:`parse` turns into an equal spec.

    :raises ValueError: for a value out of range, with the message of :meth:`parse`.
    """
    flip: float = 0.0
    drop: float = 0.0
    dup: float = 0.0
    slip: int = 0
    skew: int = 0
    disconnect: int = 0
    disconnect_cycles: int = 200
    clock: float = 1.0
    seed: int = 1

    def __post_init__(self):
        for key in _KEYS:
            value = getattr(self, key)
            _check(key, value)
            if key in _FLOAT_KEYS:
                object.__setattr__(self, key, float(value))

    # --- Construction ---------------------------------------------------------------------------

    @classmethod
    def none(cls):
        """No faults."""
        return cls()

    @classmethod
    def parse(cls, text):
        """Parse the command-line form: ``KEY=VALUE`` items separated by commas, optionally
        after a preset (``none`` or ``all``); surrounding spaces are ignored.

        :raises ValueError: naming the key and its valid range, for an unknown key, an item
            without ``=``, a key given twice, a value that is not a number of the right kind or
            one out of range. Examples: ``"skew=16: skew must be an integer number of bit times
            between 0 and 15"``, ``"foo=1: unknown fault 'foo'; the keys are flip, drop, ..."``.
        """
        if not isinstance(text, str):
            raise TypeError(f"A fault specification must be a string, not {text!r}")
        items = [item.strip() for item in text.split(",")]
        if items == [""]:
            return cls()
        values = {}
        if items[0] in PRESETS:
            values = PRESETS[items[0]].fields()
            items = items[1:]
        given = set()
        for item in items:
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep:
                if item in PRESETS:
                    raise ValueError(f"{item}: the preset {item!r} must come first")
                raise ValueError(f"{item or '(empty)'}: a fault must be written KEY=VALUE "
                                 f"with KEY one of {', '.join(_KEYS)}, or a preset "
                                 f"({', '.join(PRESETS)}) first")
            if key not in _RANGES:
                raise ValueError(f"{item}: unknown fault {key!r}; the keys are "
                                 f"{', '.join(_KEYS)}")
            if key in given:
                raise ValueError(f"{item}: {key} is given twice")
            given.add(key)
            values[key] = _convert(key, value)
        return cls(**values)

    def fields(self):
        """The fields as a ``{key: value}`` dictionary (the keys of the command-line form)."""
        return {key: getattr(self, key) for key in _KEYS}

    def replace(self, **changes):
        """A copy with some fields changed (checked like the constructor)."""
        return dataclasses.replace(self, **changes)

    def __str__(self):
        default = FaultSpec.__dataclass_fields__
        items = [f"{key}={value!r}" for key, value in self.fields().items()
                 if value != default[key].default]
        return ",".join(items) if items else "none"

    def check_run(self, steps):
        """Check the spec against a run of ``steps`` steps: at most :data:`SLIPS_PER_STEP` slips
        and one disconnect period per step, so that they are spread over the run instead of
        piled into its last steps, where the link would not recover within the bench's stall
        window (a disconnect costs ``disconnect_cycles``, then realignment and a retransmission
        timeout).

        :returns: the spec.
        :raises ValueError: e.g. ``"disconnect=20: a run of 16 steps takes at most 16
            disconnects (1 per step)"``.
        """
        steps = check_int(steps, "steps", minimum=1)
        for key, what, per_step in (("slip", "slips", SLIPS_PER_STEP),
                                    ("disconnect", "disconnects", 1)):
            value = getattr(self, key)
            if value > per_step * steps:
                raise ValueError(f"{key}={value}: a run of {steps} step{'s' * (steps != 1)} "
                                 f"takes at most {per_step * steps} {what} ({per_step} per "
                                 "step)")
        return self

    # --- Queries ------------------------------------------------------------------------------

    @property
    def enabled(self):
        """True if any fault is injected (the seed and ``disconnect_cycles`` alone inject none)."""
        return (self.flip > 0 or self.drop > 0 or self.dup > 0 or self.slip > 0 or self.skew > 0
                or self.disconnect > 0 or self.clock != 1.0)

    def threshold(self, key):
        """The 16-bit gateware threshold of the probability ``key`` (``"flip"``, ``"drop"`` or
        ``"dup"``), see :func:`threshold`."""
        if key not in ("flip", "drop", "dup"):
            raise ValueError(f"{key!r} is not a probability; the probabilities are flip, drop, "
                             f"dup")
        return threshold(getattr(self, key))

    def describe(self):
        """A short human summary, such as ``"bit flips 0.001 per bit, frame drops 2%, 3 bit
        slips, seed 7"``."""
        if not self.enabled:
            return "no link faults"
        parts = []
        if self.flip:
            parts.append(f"bit flips {self.flip:g} per bit")
        if self.drop:
            parts.append(f"frame drops {self.drop:.4g}" if self.drop < 0.001
                         else f"frame drops {self.drop * 100:.4g}%")
        if self.dup:
            parts.append(f"frame duplicates {self.dup:.4g}" if self.dup < 0.001
                         else f"frame duplicates {self.dup * 100:.4g}%")
        if self.slip:
            parts.append(f"{self.slip} bit slip{'s' * (self.slip != 1)}")
        if self.skew:
            parts.append(f"lane skew up to {self.skew} bit time{'s' * (self.skew != 1)}")
        if self.disconnect:
            parts.append(f"{self.disconnect} disconnect{'s' * (self.disconnect != 1)} of "
                         f"{self.disconnect_cycles} cycles")
        if self.clock != 1.0:
            parts.append(f"clock period ratio {self.clock:g}")
        parts.append(f"seed {self.seed}")
        return ", ".join(parts)

    # --- Deterministic draws for a test bench ------------------------------------------------

    def rng(self, purpose=""):
        """A :class:`random.Random` seeded from :attr:`seed` and ``purpose`` (the same in every
        run and Python version)."""
        return random.Random(f"bitgrid.faults:{purpose}:{self.seed}")

    def lane_skews(self, links, lanes):
        """A fixed skew for every lane of every link: ``links`` lists of ``lanes`` integers, each
        drawn uniformly from 0 to :attr:`skew`."""
        links = check_int(links, "links", minimum=1)
        lanes = check_int(lanes, "lanes", minimum=1)
        rng = self.rng("skew")
        return [[rng.randint(0, self.skew) for _ in range(lanes)] for _ in range(links)]

    @staticmethod
    def skew_value(skews):
        """The ``FaultControlSignature.skew`` value for one link's list of lane skews."""
        return sum(s << (4 * lane) for lane, s in enumerate(skews))

    def schedule(self, total_cycles, links, *, lanes=1, start=0, rng=None):
        """The slips and disconnects of a run, as a sorted list of :class:`FaultEvent`.

        The run is cycles ``start`` to ``total_cycles - 1``. The :attr:`slip` slips are spread
        over it: it is cut into ``slip`` equal slots, with one slip at a random cycle of each, on
        a random link and lane. Likewise the :attr:`disconnect` periods: each lies within its own
        slot (a ``disconnect`` event, then a ``reconnect`` event :attr:`disconnect_cycles` later),
        so periods never overlap. Deterministic: the same spec and arguments give the same list
        (``rng``, a :class:`random.Random`, overrides the generator seeded from :attr:`seed`).

        :raises ValueError: for non-positive ``links`` or ``lanes``, ``start`` outside the run,
            or a run too short for the disconnect periods.
        """
        total_cycles = check_int(total_cycles, "total_cycles", minimum=1)
        links = check_int(links, "links", minimum=1)
        lanes = check_int(lanes, "lanes", minimum=1)
        start = check_int(start, "start", minimum=0, maximum=total_cycles - 1)
        rng = self.rng("schedule") if rng is None else rng
        span = total_cycles - start
        events = []
        for n in range(self.disconnect):
            first = start + span * n // self.disconnect
            end = start + span * (n + 1) // self.disconnect
            if end - first <= self.disconnect_cycles:
                raise ValueError(f"{span} cycles are too few for {self.disconnect} disconnect "
                                 f"periods of {self.disconnect_cycles} cycles and a reconnect "
                                 f"after each")
            cycle = rng.randrange(first, end - self.disconnect_cycles)
            link = rng.randrange(links)
            events += [FaultEvent(cycle, link, "disconnect"),
                       FaultEvent(cycle + self.disconnect_cycles, link, "reconnect")]
        for n in range(self.slip):
            first, end = start + span * n // self.slip, start + span * (n + 1) // self.slip
            cycle = rng.randrange(first, end) if end > first else first
            events.append(FaultEvent(cycle, rng.randrange(links), "slip", rng.randrange(lanes)))
        return sorted(events, key=lambda e: (e.cycle, e.link, EVENT_KINDS.index(e.kind), e.lane))


#: Every fault kind at moderate rates (``--faults all``).
ALL = FaultSpec(flip=1e-4, drop=0.01, dup=0.01, slip=2, skew=3, disconnect=1, clock=1.25)

#: The named presets of :meth:`FaultSpec.parse`.
PRESETS = {"none": FaultSpec(), "all": ALL}
