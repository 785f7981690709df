"""The area split of one cell (bitgrid.asic.area) on small netlists written out by hand, where
the right attribution of every standard cell is known."""

import json

import pytest

from bitgrid.asic.area import CATEGORIES, cell_split, count_area
from bitgrid.asic.pdk import LibraryCell

LIB = {
    "DFF": LibraryCell("DFF", 20.0, {"D": "input", "CLK": "input", "Q": "output"}, "ff"),
    "LAT": LibraryCell("LAT", 15.0, {"D": "input", "G": "input", "Q": "output"}, "latch"),
    "MUX": LibraryCell("MUX", 10.0, {"A": "input", "B": "input", "S": "input", "Y": "output"},
                       "comb"),
    "AND": LibraryCell("AND", 5.0, {"A": "input", "B": "input", "Y": "output"}, "comb"),
    "INV": LibraryCell("INV", 2.0, {"A": "input", "Y": "output"}, "comb"),
}


def _netlist(tmp_path, cells, ports):
    """A Yosys JSON module ``top``: ``cells`` ``{name: (type, {pin: bit})}``, ``ports``
    ``{name: [bits]}``."""
    module = {
        "ports": {name: {"direction": "input", "bits": bits} for name, bits in ports.items()},
        "cells": {name: {"type": kind, "connections": {p: [b] for p, b in pins.items()}}
                  for name, (kind, pins) in cells.items()},
        "netnames": {},
    }
    path = tmp_path / "cell.json"
    path.write_text(json.dumps({"modules": {"top": module}}))
    return path


def test_split(tmp_path):
    """Two latch words read through a mux into an output register; a write decoder (AND)
    in front of one latch enable; an inverter that feeds both the store's decoder and the
    read mux (glue); the readback port taken from the mux."""
    # bits: 2 clk, 3 we, 4 addr, 5 d, 10/11 latch outputs, 12 mux out, 13 o, 14 and out,
    # 15 inv out
    cells = {
        "inv": ("INV", {"A": 4, "Y": 15}),
        "dec": ("AND", {"A": 3, "B": 15, "Y": 14}),
        "l0": ("LAT", {"D": 5, "G": 14, "Q": 10}),
        "l1": ("LAT", {"D": 5, "G": 3, "Q": 11}),
        "mux": ("MUX", {"A": 10, "B": 11, "S": 15, "Y": 12}),
        "out": ("DFF", {"D": 12, "CLK": 2, "Q": 13}),
    }
    path = _netlist(tmp_path, cells, {"o": [13], "cfg_rdata": [12], "clk": [2]})
    split = cell_split(path, "top", LIB)
    assert tuple(split) == CATEGORIES
    assert split["configuration_store"] == {"area_um2": 35.0, "cells": {"AND": 1, "LAT": 2}}
    assert split["lut_read_mux"] == {"area_um2": 10.0, "cells": {"MUX": 1}}
    assert split["output_registers"] == {"area_um2": 20.0, "cells": {"DFF": 1}}
    assert split["glue"] == {"area_um2": 2.0, "cells": {"INV": 1}}


def test_count_area():
    assert count_area({"DFF": 4, "LAT": 64}, LIB) == pytest.approx(4 * 20 + 64 * 15)
    with pytest.raises(KeyError, match="'NAND9' is not in the liberty"):
        count_area({"NAND9": 1}, LIB)
