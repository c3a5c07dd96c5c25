"""Initial walker configurations of a cluster: arrays of shape (n_walkers, n_atoms, 3).

Units are those of the system (angstrom for helium).  Every configuration is centred on
its centre of mass (the Hamiltonians here are translation invariant, and fixed-point
position formats then need only the cluster's extent).
"""

from __future__ import annotations

import math

import numpy as np

from fixedqmc.errors import FixedQMCError

GEOMETRIES = ("random", "lattice")


def centre(positions: np.ndarray) -> np.ndarray:
    """Positions with each walker's centre of mass moved to the origin."""
    return positions - positions.mean(axis=-2, keepdims=True)


def cubic_lattice(n_atoms: int, spacing: float) -> np.ndarray:
    """The first ``n_atoms`` sites of the smallest simple-cubic block holding them, nearest
    neighbours ``spacing`` apart, centred: (n_atoms, 3).  64 atoms at 8 bohr = 4.2334 A is
    the 4x4x4 start of HAQMC (seed 002, Sec. 5)."""
    side = math.ceil(round(n_atoms ** (1 / 3), 9))
    g = np.arange(side) * spacing
    sites = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)[:n_atoms]
    return centre(sites)


def initial_walkers(n_walkers: int, n_atoms: int, rng: np.random.Generator, *,
                    geometry: str = "lattice", spacing: float = 4.2334, jitter: float = 0.1
                    ) -> np.ndarray:
    """Starting configurations.

    ``"lattice"``: :func:`cubic_lattice` plus a uniform displacement of up to ``jitter``
    times the spacing per coordinate (so walkers differ); ``"random"``: atoms uniform in a
    sphere holding them at the density of that lattice (one atom per spacing**3), rejected
    and redrawn while two atoms are closer than 0.6 spacing.
    """
    if geometry not in GEOMETRIES:
        raise FixedQMCError(f"geometry: {geometry!r} is not one of {', '.join(GEOMETRIES)}")
    if not (math.isfinite(spacing) and spacing > 0):
        raise FixedQMCError(f"spacing must be a positive length, got {spacing!r}")
    if geometry == "lattice":
        base = cubic_lattice(n_atoms, spacing)
        shift = rng.uniform(-jitter, jitter, (n_walkers, n_atoms, 3)) * spacing
        return centre(base[None] + shift)
    radius = spacing * (3 * n_atoms / (4 * math.pi)) ** (1 / 3)
    out = np.empty((n_walkers, n_atoms, 3))
    for w in range(n_walkers):
        for i in range(n_atoms):
            for _ in range(10_000):
                p = rng.uniform(-radius, radius, 3)
                if p @ p <= radius * radius and (i == 0 or np.min(
                        np.sum((out[w, :i] - p) ** 2, axis=1)) >= (0.6 * spacing) ** 2):
                    break
            out[w, i] = p
    return centre(out)
