"""Minimum-image pair geometry inside the periodic kernels, written once (seed 000, Sec. 2).

The first variables of the Jastrow pair kernel (``jastrow_u``):
two electrons' reduced fractional coordinates ``f_i``, ``f_j`` in [0, 1), the difference
reduced to [-1/2, 1/2] by ``round_int`` (``dred = dfrac - nint``), the cartesian displacement
``d_c = sum_k dred_k lattice[k, c]`` in the cell's reduced basis (bohr), then per image ``R``
of a kernel's list ``de = d - R`` and ``s = |d - R|**2``.  A kernel's variable list starts
with :data:`PAIR_VARIABLES`, so the ids below are its own.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fixedqmc.numerics.kernel import acc_add, acc_value, acc_zero, const, mul, sub
from fixedqmc.numerics.kernel_ops import round_int

PAIR_VARIABLES = (
    ("frac", "a reduced fractional coordinate, [0, 1)"),
    ("dfrac", "f_i - f_j"),
    ("nint", "the nearest integer of dfrac"),
    ("dred", "dfrac - nint, [-1/2, 1/2]"),
    ("lattice", "a component of a reduced lattice vector (bohr)"),
    ("dterm", "dred_k lattice[k, c] (bohr)"),
    ("d", "a displacement component (sum, bohr)"),
    ("image", "a component of an image vector R (bohr)"),
    ("de", "d - R, a component (bohr)"),
    ("de2", "(d - R)**2 (bohr**2)"),
    ("s", "|d - R|**2 (sum, bohr**2)"),
)
FRAC, DFRAC, NINT, DRED, LAT, DTERM, D, IMAGE, DE, DE2, S = range(len(PAIR_VARIABLES))


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _reduced(e, fi, fj):
    """f_i - f_j reduced to [-1/2, 1/2] (``dred``)."""
    df = sub(e, fi, fj, DFRAC)
    return sub(e, df, round_int(e, df, NINT), DRED)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _cartesian(e, r0, r1, r2, lat, c):
    """Component c of ``sum_k dred_k lattice[k]`` (``d``)."""
    acc = acc_add(e, acc_zero(e, D), mul(e, r0, const(e, lat[0, c], LAT), DTERM), D)
    acc = acc_add(e, acc, mul(e, r1, const(e, lat[1, c], LAT), DTERM), D)
    acc = acc_add(e, acc, mul(e, r2, const(e, lat[2, c], LAT), DTERM), D)
    return acc_value(e, acc, D)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def displacement(e, fi0, fi1, fi2, fj0, fj1, fj2, lat):
    """The reduced displacement ``d`` (three values of variable ``d``, bohr) of two
    electrons given by their fractional-coordinate values; ``lat`` (3, 3) float64 rows."""
    r0, r1, r2 = _reduced(e, fi0, fj0), _reduced(e, fi1, fj1), _reduced(e, fi2, fj2)
    return (_cartesian(e, r0, r1, r2, lat, 0), _cartesian(e, r0, r1, r2, lat, 1),
            _cartesian(e, r0, r1, r2, lat, 2))


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def to_image(e, d0, d1, d2, img, m):
    """``(de_x, de_y, de_z, s)``: ``d - R`` for image ``R = img[:, m]`` (bohr; ``img`` of
    shape (3, n_R), so a loop over images reads each component in order) and its square
    length ``s`` (bohr**2)."""
    e0 = sub(e, d0, const(e, img[0, m], IMAGE), DE)
    e1 = sub(e, d1, const(e, img[1, m], IMAGE), DE)
    e2 = sub(e, d2, const(e, img[2, m], IMAGE), DE)
    acc = acc_add(e, acc_zero(e, S), mul(e, e0, e0, DE2), S)
    acc = acc_add(e, acc, mul(e, e1, e1, DE2), S)
    return e0, e1, e2, acc_value(e, acc_add(e, acc, mul(e, e2, e2, DE2), S), S)


@njit(inline="always")
def by_axis(f, dtype):
    """The words (or floats) of coordinates ``f`` (N, 3) copied by axis, (3, N) of
    ``dtype``: loops over the particles then load them in order (and vectorise)."""
    n = f.shape[0]
    ft = np.empty((3, n), dtype)
    for j in range(n):
        ft[0, j], ft[1, j], ft[2, j] = f[j, 0], f[j, 1], f[j, 2]
    return ft
