"""The compiler: what ``bitgrid compile`` makes of each test design, and how its time grows.

For each test design of issue 12 (:data:`bitgrid.compiler.designs.TEST_DESIGNS`) and for
growing sizes (multipliers of 4 to 16 bits, adders of 8 to 64 bits, and one multiplier of about
1,000 LUTs), in this process: the LUT4 and flip-flop counts of Yosys' mapping, the cells the
program uses (for logic, routing and delay), its bounding box and grid, the period and latency
in subcycles, the compile time of each stage and in total (wall seconds), and the cells per
Yosys LUT. Exponents fit the total compile time against the cells used, per series.

Run ``bitgrid bench compile`` (or ``python -m bitgrid.bench compile``).
"""

import tempfile

from .common import Progress, exponents, figure, timer, value

__all__ = ["SUITE_DESIGNS", "QUICK_DESIGNS", "SERIES", "measure", "format_part"]

#: (series, design name, parameters) of the full part: the test designs, then the growth
#: series.
SERIES = (
    [("multiplier", "multiplier", {"n": n}) for n in (4, 6, 8, 10, 12, 14, 16)]
    + [("adder", "adder", {"n": n}) for n in (8, 16, 24, 32, 48, 64)]
    + [("1000 LUTs", "multiplier", {"n": 21})])


def _test_designs():
    from bitgrid.compiler.designs import TEST_DESIGNS
    return [("test designs", name, params) for name, params in TEST_DESIGNS]


#: What ``make bench`` compiles: every test design and the series.
SUITE_DESIGNS = "suite"
#: ``--quick``: a few small test designs and short series.
QUICK_DESIGNS = "quick"


def _plan(which):
    if which == SUITE_DESIGNS:
        plan = _test_designs() + list(SERIES)
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


def _label(name, params):
    return name + "".join(f" {k}={v}" for k, v in params.items())


def measure(designs=SUITE_DESIGNS, *, seed=0, progress=True):
    """The compile part of the suite.

    :param designs: :data:`SUITE_DESIGNS`, :data:`QUICK_DESIGNS` or a list of ``(series,
        design name, params)``.
    :param seed: placement seed.
    :param progress: progress on stderr.
    :returns: ``{"part": "compile", "rows": [...], "exponents": {...}, "seconds": figure}``;
        each row has ``series``, ``design``, ``params``, ``top``, ``cells`` (total cells used,
        the size the exponents fit against) and figures ``yosys_luts``, ``flip_flops``,
        ``logic_cells``, ``routing_cells``, ``delay_cells``, ``total_cells`` (``cells``),
        ``cells_per_lut`` (``1``), ``period`` and ``latency`` (``subcycles``), ``seconds``
        and ``stage_seconds`` (``{stage: figure}``, ``s``), ``grid`` and ``bounding_box``;
        a design that fails to compile has ``error`` instead of the figures.
    """
    from bitgrid.compiler import compile as compile_design
    from bitgrid.compiler import designs as _designs
    plan = _plan(designs)
    started = timer()
    rows = []
    with Progress(len(plan), "compile", progress) as bar, \
            tempfile.TemporaryDirectory(prefix="bitgrid-bench-compile-") as folder:
        for series, name, params in plan:
            label = _label(name, params)
            bar.start(label)
            design = _designs.design(name, **params)
            path = _designs.write(design, folder)
            row = {"series": series, "design": name, "params": dict(params), "top": design.top}
            start = timer()
            try:
                result = compile_design(path, top=design.top, seed=seed)
            except Exception as error:      # noqa: BLE001 - a row that says why, not a crash
                row["error"] = f"{type(error).__name__}: {error}"
                rows.append(row)
                bar.done(f"compile {label:<28} failed: {error}")
                continue
            seconds = timer() - start
            report = result.report
            cells = report["cells"]
            luts = report["yosys"]["luts"]
            x0, y0, x1, y1 = report["bounding_box"]
            row.update({
                "cells": cells["total"],
                "yosys_luts": figure(luts, "LUTs"),
                "flip_flops": figure(report["yosys"]["flip_flops"], "flip-flops"),
                "logic_cells": figure(cells["logic"], "cells"),
                "routing_cells": figure(cells["routing"], "cells"),
                "delay_cells": figure(cells["delay"], "cells"),
                "total_cells": figure(cells["total"], "cells"),
                "cells_per_lut": figure(cells["total"] / luts if luts else 0.0, "1"),
                "period": figure(report["period"], "subcycles"),
                "latency": figure(report["latency"], "subcycles"),
                "grid": list(report["grid"]),
                "bounding_box": [x1 - x0 + 1, y1 - y0 + 1],
                "seconds": figure(seconds, "s"),
                "stage_seconds": {k: figure(v, "s") for k, v in report["times"].items()},
            })
            rows.append(row)
            bar.done(f"compile {label:<28} {luts:>5} LUTs -> {cells['total']:>5} cells, "
                     f"period {report['period']}, latency {report['latency']:>4}, "
                     f"{seconds:7.1f} s")
    good = [r for r in rows if "error" not in r]
    return {"part": "compile", "seed": seed, "rows": rows,
            "exponents": exponents([r for r in good if r["series"] != "test designs"],
                                   ["seconds"], group="series"),
            "seconds": figure(timer() - started, "s")}


def format_part(part):
    """The compile part (see :func:`measure`) as a text table."""
    stages = []
    for r in part["rows"]:
        for stage in r.get("stage_seconds", {}):
            if stage not in stages:
                stages.append(stage)
    head = (f"{'design':<26} {'LUTs':>5} {'FFs':>4} {'logic':>6} {'route':>6} {'delay':>6} "
            f"{'total':>6} {'c/LUT':>5} {'box':>7} {'P':>3} {'lat':>4} {'time':>7}  "
            + " ".join(f"{s[:7]:>7}" for s in stages))
    lines = ["Compiler (bitgrid compile: cells used, period and latency in subcycles, wall "
             "seconds per stage)", head]
    series = None
    for r in part["rows"]:
        if r["series"] != series:
            series = r["series"]
            lines.append(f"-- {series}")
        label = _label(r["design"], r["params"])
        if "error" in r:
            lines.append(f"{label:<26} not compiled: {r['error']}")
            continue
        box = f"{r['bounding_box'][0]}x{r['bounding_box'][1]}"
        lines.append(
            f"{label:<26} {value(r['yosys_luts']):>5} {value(r['flip_flops']):>4} "
            f"{value(r['logic_cells']):>6} {value(r['routing_cells']):>6} "
            f"{value(r['delay_cells']):>6} {value(r['total_cells']):>6} "
            f"{value(r['cells_per_lut']):>5.2f} {box:>7} {value(r['period']):>3} "
            f"{value(r['latency']):>4} {value(r['seconds']):>7.1f}  "
            + " ".join(f"{value(r['stage_seconds'][s]):>7.2f}" if s in r["stage_seconds"]
                       else f"{'':>7}" for s in stages))
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench compile`
    import sys

    from bitgrid.cli.bench import bench
    bench(["compile", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
