"""A fixed-point form of ``erfcx(x)`` and ``erfc(x)`` for the Ewald kernels, built from the
generic kernel operations (``recip``, ``mul``, ``add``, ``exp``).

The real-space term of seed 000's Eq. 3/5 is ``erfc(gamma r) / r`` for ``r`` below the
real-space cut-off, i.e. ``x = gamma r`` in ``[0, X_MAX]``.  It is written as

    erfc(x) = exp(-x**2) h(x),      h = erfcx, the scaled complementary error function,
    t = 1 / (1 + P x)               in [t_min, 1], t_min = 1 / (1 + P x_max)
    u = T_A t + T_B                 in [-1, 1]
    h ~= c_0 + u (c_1 + u (... + u c_D))   (Horner)

(the substitution ``t`` of Abramowitz & Stegun 7.1.26, here with a polynomial of degree
``D`` fitted as the Chebyshev interpolant of ``erfcx`` at 256 nodes in ``u``, truncated and
rewritten in powers of ``u``).  ``h`` is smooth and slowly varying on the interval (from 1
at x = 0 to 0.08 at x = 7); the coefficients fall fast (c_0 = 0.27, |c_15| = 1.3e-9) and
their absolute values sum to 1.00001 (``h(u=1) = erfcx(0) = 1``), so every Horner partial
sum lies in [-1.00001, 1.00001]: a good fixed-point citizen.  ``exp(-x**2)`` is the kernel
exponential of ``-gamma**2 s`` with ``s = r**2`` (no square root needed for it), evaluated
in fixed point by the LUT exponential.

Two forms (:class:`ErfcxForm`): :data:`REAL_FORM` (``x_max = 7``, degree 15) for the
real-space sums, and :data:`WIDE_FORM` (``x_max = 12``, degree 18) for the reciprocal
factor of charges off a 2D plane (:mod:`~fixedqmc.systems.periodic.slab_kernels`), whose
arguments ``G / 2 gamma + gamma |z|`` reach further.  The module constants (``P``,
``X_MAX``, ``COEFFICIENTS``, ...) are those of :data:`REAL_FORM`.

Error: the relative error of the polynomial against ``scipy.special.erfcx`` is at most
``rel_bound`` on [0, x_max] (measured on 400001 points: 5.2e-14 for the real form, 8.3e-14
for the wide one; the bound 1e-13 has a margin and is tested).  The same form runs at every
precision, so a float64 kernel differs from the float64 reference (which uses
``scipy.special``) by at most this relative error per term.  Fixed point adds the rounding
of each operation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit
from numpy.polynomial import chebyshev as C
from scipy.special import erfcx

from fixedqmc.numerics.kernel import add, const, mul
from fixedqmc.numerics.kernel_ops import recip


@dataclass(frozen=True)
class ErfcxForm:
    """The polynomial form of ``erfcx`` on ``[0, x_max]`` (module docstring): ``t = 1 / (1
    + p x)``, ``u = t_a t + t_b``, Horner in ``u`` with ``coefficients`` c_0 .. c_D."""

    x_max: float
    degree: int
    p: float = 0.25
    rel_bound: float = 1e-13
    coefficients: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        n = 256
        un = np.cos(np.pi * (np.arange(n) + 0.5) / n)
        t = self.t_min + (1.0 - self.t_min) * (un + 1.0) / 2.0
        cheb = C.chebfit(un, erfcx((1.0 - t) / (self.p * t)), n - 1)
        c = np.ascontiguousarray(C.cheb2poly(cheb[:self.degree + 1]), dtype=np.float64)
        c.setflags(write=False)
        object.__setattr__(self, "coefficients", c)

    @property
    def t_min(self) -> float:
        return 1.0 / (1.0 + self.p * self.x_max)

    @property
    def t_a(self) -> float:
        return 2.0 / (1.0 - self.t_min)

    @property
    def t_b(self) -> float:
        return -(1.0 + self.t_min) / (1.0 - self.t_min)

    def erfcx(self, x) -> np.ndarray:
        """The polynomial form of ``erfcx(x)`` (float64, x in [0, x_max])."""
        u = self.t_a / (1.0 + self.p * np.asarray(x, np.float64)) + self.t_b
        h = np.full_like(u, self.coefficients[-1])
        for c in self.coefficients[-2::-1]:
            h = h * u + c
        return h


#: The variables of :func:`make_erfcx` in its order (a kernel's table holds them in a row).
ERFCX_VARIABLES = (
    ("p", "P of t = 1 / (1 + P x)"),
    ("px", "P x"),
    ("one", "1"),
    ("den", "1 + P x"),
    ("t", "1 / (1 + P x)"),
    ("ta", "T_A"),
    ("tat", "T_A t"),
    ("tb", "T_B"),
    ("u", "T_A t + T_B, [-1, 1]"),
    ("coef", "a coefficient c_k of the erfcx polynomial"),
    ("hu", "h u (a Horner product)"),
    ("h", "a Horner partial sum; at the end erfcx(x)"),
)

#: The form of the real-space sums, x = gamma r in [0, 7].
REAL_FORM = ErfcxForm(7.0, 15)
#: The form of the slab's reciprocal factor, arguments in [0, 12] (clamped there).
WIDE_FORM = ErfcxForm(12.0, 18)

#: The substitution t = 1 / (1 + P x) (of :data:`REAL_FORM`, as the constants below).
P = REAL_FORM.p
#: The largest argument the form covers (gamma times the real-space cut-off).
X_MAX = REAL_FORM.x_max
#: Degree of the polynomial in u.
DEGREE = REAL_FORM.degree
#: Bound on |h(x) / erfcx(x) - 1| for x in [0, X_MAX].
ERFCX_REL_BOUND = REAL_FORM.rel_bound
T_MIN, T_A, T_B = REAL_FORM.t_min, REAL_FORM.t_a, REAL_FORM.t_b
#: c_0 .. c_D, the coefficients of h in powers of u (float64).
COEFFICIENTS = REAL_FORM.coefficients


def erfcx_form(x) -> np.ndarray:
    """The polynomial form of ``erfcx(x)`` (float64, x in [0, X_MAX])."""
    return REAL_FORM.erfcx(x)


def erfc_form(x) -> np.ndarray:
    """``exp(-x**2) erfcx_form(x)`` (float64, x in [0, X_MAX])."""
    x = np.asarray(x, np.float64)
    return np.exp(-x * x) * erfcx_form(x)


def make_erfcx(n_coef: int, PP, PX, ONE, DEN, T, TA, TAT, TB, U, COEF, HU, H):
    """The kernel operation ``erfcx(e, x, p, one, ta, tb, coef)``: the form of a
    :class:`ErfcxForm` with ``n_coef`` coefficients at a kernel value ``x`` in [0, x_max]
    (any variable), the form's constants ``p``, ``1``, ``t_a``, ``t_b`` and ``coef`` (floats,
    rounded once into their variables as they are used): ``den = one + p x``, ``t =
    recip(den)``, ``u = ta t + tb``, then Horner from ``c_D`` (products ``hu``, sums ``h``).
    The arguments after ``n_coef`` are the kernel's variable ids (closure constants, as the
    operations need compile-time ids); the Horner loop has a constant count, so it unrolls
    and loops over terms vectorise in float contexts."""
    @njit(inline="always")
    def erfcx_op(e, x, p, one, ta, tb, coef):
        den = add(e, const(e, one, ONE), mul(e, const(e, p, PP), x, PX), DEN)
        t = recip(e, den, T)
        u = add(e, mul(e, const(e, ta, TA), t, TAT), const(e, tb, TB), U)
        h = const(e, coef[n_coef - 1], H)
        for k in range(n_coef - 2, -1, -1):
            h = add(e, mul(e, h, u, HU), const(e, coef[k], COEF), H)
        return h
    return erfcx_op
