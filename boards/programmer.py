"""Programming a built FPGA image into a board (:func:`flash`) and checking that the design
answers afterwards (:func:`check_design`).

:func:`flash` checks the image first (:func:`bitgrid.boards.image.check_image`: its family's
header, the device, the build report beside it) and writes either the FPGA's configuration
SRAM (lost at power-off) or the board's configuration flash (kept; the FPGA boots from it),
by default what the amaranth-boards platform does (:attr:`Board.program_to`: flash on the
iCEBreaker, SRAM on the ULX3S and the Tang Nano 9K).
"""

import os
import shutil
import subprocess
import time

from . import get_board

__all__ = ["FlashError", "MEMORIES", "MEMORY_ARGS", "flash", "find_port", "check_design"]


class FlashError(RuntimeError):
    """Programming failed or cannot start (no tool, no or a wrong FPGA image, no board), or the
    programmed design does not answer."""


#: What can be written: the FPGA's configuration SRAM or the board's configuration flash.
MEMORIES = ("sram", "flash")

#: Programmer -> memory -> its arguments (iceprog: ``-S`` SRAM, default flash;
#: openFPGALoader: ``-m``/``--write-sram``, ``-f``/``--write-flash``).
MEMORY_ARGS = {"iceprog": {"sram": ("-S",), "flash": ()},
               "openFPGALoader": {"sram": ("-m",), "flash": ("-f",)}}

_FLASH_ENV = {"iceprog": "ICEPROG", "openFPGALoader": "OPENFPGALOADER"}
_FLASH_HINTS = {"iceprog": "apt-get install fpga-icestorm   (iceprog)",
                "openFPGALoader": "apt-get install openfpgaloader"}
_MEMORY_WORDS = {"sram": "SRAM (until power-off)", "flash": "configuration flash"}


def flash(board, image, *, to=None, force=False, run=subprocess.run):
    """Program the FPGA image ``image`` into ``board`` as the amaranth-boards platform does
    (iceprog for the iCEBreaker, openFPGALoader for the ULX3S and the Tang Nano 9K;
    ``$ICEPROG`` and ``$OPENFPGALOADER`` override the command).

    :param to: ``"sram"`` or ``"flash"`` (:data:`MEMORIES`; default the board's
        :attr:`~bitgrid.boards.Board.program_to`).
    :param force: program an image without a build report beside it (the header and device
        checks still apply).
    :param run: runs the programmer (``subprocess.run``'s signature), for tests.
    :returns: ``(memory, info)``: what was written and the
        :class:`~bitgrid.boards.image.ImageInfo` of the image.
    :raises ImageError: the file is not an FPGA image for this board (nothing was run).
    :raises FlashError: no programmer, or the programmer failed (no board).
    """
    from .image import check_image
    board = get_board(board)
    memory = to or board.program_to
    if memory not in MEMORIES:
        raise ValueError(f"to must be one of {', '.join(MEMORIES)}, not {memory!r}")
    info = check_image(board, image, require_report=not force)
    tool = os.environ.get(_FLASH_ENV[board.flash_tool], board.flash_tool)
    if shutil.which(tool) is None:
        raise FlashError(f"{tool} was not found on PATH (needed to program the {board.name}). "
                         f"Install it with: {_FLASH_HINTS[board.flash_tool]}")
    argv = [tool, *board.flash_args, *MEMORY_ARGS[board.flash_tool][memory], str(image)]
    result = run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise FlashError(f"{tool} failed with status {result.returncode} writing the "
                         f"{board.name}'s {_MEMORY_WORDS[memory]} (is the {board.name} plugged "
                         f"in?): {output.splitlines()[-1] if output else 'no output'}")
    return memory, info


def find_port(board, *, ports=None):
    """The serial port of ``board``'s UART, found by its USB ID
    (:attr:`~bitgrid.boards.Board.usb_serial`) among ``ports`` (default: pyserial's
    ``serial.tools.list_ports.comports()``).

    :raises FlashError: if none or several match (give the port).
    """
    board = get_board(board)
    if ports is None:
        from serial.tools.list_ports import comports
        ports = comports()
    vid, pid, interface = board.usb_serial
    found = [p.device for p in ports if p.vid == vid and p.pid == pid and (
        interface is None or str(p.location or "").endswith(f".{interface}"))]
    usb = f"USB {vid:04x}:{pid:04x}" + ("" if interface is None else f" interface {interface}")
    if len(found) != 1:
        what = "no serial port" if not found else f"{len(found)} serial ports ({', '.join(found)})"
        raise FlashError(f"{what} of the {board.name} ({usb}) found to check the design: give "
                         "--port PORT (or --no-check)")
    return found[0]


def check_design(board, port=None, *, baud=115200, grid=None, transport=None, timeout=1.0,
                 settle=3.0):
    """Ask the design on ``board`` who it is (IDENTIFY, ``docs/host-protocol.md``) over its UART,
    as ``bitgrid run --target serial:PORT`` would, after programming.

    :param port: the serial port (default :func:`find_port`).
    :param baud: the UART's bit rate (the build's ``--baud``).
    :param grid: ``(width, height)`` the design must report (from the build report), or None.
    :param transport: a :class:`bitgrid.host.Transport` to use instead of the port (tests).
    :param timeout: seconds to wait for each answer.
    :param settle: seconds to keep trying to find and open the port (on the ULX3S the
        programmer and the UART share one USB chip, whose serial port comes back after
        programming).
    :returns: the :class:`bitgrid.host.Identity` the design answered.
    :raises FlashError: no port, no (valid) answer, or another grid than ``grid``; the
        message says what to check.
    """
    from bitgrid.host import LinkError, ProtocolTarget, SerialTransport
    board = get_board(board)
    deadline = time.monotonic() + settle
    while transport is None:
        try:
            transport = SerialTransport(port or find_port(board), baud)
        except (LinkError, FlashError) as error:
            if time.monotonic() < deadline:
                time.sleep(0.25)
                continue
            if isinstance(error, FlashError):
                raise
            raise FlashError(f"the {board.name} was programmed, but {error}: check --port") \
                from None
    name = getattr(transport, "name", port)
    try:
        with ProtocolTarget(transport, retries=2, timeout=timeout) as target:
            identity = target.identity
    except LinkError as error:
        transport.close()
        raise FlashError(
            f"the {board.name} was programmed, but the design does not answer IDENTIFY on "
            f"{name} ({error}); check that {name} is the board's UART, that --baud is the "
            f"build's ({baud} now), that the image is a `bitgrid build` image, and that the "
            "board came out of configuration (its LEDs)") from None
    if grid is not None and (identity.width, identity.height) != tuple(grid):
        raise FlashError(f"the design on {name} reports a {identity.width}x{identity.height} "
                         f"grid, but the image was built with {grid[0]}x{grid[1]}: another "
                         f"image runs (the board's flash booted?); program it again")
    return identity
