"""Cell conventions of the software model (SPEC section 3): LUT addressing,
the table and word views of a cell's 64 configuration bits, and LUT construction from functions.

Every expected value comes from the SPEC's reference table or is computed here bit by bit,
independently of ``bitgrid.cell``.
"""

import random

import pytest

from bitgrid import cell
from bitgrid.cell import (PASS_THROUGH, REFLECTOR, address, lut_from_function, tables_to_word,
                          word_to_tables)

# SPEC section 3, "Reference values, both views".
SPEC_PASS_WORD = 0xFB73EA62D951C840
SPEC_PASS_TABLES = (0xF0F0, 0xFF00, 0xAAAA, 0xCCCC)
SPEC_REFLECTOR_WORD = 0xFEDCBA9876543210
SPEC_REFLECTOR_TABLES = (0xAAAA, 0xCCCC, 0xF0F0, 0xFF00)
SPEC_COPY = {"N": 0xAAAA, "E": 0xCCCC, "S": 0xF0F0, "W": 0xFF00}


def word_from_tables_by_hand(tables):
    """Word view built from SPEC's sentence "word a holds the 4 outputs for address a, bit d of
    the word being output d; word a is bits 4a..4a+3", one nibble at a time."""
    word = 0
    for a in range(16):
        nibble = sum(((tables[d] >> a) & 1) << d for d in range(4))
        word += nibble * 16 ** a
    return word


def tables_from_word_by_hand(word):
    """Table view from a binary string of the word (bit 0 is the last character)."""
    bits = format(word, "064b")[::-1]          # bits[k] is bit k of the word
    return tuple(int("".join(bits[4 * a + d] for a in range(16))[::-1], 2) for d in range(4))


# Directions and addresses (SPEC section 2 and 3).

def test_address_puts_input_n_in_bit_0():
    assert address(1, 0, 0, 0) == 1
    assert address(0, 1, 0, 0) == 2
    assert address(0, 0, 1, 0) == 4
    assert address(0, 0, 0, 1) == 8
    for a in range(16):
        assert address(a & 1, a >> 1 & 1, a >> 2 & 1, a >> 3 & 1) == a


# Reference constants.

def test_module_constants_match_spec():
    assert (cell.COPY_N, cell.COPY_E, cell.COPY_S, cell.COPY_W) == (0xAAAA, 0xCCCC, 0xF0F0,
                                                                    0xFF00)
    assert tuple(PASS_THROUGH) == SPEC_PASS_TABLES
    assert tuple(REFLECTOR) == SPEC_REFLECTOR_TABLES
    assert tuple(cell.ZERO) == (0, 0, 0, 0)


@pytest.mark.parametrize("word, tables", [
    (SPEC_PASS_WORD, SPEC_PASS_TABLES),
    (SPEC_REFLECTOR_WORD, SPEC_REFLECTOR_TABLES),
    (0, (0, 0, 0, 0)),
    ((1 << 64) - 1, (0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF)),
], ids=["pass-through", "reflector", "zero", "ones"])
def test_reference_words_and_tables(word, tables):
    assert tables_to_word(tables) == word
    assert word_to_tables(word) == tables
    assert isinstance(tables_to_word(tables), int)
    assert all(isinstance(t, int) for t in word_to_tables(word))
    # The helpers in this file agree with SPEC as well, so they can serve as oracles below.
    assert word_from_tables_by_hand(tables) == word
    assert tables_from_word_by_hand(word) == tables


@pytest.mark.parametrize("side", "NESW")
def test_copy_luts_forward_one_input(side):
    """Bit a of the copy-d LUT is input d of address a (SPEC's copy-N/E/S/W row)."""
    d = "NESW".index(side)
    expected = sum(((a >> d) & 1) << a for a in range(16))
    assert SPEC_COPY[side] == expected
    assert getattr(cell, f"COPY_{side}") == expected
    # A cell whose four outputs all copy that input: every nibble of its word is 0 or 0xF.
    word = tables_to_word((expected,) * 4)
    for a in range(16):
        assert (word >> 4 * a) & 0xF == (0xF if (a >> d) & 1 else 0)


def test_pass_through_and_reflector_behaviour():
    for a in range(16):
        n, e, s, w = (a >> 0) & 1, (a >> 1) & 1, (a >> 2) & 1, (a >> 3) & 1
        outs = [(t >> a) & 1 for t in SPEC_PASS_TABLES]
        assert outs == [s, w, n, e]        # straight on: N out = S in, ...
        outs = [(t >> a) & 1 for t in SPEC_REFLECTOR_TABLES]
        assert outs == [n, e, s, w]        # echo: N out = N in, ...
        # Word view: word a of the reflector is a itself, of the pass-through the rotated inputs.
        assert (SPEC_REFLECTOR_WORD >> 4 * a) & 0xF == a
        assert (SPEC_PASS_WORD >> 4 * a) & 0xF == s | w << 1 | n << 2 | e << 3


def test_round_trip_random_values():
    rng = random.Random(20240601)
    for _ in range(300):
        word = rng.getrandbits(64)
        tables = word_to_tables(word)
        assert tables == tables_from_word_by_hand(word)
        assert tables_to_word(tables) == word
        tables = tuple(rng.getrandbits(16) for _ in range(4))
        word = tables_to_word(tables)
        assert word == word_from_tables_by_hand(tables)
        assert word_to_tables(word) == tables


def test_bit_identity_every_bit():
    """Bit 4a+d of the word equals bit a of LUT[d], for every a and d, on single-bit values
    (each of the 64 bits maps to exactly one table bit) and on random values."""
    for d in range(4):
        for a in range(16):
            tables = [0, 0, 0, 0]
            tables[d] = 1 << a
            assert tables_to_word(tables) == 1 << (4 * a + d)
            assert word_to_tables(1 << (4 * a + d)) == tuple(tables)
    rng = random.Random(7)
    for _ in range(50):
        word = rng.getrandbits(64)
        tables = word_to_tables(word)
        for a in range(16):
            for d in range(4):
                assert (word >> (4 * a + d)) & 1 == (tables[d] >> a) & 1


def test_tables_accept_any_sequence():
    assert tables_to_word([0xF0F0, 0xFF00, 0xAAAA, 0xCCCC]) == SPEC_PASS_WORD
    assert tables_to_word(iter(SPEC_REFLECTOR_TABLES)) == SPEC_REFLECTOR_WORD


# lut_from_function.

@pytest.mark.parametrize("function, expected", [
    (lambda n: n, 0xAAAA),
    (lambda e: e, 0xCCCC),
    (lambda s: s, 0xF0F0),
    (lambda w: w, 0xFF00),
    (lambda n, e: n & e, 0x8888),
    (lambda n, e: n | e, 0xEEEE),
    (lambda s, n: n ^ s, 0x5A5A),                     # order of parameters does not matter
    (lambda n, e, s, w: n ^ e ^ s ^ w, 0x6996),       # parity
    (lambda n, e, s, w: not (n or e or s or w), 0x0001),
    (lambda n, e, s, w: n and e and s and w, 0x8000),
    (lambda n, e, s, w: n + e + s + w >= 2, 0xFEE8),  # at least two inputs set
    (lambda: 1, 0xFFFF),
    (lambda **kw: 0, 0x0000),
    (0, 0x0000),
    (1, 0xFFFF),
    (False, 0x0000),
    (True, 0xFFFF),
], ids=["n", "e", "s", "w", "and", "or", "xor_ns", "parity", "nor", "and4", "majority2",
        "const1_callable", "kwargs", "0", "1", "False", "True"])
def test_lut_from_function_known(function, expected):
    assert lut_from_function(function) == expected


def test_lut_from_function_matches_truth_table_by_hand():
    rng = random.Random(99)
    for _ in range(20):
        table = rng.getrandbits(16)
        # A function that looks up the table by address, written from SPEC's address rule.
        f = lambda n, e, s, w, table=table: (table >> (n + 2 * e + 4 * s + 8 * w)) & 1  # noqa
        assert lut_from_function(lambda n, e, s, w: f(n, e, s, w)) == table


def test_lut_from_function_builds_spec_cells():
    tables = tuple(lut_from_function(f) for f in
                   (lambda s: s, lambda w: w, lambda n: n, lambda e: e))
    assert tables == SPEC_PASS_TABLES
    assert tables_to_word(tables) == SPEC_PASS_WORD


# Errors.

@pytest.mark.parametrize("tables, message", [
    ((1, 2, 3), "A cell has 4 LUTs [N, E, S, W], not 3"),
    ((1, 2, 3, 4, 5), "A cell has 4 LUTs [N, E, S, W], not 5"),
    ((0x10000, 0, 0, 0), "LUT N must be an integer from 0 to 65535, not 65536"),
    ((0, -1, 0, 0), "LUT E must be an integer from 0 to 65535, not -1"),
    ((0, 0, 1.0, 0), "LUT S must be an integer from 0 to 65535, not 1.0"),
    ((0, 0, 0, "0xff"), "LUT W must be an integer from 0 to 65535, not '0xff'"),
])
def test_tables_to_word_errors(tables, message):
    with pytest.raises(ValueError) as info:
        tables_to_word(tables)
    assert str(info.value) == message


@pytest.mark.parametrize("word", [1 << 64, -1, 1.5, "0x1", None])
def test_word_to_tables_errors(word):
    with pytest.raises(ValueError) as info:
        word_to_tables(word)
    assert str(info.value) == f"A cell's word view must be an integer from 0 to {2**64 - 1}, not {word!r}"


def test_lut_from_function_errors():
    with pytest.raises(TypeError) as info:
        lut_from_function(2)
    assert str(info.value) == "A LUT is given by a function of n, e, s, w or by 0/1, not 2"
    with pytest.raises(TypeError) as info:
        lut_from_function("n")
    assert "not 'n'" in str(info.value)
    with pytest.raises(TypeError) as info:
        lut_from_function(lambda n, x, y: n)
    assert str(info.value) == "LUT functions take arguments among n, e, s, w; got x, y"
