"""Open PDK standard-cell libraries for the ASIC flow (issue 14; docs/asic.md): where their
liberty and LEF files are, and what the flow reads from them (cell areas, pin directions,
storage kind of each cell).

Three libraries, all at the typical corner:

* ``sky130``: SkyWater 130 nm ``sky130_fd_sc_hd``, ``tt_025C_1v80``, from an open_pdks
  ``$PDK_ROOT`` (``sky130A/libs.ref/sky130_fd_sc_hd/{lib,lef,techlef}``);
* ``gf180``: GlobalFoundries 180 nm ``gf180mcu_fd_sc_mcu7t5v0``, ``tt_025C_5v00``, from
  ``gf180mcuD/libs.ref/gf180mcu_fd_sc_mcu7t5v0/liberty`` of the same root;
* ``osu018``: OSU 0.18 um cells of Debian's ``qflow-tech-osu018``
  (``/usr/share/qflow/tech/osu018``); its liberty gives the LATCH cell area 0, so areas of
  zero come from the LEF's ``SIZE``.

Liberty and LEF files may be plain or gzip-compressed (the shared folder holds ``.gz``, a real
PDK root plain files). The PDK root is ``--pdk-root``, else ``$PDK_ROOT``, else the shared
folder ``../shared/pdk`` beside the repository.
"""

import dataclasses
import gzip
import os
import re
from pathlib import Path

from bitgrid.checks import check_choice
from bitgrid.files import atomic_write

__all__ = ["PDKS", "CORNERS", "PdkMissingError", "Pdk", "LibraryCell", "find_pdk",
           "read_liberty_cells", "read_lef_sizes", "default_pdk_root"]

#: PDKs the flow knows.
PDKS = ("sky130", "gf180", "osu018")

#: Corners the flow has liberty data for (the typical corner only).
CORNERS = ("tt",)

#: Folder of Debian's qflow-tech-osu018.
OSU018_DIR = Path("/usr/share/qflow/tech/osu018")

_REPO = Path(__file__).resolve().parent.parent


class PdkMissingError(ValueError):
    """A PDK's files are not where the flow looks; the message says how to install them."""


@dataclasses.dataclass(frozen=True)
class LibraryCell:
    """One standard cell of a liberty file: ``area`` in um2 (from the LEF where the liberty
    says 0), ``pins`` ``{pin: "input" | "output" | "inout"}``, ``kind`` ``"ff"``, ``"latch"``
    or ``"comb"``."""
    name: str
    area: float
    pins: dict
    kind: str

    @property
    def outputs(self):
        return tuple(p for p, d in self.pins.items() if d == "output")


#: Per PDK: the liberty and LEF below the root, the cells not to use, the NAND2 X1 cell.
_LAYOUT = {
    "sky130": {
        "title": "SkyWater 130 nm sky130_fd_sc_hd, tt_025C_1v80",
        "liberty": "sky130A/libs.ref/sky130_fd_sc_hd/lib/sky130_fd_sc_hd__tt_025C_1v80.lib",
        "lef": "sky130A/libs.ref/sky130_fd_sc_hd/lef/sky130_fd_sc_hd.lef",
        "techlef": "sky130A/libs.ref/sky130_fd_sc_hd/techlef/sky130_fd_sc_hd__nom.tlef",
        # Low-power-flow and probe cells are not for general logic; the clock gates and
        # delay cells are not for synthesis either.
        "dont_use": ("*lpflow*", "*probe*", "*__dlygate*", "*__dlymetal*", "*__clkdly*"),
        "nand2": "sky130_fd_sc_hd__nand2_1",
        "install": "ciel enable --pdk sky130 (or volare enable --pdk sky130), then "
                   "--pdk-root ~/.ciel (or set PDK_ROOT)",
    },
    "gf180": {
        "title": "GlobalFoundries 180 nm gf180mcu_fd_sc_mcu7t5v0, tt_025C_5v00",
        "liberty": "gf180mcuD/libs.ref/gf180mcu_fd_sc_mcu7t5v0/liberty/"
                   "gf180mcu_fd_sc_mcu7t5v0__tt_025C_5v00.lib",
        "lef": "gf180mcuD/libs.ref/gf180mcu_fd_sc_mcu7t5v0/lef/gf180mcu_fd_sc_mcu7t5v0.lef",
        "techlef": None,
        "dont_use": ("*__dly*", "*__icgt*", "*__antenna*", "*__filltie*", "*__endcap*"),
        "nand2": "gf180mcu_fd_sc_mcu7t5v0__nand2_1",
        "install": "ciel enable --pdk gf180mcu (or volare enable --pdk gf180mcu), then "
                   "--pdk-root ~/.ciel (or set PDK_ROOT)",
    },
    "osu018": {
        "title": "OSU 0.18 um standard cells (Debian qflow-tech-osu018), typical",
        "liberty": "osu018_stdcells.lib",
        "lef": "osu018_stdcells.lef",
        "techlef": None,
        "dont_use": ("CLKBUF*", "FILL*", "PAD*"),
        "nand2": "NAND2X1",
        "install": "apt-get install --no-install-recommends qflow-tech-osu018",
    },
}


def default_pdk_root():
    """``$PDK_ROOT`` if set, else the shared folder ``../shared/pdk`` beside the repository."""
    root = os.environ.get("PDK_ROOT")
    return Path(root) if root else _REPO.parent / "shared" / "pdk"


def _existing(base, relative):
    """``base/relative`` or ``base/relative.gz``, whichever exists, else None."""
    if relative is None:
        return None
    for candidate in (base / relative, base / (relative + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def read_text(path):
    """Text of a plain or gzip-compressed file."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as file:
        return file.read()


@dataclasses.dataclass(frozen=True)
class Pdk:
    """A standard-cell library found on this machine (see :func:`find_pdk`).

    ``liberty`` and ``lef`` are the files as found (maybe ``.gz``); :meth:`plain_liberty`
    gives an uncompressed copy for the tools. ``dont_use`` are glob patterns of cells that
    synthesis must not use; ``nand2`` names the NAND2 X1 cell (the NAND2-equivalent unit).
    """
    name: str
    title: str
    liberty: Path
    lef: Path
    techlef: Path
    dont_use: tuple
    nand2: str
    corner: str = "tt"

    def plain_liberty(self, folder):
        """Path of an uncompressed copy of the liberty in ``folder`` (the file itself if it is
        plain); the copy is made once and reused."""
        return self._plain(self.liberty, folder)

    def plain_lef(self, folder):
        """Like :meth:`plain_liberty` for the cell LEF (None if there is none)."""
        return None if self.lef is None else self._plain(self.lef, folder)

    @staticmethod
    def _plain(path, folder):
        if path.suffix != ".gz":
            return path
        target = Path(folder) / path.name[:-3]
        if not target.is_file() or target.stat().st_size == 0:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, read_text(path))
        return target

    def cells(self):
        """``{name: LibraryCell}`` of every cell in the liberty, areas of 0 replaced by the
        LEF's ``SIZE`` (cached per file).

        :raises PdkMissingError: if the files cannot be read or the liberty lacks the NAND2
            cell (an empty, cut-short or foreign file)."""
        key = (str(self.liberty), str(self.lef))
        if key not in _CELL_CACHE:
            install = _LAYOUT[self.name]["install"]
            try:
                sizes = read_lef_sizes(self.lef) if self.lef is not None else {}
                cells = read_liberty_cells(self.liberty)
            except (OSError, EOFError) as error:
                raise PdkMissingError(f"cannot read the {self.name} liberty or LEF "
                                      f"({error}): {self.liberty}; reinstall it with: "
                                      f"{install}") from None
            if self.nand2 not in cells:
                raise PdkMissingError(f"the {self.name} liberty {self.liberty} has no cell "
                                      f"{self.nand2} (cut short, or another library's); "
                                      f"reinstall it with: {install}")
            _CELL_CACHE[key] = {
                name: dataclasses.replace(cell, area=sizes.get(name, 0.0))
                if cell.area == 0 and name in sizes else cell
                for name, cell in cells.items()}
        return _CELL_CACHE[key]

    def zero_area_cells(self):
        """Cells whose liberty area is 0 and that took the LEF size instead."""
        cells = read_liberty_cells(self.liberty)
        return sorted(n for n, c in cells.items() if c.area == 0 and self.cells()[n].area > 0)

    @property
    def nand2_area(self):
        return self.cells()[self.nand2].area


_CELL_CACHE = {}
_LIBERTY_CACHE = {}


def find_pdk(name, root=None, corner="tt"):
    """The :class:`Pdk` ``name`` (one of :data:`PDKS`) at ``corner`` (one of :data:`CORNERS`).

    :param root: the PDK root (``--pdk-root``); default :func:`default_pdk_root`. Ignored for
        ``osu018`` unless it holds ``osu018_stdcells.lib``.
    :raises ValueError: for an unknown PDK or corner.
    :raises PdkMissingError: if the liberty file is missing (the message names the install
        command).
    """
    check_choice(name, "PDK", PDKS)
    check_choice(corner, "Corner", CORNERS)
    layout = _LAYOUT[name]
    if name == "osu018":
        base = Path(root) if root is not None and (Path(root) / layout["liberty"]).is_file() \
            else OSU018_DIR
    else:
        base = Path(root) if root is not None else default_pdk_root()
    liberty = _existing(base, layout["liberty"])
    if liberty is None:
        raise PdkMissingError(f"no {name} liberty file {layout['liberty']}[.gz] under {base}; "
                              f"install it with: {layout['install']}")
    return Pdk(name=name, title=layout["title"], liberty=liberty,
               lef=_existing(base, layout["lef"]), techlef=_existing(base, layout["techlef"]),
               dont_use=layout["dont_use"], nand2=layout["nand2"], corner=corner)


_CELL_RE = re.compile(r'^\s*cell\s*\(\s*"?([^")\s]+)"?\s*\)\s*\{')
_PIN_RE = re.compile(r'^\s*pin\s*\(\s*"?([^")\s]+)"?\s*\)\s*\{')
_AREA_RE = re.compile(r'^\s*area\s*:\s*([-0-9.eE+]+)')
_DIRECTION_RE = re.compile(r'^\s*direction\s*:\s*"?(\w+)"?')
_STORAGE_RE = re.compile(r'^\s*(ff|latch|ff_bank|latch_bank|statetable)\s*\(')


def read_liberty_cells(path):
    """``{name: LibraryCell}`` of the liberty file ``path`` (plain or ``.gz``), with the areas
    the liberty gives (cached per file). A line-oriented reader of the groups the flow needs
    (``cell``, its ``area``, its ``pin`` groups' ``direction`` and any ``ff``/``latch``
    group), not a general liberty parser."""
    key = str(path)
    if key in _LIBERTY_CACHE:
        return _LIBERTY_CACHE[key]
    cells = {}
    depth = 0
    cell = pin = None
    cell_depth = pin_depth = None
    for line in read_text(path).splitlines():
        code = line.split("/*")[0] if "/*" in line and "*/" not in line else \
            re.sub(r"/\*.*?\*/", "", line)
        if cell is None:
            match = _CELL_RE.match(code)
            if match:
                cell = {"name": match.group(1), "area": 0.0, "pins": {}, "kind": "comb"}
                cell_depth = depth
        else:
            if pin is None:
                match = _PIN_RE.match(code)
                if match and depth == cell_depth + 1:
                    pin, pin_depth = match.group(1), depth
                elif depth == cell_depth + 1:
                    area = _AREA_RE.match(code)
                    if area:
                        cell["area"] = float(area.group(1))
                    storage = _STORAGE_RE.match(code)
                    if storage:
                        cell["kind"] = "latch" if "latch" in storage.group(1) else "ff"
            elif depth == pin_depth + 1:
                direction = _DIRECTION_RE.match(code)
                if direction:
                    cell["pins"][pin] = direction.group(1)
        depth += code.count("{") - code.count("}")
        if pin is not None and depth <= pin_depth:
            pin = None
        if cell is not None and depth <= cell_depth:
            cells[cell["name"]] = LibraryCell(**cell)
            cell = None
    _LIBERTY_CACHE[key] = cells
    return cells


def read_lef_sizes(path):
    """``{macro: area in um2}`` from the ``SIZE w BY h`` of each ``MACRO`` of a LEF file."""
    sizes = {}
    macro = None
    for line in read_text(path).splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "MACRO":
            macro = words[1]
        elif macro and len(words) >= 4 and words[0] == "SIZE" and words[2] == "BY":
            sizes[macro] = float(words[1]) * float(words[3])
        elif macro and len(words) >= 2 and words[0] == "END" and words[1] == macro:
            macro = None
    return sizes
