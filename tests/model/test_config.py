"""Configurations (the LUTs of a grid) and their configuration frames.

Frame layout (model/config.py, serving SPEC section 7): frame ``(y, a)`` is an integer of
``4 * width`` bits whose bit ``4x + d`` is bit ``a`` of LUT ``d`` of cell ``(x, y)``; its record
is ``y`` (2 bytes LE), ``a`` (1 byte), the frame (``width / 2`` bytes LE), and the frame CRC is
zlib's CRC-32 over the records, rows outer, addresses inner. Expected values are built here
independently, from loops over single bits and from ``struct``/``zlib``.
"""

import random
import struct
import zlib

import numpy as np
import pytest

from bitgrid import Configuration, GridSizeError
from bitgrid.cell import PASS_THROUGH, REFLECTOR
from bitgrid.config import FRAME_CRC, check_grid_size, frame_record

SPEC_PASS_WORD = 0xFB73EA62D951C840


def random_config(width, height, seed):
    rng = random.Random(seed)
    config = Configuration(width, height)
    for y in range(height):
        for x in range(width):
            config[x, y] = tuple(rng.getrandbits(16) for _ in range(4))
    return config


def frame_by_hand(config, row, a):
    value = 0
    for x in range(config.width):
        tables = config[x, row]
        for d in range(4):
            value |= ((tables[d] >> a) & 1) << (4 * x + d)
    return value


# Construction and validation.

def test_default_is_all_zero():
    config = Configuration(6, 4)
    assert (config.width, config.height) == (6, 4)
    assert config.luts.shape == (4, 6, 4)
    assert config.luts.dtype == np.uint16
    assert not config.luts.any()
    assert all(config[x, y] == (0, 0, 0, 0) for x in range(6) for y in range(4))
    assert repr(config) == "Configuration(6 x 4, 0 cells configured)"


def test_luts_argument_is_copied_and_indexed_y_x_d():
    luts = np.zeros((2, 4, 4), dtype=np.int64)
    luts[1, 3] = [1, 2, 3, 0xFFFF]        # cell (3, 1)
    luts[0, 2, 1] = 0x1234                # LUT E of cell (2, 0)
    config = Configuration(4, 2, luts)
    assert config[3, 1] == (1, 2, 3, 0xFFFF)
    assert config[2, 0] == (0, 0x1234, 0, 0)
    assert config.luts.dtype == np.uint16
    luts[1, 3, 0] = 7                     # changing the source does not change the config
    assert config[3, 1] == (1, 2, 3, 0xFFFF)
    assert repr(config) == "Configuration(4 x 2, 2 cells configured)"


def test_luts_as_nested_lists():
    luts = [[[y * 100 + x * 10 + d for d in range(4)] for x in range(2)] for y in range(2)]
    config = Configuration(2, 2, luts)
    assert config[1, 0] == (10, 11, 12, 13)
    assert config[0, 1] == (100, 101, 102, 103)


@pytest.mark.parametrize("width, height, message", [
    (3, 2, "Grid width must be even and between 2 and 65534 cells (SPEC section 1), not 3"),
    (2, 5, "Grid height must be even and between 2 and 65534 cells (SPEC section 1), not 5"),
    (0, 2, "Grid width must be even and between 2 and 65534 cells (SPEC section 1), not 0"),
    (2, 0, "Grid height must be even and between 2 and 65534 cells (SPEC section 1), not 0"),
    (-2, 2, "Grid width must be even and between 2 and 65534 cells (SPEC section 1), not -2"),
    (65536, 2, "Grid width must be even and between 2 and 65534 cells (SPEC section 1), "
               "not 65536"),
    (2.0, 2, "Grid width must be an integer number of cells, not 2.0"),
    (2, "4", "Grid height must be an integer number of cells, not '4'"),
    (True, 2, "Grid width must be an integer number of cells, not True"),
])
def test_bad_sizes(width, height, message):
    with pytest.raises(GridSizeError) as info:
        Configuration(width, height)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_size_limits_and_numpy_ints():
    assert check_grid_size(2, 65534) == (2, 65534)
    assert check_grid_size(np.int32(4), np.uint16(6)) == (4, 6)
    assert type(check_grid_size(np.int64(4), 2)[0]) is int
    with pytest.raises(GridSizeError, match="Bitstream width must be even"):
        check_grid_size(1, 2, what="bitstream")


def test_bad_luts_array():
    with pytest.raises(ValueError) as info:
        Configuration(4, 2, np.zeros((4, 2, 4)))
    assert str(info.value) == ("LUT array for a 4 x 2 grid must have shape (2, 4, 4), "
                               "not (4, 2, 4)")
    with pytest.raises(ValueError, match="shape"):
        Configuration(2, 2, np.zeros((2, 2, 3)))
    too_big = np.zeros((2, 2, 4), dtype=np.int64)
    too_big[1, 1, 3] = 0x10000
    with pytest.raises(ValueError, match="LUT tables are 16-bit values"):
        Configuration(2, 2, too_big)
    negative = np.zeros((2, 2, 4), dtype=np.int64)
    negative[0, 0, 0] = -1
    with pytest.raises(ValueError, match="LUT tables are 16-bit values"):
        Configuration(2, 2, negative)


# Indexing.

def test_setitem_getitem_word():
    config = Configuration(4, 4)
    config[1, 2] = PASS_THROUGH
    config[3, 0] = REFLECTOR
    assert config[1, 2] == (0xF0F0, 0xFF00, 0xAAAA, 0xCCCC)
    assert tuple(config.luts[2, 1]) == (0xF0F0, 0xFF00, 0xAAAA, 0xCCCC)   # luts[y, x, d]
    assert config.word(1, 2) == SPEC_PASS_WORD
    assert config.word(3, 0) == 0xFEDCBA9876543210
    config.set_word(0, 3, 0xFEDCBA9876543210)
    assert config[0, 3] == (0xAAAA, 0xCCCC, 0xF0F0, 0xFF00)
    assert config[2, 2] == (0, 0, 0, 0)
    assert all(isinstance(v, int) for v in config[1, 2])


@pytest.mark.parametrize("x, y", [(4, 0), (0, 2), (-1, 0), (0, -1), (100, 100)])
def test_index_outside_grid(x, y):
    config = Configuration(4, 2)
    with pytest.raises(IndexError) as info:
        config[x, y]
    assert str(info.value) == f"Cell ({x}, {y}) is outside the 4 x 2 grid"
    with pytest.raises(IndexError):
        config[x, y] = PASS_THROUGH
    with pytest.raises(IndexError):
        config.word(x, y)


def test_setitem_validates_tables():
    config = Configuration(2, 2)
    with pytest.raises(ValueError) as info:
        config[0, 0] = (0, 0, 0, 0x10000)
    assert str(info.value) == "LUT W must be an integer from 0 to 65535, not 65536"
    with pytest.raises(ValueError, match="A cell has 4 LUTs"):
        config[0, 0] = (1, 2, 3)
    with pytest.raises(ValueError) as info:
        config.set_word(0, 0, 1 << 64)
    assert str(info.value) == f"A cell's word view must be an integer from 0 to {2**64 - 1}, " \
                              f"not {1 << 64}"
    assert not config.luts.any()      # nothing was written by the failed assignments


def test_equality_copy_random():
    a = random_config(4, 6, seed=1)
    b = a.copy()
    assert a == b and a is not b
    b[0, 0] = ((a[0, 0][0] + 1) & 0xFFFF, 0, 0, 0)
    assert a != b
    assert a != Configuration(6, 4)                  # other shape
    assert (a == "config") is False
    r1, r2 = Configuration.random(8, 4, seed=5), Configuration.random(8, 4, seed=5)
    assert r1 == r2 and r1.luts.dtype == np.uint16 and r1.luts.shape == (4, 8, 4)
    assert r1 != Configuration.random(8, 4, seed=6)
    # 128 random 16-bit values: not all the same (a uniformity smoke check)
    assert len(np.unique(r1.luts)) > 100


# Frames.

def test_frame_layout_bit_by_bit():
    config = random_config(6, 4, seed=11)
    for y in range(4):
        for a in range(16):
            assert config.frame(y, a) == frame_by_hand(config, y, a)
            assert config.frame(y, a) < 1 << (4 * 6)


def test_frame_single_bits():
    """Setting one LUT bit sets exactly one frame bit, at 4x + d of frame (y, a)."""
    for (x, y, d, a) in [(0, 0, 0, 0), (3, 1, 2, 5), (1, 0, 3, 15), (2, 1, 1, 9)]:
        config = Configuration(4, 2)
        tables = [0, 0, 0, 0]
        tables[d] = 1 << a
        config[x, y] = tables
        for row in range(2):
            for addr in range(16):
                expected = 1 << (4 * x + d) if (row, addr) == (y, a) else 0
                assert config.frame(row, addr) == expected


def test_frame_is_the_row_of_memory_words():
    """Frame (y, a) is word a of every cell's 16 x 4 memory, cell x at bits 4x..4x+3: for an
    all-pass-through row, nibble a of SPEC's 0xFB73EA62D951C840 repeated."""
    config = Configuration(8, 2)
    for x in range(8):
        config[x, 1] = PASS_THROUGH
    for a in range(16):
        nibble = (SPEC_PASS_WORD >> 4 * a) & 0xF
        assert config.frame(1, a) == int(f"{nibble:x}" * 8, 16)
        assert config.frame(0, a) == 0
    reflect = Configuration(2, 2)
    for x in range(2):
        reflect[x, 0] = REFLECTOR
    assert [reflect.frame(0, a) for a in range(16)] == [a * 0x11 for a in range(16)]


def test_set_frame_round_trip():
    source = random_config(8, 6, seed=3)
    target = Configuration(8, 6)
    for y, a, frame in source.frames():
        target.set_frame(y, a, frame)
    assert target == source
    # set_frame replaces only bit `a` of the row's LUTs
    target.set_frame(2, 7, 0)
    for y in range(6):
        for x in range(8):
            for d in range(4):
                want = source[x, y][d]
                if y == 2:
                    want &= ~(1 << 7) & 0xFFFF
                assert target[x, y][d] == want
    ones = (1 << 32) - 1
    target.set_frame(5, 0, ones)
    assert all(target[x, 5][d] & 1 for x in range(8) for d in range(4))
    assert target.frame(5, 0) == ones


def test_set_frame_bit_layout():
    config = Configuration(4, 2)
    config.set_frame(1, 6, 1 << (4 * 2 + 3))      # cell (2, 1), LUT W, address 6
    assert config[2, 1] == (0, 0, 0, 1 << 6)
    assert int(np.count_nonzero(config.luts)) == 1


def test_frames_order_and_count():
    config = random_config(4, 4, seed=4)
    frames = config.frames()
    assert len(frames) == 16 * 4
    assert [(y, a) for y, a, _ in frames] == [(y, a) for y in range(4) for a in range(16)]
    assert all(f == frame_by_hand(config, y, a) for y, a, f in frames)


def test_frame_record_bytes():
    record = frame_record(0x0102, 5, 0x89ABCDEF, 8)
    assert record == b"\x02\x01\x05" + bytes([0xEF, 0xCD, 0xAB, 0x89])
    assert len(frame_record(3, 15, 0, 2)) == 2 + 1 + 1
    assert frame_record(3, 15, 0xA5, 2) == b"\x03\x00\x0f\xa5"


@pytest.mark.parametrize("width, height, seed", [(2, 2, 1), (6, 4, 2), (16, 8, 3)])
def test_frames_crc_matches_zlib_over_records(width, height, seed):
    config = random_config(width, height, seed)
    data = b""
    for y in range(height):
        for a in range(16):
            frame = frame_by_hand(config, y, a)
            data += struct.pack("<HB", y, a) + frame.to_bytes(width // 2, "little")
    assert len(data) == height * 16 * (3 + width // 2)
    assert config.frames_crc() == zlib.crc32(data)


def test_frames_crc_known_values():
    zero = Configuration(2, 2)
    records = b"".join(struct.pack("<HB", y, a) + b"\x00" for y in range(2) for a in range(16))
    assert zero.frames_crc() == zlib.crc32(records)
    # The catalog CRC is the zlib one: its check value on "123456789" is 0xCBF43926.
    assert FRAME_CRC.compute(b"123456789") == 0xCBF43926 == zlib.crc32(b"123456789")
    # The CRC sees every bit: flipping one LUT bit changes it.
    config = random_config(4, 2, seed=8)
    flipped = config.copy()
    flipped[1, 1] = (config[1, 1][0] ^ 0x100,) + config[1, 1][1:]
    assert flipped.frames_crc() != config.frames_crc()


# Regions.

def test_region():
    config = random_config(8, 6, seed=21)
    sub = config.region(2, 4, 4, 2)
    assert (sub.width, sub.height) == (4, 2)
    for y in range(2):
        for x in range(4):
            assert sub[x, y] == config[x + 2, y + 4]
    before = config[2, 4]
    sub[0, 0] = tuple((v + 1) & 0xFFFF for v in before)     # a copy, not a view
    assert config[2, 4] == before
    assert config == random_config(8, 6, seed=21)
    assert config.region(0, 0, 8, 6) == config
    # Regions tile the grid back together.
    tiles = [(x, y, config.region(x, y, 4, 2)) for y in (0, 2, 4) for x in (0, 4)]
    rebuilt = Configuration(8, 6)
    for x0, y0, tile in tiles:
        rebuilt.luts[y0:y0 + 2, x0:x0 + 4] = tile.luts
    assert rebuilt == config


def test_region_errors():
    config = Configuration(8, 6)
    with pytest.raises(ValueError, match="Region offsets must be even"):
        config.region(1, 0, 2, 2)
    with pytest.raises(ValueError, match="Region offsets must be even"):
        config.region(0, 3, 2, 2)
    with pytest.raises(IndexError, match="Region lies outside the grid"):
        config.region(4, 0, 6, 2)
    with pytest.raises(IndexError, match="Region lies outside the grid"):
        config.region(0, 4, 2, 4)
    with pytest.raises(IndexError, match="Region lies outside the grid"):
        config.region(-2, 0, 2, 2)
    with pytest.raises(GridSizeError, match="width must be even"):
        config.region(0, 0, 3, 2)


def test_frame_address_checked():
    config = Configuration(4, 2)
    for row, address in ((-1, 0), (2, 0), (0, -1), (0, 16)):
        with pytest.raises(IndexError):
            config.frame(row, address)
        with pytest.raises(IndexError):
            config.set_frame(row, address, 0)
    for row, address, message in ((2, 0, "Frame row must be an integer from 0 to 1, not 2"),
                                  (0, 16, "Frame LUT address must be an integer from 0 to 15, "
                                          "not 16"),
                                  (True, 0, "Frame row must be an integer from 0 to 1, not True")):
        with pytest.raises(IndexError) as info:
            config.frame(row, address)
        assert str(info.value) == message
    before = config.copy()
    for frame in (1 << 16, -1):
        with pytest.raises(ValueError) as info:
            config.set_frame(0, 0, frame)
        assert str(info.value) == (f"A frame of a 4-cell row must be an integer from 0 to "
                                   f"65535, not {frame}")
    assert config == before


def test_numpy_values_and_float_arrays():
    source = Configuration.random(4, 2, seed=5)
    config = Configuration(4, 2)
    config[1, 1] = source.luts[1, 1]          # numpy uint16 values are accepted
    assert config[1, 1] == source[1, 1]
    with pytest.raises(ValueError, match="not float64 values"):
        Configuration(4, 2, np.full((2, 4, 4), 1.7))


def test_grid_too_large_for_a_bitstream():
    from bitgrid.config import GridSizeError
    with pytest.raises(GridSizeError, match="more than 2\\*\\*26 cells"):
        Configuration(8192, 8192)

