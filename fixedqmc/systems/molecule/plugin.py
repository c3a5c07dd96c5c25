"""The ``molecule`` system kind: Gaussian-basis molecules and H2 lattices (seed 001).

Registered through the ``fixedqmc.system_kinds`` entry point (``pyproject.toml``).  Input keys
and defaults (lengths in bohr, energies in hartree)::

    [system]
    atoms = ""          # PySCF atom string, e.g. "H 0 0 0; H 0 0 1.4"; "" = the H2 lattice
    lattice = 2         # H2 molecules per edge of the simple-cubic lattice (n**3 molecules)
    bond = 1.4          # H-H bond length
    spacing = 6.0       # lattice constant
    basis = "sto-6g"    # any basis PySCF knows
    charge = 0
    spin = 0            # 2S = n_up - n_down
    spread = 0.7        # Gaussian spread of the starting electrons around their nuclei

    [trial]
    scf = "rhf"         # rhf, uhf or rohf: PySCF mean field, cached in <output>/scf
    mo_coeff = ""       # or a .npy (both spins) / .npz (up, down) file of MO coefficients
    jastrow = false     # electron-electron Jastrow u(r) = a r / (1 + b r) with the cusps
    jastrow_b = 1.0     # its b (1/bohr)
    scf_cache = ""      # folder of the mean-field cache; "" = <output>/scf

The mean field runs in-process at build (seconds for 64 H2 in STO-6G) unless its cache file
is present.  The molecule itself (atoms, basis, spins) and a given ``mo_coeff`` file are
checked at validation, before any work.
"""

from __future__ import annotations

from pathlib import Path

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import (check_bool, check_choice, check_int, check_positive,
                                   check_str)
from fixedqmc.qmc.registry import SystemPlugin
from fixedqmc.systems.molecule.geometry import build_mole, h2_lattice
from fixedqmc.systems.molecule.scf import METHODS, check_method, load_mo_coeff, mean_field
from fixedqmc.systems.molecule.system import UNITS, Molecule

SECTIONS = {
    "system": {"atoms": "", "lattice": 2, "bond": 1.4, "spacing": 6.0, "basis": "sto-6g",
               "charge": 0, "spin": 0, "spread": 0.7},
    "trial": {"scf": "rhf", "mo_coeff": "", "jastrow": False, "jastrow_b": 1.0,
              "scf_cache": ""},
}


def mole_of(config: dict):
    """The PySCF molecule of an input (its own checks name the keys)."""
    s = config["system"]
    check_str("system.atoms", s["atoms"])
    check_str("system.basis", s["basis"])
    for key in ("charge", "spin"):
        if isinstance(s[key], bool) or not isinstance(s[key], int):
            raise FixedQMCError(f"system.{key} must be an integer, got {s[key]!r}")
    atoms = s["atoms"].strip() or h2_lattice(s["lattice"], s["bond"], s["spacing"])
    return build_mole(atoms, s["basis"], s["charge"], s["spin"])


def check(config: dict) -> None:
    s, t = config["system"], config["trial"]
    check_int("system.lattice", s["lattice"], 1)
    for key in ("bond", "spacing", "spread"):
        check_positive(f"system.{key}", s[key])
    check_choice("trial.scf", t["scf"], METHODS)
    check_str("trial.mo_coeff", t["mo_coeff"])
    check_bool("trial.jastrow", t["jastrow"])
    check_str("trial.scf_cache", t["scf_cache"])
    check_positive("trial.jastrow_b", t["jastrow_b"])
    mol = mole_of(config)
    if t["mo_coeff"]:
        load_mo_coeff(t["mo_coeff"], mol, *mol.nelec)
    else:
        check_method(mol, t["scf"])


def build(config: dict, *, precision, ranges=None, seed: int = 0, specialise: bool = False
          ) -> Molecule:
    mol = mole_of(config)
    t = config["trial"]
    if t["mo_coeff"]:
        mf = load_mo_coeff(t["mo_coeff"], mol, *mol.nelec)
    else:
        mf = mean_field(mol, t["scf"], t["scf_cache"] or Path(config["output"]) / "scf")
    system = Molecule(mol, mf.mo_up, mf.mo_down, precision, ranges=ranges, seed=seed,
                      spread=config["system"]["spread"],
                      jastrow_b=t["jastrow_b"] if t["jastrow"] else None,
                      specialise=specialise)
    system.mean_field = mf
    return system


PLUGIN = SystemPlugin("molecule", SECTIONS, build, UNITS, check,
                      "Gaussian-basis molecule or H2 lattice, Slater determinants of PySCF "
                      "orbitals (seed 001)",
                      method_defaults={"step_size": 0.5, "move": "single", "taus": [0.02, 0.01],
                                       "recompute_every": 1})
