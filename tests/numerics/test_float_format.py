"""Floating-point formats of any width (fixedqmc.numerics.float_format): the compiled cast
against the exact reference on Fractions, against ml_dtypes and numpy, encode/decode, the
spec grammar.

Peers' differences from the exact reference, and how the tests handle them:

* ml_dtypes casts float64 to bfloat16 / float8_* through float32 (two roundings): e.g.
  ``1 + 2**-8 + 2**-40`` becomes bfloat16 1.0, not the correctly rounded 1 + 2**-7.  The
  tests compare on float32 inputs (one rounding, bit-identical) and check that on float64
  inputs ml_dtypes equals our cast of our float32 cast (:func:`test_ml_dtypes_double_rounds`).
* ml_dtypes turns an E4M3FN overflow (and inf) into NaN; ``fp8e4m3`` saturates to +-448
  (OCP saturation mode / PTX ``satfinite``), so it is compared where ml_dtypes is finite,
  and ``fp8e4m3:inf`` (overflow to NaN) is compared everywhere.
* numpy's float64 -> float16 cast is correctly rounded and matches everywhere.
"""

import math
from fractions import Fraction

import ml_dtypes
import numba
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fixedqmc.errors import FixedQMCError, PrecisionSpecError
from fixedqmc.numerics import float_format as F
from fixedqmc.numerics.float_format import (
    FloatFormat,
    decode,
    encode,
    parse_float_format,
    reference_round,
    round_to_format,
    round_with_events,
)
from fixedqmc.numerics.quantize import random_bits
from tests.strategies import float_format_values, float_formats

# One xdist worker runs this module's tests (make test: --dist loadgroup):
# the float-format operations compile once for both modules.
pytestmark = pytest.mark.xdist_group("float_ops")

DETERMINISTIC = [r for r in F.ROUNDINGS if r != "stochastic"]


def bits64(v: float) -> int:
    """float64 bit pattern, all NaNs mapped to one."""
    if math.isnan(v):
        return -1
    return int(np.array([v], dtype=np.float64).view(np.uint64)[0])


def ref_float(r) -> float:
    """The reference's result as a float64 (exact: every value of a format is a float64)."""
    f = float(r)
    assert isinstance(r, float) or Fraction(f) == r
    return f


@st.composite
def format_and_values(draw, max_size=12, fn=None):
    fmt = draw(float_formats(fn=fn))
    xs = draw(st.lists(float_format_values(fmt), min_size=1, max_size=max_size))
    return fmt, xs


# ---------------------------------------------------------------- exact reference --
@settings(max_examples=300, deadline=None)
@given(format_and_values(), st.sampled_from(DETERMINISTIC))
@example((FloatFormat(8, 7), [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 1 + 2**-8 + 2**-40]),
         "nearest_even")
@example((FloatFormat(2, 1, subnormals=False), [0.4, 0.5, 0.99, -1e-300, 3.0, 3.5]), "odd")
@example((FloatFormat(11, 52), [5e-324, -5e-324, 1.7976931348623157e308, -0.0]), "toward_pos")
@example((FloatFormat(4, 3, fn=True), [448.0, 464.0, 480.0, -1e9, math.inf]), "toward_neg")
def test_deterministic_modes_equal_reference(fmt_xs, rounding):
    fmt, xs = fmt_xs
    got = round_to_format(np.array(xs), fmt, rounding)
    for x, g in zip(xs, got):
        want = ref_float(reference_round(x, fmt, rounding))
        assert bits64(g) == bits64(want), (fmt.spec, rounding, x.hex(), g, want)


@settings(max_examples=150, deadline=None)
@given(format_and_values(), st.integers(0, 2**64 - 1), st.integers(0, 2**32))
def test_stochastic_equals_reference_with_same_bits(fmt_xs, seed, variable):
    fmt, xs = fmt_xs
    got = round_to_format(np.array(xs), fmt, "stochastic", seed=seed, variable=variable)
    for i, (x, g) in enumerate(zip(xs, got)):
        rb = int(random_bits(np.uint64(seed), np.uint64(i), np.uint64(variable)))
        want = ref_float(reference_round(x, fmt, "stochastic", random_bits=rb))
        assert bits64(g) == bits64(want), (fmt.spec, x.hex(), g, want)


@settings(max_examples=100, deadline=None)
@given(format_and_values(max_size=20), st.sampled_from(F.ROUNDINGS))
def test_events_and_range(fmt_xs, rounding):
    """Every result is in the format (decode(encode) is the identity on it); the event
    counts match a recount from inputs and results."""
    fmt, xs = fmt_xs
    x = np.array(xs)
    r, ev = round_with_events(x, fmt, rounding, seed=3)
    back = decode(encode(x, fmt, rounding, seed=3), fmt)
    assert [bits64(v) for v in back] == [bits64(v) for v in r]
    finite_in = np.isfinite(x)
    assert ev["nan"] == int(np.isnan(r).sum())
    assert ev["underflow"] == int((finite_in & (x != 0) & (r == 0)).sum())
    sub = np.isfinite(r) & (r != 0) & (np.abs(r) < fmt.min_normal)
    assert ev["subnormal"] == int(sub.sum())
    if not fmt.subnormals:
        assert ev["subnormal"] == 0
    if fmt.exp_bits <= 10:
        # overflow: the rounding with a wider exponent range (the same grid at and above
        # 2**emin) exceeds the largest finite magnitude
        wide = FloatFormat(11, fmt.man_bits)
        over = 0
        for i, v in enumerate(xs):
            if math.isfinite(v):
                rb = int(random_bits(np.uint64(3), np.uint64(i), np.uint64(0)))
                w = reference_round(v, wide, rounding, random_bits=rb)
                over += (math.isinf(w) if isinstance(w, float) else abs(w) > fmt.max_exact)
        assert ev["overflow"] == over
    else:
        assert ev["overflow"] >= int((np.isfinite(x) & ~np.isfinite(r)).sum())


def test_specials_and_signed_zeros():
    x = np.array([0.0, -0.0, -1e-300, 1e-300, math.nan, -math.inf, math.inf])
    r = round_to_format(x, "bfloat16")
    assert [math.copysign(1, v) for v in r[:4]] == [1, -1, -1, 1] and (r[:4] == 0).all()
    assert math.isnan(r[4]) and r[5] == -math.inf and r[6] == math.inf
    assert list(round_to_format(x[5:], "bfloat16:saturate")) == [-FloatFormat(8, 7).max_finite,
                                                                 FloatFormat(8, 7).max_finite]
    assert list(round_to_format(x[5:], "fp8e4m3")) == [-448.0, 448.0]
    assert np.isnan(round_to_format(x[5:], "fp8e4m3:inf")).all()
    _, ev = round_with_events(np.array([1e300, -1e300, 1e-300, math.nan, 1e-39]), "bfloat16")
    assert ev == {"overflow": 2, "underflow": 1, "subnormal": 1, "nan": 1}


# ------------------------------------------------------------------------ stochastic --
def test_stochastic_thread_independent_and_seeded():
    rng = np.random.default_rng(7)
    n = 3 * F.CHUNK + 11
    x = rng.standard_normal(n) * np.exp2(rng.integers(-140, 140, n))
    x[::5] = 1 + 2.0**-8  # a bfloat16 tie
    saved = numba.get_num_threads()
    try:
        out = {}
        for t in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(t)
            out[t] = round_with_events(x, "bfloat16:stochastic", seed=11, variable=2)
    finally:
        numba.set_num_threads(saved)
    (r1, e1), (r2, e2) = out.values()
    assert r1.tobytes() == r2.tobytes() and e1 == e2
    same = round_to_format(x, "bfloat16:stochastic", seed=11, variable=2)
    assert same.tobytes() == r1.tobytes()
    ties = x[::5]
    for other in ({"seed": 12, "variable": 2}, {"seed": 11, "variable": 3}):
        r_other = round_to_format(x, "bfloat16:stochastic", **other)[::5]
        assert (r_other != r1[::5]).any()
    up = (r1[::5] > ties).mean()
    assert 0.45 < up < 0.55  # a tie rounds up half the time
    assert set(np.unique(r1[::5])) == {1.0, 1 + 2.0**-7}


# ------------------------------------------------------------------- ml_dtypes / numpy --
def _inputs(rng, n, dtype=np.float64):
    """Values spread over all scales and signs, plus the edges."""
    x = rng.standard_normal(n) * np.exp2(rng.integers(-160, 160, n).astype(float))
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 480.0, 57344.0,
                            61440.0, 65504.0, 65520.0, 3.3895313892515355e38,
                            3.396e38, 2.0**-9, 2.0**-10, 3 * 2.0**-11, 2.0**-17, 2.0**-24,
                            2.0**-25, 3 * 2.0**-26, 2.0**-133, 2.0**-134]])
    return x.astype(dtype).astype(np.float64)


def _same(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.array_equal(a.view(np.uint64), b.view(np.uint64)) or (
        np.array_equal(np.isnan(a), np.isnan(b))
        and np.array_equal(np.where(np.isnan(a), 0, a).view(np.uint64),
                           np.where(np.isnan(b), 0, b).view(np.uint64)))


PEERS = [("bfloat16", ml_dtypes.bfloat16, np.uint16),
         ("fp8e4m3:inf", ml_dtypes.float8_e4m3fn, np.uint8),
         ("fp8e5m2", ml_dtypes.float8_e5m2, np.uint8)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("spec,dtype,view", PEERS)
def test_ml_dtypes_on_float32_inputs(spec, dtype, view):
    """Bit-identical values and patterns (float32 inputs: ml_dtypes rounds once)."""
    rng = np.random.default_rng(1)
    x = _inputs(rng, 20000, np.float32)
    # ties and near-ties of every format, exact in float32
    m = parse_float_format(spec).man_bits
    k = np.arange(1, 300, dtype=np.float64)
    x = np.concatenate([x, (1 + (k + 0.5) * 2.0**-m) * np.exp2(rng.integers(-10, 10, k.size))])
    x = np.concatenate([x, -x])
    peer = x.astype(np.float32).astype(dtype)
    assert _same(round_to_format(x, spec), peer.astype(np.float64))
    ours = encode(x, spec)
    nan = np.isnan(x)
    assert np.array_equal(ours[~nan], peer.view(view)[~nan].astype(np.uint64))
    assert np.isnan(decode(ours[nan], spec)).all()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_fp8e4m3_saturates_where_ml_dtypes_gives_nan():
    """fp8e4m3 (saturating) equals ml_dtypes' float8_e4m3fn wherever ml_dtypes' result is
    finite; where ml_dtypes turns a finite overflow or inf into NaN it gives +-448."""
    x = _inputs(np.random.default_rng(2), 20000, np.float32)
    peer = x.astype(np.float32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
    ours = round_to_format(x, "fp8e4m3")
    fin = np.isfinite(peer)
    assert _same(ours[fin], peer[fin])
    differ = ~fin & ~np.isnan(x)
    assert differ.sum() > 10
    assert np.array_equal(ours[differ], np.copysign(448.0, x[differ]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("spec,dtype,view", PEERS)
def test_ml_dtypes_double_rounds(spec, dtype, view):
    """On float64 inputs ml_dtypes rounds to float32 first: it equals our float32 cast
    followed by our cast, and differs from the (correct) single rounding somewhere."""
    x = _inputs(np.random.default_rng(3), 20000)
    m = parse_float_format(spec).man_bits
    near_tie = (1 + 2.0**-(m + 1) + 2.0**-40) * np.exp2(np.arange(-5, 6))
    x = np.concatenate([x, near_tie, -near_tie])
    peer = x.astype(dtype).astype(np.float64)
    assert _same(round_to_format(round_to_format(x, "float32"), spec), peer)
    once = round_to_format(near_tie, spec)
    assert (once != near_tie.astype(dtype).astype(np.float64)).all()
    assert all(bits64(o) == bits64(ref_float(reference_round(v, spec)))
               for o, v in zip(once, near_tie))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("spec,dtype,view", [("float16", np.float16, np.uint16),
                                             ("float:e8m23", np.float32, np.uint32),
                                             ("float:e11m52", np.float64, np.uint64)])
def test_numpy_casts(spec, dtype, view):
    rng = np.random.default_rng(4)
    x = _inputs(rng, 20000)
    x = np.concatenate([x, rng.standard_normal(2000) * 2.0**-1030,
                        (1 + (np.arange(1, 200) + 0.5) * 2.0**-10) * 2.0**-3,
                        np.float32(1.5) + np.arange(1, 200) * 2.0**-24 / 2 * 2.0**0,
                        [2.0**-1074, 2.0**-1075, 3 * 2.0**-1076, 1.7976931348623157e308]])
    x = np.concatenate([x, -x])
    peer = x.astype(dtype)
    assert _same(round_to_format(x, spec), peer.astype(np.float64))
    nan = np.isnan(x)
    assert np.array_equal(encode(x, spec)[~nan], peer.view(view)[~nan].astype(np.uint64))


# ------------------------------------------------------------------- encode / decode --
@settings(max_examples=100, deadline=None)
@given(float_formats(), st.data())
def test_decode_encode_round_trip(fmt, data):
    """decode is the inverse of encode on rounded values, and encode(decode(p)) = p for every
    non-NaN pattern p."""
    n = fmt.n_bits
    pats = data.draw(st.lists(st.one_of(st.integers(0, 2**n - 1),
                                        st.sampled_from([0, 1, 2**n - 1, 2**(n - 1),
                                                         (2**fmt.exp_bits - 1) << fmt.man_bits])),
                              min_size=1, max_size=20))
    p = np.array(pats, dtype=np.uint64)
    if not fmt.subnormals:  # subnormal patterns decode to values the format never produces
        p = p[((p >> np.uint64(fmt.man_bits)) & np.uint64(2**fmt.exp_bits - 1) != 0)
              | (p & np.uint64(2**fmt.man_bits - 1) == 0)]
    v = decode(p, fmt)
    fin = ~np.isinf(v)  # (saturating formats clamp inf)
    assert _same(round_to_format(v[fin], fmt, "toward_zero"), v[fin])  # decoded values are in fmt
    nan = np.isnan(v)
    back = encode(v, fmt)
    ok = ~nan
    if fmt.overflow == "saturate":
        ok &= ~np.isinf(v)
    assert np.array_equal(back[ok], p[ok])
    assert np.isnan(decode(back[nan], fmt)).all()


def test_named_format_properties():
    assert parse_float_format("bfloat16").max_finite == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    e4 = parse_float_format("fp8e4m3")
    assert (e4.max_finite, e4.n_bits, e4.fn, e4.overflow) == (448.0, 8, True, "saturate")
    e5 = parse_float_format("fp8e5m2")
    assert (e5.max_finite, e5.min_normal, e5.min_subnormal) == (57344.0, 2.0**-14, 2.0**-16)
    f16 = parse_float_format("float16")
    assert (f16.max_finite, f16.epsilon) == (65504.0, 2.0**-10)
    assert parse_float_format("tf32").n_bits == 19
    assert parse_float_format("float64").max_finite == np.finfo(np.float64).max
    assert parse_float_format("float32").min_subnormal == 2.0**-149
    for name, dtype in [("bfloat16", ml_dtypes.bfloat16), ("fp8e4m3", ml_dtypes.float8_e4m3fn),
                        ("fp8e5m2", ml_dtypes.float8_e5m2)]:
        fi = ml_dtypes.finfo(dtype)
        f = parse_float_format(name)
        assert (f.max_finite, f.min_normal, f.epsilon) == (float(fi.max), float(fi.tiny),
                                                            float(fi.eps))


# ---------------------------------------------------------------------- spec grammar --
def test_spec_grammar():
    assert parse_float_format("bfloat16:toward_zero") == FloatFormat(8, 7, rounding="toward_zero")
    assert parse_float_format("float:e6m9:stochastic:nosubnormals,saturate") == FloatFormat(
        6, 9, subnormals=False, overflow="saturate", rounding="stochastic")
    assert parse_float_format("fp8e4m3:inf") == FloatFormat(4, 3, fn=True)
    assert parse_float_format("float:e5m2:saturate") == FloatFormat(5, 2, overflow="saturate")
    assert round_to_format([1.0 + 2**-9], "bfloat16:toward_pos")[0] == 1 + 2**-7


@settings(max_examples=100, deadline=None)
@given(float_formats(), st.sampled_from(F.ROUNDINGS))
def test_spec_round_trip(fmt, rounding):
    f = FloatFormat(fmt.exp_bits, fmt.man_bits, fmt.subnormals, fmt.overflow, fmt.fn, rounding)
    assert parse_float_format(f.spec) == f


@pytest.mark.parametrize("text,named", [
    ("float:e1m5", "E=1"), ("float:e12m5", "E=12"), ("float:e8m0", "M=0"),
    ("float:e8m53", "M=53"), ("bfloat", "'bfloat'"), ("float:8m7", "'8m7'"),
    ("float:e8m7:nearest", "'nearest'"), ("bfloat16:toward_zero:satruate", "'satruate'"),
    ("float:e11m52:fn", "E=11"), ("float", "float"), ("float:e8mx", "'e8mx'"),
    ("bfloat16:odd:inf:fn", "too many")])
def test_bad_specs(text, named):
    with pytest.raises(PrecisionSpecError) as err:
        parse_float_format(text)
    assert named in str(err.value)
    assert isinstance(err.value, FixedQMCError)
    if "'" in named and named != "'8m7'" and named != "'e8mx'" and named != "'bfloat'":
        assert "nearest_even" in str(err.value) and "saturate" in str(err.value)


def test_bad_rounding_argument():
    with pytest.raises(PrecisionSpecError, match="'up'.*nearest_even"):
        round_to_format([1.0], "bfloat16", "up")
