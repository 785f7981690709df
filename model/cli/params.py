"""Click parameter types of the ``bitgrid`` command line: grid sizes, square sides, mesh shapes,
link fault specs and sides."""

import click

from bitgrid.config import GridSizeError, check_grid_size
from bitgrid.terms import SIDES

from .errors import BadInput

__all__ = ["SizeType", "SideType", "MeshType", "FaultsType", "SidesType", "parse_size"]


def parse_size(text):
    """``(width, height)`` from ``WxH`` (cells), checked (both even, at least 2).

    :raises BadInput: with what to write instead.
    """
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise BadInput(f"size {text!r} is not of the form WxH, for example 8x8") from None
    try:
        return check_grid_size(w, h)
    except GridSizeError as error:
        raise BadInput(str(error)) from None


class SizeType(click.ParamType):
    """A grid size ``WxH`` in cells: ``(width, height)``."""
    name = "WxH"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return parse_size(value)
        except BadInput as error:
            self.fail(error.format_message(), param, ctx)


class SideType(SizeType):
    """A square grid's side in cells, ``N`` (or ``NxN``): even, at least 2."""
    name = "N"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            value = str(value)
        text = value.strip().lower()
        if "x" in text:
            width, height = super().convert(text, param, ctx)
            if width != height:
                self.fail(f"the benchmarks use square grids, not {value}", param, ctx)
            return width
        try:
            side = int(text)
        except ValueError:
            self.fail(f"size {value!r} is not a number of cells (N, for an N x N grid)", param,
                      ctx)
        try:
            return check_grid_size(side, side)[0]
        except GridSizeError as error:
            self.fail(str(error), param, ctx)


class MeshType(click.ParamType):
    """A mesh shape ``COLSxROWS`` (chips across x chips down): a
    :class:`~bitgrid.mesh.MeshShape`."""
    name = "COLSxROWS"

    def convert(self, value, param, ctx):
        from bitgrid.mesh import MeshShape
        try:
            return MeshShape.parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


class FaultsType(click.ParamType):
    """A link fault spec (:meth:`bitgrid.faults.FaultSpec.parse`)."""
    name = "SPEC"

    def convert(self, value, param, ctx):
        from bitgrid.faults import FaultSpec
        if isinstance(value, FaultSpec):
            return value
        try:
            return FaultSpec.parse(value)
        except ValueError as error:
            self.fail(str(error), param, ctx)


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
