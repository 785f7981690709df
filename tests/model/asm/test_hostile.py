"""Hostile input to the assembler: every bad text is an AsmError naming file, line and column
(never a RecursionError, OverflowError or a hang), found by an adversarial review."""

import os

import pytest

from bitgrid.asm import AsmError, assemble, assemble_program


def error(text):
    with pytest.raises(AsmError) as info:
        assemble(text, file="p.bga")
    return str(info.value)


@pytest.mark.parametrize("expression", [
    "(" * 5000 + "w" + ")" * 5000,
    "w ? " * 3000 + "w" + " : n" * 3000,
    "maj(w, n, " * 3000 + "w" + ")" * 3000,
])
def test_deep_expressions_are_refused(expression):
    message = error("grid 2 x 2\ncell 0,0: E = " + expression + "\n")
    assert message.startswith("p.bga:2:") and "nested deeper than 100" in message, message


def test_nesting_up_to_the_limit_is_read(tmp_path):
    # 100 levels of parentheses inside 63 levels of includes still fit Python's stack, and
    # any number of ~ is a loop, not nesting.
    (tmp_path / "i63.bga").write_text("cell 0,0: E = " + "(" * 99 + "~w" + ")" * 99 +
                                      ", S = " + "~" * 5001 + "n\n")
    for i in range(63):
        (tmp_path / f"i{i}.bga").write_text(f'include "i{i + 1}.bga"\n')
    (tmp_path / "p.bga").write_text('grid 2 x 2\ninclude "i0.bga"\n')
    config, _ = assemble(tmp_path / "p.bga")
    assert config[0, 0] == (0, 0x00FF, 0x5555, 0)


@pytest.mark.parametrize("text, message", [
    ("grid 2 x 2\ncell 0..99999999999999999999,0: E = w\n",
     "p.bga:2:6: a range holds at most 65536 values, not 100000000000000000000"),
    ("grid 2 x 2\ncell 0," + "9" * 5000 + ": E = w\n",
     "p.bga:2:8: the number 99999999999999999999... is too large"),
    ("grid 2 x 2\nlatency 1000001\n",
     "p.bga:2:9: the latency (subcycles) must be 0..1000000, not 1000001"),
    ("grid 2 x 2\nperiod 1000002\n",
     "p.bga:2:8: the period (subcycles) must be 2..1000000, not 1000002"),
    ("grid 2 x 2\nlatency 1\nin a W 0 skew 1000001\n",
     "p.bga:3:15: a skew (subcycles) must be -1000000..1000000, not 1000001"),
    ("grid 2 x 2\nlatency 1\nin a W 0 skew 1 skew 2\n",
     "p.bga:3:17: port a: skew is given twice"),
    ("grid 2 x 2\ncell 0,0: pass, E = w\n",
     "p.bga:2:11: pass stands alone: it sets all four outputs"),
    ("grid 2 x 2\nlatency 1\nin \"a b\" W 0\n",
     "p.bga:3:4: a port name is a letter or _ followed by"),
])
def test_bad_values(text, message):
    got = error(text)
    assert got.startswith(message), got


def test_empty_include_name(tmp_path):
    (tmp_path / "p.bga").write_text('grid 2 x 2\ninclude ""\n')
    with pytest.raises(AsmError) as info:
        assemble_program(tmp_path / "p.bga")
    assert str(info.value) == f"{tmp_path / 'p.bga'}:2:9: include names no file; write " \
                              'include "file.bga"'


def test_fifo_include_and_program_do_not_hang(tmp_path):
    os.mkfifo(tmp_path / "fifo.bga")
    (tmp_path / "p.bga").write_text('grid 2 x 2\ninclude "fifo.bga"\n')
    with pytest.raises(AsmError) as info:
        assemble_program(tmp_path / "p.bga")
    assert str(info.value) == f"{tmp_path / 'p.bga'}:2:9: {tmp_path / 'fifo.bga'} is not a file"
    with pytest.raises(AsmError) as info:
        assemble_program(tmp_path / "fifo.bga")
    assert str(info.value).startswith(f"{tmp_path / 'fifo.bga'}: not a file")


@pytest.mark.parametrize("text, message", [
    # the first output set twice in row-major order of the cells, then in the order written
    ("grid 4 x 4\ncell 3,0: S = n\ncell 1,1: E = w\ncell 0..3,0..1: E = w, S = n\n",
     "p.bga:4:24: output S of cell (3, 0) is set twice; first at p.bga:2:11"),
    ("grid 4 x 4\ncell 0,1: E = w\ncell 0..3,0..1: S = n, E = w\n",
     "p.bga:3:24: output E of cell (0, 1) is set twice; first at p.bga:2:11"),
    ("grid 4 x 4\ncell 2,3: W = 1\ncell 0..2 by 2,1..3 by 2: pass\n",
     "p.bga:3:1: output W of cell (2, 3) is set twice; first at p.bga:2:11"),
    ("grid 4 x 4\ncell 0..3,0..3: N = w, S = E = n, N = e\n",
     "p.bga:2:35: output N of cell (0, 0) is set twice; first at p.bga:2:17"),
    ("grid 4 x 4\ncell 1,1: N = 1\nplace wire(length=2) at 0,1\n",
     "p.bga:3:1: output N of cell (1, 1) is set twice; first at p.bga:2:11"),
])
def test_outputs_set_twice(text, message):
    assert error(text) == message


def test_a_million_cells_in_one_statement():
    config, _ = assemble("grid 1024 x 1024\ncell 0..1020 by 3,0..1023: pass\n"
                         "cell 1..1021 by 3,0..1023: E = w, S = ~n\n")
    luts = config.luts.copy()
    assert (luts[:, 0:1021:3] == (0xF0F0, 0xFF00, 0xAAAA, 0xCCCC)).all()
    assert (luts[:, 1:1022:3] == (0, 0xFF00, 0x5555, 0)).all()
    luts[:, 0:1021:3] = luts[:, 1:1022:3] = 0
    assert not luts.any()


@pytest.mark.parametrize("line, message", [
    ("{a}", "p.bga:2:1: unknown statement '" + "a" * 40 + "...'; use grid, order"),
    ("cell 0,0: E = {a}", "p.bga:2:15: unknown name '" + "a" * 40 + "...' in an expression"),
    ('include "{a}"', "p.bga:2:9: cannot read " + "a" * 40 + "...: File name too long"),
    ("place wire({a}=1) at 0,0", "p.bga:2:12: Macro wire has no parameter '" + "a" * 40 +
     "...'; its parameters are length, heading, bits"),
])
def test_huge_names_are_cut_short_in_messages(line, message):
    got = error("grid 2 x 2\n" + line.format(a="a" * 100_000) + "\n")
    assert got.startswith(message) and len(got) < 300, got


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
def test_line_ends(end):
    text = end.join(["grid 4 x 2", "\tcell 0,0:\tE = w  # a comment", "cell 1,0: E = (w",
                     "  ^ n)", ""])
    config, _ = assemble(text)
    assert config[0, 0][1] == 0xFF00 and config[1, 0][1] == 0x55AA
    bad = end.join(["grid 4 x 2", "", "cell 0,0: E = x", ""])
    assert error(bad) == "p.bga:3:15: unknown name 'x' in an expression; the inputs are n, e, " \
                         "s, w, the constants 0 and 1"


def test_include_name_with_a_nul():
    assert error('grid 2 x 2\ninclude "a\x00b.bga"\n') == \
        "p.bga:2:9: a file name cannot hold control characters (such as NUL)"


def test_a_file_included_twice(tmp_path):
    (tmp_path / "d.bga").write_text("cell 0,0: E = w\n")
    (tmp_path / "b.bga").write_text('include "d.bga"\n')
    (tmp_path / "p.bga").write_text('grid 2 x 2\ninclude "b.bga"\ninclude "d.bga"\n')
    with pytest.raises(AsmError) as info:
        assemble_program(tmp_path / "p.bga")
    d = tmp_path / "d.bga"
    assert str(info.value) == (f"{d}:1:11: output E of cell (0, 0) is set twice; first at "
                                    f"{d}:1:11; the same line twice: its file is included more "
                                    "than once")


def test_included_files_are_named_as_the_including_file_is(tmp_path, monkeypatch):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "top.bga").write_text('grid 2 x 2\ninclude "./part.bga"\n')
    (tmp_path / "lib" / "part.bga").write_text("cell 0,0: E = v\n")
    with pytest.raises(AsmError) as info:
        assemble_program(tmp_path / "lib" / "top.bga")
    assert str(info.value).startswith(f"{tmp_path / 'lib' / 'part.bga'}:1:15: unknown name")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AsmError) as info:
        assemble_program("lib/top.bga")
    assert str(info.value).startswith("lib/part.bga:1:15: unknown name")


def test_disagreeing_paths_name_their_skews():
    text = ("grid 4 x 2\ncell 0..3,0..1: E = w\nin x[0..1] W 0..1 skew 0..1\n"
            "out y[0..1] E 0..1 skew 0, -1\n")
    assert error(text).startswith(
        "p.bga:4:5: the paths disagree: x[0] -> y[0] takes 4 subcycles (latency 4), "
        "x[1] (skew 1) -> y[1] (skew -1) takes 4 (latency 6)")


def test_unicode_names():
    assert error("grid 4 x 4\nlatency 1\nin ä W 0\n") == \
        "p.bga:3:4: unexpected character 'ä'; names are ASCII, but a port name may be quoted " \
        "(in \"aä\" W 0)"
    _, portmap = assemble('grid 4 x 4\nlatency 1\nin "ä" W 0\nout "ö1" E 0\n')
    assert [p.name for p in portmap.ports] == ["ä", "ö1"]
    assert error("grid 4 x 4\ncell 0,0: E = w \u200b\n") == \
        "p.bga:2:17: unexpected character 'U+200B'"


@pytest.mark.parametrize("text", ["grid 2 x 2\ncell 0,0: E = (\n",
                                  "grid 2 x 2\ncell 0,0: E = ((w) ^",
                                  "grid 2 x 2\ncell 0,0: E = maj(\n\n"])
def test_an_open_parenthesis_at_the_end_of_the_file(text):
    assert error(text).endswith("this '(' is never closed; add ')'")
    assert error(text).startswith("p.bga:2:")
