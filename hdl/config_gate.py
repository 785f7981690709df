"""The write side of the configuration port shared by every grid engine (SPEC section 7): the
frame records run through the frame CRC, ``w_ready``, and the ``valid`` / ``error`` gate.

:class:`~bitgrid.hdl.grid.Grid` and :class:`~bitgrid.hdl.multiplexed.MultiplexedGrid` both
build it with :func:`config_gate`; only where a written frame goes differs.
"""

import types

from amaranth.hdl import Cat, Const, Signal

from bitgrid.config import FRAME_CRC

__all__ = ["record_bytes", "config_gate"]


def record_bytes(width):
    """Bytes in one frame record of a ``width``-cell row (row: 2, address: 1, frame:
    ``width / 2``): ``w_ready`` is low this many cycles after a write."""
    return 3 + width // 2


def config_gate(m, cfg, width, *, valid_init=True):
    """Add the frame CRC and the ``valid`` / ``error`` gate of configuration port ``cfg`` (a
    :class:`~bitgrid.hdl.grid.ConfigSignature` port of a ``width``-cell grid) to module ``m``.

    Timing (the contract of :class:`~bitgrid.hdl.grid.ConfigSignature`): a frame is written on
    a cycle where ``w_en`` and ``w_ready`` are high (``write``); its record then leaves
    ``record`` a byte a cycle into the CRC for :func:`record_bytes` cycles (``remaining``
    counts them down, ``w_ready`` is low meanwhile); ``begin`` and every write drop ``valid``;
    a commit sets ``valid`` or ``error`` from the CRC one cycle later. ``valid`` (power-up
    ``valid_init``: 1 when the power-up contents are the grid's ``init``, 0 for storage whose
    power-up contents are undefined, such as iCE40 SPRAM) and ``error`` are reset-less: a
    reset does not change the configuration.

    :returns: a namespace with the 1-bit signals ``valid``, ``valid_next`` (the value
        ``valid`` takes at the next clock edge), ``error``, ``write`` and the
        record shift register ``record`` (its low byte is the byte in the CRC this cycle:
        byte ``record_bytes(width) - remaining``) and ``remaining``.
    """
    g = types.SimpleNamespace()
    nbytes = record_bytes(width)
    g.valid = Signal(init=int(bool(valid_init)), reset_less=True)
    g.error = Signal(reset_less=True)
    m.d.comb += [cfg.valid.eq(g.valid), cfg.error.eq(g.error)]
    # valid's next value (a pipelined direct grid loads per-row copies with it).
    g.valid_next = Signal()
    m.d.comb += g.valid_next.eq(g.valid)
    m.d.sync += g.valid.eq(g.valid_next)

    # Frame CRC engine: one record byte per cycle.
    m.submodules.crc = crc_engine = FRAME_CRC.create()
    g.record = Signal(8 * nbytes)
    g.remaining = Signal(range(nbytes + 1))
    m.d.comb += [
        cfg.w_ready.eq(g.remaining == 0),
        crc_engine.start.eq(cfg.begin),
        crc_engine.data.eq(g.record[:8]),
        crc_engine.valid.eq(g.remaining != 0),
    ]
    with m.If(g.remaining != 0):
        m.d.sync += [g.record.eq(g.record >> 8), g.remaining.eq(g.remaining - 1)]
    g.write = Signal()
    row16 = Signal(16)
    m.d.comb += row16.eq(cfg.row)
    m.d.comb += g.write.eq(cfg.w_en & cfg.w_ready)
    with m.If(g.write):
        m.d.sync += [
            g.record.eq(Cat(row16, cfg.addr, Const(0, 4), cfg.w_data)),
            g.remaining.eq(nbytes),
        ]
        m.d.comb += g.valid_next.eq(0)
    with m.If(cfg.begin):
        m.d.comb += g.valid_next.eq(0)
        m.d.sync += g.error.eq(0)
    with m.Elif(cfg.commit & cfg.w_ready & ~cfg.w_en):
        match = crc_engine.crc == cfg.crc
        m.d.comb += g.valid_next.eq(match)
        m.d.sync += g.error.eq(~match)
    return g
