"""The float kernels' exponential (fixedqmc.numerics.float_exp) against correctly rounded
values computed with the decimal module, at the special values, and in a vectorised loop."""

import re
from decimal import Decimal, getcontext

import numpy as np
import pytest
from numba import njit

from fixedqmc.numerics.float_exp import exp32, exp64, pow2
from fixedqmc.numerics.vectorise import vectorising_compile

getcontext().prec = 50


@njit
def _map64(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = exp64(x[i])
    return out


@njit
def _map32(x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = exp32(x[i])
    return out


def _ulps(got, x, dtype):
    """|got - e**x| in units of the spacing of dtype at e**x (exact e**x by decimal)."""
    err = []
    for g, xi in zip(got, x):
        exact = Decimal(float(xi)).exp()
        spacing = Decimal(float(np.spacing(dtype(float(exact)))))
        err.append(float(abs(Decimal(float(g)) - exact) / spacing))
    return max(err)


def test_exp64_within_1_2_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708, 709.7, 1500), rng.uniform(-1, 1, 500),
                        np.log(2) * np.arange(-1000, 1000, 97) + 1e-9])
    assert _ulps(_map64(x), x, np.float64) <= 1.2


def test_exp32_within_1_2_ulp_and_float32():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-87, 88.7, 1500), rng.uniform(-1, 1, 500)]).astype(np.float32)
    y = _map32(x)
    assert y.dtype == np.float32
    assert _ulps(y, x, np.float32) <= 1.2


@pytest.mark.parametrize("fn, dtype, big, tiny_x", [(_map64, np.float64, 709.8, -745.2),
                                                    (_map32, np.float32, 88.8, -104.0)])
def test_special_values(fn, dtype, big, tiny_x):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, big, -1e4, 1e4], dtype)
    y = fn(x)
    assert y[0] == 1 and y[1] == 1
    assert np.isposinf(y[2]) and y[3] == 0 and np.isnan(y[4])
    assert np.isposinf(y[5]) and y[6] == 0 and np.isposinf(y[7])
    # the subnormal range: within one subnormal step of e**x (exact by decimal)
    info = np.finfo(dtype)
    xs = np.linspace(np.log(float(info.tiny)) - 1, float(tiny_x) + 0.5, 200).astype(dtype)
    ys = fn(xs)
    step = float(info.smallest_subnormal)
    for g, xi in zip(ys, xs):
        assert abs(Decimal(float(g)) - Decimal(float(xi)).exp()) <= Decimal(step)


def test_a_loop_calling_it_vectorises():
    def loop(x, out):
        for i in range(x.size):
            out[i] = exp32(x[i]) * np.float32(2.0)
    kernel = njit(loop)
    x = np.linspace(-5, 5, 64).astype(np.float32)
    out = np.empty_like(x)
    with vectorising_compile():
        kernel.compile((kernel.typeof_pyval(x), kernel.typeof_pyval(out)))
    asm = next(iter(kernel.inspect_asm().values()))
    assert re.search(r"\bv?mulps\b", asm), "no packed float32 multiply: the loop is scalar"
    kernel(x, out)
    assert np.allclose(out, 2 * np.exp(x.astype(np.float64)), rtol=3e-7)


@njit
def _scaled(x, n):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = x[i] * pow2(n[i])
    return out


def test_pow2_scaling_equals_ldexp():
    """``x * pow2(n)`` (the fixed-point rounding's scaling) gives ``ldexp(x, n)`` bit for
    bit over the whole normal range of n, including results that overflow to inf or land in
    the subnormal range, and x subnormal or zero."""
    rng = np.random.default_rng(11)
    m = 20000
    x = rng.choice([-1.0, 1.0], m) * rng.random(m) * np.exp2(rng.integers(-1074, 1024, m))
    x[::97] = np.nextafter(0.0, 1.0) * rng.integers(1, 10 ** 6, x[::97].size)
    x[::101] = 0.0
    n = rng.integers(-1022, 1024, m)
    n[::3] = rng.integers(-80, 200, n[::3].size)  # the fraction-bit counts formats use
    got = _scaled(x, n)
    with np.errstate(over="ignore"):
        want = np.ldexp(x, n.astype(np.int32))  # the C library's ldexp, inf on overflow
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.isinf(want).any() and (np.abs(want[want != 0]) < 2.0 ** -1022).any()
