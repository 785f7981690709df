"""bitgrid.checks: the shared argument checks."""

import numpy as np
import pytest

from bitgrid.checks import check_bool, check_choice, check_int, check_real


def test_check_int_accepts_and_converts():
    assert check_int(np.int64(4), "lanes", minimum=1) == 4
    assert type(check_int(np.int64(4), "lanes")) is int
    assert check_int(6, "width", minimum=2, maximum=8, even=True) == 6


@pytest.mark.parametrize("value, kwargs, message", [
    (0, {"minimum": 1}, "lanes must be an integer of at least 1, not 0"),
    (True, {}, "lanes must be an integer, not True"),
    (2.0, {}, "lanes must be an integer, not 2.0"),
    (9, {"minimum": 1, "maximum": 8}, "lanes must be an integer from 1 to 8, not 9"),
    (3, {"even": True}, "lanes must be an even integer, not 3"),
    (-1, {"maximum": -2}, "lanes must be an integer of at most -2, not -1"),
])
def test_check_int_rejects(value, kwargs, message):
    with pytest.raises(ValueError) as info:
        check_int(value, "lanes", **kwargs)
    assert str(info.value) == message


def test_check_int_error_type():
    with pytest.raises(TypeError):
        check_int("3", "n", error=TypeError)


def test_check_real():
    assert check_real(1, "rate", minimum=0, maximum=1) == 1.0
    for bad in (float("nan"), True, "0.5", 1.5):
        with pytest.raises(ValueError, match="rate must be a number"):
            check_real(bad, "rate", minimum=0, maximum=1)


def test_check_bool_and_choice():
    assert check_bool(False, "ddr") is False
    with pytest.raises(ValueError) as info:
        check_bool(1, "ddr")
    assert str(info.value) == "ddr must be True or False, not 1"
    assert check_choice("a", "mode", ("a", "b")) == "a"
    with pytest.raises(ValueError) as info:
        check_choice("c", "mode", ("a", "b"))
    assert str(info.value) == "mode must be one of 'a', 'b', not 'c'"
