"""Exact scalar fixed-point operations beyond add/sub/mul: division, square roots, rounding
to integers, abs, min and max.

Like the operations of :mod:`quantize`, each forms its exact result and rounds it *once*
into the output format (signedness ``so``, word ``wo``, fractional bits ``fo``) with the
output's rounding mode ``rnd`` and overflow mode ``ovf``, returning ``(raw, event)``.
Quotients and roots are not finite binary fractions: they are computed to 64 bits below
the output's last bit plus a sticky bit (remainder nonzero), which decides every rounding
mode exactly as the infinitely precise value would (stochastic rounding compares the top
64 bits of the dropped fraction, as everywhere).  Results are correctly rounded.

Special cases (an event of the output variable is counted in every overflow mode, so
``raise`` mode reports them):

* ``x / 0`` (and ``1 / 0``): the format's maximum if x >= 0, its minimum if x < 0;
* ``sqrt(x)``, ``rsqrt(x)`` of x < 0: 0; ``rsqrt(0)``: the format's maximum.

Arguments are the raw words with their formats (``sa``, ``wa`` word bits, ``fa``), as in
:mod:`quantize`; unary operations take ``wa`` too, binary ones do not need it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics import wideint as W
from fixedqmc.numerics.modes import FLOOR, SATURATE

_JIT = dict(nogil=True)
_BIG = (W.U0, W.U0, W.U1)  # 2**128: beyond every format


@njit(**_JIT)
def _magnitude(r, s):
    """(|word| as uint64, negative) of a raw word."""
    neg = s and r < 0
    return (W.U0 - np.uint64(r)) if neg else np.uint64(r), neg


@njit(**_JIT)
def _limit(positive, so, wo):
    """The format's maximum (positive) or minimum, with an event."""
    return Q.store(_BIG if positive else W.neg(_BIG), so, wo, SATURATE)


@njit(**_JIT)
def _round_quotient(q, negative, inexact, so, wo, fo, rnd, ovf, rbits):
    """Round the magnitude ``q`` (a floor at scale 2**-(fo + 64), exact value strictly above
    it if ``inexact``) with sign ``negative`` once to fo bits and store it."""
    if negative:
        # -(q + d), 0 < d < 1, has the floor -(q + 1) = ~q and lies strictly above it
        q = (~q[0], ~q[1], ~q[2]) if inexact else W.neg(q)
    return Q.store(Q.round_wide(q, 64, rnd, rbits, inexact), so, wo, ovf)


@njit(**_JIT)
def div_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """Exact a / b rounded once; b = 0 gives the format's max (a >= 0) or min, an event.

    |a| 2**(fo + fb - fa + 64) / |b| is divided out exactly (the shift is 0..192 bits for
    formats of at most 64 fractional bits); a quotient too large for 191 bits keeps its low
    128 bits (all the wrap mode needs) and is marked as certainly overflowing."""
    ma, na = _magnitude(ra, sa)
    mb, nb = _magnitude(rb, sb)
    if mb == W.U0:
        return _limit(not na, so, wo)
    q, inexact, lost = W.div_shifted(ma, fo + fb - fa + 64, mb)
    if lost:
        q = (q[0], q[1], W.U1)
    return _round_quotient(q, na != nb and ma != W.U0, inexact, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def recip_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """Exact 1 / a rounded once (a = 0: the format's maximum, an event)."""
    return div_raw(np.int64(1), True, 0, ra, sa, fa, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def sqrt_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """sqrt(a) rounded once (correctly rounded); a < 0 gives 0 and an event.

    floor(sqrt(|a| 2**(2 fo + 128 - fa))) = floor(sqrt(a) 2**(fo + 64)), by the
    digit-by-digit integer square root, the remainder giving the sticky bit."""
    ma, na = _magnitude(ra, sa)
    if na:
        return np.int64(0), 1
    root, inexact = W.isqrt_shifted(ma, 2 * fo + 128 - fa)
    return _round_quotient(root, False, inexact, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def rsqrt_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """1 / sqrt(a) rounded once (correctly rounded); a < 0 gives 0, a = 0 the format's
    maximum, each with an event.

    floor(sqrt(2**(2 fo + 128 + fa) / |a|)) = floor(2**(fo + 64) / sqrt(a)), exact only if
    the division and the root both are."""
    ma, na = _magnitude(ra, sa)
    if na:
        return np.int64(0), 1
    if ma == W.U0:
        return _limit(True, so, wo)
    root, inexact = W.irsqrt_shifted(ma, 2 * fo + 128 + fa)
    return _round_quotient(root, False, inexact, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def to_int_raw(ra, sa, fa, mode, so, wo, fo, rnd, ovf, rbits):
    """a rounded to an integer with rounding mode ``mode`` (exact), then stored in the
    output format (an integer is exact in every format that holds it; else the overflow
    mode applies)."""
    x = W.from_raw(ra, sa)
    if fa > 0:
        x = Q.round_wide(x, fa, mode, rbits, False)
    return Q.finish(x, 0, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def floor_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """floor(a) (the largest integer <= a) into the output format."""
    return to_int_raw(ra, sa, fa, FLOOR, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def round_int_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """a rounded to an integer with the output's own rounding mode (half_even: nearest,
    ties to even; stochastic: up with probability the fraction), into the output format."""
    return to_int_raw(ra, sa, fa, rnd, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def abs_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """Exact |a| rounded once."""
    if sa and ra < 0:
        return Q.neg_raw(ra, sa, fa, so, wo, fo, rnd, ovf, rbits)
    return Q.cast_raw(ra, sa, fa, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def min_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """The smaller of a and b (exact compare), rounded once."""
    if Q.compare_raw(ra, sa, fa, rb, sb, fb) <= 0:
        return Q.cast_raw(ra, sa, fa, so, wo, fo, rnd, ovf, rbits)
    return Q.cast_raw(rb, sb, fb, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def max_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """The larger of a and b (exact compare), rounded once."""
    if Q.compare_raw(ra, sa, fa, rb, sb, fb) >= 0:
        return Q.cast_raw(ra, sa, fa, so, wo, fo, rnd, ovf, rbits)
    return Q.cast_raw(rb, sb, fb, so, wo, fo, rnd, ovf, rbits)
