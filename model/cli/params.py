"""Click parameter types of the ``bitgrid`` command line: grid sizes, square sides, mesh shapes,
link fault specs and sides."""

import click

from bitgrid.config import check_grid_size
from bitgrid.terms import SIDES

from .errors import BadInput

__all__ = ["SizeType", "SideType", "MeshType", "FaultsType", "SidesType", "Seconds",
           "parse_size", "parse_side"]


def parse_size(text):
    """``(width, height)`` from ``WxH`` (cells), checked (both even, at least 2).

    :raises ValueError: with what to write instead (a :class:`~bitgrid.GridSizeError` for a
        bad size).
    """
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"size {text!r} is not of the form WxH, for example 8x8") from None
    return check_grid_size(w, h)


class _Parsed(click.ParamType):
    """A parameter read by a parse function that raises :class:`ValueError` (the message
    becomes click's ``Invalid value`` error, exit 2); a value that already is a ``kind`` is
    kept."""
    kind = ()

    @staticmethod
    def parse(text):
        raise NotImplementedError

    def convert(self, value, param, ctx):
        if isinstance(value, self.kind):
            return value
        try:
            return self.parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


class Seconds(click.FloatRange):
    """A time in seconds, at least ``minimum``: a finite number (not ``nan`` or ``inf``, which
    Python's float() accepts)."""
    name = "seconds"

    def __init__(self, minimum=0.0):
        super().__init__(min=minimum)

    def convert(self, value, param, ctx):
        import math
        if isinstance(value, str) and value.strip().lower().lstrip("+-") in (
                "nan", "inf", "infinity"):
            self.fail(f"{value!r} is not a number of seconds; give one such as 2.5", param, ctx)
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds; give one such as 2.5", param,
                          ctx)
        value = super().convert(value, param, ctx)
        if not math.isfinite(value):
            self.fail(f"{value!r} is not a number of seconds; give one such as 2.5", param, ctx)
        return value


class SizeType(_Parsed):
    """A grid size ``WxH`` in cells: ``(width, height)``."""
    name = "WxH"
    kind = tuple
    parse = staticmethod(parse_size)


def parse_side(value):
    """A square grid's side from ``N`` or ``NxN`` (cells), checked (even, at least 2).

    :raises ValueError: with what to write instead.
    """
    text = str(value).strip().lower()
    if "x" in text:
        width, height = parse_size(text)
        if width != height:
            raise ValueError(f"the benchmarks use square grids, not {value}")
        return width
    try:
        side = int(text)
    except ValueError:
        raise ValueError(f"size {value!r} is not a number of cells (N, for an N x N grid)") \
            from None
    return check_grid_size(side, side)[0]


class SideType(_Parsed):
    """A square grid's side in cells, ``N`` (or ``NxN``): even, at least 2."""
    name = "N"
    parse = staticmethod(parse_side)


def _mesh_shape(text):
    from bitgrid.mesh import MeshShape
    return MeshShape.parse(text)


def _fault_spec(text):
    from bitgrid.faults import FaultSpec
    return text if isinstance(text, FaultSpec) else FaultSpec.parse(text)


class MeshType(_Parsed):
    """A mesh shape ``COLSxROWS`` (chips across x chips down): a
    :class:`~bitgrid.mesh.MeshShape`."""
    name = "COLSxROWS"
    parse = staticmethod(_mesh_shape)


class FaultsType(_Parsed):
    """A link fault spec (:meth:`bitgrid.faults.FaultSpec.parse`)."""
    name = "SPEC"
    parse = staticmethod(_fault_spec)


class SidesType(click.ParamType):
    """Sides of a grid, letters of :data:`bitgrid.terms.SIDES` in any case and order (``""``:
    none); the value is kept as written. A bad letter is bad input: ``error: --OPTION takes
    sides N, E, S, W (e.g. --OPTION E), not '...'`` with exit 2."""
    name = "SIDES"

    def convert(self, value, param, ctx):
        if set(value.upper()) - set(SIDES):
            option = param.opts[0] if param is not None else "SIDES"
            raise BadInput(f"{option} takes sides {', '.join(SIDES)} (e.g. {option} E), not "
                           f"{value!r}")
        return value
