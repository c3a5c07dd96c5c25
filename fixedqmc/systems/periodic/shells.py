"""Closed shells of plane waves: the occupied wave vectors of a homogeneous electron gas.

The one-electron orbitals of a periodic cell with no external potential are plane waves
``exp(i k . r)`` with ``k = G`` a reciprocal lattice vector of the cell (periodic boundary
conditions, no twist), kinetic energy ``|k|**2 / 2`` (hartree, bohr).  Filling them in order
of ``|k|`` gives a non-degenerate ground state only when the last shell (the vectors of
equal ``|k|``) is complete: a *closed shell*.  The allowed electron counts per spin are the
cumulative shell sizes, e.g. for a simple cubic cell ``1, 7, 19, 27, 33, 57, 81, ...``
(shells ``|n|**2 = 0, 1, 2, 3, 4, 5, 6, ...`` of 1, 6, 12, 8, 6, 24, 24 vectors) and for a
square 2D cell ``1, 5, 9, 13, 21, 25, ...``.

Every shell is symmetric under ``k -> -k``, so a closed shell of ``n`` vectors is ``k = 0``
and ``(n - 1) / 2`` pairs ``+-k``; the real orbitals of :mod:`.plane_waves` use one vector
of each pair (:func:`occupied`: the *half set*, first nonzero integer coordinate positive).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.periodic.cell import Cell

#: |k|**2 values closer than this (relative) belong to one shell.
SHELL_RTOL = 1e-9
#: How many allowed counts error messages list.
N_LISTED = 10


def _reciprocal_points(cell: Cell, n_min: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer coordinates (K, dim) and vectors (K, dim) of all G with ``|G| <= r`` for an
    ``r`` enclosing at least ``n_min`` vectors plus one more complete shell, sorted by |G|."""
    rec = Cell(cell.reciprocal, key="reciprocal lattice")
    r = 2 * np.pi / cell.plane_spacings.min()
    while True:
        pts = rec.lattice_points(r)
        if pts.shape[0] > n_min + 1:
            break
        r *= 1.5
    # points on the sphere |G| = r may belong to a shell that is cut by the rounding of r:
    # keep only shells strictly inside
    g2 = np.einsum("ij,ij->i", pts, pts)
    inside = g2 < r * r * (1 - 4 * SHELL_RTOL)
    pts = pts[inside]
    n = np.rint(pts @ np.linalg.inv(cell.reciprocal)).astype(np.int64)
    return n, pts


def shell_sizes(cell: Cell, n_max: int) -> np.ndarray:
    """Sizes of the shells of reciprocal lattice vectors, smallest |G| first, until their
    cumulative count reaches at least ``n_max``."""
    _, g = _reciprocal_points(cell, n_max)
    g2 = np.einsum("ij,ij->i", g, g)
    sizes, start = [], 0
    for k in range(1, g2.size + 1):
        if k == g2.size or g2[k] > g2[start] + SHELL_RTOL * max(g2[start], g2[1]):
            sizes.append(k - start)
            start = k
            if sum(sizes) >= n_max:
                break
    return np.array(sizes, dtype=np.int64)


def closed_shell_counts(cell: Cell, n_max: int = 0, n_listed: int = N_LISTED) -> tuple:
    """Allowed electron counts per spin (closed shells) up to ``n_max`` and at least the
    first ``n_listed``."""
    need = max(int(n_max), 1)
    while True:
        counts = np.cumsum(shell_sizes(cell, need))
        if counts.size >= n_listed and counts[-1] >= n_max:
            return tuple(int(c) for c in counts)
        need = max(2 * need, int(counts[-1]) + 1)


def allowed_text(counts, n: int = 0, scale: int = 1) -> str:
    """``"1, 7, 19, ..."``: the counts (times ``scale``) up to the first above ``n`` and at
    least :data:`N_LISTED` of them."""
    upto = next((i for i, c in enumerate(counts) if c > n), len(counts) - 1)
    shown = counts[:max(N_LISTED, upto + 1)]
    return ", ".join(str(scale * c) for c in shown) + ", ..."


def is_closed_shell(cell: Cell, n: int) -> bool:
    return n == 0 or n in closed_shell_counts(cell, n, 1)


@dataclass(frozen=True)
class Occupied:
    """The occupied plane waves of one spin: ``n`` electrons (a closed shell), ``k = 0`` and
    the half set of ``(n - 1) / 2`` vectors ``k`` (one of each +-k pair), sorted by |k|.

    ``gints`` (n_half, dim) int64 integer coordinates in the cell's reciprocal basis
    (``k = gints @ cell.reciprocal``, ``k . r = 2 pi gints . f`` with ``f`` the fractional
    coordinates of ``cell.lattice``); ``kvecs`` (n_half, dim) 1/bohr; ``all_k`` (n, dim)
    every occupied k (0, then +k and -k of each pair)."""

    n: int
    gints: np.ndarray
    kvecs: np.ndarray

    @property
    def n_half(self) -> int:
        return int(self.gints.shape[0])

    @property
    def all_k(self) -> np.ndarray:
        dim = self.kvecs.shape[1]
        return np.concatenate([np.zeros((1, dim)), self.kvecs, -self.kvecs])

    @property
    def kinetic(self) -> float:
        """``sum_k |k|**2 / 2`` over the occupied k (hartree)."""
        return float(np.sum(self.kvecs ** 2))  # each +-k pair counts twice: 2 |k|**2 / 2


def occupied(cell: Cell, n: int, key: str = "n") -> Occupied:
    """The ``n`` lowest plane waves of ``cell`` (one spin).  ``n`` must be a closed-shell
    count (0 allowed: no electrons); otherwise a :class:`FixedQMCError` naming ``key`` lists
    the allowed counts."""
    dim = cell.dim
    if n == 0:
        return Occupied(0, np.zeros((0, dim), np.int64), np.zeros((0, dim)))
    counts = closed_shell_counts(cell, n)
    if n not in counts:
        raise FixedQMCError(f"{key} = {n} is not a closed shell of this cell's plane waves; "
                            f"allowed counts per spin: {allowed_text(counts, n)}")
    gints, g = _reciprocal_points(cell, n)
    gints, g = gints[:n], g[:n]
    first = np.array([next((c for c in row if c != 0), 0) for row in gints])
    half = first > 0
    return Occupied(n, gints[half], g[half])
