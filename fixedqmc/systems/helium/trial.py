"""Pair-product (Jastrow) trial wave function of a bosonic helium cluster, float64 numpy API.

psi(R) = prod_{i<j} exp(T2(r_ij))                                         (HAQMC Eq. 11)

with the two-body pseudo-potential of Barnett & Whaley, Phys. Rev. A 47, 4082 (1993), as
written in HAQMC Eq. 12-17 (r in angstrom, u = 1/r):

T2(r) = b ln r + a r^alpha + sum_{k=0..5} a_k u^k                              (Eq. 17)

Units: r in angstrom; b is dimensionless, a in A^-alpha, a_k in A^k, so T2 is dimensionless.
McMillan's form T2 = -(1/2) (b_M / r)^5 is the special case a_5 = -b_M^5 / 2
(:meth:`PairProductParams.mcmillan`).

Radial derivatives (Eq. 18 and the corrected Eq. 19):

T2'(r)  = b/r + a alpha r^(alpha-1) - sum_k k a_k u^(k+1)
T2''(r) = -b/r^2 + a alpha (alpha-1) r^(alpha-2) + sum_k k (k+1) a_k u^(k+2)
d/dr exp(T2)     = exp(T2) T2'
d2/dr2 exp(T2)   = exp(T2) (T2'' + T2'^2)

HAQMC's printed Eq. 19 has ``- sum k a_k u^(k+1)`` (the first derivative's sum) inside the
first bracket; the correct term is ``+ sum k (k+1) a_k u^(k+2)``.

For psi = exp(sum_pairs T2) the derivatives with respect to atom i are

grad_i ln psi = sum_{j != i} T2'(r_ij) (r_i - r_j) / r_ij
lap_i  ln psi = sum_{j != i} [T2''(r_ij) + 2 T2'(r_ij) / r_ij]

and the local energy is E_L = -hbar^2/2m sum_i [lap_i ln psi + |grad_i ln psi|^2] + sum_{i<j} V.

Each formula is written once: :func:`pair_terms_full`, a numba scalar function of the squared
distance s = r**2 (A^2) whose arithmetic runs in s's floating type (float32 or float64, as
the potentials' of :mod:`fixedqmc.systems.helium.potentials`), evaluates T2 and its
derivatives from a coefficient array (:func:`pair_coefficients`).  The numpy functions of r
below (:func:`t2`, :func:`dt2`, :func:`d2t2`, :func:`pair_laplacian_term`) call it in
float64 through a compiled loop; the pair kernels call it in float32 or float64 through
:mod:`fixedqmc.systems.helium.analytic`.  With u = 1/r = 1/sqrt(s) and
P = r^alpha = exp(alpha/2 ln s):

    T2   = a_0 + u (a_1 + u (a_2 + u (a_3 + u (a_4 + u a_5)))) + (b/2) ln s + a P
    T2'  = u B,  G = T2'/r = u^2 B,
    B    = b + a alpha P - u (a_1 + u (2 a_2 + u (3 a_3 + u (4 a_4 + 5 a_5 u))))
    T2'' = u^2 [-b + a alpha (alpha-1) P + u (2 a_1 + u (6 a_2 + u (12 a_3 + u (20 a_4
           + 30 a_5 u))))]
    L    = T2'' + 2 T2'/r = u^2 [b + a alpha (alpha+1) P + u^2 (2 a_2 + u (6 a_3 + u (12 a_4
           + 20 a_5 u)))]

(L with the cancelling terms removed: the 3D Laplacian of 1/r is 0.)  P is formed without
exp and log for alpha in (0, 1, 2), a property of the parameters (an always predicted
branch).  The functions need r > 0 (s > 0); they see r**2 only, not the sign of r.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.helium.constants import HBAR2_2M
from fixedqmc.systems.helium.potentials import (
    evaluate_on_squares,
    get_potential,
)
from fixedqmc.systems.helium.potentials import (
    in_type as _c,
)

__all__ = [
    "COEF_NAMES",
    "DEFAULT_PAIR_PARAMS",
    "N_COEF",
    "PairProductParams",
    "d2t2",
    "dimer_local_energy",
    "dt2",
    "grad_lap_ln_psi",
    "ln_psi",
    "local_energy_pair_sum",
    "pair_coefficients",
    "pair_laplacian_term",
    "pair_psi",
    "pair_psi_derivatives",
    "pair_psi_laplacian",
    "t2",
]

N_INVERSE_POWERS = 6  # a_0 .. a_5 of Eq. 17


def _power_terms(a: float, alpha: float, a_k: tuple[float, ...]) -> dict[float, float]:
    """Power-law terms of T2 as {power of r: coefficient}, merged, zeros dropped."""
    terms: dict[float, float] = {}
    for k in range(1, len(a_k)):
        if a_k[k] != 0.0:
            terms[float(-k)] = terms.get(float(-k), 0.0) + a_k[k]
    if a != 0.0 and alpha != 0.0:
        terms[float(alpha)] = terms.get(float(alpha), 0.0) + a
    return {p: c for p, c in terms.items() if c != 0.0}


@dataclass(frozen=True)
class PairProductParams:
    """Parameters of T2(r) = b ln r + a r^alpha + sum_{k=0..5} a_k r^-k (HAQMC Eq. 17).

    Attributes
    ----------
    b : float
        Coefficient of ln r (dimensionless): psi_l contains r^b (Eq. 14).
    a : float
        Coefficient of r^alpha, in A^-alpha (Eq. 14).  A decaying long-range tail needs
        a < 0 with alpha > 0 (or b < -3/2 without it).
    alpha : float
        Exponent of the r^alpha term (dimensionless).
    a_k : tuple of 6 floats
        a_0 .. a_5 of P(u) = sum a_k u^k, u = 1/r (Eq. 13); a_k in A^k.  Shorter
        sequences are padded with zeros.  a_0 only normalises psi.

    Construction checks that every value is finite and that psi^2 r^2 is integrable at
    r -> 0 (the most singular term must have a negative coefficient, or b > -3/2 if there
    is none).  Integrability at r -> infinity, needed for a finite cluster but not for a
    bulk (periodic) system, is checked by :meth:`check_normalisable`.
    """

    b: float = 0.0
    a: float = 0.0
    alpha: float = 1.0
    a_k: tuple[float, ...] = field(default=(0.0,) * N_INVERSE_POWERS)

    def __post_init__(self) -> None:
        try:
            coeffs = tuple(float(c) for c in self.a_k)
        except TypeError:
            raise FixedQMCError(f"a_k must be a sequence of numbers, got {self.a_k!r}") from None
        if len(coeffs) > N_INVERSE_POWERS:
            raise FixedQMCError(
                f"a_k holds a_0..a_5 (at most {N_INVERSE_POWERS} values), got {len(coeffs)}"
            )
        coeffs = coeffs + (0.0,) * (N_INVERSE_POWERS - len(coeffs))
        object.__setattr__(self, "a_k", coeffs)
        for name in ("b", "a", "alpha"):
            object.__setattr__(self, name, float(getattr(self, name)))
        for name, value in (("b", self.b), ("a", self.a), ("alpha", self.alpha)) + tuple(
            (f"a_{k}", c) for k, c in enumerate(coeffs)
        ):
            if not math.isfinite(value):
                raise FixedQMCError(f"trial parameter {name} must be finite, got {value!r}")
        problem = self._short_range_problem()
        if problem:
            raise FixedQMCError(problem)

    # -- constructors -----------------------------------------------------------------
    @classmethod
    def mcmillan(
        cls, b: float, *, a: float = 0.0, alpha: float = 1.0, b_log: float = 0.0
    ) -> PairProductParams:
        """McMillan T2 = -(1/2) (b / r)^5, i.e. a_5 = -b^5 / 2 (b in angstrom, > 0).

        The pure McMillan form (bulk liquid) does not decay at large r; for a cluster add a
        long-range term ``a r^alpha`` (a < 0, alpha > 0) and/or ``b_log ln r``.
        """
        if not (math.isfinite(b) and b > 0.0):
            raise FixedQMCError(f"McMillan length b must be > 0 angstrom, got {b!r}")
        return cls(b=b_log, a=a, alpha=alpha, a_k=(0.0, 0.0, 0.0, 0.0, 0.0, -0.5 * b**5))

    @classmethod
    def from_dict(cls, values: dict) -> PairProductParams:
        """Inverse of :meth:`as_dict`."""
        return cls(**values)

    def as_dict(self) -> dict:
        """Parameters as a plain dict (keys b, a, alpha, a_k)."""
        return {"b": self.b, "a": self.a, "alpha": self.alpha, "a_k": list(self.a_k)}

    # -- normalisability --------------------------------------------------------------
    def _short_range_problem(self) -> str:
        terms = _power_terms(self.a, self.alpha, self.a_k)
        singular = [p for p in terms if p < 0.0]
        if singular:
            p = min(singular)
            if terms[p] > 0.0:
                return (
                    f"trial function diverges as r -> 0: the most singular term r^{p:g} has "
                    f"coefficient {terms[p]:g} > 0 (it must be negative so that psi -> 0)"
                )
            return ""
        if not self.b > -1.5:
            return (
                f"psi^2 r^2 ~ r^(2b+2) is not integrable at r -> 0 for b = {self.b:g}; "
                "need b > -3/2 or a negative inverse-power term"
            )
        return ""

    def long_range_problem(self) -> str:
        """Why psi^2 r^2 is not integrable at r -> infinity ("" if it is)."""
        terms = _power_terms(self.a, self.alpha, self.a_k)
        growing = [p for p in terms if p > 0.0]
        if growing:
            p = max(growing)
            if terms[p] > 0.0:
                return (
                    f"trial function grows at large r: the long-range term r^{p:g} has "
                    f"coefficient {terms[p]:g} > 0; a long-range term must decay (a < 0 with "
                    "alpha > 0)"
                )
            return ""
        if not self.b < -1.5:
            return (
                f"trial function does not decay fast enough at large r: no decaying "
                f"a r^alpha term (a = {self.a:g}, alpha = {self.alpha:g}) and psi^2 r^2 ~ "
                f"r^(2b+2) with b = {self.b:g}; a long-range term must decay (a < 0 with "
                "alpha > 0, or b < -3/2)"
            )
        return ""

    def is_normalisable(self) -> bool:
        """True if the He2 pair function has finite integral of psi^2 r^2 dr on (0, inf).

        Sufficient for an N-atom cluster too when the decay comes from a r^alpha (a < 0,
        alpha > 0): the product of pair factors then decays with the cluster's extent.
        """
        return not self._short_range_problem() and not self.long_range_problem()

    def check_normalisable(self) -> PairProductParams:
        """Return self if the dimer pair function is normalisable; ValueError otherwise."""
        problem = self._short_range_problem() or self.long_range_problem()
        if problem:
            raise FixedQMCError(f"pair-product trial function not normalisable: {problem}")
        return self

    # -- evaluation shortcuts ---------------------------------------------------------
    def t2(self, r):
        """T2(r), Eq. 17; r in angstrom.  See :func:`t2`."""
        return t2(r, self)

    def dt2(self, r):
        """T2'(r) in 1/A, Eq. 18.  See :func:`dt2`."""
        return dt2(r, self)

    def d2t2(self, r):
        """T2''(r) in 1/A^2, corrected Eq. 19.  See :func:`d2t2`."""
        return d2t2(r, self)

    def pair_laplacian_term(self, r):
        """T2'' + 2 T2'/r in 1/A^2.  See :func:`pair_laplacian_term`."""
        return pair_laplacian_term(r, self)


#: Default pair parameters for He clusters with SAPT2 (r in angstrom).  A reasonable choice,
#: not a published set: McMillan-like short range (a_5 = -118.8 A^5, b_M = 2.987 A),
#: a_2 = -2.57 A^2, and the exp(-kappa r) / r^1.08 tail of a weakly bound pair.  The values
#: minimise the He2 variational energy (radial quadrature, SAPT2, hbar^2/2m = 6.0596481 K A^2),
#: which is -1.565 mK against -1.82 mK for the exact He2 ground state: bound.
DEFAULT_PAIR_PARAMS = PairProductParams(
    b=-1.08, a=-0.0095, alpha=1.0, a_k=(0.0, 0.0, -2.57, 0.0, 0.0, -118.8)
)


# ---------------------------------------------------------------------------------------
# The formulas, once: compiled scalar function of s = r**2 (float32 or float64)
# ---------------------------------------------------------------------------------------

#: Layout of the coefficient array of :func:`pair_terms_full` (made by
#: :func:`pair_coefficients`; the derived entries must stay consistent with the others).
COEF_NAMES = ("a0", "a1", "a2", "a3", "a4", "a5", "b", "a", "alpha", "half_b", "half_alpha",
              "a_alpha", "a_alpha_alpha1", "2a2", "3a3", "4a4", "5a5", "6a3", "12a4", "20a5",
              "a_alpha_alpham1", "2a1", "6a2", "12a3", "20a4", "30a5")
N_COEF = len(COEF_NAMES)
(_A0, _A1, _A2, _A3, _A4, _A5, _B, _A, _ALPHA, _HB, _HALPHA, _AAL, _AAL1, _A2X2, _A3X3,
 _A4X4, _A5X5, _A3X6, _A4X12, _A5X20, _AALM1, _A1X2, _A2X6, _A3X12, _A4X20,
 _A5X30) = range(N_COEF)


def _coefficient_values(params) -> np.ndarray:
    """The float64 array of :data:`COEF_NAMES` for params' b, a, alpha and a_k."""
    a_k = tuple(params.a_k) + (0.0,) * (N_INVERSE_POWERS - len(params.a_k))
    a0, a1, a2, a3, a4, a5 = a_k
    b, a, alpha = params.b, params.a, params.alpha
    half_alpha = 0.5 * alpha if a != 0.0 else 0.0
    return np.array((a0, a1, a2, a3, a4, a5, b, a, alpha, 0.5 * b, half_alpha, a * alpha,
                     a * alpha * (alpha + 1.0), 2.0 * a2, 3.0 * a3, 4.0 * a4, 5.0 * a5,
                     6.0 * a3, 12.0 * a4, 20.0 * a5, a * alpha * (alpha - 1.0), 2.0 * a1,
                     6.0 * a2, 12.0 * a3, 20.0 * a4, 30.0 * a5), dtype=np.float64)


def pair_coefficients(params: PairProductParams, dtype=np.float64) -> np.ndarray:
    """Coefficient array of T2(r) for the compiled pair terms (layout :data:`COEF_NAMES`).

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
        6 a_3, 12 a_4, 20 a_5, a alpha (alpha - 1), 2 a_1, 6 a_2, 12 a_3, 20 a_4, 30 a_5.
    """
    if not isinstance(params, PairProductParams):
        raise FixedQMCError(f"params must be a PairProductParams, got {params!r}")
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise FixedQMCError(f"coefficient dtype must be float32 or float64, got {dt}")
    return _coefficient_values(params).astype(dt)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def pair_terms_full(s, coef):
    """(T2, G, L, T2', T2'') at s (A^2) in s's type (module docstring); s > 0.

    T2 dimensionless, G = T2'/r and L = T2'' + 2 T2'/r in 1/A^2, T2' in 1/A, T2'' in
    1/A^2.  Compiled code that uses only some of them does not compute the others.
    """
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
    d1_u = b + _c(s, coef[_AAL]) * p - u * (a1 + u * (a2x2 + u * (
        _c(s, coef[_A3X3]) + u * (_c(s, coef[_A4X4]) + u * _c(s, coef[_A5X5])))))
    lap = u2 * (b + _c(s, coef[_AAL1]) * p + u2 * (a2x2 + u * (_c(s, coef[_A3X6]) + u * (
        _c(s, coef[_A4X12]) + u * _c(s, coef[_A5X20])))))
    d2 = u2 * (_c(s, coef[_AALM1]) * p - b + u * (_c(s, coef[_A1X2]) + u * (
        _c(s, coef[_A2X6]) + u * (_c(s, coef[_A3X12]) + u * (
            _c(s, coef[_A4X20]) + u * _c(s, coef[_A5X30]))))))
    return t2, u2 * d1_u, lap, u * d1_u, d2


# index of each radial function in the tuple of pair_terms_full
_T2, _G, _L, _DT2, _D2T2 = range(5)


@njit(cache=True, nogil=True, error_model="numpy")
def _pair_terms_array(s, coef, k, out):
    """out[i] = term k of :func:`pair_terms_full` at s[i] (float64)."""
    for i in range(s.size):
        out[i] = pair_terms_full(s[i], coef)[k]


# ---------------------------------------------------------------------------------------
# Vectorised radial functions (r in angstrom, any shape, r > 0)
# ---------------------------------------------------------------------------------------


def _radii(r) -> np.ndarray:
    return np.asarray(r, dtype=np.float64)


def _out(value, r_in):
    return float(value) if np.ndim(r_in) == 0 else value


def _radial(r, params: PairProductParams, k: int):
    """Term k of :func:`pair_terms_full` at r (float64, r's shape; a float for scalar r)."""
    out = evaluate_on_squares(_pair_terms_array, _radii(r), _coefficient_values(params), k)
    return _out(out, r)


def t2(r, params: PairProductParams):
    """T2(r) = b ln r + a r^alpha + sum_{k=0..5} a_k r^-k (HAQMC Eq. 17), dimensionless.

    Parameters
    ----------
    r : float or array of any shape
        Pair distance in angstrom (> 0).
    params : PairProductParams

    Returns
    -------
    float or ndarray of r's shape
    """
    return _radial(r, params, _T2)


def dt2(r, params: PairProductParams):
    """T2'(r) = b/r + a alpha r^(alpha-1) - sum_k k a_k u^(k+1) (HAQMC Eq. 18 bracket), 1/A.

    Parameters
    ----------
    r : float or array of any shape
        Pair distance in angstrom (> 0).
    """
    return _radial(r, params, _DT2)


def d2t2(r, params: PairProductParams):
    """T2''(r) = -b/r^2 + a alpha(alpha-1) r^(alpha-2) + sum_k k(k+1) a_k u^(k+2), 1/A^2.

    The correct second derivative of Eq. 17 (HAQMC's printed Eq. 19 has the first
    derivative's sum here instead).

    Parameters
    ----------
    r : float or array of any shape
        Pair distance in angstrom (> 0).
    """
    return _radial(r, params, _D2T2)


def pair_laplacian_term(r, params: PairProductParams):
    """T2''(r) + 2 T2'(r) / r in 1/A^2: one pair's contribution to lap_i ln psi.

    This is the 3D Laplacian of T2(|r|).  HAQMC's Fig. 8 kernel, psi'' + 2 psi'/r of the
    pair factor psi = exp(T2), equals exp(T2) * (this + T2'^2); see
    :func:`pair_psi_laplacian`.

    Parameters
    ----------
    r : float or array of any shape
        Pair distance in angstrom (> 0).
    """
    return _radial(r, params, _L)


def pair_psi(r, params: PairProductParams):
    """Pair factor exp(T2(r)) (HAQMC Eq. 11), dimensionless; r in angstrom."""
    rr = _radii(r)
    with np.errstate(over="ignore", under="ignore"):
        out = np.exp(np.asarray(t2(rr, params)))
    return _out(out, r)


def pair_psi_derivatives(r, params: PairProductParams):
    """(psi, dpsi/dr, d2psi/dr2) of the pair factor psi = exp(T2) (Eq. 11, 18, corrected 19).

    dpsi/dr = psi T2' (1/A), d2psi/dr2 = psi (T2'' + T2'^2) (1/A^2); r in angstrom, arrays of
    r's shape (floats for scalar r).
    """
    psi = pair_psi(r, params)
    d1 = dt2(r, params)
    d2 = d2t2(r, params)
    return psi, psi * d1, psi * (d2 + d1 * d1)


def pair_psi_laplacian(r, params: PairProductParams):
    """psi'' + 2 psi'/r of the pair factor psi = exp(T2), in 1/A^2 (HAQMC Fig. 8 kernel).

    Equals exp(T2) (T2'' + T2'^2 + 2 T2'/r), the 3D Laplacian of exp(T2(|r|)).
    """
    rr = _radii(r)
    _, d1, d2 = pair_psi_derivatives(rr, params)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = d2 + 2.0 * d1 / rr
    return _out(out, r)


def resolve_potential(potential) -> Callable:
    if isinstance(potential, str):
        return get_potential(potential)
    if not callable(potential):
        raise FixedQMCError(
            f"potential must be a registered name or a callable V(r_angstrom) -> K, got "
            f"{potential!r}"
        )
    return potential


def dimer_local_energy(r, params: PairProductParams, potential="SAPT2",
                       hbar2_2m: float = HBAR2_2M):
    """Local energy of He2 as a function of the pair distance, in K (vectorised).

    For two atoms E_L = -2 hbar^2/2m [T2'' + 2 T2'/r + T2'^2] + V(r) (each atom contributes
    the same Laplacian and squared gradient).

    Parameters
    ----------
    r : float or array of any shape
        Pair distance in angstrom (> 0).
    params : PairProductParams
    potential : str or callable
        Registered potential name or V(r_angstrom) -> K.
    hbar2_2m : float
        hbar^2 / (2 m) in K A^2 (default CODATA 2022 4He value).
    """
    rr = _radii(r)
    pot = resolve_potential(potential)
    d1 = np.asarray(dt2(rr, params))
    lap = np.asarray(pair_laplacian_term(rr, params))
    out = -2.0 * hbar2_2m * (lap + d1 * d1) + np.asarray(pot(rr))
    return _out(out, r)


# ---------------------------------------------------------------------------------------
# One configuration: plain numpy reference implementation
# ---------------------------------------------------------------------------------------


def _pairs(positions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, r_i - r_j, r_ij) for all pairs i < j; validates the configuration."""
    x = np.asarray(positions, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < 2:
        raise FixedQMCError(
            f"positions must have shape (n_atoms, 3) with n_atoms >= 2, got {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise FixedQMCError("positions must be finite")
    i, j = np.triu_indices(x.shape[0], k=1)
    diff = x[i] - x[j]
    r = np.sqrt(np.einsum("pk,pk->p", diff, diff))
    if np.any(r == 0.0):
        bad = int(np.argmax(r == 0.0))
        raise FixedQMCError(f"atoms {i[bad]} and {j[bad]} coincide (r_ij = 0)")
    return i, j, diff, r


def ln_psi(positions, params: PairProductParams) -> float:
    """ln psi = sum_{i<j} T2(r_ij) for one configuration (positions (n_atoms, 3) in A)."""
    _, _, _, r = _pairs(positions)
    return float(np.sum(t2(r, params)))


def grad_lap_ln_psi(positions, params: PairProductParams) -> tuple[np.ndarray, np.ndarray]:
    """Per-atom gradient and Laplacian of ln psi for one configuration.

    grad_i ln psi = sum_{j != i} T2'(r_ij) (r_i - r_j) / r_ij,
    lap_i ln psi  = sum_{j != i} [T2''(r_ij) + 2 T2'(r_ij) / r_ij].

    Parameters
    ----------
    positions : array (n_atoms, 3)
        Atom positions in angstrom.
    params : PairProductParams

    Returns
    -------
    grad : ndarray (n_atoms, 3), 1/A
    lap : ndarray (n_atoms,), 1/A^2
    """
    i, j, diff, r = _pairs(positions)
    n = np.asarray(positions).shape[0]
    d1 = np.asarray(dt2(r, params))
    g = (d1 / r)[:, None] * diff
    grad = np.zeros((n, 3))
    np.add.at(grad, i, g)
    np.add.at(grad, j, -g)
    term = np.asarray(pair_laplacian_term(r, params))
    lap = np.zeros(n)
    np.add.at(lap, i, term)
    np.add.at(lap, j, term)
    return grad, lap


def local_energy_pair_sum(positions, params: PairProductParams, potential="SAPT2",
                          hbar2_2m: float = HBAR2_2M) -> tuple[float, float]:
    """Kinetic and potential local energy of one configuration (reference implementation).

    E_kin = -hbar2_2m sum_i [lap_i ln psi + |grad_i ln psi|^2]   (HAQMC Eq. 8 applied to
    the pair-product psi of Eq. 11), E_pot = sum_{i<j} V(r_ij) (Eq. 9).

    Parameters
    ----------
    positions : array (n_atoms, 3)
        Atom positions in angstrom, n_atoms >= 2, no two coinciding.
    params : PairProductParams
        Trial-function parameters (r in angstrom).
    potential : str or callable
        Registered potential name (see ``POTENTIALS``) or V(r_angstrom) -> K.
    hbar2_2m : float
        hbar^2 / (2 m) in K A^2 (default: CODATA 2022 4He value 6.0596481).

    Returns
    -------
    (E_kin, E_pot) : tuple of float, kelvin
    """
    pot = resolve_potential(potential)
    _, _, _, r = _pairs(positions)
    grad, lap = grad_lap_ln_psi(positions, params)
    e_kin = -hbar2_2m * float(np.sum(lap) + np.sum(grad * grad))
    e_pot = float(np.sum(pot(r)))
    return e_kin, e_pot
