"""The host protocol's command table (``bitgrid.protocol.host.COMMANDS``) and the device model
it drives (``bitgrid.host.DeviceModel``).

The table is checked against the command list of ``docs/host-protocol.md`` (written out here
on its own), then every command is sent to the device model with each declared payload length
(answered OK with exactly the declared answer size), with one byte more and one less
(BAD_LENGTH, no data), and with each of its preconditions broken in turn (refused with that
precondition's status, and a load ended where the table says so). The largest payload seen on
the wire is the ``max_payload`` IDENTIFY reports.
"""

import socket
import struct
import threading

import pytest

from bitgrid import Configuration, Edges, Emulator
from bitgrid.config import frame_record
from bitgrid.host import (Command, DeviceModel, LinkError, ProtocolTarget,
                          Status, decode_frame, encode_frame)
from bitgrid.protocol.host import (COMMANDS, Answer, Check, DeviceStatus,
                                   Effect, Identity, answer_length, check_protocol_size,
                                   device_identity, max_payload)

SIZES = [(2, 2), (4, 6), (10, 4), (16, 16), (64, 2)]


def block(width, height):
    """Edge block bytes, from the documentation: N, E, S, W words of ceil(lanes / 8) bytes."""
    return 2 * -(-width // 8) + 2 * -(-height // 8)


def documented(width, height):
    """{command: (payload lengths, OK data length)} as docs/host-protocol.md lists them."""
    record = 2 + 1 + width // 2
    outputs = 4 + block(width, height)
    return {
        Command.IDENTIFY: ((0,), 2 + 1 + 1 + 1 + 2 + 2 + 1 + 1 + 2 + 2),
        Command.LOAD_BEGIN: ((0,), 0),
        Command.LOAD_CHUNK: ((record,), 0),
        Command.LOAD_APPLY: ((4,), 0),
        Command.STEP: ((2, 2 + block(width, height)), outputs),
        Command.SET_EDGES: ((block(width, height),), 0),
        Command.GET_EDGES: ((0,), outputs),
        Command.READBACK: ((3,), record),
        Command.STATUS: ((0,), 1 + 4 + 2 + 7 * 2),
        Command.RESET: ((0,), 0),
    }


@pytest.mark.parametrize("width, height", SIZES)
def test_table_is_the_documented_one(width, height):
    assert list(COMMANDS) == sorted(Command)
    got = {command: (spec.lengths(width, height), spec.answer_length(width, height))
           for command, spec in COMMANDS.items()}
    assert got == documented(width, height)


def send(device, command, payload=b"", seq=None):
    """(status, data) of one request to ``device`` (a fresh sequence number by default)."""
    device.seq = (getattr(device, "seq", 0) + 1) & 0xFF if seq is None else seq
    out = device.feed(encode_frame(bytes([command, device.seq]) + bytes(payload)))
    assert out.count(0) == 1 and out.endswith(b"\x00")
    status, body = decode_frame(out[:-1])
    assert status == Status.OK
    assert body[:2] == bytes([0x80 | command, device.seq])
    return body[2], body[3:]


def good_payload(device, command, length):
    """A payload of ``length`` bytes for ``command`` that meets every precondition in the state
    :func:`prepare` leaves."""
    w, h = device.width, device.height
    if command == Command.LOAD_CHUNK:
        return frame_record(0, 0, 0, w)
    if command == Command.LOAD_APPLY:
        return getattr(device, "config_crc", 0).to_bytes(4, "little")
    if command == Command.READBACK:
        return bytes([h - 1, 0, 15])
    if command == Command.STEP:
        return (3).to_bytes(2, "little") + bytes(length - 2)
    return bytes(length)


def prepare(device, command):
    """Put ``device`` in a state where ``command``'s preconditions hold."""
    w, h = device.width, device.height
    if command in (Command.LOAD_CHUNK, Command.LOAD_APPLY):
        assert send(device, Command.LOAD_BEGIN)[0] == Status.OK
    config = Configuration.random(w, h, seed=3)
    device.config_crc = config.frames_crc()
    if command == Command.LOAD_APPLY:
        for row, address, frame in config.frames():
            assert send(device, Command.LOAD_CHUNK,
                        frame_record(row, address, frame, w))[0] == Status.OK


@pytest.mark.parametrize("width, height", SIZES)
@pytest.mark.parametrize("command", list(Command))
def test_declared_lengths_accepted_and_answered(command, width, height):
    lengths, answer = documented(width, height)[command]
    for length in lengths:
        device = DeviceModel(width, height)
        prepare(device, command)
        status, data = send(device, command, good_payload(device, command, length))
        assert status == Status.OK
        assert len(data) == answer
        assert answer_length(command, status, width, height) == 3 + answer     # what the host
        assert answer_length(command, Status.BAD_LENGTH, width, height) == 3   # expects


@pytest.mark.parametrize("width, height", SIZES)
@pytest.mark.parametrize("command", list(Command))
def test_one_byte_more_or_less_is_bad_length(command, width, height):
    lengths, _ = documented(width, height)[command]
    for length in lengths:
        for wrong in (length - 1, length + 1):
            if wrong < 0 or wrong in lengths:
                continue
            device = DeviceModel(width, height)
            prepare(device, command)
            before = device.device_status()
            status, data = send(device, command, bytes(wrong))
            assert (status, data) == (Status.BAD_LENGTH, b"")
            after = device.device_status()
            assert after.command_errors == before.command_errors + 1
            # Nothing happened: same flags, same staged count, same subcycle.
            assert after[:5] == before[:5]


def break_check(device, command, check):
    """Prepare ``device`` for ``command`` with ``check`` failing and every check before it
    holding; return the payload to send."""
    w, h = device.width, device.height
    if check == Check.LOADING:
        return good_payload(device, command, COMMANDS[command].lengths(w, h)[0])
    prepare(device, command)
    payload = good_payload(device, command, COMMANDS[command].lengths(w, h)[0])
    if check == Check.ADDRESS:
        return h.to_bytes(2, "little") + payload[2:]                 # row == height
    if check == Check.IN_ORDER:
        return payload[:2] + bytes([1]) + payload[3:]                # address 1 before 0
    if check == Check.COMPLETE:
        send(device, Command.LOAD_BEGIN)                             # nothing staged
        return payload
    if check == Check.CONFIG_CRC:
        return bytes([payload[0] ^ 1]) + payload[1:]
    if check == Check.VALID:
        device.valid = False                   # the gateware's grid before a first good load
        return payload
    raise AssertionError(f"no way to break {check} in this test")


CASES = [(spec.command, check) for spec in COMMANDS.values() for check in spec.checks]


def test_every_check_is_exercised():
    assert {check for _, check in CASES} == set(Check)


@pytest.mark.parametrize("width, height", [(2, 2), (10, 4)])
@pytest.mark.parametrize("command, check", CASES, ids=[f"{c.name}-{k.name}" for c, k in CASES])
def test_each_precondition_refused_with_its_status(command, check, width, height):
    device = DeviceModel(width, height)
    payload = break_check(device, command, check)
    loading = device.loading
    status, data = send(device, command, payload)
    assert (status, data) == (check.status, b"")
    after = device.device_status()
    if check.ends_load:
        assert after.load_failed and not after.loading and after.load_rejects == 1
    else:
        assert after.loading == loading and not after.load_failed


def test_address_checks_both_fields():
    device = DeviceModel(4, 4)
    assert send(device, Command.READBACK, bytes([3, 0, 16]))[0] == Status.BAD_ARGUMENT
    assert send(device, Command.READBACK, bytes([0, 1, 0]))[0] == Status.BAD_ARGUMENT
    assert send(device, Command.READBACK, bytes([3, 0, 15]))[0] == Status.OK


def test_checks_run_in_table_order():
    """LOAD_CHUNK checks the length, then loading, then the address, then the order."""
    device = DeviceModel(4, 4)
    assert send(device, Command.LOAD_CHUNK, bytes(4))[0] == Status.BAD_LENGTH
    assert send(device, Command.LOAD_CHUNK, frame_record(0, 1, 0, 4)[:2] + bytes([17, 0, 0])
                )[0] == Status.NOT_LOADING
    send(device, Command.LOAD_BEGIN)
    assert send(device, Command.LOAD_CHUNK, bytes([0, 0, 17, 0, 0]))[0] == Status.BAD_ARGUMENT
    assert send(device, Command.LOAD_CHUNK, frame_record(0, 1, 0, 4))[0] == Status.BAD_ORDER


@pytest.mark.parametrize("width, height", SIZES)
def test_max_payload_is_the_largest_on_the_wire(width, height):
    """The largest request payload a command accepts or answer payload (status and data) it
    gives is the max_payload IDENTIFY reports; a frame one byte longer than that allows is
    TOO_LONG."""
    largest = 0
    for command in Command:
        lengths, answer = documented(width, height)[command]
        largest = max(largest, *lengths, 1 + answer)
    device = DeviceModel(width, height)
    identity = Identity.from_bytes(send(device, Command.IDENTIFY)[1])
    assert identity.max_payload == max_payload(width, height) == largest
    too_long = encode_frame(bytes([Command.GET_EDGES, 9]) + bytes(largest + 1))
    status, body = decode_frame(device.feed(too_long)[:-1])
    assert body == bytes([0xFF, 0, Status.TOO_LONG])


def test_size_limit():
    """The widest grid is 490 cells: a READBACK answer (command, sequence, status, a record of
    3 + 245 bytes, CRC) is then 253 bytes."""
    assert check_protocol_size(490, 2) == (490, 2)
    with pytest.raises(ValueError, match="A 492 x 2 grid needs frames of 254 bytes; the "
                                         "protocol allows at most 253"):
        check_protocol_size(492, 2)
    with pytest.raises(ValueError, match="needs frames"):
        DeviceModel(492, 2)


def test_structures_round_trip():
    identity = device_identity(6, 4, "memory")
    assert Identity.from_bytes(identity.to_bytes()) == identity
    assert identity.to_bytes()[:2] == b"BG" and identity.to_bytes()[9] == 1   # storage byte
    status = DeviceStatus(True, False, True, 2**32 + 5, 7, 1, 2, 3, 4, 5, 6, 0x1234)
    assert DeviceStatus.from_bytes(status.to_bytes()) == status._replace(subcycle=5)
    assert status.to_bytes()[-2:] == b"\x34\x12"            # frames_dropped, the last counter
    with pytest.raises(LinkError, match="magic b'XY'"):
        Identity.from_bytes(b"XY" + identity.to_bytes()[2:])
    with pytest.raises(LinkError, match="STATUS answered 3 bytes"):
        DeviceStatus.from_bytes(b"abc")


def test_every_effect_and_answer_is_used():
    assert {spec.effect for spec in COMMANDS.values()} == set(Effect)
    assert {spec.answer for spec in COMMANDS.values()} == set(Answer)


# --- The simulated board's socket (bitgrid.sim.host_link), against the device model ------------

def serve_model(sock, device, times):
    """What bitgrid.sim.host_link_bench does, with the device model in place of the simulated
    UART; time advances 1 ms per message (appended to ``times``)."""
    from bitgrid.sim.host_link import QUIT, READ, WRITE, receive_message, send_answer
    pending, now = bytearray(), 0.0
    while True:
        op, data = receive_message(sock)
        now += 1e-3
        times.append(now)
        if op in (None, QUIT):
            break
        if op == WRITE:
            pending += device.feed(data)
            send_answer(sock, now)
        elif op == READ:
            assert struct.unpack("<d", data)[0] > 0
            send_answer(sock, now, bytes(pending))
            pending.clear()
    sock.close()


def test_sim_link_transport_over_a_socket():
    from bitgrid.sim.host_link import SimLinkTransport
    host_end, bench_end = socket.socketpair()
    device, times = DeviceModel(4, 4), []
    bench = threading.Thread(target=serve_model, args=(bench_end, device, times), daemon=True)
    bench.start()
    transport = SimLinkTransport(host_end, name="sim (model)")
    with ProtocolTarget(transport, timeout=0.5) as target:
        assert target.name == "sim (model)"
        config = Configuration.random(4, 4, seed=8)
        target.load(config)
        assert target.readback() == config
        reference = Emulator(config)
        expected = [reference.step(Edges(1, 2, 3, 4)) for _ in range(2)][-1]
        assert target.step(2, Edges(1, 2, 3, 4)) == expected
        assert transport.clock() == times[-1]  # the bench's time, not the wall clock
    bench.join(5)
    assert not bench.is_alive()


def test_sim_link_transport_fault_injection():
    """A write corrupted on its way to the device is answered with an error and sent again."""
    from bitgrid.sim.host_link import SimLinkTransport
    host_end, bench_end = socket.socketpair()
    device = DeviceModel(2, 2)
    threading.Thread(target=serve_model, args=(bench_end, device, []), daemon=True).start()
    count = [0]

    def flip_third(data):
        count[0] += 1
        return bytes([data[0] ^ 0x40]) + data[1:] if count[0] == 3 else data
    with ProtocolTarget(SimLinkTransport(host_end, to_device=flip_third)) as target:
        target.load(Configuration.random(2, 2, seed=1))
        assert target.retransmissions == 1
        status = target.status()
        assert status.crc_errors + status.framing_errors == 1 and status.command_errors == 0


def test_sim_link_transport_when_the_bench_is_gone():
    from bitgrid.sim.host_link import SimLinkTransport
    host_end, bench_end = socket.socketpair()
    bench_end.close()
    with pytest.raises(LinkError, match="the simulation of the host controller ended"):
        SimLinkTransport(host_end).write(b"\x00")


def test_documentation_lists_the_table():
    """docs/host-protocol.md's command table names every command with its code and the
    statuses of its preconditions, in the order they are tested."""
    import os
    import re
    root = os.path.dirname(os.path.abspath(__file__))
    while not os.path.exists(os.path.join(root, "docs", "host-protocol.md")):
        assert os.path.dirname(root) != root, "docs/host-protocol.md not found"
        root = os.path.dirname(root)
    path = os.path.join(root, "docs", "host-protocol.md")
    with open(path, encoding="utf-8") as file:
        rows = re.findall(r"^\| 0x([0-9A-F]{2}) \| (\w+) \| [^|]* \| ([^|]*) \|", file.read(),
                          re.MULTILINE)
    documented_checks = {int(code, 16): (name, refusals.strip()) for code, name, refusals in rows}
    assert documented_checks == {
        int(spec.command): (spec.command.name,
                            ", ".join(c.status.name for c in spec.checks) or "-")
        for spec in COMMANDS.values()}
