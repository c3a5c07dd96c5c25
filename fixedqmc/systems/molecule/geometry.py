"""Molecular geometries and PySCF molecules.

:func:`h2_lattice` generates the seed's system (seed 001: a simple-cubic lattice of H2
molecules); :func:`build_mole` checks a geometry, charge, spin and basis and builds the
PySCF :class:`~pyscf.gto.Mole`.  Lengths in bohr.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from pyscf import gto
from pyscf.lib.exceptions import BasisNotFoundError

from fixedqmc.errors import FixedQMCError

MIN_NUCLEAR_DISTANCE = 0.1
"""Nuclei closer than this (bohr) are rejected as overlapping."""

Atoms = list[tuple[str, tuple[float, float, float]]]


def h2_lattice(n: int, bond: float = 1.4, spacing: float = 6.0) -> Atoms:
    """An ``n x n x n`` simple-cubic lattice of H2 molecules, centred on the origin.

    Lattice site ``(i, j, k)`` sits at ``spacing * ((i, j, k) - (n - 1) / 2)``; its molecule
    has its bond along z, centred on the site: H at ``site -+ (0, 0, bond / 2)``.  Sites are
    listed with i slowest and k fastest, two atoms per site (lower z first).

    Args:
        n: molecules per edge (``system.lattice``), at least 1; ``2 * n**3`` atoms.
        bond: H-H bond length in bohr (``system.bond``), > 0.
        spacing: lattice constant in bohr (``system.spacing``), > ``bond`` so that
            molecules do not overlap.

    Returns:
        ``[("H", (x, y, z)), ...]`` in bohr, accepted by :func:`build_mole`.
    """
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise FixedQMCError(f"system.lattice must be an integer >= 1 (molecules per edge), "
                            f"got {n!r}")
    if not (math.isfinite(bond) and bond > 0):
        raise FixedQMCError(f"system.bond must be a positive finite length in bohr, got {bond!r}")
    if not (math.isfinite(spacing) and spacing > bond):
        raise FixedQMCError(f"system.spacing must be a finite length in bohr greater than "
                            f"system.bond = {bond!r} (molecules would overlap), got {spacing!r}")
    sites = spacing * (np.arange(n) - (n - 1) / 2)
    half = bond / 2
    return [("H", (float(x), float(y), float(z + dz)))
            for x in sites for y in sites for z in sites for dz in (-half, half)]


def build_mole(atoms: str | Atoms, basis="sto-6g", charge: int = 0, spin: int = 0,
               cart: bool = False) -> gto.Mole:
    """A built PySCF molecule (``unit="Bohr"``, ``verbose=0``), after checking the input.

    Args:
        atoms: PySCF's atom string in bohr (``"H 0 0 0; H 0 0 1.4"``, or a Z-matrix) or a
            list of ``(symbol, (x, y, z))`` such as :func:`h2_lattice` returns
            (``system.atoms``).  PySCF evaluates coordinate fields of a string as Python
            expressions.
        basis: any basis PySCF knows by name, or PySCF's per-element dict (``system.basis``).
        charge: total charge (``system.charge``); at least one electron must remain.
        spin: ``2S = n_up - n_down`` (``system.spin``), same parity as the electron count
            and at most the electron count in magnitude.
        cart: use cartesian instead of spherical d, f, ... functions.

    Raises:
        FixedQMCError: unparsable atoms or unknown element, no atoms, nuclei closer than
            :data:`MIN_NUCLEAR_DISTANCE`, an impossible charge or spin, or a basis PySCF does
            not have for an element; all before the molecule is built.
    """
    if not (atoms.strip() if isinstance(atoms, str) else atoms):
        raise FixedQMCError("system.atoms is empty: give at least one atom")
    try:
        parsed = gto.format_atom(atoms, unit="Bohr")
    except Exception as exc:  # PySCF raises NameError, RuntimeError, ValueError, ...
        raise FixedQMCError(f"system.atoms could not be parsed by PySCF ({exc}); expected "
                            f"'SYMBOL x y z; ...' in bohr or a list of (symbol, (x, y, z))"
                            ) from exc
    coords = np.array([xyz for _, xyz in parsed], dtype=float)
    if not np.isfinite(coords).all():
        raise FixedQMCError("system.atoms has non-finite coordinates")
    _check_overlap(parsed, coords)
    _check_electrons(parsed, charge, spin)
    if isinstance(basis, str):
        for symbol in sorted({s for s, _ in parsed}):
            try:
                gto.format_basis({symbol: basis})
            except BasisNotFoundError as exc:
                raise FixedQMCError(f"system.basis {basis!r} is not available in PySCF for "
                                    f"element {symbol} ({exc}); choose a basis PySCF knows "
                                    f"for every element") from exc
    mol = gto.Mole(atom=parsed, basis=basis, charge=charge, spin=spin, cart=cart,
                   unit="Bohr", verbose=0)
    try:
        return mol.build()
    except BasisNotFoundError as exc:
        raise FixedQMCError(f"system.basis {basis!r} is not available in PySCF ({exc})") from exc


def _check_overlap(parsed, coords: np.ndarray) -> None:
    dist = np.linalg.norm(coords[:, None, :] - coords[None, :, :], axis=-1)
    dist[np.diag_indices(len(coords))] = np.inf
    i, j = sorted(np.unravel_index(np.argmin(dist), dist.shape))
    if dist[i, j] < MIN_NUCLEAR_DISTANCE:
        raise FixedQMCError(f"system.atoms has overlapping nuclei: atom {i} ({parsed[i][0]}) and "
                            f"atom {j} ({parsed[j][0]}) are {dist[i, j]:.3g} bohr apart; nuclei "
                            f"must be at least {MIN_NUCLEAR_DISTANCE} bohr apart")


def _check_electrons(parsed, charge, spin) -> None:
    for key, value in (("system.charge", charge), ("system.spin", spin)):
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise FixedQMCError(f"{key} must be an integer, got {value!r}")
    n_elec = sum(gto.charge(symbol) for symbol, _ in parsed) - charge
    if n_elec < 1:
        raise FixedQMCError(f"system.charge = {charge} leaves {n_elec} electrons; at least one "
                            f"electron is needed")
    if abs(spin) > n_elec or (n_elec - spin) % 2:
        raise FixedQMCError(f"system.spin = {spin} (2S = n_up - n_down) does not fit "
                            f"{n_elec} electrons: it must have the parity of the electron "
                            f"count and magnitude at most {n_elec}")
