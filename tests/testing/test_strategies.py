"""The public hypothesis strategies (fixedqmc.testing.strategies) draw what they say: values
inside a fixed format's range, precision specs the policy parser accepts, kernel inputs
inside their declared ranges, walker positions of a system; and the module names the missing
optional dependency when hypothesis is not installed."""

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

import fixedqmc.testing.strategies as public
from fixedqmc.errors import FormatError
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.kernel_spec import KernelSpec, Variable
from fixedqmc.numerics.modes import ROUNDING_MODES
from fixedqmc.numerics.policy import parse_precision
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.systems.helium.cluster import HeliumCluster, TableSettings
from fixedqmc.testing.strategies import (
    fixed_range,
    kernel_arrays,
    precision_specs,
    precisions,
    qformats,
    qformats_scaled,
    values_in,
    walker_positions,
)

FAST = settings(max_examples=40)

# a kernel with the awkward ranges: tiny, one-sided, a single point, wide, [0, 1)
SPEC = KernelSpec("toy", (
    Variable("tiny", -2.0**-40, 2.0**-40), Variable("positive", 0.5, 3.0),
    Variable("negative", -7.0, -1e-3), Variable("point", 1.25, 1.25),
    Variable("wide", -1e6, 1e6), Variable("unit", 0.0, float(np.nextafter(1.0, 0.0)))))
KERNELS = {"potential": KernelSpec("potential", (Variable("r", 0.0, 30.0),
                                                 Variable("v", -20.0, 1e4))),
           "wavefunction": ("u", "sum"), "kinetic": ()}


def _exact_range(fmt):
    scale = 1 << fmt.frac_bits
    return Fraction(fmt.min_raw, scale), Fraction(fmt.max_raw, scale)


# --------------------------------------------------------------------------- values_in --
@FAST
@given(st.data())
def test_values_in_lie_in_the_format_range_and_convert_without_overflow(data):
    fmt = data.draw(st.one_of(qformats(), qformats_scaled()), label="fmt")
    xs = data.draw(st.lists(values_in(fmt), min_size=1, max_size=8), label="values")
    lo, hi = _exact_range(fmt)
    scale = 1 << fmt.frac_bits
    rounding = data.draw(st.sampled_from(ROUNDING_MODES), label="rounding")
    words = Fixed.from_float(np.array(xs), fmt, rounding, "raise").to_ints()  # no overflow
    for x, word in zip(xs, words):
        assert isinstance(x, float) and math.isfinite(x)
        assert lo <= Fraction(x) <= hi
        # rounded down or up, the word is one of the format's
        down, up = math.floor(Fraction(x) * scale), math.ceil(Fraction(x) * scale)
        assert fmt.min_raw <= down <= up <= fmt.max_raw and word in (down, up)


@pytest.mark.parametrize("fmt", ["UQ0.64", "Q63.0", "UQ-10.26", "Q1.36", "UQ-63.64"])
def test_fixed_range_is_the_exact_range_in_float64(fmt):
    fmt = QFormat.parse(fmt)
    lo, hi = fixed_range(fmt)
    exact_lo, exact_hi = _exact_range(fmt)
    assert exact_lo <= Fraction(lo) and Fraction(hi) <= exact_hi
    assert Fraction(math.nextafter(lo, -math.inf)) < exact_lo  # the nearest floats inside
    assert Fraction(math.nextafter(hi, math.inf)) > exact_hi
    if fmt == QFormat(False, 0, 64):  # fmt.max rounds up to 1.0, outside the format
        assert fmt.max == 1.0 and hi == math.nextafter(1.0, 0.0)


def test_values_in_reach_both_ends_of_a_wide_format():
    fmt = QFormat(True, 40, 23)
    lo, hi = fixed_range(fmt)
    assert find(values_in(fmt), lambda x: x == hi) == hi
    assert find(values_in(fmt), lambda x: x == lo) == lo


# ---------------------------------------------------------------------- precision_specs --
def _policy_precisions(policy):
    return [policy.default, *policy.kernels.values(), *policy.variables.values()]


@FAST
@given(precisions())
def test_precisions_parse_as_a_default(text):
    p = parse_precision(text).default
    kind, *rest = text.split(":")
    assert p.kind == (kind if kind in ("fixed", "float32", "float64") else "float")
    if kind == "fixed":
        assert (p.fmt is None) == rest[0].isdigit()
        assert (p.rounding, p.overflow) == tuple(rest[1:] + ["half_even", "saturate"][
            len(rest) - 1:])


@FAST
@given(precision_specs())
def test_precision_specs_without_kernels_set_the_default(spec):
    policy = parse_precision(spec)
    assert not policy.kernels and not policy.variables
    assert parse_precision(str(policy)) == policy


@FAST
@given(precision_specs(KERNELS))
def test_precision_specs_for_kernels_parse_and_resolve(spec):
    policy = parse_precision(spec)
    known = {k: (v.names if isinstance(v, KernelSpec) else v) for k, v in KERNELS.items()}
    policy.check_kernels(known)  # names only kernels and variables that exist
    assert parse_precision(str(policy)) == policy
    try:
        KERNELS["potential"].resolve(policy)
    except FormatError:  # a word width too narrow for a declared range, nothing else
        assert any(p.word_bits is not None for p in _policy_precisions(policy))


@FAST
@given(precision_specs(["potential", "kinetic"], floats=False, roundings=["floor"],
                       overflows=["wrap"]))
def test_precision_specs_keep_to_the_given_modes(spec):
    policy = parse_precision(spec)
    assert set(policy.kernels) <= {"potential", "kinetic"}
    for p in _policy_precisions(policy):
        assert (p.kind, p.rounding, p.overflow) == ("fixed", "floor", "wrap")


@pytest.mark.parametrize("kernels", [["default"], ["a.b"], {"k": ("1x",)}])
def test_precision_specs_refuse_names_a_spec_cannot_hold(kernels):
    with pytest.raises(ValueError, match="cannot be a kernel or variable name"):
        find(precision_specs(kernels), lambda s: True)


# ------------------------------------------------------------------------ kernel_arrays --
@FAST
@given(st.data())
def test_kernel_arrays_lie_in_the_declared_ranges(data):
    n = data.draw(st.integers(0, 6), label="n")
    arrays = data.draw(kernel_arrays(SPEC, n), label="arrays")
    assert tuple(arrays) == SPEC.names
    for v in SPEC.variables:
        x = arrays[v.name]
        assert x.dtype == np.float64 and x.shape == (n,)
        assert np.all(np.isfinite(x)) and np.all((x >= v.lo) & (x <= v.hi)), v.name


@FAST
@given(kernel_arrays(SPEC, st.integers(1, 4), names=["wide", "unit"],
                     ranges={"wide": (-3.0, 2.0, 3.0, 1e-9)}))
def test_kernel_arrays_take_names_and_profiled_ranges(arrays):
    assert set(arrays) == {"wide", "unit"}
    assert len(arrays["wide"]) == len(arrays["unit"])
    assert np.all((arrays["wide"] >= -3.0) & (arrays["wide"] <= 2.0))


def test_kernel_arrays_refuse_unknown_names_and_bad_ranges():
    with pytest.raises(ValueError, match="no variable"):
        find(kernel_arrays(SPEC, 2, names=["nope"]), lambda a: True)
    with pytest.raises(ValueError, match="must be finite"):
        find(kernel_arrays(SPEC, 2, ranges={"wide": (1.0, -1.0)}), lambda a: True)


# --------------------------------------------------------------------- walker_positions --
@pytest.fixture(scope="module")
def helium():
    """A small float64 helium cluster (the protocol tests' one): only its
    initial_positions and wrap are used."""
    return HeliumCluster(4, sources={"potential": "analytic", "wavefunction": "analytic",
                                     "kinetic": "analytic"}, tables=TableSettings(r_max=30.0))


def test_walker_positions_of_a_helium_cluster(helium):
    @FAST
    @given(walker_positions(helium, st.integers(1, 5), max_displacement=0.1))
    def check(pos):
        assert pos.dtype == np.float64 and pos.shape[1:] == (4, 3)
        assert 1 <= pos.shape[0] <= 5 and np.all(np.isfinite(pos))
        np.testing.assert_allclose(pos.mean(axis=1), 0.0, atol=1e-12)  # wrap: centred
        d = np.linalg.norm(pos[:, :, None] - pos[:, None], axis=-1)[:, *np.triu_indices(4, 1)]
        assert d.min() > 2.0  # a compact cluster, no two atoms on top of each other
        assert d.max() < 15.0

    check()


class Lattice:
    """The least of a system for walker_positions: atoms on fixed sites (whatever the
    generator), wrap into a box of side 10."""

    n_particles = 3
    sites = np.array([[1.0, 1.0, 1.0], [5.0, 5.0, 5.0], [9.95, 0.02, 5.0]])

    def initial_positions(self, n, rng):
        assert isinstance(rng, np.random.Generator)
        return np.repeat(self.sites[None], n, axis=0)

    @staticmethod
    def wrap(positions):
        return np.mod(positions, 10.0)


@FAST
@given(walker_positions(Lattice(), 3, max_displacement=0.05, wrap=False))
def test_walker_positions_move_by_at_most_the_displacement(pos):
    assert pos.shape == (3, 3, 3)
    assert np.max(np.abs(pos - Lattice.sites)) <= 0.05


@FAST
@given(walker_positions(Lattice(), 2, max_displacement=0.05))
def test_walker_positions_are_wrapped(pos):
    assert np.all((pos >= 0.0) & (pos < 10.0))


def test_walker_positions_check_the_shape_of_initial_positions():
    class Wrong(Lattice):
        n_particles = 4

    with pytest.raises(AssertionError, match=r"returned shape \(2, 3, 3\), expected \(2, 4, 3\)"):
        find(walker_positions(Wrong(), 2), lambda p: True)


# ------------------------------------------------------------------------ the module --
def test_tests_use_the_public_strategies():
    import strategies  # tests/strategies.py, what the project's tests import

    for name in public.__all__:
        assert getattr(strategies, name) is getattr(public, name), name


def test_without_hypothesis_the_import_error_says_what_to_install():
    code = ("import sys\n"
            "sys.modules['hypothesis'] = None  # as if hypothesis were not installed\n"
            "from fixedqmc.testing import check_system  # needs no hypothesis\n"
            "try:\n"
            "    import fixedqmc.testing.strategies\n"
            "except ImportError as exc:\n"
            "    print('ImportError:', exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("ImportError: fixedqmc.testing.strategies needs hypothesis")
    assert "pip install hypothesis" in out and "fixedqmc[test]" in out
