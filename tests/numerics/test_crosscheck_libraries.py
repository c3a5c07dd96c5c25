"""Bit-for-bit agreement with APyTypes and fxpmath where they implement the same mode."""

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import fixedqmc as fq
import reference as R
from strategies import qformats, raw_words

apy = __import__("pytest").importorskip("apytypes")
from fxpmath import Fxp  # noqa: E402

APY_ROUNDING = {"floor": apy.QuantizationMode.TO_NEG, "zero": apy.QuantizationMode.TO_ZERO,
                "half_up": apy.QuantizationMode.TIES_POS,
                "half_away": apy.QuantizationMode.TIES_AWAY,
                "half_even": apy.QuantizationMode.TIES_EVEN}
APY_OVERFLOW = {"wrap": apy.OverflowMode.WRAP, "saturate": apy.OverflowMode.SAT}
FXP_ROUNDING = {"floor": "floor", "zero": "fix", "half_even": "around"}


def to_apy(words, fmt):
    # APyTypes words are signed; an unsigned UQi.f value fits the signed word with i+1 bits
    return apy.APyFixedArray(list(words), int_bits=fmt.int_bits + 1, frac_bits=fmt.frac_bits)


def apy_words(x, fmt):
    bits = [int(b) for b in np.asarray(x.to_bits(), dtype=object).ravel()]
    w = fmt.word_bits
    return [b - (1 << w) if b >> (w - 1) else b for b in bits]


def assert_matches_peer(ours, theirs, exact_values, fo, rnd, ovf, scale_bits):
    """Element by element equality with a peer library's words.

    APyTypes 0.5.1 and fxpmath 0.4.10 both saturate wrongly when the exact intermediate, at
    the finest scale involved (``scale_bits`` fractional bits: the operands' or the
    output's), needs 63 bits or more: they wrap in 64 bits (including a rounding carry)
    before saturating, so e.g. a large positive overflow comes out as the minimum; with
    ``wrap`` the same 64-bit intermediate can wrap where the output word would not (APyTypes:
    0.5 in Q0.63 cast to Q1.0 with half_away gives -1, not 1).  Those elements are checked
    against the exact reference instead (pinned by a test below).
    """
    for mine, peer, v in zip(ours, theirs, exact_values):
        if abs(v) * 2**scale_bits >= 2**62:
            assert mine == R.quantize(v, fo, rnd, ovf)[0]
        else:
            assert mine == peer


@st.composite
def operands(draw):
    fa, fb = draw(qformats()), draw(qformats())
    n = draw(st.integers(1, 6))
    return (fa, draw(st.lists(raw_words(fa), min_size=n, max_size=n)),
            fb, draw(st.lists(raw_words(fb), min_size=n, max_size=n)))


@settings(max_examples=300)
@given(ops=operands(), fo=qformats(signed=True), op=st.sampled_from(["add", "sub", "mul", "cast"]),
       rnd=st.sampled_from(sorted(APY_ROUNDING)), ovf=st.sampled_from(sorted(APY_OVERFLOW)))
def test_matches_apytypes(ops, fo, op, rnd, ovf):
    fa, wa, fb, wb = ops
    a = fq.Fixed.from_raw(np.array(wa, dtype=object), fa)
    b = fq.Fixed.from_raw(np.array(wb, dtype=object), fb)
    A, B = to_apy(wa, fa), to_apy(wb, fb)
    exact = {"add": lambda: A + B, "sub": lambda: A - B, "mul": lambda: A * B,
             "cast": lambda: A}[op]()
    want = exact.cast(int_bits=fo.int_bits + 1, frac_bits=fo.frac_bits,
                      quantization=APY_ROUNDING[rnd], overflow=APY_OVERFLOW[ovf])
    got = {"add": fq.add, "sub": fq.sub, "mul": fq.mul}[op](a, b, fo, rnd, ovf) \
        if op != "cast" else fq.cast(a, fo, rnd, ovf)
    exact = {"add": lambda p, q: p + q, "sub": lambda p, q: p - q, "mul": lambda p, q: p * q,
             "cast": lambda p, q: p}[op]
    values = [exact(R.value(x, fa), R.value(y, fb)) for x, y in zip(wa, wb)]
    g = {"add": max(fa.frac_bits, fb.frac_bits), "sub": max(fa.frac_bits, fb.frac_bits),
         "mul": fa.frac_bits + fb.frac_bits, "cast": fa.frac_bits}[op]
    assert_matches_peer(got.to_ints(), apy_words(want, fo), values, fo, rnd, ovf,
                        max(g, fo.frac_bits))


def test_large_positive_overflow_saturates_to_the_maximum():
    """The case excluded above: 16384 saturated into Q0.49 is the maximum, not -1."""
    big = fq.Fixed.from_raw([16384], "UQ15.0")
    assert fq.cast(big, "Q0.49", "floor", "saturate").to_ints() == [2**49 - 1]
    assert fq.cast(fq.neg(big, "Q15.0"), "Q0.49", "floor", "saturate").to_ints() == [-(2**49)]


def fxp(fmt, val, rnd, ovf):
    return Fxp(val, signed=fmt.signed, n_word=fmt.word_bits, n_frac=fmt.frac_bits,
               rounding=FXP_ROUNDING[rnd], overflow=ovf)


@settings(max_examples=150)
@given(xs=st.lists(st.floats(-100, 100), min_size=1, max_size=8),
       fo=qformats(max_word=32, min_word=2), rnd=st.sampled_from(sorted(FXP_ROUNDING)),
       ovf=st.sampled_from(["saturate", "wrap"]))
def test_from_float_matches_fxpmath(xs, fo, rnd, ovf):
    got = fq.Fixed.from_float(np.array(xs), fo, rnd, ovf)
    want = fxp(fo, np.array(xs), rnd, ovf)
    assert_matches_peer(got.to_ints(), [int(v) for v in np.asarray(want.val).ravel()],
                        [Fraction(x) for x in xs], fo, rnd, ovf, fo.frac_bits)


@settings(max_examples=150)
@given(data=st.data(), fa=qformats(max_word=24, min_word=2), fo=qformats(max_word=32, min_word=2),
       rnd=st.sampled_from(sorted(FXP_ROUNDING)))
def test_mul_matches_fxpmath(data, fa, fo, rnd):
    xs = [w * 2.0**-fa.frac_bits for w in data.draw(st.lists(raw_words(fa), min_size=1, max_size=6))]
    a = fq.Fixed.from_float(np.array(xs), fa)
    got = fq.mul(a, a, fo, rnd, "saturate")
    A = fxp(fa, np.array(xs), rnd, "saturate")
    z = fxp(fo, None, rnd, "saturate")
    z.equal(A * A)
    assert_matches_peer(got.to_ints(), [int(v) for v in np.asarray(z.val).ravel()],
                        [Fraction(x) ** 2 for x in xs], fo, rnd, "saturate",
                        max(2 * fa.frac_bits, fo.frac_bits))
