"""He-He pair potentials V(r): r in angstrom, V in kelvin, float64, vectorised over r.

Built in (the registry :data:`POTENTIALS`):

``"SAPT2"``
    Janzen & Aziz, J. Chem. Phys. 107, 914 (1997); HAQMC Eq. 10.  Evaluated in bohr
    internally (r_bohr = r / :data:`~fixedqmc.systems.helium.constants.BOHR_ANGSTROM`).
    The dispersion coefficients are in hartree bohr^2n and are converted with
    E_h = 3.1576621e5 K (:data:`~fixedqmc.systems.helium.constants.HARTREE_K_SAPT2`), the
    value of the public SAPT2 codes with which the reference check values were computed,
    not the CODATA 2022 3.1577502480e5 K (pass ``hartree_k=HARTREE_K`` to :func:`sapt2` for
    that).  Beyond 100 bohr the retardation factor is held constant at its 100-bohr value
    (continuous, |V| < 1e-6 K there).
``"HFD-B"``
    HFD-B(HE), Aziz, McCourt & Wong, Mol. Phys. 61, 1487 (1987), r_m = 2.963 A.
``"HFDHE2"``
    Aziz et al., J. Chem. Phys. 70, 4330 (1979), same functional form as HFD-B.
``"LM2M2"``
    Aziz & Slaman, J. Chem. Phys. 94, 8047 (1991): the Aziz form plus a sine add-on term.

Users add their own with :func:`register_potential`; :func:`get_potential` looks a name up
(case-insensitively) and raises a ValueError listing the allowed names otherwise.

Each formula is written once
----------------------------
The formulas and their constants are written once, here, as numba
``@njit(cache=True, nogil=True, error_model="numpy")`` scalar functions of the squared
distance ``s = r**2`` (angstrom**2) whose arithmetic runs entirely in the floating type of
``s``: :func:`sapt2_parts` (and :func:`_sapt2_fret`) and :func:`aziz_s`.  A float32
``s`` gives float32 constants (rounded once from their float64 values by :func:`in_type`,
which LLVM folds at compile time), float32 operations and libm calls (``expf``, ...) and a float32
result; a float64 ``s`` the same in float64; other argument types (integers, float16) are a
typing error.  IEEE division (1/0 = inf), no exception path, no allocation: they are meant
for hot loops.  Two users:

* the numpy functions of r below (:func:`sapt2`, :func:`aziz`, :func:`hfd_b`, ...) evaluate
  them in float64 at ``s = r * r`` through compiled loops (for r > 0, ``sqrt(r * r) == r``
  exactly);
* the pair kernels call them in float32 or float64 through the compiled entry points of
  :mod:`fixedqmc.systems.helium.analytic` (``sapt2_s``, ``hfdb_s``, ...).

SAPT2 damping: f_2n(x) = P(2n+1, x) = 1 - exp(-x) sum_{k<=2n} x^k/k!, x = delta r, is
summed as that complement for x >= 6.5 (r >= 1.77 A).  Its cancellation costs an absolute
error of about one ulp of the *undamped* term E_h C_2n / r^2n, which for x >= 6.5 is at
most a few times |repulsion| + |dispersion| (measured: within 3e-15 of that sum).  For
x > 80, where exp(-x) S_2n(x) < 3e-18, x is clamped to 80 (so nothing overflows).
Below 6.5 it is summed as the tail exp(-x) sum_{k>2n} x^k/k!, without cancellation:

    f_m(delta r) / r^m = delta^m exp(-x) U_m(x),   U_m = sum_{k>m} x^(k-m)/k!,
    U_16 = (x / 17!) (1 + x/18 (1 + x/19 (...)))   (28 terms: float64 precision),
    U_(m-1) = x (1/m! + U_m),

with no division by r, so V(0) = A.  The exponent of the repulsions is clamped at -87
(float32) or -700 (float64), so that exp never underflows (slow; in float32 already from
r ~ 12 A on): the repulsion is then < 4e-32 K instead of smaller, far below an ulp of the
dispersion there.  Branches only for the pieces of the potentials and the short-range
SAPT2 series.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.helium.constants import BOHR_ANGSTROM, HARTREE_K_SAPT2

PotentialFunc = Callable[[np.ndarray], np.ndarray]

__all__ = [
    "HFDB_HE",
    "HFDHE2",
    "LM2M2",
    "POTENTIALS",
    "SAPT2_PARAMETERS",
    "AzizParameters",
    "aziz",
    "get_potential",
    "hfd_b",
    "hfdhe2",
    "lm2m2",
    "potential_names",
    "register_potential",
    "sapt2",
    "sapt2_fret",
    "unregister_potential",
]


# ---------------------------------------------------------------------------------------
# Compiled code: a constant in the floating type of s; float64 arrays of s = r**2
# ---------------------------------------------------------------------------------------


def in_type(s, value):
    """``value`` as a number of s's floating type (in compiled code: a constant of it)."""
    return type(s)(value)


@overload(in_type)
def _in_type_overload(s, value):
    if isinstance(s, types.Float) and s.bitwidth in (32, 64):
        ty = s
        return lambda s, value: ty(value)
    raise TypingError(f"analytic pair functions take float32 or float64 s, got {s}")


_c = in_type  # short name inside the formulas


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


def _as_radii(r) -> np.ndarray:
    """r as a float64 array; raises for negative or non-finite entries (NaN is an error)."""
    arr = np.asarray(r, dtype=np.float64)
    if not np.all(arr >= 0.0):
        raise FixedQMCError("pair distances r must be >= 0 angstrom (and not NaN)")
    return arr


def evaluate_on_squares(loop, x: np.ndarray, *args, square: bool = True) -> np.ndarray:
    """``loop(flat, *args, out)`` over s = x**2 (or x), a float64 array of x's shape.

    s is at most the largest float64 (x > 1.3e154 would give s = inf, and 0 * inf = NaN in
    the formulas); what the functions give there is their large-r limit to ~1e-297."""
    if square:
        with np.errstate(over="ignore"):
            flat = np.minimum(np.square(x, order="C"), np.finfo(np.float64).max).reshape(-1)
    else:
        flat = np.array(x, order="C").reshape(-1)
    out = np.empty_like(flat)
    loop(flat, *args, out)
    return out.reshape(x.shape)


def _result(value: np.ndarray, r_in) -> np.ndarray | float:
    """Return a Python float for scalar input, an array of r's shape otherwise."""
    if np.ndim(r_in) == 0:
        return float(value)
    return value


# ---------------------------------------------------------------------------------------
# SAPT2 (Janzen & Aziz 1997), HAQMC Eq. 10
# ---------------------------------------------------------------------------------------

#: SAPT2 parameters (Janzen & Aziz 1997). A in K, alpha in 1/bohr, beta in 1/bohr^2,
#: delta in 1/bohr, C[2n] in hartree bohr^(2n).
SAPT2_PARAMETERS: dict[str, float] = {
    "A": 2.07436426e6,
    "alpha": 1.88648251,
    "beta": -6.20013490e-2,
    "delta": 1.94861295,
    "C6": 1.4609778,
    "C8": 14.117855,
    "C10": 183.69125,
    "C12": 3.265e3,
    "C14": 7.644e4,
    "C16": 2.275e6,
}

_FRET_R1, _FRET_R2, _FRET_RMAX = 5.7, 10.0, 100.0  # bohr: the pieces; fret constant beyond
_FRET_C0, _FRET_C1, _FRET_C2, _FRET_C3 = 0.9860029, 5.942027e-3, -7.924833e-4, 3.172548e-5
_FRET_P12, _FRET_P22, _FRET_P32, _FRET_P42, _FRET_P52 = (-1.62343e-3, 2.22097e-3,
                                                         -1.17323e-3, 3.00012e-4, -1.05512e-5)

_P = SAPT2_PARAMETERS
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


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _sapt2_fret(r):
    """SAPT2 retardation factor for r in bohr, in r's type (see :func:`sapt2_fret`).

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


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def sapt2_parts(s):
    """SAPT2 at squared distance s (A^2), in s's type: (repulsion, dispersion) in K, with
    V = repulsion - dispersion (HAQMC Eq. 10; E_h = HARTREE_K_SAPT2 in the dispersion)."""
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
    return rep, disp


@njit(cache=True, nogil=True, error_model="numpy")
def _sapt2_array(s, scale, out):
    """out[i] = repulsion - scale * dispersion at s[i] (float64; scale = 1: E_h of SAPT2)."""
    for i in range(s.size):
        rep, disp = sapt2_parts(s[i])
        out[i] = rep - scale * disp


@njit(cache=True, nogil=True, error_model="numpy")
def _fret_array(r, out):
    for i in range(r.size):
        out[i] = _sapt2_fret(r[i])


def sapt2_fret(r_bohr) -> np.ndarray | float:
    """SAPT2 retardation factor fret(r) multiplying the C6 term (dimensionless).

    Parameters
    ----------
    r_bohr : float or array
        Distance in **bohr**.

    Notes
    -----
    Exactly the piecewise form of Janzen & Aziz (1997):
    1 for r <= 5.7; 0.9860029 + 5.942027e-3 r - 7.924833e-4 r^2 + 3.172548e-5 r^3 for
    5.7 < r <= 10; 1 - p12 - p22 r^0.5 - p32 r - p42 r^1.5 - p52 r^2 for 10 < r <= 100
    (p12, ..., p52 = -1.62343e-3, 2.22097e-3, -1.17323e-3, 3.00012e-4, -1.05512e-5).
    For r > 100 bohr, where |V| < 1e-6 K, fret is held at its value at 100 bohr
    (0.9022367), which keeps V continuous.
    """
    out = evaluate_on_squares(_fret_array, np.asarray(r_bohr, dtype=np.float64), square=False)
    return _result(out, r_bohr)


def sapt2(r, *, hartree_k: float = HARTREE_K_SAPT2) -> np.ndarray | float:
    """SAPT2 He-He potential (Janzen & Aziz 1997; HAQMC Eq. 10).

    V(r) = A exp(-alpha r + beta r^2)
           - E_h [ f6(delta r) fret(r) C6 / r^6 + sum_{n=4..8} f_2n(delta r) C_2n / r^2n ]
    with r in bohr and Tang-Toennies damping f_2n(x) = 1 - exp(-x) sum_{k=0..2n} x^k / k!
    (one delta for all orders), evaluated without cancellation at small x (module
    docstring).

    Parameters
    ----------
    r : float or array of any shape
        Distance in **angstrom** (>= 0); converted to bohr internally with
        ``BOHR_ANGSTROM`` (CODATA 2022).
    hartree_k : float
        Kelvin per hartree used for the dispersion coefficients; default 3.1576621e5 K as
        in the public SAPT2 codes (the reference check values use it).  Another value
        scales the dispersion by ``hartree_k / HARTREE_K_SAPT2``.

    Returns
    -------
    float or ndarray of r's shape
        V in kelvin.  V(0) is the finite limit A (the damped dispersion terms vanish).
    """
    ra = _as_radii(r)
    scale = float(hartree_k) / HARTREE_K_SAPT2  # exactly 1.0 for the default
    return _result(evaluate_on_squares(_sapt2_array, ra, scale), r)


# ---------------------------------------------------------------------------------------
# Aziz (HFD) form: HFD-B(HE), HFDHE2, LM2M2
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AzizParameters:
    """Parameters of an Aziz (HFD-type) He-He potential; calling it evaluates V(r).

    V(r) = eps [ A exp(-alpha x + beta x^2) - F(x) (C6/x^6 + C8/x^8 + C10/x^10) ]
           + eps Aa ( sin(2 pi (x - x1)/(x2 - x1) - pi/2) + 1 )   for x1 < x < x2
    with x = r / r_m and F(x) = exp(-(D/x - 1)^2) for x < D, else 1.  The add-on term is
    LM2M2's (Aziz & Slaman 1991); it is absent when ``Aa == 0``.

    Attributes
    ----------
    eps : float
        Well depth eps/k in K.
    r_m : float
        Position of the minimum in angstrom.
    A, alpha, beta, D, C6, C8, C10 : float
        Reduced (dimensionless) parameters A*, alpha*, beta*, D, C6, C8, C10.
    Aa, x1, x2 : float
        Add-on amplitude (reduced) and its x range; ``Aa = 0`` disables it.
    name : str
        Label used in messages.
    """

    eps: float
    r_m: float
    A: float
    alpha: float
    beta: float
    D: float
    C6: float
    C8: float
    C10: float
    Aa: float = 0.0
    x1: float = 0.0
    x2: float = 0.0
    name: str = "aziz"

    def __post_init__(self) -> None:
        for field in ("eps", "r_m", "A", "alpha", "beta", "D", "C6", "C8", "C10", "Aa",
                      "x1", "x2"):
            value = getattr(self, field)
            if not math.isfinite(value):
                raise FixedQMCError(f"{self.name}: parameter {field} must be finite, got {value!r}")
        if self.r_m <= 0.0 or self.D <= 0.0:
            raise FixedQMCError(f"{self.name}: r_m and D must be > 0 (r_m={self.r_m}, D={self.D})")
        if self.Aa != 0.0 and not self.x2 > self.x1:
            raise FixedQMCError(
                f"{self.name}: add-on term needs x2 > x1 (x1={self.x1}, x2={self.x2})"
            )

    def __call__(self, r) -> np.ndarray | float:
        """V(r) in kelvin for r in angstrom (float or array); see :func:`aziz`."""
        return aziz(r, self)


def aziz_constants(p: AzizParameters) -> tuple:
    """The arguments after s of :func:`aziz_s` for ``p``, in r, s units (float64)."""
    addon = 2.0 * p.eps * p.Aa  # eps Aa (sin(theta - pi/2) + 1) = 2 eps Aa sin^2(theta/2)
    return tuple(float(c) for c in (
        p.eps * p.A, p.alpha / p.r_m, p.beta / p.r_m**2, p.D * p.r_m, p.r_m**2,
        p.eps * p.C6, p.eps * p.C8, p.eps * p.C10, addon, p.x1 * p.r_m, p.x2 * p.r_m,
        math.pi / (p.r_m * (p.x2 - p.x1)) if addon != 0.0 else 0.0))


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def aziz_s(s, eps_a, alpha_r, beta_s, d_r, rm2, e6, e8, e10, addon, r1, r2, w):
    """Aziz-form V in K at s (A^2), in s's type; the other arguments from
    :func:`aziz_constants` (float64; compile-time constants after inlining).

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
def _aziz_array(s, c, out):
    """out[i] = :func:`aziz_s` (s[i], *c), float64."""
    eps_a, alpha_r, beta_s, d_r, rm2, e6, e8, e10, addon, r1, r2, w = c
    for i in range(s.size):
        out[i] = aziz_s(s[i], eps_a, alpha_r, beta_s, d_r, rm2, e6, e8, e10, addon, r1, r2,
                         w)


def aziz(r, params: AzizParameters) -> np.ndarray | float:
    """Aziz-form He-He potential (HFD-B(HE), HFDHE2, LM2M2, ...).

    Parameters
    ----------
    r : float or array of any shape
        Distance in angstrom (>= 0).
    params : AzizParameters
        The potential's parameters (see the class for the formula).

    Returns
    -------
    float or ndarray of r's shape
        V in kelvin.  V(0) is the finite limit eps * A (F(x) kills the dispersion terms).
    """
    ra = _as_radii(r)
    return _result(evaluate_on_squares(_aziz_array, ra, aziz_constants(params)), r)


#: HFD-B(HE): Aziz, McCourt & Wong, Mol. Phys. 61, 1487 (1987).  r_m = 2.963 A (not the
#: HFDHE2 2.9673 A that some public codes use by mistake).
HFDB_HE = AzizParameters(
    eps=10.948, r_m=2.963, A=1.8443101e5, alpha=10.43329537, beta=-2.27965105, D=1.4826,
    C6=1.36745214, C8=0.42123807, C10=0.17473318, name="HFD-B",
)

#: HFDHE2: Aziz, Nain, Carley, Taylor & McConville, J. Chem. Phys. 70, 4330 (1979).
HFDHE2 = AzizParameters(
    eps=10.8, r_m=2.9673, A=0.5448504e6, alpha=13.353384, beta=0.0, D=1.241314,
    C6=1.3732412, C8=0.4253785, C10=0.1781, name="HFDHE2",
)

#: LM2M2: Aziz & Slaman, J. Chem. Phys. 94, 8047 (1991), with its add-on term.
LM2M2 = AzizParameters(
    eps=10.97, r_m=2.9695, A=1.89635353e5, alpha=10.70203539, beta=-1.90740649, D=1.4088,
    C6=1.34687065, C8=0.41308398, C10=0.17060159,
    Aa=0.0026, x1=1.003535949, x2=1.454790369, name="LM2M2",
)


def hfd_b(r) -> np.ndarray | float:
    """HFD-B(HE) potential (Aziz, McCourt & Wong 1987): r in angstrom -> V in K."""
    return aziz(r, HFDB_HE)


def hfdhe2(r) -> np.ndarray | float:
    """HFDHE2 potential (Aziz et al. 1979): r in angstrom -> V in K."""
    return aziz(r, HFDHE2)


def lm2m2(r) -> np.ndarray | float:
    """LM2M2 potential with add-on (Aziz & Slaman 1991): r in angstrom -> V in K."""
    return aziz(r, LM2M2)


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------

#: Registry: potential name -> callable V(r_angstrom) -> kelvin.  Add entries with
#: :func:`register_potential`, look them up with :func:`get_potential`.
POTENTIALS: dict[str, PotentialFunc] = {
    "SAPT2": sapt2,
    "HFD-B": hfd_b,
    "HFDHE2": hfdhe2,
    "LM2M2": lm2m2,
}

_ALIASES: dict[str, str] = {"hfd-b(he)": "HFD-B", "hfdb": "HFD-B", "hfd-b-he": "HFD-B"}


def potential_names() -> list[str]:
    """Names currently in :data:`POTENTIALS` (sorted)."""
    return sorted(POTENTIALS)


def _find_key(name: str) -> str | None:
    if name in POTENTIALS:
        return name
    folded = name.casefold()
    for key in POTENTIALS:
        if key.casefold() == folded:
            return key
    alias = _ALIASES.get(folded)
    if alias is not None and alias in POTENTIALS:
        return alias
    return None


def get_potential(name: str) -> PotentialFunc:
    """The registered potential ``name`` (case-insensitive; "HFD-B(HE)" = "HFD-B").

    Returns
    -------
    callable
        V(r) with r in angstrom (float or array) and V in kelvin.

    Raises
    ------
    FixedQMCError (a ValueError)
        If no potential of that name is registered; the message lists the allowed names.
    """
    key = _find_key(name) if isinstance(name, str) else None
    if key is None:
        allowed = ", ".join(potential_names())
        raise FixedQMCError(f"unknown He-He potential {name!r}; allowed: {allowed}")
    return POTENTIALS[key]


def register_potential(name: str, func: PotentialFunc, *, overwrite: bool = False) -> None:
    """Add a user pair potential to :data:`POTENTIALS`.

    Parameters
    ----------
    name : str
        Registry name (non-empty).  Names are matched case-insensitively, so a name that
        differs from an existing one only in case is a clash.
    func : callable
        V(r) taking r in **angstrom** as a float64 array of any shape and returning kelvin
        with the same shape (numpy-vectorised).  It is called once on a small test array
        to check that.
    overwrite : bool
        Replace an existing entry of the same name instead of raising.

    Raises
    ------
    FixedQMCError (a ValueError)
        Empty or non-string name, name taken (and ``overwrite`` false), func not callable,
        or func not returning finite values of the input's shape.
    """
    if not isinstance(name, str) or not name.strip():
        raise FixedQMCError(f"potential name must be a non-empty string, got {name!r}")
    if not callable(func):
        raise FixedQMCError(f"potential {name!r}: func must be callable, got {func!r}")
    existing = _find_key(name)
    if existing is not None and not overwrite:
        raise FixedQMCError(
            f"potential {name!r} clashes with registered {existing!r}; pass overwrite=True "
            "to replace it"
        )
    probe = np.array([2.5, 3.0, 5.0, 10.0])
    try:
        values = np.asarray(func(probe), dtype=np.float64)
    except Exception as exc:  # report any failure of the user function
        raise FixedQMCError(f"potential {name!r} failed on r = {probe.tolist()} A: {exc}") from exc
    if values.shape != probe.shape or not np.all(np.isfinite(values)):
        raise FixedQMCError(
            f"potential {name!r} must map an array of r (angstrom) to finite kelvin of the "
            f"same shape; got {values!r} for r = {probe.tolist()}"
        )
    if existing is not None and existing != name:
        del POTENTIALS[existing]
    POTENTIALS[name] = func


def unregister_potential(name: str) -> None:
    """Remove a registered potential (case-insensitive); ValueError if it is not there."""
    key = _find_key(name) if isinstance(name, str) else None
    if key is None:
        allowed = ", ".join(potential_names())
        raise FixedQMCError(f"unknown He-He potential {name!r}; allowed: {allowed}")
    del POTENTIALS[key]
