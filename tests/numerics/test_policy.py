"""Precision spec grammar and resolution of formats per kernel variable."""

import pytest

from fixedqmc import PrecisionSpecError, QFormat, parse_precision
from fixedqmc.numerics.kernel import KernelSpec, Variable
from fixedqmc.numerics.policy import format_for_range

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
