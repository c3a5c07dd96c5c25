"""Compiled analytic pair functions of the squared distance, in float64 or float32.

The pair kernels see, for every pair of atoms, the squared distance ``s = r**2`` in
angstrom**2.  The functions here evaluate the He-He potentials and the trial-function terms
directly from s, as numba ``@njit(cache=True, nogil=True)`` scalar functions whose
arithmetic runs entirely in the floating type of ``s``: a float32 ``s`` gives float32
constants (rounded once from their float64 values), float32 operations and libm calls
(``expf``, ``logf``, ...) and a float32 result; a float64 ``s`` the same in float64.  Each
formula is written once; :func:`_c` turns a float64 constant into one of s's type, which
LLVM folds at compile time.  Other argument types (integers, float16) are a typing error.
They use numba's ``error_model="numpy"``: IEEE division (1/0 = inf), no exception path.

Potentials (kelvin), the same physics and constants as the float64 numpy references of
:mod:`fixedqmc.systems.helium.potentials`:

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

Formulas in s (u = 1/r = 1/sqrt(s), P = r**alpha = exp(alpha/2 ln s)):

    T2 = a_0 + u (a_1 + u (a_2 + u (a_3 + u (a_4 + u a_5)))) + (b/2) ln s + a P
    G  = u^2 [b + a alpha P - u (a_1 + u (2 a_2 + u (3 a_3 + u (4 a_4 + 5 a_5 u))))]
    L  = u^2 [b + a alpha (alpha + 1) P + u^2 (2 a_2 + u (6 a_3 + u (12 a_4 + 20 a_5 u)))]

(L is T2'' + 2 T2'/r with the cancelling terms removed: the 3D Laplacian of 1/r is 0.)

SAPT2 damping: f_2n(x) = P(2n+1, x) = 1 - exp(-x) sum_{k<=2n} x^k/k!, x = delta r, is
summed as that complement for x >= 6.5 (r >= 1.77 A).  Its cancellation costs an absolute
error of about one ulp of the *undamped* term E_h C_2n / r^2n, which for x >= 6.5 is at
most a few times |repulsion| + |dispersion| (measured: within 3e-15 of that sum).  For
x > 80, where exp(-x) S_2n(x) < 3e-18, x is clamped to 80 (so nothing overflows).
Below 6.5 it is summed as the tail exp(-x) sum_{k>2n} x^k/k!, without cancellation:

    f_m(delta r) / r^m = delta^m exp(-x) U_m(x),   U_m = sum_{k>m} x^(k-m)/k!,
    U_16 = (x / 17!) (1 + x/18 (1 + x/19 (...)))   (28 terms: float64 precision),
    U_(m-1) = x (1/m! + U_m),

with no division by r, so V(0) = A like the reference.  The retardation factor and its
r > 100 bohr rule are the reference's.  The exponent of the repulsions is clamped at -87
(float32) or -700 (float64), so that exp never underflows (slow; in float32 already from
r ~ 12 A on): the repulsion is then < 4e-32 K instead of smaller.

Every function is meant for hot loops: no allocation, no exception path; branches only
for the pieces of the potentials, the short-range SAPT2 series and, in the trial terms, alpha in (0, 1, 2) (a property of the parameters, always predicted).
Inputs must be s >= 0 (finite); the potentials are finite at s = 0, the trial terms are not
(r > 0).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.helium import potentials as _pot
from fixedqmc.systems.helium.constants import BOHR_ANGSTROM, HARTREE_K_SAPT2
from fixedqmc.systems.helium.trial import N_INVERSE_POWERS, PairProductParams

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
# A constant in the floating type of s
# ---------------------------------------------------------------------------------------


def _c(s, value):
    """``value`` as a number of s's floating type (in compiled code: a constant of it)."""
    return type(s)(value)


@overload(_c)
def _c_overload(s, value):
    if isinstance(s, types.Float) and s.bitwidth in (32, 64):
        ty = s
        return lambda s, value: ty(value)
    raise TypingError(f"analytic pair functions take float32 or float64 s, got {s}")


def _exp_floor(s):
    """Lowest exp argument used for the repulsions in s's type: exp of it is still a
    normal number (underflow is slow), and A exp(floor) < 1e-31 K is negligible."""
    return type(s)(_EXP_FLOOR_32 if np.dtype(type(s)) == np.float32 else _EXP_FLOOR_64)


@overload(_exp_floor)
def _exp_floor_overload(s):
    if isinstance(s, types.Float) and s.bitwidth in (32, 64):
        ty = s
        value = _EXP_FLOOR_32 if s.bitwidth == 32 else _EXP_FLOOR_64
        return lambda s: ty(value)
    raise TypingError(f"analytic pair functions take float32 or float64 s, got {s}")


_EXP_FLOOR_32 = -87.0  # exp(-87) = 1.6e-38 > the smallest normal float32
_EXP_FLOOR_64 = -700.0  # exp(-700) = 9.9e-305

# ---------------------------------------------------------------------------------------
# SAPT2
# ---------------------------------------------------------------------------------------

_P = _pot.SAPT2_PARAMETERS
_INV_BOHR2 = 1.0 / (BOHR_ANGSTROM * BOHR_ANGSTROM)  # A^-2 -> bohr^-2
_S_A = _P["A"]
_S_ALPHA = _P["alpha"]
_S_BETA = _P["beta"]
_S_DELTA = _P["delta"]
_ORDERS = (6, 8, 10, 12, 14, 16)
# E_h C_2n in K bohr^2n (complement form) and E_h C_2n delta^2n in K (tail form)
_K6, _K8, _K10, _K12, _K14, _K16 = (HARTREE_K_SAPT2 * _P[f"C{m}"] for m in _ORDERS)
_D6, _D8, _D10, _D12, _D14, _D16 = (HARTREE_K_SAPT2 * _P[f"C{m}"] * _S_DELTA**m
                                    for m in _ORDERS)
# 1/k! for k = 0..17
(_F0, _F1, _F2, _F3, _F4, _F5, _F6, _F7, _F8, _F9, _F10, _F11, _F12, _F13, _F14, _F15, _F16,
 _F17) = (1.0 / math.factorial(k) for k in range(18))

#: Below this x = delta r (bohr) the damping uses the tail series (r < 1.77 A).
_X_TAIL = 6.5


def _tail_coefficients(x_max: float) -> np.ndarray:
    """c_j = 1 / (18 * 19 * ... * (17 + j)), j = 0.., of W(x) = 1 + x/18 (1 + x/19 (...)),
    enough terms (an even number) for float64 precision up to x_max."""
    coef = [1.0]
    while coef[-1] * x_max ** (len(coef) - 1) > 2.0**-56 or len(coef) % 2:
        coef.append(coef[-1] / (17 + len(coef)))
    return np.array(coef)


_W_COEF = _tail_coefficients(_X_TAIL)  # 28 terms
_W_HALF = len(_W_COEF) // 2
#: x is clamped to this in the complement: exp(-x) S_16(x) < 3e-18 there, so f_2n = 1 to
#: float64 precision beyond, S_2n cannot overflow and exp(-x) never underflows (slow).
_X_UNDAMPED = 80.0

_FRET_R1, _FRET_R2 = 5.7, 10.0  # bohr, the pieces of the reference sapt2_fret
_FRET_C0, _FRET_C1, _FRET_C2, _FRET_C3 = _pot._FRET_CUBIC
_FRET_P12, _FRET_P22, _FRET_P32, _FRET_P42, _FRET_P52 = _pot._FRET_P
_FRET_RMAX = _pot._FRET_R_MAX


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sapt2_fret(r):
    """SAPT2 retardation factor for r in bohr (the reference's pieces and r > 100 rule).

    Both polynomial pieces are evaluated and one is selected (no unpredictable branch).
    """
    cubic = _c(r, _FRET_C0) + r * (_c(r, _FRET_C1) + r * (_c(r, _FRET_C2)
                                                          + r * _c(r, _FRET_C3)))
    q = math.sqrt(min(r, _c(r, _FRET_RMAX)))
    long = (_c(r, 1.0 - _FRET_P12)
            - q * (_c(r, _FRET_P22) + q * (_c(r, _FRET_P32)
                                           + q * (_c(r, _FRET_P42) + q * _c(r, _FRET_P52)))))
    fret = long if r > _c(r, _FRET_R2) else cubic
    return _c(r, 1.0) if r <= _c(r, _FRET_R1) else fret


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sapt2_disp_complement(x, ex, i2, fret):
    """E_h sum_n f_2n C_2n / r^2n (K) with f_2n = 1 - exp(-x) S_2n(x); ex = exp(-x) and
    i2 = 1/r^2 (bohr).  Estrin-style grouping (short dependency chains); every term is
    positive, so the grouping costs no accuracy."""
    one = _c(x, 1.0)
    x2 = x * x
    x3 = x2 * x
    x4 = x2 * x2
    x8 = x4 * x4
    # partial sums S_m = sum_{k<=m} x^k / k!, built from pairs of terms
    s6 = ((one + x) + x2 * (_c(x, _F2) + x * _c(x, _F3))
          + x4 * (_c(x, _F4) + x * _c(x, _F5) + x2 * _c(x, _F6)))
    s8 = s6 + x4 * x3 * (_c(x, _F7) + x * _c(x, _F8))
    s10 = s8 + x8 * x * (_c(x, _F9) + x * _c(x, _F10))
    s12 = s10 + x8 * x3 * (_c(x, _F11) + x * _c(x, _F12))
    s14 = s12 + x8 * x4 * x * (_c(x, _F13) + x * _c(x, _F14))
    s16 = s14 + x8 * x4 * x3 * (_c(x, _F15) + x * _c(x, _F16))
    i4 = i2 * i2
    return i4 * i2 * (
        (_c(x, _K6) * fret * (one - ex * s6) + i2 * _c(x, _K8) * (one - ex * s8))
        + i4 * (_c(x, _K10) * (one - ex * s10) + i2 * _c(x, _K12) * (one - ex * s12))
        + i4 * i4 * (_c(x, _K14) * (one - ex * s14) + i2 * _c(x, _K16) * (one - ex * s16)))


@njit(cache=True, nogil=True, error_model="numpy")
def _sapt2_disp_tail(x, ex, fret):
    """E_h sum_n f_2n C_2n / r^2n (K) from the tail series (module docstring), any x >= 0."""
    # W(x) = E(x^2) + x O(x^2): two independent Horner chains, all terms positive
    y = x * x
    e = _c(x, _W_COEF[2 * _W_HALF - 2])
    o = _c(x, _W_COEF[2 * _W_HALF - 1])
    for i in range(_W_HALF - 2, -1, -1):
        e = _c(x, _W_COEF[2 * i]) + y * e
        o = _c(x, _W_COEF[2 * i + 1]) + y * o
    w = e + x * o
    u16 = x * w * _c(x, _F17)
    u15 = x * (_c(x, _F16) + u16)
    u14 = x * (_c(x, _F15) + u15)
    u13 = x * (_c(x, _F14) + u14)
    u12 = x * (_c(x, _F13) + u13)
    u11 = x * (_c(x, _F12) + u12)
    u10 = x * (_c(x, _F11) + u11)
    u9 = x * (_c(x, _F10) + u10)
    u8 = x * (_c(x, _F9) + u9)
    u7 = x * (_c(x, _F8) + u8)
    u6 = x * (_c(x, _F7) + u7)
    return ex * (_c(x, _D6) * fret * u6 + _c(x, _D8) * u8 + _c(x, _D10) * u10
                 + _c(x, _D12) * u12 + _c(x, _D14) * u14 + _c(x, _D16) * u16)


@njit(cache=True, nogil=True, error_model="numpy")
def sapt2_s(s, coef=None):
    """SAPT2 He-He potential (Janzen & Aziz 1997) at squared distance s (A^2), in K.

    Same formula and constants as :func:`fixedqmc.systems.helium.potentials.sapt2`
    (E_h = 3.1576621e5 K); arithmetic in s's type.  ``coef`` is ignored.
    """
    sb = s * _c(s, _INV_BOHR2)
    r = math.sqrt(sb)
    x = _c(s, _S_DELTA) * r
    xc = min(x, _c(s, _X_UNDAMPED))  # f_2n = 1 beyond (relative error < 3e-18)
    ex = math.exp(-xc)
    arg = _c(s, _S_BETA) * sb - _c(s, _S_ALPHA) * r
    rep = _c(s, _S_A) * math.exp(max(arg, _exp_floor(s)))
    fret = _sapt2_fret(r)
    if x < _c(s, _X_TAIL):
        disp = _sapt2_disp_tail(x, ex, fret)
    else:
        disp = _sapt2_disp_complement(xc, ex, _c(s, 1.0) / sb, fret)
    return rep - disp


# ---------------------------------------------------------------------------------------
# Aziz form: HFD-B(HE), HFDHE2, LM2M2
# ---------------------------------------------------------------------------------------


def _aziz_constants(p: _pot.AzizParameters) -> tuple:
    """Constants of :func:`_aziz_s` in r, s units (float64; folded once here)."""
    addon = 2.0 * p.eps * p.Aa  # eps Aa (sin(theta - pi/2) + 1) = 2 eps Aa sin^2(theta/2)
    return (p.eps * p.A, p.alpha / p.r_m, p.beta / p.r_m**2, p.D * p.r_m, p.r_m**2,
            p.eps * p.C6, p.eps * p.C8, p.eps * p.C10, addon, p.x1 * p.r_m, p.x2 * p.r_m,
            math.pi / (p.r_m * (p.x2 - p.x1)) if addon != 0.0 else 0.0)


(_HB_EA, _HB_AR, _HB_BS, _HB_DR, _HB_RM2, _HB_E6, _HB_E8, _HB_E10, _HB_AA, _HB_R1, _HB_R2,
 _HB_W) = _aziz_constants(_pot.HFDB_HE)
(_H2_EA, _H2_AR, _H2_BS, _H2_DR, _H2_RM2, _H2_E6, _H2_E8, _H2_E10, _H2_AA, _H2_R1, _H2_R2,
 _H2_W) = _aziz_constants(_pot.HFDHE2)
(_LM_EA, _LM_AR, _LM_BS, _LM_DR, _LM_RM2, _LM_E6, _LM_E8, _LM_E10, _LM_AA, _LM_R1, _LM_R2,
 _LM_W) = _aziz_constants(_pot.LM2M2)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _aziz_s(s, eps_a, alpha_r, beta_s, d_r, rm2, e6, e8, e10, addon, r1, r2, w):
    """Aziz-form V in K at s (A^2); float64 constants (compile-time after inlining).

    eps [A exp(-alpha x + beta x^2) - F(x) (C6/x^6 + C8/x^8 + C10/x^10)] with x = r/r_m,
    F = exp(-(D/x - 1)^2) for x < D (= exp(-max(D/x - 1, 0)^2), branch-free), plus
    2 eps Aa sin^2(pi (r - r1)/(r2 - r1)) for r1 < r < r2 when ``addon`` != 0.
    """
    r = math.sqrt(s)
    t = max(_c(s, d_r) / r - _c(s, 1.0), _c(s, 0.0))
    damp = math.exp(-t * t)
    i2 = _c(s, rm2) / s  # 1/x^2
    disp = damp * (i2 * i2 * i2) * (_c(s, e6) + i2 * (_c(s, e8) + i2 * _c(s, e10)))
    if not damp > _c(s, 0.0):  # r -> 0: F underflows before 1/x^10 overflows, except s = 0
        disp = _c(s, 0.0)
    arg = _c(s, beta_s) * s - _c(s, alpha_r) * r
    v = _c(s, eps_a) * math.exp(max(arg, _exp_floor(s))) - disp
    if addon != 0.0 and r > _c(s, r1) and r < _c(s, r2):
        h = math.sin(_c(s, w) * (r - _c(s, r1)))
        v = v + _c(s, addon) * (h * h)
    return v


@njit(cache=True, nogil=True, error_model="numpy")
def hfdb_s(s, coef=None):
    """HFD-B(HE) potential (Aziz, McCourt & Wong 1987) at s (A^2), in K; ``coef`` ignored."""
    return _aziz_s(s, _HB_EA, _HB_AR, _HB_BS, _HB_DR, _HB_RM2, _HB_E6, _HB_E8, _HB_E10,
                   _HB_AA, _HB_R1, _HB_R2, _HB_W)


@njit(cache=True, nogil=True, error_model="numpy")
def hfdhe2_s(s, coef=None):
    """HFDHE2 potential (Aziz et al. 1979) at s (A^2), in K; ``coef`` ignored."""
    return _aziz_s(s, _H2_EA, _H2_AR, _H2_BS, _H2_DR, _H2_RM2, _H2_E6, _H2_E8, _H2_E10,
                   _H2_AA, _H2_R1, _H2_R2, _H2_W)


@njit(cache=True, nogil=True, error_model="numpy")
def lm2m2_s(s, coef=None):
    """LM2M2 potential with add-on (Aziz & Slaman 1991) at s (A^2), in K; ``coef`` ignored."""
    return _aziz_s(s, _LM_EA, _LM_AR, _LM_BS, _LM_DR, _LM_RM2, _LM_E6, _LM_E8, _LM_E10,
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

# the reference function each analytic one reproduces
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

#: Layout of the coefficient array of :func:`pair_terms_s` (made by
#: :func:`pair_coefficients`; the derived entries must stay consistent with the others).
COEF_NAMES = ("a0", "a1", "a2", "a3", "a4", "a5", "b", "a", "alpha", "half_b", "half_alpha",
              "a_alpha", "a_alpha_alpha1", "2a2", "3a3", "4a4", "5a5", "6a3", "12a4", "20a5")
N_COEF = len(COEF_NAMES)
(_A0, _A1, _A2, _A3, _A4, _A5, _B, _A, _ALPHA, _HB, _HALPHA, _AAL, _AAL1, _A2X2, _A3X3,
 _A4X4, _A5X5, _A3X6, _A4X12, _A5X20) = range(N_COEF)


def pair_coefficients(params: PairProductParams, dtype=np.float64) -> np.ndarray:
    """Coefficient array of T2(r) for :func:`pair_terms_s` (layout :data:`COEF_NAMES`).

    Parameters
    ----------
    params : PairProductParams
        b, a, alpha and a_0..a_5 of T2(r) = b ln r + a r^alpha + sum_k a_k r^-k.
    dtype : numpy float32 or float64
        Type of the array; pass s's type (products are formed in float64 and rounded
        once).

    Returns
    -------
    ndarray (N_COEF,)
        a_0..a_5, b, a, alpha, then b/2, alpha/2 (0 when a = 0, so that r^alpha is 1
        and never inf * 0), a alpha, a alpha (alpha + 1), 2 a_2, 3 a_3, 4 a_4, 5 a_5,
        6 a_3, 12 a_4, 20 a_5.
    """
    if not isinstance(params, PairProductParams):
        raise FixedQMCError(f"params must be a PairProductParams, got {params!r}")
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise FixedQMCError(f"coefficient dtype must be float32 or float64, got {dt}")
    a_k = tuple(params.a_k) + (0.0,) * (N_INVERSE_POWERS - len(params.a_k))
    a0, a1, a2, a3, a4, a5 = a_k
    b, a, alpha = params.b, params.a, params.alpha
    half_alpha = 0.5 * alpha if a != 0.0 else 0.0
    values = (a0, a1, a2, a3, a4, a5, b, a, alpha, 0.5 * b, half_alpha, a * alpha,
              a * alpha * (alpha + 1.0), 2.0 * a2, 3.0 * a3, 4.0 * a4, 5.0 * a5,
              6.0 * a3, 12.0 * a4, 20.0 * a5)
    return np.array(values, dtype=np.float64).astype(dt)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _pair_terms(s, coef):
    # _c: a float64 coef with a float32 s is rounded, never promotes the arithmetic
    ls = math.log(s)
    u = _c(s, 1.0) / math.sqrt(s)
    u2 = u * u
    # p = r^alpha; the branches depend on the parameters only (always predicted right)
    half_alpha = _c(s, coef[_HALPHA])
    if half_alpha == _c(s, 0.0):
        p = _c(s, 1.0)
    elif half_alpha == _c(s, 0.5):
        p = s * u
    elif half_alpha == _c(s, 1.0):
        p = s
    else:
        p = math.exp(half_alpha * ls)
    a1, a2x2 = _c(s, coef[_A1]), _c(s, coef[_A2X2])
    b = _c(s, coef[_B])
    t2 = (_c(s, coef[_A0]) + u * (a1 + u * (_c(s, coef[_A2]) + u * (_c(s, coef[_A3]) + u * (
        _c(s, coef[_A4]) + u * _c(s, coef[_A5]))))) + _c(s, coef[_HB]) * ls
        + _c(s, coef[_A]) * p)
    g = u2 * (b + _c(s, coef[_AAL]) * p - u * (a1 + u * (a2x2 + u * (
        _c(s, coef[_A3X3]) + u * (_c(s, coef[_A4X4]) + u * _c(s, coef[_A5X5]))))))
    lap = u2 * (b + _c(s, coef[_AAL1]) * p + u2 * (a2x2 + u * (_c(s, coef[_A3X6]) + u * (
        _c(s, coef[_A4X12]) + u * _c(s, coef[_A5X20])))))
    return t2, g, lap


@njit(cache=True, nogil=True, error_model="numpy")
def pair_terms_s(s, coef):
    """(T2, G, L) of the pair-product trial function at s (A^2), in s's type.

    T2 = T2(r) (dimensionless), G = T2'(r)/r (1/A^2), L = T2''(r) + 2 T2'(r)/r (1/A^2);
    ``coef`` from :func:`pair_coefficients` with s's dtype; s > 0.
    """
    return _pair_terms(s, coef)


@njit(cache=True, nogil=True, error_model="numpy")
def t2_s(s, coef):
    """T2(r) at s (A^2), dimensionless (see :func:`pair_terms_s`)."""
    return _pair_terms(s, coef)[0]


@njit(cache=True, nogil=True, error_model="numpy")
def g_s(s, coef):
    """G = T2'(r)/r at s (A^2), in 1/A^2 (see :func:`pair_terms_s`)."""
    return _pair_terms(s, coef)[1]


@njit(cache=True, nogil=True, error_model="numpy")
def l_s(s, coef):
    """L = T2''(r) + 2 T2'(r)/r at s (A^2), in 1/A^2 (see :func:`pair_terms_s`)."""
    return _pair_terms(s, coef)[2]
