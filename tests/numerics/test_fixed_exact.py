"""Bit-exactness of every fixed-point operation against exact Python-integer arithmetic."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fixedqmc as fq
import reference as R
from fixedqmc.numerics.overflow import OverflowLog
from strategies import overflow_modes, qformats, raw_words, rounding_modes

SEED = 12345


def fixed(words, fmt):
    return fq.Fixed.from_raw(np.array(words, dtype=object), fmt)


@st.composite
def two_operands(draw, max_n=6):
    fa, fb = draw(qformats()), draw(qformats())
    n = draw(st.integers(1, max_n))
    wa = draw(st.lists(raw_words(fa), min_size=n, max_size=n))
    wb = draw(st.lists(raw_words(fb), min_size=n, max_size=n))
    return fa, wa, fb, wb


OPS = {"add": (fq.add, lambda x, y: x + y), "sub": (fq.sub, lambda x, y: x - y),
       "mul": (fq.mul, lambda x, y: x * y)}


@settings(max_examples=400)
@given(ops=two_operands(), fo=qformats(), op=st.sampled_from(sorted(OPS)),
       rnd=rounding_modes, ovf=overflow_modes)
def test_binary_ops_match_exact_reference(ops, fo, op, rnd, ovf):
    fa, wa, fb, wb = ops
    fn, exact = OPS[op]
    log = OverflowLog()
    got = fn(fixed(wa, fa), fixed(wb, fb), fo, rnd, ovf, seed=SEED, log=log, name="z")
    n_over = 0
    for i, (x, y) in enumerate(zip(wa, wb)):
        want, over = R.quantize(exact(R.value(x, fa), R.value(y, fb)), fo, rnd, ovf,
                                R.random_bits(SEED, i))
        assert int(got.raw[i]) == want, (op, fa, fb, fo, rnd, ovf, x, y)
        n_over += over
    assert log.events["z"] == n_over and log.values["z"] == len(wa)


@settings(max_examples=300)
@given(data=st.data(), fa=qformats(), fo=qformats(), rnd=rounding_modes, ovf=overflow_modes,
       kind=st.sampled_from(["cast", "neg", "shift"]), n=st.integers(-64, 64))
def test_unary_ops_match_exact_reference(data, fa, fo, rnd, ovf, kind, n):
    words = data.draw(st.lists(raw_words(fa), min_size=1, max_size=6))
    a = fixed(words, fa)
    if kind == "cast":
        got, exact = fq.cast(a, fo, rnd, ovf, seed=SEED), lambda v: v
    elif kind == "neg":
        got, exact = fq.neg(a, fo, rnd, ovf, seed=SEED), lambda v: -v
    else:
        got, exact = fq.shift(a, n, fo, rnd, ovf, seed=SEED), lambda v: v * Fraction(2) ** n
    for i, w in enumerate(words):
        want, _ = R.quantize(exact(R.value(w, fa)), fo, rnd, ovf, R.random_bits(SEED, i))
        assert int(got.raw[i]) == want


@settings(max_examples=200)
@given(ops=two_operands())
def test_compare_is_exact(ops):
    fa, wa, fb, wb = ops
    got = fq.compare(fixed(wa, fa), fixed(wb, fb))
    for i, (x, y) in enumerate(zip(wa, wb)):
        d = R.value(x, fa) - R.value(y, fb)
        assert got[i] == (d > 0) - (d < 0)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=400)
@given(xs=st.lists(st.one_of(finite, st.floats(-8, 8)), min_size=1, max_size=6),
       fo=qformats(), rnd=rounding_modes, ovf=overflow_modes)
def test_from_float_matches_exact_reference(xs, fo, rnd, ovf):
    got = fq.Fixed.from_float(np.array(xs), fo, rnd, ovf, seed=SEED)
    for i, x in enumerate(xs):
        want, _ = R.quantize(Fraction(x), fo, rnd, ovf, R.random_bits(SEED, i))
        assert int(got.raw[i]) == want, (x, fo, rnd, ovf)


@settings(max_examples=200)
@given(data=st.data(), fa=qformats(max_word=40), acc=qformats(), rnd=rounding_modes,
       ovf=overflow_modes, running=st.booleans())
def test_accumulator_sum_is_sequential_and_exact(data, fa, acc, rnd, ovf, running):
    words = data.draw(st.lists(raw_words(fa), min_size=0, max_size=10))
    a = fixed(words, fa)
    got = (fq.accumulate if running else fq.fsum)(a, acc, None, rnd, ovf, seed=SEED)
    s, trace = 0, []
    for i, w in enumerate(words):
        s, _ = R.quantize(R.value(s, acc) + R.value(w, fa), acc, rnd, ovf, R.random_bits(SEED, i))
        trace.append(s)
    if running:
        assert [int(v) for v in got.raw] == trace
    else:
        assert int(got.raw) == s


def test_sum_along_axis_equals_rowwise_sums():
    rng = np.random.default_rng(0)
    x = fq.Fixed.from_float(rng.normal(size=(3, 4, 5)), "Q3.20")
    for axis in (0, 1, 2, -1):
        got = fq.fsum(x, "Q10.20", axis=axis)
        want = fq.Fixed.from_float(x.to_float().sum(axis=axis), "Q10.20")  # exact: no rounding
        assert np.array_equal(got.raw, want.raw)
        cum = fq.accumulate(x, "Q10.20", axis=axis)
        assert np.array_equal(cum.to_float(), np.cumsum(x.to_float(), axis=axis))


def test_stochastic_rounding_is_reproducible_and_unbiased():
    x = fq.Fixed.from_raw(np.full(20000, 1), "Q0.10")  # 2**-10, a quarter of an LSB of Q0.8
    a = fq.cast(x, "Q0.8", "stochastic", seed=1)
    b = fq.cast(x, "Q0.8", "stochastic", seed=1)
    c = fq.cast(x, "Q0.8", "stochastic", seed=2)
    assert np.array_equal(a.raw, b.raw)
    assert not np.array_equal(a.raw, c.raw)
    p = a.raw.mean()
    assert abs(p - 0.25) < 5 * np.sqrt(0.25 * 0.75 / x.size)


def test_raise_mode_reports_the_offending_variable():
    a = fq.Fixed.from_float([0.5, 1.5], "Q2.8")
    with pytest.raises(fq.FixedOverflowError, match=r"'prod'.*Q0\.8.*index 1"):
        fq.mul(a, a, "Q0.8", overflow="raise", name="prod")
    with pytest.raises(ValueError, match="does not fit|do not fit"):
        fq.Fixed.from_float([300.0], "Q3.4", overflow="raise")


def test_saturation_and_wrap_are_counted_per_variable():
    log = OverflowLog()
    a = fq.Fixed.from_float([1.0, 3.0, -3.0, 0.25], "Q3.4")
    s = fq.cast(a, "Q1.4", overflow="saturate", name="s", log=log)
    w = fq.cast(a, "Q1.4", overflow="wrap", name="w", log=log)
    assert s.to_float().tolist() == [1.0, 2.0 - 1 / 16, -2.0, 0.25]
    assert w.to_float().tolist() == [1.0, -1.0, 1.0, 0.25]
    assert log.events == {"s": 2, "w": 2}
    df = log.to_frame()
    assert df.set_index("variable").loc["s", "rate"] == 0.5


def test_64_bit_words_and_mixed_signedness_edges():
    umax = fq.Fixed.from_raw(np.array([2**64 - 1], dtype=object), "UQ64.0")
    smin = fq.Fixed.from_raw(np.array([-(2**63)], dtype=object), "Q63.0")
    assert umax.to_ints() == [2**64 - 1]
    assert fq.add(umax, smin, "UQ64.0").to_ints() == [2**63 - 1]
    assert fq.mul(umax, umax, "UQ64.0").to_ints() == [2**64 - 1]  # saturates
    assert fq.mul(smin, smin, "Q63.0", overflow="wrap").to_ints() == [0]
    tiny = fq.Fixed.from_raw(np.array([1], dtype=object), "UQ0.64")
    assert fq.add(umax, tiny, "UQ0.64", overflow="wrap").to_ints() == [1]
    assert fq.sub(tiny, umax, "Q0.63", "half_even").to_ints() == [-(2**63)]
