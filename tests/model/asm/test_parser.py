"""BitGrid assembly text: expressions against Python functions (bitgrid.cell.lut_from_function,
an independent model of SPEC section 3), statements, and errors with file, line and column."""

import pytest

from bitgrid.asm import AsmError, assemble, parse_expression
from bitgrid.cell import COPY_E, COPY_N, COPY_S, COPY_W, PASS_THROUGH, REFLECTOR, \
    lut_from_function


def maj(a, b, c):
    return (a & b) | (a & c) | (b & c)


@pytest.mark.parametrize("text, function", [
    ("n", lambda n: n),
    ("~e", lambda e: 1 - e),
    ("!e", lambda e: 1 - e),
    ("n & e", lambda n, e: n & e),
    ("n | e & s", lambda n, e, s: n | (e & s)),        # & binds tighter than |
    ("n ^ e & s", lambda n, e, s: n ^ (e & s)),        # & binds tighter than ^
    ("n | e ^ s", lambda n, e, s: n | (e ^ s)),        # ^ binds tighter than |
    ("(n | e) & s", lambda n, e, s: (n | e) & s),
    ("~n & e", lambda n, e: (1 - n) & e),
    ("~(n & e)", lambda n, e: 1 - (n & e)),
    ("n ^ e ^ w", lambda n, e, w: n ^ e ^ w),
    ("maj(n, e, w)", lambda n, e, w: maj(n, e, w)),
    ("maj(~n, e ^ s, w)", lambda n, e, s, w: maj(1 - n, e ^ s, w)),
    ("s ? e : n", lambda n, e, s: e if s else n),
    ("n ? e : s ? w : 0", lambda n, e, s, w: e if n else (w if s else 0)),  # right assoc
    ("n | e ? s : w", lambda n, e, s, w: s if (n | e) else w),              # ?: lowest
    ("0", 0),
    ("1", 1),
    ("n & 0", 0),
    ("n | 1", 1),
    ("N ^ E", lambda n, e: n ^ e),                    # inputs in any case
    ("0x96A5", None),
])
def test_expressions(text, function):
    expected = 0x96A5 if function is None else lut_from_function(function)
    assert parse_expression(text) == expected


def test_copy_luts():
    assert [parse_expression(x) for x in "nesw"] == [COPY_N, COPY_E, COPY_S, COPY_W]


def cells(text):
    config, _ = assemble(text)
    return config


def test_cells_ranges_and_shorthands():
    config = cells("""grid 4 x 4   // size
        cell 0,0: pass
        cell 1,0: reflect
        cell 2,0: zero      # claimed, all zero
        cell 0..3, 1: E = w
        cell 1..2, 2..3: N = S = n ^ s, W = 1
        cell 3,3: E = maj(n, e,
                           w);  cell 0,3: S = n
        """)
    assert config[0, 0] == PASS_THROUGH
    assert config[1, 0] == REFLECTOR
    assert config[2, 0] == (0, 0, 0, 0)
    for x in range(4):
        assert config[x, 1] == (0, COPY_W, 0, 0)
    xor = lut_from_function(lambda n, s: n ^ s)
    for x in (1, 2):
        for y in (2, 3):
            assert config[x, y] == (xor, 0, xor, 0xFFFF)
    assert config[3, 3] == (0, lut_from_function(lambda n, e, w: maj(n, e, w)), 0, 0)
    assert config[0, 3] == (0, 0, COPY_N, 0)
    assert config[3, 0] == (0, 0, 0, 0) and config[0, 2] == (0, 0, 0, 0)


def test_stepped_ranges():
    config = cells("grid 8 x 8\ncell 6..0 by 3, 1..7 by 2: E = w\n")
    assert sorted(zip(*config.luts[:, :, 1].nonzero())) == \
        [(y, x) for y in (1, 3, 5, 7) for x in (0, 3, 6)]
    _, portmap = assemble("grid 8 x 8\nlatency 9\nin a[0..3] N 7..1 by 2 skew 0..6 by 2\n")
    assert [(b.lane, b.skew) for b in portmap["a"].bits] == [(7, 0), (5, 2), (3, 4), (1, 6)]


def test_grid_forms():
    for text in ("grid 6 x 4", "grid 6x4", "GRID 6 X 4"):
        config = cells(text)
        assert (config.width, config.height) == (6, 4)


def test_includes(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "lane.bga").write_text('cell 0..3,0: E = w\ninclude "more.bga"\n')
    (tmp_path / "sub" / "more.bga").write_text("cell 0,1: S = n\n")
    (tmp_path / "top.bga").write_text('grid 4 x 2\ninclude "sub/lane.bga"\n')
    config, _ = assemble(tmp_path / "top.bga")
    assert assemble(str(tmp_path / "top.bga"))[0] == config     # a str naming a .bga file
    assert [config[x, 0] for x in range(4)] == [(0, COPY_W, 0, 0)] * 4
    assert config[0, 1] == (0, 0, COPY_N, 0)


def error(text, file="prog.bga"):
    with pytest.raises(AsmError) as info:
        assemble(text, file=file)
    return str(info.value)


@pytest.mark.parametrize("text, message", [
    ("grid 4 x 4\ncell 0,0: X = w\n",
     "prog.bga:2:11: unknown side 'X'; use N, E, S, W"),
    ("grid 4 x 4\ncell 0,0: E = w\ncell 0,0: S = n, E = e\n",
     "prog.bga:3:18: output E of cell (0, 0) is set twice; first at prog.bga:2:11"),
    ("grid 4 x 4\ncell 0..2,0: E = w\ncell 1,0: pass\n",
     "prog.bga:3:1: output E of cell (1, 0) is set twice; first at prog.bga:2:14"),
    ("grid 4 x 4\ncell 0,0: E = q\n",
     "prog.bga:2:15: unknown name 'q' in an expression; the inputs are n, e, s, w, the "
     "constants 0 and 1"),
    ("grid 4 x 4\ncell 0,0: E = n +\n", "prog.bga:2:17: unexpected character '+'"),
    ("grid 4 x 4\ncell 0,0: E = (n & e\n", "prog.bga:2:15: this '(' is never closed; add ')'"),
    ("grid 4 x 4\ncell 0,0: E = (n & e]\n", "prog.bga:2:21: expected ')', found ']'"),
    ("grid 4 x 4\ncell 0,0: E = 2\n", "prog.bga:2:15: a constant is 0 or 1, not 2"),
    ("grid 4 x 4\ncell 0,0: E = 0x10000\n", "prog.bga:2:15: a LUT table has 16 bits"),
    ("grid 4 x 4\ncell 0,0: E = maj(n, e)\n", "prog.bga:2:23: maj takes 3 arguments, not 2"),
    ("grid 4 x 4\ncell 4,0: E = w\n",
     "prog.bga:2:1: cell x 4 is outside the 4 x 4 grid (0..3)"),
    ("grid 4 x 4\ncell 0,0..4: E = w\n",
     "prog.bga:2:1: cell y 4 is outside the 4 x 4 grid (0..3)"),
    ("cell 0,0: E = w\n", "prog.bga:1:1: the grid size comes first"),
    ("# nothing\n", "prog.bga: no 'grid W x H' line"),
    ("grid 4 x 4\ngrid 4 x 4\n", "prog.bga:2:1: the grid size is given twice; first at "
                                 "prog.bga:1:1"),
    ("grid 3 x 4\n", "prog.bga:1:6: the grid width must be even (SPEC section 1), not 3"),
    ("grid 4x5\n", "prog.bga:1:8: the grid height must be even (SPEC section 1), not 5"),
    ("grid 4 x 70000\n", "prog.bga:1:10: the grid height must be 2..65534, not 70000"),
    ("grid 4 x 4\nwire 0,0\n", "prog.bga:2:1: unknown statement 'wire'"),
    ("grid 4 x 4\ncell 0,0 E = w\n", "prog.bga:2:10: expected ':' after the cell's coordinates"),
    ("grid 4 x 4\ncell 0,0: E = w S = n\n", "prog.bga:2:17: unexpected 'S'; one statement "
                                            "per line"),
    ('grid 4 x 4\ninclude "missing.bga"\n', "prog.bga:2:9: cannot read"),
    ('grid 4 x 4\ninclude "x.bga\n', "prog.bga:2:9: unterminated string"),
    ("grid 4 x 4\norder zigzag\n", "prog.bga:2:7: unknown scan order 'zigzag'"),
    ("grid 4 x 4\nperiod 3\n", "prog.bga:2:1: the period is an even number of subcycles"),
    ("grid 8 x 8\ncell 0..7 by 2,0: E = w\n",
     "prog.bga:2:9: 0..7 by 2 does not end on 7; the values are 0, 2, ..."),
    ("grid 8 x 8\ncell 0..6 by 0,0: E = w\n",
     "prog.bga:2:14: the step of a range (A..B by D) must be at least 1, not 0"),
    ("grid 4 x 4\ncell 0..99999999,0: E = w\n",
     "prog.bga:2:6: a range holds at most 65536 values, not 100000000"),
    ("grid 4 x 4\nin a[0..99999999] W 0\n",
     "prog.bga:2:6: a range holds at most 65536 values, not 100000000"),
])
def test_errors(text, message):
    text_error = error(text)
    assert text_error.startswith(message), text_error


def test_include_cycle(tmp_path):
    (tmp_path / "a.bga").write_text('grid 2 x 2\ninclude "b.bga"\n')
    (tmp_path / "b.bga").write_text('include "a.bga"\n')
    with pytest.raises(AsmError) as info:
        assemble(tmp_path / "a.bga")
    text = str(info.value)
    assert text.startswith(f"{tmp_path / 'b.bga'}:1:9: include cycle") or \
        ":1:9: include cycle" in text
    assert "a.bga -> b.bga -> a.bga" in text


def test_error_in_included_file_names_it(tmp_path):
    (tmp_path / "part.bga").write_text("\ncell 0,0: E = v\n")
    (tmp_path / "top.bga").write_text('grid 2 x 2\ninclude "part.bga"\n')
    with pytest.raises(AsmError) as info:
        assemble(tmp_path / "top.bga")
    assert str(info.value).endswith("part.bga:2:15: unknown name 'v' in an expression; the "
                                    "inputs are n, e, s, w, the constants 0 and 1")
