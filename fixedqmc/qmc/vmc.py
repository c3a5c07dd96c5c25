"""Variational Monte Carlo (Metropolis sampling of |psi|**2), precision-agnostic.

The driver only calls the system (:meth:`evaluate`, :meth:`atom_move`); which precision
each kernel runs at is the system's business.  Moves (HAQMC, seed 002, Sec. 4):

``"all"``
    every atom of a walker displaced at once, uniformly in a cube of side ``step_size``
    (A), then the walker re-centred; accepted with probability
    ``min(1, |psi(R')|**2 / |psi(R)|**2)`` (psi(R') = 0 when a pair leaves the trial
    function's support).
``"single"``
    atoms moved one after another (a sweep), each accepted on the ratio of its own pair
    factors (O(N) per move); the energies are evaluated once per sweep.

During the equilibration blocks the step size is tuned after every block towards the
target acceptance (factor ``acceptance / target``, clamped to [0.5, 2]).  Each block
records the means over its steps and walkers of the local energy ``E_L = V + K``, of V and
K (kelvin), the acceptance and the step size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.state import MCState, new_state, set_from
from fixedqmc.qmc.walkers import centre

MOVES = ("all", "single")


@dataclass(frozen=True)
class VMCSettings:
    """Blocks, steps and moves of a VMC run (step size in A)."""

    n_blocks: int = 20
    equil_blocks: int = 5
    steps_per_block: int = 20
    step_size: float = 1.0
    move: str = "all"
    target_acceptance: float = 0.5
    tune: bool = True

    def __post_init__(self):
        for key in ("n_blocks", "steps_per_block"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise FixedQMCError(f"{key} must be a positive integer, got {v!r}")
        if isinstance(self.equil_blocks, bool) or not isinstance(
                self.equil_blocks, (int, np.integer)) or self.equil_blocks < 0:
            raise FixedQMCError(f"equil_blocks must be an integer >= 0, got {self.equil_blocks!r}")
        if not (isinstance(self.step_size, (int, float)) and math.isfinite(self.step_size)
                and self.step_size > 0):
            raise FixedQMCError(f"step_size must be a positive length, got {self.step_size!r}")
        if self.move not in MOVES:
            raise FixedQMCError(f"move: {self.move!r} is not one of {', '.join(MOVES)}")
        if not 0 < self.target_acceptance < 1:
            raise FixedQMCError("target_acceptance must lie in (0, 1), got "
                                f"{self.target_acceptance!r}")

    @property
    def total_blocks(self) -> int:
        return self.equil_blocks + self.n_blocks


def start_vmc(system, positions: np.ndarray, settings: VMCSettings,
              rng: np.random.Generator) -> MCState:
    """The initial state (energies of the starting walkers computed)."""
    return new_state(system, centre(np.asarray(positions, np.float64)), settings.step_size, rng)


def _accept(rng, log_ratio: np.ndarray, outside: np.ndarray) -> np.ndarray:
    u = rng.random(log_ratio.shape[0])
    with np.errstate(over="ignore"):
        return (outside == 0) & (u < np.exp(np.minimum(log_ratio, 0.0)))


def _all_atom_step(system, st: MCState) -> float:
    prop = centre(st.positions + st.step_size * st.rng.uniform(-0.5, 0.5, st.positions.shape))
    ev = system.evaluate(prop, step=st.n_steps)
    st.n_steps += 1
    ok = _accept(st.rng, 2.0 * (ev.ln_psi - st.ln_psi), ev.outside)
    st.positions[ok] = prop[ok]
    set_from(st, ev, ok)
    return float(ok.mean())


def _single_atom_sweep(system, st: MCState) -> float:
    n_atoms = st.positions.shape[1]
    accepted = 0
    for i in range(n_atoms):
        new = st.positions[:, i] + st.step_size * st.rng.uniform(-0.5, 0.5, (st.n_walkers, 3))
        delta, outside = system.atom_move(st.positions, i, new, step=st.n_steps)
        st.n_steps += 1
        ok = _accept(st.rng, 2.0 * delta, outside)
        st.positions[ok, i] = new[ok]
        accepted += int(ok.sum())
    st.positions = centre(st.positions)
    ev = system.evaluate(st.positions, step=st.n_steps)
    st.n_steps += 1
    set_from(st, ev)
    return accepted / (n_atoms * st.n_walkers)


def vmc_block(system, st: MCState, settings: VMCSettings) -> dict:
    """Run one block; append and return its trace row."""
    step = _all_atom_step if settings.move == "all" else _single_atom_sweep
    e = v = k = acc = 0.0
    size = st.step_size
    for _ in range(settings.steps_per_block):
        acc += step(system, st)
        e += float(st.local_energy.mean())
        v += float(st.potential.mean())
        k += float(st.kinetic.mean())
    n = settings.steps_per_block
    equil = st.block < settings.equil_blocks
    row = {"block": st.block, "phase": "equilibration" if equil else "production",
           "energy": e / n, "potential": v / n, "kinetic": k / n, "acceptance": acc / n,
           "step_size": size, "walkers": st.n_walkers}
    if equil and settings.tune:
        st.step_size = size * min(2.0, max(0.5, (acc / n) / settings.target_acceptance))
    st.rows.append(row)
    st.block += 1
    return row


def run_vmc(system, st: MCState, settings: VMCSettings, *, on_block=None) -> MCState:
    """Advance ``st`` to ``settings.total_blocks`` blocks; ``on_block(st)`` after each
    (checkpointing, progress)."""
    while st.block < settings.total_blocks:
        vmc_block(system, st, settings)
        if on_block is not None:
            on_block(st)
    return st
