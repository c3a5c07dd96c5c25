"""Exact 192-bit two's-complement integers for the compiled fixed-point core.

A wide integer is a tuple ``(l0, l1, l2)`` of uint64 limbs, least significant first.  192 bits
hold every exact intermediate of the fixed-point operations on words of up to 64 bits:
aligning two operands to the finer of their scales needs at most 64 + 64 + 2 bits (sum of a
``UQ64.0`` and a ``UQ0.64`` value), a 64 x 64-bit product 128 bits plus sign.

All functions are numba-compiled and work on scalars so that kernels can inline them.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.cpython.unsafe.numbers import leading_zeros
from numba.extending import intrinsic

U0 = np.uint64(0)
U1 = np.uint64(1)
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
M32 = np.uint64(0xFFFFFFFF)
U32 = np.uint64(32)
U64 = np.uint64(64)

_JIT = dict(nogil=True)


@njit(**_JIT)
def from_i64(x):
    """Sign-extend an int64."""
    fill = M64 if x < 0 else U0
    return (np.uint64(x), fill, fill)


@njit(**_JIT)
def from_raw(raw, signed):
    """A raw word as stored in an int64 array: sign-extended if signed, else zero-extended
    (an unsigned 64-bit word is stored as its bit pattern)."""
    if signed:
        return from_i64(raw)
    return (np.uint64(raw), U0, U0)


@njit(**_JIT)
def add(a, b):
    s0 = a[0] + b[0]
    c0 = U1 if s0 < a[0] else U0
    s1 = a[1] + b[1]
    c1 = U1 if s1 < a[1] else U0
    s1c = s1 + c0
    if s1c < s1:
        c1 = U1
    s2 = a[2] + b[2] + c1
    return (s0, s1c, s2)


@njit(**_JIT)
def neg(a):
    return add((~a[0], ~a[1], ~a[2]), (U1, U0, U0))


@njit(**_JIT)
def is_negative(a):
    return (a[2] >> np.uint64(63)) != U0


@njit(**_JIT)
def is_zero(a):
    return a[0] == U0 and a[1] == U0 and a[2] == U0


@njit(**_JIT)
def shl(a, k):
    """a * 2**k for 0 <= k < 192 (bits shifted out of 192 are lost)."""
    a0, a1, a2 = a
    while k >= 64:
        a2 = a1
        a1 = a0
        a0 = U0
        k -= 64
    if k == 0:
        return (a0, a1, a2)
    uk = np.uint64(k)
    rk = np.uint64(64 - k)
    return (a0 << uk, (a1 << uk) | (a0 >> rk), (a2 << uk) | (a1 >> rk))


@njit(**_JIT)
def sar(a, k):
    """Arithmetic right shift (floor(a / 2**k)) for 0 <= k < 192."""
    a0, a1, a2 = a
    fill = M64 if (a2 >> np.uint64(63)) != U0 else U0
    while k >= 64:
        a0 = a1
        a1 = a2
        a2 = fill
        k -= 64
    if k == 0:
        return (a0, a1, a2)
    uk = np.uint64(k)
    rk = np.uint64(64 - k)
    return ((a0 >> uk) | (a1 << rk), (a1 >> uk) | (a2 << rk), (a2 >> uk) | (fill << rk))


@njit(**_JIT)
def mul_u64(a, b):
    """Full 128-bit product of two uint64 values as (lo, hi), from 32 x 32-bit partial
    products: operations vector units have, so a loop of them can vectorise (the two-limb
    forms of :mod:`~fixedqmc.numerics.narrow`).  Scalar code that needs no vectorising
    takes :data:`mul_u64_wide` (one machine multiply)."""
    a_lo = a & M32
    a_hi = a >> U32
    b_lo = b & M32
    b_hi = b >> U32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> U32) + (p1 & M32) + (p2 & M32)
    lo = (p0 & M32) | (mid << U32)
    hi = p3 + (p1 >> U32) + (p2 >> U32) + (mid >> U32)
    return lo, hi


def _wide_product(signed: bool):
    """The intrinsic 64 x 64 -> 128-bit product of two int64 (``signed``) or uint64 words
    as (lo, hi) uint64 words: one machine multiply (LLVM's i128, which numba does not
    expose)."""
    word = types.int64 if signed else types.uint64

    @intrinsic
    def product(typingctx, a, b):
        sig = types.UniTuple(types.uint64, 2)(word, word)

        def codegen(context, builder, signature, args):
            i64, i128 = ir.IntType(64), ir.IntType(128)
            extend = builder.sext if signed else builder.zext
            p = builder.mul(extend(args[0], i128), extend(args[1], i128))
            lo = builder.trunc(p, i64)
            hi = builder.trunc(builder.lshr(p, ir.Constant(i128, 64)), i64)
            return context.make_tuple(builder, signature.return_type, (lo, hi))

        return sig, codegen
    return product


#: Signed 64 x 64 -> 128-bit product of two int64 as (lo, hi) uint64 words.
mul_i64_wide = _wide_product(True)
#: Unsigned 64 x 64 -> 128-bit product of two uint64 as (lo, hi) uint64 words.
mul_u64_wide = _wide_product(False)


@intrinsic
def mul_round_shift(typingctx, a, b, k, rnd):
    """round(a * b / 2**k) for int64 a, b, 1 <= k <= 63, deterministic rounding code rnd
    (floor, zero, half_up, half_away, half_even), as (lo, hi) uint64 words of the 128-bit
    result.  Branch-free: a mode-dependent bias is added before the arithmetic shift
    (floor 0; zero 2**k - 1 if negative; half_up 2**(k-1); half_away 2**(k-1) - [negative];
    half_even 2**(k-1) - 1 + lsb of the floor)."""
    sig = types.UniTuple(types.uint64, 2)(types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64, i128 = ir.IntType(64), ir.IntType(128)
        a_, b_, k_, r_ = args
        c = lambda v: ir.Constant(i128, v)  # noqa: E731
        p = builder.mul(builder.sext(a_, i128), builder.sext(b_, i128))
        kk = builder.zext(k_, i128)
        neg = builder.icmp_signed("<", p, c(0))
        half = builder.shl(c(1), builder.sub(kk, c(1)))
        lsb = builder.and_(builder.ashr(p, kk), c(1))
        bias_zero = builder.select(neg, builder.sub(builder.shl(c(1), kk), c(1)), c(0))
        bias_away = builder.select(neg, builder.sub(half, c(1)), half)
        bias_even = builder.add(builder.sub(half, c(1)), lsb)
        bias = bias_even
        for code, value in ((3, bias_away), (2, half), (1, bias_zero), (0, c(0))):
            is_code = builder.icmp_signed("==", r_, ir.Constant(i64, code))
            bias = builder.select(is_code, value, bias)
        n = builder.ashr(builder.add(p, bias), kk)
        lo = builder.trunc(n, i64)
        hi = builder.trunc(builder.lshr(n, c(64)), i64)
        return context.make_tuple(builder, signature.return_type, (lo, hi))

    return sig, codegen


@njit(**_JIT)
def mul_raw(ra, sa, rb, sb):
    """Exact product of two raw words (signedness sa, sb) as a wide integer."""
    neg_a = sa and ra < 0
    neg_b = sb and rb < 0
    ma = U0 - np.uint64(ra) if neg_a else np.uint64(ra)  # magnitude, exact for -2**63
    mb = U0 - np.uint64(rb) if neg_b else np.uint64(rb)
    lo, hi = mul_u64(ma, mb)
    p = (lo, hi, U0)
    if neg_a != neg_b:
        return neg(p)
    return p


@njit(**_JIT)
def fits_signed(a, bits):
    """True if a lies in [-2**(bits-1), 2**(bits-1) - 1], 1 <= bits <= 192."""
    t = sar(a, bits - 1)
    return (t[0] == U0 and t[1] == U0 and t[2] == U0) or (
        t[0] == M64 and t[1] == M64 and t[2] == M64
    )


@njit(**_JIT)
def fits_unsigned(a, bits):
    """True if a lies in [0, 2**bits - 1], 1 <= bits < 192."""
    t = sar(a, bits)
    return t[0] == U0 and t[1] == U0 and t[2] == U0


@njit(**_JIT)
def compare(a, b):
    """Sign of a - b as -1, 0 or 1."""
    d = add(a, neg(b))
    if is_negative(d):
        return -1
    if is_zero(d):
        return 0
    return 1


@njit(**_JIT)
def sub(a, b):
    return add(a, neg(b))


@njit(**_JIT)
def divlu_portable(u1, u0, v):
    """(q, r) of the 128-bit ``u1 2**64 + u0`` divided by ``v`` (uint64 values, u1 < v, so q
    fits 64 bits): long division in 32-bit digits after normalising v (Hacker's Delight,
    ``divlu``); every step is exact uint64 arithmetic."""
    b = np.uint64(1) << U32
    s = np.uint64(leading_zeros(v))
    v = v << s
    vn1, vn0 = v >> U32, v & M32
    un32 = (u1 << s) | ((u0 >> (U64 - s)) if s != U0 else U0)
    un10 = u0 << s
    un1, un0 = un10 >> U32, un10 & M32
    q1 = un32 // vn1
    rhat = un32 - q1 * vn1
    while q1 >= b or q1 * vn0 > b * rhat + un1:
        q1 -= U1
        rhat += vn1
        if rhat >= b:
            break
    un21 = un32 * b + un1 - q1 * v
    q0 = un21 // vn1
    rhat = un21 - q0 * vn1
    while q0 >= b or q0 * vn0 > b * rhat + un0:
        q0 -= U1
        rhat += vn1
        if rhat >= b:
            break
    return q1 * b + q0, (un21 * b + un0 - q0 * v) >> s


def _machine_divide():
    """An intrinsic ``(q, r) = divmod(u1 2**64 + u0, v)`` by the x86-64 instruction ``div``
    (128 / 64 bits: one instruction, 3.1x faster than :func:`divlu_portable` in a loop on Zen
    4: 3.3 against 10 ns), or None where the process is not x86-64.  The instruction faults
    unless u1 < v."""
    import llvmlite.binding as llvm

    if not llvm.get_process_triple().startswith("x86_64"):
        return None
    llvm.initialize_native_asmparser()  # numba initialises LLVM's printer, not its parser

    @intrinsic
    def divide(typingctx, u1, u0, v):
        sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64, types.uint64)

        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            fnty = ir.FunctionType(ir.LiteralStructType([i64, i64]), [i64, i64, i64])
            div = ir.InlineAsm(fnty, "divq $4", "={rax},={rdx},{rdx},{rax},r,~{flags}")
            res = builder.call(div, args)
            return context.make_tuple(builder, signature.return_type,
                                      (builder.extract_value(res, 0),
                                       builder.extract_value(res, 1)))
        return sig, codegen
    return divide


_divide = _machine_divide()

if _divide is None:
    divlu = divlu_portable
else:
    @njit(**_JIT)
    def divlu(u1, u0, v):
        """(q, r) of the 128-bit ``u1 2**64 + u0`` divided by ``v`` (uint64 values, u1 < v,
        so q fits 64 bits): the machine's ``div`` (:func:`_machine_divide`), else
        :func:`divlu_portable` (the same q and r; for u1 >= v, where the instruction would
        fault, what that routine gives)."""
        if u1 < v:
            return _divide(u1, u0, v)
        return divlu_portable(u1, u0, v)


@njit(**_JIT)
def _push(q, lost, limb):
    """Shift the quotient register q (3 limbs) up by one limb, ``limb`` entering at the
    bottom; ``lost`` records whether a nonzero limb (or a set sign bit) left it."""
    lost = lost or q[2] != U0
    return (limb, q[0], q[1]), lost


@njit(**_JIT)
def div_shifted(a, t, d):
    """floor(a 2**t / d) for uint64 a, d (d > 0) and 0 <= t <= 192, by long division over
    64-bit limbs: (low 192 bits of the quotient, remainder != 0, whether the quotient needs
    more than 191 bits).  The dividend ``a 2**t`` is streamed limb by limb, most significant
    first, so it may be wider than 192 bits."""
    m = t // 64
    u = np.uint64(t - 64 * m)
    hi = (a >> (U64 - u)) if u != U0 else U0
    lo = a << u
    q = (U0, U0, U0)
    lost = False
    r = U0
    for i in range(m + 2):
        limb = hi if i == 0 else (lo if i == 1 else U0)
        qi, r = divlu(r, limb, d)
        q, lost = _push(q, lost, qi)
    lost = lost or (q[2] >> np.uint64(63)) != U0
    return q, r != U0, lost


@njit(**_JIT)
def _sqrt_limb(root, rem, limb):
    """32 steps of the digit-by-digit square root: the radicand's next 64 bits ``limb``
    (two bits a step) enter the remainder; root and remainder stay below 2**161 for the
    radicands of the fixed-point square roots (below 2**320)."""
    for j in range(32):
        pair = (limb >> np.uint64(62 - 2 * j)) & np.uint64(3)
        rem = shl(rem, 2)
        rem = (rem[0] | pair, rem[1], rem[2])
        trial = shl(root, 2)
        trial = (trial[0] | U1, trial[1], trial[2])
        root = shl(root, 1)
        if compare(rem, trial) >= 0:
            rem = sub(rem, trial)
            root = (root[0] | U1, root[1], root[2])
    return root, rem


@njit(**_JIT)
def isqrt_u64(x):
    """(floor(sqrt(x)), x - floor(sqrt(x))**2) of a uint64 x: the float square root, then
    stepped down to the exact root.  It is never below it: with k = floor(sqrt(x)), the
    rounded x is at least k**2 (1 - 2**-53), whose root is less than half a unit in the last
    place below k, so the correctly rounded root is at least k."""
    r = np.uint64(np.sqrt(np.float64(x)))
    if r > M32:  # sqrt(2**64 - 1) rounds up to 2**32
        r = M32
    while r * r > x:
        r -= U1
    return r, x - r * r


@njit(**_JIT)
def isqrt_u128(hi, lo):
    """(s, r_lo, r_hi): s = floor(sqrt(N)) of N = hi 2**64 + lo (uint64 limbs, hi > 0) and
    the remainder N - s**2 (at most 2 s, below 2**65) as two limbs.  The float square root
    is within 2**12 of s (raised to hi + 1 if not above hi, which the limb division needs:
    s >= sqrt(hi) 2**32 >= hi), and one Newton step ``floor((t + floor(N / t)) / 2)`` brings
    it to s or s + 1, for an integer Newton step from any t > 0 is at least s."""
    t = np.sqrt(np.float64(hi) * 18446744073709551616.0 + np.float64(lo))
    t = np.uint64(t) if t < 18446744073709551615.0 else M64
    if hi == M64:  # N >= (2**64 - 1) 2**64: the root is 2**64 - 1
        t = M64
    else:
        if t <= hi:  # s >= hi, so hi + 1 is as near; the quotient must fit 64 bits
            t = hi + U1
        q, _ = divlu(hi, lo, t)
        t = (t >> U1) + (q >> U1) + (t & q & U1)
    p_lo, p_hi = mul_u64_wide(t, t)
    while p_hi > hi or (p_hi == hi and p_lo > lo):
        t -= U1
        p_lo, p_hi = mul_u64_wide(t, t)
    r_lo = lo - p_lo
    return t, r_lo, hi - p_hi - (U1 if r_lo > lo else U0)


@njit(**_JIT)
def _sqrt_step(root, rem, first, limb):
    """The digit-by-digit root after the radicand's next 64 bits ``limb``, with ``first``
    the radicand's first nonzero limb while it waits for the next one (else 0).  The 64
    steps of :func:`_sqrt_limb` from a zero root over those two limbs give floor(sqrt(N))
    and its remainder, which :func:`isqrt_u128` computes directly; returns (root, rem,
    first)."""
    if not is_zero(root):
        root, rem = _sqrt_limb(root, rem, limb)
        return root, rem, U0
    if first == U0:
        return root, rem, limb
    s, r_lo, r_hi = isqrt_u128(first, limb)
    return (s, U0, U0), (r_lo, r_hi, U0), U0


@njit(**_JIT)
def _sqrt_end(root, rem, first):
    """The root when the radicand's last limb was its first nonzero one (still waiting in
    ``first``): floor(sqrt(first)) and the remainder (:func:`isqrt_u64`)."""
    if first == U0:
        return root, rem
    r, left = isqrt_u64(first)
    return (r, U0, U0), (left, U0, U0)


@njit(**_JIT)
def isqrt_shifted(a, e):
    """(floor(sqrt(a 2**e)), whether the root is inexact) for uint64 a and 0 <= e <= 256
    (radicand below 2**320, root below 2**160)."""
    m = e // 64
    u = np.uint64(e - 64 * m)
    hi = (a >> (U64 - u)) if u != U0 else U0
    lo = a << u
    root = (U0, U0, U0)
    rem = (U0, U0, U0)
    first = U0
    for i in range(m + 2):
        limb = hi if i == 0 else (lo if i == 1 else U0)
        root, rem, first = _sqrt_step(root, rem, first, limb)
    root, rem = _sqrt_end(root, rem, first)
    return root, not is_zero(rem)


@njit(**_JIT)
def irsqrt_shifted(a, e):
    """(floor(sqrt(2**e / a)), whether inexact) for uint64 a > 0 and 0 <= e <= 320: the
    limbs of floor(2**e / a) (long division, streamed) feed the digit-by-digit root, since
    floor(sqrt(floor(y))) = floor(sqrt(y)); exact only if both steps are."""
    m = e // 64
    u = np.uint64(e - 64 * m)
    root = (U0, U0, U0)
    rem = (U0, U0, U0)
    first = U0
    r = U0
    for i in range(m + 1):
        limb = (U1 << u) if i == 0 else U0
        qi, r = divlu(r, limb, a)
        root, rem, first = _sqrt_step(root, rem, first, qi)
    root, rem = _sqrt_end(root, rem, first)
    return root, r != U0 or not is_zero(rem)
