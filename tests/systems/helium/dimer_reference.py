"""Independent He2 reference values: exact bound state and variational energy by quadrature.

Units: r in angstrom (A), energies in kelvin (K), hbar2_2m = hbar^2 / (2 m_4He) in K A^2
(default :data:`~fixedqmc.systems.helium.constants.HBAR2_2M`, CODATA 2022, 6.0596481).

Two atoms of mass m interact through V(r).  In the relative coordinate the reduced mass is
mu = m / 2, so hbar^2 / (2 mu) = 2 hbar2_2m.

Exact ground state (:func:`dimer_ground_state`)
-----------------------------------------------
With psi(r) = u(r) / r and l = 0 the radial equation is

    -2 hbar2_2m u''(r) + V(r) u(r) = E u(r),     u(r_min) = u(r_max) = 0.

It is discretised with the three-point second difference on the uniform grid
r_i = r_min + i h (i = 0 .. n, h = (r_max - r_min) / n):

    (2 hbar2_2m / h^2) (2 u_i - u_{i-1} - u_{i+1}) + V(r_i) u_i = E u_i,   i = 1 .. n-1,

a symmetric tridiagonal eigenproblem whose lowest eigenvalue is found with
``scipy.linalg.eigh_tridiagonal``.  The error is O(h^2), so by default the problem is also
solved on the grid of spacing 2 h and every scalar result is Richardson-extrapolated,
X = (4 X_h - X_2h) / 3, leaving an O(h^4) error.  Measured (SAPT2, 6.0596481 K A^2,
[1, 1000] A): with the default h = 0.02 A the plain fine-grid energy is 0.39 % too low and
the extrapolated one is within 1.7e-5 relative of the h -> 0 limit -1.8219569 mK (halving
h changes it by 1.6e-5, the next halving by 9e-7: O(h^4)).  The hard wall at r_max raises
E by a relative amount of order exp(-2 kappa r_max), kappa = sqrt(-E / (2 hbar2_2m)), so
r_max must exceed 7 / kappa (checked).  He2 is very weakly bound (1/kappa = 82 A with
SAPT2), hence r_max = 1000 A; doubling it changes E by < 1e-7 relative.

Variational energy of the pair-product trial function (:func:`dimer_vmc_energy`)
---------------------------------------------------------------------------------
For psi = exp(T2(r)) (:mod:`fixedqmc.systems.helium.trial`) the local energy of the two
atoms is

    E_L(r) = V(r) - 2 hbar2_2m [T2''(r) + 2 T2'(r) / r + T2'(r)^2]

(:func:`~fixedqmc.systems.helium.trial.dimer_local_energy`), and VMC averages are radial
integrals over the pair density rho(r) = psi(r)^2 r^2:

    <f> = int_0^inf rho(r) f(r) dr / int_0^inf rho(r) dr          (:func:`pair_density_average`)
    E_VMC = <E_L>,   <V>,   T = E_VMC - <V>,   var(E_L) = <(E_L - E_VMC)^2>.

By Green's theorem T also equals 2 hbar2_2m <T2'^2> (the tests check this).  rho is
evaluated as exp(2 T2 + 2 ln r - max) so that no overflow or underflow occurs; the
integration range is where ln rho is within 80 of its maximum (rho / rho_max > 1.8e-35;
for the default parameters 1.25 .. 4170 A, where |E_L| < 3e5 K).  Two quadratures are
available: ``method="gauss"`` (composite 20-point Gauss-Legendre on 400 geometrically
growing panels; default, ~0.05 s) and ``method="quad"`` (adaptive ``scipy.integrate.quad``
on 20 pieces, epsrel 1e-12, ~1.5 s).  For the default parameters they agree to 6e-10
relative in E and 1e-11 in <V>, var(E_L), <r>.  That is the rounding floor: E_L is a
difference of terms of ~1e3 K near the core, and E = -1.6 mK is itself a 1.4 % remainder
of <V> and the kinetic energy (changing the panels or order moves E by ~5e-10 relative).

Measured with SAPT2 and hbar2_2m = 6.0596481 K A^2 (defaults):

=================================  ==============  ==================================
quantity                           exact (FD)      VMC, DEFAULT_PAIR_PARAMS
=================================  ==============  ==================================
E (mK)                             -1.82196        -1.56488
<V> (K)                            -0.119818       -0.111192
kinetic (K)                        0.117996        0.109627
<r> (A)                            44.552          50.418
<r^2> (A^2)                        3649.7          4922.3
var(E_L) (K^2)                     --              0.14016
=================================  ==============  ==================================

With hbar2_2m = 6.06 K A^2 the exact energy is -1.8151 mK, with 6.0596 K A^2 -1.8229 mK.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.integrate import quad
from scipy.linalg import eigh_tridiagonal

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.helium.constants import HBAR2_2M
from fixedqmc.systems.helium.trial import (
    DEFAULT_PAIR_PARAMS,
    resolve_potential,
    PairProductParams,
    dimer_local_energy,
    t2,
)

__all__ = [
    "DimerState",
    "DimerVMC",
    "dimer_ground_state",
    "dimer_vmc_energy",
    "pair_density_average",
]

#: Default grid of :func:`dimer_ground_state`: [1, 1000] A in 50 000 intervals (h ~ 0.02 A).
GROUND_STATE_R_MIN = 1.0
GROUND_STATE_R_MAX = 1000.0
GROUND_STATE_N = 50_000

#: The wall at r_max must be at least this many decay lengths 1/kappa out.
MIN_KAPPA_R_MAX = 7.0

#: Integration range of the pair density: where ln rho > max(ln rho) - LOG_DENSITY_CUT.
LOG_DENSITY_CUT = 80.0
GAUSS_ORDER = 20
GAUSS_PANELS = 400
QUAD_PIECES = 20
QUAD_EPSREL = 1e-12
QUAD_METHODS = ("gauss", "quad")


# ---------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------


def _positive(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise FixedQMCError(f"{name} must be a positive number, got {value!r}") from None
    if not (math.isfinite(v) and v > 0.0):
        raise FixedQMCError(f"{name} must be finite and > 0, got {value!r}")
    return v


def _potential_on(pot: Callable, r: np.ndarray) -> np.ndarray:
    v = np.asarray(pot(r), dtype=np.float64)
    if v.shape != r.shape or not np.all(np.isfinite(v)):
        bad = np.flatnonzero(~np.isfinite(v)) if v.shape == r.shape else []
        where = f"; first non-finite at r = {r[bad[0]]:g} A" if len(bad) else ""
        raise FixedQMCError(
            f"potential must map an array of r (angstrom) to finite kelvin of the same shape "
            f"(got shape {v.shape} for {r.shape}{where})"
        )
    return v


# ---------------------------------------------------------------------------------------
# Exact ground state
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DimerState:
    """He2 l = 0 ground state from :func:`dimer_ground_state`.

    Attributes
    ----------
    energy : float
        Ground-state energy E in K (Richardson-extrapolated unless ``extrapolate=False``).
    energy_grid : float
        Plain finite-difference eigenvalue on the fine grid, K (error O(h^2), below E).
    r : ndarray (n + 1,)
        Grid r_min .. r_max in A, spacing h.
    u : ndarray (n + 1,)
        Radial function u(r) = r R(r) on the fine grid in A^-1/2: u >= 0 (sign fixed so that
        its maximum is positive), u(r_min) = u(r_max) = 0, h sum u_i^2 = 1.  Not
        extrapolated: moments computed from it carry the O(h^2) error (0.18 % for <r> with
        the default grid), unlike :attr:`mean_r` etc.
    mean_r : float
        <r> = int u^2 r dr, A.
    mean_r2 : float
        <r^2>, A^2.
    potential_energy : float
        <V> = int u^2 V dr, K.
    kinetic_energy : float
        E - <V>, K.
    hbar2_2m : float
        hbar^2 / (2 m) used, K A^2.
    """

    energy: float
    energy_grid: float
    r: np.ndarray
    u: np.ndarray
    mean_r: float
    mean_r2: float
    potential_energy: float
    kinetic_energy: float
    hbar2_2m: float


def _fd_ground_state(r: np.ndarray, v: np.ndarray, hbar2_2m: float):
    """Lowest eigenpair of the FD radial equation on grid r (Dirichlet at both ends).

    Returns (E, u, <V>, <r>, <r^2>) with u on all of r, normalised so that h sum u^2 = 1.
    """
    h = r[1] - r[0]
    c = 2.0 * hbar2_2m / h**2
    inner = v[1:-1]
    w, vec = eigh_tridiagonal(
        2.0 * c + inner, np.full(inner.size - 1, -c), select="i", select_range=(0, 0)
    )
    u = np.zeros_like(r)
    u[1:-1] = vec[:, 0]
    if u[np.argmax(np.abs(u))] < 0.0:
        u = -u
    u /= math.sqrt(h * float(np.dot(u, u)))
    p = h * u * u  # trapezoid weights (u = 0 at both ends)
    return float(w[0]), u, float(p @ v), float(p @ r), float(p @ (r * r))


def dimer_ground_state(
    potential="SAPT2",
    *,
    hbar2_2m: float = HBAR2_2M,
    r_min: float = GROUND_STATE_R_MIN,
    r_max: float = GROUND_STATE_R_MAX,
    n: int = GROUND_STATE_N,
    extrapolate: bool = True,
) -> DimerState:
    """Exact He2 bound state (l = 0) by a finite-difference radial solve.

    Solves -2 hbar2_2m u'' + V u = E u on [r_min, r_max] with u = 0 at both ends (see the
    module docstring for the discretisation and the Richardson extrapolation).

    Parameters
    ----------
    potential : str or callable
        Registered potential name (``get_potential``) or V(r) taking a float64 array of r
        in angstrom and returning kelvin of the same shape.
    hbar2_2m : float
        hbar^2 / (2 m_atom) in K A^2 (the solver uses 2 hbar2_2m, the reduced mass m/2).
    r_min, r_max : float
        Grid ends in A, 0 <= r_min < r_max.  u(r_min) = 0 replaces the repulsive core, so
        V(r_min) must be large (SAPT2: V(1 A) = 4.6e4 K).  r_max must exceed 7 / kappa.
    n : int
        Number of grid intervals of the fine grid, even, >= 100 (spacing h = (r_max -
        r_min) / n).  Default 50 000 (h = 0.02 A).
    extrapolate : bool
        Also solve on the 2h grid and Richardson-extrapolate E, <V>, <r>, <r^2> (default).

    Returns
    -------
    DimerState
        Energy (K), grid and u, <r> (A), <r^2> (A^2), <V> and kinetic energy (K).

    Raises
    ------
    FixedQMCError (a ValueError)
        Bad arguments; a potential that is not finite on the grid; no bound state (E >= 0);
        r_max < 7 / kappa (the message gives the r_max needed).
    """
    pot = resolve_potential(potential)
    hbar2_2m = _positive("hbar2_2m", hbar2_2m)
    r_max = _positive("r_max", r_max)
    try:
        r_min = float(r_min)
    except (TypeError, ValueError):
        raise FixedQMCError(f"r_min must be a number >= 0 angstrom, got {r_min!r}") from None
    if not (math.isfinite(r_min) and 0.0 <= r_min < r_max):
        raise FixedQMCError(
            f"need 0 <= r_min < r_max (angstrom), got r_min={r_min!r}, r_max={r_max!r}"
        )
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 100 or n % 2:
        raise FixedQMCError(f"n (grid intervals) must be an even integer >= 100, got {n!r}")
    n = int(n)
    r = np.linspace(r_min, r_max, n + 1)
    v = _potential_on(pot, r)
    e, u, pot_e, mr, mr2 = _fd_ground_state(r, v, hbar2_2m)
    e_grid = e
    if extrapolate:
        e2, _, pot2, mr_2, mr2_2 = _fd_ground_state(r[::2], v[::2], hbar2_2m)
        e, pot_e, mr, mr2 = (
            (4.0 * a - b) / 3.0 for a, b in ((e, e2), (pot_e, pot2), (mr, mr_2), (mr2, mr2_2))
        )
    if not e < 0.0:
        raise FixedQMCError(
            f"no bound state on [{r_min:g}, {r_max:g}] A: lowest level E = {e:.6g} K >= 0 "
            f"(potential too weak for hbar2_2m = {hbar2_2m:g} K A^2, or r_max too small)"
        )
    kappa = math.sqrt(-e / (2.0 * hbar2_2m))
    if kappa * r_max < MIN_KAPPA_R_MAX:
        raise FixedQMCError(
            f"r_max = {r_max:g} A is too small for a state with decay length 1/kappa = "
            f"{1.0 / kappa:.4g} A (E = {e:.6g} K); need r_max >= {MIN_KAPPA_R_MAX:g}/kappa = "
            f"{MIN_KAPPA_R_MAX / kappa:.4g} A"
        )
    r.setflags(write=False)
    u.setflags(write=False)
    return DimerState(e, e_grid, r, u, mr, mr2, pot_e, e - pot_e, hbar2_2m)


# ---------------------------------------------------------------------------------------
# Variational energy of the pair-product trial function
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DimerVMC:
    """Variational He2 averages of psi = exp(T2(r)) from :func:`dimer_vmc_energy`.

    Attributes
    ----------
    energy : float
        E_VMC = <E_L>, K.
    potential_energy : float
        <V>, K.
    kinetic_energy : float
        E_VMC - <V>, K.
    variance : float
        var(E_L) = <(E_L - E_VMC)^2>, K^2: the per-sample variance of a VMC run sampling
        psi^2 exactly (so a run of n independent samples has error sqrt(variance / n)).
    mean_r : float
        <r>, A.
    mean_r2 : float
        <r^2>, A^2.
    r_min, r_max : float
        Integration range used, A.
    hbar2_2m : float
        hbar^2 / (2 m) used, K A^2.
    """

    energy: float
    potential_energy: float
    kinetic_energy: float
    variance: float
    mean_r: float
    mean_r2: float
    r_min: float
    r_max: float
    hbar2_2m: float


def _log_density(r, params: PairProductParams) -> np.ndarray:
    """ln(psi^2 r^2) = 2 T2(r) + 2 ln r (unnormalised)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return 2.0 * np.asarray(t2(r, params)) + 2.0 * np.log(r)


def _density_range(params: PairProductParams, r_min, r_max) -> tuple[float, float, float]:
    """(r_lo, r_hi, ln rho_max): where ln rho is within LOG_DENSITY_CUT of its maximum.

    Explicit r_min / r_max replace the automatic ends.  Scans 1e-6 .. 1e9 A on a
    logarithmic grid; r_lo = 0 if the density is not negligible at 1e-6 A.
    """
    scan = np.geomspace(1e-6, 1e9, 30001)
    lo_bound = 0.0 if r_min is None else float(r_min)
    hi_bound = math.inf if r_max is None else float(r_max)
    inside = (scan >= lo_bound) & (scan <= hi_bound)
    s = scan[inside]
    ld = _log_density(s, params)
    ld = np.where(np.isnan(ld), -np.inf, ld)
    if s.size < 2 or not np.isfinite(ld.max()):
        raise FixedQMCError(
            f"pair density psi^2 r^2 vanishes on the range r_min={r_min!r}, r_max={r_max!r} A"
        )
    peak = float(ld.max())
    keep = np.flatnonzero(ld > peak - LOG_DENSITY_CUT)
    i0, i1 = int(keep[0]), int(keep[-1])
    if r_max is None and i1 == s.size - 1:
        raise FixedQMCError(
            "pair density psi^2 r^2 decays too slowly: still within "
            f"e^{LOG_DENSITY_CUT:g} of its maximum at r = {s[-1]:g} A; pass r_max"
        )
    r_lo = float(r_min) if r_min is not None else (0.0 if i0 == 0 else float(s[i0 - 1]))
    r_hi = float(r_max) if r_max is not None else float(s[i1 + 1])
    return r_lo, r_hi, peak


def _panel_edges(r_lo: float, r_hi: float, n: int) -> np.ndarray:
    """n + 1 geometrically spaced panel edges on [r_lo, r_hi] (first panel [0, 1e-3] if r_lo = 0)."""
    if r_lo > 0.0:
        return np.geomspace(r_lo, r_hi, n + 1)
    return np.concatenate([[0.0], np.geomspace(min(1e-3, r_hi / 10.0), r_hi, n)])


def _gauss_nodes(r_lo: float, r_hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre nodes and weights on geometrically growing panels."""
    edges = _panel_edges(r_lo, r_hi, GAUSS_PANELS)
    x, w = np.polynomial.legendre.leggauss(GAUSS_ORDER)
    a, b = edges[:-1, None], edges[1:, None]
    nodes = 0.5 * (b - a) * x[None, :] + 0.5 * (a + b)
    weights = 0.5 * (b - a) * w[None, :]
    return nodes.ravel(), weights.ravel()


def _integrals(funcs, params, r_lo, r_hi, peak, method) -> list[float]:
    """int_{r_lo}^{r_hi} rho(r) f(r) dr for each f in funcs (rho = exp(ln rho - peak))."""

    def rho(r):
        return np.exp(_log_density(r, params) - peak)

    if method == "gauss":
        nodes, weights = _gauss_nodes(r_lo, r_hi)
        wr = weights * rho(nodes)
        return [float(wr @ np.asarray(f(nodes), dtype=np.float64)) for f in funcs]
    edges = _panel_edges(r_lo, r_hi, QUAD_PIECES)
    out = []
    for f in funcs:

        def integrand(r, f=f):
            return float(rho(r) * f(r))

        total = 0.0
        for a, b in itertools.pairwise(edges):
            total += quad(integrand, a, b, epsabs=0.0, epsrel=QUAD_EPSREL, limit=200)[0]
        out.append(total)
    return out


def _check_method(method) -> str:
    if method not in QUAD_METHODS:
        raise FixedQMCError(
            f"unknown quadrature method {method!r}; allowed: {', '.join(QUAD_METHODS)}"
        )
    return method


def _check_params(params, r_max) -> PairProductParams:
    if not isinstance(params, PairProductParams):
        raise FixedQMCError(f"params must be a PairProductParams, got {params!r}")
    if r_max is None:
        params.check_normalisable()
    return params


def _check_range(r_min, r_max) -> None:
    if r_min is not None:
        try:
            r = float(r_min)
        except (TypeError, ValueError):
            r = math.nan
        if not (math.isfinite(r) and r >= 0.0):
            raise FixedQMCError(f"r_min must be finite and >= 0 angstrom, got {r_min!r}")
    if r_max is not None:
        _positive("r_max", r_max)
    if r_min is not None and r_max is not None and not float(r_min) < float(r_max):
        raise FixedQMCError(f"need r_min < r_max, got r_min={r_min!r}, r_max={r_max!r}")


def pair_density_average(
    func: Callable,
    params: PairProductParams = DEFAULT_PAIR_PARAMS,
    *,
    r_min: float | None = None,
    r_max: float | None = None,
    method: str = "gauss",
) -> float:
    """<f> = int rho f dr / int rho dr over the He2 pair density rho = exp(2 T2(r)) r^2.

    Parameters
    ----------
    func : callable
        f(r), vectorised over a float64 array of r in A (``method="quad"`` also calls it
        with scalars).
    params : PairProductParams
        Trial-function parameters; must be normalisable unless r_max is given.
    r_min, r_max : float or None
        Integration range in A; None (default) = where rho > 1.8e-35 rho_max.
    method : {"gauss", "quad"}
        Composite Gauss-Legendre (default) or adaptive ``scipy.integrate.quad``.

    Returns
    -------
    float, in the units of f.
    """
    _check_method(method)
    _check_range(r_min, r_max)
    _check_params(params, r_max)
    r_lo, r_hi, peak = _density_range(params, r_min, r_max)
    norm, total = _integrals([np.ones_like, func], params, r_lo, r_hi, peak, method)
    return total / norm


def dimer_vmc_energy(
    params: PairProductParams = DEFAULT_PAIR_PARAMS,
    potential="SAPT2",
    *,
    hbar2_2m: float = HBAR2_2M,
    r_min: float | None = None,
    r_max: float | None = None,
    method: str = "gauss",
) -> DimerVMC:
    """Variational energy of He2 for psi = exp(T2(r)) by radial quadrature.

    E_VMC = int psi^2 E_L r^2 dr / int psi^2 r^2 dr with
    E_L = V - 2 hbar2_2m (T2'' + 2 T2'/r + T2'^2); see the module docstring.

    Parameters
    ----------
    params : PairProductParams
        Trial-function parameters (default :data:`DEFAULT_PAIR_PARAMS`).  Must be
        normalisable at both ends unless r_max is given (then the pair is in a sphere of
        radius r_max with psi not forced to vanish at the wall: a plain truncated average).
    potential : str or callable
        Registered potential name or V(r_angstrom) -> K.
    hbar2_2m : float
        hbar^2 / (2 m_atom) in K A^2.
    r_min, r_max : float or None
        Integration range in A; None = automatic (rho > 1.8e-35 rho_max).
    method : {"gauss", "quad"}
        Quadrature: composite Gauss-Legendre (default) or adaptive ``scipy.integrate.quad``.

    Returns
    -------
    DimerVMC
        energy, potential_energy, kinetic_energy (K), variance of E_L (K^2), <r> (A),
        <r^2> (A^2), the range used and hbar2_2m.

    Raises
    ------
    FixedQMCError (a ValueError)
        Unknown method or potential, bad range or hbar2_2m, non-normalisable parameters.
    """
    _check_method(method)
    _check_range(r_min, r_max)
    hbar2_2m = _positive("hbar2_2m", hbar2_2m)
    _check_params(params, r_max)
    pot = resolve_potential(potential)
    r_lo, r_hi, peak = _density_range(params, r_min, r_max)

    def e_loc(r):
        return dimer_local_energy(r, params, pot, hbar2_2m)

    def v(r):
        return pot(np.asarray(r, dtype=np.float64))

    norm, i_e, i_v, i_r, i_r2 = _integrals(
        [np.ones_like, e_loc, v, lambda r: r, lambda r: r * r],
        params,
        r_lo,
        r_hi,
        peak,
        method,
    )
    energy = i_e / norm
    (i_var,) = _integrals([lambda r: (e_loc(r) - energy) ** 2], params, r_lo, r_hi, peak, method)
    pot_e = i_v / norm
    return DimerVMC(
        energy=energy,
        potential_energy=pot_e,
        kinetic_energy=energy - pot_e,
        variance=i_var / norm,
        mean_r=i_r / norm,
        mean_r2=i_r2 / norm,
        r_min=r_lo,
        r_max=r_hi,
        hbar2_2m=hbar2_2m,
    )
