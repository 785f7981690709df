"""Programming a built FPGA image into a board (:func:`flash`)."""

import os
import shutil
import subprocess

from . import get_board

__all__ = ["FlashError", "flash"]


class FlashError(RuntimeError):
    """Programming failed or cannot start (no tool, no bitstream, no board)."""


_FLASH_ENV = {"iceprog": "ICEPROG", "openFPGALoader": "OPENFPGALOADER"}
_FLASH_HINTS = {"iceprog": "apt-get install fpga-icestorm   (iceprog)",
                "openFPGALoader": "apt-get install openfpgaloader"}


def flash(board, bitstream, *, run=subprocess.run):
    """Program ``bitstream`` into ``board`` as the amaranth-boards platform does (iceprog for
    the iCEBreaker, openFPGALoader for the ULX3S and the Tang Nano 9K; ``$ICEPROG`` and
    ``$OPENFPGALOADER`` override the command).

    :raises FlashError: no bitstream, no programmer, or the programmer failed (no board).
    """
    board = get_board(board)
    if not os.path.isfile(bitstream):
        raise FlashError(f"{bitstream}: no bitstream; build it with `bitgrid build --board "
                         f"{board.name}`")
    tool = os.environ.get(_FLASH_ENV[board.flash_tool], board.flash_tool)
    if shutil.which(tool) is None:
        raise FlashError(f"{tool} was not found on PATH (needed to program the {board.name}). "
                         f"Install it with: {_FLASH_HINTS[board.flash_tool]}")
    result = run([tool, *board.flash_args, bitstream], capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise FlashError(f"{tool} failed with status {result.returncode} (is the "
                         f"{board.name} plugged in?):\n{output}")
    return result
