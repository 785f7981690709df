"""Published layouts of the public benchmark circuits, for the compile bench's outside rows
(issue 36: "a column with the best published MNT Bench layout of each circuit").

MNT Bench (github.com/cda-tum/mnt-bench, the benchmark layouts of the Munich Nanotech Toolkit)
publishes layouts of the same ISCAS-85 and EPFL circuits made by the *fiction* tools for
field-coupled nanotechnologies: QCA (the ``ONE`` gate library, 2DDWave or USE clocking) and
silicon dangling bonds (``Bestagon``, row clocking). Like a BitGrid, those are clocked grids of
tiles where every tile is a gate or a wire segment and a signal moves one tile per clock
phase. The figure here is the smallest bounding box (x times y tiles) over every layout MNT
Bench lists for the circuit, whatever the library, clocking or algorithm: from its
``layout_dimensions.json`` as of commit 7322608 (2025-08-10). Tiles of another technology are
not BitGrid cells; the column says how the sizes compare, as the field measures them.
"""

__all__ = ["MNT_BENCH", "mnt_bench"]

#: circuit -> (x, y, layout file): the smallest published layout (tiles wide, high).
MNT_BENCH = {
    "c17": (4, 7, "c17_ONE_2DDWave_exact_UnOpt_UnOrd_area.fgl"),
    "c432": (59, 217, "c432_Bestagon_BEST.fgl"),
    "c499": (108, 361, "c499_Bestagon_BEST.fgl"),
    "c880": (179, 490, "c880_Bestagon_BEST.fgl"),
    "c1355": (103, 381, "c1355_Bestagon_ROW_ortho_Opt_Ord_none.fgl"),
    "c1908": (123, 418, "c1908_Bestagon_BEST.fgl"),
    "ctrl": (64, 105, "ctrl_ONE_BEST.fgl"),
    "router": (77, 102, "router_ONE_BEST.fgl"),
    "int2float": (74, 289, "int2float_Bestagon_BEST.fgl"),
    "priority": (213, 628, "priority_Bestagon_BEST.fgl"),
    "cavlc": (454, 962, "cavlc_ONE_BEST.fgl"),
    "dec": (228, 442, "dec_ONE_BEST.fgl"),
    "i2c": (675, 1248, "i2c_ONE_BEST.fgl"),
    "adder": (320, 1273, "adder_Bestagon_BEST.fgl"),
    "bar": (2228, 5159, "bar_ONE_BEST.fgl"),
    "max": (1959, 4894, "max_Bestagon_BEST.fgl"),
    "sin": (3582, 7863, "sin_Bestagon_BEST.fgl"),
}


def mnt_bench(name):
    """``(x, y, layout file)`` of the smallest MNT Bench layout of circuit ``name`` (a
    Verilog file's stem, case as published), or None."""
    return MNT_BENCH.get(name)
