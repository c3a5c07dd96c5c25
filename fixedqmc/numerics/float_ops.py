"""Correctly rounded arithmetic into any :class:`~fixedqmc.numerics.float_format.FloatFormat`:
``add``, ``sub``, ``mul``, ``div`` and ``sqrt`` of float64 operands, the *exact* result
rounded *once* into the output format (never a float64 result rounded again: that double
rounding is wrong for the directed, odd and stochastic modes, for nearest-even when
``2M + 2 > 53``, and wherever the float64 result overflowed or underflowed).

Exactness
---------
Every finite nonzero float64 is ``S * 2**q`` with an integer ``S < 2**53``.  Each operation
builds its exact result as ``(W + f) * 2**q`` with a 128-bit integer ``W`` (two uint64 words)
and a fraction ``0 <= f < 1`` of which only ``f != 0`` (``sticky``) is kept, and
:func:`round_exact` rounds that once (the rounding of ``float_format``'s cast: the same
modes, overflow, flush and event rules; stochastic uses ``t = floor(f_ulp * 2**64)`` of
the dropped fraction of an ulp, ``f_ulp``, and the random bits of (seed, element,
variable)).  Whenever ``sticky`` can be set, ``W`` has at least 117 significant bits, so at
least 64 bits are dropped from it (the result keeps at most 53), hence ``t`` and every
rounding decision are read off ``W``'s bits, with ``sticky`` only as the "below" bit:

* ``mul``: ``W = Sa * Sb`` (106 bits, one 64 x 64 -> 128-bit machine multiply), ``q = qa +
  qb``, no fraction.  No float64 product is formed, so nothing overflows (e11m52 ``max *
  max`` is rounded by its exact magnitude: an overflow event) and nothing underflows (the
  low part of TwoProd, ``fma(a, b, -a*b)``, is exact only when ``e_a + e_b - 104 >= -1074``
  and the product does not overflow; this construction needs neither).
* ``add``/``sub``: order the operands by their unit exponents ``qa >= qb``, ``d = qa - qb``.
  If ``d <= 70`` both are aligned exactly into 128 bits: ``W = Sa 2**70 +- Sb 2**(70-d)``
  (below ``2**124``), ``q = qa - 70``, no fraction (massive cancellation is thus exact).  If
  ``d > 70`` then ``a`` is normal (``Sa >= 2**52``, so ``W >= 2**121``) and ``|b| < 2**-69
  ulp(a)``: ``b`` adds ``floor(Sb / 2**(d-70))`` and a sticky fraction (subtracted:
  ``W - ceil(...)`` with the sticky complement).  This replaces TwoSum (``hi + lo``), which
  would fail when ``fl(a + b)`` overflows though the exact sum rounds to a finite value of a
  narrower format (it cannot: every format's max is at most float64's, but the overflow
  *mode* decision needs the exact magnitude), and which gives too few bits of the dropped
  fraction for stochastic rounding.
* ``div``: ``Sa`` normalised to bit 62, ``Sb`` to bit 63, two 128/64-bit divisions give the
  128-bit quotient ``W = floor(Sa' 2**128 / Sb')`` (at least ``2**126``) and ``sticky =
  remainder != 0``.  Why the remainder sign (here: nonzero) suffices: the exact quotient is
  ``W + r/Sb'`` with ``0 <= r/Sb' < 1`` strictly inside one unit of ``W``; every rounding
  breakpoint (a grid point or a midpoint of the output format) is a multiple of ``2**64``
  units, so no breakpoint lies strictly between ``W`` and ``W + 1``: the decision depends on
  ``W`` and on whether ``r != 0`` only, and ``t = floor(f_ulp 2**64)`` is exactly the top 64
  dropped bits of ``W``.  (The float route, ``q = fl(a/b)`` and ``r = fma(-q, b, a)``,
  decides the same for ``M <= 52`` by ``sign(r)`` but knows only ``52 - M`` bits of the
  dropped fraction, too few for stochastic rounding.)
* ``sqrt``: ``W = floor(sqrt(S 2**e))`` by :func:`fixedqmc.numerics.wideint.isqrt_shifted`
  with ``e`` of the parity of ``q`` and ``L + e`` in ``{241, 242}`` (so ``W >= 2**120``),
  ``q' = (q - e) / 2``, ``sticky = remainder != 0``: the same argument as for ``div``.

Fast path: an operation whose float64 result is finite, nonzero, far from underflow and
*exact* (its TwoSum error, or the fused multiply-add residual ``a*b - r``, ``r*b - a``,
``r*r - a``, is zero) casts that result: the one rounding of the exact result, in every
mode.  Products of narrow formats (``2 (M + 1) <= 53``) and sums of operands of close
exponents are exact in float64, so most operations of a narrow-format kernel take it.

Special values (IEEE 754): NaN in, NaN out; ``inf - inf``, ``0 * inf``, ``0/0``, ``inf/inf``
and ``sqrt(x < 0)`` give NaN; ``x / 0`` gives a signed infinity; an infinity result is then
cast into the format as ``round_to_format`` casts ``inf`` (``+-max`` if ``saturate``, NaN in
an ``fn`` format that does not saturate).  An exact zero sum of nonzero operands (``x -
x``) and ``(+0) + (-0)`` are ``+0``, ``-0`` under ``toward_neg``; ``sqrt(-0) = -0``;
products and quotients with a zero carry the xor of the signs.  A NaN result has the sign
bit of the NaN operand it came from (else +).

Events (as :func:`fixedqmc.numerics.float_format.round_with_events`, each result at most
once per kind): ``overflow`` (a finite exact result whose rounded magnitude exceeded the
format's max), ``underflow`` (a nonzero exact result rounded or flushed to zero),
``subnormal`` (a nonzero subnormal result), ``nan`` (a NaN result).  ``x / 0`` is no
overflow event (its exact result is infinite).

Compiled API: :func:`format_params` gives the tuple ``P`` that the scalar functions
:func:`add_scalar`, :func:`sub_scalar`, :func:`mul_scalar`, :func:`div_scalar` (``(a, b, P,
mode, seed, index, variable) -> (float64, events)``) and :func:`sqrt_scalar` (``(a, P, mode,
seed, index, variable)``) take; they are ``@njit`` and can be called from other kernels.
Array API: :func:`add`, :func:`sub`, :func:`mul`, :func:`div`, :func:`sqrt` and
:func:`apply_with_events` (broadcasting; fixed chunks of ``CHUNK`` elements over threads:
results and counts do not depend on the thread count; the random bits of element ``i`` of
the flattened broadcast result are ``random_bits(seed, i, variable)``).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from fixedqmc.numerics.float_format import (
    CHUNK,
    EV_NAN,
    EV_UNDER,
    EVENTS,
    INF_BITS,
    QNAN_BITS,
    SIGN_BIT,
    TOWARD_NEG,
    as_float_format,
    bit_length,
    cast_bits,
    chunked,
    format_params,
    round_significand,
    rounding_code,
    split_bits,
    target_exponent,
)
from fixedqmc.numerics.wideint import divlu, isqrt_shifted, mul_u64_wide

OPS = ("add", "sub", "mul", "div", "sqrt")
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_EXP = np.uint64(0x7FF)

_J = {"nogil": True, "inline": "always"}


@intrinsic
def as_bits(typingctx, x):
    """The bit pattern of a float64 as a uint64 (a bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.uint64(types.float64), codegen


@intrinsic
def from_bits(typingctx, b):
    """The float64 of a uint64 bit pattern (a bitcast)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.uint64), codegen


# ------------------------------------------------------------------ bit helpers --
@njit(**_J)
def _shr(w1, w0, s):
    """Low 64 bits of the 128-bit ``w1 2**64 + w0`` shifted right by ``s >= 0``."""
    if s >= 128:
        return _U0
    if s >= 64:
        return w1 >> np.uint64(s - 64)
    if s == 0:
        return w0
    return (w0 >> np.uint64(s)) | (w1 << np.uint64(64 - s))


@njit(**_J)
def _low_nonzero(w1, w0, s):
    """Whether any of the low ``s >= 0`` bits of ``w1 2**64 + w0`` is set."""
    if s <= 0:
        return False
    if s >= 128:
        return (w1 | w0) != _U0
    if s >= 64:
        return w0 != _U0 or (s > 64 and (w1 & ((_U1 << np.uint64(s - 64)) - _U1)) != _U0)
    return (w0 & ((_U1 << np.uint64(s)) - _U1)) != _U0


@njit(**_J)
def _is_nan(b):
    return (b & ~SIGN_BIT) > INF_BITS


@njit(**_J)
def _cast_special(b, P):
    """The cast of a float64 inf or NaN (bits b) into the format: (bits, events)."""
    sat, fn, max_bits = P[5], P[6], P[7]
    sign = b & SIGN_BIT
    if _is_nan(b):
        return sign | QNAN_BITS, EV_NAN
    if sat:
        return sign | max_bits, 0
    if fn:
        return sign | QNAN_BITS, EV_NAN
    return b, 0


# ---------------------------------------------------------------- exact rounding --
@njit(nogil=True, cache=True)
def round_exact(neg, w1, w0, q, sticky, P, mode, seed, i, var):
    """Round the exact magnitude ``(w1 2**64 + w0 + f) 2**q`` (sign ``neg``; ``f`` in [0, 1),
    ``sticky = f != 0``; the integer part nonzero) once into the format ``P``: (float64 bits,
    events).  When ``sticky`` is set the integer part must have at least ``M + 65``
    significant bits (so at least 64 bits are dropped, and ``t`` of stochastic rounding is
    exact); element ``i`` and ``var`` select the random bits."""
    man, emin, emax, nmax, subn, sat, fn, max_bits = P
    sign = SIGN_BIT if neg else _U0
    L = (bit_length(w1) + 64) if w1 != _U0 else bit_length(w0)
    et = target_exponent(q + L - 1, emin, subn)
    if et < emin:  # below the normal range, subnormals flushed
        return sign, EV_UNDER
    u = et - man
    s = u - q
    rest = sticky
    if s <= 0:
        n = w0 << np.uint64(-s)  # here W < 2**(M+1): w1 == 0
        t64 = _U0
    else:
        n = _shr(w1, w0, s)
        if s >= 64:
            t64 = _shr(w1, w0, s - 64)
            rest = rest or _low_nonzero(w1, w0, s - 64)
        else:
            t64 = w0 << np.uint64(64 - s)
    return round_significand(sign, n, t64, rest, et, u, man, emax, nmax, sat, fn, max_bits,
                             mode, seed, np.uint64(i), var)


# ------------------------------------------------------------- operations on bits --
@njit(nogil=True, cache=True)
def _add_exact(ab, bb, P, mode, seed, i, var):
    """Correctly rounded ``a + b`` on float64 bit patterns: (bits, events)."""
    xa = (ab >> np.uint64(52)) & _EXP
    xb = (bb >> np.uint64(52)) & _EXP
    if xa == _EXP or xb == _EXP:
        if _is_nan(ab):
            return _cast_special(ab, P)
        if _is_nan(bb):
            return _cast_special(bb, P)
        if xa == _EXP and xb == _EXP and ab != bb:
            return QNAN_BITS, EV_NAN  # inf - inf
        return _cast_special(ab if xa == _EXP else bb, P)
    sa, qa = split_bits(ab)
    sb, qb = split_bits(bb)
    na = (ab & SIGN_BIT) != _U0
    nb = (bb & SIGN_BIT) != _U0
    if sa == _U0 and sb == _U0:
        if na == nb:
            return ab, 0
        return (SIGN_BIT if mode == TOWARD_NEG else _U0), 0
    if sb == _U0:
        return round_exact(na, _U0, sa, qa, False, P, mode, seed, i, var)
    if sa == _U0:
        return round_exact(nb, _U0, sb, qb, False, P, mode, seed, i, var)
    if qa < qb:
        sa, qa, na, sb, qb, nb = sb, qb, nb, sa, qa, na
    d = qa - qb
    if d <= 70:
        a1 = sa << np.uint64(6)  # sa 2**70 as (a1, a0)
        a0 = _U0
        if d <= 6:
            b1 = sb << np.uint64(6 - d)
            b0 = _U0
        else:
            k = 70 - d  # 0..63
            b1 = (sb >> np.uint64(64 - k)) if k > 0 else _U0
            b0 = sb << np.uint64(k)
        if na == nb:
            w0 = a0 + b0
            w1 = a1 + b1 + (_U1 if w0 < a0 else _U0)
            neg = na
        elif a1 > b1 or (a1 == b1 and a0 >= b0):
            w0 = a0 - b0
            w1 = a1 - b1 - (_U1 if a0 < b0 else _U0)
            neg = na
        else:
            w0 = b0 - a0
            w1 = b1 - a1 - (_U1 if b0 < a0 else _U0)
            neg = nb
        if w1 == _U0 and w0 == _U0:
            return (SIGN_BIT if mode == TOWARD_NEG else _U0), 0
        return round_exact(neg, w1, w0, qa - 70, False, P, mode, seed, i, var)
    k = d - 70
    bint = (sb >> np.uint64(k)) if k < 64 else _U0
    frac = _low_nonzero(_U0, sb, k)
    a1 = sa << np.uint64(6)
    if na == nb:
        w0 = bint
        w1 = a1
    else:
        sub = bint + (_U1 if frac else _U0)  # a1 2**64 - sub, sub < 2**53
        w0 = _U0 - sub
        w1 = a1 - (_U1 if sub != _U0 else _U0)
    return round_exact(na, w1, w0, qa - 70, frac, P, mode, seed, i, var)


@njit(nogil=True, cache=True)
def _mul_exact(ab, bb, P, mode, seed, i, var):
    """Correctly rounded ``a * b`` on float64 bit patterns: (bits, events)."""
    sign = (ab ^ bb) & SIGN_BIT
    xa = (ab >> np.uint64(52)) & _EXP
    xb = (bb >> np.uint64(52)) & _EXP
    if _is_nan(ab):
        return _cast_special(ab, P)
    if _is_nan(bb):
        return _cast_special(bb, P)
    za = (ab & ~SIGN_BIT) == _U0
    zb = (bb & ~SIGN_BIT) == _U0
    if xa == _EXP or xb == _EXP:
        if za or zb:
            return QNAN_BITS, EV_NAN  # 0 * inf
        return _cast_special(sign | INF_BITS, P)
    if za or zb:
        return sign, 0
    sa, qa = split_bits(ab)
    sb, qb = split_bits(bb)
    lo, hi = mul_u64_wide(sa, sb)
    return round_exact(sign != _U0, hi, lo, qa + qb, False, P, mode, seed, i, var)


@njit(nogil=True, cache=True)
def _div_exact(ab, bb, P, mode, seed, i, var):
    """Correctly rounded ``a / b`` on float64 bit patterns: (bits, events)."""
    sign = (ab ^ bb) & SIGN_BIT
    xa = (ab >> np.uint64(52)) & _EXP
    xb = (bb >> np.uint64(52)) & _EXP
    if _is_nan(ab):
        return _cast_special(ab, P)
    if _is_nan(bb):
        return _cast_special(bb, P)
    za = (ab & ~SIGN_BIT) == _U0
    zb = (bb & ~SIGN_BIT) == _U0
    if xa == _EXP:
        if xb == _EXP:
            return QNAN_BITS, EV_NAN  # inf / inf
        return _cast_special(sign | INF_BITS, P)
    if xb == _EXP:
        return sign, 0
    if zb:
        if za:
            return QNAN_BITS, EV_NAN  # 0 / 0
        return _cast_special(sign | INF_BITS, P)
    if za:
        return sign, 0
    sa, qa = split_bits(ab)
    sb, qb = split_bits(bb)
    la = bit_length(sa)
    lb = bit_length(sb)
    na_ = sa << np.uint64(63 - la)  # top bit 62
    nb_ = sb << np.uint64(64 - lb)  # top bit 63
    q1, r1 = divlu(na_, _U0, nb_)
    q0, r0 = divlu(r1, _U0, nb_)
    q = (qa - (63 - la)) - (qb - (64 - lb)) - 128
    return round_exact(sign != _U0, q1, q0, q, r0 != _U0, P, mode, seed, i, var)


@njit(nogil=True, cache=True)
def _sqrt_exact(ab, P, mode, seed, i, var):
    """Correctly rounded ``sqrt(a)`` on a float64 bit pattern: (bits, events)."""
    if _is_nan(ab):
        return _cast_special(ab, P)
    if (ab & ~SIGN_BIT) == _U0:
        return ab, 0
    if (ab & SIGN_BIT) != _U0:
        return QNAN_BITS, EV_NAN
    if (ab >> np.uint64(52)) == _EXP:
        return _cast_special(ab, P)
    s, q = split_bits(ab)
    L = bit_length(s)
    e = 241 - L
    if (q - e) % 2 != 0:
        e += 1
    root, inexact = isqrt_shifted(s, np.int64(e))
    return round_exact(False, root[1], root[0], (q - e) // 2, inexact, P, mode, seed, i,
                       var)


# ------------------------------------------------ the operations, fast path first --
# A float64 result that is *exact* (checked by an error-free transformation: TwoSum for
# add, a fused multiply-add for the residual of mul, div and sqrt) and finite, normal and
# nonzero is the exact result, so its cast is the one rounding of every mode (stochastic
# included: the whole dropped fraction is in it).  Other cases take the exact 128-bit path.
_TINY = 2.0 ** -960  # residuals of products above this cannot underflow


@intrinsic
def fma(typingctx, x, y, z):
    """``x * y + z`` with one rounding (LLVM's fma: one instruction with FMA hardware)."""
    def codegen(context, builder, signature, args):
        d = ir.DoubleType()
        fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
        return builder.call(fn, args)
    return types.float64(types.float64, types.float64, types.float64), codegen


@njit(**_J)
def _exact_enough(r):
    """A float64 result the fast path may take: finite, and nonzero and normal far enough
    above underflow that its residual is exact."""
    a = abs(r)
    return _TINY <= a < np.inf


@njit(nogil=True, cache=True)
def add_bits(ab, bb, P, mode, seed, i, var):
    """Correctly rounded ``a + b`` on float64 bit patterns: (bits, events)."""
    a, b = from_bits(ab), from_bits(bb)
    s = a + b
    if _exact_enough(s):
        bv = s - a
        if (a - (s - bv)) + (b - bv) == 0.0:
            return cast_bits(as_bits(s), 0, P, mode, seed, i, var)
    return _add_exact(ab, bb, P, mode, seed, i, var)


@njit(nogil=True, cache=True)
def mul_bits(ab, bb, P, mode, seed, i, var):
    """Correctly rounded ``a * b`` on float64 bit patterns: (bits, events)."""
    a, b = from_bits(ab), from_bits(bb)
    r = a * b
    if _exact_enough(r) and fma(a, b, -r) == 0.0:
        return cast_bits(as_bits(r), 0, P, mode, seed, i, var)
    return _mul_exact(ab, bb, P, mode, seed, i, var)


@njit(nogil=True, cache=True)
def div_bits(ab, bb, P, mode, seed, i, var):
    """Correctly rounded ``a / b`` on float64 bit patterns: (bits, events)."""
    a, b = from_bits(ab), from_bits(bb)
    if _exact_enough(a) and _exact_enough(b):
        r = a / b
        if _exact_enough(r) and fma(r, b, -a) == 0.0:
            return cast_bits(as_bits(r), 0, P, mode, seed, i, var)
    return _div_exact(ab, bb, P, mode, seed, i, var)


@njit(nogil=True, cache=True)
def sqrt_bits(ab, P, mode, seed, i, var):
    """Correctly rounded ``sqrt(a)`` on a float64 bit pattern: (bits, events)."""
    a = from_bits(ab)
    if a > 0.0 and _exact_enough(a):
        r = np.sqrt(a)
        if fma(r, r, -a) == 0.0:
            return cast_bits(as_bits(r), 0, P, mode, seed, i, var)
    return _sqrt_exact(ab, P, mode, seed, i, var)


# ------------------------------------------------------- scalar float64 functions --
@njit(nogil=True, cache=True)
def add_scalar(a, b, P, mode, seed, i, var):
    """``a + b`` rounded once into the format ``P`` (:func:`format_params`) with rounding
    code ``mode``; ``seed``, element ``i`` and ``var`` select stochastic rounding's bits.
    Returns (float64 result, event flags: 1 overflow, 2 underflow, 4 subnormal, 8 NaN)."""
    r, ev = add_bits(as_bits(a), as_bits(b), P, mode, seed, i, var)
    return from_bits(r), ev


@njit(nogil=True, cache=True)
def sub_scalar(a, b, P, mode, seed, i, var):
    """``a - b`` rounded once (as :func:`add_scalar`)."""
    r, ev = add_bits(as_bits(a), as_bits(b) ^ SIGN_BIT, P, mode, seed, i, var)
    return from_bits(r), ev


@njit(nogil=True, cache=True)
def mul_scalar(a, b, P, mode, seed, i, var):
    """``a * b`` rounded once (as :func:`add_scalar`)."""
    r, ev = mul_bits(as_bits(a), as_bits(b), P, mode, seed, i, var)
    return from_bits(r), ev


@njit(nogil=True, cache=True)
def div_scalar(a, b, P, mode, seed, i, var):
    """``a / b`` rounded once (as :func:`add_scalar`)."""
    r, ev = div_bits(as_bits(a), as_bits(b), P, mode, seed, i, var)
    return from_bits(r), ev


@njit(nogil=True, cache=True)
def sqrt_scalar(a, P, mode, seed, i, var):
    """``sqrt(a)`` rounded once (as :func:`add_scalar`)."""
    r, ev = sqrt_bits(as_bits(a), P, mode, seed, i, var)
    return from_bits(r), ev


# ------------------------------------------------------------------ array wrappers --
@njit(nogil=True, inline="always")
def _sub_bits(ab, bb, P, mode, seed, i, var):
    return add_bits(ab, bb ^ SIGN_BIT, P, mode, seed, i, var)


@njit(nogil=True, inline="always")
def _sqrt_bits2(ab, _unused, P, mode, seed, i, var):
    return sqrt_bits(ab, P, mode, seed, i, var)


#: the array loop of each operation (:func:`~fixedqmc.numerics.float_format.chunked`)
_ARRAYS = {op: chunked(element) for op, element in
           zip(OPS, (add_bits, _sub_bits, mul_bits, div_bits, _sqrt_bits2))}


def apply_with_events(op, a, b, fmt, rounding=None, seed=0, variable=0):
    """``op`` (one of :data:`OPS`) of float64 arrays ``a`` and ``b`` (broadcast; ``b``
    ignored for ``sqrt``, pass None), each result rounded once into ``fmt`` (a FloatFormat
    or spec; ``rounding`` overrides its default).  Returns (float64 array of the broadcast
    shape, event counts as a dict over ``("overflow", "underflow", "subnormal", "nan")``)."""
    if op not in OPS:
        raise ValueError(f"unknown operation {op!r}; allowed: {', '.join(OPS)}")
    fmt = as_float_format(fmt)
    mode = rounding_code(fmt.rounding if rounding is None else rounding)
    if op == "sqrt":
        xa = np.asarray(a, dtype=np.float64)
        xb = xa
    else:
        xa, xb = np.broadcast_arrays(np.asarray(a, dtype=np.float64),
                                     np.asarray(b, dtype=np.float64))
    shape = xa.shape
    xa = np.ascontiguousarray(xa)
    xb = np.ascontiguousarray(xb)
    fa = xa.reshape(-1).view(np.uint64)
    fb = xb.reshape(-1).view(np.uint64)
    out = np.empty(fa.shape[0], dtype=np.uint64)
    counts = _ARRAYS[op](fa, fb, out, format_params(fmt), mode, np.uint64(seed),
                         np.uint64(variable), CHUNK)
    return out.view(np.float64).reshape(shape), {k: int(c) for k, c in zip(EVENTS, counts)}


def add(a, b, fmt, rounding=None, seed=0, variable=0):
    """``a + b`` elementwise, each exact sum rounded once into ``fmt``."""
    return apply_with_events("add", a, b, fmt, rounding, seed, variable)[0]


def sub(a, b, fmt, rounding=None, seed=0, variable=0):
    """``a - b`` elementwise, each exact difference rounded once into ``fmt``."""
    return apply_with_events("sub", a, b, fmt, rounding, seed, variable)[0]


def mul(a, b, fmt, rounding=None, seed=0, variable=0):
    """``a * b`` elementwise, each exact product rounded once into ``fmt``."""
    return apply_with_events("mul", a, b, fmt, rounding, seed, variable)[0]


def div(a, b, fmt, rounding=None, seed=0, variable=0):
    """``a / b`` elementwise, each exact quotient rounded once into ``fmt``."""
    return apply_with_events("div", a, b, fmt, rounding, seed, variable)[0]


def sqrt(a, fmt, rounding=None, seed=0, variable=0):
    """``sqrt(a)`` elementwise, each exact root rounded once into ``fmt``."""
    return apply_with_events("sqrt", a, None, fmt, rounding, seed, variable)[0]
