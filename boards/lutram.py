"""The LUT-RAM primitives of the FPGA families, one 16 x 4 memory per BitGrid cell (SPEC
section 3, the word view; ``docs/boards.md``, "LUT-RAM primitives").

A platform that has LUT RAM carries a factory in its ``lut_ram_16x4`` attribute
(:func:`with_lut_ram`); :class:`bitgrid.hdl.cell.Cell` with ``storage="memory"`` calls it and
instantiates the primitive instead of an inferred :class:`amaranth.lib.memory.Memory`. Yosys
then maps nothing: on the ULX3S-85F at 64 x 64, inferring 4,096 LUT memories (``memory_libmap``)
was 31 of the 56 minutes of the build. Without such a platform (simulation, iCE40, the
Verilog the project ships) the cell keeps the inferred memory; ``tests/boards/
test_board_lutram.py`` proves the two equal with Yosys against the primitives' simulation
models from Yosys' techlibs.

Every factory has the signature ``factory(*, init, read_addr, read_data, write_addr,
write_data, write_en)`` and returns an :class:`amaranth.hdl.Instance`:

* ``init``: the 64-bit word view, word ``a`` (bits ``4a .. 4a+3``) at address ``a``;
* ``read_addr`` (4 bits) -> ``read_data`` (4 bits): asynchronous read, no latency;
* ``write_addr``, ``write_data`` (4 bits each), ``write_en`` (1 bit): synchronous write on the
  rising edge of the ``sync`` clock.

A platform can also limit the primitives a grid uses (``with_lut_ram(..., sites=N)``: its
``lut_ram_sites``): :class:`bitgrid.hdl.grid.Grid` then builds its ``"memory"`` rows beyond
``N // width`` rows in flip-flops (:func:`bitgrid.hdl.grid.rows_in_lut_ram`), whole rows at a
time: on the Tang Nano 9K (224 sites) a 16 x 16 grid would have 14 rows in RAM16SDP4 and two
in flip-flops (it did not place: ``docs/boards.md``, "Mixed storage by row").
"""

from amaranth.hdl import ClockSignal, Const, Instance

__all__ = ["trellis_dpr16x4", "gowin_ram16sdp4", "with_lut_ram", "LUT_RAMS"]


def _check_init(init):
    if isinstance(init, bool) or not isinstance(init, int) or not 0 <= init < 1 << 64:
        raise ValueError(f"A 16 x 4 LUT RAM's init is a 64-bit word view, not {init!r}")
    return init


def trellis_dpr16x4(*, init, read_addr, read_data, write_addr, write_data, write_en):
    """One ECP5 ``TRELLIS_DPR16X4`` (half a slice pair's LUTs and one TRELLIS_RAMW):
    ``INITVAL`` bit ``4a + d`` is bit ``d`` of word ``a``, the word view itself.

    :raises ValueError: for an ``init`` outside 64 bits."""
    return Instance("TRELLIS_DPR16X4",
                    p_INITVAL=Const(_check_init(init), 64), p_WCKMUX="WCK", p_WREMUX="WRE",
                    i_RAD=read_addr, o_DO=read_data,
                    i_WAD=write_addr, i_DI=write_data, i_WRE=write_en, i_WCK=ClockSignal("sync"))


def gowin_ram16sdp4(*, init, read_addr, read_data, write_addr, write_data, write_en):
    """One Gowin ``RAM16SDP4`` (one CLU's RAM site): ``INIT_d`` bit ``a`` is bit ``d`` of word
    ``a``, i.e. ``INIT_d`` is the truth table ``LUT[d]``.

    :raises ValueError: for an ``init`` outside 64 bits."""
    init = _check_init(init)
    tables = {f"p_INIT_{d}": Const(sum(((init >> (4 * a + d)) & 1) << a for a in range(16)), 16)
              for d in range(4)}
    return Instance("RAM16SDP4", **tables,
                    i_RAD=read_addr, o_DO=read_data,
                    i_WAD=write_addr, i_DI=write_data, i_WRE=write_en, i_CLK=ClockSignal("sync"))


#: FPGA family -> its LUT-RAM factory.
LUT_RAMS = {"ecp5": trellis_dpr16x4, "gowin": gowin_ram16sdp4}


def with_lut_ram(platform_class, factory, *, sites=None):
    """A subclass of ``platform_class`` whose instances carry ``lut_ram_16x4`` (``factory``)
    and ``lut_ram_sites``: how many primitives place and route can legalise (None: no limit
    below the grid sizes the board is built at). A grid uses at most ``lut_ram_sites // width``
    rows of primitives (:func:`bitgrid.hdl.grid.rows_in_lut_ram`).

    :raises ValueError: for a ``sites`` that is not None or a non-negative integer."""
    if sites is not None and (isinstance(sites, bool) or not isinstance(sites, int)
                              or sites < 0):
        raise ValueError(f"LUT-RAM sites must be a non-negative integer, not {sites!r}")

    class Platform(platform_class):
        lut_ram_16x4 = staticmethod(factory)
        lut_ram_sites = sites
    Platform.__name__ = Platform.__qualname__ = platform_class.__name__
    return Platform
