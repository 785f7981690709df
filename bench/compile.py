"""The compiler: what ``bitgrid compile`` makes of each test design, and how its time grows.

For each test design of issue 12 (:data:`bitgrid.compiler.designs.TEST_DESIGNS`) and for
growing sizes (multipliers of 4 to 16 bits, adders of 8 to 64 bits, and a 21 x 21 multiplier
of about 1,000 Yosys LUT4s), for the state designs of issue 40 (series ``state``) and the
sequential designs of issue 36 (series ``sequential``): the LUT4 and flip-flop counts of
Yosys' mapping, the cells the program uses (for logic, routing and delay), its bounding box
and grid, the period and latency in subcycles, the compile time of each stage and in total (wall seconds), and the cells per
Yosys LUT. Exponents fit the total compile time per series, against the cells used
(``exponents``, as every part) and against the Yosys LUT count (``lut_exponents``: how compile
time grows with design size). The goals of issue 12 (:func:`bitgrid.bench.report.targets`)
are printed under the table with the measured values.

Each design compiles in a child process with a time limit (:data:`TIME_LIMIT` seconds by
default): a design that takes longer is stopped (its process group killed) and its row says
``timeout after N s`` (with Yosys' LUT count when synthesis had finished), so one slow design
never hangs the part. Progress goes to stderr: one line per design, and the back end's stage
every 15 s while a design runs for long.

Outside designs (issue 23: small public benchmark circuits, such as the EPFL suite's
``random_control`` folder, github.com/lsils/benchmarks): ``--outside DIR`` compiles every
``*.v`` file of ``DIR`` too (the file's only module, or the one named as the file), in a
series ``outside`` of the same table, with the ``area`` objective (the fewest cells: issue
36's goals are cells per Yosys LUT4), each row followed by the other candidates' figures (the
sweep's cells and period beside the general back end's). The circuits are not part of the
project; point ``DIR`` at a checkout.

Every program, test design or outside, is checked against its design as ``bitgrid compile``
checks it (:func:`bitgrid.compiler.check.check_program`, the same function, issue 36 item
7): a row's ``checked`` gives the rows, the ``check`` stage its time (not counted in the
compile time); a program that differs from its design is a row that failed (``compiler bug:
...``).

Run ``bitgrid bench compile`` (or ``python -m bitgrid.bench compile``).
"""

import multiprocessing
import os
import pathlib
import resource
import signal
import sys
import tempfile
import time

from .common import Progress, exponents, figure, timer, value
from .published import mnt_bench

__all__ = ["SUITE_DESIGNS", "QUICK_DESIGNS", "SERIES", "TIME_LIMIT", "measure", "format_part",
           "compile_row", "series_plan"]

#: (series, design name, parameters) of the growth series of the full part.
SERIES = (
    [("multiplier", "multiplier", {"n": n}) for n in (4, 6, 8, 10, 12, 14, 16)]
    + [("adder", "adder", {"n": n}) for n in (8, 16, 24, 32, 48, 64)]
    + [("1000 LUTs", "multiplier", {"n": 21})])

#: Seconds a design may take to compile (synthesis included) before it is stopped.
TIME_LIMIT = 180.0


def _test_designs():
    from bitgrid.compiler.designs import TEST_DESIGNS
    return [("test designs", name, params) for name, params in TEST_DESIGNS]


def _state_designs():
    """Series ``state`` (issue 40): registers, delay lines, registered operations, register
    files, a FIFO and ROMs (:data:`bitgrid.compiler.designs.STATE_DESIGNS`)."""
    from bitgrid.compiler.designs import STATE_DESIGNS
    return [("state", name, params) for name, params in STATE_DESIGNS]


def _arithmetic_designs():
    """Series ``arithmetic`` (issue 37): multiply-add, multiply-accumulate, ``{cout, s} = a +
    b`` (:data:`bitgrid.compiler.designs.ARITHMETIC_DESIGNS`)."""
    from bitgrid.compiler.designs import ARITHMETIC_DESIGNS
    return [("arithmetic", name, params) for name, params in ARITHMETIC_DESIGNS]


def _sequential_designs():
    """Series ``sequential`` (issue 36 item 4): state machines no library block recognises
    (LFSRs, a Gray and a BCD counter, UART transmitter and receiver, a traffic-light machine,
    a sequence detector: :data:`bitgrid.compiler.designs.SEQUENTIAL_DESIGNS`)."""
    from bitgrid.compiler.designs import SEQUENTIAL_DESIGNS
    return [("sequential", name, params) for name, params in SEQUENTIAL_DESIGNS]


#: What ``make bench`` compiles: every test design and the series.
SUITE_DESIGNS = "suite"
#: ``--quick``: a few small test designs and short series.
QUICK_DESIGNS = "quick"


def _plan(which):
    if which == SUITE_DESIGNS:
        plan = (_test_designs() + list(SERIES) + _state_designs() + _arithmetic_designs()
                + _sequential_designs())
    elif which == QUICK_DESIGNS:
        plan = ([("test designs", n, p) for n, p in
                 (("multiplier", {"n": 4}), ("adder", {"n": 8}), ("crc8", {}),
                  ("counter", {"n": 8}))]
                + [("multiplier", "multiplier", {"n": n}) for n in (4, 6, 8)]
                + [("adder", "adder", {"n": n}) for n in (8, 16, 32)])
    else:
        plan = list(which)
    seen, unique = set(), []
    for series, name, params in plan:
        key = (series, name, tuple(sorted(params.items())))
        if key not in seen:
            seen.add(key)
            unique.append((series, name, params))
    return unique


def series_plan(names):
    """The rows of the full suite in the series ``names`` (``bitgrid bench compile --series
    sequential``), as :func:`measure` takes them.

    :raises ValueError: for a series the suite does not have (naming those it has).
    """
    plan = _plan(SUITE_DESIGNS)
    known = list(dict.fromkeys(series for series, _, _ in plan))
    for name in names:
        if name not in known:
            raise ValueError(f"no series {name!r}; the series are {', '.join(known)}")
    return [row for row in plan if row[0] in names]


def outside_plan(folder):
    """``[("outside", path, {})]`` for every ``*.v`` file of ``folder``, sorted by name.

    :raises ValueError: if ``folder`` is not a folder or holds no ``.v`` file.
    """
    folder = pathlib.Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder: give a folder of Verilog files (.v)")
    files = sorted(folder.glob("*.v"))
    if not files:
        raise ValueError(f"{folder} holds no .v file: give a folder of Verilog files")
    return [("outside", str(path), {}) for path in files]


def _outside_top(path):
    from bitgrid.compiler.frontend import module_names
    names = module_names([path])
    return names[0] if len(names) == 1 else path.stem


def _is_file(name):
    return name.endswith(".v")


def _label(name, params):
    if _is_file(name):
        return pathlib.Path(name).stem
    return name + "".join(f" {k}={v}" for k, v in params.items())


def compile_row(name, params, folder, *, seed=0, progress=None, synthesized=None, check=True,
                objective="area-time"):
    """Compile test design ``name`` with ``params`` (its Verilog written to ``folder``) and
    return its row's figures (see :func:`measure`) without ``series``.

    With ``check`` (the default) the program is checked against the design as ``bitgrid
    compile`` checks it (:func:`bitgrid.compiler.check.check_program`, the same function);
    ``checked`` gives the rows (0 without), and its time is the ``check`` stage, not part of
    ``seconds`` (the compile time).

    :param progress: ``progress(stage, done, total)`` of the back end and the check, or None.
    :param synthesized: called with ``{"yosys_luts", "flip_flops"}`` (figures) once synthesis
        has finished, before the back end starts.
    :param objective: :func:`bitgrid.compiler.compile_netlist`'s (outside designs: ``area``,
        and the row's ``beside`` lists the other candidates, the sweep among them).
    :raises bitgrid.compiler.CompileError: if the design does not compile, or the program
        differs from the design (``compiler bug: ...``, naming the row and port).
    """
    from bitgrid.compiler import compile_netlist, designs
    from bitgrid.compiler.check import check_program
    from bitgrid.compiler.flow import front_end
    if _is_file(name):          # an outside design: the file's only module, or its namesake
        path = pathlib.Path(name)
        top = _outside_top(path)
    else:
        design = designs.design(name, **params)
        path, top = designs.write(design, folder), design.top
    start = timer()
    synthesis, _ = front_end(path, top=top)
    stats = synthesis.stats
    counts = {"yosys_luts": figure(stats["luts"], "LUTs"),
              "flip_flops": figure(stats["flip_flops"], "flip-flops")}
    if synthesized is not None:
        synthesized(counts)
    result = compile_netlist(synthesis.netlist, seed=seed, progress=progress,
                             alternatives=synthesis.alternatives,
                             operation=synthesis.operation, objective=objective,
                             composition=synthesis.composition)
    seconds = timer() - start
    report = result.report
    times = {**stats.get("times", {}), **report.get("times", {})}
    checked = 0
    if check:
        started = timer()
        checked = check_program(synthesis.netlist, result.config, result.portmap,
                                progress=progress)
        times["check"] = timer() - started
    cells, luts = report["cells"], stats["luts"]
    x0, y0, x1, y1 = report["bounding_box"]
    published = mnt_bench(path.stem) if _is_file(name) else None
    return {
        "design": name, "params": dict(params), "top": top,
        "cells": cells["total"], **counts,
        "logic_cells": figure(cells["logic"], "cells"),
        "routing_cells": figure(cells["routing"], "cells"),
        "delay_cells": figure(cells["delay"], "cells"),
        "total_cells": figure(cells["total"], "cells"),
        "cells_per_lut": figure(cells["total"] / luts if luts else 0.0, "1"),
        "period": figure(report["period"], "subcycles"),
        "latency": figure(report["latency"], "subcycles"),
        "grid": list(report["grid"]),
        "bounding_box": [x1 - x0 + 1, y1 - y0 + 1],
        "back_end": report.get("back_end"),
        "mapping": report.get("mapping"),
        "seconds": figure(seconds, "s"),
        "stage_seconds": {k: figure(v, "s") for k, v in times.items()},
        "checked": checked,
        "objective": objective,
        "beside": [{"mapping": c["mapping"], "back_end": c["back_end"],
                    "cells": figure(c["cells"], "cells"),
                    "period": figure(c["period"], "subcycles")}
                   for c in report.get("candidates", ())
                   if (c["cells"], c["period"]) != (cells["total"], report["period"])],
        **({"mnt_bench": {"layout": published[2], "size": list(published[:2]),
                          "tiles": figure(published[0] * published[1], "tiles")}}
           if published else {}),
    }


def _stage_printer(label, every=15.0):
    """A back-end progress callback that prints the stage on stderr every ``every`` s."""
    started = last = time.monotonic()

    def progress(stage, done, total):
        nonlocal last
        now = time.monotonic()
        if now - last >= every:
            last = now
            amount = f" {done}/{total}" if total else (f" {done}" if done else "")
            print(f"compile {label}: {stage}{amount} after {now - started:.0f} s",
                  file=sys.stderr, flush=True)
    return progress


def _child(connection, name, params, folder, seed, show):
    """The child process: its own process group (so that a timeout kills Yosys too), then
    the compile; sends ``("synthesized", counts)`` then ``("row", row)`` or ``("error",
    text)``."""
    os.setpgid(0, 0)
    try:
        row = compile_row(name, params, folder, seed=seed,
                          objective="area" if _is_file(name) else "area-time",
                          progress=_stage_printer(_label(name, params)) if show else None,
                          synthesized=lambda counts: connection.send(("synthesized", counts)))
        # peak resident memory of this process (Yosys runs in it, as WebAssembly): KiB
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        connection.send(("row", {**row, "peak_memory": figure(peak, "bytes")}))
    except Exception as error:          # noqa: BLE001 - the row says why
        connection.send(("error", f"{type(error).__name__}: {error}"))
    finally:
        connection.close()


def _kill(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.join()


def _compile_limited(name, params, folder, *, seed, time_limit, show):
    """One design's row (figures, or ``error``, or ``error`` and ``timeout`` after
    ``time_limit`` s), compiled in a child process."""
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(child, name, params, folder, seed, show),
                              daemon=True)
    process.start()
    child.close()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    counts = {}
    try:
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and (left <= 0 or not parent.poll(left)):
                _kill(process)
                return {**counts, "error": f"timeout after {time_limit:g} s",
                        "timeout": figure(float(time_limit), "s")}
            try:
                kind, payload = parent.recv()
            except EOFError:
                process.join()
                return {**counts, "error": f"the compile process ended (exit status "
                                           f"{process.exitcode}) without a result"}
            if kind == "synthesized":
                counts = payload
            elif kind == "row":
                process.join()
                return payload
            else:
                process.join()
                return {**counts, "error": payload}
    finally:
        parent.close()


def measure(designs=SUITE_DESIGNS, *, seed=0, progress=True, time_limit=TIME_LIMIT,
            outside=None):
    """The compile part of the suite.

    :param designs: :data:`SUITE_DESIGNS`, :data:`QUICK_DESIGNS` or a list of ``(series,
        design name, params)``.
    :param seed: placement seed.
    :param progress: progress on stderr.
    :param time_limit: seconds each design may take (synthesis and back end) before it is
        stopped; None: no limit (each design still compiles in a child process).
    :param outside: a folder of outside Verilog designs (:func:`outside_plan`), or None.
    :returns: ``{"part": "compile", "seed", "time_limit": figure, "rows": [...],
        "exponents": {...}, "lut_exponents": {...}, "seconds": figure}``; each row has
        ``series``, ``design``, ``params``, ``top``, ``cells`` (total cells used, the size
        ``exponents`` fit against) and figures ``yosys_luts``, ``flip_flops``,
        ``logic_cells``, ``routing_cells``, ``delay_cells``, ``total_cells`` (``cells``),
        ``cells_per_lut`` (``1``), ``period`` and ``latency`` (``subcycles``), ``seconds``
        and ``stage_seconds`` (``{stage: figure}``, ``s``; ``check`` the check's, not in
        ``seconds``), ``checked`` (the rows the program was checked on against the design),
        ``grid``, ``bounding_box`` (cells wide and high), ``back_end`` and ``mapping`` (the front end's mapping kept: ``lut4``,
        ``lut3`` or ``lut2``); a design that fails to compile has ``error`` (the
        reason) instead of the figures, and one stopped at the time limit also ``timeout``
        (a figure, ``s``) and, if its synthesis had finished, ``yosys_luts`` and
        ``flip_flops``; ``peak_memory`` (``bytes``: the compile process's peak resident
        memory, synthesis, back ends and check together). ``lut_exponents`` fit ``seconds``
        and ``peak_memory`` against ``yosys_luts``.
    :raises ValueError: for an unknown design name or a bad ``time_limit``.
    """
    from bitgrid.compiler import designs as _designs
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit is a number of seconds above 0 or None, not "
                         f"{time_limit!r}")
    plan = _plan(designs) + (outside_plan(outside) if outside is not None else [])
    for _, name, params in plan:
        if not _is_file(name):
            _designs.design(name, **params)     # raises for a bad name or parameter now
    started = timer()
    rows = []
    with Progress(len(plan), "compile", progress) as bar, \
            tempfile.TemporaryDirectory(prefix="bitgrid-bench-compile-") as folder:
        for series, name, params in plan:
            label = _label(name, params)
            bar.start(label)
            row = {"series": series, "design": name, "params": dict(params),
                   "top": (_outside_top(pathlib.Path(name)) if _is_file(name)
                           else _designs.design(name, **params).top)}
            row.update(_compile_limited(name, params, folder, seed=seed,
                                        time_limit=time_limit, show=progress))
            rows.append(row)
            if "error" in row:
                bar.done(f"compile {label:<28} failed: {row['error']}")
                continue
            bar.done(f"compile {label:<28} {value(row['yosys_luts']):>5} LUTs -> "
                     f"{row['cells']:>5} cells, period {value(row['period'])}, latency "
                     f"{value(row['latency']):>4}, {value(row['seconds']):7.1f} s")
    good = [r for r in rows if "error" not in r
            and r["series"] not in ("test designs", "outside")]
    by_luts = [dict(r, cells=value(r["yosys_luts"])) for r in good]
    return {"part": "compile", "seed": seed,
            "time_limit": None if time_limit is None else figure(float(time_limit), "s"),
            "rows": rows,
            "exponents": exponents(good, ["seconds"], group="series"),
            "lut_exponents": exponents(by_luts, ["seconds", "peak_memory"], group="series"),
            "seconds": figure(timer() - started, "s")}


def _goal_lines(part):
    from .report import format_targets, targets
    items = [t for t in targets({"compile": part}) if t["name"].startswith("compile_")]
    return format_targets(items).splitlines()[1:]


def _megabytes(item):
    """A ``bytes`` figure as whole MiB with the unit (``"812M"``), or empty."""
    return "" if item is None else f"{value(item) / 2 ** 20:.0f}M"


def format_part(part):
    """The compile part (see :func:`measure`) as a text table, the growth of compile time
    with design size, and the goals of issue 12 with the measured values."""
    stages = []
    for r in part["rows"]:
        for stage in r.get("stage_seconds", {}):
            if stage not in stages:
                stages.append(stage)
    head = (f"{'design':<26} {'LUTs':>5} {'FFs':>4} {'logic':>6} {'route':>6} {'delay':>6} "
            f"{'total':>6} {'c/LUT':>5} {'box':>7} {'P':>3} {'lat':>4} {'map':>8} "
            f"{'time':>7} {'peak':>6}  "
            + " ".join(f"{s[:7]:>7}" for s in stages))
    lines = ["Compiler (bitgrid compile: cells used, period and latency in subcycles, wall "
             "seconds per stage" + (f", at most {value(part['time_limit']):g} s a design"
                                    if part.get("time_limit") else "") + ")", head]
    series = None
    for r in part["rows"]:
        if r["series"] != series:
            series = r["series"]
            lines.append(f"-- {series}")
        label = _label(r["design"], r["params"])
        if "error" in r:
            luts = f" ({value(r['yosys_luts'])} LUTs)" if r.get("yosys_luts") else ""
            lines.append(f"{label:<26} not compiled{luts}: {r['error']}")
            continue
        box = f"{r['bounding_box'][0]}x{r['bounding_box'][1]}"
        lines.append(
            f"{label:<26} {value(r['yosys_luts']):>5} {value(r['flip_flops']):>4} "
            f"{value(r['logic_cells']):>6} {value(r['routing_cells']):>6} "
            f"{value(r['delay_cells']):>6} {value(r['total_cells']):>6} "
            f"{value(r['cells_per_lut']):>5.2f} {box:>7} {value(r['period']):>3} "
            f"{value(r['latency']):>4} {r.get('mapping') or '':>8} "
            f"{value(r['seconds']):>7.1f} {_megabytes(r.get('peak_memory')):>6}  "
            + " ".join(f"{value(r['stage_seconds'][s]):>7.2f}" if s in r["stage_seconds"]
                       else f"{'':>7}" for s in stages))
        if r.get("objective") == "area" and r.get("beside"):
            lines.append(f"{'':<4}(objective area; beside it: " + ", ".join(
                f"{c['back_end']} {value(c['cells'])} cells"
                + (f" ({value(c['cells']) / value(r['yosys_luts']):.1f}/LUT)"
                   if value(r["yosys_luts"]) else "")
                + f" at period {value(c['period'])}" for c in r["beside"]) + ")")
        if r.get("mnt_bench"):
            m = r["mnt_bench"]
            lines.append(f"{'':<4}(MNT Bench's smallest published layout: "
                         f"{value(m['tiles']):,} tiles, {m['size'][0]} x {m['size'][1]}, "
                         f"{m['layout']}: {value(m['tiles']) / r['cells']:.1f} times these "
                         f"cells, {value(m['tiles']) / (r['bounding_box'][0] * r['bounding_box'][1]):.1f} "
                         "times their bounding box)")
    fits = part.get("lut_exponents") or {}
    if fits:
        lines.append("Compile time and peak memory against design size: seconds = a * LUTs**b, "
                     "bytes = a * LUTs**b")
        for name, costs in fits.items():
            for cost in ("seconds", "peak_memory"):
                fit = costs.get(cost)
                if fit is not None:
                    lines.append(f"  {name:<12} {cost:<12} b = {value(fit['exponent']):.2f} "
                                 f"(r2 {fit['r2']:.3f}, {fit['points']} sizes)")
    lines.append("Goals (issues 12 and 23)")
    lines += _goal_lines(part)
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench compile`
    from bitgrid.cli.bench import bench
    bench(["compile", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
