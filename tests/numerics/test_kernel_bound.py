"""The bound context (fixedqmc.numerics.kernel_bound) and bound_kernel: for every operation
it implements, on hypothesis-drawn precisions (fixed point in every rounding mode, float
formats in every mode, float32, float64) and inputs, the trial's exact distance from the
exact-arithmetic value (Python fractions) never exceeds the propagated bound, nor does its
distance from the bound run's float64 value."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import fixedqmc
from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel import (KernelSpec, Variable, add, at, chunk, chunk_bounds,
                                      const, load, mul, n_chunks, store, sub)
from fixedqmc.numerics.kernel_bound import rounding_terms
from fixedqmc.numerics.kernel_ops import div, exp, recip, sqrt
from fixedqmc.numerics.polynomial import QUADRATIC, quadratic_kernel
from fixedqmc.testing.strategies import kernel_arrays, precisions

OPS = KernelSpec("ops", (
    Variable("x", 0.0, 4.0), Variable("y", 0.5, 2.0), Variable("c", -1.0, 1.0),
    Variable("s", 0.5, 6.0), Variable("d", -2.0, 3.5), Variable("p", -12.0, 21.0),
    Variable("q", -24.0, 42.0), Variable("rt", 0.0, 2.0), Variable("iv", 0.5, 2.0),
    Variable("qc", -4.2, 4.2), Variable("z", -4.2, 6.2),
))
X, Y, C, S, D, P, Q, RT, IV, QC, Z = range(11)
C_VALUE = 0.1  # a constant not on any binary grid


@njit
def ops_kernel(ctx, x, y, p_out, q_out, rt_out, iv_out, z_out):
    """p = (x + y)(x - y), q = p / y, rt = sqrt(x), iv = 1 / y, z = 0.1 q + rt."""
    n = x.size
    for k in range(n_chunks(ctx, n)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n, k)
        for i in range(lo, hi):
            e = at(cc, i)
            xi, yi = load(e, x[i], X), load(e, y[i], Y)
            p = mul(e, add(e, xi, yi, S), sub(e, xi, yi, D), P)
            q = div(e, p, yi, Q)
            rt = sqrt(e, xi, RT)
            p_out[i] = store(e, p)
            q_out[i] = store(e, q)
            rt_out[i] = store(e, rt)
            iv_out[i] = store(e, recip(e, yi, IV))
            z_out[i] = store(e, add(e, mul(e, q, const(e, C_VALUE, C), QC), rt, Z))


OUTPUTS = ("p", "q", "rt", "iv", "z")


def _within(t: float, b: float, exact: Fraction | None = None, root_of: Fraction | None = None,
            plus: Fraction = Fraction(0)) -> bool:
    """|t - X| <= b for X = exact, or X = plus + sqrt(root_of) (decided exactly)."""
    if not np.isfinite(b):
        return True
    t, b = Fraction(t), Fraction(b)
    if root_of is None:
        return abs(t - exact) <= b
    lo, hi = t - b - plus, t + b - plus  # lo <= sqrt(root_of) <= hi
    return hi >= 0 and (lo <= 0 or lo * lo <= root_of) and root_of <= hi * hi


def _exact(x: float, y: float) -> dict:
    fx, fy, fc = Fraction(x), Fraction(y), Fraction(C_VALUE)
    p = (fx + fy) * (fx - fy)
    q = p / fy
    return {"p": p, "q": q, "iv": 1 / fy, "qc": q * fc}


def _check_against_exact(res, x, y):
    for i in range(x.size):
        ex = _exact(float(x[i]), float(y[i]))
        for name in ("p", "q", "iv"):
            assert _within(res.trial[name][i], res.bound[name][i], ex[name]), (name, i)
        assert _within(res.trial["rt"][i], res.bound["rt"][i], root_of=Fraction(x[i]))
        assert _within(res.trial["z"][i], res.bound["z"][i], root_of=Fraction(x[i]),
                       plus=ex["qc"])
    for name in OUTPUTS:
        assert (res.error[name] <= res.bound[name]).all(), name


@settings(max_examples=40)
@given(spec=precisions(overflows=("saturate", "wrap")),
       arrays=kernel_arrays(OPS, st.integers(1, 40), names=("x", "y")))
def test_every_operation_stays_within_its_bound(spec, arrays):
    try:
        res = fixedqmc.bound_kernel(OPS, ops_kernel, arrays, OUTPUTS, spec)
    except FixedQMCError:  # a drawn format too narrow for a declared range
        return
    _check_against_exact(res, arrays["x"], arrays["y"])


@settings(max_examples=25)
@given(spec=precisions(), arrays=kernel_arrays(QUADRATIC, st.integers(1, 40),
                                               names=("a", "b", "c", "u")))
def test_quadratic_chain_stays_within_its_bound(spec, arrays):
    try:
        res = fixedqmc.bound_kernel(QUADRATIC, quadratic_kernel, arrays, "y", spec)
    except FixedQMCError:
        return
    a, b, c, u = (arrays[k] for k in "abcu")
    for i in range(u.size):
        fa, fb, fc, fu = (Fraction(float(v[i])) for v in (a, b, c, u))
        assert _within(res.trial["y"][i], res.bound["y"][i], fa + fu * (fb + fu * fc))
    assert (res.error["y"] <= res.bound["y"]).all()


@pytest.mark.parametrize("spec", ["fixed:20:floor", "fixed:20:half_even", "bfloat16",
                                  "float:e5m6:toward_zero", "float32"])
def test_bounds_are_tight_on_the_quadratic_chain(spec):
    """Not 10**6 times too wide: on 4000 random elements, the largest bound is within a
    small factor of the largest error seen (each term of the bound is attained by some
    element), and no element's bound is below its error."""
    rng = np.random.default_rng(7)
    n = 4000
    arrays = {k: rng.uniform(-2, 2, n) for k in "abc"} | {"u": rng.uniform(0, 1, n)}
    table = fixedqmc.bound_kernel(QUADRATIC, quadratic_kernel, arrays, "y", spec).table()
    row = table.loc["y"]
    assert row["violations"] == 0 and row["unbounded"] == 0
    assert 1.0 <= row["ratio"] < 4.0, row


def test_rounding_terms_match_each_mode():
    """Each rounding mode's stated error term: half a step for the nearest modes, a whole
    one for the directed and stochastic modes (fixed and float formats)."""
    for mode, q in (("half_even", 2.0 ** -9), ("half_up", 2.0 ** -9), ("floor", 2.0 ** -8),
                    ("zero", 2.0 ** -8), ("stochastic", 2.0 ** -8)):
        assert rounding_terms(fixedqmc.QFormat.parse("Q3.8"), mode)[0] == q
    fmt = fixedqmc.parse_precision("bfloat16").for_kernel("k").fmt
    for mode, u in (("nearest_even", 2.0 ** -8), ("nearest_away", 2.0 ** -8),
                    ("toward_zero", 2.0 ** -7), ("stochastic", 2.0 ** -7), ("odd", 2.0 ** -7)):
        assert rounding_terms(fmt, mode)[1] == u
    lo, hi = rounding_terms(fixedqmc.QFormat.parse("Q0.63"), "floor")[3:]
    assert Fraction(hi) <= Fraction(2 ** 63 - 1, 2 ** 63) and lo == -1.0  # never widened


def test_overflow_makes_the_bound_infinite_where_it_happens():
    """A product that may leave its format (Q2.8 for p) is unbounded from p on, counted
    at p only; the assertion helper names it."""
    x, y = np.array([0.1, 3.9]), np.array([1.5, 0.6])
    spec = "fixed:24,ops.p=fixed:Q2.8"
    res = fixedqmc.bound_kernel(OPS, ops_kernel, {"x": x, "y": y}, OUTPUTS, spec)
    assert np.isfinite(res.bound["p"][0]) and res.bound["p"][1] == np.inf
    assert res.bound["q"][1] == np.inf and np.isfinite(res.bound["rt"][1])
    assert res.unbounded["p"] == 1 and res.unbounded["q"] == 0
    with pytest.raises(AssertionError, match=r"infinite .*'p': 1"):
        fixedqmc.testing.assert_within_bound(OPS, ops_kernel, {"x": x, "y": y}, OUTPUTS, spec)
    fixedqmc.testing.assert_within_bound(OPS, ops_kernel, {"x": x, "y": y}, OUTPUTS, spec,
                                         allow_unbounded=True)


def test_a_divisor_that_may_round_to_zero_is_unbounded():
    """y = 1e-9 rounds to 0 at Q2.16: 1 / y is unbounded (never a finite, false bound)."""
    res = fixedqmc.bound_kernel(OPS, ops_kernel, {"x": np.array([1.0]), "y": np.array([1e-9])},
                                OUTPUTS, "fixed:24,ops.y=fixed:Q2.16")
    assert res.bound["iv"][0] == np.inf and res.bound["q"][0] == np.inf
    assert res.unbounded["iv"] == 1 and res.unbounded["q"] == 1


@njit
def exp_kernel(ctx, x, out):
    e = at(chunk(ctx, 0), 0)
    out[0] = store(e, exp(e, load(e, x[0], 0), 1))


def test_an_operation_without_a_bound_form_is_refused_by_name():
    spec = KernelSpec("e", (Variable("x", -1, 1), Variable("y", 0, 3)))
    with pytest.raises(Exception, match="exp: no error-bound form"):
        fixedqmc.bound_kernel(spec, exp_kernel, {"x": np.zeros(1)}, "y", "fixed:24")


def test_bad_input_is_refused_before_any_work():
    with pytest.raises(FixedQMCError, match="no variable 'w'"):
        fixedqmc.bound_kernel(OPS, ops_kernel, {"w": np.zeros(2)}, OUTPUTS, "fixed:24")
    with pytest.raises(FixedQMCError, match="different lengths"):
        fixedqmc.bound_kernel(OPS, ops_kernel, {"x": np.zeros(2), "y": np.ones(3)}, OUTPUTS,
                              "fixed:24")


def test_float64s_own_error_is_in_the_bound_of_a_wider_trial():
    """64-bit fixed words are finer than float64 near 1: the trial is then closer to the
    exact value than the bound run's float64 value is, and the bound on |trial - value|
    must carry float64's own rounding errors (r)."""
    rng = np.random.default_rng(3)
    arrays = {"x": rng.uniform(0, 4, 500), "y": rng.uniform(0.5, 2, 500)}
    res = fixedqmc.testing.assert_within_bound(OPS, ops_kernel, arrays, OUTPUTS, "fixed:64")
    assert res.table()["max_error"].max() > 2.0 ** -56  # float64's error, not the trial's
