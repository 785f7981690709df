"""``bitgrid serve`` (bitgrid.bgcf.server) through real TCP connections: the conformance cases
on every emulated target, every message, every error, and the extensions."""

import random
import socket
import struct
import time

import pytest

from bitgrid import Configuration, Emulator, bitstream, ports
from bitgrid.bgcf import BgcfClient, ServerError
from bitgrid.bgcf.client import run_vectors
from bitgrid.bgcf.names import Names
from bitgrid.bgcf.connection import MAX_SESSIONS, program_size
from bitgrid.host import open_target
from bitgrid.protocol.bgcf import (
    ErrorCode, Feature, FrameReader, Hello, MsgType, StepFlag, decode_error, decode_hello,
    decode_values, encode_hello, encode_load_chunk, encode_step, encode_values, pack_frame)
from bitgrid.terms import Edges, E, N, W

from support.bgcf import connected, serving
from support.configs import mixed_config
from support.conformance import bad_stream_cases, conformance_cases, load_conformance


def _mesh_fits(case, spec):
    cols, rows = map(int, spec[5:].split("x"))
    return case.width % (2 * cols) == 0 and case.height % (2 * rows) == 0


@pytest.mark.parametrize("spec", ["emu", "fast", "mesh:2x2"])
@pytest.mark.parametrize("name", conformance_cases())
def test_conformance_through_the_server(spec, name):
    case = load_conformance(name)
    if spec.startswith("mesh:") and not _mesh_fits(case, spec):
        spec = "mesh:1x1"                   # the grid does not split in 2 x 2 even tiles
    with serving(spec, case.width, case.height) as server, connected(server) as client:
        assert run_vectors(client, case) == []


@pytest.mark.parametrize("name", bad_stream_cases())
def test_bad_programs_are_refused_and_the_running_one_kept(name):
    case = load_conformance(name)
    good = Configuration.random(case.width, case.height, seed=3)
    with serving("emu", case.width, case.height) as server, connected(server) as client:
        client.load(bitstream.write(good))
        with open(case.bitstream_path, "rb") as file:
            data = file.read()
        with pytest.raises(ServerError) as error:
            client.load(data)
        assert error.value.code in (ErrorCode.BAD_PROGRAM, ErrorCode.BAD_CHUNK)
        assert case.expect_error in error.value.message
        assert client.readback() == bitstream.write(good)


# -- a raw connection, to send what no polite client would --------------------------------------

class Raw:
    """A socket speaking frames by hand."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.reader = FrameReader()

    def send(self, data):
        self.sock.sendall(data)

    def frame(self, kind, payload=b"", flags=0):
        self.send(pack_frame(kind, payload, flags=flags))

    def next(self):
        while True:
            for frame in self.reader.frames():
                return frame
            data = self.sock.recv(65536)
            if not data:
                return None
            self.reader.feed(data)

    def error(self):
        frame = self.next()
        assert frame.type == MsgType.ERROR, frame
        return decode_error(frame.payload)

    def alive(self):
        """The server still answers HELLO on this connection."""
        self.frame(MsgType.HELLO, encode_hello(Hello()))
        frame = self.next()
        return frame.type == MsgType.HELLO and decode_hello(frame.payload).width == 8


#: Every target the protocol suite runs on: the emulators, the mesh of emulated chips, the
#: Python model of a board behind the UART protocol, and (slow set) the RTL grid behind the
#: board's host controller in Verilator.
SUITE_TARGETS = ["emu", "fast", "mesh:2x2", "loopback",
                 pytest.param("sim", marks=[pytest.mark.slow, pytest.mark.verilator])]


@pytest.fixture(params=SUITE_TARGETS)
def server(request):
    target = request.param
    if target == "sim":
        target = open_target("sim", width=8, height=8, simulator="verilator", quiet=True)
    with serving(target, 8, 8) as running:
        yield running


@pytest.fixture
def raw(server):
    connection = Raw(server.port)
    yield connection
    connection.sock.close()


def test_hello_reports_the_grid_and_the_features(raw):
    raw.frame(MsgType.HELLO)                     # an empty HELLO is a request too
    hello = decode_hello(raw.next().payload)
    assert hello == Hello(8, 8, 1, hello.features)
    assert hello.features == int(Feature.READBACK | Feature.STATUS | Feature.PORT_NAMES
                                 | Feature.SYNC_STEP | Feature.DUPLEX_LINK | Feature.ROWS)


def test_bad_crc_gets_an_error_and_the_server_goes_on(raw):
    frame = bytearray(pack_frame(MsgType.SET_INPUTS, encode_values({"N": 1})))
    frame[-3] ^= 0x10
    raw.send(bytes(frame))
    assert raw.error()[0] == ErrorCode.BAD_CRC
    assert raw.alive()


def test_unknown_type_and_version(raw):
    raw.frame(0x55)
    assert raw.error() == (ErrorCode.UNKNOWN_TYPE, "unknown message type 0x55")
    raw.send(pack_frame(MsgType.HELLO, version=3))
    code, message = raw.error()
    assert code == ErrorCode.BAD_VERSION and "version 3" in message
    assert raw.alive()


@pytest.mark.parametrize("kind", [MsgType.APPLY, MsgType.GET_OUTPUTS, MsgType.UNLINK,
                                  MsgType.GET_STATUS, MsgType.GET_PORTS])
def test_messages_without_a_payload_refuse_one(raw, kind):
    raw.frame(kind, b"\x01")
    code, message = raw.error()
    assert code == ErrorCode.BAD_PAYLOAD and "has no payload, not 1 bytes" in message
    assert raw.alive()


def test_garbage_between_frames_is_skipped(raw):
    raw.send(b"\x00garbage BGC" + pack_frame(MsgType.HELLO, encode_hello(Hello())))
    assert raw.next().type == MsgType.HELLO


def _bad_crc_frame():
    """A header-only SET_INPUTS frame whose CRC field is 0 (the right one is not)."""
    frame = bytearray(pack_frame(MsgType.SET_INPUTS))
    assert frame[12:16] != bytes(4)
    frame[12:16] = bytes(4)
    return bytes(frame)


#: 64 KiB bursts of garbage (issue 39, "floods"): no magic at all (silence), the magic over and
#: over (each a header of version 0x42: one ERROR each before, 16 times the bytes sent), and
#: frames with a bad CRC back to back. ``(bytes, ERROR codes expected)``.
FLOODS = {
    "no magic": (random.Random(39).randbytes(65536).replace(b"B", b"b"), []),
    "magics": (b"BGCF" * 16384, [ErrorCode.BAD_VERSION]),
    "bad CRCs": (_bad_crc_frame() * 4096, [ErrorCode.BAD_CRC]),
}


def _answers_until_hello(raw):
    """The frames received up to and including the next HELLO."""
    frames = []
    while not frames or frames[-1].type != MsgType.HELLO:
        frames.append(raw.next())
        assert frames[-1] is not None, "the server closed the connection"
    return frames


@pytest.mark.parametrize("flood", FLOODS)
def test_a_flood_of_garbage_gets_at_most_one_error_and_serving_goes_on(raw, flood):
    garbage, codes = FLOODS[flood]
    assert len(garbage) == 65536
    raw.send(garbage + pack_frame(MsgType.HELLO, encode_hello(Hello())))
    frames = _answers_until_hello(raw)
    assert [f.type for f in frames] == [MsgType.ERROR] * len(codes) + [MsgType.HELLO]
    errors = [decode_error(f.payload) for f in frames[:-1]]
    assert [code for code, _ in errors] == codes
    assert all(message.endswith("dropped; later bad frames are dropped unanswered until a "
                                "good one") for _, message in errors)
    assert decode_hello(frames[-1].payload)[:3] == (8, 8, 1)
    assert raw.alive()                   # and nothing more was queued behind the answer


def test_each_resynchronisation_gets_its_own_error(raw):
    """A good frame ends a run of dropped frames: the next run is answered once again."""
    hello = pack_frame(MsgType.HELLO, encode_hello(Hello()))
    raw.send(_bad_crc_frame() * 100 + hello + b"BGCF" * 100 + hello + b"\x00" * 1000 + hello)
    codes = [[decode_error(f.payload)[0] for f in _answers_until_hello(raw)[:-1]]
             for _ in range(3)]
    assert codes == [[ErrorCode.BAD_CRC], [ErrorCode.BAD_VERSION], []]
    assert raw.alive()


SIZE = program_size(8, 8)


@pytest.mark.parametrize("chunks, expect", [
    ([(1, SIZE, 0, 10), (1, SIZE, 20, 10)], "leaves a gap after byte 10"),
    ([(1, SIZE, 0, 10), (1, SIZE, 5, 10)], "overlaps bytes received"),
    ([(1, SIZE, 0, 10), (1, SIZE, 0, 10)], "overlaps bytes received"),
    ([(1, SIZE, 8, 4)], "leaves a gap after byte 0"),
    ([(1, SIZE, 0, SIZE + 4)], "runs past total_bytes"),
    ([(1, SIZE, 0, SIZE), (1, SIZE, SIZE, 1)], "runs past total_bytes"),
    ([(1, SIZE + 1, 0, 4)], f"is {SIZE} bytes, not {SIZE + 1}"),
    ([(1, 2**32 - 1, 0, 4)], f"is {SIZE} bytes, not {2**32 - 1}"),
])
def test_bad_chunks_are_refused(raw, chunks, expect):
    data = bitstream.write(Configuration.random(8, 8, seed=1))
    codes = []
    for session, total, offset, length in chunks:
        raw.frame(MsgType.LOAD_CHUNK, encode_load_chunk(session, total, offset,
                                                        (data * 2)[offset:offset + length]))
    raw.frame(MsgType.HELLO)
    while (frame := raw.next()).type == MsgType.ERROR:
        codes.append(decode_error(frame.payload))
    assert [c for c, _ in codes] == [ErrorCode.BAD_CHUNK]
    assert expect in codes[0][1]


def test_truncated_chunk_payload(raw):
    raw.frame(MsgType.LOAD_CHUNK, encode_load_chunk(1, SIZE, 0, b"BGBS")[:-2])
    code, message = raw.error()
    assert code == ErrorCode.BAD_PAYLOAD and "truncated" in message


def test_sessions_are_bounded(raw):
    for session in range(MAX_SESSIONS + 1):
        raw.frame(MsgType.LOAD_CHUNK, encode_load_chunk(session, SIZE, 0, b"BGBS"))
    code, message = raw.error()
    assert code == ErrorCode.BAD_CHUNK and f"{MAX_SESSIONS} load sessions" in message


def test_apply_of_an_incomplete_session_keeps_the_running_program(server):
    old = Configuration.random(8, 8, seed=7)
    new = bitstream.write(Configuration.random(8, 8, seed=8))
    with connected(server) as client:
        client.load(bitstream.write(old))
        client.set_inputs(W=0x5A)
        client.step(3)
        client.send(MsgType.LOAD_CHUNK, encode_load_chunk(2, len(new), 0, new[:100]))
        client.send(MsgType.APPLY)
        with pytest.raises(ServerError) as error:
            client.check()
        assert error.value.code == ErrorCode.INCOMPLETE
        assert "session 2: 100 of 536 bytes" in error.value.message
        client.step(2)
        reference = Emulator(old)
        for _ in range(5):
            expected = reference.step(Edges(w=0x5A))
        assert client.outputs() == {"N": expected.n, "E": expected.e, "S": expected.s,
                                    "W": expected.w}
        assert client.readback() == bitstream.write(old)


def test_apply_takes_the_complete_session_with_the_highest_number(server):
    programs = {sid: Configuration.random(8, 8, seed=sid) for sid in (3, 9, 5)}
    with connected(server) as client:
        for sid, config in programs.items():
            data = bitstream.write(config)
            client.send(MsgType.LOAD_CHUNK, encode_load_chunk(sid, len(data), 0, data[:300]))
            client.send(MsgType.LOAD_CHUNK, encode_load_chunk(sid, len(data), 300, data[300:]))
        client.send(MsgType.APPLY)
        assert client.readback() == bitstream.write(programs[9])
        client.send(MsgType.APPLY)                 # session 9 is used up: 5 is next
        assert client.readback() == bitstream.write(programs[5])


def test_inputs_are_set_all_or_nothing(server):
    with connected(server) as client:
        client.load(bitstream.write(Configuration.random(8, 8, seed=2)))
        client.set_inputs(N=0x81)
        for values, code, text in [
                ({"N": 1, "X": 1}, ErrorCode.UNKNOWN_NAME, "no input named 'X'"),
                ({"W": 3, "E": 0x100}, ErrorCode.TOO_WIDE, "E=0x100 has bits beyond its 8"),
                ({"N.1": 1}, ErrorCode.UNKNOWN_NAME, "the inputs are N, E, S, W")]:
            client.set_inputs(values)
            with pytest.raises(ServerError) as error:
                client.check()
            assert error.value.code == code and text in error.value.message
        status_before = client.status().subcycle
        client.step(1)
        config = Configuration.random(8, 8, seed=2)
        expected = Emulator(config).step(Edges(n=0x81))
        assert client.outputs()["S"] == expected.s
        assert client.status().subcycle == status_before + 1


def test_step_before_any_program(raw):
    raw.frame(MsgType.STEP, encode_step(1))
    assert raw.error()[0] == ErrorCode.NO_PROGRAM
    raw.frame(MsgType.GET_OUTPUTS)
    assert raw.error()[0] == ErrorCode.NO_PROGRAM
    assert raw.alive()


def test_sync_step_out_of_step_is_refused(server):
    with connected(server) as client:
        client.load(bitstream.write(Configuration.random(8, 8, seed=2)))
        client.send(MsgType.STEP, encode_step(1, 5), flags=StepFlag.FORWARDED | StepFlag.SYNC)
        with pytest.raises(ServerError, match="out of step: this server is at subcycle 0"):
            client.check()
        client.send(MsgType.STEP, encode_step(1, 1), flags=StepFlag.FORWARDED | StepFlag.SYNC)
        client.send(MsgType.STEP, encode_step(1, 1), flags=StepFlag.FORWARDED | StepFlag.SYNC)
        assert client.status().subcycle == 1        # the second reached 1 already: no step


def test_long_steps_and_the_counter():
    config = Configuration.random(8, 8, seed=4)
    with serving("fast", 8, 8) as server, connected(server) as client:
        client.load(bitstream.write(config))
        client.set_inputs(E=0x33)
        client.step(10001)
        status = client.status()
        assert (status.subcycle, status.phase, status.loaded, status.links) == \
            (10001, 1, True, 0)
        reference = Emulator(config)
        for _ in range(10001):
            expected = reference.step(Edges(e=0x33))
        assert client.outputs() == dict(zip("NESW", expected))


def test_apply_resets_outputs_counter_and_inputs(server):
    config = Configuration.random(8, 8, seed=11)
    with connected(server) as client:
        client.load(bitstream.write(config))
        client.set_inputs(W=0xFF)
        client.step(7)
        client.load(bitstream.write(config))
        assert client.status().subcycle == 0
        assert client.outputs() == {"N": 0, "E": 0, "S": 0, "W": 0}
        client.step(1)
        assert client.outputs() == dict(zip("NESW", Emulator(config).step(Edges())))


def test_clients_one_after_another_share_the_grid(server):
    config = Configuration.random(8, 8, seed=12)
    with connected(server) as first:
        first.load(bitstream.write(config))
        first.step(4)
        first.check()       # connections are not ordered with each other: wait for the step
        first.quit()
    with connected(server) as second:
        assert second.status().subcycle == 4
        assert second.readback() == bitstream.write(config)


def test_quit_closes_only_this_connection(server, raw):
    raw.frame(MsgType.QUIT)
    assert raw.next() is None                   # closed by the server
    assert Raw(server.port).alive()


def test_shutdown_stops_the_server():
    with serving("emu", 8, 8) as server:
        with connected(server) as client:
            client.shutdown()
        deadline = time.monotonic() + 5
        while not server.service.stopping.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.service.stopping.is_set()


def test_wide_sides_are_cut_into_64_lane_words():
    config = mixed_config(130, 2, random.Random(3))
    rng = random.Random(4)
    with serving("emu", 130, 2) as server, connected(server) as client:
        names = {p.name: p.width for p in client.ports() if p.direction == "in"}
        assert names == {"N": 64, "N.1": 64, "N.2": 2, "E": 2, "S": 64, "S.1": 64, "S.2": 2,
                         "W": 2}
        client.load(bitstream.write(config))
        reference = Emulator(config)
        for _ in range(6):
            n, s = rng.getrandbits(130), rng.getrandbits(130)
            client.set_inputs({"N": n & (2**64 - 1), "N.1": n >> 64 & (2**64 - 1),
                               "N.2": n >> 128, "S": s & (2**64 - 1),
                               "S.1": s >> 64 & (2**64 - 1), "S.2": s >> 128})
            client.step(1)
            expected = reference.step(Edges(n=n, s=s))
            out = client.outputs()
            assert out["N"] | out["N.1"] << 64 | out["N.2"] << 128 == expected.n
            assert out["S"] | out["S.1"] << 64 | out["S.2"] << 128 == expected.s
            assert (out["E"], out["W"]) == (expected.e, expected.w)


def _port_program():
    """An 8 x 8 program and its port map: a 4-bit input ``a`` on W lanes 0-3 and a 4-bit
    output ``y`` on E lanes 0-3 (pass-through rows), plus a 1-bit ``flag`` on N lane 5."""
    from bitgrid.cell import PASS_THROUGH
    config = Configuration(8, 8)
    for y in range(4):
        for x in range(8):
            config[x, y] = PASS_THROUGH
    portmap = ports.PortMap(8, 8, [
        ports.Port("a", "in", tuple(ports.PortBit(W, i) for i in range(4))),
        ports.Port("flag", "in", (ports.PortBit(N, 5),)),
        # a route of 8 cells from (0, i): 8 subcycles, 9 from an odd cell (SPEC section 4)
        ports.Port("y", "out", tuple(ports.PortBit(E, i, skew=i % 2) for i in range(4)))],
        latency=8).for_program(config)
    return config, portmap


def test_port_names_while_their_program_runs():
    config, portmap = _port_program()
    with serving("emu", 8, 8, program=config, portmap=portmap) as server, \
            connected(server) as client:
        listed = {(p.name, p.direction): p.width for p in client.ports()}
        assert listed[("a", "in")] == 4 and listed[("y", "out")] == 4
        assert listed[("flag", "in")] == 1
        client.set_inputs(a=0b1011, flag=1)
        client.step(9)
        out = client.outputs()
        assert out["y"] == 0b1011 and out["E"] == 0b1011
        client.set_inputs(a=0x10)
        with pytest.raises(ServerError, match="a=0x10 has bits beyond its 4 lanes"):
            client.check()
        # Another program: the port map does not describe it, so its names go.
        client.load(bitstream.write(Configuration.random(8, 8, seed=1)))
        assert {p.name for p in client.ports()} == {"N", "E", "S", "W"}
        client.load(bitstream.write(config))
        assert "y" in {p.name for p in client.ports()}


def test_names_reference_by_hand():
    _, portmap = _port_program()
    names = Names(8, 8, portmap)
    edges = names.set(Edges(), [("W", 0x80), ("a", 0b0110), ("flag", 1)])
    assert edges == Edges(n=1 << 5, w=0x80 | 0b0110)
    # In message order: a whole bus word sets every lane, a port's lanes among them.
    assert names.set(edges, [("W", 0x01)]) == Edges(n=1 << 5, w=0x01)
    assert names.get(Edges(e=0b1100_1010), "y") == 0b1010
    # Lane parity of the E bus of an 8 x 8 grid: cell (7, y) is odd for even y.
    assert names.parity_masks("E") == (0b10101010, 0b01010101)
    assert names.parity_masks("N") == (0b01010101, 0b10101010)


def test_link_to_nobody_fails_cleanly(server):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    with connected(server) as client:
        client.load(bitstream.write(Configuration.random(8, 8, seed=1)))
        with pytest.raises(ServerError) as error:
            client.link("E", "E", "W", "127.0.0.1", free)
        assert error.value.code == ErrorCode.LINK_FAILED
        with pytest.raises(ServerError, match="no output named 'Q'"):
            client.link("E", "Q", "W", "127.0.0.1", free)
        assert client.status().links == 0


def test_values_are_u64_on_the_wire():
    payload = encode_values({"N": 3})
    assert payload == struct.pack("<HB", 1, 1) + b"N" + struct.pack("<Q", 3)
    assert decode_values(payload) == [("N", 3)]


def test_readback_of_a_large_program_comes_in_chunks():
    config = Configuration.random(128, 64, seed=5)
    data = bitstream.write(config)
    assert len(data) > 65535
    with serving("fast", 128, 64) as server, connected(server) as client:
        client.load(data)
        assert client.readback() == data


def test_a_client_of_an_old_server_sees_no_extensions():
    """BgcfClient refuses an extension the server does not announce, without sending it."""
    with serving("emu", 8, 8) as server, BgcfClient(port=server.port) as client:
        client.server = Hello(8, 8, 1, 0)
        with pytest.raises(ServerError, match="has no readback"):
            client.readback()


def test_a_sync_step_reached_twice_at_once_steps_once():
    """The far chip of a 2 x 2 mesh gets the same SYNC step from two peers at once; the second
    waits while the first runs it, then finds the counter already there."""
    import threading
    from bitgrid.bgcf import GridService
    from bitgrid.host.targets import EmulatorTarget

    class SlowTarget(EmulatorTarget):
        def step(self, n=1, edges=None):
            time.sleep(0.2)
            return super().step(n, edges)

    service = GridService(SlowTarget(4, 4), program=Configuration.random(4, 4, seed=1))
    errors = []

    def forwarded():
        try:
            service.step(1, flags=StepFlag.FORWARDED | StepFlag.SYNC, until=1)
        except Exception as error:          # noqa: BLE001 - collected for the assertion
            errors.append(error)

    threads = [threading.Thread(target=forwarded) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and service.subcycle == 1
