"""The link layer of the inter-chip link (SPEC section 8): frames with a sequence number, a
cumulative acknowledgement and a CRC, go-back-N retransmission from a replay buffer, and credit.

The frame format and its Python codec are :mod:`bitgrid.protocol.link`; :class:`LinkLayer`
sends exactly the symbols of :func:`bitgrid.protocol.link.encode_data` and
:func:`bitgrid.protocol.link.encode_ack`. Its frames go through the CRC stream stages of
:mod:`bitgrid.hdl.stream` (:data:`~bitgrid.protocol.link.LINK_FRAME_CRC`).
"""

import types

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.checks import check_choice, check_int
from bitgrid.hdl.stream import CRCAppender, CRCVerifier
from bitgrid.protocol.link import LINK_FRAME_CRC, FrameKind, check_payload_bits, payload_bytes

from . import SymbolStream

__all__ = ["LinkLayer", "COUNTERS", "REPLAY_DEPTHS"]

#: The replay buffer depths :class:`LinkLayer` accepts (powers of two).
REPLAY_DEPTHS = (2, 4, 8, 16, 32, 64)

#: Names of the counters of :class:`LinkLayer` (16 bits each, saturating).
COUNTERS = ("frames_sent", "retransmits", "timeouts", "crc_errors", "sequence_errors",
            "acks_sent")


def _count_up(counter):
    """Increment a 16-bit counter that saturates at 0xFFFF."""
    return counter.eq(counter + (counter != 0xFFFF))


def _distance(a, b):
    """``(a - b) mod 256``."""
    return (a - b)[:8]


class LinkLayer(wiring.Component):
    """One end of a link: sends payloads in DATA frames on :attr:`tx`, receives the partner's
    frames on :attr:`rx`, and delivers the partner's payloads on :attr:`recv` exactly once and in
    order, or stalls; it never skips or invents one. All in domain ``sync``.

    Protocol (go-back-N, frame format in :mod:`bitgrid.protocol.link`):

    * each payload accepted on :attr:`send` gets the next sequence number (0 after reset, modulo
      256) and a slot in the replay buffer (an :class:`amaranth.lib.memory.Memory` of
      ``replay_depth`` entries with a synchronous read port, so block RAM where it is large
      enough) until the partner acknowledges it;
    * every frame carries the cumulative acknowledgement (the sequence number this end expects
      next) of the cycle before its first symbol is valid. After any good DATA frame (in order,
      duplicate or out of order) an acknowledgement goes out: on the next DATA frame if one is
      waiting, else in an ACK frame;
    * a good frame carrying acknowledgement ``A`` frees the slots before ``A``; an ``A`` outside
      the frames sent so far is ignored;
    * if frames have been put on the line and are unacknowledged, and no acknowledgement frees a
      slot for ``timeout`` cycles, every unacknowledged frame is sent again, oldest first (one
      count of :attr:`timeouts`, one count of :attr:`retransmits` per frame sent again).
      ``timeout`` must exceed the round trip time of a frame (its length, the line delay both
      ways and the partner's longest frame), otherwise the link still works but retransmits
      needlessly. The timer also runs while :attr:`tx` is not ready;
    * a received frame is checked by its CRC; a control symbol inside a frame aborts it (and, if
      it is DATA or ACK, opens the next frame); a good DATA frame whose sequence number is not
      the expected one is discarded. Other control codes (0x00, 0x03..0x7f) and data symbols
      outside a frame are ignored.

    Frames on :attr:`tx` follow each other without a gap; within a frame ``valid`` stays high
    from the first symbol until the last is taken.

    Latency (cycles, with :attr:`tx` ready and nothing else to send):

    * :attr:`send` to :attr:`tx`: a payload taken on :attr:`send` in cycle ``t`` has its frame's
      first symbol valid on :attr:`tx` in cycle ``t + 2``; the frame lasts
      :func:`bitgrid.protocol.link.frame_symbols` cycles;
    * :attr:`rx` to :attr:`recv`: the payload of a frame whose last symbol is valid on :attr:`rx`
      in cycle ``t`` is valid on :attr:`recv` in cycle ``t + 1`` (for one cycle); the replay
      slots its acknowledgement frees show in :attr:`credit` (and :attr:`send` ``ready``) in
      cycle ``t + 2``;
    * an acknowledgement owed because of a frame whose last symbol arrived in cycle ``t`` opens
      an ACK frame on :attr:`tx` in cycle ``t + 3 + ack_delay`` at the earliest, or rides on the
      next DATA frame if one starts first (a delayed acknowledgement: in a mesh the tile's own
      DATA frame follows a few cycles after the neighbour's arrives, and a standalone ACK frame
      ahead of it would delay every subcycle by its four symbols).

    Parameters
    ----------
    payload_bits : int
        Bits of one payload, 1 to 64.
    replay_depth : int
        Frames that may be unacknowledged at once: one of :data:`REPLAY_DEPTHS`.
    timeout : int
        Retransmission timeout in cycles, at least 8.
    ack_delay : int
        Cycles an owed acknowledgement waits for a DATA frame to ride on before it goes out as an
        ACK frame (0 to 255, default 0).

    Members
    -------
    send : In(stream.Signature(payload_bits))
        Payloads to send, one per DATA frame. ``ready`` is low while the replay buffer is full
        (the credit: a slow or absent partner stalls the sender).
    recv : Out(stream.Signature(payload_bits, always_ready=True))
        The partner's payloads, exactly once and in order; ``valid`` is high for one cycle each.
    recv_seq : Out(8)
        Sequence number of the payload on :attr:`recv` (valid with it).
    tx : Out(:func:`~bitgrid.hdl.link.SymbolStream`)
        Symbols to the physical layer.
    rx : In(:func:`~bitgrid.hdl.link.SymbolStream` ``(always_ready=True)``)
        Symbols from the physical layer (its own control codes removed).
    credit : Out(range(replay_depth + 1))
        Free replay slots: payloads :attr:`send` takes before it stalls.
    frames_sent : Out(16)
        DATA frames begun on :attr:`tx`, first transmissions and retransmissions.
    retransmits : Out(16)
        DATA frames begun on :attr:`tx` that were sent before.
    timeouts : Out(16)
        Retransmission timeouts.
    crc_errors : Out(16)
        Received frames that failed their CRC or were cut short by a control symbol.
    sequence_errors : Out(16)
        Good DATA frames received with an unexpected sequence number (duplicates, or frames
        after a gap), discarded.
    acks_sent : Out(16)
        ACK frames begun on :attr:`tx`.

    All counters saturate at 0xFFFF and clear on reset.

    Raises
    ------
    ValueError
        For a ``payload_bits``, ``replay_depth``, ``timeout`` or ``ack_delay`` out of range.
    """

    def __init__(self, payload_bits, *, replay_depth=4, timeout=256, ack_delay=0):
        self._payload_bits = check_payload_bits(payload_bits)
        replay_depth = check_int(replay_depth, "replay_depth", minimum=2, maximum=64)
        check_choice(replay_depth, "replay_depth", REPLAY_DEPTHS)
        timeout = check_int(timeout, "timeout", minimum=8)
        ack_delay = check_int(ack_delay, "ack_delay", minimum=0, maximum=255)
        self._replay_depth = replay_depth
        self._timeout = timeout
        self._ack_delay = ack_delay
        super().__init__({
            "send": In(stream.Signature(payload_bits)),
            "recv": Out(stream.Signature(payload_bits, always_ready=True)),
            "recv_seq": Out(8),
            "tx": Out(SymbolStream()),
            "rx": In(SymbolStream(always_ready=True)),
            "credit": Out(range(replay_depth + 1)),
            **{name: Out(16) for name in COUNTERS},
        })

    @property
    def payload_bits(self):
        return self._payload_bits

    @property
    def replay_depth(self):
        return self._replay_depth

    @property
    def timeout(self):
        return self._timeout

    def elaborate(self, platform):
        m = Module()
        s = types.SimpleNamespace()          # what the parts below share
        s.depth = self._replay_depth
        s.body = 2 + payload_bytes(self._payload_bits)   # DATA bytes between kind and CRC
        s.index_bits = s.depth.bit_length() - 1
        self._replay_buffer(m, s)
        self._receiver(m, s)
        self._transmitter(m, s)
        self._pointers(m, s)
        return m

    def _replay_buffer(self, m, s):
        """Sequence state and the replay buffer, written from :attr:`send`."""
        # --- Transmit state -----------------------------------------------------------------------
        s.next_seq = Signal(8)     # sequence number of the next payload taken on `send`
        s.base = Signal(8)         # oldest unacknowledged sequence number
        s.send_ptr = Signal(8)     # next sequence number to put on the line
        s.fresh = Signal(8)        # first sequence number never put on the line
        s.expected = Signal(8)     # next sequence number to receive (our cumulative ack)
        s.ack_pending = Signal()
        s.ack_wait = Signal(8)     # cycles before an owed ack may go out on its own
        s.rewind = Signal()
        s.timer = Signal(range(self._timeout), init=self._timeout - 1)

        # --- Replay buffer ------------------------------------------------------------------------
        m.submodules.replay = replay = Memory(shape=self._payload_bits, depth=s.depth, init=[])
        wr = replay.write_port()
        s.rd = replay.read_port()             # read on opening a frame, used in state KIND

        used = Signal(range(s.depth + 1))
        m.d.comb += [
            used.eq(_distance(s.next_seq, s.base)),
            self.credit.eq(s.depth - used),
            self.send.ready.eq(used != s.depth),
            wr.addr.eq(s.next_seq[:s.index_bits]),
            wr.data.eq(self.send.payload),
            wr.en.eq(self.send.valid & self.send.ready),
        ]
        with m.If(self.send.valid & self.send.ready):
            m.d.sync += s.next_seq.eq(s.next_seq + 1)

    def _receiver(self, m, s):
        """Received frames: parsed, checked, delivered; acknowledgements taken."""
        # --- Receiver: parse, check, deliver ------------------------------------------------------
        # The CRC of a frame runs from its kind byte (the control symbol) to its last byte.
        m.submodules.rx_crc = rx_crc = CRCVerifier(LINK_FRAME_CRC.algorithm)
        rbuf = Signal(8 * (s.body + 2))       # received bytes, shifted in from the top
        in_frame = Signal()
        s.rx_is_data = Signal()
        rcount = Signal(range(s.body + 3))    # bytes after the kind byte received so far
        check = Signal()                    # the previous cycle completed a frame

        symbol = self.rx.payload
        is_kind = symbol.ctrl & ((symbol.data == FrameKind.DATA) | (symbol.data == FrameKind.ACK))
        truncated = Signal()
        m.d.sync += check.eq(0)
        with m.If(self.rx.valid):
            with m.If(symbol.ctrl):
                m.d.comb += truncated.eq(in_frame)
                m.d.sync += [in_frame.eq(is_kind), rcount.eq(0),
                             s.rx_is_data.eq(symbol.data == FrameKind.DATA)]
                # Every control symbol restarts the CRC: a kind byte as the first word of a frame,
                # any other (IDLE, an invalid symbol) as a token that abandons the frame.
                m.d.comb += [rx_crc.i.valid.eq(1), rx_crc.i.payload.first.eq(1),
                             rx_crc.i.payload.end.eq(~is_kind)]
            with m.Elif(in_frame):
                m.d.comb += rx_crc.i.valid.eq(1)
                m.d.sync += [rbuf.eq(Cat(rbuf[8:], symbol.data)), rcount.eq(rcount + 1)]
                with m.If(rcount == Mux(s.rx_is_data, s.body + 1, 2)):
                    m.d.sync += [in_frame.eq(0), check.eq(1)]

        m.d.comb += [rx_crc.i.payload.data.eq(symbol.data), rx_crc.o.ready.eq(1)]

        def rbyte(index):
            return rbuf[8 * index:8 * index + 8]

        s.good = Signal()
        s.rx_seq = rbyte(0)
        rx_ack = Signal(8)
        m.d.comb += [
            s.good.eq(check & rx_crc.match),
            rx_ack.eq(Mux(s.rx_is_data, rbyte(1), rbyte(s.body - 1))),
            self.recv.payload.eq(rbuf[16:16 + self._payload_bits]),
            self.recv_seq.eq(s.rx_seq),
            self.recv.valid.eq(s.good & s.rx_is_data & (s.rx_seq == s.expected)),
        ]
        s.crc_error = truncated | (check & ~rx_crc.match)
        with m.If(self.recv.valid):
            m.d.sync += s.expected.eq(s.expected + 1)

        # Acknowledgements received: free the replay slots before rx_ack.
        s.new_base = Signal(8)
        s.progress = Signal()
        ack_span = _distance(rx_ack, s.base)
        m.d.comb += [
            s.progress.eq(s.good & (ack_span != 0) & (ack_span <= _distance(s.fresh, s.base))),
            s.new_base.eq(Mux(s.progress, rx_ack, s.base)),
        ]
        m.d.sync += s.base.eq(s.new_base)

    def _transmitter(self, m, s):
        """DATA and ACK frames out through the CRC appender."""
        # --- Transmitter --------------------------------------------------------------------------
        # Frames go out through the CRC appender: the kind byte is its first word (the control
        # symbol), the CRC its last two.
        m.submodules.tx_crc = tx_crc = CRCAppender(LINK_FRAME_CRC.algorithm)
        fbuf = Signal(8 * s.body)             # bytes of the frame after the kind byte
        tx_is_data = Signal()
        remaining = Signal(range(s.body + 1))   # bytes of fbuf still to send
        s.start_ok = Signal()                 # a frame may open on the next cycle
        s.sel_seq = Signal(8)
        have_data = Signal()
        s.open_data = Signal()
        open_ack = Signal()
        m.d.comb += [
            s.sel_seq.eq(Mux(s.rewind, s.base, s.send_ptr)),
            have_data.eq(s.sel_seq != s.next_seq),
            s.rd.addr.eq(s.sel_seq[:s.index_bits]),
            s.rd.en.eq(s.open_data),
            s.open_data.eq(s.start_ok & have_data),
            open_ack.eq(s.start_ok & ~have_data & s.ack_pending & (s.ack_wait == 0)),
        ]
        m.d.comb += [self.tx.valid.eq(tx_crc.o.valid),
                     self.tx.payload.data.eq(tx_crc.o.payload.data),
                     self.tx.payload.ctrl.eq(tx_crc.o.payload.first),
                     tx_crc.o.ready.eq(self.tx.ready)]
        taken = self.tx.valid & self.tx.ready

        with m.FSM(name="tx_fsm"):
            with m.State("IDLE"):
                m.d.comb += s.start_ok.eq(1)
                with m.If(s.open_data | open_ack):
                    m.next = "KIND"
            with m.State("KIND"):
                m.d.comb += [
                    tx_crc.i.valid.eq(1), tx_crc.i.payload.first.eq(1),
                    tx_crc.i.payload.data.eq(Mux(tx_is_data, FrameKind.DATA, FrameKind.ACK)),
                ]
                with m.If(tx_is_data):
                    m.d.sync += fbuf[16:].eq(s.rd.data)
                with m.If(taken):
                    m.next = "BODY"
            with m.State("BODY"):
                m.d.comb += [tx_crc.i.valid.eq(1), tx_crc.i.payload.data.eq(fbuf[:8]),
                             tx_crc.i.payload.last.eq(remaining == 1)]
                with m.If(taken):
                    m.d.sync += [fbuf.eq(fbuf >> 8), remaining.eq(remaining - 1)]
                    with m.If(remaining == 1):
                        m.next = "CRC"
            with m.State("CRC"):
                # The appender sends the CRC, high byte first.
                m.d.comb += s.start_ok.eq(taken & tx_crc.o.payload.last)
                with m.If(s.open_data | open_ack):     # the next frame follows without a gap
                    m.next = "KIND"
                with m.Elif(s.start_ok):
                    m.next = "IDLE"

        with m.If(s.open_data):
            m.d.sync += [
                tx_is_data.eq(1), remaining.eq(s.body),
                fbuf[:16].eq(Cat(s.sel_seq, s.expected)),
                _count_up(self.frames_sent),
            ]
            with m.If(s.sel_seq != s.fresh):
                m.d.sync += _count_up(self.retransmits)
        with m.Elif(open_ack):
            m.d.sync += [tx_is_data.eq(0), remaining.eq(1), fbuf.eq(s.expected),
                         _count_up(self.acks_sent)]
        with m.If(s.open_data | open_ack):
            m.d.sync += s.ack_pending.eq(0)
        with m.If(s.good & s.rx_is_data):
            m.d.sync += s.ack_pending.eq(1)
            with m.If(~s.ack_pending):
                m.d.sync += s.ack_wait.eq(self._ack_delay)
        with m.Elif(s.ack_wait != 0):
            m.d.sync += s.ack_wait.eq(s.ack_wait - 1)

    def _pointers(self, m, s):
        """The send pointer, the retransmission timer and the receive counters."""
        # Send pointer: advance, rewind, and never fall behind the oldest unacknowledged frame.
        ptr = Signal(8)
        m.d.comb += ptr.eq(Mux(s.start_ok, s.sel_seq, s.send_ptr))
        with m.If(s.open_data):
            m.d.comb += ptr.eq(s.sel_seq + 1)
            with m.If(s.sel_seq == s.fresh):
                m.d.sync += s.fresh.eq(s.fresh + 1)
        m.d.sync += s.send_ptr.eq(Mux(_distance(ptr, s.base) < _distance(s.new_base, s.base),
                                    s.new_base, ptr))
        with m.If(s.start_ok):
            m.d.sync += s.rewind.eq(0)

        # Retransmission timer: runs while frames on the line are unacknowledged.
        with m.If(s.progress | (s.fresh == s.base)):
            m.d.sync += s.timer.eq(self._timeout - 1)
        with m.Elif(s.timer == 0):
            m.d.sync += [s.timer.eq(self._timeout - 1), s.rewind.eq(1), _count_up(self.timeouts)]
        with m.Else():
            m.d.sync += s.timer.eq(s.timer - 1)

        # --- Receive counters ---------------------------------------------------------------------
        with m.If(s.crc_error):
            m.d.sync += _count_up(self.crc_errors)
        with m.If(s.good & s.rx_is_data & (s.rx_seq != s.expected)):
            m.d.sync += _count_up(self.sequence_errors)
