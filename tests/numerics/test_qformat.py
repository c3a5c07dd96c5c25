"""Q-format parsing, printing and bad input."""

import pytest
from hypothesis import given

from fixedqmc import FormatError, QFormat
from strategies import qformats


def test_seed_format_q1_36_is_a_38_bit_word():
    f = QFormat.parse("Q1.36")
    assert (f.signed, f.int_bits, f.frac_bits, f.word_bits) == (True, 1, 36, 38)
    assert f.resolution == 2.0**-36
    assert f.max == 2.0 - 2.0**-36 and f.min == -2.0
    assert str(f) == "Q1.36" and f.to_fxp() == "fxp-s38/36"


@pytest.mark.parametrize("text, want", [
    ("UQ8.24", QFormat(False, 8, 24)), ("fxp-s38/36", QFormat(True, 1, 36)),
    ("fxp-u32/24", QFormat(False, 8, 24)), ("Q63.0", QFormat(True, 63, 0)),
    ("UQ0.64", QFormat(False, 0, 64)), (" Q0.15 ", QFormat(True, 0, 15)),
])
def test_parse_forms(text, want):
    assert QFormat.parse(text) == want


@given(qformats())
def test_round_trip_both_notations(f):
    assert QFormat.parse(str(f)) == f
    assert QFormat.parse(f.to_fxp()) == f
    assert f.max_raw - f.min_raw == 2**f.word_bits - 1


@pytest.mark.parametrize("text, match", [
    ("Q1", "malformed format 'Q1'"), ("Q-4.3", "at least one bit"), ("Q1.64", "= 66 bits; at most 64"),
    ("UQ40.40", "80 bits"), ("UQ-10.65", "frac_bits must be >= 0 and at most 64"),
    ("fxp-s1/0", "signed word needs at least 2 bit"), ("Q1.-3", "malformed"),
    ("float", "allowed forms"), ("fxp-x8/2", "malformed"),
])
def test_bad_formats_name_the_problem(text, match):
    with pytest.raises(FormatError, match=match):
        QFormat.parse(text)


def test_bad_constructor_arguments():
    with pytest.raises(FormatError, match="at least one bit"):
        QFormat(True, -4, 3)
    with pytest.raises(FormatError, match="frac_bits must be >= 0 and at most 64"):
        QFormat(False, -1, -1)
    with pytest.raises(FormatError, match="at least one bit"):
        QFormat(False, 0, 0)
    with pytest.raises(ValueError):
        QFormat.parse(38)
