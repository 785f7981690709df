"""What an FPGA image must be before ``bitgrid flash`` programs it (:func:`check_image`).

An FPGA image (the file place and route and packing write: ``.bin``, ``.bit``, ``.fs``) is not
a BitGrid program (``.bgbs``, loaded over the UART into the grid an image holds). The checks,
reading at most :data:`HEADER_BYTES` of the file (never all of it: a device or a FIFO given by
mistake is not read for ever):

* **the family's header** (:func:`image_family`):

  - iCE40 ``.bin`` (icepack): an optional comment section ``FF 00 ... 00 FF``, then the
    synchronisation word ``7E AA 99 7E``;
  - ECP5 ``.bit`` (ecppack): the comment section ``FF 00 ... 00 FF`` (null-terminated
    strings), then the preamble ``FF FF BD B3``, and among the first commands ``VERIFY_ID``
    (``E2 00 00 00`` and the device's 32-bit JTAG IDCODE, big-endian; prjtrellis
    ``docs/architecture/bitstream_format.rst``);
  - Gowin ``.fs`` (gowin_pack): text, optional ``//`` comment lines, then one line of ``0``
    and ``1`` characters per frame; the header frames hold the preamble ``FF FF A5 C3`` and
    the device ID command ``06 00 00 00`` with the IDCODE (Apicula ``doc/commandstructure.md``,
    ``apycula/bslib.py``);

* **the device**: the IDCODE the image carries is the board's (:attr:`Board.jtag_idcode`; an
  iCE40 image carries none);
* **the build report beside it** (``report.json``, written by ``bitgrid build``): built for
  this board, naming this file, and (for reports that record it) with this file's SHA-256.
"""

import hashlib
import json
import os
import stat
import typing

from bitgrid.bitstream import MAGIC as PROGRAM_MAGIC

from . import get_board
from .programmer import FlashError

__all__ = ["ImageError", "ImageInfo", "HEADER_BYTES", "MAX_IMAGE_BYTES", "image_family",
           "check_image", "file_sha256"]

#: How much of a file :func:`image_family` reads.
HEADER_BYTES = 64 * 1024

#: The largest FPGA image accepted (an uncompressed LFE5U-85F ``.bit`` is about 2.3 MB, a
#: GW1NR-9 ``.fs`` about 3 MB of text).
MAX_IMAGE_BYTES = 32 * 1024 * 1024

_FAMILY_NAMES = {"ice40": "iCE40", "ecp5": "ECP5", "gowin": "Gowin"}


class ImageError(FlashError):
    """A file that is not an FPGA image for the board (wrong family, wrong device, a BitGrid
    program, no or another board's build report); nothing was programmed."""


class ImageInfo(typing.NamedTuple):
    """What :func:`check_image` found: ``family`` (``"ice40"``, ``"ecp5"``, ``"gowin"``),
    ``idcode`` (None for iCE40), ``report`` (the build report, a dict, or None when not
    required and absent) and ``grid`` (``(width, height)`` from the report, or None)."""
    family: str
    idcode: typing.Optional[int]
    report: typing.Optional[dict]
    grid: typing.Optional[tuple]


def _after_comment(data):
    """The bytes after a Lattice comment section ``FF 00 ... 00 FF`` (``data`` itself if it does
    not start with one; None if the section does not end within ``data``)."""
    if not data.startswith(b"\xff\x00"):
        return data
    end = data.find(b"\x00\xff", 2)
    while end != -1:
        rest = data[end + 2:]
        # icepack and ecppack end the section with 00 FF right before the sync word or
        # preamble; a 00 FF inside a string cannot be followed by one.
        if rest.startswith((b"\x7e\xaa\x99\x7e", b"\xff\xff\xbd\xb3")):
            return rest
        end = data.find(b"\x00\xff", end + 1)
    return data[2:]


def _ecp5_idcode(body):
    """The IDCODE of the ``VERIFY_ID`` command among an ECP5 image's first commands."""
    at = body.find(b"\xe2\x00\x00\x00", 4, 64)
    if at == -1 or len(body) < at + 8:
        return None
    return int.from_bytes(body[at + 4:at + 8], "big")


def _gowin(data):
    """``(True, idcode)`` if ``data`` starts like a gowin_pack ``.fs``, else ``(False, None)``."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return False, None
    frames = []
    for line in text.splitlines()[:-1]:            # the last line may be cut off
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        if set(line) - {"0", "1"} or len(line) % 8:
            return False, None
        frames.append(int(line, 2).to_bytes(len(line) // 8, "big"))
        if len(frames) == 8:
            break
    header = b"".join(frames)
    if b"\xff\xff\xa5\xc3" not in header:
        return False, None
    idcode = None
    for frame in frames:
        if frame.startswith(b"\x06\x00\x00\x00") and len(frame) >= 8:
            idcode = int.from_bytes(frame[4:8], "big")
    return True, idcode


def image_family(data):
    """The FPGA family of an image from its first bytes: ``(family, idcode)``; ``family`` is
    ``"ice40"``, ``"ecp5"``, ``"gowin"``, ``"bitgrid"`` (a BitGrid program) or None."""
    if data.startswith(PROGRAM_MAGIC):
        return "bitgrid", None
    body = _after_comment(data)
    if body is not None and body.startswith(b"\x7e\xaa\x99\x7e"):
        return "ice40", None
    if body is not None and body.startswith(b"\xff\xff\xbd\xb3"):
        return "ecp5", _ecp5_idcode(body)
    is_gowin, idcode = _gowin(data)
    if is_gowin:
        return "gowin", idcode
    return None, None


def file_sha256(path):
    """The SHA-256 of a file as hex, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_header(path, board):
    build = f"build it with `bitgrid build --board {board.name}`"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ImageError(f"{path}: no FPGA image; {build}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ImageError(f"{path}: not a regular file; give the FPGA image that `bitgrid build` "
                         "wrote")
    if info.st_size == 0 or info.st_size > MAX_IMAGE_BYTES:
        raise ImageError(f"{path}: {info.st_size} bytes is not the size of an FPGA image; "
                         f"{build}")
    with open(path, "rb") as f:
        return f.read(HEADER_BYTES)


def check_image(board, path, *, require_report=True):
    """Check that ``path`` is an FPGA image for ``board`` before it is programmed (the module
    docstring lists the checks). Reads at most :data:`HEADER_BYTES` of it, and all of it only
    to compare the report's SHA-256.

    :param require_report: refuse an image without a build report beside it (``False``: check
        the report if there is one).
    :returns: :class:`ImageInfo`.
    :raises ImageError: one line saying what is wrong and what to do.
    """
    board = get_board(board)
    family, idcode = image_family(_read_header(path, board))
    want = _FAMILY_NAMES[board.family]
    if family == "bitgrid":
        raise ImageError(f"{path} is a BitGrid program, not an FPGA image: load it into a "
                         f"programmed board with `bitgrid run {path} --target serial:PORT`; "
                         f"flash the FPGA image `bitgrid build --board {board.name}` writes")
    if family is None:
        raise ImageError(f"{path} is not an FPGA image (no {want} header): give the "
                         f"bitgrid{board.bitstream_suffix} that `bitgrid build --board "
                         f"{board.name}` writes")
    if family != board.family:
        raise ImageError(f"{path} is an {_FAMILY_NAMES[family]} image, but the {board.name} has "
                         f"an {want} FPGA ({board.fpga}): build it with `bitgrid build --board "
                         f"{board.name}`")
    if board.jtag_idcode is not None and idcode != board.jtag_idcode:
        found = "no device ID" if idcode is None else f"device ID 0x{idcode:08X}"
        raise ImageError(f"{path} is an image for another device ({found}; the {board.name}'s "
                         f"{board.fpga} is 0x{board.jtag_idcode:08X}): build it with `bitgrid "
                         f"build --board {board.name}`")
    report = _check_report(board, path, require_report)
    grid = None
    if report is not None:
        try:
            width, height = (int(n) for n in str(report["grid"]).split("x"))
            grid = (width, height)
        except (KeyError, ValueError):
            grid = None
    return ImageInfo(family, idcode, report, grid)


def _check_report(board, path, required):
    report_path = os.path.join(os.path.dirname(os.path.abspath(path)), "report.json")
    rebuild = f"build it again with `bitgrid build --board {board.name}`"
    if not os.path.isfile(report_path):
        if not required:
            return None
        raise ImageError(f"{path}: no build report (report.json) beside it, so which board and "
                         f"grid it holds is unknown; {rebuild}, or pass --force to program it "
                         "anyway")
    try:
        with open(report_path) as f:
            report = json.load(f)
        if not isinstance(report, dict):
            raise ValueError("not an object")
    except (OSError, ValueError) as error:
        raise ImageError(f"{report_path}: not a build report ({error}); {rebuild}") from None
    if report.get("board") != board.name:
        raise ImageError(f"{path} was built for the {report.get('board')!r} board "
                         f"({report_path}), not the {board.name}; {rebuild}")
    name = report.get("bitstream")
    if name is not None and name != os.path.basename(path):
        raise ImageError(f"{report_path} describes {name}, not {os.path.basename(path)}; "
                         f"{rebuild}")
    digest = report.get("bitstream_sha256")
    if digest is not None and digest != file_sha256(path):
        raise ImageError(f"{path} is not the image {report_path} describes (its SHA-256 "
                         f"differs: changed since the build?); {rebuild}")
    return report
