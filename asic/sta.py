"""Static timing of a synthesised grid with Debian's OpenSTA (``sta``; issue 14, docs/asic.md).

Assumptions (printed in every report, :data:`ASSUMPTIONS`): an ideal clock on port ``clk``
(no skew, no latency, no uncertainty); every other input arrives and every output is
required at the clock edge (input and output delay 0); wires as the liberty's default wire
load model says (none if it has none); typical corner; before layout. One clock runs one
subcycle of one phase (SPEC section 4), so the minimum clock period is the phase clock's.

The latch store's word lines are data, not clocks, to OpenSTA: paths through the latches are
unclocked and not reported. They are static while the grid runs (a frame write stops the
grid), and the write timing is safe by construction (:mod:`bitgrid.hdl.latch`).
"""

import dataclasses
import re
import subprocess
from pathlib import Path

from bitgrid.files import atomic_write
from bitgrid.toolchain import ToolMissingError, find_tool

__all__ = ["Timing", "StaError", "AsicToolMissingError", "run_sta", "require_sta", "ASSUMPTIONS",
           "STA_INSTALL"]

STA_INSTALL = "apt-get install --no-install-recommends opensta"

#: Clock period given to OpenSTA (ns); the minimum period is computed from the slack.
PERIOD_NS = 10.0


class AsicToolMissingError(ToolMissingError):
    """A tool of the ASIC flow that pip cannot install is missing; the message names the
    system package."""

    def __init__(self, tool, purpose, hint):
        RuntimeError.__init__(self, f"{tool} was not found on PATH (needed to {purpose}). "
                                    f"Install it with: {hint}")
        self.tool = tool


class StaError(RuntimeError):
    """OpenSTA failed or reported no constrained path; the message holds the end of its log."""


@dataclasses.dataclass
class Timing:
    """Worst setup path of a design.

    :attr worst_path_ns: data arrival time plus setup time of the worst path (ns): the
        minimum clock period.
    :attr phase_clock_mhz: ``1000 / worst_path_ns``.
    :attr startpoint, endpoint: instance names and their kinds as OpenSTA prints them.
    :attr path: ``[(pin, cell type, incr ns, time ns)]`` along the worst path.
    :attr wire_load: the wire load model used (or ``"none"``).
    :attr assumptions: list of str.
    """
    worst_path_ns: float
    phase_clock_mhz: float
    startpoint: str
    endpoint: str
    path: list
    wire_load: str
    assumptions: list
    log: Path


_ASSUMPTIONS = [
    "ideal clock on clk (no skew, latency or uncertainty)",
    "inputs arrive and outputs are required at the clock edge (delay 0)",
    "before layout: no placement, no routing, no clock tree",
    "latch-store word lines are data to OpenSTA: paths through the latches are unclocked "
    "(static while the grid runs)",
]
ASSUMPTIONS = tuple(_ASSUMPTIONS)


def _default_wire_load(liberty):
    with open(liberty, errors="replace") as file:
        for number, line in enumerate(file):
            match = re.match(r'\s*default_wire_load\s*:\s*"?([^";]+)"?', line)
            if match:
                return match.group(1).strip()
            if number > 5000:       # the library header is over
                return None
    return None


def require_sta():
    """Path of Debian's OpenSTA (``sta``).

    :raises AsicToolMissingError: if it is not installed (the message names the apt package).
    """
    sta = find_tool("sta")
    if sta is None:
        raise AsicToolMissingError("sta", "time the synthesised netlist (Debian's OpenSTA)",
                                   STA_INSTALL)
    return sta


def run_sta(netlist, top, liberty, work_dir, *, timeout=1800):
    """Worst setup path of module ``top`` of the mapped Verilog ``netlist`` (written with
    ``write_verilog -noexpr -simple-lhs``), timed with the plain liberty file ``liberty``.

    :returns: :class:`Timing`.
    :raises ToolMissingError: if ``sta`` is not installed (the message names the apt package).
    :raises StaError: if OpenSTA fails or finds no constrained path.
    """
    sta = require_sta()
    # Absolute paths: OpenSTA runs in work_dir, so a relative -o (out/...) must not be read
    # relative to it.
    work_dir = Path(work_dir).resolve()
    wire_load = _default_wire_load(liberty)
    script = work_dir / f"{top}.sta.tcl"
    atomic_write(script, "\n".join([
        f"read_liberty {Path(liberty).resolve()}",
        f"read_verilog {Path(netlist).resolve()}",
        f"link_design {top}",
        f"create_clock -name clk -period {PERIOD_NS} [get_ports clk]",
        "set_input_delay 0 -clock clk [delete_from_list [all_inputs] [get_ports clk]]",
        "set_output_delay 0 -clock clk [all_outputs]",
        "report_checks -path_delay max -digits 3",
        "exit",
    ]) + "\n")
    log = work_dir / f"{top}.sta.log"
    proc = subprocess.run([sta, "-no_splash", "-exit", script.name], cwd=work_dir,
                          capture_output=True, text=True, timeout=timeout)
    atomic_write(log, proc.stdout + proc.stderr)
    text = proc.stdout
    slack = re.search(r"^\s*(-?[0-9.]+)\s+slack \((MET|VIOLATED)\)", text, re.M)
    if proc.returncode != 0 or slack is None:
        tail = " / ".join((proc.stderr or text).strip().splitlines()[-4:]) or \
            f"no output, exit status {proc.returncode}"
        raise StaError(f"OpenSTA found no constrained path in {top}: {tail}; log {log}")
    start = re.search(r"^Startpoint: (.*)$", text, re.M).group(1).strip()
    end = re.search(r"^Endpoint: (.*)$", text, re.M).group(1).strip()
    path = []
    body = text[text.index("Startpoint:"):text.index("data arrival time")]
    for match in re.finditer(r"^\s*(-?[0-9.]+)\s+(-?[0-9.]+)\s+[\^v]\s+(\S+)\s+\((\S+)\)",
                             body, re.M):
        path.append((match.group(3), match.group(4), float(match.group(1)),
                     float(match.group(2))))
    worst = PERIOD_NS - float(slack.group(1))
    assumptions = _ASSUMPTIONS[:2] + [
        f"wire load: {'the liberty default model ' + repr(wire_load) if wire_load else 'none'}"
    ] + _ASSUMPTIONS[2:]
    return Timing(worst_path_ns=round(worst, 3), phase_clock_mhz=round(1000.0 / worst, 1),
                  startpoint=start, endpoint=end, path=path,
                  wire_load=wire_load or "none", assumptions=assumptions, log=log)
