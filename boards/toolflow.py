"""Builds of a board's top with the YoWASP tools (:func:`build`): synthesis, place and route and
packing, with stage lines, a check of every stage's output (YoWASP Yosys 0.70 can end silently
with status 0 and no output, ``docs/resources.md``) and a report (:func:`format_report`)."""

import datetime
import json
import os
import re
import resource
import subprocess
import time

from bitgrid import processes
from bitgrid.files import atomic_write
from bitgrid.terms import parse_sides

from . import get_board
from .platforms import PRODUCTS, TOOLS, tool_env, tool_versions
from .progress import YOWASP_NOTICE, LogFollower, LogTail, yowasp_compiles
from .resources import check_fits
from .top import DEFAULT_BAUD, BoardTop

__all__ = ["BuildError", "build", "build_overrides", "engine_rates", "format_report",
           "SUMMARY", "KEEP_REPLICAS", "GOWIN_SYNTH_OPTS"]


class BuildError(RuntimeError):
    """A build stage failed or wrote no output; the message names the stage and its log."""


_STAGES = {"yosys": "synthesis (Yosys)", "nextpnr-ice40": "place and route (nextpnr-ice40)",
           "nextpnr-ecp5": "place and route (nextpnr-ecp5)",
           "nextpnr-himbaechel": "place and route (nextpnr-himbaechel)",
           "icepack": "bitstream (icepack)", "ecppack": "bitstream (ecppack)",
           "gowin_pack": "bitstream (gowin_pack)"}


def _parse_report(board, build_dir, name, size, seconds, stage_seconds, baud=DEFAULT_BAUD,
                  grid=None, stage_cpu_seconds=None):
    """The build report: cells, resource use and Fmax from nextpnr's JSON report, and the
    engine's rates at that Fmax (:func:`engine_rates`; ``grid`` is the top's grid)."""
    from .image import file_sha256
    width, height = size
    image = os.path.join(build_dir, f"{name}{board.bitstream_suffix}")
    report = {"board": board.name, "fpga": board.fpga, "family": board.family,
              "grid": f"{width}x{height}", "cells": width * height, "storage": board.storage,
              "baud": baud,
              "bitstream_sha256": file_sha256(image) if os.path.exists(image) else None,
              "date": datetime.datetime.now().isoformat(timespec="minutes"),
              "clock_mhz": round(board.platform().default_clk_frequency / 1e6, 3),
              "pnr_target_mhz": board.pnr_target_mhz,
              "tools": tool_versions(board),
              "bitstream": f"{name}{board.bitstream_suffix}",
              "build_seconds": round(seconds, 1),
              "stage_seconds": {k: round(v, 1) for k, v in stage_seconds.items()},
              # CPU time of each stage's tool (user + system): the figure that does not grow
              # with the load of a shared machine, unlike the wall-clock stage_seconds.
              "stage_cpu_seconds": {k: round(v, 1)
                                    for k, v in (stage_cpu_seconds or {}).items()},
              "load_average": [round(v, 2) for v in os.getloadavg()]}
    path = os.path.join(build_dir, f"{name}.nextpnr.json")
    if os.path.exists(path):
        with open(path) as f:
            nextpnr = json.load(f)
        report["utilization"] = {k: {"used": v["used"], "available": v["available"]}
                                 for k, v in nextpnr.get("utilization", {}).items()
                                 if v.get("used")}
        report["fmax_mhz"] = {clock: {"achieved": round(v["achieved"], 2),
                                      "constraint": round(v["constraint"], 2)}
                              for clock, v in nextpnr.get("fmax", {}).items()}
    report["summary"] = _summary(board.family, report.get("utilization", {}))
    report.update(engine_rates(grid, width * height, report.get("fmax_mhz", {})))
    path = os.path.join(build_dir, f"{name}.stat.json")
    if os.path.exists(path):
        try:
            with open(path) as f:
                cells = json.load(f)["design"]["num_cells_by_type"]
        except (ValueError, KeyError):
            cells = {}
        report["synth_cells"] = dict(sorted(cells.items()))
        ffs = sum(n for cell, n in cells.items() if re.search(r"DFF|_FF$", cell))
        report["summary"]["FF"] = {"used": ffs, "available": report["summary"].get(
            "FF", {}).get("available", _FF_AVAILABLE.get(board.fpga, 0))}
    return report


#: Family -> (summary key -> nextpnr bel types).
SUMMARY = {
    "ice40": {"LUT": ["ICESTORM_LC"], "RAM": ["ICESTORM_RAM"], "IO": ["SB_IO"]},
    "ecp5": {"LUT": ["TRELLIS_COMB"], "FF": ["TRELLIS_FF"], "RAM": ["TRELLIS_RAMW", "DP16KD"],
             "IO": ["TRELLIS_IO"]},
    "gowin": {"LUT": ["LUT4"], "FF": ["DFF"], "RAM": ["RAM16SDP4", "BSRAM"], "IO": ["IOB"]},
}


# Flip-flops of the devices whose nextpnr report counts them only inside logic cells.
_FF_AVAILABLE = {"Lattice iCE40 UP5K (SG48)": 5280}


def _summary(family, utilization):
    out = {}
    for key, bels in SUMMARY[family].items():
        used = sum(utilization.get(b, {}).get("used", 0) for b in bels)
        avail = sum(utilization.get(b, {}).get("available", 0) for b in bels)
        if avail:
            out[key] = {"used": used, "available": avail}
    return out


def engine_rates(grid, cells, fmax_mhz):
    """The engine fields of a build report: ``engine`` (``grid.engine``, ``"direct"`` for
    :class:`~bitgrid.hdl.grid.Grid`), ``pipelined``, ``cycles_per_subcycle`` (clock cycles
    a subcycle takes: 1 for the direct grid), and at the lowest achieved Fmax
    ``subcycles_per_second`` (``Fmax / cycles_per_subcycle``) and
    ``cell_evaluations_per_second`` (``subcycles_per_second * cells / 2``: a subcycle
    evaluates one parity, half of the cells); the rates are None without an Fmax."""
    cycles = getattr(grid, "cycles_per_subcycle", 1)
    achieved = [v["achieved"] for v in fmax_mhz.values()]
    rate = min(achieved) * 1e6 / cycles if achieved else None
    return {"engine": getattr(grid, "engine", "direct"),
            "pipelined": bool(getattr(grid, "pipelined", False)),
            "cycles_per_subcycle": cycles,
            "subcycles_per_second": rate,
            "cell_evaluations_per_second": None if rate is None else rate * cells / 2}


def format_report(report):
    """The report as text lines."""
    engine = report.get("engine", "direct")
    lines = [f"board {report['board']} ({report['fpga']}), grid {report['grid']} "
             f"({report['cells']} cells, {engine} engine, {report['storage']} storage"
             f"{', pipelined' if report.get('pipelined') else ''})"]
    for key, v in report.get("summary", {}).items():
        share = f" ({100 * v['used'] / v['available']:.1f} %)" if v["available"] else ""
        lines.append(f"  {key:4} {v['used']:6} / {v['available'] or '?':>6}{share}")
    for key, v in sorted(report.get("utilization", {}).items()):
        lines.append(f"  bel {key}: {v['used']} / {v['available']}")
    board_clock = report.get("clock_mhz")
    for clock, v in report.get("fmax_mhz", {}).items():
        need = board_clock or v["constraint"]
        verdict = "PASS" if v["achieved"] >= need else "FAIL"
        target = (f"; nextpnr target {v['constraint']:.2f} MHz"
                  if board_clock and abs(v["constraint"] - board_clock) > 0.01 else "")
        lines.append(f"  Fmax {clock}: {v['achieved']:.2f} MHz ({verdict} at the board's "
                     f"{need:.2f} MHz clock{target})")
    if report.get("subcycles_per_second"):
        lines.append(f"  at that Fmax: {report['subcycles_per_second']:.3g} subcycles/s "
                     f"({report.get('cycles_per_subcycle', 1)} cycle(s) a subcycle), "
                     f"{report['cell_evaluations_per_second']:.3g} cell evaluations/s")
    lines.append(f"  build time {report['build_seconds']:.1f} s ("
                 + ", ".join(f"{k} {v:.1f} s" for k, v in report["stage_seconds"].items()) + ")")
    if report.get("stage_cpu_seconds"):
        load = report.get("load_average")
        lines.append("  CPU time " + ", ".join(f"{k} {v:.1f} s" for k, v in
                                              report["stage_cpu_seconds"].items())
                     + (f" (load average {load[0]:.1f} at the end)" if load else ""))
    return lines


#: Yosys command, run after ``read_rtlil``: the flip-flops that drive a wire with the
#: :data:`bitgrid.hdl.grid.REPLICA` attribute (the pipelined grid's per-row copies) get
#: ``keep``, so that ``opt_merge`` does not fold the identical copies back into one register
#: driving the whole grid.
KEEP_REPLICAS = "setattr -set keep 1 a:bitgrid_replica %ci1 t:$dff %i"

#: ``synth_gowin`` options of every Gowin build (see :func:`build_overrides`).
GOWIN_SYNTH_OPTS = "-nowidelut"


def build_overrides(board, platform, name):
    """Amaranth build overrides: nextpnr's JSON report, Yosys' cell counts, the replicated
    registers kept (:data:`KEEP_REPLICAS`), and per family the P&R target clock
    (``board.pnr_target_mhz``) and router."""
    nextpnr = [f"--report {name}.nextpnr.json"]
    overrides = {"script_after_synth": f"tee -q -o {name}.stat.json stat -json",
                 "script_after_read": KEEP_REPLICAS}
    target = board.pnr_target_mhz
    if board.family == "ecp5":
        # router2: router1 needed over 5 minutes for a third of a 32 x 32 grid's arcs (the
        # configuration nets fan out to every cell's LUT RAM).
        nextpnr.append("--router router2")
        if target:
            nextpnr.append("--timing-allow-fail")     # the Fmax is reported either way
            # A later FREQUENCY for the same port replaces the one from the clock resource.
            overrides["add_preferences"] = (
                f'FREQUENCY PORT "{platform.default_clk}_0__io" {target} MHZ;')
    elif board.family == "gowin":
        # No MUX2_LUT5..8: with them ABC maps a flip-flop cell's 16:1 read multiplexers into
        # about 430 LUT4 (and 360 MUX2) a cell in a flattened grid, without them about 85 LUT4
        # (a 4 x 4 pipelined grid synthesised both ways); the LUT-RAM cells and the rest get
        # no larger (docs/boards.md, "Mixed storage by row").
        overrides["synth_opts"] = GOWIN_SYNTH_OPTS
        if target:
            overrides["pnr_target_mhz"] = target
            nextpnr.append("--timing-allow-fail")
    overrides["nextpnr_opts"] = " ".join(nextpnr)
    return overrides


def build(board, *, size=None, baud=DEFAULT_BAUD, output="build", name="bitgrid",
          progress=print, status=None, link="", lanes=1, force=False, engine="direct",
          evaluators=None):
    """Synthesise, place and route and pack the :class:`BoardTop` of ``board`` with the
    YoWASP tools, in folder ``output``.

    Writes ``output/<name>.<bin|bit|fs>``, the tool logs (``<name>.rpt`` Yosys, ``<name>.tim``
    nextpnr), nextpnr's JSON report and ``output/report.json`` (returned as a dict).

    :param progress: called with a line per stage, and once with
        :data:`~bitgrid.boards.progress.YOWASP_NOTICE` before the first YoWASP tool runs if
        one has no compiled copy cached yet.
    :param status: called, while a stage runs, with a status line from its logs whenever it
        changes (:class:`~bitgrid.boards.progress.LogFollower`), or None.
    :param link, lanes: see :class:`BoardTop` (a board of a mesh).
    :param force: build a grid larger than :func:`~bitgrid.boards.max_grid` estimates fits.
    :param engine, evaluators: the grid engine, see :class:`BoardTop` (the resource estimate
        is the direct grid's: it is not checked for another engine).
    :raises GridTooLargeError: the grid does not fit the board by the estimate (before any
        tool runs; not with ``force``).
    :raises ToolMissingError: a YoWASP tool is not installed.
    :raises BuildError: a stage failed or wrote no output.
    """
    board = get_board(board)
    if not force and engine == "direct":   # before the top is made (a large grid takes a while)
        check_fits(board, tuple(size) if size else board.default_size,
                   links=len(parse_sides(link, what='link')) if link else 0)
    commands = tool_env(board)
    top = BoardTop(board, size=size, baud=baud, link=link, lanes=lanes, engine=engine,
                   evaluators=evaluators)
    platform = board.platform()
    started = time.monotonic()
    progress(f"elaborating the {board.name} top: {top.size[0]}x{top.size[1]} grid, "
             f"{engine} engine, {board.storage} storage, {baud} baud"
             f"{f', links on {top.link} ({lanes} lane(s))' if top.link else ''}")
    # -q is passed by Amaranth unless AMARANTH_verbose is set; force it (the YoWASP pitfall).
    os.environ.pop("AMARANTH_verbose", None)
    plan = platform.prepare(top, name, **build_overrides(board, platform, name))
    build_dir = str(plan.extract(output))
    with open(os.path.join(build_dir, f"build_{name}.json")) as f:
        steps = json.load(f)["commands"]
    netlist_suffix, bitstream_suffix = PRODUCTS[board.family]
    expected = {"yosys": f"{name}{netlist_suffix}",
                "icepack": f"{name}.bin", "ecppack": f"{name}.bit", "gowin_pack": f"{name}.fs"}
    stage_seconds, stage_cpu = {}, {}
    if yowasp_compiles({package for _, package in TOOLS[board.family].values()}):
        progress(YOWASP_NOTICE)
    for argv in steps:
        tool = argv[0]
        stage = _STAGES.get(tool, tool)
        out_file = expected.get(tool, f"{name}.nextpnr.json")
        out_path = os.path.join(build_dir, out_file)
        if os.path.exists(out_path):
            os.remove(out_path)
        progress(f"{stage} ...")
        t0, cpu0 = time.monotonic(), _children_cpu()
        log_path = os.path.join(build_dir, f"{name}.{tool}.log")
        returncode = _run_stage([commands.get(tool, tool)] + argv[1:], build_dir, log_path,
                                status=status, output=out_path)
        stage_seconds[tool] = time.monotonic() - t0
        stage_cpu[tool] = _children_cpu() - cpu0
        if returncode != 0:
            raise BuildError(f"{stage} failed with status {returncode}; see "
                             f"{log_path}:\n{_tail(log_path)}")
        if not os.path.exists(out_path):
            hint = (" (YoWASP Yosys can end silently with status 0 when ABC logs; the build "
                    "passes -q, see docs/resources.md)" if tool == "yosys" else "")
            raise BuildError(f"{stage} ended without writing {out_file}{hint}; see {log_path}")
        progress(f"{stage}: done in {stage_seconds[tool]:.1f} s")
    report = _parse_report(board, build_dir, name, top.size, time.monotonic() - started,
                           stage_seconds, baud, grid=top.host.grid if top.host else None,
                           stage_cpu_seconds=stage_cpu)
    atomic_write(os.path.join(build_dir, "report.json"), json.dumps(report, indent=2))
    report["output"] = build_dir
    return report


def _children_cpu():
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tool_logs(argv, cwd):
    """The log files a tool writes besides its output: Yosys ``-l FILE``, nextpnr ``--log``."""
    return [os.path.join(cwd, argv[i + 1]) for i, arg in enumerate(argv[:-1])
            if arg in ("-l", "--log")]


def _run_stage(argv, cwd, log_path, *, status=None, poll=0.5, output=None):
    """Run one build command with its output in ``log_path``; its exit status. With
    ``status``, follow its output and its own log (:func:`_tool_logs`) while it runs and call
    ``status`` with each new status line (:class:`LogFollower`).

    The tool runs as a child that dies with this process (:mod:`bitgrid.processes`): on
    Ctrl-C (KeyboardInterrupt raised) or SIGTERM (:class:`~bitgrid.processes.Terminated`) it
    is ended at once and its half-written ``output`` removed."""
    if status is not None:
        for path in _tool_logs(argv, cwd):       # an earlier build's log is not this one's
            if os.path.isfile(path):
                os.remove(path)
    with open(log_path, "w") as log, \
            processes.started(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                              outputs=[output] if output else ()) as process:
        if status is None:
            return process.wait()
        follower = LogFollower()
        tails = [LogTail(log_path)] + [LogTail(path) for path in _tool_logs(argv, cwd)]
        while True:
            try:
                returncode = process.wait(timeout=poll)
            except subprocess.TimeoutExpired:
                returncode = None
            for tail in tails:
                for line in follower.feed(tail.read()):
                    status(line)
            if returncode is not None:
                return returncode


def _tail(path, lines=15):
    with open(path, errors="replace") as f:
        return "".join(f.readlines()[-lines:])
