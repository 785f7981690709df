"""The measured board builds: what ``bitgrid boards`` and ``make bench`` (part ``boards``) report
per board and engine when no newer build report is at hand (``docs/boards.md``, "Measured
builds"), and the rates they give.

Each entry of :data:`MEASURED` is one ``bitgrid build`` that placed and routed, with the
figures of its ``report.json``:

* ``board``, ``engine`` (``"direct"`` or ``"multiplexed"``), ``grid`` (``"WxH"``), ``cells``;
* ``storage`` and ``pipelined`` (the direct grid's options), ``cycles_per_subcycle`` (clock
  cycles a subcycle takes: 1 for the direct grid);
* ``fmax_mhz``: nextpnr's achieved Fmax of the system clock; ``build_seconds``: wall clock of
  the whole build; ``date``; ``conditions``: the machine's load and the tools, for people.

:func:`rates` gives subcycles per second (``Fmax / cycles_per_subcycle``) and cell evaluations
per second (``subcycles/s x cells / 2``: a subcycle evaluates one parity, half of the cells).
:func:`largest` picks, per board and engine, the largest grid (then the highest Fmax) among
these and any build reports.
"""

__all__ = ["MEASURED", "rates", "entry_from_report", "largest"]

#: The builds of docs/boards.md ("Measured builds"), oldest first.
MEASURED = [
    {"board": "icebreaker", "engine": "direct", "grid": "6x4", "cells": 24, "storage": "ff",
     "pipelined": False, "cycles_per_subcycle": 1, "fmax_mhz": 27.68, "build_seconds": 97,
     "date": "2026-11-30", "conditions": "2-core machine shared with other jobs"},
    {"board": "tangnano9k", "engine": "direct", "grid": "16x14", "cells": 224,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 1, "fmax_mhz": 71.79,
     "build_seconds": 224, "date": "2026-11-30",
     "conditions": "inferred LUT RAM; 2-core machine shared with other jobs"},
    {"board": "ulx3s-12f", "engine": "direct", "grid": "24x24", "cells": 576,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 1, "fmax_mhz": 52.36,
     "build_seconds": 212, "date": "2026-11-30",
     "conditions": "inferred LUT RAM; 2-core machine shared with other jobs"},
    {"board": "ulx3s-85f", "engine": "direct", "grid": "32x32", "cells": 1024,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 1, "fmax_mhz": 55.47,
     "build_seconds": 368, "date": "2026-11-30",
     "conditions": "inferred LUT RAM; 2-core machine shared with other jobs"},
    {"board": "ulx3s-85f", "engine": "direct", "grid": "64x64", "cells": 4096,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 1, "fmax_mhz": 35.42,
     "build_seconds": 3378, "date": "2026-11-30",
     "conditions": "inferred LUT RAM (31 min in Yosys); 2-core machine shared with other jobs"},
    {"board": "ulx3s-12f", "engine": "direct", "grid": "24x24", "cells": 576,
     "storage": "memory", "pipelined": True, "cycles_per_subcycle": 1, "fmax_mhz": 65.65,
     "build_seconds": 1786, "date": "2026-12-01",
     "conditions": "TRELLIS_DPR16X4 primitives, pipelined grid (its per-row copies still merged "
                   "by Yosys: before KEEP_REPLICAS); load average 19-21 on 2 cores, so about "
                   "3.5 CPU minutes (Yosys 35 s, nextpnr 165 s) took 30 minutes; critical path "
                   "in the protocol engine's answer multiplexer, not the grid"},
    {"board": "tangnano9k", "engine": "multiplexed", "grid": "64x64", "cells": 4096,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 523, "fmax_mhz": 52.41,
     "build_seconds": 1759, "date": "2026-12-01",
     "conditions": "4 evaluators, 22 / 26 BSRAM, unstaged loads; CPU 376 s (Yosys 22 s, "
                   "nextpnr 342 s, pack 12 s) at load average 14 on the shared 2-core machine"},
    {"board": "tangnano9k", "engine": "direct", "grid": "16x14", "cells": 224,
     "storage": "memory", "pipelined": True, "cycles_per_subcycle": 1, "fmax_mhz": 61.34,
     "build_seconds": 2392, "date": "2026-12-01",
     "conditions": "RAM16SDP4 primitives, pipelined grid with kept replicas; nextpnr target "
                   "the 27 MHz board clock; CPU: Yosys 18.8 s, nextpnr 578 s, pack 14.9 s at "
                   "load 9-17; critical path in the protocol engine's answer multiplexer"},
    {"board": "icebreaker", "engine": "multiplexed", "grid": "96x96", "cells": 9216,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 1555, "fmax_mhz": 21.10,
     "build_seconds": 750, "date": "2026-12-01",
     "conditions": "4 evaluators, the narrowed frame path; 4879 / 5280 logic cells (92 %), "
                   "4 / 4 SPRAM, 16 / 30 EBR, unstaged loads; board clock 12 MHz; Yosys 71 s "
                   "wall (22 s CPU), nextpnr 667 s wall (97 s CPU) at load average 9-10 on the "
                   "shared 2-core machine; critical path in the protocol engine's answer "
                   "multiplexer into the sender's CRC and COBS logic, not the grid"},
    {"board": "icebreaker", "engine": "multiplexed", "grid": "112x96", "cells": 10752,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 1555, "fmax_mhz": 20.65,
     "build_seconds": 1205, "date": "2026-12-01",
     "conditions": "4 evaluators, the narrowed frame path; 5113 / 5280 logic cells (96 %), "
                   "4 / 4 SPRAM, 16 / 30 EBR, unstaged loads; board clock 12 MHz; Yosys 225 s "
                   "wall (28 s CPU), nextpnr 973 s wall (296 s CPU) at load average 7-10 on the "
                   "shared 2-core machine; critical path in the protocol engine's answer "
                   "multiplexer into the sender's CRC and COBS logic, not the grid"},
    {"board": "ulx3s-85f", "engine": "multiplexed", "grid": "192x192", "cells": 36864,
     "storage": "memory", "pipelined": False, "cycles_per_subcycle": 389, "fmax_mhz": 35.22,
     "build_seconds": 3008, "date": "2026-12-01",
     "conditions": "48 evaluators, 194 / 208 DP16KD (144 configuration, 48 output, 2 host), "
                   "10590 / 83640 LUT, 5855 FF, unstaged loads; nextpnr target 100 MHz; CPU "
                   "Yosys 62.9 s, nextpnr 626.5 s, ecppack 4.7 s at load average 7-9 on the "
                   "shared 2-core machine; critical path the frame-write row's fan-out to the "
                   "configuration banks' block selects (27.5 of its 28.4 ns routing)"},
    {"board": "ulx3s-85f", "engine": "direct", "grid": "32x32", "cells": 1024,
     "storage": "memory", "pipelined": True, "cycles_per_subcycle": 1, "fmax_mhz": 69.76,
     "build_seconds": 226, "date": "2026-12-02",
     "conditions": "TRELLIS_DPR16X4 primitives, pipelined grid with enables and addresses per "
                   "segment of 8 cells, early_step; CPU: Yosys 26 s, nextpnr 163 s, load about "
                   "3 on the 2-core machine; critical path in the protocol engine's error "
                   "counters, not the grid"},
    {"board": "ulx3s-85f", "engine": "direct", "grid": "64x64", "cells": 4096,
     "storage": "memory", "pipelined": True, "cycles_per_subcycle": 1, "fmax_mhz": 32.41,
     "build_seconds": 3226, "date": "2026-12-02",
     "conditions": "TRELLIS_DPR16X4 primitives, pipelined grid with enables and addresses per "
                   "segment of 8 cells, early_step; router2 converged in 75 iterations; CPU: "
                   "Yosys 121 s, nextpnr 1,467 s on the 2-core machine shared with test runs "
                   "(load 2 to 6); critical path the readback group multiplexer (29.4 of "
                   "30.9 ns routing)"},
]


def rates(entry):
    """``(subcycles_per_second, cell_evaluations_per_second)`` of a measured build."""
    subcycles = entry["fmax_mhz"] * 1e6 / entry.get("cycles_per_subcycle", 1)
    return subcycles, subcycles * entry["cells"] / 2


def entry_from_report(report, source=None):
    """A :data:`MEASURED`-style entry from a ``bitgrid build`` report (``report.json``), or
    None for a build that did not get through place and route (no Fmax)."""
    achieved = [v["achieved"] for v in (report.get("fmax_mhz") or {}).values()
                if "achieved" in v]
    if not achieved or not report.get("board") or not report.get("cells"):
        return None
    return {"board": report["board"], "engine": report.get("engine", "direct"),
            "grid": report["grid"], "cells": report["cells"],
            "storage": report.get("storage"), "pipelined": report.get("pipelined", False),
            "cycles_per_subcycle": report.get("cycles_per_subcycle", 1),
            "fmax_mhz": min(achieved), "build_seconds": report.get("build_seconds"),
            "date": report.get("date"), "source": source}


def largest(entries):
    """``{(board, engine): entry}``: per board and engine the largest grid, then the highest
    Fmax, of ``entries``."""
    best = {}
    for entry in entries:
        key = (entry["board"], entry.get("engine", "direct"))
        if key not in best or (entry["cells"], entry["fmax_mhz"]) > \
                (best[key]["cells"], best[key]["fmax_mhz"]):
            best[key] = entry
    return best
