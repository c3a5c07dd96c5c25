"""PySCF glue of the Gaussian-basis molecules: geometry, flattened basis, mean field."""

import itertools

import numpy as np
import pytest
from pyscf import gto, lib, scf

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.molecule import scf as molecule_scf
from fixedqmc.systems.molecule.basis import basis_from_mole, evaluate_numpy
from fixedqmc.systems.molecule.geometry import build_mole, h2_lattice
from fixedqmc.systems.molecule.scf import load_mo_coeff, mean_field

H2 = "H 0 0 0; H 0 0 1.4"
WATER = "O 0 0 0; H 0 1.43 1.11; H 0 -1.43 1.11"


# ----------------------------------------------------------------------------- geometry --
@pytest.mark.parametrize("n", [1, 2, 3])
def test_h2_lattice_geometry(n):
    bond, spacing = 1.3, 5.0
    atoms = h2_lattice(n, bond=bond, spacing=spacing)
    assert len(atoms) == 2 * n**3 and all(s == "H" for s, _ in atoms)
    xyz = np.array([p for _, p in atoms])
    np.testing.assert_allclose(xyz.mean(0), 0, atol=1e-12)
    lo, hi = xyz[0::2], xyz[1::2]
    np.testing.assert_allclose(hi - lo, np.tile([0, 0, bond], (n**3, 1)), atol=1e-12)
    centres = (lo + hi) / 2
    axis = spacing * (np.arange(n) - (n - 1) / 2)
    np.testing.assert_allclose(centres, list(itertools.product(axis, axis, axis)), atol=1e-12)
    dist = np.linalg.norm(xyz[:, None] - xyz[None], axis=-1) + np.diag(np.full(len(xyz), np.inf))
    assert dist.min() == pytest.approx(min(bond, spacing - bond))


@pytest.mark.parametrize("kwargs, key", [
    (dict(n=0), "system.lattice"),
    (dict(n=1.5), "system.lattice"),
    (dict(n=2, bond=0.0), "system.bond"),
    (dict(n=2, bond=float("nan")), "system.bond"),
    (dict(n=2, bond=1.4, spacing=1.4), "system.spacing"),
    (dict(n=2, bond=1.4, spacing=-3.0), "system.spacing"),
])
def test_h2_lattice_errors(kwargs, key):
    with pytest.raises(FixedQMCError, match=key):
        h2_lattice(**kwargs)


def test_build_mole_from_string_and_lattice():
    mol = build_mole(H2)
    np.testing.assert_array_equal(mol.atom_coords(), [[0, 0, 0], [0, 0, 1.4]])  # bohr
    assert mol.unit == "Bohr" and mol.verbose == 0 and mol.basis == "sto-6g" and mol.nao == 2
    lattice = build_mole(h2_lattice(2))
    assert lattice.natm == 16 and lattice.nelectron == 16 and lattice.nao == 16


@pytest.mark.parametrize("kwargs, key, words", [
    (dict(atoms=""), "system.atoms", "empty"),
    (dict(atoms=[]), "system.atoms", "empty"),
    (dict(atoms="Qq 0 0 0"), "system.atoms", "QQ"),
    (dict(atoms="H 0 0 zz"), "system.atoms", "parsed"),
    (dict(atoms=[("H", (0, 0))]), "system.atoms", "parsed"),
    (dict(atoms=[("H", (0.0, 0.0, float("inf")))]), "system.atoms", "finite"),
    (dict(atoms="H 0 0 0; H 0 0 0.05"), "system.atoms",
     r"overlapping nuclei: atom 0 \(H\) and atom 1 \(H\) are 0.05 bohr"),
    (dict(atoms=H2, basis="no-such-basis"), "system.basis", "'no-such-basis'.*element H"),
    (dict(atoms="H 0 0 0; Rn 0 0 3", basis="sto-6g", spin=1), "system.basis", "element Rn"),
    (dict(atoms=H2, charge=3), "system.charge", "-1 electrons"),
    (dict(atoms="H 0 0 0; H 0 0 1.4; H 0 0 2.8", charge=3), "system.charge", "0 electrons"),
    (dict(atoms=H2, charge=0.5), "system.charge", "integer"),
    (dict(atoms=H2, spin=1), "system.spin", "parity"),
    (dict(atoms=H2, spin=4), "system.spin", "at most 2"),
    (dict(atoms="H 0 0 0", spin=0), "system.spin", "1 electrons"),
])
@pytest.mark.filterwarnings("ignore:Basis may be available in basis-set-exchange")
def test_build_mole_errors(kwargs, key, words):
    with pytest.raises(FixedQMCError, match=key) as info:
        build_mole(**kwargs)
    assert info.match(words)


# -------------------------------------------------------------------------------- basis --
MOLECULES = [  # s; s, p, d; s to f with nctr > 1 shells; s to g
    (H2, "sto-6g"), (WATER, "cc-pvdz"), ("N 0 0 0; N 0 0 2.07", "cc-pvtz"), ("Ne 0 0 0", "cc-pvqz"),
]


def _points(mol, n=60, seed=0):
    rng = np.random.default_rng(seed)
    centres = mol.atom_coords()[rng.integers(mol.natm, size=n)]
    return centres + rng.normal(scale=1.2, size=(n, 3))


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("cart", [False, True])
@pytest.mark.parametrize("atoms, basis_name", MOLECULES)
def test_basis_matches_pyscf(atoms, basis_name, cart):
    mol = build_mole(atoms, basis_name, cart=cart)
    basis = basis_from_mole(mol)
    assert basis.n_atom == mol.natm and basis.n_cart == mol.nao_cart() and basis.n_ao == mol.nao
    assert len(basis.shell_l) == mol._bas[:, gto.NCTR_OF].sum()
    assert basis.shell_prim[-1] == len(basis.exps) == len(basis.coeffs)
    assert basis.shell_ao[-1] == basis.n_cart and basis.cart2sph.shape == (basis.n_cart, mol.nao)
    np.testing.assert_array_equal(basis.powers.sum(1),
                                  np.repeat(basis.shell_l, np.diff(basis.shell_ao)))
    for name, dtype in [("coords", np.float64), ("charges", np.float64), ("shell_atom", np.int64),
                        ("shell_l", np.int64), ("shell_prim", np.int64), ("exps", np.float64),
                        ("coeffs", np.float64), ("shell_ao", np.int64), ("powers", np.int64),
                        ("cart2sph", np.float64)]:
        array = getattr(basis, name)
        assert array.dtype == dtype and array.flags.c_contiguous, name

    points = _points(mol)
    values, gradients, laplacians = evaluate_numpy(basis, points)
    ref = mol.eval_gto("GTOval_cart_deriv2", points)
    assert _rel(values, ref[0]) < 1e-12
    assert _rel(gradients, np.moveaxis(ref[1:4], 0, -1)) < 1e-12
    assert _rel(laplacians, ref[4] + ref[7] + ref[9]) < 1e-12

    mo = np.random.default_rng(1).normal(size=(mol.nao, 4))
    assert _rel(values @ basis.cart2sph @ mo, mol.eval_gto("GTOval", points) @ mo) < 1e-12


def test_basis_mo_values_of_rhf_orbitals():
    mol = build_mole(WATER, "cc-pvdz")
    mo = mean_field(mol).mo_up
    basis = basis_from_mole(mol)
    points = _points(mol)
    ours = evaluate_numpy(basis, points)[0] @ basis.cart2sph @ mo
    assert _rel(ours, mol.eval_gto("GTOval_sph", points) @ mo) < 1e-12


# ---------------------------------------------------------------------------------- scf --
def test_rhf_of_h2_is_pyscfs():
    mol = build_mole(H2)
    mf = mean_field(mol, "rhf")
    ref = scf.RHF(gto.M(atom=H2, unit="Bohr", basis="sto-6g", verbose=0)).run()
    assert mf.e_tot == pytest.approx(ref.e_tot, abs=1e-10)
    assert mf.energy_nuc == pytest.approx(1 / 1.4) and mf.converged and mf.method == "rhf"
    assert mf.mo_up.shape == mf.mo_down.shape == (2, 1)
    np.testing.assert_allclose(np.abs(mf.mo_up[:, 0]), np.abs(ref.mo_coeff[:, 0]), atol=1e-8)


@pytest.mark.parametrize("method", ["uhf", "rohf"])
def test_open_shell_lithium(method):
    mol = build_mole("Li 0 0 0", spin=1)
    mf = mean_field(mol, method)
    ref = getattr(scf, method.upper())(gto.M(atom="Li 0 0 0", basis="sto-6g", spin=1,
                                             verbose=0)).run()
    assert mf.e_tot == pytest.approx(ref.e_tot, abs=1e-9)
    assert mf.mo_up.shape == (mol.nao, 2) and mf.mo_down.shape == (mol.nao, 1)
    s = mol.intor("int1e_ovlp")
    np.testing.assert_allclose(mf.mo_up.T @ s @ mf.mo_up, np.eye(2), atol=1e-8)


@pytest.mark.parametrize("method, atoms, basis", [
    ("rhf", "H 0 0 0; H 0 0 1.4; H 5 0 0; H 5 0 1.4", "sto-6g"),
    ("uhf", "O 0 0 0; H 0 1.43 1.11; H 0 -1.43 1.11", "cc-pvdz")])
def test_the_orbitals_have_the_same_bits_on_any_thread_count(method, atoms, basis):
    """Threaded SCF iterations gave two H2's orbitals other last bits (and one column
    another sign) on 1 and 2 OpenMP threads, and from run to run under load."""
    mol = build_mole(atoms, basis=basis)
    runs = []
    for threads in (1, 2, 1, 2):
        with lib.with_omp_threads(threads):
            runs.append(mean_field(mol, method))
    for mf in runs[1:]:
        assert mf.mo_up.tobytes() == runs[0].mo_up.tobytes()
        assert mf.mo_down.tobytes() == runs[0].mo_down.tobytes()
        assert mf.e_tot == runs[0].e_tot


def test_mean_field_errors(monkeypatch):
    def no_scf(*args):
        raise AssertionError("no SCF may run")
    monkeypatch.setattr(molecule_scf, "_run_scf", no_scf)
    with pytest.raises(FixedQMCError, match="trial.scf"):
        mean_field(build_mole(H2), "dft")
    with pytest.raises(FixedQMCError, match="trial.scf = 'rhf'.*uhf"):
        mean_field(build_mole("Li 0 0 0", spin=1), "rhf")
    with pytest.raises(FixedQMCError, match="system.spin"):
        mean_field(build_mole("Li 0 0 0", spin=-1), "rohf")


def test_mean_field_not_converged(monkeypatch):
    monkeypatch.setattr(scf.hf.SCF, "max_cycle", 1)
    with pytest.raises(FixedQMCError, match=r"trial.scf.*RHF did not converge.*\(3 atoms, "
                                            r"10 electrons, 24 basis functions\)"):
        mean_field(build_mole(WATER, "cc-pvdz"))


def test_cache_is_reused_and_checked(tmp_path, monkeypatch):
    mol = build_mole(H2)
    first = mean_field(mol, "uhf", cache_dir=tmp_path / "out")
    (path,) = (tmp_path / "out").iterdir()
    assert path.name.startswith("scf-uhf-") and path.suffix == ".npz"

    def no_scf(*args):
        raise AssertionError("SCF rerun despite the cache")
    monkeypatch.setattr(molecule_scf, "_run_scf", no_scf)
    again = mean_field(build_mole(H2), "uhf", cache_dir=tmp_path / "out")
    np.testing.assert_array_equal(again.mo_up, first.mo_up)
    np.testing.assert_array_equal(again.mo_down, first.mo_down)
    assert (again.e_tot, again.method, again.converged, again.energy_nuc) == (
        first.e_tot, first.method, first.converged, first.energy_nuc)
    with pytest.raises(AssertionError, match="rerun"):  # another geometry: another key
        mean_field(build_mole("H 0 0 0; H 0 0 1.5"), "uhf", cache_dir=tmp_path / "out")
    assert [p.name for p in (tmp_path / "out").iterdir()] == [path.name]  # no temporary left

    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(FixedQMCError, match=f"{path.name}.*damaged"):
        mean_field(build_mole(H2), "uhf", cache_dir=tmp_path / "out")


def test_cache_write_is_atomic(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(np, "savez", fail)
    with pytest.raises(OSError, match="disk full"):
        mean_field(build_mole(H2), cache_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------------------- mo from file --
def test_load_mo_coeff(tmp_path):
    mol = build_mole("Li 0 0 0", spin=1)
    ref = mean_field(mol, "uhf")
    np.savez(tmp_path / "mo.npz", up=ref.mo_up, down=ref.mo_down)
    assert np.isnan(load_mo_coeff(tmp_path / "mo.npz", mol, 2, 1).e_tot)
    loaded = load_mo_coeff(tmp_path / "mo.npz", mol, 2, 1, energy=True)
    np.testing.assert_array_equal(loaded.mo_up, ref.mo_up)
    np.testing.assert_array_equal(loaded.mo_down, ref.mo_down)
    assert loaded.e_tot == pytest.approx(ref.e_tot, abs=1e-10)
    assert loaded.method == "file" and not loaded.converged

    # one array for both spins; extra columns ignored; the energy ignores normalisation
    h2 = build_mole(H2)
    rhf = mean_field(h2)
    np.save(tmp_path / "mo.npy", np.hstack([3.0 * rhf.mo_up, np.ones((2, 1))]))
    loaded = load_mo_coeff(tmp_path / "mo.npy", h2, 1, 1, energy=True)
    assert loaded.mo_up.shape == loaded.mo_down.shape == (2, 1)
    assert loaded.e_tot == pytest.approx(rhf.e_tot, abs=1e-10)


@pytest.mark.parametrize("content, words", [
    (np.ones((3, 2)), r"shape \(3, 2\), expected \(2, >= 1\)"),
    (np.ones(2), r"shape \(2,\), expected \(2, >= 1\)"),
    (np.ones((2, 0)), r"shape \(2, 0\), expected \(2, >= 1\)"),
    (np.full((2, 1), np.nan), "not all finite"),
    (np.array([["a"], ["b"]]), "dtype"),
    (dict(up=np.ones((2, 1))), r"lacks \['down'\]"),
    (dict(up=np.ones((2, 1)), down=np.ones((2, 2, 1))), r"down-spin.*shape \(2, 2, 1\)"),
    (dict(up=np.ones((2, 1)), down=np.zeros((2, 1))), "down-spin orbitals are linearly dependent"),
    ("missing", "cannot be read"),
    ("garbage", r"is not a NumPy .npz array file \(it starts with b'not '"),
    ("text.npy", r"is not a NumPy .npy array file.*a text file\?.*numpy.save"),
    ("objects", r"cannot be read: it holds Python objects, not a numeric array"),
    ("text", "must be a .npy or .npz"),
])
def test_load_mo_coeff_errors(tmp_path, content, words):
    if isinstance(content, dict):
        path = tmp_path / "mo.npz"
        np.savez(path, **content)
    elif isinstance(content, np.ndarray):
        path = tmp_path / "mo.npy"
        np.save(path, content)
    elif content == "missing":
        path = tmp_path / "none.npy"
    elif content == "garbage":
        path = tmp_path / "bad.npz"
        path.write_bytes(b"not a zip file at all")
    elif content == "text.npy":  # a text file named as an array file
        path = tmp_path / "mo.npy"
        path.write_text("1 0\n0 1\n")
    elif content == "objects":
        path = tmp_path / "mo.npy"
        np.save(path, np.array([{"up": 1}], dtype=object), allow_pickle=True)
    else:
        path = tmp_path / "mo.txt"
        path.write_text("1 0\n0 1\n")
    mol = build_mole(H2)
    with pytest.raises(FixedQMCError, match="trial.mo_coeff") as info:
        load_mo_coeff(path, mol, 1, 1)
    assert info.match(words) and info.match(path.name)
