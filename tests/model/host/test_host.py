"""The host runtime (``bitgrid.host``): link frames and CRC, the Python device model of the
protocol engine, the targets over the protocol and the emulator, fault injection on the link,
rejected loads, and ``bitgrid run``. The reference emulator is the source of truth throughout."""

import json
import os
import random
import shutil

import pytest
from click.testing import CliRunner

from bitgrid import Configuration, Edges, Emulator, host
from bitgrid.cli import main
from bitgrid.config import frame_record
from bitgrid.host import (Command, DeviceModel, EmulatorTarget, LineNoise, LinkError,
                          LoopbackTransport, NoAnswerError, ProtocolTarget, Status, TargetError,
                          decode_frame, encode_frame, run_vectors)
from support.conformance import conformance_cases, conformance_dir, load_conformance


def request(command, payload=b"", seq=1):
    return encode_frame(bytes([command, seq]) + bytes(payload))


def answer(encoded):
    """(command byte, sequence, status, data) of one encoded answer."""
    assert encoded.endswith(b"\x00") and encoded.count(0) == 1
    status, body = decode_frame(encoded[:-1])
    assert status == Status.OK
    return body[0], body[1], body[2], body[3:]


# --- Frames ------------------------------------------------------------------------------------

class TestFrames:
    def test_crc_is_the_catalog_genibus(self):
        assert host.host_crc(b"123456789") == 0xD64E          # CRC-16/GENIBUS check value
        assert host.HOST_CRC.algorithm.initial_crc == 0xFFFF
        assert host.HOST_CRC.residue() == 0x1D0F
        assert host.PROTOCOL_VERSION == 2

    def test_lost_or_damaged_delimiters_fail_the_check(self):
        """A lost delimiter merges two frames (``A 0x00 B`` once decoded), one read as the COBS
        code 0x01 adds a zero before or after a frame: each fails the CRC, every time (with
        CRC-16/XMODEM, initial value and residue 0, each passed)."""
        rng = random.Random(5)
        for _ in range(300):
            a, b = (encode_frame(bytes(rng.randrange(256) for _ in range(rng.randrange(2, 40))))
                    for _ in range(2))
            for damaged in (a[:-1] + b[:-1], a[:-1] + b"\x01" + b[:-1], a[:-1] + b"\x01",
                            b"\x01" + a[:-1], a[:-1] + b"\x01\x01"):
                assert decode_frame(damaged)[0] in (Status.BAD_CRC, Status.BAD_FRAME)

    def test_round_trip(self):
        body = bytes([Command.STEP, 7, 0, 1, 0, 0, 5])
        wire = encode_frame(body)
        assert wire[-1] == 0 and 0 not in wire[:-1]
        assert decode_frame(wire[:-1]) == (Status.OK, body)

    @pytest.mark.parametrize("encoded, status", [
        (b"\x05\x01\x02", Status.BAD_FRAME),        # block runs past the delimiter
        (b"\x02\x01\x01", Status.TOO_SHORT),       # 2 bytes decoded
        (encode_frame(b"\x01\x02")[:-1][:-1] + b"\x01", Status.BAD_CRC),
    ])
    def test_framing_errors(self, encoded, status):
        assert decode_frame(encoded)[0] == status

    def test_too_long(self):
        assert decode_frame(encode_frame(bytes(40))[:-1], max_body=20)[0] == Status.TOO_LONG

    def test_edges_block(self):
        edges = Edges(0x3FF, 0x15, 0x201, 0x2A)
        block = host.pack_edges(edges, 10, 6)
        assert len(block) == host.edge_block_size(10, 6) == 2 + 1 + 2 + 1
        assert host.unpack_edges(block, 10, 6) == edges
        assert host.unpack_edges(b"\xff" * 6, 10, 6) == Edges(0x3FF, 0x3F, 0x3FF, 0x3F)


# --- The device model ----------------------------------------------------------------------------

class TestDeviceModel:
    def test_identify(self):
        cmd, seq, status, data = answer(DeviceModel(8, 6, storage="memory").feed(
            request(Command.IDENTIFY, seq=9)))
        assert (cmd, seq, status) == (0x81, 9, Status.OK)
        ident = host.Identity.from_bytes(data)
        assert (ident.width, ident.height, ident.storage, ident.protocol) == (8, 6, "memory", 2)
        assert ident.features == host.FEATURES
        assert ident.max_payload == host.max_payload(8, 6)

    def test_every_request_is_answered(self):
        device = DeviceModel(4, 4)
        for command in list(Command) + [0x42]:
            for payload in (b"", b"\x01", bytes(7)):
                out = device.feed(request(command, payload, seq=3))
                cmd, seq, status, _ = answer(out)
                assert (cmd, seq) == (0x80 | command, 3)
        assert answer(device.feed(request(0x42, seq=4)))[2] == Status.UNKNOWN_COMMAND

    @pytest.mark.parametrize("garbage, status", [
        (b"\x05\x01\x02", Status.BAD_FRAME),
        (b"\x02\x01\x01", Status.TOO_SHORT),
        (encode_frame(bytes(range(1, 60)))[:-1], Status.TOO_LONG),
        (encode_frame(b"\x01\x05")[:-2] + b"\x77", Status.BAD_CRC),
    ])
    def test_garbage_answered_and_resynchronised(self, garbage, status):
        device = DeviceModel(4, 4)
        out = device.feed(garbage + b"\x00" + request(Command.GET_EDGES, seq=5))
        first, second = out.split(b"\x00")[:2]
        assert answer(first + b"\x00")[:3] == (0xFF, 0, status)
        assert answer(second + b"\x00")[:3] == (0x87, 5, Status.OK)
        counters = device.counters
        assert counters["frames_ok"] == 1
        assert counters["crc_errors" if status == Status.BAD_CRC else "framing_errors"] == 1

    def test_empty_frames_are_silent(self):
        assert DeviceModel(2, 2).feed(b"\x00\x00\x00") == b""

    def test_replay_is_not_executed_twice(self):
        device = DeviceModel(2, 2)
        frame = request(Command.STEP, (3).to_bytes(2, "little"), seq=7)
        first = device.feed(frame)
        assert device.feed(frame) == first
        assert device.emulator.subcycle == 3
        assert device.counters["replays"] == 1
        device.feed(request(Command.STEP, (3).to_bytes(2, "little"), seq=8))
        assert device.emulator.subcycle == 6


# --- Targets ---------------------------------------------------------------------------------------

def loopback(width, height, **faults):
    return ProtocolTarget(LoopbackTransport(DeviceModel(width, height), **faults),
                          timeout=0.002, retries=20)


class TestTargets:
    @pytest.mark.parametrize("name", conformance_cases())
    @pytest.mark.parametrize("kind", ["emu", "loopback"])
    def test_conformance(self, name, kind):
        case = load_conformance(name)
        target = EmulatorTarget() if kind == "emu" else loopback(case.width, case.height)
        assert run_vectors(target, case) == []
        assert target.readback() == case.load_bitstream().config
        assert target.status().subcycle == len(case.steps)

    def test_api_matches_emulator(self):
        config = Configuration.random(6, 4, seed=11)
        target = loopback(6, 4)
        target.load(config)
        reference = Emulator(config)
        rng = random.Random(5)
        for _ in range(20):
            edges = Edges(rng.getrandbits(6), rng.getrandbits(4), rng.getrandbits(6),
                          rng.getrandbits(4))
            n = rng.randrange(0, 4)
            target.set_edges(edges)
            for _ in range(n):
                reference.step(edges)
            got = target.step(n)
            assert got == reference.edge_outputs()
            assert target.get_edges() == reference.edge_outputs()
        status = target.status()
        assert status.subcycle == reference.subcycle and status.valid
        target.reset()
        reference.reset()
        assert target.get_edges() == Edges() and target.status().subcycle == 0

    def test_size_mismatch(self):
        with pytest.raises(ValueError, match="size mismatch: the configuration is 2 x 2, the "
                                             "target's grid is 4 x 4"):
            loopback(4, 4).load(Configuration(2, 2))

    def test_no_answer(self):
        class Silent(host.Transport):
            name = "silent"

            def write(self, data):
                pass

            def read(self, timeout):
                return b""
        with pytest.raises(LinkError, match="no valid answer to IDENTIFY from silent after 2"):
            ProtocolTarget(Silent(), timeout=0.001, retries=1)

    def test_no_serial_port(self):
        with pytest.raises(LinkError, match="cannot open serial port /nonexistent/tty"):
            host.open_target("serial:/nonexistent/tty")

    @pytest.mark.icarus
    def test_sim_target(self):
        """``open_target("sim")`` is a target like the others: the host controller gateware in
        Icarus, over a simulated UART, runs a conformance case exactly and reads its
        configuration back; closing it ends the simulator."""
        case = load_conformance("full_adder1")
        with host.open_target("sim", width=case.width, height=case.height,
                              simulator="icarus", quiet=True) as target:
            assert target.name == "sim (icarus)"
            assert (target.identity.width, target.identity.height) == (case.width, case.height)
            assert run_vectors(target, case, steps=12) == []
            assert target.readback() == case.load_bitstream().config
            status = target.status()
            assert status.valid and status.subcycle == 12 and status.command_errors == 0
            simulation = target.transport._simulation
        assert not simulation.alive()

    def test_sim_target_options_checked_before_any_build(self, monkeypatch):
        from bitgrid.sim import runner
        monkeypatch.setattr(runner, "build", lambda *a, **k: pytest.fail("built"))
        with pytest.raises(ValueError, match="Simulator must be one of 'icarus', 'verilator', "
                                             "not 'xsim'"):
            host.open_target("sim", width=2, height=2, simulator="xsim")
        with pytest.raises(ValueError, match="needs frames of 254 bytes"):
            host.open_target("sim", width=492, height=2)


class TestRejectedLoads:
    """A bad load is refused and the previous configuration keeps running."""

    def setup_method(self):
        self.good = Configuration.random(4, 4, seed=1)
        self.target = loopback(4, 4)
        self.target.load(self.good)
        self.target.step(5, Edges(3, 5, 6, 9))

    def check_unchanged(self):
        assert self.target.readback() == self.good
        reference = Emulator(self.good)
        for _ in range(5):
            reference.step(Edges(3, 5, 6, 9))
        assert self.target.get_edges() == reference.edge_outputs()
        assert self.target.step(3) == [reference.step(Edges(3, 5, 6, 9)) for _ in range(3)][-1]

    def test_wrong_crc(self):
        other = Configuration.random(4, 4, seed=2)
        t = self.target
        t.request(Command.LOAD_BEGIN)
        for row, address, frame in other.frames():
            t.request(Command.LOAD_CHUNK, frame_record(row, address, frame, 4))
        with pytest.raises(TargetError, match="LOAD_APPLY refused: CONFIG_CRC") as info:
            t.request(Command.LOAD_APPLY, (other.frames_crc() ^ 1).to_bytes(4, "little"))
        assert info.value.status == Status.CONFIG_CRC
        status = t.status()
        assert status.load_failed and status.valid and status.load_rejects == 1
        self.check_unchanged()

    def test_incomplete(self):
        t = self.target
        t.request(Command.LOAD_BEGIN)
        with pytest.raises(TargetError, match="INCOMPLETE"):
            t.request(Command.LOAD_APPLY, self.good.frames_crc().to_bytes(4, "little"))
        self.check_unchanged()

    def test_out_of_order_and_bad_arguments(self):
        t = self.target
        t.request(Command.LOAD_BEGIN)
        with pytest.raises(TargetError, match="BAD_ORDER"):
            t.request(Command.LOAD_CHUNK, frame_record(0, 1, 0, 4))
        with pytest.raises(TargetError, match="BAD_ARGUMENT"):
            t.request(Command.LOAD_CHUNK, frame_record(4, 0, 0, 4))
        with pytest.raises(TargetError, match="BAD_LENGTH"):
            t.request(Command.LOAD_CHUNK, b"\x00\x00\x00")
        with pytest.raises(TargetError, match="INCOMPLETE"):
            t.request(Command.LOAD_APPLY, bytes(4))
        with pytest.raises(TargetError, match="NOT_LOADING"):     # the apply ended the load
            t.request(Command.LOAD_APPLY, bytes(4))
        with pytest.raises(TargetError, match="NOT_LOADING"):
            t.request(Command.LOAD_CHUNK, frame_record(0, 0, 0, 4))
        self.check_unchanged()


class Tamper:
    """A device that answers the first ``times`` requests with ``tamper(answer body)``."""

    def __init__(self, device, tamper, times=1):
        self.device, self.tamper, self.times = device, tamper, times

    def feed(self, data):
        out = self.device.feed(data)
        if out and self.times:
            self.times -= 1
            return b"".join(encode_frame(self.tamper(decode_frame(part)[1]))
                            for part in out.split(b"\x00")[:-1])
        return out


def connection(seed, rate, width=4, height=4):
    """One connection over a link with :class:`LineNoise` at ``rate`` both ways: connect, load
    a random program, 10 steps, read it back, STATUS; every result checked against the
    reference emulator. Returns the target."""
    target = ProtocolTarget(LoopbackTransport(
        DeviceModel(width, height), to_device=LineNoise(rate, seed=seed),
        to_host=LineNoise(rate, seed=seed + 1000)), timeout=0.01)
    config = Configuration.random(width, height, seed=seed)
    target.load(config)
    reference, rng = Emulator(config), random.Random(seed)
    for _ in range(10):
        edges = Edges(*(rng.randrange(16) for _ in range(4)))
        assert target.step(1, edges) == reference.step(edges)
    assert target.readback() == config
    assert target.status().subcycle == 10
    return target


class TestLinkFaults:
    """What a damaged line does to a connection: answers of the wrong length and merged frames
    are sent again, random faults abort no connection, and a hopeless line is a named error."""

    @pytest.mark.parametrize("command", ["identify", "status", "readback", "get_edges"])
    def test_answer_of_the_wrong_length_is_sent_again(self, command):
        device = DeviceModel(2, 2, init=Configuration.random(2, 2, seed=3))
        target = ProtocolTarget(LoopbackTransport(device), timeout=0.01)
        expected = getattr(target, command)()
        target.transport.device = Tamper(device, lambda body: body + b"\x07")
        got = getattr(target, command)()
        if command == "status":                 # the counters moved: compare the rest
            got, expected = got[:5], expected[:5]
        assert got == expected
        assert target.retransmissions == 1

    def test_merged_request_is_read_as_damaged_and_sent_again(self):
        """A request whose delimiter was lost, followed by its retransmission, is a bad CRC
        for the device (not BAD_LENGTH, as it was with CRC-16/XMODEM). The host starts each
        request with a delimiter, so when it sends again after a lost delimiter, the device
        reads the first copy whole, and the second as a replay: the request runs once."""
        device = DeviceModel(2, 2)
        frame = request(Command.STEP, (3).to_bytes(2, "little"), seq=7)
        out = device.feed(frame[:-1] + frame)
        assert answer(out[:out.index(0) + 1])[:3] == (0xFF, 0, Status.BAD_CRC)
        assert device.emulator.subcycle == 0
        device, lost = DeviceModel(2, 2), []
        target = ProtocolTarget(LoopbackTransport(device, to_device=lambda data: (
            data[:-1] if not lost and data.count(0) == 2 and not lost.append(1) else data)),
            timeout=0.01)
        target.step(3)
        assert device.emulator.subcycle == 3 and target.retransmissions == 1
        assert device.counters["replays"] == 1 and device.counters["crc_errors"] == 0

    def test_random_faults_abort_no_connection(self):
        """40 connections with one byte in 100 flipped, lost (delimiters too) or added, both
        ways: none aborts and every result is right. Before protocol version 2 (CRC-16/XMODEM,
        no answer length check, no leading delimiter, 4 retries), 26 of these 40 aborted: 13
        with BAD_LENGTH, 10 with a ValueError from a merged READBACK answer, 3 with LinkError."""
        aborted, retransmissions, faults = [], 0, 0
        for seed in range(40):
            try:
                target = connection(seed, 0.01)
            except (LinkError, TargetError) as error:
                aborted.append((seed, str(error)))
                continue
            retransmissions += target.retransmissions
            faults += sum(target.transport._to_device.faults.values())
        assert aborted == []
        assert faults > 100 and retransmissions > 100

    def test_hopeless_line_is_a_named_error(self):
        with pytest.raises(NoAnswerError) as info:
            connection(1, 0.5)
        error = info.value
        assert isinstance(error, LinkError) and "\n" not in str(error)
        assert error.command == Command.IDENTIFY and error.attempts == 9
        assert error.timeouts + error.damaged >= 9
        assert str(error).startswith("no valid answer to IDENTIFY from loopback after 9 "
                                     "attempts")

    def test_other_protocol_version(self):
        device = DeviceModel(2, 2)
        tamper = Tamper(device, lambda body: body[:5] + b"\x01" + body[6:])
        with pytest.raises(LinkError, match="loopback speaks host protocol version 1, this "
                                            "host version 2: program the board"):
            ProtocolTarget(LoopbackTransport(tamper), timeout=0.01)

    def test_line_noise(self):
        noise = LineNoise(0.2, seed=4)
        data = bytes(range(1, 201)) * 5
        out = noise(data)
        faults = noise.faults
        assert len(out) == len(data) - faults["drop"] + faults["insert"]
        assert all(40 < count < 100 for count in faults.values()), faults
        assert LineNoise(0.2, seed=4)(data) == out and LineNoise(0)(data) == data
        with pytest.raises(ValueError, match="rate must be a number from 0 to 1, not 2"):
            LineNoise(2)


class TestFaultInjection:
    """Bit flips, dropped and added bytes in both directions: the run still matches exactly
    (retries only slow it down) and no subcycle runs twice."""

    @pytest.mark.parametrize("seed", [1, 2])
    def test_noisy_link(self, seed):
        rng = random.Random(seed)

        def noise(data):
            data = bytearray(data)
            for i in range(len(data)):
                r = rng.random()
                if r < 0.003:
                    data[i] ^= 1 << rng.randrange(8)
                elif r < 0.004:
                    data[i:i + 1] = b""
                    break
                elif r < 0.005:
                    data.insert(i, rng.randrange(256))
                    break
            return bytes(data)

        case = load_conformance("random_8x8")
        target = loopback(8, 8, to_device=noise, to_host=noise)
        assert run_vectors(target, case) == []
        assert target.retransmissions > 0
        assert target.status().subcycle == len(case.steps)
        assert target.readback() == case.load_bitstream().config


# --- Command line ----------------------------------------------------------------------------------

class TestCli:
    def run(self, *args):
        return CliRunner().invoke(main, ["run", *args])

    @pytest.mark.parametrize("target", ["emu", "loopback"])
    def test_pass(self, target):
        d = conformance_dir()
        result = self.run(os.path.join(d, "random_8x8.bgbs"), "--vectors",
                          os.path.join(d, "random_8x8.json"), "--target", target)
        assert result.exit_code == 0, result.output
        assert "PASS: random_8x8: all 128 steps match" in result.output

    def test_mismatch(self, tmp_path):
        d = conformance_dir()
        shutil.copy(os.path.join(d, "full_adder1.bgbs"), tmp_path)
        with open(os.path.join(d, "full_adder1.json")) as file:
            case = json.load(file)
        case["steps"][3]["out"]["E"] = "0x3" if case["steps"][3]["out"]["E"] != "0x3" else "0x0"
        path = tmp_path / "full_adder1.json"
        path.write_text(json.dumps(case))
        result = self.run(str(tmp_path / "full_adder1.bgbs"), "--vectors", str(path),
                          "--target", "loopback")
        assert result.exit_code == 1, result.output
        assert "MISMATCH: full_adder1" in result.output and "step 3: E_out" in result.output

    def test_hopeless_line(self, monkeypatch):
        from bitgrid.host import targets
        monkeypatch.setattr(targets, "LoopbackTransport", lambda device: LoopbackTransport(
            device, to_device=LineNoise(0.5, seed=1), to_host=LineNoise(0.5, seed=2)))
        d = conformance_dir()
        result = CliRunner().invoke(main, ["run", os.path.join(d, "random_2x2.bgbs"),
                                           "--steps", "3", "--target", "loopback"])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.output
        assert lines[0].startswith("error: no device: no valid answer to IDENTIFY from "
                                   "loopback after 9 attempts (")
        assert lines[0].endswith("check the baud rate and the line, and that the board runs "
                                 "an FPGA image of host protocol version 2")

    def test_no_device(self):
        d = conformance_dir()
        result = self.run(os.path.join(d, "random_2x2.bgbs"), "--vectors",
                          os.path.join(d, "random_2x2.json"), "--target",
                          "serial:/nonexistent/ttyUSB9")
        assert result.exit_code == 2
        assert "error: no device: cannot open serial port /nonexistent/ttyUSB9" in result.output

    def test_unknown_target(self):
        d = conformance_dir()
        result = self.run(os.path.join(d, "random_2x2.bgbs"), "--steps", "3", "--target", "usb")
        assert result.exit_code == 2
        assert ("unknown target 'usb': use emu, fast, mesh:COLSxROWS, loopback, sim, "
                "serial:PORT or bgcf:HOST:PORT") in result.output

    def test_steps_print(self):
        d = conformance_dir()
        result = self.run(os.path.join(d, "random_2x2.bgbs"), "--steps", "4", "--json",
                          "--target", "loopback")
        assert result.exit_code == 0, result.output
        config = load_conformance("random_2x2").load_bitstream().config
        emulator = Emulator(config)
        expected = [emulator.step(None) for _ in range(4)]
        steps = json.loads(result.output)["steps"]
        assert [int(s["out"]["E"], 16) for s in steps] == [e.e for e in expected]
