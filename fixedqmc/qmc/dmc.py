"""Diffusion Monte Carlo with importance sampling and the fixed-node approximation,
precision-agnostic.

For ``H = -D sum_i lap_i + V`` (``D = hbar**2 / 2m`` in the system's energy x length**2,
energies in its energy unit, imaginary time ``tau`` in 1/energy) one step of every walker
is (Reynolds et al. 1982; Umrigar, Nightingale & Runge (UNR), J. Chem. Phys. 99, 2865
(1993)), with ``t = 2 D tau`` (length**2):

1. drift-diffusion ``R' = R + t g(R) + sqrt(t) chi`` (chi standard normal), with the drift
   ``g = grad ln|psi|`` limited per particle as UNR Eq. 33 (``a = 1``):
   ``g -> g (-1 + sqrt(1 + 2 |g|**2 t)) / (|g|**2 t)``; ``R'`` is wrapped by the system
   (psi is invariant under the wrap; the Green's function uses the unwrapped move);
2. Metropolis accept/reject with
   ``p = min(1, |psi(R')|**2 G(R' -> R) / (|psi(R)|**2 G(R -> R')))``,
   ``G(R -> R') = exp(-|R' - R - t g(R)|**2 / (2 t))``; ``p = 0`` outside the trial
   function's support and **when the sign of psi changes** (a node crossing: the move is
   rejected and counted, which imposes the trial function's nodes: fixed-node DMC);
   with ``move = "single"`` the particles are moved one at a time, each with its own
   drift, Green's function and sign test (:meth:`System.propose` / :meth:`System.accept`);
3. weight ``w = exp(tau_eff (E_T - [p (E_c(R') + E_c(R)) / 2 + (1 - p) E_c(R)]))`` with
   ``tau_eff = tau sum(p dR**2) / sum(dR**2)`` over the walkers of the step and
   ``E_c = E_est + clip(E_L - E_est, -E_cut, E_cut)``: the **local-energy cutoff**
   ``E_cut = energy_cutoff x sigma`` (sigma: the standard deviation of E_L over the
   population, from the starting walkers and then the mean over the previous block's
   steps, so that an extreme value is cut by a sigma it has not inflated; a cutoff in the
   spirit of UNR and QMCPACK), so a rare extreme E_L cannot give one walker a
   huge weight; its bias vanishes as tau -> 0 (the weight factor of a cut walker is at
   most ``exp(tau E_cut)``).  Walkers whose moves were rejected for more than ``max_age``
   consecutive steps (*persistent* walkers, stuck where E_L is extreme) get
   ``w = min(w, 1)``: they cannot multiply.  Every cut and every persistent walker is
   counted per block;
4. branching: each walker continues as ``floor(w + u)`` copies (u uniform, at most
   ``max_copies``), so the population fluctuates around ``target_population`` under the
   trial energy ``E_T = E_est - (feedback / tau) ln(P / P_target)``, ``E_est`` the mean of
   the mixed estimator over the blocks so far (the first block: a running mean).

Every stage starts at the target population: walkers inherited from an earlier stage are
resampled to it (uniformly, without replacement when there are enough).  The mixed
estimator of a step is ``sum w E_L / sum w`` (E_L after the move); a block records its
weighted means of E_L and every energy part, the acceptance (the share of proposed moves
accepted: of walkers, or of single-particle moves), population, ``tau_eff`` and
the counts of node crossings, energy cuts and persistent walkers.  For bosons the mixed
estimator converges to the exact ground-state energy as tau -> 0
(:func:`timestep_extrapolation`); for fermions to the fixed-node energy.

The first block's row also records the mean and the standard deviation of E_L over the
walkers the stage started from (``start_energy``, ``start_sigma``): with the stage's energy
and its equilibration time they bound from below the bias its production can still carry
(:func:`projection_bias_bound`).  Equilibration and production can be given in imaginary
time rather than blocks (:func:`blocks_for_time`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import check_int
from fixedqmc.qmc.state import (MCState, add_into, energy_columns, new_state, refresh,
                                set_from)
from fixedqmc.qmc.system import Walkers, commit_move
from fixedqmc.qmc.vmc import MOVES


@dataclass(frozen=True)
class DMCSettings:
    """Time step (1/energy), blocks, moves, population control and the safeguards of a
    DMC run."""

    tau: float = 0.002
    n_blocks: int = 20
    equil_blocks: int = 5
    steps_per_block: int = 20  # as VMC's: a run input's one method.steps_per_block
    target_population: int | None = None  # default: the initial number of walkers
    feedback: float = 0.1
    max_copies: int = 3
    move: str = "all"
    energy_cutoff: float = 10.0  # in units of sigma(E_L); 0: no cutoff
    max_age: int = 50
    recompute_every: int = 1

    def __post_init__(self):
        if not (isinstance(self.tau, (int, float)) and math.isfinite(self.tau) and self.tau > 0):
            raise FixedQMCError(f"tau (DMC time step) must be positive, got {self.tau!r}")
        for key in ("n_blocks", "steps_per_block", "max_copies", "max_age", "recompute_every"):
            check_int(key, getattr(self, key))
        check_int("equil_blocks", self.equil_blocks, 0)
        if self.target_population is not None:
            check_int("target_population", self.target_population)
        if not self.feedback > 0:
            raise FixedQMCError(f"feedback must be positive, got {self.feedback!r}")
        if self.move not in MOVES:
            raise FixedQMCError(f"move: {self.move!r} is not one of {', '.join(MOVES)}")
        if not (math.isfinite(self.energy_cutoff) and self.energy_cutoff >= 0):
            raise FixedQMCError("energy_cutoff (in sigmas of E_L) must be >= 0, got "
                                f"{self.energy_cutoff!r}")

    @property
    def total_blocks(self) -> int:
        return self.equil_blocks + self.n_blocks


def start_dmc(system, positions: np.ndarray, settings: DMCSettings,
              rng: np.random.Generator) -> MCState:
    """The initial state: ``positions`` resampled to the target population (when one is
    set and differs), every cached value, gradient and per-walker state computed."""
    positions = np.asarray(positions, np.float64)
    inherited = positions.shape[0]
    target = settings.target_population or inherited
    if inherited != target:
        idx = rng.choice(inherited, target, replace=target > inherited)
        positions = positions[np.sort(idx)]
    st = new_state(system, positions, settings.tau, rng, with_grad=True)
    e0 = float(st.local_energy.mean())
    sigma = spread(st.local_energy)
    st.extra.update(e_trial=e0, e_est=e0, target=target, e_sum=0.0, w_sum=0.0,
                    sigma=sigma, age=np.zeros(st.n_walkers, np.int64),
                    resampled_from=inherited if inherited != target else 0,
                    start_energy=e0, start_sigma=sigma)
    return st


def spread(e: np.ndarray) -> float:
    """The standard deviation of the local energies over the walkers."""
    return float(np.std(e)) if e.size > 1 else 0.0


def _limited_drift(grad: np.ndarray, t: float) -> np.ndarray:
    """UNR Eq. 33 per particle; ``grad`` (..., 3)."""
    g2 = np.sum(grad * grad, axis=-1, keepdims=True)
    x = g2 * t
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(x > 1e-12, (np.sqrt(1.0 + 2.0 * x) - 1.0) / np.where(x > 0, x, 1.0), 1.0)
    return grad * f


def _log_green_ratio(chi, back, t, axes):
    """ln G(R' -> R) - ln G(R -> R') with ``chi`` the forward noise, ``back`` the reverse
    displacement minus its drift."""
    return (np.sum(chi * chi, axis=axes) - np.sum(back * back, axis=axes) / t) / 2.0


def _probability(log_p, ok):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(ok, np.exp(np.minimum(log_p, 0.0)), 0.0)


def _move_all(system, st: MCState, t: float):
    """All-particle drift-diffusion move; returns (p, accepted, dR**2, node crossings,
    E_L of the proposed configurations (the old one where p = 0))."""
    rng = st.rng
    chi = rng.standard_normal(st.positions.shape)
    raw = st.positions + t * _limited_drift(st.grad, t) + math.sqrt(t) * chi
    prop = system.wrap(raw)
    ev = system.evaluate(Walkers(prop, None), step=st.n_steps)
    st.n_steps += 1
    back = st.positions - raw - t * _limited_drift(ev.grad, t)
    log_p = 2.0 * (ev.ln_psi - st.ln_psi) + _log_green_ratio(chi, back, t, (1, 2))
    inside = (ev.outside == 0) & np.isfinite(ev.local_energy)
    cross = inside & (ev.sign != st.sign)
    p = _probability(log_p, inside & ~cross)
    dr2 = np.sum((raw - st.positions) ** 2, axis=(1, 2))
    ok = rng.random(st.n_walkers) < p
    e_prop = np.where(p > 0, ev.local_energy, st.local_energy)
    st.walkers.put(ok, Walkers(prop, ev.state))
    set_from(st, ev, ok)
    return p, ok, dr2, int(cross.sum()), e_prop


def _move_single(system, st: MCState, t: float):
    """Particle-by-particle drift-diffusion moves, then one evaluation of the walkers.
    Returns the acceptance-weighted share of each walker's displacement (for tau_eff),
    whether any of its moves was accepted, the share of its moves accepted, dR**2, node
    crossings and E_L before."""
    rng = st.rng
    nw, n = st.positions.shape[:2]
    p_sum = np.zeros(nw)
    dr2 = np.zeros(nw)
    moved = np.zeros(nw, bool)
    n_ok = np.zeros(nw)
    crossings = 0
    for i in range(n):
        here = st.walkers.positions[:, i].copy()
        g_old = _grad_of(system, st, i, here)
        chi = rng.standard_normal((nw, 3))
        new = here + t * _limited_drift(g_old, t) + math.sqrt(t) * chi
        prop = system.propose(st.walkers, i, new, step=st.n_steps)
        st.n_steps += 1
        back = here - new - t * _limited_drift(prop.grad, t)
        log_p = 2.0 * prop.log_ratio + _log_green_ratio(chi, back, t, 1)
        inside = prop.outside == 0
        cross = inside & (prop.sign < 0)
        p = _probability(log_p, inside & ~cross)
        ok = rng.random(nw) < p
        commit_move(system, st.walkers, i, ok, prop)
        d2 = np.sum((new - here) ** 2, axis=1)
        p_sum += p * d2
        dr2 += d2
        moved |= ok
        n_ok += ok
        crossings += int(cross.sum())
    st.walkers.positions = system.wrap(st.positions)
    e_old = st.local_energy.copy()
    ev = system.evaluate(st.walkers, step=st.n_steps)
    st.n_steps += 1
    set_from(st, ev)
    # p of the walker: its acceptance-weighted share of the displacement
    with np.errstate(invalid="ignore"):
        p_w = np.where(dr2 > 0, p_sum / dr2, 0.0)
    return p_w, moved, n_ok / n, dr2, crossings, e_old


def _grad_of(system, st: MCState, i: int, here: np.ndarray) -> np.ndarray:
    """grad_i ln|psi| at the current position of particle i (a zero move's proposal)."""
    g = system.propose(st.walkers, i, here, step=st.n_steps).grad
    st.n_steps += 1
    if g is None:
        raise FixedQMCError(f"DMC with move = 'single' needs the gradient at a proposed "
                            f"position, which this system ({type(system).__name__}) does "
                            "not provide; use move = 'all'")
    return g


def dmc_step(system, st: MCState, settings: DMCSettings) -> dict:
    """One drift-diffusion-branching step of every walker; returns the step's sums."""
    tau = settings.tau
    t = 2.0 * system.hbar2_2m * tau
    x = st.extra
    if settings.move == "all":  # weight: expectation over accept/reject (UNR)
        e_old = st.local_energy.copy()
        p, ok, dr2, crossings, e_new = _move_all(system, st, t)
        accepted = ok
        p_branch = p
    else:  # weight: E_L before and after the sweep
        p, ok, accepted, dr2, crossings, e_old = _move_single(system, st, t)
        e_new = st.local_energy
        p_branch = np.ones_like(p)
    total = float(np.sum(dr2))
    tau_eff = tau * float(np.sum(p * dr2) / total) if total > 0 else tau
    # local-energy cutoff in the branching weight
    e_cut = settings.energy_cutoff * x["sigma"]
    e_est = x["e_est"]
    if e_cut > 0:
        lo, hi = e_est - e_cut, e_est + e_cut
        cut = (e_new < lo) | (e_new > hi) | (e_old < lo) | (e_old > hi)
        c_new, c_old = np.clip(e_new, lo, hi), np.clip(e_old, lo, hi)
    else:
        cut = np.zeros(st.n_walkers, bool)
        c_new, c_old = e_new, e_old
    s_mean = p_branch * 0.5 * (c_new + c_old) + (1 - p_branch) * c_old
    w = np.exp(np.clip(tau_eff * (x["e_trial"] - s_mean), -50.0, 50.0))
    age = np.where(ok, 0, x["age"] + 1)
    stuck = age > settings.max_age
    w = np.where(stuck, np.minimum(w, 1.0), w)
    x["age"] = age
    sums = {"w": float(w.sum()), **energy_columns(st.parts, w), "acc": float(np.mean(accepted)),
            "tau_eff": tau_eff, "node_crossings": crossings, "energy_cuts": int(cut.sum()),
            "persistent": int(stuck.sum()),
            "sigma": spread(st.local_energy)}
    # branching
    copies = np.minimum(np.floor(w + st.rng.random(st.n_walkers)).astype(np.int64),
                        settings.max_copies)
    if copies.sum() == 0:
        copies[np.argmax(w)] = 1
    st.take(np.repeat(np.arange(st.n_walkers), copies))
    x["e_sum"] += sums["energy"]
    x["w_sum"] += sums["w"]
    if st.block == 0:
        x["e_est"] = x["e_sum"] / x["w_sum"]
    x["e_trial"] = x["e_est"] - settings.feedback / tau * math.log(st.n_walkers / x["target"])
    return sums


COUNTS = ("node_crossings", "energy_cuts", "persistent")


def dmc_block(system, st: MCState, settings: DMCSettings) -> dict:
    """Run one block; append and return its trace row."""
    sums: dict = {}
    pop = 0.0
    n = settings.steps_per_block
    for _ in range(n):
        add_into(sums, dmc_step(system, st, settings))
        pop += st.n_walkers
    w = sums.pop("w")
    equil = st.block < settings.equil_blocks
    energies = {k: sums.pop(k) / w for k in list(sums) if k not in
                ("acc", "tau_eff", "sigma", *COUNTS)}
    row = {"block": st.block, "phase": "equilibration" if equil else "production",
           **energies, "acceptance": sums["acc"] / n, "tau": settings.tau,
           "tau_eff": sums["tau_eff"] / n, "population": pop / n, "weight": w / n,
           "e_trial": st.extra["e_trial"], **{k: int(sums[k]) for k in COUNTS},
           "sigma": sums["sigma"] / n}
    if st.block == 0 and "start_energy" in st.extra:
        row.update(start_energy=st.extra["start_energy"], start_sigma=st.extra["start_sigma"])
    st.extra["sigma"] = row["sigma"]
    st.block += 1
    prod = [r["energy"] for r in st.rows + [row] if r["phase"] == "production"] or [
        r["energy"] for r in st.rows + [row]]
    st.extra["e_est"] = float(np.mean(prod))
    if st.block % settings.recompute_every == 0:
        row.update(refresh(system, st))
    st.rows.append(row)
    return row


def run_dmc(system, st: MCState, settings: DMCSettings, *, on_block=None) -> MCState:
    """Advance ``st`` to ``settings.total_blocks`` blocks; ``on_block(st)`` after each."""
    while st.block < settings.total_blocks:
        dmc_block(system, st, settings)
        if on_block is not None:
            on_block(st)
    return st


START_COLUMNS = ("start_energy", "start_sigma")  # in the first block's row only


def blocks_for_time(time: float, tau: float, steps_per_block: int) -> int:
    """The number of blocks of ``steps_per_block`` steps of ``tau`` that cover an imaginary
    time ``time`` (``time`` and ``tau`` in the system's 1/energy):
    ``ceil(time / (tau * steps_per_block))``, where a quotient within a relative 1e-9 of a
    whole number counts as that number (``4 / (0.02 * 10)`` is 20 blocks, not 21)."""
    x = time / (tau * steps_per_block)
    whole = round(x)
    if abs(x - whole) <= 1e-9 * max(1.0, x):
        return whole
    return math.ceil(x)


def projection_bias_bound(start_energy: float, start_sigma: float, energy: float,
                          time: float) -> dict:
    """A lower bound on the bias a DMC stage's mixed estimator still carries after an
    imaginary time ``time`` (1/energy) of projection from walkers whose local energies
    have mean ``start_energy`` and standard deviation ``start_sigma`` (energy), the stage
    converging to ``energy``.

    Returns ``{"excess", "rate", "bound"}``: the starting excess
    ``g = start_energy - energy``, the rate ``kappa = (sigma**2 + g**2) / g`` (1/time) and
    ``bound = g exp(-kappa time)`` (energy); ``bound = 0`` (and ``rate`` NaN) when
    ``g <= 0``, e.g. a stage that starts from an earlier stage's projected walkers.

    Why it is a bound.  Write the trial function in eigenstates of the (fixed-node,
    time-step) propagator, ``psi_T = sum_i c_i phi_i``, excitations ``D_i = E_i - E_0``,
    ``a_i = |c_i|**2``.  Walkers that start from ``|psi_T|**2`` (a VMC stage) give after a
    time t the mixed estimate

        E(t) - E_0 = N(t) / M(t),  N(t) = sum_i a_i D_i exp(-D_i t),  M(t) = sum_i a_i exp(-D_i t).

    M(t) <= M(0), and exp is convex, so Jensen's inequality over the weights
    ``a_i D_i / N(0)`` gives ``N(t) >= N(0) exp(-kappa t)`` with
    ``kappa = sum a_i D_i**2 / sum a_i D_i = <(H - E_0)**2> / <H - E_0>`` (expectations in
    psi_T).  In observed quantities ``<H - E_0> = g`` and
    ``<(H - E_0)**2> = sigma**2 + g**2`` (sigma: the spread of E_L under ``|psi_T|**2``),
    hence ``E(t) - E_0 >= g exp(-kappa t)``.  kappa is the mean excitation energy of the
    excess, weighted by each component's share of it; components of smaller gap decay
    more slowly, so the true bias can be larger, never smaller: a bound above the
    stage's error bar proves the equilibration too short, while one below it is a
    necessary, not a sufficient, condition.  (``time * sigma`` alone is no criterion:
    for a good trial function ``kappa ~ sigma**2 / g`` and the time needed is
    ``ln(g / error) / kappa``, which 1/sigma can over- or underestimate by any factor.)
    For walkers that start elsewhere (an earlier stage's population, or the initial
    positions without a VMC stage) the weights need not be ``|c_i|**2`` and the bound is
    an estimate.
    """
    g = float(start_energy) - float(energy)
    s2 = float(start_sigma) ** 2
    if not (math.isfinite(g) and math.isfinite(s2) and g > 0):
        return {"excess": g, "rate": float("nan"), "bound": 0.0}
    rate = (s2 + g * g) / g
    return {"excess": g, "rate": rate, "bound": g * math.exp(-rate * max(float(time), 0.0))}


def timestep_extrapolation(taus, energies, errors) -> dict:
    """Weighted least-squares line ``E(tau) = E_0 + slope tau`` through DMC energies at
    several time steps: ``{"energy", "error", "slope", "slope_error", "chi2"}``.
    Needs at least two distinct time steps and positive errors."""
    tau = np.asarray(taus, np.float64)
    e = np.asarray(energies, np.float64)
    err = np.asarray(errors, np.float64)
    if tau.size < 2 or np.unique(tau).size < 2:
        raise FixedQMCError("time-step extrapolation needs at least two distinct time steps")
    if not (np.all(np.isfinite(err)) and np.all(err > 0)):
        raise FixedQMCError(f"errors must be positive and finite, got {err.tolist()}")
    a = np.stack([np.ones_like(tau), tau], axis=1) / err[:, None]
    coef, *_ = np.linalg.lstsq(a, e / err, rcond=None)
    cov = np.linalg.inv(a.T @ a)
    chi2 = float(np.sum(((a @ coef) - e / err) ** 2))
    return {"energy": float(coef[0]), "error": float(math.sqrt(cov[0, 0])),
            "slope": float(coef[1]), "slope_error": float(math.sqrt(cov[1, 1])), "chi2": chi2}
