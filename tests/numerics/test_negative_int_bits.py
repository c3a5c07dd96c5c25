"""Formats with negative integer bits (values far below 1, e.g. UQ-10.26): notation, sizing
from a range, and exact arithmetic against the reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fixedqmc as fq
import reference as R
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.policy import format_for_range
from fixedqmc.numerics.qformat import QFormat
from strategies import overflow_modes, qformats_scaled, raw_words, rounding_modes

SEED = 99


def test_notation_range_and_sizing():
    f = QFormat.parse("UQ-10.26")
    assert f == QFormat.parse("fxp-u16/26") == QFormat(False, -10, 26)
    assert f.word_bits == 16 and str(f) == "UQ-10.26" and f.to_fxp() == "fxp-u16/26"
    assert f.max == 2.0**-10 - 2.0**-26 and f.min == 0.0
    g = QFormat.parse("Q-3.8")  # signed: 1 + (-3) + 8 = 6 bits, [-2**-3, 2**-3)
    assert g.word_bits == 6 and g.min == -(2.0**-3) and g.max == 2.0**-3 - 2.0**-8
    assert format_for_range(0.0, 2.0**-10 - 2.0**-40, 16) == f
    assert format_for_range(-2.0**-4, 2.0**-5, 12) == QFormat(True, -3, 14)
    # at most 64 fractional bits: a 64-bit word for [0, 2**-10) is UQ0.64
    assert format_for_range(0.0, 2.0**-10 - 2.0**-40, 64) == QFormat(False, 0, 64)
    assert format_for_range(0.0, 0.75, 16) == QFormat(False, 0, 16)  # unchanged above 1/2


@given(qformats_scaled())
def test_round_trip_both_notations(f):
    assert QFormat.parse(str(f)) == f and QFormat.parse(f.to_fxp()) == f
    assert f.max_raw - f.min_raw == 2**f.word_bits - 1
    if f.word_bits <= 53:  # f.min and f.max exact as floats
        lo = -f.max if f.signed else 0.0  # (the policy sizes by max |x| < 2**int_bits)
        assert format_for_range(lo, f.max, f.word_bits).frac_bits >= f.frac_bits


@settings(max_examples=200)
@given(data=st.data(), fa=qformats_scaled(), fb=qformats_scaled(), fo=qformats_scaled(),
       op=st.sampled_from(["add", "sub", "mul"]), rnd=rounding_modes, ovf=overflow_modes)
def test_arithmetic_matches_reference(data, fa, fb, fo, op, rnd, ovf):
    wa = data.draw(st.lists(raw_words(fa), min_size=1, max_size=5))
    wb = data.draw(st.lists(raw_words(fb), min_size=len(wa), max_size=len(wa)))
    fn = getattr(fq, op)
    exact = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    log = OverflowLog()
    a = fq.Fixed.from_raw(np.array(wa, dtype=object), fa)
    b = fq.Fixed.from_raw(np.array(wb, dtype=object), fb)
    got = fn(a, b, fo, rnd, ovf, seed=SEED, log=log, name="z")
    n_over = 0
    for i, (x, y) in enumerate(zip(wa, wb)):
        want, over = R.quantize(exact(R.value(x, fa), R.value(y, fb)), fo, rnd, ovf,
                                R.random_bits(SEED, i))
        assert int(got.raw[i]) == want
        n_over += over
    assert log.events["z"] == n_over


@settings(max_examples=100)
@given(fo=qformats_scaled(), rnd=rounding_modes, ovf=overflow_modes,
       x=st.lists(st.floats(-2.0**-8, 2.0**-8, allow_nan=False), min_size=1, max_size=6))
def test_from_float_and_back(fo, rnd, ovf, x):
    got = fq.Fixed.from_float(np.array(x), fo, rnd, ovf, seed=SEED, log=OverflowLog())
    for i, v in enumerate(x):
        want, _ = R.quantize(R.Fraction(v), fo, rnd, ovf, R.random_bits(SEED, i))
        assert int(got.raw[i]) == want
    back = got.to_float()
    for i in range(len(x)):
        assert back[i] == float(R.value(int(got.raw[i]), fo))


def test_word_too_small_is_refused():
    with pytest.raises(fq.FormatError, match="at least one bit"):
        QFormat(False, -17, 16)
