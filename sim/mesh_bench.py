"""Old name of :mod:`bitgrid.sim.testbench.mesh` (kept importable until the final sweep)."""

from .testbench.mesh import *  # noqa: F401,F403
from .testbench.mesh import __all__  # noqa: F401
