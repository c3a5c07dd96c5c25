"""Exact exponential tables and constants: ``2**(j 2**-c)`` rounded to nearest integers at
any number of fractional bits, and log2(e), ln(2), with certified rounding.

The words of the lookup-table exponential (seed 001, Appendix B: ``exp(x) = 2**y_i prod_k
T_k[j_k] (1 + r ln2)``): :mod:`fixedqmc.numerics.transcendental` compiles them into the
kernels' ``exp``, and :class:`fixedqmc.tables.lut_exp.LutExp` builds its configurable
tables from them.  Everything is computed with Python integers and ``decimal`` at a
precision that decides every rounding (never with floats).
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

__all__ = ["const_raw", "exp2_round", "exp2_table_raw"]


def round_nearest(num: int, shift: int) -> int:
    """round(num / 2**shift), ties up (callers only use it on intervals excluding ties)."""
    if shift <= 0:
        return num << -shift
    return (num + (1 << (shift - 1))) >> shift


def digits(bits: int) -> int:
    """Decimal digits that carry ``bits`` bits with a dozen to spare."""
    return int(bits * 0.30103) + 12


def exp2_decimal(q: Fraction, bits: int) -> Decimal:
    """2**q to a relative accuracy far below 2**-bits (Decimal exp/ln are correctly rounded)."""
    with localcontext() as ctx:
        ctx.prec = digits(bits + 16)
        return ((Decimal(q.numerator) / Decimal(q.denominator)) * Decimal(2).ln()).exp()


def exp2_round(j: int, cum_bits: int, frac_bits: int) -> int:
    """round_to_nearest(2**(j 2**-cum_bits) * 2**frac_bits), decided on a certified interval."""
    if j == 0:
        return 1 << frac_bits
    bits = frac_bits + 64
    while True:
        d = exp2_decimal(Fraction(j, 1 << cum_bits), bits)
        with localcontext() as ctx:
            ctx.prec = digits(bits + 16)
            mid = int(d * (Decimal(2) ** bits))
        lo = round_nearest(mid - 4, bits - frac_bits)
        hi = round_nearest(mid + 4, bits - frac_bits)
        if lo == hi:
            return lo
        bits *= 2  # 2**q is irrational for 0 < q < 1: more digits always decide


@lru_cache(maxsize=None)
def exp2_table_raw(cum_bits: int, bits: int, frac_bits: int) -> tuple:
    """Nearest integers to ``2**(j 2**-cum_bits) * 2**frac_bits`` for ``j < 2**bits``.

    Exact: a lower and an upper bound of each value are carried with ``P``-bit integers
    (``T[j] = T[j-1] * T[1]`` rounded down and up); where the two bounds round differently
    (in practice never) the entry is recomputed with :func:`exp2_round`.
    """
    n = 1 << bits
    P = frac_bits + bits + 64
    with localcontext() as ctx:
        ctx.prec = digits(P + 16)
        mid = int(exp2_decimal(Fraction(1, 1 << cum_bits), P) * (Decimal(2) ** P))
    blo, bhi = mid - 2, mid + 2
    lo = hi = 1 << P
    sh = P - frac_bits
    out = [1 << frac_bits] * n
    for j in range(1, n):
        lo = (lo * blo) >> P
        hi = -((-hi * bhi) >> P)
        a, b = round_nearest(lo, sh), round_nearest(hi, sh)
        out[j] = a if a == b else exp2_round(j, cum_bits, frac_bits)
    return tuple(out)


@lru_cache(maxsize=None)
def const_raw(name: str, frac_bits: int) -> int:
    """Nearest integer to ``c * 2**frac_bits`` for c = log2(e) or ln(2)."""
    with localcontext() as ctx:
        ctx.prec = digits(frac_bits + 64)
        ln2 = Decimal(2).ln()
        c = 1 / ln2 if name == "log2e" else ln2
        return int((c * (Decimal(2) ** frac_bits)).to_integral_value())
