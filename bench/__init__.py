"""BitGrid's benchmark suite (``make bench``, ``python -m bitgrid.bench``, ``bitgrid bench``).

Eight parts, each a function that returns its figures (``{"value", "unit"}``, see
:mod:`.common`) and the growth exponents of its costs against the cell count:

* ``emulator`` (:func:`.emulator.measure`): cell updates per second of the reference emulator
  and the bit-parallel one side by side, and stream-cell updates per second of the bit-parallel
  one's lane-parallel mode; a cell update is one cell evaluated (half the grid per subcycle);
* ``verilog`` (:func:`.verilog.measure`): time and size of ``grid_verilog``;
* ``sim`` (:func:`.sim.measure`): cold build time and back-to-back subcycles per second on
  Icarus and Verilator (cocotb) and in Amaranth's simulator;
* ``boards`` (:func:`.boards.measure`): per FPGA board, the largest grid placed and routed,
  its resources, Fmax and cell updates per second on the board, read from the ``report.json``
  of earlier ``bitgrid build`` runs (each row names its file; nothing is rebuilt unless asked);
* ``mesh`` (:func:`.mesh.measure`): cycles per subcycle of a simulated 2 x 1 mesh (Icarus)
  against lanes, SDR/DDR and line delay, next to the bound set by serialisation and latency,
  and the payload share of the line bits;
* ``compile`` (:func:`.compile.measure`): per test design of ``bitgrid compile`` and growing
  multipliers and adders, Yosys' LUT count, the cells used (logic, routing, delay), period,
  latency and compile time per stage;
* ``mpi`` (:func:`.mpi.measure`): strong and weak scaling of the emulation across MPI ranks
  (:mod:`bitgrid.mpi`) on 1, 2 and 4 ranks, with the bytes and cells of each rank per exchange;
* ``serve`` (:func:`.serve.measure`): ``bitgrid serve`` over loopback TCP: STEP 1 round trips
  per second, and subcycles per second of a 2 x 2 mesh of linked servers per forwarding policy.

:func:`run_suite` runs them all and :mod:`.report` adds the performance goals, the tables and
the plot.
The command line (``bitgrid bench``, ``python -m bitgrid.bench``) is :mod:`bitgrid.cli.bench`.
Not tests: nothing here asserts a timing (``tests/test_bench.py`` checks that it works).
"""

import datetime
import importlib
import sys

from .common import (check_sizes, document, figure, load_average, machine_info, timer,
                     write_json)

__all__ = ["PARTS", "run_part", "format_part", "run_suite", "format_suite", "quick_options",
           "suite_options", "document", "write_json", "check_sizes", "figure"]

#: The parts, in the order the suite runs them.
PARTS = ("emulator", "verilog", "sim", "boards", "mesh", "compile", "mpi", "serve")



def _module(name):
    # Imported on use, so that ``python -m bitgrid.bench.emulator`` (and the others) run their
    # module once, as __main__, without runpy's warning.
    return importlib.import_module(f"{__name__}.{name}")


def run_part(name, sizes=None, *, progress=True, **options):
    """Run one part (``"emulator"``, ``"verilog"``, ``"sim"`` or ``"boards"``) on ``sizes``
    (square grid sides; ``None``: the part's suite sizes; the boards part takes none), with its
    own keyword options (see its ``measure``). Returns the part's dict."""
    if name not in PARTS:
        raise ValueError(f"unknown part {name!r}; use one of {', '.join(PARTS)}")
    module = _module(name)
    if sizes is not None:
        if name in ("boards", "compile"):
            raise ValueError(f"the {name} part takes no grid sizes")
        options["sizes"] = tuple(sizes)
    elif name not in ("sim", "boards", "compile"):
        options["sizes"] = module.SUITE_SIZES
    return module.measure(progress=progress, **options)


def format_part(part):
    """A part's dict as a text table."""
    if "error" in part:
        return f"{part['part']}: not measured: {part['error']}"
    return _module(part["part"]).format_part(part)


def suite_options():
    """Options of each part in the full suite (``make bench``)."""
    emulator, verilog, sim = (_module(name) for name in PARTS[:3])
    return {"emulator": {"sizes": emulator.SUITE_SIZES},
            "verilog": {"sizes": verilog.SUITE_SIZES},
            "sim": {"sizes": sim.SUITE_SIZES, "amaranth_sizes": sim.AMARANTH_SIZES,
                    "steps": sim.DEFAULT_STEPS},
            "boards": {},
            "mesh": {"sizes": _module("mesh").SUITE_SIZES},
            "compile": {"designs": _module("compile").SUITE_DESIGNS},
            "mpi": {"sizes": _module("mpi").SUITE_SIZES},
            "serve": {"sizes": _module("serve").SUITE_SIZES}}


def quick_options():
    """Options of each part with ``--quick``: fewer and smaller sizes, shorter runs."""
    emulator, verilog, sim = (_module(name) for name in PARTS[:3])
    return {"emulator": {"sizes": emulator.QUICK_SIZES},
            "verilog": {"sizes": verilog.QUICK_SIZES},
            "sim": {"sizes": sim.QUICK_SIZES, "amaranth_sizes": (8,), "steps": 64},
            "boards": {},
            "mesh": _module("mesh").quick_options(),
            "compile": {"designs": _module("compile").QUICK_DESIGNS},
            "mpi": {"sizes": _module("mpi").QUICK_SIZES, "halos": (8,)},
            "serve": _module("serve").quick_options()}


def run_suite(parts=PARTS, *, quick=False, options=None, progress=True, machine=None):
    """Run ``parts`` and return the JSON document (:func:`.common.document`) with the
    ``targets`` (:func:`.report.targets`). A part that fails (a missing tool, a failed build)
    is kept as ``{"part": name, "error": message}`` and the others still run."""
    from .report import targets
    settings = options or (quick_options() if quick else suite_options())
    started = datetime.datetime.now(datetime.timezone.utc)
    start = timer()
    machine = machine if machine is not None else machine_info()
    results = {}
    for name in parts:
        try:
            results[name] = _module(name).measure(progress=progress,
                                                  **settings.get(name, {}))
        except Exception as error:          # noqa: BLE001 - report it and run the others
            print(f"bench: the {name} part failed: {error}", file=sys.stderr)
            results[name] = {"part": name, "error": f"{type(error).__name__}: {error}"}
    machine = dict(machine)
    machine["load_average_end"] = load_average()
    good = {k: v for k, v in results.items() if "error" not in v}
    return document(results, machine=machine, quick=quick, started=started,
                    seconds=timer() - start, targets=targets(good))


def format_suite(doc):
    """The whole document as text: machine, each part's table, exponents, goals."""
    from .report import format_exponents, format_machine, format_targets
    blocks = [format_machine(doc["machine"])]
    blocks += [format_part(part) for part in doc["parts"].values()]
    good = {k: v for k, v in doc["parts"].items() if "error" not in v}
    blocks.append(format_exponents(good))
    if doc.get("targets") is not None:
        blocks.append(format_targets(doc["targets"]))
    if doc.get("seconds"):
        blocks.append(f"total time: {doc['seconds']['value']:.0f} s")
    return "\n\n".join(blocks)
