"""The pipelined n x n multiplier (placeholder while it is being designed)."""

from .block import LibraryError


def multiplier(bits):
    raise LibraryError("multiplier: not yet built")
