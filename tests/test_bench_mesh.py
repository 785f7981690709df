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


def test_latency_and_bound():
    # As built (ACK frame first): 1 + G + line delay + 2; piggybacked: 3 + G + line delay + 2.
    assert mesh.latency_cycles(107, 0, acks=1) == 110
    assert mesh.latency_cycles(27, 16, acks=1) == 46
    assert mesh.latency_cycles(67, 16, acks=0) == 88
    # The latency term wins when it is the larger ...
    assert mesh.bound_cycles(2, 1, False, 0, 107) == 110
    # ... and the serialisation term when a (hypothetical) PHY were faster than the line.
    assert mesh.bound_cycles(2, 1, False, 0, 50) == Fraction(320, 3)


@pytest.mark.parametrize("bound, ddr, words", [(110, False, 110), (126, False, 130),
                                               (61, True, 65), (Fraction(320, 3), True, 110)])
def test_word_bound(bound, ddr, words):
    assert mesh.word_bound_cycles(bound, ddr) == words


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
    cycles = row["cycles_per_subcycle"]["value"]
    bound = row["bound_cycles"]["value"]
    assert bound <= cycles <= 3 * bound
    assert row["subcycles_per_cycle"]["value"] == pytest.approx(1 / cycles)
    assert row["subcycles_per_s"]["value"] == pytest.approx(mesh.FABRIC_HZ / cycles)
    assert row["ideal_cycles"]["value"] <= bound
    (phy,) = part["phy"]
    assert phy["burst_data"]["min"]["value"] <= phy["burst_ack_data"]["min"]["value"]
    text = mesh.format_part(part)
    assert "4x4" in text and "Payload share" in text
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
