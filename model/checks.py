"""Argument checks shared by every constructor and function of the project.

One helper per kind of value, each returning the value (converted to a plain Python type) or
raising with the offending value in the message, so constructors read as a list of checks::

    self._lanes = check_int(lanes, "lanes", minimum=1)
    self._ddr = check_bool(ddr, "ddr")
"""

import numbers

__all__ = ["check_int", "check_bool", "check_real", "check_choice"]


def check_int(value, name, *, minimum=None, maximum=None, even=False, error=ValueError):
    """``int(value)`` if ``value`` is an integer (not a bool) in ``minimum .. maximum``
    (inclusive; None for no bound) and, with ``even``, even.

    :raises ValueError: (or ``error``) ``<name> must be an integer ..., not <value!r>``.
    """
    bounds = _bounds(minimum, maximum)
    kind = "an even integer" if even else "an integer"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or (minimum is not None and value < minimum) \
            or (maximum is not None and value > maximum) or (even and value % 2):
        raise error(f"{name} must be {kind}{bounds}, not {value!r}")
    return int(value)


def check_real(value, name, *, minimum=None, maximum=None, error=ValueError):
    """``float(value)`` if ``value`` is a real number (not a bool, not NaN) in
    ``minimum .. maximum`` (inclusive).

    :raises ValueError: (or ``error``) ``<name> must be a number ..., not <value!r>``.
    """
    bounds = _bounds(minimum, maximum)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != value \
            or (minimum is not None and value < minimum) \
            or (maximum is not None and value > maximum):
        raise error(f"{name} must be a number{bounds}, not {value!r}")
    return float(value)


def check_bool(value, name, *, error=ValueError):
    """``value`` if it is ``True`` or ``False``.

    :raises ValueError: (or ``error``) ``<name> must be True or False, not <value!r>``.
    """
    if not isinstance(value, bool):
        raise error(f"{name} must be True or False, not {value!r}")
    return value


def check_choice(value, name, choices, *, error=ValueError):
    """``value`` if it is one of ``choices``.

    :raises ValueError: (or ``error``) ``<name> must be one of 'a', 'b', not <value!r>``.
    """
    if value not in choices:
        raise error(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return value


def _bounds(minimum, maximum):
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" of at least {minimum}"
    if maximum is not None:
        return f" of at most {maximum}"
    return ""
