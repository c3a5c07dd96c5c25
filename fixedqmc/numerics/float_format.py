"""Floating-point formats of any width (E exponent bits, M mantissa bits), and the exact cast
of float64 values into them.

Layout
------
IEEE 754 binary layout, ``n_bits = 1 + E + M`` bits wide: ``sign | exponent | mantissa``
(sign in bit ``n_bits - 1``, the biased exponent in the next E bits, the stored mantissa in
the low M bits), bias ``2**(E-1) - 1``, ``emin = 1 - bias``.  Exponent field 0 holds zero and
the subnormals ``mant * 2**(emin - M)``; the all-ones exponent holds ``+-inf`` (mantissa 0)
and NaNs (mantissa != 0); other fields hold ``(1 + mant * 2**-M) * 2**(field - bias)``.

The ``fn`` flavour (OCP 8-bit FP spec v1.0, "E4M3FN"; ml_dtypes ``float8_e4m3fn``) has no
infinities: the all-ones exponent holds finite numbers except the all-ones mantissa, the only
NaN (``S.1111.111`` for E4M3), so ``emax = bias + 1`` and the largest finite magnitude is
``(2 - 2**(1-M)) * 2**(bias + 1)`` (448 for E4M3).  ``fn`` needs ``E <= 10`` (so that every
value is a float64).

Ranges: ``2 <= E <= 11``, ``1 <= M <= 52``, so every value of every format is exactly a
float64, and a cast of a float64 value is one rounding.

Rounding (of the exact float64 value ``x``, once; ``ulp`` is ``2**(max(e, emin) - M)`` where
``e = floor(log2 |x|)``, as if the exponent range were unbounded above):

============ ==============================================================================
nearest_even to nearest, ties to the even mantissa (IEEE default)
nearest_away to nearest, ties away from zero
toward_zero  truncate the magnitude
toward_pos   toward +inf
toward_neg   toward -inf
stochastic   magnitude rounded up iff ``r < t``, where ``t = floor(f * 2**64)`` for the
             dropped fraction ``f`` of an ulp (0 <= f < 1) and ``r`` 64 random bits from
             :func:`fixedqmc.numerics.quantize.random_bits` (seed, element index, variable):
             reproducible and independent of thread count; probability of rounding up is
             ``t / 2**64`` (f to 64 bits, as for the fixed-point formats)
odd          round-to-odd: truncate the magnitude, then set the lowest kept mantissa bit if
             any dropped bit was nonzero (the intermediate step of double rounding)
============ ==============================================================================

Overflow (a rounded magnitude above the largest finite one):

* ``overflow="inf"`` (IEEE): ``nearest_*`` and ``stochastic`` give ``+-inf``; ``toward_zero``
  and ``odd`` give ``+-max``; ``toward_pos`` gives ``+inf`` / ``-max``, ``toward_neg``
  ``+max`` / ``-inf``.  In an ``fn`` format, which has no infinity, NaN takes the place of
  inf (ml_dtypes' ``float8_e4m3fn`` cast, the OCP "non-saturating" conversion).
* ``overflow="saturate"``: ``+-max`` always; input infinities also become ``+-max`` (OCP
  "saturation mode", PTX ``cvt.satfinite``).  NaN stays NaN.

Special inputs: NaN -> NaN (sign kept); ``+-inf`` -> ``+-inf`` (``+-max`` if saturate; NaN in
an ``fn`` format that does not saturate); signed zeros kept, and a nonzero value that rounds
to zero keeps its sign.

Subnormals: ``subnormals=True`` keeps them (gradual underflow).  ``subnormals=False`` flushes:
an input below the smallest normal in magnitude (tiny before rounding, as x86 FTZ/DAZ)
becomes a zero of its sign; any other input rounds to a normal number or overflows, so no
result is subnormal.

Events counted by :func:`round_with_events` (each result at most once per kind):
``overflow`` (a finite input whose rounded magnitude exceeded the largest finite one),
``underflow`` (a nonzero finite input that became zero), ``subnormal`` (a nonzero subnormal
result), ``nan`` (a NaN result: NaN input, or inf/overflow in an ``fn`` format without
saturation).

:func:`decode` reads the layout as is: a subnormal pattern gives its subnormal value even in
a ``nosubnormals`` format (which never produces one).

Peers: numpy's float64 -> float16/float32 casts equal ``nearest_even`` bit for bit.
ml_dtypes (0.6) casts float64 to bfloat16 / float8_* through float32, i.e. rounds twice
(``1 + 2**-8 + 2**-40`` -> bfloat16 1.0, correctly rounded 1 + 2**-7); on float32 inputs it
equals ``nearest_even`` bit for bit, and its E4M3FN cast matches ``fp8e4m3:inf``.

Speed (2-core test machine, 10**6 float64 -> bfloat16 nearest_even, one thread): about
1.4e8 elements/s (ml_dtypes' ``astype``, vectorised and double-rounding: 2.4e9); the loop
runs in fixed chunks of :data:`CHUNK` elements over threads (results and counts do not
depend on the thread count).

Spec grammar (:func:`parse_float_format`)::

    spec     := (name | "float:e" E "m" M) [":" part] [":" part]
    part     := rounding | option ("," option)*
    rounding := nearest_even | nearest_away | toward_zero | toward_pos | toward_neg
              | stochastic | odd
    option   := subnormals | nosubnormals | inf | saturate | fn
    name     := bfloat16 (e8m7) | float16 (e5m10) | tf32 (e8m10) | fp8e4m3 (e4m3, fn,
                saturate) | fp8e5m2 (e5m2) | float32 (e8m23) | float64 (e11m52)

Examples: ``bfloat16``, ``bfloat16:toward_zero``, ``float:e6m9:stochastic:nosubnormals,
saturate``, ``fp8e4m3:inf`` (E4M3FN with overflow to NaN, as ml_dtypes casts).
``fp8e4m3`` saturates by default, as NVIDIA Hopper/Blackwell's FP8 conversions do
(``cvt...e4m3x2`` requires ``.satfinite``) and as the OCP spec recommends for E4M3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import leading_zeros

from fixedqmc.errors import PrecisionSpecError
from fixedqmc.numerics.quantize import random_bits

ROUNDINGS = ("nearest_even", "nearest_away", "toward_zero", "toward_pos", "toward_neg",
             "stochastic", "odd")
NEAREST_EVEN, NEAREST_AWAY, TOWARD_ZERO, TOWARD_POS, TOWARD_NEG, STOCHASTIC, ODD = range(7)
OPTIONS = ("subnormals", "nosubnormals", "inf", "saturate", "fn")
OVERFLOWS = ("inf", "saturate")
EVENTS = ("overflow", "underflow", "subnormal", "nan")
#: event flags of one rounding (a bit each; summed into :data:`EVENTS` counts)
EV_OVER, EV_UNDER, EV_SUB, EV_NAN = 1, 2, 4, 8

#: elements per parallel chunk (results never depend on it; event counts are exact sums)
CHUNK = 16384


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: ``exp_bits`` E (2..11), ``man_bits`` M (stored
    mantissa bits, 1..52), IEEE layout with bias ``2**(E-1) - 1`` (see the module
    docstring), and options: ``subnormals`` (kept, or flushed to signed zero), ``overflow``
    (``"inf"`` or ``"saturate"``), ``fn`` (OCP E4M3FN flavour: no infinities, only the
    all-ones pattern is NaN), and the default ``rounding`` of a cast."""

    exp_bits: int
    man_bits: int
    subnormals: bool = True
    overflow: str = "inf"
    fn: bool = False
    rounding: str = "nearest_even"

    def __post_init__(self):
        e, m = self.exp_bits, self.man_bits
        if not isinstance(e, (int, np.integer)) or not 2 <= e <= 11:
            raise PrecisionSpecError(f"exponent bits E={e!r} out of range; allowed: 2..11")
        if not isinstance(m, (int, np.integer)) or not 1 <= m <= 52:
            raise PrecisionSpecError(f"mantissa bits M={m!r} out of range; allowed: 1..52")
        if self.overflow not in OVERFLOWS:
            raise PrecisionSpecError(
                f"unknown overflow {self.overflow!r}; allowed: {', '.join(OVERFLOWS)}")
        if self.rounding not in ROUNDINGS:
            raise PrecisionSpecError(
                f"unknown rounding {self.rounding!r}; allowed: {', '.join(ROUNDINGS)}")
        if self.fn and e > 10:
            raise PrecisionSpecError(
                f"option 'fn' needs E <= 10 (its range would exceed float64), not E={e}")

    # ---------------------------------------------------------------- properties --
    @property
    def n_bits(self) -> int:
        """Width of the bit pattern: 1 + E + M."""
        return 1 + self.exp_bits + self.man_bits

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite number (bias; bias + 1 in an fn format)."""
        return self.bias + int(self.fn)

    @property
    def max_significand(self) -> int:
        """Largest integer significand (of M + 1 bits) at ``emax``."""
        return (1 << (self.man_bits + 1)) - 1 - int(self.fn)

    @property
    def max_exact(self) -> Fraction:
        """The largest finite magnitude, exactly."""
        return Fraction(self.max_significand) * Fraction(2) ** (self.emax - self.man_bits)

    @property
    def max_finite(self) -> float:
        return float(self.max_exact)

    @property
    def min_normal(self) -> float:
        return math.ldexp(1.0, self.emin)

    @property
    def min_subnormal(self) -> float:
        return math.ldexp(1.0, self.emin - self.man_bits)

    @property
    def epsilon(self) -> float:
        """Distance from 1 to the next larger number: 2**-M."""
        return math.ldexp(1.0, -self.man_bits)

    @property
    def has_inf(self) -> bool:
        return not self.fn

    @property
    def spec(self) -> str:
        """The canonical spec string (every option spelled out); parses back to self."""
        opts = ["subnormals" if self.subnormals else "nosubnormals", self.overflow]
        if self.fn:
            opts.append("fn")
        return f"float:e{self.exp_bits}m{self.man_bits}:{self.rounding}:{','.join(opts)}"

    def __str__(self):
        return self.spec


NAMED_FORMATS = {
    "bfloat16": FloatFormat(8, 7),
    "float16": FloatFormat(5, 10),
    "tf32": FloatFormat(8, 10),
    "fp8e4m3": FloatFormat(4, 3, fn=True, overflow="saturate"),
    "fp8e5m2": FloatFormat(5, 2),
    "float32": FloatFormat(8, 23),
    "float64": FloatFormat(11, 52),
}


def _parse_em(body: str, text: str):
    bad = PrecisionSpecError(
        f"bad float format {body!r} in {text!r}; expected e<E>m<M> (E 2..11, M 1..52), "
        f"e.g. 'float:e8m7', or a name: {', '.join(NAMED_FORMATS)}")
    if not body.startswith("e") or "m" not in body:
        raise bad
    e_txt, m_txt = body[1:].split("m", 1)
    if not (e_txt.isdigit() and m_txt.isdigit()):
        raise bad
    return int(e_txt), int(m_txt)


def parse_float_format(text: str) -> FloatFormat:
    """Parse a float format spec (grammar and examples in the module docstring).

    Raises :class:`fixedqmc.errors.PrecisionSpecError` naming the bad value and listing the
    allowed ones."""
    if not isinstance(text, str):
        raise PrecisionSpecError(f"float format spec must be a string, not {text!r}")
    parts = text.strip().split(":")
    if parts[0] == "float":
        if len(parts) < 2:
            raise PrecisionSpecError(f"float format {text!r} lacks e<E>m<M>, e.g. 'float:e8m7'")
        e, m = _parse_em(parts[1], text)
        fields = {"exp_bits": e, "man_bits": m}
        rest = parts[2:]
    elif parts[0] in NAMED_FORMATS:
        f = NAMED_FORMATS[parts[0]]
        fields = {"exp_bits": f.exp_bits, "man_bits": f.man_bits,
                  "subnormals": f.subnormals, "overflow": f.overflow, "fn": f.fn}
        rest = parts[1:]
    else:
        raise PrecisionSpecError(
            f"unknown float format {parts[0]!r} in {text!r}; allowed: 'float:e<E>m<M>' or "
            f"{', '.join(NAMED_FORMATS)}")
    return FloatFormat(**parse_format_parts(rest, text, fields))


def parse_format_parts(rest: list, text: str, fields: dict) -> dict:
    """``fields`` (FloatFormat keywords) updated by the ``[:rounding][:options]`` parts
    ``rest`` of a float format spec ``text`` (named in the errors); also used by the
    precision ``float:m<M>[:rounding][:options]`` (:mod:`fixedqmc.numerics.policy`)."""
    fields = dict(fields)
    if len(rest) > 2:
        raise PrecisionSpecError(
            f"too many ':' parts in {text!r}; expected format[:rounding][:options]")
    seen_rounding = seen_options = False
    for part in rest:
        if part in ROUNDINGS and not seen_rounding:
            fields["rounding"] = part
            seen_rounding = True
            continue
        if seen_options:
            raise PrecisionSpecError(
                f"unknown rounding {part!r} in {text!r}; allowed: {', '.join(ROUNDINGS)}")
        seen_options = True
        for opt in part.split(","):
            if opt == "subnormals" or opt == "nosubnormals":
                fields["subnormals"] = opt == "subnormals"
            elif opt in OVERFLOWS:
                fields["overflow"] = opt
            elif opt == "fn":
                fields["fn"] = True
            else:
                raise PrecisionSpecError(
                    f"unknown rounding or option {opt!r} in {text!r}; roundings: "
                    f"{', '.join(ROUNDINGS)}; options: {', '.join(OPTIONS)}")
    return fields


def as_float_format(fmt) -> FloatFormat:
    """A FloatFormat from a FloatFormat or a spec string."""
    return fmt if isinstance(fmt, FloatFormat) else parse_float_format(fmt)


def rounding_code(name: str) -> int:
    if name not in ROUNDINGS:
        raise PrecisionSpecError(f"unknown rounding {name!r}; allowed: {', '.join(ROUNDINGS)}")
    return ROUNDINGS.index(name)


# ------------------------------------------------------------- compiled kernels --
_U0 = np.uint64(0)
_U1 = np.uint64(1)
#: float64 bit fields: the sign, the stored mantissa, the hidden bit, +inf and a quiet NaN
SIGN_BIT = np.uint64(1 << 63)
MANTISSA_MASK = np.uint64((1 << 52) - 1)
HIDDEN_BIT = np.uint64(1 << 52)
INF_BITS = np.uint64(0x7FF << 52)
QNAN_BITS = np.uint64(0x7FF8 << 48)


@njit(nogil=True, inline="always")
def bit_length(n):
    """Number of bits of the uint64 n (0 for 0)."""
    return 64 - np.int64(leading_zeros(n))


@njit(nogil=True, inline="always")
def split_bits(b):
    """``(S, q)`` with the finite float64 of bits ``b`` equal to ``+-S 2**q``, ``S < 2**53``
    (its exponent: ``q + bit_length(S) - 1``)."""
    e = np.int64((b >> np.uint64(52)) & np.uint64(0x7FF))
    m = b & MANTISSA_MASK
    if e == 0:
        return m, np.int64(-1074)
    return m | HIDDEN_BIT, e - 1075


@njit(nogil=True, inline="always")
def target_exponent(ex, emin, subn):
    """The exponent a value of exponent ``ex`` is rounded at: its own in the normal range,
    ``emin`` below it (subnormals), or ``ex`` itself (< emin: the caller flushes it to zero)
    when the format has no subnormals."""
    return emin if ex < emin and subn else ex


@njit(nogil=True, cache=True)
def value_bits(sign, n, u):
    """float64 bits of ``sign * n * 2**u`` for ``0 < n < 2**54`` and ``u >= -1074`` where
    the value is a float64 (exact)."""
    top = u + bit_length(n) - 1
    if top < -1022:
        return sign | (n << np.uint64(u + 1074))
    sh = np.uint64(53 - bit_length(n))
    return sign | (np.uint64(top + 1023) << np.uint64(52)) | ((n << sh) & MANTISSA_MASK)


@njit(nogil=True, inline="always")
def round_significand(sign, n, t64, rest, et, u, man, emax, nmax, sat, fn, max_bits, mode,
                      seed, i, var):
    """The one rounding step of every cast and operation: the exact magnitude
    ``(n + t) 2**u`` with ``n`` the kept integer significand at the target exponent ``et``
    (``u = et - man``), ``t`` the dropped fraction whose first 64 bits are ``t64`` and
    ``rest`` whether any bit below them is set, rounded by ``mode`` (random bits of
    element ``i`` and variable ``var`` for stochastic), then overflow, underflow and
    subnormal results handled: (float64 bits of the result, event flags)."""
    inexact = t64 != _U0 or rest
    neg = sign != _U0
    up = False
    if mode == NEAREST_EVEN:
        up = (t64 >> np.uint64(63)) != _U0 and (
            (t64 << _U1) != _U0 or rest or (n & _U1) != _U0)
    elif mode == NEAREST_AWAY:
        up = (t64 >> np.uint64(63)) != _U0
    elif mode == TOWARD_POS:
        up = inexact and not neg
    elif mode == TOWARD_NEG:
        up = inexact and neg
    elif mode == STOCHASTIC:
        up = random_bits(seed, i, var) < t64
    elif mode == ODD and inexact:
        n = n | _U1
    if up:
        n = n + _U1
    if n == (_U1 << np.uint64(man + 1)):
        n = n >> _U1
        et += 1
        u += 1
    if et > emax or (et == emax and n > nmax):
        to_inf = (mode == NEAREST_EVEN or mode == NEAREST_AWAY or mode == STOCHASTIC
                  or (mode == TOWARD_POS and not neg) or (mode == TOWARD_NEG and neg))
        if sat or not to_inf:
            return sign | max_bits, EV_OVER
        if fn:
            return sign | QNAN_BITS, EV_OVER | EV_NAN
        return sign | INF_BITS, EV_OVER
    if n == _U0:
        return sign, EV_UNDER
    if n < (_U1 << np.uint64(man)):
        return value_bits(sign, n, u), EV_SUB
    return (sign | (np.uint64(et + 1023) << np.uint64(52))
            | ((n - (_U1 << np.uint64(man))) << np.uint64(52 - man))), 0


@njit(nogil=True, inline="always")
def _round_bits(b, i, man, emin, emax, nmax, subn, sat, fn, mode, max_bits, seed, var):
    """Round the float64 with bits ``b`` (element ``i``) into the format; returns (float64
    bits of the result, event flags)."""
    sign = b & SIGN_BIT
    e = np.int64((b >> np.uint64(52)) & np.uint64(0x7FF))
    m = b & MANTISSA_MASK
    if e == 0x7FF:
        if m != _U0:
            return sign | QNAN_BITS, EV_NAN
        if sat:
            return sign | max_bits, 0
        if fn:
            return sign | QNAN_BITS, EV_NAN
        return b, 0
    if e == 0 and m == _U0:
        return b, 0
    sig, q = split_bits(b)
    et = target_exponent(q + bit_length(sig) - 1, emin, subn)
    if et < emin:  # below the normal range, subnormals flushed
        return sign, EV_UNDER
    u = et - man
    shift = u - q
    rest = False
    if shift == 0:
        n = sig
        t64 = _U0
    elif shift < 64:
        n = sig >> np.uint64(shift)
        t64 = (sig & ((_U1 << np.uint64(shift)) - _U1)) << np.uint64(64 - shift)
    elif shift == 64:
        n = _U0
        t64 = sig
    elif shift < 128:
        n = _U0
        t64 = sig >> np.uint64(shift - 64)
        rest = (sig & ((_U1 << np.uint64(shift - 64)) - _U1)) != _U0
    else:
        n = _U0
        t64 = _U0
        rest = True
    return round_significand(sign, n, t64, rest, et, u, man, emax, nmax, sat, fn, max_bits,
                             mode, seed, i, var)


def format_params(fmt):
    """The tuple ``P = (man, emin, emax, nmax, subnormals, saturate, fn, max_bits)`` of a
    FloatFormat (or spec) that the compiled element functions take."""
    fmt = as_float_format(fmt)
    max_bits = np.array([fmt.max_finite], dtype=np.float64).view(np.uint64)[0]
    return (np.int64(fmt.man_bits), np.int64(fmt.emin), np.int64(fmt.emax),
            np.uint64(fmt.max_significand), bool(fmt.subnormals),
            fmt.overflow == "saturate", bool(fmt.fn), np.uint64(max_bits))


@njit(nogil=True, inline="always")
def nearest_even_normal(b, man, emin, emax, max_bits):
    """The float64 with bits ``b`` rounded to nearest even at ``man`` stored mantissa bits
    (float64 bits), and whether that is its rounding into the format: true when b's
    exponent is in [emin, emax] (a normal result: no subnormal, no underflow, b finite) and
    the rounded magnitude is at most the format's largest finite value ``max_bits``.  No
    branch on the value: the fast path of nearest-even casts, exact in every case it
    accepts (add half an ulp less one plus the kept last bit, then clear the dropped bits;
    a carry into the exponent is the correctly rounded next binade)."""
    ex = np.int64((b >> np.uint64(52)) & np.uint64(0x7FF)) - 1023
    sh = np.uint64(52 - man)
    drop = (_U1 << sh) - _U1
    r = (b + (drop >> _U1) + ((b >> sh) & drop & _U1)) & ~drop  # no last bit if sh = 0
    return r, (emin <= ex) & (ex <= emax) & ((r & ~SIGN_BIT) <= max_bits)


@njit(nogil=True, inline="always")
def cast_bits(b, _unused, P, mode, seed, i, var):
    """The cast as an element function of :func:`chunked`: the float64 with bits
    ``b`` rounded into the format ``P`` (float64 bits, events)."""
    man, emin, emax, nmax, subn, sat, fn, max_bits = P
    if mode == NEAREST_EVEN:
        r, ok = nearest_even_normal(b, man, emin, emax, max_bits)
        if ok:
            return r, 0
    return _round_bits(b, i, man, emin, emax, nmax, subn, sat, fn, mode, max_bits, seed, var)


def chunked(element):
    """A compiled array loop ``loop(xa, xb, out, P, mode, seed, var, chunk)`` doing
    ``out[i], events = element(xa[i], xb[i], P, mode, seed, i, var)`` over float64 bit
    arrays in fixed chunks of ``chunk`` elements run in parallel (so no result depends on
    the thread count); it returns the event counts over :data:`EVENTS`.  ``element`` (the
    cast, or an operation of :mod:`fixedqmc.numerics.float_ops`) is a constant of the loop,
    so it is inlined, not called through a function value."""

    @njit(nogil=True, parallel=True)
    def loop(xa, xb, out, P, mode, seed, var, chunk):
        n = xa.shape[0]
        n_chunks = (n + chunk - 1) // chunk
        counts = np.zeros((n_chunks, 4), dtype=np.int64)
        for c in prange(n_chunks):
            lo = c * chunk
            hi = min(n, lo + chunk)
            c0 = 0
            c1 = 0
            c2 = 0
            c3 = 0
            for i in range(lo, hi):
                r, ev = element(xa[i], xb[i], P, mode, seed, i, var)
                out[i] = r
                if ev != 0:
                    c0 += ev & 1
                    c1 += (ev >> 1) & 1
                    c2 += (ev >> 2) & 1
                    c3 += (ev >> 3) & 1
            counts[c, 0] = c0
            counts[c, 1] = c1
            counts[c, 2] = c2
            counts[c, 3] = c3
        return counts.sum(axis=0)
    return loop


_cast_array = chunked(cast_bits)


@njit(nogil=True, parallel=True, cache=True)
def _encode_array(rb, out, man, exp_bits, bias, emin, fn):
    """Format bit patterns of float64 values (bits rb) already in the format."""
    nb = np.uint64(1 + exp_bits + man)
    emask = np.uint64((1 << exp_bits) - 1)
    mmask = np.uint64((1 << man) - 1)
    for i in prange(rb.shape[0]):
        b = rb[i]
        s = (b >> np.uint64(63)) << (nb - _U1)
        e = np.int64((b >> np.uint64(52)) & np.uint64(0x7FF))
        m = b & MANTISSA_MASK
        if e == 0x7FF:
            if m != _U0:
                tail = mmask if fn else (_U1 << np.uint64(man - 1))
                out[i] = s | (emask << np.uint64(man)) | tail
            else:
                out[i] = s | (emask << np.uint64(man))
            continue
        if e == 0 and m == _U0:
            out[i] = s
            continue
        sig, q = split_bits(b)
        ex = q + bit_length(sig) - 1
        if ex >= emin:
            out[i] = (s | (np.uint64(ex + bias) << np.uint64(man))
                      | ((sig >> np.uint64(52 - man)) & mmask))
        else:
            out[i] = s | (sig >> np.uint64(emin - man - q))


@njit(nogil=True, parallel=True, cache=True)
def _decode_array(w, out, man, exp_bits, bias, emin, fn):
    """float64 bits of format bit patterns w."""
    nb = np.uint64(1 + exp_bits + man)
    emask = np.uint64((1 << exp_bits) - 1)
    mmask = np.uint64((1 << man) - 1)
    for i in prange(w.shape[0]):
        b = w[i]
        sign = ((b >> (nb - _U1)) & _U1) << np.uint64(63)
        ef = (b >> np.uint64(man)) & emask
        mf = b & mmask
        if ef == emask and (not fn or mf == mmask):
            out[i] = sign | (INF_BITS if mf == _U0 else QNAN_BITS)
        elif ef == _U0:
            out[i] = sign if mf == _U0 else value_bits(sign, mf, emin - man)
        else:
            out[i] = (sign | (np.uint64(np.int64(ef) - bias + 1023) << np.uint64(52))
                      | (mf << np.uint64(52 - man)))


# ------------------------------------------------------------------ public casts --
def round_with_events(x, fmt, rounding=None, seed=0, variable=0):
    """:func:`round_to_format` and the event counts, a dict over
    ``("overflow", "underflow", "subnormal", "nan")`` (module docstring)."""
    fmt = as_float_format(fmt)
    mode = rounding_code(fmt.rounding if rounding is None else rounding)
    a = np.ascontiguousarray(x, dtype=np.float64)
    flat = a.reshape(-1)
    out = np.empty(flat.shape[0], dtype=np.uint64)
    bits = flat.view(np.uint64)
    counts = _cast_array(bits, bits, out, format_params(fmt), mode, np.uint64(seed),
                         np.uint64(variable), CHUNK)
    values = out.view(np.float64).reshape(a.shape)
    return values, {k: int(c) for k, c in zip(EVENTS, counts)}


def round_to_format(x, fmt, rounding=None, seed=0, variable=0) -> np.ndarray:
    """Round float64 values ``x`` (any shape) once into ``fmt`` (a FloatFormat or spec);
    a float64 array of the same shape whose every value is in the format.

    ``rounding`` overrides ``fmt.rounding``; ``seed`` and ``variable`` select the random
    bits of stochastic rounding, which are a hash of (seed, flat element index, variable)."""
    return round_with_events(x, fmt, rounding, seed, variable)[0]


def encode(x, fmt, rounding=None, seed=0, variable=0) -> np.ndarray:
    """Round ``x`` into ``fmt`` and return the bit patterns (uint64, low ``n_bits`` bits:
    sign | exponent | mantissa).  NaN is encoded as exponent all ones with the top mantissa
    bit set (IEEE quiet NaN; ``fn``: mantissa all ones), sign kept."""
    fmt = as_float_format(fmt)
    r = np.ascontiguousarray(round_to_format(x, fmt, rounding, seed, variable))
    out = np.empty(r.size, dtype=np.uint64)
    _encode_array(r.reshape(-1).view(np.uint64), out, fmt.man_bits, fmt.exp_bits, fmt.bias,
                  fmt.emin, fmt.fn)
    return out.reshape(r.shape)


def decode(bits, fmt) -> np.ndarray:
    """float64 values of bit patterns of ``fmt`` (only the low ``n_bits`` bits are read)."""
    fmt = as_float_format(fmt)
    w = np.ascontiguousarray(bits).astype(np.uint64)
    out = np.empty(w.size, dtype=np.uint64)
    _decode_array(w.reshape(-1), out, fmt.man_bits, fmt.exp_bits, fmt.bias, fmt.emin, fmt.fn)
    return out.view(np.float64).reshape(w.shape)


# ------------------------------------------------------------- exact reference --
def reference_round(value, fmt, rounding=None, random_bits=None):
    """The exact rounding of ``value`` (a Fraction, int or float) into ``fmt``, decided on
    Python integers and Fractions only.

    Returns a Fraction for a nonzero finite result, else a float used as a label:
    ``0.0``/``-0.0`` (the input's sign; a Fraction 0 gives +0), ``+-inf`` or ``nan``.
    ``random_bits`` (an int in [0, 2**64)) is needed for ``stochastic``."""
    fmt = as_float_format(fmt)
    mode = fmt.rounding if rounding is None else rounding
    rounding_code(mode)
    sat = fmt.overflow == "saturate"
    nan = float("nan")
    if isinstance(value, float):
        if math.isnan(value):
            return nan
        if math.isinf(value):
            if sat:
                return fmt.max_exact if value > 0 else -fmt.max_exact
            return nan if fmt.fn else value
        neg = math.copysign(1.0, value) < 0
        v = Fraction(value)
    else:
        v = Fraction(value)
        neg = v < 0
    zero = -0.0 if neg else 0.0
    a = abs(v)
    if a == 0:
        return zero
    ex = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** ex > a:
        ex -= 1
    assert Fraction(2) ** ex <= a < Fraction(2) ** (ex + 1)
    if ex < fmt.emin and not fmt.subnormals:
        return zero
    u = max(ex, fmt.emin) - fmt.man_bits
    scaled = a / Fraction(2) ** u
    n = scaled.numerator // scaled.denominator
    f = scaled - n
    half = Fraction(1, 2)
    if mode == "nearest_even":
        n += f > half or (f == half and n % 2 == 1)
    elif mode == "nearest_away":
        n += f >= half
    elif mode == "toward_pos":
        n += f != 0 and not neg
    elif mode == "toward_neg":
        n += f != 0 and neg
    elif mode == "stochastic":
        if random_bits is None:
            raise ValueError("stochastic rounding needs random_bits")
        t64 = (f * 2**64).numerator // (f * 2**64).denominator
        n += random_bits < t64
    elif mode == "odd" and f != 0:
        n |= 1
    r = n * Fraction(2) ** u
    if r > fmt.max_exact:
        to_inf = mode in ("nearest_even", "nearest_away", "stochastic") or (
            mode == "toward_pos" and not neg) or (mode == "toward_neg" and neg)
        if sat or not to_inf:
            r = fmt.max_exact
        elif fmt.fn:
            return nan
        else:
            return -math.inf if neg else math.inf
    if r == 0:
        return zero
    return -r if neg else r
