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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import gammainc

from fixedqmc.errors import FixedQMCError
from fixedqmc.systems.helium.constants import BOHR_ANGSTROM, HARTREE_K_SAPT2

PotentialFunc = Callable[[np.ndarray], np.ndarray]

__all__ = [
    "AzizParameters",
    "HFDB_HE",
    "HFDHE2",
    "LM2M2",
    "POTENTIALS",
    "SAPT2_PARAMETERS",
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


def _as_radii(r) -> np.ndarray:
    """r as a float64 array; raises for negative or non-finite entries (NaN is an error)."""
    arr = np.asarray(r, dtype=np.float64)
    if not np.all(arr >= 0.0):
        raise FixedQMCError("pair distances r must be >= 0 angstrom (and not NaN)")
    return arr


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

_FRET_CUBIC = (0.9860029, 5.942027e-3, -7.924833e-4, 3.172548e-5)
_FRET_P = (-1.62343e-3, 2.22097e-3, -1.17323e-3, 3.00012e-4, -1.05512e-5)  # p12..p52
_FRET_R_MAX = 100.0  # bohr; fret is held constant beyond this
_X_SMALL = 1e-6  # below this delta*r the damped dispersion terms use their x -> 0 limit


def _fret_long(r: np.ndarray) -> np.ndarray:
    p12, p22, p32, p42, p52 = _FRET_P
    s = np.sqrt(r)
    return 1.0 - p12 - p22 * s - p32 * r - p42 * r * s - p52 * r * r


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
    5.7 < r <= 10; 1 - p12 - p22 r^0.5 - p32 r - p42 r^1.5 - p52 r^2 for 10 < r <= 100.
    For r > 100 bohr, where |V| < 1e-6 K, fret is held at its value at 100 bohr
    (0.9022367), which keeps V continuous.
    """
    r = np.asarray(r_bohr, dtype=np.float64)
    c0, c1, c2, c3 = _FRET_CUBIC
    cubic = c0 + r * (c1 + r * (c2 + r * c3))
    rc = np.minimum(r, _FRET_R_MAX)
    out = np.where(r <= 5.7, 1.0, np.where(r <= 10.0, cubic, _fret_long(rc)))
    return _result(out, r_bohr)


def _tang_toennies(order: int, x: np.ndarray) -> np.ndarray:
    """Tang-Toennies damping f_order(x) = 1 - exp(-x) sum_{k=0..order} x^k / k!.

    Computed as the regularised lower incomplete gamma function P(order + 1, x), which is
    the same quantity without the cancellation of the direct formula at small x.
    """
    return gammainc(order + 1, x)


def sapt2(r, *, hartree_k: float = HARTREE_K_SAPT2) -> np.ndarray | float:
    """SAPT2 He-He potential (Janzen & Aziz 1997; HAQMC Eq. 10).

    V(r) = A exp(-alpha r + beta r^2)
           - E_h [ f6(delta r) fret(r) C6 / r^6 + sum_{n=4..8} f_2n(delta r) C_2n / r^2n ]
    with r in bohr and Tang-Toennies damping f_2n (one delta for all orders).

    Parameters
    ----------
    r : float or array of any shape
        Distance in **angstrom** (>= 0); converted to bohr internally with
        ``BOHR_ANGSTROM`` (CODATA 2022).
    hartree_k : float
        Kelvin per hartree used for the dispersion coefficients; default 3.1576621e5 K as
        in the public SAPT2 codes (the reference check values use it).

    Returns
    -------
    float or ndarray of r's shape
        V in kelvin.  V(0) is the finite limit A (the damped dispersion terms vanish).
    """
    ra = _as_radii(r)
    p = SAPT2_PARAMETERS
    rb = ra / BOHR_ANGSTROM
    delta = p["delta"]
    x = delta * rb
    tiny = x < _X_SMALL
    # f_2n(x) C_2n / r^2n -> C_2n delta^2n x / (2n+1)! as x -> 0 (relative error O(x));
    # the limit avoids 0 * inf for r -> 0.
    rs = np.where(tiny, 1.0, rb)
    inv2 = 1.0 / (rs * rs)
    fret = np.asarray(sapt2_fret(rb))
    disp = fret * np.where(
        tiny,
        p["C6"] * delta**6 * x / math.factorial(7),
        _tang_toennies(6, x) * p["C6"] * inv2**3,
    )
    for n in range(4, 9):
        c = p[f"C{2 * n}"]
        disp = disp + np.where(
            tiny,
            c * delta ** (2 * n) * x / math.factorial(2 * n + 1),
            _tang_toennies(2 * n, x) * c * inv2**n,
        )
    out = p["A"] * np.exp(-p["alpha"] * rb + p["beta"] * rb * rb) - hartree_k * disp
    return _result(out, r)


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
    p = params
    x = ra / p.r_m
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inv2 = 1.0 / (x * x)
        damp = np.where(x < p.D, np.exp(-((p.D / x - 1.0) ** 2)), 1.0)
        disp = damp * inv2**3 * (p.C6 + inv2 * (p.C8 + inv2 * p.C10))
        disp = np.where(damp > 0.0, disp, 0.0)
    out = p.eps * (p.A * np.exp(-p.alpha * x + p.beta * x * x) - disp)
    if p.Aa != 0.0:
        inside = (x > p.x1) & (x < p.x2)
        phase = 2.0 * np.pi * (x - p.x1) / (p.x2 - p.x1) - 0.5 * np.pi
        out = out + np.where(inside, p.eps * p.Aa * (np.sin(phase) + 1.0), 0.0)
    return _result(out, r)


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
    except Exception as exc:  # noqa: BLE001 - report any failure of the user function
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
