"""Narrow fixed-point operations: int64 or int128, branch-free, for formats known at compile time.

When the formats of an operation's operands bound its exact result below 2**63, the exact
result is one int64 (a sum of aligned words, or one product), and the single rounding of
:mod:`quantize` becomes a shift plus a rounding increment and the overflow step a clamp or a
sign extension.  Such operations have no data-dependent branch and no out-of-line 192-bit
fallback, so loops of them vectorise (AVX-512 has 64-bit multiplies, shifts and min/max).

The bound uses the invariant of every kernel value: a raw word lies in its format (inputs are
encoded into their variable's format, results are rounded and overflow-handled into theirs).
A word of ``w`` bits has magnitude at most ``2**E`` with ``E = w - 1`` signed (attained by
the minimum) and at most ``2**w - 1`` unsigned (``E = w``, never attained).

* add/sub of ``a`` (E_a, f_a) and ``b`` (E_b, f_b) aligned to ``g = max(f_a, f_b)``: exact if
  ``max(E_a + g - f_a, E_b + g - f_b) + 1 <= 62``;
* mul: exact if ``E_a + E_b <= 62``, or ``= 63`` with an unsigned operand (then
  ``|a b| <= 2**63 - 2**E < 2**63``; two signed minima would give 2**63); two unsigned words
  with ``E_a + E_b <= 64`` multiply exactly in uint64 (below 2**64), and a rounding shift
  of ``k >= 1`` bits brings the result below 2**63;
* rounding by ``k`` bits (``1 <= k <= 62``) of an exact int64 ``x``: ``q = x >> k``,
  ``rem = x & (2**k - 1)``, ``half = 2**(k-1)`` and ``q + up`` with ``up`` = 0 (floor),
  ``rem != 0 and x < 0`` (zero), ``rem >= half`` (half_up), ``rem > half or (rem == half
  and x >= 0)`` (half_away), ``rem > half or (rem == half and q odd)`` (half_even),
  ``bits < rem 2**(64-k)`` (stochastic: the dropped fraction's top 64 bits against 64
  random bits), exactly the rule of :func:`quantize.round_up`; a left shift (``k < 0``) only
  when the bound leaves room for it.

Wider results (words of 33 to 64 bits, e.g. the products of 40-bit words) take the same
steps on one LLVM ``i128`` (numba has no 128-bit type, so each operation is one intrinsic):
exact when the bound is at most 126 (so adding a rounding bias cannot leave i128), rounded by
``1 <= k <= 126`` bits with a bias (``floor`` 0, ``zero`` ``2**k - 1`` if negative,
``half_up`` ``2**(k-1)``, ``half_away`` one less if negative, ``half_even`` ``2**(k-1) - 1``
plus the floor's last bit) or the stochastic compare, then clamped or wrapped into the output
word.  On x86-64 a 64 x 64-bit product is one machine multiply; these loops stay scalar, but
without a branch or the 192-bit path.

``binary(..., vector=True)`` gives instead, for such results, forms made only of operations
vector units have, so that a loop of them vectorises (quiet kernel passes, the LUT
exponential's specialised kernel):

* a product whose partial products fit int64 once one operand is split in two (two 40-bit
  words; any pair with ``2 E_a + E_b <= 123`` in one order, rounded by at least
  ``E_a + E_b - 61`` bits) takes the *split* form: ``b = bh 2**s + bl``, two int64
  products and the rounding on their exact sum kept as an int64 high part and the s low
  bits (:func:`_split_mul`);
* other results take the *two-limb* form: the i128 steps on (hi, lo) uint64 limbs,
  products from 32 x 32-bit partial products, carries from compares (slower as scalar code
  than one i128).

Results are bit-identical to the general operations (tests check both on the same operands).
:func:`binary` and :func:`cast` return ``None`` for formats outside these bounds; the caller
then uses the general operation.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics import wideint as W
from fixedqmc.numerics.modes import FLOOR, HALF_AWAY, HALF_EVEN, HALF_UP, STOCHASTIC, WRAP, ZERO

_JIT = dict(nogil=True, inline="always")
ADD, SUB, MUL = 0, 1, 2
CAST = 3
#: Largest exact magnitude (log2) of the i128 forms: |x| + 2**k - 1 stays below 2**127.
_I128_BOUND = 126


def magnitude_bits(signed: bool, word: int) -> int:
    """E with |raw| <= 2**E for every word of the format (see the module docstring)."""
    return word - 1 if signed else word


def _round_shift(k: int, rnd: int, unsigned: bool = False):
    """``(x, rbits) -> round(x 2**-k)`` for an exact int64 x (``unsigned``: an exact uint64
    x, k >= 1; the result is an int64 either way), k a compile-time constant.  For x >= 0 the
    rule is the same in both types (toward zero is floor, ties away from zero round up)."""
    if k <= 0:
        sh = np.int64(-k)
        return njit(lambda x, rbits: x << sh, **_JIT)
    t = np.uint64 if unsigned else np.int64
    zero, one, sk = t(0), t(1), t(k)
    mask = (one << sk) - one
    up = _round_up(k, rnd)

    def impl(x, rbits):
        q = x >> sk
        return np.int64(q) + up(np.int64(q), np.int64(x & mask), x < zero, rbits)
    return njit(impl, **_JIT)


def _round_up(k: int, rnd: int):
    """``(q, rem, negative, rbits) -> 0 or 1``: whether ``x = q 2**k + rem`` (``0 <= rem <
    2**k``, int64s, ``1 <= k <= 62``; ``negative``: x < 0) rounds to q + 1 rather than q."""
    zero, one = np.int64(0), np.int64(1)
    half = one << np.int64(k - 1)
    up_shift = np.uint64(64 - k)

    def up(q, rem, negative, rbits):
        if rnd == FLOOR:
            u = False
        elif rnd == ZERO:
            u = (rem != zero) & negative
        elif rnd == HALF_UP:
            u = rem >= half
        elif rnd == HALF_AWAY:
            u = (rem > half) | ((rem == half) & (not negative))
        elif rnd == HALF_EVEN:
            u = (rem > half) | ((rem == half) & ((q & one) != zero))
        else:  # STOCHASTIC
            u = rbits < (np.uint64(rem) << up_shift)
        return np.int64(u)
    return njit(up, **_JIT)


def _finish(bound: int, k: int, so: bool, wo: int, fo_rnd: int, ovf: int,
            unsigned: bool = False):
    """Round an exact int64 with ``|x| <= 2**bound`` by k bits and store it, or None if a
    left shift (k < 0) could leave int64 or k exceeds 62."""
    if k > 62 or (k < 0 and bound - k > 62) or (unsigned and k < 1):
        return None
    rnd_shift = _round_shift(k, fo_rnd, unsigned)

    def finish(x, rbits):
        return Q.store_i64(rnd_shift(x, rbits), so, wo, ovf)
    return njit(finish, **_JIT)


def _binary64(op: int, a: tuple, b: tuple, out: tuple):
    """The int64 ``(ra, rb, rbits) -> (raw, event)`` of add (0), sub (1) or mul (2) for
    formats ``a``, ``b`` = (signed, word, frac) and ``out`` = (signed, word, frac, rounding,
    overflow), or None if the formats are outside the bounds of the module docstring."""
    (sa, wa, fa), (sb, wb, fb) = a, b
    so, wo, fo, rnd, ovf = out
    ea, eb = magnitude_bits(sa, wa), magnitude_bits(sb, wb)
    if op == MUL:
        if not sa and not sb and 63 < ea + eb <= 64:  # exact in uint64
            fin = _finish(64, fa + fb - fo, so, wo, rnd, ovf, unsigned=True)
            if fin is None:
                return None
            return njit(lambda ra, rb, rbits: fin(np.uint64(ra) * np.uint64(rb), rbits), **_JIT)
        if not (ea + eb <= 62 or (ea + eb == 63 and not (sa and sb))):
            return None
        fin = _finish(63, fa + fb - fo, so, wo, rnd, ovf)
        if fin is None:
            return None
        return njit(lambda ra, rb, rbits: fin(ra * rb, rbits), **_JIT)
    g = max(fa, fb)
    sha, shb = np.int64(g - fa), np.int64(g - fb)
    bound = max(ea + g - fa, eb + g - fb) + 1
    if bound > 62:
        return None
    fin = _finish(bound, g - fo, so, wo, rnd, ovf)
    if fin is None:
        return None
    if op == ADD:
        return njit(lambda ra, rb, rbits: fin((ra << sha) + (rb << shb), rbits), **_JIT)
    return njit(lambda ra, rb, rbits: fin((ra << sha) - (rb << shb), rbits), **_JIT)


def _cast64(a: tuple, out: tuple):
    """The int64 ``(ra, rbits) -> (raw, event)`` converting a word of format ``a`` into
    ``out`` (see :func:`binary`), or None."""
    sa, wa, fa = a
    ea = magnitude_bits(sa, wa)
    if ea > 62:
        return None
    fin = _finish(ea, fa - out[2], *out[:2], out[3], out[4])
    if fin is None:
        return None
    return njit(lambda ra, rbits: fin(ra, rbits), **_JIT)


def _i128_op(op: int, a: tuple, b: tuple, out: tuple):
    """The i128 form ``(ra, rb, rbits) -> (raw, event)`` of add, sub, mul or cast (``b``
    ignored), or None if the exact value or the rounding shift leaves the i128 bounds."""
    (sa, wa, fa), (sb, wb, fb) = a, b
    so, wo, fo, rnd, ovf = out
    ea, eb = magnitude_bits(sa, wa), magnitude_bits(sb, wb)
    if op == MUL:
        g, bound = fa + fb, ea + eb
    elif op == CAST:
        g, bound = fa, ea
    else:
        g = max(fa, fb)
        bound = max(ea + g - fa, eb + g - fb) + 1
    k = g - fo
    if bound > _I128_BOUND or k > _I128_BOUND or (k < 0 and bound - k > _I128_BOUND):
        return None
    lo, hi = (-(1 << (wo - 1)), (1 << (wo - 1)) - 1) if so else (0, (1 << wo) - 1)

    def codegen(context, builder, signature, args):
        i64, i128 = ir.IntType(64), ir.IntType(128)

        def c(v):
            return ir.Constant(i128, v)

        def ext(v, signed):
            return builder.sext(v, i128) if signed else builder.zext(v, i128)
        xa, xb = ext(args[0], sa), ext(args[1], sb)
        if op == MUL:
            x = builder.mul(xa, xb)
        elif op == CAST:
            x = xa
        else:
            xa, xb = builder.shl(xa, c(g - fa)), builder.shl(xb, c(g - fb))
            x = builder.add(xa, xb) if op == ADD else builder.sub(xa, xb)
        if k <= 0:
            n = builder.shl(x, c(-k))
        elif rnd == STOCHASTIC:
            rem = builder.and_(x, c((1 << k) - 1))
            top = builder.shl(rem, c(64 - k)) if k <= 64 else builder.lshr(rem, c(k - 64))
            up = builder.icmp_unsigned("<", args[2], builder.trunc(top, i64))
            n = builder.add(builder.ashr(x, c(k)), builder.zext(up, i128))
        else:
            half = 1 << (k - 1)
            neg = builder.icmp_signed("<", x, c(0))
            if rnd == FLOOR:
                bias = c(0)
            elif rnd == ZERO:
                bias = builder.select(neg, c((1 << k) - 1), c(0))
            elif rnd == HALF_UP:
                bias = c(half)
            elif rnd == HALF_AWAY:
                bias = builder.select(neg, c(half - 1), c(half))
            else:  # HALF_EVEN
                bias = builder.add(c(half - 1), builder.and_(builder.ashr(x, c(k)), c(1)))
            n = builder.ashr(builder.add(x, bias), c(k))
        if ovf == WRAP:
            if so:
                w = builder.ashr(builder.shl(n, c(128 - wo)), c(128 - wo))
            else:
                w = builder.and_(n, c(hi))
        else:
            w = builder.select(builder.icmp_signed("<", n, c(lo)), c(lo), n)
            w = builder.select(builder.icmp_signed(">", w, c(hi)), c(hi), w)
        event = builder.zext(builder.icmp_signed("!=", w, n), i64)
        return context.make_tuple(builder, signature.return_type, (builder.trunc(w, i64), event))

    @intrinsic
    def op128(typingctx, ra, rb, rbits):
        return types.UniTuple(types.int64, 2)(types.int64, types.int64, types.uint64), codegen
    return op128


def _split_mul(a: tuple, b: tuple, out: tuple):
    """The split-product form ``(ra, rb, rbits) -> (raw, event)`` of a product whose exact
    value needs more than int64: ``b = bh 2**s + bl`` (``bh = b >> s``, ``0 <= bl <
    2**s``), so ``a b = T 2**s + r0`` with ``T = a bh + (a bl >> s)`` and ``r0 = a bl mod
    2**s``, every step exact in int64 for ``s = E_a + E_b - 61`` if ``2 E_a + E_b <= 123``
    (else the operands are tried the other way round).  Rounding by ``k >= s`` bits: ``q =
    T >> (k - s)`` and the dropped bits ``rem = (T mod 2**(k - s)) 2**s + r0 < 2**k``, then
    the rule of :func:`_round_up`.  Two int64 multiplies and no 128-bit step, so loops of it
    vectorise (AVX-512 ``vpmullq``); None if neither order fits."""
    (sa, wa, fa), (sb, wb, fb) = a, b
    so, wo, fo, rnd, ovf = out
    ea, eb = magnitude_bits(sa, wa), magnitude_bits(sb, wb)
    k = fa + fb - fo
    s = max(1, ea + eb - 61)  # |a bh| <= 2**(ea + eb - s) <= 2**61, so T stays in int64
    if k > 62 or s > k:
        return None
    if ea + s > 62:  # a bl < 2**(ea + s) leaves int64: split a instead, if that fits
        if eb + s > 62:
            return None
        swapped = _split_mul(b, a, out)
        return njit(lambda ra, rb, rbits: swapped(rb, ra, rbits), **_JIT)
    us, j = np.int64(s), np.int64(k - s)
    lo_mask, j_mask = (np.int64(1) << us) - 1, (np.int64(1) << j) - 1
    up = _round_up(k, rnd)

    def product(ra, rb, rbits):
        p0 = ra * (rb & lo_mask)
        t = ra * (rb >> us) + (p0 >> us)
        q = t >> j
        rem = ((t & j_mask) << us) | (p0 & lo_mask)
        return Q.store_i64(q + up(q, rem, t < 0, rbits), so, wo, ovf)
    return njit(product, **_JIT)


def binary(op: int, a: tuple, b: tuple, out: tuple, vector: bool = False):
    """The narrow ``(ra, rb, rbits) -> (raw, event)`` of add (0), sub (1) or mul (2) for
    formats ``a``, ``b`` = (signed, word, frac) and ``out`` = (signed, word, frac, rounding,
    overflow): the int64 form where the formats allow it, else the i128 form (``vector``:
    the split or two-limb form, for loops meant to vectorise), else None (module
    docstring)."""
    fn = _binary64(op, a, b, out)
    if fn is not None:
        return fn
    if vector:
        fn = _split_mul(a, b, out) if op == MUL else None
        return fn if fn is not None else _two_limb_op(op, a, b, out)
    op128 = _i128_op(op, a, b, out)
    if op128 is None:
        return None
    return njit(lambda ra, rb, rbits: op128(np.int64(ra), np.int64(rb), rbits), **_JIT)


def cast(a: tuple, out: tuple):
    """The narrow ``(ra, rbits) -> (raw, event)`` converting a word of format ``a`` into
    ``out``: int64 form, else i128 form, else None (see :func:`binary`)."""
    fn = _cast64(a, out)
    if fn is not None:
        return fn
    op128 = _i128_op(CAST, a, (True, 1, 0), out)
    if op128 is None:
        return None
    return njit(lambda ra, rbits: op128(np.int64(ra), np.int64(0), rbits), **_JIT)


# ------------------------------------------------------------- two-limb forms --
def _limbs(v: int) -> tuple:
    """A non-negative constant below 2**128 as (hi, lo) uint64 limbs."""
    return np.uint64(v >> 64), np.uint64(v & ((1 << 64) - 1))


@njit(**_JIT)
def _add128(hi, lo, bhi, blo):
    """(hi, lo) + (bhi, blo) mod 2**128, uint64 limbs, branch-free carry."""
    s = lo + blo
    return hi + bhi + np.uint64(s < lo), s


def _shl128(s: int, signed: bool):
    """``ra -> (hi, lo)``: the word ra (signed or not) times 2**s, 0 <= s < 128, as limbs."""
    if s == 0:
        if signed:
            return njit(lambda ra: (np.uint64(ra >> 63), np.uint64(ra)), **_JIT)
        return njit(lambda ra: (np.uint64(0), np.uint64(ra)), **_JIT)
    if s < 64:
        us, rs = np.uint64(s), np.int64(64 - s)
        if signed:
            return njit(lambda ra: (np.uint64(ra >> rs), np.uint64(ra) << us), **_JIT)
        urs = np.uint64(64 - s)
        return njit(lambda ra: (np.uint64(ra) >> urs, np.uint64(ra) << us), **_JIT)
    us = np.uint64(s - 64)
    return njit(lambda ra: (np.uint64(ra) << us, np.uint64(0)), **_JIT)


def _two_limb_op(op: int, a: tuple, b: tuple, out: tuple):
    """The two-limb form ``(ra, rb, rbits) -> (raw, event)`` of add, sub or mul: the i128
    form's steps on (hi, lo) uint64 limbs with 32 x 32-bit partial products and
    compare-carries, all of which vector units have, so loops of it can vectorise.  None
    where the i128 form would be, or for a left shift (k < 0)."""
    (sa, _, fa), (sb, _, fb) = a, b
    so, wo, fo, rnd, ovf = out
    if _i128_op(op, a, b, out) is None:
        return None
    u64_out = not so and wo == 64
    if op == MUL:
        g = fa + fb

        def exact(ra, rb):
            ua, ub = np.uint64(ra), np.uint64(rb)
            lo, hi = W.mul_u64(ua, ub)
            if sa:  # two's complement product from the unsigned one of the bit patterns
                hi -= ub & np.uint64(ra >> 63)
            if sb:
                hi -= ua & np.uint64(rb >> 63)
            return hi, lo
    else:
        g = max(fa, fb)
        sha, shb = _shl128(g - fa, sa), _shl128(g - fb, sb)

        def exact(ra, rb):
            ah, al = sha(ra)
            bh, bl = shb(rb)
            if op == SUB:
                bh, bl = _add128(~bh, ~bl, np.uint64(0), np.uint64(1))
            return _add128(ah, al, bh, bl)
    exact = njit(exact, **_JIT)
    k = g - fo
    if k < 0:
        return None
    u0, u1 = np.uint64(0), np.uint64(1)
    half = 1 << (k - 1) if k else 0
    half_h, half_l = _limbs(half)
    hm1_h, hm1_l = _limbs(max(half - 1, 0))
    mask_h, mask_l = _limbs((1 << k) - 1)
    bit_in_lo, bit_shift = k < 64, np.uint64(k % 64)
    sk, sk_c = np.uint64(k % 64), np.uint64((64 - k) % 64)
    sk_h = np.int64(k - 64) if k >= 64 else np.int64(0)
    i_min, i_max = np.int64(-2**63), np.int64(2**63 - 1)

    def impl(ra, rb, rbits):
        hi, lo = exact(ra, rb)
        up = u0
        if k > 0:
            if rnd == STOCHASTIC:  # the top 64 bits of the dropped fraction against rbits
                if k < 64:
                    t64 = lo << sk_c
                elif k == 64:
                    t64 = lo
                else:
                    t64 = (hi << np.uint64(128 - k)) | (lo >> np.uint64(k - 64))
                up = np.uint64(rbits < t64)
            elif rnd == ZERO:
                negm = np.uint64(np.int64(hi) >> 63)  # all ones if negative
                hi, lo = _add128(hi, lo, mask_h & negm, mask_l & negm)
            elif rnd == HALF_UP:
                hi, lo = _add128(hi, lo, half_h, half_l)
            elif rnd == HALF_AWAY:
                pos = np.uint64(np.int64(hi) >= 0)
                hi, lo = _add128(hi, lo, hm1_h, hm1_l)
                hi, lo = _add128(hi, lo, u0, pos)
            elif rnd == HALF_EVEN:
                bit = ((lo if bit_in_lo else hi) >> bit_shift) & u1
                hi, lo = _add128(hi, lo, hm1_h, hm1_l)
                hi, lo = _add128(hi, lo, u0, bit)
        if k == 0:
            n_lo, n_hi = lo, np.int64(hi)
        elif k < 64:
            n_lo = (lo >> sk) | (hi << sk_c)
            n_hi = np.int64(hi) >> np.int64(k)
        else:
            n_lo = np.uint64(np.int64(hi) >> sk_h)
            n_hi = np.int64(hi) >> np.int64(63)
        n_hi += np.int64(n_lo + up < n_lo)  # the stochastic increment's carry
        n = np.int64(n_lo + up)
        if u64_out:  # an unsigned 64-bit word holds n iff the high limb is 0
            fits = n_hi == 0
            if ovf != WRAP:
                n = n if fits else (np.int64(0) if n_hi < 0 else np.int64(-1))
            return n, np.int64(not fits)
        fits = n_hi == (n >> np.int64(63))
        if ovf != WRAP:
            n = n if fits else (i_min if n_hi < 0 else i_max)
        r, ev = Q.store_i64(n, so, wo, ovf)
        return r, ev | np.int64(not fits)
    return njit(impl, **_JIT)
