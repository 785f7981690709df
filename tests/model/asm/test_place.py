"""``place``: library macros in assembly text, against the library's own standalone placement
(bitgrid.library.Block.standalone), and the latency computed from path timing against the
macros' timing contracts."""

import pytest

from bitgrid.asm import AsmError, assemble
from bitgrid.evaluate import evaluate
from bitgrid.library import MACROS


def params_text(params):
    return ", ".join(f"{k}={v}" for k, v in params.items())


@pytest.mark.parametrize("name, params", [
    ("counter", {"bits": 8}),
    ("text_stream", {}),
    ("wire", {"length": 4, "bits": 4}),
    ("delay", {"subcycles": 4, "bits": 2}),
])
def test_place_with_ports_is_the_standalone_block(name, params):
    block = MACROS[name].build(**params)
    standalone = block.standalone()
    width, height = standalone.config.width, standalone.config.height
    assert (width, height) == (block.width, block.height)     # no pass cells added
    config, portmap = assemble(f"grid {width} x {height}\n"
                               f"place {name}({params_text(params)}) at 0,0 ports\n")
    assert config == standalone.config
    assert portmap == standalone.portmap


def test_latency_from_path_timing_agrees_with_the_macro():
    block = MACROS["text_stream"].build()
    skews_in = ", ".join(str(b.skew) for b in block.port("in").bits)
    skews_out = ", ".join(str(b.skew) for b in block.port("out").bits)
    text = (f"grid 8 x 8\nplace text_stream at 0,0\n"
            f"in  in[0..7] W 0..7 skew {skews_in}\nout out[0..7] E 0..7 skew {skews_out}\n")
    config, portmap = assemble(text)
    assert portmap.latency == block.latency == 8
    rows = [{"in": ord(c)} for c in "Hello"]
    assert evaluate(config, portmap, rows) == [{"out": r["in"]} for r in rows]


def test_two_macros_with_prefixes():
    text = ("grid 4 x 4\n"
            "place wire(length=4, bits=2) at 0,0 ports top\n"
            "place wire(length=4, bits=2) at 0,2 ports bottom\n")
    config, portmap = assemble(text)
    assert [p.name for p in portmap.ports] == ["top.in", "top.out", "bottom.in", "bottom.out"]
    assert [(b.side.name, b.lane) for b in portmap["bottom.in"].bits] == [("W", 2), ("W", 3)]
    assert portmap.latency == MACROS["wire"].build(length=4, bits=2).latency
    rows = [{"top.in": v & 3, "bottom.in": v >> 2} for v in range(16)]
    assert evaluate(config, portmap, rows) == [{"top.out": r["top.in"],
                                                 "bottom.out": r["bottom.in"]} for r in rows]


def test_odd_offset_adds_a_subcycle():
    block = MACROS["inverter"].build(bits=2)
    text = "grid 2 x 2\ncell 0,0..1: E = w\nplace inverter(bits=2) at 1,0\n" \
           "in a[0..1] W 0..1 skew 0, 1\nout y[0..1] E 0..1 skew 0, 1\n"
    config, portmap = assemble(text)
    assert portmap.latency == 2
    rows = [{"a": v} for v in (0, 1, 2, 3, 1)]
    assert evaluate(config, portmap, rows) == [{"y": 3 - r["a"]} for r in rows]
    assert block.timing_at(1, 0) == block.latency + 1


def error(text):
    with pytest.raises(AsmError) as info:
        assemble(text, file="m.bga")
    return str(info.value)


@pytest.mark.parametrize("text, message", [
    ("grid 2 x 2\nplace addr(bits=4) at 0,0\n",
     "m.bga:2:1: unknown macro 'addr'; did you mean 'adder'? the library has "),
    ("grid 2 x 2\nplace wire(lenght=2) at 0,0\n", "m.bga:2:12: Macro wire has no parameter "
                                                   "'lenght'; its parameters are length, "
                                                   "heading, bits"),
    ("grid 2 x 2\nplace wire(length=0) at 0,0\n", "m.bga:2:12: wire parameter length must be"),
    ("grid 2 x 2\nplace wire(length=4) at 0,0\n", "m.bga:2:1: macro wire(length=4, heading=E, "
                                                   "bits=1) (4 x 1 cells) at 0,0 does not fit "
                                                   "the 2 x 2 grid"),
    ("grid 2 x 2\ncell 1,0: S = n\nplace wire(length=2) at 0,0\n",
     "m.bga:3:1: output S of cell (1, 0) is set twice; first at m.bga:2:11"),
    ("grid 2 x 2\nplace full_adder at 0,0 ports\n",
     "m.bga:2:1: port b bit 0 of full_adder() at 0,0 is not on the E edge of the grid"),
    ("grid 2 x 2\nplace wire(length=2) at 0,0 ports\nin in W 0\n",
     "m.bga:3:9: bit 0 of port in is declared twice; first at m.bga:2:1"),
    ("grid 2 x 2\nplace wire at 0 0\n", "m.bga:2:17: expected ',' between x and y"),
    ("grid 2 x 2\nplace wire(length=1, length=2) at 0,0\n",
     "m.bga:2:22: parameter length is given twice"),
])
def test_place_errors(text, message):
    got = error(text)
    assert got.startswith(message), got


@pytest.mark.parametrize("name", sorted(MACROS))
def test_every_macro_round_trips(name):
    from bitgrid.asm import assemble_program, disassemble
    standalone = MACROS[name].build().standalone()
    text = disassemble(standalone.config, standalone.portmap)
    result = assemble_program(text)
    assert result.config == standalone.config
    assert result.portmap == standalone.portmap
    assert result.warnings == ()        # its declared latency passes the check
