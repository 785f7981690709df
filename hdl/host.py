"""The host link gateware: a UART, and the protocol engine of ``docs/host-protocol.md`` that
drives a :class:`~bitgrid.hdl.grid.Grid` (configuration port, step, edge buses).

* :class:`UARTReceiver`, :class:`UARTTransmitter`: 8N1, one bit every ``divisor`` clock cycles.
* :class:`ProtocolEngine`: COBS decoding into a frame buffer with the link CRC checked on the
  fly, the command dispatcher, a staging memory for configuration frames (a load replaces the
  running configuration only after the whole staged set has passed its CRC), the answer with its
  CRC, COBS-encoded into an answer buffer, and the error counters. Its reference is the Python
  model :class:`bitgrid.host.DeviceModel`: for the same bytes in, the same bytes out. The
  three buffers are ``amaranth.lib.memory.Memory`` with synchronous read ports, marked for
  block RAM (SB_RAM40_4K, DP16KD, Gowin BSRAM); the engine reads and writes them a byte a
  cycle, so it has no wide multiplexers over frame bytes (``docs/resources.md``).
* :class:`HostController`: UART + engine + grid, what a board top instantiates.
"""

import functools
import operator

from amaranth.hdl import C, Cat, Const, Instance, Module, Mux, ResetInserter, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..config import FRAME_CRC, check_grid_size
from ..host import (FEATURES, FRAMING_RESPONSE, GATEWARE_VERSION, LINK_CRC, MAX_BODY_LIMIT,
                    PROTOCOL_VERSION, STORAGE_CODES, Command, Status, edge_block_size,
                    max_body, max_payload)
from .grid import ConfigSignature, EdgeSignature, Grid

__all__ = ["attach_grid", "UARTReceiver", "UARTTransmitter", "ProtocolEngine", "HostController"]


#: Yosys attribute that puts the engine's memories in block RAM (SB_RAM40_4K, DP16KD, Gowin
#: BSRAM) even when they are small: LUT RAM is what the grid's cells need on ECP5 and Gowin
#: (the Tang Nano 9K has 270 RAM16SDP4 sites, a 16 x 16 grid takes 256).
_BLOCK_RAM = {"ram_style": "block"}


def _check_divisor(divisor):
    if not isinstance(divisor, int) or isinstance(divisor, bool) or divisor < 4:
        raise ValueError(f"divisor must be an integer of at least 4 clock cycles per bit, "
                         f"not {divisor!r}")
    return divisor


class UARTReceiver(wiring.Component):
    """8N1 UART receiver.

    The line is sampled in the middle of each bit, ``divisor`` cycles apart, after a start bit
    that is still low half a bit after its falling edge. A byte appears on :attr:`data` (a
    stream without back pressure: ``valid`` is high for one cycle) 3 cycles after the middle of
    its stop bit (2 of them in the input synchroniser); a low stop bit pulses :attr:`error`
    instead, and the receiver waits for the line to go high again.

    Members
    -------
    rx : In(1)
        The line (idle high); synchronised inside.
    data : Out(stream.Signature(8, always_ready=True))
    error : Out(1)
    """

    def __init__(self, *, divisor):
        self._divisor = _check_divisor(divisor)
        super().__init__({
            "rx": In(1, init=1),
            "data": Out(stream.Signature(8, always_ready=True)),
            "error": Out(1),
        })

    @property
    def divisor(self):
        return self._divisor

    def elaborate(self, platform):
        m = Module()
        line = Signal(init=1)
        m.submodules.sync = FFSynchronizer(self.rx, line, init=1)
        timer = Signal(range(self._divisor))
        bit = Signal(range(9))
        shift = Signal(8)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(~line):
                    m.d.sync += timer.eq(self._divisor // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Elif(line):
                    m.next = "IDLE"                       # a glitch, not a start bit
                with m.Else():
                    m.d.sync += [timer.eq(self._divisor - 1), bit.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                with m.Else():
                    m.d.sync += [timer.eq(self._divisor - 1), bit.eq(bit + 1)]
                    with m.If(bit == 8):
                        with m.If(line):
                            m.d.sync += self.data.valid.eq(1)
                            m.next = "IDLE"
                        with m.Else():
                            m.d.sync += self.error.eq(1)
                            m.next = "BREAK"
                    with m.Else():
                        m.d.sync += shift.eq(Cat(shift[1:], line))
            with m.State("BREAK"):
                with m.If(line):
                    m.next = "IDLE"
        with m.If(self.data.valid | self.error):
            m.d.sync += [self.data.valid.eq(0), self.error.eq(0)]
        m.d.comb += self.data.payload.eq(shift)
        return m


class UARTTransmitter(wiring.Component):
    """8N1 UART transmitter: takes a byte from :attr:`data` when idle and sends start bit, 8
    data bits (least significant first) and stop bit, ``divisor`` cycles each.

    Members
    -------
    data : In(stream.Signature(8))
    tx : Out(1)
        The line (idle high).
    """

    def __init__(self, *, divisor):
        self._divisor = _check_divisor(divisor)
        super().__init__({"data": In(stream.Signature(8)), "tx": Out(1, init=1)})

    @property
    def divisor(self):
        return self._divisor

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self._divisor))
        shift = Signal(10, init=0x3FF)
        bits = Signal(range(11))
        m.d.comb += [self.tx.eq(shift[0]), self.data.ready.eq(bits == 0)]
        with m.If(bits == 0):
            with m.If(self.data.valid):
                m.d.sync += [shift.eq(Cat(C(0, 1), self.data.payload, C(1, 1))), bits.eq(10),
                             timer.eq(self._divisor - 1)]
        with m.Elif(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Else():
            m.d.sync += [shift.eq(Cat(shift[1:], C(1, 1))), bits.eq(bits - 1),
                         timer.eq(self._divisor - 1)]
        return m


class ProtocolEngine(wiring.Component):
    """The device end of the host protocol (``docs/host-protocol.md``) for a ``width`` x
    ``height`` grid, byte streams in and out; the grid is outside, on :attr:`cfg` and the step
    and edge members.

    It handles one request at a time: bytes that arrive while it executes or answers a request
    are dropped up to the next delimiter. Answers are byte for byte those of
    :class:`bitgrid.host.DeviceModel`.

    Every output to the grid is a register (``step``, ``grid_rst``, and the configuration
    port's row, address, frame and write enable): they fan out to every cell. ``step`` is high
    one cycle per requested subcycle, while the engine is in its STEP state; ``grid_rst`` for
    one cycle after a RESET or a successful LOAD_APPLY, before the answer.

    Parameters
    ----------
    width, height : int
        Grid size in cells.
    storage : str
        Storage name reported by IDENTIFY (``"ff"`` or ``"memory"``).

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
    edges_in : Out(EdgeSignature(width, height))
        To the grid's edge inputs (``grid.i``).
    edges_out : In(EdgeSignature(width, height))
        From the grid's edge outputs (``grid.o``).
    subcycle : In(32)
    busy : In(1)
        The grid has not yet run every subcycle requested (a mesh tile waiting for its
        neighbours at the lockstep barrier); a STEP is answered once it is low. 0 for a plain
        grid, which runs a subcycle in the cycle it is asked for.
    load_failed : Out(1)
        The last LOAD_APPLY was rejected.
    """

    def __init__(self, width, height, *, storage="ff"):
        self._width, self._height = check_grid_size(width, height)
        if storage not in ("ff", "memory"):
            raise ValueError(f"Storage must be one of 'ff', 'memory', not {storage!r}")
        self._storage = storage
        if max_body(width, height) > MAX_BODY_LIMIT:
            raise ValueError(f"A {width} x {height} grid needs frames of "
                             f"{max_body(width, height)} bytes; the protocol allows at most "
                             f"{MAX_BODY_LIMIT}")
        super().__init__({
            "rx": In(stream.Signature(8, always_ready=True)),
            "tx": Out(stream.Signature(8)),
            "cfg": Out(ConfigSignature(width, height)),
            "step": Out(1), "grid_rst": Out(1),
            "edges_in": Out(EdgeSignature(width, height)),
            "edges_out": In(EdgeSignature(width, height)),
            "subcycle": In(32),
            "busy": In(1),
            "load_failed": Out(1),
        })

    @property
    def width(self):
        return self._width

    @property
    def height(self):
        return self._height

    def elaborate(self, platform):
        m = Module()
        w, h = self._width, self._height
        nw, nh = (w + 7) // 8, (h + 7) // 8
        block = edge_block_size(w, h)
        frames = 16 * h
        maxb = max_body(w, h)
        record = 3 + w // 2

        # --- COBS decoder into the frame buffer (block RAM), link CRC on the fly -------------
        # The decoded body goes to a byte-wide memory; its first 6 bytes (command, sequence and
        # the arguments) are also kept in registers, read in parallel by the dispatcher. The
        # rest (edge blocks, configuration frames) is read back one byte per cycle.
        m.submodules.frame = frame = Memory(shape=8, depth=maxb, init=[], attrs=_BLOCK_RAM)
        frame_w = frame.write_port()
        frame_r = frame.read_port(domain="sync")
        head = Signal(8 * 6)
        length = Signal(range(maxb + 1))
        overflow = Signal()
        remaining = Signal(8)         # data bytes left in the current COBS block
        zero_pending = Signal()       # emit a zero before the next block
        in_frame = Signal()
        discard = Signal()
        busy = Signal()
        done = Signal()               # a frame ended on this cycle's delimiter
        cobs_ok = Signal()
        m.submodules.rx_crc = rx_crc = LINK_CRC.create()
        emit = Signal()
        emit_data = Signal(8)
        stored = Signal()
        m.d.comb += [stored.eq(emit & (length < maxb)),
                     rx_crc.data.eq(emit_data), rx_crc.valid.eq(stored),
                     frame_w.addr.eq(length), frame_w.data.eq(emit_data),
                     frame_w.en.eq(stored)]
        with m.If(emit):
            with m.If(length < maxb):
                m.d.sync += length.eq(length + 1)
            with m.Else():
                m.d.sync += overflow.eq(1)
        for i in range(6):
            with m.If(emit & (length == i)):
                m.d.sync += head[8 * i:8 * i + 8].eq(emit_data)

        def restart():
            return [remaining.eq(0), zero_pending.eq(0), in_frame.eq(0), length.eq(0),
                    overflow.eq(0)]

        byte = self.rx.payload
        with m.If(self.rx.valid):
            with m.If(byte == 0):
                m.d.sync += [*restart(), discard.eq(0)]
                m.d.comb += rx_crc.start.eq(1)
                with m.If(in_frame & ~discard & ~busy):
                    m.d.comb += [done.eq(1), cobs_ok.eq(remaining == 0)]
            with m.Elif(busy | discard):
                m.d.sync += discard.eq(1)
            with m.Else():
                m.d.sync += in_frame.eq(1)
                with m.If(remaining == 0):
                    m.d.sync += [remaining.eq(byte - 1), zero_pending.eq(byte != 0xFF)]
                    m.d.comb += [emit.eq(zero_pending), emit_data.eq(0)]
                with m.Else():
                    m.d.sync += remaining.eq(remaining - 1)
                    m.d.comb += [emit.eq(1), emit_data.eq(byte)]

        # --- Fields of the request -------------------------------------------------------------
        def byte_at(index):
            return head[8 * index:8 * index + 8]

        command, sequence = byte_at(0), byte_at(1)
        frame_length = Signal(range(maxb + 1))     # latched: the decoder restarts at once
        plen = Signal(range(maxb + 1))
        m.d.comb += plen.eq(frame_length - 4)
        arg_row = Cat(byte_at(2), byte_at(3))
        arg_addr = byte_at(4)
        arg_index = Signal(range(16 * 0x10000))
        m.d.comb += arg_index.eq(Cat(arg_addr[:4], arg_row))
        arg_ok = (arg_row < h) & (arg_addr < 16)
        crc_arg = Cat(byte_at(2), byte_at(3), byte_at(4), byte_at(5))
        steps_arg = Cat(byte_at(2), byte_at(3))

        # The edge inputs, as the padded edge block (N, E, S, W words): filled one byte at a
        # time from the frame buffer (the grid does not step meanwhile).
        edges = Signal(8 * block)
        base = 0
        for port, lanes, size in ((self.edges_in.n, w, nw), (self.edges_in.e, h, nh),
                                  (self.edges_in.s, w, nw), (self.edges_in.w, h, nh)):
            m.d.comb += port.eq(edges[base:base + lanes])
            base += 8 * size

        # Reading the frame buffer: `rd_addr` is presented to the memory, its byte is on
        # frame_r.data the next cycle (`rd_prime` marks the first cycle, with no byte yet).
        rd_addr = Signal(range(maxb + 1))
        rd_prime = Signal()
        rd_byte = frame_r.data
        m.d.comb += frame_r.addr.eq(rd_addr)
        m.d.sync += rd_prime.eq(0)

        # --- State -----------------------------------------------------------------------------
        status = Signal(8)
        resp_cmd = Signal(8)
        resp_seq = Signal(8)
        last_cmd, last_seq, has_last = Signal(8), Signal(8), Signal()
        last_status = Signal(8)
        replay = Signal()
        loading, load_failed = Signal(), Signal()
        m.d.comb += self.load_failed.eq(load_failed)
        count = Signal(range(frames + 1))
        steps_left = Signal(16)
        step = Signal()
        grid_rst = Signal()
        m.d.sync += [step.eq(0), grid_rst.eq(0)]
        m.d.comb += [self.step.eq(step), self.grid_rst.eq(grid_rst)]
        index = Signal(range(frames))
        counter_names = ("frames_ok", "framing_errors", "crc_errors", "command_errors",
                         "load_rejects", "replays")
        counters = {name: Signal(16, name=f"count_{name}") for name in counter_names}

        # One saturating incrementer for all the counters: at most one counts in a cycle (a
        # rejected load counts its load_rejects the cycle after its command_errors). The
        # request to count is registered, so the count lands a cycle later, long before an
        # answer reads it; this keeps the frame decoder's path short.
        bumps = {name: Signal(name=f"bump_{name}") for name in counter_names}
        bumps_r = {name: Signal(name=f"bump_{name}_r") for name in counter_names}
        m.d.sync += [bumps_r[name].eq(bumps[name]) for name in counter_names]
        bumped = Signal(16)
        reject_pending = Signal()
        m.d.sync += reject_pending.eq(0)
        selected = Signal(16)
        choices = [Mux(bumps_r[name], counters[name], 0) for name in counter_names]
        m.d.comb += selected.eq(functools.reduce(operator.or_, choices))
        for name in counter_names:
            with m.If(bumps_r[name]):
                m.d.sync += counters[name].eq(bumped)
        m.d.comb += bumped.eq(selected + (selected != 0xFFFF))
        with m.If(reject_pending):
            m.d.comb += bumps["load_rejects"].eq(1)

        def count_up(name):
            return bumps[name].eq(1)

        # The staging memory: one word per configuration frame, written a byte lane at a time
        # as the LOAD_CHUNK record is read back from the frame buffer.
        # Its CRC-32 runs one bit a cycle (a tenth of the logic of a byte-wide one).
        m.submodules.stage_crc = stage_crc = FRAME_CRC.algorithm(data_width=1).create()
        stage_bit = Signal(3)
        m.submodules.staging = staging = Memory(shape=4 * w, depth=frames, init=[],
                                                 attrs=_BLOCK_RAM)
        stage_w = staging.write_port(granularity=8)
        stage_r = staging.read_port(domain="sync")
        m.d.comb += [stage_w.addr.eq(count), stage_w.data.eq(Cat(*[rd_byte] * (w // 2))),
                     stage_r.addr.eq(index), stage_crc.data.eq(rd_byte.bit_select(stage_bit, 1))]

        # The grid's configuration port: the apply sequence, else the READBACK arguments.
        # Row, address, frame and write enable come from registers: they fan out to every
        # cell (the frame to every row), so nothing but wires lies between them and the grid.
        applying = Signal()
        cfg_row = Signal.like(self.cfg.row)
        cfg_addr = Signal(4)
        w_data = Signal.like(self.cfg.w_data)
        w_en = Signal()
        with m.If(applying):
            m.d.sync += [cfg_row.eq(index[4:]), cfg_addr.eq(index[:4])]
        with m.Else():
            m.d.sync += [cfg_row.eq(arg_row), cfg_addr.eq(arg_addr)]
        m.d.sync += w_en.eq(0)
        m.d.comb += [self.cfg.row.eq(cfg_row), self.cfg.addr.eq(cfg_addr),
                     self.cfg.w_data.eq(w_data), self.cfg.w_en.eq(w_en),
                     self.cfg.crc.eq(crc_arg)]

        checks = {"len_0": plen == 0, "len_2": plen == 2, "len_3": plen == 3, "len_4": plen == 4,
                  "len_block": plen == block, "len_step_edges": plen == 2 + block,
                  "len_record": plen == record, "arg_ok": arg_ok, "in_order": arg_index == count,
                  "complete": count == frames, "crc_match": stage_crc.crc == crc_arg}
        check = {k: Signal(name=f"check_{k}") for k in checks}

        # --- The answer ------------------------------------------------------------------------
        # Its bytes (header, data, CRC) are produced one per cycle from their sources, which
        # hold still while the engine answers, and COBS-encoded on the way into the answer
        # buffer (block RAM): a non-zero byte goes one place further on, a zero becomes the
        # slot of the next block's code byte, and each code is written when its block ends.
        # The buffer is then sent as it stands, and the delimiter.
        outputs = Cat(self.subcycle,
                      self.edges_out.n, C(0, 8 * nw - w), self.edges_out.e, C(0, 8 * nh - h),
                      self.edges_out.s, C(0, 8 * nw - w), self.edges_out.w, C(0, 8 * nh - h))
        identify = Const(int.from_bytes(
            b"BG" + bytes([PROTOCOL_VERSION, *GATEWARE_VERSION]) + w.to_bytes(2, "little")
            + h.to_bytes(2, "little") + bytes([STORAGE_CODES[self._storage], 32])
            + int(FEATURES).to_bytes(2, "little")
            + max_payload(w, h).to_bytes(2, "little"), "little"), 8 * 15)
        flags = Cat(self.cfg.valid, loading, load_failed, C(0, 5))
        staged = Signal(16)
        m.d.comb += staged.eq(count)
        status_data = Cat(flags, self.subcycle, staged,
                          *(counters[name] for name in counter_names))
        readback = Cat(arg_row, arg_addr, self.cfg.r_data)
        # Answer kinds: 0 header only, then the data of each OK answer that has some.
        kinds = [(identify, 15), (outputs, 4 + block), (status_data, 19), (readback, record)]
        kind = Signal(range(len(kinds) + 1))
        longest = 3 + max(size for _, size in kinds) + 2      # body of the longest answer
        rlen = Signal(range(longest))             # header + data bytes

        m.submodules.answer = answer_mem = Memory(shape=8, depth=longest + 1, init=[],
                                                  attrs=_BLOCK_RAM)
        ans_w = answer_mem.write_port()
        ans_r = answer_mem.read_port(domain="sync")
        m.submodules.tx_crc = tx_crc = LINK_CRC.create()
        pos = Signal(range(longest))              # next byte to produce
        enc_valid = Signal()                      # a produced byte for the encoder
        enc_data = Signal(8)
        enc_crc = Signal()                        # ... that goes through the answer CRC
        enc_pos = Signal(range(longest + 1))      # body bytes encoded so far
        code_pos = Signal(range(longest + 2))     # slot of the current block's code byte
        enc_final = Signal()
        send = Signal(range(longest + 1))         # answer buffer byte being sent
        m.d.comb += [tx_crc.valid.eq(enc_valid & enc_crc), tx_crc.data.eq(enc_data),
                     ans_r.addr.eq(send)]
        m.d.sync += enc_valid.eq(0)
        code = (enc_pos + 1 - code_pos)[:8]
        with m.If(enc_final | (enc_valid & (enc_data == 0))):
            m.d.comb += [ans_w.en.eq(1), ans_w.addr.eq(code_pos), ans_w.data.eq(code)]
            m.d.sync += code_pos.eq(enc_pos + 1)
        with m.Elif(enc_valid):
            m.d.comb += [ans_w.en.eq(1), ans_w.addr.eq(enc_pos + 1), ans_w.data.eq(enc_data)]
        with m.If(enc_valid):
            m.d.sync += enc_pos.eq(enc_pos + 1)

        produced = Signal(8)
        with m.Switch(pos):
            with m.Case(0):
                m.d.comb += produced.eq(resp_cmd)
            with m.Case(1):
                m.d.comb += produced.eq(resp_seq)
            with m.Case(2):
                m.d.comb += produced.eq(status)
            with m.Default():
                with m.Switch(kind):
                    for number, (value, size) in enumerate(kinds, 1):
                        with m.Case(number):
                            with m.Switch(pos):
                                for i in range(size):
                                    with m.Case(3 + i):
                                        m.d.comb += produced.eq(value.word_select(i, 8))

        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(done):
                    m.d.sync += [resp_cmd.eq(FRAMING_RESPONSE), resp_seq.eq(0)]
                    with m.If(~cobs_ok):
                        m.d.sync += status.eq(Status.BAD_FRAME)
                        m.d.comb += count_up("framing_errors")
                        m.next = "ANSWER"
                    with m.Elif(overflow):
                        m.d.sync += status.eq(Status.TOO_LONG)
                        m.d.comb += count_up("framing_errors")
                        m.next = "ANSWER"
                    with m.Elif(length < 4):
                        m.d.sync += status.eq(Status.TOO_SHORT)
                        m.d.comb += count_up("framing_errors")
                        m.next = "ANSWER"
                    with m.Elif(~rx_crc.match_detected):
                        m.d.sync += status.eq(Status.BAD_CRC)
                        m.d.comb += count_up("crc_errors")
                        m.next = "ANSWER"
                    with m.Else():
                        m.d.comb += count_up("frames_ok")
                        m.d.sync += [resp_cmd.eq(command | 0x80),
                                     frame_length.eq(length),
                                     resp_seq.eq(sequence),
                                     replay.eq(has_last & (last_cmd == command) &
                                               (last_seq == sequence))]
                        m.next = "CHECK"

            with m.State("CHECK"):
                # The comparisons EXEC decides on, registered (a shorter path at 100 MHz).
                m.d.sync += [check[k].eq(v) for k, v in checks.items()]
                m.next = "EXEC"

            with m.State("EXEC"):
                # Decide the status; side effects only when not a replay.
                new = Signal(8)
                nxt = Signal(4)      # 0 answer, 1 chunk, 2 apply, 3 step, 4 readback, 5 edges
                with m.Switch(command):
                    with m.Case(Command.IDENTIFY, Command.GET_EDGES, Command.STATUS,
                                Command.RESET, Command.LOAD_BEGIN):
                        m.d.comb += new.eq(Mux(~check["len_0"], Status.BAD_LENGTH, Status.OK))
                    with m.Case(Command.LOAD_CHUNK):
                        with m.If(~check["len_record"]):
                            m.d.comb += new.eq(Status.BAD_LENGTH)
                        with m.Elif(~loading):
                            m.d.comb += new.eq(Status.NOT_LOADING)
                        with m.Elif(~check["arg_ok"]):
                            m.d.comb += new.eq(Status.BAD_ARGUMENT)
                        with m.Elif(~check["in_order"]):
                            m.d.comb += new.eq(Status.BAD_ORDER)
                        with m.Else():
                            m.d.comb += [new.eq(Status.OK), nxt.eq(1)]
                    with m.Case(Command.LOAD_APPLY):
                        with m.If(~check["len_4"]):
                            m.d.comb += new.eq(Status.BAD_LENGTH)
                        with m.Elif(~loading):
                            m.d.comb += new.eq(Status.NOT_LOADING)
                        with m.Elif(replay):
                            m.d.comb += new.eq(Status.OK)
                        with m.Elif(~check["complete"]):
                            m.d.comb += new.eq(Status.INCOMPLETE)
                        with m.Elif(~check["crc_match"]):
                            m.d.comb += new.eq(Status.CONFIG_CRC)
                        with m.Else():
                            m.d.comb += [new.eq(Status.OK), nxt.eq(2)]
                    with m.Case(Command.STEP):
                        with m.If(~check["len_2"] & ~check["len_step_edges"]):
                            m.d.comb += new.eq(Status.BAD_LENGTH)
                        with m.Elif(~self.cfg.valid):
                            m.d.comb += new.eq(Status.NOT_VALID)
                        with m.Elif(~check["len_2"]):
                            m.d.comb += [new.eq(Status.OK), nxt.eq(5)]
                        with m.Else():
                            m.d.comb += [new.eq(Status.OK), nxt.eq(3)]
                    with m.Case(Command.SET_EDGES):
                        with m.If(~check["len_block"]):
                            m.d.comb += new.eq(Status.BAD_LENGTH)
                        with m.Else():
                            m.d.comb += [new.eq(Status.OK), nxt.eq(5)]
                    with m.Case(Command.READBACK):
                        with m.If(~check["len_3"]):
                            m.d.comb += new.eq(Status.BAD_LENGTH)
                        with m.Elif(~check["arg_ok"]):
                            m.d.comb += new.eq(Status.BAD_ARGUMENT)
                        with m.Else():
                            m.d.comb += [new.eq(Status.OK), nxt.eq(4)]
                    with m.Default():
                        m.d.comb += new.eq(Status.UNKNOWN_COMMAND)

                with m.If(replay):
                    m.d.sync += status.eq(last_status)
                    m.d.comb += count_up("replays")
                    with m.If((last_status == Status.OK) & (nxt == 4)):
                        m.next = "READBACK"
                    with m.Else():
                        m.next = "ANSWER"
                with m.Else():
                    m.d.sync += [status.eq(new), last_cmd.eq(command), last_seq.eq(sequence),
                                 has_last.eq(1)]
                    with m.If(new != Status.OK):
                        m.d.sync += last_status.eq(new)
                        m.d.comb += count_up("command_errors")
                        with m.If((new == Status.INCOMPLETE) | (new == Status.CONFIG_CRC)):
                            m.d.sync += [reject_pending.eq(1), load_failed.eq(1)]
                    with m.Else():
                        m.d.sync += last_status.eq(Status.OK)
                    # LOAD_APPLY ends the load session whatever its outcome.
                    with m.If((command == Command.LOAD_APPLY) & check["len_4"] & loading):
                        m.d.sync += loading.eq(0)
                    with m.If(new == Status.OK):
                        with m.Switch(command):
                            with m.Case(Command.LOAD_BEGIN):
                                m.d.sync += [loading.eq(1), count.eq(0)]
                                m.d.comb += stage_crc.start.eq(1)
                            with m.Case(Command.RESET):
                                m.d.sync += grid_rst.eq(1)     # during ANSWER
                            with m.Case(Command.STEP):
                                m.d.sync += steps_left.eq(steps_arg)
                        m.d.sync += [rd_addr.eq(Mux(command == Command.STEP, 4, 2)),
                                     rd_prime.eq(1)]
                        with m.Switch(nxt):
                            with m.Case(1):
                                m.next = "CHUNK"
                            with m.Case(2):
                                m.d.sync += index.eq(0)
                                m.next = "APPLY_BEGIN"
                            with m.Case(3):
                                m.next = "STEP"
                            with m.Case(4):
                                m.next = "READBACK"
                            with m.Case(5):
                                m.next = "EDGES"
                            with m.Default():
                                m.next = "ANSWER"
                    with m.Else():
                        m.next = "ANSWER"

            with m.State("CHUNK"):
                # Read the record (bytes 2 ...) back: every byte through the staging CRC, least
                # significant bit first, the frame's bytes into their lanes of the staging word.
                with m.If(~rd_prime):
                    m.d.comb += stage_crc.valid.eq(1)
                    m.d.sync += stage_bit.eq(stage_bit + 1)
                    with m.If(stage_bit == 0):
                        for lane in range(w // 2):
                            m.d.comb += stage_w.en[lane].eq(rd_addr == 5 + lane)
                    with m.If(stage_bit == 7):
                        m.d.sync += [rd_addr.eq(rd_addr + 1), rd_prime.eq(1)]
                        with m.If(rd_addr == 1 + record):
                            m.d.sync += count.eq(count + 1)
                            m.next = "ANSWER"

            with m.State("EDGES"):
                # The edge block (SET_EDGES: bytes 2 ..., STEP: bytes 4 ...) into `edges`.
                m.d.sync += rd_addr.eq(rd_addr + 1)
                with m.If(~rd_prime):
                    m.d.sync += edges.eq(Cat(edges[8:], rd_byte))
                with m.If(rd_addr == Mux(command == Command.STEP, 4, 2) + block):
                    with m.If(command == Command.STEP):
                        m.next = "STEP"
                    with m.Else():
                        m.next = "ANSWER"

            with m.State("APPLY_BEGIN"):
                m.d.comb += [self.cfg.begin.eq(1), applying.eq(1)]
                m.next = "APPLY_READ"
            with m.State("APPLY_READ"):
                m.d.comb += applying.eq(1)     # the staging word at `index` comes next cycle
                m.next = "APPLY_LATCH"
            with m.State("APPLY_LATCH"):
                m.d.comb += applying.eq(1)
                m.d.sync += [w_data.eq(stage_r.data), w_en.eq(1)]
                m.next = "APPLY_WRITE"
            with m.State("APPLY_WRITE"):
                m.d.comb += applying.eq(1)     # w_en is high in this state
                with m.If(self.cfg.w_ready):
                    with m.If(index == frames - 1):
                        m.next = "APPLY_COMMIT"
                    with m.Else():
                        m.d.sync += index.eq(index + 1)
                        m.next = "APPLY_READ"
                with m.Else():
                    m.d.sync += w_en.eq(1)
            with m.State("APPLY_COMMIT"):
                m.d.comb += [applying.eq(1), self.cfg.commit.eq(1)]
                with m.If(self.cfg.w_ready):
                    m.next = "APPLY_CHECK"
            with m.State("APPLY_CHECK"):
                with m.If(self.cfg.valid):
                    m.d.sync += [grid_rst.eq(1), load_failed.eq(0)]
                with m.Else():
                    m.d.sync += [status.eq(Status.APPLY_FAILED), last_status.eq(
                        Status.APPLY_FAILED), load_failed.eq(1), reject_pending.eq(1)]
                    m.d.comb += count_up("command_errors")
                m.next = "ANSWER"

            with m.State("STEP"):
                # `step` is a register (it fans out to every cell of the grid): the last
                # subcycle runs at the end of the cycle where steps_left reaches 0, and its
                # outputs are visible in ANSWER.
                with m.If(steps_left != 0):
                    m.d.sync += [step.eq(1), steps_left.eq(steps_left - 1)]
                with m.Else():
                    m.next = "STEP_WAIT"

            with m.State("STEP_WAIT"):
                # A mesh tile runs the requested subcycles as its neighbours allow.
                with m.If(~self.busy):
                    m.next = "ANSWER"

            with m.State("READBACK"):
                m.next = "ANSWER"              # r_data is the frame at row/addr next cycle

            with m.State("ANSWER"):
                with m.If(status != Status.OK):
                    m.d.sync += [kind.eq(0), rlen.eq(3)]
                with m.Else():
                    with m.Switch(resp_cmd & 0x7F):
                        for number, (commands, size) in enumerate([
                                ((Command.IDENTIFY,), 15),
                                ((Command.STEP, Command.GET_EDGES), 4 + block),
                                ((Command.STATUS,), 19), ((Command.READBACK,), record)], 1):
                            with m.Case(*commands):
                                m.d.sync += [kind.eq(number), rlen.eq(3 + size)]
                        with m.Default():
                            m.d.sync += [kind.eq(0), rlen.eq(3)]
                m.d.sync += [pos.eq(0), enc_pos.eq(0), code_pos.eq(0)]
                m.d.comb += tx_crc.start.eq(1)
                m.next = "PRODUCE"

            with m.State("PRODUCE"):
                with m.If(pos != rlen):
                    m.d.sync += [enc_valid.eq(1), enc_data.eq(produced), enc_crc.eq(1),
                                 pos.eq(pos + 1)]
                with m.Else():
                    m.next = "CRC_HIGH"        # the last byte goes through the CRC meanwhile
            with m.State("CRC_HIGH"):
                m.d.sync += [enc_valid.eq(1), enc_data.eq(tx_crc.crc[8:]), enc_crc.eq(0)]
                m.next = "CRC_LOW"
            with m.State("CRC_LOW"):
                m.d.sync += [enc_valid.eq(1), enc_data.eq(tx_crc.crc[:8])]
                m.next = "FLUSH"
            with m.State("FLUSH"):
                m.next = "FINAL"               # the encoder takes the low CRC byte
            with m.State("FINAL"):
                m.d.comb += enc_final.eq(1)    # the code of the last block
                m.d.sync += send.eq(0)
                m.next = "LOAD"

            # Send the answer buffer, bytes 0 to enc_pos (one more than the body: the codes).
            with m.State("LOAD"):
                m.next = "SEND"                # ans_r.data is the byte at `send` next cycle
            with m.State("SEND"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(ans_r.data)]
                with m.If(self.tx.ready):
                    m.d.sync += send.eq(send + 1)
                    with m.If(send == enc_pos):
                        m.next = "DELIMITER"
                    with m.Else():
                        m.next = "LOAD"
            with m.State("DELIMITER"):
                m.d.comb += [self.tx.valid.eq(1), self.tx.payload.eq(0)]
                with m.If(self.tx.ready):
                    m.next = "IDLE"

        m.d.comb += busy.eq(~fsm.ongoing("IDLE"))
        return m


class HostController(wiring.Component):
    """A grid behind the host link: :class:`UARTReceiver`, :class:`ProtocolEngine`,
    :class:`UARTTransmitter` and a :class:`~bitgrid.hdl.grid.Grid`; what a board top
    instantiates.

    With ``links`` (sides such as ``"E"``), the grid is a :class:`~bitgrid.hdl.mesh.MeshTile`
    that exchanges those sides' edge lanes with a neighbouring chip (``lanes`` SDR lanes per
    direction on ``link_ports``, see :mod:`bitgrid.boards.links`): a STEP of ``n`` raises the
    tile's step budget by ``n`` and is answered when the tile has run them, as the barrier
    allows; RESET (and a load) resets the links too, so both chips are reset before a run.

    Members
    -------
    rx : In(1)
    tx : Out(1)
    valid : Out(1)
        The grid holds a checked configuration (for an LED).
    load_failed : Out(1)
        The last load was rejected (for an LED).
    """

    def __init__(self, width, height, *, divisor, storage="ff", init=None, links="", lanes=1,
                 link_ports=None):
        self._divisor = _check_divisor(divisor)
        if links:
            if init is not None:
                raise ValueError("A controller with links loads its configuration at run time; "
                                 "init is not supported")
            from .mesh import MeshTile
            self.grid = MeshTile(width, height, links=links, lanes=lanes, storage=storage,
                                 link_ports=link_ports)
        else:
            self.grid = Grid(width, height, storage=storage, init=init)
        self.engine = ProtocolEngine(width, height, storage=storage)
        super().__init__({"rx": In(1, init=1), "tx": Out(1, init=1), "valid": Out(1),
                          "load_failed": Out(1)})

    def elaborate(self, platform):
        m = Module()
        grid_rst = Signal()
        m.submodules.receiver = receiver = UARTReceiver(divisor=self._divisor)
        m.submodules.transmitter = transmitter = UARTTransmitter(divisor=self._divisor)
        m.submodules.engine = engine = self.engine
        m.submodules.grid = ResetInserter(grid_rst)(self.grid)
        grid = self.grid
        engine_rst = Signal()
        if getattr(platform, "family", None) == "ecp5":
            # The grid reset reaches every cell's output flip-flops: on ECP5 it goes through a
            # global buffer (nextpnr promotes only clocks by itself); 7 ns of general routing
            # from one flip-flop to the LSR pins of a 32 x 32 grid otherwise.
            m.submodules.grid_rst_buffer = Instance(
                "DCCA", i_CLKI=engine_rst, i_CE=C(1, 1), o_CLKO=grid_rst)
        else:
            m.d.comb += grid_rst.eq(engine_rst)
        m.d.comb += [receiver.rx.eq(self.rx), self.tx.eq(transmitter.tx)]
        wiring.connect(m, receiver.data, engine.rx)
        wiring.connect(m, engine.tx, transmitter.data)
        attach_grid(m, engine, grid, grid_rst)
        m.d.comb += [engine_rst.eq(engine.grid_rst),
                     self.valid.eq(grid.cfg.valid), self.load_failed.eq(engine.load_failed)]
        return m


def attach_grid(m, engine, grid, grid_rst):
    """Wire a :class:`ProtocolEngine` to the grid it drives, in module ``m``: the configuration
    port, the edge buses, the subcycle counter and stepping. ``grid`` is a
    :class:`~bitgrid.hdl.grid.Grid` (``step`` follows the engine's ``step``) or a
    :class:`~bitgrid.hdl.mesh.MeshTile` (each step request raises its ``limit`` by one subcycle,
    and the engine's ``busy`` holds the STEP answer until the tile has run them); ``grid_rst``
    is the grid's reset (it also clears the tile's budget). The caller adds the grid to ``m``
    under that reset (``ResetInserter``)."""
    wiring.connect(m, engine.cfg, grid.cfg)
    if hasattr(grid, "limit"):
        limit = Signal.like(grid.limit)
        with m.If(grid_rst):
            m.d.sync += limit.eq(0)
        with m.Elif(engine.step):
            m.d.sync += limit.eq(limit + 1)
        m.d.comb += [grid.limit.eq(limit),
                     engine.busy.eq(engine.step | (grid.subcycle != limit))]
    else:
        m.d.comb += grid.step.eq(engine.step)
    m.d.comb += engine.subcycle.eq(grid.subcycle)
    wiring.connect(m, engine.edges_in, grid.i)
    wiring.connect(m, grid.o, engine.edges_out)
