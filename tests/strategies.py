"""Shared hypothesis strategies for fixed-point tests, and random inputs shared by tests."""

from hypothesis import strategies as st

from fixedqmc.numerics.modes import OVERFLOW_MODES, ROUNDING_MODES
from fixedqmc.numerics.qformat import QFormat

rounding_modes = st.sampled_from(ROUNDING_MODES)
deterministic_rounding = st.sampled_from([m for m in ROUNDING_MODES if m != "stochastic"])
overflow_modes = st.sampled_from([m for m in OVERFLOW_MODES if m != "raise"])


@st.composite
def qformats(draw, max_word=64, signed=None, min_word=1):
    """Any valid format: signed or unsigned, word 1..max_word bits, any int/frac split.

    Biased towards the edges: 64-bit words, all-integer and all-fraction formats."""
    s = draw(st.booleans()) if signed is None else signed
    lo = max(min_word, 2 if s else 1)
    word = draw(st.one_of(st.integers(lo, max_word), st.sampled_from([lo, max_word])))
    magnitude = word - int(s)
    ib = draw(st.one_of(st.integers(0, magnitude), st.sampled_from([0, magnitude])))
    return QFormat(s, ib, magnitude - ib)


@st.composite
def raw_words(draw, fmt: QFormat):
    """A raw word of fmt as a Python int, biased to min, max, 0, +-1 and the tie patterns."""
    edges = [fmt.min_raw, fmt.max_raw, 0, min(1, fmt.max_raw), max(-1, fmt.min_raw)]
    return draw(st.one_of(st.integers(fmt.min_raw, fmt.max_raw), st.sampled_from(edges)))


@st.composite
def fixed_operands(draw, n_min=1, n_max=8, **fmt_kwargs):
    """(format, list of raw words) for one operand array."""
    fmt = draw(qformats(**fmt_kwargs))
    words = draw(st.lists(raw_words(fmt), min_size=n_min, max_size=n_max))
    return fmt, words


@st.composite
def qformats_scaled(draw, max_word=64, signed=None):
    """Any valid format including negative integer bits (frac above the word's magnitude
    bits, e.g. UQ-10.26): word 1..max_word bits, frac 0..64, biased to the edges."""
    s = draw(st.booleans()) if signed is None else signed
    lo = 2 if s else 1
    word = draw(st.one_of(st.integers(lo, max_word), st.sampled_from([lo, max_word])))
    frac = draw(st.one_of(st.integers(0, 64), st.sampled_from([0, word - int(s), 64])))
    return QFormat(s, word - int(s) - frac, frac)


def random_charges(rng, n, neutral):
    """``n`` point charges, an (n,) array drawn from -2, -1, 1, 3 by the numpy Generator
    ``rng``; the last one adjusted so that they sum to zero if ``neutral``, else so that
    their total is not zero."""
    q = rng.choice([-2.0, -1.0, 1.0, 3.0], size=n)
    if neutral:
        q[-1] -= q.sum()
    elif q.sum() == 0:
        q[-1] += 1.0
    return q


@st.composite
def damaged_bytes(draw, blob: bytes, max_flips: int = 3):
    """``blob`` truncated at a drawn length (the whole of it included) with up to
    ``max_flips`` bytes of what is left XOR-ed with nonzero masks: a file cut short by a
    crash or altered on disk."""
    cut = draw(st.integers(0, len(blob)), label="cut")
    flips = draw(st.lists(st.tuples(st.integers(0, max(len(blob) - 1, 0)),
                                    st.integers(1, 255)), max_size=max_flips), label="flips")
    damaged = bytearray(blob[:cut])
    for i, mask in flips:
        if i < cut:
            damaged[i] ^= mask
    return bytes(damaged)


# ------------------------------------------------ floating-point formats (float_format) --
@st.composite
def float_formats(draw, fn=None):
    """Any valid FloatFormat: E 2..11, M 1..52 (biased to the ends and the named formats'
    widths), subnormals on/off, overflow inf/saturate, the fn flavour (E <= 10) sometimes."""
    from fixedqmc.numerics.float_format import FloatFormat

    e = draw(st.one_of(st.integers(2, 11), st.sampled_from([2, 4, 5, 8, 11])), label="E")
    m = draw(st.one_of(st.integers(1, 52), st.sampled_from([1, 2, 3, 7, 10, 23, 52])),
             label="M")
    use_fn = (draw(st.booleans(), label="fn") if fn is None else fn) and e <= 10
    return FloatFormat(e, m, subnormals=draw(st.booleans(), label="subnormals"),
                       overflow=draw(st.sampled_from(["inf", "saturate"]), label="overflow"),
                       fn=use_fn)


def _to_float(v):
    """float of a Fraction, overflowing to inf (float() would raise)."""
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


@st.composite
def float_format_values(draw, fmt):
    """A float64 input for a cast into ``fmt``, biased to the format's grid: exact values,
    ties and near-ties (1/2 +- 2**-k of an ulp), the subnormal range and its boundary with
    the normals, the overflow boundary (max, max + ulp/2, 2**(emax+1)), signed zeros and
    specials; else any float64."""
    from fractions import Fraction

    kind = draw(st.sampled_from(["grid", "grid", "grid", "any", "special"]), label="kind")
    if kind == "any":
        return draw(st.floats(allow_nan=True, allow_infinity=True, width=64))
    if kind == "special":
        return draw(st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), float("nan"),
                                     5e-324, -5e-324, fmt.max_finite, -fmt.min_subnormal]))
    mb = fmt.man_bits
    et = draw(st.one_of(st.integers(fmt.emin - 3, fmt.emax + 1),
                        st.sampled_from([fmt.emin - 1, fmt.emin, fmt.emax, fmt.emax + 1])),
              label="exponent")
    top = (1 << (mb + 1)) - 1
    n = draw(st.one_of(st.integers(0, top),
                       st.sampled_from([0, 1, 2, (1 << mb) - 1, 1 << mb, top - 1, top])),
             label="significand")
    k = draw(st.integers(1, 70), label="k")
    d = draw(st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(1, 4), Fraction(3, 4),
                              Fraction(1, 2) - Fraction(1, 2**k),
                              Fraction(1, 2) + Fraction(1, 2**k), Fraction(1, 2**k),
                              1 - Fraction(1, 2**k)]), label="offset")
    v = _to_float((n + d) * Fraction(2) ** (et - mb))
    return -v if draw(st.booleans(), label="negative") else v


@st.composite
def float_op_operands(draw, fmt):
    """(a, b) float64 operands for an arithmetic operation rounded into ``fmt``: each
    biased to ``fmt``'s grid and ties (:func:`float_format_values`), and the pair biased
    to cancellation (``b ~ -a``, ``b = -a``, ``b = a``), to a tiny second operand (sticky
    bits far below ``a``'s), and to zeros of either sign."""
    import math

    a = draw(float_format_values(fmt), label="a")
    rel = draw(st.sampled_from(["free", "free", "near", "same", "neg", "tiny", "zero"]),
               label="relation")
    if rel == "free" or not math.isfinite(a):
        b = draw(float_format_values(fmt), label="b")
    elif rel == "near":
        k = draw(st.integers(-3, 3), label="ulps")
        b = -a
        for _ in range(abs(k)):
            b = math.nextafter(b, math.inf if k > 0 else -math.inf)
    elif rel == "same":
        b = a
    elif rel == "neg":
        b = -a
    elif rel == "tiny":
        e = draw(st.integers(1, 200), label="gap")
        b = math.ldexp(draw(st.floats(0.5, 1.0, exclude_max=True)), math.frexp(a)[1] - e)
        b = -b if draw(st.booleans(), label="negative") else b
    else:
        b = draw(st.sampled_from([0.0, -0.0]), label="zero")
    if draw(st.booleans(), label="swap"):
        a, b = b, a
    return a, b
