"""Contracted Gaussian AOs of a PySCF molecule as flat arrays, and a numpy reference.

Each shell ``s`` (angular momentum ``l``, centred on atom ``A``) holds the cartesian AOs
``P(r - A) = (x - Ax)**lx (y - Ay)**ly (z - Az)**lz`` with ``lx + ly + lz = l`` and one
contracted radial part (seed 001, Eq. 8)::

    phi(r) = P(r - A) * R(|r - A|**2),   R(r2) = sum_p c_p exp(-a_p r2)

The coefficients ``c_p`` carry every normalisation PySCF applies: the primitive and
contraction normalisation stored in the molecule's ``_env`` (``PTR_COEFF``) and libcint's
common factor for s and p shells (``CINTcommon_fac_sp``: ``1 / sqrt(4 pi)`` for s,
``sqrt(3 / (4 pi))`` for p, 1 otherwise), so that ``phi`` equals PySCF's
``mol.eval_gto("GTOval_cart")`` to rounding.  The molecule's own AOs (spherical unless
``mol.cart``) are ``phi @ cart2sph``.  Lengths in bohr, exponents in 1/bohr**2.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
from pyscf import gto
from pyscf.gto import moleintor

_common_fac_sp = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int)(
    ("CINTcommon_fac_sp", moleintor.libcgto))


@dataclass(frozen=True, eq=False)
class GaussianBasis:
    """A molecule's contracted Gaussians flattened into cartesian AOs (C-contiguous arrays).

    A PySCF shell with several contracted functions (``nctr > 1``) becomes that many shells
    here, each with its own copy of the exponents.

    Attributes:
        coords: ``(n_atom, 3)`` float64 nuclear positions, bohr.
        charges: ``(n_atom,)`` float64 nuclear charges.
        shell_atom: ``(n_shell,)`` int64 atom of each shell.
        shell_l: ``(n_shell,)`` int64 angular momentum of each shell.
        shell_prim: ``(n_shell + 1,)`` int64 offsets: shell ``s`` has primitives
            ``shell_prim[s]:shell_prim[s + 1]`` of ``exps`` and ``coeffs``.
        exps: ``(n_prim,)`` float64 exponents ``a_p``, 1/bohr**2.
        coeffs: ``(n_prim,)`` float64 coefficients ``c_p``, all normalisation included.
        shell_ao: ``(n_shell + 1,)`` int64 offsets: shell ``s`` has cartesian AOs
            ``shell_ao[s]:shell_ao[s + 1]``, ``(l + 1) (l + 2) / 2`` of them.
        powers: ``(n_cart, 3)`` int64 ``(lx, ly, lz)`` of each cartesian AO, in PySCF's
            order (xx, xy, xz, yy, yz, zz for d).
        cart2sph: ``(n_cart, n_ao)`` float64 map from cartesian AO values to the molecule's
            AOs (``mol.cart2sph_coeff()``, or the identity for a cartesian molecule).
    """

    coords: np.ndarray
    charges: np.ndarray
    shell_atom: np.ndarray
    shell_l: np.ndarray
    shell_prim: np.ndarray
    exps: np.ndarray
    coeffs: np.ndarray
    shell_ao: np.ndarray
    powers: np.ndarray
    cart2sph: np.ndarray

    @property
    def n_atom(self) -> int:
        return len(self.coords)

    @property
    def n_cart(self) -> int:
        return len(self.powers)

    @property
    def n_ao(self) -> int:
        return self.cart2sph.shape[1]


def basis_from_mole(mol: gto.Mole) -> GaussianBasis:
    """The :class:`GaussianBasis` of a built PySCF molecule."""
    shell_atom, shell_l, n_prim, exps, coeffs = [], [], [], [], []
    for ib in range(mol.nbas):
        l, nprim, nctr = mol.bas_angular(ib), mol.bas_nprim(ib), mol.bas_nctr(ib)
        ptr = mol._bas[ib, gto.PTR_COEFF]
        cs = mol._env[ptr:ptr + nprim * nctr].reshape(nctr, nprim) * _common_fac_sp(l)
        for c in cs:
            shell_atom.append(mol.bas_atom(ib))
            shell_l.append(l)
            n_prim.append(nprim)
            exps.append(mol.bas_exp(ib))
            coeffs.append(c)
    shell_l = np.array(shell_l, dtype=np.int64)
    n_cart_shell = (shell_l + 1) * (shell_l + 2) // 2
    powers = [[xyz.count(axis) for axis in "xyz"] for *_, xyz in mol.cart_labels(fmt=False)]
    n_cart = int(n_cart_shell.sum())
    f8 = np.float64
    return GaussianBasis(
        coords=np.ascontiguousarray(mol.atom_coords(unit="Bohr"), dtype=f8),
        charges=np.ascontiguousarray(mol.atom_charges(), dtype=f8),
        shell_atom=np.array(shell_atom, dtype=np.int64),
        shell_l=shell_l,
        shell_prim=np.concatenate([[0], np.cumsum(n_prim)]).astype(np.int64),
        exps=np.ascontiguousarray(np.concatenate(exps), dtype=f8),
        coeffs=np.ascontiguousarray(np.concatenate(coeffs), dtype=f8),
        shell_ao=np.concatenate([[0], np.cumsum(n_cart_shell)]).astype(np.int64),
        powers=np.array(powers, dtype=np.int64).reshape(n_cart, 3),
        cart2sph=np.ascontiguousarray(np.eye(n_cart) if mol.cart else mol.cart2sph_coeff(),
                                      dtype=f8),
    )


def evaluate_numpy(basis: GaussianBasis, points: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cartesian AO values, gradients and Laplacians at ``points`` (reference implementation).

    With ``d = r - A``, ``r2 = |d|**2``, ``R = sum c e``, ``R' = sum -a c e``,
    ``R'' = sum a**2 c e`` (``e = exp(-a r2)``) and ``l = lx + ly + lz``::

        grad phi = R grad P + 2 d P R'
        lap phi  = R lap P + 4 l R' P + P (6 R' + 4 r2 R'')

    Args:
        basis: the flattened basis.
        points: ``(n_pts, 3)`` positions, bohr.

    Returns:
        ``(values (n_pts, n_cart), gradients (n_pts, n_cart, 3), laplacians (n_pts, n_cart))``;
        gradients per bohr and Laplacians per bohr**2.
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    n_shell = len(basis.shell_l)
    prim_shell = np.repeat(np.arange(n_shell), np.diff(basis.shell_prim))
    ao_shell = np.repeat(np.arange(n_shell), np.diff(basis.shell_ao))
    ao_atom = basis.shell_atom[ao_shell]

    r2_atom = ((points[:, None, :] - basis.coords[None, :, :]) ** 2).sum(-1)  # (n_pts, n_atom)
    a, c = basis.exps, basis.coeffs
    e = np.exp(-a * r2_atom[:, basis.shell_atom[prim_shell]])                 # (n_pts, n_prim)
    starts = basis.shell_prim[:-1]
    R0, R1, R2 = (np.add.reduceat(e * w, starts, axis=1)[:, ao_shell]         # (n_pts, n_cart)
                  for w in (c, -a * c, a * a * c))

    d = points[:, None, :] - basis.coords[ao_atom][None, :, :]                # (n_pts, n_cart, 3)
    r2 = r2_atom[:, ao_atom]
    k = basis.powers
    mono = d ** k                                                             # per-axis factors
    dmono = k * d ** np.maximum(k - 1, 0)
    d2mono = k * (k - 1) * d ** np.maximum(k - 2, 0)
    others = np.stack([mono[..., (i + 1) % 3] * mono[..., (i + 2) % 3] for i in range(3)], -1)
    P = mono.prod(-1)
    grad_P = dmono * others
    lap_P = (d2mono * others).sum(-1)
    l = k.sum(1)

    values = P * R0
    gradients = grad_P * R0[..., None] + 2 * d * (P * R1)[..., None]
    laplacians = R0 * lap_P + 4 * l * R1 * P + P * (6 * R1 + 4 * r2 * R2)
    return values, gradients, laplacians
