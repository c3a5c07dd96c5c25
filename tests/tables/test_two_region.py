"""Two-region quadratic tables in s = r**2: layout, sigma rules, minimax fit, evaluation,
quantization and input checks (HAQMC seed 002, Sec. 3)."""

import dataclasses
import warnings

import numpy as np
import pytest

from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.tables.two_region import (
    COEF_NAMES,
    LOSSY_FACTOR,
    LOSSY_REL,
    LossyTableError,
    LossyTableWarning,
    TableError,
    build_table,
    find_sigma,
    locate_region2,
    minimax_quadratic,
    quantization_loss,
    quantize_table,
    region1_spans,
    region2_spans,
)

LJ_RANGE = (0.64, 25.0)  # s = r**2 for r in [0.8, 5]
LJ_WELL_S = 2.0 ** (1 / 3)  # s at the minimum r = 2**(1/6)


def lj(r):
    """Lennard-Jones-like potential: zero at r = 1, well of depth 1 at r = 2**(1/6)."""
    return 4.0 * (r**-12 - r**-6)


def neg_lj(r):
    """-lj: maximum at r = 2**(1/6), like a pair wave-function factor."""
    return -lj(r)


def bin_grid_errors(g, a, b, c):
    """Max |g - (a + u(b + uc))| per row of samples g at u = j/(M-1)."""
    u = np.linspace(0, 1, g.shape[1])
    return np.abs(g - (a[:, None] + u * (b[:, None] + u * c[:, None]))).max(axis=1)


@pytest.fixture(scope="module")
def lj_table():
    return build_table(lj, *LJ_RANGE, "zero")


# ------------------------------------------------------------------------ layout ------
def test_default_layout_matches_haqmc(lj_table):
    assert (lj_table.n1, lj_table.n_seg, lj_table.n_bin, lj_table.n2) == (256, 21, 64, 1344)
    assert lj_table.a1.shape == (256,) and lj_table.c2.shape == (1344,)
    assert all(getattr(lj_table, k).dtype == np.float64 for k in COEF_NAMES)


@pytest.mark.parametrize("t, index, u", [
    (0.75, 32, 0.0),                     # segment 0: [1/2, 1), w = 0.5
    (0.3, 64 + 12, 0.8),                 # segment 1: [1/4, 1/2), w = 0.2 -> m = 12.8
    (2.0**-25, 20 * 64 + 2, 0.0),        # last segment [0, 2**-20): w = 2**-5
    (0.0, 20 * 64, 0.0),
])
def test_region2_index_by_hand(t, index, u):
    k, uu = locate_region2(1.0 + 4.0 * t, 1.0, 5.0, 21, 64)
    assert int(k) == index and float(uu) == pytest.approx(u, abs=1e-12)


def test_region2_index_is_leading_zeros_then_next_bits():
    """For t as a 32-bit fraction, segment = leading-zero count, bin = the 6 bits after the
    leading one (the fixed-point index of the data model)."""
    rng = np.random.default_rng(1)
    words = np.maximum(rng.integers(1, 2**32, 5000) >> rng.integers(0, 32, 5000), 1)
    k, _ = locate_region2(words / 2.0**32, 0.0, 1.0, 21, 64)
    for w, idx in zip(words.tolist(), k.tolist()):
        lz = 32 - w.bit_length()
        if lz < 20:
            after = (w << lz) >> (32 - 1 - 6) & 63  # 6 bits after the leading one
            assert idx == lz * 64 + after
        else:  # last segment: t < 2**-20, w = t * 2**20, bin = next 6 bits of that
            assert idx == 20 * 64 + ((w << 20) >> 26)


def test_spans_and_locate_agree(lj_table):
    s = np.random.default_rng(3).uniform(*LJ_RANGE, 20000)
    region, index, u = lj_table.locate(s)
    assert ((u >= 0) & (u < 1)).all()
    for r in (1, 2):
        s0, ds = lj_table.bin_spans(r)
        sel = region == r
        np.testing.assert_allclose(s0[index[sel]] + u[sel] * ds[index[sel]], s[sel],
                                   rtol=1e-14, atol=1e-14)


def test_spans_tile_each_region():
    s0, ds = region1_spans(0.5, 2.0, 8)
    np.testing.assert_allclose(np.r_[s0, s0[-1] + ds[-1]], np.linspace(0.5, 2.0, 9))
    s0, ds = region2_spans(2.0, 10.0, 5, 4)
    order = np.argsort(s0)
    edges = np.r_[s0[order], s0[order][-1] + ds[order][-1]]
    np.testing.assert_allclose(edges[1:-1], (s0 + ds)[order][:-1], rtol=1e-15)
    assert edges[0] == 2.0 and edges[-1] == pytest.approx(10.0, rel=1e-15)


def test_region_split_and_clamping(lj_table):
    region, _, _ = lj_table.locate([0.64, 0.9999, 1.0, 25.0])
    assert region.tolist() == [1, 1, 2, 2]
    assert lj_table.evaluate(0.01) == lj_table.evaluate(LJ_RANGE[0])
    assert lj_table.evaluate(1e3) == lj_table.evaluate(LJ_RANGE[1])
    with pytest.raises(TableError, match="finite"):
        lj_table.evaluate([1.0, np.nan])


# ------------------------------------------------------------------------- sigma ------
def test_sigma_rules():
    assert find_sigma(lj, *LJ_RANGE, "zero") == pytest.approx(1.0, rel=1e-13)
    assert find_sigma(lj, *LJ_RANGE, "sign_change") == pytest.approx(1.0, rel=1e-13)
    assert find_sigma(neg_lj, *LJ_RANGE, "max") == pytest.approx(LJ_WELL_S, rel=1e-9)


def test_sigma_given_as_number_is_kept():
    assert build_table(lj, *LJ_RANGE, 1.5, n1=4, n_seg=2, n_bin=2).sigma == 1.5


# ------------------------------------------------------------------------ the fit -----
def test_minimax_of_a_cubic_is_exact():
    """u**3 on [0, 1]: the minimax quadratic error is 1/32 = max|g'''| / 192, equioscillating."""
    u = np.linspace(0, 1, 129)
    a, b, c, err = minimax_quadratic(u[None, :] ** 3)
    assert err[0] == pytest.approx(1 / 32, rel=1e-12)
    # u**3 - p(u) = T3(2u - 1) / 32
    np.testing.assert_allclose([a[0], b[0], c[0]], [1 / 32, -9 / 16, 3 / 2], atol=1e-12)


def test_minimax_equioscillates_on_a_non_polynomial():
    u = np.linspace(0, 1, 129)
    g = np.exp(3 * u)[None, :]
    a, b, c, err = minimax_quadratic(g)
    e = g[0] - (a + u * (b + u * c))
    extrema = np.abs(e[[0, -1]]).tolist() + [np.abs(e[1:64]).max(), np.abs(e[64:-1]).max()]
    np.testing.assert_allclose(extrema, err[0], rtol=1e-3)


def test_minimax_beats_end_point_interpolation(lj_table):
    """Per bin, the minimax error is below that of the quadratic through u = 0, 1/2, 1, and
    about 1.5x smaller for smooth bins (M/192 against M/124.7 for a cubic)."""
    s0, ds = lj_table.bin_spans(1)
    u = np.linspace(0, 1, 129)
    g = lj_table.rescale(1, lj(np.sqrt(s0[:, None] + ds[:, None] * u)))
    _, _, _, minimax = minimax_quadratic(g)
    g0, gh, g1 = g[:, 0], g[:, 64], g[:, -1]
    end_point = bin_grid_errors(g, g0, -3 * g0 + 4 * gh - g1, 2 * g0 - 4 * gh + 2 * g1)
    assert (minimax <= end_point * (1 + 1e-9)).all()
    assert np.median(end_point / minimax) > 1.45


def test_table_coefficients_are_the_minimax_fit(lj_table):
    s0, ds = lj_table.bin_spans(2)
    u = np.linspace(0, 1, 129)
    g = lj_table.rescale(2, lj(np.sqrt(s0[:, None] + ds[:, None] * u)))
    _, _, _, best = minimax_quadratic(g)
    assert np.allclose(bin_grid_errors(g, lj_table.a2, lj_table.b2, lj_table.c2), best,
                       rtol=1e-6, atol=1e-15)


# --------------------------------------------------------------------- evaluation -----
def test_evaluate_accuracy_default_bins(lj_table):
    s = np.random.default_rng(4).uniform(*LJ_RANGE, 100000)
    region, _, _ = lj_table.locate(s)
    err = np.abs(lj_table.evaluate(s) - lj(np.sqrt(s)))
    assert err[region == 1].max() < 2e-6    # f spans 43 in region I
    assert err[region == 2].max() < 1e-7    # f spans 1 in region II


def test_evaluate_keeps_shape(lj_table):
    s = np.full((3, 4), 2.0)
    assert lj_table.evaluate(s).shape == (3, 4)
    assert np.ndim(lj_table.evaluate(2.0)) == 0


def test_rescaled_values_lie_in_unit_interval(lj_table):
    for r in (1, 2):
        a, b, c = lj_table.coefficients(r)
        ends = np.r_[a, a + b + c]
        assert ends.min() > -1e-7 and ends.max() < 1 + 1e-7
    assert lj_table.offset[1] == pytest.approx(-1.0, rel=1e-9)  # the well depth


def test_exp_transform_region():
    table = build_table(lj, *LJ_RANGE, "zero", transform=("none", "exp"))
    assert table.transform == ("none", "exp")
    assert table.offset[1] == pytest.approx(np.exp(-1.0), rel=1e-9)  # min exp(f) at the well
    s = np.linspace(1.0, 25.0, 5001)
    np.testing.assert_allclose(table.evaluate(s), lj(np.sqrt(s)), atol=1e-7)
    np.testing.assert_allclose(table.unscale(np.full(3, 2), table.rescale(2, [-0.5, -0.1, 0.0])),
                               [-0.5, -0.1, 0.0], atol=1e-15)


def test_constant_region_has_unit_scale():
    table = build_table(lambda r: np.where(r < 1.5, 1.0 - r, 0.0 * r), 0.25, 9.0, 2.25,
                        n1=4, n_seg=3, n_bin=4)
    assert table.scale[1] == 1.0
    np.testing.assert_array_equal(table.evaluate(np.linspace(2.25, 9.0, 50)), 0.0)


# ------------------------------------------------------------------- quantization -----
def test_quantized_table_matches_quantized_coefficients(lj_table):
    q = build_table(lj, *LJ_RANGE, "zero", coef_format="Q1.30")
    assert q.coef_format == "Q1.30" and q == quantize_table(lj_table, "Q1.30")
    for k in COEF_NAMES:
        fx = q.quantized[k]
        assert isinstance(fx, Fixed) and str(fx.fmt) == "Q1.30"
        ref = Fixed.from_float(getattr(lj_table, k), "Q1.30", rounding="half_even")
        np.testing.assert_array_equal(fx.raw, ref.raw)
        np.testing.assert_array_equal(getattr(q, k), fx.to_float())
    assert np.abs(q.evaluate(2.0) - lj_table.evaluate(2.0)) < 3 * 2.0**-31


def test_quantize_rejects_a_format_that_cannot_hold_the_coefficients(lj_table):
    with pytest.raises(TableError, match=r"coef_format UQ0\.32 cannot hold coefficient b1.*signed"):
        quantize_table(lj_table, "UQ0.32")
    with pytest.raises(TableError, match=r"coef_format Q0\.8 cannot hold coefficient a\d.*"
                                         r"rounds outside .*use at least 1 integer bits"):
        build_table(lj, *LJ_RANGE, "zero", n1=4, n_seg=2, n_bin=2, coef_format="Q0.8")
    with pytest.raises(TableError, match="already quantized"):
        quantize_table(quantize_table(lj_table, "Q1.30"), "Q1.40")


def test_a_format_that_loses_the_fit_is_refused(lj_table):
    """Q1.2 (LSB 1/4 of a region's range) leaves every b and c coefficient 0: refused with the
    measured errors and the narrowest wider format that keeps the fit, which is accepted
    while one fractional bit less is not."""
    with pytest.raises(LossyTableError, match=r"coef_format Q1\.2 loses the fit of 'lj': the "
                       r"largest measured \|error\| is [\d.]+ in region I .*coef_format=Q1\.(\d+) "
                       r"keeps it .*use at least \1 fractional bits.*allow_lossy=True") as info:
        quantize_table(lj_table, "Q1.2", func=lj)
    loss = info.value.loss
    assert loss.lossy and loss.lossy_regions == (1, 2)
    for err, fit, span, allowed in zip(loss.err_f, loss.fit_err_f, loss.range_f,
                                       loss.allowed_f):
        assert allowed == max(LOSSY_FACTOR * fit, LOSSY_REL * span) and err > allowed
    wide = QFormat.parse(loss.suggestion)
    assert (wide.signed, wide.int_bits) == (True, 1) and wide.frac_bits > 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quantize_table(lj_table, wide, func=lj).coef_format == loss.suggestion
    with pytest.raises(LossyTableError):
        quantize_table(lj_table, QFormat(True, 1, wide.frac_bits - 1), func=lj)
    with pytest.raises(LossyTableError, match=r"coef_format Q1\.2 loses the fit"):
        build_table(lj, *LJ_RANGE, "zero", n1=32, n_seg=6, n_bin=8, coef_format="Q1.2")


def test_allow_lossy_builds_the_table_with_a_warning(lj_table):
    with pytest.warns(LossyTableWarning, match=r"coef_format Q1\.2 loses the fit of 'lj' \(built "
                      r"anyway, as allowed\): the largest measured \|error\| is [\d.]+") as rec:
        q = build_table(lj, *LJ_RANGE, "zero", coef_format="Q1.2", allow_lossy=True)
    assert q.coef_format == "Q1.2" and rec[0].message.loss.lossy
    assert not any(getattr(q, k).any() for k in ("b1", "c1", "b2", "c2"))  # piecewise constant
    assert quantize_table(lj_table, "Q1.2") == q  # without the function nothing is measured


@pytest.mark.parametrize("fmt", ["Q1.30", "Q2.40", "Q1.20", "Q1.16"])
def test_formats_used_in_the_repository_keep_the_fit(lj_table, fmt):
    """Q1.16 is ~1e3 times coarser than the fit (so the factor alone would refuse it) but 2e-5
    of the range of f: it keeps the fit."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = quantize_table(lj_table, fmt, func=lj)
    loss = quantization_loss(q, lj)  # refits lj_table from lj
    assert not loss.lossy and loss.fit_err_f == quantization_loss(q, lj, fit=lj_table).fit_err_f
    if fmt == "Q1.16":
        assert all(e > LOSSY_FACTOR * f for e, f in zip(loss.err_f, loss.fit_err_f))
        assert all(e < LOSSY_REL * r for e, r in zip(loss.err_f, loss.range_f))


def test_a_poor_fit_is_not_blamed_on_the_format():
    """Two bins per region: the float fit is already off by ~2 % of the range, and Q5.2 adds
    less than LOSSY_FACTOR times that, so the format is not what loses the fit."""
    coarse = build_table(lj, *LJ_RANGE, "zero", n1=2, n_seg=2, n_bin=1)
    q = build_table(lj, *LJ_RANGE, "zero", n1=2, n_seg=2, n_bin=1, coef_format="Q5.2")
    loss = quantization_loss(q, lj, fit=coarse)
    assert loss.err_f[0] > LOSSY_REL * loss.range_f[0] and not loss.lossy


def test_quantization_loss_record_round_trip(lj_table):
    loss = quantization_loss(quantize_table(lj_table, "Q1.2"), lj, fit=lj_table)
    record = loss.to_json()
    assert record["lossy"] and record["regions"]["II"]["lossy"]
    back = type(loss).from_json("lj", record)
    assert back.lossy_regions == (1, 2) and back.err_f == loss.err_f
    assert "lose the fit: largest |error|" in back.region_reason(1)
    with pytest.raises(TableError, match="quantization record malformed"):
        type(loss).from_json("lj", {"coef_format": "Q1.2"})
    with pytest.raises(TableError, match="needs a quantized table"):
        quantization_loss(lj_table, lj)


# ---------------------------------------------------------------- the data model -----
def test_table_is_frozen_and_read_only(lj_table):
    with pytest.raises(dataclasses.FrozenInstanceError):
        lj_table.sigma = 2.0
    with pytest.raises(ValueError):
        lj_table.a1[0] = 0.0


def test_table_validates_fields(lj_table):
    with pytest.raises(TableError, match=r"coefficient b2 must have shape \(1344,\)"):
        dataclasses.replace(lj_table, b2=lj_table.b2[:-1])
    with pytest.raises(TableError, match="n_bin must be a power of two"):
        dataclasses.replace(lj_table, n_bin=48)
    with pytest.raises(TableError, match="scale must be > 0"):
        dataclasses.replace(lj_table, scale=(1.0, 0.0))
    with pytest.raises(TableError, match="needs quantized coefficients"):
        dataclasses.replace(lj_table, coef_format="Q1.30")


def test_equality_is_bitwise(lj_table):
    other = dataclasses.replace(lj_table, a1=np.nextafter(lj_table.a1, 2.0))
    assert lj_table == dataclasses.replace(lj_table) and lj_table != other


# ----------------------------------------------------------------------- bad input -----
@pytest.mark.parametrize("kwargs, match", [
    (dict(s_min=25.0, s_max=0.64), "s_min must be < s_max"),
    (dict(s_min=-1.0), "s_min = r_min"),
    (dict(s_max=np.inf), "s_max must be finite"),
    (dict(sigma=30.0), "sigma must lie strictly inside"),
    (dict(sigma=0.64), "sigma must lie strictly inside"),
    (dict(sigma="root"), "sigma must be a number .* or one of"),
    (dict(n1=100), "n1 must be a power of two"),
    (dict(n_bin=0), "n_bin must be a power of two"),
    (dict(n_seg=0), "n_seg must be an integer in 1..64"),
    (dict(n_seg=2.0), "n_seg must be an integer"),
    (dict(transform="log"), "transform must be one of"),
    (dict(transform=("none",)), "transform must be one of"),
    (dict(coef_format="Q1.x"), "coef_format: malformed format"),
])
def test_bad_arguments_are_named(kwargs, match):
    args = dict(func=lj, s_min=LJ_RANGE[0], s_max=LJ_RANGE[1], sigma="zero", n1=4, n_seg=2, n_bin=2)
    with pytest.raises(TableError, match=match):
        build_table(**{**args, **kwargs})


@pytest.mark.parametrize("func, rule, match", [
    (lambda r: np.exp(-r), "zero", "sigma='zero': f has no root"),
    (lambda r: 1.0 + 0 * r, "sign_change", "sigma='sign_change': f has no sign change"),
    (lambda r: np.exp(-r), "max", "sigma='max': f has no interior maximum"),
])
def test_sigma_rule_failures(func, rule, match):
    with pytest.raises(TableError, match=match):
        build_table(func, *LJ_RANGE, rule)


@pytest.mark.parametrize("func, transform, match", [
    (lambda r: np.where(r > 3.0, np.nan, 1.0 / r), "none",
     r"non-finite value: f\(r=3\.16\d+\) = nan at s = 10\.0"),
    (lambda r: 1000.0 / r, "exp", "non-finite value .exp transform overflows."),
    (lambda r: 1.0, "none", "func must be vectorised"),
])
def test_bad_function_values(func, transform, match):
    with pytest.raises(TableError, match=match):
        build_table(func, 1.0, 16.0, 4.0, n1=4, n_seg=2, n_bin=2, transform=transform)


def test_errors_are_value_errors():
    with pytest.raises(ValueError):
        build_table(lj, 2.0, 1.0, 1.5)
