"""BGCF v1 frames and payloads (bitgrid.protocol.bgcf) against frames made by the original
toolchain's own ``bitgrid/protocol.py`` (run from its public code, outside this project, and
pasted here as hex), and the reader's resynchronisation and bounds."""

import random
import struct
import zlib

import pytest

from bitgrid.protocol.bgcf import (
    HEADER_SIZE, MAX_PAYLOAD, BgcfError, ErrorCode, FrameReader, Hello, Link, MsgType, PortInfo,
    Status, StepFlag, decode_config_chunk, decode_error, decode_hello, decode_link,
    decode_load_chunk, decode_ports, decode_status, decode_step, decode_values,
    encode_config_chunk, encode_error, encode_hello, encode_link, encode_load_chunk,
    encode_ports, encode_status, encode_step, encode_values, pack_frame)

#: Frames written by the original toolchain's pack_frame and payload helpers.
ORIGINAL = {
    # pack_frame(HELLO, payload_hello(8, 10, 1, 0), seq=7)
    "hello": "424743460101000007000a00d77f5ec908000a00010000000000",
    # pack_frame(SET_INPUTS, encode_name_u64_map({'W': 0x1ff, 'east': 3}), seq=0x1234)
    "set_inputs": "424743460105000034121900835003c002000157ff0100000000000004656173740300000000"
                  "000000",
    # pack_frame(STEP, payload_step(2), flags=1)
    "step": "4247434601040100000004002118f38e02000000",
    # pack_frame(LINK, payload_link(1, 'E', 'W', '127.0.0.1', 9001, 0))
    "link": "42474346010a000000001700a5d7f534010001004501005709003132372e302e302e3129230000",
    # pack_frame(LOAD_CHUNK, payload_load_chunk(1, 24, 0, b'BGBS'))
    "load_chunk": "42474346010200000000100011f726f501001800000000000000040042474253",
    # pack_frame(ERROR, payload_error(5, 'bad'))
    "error": "42474346017f00000000060033e64d28050003626164",
}


def only_frame(data):
    reader = FrameReader()
    reader.feed(data)
    frames = list(reader.frames())
    assert len(frames) == 1
    return frames[0]


def test_frames_match_the_original_toolchain_bit_for_bit():
    assert pack_frame(MsgType.HELLO, encode_hello(Hello(8, 10, 1, 0)), seq=7).hex() == \
        ORIGINAL["hello"]
    assert pack_frame(MsgType.SET_INPUTS, encode_values({"W": 0x1FF, "east": 3}),
                      seq=0x1234).hex() == ORIGINAL["set_inputs"]
    assert pack_frame(MsgType.STEP, encode_step(2), flags=StepFlag.FORWARDED).hex() == \
        ORIGINAL["step"]
    assert pack_frame(MsgType.LINK, encode_link(Link("E", "E", "W", "127.0.0.1", 9001))).hex() \
        == ORIGINAL["link"]
    assert pack_frame(MsgType.LOAD_CHUNK, encode_load_chunk(1, 24, 0, b"BGBS")).hex() == \
        ORIGINAL["load_chunk"]
    assert pack_frame(MsgType.ERROR, encode_error(5, "bad")).hex() == ORIGINAL["error"]


def test_original_frames_decode():
    frame = only_frame(bytes.fromhex(ORIGINAL["hello"]))
    assert (frame.type, frame.seq, frame.problem) == (MsgType.HELLO, 7, None)
    assert decode_hello(frame.payload) == Hello(8, 10, 1, 0)
    frame = only_frame(bytes.fromhex(ORIGINAL["set_inputs"]))
    assert frame.seq == 0x1234
    assert decode_values(frame.payload) == [("W", 0x1FF), ("east", 3)]
    frame = only_frame(bytes.fromhex(ORIGINAL["step"]))
    assert frame.flags == 1 and decode_step(frame.payload, frame.flags) == (2, None)
    assert decode_link(only_frame(bytes.fromhex(ORIGINAL["link"])).payload) == \
        Link("E", "E", "W", "127.0.0.1", 9001, 0, 0)
    assert decode_load_chunk(only_frame(bytes.fromhex(ORIGINAL["load_chunk"])).payload) == \
        (1, 24, 0, b"BGBS")
    assert decode_error(only_frame(bytes.fromhex(ORIGINAL["error"])).payload) == \
        (5, "bad")


def test_header_layout_by_hand():
    frame = pack_frame(0x42, b"\x01\x02\x03", seq=0xBEEF, flags=0x81)
    magic, version, kind, flags, reserved, seq, length, crc = \
        struct.unpack("<4sBBBBHHI", frame[:HEADER_SIZE])
    assert (magic, version, kind, flags, reserved, seq, length) == \
        (b"BGCF", 1, 0x42, 0x81, 0, 0xBEEF, 3)
    assert crc == zlib.crc32(frame[4:12] + b"\x01\x02\x03")


def test_reader_resynchronises_on_garbage_and_split_input():
    rng = random.Random(5)
    frames = [pack_frame(MsgType.STEP, encode_step(n), seq=n) for n in range(20)]
    stream = b""
    for frame in frames:
        stream += bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 9))).replace(
            b"B", b"b") + frame
    reader = FrameReader()
    got = []
    position = 0
    while position < len(stream):                    # fed in random pieces
        size = rng.randrange(1, 7)
        reader.feed(stream[position:position + size])
        position += size
        got += [decode_step(f.payload)[0] for f in reader.frames() if f.problem is None]
    assert got == list(range(20))
    assert reader.dropped > 0


def test_bad_crc_is_reported_and_the_next_frame_still_read():
    bad = bytearray(pack_frame(MsgType.SET_INPUTS, encode_values({"N": 1})))
    bad[-1] ^= 1
    reader = FrameReader()
    reader.feed(bytes(bad) + pack_frame(MsgType.GET_OUTPUTS))
    frames = list(reader.frames())
    assert [f.problem for f in frames] == [ErrorCode.BAD_CRC, None]
    assert frames[1].type == MsgType.GET_OUTPUTS


def test_other_version_is_reported_and_dropped():
    frame = pack_frame(MsgType.HELLO, version=2) + pack_frame(MsgType.QUIT)
    reader = FrameReader()
    reader.feed(frame)
    frames = list(reader.frames())
    assert [(f.version, f.problem) for f in frames] == [(2, ErrorCode.BAD_VERSION), (1, None)]


def test_reader_memory_is_bounded():
    reader = FrameReader()
    for _ in range(64):
        reader.feed(b"\x55" * 16384)
        assert not list(reader.frames())
        assert len(reader._buffer) <= 3
    # A header that promises the most payload holds at most one frame's bytes.
    header = pack_frame(MsgType.LOAD_CHUNK, bytes(MAX_PAYLOAD))[:HEADER_SIZE]
    reader.feed(header + bytes(1000))
    assert not list(reader.frames())
    assert len(reader._buffer) <= HEADER_SIZE + MAX_PAYLOAD


def test_payloads_round_trip():
    assert decode_values(encode_values([("N.1", 2**64 - 1), ("sum", 0)])) == \
        [("N.1", 2**64 - 1), ("sum", 0)]
    assert decode_step(encode_step(5, 12), StepFlag.FORWARDED | StepFlag.SYNC) == (5, 12)
    assert decode_step(b"") == (1, None)
    link = Link("S", "S", "N", "::1", 1, 7, 1)
    assert decode_link(encode_link(link)) == link
    assert decode_config_chunk(encode_config_chunk(100, 10, b"xyz")) == (100, 10, b"xyz")
    assert decode_status(encode_status(Status(2**40, 1, True, 3))) == Status(2**40, 1, True, 3)
    ports = [PortInfo("a", "in", 8), PortInfo("sum", "out", 9)]
    assert decode_ports(encode_ports(ports)) == ports
    code, message = decode_error(encode_error(ErrorCode.TOO_WIDE, "é" * 200))
    assert code == ErrorCode.TOO_WIDE and message == "é" * 127     # cut at 255 bytes, whole


@pytest.mark.parametrize("decode, payload", [
    (decode_values, encode_values({"W": 1})[:-1]),
    (decode_values, encode_values({"W": 1}) + b"\x00"),
    (decode_values, b"\x01\x00\x02\xff\xfe" + bytes(8)),          # a name that is not UTF-8
    (decode_load_chunk, encode_load_chunk(1, 100, 0, b"abcd")[:-1]),
    (decode_load_chunk, encode_load_chunk(1, 100, 0, b"abcd") + b"!"),
    (decode_link, encode_link(Link("E", "E", "W", "h", 1))[:-2]),
    (decode_link, b"\x04\x00" + encode_link(Link("E", "E", "W", "h", 1))[2:]),
    (decode_step, b"\x01\x00\x00"),
    (decode_hello, b"\x08\x00"),
])
def test_malformed_payloads_are_refused(decode, payload):
    with pytest.raises(BgcfError) as error:
        decode(payload)
    assert error.value.code == ErrorCode.BAD_PAYLOAD


def test_encoders_refuse_what_the_wire_cannot_carry():
    with pytest.raises(ValueError, match="65535"):
        pack_frame(MsgType.LOAD_CHUNK, bytes(MAX_PAYLOAD + 1))
    with pytest.raises(ValueError, match="64-bit"):
        encode_values({"N": 1 << 64})
    with pytest.raises(ValueError, match="1 to 255 bytes"):
        encode_values({"": 1})
