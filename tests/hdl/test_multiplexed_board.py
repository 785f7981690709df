"""The multiplexed engine built for a board (slow set): ``bitgrid.boards.build`` of the
iCEBreaker with ``engine="multiplexed"`` synthesises, places and routes and packs, with the
configuration banks in the UP5K's four SB_SPRAM256KA (not inferred EBR), and the report gives
the engine's rates at the Fmax nextpnr measured."""

import os

import pytest


@pytest.mark.slow
def test_icebreaker_multiplexed_build(tmp_path):
    from bitgrid.boards import build
    width = height = 16
    evaluators = 4
    report = build("icebreaker", size=(width, height), output=str(tmp_path),
                   engine="multiplexed", evaluators=evaluators, progress=lambda line: None)
    assert report["engine"] == "multiplexed"
    assert report["synth_cells"].get("SB_SPRAM256KA") == evaluators     # one bank each
    assert report["utilization"]["ICESTORM_SPRAM"]["used"] == evaluators
    # 8 cells of a parity per row, 4 evaluators: 2 clocks a row, rows 0 .. height, 3 to drain.
    assert report["cycles_per_subcycle"] == (height + 1) * 2 + 3
    fmax = min(v["achieved"] for v in report["fmax_mhz"].values())
    assert fmax > 12                       # the board's clock: the image works at 12 MHz
    assert report["subcycles_per_second"] == pytest.approx(fmax * 1e6 / 37)
    assert os.path.getsize(os.path.join(report["output"], report["bitstream"])) > 100000
