"""Viewer files for the waveforms of ``bitgrid sim --waves`` (:func:`write_save_file`).

Beside a dump ``run.vcd`` (or ``run.fst``) goes ``run.gtkw``, a GTKWave save file (open it with
``gtkwave run.gtkw``) that shows the grid top's ports in groups (the edge inputs and outputs,
the stepping signals ``clk``, ``step``, ``phase`` and ``subcycle``, reset, and the
configuration port), starts the view where stepping starts and puts the primary marker (and
named marker A) there: most of a trace is the configuration load and readback before it.

The signal names are those of the dump: read from a VCD's header (:func:`vcd_signals`), so
that the save file names only signals that exist; for an FST (binary) they are derived from
the top's ports and the simulator's naming of the top scope.
"""

import os
from pathlib import Path

from bitgrid.files import atomic_write

__all__ = ["GROUPS", "vcd_signals", "save_file_path", "write_save_file"]

#: ``(group name, ports)`` in display order (ports of the grid top, see
#: :func:`bitgrid.hdl.verilog.grid_verilog`).
GROUPS = (
    ("stepping", ("clk", "step", "phase", "subcycle")),
    ("edge inputs", ("i__n", "i__e", "i__s", "i__w")),
    ("edge outputs", ("o__n", "o__e", "o__s", "o__w")),
    ("reset", ("rst",)),
    ("configuration port", ("cfg__begin", "cfg__row", "cfg__addr", "cfg__w_data", "cfg__w_en",
                            "cfg__w_ready", "cfg__commit", "cfg__crc", "cfg__valid",
                            "cfg__error", "cfg__r_data")),
)

#: The top's scope in the dumps of each simulator (for an FST, whose header is not read).
_TOP_SCOPE = {"icarus": "{top}", "verilator": "TOP.{top}"}

def vcd_signals(path):
    """``{full name: (scope, name, width, range)}`` of the variables declared in the header of
    the VCD file ``path`` (up to ``$enddefinitions``); ``full name`` is
    ``scope.name[range]`` as GTKWave names it (``bitgrid_grid.i__n[1:0]``), ``range`` is ""
    for a 1-bit variable. Escaped names (``\\$10``) are kept as they are.

    :raises OSError: if the file cannot be read.
    :raises ValueError: if the header does not end (not a VCD file).
    """
    with open(path, encoding="utf-8", errors="replace") as file:
        words = []
        for line in file:
            words += line.split()
            if "$enddefinitions" in words:
                break
        else:
            raise ValueError(f"{os.fspath(path)} has no $enddefinitions: not a VCD file")
    scopes, found, index = [], {}, 0
    while index < len(words):
        word = words[index]
        if word == "$scope" and index + 2 < len(words):
            scopes.append(words[index + 2])
        elif word == "$upscope" and scopes:
            scopes.pop()
        elif word == "$var" and index + 4 < len(words):
            # $var <type> <width> <id> <name> [<range>] $end
            width, name = int(words[index + 2]), words[index + 4]
            rest = words[index + 5]
            bits = rest if rest.startswith("[") else ""
            if scopes:
                scope = ".".join(scopes)
                found[f"{scope}.{name}{bits}"] = (scope, name, width, bits)
        index += 1
    return found


def _port_names(waves_path, top, simulator, widths):
    """``{port: full name}`` of the top's ports in the dump."""
    if Path(waves_path).suffix.lower() == ".vcd":
        names = {}
        for full, (scope, name, _, _) in vcd_signals(waves_path).items():
            if scope.split(".")[-1] == top and name not in names:
                names[name] = full
        return names
    scope = _TOP_SCOPE.get(simulator, "{top}").format(top=top)
    return {port: f"{scope}.{port}" + (f"[{width - 1}:0]" if width > 1 else "")
            for port, width in widths.items()}


def save_file_path(waves_path):
    """The GTKWave save file beside the dump ``waves_path`` (``run.vcd`` -> ``run.gtkw``)."""
    return Path(waves_path).with_suffix(".gtkw")


def write_save_file(waves_path, *, top, simulator, marker, widths):
    """Write the GTKWave save file of the dump ``waves_path`` (see the module docstring) and
    return its path.

    :param top: the top module's name (``bitgrid_grid``).
    :param simulator: ``"icarus"`` or ``"verilator"`` (the top scope of an FST).
    :param marker: the time where stepping starts, in the dump's time unit (the simulator's
        precision: cocotb's ``get_sim_time("step")``), or None.
    :param widths: ``{port: bits}`` of the top's ports (for an FST).
    """
    names = _port_names(waves_path, top, simulator, widths)
    dump = Path(waves_path).resolve()
    marker = None if marker is None else int(marker)
    lines = ["[*] GTKWave save file written by bitgrid sim --waves",
             f'[dumpfile] "{dump}"',
             f'[savefile] "{save_file_path(dump)}"']
    if marker is not None:
        # The zoom, the primary marker and named marker A, then the other named markers.
        lines += [f"[*] stepping starts at {marker} (primary marker and marker A)",
                  f"[timestart] {marker}",
                  f"*-14.000000 {marker} {marker}" + " -1" * 25]
    lines += ["[sst_expanded] 1", f"[treeopen] {top}."]
    for group, ports in GROUPS:
        present = [names[p] for p in ports if p in names]
        if not present:
            continue
        lines += ["@800200", f"-{group}"]
        for port, name in zip([p for p in ports if p in names], present):
            wide = "[" in name
            lines += ["@22" if wide and port != "subcycle" else "@24" if wide else "@28", name]
        lines += ["@1000200", f"-{group}"]
    path = save_file_path(waves_path)
    atomic_write(path, "\n".join(lines) + "\n")
    return path
