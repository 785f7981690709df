"""`bitgrid flash`: the FPGA image is checked before anything is programmed (its family's header
and device, the build report beside it), SRAM or flash is said and chosen, and the design is
asked IDENTIFY over the UART afterwards.

No board and no programmer here: the programmer is a fake script named by ``$ICEPROG`` /
``$OPENFPGALOADER`` that records its arguments, and the UART is a pseudo-terminal whose other
end a thread serves with the host protocol's device model (:class:`bitgrid.host.DeviceModel`).
The images are made here from the formats' documentation (icestorm, prjtrellis
``docs/architecture/bitstream_format.rst``, Apicula ``doc/commandstructure.md``), not from the
code under test.
"""

import hashlib
import json
import os
import select
import sys
import threading
import types

import pytest
from click.testing import CliRunner

from bitgrid import boards
from bitgrid.boards import BOARDS, check_image
from bitgrid.boards.image import ImageError, image_family
from bitgrid.boards.programmer import FlashError, check_design, find_port
from bitgrid.cli import main
from bitgrid.config import Configuration
from bitgrid.bitstream import write as write_program
from bitgrid.host import PROTOCOL_VERSION, DeviceModel


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)


# -- FPGA images, written from the formats' documentation ---------------------------------------

def ice40_image():
    """icepack: comment section FF 00 .. 00 FF, sync word 7E AA 99 7E, commands."""
    return (b"\xff\x00" + b"Lattice\x00iCEcube2 2020.12\x00" + b"\x00\xff"
            + b"\x7e\xaa\x99\x7e" + b"\x51\x00\x01\x05\x92\x00\x20\x62\x01\x4b\x72\x00\x90"
            + bytes(300))


def ecp5_image(idcode):
    """ecppack: comment section, preamble FF FF BD B3, 4 dummy bytes, LSC_RESET_CRC (3B),
    VERIFY_ID (E2 00 00 00 + IDCODE)."""
    return (b"\xff\x00" + b"Part: LFE5U-85F-6CABGA381\x00" + b"\x00\xff"
            + b"\xff\xff\xbd\xb3" + b"\xff\xff\xff\xff" + b"\x3b\x00\x00\x00"
            + b"\xe2\x00\x00\x00" + idcode.to_bytes(4, "big") + b"\x22\x00\x00\x00"
            + b"\x40\x00\x00\x00" + bytes(300))


def gowin_fs(idcode):
    """gowin_pack .fs: a line of 0/1 per frame; preamble FF.. FF A5 C3, device ID 06 00 00 00."""
    frames = [b"\xff" * 20, b"\xff\xff\xff\xff\xa5\xc3", b"\x06\x00\x00\x00" +
              idcode.to_bytes(4, "big"), b"\x10\x00\x00\x00\x00\x00\x00\x00",
              b"\x3b\x80\x02\xc8"] + [bytes(40)] * 4
    lines = ["".join(f"{b:08b}" for b in frame) for frame in frames]
    return ("//Gowin FS file\n" + "\n".join(lines) + "\n").encode()


IMAGES = {"icebreaker": ice40_image(), "ulx3s-85f": ecp5_image(0x41113043),
          "ulx3s-12f": ecp5_image(0x21111043), "tangnano9k": gowin_fs(0x1100481B)}


def built(tmp_path, name, data=None, *, grid="6x4", report=True, **fields):
    """A build folder as `bitgrid build` leaves it: the image and report.json."""
    board = BOARDS[name]
    folder = tmp_path / board.name
    folder.mkdir(exist_ok=True)
    image = folder / f"bitgrid{board.bitstream_suffix}"
    image.write_bytes(IMAGES[board.name] if data is None else data)
    if report:
        content = {"board": board.name, "grid": grid, "baud": 115200,
                   "bitstream": image.name,
                   "bitstream_sha256": hashlib.sha256(image.read_bytes()).hexdigest()}
        content.update(fields)
        (folder / "report.json").write_text(json.dumps(content))
    return image


@pytest.fixture
def programmer(tmp_path, monkeypatch):
    """A fake iceprog and openFPGALoader: each call appends its arguments to calls.json."""
    log = tmp_path / "calls.jsonl"
    script = tmp_path / "fake-programmer"
    script.write_text(f"#!{sys.executable}\nimport json, sys\n"
                      f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    script.chmod(0o755)
    monkeypatch.setenv("ICEPROG", str(script))
    monkeypatch.setenv("OPENFPGALOADER", str(script))

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] \
            if log.exists() else []
    return calls


# -- The header of each family -------------------------------------------------------------------

def test_image_family_from_the_documented_headers():
    assert image_family(ice40_image()) == ("ice40", None)
    assert image_family(b"\x7e\xaa\x99\x7e" + bytes(10)) == ("ice40", None)   # no comment
    assert image_family(ecp5_image(0x41113043)) == ("ecp5", 0x41113043)
    assert image_family(gowin_fs(0x1100481B)) == ("gowin", 0x1100481B)
    program = write_program(Configuration(4, 4))
    assert image_family(program)[0] == "bitgrid"
    assert image_family(bytes(range(256)) * 4) == (None, None)
    assert image_family(b"\xff\x00Lattice\x00\x00\xff" + bytes(8)) == (None, None)


@pytest.mark.parametrize("seed", range(20))
def test_random_files_are_not_images(seed):
    import random
    data = random.Random(seed).randbytes(4096)
    assert image_family(data) == (None, None)


# -- Refusals: exit 2, one line, nothing programmed -----------------------------------------------

def refused(result, calls, *words):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for word in words:
        assert word in lines[0], lines[0]
    assert calls() == []                      # the programmer never ran
    assert "programmed the" not in result.output


def test_a_bitgrid_program_is_refused(tmp_path, programmer):
    image = built(tmp_path, "icebreaker", write_program(Configuration(6, 4)))
    result = invoke("flash", "--board", "icebreaker", "--image", image)
    refused(result, programmer, "is a BitGrid program, not an FPGA image", "bitgrid run")


def test_a_random_file_is_refused(tmp_path, programmer):
    image = built(tmp_path, "ulx3s-85f", os.urandom(5000))
    result = invoke("flash", "--board", "ulx3s-85f", "--bitstream", image)
    refused(result, programmer, "is not an FPGA image (no ECP5 header)")


def test_an_ice40_image_is_refused_by_the_ulx3s(tmp_path, programmer):
    image = built(tmp_path, "ulx3s-85f", ice40_image())
    result = invoke("flash", "--board", "ulx3s-85f", "--image", image)
    refused(result, programmer, "is an iCE40 image, but the ulx3s-85f has an ECP5 FPGA")


def test_an_image_for_another_ecp5_is_refused(tmp_path, programmer):
    image = built(tmp_path, "ulx3s-85f", ecp5_image(0x41111043))          # a 25F image
    result = invoke("flash", "--board", "ulx3s-85f", "--image", image)
    refused(result, programmer, "device ID 0x41111043", "0x41113043")


def test_an_image_without_a_report_needs_force(tmp_path, programmer):
    image = built(tmp_path, "icebreaker", report=False)
    result = invoke("flash", "--board", "icebreaker", "--image", image)
    refused(result, programmer, "no build report (report.json)", "--force")
    result = invoke("flash", "--board", "icebreaker", "--image", image, "--force", "--no-check")
    assert result.exit_code == 0, result.output
    assert programmer() == [[str(image)]]


def test_an_image_built_for_another_board_is_refused(tmp_path, programmer):
    image = built(tmp_path, "ulx3s-85f", board="ulx3s-12f")
    result = invoke("flash", "--board", "ulx3s-85f", "--image", image)
    refused(result, programmer, "was built for the 'ulx3s-12f' board", "not the ulx3s-85f")


def test_an_image_changed_since_its_build_is_refused(tmp_path, programmer):
    image = built(tmp_path, "tangnano9k", grid="16x14")
    image.write_bytes(gowin_fs(0x1100481B) + b"0" * 8 + b"\n")
    result = invoke("flash", "--board", "tangnano9k", "--image", image)
    refused(result, programmer, "SHA-256 differs")


@pytest.mark.parametrize("what", ["missing", "directory", "empty", "fifo"])
def test_no_image_is_refused_without_reading_it(tmp_path, programmer, what):
    path = tmp_path / "bitgrid.bin"
    if what == "directory":
        path.mkdir()
    elif what == "empty":
        path.write_bytes(b"")
    elif what == "fifo":
        os.mkfifo(path)                       # read, it would block for ever
    result = invoke("flash", "--board", "icebreaker", "--image", path)
    assert result.exit_code == 2
    assert programmer() == []
    if what == "missing":
        assert "no FPGA image; build it with `bitgrid build --board icebreaker`" in result.output


# -- SRAM or flash -------------------------------------------------------------------------------

@pytest.mark.parametrize("board, to, args, said", [
    ("icebreaker", None, [], "configuration flash"),              # iceprog writes flash
    ("icebreaker", "sram", ["-S"], "SRAM (until power-off)"),
    ("ulx3s-85f", None, ["-b", "ulx3s", "-m"], "SRAM (until power-off)"),
    ("ulx3s-85f", "flash", ["-b", "ulx3s", "-f"], "configuration flash"),
    ("tangnano9k", None, ["-b", "tangnano9k", "-m"], "SRAM (until power-off)"),
    ("tangnano9k", "flash", ["-b", "tangnano9k", "-f"], "configuration flash"),
])
def test_sram_or_flash(tmp_path, programmer, board, to, args, said):
    image = built(tmp_path, board)
    extra = ["--to", to] if to else []
    result = invoke("flash", "--board", board, "--image", image, "--no-check", *extra)
    assert result.exit_code == 0, result.output
    assert programmer() == [args + [str(image)]]
    assert f"programmed the {board}'s {said} with {image}, a 6x4 grid" in result.output


def test_no_programmer_exits_2(tmp_path, monkeypatch):
    image = built(tmp_path, "ulx3s-85f")
    monkeypatch.setenv("OPENFPGALOADER", "no-such-openFPGALoader")
    result = invoke("flash", "--board", "ulx3s-85f", "--image", image)
    assert result.exit_code == 2
    assert "no-such-openFPGALoader was not found on PATH" in result.output
    assert "apt-get install openfpgaloader" in result.output


def test_no_board_attached_exits_2(tmp_path, monkeypatch):
    image = built(tmp_path, "icebreaker")
    monkeypatch.setenv("ICEPROG", "false")
    result = invoke("flash", "--board", "icebreaker", "--image", image)
    assert result.exit_code == 2
    assert "false failed with status 1 writing the icebreaker's configuration flash (is the " \
           "icebreaker plugged in?)" in result.output


def test_flash_library_returns_what_was_written(tmp_path, monkeypatch):
    image = built(tmp_path, "tangnano9k", grid="16x14")
    calls = []
    monkeypatch.setattr(boards.programmer.shutil, "which", lambda tool: "/usr/bin/" + tool)
    done = types.SimpleNamespace(returncode=0, stdout="", stderr="")
    memory, info = boards.flash("tangnano9k", str(image), to="flash",
                                run=lambda argv, **kw: calls.append(argv) or done)
    assert calls == [["openFPGALoader", "-b", "tangnano9k", "-f", str(image)]]
    assert memory == "flash" and info.family == "gowin" and info.grid == (16, 14)
    with pytest.raises(ValueError, match="to must be one of sram, flash"):
        boards.flash("tangnano9k", str(image), to="eeprom")


# -- IDENTIFY after programming, over a pseudo-terminal -------------------------------------------

class PtyBoard:
    """A pseudo-terminal whose master end a thread serves with a DeviceModel (or, with
    ``model=None``, reads and never answers): the slave's name is the board's UART."""

    def __init__(self, model):
        self.master, slave = os.openpty()
        import tty
        tty.setraw(slave)
        self.port = os.ttyname(slave)
        self._slave = slave
        self.model = model
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                data = os.read(self.master, 4096)
            except OSError:
                return
            if self.model is not None:
                answer = self.model.feed(data)
                if answer:
                    os.write(self.master, answer)

    def close(self):
        self._stop.set()
        self._thread.join()
        os.close(self.master)
        os.close(self._slave)


@pytest.fixture
def pty_board():
    made = []

    def make(model):
        made.append(PtyBoard(model))
        return made[-1]
    yield make
    for board in made:
        board.close()


def test_the_design_answers_identify(tmp_path, programmer, pty_board):
    image = built(tmp_path, "icebreaker")
    board = pty_board(DeviceModel(6, 4, storage="ff"))
    result = invoke("flash", "--board", "icebreaker", "--image", image, "--port", board.port)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == \
        f"the design answers: BitGrid 6x4, ff storage, host protocol {PROTOCOL_VERSION}"
    assert programmer() == [[str(image)]]


def test_a_design_that_does_not_answer_exits_2(tmp_path, programmer, pty_board):
    image = built(tmp_path, "icebreaker")
    board = pty_board(None)
    result = invoke("flash", "--board", "icebreaker", "--image", image, "--port", board.port)
    assert result.exit_code == 2
    assert "programmed the icebreaker's configuration flash" in result.output
    error = result.output.splitlines()[-1]
    assert error.startswith("error: the icebreaker was programmed, but the design does not "
                            f"answer IDENTIFY on {board.port}")
    assert "--baud" in error and "the board's UART" in error


def test_a_design_with_another_grid_exits_2(tmp_path, programmer, pty_board):
    image = built(tmp_path, "icebreaker", grid="4x4")
    board = pty_board(DeviceModel(6, 4))
    result = invoke("flash", "--board", "icebreaker", "--image", image, "--port", board.port)
    assert result.exit_code == 2
    assert "reports a 6x4 grid, but the image was built with 4x4" in result.output


def test_check_design_missing_port_exits_2(tmp_path, programmer):
    image = built(tmp_path, "icebreaker")
    result = invoke("flash", "--board", "icebreaker", "--image", image,
                    "--port", tmp_path / "ttyNONE")
    assert result.exit_code == 2
    assert "the icebreaker was programmed, but cannot open serial port" in result.output


def test_find_port_by_usb_id():
    def port(device, vid, pid, location):
        return types.SimpleNamespace(device=device, vid=vid, pid=pid, location=location)
    ports = [port("/dev/ttyUSB0", 0x0403, 0x6010, "1-2:1.0"),   # iCEBreaker JTAG/SPI side
             port("/dev/ttyUSB1", 0x0403, 0x6010, "1-2:1.1"),   # its UART
             port("/dev/ttyACM0", 0x1209, 0x0001, "1-3:1.0")]
    assert find_port("icebreaker", ports=ports) == "/dev/ttyUSB1"
    with pytest.raises(FlashError, match=r"no serial port of the ulx3s-85f \(USB 0403:6015\) "
                                         r"found to check the design: give --port PORT"):
        find_port("ulx3s-85f", ports=ports)
    ports.append(port("/dev/ttyUSB3", 0x0403, 0x6010, "1-4:1.1"))
    with pytest.raises(FlashError, match="2 serial ports"):
        find_port("icebreaker", ports=ports)


def test_check_image_library(tmp_path):
    image = built(tmp_path, "ulx3s-12f", grid="24x24")
    info = check_image("ulx3s-12f", image)
    assert info.family == "ecp5" and info.idcode == 0x21111043 and info.grid == (24, 24)
    with pytest.raises(ImageError, match="another device"):
        check_image("ulx3s-85f", image)


def test_the_port_may_come_back_after_programming(tmp_path, pty_board):
    """On the ULX3S the programmer and the UART share one USB chip: its serial port is gone for
    a moment after programming; check_design waits for it (``settle``)."""
    board = pty_board(DeviceModel(4, 4, storage="memory"))
    link = tmp_path / "ttyUSB0"
    timer = threading.Timer(0.5, os.symlink, (board.port, link))
    timer.start()
    identity = check_design("ulx3s-85f", str(link), grid=(4, 4), settle=5.0)
    timer.join()
    assert (identity.width, identity.height, identity.storage) == (4, 4, "memory")
    with pytest.raises(FlashError, match="cannot open serial port"):
        check_design("ulx3s-85f", str(tmp_path / "never"), settle=0.3)
