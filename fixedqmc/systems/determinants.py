"""Slater determinants of any orbital set, at any precision: ratios, gradients and Laplacians
through the inverse, and Sherman-Morrison updates (seed 001, Eq. 5-7; Algorithm 1).

For one spin with electrons ``i`` and occupied orbitals ``k``, ``M[i, k] = phi_k(r_i)`` and
``psi_s = det M``.  The per-walker state is ``B = M^-1`` (shape ``(n, n)``, ``B[k, i]``).
With ``row[k] = phi_k(r')`` the orbitals at a proposed position of electron ``j``:

* ratio ``det M' / det M = sum_k row[k] B[k, j]`` (Eq. 7 with the cofactor expansion);
* gradient at the new position ``grad_j ln|det| = sum_k grad phi_k(r') B[k, j] / ratio``;
* per electron of the current configuration ``grad_i ln|det| = sum_k grad phi_k(r_i)
  B[k, i]`` and ``lap_i det / det = sum_k lap phi_k(r_i) B[k, i]``;
* the Sherman-Morrison update after the move is accepted (O(n**2)):
  ``u[l] = sum_k row[k] B[k, l] - delta_lj``, ``B[k, l] -= B[k, j] u[l] / ratio``.

The three compiled kernels run in the formats of one kernel, ``determinant`` (variables
below): inputs (orbital rows, the inverse) arrive as words of its formats, the inverse is
kept in them between moves (a walker's state), and every product and sum is an operation of
:mod:`fixedqmc.numerics.kernel` (sums are accumulators: rounded once per term, added
exactly).  A fresh inverse (:func:`fresh_inverse`) is LU in float64 on the host, as a host
CPU does while an accelerator streams the updates; ``||M B - I||`` of the updated inverse is
the drift diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from fixedqmc.numerics import bound_linalg, bound_words
from fixedqmc.numerics.kernel import (KernelSpec, Variable, acc_add, acc_array, acc_array_add,
                                      acc_array_clear, acc_array_value, acc_fits, acc_value,
                                      acc_zero, at, chunk, chunk_bounds, const, events, is_quiet,
                                      load, mul, n_chunks, quiet, store, sub,
                                      symmetric_range as sym)
from fixedqmc.numerics.kernel_ops import div

#: Variables of the ``determinant`` kernel (ranges are set by the system that uses it).
DETERMINANT_VARIABLES = (
    ("row", "an orbital value phi_k(r) (input)"),
    ("inv", "an element of the inverse Slater matrix B (state)"),
    ("prod", "row[k] B[k, j]"),
    ("ratio", "det M' / det M (sum)"),
    ("grow", "a gradient component or Laplacian of an orbital (input)"),
    ("gprod", "grow[k] B[k, i]"),
    ("gsum", "sum_k grow[k] B[k, i] (sum)"),
    ("grad", "gsum / ratio at a proposed position"),
    ("u", "sum_k row[k] B[k, l] - delta_lj (sum)"),
    ("uq", "u[l] / ratio"),
    ("corr", "B[k, j] u[l] / ratio"),
)
ROW, INV, PROD, RATIO, GROW, GPROD, GSUM, GRAD, U, UQ, CORR = range(11)


def determinant_spec(ranges: dict) -> KernelSpec:
    """The ``determinant`` kernel with declared ``ranges`` ``{variable: (lo, hi)}``."""
    return KernelSpec("determinant", tuple(Variable(n, *ranges[n], doc)
                                           for n, doc in DETERMINANT_VARIABLES))


def determinant_ranges(row_max: float, grow_max: float, grad_max: float, n_max: int,
                       inv_scale: float = 64.0) -> dict:
    """Declared ranges ``{variable: (lo, hi)}`` of the ``determinant`` kernel for orbital
    values up to ``row_max``, orbital derivatives up to ``grow_max``, gradients at proposed
    positions up to ``grad_max`` (1/length) and spins of at most ``n_max`` particles.
    Inverse elements are allowed up to ``inv_scale n_max`` and ratios up to 64: a walker
    closer to a node than that overflows in narrow fixed formats."""
    inv = inv_scale * n_max
    return {"row": sym(row_max), "inv": sym(inv), "prod": sym(row_max * inv),
            "ratio": sym(64), "grow": sym(grow_max), "gprod": sym(grow_max * inv),
            "gsum": sym(grow_max * inv * n_max), "grad": sym(grad_max),
            "u": sym(row_max * inv * n_max), "uq": sym(row_max * inv * n_max),
            "corr": sym(row_max * inv ** 2 * n_max)}


def fresh_inverse(M: np.ndarray):
    """``(sign, ln|det|, B)`` of Slater matrices ``M`` (n_w, n, n), float64 LU.

    A singular matrix (sign 0: the walker sits on a node) gets ``ln|det| = -inf`` and the
    identity as its placeholder inverse; callers report it as outside (psi = 0)."""
    sign, ln_det = np.linalg.slogdet(M)
    singular = sign == 0
    safe = np.where(singular[:, None, None], np.eye(M.shape[-1]), M)
    return sign, ln_det, np.linalg.inv(safe)


@dataclass
class InverseBound:
    """One float64 matrix beside the exact Slater matrices ``M_x`` (n_w, n, n each): ``M``
    with ``D >= |M - M_x|``, its float64 inverse ``X`` (:func:`fresh_inverse`), ``E >= |X
    - M^-1|``, ``Z >= |M^-1|`` and ``F >= |M^-1 - M_x^-1|``
    (:mod:`~fixedqmc.numerics.bound_linalg`, facts 1 and 2), ``q = ||Z D||``, and
    ``ln_det``, ``ln|det|`` of ``M`` as :func:`fresh_inverse` computes it."""

    M: np.ndarray
    D: np.ndarray
    X: np.ndarray
    E: np.ndarray
    Z: np.ndarray
    F: np.ndarray
    q: np.ndarray
    sign: np.ndarray
    ln_det: np.ndarray

    @classmethod
    def of(cls, M: np.ndarray, D: np.ndarray) -> "InverseBound":
        sign, ln_det, X = fresh_inverse(M)
        E, Z = bound_linalg.inverse_enclosure(M, X)
        F, q = bound_linalg.perturbed_inverse(Z, D)
        return cls(M, D, X, E, Z, F, q, sign, ln_det)

    def inverse_bound(self) -> np.ndarray:
        """A bound on ``|X - M_x^-1|``."""
        return self.E + self.F

    def log_det(self) -> tuple[np.ndarray, np.ndarray]:
        """``(s, rad)``: ``ln|det M|`` from an LU (fact 3) and ``rad >= |s - ln|det
        M_x||``, to first order the trace term ``sum_ij Z_ij D_ji`` (``ln|det(I - F)| =
        -sum_k tr(F^k) / k`` with ``F = M^-1 (M - M_x)``, ``|tr F| <= sum Z D^T``, the
        rest at most ``n q**2 / (2 (1 - q))``)."""
        n = self.M.shape[-1]
        s, rad = bound_linalg.log_abs_det(self.M, self.Z)
        ok = self.q < 1.0
        q = np.where(ok, self.q, 0.0)
        rest = np.where(ok, bound_linalg.widen(n * q * q / (2.0 * (1.0 - q)), 2), np.inf)
        trace = bound_linalg.widen((self.Z * np.swapaxes(self.D, -1, -2)).sum(axis=(-2, -1)),
                                   n * n)
        return s, bound_linalg.widen(rad + trace + rest, 0)


def fresh_inverse_bound(M: np.ndarray, A: np.ndarray):
    """The bound run's form of :func:`fresh_inverse`: ``(sign, ln|det| words, B words,
    (v, t))`` of bound words ``M`` (n_w, n, n) of the Slater matrices
    (:mod:`~fixedqmc.numerics.bound_words`: the bound run's values ``V``, float64's share
    ``r`` and the trial's ``b`` of their bounds) and the trial's own matrices ``A``
    (float64, what it inverts); ``v``, ``t`` the :class:`InverseBound` of ``V`` (``D =
    r``) and ``A`` (``D = b``).

    Values: ``B = V^-1`` and ``ln|det V|`` in float64; float64's share bounds their
    distance from the exact ``M_x^-1`` and ``ln|det M_x|``, the trial's share the distance
    of :func:`fresh_inverse`'s results for ``A`` from them.  The trial's rounding of B
    into the ``inv`` words happens where a kernel loads them.  Infinite bounds where a
    matrix may be singular within its bounds (or is not finite)."""
    V, r, b = bound_words.split(M)
    eye = np.eye(V.shape[-1])
    bad = ~(np.isfinite(V).all(axis=(-2, -1)) & np.isfinite(A).all(axis=(-2, -1)))
    v = InverseBound.of(np.where(bad[:, None, None], eye, V), r)
    t = InverseBound.of(np.where(bad[:, None, None], eye, A), b)
    (ld, r_ld), (ld_a, b_ld) = v.log_det(), t.log_det()
    b_ld = b_ld + np.abs(t.ln_det - ld_a)  # the trial's slogdet against its LU's
    inf = np.where(bad, np.inf, 0.0)
    return (v.sign, bound_words.join(ld, r_ld + inf, b_ld + inf),
            bound_words.join(v.X, v.inverse_bound() + inf[:, None, None],
                             t.inverse_bound() + inf[:, None, None]), (v, t))


def contraction_bound(G: np.ndarray, side: InverseBound, bG: np.ndarray) -> np.ndarray:
    """A bound on ``|sum_k G[w, i, d, k] X[w, k, i] - sum_k G_x[w, i, d, k] M_x^-1[w, k,
    i]|`` (n_w, n, n_d): the exact contraction of :func:`contract_kernel` on one side's
    float64 inputs (derivative rows ``G`` (n_w, n, n_d, n) with ``|G - G_x| <= bG``, and
    ``side.X``) against the exact one (products widened, :func:`~fixedqmc.numerics.
    bound_linalg.widen`).  With ``H = G M^-1`` (``|H| <= |fl(G X)| + gamma_n |G| |X| + |G|
    E`` and underflows) and ``M^-1 - M_x^-1 = M^-1 (M_x - M) M_x^-1``::

        bG |X| + bG (E + F) + |G| E + |H| D (Z + F)

    each contracted with electron i's column: the first-order term keeps ``G M^-1`` whole
    (a row of gradients of ln|D|, small where ``|M^-1|`` is large near a node) instead of
    ``|G| |M^-1|``."""
    n = G.shape[-1]
    gamma = bound_linalg.gamma(n)
    absG = np.abs(G)
    X, E, F, Z, D = side.X, side.E, side.F, side.Z, side.D
    absX = np.abs(X)
    widen = bound_linalg.widen
    with np.errstate(invalid="ignore", over="ignore"):
        H = widen(np.abs(np.einsum("widk,wkl->widl", G, X)) + gamma * np.einsum(
            "widk,wkl->widl", absG, absX) + np.einsum("widk,wkl->widl", absG, E), 4 * n)
        HD = widen(np.einsum("widl,wlm->widm", H, D), n)
        out = (np.einsum("widk,wki->wid", bG, widen(absX + E + F, 0))
               + np.einsum("widk,wki->wid", absG, E)
               + np.einsum("widm,wmi->wid", HD, widen(Z + F, 0)))
    return widen(out, 3 * n)


def inverse_error(M: np.ndarray, B: np.ndarray) -> float:
    """``max |M B - I|`` over walkers and elements: the drift of an updated inverse."""
    return float(np.max(np.abs(M @ B - np.eye(M.shape[-1])), initial=0.0))


# ------------------------------------------------------------------------ kernels --
def _make_dot(v_in: int, v_prod: int, v_sum: int):
    """``dot(e, row, inv, j)``: ``sum_k row[k] inv[k, j]`` (row words of variable ``v_in``,
    products rounded into ``v_prod``, summed in an accumulator of ``v_sum``); variable ids
    are closure constants, as the operations need compile-time ids."""
    @njit
    def dot(e, row, inv, j):
        acc = acc_zero(e, v_sum)
        for k in range(row.shape[0]):
            acc = acc_add(e, acc, mul(e, load(e, row[k], v_in), load(e, inv[k, j], INV),
                                      v_prod), v_sum)
        return acc_value(e, acc, v_sum)
    return dot


_ratio_dot = _make_dot(ROW, PROD, RATIO)
_grad_dot = _make_dot(GROW, GPROD, GSUM)


@njit
def _ratio_chunk(ct, k, rows, inv, j, grows, out_ratio, out_grad):
    c = chunk(ct, k)
    lo, hi = chunk_bounds(ct, rows.shape[0], k)
    for w in range(lo, hi):
        e = at(c, w)
        r = _ratio_dot(e, rows[w], inv[w], j)
        out_ratio[w] = store(e, r)
        for d in range(grows.shape[1]):
            g = _grad_dot(e, grows[w, d], inv[w], j)
            out_grad[w, d] = store(e, div(e, g, r, GRAD))


@njit(parallel=True, cache=True)
def ratio_kernel(ct, rows, inv, j, grows, out_ratio, out_grad):
    """Ratios of moving electron ``j`` of every walker (words of the determinant kernel).

    ``rows`` (n_w, n) orbital values at the new positions (``row``), ``inv`` (n_w, n, n)
    (``inv``), ``grows`` (n_w, 3, n) orbital gradients there (``grow``; shape (n_w, 0, n)
    for none); writes ``out_ratio`` (n_w,) (``ratio``) and ``out_grad`` (n_w, 3) (``grad``:
    grad_j ln|det| at the new position)."""
    for k in prange(n_chunks(ct, rows.shape[0])):
        _ratio_chunk(ct, k, rows, inv, j, grows, out_ratio, out_grad)


@njit(inline="always")
def _u_sums(e, row, inv, j, r, acc, u):
    """``u[m] = (sum_k row[k] B[k, m] - delta_mj) / ratio`` (``uq`` words) in context ``e``,
    by rows of B: one multiply-add into every column's accumulator (``acc``,
    :func:`~fixedqmc.numerics.kernel.acc_array`), so the loop over m vectorises; each
    column's terms are added in k order (fixed point: the same exact sums and words in any
    order).  Returns the event flag of the words (quiet contexts; 0 otherwise)."""
    n = row.shape[0]
    acc_array_clear(e, acc)
    for k in range(n):
        x = load(e, row[k], ROW)
        bk = inv[k]
        for m in range(n):
            acc_array_add(e, acc, m, mul(e, x, load(e, bk[m], INV), PROD), U)
    flag = np.int64(0)
    for m in range(n):
        s = acc_array_value(e, acc, m, U)
        if m == j:
            s = sub(e, s, const(e, 1.0, U), U)
        q = div(e, s, r, UQ)
        flag |= events(e, q)
        u[m] = store(e, q)
    return flag


@njit(inline="always")
def _corrected_row(e, inv_row, bj, u, out):
    """``out[m] = B[kk, m] - B[kk, j] u[m]`` (``inv`` words) of one row ``inv_row`` of B,
    ``bj`` the value B[kk, j]; returns the event flag of the words (quiet contexts)."""
    flag = np.int64(0)
    for m in range(inv_row.shape[0]):
        b = sub(e, load(e, inv_row[m], INV), mul(e, bj, load(e, u[m], UQ), CORR), INV)
        flag |= events(e, b)
        out[m] = store(e, b)
    return flag


@njit
def _update_walker(e, row, inv, j, ratio, u, col, tmp, acc, qacc):
    """Sherman-Morrison update of one walker's inverse: the sums ``u`` (:func:`_u_sums`),
    then every row of B corrected (:func:`_corrected_row`).  Each step runs first in the
    quiet context (:func:`~fixedqmc.numerics.kernel.quiet`: int64 accumulators, events
    carried in the values, so fixed-point loops vectorise too); only a step in which an
    operation overflowed, or whose accumulators cannot hold n terms, is recomputed in the
    counting context ``e`` (the same words, every event counted).  A corrected row goes to
    ``tmp`` first (quiet contexts), so B is still whole when the row must be recomputed."""
    n = row.shape[0]
    eq = quiet(e)
    for k in range(n):
        col[k] = inv[k, j]
    if not acc_fits(eq, U, n) or _u_sums(eq, row, inv, j, load(eq, ratio, RATIO), qacc, u):
        _u_sums(e, row, inv, j, load(e, ratio, RATIO), acc, u)
    for kk in range(n):
        if not is_quiet(eq):  # float or run-time formats: in place, events counted
            _corrected_row(eq, inv[kk], load(eq, col[kk], INV), u, inv[kk])
        elif _corrected_row(eq, inv[kk], load(eq, col[kk], INV), u, tmp):
            _corrected_row(e, inv[kk], load(e, col[kk], INV), u, inv[kk])
        else:
            inv[kk, :] = tmp


@njit
def _update_chunk(ct, k, rows, inv, j, mask, ratio, scratch):
    c = chunk(ct, k)
    lo, hi = chunk_bounds(ct, rows.shape[0], k)
    acc = acc_array(at(c, lo), rows.shape[1], U)
    qacc = acc_array(quiet(at(c, lo)), rows.shape[1], U)
    for w in range(lo, hi):
        if mask[w]:
            _update_walker(at(c, w), rows[w], inv[w], j, ratio[w], scratch[k, 0],
                           scratch[k, 1], scratch[k, 2], acc, qacc)


@njit(parallel=True, cache=True)
def update_kernel(ct, rows, inv, j, mask, ratio, scratch):
    """Sherman-Morrison update of ``inv`` (in place) for the walkers in ``mask`` after
    electron ``j`` moved to where the orbitals are ``rows``; ``ratio`` (n_w,) from
    :func:`ratio_kernel`; ``scratch`` (N_CHUNKS, 3, n) in the kernel's word type."""
    for k in prange(n_chunks(ct, rows.shape[0])):
        _update_chunk(ct, k, rows, inv, j, mask, ratio, scratch)


@njit
def _contract_chunk(ct, k, grows, inv, out):
    c = chunk(ct, k)
    lo, hi = chunk_bounds(ct, grows.shape[0], k)
    for w in range(lo, hi):
        e = at(c, w)
        for i in range(grows.shape[1]):
            for d in range(grows.shape[2]):
                out[w, i, d] = store(e, _grad_dot(e, grows[w, i, d], inv[w], i))


@njit(parallel=True, cache=True)
def contract_kernel(ct, grows, inv, out):
    """Per electron ``i``: ``sum_k grows[w, i, d, k] B[k, i]`` (``gsum``) for each of the
    ``d`` derivative rows (gradient components, Laplacian) of ``grows`` (n_w, n, n_d, n);
    writes ``out`` (n_w, n, n_d)."""
    for k in prange(n_chunks(ct, grows.shape[0])):
        _contract_chunk(ct, k, grows, inv, out)
