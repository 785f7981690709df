"""Old name of :mod:`bitgrid.sim.testbench.host` (kept importable until the final sweep)."""

from .testbench.host import *  # noqa: F401,F403
from .testbench.host import __all__  # noqa: F401
