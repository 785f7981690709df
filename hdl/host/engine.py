"""The device end of the host protocol (``docs/host-protocol.md``): :class:`ProtocolEngine`.

Its command dispatch is generated from the declarative command table
:data:`bitgrid.protocol.host.COMMANDS` (payload lengths, field offsets, preconditions in order,
effect and answer of each command), the table the Python device model
:class:`bitgrid.host.DeviceModel` is driven by too: for the same bytes in, the same bytes out.
"""

import enum
import functools
import operator
import types

from amaranth.hdl import C, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_bool
from bitgrid.config import FRAME_CRC
from bitgrid.hdl.engines import check_engine
from bitgrid.hdl.grid import ConfigSignature, EdgeSignature
from bitgrid.protocol.host import (COMMANDS, COUNTER_WIDTH, FRAMING_RESPONSE, LOAD_REJECTS,
                                   STATUS_COUNTERS, Answer, Check, Effect, Status,
                                   check_protocol_size, device_identity, edge_block_size,
                                   max_body)
from bitgrid.terms import DIRECTIONS, check_storage

from .framing import BLOCK_RAM, FrameReceiver, FrameSender

__all__ = ["ProtocolEngine"]

#: Request bytes kept in registers: command, sequence and the first 4 payload bytes, where every
#: field the dispatcher compares lies (the rest is read back from the frame buffer).
_HEAD = 6


class _Next(enum.IntEnum):
    """Where EXEC goes after an accepted request (from the command's effect and answer)."""
    ANSWER = 0
    CHUNK = 1
    APPLY = 2
    STEP = 3
    READBACK = 4
    EDGES = 5


class ProtocolEngine(wiring.Component):
    """The device end of the host protocol for a ``width`` x ``height`` grid, byte streams in
    and out; the grid is outside, on :attr:`cfg` and the step and edge members.

    It handles one request at a time: bytes that arrive while it executes or answers a request
    are dropped up to the next delimiter, and each frame dropped so counts in the STATUS counter
    ``frames_dropped``. Inside: a :class:`~.framing.FrameReceiver` (COBS
    decoding into a frame buffer, the CRC checked on the fly), the dispatcher generated from
    :data:`~bitgrid.protocol.host.COMMANDS`, a staging memory for configuration frames (a load
    replaces the running configuration only after the whole staged set has passed its CRC), the
    error counters, and a :class:`~.framing.FrameSender` (the answer with its CRC, COBS-encoded
    into an answer buffer). The three buffers are block RAM; the engine reads and writes them a
    byte a cycle, so it has no wide multiplexers over frame bytes (``docs/resources.md``).

    Every output to the grid is a register (``step``, ``grid_rst``, and the configuration
    port's row, address, frame and write enable): they fan out to every cell. ``step`` is high
    one cycle per requested subcycle, while the engine is in its STEP state; ``grid_rst`` for
    one cycle after a RESET or a successful LOAD_APPLY, before the answer. A request is decided
    in EXEC, 2 cycles after the cycle its delimiter is on :attr:`rx` (IDLE, CHECK, EXEC); its
    answer's first byte is produced a cycle after its work is done (ANSWER, PRODUCE), or 2
    cycles with ``registered_answer`` (ANSWER, LOAD, PRODUCE).

    Parameters
    ----------
    width, height : int
        Grid size in cells (``bitgrid.protocol.host.check_protocol_size``).
    storage : str
        Storage kind reported by IDENTIFY (``bitgrid.terms.STORAGES``).
    engine : str
        Grid engine reported by IDENTIFY (``bitgrid.hdl.engines.ENGINES``; ``"multiplexed"``
        sets the MULTIPLEXED feature bit).
    staged : bool
        Stage a load in the engine's own block RAM (default; ``16 * height`` words of
        ``4 * width`` bits: a failed load leaves the running configuration running). False:
        no staging memory (for grids whose configuration fills the device's memory, e.g. a
        multiplexed 128 x 128 grid on an iCE40 UP5K): LOAD_BEGIN stops the grid
        (``cfg.begin``), each LOAD_CHUNK writes its frame into the grid's configuration port,
        LOAD_APPLY commits the CRC; the grid's CRC gate still never runs a half-written or
        corrupted configuration, but a failed load leaves the grid stopped. IDENTIFY then
        clears the STAGED_LOAD feature bit.
    registered_answer : bool
        Load each answer into a shift register (``8 * (3 + longest answer)`` flip-flops) and
        send it from there, instead of multiplexing its bytes from their sources: what the
        boards' pipelined grids use (ECP5, Gowin), so that no path runs from the grid's edge
        outputs or readback frame through the multiplexer into the sender's CRC and COBS
        logic (it limited the ULX3S builds to 66 MHz). Default False (iCE40: the multiplexer
        costs a third of the flip-flops). The bytes sent are the same.

    Members
    -------
    rx : In(stream.Signature(8, always_ready=True))
        Received bytes.
    tx : Out(stream.Signature(8))
        Bytes to send.
    cfg : Out(ConfigSignature(width, height))
        To the grid's configuration port.
    step, grid_rst : Out(1)
        Grid step request, and a reset of the grid's outputs and counter (after a load, RESET).
    step_next : Out(1)
        The value :attr:`step` has in the next cycle (its register's input), for a grid that
        registers the request per row (``Grid(early_step=True)``).
    edges_in : Out(EdgeSignature(width, height))
        To the grid's edge inputs (``grid.i``).
    edges_out : In(EdgeSignature(width, height))
        From the grid's edge outputs (``grid.o``).
    subcycle : In(32)
    step_ready : In(1)
        The grid's step handshake (SPEC section 7, :attr:`bitgrid.hdl.grid.Grid.step_ready`):
        a requested step is held on :attr:`step` until a cycle where ``step_ready`` is high.
        1 when not connected (the direct grid drives the constant 1).
    busy : In(1)
        The grid has not yet run every subcycle requested (a mesh tile waiting for its
        neighbours at the lockstep barrier, a multiplexed grid computing the last subcycle); a
        STEP is answered once it is low. 0 for a direct grid, which runs a subcycle in the
        cycle it is asked for.
    load_failed : Out(1)
        The last LOAD_APPLY was rejected.

    Raises
    ------
    ValueError
        For a grid size that is invalid or needs frames over the protocol's limit, or an
        unknown ``storage``.
    """

    def __init__(self, width, height, *, storage="ff", engine="direct", staged=True,
                 registered_answer=False):
        self._width, self._height = check_protocol_size(width, height)
        self._storage = check_storage(storage)
        self._engine = check_engine(engine)
        self._staged = check_bool(staged, "staged")
        self._registered_answer = check_bool(registered_answer, "registered_answer")
        super().__init__({
            "rx": In(stream.Signature(8, always_ready=True)),
            "tx": Out(stream.Signature(8)),
            "cfg": Out(ConfigSignature(width, height)),
            "step": Out(1), "step_next": Out(1), "grid_rst": Out(1),
            "edges_in": Out(EdgeSignature(width, height)),
            "edges_out": In(EdgeSignature(width, height)),
            "subcycle": In(COUNTER_WIDTH),
            "step_ready": In(1, init=1),
            "busy": In(1),
            "load_failed": Out(1),
        })

    @property
    def width(self):
        return self._width

    @property
    def height(self):
        return self._height

    @property
    def storage(self):
        return self._storage

    @property
    def registered_answer(self):
        return self._registered_answer

    def elaborate(self, platform):
        m = Module()
        s = types.SimpleNamespace()
        w, h = self._width, self._height
        s.block, s.frames = edge_block_size(w, h), 16 * h
        s.layouts = {code: spec.layout(w, h) for code, spec in COMMANDS.items()}
        m.submodules.receiver = s.receiver = FrameReceiver(max_body=max_body(w, h), head=_HEAD)
        wiring.connect(m, wiring.flipped(self.rx), s.receiver.rx)
        self._request(m, s)
        self._state(m, s)
        self._counters(m, s)
        self._staging(m, s)
        self._config_port(m, s)
        self._answer(m, s)
        with m.FSM() as fsm:
            self._receive_states(m, s)
            self._exec_state(m, s)
            self._load_states(m, s)
            self._run_states(m, s)
            self._answer_states(m, s)
        m.d.comb += s.receiver.busy.eq(~fsm.ongoing("IDLE"))
        return m

    # --- The request ---------------------------------------------------------------------------

    def _field(self, s, name):
        """The bits of request field ``name``, kept in the head registers; the field must lie
        at the same place in every command that has it."""
        places = {layout[name] for layout in s.layouts.values() if name in layout}
        assert len(places) == 1, f"field {name!r} moves between commands: {places}"
        offset, size = places.pop()
        assert 2 + offset + size <= _HEAD, f"field {name!r} lies beyond the head registers"
        return s.receiver.head[8 * (2 + offset):8 * (2 + offset + size)]

    def _request(self, m, s):
        head = s.receiver.head
        s.command, s.sequence = head[0:8], head[8:16]
        maxb = max_body(self._width, self._height)
        s.frame_length = Signal(range(maxb + 1))      # latched: the receiver restarts at once
        s.plen = Signal(range(maxb + 1))
        m.d.comb += s.plen.eq(s.frame_length - 4)
        s.arg_row, s.arg_addr = self._field(s, "row"), self._field(s, "address")
        s.arg_index = Signal(range(16 * 0x10000))
        m.d.comb += s.arg_index.eq(Cat(s.arg_addr[:4], s.arg_row))
        s.crc_arg, s.steps_arg = self._field(s, "crc"), self._field(s, "n")
        # Frame buffer reads: `rd_addr` now, its byte on `rd_byte` next cycle (`rd_prime` marks
        # the first cycle, with no byte yet).
        s.rd_addr = Signal(range(maxb + 1))
        s.rd_prime = Signal()
        s.rd_byte = s.receiver.read_data
        m.d.comb += s.receiver.read_addr.eq(s.rd_addr)
        m.d.sync += s.rd_prime.eq(0)
        # Where EXEC starts reading the frame buffer: at the edge block of a command whose
        # edge block lies after other fields, else at the payload (after command and sequence).
        s.read_start = Signal(range(maxb + 1))
        m.d.comb += s.read_start.eq(2)
        for code, layout in s.layouts.items():
            if "edges" in layout and layout["edges"][0]:
                with m.If(s.command == code):
                    m.d.comb += s.read_start.eq(2 + layout["edges"][0])
        # The edge inputs, as the padded edge block (N, E, S, W words): filled one byte at a
        # time from the frame buffer (the grid does not step meanwhile).
        s.edges = Signal(8 * s.block)
        base = 0
        for side in DIRECTIONS:
            lanes = len(getattr(self.edges_in, side.input_name))
            m.d.comb += getattr(self.edges_in, side.input_name).eq(s.edges[base:base + lanes])
            base += 8 * ((lanes + 7) // 8)

    def _state(self, m, s):
        s.status, s.resp_cmd, s.resp_seq = Signal(8), Signal(8), Signal(8)
        s.last_cmd, s.last_seq, s.has_last = Signal(8), Signal(8), Signal()
        s.last_status = Signal(8)
        s.replay = Signal()
        s.loading, s.load_failed = Signal(), Signal()
        m.d.comb += self.load_failed.eq(s.load_failed)
        s.count = Signal(range(s.frames + 1))        # configuration frames staged
        s.steps_left = Signal(16)
        s.step, s.grid_rst = Signal(), Signal()
        s.step_next = Signal()                       # the step register's next value
        m.d.sync += [s.step.eq(s.step_next), s.grid_rst.eq(0)]
        m.d.comb += [self.step.eq(s.step), self.step_next.eq(s.step_next),
                     self.grid_rst.eq(s.grid_rst)]
        s.index = Signal(range(s.frames))            # frame being applied

    def _counters(self, m, s):
        # One saturating incrementer for all the counters: at most one counts in a cycle (a
        # rejected load counts its load_rejects the cycle after its command_errors). The
        # request to count is registered, so the count lands a cycle later, long before an
        # answer reads it; this keeps the frame decoder's path short.
        s.counters = {name: Signal(16, name=f"count_{name}") for name in STATUS_COUNTERS}
        s.bumps = {name: Signal(name=f"bump_{name}") for name in STATUS_COUNTERS}
        bumps_r = {name: Signal(name=f"bump_{name}_r") for name in STATUS_COUNTERS}
        m.d.sync += [bumps_r[name].eq(s.bumps[name]) for name in STATUS_COUNTERS]
        bumped, selected = Signal(16), Signal(16)
        s.reject_pending = Signal()
        m.d.sync += s.reject_pending.eq(0)
        choices = [Mux(bumps_r[name], s.counters[name], 0) for name in STATUS_COUNTERS]
        m.d.comb += selected.eq(functools.reduce(operator.or_, choices))
        for name in STATUS_COUNTERS:
            with m.If(bumps_r[name]):
                m.d.sync += s.counters[name].eq(bumped)
        m.d.comb += bumped.eq(selected + (selected != 0xFFFF))
        with m.If(s.reject_pending):
            m.d.comb += s.bumps["load_rejects"].eq(1)
        # A dropped frame (the receiver's `dropped`, while the engine is busy, so never in the
        # cycle of a frame's verdict) waits for a cycle no other counter counts in: the others
        # count in at most 2 cycles in a row and dropped frames come at least 2 cycles apart,
        # so at most 2 wait.
        others = [s.bumps[name] for name in STATUS_COUNTERS if name != "frames_dropped"]
        drops = Signal(2)
        free = ~functools.reduce(operator.or_, others)
        bump = s.bumps["frames_dropped"]
        m.d.comb += bump.eq((drops != 0) & free)
        m.d.sync += drops.eq(drops + s.receiver.dropped - bump)

    def _staging(self, m, s):
        # The staging memory: one word per configuration frame, written a byte lane at a time
        # as the LOAD_CHUNK record is read back from the frame buffer.
        # Its CRC-32 runs one bit a cycle (a tenth of the logic of a byte-wide one).
        w = self._width
        m.submodules.stage_crc = s.stage_crc = FRAME_CRC.algorithm(data_width=1).create()
        s.stage_bit = Signal(3)
        m.d.comb += s.stage_crc.data.eq(s.rd_byte.bit_select(s.stage_bit, 1))
        if not self._staged:
            return                  # each frame goes to the grid as it comes (LOAD_CHUNK)
        m.submodules.staging = staging = Memory(shape=4 * w, depth=s.frames, init=[],
                                                 attrs=BLOCK_RAM)
        s.stage_w = staging.write_port(granularity=8)
        s.stage_r = staging.read_port(domain="sync")
        m.d.comb += [s.stage_w.addr.eq(s.count), s.stage_w.data.eq(Cat(*[s.rd_byte] * (w // 2))),
                     s.stage_r.addr.eq(s.index)]

    def _config_port(self, m, s):
        # A readback's frame is answered from the frame register when loads are unstaged
        # (the iCE40 multiplexed grids, where logic cells are scarce; READBACK_WAIT), else
        # through a multiplexer over r_data (a staged load reloads the register from staging).
        s.record_shift = not self._staged and not self._registered_answer
        # The grid's configuration port: the apply sequence, else the READBACK arguments.
        # Row, address, frame and write enable come from registers: they fan out to every
        # cell (the frame to every row), so nothing but wires lies between them and the grid.
        s.applying = Signal()
        cfg_row, cfg_addr = Signal.like(self.cfg.row), Signal(4)
        s.w_data, s.w_en = Signal.like(self.cfg.w_data), Signal()
        with m.If(s.applying):
            m.d.sync += [cfg_row.eq(s.index[4:]), cfg_addr.eq(s.index[:4])]
        with m.Else():
            m.d.sync += [cfg_row.eq(s.arg_row), cfg_addr.eq(s.arg_addr)]
        m.d.sync += s.w_en.eq(0)
        m.d.comb += [self.cfg.row.eq(cfg_row), self.cfg.addr.eq(cfg_addr),
                     self.cfg.w_data.eq(s.w_data), self.cfg.w_en.eq(s.w_en),
                     self.cfg.crc.eq(s.crc_arg)]

    # --- The answer ----------------------------------------------------------------------------

    def _answer_data(self, s):
        """``{Answer: value}``: the data of each answer kind, from the state after the
        request (little-endian words of the :mod:`bitgrid.protocol.host` structures)."""
        w, h = self._width, self._height
        padded = [getattr(self.edges_out, side.input_name) for side in DIRECTIONS]
        outputs = Cat(self.subcycle, *(Cat(bus, C(0, -len(bus) % 8)) for bus in padded))
        identity = device_identity(w, h, self._storage, self._engine,
                                   staged=self._staged).to_bytes()
        flags = Cat(self.cfg.valid, s.loading, s.load_failed, C(0, 5))
        staged = Signal(16)
        s.staged = staged
        return {
            Answer.IDENTITY: Const(int.from_bytes(identity, "little"), 8 * len(identity)),
            Answer.OUTPUTS: outputs,
            Answer.STATUS: Cat(flags, self.subcycle, staged,
                               *(s.counters[name] for name in STATUS_COUNTERS)),
            Answer.RECORD: Cat(s.arg_row, s.arg_addr,
                               s.w_data if s.record_shift else self.cfg.r_data),
        }

    def _answer(self, m, s):
        # The answer (header, data) is produced a byte per cycle, from sources that hold still
        # while the engine answers, into the FrameSender (CRC, COBS, answer buffer).
        # registered_answer: loaded into a shift register in LOAD and shifted out, so every
        # byte the sender takes comes from a flip-flop: a multiplexer over the answer's bytes
        # (the grid's edge outputs, a readback frame: across the chip) ahead of the sender's
        # CRC and COBS logic was the critical path at 100 MHz on ECP5 (docs/boards.md).
        w, h = self._width, self._height
        sources = self._answer_data(s)
        m.d.comb += s.staged.eq(s.count)
        s.kinds = [(answer, sources[answer], answer.size.length(w, h))
                   for answer in Answer if answer is not Answer.EMPTY]
        for _, value, size in s.kinds:
            assert len(value) == 8 * size, (value, size)
        s.kind = Signal(range(len(s.kinds) + 1))      # 0: header only
        longest = 3 + max(size for _, _, size in s.kinds)
        s.rlen = Signal(range(longest))               # header + data bytes, minus 1
        s.pos = Signal(range(longest + 1))            # next byte to produce
        m.submodules.sender = s.sender = FrameSender(max_body=longest + 2)
        wiring.connect(m, s.sender.tx, wiring.flipped(self.tx))
        if self._registered_answer:
            data = Signal(8 * (longest - 3))
            with m.Switch(s.kind):
                for number, (_, value, _) in enumerate(s.kinds, 1):
                    with m.Case(number):
                        m.d.comb += data.eq(value)
            s.loaded = Cat(s.resp_cmd, s.resp_seq, s.status, data)
            s.shift = Signal(8 * longest)
            s.produced = s.shift[:8]
            return
        # Unregistered (iCE40, where logic cells are scarce): a multiplexer over the answer's
        # bytes, by position and kind, a third of the flip-flops of the shift register.
        s.produced = Signal(8)
        s.record_head = (len(s.arg_row) + len(s.arg_addr)) // 8     # bytes before the frame
        s.record_kind = None
        with m.Switch(s.pos):
            for i, source in enumerate((s.resp_cmd, s.resp_seq, s.status)):
                with m.Case(i):
                    m.d.comb += s.produced.eq(source)
            with m.Default():
                with m.Switch(s.kind):
                    for number, (answer, value, size) in enumerate(s.kinds, 1):
                        with m.Case(number):
                            # A record's frame bytes: the low byte of the frame register,
                            # which PRODUCE shifts (s.record_kind).
                            frame = size
                            if answer is Answer.RECORD and s.record_shift:
                                frame = s.record_head
                            with m.Switch(s.pos):
                                for i in range(frame):
                                    with m.Case(3 + i):
                                        m.d.comb += s.produced.eq(value.word_select(i, 8))
                                if frame < size:
                                    with m.Default():
                                        m.d.comb += s.produced.eq(s.w_data[:8])
                            if frame < size:
                                s.record_kind = number

    # --- The states ----------------------------------------------------------------------------

    def _receive_states(self, m, s):
        verdict = s.receiver.frame.payload
        with m.State("IDLE"):
            with m.If(s.receiver.frame.valid):
                m.d.sync += [s.resp_cmd.eq(FRAMING_RESPONSE), s.resp_seq.eq(0)]
                with m.If(verdict.status == Status.OK):
                    m.d.comb += s.bumps["frames_ok"].eq(1)
                    m.d.sync += [s.resp_cmd.eq(s.command | 0x80),
                                 s.frame_length.eq(verdict.length),
                                 s.resp_seq.eq(s.sequence),
                                 s.replay.eq(s.has_last & (s.last_cmd == s.command) &
                                             (s.last_seq == s.sequence))]
                    m.next = "CHECK"
                with m.Else():
                    m.d.sync += s.status.eq(verdict.status)
                    with m.If(verdict.status == Status.BAD_CRC):
                        m.d.comb += s.bumps["crc_errors"].eq(1)
                    with m.Else():
                        m.d.comb += s.bumps["framing_errors"].eq(1)
                    m.next = "ANSWER"

        # The comparisons EXEC decides on, registered (a shorter path at 100 MHz).
        w, h = self._width, self._height
        lengths = sorted({n for spec in COMMANDS.values() for n in spec.lengths(w, h)})
        checks = {**{("length", n): s.plen == n for n in lengths},
                  Check.ADDRESS: (s.arg_row < h) & (s.arg_addr < 16),
                  Check.IN_ORDER: s.arg_index == s.count,
                  Check.COMPLETE: s.count == s.frames,
                  Check.CONFIG_CRC: s.stage_crc.crc == s.crc_arg}
        s.check = {key: Signal(name=f"check_{key[0]}_{key[1]}" if isinstance(key, tuple)
                               else f"check_{key.name.lower()}") for key in checks}
        s.check[Check.LOADING] = s.loading
        s.check[Check.VALID] = self.cfg.valid
        with m.State("CHECK"):
            m.d.sync += [s.check[key].eq(value) for key, value in checks.items()]
            m.next = "EXEC"

    def _decide(self, m, s, spec, new, nxt, ends, reject):
        """The generated decision for one command: its length, its checks in table order,
        then OK and where its effect goes."""
        w, h = self._width, self._height
        lengths = spec.lengths(w, h)
        with m.If(~functools.reduce(operator.or_, (s.check["length", n] for n in lengths))):
            m.d.comb += new.eq(Status.BAD_LENGTH)
        for check in spec.checks:
            with m.Elif(~s.check[check]):
                m.d.comb += [new.eq(check.status), ends.eq(check.ends_load),
                             reject.eq(check.status in LOAD_REJECTS)]
        with m.Else():
            m.d.comb += new.eq(Status.OK)
            if spec.effect is Effect.STAGE:
                m.d.comb += nxt.eq(_Next.CHUNK)
            elif spec.effect is Effect.APPLY:
                m.d.comb += [nxt.eq(_Next.APPLY), ends.eq(1)]
            elif spec.effect is Effect.STEP:
                with_edges = s.check["length", lengths[-1]] if len(lengths) > 1 else C(0)
                m.d.comb += nxt.eq(Mux(with_edges, _Next.EDGES, _Next.STEP))
            elif spec.effect is Effect.SET_EDGES:
                m.d.comb += nxt.eq(_Next.EDGES)
            elif spec.answer is Answer.RECORD:
                m.d.comb += nxt.eq(_Next.READBACK)

    def _exec_state(self, m, s):
        with m.State("EXEC"):
            # Decide the status; side effects only when not a replay.
            new, nxt = Signal(8), Signal(_Next)
            ends, reject = Signal(), Signal()     # the load ends; a load is rejected
            with m.Switch(s.command):
                for code, spec in COMMANDS.items():
                    with m.Case(code):
                        self._decide(m, s, spec, new, nxt, ends, reject)
                with m.Default():
                    m.d.comb += new.eq(Status.UNKNOWN_COMMAND)

            with m.If(s.replay):
                m.d.sync += s.status.eq(s.last_status)
                m.d.comb += s.bumps["replays"].eq(1)
                with m.If((s.last_status == Status.OK) & (nxt == _Next.READBACK)):
                    m.next = "READBACK"
                with m.Else():
                    m.next = "ANSWER"
            with m.Else():
                m.d.sync += [s.status.eq(new), s.last_status.eq(new), s.last_cmd.eq(s.command),
                             s.last_seq.eq(s.sequence), s.has_last.eq(1)]
                with m.If(new != Status.OK):
                    m.d.comb += s.bumps["command_errors"].eq(1)
                with m.If(ends):
                    m.d.sync += s.loading.eq(0)
                with m.If(ends & (new != Status.OK)):
                    m.d.sync += s.load_failed.eq(1)
                with m.If(reject):
                    m.d.sync += s.reject_pending.eq(1)
                with m.If(new == Status.OK):
                    self._effects(m, s, nxt)
                with m.Else():
                    m.next = "ANSWER"

    def _effects(self, m, s, nxt):
        with m.Switch(s.command):
            for code, spec in COMMANDS.items():
                with m.Case(code):
                    if spec.effect is Effect.BEGIN_LOAD:
                        m.d.sync += [s.loading.eq(1), s.count.eq(0)]
                        m.d.comb += s.stage_crc.start.eq(1)
                        if not self._staged:
                            m.d.comb += self.cfg.begin.eq(1)     # the grid stops now
                    elif spec.effect is Effect.RESET:
                        m.d.sync += s.grid_rst.eq(1)      # during ANSWER
                    elif spec.effect is Effect.STEP:
                        m.d.sync += s.steps_left.eq(s.steps_arg)
        m.d.sync += [s.rd_addr.eq(s.read_start), s.rd_prime.eq(1)]
        with m.Switch(nxt):
            apply = "APPLY_BEGIN" if self._staged else "APPLY_COMMIT"
            for target, state in ((_Next.CHUNK, "CHUNK"), (_Next.APPLY, apply),
                                  (_Next.STEP, "STEP"), (_Next.READBACK, "READBACK"),
                                  (_Next.EDGES, "EDGES")):
                with m.Case(target):
                    if target is _Next.APPLY:
                        m.d.sync += s.index.eq(0)
                    m.next = state
            with m.Default():
                m.next = "ANSWER"

    def _load_states(self, m, s):
        layout = s.layouts[next(c for c, spec in COMMANDS.items() if spec.effect is Effect.STAGE)]
        frame_at = 2 + layout["frame"][0]
        record_end = 1 + sum(size for _, size in layout.values())
        with m.State("CHUNK"):
            # Read the record back: every byte through the staging CRC, least significant bit
            # first, the frame's bytes into their lanes of the staging word.
            with m.If(~s.rd_prime):
                m.d.comb += s.stage_crc.valid.eq(1)
                m.d.sync += s.stage_bit.eq(s.stage_bit + 1)
                with m.If(s.stage_bit == 0):
                    if self._staged:
                        for lane in range(self._width // 2):
                            m.d.comb += s.stage_w.en[lane].eq(s.rd_addr == frame_at + lane)
                    else:
                        # Unstaged: shifted into the port's frame register (lane 0 first, so
                        # it ends in the low byte): one clock enable, no per-lane decoding.
                        with m.If((s.rd_addr >= frame_at) &
                                  (s.rd_addr < frame_at + self._width // 2)):
                            m.d.sync += s.w_data.eq(Cat(s.w_data[8:], s.rd_byte))
                with m.If(s.stage_bit == 7):
                    m.d.sync += [s.rd_addr.eq(s.rd_addr + 1), s.rd_prime.eq(1)]
                    with m.If(s.rd_addr == record_end):
                        m.d.sync += s.count.eq(s.count + 1)
                        if self._staged:
                            m.next = "ANSWER"
                        else:
                            m.d.sync += s.w_en.eq(1)
                            m.next = "CHUNK_WRITE"
        if not self._staged:
            with m.State("CHUNK_WRITE"):
                # The frame at the LOAD_CHUNK's row and address (w_en is high in this state).
                with m.If(self.cfg.w_ready):
                    m.next = "ANSWER"
                with m.Else():
                    m.d.sync += s.w_en.eq(1)

        if self._staged:                       # the staged set into the grid
            with m.State("APPLY_BEGIN"):
                m.d.comb += [self.cfg.begin.eq(1), s.applying.eq(1)]
                m.next = "APPLY_READ"
            with m.State("APPLY_READ"):
                m.d.comb += s.applying.eq(1)       # the staging word at `index` comes next cycle
                m.next = "APPLY_LATCH"
            with m.State("APPLY_LATCH"):
                m.d.comb += s.applying.eq(1)
                m.d.sync += [s.w_data.eq(s.stage_r.data), s.w_en.eq(1)]
                m.next = "APPLY_WRITE"
            with m.State("APPLY_WRITE"):
                m.d.comb += s.applying.eq(1)       # w_en is high in this state
                with m.If(self.cfg.w_ready):
                    with m.If(s.index == s.frames - 1):
                        m.next = "APPLY_COMMIT"
                    with m.Else():
                        m.d.sync += s.index.eq(s.index + 1)
                        m.next = "APPLY_READ"
                with m.Else():
                    m.d.sync += s.w_en.eq(1)
        with m.State("APPLY_COMMIT"):
            m.d.comb += [s.applying.eq(1), self.cfg.commit.eq(1)]
            with m.If(self.cfg.w_ready):
                m.next = "APPLY_CHECK"
        with m.State("APPLY_CHECK"):
            with m.If(self.cfg.valid):
                m.d.sync += [s.grid_rst.eq(1), s.load_failed.eq(0)]
            with m.Else():
                m.d.sync += [s.status.eq(Status.APPLY_FAILED),
                             s.last_status.eq(Status.APPLY_FAILED), s.load_failed.eq(1),
                             s.reject_pending.eq(1)]
                m.d.comb += s.bumps["command_errors"].eq(1)
            m.next = "ANSWER"

    def _run_states(self, m, s):
        steps = {code for code, spec in COMMANDS.items() if spec.effect is Effect.STEP}
        is_step = functools.reduce(operator.or_, (s.command == code for code in steps))
        with m.State("EDGES"):
            # The edge block (SET_EDGES, or STEP's optional field) into `edges`.
            m.d.sync += s.rd_addr.eq(s.rd_addr + 1)
            with m.If(~s.rd_prime):
                m.d.sync += s.edges.eq(Cat(s.edges[8:], s.rd_byte))
            with m.If(s.rd_addr == s.read_start + s.block):
                with m.If(is_step):
                    m.next = "STEP"
                with m.Else():
                    m.next = "ANSWER"

        with m.State("STEP"):
            # `step` is a register (it fans out to every cell of the grid): the last
            # subcycle runs at the end of the cycle where steps_left reaches 0, and its
            # outputs are visible in ANSWER. A request the grid has not accepted yet
            # (`step_ready` low, SPEC section 7) is held.
            with m.If(s.step & ~self.step_ready):
                m.d.comb += s.step_next.eq(1)
            with m.Elif(s.steps_left != 0):
                m.d.comb += s.step_next.eq(1)
                m.d.sync += s.steps_left.eq(s.steps_left - 1)
            with m.Else():
                m.next = "STEP_WAIT"
        with m.State("STEP_WAIT"):
            # A mesh tile runs the requested subcycles as its neighbours allow.
            with m.If(~self.busy):
                m.next = "ANSWER"
        with m.State("READBACK"):
            m.next = "READBACK_WAIT"           # row/addr are on the port from this cycle on
        with m.State("READBACK_WAIT"):
            # r_data is the frame at row/addr once r_ready is high (at once for a direct
            # grid; a multiplexed grid gathers it from its block RAM).
            # Unstaged (a grid that fills the device): the frame is kept in the port's frame
            # register (idle outside loads), which the answer then shifts out a byte at a
            # time: no multiplexer over its bytes (s.record_shift).
            with m.If(self.cfg.r_ready):
                if s.record_shift:
                    m.d.sync += s.w_data.eq(self.cfg.r_data)
                m.next = "ANSWER"

    def _answer_states(self, m, s):
        with m.State("ANSWER"):
            m.d.sync += [s.kind.eq(0), s.rlen.eq(3 - 1), s.pos.eq(0)]
            with m.If(s.status == Status.OK):
                with m.Switch(s.resp_cmd & 0x7F):
                    for number, (answer, _, size) in enumerate(s.kinds, 1):
                        codes = [code for code, spec in COMMANDS.items() if spec.answer is answer]
                        with m.Case(*codes):
                            m.d.sync += [s.kind.eq(number), s.rlen.eq(3 + size - 1)]
            m.next = "LOAD" if self._registered_answer else "PRODUCE"
        if self._registered_answer:
            with m.State("LOAD"):
                m.d.sync += s.shift.eq(s.loaded)
                m.next = "PRODUCE"
        with m.State("PRODUCE"):
            last = s.pos == s.rlen
            m.d.comb += [s.sender.i.valid.eq(1), s.sender.i.payload.data.eq(s.produced),
                         s.sender.i.payload.first.eq(s.pos == 0),
                         s.sender.i.payload.last.eq(last)]
            with m.If(s.sender.i.ready):
                m.d.sync += s.pos.eq(s.pos + 1)
                if self._registered_answer:
                    m.d.sync += s.shift.eq(s.shift >> 8)
                elif s.record_kind is not None:
                    with m.If((s.kind == s.record_kind) & (s.pos >= 3 + s.record_head)):
                        m.d.sync += s.w_data.eq(s.w_data >> 8)
                with m.If(last):
                    m.next = "SEND"
        with m.State("SEND"):
            with m.If(s.sender.done):
                m.next = "IDLE"
