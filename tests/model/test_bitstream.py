"""BGBS v1 bitstreams (SPEC section 5): reading and writing in the three scan orders, the shared
conformance files, and rejection of every defect the SPEC lists.

Headers and payloads of hand-made files are built here with ``struct`` and ``zlib`` directly
from SPEC's table, not with the writer under test.
"""

import os
import random
import struct
import zlib

import numpy as np
import pytest

from bitgrid import Bitstream, BitstreamError, Configuration, ScanOrder, bitstream
from bitgrid.bitstream import load, read, save, write
from support.conformance import bad_stream_cases, conformance_dir, load_conformance

ADDER8 = {0: "adder8", 1: "adder8_colmajor", 2: "adder8_snake"}


def spec_header(width, height, payload, *, magic=b"BGBS", version=1, header_size=24, order=0,
                flags=0, payload_bits=None, crc=None, reserved=0):
    """SPEC section 5's header, field by field, with the consistent values by default."""
    if payload_bits is None:
        payload_bits = width * height * 64
    if crc is None:
        crc = zlib.crc32(payload)
    return (magic + struct.pack("<HHHH", version, header_size, width, height)
            + struct.pack("<BB", order, flags) + struct.pack("<II", payload_bits, crc)
            + struct.pack("<H", reserved))


def spec_payload(luts, order):
    """Records in scan order; a record is four little-endian uint16: LUT N, E, S, W."""
    height, width = luts.shape[:2]
    if order == 0:
        cells = [(x, y) for y in range(height) for x in range(width)]
    elif order == 1:
        cells = [(x, y) for x in range(width) for y in range(height)]
    else:
        cells = [(x if y % 2 == 0 else width - 1 - x, y)
                 for y in range(height) for x in range(width)]
    return b"".join(struct.pack("<4H", *(int(v) for v in luts[y, x])) for x, y in cells)


def random_luts(width, height, seed):
    return np.random.default_rng(seed).integers(0, 1 << 16, size=(height, width, 4),
                                                dtype=np.uint16)


def conformance_bytes(name):
    with open(os.path.join(conformance_dir(), f"{name}.bgbs"), "rb") as file:
        return file.read()


# The header layout itself.

def test_header_builder_matches_spec_offsets():
    payload = bytes(2 * 2 * 8)
    header = spec_header(2, 2, payload, order=2)
    assert len(header) == 24
    assert header[0:4] == b"BGBS"
    assert header[4:6] == b"\x01\x00" and header[6:8] == b"\x18\x00"
    assert header[8:10] == b"\x02\x00" and header[10:12] == b"\x02\x00"
    assert header[12] == 2 and header[13] == 0
    assert header[14:18] == (256).to_bytes(4, "little")
    assert header[18:22] == zlib.crc32(payload).to_bytes(4, "little")
    assert header[22:24] == b"\x00\x00"


@pytest.mark.parametrize("order", [0, 1, 2])
def test_write_matches_spec_layout(order):
    luts = random_luts(6, 4, seed=order)
    config = Configuration(6, 4, luts)
    payload = spec_payload(luts, order)
    expected = spec_header(6, 4, payload, order=order) + payload
    assert write(config, order) == expected
    stream = Bitstream(config, order)
    assert stream.to_bytes() == expected
    assert stream.payload() == payload
    assert stream.crc32 == zlib.crc32(payload)
    assert (stream.width, stream.height, stream.order) == (6, 4, ScanOrder(order))


def test_scan_orders_on_a_numbered_grid():
    """Cell (x, y) holds LUT N = 16*y + x, so the payload shows the scan order directly."""
    luts = np.zeros((4, 4, 4), dtype=np.uint16)
    for y in range(4):
        for x in range(4):
            luts[y, x, 0] = 16 * y + x
    config = Configuration(4, 4, luts)

    def record_ids(order):
        payload = write(config, order)[24:]
        return [struct.unpack_from("<H", payload, 8 * i)[0] for i in range(16)]

    assert record_ids(0) == [0x00, 0x01, 0x02, 0x03, 0x10, 0x11, 0x12, 0x13,
                             0x20, 0x21, 0x22, 0x23, 0x30, 0x31, 0x32, 0x33]
    assert record_ids(1) == [0x00, 0x10, 0x20, 0x30, 0x01, 0x11, 0x21, 0x31,
                             0x02, 0x12, 0x22, 0x32, 0x03, 0x13, 0x23, 0x33]
    assert record_ids(2) == [0x00, 0x01, 0x02, 0x03, 0x13, 0x12, 0x11, 0x10,
                             0x20, 0x21, 0x22, 0x23, 0x33, 0x32, 0x31, 0x30]


def test_record_is_four_le_uint16_lsb_first():
    config = Configuration(2, 2)
    config[0, 0] = (0x0001, 0x8000, 0x1234, 0xF0F0)
    payload = write(config)[24:32]
    assert payload == bytes([0x01, 0x00, 0x00, 0x80, 0x34, 0x12, 0xF0, 0xF0])


@pytest.mark.parametrize("order", [0, 1, 2])
def test_read_hand_made_files(order):
    luts = random_luts(8, 6, seed=10 + order)
    payload = spec_payload(luts, order)
    stream = read(spec_header(8, 6, payload, order=order) + payload)
    assert isinstance(stream, Bitstream)
    assert stream.order == order and isinstance(stream.order, ScanOrder)
    assert np.array_equal(stream.config.luts, luts)
    assert stream.config == Configuration(8, 6, luts)


# The shared conformance bitstreams.

def test_adder8_in_three_orders_is_one_configuration():
    streams = {order: load_conformance(name).load_bitstream() for order, name in ADDER8.items()}
    for order, stream in streams.items():
        assert stream.order == order
        assert (stream.width, stream.height) == (2, 16)
    assert streams[0].config == streams[1].config == streams[2].config
    # and the configuration is not trivial
    assert int((streams[0].config.luts != 0).any(axis=2).sum()) >= 8


@pytest.mark.parametrize("order", [0, 1, 2])
def test_adder8_payload_decoded_independently(order):
    data = conformance_bytes(ADDER8[order])
    assert data[:4] == b"BGBS"
    assert struct.unpack_from("<HHHHBBIIH", data, 4) == (
        1, 24, 2, 16, order, 0, 2 * 16 * 64, zlib.crc32(data[24:]), 0)
    config = read(data).config
    assert spec_payload(config.luts, order) == data[24:]


@pytest.mark.parametrize("order", [0, 1, 2])
def test_adder8_write_back_and_convert(order):
    config = read(conformance_bytes(ADDER8[order]), width=2, height=16).config
    for target in (0, 1, 2):
        assert write(config, target) == conformance_bytes(ADDER8[target])
        assert write(config, ScanOrder(target)) == conformance_bytes(ADDER8[target])


def test_every_conformance_bitstream_reads_and_writes_back():
    names = [n for n in sorted(os.listdir(conformance_dir())) if n.endswith(".json")]
    good = 0
    for name in names:
        case = load_conformance(name[:-5])
        if not hasattr(case, "steps"):
            continue
        data = conformance_bytes(os.path.basename(case.bitstream_path)[:-5])
        stream = case.load_bitstream()
        assert (stream.width, stream.height) == (case.width, case.height)
        assert write(stream.config, stream.order) == data, case.name
        good += 1
    assert good == 9       # the README's table lists nine cases


def test_scan_order_parse():
    assert ScanOrder.parse("row-major") is ScanOrder.ROW_MAJOR
    assert ScanOrder.parse("ROW_MAJOR") is ScanOrder.ROW_MAJOR
    assert ScanOrder.parse("col-major") is ScanOrder.COLUMN_MAJOR
    assert ScanOrder.parse("column-major") is ScanOrder.COLUMN_MAJOR
    assert ScanOrder.parse(" Snake ") is ScanOrder.SNAKE
    assert ScanOrder.parse("2") is ScanOrder.SNAKE
    assert ScanOrder.parse(1) is ScanOrder.COLUMN_MAJOR
    assert [o.label for o in ScanOrder] == ["row-major", "column-major", "snake"]
    with pytest.raises(ValueError, match="Unknown scan order 'diagonal'"):
        ScanOrder.parse("diagonal")
    with pytest.raises(ValueError):
        ScanOrder.parse(3)


def test_save_and_load_files(tmp_path):
    config = Configuration(4, 2, random_luts(4, 2, seed=5))
    for order in (0, 1, 2):
        path = tmp_path / f"c{order}.bgbs"
        save(str(path), config, order)
        assert path.read_bytes() == write(config, order)
        stream = load(str(path), width=4, height=2)
        assert stream.config == config and stream.order == order
    with pytest.raises(OSError):
        load(str(tmp_path / "missing.bgbs"))


def test_read_returns_independent_configuration():
    data = conformance_bytes("random_8x8")
    a, b = read(data).config, read(data).config
    a[0, 0] = (0, 0, 0, 0)
    assert b != a and read(data).config == b


# Rejection: the shared negative cases.

@pytest.mark.parametrize("name", bad_stream_cases())
def test_conformance_bad_streams_rejected(name):
    case = load_conformance(name)
    assert hasattr(case, "expect_error"), f"{name} is not a bitgrid-badstream-v1 case"
    with pytest.raises(BitstreamError) as info:
        load(case.bitstream_path, width=case.width, height=case.height)
    assert info.value.reason == case.expect_error
    assert str(info.value).startswith(case.expect_error + ": ")
    with open(case.bitstream_path, "rb") as file:
        data = file.read()
    with pytest.raises(BitstreamError) as info:
        Bitstream.from_bytes(data, width=case.width, height=case.height)
    assert info.value.reason == case.expect_error


def test_conformance_bad_stream_set_is_complete():
    assert set(bad_stream_cases()) == {"bad_magic", "bad_crc", "dims_mismatch_4x16",
                                      "bad_version"}


def test_dims_mismatch_file_is_otherwise_valid():
    """dims_mismatch_4x16 is a valid 4 x 16 bitstream; only the target size is wrong."""
    case = load_conformance("dims_mismatch_4x16")
    stream = load(case.bitstream_path)
    assert (stream.width, stream.height) == (4, 16)
    stream = load(case.bitstream_path, width=4, height=16)
    assert stream.width == 4
    with pytest.raises(BitstreamError) as info:
        load(case.bitstream_path, width=4, height=8)
    assert info.value.reason == "dimension mismatch"


# Rejection: one hand-made file per other rule of SPEC section 5.

def _bad_files():
    w, h = 2, 4
    payload = bytes(random_luts(w, h, seed=1).astype("<u2").tobytes())
    odd_payload = bytes(3 * 4 * 8)
    cases = {
        "magic": (spec_header(w, h, payload, magic=b"BGBX") + payload, "bad magic"),
        "magic_lower": (spec_header(w, h, payload, magic=b"bgbs") + payload, "bad magic"),
        "version0": (spec_header(w, h, payload, version=0) + payload, "unsupported version"),
        "version2": (spec_header(w, h, payload, version=2) + payload, "unsupported version"),
        "header_size_32": (spec_header(w, h, payload, header_size=32) + payload,
                           "bad header size"),
        "header_size_0": (spec_header(w, h, payload, header_size=0) + payload,
                          "bad header size"),
        "order_3": (spec_header(w, h, payload, order=3) + payload, "bad order"),
        "order_255": (spec_header(w, h, payload, order=255) + payload, "bad order"),
        "flags_1": (spec_header(w, h, payload, flags=1) + payload, "bad flags"),
        "flags_80": (spec_header(w, h, payload, flags=0x80) + payload, "bad flags"),
        "reserved_1": (spec_header(w, h, payload, reserved=1) + payload, "bad reserved"),
        "reserved_8000": (spec_header(w, h, payload, reserved=0x8000) + payload,
                          "bad reserved"),
        "odd_width": (spec_header(3, 4, odd_payload) + odd_payload, "bad size"),
        "odd_height": (spec_header(4, 3, odd_payload) + odd_payload, "bad size"),
        "zero_width": (spec_header(0, 4, b"") + b"", "bad size"),
        "zero_height": (spec_header(2, 0, b"") + b"", "bad size"),
        "payload_bits_low": (spec_header(w, h, payload, payload_bits=w * h * 64 - 8) + payload,
                             "bad payload_bits"),
        "payload_bits_bytes": (spec_header(w, h, payload, payload_bits=w * h * 8) + payload,
                               "bad payload_bits"),
        "truncated_payload": (spec_header(w, h, payload) + payload[:-1], "truncated payload"),
        "no_payload": (spec_header(w, h, payload), "truncated payload"),
        "trailing_data": (spec_header(w, h, payload) + payload + b"\x00", "trailing data"),
        "crc": (spec_header(w, h, payload, crc=zlib.crc32(payload) ^ 1) + payload,
                "crc mismatch"),
        "truncated_header": ((spec_header(w, h, payload) + payload)[:23], "truncated header"),
        "empty": (b"", "truncated header"),
        "magic_only": (b"BGBS", "truncated header"),
    }
    return cases


BAD_FILES = _bad_files()


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_hand_made_bad_files(name, tmp_path):
    data, reason = BAD_FILES[name]
    with pytest.raises(BitstreamError) as info:
        read(data)
    assert info.value.reason == reason
    assert str(info.value).startswith(reason + ": ") and info.value.detail
    assert isinstance(info.value, ValueError)
    path = tmp_path / "bad.bgbs"
    path.write_bytes(data)
    with pytest.raises(BitstreamError) as info:
        load(str(path))
    assert info.value.reason == reason


def test_hand_made_good_file_is_accepted():
    """The builder's defaults give a valid file, so each bad file above has one defect."""
    w, h = 2, 4
    luts = random_luts(w, h, seed=1)
    payload = spec_payload(luts, 0)
    assert read(spec_header(w, h, payload) + payload).config == Configuration(w, h, luts)


def test_dimension_mismatch_on_either_side():
    config = Configuration(4, 2, random_luts(4, 2, seed=2))
    data = write(config)
    assert read(data, width=4, height=2).config == config
    assert read(data, width=4).config == config
    for kwargs in ({"width": 2}, {"height": 4}, {"width": 2, "height": 4},
                   {"width": 4, "height": 4}):
        with pytest.raises(BitstreamError) as info:
            read(data, **kwargs)
        assert info.value.reason == "dimension mismatch"


def test_no_partial_configuration_from_any_prefix():
    """Every proper prefix of a valid file, and every file with one payload bit flipped, is
    rejected outright; read() never returns for them."""
    data = write(Configuration(2, 2, random_luts(2, 2, seed=3)), 2)
    for length in range(len(data)):
        with pytest.raises(BitstreamError) as info:
            read(data[:length])
        assert info.value.reason == ("truncated header" if length < 24 else "truncated payload")
    rng = random.Random(4)
    for bit in rng.sample(range(8 * 24, 8 * len(data)), 40):
        corrupt = bytearray(data)
        corrupt[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(BitstreamError) as info:
            read(bytes(corrupt))
        assert info.value.reason == "crc mismatch"


def test_error_reasons_are_documented():
    doc = bitstream.BitstreamError.__doc__
    for _, reason in BAD_FILES.values():
        assert f"``{reason}``" in doc
    for name in bad_stream_cases():
        assert f"``{load_conformance(name).expect_error}``" in doc


# Whole-file reads: the loader reads the header, checks the size it implies against the file,
# then reads exactly that. Each dangerous file is loaded in a child process with its address
# space limited to 1 GiB and a timeout, so that a loader that reads the whole file fails
# (MemoryError, or the timeout) instead of taking the test run down with it.

_LOAD_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from bitgrid.bitstream import BitstreamError, load
try:
    load(sys.argv[1])
except BitstreamError as error:
    print(f"{error.reason}|{error}")
else:
    print("loaded")
"""

_NOT_A_FILE = "not a file: this is {kind}; give the path of a .bgbs file"


def _child(args, timeout=60):
    import subprocess
    import sys
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _load_in_child(path):
    """``reason|message`` of the BitstreamError that loading ``path`` raises, in a child."""
    result = _child(["-c", _LOAD_CHILD, str(path)])
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def _cli_in_child(*args):
    """``(exit status, stderr lines)`` of ``bitgrid ARGS`` in a child with 1 GiB of memory."""
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from bitgrid.cli import main; sys.argv[0] = 'bitgrid'; main()")
    result = _child(["-c", code, *args])
    return result.returncode, result.stderr.splitlines()


def _sparse_file(path, size):
    """A valid 2 x 2 header and payload, then zeros up to ``size`` bytes, without using the
    disk (a sparse file)."""
    payload = bytes(range(32))
    path.write_bytes(spec_header(2, 2, payload) + payload)
    os.truncate(path, size)
    return path


def _whole_file_cases(tmp_path):
    """``{name: (path, expected message)}`` for the files no loader may read whole."""
    payload = bytes(random_luts(2, 4, seed=1).astype("<u2").tobytes())
    fifo = tmp_path / "pipe.bgbs"
    os.mkfifo(fifo)
    truncated = tmp_path / "truncated.bgbs"
    truncated.write_bytes(spec_header(2, 4, payload) + payload[:-3])
    trailing = tmp_path / "trailing.bgbs"
    trailing.write_bytes(spec_header(2, 4, payload) + payload + b"\x00\x01")
    six_gb = 6 * 1024 ** 3
    return {
        "dev_zero": ("/dev/zero", _NOT_A_FILE.format(kind="a character device")),
        "dev_urandom": ("/dev/urandom", _NOT_A_FILE.format(kind="a character device")),
        "fifo": (fifo, _NOT_A_FILE.format(kind="a FIFO (named pipe)")),
        "sparse_6gb": (_sparse_file(tmp_path / "huge.bgbs", six_gb),
                       f"trailing data: payload is {six_gb - 24} bytes, longer than the 32 "
                       "that a 2 x 2 grid needs"),
        "truncated": (truncated, "truncated payload: payload is 61 bytes, a 2 x 4 grid needs 64"),
        "trailing": (trailing, "trailing data: payload is 66 bytes, longer than the 64 that a "
                               "2 x 4 grid needs"),
    }


WHOLE_FILE_CASES = ("dev_zero", "dev_urandom", "fifo", "sparse_6gb", "truncated", "trailing")


@pytest.mark.parametrize("name", WHOLE_FILE_CASES)
def test_load_reads_only_what_the_header_says(name, tmp_path):
    """/dev/zero, /dev/urandom, a FIFO with no writer, a sparse 6 GB file, a truncated file
    and trailing bytes: each a BitstreamError at once, in a child with 1 GiB of memory."""
    path, message = _whole_file_cases(tmp_path)[name]
    assert _load_in_child(path) == f"{message.split(':')[0]}|{message}"


@pytest.mark.parametrize("name", WHOLE_FILE_CASES)
@pytest.mark.parametrize("command", [["bitstream", "inspect"], ["emulate"]])
def test_cli_refuses_files_it_must_not_read_whole(name, command, tmp_path):
    """The same files on the command line: exit 2 and one line naming the file."""
    path, message = _whole_file_cases(tmp_path)[name]
    steps = ["--steps", "1"] if command == ["emulate"] else []
    status, lines = _cli_in_child(*command, str(path), *steps)
    assert (status, lines) == (2, [f"error: {path}: bad bitstream: {message}"])


def test_load_of_a_folder_is_an_os_error(tmp_path):
    with pytest.raises(IsADirectoryError) as info:
        load(str(tmp_path))
    assert info.value.filename == str(tmp_path)
