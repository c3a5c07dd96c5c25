"""Narrow (int64 or int128, branch-free) operations are bit-identical to the general exact ones.

The general operations of :mod:`fixedqmc.numerics.quantize` are checked against the exact
reference on Python integers in ``test_fixed_exact.py``; here the narrow forms are checked
against them on the same operands, for every format combination the narrow forms accept.
"""

import numpy as np
import pytest
from numba import njit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fixedqmc.numerics import narrow
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics import wideint as W
from fixedqmc.numerics.modes import overflow_code, rounding_code
from strategies import overflow_modes, qformats, raw_words, rounding_modes

GENERAL = {narrow.ADD: Q.add_raw, narrow.SUB: Q.sub_raw, narrow.MUL: Q.mul_raw}


def _spec(f):
    return (f.signed, f.word_bits, f.frac_bits)


def _word(v):
    """A raw word as the kernels hold it: an unsigned 64-bit word by its bit pattern."""
    return np.uint64(v % 2**64).view(np.int64)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(op=st.sampled_from(sorted(GENERAL)), fa=qformats(), fb=qformats(),
       fo=qformats(max_word=64), rnd=rounding_modes, ovf=st.sampled_from(["wrap", "saturate"]),
       data=st.data(), rbits=st.integers(0, 2**64 - 1))
def test_narrow_binary_equals_the_general_operation(op, fa, fb, fo, rnd, ovf, data, rbits):
    out = (fo.signed, fo.word_bits, fo.frac_bits, rounding_code(rnd), overflow_code(ovf))
    fn = narrow.binary(op, _spec(fa), _spec(fb), out)
    assume(fn is not None)
    ra, rb = data.draw(raw_words(fa)), data.draw(raw_words(fb))
    rb64 = np.uint64(rbits)
    got = fn(_word(ra), _word(rb), rb64)
    want = GENERAL[op](_word(ra), fa.signed, fa.frac_bits, _word(rb), fb.signed,
                       fb.frac_bits, *out[:3], out[3], out[4], rb64)
    assert (int(got[0]), bool(got[1])) == (int(want[0]), bool(want[1]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(op=st.sampled_from(sorted(GENERAL)), fa=qformats(min_word=30), fb=qformats(min_word=30),
       fo=qformats(), rnd=rounding_modes, ovf=st.sampled_from(["wrap", "saturate"]),
       data=st.data(), rbits=st.integers(0, 2**64 - 1))
@pytest.mark.heavy
def test_two_limb_forms_equal_the_general_operation(op, fa, fb, fo, rnd, ovf, data, rbits):
    """The (hi, lo) uint64 forms that vectorising kernels use instead of i128."""
    out = (fo.signed, fo.word_bits, fo.frac_bits, rounding_code(rnd), overflow_code(ovf))
    fn = narrow._two_limb_op(op, _spec(fa), _spec(fb), out)
    assume(fn is not None)
    for _ in range(20):
        ra, rb = data.draw(raw_words(fa)), data.draw(raw_words(fb))
        got = fn(_word(ra), _word(rb), np.uint64(rbits))
        want = GENERAL[op](_word(ra), fa.signed, fa.frac_bits, _word(rb), fb.signed,
                           fb.frac_bits, *out[:3], out[3], out[4], np.uint64(rbits))
        assert (int(got[0]), bool(got[1])) == (int(want[0]), bool(want[1]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(fa=qformats(min_word=30, max_word=62), fb=qformats(min_word=30, max_word=62),
       fo=qformats(), rnd=rounding_modes, ovf=st.sampled_from(["wrap", "saturate"]),
       data=st.data(), rbits=st.integers(0, 2**64 - 1))
def test_split_products_equal_the_general_product(fa, fb, fo, rnd, ovf, data, rbits):
    """The int64 split-product form that vectorising kernels use for products of words
    too wide for one int64 product (e.g. two 40-bit words)."""
    out = (fo.signed, fo.word_bits, fo.frac_bits, rounding_code(rnd), overflow_code(ovf))
    fn = narrow._split_mul(_spec(fa), _spec(fb), out)
    assume(fn is not None)
    for _ in range(20):
        ra, rb = data.draw(raw_words(fa)), data.draw(raw_words(fb))
        got = fn(_word(ra), _word(rb), np.uint64(rbits))
        want = Q.mul_raw(_word(ra), fa.signed, fa.frac_bits, _word(rb), fb.signed,
                         fb.frac_bits, *out[:3], out[3], out[4], np.uint64(rbits))
        assert (int(got[0]), bool(got[1])) == (int(want[0]), bool(want[1]))


def test_split_products_cover_40_bit_words():
    """Two 40-bit words rounded into a 40-bit word take the split form, a wide and a narrow
    word too (the wide one split), two 63-bit ones cannot (their halves leave int64)."""
    assert narrow._split_mul((True, 40, 39), (False, 40, 39), (True, 40, 40, 4, 1)) is not None
    assert narrow._split_mul((True, 62, 40), (True, 30, 29), (True, 40, 30, 4, 1)) is not None
    assert narrow._split_mul((True, 63, 40), (True, 63, 40), (True, 40, 40, 4, 1)) is None
    assert narrow.binary(narrow.MUL, (True, 40, 39), (True, 40, 39), (True, 40, 40, 4, 1),
                         vector=True) is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(fa=qformats(), fo=qformats(), rnd=rounding_modes, ovf=overflow_modes,
       data=st.data(), rbits=st.integers(0, 2**64 - 1))
def test_narrow_cast_equals_the_general_cast(fa, fo, rnd, ovf, data, rbits):
    out = (fo.signed, fo.word_bits, fo.frac_bits, rounding_code(rnd), overflow_code(ovf))
    fn = narrow.cast(_spec(fa), out)
    assume(fn is not None)
    ra = data.draw(raw_words(fa))
    got = fn(_word(ra), np.uint64(rbits))
    want = Q.cast_raw(_word(ra), fa.signed, fa.frac_bits, *out[:3], out[3], out[4],
                      np.uint64(rbits))
    assert (int(got[0]), bool(got[1])) == (int(want[0]), bool(want[1]))


def test_int64_forms_cover_32_bit_words_and_i128_forms_the_rest():
    s32, u32, s33 = (True, 32, 20), (False, 32, 32), (True, 33, 20)
    out = (True, 32, 20, 4, 1)
    assert narrow._binary64(narrow.MUL, s32, s32, out) is not None
    assert narrow._binary64(narrow.MUL, u32, s32, out) is not None  # (2**32-1) 2**31 < 2**63
    assert narrow._binary64(narrow.MUL, u32, u32, out) is not None  # exact in uint64, k >= 1
    assert narrow._binary64(narrow.MUL, s32, s33, out) is None  # (-2**31)(-2**32) = 2**63
    assert narrow._binary64(narrow.ADD, (True, 63, 0), (True, 2, 0), out) is None
    assert narrow._cast64((False, 64, 0), out) is None
    # the i128 forms: every product of two 63-bit words, sums of 64-bit words
    assert narrow._i128_op(narrow.MUL, (True, 64, 10), (True, 64, 10), out) is not None
    assert narrow._i128_op(narrow.ADD, (False, 64, 64), (False, 64, 0), out) is None  # 2**129
    assert narrow._i128_op(narrow.MUL, (False, 64, 0), (False, 64, 0), out) is None  # 2**128
    assert narrow.cast((False, 64, 0), out) is not None


@njit
def _wide_store(n, signed, word, ovf):
    return Q.store(W.from_i64(n), signed, word, ovf)


@settings(max_examples=300, deadline=None)
@given(n=st.one_of(st.integers(-2**63, 2**63 - 1), st.integers(-2**40, 2**40)),
       fo=qformats(), ovf=overflow_modes)
def test_branch_free_store_equals_the_wide_store(n, fo, ovf):
    got = Q.store_i64(np.int64(n), fo.signed, fo.word_bits, overflow_code(ovf))
    want = _wide_store(np.int64(n), fo.signed, fo.word_bits, overflow_code(ovf))
    assert (int(got[0]), bool(got[1])) == (int(want[0]), bool(want[1]))
