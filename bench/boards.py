"""The boards part of ``make bench``: per supported board and engine (the direct grid, and the
multiplexed engine where a report has one), the largest grid that was placed and routed, its
resource use, its Fmax from nextpnr, the subcycles per second (``Fmax / cycles_per_subcycle``:
one clock cycle for the direct grid) and the cell updates (evaluations) per second that gives
on the board (``subcycles/s x cells / 2``: a subcycle updates one parity, half of the cells),
and the build time.

Place and route of the big grids takes from minutes (iCE40) to hours (ECP5-85F, nextpnr in
WebAssembly), so this part does not build by default: it reads the ``report.json`` files that
``bitgrid build`` left under ``build/`` (any sub-folder) and says, per row, which file the
figures come from and when it was written. ``build_missing=True`` (``python -m bitgrid.bench
--parts boards --build-missing``) builds, at its default size, each board that has no report.

Run alone: ``bitgrid bench boards [--root DIR ...] [--build-missing]``.
"""

import datetime
import json
import os
import sys

from .common import figure, value

__all__ = ["ROOTS", "TARGETS", "find_reports", "largest", "row_from_report", "targets",
           "measure", "format_part"]

#: Folders searched for ``report.json`` files of earlier builds.
ROOTS = ("build",)


def _fmax(report):
    """The lowest achieved Fmax over the report's clocks, in MHz (None if not routed)."""
    clocks = report.get("fmax_mhz") or {}
    achieved = [v["achieved"] for v in clocks.values() if "achieved" in v]
    return min(achieved) if achieved else None


def find_reports(roots=ROOTS):
    """Every readable ``report.json`` under ``roots`` that has a board, a grid and an Fmax (a
    build that got through place and route), as ``(path, report)`` pairs."""
    found = []
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            if "report.json" not in files:
                continue
            path = os.path.join(folder, "report.json")
            try:
                with open(path) as f:
                    report = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(report, dict) and report.get("board") and report.get("cells") \
                    and _fmax(report) is not None:
                found.append((path, report))
    return sorted(found)


def largest(reports, board, engine="direct"):
    """The ``(path, report)`` of ``board``'s largest grid (then highest Fmax) with ``engine``
    (a report without an engine is the direct grid's), or None."""
    mine = [(p, r) for p, r in reports
            if r["board"] == board and r.get("engine", "direct") == engine]
    if not mine:
        return None
    return max(mine, key=lambda pr: (pr[1]["cells"], _fmax(pr[1])))


def _use(report, key):
    item = report.get("summary", {}).get(key)
    return None if item is None else {"used": item["used"], "available": item["available"]}


def row_from_report(board, report, source):
    """The table row of ``board`` (a :class:`bitgrid.boards.Board`) from a build report."""
    fmax = _fmax(report)
    constraint = min((v["constraint"] for v in report.get("fmax_mhz", {}).values()),
                     default=None)
    from bitgrid.boards.toolflow import SUMMARY
    utilization = report.get("utilization", {})
    ram_bels = {bel: utilization[bel] for bel in SUMMARY[board.family]["RAM"]
                if bel in utilization}
    cycles = report.get("cycles_per_subcycle", 1)
    return {"board": board.name, "fpga": board.fpga, "storage": report["storage"],
            "engine": report.get("engine", "direct"), "pipelined": report.get("pipelined", False),
            "cycles_per_subcycle": cycles,
            "subcycles": figure(fmax * 1e6 / cycles, "subcycles/s"),
            "grid": report["grid"], "cells": report["cells"],
            "default_size": "x".join(map(str, board.default_size)),
            "lut": _use(report, "LUT"), "ff": _use(report, "FF"), "ram": _use(report, "RAM"),
            "ram_bels": ram_bels,
            "fmax_mhz": fmax, "constraint_mhz": constraint,
            "cell_updates": figure(report["cells"] * fmax * 1e6 / cycles / 2, "cell-updates/s"),
            "build_seconds": figure(report["build_seconds"], "s"),
            "tools": report.get("tools"), "source": source}


def _source(path, how):
    when = report_date(path)
    return f"{how} {path} ({when})"


def report_date(path):
    """The date a report was written: its ``date`` field, else the file's modification time."""
    try:
        with open(path) as f:
            date = json.load(f).get("date")
    except (OSError, ValueError):
        date = None
    if date:
        return date
    return datetime.datetime.fromtimestamp(os.path.getmtime(path)).strftime("%Y-%m-%d %H:%M")


#: The board goals: (board, minimum cells, minimum Fmax in MHz or None, words).
TARGETS = (("ulx3s-85f", 64 * 64, 100.0, "ULX3S-85F: at least 64 x 64 cells at 100 MHz or more"),
           ("tangnano9k", 16 * 16, None, "Tang Nano 9K: at least 16 x 16 cells"))


def targets(rows):
    """Each of :data:`TARGETS` against the rows: ``{"target", "met": bool or None, "grid"}``."""
    by_board = {r["board"]: r for r in rows}
    result = []
    for board, cells, mhz, words in TARGETS:
        row = by_board.get(board)
        if not row or row.get("source") is None:
            result.append({"target": words, "met": None, "grid": None})
            continue
        met = row["cells"] >= cells and (mhz is None or row["fmax_mhz"] >= mhz)
        result.append({"target": words, "met": met, "grid": row["grid"],
                       "fmax_mhz": row["fmax_mhz"]})
    return result


def measure(*, roots=ROOTS, build_missing=False, output="build", progress=True):
    """The boards part: one row per board of :data:`bitgrid.boards.BOARDS`.

    :param roots: folders searched for earlier builds' ``report.json``.
    :param build_missing: build (default size, into ``output/<board>``) the boards without a
        report; otherwise they get a row with ``"source": None`` and no figures.
    :returns: ``{"part": "boards", "roots": [...], "rows": [...]}``.
    """
    from bitgrid.boards import BOARDS, build
    reports = find_reports(roots)
    rows = []
    for board in BOARDS.values():
        # Another engine's largest build, where a report has one (after the direct row).
        others = sorted({r.get("engine", "direct") for _, r in reports
                         if r["board"] == board.name} - {"direct"})
        best = largest(reports, board.name)
        if best is None and build_missing:
            if progress:
                print(f"bench: building the {board.name} (no report found)", file=sys.stderr)
            report = build(board, output=os.path.join(output, board.name),
                           progress=(lambda line: print(line, file=sys.stderr)) if progress
                           else (lambda line: None))
            path = os.path.join(report["output"], "report.json")
            rows.append(row_from_report(board, report, _source(path, "built now:")))
        elif best is None:
            rows.append({"board": board.name, "fpga": board.fpga, "storage": board.storage,
                         "default_size": "x".join(map(str, board.default_size)),
                         "source": None})
        else:
            path, report = best
            rows.append(row_from_report(board, report, _source(path, "cached:")))
        for engine in others:
            path, report = largest(reports, board.name, engine)
            rows.append(row_from_report(board, report, _source(path, "cached:")))
    return {"part": "boards", "roots": list(roots), "rows": rows, "targets": targets(rows)}


def _share(item):
    if not item:
        return "-"
    if not item["available"]:
        return f"{item['used']}"
    return f"{item['used']}/{item['available']} ({100 * item['used'] / item['available']:.0f}%)"


def format_part(part):
    """The boards part as a text table, with where each row's figures come from."""
    lines = ["FPGA boards: largest grid placed and routed per engine, from bitgrid build "
             "reports (cell updates/s = cells x Fmax / clock cycles a subcycle / 2)",
             f"{'board':<11} {'engine':>11} {'grid':>7} {'storage':>7} {'LUT':>20} {'FF':>20} "
             f"{'RAM':>16} {'Fmax MHz':>9} {'subcyc/s':>9} {'cell-upd/s':>9} {'build s':>8}"]
    sources = []
    for r in part["rows"]:
        if r.get("source") is None:
            lines.append(f"{r['board']:<11} {'-':>11} {'-':>7} {r['storage']:>7}   no build "
                         f"report found (bitgrid build --board {r['board']})")
            continue
        engine = r["engine"] + ("+p" if r.get("pipelined") else "")
        lines.append(f"{r['board']:<11} {engine:>11} {r['grid']:>7} {r['storage']:>7} "
                     f"{_share(r['lut']):>20} {_share(r['ff']):>20} {_share(r['ram']):>16} "
                     f"{r['fmax_mhz']:>9.1f} {value(r['subcycles']):>9.3g} "
                     f"{value(r['cell_updates']):>9.3g} {value(r['build_seconds']):>8.0f}")
        which = r["board"] + ("" if r["engine"] == "direct" else f" ({r['engine']})")
        sources.append(f"  {which}: {r['source']}")
        if r.get("ram_bels"):
            sources.append("    RAM: " + ", ".join(f"{bel} {v['used']}/{v['available']}"
                                                  for bel, v in r["ram_bels"].items()))
    if sources:
        lines.append("figures from:")
        lines += sources
    if part.get("targets"):
        lines.append("goals:")
    for t in part.get("targets", ()):
        verdict = {None: "not built", True: "reached", False: "not reached"}[t["met"]]
        got = f" ({t['grid']} at {t['fmax_mhz']:.1f} MHz)" if t["grid"] else ""
        lines.append(f"  {verdict:>12}  {t['target']}{got}")
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench boards`
    from bitgrid.cli.bench import bench
    bench(["boards", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
