"""Measured error of two-region tables against the a-priori bound (HAQMC seed 002, Sec. 3)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fixedqmc.numerics.qformat import QFormat
from fixedqmc.tables.error_bounds import (
    SAFETY,
    bin_errors,
    error_report,
    error_vs_bins,
    third_derivative_bound,
    within_bound,
)
from fixedqmc.tables.two_region import (
    COEF_NAMES,
    LossyTableWarning,
    TableError,
    build_table,
    quantize_table,
)

from .test_two_region import LJ_RANGE, lj

LJ_FORMAT = "Q1.30"  # a 32-bit signed word


@pytest.fixture(scope="module")
def lj_table():
    return build_table(lj, *LJ_RANGE, "zero")


# ---------------------------------------------------------------- deterministic ------
@pytest.mark.parametrize("fmt", [None, LJ_FORMAT, "Q1.20"])
def test_lj_report_within_bound(lj_table, fmt):
    table = lj_table if fmt is None else quantize_table(lj_table, fmt)
    report = error_report(table, lj)
    assert list(report.index) == ["I", "II"] and report["within_bound"].all()
    assert (report["bins"] == [256, 1344]).all()
    assert (report["max_abs_err"] <= report["bound_f"]).all()
    assert (report["worst_ratio"] > 0.5).all()  # the bound is not vacuous
    expect_quant = 0.0 if fmt is None else 1.5 * QFormat.parse(fmt).resolution
    assert (report["quant_g"] == expect_quant).all()
    assert report.loc["I", "bound_f"] == pytest.approx(report.loc["I", "bound_g"] * table.scale[0],
                                                       rel=1e-6)


def test_bound_is_tight_for_a_cubic():
    """f = r**6 = s**3 is a cubic in u in every region I bin: the minimax error equals
    max|d3g/du3| / 192, so measured / bound reaches 1 / SAFETY."""
    table = build_table(lambda r: r**6, 1.0, 4.0, 2.0, n1=8, n_seg=2, n_bin=2)
    bins = bin_errors(table, lambda r: r**6, n_samples=257)
    first = bins[bins.region == "I"]
    np.testing.assert_allclose(first.err_g / first.interp_g, 1 / SAFETY, rtol=2e-3)


def test_third_derivative_estimate():
    u = np.linspace(0, 1, 65)
    g = np.stack([u**3, np.exp(4 * u), np.exp(-4 * u)])
    est = third_derivative_bound(g, np.zeros(3))
    exact = np.array([6.0, 64 * np.exp(4.0), 64.0])
    assert (est >= exact).all() and (est <= SAFETY * exact * 1.01).all()


def test_exp_region_bound_in_f_units():
    table = build_table(lj, *LJ_RANGE, "zero", transform=("none", "exp"), coef_format=LJ_FORMAT)
    report = error_report(table, lj)
    assert report["within_bound"].all() and report.loc["II", "transform"] == "exp"
    assert report.loc["II", "max_abs_err"] < 1e-7


def test_relative_error_ignores_points_near_zero(lj_table):
    report = error_report(lj_table, lj)
    loose = error_report(lj_table, lj, rel_floor=0.0)
    assert loose.loc["I", "max_rel_err"] >= report.loc["I", "max_rel_err"]
    assert report.loc["II", "max_rel_err"] < 1e-5


def test_error_falls_as_bins_cubed():
    sweep = error_vs_bins(lj, *LJ_RANGE, "zero", [(32, 8, 8), (64, 9, 16), (128, 10, 32)],
                          [None, LJ_FORMAT, "UQ0.16"])
    assert {"n1", "n_seg", "n_bin", "coef_format", "word_bits", "region", "bins", "max_abs_err",
            "max_rel_err", "bound_f", "within_bound", "fits"} <= set(sweep.columns)
    assert len(sweep) == 3 * 3 * 2
    narrow = sweep[sweep.coef_format == "UQ0.16"]
    assert (~narrow.fits).all() and narrow.max_abs_err.isna().all()
    ok = sweep[sweep.fits]
    assert ok.within_bound.all()
    region1 = ok[(ok.region == "I") & ok.coef_format.isna()].max_abs_err.to_numpy()
    np.testing.assert_allclose(region1[:-1] / region1[1:], 8.0, rtol=0.15)
    assert (sweep[sweep.coef_format == LJ_FORMAT].word_bits == 32).all()


def test_quantization_dominates_narrow_formats(lj_table):
    report = error_report(quantize_table(lj_table, "Q1.16"), lj)
    assert (report["quant_g"] > 10 * report["interp_g"]).all() and report["within_bound"].all()
    assert report.loc["II", "max_err_g"] > 2.0**-17 / 2


def test_an_infinite_or_nan_bound_is_never_within():
    bins = pd.DataFrame({"err_g": [0.0, 0.0, 0.0, 0.0, 0.0, np.nan],
                         "bound_g": [1.0, np.inf, np.nan, 1.0, 1.0, 1.0],
                         "err_f": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                         "bound_f": [1.0, 1.0, 1.0, np.inf, np.nan, 1.0]})
    assert within_bound(bins).tolist() == [True, False, False, False, False, False]


def test_a_lossy_exp_region_is_not_within_its_infinite_bound():
    """Q1.1 on an "exp" region: 1.5 LSB * scale exceeds min F = exp(-1), so the interpolated F
    may reach 0 and the f bound is infinite -- reported as not within, not as holding."""
    with pytest.warns(LossyTableWarning):
        table = build_table(lj, *LJ_RANGE, "zero", n1=32, n_seg=6, n_bin=8,
                            transform=("none", "exp"), coef_format="Q1.1", allow_lossy=True)
    report = error_report(table, lj)
    assert np.isinf(report.loc["II", "bound_f"]) and not report.loc["II", "within_bound"]


def test_n_samples_must_be_positive(lj_table):
    with pytest.raises(TableError, match="n_samples"):
        bin_errors(lj_table, lj, n_samples=0)


# ------------------------------------------------------------------ hypothesis setup --
def _term(kind: str, p: float, q: float):
    """One smooth term of r: exp(-k r), r**-n, or a gaussian."""
    if kind == "exp":
        k = 0.1 + 2.9 * p
        return lambda r: np.exp(-k * r)
    if kind == "pow":
        n = 1 + int(11 * p)
        return lambda r: r ** -float(n)
    mu, width = 0.5 + 4 * p, 0.3 + 1.7 * q
    return lambda r: np.exp(-((r - mu) / width) ** 2 / 2)


@st.composite
def smooth_functions(draw):
    """A random smooth f(r) on a random range [r_min, r_max] with r_min >= 0.6, scaled so that
    max |f| over the range is in [0.1, 5] (so the "exp" transform stays finite)."""
    unit = st.floats(0.0, 1.0)
    terms = draw(st.lists(st.tuples(st.sampled_from(["exp", "pow", "gauss"]), unit, unit,
                                    st.floats(-2.0, 2.0)), min_size=1, max_size=4))
    r_min = draw(st.floats(0.6, 2.0))
    r_max = r_min + draw(st.floats(0.5, 8.0))
    parts = [(_term(kind, p, q), c) for kind, p, q, c in terms]

    def raw(r):
        return sum(c * t(r) for t, c in parts)

    peak = np.abs(raw(np.linspace(r_min, r_max, 2001))).max()
    assume(peak > 1e-3)
    amplitude = draw(st.floats(0.1, 5.0)) / peak

    def func(r):
        return amplitude * raw(r)

    return func, r_min**2, r_max**2


def fitting_format(table, frac_bits: int) -> QFormat:
    """A signed format with frac_bits that holds every coefficient of the table."""
    top = max(float(np.abs(getattr(table, k)).max()) for k in COEF_NAMES)
    return QFormat(True, int(np.floor(np.log2(top))) + 2 if top >= 1 else 1, frac_bits)


@given(case=smooth_functions(), sigma_at=st.floats(0.05, 0.95),
       n1=st.sampled_from([4, 16, 64, 256]), n_seg=st.integers(1, 21),
       n_bin=st.sampled_from([1, 4, 16, 64]),
       transform=st.sampled_from([("none", "none"), ("none", "exp"), ("exp", "exp")]),
       frac_bits=st.one_of(st.none(), st.integers(12, 56)))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_measured_error_within_bound(case, sigma_at, n1, n_seg, n_bin, transform, frac_bits):
    func, s_min, s_max = case
    table = build_table(func, s_min, s_max, s_min + sigma_at * (s_max - s_min), n1=n1,
                        n_seg=n_seg, n_bin=n_bin, transform=transform)
    if frac_bits is not None:
        table = quantize_table(table, fitting_format(table, frac_bits))
    bins = bin_errors(table, func, n_samples=8)
    ok = within_bound(bins)
    infinite = np.isinf(bins.bound_f)  # an "exp" bin whose F error can reach F: bounds nothing
    assert (ok | infinite).all(), bins.loc[~ok & ~infinite]
    assert not ok[infinite].any() and (bins.err_g <= bins.bound_g).all()
