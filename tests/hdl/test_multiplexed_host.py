# amaranth: UnusedElaboratable=no
"""The multiplexed engine behind the host protocol engine, unchanged (SPEC section 7): the
answers to a whole session (IDENTIFY with the MULTIPLEXED feature bit, a load, STEPs of one
and of several subcycles, READBACK of every frame, STATUS) are the device model's byte for
byte, and the outputs the emulator's; plus the engine choice where a grid is built."""

import pytest

from bitgrid import Configuration, Emulator
from bitgrid._overrides import silence_unused
from bitgrid.host import DeviceModel, LoopbackTransport, ProtocolTarget
from bitgrid.hdl.engines import ENGINES, make_grid
from bitgrid.hdl.grid import Grid
from bitgrid.hdl.host import HostController
from bitgrid.hdl.multiplexed import MultiplexedGrid
from bitgrid.protocol.host import Feature, Identity, device_identity
from support.gateware import raises_exactly
from support.host import EngineBench


@pytest.mark.parametrize("staged", [pytest.param(True, marks=pytest.mark.slow), False])
def test_session_matches_the_device_model(staged):
    """Staged loads (the default), and unstaged ones (frames straight into the grid, for grids
    that fill the device's memory): the same session, then with ``staged=False`` a load whose
    LOAD_APPLY has the wrong CRC, which leaves the grid stopped (STEP refused NOT_VALID)."""
    width, height = 6, 4
    config = Configuration.random(width, height, seed=77)
    model = DeviceModel(width, height, storage="memory", engine="multiplexed", staged=staged)
    log = []
    transport = LoopbackTransport(model, to_device=lambda data: (log.append(bytes(data)),
                                                                 data)[1])
    target = ProtocolTarget(transport, timeout=0.01)
    outputs, readback = [], []

    def script():
        target.load(config)
        outputs.append(target.step(1, (5, 3, 9, 12)))
        outputs.append(target.step(7, (1, 2, 3, 4)))
        readback.append(target.readback())
        target.status()
        if not staged:
            from bitgrid.config import frame_record
            from bitgrid.host import Command, TargetError
            target.request(Command.LOAD_BEGIN)
            for row, address, frame in config.frames():
                target.request(Command.LOAD_CHUNK, frame_record(row, address, frame, width))
            with pytest.raises(TargetError):
                target.request(Command.LOAD_APPLY, (config.frames_crc() ^ 1).to_bytes(4,
                                                                                       "little"))
            with pytest.raises(TargetError):
                target.step(1)
            target.status()

    script()
    expected = {frame: None for frame in log}          # the frames in order, answered below
    frames = list(expected)
    model_answers = []
    replay = DeviceModel(width, height, storage="memory", engine="multiplexed", staged=staged)
    for frame in frames:
        model_answers.append(replay.feed(frame))
    bench = EngineBench(width, height, storage="memory", engine="multiplexed", evaluators=3,
                        staged=staged)
    answers = []

    async def testbench(ctx):
        for frame, answer in zip(frames, model_answers):
            answers.append(await bench.exchange(ctx, frame, answer.count(0)))

    bench.run(testbench, name=f"mux_host_session_{staged}")
    assert answers == model_answers
    reference = Emulator(config)
    first = reference.step((5, 3, 9, 12))
    for _ in range(7):
        last = reference.step((1, 2, 3, 4))
    assert outputs == [first, last]
    assert readback == [config]


def test_identify_reports_the_engine():
    identity = Identity.from_bytes(device_identity(8, 8, "memory", "multiplexed").to_bytes())
    assert identity.engine == "multiplexed" and Feature.MULTIPLEXED in identity.features
    old = Identity.from_bytes(device_identity(8, 8, "ff").to_bytes())
    assert old.engine == "direct" and Feature.MULTIPLEXED not in old.features


def test_make_grid_and_controller_choose_the_engine():
    assert ENGINES == ("direct", "multiplexed")
    assert type(silence_unused(make_grid(4, 4))) is Grid
    grid = silence_unused(make_grid(8, 4, engine="multiplexed", evaluators=4))
    assert type(grid) is MultiplexedGrid and grid.evaluators == 4
    controller = HostController(8, 4, divisor=4, engine="multiplexed", evaluators=2)
    silence_unused(controller.grid), silence_unused(controller.engine)
    assert type(controller.grid) is MultiplexedGrid and controller.engine.storage == "memory"
    with raises_exactly(ValueError, "engine must be one of direct, multiplexed, not 'pipelined'"):
        make_grid(4, 4, engine="pipelined")
    with raises_exactly(ValueError, "evaluators is an option of the multiplexed engine, not "
                                    "the direct grid"):
        make_grid(4, 4, evaluators=2)
