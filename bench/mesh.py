"""Mesh rate against the bound set by serialisation and latency, and the payload share of the
line bits (docs/mesh.md, "Measured link figures").

What is measured
----------------
A 2 x 1 mesh (two chips, one link each way) of ``n`` x ``n`` tiles runs a random configuration
with random edge inputs (seeded) on Icarus through :func:`bitgrid.sim.mesh.run_mesh_cases`, with
no faults, for every combination of ``lanes``, SDR/DDR and ``line_delay`` (each its own cached
build). The figure is the *cycles per subcycle*: the median of
:attr:`~bitgrid.sim.mesh.MeshResult.step_cycles` (cycles of tile 0's fabric clock per step)
after the first :data:`STEADY_SKIP` steps (step 0 waits for no frame, step 1 for the start-up).
Its inverse is the mesh rate in subcycles per cycle of the fabric clock, i.e. subcycles per
second per Hz; :data:`FABRIC_HZ` gives it at 100 MHz. Every run is also checked against the
reference emulator (``agrees``).

The bound
---------
Notation: ``k`` = 1 (SDR) or 2 (DDR) bits per lane per cycle; a line symbol is
:data:`~bitgrid.hdl.link.phy.LINE_BITS` = 10 bits (2-bit sync header and a byte), so a *word*
(one symbol per lane) takes ``p = 10 / k`` cycles; one word in :data:`ALIGN_INTERVAL` (``A`` =
16) is an ALIGN word. A DATA frame of ``b`` payload bits (``b`` = half a tile side: the lanes of
one parity) has ``S_D = 5 + ceil(b / 8)`` symbols (:func:`bitgrid.protocol.link.frame_symbols`: kind,
seq, ack, payload, 2 CRC bytes), an ACK frame ``S_A = 4``.

*Serialisation (throughput) bound.* Per subcycle each link direction carries one DATA frame,
plus ``a`` ACK frames. As built ``a = 0``: :class:`~bitgrid.hdl.mesh.MeshTile` gives its link
layers a delayed acknowledgement (``ack_delay`` = :data:`bitgrid.hdl.mesh.ACK_DELAY`), so the
acknowledgement of the neighbour's frame rides on the tile's own DATA frame
(:func:`acks_as_built`; ``acks_sent`` of every run shows whether ACK frames come back)::

    T_ser = 10 * (S_D + a * S_A) * A / (A - 1) / (lanes * k)     cycles per subcycle

(and at least ``(S_D + a * S_A) * A / (A - 1)``, since :class:`~bitgrid.hdl.link.phy.PhyTx`
takes at most one symbol per cycle; that only matters for ``lanes * k > 10``).

*Latency (lockstep loop) bound.* The barrier allows no pipelining: a tile runs subcycle ``t + 1``
only once the neighbour's frame ``t`` is in, and the neighbour makes frame ``t`` only when it runs
subcycle ``t``. Both tiles step together, so a subcycle lasts one trip of a frame, from the step
that makes it to the step that it unblocks:

* hand-off into the link: the step in cycle ``c`` raises ``owed`` (cycle ``c + 1``, where the
  link layer's ``send`` takes the payload), and the frame's first symbol is on the PHY in cycle
  ``c + 3`` (:class:`~bitgrid.hdl.link.layer.LinkLayer`: send to tx, 2 cycles): **3 cycles**
  (:data:`HANDOFF_TX`);
* the PHY: ``G(N)``, cycles from the first symbol of a burst of ``N`` symbols offered to the
  transmitting PHY to the last one valid on the receiving PHY: waiting for the word boundary,
  ``ceil(N / lanes)`` words of ``p`` cycles, the I/O registers, bit aligner, deskew FIFO and the
  clock-domain crossing; **measured** (:func:`phy_burst_latency`, Amaranth's simulator, both ends
  on the same clock as in the mesh runs; its minimum over start phases, so no ALIGN word in the
  burst), plus ``line_delay``;
* hand-off out of the link: last symbol on the PHY's rx in cycle ``r``, payload on ``recv`` in
  ``r + 1``, the received-frame counter (the barrier's input) in ``r + 2``, which is the cycle of
  the next step: **2 cycles** (:data:`HANDOFF_RX`).

*Where the acknowledgement goes.* The frame arriving in cycle ``r`` makes the link layer owe an
acknowledgement; it opens an ACK frame on ``tx`` in cycle ``r + 3 + ack_delay``
(:data:`ACK_OPEN` = 3) unless a DATA frame opens first. The tile's own DATA frame is on ``tx``
in cycle ``r + HANDOFF_RX + HANDOFF_TX = r + 5`` (the step in ``r + 2``), and a DATA frame wins
a tie, so the DATA frame carries the acknowledgement (``a = 0``) whenever ``5 <= 3 + ack_delay``,
i.e. ``ack_delay >= 2``; ``ACK_DELAY`` = 8. Then::

    T_lat = 3 + G(S_D) + line_delay + 2                     (as built, a = 0)

With a smaller ``ack_delay`` (``a = 1``; ``ack_delay = 0`` was the link layer before the delayed
acknowledgement) the ACK frame opens ``3 + ack_delay - 2`` cycles after the step (:data:`ACK_LEAD`
= 1 for ``ack_delay = 0``) and the DATA frame follows it without a gap, so the trip carries
``S_A + S_D`` symbols::

    T_lat1 = (1 + ack_delay) + G(S_A + S_D) + line_delay + 2   (ACK frame first, a = 1)

``bound = max(T_ser, T_lat)`` (``a = 0``); the rows also give the ACK-first figure
``ack_first = max(T_ser1, T_lat1)`` with ``ack_delay = 0`` for comparison (what a regression to
ACK frames would cost). ``T_lat`` already contains the serialisation of the frame (``G`` grows by
``p`` per word), so the latency term is the larger one at every point measured: the loop is
latency-bound. ``ratio`` is measured cycles per subcycle over ``bound``; 1 means the mesh runs as
fast as the link allows, and a ratio below 1 would mean the bound is wrong.

*Word quantisation.* ``G`` is the minimum over start phases. Both tiles' PHY transmitters start
a word every ``p`` cycles of one clock, so once the loop settles to one period every frame starts
at the same word phase and the period is a whole number of words: ``word_bound = p * ceil(bound
/ p)`` (:func:`word_bound_cycles`). That is an estimate, not a bound: an ALIGN word in the burst
or a retransmission adds a word, and at some points the frames start at a different word phase
each step: the step length then repeats over 2 to 4 steps, only that repeat is whole words, and
the median may be below the estimate (docs/mesh.md, "Measured link figures").

Payload share of the line bits
------------------------------
A busy line carries ``10 * (S_D + a * S_A) * A / (A - 1)`` line bits per DATA frame (sync
headers, kind, seq, ack, CRC and the ALIGN words included), of which ``b`` are payload:
:func:`payload_share`. As built (``a = 0``): 2 / 64 = 3.1 % for 4 x 4 tiles (``b`` = 2), 8 / 64 =
12.5 % for 16 x 16 (``b`` = 8), 32 / 96 = 33.3 % for 64 x 64 (``b`` = 32). At the measured rate
the line is mostly IDLE, so the share of all the bits the lanes carry
(``b / (cycles per subcycle * lanes * k)``, ``line_share``) is far lower.

Run ``bitgrid bench mesh`` (``--quick``: two points), or ``make bench`` (the ``mesh`` part of
:mod:`bitgrid.bench`).
"""

import fractions
import math
import random
import statistics

from .common import UNITS, Progress, figure, timer, value

__all__ = ["SUITE_SIZES", "QUICK_SIZES", "LANES", "RATES", "DELAYS", "QUICK_POINTS",
           "COMPARE_POINTS", "DEFAULT_STEPS", "QUICK_STEPS", "STEADY_SKIP", "ALIGN_INTERVAL",
           "FABRIC_HZ", "SHARE_SIDES", "HANDOFF_TX", "HANDOFF_RX", "ACK_OPEN", "ACK_LEAD",
           "acks_as_built", "ack_lead_cycles", "bits_per_cycle", "payload_bits",
           "frame_symbols_per_subcycle", "line_bits_per_frame", "payload_share",
           "serialisation_cycles", "latency_cycles", "bound_cycles", "word_bound_cycles",
           "phy_burst_latency", "share_table", "quick_options", "measure", "format_part"]

#: Units of this part (added to :data:`bitgrid.bench.common.UNITS`).
MESH_UNITS = {
    "cycles": "cycles of a tile's fabric clock",
    "cycles/subcycle": "cycles of a tile's fabric clock per mesh subcycle",
    "subcycles/cycle": "mesh subcycles per cycle of the fabric clock (= subcycles per second "
                       "per Hz)",
    "fabric-subcycles/s": "mesh subcycles per second at the fabric clock of the row "
                          "(fabric_hz)",
    "bits": "bits",
}
for _name, _meaning in MESH_UNITS.items():
    UNITS.setdefault(_name, _meaning)

#: Tile sides: the sweep runs on the first, the :data:`COMPARE_POINTS` on every other one.
SUITE_SIZES = (4, 2)
QUICK_SIZES = (4,)
#: The sweep of ``make bench``: lanes x SDR/DDR x line delay (cycles).
LANES = (1, 2, 4)
RATES = (False, True)
DELAYS = (0, 16, 64)
#: ``(lanes, ddr, line_delay)`` of ``--quick`` (on the first size only).
QUICK_POINTS = ((1, False, 0), (4, True, 16))
#: Points run on the sizes after the first (for comparison).
COMPARE_POINTS = ((1, False, 0),)
#: Steps per run, and the first steps left out of the steady state.
DEFAULT_STEPS = 64
QUICK_STEPS = 32
STEADY_SKIP = 4
#: The PHY's ALIGN interval in words (:class:`~bitgrid.hdl.link.phy.LinkPhy`'s default, which
#: :class:`~bitgrid.hdl.mesh.MeshTile` uses).
ALIGN_INTERVAL = 16
#: Fabric clock at which the rate is also given in subcycles per second.
FABRIC_HZ = 100e6
#: Tile sides of the payload-share table.
SHARE_SIDES = (2, 4, 16, 64, 128)
#: Cycles from a step to the first symbol of its DATA frame on the PHY (owed register, 1; link
#: layer send to tx, 2).
HANDOFF_TX = 3
#: Cycles from the last symbol on the PHY's rx to the step it unblocks (link layer rx to recv, 1;
#: the received-frame counter, 1).
HANDOFF_RX = 2
#: Cycles from the last symbol of a DATA frame on the PHY's rx to the first symbol of the ACK
#: frame the link layer opens for it, with ``ack_delay = 0`` (``r + 3 + ack_delay``; no DATA
#: frame opening first).
ACK_OPEN = 3
#: Cycles from a step to the ACK frame that the link layer opens for the frame that unblocked it,
#: with ``ack_delay = 0`` (the link layer before the delayed acknowledgement): ACK frame 3 cycles
#: after the arrival, the step 2 cycles after it.
ACK_LEAD = ACK_OPEN - HANDOFF_RX
#: Symbols of an ACK frame.
_ACK_SYMBOLS = 4


def _ack_delay(ack_delay):
    if ack_delay is None:
        from bitgrid.hdl.mesh import ACK_DELAY
        return ACK_DELAY
    return ack_delay


def acks_as_built(ack_delay=None):
    """``a``: ACK frames per DATA frame in the steady state of the lockstep loop, from the code:
    the tile's DATA frame is on the PHY ``HANDOFF_RX + HANDOFF_TX`` cycles after the neighbour's
    frame arrives, the ACK frame ``ACK_OPEN + ack_delay`` cycles after it, and a DATA frame
    opening in the same cycle wins (it then carries the acknowledgement). ``ack_delay``: the link
    layer's, default :data:`bitgrid.hdl.mesh.ACK_DELAY` (as built: 0)."""
    return 0 if HANDOFF_RX + HANDOFF_TX <= ACK_OPEN + _ack_delay(ack_delay) else 1


def ack_lead_cycles(ack_delay=0):
    """Cycles from a step to the first symbol of the ACK frame that leads the trip when the
    acknowledgement does not ride on the DATA frame (:func:`acks_as_built` = 1)."""
    lead = ACK_OPEN + ack_delay - HANDOFF_RX
    if lead >= HANDOFF_TX:
        raise ValueError(f"with ack_delay={ack_delay} the DATA frame carries the acknowledgement")
    return lead


def bits_per_cycle(ddr):
    """``k``: line bits per lane per fabric cycle (1 SDR, 2 DDR)."""
    return 2 if ddr else 1


def payload_bits(side):
    """Payload bits of one link frame between tiles of side ``side``: the lanes of one parity."""
    return side // 2


def frame_symbols_per_subcycle(bits, acks=0):
    """Symbols one link direction carries per subcycle: a DATA frame of ``bits`` payload bits and
    ``acks`` ACK frames."""
    from bitgrid.protocol.link import FrameKind, frame_symbols
    return frame_symbols(FrameKind.DATA, bits) + acks * frame_symbols(FrameKind.ACK)


def line_bits_per_frame(bits, acks=0, align_interval=ALIGN_INTERVAL):
    """Line bits per DATA frame on a busy line (an exact :class:`fractions.Fraction`): 10 per
    symbol, sync headers and frame bytes included, ``acks`` ACK frames with it, and the ALIGN
    words (one word in ``align_interval``)."""
    from bitgrid.hdl.link.phy import LINE_BITS
    return (LINE_BITS * frame_symbols_per_subcycle(bits, acks)
            * fractions.Fraction(align_interval, align_interval - 1))


def payload_share(bits, acks=0, align_interval=ALIGN_INTERVAL):
    """Payload bits over line bits of a busy line (:func:`line_bits_per_frame`), a Fraction."""
    return bits / line_bits_per_frame(bits, acks, align_interval)


def serialisation_cycles(bits, lanes, ddr, acks=0, align_interval=ALIGN_INTERVAL):
    """``T_ser``: cycles per subcycle to serialise one DATA frame (and ``acks`` ACK frames) over
    ``lanes`` lanes, ALIGN words included; at least one cycle per symbol (a Fraction)."""
    symbols = frame_symbols_per_subcycle(bits, acks) * fractions.Fraction(
        align_interval, align_interval - 1)
    return max(line_bits_per_frame(bits, acks, align_interval)
               / (lanes * bits_per_cycle(ddr)), symbols)


def word_bound_cycles(bound, ddr):
    """The bound rounded up to whole words (``p * ceil(bound / p)``, ``p = 10 / k``). Both
    tiles' PHY transmitters start a word every ``p`` cycles of the same clock, so when the loop
    settles to one period, every frame starts at the same word phase and the period is a whole
    number of words. An estimate, not a strict bound (module docstring)."""
    from bitgrid.hdl.link.phy import LINE_BITS
    period = LINE_BITS // bits_per_cycle(ddr)
    return period * math.ceil(bound / period)


def latency_cycles(burst_cycles, line_delay, acks=0, ack_delay=0):
    """``T_lat``: one trip of the lockstep loop, given ``burst_cycles`` = ``G`` (the PHY's
    minimum latency of the burst: the DATA frame alone if ``acks`` is 0, as built; ACK and DATA
    frame if ``acks`` is 1, the ACK frame opened ``ack_delay`` cycles late)."""
    start = ack_lead_cycles(ack_delay) if acks else HANDOFF_TX
    return start + burst_cycles + line_delay + HANDOFF_RX


def bound_cycles(bits, lanes, ddr, line_delay, burst_cycles, acks=0, ack_delay=0,
                 align_interval=ALIGN_INTERVAL):
    """``max(T_ser, T_lat)`` in cycles per subcycle (a Fraction)."""
    return max(serialisation_cycles(bits, lanes, ddr, acks, align_interval),
               fractions.Fraction(latency_cycles(burst_cycles, line_delay, acks, ack_delay)))


def phy_burst_latency(lanes, ddr, bursts, *, line_delay=0, words=12):
    """``G``: measured latency of bursts of symbols through a pair of
    :class:`~bitgrid.hdl.link.phy.LinkPhy` joined pin to pin, both on one clock (as the tiles of
    the mesh runs), in Amaranth's simulator.

    :param bursts: a list of bursts, each a list of ``(byte, ctrl)`` symbols (a link-layer frame
        or frames, :mod:`bitgrid.protocol.link`).
    :param words: after alignment, each burst is sent once after every idle gap of 0 ..
        ``words * p - 1`` cycles (``p = 10 / k``), so that it starts at every word phase and at
        several ALIGN phases.
    :returns: per burst ``{"min", "max", "median"}`` of the cycles from the cycle its first
        symbol is offered (``valid``) on the sender's ``tx`` to the cycle its last one is valid on
        the receiver's ``rx``.
    """
    from amaranth.hdl import ClockDomain, Module
    from amaranth.sim import Simulator

    from bitgrid.hdl.link.phy import LINE_BITS, LinkPhy
    period = LINE_BITS // bits_per_cycle(ddr)
    m = Module()
    m.domains += [ClockDomain("sync"), ClockDomain("sync90")]
    a = LinkPhy(lanes, ddr=ddr, line_delay=line_delay, align_interval=ALIGN_INTERVAL)
    b = LinkPhy(lanes, ddr=ddr, line_delay=line_delay, align_interval=ALIGN_INTERVAL)
    m.submodules.a, m.submodules.b = a, b
    m.d.comb += [b.pins.rx_data.eq(a.pins.tx_data), b.pins.rx_clk.eq(a.pins.tx_clk),
                 a.pins.rx_data.eq(b.pins.tx_data), a.pins.rx_clk.eq(b.pins.tx_clk)]
    sim = Simulator(m)
    clock = 10e-9
    sim.add_clock(clock, domain="sync")
    sim.add_clock(clock, domain="sync90", phase=clock * 3 / 4)
    found = [[] for _ in bursts]

    async def bench(ctx):
        waited = 0
        while not ctx.get(b.aligned):
            await ctx.tick()
            waited += 1
            if waited > 20000:
                raise RuntimeError("the PHY pair did not align")
        for gap in range(words * period):
            for index, burst in enumerate(bursts):
                for _ in range(gap):
                    await ctx.tick()
                sent = got = cycle = 0
                last = None
                while got < len(burst):
                    if sent < len(burst):
                        data, ctrl = burst[sent]
                        ctx.set(a.tx.valid, 1)
                        ctx.set(a.tx.payload, {"data": data, "ctrl": ctrl})
                        if ctx.get(a.tx.ready):
                            sent += 1
                    else:
                        ctx.set(a.tx.valid, 0)
                    if ctx.get(b.rx.valid):
                        got += 1
                        last = cycle
                    await ctx.tick()
                    cycle += 1
                    if cycle > 100 * period * len(burst) + 10 * line_delay + 1000:
                        raise RuntimeError("a burst did not arrive")
                ctx.set(a.tx.valid, 0)
                found[index].append(last)

    sim.add_testbench(bench)
    sim.run()
    return [{"min": min(f), "max": max(f), "median": statistics.median(f)} for f in found]


def _stimulus(width, height, steps, seed):
    from bitgrid import Configuration
    from bitgrid.sim.api import make_case
    config = Configuration.random(width, height, seed=seed)
    rng = random.Random(seed)
    inputs = [[rng.getrandbits(width), rng.getrandbits(height), rng.getrandbits(width),
               rng.getrandbits(height)] for _ in range(steps)]
    return make_case(config, inputs, name=f"bench-{width}x{height}")


def _phy_key(lanes, ddr, bits):
    return (lanes, ddr, frame_symbols_per_subcycle(bits))


def _phy_row(lanes, ddr, bits, words):
    from bitgrid.protocol.link import encode_ack, encode_data
    data = encode_data(0, 0, 0, bits)
    start = timer()
    with_ack, alone = phy_burst_latency(lanes, ddr, [encode_ack(0) + data, data], words=words)
    return {"lanes": lanes, "ddr": ddr, "payload_bits": bits,
            "data_symbols": len(data), "ack_symbols": _ACK_SYMBOLS,
            "burst_ack_data": {k: figure(v, "cycles") for k, v in with_ack.items()},
            "burst_data": {k: figure(v, "cycles") for k, v in alone.items()},
            "seconds": figure(timer() - start, "s")}


def _mesh_row(side, lanes, ddr, line_delay, steps, seed, phy, fabric_hz):
    from bitgrid.sim.mesh import run_mesh_cases
    case = _stimulus(2 * side, side, steps, seed)
    start = timer()
    result, = run_mesh_cases([case], "2x1", simulator="icarus", lanes=lanes, ddr=ddr,
                             line_delay=line_delay, faults=None, quiet=True)
    seconds = timer() - start
    bits = payload_bits(side)
    k = bits_per_cycle(ddr)
    steady = result.step_cycles[STEADY_SKIP:] or result.step_cycles
    cycles = statistics.median(steady) if steady else None
    totals = result.totals()
    frames = totals.get("frames_sent", 0)
    acks = totals.get("acks_sent", 0) / frames if frames else None
    g_ack = value(phy["burst_ack_data"]["min"])
    g_data = value(phy["burst_data"]["min"])
    a = acks_as_built()
    t_ser = serialisation_cycles(bits, lanes, ddr, acks=a)
    t_lat = latency_cycles(g_ack if a else g_data, line_delay, acks=a,
                           ack_delay=_ack_delay(None) if a else 0)
    bound = max(t_ser, t_lat)
    t_ser1 = serialisation_cycles(bits, lanes, ddr, acks=1)
    t_lat1 = latency_cycles(g_ack, line_delay, acks=1)
    ack_first = max(t_ser1, t_lat1)
    rate = 1 / cycles if cycles else None
    return {
        "tile": side, "mesh": "2x1", "lanes": lanes, "ddr": ddr, "line_delay": line_delay,
        "steps": steps, "payload_bits": bits, "agrees": result.ok,
        "stalled": result.stalled,
        "cycles_per_subcycle": figure(cycles, "cycles/subcycle"),
        "mean_cycles_per_subcycle": figure(statistics.fmean(steady) if steady else None,
                                           "cycles/subcycle"),
        "min_cycles_per_subcycle": figure(min(steady) if steady else None, "cycles/subcycle"),
        "max_cycles_per_subcycle": figure(max(steady) if steady else None, "cycles/subcycle"),
        "step_cycles": result.step_cycles,
        "subcycles_per_cycle": figure(rate, "subcycles/cycle"),
        "fabric_hz": fabric_hz,
        "subcycles_per_s": figure(None if rate is None else rate * fabric_hz,
                                  "fabric-subcycles/s"),
        "serialisation_cycles": figure(float(t_ser), "cycles/subcycle"),
        "latency_cycles": figure(float(t_lat), "cycles/subcycle"),
        "bound_cycles": figure(float(bound), "cycles/subcycle"),
        "ratio": figure(None if cycles is None else cycles / float(bound), "1"),
        "word_bound_cycles": figure(word_bound_cycles(bound, ddr), "cycles/subcycle"),
        "model_acks_per_frame": a,
        "ack_first_serialisation_cycles": figure(float(t_ser1), "cycles/subcycle"),
        "ack_first_latency_cycles": figure(float(t_lat1), "cycles/subcycle"),
        "ack_first_cycles": figure(float(ack_first), "cycles/subcycle"),
        "burst_cycles": figure(g_ack if a else g_data, "cycles"),
        "frames_sent": frames,
        "acks_sent": totals.get("acks_sent", 0),
        "acks_per_frame": figure(acks, "1"),
        "retransmits": totals.get("retransmits", 0),
        "timeouts": totals.get("timeouts", 0),
        "crc_errors": totals.get("crc_errors", 0),
        "line_share": figure(None if cycles is None else bits / (cycles * lanes * k), "1"),
        "build_seconds": figure(result.build_seconds, "s"), "build_cached": result.build_cached,
        "seconds": figure(seconds, "s"),
    }


def share_table(sides=SHARE_SIDES):
    """The payload share of a busy line per tile side, from the formula (no simulation)."""
    rows = []
    for side in sides:
        bits = payload_bits(side)
        rows.append({"tile": side, "payload_bits": bits,
                     "data_symbols": frame_symbols_per_subcycle(bits),
                     "line_bits": figure(float(line_bits_per_frame(bits)), "bits"),
                     "share": figure(float(payload_share(bits)), "1"),
                     "line_bits_with_ack": figure(float(line_bits_per_frame(bits, 1)), "bits"),
                     "share_with_ack": figure(float(payload_share(bits, 1)), "1")})
    return rows


def _points(sizes, points, compare):
    result = [(sizes[0], *p) for p in points]
    for side in sizes[1:]:
        result += [(side, *p) for p in compare]
    return result


def measure(sizes=None, *, lanes=LANES, rates=RATES, delays=DELAYS, points=None,
            compare=COMPARE_POINTS, steps=DEFAULT_STEPS, seed=1, phy_words=12,
            fabric_hz=FABRIC_HZ, progress=True):
    """The mesh part of the suite.

    :param sizes: tile sides (even; default :data:`SUITE_SIZES`): the sweep on the first, the
        ``compare`` points on the others.
    :param lanes, rates, delays: the sweep (``rates``: ``False`` SDR, ``True`` DDR), unless
        ``points`` gives the ``(lanes, ddr, line_delay)`` list directly.
    :param steps: steps per run (more than :data:`STEADY_SKIP`).
    :param phy_words: idle gaps of the PHY burst measurement (:func:`phy_burst_latency`).
    :returns: ``{"part": "mesh", "rows": [...], "phy": [...], "share": [...], ...}``; each row
        has ``tile``, ``lanes``, ``ddr``, ``line_delay``, ``agrees`` and the figures
        ``cycles_per_subcycle`` (steady-state median), ``subcycles_per_cycle``,
        ``subcycles_per_s`` (at ``fabric_hz``), ``serialisation_cycles``, ``latency_cycles``,
        ``bound_cycles`` (with ``a`` = ``model_acks_per_frame``, :func:`acks_as_built`),
        ``ratio``, their ``ack_first_`` variants (an ACK frame ahead of every DATA frame, as
        before the delayed acknowledgement), the measured ``frames_sent``, ``acks_sent``,
        ``acks_per_frame``, ``retransmits``, ``timeouts``, and ``line_share``; ``phy`` has
        the measured burst latencies ``G``;
        ``share`` the payload share per tile side (module docstring).
    """
    from bitgrid.config import check_grid_size
    from bitgrid.sim import runner
    sizes = tuple(SUITE_SIZES if sizes is None else sizes)
    for side in sizes:
        check_grid_size(side, side)
    if not isinstance(steps, int) or steps <= STEADY_SKIP:
        raise ValueError(f"steps must be an integer above {STEADY_SKIP}, not {steps!r}")
    runner.setup_environment()
    runner.BACKENDS["icarus"].require()
    if points is None:
        points = [(n, ddr, d) for n in lanes for ddr in rates for d in delays]
    todo = _points(sizes, [tuple(p) for p in points], [tuple(p) for p in compare])
    phy_needed = sorted({_phy_key(n, ddr, payload_bits(side)) for side, n, ddr, _ in todo})
    started = timer()
    phy, rows = {}, []
    with Progress(len(phy_needed) + len(todo), "mesh", progress) as bar:
        for side, n, ddr, delay in todo:
            key = _phy_key(n, ddr, payload_bits(side))
            if key not in phy:
                bar.start(f"PHY {n} {'DDR' if ddr else 'SDR'}")
                phy[key] = _phy_row(n, ddr, payload_bits(side), phy_words)
                item = phy[key]
                bar.done(f"mesh: PHY {n} lane(s) {'DDR' if ddr else 'SDR'} burst latency "
                         f"ACK+DATA {value(item['burst_ack_data']['min'])}.."
                         f"{value(item['burst_ack_data']['max'])}, DATA "
                         f"{value(item['burst_data']['min'])}.."
                         f"{value(item['burst_data']['max'])} cycles")
            label = f"{side}x{side} {n} {'DDR' if ddr else 'SDR'} d{delay}"
            bar.start(label)
            row = _mesh_row(side, n, ddr, delay, steps, seed, phy[key], fabric_hz)
            rows.append(row)
            bar.done(f"mesh: {label:>16}: {value(row['cycles_per_subcycle'])} cycles/subcycle, "
                     f"bound {value(row['bound_cycles']):.1f}, ratio {value(row['ratio']):.3f}, "
                     f"acks_sent {row['acks_sent']}, retransmits {row['retransmits']}"
                     f"{'' if row['agrees'] else ', DISAGREES'}")
    return {"part": "mesh", "simulator": "icarus", "mesh": "2x1", "steps": steps,
            "steady_skip": STEADY_SKIP, "align_interval": ALIGN_INTERVAL, "seed": seed,
            "fabric_hz": fabric_hz, "rows": rows, "phy": list(phy.values()),
            "share": share_table(), "seconds": figure(timer() - started, "s")}


def quick_options():
    """Options of :func:`measure` for ``--quick``: :data:`QUICK_POINTS` on :data:`QUICK_SIZES`,
    :data:`QUICK_STEPS` steps, a short PHY sweep (about 30 s)."""
    return {"sizes": QUICK_SIZES, "points": QUICK_POINTS, "compare": (), "steps": QUICK_STEPS,
            "phy_words": 3}


def _words(row):
    item = row.get("word_bound_cycles")
    return "-" if item is None else f"{value(item):.0f}"


def _pct(item):
    return f"{100 * value(item):.2f} %"


def _ack_warning(rows):
    """Rows whose measured ACK frames disagree with the model (``a = 0`` as built: any ACK frame
    in a clean run is a regression of the delayed acknowledgement)."""
    return [r for r in rows
            if r.get("acks_sent", 0) > r.get("model_acks_per_frame", 0) * r.get("frames_sent", 0)]


def format_part(part):
    """The mesh part (see :func:`measure`) as text tables."""
    mhz = part["fabric_hz"] / 1e6
    a = part["rows"][0]["model_acks_per_frame"] if part["rows"] else acks_as_built()
    lines = [f"Mesh rate ({part['mesh']} mesh on {part['simulator']}, {part['steps']} steps, "
             f"steady-state median after {part['steady_skip']}; cycles of the fabric clock; "
             f"bound = max(T_ser, T_lat) with a = {a} ACK frames per DATA frame, see "
             f"bench/mesh.py)",
             f"{'tile':>5} {'lanes':>5} {'rate':>4} {'delay':>5} {'cycles/':>8} {'subcyc/s':>9} "
             f"{'T_ser':>6} {'T_lat':>6} {'ratio':>6} {'words':>6} {'ACK':>6} {'acks':>5} "
             f"{'retx':>4} {'line':>6} {'agrees':>6}",
             f"{'':>5} {'':>5} {'':>4} {'(cyc)':>5} {'subcycle':>8} {f'@{mhz:g}MHz':>9} "
             f"{'':>6} {'=bound':>6} {'':>6} {'est.':>6} {'first':>6} {'sent':>5} {'':>4} "
             f"{'share':>6} {'':>6}"]
    for r in part["rows"]:
        lines.append(
            f"{r['tile']:>2}x{r['tile']:<2} {r['lanes']:>5} {'DDR' if r['ddr'] else 'SDR':>4} "
            f"{r['line_delay']:>5} {value(r['cycles_per_subcycle']):>8g} "
            f"{value(r['subcycles_per_s']):>9.3g} {value(r['serialisation_cycles']):>6.1f} "
            f"{value(r['latency_cycles']):>6.0f} {value(r['ratio']):>6.3f} "
            f"{_words(r):>6} "
            f"{value(r['ack_first_cycles']):>6.0f} {r['acks_sent']:>5} {r['retransmits']:>4} "
            f"{100 * value(r['line_share']):>5.2f}% {'yes' if r['agrees'] else 'NO':>6}")
    lines.append("(ACK first: the bound with an ACK frame ahead of every DATA frame, as before "
                 "the delayed acknowledgement; acks sent, retx: ACK frames and retransmissions "
                 "measured, both links)")
    for r in _ack_warning(part["rows"]):
        lines.append(f"WARNING: {r['tile']}x{r['tile']} {r['lanes']} "
                     f"{'DDR' if r['ddr'] else 'SDR'} d{r['line_delay']}: {r['acks_sent']} ACK "
                     f"frames for {r['frames_sent']} DATA frames (model: a = "
                     f"{r['model_acks_per_frame']})")
    lines.append("PHY burst latency G (cycles, first symbol offered to last received; min..max "
                 "over start phases)")
    for p in part["phy"]:
        lines.append(f"  {p['lanes']} lane(s) {'DDR' if p['ddr'] else 'SDR'}: "
                     f"DATA ({p['data_symbols']} symbols) {value(p['burst_data']['min'])}.."
                     f"{value(p['burst_data']['max'])}, ACK+DATA "
                     f"({p['ack_symbols'] + p['data_symbols']}) "
                     f"{value(p['burst_ack_data']['min'])}..{value(p['burst_ack_data']['max'])}")
    lines.append("Payload share of a busy line (10-bit symbols, frame bytes, ALIGN words; "
                 "a = 0 as built, a = 1 with an ACK frame per DATA frame)")
    lines.append(f"{'tile':>9} {'payload':>7} {'DATA':>7} {'line bits':>9} {'share':>7} "
                 f"{'+ACK bits':>9} {'share':>7}")
    for s in part["share"]:
        lines.append(f"{s['tile']:>4} x {s['tile']:<3} {s['payload_bits']:>7} "
                     f"{s['data_symbols']:>7} {value(s['line_bits']):>9.1f} "
                     f"{_pct(s['share']):>7} {value(s['line_bits_with_ack']):>9.1f} "
                     f"{_pct(s['share_with_ack']):>7}")
    return "\n".join(lines)


if __name__ == "__main__":      # the same as `bitgrid bench mesh`
    import sys

    from bitgrid.cli.bench import bench
    bench(["mesh", *sys.argv[1:]], prog_name="python -m bitgrid.bench")
