"""Area of a synthesised BitGrid cell, split by function (issue 14; docs/asic.md).

The split reads the mapped netlist of one cell module (Yosys JSON, flattened) and attributes
each standard cell by what it drives, with the pin directions and storage kinds of the
liberty (:class:`bitgrid.asic.pdk.LibraryCell`):

* ``output_registers``: the storage cells whose output is a bit of the cell's port ``o``
  (the four registered outputs of SPEC section 3);
* ``configuration_store``: every other storage cell (the 64 configuration flip-flops or
  latches), plus the logic that only feeds them (the flip-flop store's per-cell write decoder);
* ``lut_read_mux``: the logic that only feeds the output registers and the readback port
  ``cfg_rdata`` (the read-address select and the 16:1 multiplexers, with the output
  registers' enable and reset gating that synthesis merges into them);
* ``glue``: logic that feeds both, or neither.

Areas are in um2 (liberty areas; a zero liberty area is the LEF size, see
:meth:`bitgrid.asic.pdk.Pdk.cells`).
"""

import json

__all__ = ["CATEGORIES", "cell_split", "count_area"]

#: The categories of :func:`cell_split`, in report order.
CATEGORIES = ("configuration_store", "lut_read_mux", "output_registers", "glue")


def count_area(cells, library):
    """Total area in um2 of ``cells`` (``{type: count}``) in ``library`` (``{name:
    LibraryCell}``).

    :raises KeyError: naming a cell type the library does not have."""
    total = 0.0
    for kind, count in cells.items():
        if kind not in library:
            raise KeyError(f"cell type {kind!r} is not in the liberty")
        total += library[kind].area * count
    return total


def cell_split(netlist_json, top, library):
    """``{category: {"area_um2": float, "cells": {type: count}}}`` for the categories of
    :data:`CATEGORIES`, from the Yosys JSON file ``netlist_json`` of the flattened module
    ``top`` mapped to ``library`` (``{name: LibraryCell}``)."""
    with open(netlist_json) as file:
        module = json.load(file)["modules"][top]
    ports = module["ports"]
    output_bits = set(ports["o"]["bits"])
    readback_bits = set(ports["cfg_rdata"]["bits"])
    instances = {}
    driver = {}
    for name, cell in module["cells"].items():
        lib = library[cell["type"]]
        ins = [b for pin, bits in cell["connections"].items()
               if lib.pins.get(pin) != "output" for b in bits if isinstance(b, int)]
        outs = [b for pin, bits in cell["connections"].items()
                if lib.pins.get(pin) == "output" for b in bits if isinstance(b, int)]
        instances[name] = (cell["type"], lib.kind, ins, outs)
        for bit in outs:
            driver[bit] = name
    sequential = {n for n, (_, kind, _, _) in instances.items() if kind != "comb"}
    out_regs = {n for n in sequential if output_bits & set(instances[n][3])}
    store = sequential - out_regs

    def cone(bits):
        seen, todo = set(), list(bits)
        while todo:
            name = driver.get(todo.pop())
            if name is None or name in seen or name in sequential:
                continue
            seen.add(name)
            todo.extend(instances[name][2])
        return seen

    store_cone = cone(b for n in store for b in instances[n][2])
    read_cone = cone([b for n in out_regs for b in instances[n][2]] + sorted(readback_bits))
    category = {}
    for name in instances:
        if name in out_regs:
            category[name] = "output_registers"
        elif name in store:
            category[name] = "configuration_store"
        elif name in store_cone and name not in read_cone:
            category[name] = "configuration_store"
        elif name in read_cone and name not in store_cone:
            category[name] = "lut_read_mux"
        else:
            category[name] = "glue"
    split = {c: {"area_um2": 0.0, "cells": {}} for c in CATEGORIES}
    for name, (kind, _, _, _) in instances.items():
        part = split[category[name]]
        part["area_um2"] += library[kind].area
        part["cells"][kind] = part["cells"].get(kind, 0) + 1
    for part in split.values():
        part["area_um2"] = round(part["area_um2"], 3)
        part["cells"] = dict(sorted(part["cells"].items()))
    return split
