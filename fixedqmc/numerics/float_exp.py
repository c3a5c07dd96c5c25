"""The exponential of the float kernel contexts, branch-free so that loops calling it vectorise.

A call to the C library's ``exp``/``expf`` stops LLVM's loop vectoriser (this numba has no
vector math library), so a pair loop with a Gaussian in it stays scalar, and float32 is then
no faster than float64.  :func:`exp64` and :func:`exp32` compute ``e**x`` from arithmetic
only (inlined, no branches, no calls):

1. ``n = rint(x / ln 2)``, ``r = x - n ln2_hi - n ln2_lo`` (Cody-Waite: ``ln2_hi`` has few
   enough significant bits that ``n ln2_hi`` is exact for every n used; both steps fused
   multiply-adds), so ``|r| <= ln 2 / 2``;
2. ``e**r = 1 + (r + r**2 P(r))`` with ``P`` the rest of the Taylor polynomial, degree 11 in
   float64 (truncation below ``(ln 2 / 2)**14 / 14! = 4e-18`` relative), degree 5 in float32
   (``5e-9``), evaluated by Estrin's scheme with fused multiply-adds (``llvm.fma``; one
   rounding each): after the reduction the dependency chain is about 6 operations deep
   (Horner's rule without fused operations: 26), which is what a scalar loop waits for, and
   the 1 is added last, so the result is within one rounding of the sum;
3. ``e**x = e**r 2**h 2**(n - h)`` with ``h = n // 2``, each power of two built from its
   exponent bits, so results from the subnormal range up to overflow (inf) come out right
   with no special case; ``x`` is clamped first to where ``e**x`` is already 0 or inf.

Special values: ``exp(-inf) = 0``, ``exp(inf) = inf``, ``exp(nan) = nan``.  Error, measured
against the correctly rounded value (``tests/numerics/test_float_exp.py``): at most 1 ulp of
the result's type on normal results (measured 0.88 ulp in float64, 0.92 in float32; the C
library's is also within 1 ulp); on subnormal results an absolute error below the smallest
normal number times 2**-50 (float64).  Results are reproducible on a given machine (the same
instructions whether or not a loop vectorises: the polynomial has no reassociation).
Speed (Zen 4, one thread): a vectorised loop 0.92 ns per float64 exponential and 0.35 ns per
float32 one (Horner's rule without fused operations: 1.35 and 0.46 ns); a scalar loop that
branches between exponentials, as the molecule's screened primitives do, 1.75x faster.

:func:`pow2` builds ``2**n`` from its exponent bits (step 3 above); the rounding of floats
into fixed-point formats (:func:`fixedqmc.numerics.quantize.from_float_raw`) scales by it
instead of calling the C library's ``ldexp``, whose calls took 16 % of a fixed-point H2
sweep (the rounding is unchanged bit for bit: a product with an exact power of two rounds
once, as ``ldexp`` does)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _f64_from_bits(typingctx, bits):
    """The float64 whose IEEE bits are the int64 ``bits``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _f32_from_bits(typingctx, bits):
    """The float32 whose IEEE bits are the int32 ``bits``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@njit(inline="always", nogil=True)
def pow2(n):
    """``2**n`` as a float64, exactly, for an integer n in [-1022, 1023] (the normal
    range), built from its exponent bits: a scaling ``x * pow2(n)`` then rounds once, like
    ``ldexp(x, n)``, without the library call."""
    return _f64_from_bits((np.int64(n) + 1023) << 52)


@intrinsic
def _fma(typingctx, a, b, c):
    """``a b + c`` rounded once (``llvm.fma``), of three values of one float type."""
    def codegen(context, builder, signature, args):
        t = args[0].type
        return builder.call(builder.module.declare_intrinsic(
            "llvm.fma", [t], ir.FunctionType(t, [t, t, t])), args)
    return a(a, a, a), codegen


_TAYLOR64 = tuple(1.0 / float(np.prod(np.arange(1, k + 1), dtype=np.float64))
                  for k in range(14))
# degrees 0 and 1 (1 and r) are written out in the polynomial
(_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13) = _TAYLOR64[2:]
_LN2_HI64 = 6.93147180369123816490e-01  # 32 significant bits: n * _LN2_HI64 exact
_LN2_LO64 = 1.90821492927058770002e-10
_INV_LN2 = 1.4426950408889634


@njit(inline="always", nogil=True)
def exp64(x):
    """``e**x`` of a float64 (module docstring)."""
    xc = x if x > -746.0 else -746.0  # beyond these e**x is 0 or inf (and nan -> -746)
    xc = xc if xc < 710.0 else 710.0
    n = np.rint(xc * _INV_LN2)
    r = _fma(n, -_LN2_LO64, _fma(n, -_LN2_HI64, xc))
    r2 = r * r
    r4 = r2 * r2
    b0 = _fma(_fma(_C5, r, _C4), r2, _fma(_C3, r, _C2))
    b1 = _fma(_fma(_C9, r, _C8), r2, _fma(_C7, r, _C6))
    b2 = _fma(_fma(_C13, r, _C12), r2, _fma(_C11, r, _C10))
    p = 1.0 + _fma(r2, _fma(b2, r4 * r4, _fma(b1, r4, b0)), r)
    k = np.int64(n)
    h = k >> 1
    y = p * pow2(h) * pow2(k - h)
    return y if x == x else x


_LN2_HI32 = np.float32(0.693359375)  # 9 significant bits
_LN2_LO32 = np.float32(-2.12194440e-4)
_D2, _D3, _D4, _D5, _D6, _D7 = (np.float32(c) for c in _TAYLOR64[2:8])


@njit(inline="always", nogil=True)
def exp32(x):
    """``e**x`` of a float32 (module docstring), computed in float32."""
    xc = x if x > np.float32(-104.0) else np.float32(-104.0)
    xc = xc if xc < np.float32(89.0) else np.float32(89.0)
    n = np.rint(xc * np.float32(_INV_LN2))
    r = _fma(n, -_LN2_LO32, _fma(n, -_LN2_HI32, xc))
    r2 = r * r
    q = _fma(_fma(_D7, r, _D6), r2 * r2, _fma(_fma(_D5, r, _D4), r2, _fma(_D3, r, _D2)))
    p = np.float32(1.0) + _fma(r2, q, r)
    k = np.int32(n)
    h = k >> np.int32(1)
    y = (p * _f32_from_bits((h + np.int32(127)) << np.int32(23))
         * _f32_from_bits((k - h + np.int32(127)) << np.int32(23)))
    return y if x == x else x
