"""Variational Monte Carlo (Metropolis sampling of |psi|**2), precision-agnostic.

The driver only calls the system protocol (:mod:`fixedqmc.qmc.system`); which precision
each kernel runs at is the system's business.  Moves (HAQMC, seed 002, Sec. 4; seed 001,
Algorithm 1):

``"all"``
    every particle of a walker displaced at once, uniformly in a cube of side
    ``step_size`` (the system's length unit), then wrapped by the system (clusters:
    re-centred); accepted with probability ``min(1, |psi(R')|**2 / |psi(R)|**2)``
    (psi(R') = 0 outside the trial function's support).
``"single"``
    particles moved one after another (a sweep), each accepted on its own ratio
    ``|psi'/psi|**2`` from :meth:`System.propose`, the move committed by
    :meth:`System.accept` (incremental per-walker state, e.g. Sherman-Morrison updates of
    inverse Slater matrices); the energies are evaluated once per sweep.

VMC samples |psi|**2, so moves across a node of a fermionic psi are allowed.  During the
equilibration blocks the step size is tuned after every block towards the target
acceptance (factor ``acceptance / target``, clamped to [0.5, 2]).  Each block records the
means over its steps and walkers of the local energy, of every energy part, the
acceptance and the step size (with ``walker_means``, also each walker's mean local energy
over the steps of every production block, in ``st.extra["walker_energy"]``: one
(n_walkers,) array per block); every ``recompute_every`` blocks the per-walker state is
rebuilt and the drift diagnostics recorded (:func:`fixedqmc.qmc.state.refresh`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import check_int
from fixedqmc.qmc.state import MCState, add_into, energy_columns, new_state, refresh, set_from
from fixedqmc.qmc.system import Walkers, commit_move

MOVES = ("all", "single")


@dataclass(frozen=True)
class VMCSettings:
    """Blocks, steps and moves of a VMC run (step size in the system's length unit)."""

    n_blocks: int = 20
    equil_blocks: int = 5
    steps_per_block: int = 20
    step_size: float = 1.0
    move: str = "all"
    target_acceptance: float = 0.5
    tune: bool = True
    recompute_every: int = 1
    walker_means: bool = False  # keep each walker's mean local energy per production block

    def __post_init__(self):
        for key in ("n_blocks", "steps_per_block", "recompute_every"):
            check_int(key, getattr(self, key))
        check_int("equil_blocks", self.equil_blocks, 0)
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
    """The initial state (energies and per-walker state of the starting walkers)."""
    return new_state(system, positions, settings.step_size, rng)


def _accept(rng, log_ratio: np.ndarray, outside: np.ndarray) -> np.ndarray:
    u = rng.random(log_ratio.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        return (outside == 0) & (u < np.exp(np.minimum(log_ratio, 0.0)))


def _all_particle_step(system, st: MCState) -> float:
    prop = system.wrap(st.positions + st.step_size * st.rng.uniform(-0.5, 0.5,
                                                                    st.positions.shape))
    ev = system.evaluate(Walkers(prop, None), step=st.n_steps)
    st.n_steps += 1
    ok = _accept(st.rng, 2.0 * (ev.ln_psi - st.ln_psi), ev.outside)
    st.walkers.put(ok, Walkers(prop, ev.state))
    set_from(st, ev, ok)
    return float(ok.mean())


def _single_particle_sweep(system, st: MCState) -> float:
    n = st.positions.shape[1]
    accepted = 0
    for i in range(n):
        new = st.positions[:, i] + st.step_size * st.rng.uniform(-0.5, 0.5, (st.n_walkers, 3))
        prop = system.propose(st.walkers, i, new, step=st.n_steps, grad=False)
        st.n_steps += 1
        ok = _accept(st.rng, 2.0 * prop.log_ratio, prop.outside)
        commit_move(system, st.walkers, i, ok, prop)
        accepted += int(ok.sum())
    st.walkers.positions = system.wrap(st.positions)
    ev = system.evaluate(st.walkers, step=st.n_steps)
    st.n_steps += 1
    set_from(st, ev)
    return accepted / (n * st.n_walkers)


def vmc_block(system, st: MCState, settings: VMCSettings) -> dict:
    """Run one block; append and return its trace row."""
    step = _all_particle_step if settings.move == "all" else _single_particle_sweep
    sums: dict = {}
    acc = 0.0
    size = st.step_size
    equil = st.block < settings.equil_blocks
    walker_sum = np.zeros(st.n_walkers) if settings.walker_means and not equil else None
    for _ in range(settings.steps_per_block):
        acc += step(system, st)
        add_into(sums, {k: v / st.n_walkers for k, v in energy_columns(st.parts).items()})
        if walker_sum is not None:
            walker_sum += sum(st.parts.values())
    n = settings.steps_per_block
    if walker_sum is not None:
        st.extra.setdefault("walker_energy", []).append(walker_sum / n)
    row = {"block": st.block, "phase": "equilibration" if equil else "production",
           **{k: v / n for k, v in sums.items()}, "acceptance": acc / n,
           "step_size": size, "walkers": st.n_walkers}
    if equil and settings.tune:
        st.step_size = size * min(2.0, max(0.5, (acc / n) / settings.target_acceptance))
    st.block += 1
    if st.block % settings.recompute_every == 0:
        row.update(refresh(system, st))
    st.rows.append(row)
    return row


def run_vmc(system, st: MCState, settings: VMCSettings, *, on_block=None) -> MCState:
    """Advance ``st`` to ``settings.total_blocks`` blocks; ``on_block(st)`` after each
    (checkpointing, progress)."""
    while st.block < settings.total_blocks:
        vmc_block(system, st, settings)
        if on_block is not None:
            on_block(st)
    return st
