"""The base of the project's parametrised interface signatures."""

from amaranth.lib import wiring

__all__ = ["ParametricSignature"]


class ParametricSignature(wiring.Signature):
    """A :class:`amaranth.lib.wiring.Signature` defined by a few parameters, kept as attributes
    of the same names (:class:`~bitgrid.hdl.grid.EdgeSignature`,
    :class:`~bitgrid.hdl.link.LanePinsSignature`, ...).

    Two such signatures are equal when they are of the same class with equal parameters
    (Amaranth compares the signatures of members, so ``In(EdgeSignature(4, 6))`` equals another
    ``In(EdgeSignature(4, 6))``), and the repr is the constructor call. A subclass names its
    positional parameters in :attr:`parameters` and its keyword-only ones in :attr:`keywords`.
    """

    #: Names of the positional parameters, in order.
    parameters = ()
    #: Names of the keyword-only parameters.
    keywords = ()

    def _key(self):
        return tuple(getattr(self, name) for name in (*self.parameters, *self.keywords))

    def __eq__(self, other):
        return type(other) is type(self) and other._key() == self._key()

    def __repr__(self):
        arguments = [repr(getattr(self, name)) for name in self.parameters]
        arguments += [f"{name}={getattr(self, name)!r}" for name in self.keywords]
        return f"{type(self).__name__}({', '.join(arguments)})"
