"""Correctly rounded arithmetic into float formats (fixedqmc.numerics.float_ops): every
operation and rounding mode against the exact reference on Fractions (``reference_round`` of
the exact result; for sqrt the exact root bracketed by ``math.isqrt`` on scaled integers),
against numpy float32 / float64 arithmetic, thread-count independence, stochastic
reproducibility, special values and events."""

import math
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fixedqmc.numerics import float_format as F
from fixedqmc.numerics import float_ops as O
from fixedqmc.numerics.float_format import FloatFormat, reference_round
from fixedqmc.numerics.quantize import random_bits
from tests.strategies import float_formats, float_op_operands

# One xdist worker runs this module's tests (make test: --dist loadgroup):
# the float-format operations compile once for both modules.
pytestmark = pytest.mark.xdist_group("float_ops")

INF = math.inf
NAN = math.nan


def bits64(v: float) -> int:
    """float64 bit pattern, all NaNs mapped to one."""
    if math.isnan(v):
        return -1
    return int(np.array([v], dtype=np.float64).view(np.uint64)[0])


def exact_sqrt(a: float):
    """sqrt(a) for finite a > 0 as a Fraction that rounds as the exact root does: the root
    itself if rational, else a point strictly inside the 2**-1200-wide bracket from
    math.isqrt (every breakpoint and every 2**-64 step of an ulp of every format, at least
    2**-1138, lies on that grid, so no rounding decision changes)."""
    k = 1200
    n = Fraction(a) * 2 ** (2 * k)
    assert n.denominator == 1
    r = math.isqrt(n.numerator)
    if r * r == n.numerator:
        return Fraction(r, 2**k)
    return Fraction(2 * r + 1, 2 ** (k + 1))


def reference_op(op, a, b, fmt, mode, rb=None):
    """The exact result of ``op`` rounded once by ``reference_round`` (IEEE special values
    as the module docstring states); a float label for zeros, infinities and NaN."""

    def rnd(v):
        return reference_round(v, fmt, mode, rb)

    if op == "sqrt":
        if math.isnan(a) or (a < 0):
            return NAN
        if a == 0 or math.isinf(a):
            return rnd(a)
        return rnd(exact_sqrt(a))
    if math.isnan(a) or math.isnan(b):
        return NAN
    if op == "sub":
        op, b = "add", -b
    if op == "add":
        if math.isinf(a) or math.isinf(b):
            if math.isinf(a) and math.isinf(b) and a != b:
                return NAN
            return rnd(a if math.isinf(a) else b)
        s = Fraction(a) + Fraction(b)
        if s == 0:
            if a == 0 and b == 0 and math.copysign(1, a) == math.copysign(1, b):
                return a
            return -0.0 if mode == "toward_neg" else 0.0
        return rnd(s)
    neg = (math.copysign(1, a) < 0) != (math.copysign(1, b) < 0)
    signed_inf = -INF if neg else INF
    signed_zero = -0.0 if neg else 0.0
    if op == "mul":
        if math.isinf(a) or math.isinf(b):
            return NAN if (a == 0 or b == 0) else rnd(signed_inf)
        if a == 0 or b == 0:
            return signed_zero
        return rnd(Fraction(a) * Fraction(b))
    assert op == "div"
    if math.isinf(a):
        return NAN if math.isinf(b) else rnd(signed_inf)
    if math.isinf(b):
        return signed_zero
    if b == 0:
        return NAN if a == 0 else rnd(signed_inf)
    if a == 0:
        return signed_zero
    return rnd(Fraction(a) / Fraction(b))


def expected_events(op, a, b, fmt, want):
    """nan / subnormal / underflow flags of one result (overflow: see the examples)."""
    ev = set()
    w = float(want)
    if math.isnan(w):
        ev.add("nan")
    elif w != 0 and math.isfinite(w) and abs(w) < fmt.min_normal:
        ev.add("subnormal")
    elif w == 0:
        fin = all(math.isfinite(x) for x in ((a,) if op == "sqrt" else (a, b)))
        nonzero_exact = fin and {
            "add": lambda: Fraction(a) + Fraction(b) != 0,
            "sub": lambda: Fraction(a) - Fraction(b) != 0,
            "mul": lambda: a != 0 and b != 0,
            "div": lambda: a != 0 and b != 0,
            "sqrt": lambda: a > 0}[op]()
        if nonzero_exact:
            ev.add("underflow")
    return ev


@st.composite
def cases(draw, max_size=8):
    fmt = draw(float_formats())
    pairs = draw(st.lists(float_op_operands(fmt), min_size=1, max_size=max_size))
    return fmt, pairs


def run(op, fmt, pairs, mode, seed=0, variable=0):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    return O.apply_with_events(op, a, b, fmt, mode, seed, variable)


def check_against_reference(op, fmt, pairs, mode, seed=0, variable=0):
    got, counts = run(op, fmt, pairs, mode, seed, variable)
    want_counts = dict.fromkeys(F.EVENTS, 0)
    for i, ((a, b), g) in enumerate(zip(pairs, got)):
        rb = int(random_bits(np.uint64(seed), np.uint64(i), np.uint64(variable)))
        want = reference_op(op, a, b, fmt, mode, rb)
        w = float(want)
        assert bits64(g) == bits64(w), (op, fmt.spec, mode, a.hex(), b.hex(), g, want)
        for k in expected_events(op, a, b, fmt, want):
            want_counts[k] += 1
    for k in ("nan", "subnormal", "underflow"):
        assert counts[k] == want_counts[k], (op, fmt.spec, mode, counts, want_counts)


# -------------------------------------------------------------- exact reference --
DOUBLE_ROUNDING = (FloatFormat(8, 7), [(1.0, 2**-8 + 2**-60), (1.0, -(2**-9) - 2**-70),
                                       (1.0, 2**-80), (-1.0, -(2**-80)), (3.0, 3.0)])


@settings(max_examples=150, deadline=None)
@given(cases(), st.sampled_from(O.OPS), st.sampled_from(F.ROUNDINGS), st.integers(0, 2**64 - 1))
@example(DOUBLE_ROUNDING, "add", "nearest_even", 0)
@example(DOUBLE_ROUNDING, "add", "toward_pos", 0)
@example(DOUBLE_ROUNDING, "sub", "toward_neg", 0)
@example((FloatFormat(11, 52), [(1.7976931348623157e308, 1.7976931348623157e308),
                                (5e-324, 0.5), (5e-324, 5e-324), (-1e-200, 1e-200),
                                (2.0**-1022, 1 - 2**-53)]), "mul", "toward_zero", 0)
@example((FloatFormat(11, 52), [(1.7976931348623157e308, -1.7976931348623157e308),
                                (5e-324, -5e-324), (1.0, 1e-300)]), "sub", "nearest_even", 0)
@example((FloatFormat(11, 52), [(1e-300, 1e300), (5e-324, 3.0), (1.0, 3.0), (0.0, 0.0)]),
         "div", "odd", 0)
@example((FloatFormat(2, 1, subnormals=False), [(0.5, 0.25), (3.0, 0.0), (-3.0, 0.0)]),
         "div", "nearest_away", 0)
@example((FloatFormat(4, 3, fn=True), [(5e-324, 0.0), (2.0, 0.0), (1e300, 1.0)]),
         "sqrt", "toward_pos", 0)
@example((FloatFormat(11, 52), [(-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.5, 1.5)]),
         "sub", "toward_neg", 0)
@example((FloatFormat(11, 52), [(-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0), (1.5, -1.5)]),
         "add", "nearest_even", 0)
@example((FloatFormat(5, 10), [(INF, -INF), (INF, 0.0), (NAN, 1.0), (-INF, 2.0)]), "mul",
         "nearest_even", 0)
def test_ops_equal_reference(fmt_pairs, op, mode, seed):
    fmt, pairs = fmt_pairs
    check_against_reference(op, fmt, pairs, mode, seed=seed, variable=3)


def test_double_rounding_examples():
    """The float64 result rounded again is wrong; one rounding of the exact value is right."""
    bf = "bfloat16"
    assert O.add(1.0, 2**-8 + 2**-60, bf) == 1 + 2**-7  # fl64: 1 + 2**-8, a tie -> 1.0
    assert O.add(1.0, 2**-80, bf, "toward_pos") == 1 + 2**-7  # fl64: 1.0
    assert O.sub(1.0, 2**-80, bf, "toward_zero") == 1 - 2**-8
    assert O.mul(1 + 2**-30, 1 + 2**-30, "float:e11m30", "toward_pos") == 1 + 2**-29 + 2**-30
    # e11m52 max * max overflows only as an event; toward_zero keeps max
    vals, ev = O.apply_with_events("mul", 1.7976931348623157e308, 2.0, "float64",
                                   "toward_zero")
    assert vals == 1.7976931348623157e308 and ev["overflow"] == 1
    vals, ev = O.apply_with_events("add", 1.7976931348623157e308, 1.7976931348623157e308,
                                   "fp8e4m3")
    assert vals == 448.0 and ev["overflow"] == 1
    # a product below float64's subnormals is rounded by its exact value (toward_pos: min)
    assert O.mul(5e-324, 0.5, "float64", "toward_pos") == 5e-324
    assert O.mul(5e-324, 0.5 + 2**-53, "float64") == 5e-324
    vals, ev = O.apply_with_events("mul", 5e-324, 0.5, "float64")
    assert bits64(vals) == bits64(0.0) and ev["underflow"] == 1


def test_special_values_and_zero_signs():
    assert bits64(O.sub(1.5, 1.5, "bfloat16")) == bits64(0.0)
    assert bits64(O.sub(1.5, 1.5, "bfloat16", "toward_neg")) == bits64(-0.0)
    assert bits64(O.sqrt(-0.0, "bfloat16")) == bits64(-0.0)
    assert math.isnan(O.sqrt(-1.0, "bfloat16"))
    assert O.div(1.0, -0.0, "bfloat16") == -INF
    assert O.div(1.0, 0.0, "fp8e4m3") == 448.0  # saturating fn format
    assert math.isnan(O.div(1.0, 0.0, "fp8e4m3:inf"))
    _, ev = O.apply_with_events("sub", INF, INF, "float16")
    assert ev["nan"] == 1 and ev["overflow"] == 0


# ------------------------------------------------------------------------ peers --
def random_bit_floats(rng, n, dtype, udtype):
    x = rng.integers(0, np.iinfo(udtype).max, size=n, dtype=udtype, endpoint=True).view(dtype)
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, 1, -1], dtype=dtype)
    x[: special.size] = special
    tiny = np.finfo(dtype).smallest_subnormal
    x[special.size: special.size + 50] = rng.integers(-5, 5, 50) * tiny
    return x


def same_bits(x, y):
    """Equal bit patterns, NaNs of any payload/sign taken as equal."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    return bool(np.all(both_nan | (x.view(np.uint64) == y.view(np.uint64))))


def test_float32_and_float64_peers():
    rng = np.random.default_rng(5)
    n = 20000
    with np.errstate(all="ignore"):
        for dtype, udtype, spec in ((np.float32, np.uint32, "float32"),
                                    (np.float64, np.uint64, "float64")):
            a = random_bit_floats(rng, n, dtype, udtype)
            b = random_bit_floats(rng, n, dtype, udtype)
            # near cancellation and near-equal exponents as well
            b[n // 2:] = (a[n // 2:] * dtype(1 + 2**-10)).astype(dtype)
            peers = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b,
                     "sqrt": np.sqrt(a)}
            for op, want in peers.items():
                got = O.apply_with_events(op, a, None if op == "sqrt" else b, spec,
                                          "nearest_even")[0]
                assert same_bits(got, want.astype(np.float64)), (spec, op)


# --------------------------------------------------- threads and stochastic seeds --
def test_thread_independent_and_stochastic_reproducible():
    rng = np.random.default_rng(1)
    n = 3 * F.CHUNK + 17
    a = rng.standard_normal(n)
    b = rng.standard_normal(n) * 2.0 ** rng.integers(-60, 60, n)
    results = {}
    previous = numba.get_num_threads()
    try:
        for t in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(t)
            results[t] = [O.apply_with_events(op, a, b, "bfloat16:stochastic", seed=4,
                                              variable=2) for op in O.OPS]
    finally:
        numba.set_num_threads(previous)
    outs = list(results.values())
    for (va, ca), (vb, cb) in zip(outs[0], outs[-1]):
        assert same_bits(va, vb) and ca == cb
    again = O.add(a, b, "bfloat16", "stochastic", seed=4, variable=2)
    assert same_bits(again, outs[0][0][0])
    other = O.add(a, b, "bfloat16", "stochastic", seed=5, variable=2)
    assert not same_bits(other, again)
    # the scalar function gives element i's result from (seed, i, variable)
    P = O.format_params("bfloat16")
    i = 12345
    r, _ = O.add_scalar(a[i], b[i], P, F.STOCHASTIC, np.uint64(4), i, np.uint64(2))
    assert bits64(r) == bits64(again[i])
    # unbiased on average: E[round(x)] = x to within the sampling error
    x = np.full(200000, 1.0)
    y = np.full(200000, 2**-9 + 2**-40)  # a quarter of a bfloat16 ulp above 1, plus
    mean = O.add(x, y, "bfloat16", "stochastic", seed=9).mean()
    assert abs(mean - (1 + 2**-9 + 2**-40)) < 4 * 2**-7 * 0.5 / math.sqrt(200000)
