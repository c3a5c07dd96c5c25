"""A user-defined system: non-interacting fermions in a 3D isotropic harmonic trap.

Written through fixedqmc's public API alone, as a user would, and registered as the system
kind ``trapped_fermions``: list this file under ``plugins`` in a run input
(``examples/trapped_fermions_vmc.toml``) and ``fixedqmc run``, ``profile`` and ``sweep`` take
it like a built-in system.  It is composed of Slater-Jastrow parts
(:mod:`fixedqmc.systems.parts`): a determinant part over its orbital evaluator, one Jastrow
part and a potential kernel.

Hamiltonian (oscillator units: energies in hbar omega, lengths in sqrt(hbar / m omega))::

    H = sum_i [ -1/2 lap_i + 1/2 r_i**2 ]          (hbar**2 / 2m = 1/2)

Trial function: ``psi = det[P_k(r_i)]_up det[P_k(r_i)]_down exp(J)``, ``J = -alpha/2
sum_i r_i**2``, with the exact Hermite polynomials ``P = 1 | x, y, z | 2x**2 - 1, 2y**2 - 1,
2z**2 - 1, xy, xz, yz`` (shells 0, 1, 2; the first ``n_up`` / ``n_down`` of them): one Slater
determinant per spin of the lowest oscillator orbitals ``P_k(r) exp(-alpha r**2 / 2)``.

Exact results that make it a test bed for the engine:

* the ground-state energy is the sum of the occupied orbital energies ``n + 3/2``
  (e.g. 18 for 4 + 4 fermions, 4 for two same-spin fermions);
* with ``alpha = 1`` psi is the exact ground state: VMC has zero variance;
* for any ``alpha`` the nodes of psi are those of ``det[P_k(r_i)]``, the exact nodes, so
  fixed-node DMC gives the exact energy from an approximate trial function.

Kernels (one source for every precision, ``fixedqmc.numerics.kernel``): ``potential``, the
sum of squared coordinates ``sum_i r_i**2`` (variables ``x``, ``x2``, ``sum``); the
determinant part's ``determinant`` and the kinetic ``energy`` kernel; the polynomials and
the Gaussian Jastrow factor are float64 NumPy.
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
from fixedqmc.qmc.system import Units
from fixedqmc.systems.determinant_part import DeterminantPart
from fixedqmc.systems.determinants import determinant_ranges, determinant_spec
from fixedqmc.systems.parts import PartMove, PartValues
from fixedqmc.systems.slater import SlaterJastrow, energy_spec

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
def polynomials(r: np.ndarray, n: int):
    """The first ``n`` polynomials at ``r`` (P, 3): values (P, n) and their gradients and
    Laplacians (P, n, 4)."""
    x, y, z = r[:, 0], r[:, 1], r[:, 2]
    one, zero = np.ones_like(x), np.zeros_like(x)
    p = [one, x, y, z, 2 * x * x - 1, 2 * y * y - 1, 2 * z * z - 1, x * y, x * z, y * z]
    d = [(zero, zero, zero, zero), (one, zero, zero, zero), (zero, one, zero, zero),
         (zero, zero, one, zero), (4 * x, zero, zero, 4 * one), (zero, 4 * y, zero, 4 * one),
         (zero, zero, 4 * z, 4 * one), (y, x, zero, zero), (z, zero, x, zero),
         (zero, z, y, zero)]
    return (np.stack(p[:n], axis=-1),
            np.stack([np.stack(dk, axis=-1) for dk in d[:n]], axis=-2))


class GaussianJastrow:
    """The Jastrow part ``exp(J)``, ``J = -alpha/2 sum_i r_i**2`` (one-body, no state)."""

    laplacian = "log"

    def __init__(self, alpha: float):
        self.alpha = alpha

    def evaluate(self, ks, pos, step, state=None) -> PartValues:
        r2 = np.sum(pos * pos, axis=-1)
        return PartValues(-0.5 * self.alpha * r2.sum(axis=1), None, -self.alpha * pos,
                          np.full(r2.shape, -3.0 * self.alpha))

    def propose(self, ks, pos, state, i, new, step, grad=True) -> PartMove:
        old = pos[:, i]
        dj = -0.5 * self.alpha * (np.sum(new * new, axis=1) - np.sum(old * old, axis=1))
        return PartMove(dj, None, -self.alpha * new if grad else None)

    def accept(self, ks, state, i, mask, move) -> None:
        pass

    def recompute(self, ks, pos, step, state=None):
        return {}, {}


class TrappedFermions(SlaterJastrow):
    """``n_up`` + ``n_down`` fermions in the trap (module docstring): the determinant part
    over :func:`polynomials`, the Gaussian Jastrow part and the trap's potential."""

    units = UNITS
    profile_step = 0.5  # the Gaussian step (a_ho) of the profiling sweep's moves

    def __init__(self, n_up: int, n_down: int, alpha: float = 1.0, precision="float64", *,
                 ranges=None, seed: int = 0, spread: float = 0.8):
        self.n = (int(n_up), int(n_down))
        self.n_particles = sum(self.n)
        self.alpha = float(alpha)
        self.spread = float(spread)
        total = 3.0 * self.n_particles * X_MAX ** 2
        self.kernels = {
            "potential": KernelSpec("potential", POTENTIAL.variables[:2] + (
                Variable("sum", 0.0, total, "sum of squares"),)),
            "determinant": determinant_spec(determinant_ranges(
                2 * X_MAX ** 2, 4 * X_MAX, 1e3, max(max(self.n), 1))),
            "energy": energy_spec(1e4, 1e3, self.n_particles)}
        self.ks = KernelSet(self.kernels, precision, ranges=ranges, seed=seed)
        self.log = self.ks.log
        super().__init__(DeterminantPart(self.n, self._orbitals),
                         (GaussianJastrow(self.alpha),), self._potential)

    @property
    def exact_energy(self) -> float:
        """The ground-state energy (hbar omega): the occupied orbital energies."""
        return float(sum(np.sum(SHELL[:m] + 1.5) for m in self.n))

    def _orbitals(self, ks, pts, s, derivs, step):
        values, d = polynomials(pts, self.n[s])
        return values, d if derivs else None

    def _potential(self, ks, pos, step) -> dict:
        nw = pos.shape[0]
        x = ks.encode("potential", "x", pos.reshape(nw, -1), step)
        out = np.zeros(nw, ks["potential"].dtype)
        ctx = ks.context("potential", step)
        squares_kernel(ctx, x, out)
        ks.report("potential", ctx)
        return {"potential": 0.5 * ks.decode("potential", "sum", out)}

    def initial_positions(self, n_walkers: int, rng: np.random.Generator) -> np.ndarray:
        return rng.normal(0.0, self.spread, (n_walkers, self.n_particles, 3))

    @staticmethod
    def wrap(positions: np.ndarray) -> np.ndarray:
        return positions  # open boundaries


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
