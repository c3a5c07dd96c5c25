"""The Hartree-Fock energy of a finite electron-gas cell in closed form (hartree, bohr).

A Slater determinant of plane waves is the Hartree-Fock state of the homogeneous electron gas
(the plane waves are self-consistent by symmetry), and its energy in the same finite cell,
with the same Ewald interaction, is what VMC of that determinant (no Jastrow) must give.

Derivation.  The Ewald energy of N electrons (charge -1) in a neutralising background
(:mod:`.ewald`, seed 000 Eq. 2) is ``V = sum_{i<j} v_E(r_i - r_j) + N v_M / 2``.  Its pair
potential has the Fourier series ``v_E(r) = (1/Omega) sum_{G != 0} v(G) exp(i G . r)`` with
``v(G) = 4 pi / G**2`` (3D, volume Omega) or ``2 pi / G`` (2D, area A in place of Omega):
the Ewald splitting is exact for the periodic Coulomb potential, and the background term
removes ``G = 0``.  ``v_M = lim_{r -> 0} [v_E(r) - 1/r]`` is the Madelung (self-image)
constant: the interaction of a charge with its own images and their background, which in the
parts of :mod:`.ewald` is, per charge, ``2 x (images + recip(N = 1) + self + background(N =
1))``: ``v_M = 2 E_Ewald(one charge)`` (independent of its position and of gamma).

For a determinant per spin of orthonormal plane waves ``Omega**-1/2 exp(i k . r)`` the
density is uniform, ``n/Omega``, and the pair density of electrons of the same spin s is
``rho(r1) rho(r2) - |rho_s(r1, r2)|**2`` with ``rho_s(r1, r2) = (1/Omega) sum_{k in s}
exp(i k . (r1 - r2))``; electrons of opposite spins are uncorrelated.  The Hartree term
``1/2 int int rho rho v_E`` vanishes (``v(0) = 0``), and the exchange term is::

    -1/2 sum_s int int |rho_s(r1, r2)|**2 v_E(r1 - r2)
        = -1/2 sum_s (1/Omega**2) sum_{k, k' in s} Omega v(k - k')
        = -(1 / 2 Omega) sum_s sum_{k != k' in s} v(k - k')

(``k = k'`` drops out as ``v(0) = 0``; ``k - k'`` is a reciprocal lattice vector).  With the
kinetic energy ``sum_k |k|**2 / 2`` of the occupied plane waves::

    E_HF = sum_occ |k|**2 / 2 + N v_M / 2
           - (1/Omega) sum_s sum_{k != k' in s} 2 pi / |k - k'|**2      (3D)
    E_HF = sum_occ |k|**2 / 2 + N v_M / 2
           - (1/A) sum_s sum_{k != k' in s} pi / |k - k'|               (2D)

(ordered pairs).  The local energy of this trial function has a constant kinetic part (a
plane-wave determinant is an eigenfunction of the kinetic operator), so VMC samples only the
fluctuations of the Ewald energy.
"""

from __future__ import annotations

import math

import numpy as np

from fixedqmc.systems.periodic.cell import Cell
from fixedqmc.systems.periodic.ewald import ewald_energy


def madelung(cell: Cell, accuracy: float = 1e-14) -> float:
    """``v_M`` (hartree): twice the Ewald energy of one unit charge (with its neutralising
    background) in ``cell``: its interaction with its own periodic images."""
    return 2.0 * ewald_energy(cell, [-1.0], np.zeros((1, cell.dim)), accuracy=accuracy).total


def exchange(cell: Cell, kpoints: np.ndarray) -> float:
    """The exchange energy (hartree) of one spin's occupied plane waves ``kpoints`` (n, dim)
    (1/bohr): ``-(1/Omega) sum_{k != k'} 2 pi / |k - k'|**2`` (3D) or ``-(1/A) sum_{k != k'}
    pi / |k - k'|`` (2D), ordered pairs."""
    k = np.asarray(kpoints, np.float64)
    if k.shape[0] < 2:
        return 0.0
    q = np.linalg.norm(k[:, None, :] - k[None, :, :], axis=-1)
    off = ~np.eye(k.shape[0], dtype=bool)
    if cell.dim == 3:
        return -float(np.sum(2 * math.pi / q[off] ** 2)) / cell.volume
    return -float(np.sum(math.pi / q[off])) / cell.volume


def hartree_fock_energy(cell: Cell, kpoints_by_spin, accuracy: float = 1e-14) -> dict:
    """Closed-form Hartree-Fock energy of plane-wave determinants (module docstring).

    ``kpoints_by_spin``: per spin, the occupied k (n_s, dim) (1/bohr).  Returns hartree
    values ``kinetic``, ``madelung`` (``N v_M / 2``), ``exchange``, ``total``, ``per_electron``
    and ``v_M``."""
    ks = [np.asarray(k, np.float64).reshape(-1, cell.dim) for k in kpoints_by_spin]
    n = sum(k.shape[0] for k in ks)
    v_m = madelung(cell, accuracy)
    kin = float(sum(0.5 * np.sum(k ** 2) for k in ks))
    ex = float(sum(exchange(cell, k) for k in ks))
    total = kin + 0.5 * n * v_m + ex
    return {"kinetic": kin, "madelung": 0.5 * n * v_m, "exchange": ex, "total": total,
            "per_electron": total / n, "v_M": v_m}
