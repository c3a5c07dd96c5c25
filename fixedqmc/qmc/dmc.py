"""Diffusion Monte Carlo with importance sampling, precision-agnostic.

For ``H = -D sum_i lap_i + V`` (``D = hbar**2 / 2m`` in K A**2, energies in K, imaginary
time ``tau`` in 1/K) one step of every walker is (Reynolds et al. 1982; Umrigar, Nightingale
& Runge, J. Chem. Phys. 99, 2865 (1993)), with ``t = 2 D tau`` (A**2):

1. drift-diffusion ``R' = R + t g(R) + sqrt(t) chi`` (chi standard normal), with the
   drift ``g = grad ln psi`` limited per atom as UNR Eq. 33 (``a = 1``):
   ``g -> g (-1 + sqrt(1 + 2 |g|**2 t)) / (|g|**2 t)``;
2. Metropolis accept/reject with
   ``p = min(1, |psi(R')|**2 G(R' -> R) / (|psi(R)|**2 G(R -> R')))``,
   ``G(R -> R') = exp(-|R' - R - t g(R)|**2 / (2 t))`` (p = 0 outside the trial
   function's support);
3. weight ``w = exp(tau_eff (E_T - [p (E_L(R') + E_L(R)) / 2 + (1 - p) E_L(R)]))`` with
   ``tau_eff = tau sum(p dR**2) / sum(dR**2)`` over the walkers of the step;
4. branching: each walker continues as ``floor(w + u)`` copies (u uniform, at most
   ``max_copies``), so the population fluctuates around ``target_population`` under the
   trial energy ``E_T = E_est - (feedback / tau) ln(P / P_target)``, ``E_est`` the mean of
   the mixed estimator over the blocks so far (the first block: a running mean).

The mixed estimator of a step is ``sum w E_L / sum w`` (E_L after the move); a block
records its weighted means of E_L, V and K, the acceptance, population and ``tau_eff``.
For bosons the mixed estimator of E converges to the exact ground-state energy as
tau -> 0 (:func:`timestep_extrapolation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.state import MCState, new_state, set_from
from fixedqmc.qmc.walkers import centre


@dataclass(frozen=True)
class DMCSettings:
    """Time step (1/K), blocks and population control of a DMC run."""

    tau: float = 0.002
    n_blocks: int = 20
    equil_blocks: int = 5
    steps_per_block: int = 50
    target_population: int | None = None  # default: the initial number of walkers
    feedback: float = 0.1
    max_copies: int = 3

    def __post_init__(self):
        if not (isinstance(self.tau, (int, float)) and math.isfinite(self.tau) and self.tau > 0):
            raise FixedQMCError(f"tau (DMC time step, 1/K) must be positive, got {self.tau!r}")
        for key in ("n_blocks", "steps_per_block", "max_copies"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise FixedQMCError(f"{key} must be a positive integer, got {v!r}")
        if not isinstance(self.equil_blocks, (int, np.integer)) or self.equil_blocks < 0:
            raise FixedQMCError(f"equil_blocks must be an integer >= 0, got {self.equil_blocks!r}")
        if self.target_population is not None and self.target_population < 1:
            raise FixedQMCError("target_population must be a positive integer, got "
                                f"{self.target_population!r}")
        if not self.feedback > 0:
            raise FixedQMCError(f"feedback must be positive, got {self.feedback!r}")

    @property
    def total_blocks(self) -> int:
        return self.equil_blocks + self.n_blocks


def start_dmc(system, positions: np.ndarray, settings: DMCSettings,
              rng: np.random.Generator) -> MCState:
    st = new_state(system, centre(np.asarray(positions, np.float64)), settings.tau, rng,
                   with_grad=True)
    e0 = float(st.local_energy.mean())
    st.extra.update(e_trial=e0, e_est=e0, target=settings.target_population or st.n_walkers,
                    e_sum=0.0, w_sum=0.0)
    return st


def _limited_drift(grad: np.ndarray, t: float) -> np.ndarray:
    g2 = np.sum(grad * grad, axis=-1, keepdims=True)
    x = g2 * t
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.where(x > 1e-12, (np.sqrt(1.0 + 2.0 * x) - 1.0) / np.where(x > 0, x, 1.0), 1.0)
    return grad * f


def dmc_step(system, st: MCState, settings: DMCSettings) -> dict:
    """One drift-diffusion-branching step of every walker; returns the step's sums."""
    tau = settings.tau
    t = 2.0 * system.hbar2_2m * tau
    rng = st.rng
    drift = t * _limited_drift(st.grad, t)
    chi = rng.standard_normal(st.positions.shape)
    prop = st.positions + drift + math.sqrt(t) * chi
    shift = prop.mean(axis=1, keepdims=True)
    prop = prop - shift  # re-centre (translation invariant: the old walker moves with it)
    old = st.positions - shift
    ev = system.evaluate(prop, step=st.n_steps)
    st.n_steps += 1
    back = old - prop - t * _limited_drift(ev.grad, t)
    log_g = (np.sum(chi * chi, axis=(1, 2)) - np.sum(back * back, axis=(1, 2)) / t) / 2.0
    log_p = 2.0 * (ev.ln_psi - st.ln_psi) + log_g
    with np.errstate(over="ignore"):
        p = np.where(ev.outside == 0, np.exp(np.minimum(log_p, 0.0)), 0.0)
    p = np.where(np.isfinite(ev.local_energy), p, 0.0)
    dr2 = np.sum((prop - old) ** 2, axis=(1, 2))
    tau_eff = tau * float(np.sum(p * dr2) / np.sum(dr2))
    e_old = st.local_energy
    e_new = np.where(p > 0, ev.local_energy, e_old)
    s_mean = p * 0.5 * (e_new + e_old) + (1 - p) * e_old
    w = np.exp(np.clip(tau_eff * (st.extra["e_trial"] - s_mean), -50.0, 50.0))
    ok = rng.random(st.n_walkers) < p
    st.positions = old
    st.positions[ok] = prop[ok]
    set_from(st, ev, ok)
    # estimator: weighted, after the move
    e_l = st.local_energy
    sums = {"w": float(w.sum()), "e": float(np.sum(w * e_l)),
            "v": float(np.sum(w * st.potential)), "k": float(np.sum(w * st.kinetic)),
            "acc": float(ok.mean()), "tau_eff": tau_eff}
    # branching
    copies = np.minimum(np.floor(w + rng.random(st.n_walkers)).astype(np.int64),
                        settings.max_copies)
    if copies.sum() == 0:
        copies[np.argmax(w)] = 1
    st.take(np.repeat(np.arange(st.n_walkers), copies))
    x = st.extra
    x["e_sum"] += sums["e"]
    x["w_sum"] += sums["w"]
    if st.block == 0:
        x["e_est"] = x["e_sum"] / x["w_sum"]
    x["e_trial"] = x["e_est"] - settings.feedback / tau * math.log(st.n_walkers / x["target"])
    return sums


def dmc_block(system, st: MCState, settings: DMCSettings) -> dict:
    """Run one block; append and return its trace row."""
    w = e = v = k = acc = te = pop = 0.0
    n = settings.steps_per_block
    for _ in range(n):
        s = dmc_step(system, st, settings)
        w += s["w"]
        e += s["e"]
        v += s["v"]
        k += s["k"]
        acc += s["acc"]
        te += s["tau_eff"]
        pop += st.n_walkers
    equil = st.block < settings.equil_blocks
    row = {"block": st.block, "phase": "equilibration" if equil else "production",
           "energy": e / w, "potential": v / w, "kinetic": k / w, "acceptance": acc / n,
           "tau": settings.tau, "tau_eff": te / n, "population": pop / n,
           "weight": w / n, "e_trial": st.extra["e_trial"]}
    st.rows.append(row)
    st.block += 1
    prod = [r["energy"] for r in st.rows if r["phase"] == "production"] or [
        r["energy"] for r in st.rows]
    st.extra["e_est"] = float(np.mean(prod))
    return row


def run_dmc(system, st: MCState, settings: DMCSettings, *, on_block=None) -> MCState:
    """Advance ``st`` to ``settings.total_blocks`` blocks; ``on_block(st)`` after each."""
    while st.block < settings.total_blocks:
        dmc_block(system, st, settings)
        if on_block is not None:
            on_block(st)
    return st


def timestep_extrapolation(taus, energies, errors) -> dict:
    """Weighted least-squares line ``E(tau) = E_0 + slope tau`` through DMC energies at
    several time steps: ``{"energy", "error", "slope", "slope_error", "chi2"}`` (K, 1/K).
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
