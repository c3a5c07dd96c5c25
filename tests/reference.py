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


# ------------------------------------------------ kernel operations (kernel_ops) --
from math import isqrt  # noqa: E402


def limit(fmt: QFormat, positive: bool):
    """(raw, True): the format's max (positive) or min, as division by zero gives."""
    return quantize(Fraction(1 << 200) * (1 if positive else -1), fmt, "floor", "saturate")[0], True


def sticky(n: int, inexact: bool, scale_bits: int = 64) -> Fraction:
    """An irrational-or-exact value known as its floor n 2**-scale_bits plus, if inexact, a
    positive amount below 2**-scale_bits: represented by adding a quarter unit, which keeps
    the floor, the top bits of the fraction and tie decisions of every rounding mode."""
    return Fraction(n, 1 << scale_bits) + (Fraction(1, 1 << (scale_bits + 2)) if inexact else 0)


def div(x: Fraction, y: Fraction, fmt, rounding, overflow, rbits=0):
    if y == 0:
        return limit(fmt, x >= 0)
    return quantize(x / y, fmt, rounding, overflow, rbits)


def sqrt(x: Fraction, fmt, rounding, overflow, rbits=0):
    """sqrt(x) rounded once: floor(sqrt(x) 2**(F + 64)) by an integer square root."""
    if x < 0:
        return 0, True
    m = x * (1 << (2 * fmt.frac_bits + 128))
    n = isqrt(m.numerator // m.denominator)
    v = sticky(n, n * n != m) * Fraction(1, 1 << fmt.frac_bits)
    return quantize(v, fmt, rounding, overflow, rbits)


def rsqrt(x: Fraction, fmt, rounding, overflow, rbits=0):
    if x < 0:
        return 0, True
    if x == 0:
        return limit(fmt, True)
    m = Fraction(1 << (2 * fmt.frac_bits + 128)) / x
    n = isqrt(m.numerator // m.denominator)
    v = sticky(n, n * n != m) * Fraction(1, 1 << fmt.frac_bits)
    return quantize(v, fmt, rounding, overflow, rbits)


def to_int(x: Fraction, mode: str, fmt, rounding, overflow, rbits=0):
    """x rounded to an integer with ``mode``, then stored (exact if it fits)."""
    return quantize(Fraction(round_to_int(x, mode, rbits)), fmt, rounding, overflow, rbits)


def _nearest_even(x: Fraction) -> int:
    return round_to_int(x, "half_even")


def lut_exp(x: Fraction, tables, log2e: int, ln2: int, fmt, rounding, overflow, rbits=0):
    """The kernel exponential's data path (fixedqmc.numerics.transcendental) on Python
    integers: y = x L exact (L = log2e 2**-63), y_i = floor(y), the fraction truncated to 64
    bits, three table entries (UQ1.62) multiplied with rounding to nearest even, the
    correction 1 + r ln2, then p 2**y_i rounded once into fmt."""
    y = x * Fraction(log2e, 1 << 63)
    yi = floor(y)
    f = floor((y - yi) * (1 << 64))
    yi = max(min(yi, 3000), -3000)  # (the compiled path clamps at 400: the same results)
    t0, t1, t2 = tables
    p = t0[f >> 52]
    for t in (t1[(f >> 41) & 0x7FF], t2[(f >> 30) & 0x7FF]):
        p = _nearest_even(Fraction(p * t, 1 << 62))
    c = (1 << 62) + _nearest_even(Fraction((f & 0x3FFFFFFF) * ln2, 1 << 66))
    p = _nearest_even(Fraction(p * c, 1 << 62))
    return quantize(Fraction(p, 1 << 62) * Fraction(2) ** yi, fmt, rounding, overflow, rbits)


def cos_turn64(t: int, sin_table, two_pi_60: int, fmt, rounding, overflow, rbits=0):
    """The kernel cosine of the 64-bit turn t (fixedqmc.numerics.transcendental) on Python
    integers: quarter-wave table entry, sin d and cos d by their polynomials (products
    rounded half up at 2**-62), the angle-addition sum exact, rounded once into fmt."""
    t &= MASK64
    m = lambda a, b: (a * b + (1 << 61)) >> 62  # noqa: E731
    dr = lambda a, k: (a + k // 2) // k  # noqa: E731
    one = 1 << 62
    q, r = t >> 62, t & ((1 << 62) - 1)
    j = r >> 52
    d = m(r & ((1 << 52) - 1), two_pi_60)
    d2 = m(d, d)
    sin_d = m(d, one - dr(m(d2, one - dr(d2, 20)), 6))
    cos_d = one - dr(m(d2, one - dr(d2, 12)), 2)
    s, c = sin_table[j], sin_table[1024 - j]
    v = c * cos_d - s * sin_d if q in (0, 2) else s * cos_d + c * sin_d
    if q in (1, 2):
        v = -v
    return quantize(Fraction(v, 1 << 124), fmt, rounding, overflow, rbits)


def turn_of(x: Fraction) -> int:
    """x mod 1 as a 64-bit turn (exact for at most 64 fractional bits)."""
    return floor((x - floor(x)) * (1 << 64))


def radians_turn(x: Fraction, inv_2pi: int) -> int:
    """floor(x I 2**64) mod 2**64 with I = inv_2pi 2**-66 (the radian forms' turn)."""
    return floor(x * Fraction(inv_2pi, 1 << 66) * (1 << 64)) & MASK64


class KernelOracle:
    """One compiled kernel's fixed-point arithmetic on Fractions at its resolved formats
    (``kp`` a fixed :class:`~fixedqmc.numerics.kernel.KernelPrecision`): every value is
    rounded once into its variable with that variable's rounding (stochastic bits from
    (seed, element ``p``, variable id)) and overflow mode; overflow events are counted by
    ``kernel.variable`` as the kernels count them.  Set ``p`` to the element index."""

    def __init__(self, kp, seed):
        self.name = kp.spec.name
        self.vid = {v: i for i, v in enumerate(kp.spec.names)}
        self.mode = {v: (kp.format_of(v), kp.roundings[i], kp.overflows[i])
                     for v, i in self.vid.items()}
        self.seed, self.p, self.events = seed, 0, {}

    def _bits(self, v):
        stochastic = self.mode[v][1] == "stochastic"
        return random_bits(self.seed, self.p, self.vid[v]) if stochastic else 0

    def _count(self, v, over):
        if over:
            key = f"{self.name}.{v}"
            self.events[key] = self.events.get(key, 0) + 1

    def r(self, x, v):
        """x rounded once into v (a const, a convert, an operation's result)."""
        fmt, rnd, ovf = self.mode[v]
        raw, over = quantize(Fraction(x), fmt, rnd, ovf, self._bits(v))
        self._count(v, over)
        return value(raw, fmt)

    def acc(self, terms, v):
        """An accumulator: each term rounded into v, added exactly, overflow-handled once."""
        return self.r(sum((self.r(t, v) for t in terms), Fraction(0)), v)
