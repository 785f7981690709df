"""Hardware faults of a grid's cells, for the self-test (:mod:`bitgrid.bist`): what a faulty
grid does, in the emulator (:class:`FaultyEmulator`) and in the gateware (the test-only
``faults=`` option of :class:`bitgrid.hdl.grid.Grid`, see :meth:`FaultSet.hdl_faults`).

Faults belong to the grid, not to the program: they apply to whatever configuration is loaded,
as hardware faults would. The kinds are those of the defect map (:data:`bitgrid.defects.KINDS`,
SPEC section 10):

``stuck0`` / ``stuck1`` on output ``d`` of cell ``(x, y)``
    the output, as its neighbour (or the edge bus) sees it, is the constant 0 or 1 at every
    subcycle, from reset on. Without an output: all four outputs of the cell.
``lut`` on output ``d`` at address ``a`` (0..15, ``N | E<<1 | S<<2 | W<<3``, SPEC section 3)
    bit ``a`` of ``LUT[d]`` reads inverted when the cell updates: the output register takes the
    wrong value whenever the cell's inputs form address ``a``. It is a fault of the LUT's read
    path: a readback of the configuration (SPEC section 7) shows the bit as loaded. Several
    ``lut`` faults on one output flip several bits.
``dead``
    the cell computes nothing: each of its four outputs is stuck at a value drawn from the
    fault set's ``seed`` (the same for every run with that seed; see :meth:`FaultSet.dead_values`).

A stuck output hides any ``lut`` fault of the same output. Text form (``bitgrid bist
--inject``), :func:`parse_fault`::

    X,Y:stuck0[:SIDE]     X,Y:stuck1[:SIDE]     X,Y:lut:SIDE:ADDR     X,Y:dead

with ``SIDE`` one of N, E, S, W and ``ADDR`` a LUT address 0..15 (decimal or ``0x`` hex), or
the inputs that are 1 as letters in brackets, e.g. ``[ns]`` for address 5 and ``[]`` for 0.
"""

import typing

import numpy as np

from .checks import check_int
from .config import Configuration, check_grid_size
from .defects import KINDS, Defect, DefectMap
from .emulator import Emulator
from .terms import DIRECTIONS, Direction, parse_side

__all__ = ["FaultError", "Fault", "FaultSet", "FaultyEmulator", "parse_fault", "parse_address",
           "format_address"]


class FaultError(ValueError):
    """A fault that does not fit its grid or the text form (the message says what to write)."""


class Fault(typing.NamedTuple):
    """One injected fault: cell ``(x, y)``, ``kind`` (one of :data:`bitgrid.defects.KINDS`),
    ``output`` (a :class:`~bitgrid.terms.Direction`; None: every output of the cell, or a dead
    cell) and ``address`` (0..15, for ``lut`` only)."""
    x: int
    y: int
    kind: str
    output: typing.Optional[Direction] = None
    address: typing.Optional[int] = None

    def __str__(self):
        text = f"{self.x},{self.y}:{self.kind}"
        if self.output is not None:
            text += f":{self.output.letter}"
        if self.address is not None:
            text += f":{self.address}"
        return text


def parse_address(text):
    """A LUT address 0..15 from ``"5"``, ``"0x5"`` or the inputs that are 1, ``"[ns]"``.

    :raises FaultError: for anything else."""
    text = str(text).strip().lower()
    if text.startswith("[") and text.endswith("]"):
        letters = text[1:-1]
        if set(letters) - set("nesw") or len(set(letters)) != len(letters):
            raise FaultError(f"address {text!r}: in brackets give the inputs that are 1, "
                             "e.g. [ns] for address 5")
        return sum(1 << "nesw".index(c) for c in letters)
    try:
        value = int(text, 0)
    except ValueError:
        raise FaultError(f"address {text!r} is not a LUT address 0..15 (or inputs in brackets, "
                         "e.g. [ns])") from None
    if not 0 <= value <= 15:
        raise FaultError(f"address {value} is not a LUT address 0..15")
    return value


def format_address(address):
    """``"5 [ns]"``: an address and the inputs that are 1 at it."""
    return f"{address} [{''.join(c for i, c in enumerate('nesw') if address >> i & 1)}]"


def parse_fault(text):
    """A :class:`Fault` from its text form ``X,Y:KIND[:SIDE[:ADDR]]`` (module docstring).

    :raises FaultError: naming what is wrong and the form to use."""
    form = "X,Y:stuck0|stuck1[:SIDE], X,Y:lut:SIDE:ADDR or X,Y:dead"
    parts = str(text).strip().split(":")
    try:
        x, y = (int(v) for v in parts[0].split(","))
    except ValueError:
        raise FaultError(f"fault {text}: start with the cell X,Y, e.g. 3,2:stuck0:E "
                         f"({form})") from None
    if len(parts) < 2 or parts[1].lower() not in KINDS:
        raise FaultError(f"fault {text}: the kind is one of {', '.join(KINDS)} ({form})")
    kind = parts[1].lower()
    rest = parts[2:]
    output = address = None
    try:
        if kind == "lut":
            if len(rest) != 2:
                raise FaultError(f"fault {text}: a lut fault names the output and the "
                                 "address, X,Y:lut:SIDE:ADDR, e.g. 3,2:lut:E:5")
            output, address = parse_side(rest[0]), parse_address(rest[1])
        elif kind == "dead":
            if rest:
                raise FaultError(f"fault {text}: a dead cell has no side, write X,Y:dead")
        else:
            if len(rest) > 1:
                raise FaultError(f"fault {text}: write X,Y:{kind} or X,Y:{kind}:SIDE")
            output = parse_side(rest[0]) if rest else None
    except FaultError:
        raise
    except ValueError as error:
        raise FaultError(f"fault {text}: {error}") from None
    return Fault(x, y, kind, output, address)


class FaultSet:
    """The faults of a ``width`` x ``height`` grid.

    :param faults: :class:`Fault` s, or their text forms (:func:`parse_fault`).
    :param seed: chooses the stuck values of ``dead`` cells (integer >= 0).
    :raises FaultError: for a cell outside the grid, a ``lut`` fault without output or address,
        or an output stuck at both 0 and 1.
    :raises GridSizeError: for a size SPEC section 1 does not allow.

    Per output, the set reduces to :attr:`forced` (``(x, y, d) -> 0 or 1``) and :attr:`flips`
    (``(x, y, d) -> 16-bit mask of the addresses that read inverted``; outputs that are also
    forced are left out, their flips cannot be seen).
    """

    def __init__(self, width, height, faults=(), *, seed=0):
        self.width, self.height = check_grid_size(width, height)
        self.seed = check_int(seed, "seed", minimum=0)
        self.faults = tuple(self._coerce(f) for f in faults)
        forced, flips = {}, {}
        for fault in self.faults:
            if fault.kind == "lut":
                key = (fault.x, fault.y, int(fault.output))
                flips[key] = flips.get(key, 0) | 1 << fault.address
                continue
            if fault.kind == "dead":
                values = self.dead_values(fault.x, fault.y)
            else:
                values = (int(fault.kind[-1]),) * 4
            outputs = DIRECTIONS if fault.output is None else (fault.output,)
            for d in outputs:
                key = (fault.x, fault.y, int(d))
                if forced.get(key, values[d]) != values[d]:
                    raise FaultError(f"fault {fault}: output {Direction(d).letter} of "
                                     f"({fault.x}, {fault.y}) is already stuck at "
                                     f"{forced[key]}")
                forced[key] = values[d]
        self.forced = dict(sorted(forced.items()))
        self.flips = {k: v for k, v in sorted(flips.items()) if k not in forced}

    def _coerce(self, fault):
        if isinstance(fault, str):
            fault = parse_fault(fault)
        if not isinstance(fault, Fault):
            raise FaultError(f"a fault is a Fault or its text form X,Y:KIND[:SIDE[:ADDR]], "
                             f"not {fault!r}")
        if not (0 <= fault.x < self.width and 0 <= fault.y < self.height):
            raise FaultError(f"fault {fault}: cell ({fault.x}, {fault.y}) is outside the "
                             f"{self.width} x {self.height} grid")
        if fault.kind not in KINDS:
            raise FaultError(f"fault {fault}: the kind is one of {', '.join(KINDS)}")
        if fault.kind == "lut" and (fault.output is None or fault.address is None):
            raise FaultError(f"fault {fault}: a lut fault names the output and the address")
        if fault.kind != "lut" and fault.address is not None:
            raise FaultError(f"fault {fault}: only a lut fault has an address")
        if fault.kind == "dead" and fault.output is not None:
            raise FaultError(f"fault {fault}: a dead cell has no output")
        output = None if fault.output is None else parse_side(fault.output)
        return fault._replace(output=output)

    @classmethod
    def from_hdl(cls, width, height, faults):
        """The set of :meth:`hdl_faults` tuples (or lists, their JSON form) ``faults``."""
        result = []
        for fault in faults:
            x, y, kind, output, address = fault
            result.append(Fault(x, y, kind, parse_side(output), address))
        return cls(width, height, result)

    def dead_values(self, x, y):
        """The stuck values ``(N, E, S, W)`` of the outputs of a dead cell ``(x, y)``: four
        bits from a generator seeded with ``(seed, x, y)``."""
        bits = np.random.default_rng([self.seed, x, y]).integers(0, 2, size=4)
        return tuple(int(b) for b in bits)

    def __len__(self):
        return len(self.faults)

    def __bool__(self):
        return bool(self.forced or self.flips)

    def __repr__(self):
        return f"FaultSet({self.width} x {self.height}, {', '.join(map(str, self.faults))})"

    def hdl_faults(self):
        """The set as the ``faults`` argument of :class:`bitgrid.hdl.grid.Grid`: a sorted tuple
        of ``(x, y, kind, output, address)`` with ``kind`` ``"stuck0"``, ``"stuck1"`` or
        ``"lut"``, ``output`` 0..3 and ``address`` 0..15 (None for stuck outputs); dead cells
        are their four stuck outputs."""
        result = [(x, y, f"stuck{v}", d, None) for (x, y, d), v in self.forced.items()]
        result += [(x, y, "lut", d, a) for (x, y, d), mask in self.flips.items()
                   for a in range(16) if mask >> a & 1]
        return tuple(sorted(result, key=lambda f: (f[1], f[0], f[3], f[2], f[4] or 0)))

    def apply_luts(self, config):
        """``config`` (a :class:`~bitgrid.Configuration`, not changed) as the faulty grid runs
        it once the outputs are settled: flipped LUT bits inverted, stuck outputs' LUTs
        constant. Exact for steady states; :class:`FaultyEmulator` is exact at every subcycle
        (a stuck-at-1 output is 1 even before its cell first updates)."""
        self._check_config(config)
        luts = config.luts.copy()
        for (x, y, d), mask in self.flips.items():
            luts[y, x, d] ^= mask
        for (x, y, d), v in self.forced.items():
            luts[y, x, d] = 0xFFFF if v else 0
        return Configuration(self.width, self.height, luts)

    def _check_config(self, config):
        if (config.width, config.height) != (self.width, self.height):
            raise FaultError(f"the faults are for a {self.width} x {self.height} grid, the "
                             f"configuration is {config.width} x {config.height}")

    def defects(self):
        """The :class:`~bitgrid.defects.DefectMap` a perfect self-test would write for these
        faults (a cell with all four outputs faulty is ``dead``; an output with both stuck and
        lut faults is stuck)."""
        outputs = {}
        for (x, y, d), v in self.forced.items():
            outputs[(x, y, d)] = f"stuck{v}"
        for key in self.flips:
            outputs.setdefault(key, "lut")
        return defects_of_outputs(self.width, self.height, outputs)


def defects_of_outputs(width, height, outputs, dead=()):
    """A :class:`~bitgrid.defects.DefectMap` from faulty outputs ``{(x, y, d): kind}`` and cells
    ``dead``: a cell with all four outputs faulty, or listed in ``dead``, is one ``dead``
    entry."""
    cells = {}
    for (x, y, d), kind in outputs.items():
        cells.setdefault((x, y), {})[d] = kind
    entries = [Defect(x, y, "dead") for x, y in sorted(set(dead))]
    for (x, y), kinds in sorted(cells.items()):
        if (x, y) in set(dead):
            continue
        if len(kinds) == 4:
            entries.append(Defect(x, y, "dead"))
        else:
            entries += [Defect(x, y, kind, Direction(d)) for d, kind in sorted(kinds.items())]
    return DefectMap(width, height, entries)


class FaultyEmulator(Emulator):
    """The reference emulator (:class:`bitgrid.Emulator`) of a grid with ``faults`` (a
    :class:`FaultSet` or a list of faults for it): every loaded configuration runs as the
    faulty hardware would run it, at every subcycle. Stuck outputs are constant from reset on;
    flipped LUT bits read inverted (:attr:`config` is the configuration as loaded).

    :raises FaultError: if the faults are for another grid size.
    """

    def __init__(self, config, faults=()):
        if not isinstance(config, Configuration):
            raise TypeError(f"FaultyEmulator needs a Configuration, not {config!r}")
        if not isinstance(faults, FaultSet):
            faults = FaultSet(config.width, config.height, faults)
        self.faults = faults
        keys = list(faults.forced)
        self._forced_index = tuple(np.array([k[i] for k in keys], dtype=np.intp)
                                   for i in (2, 1, 0))
        self._forced_values = np.array([faults.forced[k] for k in keys], dtype=np.uint8)
        super().__init__(config)

    def load(self, config):
        """Load ``config``; it runs with the flipped LUT bits inverted."""
        self.faults._check_config(config)
        luts = config.luts.copy()
        for (x, y, d), mask in self.faults.flips.items():
            luts[y, x, d] ^= mask
        super().load(Configuration(config.width, config.height, luts))
        self.config = config.copy()

    def _force(self):
        if len(self._forced_values):
            self.outputs[self._forced_index] = self._forced_values

    def reset(self):
        super().reset()
        self._force()

    def step(self, edge_inputs=None):
        super().step(edge_inputs)
        self._force()
        return self.edge_outputs()
