"""Host-side combinations of bounded kernel outputs (``linear_bound``), against exact
arithmetic on fractions."""

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fixedqmc.numerics.bound_run import linear_bound

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
offsets = st.floats(-1e-3, 1e-3, allow_nan=False, allow_infinity=False)


def up(x: Fraction) -> float:
    """The float64 at or above ``x``."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(finite, finite, offsets, offsets), min_size=1, max_size=6),
       st.booleans())
def test_the_bound_covers_any_trial_and_the_float64_value(terms, reverse):
    """Exact X_i, trial T_i and float64 values v_i with B_i >= |T_i - X_i| + |v_i - X_i|
    (a bound run's ``r + b``): the trial's float64 combination (in either order), the
    helper's value and the exact combination lie within the returned bound of each
    other."""
    exact, trial, value, bound = [], [], [], []
    for c, x, dt, dv in terms:
        t, v = x + dt * abs(x), x - dv * abs(x)
        exact.append(Fraction(x))
        trial.append(t)
        value.append(v)
        bound.append(up(abs(Fraction(t) - Fraction(x)) + abs(Fraction(v) - Fraction(x))))
    cs = [c for c, *_ in terms]
    v_e, b_e = linear_bound([(c, np.array([v]), np.array([b]))
                             for c, v, b in zip(cs, value, bound)])
    order = range(len(cs))[::-1] if reverse else range(len(cs))
    t_e = 0.0
    for i in order:
        t_e += cs[i] * trial[i]
    x_e = sum(Fraction(c) * x for c, x in zip(cs, exact))
    b = Fraction(float(b_e[0]))
    assert abs(Fraction(t_e) - x_e) <= b
    assert abs(Fraction(float(v_e[0])) - x_e) <= b
    assert abs(Fraction(t_e) - Fraction(float(v_e[0]))) <= b


def test_exact_inputs_still_get_the_host_roundings_and_nothing_more():
    """0.1 + 0.2 rounds in float64: with exact operands the bound is the rounding term
    alone, nonzero, covering the error and within a few ulps of the sum."""
    v, b = linear_bound([(1.0, np.array([0.1]), np.array([0.0])),
                         (1.0, np.array([0.2]), np.array([0.0]))])
    err = abs(Fraction(0.1 + 0.2) - Fraction(0.1) - Fraction(0.2))
    assert 0 < err <= Fraction(float(b[0]))
    assert b[0] < 8 * np.spacing(v[0])


def test_a_value_that_is_not_a_number_is_unbounded():
    _, b = linear_bound([(2.0, np.array([np.nan, 1.0]), np.array([0.0, 0.5]))])
    assert np.isinf(b[0]) and 1.0 <= b[1] < 1.0 + 1e-12
