"""Exact samples of ``|det[exp(i k_a . r_j)]|**2``: electrons of one spin in a plane-wave
Slater determinant, drawn without Markov chains.

The squared determinant of ``n`` orthonormal orbitals is (up to ``n!``) the density of a
projection determinantal point process, which is sampled one electron at a time (Hough,
Krishnapur, Peres & Virag, Probab. Surveys 3, 206 (2006), Alg. 18): with the feature vector
``v(r) = n**-1/2 (exp(i k_a . r))_a`` (``|v| = 1``), electron ``j`` has the density
``(n/Omega) |v(r) - P_j v(r)|**2 / (n - j)``, ``P_j`` the projector on the span of ``v`` at
the electrons drawn before.  That density is at most ``n / (Omega (n - j))`` times the
uniform one, so a uniform proposal accepted with probability ``|v - P_j v|**2`` samples it
exactly (on average ``n H_n`` proposals per configuration).  Used for starting walkers of
the electron gas: a Slater determinant's walkers then start in equilibrium.
"""

from __future__ import annotations

import math

import numpy as np

from fixedqmc.systems.periodic.cell import Cell


def sample_determinant(cell: Cell, kpoints: np.ndarray, n_samples: int,
                       rng: np.random.Generator) -> np.ndarray:
    """``n_samples`` exact samples of the positions (n_samples, n, dim) (bohr, in the cell)
    of ``n`` electrons in the plane waves ``kpoints`` (n, dim) (1/bohr) of ``cell``."""
    k = np.asarray(kpoints, np.float64)
    n, dim = k.shape
    out = np.zeros((n_samples, n, dim))
    basis = np.zeros((n_samples, n, n), complex)  # orthonormal directions of P_j
    for j in range(n):
        todo = np.arange(n_samples)
        while todo.size:
            x = rng.uniform(0.0, 1.0, (todo.size, dim)) @ cell.lattice
            v = np.exp(1j * x @ k.T) / math.sqrt(n)
            b = basis[todo, :j]
            resid = v - np.einsum("wi,wia->wa", np.einsum("wia,wa->wi", b.conj(), v), b)
            p = np.sum(resid.real ** 2 + resid.imag ** 2, axis=1)
            ok = rng.uniform(size=todo.size) < p
            w = todo[ok]
            out[w, j] = x[ok]
            basis[w, j] = resid[ok] / np.sqrt(p[ok])[:, None]
            todo = todo[~ok]
    return out
