"""The multiplexed engine: a BitGrid whose cell configurations and cell outputs live in block
RAM, evaluated a few cells per clock (SPEC section 7, "Engines").

:class:`MultiplexedGrid` has the signature of :class:`bitgrid.hdl.grid.Grid` (edge buses,
``step`` / ``step_ready``, ``phase``, ``subcycle``, the configuration port) and the same
behaviour at those members at every subcycle; only the clocks a step takes differ.
"""

import math
import types

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory

from bitgrid.checks import check_bool, check_int
from bitgrid.config import Configuration, check_grid_size
from .config_gate import config_gate, record_bytes
from .grid import grid_members
from .spram import ConfigBank, uses_spram

__all__ = ["MultiplexedGrid", "check_evaluators"]


def check_evaluators(evaluators, width):
    """``evaluators`` if it is an integer from 2 to ``width / 2`` (a row holds ``width / 2``
    cells of one parity), else :class:`ValueError` naming the value."""
    return check_int(evaluators, "evaluators", minimum=2, maximum=max(2, width // 2))


def _delayed(m, platform, value, n, advance, name):
    """``value`` as it was ``n`` clocks with ``advance`` high ago (``n`` registers loaded on
    ``advance``), added to module ``m``. From ``n = 4`` on it is a memory of ``n - 1`` words
    (written and read at one pointer, the read returning the old word), in block RAM on iCE40,
    which has no LUT RAM: the line buffers would otherwise be ``4 * evaluators`` flip-flops
    per clock of delay. Read latency is that of the registers it replaces."""
    if n < 4:
        for i in range(n):
            register = Signal(len(value), name=f"{name}_{i}")
            with m.If(advance):
                m.d.sync += register.eq(value)
            value = register
        return value
    from amaranth.vendor import SiliconBluePlatform
    from .host.framing import BLOCK_RAM
    attrs = BLOCK_RAM if isinstance(platform, SiliconBluePlatform) else {}
    m.submodules[name] = memory = Memory(shape=len(value), depth=n - 1, init=[], attrs=attrs)
    write, read = memory.write_port(), memory.read_port(domain="sync")
    pointer = Signal(range(n - 1), name=f"{name}_pointer")
    m.d.comb += [write.addr.eq(pointer), write.data.eq(value), write.en.eq(advance),
                 read.addr.eq(pointer), read.en.eq(advance)]
    with m.If(advance):
        m.d.sync += pointer.eq(Mux(pointer == n - 2, 0, pointer + 1))
    return read.data


class MultiplexedGrid(wiring.Component):
    """A ``width`` x ``height`` BitGrid kept in block RAM: ``evaluators`` cells are computed per
    clock (SPEC section 7).

    Storage: the cells are spread over ``evaluators`` banks. Cell ``(x, y)`` with ``k = x // 2``
    and ``q = x % 2`` lives in bank ``(k + q) % evaluators`` at slot
    ``((y * 2 + q) * groups + k // evaluators)``, ``groups = ceil(width / 2 / evaluators)``
    rounded up to a power of two. Each bank has a configuration memory of ``16 * slots``
    words of 4 bits (word ``16 * slot + a`` is LUT address ``a`` of the cell: bit ``d`` is bit
    ``a`` of ``LUT[d]``; on iCE40 one SB_SPRAM256KA per bank, see :mod:`bitgrid.hdl.spram`) and
    an output memory of ``slots`` words of 4 bits (the cell's registered outputs N, E, S, W;
    one read and one write port, EBR / DP16KD / BSRAM).

    A subcycle of parity ``p`` streams the rows: in clock ``r * groups + g`` the output
    memories are read at the cells of parity ``1 - p`` of row ``r``, group ``g`` (one read per
    bank); a delay line of ``2 * groups + 1`` groups holds the rows ``r - 1`` and ``r - 2`` (the
    line buffers), so that the ``evaluators`` cells of parity ``p`` of row ``r - 1`` group
    ``g`` get all four inputs without another read; each evaluator reads its cell's
    configuration word at the LUT address its inputs make, and a cycle later writes the cell's
    outputs back in place (a phase reads only cells of the other parity). A subcycle takes
    :attr:`cycles_per_subcycle` clocks: ``(height + 1) * groups + 3``.

    Timing at the members (SPEC sections 4 and 7): a step is accepted on a clock where
    :attr:`step`, :attr:`step_ready` and ``cfg.valid`` are high; the edge inputs of that
    clock are latched; :attr:`step_ready` is low from the next clock until the subcycle's
    outputs are on :attr:`o` and :attr:`subcycle` has advanced. A step while ``cfg.valid`` is
    low is ignored (as by :class:`~bitgrid.hdl.grid.Grid`). Sync reset clears every output and
    the counter, not the configuration: after a reset the output memories are cleared, one
    slot a clock, if a subcycle has written them since they were last clear (at power-up they
    are): :attr:`step_ready` is low for those :attr:`slots` clocks (plus one) after such a
    reset. The E and W output registers turn while a subcycle runs (one lane a row, see the
    code); after an abandoned subcycle :attr:`step_ready` stays low until they have turned
    back, at most ``height`` clocks.

    Configuration port: the contract of :class:`~bitgrid.hdl.grid.ConfigSignature` (the CRC
    gate of :func:`bitgrid.hdl.config_gate.config_gate`; a frame goes into the banks two cells
    per cycle while its record runs through the CRC, so ``w_ready`` has the direct grid's
    timing). Readback: after ``row`` / ``addr`` change, the frame is gathered two cells per
    cycle, ``r_ready`` high ``width / 2 + 4`` cycles after they were first presented (low
    meanwhile); a frame write, ``begin`` or a step during a gather restarts it. The gather
    shifts into the gate's record register (idle between records), so the frame path holds
    one frame-wide register, not two. On iCE40
    SPRAM (undefined at power-up) ``cfg.valid`` is low until the first good load. A write or ``begin`` while a subcycle runs abandons the
    subcycle (the configuration is being replaced; the counter does not advance).

    Parameters
    ----------
    width, height : int
        Size in cells, even and at least 2.
    evaluators : int
        Cells computed per clock, 2 to ``width / 2`` (default 2).
    init : :class:`bitgrid.Configuration` or None
        Configuration present after power-up (default: all cells unconfigured).
    counter_width : int
        Width of :attr:`subcycle` in bits (default 32).
    latch_edges : bool
        Latch the edge inputs at the accepting clock (default). False saves ``2 * (width +
        height)`` flip-flops where the driver holds the edge inputs until ``step_ready`` is
        high again (the host protocol engine does: its edge inputs are registers that change
        only between requests); the contract then requires that.

    Members
    -------
    i, o, step, step_ready, phase, subcycle, cfg
        As :class:`~bitgrid.hdl.grid.Grid`.

    Raises
    ------
    GridSizeError
        For an odd, zero or negative size.
    ValueError
        For an ``evaluators`` out of range or an ``init`` of another size.
    """

    engine = "multiplexed"

    def __init__(self, width, height, *, evaluators=2, init=None, counter_width=32,
                 latch_edges=True):
        self._width, self._height = check_grid_size(width, height)
        self._evaluators = check_evaluators(evaluators, self._width)
        if init is None:
            init = Configuration(self._width, self._height)
        if not isinstance(init, Configuration):
            raise TypeError(f"init must be a Configuration, not {init!r}")
        if (init.width, init.height) != (self._width, self._height):
            raise ValueError(f"init is a {init.width} x {init.height} configuration, the grid "
                             f"is {self._width} x {self._height}")
        self._init = init.copy()
        counter_width = check_int(counter_width, "counter_width", minimum=1)
        self._latch_edges = check_bool(latch_edges, "latch_edges")
        half = self._width // 2
        self._group_bits = max(0, math.ceil(math.log2(math.ceil(half / self._evaluators))))
        super().__init__(grid_members(width, height, counter_width))

    width = property(lambda self: self._width)
    height = property(lambda self: self._height)
    evaluators = property(lambda self: self._evaluators)

    @property
    def init(self):
        """The power-up :class:`~bitgrid.Configuration` (a copy)."""
        return self._init.copy()

    @property
    def groups(self):
        """Clocks per row in a subcycle: ``ceil(width / 2 / evaluators)`` rounded up to a power
        of two."""
        return 1 << self._group_bits

    @property
    def slots(self):
        """Cells per bank (with padding): ``height * 2 * groups``."""
        return self._height * 2 * self.groups

    @property
    def cycles_per_subcycle(self):
        """Clocks from an accepted step to :attr:`step_ready` high again."""
        return (self._height + 1) * self.groups + 3

    @property
    def record_bytes(self):
        return record_bytes(self._width)

    def place(self, x, y):
        """``(bank, slot)`` of cell ``(x, y)`` (see the class docstring)."""
        k, q = divmod(x, 2)
        e = self._evaluators
        return (k + q) % e, (y * 2 + q) * self.groups + k // e

    def _config_init(self):
        """Initial contents of each bank's configuration memory (4-bit words)."""
        banks = [[0] * (16 * self.slots) for _ in range(self._evaluators)]
        for y in range(self._height):
            for x in range(self._width):
                word = self._init.word(x, y)
                bank, slot = self.place(x, y)
                for a in range(16):
                    banks[bank][16 * slot + a] = (word >> (4 * a)) & 0xF
        return banks

    def elaborate(self, platform):
        m = Module()
        w, h, e = self._width, self._height, self._evaluators
        gb = self._group_bits
        groups = self.groups
        cfg = self.cfg
        contents = self._config_init()
        # SPRAM banks have undefined power-up contents: nothing runs before a load.
        spram = uses_spram(platform, 16 * self.slots, contents[0])
        gate = config_gate(m, cfg, w, valid_init=not spram)

        # --- The banks -------------------------------------------------------------------------
        conf = []
        outs_w, outs_r = [], []
        for b, words in enumerate(contents):
            bank = ConfigBank(depth=16 * self.slots, init=words)
            m.submodules[f"config_{b}"] = bank
            conf.append(bank)
            mem = Memory(shape=4, depth=self.slots, init=[])
            m.submodules[f"outputs_{b}"] = mem
            outs_w.append(mem.write_port())
            outs_r.append(mem.read_port(domain="sync"))

        def slot_of(y, q, g):
            return Cat(g[:gb] if gb else Const(0, 0), q, y)

        # --- Stepping --------------------------------------------------------------------------
        subcycle = Signal.like(self.subcycle)
        m.d.comb += [self.subcycle.eq(subcycle), self.phase.eq(subcycle[0])]
        ein = Signal(2 * (w + h))                      # edge inputs latched at the step
        if not self._latch_edges:                      # held by the driver instead
            ein = Cat(self.i.n, self.i.e, self.i.s, self.i.w)
        e_n, e_e, e_s, e_w = (ein[:w], ein[w:w + h], ein[w + h:2 * w + h], ein[2 * w + h:])
        o_regs = [Signal(len(getattr(self.o, s)), name=f"o_{s}") for s in "nesw"]
        m.d.comb += [getattr(self.o, s).eq(r) for s, r in zip("nesw", o_regs)]
        # After a reset the sequencer clears the output memories (state CLEAR) if a subcycle
        # wrote them since they were last clear (``dirty``, which a reset keeps), so that every
        # output reads as 0 (SPEC section 4) with no per-row "written" flags to decode;
        # ``settled``: cleared, or stepped, since the reset.
        dirty = Signal(reset_less=True)
        settled = Signal()
        clear = Signal(range(self.slots))

        p = Signal()                                   # parity of the running subcycle
        r = Signal(range(h + 1))                       # stage 0: row read
        g = Signal(max(gb, 1))                         # stage 0: group
        running = Signal()                             # stage 0 active
        abort = Signal()
        m.d.comb += abort.eq(gate.write | cfg.begin)

        # Stage 0: read the other-parity cells of row r (x parity 1 - ((p + r) & 1)).
        qi0 = Signal()                                 # x parity of those cells
        m.d.comb += qi0.eq(~(p ^ r[0]))
        for b in range(e):
            m.d.comb += outs_r[b].addr.eq(slot_of(r, qi0, g))
        # Stage 1 registers.
        s1 = dict(valid=Signal(name="s1_valid"), r=Signal(range(h + 1), name="s1_r"),
                  g=Signal(max(gb, 1), name="s1_g"), live=Signal(name="s1_live"),
                  q=Signal(name="s1_q"), last=Signal(name="s1_last"))
        last0 = Signal()
        m.d.comb += last0.eq((r == h) & (g == groups - 1))
        m.d.sync += [s1["valid"].eq(running & ~abort), s1["r"].eq(r), s1["g"].eq(g),
                     s1["q"].eq(qi0), s1["last"].eq(last0), s1["live"].eq(r < h)]

        # Stage 1: the fresh group (row r), rotated from bank order to evaluator order: the
        # cell of evaluator j (k = g * e + j, x parity qi) is in bank (j + qi) % e.
        fresh = []
        for j in range(e):
            word = Signal(4, name=f"fresh_{j}")
            m.d.comb += word.eq(Mux(s1["q"], outs_r[(j + 1) % e].data, outs_r[j].data)
                                & Mux(s1["live"], 0xF, 0))
            fresh.append(word)
        fresh_word = Cat(fresh)
        # The line buffers: delay[d] is the group streamed d clocks ago, for the d the cells
        # read (0, groups - 1, groups, groups + 1, 2 * groups); long stretches in block RAM.
        advance = s1["valid"]
        delay = {0: fresh_word}
        delay[groups - 1] = _delayed(m, platform, fresh_word, groups - 1, advance, "line_a")
        delay[groups] = _delayed(m, platform, delay[groups - 1], 1, advance, "line_b")
        delay[groups + 1] = _delayed(m, platform, delay[groups], 1, advance, "line_c")
        delay[2 * groups] = _delayed(m, platform, delay[groups + 1], groups - 1, advance,
                                     "line_d")

        def cell(d, j):
            """Outputs (4 bits) of evaluator j's cell in the group ``d`` clocks back."""
            return delay[d][4 * j:4 * j + 4]

        # The cells computed: row y = r - 1, x parity qa = s1_q (the fresh cells' parity),
        # their row-y neighbours have parity 1 - qa.
        y1 = Signal(range(h + 1))
        m.d.comb += y1.eq(s1["r"] - 1)
        qa, g1 = s1["q"], s1["g"]
        compute = Signal()
        m.d.comb += compute.eq(s1["valid"] & (s1["r"] != 0))
        ins, kvalid = self._lut_inputs(m, cell, s1, y1, (e_n, e_e, e_s, e_w))

        # Stage 2 registers: what the configuration read returns belongs to these.
        s2 = dict(valid=Signal(name="s2_valid"), y=Signal(range(h + 1), name="s2_y"),
                  g=Signal(max(gb, 1), name="s2_g"), q=Signal(name="s2_q"),
                  last=Signal(name="s2_last"))
        s2_kvalid = Signal(e)
        m.d.sync += [s2["valid"].eq(compute & ~abort), s2["y"].eq(y1), s2["g"].eq(g1),
                     s2["q"].eq(qa), s2["last"].eq(s1["last"] & s1["valid"] & ~abort),
                     s2_kvalid.eq(Cat(kvalid))]

        # Configuration reads (stage 1 -> data in stage 2), frame writes and readback gathers
        # share each bank's one port: writes (they override, below), evaluation, gathers.
        stepping = Signal()                            # the sequencer is in RUN or DRAIN
        gather = self._readback(m, gate, conf, stepping)
        for b in range(e):
            # Evaluator j = (b - qa) % e uses bank b.
            j0, j1 = b % e, (b - 1) % e
            eval_addr = Mux(qa, Cat(ins[j1], slot_of(y1, qa, g1)),
                            Cat(ins[j0], slot_of(y1, qa, g1)))
            with m.If(compute):
                m.d.comb += conf[b].addr.eq(eval_addr)
            with m.Else():
                m.d.comb += conf[b].addr.eq(gather.addr[b])
        self._frame_writes(m, gate, conf)

        # Stage 2: the LUT outputs, written back in place and to the edge output registers.
        results = []
        for j in range(e):
            word = Signal(4, name=f"out_{j}")
            m.d.comb += word.eq(Mux(s2["q"], conf[(j + 1) % e].r_data, conf[j].r_data))
            results.append(word)
        for b in range(e):
            j0, j1 = b % e, (b - 1) % e
            m.d.comb += [
                outs_w[b].addr.eq(slot_of(s2["y"], s2["q"], s2["g"])),
                outs_w[b].data.eq(Mux(s2["q"], results[j1], results[j0])),
                outs_w[b].en.eq(s2["valid"] & Mux(s2["q"], s2_kvalid[j1], s2_kvalid[j0])),
            ]
        aligned = self._edge_output_registers(m, o_regs, s2, results, stepping)

        # The sequencer: CLEAR after reset, IDLE (step_ready), then stage 0 over rows
        # 0 .. height and groups, and DRAIN.
        accept = Signal()
        m.d.comb += accept.eq(self.step & self.step_ready & gate.valid)
        with m.If(s2["valid"]):
            m.d.sync += dirty.eq(1)
        with m.FSM() as fsm:
            with m.State("IDLE"):
                m.d.comb += self.step_ready.eq((settled | ~dirty) & aligned)
                with m.If(dirty & ~settled):
                    m.d.sync += clear.eq(0)
                    m.next = "CLEAR"
                with m.Elif(accept & ~abort):
                    m.d.sync += settled.eq(1)
                    if self._latch_edges:
                        m.d.sync += ein.eq(Cat(self.i.n, self.i.e, self.i.s, self.i.w))
                    m.d.sync += [p.eq(subcycle[0]), r.eq(0), g.eq(0)]
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += running.eq(1)
                with m.If(abort):
                    m.next = "IDLE"
                with m.Elif(last0):
                    m.next = "DRAIN"
                with m.Else():
                    m.d.sync += g.eq(g + 1)
                    with m.If(g == groups - 1):
                        m.d.sync += [g.eq(0), r.eq(r + 1)]
            with m.State("DRAIN"):
                with m.If(abort):
                    m.next = "IDLE"
                with m.Elif(s2["last"]):
                    m.d.sync += subcycle.eq(subcycle + 1)
                    m.next = "IDLE"
            with m.State("CLEAR"):
                for b in range(e):
                    m.d.comb += [outs_w[b].addr.eq(clear), outs_w[b].data.eq(0),
                                 outs_w[b].en.eq(1)]
                m.d.sync += clear.eq(clear + 1)
                with m.If(clear == self.slots - 1):
                    m.d.sync += [dirty.eq(0), settled.eq(1)]
                    m.next = "IDLE"
        m.d.comb += stepping.eq(fsm.ongoing("RUN") | fsm.ongoing("DRAIN"))
        return m

    def _frame_writes(self, m, gate, conf):
        """Frame writes: while a frame's record runs through the CRC, its byte ``3 + c`` (cells
        ``2c`` and ``2c + 1``, x parities 0 and 1, so banks ``c % e`` and ``(c + 1) % e``) is
        written into the two banks."""
        w, e, gb = self._width, self._evaluators, self._group_bits
        nbytes = record_bytes(w)
        cfg = self.cfg
        row, addr = Signal.like(cfg.row), Signal(4)
        with m.If(gate.write):
            m.d.sync += [row.eq(cfg.row), addr.eq(cfg.addr)]
        c_bank = Signal(range(e))                      # c % e
        c_group = Signal(max(gb, 1))                   # c // e
        index = Signal(range(nbytes + 1))
        m.d.comb += index.eq(nbytes - gate.remaining)
        frame_byte = Signal()
        m.d.comb += frame_byte.eq((gate.remaining != 0) & (index >= 3))
        with m.If(gate.write):
            m.d.sync += [c_bank.eq(0), c_group.eq(0)]
        with m.Elif(frame_byte):
            with m.If(c_bank == e - 1):
                m.d.sync += [c_bank.eq(0), c_group.eq(c_group + 1)]
            with m.Else():
                m.d.sync += c_bank.eq(c_bank + 1)
        byte = gate.record[:8]
        for b in range(e):
            for q in (0, 1):
                with m.If(frame_byte & (c_bank == (b - q) % e)):
                    slot = Cat(c_group[:gb] if gb else Const(0, 0), Const(q, 1), row)
                    m.d.comb += [conf[b].addr.eq(Cat(addr, slot)),
                                 conf[b].w_data.eq(byte[4 * q:4 * q + 4]),
                                 conf[b].w_en.eq(1)]

    def _lut_inputs(self, m, cell, s1, y1, edges):
        """The 4 LUT inputs (N, E, S, W) of each evaluator's cell in stage 1, row ``y1``, from
        the line buffers (``cell(d, j)``: evaluator j's cell ``d`` groups back) or the edge
        buses ``edges`` (N, E, S, W words): ``(ins, kvalid)``, a 4-bit signal per evaluator
        and whether its cell exists (``k < width / 2``)."""
        w, h, e = self._width, self._height, self._evaluators
        half, gb, groups = w // 2, self._group_bits, self.groups
        e_n, e_e, e_s, e_w = edges
        qa, g1 = s1["q"], s1["g"]
        ins, kvalid = [], []

        def edge_lane(bus, j):
            """Lane x of an N or S edge bus for evaluator j: a (2 * groups):1 choice by
            (g, qa) among the lanes that evaluator can meet, not a width:1 one."""
            lanes = [bus[2 * (gx * e + j) + q] if 2 * (gx * e + j) + q < w else Const(0, 1)
                     for gx in range(groups) for q in (0, 1)]
            return Cat(lanes).bit_select(Cat(qa, g1[:gb]) if gb else qa, 1)

        for j in range(e):
            k = Signal(range(groups * e), name=f"k_{j}")
            m.d.comb += k.eq(g1 * e + j if gb else j)
            x = Signal(range(w + 1), name=f"x_{j}")
            m.d.comb += x.eq(Cat(qa, k))
            # N: output S of (x, y - 1) (two rows back), or the N edge.
            n_in = Mux(y1 == 0, edge_lane(e_n, j), cell(2 * groups, j)[2])
            # S: output N of (x, y + 1) (the fresh row), or the S edge.
            s_in = Mux(s1["r"] == h, edge_lane(e_s, j), cell(0, j)[0])
            # W: output E of (x - 1, y): same k if qa = 1, else k - 1.
            if j > 0:
                west_even = cell(groups, j - 1)[1]
            else:
                west_even = cell(groups + 1, e - 1)[1]
            w_in = Mux(qa, cell(groups, j)[1],
                       Mux(k == 0, e_w.bit_select(y1[:max(1, (h - 1).bit_length())], 1),
                           west_even))
            # E: output W of (x + 1, y): same k if qa = 0, else k + 1.
            if j < e - 1:
                east_odd = cell(groups, j + 1)[3]
            else:
                east_odd = cell(groups - 1, 0)[3]
            e_in = Mux(~qa, cell(groups, j)[3],
                       Mux(k == half - 1, e_e.bit_select(y1[:max(1, (h - 1).bit_length())], 1),
                           east_odd))
            lut_in = Signal(4, name=f"in_{j}")
            m.d.comb += lut_in.eq(Cat(n_in, e_in, s_in, w_in))
            ins.append(lut_in)
            kv = Signal(name=f"kvalid_{j}")
            m.d.comb += kv.eq(k < half)
            kvalid.append(kv)
        return ins, kvalid

    def _edge_output_registers(self, m, o_regs, s2, results, stepping):
        """Stage 2 into the edge output registers ``o_regs`` (N, E, S, W): N and S lanes
        written where their cell is computed; E and W rotating registers (below). Returns
        ``aligned``: both rotating registers back at lane 0."""
        w, h, e = self._width, self._height, self._evaluators
        gb = self._group_bits
        for x in range(w):
            k, q = divmod(x, 2)
            gx, j = divmod(k, e)
            here = s2["valid"] & (s2["q"] == q) & (s2["g"] == gx if gb else 1)
            with m.If(here & (s2["y"] == 0)):
                m.d.sync += o_regs[0][x].eq(results[j][0])
            with m.If(here & (s2["y"] == h - 1)):
                m.d.sync += o_regs[2][x].eq(results[j][2])
        # E and W: a lane a row, and the rows come in order, so each is a rotating register
        # (one clock enable, no per-lane decoding): it turns by one lane when stage 2 is at its
        # boundary cell's group of a row, taking the computed output if that cell has the
        # row's parity, else its own old lane. A whole subcycle turns it all the way round;
        # after an abandoned one it turns the rest of the way with its old lanes while the
        # sequencer is not stepping (``aligned`` low, and step_ready with it, meanwhile).
        aligned = Signal()
        turns = []
        for x, side, bit in ((w - 1, 1, 1), (0, 3, 3)):
            k, q = divmod(x, 2)
            gx, j = divmod(k, e)
            lanes = o_regs[side]
            turn = Signal(range(h), name=f"turn_{'nesw'[side]}")
            at = Signal(name=f"at_{'nesw'[side]}")
            m.d.comb += at.eq(s2["valid"] & (s2["g"] == gx if gb else 1))
            with m.If(at | (~stepping & (turn != 0))):
                m.d.sync += [
                    lanes.eq(Cat(lanes[1:], Mux(at & (s2["q"] == q), results[j][bit],
                                                lanes[0]))),
                    turn.eq(Mux(turn == h - 1, 0, turn + 1)),
                ]
            turns.append(turn)
        m.d.comb += aligned.eq((turns[0] == 0) & (turns[1] == 0))
        return aligned

    def _readback(self, m, gate, conf, running):
        """The readback gather: two cells a cycle (as the frame writes) from the banks into
        ``cfg.r_data``; ``cfg.r_ready`` once the frame at the presented row/addr is whole.
        Returns a namespace with ``addr[b]``, the gather's address for bank ``b``."""
        w, e, gb = self._width, self._evaluators, self._group_bits
        half = w // 2
        cfg = self.cfg
        rb = types.SimpleNamespace(addr=[Signal(len(conf[b].addr), name=f"rb_addr_{b}")
                                         for b in range(e)])
        tag_row, tag_addr = Signal.like(cfg.row), Signal(4)
        done = Signal()                                # r_data holds the frame at the tag
        busy = Signal()                                # a gather is running
        c = Signal(range(half + 1))
        c_bank = Signal(range(e))
        c_group = Signal(max(gb, 1))
        pending = Signal(2)                            # reads in flight: cells 2c, 2c+1 next cycle
        same = Signal()
        m.d.comb += same.eq((tag_row == cfg.row) & (tag_addr == cfg.addr))
        blocked = Signal()
        m.d.comb += blocked.eq((gate.remaining != 0) | gate.write | cfg.begin | running)
        # The read issued this cycle (cells 2c and 2c + 1) arrives next cycle.
        issued = Signal()
        m.d.comb += issued.eq(busy & ~blocked & (c < half))
        got_bank = Signal(range(e))
        with m.If(issued):
            m.d.sync += got_bank.eq(c_bank)
        m.d.sync += pending.eq(issued)
        for b in range(e):
            for q in (0, 1):
                with m.If(c_bank == (b - q) % e):
                    slot = Cat(c_group[:gb] if gb else Const(0, 0), Const(q, 1), tag_row)
                    m.d.comb += rb.addr[b].eq(Cat(tag_addr, slot))
        # The data of the previous cycle's read.
        data0 = Signal(4)
        data1 = Signal(4)
        with m.Switch(got_bank):
            for b in range(e):
                with m.Case(b):
                    m.d.comb += [data0.eq(conf[b].r_data), data1.eq(conf[(b + 1) % e].r_data)]
        # The gather shifts into the gate's record register (idle while no record runs, as
        # ``blocked`` says): after ``width / 2`` bytes its top ``4 * width`` bits are the frame.
        with m.If(pending[0] & ~blocked):
            m.d.sync += gate.record.eq(Cat(gate.record[8:], data0, data1))
        m.d.comb += cfg.r_data.eq(gate.record[-4 * w:])

        r_ready = Signal()
        m.d.comb += cfg.r_ready.eq(r_ready)
        m.d.sync += r_ready.eq(done & same & ~blocked)
        with m.If(blocked | ~same):
            # Restart: a write or step may change the banks; a new address needs a new gather.
            m.d.sync += [done.eq(0), busy.eq(0)]
            with m.If(~blocked):
                m.d.sync += [tag_row.eq(cfg.row), tag_addr.eq(cfg.addr), busy.eq(1),
                             c.eq(0), c_bank.eq(0), c_group.eq(0)]
        with m.Elif(busy):
            with m.If(issued):
                m.d.sync += c.eq(c + 1)
                with m.If(c_bank == e - 1):
                    m.d.sync += [c_bank.eq(0), c_group.eq(c_group + 1)]
                with m.Else():
                    m.d.sync += c_bank.eq(c_bank + 1)
            with m.Elif(~pending[0]):
                m.d.sync += [busy.eq(0), done.eq(1)]
        with m.Elif(~done):
            m.d.sync += [busy.eq(1), c.eq(0), c_bank.eq(0), c_group.eq(0)]
        return rb
