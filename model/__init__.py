"""BitGrid: a homogeneous grid of 4-input/4-output LUT cells, clocked in two phases.

The package ``bitgrid`` holds the software model of the architecture (this folder: cell
conventions, configurations, BGBS bitstreams, the reference emulator, vector files, the program
builder and the command line) and, as subpackages, the gateware (``bitgrid.hdl``), the simulation
runners and test benches (``bitgrid.sim``) and the board tops (``bitgrid.boards``).
``SPEC.md`` in the shared folder is the architecture contract.
"""

from .cell import (Direction, N, E, S, W, DIRECTIONS, tables_to_word, word_to_tables,
                   lut_from_function, PASS_THROUGH, REFLECTOR)
from .config import Configuration, GridSizeError
from .bitstream import Bitstream, BitstreamError, ScanOrder
from .emulator import Edges, Emulator
from .fastemu import FastEmulator

__version__ = "0.1.0"

__all__ = ["Direction", "N", "E", "S", "W", "DIRECTIONS", "tables_to_word", "word_to_tables",
           "lut_from_function", "PASS_THROUGH", "REFLECTOR", "Configuration", "GridSizeError",
           "Bitstream", "BitstreamError", "ScanOrder", "Edges", "Emulator", "FastEmulator"]


def compile(design=None, **options):
    """Compile a Verilog, Amaranth or ``expr=`` design into a BitGrid program: the same as
    :func:`bitgrid.compiler.compile` (issue 12), e.g.
    ``bitgrid.compile(expr="p = a * b", vars="a:8,b:8")`` ->
    ``CompileResult(config, portmap, report)``. Not in ``__all__`` (it would hide the
    built-in ``compile`` in ``from bitgrid import *``)."""
    from .compiler import compile as compile_design
    return compile_design(design, **options)
