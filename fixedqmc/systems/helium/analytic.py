"""Compiled analytic pair functions of the squared distance, in float64 or float32.

The pair kernels see, for every pair of atoms, the squared distance ``s = r**2`` in
angstrom**2.  The functions here are their entry points to the He-He potentials and the
trial-function terms evaluated directly from s: numba ``@njit(cache=True, nogil=True)``
scalar functions whose arithmetic runs entirely in the floating type of ``s`` (a float32
``s`` gives float32 constants, operations, libm calls and result; a float64 ``s`` the same
in float64; other argument types are a typing error), with ``error_model="numpy"``: IEEE
division (1/0 = inf), no exception path, no allocation.

They hold no formula of their own: the formulas and constants are written once, in
:mod:`fixedqmc.systems.helium.potentials` (SAPT2 and the Aziz form, with the numerics of
the SAPT2 damping) and :mod:`fixedqmc.systems.helium.trial` (T2 and its derivatives, HAQMC
Eq. 17-19), whose numpy functions of r evaluate the same code in float64 at s = r * r.  So
in float64 ``sapt2_s(r * r) == potentials.sapt2(r)``, bit for bit, and likewise for every
potential and for ``t2_s``/``l_s`` and ``trial.t2``/``trial.pair_laplacian_term``.

Potentials (kelvin):

``sapt2_s(s)``, ``hfdb_s(s)``, ``hfdhe2_s(s)``, ``lm2m2_s(s)``
    V(r = sqrt(s)) in K.  Each takes an optional ignored second argument, so that
    ``(sapt2_s, coefficients)`` has the ``function(s, coefficients)`` signature of the
    pair kernels' analytic sources (:mod:`fixedqmc.systems.helium.kernels`).

:data:`ANALYTIC_POTENTIALS` maps the registry names to them and
:func:`get_analytic_potential` looks a name up as
:func:`~fixedqmc.systems.helium.potentials.get_potential` does.

Trial function (:mod:`fixedqmc.systems.helium.trial`, HAQMC Eq. 17-19), with a coefficient
array from :func:`pair_coefficients`:

``pair_terms_s(s, coef) -> (T2, G, L)``
    T2 = T2(r) (dimensionless), G = T2'(r) / r (1/A**2; grad_i ln psi = sum_j G(r_ij)
    (r_i - r_j)) and L = T2''(r) + 2 T2'(r) / r (1/A**2, one pair's contribution to
    lap_i ln psi, :func:`~fixedqmc.systems.helium.trial.pair_laplacian_term`).
``t2_s(s, coef)``, ``g_s(s, coef)``, ``l_s(s, coef)``
    The three terms one at a time.

Inputs must be s >= 0 (finite); the potentials are finite at s = 0, the trial terms are not
(r > 0).
"""

from __future__ import annotations

from numba import njit

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.helium import potentials as _pot
from fixedqmc.systems.helium.potentials import aziz_constants, aziz_s, sapt2_parts
from fixedqmc.systems.helium.trial import (
    COEF_NAMES,
    N_COEF,
    pair_coefficients,
    pair_terms_full,
)

__all__ = [
    "ANALYTIC_POTENTIALS",
    "COEF_NAMES",
    "N_COEF",
    "analytic_potential_names",
    "g_s",
    "get_analytic_potential",
    "hfdb_s",
    "hfdhe2_s",
    "l_s",
    "lm2m2_s",
    "pair_coefficients",
    "pair_terms_s",
    "sapt2_s",
    "t2_s",
]


# ---------------------------------------------------------------------------------------
# Potentials
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, error_model="numpy")
def sapt2_s(s, coef=None):
    """SAPT2 He-He potential (Janzen & Aziz 1997) at squared distance s (A^2), in K.

    :func:`fixedqmc.systems.helium.potentials.sapt2` at r = sqrt(s) (E_h = 3.1576621e5 K);
    arithmetic in s's type.  ``coef`` is ignored.
    """
    rep, disp = sapt2_parts(s)
    return rep - disp


(_HB_EA, _HB_AR, _HB_BS, _HB_DR, _HB_RM2, _HB_E6, _HB_E8, _HB_E10, _HB_AA, _HB_R1, _HB_R2,
 _HB_W) = aziz_constants(_pot.HFDB_HE)
(_H2_EA, _H2_AR, _H2_BS, _H2_DR, _H2_RM2, _H2_E6, _H2_E8, _H2_E10, _H2_AA, _H2_R1, _H2_R2,
 _H2_W) = aziz_constants(_pot.HFDHE2)
(_LM_EA, _LM_AR, _LM_BS, _LM_DR, _LM_RM2, _LM_E6, _LM_E8, _LM_E10, _LM_AA, _LM_R1, _LM_R2,
 _LM_W) = aziz_constants(_pot.LM2M2)


@njit(cache=True, nogil=True, error_model="numpy")
def hfdb_s(s, coef=None):
    """HFD-B(HE) potential (Aziz, McCourt & Wong 1987) at s (A^2), in K; ``coef`` ignored."""
    return aziz_s(s, _HB_EA, _HB_AR, _HB_BS, _HB_DR, _HB_RM2, _HB_E6, _HB_E8, _HB_E10,
                   _HB_AA, _HB_R1, _HB_R2, _HB_W)


@njit(cache=True, nogil=True, error_model="numpy")
def hfdhe2_s(s, coef=None):
    """HFDHE2 potential (Aziz et al. 1979) at s (A^2), in K; ``coef`` ignored."""
    return aziz_s(s, _H2_EA, _H2_AR, _H2_BS, _H2_DR, _H2_RM2, _H2_E6, _H2_E8, _H2_E10,
                   _H2_AA, _H2_R1, _H2_R2, _H2_W)


@njit(cache=True, nogil=True, error_model="numpy")
def lm2m2_s(s, coef=None):
    """LM2M2 potential with add-on (Aziz & Slaman 1991) at s (A^2), in K; ``coef`` ignored."""
    return aziz_s(s, _LM_EA, _LM_AR, _LM_BS, _LM_DR, _LM_RM2, _LM_E6, _LM_E8, _LM_E10,
                   _LM_AA, _LM_R1, _LM_R2, _LM_W)


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------

#: Registry name -> compiled V(s): the names of the reference registry
#: :data:`~fixedqmc.systems.helium.potentials.POTENTIALS`.
ANALYTIC_POTENTIALS = {
    "SAPT2": sapt2_s,
    "HFD-B": hfdb_s,
    "HFDHE2": hfdhe2_s,
    "LM2M2": lm2m2_s,
}

# the numpy function of r each analytic one evaluates at r = sqrt(s)
_REFERENCES = {
    "SAPT2": _pot.sapt2,
    "HFD-B": _pot.hfd_b,
    "HFDHE2": _pot.hfdhe2,
    "LM2M2": _pot.lm2m2,
}


def analytic_potential_names() -> list[str]:
    """Names of the potentials with a compiled analytic form (sorted)."""
    return sorted(ANALYTIC_POTENTIALS)


def _analytic_key(name: str) -> str | None:
    if name in ANALYTIC_POTENTIALS:
        return name
    folded = name.casefold()
    for key in ANALYTIC_POTENTIALS:
        if key.casefold() == folded:
            return key
    return _pot._ALIASES.get(folded)


def get_analytic_potential(name: str):
    """The compiled V(s) of potential ``name``, looked up like
    :func:`~fixedqmc.systems.helium.potentials.get_potential` (case-insensitive;
    "HFD-B(HE)" = "HFD-B").

    If ``name`` is registered in :data:`~fixedqmc.systems.helium.potentials.POTENTIALS`,
    the registered function decides: a built-in reference gives its analytic form, a
    user-registered function (also one registered over a built-in name) has none.

    Raises
    ------
    FixedQMCError (a ValueError)
        For a name without a compiled analytic form; the message names it and lists the
        analytic potentials.
    """
    available = ", ".join(analytic_potential_names())
    if isinstance(name, str):
        registered = _pot._find_key(name)
        if registered is None:
            key = _analytic_key(name)
        else:
            func = _pot.POTENTIALS[registered]
            key = next((k for k, ref in _REFERENCES.items() if ref is func), None)
        if key is not None:
            return ANALYTIC_POTENTIALS[key]
    raise FixedQMCError(
        f"no compiled analytic form of He-He potential {name!r}; analytic potentials: "
        f"{available} (user-registered potentials have no compiled analytic form; use "
        "tables)"
    )


# ---------------------------------------------------------------------------------------
# Trial function terms
# ---------------------------------------------------------------------------------------


@njit(cache=True, nogil=True, error_model="numpy")
def pair_terms_s(s, coef):
    """(T2, G, L) of the pair-product trial function at s (A^2), in s's type.

    T2 = T2(r) (dimensionless), G = T2'(r)/r (1/A^2), L = T2''(r) + 2 T2'(r)/r (1/A^2);
    ``coef`` from :func:`pair_coefficients` with s's dtype; s > 0.
    """
    t2, g, lap, _, _ = pair_terms_full(s, coef)
    return t2, g, lap


@njit(cache=True, nogil=True, error_model="numpy")
def t2_s(s, coef):
    """T2(r) at s (A^2), dimensionless (see :func:`pair_terms_s`)."""
    return pair_terms_full(s, coef)[0]


@njit(cache=True, nogil=True, error_model="numpy")
def g_s(s, coef):
    """G = T2'(r)/r at s (A^2), in 1/A^2 (see :func:`pair_terms_s`)."""
    return pair_terms_full(s, coef)[1]


@njit(cache=True, nogil=True, error_model="numpy")
def l_s(s, coef):
    """L = T2''(r) + 2 T2'(r)/r at s (A^2), in 1/A^2 (see :func:`pair_terms_s`)."""
    return pair_terms_full(s, coef)[2]
