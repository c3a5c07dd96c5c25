"""Division and square roots of the exact integer core (:mod:`fixedqmc.numerics.wideint`)
against Python's integers: the machine's ``div`` (x86-64) and the portable routine agree,
and the roots started from a float square root are exact."""

import math

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from numba import njit

from fixedqmc.numerics import wideint as W

U64 = 2**64


@njit
def _both(u1, u0, v):
    return W.divlu(u1, u0, v), W.divlu_portable(u1, u0, v)


@st.composite
def dividends(draw):
    """(u1, u0, v) with u1 < v: divisors of every length, high limbs up to v - 1."""
    v = draw(st.one_of(st.integers(1, U64 - 1), st.integers(1, 2**32),
                       st.integers(0, 63).map(lambda k: 2**k)))
    u1 = draw(st.one_of(st.integers(0, v - 1), st.just(v - 1)))
    return u1, draw(st.integers(0, U64 - 1)), v


@given(dividends())
@example((0, 0, 1))
@example((U64 - 2, U64 - 1, U64 - 1))
@example((0, U64 - 1, 1))
@example((2**32 - 1, U64 - 1, 2**32))
def test_limb_division_is_exact(case):
    u1, u0, v = case
    (q, r), (qp, rp) = _both(np.uint64(u1), np.uint64(u0), np.uint64(v))
    assert (int(q), int(r)) == divmod(u1 * U64 + u0, v) == (int(qp), int(rp))


@given(st.one_of(st.integers(0, U64 - 1), st.integers(0, 2**32 - 1).map(lambda r: r * r),
                 st.integers(1, 2**32 - 1).map(lambda r: r * r - 1)))
@example(0)
@example(U64 - 1)
@example((2**32 - 1) ** 2)
@example(2**52 + 1)
def test_word_square_root_is_exact(x):
    r, rem = W.isqrt_u64(np.uint64(x))
    assert (int(r), int(rem)) == (math.isqrt(x), x - math.isqrt(x) ** 2)


def _int(limbs):
    return sum(int(x) << (64 * i) for i, x in enumerate(limbs))


@given(st.integers(1, U64 - 1), st.integers(0, 320))
@example(U64 - 1, 0)
@example(U64 - 1, 64)
@example(U64 - 2**11, 128)
@example(U64 - 1, 256)
@example(U64 - 1, 320)
@example(1, 0)
@example(4, 2)
def test_shifted_roots_are_exact(a, e):
    if e <= 256:
        n = a << e
        root, inexact = W.isqrt_shifted(np.uint64(a), e)
        assert (_int(root), inexact) == (math.isqrt(n), math.isqrt(n) ** 2 != n)
    q, r = divmod(1 << e, a)
    root, inexact = W.irsqrt_shifted(np.uint64(a), e)
    assert (_int(root), inexact) == (math.isqrt(q), r != 0 or math.isqrt(q) ** 2 != q)


@given(st.one_of(st.integers(2**64, 2**128 - 1), st.integers(2**63, 2**64 - 1).map(lambda r: r * r),
                 st.integers(2**126, 2**128 - 1), st.integers(2**64 - 2**13, 2**64 - 1)
                 .map(lambda h: h * U64 + 12345)))
@example(2**128 - 1)
@example(2**64)
@example((2**64 - 1) * U64)
@example((2**64 - 1) ** 2)
@example((2**64 - 1) ** 2 - 1)
def test_two_limb_square_root_is_exact(n):
    s, r_lo, r_hi = W.isqrt_u128(np.uint64(n >> 64), np.uint64(n % U64))
    assert (int(s), int(r_lo) + (int(r_hi) << 64)) == (math.isqrt(n), n - math.isqrt(n) ** 2)
