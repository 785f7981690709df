"""The BitGrid cell (SPEC section 3)."""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Mux, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.cell import word_to_tables
from bitgrid.terms import GATEWARE_STORAGES, check_storage
from .latch import latch_word

__all__ = ["Cell", "cell_module_name", "cell_instance", "check_cell_faults"]

#: Fault kinds of the test-only ``faults`` option (see :func:`check_cell_faults`).
FAULT_KINDS = ("stuck0", "stuck1", "lut")


def check_cell_faults(faults):
    """The test-only faults of one cell as a sorted tuple of ``(kind, output, address)``:
    ``kind`` ``"stuck0"`` or ``"stuck1"`` (output ``output`` is the constant 0 or 1 from reset
    on, ``address`` None) or ``"lut"`` (bit ``address`` of ``LUT[output]`` reads inverted when
    the cell updates; the readback shows the bit as loaded), ``output`` 0..3 (N, E, S, W),
    ``address`` 0..15. The model of the same faults is :mod:`bitgrid.faultmodel`.

    :raises ValueError: for an unknown kind, output or address, a repeated fault, or an output
        stuck at both values.
    """
    result = set()
    for fault in faults:
        try:
            kind, output, address = fault
        except (TypeError, ValueError):
            raise ValueError(f"A cell fault is (kind, output, address), not {fault!r}") from None
        if kind not in FAULT_KINDS:
            raise ValueError(f"Cell fault kind must be one of {', '.join(FAULT_KINDS)}, "
                             f"not {kind!r}")
        if isinstance(output, bool) or output not in range(4):
            raise ValueError(f"Cell fault output must be 0..3 (N, E, S, W), not {output!r}")
        if kind == "lut":
            if isinstance(address, bool) or address not in range(16):
                raise ValueError(f"A lut fault's address must be 0..15, not {address!r}")
        elif address is not None:
            raise ValueError(f"A {kind} fault has no address, not {address!r}")
        result.add((kind, int(output), None if address is None else int(address)))
    stuck = {}
    for kind, output, _ in result:
        if kind != "lut" and stuck.setdefault(output, kind) != kind:
            raise ValueError(f"Output {output} cannot be stuck at both 0 and 1")
    return tuple(sorted(result, key=lambda f: (f[1], f[0], -1 if f[2] is None else f[2])))


class Cell(wiring.Component):
    """One BitGrid cell: four 1-bit inputs, four registered 1-bit outputs, four 16-entry LUTs.

    Bit ``d`` of :attr:`i` and :attr:`o` is direction ``d`` (``N=0, E=1, S=2, W=3``); the LUT
    address is ``i`` itself (``N | E<<1 | S<<2 | W<<3``), and output ``d`` takes bit ``d`` of word
    ``i`` of the 16 x 4 configuration memory (the word view of SPEC section 3).

    Timing: on a clock edge where :attr:`en` is high, :attr:`o` takes the LUT outputs for the
    current :attr:`i`; latency one cycle. Sync reset clears :attr:`o` but not the configuration.

    Configuration: on a clock edge where :attr:`cfg_we` is high, word :attr:`cfg_addr` becomes
    :attr:`cfg_data`. :attr:`cfg_rdata` is word :attr:`cfg_addr`, combinationally, in every cycle
    where :attr:`en` is low (with ``storage="memory"`` the one read port serves the LUT when
    ``en`` is high).

    Parameters
    ----------
    storage : ``"ff"`` or ``"memory"``
        Where the 64 configuration bits live (:data:`bitgrid.terms.STORAGES`): ``"ff"`` in
        flip-flops (portable, ASIC-like; about 81 LUT4 + 68 FF for one cell on iCE40 per
        docs/resources.md), ``"memory"`` in a 16 x 4 :class:`amaranth.lib.memory.Memory` with a
        combinational read port (one TRELLIS_DPR16X4 on ECP5, one RAM16SDP4 on Gowin). When
        the platform has a ``lut_ram_16x4`` factory (:mod:`bitgrid.boards.lutram`: the ULX3S
        and Tang Nano 9K platforms) the cell instantiates the family's primitive through it
        instead (Yosys infers nothing; proved equal in tests/boards/test_board_lutram.py); if
        the factory returns None (no LUT-RAM site left) the cell uses flip-flops. ``"latch"``
        (ASIC flows, :data:`bitgrid.terms.GATEWARE_STORAGES`): 16 latch words of
        :mod:`bitgrid.hdl.latch`, written through the word lines :attr:`cfg_wl` that the
        grid shares along a row (no decoder in the cell); Verilog simulators and synthesis
        only.
    init : int
        Initial configuration, 64-bit word view (default 0, the unconfigured cell).
    faults : tuple
        Test only: injected hardware faults, ``(kind, output, address)`` (see
        :func:`check_cell_faults`; default none). A faulty cell drives :attr:`o` from its
        output register through the faults; without faults the cell is unchanged.

    Members
    -------
    i : In(4)
        Inputs, bit ``d`` is direction ``d``.
    o : Out(4)
        Registered outputs, bit ``d`` is direction ``d``.
    en : In(1)
        Update enable: the cell's phase is running this cycle.
    cfg_addr : In(4)
        Configuration word address (LUT address ``a``).
    cfg_data : In(4)
        Configuration word to write: bit ``d`` is bit ``a`` of ``LUT[d]``.
    cfg_we : In(1)
        Configuration write enable (not with ``storage="latch"``).
    cfg_wl : In(16)
        Only with ``storage="latch"``, instead of :attr:`cfg_we`: word lines; word ``a`` follows
        :attr:`cfg_data` while bit ``a`` is high (see :class:`bitgrid.hdl.latch.WordLines`
        for the timing that makes this a write of the clock cycle after the frame write).
    cfg_rdata : Out(4)
        Configuration word at :attr:`cfg_addr` (valid while :attr:`en` is low).

    Raises
    ------
    ValueError
        For an unknown storage kind or an ``init`` outside 64 bits.
    """

    def __init__(self, *, storage="ff", init=0, faults=()):
        self._storage = check_storage(storage, GATEWARE_STORAGES)
        word_to_tables(init)  # validates the 64-bit range
        self._init = init
        self._faults = check_cell_faults(faults)
        # The latch store is written through the row's word lines (bitgrid.hdl.latch).
        write = {"cfg_wl": In(16)} if self._storage == "latch" else {"cfg_we": In(1)}
        super().__init__({
            "i": In(4), "o": Out(4), "en": In(1),
            "cfg_addr": In(4), "cfg_data": In(4), **write, "cfg_rdata": Out(4),
        })

    @property
    def storage(self):
        return self._storage

    @property
    def init(self):
        return self._init

    @property
    def faults(self):
        return self._faults

    @property
    def module_name(self):
        """Verilog module name of this cell, see :func:`cell_module_name`."""
        return cell_module_name(self._storage, self._init, self._faults)

    def elaborate(self, platform):
        m = Module()
        lut_out = Signal(4)
        read_addr = Mux(self.en, self.i, self.cfg_addr)
        storage = self._storage
        factory = getattr(platform, "lut_ram_16x4", None) if storage == "memory" else None
        if factory is not None:
            # The family's LUT-RAM primitive from the platform (bitgrid.boards.lutram); None
            # when the platform has no LUT-RAM site left: the configuration then lives in
            # flip-flops (the same ports and timing).
            primitive = factory(init=self._init, read_addr=read_addr, read_data=lut_out,
                                write_addr=self.cfg_addr, write_data=self.cfg_data,
                                write_en=self.cfg_we)
            if primitive is None:
                storage = "ff"
            else:
                m.submodules.lut = primitive
                m.d.comb += self.cfg_rdata.eq(lut_out)
                storage = "primitive"
        if storage == "ff":
            config = Signal(64, init=self._init, reset_less=True)
            with m.If(self.cfg_we):
                m.d.sync += config.word_select(self.cfg_addr, 4).eq(self.cfg_data)
            # One 16:1 read mux serves the LUT and the readback, as the memory's single read
            # port does: this halves the cell's LUT count (139 -> 81 LUT4 on iCE40).
            word = config.word_select(read_addr, 4)
            m.d.comb += [lut_out.eq(word), self.cfg_rdata.eq(word)]
        elif storage == "latch":
            # 16 latch words on the row's word lines, the same shared read mux as "ff".
            words = [Signal(4, name=f"word_{a}") for a in range(16)]
            for a, word in enumerate(words):
                m.submodules[f"word_{a}"] = latch_word(en=self.cfg_wl[a], d=self.cfg_data,
                                                       q=word, init=(self._init >> 4 * a) & 0xF)
            # The read mux as AND-OR of one-hot predecoded address halves (smaller in standard
            # cells than a mux tree: AOI22 + NAND2 per 4 words and bit).
            low, high = Signal(4), Signal(4)
            m.d.comb += [low.eq(1 << read_addr[:2]), high.eq(1 << read_addr[2:])]
            groups = [_and_or(low, words[4 * g:4 * g + 4]) for g in range(4)]
            word = _and_or(high, groups)
            m.d.comb += [lut_out.eq(word), self.cfg_rdata.eq(word)]
        elif storage == "memory":
            m.submodules.lut = lut = Memory(shape=4, depth=16,
                                            init=[(self._init >> (4 * a)) & 0xF for a in range(16)])
            rd = lut.read_port(domain="comb")
            wr = lut.write_port()
            m.d.comb += [
                rd.addr.eq(read_addr),
                lut_out.eq(rd.data),
                self.cfg_rdata.eq(rd.data),
                wr.addr.eq(self.cfg_addr),
                wr.data.eq(self.cfg_data),
                wr.en.eq(self.cfg_we),
            ]
        if not self._faults:
            with m.If(self.en):
                m.d.sync += self.o.eq(lut_out)
            return m
        # Test-only faults: flipped LUT bits on the way into the output register, stuck
        # outputs after it (constant from reset on); the readback above is unchanged.
        flip = [Const(0, 1)] * 4
        for kind, output, address in self._faults:
            if kind == "lut":
                flip[output] = flip[output] | (self.i == address)
        register = Signal(4)
        with m.If(self.en):
            m.d.sync += register.eq(lut_out ^ Cat(*flip))
        stuck = {output: int(kind[-1]) for kind, output, _ in self._faults if kind != "lut"}
        m.d.comb += self.o.eq(Cat(*(Const(stuck[d], 1) if d in stuck else register[d]
                                    for d in range(4))))
        return m


def _and_or(select, values):
    """``OR_k (select[k] & values[k])``: a multiplexer with a one-hot ``select``."""
    result = 0
    for k, value in enumerate(values):
        result = result | (select[k].replicate(len(value)) & value)
    return result


def cell_module_name(storage, init=0, faults=()):
    """Verilog module name of a cell with this storage kind and initial configuration (64-bit
    word view), as written by :func:`bitgrid.hdl.verilog.grid_verilog`: ``bitgrid_cell_ff``,
    ``bitgrid_cell_memory``, or for a non-zero ``init`` ``bitgrid_cell_ff_<16 hex digits>``;
    a cell with test-only ``faults`` (:func:`check_cell_faults`) adds ``_fault`` and one
    item per fault, e.g. ``_fault_s0e_lw5`` (output E stuck at 0, bit 5 of LUT W flipped)."""
    name = f"bitgrid_cell_{check_storage(storage, GATEWARE_STORAGES)}"
    name = name if init == 0 else f"{name}_{init:016x}"
    faults = check_cell_faults(faults)
    if faults:
        name += "_fault" + "".join(
            f"_s{kind[-1]}{'nesw'[output]}" if kind != "lut" else f"_l{'nesw'[output]}{address}"
            for kind, output, address in faults)
    return name


def cell_instance(storage, init, *, i, en, cfg_addr, cfg_data, o, cfg_rdata, cfg_we=None,
                  cfg_wl=None, faults=()):
    """An :class:`amaranth.hdl.Instance` of :func:`cell_module_name` in the ``sync`` domain,
    with the members of :class:`Cell` connected to the given values (``o`` and ``cfg_rdata``
    must be 4-bit signals). It stands in for a :class:`Cell` whose Verilog is written once per
    distinct module name, which keeps the Verilog of a grid proportional to its cells. Amaranth's
    simulator cannot run it. ``cfg_wl`` (16 word lines) replaces ``cfg_we`` for
    ``storage="latch"``."""
    write = {"i_cfg_wl": cfg_wl} if storage == "latch" else {"i_cfg_we": cfg_we}
    return Instance(cell_module_name(storage, init, faults),
                    i_clk=ClockSignal("sync"), i_rst=ResetSignal("sync"),
                    i_i=i, i_en=en, i_cfg_addr=cfg_addr, i_cfg_data=cfg_data, **write,
                    o_o=o, o_cfg_rdata=cfg_rdata)
