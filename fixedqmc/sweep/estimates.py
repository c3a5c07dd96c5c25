"""Reference sampling and the two estimates of a trial precision (seed 001, Sec. 3-4).

:func:`sample_reference`
    a float64 VMC run of the input (its ``method`` blocks and steps; all-particle or
    single-particle moves as the input says, VMC also for DMC inputs) that keeps the
    walkers at the end of every production block as *samples* (n_blocks, n_walkers, N, 3),
    their float64 local energies, the run's energy and error (the error, as every error
    here, from the spread of the independent walkers' means), and the range profile of
    every kernel variable on the samples (:mod:`fixedqmc.qmc.profile`).
:func:`paired_estimate`
    the local energy at the trial precision on exactly those samples: the mean of
    ``E_L(trial) - E_L(float64)`` and its error (the *paired* error, far below either
    energy's own error because both share the same Monte Carlo noise), and the trial
    energy on the samples.  The VMC walkers are independent chains, so each walker's mean
    over the blocks is an independent value whatever the autocorrelation in time: the
    error is their spread, ``std / sqrt(n_w)`` (``n_w - 1`` degrees of freedom, where
    reblocking a few block means has few; a single walker falls back to reblocking its
    blocks).  Only kernels that enter the local energy show here: a kernel that acts
    through sampling alone (helium's wave-function kernel) has a paired difference of
    exactly zero by construction: the reweighted estimate judges it.
:func:`reweighted_estimate`
    correlated sampling on the same samples, with each sample weighted by
    ``|psi_trial / psi_64|^2``: the trial's energy as if sampled at the trial precision,
    its error and the weights' effective sample fraction (part of the paired estimate;
    the reference keeps ln|psi| of its samples for it).
:func:`full_estimate`
    sampling itself at the trial precision (acceptance from the emulated wave function):
    a complete VMC run with the same seed, its energy, error and acceptance, and its
    difference from the float64 run.  Both runs draw the same random numbers walker by
    walker, so walker w of one and walker w of the other form a pair, and the pairs of
    different walkers are independent: the error of the difference is the spread of the
    per-walker mean differences of the block energies (as for the paired estimate).
    While the emulated run follows the float64 trajectories (wide formats) that error is
    far below either run's own; once the trajectories part it grows to about
    sqrt(2) times their error (independent runs' error, added in quadrature, is kept as
    ``full_diff_independent_error`` for comparison).  ``full_parted`` counts the walkers
    whose trajectory parted from float64's (final positions not bit for bit the same: an
    accept/reject decision taken otherwise).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from fixedqmc.progress import progress as progress_bar
from fixedqmc.qmc.bounds import bound, bounds_evaluations
from fixedqmc.qmc.estimators import reblock
from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.qmc.system import Walkers
from fixedqmc.qmc.vmc import run_vmc, start_vmc
from fixedqmc.run.plan import build_system, vmc_settings


def _start(config: dict, system):
    rng = np.random.default_rng(np.random.SeedSequence(config["seed"]))
    walkers = system.initial_positions(config["method"]["walkers"], rng)
    settings = replace(vmc_settings(config["method"]), walker_means=True)
    return start_vmc(system, walkers, settings, rng), settings


def _walker_estimate(x: np.ndarray) -> tuple[float, float]:
    """Mean and error of values ``x`` (n_blocks, n_walkers) of independent walkers: each
    walker's mean over the blocks is one independent value, so the error is their spread
    over sqrt(n_walkers) (``n_w - 1`` degrees of freedom, whatever the autocorrelation in
    time); a single walker falls back to reblocking its blocks."""
    if x.shape[1] > 1:
        w = x.mean(axis=0)
        return float(w.mean()), float(np.std(w, ddof=1) / np.sqrt(w.size))
    rb = reblock(x[:, 0])
    return rb.mean, rb.error


#: bootstrap resamples of the walkers behind an error ratio's interval
RATIO_RESAMPLES = 2000


def error_ratio_interval(trial: np.ndarray, reference: np.ndarray, *, level: float = 0.95,
                         seed: int = 0) -> tuple[float, float]:
    """The central ``level`` interval of the ratio of two runs' errors, each the spread of
    its walkers' means (:func:`_walker_estimate`; ``trial`` and ``reference``: block means
    (n_blocks, n_walkers)), by a paired bootstrap over walkers (percentiles of
    :data:`RATIO_RESAMPLES` resamples): walker w of both runs drew the same random
    numbers, so a resample takes both together.  The error of a short run of heavy-tailed
    local energies is itself very uncertain, which Gaussian formulas understate; the
    bootstrap asks the walkers.  NaN with fewer than 3 walkers."""
    a, b = np.asarray(trial).mean(axis=0), np.asarray(reference).mean(axis=0)
    if a.size < 3 or a.shape != b.shape:
        return math.nan, math.nan
    idx = np.random.default_rng(seed).integers(0, a.size, (RATIO_RESAMPLES, a.size))
    spread_b = b[idx].std(axis=1, ddof=1)
    ratio = a[idx].std(axis=1, ddof=1)[spread_b > 0] / spread_b[spread_b > 0]
    lo, hi = np.quantile(ratio, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def _energy(st) -> tuple:
    """A run's energy (the mean of its production blocks), its error (the spread of the
    independent walkers' means, :func:`_walker_estimate`: reblocking the few block means
    of a short run misjudges it, by 2x either way on 20 blocks) and acceptance."""
    tr = st.trace()
    prod = tr[tr.phase == "production"]
    _, error = _walker_estimate(np.array(st.extra["walker_energy"]))
    return float(prod.energy.mean()), error, float(prod.acceptance.mean())


@dataclass
class Reference:
    """float64 samples, their local energies (n_blocks, n_walkers), the float64 run's
    energy, error and acceptance (the system's energy unit), and the range profile."""

    samples: np.ndarray
    local_energy: np.ndarray
    energy: float
    error: float
    acceptance: float
    profile: RangeProfile
    wall_time: float
    walker_energy: np.ndarray | None = None  # (n_blocks, n_walkers) block means
    ln_psi: np.ndarray | None = None  # (n_blocks, n_walkers) ln|psi| of the samples


def sample_ln_psi(system, samples: np.ndarray) -> np.ndarray:
    """ln|psi| (n_blocks, n_walkers) of ``system`` on ``samples`` (n_blocks, n_walkers, N,
    3), each block evaluated afresh, as :func:`paired_estimate` evaluates a trial."""
    return np.array([system.evaluate(Walkers(batch, None), step=b).ln_psi
                     for b, batch in enumerate(samples)])


def sample_reference(config: dict, progress: bool | None = False, system=None) -> Reference:
    """The float64 reference of ``config`` (validated input, see :mod:`fixedqmc.run`);
    ``system``: its float64 system if already built; ``progress``: show the blocks' progress
    (None: a bar on a terminal, plain lines otherwise, :mod:`fixedqmc.progress`)."""
    t0 = time.perf_counter()
    system = system or build_system({**config, "precision": "float64"})
    st, settings = _start(config, system)
    samples, energies = [], []
    bar = progress_bar(settings.total_blocks, unit="block", desc="float64 reference",
                       show=progress)

    def keep(state):
        if state.block > settings.equil_blocks:
            samples.append(state.positions.copy())
            energies.append(state.local_energy.copy())
        bar.update(1)

    try:
        run_vmc(system, st, settings, on_block=keep)
    finally:
        bar.close()
    energy, error, acc = _energy(st)
    samples = np.array(samples)
    profile = RangeProfile.from_system(system, samples)
    return Reference(samples, np.array(energies), energy, error, acc, profile,
                     time.perf_counter() - t0, np.array(st.extra["walker_energy"]),
                     sample_ln_psi(system, samples))


def trial_system(config: dict, precision: str, profile: RangeProfile):
    """The system of ``config`` at ``precision``, formats sized from the profile."""
    return build_system({**config, "precision": precision},
                        ranges=None if profile is None else profile.ranges())


def paired_estimate(system, reference: Reference, *, bounds: bool = True) -> dict:
    """Mean ``E_L(trial) - E_L(float64)`` over the reference samples and its error, the
    trial's energy on them, (where the reference has ln|psi|) the reweighted estimate
    (:func:`reweighted_estimate`) and, for a system that can be bounded
    (:func:`fixedqmc.qmc.bounds.bound`), the bound columns on every block of samples, each
    at its block's stochastic-rounding stream (:func:`bound_columns`; ``bounds=False``
    skips them).  A bounded block is not evaluated again: the bound run's trial values are
    the evaluation's, bit for bit, and its overflow events go to the system's log."""
    bounded = bounds and bounds_evaluations(system)
    energies, ln_psi, results = [], [], []
    for b, batch in enumerate(reference.samples):
        if bounded:
            res = bound(system, batch, step=b)
            system.log.merge(res.log)
            results.append(res)
            energy, psi = res.trial["local_energy"], res.trial["ln_psi"]
        else:
            ev = system.evaluate(Walkers(batch, None), step=b)
            energy = ev.local_energy
            psi = ev.ln_psi if reference.ln_psi is not None else None
        energies.append(energy)
        ln_psi.append(psi)
    diffs = [e - e64 for e, e64 in zip(energies, reference.local_energy)]
    out = {}
    for name, err, x in (("paired_diff", "paired_error", np.array(diffs)),
                         ("paired_energy", "paired_energy_error", np.array(energies))):
        out[name], out[err] = _walker_estimate(x)
    if reference.ln_psi is not None:
        out.update(reweighted_estimate(np.array(energies), np.array(ln_psi), reference))
    if bounded:
        out.update(bound_columns(results))
    return out


def bound_columns(results: list) -> dict:
    """The sweep columns of a system's bounds (:func:`fixedqmc.qmc.bounds.bound`), one
    result per block of samples: of the local energy's per-sample bound, its mean and
    largest value over the samples where it is finite (``bound_mean``, ``bound_max``; NaN
    if none is), the largest error measured (``bound_error_max``, the trial's local energy
    against the bound run's float64 one), the samples whose bound is infinite
    (``bound_unbounded``: ambiguous decisions or overflow), the samples whose error
    exceeds the bound (``bound_violations``: a defect) and the samples bounded
    (``bound_samples``)."""
    b = np.concatenate([np.ravel(r.bound["local_energy"]) for r in results])
    e = np.concatenate([np.ravel(r.error["local_energy"]) for r in results])
    finite = np.isfinite(b)
    return {"bound_mean": float(b[finite].mean()) if finite.any() else math.nan,
            "bound_max": float(b[finite].max()) if finite.any() else math.nan,
            "bound_error_max": float(e.max()) if e.size else math.nan,
            "bound_unbounded": int((~finite).sum()), "bound_violations": int((e > b).sum()),
            "bound_samples": int(b.size)}


def reweighted_estimate(energy: np.ndarray, ln_psi: np.ndarray, reference: Reference) -> dict:
    """What sampling at the trial precision does to the energy, judged on the float64
    samples (correlated sampling): each sample weighted by ``w = |psi_trial / psi_64|^2``
    (the ratio of the two sampled densities, up to their norms), the trial's energy as if
    sampled from ``|psi_trial|^2`` is ``sum w E_L(trial) / sum w``.

    ``energy``, ``ln_psi``: the trial's local energies and ln|psi| (n_blocks, n_walkers)
    on ``reference.samples``.  Returns ``reweighted_diff`` (that energy minus the float64
    samples' mean local energy), ``reweighted_error`` (from the spread of the independent
    walkers, the ratio linearised: walker j contributes ``(a_j - R c_j) / c - e_j`` with
    ``a_j``, ``c_j``, ``e_j`` its means of ``w E_L(trial)``, ``w``, ``E_L(float64)``, ``R``
    the ratio and ``c`` the mean weight) and ``reweighted_ess``, the effective sample
    fraction ``(sum w)^2 / (n sum w^2)`` (1 when the trial samples as float64 does; far
    below 1, the float64 samples do not cover what the trial samples and the estimate is
    not to be trusted).  Equal to the paired estimate when the trial's psi is float64's
    bit for bit (w = 1); NaN where a trial's ln|psi| is NaN."""
    x = 2.0 * (ln_psi - reference.ln_psi)
    if not (np.isfinite(x) | np.isneginf(x)).all() or not np.isfinite(x).any():
        return dict.fromkeys(("reweighted_diff", "reweighted_error", "reweighted_ess"),
                             math.nan)
    w = np.exp(x - x.max())
    e0 = reference.local_energy
    total, c, m0 = w.sum(), w.mean(), e0.mean()
    d1 = (w * (energy - e0)).sum() / total  # the paired part, weighted
    r0 = (w * e0).sum() / total  # bit for bit m0 when every w is 1
    z = w * (energy - e0 - d1) / c + (w * (e0 - r0) / c - (e0 - m0))
    return {"reweighted_diff": float(d1 + (r0 - m0)),  # + the float64 energy's move
            "reweighted_error": _walker_estimate(z)[1],
            "reweighted_ess": min(1.0, float(total ** 2 / (w.size * (w * w).sum())))}


def full_estimate(config: dict, system, reference: Reference) -> dict:
    """A VMC run at the trial precision (same seed, so walker w draws the same random
    numbers as the reference's walker w): energy, error, acceptance, and the difference
    from the float64 run with its error from the per-walker differences of the block
    means (:func:`_walker_estimate`; ``full_diff_independent_error``: the errors added in
    quadrature, as for independent runs; ``full_parted``: the walkers whose final positions
    differ from the float64 run's; ``full_error_ratio_low``, ``_high``: the 95 % interval of
    the run's error over the float64 run's, :func:`error_ratio_interval`)."""
    st, settings = _start(config, system)
    run_vmc(system, st, settings)
    energy, error, acc = _energy(st)
    walkers = np.array(st.extra["walker_energy"])
    diff = walkers - reference.walker_energy
    parted = np.any(st.positions != reference.samples[-1], axis=(1, 2))
    low, high = error_ratio_interval(walkers, reference.walker_energy)
    return {"full_energy": energy, "full_error": error, "full_acceptance": acc,
            "full_diff": energy - reference.energy,
            "full_diff_error": _walker_estimate(diff)[1],
            "full_diff_independent_error": float(np.hypot(error, reference.error)),
            "full_parted": int(parted.sum()), "full_error_ratio_low": low,
            "full_error_ratio_high": high}
