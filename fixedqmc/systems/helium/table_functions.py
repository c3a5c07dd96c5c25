"""The helium pair functions as named table functions (``fixedqmc tables generate
--function NAME``), with HAQMC's tabulation defaults (seed 002, Sec. 3-4; the table of
:mod:`fixedqmc.tables.builtin`).  Registered in the entry-point group
``fixedqmc.table_functions`` (``pyproject.toml``), so that tables find them without
importing this system.  r in angstrom.
"""

from __future__ import annotations

from fixedqmc.systems.helium import (DEFAULT_PAIR_PARAMS, hfd_b, lm2m2, pair_psi,
                                     pair_psi_laplacian, sapt2)
from fixedqmc.tables.builtin import BuiltinFunction

__all__ = ["HFD_B", "KINETIC", "LM2M2", "PSI", "SAPT2"]


def _psi(r):
    """exp(T2(r)) with the default pair parameters (dimensionless; r in angstrom)."""
    return pair_psi(r, DEFAULT_PAIR_PARAMS)


def _kinetic(r):
    """psi'' + 2 psi'/r of the default pair factor, 1/A^2 (HAQMC Fig. 8; r in angstrom)."""
    return pair_psi_laplacian(r, DEFAULT_PAIR_PARAMS)


_POTENTIAL = dict(r_min=1.5, r_max=15.0, sigma="zero", transform=("none", "exp"), unit="K")
_PAIR = dict(r_min=1.5, r_max=15.0, transform=("none", "none"))

SAPT2 = BuiltinFunction("sapt2", sapt2, doc="SAPT2 He-He potential (Janzen & Aziz 1997)",
                        **_POTENTIAL)
HFD_B = BuiltinFunction("hfd-b", hfd_b, doc="HFD-B(HE) He-He potential (Aziz et al. 1987)",
                        **_POTENTIAL)
LM2M2 = BuiltinFunction("lm2m2", lm2m2, doc="LM2M2 He-He potential (Aziz & Slaman 1991)",
                        **_POTENTIAL)
PSI = BuiltinFunction("psi", _psi, sigma="max", unit="1",
                      doc="pair trial function exp(T2(r)), default parameters", **_PAIR)
KINETIC = BuiltinFunction("kinetic", _kinetic, sigma="sign_change", unit="1/A^2",
                          doc="psi'' + 2 psi'/r of the pair factor (HAQMC Fig. 8)", **_PAIR)
