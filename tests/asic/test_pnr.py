"""Place and route on OSU018 through qflow (bitgrid.asic.pnr): the refusal for the PDKs that
need OpenROAD, the missing-tool message, the readers of DEF, LVS and OpenSTA output, and (slow)
the 2 x 2 tile placed, routed and LVS-clean."""

import re

import pytest

from bitgrid.asic import pnr


@pytest.mark.parametrize("pdk", ["sky130", "gf180"])
def test_refuses_pdks_without_a_flow(pdk, tmp_path):
    with pytest.raises(pnr.PlaceRouteUnavailable, match="OpenROAD") as error:
        pnr.place_route(pdk=pdk, out_dir=tmp_path / "p")
    assert pdk in str(error.value) and "osu018" in str(error.value)
    assert isinstance(error.value, ValueError)           # exit 2 in the CLI
    assert not (tmp_path / "p").exists()                 # refused before any work


def test_refuses_unknown_pdk():
    with pytest.raises(pnr.PlaceRouteUnavailable, match="osu018 only"):
        pnr.check_pdk("tsmc7")


def test_missing_tools_named_with_install_command():
    absent = {"qrouter", "netgen-lvs"}
    found = pnr.missing_tools(lambda tool: None if tool in absent else f"/usr/bin/{tool}")
    assert [t for t in found if t in pnr.TOOLS] == ["qrouter", "netgen-lvs"]
    with pytest.raises(pnr.PlaceRouteUnavailable) as error:
        pnr.require_tools(lambda tool: None)
    message = str(error.value)
    for tool in pnr.TOOLS:
        assert tool in message
    assert "apt-get install -y --no-install-recommends qflow qflow-tech-osu018" in message


def test_def_die_area():
    text = "VERSION 5.6 ;\nUNITS DISTANCE MICRONS 100 ;\nDIEAREA ( -960 0 ) ( 39120 27600 ) ;\n"
    assert pnr.parse_def_die(text) == (400.8, 276.0)
    with pytest.raises(ValueError, match="DIEAREA"):
        pnr.parse_def_die("UNITS DISTANCE MICRONS 100 ;")


def test_lvs_result():
    clean = ("Circuits match with 2 symmetries.\nResult: Circuits match uniquely.\n"
             "LVS reports no net, device, pin, or property mismatches.\n\nTotal errors = 0\n")
    assert pnr.parse_lvs(clean) == {"clean": True, "result": "Circuits match uniquely.",
                                    "errors": 0}
    dirty = ("Result: Netlists do not match.\nTotal errors = 3\n")
    assert pnr.parse_lvs(dirty)["clean"] is False
    assert pnr.parse_lvs(dirty)["errors"] == 3
    assert pnr.parse_lvs("")["clean"] is False


STA_REPORT = """\
Startpoint: DFFPOSX1_234 (rising edge-triggered flip-flop clocked by clk)
Endpoint: DFFPOSX1_117 (rising edge-triggered flip-flop clocked by clk)
Path Group: clk
Path Type: max

   Delay     Time   Description
-----------------------------------------------------------
   0.000    0.000   clock clk (rise edge)
   0.000    0.000   clock network delay (ideal)
   0.142    0.142 ^ DFFPOSX1_234/Q (DFFPOSX1)
   0.044    2.410 ^ INVX1_267/Y (INVX1)
            2.410   data arrival time

  10.000   10.000   clock clk (rise edge)
   0.000   10.000   clock network delay (ideal)
  -0.190    9.810   library setup time
            9.810   data required time
-----------------------------------------------------------
            9.810   data required time
           -2.410   data arrival time
-----------------------------------------------------------
            7.400   slack (MET)
"""


def test_sta_worst_path():
    timing = pnr.parse_sta(STA_REPORT)
    assert timing["worst_path_ns"] == 2.6                # 10 ns period - 7.4 ns slack
    assert timing["clock_mhz"] == 384.6
    assert (timing["startpoint"], timing["endpoint"]) == ("DFFPOSX1_234", "DFFPOSX1_117")
    with pytest.raises(ValueError, match="no timing path"):
        pnr.parse_sta("No paths found.\n")


@pytest.mark.slow
def test_tile_2x2_routed_and_lvs_clean(tmp_path):
    """The 2 x 2 flip-flop tile through the whole flow (about 2.5 minutes on an idle machine):
    routed, LVS-clean, with the DEF, die area and routed timing in the result."""
    stages = []
    result = pnr.place_route(width=2, height=2, out_dir=tmp_path / "pr", progress=stages.append)
    assert stages == ["synthesis", "placement", "routing", "extraction", "lvs", "timing"]
    assert result.lvs_clean, result.lvs
    assert result.lvs["errors"] == 0
    text = open(result.def_path).read()
    # The routed DEF: every net routed, and its components are the netlist's cells plus fill.
    components = re.search(r"^COMPONENTS (\d+) ;", text, re.M)
    placed = re.findall(r"^- (\S+) (\S+) \+ (?:PLACED|FIXED)", text, re.M)
    assert components and int(components.group(1)) == len(placed)
    logic = [cell for _, cell in placed if not cell.startswith("FILL")]
    assert len(logic) == sum(result.cells.values())
    assert "ROUTED" in text
    width, height = result.die_um
    assert width > 0 and height > 0 and result.die_area_um2 == round(width * height, 1)
    # Four cells of 64 configuration flip-flops each, at least.
    assert result.cells.get("DFFPOSX1", 0) >= 256
    assert 0 < result.timing["worst_path_ns"] < 100
    assert "wire delays" in " ".join(result.timing["assumptions"])
