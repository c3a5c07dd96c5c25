"""Physical constants for helium clusters (units: kelvin and angstrom).

Energies are in kelvin (K, i.e. E / k_B), lengths in angstrom (A).  The kinetic prefactor
``hbar^2 / (2 m_4He)`` is a *named* parameter because He-cluster energies at the mK level
depend on it:

* :data:`HBAR2_2M_CODATA2022` = 6.0596481 K A^2, from CODATA 2022 (hbar, k_B, atomic mass
  constant) and the 4He atomic mass 4.00260325413 u.  This is the default,
  :data:`HBAR2_2M`.
* :data:`HBAR2_2M_LITERATURE` = 6.0596 K A^2, the four-decimal value quoted in much of the
  He-cluster literature.
* :data:`HBAR2_2M_12_12` = 6.06 K A^2, from the rounded ``hbar^2 / m = 12.12 K A^2`` used by
  many older He-cluster papers.

:func:`get_hbar2_2m` returns one of them by name.

Conversion factors (CODATA 2022): :data:`HARTREE_K` (1 hartree in kelvin) and
:data:`BOHR_ANGSTROM` (1 bohr in angstrom).  The SAPT2 potential uses its own hartree value
:data:`HARTREE_K_SAPT2` = 3.1576621e5 K, the value of the public SAPT2 implementations with
which its check values were computed (see :mod:`fixedqmc.systems.helium.potentials`).
"""

from __future__ import annotations

from fixedqmc.errors import FixedQMCError

#: 1 hartree in kelvin, E_h / k_B (CODATA 2022).
HARTREE_K: float = 315775.02480

#: 1 bohr in angstrom (CODATA 2022).
BOHR_ANGSTROM: float = 0.529177210544

#: Hartree-to-kelvin factor of the public SAPT2 codes (Janzen & Aziz 1997 implementations).
#: The reference check values of SAPT2 were computed with it; it differs from
#: :data:`HARTREE_K` by 2.8e-5 relative, i.e. about 1e-4 K near the well minimum.
HARTREE_K_SAPT2: float = 3.1576621e5

#: hbar^2 / (2 m_4He) in K A^2 from CODATA 2022 constants and m_4He = 4.00260325413 u.
HBAR2_2M_CODATA2022: float = 6.0596481

#: hbar^2 / (2 m_4He) in K A^2 as quoted (four decimals) in much of the He-cluster literature.
HBAR2_2M_LITERATURE: float = 6.0596

#: hbar^2 / (2 m_4He) in K A^2 from the rounded hbar^2 / m = 12.12 K A^2 of older papers.
HBAR2_2M_12_12: float = 6.06

#: Default hbar^2 / (2 m_4He) in K A^2 used by fixedqmc: the CODATA 2022 value.
HBAR2_2M: float = HBAR2_2M_CODATA2022

#: Named choices of hbar^2 / (2 m_4He) in K A^2.
HBAR2_2M_VALUES: dict[str, float] = {
    "codata2022": HBAR2_2M_CODATA2022,
    "literature": HBAR2_2M_LITERATURE,
    "12.12": HBAR2_2M_12_12,
}


def get_hbar2_2m(name: str = "codata2022") -> float:
    """hbar^2 / (2 m_4He) in K A^2 for a named choice.

    Parameters
    ----------
    name : str
        ``"codata2022"`` (6.0596481, default), ``"literature"`` (6.0596) or ``"12.12"``
        (6.06, from hbar^2/m = 12.12 K A^2).

    Raises
    ------
    FixedQMCError (a ValueError)
        For an unknown name; the message lists the allowed names.
    """
    try:
        return HBAR2_2M_VALUES[name]
    except (KeyError, TypeError):
        allowed = ", ".join(repr(k) for k in HBAR2_2M_VALUES)
        raise FixedQMCError(
            f"unknown hbar^2/2m choice {name!r}; allowed: {allowed}"
        ) from None
