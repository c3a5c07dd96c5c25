"""Exact reference fixed-point arithmetic on Python integers and fractions.

Independent of the compiled core: values are Fractions, rounding and overflow follow the
definitions in fixedqmc.numerics.modes literally.
"""

from fractions import Fraction
from math import floor

from fixedqmc.numerics.qformat import QFormat

MASK64 = (1 << 64) - 1


def value(raw: int, fmt: QFormat) -> Fraction:
    """Exact value of an int64-stored word (unsigned 64-bit words are bit patterns)."""
    if not fmt.signed and fmt.word_bits == 64 and raw < 0:
        raw += 1 << 64
    return Fraction(raw, 1 << fmt.frac_bits)


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def random_bits(seed: int, index: int, stream: int = 0) -> int:
    h = splitmix64((seed & MASK64) ^ splitmix64(stream))
    return splitmix64(h ^ splitmix64(index))


def round_to_int(x: Fraction, mode: str, rbits: int = 0) -> int:
    """Round an exact rational to an integer under a named mode."""
    n = floor(x)
    f = x - n
    if mode == "floor" or f == 0:
        return n
    if mode == "zero":
        return n + 1 if n < 0 else n
    if mode == "half_up":
        return n + 1 if f >= Fraction(1, 2) else n
    if mode == "half_away":
        if f != Fraction(1, 2):
            return n + 1 if f > Fraction(1, 2) else n
        return n + 1 if n >= 0 else n
    if mode == "half_even":
        if f != Fraction(1, 2):
            return n + 1 if f > Fraction(1, 2) else n
        return n + 1 if n % 2 else n
    if mode == "stochastic":
        t64 = floor(f * (1 << 64))  # the top 64 bits of the fraction
        return n + 1 if rbits < t64 else n
    raise ValueError(mode)


def quantize(x: Fraction, fmt: QFormat, rounding: str, overflow: str, rbits: int = 0):
    """(raw int64 word, overflowed) of exact value x rounded into fmt."""
    n = round_to_int(x * (1 << fmt.frac_bits), rounding, rbits)
    over = not fmt.min_raw <= n <= fmt.max_raw
    if over:
        if overflow == "wrap":
            n &= (1 << fmt.word_bits) - 1
            if fmt.signed and n >> (fmt.word_bits - 1):
                n -= 1 << fmt.word_bits
        else:  # saturate; raise reports the event
            n = fmt.min_raw if n < 0 else fmt.max_raw
    if n > (1 << 63) - 1:  # unsigned 64-bit word stored as its bit pattern
        n -= 1 << 64
    return n, over
