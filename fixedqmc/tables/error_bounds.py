"""Measured error and a-priori error bound of two-region tables (HAQMC, seed 002, Sec. 3).

Per bin, in rescaled units ``g`` (see :mod:`fixedqmc.tables.two_region`), the bound is the
sum of three parts:

* interpolation: ``max_u |d^3 g / du^3| / 192`` -- the error of the quadratic interpolating
  ``g`` at the Chebyshev nodes of the bin (length ``h = 1`` in ``u``),
  ``max|g'''| / 3! * (h/2)**3 / 2**2``, which the minimax quadratic cannot exceed.  The third
  derivative is estimated from third differences of ``g`` on ``D3_POINTS`` samples per bin,
  extrapolated to the bin ends (linearly and geometrically, whichever is larger), times
  ``SAFETY``, plus the rounding noise of the differences;
* quantization: ``3 * LSB / 2`` for coefficients rounded to nearest (the half-LSBs of a, b
  and c, as ``|da + u*db + u**2*dc| <= |da| + |db| + |dc|`` for ``u`` in ``[0, 1)``);
* float64 rounding: of the Horner evaluation ``4 eps (|a| + |b| + |c|)``, of the bin
  position ``(|b| + 2|c|) * 4 eps n`` (``n = n1`` or ``n_bin`` bins per unit of ``t``), and
  of the rescaled reference ``2 eps (max|F| + |offset|) / scale``.

The bound is converted to f units per bin: ``scale * bound_g`` for ``transform="none"``;
for ``"exp"`` with ``dF = scale * bound_g``, ``|d log F| <= -log(1 - dF / min F)`` (infinite
when ``dF >= min F``: the interpolated F may reach 0, so nothing bounds f, and such a bin
is never within its bound); plus the float64 rounding of the un-scaling (``4 eps`` of the
magnitudes involved).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from fixedqmc.numerics.qformat import QFormat
from fixedqmc.tables.two_region import (
    REGIONS,
    PairFunction,
    TableError,
    TwoRegionTable,
    bin_grid,
    build_table,
    find_sigma,
    quantize_table,
    sample_transformed,
)

EPS = float(np.finfo(np.float64).eps)
D3_POINTS = 65  # samples per bin for the third-derivative estimate (step 1/64 in u)
SAFETY = 1.25  # factor on the estimated max |g'''|
N_SAMPLES = 32  # measurement points per bin, u = (i + 1/2) / N_SAMPLES
REL_FLOOR = 1e-6  # relative error only where |f| >= REL_FLOOR * max|f| of the region
REGION_NAMES = {1: "I", 2: "II"}


# ---------------------------------------------------------------------- the bound ---
def third_derivative_bound(g: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """Estimated ``max_u |d^3 g/du^3|`` per bin from samples ``g`` (shape ``(bins, P)`` at
    ``u = j/(P-1)``) with per-bin sample noise ``noise`` (absolute, g units): ``SAFETY`` times
    the largest third difference or its extrapolation to the bin ends, plus ``8 * noise /
    h**3`` (the differences' response to the noise)."""
    h = 1.0 / (g.shape[1] - 1)
    d3 = np.diff(g, 3, axis=1) / h**3  # d3[:, i] = g'''(xi), xi in [u_i, u_(i+3)]
    ends = np.maximum(_extrapolate(d3[:, 0], d3[:, 1]), _extrapolate(d3[:, -1], d3[:, -2]))
    return SAFETY * np.maximum(np.abs(d3).max(axis=1), ends) + 8.0 * noise / h**3


def _extrapolate(near: np.ndarray, next_: np.ndarray) -> np.ndarray:
    """|g'''| at a bin end from the two nearest third differences (centres 1.5 and 2.5 steps
    away): the larger of linear and, when growing toward the end, geometric extrapolation."""
    a, b = np.abs(near), np.abs(next_)
    linear = a + 1.5 * np.abs(near - next_)
    growing = (near * next_ > 0) & (a > b)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        geometric = np.where(growing, a * (a / np.where(growing, b, 1.0)) ** 1.5, 0.0)
    return np.maximum(linear, geometric)


def _region_bounds(table: TwoRegionTable, func: PairFunction, region: int) -> pd.DataFrame:
    """One row per bin of a region: span, the three g-unit bound parts and the f-unit bound."""
    s0, ds = table.bin_spans(region)
    transform = table.transform[region - 1]
    offset, scale = table.offset[region - 1], table.scale[region - 1]
    _, s = bin_grid(s0, ds, D3_POINTS)
    big_f = sample_transformed(func, s, transform)
    mag_f = np.abs(big_f).max(axis=1) + abs(offset)
    noise = 2 * EPS * mag_f / scale
    a, b, c = table.coefficients(region)
    n_per_t = table.n1 if region == 1 else table.n_bin
    interp = third_derivative_bound((big_f - offset) / scale, noise) / 192.0
    quant = 0.0 if table.coef_format is None else 1.5 * QFormat.parse(table.coef_format).resolution
    rounding = 4 * EPS * (np.abs(a) + np.abs(b) + np.abs(c)) \
        + (np.abs(b) + 2 * np.abs(c)) * 4 * EPS * n_per_t + noise
    bound_g = interp + quant + rounding
    return pd.DataFrame({
        "region": REGION_NAMES[region], "index": np.arange(s0.size), "s_lo": s0, "s_hi": s0 + ds,
        "interp_g": interp, "quant_g": quant, "round_g": rounding, "bound_g": bound_g,
        "bound_f": _bound_in_f(bound_g * scale, big_f, mag_f, transform),
    })


def _bound_in_f(d_big_f: np.ndarray, big_f: np.ndarray, mag_f: np.ndarray, transform: str):
    """Per-bin bound in f units from a bound ``d_big_f`` on the error of F (see module doc)."""
    d_big_f = d_big_f + 4 * EPS * mag_f
    if transform == "none":
        return d_big_f
    f_min = big_f.min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        d_log = np.where(d_big_f < f_min, -np.log1p(-d_big_f / f_min), np.inf)
    return d_log + 4 * EPS * np.abs(np.log(big_f)).max(axis=1)


def bin_bounds(table: TwoRegionTable, func: PairFunction) -> dict:
    """The per-bin bound ``bound_g`` (g units) of each region, ``{"I": [...], "II": [...]}``
    in the bins' file order: what ``table.json`` stores for :func:`junctions`."""
    return {REGION_NAMES[r]: _region_bounds(table, func, r)["bound_g"].tolist()
            for r in REGIONS}


def junctions(table: TwoRegionTable, region: int, bound_g) -> pd.DataFrame:
    """Continuity of one region against per-bin bounds ``bound_g`` (g units, file order):
    one row per pair of adjacent bins (in s), ``bin`` and ``next`` (file indices), ``jump``
    (``|g_bin(u=1) - g_next(u=0)|``, g units) and ``allowed`` (``bound_g[bin] +
    bound_g[next]``: each quadratic is within its bound of g on its closed bin, ends
    included).  A jump above ``allowed`` means a damaged coefficient of one of the two."""
    s0, _ = table.bin_spans(region)
    order = np.argsort(s0, kind="stable")
    a, b, c = (x[order] for x in table.coefficients(region))
    bound = np.asarray(bound_g, np.float64)[order]
    return pd.DataFrame({"bin": order[:-1], "next": order[1:],
                         "jump": np.abs((a + b + c)[:-1] - a[1:]),
                         "allowed": bound[:-1] + bound[1:]})


# ------------------------------------------------------------------ the measurement --
def _measure(table: TwoRegionTable, func: PairFunction, n_samples: int):
    """Samples of both regions: region, bin, |error| in g and f units, relative error."""
    u = (np.arange(n_samples) + 0.5) / n_samples
    spans = [table.bin_spans(r) for r in REGIONS]
    s = np.concatenate([(s0[:, None] + ds[:, None] * u).ravel() for s0, ds in spans]
                       + [np.array([table.s_min, table.sigma, table.s_max])])
    region, index, _ = table.locate(s)
    _, g_table = table.interpolate(s)
    f_exact = sample_transformed(func, s, "none")
    err_f = np.abs(table.unscale(region, g_table) - f_exact)
    err_g = np.abs(g_table - table.rescale(region, f_exact))
    return region, index, err_g, err_f, f_exact


def _per_bin_max(n: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros(n)
    with np.errstate(invalid="ignore"):  # NaN (an "exp" region's interpolated F <= 0) propagates
        np.maximum.at(out, index, values)
    return out


def bin_errors(table: TwoRegionTable, func: PairFunction, n_samples: int = N_SAMPLES,
               rel_floor: float = REL_FLOOR) -> pd.DataFrame:
    """Per-bin measured error and bound, one row per bin of both regions.

    Columns: ``region`` ("I"/"II"), ``index``, ``s_lo``, ``s_hi`` (s units), ``interp_g``,
    ``quant_g``, ``round_g``, ``bound_g`` (g units; module docstring), ``bound_f`` (f units),
    ``err_g``, ``err_f`` (largest measured |error| in g and f units over ``n_samples`` points
    per bin, each point counted in the bin :meth:`TwoRegionTable.locate` puts it in),
    ``rel_err`` (largest ``|error| / |f|`` over points with ``|f| >= rel_floor * max|f|`` of
    the region).  ``func`` is f(r), vectorised.
    """
    if n_samples < 1:
        raise TableError(f"n_samples must be >= 1, got {n_samples!r}")
    region, index, err_g, err_f, f_exact = _measure(table, func, n_samples)
    frames = []
    for r in REGIONS:
        sel = region == r
        frame = _region_bounds(table, func, r)
        n = table.n_bins(r)
        f_abs = np.abs(f_exact[sel])
        rel = np.where(f_abs >= rel_floor * f_abs.max(),
                       err_f[sel] / np.maximum(f_abs, 1e-300), 0.0)
        frame["err_g"] = _per_bin_max(n, index[sel], err_g[sel])
        frame["err_f"] = _per_bin_max(n, index[sel], err_f[sel])
        frame["rel_err"] = _per_bin_max(n, index[sel], rel)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def within_bound(bins: pd.DataFrame) -> pd.Series:
    """Per bin of :func:`bin_errors`: measured error <= bound in g and in f units, both
    bounds finite.  An infinite f bound (an "exp" region whose F error can reach F itself,
    so f = log F is not bounded at all) or a NaN bound or error guarantees nothing and is
    never within."""
    finite = np.isfinite(bins["bound_g"]) & np.isfinite(bins["bound_f"])
    return finite & (bins["err_g"] <= bins["bound_g"]) & (bins["err_f"] <= bins["bound_f"])


def error_report(table: TwoRegionTable, func: PairFunction, n_samples: int = N_SAMPLES,
                 rel_floor: float = REL_FLOOR) -> pd.DataFrame:
    """Error summary per region (index "I", "II") of ``table`` against the exact ``func``.

    Columns: ``transform``, ``coef_format``, ``bins``, ``s_lo``, ``s_hi``; measured
    ``max_abs_err`` (f units), ``max_rel_err`` (see :func:`bin_errors`), ``max_err_g`` (g
    units); bound parts ``interp_g``, ``quant_g``, ``round_g`` and totals ``bound_g``,
    ``bound_f`` (largest over the bins); ``worst_ratio`` (largest per-bin measured/bound in f
    units) and ``within_bound`` (every bin's measured error <= its bound, in g and f units,
    and every bound finite: see :func:`within_bound`).

    Per bin, ``bound_g = max_u|d^3 g/du^3| / 192 + 3 * LSB / 2 + float64 rounding`` (the
    interpolation part of the quadratic on a bin of length 1 in u, the half-LSBs of a, b, c,
    and rounding; details in the module docstring), and ``bound_f`` is it in f units.
    """
    bins = bin_errors(table, func, n_samples, rel_floor)
    with np.errstate(divide="ignore", invalid="ignore"):
        bins["ratio"] = np.where(bins["err_f"] > 0, bins["err_f"] / bins["bound_f"], 0.0)
    bins["ok"] = within_bound(bins)
    grouped = bins.groupby("region", sort=False)
    report = grouped.agg(
        bins=("index", "size"), s_lo=("s_lo", "min"), s_hi=("s_hi", "max"),
        max_abs_err=("err_f", "max"), max_rel_err=("rel_err", "max"), max_err_g=("err_g", "max"),
        interp_g=("interp_g", "max"), quant_g=("quant_g", "max"), round_g=("round_g", "max"),
        bound_g=("bound_g", "max"), bound_f=("bound_f", "max"), worst_ratio=("ratio", "max"),
        within_bound=("ok", "all"))
    report.insert(0, "transform", list(table.transform))
    report.insert(1, "coef_format", table.coef_format)
    return report


# ----------------------------------------------------------------------- the sweep ---
def error_vs_bins(func: PairFunction, s_min: float, s_max: float, sigma,
                  bins_list: Iterable[Sequence[int]], formats_list: Iterable = (None,),
                  transform=("none", "none"), n_samples: int = N_SAMPLES) -> pd.DataFrame:
    """Measured error and bound against bins per region and coefficient width.

    ``bins_list`` holds ``(n1, n_seg, n_bin)`` layouts; ``formats_list`` coefficient formats
    (``None`` for float64).  sigma (a number in s or a rule, see
    :func:`~fixedqmc.tables.two_region.find_sigma`) is resolved once.  One row per layout,
    format and region: ``n1, n_seg, n_bin, coef_format, word_bits, region, bins,
    max_abs_err, max_rel_err, bound_f, within_bound, fits`` (``fits`` False, errors NaN, when
    the format cannot hold the coefficients).
    """
    if isinstance(sigma, str):
        sigma = find_sigma(func, s_min, s_max, sigma)
    rows = []
    for n1, n_seg, n_bin in bins_list:
        base = build_table(func, s_min, s_max, sigma, n1=n1, n_seg=n_seg, n_bin=n_bin,
                           transform=transform)
        for fmt in formats_list:
            layout = dict(n1=n1, n_seg=n_seg, n_bin=n_bin, coef_format=fmt,
                          word_bits=None if fmt is None else QFormat.parse(fmt).word_bits)
            rows.extend(_sweep_rows(base, func, fmt, layout, n_samples))
    return pd.DataFrame(rows)


def _sweep_rows(base: TwoRegionTable, func, fmt, layout: dict, n_samples: int) -> list[dict]:
    try:
        table = base if fmt is None else quantize_table(base, fmt)
    except TableError:
        return [dict(layout, region=REGION_NAMES[r], bins=base.n_bins(r), max_abs_err=np.nan,
                     max_rel_err=np.nan, bound_f=np.nan, within_bound=False, fits=False)
                for r in REGIONS]
    report = error_report(table, func, n_samples)
    return [dict(layout, region=name, bins=int(row.bins), max_abs_err=row.max_abs_err,
                 max_rel_err=row.max_rel_err, bound_f=row.bound_f,
                 within_bound=bool(row.within_bound), fits=True)
            for name, row in report.iterrows()]
