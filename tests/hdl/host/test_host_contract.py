# amaranth: UnusedElaboratable=no
"""The host protocol's contract: the Python device model (``bitgrid.host.DeviceModel``) and the
gateware protocol engine (``bitgrid.hdl.host.ProtocolEngine`` behind its frame path, in
Amaranth's simulator) get the same requests and must send byte-identical answers.

The cases are generated from the command table ``bitgrid.protocol.host.COMMANDS``: every
command with a good payload (each accepted length), a payload one byte short and one byte long
of each accepted length, each of its preconditions violated (the earlier ones holding), a bad
CRC, a truncated frame and a replay; then unknown commands and framing errors. Each case brings
its own prelude (the requests that set up the state it needs), and every answer of the
prelude is compared too."""

import random
import typing

import pytest
from amaranth.hdl import Module, ResetInserter, Signal
from amaranth.lib import wiring

from bitgrid.config import FRAME_CRC
from bitgrid.hdl.grid import Grid
from bitgrid.hdl.host import ProtocolEngine
from bitgrid.host import DeviceModel
from bitgrid.protocol.host import (COMMANDS, MAX_BODY_LIMIT, Check, Command, Effect, Status,
                                   decode_frame, encode_frame, host_crc, max_body)
from cobs import cobs
from support.host import EngineBench

SIZES = [(4, 4), (6, 2)]


class Case(typing.NamedTuple):
    name: str
    frames: list            # encoded request frames, delimiter included
    status: object          # the Status the table says the last frame is answered with
    invalid: bool = False   # the grid holds no valid configuration during the case


class Requests:
    """Builds request frames for a ``width`` x ``height`` grid, with a fresh sequence number
    each (so that only the replay cases repeat one)."""

    def __init__(self, width, height, rng):
        self.width, self.height, self.rng = width, height, rng
        self.seq = 0
        self.records = [self._record(index) for index in range(16 * height)]

    def _record(self, index):
        frame = bytes(self.rng.randrange(256) for _ in range(self.width // 2))
        return (index // 16).to_bytes(2, "little") + bytes([index % 16]) + frame

    def body(self, command, payload=b""):
        self.seq = (self.seq + 1) % 256
        return bytes([command, self.seq]) + bytes(payload)

    def frame(self, command, payload=b""):
        return encode_frame(self.body(command, payload))

    def payload(self, spec, length, **values):
        """A payload of ``length`` bytes for ``spec``: its fields (``values``, else good
        defaults) in table order, cut or padded with 0x5A to ``length``."""
        data = b""
        for field, (offset, size) in spec.layout(self.width, self.height).items():
            value = values.get(field, self.default(field, size))
            data += value.to_bytes(size, "little") if isinstance(value, int) else value
        return (data + b"\x5a" * length)[:length]

    def default(self, field, size):
        if field == "crc":
            return FRAME_CRC.compute(b"".join(self.records))
        if field == "n":
            return 3
        if field in ("row", "address"):
            return 0
        return bytes(self.rng.randrange(256) for _ in range(size))

    # Preludes: requests that set up a state from any state.
    def not_loading(self):
        """LOAD_BEGIN then LOAD_APPLY with nothing staged (INCOMPLETE ends the load)."""
        return [self.frame(Command.LOAD_BEGIN), self.frame(Command.LOAD_APPLY, bytes(4))]

    def loading(self, staged=0):
        return [self.frame(Command.LOAD_BEGIN)] + [self.frame(Command.LOAD_CHUNK, record)
                                                   for record in self.records[:staged]]


def prelude(req, spec, failing=None):
    """The requests before ``spec``'s request so that its checks before ``failing`` hold (all
    of them if None) and ``failing`` does not."""
    checks = spec.checks if failing is None else spec.checks[:spec.checks.index(failing) + 1]
    if Check.LOADING not in checks:
        return []
    if failing is Check.LOADING:
        return req.not_loading()
    if Check.COMPLETE in checks:
        return req.loading(staged=0 if failing is Check.COMPLETE else 16 * req.height)
    return req.loading()


def violation(req, spec, check):
    """(values of the request's fields, invalid) that make ``check`` fail."""
    if check is Check.ADDRESS:
        return [{"row": req.height}, {"address": 16}], False
    if check is Check.IN_ORDER:
        return [{"address": 1}], False
    if check is Check.CONFIG_CRC:
        return [{"crc": FRAME_CRC.compute(b"".join(req.records)) ^ 1}], False
    if check is Check.VALID:
        # Not reachable through the protocol (a load that passes CONFIG_CRC also passes the
        # grid's own check): both sides are put in that state instead.
        return [{}], True
    return [{}], False            # LOADING, COMPLETE: the prelude does it


def cases(width, height, rng):
    req = Requests(width, height, rng)
    out = []
    for command, spec in COMMANDS.items():
        name = command.name
        lengths = spec.lengths(width, height)
        for length in lengths:
            good = [*prelude(req, spec), req.frame(command, req.payload(spec, length))]
            out.append(Case(f"{name} good {length}", good, Status.OK))
            for wrong in (length - 1, length + 1):
                if wrong >= 0 and wrong not in lengths:
                    out.append(Case(f"{name} length {wrong}", [
                        *prelude(req, spec), req.frame(command, req.payload(spec, wrong))],
                        Status.BAD_LENGTH))
        for check in spec.checks:
            values, invalid = violation(req, spec, check)
            for value in values:
                payload = req.payload(spec, lengths[0], **value)
                out.append(Case(f"{name} {check.name} violated {value}",
                                [*prelude(req, spec, check), req.frame(command, payload)],
                                check.status, invalid))
        body = req.body(command, req.payload(spec, lengths[0]))
        crc = host_crc(body) ^ 0x0100
        out.append(Case(f"{name} bad CRC", [
            *prelude(req, spec), cobs.encode(body + crc.to_bytes(2, "big")) + b"\0"],
            Status.BAD_CRC))
        encoded = encode_frame(req.body(command, req.payload(spec, lengths[0])))
        cut = encoded[:encoded[0] - 1] + b"\0"      # inside the first COBS block
        out.append(Case(f"{name} truncated", [*prelude(req, spec), encoded[:-2] + b"\0", cut],
                        decode_frame(cut[:-1])[0]))
        again = req.frame(command, req.payload(spec, lengths[0]))
        if spec.effect is not Effect.APPLY:         # a replay of a load would need a load
            out.append(Case(f"{name} replay", [*prelude(req, spec), again, again], Status.OK))
    for code in (0x00, 0x0B, 0x7F, 0x80, 0x81, 0xFF):
        out.append(Case(f"unknown command 0x{code:02x}", [req.frame(code)],
                        Status.UNKNOWN_COMMAND))
    too_long = bytes(rng.randrange(1, 256) for _ in range(max_body(width, height) + 1))
    out.append(Case("framing", [b"\x00", b"\x01\x00", b"\x03\x01\x00", b"\x05\x01\x02\x00",
                                encode_frame(too_long[:-2]), cobs.encode(too_long) + b"\0"],
                    Status.TOO_LONG))
    assert max_body(width, height) < MAX_BODY_LIMIT
    return out


class ContractBench(EngineBench):
    """:class:`EngineBench` whose grid's ``valid`` the test bench can force low
    (:attr:`invalid`), for the VALID precondition: wired as :func:`attach_grid` wires a plain
    grid, except for that one member."""

    def __init__(self, width, height, registered_answer=False):
        self.engine = ProtocolEngine(width, height, registered_answer=registered_answer)
        self.grid = Grid(width, height)
        self.invalid = Signal()
        m = Module()
        rst = Signal()
        m.submodules.grid = ResetInserter(rst)(self.grid)
        m.submodules.engine = engine = self.engine
        for name, member in engine.cfg.signature.members.items():
            ours, theirs = getattr(engine.cfg, name), getattr(self.grid.cfg, name)
            if member.flow == wiring.Out:
                m.d.comb += theirs.eq(ours)
            elif name == "valid":
                m.d.comb += ours.eq(theirs & ~self.invalid)
            else:
                m.d.comb += ours.eq(theirs)
        wiring.connect(m, engine.edges_in, self.grid.i)
        wiring.connect(m, self.grid.o, engine.edges_out)
        m.d.comb += [self.grid.step.eq(engine.step), engine.subcycle.eq(self.grid.subcycle),
                     rst.eq(engine.grid_rst)]
        self.top = m


@pytest.mark.parametrize("width, height, registered_answer",
                         [(w, h, False) for w, h in SIZES] +
                         # The boards' engine (answers from a shift register, HostController
                         # with pipelined=True): the same bytes.
                         [pytest.param(6, 2, True, marks=pytest.mark.slow)])
def test_model_and_engine_answer_alike(width, height, registered_answer):
    all_cases = cases(width, height, random.Random(f"contract {width}x{height}"))
    covered = {case.name.split()[0] for case in all_cases}
    assert {command.name for command in COMMANDS} <= covered
    bench = ContractBench(width, height, registered_answer)
    model = DeviceModel(width, height)
    mismatches, answered, statuses = [], [], []

    async def testbench(ctx):
        for case in all_cases:
            ctx.set(bench.invalid, case.invalid)
            model.valid = not case.invalid
            for frame in case.frames:
                expected = model.feed(frame)
                answer = await bench.exchange(ctx, frame, expected.count(0))
                answered.append(answer)
                last = answer
                if answer != expected:
                    mismatches.append((case.name, frame.hex(), answer.hex(), expected.hex()))
            ctx.set(bench.invalid, 0)
            model.valid = True
            statuses.append((case.name, decode_frame(last[:-1])[1][2]))

    suffix = "_registered" if registered_answer else ""
    bench.run(testbench, f"contract_{width}x{height}{suffix}")
    assert mismatches == []
    assert statuses == [(case.name, case.status) for case in all_cases]
    # Every case got its answers (the bare delimiter of the framing case gets none).
    assert sum(1 for answer in answered if answer) == \
        sum(len(case.frames) for case in all_cases) - 1
