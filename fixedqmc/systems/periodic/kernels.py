"""Compiled Ewald kernels, written once for every precision (seed 000, Eq. 2-6).

Two named kernels, each with its own precision (its own context), parallel over walkers in
the fixed chunks of :mod:`fixedqmc.numerics.kernel`.  Positions enter as *fractional
coordinates* ``frac`` in [0, 1) of the cell's reduced basis (:class:`Cell.reduced`), shape
(n_walkers, N, 3); a 2D cell pads the third coordinate, the lattice and the images with
zeros (so one source serves 3D and 2D).

``ewald_real``
    ``sum_{i<j} q_i q_j sum_R erfc(gamma |x_j + R - x_i|) / |x_j + R - x_i|`` over the
    images with ``|x_j + R - x_i|**2 < cut2`` (hartree), by the image halos of
    :mod:`.halo`.  Per walker: the cartesian position of every charge, ``pterm = frac_k
    lattice[k, c]`` summed in ``pos`` (bohr); then per charge j and integer shift n whose
    box ranges (:func:`.halo.box_range`, from the float64 coordinates ``fb``) are not empty
    the image ``ipos = pos + image`` (``image`` the const ``R_c``, bohr), formed once and
    appended to the list of every box in range and within the halo's ball; then per
    electron i, over the entries of its box with j > i (a loop that vectorises): ``de = ipos
    - pos_i``, ``s = sum de**2``, and the ``s < cut2`` kept (no branch); then per kept
    term (a loop that vectorises in float contexts): ``inv_r = rsqrt(s)``, ``r = s
    inv_r``, ``x = gamma r``, the erfc form of :mod:`~fixedqmc.systems.periodic.erfc_form`
    (``den = 1 + P x``, ``t = recip(den)``, ``u = T_A t + T_B``, Horner ``h``, ``gauss =
    exp(neg_g2 s)``, ``erfc = gauss h``), ``phi = erfc inv_r``, ``qq`` (the const ``q_i
    q_j``), ``term = qq phi``, accumulated in ``sum``.
``ewald_recip``
    per charge j and axis k the powers ``e^{2 pi i m frac_jk}``, m = -nmax..nmax, by
    :func:`.phasors.all_powers` (shared with ``jastrow_p``: per value the operations of
    :func:`.phasors.powers`, ``cos``, ``sin``, ``pp``, ``pw``, in loops over the charges; a
    cosine and a sine per charge and axis and ``3 nmax`` complex products instead of a
    cosine and a sine per charge and G vector); per G vector of the half set (integer
    coordinates ``gint`` in the reduced reciprocal basis, ``G . r = 2 pi sum_k gint_k
    frac_k``): ``e^{i G . r_j}`` as the product of the three buffered powers
    (:func:`.phasors.times`, ``zz``; two products in 3D, one in 2D), ``S = sum_j q_j (Re,
    Im)`` (``qcos``, ``qsin`` into ``sre``, ``sim``; the powers are buffered per axis,
    exponent and component with the charges innermost, so this loop over j reads memory
    in order and vectorises in float contexts), ``mag = sre**2 + sim**2``, ``sum =
    sum_G weight_G mag`` (hartree; 3D ``(4 pi / Omega) exp(-G**2 / 4 gamma**2) / G**2``, 2D
    ``(2 pi / A) erfc(G / 2 gamma) / G``).  Also writes S(G) (``sre``, ``sim`` words) for
    single-particle updates.

The constants (cut2, gamma, P, 1, T_A, T_B, -gamma**2) come in the array ``par`` in the
order of :data:`REAL_PARAMETERS`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, less, load, mul, n_chunks, store,
                                      sub)
from fixedqmc.numerics.kernel_ops import exp, rsqrt
from fixedqmc.systems.periodic.erfc_form import COEFFICIENTS, ERFCX_VARIABLES, make_erfcx
from fixedqmc.systems.periodic.halo import box_gap, box_index, box_range
from fixedqmc.systems.periodic.phasors import PHASOR_VARIABLES, PW, all_powers, times

REAL_VARIABLES = (
    ("frac", "a reduced fractional coordinate, [0, 1)"),
    ("lattice", "a component of a reduced lattice vector (bohr)"),
    ("pterm", "frac_k lattice[k, c] (bohr)"),
    ("pos", "a cartesian coordinate of a charge (sum, bohr)"),
    ("image", "a component of an image vector R (bohr)"),
    ("ipos", "pos + image: a coordinate of an image of a charge (bohr)"),
    ("de", "ipos_j - pos_i, a component (bohr)"),
    ("de2", "de**2 (bohr**2)"),
    ("s", "|x_j + R - x_i|**2 (sum, bohr**2)"),
    ("cut2", "real_cutoff**2 (bohr**2)"),
    ("inv_r", "1 / |x_j + R - x_i| (1/bohr)"),
    ("r", "|x_j + R - x_i| (bohr)"),
    ("gamma", "gamma (1/bohr)"),
    ("x", "gamma r"),
) + ERFCX_VARIABLES + (
    ("neg_g2", "-gamma**2 (1/bohr**2)"),
    ("arg", "-gamma**2 s"),
    ("gauss", "exp(-gamma**2 s)"),
    ("erfc", "erfc(gamma r) = gauss h"),
    ("phi", "erfc(gamma r) / r (1/bohr)"),
    ("qq", "q_i q_j"),
    ("term", "q_i q_j erfc(gamma r) / r (hartree)"),
    ("sum", "the real-space energy (sum, hartree)"),
)
RECIP_VARIABLES = PHASOR_VARIABLES + (
    ("q", "a charge q_j"),
    ("qcos", "q_j cos(G . r_j)"),
    ("qsin", "q_j sin(G . r_j)"),
    ("sre", "Re S(G) (sum)"),
    ("sim", "Im S(G) (sum)"),
    ("sq", "(Re S)**2 or (Im S)**2"),
    ("mag", "|S(G)|**2"),
    ("weight", "the weight of G (hartree)"),
    ("wterm", "weight |S(G)|**2 (hartree)"),
    ("sum", "the reciprocal-space energy (sum, hartree)"),
)
#: The order of the constants in ``par`` of :func:`real_kernel`.
REAL_PARAMETERS = ("cut2", "gamma", "p", "one", "ta", "tb", "neg_g2")

(FRAC, LAT, PTERM, POS, IMAGE, IPOS, DE, DE2, S, CUT2, INV_R, R, GAMMA, X, PP, PX, ONE,
 DEN, T, TA, TAT, TB, U, COEF, HU, H, NEG_G2, ARG, GAUSS, ERFC, PHI, QQ, TERM,
 SUM) = range(34)
(K_Q, K_QCOS, K_QSIN, K_SRE, K_SIM, K_SQ, K_MAG, K_WEIGHT, K_WTERM,
 K_SUM) = range(len(PHASOR_VARIABLES), len(PHASOR_VARIABLES) + 10)

assert len(REAL_VARIABLES) == SUM + 1 and len(RECIP_VARIABLES) == K_SUM + 1
#: Terms of the erfcx polynomial (the kernel's ``coef`` has this length).
N_COEF = len(COEFFICIENTS)


# ------------------------------------------------------------------ real space --
_erfcx = make_erfcx(N_COEF, PP, PX, ONE, DEN, T, TA, TAT, TB, U, COEF, HU, H)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _screened(e, s, par, coef):
    """``erfc(gamma r) / r`` at ``s = r**2`` (``phi``) by the erfc form."""
    inv_r = rsqrt(e, s, INV_R)
    x = mul(e, const(e, par[1], GAMMA), mul(e, s, inv_r, R), X)
    h = _erfcx(e, x, par[2], par[3], par[4], par[5], coef)
    gauss = exp(e, mul(e, const(e, par[6], NEG_G2), s, ARG), GAUSS)
    return mul(e, mul(e, gauss, h, ERFC), inv_r, PHI)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _position(e, f0, f1, f2, lat, c):
    """Component c of ``sum_k frac_k lattice[k]`` (``pos``, bohr)."""
    acc = acc_add(e, acc_zero(e, POS), mul(e, f0, const(e, lat[0, c], LAT), PTERM), POS)
    acc = acc_add(e, acc, mul(e, f1, const(e, lat[1, c], LAT), PTERM), POS)
    return acc_value(e, acc_add(e, acc, mul(e, f2, const(e, lat[2, c], LAT), PTERM), POS), POS)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _halo(e, f, fb, lat, boxes, reach, shifts, ball, q, pos, hb, qb, first, cnt):
    """Fill the box lists of :mod:`.halo`: ``pos`` (3, N) the charges' ``pos`` words, ``hb``
    (n_boxes, 3, cap) the ``ipos`` words of the images, ``qb`` (n_boxes, cap) their
    charges, ``first[b, j]`` the first entry of charge j in box b (``first[b, N]`` =
    ``cnt[b]`` the length of the list)."""
    n = f.shape[0]
    nb0, nb1, nb2 = boxes[0], boxes[1], boxes[2]
    for j in range(n):
        f0, f1, f2 = load(e, f[j, 0], FRAC), load(e, f[j, 1], FRAC), load(e, f[j, 2], FRAC)
        for c in range(3):
            pos[c, j] = store(e, _position(e, f0, f1, f2, lat, c))
    cnt[:] = 0
    for j in range(n):
        first[:, j] = cnt
        p0, p1, p2 = load(e, pos[0, j], POS), load(e, pos[1, j], POS), load(e, pos[2, j], POS)
        for n0 in range(-shifts[0], shifts[0] + 1):
            g0 = fb[j, 0] + n0  # the image's fractional coordinates
            lo0, hi0 = box_range(g0, reach[0], nb0)
            if lo0 > hi0:
                continue
            for n1 in range(-shifts[1], shifts[1] + 1):
                g1 = fb[j, 1] + n1
                lo1, hi1 = box_range(g1, reach[1], nb1)
                if lo1 > hi1:
                    continue
                for n2 in range(-shifts[2], shifts[2] + 1):
                    g2 = fb[j, 2] + n2
                    lo2, hi2 = box_range(g2, reach[2], nb2)
                    if lo2 > hi2:
                        continue
                    r0 = n0 * lat[0, 0] + n1 * lat[1, 0] + n2 * lat[2, 0]
                    r1 = n0 * lat[0, 1] + n1 * lat[1, 1] + n2 * lat[2, 1]
                    r2 = n0 * lat[0, 2] + n1 * lat[1, 2] + n2 * lat[2, 2]
                    w0 = store(e, add(e, p0, const(e, r0, IMAGE), IPOS))
                    w1 = store(e, add(e, p1, const(e, r1, IMAGE), IPOS))
                    w2 = store(e, add(e, p2, const(e, r2, IMAGE), IPOS))
                    for b0 in range(lo0, hi0 + 1):
                        t0 = box_gap(g0, b0, nb0)
                        for b1 in range(lo1, hi1 + 1):
                            t1 = t0 + box_gap(g1, b1, nb1)
                            for b2 in range(lo2, hi2 + 1):
                                if t1 + box_gap(g2, b2, nb2) >= ball:
                                    continue
                                b = (b0 * nb1 + b1) * nb2 + b2
                                m = cnt[b]
                                hb[b, 0, m], hb[b, 1, m], hb[b, 2, m] = w0, w1, w2
                                qb[b, m] = q[j]
                                cnt[b] = m + 1
    first[:, n] = cnt


@njit
def _real_walker(e, f, fb, lat, boxes, reach, shifts, ball, q, par, coef, buf, out, w):
    pos, hb, qb, first, cnt, sall, sbuf, qf = buf
    n = f.shape[0]
    _halo(e, f, fb, lat, boxes, reach, shifts, ball, q, pos, hb, qb, first, cnt)
    total = acc_zero(e, SUM)
    cut2 = const(e, par[0], CUT2)
    for i in range(n):
        b = box_index(fb, i, boxes)
        lo, hi = first[b, i + 1], cnt[b]
        h0, h1, h2, qs = hb[b, 0, lo:hi], hb[b, 1, lo:hi], hb[b, 2, lo:hi], qb[b, lo:hi]
        p0, p1, p2 = load(e, pos[0, i], POS), load(e, pos[1, i], POS), load(e, pos[2, i], POS)
        for k in range(hi - lo):  # every entry's s (vectorises)
            e0 = sub(e, load(e, h0[k], IPOS), p0, DE)
            e1 = sub(e, load(e, h1[k], IPOS), p1, DE)
            e2 = sub(e, load(e, h2[k], IPOS), p2, DE)
            acc = acc_add(e, acc_zero(e, S), mul(e, e0, e0, DE2), S)
            acc = acc_add(e, acc, mul(e, e1, e1, DE2), S)
            sall[k] = store(e, acc_value(e, acc_add(e, acc, mul(e, e2, e2, DE2), S), S))
        count = 0
        for k in range(hi - lo):  # kept if inside (no branch: it is unpredictable)
            sbuf[count] = sall[k]
            qf[count] = qs[k]
            count += 1 if less(e, load(e, sall[k], S), cut2) else 0
        qi = q[i]
        for m in range(count):  # their screened Coulomb terms (vectorises)
            phi = _screened(e, load(e, sbuf[m], S), par, coef)
            total = acc_add(e, total, mul(e, const(e, qi * qf[m], QQ), phi, TERM), SUM)
    out[w] = store(e, acc_value(e, total, SUM))


@njit
def _real_chunk(cv, k, f, fb, lat, boxes, reach, shifts, ball, cap, q, par, coef, out):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    n, nbox, dt, qt = f.shape[1], boxes[0] * boxes[1] * boxes[2], out.dtype, q.dtype
    buf = (np.empty((3, n), dt), np.empty((nbox, 3, cap), dt), np.empty((nbox, cap), qt),
           np.empty((nbox, n + 1), np.int64), np.empty(nbox, np.int64), np.empty(cap, dt),
           np.empty(cap, dt), np.empty(cap, qt))
    for w in range(lo, hi):
        _real_walker(at(c, w), f[w], fb[w], lat, boxes, reach, shifts, ball, q, par, coef,
                     buf, out, w)


@njit(parallel=True, cache=True)
def real_kernel(cv, f, fb, lat, boxes, reach, shifts, ball, cap, q, par, coef, out):
    """``out[w]`` = the real-space Ewald sum (``ewald_real.sum`` words, hartree) of walkers
    ``f`` (n_w, N, 3) ``ewald_real.frac`` words, ``fb`` the same coordinates in float64
    (they decide the halos' lists); ``lat`` (3, 3) the reduced lattice (rows, bohr; a 2D
    cell's third row zero, a slab's ``(0, 0, L_z)``), ``boxes``, ``reach``, ``shifts`` and
    ``cap`` (a box list's capacity, ``N per_charge``) the :class:`.halo.HaloGeometry`, ``q``
    (N,) charges (of the constants' type), ``par`` the constants of
    :data:`REAL_PARAMETERS`, ``coef`` the erfcx polynomial (:data:`N_COEF`), all float64
    (float32 kernels: float32 constants)."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _real_chunk(cv, k, f, fb, lat, boxes, reach, shifts, ball, cap, q, par, coef, out)


# ------------------------------------------------------------ reciprocal space --
@njit
def _recip_walker(e, f, gint, q, weight, nmax, three, out, out_s, w):
    n = f.shape[0]
    # powers per axis, exponent, component and charge: the charge loop reads them in order
    buf = np.empty((3, 2 * nmax + 1, 2, n), out.dtype)
    all_powers(e, f, buf, nmax, three)
    total = acc_zero(e, K_SUM)
    for g in range(gint.shape[0]):
        n0, n1, n2 = gint[g, 0] + nmax, gint[g, 1] + nmax, gint[g, 2] + nmax
        a_re, a_im, b_re, b_im = buf[0, n0, 0], buf[0, n0, 1], buf[1, n1, 0], buf[1, n1, 1]
        c_re, c_im = buf[2, n2, 0], buf[2, n2, 1]
        sre = acc_zero(e, K_SRE)
        sim = acc_zero(e, K_SIM)
        for j in range(n):
            zr, zi = times(e, load(e, a_re[j], PW), load(e, a_im[j], PW),
                           load(e, b_re[j], PW), load(e, b_im[j], PW))
            if three:
                zr, zi = times(e, zr, zi, load(e, c_re[j], PW), load(e, c_im[j], PW))
            qj = const(e, q[j], K_Q)
            sre = acc_add(e, sre, mul(e, qj, zr, K_QCOS), K_SRE)
            sim = acc_add(e, sim, mul(e, qj, zi, K_QSIN), K_SIM)
        re = acc_value(e, sre, K_SRE)
        im = acc_value(e, sim, K_SIM)
        out_s[w, g, 0] = store(e, re)
        out_s[w, g, 1] = store(e, im)
        mag = add(e, mul(e, re, re, K_SQ), mul(e, im, im, K_SQ), K_MAG)
        total = acc_add(e, total, mul(e, const(e, weight[g], K_WEIGHT), mag, K_WTERM), K_SUM)
    out[w] = store(e, acc_value(e, total, K_SUM))


@njit
def _recip_chunk(cv, k, f, gint, q, weight, nmax, three, out, out_s):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    for w in range(lo, hi):
        _recip_walker(at(c, w), f[w], gint, q, weight, nmax, three, out, out_s, w)


@njit(parallel=True, cache=True)
def recip_kernel(cv, f, gint, q, weight, nmax, three, out, out_s):
    """``out[w]`` = the reciprocal-space Ewald sum (``ewald_recip.sum`` words, hartree) and
    ``out_s[w, g]`` = (Re, Im) S(G) (``sre``/``sim`` words) of walkers ``f`` (n_w, N, 3)
    ``ewald_recip.frac`` words; ``gint`` (n_G, 3) int64 integer coordinates of the half set
    (2D: third column 0), ``q`` (N,) charges, ``weight`` (n_G,) (hartree), ``nmax`` =
    max |gint|, ``three``: a 3D cell."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _recip_chunk(cv, k, f, gint, q, weight, nmax, three, out, out_s)
