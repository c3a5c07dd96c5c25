"""Slater-Jastrow systems: the part of the system protocol every determinant system shares.

Trial function (seed 001, Eq. 5-7; seed 000, Eq. 7)::

    psi = exp(J) det[phi_k(r_i)]_up det[phi_k(r_i)]_down

of the occupied orbitals of each spin (Gaussian-basis molecular orbitals, plane waves, ...)
and an optional Jastrow factor ``J``.  :class:`SlaterJastrow` implements ``evaluate``,
``propose``, ``accept`` and ``recompute`` of the protocol (:mod:`fixedqmc.qmc.system`) on the
shared determinant kernels (:mod:`fixedqmc.systems.determinants`, one ``determinant``
precision) and the kinetic ``energy`` kernel below; a concrete system (``molecule``,
``heg``) provides, as methods:

``_orbitals(ks, pts, s, derivs, step)``
    orbital values (P, n_s) of spin ``s`` at points ``pts`` (P, 3) and, with ``derivs``,
    their gradients and Laplacians (P, n_s, 4), float64 (the system's orbital kernels);
``_jastrow(ks, pos, step)``
    None, or ``(J (n_w,), grad_i J (n_w, N, 3), lap_i J (n_w, N))``;
``_jastrow_move(ks, pos, i, new, step)``
    None, or the change of J when electron ``i`` moves to ``new`` (n_w,) and ``grad_i J``
    there (n_w, 3);
``_potential(ks, pos, step)``
    the potential energy by named parts ``{name: (n_w,)}`` (hartree);

and the attributes ``n`` (n_up, n_down), ``n_particles``, ``ks`` (a
:class:`~fixedqmc.numerics.kernel_set.KernelSet` with at least the ``determinant`` and
``energy`` kernels), ``kernels``.  Every method takes the kernel set to use, so that
profiling runs the same code on a profiling copy.

Per-walker state: per spin ``s`` the inverse Slater matrix ``inv{s}`` (words of the
determinant kernel), and ``ln_det``, ``sign`` of the product of determinants.  Units:
hartree and bohr, ``hbar**2 / 2m = 1/2``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics import aligned
from fixedqmc.numerics.kernel import (N_CHUNKS, acc_add, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, load, mul, n_chunks, store)
from fixedqmc.qmc.system import Evaluation, Proposal, Walkers
from fixedqmc.systems import determinants as det

# ------------------------------------------------------------- the energy kernel --
#: Variables of the kinetic ``energy`` kernel (ranges are set by the system).
ENERGY_VARIABLES = (
    ("lap", "lap_i D / D or lap_i J of one electron (1/bohr**2)"),
    ("grad", "a component of grad_i D / D or grad_i J (1/bohr)"),
    ("gsum", "2 grad_i D / D + grad_i J, a component (1/bohr)"),
    ("gprod", "grad_i J (2 grad_i D / D + grad_i J), a component (1/bohr**2)"),
    ("lap_sum", "sum over electrons of lap_i psi / psi (sum, 1/bohr**2)"),
    ("half", "-1/2"),
    ("kinetic", "the kinetic local energy (hartree)"),
)
LAP, GRAD, GSUM, GPROD, LAP_SUM, HALF, KINETIC = range(7)


def energy_ranges(lap_max: float, grad_max: float, n: int) -> dict:
    """Declared ranges of the ``energy`` kernel for per-electron Laplacians up to
    ``lap_max`` (1/bohr**2) and gradient components up to ``grad_max`` (1/bohr) of ``n``
    electrons."""
    g = 3 * grad_max
    return {"lap": (-lap_max, lap_max), "grad": (-grad_max, grad_max), "gsum": (-g, g),
            "gprod": (-grad_max * g, grad_max * g),
            "lap_sum": (-n * (2 * lap_max + 3 * grad_max * g),
                        n * (2 * lap_max + 3 * grad_max * g)),
            "half": (-0.5, 0), "kinetic": (-n * (lap_max + 1.5 * grad_max * g),
                                          n * (lap_max + 1.5 * grad_max * g))}


def _inverses(walkers: Walkers, s: int) -> np.ndarray:
    """The inverse Slater matrices of spin ``s`` (n_w, n_s, n_s), re-stored aligned to cache
    lines if they are not (walkers restored from a checkpoint, or selected by a driver):
    the ratio and update kernels stream them at every move."""
    inv = walkers.state[f"inv{s}"]
    if not aligned.is_aligned(inv):
        inv = walkers.state[f"inv{s}"] = aligned.copy(inv)
    return inv


@njit(cache=True)
def _commit(mask, ratio, i, new, positions, ln_det, sign):
    """The host side of single-electron moves: for the walkers ``w`` in ``mask`` with
    ``ratio[w] != 0``, electron ``i`` moves to ``new[w]`` and ``ln_det[w]``, ``sign[w]``
    take the determinant ratio; returns those walkers (one compiled pass instead of a
    dozen NumPy calls per move)."""
    m = np.empty(mask.shape[0], np.bool_)
    for w in range(mask.shape[0]):
        m[w] = mask[w] and ratio[w] != 0
        if m[w]:
            positions[w, i, :] = new[w]
            ln_det[w] += np.log(np.abs(ratio[w]))
            sign[w] *= np.sign(ratio[w])
    return m


@njit
def _kinetic_chunk(ck, k, lap, grad, out):
    c = chunk(ck, k)
    lo, hi = chunk_bounds(ck, lap.shape[0], k)
    for w in range(lo, hi):
        e = at(c, w)
        acc = acc_zero(e, LAP_SUM)
        for i in range(lap.shape[1]):
            acc = acc_add(e, acc, load(e, lap[w, i, 0], LAP), LAP_SUM)
            acc = acc_add(e, acc, load(e, lap[w, i, 1], LAP), LAP_SUM)
            for d in range(3):
                gd = load(e, grad[w, i, 0, d], GRAD)
                gj = load(e, grad[w, i, 1, d], GRAD)
                s = add(e, add(e, gd, gd, GSUM), gj, GSUM)
                acc = acc_add(e, acc, mul(e, gj, s, GPROD), LAP_SUM)
        out[w] = store(e, mul(e, const(e, -0.5, HALF), acc_value(e, acc, LAP_SUM), KINETIC))


@njit(parallel=True, cache=True)
def kinetic_kernel(ck, lap, grad, out):
    """``out[w] = -1/2 sum_i lap_i psi / psi`` (``energy.kinetic`` words, hartree) with
    ``lap_i psi / psi = lap_i D / D + lap_i J + grad_i J . (2 grad_i D / D + grad_i J)``
    for ``psi = exp(J) D``: ``lap`` (n_w, N, 2) the determinant and Jastrow Laplacians
    (``energy.lap``), ``grad`` (n_w, N, 2, 3) their gradients (``energy.grad``; zeros
    without a Jastrow factor)."""
    for k in prange(n_chunks(ck, lap.shape[0])):
        _kinetic_chunk(ck, k, lap, grad, out)


# ------------------------------------------------------------------ the systems --
class SlaterJastrow:
    """The determinant part of the system protocol (module docstring)."""

    hbar2_2m = 0.5

    # -- spins and Slater matrices ------------------------------------------------------
    def _first(self, s: int) -> int:
        return 0 if s == 0 else self.n[0]

    def _spins(self):
        return [s for s in (0, 1) if self.n[s]]

    def _spin_of(self, i: int):
        return (0, i) if i < self.n[0] else (1, i - self.n[0])

    def _slater(self, ks, pos, s: int, derivs: bool, step: int):
        """Slater matrices M[w, i, k] of spin s and (with derivs) (n_w, n_s, n_s, 4)."""
        lo, m = self._first(s), self.n[s]
        nw = pos.shape[0]
        vals, d = self._orbitals(ks, np.ascontiguousarray(pos[:, lo:lo + m].reshape(-1, 3)),
                                 s, derivs, step)
        return vals.reshape(nw, m, m), None if d is None else d.reshape(nw, m, m, 4)

    def _fresh(self, ks, Ms: dict, nw: int, step: int) -> dict:
        """Per-walker state from Slater matrices ``{spin: (n_w, n_s, n_s)}`` (LU)."""
        state = {"ln_det": np.zeros(nw), "sign": np.ones(nw)}
        for s, M in Ms.items():
            sign, ln_det, B = det.fresh_inverse(M)
            state[f"inv{s}"] = aligned.copy(ks.encode("determinant", "inv", B, step))
            state["ln_det"] += ln_det
            state["sign"] *= sign
        return state

    def _kinetic(self, ks, lap, grad, step):
        ck = ks.context("energy", step)
        out = np.zeros(lap.shape[0], ks["energy"].dtype)
        kinetic_kernel(ck, ks.encode("energy", "lap", lap, step),
                       ks.encode("energy", "grad", grad, step), out)
        ks.report("energy", ck)
        return ks.decode("energy", "kinetic", out)

    def _jastrow(self, ks, pos, step):
        return None

    def _jastrow_move(self, ks, pos, i, new, step):
        return None

    # -- the protocol -------------------------------------------------------------------
    def evaluate(self, walkers: Walkers, *, step: int = 0) -> Evaluation:
        return self._evaluate(self.ks, walkers, step)

    def _evaluate(self, ks, walkers: Walkers, step: int) -> Evaluation:
        pos = np.asarray(walkers.positions, np.float64)
        nw = pos.shape[0]
        mats = {s: self._slater(ks, pos, s, True, step) for s in self._spins()}
        state = walkers.state if walkers.state else self._fresh(
            ks, {s: M for s, (M, _) in mats.items()}, nw, step)
        n = self.n_particles
        grad = np.zeros((nw, n, 2, 3))  # determinant, Jastrow
        lap = np.zeros((nw, n, 2))
        ct = ks.context("determinant", step)
        for s, (_, d) in mats.items():
            lo, m = self._first(s), self.n[s]
            grows = ks.encode("determinant", "grow", d.transpose(0, 1, 3, 2), step)
            out = np.zeros((nw, m, 4), ks["determinant"].dtype)
            det.contract_kernel(ct, grows, state[f"inv{s}"], out)
            g = ks.decode("determinant", "gsum", out)
            grad[:, lo:lo + m, 0] = g[..., :3]
            lap[:, lo:lo + m, 0] = g[..., 3]
        ks.report("determinant", ct)
        ln_psi = state["ln_det"].copy()
        jas = self._jastrow(ks, pos, step)
        if jas is not None:
            j, grad[:, :, 1], lap[:, :, 1] = jas
            ln_psi += j
        parts = {"kinetic": self._kinetic(ks, lap, grad, step), **self._potential(ks, pos, step)}
        zero = state["sign"] == 0
        return Evaluation(np.where(zero, -np.inf, ln_psi), state["sign"].copy(),
                          grad.sum(axis=2), parts, zero.astype(np.int64), state)

    def propose(self, walkers: Walkers, i: int, new, *, step: int = 0, grad: bool = True
                ) -> Proposal:
        """Move electron ``i`` to ``new`` (n_w, 3): the determinant ratio (and the Jastrow
        one) and, with ``grad``, grad_i ln|psi| at ``new``; without, the orbital
        derivatives are not computed."""
        return self._propose(self.ks, walkers, i, new, step, grad)

    def _propose(self, ks, walkers, i, new, step, want_grad=True):
        s, j = self._spin_of(i)
        new = np.ascontiguousarray(new, np.float64)
        nw = new.shape[0]
        vals, d = self._orbitals(ks, new, s, want_grad, step)
        ct = ks.context("determinant", step)
        dt = ks["determinant"].dtype
        rows = ks.encode("determinant", "row", vals, step)
        out_r = np.zeros(nw, dt)
        out_g = np.zeros((nw, 3 if want_grad else 0), dt)
        grows = (d[..., :3].transpose(0, 2, 1) if want_grad
                 else np.zeros((nw, 0, self.n[s]), np.float64))
        det.ratio_kernel(ct, rows, _inverses(walkers, s), j,
                         ks.encode("determinant", "grow", grows, step), out_r, out_g)
        ks.report("determinant", ct)
        ratio = ks.decode("determinant", "ratio", out_r)
        with np.errstate(divide="ignore"):
            log_ratio = np.log(np.abs(ratio))
        zero = ratio == 0
        grad = (np.where(zero[:, None], 0.0, ks.decode("determinant", "grad", out_g))
                if want_grad else None)
        jas = self._jastrow_move(ks, walkers.positions, i, new, step)
        if jas is not None:
            log_ratio = log_ratio + jas[0]
            if want_grad:
                grad = grad + jas[1]
        return Proposal(new, log_ratio, np.sign(ratio), grad, zero.astype(np.int64),
                        (rows, out_r, ratio, step))

    def accept(self, walkers: Walkers, i: int, mask, proposal: Proposal) -> None:
        self._accept(self.ks, walkers, i, mask, proposal)

    def _accept(self, ks, walkers, i, mask, proposal):
        s, j = self._spin_of(i)
        rows, ratio_words, ratio, step = proposal.saved
        m = _commit(np.asarray(mask, np.bool_), ratio, i, proposal.new, walkers.positions,
                    walkers.state["ln_det"], walkers.state["sign"])
        ct = ks.context("determinant", step)
        dt, n = ks["determinant"].dtype, self.n[s]
        det.update_kernel(ct, rows, _inverses(walkers, s), j, m, ratio_words,
                          self._scratch(("update", dt, n),
                                        lambda: np.empty((N_CHUNKS, 3, n), dt)))
        ks.report("determinant", ct)

    def _scratch(self, key, make):
        """A kernel's scratch arrays, made by ``make()`` once per ``key`` (the kernel's name,
        word types and sizes) and reused by every call: the kernels write every scratch
        element before they read it."""
        cache = self.__dict__.setdefault("_scratches", {})
        if key not in cache:
            cache[key] = make()
        return cache[key]

    def recompute(self, walkers: Walkers, *, step: int = 0) -> dict:
        """Fresh inverses; returns ``inverse_error``, the largest ``|M M^-1 - I|`` of the
        incrementally updated inverses."""
        pos = walkers.positions
        Ms = {s: self._slater(self.ks, pos, s, False, step)[0] for s in self._spins()}
        err = max((det.inverse_error(M, self.ks.decode("determinant", "inv",
                                                       walkers.state[f"inv{s}"]))
                   for s, M in Ms.items()), default=0.0)
        walkers.state = self._fresh(self.ks, Ms, pos.shape[0], step)
        return {"inverse_error": err}

    def _profile_sweep(self, ks, positions, sigma: float, step: int, *,
                       counts: dict | None = None) -> dict:
        """Range statistics of every kernel of ``ks`` (a profiling copy) over a float64
        evaluation of ``positions`` and one Metropolis sweep of single-electron moves from
        them (a Gaussian step of ``sigma`` bohr per component, accepted with ``min(1,
        |psi'/psi|**2)`` as in a run: a move forced onto a near-node configuration would
        inflate the inverse Slater matrices far beyond what sampling reaches).  ``counts``
        (a dict) receives the operation counts of the evaluation and of the sweep's moves
        apart (:meth:`operation_counts`; the statistics then cover the moves only)."""
        pos = np.array(positions, np.float64)
        walkers = Walkers(pos.copy(), None)
        walkers.state = self._evaluate(ks, walkers, step).state
        if counts is not None:
            counts["evaluation"] = (pos.shape[0], {k: ks.counts(k) for k in self.kernels})
            ks.reset_profiles()
        rng = np.random.default_rng(step)
        for i in range(self.n_particles):
            new = self.wrap(walkers.positions[:, i] + rng.normal(0.0, sigma, pos[:, i].shape))
            prop = self._propose(ks, walkers, i, new, step)
            with np.errstate(over="ignore"):
                ok = (prop.outside == 0) & (rng.random(pos.shape[0]) < np.exp(
                    np.minimum(2.0 * prop.log_ratio, 0.0)))
            self._accept(ks, walkers, i, ok, prop)
        if counts is not None:
            counts["move"] = (pos.shape[0] * self.n_particles,
                              {k: ks.counts(k) for k in self.kernels})
        return {k: ks.stats(k) for k in self.kernels}  # encoded inputs included

    def operation_counts(self, positions, *, step: int = 0) -> dict:
        """The operations of a float64 evaluation of ``positions`` and of one sweep of
        single-electron moves from them (proposal with the gradient, then acceptance at the
        sweep's rate: :meth:`_profile_sweep`): ``{"evaluation": (walkers, {kernel:
        rows}), "move": (moves, {kernel: rows}), "arrays": [...]}`` (the constant arrays
        the data path stores, :meth:`_stored_arrays`), rows of
        :meth:`~fixedqmc.numerics.kernel_set.KernelSet.counts` summed over the walkers or
        the moves (:func:`fixedqmc.qmc.counts.count_operations` divides)."""
        counts: dict = {}
        self._profile_sweep(self.ks.profiling(), self.wrap(np.array(positions, np.float64)),
                            self._profile_step(), step, counts=counts)
        counts["arrays"] = self._stored_arrays()
        return counts

    def _stored_arrays(self) -> list:
        """The constant arrays a data path stores (``operation_counts``' ``arrays``)."""
        return []

    def formats(self) -> dict:
        return self.ks.formats()
