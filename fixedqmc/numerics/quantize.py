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
from fixedqmc.numerics.float_exp import pow2
from fixedqmc.numerics.modes import FLOOR, HALF_AWAY, HALF_EVEN, HALF_UP, STOCHASTIC, WRAP, ZERO

_JIT = dict(nogil=True)
_TWO64 = 2.0**64
# The raw operations are inlined at numba-IR level into the kernel operation that uses them
# (LLVM would not inline them next to the large 192-bit fallbacks, which stay out of line);
# their small helpers are left to LLVM, since IR-level inlining of every helper multiplies
# compile time.
_FAST = dict(nogil=True, inline="always")
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
def round_wide(x, k, rnd, rbits, sticky):
    """``x * 2**-k`` rounded to an integer (1 <= k < 192), as a wide integer.

    ``sticky``: the exact value lies strictly above ``x`` (by less than one unit of x), i.e.
    x is the floor of a longer exact value at its scale (division, square root); only with
    ``k >= 64``, so that the top 64 bits of the dropped fraction are bits of x."""
    n = W.sar(x, k)
    if k >= 64:
        hi = W.sar(x, k - 64)
        t64 = hi[0]
        rest = sticky or W.compare(W.shl(hi, k - 64), x) != 0
    else:
        t64 = x[0] << np.uint64(64 - k)
        rest = False
    if round_up(rnd, W.is_negative(n), (n[0] & W.U1) != W.U0, t64, rest, rbits):
        n = W.add(n, (W.U1, W.U0, W.U0))
    return n


@njit(**_JIT)
def finish(x, g, signed, word, frac, rnd, ovf, rbits):
    """Round the exact value ``x * 2**-g`` to ``frac`` fractional bits and fit it to the word."""
    if g > frac:
        n = round_wide(x, g - frac, rnd, rbits, False)
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
def _fits_i62(r, signed, sh):
    """True if the raw word r, shifted left by sh, has magnitude below 2**62."""
    if sh > 61:
        return r == 0
    t = r >> np.int64(62 - sh)
    if signed:
        return t == 0 or t == -1
    return t == 0  # an unsigned 64-bit word with the top bit set is negative here


@njit(**_JIT)
def store_i64(n, signed, word, ovf):
    """``store`` for an exact result that fits int64 (the common, fast case).

    Branch-free (selects only, so that loops over it vectorise): saturate and raise clamp
    to [lo, hi] of the word, wrap keeps the low ``word`` bits (sign-extended if signed); an
    unsigned 64-bit word holds every n >= 0 and wraps a negative n to its own bit pattern."""
    if signed:
        if word >= 64:
            return n, 0
        sh = np.int64(64 - word)
        hi = (np.int64(1) << np.int64(word - 1)) - 1
        lo = -hi - 1
        wrapped = (n << sh) >> sh
    elif word >= 64:
        lo, hi = np.int64(0), np.int64(0x7FFFFFFFFFFFFFFF)
        wrapped = n
    else:
        lo, hi = np.int64(0), (np.int64(1) << np.int64(word)) - 1
        wrapped = n & hi
    if ovf == WRAP:
        # the one word whose wrap keeps n's bits: an unsigned 64-bit word, from n < 0
        return wrapped, np.int64((n < 0) if word >= 64 else (wrapped != n))
    out = min(max(n, lo), hi)
    return out, np.int64(out != n)


@njit(**_JIT)
def finish_i64(s, k, signed, word, rnd, ovf, rbits):
    """Round ``s * 2**-k`` (|s| < 2**62, 0 <= k <= 63) to an integer and store it."""
    if k == 0:
        return store_i64(s, signed, word, ovf)
    sk = np.int64(k)
    if rnd != STOCHASTIC:  # branch-free: bias, then shift (see wideint.mul_round_shift)
        half = np.int64(1) << (sk - 1)
        if rnd == FLOOR:
            bias = np.int64(0)
        elif rnd == ZERO:
            bias = ((np.int64(1) << sk) - 1) if s < 0 else np.int64(0)
        elif rnd == HALF_UP:
            bias = half
        elif rnd == HALF_AWAY:
            bias = half - 1 if s < 0 else half
        else:
            bias = half - 1 + ((s >> sk) & 1)
        return store_i64((s + bias) >> sk, signed, word, ovf)
    n = s >> sk
    t64 = np.uint64(s) << np.uint64(64 - k)
    if round_up(rnd, n < 0, (n & 1) != 0, t64, False, rbits):
        n += 1
    return store_i64(n, signed, word, ovf)


@njit(**_FAST)
def _add_sub(ra, sa, fa, rb, sb, fb, negate_b, so, wo, fo, rnd, ovf, rbits):
    g = max(fa, fb)
    k = g - fo
    if 0 <= k <= 63 and _fits_i62(ra, sa, g - fa) and _fits_i62(rb, sb, g - fb):
        xa = ra << np.int64(g - fa)
        xb = rb << np.int64(g - fb)
        return finish_i64(xa - xb if negate_b else xa + xb, k, so, wo, rnd, ovf, rbits)
    return _add_sub_wide(ra, sa, fa, rb, sb, fb, negate_b, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def _add_sub_wide(ra, sa, fa, rb, sb, fb, negate_b, so, wo, fo, rnd, ovf, rbits):
    g = max(fa, fb)
    xa = W.shl(W.from_raw(ra, sa), g - fa)
    xb = W.shl(W.from_raw(rb, sb), g - fb)
    if negate_b:
        xb = W.neg(xb)
    return finish(W.add(xa, xb), g, so, wo, fo, rnd, ovf, rbits)


@njit(**_FAST)
def add_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """Exact a + b rounded once into the output format."""
    return _add_sub(ra, sa, fa, rb, sb, fb, False, so, wo, fo, rnd, ovf, rbits)


@njit(**_FAST)
def sub_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """Exact a - b rounded once into the output format."""
    return _add_sub(ra, sa, fa, rb, sb, fb, True, so, wo, fo, rnd, ovf, rbits)


@njit(**_FAST)
def mul_raw(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
    """Exact a * b rounded once into the output format."""
    k = fa + fb - fo
    big_a = (not sa) and ra < 0  # unsigned 64-bit word >= 2**63
    big_b = (not sb) and rb < 0
    if 0 < k <= 63 and not big_a and not big_b:  # both words are their int64 values here
        if rnd != STOCHASTIC:
            n_lo, uhi = W.mul_round_shift(ra, rb, np.int64(k), np.int64(rnd))
            n_hi = np.int64(uhi)
        else:
            lo, uhi = W.mul_i64_wide(ra, rb)
            uk = np.uint64(k)
            n_lo = (lo >> uk) | (uhi << np.uint64(64 - k))
            n_hi = np.int64(uhi) >> np.int64(k)
            if round_up(rnd, n_hi < 0, (n_lo & W.U1) != W.U0, lo << np.uint64(64 - k), False,
                        rbits):
                n_lo += W.U1
                if n_lo == W.U0:
                    n_hi += 1
        if n_hi == (np.int64(n_lo) >> np.int64(63)):
            return store_i64(np.int64(n_lo), so, wo, ovf)
        fill = W.M64 if n_hi < 0 else W.U0
        return store((n_lo, np.uint64(n_hi), fill), so, wo, ovf)
    return _mul_wide(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def _mul_wide(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, rbits):
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
    l2 = np.floor(a / (two64 * two64))
    a -= l2 * two64 * two64
    l1 = np.floor(a / two64)
    a -= l1 * two64
    x = (np.uint64(a), np.uint64(l1), np.uint64(l2))
    return W.neg(x) if neg else x


@njit(**_JIT)
def _split_float(y):
    """Floor and dropped fraction of a finite float y, exactly: (nm, negative, t64, rest)
    where floor(y) = nm if y >= 0 else -nm - (1 if a fraction was dropped else 0), ``t64``
    holds the top 64 bits of the dropped fraction of the floor and ``rest`` whether any
    lower bit is set.

    y is split on its magnitude m = nm + fm (both parts exact in float64); for y < 0 the
    dropped fraction is 1 - fm, whose top 64 bits are 2**64 - ceil(fm * 2**64).
    """
    m = abs(y)
    nm = np.floor(m)
    q = (m - nm) * _TWO64  # dropped fraction of m, scaled by 2**64 (exact, < 2**64)
    if y >= 0.0:
        fq = np.floor(q)
        return nm, False, np.uint64(fq), fq != q
    if q > 0.0:
        cq = np.ceil(q)
        return nm, True, W.U0 - np.uint64(cq), cq != q
    return nm, True, W.U0, False


@njit(nogil=True, inline="always")
def _from_scaled_small(y, so, wo, rnd, ovf, rbits):
    """:func:`from_float_raw` of a float already scaled to units of the output's last bit,
    ``|y| < 2**62``: an int64 and its rounding."""
    nm, negative, t64, rest = _split_float(y)
    n = np.int64(nm)
    if negative:
        n = -n - 1 if (t64 != W.U0 or rest) else -n
    if round_up(rnd, negative, (n & 1) != 0, t64, rest, rbits):
        n += 1
    return store_i64(n, so, wo, ovf)


@njit(**_JIT)
def _from_scaled_wide(y, so, wo, rnd, ovf, rbits):
    """The same for ``|y| >= 2**62`` (or nan): a 192-bit integer."""
    if abs(y) >= 2.0**180:
        # Far outside every format: keep the sign; such a float has no bits below 2**64.
        y = math.copysign(2.0**180, y)
    nm, negative, t64, rest = _split_float(y)
    x = _float_int_to_wide(nm)
    if negative:
        x = W.neg(x)
        if t64 != W.U0 or rest:
            x = W.add(x, (W.M64, W.M64, W.M64))  # -nm - 1
    if round_up(rnd, negative, (x[0] & W.U1) != W.U0, t64, rest, rbits):
        x = W.add(x, (W.U1, W.U0, W.U0))
    return store(x, so, wo, ovf)


@njit(nogil=True, inline="always")
def from_float_raw(v, so, wo, fo, rnd, ovf, rbits):
    """Round a finite float64 exactly to the output format.  Inlined where it is called: the
    common case (below 2**62 units of the output) is a few machine operations, which fold
    at compile time for a constant v and formats compiled in; larger values go out of line
    to the 192-bit path."""
    # scaling by a power of two, rounded once (a product, not the library's ldexp call)
    y = v * pow2(fo) if -1022 <= fo <= 1023 else math.ldexp(v, fo)
    if abs(y) < 2.0**62:
        return _from_scaled_small(y, so, wo, rnd, ovf, rbits)
    return _from_scaled_wide(y, so, wo, rnd, ovf, rbits)
