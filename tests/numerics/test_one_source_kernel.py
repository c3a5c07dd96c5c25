"""The one-source quadratic kernel: float paths equal numpy, the fixed path equals the
Fixed-array chain bit for bit, results do not depend on the thread count."""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fixedqmc as fq
from fixedqmc.numerics.polynomial import QUADRATIC, evaluate_quadratic

rng = np.random.default_rng(7)
N = 5000
A, B, C = rng.uniform(-1, 1, (3, N))
U = rng.uniform(0, 1, N)


def test_float64_and_float32_paths_equal_numpy():
    r64 = evaluate_quadratic(A, B, C, U, "float64")
    assert np.array_equal(r64.values, A + U * (B + U * C))
    f = [x.astype(np.float32) for x in (A, B, C, U)]
    r32 = evaluate_quadratic(A, B, C, U, "float32")
    assert np.array_equal(r32.values, (f[0] + f[3] * (f[1] + f[3] * f[2])).astype(np.float64))


@settings(max_examples=25)  # run-time formats: one compilation serves every example
@given(width=st.integers(12, 64), rnd=st.sampled_from([m for m in fq.ROUNDING_MODES
                                                        if m != "stochastic"]),
       ovf=st.sampled_from(["wrap", "saturate"]), seed=st.integers(0, 2**32))
def test_fixed_path_equals_fixed_array_chain(width, rnd, ovf, seed):
    spec = f"fixed:{width}:{rnd}:{ovf}"
    res = evaluate_quadratic(A, B, C, U, spec, seed=seed, runtime=True)
    kp = QUADRATIC.resolve(spec)
    fmt = {v: kp.format_of(v) for v in QUADRATIC.names}
    a, b, c, u = (fq.Fixed.from_float(x, fmt[n], rnd, ovf, seed=seed) for x, n in
                  zip((A, B, C, U), "abcu"))
    t = fq.mul(u, c, fmt["uc"], rnd, ovf)
    t = fq.add(b, t, fmt["buc"], rnd, ovf)
    t = fq.mul(u, t, fmt["ubuc"], rnd, ovf)
    y = fq.add(a, t, fmt["y"], rnd, ovf)
    assert np.array_equal(res.fixed.raw, y.raw)


def test_specialised_formats_equal_run_time_formats_bit_for_bit():
    """The typed kernel (formats compiled in) and the run-time-format kernel agree."""
    for spec in ("fixed:40:stochastic", "fixed:Q1.20:floor:wrap"):
        a = evaluate_quadratic(A, B, C, U, spec, seed=5)
        b = evaluate_quadratic(A, B, C, U, spec, seed=5, runtime=True)
        assert np.array_equal(a.fixed.raw, b.fixed.raw) and a.events == b.events


@pytest.mark.parametrize("spec", ["fixed:40:stochastic", "fixed:20:half_even:wrap"])
def test_results_do_not_depend_on_thread_count(spec):
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = evaluate_quadratic(A, B, C, U, spec, seed=3, runtime=True)
        numba.set_num_threads(before)
        many = evaluate_quadratic(A, B, C, U, spec, seed=3, runtime=True)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one.fixed.raw, many.fixed.raw)
    assert one.events == many.events


def test_wide_format_is_accurate_and_narrow_format_degrades_visibly():
    exact = A + U * (B + U * C)
    err = {w: np.abs(evaluate_quadratic(A, B, C, U, f"fixed:{w}", runtime=True).values
                     - exact).max() for w in (16, 24, 40)}
    assert err[40] < 2e-10 < err[24] < 2e-5 < err[16] < 1e-2


def test_overflow_counted_per_variable_and_raise_mode():
    log = fq.OverflowLog()
    big = np.full(10, 1.9)
    res = evaluate_quadratic(big, big, big, np.full(10, 0.99), "fixed:Q1.20:floor:saturate",
                             log=log, runtime=True)
    assert res.events["buc"] == 10 and res.events["y"] == 10 and res.events["uc"] == 0
    assert log.events["quadratic.y"] == 10
    with pytest.raises(fq.FixedOverflowError, match="quadratic.buc"):
        evaluate_quadratic(big, big, big, np.full(10, 0.99), "fixed:Q1.20:floor:raise",
                           runtime=True)


def test_the_log_holds_the_formats_of_the_last_precision_reported_and_every_event():
    """Formats and modes enter a log at a precision's first report (later reports add
    events only); another precision of the same kernel replaces them, ``reset`` empties the
    log."""
    log = fq.OverflowLog()
    big = np.full(10, 1.9)
    args = (big, big, big, np.full(10, 0.99))
    for _ in range(2):
        evaluate_quadratic(*args, "fixed:Q1.20:floor:saturate", log=log, runtime=True)
    assert log.events["quadratic.y"] == 20 and log.events["quadratic.uc"] == 0
    assert log.formats["quadratic.y"] == "Q1.20" and log.modes["quadratic.y"] == "saturate"
    assert set(log.formats) == {f"quadratic.{v.name}" for v in QUADRATIC.variables}
    evaluate_quadratic(*args, "fixed:Q4.30:half_even:wrap", log=log, runtime=True)
    assert log.formats["quadratic.y"] == "Q4.30" and log.modes["quadratic.y"] == "wrap"
    assert log.events["quadratic.y"] == 20  # Q4.30 holds every value
    log.reset()
    evaluate_quadratic(*args, "fixed:Q1.20:floor:saturate", log=log, runtime=True)
    assert log.formats["quadratic.y"] == "Q1.20" and log.events["quadratic.y"] == 10
