"""Random configurations for the emulator tests."""

import numpy as np

from bitgrid import Configuration
from bitgrid.cell import PASS_THROUGH, REFLECTOR

__all__ = ["mixed_config"]


def mixed_config(width, height, rng):
    """Random LUTs mixed with walls (all-zero cells), pass-through and reflector cells; ``rng``
    a :class:`random.Random`."""
    luts = np.array([[rng.getrandbits(16) for _ in range(4 * width)] for _ in range(height)],
                    dtype=np.uint16).reshape(height, width, 4)
    kinds = np.array([[rng.random() for _ in range(width)] for _ in range(height)])
    luts[kinds < 0.1] = 0
    luts[(kinds >= 0.1) & (kinds < 0.25)] = PASS_THROUGH
    luts[(kinds >= 0.25) & (kinds < 0.35)] = REFLECTOR
    return Configuration(width, height, luts)
