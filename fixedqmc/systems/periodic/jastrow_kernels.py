"""Compiled two-body Jastrow kernels, written once for every precision (seed 000, Eq. 8-10).

Two named kernels, each with its own precision (its own context), parallel over walkers in
the fixed chunks of :mod:`fixedqmc.numerics.kernel`.  Positions enter as *fractional
coordinates* ``frac`` in [0, 1) of the cell's reduced basis (:attr:`Cell.reduced`), shape
(n_walkers, N, 3); a 2D cell pads the third coordinate, the lattice, the images and the
G vectors with zeros.  Each kernel has two modes, chosen by ``imove``:

* ``imove < 0``, a full evaluation: ``out_sum[w, 0]`` = the term's part of
  ``J = sum_{i<j}``, ``out_grad[w, i]`` its part of grad_i J (1/bohr, 3 components),
  ``out_lap[w, i]`` of lap_i J (1/bohr**2).  Each electron loops over all others (a pair is
  computed twice, once for each electron, so that its sums are accumulators of its own);
* ``imove = i``, a single-electron move of electron i to ``fnew[w]``: ``out_sum[w, 0]`` =
  ``sum_{j != i}`` of the term at the old place, ``out_sum[w, 1]`` at the new place,
  ``out_grad[w, 0]`` grad_i of the term at the new place: O(N) work.

``jastrow_u`` (Eq. 8, the cusp-fixed polynomial)
    ``dfrac = f_i - f_j``, ``nint = round_int(dfrac)``, ``dred = dfrac - nint``, ``d_c =
    sum_k dred_k lattice[k, c]``; per candidate image (the few lattice vectors ``R`` whose
    distance from the reduced parallelepiped is below ``L_u``): ``de = d - R``, ``s = sum
    de**2``; if ``s < cut2 = L_u**2`` (at most one image, as ``L_u`` is at most half the
    shortest lattice vector): ``inv_r = rsqrt(s)``, ``r = s inv_r``, ``x = r inv_l`` in
    [0, 1], ``y = x - one`` in [-1, 0], the powers ``yp`` = ``y**(C-2)``, ``y**(C-1)``,
    ``y**C``.  In the scaled variable ``u = y**C Q(x)`` with ``Q(x) = sum_l beta_l x**l``,
    ``beta_l = alpha_l L_u**(l+C)`` (dimensionless, so every range is set by the
    coefficients, not by L_u): three Horner sums ``q``, ``dq``, ``d2q`` (Q, Q', Q'' with
    coefficients ``coef``, ``dcoef``, ``d2coef`` and products ``qx``, ``dqx``, ``d2qx``),
    ``yq`` (a power of y times one of them), ``kyq`` (times the integer ``int``: C,
    C(C-1), 2C), ``dux = C y**(C-1) q + y**C dq``, ``d2ux = C(C-1) y**(C-2) q + 2C y**(C-1)
    dq + y**C d2q``, ``u = y**C q``, ``du = dux inv_l`` (u'), ``d2u = d2ux inv_l2`` (u''),
    ``dur = du inv_r`` (u'/r), ``g = dur de_c`` into the accumulators ``grad``, ``lterm =
    d2u + dim1 dur`` (``ddur`` = (dim-1) u'/r) into ``lap``, ``u`` into ``sum``.
``jastrow_p`` (Eq. 9-10, plane-wave stars from three complex exponentials)
    ``dfrac_k = f_ik - f_jk`` (turns: ``b'_k . d = 2 pi dfrac_k`` for the reduced
    reciprocal vectors ``b'_k``), ``cos``/``sin`` = ``cos_turns``/``sin_turns(dfrac_k)``:
    ``e^{i b'_k . d}``; its powers ``m = 1..nmax`` by repeated complex multiplication
    (products ``pp``, components ``pw``), the negative powers as conjugates, buffered per
    pair (Eq. 10: "computed and buffered").  Per G of the half set with reduced integer
    coordinates ``(n_0, n_1, n_2)``: ``z = e^{i n_0 b'_0.d} e^{i n_1 b'_1.d}
    (e^{i n_2 b'_2.d})`` (two complex products in 3D, one in 2D; components ``zz``), so
    ``Re z = cos(G . d)``, ``Im z = sin(G . d)``; ``pterm = ag Re z`` (``ag = a_G``) into
    ``sum``, ``gterm = agc Im z`` (``agc = -a_G G_c``) into ``grad``, ``lterm = ag2 Re z``
    (``ag2 = -a_G |G|**2``) into ``lap``.

*Fixed-point error of the power construction*: see :mod:`.phasors` (about ``|n_0| + |n_1|
+ |n_2| + 2`` units of the ``pw``/``pp``/``zz`` formats per cosine, for ``3 nmax`` instead
of ``n_G`` transcendental evaluations per pair).

Constants: ``upar`` = (``cut2``, ``inv_l``, ``inv_l2``, C, C(C-1), 2C, dim - 1, 1) in the
order of :data:`U_PARAMETERS`; ``ucoef`` (2, 3, N_u + 1): per spin pair (0 parallel, 1
antiparallel) the coefficients of Q, Q', Q'' in powers of x; ``pcoef`` (n_G, 5): ``a_G,
-a_G G_x, -a_G G_y, -a_G G_z, -a_G |G|**2``; ``gint`` (n_G, 3) int64 reduced integer
coordinates.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, less, load, mul, n_chunks, store,
                                      sub)
from fixedqmc.numerics.kernel_ops import rsqrt
from fixedqmc.systems.periodic.pair_geometry import PAIR_VARIABLES, displacement, to_image
from fixedqmc.systems.periodic.phasors import PHASOR_VARIABLES, PW, powers, times

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

P_VARIABLES = PHASOR_VARIABLES + (
    ("frac", "a reduced fractional coordinate, [0, 1)"),
    ("dfrac", "f_ik - f_jk (turns)"),
    ("ag", "a_G"),
    ("agc", "-a_G G_c (1/bohr)"),
    ("ag2", "-a_G |G|**2 (1/bohr**2)"),
    ("pterm", "a_G cos(G . d)"),
    ("gterm", "-a_G G_c sin(G . d) (1/bohr)"),
    ("lterm", "-a_G |G|**2 cos(G . d) (1/bohr**2)"),
    ("sum", "J_p = sum p (sum)"),
    ("grad", "grad_i J_p component (sum, 1/bohr)"),
    ("lap", "lap_i J_p (sum, 1/bohr**2)"),
)
(P_FRAC, P_DFRAC, P_AG, P_AGC, P_AG2, P_PTERM, P_GTERM, P_LTERM, P_SUM, P_GRAD,
 P_LAP) = range(len(PHASOR_VARIABLES), len(PHASOR_VARIABLES) + 11)

U_PARAMETERS = ("cut2", "inv_l", "inv_l2", "C", "C(C-1)", "2C", "dim - 1", "one")

assert len(U_VARIABLES) == SUM + 1 and len(P_VARIABLES) == P_LAP + 1


# ------------------------------------------------------------------------ u term --
@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _u_pair(e, s, cf, par, cpow):
    """``(u, u'/r, u'' + (dim-1) u'/r)`` at ``s = r**2 < L_u**2``; ``cf`` (3, N_u + 1) the
    coefficients of Q, Q', Q'' of the pair's spins."""
    inv_r = rsqrt(e, s, INV_R)
    r = mul(e, s, inv_r, R)
    x = mul(e, r, const(e, par[1], INV_L), X)
    y = sub(e, x, const(e, par[7], ONE), Y)
    yc2 = const(e, 1.0, YP)
    for _ in range(cpow - 2):
        yc2 = mul(e, yc2, y, YP)
    yc1 = mul(e, yc2, y, YP)
    yc = mul(e, yc1, y, YP)
    n = cf.shape[1]
    q = const(e, cf[0, n - 1], Q)
    dq = const(e, cf[1, n - 1], DQ)
    d2q = const(e, cf[2, n - 1], D2Q)
    for k in range(n - 2, -1, -1):
        q = add(e, mul(e, q, x, QX), const(e, cf[0, k], COEF), Q)
        dq = add(e, mul(e, dq, x, DQX), const(e, cf[1, k], DCOEF), DQ)
        d2q = add(e, mul(e, d2q, x, D2QX), const(e, cf[2, k], D2COEF), D2Q)
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
def _u_electron(e, f, i, fi0, fi1, fi2, lat, img, coef, par, cpow, n_up, total, half):
    """Electron i at reduced fractional coordinates (fi0, fi1, fi2): its u terms with every
    other electron of ``f``: ``(total, gx, gy, gz, lap)`` with the pair values added to the
    accumulator ``total`` (only j > i if ``half``)."""
    gx, gy, gz, lap = acc_zero(e, GRAD), acc_zero(e, GRAD), acc_zero(e, GRAD), acc_zero(e, LAP)
    cut2 = const(e, par[0], CUT2)
    up = i < n_up
    for j in range(f.shape[0]):
        if j == i:
            continue
        cf = coef[0] if (j < n_up) == up else coef[1]
        d0, d1, d2 = displacement(e, fi0, fi1, fi2, load(e, f[j, 0], FRAC),
                                  load(e, f[j, 1], FRAC), load(e, f[j, 2], FRAC), lat)
        for m in range(img.shape[1]):
            e0, e1, e2, s = to_image(e, d0, d1, d2, img, m)
            if less(e, s, cut2):
                u, dur, lterm = _u_pair(e, s, cf, par, cpow)
                if j > i or not half:
                    total = acc_add(e, total, u, SUM)
                gx = acc_add(e, gx, mul(e, dur, e0, G), GRAD)
                gy = acc_add(e, gy, mul(e, dur, e1, G), GRAD)
                gz = acc_add(e, gz, mul(e, dur, e2, G), GRAD)
                lap = acc_add(e, lap, lterm, LAP)
    return (total, acc_value(e, gx, GRAD), acc_value(e, gy, GRAD), acc_value(e, gz, GRAD),
            acc_value(e, lap, LAP))


@njit
def _u_walker(e, f, fnew, imove, lat, img, coef, par, cpow, n_up, out_sum, out_grad,
              out_lap):
    if imove < 0:
        total = acc_zero(e, SUM)
        for i in range(f.shape[0]):
            total, gx, gy, gz, lap = _u_electron(
                e, f, i, load(e, f[i, 0], FRAC), load(e, f[i, 1], FRAC),
                load(e, f[i, 2], FRAC), lat, img, coef, par, cpow, n_up, total, True)
            out_grad[i, 0], out_grad[i, 1], out_grad[i, 2] = (store(e, gx), store(e, gy),
                                                              store(e, gz))
            out_lap[i] = store(e, lap)
        out_sum[0] = store(e, acc_value(e, total, SUM))
    else:
        old = _u_electron(e, f, imove, load(e, f[imove, 0], FRAC), load(e, f[imove, 1], FRAC),
                          load(e, f[imove, 2], FRAC), lat, img, coef, par, cpow, n_up,
                          acc_zero(e, SUM), False)[0]
        new, gx, gy, gz, _ = _u_electron(
            e, f, imove, load(e, fnew[0], FRAC), load(e, fnew[1], FRAC),
            load(e, fnew[2], FRAC), lat, img, coef, par, cpow, n_up, acc_zero(e, SUM), False)
        out_sum[0] = store(e, acc_value(e, old, SUM))
        out_sum[1] = store(e, acc_value(e, new, SUM))
        out_grad[0, 0], out_grad[0, 1], out_grad[0, 2] = store(e, gx), store(e, gy), store(e, gz)


@njit
def _u_chunk(cv, k, f, fnew, imove, lat, img, coef, par, cpow, n_up, out_sum, out_grad,
             out_lap):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    for w in range(lo, hi):
        _u_walker(at(c, w), f[w], fnew[w], imove, lat, img, coef, par, cpow, n_up, out_sum[w],
                  out_grad[w], out_lap[w])


@njit(parallel=True, cache=True)
def u_kernel(cv, f, fnew, imove, lat, img, coef, par, cpow, n_up, out_sum, out_grad, out_lap):
    """The u term (Eq. 8) of walkers ``f`` (n_w, N, 3) ``jastrow_u.frac`` words (the first
    ``n_up`` electrons spin up); ``fnew`` (n_w, 3) the moved electron's new coordinates
    (read only if ``imove >= 0``); ``lat`` (3, 3) the reduced lattice (rows, bohr), ``img``
    (3, n_R) candidate images (columns, bohr), ``coef`` (2, 3, N_u + 1), ``par`` of
    :data:`U_PARAMETERS`, ``cpow`` = C.  Outputs (``sum``, ``grad``, ``lap`` words):
    ``out_sum`` (n_w, 2), ``out_grad`` (n_w, N, 3), ``out_lap`` (n_w, N); see the module
    docstring for the two modes."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _u_chunk(cv, k, f, fnew, imove, lat, img, coef, par, cpow, n_up, out_sum, out_grad,
                 out_lap)


# ------------------------------------------------------------------------ p term --
@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _p_electron(e, f, i, fi0, fi1, fi2, gint, pcoef, nmax, three, buf, total, half):
    """Electron i at (fi0, fi1, fi2): its p terms with every other electron:
    ``(total, gx, gy, gz, lap)`` (pair values added to ``total``, only j > i if ``half``)."""
    gx, gy, gz = acc_zero(e, P_GRAD), acc_zero(e, P_GRAD), acc_zero(e, P_GRAD)
    lap = acc_zero(e, P_LAP)
    for j in range(f.shape[0]):
        if j == i:
            continue
        powers(e, sub(e, fi0, load(e, f[j, 0], P_FRAC), P_DFRAC), buf[0], nmax)
        powers(e, sub(e, fi1, load(e, f[j, 1], P_FRAC), P_DFRAC), buf[1], nmax)
        if three:
            powers(e, sub(e, fi2, load(e, f[j, 2], P_FRAC), P_DFRAC), buf[2], nmax)
        for g in range(gint.shape[0]):
            n0, n1 = gint[g, 0] + nmax, gint[g, 1] + nmax
            zr, zi = times(e, load(e, buf[0, n0, 0], PW), load(e, buf[0, n0, 1], PW),
                           load(e, buf[1, n1, 0], PW), load(e, buf[1, n1, 1], PW))
            if three:
                n2 = gint[g, 2] + nmax
                zr, zi = times(e, zr, zi, load(e, buf[2, n2, 0], PW),
                               load(e, buf[2, n2, 1], PW))
            if j > i or not half:
                total = acc_add(e, total, mul(e, const(e, pcoef[g, 0], P_AG), zr, P_PTERM),
                                P_SUM)
            gx = acc_add(e, gx, mul(e, const(e, pcoef[g, 1], P_AGC), zi, P_GTERM), P_GRAD)
            gy = acc_add(e, gy, mul(e, const(e, pcoef[g, 2], P_AGC), zi, P_GTERM), P_GRAD)
            gz = acc_add(e, gz, mul(e, const(e, pcoef[g, 3], P_AGC), zi, P_GTERM), P_GRAD)
            lap = acc_add(e, lap, mul(e, const(e, pcoef[g, 4], P_AG2), zr, P_LTERM), P_LAP)
    return (total, acc_value(e, gx, P_GRAD), acc_value(e, gy, P_GRAD),
            acc_value(e, gz, P_GRAD), acc_value(e, lap, P_LAP))


@njit
def _p_walker(e, f, fnew, imove, gint, pcoef, nmax, three, out_sum, out_grad, out_lap):
    buf = np.empty((3, 2 * nmax + 1, 2), out_sum.dtype)
    if imove < 0:
        total = acc_zero(e, P_SUM)
        for i in range(f.shape[0]):
            total, gx, gy, gz, lap = _p_electron(
                e, f, i, load(e, f[i, 0], P_FRAC), load(e, f[i, 1], P_FRAC),
                load(e, f[i, 2], P_FRAC), gint, pcoef, nmax, three, buf, total, True)
            out_grad[i, 0], out_grad[i, 1], out_grad[i, 2] = (store(e, gx), store(e, gy),
                                                              store(e, gz))
            out_lap[i] = store(e, lap)
        out_sum[0] = store(e, acc_value(e, total, P_SUM))
    else:
        old = _p_electron(e, f, imove, load(e, f[imove, 0], P_FRAC),
                          load(e, f[imove, 1], P_FRAC), load(e, f[imove, 2], P_FRAC), gint,
                          pcoef, nmax, three, buf, acc_zero(e, P_SUM), False)[0]
        new, gx, gy, gz, _ = _p_electron(
            e, f, imove, load(e, fnew[0], P_FRAC), load(e, fnew[1], P_FRAC),
            load(e, fnew[2], P_FRAC), gint, pcoef, nmax, three, buf, acc_zero(e, P_SUM),
            False)
        out_sum[0] = store(e, acc_value(e, old, P_SUM))
        out_sum[1] = store(e, acc_value(e, new, P_SUM))
        out_grad[0, 0], out_grad[0, 1], out_grad[0, 2] = store(e, gx), store(e, gy), store(e, gz)


@njit
def _p_chunk(cv, k, f, fnew, imove, gint, pcoef, nmax, three, out_sum, out_grad, out_lap):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    for w in range(lo, hi):
        _p_walker(at(c, w), f[w], fnew[w], imove, gint, pcoef, nmax, three, out_sum[w],
                  out_grad[w], out_lap[w])


@njit(parallel=True, cache=True)
def p_kernel(cv, f, fnew, imove, gint, pcoef, nmax, three, out_sum, out_grad, out_lap):
    """The p term (Eq. 9-10) of walkers ``f`` (n_w, N, 3) ``jastrow_p.frac`` words;
    ``fnew`` (n_w, 3) as for :func:`u_kernel`; ``gint`` (n_G, 3) int64 reduced integer
    coordinates of the half set, ``pcoef`` (n_G, 5), ``nmax`` = max |gint|, ``three``: a 3D
    cell.  Outputs (``sum``, ``grad``, ``lap`` words) as for :func:`u_kernel`."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _p_chunk(cv, k, f, fnew, imove, gint, pcoef, nmax, three, out_sum, out_grad, out_lap)
