"""The state of a Monte Carlo run: everything needed to continue it bit for bit.

A driver (:mod:`fixedqmc.qmc.vmc`, :mod:`fixedqmc.qmc.dmc`) advances an :class:`MCState`
one block at a time; after each block the runner pickles it, and a run restarted from it
continues exactly as if it had not stopped: the walkers and their per-walker system state,
their cached values, the random generator's state, the step counter (which also selects the
stochastic-rounding stream of the kernels) and the trace of finished blocks are all here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.system import EnergyParts, Evaluation, Walkers


@dataclass
class MCState(EnergyParts):
    """Walkers and bookkeeping of a VMC or DMC run (energies in the system's unit).

    Attributes
    ----------
    walkers : Walkers
        positions (n_walkers, N, 3) and per-walker system state.
    ln_psi, sign : (n_walkers,) float64
        ln|psi| and the sign of psi of the current configurations.
    parts : dict of (n_walkers,) float64
        Energy parts of the local energy (``kinetic`` and the system's others).
    grad : (n_walkers, N, 3) or None
        grad ln|psi| (DMC drift).
    step_size : float
        VMC move size (length unit), tuned during equilibration; DMC: the time step.
    block, n_steps : int
        Finished blocks and steps (kernel calls are numbered from ``n_steps``).
    rng : numpy.random.Generator
    rows : list of dict
        One row per finished block (the trace).
    extra : dict
        Driver-specific values (DMC: trial energy, running estimate, walker ages).
    """

    walkers: Walkers
    ln_psi: np.ndarray
    sign: np.ndarray
    parts: dict
    grad: np.ndarray | None
    step_size: float
    rng: np.random.Generator
    block: int = 0
    n_steps: int = 0
    rows: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def positions(self) -> np.ndarray:
        return self.walkers.positions

    @property
    def n_walkers(self) -> int:
        return self.walkers.n_walkers

    def take(self, index) -> None:
        """Keep (or repeat) walkers by a boolean mask or an index array: positions, system
        state, cached values and per-walker driver arrays alike."""
        self.walkers = self.walkers.take(index)
        self.ln_psi = self.ln_psi[index]
        self.sign = self.sign[index]
        self.parts = {k: v[index] for k, v in self.parts.items()}
        if self.grad is not None:
            self.grad = self.grad[index]
        if "age" in self.extra:
            self.extra["age"] = self.extra["age"][index]

    def trace(self) -> pd.DataFrame:
        """The per-block trace as a DataFrame."""
        return pd.DataFrame(self.rows)


def set_from(state: MCState, ev: Evaluation, mask: np.ndarray | None = None) -> None:
    """Copy an :class:`Evaluation` into the cached values (for the walkers in ``mask``)."""
    m = slice(None) if mask is None else mask
    state.ln_psi[m] = ev.ln_psi[m]
    state.sign[m] = ev.sign[m]
    for k, v in state.parts.items():
        v[m] = ev.parts[k][m]
    if state.grad is not None and ev.grad is not None:
        state.grad[m] = ev.grad[m]


#: trace columns that are not means of local-energy parts (bookkeeping, counts, diagnostics)
ENERGY_COLUMNS_EXCLUDED = ("block", "phase", "acceptance", "step_size", "walkers", "tau",
                           "tau_eff", "population", "weight", "e_trial", "sigma",
                           "node_crossings", "energy_cuts", "persistent")


def energy_columns(parts: dict, weights: np.ndarray | None = None) -> dict:
    """Trace columns of one step: ``energy``, ``potential`` (all but kinetic), ``kinetic``
    and every other named part, as (weighted) sums over walkers."""
    w = 1.0 if weights is None else weights
    out = {"energy": float(np.sum(w * sum(parts.values())))}
    out["potential"] = float(np.sum(w * sum(v for k, v in parts.items() if k != "kinetic")))
    for k, v in parts.items():
        if k not in out:
            out[k] = float(np.sum(w * v))
    return out


def add_into(total: dict, step: dict) -> None:
    for k, v in step.items():
        total[k] = total.get(k, 0.0) + v


def refresh(system, st: MCState) -> dict:
    """The recompute of the per-walker system state (cadence: the run input): rebuild it
    from the positions, re-evaluate, and return the diagnostics of the incremental updates
    since the last one: the system's own (``recompute_<name>``) and the largest change of
    ln|psi| between the cached and the fresh value (``recompute_ln_psi_drift``).  Systems
    without per-walker state have nothing to recompute: ``{}``."""
    if not st.walkers.state:
        return {}
    diag = system.recompute(st.walkers, step=st.n_steps)
    ev = system.evaluate(st.walkers, step=st.n_steps + 1)
    st.n_steps += 2
    drift = float(np.max(np.abs(ev.ln_psi - st.ln_psi))) if st.n_walkers else 0.0
    set_from(st, ev)
    out = {f"recompute_{k}": float(v) for k, v in diag.items()}
    out["recompute_ln_psi_drift"] = drift
    return out


def _zero_psi_cause(system, before: dict) -> str:
    """Why psi is 0 at a starting configuration: the variables that overflowed in its
    evaluation (their formats cannot hold their values), else the geometry."""
    hot = {k: v - before.get(k, 0) for k, v in system.log.events.items()
           if v > before.get(k, 0)}
    if not hot:
        return (" (outside the trial function's support, or on a node); start from another "
                "geometry or seed")
    formats = system.formats()
    worst = sorted(hot, key=hot.get, reverse=True)[:6]
    named = ", ".join(f"{k} ({formats.get(k, '?')}, {hot[k]} events)" for k in worst)
    more = f" and {len(hot) - len(worst)} more" if len(hot) > len(worst) else ""
    return (f" at this precision: values overflowed the formats of {named}{more}; those "
            "formats cannot hold these variables' values: give them more integer bits, or "
            "use fixed:W (integer bits sized from the declared or profiled ranges)")


def new_state(system, positions: np.ndarray, step_size: float, rng: np.random.Generator, *,
              with_grad: bool = False) -> MCState:
    """A state at ``positions`` (wrapped by the system) with every cached value and the
    per-walker system state computed (kernel call number 0)."""
    walkers = Walkers(system.wrap(np.array(positions, np.float64)), None)
    before = dict(system.log.events)
    ev = system.evaluate(walkers, step=0)
    bad = np.flatnonzero((ev.outside > 0) | ~np.isfinite(ev.ln_psi))
    if bad.size:
        raise FixedQMCError(f"initial configuration of walker {bad[0]} has psi = 0"
                            + _zero_psi_cause(system, before))
    walkers.state = ev.state if ev.state is not None else {}
    return MCState(walkers, ev.ln_psi.copy(), ev.sign.copy(),
                   {k: np.array(v, np.float64) for k, v in ev.parts.items()},
                   ev.grad.copy() if with_grad else None, float(step_size), rng, n_steps=1)
