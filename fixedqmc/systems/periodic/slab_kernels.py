"""The compiled reciprocal-space kernel of charges off a 2D-periodic plane (a slab), written
once for every precision (seed 000, Eq. 5 with the height kept).

``slab_recip`` is a named kernel with its own precision (its own context), parallel over
walkers in the fixed chunks of :mod:`fixedqmc.numerics.kernel`.  It computes, per walker,
the two position-dependent sums of :mod:`~fixedqmc.systems.periodic.ewald_slab` that do
not factorise into structure factors (hartree):

* ``sum``: the cross pairs of the reciprocal part, ``sum_{i<j} q_i q_j sum_G (2 pi / A)
  F(G, z_ij) / G cos(G . rho_ij)`` over the half set of G vectors;
* ``height``: the height part of the G = 0 term, ``-(2 pi / A) sum_{i<j} q_i q_j [h(z_ij) -
  h(0)]``.

Positions enter as fractional coordinates ``frac`` (n_walkers, N, 3): the first two the
in-plane reduced coordinates in [0, 1), the third the height ``(z - z_lo) / L_z`` in
[0, 1/2) (:class:`~fixedqmc.systems.periodic.slab_evaluator.SlabEwaldEvaluator`).  The G
vectors come grouped in shells of equal ``G = |G|`` (F depends on G only through G), each
shell's constants in ``shell[s] = (a, -a**2, -G, wg)`` with ``a = G / 2 gamma`` and ``wg =
(2 pi / A) / G``.  The steps (variables in the order of :data:`SLAB_RECIP_VARIABLES`):

1. Per charge and in-plane axis the phasor powers of :func:`.phasors.all_powers` (shared
   with ``ewald_recip``), then per G and charge ``z_j = e^{i G . rho_j}`` (one
   :func:`.phasors.times`, components ``zz``), kept (n_G, 2, N).
2. Per pair i < j: ``dfz = fz_i - fz_j``, ``dz = dfz lz``, ``absz = |dz|``, ``tz = gamma
   absz``, ``tz2 = tz tz``, ``qq`` (const ``q_i q_j``, formed in the last loop).
3. Per shell (the stable form of F, :func:`.ewald_slab.slab_factor`; ``erfcx`` the wide
   form of :mod:`~fixedqmc.systems.periodic.erfc_form` at ``x = min(arg, x_max)``, beyond
   which its term is below ``e**-72``), without a branch: ``apt = a + tz``, ``amt = a -
   tz``, ``absd = |amt|``, ``h1 = erfcx(apt)``, ``h2 = erfcx(absd)``, ``hs`` = both ``h1 -
   h2`` and ``h1 + h2`` formed, the first selected where ``a < tz``; ``darg = -a**2 - tz2``
   (const ``neg_a2``), ``damp = exp(darg)``, ``f = damp hs``; ``garg = -G absz`` (const
   ``neg_g``), ``eg = exp(garg)``, ``eg2 = two eg``, ``f + eg2`` (into ``f``) selected
   where ``a < tz``.  Then per G of the shell ``cc = Re z_i Re z_j + Im z_i Im z_j``
   (products ``cp``) into the accumulator ``csum``; ``fw = wg f``, ``fterm = fw csum``
   into the pair's accumulator ``pair``; after the shells ``term = qq pair`` into ``sum``.
4. Per pair the height term: ``narg = 0 - tz2``, ``gz = exp(narg)``, ``erfcz = gz
   erfcx(min(tz, x_max))``, ``erfz = one - erfcz``, ``zerf = absz erfz``, ``gm1 = gz -
   one``, ``hg = c0 gm1`` (const ``c0 = 1 / (gamma sqrt(pi))``), ``hz = zerf + hg`` (``=
   h(z) - h(0)``, bohr), ``hterm = qq hz`` into ``hsum``; at the end ``height = neg_w0
   hsum`` (const ``neg_w0 = -2 pi / A``).

Steps 2-4 are loops over the list of pairs (i < j), each pair's sums in accumulator arrays,
so that the loops vectorise in float contexts (F is branch-free for that; the cosines read
the plane waves of i and j by index).

Cost per walker: O(N**2 (n_shells + n_G)), two ``erfcx`` forms and two exponentials per
pair and shell (the float64 reference :func:`.ewald_slab.slab_ewald_energy` does the
same work in numpy).  The constants come in ``par`` in the order of
:data:`SLAB_PARAMETERS`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_array, acc_array_add, acc_array_clear,
                                      acc_array_value, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, less, load, mul, n_chunks, store,
                                      sub)
from fixedqmc.numerics.kernel_ops import abs_, exp, minimum, select
from fixedqmc.systems.periodic.erfc_form import ERFCX_VARIABLES, WIDE_FORM, make_erfcx
from fixedqmc.systems.periodic.phasors import PHASOR_VARIABLES, PW, ZZ, all_powers, times

SLAB_RECIP_VARIABLES = PHASOR_VARIABLES + (
    ("lz", "L_z, the length of the height axis (bohr)"),
    ("dfz", "fz_i - fz_j (heights over L_z)"),
    ("dz", "z_i - z_j (bohr)"),
    ("absz", "|z_i - z_j| (bohr)"),
    ("gamma", "gamma (1/bohr)"),
    ("tz", "gamma |z|"),
    ("tz2", "(gamma z)**2"),
    ("a", "G / 2 gamma of a shell"),
    ("apt", "a + gamma |z|"),
    ("amt", "a - gamma |z|"),
    ("absd", "|a - gamma |z||"),
    ("xmax", "the largest argument of the erfcx form"),
    ("x", "an argument of the erfcx form, min(arg, x_max)"),
) + ERFCX_VARIABLES + (
    ("hs", "erfcx(a + tz) +- erfcx(|a - tz|)"),
    ("neg_a2", "-a**2 of a shell"),
    ("darg", "-a**2 - (gamma z)**2"),
    ("damp", "exp(-a**2 - (gamma z)**2)"),
    ("f", "F(G, z) (Eq. 5)"),
    ("neg_g", "-G of a shell (1/bohr)"),
    ("garg", "-G |z|"),
    ("eg", "exp(-G |z|)"),
    ("two", "2"),
    ("eg2", "2 exp(-G |z|)"),
    ("cp", "a product of plane-wave components of charges i and j"),
    ("cc", "cos(G . rho_ij)"),
    ("csum", "sum over a shell's G of cos(G . rho_ij) (sum)"),
    ("wg", "(2 pi / A) / G of a shell (bohr)"),
    ("fw", "(2 pi / A) F / G (bohr)"),
    ("fterm", "fw csum (hartree per unit charge squared)"),
    ("pair", "sum over shells of fterm (sum)"),
    ("qq", "q_i q_j"),
    ("term", "q_i q_j pair (hartree)"),
    ("sum", "the cross pairs of the reciprocal sum (sum, hartree)"),
    ("narg", "-(gamma z)**2"),
    ("gz", "exp(-(gamma z)**2)"),
    ("erfcz", "erfc(gamma |z|)"),
    ("erfz", "erf(gamma |z|)"),
    ("zerf", "|z| erf(gamma |z|) (bohr)"),
    ("gm1", "exp(-(gamma z)**2) - 1"),
    ("c0", "1 / (gamma sqrt(pi)) (bohr)"),
    ("hg", "c0 gm1 (bohr)"),
    ("hz", "h(z) - h(0) (bohr)"),
    ("hterm", "q_i q_j (h(z) - h(0)) (bohr)"),
    ("hsum", "sum over pairs of hterm (sum, bohr)"),
    ("neg_w0", "-2 pi / A (1/bohr**2)"),
    ("height", "the height part of the background (hartree)"),
)
(LZ, DFZ, DZ, ABSZ, GAMMA, TZ, TZ2, A, APT, AMT, ABSD, XMAX, X, PP, PX, ONE, DEN, T, TA,
 TAT, TB, U, COEF, HU, H, HS, NEG_A2, DARG, DAMP, F, NEG_G, GARG, EG, TWO, EG2, CP, CC,
 CSUM, WG, FW, FTERM, PAIR, QQ, TERM, SUM, NARG, GZ, ERFCZ, ERFZ, ZERF, GM1, C0, HG, HZ,
 HTERM, HSUM, NEG_W0, HEIGHT) = range(len(PHASOR_VARIABLES), len(SLAB_RECIP_VARIABLES))
FRAC = 5  # the phasors' coordinate variable (PHASOR_VARIABLES)
#: The order of the constants in ``par`` of :func:`slab_recip_kernel`.
SLAB_PARAMETERS = ("lz", "gamma", "xmax", "p", "one", "ta", "tb", "two", "c0", "neg_w0")
#: Terms of the wide erfcx polynomial (the kernel's ``coef`` has this length).
N_COEF = len(WIDE_FORM.coefficients)

_erfcx = make_erfcx(N_COEF, PP, PX, ONE, DEN, T, TA, TAT, TB, U, COEF, HU, H)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _form(e, y, par, coef):
    """erfcx of the wide form at ``min(y, x_max)`` (``x``, then ``h``)."""
    x = minimum(e, y, const(e, par[2], XMAX), X)
    return _erfcx(e, x, par[3], par[4], par[5], par[6], coef)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _factor(e, tz, tz2, absz, sh, par, coef):
    """F(G, z) of one shell (``f``) by the stable form (module docstring, step 3), without
    a branch: both sums ``hs`` and the term ``eg2`` are formed, then selected."""
    a = const(e, sh[0], A)
    amt = sub(e, a, tz, AMT)
    h1 = _form(e, add(e, a, tz, APT), par, coef)
    h2 = _form(e, abs_(e, amt, ABSD), par, coef)
    below = less(e, amt, const(e, 0.0, AMT))
    hs = select(e, below, sub(e, h1, h2, HS), add(e, h1, h2, HS))
    damp = exp(e, sub(e, const(e, sh[1], NEG_A2), tz2, DARG), DAMP)
    f = mul(e, damp, hs, F)
    eg = exp(e, mul(e, const(e, sh[2], NEG_G), absz, GARG), EG)
    return select(e, below, add(e, f, mul(e, const(e, par[7], TWO), eg, EG2), F), f)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _height(e, tz, tz2, absz, par, coef):
    """``h(z) - h(0)`` (``hz``, bohr) of one pair (module docstring, step 4)."""
    gz = exp(e, sub(e, const(e, 0.0, TZ2), tz2, NARG), GZ)
    erfz = sub(e, const(e, par[4], ONE), mul(e, gz, _form(e, tz, par, coef), ERFCZ), ERFZ)
    hg = mul(e, const(e, par[8], C0), sub(e, gz, const(e, par[4], ONE), GM1), HG)
    return add(e, mul(e, absz, erfz, ZERF), hg, HZ)


@njit
def _walker(e, f, pairs, gint, start, shell, q, par, coef, nmax, out, w):
    """One walker.  Every loop after the plane waves runs over the pairs ``(i, j) =
    pairs[:, p]`` (i < j; loops that vectorise in float contexts); the per-pair sums
    ``csum`` and ``pair`` are accumulator arrays, so each pair's sums get the terms of the
    module docstring in its order."""
    n = f.shape[0]
    n_p = pairs.shape[1]
    pi, pj = pairs[0], pairs[1]
    dt = out.dtype
    buf = np.empty((3, 2 * nmax + 1, 2, n), dt)
    all_powers(e, f, buf, nmax, False)
    n_g = gint.shape[0]
    z = np.empty((n_g, 2, n), dt)
    for g in range(n_g):
        a_re, a_im = buf[0, gint[g, 0] + nmax, 0], buf[0, gint[g, 0] + nmax, 1]
        b_re, b_im = buf[1, gint[g, 1] + nmax, 0], buf[1, gint[g, 1] + nmax, 1]
        for j in range(n):
            zr, zi = times(e, load(e, a_re[j], PW), load(e, a_im[j], PW),
                           load(e, b_re[j], PW), load(e, b_im[j], PW))
            z[g, 0, j], z[g, 1, j] = store(e, zr), store(e, zi)
    lz = const(e, par[0], LZ)
    gamma = const(e, par[1], GAMMA)
    zb = np.empty((3, n_p), dt)  # per pair: |z|, gamma |z|, (gamma z)**2
    for p in range(n_p):
        dfz = sub(e, load(e, f[pi[p], 2], FRAC), load(e, f[pj[p], 2], FRAC), DFZ)
        absz = abs_(e, mul(e, dfz, lz, DZ), ABSZ)
        tz = mul(e, gamma, absz, TZ)
        zb[0, p], zb[1, p], zb[2, p] = store(e, absz), store(e, tz), store(e, mul(e, tz, tz,
                                                                                   TZ2))
    fb = np.empty(n_p, dt)       # per pair: F of the current shell
    csum = acc_array(e, n_p, CSUM)
    pair = acc_array(e, n_p, PAIR)
    for s in range(shell.shape[0]):
        sh = shell[s]
        for p in range(n_p):
            fb[p] = store(e, _factor(e, load(e, zb[1, p], TZ), load(e, zb[2, p], TZ2),
                                     load(e, zb[0, p], ABSZ), sh, par, coef))
        acc_array_clear(e, csum)
        for g in range(start[s], start[s + 1]):
            zr, zi = z[g, 0], z[g, 1]
            for p in range(n_p):
                i, j = pi[p], pj[p]
                cc = add(e, mul(e, load(e, zr[i], ZZ), load(e, zr[j], ZZ), CP),
                         mul(e, load(e, zi[i], ZZ), load(e, zi[j], ZZ), CP), CC)
                acc_array_add(e, csum, p, cc, CSUM)
        wg = const(e, sh[3], WG)
        for p in range(n_p):
            fw = mul(e, wg, load(e, fb[p], F), FW)
            acc_array_add(e, pair, p, mul(e, fw, acc_array_value(e, csum, p, CSUM), FTERM),
                          PAIR)
    total = acc_zero(e, SUM)
    hsum = acc_zero(e, HSUM)
    for p in range(n_p):
        qq = const(e, q[pi[p]] * q[pj[p]], QQ)
        total = acc_add(e, total, mul(e, qq, acc_array_value(e, pair, p, PAIR), TERM), SUM)
        hz = _height(e, load(e, zb[1, p], TZ), load(e, zb[2, p], TZ2),
                     load(e, zb[0, p], ABSZ), par, coef)
        hsum = acc_add(e, hsum, mul(e, qq, hz, HTERM), HSUM)
    out[w, 0] = store(e, acc_value(e, total, SUM))
    out[w, 1] = store(e, mul(e, const(e, par[9], NEG_W0), acc_value(e, hsum, HSUM), HEIGHT))


@njit
def _chunk(cv, k, f, pairs, gint, start, shell, q, par, coef, nmax, out):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    for w in range(lo, hi):
        _walker(at(c, w), f[w], pairs, gint, start, shell, q, par, coef, nmax, out, w)


@njit(parallel=True, cache=True)
def slab_recip_kernel(cv, f, pairs, gint, start, shell, q, par, coef, nmax, out):
    """``out[w, 0]`` = the cross-pair reciprocal sum (``slab_recip.sum`` words, hartree) and
    ``out[w, 1]`` = the height part of the background (``height`` words, hartree) of walkers
    ``f`` (n_w, N, 3) ``slab_recip.frac`` words (module docstring); ``pairs`` (2, P) int64
    the pairs i < j in order (i, then j); ``gint`` (n_G, 2) int64
    in-plane integer coordinates of the half set, grouped by shell, shell s holding rows
    ``start[s]:start[s + 1]``; ``shell`` (n_shells, 4) float64 ``(a, -a**2, -G, wg)``;
    ``q`` (N,) charges; ``par`` the constants of :data:`SLAB_PARAMETERS`; ``coef`` the wide
    erfcx polynomial (:data:`N_COEF`); ``nmax`` = max |gint|."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _chunk(cv, k, f, pairs, gint, start, shell, q, par, coef, nmax, out)
