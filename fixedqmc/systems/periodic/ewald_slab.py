"""Ewald summation of point charges off the plane of a 2D-periodic cell (a slab): the
float64 reference (the kernels at any precision:
:class:`~fixedqmc.systems.periodic.slab_evaluator.SlabEwaldEvaluator`).

Seed 000, Sec. 2.2, Eq. 5-6 with the height ``z`` that :mod:`~fixedqmc.systems.periodic.ewald`
sets to zero.  A 2D :class:`~fixedqmc.systems.periodic.cell.Cell` (lattice rows in the
plane, area ``A``) is periodic in ``x, y``; a charge sits at ``r = (rho, z)``: ``rho`` in the
plane, ``z`` the height above it, and nothing is periodic in ``z``.  Our ``gamma`` (1/bohr)
multiplies distances, ``erfc(gamma r)`` (the seed's ``gamma`` is its square).  For a
displacement ``r = (rho, z)`` (Eq. 5; ``G = |G|``, ``a = G / 2 gamma``)::

    v_E(r) = (pi / A) sum_{G != 0} F(G, z) / G e^{i G . rho}
           + sum_R erfc(gamma |r - R|) / |r - R|
           - (2 pi / A) h(z),
    F(G, z) = e^{zG} erfc(a + z gamma) + e^{-zG} erfc(a - z gamma),
    h(z)    = z erf(gamma z) + e^{-gamma**2 z**2} / (gamma sqrt(pi)),

and ``v_M`` is Eq. 6 (``z = 0``: ``F(G, 0) = 2 erfc(a)``, ``h(0) = 1 / (gamma sqrt(pi))``).
The energy ``V = sum_{i<j} q_i q_j v_E(r_i - r_j) + 1/2 sum_j q_j**2 v_M`` (Eq. 2) regroups
into the five parts of :class:`~fixedqmc.systems.periodic.ewald.EwaldParts` (hartree):

``real``
    ``sum_{i<j} q_i q_j sum_R erfc(gamma s) / s``, ``s = sqrt(|rho_ij - R|**2 + z_ij**2)``,
    truncated at ``s < real_cutoff``;
``images``, ``self``
    as in 2D at ``z = 0`` (they do not depend on the positions);
``recip``
    ``sum_G w_G sum_j q_j**2 + sum_{i<j} q_i q_j sum_G (2 pi / A) F(G, z_ij) / G
    cos(G . rho_ij)`` over the half set of G vectors (one of each pair +-G), ``w_G = (2 pi /
    A) erfc(a) / G`` the in-plane weights: the i = j pairs of ``|S(G)|**2`` keep their
    ``z = 0`` weight; the cross pairs no longer factorise into ``|S(G)|**2`` when the
    heights differ;
``background``
    the G = 0 term, ``-(2 pi / A) [sum_{i<j} q_i q_j h(z_ij) + 1/2 sum_j q_j**2 h(0)]``,
    computed as the in-plane value ``-sqrt(pi) / (A gamma) (sum_j q_j)**2`` plus the height
    correction ``-(2 pi / A) sum_{i<j} q_i q_j [h(z_ij) - h(0)]``, ``h(z) - h(0) = z
    erf(gamma z) + expm1(-gamma**2 z**2) / (gamma sqrt(pi))`` (no cancellation at small z).
    Unlike the 3D and in-plane cases it depends on the heights even for a neutral set: it
    holds the ``-(2 pi / A) q_i q_j |z_ij|`` interaction of charged sheets.  For a
    non-neutral set each charge's periodic images are neutralised by a uniform sheet of
    opposite charge in the charge's own plane (``v_E`` is the lattice sum minus that sheet's
    potential ``-(2 pi / A) |z|``).

At ``z = 0`` for every charge each part equals that of
:func:`~fixedqmc.systems.periodic.ewald.ewald_energy` (``images``, ``self`` and
``background`` exactly; ``real`` and ``recip`` to rounding).

**Stable form of F.**  ``e^{zG}`` overflows (and ``erfc`` underflows) for large ``zG``.  F is
even in z; with ``t = |z| gamma`` and ``erfcx(x) = e^{x**2} erfc(x)``, and since ``(a +
t)**2 - |z| G = a**2 + t**2``::

    e^{|z|G} erfc(a + t)  = erfcx(a + t) e^{-a**2 - t**2}            (a + t >= 0 always),
    e^{-|z|G} erfc(a - t) = erfcx(a - t) e^{-a**2 - t**2}            if a >= t,
                          = e^{-|z|G} erfc(a - t)   (erfc in (1, 2])  if a < t,

(:func:`slab_factor`): every factor is at most 2, nothing overflows, and the terms that
vanish underflow to 0.  Tested: against a quadrature of the Gaussian-charge form of F for
``|z| <= 15`` bohr (``|z| G`` up to 90), against the direct formula where that is finite,
finite with ``0 <= F <= 2 erfc(a)`` up to ``|z| = 1e3`` bohr (``|z| G = 2e3``, where the
direct formula overflows); energies with heights up to 60 bohr (20 cell lengths).

**Parameters.**  :func:`~fixedqmc.systems.periodic.ewald.ewald_parameters` (the in-plane
rule, unchanged) also serves charges off the plane: (i) every real-space term is at most
its ``z = 0`` value (``s >= |rho - R|``), and the continuum tail ``(2 pi / A) int_{s >
max(R_c, |z|)} erfc(gamma s) ds`` is at most the in-plane one; the image list (``|R| <= R_c + cell.reduced_radius``) holds every
image with ``s < R_c`` since ``|rho - R| <= s``; (ii) ``0 < F(G, z) <= F(G, 0) = 2
erfc(a)`` (F is ``2 e^{-a**2}`` times the average of ``e^{-G |z - z'|}`` over the Gaussian
``z'`` of the screening charge, largest at ``z = 0``), so each neglected reciprocal term is
at most its in-plane value and the i = j terms that the estimate counts are unchanged.
The estimates are continuum (random-phase) estimates, not bounds, in the plane as off it.
Measured (docs/periodic.md; N = 6, 240 configurations per height): the worst error over
``accuracy E_s`` is 1.65 in the plane and at most 1.77 for heights of 0.3 .. 30 bohr
(0.1 .. 10 cell lengths), falling below 1 at the largest heights.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf, erfc, erfcx

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.periodic.cell import Cell
from fixedqmc.systems.periodic.ewald import (PARTS, EwaldParameters, EwaldParts, check_charges,
                                             constant_parts, resolve_parameters)

__all__ = ["slab_ewald_energy", "slab_factor"]


def slab_factor(g, z, gamma: float) -> np.ndarray:
    """``F(G, z) = e^{zG} erfc(G/2 gamma + z gamma) + e^{-zG} erfc(G/2 gamma - z gamma)``
    (dimensionless, seed 000 Eq. 5) in the stable erfcx form of the module docstring, for
    ``G = g > 0`` (1/bohr) and heights ``z`` (bohr), broadcast together; ``gamma`` (1/bohr).
    Even in z; ``0 <= F <= F(G, 0) = 2 erfc(G / 2 gamma)`` (0 once it underflows); no
    overflow for any finite z."""
    g = np.asarray(g, dtype=np.float64)
    z = np.abs(np.asarray(z, dtype=np.float64))
    a = g / (2.0 * gamma)
    t = z * gamma
    damp = np.exp(-a * a - t * t)
    up = erfcx(a + t) * damp
    d = a - t
    down = np.where(d >= 0, erfcx(np.maximum(d, 0.0)) * damp,
                    np.exp(-g * z) * erfc(np.minimum(d, 0.0)))
    return up + down


def _height_term(z, gamma: float) -> np.ndarray:
    """``h(z) - h(0) = z erf(gamma z) + expm1(-gamma**2 z**2) / (gamma sqrt(pi))`` (bohr),
    ``h`` the bracket of the G = 0 term of Eq. 5."""
    z = np.asarray(z, dtype=np.float64)
    return z * erf(gamma * z) + np.expm1(-(gamma * z) ** 2) / (gamma * math.sqrt(math.pi))


def check_slab_walkers(positions) -> tuple[np.ndarray, bool]:
    x = np.asarray(positions, dtype=np.float64)
    shape = x.shape
    single = x.ndim == 2
    if single:
        x = x[None]
    if x.ndim != 3 or x.shape[-1] != 3 or x.shape[1] == 0:
        raise FixedQMCError(f"positions must have shape (N, 3) or (n_walkers, N, 3) for "
                            "slab_ewald_energy (columns x, y in the plane of the 2D cell, "
                            f"then the height z; bohr), got shape {shape}")
    if not np.all(np.isfinite(x)):
        raise FixedQMCError("positions must be finite numbers (bohr); got "
                            f"{int(np.sum(~np.isfinite(x)))} non-finite values")
    return x, single


def check_slab_cell(cell) -> Cell:
    if not isinstance(cell, Cell):
        raise FixedQMCError(f"cell must be a 2D Cell (a (2, 2) lattice, the periodic plane), "
                            f"got {type(cell).__name__}")
    if cell.dim != 2:
        raise FixedQMCError(f"cell must be a 2D cell (a (2, 2) lattice: the periodic plane) "
                            f"for slab_ewald_energy, got a {cell.dim}D cell; use ewald_energy "
                            "for a 3D cell")
    return cell


def _screened_slab(params: EwaldParameters, d: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``sum_R erfc(gamma s) / s``, ``s = sqrt(|d - R|**2 + z**2)``, over the images with
    ``s < real_cutoff``; d (..., 2) reduced in-plane displacements, z (...) heights."""
    e = d[..., None, :] - params.images
    s = np.sqrt(np.einsum("...kc,...kc->...k", e, e) + (z * z)[..., None])
    inside = s < params.real_cutoff
    ss = np.where(inside, s, 1.0)
    return np.where(inside, erfc(params.gamma * ss) / ss, 0.0).sum(axis=-1)


def _pair_recip(params: EwaldParameters, rho: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``sum_G (2 pi / A) F(G, z) / G cos(G . rho)`` over the half set (hartree per unit
    charge squared); rho (..., 2), z (...)."""
    gabs = np.linalg.norm(params.gvectors, axis=1)
    f = slab_factor(gabs, z[..., None], params.gamma)
    phase = rho @ params.gvectors.T
    return (2 * np.pi / params.cell.volume) * np.sum(f / gabs * np.cos(phase), axis=-1)


def slab_ewald_energy(cell: Cell, charges, positions, params: EwaldParameters | None = None,
                      accuracy: float = 1e-12) -> EwaldParts:
    """The Ewald energy (hartree) of ``charges`` (N,) at ``positions`` (N, 3) or
    (n_walkers, N, 3) (bohr: columns x, y in the frame of the 2D ``cell``'s lattice rows,
    column z the height above the plane; not periodic in z) in a 2D ``cell`` (seed 000
    Eq. 2, 5-6), by parts (:class:`~fixedqmc.systems.periodic.ewald.EwaldParts`: floats for
    one configuration, (n_walkers,) arrays otherwise; see the module docstring).

    ``params`` default to :func:`~fixedqmc.systems.periodic.ewald.ewald_parameters` of the
    cell at ``accuracy`` (the in-plane rule, valid off the plane: module docstring; see
    :func:`~fixedqmc.systems.periodic.ewald.resolve_parameters`).  At ``z = 0`` for every
    charge the parts equal those of :func:`~fixedqmc.systems.periodic.ewald.ewald_energy`
    on the in-plane positions.  A 3D cell, positions whose last axis is not 3, non-finite
    values, a charge count different from N or ``params`` of another cell raise
    :class:`~fixedqmc.errors.FixedQMCError` naming the argument.  The float64 reference:
    readable numpy, O(N**2 (n_R + n_G)) work per walker."""
    cell = check_slab_cell(cell)
    x, single = check_slab_walkers(positions)
    q = check_charges(charges, x.shape[1])
    params = resolve_parameters(cell, q, accuracy, params)
    nw, n = x.shape[0], x.shape[1]
    rho, z = x[..., :2], x[..., 2]
    real = np.zeros(nw)
    recip_pairs = np.zeros(nw)
    height = np.zeros(nw)
    for i in range(n - 1):
        qq = q[i] * q[i + 1:]                                  # (P,)
        d_ij = cell.minimum_image(rho[:, i:i + 1] - rho[:, i + 1:])  # (nw, P, 2)
        z_ij = z[:, i:i + 1] - z[:, i + 1:]                          # (nw, P)
        real += _screened_slab(params, d_ij, z_ij) @ qq
        recip_pairs += _pair_recip(params, d_ij, z_ij) @ qq
        height += _height_term(z_ij, params.gamma) @ qq
    recip = float(np.sum(params.weights)) * float(np.sum(q * q)) + recip_pairs
    const = constant_parts(params, q)
    background = const["background"] - 2 * np.pi / cell.volume * height
    parts = EwaldParts(real, np.full(nw, const["images"]), recip, np.full(nw, const["self"]),
                       background)
    if single:
        parts = EwaldParts(*(float(getattr(parts, p)[0]) for p in PARTS))
    return parts

