"""The state of a Monte Carlo run: everything needed to continue it bit for bit.

A driver (:mod:`fixedqmc.qmc.vmc`, :mod:`fixedqmc.qmc.dmc`) advances an :class:`MCState`
one block at a time; after each block the state can be saved (:mod:`fixedqmc.qmc.checkpoint`)
and a run restarted from it continues exactly as if it had not stopped: the walkers, their
cached values, the random generator's state, the step counter (which also selects the
stochastic-rounding stream of the kernels) and the trace of finished blocks are all here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class MCState:
    """Walkers and bookkeeping of a VMC or DMC run.

    Attributes
    ----------
    positions : (n_walkers, n_atoms, 3) float64
    ln_psi, potential, kinetic : (n_walkers,) float64
        Cached kernel results of the current configurations (K for energies).
    grad : (n_walkers, n_atoms, 3) or None
        grad ln psi (DMC drift).
    step_size : float
        VMC move size (A) — tuned during equilibration; DMC: the time step (1/K).
    block : int
        Number of finished blocks.
    n_steps : int
        Number of finished steps (kernel calls are numbered from it).
    rng : numpy.random.Generator
    rows : list of dict
        One row per finished block (the trace).
    extra : dict
        Driver-specific values (DMC: trial energy, running estimate).
    """

    positions: np.ndarray
    ln_psi: np.ndarray
    potential: np.ndarray
    kinetic: np.ndarray
    grad: np.ndarray | None
    step_size: float
    rng: np.random.Generator
    block: int = 0
    n_steps: int = 0
    rows: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def local_energy(self) -> np.ndarray:
        return self.potential + self.kinetic

    @property
    def n_walkers(self) -> int:
        return self.positions.shape[0]

    def take(self, mask_or_index) -> None:
        """Keep (or repeat) walkers by a boolean mask or an index array."""
        self.positions = self.positions[mask_or_index]
        self.ln_psi = self.ln_psi[mask_or_index]
        self.potential = self.potential[mask_or_index]
        self.kinetic = self.kinetic[mask_or_index]
        if self.grad is not None:
            self.grad = self.grad[mask_or_index]

    def trace(self) -> pd.DataFrame:
        """The per-block trace as a DataFrame."""
        return pd.DataFrame(self.rows)


def set_from(state: MCState, ev, mask: np.ndarray | None = None) -> None:
    """Copy a system :class:`Evaluation` into the state (for the walkers in ``mask``)."""
    m = slice(None) if mask is None else mask
    state.ln_psi[m] = ev.ln_psi[m]
    state.potential[m] = ev.potential[m]
    state.kinetic[m] = ev.kinetic[m]
    if state.grad is not None and ev.grad is not None:
        state.grad[m] = ev.grad[m]


def new_state(system, positions: np.ndarray, step_size: float, rng: np.random.Generator, *,
              with_grad: bool = False) -> MCState:
    """A state at ``positions`` with every cached value computed (kernel call number 0)."""
    ev = system.evaluate(positions, step=0)
    bad = np.flatnonzero(ev.outside > 0)
    if bad.size:
        from fixedqmc.errors import FixedQMCError
        raise FixedQMCError(
            f"initial configuration of walker {bad[0]} has pairs beyond the trial function's "
            "support (tables.r_max); start from a more compact geometry or raise r_max")
    return MCState(positions.copy(), ev.ln_psi.copy(), ev.potential.copy(), ev.kinetic.copy(),
                   ev.grad.copy() if with_grad else None, float(step_size), rng, n_steps=1)
