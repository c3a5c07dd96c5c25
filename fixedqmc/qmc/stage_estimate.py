"""The estimate of one driver stage (VMC, or DMC at one time step) from its trace rows:
reblocked energy and parts, acceptance, and the checks that say whether the stage can be
believed (stationary halves, no linear drift, an equilibration long enough for the
trial function's excess energy, an error bar its correlation time allows, the DMC
population).  Energies in the system's unit, times in its inverse.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fixedqmc.qmc.dmc import START_COLUMNS, projection_bias_bound
from fixedqmc.qmc.estimators import reblock
from fixedqmc.qmc.state import ENERGY_COLUMNS_EXCLUDED

__all__ = ["MIN_BLOCKS", "TREND_P", "energy_trend", "estimate", "stationary"]


def stationary(energies: np.ndarray) -> bool | None:
    """Are the two halves of a production series consistent (means within 4 sigma of
    each other, reblocked errors)?  None when there are too few blocks to tell (< 8)."""
    if energies.size < 8:
        return None
    half = energies.size // 2
    a, b = reblock(energies[:half]), reblock(energies[half:])
    if not (np.isfinite(a.error) and np.isfinite(b.error)):
        return None
    return bool(abs(a.mean - b.mean) <= 4.0 * math.hypot(a.error, b.error))


TREND_P = 1e-3  # p-value below which a linear trend of the production energies is a drift
MIN_BLOCKS = 6  # uncorrelated blocks a trend test needs (4 degrees of freedom)


def _untrusted_error(rb) -> str | None:
    """Why the reblocked error bar of a production series cannot be trusted, or None.

    Not converged: the series is too short for its correlation length (the analysis's
    own verdict, :func:`fixedqmc.qmc.reblock`).  Or converged on a level that keeps fewer
    than ``MIN_BLOCKS`` blocks with a standard error *below* that of a level of shorter
    blocks: sigma_B grows with the block length up to its plateau, and one estimated
    from k blocks scatters by 1 / sqrt(2 (k - 1)) (71 % for 2 blocks), so such a value is
    a chance low one, and it is the low values that meet the level criterion first (an
    error bar 10 times too small on 20 blocks of a DMC production)."""
    if not rb.converged:
        return "does not converge"
    k = rb.n // 2 ** rb.optimal_level
    shorter = rb.table["std_err"].to_numpy()[:rb.optimal_level]
    if k < MIN_BLOCKS and shorter.size and rb.error < shorter.max():
        return (f"settles on {k} blocks of {2 ** rb.optimal_level}, whose error "
                f"{rb.error:.2g} is below the {shorter.max():.2g} of shorter blocks")
    return None


def _detrended(e: np.ndarray) -> np.ndarray:
    """``e`` minus its least-squares straight line over the index."""
    x = np.arange(e.size, dtype=np.float64) - (e.size - 1) / 2.0
    return e - e.mean() - float(np.dot(x, e - e.mean()) / np.dot(x, x)) * x


def _decorrelating_level(part: np.ndarray, n: int) -> int | None:
    """The blocking level of Lee et al. 2011 (:mod:`fixedqmc.qmc.estimators`) for a series
    of ``n`` samples, read off the reblocking table of ``part`` of it (detrended): the
    smallest B with ``2**(3B) > 2 n (sigma_B / sigma_0)**4``; None if no level meets it."""
    table = reblock(_detrended(part)).table
    err = table["std_err"].to_numpy()
    level = table["level"].to_numpy()
    if err[0] == 0.0:
        return 0
    met = 2.0 ** (3 * level) > 2.0 * n * (err / err[0]) ** 4
    return int(level[np.argmax(met)]) if np.any(met) else None


def energy_trend(energies: np.ndarray) -> dict:
    """Does a production series still drift?  A t-test of the slope of a straight line
    through the series, averaged into blocks long enough to be uncorrelated.

    1. The block length 2**B: the blocking criterion of Lee et al. 2011 (as in
       :func:`fixedqmc.qmc.reblock`, with the length n of the whole series) on the
       reblocking table of the second half of the series with its straight line
       removed, so that neither a trend nor a transient at the start (which the first
       half would hold) passes for correlation.
    2. The series averaged into ``k = n // 2**B`` blocks, a straight line fitted to
       their means: the slope over its standard error is Student-t distributed with
       ``k - 2`` degrees of freedom when the series has no trend (independent Gaussian
       block means), which gives ``p_value`` (two-sided).

    Returns ``{"drift", "drift_error", "t", "p_value", "blocks"}``: ``drift`` the fitted
    change of the energy over the series (slope times its length, energy) and its error;
    ``blocks`` the k of step 2.  ``p_value`` is None (no verdict) when no level meets the
    criterion or it leaves fewer than ``MIN_BLOCKS`` blocks: the series is then too short
    for its correlation time to tell a drift from a slow fluctuation.

    Compared with the halves of :func:`stationary` (4 sigma), the slope uses every
    block with its weight (for a linear drift D over n uncorrelated blocks of spread s,
    ``t = D sqrt(n / 12) / s`` against ``D sqrt(n) / (4 s)`` for the halves) and the
    error bar is that of blocks found uncorrelated, with the t distribution of their
    small number, so a short or strongly correlated series does not pass for
    significant.  On AR(1) series of 20 to 400 blocks (lag-1 correlation 0 to 0.9)
    without a trend, p < ``TREND_P`` = 1e-3 came out for about 1 % of the series or
    fewer; a drift of 12 standard errors of the mean over the series was found in 10 to
    40 % of them (more for longer series).  A transient confined to the first tenth of
    the production is found less often: the projection bound (:func:`_projection`) and
    the reliability of the error bar are the checks for that.
    """
    e = np.asarray(energies, np.float64)
    n = e.size
    out = {"drift": float("nan"), "drift_error": float("nan"), "t": float("nan"),
           "p_value": None, "blocks": 0}
    if n < MIN_BLOCKS or not np.all(np.isfinite(e)):
        return out
    level = _decorrelating_level(e[n // 2:], n)
    if level is None or n // 2 ** level < MIN_BLOCKS:
        return out
    m = 2 ** level
    k = n // m
    x = np.arange(n, dtype=np.float64) - (n - 1) / 2.0
    eb = e[:k * m].reshape(k, m).mean(axis=1)
    xb = x[:k * m].reshape(k, m).mean(axis=1)
    xb = xb - xb.mean()
    sxx = float(np.dot(xb, xb))
    slope = float(np.dot(xb, eb - eb.mean()) / sxx)
    resid = eb - eb.mean() - slope * xb
    se = math.sqrt(float(np.dot(resid, resid)) / (k - 2) / sxx)
    out.update(drift=slope * n, drift_error=se * n, blocks=int(k))
    if se == 0.0:  # a constant series (or an exact line)
        out.update(t=0.0 if slope == 0.0 else math.copysign(math.inf, slope),
                   p_value=1.0 if slope == 0.0 else 0.0)
        return out
    t = slope / se
    from scipy.stats import t as student_t
    out.update(t=float(t), p_value=float(2.0 * student_t.sf(abs(t), k - 2)))
    return out


def _projection(df: pd.DataFrame, energy: float, error: float,
                steps_per_block: int | None) -> dict | None:
    """The equilibration of a DMC stage against :func:`fixedqmc.qmc.dmc.projection_bias_bound`:
    ``{"equil_time", "start_energy", "start_sigma", "excess", "rate", "bias_bound",
    "needed_time"}`` (times in 1/energy: ``steps_per_block`` times the sum over
    equilibration blocks of their mean effective time step ``tau_eff``; ``needed_time``
    the equilibration time that would bring the bound down to the error bar); None when
    the rows are not a DMC stage's or ``steps_per_block`` is not known."""
    if steps_per_block is None or "tau_eff" not in df or "start_energy" not in df:
        return None
    first = df.iloc[0]
    if not (np.isfinite(first["start_energy"]) and np.isfinite(first["start_sigma"])):
        return None
    equil = df[df["phase"] == "equilibration"] if "phase" in df else df.iloc[:0]
    t_eq = float(steps_per_block * equil["tau_eff"].sum())
    b = projection_bias_bound(first["start_energy"], first["start_sigma"], energy, t_eq)
    needed = (math.log(b["excess"] / error) / b["rate"]
              if b["bound"] > 0 and error > 0 and b["excess"] > error else 0.0)
    return {"equil_time": t_eq, "start_energy": float(first["start_energy"]),
            "start_sigma": float(first["start_sigma"]), "excess": b["excess"],
            "rate": b["rate"], "bias_bound": b["bound"], "needed_time": needed}


def estimate(rows: list[dict], target: int | None = None,
             steps_per_block: int | None = None) -> dict:
    """Reblocked energy, every energy part, acceptance and the checks of one stage's
    production blocks: node crossings, energy cuts and persistent walkers (DMC, all
    blocks), the largest recompute drift, whether the energy series is stationary (its
    halves, :func:`stationary`) and has no linear trend (``trend``,
    :func:`energy_trend`), whether a DMC stage's equilibration was long enough
    (``projection``: with ``steps_per_block``, its lower bound on the remaining bias
    must not exceed the stage's error bar, :func:`_projection`), whether a DMC stage's
    error bar can be trusted (:func:`_untrusted_error`: a production only a few
    correlation times long can give one many times too small) and whether the
    population stayed within a factor 2 of ``target``.  ``warnings`` lists what failed
    (a DMC stage with any is left out of the time-step extrapolation); ``cautions`` says
    when the error bar cannot be trusted (``error_trusted`` False): the stage's energy is
    as good as the others', so it stays in, and the summary's warnings say so."""
    df = pd.DataFrame(rows)
    prod = df[df["phase"] == "production"] if "phase" in df else df
    if prod.empty:
        prod = df
    cols = [c for c in df.columns if c not in ENERGY_COLUMNS_EXCLUDED
            and c not in START_COLUMNS and not c.startswith("recompute_")]
    out: dict = {"blocks": int(len(prod)), "energy_columns": cols}
    for col in cols:
        rb = reblock(prod[col].to_numpy())
        out[col] = rb.mean
        out[f"{col}_error"] = rb.error
        if col == "energy":
            out["error_converged"] = bool(rb.converged)
            energy_rb = rb
    out["acceptance"] = float(prod["acceptance"].mean())
    warnings = []
    for c in ("node_crossings", "energy_cuts", "persistent"):
        if c in df:
            out[c] = int(df[c].sum())
    for c in df.columns:
        if c.startswith("recompute_"):
            out[f"{c}_max"] = float(df[c].max())
    out["stationary"] = stationary(prod["energy"].to_numpy())
    if out["stationary"] is False:
        warnings.append("the production energy series is not stationary (its halves "
                        "differ by more than 4 sigma)")
    cautions = []
    why = _untrusted_error(energy_rb) if "tau_eff" in df else None  # DMC stages
    out["error_trusted"] = why is None
    if why is not None:
        cautions.append(f"the production is too short for its correlation time: the "
                        f"blocking analysis of its {energy_rb.n} block energies {why}, so "
                        "its error bar (and that of an extrapolation through it) cannot be "
                        "trusted; lengthen method.production_time (or method.blocks)")
    trend = out["trend"] = energy_trend(prod["energy"].to_numpy())
    if trend["p_value"] is not None and trend["p_value"] < TREND_P:
        warnings.append(f"the production energy still drifts: a linear trend of "
                        f"{trend['drift']:+.3g} +/- {trend['drift_error']:.2g} over the "
                        f"production ({trend['t']:+.1f} standard errors in {trend['blocks']} "
                        f"reblocked blocks, p = {trend['p_value']:.1g}); lengthen the "
                        "equilibration (method.equil_time or method.equil_blocks)")
    proj = _projection(df, out["energy"], out["energy_error"], steps_per_block)
    if proj is not None:
        out["projection"] = proj
        if proj["bias_bound"] > out["energy_error"]:
            warnings.append(
                f"the equilibration is too short: after {proj['equil_time']:.3g} of imaginary "
                f"time the projection from the starting walkers (energy "
                f"{proj['start_energy']:.6g}, {proj['excess']:.3g} above the stage's, spread "
                f"{proj['start_sigma']:.3g}) leaves a bias of at least "
                f"{proj['bias_bound']:.2g}, more than the error bar {out['energy_error']:.2g} "
                f"(it decays no faster than exp(-{proj['rate']:.3g} t)); set "
                f"method.equil_time to at least {proj['needed_time']:.3g}, better several "
                "times that")
    if "population" in prod:
        out["population"] = float(prod["population"].mean())
        lo, hi = float(prod["population"].min()), float(prod["population"].max())
        if target and not (target / 2 <= lo and hi <= 2 * target):
            warnings.append(f"the population left [{target // 2}, {2 * target}] "
                            f"(block means {lo:.0f} .. {hi:.0f}; target {target})")
    out["warnings"] = warnings
    out["cautions"] = cautions
    return out
