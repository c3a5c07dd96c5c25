"""Precision spec grammar and resolution of formats per kernel variable."""

import math

import pytest

from fixedqmc import PrecisionSpecError, QFormat, parse_precision
from fixedqmc.errors import FixedQMCError, FloatRangeWarning
from fixedqmc.numerics.float_format import NAMED_FORMATS, FloatFormat
from fixedqmc.numerics.kernel import KernelSpec, Variable
from fixedqmc.numerics.policy import (
    float_format_for_range,
    format_for_range,
    parse_precision_item,
)

SPEC = KernelSpec("potential", (Variable("s", 0.0, 100.0), Variable("v", -12.0, 300.0),
                                Variable("w", -0.5, 0.5)))


def test_plain_and_fixed_specs():
    assert parse_precision("float64").default.kind == "float64"
    assert parse_precision("float32").default.kind == "float32"
    p = parse_precision("fixed:Q1.36").default
    assert p.fmt == QFormat(True, 1, 36) and p.rounding == "half_even" and p.overflow == "saturate"
    assert parse_precision("fixed:fxp-s38/36").default.fmt == QFormat(True, 1, 36)
    p = parse_precision("fixed:38:floor:wrap").default
    assert (p.word_bits, p.rounding, p.overflow) == (38, "floor", "wrap")


def test_per_kernel_and_per_variable_overrides():
    pol = parse_precision("default=float64, potential=fixed:32, wavefunction=float32,"
                          "potential.s=fixed:UQ7.25")
    assert pol.for_kernel("kinetic").kind == "float64"
    assert pol.for_kernel("wavefunction").kind == "float32"
    assert pol.for_kernel("potential").word_bits == 32
    kp = SPEC.resolve(pol)
    assert kp.format_of("s") == QFormat(False, 7, 25)
    assert kp.format_of("v") == QFormat(True, 9, 22)  # |v| <= 300 < 2**9, 32-bit word
    assert kp.format_of("w") == QFormat(True, 0, 31)
    assert parse_precision(str(pol)) == pol  # canonical form parses back


def test_width_spec_uses_profiled_ranges_when_given():
    kp = SPEC.resolve("fixed:24", ranges={"v": (-11.0, 15.0)})
    assert kp.format_of("v") == QFormat(True, 4, 19)
    assert SPEC.resolve("float32").kind == "float32"


@pytest.mark.parametrize("spec, match", [
    ("", "non-empty"), ("float8", "unknown precision 'float8'"),
    ("fixed:65", "word width 65.*1..64"), ("fixed:Q1.70", "at most 64"),
    ("fixed:32:nearest", "unknown rounding mode 'nearest'"),
    ("fixed:32:floor:clip", "unknown overflow mode 'clip'"),
    ("float64,float32", "sets the default twice"), ("pot-ential=float32", "bad target"),
    ("potential.s=float32,potential.s=fixed:8", "sets variable potential.s twice"),
    ("float64,,", "empty item"),
])
def test_bad_specs_name_the_problem(spec, match):
    with pytest.raises(PrecisionSpecError if "mode" not in match else ValueError, match=match):
        parse_precision(spec)


def test_unknown_kernel_or_variable_is_refused():
    pol = parse_precision("jastrow=fixed:32")
    with pytest.raises(PrecisionSpecError, match="kernel 'jastrow'; this system has: potential"):
        pol.check_kernels({"potential": SPEC.names})
    pol = parse_precision("potential.q=fixed:Q3.4")
    with pytest.raises(PrecisionSpecError, match="potential.q; kernel 'potential' has: s, v, w"):
        pol.check_kernels({"potential": SPEC.names})


def test_range_too_wide_for_word():
    with pytest.raises(ValueError, match="needs 10 integer/sign bits, more than the 8-bit word"):
        format_for_range(-300.0, 300.0, 8, "v")


# ------------------------------------------------------------ float:m<M> (sized E) --
@pytest.mark.parametrize("spec", [
    "float:m7", "float:m10:toward_zero", "float:m1:stochastic:nosubnormals,saturate",
    "float:m3:nearest_even:saturate,fn", "float:m52:odd",
    ("default=float64,potential=float:m5:nearest_away:saturate,potential.v=float:m9,"
     "kinetic=bfloat16:nosubnormals,saturate"),
])
def test_mantissa_only_specs_round_trip(spec):
    pol = parse_precision(spec)
    assert pol.sized_floats()  # needs a range profile
    assert parse_precision(str(pol)) == pol
    for p in [pol.default, *pol.kernels.values(), *pol.variables.values()]:
        assert parse_precision_item(str(p)) == p


def test_mantissa_only_spec_fields():
    p = parse_precision_item("float:m6:toward_pos:nosubnormals,saturate")
    assert p.sized_float and (p.kind, p.fmt, p.man_bits) == ("float", None, 6)
    assert (p.rounding, p.overflow, p.subnormals, p.fn) == ("toward_pos", "saturate", False,
                                                            False)
    assert str(p) == "float:m6:toward_pos:nosubnormals,saturate"
    assert p.float_format(5) == FloatFormat(5, 6, False, "saturate", False, "toward_pos")
    assert not parse_precision_item("float:e5m6").sized_float
    assert parse_precision("bfloat16,potential=fixed:20").sized_floats() == {}


@pytest.mark.parametrize("spec, match", [
    ("float:m0", r"M=0 in 'float:m0' out of range; allowed: 1\.\.52"),
    ("float:m53", r"M=53 .*allowed: 1\.\.52"),
    ("float:mx", r"bad mantissa width 'mx'.*M in 1\.\.52"),
    ("float:m", r"bad mantissa width 'm'.*1\.\.52"),
    ("float:m-3", r"bad mantissa width 'm-3'"),
    ("float:m7:sideways", "unknown rounding or option 'sideways'"),
    ("potential=float:m7:nearest_even:toward_zero:saturate", "too many ':' parts"),
])
def test_bad_mantissa_only_specs_name_the_problem(spec, match):
    with pytest.raises(PrecisionSpecError, match=match):
        parse_precision(spec)


M7 = parse_precision_item("float:m7")


@pytest.mark.parametrize("e", range(2, 12))
def test_sizing_picks_the_smallest_exponent_at_the_boundaries(e):
    """A largest magnitude exactly at E's largest finite value, or a smallest one exactly at
    its smallest normal, needs E bits; a hair beyond needs E + 1 (or, at E = 11, is named)."""
    f = FloatFormat(e, 7)
    assert float_format_for_range(f.max_finite, 1.0, M7) == (f, "")
    assert float_format_for_range(1.0, f.min_normal, M7) == (f, "")
    assert float_format_for_range(f.max_finite, f.min_normal, M7) == (f, "")
    up = float_format_for_range(math.nextafter(f.max_finite, math.inf), 1.0, M7)
    down = float_format_for_range(1.0, math.nextafter(f.min_normal, 0.0), M7)
    if e < 11:
        assert up == down == (FloatFormat(e + 1, 7), "")
    else:
        assert up == (f, "overflow") and down == (f, "subnormal")


def test_sizing_of_fn_formats_and_of_zero_variables():
    """fn formats (no infinity: E4M3FN's largest is 448, not 240) stop at E = 10; a
    variable that is always zero (no nonzero magnitude: inf) takes the fewest bits."""
    fn = parse_precision_item("float:m3:saturate,fn")
    assert float_format_for_range(448.0, 0.5, fn)[0] == NAMED_FORMATS["fp8e4m3"]
    assert float_format_for_range(449.0, 0.5, fn)[0].exp_bits == 5
    assert float_format_for_range(1e300, 0.5, fn) == (fn.float_format(10), "overflow")
    assert float_format_for_range(0.0, math.inf, M7) == (FloatFormat(2, 7), "")
    with pytest.raises(FixedQMCError, match="smallest nonzero magnitude 0.0"):
        float_format_for_range(1.0, 0.0, M7, "k.v")
    with pytest.raises(FixedQMCError, match="k.v: largest magnitude nan"):
        float_format_for_range(math.nan, 1.0, M7, "k.v")


def test_mantissa_only_specs_are_sized_per_variable_from_a_profile():
    ranges = {"s": (0.0, 99.0, 0.5), "v": (-65280.0, 3.0, 2.0**-14), "w": (-0.5, 0.25, 1e-30)}
    kp = SPEC.resolve("potential=float:m7,potential.w=float:m3:toward_zero", ranges)
    assert kp.format_of("s") == FloatFormat(4, 7)  # 99 <= 255, 0.5 >= 2**-6
    assert kp.format_of("v") == FloatFormat(5, 7)  # 65280 is e5m7's largest, 2**-14 its tiniest normal
    assert kp.format_of("w") == FloatFormat(8, 3, rounding="toward_zero")  # 1e-30 >= 2**-126
    assert kp.roundings == ("nearest_even", "nearest_even", "toward_zero")
    # a variable the profile never saw is sized by its declared range (largest magnitude)
    kp = SPEC.resolve("float:m7", {"s": (0.0, 99.0, 0.5), "v": (-3.0, 3.0, 1.0)})
    assert kp.format_of("w") == FloatFormat(2, 7)


def test_mantissa_only_spec_without_a_profile_names_the_variable():
    with pytest.raises(PrecisionSpecError, match=r"potential\.s: precision float:m7.*no range "
                                                 r"profile.*range profile is needed: fixedqmc "
                                                 r"run --profile PROFILE\.json"):
        SPEC.resolve("float:m7")
    with pytest.raises(PrecisionSpecError, match=r"potential\.v: .*\(lo, hi\) pair, without "
                                                 "the smallest nonzero magnitude"):
        SPEC.resolve("potential.v=float:m7", {"v": (-11.0, 15.0)})
    # the kernels the spec leaves alone need nothing; fixed:W still takes (lo, hi) pairs
    assert SPEC.resolve("other=float:m7").kind == "float64"
    assert SPEC.resolve("fixed:24", {"v": (-11.0, 15.0, 1e-3)}).format_of("v") == QFormat(True, 4,
                                                                                       19)


def test_variables_no_exponent_holds_get_the_widest_and_are_warned_about():
    big = 1.797e308  # above e11m10's largest, 1.7968e308
    ranges = {"s": (0.0, big, 1.0), "v": (-2.0, 2.0, 1e-310), "w": (-big, 0.0, 1e-320)}
    with pytest.warns(FloatRangeWarning) as caught:
        kp = SPEC.resolve("float:m10", ranges)
    assert len(caught) == 1
    w = caught[0].message
    assert w.variables == {"potential.s": "overflow", "potential.v": "subnormal",
                           "potential.w": "overflow, subnormal"}
    text = str(w)
    assert "potential.s (would overflow)" in text and "potential.v (would go subnormal)" in text
    assert "potential.w (would overflow and go subnormal)" in text
    assert "float_mantissa" in text
    assert all(f == FloatFormat(11, 10) for f in kp.formats)
