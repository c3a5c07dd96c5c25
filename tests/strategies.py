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
