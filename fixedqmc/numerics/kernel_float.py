"""The float-format context: kernels whose every variable is in a floating-point format.

A kernel precision whose variables are all float formats (:class:`FloatFormat`, float64
and emulated float32 included) runs in this context rather than the general run-time
format context: values are float64s (each exactly a value of its variable's format), so a
kernel's arithmetic is float arithmetic plus one rounding per result, with no word
encoding.  The formats are data (a parameter row per variable, read as the kernel runs), so
one compilation serves every format.

Context ``(params, events, seed, FloatFormats())``; a chunk context ``(params address,
event row address, seed, 0, FloatFormats())``, an element context the same with the element
index (stochastic rounding hashes seed, element and variable, as in fixed point).  A
parameter row is :data:`PARAM_COLUMNS` int64s: the tuple ``P`` of
:func:`~fixedqmc.numerics.float_format.format_params` (M, emin, emax, max significand,
subnormals, saturate, fn, bits of the max), the rounding code (-1: float64 itself, no
rounding), the first of the variable's three event columns (underflow, subnormal, NaN;
overflows are counted in column v, as fixed point's) and the mask of the float64 mantissa
bits below the format's when the variable is "short" (nearest even with subnormals, p = M + 1
<= :data:`SHORT_PRECISION` bits; else 0).

Every result is the exact result rounded once into its variable's format, the
:mod:`~fixedqmc.numerics.float_ops` operations:

- an exact float64 result (TwoSum error or fused multiply-add residual zero, as products of
  narrow formats always are) is cast inline, with an inline nearest-even cast for results in
  the normal range;
- a sum, quotient or square root of operands that are p-bit numbers, rounded to nearest even
  into a short variable (p <= 25 bits, subnormals kept) whose float64 result lies in its
  normal range, is the nearest-even cast of that float64 result: double rounding through a
  precision q >= 2p + 2 is innocuous for +, -, /, sqrt (S. A. Figueroa, "When is double
  rounding innocuous?", SIGNUM Newsl. 30(3), 1995); the operands' low mantissa bits are
  tested, not assumed;
- anything else (inexact sums, quotients and roots otherwise, subnormal or overflowing
  results, directed and stochastic modes) takes the compiled exact path.

exp, cos, sin, rsqrt: the float64 operation, then one rounding.  Bit-identical to the
run-time format context (tests).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fixedqmc.numerics import float_format as FF
from fixedqmc.numerics import float_ops as FO
from fixedqmc.numerics.kernel_core import count_float_events, peek

#: int64s per variable in a float-format context's parameter array
PARAM_COLUMNS = 11
_MODE, _EVENTS, _SHORT = 8, 9, 10
#: the widest significand (bits, p = M + 1) for which rounding a float64 sum, quotient or
#: root of p-bit numbers to nearest even is the single rounding: 53 >= 2p + 2 (Figueroa)
SHORT_PRECISION = 25
_TINY = 2.0 ** -960  # float64 results above this have exact fma residuals


def param_rows(formats, roundings, n_variables) -> np.ndarray:
    """The parameter array ``(n, PARAM_COLUMNS)`` int64 of a float-format context:
    ``formats`` FloatFormats, ``roundings`` their rounding names; a float64 variable
    (nearest even, IEEE) gets mode -1 (its results are the machine's)."""
    rows = np.zeros((n_variables, PARAM_COLUMNS), np.int64)
    for i, (fmt, rnd) in enumerate(zip(formats, roundings)):
        P = FF.format_params(fmt)
        rows[i, :8] = [int(P[0]), int(P[1]), int(P[2]), int(P[3]), int(P[4]), int(P[5]),
                       int(P[6]), np.array([P[7]], np.uint64).view(np.int64)[0]]
        native = fmt == FF.NAMED_FORMATS["float64"]
        rows[i, _MODE] = -1 if native else FF.rounding_code(rnd)
        rows[i, _EVENTS] = n_variables + 3 * i
        if (rows[i, _MODE] == FF.NEAREST_EVEN and fmt.subnormals
                and fmt.man_bits + 1 <= SHORT_PRECISION):
            rows[i, _SHORT] = (1 << (52 - fmt.man_bits)) - 1
    return rows


@njit(nogil=True, inline="always")
def _p(e, v, k):
    return peek(e[0], np.int64(v) * PARAM_COLUMNS + k)


@njit(nogil=True, inline="always")
def mode_of(e, v):
    """The rounding code of variable v (-1: float64 itself)."""
    return _p(e, v, _MODE)


@njit(nogil=True, inline="always")
def params(e, v):
    """The format parameters ``P`` of variable v (``format_params``' tuple)."""
    return (_p(e, v, 0), _p(e, v, 1), _p(e, v, 2), np.uint64(_p(e, v, 3)), _p(e, v, 4) != 0,
            _p(e, v, 5) != 0, _p(e, v, 6) != 0, np.uint64(_p(e, v, 7)))


@njit(nogil=True)
def _finish(e, r, v):
    """The float64 of a result ``(bits, events)`` of variable v, its events counted."""
    if r[1]:
        count_float_events(e, r[1], v, _p(e, v, _EVENTS))
    return FO.from_bits(r[0])


@njit(nogil=True)
def _cast_general(e, x, v, mode):
    return _finish(e, FF.cast_bits(FO.as_bits(x), 0, params(e, v), mode, e[2], e[3], v), v)


@njit(nogil=True, inline="always")
def _nearest_even(e, x, v):
    """(bits, ok): x rounded to nearest even at v's mantissa bits, and whether that is its
    rounding into v's format (:func:`~fixedqmc.numerics.float_format.nearest_even_normal`)."""
    return FF.nearest_even_normal(FO.as_bits(x), _p(e, v, 0), _p(e, v, 1), _p(e, v, 2),
                                  np.uint64(_p(e, v, 7)))


@njit(nogil=True, inline="always")
def round_into(e, x, v):
    """The float64 ``x`` rounded once into variable v's format (events counted): inline for
    nearest even in the normal range, else the compiled cast."""
    mode = mode_of(e, v)
    if mode < 0:
        return x
    if mode == 0:
        r, ok = _nearest_even(e, x, v)
        if ok:
            return FO.from_bits(r)
    return _cast_general(e, x, v, mode)


@njit(nogil=True, inline="always")
def _innocuous(e, a, b, v):
    """Whether rounding the float64 sum, quotient or root of a and b to nearest even into v
    is their single rounding: v is short and a and b are p-bit numbers (module docstring)."""
    m = np.uint64(_p(e, v, _SHORT))
    return m != np.uint64(0) and ((FO.as_bits(a) | FO.as_bits(b)) & m) == np.uint64(0)


@njit(nogil=True)
def _add_exact(e, a, b, v):
    return _finish(e, FO.add_bits(FO.as_bits(a), FO.as_bits(b), params(e, v), mode_of(e, v),
                                  e[2], e[3], v), v)


@njit(nogil=True)
def _mul_exact(e, a, b, v):
    return _finish(e, FO.mul_bits(FO.as_bits(a), FO.as_bits(b), params(e, v), mode_of(e, v),
                                  e[2], e[3], v), v)


@njit(nogil=True, error_model="numpy")
def _div_exact(e, a, b, v):
    return _finish(e, FO.div_bits(FO.as_bits(a), FO.as_bits(b), params(e, v), mode_of(e, v),
                                  e[2], e[3], v), v)


@njit(nogil=True)
def _sqrt_exact(e, a, v):
    return _finish(e, FO.sqrt_bits(FO.as_bits(a), params(e, v), mode_of(e, v), e[2], e[3],
                                   v), v)


@njit(nogil=True, inline="always")
def add(e, a, b, v):
    """``a + b`` rounded once into v: the float64 sum cast when double rounding is innocuous
    or TwoSum shows it exact, else the exact path."""
    s = a + b
    if mode_of(e, v) < 0:
        return s
    if _innocuous(e, a, b, v):
        r, ok = _nearest_even(e, s, v)
        if ok:
            return FO.from_bits(r)
        return _add_exact(e, a, b, v)
    bv = s - a
    if s != 0.0 and (a - (s - bv)) + (b - bv) == 0.0:
        return round_into(e, s, v)
    return _add_exact(e, a, b, v)


@njit(nogil=True, inline="always")
def mul(e, a, b, v):
    """``a * b`` rounded once into v: a zero fused multiply-add residual means the float64
    product is exact."""
    p = a * b
    if mode_of(e, v) < 0:
        return p
    if _TINY <= abs(p) and FO.fma(a, b, -p) == 0.0:
        return round_into(e, p, v)
    return _mul_exact(e, a, b, v)


@njit(nogil=True, error_model="numpy")
def _div64(a, b):
    return a / b


@njit(nogil=True, inline="always")
def div(e, a, b, v):
    """``a / b`` rounded once into v (IEEE: x / 0 is inf or NaN): the float64 quotient cast
    when double rounding is innocuous, else the exact path."""
    if mode_of(e, v) < 0:
        return _div64(a, b)
    if b != 0.0 and _innocuous(e, a, b, v):
        r, ok = _nearest_even(e, a / b, v)
        if ok:
            return FO.from_bits(r)
    return _div_exact(e, a, b, v)


@njit(nogil=True, inline="always")
def sqrt(e, a, v):
    """``sqrt(a)`` rounded once into v: the float64 root cast when double rounding is
    innocuous, else the exact path."""
    if mode_of(e, v) < 0:
        return np.sqrt(a)
    if a > 0.0 and _innocuous(e, a, a, v):
        r, ok = _nearest_even(e, np.sqrt(a), v)
        if ok:
            return FO.from_bits(r)
    return _sqrt_exact(e, a, v)


@njit(nogil=True)
def fixed_into(e, raw, signed, frac, v):
    """The exact value of a fixed word ``raw * 2**-frac`` rounded once into v."""
    neg = signed and raw < 0
    mag = np.uint64(-raw) if neg else np.uint64(raw)
    if mag == np.uint64(0):
        return 0.0
    mode = max(mode_of(e, v), 0)  # float64 itself: nearest even
    return _finish(e, FO.round_exact(neg, np.uint64(0), mag, -frac, False, params(e, v),
                                     mode, e[2], e[3], v), v)
