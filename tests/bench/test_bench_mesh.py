"""The mesh part of the benchmark suite (``bitgrid.bench.mesh``): the bound and payload-share
formulas against values worked out by hand here, and one tiny measurement checked for sanity
(no timing is asserted beyond "at or above the bound, within a factor of 3 of it")."""

import inspect
import json
from fractions import Fraction

import pytest

from bitgrid import bench
from bitgrid.bench import common, mesh
from bitgrid.hdl.link.phy import LinkPhy

# --- the formulas -----------------------------------------------------------------------------
# By hand: a line symbol is 10 bits; a DATA frame is kind, seq, ack, ceil(b/8) payload bytes and
# 2 CRC bytes; an ACK frame is 4 symbols; one word in 16 is an ALIGN word (factor 16/15).


def test_align_interval_is_the_phy_default():
    default = inspect.signature(LinkPhy).parameters["align_interval"].default
    assert mesh.ALIGN_INTERVAL == default == 16


@pytest.mark.parametrize("side, bits", [(2, 1), (4, 2), (16, 8), (64, 32), (128, 64)])
def test_payload_bits(side, bits):
    assert mesh.payload_bits(side) == bits


@pytest.mark.parametrize("bits, symbols", [(1, 6), (2, 6), (8, 6), (9, 7), (32, 9), (64, 13)])
def test_frame_symbols(bits, symbols):
    assert mesh.frame_symbols_per_subcycle(bits) == symbols
    assert mesh.frame_symbols_per_subcycle(bits, acks=1) == symbols + 4


@pytest.mark.parametrize("bits, acks, line_bits, share", [
    (2, 0, Fraction(64), Fraction(1, 32)),              # 60 bits * 16/15; 2 / 64
    (8, 0, Fraction(64), Fraction(1, 8)),               # 8 / 64
    (32, 0, Fraction(96), Fraction(1, 3)),              # 9 symbols: 90 * 16/15 = 96
    (2, 1, Fraction(320, 3), Fraction(3, 160)),         # 10 symbols: 100 * 16/15
    (64, 0, Fraction(416, 3), Fraction(6, 13)),         # 13 symbols: 130 * 16/15
])
def test_line_bits_and_share(bits, acks, line_bits, share):
    assert mesh.line_bits_per_frame(bits, acks) == line_bits
    assert mesh.payload_share(bits, acks) == share


@pytest.mark.parametrize("bits, lanes, ddr, acks, cycles", [
    (2, 1, False, 0, Fraction(64)),                     # 64 line bits, 1 bit per cycle
    (2, 1, False, 1, Fraction(320, 3)),
    (2, 4, True, 1, Fraction(40, 3)),                   # 320/3 over 8 bits per cycle
    (2, 2, True, 0, Fraction(16)),                      # 64 / 4
    (2, 8, True, 0, Fraction(32, 5)),                   # 64 / 16 = 4 < 6 symbols * 16/15
])
def test_serialisation_cycles(bits, lanes, ddr, acks, cycles):
    assert mesh.serialisation_cycles(bits, lanes, ddr, acks) == cycles


def test_acks_as_built():
    # By hand (hdl/mesh.py, hdl/link/layer.py): the neighbour's frame ends on the PHY's rx in
    # cycle r; recv in r + 1, the received counter and the step in r + 2, owed and send taken in
    # r + 3, the DATA frame opens in r + 4 and its first symbol is on tx in r + 5. The owed
    # acknowledgement (ack_pending and ack_wait = ack_delay set in r + 2, counted down to 0 in
    # r + 2 + ack_delay) opens an ACK frame in that cycle, first symbol in r + 3 + ack_delay,
    # unless a DATA frame opens first or in the same cycle. So the DATA frame carries the ack
    # iff r + 4 <= r + 2 + ack_delay, i.e. ack_delay >= 2.
    assert mesh.acks_as_built() == 0                      # as built: the ack rides on DATA
    assert [mesh.acks_as_built(d) for d in range(5)] == [1, 1, 0, 0, 0]
    # The ACK frame's first symbol, counted from the step (r + 2): r + 3 + ack_delay.
    assert mesh.ack_lead_cycles(0) == 1 == mesh.ACK_LEAD
    assert mesh.ack_lead_cycles(1) == 2
    with pytest.raises(ValueError):
        mesh.ack_lead_cycles(2)


def test_latency_and_bound():
    # As built (the DATA frame carries the ack): 3 + G(S_D) + line delay + 2.
    assert mesh.latency_cycles(67, 0) == 72               # 1 SDR lane: G(6 symbols) = 67
    assert mesh.latency_cycles(39, 16) == 60              # 2 SDR lanes, 16 cycles of delay
    assert mesh.latency_cycles(22, 64) == 91              # 4 DDR lanes, 64 cycles of delay
    # ACK frame first (ack_delay 0, the former link layer): 1 + G(S_A + S_D) + delay + 2; with
    # ack_delay 1 the ACK frame opens one cycle later.
    assert mesh.latency_cycles(107, 0, acks=1) == 110
    assert mesh.latency_cycles(27, 16, acks=1) == 46
    assert mesh.latency_cycles(107, 0, acks=1, ack_delay=1) == 111
    # The latency term wins when it is the larger ...
    assert mesh.bound_cycles(2, 1, False, 0, 67) == 72
    assert mesh.bound_cycles(2, 1, False, 0, 107, acks=1) == 110
    # ... and the serialisation term when a (hypothetical) PHY were faster than the line:
    # 3 + 50 + 2 = 55 < 64 (a = 0); 1 + 50 + 2 = 53 < 320/3 (a = 1).
    assert mesh.bound_cycles(2, 1, False, 0, 50) == 64
    assert mesh.bound_cycles(2, 1, False, 0, 50, acks=1) == Fraction(320, 3)


@pytest.mark.parametrize("bound, ddr, words", [(72, False, 80), (88, False, 90),
                                               (110, False, 110), (126, False, 130),
                                               (43, True, 45), (61, True, 65),
                                               (Fraction(320, 3), True, 110)])
def test_word_bound(bound, ddr, words):
    assert mesh.word_bound_cycles(bound, ddr) == words


def test_ack_warning():
    rows = [{"tile": 4, "lanes": 1, "ddr": False, "line_delay": 0, "model_acks_per_frame": 0,
             "frames_sent": 128, "acks_sent": n} for n in (0, 1)]
    assert mesh._ack_warning(rows) == rows[1:]


def test_share_table_and_units():
    rows = {r["tile"]: r for r in mesh.share_table((4, 16, 64))}
    assert rows[4]["share"]["value"] == pytest.approx(1 / 32)
    assert rows[16]["share"]["value"] == pytest.approx(1 / 8)
    assert rows[64]["share"]["value"] == pytest.approx(1 / 3)
    assert rows[64]["share_with_ack"]["value"] == pytest.approx(32 / (130 * 16 / 15))
    for name in mesh.MESH_UNITS:
        assert name in common.UNITS


def test_registered_in_the_suite():
    assert "mesh" in bench.PARTS
    assert "mesh" in bench.suite_options() and "mesh" in bench.quick_options()


def test_bad_options():
    with pytest.raises(ValueError):
        mesh.measure((4,), points=[(1, False, 0)], steps=mesh.STEADY_SKIP, progress=False)
    with pytest.raises(Exception):
        mesh.measure((3,), points=[(1, False, 0)], progress=False)


# --- one tiny measurement ---------------------------------------------------------------------

@pytest.mark.icarus
def test_tiny_measurement():
    part = mesh.measure((4,), points=[(4, True, 0)], compare=(), steps=12, phy_words=1,
                        progress=False)
    assert part["part"] == "mesh"
    (row,) = part["rows"]
    assert row["agrees"] and row["stalled"] is None
    assert row["retransmits"] == 0 and row["crc_errors"] == 0
    # The delayed acknowledgement: every ack rides on a DATA frame, no ACK frame in a clean run.
    assert row["model_acks_per_frame"] == 0
    assert row["acks_sent"] == 0 and row["acks_per_frame"]["value"] == 0
    assert row["frames_sent"] == 2 * 12                  # one DATA frame per step, each way
    cycles = row["cycles_per_subcycle"]["value"]
    bound = row["bound_cycles"]["value"]
    assert bound <= cycles <= 3 * bound
    assert row["subcycles_per_cycle"]["value"] == pytest.approx(1 / cycles)
    assert row["subcycles_per_s"]["value"] == pytest.approx(mesh.FABRIC_HZ / cycles)
    assert row["ack_first_cycles"]["value"] >= bound
    (phy,) = part["phy"]
    assert phy["burst_data"]["min"]["value"] <= phy["burst_ack_data"]["min"]["value"]
    text = mesh.format_part(part)
    assert "4x4" in text and "Payload share" in text and "WARNING" not in text
    doc = common.document({"mesh": part}, machine={"nproc": 2})
    json.loads(json.dumps(doc))
    for item in _figures(doc["parts"]):
        assert item["unit"] in common.UNITS


def _figures(obj):
    if isinstance(obj, dict):
        if set(obj) == {"value", "unit"}:
            yield obj
            return
        for item in obj.values():
            yield from _figures(item)
    elif isinstance(obj, list):
        for item in obj:
            yield from _figures(item)
