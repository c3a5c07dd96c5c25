"""The compiled Jastrow u kernel, written once for every precision (seed 000, Eq. 8).

A named kernel with its own precision (its own context), parallel over walkers in
the fixed chunks of :mod:`fixedqmc.numerics.kernel`.  Positions enter as *fractional
coordinates* ``frac`` in [0, 1) of the cell's reduced basis (:attr:`Cell.reduced`), shape
(n_walkers, N, 3); a 2D cell pads the third coordinate, the lattice, the images and the
images with zeros.  Two modes, chosen by ``imove`` (those of :mod:`.jastrow_p_kernel` too):

* ``imove < 0``, a full evaluation: ``out_sum[w, 0]`` = the term's part of
  ``J = sum_{i<j}``, ``out_grad[w, i]`` its part of grad_i J (1/bohr, 3 components),
  ``out_lap[w, i]`` of lap_i J (1/bohr**2).  Each electron loops over all others (a pair is
  computed twice, once for each electron, so that its sums are accumulators of its own);
* ``imove = i``, a single-electron move of electron i to ``fnew[w]``: ``out_sum[w, 0]`` =
  ``sum_{j != i}`` of the term at the old place, ``out_sum[w, 1]`` at the new place,
  ``out_grad[w, 0]`` grad_i of the term at the new place: O(N) work.

``jastrow_u`` (Eq. 8, the cusp-fixed polynomial)
    Per electron i, loops over all electrons j that each vectorise (the coordinates are
    first copied by axis, so that they load in order): ``dfrac = f_i - f_j``, ``nint =
    round_int(dfrac)``, ``dred = dfrac - nint``, ``d_c = sum_k dred_k lattice[k, c]``; then
    per candidate image in turn (the lattice vectors ``R`` whose distance from the reduced
    parallelepiped is below ``L_u``): ``de = d - R``, ``s = sum de**2``, the nearest image so
    far kept by selection (``s`` and ``de``; no branch).  As ``L_u`` is at most half the
    shortest lattice vector, at most one image lies inside the cut-off, and it is the
    nearest.  The partners j != i with ``s < cut2 = L_u**2`` are listed (no branch) and their
    terms computed in a loop that vectorises: ``inv_r = rsqrt(s)``, ``r = s inv_r``, ``x = r
    inv_l`` in [0, 1], ``y = x - one`` in [-1, 0], the powers ``yp`` = ``y**(C-2)``,
    ``y**(C-1)``, ``y**C``.  In the scaled variable ``u = y**C Q(x)`` with ``Q(x) = sum_l
    beta_l x**l``, ``beta_l = alpha_l L_u**(l+C)`` (dimensionless, so every range is set by
    the coefficients, not by L_u): three Horner sums ``q``, ``dq``, ``d2q`` (Q, Q', Q'' with
    coefficients ``coef``, ``dcoef``, ``d2coef``, the parallel and antiparallel one both
    formed and the pair's selected, and products ``qx``, ``dqx``, ``d2qx``), ``yq`` (a power
    of y times one of them), ``kyq`` (times the integer ``int``: C, C(C-1), 2C), ``dux = C
    y**(C-1) q + y**C dq``, ``d2ux = C(C-1) y**(C-2) q + 2C y**(C-1) dq + y**C d2q``, ``u =
    y**C q``, ``du = dux inv_l`` (u'), ``d2u = d2ux inv_l2`` (u''), ``dur = du inv_r``
    (u'/r), ``g = dur de_c`` into the accumulators ``grad``, ``lterm = d2u + dim1 dur``
    (``ddur`` = (dim-1) u'/r) into ``lap``, ``u`` into ``sum`` (a full evaluation adds, for
    the partners j < i, the const 0 of ``u`` instead, once per electron: every pair once).
``jastrow_p`` (Eq. 9-10) is :mod:`.jastrow_p_kernel` (structure factors, O(N n_G)).

Constants: ``upar`` = (``cut2``, ``inv_l``, ``inv_l2``, C, C(C-1), 2C, dim - 1, 1) in the
order of :data:`U_PARAMETERS`; ``ucoef`` (2, 3, N_u + 1): per spin pair (0 parallel, 1
antiparallel) the coefficients of Q, Q', Q'' in powers of x, passed as two flat tuples
(``cpar``, ``canti``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, less, load, mul, n_chunks, store,
                                      sub)
from fixedqmc.numerics.kernel_ops import rsqrt, select
from fixedqmc.systems.periodic.pair_geometry import (PAIR_VARIABLES, by_axis, displacement,
                                                     to_image)

U_VARIABLES = PAIR_VARIABLES + (
    ("cut2", "L_u**2 (bohr**2)"),
    ("inv_r", "1 / r (1/bohr)"),
    ("r", "r = |d - R| (bohr)"),
    ("inv_l", "1 / L_u (1/bohr)"),
    ("x", "r / L_u, [0, 1]"),
    ("one", "1"),
    ("y", "x - 1, [-1, 0]"),
    ("yp", "a power y**k, k = C-2, C-1, C"),
    ("coef", "beta_l = alpha_l L_u**(l+C)"),
    ("qx", "Horner product of Q"),
    ("q", "Horner partial sum; at the end Q(x)"),
    ("dcoef", "a coefficient of Q'"),
    ("dqx", "Horner product of Q'"),
    ("dq", "Q'(x) (partial sums)"),
    ("d2coef", "a coefficient of Q''"),
    ("d2qx", "Horner product of Q''"),
    ("d2q", "Q''(x) (partial sums)"),
    ("yq", "a power of y times q, dq or d2q"),
    ("int", "the integers C, C(C-1), 2C"),
    ("kyq", "int yq"),
    ("dux", "du/dx"),
    ("d2ux", "d2u/dx2"),
    ("u", "u(r)"),
    ("du", "u'(r) (1/bohr)"),
    ("inv_l2", "1 / L_u**2 (1/bohr**2)"),
    ("d2u", "u''(r) (1/bohr**2)"),
    ("dur", "u'(r) / r (1/bohr**2)"),
    ("g", "(u'/r) de_c, a gradient term (1/bohr)"),
    ("grad", "grad_i J_u component (sum, 1/bohr)"),
    ("dim1", "dim - 1"),
    ("ddur", "(dim - 1) u'/r (1/bohr**2)"),
    ("lterm", "u'' + (dim - 1) u'/r (1/bohr**2)"),
    ("lap", "lap_i J_u (sum, 1/bohr**2)"),
    ("sum", "J_u = sum u (sum)"),
)
(FRAC, DFRAC, NINT, DRED, LAT, DTERM, D, IMAGE, DE, DE2, S, CUT2, INV_R, R, INV_L, X, ONE, Y,
 YP, COEF, QX, Q, DCOEF, DQX, DQ, D2COEF, D2QX, D2Q, YQ, INT, KYQ, DUX, D2UX, U, DU, INV_L2,
 D2U, DUR, G, GRAD, DIM1, DDUR, LTERM, LAP, SUM) = range(45)

U_PARAMETERS = ("cut2", "inv_l", "inv_l2", "C", "C(C-1)", "2C", "dim - 1", "one")

assert len(U_VARIABLES) == SUM + 1


# ------------------------------------------------------------------------ u term --
@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _coef(e, parallel, cpar, canti, k, v):
    """Coefficient k of the pair's spin kind (both formed, one selected: no branch)."""
    return select(e, parallel, const(e, cpar[k], v), const(e, canti[k], v))


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _u_pair(e, s, parallel, cpar, canti, par, cpow):
    """``(u, u'/r, u'' + (dim-1) u'/r)`` at ``s = r**2 < L_u**2``; ``cpar``, ``canti`` the
    coefficients of Q, Q', Q'' of parallel and antiparallel spins (flat tuples of 3 (N_u +
    1)), ``parallel`` the pair's kind."""
    inv_r = rsqrt(e, s, INV_R)
    r = mul(e, s, inv_r, R)
    x = mul(e, r, const(e, par[1], INV_L), X)
    y = sub(e, x, const(e, par[7], ONE), Y)
    yc2 = const(e, 1.0, YP)
    if cpow == 3:  # loop-invariant: the term loop is unswitched on it
        yc2 = mul(e, yc2, y, YP)
    yc1 = mul(e, yc2, y, YP)
    yc = mul(e, yc1, y, YP)
    n = len(cpar) // 3  # a constant: the sums unroll
    q = _coef(e, parallel, cpar, canti, n - 1, Q)
    dq = _coef(e, parallel, cpar, canti, 2 * n - 1, DQ)
    d2q = _coef(e, parallel, cpar, canti, 3 * n - 1, D2Q)
    for k in range(n - 2, -1, -1):
        q = add(e, mul(e, q, x, QX), _coef(e, parallel, cpar, canti, k, COEF), Q)
        dq = add(e, mul(e, dq, x, DQX), _coef(e, parallel, cpar, canti, n + k, DCOEF), DQ)
        d2q = add(e, mul(e, d2q, x, D2QX), _coef(e, parallel, cpar, canti, 2 * n + k, D2COEF),
                  D2Q)
    u = mul(e, yc, q, U)
    dux = add(e, mul(e, const(e, par[3], INT), mul(e, yc1, q, YQ), KYQ),
              mul(e, yc, dq, YQ), DUX)
    d2ux = add(e, add(e, mul(e, const(e, par[4], INT), mul(e, yc2, q, YQ), KYQ),
                      mul(e, const(e, par[5], INT), mul(e, yc1, dq, YQ), KYQ), D2UX),
               mul(e, yc, d2q, YQ), D2UX)
    du = mul(e, dux, const(e, par[1], INV_L), DU)
    d2u = mul(e, d2ux, const(e, par[2], INV_L2), D2U)
    dur = mul(e, du, inv_r, DUR)
    lterm = add(e, d2u, mul(e, const(e, par[6], DIM1), dur, DDUR), LTERM)
    return u, dur, lterm


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _u_electron(e, f, i, fi0, fi1, fi2, lat, img, cpar, canti, par, cpow, n_up, total, half,
                bufs):
    """Electron i at fractional coordinates (fi0, fi1, fi2): its u terms with every other
    electron of ``f``: ``(total, gx, gy, gz, lap)`` with the pair values added to the
    accumulator ``total`` (only j > i if ``half``: the others add a zero ``u``).

    Loops over all partners j, each of which vectorises: the displacements; per candidate
    image, the nearest image so far (``s`` and ``de`` selected, no branch); the partners
    j != i inside ``cut2`` moved to the front (no branch: the test is unpredictable); their
    terms (both spin kinds' coefficients selected per pair)."""
    ft, dbuf, sbuf, ebuf, jbuf = bufs
    n = ft.shape[1]
    for j in range(n):
        d0, d1, d2 = displacement(e, fi0, fi1, fi2, load(e, ft[0, j], FRAC),
                                  load(e, ft[1, j], FRAC), load(e, ft[2, j], FRAC), lat)
        dbuf[0, j], dbuf[1, j], dbuf[2, j] = store(e, d0), store(e, d1), store(e, d2)
    for m in range(img.shape[1]):
        for j in range(n):
            e0, e1, e2, s = to_image(e, load(e, dbuf[0, j], D), load(e, dbuf[1, j], D),
                                     load(e, dbuf[2, j], D), img, m)
            if m > 0:  # loop-invariant: the loop is unswitched on it
                nearer = less(e, s, load(e, sbuf[j], S))
                s = select(e, nearer, s, load(e, sbuf[j], S))
                e0 = select(e, nearer, e0, load(e, ebuf[0, j], DE))
                e1 = select(e, nearer, e1, load(e, ebuf[1, j], DE))
                e2 = select(e, nearer, e2, load(e, ebuf[2, j], DE))
            sbuf[j] = store(e, s)
            ebuf[0, j], ebuf[1, j], ebuf[2, j] = store(e, e0), store(e, e1), store(e, e2)
    cut2 = const(e, par[0], CUT2)
    count = 0
    for j in range(n):
        jbuf[count] = j
        count += 1 if less(e, load(e, sbuf[j], S), cut2) & (j != i) else 0
    gx, gy, gz, lap = acc_zero(e, GRAD), acc_zero(e, GRAD), acc_zero(e, GRAD), acc_zero(e, LAP)
    zero = const(e, 0.0, U)
    up = i < n_up
    for k in range(count):
        j = jbuf[k]
        uj = np.uint64(j)  # j >= 0: indexing without wraparound
        u, dur, lterm = _u_pair(e, load(e, sbuf[uj], S), (j < n_up) == up, cpar, canti, par,
                                cpow)
        total = acc_add(e, total, select(e, (j > i) | (not half), u, zero), SUM)
        gx = acc_add(e, gx, mul(e, dur, load(e, ebuf[0, uj], DE), G), GRAD)
        gy = acc_add(e, gy, mul(e, dur, load(e, ebuf[1, uj], DE), G), GRAD)
        gz = acc_add(e, gz, mul(e, dur, load(e, ebuf[2, uj], DE), G), GRAD)
        lap = acc_add(e, lap, lterm, LAP)
    return (total, acc_value(e, gx, GRAD), acc_value(e, gy, GRAD), acc_value(e, gz, GRAD),
            acc_value(e, lap, LAP))


@njit
def _u_walker(e, f, fnew, imove, lat, img, cpar, canti, par, cpow, n_up, out_sum, out_grad,
              out_lap):
    n = f.shape[0]
    dt = out_sum.dtype
    bufs = (by_axis(f, dt), np.empty((3, n), dt), np.empty(n, dt), np.empty((3, n), dt),
            np.empty(n, np.int32))
    full = imove < 0
    total = acc_zero(e, SUM)
    for t in range(n if full else 2):  # one call site: the electron's pipeline compiles once
        i = t if full else imove
        src = fnew if t == 1 and not full else f[i]
        if not full:
            total = acc_zero(e, SUM)
        total, gx, gy, gz, lap = _u_electron(
            e, f, i, load(e, src[0], FRAC), load(e, src[1], FRAC), load(e, src[2], FRAC), lat,
            img, cpar, canti, par, cpow, n_up, total, full, bufs)
        if full:
            out_grad[i, 0], out_grad[i, 1], out_grad[i, 2] = (store(e, gx), store(e, gy),
                                                              store(e, gz))
            out_lap[i] = store(e, lap)
        else:
            out_sum[t] = store(e, acc_value(e, total, SUM))
            if t == 1:
                out_grad[0, 0], out_grad[0, 1], out_grad[0, 2] = (store(e, gx), store(e, gy),
                                                                  store(e, gz))
    if full:
        out_sum[0] = store(e, acc_value(e, total, SUM))


@njit
def _u_chunk(cv, k, f, fnew, imove, lat, img, cpar, canti, par, cpow, n_up, out_sum, out_grad,
             out_lap):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    for w in range(lo, hi):
        _u_walker(at(c, w), f[w], fnew[w], imove, lat, img, cpar, canti, par, cpow, n_up,
                  out_sum[w], out_grad[w], out_lap[w])


@njit(parallel=True, cache=True)
def u_kernel(cv, f, fnew, imove, lat, img, cpar, canti, par, cpow, n_up, out_sum, out_grad,
             out_lap):
    """The u term (Eq. 8) of walkers ``f`` (n_w, N, 3) ``jastrow_u.frac`` words (the first
    ``n_up`` electrons spin up); ``fnew`` (n_w, 3) the moved electron's new coordinates
    (read only if ``imove >= 0``); ``lat`` (3, 3) the reduced lattice (rows, bohr), ``img``
    (3, n_R) candidate images (columns, bohr); ``cpar``, ``canti`` the coefficients of Q,
    Q', Q'' of parallel and antiparallel pairs as flat tuples of 3 (N_u + 1) (a tuple's
    length is a compile-time constant, so the Horner sums unroll and the term loop
    vectorises), ``par`` of :data:`U_PARAMETERS`, ``cpow`` = C (2 or 3).  Outputs (``sum``,
    ``grad``, ``lap`` words): ``out_sum`` (n_w, 2), ``out_grad`` (n_w, N, 3), ``out_lap``
    (n_w, N); see the module docstring for the two modes."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _u_chunk(cv, k, f, fnew, imove, lat, img, cpar, canti, par, cpow, n_up, out_sum,
                 out_grad, out_lap)
