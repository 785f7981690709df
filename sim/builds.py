"""Simulator builds of generated Verilog, cached (see :mod:`bitgrid.sim.cache`).

* :func:`grid_verilog_file`, :func:`host_verilog_file`: the Verilog stage (cached by
  :func:`bitgrid.sim.cache.cached_verilog`, keyed by the generator's source closure);
* :func:`build` / :func:`build_design`: the simulator stage: one folder per build under
  ``build/``, keyed by a SHA-256 of the Verilog text, the simulator and its version, the build
  arguments, the waveform format and the source of the build recipe (this module, the back
  ends and the overrides); Verilator's runtime objects (``verilated*.o``), which do not depend
  on the design, are compiled by the first build and copied into later ones (``runtime/``,
  about 20 s saved per build).

Verilator builds are made cheaper than cocotb's defaults in two ways (measured on a 16x16 grid,
2 cores: 130 s before, about 25 s after): only the top's ports are public (``--public-depth 1``
instead of ``--public-flat-rw``; the test bench touches nothing else), and the design's C++ is
compiled with ``-O0`` (the runs are short; a 32x32 run still takes 2 s). Flattening the Verilog
with Yosys first was measured too and made both simulators slower (Verilator: larger C++;
Icarus: a 32x32 load 5x slower), so the Verilog goes to the simulators as Amaranth writes it.

Progress lines (``building ...``, ``cached ...``) go to stderr; simulator output goes to log
files (named in the error message when something fails), never to stdout.
"""

import contextlib
import dataclasses
import functools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bitgrid import _overrides, processes
from bitgrid.config import check_grid_size
from bitgrid.terms import GATEWARE_STORAGES, check_storage
from bitgrid.toolchain import setup_environment

from . import backends
from .cache import (cache_dir, cached_verilog, dist_version, file_record, locked, module_digest,
                    progress, record_problem, sha256)

__all__ = ["TOP", "HOST_TOP", "PLAYER_TOP", "HOST_DIVISOR", "TOPS", "Build", "SimulationError",
           "grid_verilog_file", "player_verilog_file", "host_verilog_file", "build", "build_design", "recipe_digest",
           "check_build_args", "default_cells", "BUILD_RECORD"]

#: Module name of the simulated grid top.
TOP = "bitgrid_grid"
#: Module name of the simulated host-controller top (``build(..., top="host")``).
HOST_TOP = "bitgrid_host"
#: Clock cycles per UART bit of the simulated host controller (the smallest the UART allows,
#: so that simulated serial links stay fast).
HOST_DIVISOR = 4
#: Module name of the simulated stimulus player top (``build(..., top="player")``).
PLAYER_TOP = "bitgrid_player"
#: Tops that :func:`build` makes.
TOPS = ("grid", "host", "player")


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


# --- The Verilog stage ----------------------------------------------------------------------

def _cells_options(cells):
    """The cache-name suffix and keyword arguments of the Verilog form of the cells (``cells``
    of :func:`bitgrid.hdl.verilog.grid_verilog`): none for the cell instances."""
    from bitgrid.hdl.verilog import check_verilog_cells
    return ("", {}) if check_verilog_cells(cells) == "instances" else ("-flat", {"cells": cells})


def default_cells(simulator, storage="ff", faults=(), engine="direct"):
    """The Verilog form of the cells a build uses unless told: ``"flat"``
    (:mod:`bitgrid.hdl.flat`, the form Icarus runs fast) for Icarus on a direct grid with
    flip-flop storage and no faults; ``"instances"`` (the cell modules the boards build)
    otherwise."""
    flat = simulator == "icarus" and storage == "ff" and not faults and engine == "direct"
    return "flat" if flat else "instances"


def grid_verilog_file(width, height, storage="ff", *, init=None, quiet=False, faults=(),
                      engine="direct", evaluators=None, cells="instances"):
    """Path of the cached Verilog of a ``width`` x ``height`` grid with ``storage``; generated
    with :func:`bitgrid.hdl.verilog.grid_verilog` on first use. With ``init`` (a
    :class:`~bitgrid.Configuration` of that size) the configuration is compiled into the
    gateware (one cache entry per configuration); with ``faults`` (test only, the ``(x, y,
    kind, output, address)`` tuples of :class:`bitgrid.hdl.grid.Grid`) the grid has those
    hardware faults (one cache entry per fault set). ``cells``: ``"instances"`` or ``"flat"``
    (see :func:`bitgrid.hdl.verilog.grid_verilog`).

    :raises GridSizeError: for a size SPEC section 1 does not allow.
    :raises ValueError: for an unknown storage kind or cell form.
    :raises ToolMissingError: if Yosys is needed and missing.
    """
    width, height = check_grid_size(width, height)
    check_storage(storage, GATEWARE_STORAGES)
    from bitgrid.hdl.verilog import grid_verilog
    faults = [list(f) for f in faults]
    if engine != "direct":
        return _multiplexed_file("grid", grid_verilog, width, height, engine, evaluators,
                                 init, faults, quiet, TOP)
    flat, options = _cells_options(cells)
    if faults:
        if init is not None:
            raise ValueError("A faulty grid is built without a fixed configuration")
        return cached_verilog(f"grid-{width}x{height}-{storage}-faulty", grid_verilog,
                              f"a {width}x{height} {storage} grid with {len(faults)} "
                              f"fault(s)", quiet=quiet, width=width, height=height,
                              storage=storage, name=TOP, faults=faults)
    if init is None:
        return cached_verilog(f"grid-{width}x{height}-{storage}{flat}", grid_verilog,
                              f"a {width}x{height} {storage} grid", quiet=quiet, width=width,
                              height=height, storage=storage, name=TOP, **options)
    if (init.width, init.height) != (width, height):
        raise ValueError(f"init is a {init.width} x {init.height} configuration, the grid is "
                         f"{width} x {height}")
    return cached_verilog(f"grid-{width}x{height}-{storage}{flat}-fixed", grid_verilog,
                          f"a {width}x{height} {storage} grid with a fixed configuration",
                          quiet=quiet, width=width, height=height, storage=storage,
                          init=[int(v) for v in init.luts.reshape(-1)], name=TOP, **options)


def engine_tag(engine="direct", evaluators=None, width=2):
    """The part of a build's name that says its engine: ``""`` for the direct grid,
    ``"-mux<evaluators>"`` for the multiplexed engine (:func:`bitgrid.hdl.engines.make_grid`'s
    default evaluators if None).

    :raises ValueError: for an unknown engine or evaluator count.
    """
    from bitgrid.hdl.engines import DEFAULT_EVALUATORS, check_engine
    from bitgrid.hdl.multiplexed import check_evaluators
    if check_engine(engine) == "direct":
        if evaluators is not None:
            raise ValueError("evaluators is an option of the multiplexed engine, not the "
                             "direct grid")
        return ""
    if evaluators is None:
        evaluators = min(DEFAULT_EVALUATORS, max(2, width // 2))
    return f"-mux{check_evaluators(evaluators, width)}"


def _multiplexed_file(kind, generate, width, height, engine, evaluators, init, faults, quiet,
                      top):
    """The cached Verilog of a ``kind`` (``"grid"`` or ``"player"``) top around a multiplexed
    grid (:func:`grid_verilog_file`, :func:`player_verilog_file`)."""
    if faults:
        raise ValueError("faults are injected into the direct grid only")
    tag = engine_tag(engine, evaluators, width)
    options = {}
    if init is not None:
        if (init.width, init.height) != (width, height):
            raise ValueError(f"init is a {init.width} x {init.height} configuration, the grid "
                             f"is {width} x {height}")
        options["init"] = [int(v) for v in init.luts.reshape(-1)]
    return cached_verilog(f"{kind}-{width}x{height}{tag}{'-fixed' if options else ''}",
                          generate, f"a {width}x{height} multiplexed {kind}", quiet=quiet,
                          width=width, height=height, name=top, engine=engine,
                          evaluators=int(tag[4:]), **options)


def player_verilog_file(width, height, storage="ff", *, init=None, quiet=False, faults=(),
                        engine="direct", evaluators=None, cells="instances"):
    """Path of the cached Verilog of a :class:`~bitgrid.hdl.player.Player` (the stimulus
    player, top module :data:`PLAYER_TOP`) around a ``width`` x ``height`` grid; generated with
    :func:`bitgrid.hdl.player.player_verilog` on first use. ``init``, ``faults``, ``cells`` and
    the errors as :func:`grid_verilog_file`.
    """
    width, height = check_grid_size(width, height)
    check_storage(storage, GATEWARE_STORAGES)
    from bitgrid.hdl.player import player_verilog
    faults = [list(f) for f in faults]
    if engine != "direct":
        return _multiplexed_file("player", player_verilog, width, height, engine, evaluators,
                                 init, faults, quiet, PLAYER_TOP)
    if faults and init is not None:
        raise ValueError("A faulty grid is built without a fixed configuration")
    suffix, options = _cells_options(cells)
    what = ""
    if faults:
        options["faults"] = faults
        suffix, what = suffix + "-faulty", f" with {len(faults)} fault(s)"
    elif init is not None:
        if (init.width, init.height) != (width, height):
            raise ValueError(f"init is a {init.width} x {init.height} configuration, the grid "
                             f"is {width} x {height}")
        options["init"] = [int(v) for v in init.luts.reshape(-1)]
        suffix, what = suffix + "-fixed", " with a fixed configuration"
    return cached_verilog(f"player-{width}x{height}-{storage}{suffix}", player_verilog,
                          f"a {width}x{height} {storage} player{what}", quiet=quiet,
                          width=width, height=height, storage=storage, name=PLAYER_TOP,
                          **options)


def host_verilog_file(width, height, storage="ff", divisor=HOST_DIVISOR, *, quiet=False,
                      engine="direct", evaluators=None, cells="instances"):
    """Path of the cached Verilog of a :class:`~bitgrid.hdl.host.HostController` (top module
    :data:`HOST_TOP`) for a ``width`` x ``height`` grid; generated with
    :func:`bitgrid.hdl.verilog.host_verilog` on first use. ``cells`` and the errors as
    :func:`grid_verilog_file`.
    """
    width, height = check_grid_size(width, height)
    check_storage(storage)
    from bitgrid.hdl.verilog import host_verilog
    tag = engine_tag(engine, evaluators, width)
    if tag:
        return cached_verilog(f"host-{width}x{height}{tag}-d{divisor}", host_verilog,
                              f"a {width}x{height} multiplexed host controller", quiet=quiet,
                              width=width, height=height, divisor=divisor, name=HOST_TOP,
                              engine=engine, evaluators=int(tag[4:]))
    flat, options = _cells_options(cells)
    return cached_verilog(f"host-{width}x{height}-{storage}{flat}-d{divisor}", host_verilog,
                          f"a {width}x{height} {storage} host controller", quiet=quiet,
                          width=width, height=height, storage=storage, divisor=divisor,
                          name=HOST_TOP, **options)


# --- The simulator stage --------------------------------------------------------------------

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
    #: :data:`bitgrid.sim.mesh.MESH_TOP` (a mesh of tiles).
    toplevel: str = TOP
    #: The :class:`bitgrid.sim.mesh.MeshDesign` of a mesh build, else None.
    mesh: object = None


@functools.lru_cache(maxsize=None)
def recipe_digest():
    """Hash of the source of the build recipe: this module, :mod:`bitgrid.sim.backends` and
    :mod:`bitgrid._overrides` (what decides a build besides the data in its key)."""
    return module_digest(__name__, backends.__name__, _overrides.__name__)


def build(width, height, *, storage="ff", simulator="icarus", waves=None, quiet=False,
          top="grid", divisor=HOST_DIVISOR, init=None, build_args=(), faults=(),
          engine="direct", evaluators=None, cells=None):
    """Build (or find in the cache) the simulation model of a grid.

    :param waves: ``None``, ``"vcd"`` or ``"fst"``: a waveform build (a separate cache entry).
    :param init: a :class:`~bitgrid.Configuration` compiled into the gateware (the
        fixed-configuration build; grid top only), see :func:`grid_verilog_file`.
    :param build_args: extra arguments of the simulator's compiler (``iverilog``,
        ``verilator``), e.g. ``("--x-assign", "unique")``: strings, part of the cache key.
    :param faults: test only: a grid with injected hardware faults (grid top only, no
        ``init``), see :func:`grid_verilog_file`.
    :param engine, evaluators: the grid engine (``"direct"`` or ``"multiplexed"`` with
        ``evaluators`` cells per clock; grid and player tops), see
        :func:`bitgrid.hdl.engines.make_grid`; part of the build's name.
    :param top: ``"grid"`` (top :data:`TOP`, :func:`grid_verilog_file`) or ``"host"`` (the
        grid behind its host controller, top :data:`HOST_TOP`, :func:`host_verilog_file` with
        ``divisor`` clock cycles per UART bit; no waveform builds).
    :param cells: the Verilog form of the direct grid's cells, ``"instances"`` (the cell
        modules the boards build) or ``"flat"`` (:mod:`bitgrid.hdl.flat`, proved equal);
        default :func:`default_cells` (flat on Icarus for flip-flop storage). Part of the
        build's name.
    :returns: :class:`Build`.
    :raises GridSizeError, ValueError: for bad parameters.
    :raises ToolMissingError: if the simulator (or Yosys) is not installed.
    :raises SimulationError: if the build fails (the message holds the end of the log).
    """
    width, height = check_grid_size(width, height)
    check_storage(storage, GATEWARE_STORAGES)
    backend = backends.backend(simulator)
    if waves not in (None, "vcd", "fst"):
        raise ValueError(f"waves must be None, 'vcd' or 'fst', not {waves!r}")
    if top not in TOPS:
        raise ValueError(f"top must be 'grid', 'host' or 'player', not {top!r}")
    faults = tuple(faults)
    if top == "host" and (waves or init is not None or faults):
        raise ValueError("waveform and fixed-configuration builds are only made of the grid "
                         "top")
    build_args = check_build_args(build_args)
    tag = engine_tag(engine, evaluators, width)
    if cells is None:
        cells = default_cells(simulator, storage, faults, engine)
    flat, _ = _cells_options(cells)
    setup_environment()
    backend.require(waves)
    forms = dict(engine=engine, evaluators=evaluators, cells=cells)
    if top == "host":
        verilog = host_verilog_file(width, height, storage, divisor, quiet=quiet, **forms)
        toplevel, prefix = HOST_TOP, f"host-d{divisor}-"
    elif top == "player":
        verilog = player_verilog_file(width, height, storage, init=init, quiet=quiet,
                                      faults=faults, **forms)
        toplevel, prefix = PLAYER_TOP, "player-"
    else:
        verilog = grid_verilog_file(width, height, storage, init=init, quiet=quiet,
                                    faults=faults, **forms)
        toplevel, prefix = TOP, ""
    fixed = flat + ("" if init is None else "-fixed")
    fixed += "-faulty" if faults else ""
    label = (f"{simulator} {'' if top == 'grid' else top + ' '}{width}x{height} "
             f"{'multiplexed ' + tag[4:] if tag else storage}{' flat' if flat else ''}"
             f"{' fixed' if init is not None else ''}{' faulty' if faults else ''}")
    return build_design(verilog, toplevel, f"{prefix}{width}x{height}-{storage}{tag}{fixed}",
                        label,
                        simulator=simulator, waves=waves, quiet=quiet, width=width,
                        height=height, storage=storage, build_args=build_args)


def check_build_args(build_args):
    """``build_args`` as a tuple of strings.

    :raises TypeError: if it is a string or holds something other than strings.
    """
    if isinstance(build_args, (str, bytes)):
        raise TypeError(f"build_args must be a list of strings, not the string {build_args!r}")
    build_args = tuple(build_args)
    for arg in build_args:
        if not isinstance(arg, str):
            raise TypeError(f"build_args must be strings, not {arg!r}")
    return build_args


def build_design(verilog, toplevel, stem, label, *, simulator, waves, quiet, width, height,
                 storage, mesh=None, build_args=()):
    """Build (or find in the cache) the simulation model of the Verilog file ``verilog`` with top
    module ``toplevel``; ``stem`` names the cache entry, ``label`` the progress lines;
    ``build_args`` are added to the backend's (see :func:`build`)."""
    backend = backends.backend(simulator)
    text = verilog.read_bytes()
    build_args = list(backend.build_args) + list(check_build_args(build_args))
    extra_source = ""
    if waves:
        build_args += backend.wave_build_args[waves]
        extra_source = backend.wave_sources
    options = dict(backend.build_options)
    version = backends.simulator_version(simulator)
    key = sha256(text, toplevel, simulator, version, json.dumps(build_args),
                 json.dumps(options), json.dumps(backend.replace_build_args),
                 json.dumps(backend.make_args), waves, extra_source, dist_version("cocotb"),
                 recipe_digest(), _installation(backend))
    name = f"{simulator}-{stem}{'-' + waves if waves else ''}-{key[:20]}"
    root = cache_dir() / "build"
    final = root / name
    label = f"{label}{' with ' + waves.upper() if waves else ''}"
    result = functools.partial(Build, simulator, width, height, storage, waves, final, verilog,
                               toplevel=toplevel, mesh=mesh)
    if final.is_dir() and _build_problem(final) is None:
        progress(f"cached {label} build ({final})", quiet)
        return result(0.0, True)
    with contextlib.ExitStack() as locks:
        locks.enter_context(locked(root / f".{name}.lock"))
        if final.is_dir():
            problem = _build_problem(final)
            if problem is None:
                progress(f"cached {label} build ({final})", quiet)
                return result(0.0, True)
            progress(f"cached {label} build {final} is damaged ({problem}): building it "
                     "again", quiet)
            _discard(final)
        runtime = _runtime_dir(backend, waves)
        if runtime is not None and not runtime.is_dir():
            # The first build compiles the runtime objects; others wait for them rather than
            # compile them too (locks are always taken in this order: build, then runtime).
            locks.enter_context(locked(runtime.parent / f".{runtime.name}.lock"))
        progress(f"building {label} ...", quiet)
        start = time.monotonic()
        temporary = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
        try:
            reused = _build_into(temporary, backend, verilog, build_args, waves, extra_source,
                                 options, runtime, label, root / f"failed-{name}", toplevel)
            seconds = time.monotonic() - start
            products = {}
            for product in backend.products:
                product = product.format(toplevel=toplevel)
                if not (temporary / product).is_file():
                    raise SimulationError(f"{label} build made no {product}",
                                          temporary / "build.log")
                products[product] = file_record(temporary / product)
            (temporary / BUILD_RECORD).write_text(json.dumps({
                "simulator": simulator, "version": version,
                "width": width, "height": height, "storage": storage, "waves": waves,
                "build_args": build_args, "verilog": str(verilog),
                "seconds": round(seconds, 3), "products": products}, indent=1))
            os.rename(temporary, final)
        finally:
            shutil.rmtree(temporary, ignore_errors=True)     # only if something failed
        progress(f"built {label} in {seconds:.1f} s"
                 f"{' (runtime objects from the cache)' if reused else ''}", quiet)
    return result(seconds, False)


#: The record of a finished build, in its folder: what it was made from, and the size and
#: SHA-256 of each of :attr:`~bitgrid.sim.backends.Backend.products`.
BUILD_RECORD = "bitgrid-build.json"


def _build_problem(directory):
    """What is wrong with the finished build ``directory`` (a product missing, truncated or
    changed against :data:`BUILD_RECORD`), in a few words, or None."""
    try:
        products = json.loads((directory / BUILD_RECORD).read_text())["products"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{BUILD_RECORD} is missing or unreadable"
    for product, record in products.items():
        problem = record_problem(directory / product, record)
        if problem is not None:
            return f"{product} {problem}"
    return None


def _discard(directory):
    """Remove a damaged build folder (renamed aside first, so that no one finds it half
    removed)."""
    aside = directory.with_name(f".{directory.name}.damaged.{os.getpid()}")
    with contextlib.suppress(OSError):
        os.rename(directory, aside)
    shutil.rmtree(aside, ignore_errors=True)


def runner_for(backend, *, before_make=(), suffix=()):
    """cocotb's runner for ``backend`` with its build edits
    (:attr:`~bitgrid.sim.backends.Backend.replace_build_args`,
    :attr:`~bitgrid.sim.backends.Backend.make_args`); see
    :func:`bitgrid._overrides.cocotb_runner`."""
    setup_environment()
    return _overrides.cocotb_runner(backend.name, replacements=dict(backend.replace_build_args),
                                    make_args=backend.make_args, before_make=before_make,
                                    suffix=suffix)


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
    reused = _runtime_files(runtime)
    runner = runner_for(backend, before_make=reused)
    try:
        runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=directory,
                     build_args=build_args, waves=backend.wave_runner_flag and bool(waves),
                     always=True, log_file=directory / "build.log", **options)
    except processes.Terminated:          # SIGTERM: the build's tools have been ended
        raise
    except (RuntimeError, SystemExit, subprocess.CalledProcessError) as error:
        shutil.rmtree(failed, ignore_errors=True)
        os.replace(directory, failed)
        raise SimulationError(f"{label} build failed ({error})", failed / "build.log") from None
    if not reused:
        _keep_runtime(backend, runtime, directory)
    return bool(reused)


def _installation(backend):
    """Where this installation's simulator tools and cocotb live: a built model links cocotb's
    libraries by path (a Verilator binary loads ``libcocotbvpi_verilator.so`` from the
    virtualenv that built it), so a build made by another installation, perhaps since
    removed, must not be reused."""
    import cocotb
    tools = [os.path.realpath(shutil.which(tool) or tool) for tool in backend.tools]
    return json.dumps([os.path.realpath(os.path.dirname(cocotb.__file__)), tools])


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
    # The objects' dependency files name the simulator's include folder: a runtime built by
    # another installation (another virtualenv, since removed) must not be reused.
    tools = [os.path.realpath(shutil.which(tool) or tool) for tool in backend.tools]
    key = sha256(backends.simulator_version(backend.name), waves, compiler, version,
                 json.dumps(env, sort_keys=True), json.dumps(backend.make_args), recipe_digest(),
                 json.dumps(tools))
    return cache_dir() / "runtime" / f"{backend.name}-{waves or 'plain'}-{key[:20]}"


def _runtime_files(runtime):
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
