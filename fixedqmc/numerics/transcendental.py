"""Fixed-point exponential, cosine and sine for kernels: table methods with stated bounds.

Each operation computes an approximation ``y`` of the function at the *exact* input value
with internal words of 62-64 fractional bits (rounded to nearest, independent of the output
variable's modes), then rounds ``y`` once into the output format with the output's rounding
and overflow modes.  With ``q_v`` the largest error of that rounding (``2**-F_v`` for floor,
zero and stochastic, ``2**-(F_v + 1)`` for the nearest modes), and when the result does not
overflow its format:

exp (the LUT exponential of seed 001, Appendix B: ``exp(x) = 2**y_i prod_k T_k[j_k] (1 + r ln2)``
with the seed's 8K-word tables ``chunk_bits = (12, 11, 11)``, words from
:mod:`fixedqmc.numerics.exp2_tables`, as :class:`~fixedqmc.tables.lut_exp.LutExp` builds them)::

    |exp(e, x, v) - e**x| <= e**x * EXP_REL(x) + q_v,
    EXP_REL(x) = expm1(2**-60 + ln2 |x| dL),   dL = |L - log2 e| < 2**-64

  ``y = x L`` is formed exactly (L = log2 e rounded to nearest in UQ1.63) and its fraction
  truncated to 64 bits; 3 table entries, 3 products and the correction ``1 + r ln2`` each
  round to nearest in UQ1.62 (relative 2**-63 each, the values lie in [1, 2)), the residual
  ``(r ln2)**2 / 2 < 2**-69`` and the truncated fraction ``ln2 2**-64``: in all below
  7.4 * 2**-63 < 2**-60.  (:func:`exp_bound`.)

cos_turns, sin_turns (argument in turns: ``cos(2 pi x)``, the phase of reciprocal-space and
periodic terms)::

    |cos_turns(e, x, v) - cos(2 pi x)| <= TRIG_ABS_ERROR + q_v,   TRIG_ABS_ERROR = 2**-59

  ``x mod 1`` is exact (the low fractional bits of x's word) as a 64-bit turn ``T``; its
  top 2 bits pick the quadrant, the next 10 the entry ``j`` of a quarter-wave table of
  ``sin(2 pi j / 4096)``, j = 0..1024 (1025 words, rounded to nearest at 2**-62), and the
  remaining 52 bits give ``d = 2 pi (T mod 2**-12)`` (< 1.54e-3); then
  ``cos(a + d) = C cos d - S sin d`` and ``sin(a + d) = S cos d + C sin d`` with
  ``sin d = d (1 - d**2/6 (1 - d**2/20))``, ``cos d = 1 - d**2/2 (1 - d**2/12)`` (truncation
  below 2**-65), every product rounded to nearest at 2**-62, the two final products exact
  and their difference rounded once into v.  Error analysis: about 2**-61 (table entries and
  cos d: 2**-63 each, sin d: 2**-62); stated with a factor 4 margin.

cos, sin (argument in radians)::

    |cos(e, x, v) - cos(x)| <= TRIG_ABS_ERROR + 2 pi (2**-64 + |x| dI) + q_v,  dI < 2**-67

  the turn ``x / (2 pi)`` is x times 1/(2 pi) rounded to nearest at 2**-66 (``dI`` its
  error), exact, truncated to 64 fractional bits of a turn (:func:`trig_radians_bound`).
"""

from __future__ import annotations

import math
from itertools import accumulate
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
from numba import njit

from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics import wideint as W
from fixedqmc.numerics.modes import HALF_EVEN, SATURATE
from fixedqmc.numerics.exp2_tables import const_raw, exp2_table_raw

_JIT = dict(nogil=True)
_U = np.uint64

# ------------------------------------------------------------------ exponential --
#: The LUT exponential's chunks (the seed's 8K words, 3 lookups, linear residual).
EXP_CHUNK_BITS = (12, 11, 11)
_TF = 62  # fractional bits of the table entries and products (UQ1.62: int64 words)
_EXP_TABLES = np.array([w for c, b in zip(accumulate(EXP_CHUNK_BITS), EXP_CHUNK_BITS)
                        for w in exp2_table_raw(c, b, _TF)], np.int64)
_OFF1, _OFF2 = 1 << 12, (1 << 12) + (1 << 11)
_LOG2E_FRAC = 63
_LOG2E_RAW = const_raw("log2e", _LOG2E_FRAC)  # log2 e in UQ1.63 (nearest)
_LOG2E_WORD = np.int64(np.uint64(_LOG2E_RAW).view(np.int64))
_LN2_WORD = np.int64(np.uint64(const_raw("ln2", 64)).view(np.int64))  # ln 2 in UQ0.64
#: |L - log2 e| of the log2(e) word L, and the static relative error of the LUT steps.
EXP_DL = abs(float(Fraction(_LOG2E_RAW, 1 << _LOG2E_FRAC)
                   - Fraction(const_raw("log2e", 200), 1 << 200)))
EXP_STATIC = 2.0**-60
_Y_CLAMP = 400  # |y_i| beyond which results are 0 or overflow in every format and mode


def exp_bound(x, fmt, rounding: str):
    """``(EXP_REL(x), q_v)`` for exact inputs x (array) and v's format and rounding mode:
    ``|exp(e, x, v) - e**x| <= e**x EXP_REL(x) + q_v`` (results overflowing v excepted)."""
    ax = np.abs(np.asarray(x, np.float64))
    q = fmt.resolution * (0.5 if rounding in ("half_up", "half_away", "half_even") else 1.0)
    return np.expm1(EXP_STATIC + math.log(2) * ax * EXP_DL), q


@njit(**_JIT)
def _mul62(a, b):
    """round(a b 2**-62) to nearest (ties to even) of two UQ1.62 words."""
    r, _ = Q.mul_raw(a, False, _TF, b, False, _TF, False, 64, _TF, HALF_EVEN, SATURATE, _U(0))
    return r


@njit(**_JIT)
def _times_pow2(p, n, so, wo, fo, rnd, ovf, rbits):
    """The UQ1.62 word p (>= 1) times 2**n (|n| <= 400), rounded once into the output.
    Beyond the 192-bit core the value is either below 2**-67 units of the result (the
    scale is clamped: the rounding is the same) or a multiple of 2**64 units (its word
    is 0 and it overflows)."""
    g = _TF - n
    if fo - g >= 64:
        return Q.store((W.U0, W.U0, W.U1), so, wo, ovf)
    return Q.finish(W.from_raw(p, False), min(g, fo + 130), so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def exp_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """e**a by the LUT exponential (module docstring), rounded once into the output."""
    y = W.mul_raw(ra, sa, _LOG2E_WORD, False)  # x L exactly, at 2**-g
    g = fa + _LOG2E_FRAC
    yi_w = W.sar(y, g)
    if W.fits_signed(yi_w, 12):
        yi = min(max(np.int64(yi_w[0]), -_Y_CLAMP), _Y_CLAMP)
    else:
        yi = -_Y_CLAMP if W.is_negative(yi_w) else _Y_CLAMP
    # the fraction of y, truncated to 64 bits (g >= 63)
    f = y[0] << _U(1) if g == 63 else W.sar(y, g - 64)[0]
    p = _EXP_TABLES[np.int64(f >> _U(52))]
    p = _mul62(p, _EXP_TABLES[_OFF1 + np.int64((f >> _U(41)) & _U(0x7FF))])
    p = _mul62(p, _EXP_TABLES[_OFF2 + np.int64((f >> _U(30)) & _U(0x7FF))])
    # linear residual: c = 1 + r ln2 (r the 30 bits below the fields, at 2**-64), one rounding
    lo, hi = W.mul_u64(f & _U(0x3FFFFFFF), np.uint64(_LN2_WORD))
    t = Q.round_wide((lo, hi, W.U0), 128 - _TF, HALF_EVEN, _U(0), False)
    c = (np.int64(1) << _TF) + np.int64(t[0])
    return _times_pow2(_mul62(p, c), yi, so, wo, fo, rnd, ovf, rbits)


# The same exponential for an input word of at most 62 bits with a fractional bit or more,
# formats compiled in: machine words and 64 x 64-bit products instead of 192-bit integers.
_M30 = _U(0x3FFFFFFF)
_M11 = _U(0x7FF)


@njit(nogil=True, inline="always")
def _mul62_u(a, b):
    """:func:`_mul62` of two uint64 words below 2**63 (a product below 2**126)."""
    lo, hi = W.mul_u64_wide(a, b)
    q = (hi << _U(2)) | (lo >> _U(62))
    return q + _U(Q.round_up(HALF_EVEN, False, (q & _U(1)) != _U(0), lo << _U(2), False,
                             _U(0)))


def exp_narrow(sa, wa, fa, so, wo, fo, rnd, ovf):
    """:func:`exp_raw` as ``(ra, rbits) -> (raw, event)`` for an input format with ``wa <=
    62`` and ``fa >= 1``, else None: bit-identical (``tests/numerics/test_kernel_ops.py``).

    ``y = a L`` is one 64 x 64-bit product (|a| < 2**62, so ``y`` fits 126 bits: its high
    word shifted by ``fa - 1`` is ``y_i``, and the 64 bits below are the fraction); the table
    products and the residual take a 64 x 64-bit product each; the final rounding of ``p
    2**y_i`` by ``k = 62 - y_i - F_v`` bits (1 <= k, clamped at 130 as in :func:`_times_pow2`)
    reads the dropped fraction's top 64 bits and a sticky bit off p.  Results of 2**62
    output units or more (k <= 0) take :func:`_times_pow2`."""
    if wa > 62 or fa < 1:
        return None
    L = _U(_LOG2E_RAW)
    sh = _U(fa - 1)
    shc = _U((64 - (fa - 1)) % 64)
    whole = fa == 1  # the fraction is the low word of y
    ln2 = _U(np.uint64(_LN2_WORD.view(np.uint64)))
    u64, u1 = _U(64), _U(1)

    @njit(nogil=True)
    def op(ra, rbits):
        lo, hi = W.mul_u64_wide(_U(ra), L)
        if sa:  # two's complement: a < 0 stands for a + 2**64
            hi -= L & _U(ra >> 63)
        yi = min(max(np.int64(hi) >> np.int64(sh), -_Y_CLAMP), _Y_CLAMP)
        f = lo if whole else (lo >> sh) | (hi << shc)
        p = _U(_EXP_TABLES[np.int64(f >> _U(52))])
        p = _mul62_u(p, _U(_EXP_TABLES[_OFF1 + np.int64((f >> _U(41)) & _M11)]))
        p = _mul62_u(p, _U(_EXP_TABLES[_OFF2 + np.int64((f >> _U(30)) & _M11)]))
        rlo, rhi = W.mul_u64_wide(f & _M30, ln2)  # residual r ln2 at 2**-128
        t = rhi >> _U(2)  # rounded by 66 bits (to UQ0.62), ties to even
        t64 = (rlo >> _U(2)) | (rhi << _U(62))
        t += _U(Q.round_up(HALF_EVEN, False, (t & u1) != _U(0), t64, (rlo & _U(3)) != _U(0),
                           _U(0)))
        p = _mul62_u(p, (_U(1) << _U(_TF)) + t)
        k = min(_TF - yi, fo + 130) - fo
        if k <= 0:
            return _times_pow2(np.int64(p), yi, so, wo, fo, rnd, ovf, rbits)
        uk = _U(k)
        if k < 64:
            q, t64, rest = p >> uk, p << (u64 - uk), False
        elif k < 128:
            q, t64 = _U(0), p >> (uk - u64)
            rest = (p & ((u1 << (uk - u64)) - u1)) != _U(0)
        else:
            q, t64, rest = _U(0), _U(0), p != _U(0)
        up = Q.round_up(rnd, False, (q & u1) != _U(0), t64, rest, rbits)
        return Q.store_i64(np.int64(q) + np.int64(up), so, wo, ovf)
    return op


# ---------------------------------------------------------------- cosine and sine --
_S = 62  # fractional bits of the trigonometric intermediates
_ONE = np.int64(1) << _S


def _decimal_pi(digits: int) -> Decimal:
    """pi to ``digits`` digits (Machin's formula, exact Decimal arithmetic)."""
    with localcontext() as ctx:
        ctx.prec = digits + 10

        def arctan_inv(n):
            x = Decimal(1) / n
            x2, term, total, k = x * x, x, x, 1
            while True:
                term *= -x2
                k += 2
                nxt = total + term / k
                if nxt == total:
                    return total
                total = nxt
        return 4 * (4 * arctan_inv(5) - arctan_inv(239))


def decimal_sin_cos(theta: Decimal, digits: int = 40):
    """(sin, cos) of a Decimal angle in radians by their Taylor series (|theta| <= 8)."""
    with localcontext() as ctx:
        ctx.prec = digits + 10
        s, c = Decimal(0), Decimal(0)
        term, k = Decimal(1), 0
        while True:  # term = theta**k / k!
            add = term if k % 4 in (0, 1) else -term
            if k % 2 == 0:
                c += add
            else:
                s += add
            k += 1
            term = term * theta / k
            if k > 8 and abs(term) < Decimal(10) ** -(digits + 5):
                return +s, +c


_PI = _decimal_pi(60)
_SIN_TABLE = np.array(
    [int((decimal_sin_cos(2 * _PI * j / 4096)[0] * (1 << _S)).to_integral_value())
     for j in range(1025)], np.int64)  # sin(2 pi j / 4096) at 2**-62, nearest
_TWO_PI_60 = np.int64(int((2 * _PI * (1 << 60)).to_integral_value()))
_INV_2PI_FRAC = 66
_INV_2PI_RAW = int((Decimal(1 << _INV_2PI_FRAC) / (2 * _PI)).to_integral_value())
_INV_2PI_WORD = np.int64(np.uint64(_INV_2PI_RAW).view(np.int64))
#: Stated bound of the turn-argument cosine and sine before the rounding into v.
TRIG_ABS_ERROR = 2.0**-59
#: |I - 1/(2 pi)| of the 1/(2 pi) word I of the radian forms.
TRIG_DI = float(abs(Decimal(_INV_2PI_RAW) / Decimal(1 << _INV_2PI_FRAC) - 1 / (2 * _PI)))


def trig_radians_bound(x):
    """Bound of |cos(e, x, v) - cos x| before the rounding into v (add q_v)."""
    return TRIG_ABS_ERROR + 2 * math.pi * (2.0**-64 + np.abs(np.asarray(x, np.float64)) * TRIG_DI)


@njit(**_JIT)
def _m(a, b):
    """round(a b 2**-62) of two non-negative words below 2**63 (half up)."""
    lo, hi = W.mul_i64_wide(a, b)
    return np.int64((hi << _U(64 - _S)) | (lo >> _U(_S))) + np.int64((lo >> _U(_S - 1)) & W.U1)


@njit(**_JIT)
def _div_round(a, k):
    return (a + k // 2) // k


@njit(**_JIT)
def _cos_turn64(t, so, wo, fo, rnd, ovf, rbits):
    """cos(2 pi t 2**-64) for a uint64 turn t, rounded once into the output."""
    q = np.int64(t >> _U(62))
    r = t & ((W.U1 << _U(62)) - W.U1)
    j = np.int64(r >> _U(52))
    d = _m(np.int64(r & ((W.U1 << _U(52)) - W.U1)), _TWO_PI_60)  # 2 pi (r mod 2**52) 2**-64
    d2 = _m(d, d)
    sin_d = _m(d, _ONE - _div_round(_m(d2, _ONE - _div_round(d2, 20)), 6))
    cos_d = _ONE - _div_round(_m(d2, _ONE - _div_round(d2, 12)), 2)
    s, c = _SIN_TABLE[j], _SIN_TABLE[1024 - j]
    if q == 0 or q == 2:  # +-cos(a + d) = +-(C cos d - S sin d)
        x = W.sub(W.mul_raw(c, True, cos_d, True), W.mul_raw(s, True, sin_d, True))
    else:  # -+sin(a + d) = -+(S cos d + C sin d)
        x = W.add(W.mul_raw(s, True, cos_d, True), W.mul_raw(c, True, sin_d, True))
    if q == 1 or q == 2:
        x = W.neg(x)
    return Q.finish(x, 2 * _S, so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def _turn_of(ra, fa):
    """x mod 1 of a word with fa fractional bits as a 64-bit turn (exact)."""
    return np.uint64(ra) << _U(64 - fa) if fa > 0 else W.U0


@njit(**_JIT)
def cos_turns_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """cos(2 pi a) (module docstring), rounded once into the output."""
    return _cos_turn64(_turn_of(ra, fa), so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def sin_turns_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """sin(2 pi a) = cos(2 pi (a - 1/4)), rounded once into the output."""
    return _cos_turn64(_turn_of(ra, fa) - (W.U1 << _U(62)), so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def _radians_to_turn(ra, sa, fa):
    """a / (2 pi) mod 1 as a 64-bit turn: a times 1/(2 pi) (2**-66) exactly, truncated."""
    return W.sar(W.mul_raw(ra, sa, _INV_2PI_WORD, False), fa + _INV_2PI_FRAC - 64)[0]


@njit(**_JIT)
def cos_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """cos(a), a in radians, rounded once into the output."""
    return _cos_turn64(_radians_to_turn(ra, sa, fa), so, wo, fo, rnd, ovf, rbits)


@njit(**_JIT)
def sin_raw(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits):
    """sin(a), a in radians, rounded once into the output."""
    return _cos_turn64(_radians_to_turn(ra, sa, fa) - (W.U1 << _U(62)), so, wo, fo, rnd, ovf,
                       rbits)
