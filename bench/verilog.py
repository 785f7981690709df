"""Verilog generation: time and size of :func:`bitgrid.hdl.verilog.grid_verilog` by grid size.

Each size is generated once, in this process, for a grid without a power-up configuration (one
cell module, instantiated ``W * H`` times), the way the simulation runners and ``bitgrid
verilog`` call it. The time is the wall time of the whole call: elaborating the Amaranth design,
converting it to RTLIL and writing Verilog with YoWASP Yosys. The size is the length of the
Verilog text in bytes (it is ASCII).

Run ``bitgrid bench verilog`` (or ``python -m bitgrid.bench verilog``).
"""


from .common import Progress, check_sizes, exponents, figure, timer, value

__all__ = ["SUITE_SIZES", "QUICK_SIZES", "measure", "format_part"]

#: Grid sides of ``make bench`` and of ``python -m bitgrid.bench --quick``.
SUITE_SIZES = (16, 32, 64, 128, 256)
QUICK_SIZES = (16, 32, 64)


def measure(sizes=SUITE_SIZES, *, storage="ff", progress=True):
    """The Verilog part of the suite.

    :param sizes: square grid sides.
    :param storage: the grid's configuration storage (``"ff"`` or ``"memory"``).
    :param progress: a progress bar and a line per size on stderr.
    :returns: ``{"part": "verilog", "storage": ..., "rows": [...], "exponents": {...},
        "seconds": figure}``; each row has ``size``, ``cells`` and the figures ``seconds``
        (``s``), ``bytes`` (``bytes``) and ``bytes_per_cell`` (``bytes/cell``); the exponents
        fit ``seconds`` and ``bytes`` against ``cells``.
    :raises ToolMissingError: if YoWASP Yosys is not installed.
    """
    from bitgrid.hdl.verilog import grid_verilog
    sizes = check_sizes(sizes)
    started = timer()
    rows = []
    with Progress(len(sizes), "verilog", progress) as bar:
        for size in sizes:
            bar.start(f"{size}x{size}")
            start = timer()
            text = grid_verilog(size, size, storage=storage)
            seconds = timer() - start
            cells = size * size
            size_bytes = len(text.encode())
            rows.append({"size": size, "cells": cells,
                         "seconds": figure(seconds, "s"),
                         "bytes": figure(size_bytes, "bytes"),
                         "bytes_per_cell": figure(size_bytes / cells, "bytes/cell")})
            del text
            bar.done(f"verilog {size:>5} x {size:<5} {seconds:8.2f} s {size_bytes / 1e6:9.2f} MB")
    return {"part": "verilog", "storage": storage, "rows": rows,
            "exponents": exponents(rows, ["seconds", "bytes"]),
            "seconds": figure(timer() - started, "s")}


def format_part(part):
    """The Verilog part (see :func:`measure`) as a text table."""
    lines = [f"Verilog generation (grid_verilog, {part['storage']} storage)",
             f"{'grid':>11} {'cells':>9} {'time (s)':>9} {'size (MB)':>10} {'bytes/cell':>10}"]
    for r in part["rows"]:
        lines.append(f"{r['size']:>5} x {r['size']:<5}{r['cells']:>9} "
                     f"{value(r['seconds']):>9.2f} {value(r['bytes']) / 1e6:>10.2f} "
                     f"{value(r['bytes_per_cell']):>10.0f}")
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench verilog`
    import sys

    from bitgrid.cli.bench import bench
    bench(["verilog", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
