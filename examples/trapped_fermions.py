"""A user-defined system: non-interacting fermions in a 3D isotropic harmonic trap.

Written through fixedqmc's public system protocol alone (``fixedqmc.qmc.system``), as a user
would, and registered as the system kind ``trapped_fermions``: list this file under
``plugins`` in a run input (``examples/trapped_fermions_vmc.toml``) and ``fixedqmc run``,
``profile`` and ``sweep`` take it like a built-in system.

Hamiltonian (oscillator units: energies in hbar omega, lengths in sqrt(hbar / m omega))::

    H = sum_i [ -1/2 lap_i + 1/2 r_i**2 ]          (hbar**2 / 2m = 1/2)

Trial function: one Slater determinant per spin of the lowest oscillator orbitals
``phi_k(r) = P_k(r) exp(-alpha r**2 / 2)`` with the exact Hermite polynomials
``P = 1 | x, y, z | 2x**2 - 1, 2y**2 - 1, 2z**2 - 1, xy, xz, yz`` (shells 0, 1, 2; the first
``n_up`` / ``n_down`` of them), ``psi = det[phi_k(r_i)]_up det[phi_k(r_i)]_down``.

Exact results that make it a test bed for the engine:

* the ground-state energy is the sum of the occupied orbital energies ``n + 3/2``
  (e.g. 18 for 4 + 4 fermions, 4 for two same-spin fermions);
* with ``alpha = 1`` psi is the exact ground state: VMC has zero variance;
* for any ``alpha`` the nodes of psi are those of ``det[P_k(r_i)]``, the exact nodes, so
  fixed-node DMC gives the exact energy from an approximate trial function.

Per-walker state: the inverse of each spin's matrix ``M[i, k] = P_k(r_i)`` and
``ln|det|`` with its sign; a single-particle move updates them by Sherman-Morrison
(O(N**2)), ``recompute`` rebuilds them and reports ``||M M^-1 - I||``.

Kernels (one source for every precision, ``fixedqmc.numerics.kernel``): ``potential``, the
sum of squared coordinates ``sum_i r_i**2`` (variables ``x``, ``x2``, ``sum``); the
determinants and derivatives run in float64 numpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import check_int, check_positive
from fixedqmc.numerics.kernel import (KernelSpec, Variable, acc_add, acc_value, acc_zero, at,
                                      chunk, chunk_bounds, load, mul, n_chunks, store)
from fixedqmc.numerics.kernel_set import KernelSet
from fixedqmc.qmc.registry import SystemPlugin, register_system
from fixedqmc.qmc.system import Evaluation, Proposal, Units, Walkers

UNITS = Units("hbar_omega", "a_ho", {"milli_hbar_omega": 1e3})
MAX_ORBITALS = 10
SHELL = np.array([0, 1, 1, 1, 2, 2, 2, 2, 2, 2])
X_MAX = 8.0  # declared coordinate range (a_ho): |psi|**2 < exp(-64) beyond

# --------------------------------------------------------------------- the kernel --
POTENTIAL = KernelSpec("potential", (Variable("x", -X_MAX, X_MAX, "a coordinate (a_ho)"),
                                     Variable("x2", 0.0, X_MAX ** 2, "its square"),
                                     Variable("sum", 0.0, 0.0, "sum of squares (set per N)")))
X, X2, SUM = range(3)


@njit
def _sum_of_squares(e, x):
    acc = acc_zero(e, SUM)
    for c in range(x.size):
        xi = load(e, x[c], X)
        acc = acc_add(e, acc, mul(e, xi, xi, X2), SUM)
    return store(e, acc_value(e, acc, SUM))


@njit(parallel=True)  # no disk cache: a plug-in file may be imported under several names
def squares_kernel(ctx, x, out):
    """out[w] = sum_c x[w, c]**2 over the 3N coordinates of walker w (any precision)."""
    n_w = x.shape[0]
    for k in prange(n_chunks(ctx, n_w)):
        cc = chunk(ctx, k)
        lo, hi = chunk_bounds(ctx, n_w, k)
        for w in range(lo, hi):
            out[w] = _sum_of_squares(at(cc, w), x[w])


# ------------------------------------------------------------------- the orbitals --
def orbitals(r: np.ndarray, alpha: float, n: int):
    """Polynomial parts of the first ``n`` orbitals at ``r`` (..., 3): values P (..., n),
    gradients (..., n, 3) and ``lap P - 2 alpha r . grad P`` (..., n)."""
    x, y, z = r[..., 0], r[..., 1], r[..., 2]
    one, zero = np.ones_like(x), np.zeros_like(x)
    p = [one, x, y, z, 2 * x * x - 1, 2 * y * y - 1, 2 * z * z - 1, x * y, x * z, y * z]
    g = [(zero, zero, zero), (one, zero, zero), (zero, one, zero), (zero, zero, one),
         (4 * x, zero, zero), (zero, 4 * y, zero), (zero, zero, 4 * z),
         (y, x, zero), (z, zero, x), (zero, z, y)]
    lap = [zero, zero, zero, zero, 4 * one, 4 * one, 4 * one, zero, zero, zero]
    P = np.stack(p[:n], axis=-1)
    G = np.stack([np.stack(gk, axis=-1) for gk in g[:n]], axis=-2)
    T = np.stack(lap[:n], axis=-1) - 2 * alpha * np.einsum("...c,...kc->...k", r, G)
    return P, G, T


class TrappedFermions:
    """``n_up`` + ``n_down`` fermions in the trap (module docstring); implements the
    system protocol."""

    units = UNITS
    hbar2_2m = 0.5

    def __init__(self, n_up: int, n_down: int, alpha: float = 1.0, precision="float64", *,
                 ranges=None, seed: int = 0, spread: float = 0.8):
        self.n = (int(n_up), int(n_down))
        self.n_particles = sum(self.n)
        self.alpha = float(alpha)
        self.spread = float(spread)
        total = 3.0 * self.n_particles * X_MAX ** 2
        spec = KernelSpec("potential", POTENTIAL.variables[:2] + (
            Variable("sum", 0.0, total, "sum of squares"),))
        self.kernels = {"potential": spec}
        self.ks = KernelSet(self.kernels, precision, ranges=ranges, seed=seed)
        self.log = self.ks.log

    @property
    def exact_energy(self) -> float:
        """The ground-state energy (hbar omega): the occupied orbital energies."""
        return float(sum(np.sum(SHELL[:m] + 1.5) for m in self.n))

    # -- helpers ------------------------------------------------------------------------
    def _spins(self):
        """(spin, first particle, count) of each non-empty spin."""
        return [(s, 0 if s == 0 else self.n[0], m) for s, m in enumerate(self.n) if m]

    def _spin_of(self, i: int):
        return (0, i) if i < self.n[0] else (1, i - self.n[0])

    def _fresh(self, pos: np.ndarray) -> dict:
        state = {"ln_det": np.zeros(pos.shape[0]), "sign": np.ones(pos.shape[0])}
        for s, first, m in self._spins():
            M = orbitals(pos[:, first:first + m], self.alpha, m)[0]
            sign, ln_det = np.linalg.slogdet(M)
            with np.errstate(divide="ignore"):
                state[f"inv{s}"] = np.linalg.inv(np.where(sign[:, None, None] == 0,
                                                          np.eye(m), M))
            state["ln_det"] += ln_det
            state["sign"] *= sign
        return state

    def _potential(self, pos: np.ndarray, step: int) -> np.ndarray:
        nw = pos.shape[0]
        x = self.ks.encode("potential", "x", pos.reshape(nw, -1), step)
        out = np.zeros(nw, self.ks["potential"].dtype)
        ctx = self.ks.context("potential", step)
        squares_kernel(ctx, x, out)
        self.ks.report("potential", ctx)
        return 0.5 * self.ks.decode("potential", "sum", out)

    # -- the protocol -------------------------------------------------------------------
    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(0.0, self.spread, (n_walkers, self.n_particles, 3))

    @staticmethod
    def wrap(positions: np.ndarray) -> np.ndarray:
        return positions  # open boundaries

    def evaluate(self, walkers: Walkers, *, step: int = 0) -> Evaluation:
        pos = walkers.positions
        state = walkers.state if walkers.state else self._fresh(pos)
        r2 = np.sum(pos * pos, axis=-1)
        grad = -self.alpha * pos
        lap = np.broadcast_to(self.alpha ** 2 * r2 - 3 * self.alpha, r2.shape).copy()
        for s, first, m in self._spins():
            P, G, T = orbitals(pos[:, first:first + m], self.alpha, m)
            inv = state[f"inv{s}"]  # (nw, k, i)
            grad[:, first:first + m] += np.einsum("wikc,wki->wic", G, inv)
            lap[:, first:first + m] += np.einsum("wik,wki->wi", T, inv)
        ln_psi = state["ln_det"] - 0.5 * self.alpha * r2.sum(axis=1)
        kinetic = -self.hbar2_2m * lap.sum(axis=1)
        zero = state["sign"] == 0
        return Evaluation(np.where(zero, -np.inf, ln_psi), state["sign"].copy(), grad,
                          {"potential": self._potential(pos, step), "kinetic": kinetic},
                          zero.astype(np.int64), state)

    def propose(self, walkers: Walkers, i: int, new, *, step: int = 0, grad: bool = True
                ) -> Proposal:
        s, j = self._spin_of(i)
        inv = walkers.state[f"inv{s}"]
        new = np.asarray(new, np.float64)
        P, G, _ = orbitals(new, self.alpha, self.n[s])
        col = inv[:, :, j]  # (nw, k)
        ratio = np.einsum("wk,wk->w", P, col)
        old = walkers.positions[:, i]
        with np.errstate(divide="ignore", invalid="ignore"):
            log_ratio = np.log(np.abs(ratio)) - 0.5 * self.alpha * (
                np.sum(new * new, axis=1) - np.sum(old * old, axis=1))
            g = (np.einsum("wkc,wk->wc", G, col) / ratio[:, None] - self.alpha * new
                 if grad else None)
        return Proposal(new, log_ratio, np.sign(ratio), g,
                        (ratio == 0).astype(np.int64), (P, ratio))

    def accept(self, walkers: Walkers, i: int, mask, proposal: Proposal) -> None:
        s, j = self._spin_of(i)
        P, ratio = proposal.saved
        m = np.asarray(mask, bool)
        walkers.positions[m, i] = proposal.new[m]
        inv = walkers.state[f"inv{s}"][m]
        u_inv = np.einsum("wk,wkl->wl", P[m], inv)
        u_inv[:, j] -= 1.0
        inv -= np.einsum("wk,wl->wkl", inv[:, :, j], u_inv) / ratio[m, None, None]
        walkers.state[f"inv{s}"][m] = inv
        walkers.state["ln_det"][m] += np.log(np.abs(ratio[m]))
        walkers.state["sign"][m] *= np.sign(ratio[m])

    def recompute(self, walkers: Walkers, *, step: int = 0) -> dict:
        """Fresh inverses; returns the largest ``|M M^-1 - I|`` of the updated ones."""
        pos = walkers.positions
        err = 0.0
        for s, first, m in self._spins():
            M = orbitals(pos[:, first:first + m], self.alpha, m)[0]
            err = max(err, float(np.max(np.abs(M @ walkers.state[f"inv{s}"] - np.eye(m)))))
        walkers.state = self._fresh(pos)
        return {"inverse_error": err}

    def profile(self, positions, *, step: int = 0) -> dict:
        ks = self.ks.profiling()
        pos = np.asarray(positions, np.float64)
        x = ks.encode("potential", "x", pos.reshape(pos.shape[0], -1), step)
        ctx = ks.context("potential", step)
        squares_kernel(ctx, x, np.zeros(pos.shape[0], ks["potential"].dtype))
        return {"potential": ks.stats("potential", ctx, {"x": pos})}

    def formats(self) -> dict:
        return self.ks.formats()


# ------------------------------------------------------------------ registration --
def check(config: dict) -> None:
    s = config["system"]
    for key in ("n_up", "n_down"):
        check_int(f"system.{key}", s[key], 0)
        if s[key] > MAX_ORBITALS:
            raise FixedQMCError(f"system.{key} = {s[key]}: at most {MAX_ORBITALS} fermions "
                                "per spin (shells 0-2)")
    if s["n_up"] + s["n_down"] < 1:
        raise FixedQMCError("system.n_up + system.n_down must be >= 1")
    check_positive("system.spread", s["spread"])
    check_positive("trial.alpha", config["trial"]["alpha"])


def build(config: dict, *, precision, ranges=None, seed=0, specialise=False):
    s = config["system"]
    return TrappedFermions(s["n_up"], s["n_down"], config["trial"]["alpha"], precision,
                           ranges=ranges, seed=seed, spread=s["spread"])


PLUGIN = register_system(SystemPlugin(
    "trapped_fermions",
    {"system": {"n_up": 4, "n_down": 4, "spread": 0.8}, "trial": {"alpha": 1.0}},
    build, UNITS, check, "non-interacting fermions in a 3D harmonic trap (example plug-in)",
    method_defaults={"step_size": 1.0, "taus": [0.02]}), replace=True)
