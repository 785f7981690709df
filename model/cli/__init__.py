"""The ``bitgrid`` command line (also ``python -m bitgrid``): thin commands over the library.

One module per family of commands: :mod:`.verilog`, :mod:`.run` (``emulate``, ``sim``,
``run``), :mod:`.bitstream`, :mod:`.examples` (``example``, ``demo``), :mod:`.bench` and
:mod:`.boards` (``boards``, ``build``, ``flash``); :mod:`.params` holds the parameter types,
:mod:`.common` the shared options and printing, and :mod:`.errors` the exit status contract
(0 success, every step matched; 1 a step did not match; 2 bad input, a missing tool or an
internal error, with one line ``error: ...`` and never a traceback).
"""

import click

from bitgrid import __version__

from . import bench, bitstream, boards, examples, run, verilog
from . import asic as _asic
from . import asm as _asm
from . import bist as _bist
from . import compile as _compile
from . import eval as _eval
from . import isolate as _isolate
from . import library as _library
from . import place as _place
from . import serve as _serve
from . import transform as _transform
from . import view as _view
from .errors import EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_OK, BadInput, Group

__all__ = ["main", "BadInput", "EXIT_OK", "EXIT_MISMATCH", "EXIT_BAD_INPUT"]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bitgrid")
def main():
    """BitGrid: generate, emulate and simulate grids of two-phase 4-input LUT cells.

    Exit status: 0 success (every step matched), 1 a step did not match, 2 bad input or a
    missing tool.
    """


# The commands in the order of `bitgrid --help`'s source (click lists them sorted); the
# package's attributes stay the modules (bitgrid.cli.run is the module of `bitgrid run`).
for _command in (verilog.verilog, run.emulate, run.sim, bitstream.bitstream, examples.example,
                 examples.demo, bench.bench, run.run, boards.boards, boards.build, boards.flash,
                 _eval.eval_, _isolate.isolate, _place.place, _asm.asm, _asm.disasm,
                 _transform.transform, _view.view, _compile.compile_, _library.macro,
                 _bist.bist, _asic.asic, _serve.serve, _serve.client):
    main.add_command(_command)
del _command
