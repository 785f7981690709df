"""The report of ``bitgrid asic``: JSON (``report.json``, format ``bitgrid-asic-report-v1``)
and a readable table (``report.txt``, also printed). See docs/asic.md."""

import json
from pathlib import Path

from bitgrid.files import atomic_write

__all__ = ["format_table", "write_report"]

_NAMES = {
    "configuration_store": "configuration store",
    "lut_read_mux": "LUT read multiplexers",
    "output_registers": "output registers",
    "glue": "glue (incl. shared grid logic)",
}


def _path_cells(path):
    """Cell types along a timing path, one per instance (a flip-flop's CLK and Q are one)."""
    cells, last = [], None
    for step in path:
        instance = step["pin"].rsplit("/", 1)[0]
        if instance != last:
            cells.append(step["cell"])
        last = instance
    return cells


def format_table(report):
    """The readable table of a report (str, lines of at most 100 characters)."""
    a = report["area"]
    lines = [
        f"BitGrid {report['width']} x {report['height']}, {report['storage']} storage, "
        f"{report['library']} ({report['corner']})",
        "",
        f"  grid area              {a['grid_um2']:12.1f} um2 of standard cells",
        f"  per BitGrid cell       {a['per_cell_um2']:12.1f} um2   "
        f"({a['per_cell_nand2_eq']:.0f} NAND2-eq, ~{a['per_cell_transistors_est']} "
        f"transistors)",
        f"  per LUT4               {a['per_lut4_um2']:12.1f} um2",
        f"  one cell alone         {a['cell_alone_um2']:12.1f} um2",
        "",
        "  per cell, split:",
    ]
    for key, part in a["split_per_cell"].items():
        share = 100 * part["area_um2"] / a["per_cell_um2"] if a["per_cell_um2"] else 0
        count = sum(part["cells"].values())
        shared = part.get("shared_per_cell_um2")
        what = f"{count} cells" + ("" if shared is None else f" + {shared:.0f} um2 shared")
        lines.append(f"    {_NAMES.get(key, key):32s} {part['area_um2']:9.1f} um2  "
                     f"{share:5.1f} %  ({what})")
    lines += ["", "  cell types of one cell:"]
    for kind, count in sorted(report["cells"]["cell"].items(), key=lambda kv: -kv[1]):
        lines.append(f"    {count:5d}  {kind}")
    t = report.get("timing")
    if t:
        lines += [
            "",
            f"  worst path             {t['worst_path_ns']:12.3f} ns   "
            f"phase clock {t['phase_clock_mhz']:.0f} MHz",
            f"    from {t['startpoint']}",
            f"    to   {t['endpoint']}",
            "    through " + " > ".join(_path_cells(t["path"])),
            "  assumptions:",
        ] + [f"    - {text}" for text in t["assumptions"]]
    if report.get("zero_area_cells_from_lef"):
        lines += ["", "  cells with area 0 in the liberty, sized from the LEF: "
                  + ", ".join(report["zero_area_cells_from_lef"])]
    if report.get("place_route"):
        from .pnr import PlaceRoute, format_place_route
        lines += ["", format_place_route(PlaceRoute(**report["place_route"]))]
    if report.get("tinytapeout"):
        lines += ["", "  tinytapeout: " + json.dumps(report["tinytapeout"])[:200]]
    return "\n".join(lines) + "\n"


def write_report(report, out_dir):
    """Write ``report.json`` and ``report.txt`` into ``out_dir`` (atomically); returns the
    table."""
    out = Path(out_dir)
    table = format_table(report)
    atomic_write(out / "report.json", json.dumps(report, indent=2) + "\n")
    atomic_write(out / "report.txt", table)
    return table
