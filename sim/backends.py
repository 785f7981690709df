"""The simulators this layer drives (Icarus Verilog and Verilator), as data.

Both simulators go through the same code (:mod:`bitgrid.sim.builds`, :mod:`bitgrid.sim.runner`);
what differs between them is a :class:`Backend` in :data:`BACKENDS`: the tools, the build
arguments, how waveforms are switched on. This module also checks that the tools are installed
and names their versions (which go into the build cache key).
"""

import contextlib
import dataclasses
import functools
import importlib.metadata
import os
import subprocess

from bitgrid import toolchain
from bitgrid.terms import SIMULATORS, check_simulator
from bitgrid.toolchain import ToolMissingError

__all__ = ["SIMULATORS", "WAVE_FORMATS", "Backend", "BACKENDS", "LibraryMissingError",
           "backend", "simulator_version", "wave_format", "available"]

#: Waveform formats, by file extension.
WAVE_FORMATS = {".vcd": "vcd", ".fst": "fst"}

# Icarus has no switch to dump a design without a helper module; this one dumps only when the
# plusarg names a file, so that one build serves every file name. The format (VCD or FST) is
# chosen at run time by vvp's extended argument (-vcd / -fst).
_ICARUS_DUMP_MODULE = """\
module bitgrid_waves;
  reg [8*1024-1:0] path;
  initial begin
    if ($value$plusargs("bitgrid_waves=%s", path)) begin
      $dumpfile(path);
      $dumpvars;
    end
  end
endmodule
"""


@dataclasses.dataclass(frozen=True)
class Backend:
    """What differs between simulators; everything else is shared code.

    :attr name: cocotb's runner name.
    :attr tools: executables needed (build and run), checked with
        :func:`bitgrid.toolchain.require_tool`.
    :attr version_command: command whose output identifies the simulator version.
    :attr distribution: Python distribution that ships the simulator, if any (its version also
        goes into the cache key).
    :attr build_args: extra build arguments, always.
    :attr build_options: extra keyword arguments to ``Runner.build``.
    :attr wave_build_args: per wave format, extra build arguments of a waveform build.
    :attr wave_sources: Verilog text compiled into a waveform build (besides the grid).
    :attr wave_runner_flag: pass ``waves=True`` to cocotb's build and test (it then adds its own
        trace switches).
    :attr wave_test_args: per wave format, extra run arguments; ``{path}`` is the dump file.
    :attr wave_plusargs: run-time plusargs of a waveform run; ``{path}`` is the dump file.
    :attr wave_suffix: per wave format, arguments placed last on the simulator command line.
    :attr runtime_objects: glob patterns of the object files of the simulator's runtime, which
        do not depend on the design; they (and their ``.d`` files) are kept after the first
        build and put into the build folder of later ones, so that ``make`` does not compile
        them again (it compiles whatever is missing).
    :attr wave_headers: per wave format, ``(header, system package)`` pairs that the C++
        compiler must find for a waveform build.
    :attr replace_build_args: ``(argument, replacement tuple)`` pairs applied to the build
        commands that cocotb makes.
    :attr make_args: extra arguments of the ``make`` command of the build, if there is one.
    :attr products: the files of a finished build that a run needs (``{toplevel}``: the top
        module's name); their size and SHA-256 are recorded in the build's
        ``bitgrid-build.json`` and checked before each use.
    """
    name: str
    tools: tuple
    version_command: tuple
    distribution: str = None
    build_args: tuple = ()
    build_options: tuple = ()
    wave_build_args: dict = dataclasses.field(default_factory=dict)
    wave_sources: str = ""
    wave_runner_flag: bool = False
    wave_test_args: dict = dataclasses.field(default_factory=dict)
    wave_plusargs: tuple = ()
    wave_suffix: dict = dataclasses.field(default_factory=dict)
    runtime_objects: tuple = ()
    wave_headers: dict = dataclasses.field(default_factory=dict)
    replace_build_args: tuple = ()
    make_args: tuple = ()
    products: tuple = ()

    def require(self, waves=None):
        """Check that the tools (and, for a waveform build, the headers) are installed.

        :raises ToolMissingError: naming the tool or package and how to install it.
        """
        for tool in self.tools:
            toolchain.require_tool(tool, f"simulate with {self.name}")
        for header, package in self.wave_headers.get(waves, ()):
            if not have_header(header):
                raise LibraryMissingError(header, package,
                                          f"write {waves.upper()} waveforms with {self.name}")


class LibraryMissingError(ToolMissingError):
    """A C/C++ library that a build needs is not installed; the message says how to install
    it."""

    def __init__(self, header, package, purpose=None):
        self.tool = package
        self.header = header
        what = f" (needed to {purpose})" if purpose else ""
        RuntimeError.__init__(self, f"The C++ compiler cannot find {header}{what}. Install it "
                              f"with: apt-get install {package}   (Debian/Ubuntu)")


@functools.lru_cache(maxsize=None)
def _have_header(header):
    compiler = os.environ.get("CXX", "c++")
    try:
        result = subprocess.run([compiler, "-E", "-x", "c++", "-"], input=f"#include <{header}>\n",
                                capture_output=True, text=True)
    except OSError:
        return False
    return result.returncode == 0


def have_header(header):
    """Whether the C++ compiler (``$CXX``, else ``c++``) finds ``#include <header>``."""
    return _have_header(header)


BACKENDS = {
    "icarus": Backend(
        name="icarus",
        tools=("iverilog", "vvp"),
        version_command=("iverilog", "-V"),
        # cocotb needs a timescale to write its command file; without one Icarus and the
        # test bench disagree on time units.
        build_options=(("timescale", ("1ns", "1ps")),),
        # Yosys' Verilog evaluates each `always @*` block once at time 0 through the event of a
        # variable initialiser (`reg trigger = 0`); Verilog-2005 semantics make that an event,
        # SystemVerilog's (cocotb's default -g2012) do not, and a block whose inputs never change
        # (a state machine resting in its first state) then stays X for ever.
        replace_build_args=(("-g2012", ("-g2005",)),),
        wave_build_args={"vcd": ("-s", "bitgrid_waves"), "fst": ("-s", "bitgrid_waves")},
        wave_sources=_ICARUS_DUMP_MODULE,
        wave_plusargs=("+bitgrid_waves={path}",),
        # cocotb appends -none (no waves) to vvp's arguments; the last dumper switch wins.
        wave_suffix={"vcd": ("-vcd",), "fst": ("-fst",)},
        products=("sim.vvp",),
    ),
    "verilator": Backend(
        name="verilator",
        tools=("verilator", "make", "g++"),
        version_command=("verilator", "--version"),
        distribution="verilator",
        # Amaranth's Verilog trips WIDTH and other lint warnings, which are fatal by default.
        build_args=("-Wno-fatal", "-Wno-lint", "-Wno-style"),
        wave_build_args={"vcd": ("--trace",), "fst": ("--trace-fst",)},
        wave_runner_flag=True,
        wave_test_args={"vcd": ("--trace-file", "{path}"), "fst": ("--trace-file", "{path}")},
        # About 20 s of compilation per build on this machine; the design itself is compiled
        # separately (Vtop__ALL), as is cocotb's verilator.cpp (it includes the design's header).
        runtime_objects=("verilated*.o",),
        # Verilator 5.048's FST writer includes lz4.h and links -llz4.
        wave_headers={"fst": (("lz4.h", "liblz4-dev"),)},
        # cocotb makes every signal of every cell public (VPI-visible); the test bench only uses
        # the top's ports, and keeping the rest private halves the C++ to compile.
        replace_build_args=(("--public-flat-rw", ("--public-depth", "1")),),
        # The test runs are short and the generated C++ is large: compiling it without
        # optimisation is several times faster than with the default -Os, and the runs still
        # take less time than the compilation saved (see the measurements in tests/test_sim.py).
        make_args=("OPT_FAST=-O0", "OPT_SLOW=-O0"),
        products=("{toplevel}",),          # the model's executable
    ),
}


def backend(simulator):
    """The :class:`Backend` of ``simulator``.

    :raises ValueError: ``Simulator must be one of 'icarus', 'verilator', not 'x'``.
    """
    return BACKENDS[check_simulator(simulator)]


def wave_format(path):
    """The waveform format (``"vcd"`` or ``"fst"``) of dump file ``path``, by its extension.

    :raises ValueError: for another extension.
    """
    ext = os.path.splitext(os.fspath(path))[1].lower()
    try:
        return WAVE_FORMATS[ext]
    except KeyError:
        raise ValueError(f"Waveform file {os.fspath(path)!r} must end in .vcd or .fst") from None


@functools.lru_cache(maxsize=None)
def simulator_version(simulator):
    """A string identifying the installed version of ``simulator`` (for the cache key).

    :raises ToolMissingError: if it is not installed.
    """
    chosen = backend(simulator)
    chosen.require()
    result = subprocess.run(list(chosen.version_command), capture_output=True, text=True)
    text = (result.stdout or result.stderr).strip().splitlines()
    version = text[0].strip() if text else "unknown"
    if chosen.distribution:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            version += f" ({chosen.distribution} "
            version += importlib.metadata.version(chosen.distribution) + ")"
    return version


def available(simulator):
    """Whether the tools of ``simulator`` are installed (no exception)."""
    return all(toolchain.find_tool(tool) is not None for tool in backend(simulator).tools)
