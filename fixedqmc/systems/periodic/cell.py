"""Simulation cells of periodic systems, 3D and 2D (seed 000, Sec. 2.2).

A :class:`Cell` is a lattice given by its vectors as the rows of a ``(3, 3)`` array (a 3D
cell, volume ``Omega_s``) or a ``(2, 2)`` array (a periodic plane, area ``A_s``: the 2D
electron gas of the seed's Eq. 5-6 with every particle in the plane ``z = 0``, so positions
are 2D vectors; the out-of-plane coordinate ``z`` of Eq. 5 is not used).  Units: bohr.

Conventions (``A`` the lattice, rows ``a_i``; positions ``x`` of shape ``(..., dim)``):

* fractional coordinates ``f = x A^-1`` (so ``x = f A``);
* the reciprocal lattice has rows ``b_i`` with ``b_i . a_j = 2 pi delta_ij``, i.e.
  ``B = 2 pi (A^-1)^T``; a reciprocal lattice vector is ``G = n B`` with integer ``n``, and
  ``G . x = 2 pi n . f``;
* :meth:`Cell.minimum_image` is exact for any cell shape: the displacement is first reduced
  in the fractional coordinates of a *reduced* basis (shortest vectors spanning the same
  lattice, :func:`reduce_basis`) to ``d0`` with ``|d0| <= rho = 1/2 sum_i |a'_i|``; the
  shortest image ``d0 - R`` has ``|d0 - R| <= |d0|``, so ``|R| <= 2 rho`` and the search over
  the lattice vectors within ``2 rho`` (precomputed) is complete.  In a cubic cell this is
  the usual rounding; in a skewed cell rounding alone can miss the nearest image;
* :meth:`Cell.wrap_fractional` returns fractional coordinates in ``[0, 1)`` exactly;
* ``inscribed_radius`` is half the shortest lattice-vector length: the radius of the
  largest sphere inside the Wigner-Seitz cell, the bound for a Jastrow cut-off ``L_u``.

Bad input raises :class:`~fixedqmc.errors.FixedQMCError` naming the key and what is allowed.
"""

from __future__ import annotations

import itertools
import math
from functools import cached_property

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import check_int, check_positive

#: A cell whose volume is below this fraction of the product of its vector lengths is
#: singular (its vectors are linearly dependent to rounding).
SINGULAR_RTOL = 1e-10
HEG_SHAPES = {3: ("cubic", "bcc", "fcc"), 2: ("square", "hexagonal")}


def reduce_basis(lattice: np.ndarray) -> np.ndarray:
    """A basis of the same lattice with short, nearly orthogonal vectors (pairwise
    Lagrange-Gauss reduction: subtract the nearest integer multiple of another vector while
    that shortens a vector).  Unimodular steps only, so the determinant (and handedness) is
    unchanged.  ``lattice`` (d, d) rows; returns (d, d)."""
    b = np.array(lattice, dtype=np.float64)
    d = b.shape[0]
    for _ in range(1000):
        changed = False
        for i in range(d):
            for j in range(d):
                if i == j:
                    continue
                m = np.rint(b[i] @ b[j] / (b[j] @ b[j]))
                if m != 0:
                    new = b[i] - m * b[j]
                    if new @ new < (b[i] @ b[i]) * (1 - 1e-12):
                        b[i] = new
                        changed = True
        if not changed:
            return b
    return b  # pragma: no cover - lengths decrease strictly, so the loop ends


def _check_lattice(lattice, key: str) -> np.ndarray:
    try:
        a = np.array(lattice, dtype=np.float64)
    except (TypeError, ValueError):
        raise FixedQMCError(f"{key} must be a (3, 3) or (2, 2) array of lattice vectors "
                            f"(rows, bohr), got {lattice!r}") from None
    if a.shape not in ((3, 3), (2, 2)):
        raise FixedQMCError(f"{key} must be a (3, 3) array (3D cell) or a (2, 2) array "
                            f"(2D cell) of lattice vectors as rows (bohr), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise FixedQMCError(f"{key} must hold finite numbers, got {a.tolist()}")
    det = float(np.linalg.det(a))
    scale = float(np.prod(np.linalg.norm(a, axis=1)))
    if scale == 0 or abs(det) <= SINGULAR_RTOL * scale:
        raise FixedQMCError(f"{key} = {a.tolist()} is singular (determinant {det:.3g}): "
                            "the lattice vectors must be linearly independent")
    if det < 0:
        raise FixedQMCError(f"{key} = {a.tolist()} is left-handed (determinant {det:.6g} < 0); "
                            "allowed: a right-handed cell (determinant > 0), e.g. swap two "
                            "lattice vectors")
    return a


class Cell:
    """A periodic simulation cell: ``lattice`` rows are the lattice vectors (bohr), shape
    (3, 3) for a 3D cell or (2, 2) for a 2D cell (a periodic plane); ``key`` names the input
    in error messages."""

    def __init__(self, lattice, key: str = "cell.lattice"):
        a = _check_lattice(lattice, key)
        a.setflags(write=False)
        self.lattice = a
        self.dim = a.shape[0]
        self.key = key
        self._inv = np.linalg.inv(a)
        red = reduce_basis(a)
        red.setflags(write=False)
        #: a reduced basis of the same lattice (same determinant), shape (dim, dim)
        self.reduced = red
        self._red_inv = np.linalg.inv(red)
        rho = 0.5 * float(np.linalg.norm(red, axis=1).sum())
        #: bound on |d0| of a displacement reduced in the reduced basis (bohr)
        self.reduced_radius = rho
        self._mi_vectors = self.lattice_points(2.0 * rho * (1 + 1e-12))

    # -- geometry -----------------------------------------------------------------------
    @property
    def volume(self) -> float:
        """Volume ``Omega_s`` (bohr**3) of a 3D cell, area ``A_s`` (bohr**2) of a 2D cell."""
        return float(np.linalg.det(self.lattice))

    @property
    def area(self) -> float:
        """Area of a 2D cell (bohr**2)."""
        if self.dim != 2:
            raise FixedQMCError("cell.area is defined for 2D cells; use cell.volume")
        return self.volume

    @cached_property
    def reciprocal(self) -> np.ndarray:
        """Reciprocal lattice vectors as rows, ``b_i . a_j = 2 pi delta_ij`` (1/bohr)."""
        b = 2.0 * np.pi * self._inv.T
        b.setflags(write=False)
        return b

    def lattice_points(self, radius: float, basis: np.ndarray | None = None) -> np.ndarray:
        """All lattice vectors ``R`` with ``|R| <= radius`` (bohr), sorted by length (the
        origin first), shape (K, dim).  Enumerated in the reduced basis (or ``basis``, a
        basis of the same lattice): ``|n_i| <= radius |b*_i| / 2 pi`` bounds the integer
        coordinates of every such vector."""
        basis = self.reduced if basis is None else np.asarray(basis, np.float64)
        recip = np.linalg.inv(basis).T  # rows b*_i / 2 pi
        nmax = [int(math.floor(radius * np.linalg.norm(r))) + 1 for r in recip]
        grid = np.array(list(itertools.product(*(range(-m, m + 1) for m in nmax))),
                        dtype=np.float64)
        pts = grid @ basis
        d2 = np.einsum("ij,ij->i", pts, pts)
        keep = d2 <= radius * radius
        order = np.argsort(d2[keep], kind="stable")
        return pts[keep][order]

    @cached_property
    def shortest_vector(self) -> float:
        """Length of the shortest nonzero lattice vector (bohr)."""
        r = float(np.linalg.norm(self.reduced, axis=1).min())
        pts = self.lattice_points(r * (1 + 1e-12))
        return float(np.linalg.norm(pts[1:], axis=1).min())

    @property
    def inscribed_radius(self) -> float:
        """Radius of the largest sphere inscribed in the Wigner-Seitz cell: half the shortest
        lattice-vector length (bohr).  A two-body Jastrow cut-off ``L_u`` must not exceed it."""
        return 0.5 * self.shortest_vector

    @cached_property
    def plane_spacings(self) -> np.ndarray:
        """Distances between adjacent lattice planes ``2 pi / |b_i|`` (bohr), shape (dim,)."""
        return 2.0 * np.pi / np.linalg.norm(self.reciprocal, axis=1)

    # -- positions ------------------------------------------------------------------------
    def _points(self, x, key: str) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise FixedQMCError(f"{key} must have shape (..., {self.dim}) for a {self.dim}D "
                                f"cell, got shape {x.shape}")
        return x

    def to_fractional(self, x) -> np.ndarray:
        """Fractional coordinates ``x A^-1`` of positions x (..., dim)."""
        return self._points(x, "positions") @ self._inv

    def to_cartesian(self, f) -> np.ndarray:
        """Positions ``f A`` (bohr) of fractional coordinates f (..., dim)."""
        return self._points(f, "fractional coordinates") @ self.lattice

    def wrap_fractional(self, x, reduced: bool = False) -> np.ndarray:
        """Fractional coordinates of positions x (..., dim), each in [0, 1) exactly: in the
        lattice basis, or with ``reduced`` in the reduced basis (:attr:`reduced`, the one
        the periodic kernels read)."""
        f = (self._points(x, "positions") @ self._red_inv if reduced
             else self.to_fractional(x))
        f = f - np.floor(f)
        f[f >= 1.0] = 0.0  # a tiny negative f rounds up to 1 in f - floor(f)
        return f

    def wrap(self, x) -> np.ndarray:
        """Positions x (..., dim) moved by lattice vectors into the cell (their fractional
        coordinates in [0, 1), up to the rounding of one matrix product)."""
        return self.wrap_fractional(x) @ self.lattice

    def minimum_image(self, d) -> np.ndarray:
        """The shortest vector equivalent to each displacement d (..., dim) modulo the
        lattice (bohr), for any cell shape (see the module docstring)."""
        d = self._points(d, "displacements")
        f = d @ self._red_inv
        d0 = (f - np.rint(f)) @ self.reduced
        cand = d0[..., None, :] - self._mi_vectors  # (..., K, dim)
        k = np.argmin(np.einsum("...kc,...kc->...k", cand, cand), axis=-1)
        return np.take_along_axis(cand, k[..., None, None], axis=-2)[..., 0, :]

    def distances(self, x) -> np.ndarray:
        """Minimum-image distances |r_i - r_j| (..., N, N) of positions x (..., N, dim)."""
        x = self._points(x, "positions")
        d = self.minimum_image(x[..., :, None, :] - x[..., None, :, :])
        return np.linalg.norm(d, axis=-1)

    def __repr__(self) -> str:
        return f"Cell({self.lattice.tolist()})"


# -------------------------------------------------------------------- lattices --
def simple_cubic(a: float) -> np.ndarray:
    """Simple cubic lattice vectors of edge a (bohr)."""
    return a * np.eye(3)


def bcc(a: float) -> np.ndarray:
    """Primitive vectors of the body-centred cubic lattice of conventional edge a (volume
    a**3 / 2, nearest-neighbour distance sqrt(3) a / 2)."""
    return 0.5 * a * np.array([[-1.0, 1, 1], [1, -1, 1], [1, 1, -1]])


def fcc(a: float) -> np.ndarray:
    """Primitive vectors of the face-centred cubic lattice of conventional edge a (volume
    a**3 / 4, nearest-neighbour distance a / sqrt(2))."""
    return 0.5 * a * np.array([[0.0, 1, 1], [1, 0, 1], [1, 1, 0]])


def square(a: float) -> np.ndarray:
    """Square 2D lattice vectors of edge a (bohr)."""
    return a * np.eye(2)


def hexagonal(a: float) -> np.ndarray:
    """Triangular (hexagonal) 2D lattice vectors of length a (area sqrt(3) a**2 / 2)."""
    return a * np.array([[1.0, 0.0], [0.5, math.sqrt(3.0) / 2.0]])


_UNIT = {"cubic": (simple_cubic, 1.0), "bcc": (bcc, 0.5), "fcc": (fcc, 0.25),
         "square": (square, 1.0), "hexagonal": (hexagonal, math.sqrt(3.0) / 2.0)}


def heg_cell(n_electrons: int, r_s: float, dim: int = 3, shape: str | None = None) -> Cell:
    """The simulation cell of a homogeneous electron gas of ``n_electrons`` at density
    parameter ``r_s`` (bohr): volume ``N 4/3 pi r_s**3`` in 3D, area ``N pi r_s**2`` in 2D.
    ``shape``: 3D ``cubic`` (default), ``bcc`` or ``fcc`` (the primitive cell of that
    lattice, scaled); 2D ``square`` (default) or ``hexagonal``."""
    check_int("n_electrons", n_electrons, 1)
    check_positive("r_s", r_s)
    if dim not in HEG_SHAPES:
        raise FixedQMCError(f"dim = {dim!r} is not allowed; choose 2 or 3")
    shape = HEG_SHAPES[dim][0] if shape is None else shape
    if shape not in HEG_SHAPES[dim]:
        raise FixedQMCError(f"shape = {shape!r} is not allowed for a {dim}D cell; choose one "
                            f"of {', '.join(HEG_SHAPES[dim])}")
    size = n_electrons * (4.0 / 3.0 * math.pi * r_s ** 3 if dim == 3 else math.pi * r_s ** 2)
    make, unit = _UNIT[shape]
    return Cell(make((size / unit) ** (1.0 / dim)))
