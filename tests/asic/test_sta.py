"""Static timing with OpenSTA (bitgrid.asic.sta) on a hand-written OSU018 netlist: two
flip-flops with an inverter between them, so the worst path is known by construction."""

import pytest

from bitgrid.asic.pdk import find_pdk
from bitgrid.asic.sta import run_sta

NETLIST = """module top(clk, d, q);
  input clk; input d; output q;
  wire a, b;
  DFFPOSX1 r0 (.CLK(clk), .D(d), .Q(a));
  INVX1 i0 (.A(a), .Y(b));
  DFFPOSX1 r1 (.CLK(clk), .D(b), .Q(q));
endmodule
"""


def test_relative_work_dir(tmp_path, monkeypatch):
    """A relative work folder (``bitgrid asic -o out/x`` from the repository root) times the
    netlist: OpenSTA runs inside the folder, so the script must not be named relative to the
    caller's folder (it found no constrained path before)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "top.v").write_text(NETLIST)
    liberty = find_pdk("osu018").liberty
    timing = run_sta("work/top.v", "top", liberty, "work")
    assert [step[0] for step in timing.path] == ["r0/CLK", "r0/Q", "i0/Y", "r1/D"]
    assert [step[1] for step in timing.path] == ["DFFPOSX1", "DFFPOSX1", "INVX1", "DFFPOSX1"]
    arrival = timing.path[-1][3]
    assert arrival == pytest.approx(sum(step[2] for step in timing.path), abs=0.002)
    assert timing.worst_path_ns > arrival          # plus the setup time of r1
    assert timing.phase_clock_mhz == pytest.approx(1000 / timing.worst_path_ns, rel=1e-3)
    assert (tmp_path / "work" / "top.sta.log").is_file()
