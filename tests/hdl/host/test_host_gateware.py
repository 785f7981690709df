# amaranth: UnusedElaboratable=no
"""The host link gateware (``bitgrid.hdl.host``) in Amaranth's simulator, with the Python model
of the protocol engine (``bitgrid.host.DeviceModel``, itself checked against the reference
emulator in test_host.py) as the reference: for the same request bytes the gateware must send
the same answer bytes. Conformance programs loaded through the engine reproduce their vector
files; random, corrupted, truncated and garbage frames never wedge the engine and never change
the running configuration; the UART pair and the whole controller work at the bit level."""

import random

import pytest
from amaranth.hdl import Module, Signal

from bitgrid import Configuration, Emulator
from bitgrid.config import frame_record
from bitgrid.host import (Command, DeviceModel, DeviceStatus, LoopbackTransport, ProtocolTarget,
                          Status, decode_frame, encode_frame, run_vectors, unpack_edges)
from bitgrid.hdl.grid import Grid
from bitgrid.hdl.host import (FrameReceiver, FrameSender, HostController, ProtocolEngine,
                              UARTReceiver, UARTTransmitter)
from support.conformance import load_conformance
from support.gateware import raises_exactly
from support.host import EngineBench


def request(command, payload=b"", seq=1):
    return encode_frame(bytes([command, seq & 0xFF]) + bytes(payload))


def record_session(width, height, script):
    """The request frames a host sends while ``script(target)`` runs against the model."""
    log = []
    transport = LoopbackTransport(DeviceModel(width, height),
                                  to_device=lambda data: (log.append(bytes(data)), data)[1])
    script(ProtocolTarget(transport, timeout=0.01))
    return log


def pieces(data):
    """Split a byte string after each delimiter (the engine takes one frame at a time)."""
    parts, start = [], 0
    for i, byte in enumerate(data):
        if byte == 0:
            parts.append(data[start:i + 1])
            start = i + 1
    if start < len(data):
        parts.append(data[start:])
    return parts


# --- Constructors --------------------------------------------------------------------------------

class TestConstructor:
    @pytest.mark.parametrize("divisor", [3, 0, 4.0, True])
    def test_divisor(self, divisor):
        message = (f"divisor must be an integer of at least 4, "
                   f"not {divisor!r}")
        for cls in (UARTReceiver, UARTTransmitter):
            with raises_exactly(ValueError, message):
                cls(divisor=divisor)

    def test_storage(self):
        with raises_exactly(ValueError, "Storage must be one of 'ff', 'memory', not 'sram'"):
            ProtocolEngine(4, 4, storage="sram")

    @pytest.mark.parametrize("max_body", [3, 254, 4.0])
    def test_frame_sender(self, max_body):
        with raises_exactly(ValueError, f"max_body must be an integer from 4 to 253, "
                                        f"not {max_body!r}"):
            FrameSender(max_body=max_body)

    @pytest.mark.parametrize("max_body, head, message", [
        (3, 6, "max_body must be an integer from 4 to 65535, not 3"),
        (10, 0, "head must be an integer from 1 to 10, not 0"),
        (10, 11, "head must be an integer from 1 to 10, not 11")])
    def test_frame_receiver(self, max_body, head, message):
        with raises_exactly(ValueError, message):
            FrameReceiver(max_body=max_body, head=head)

    def test_too_wide(self):
        with raises_exactly(ValueError, "A 500 x 2 grid needs frames of 258 bytes; the "
                                        "protocol allows at most 253"):
            ProtocolEngine(500, 2)


# --- UART ------------------------------------------------------------------------------------------

def test_uart_pair():
    divisor = 5
    m = Module()
    m.submodules.tx = tx = UARTTransmitter(divisor=divisor)
    m.submodules.rx = rx = UARTReceiver(divisor=divisor)
    line_break = Signal()
    m.d.comb += rx.rx.eq(tx.tx & ~line_break)
    data = bytes(random.Random(3).randrange(256) for _ in range(12)) + b"\x00\xff"
    received, errors = [], []

    async def testbench(ctx):
        for byte in data:
            ctx.set(tx.data.valid, 1)
            ctx.set(tx.data.payload, byte)
            await ctx.tick().until(tx.data.ready)
        ctx.set(tx.data.valid, 0)
        for _ in range(12 * divisor):
            await ctx.tick()
        # A break: the line held low through the stop bit is a framing error, not a byte.
        ctx.set(line_break, 1)
        for _ in range(12 * divisor):
            await ctx.tick()
        ctx.set(line_break, 0)
        for _ in range(4 * divisor):
            await ctx.tick()

    async def monitor(ctx):
        async for _clk, _rst, valid, payload, error in ctx.tick().sample(
                rx.data.valid, rx.data.payload, rx.error):
            if valid:
                received.append(payload)
            if error:
                errors.append(1)

    from amaranth.sim import Simulator
    from support.gateware import CLOCK_PERIOD
    sim = Simulator(m)
    sim.add_clock(CLOCK_PERIOD)
    sim.add_testbench(testbench)
    sim.add_process(monitor)
    sim.run()
    assert bytes(received) == data
    assert errors == [1]


# --- The engine against the model ------------------------------------------------------------------

def replay_against_model(bench, frames, width, height, name, storage="ff"):
    """Send the recorded ``frames`` to the gateware; every answer must equal the model's.
    Returns the gateware's answers."""
    model = DeviceModel(width, height, storage=storage)
    got = []

    async def testbench(ctx):
        for frame in frames:
            for piece in pieces(frame):
                expected = model.feed(piece)
                answer = await bench.exchange(ctx, piece, expected.count(0))
                assert answer == expected, (piece.hex(), answer.hex(), expected.hex())
                got.append(answer)

    bench.run(testbench, name)
    return got, model


@pytest.mark.parametrize("name, storage", [
    ("full_adder1", "ff"),
    pytest.param("random_8x8", "memory", marks=pytest.mark.slow)])    # about 50 s at load 6
def test_conformance_through_engine(name, storage):
    case = load_conformance(name)
    frames = record_session(case.width, case.height, lambda t: run_vectors(t, case))
    bench = EngineBench(case.width, case.height, storage)
    answers, model = replay_against_model(bench, frames, case.width, case.height, name,
                                         storage)
    # The STEP answers, decoded, are the vector file's outputs.
    steps = []
    for answer in answers:
        status, body = decode_frame(answer[:-1])
        if status == Status.OK and body[0] == 0x80 | Command.STEP:
            steps.append(unpack_edges(body[7:], case.width, case.height))
    assert steps == case.outputs
    assert model.config == case.load_bitstream().config


def corrupt(rng, frame):
    """A damaged copy of an encoded frame: a bit flip, a truncation, or garbage."""
    kind = rng.randrange(4)
    body = bytearray(frame[:-1])
    if kind == 0:
        i = rng.randrange(len(body))
        body[i] ^= 1 << rng.randrange(8)
        return bytes(body) + b"\x00"
    if kind == 1:
        return bytes(body[:rng.randrange(len(body))]) + b"\x00"
    if kind == 2:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))) + b"\x00"
    return bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 300))) + b"\x00"


def test_fuzz_never_wedges_or_changes_configuration():
    width = height = 4
    rng = random.Random(7)
    good = Configuration.random(width, height, seed=21)
    other = Configuration.random(width, height, seed=22)
    frames = record_session(width, height, lambda t: t.load(good))
    seq = 100
    # Random requests, corrupted requests and garbage, interleaved with bad loads.
    valid_requests = [
        (Command.STEP, (2).to_bytes(2, "little") + bytes([5, 9, 6, 3])),
        (Command.GET_EDGES, b""), (Command.STATUS, b""), (Command.SET_EDGES, bytes([1, 2, 3, 4])),
        (Command.READBACK, bytes([3, 0, 9])), (Command.READBACK, bytes([9, 0, 1])),
        (Command.IDENTIFY, b""), (0x33, b"\x01"), (Command.STEP, b"\x01"),
        (Command.LOAD_CHUNK, frame_record(0, 0, 0, width)),
    ]
    for _ in range(60):
        seq += 1
        command, payload = rng.choice(valid_requests)
        frame = request(command, payload, seq)
        choice = rng.random()
        if choice < 0.4:
            frames.append(frame)
        elif choice < 0.9:
            frames.append(corrupt(rng, frame))
            frames.append(b"\x00" + frame)        # the host's resend after a framing error
        else:
            frames.append(frame)
            frames.append(frame)                  # a repeat: answered, not executed twice
    # Bad loads: wrong CRC, incomplete, out of order; each leaves `good` running.
    for crc_delta, count in ((1, 64), (0, 10), (0, -1)):
        seq += 1
        frames.append(request(Command.LOAD_BEGIN, b"", seq))
        records = [frame_record(r, a, f, width) for r, a, f in other.frames()]
        if count == -1:
            records[5], records[6] = records[6], records[5]
            count = 64
        for record in records[:count]:
            seq += 1
            frames.append(request(Command.LOAD_CHUNK, record, seq))
        seq += 1
        frames.append(request(Command.LOAD_APPLY,
                              (other.frames_crc() ^ crc_delta).to_bytes(4, "little"), seq))
    for row in range(height):
        for address in range(16):
            seq += 1
            frames.append(request(Command.READBACK, bytes([row, 0, address]), seq))
    bench = EngineBench(width, height)
    answers, model = replay_against_model(bench, frames, width, height, "fuzz")
    assert model.config == good
    readback = Configuration(width, height)
    for answer in answers[-16 * height:]:
        status, body = decode_frame(answer[:-1])
        assert status == Status.OK and body[2] == Status.OK
        readback.set_frame(body[3], body[5], int.from_bytes(body[6:], "little"))
    assert readback == good
    assert model.counters["crc_errors"] + model.counters["framing_errors"] > 10
    # wrong CRC, incomplete, and out of order (BAD_ORDER chunks, then INCOMPLETE)
    assert model.counters["load_rejects"] == 3 and model.counters["replays"] > 0


def test_back_to_back_frames_are_answered_or_counted():
    """Five requests sent without waiting for answers, one byte per cycle: the engine handles
    one request at a time and drops the frames that arrive meanwhile, but counts each in the
    STATUS counter ``frames_dropped``: answers and dropped frames add up to the frames sent.
    The model, which is never busy, answers all five."""
    width = height = 4
    frames = [request(Command.GET_EDGES, b"", seq) for seq in range(1, 6)]
    model = DeviceModel(width, height)
    answers = pieces(model.feed(b"".join(frames)))
    assert len(answers) == 5 and model.device_status().frames_dropped == 0
    bench = EngineBench(width, height)
    out = bytearray()
    status = []

    async def testbench(ctx):
        engine = bench.engine
        ctx.set(engine.tx.ready, 1)
        for byte in b"".join(frames):
            ctx.set(engine.rx.valid, 1)
            ctx.set(engine.rx.payload, byte)
            await ctx.tick()
            if ctx.get(engine.tx.valid):
                out.append(ctx.get(engine.tx.payload))
        ctx.set(engine.rx.valid, 0)
        for _ in range(500):
            await ctx.tick()
            if ctx.get(engine.tx.valid):
                out.append(ctx.get(engine.tx.payload))
        answer = await bench.exchange(ctx, request(Command.STATUS, b"", 9), 1)
        status.append(DeviceStatus.from_bytes(decode_frame(answer[:-1])[1][3:]))

    bench.run(testbench, "back_to_back")
    answered = pieces(bytes(out))
    assert answered == answers[:len(answered)]       # the first ones, as the model answers them
    assert 1 <= len(answered) < 5
    assert len(answered) + status[0].frames_dropped == 5
    assert status[0].frames_ok == len(answered) + 1


class UartBench:
    """A :class:`HostController` driven at the bit level: :meth:`send` puts bytes on its ``rx``
    (8N1, ``divisor`` cycles a bit, without a gap), a background process collects the bytes of
    its ``tx`` in :attr:`received`."""

    def __init__(self, dut, divisor):
        self.dut, self.divisor, self.received = dut, divisor, bytearray()

    async def _receiver(self, ctx):
        dut, divisor = self.dut, self.divisor
        while True:
            while ctx.get(dut.tx):
                await ctx.tick()
            await ctx.tick().repeat(divisor // 2)
            byte = 0
            for bit in range(8):
                await ctx.tick().repeat(divisor)
                byte |= ctx.get(dut.tx) << bit
            await ctx.tick().repeat(divisor)
            assert ctx.get(self.dut.tx) == 1
            self.received.append(byte)

    async def send(self, ctx, data):
        for byte in data:
            for bit in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                ctx.set(self.dut.rx, bit)
                await ctx.tick().repeat(self.divisor)

    async def wait(self, ctx, answers, limit=4000):
        """Wait until :attr:`received` holds ``answers`` frames (at most ``limit`` cycles)."""
        for _ in range(limit):
            if self.received.count(0) >= answers:
                break
            await ctx.tick()

    def run(self, testbench):
        from amaranth.sim import Simulator
        from support.gateware import CLOCK_PERIOD

        async def main(ctx):
            ctx.set(self.dut.rx, 1)
            await ctx.tick().repeat(8)
            await testbench(ctx)
        sim = Simulator(self.dut)
        sim.add_clock(CLOCK_PERIOD)
        sim.add_testbench(main)
        sim.add_testbench(self._receiver, background=True)
        sim.run()


def test_controller_over_uart():
    """The whole controller (UART, engine, grid) at the bit level: identify, load a program,
    run steps; every answer equals the model's and the outputs equal the emulator's."""
    case = load_conformance("full_adder1")
    config = case.load_bitstream().config
    frames = record_session(2, 2, lambda t: (t.load(config),
                                             [t.step(1, i) for i in case.inputs[:12]]))
    bench = UartBench(HostController(2, 2, divisor=4), divisor=4)
    model = DeviceModel(2, 2)

    async def testbench(ctx):
        for frame in frames:
            expected = model.feed(frame)
            bench.received.clear()
            await bench.send(ctx, frame)
            if expected:
                await bench.wait(ctx, expected.count(0))
            assert bytes(bench.received) == expected
        assert ctx.get(bench.dut.valid) and not ctx.get(bench.dut.load_failed)

    bench.run(testbench)
    reference = Emulator(config)
    assert [reference.step(i) for i in case.inputs[:12]] == case.outputs[:12]


def test_back_to_back_frames_over_uart():
    """Five requests on the UART without waiting for answers: the controller answers the first
    while the others arrive, drops those, and counts them (answers + frames_dropped = 5)."""
    frames = [request(Command.GET_EDGES, b"", seq) for seq in range(1, 6)]
    bench = UartBench(HostController(2, 2, divisor=4), divisor=4)
    status = []

    async def testbench(ctx):
        await bench.send(ctx, b"".join(frames))
        await bench.wait(ctx, 5, limit=2000)
        answered = bench.received.count(0)
        await bench.send(ctx, request(Command.STATUS, b"", 9))
        await bench.wait(ctx, answered + 1)
        last = pieces(bytes(bench.received))[-1]
        status.append((answered, DeviceStatus.from_bytes(decode_frame(last[:-1])[1][3:])))

    bench.run(testbench)
    answered, device = status[0]
    assert 1 <= answered < 5 and answered + device.frames_dropped == 5
    assert device.frames_ok == answered + 1


# --- Synthesis: the controller's buffers are block RAM -------------------------------------------

@pytest.mark.slow
def test_controller_uses_block_ram_ice40(tmp_path):
    """The protocol engine keeps its frame buffer, answer buffer and staging memory in block RAM
    (``docs/resources.md``): on iCE40 the whole controller of a 4 x 4 flip-flop grid, minus the
    grid, measured 1,084 LUT4 and 550 FFs with 3 SB_RAM40_4K (1,013 LUT4 and 531 FFs before
    STATUS counted dropped frames, protocol version 2; 980 LUT4 and 528 FFs before the frame
    path was built from the stream stages of bitgrid.hdl.stream; 1,728 LUT4, 662 FFs and 1 block
    RAM when the buffers were registers)."""
    from support.gateware import summarize, synth_stat
    total = synth_stat(HostController(4, 4, divisor=104, storage="ff"), "ice40",
                       cwd=tmp_path, name="host")
    grid = summarize(synth_stat(Grid(4, 4, storage="ff"), "ice40", cwd=tmp_path, name="grid"))
    assert total["SB_RAM40_4K"] == 3, total
    controller = {key: value - grid[key] for key, value in summarize(total).items()}
    assert controller["LUT"] < 1100, controller
    assert controller["FF"] < 560, controller
