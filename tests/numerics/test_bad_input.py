"""Bad input to the fixed-point API gives a ValueError naming the problem (never a numba
traceback)."""

import numpy as np
import pytest

import fixedqmc as fq


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_floats_are_refused(value):
    with pytest.raises(fq.FixedQMCError, match=rf"value {value} at index \(1,\) is not finite"):
        fq.Fixed.from_float([0.5, value], "Q3.4")


def test_raw_words_outside_the_format():
    with pytest.raises(fq.FormatError, match=r"raw word 16 is outside Q0.3 \(allowed -8..7\)"):
        fq.Fixed.from_raw([1, 16], "Q0.3")
    with pytest.raises(fq.FormatError, match="must be integers"):
        fq.Fixed.from_raw([0.5], "Q0.3")
    with pytest.raises(fq.FormatError, match="outside UQ64.0"):
        fq.Fixed.from_raw(np.array([-1], dtype=object), "UQ64.0")


def test_unknown_modes_list_the_allowed_ones():
    x = fq.Fixed.from_float([0.5], "Q3.4")
    with pytest.raises(fq.ModeError, match="unknown rounding mode 'nearest'; allowed: floor"):
        fq.add(x, x, "Q3.4", rounding="nearest")
    with pytest.raises(fq.ModeError, match="unknown overflow mode 'clip'; allowed: wrap"):
        fq.cast(x, "Q3.4", overflow="clip")


def test_wrong_operands_and_arguments():
    x = fq.Fixed.from_float([0.5], "Q3.4")
    with pytest.raises(fq.FixedQMCError, match="second operand must be a Fixed array"):
        fq.mul(x, 0.5, "Q3.4")
    with pytest.raises(fq.FixedQMCError, match=r"\|n\| <= 64"):
        fq.shift(x, 65)
    with pytest.raises(fq.FormatError, match="malformed format"):
        fq.add(x, x, "Q3")
    with pytest.raises(fq.FixedQMCError, match="axis 3 is out of range"):
        fq.fsum(x, "Q8.4", axis=3)
    with pytest.raises(fq.FixedQMCError, match="needs real numbers"):
        fq.Fixed.from_float(["a"], "Q3.4")
    with pytest.raises(ValueError, match="broadcast"):
        fq.add(fq.Fixed.from_float(np.ones((2, 3)), "Q3.4"),
               fq.Fixed.from_float(np.ones(4), "Q3.4"), "Q3.4")
