"""Rigorous bounds through the host's dense linear algebra: the inverse and ``ln|det|`` of
matrices known within elementwise bounds (the fresh inverse Slater matrices of seed 001,
Eq. 7, computed in float64 on the host from a kernel's orbital values).

Matrices are square, ``(..., n, n)`` batched over leading axes; inequalities between
matrices hold elementwise and ``|A|`` is the elementwise absolute value; ``u = 2**-53``,
``gamma_k = k u / (1 - k u)`` (Higham, *Accuracy and Stability of Numerical Algorithms*,
Lemma 3.1: a float64 dot product of ``k`` terms, in any order, with or without fused
multiply-adds, errs by at most ``gamma_k`` times the sum of the terms' magnitudes).  Three
facts (``||.||`` the infinity norm, ``colmax(G)`` the row of column maxima):

1. **A verified inverse** (Rump's residual check).  For an approximate inverse ``X`` of ``A``
   the exact ``R = I - X A`` satisfies ``|R| <= Rb = |fl(I - X A)| + gamma_{n+1} (I + |X|
   |A|)``.  If ``rho = ||Rb|| < 1``, ``A`` is invertible and ``A^-1 - X = sum_{k>=1} R^k X``,
   so ``|A^-1 - X| <= G + rho / (1 - rho) colmax(G)`` with ``G = Rb |X|`` (since
   ``(Rb^k G)_ij <= ||Rb||^k max_l G_lj``).
2. **A perturbed inverse.**  For ``|Delta| <= D``, ``Z >= |A^-1|``, ``P = Z D`` and ``q =
   ||P|| < 1``: ``(A + Delta)^-1 - A^-1 = sum_{k>=1} (-A^-1 Delta)^k A^-1``, so its
   magnitude is at most ``G + q / (1 - q) colmax(G)`` with ``G = P Z``; and ``|ln|det(A +
   Delta)| - ln|det A|| = |sum_i ln|1 + lambda_i|| <= -n ln(1 - q)`` (the eigenvalues of
   ``A^-1 Delta`` have ``|lambda_i| <= q``).
3. **ln|det| from an LU factorisation** (:func:`scipy.linalg.lu`, partial pivoting): the
   computed factors satisfy ``L U = P A + Delta`` with ``|Delta| <= |fl(L U - P A)| +
   gamma_{n+1} (|L| |U| + |P A|)`` (``P`` its row permutation), so ``ln|det A|`` is
   ``sum_i ln|U_ii|`` (``det L = 1``) to within the sum's own rounding plus fact 2's ``-n
   ln(1 - q)``.

Infinite bounds mark where a condition fails (``rho`` or ``q`` not below 1: the matrix may
be singular within its bounds).  Every bound (and every intermediate one) is computed in
float64 and widened to cover its own rounding (:func:`widen`: inflated by ``1 + 2**-40``,
``gamma_{6n+20} < 2**-40`` for ``n <=`` :data:`MAX_N`, and raised by half a subnormal step
per product that may underflow); the dot products bounded by ``gamma`` terms get the same
underflow term.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from fixedqmc.errors import FixedQMCError

_U = 2.0 ** -53
#: the inflation of a bound computed in float64 (covers its own rounding)
INFLATE = 1.0 + 2.0 ** -40
#: the largest matrix order whose bounds' own rounding the inflation covers
MAX_N = 1000


def gamma(k: int) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)``, ``u = 2**-53``."""
    return k * _U / (1.0 - k * _U)


def _finite_or_inf(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), np.inf, x)


def widen(x, n: int) -> np.ndarray:
    """A non-negative ``x`` computed in float64 from sums of at most ``n`` products per
    element, raised to an upper bound of its exact value: inflated for the roundings and
    raised by ``n 2**-1074`` (each product that underflows loses at most half a subnormal
    step); not a number: inf."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _finite_or_inf(np.asarray(x, np.float64) * INFLATE + n * 2.0 ** -1074)


def _check(A: np.ndarray) -> int:
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise FixedQMCError(f"bounds of an inverse need square matrices (..., n, n), got "
                            f"shape {A.shape}")
    if A.shape[-1] > MAX_N:
        raise FixedQMCError(f"matrices of order {A.shape[-1]} exceed {MAX_N}, the largest "
                            "whose bounds' own rounding is covered")
    return A.shape[-1]


def _series(P: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(S, q)``: ``S >= sum_{k>=1} P^k Z`` for non-negative ``P``, ``Z`` with ``q =
    ||P|| < 1`` (``G + q / (1 - q) colmax(G)``, ``G = P Z``), inf where ``q`` is not."""
    n = P.shape[-1]
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0: inf (not a number)
        q = widen(P.sum(axis=-1).max(axis=-1), 0)
        ok = q < 1.0
        G = widen(P @ Z, n)
        f = np.where(ok, q / np.where(ok, 1.0 - q, 1.0), np.inf)[..., None, None]
        S = widen(G + f * G.max(axis=-2, keepdims=True), 1)
    return np.where(ok[..., None, None], S, np.inf), q


def inverse_enclosure(A: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(E, Z)``: ``E >= |A^-1 - X|`` for an approximate inverse ``X`` of ``A`` and ``Z =
    |X| + E >= |A^-1|`` (fact 1; inf where the residual's norm bound is not below 1)."""
    n = _check(A)
    eye = np.eye(n)
    absX = np.abs(X)
    with np.errstate(invalid="ignore", over="ignore"):
        Rb = widen(np.abs(eye - X @ A) + gamma(n + 1) * (eye + absX @ np.abs(A)), 2 * n + 2)
    E, _ = _series(Rb, absX)
    return E, _finite_or_inf(absX + E)


def perturbed_inverse(Z: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(F, q)``: ``F >= |(A + Delta)^-1 - A^-1|`` for every ``|Delta| <= D``, given ``Z >=
    |A^-1|``, and ``q = ||Z D||`` (fact 2; inf where ``q >= 1``)."""
    _check(Z)
    with np.errstate(invalid="ignore", over="ignore"):
        P = widen(Z @ D, Z.shape[-1])
    return _series(P, Z)


def log_det_shift(q: np.ndarray, n: int) -> np.ndarray:
    """``-n ln(1 - q)``, inflated: a bound on the change of ``ln|det|`` by a perturbation
    with ``||A^-1 Delta|| <= q`` (fact 2; inf where ``q >= 1``)."""
    q = np.asarray(q, np.float64)
    ok = q < 1.0
    return np.where(ok, widen(-n * np.log1p(-np.where(ok, q, 0.0)), 1), np.inf)


def log_abs_det(A: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, rad)``: ``s = sum_i ln|U_ii|`` of a float64 LU factorisation of ``A`` and
    ``rad >= |s - ln|det A||`` (fact 3), given ``Z >= |A^-1|`` (inf where ``A`` may be
    singular)."""
    n = _check(A)
    p, L, Up = scipy.linalg.lu(A, p_indices=True)  # A = L[p] U
    perm = np.argsort(p, axis=-1)[..., None]
    Ap = np.take_along_axis(A, perm, axis=-2)  # L U = A[perm] + Delta
    D = widen(np.abs(L @ Up - Ap) + gamma(n + 1) * (np.abs(L) @ np.abs(Up) + np.abs(Ap)),
              2 * n + 2)
    Dorig = np.empty_like(D)  # the rows in A's order
    np.put_along_axis(Dorig, perm, D, axis=-2)
    _, q = perturbed_inverse(Z, Dorig)
    with np.errstate(divide="ignore"):
        logs = np.log(np.abs(np.diagonal(Up, axis1=-2, axis2=-1)))
    s = logs.sum(axis=-1)
    # each ln within one ulp of its result, the sum within gamma_{n-1}; subnormal floor
    rounding = ((2.0 ** -52 + gamma(n)) * np.abs(logs).sum(axis=-1) + n * 2.0 ** -1074)
    rad = widen(rounding + log_det_shift(q, n), 0)
    return s, np.where(np.isfinite(s), rad, np.inf)
