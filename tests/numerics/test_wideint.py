"""Limb division of the exact integer core (:mod:`fixedqmc.numerics.wideint`) against
Python's integers: the machine's ``div`` (x86-64) and the portable routine agree."""

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
