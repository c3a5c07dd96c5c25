"""Optimisation of linear wave-function parameters on fixed samples: variance minimisation and
the linear method.

For a system with linear parameters (:class:`~fixedqmc.qmc.system.LinearParameters`),
``ln|psi(c)| = F + c . phi``, so with ``G = grad ln|psi|`` and ``D = hbar**2 / 2m`` the
local energy ``E_L = V - D sum_i [lap_i ln|psi| + |G_i|**2]`` of a fixed sample R is a
quadratic function of ``Delta = c - c0`` (:class:`QuadraticEnergy`)::

    E_L(c) = e0 + b . Delta + Delta^T Q Delta
    b_k   = -D sum_i [lap_i phi_k + 2 grad_i phi_k . G_i(c0)]
    Q_kl  = -D sum_i grad_i phi_k . grad_i phi_l

so the energies of every sample at any c cost O(K**2), not a new evaluation.  Two
standard methods use it:

``variance`` (:func:`minimise_variance`)
    minimises the unreweighted variance of E_L over the samples, a quartic polynomial in
    c (Drummond and Needs, Phys. Rev. B 72, 085124 (2005), "varmin-linjas"): robust for
    any start, the method of choice for Jastrow factors with many linear parameters.
``energy`` (:func:`linear_method_step`)
    one step of the linear method (Toulouse and Umrigar, J. Chem. Phys. 126, 084102
    (2007); Umrigar et al., Phys. Rev. Lett. 98, 110201 (2007)): the generalised
    eigenproblem ``H x = E S x`` in the basis ``{psi, dpsi/dc_k - <phi_k> psi}`` with the
    non-symmetric estimator of H; the diagonal shift is chosen among several by the
    energy each step predicts by correlated sampling on the same samples.

:func:`reweighted` gives the energy and variance at other parameters from the same
samples (weights ``|psi(c) / psi(c0)|**2 = exp(2 Delta . phi)``) and the effective sample
fraction of those weights.  Units: the system's energy unit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

#: Diagonal shifts tried by the linear method (energy units, relative to S_kk).
SHIFTS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
#: Smallest effective sample fraction of a step's correlated-sampling weights.
MIN_EFFECTIVE = 0.5


@dataclass
class QuadraticEnergy:
    """Local energies of fixed samples as a quadratic function of the parameters (module
    docstring): ``c0`` (K,), ``e0`` (n_s,), ``b`` (n_s, K), ``Q`` (n_s, K, K) symmetric,
    ``phi`` (n_s, K) the basis values."""

    c0: np.ndarray
    e0: np.ndarray
    b: np.ndarray
    Q: np.ndarray
    phi: np.ndarray

    @classmethod
    def from_samples(cls, c0, local_energy, grad, phi, grad_phi, lap_phi, hbar2_2m: float
                     ) -> "QuadraticEnergy":
        """From an evaluation at c0 (``local_energy`` (n_s,), ``grad`` (n_s, N, 3) grad
        ln|psi|) and the linear basis (``phi`` (n_s, K), ``grad_phi`` (n_s, K, N, 3),
        ``lap_phi`` (n_s, K) summed over particles)."""
        d = float(hbar2_2m)
        b = -d * (lap_phi + 2.0 * np.einsum("skic,sic->sk", grad_phi, grad))
        q = -d * np.einsum("skic,slic->skl", grad_phi, grad_phi)
        return cls(np.asarray(c0, np.float64).copy(), np.asarray(local_energy, np.float64),
                   b, q, np.asarray(phi, np.float64))

    @property
    def n_samples(self) -> int:
        return self.e0.size

    def energies(self, c) -> np.ndarray:
        """E_L of every sample at parameters c (n_s,)."""
        dc = np.asarray(c, np.float64) - self.c0
        return self.e0 + self.b @ dc + np.einsum("skl,k,l->s", self.Q, dc, dc)

    def derivatives(self, c) -> np.ndarray:
        """dE_L/dc of every sample at parameters c (n_s, K)."""
        dc = np.asarray(c, np.float64) - self.c0
        return self.b + 2.0 * np.einsum("skl,l->sk", self.Q, dc)

    def variance(self, c) -> tuple[float, np.ndarray, np.ndarray]:
        """The unreweighted variance of E_L at c, its gradient (K,) and Hessian (K, K)."""
        e = self.energies(c)
        de = e - e.mean()
        dv = self.derivatives(c)
        ddv = dv - dv.mean(axis=0)
        n = e.size
        hess = 2.0 * (ddv.T @ ddv) / n + 4.0 * np.einsum("s,skl->kl", de, self.Q) / n
        return float(np.mean(de ** 2)), 2.0 * (de @ ddv) / n, hess

    def scales(self) -> np.ndarray:
        """Per parameter the spread of its basis function over the samples (K,): a change
        of 1 / scale changes ln|psi| by about 1 (preconditions the minimisers, whose
        parameters can differ by many orders of magnitude, e.g. alpha_l ~ L**-(l+C))."""
        sd = self.phi.std(axis=0)
        return np.where(sd > 0, sd, 1.0)


def reweighted(q: QuadraticEnergy, c) -> dict:
    """Energy, variance and effective sample fraction ``(sum w)**2 / (n sum w**2)`` at
    parameters c from the samples of c0 (weights ``exp(2 (c - c0) . phi)``)."""
    logw = 2.0 * q.phi @ (np.asarray(c, np.float64) - q.c0)
    w = np.exp(logw - logw.max())
    w /= w.sum()
    e = q.energies(c)
    mean = float(w @ e)
    return {"energy": mean, "variance": float(w @ (e - mean) ** 2),
            "effective": float(1.0 / (q.n_samples * np.sum(w ** 2)))}


def minimise_variance(q: QuadraticEnergy) -> tuple[np.ndarray, dict]:
    """Parameters minimising the unreweighted variance of E_L on the samples (a quartic in
    c: trust-region Newton with the exact gradient and Hessian, from c0, in parameters
    scaled by :meth:`QuadraticEnergy.scales`); returns ``(c, info)`` with the variance
    before and after."""
    sc = q.scales()

    def fun(y):
        v, g, h = q.variance(q.c0 + y / sc)
        return v, g / sc, h / np.outer(sc, sc)
    res = scipy.optimize.minimize(lambda y: fun(y)[:2], np.zeros_like(sc), jac=True,
                                  hess=lambda y: fun(y)[2], method="trust-exact")
    c = q.c0 + res.x / sc
    return c, {"variance_before": q.variance(q.c0)[0], "variance_after": q.variance(c)[0],
               "iterations": int(res.nit)}


def linear_method_matrices(q: QuadraticEnergy) -> tuple[np.ndarray, np.ndarray]:
    """H and S (K+1, K+1) of the linear method at c0 in the semi-orthogonal basis
    ``{psi, (phi_k - <phi_k>) psi}``: ``S_kl = <dphi_k dphi_l>``, ``H_00 = <E_L>``,
    ``H_k0 = <dphi_k E_L>``, ``H_0l = <E_L dphi_l> + <dE_L/dc_l>``, ``H_kl = <dphi_k (E_L
    dphi_l + dE_L/dc_l)>``."""
    n, k = q.phi.shape
    dphi = q.phi - q.phi.mean(axis=0)
    e, de = q.e0, q.b
    h = np.empty((k + 1, k + 1))
    s = np.zeros((k + 1, k + 1))
    h[0, 0] = e.mean()
    h[1:, 0] = dphi.T @ e / n
    h[0, 1:] = e @ dphi / n + de.mean(axis=0)
    h[1:, 1:] = dphi.T @ (e[:, None] * dphi + de) / n
    s[0, 0] = 1.0
    s[1:, 1:] = dphi.T @ dphi / n
    return h, s


def linear_method_step(q: QuadraticEnergy, shifts=SHIFTS) -> tuple[np.ndarray, dict]:
    """One linear-method step from c0: for each relative diagonal shift a, the eigenvector
    of ``(H + a diag(0, S_11, .., S_KK)) x = E S x`` (scale-invariant) with the lowest real
    eigenvalue and ``x_0 != 0`` gives ``c = c0 + x_k / x_0``; of these, the one with the
    lowest correlated-sampling energy whose weights keep an effective sample fraction of at
    least :data:`MIN_EFFECTIVE`.  Returns ``(c, info)``; c0 itself if no step qualifies."""
    h, s = linear_method_matrices(q)
    diag = np.diag(np.r_[0.0, np.diag(s)[1:]])
    best = (q.c0.copy(), {"shift": None, **reweighted(q, q.c0)})
    tried = []
    for a in shifts:
        vals, vecs = scipy.linalg.eig(h + a * diag, s)
        ok = np.isfinite(vals) & (np.abs(vals.imag) < 1e-8 * np.maximum(1.0, np.abs(vals.real)))
        ok &= np.abs(vecs[0]) > 1e-12 * np.linalg.norm(vecs, axis=0)
        if not ok.any():
            continue
        j = np.flatnonzero(ok)[np.argmin(vals.real[ok])]
        c = q.c0 + vecs[1:, j].real / vecs[0, j].real
        pred = reweighted(q, c)
        tried.append({"shift": a, **pred})
        if pred["effective"] >= MIN_EFFECTIVE and pred["energy"] < best[1]["energy"]:
            best = (c, {"shift": a, **pred})
    return best[0], {**best[1], "tried": tried}
