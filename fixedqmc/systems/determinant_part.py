"""The determinant part of a Slater-Jastrow trial function (:mod:`fixedqmc.systems.parts`).

``D = det[phi_k(r_i)]_up det[phi_k(r_i)]_down`` (seed 001, Eq. 5-7) of the occupied
orbitals of each spin, supplied by the system as an *orbital evaluator*::

    orbitals(ks, pts, s, derivs, step) -> (values (P, n_s), derivatives (P, n_s, 4) | None)

the orbitals of spin ``s`` at points ``pts`` (P, 3) and, with ``derivs``, their gradients
and Laplacians (float64; the evaluator runs its own kernels in ``ks``).  The ratios,
gradients, Laplacians and Sherman-Morrison updates run in the ``determinant`` kernel of
``ks`` (:mod:`fixedqmc.systems.determinants`); fresh inverses are LU in float64.

State: per spin ``s`` the inverse Slater matrix ``inv{s}`` (words of the determinant
kernel, aligned to cache lines), ``ln_det`` and ``sign`` of the product of determinants.
``laplacian = "value"``: :attr:`~fixedqmc.systems.parts.PartValues.lap` is ``lap_i D / D``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fixedqmc.numerics import aligned, bound_words
from fixedqmc.numerics.kernel import N_CHUNKS
from fixedqmc.systems import determinants as det
from fixedqmc.systems.parts import PartMove, PartValues


#: the key of :attr:`KernelSet.unbounded` counting the walker spins whose fresh inverse a
#: bound run cannot bound (a Slater matrix that may be singular within its bounds)
UNBOUNDED_INVERSE = "determinant.fresh_inverse"


@njit(cache=True)
def _commit(mask, ratio, ln_det, sign):
    """For the walkers ``w`` in ``mask`` with ``ratio[w] != 0``, ``ln_det[w]`` and
    ``sign[w]`` take the determinant ratio; returns those walkers (one compiled pass instead
    of a dozen NumPy calls per move)."""
    m = np.empty(mask.shape[0], np.bool_)
    for w in range(mask.shape[0]):
        m[w] = mask[w] and ratio[w] != 0
        if m[w]:
            ln_det[w] += np.log(np.abs(ratio[w]))
            sign[w] *= np.sign(ratio[w])
    return m


class DeterminantPart:
    """Per-spin Slater determinants of ``n`` = (n_up, n_down) particles (the first ``n_up``
    spin up) over the orbital evaluator ``orbitals`` (module docstring)."""

    laplacian = "value"

    def __init__(self, n: tuple[int, int], orbitals):
        self.n = (int(n[0]), int(n[1]))
        self.orbitals = orbitals
        self._scratch = aligned.Scratch()

    # -- spins and Slater matrices ------------------------------------------------------
    def _first(self, s: int) -> int:
        return 0 if s == 0 else self.n[0]

    def _spins(self):
        return [s for s in (0, 1) if self.n[s]]

    def spin_of(self, i: int) -> tuple[int, int]:
        """(spin, index within the spin) of particle ``i``."""
        return (0, i) if i < self.n[0] else (1, i - self.n[0])

    def _slater(self, ks, pos, s: int, derivs: bool, step: int):
        """Slater matrices M[w, i, k] of spin s and (with derivs) (n_w, n_s, n_s, 4)."""
        lo, m = self._first(s), self.n[s]
        nw = pos.shape[0]
        vals, d = self.orbitals(ks, np.ascontiguousarray(pos[:, lo:lo + m].reshape(-1, 3)),
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

    @staticmethod
    def _inverses(state: dict, s: int) -> np.ndarray:
        """The inverse Slater matrices of spin ``s`` (n_w, n_s, n_s), re-stored aligned to
        cache lines if they are not (walkers restored from a checkpoint, or selected by a
        driver): the ratio and update kernels stream them at every move."""
        inv = state[f"inv{s}"]
        if not aligned.is_aligned(inv):
            inv = state[f"inv{s}"] = aligned.copy(inv)
        return inv

    # -- the part protocol --------------------------------------------------------------
    def evaluate(self, ks, pos, step: int, state: dict | None = None) -> PartValues:
        """ln|D|, its sign, grad_i ln|D| and lap_i D / D (contractions of the orbital
        derivatives with the inverses, in the determinant kernel)."""
        if ks.trial is not None:
            return self._evaluate_bound(ks, pos, step)
        nw, n = pos.shape[0], sum(self.n)
        mats = {s: self._slater(ks, pos, s, True, step) for s in self._spins()}
        if not state:
            state = self._fresh(ks, {s: M for s, (M, _) in mats.items()}, nw, step)
        grad = np.zeros((nw, n, 3))
        lap = np.zeros((nw, n))
        for s, (_, d) in mats.items():
            lo, m = self._first(s), self.n[s]
            g = self._contract(ks, d, state[f"inv{s}"], step)
            grad[:, lo:lo + m] = g[..., :3]
            lap[:, lo:lo + m] = g[..., 3]
        return PartValues(state["ln_det"], state["sign"], grad, lap, state)

    @staticmethod
    def _contract(ks, d, inv, step: int) -> np.ndarray:
        """``sum_k d[w, i, k, :] B[k, i]`` (n_w, n_s, 4) of orbital derivatives ``d``
        (n_w, n_s, n_s, 4) and inverses ``inv`` (``inv`` words) in the determinant
        kernel."""
        ct = ks.context("determinant", step)
        out = np.zeros(d.shape[:2] + (4,), ks["determinant"].dtype)
        det.contract_kernel(ct, ks.encode("determinant", "grow", d.transpose(0, 1, 3, 2),
                                          step), inv, out)
        ks.report("determinant", ct)
        return ks.decode("determinant", "gsum", out)

    def _evaluate_bound(self, ks, pos, step: int) -> PartValues:
        """:meth:`evaluate` in a bound set (:meth:`~fixedqmc.numerics.kernel_set.
        KernelSet.bounding`): bound words of ``ln|D|``, grad_i ln|D| and lap_i D / D, and a
        fresh state in bound words.  The inverses are bounded on the host
        (:func:`~fixedqmc.systems.determinants.fresh_inverse_bound`, from the trial's own
        Slater matrices at ``pos`` beside the bound run's), and each contraction is bounded
        in two parts: the kernel's own roundings (the determinant kernel run in the bound
        context on each side's float64 inputs taken as exact: the bound run's values for
        float64's share, the trial's for the trial's) plus the propagated difference of
        those inputs from the exact ones (:func:`~fixedqmc.systems.determinants.
        contraction_bound`), which keeps each electron's row of ``grad phi M^-1`` whole.
        Walker spins whose inverse cannot be bounded are counted in the set's
        ``unbounded`` under :data:`UNBOUNDED_INVERSE`."""
        nw, n = pos.shape[0], sum(self.n)
        state = {"ln_det": np.zeros(nw), "sign": np.ones(nw)}
        grad = np.zeros((nw, n, 3), np.complex128)
        lap = np.zeros((nw, n), np.complex128)
        for s in self._spins():
            lo, m = self._first(s), self.n[s]
            M, d = self._slater(ks, pos, s, True, step)
            A, d_trial = self._slater(ks.trial, pos, s, True, step)
            sign, ln_det, B, (v, t) = det.fresh_inverse_bound(M, A)
            lost = int((~np.isfinite(B.imag)).any(axis=(1, 2)).sum())  # near a node
            ks.unbounded[UNBOUNDED_INVERSE] = ks.unbounded.get(UNBOUNDED_INVERSE, 0) + lost
            state[f"inv{s}"] = B
            state["ln_det"] = bound_words.add(state["ln_det"], ln_det)
            state["sign"] *= sign
            dv, r_d, b_d = bound_words.split(d)
            g_v = bound_words.split(self._contract(ks, bound_words.words(dv, 0.0),
                                                   bound_words.words(v.X, 0.0), step))
            g_t = bound_words.split(self._contract(ks, bound_words.words(d_trial, 0.0),
                                                   bound_words.words(t.X, 0.0), step))
            g = bound_words.join(
                g_v[0],
                g_v[1] + det.contraction_bound(dv.transpose(0, 1, 3, 2), v,
                                               r_d.transpose(0, 1, 3, 2)),
                g_t[2] + det.contraction_bound(d_trial.transpose(0, 1, 3, 2), t,
                                               b_d.transpose(0, 1, 3, 2)))
            grad[:, lo:lo + m] = g[..., :3]
            lap[:, lo:lo + m] = g[..., 3]
        return PartValues(state["ln_det"], state["sign"], grad, lap, state)

    def propose(self, ks, pos, state: dict, i: int, new, step: int, grad: bool = True
                ) -> PartMove:
        """The determinant ratio of moving particle ``i`` to ``new`` (n_w, 3) and, with
        ``grad``, grad_i ln|D| there (zero where the ratio is); without, the orbital
        derivatives are not computed."""
        s, j = self.spin_of(i)
        new = np.ascontiguousarray(new, np.float64)
        nw = new.shape[0]
        vals, d = self.orbitals(ks, new, s, grad, step)
        ct = ks.context("determinant", step)
        dt = ks["determinant"].dtype
        rows = ks.encode("determinant", "row", vals, step)
        out_r = np.zeros(nw, dt)
        out_g = np.zeros((nw, 3 if grad else 0), dt)
        grows = (d[..., :3].transpose(0, 2, 1) if grad
                 else np.zeros((nw, 0, self.n[s]), np.float64))
        det.ratio_kernel(ct, rows, self._inverses(state, s), j,
                         ks.encode("determinant", "grow", grows, step), out_r, out_g)
        ks.report("determinant", ct)
        ratio = ks.decode("determinant", "ratio", out_r)
        with np.errstate(divide="ignore"):
            log_ratio = np.log(np.abs(ratio))
        g = (np.where((ratio == 0)[:, None], 0.0, ks.decode("determinant", "grad", out_g))
             if grad else None)
        return PartMove(log_ratio, np.sign(ratio), g, (rows, out_r, ratio, step))

    def accept(self, ks, state: dict, i: int, mask, move: PartMove) -> None:
        """ln|D| and its sign take the ratio, and the inverses of particle ``i``'s spin a
        Sherman-Morrison update, for the walkers in ``mask`` whose ratio is nonzero."""
        s, j = self.spin_of(i)
        rows, ratio_words, ratio, step = move.saved
        m = _commit(np.asarray(mask, np.bool_), ratio, state["ln_det"], state["sign"])
        ct = ks.context("determinant", step)
        dt, n = ks["determinant"].dtype, self.n[s]
        det.update_kernel(ct, rows, self._inverses(state, s), j, m, ratio_words,
                          self._scratch.get(("update", dt, n),
                                            lambda: np.empty((N_CHUNKS, 3, n), dt)))
        ks.report("determinant", ct)

    def recompute(self, ks, pos, step: int, state: dict | None = None) -> tuple[dict, dict]:
        """Fresh inverses at ``pos`` and ``inverse_error``, the largest ``|M M^-1 - I|`` of
        the inverses of ``state`` (the incrementally updated ones; 0 without)."""
        Ms = {s: self._slater(ks, pos, s, False, step)[0] for s in self._spins()}
        err = 0.0 if not state else max(
            (det.inverse_error(M, ks.decode("determinant", "inv", state[f"inv{s}"]))
             for s, M in Ms.items()), default=0.0)
        return self._fresh(ks, Ms, pos.shape[0], step), {"inverse_error": err}
