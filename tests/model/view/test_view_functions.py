"""bitgrid.view.functions and .style: the kind of every LUT, cell summaries, cell contents."""

import numpy as np
import pytest

from bitgrid.config import Configuration
from bitgrid.view import functions, style
from support.view import truth_kind


def test_every_lut_kind_matches_its_truth_table():
    luts = np.arange(1 << 16, dtype=np.uint32)
    bits = (luts[:, None] >> np.arange(16)) & 1                    # (65536, 16): bit a of lut
    address_bits = (np.arange(16)[None, :] >> np.arange(4)[:, None]) & 1     # (4, 16)
    expected = np.full(1 << 16, functions.LOGIC)
    for k in range(4):
        expected[(bits == address_bits[k]).all(axis=1)] = functions.COPY + k
        expected[(bits == 1 - address_bits[k]).all(axis=1)] = functions.NOT + k
    expected[luts == 0], expected[luts == 0xFFFF] = functions.ZERO, functions.ONE
    config = Configuration(256, 64, luts.astype(np.uint16).reshape(64, 256, 4))
    assert (functions.kinds(config).reshape(-1) == expected).all()
    for lut in range(0, 1 << 16, 251):
        assert functions.lut_kind(lut) == expected[lut]
        kind, side = truth_kind(lut)                 # the slow per-bit model agrees
        assert functions.KINDS[expected[lut]].split()[0] == kind


def test_kind_names_and_refusals():
    assert functions.KINDS[functions.lut_kind(0xFF00)] == "copy W"
    assert functions.KINDS[functions.lut_kind(0x0F0F)] == "not S"
    assert functions.KINDS[functions.lut_kind(0x6666)] == "logic"
    with pytest.raises(ValueError, match="16-bit"):
        functions.lut_kind(0x10000)
    with pytest.raises(ValueError):
        functions.expression(-1)


COPY_N, COPY_E, COPY_S, COPY_W = 0xAAAA, 0xCCCC, 0xF0F0, 0xFF00


@pytest.mark.parametrize("tables, summary", [
    ((0, 0, 0, 0), "unconfigured"),
    ((0, COPY_W, 0, 0), "pass: W->E"),                               # straight
    ((COPY_W, 0, 0, 0), "pass: W->N"),                               # a turn
    ((0, 0, 0, COPY_W), "pass: W->W"),                               # back where it came from
    ((0, COPY_W, COPY_N, 0), "pass: W->E, N->S (crossing)"),
    ((COPY_W, COPY_W, COPY_W, 0), "fan-out: W->N,E,S"),
    ((0, 0x6666, 0, 0), "E = n ^ e"),
    ((0xFFFF, 0, 0x5555, 0), "N = 1; S = ~n"),
])
def test_cell_summary(tables, summary):
    assert functions.cell_summary(tables) == summary


def test_contents_of_each_kind_of_cell():
    config = Configuration(4, 2)
    config[0, 0] = (0, COPY_W, 0, 0)             # pass
    config[1, 0] = (0, 0x6666, 0, 0)             # logic
    config[2, 0] = (0xFFFF, 0, 0, 0)             # constant 1
    config[3, 0] = (0, 0x00FF, 0, 0)             # an inverted copy counts as logic
    config[0, 1] = (0, COPY_W, 0x8888, 0)        # copies and logic: logic
    keys = [[style.BACKGROUND_KEYS[i] for i in row] for row in
            style.contents(functions.kinds(config))]
    assert keys == [["pass", "logic", "const", "logic"], ["logic", "blank", "blank", "blank"]]
