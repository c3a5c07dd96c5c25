"""An electron-electron Jastrow factor with the cusp conditions, at any precision.

``J = sum_{i<j} u(r_ij)`` with the Pade form ``u(r) = a r / (1 + b r)`` (hartree atomic
units): ``a = 1/2`` for antiparallel and ``a = 1/4`` for parallel spins satisfy Kato's
electron-electron cusp conditions ``u'(0) = a``; ``b > 0`` (1/bohr) sets the range.  The
trial function becomes ``psi = exp(J) det_up det_down``.  Derivatives::

    u'(r) = a / (1 + b r)**2,        grad_i u(r_ij) = (u'(r) / r) (r_i - r_j)
    u''(r) + 2 u'(r) / r = 2 u'(r) / (r (1 + b r))        (the Laplacian of u(|r_i - r_j|))

One kernel, ``jastrow``, with its own precision: ``d = r_i - r_j`` (``d``, ``d2``, the
accumulator ``r2``), ``inv_r = rsqrt(r2)``, ``r = r2 inv_r``, ``den = 1 + b r``, ``inv_den``,
``u = a r inv_den``, ``du = a inv_den**2``, ``dur = du inv_r`` (u'/r), gradient terms ``g =
dur d`` summed per electron in order of j (``grad``, a running sum rounded at every step),
Laplacian terms ``lterm = 2 dur inv_den`` (accumulator ``lap``), and ``J`` (accumulator
``sum``).  A single-electron move needs O(N) work and no per-walker state.

:class:`PadeJastrow` is the factor as a Jastrow part (:mod:`fixedqmc.systems.parts`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, load, mul, n_chunks, store, sub)
from fixedqmc.numerics.kernel_ops import recip, rsqrt
from fixedqmc.systems.parts import PartMove, PartValues

JASTROW_VARIABLES = (
    ("x", "an electron coordinate (bohr)"), ("d", "r_i - r_j component"), ("d2", "d**2"),
    ("r2", "r_ij**2 (sum)"), ("inv_r", "1 / r_ij"), ("r", "r_ij"), ("b", "b (1/bohr)"),
    ("br", "b r"), ("den", "1 + b r"), ("inv_den", "1 / (1 + b r)"), ("a", "cusp a"),
    ("ar", "a r"), ("u", "u(r)"), ("sum", "J = sum u (sum)"), ("inv_den2", "inv_den**2"),
    ("du", "u'(r)"), ("dur", "u'(r) / r"), ("g", "(u' / r) d"),
    ("grad", "grad_i J component (running sum)"), ("lterm", "2 (u' / r) inv_den"),
    ("lap", "lap_i J (sum)"))
(X, D, D2, R2, INV_R, R, B, BR, DEN, INV_DEN, A, AR, U, SUM, INV_DEN2, DU, DUR, G, GRAD,
 LTERM, LAP) = range(21)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _pair(e, xi, yi, zi, xj, yj, zj, a, b):
    """(u, dur, lterm, dx, dy, dz) of one pair: values of the jastrow kernel."""
    dx, dy, dz = sub(e, xi, xj, D), sub(e, yi, yj, D), sub(e, zi, zj, D)
    acc = acc_add(e, acc_zero(e, R2), mul(e, dx, dx, D2), R2)
    acc = acc_add(e, acc, mul(e, dy, dy, D2), R2)
    r2 = acc_value(e, acc_add(e, acc, mul(e, dz, dz, D2), R2), R2)
    inv_r = rsqrt(e, r2, INV_R)
    r = mul(e, r2, inv_r, R)
    inv_den = recip(e, add(e, const(e, 1.0, DEN), mul(e, const(e, b, B), r, BR), DEN),
                    INV_DEN)
    ac = const(e, a, A)
    u = mul(e, mul(e, ac, r, AR), inv_den, U)
    dur = mul(e, mul(e, ac, mul(e, inv_den, inv_den, INV_DEN2), DU), inv_r, DUR)
    lterm = mul(e, add(e, dur, dur, DUR), inv_den, LTERM)
    return u, dur, lterm, dx, dy, dz


@njit
def _walker(e, pos, n_up, a_par, a_anti, b, out_sum, out_grad, out_lap):
    n = pos.shape[0]
    total = acc_zero(e, SUM)
    for i in range(n):
        xi, yi, zi = load(e, pos[i, 0], X), load(e, pos[i, 1], X), load(e, pos[i, 2], X)
        gx, gy, gz = const(e, 0.0, GRAD), const(e, 0.0, GRAD), const(e, 0.0, GRAD)
        lap = acc_zero(e, LAP)
        for j in range(n):
            if j == i:
                continue
            a = a_par if (i < n_up) == (j < n_up) else a_anti
            u, dur, lterm, dx, dy, dz = _pair(e, xi, yi, zi, load(e, pos[j, 0], X),
                                              load(e, pos[j, 1], X), load(e, pos[j, 2], X),
                                              a, b)
            if j > i:
                total = acc_add(e, total, u, SUM)
            gx = add(e, gx, mul(e, dur, dx, G), GRAD)
            gy = add(e, gy, mul(e, dur, dy, G), GRAD)
            gz = add(e, gz, mul(e, dur, dz, G), GRAD)
            lap = acc_add(e, lap, lterm, LAP)
        out_grad[i, 0], out_grad[i, 1], out_grad[i, 2] = store(e, gx), store(e, gy), store(e, gz)
        out_lap[i] = store(e, acc_value(e, lap, LAP))
    out_sum[0] = store(e, acc_value(e, total, SUM))


@njit
def _jastrow_chunk(cj, k, pos, n_up, a_par, a_anti, b, out_sum, out_grad, out_lap):
    c = chunk(cj, k)
    lo, hi = chunk_bounds(cj, pos.shape[0], k)
    for w in range(lo, hi):
        _walker(at(c, w), pos[w], n_up, a_par, a_anti, b, out_sum[w], out_grad[w], out_lap[w])


@njit(parallel=True, cache=True)
def jastrow_kernel(cj, pos, n_up, a_par, a_anti, b, out_sum, out_grad, out_lap):
    """J, grad_i J and lap_i J of walkers ``pos`` (n_w, N, 3) (``jastrow.x`` words; the
    first ``n_up`` electrons spin up): ``out_sum`` (n_w, 1) ``sum``, ``out_grad`` (n_w, N, 3)
    ``grad``, ``out_lap`` (n_w, N) ``lap`` words."""
    for k in prange(n_chunks(cj, pos.shape[0])):
        _jastrow_chunk(cj, k, pos, n_up, a_par, a_anti, b, out_sum, out_grad, out_lap)


@njit
def _move_walker(e, pos, i, new, n_up, a_par, a_anti, b, out):
    """out = (J(new) - J(old) terms of electron i, grad_i J at new (3))."""
    xi, yi, zi = load(e, pos[i, 0], X), load(e, pos[i, 1], X), load(e, pos[i, 2], X)
    xn, yn, zn = load(e, new[0], X), load(e, new[1], X), load(e, new[2], X)
    old_acc, new_acc = acc_zero(e, SUM), acc_zero(e, SUM)
    gx, gy, gz = const(e, 0.0, GRAD), const(e, 0.0, GRAD), const(e, 0.0, GRAD)
    for j in range(pos.shape[0]):
        if j == i:
            continue
        a = a_par if (i < n_up) == (j < n_up) else a_anti
        xj, yj, zj = load(e, pos[j, 0], X), load(e, pos[j, 1], X), load(e, pos[j, 2], X)
        old_acc = acc_add(e, old_acc, _pair(e, xi, yi, zi, xj, yj, zj, a, b)[0], SUM)
        u, dur, _, dx, dy, dz = _pair(e, xn, yn, zn, xj, yj, zj, a, b)
        new_acc = acc_add(e, new_acc, u, SUM)
        gx = add(e, gx, mul(e, dur, dx, G), GRAD)
        gy = add(e, gy, mul(e, dur, dy, G), GRAD)
        gz = add(e, gz, mul(e, dur, dz, G), GRAD)
    out[0] = store(e, acc_value(e, old_acc, SUM))
    out[1] = store(e, acc_value(e, new_acc, SUM))
    out[2], out[3], out[4] = store(e, gx), store(e, gy), store(e, gz)


@njit
def _move_chunk(cj, k, pos, i, new, n_up, a_par, a_anti, b, out):
    c = chunk(cj, k)
    lo, hi = chunk_bounds(cj, pos.shape[0], k)
    for w in range(lo, hi):
        _move_walker(at(c, w), pos[w], i, new[w], n_up, a_par, a_anti, b, out[w])


@njit(parallel=True, cache=True)
def jastrow_move_kernel(cj, pos, i, new, n_up, a_par, a_anti, b, out):
    """Moving electron ``i`` to ``new`` (n_w, 3): ``out[w] = (sum_j u(r_ij), sum_j
    u(r'_ij), grad_i J at new)`` (``sum``, ``sum``, ``grad`` x 3 words); positions and
    ``new`` are ``jastrow.x`` words."""
    for k in prange(n_chunks(cj, pos.shape[0])):
        _move_chunk(cj, k, pos, i, new, n_up, a_par, a_anti, b, out)


class PadeJastrow:
    """``exp(J)`` with the cusp-condition ``a`` (1/4 parallel, 1/2 antiparallel spins; the
    first ``n_up`` electrons spin up) and range ``b`` (1/bohr), as a Jastrow part
    (:mod:`fixedqmc.systems.parts`, ``laplacian = "log"``) whose kernel is the kernel set's
    ``jastrow``; no per-walker state."""

    laplacian = "log"
    a_parallel, a_antiparallel = 0.25, 0.5

    def __init__(self, n_up: int, b: float):
        self.n_up, self.b = int(n_up), float(b)

    def evaluate(self, ks, pos, step: int, state=None) -> PartValues:
        """J (n_w,), grad_i J (n_w, N, 3), lap_i J (n_w, N) of walkers ``pos`` (n_w, N, 3)."""
        cj = ks.context("jastrow", step)
        dt = ks["jastrow"].dtype
        nw, n = pos.shape[:2]
        out_s, out_g, out_l = np.zeros((nw, 1), dt), np.zeros((nw, n, 3), dt), np.zeros((nw, n), dt)
        jastrow_kernel(cj, ks.encode("jastrow", "x", pos, step), self.n_up, self.a_parallel,
                       self.a_antiparallel, self.b, out_s, out_g, out_l)
        ks.report("jastrow", cj)
        return PartValues(ks.decode("jastrow", "sum", out_s[:, 0]), None,
                          ks.decode("jastrow", "grad", out_g), ks.decode("jastrow", "lap", out_l))

    def propose(self, ks, pos, state, i: int, new, step: int, grad: bool = True) -> PartMove:
        """The change of J when electron ``i`` moves to ``new`` (n_w, 3) and grad_i J there."""
        cj = ks.context("jastrow", step)
        out = np.zeros((new.shape[0], 5), ks["jastrow"].dtype)
        jastrow_move_kernel(cj, ks.encode("jastrow", "x", pos, step), i,
                            ks.encode("jastrow", "x", new, step), self.n_up, self.a_parallel,
                            self.a_antiparallel, self.b, out)
        ks.report("jastrow", cj)
        return PartMove(ks.decode("jastrow", "sum", out[:, 1])
                        - ks.decode("jastrow", "sum", out[:, 0]), None,
                        ks.decode("jastrow", "grad", out[:, 2:]) if grad else None)

    def accept(self, ks, state, i: int, mask, move: PartMove) -> None:
        """Nothing to update: the factor keeps no state."""

    def recompute(self, ks, pos, step: int, state=None) -> tuple[dict, dict]:
        return {}, {}
