"""Macros: named, parameterised builders of :class:`~bitgrid.library.block.Block` s.

A :class:`Macro` has a ``name``, a one-line ``doc``, its :class:`Param` s (name, type, default,
range) and ``build(**params) -> Block``. Parameters are checked before anything is built
(:class:`~bitgrid.library.block.LibraryError`, a ValueError, naming the macro, the parameter and
its range).
"""

import typing

from ..checks import check_bool, check_choice, check_int
from .block import LibraryError

__all__ = ["Param", "Macro"]


class Param(typing.NamedTuple):
    """One macro parameter: ``kind`` is ``"int"``, ``"bool"`` or ``"choice"``; ``minimum`` and
    ``maximum`` bound an int (None: unbounded), ``choices`` lists a choice's values."""
    name: str
    kind: str
    default: object
    doc: str
    minimum: typing.Optional[int] = None
    maximum: typing.Optional[int] = None
    choices: tuple = ()

    def check(self, value, macro):
        """``value`` converted and checked. :raises LibraryError: naming macro and parameter."""
        what = f"{macro} parameter {self.name}"
        try:
            if self.kind == "int":
                return check_int(value, what, minimum=self.minimum, maximum=self.maximum)
            if self.kind == "bool":
                return check_bool(value, what)
            return check_choice(value, what, self.choices)
        except ValueError as error:
            raise LibraryError(str(error)) from None

    def describe(self):
        """``bits: int 1..16, default 4 -- operand width``."""
        if self.kind == "int":
            low = "" if self.minimum is None else str(self.minimum)
            high = "" if self.maximum is None else str(self.maximum)
            kind = f"int {low}..{high}"
        elif self.kind == "choice":
            kind = "one of " + "/".join(map(str, self.choices))
        else:
            kind = "bool"
        return f"{self.name}: {kind}, default {self.default} -- {self.doc}"


class Macro:
    """A named block builder. ``macro.build(bits=8)`` (or ``macro(bits=8)``) returns the
    :class:`~bitgrid.library.block.Block`.

    :param name: the macro's name (the key in :data:`bitgrid.library.MACROS`).
    :param doc: one line saying what it builds.
    :param params: :class:`Param` s.
    :param builder: ``builder(**checked_params) -> Block``.
    """

    def __init__(self, name, doc, params, builder):
        self.name, self.doc, self.params = name, doc, tuple(params)
        self._builder = builder

    def __repr__(self):
        return f"Macro({self.name}: {self.doc})"

    @property
    def defaults(self):
        """{name: default} of every parameter."""
        return {p.name: p.default for p in self.params}

    def check(self, params):
        """The full, checked parameter dict for ``params`` (defaults filled in).

        :raises LibraryError: for an unknown parameter or a value out of range."""
        known = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise LibraryError(f"Macro {self.name} has no parameter {unknown[0]!r}; its "
                               f"parameters are {', '.join(known) or '(none)'}")
        return {name: p.check(params.get(name, p.default), self.name)
                for name, p in known.items()}

    def build(self, **params):
        """The :class:`~bitgrid.library.block.Block` for ``params`` (see :attr:`params`)."""
        return self._builder(**self.check(params))

    __call__ = build
