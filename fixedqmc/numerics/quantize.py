"""The single rounding and overflow step, and exact scalar fixed-point operations.

Every operation forms its exact result as a wide integer ``X`` at scale ``G`` (value
``X * 2**-G``), then :func:`finish` rounds it once to the output's fractional bits and
applies the overflow mode.  All functions are numba-compiled scalar functions; they return
``(raw, event)`` where ``raw`` is the output word as int64 (an unsigned 64-bit word is stored
as its bit pattern) and ``event`` is 1 if the result overflowed (wrapped, saturated or, in
``raise`` mode, would have) and 0 otherwise.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from fixedqmc.numerics import wideint as W
from fixedqmc.numerics.modes import FLOOR, HALF_AWAY, HALF_EVEN, HALF_UP, STOCHASTIC, WRAP, ZERO

_JIT = dict(cache=True, nogil=True)
_U63 = np.uint64(63)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(**_JIT)
def splitmix64(x):
    """SplitMix64 finaliser of a uint64 (a bijective hash with good avalanche)."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(**_JIT)
def random_bits(seed, index, stream):
    """64 reproducible random bits for element ``index`` of ``stream`` under ``seed``.

    A counter-based hash, so the bits do not depend on evaluation order or thread count.
    """
    h = splitmix64(np.uint64(seed) ^ splitmix64(np.uint64(stream)))
    return splitmix64(h ^ splitmix64(np.uint64(index)))


@njit(**_JIT)
def round_up(mode, n_neg, n_odd, t64, rest, rbits):
    """Whether to add one LSB to the floor ``N`` of an exact value.

    ``t64`` holds the top 64 bits of the dropped fraction (bit 63 is the half bit) and
    ``rest`` whether any lower dropped bit is set; ``rbits`` are random bits (stochastic).
    """
    if mode == FLOOR:
        return False
    if mode == STOCHASTIC:
        return rbits < t64
    half = (t64 >> _U63) != W.U0
    if mode == HALF_UP:
        return half
    below = ((t64 << W.U1) != W.U0) or rest
    if mode == ZERO:
        return n_neg and (half or below)
    if mode == HALF_AWAY:
        return half and (below or not n_neg)
    if mode == HALF_EVEN:
        return half and (below or n_odd)
    return False


@njit(**_JIT)
def store(n, signed, word, ovf):
    """Apply overflow mode ``ovf`` to the exact rounded integer ``n`` for a word of ``word``
    bits; returns (raw int64, event)."""
    if signed:
        ok = W.fits_signed(n, word)
    else:
        ok = W.fits_unsigned(n, word)
    if ok:
        return np.int64(n[0]), 0
    if ovf == WRAP:
        low = n[0]
        if word < 64:
            low = low & ((W.U1 << np.uint64(word)) - W.U1)
            if signed and (low >> np.uint64(word - 1)) != W.U0:
                low = low | (W.M64 << np.uint64(word))
        return np.int64(low), 1
    # saturate (and raise, whose caller reports the event)
    if W.is_negative(n):
        if signed:
            return np.int64(-1) << np.int64(word - 1), 1
        return np.int64(0), 1
    if signed:
        return (np.int64(1) << np.int64(word - 1)) - np.int64(1), 1
    if word == 64:
        return np.int64(-1), 1
    return (np.int64(1) << np.int64(word)) - np.int64(1), 1


@njit(**_JIT)
def finish(x, g, signed, word, frac, rnd, ovf, rbits):
    """Round the exact value ``x * 2**-g`` to ``frac`` fractional bits and fit it to the word."""
    if g > frac:
        k = g - frac
        n = W.sar(x, k)
        if k >= 64:
            hi = W.sar(x, k - 64)
            t64 = hi[0]
            rest = W.compare(W.shl(hi, k - 64), x) != 0
        else:
            t64 = x[0] << np.uint64(64 - k)
            rest = False
        n_neg = W.is_negative(n)
        n_odd = (n[0] & W.U1) != W.U0
        if round_up(rnd, n_neg, n_odd, t64, rest, rbits):
            n = W.add(n, (W.U1, W.U0, W.U0))
    elif g < frac:
        k = frac - g  # 1..64: every caller passes g >= 0 and frac <= 64
        if not W.fits_signed(x, 66):
            # Certain overflow: keep the sign and the low word, bound the magnitude so the
            # shift below cannot leave 192 bits.
            if W.is_negative(x):
                x = (x[0], W.M64 - W.U1, W.M64)
            else:
                x = (x[0], W.U1, W.U0)
        n = W.shl(x, k)
    else:
        n = x
    return store(n, signed, word, ovf)


@njit(**_JIT)
def add_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """Exact a + b rounded once into the output format."""
    g = max(fa, fb)
    xa = W.shl(W.from_raw(ra, sa), g - fa)
    xb = W.shl(W.from_raw(rb, sb), g - fb)
    return finish(W.add(xa, xb), g, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def sub_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """Exact a - b rounded once into the output format."""
    g = max(fa, fb)
    xa = W.shl(W.from_raw(ra, sa), g - fa)
    xb = W.shl(W.from_raw(rb, sb), g - fb)
    return finish(W.add(xa, W.neg(xb)), g, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def mul_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """Exact a * b rounded once into the output format."""
    return finish(W.mul_raw(ra, sa, rb, sb), fa + fb, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def cast_raw(ra, sa, fa, so, wo, fo, rnd, ovf, rbits):
    """Convert a word to another format (exact, then one rounding)."""
    return finish(W.from_raw(ra, sa), fa, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def neg_raw(ra, sa, fa, so, wo, fo, rnd, ovf, rbits):
    """Exact -a rounded once into the output format."""
    return finish(W.neg(W.from_raw(ra, sa)), fa, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def shift_raw(ra, sa, fa, n, so, wo, fo, rnd, ovf, rbits):
    """Exact a * 2**n (|n| <= 64) rounded once into the output format."""
    g = fa - n
    x = W.from_raw(ra, sa)
    if g < 0:
        # a * 2**n = (a * 2**-g) * 2**0; an operand this large is bounded like in finish
        if not W.fits_signed(x, 66):
            x = (x[0], W.M64 - W.U1, W.M64) if W.is_negative(x) else (x[0], W.U1, W.U0)
        x = W.shl(x, -g)
        g = 0
    return finish(x, g, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def compare_raw(ra, sa, fa, rb, sb, fb):
    """Sign of the exact difference a - b as -1, 0 or 1."""
    g = max(fa, fb)
    xa = W.shl(W.from_raw(ra, sa), g - fa)
    xb = W.shl(W.from_raw(rb, sb), g - fb)
    return W.compare(xa, xb)


@njit(**_JIT)
def _float_int_to_wide(v):
    """An integer-valued float64 with |v| < 2**190 as an exact wide integer."""
    neg = v < 0.0
    a = -v if neg else v
    two64 = 18446744073709551616.0
    l2 = math.floor(a / (two64 * two64))
    a -= l2 * two64 * two64
    l1 = math.floor(a / two64)
    a -= l1 * two64
    x = (np.uint64(a), np.uint64(l1), np.uint64(l2))
    return W.neg(x) if neg else x


@njit(**_JIT)
def from_float_raw(v, so, wo, fo, rnd, ovf, rbits):
    """Round a finite float64 exactly to the output format."""
    y = math.ldexp(v, fo)  # exact scaling by a power of two
    if abs(y) >= 2.0**180:
        # Far outside every format: keep the sign; such a float has no bits below 2**64.
        y = math.copysign(2.0**180, y)
    n = math.floor(y)
    f = y - n  # exact, in [0, 1)
    t64 = np.uint64(math.ldexp(f, 64))
    x = _float_int_to_wide(n)
    if round_up(rnd, n < 0.0, (x[0] & W.U1) != W.U0, t64, False, rbits):
        x = W.add(x, (W.U1, W.U0, W.U0))
    return store(x, so, wo, ovf)
