"""Is a DMC stage converged?  The lower bound on the bias its equilibration leaves, the
linear-trend test of its production energies, the reliability of its error bar, and the
imaginary-time input keys that set its equilibration and production."""

import math

import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.dmc import blocks_for_time, projection_bias_bound
from fixedqmc.run.config import input_hash, load_config
from fixedqmc.qmc.stage_estimate import TREND_P, energy_trend, estimate, stationary
from fixedqmc.run.plan import stages

HELIUM = {"system": {"n_atoms": 3}, "tables": {"r_max": 30.0}}


def ar1(n, phi, rng, sd=0.01):
    """A stationary AR(1) series of n blocks: lag-1 correlation phi, spread sd."""
    x = np.empty(n)
    x[0] = rng.standard_normal()
    for i in range(1, n):
        x[i] = phi * x[i - 1] + math.sqrt(1 - phi * phi) * rng.standard_normal()
    return sd * x


def dmc_rows(energies, *, equil=5, tau=0.02, start_energy=18.1, start_sigma=0.43):
    """Trace rows of a DMC stage: ``equil`` equilibration blocks at 18, then ``energies``."""
    rows = []
    for b, e in enumerate([18.0] * equil + list(energies)):
        rows.append({"block": b, "phase": "equilibration" if b < equil else "production",
                     "energy": float(e), "potential": float(e) / 2, "kinetic": float(e) / 2,
                     "acceptance": 0.99, "tau": tau, "tau_eff": tau, "population": 200.0,
                     "weight": 200.0, "e_trial": 18.0, "sigma": start_sigma,
                     "node_crossings": 0, "energy_cuts": 0, "persistent": 0})
    rows[0].update(start_energy=start_energy, start_sigma=start_sigma)
    return rows


# ------------------------------------------------------------- the projection bound --
def test_projection_bound_holds_for_an_exact_spectrum():
    """E(t) - E_0 = sum a_i D_i e^(-D_i t) / sum a_i e^(-D_i t) never falls below
    g exp(-kappa t) (g, sigma: the excess and spread of the trial function), and the bound
    is tight for a single excitation."""
    d = np.array([0.0, 0.3, 2.0, 4.0, 9.0])  # excitations
    a = np.array([1.0, 0.002, 0.03, 0.01, 0.004])  # |c_i|^2
    a = a / a.sum()
    g = float(np.sum(a * d))
    sigma = math.sqrt(float(np.sum(a * d * d)) - g * g)
    for t in (0.0, 0.1, 0.5, 1.0, 3.0, 10.0):
        w = a * np.exp(-d * t)
        excess = float(np.sum(w * d) / np.sum(w))
        b = projection_bias_bound(18.0 + g, sigma, 18.0, t)
        assert b["excess"] == pytest.approx(g)
        assert excess >= b["bound"] * (1 - 1e-12)
    one = np.array([0.9, 0.1])  # ground state and one excitation of 2
    g1, s1 = 0.2, math.sqrt(0.1 * 4 - 0.04)
    w = one * np.exp(-np.array([0.0, 2.0]) * 1.0)
    exact = float(w[1] * 2.0 / w.sum())
    assert projection_bias_bound(g1, s1, 0.0, 1.0)["bound"] == pytest.approx(exact, rel=0.2)


def test_projection_bound_numbers_and_edge_cases():
    b = projection_bias_bound(18.1, 0.43, 18.0, 1.0)
    kappa = (0.43 ** 2 + 0.1 ** 2) / 0.1
    assert b["rate"] == pytest.approx(kappa)
    assert b["bound"] == pytest.approx(0.1 * math.exp(-kappa))
    assert projection_bias_bound(18.1, 0.43, 18.0, 0.0)["bound"] == pytest.approx(0.1)
    # a stage that starts below (or at) its energy: nothing to project out
    assert projection_bias_bound(17.99, 0.43, 18.0, 1.0)["bound"] == 0.0
    assert projection_bias_bound(18.0, 0.0, 18.0, 1.0)["bound"] == 0.0


def test_a_short_equilibration_is_flagged_and_a_long_one_is_not():
    energies = 18.0 + ar1(200, 0.3, np.random.default_rng(1), sd=0.01)
    # 5 blocks of 10 steps of 0.02: 1 unit of imaginary time; bound 0.1 exp(-1.95) = 0.014
    short = estimate(dmc_rows(energies, equil=5), 200, steps_per_block=10)
    assert short["projection"]["equil_time"] == pytest.approx(1.0)
    assert short["projection"]["bias_bound"] > short["energy_error"]
    assert any("equilibration is too short" in w and "method.equil_time" in w
               for w in short["warnings"])
    assert short["projection"]["needed_time"] > 1.0
    # 25 blocks: 5 units, bound 0.1 exp(-9.7) = 6e-6
    long_ = estimate(dmc_rows(energies, equil=25), 200, steps_per_block=10)
    assert long_["projection"]["bias_bound"] < 1e-4
    assert long_["warnings"] == []
    # without the steps per block (or for VMC rows) there is no projection check
    assert "projection" not in estimate(dmc_rows(energies, equil=5), 200)


# ------------------------------------------------------------------ the trend test --
def test_a_converged_series_does_not_warn():
    rng = np.random.default_rng(2)
    est = estimate(dmc_rows(18.0 + ar1(300, 0.6, rng), equil=25), 200, steps_per_block=10)
    assert est["trend"]["p_value"] is not None and est["trend"]["p_value"] > TREND_P
    assert est["stationary"] is True and est["warnings"] == []


def test_converged_series_rarely_warn_by_chance():
    """200 stationary correlated series of 40 to 400 blocks: at most a few false alarms
    (about 1 expected at p < 1e-3 with the residual correlation of short blocks)."""
    rng = np.random.default_rng(3)
    alarms = verdicts = 0
    for i in range(200):
        t = energy_trend(ar1((40, 100, 400)[i % 3], (0.0, 0.5, 0.8, 0.9)[i % 4], rng))
        verdicts += t["p_value"] is not None
        alarms += t["p_value"] is not None and t["p_value"] < TREND_P
    assert alarms <= 3 and verdicts > 100


def test_a_drift_the_halves_miss_is_flagged():
    """A linear drift of 0.007 over 400 uncorrelated blocks of spread 0.01: the halves
    differ by about 3.5 of their combined errors (under the 4 sigma of the stationarity
    check), the slope by about 4 of its standard errors."""
    rng = np.random.default_rng(7)
    n = 400
    e = 18.0 + 0.01 * rng.standard_normal(n) + 0.007 * (np.arange(n) / n - 0.5)
    assert stationary(e) is True
    est = estimate(dmc_rows(e, equil=25), 200, steps_per_block=10)
    assert est["trend"]["p_value"] < TREND_P
    assert est["trend"]["drift"] == pytest.approx(0.007, abs=3 * est["trend"]["drift_error"])
    assert est["stationary"] is True
    assert [w for w in est["warnings"] if "still drifts" in w]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_relaxing_production_is_flagged(seed):
    """An unfinished projection: 0.02 exp(-0.2 t) over 200 blocks of 0.2 (noise 0.004 a
    block): the halves pass, the stage says so (a drift warning, or a caution that its
    error bar cannot be trusted because the series looks correlated over its whole
    length)."""
    rng = np.random.default_rng(seed)
    t = 0.2 * np.arange(200)
    e = 18.0 + 0.02 * np.exp(-0.2 * t) + ar1(200, 0.5, rng, sd=0.004)
    assert stationary(e) is True
    est = estimate(dmc_rows(e, equil=25), 200, steps_per_block=10)
    said = est["warnings"] + est["cautions"]
    assert [w for w in said if "still drifts" in w or "correlation time" in w]


def test_a_short_correlated_production_gives_no_verdict_and_a_caution():
    """20 blocks, correlated over about 10 (as the README example's 20 x 10 steps were):
    reblocking cannot settle on 6 independent blocks, so no trend verdict, and a DMC
    stage cautions that its error bar cannot be trusted (a caution: the stage stays in
    the extrapolation)."""
    e = 18.0 + ar1(20, 0.9, np.random.default_rng(6))
    assert energy_trend(e)["p_value"] is None
    est = estimate(dmc_rows(e, equil=50), 200, steps_per_block=10)
    assert est["error_trusted"] is False and est["warnings"] == []
    assert any("too short for its correlation time" in w and "method.production_time" in w
               for w in est["cautions"])
    vmc = [{k: v for k, v in r.items() if k not in ("tau", "tau_eff")}
           for r in dmc_rows(e, equil=50)]
    assert estimate(vmc)["cautions"] == []


def test_a_chance_low_error_bar_is_not_trusted():
    """The series of the report: 20 blocks whose reblocking met its criterion at 2 blocks
    of 8, with an error 17 times below that of 4 blocks of 4 (0.00065 against 0.011)."""
    e = np.array([17.999177, 18.005377, 18.021173, 18.009230, 17.999536, 18.021594,
                  18.050244, 18.003731, 17.952856, 17.962974, 17.981549, 18.021586,
                  18.039940, 18.039737, 18.061787, 18.060074, 18.038849, 18.016576,
                  18.015766, 17.989976])
    est = estimate(dmc_rows(e, equil=50), 200, steps_per_block=10)
    assert est["energy_error"] < 0.001 and est["error_converged"] is True
    assert est["error_trusted"] is False
    assert "2 blocks of 8" in est["cautions"][0]
    # a long uncorrelated series is trusted
    ok = estimate(dmc_rows(18.0 + ar1(200, 0.0, np.random.default_rng(8)), equil=50), 200,
                  steps_per_block=10)
    assert ok["error_trusted"] is True and ok["cautions"] == []


# ----------------------------------------------------------- imaginary-time inputs --
def test_blocks_for_time():
    assert blocks_for_time(4.0, 0.02, 10) == 20  # 4 / 0.2 = 20.000000000000004
    assert blocks_for_time(4.0, 0.01, 10) == 40
    assert blocks_for_time(4.1, 0.02, 10) == 21
    assert blocks_for_time(0.05, 0.02, 10) == 1
    assert blocks_for_time(0.3, 0.1, 1) == 3  # 0.3 / 0.1 = 2.9999999999999996


def test_times_set_the_blocks_of_every_time_step():
    cfg = load_config(overrides={**HELIUM, "method": {
        "kind": "dmc", "taus": [0.02, 0.01], "steps_per_block": 10, "blocks": 7,
        "equil_blocks": 3, "equil_time": 4, "production_time": 30.0}})
    got = {s.name: (s.settings.equil_blocks, s.settings.n_blocks) for s in stages(cfg)}
    assert got == {"vmc": (0, 5), "dmc_tau0.02": (20, 150), "dmc_tau0.01": (40, 300)}
    only_equil = load_config(overrides={**HELIUM, "method": {
        "kind": "dmc", "taus": [0.02], "steps_per_block": 10, "blocks": 7, "equil_time": 1}})
    assert [(s.settings.equil_blocks, s.settings.n_blocks) for s in stages(only_equil)][1] \
        == (5, 7)


def test_times_off_leave_blocks_and_input_hash_as_before():
    off = load_config(overrides={**HELIUM, "method": {"kind": "dmc", "taus": [0.02]}})
    assert off["method"]["equil_time"] == 0 and off["method"]["production_time"] == 0
    dmc = next(s for s in stages(off) if s.kind == "dmc").settings
    assert (dmc.equil_blocks, dmc.n_blocks) == (5, 20)
    # the hash of an input that leaves the keys off is the hash it had before they existed
    before = {k: v for k, v in off.items()}
    before["method"] = {k: v for k, v in off["method"].items()
                        if k not in ("equil_time", "production_time")}
    assert input_hash(off) == input_hash(before)
    on = load_config(overrides={**HELIUM, "method": {"kind": "dmc", "taus": [0.02],
                                                      "equil_time": 2.0}})
    assert input_hash(on) != input_hash(off)


def test_vmc_ignores_the_times():
    cfg = load_config(overrides={**HELIUM, "method": {"blocks": 7, "equil_time": 3.0,
                                                      "production_time": 50.0}})
    (vmc,) = stages(cfg)
    assert (vmc.settings.equil_blocks, vmc.settings.n_blocks) == (5, 7)


@pytest.mark.parametrize("method, match", [
    ({"equil_time": -1.0}, r"method.equil_time must be a finite number >= 0.0, got -1.0"),
    ({"production_time": "long"}, r"method.production_time must be a finite number"),
    ({"equil_time": True}, r"method.equil_time must be a finite number"),
    ({"production_time": float("inf")}, r"method.production_time must be a finite number"),
    ({"kind": "dmc", "taus": [0.02, 0.01], "steps_per_block": 10, "production_time": 0.15},
     r"method.production_time = 0.15 gives 1 production block at tau = 0.02 .*at least 0.4"),
])
def test_bad_times_are_refused_naming_the_key(method, match):
    with pytest.raises(FixedQMCError, match=match):
        load_config(overrides={**HELIUM, "method": method})
