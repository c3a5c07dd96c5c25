"""Occupied molecular orbitals for the trial determinants: from a PySCF mean field or a file.

The trial function is ``det(D_up) det(D_down)`` of occupied MOs ``psi_i = sum_j C_ji phi_j``
(seed 001, Eq. 5-7) in the molecule's AO basis (spherical unless ``mol.cart``).  Energies
in hartree.

Cache (``mean_field(..., cache_dir=...)``): one ``scf-<method>-<hash>.npz`` per molecule and
method, the hash over the atoms (bohr), the basis functions, charge, spin, ``cart`` and
method.  It is written to a temporary file in the same folder and renamed into place, so
it is either complete or absent.  A cache file that cannot be read or does not fit the
molecule raises :class:`~fixedqmc.errors.FixedQMCError` naming the file (delete it to
recompute) rather than being silently replaced.

Reproducible bits: PySCF's SCF iterations sum over OpenMP threads in an order that varies
with the thread count and even with the machine's load (the orbitals of two H2 differed in
their last bits, and by the sign of one column, from run to run on 2 threads), and every
emulated result downstream inherits those bits.  :func:`mean_field` therefore computes the
two-electron integrals on every thread (each integral alone: the same bits on any count)
and runs the iterations on one; integrals too large for PySCF's ``max_memory`` are
computed in the iterations, so on one thread too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyscf import gto, lib, scf

from fixedqmc.errors import FixedQMCError

METHODS = ("rhf", "uhf", "rohf")


@dataclass(frozen=True, eq=False)
class MeanField:
    """Occupied MO coefficients of each spin and the energy of their determinant.

    Attributes:
        mo_up: ``(n_ao, n_up)`` float64 occupied spin-up MO coefficients (C-contiguous).
        mo_down: ``(n_ao, n_down)`` float64 occupied spin-down MO coefficients.
        e_tot: total energy of the determinant (nuclear repulsion included), hartree;
            NaN from :func:`load_mo_coeff` unless asked for.
        method: ``"rhf"``, ``"uhf"``, ``"rohf"``, or ``"file"`` for :func:`load_mo_coeff`.
        converged: the SCF converged (always True from :func:`mean_field`, which raises
            otherwise; False from :func:`load_mo_coeff`, where no SCF ran).
        energy_nuc: nuclear repulsion energy, hartree.
    """

    mo_up: np.ndarray
    mo_down: np.ndarray
    e_tot: float
    method: str
    converged: bool
    energy_nuc: float


def check_method(mol: gto.Mole, method: str) -> str:
    """``trial.scf`` (lower case) after checking that it fits the molecule's spin."""
    method = str(method).lower()
    if method not in METHODS:
        raise FixedQMCError(f"trial.scf must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "rhf" and mol.spin != 0:
        raise FixedQMCError(f"trial.scf = 'rhf' needs a closed shell, but the molecule has "
                            f"{mol.nelectron} electrons and spin {mol.spin} (2S): use "
                            f"trial.scf = 'uhf' or 'rohf'")
    if method == "rohf" and mol.spin < 0:
        raise FixedQMCError(f"trial.scf = 'rohf' needs system.spin >= 0 (at least as many up "
                            f"as down electrons), got {mol.spin}: flip its sign")
    return method


def mean_field(mol: gto.Mole, method: str = "rhf", cache_dir: str | os.PathLike | None = None
               ) -> MeanField:
    """Run (or reuse from ``cache_dir``) a PySCF RHF, UHF or ROHF of ``mol``.

    Args:
        mol: a built molecule (:func:`~fixedqmc.systems.molecule.geometry.build_mole`).
        method: ``trial.scf``, one of :data:`METHODS`; RHF needs a closed shell
            (``mol.spin == 0``), ROHF ``mol.spin >= 0``.
        cache_dir: folder for the cache file (created if missing); None: no cache.

    Raises:
        FixedQMCError: an unknown method, RHF of an open shell, ROHF with negative spin,
            an SCF that does not converge, or a damaged cache file.
    """
    method = check_method(mol, method)
    if cache_dir is None:
        return _run_scf(mol, method)
    path = Path(cache_dir) / f"scf-{method}-{_cache_key(mol, method)}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return _read_cache(path, mol, method)
    result = _run_scf(mol, method)
    _write_cache(path, result)
    return result


#: how to write a ``trial.mo_coeff`` file
_SAVE_HINT = "numpy.save(path, c) or numpy.savez(path, up=c_up, down=c_down)"
#: the first bytes of NumPy's array files: .npy, and .npz (a zip archive)
_NUMPY_MAGIC = {".npy": b"\x93NUMPY", ".npz": b"PK\x03\x04"}


def _check_numpy_file(path: Path) -> None:
    """Refuse a file that is not a NumPy array file of its suffix (e.g. a text file),
    naming what it is not, before NumPy's own message (which would advise
    ``allow_pickle``)."""
    magic = _NUMPY_MAGIC[path.suffix]
    try:
        with open(path, "rb") as f:
            head = f.read(len(magic))
    except OSError as exc:
        raise FixedQMCError(f"trial.mo_coeff {str(path)!r} cannot be read: "
                            f"{exc.strerror or exc}") from None
    if head != magic:
        raise FixedQMCError(f"trial.mo_coeff {str(path)!r} is not a NumPy {path.suffix} array "
                            f"file (it starts with {head!r}, not {magic!r}: a text file?); "
                            f"save the coefficients with {_SAVE_HINT}")


def load_mo_coeff(path: str | os.PathLike, mol: gto.Mole, n_up: int, n_down: int, *,
                  energy: bool = False) -> MeanField:
    """Occupied MOs from a user's file (``trial.mo_coeff``).

    A ``.npy`` file holds one ``(n_ao, n_mo)`` array for both spins; a ``.npz`` file holds
    ``up`` and ``down``.  The first ``n_up`` (``n_down``) columns are the occupied orbitals.
    With ``energy=True``, ``e_tot`` is PySCF's UHF energy of the determinant's density
    matrices ``D = C (C^T S C)^-1 C^T`` (valid for non-orthonormal columns).  That costs one
    Fock build, i.e. all two-electron integrals: under a second for a few atoms, but about
    4 minutes for 64 H2 in STO-6G on 2 cores, as long as the SCF itself.  Otherwise (the
    default) ``e_tot`` is NaN.

    Raises:
        FixedQMCError: a missing or unreadable file, missing arrays, a wrong shape (rows
            must be ``mol.nao``, columns at least ``n_up`` / ``n_down``), non-finite values,
            or linearly dependent occupied columns.
    """
    path = Path(path)
    arrays = _read_mo_file(path)
    n_ao = mol.nao
    mos = []
    for spin, n_occ in (("up", n_up), ("down", n_down)):
        c = arrays[spin]
        if c.ndim != 2 or c.shape[0] != n_ao or c.shape[1] < n_occ:
            raise FixedQMCError(f"trial.mo_coeff {str(path)!r}: {spin}-spin coefficients have "
                                f"shape {c.shape}, expected ({n_ao}, >= {n_occ}) (n_ao rows, "
                                f"at least n_{spin} = {n_occ} columns)")
        if not np.isfinite(c).all():
            raise FixedQMCError(f"trial.mo_coeff {str(path)!r}: {spin}-spin coefficients are "
                                f"not all finite")
        mos.append(np.ascontiguousarray(c[:, :n_occ], dtype=np.float64))
    s = mol.intor("int1e_ovlp")
    for spin, c in zip(("up", "down"), mos):
        try:
            np.linalg.cholesky(c.T @ s @ c)
        except np.linalg.LinAlgError as exc:
            raise FixedQMCError(f"trial.mo_coeff {str(path)!r}: the occupied {spin}-spin "
                                f"orbitals are linearly dependent (their determinant is "
                                f"zero everywhere)") from exc
    if energy:
        dms = [c @ np.linalg.solve(c.T @ s @ c, c.T) for c in mos]
        e_tot = float(scf.UHF(mol).energy_tot(dm=np.array(dms)))
    else:
        e_tot = math.nan
    return MeanField(mos[0], mos[1], e_tot, "file", False, float(mol.energy_nuc()))


def _read_mo_file(path: Path) -> dict[str, np.ndarray]:
    if path.suffix not in (".npy", ".npz"):
        raise FixedQMCError(f"trial.mo_coeff {str(path)!r} must be a .npy or .npz file")
    _check_numpy_file(path)
    try:
        data = np.load(path, allow_pickle=False)
        if path.suffix == ".npy":
            arrays = {"up": data, "down": data}
        else:
            with data:
                missing = sorted({"up", "down"} - set(data.files))
                if missing:
                    raise FixedQMCError(f"trial.mo_coeff {str(path)!r} lacks {missing}: a "
                                        f".npz file needs arrays 'up' and 'down'")
                arrays = {"up": data["up"], "down": data["down"]}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        what = ("it holds Python objects, not a numeric array"
                if "pickle" in str(exc).lower()
                else str(exc))
        raise FixedQMCError(f"trial.mo_coeff {str(path)!r} cannot be read: {what}; save the "
                            f"coefficients with {_SAVE_HINT}") from None
    for spin, c in arrays.items():
        if c.dtype.kind not in "iuf":
            raise FixedQMCError(f"trial.mo_coeff {str(path)!r}: {spin}-spin coefficients "
                                f"have dtype {c.dtype}, expected real numbers")
    return arrays


def _run_scf(mol: gto.Mole, method: str) -> MeanField:
    mf = {"rhf": scf.RHF, "uhf": scf.UHF, "rohf": scf.ROHF}[method](mol)
    mf.chkfile = None
    mf.verbose = 0
    if mol.incore_anyway or mf._is_mem_enough():  # PySCF's own rule to hold them (get_jk)
        mf._eri = mol.intor("int2e", aosym="s8")  # every thread (module docstring)
    with lib.with_omp_threads(1):
        mf.kernel()
    if not mf.converged:
        raise FixedQMCError(f"trial.scf: the PySCF {method.upper()} did not converge in "
                            f"{mf.max_cycle} cycles for this molecule ({mol.natm} atoms, "
                            f"{mol.nelectron} electrons, {mol.nao} basis functions); try "
                            f"another trial.scf method or check the geometry")
    c, occ = mf.mo_coeff, mf.mo_occ
    if method == "uhf":
        up, down = c[0][:, occ[0] > 0], c[1][:, occ[1] > 0]
    else:  # RHF occupations are 2; ROHF's singly occupied orbitals (1) are spin up
        up, down = c[:, occ > 0], c[:, occ > 1]
    return MeanField(np.ascontiguousarray(up), np.ascontiguousarray(down), float(mf.e_tot),
                     method, True, float(mol.energy_nuc()))


def _cache_key(mol: gto.Mole, method: str) -> str:
    atoms = [[mol.atom_symbol(i), mol.atom_coord(i, unit="Bohr").tolist()]
             for i in range(mol.natm)]
    payload = json.dumps([atoms, mol._basis, mol.charge, mol.spin, bool(mol.cart), method],
                         sort_keys=True, default=lambda o: np.asarray(o).tolist())
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _read_cache(path: Path, mol: gto.Mole, method: str) -> MeanField:
    try:
        with np.load(path, allow_pickle=False) as d:
            result = MeanField(d["mo_up"], d["mo_down"], float(d["e_tot"]), str(d["method"]),
                               bool(d["converged"]), float(d["energy_nuc"]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise FixedQMCError(f"SCF cache file {str(path)!r} is damaged ({exc}); delete it to "
                            f"rerun the SCF") from exc
    n_up, n_down = mol.nelec
    if (result.mo_up.shape != (mol.nao, n_up) or result.mo_down.shape != (mol.nao, n_down)
            or result.method != method):
        raise FixedQMCError(f"SCF cache file {str(path)!r} does not fit this molecule and "
                            f"method (orbitals {result.mo_up.shape} and "
                            f"{result.mo_down.shape}, method {result.method!r}); delete it "
                            f"to rerun the SCF")
    return result


def _write_cache(path: Path, result: MeanField) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, mo_up=result.mo_up, mo_down=result.mo_down, e_tot=result.e_tot,
                     method=result.method, converged=result.converged,
                     energy_nuc=result.energy_nuc)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
