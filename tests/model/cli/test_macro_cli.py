"""``bitgrid macro``: list, describe, write a macro as a program that `bitgrid eval` runs."""

from click.testing import CliRunner

from bitgrid import bitstream, ports
from bitgrid.cli import main
from bitgrid.evaluate import evaluate
from bitgrid.library import MACROS


def _run(*args):
    return CliRunner().invoke(main, list(args))


def test_lists_every_macro():
    result = _run("macro")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == list(MACROS)


def test_describes_a_macro_with_its_ports_and_skews():
    result = _run("macro", "adder", "bits=3", "carry_in=true")
    assert result.exit_code == 0, result.output
    assert "adder(bits=3, carry_in=True)" in result.output
    assert "in  a[3]: W0 W1+1 W2+2" in result.output
    assert "out sum[4]: E0 E1+1 E2+2 S0+2" in result.output


def test_writes_a_program_that_multiplies(tmp_path):
    out = tmp_path / "mul3.bgbs"
    result = _run("macro", "multiplier", "bits=3", "-o", str(out))
    assert result.exit_code == 0, result.output
    config = bitstream.load(out).config
    portmap = ports.load(tmp_path / "mul3.ports.json")
    rows = [{"a": a, "b": b} for a in range(8) for b in range(8)]
    assert [r["p"] for r in evaluate(config, portmap, rows)] == [a * b for a in range(8)
                                                                 for b in range(8)]


def test_bad_input_is_one_line_exit_2(tmp_path):
    for args, message in [
            (("macro", "mul"), "error: no macro 'mul'; the macros are wire, turn"),
            (("macro", "adder", "bits"), "error: parameters are NAME=VALUE"),
            (("macro", "adder", "bits=x"), "error: bits is an integer, not 'x'"),
            (("macro", "adder", "width=3"), "error: macro adder has no parameter 'width'"),
            (("macro", "adder", "bits=0"), "error: adder parameter bits must be an integer "
                                           "from 1 to 4095, not 0"),
            (("macro", "adder", "carry_in=maybe"), "error: carry_in is true or false"),
            (("macro", "adder", "-o", str(tmp_path)), "is a directory"),
            (("macro", "adder", "bits=3", "bits=4"), "error: parameter bits is given twice"),
            (("macro", "wire", "length=4096", "bits=4096", "-o", str(tmp_path / "w.bgbs")),
             "error: Macro wire(length=4096, heading=E, bits=4096) would be a 4096 x 4096 box "
             "of 16,777,216 cells; a block has at most 65,536 (256 x 256)"),
            (("macro", "text_stream", "lanes=257", "length=256"), "at most 65,536")]:
        result = _run(*args)
        assert result.exit_code == 2, args
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert list(tmp_path.iterdir()) == []                        # nothing written
