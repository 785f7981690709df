"""Defect maps: the bad cells of a grid, format ``bitgrid-defects-v1`` (SPEC section 10).

Written by the self-test (``bitgrid bist``), read by everything that places cells
(``bitgrid place``, ``bitgrid compile --defects``), which treats every listed cell as unusable::

    {"format": "bitgrid-defects-v1", "width": 8, "height": 8,
     "defects": [{"x": 3, "y": 2, "kind": "stuck0", "output": "E"},
                 {"x": 5, "y": 5, "kind": "dead"}]}

Kinds: ``stuck0``, ``stuck1`` (the output is constant), ``lut`` (some LUT bit reads wrong),
``dead`` (the cell cannot be trusted at all). ``output`` (N, E, S or W) says the fault is on
that output only; absent, the whole cell.
"""

import json
import typing

from .checks import check_choice, check_int
from .config import check_grid_size
from .files import atomic_write, read_json
from .terms import Direction, parse_side

__all__ = ["FORMAT", "KINDS", "DefectMapError", "Defect", "DefectMap", "load", "save"]

#: The ``format`` value of a defect map.
FORMAT = "bitgrid-defects-v1"
#: Defect kinds (SPEC section 10).
KINDS = ("stuck0", "stuck1", "lut", "dead")


class DefectMapError(ValueError):
    """A defect map that does not follow ``bitgrid-defects-v1`` (the message names the entry)."""


class Defect(typing.NamedTuple):
    """One defect: cell ``(x, y)``, ``kind`` (one of :data:`KINDS`) and ``output`` (a
    :class:`~bitgrid.terms.Direction`, or ``None`` for the whole cell)."""
    x: int
    y: int
    kind: str
    output: typing.Optional[Direction] = None

    def to_json(self):
        entry = {"x": self.x, "y": self.y, "kind": self.kind}
        if self.output is not None:
            entry["output"] = self.output.letter
        return entry

    def __str__(self):
        where = f"({self.x}, {self.y})" + (f" output {self.output.letter}"
                                           if self.output is not None else "")
        return f"{self.kind} at {where}"


class DefectMap:
    """The defects of a ``width`` x ``height`` grid.

    :param defects: :class:`Defect` objects or their JSON dicts.
    :raises DefectMapError: for a size SPEC section 1 does not allow, a cell outside the grid,
        an unknown kind or output, or the same (cell, output) listed twice.
    """

    def __init__(self, width, height, defects=()):
        try:
            self.width, self.height = check_grid_size(width, height)
        except ValueError as error:
            raise DefectMapError(str(error)) from None
        result, seen = [], set()
        for i, defect in enumerate(defects):
            defect = self._coerce(defect, f"Defect {i}")
            key = (defect.x, defect.y, defect.output)
            if key in seen:
                raise DefectMapError(f"Defect {i}: {defect} is listed twice")
            seen.add(key)
            result.append(defect)
        self.defects = tuple(result)

    def _coerce(self, defect, where):
        if isinstance(defect, Defect):
            defect = defect.to_json()
        if not isinstance(defect, dict) or set(defect) - {"x", "y", "kind", "output"}:
            raise DefectMapError(f"{where}: an entry is {{\"x\", \"y\", \"kind\"[, \"output\"]}}"
                                 f", not {defect!r}")
        try:
            x = check_int(defect.get("x"), f"{where} x", minimum=0, maximum=self.width - 1)
            y = check_int(defect.get("y"), f"{where} y", minimum=0, maximum=self.height - 1)
            kind = check_choice(defect.get("kind"), f"{where} kind", KINDS)
            output = defect.get("output")
            output = None if output is None else parse_side(output)
        except ValueError as error:
            raise DefectMapError(str(error)) from None
        return Defect(x, y, kind, output)

    @property
    def bad_cells(self):
        """The set of cells ``(x, y)`` a placer must not use (every listed cell)."""
        return frozenset((d.x, d.y) for d in self.defects)

    def __len__(self):
        return len(self.defects)

    def __iter__(self):
        return iter(self.defects)

    def __eq__(self, other):
        return isinstance(other, DefectMap) and self.to_json() == other.to_json()

    def __repr__(self):
        return f"DefectMap({self.width} x {self.height}, {len(self.defects)} defects)"

    def check_grid(self, width, height):
        """``self`` if it is for a ``width`` x ``height`` grid.

        :raises DefectMapError: ``The defect map is for a 8 x 8 grid, not 4 x 4``."""
        if (width, height) != (self.width, self.height):
            raise DefectMapError(f"The defect map is for a {self.width} x {self.height} grid, "
                                 f"not {width} x {height}")
        return self

    def to_json(self):
        """The ``bitgrid-defects-v1`` document as a dict (defects sorted by y, x, output)."""
        ordered = sorted(self.defects, key=lambda d: (d.y, d.x, -1 if d.output is None
                                                      else int(d.output)))
        return {"format": FORMAT, "width": self.width, "height": self.height,
                "defects": [d.to_json() for d in ordered]}

    def dumps(self):
        """The document as JSON text, one defect per line."""
        document = self.to_json()
        lines = ",\n  ".join(json.dumps(d) for d in document["defects"])
        head = (f'{{"format": "{FORMAT}", "width": {self.width}, "height": {self.height}, '
                '"defects": [')
        return head + ("\n  " + lines + "\n" if lines else "") + "]}\n"

    @classmethod
    def from_json(cls, document, *, where="defect map"):
        """Read a ``bitgrid-defects-v1`` document (a dict).

        :raises DefectMapError: naming ``where`` and the problem."""
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise DefectMapError(f"{where}: not a {FORMAT} document")
        unknown = set(document) - {"format", "width", "height", "defects"}
        if unknown:
            raise DefectMapError(f"{where}: unknown keys {sorted(unknown)}")
        defects = document.get("defects")
        if not isinstance(defects, list):
            raise DefectMapError(f"{where}: defects must be a list")
        try:
            return cls(document.get("width"), document.get("height"), defects)
        except DefectMapError as error:
            raise DefectMapError(f"{where}: {error}") from None


def load(path):
    """Read a defect map file.

    :raises DefectMapError: for a file that is not valid JSON or not ``bitgrid-defects-v1``.
    :raises OSError: if the file cannot be read."""
    document = read_json(path, "defect map", DefectMapError)
    return DefectMap.from_json(document, where=str(path))


def save(path, defects):
    """Write ``defects`` (a :class:`DefectMap`) to ``path`` atomically."""
    atomic_write(path, defects.dumps())
