"""Image halos of the real-space Ewald sum: which images of which charges an electron's pair
terms test (seed 000, the real-space sums of Eq. 2 and Eq. 5).

The cell is cut into ``nb`` sub-boxes per periodic axis of its reduced basis, in reduced
fractional coordinates (a non-periodic axis, the height of a slab or the unused third axis
of a 2D cell, has one box).  Box ``b`` holds, grouped by charge ``j`` in increasing order,
every image ``x_j + R`` (``R = n . lattice``, ``n`` an integer shift on the periodic axes)
that can lie within the cut-off of a point of the box: per periodic axis k the image's
fractional coordinate ``g_k = f_jk + n_k`` must lie within ``reach_k`` of the box's interval
``[b_k / nb, (b_k + 1) / nb)`` (:func:`box_range`).  Two points whose k-th fractional
coordinates differ by t are at least ``t spacing_k`` apart (``spacing_k`` the distance
between lattice planes of axis k), so ``reach_k = R_c (1 + CUTOFF_MARGIN) / spacing_k +
SLACK`` keeps every image the cut-off test ``|x_j + R - x_i|**2 < R_c**2`` can accept (the
margins cover a kernel's rounding of its words).  The box's corners are cut as well: with
``t_k`` the fractional distance of ``g_k`` from the box interval less ``SLACK`` (0 inside;
:func:`box_gap`), the image is kept only if ``sum_k t_k**2 < ball = (R_c (1 +
CUTOFF_MARGIN))**2 / lambda_min``, ``lambda_min`` the least eigenvalue of the lattice's Gram
matrix (``|t . lattice|**2 >= lambda_min |t|**2`` for any cell); this drops about a third
of the entries of a cubic cell at 3 boxes per axis (7-11 % faster at N = 250 and 1024).  The pair sum over ``i < j`` then tests,
for electron i, the entries of i's box (:func:`box_index`) with ``j > i``: a contiguous tail
of the box's list, read in order, so the test loop vectorises.

A box list holds about ``F N`` entries, ``F = prod_k (1/nb + 2 reach_k)``, so electron i
tests about ``F N / 2`` of them and building the lists costs ``nb**d F N`` entries (``d``
periodic axes); :func:`halo_geometry` picks the ``nb`` that minimises ``F (BUILD_COST
nb**d + N / 2)``.  Measured (3D electron gas, one thread, N = 250: ``R_c / L = 0.66``): the
tests of the real-space sum cost 1.2 ns per entry (test and compaction), a list entry
about 6 ns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

#: Relative margin on the cut-off (covers a kernel's rounding of ``x``, ``h``, ``de``, ``s``).
CUTOFF_MARGIN = 1e-2
#: Slack of a box interval in fractional coordinates (covers rounding of the coordinates).
SLACK = 1e-3
#: Cost of one list entry relative to one tested entry (measured, module docstring).
BUILD_COST = 5.0
#: Most boxes per axis considered.
MAX_BOXES = 8


@dataclass(frozen=True)
class HaloGeometry:
    """The halo of a cell and cut-off for ``n`` charges: ``boxes`` (3,) int64 boxes per axis
    (1 on a non-periodic axis), ``reach`` (3,) float64 (fractional units; 1 on a
    non-periodic axis, whose single box then always matches), ``shifts`` (3,) int64 the
    largest ``|n_k|`` (0 on a non-periodic axis), ``per_charge``: a bound on the entries of
    one charge in one box (a box holds at most ``n per_charge``), ``ball`` the bound on
    ``sum_k t_k**2`` (module docstring)."""

    boxes: np.ndarray
    reach: np.ndarray
    shifts: np.ndarray
    per_charge: int
    ball: float


def halo_geometry(lattice: np.ndarray, cutoff: float, n: int, boxes: int | None = None
                  ) -> HaloGeometry:
    """The :class:`HaloGeometry` of a cell with reduced lattice rows ``lattice`` (dim, dim)
    (bohr), real-space cut-off ``cutoff`` (bohr) and ``n`` charges; ``boxes`` per periodic
    axis, default the cost-minimising count (module docstring)."""
    lat = np.asarray(lattice, np.float64)
    dim = lat.shape[0]
    spacing = 1.0 / np.linalg.norm(np.linalg.inv(lat).T, axis=1)
    reach = np.ones(3)
    reach[:dim] = cutoff * (1 + CUTOFF_MARGIN) / spacing + SLACK
    periodic = np.arange(3) < dim

    def fraction(nb):
        return float(np.prod(1 / nb + 2 * reach[:dim]))

    if boxes is None:
        boxes = min(range(1, MAX_BOXES + 1),
                    key=lambda nb: fraction(nb) * (BUILD_COST * nb ** dim + n / 2))
    nb = np.where(periodic, int(boxes), 1).astype(np.int64)
    shifts = np.where(periodic, np.ceil(reach).astype(np.int64) + 1, 0).astype(np.int64)
    # integers n_k with f + n_k in an interval of length 1/nb + 2 reach_k (half open): at most
    # floor(length) + 1 of them (the 1e-9 covers the rounding of the box-range test)
    per = math.prod(int(math.floor(1 / nb[k] + 2 * reach[k] + 1e-9)) + 1 for k in range(dim))
    # |df . lattice|**2 >= lambda_min |df|**2 (lambda_min the Gram matrix's least eigenvalue)
    ball = (cutoff * (1 + CUTOFF_MARGIN)) ** 2 / float(np.linalg.eigvalsh(lat @ lat.T)[0])
    return HaloGeometry(nb, reach, shifts, per, ball)


@njit(inline="always")
def box_range(g, reach, nb):
    """``(lo, hi)``: the boxes (along one axis, of ``nb``) within ``reach`` of the fractional
    coordinate ``g``; none if ``lo > hi``."""
    lo = max(np.int64(0), np.int64(math.floor((g - reach) * nb)))
    hi = min(nb - 1, np.int64(math.floor((g + reach) * nb)))
    return lo, hi


@njit(inline="always")
def box_gap(g, b, nb):
    """``max(0, t - SLACK)**2``, t the distance of the fractional coordinate ``g`` from box
    ``b`` (of ``nb``) along one axis."""
    t = max(0.0, max(b / nb - g, g - (b + 1) / nb) - SLACK)
    return t * t


@njit(inline="always")
def box_index(fb, i, boxes):
    """The box of charge i from its float64 reduced fractional coordinates ``fb`` (N, 3)."""
    b = np.int64(0)
    for k in range(3):
        b = b * boxes[k] + min(np.int64(fb[i, k] * boxes[k]), boxes[k] - 1)
    return b
