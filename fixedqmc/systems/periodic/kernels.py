"""Compiled Ewald kernels, written once for every precision (seed 000, Eq. 2-6).

Two named kernels, each with its own precision (its own context), parallel over walkers in
the fixed chunks of :mod:`fixedqmc.numerics.kernel`.  Positions enter as *fractional
coordinates* ``frac`` in [0, 1) of the cell's reduced basis (:class:`Cell.reduced`), shape
(n_walkers, N, 3); a 2D cell pads the third coordinate, the lattice and the images with
zeros (so one source serves 3D and 2D).

``ewald_real``
    ``sum_{i<j} q_i q_j sum_R erfc(gamma |d_ij - R|) / |d_ij - R|`` over the images ``R``
    with ``|d_ij - R|**2 < cut2`` (hartree), the displacement reduced in fractional
    coordinates: ``dfrac = f_i - f_j``, ``nint = round_int(dfrac)``, ``dred = dfrac -
    nint`` in [-1/2, 1/2], ``d_c = sum_k dred_k lattice[k, c]`` (bohr).  Three loops per
    electron i: the displacements of all j > i (a loop that vectorises); per pair, the
    candidate images of its bin (:func:`.pair_geometry.image_candidates`: a few of the
    n_R, every image the cut-off test can accept), ``de = d - R``, ``s = sum de**2``, and
    the ``s < cut2`` kept (no branch); then per kept term (a loop that vectorises in float
    contexts): ``inv_r = rsqrt(s)``, ``r = s inv_r``,
    ``x = gamma r``, the erfc form of :mod:`~fixedqmc.systems.periodic.erfc_form`
    (``den = 1 + P x``, ``t = recip(den)``, ``u = T_A t + T_B``, Horner ``h``, ``gauss =
    exp(neg_g2 s)``, ``erfc = gauss h``), ``phi = erfc inv_r``, ``term = qq phi``,
    accumulated in ``sum``.
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
                                      chunk_bounds, const, less, load, mul, n_chunks, store)
from fixedqmc.numerics.kernel_ops import exp, rsqrt
from fixedqmc.systems.periodic.erfc_form import COEFFICIENTS, ERFCX_VARIABLES, make_erfcx
from fixedqmc.systems.periodic.pair_geometry import (BINS, PAIR_VARIABLES, bin_of,
                                                     displacement, to_image)
from fixedqmc.systems.periodic.phasors import PHASOR_VARIABLES, PW, all_powers, times

REAL_VARIABLES = PAIR_VARIABLES + (
    ("cut2", "real_cutoff**2 (bohr**2)"),
    ("inv_r", "1 / |d - R| (1/bohr)"),
    ("r", "|d - R| (bohr)"),
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

(FRAC, DFRAC, NINT, DRED, LAT, DTERM, D, IMAGE, DE, DE2, S, CUT2, INV_R, R, GAMMA, X, PP,
 PX, ONE, DEN, T, TA, TAT, TB, U, COEF, HU, H, NEG_G2, ARG, GAUSS, ERFC, PHI, QQ, TERM,
 SUM) = range(36)
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


@njit
def _real_walker(e, f, fb, lat, img, cand, ncand, q, par, coef, out, w):
    n = f.shape[0]
    dbuf = np.empty((3, n), out.dtype)
    bbuf = np.empty(n, np.int64)
    sbuf = np.empty(n * cand.shape[1], out.dtype)
    qbuf = np.empty(n * cand.shape[1], out.dtype)
    total = acc_zero(e, SUM)
    cut2 = const(e, par[0], CUT2)
    for i in range(n):
        fi0, fi1, fi2 = load(e, f[i, 0], FRAC), load(e, f[i, 1], FRAC), load(e, f[i, 2], FRAC)
        for j in range(i + 1, n):  # displacements and bins (vectorises)
            d0, d1, d2 = displacement(e, fi0, fi1, fi2, load(e, f[j, 0], FRAC),
                                      load(e, f[j, 1], FRAC), load(e, f[j, 2], FRAC), lat)
            dbuf[0, j], dbuf[1, j], dbuf[2, j] = store(e, d0), store(e, d1), store(e, d2)
            bbuf[j] = bin_of(fb, i, j, BINS)
        count = 0
        for j in range(i + 1, n):  # the candidate images inside the cut-off
            d0, d1, d2 = load(e, dbuf[0, j], D), load(e, dbuf[1, j], D), load(e, dbuf[2, j], D)
            b = bbuf[j]
            qq = store(e, const(e, q[i] * q[j], QQ))
            for c in range(ncand[b]):  # kept if inside (no branch: it is unpredictable)
                e0, e1, e2, s = to_image(e, d0, d1, d2, img, cand[b, c])
                sbuf[count] = store(e, s)
                qbuf[count] = qq
                count += 1 if less(e, s, cut2) else 0
        for m in range(count):  # their screened Coulomb terms (vectorises)
            phi = _screened(e, load(e, sbuf[m], S), par, coef)
            total = acc_add(e, total, mul(e, load(e, qbuf[m], QQ), phi, TERM), SUM)
    out[w] = store(e, acc_value(e, total, SUM))


@njit
def _real_chunk(cv, k, f, fb, lat, img, cand, ncand, q, par, coef, out):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    for w in range(lo, hi):
        _real_walker(at(c, w), f[w], fb[w], lat, img, cand, ncand, q, par, coef, out, w)


@njit(parallel=True, cache=True)
def real_kernel(cv, f, fb, lat, img, cand, ncand, q, par, coef, out):
    """``out[w]`` = the real-space Ewald sum (``ewald_real.sum`` words, hartree) of walkers
    ``f`` (n_w, N, 3) ``ewald_real.frac`` words, ``fb`` the same coordinates in float64
    (they choose each pair's candidate images); ``lat`` (3, 3) the reduced lattice (rows,
    bohr), ``img`` (3, n_R) image vectors (columns, bohr), ``cand`` and ``ncand`` the
    candidate tables of :func:`.pair_geometry.image_candidates` (with :data:`.BINS`), ``q``
    (N,) charges, ``par`` the constants of :data:`REAL_PARAMETERS`, ``coef`` the erfcx
    polynomial (:data:`N_COEF`), all float64 (float32 kernels: float32 constants)."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _real_chunk(cv, k, f, fb, lat, img, cand, ncand, q, par, coef, out)


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
