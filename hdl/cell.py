"""The BitGrid cell (SPEC section 3)."""

from amaranth.hdl import ClockSignal, Instance, Mux, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from bitgrid.cell import word_to_tables
from bitgrid.terms import check_storage

__all__ = ["Cell", "cell_module_name", "cell_instance"]


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
        combinational read port (one TRELLIS_DPR16X4 on ECP5, one RAM16SDP4 on Gowin).
    init : int
        Initial configuration, 64-bit word view (default 0, the unconfigured cell).

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
        Configuration write enable.
    cfg_rdata : Out(4)
        Configuration word at :attr:`cfg_addr` (valid while :attr:`en` is low).

    Raises
    ------
    ValueError
        For an unknown storage kind or an ``init`` outside 64 bits.
    """

    def __init__(self, *, storage="ff", init=0):
        self._storage = check_storage(storage)
        word_to_tables(init)  # validates the 64-bit range
        self._init = init
        super().__init__({
            "i": In(4), "o": Out(4), "en": In(1),
            "cfg_addr": In(4), "cfg_data": In(4), "cfg_we": In(1), "cfg_rdata": Out(4),
        })

    @property
    def storage(self):
        return self._storage

    @property
    def init(self):
        return self._init

    @property
    def module_name(self):
        """Verilog module name of this cell, see :func:`cell_module_name`."""
        return cell_module_name(self._storage, self._init)

    def elaborate(self, platform):
        m = Module()
        lut_out = Signal(4)
        if self._storage == "ff":
            config = Signal(64, init=self._init, reset_less=True)
            with m.If(self.cfg_we):
                m.d.sync += config.word_select(self.cfg_addr, 4).eq(self.cfg_data)
            # One 16:1 read mux serves the LUT and the readback, as the memory's single read
            # port does: this halves the cell's LUT count (139 -> 81 LUT4 on iCE40).
            word = config.word_select(Mux(self.en, self.i, self.cfg_addr), 4)
            m.d.comb += [lut_out.eq(word), self.cfg_rdata.eq(word)]
        else:
            m.submodules.lut = lut = Memory(shape=4, depth=16,
                                            init=[(self._init >> (4 * a)) & 0xF for a in range(16)])
            rd = lut.read_port(domain="comb")
            wr = lut.write_port()
            m.d.comb += [
                rd.addr.eq(Mux(self.en, self.i, self.cfg_addr)),
                lut_out.eq(rd.data),
                self.cfg_rdata.eq(rd.data),
                wr.addr.eq(self.cfg_addr),
                wr.data.eq(self.cfg_data),
                wr.en.eq(self.cfg_we),
            ]
        with m.If(self.en):
            m.d.sync += self.o.eq(lut_out)
        return m


def cell_module_name(storage, init=0):
    """Verilog module name of a cell with this storage kind and initial configuration (64-bit
    word view), as written by :func:`bitgrid.hdl.verilog.grid_verilog`: ``bitgrid_cell_ff``,
    ``bitgrid_cell_memory``, or for a non-zero ``init`` ``bitgrid_cell_ff_<16 hex digits>``."""
    name = f"bitgrid_cell_{check_storage(storage)}"
    return name if init == 0 else f"{name}_{init:016x}"


def cell_instance(storage, init, *, i, en, cfg_addr, cfg_data, cfg_we, o, cfg_rdata):
    """An :class:`amaranth.hdl.Instance` of :func:`cell_module_name` in the ``sync`` domain,
    with the members of :class:`Cell` connected to the given values (``o`` and ``cfg_rdata``
    must be 4-bit signals). It stands in for a :class:`Cell` whose Verilog is written once per
    distinct module name, which keeps the Verilog of a grid proportional to its cells. Amaranth's
    simulator cannot run it."""
    return Instance(cell_module_name(storage, init),
                    i_clk=ClockSignal("sync"), i_rst=ResetSignal("sync"),
                    i_i=i, i_en=en, i_cfg_addr=cfg_addr, i_cfg_data=cfg_data, i_cfg_we=cfg_we,
                    o_o=o, o_cfg_rdata=cfg_rdata)
