"""Compiled kernels of a Gaussian-basis molecule, written once for every precision.

The orbital pipeline of seed 001 (Sec. 3 and Appendix B: electron-nucleus distances, the
LUT exponential of each primitive, the contraction adder tree, the MO multiply-accumulate
streaming one Slater-matrix row at a time) as five named kernels, each with its own
precision; values cross from one to the next with
:func:`~fixedqmc.numerics.kernel.convert` (rounded once into the receiving formats):

``distance``
    ``d = x - A`` per component (bohr), ``d2 = d * d``, ``r2 = sum d2`` (bohr**2).
``exp``
    ``arg = neg_alpha * r2`` with ``neg_alpha = -a_p`` and ``value = exp(arg)`` (the LUT
    exponential in fixed point, :func:`~fixedqmc.numerics.kernel_ops.exp`).
``contraction``
    the contracted radial part ``R = sum_p c_p e_p`` (Eq. 8) with ``R' = dR/dr2`` as
    ``dradial = sum_p (-2 a_p c_p) e_p = 2 R'`` and ``ddradial = sum_p 4 a_p**2 c_p e_p = 4 R''``;
    the cartesian factor ``P = d_x**lx d_y**ly d_z**lz`` (``pow`` powers, ``ang`` products),
    the AO ``ao = P R``; for derivatives ``grad_c = dP/dd_c R + (P d_c) 2R'`` and
    ``lap = R lap P + P Q`` with ``Q = (2 l + 3) 2R' + r2 4R''`` (``radlap``).
``orbitals``
    MO values ``phi_k = sum_mu C[mu, k] ao_mu`` (an accumulator per orbital, streamed over
    the AOs of the point).
``derivatives``
    MO gradients and Laplacians ``sum_mu C[mu, k] grad ao_mu`` and ``sum_mu C[mu, k] lap
    ao_mu`` likewise.

Screening (identical at every precision, so paired estimates see the same terms): a
primitive with ``a_p |r - A|**2 > CUT`` (e**-36 ~ 2e-16 of its peak) is skipped, a shell
whose primitives are all skipped gives zero AOs, decided on the float64 positions.  A
shell's primitives come by ascending exponent, so the loop stops at the first one skipped
(one exit branch per shell instead of a test per primitive: 7 % faster for 64 H2).

``coulomb``: per walker ``ee = sum_{i<j} 1/r_ij`` and ``en = sum_{i,A} Z_A / r_iA`` with
``1/r = rsqrt(r2)`` (hartree); the nuclear repulsion is the same pair sum over nuclei.
The kinetic ``energy`` kernel is shared with the electron gas
(:mod:`fixedqmc.systems.slater`).  Every kernel is parallel over points or walkers in the
fixed chunks of :mod:`fixedqmc.numerics.kernel` (results do not depend on the thread
count).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_array, acc_array_add, acc_array_clear,
                                      acc_array_value, acc_fits, acc_value, acc_zero, add, at,
                                      chunk, chunk_bounds, const, convert, events, load, mul,
                                      n_chunks, quiet, store, sub)
from fixedqmc.numerics.kernel_ops import exp, rsqrt

#: Screening: primitives with a_p r**2 > CUT are skipped.
CUT = 36.0

DISTANCE_VARIABLES = (("x", "an electron coordinate (bohr)"),
                      ("nucleus", "a nuclear coordinate (bohr)"),
                      ("d", "x - A (bohr)"), ("d2", "d**2"), ("r2", "|r - A|**2 (sum)"))
EXP_VARIABLES = (("r2", "|r - A|**2"), ("neg_alpha", "-a_p (1/bohr**2)"),
                 ("arg", "-a_p |r - A|**2"), ("value", "exp(arg)"))
CONTRACTION_VARIABLES = (
    ("d", "x - A"), ("r2", "|r - A|**2"), ("value", "a primitive exponential e_p"),
    ("coeff", "c_p"), ("term", "c_p e_p"), ("radial", "R (sum)"),
    ("dcoeff", "-2 a_p c_p"), ("dterm", "-2 a_p c_p e_p"), ("dradial", "2 R' (sum)"),
    ("ddcoeff", "4 a_p**2 c_p"), ("ddterm", "4 a_p**2 c_p e_p"), ("ddradial", "4 R'' (sum)"),
    ("int", "small integer factors (l_c, l_c (l_c - 1), 2 l + 3)"),
    ("pow", "powers d_c**n"), ("ang", "cartesian factors P"), ("ao", "AO value P R"),
    ("dang", "dP/dd_c"), ("pd", "P d_c"), ("gterm", "a gradient term"),
    ("grad", "AO gradient component (sum)"), ("lterm", "a Laplacian term"),
    ("lap_p", "lap P (sum)"), ("qa", "(2 l + 3) 2R'"), ("qb", "r2 4R''"),
    ("radlap", "Q = qa + qb"), ("lap", "AO Laplacian (sum)"))
ORBITALS_VARIABLES = (("ao", "an AO value"), ("coeff", "an MO coefficient C[mu, k]"),
                      ("term", "C[mu, k] ao_mu"), ("value", "an MO value (sum)"))
DERIVATIVES_VARIABLES = (("dao", "an AO gradient component or Laplacian"),
                         ("coeff", "an MO coefficient"), ("term", "C[mu, k] dao_mu"),
                         ("grad", "an MO gradient component (sum)"),
                         ("lap", "an MO Laplacian (sum)"))
COULOMB_VARIABLES = (("x", "a coordinate (bohr)"), ("nucleus", "a nuclear coordinate"),
                     ("d", "a coordinate difference"), ("d2", "its square"),
                     ("r2", "a squared distance (sum)"), ("inv_r", "1 / r (1/bohr)"),
                     ("charge", "Z_A or Z_A Z_B"), ("q_inv_r", "Z / r"),
                     ("ee", "electron-electron energy (sum, Ha)"),
                     ("en", "electron-nucleus attraction, positive (sum, Ha)"),
                     ("nn", "nucleus-nucleus energy (sum, Ha)"))

X, NUC, D, D2, R2 = range(5)
E_R2, E_NALPHA, E_ARG, E_VALUE = range(4)
(C_D, C_R2, C_VALUE, C_COEFF, C_TERM, C_RADIAL, C_DCOEFF, C_DTERM, C_DRADIAL, C_DDCOEFF,
 C_DDTERM, C_DDRADIAL, C_INT, C_POW, C_ANG, C_AO, C_DANG, C_PD, C_GTERM, C_GRAD, C_LTERM,
 C_LAPP, C_QA, C_QB, C_RADLAP, C_LAP) = range(26)
M_AO, M_COEFF, M_TERM, M_VALUE = range(4)
G_DAO, G_COEFF, G_TERM, G_GRAD, G_LAP = range(5)
(V_X, V_NUC, V_D, V_D2, V_R2, V_INV_R, V_CHARGE, V_QINV, V_EE, V_EN, V_NN) = range(11)


# ----------------------------------------------------------------- cartesian factors --
@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _power(e, d, n):
    """d**n (n >= 0) as a value of ``pow``."""
    p = const(e, 1.0, C_POW)
    for _ in range(n):
        p = mul(e, p, d, C_POW)
    return p


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _monomial(e, dx, dy, dz, lx, ly, lz):
    """dx**lx dy**ly dz**lz as a value of ``ang``."""
    return mul(e, mul(e, _power(e, dx, lx), _power(e, dy, ly), C_ANG), _power(e, dz, lz),
               C_ANG)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _grad_component(ea, dx, dy, dz, dc, P, R, dR, lx, ly, lz, c):
    """d/dd_c of P R: ``l_c P/d_c R + (P d_c) 2R'`` (``dc`` = d_c) as a ``grad`` value."""
    g = acc_zero(ea, C_GRAD)
    lc = (lx, ly, lz)[c]
    if lc > 0:
        dP = mul(ea, const(ea, lc, C_INT), _monomial(ea, dx, dy, dz, lx - (c == 0),
                                                     ly - (c == 1), lz - (c == 2)), C_DANG)
        g = acc_add(ea, g, mul(ea, dP, R, C_GTERM), C_GRAD)
    g = acc_add(ea, g, mul(ea, mul(ea, P, dc, C_PD), dR, C_GTERM), C_GRAD)
    return acc_value(ea, g, C_GRAD)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _ao_value(ea, dx, dy, dz, R, pw, i, ao):
    """Writes ``ao[i]`` (a contraction word), the value ``P R`` of the cartesian AO with
    powers ``pw`` at ``d = (dx, dy, dz)``; returns P."""
    P = _monomial(ea, dx, dy, dz, pw[0], pw[1], pw[2])
    ao[i] = store(ea, mul(ea, P, R, C_AO))
    return P


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _ao_derivatives(ea, dx, dy, dz, r2, P, R, dR, ddR, l, pw, i, dao):
    """Writes ``dao[i, 0:4]`` (contraction words): the gradient and Laplacian of the
    cartesian AO of :func:`_ao_value`."""
    lx, ly, lz = pw[0], pw[1], pw[2]
    dao[i, 0] = store(ea, _grad_component(ea, dx, dy, dz, dx, P, R, dR, lx, ly, lz, 0))
    dao[i, 1] = store(ea, _grad_component(ea, dx, dy, dz, dy, P, R, dR, lx, ly, lz, 1))
    dao[i, 2] = store(ea, _grad_component(ea, dx, dy, dz, dz, P, R, dR, lx, ly, lz, 2))
    lp = acc_zero(ea, C_LAPP)
    for c in range(3):
        lc = pw[c]
        if lc > 1:
            lp = acc_add(ea, lp, mul(ea, const(ea, lc * (lc - 1), C_INT),
                                     _monomial(ea, dx, dy, dz, lx - 2 * (c == 0),
                                               ly - 2 * (c == 1), lz - 2 * (c == 2)),
                                     C_LTERM), C_LAPP)
    Q = add(ea, mul(ea, const(ea, 2 * l + 3, C_INT), dR, C_QA), mul(ea, r2, ddR, C_QB),
            C_RADLAP)
    lap = acc_add(ea, acc_zero(ea, C_LAP), mul(ea, R, acc_value(ea, lp, C_LAPP), C_LTERM),
                  C_LAP)
    lap = acc_add(ea, lap, mul(ea, P, Q, C_LTERM), C_LAP)
    dao[i, 3] = store(ea, acc_value(ea, lap, C_LAP))


# ------------------------------------------------------------------- one point --
@njit
def _point_aos(ed, ex, ea, derivs, pf, pt, basis, ao, dao, active):
    """The cartesian AOs at one point: ``pf`` (3,) float64 (screening), ``pt`` (3,) words of
    ``distance.x``; writes ``ao``/``dao`` (contraction words) and returns the number of
    AOs in ``active`` (their indices; the others are screened out)."""
    coords, atom_shell, shell_l, shell_prim, shell_ao, powers, exps, coeffs, cut = basis
    n_active = 0
    x0, x1, x2 = load(ed, pt[0], X), load(ed, pt[1], X), load(ed, pt[2], X)
    for a in range(coords.shape[0]):
        r2f = ((pf[0] - coords[a, 0]) ** 2 + (pf[1] - coords[a, 1]) ** 2
               + (pf[2] - coords[a, 2]) ** 2)
        if r2f > cut[a]:
            continue
        d0 = sub(ed, x0, const(ed, coords[a, 0], NUC), D)
        d1 = sub(ed, x1, const(ed, coords[a, 1], NUC), D)
        d2 = sub(ed, x2, const(ed, coords[a, 2], NUC), D)
        acc = acc_add(ed, acc_zero(ed, R2), mul(ed, d0, d0, D2), R2)
        acc = acc_add(ed, acc, mul(ed, d1, d1, D2), R2)
        r2 = acc_value(ed, acc_add(ed, acc, mul(ed, d2, d2, D2), R2), R2)
        r2x = convert(ex, r2, ed, E_R2)
        r2a = convert(ea, r2, ed, C_R2)
        dcx, dcy, dcz = (convert(ea, d0, ed, C_D), convert(ea, d1, ed, C_D),
                         convert(ea, d2, ed, C_D))
        for s in range(atom_shell[a], atom_shell[a + 1]):
            R = acc_zero(ea, C_RADIAL)
            dR = acc_zero(ea, C_DRADIAL)
            ddR = acc_zero(ea, C_DDRADIAL)
            used = False
            for p in range(shell_prim[s], shell_prim[s + 1]):  # exponents ascending
                alpha = exps[p]
                if alpha * r2f > CUT:
                    break  # and so are the steeper primitives
                used = True
                ev = exp(ex, mul(ex, const(ex, -alpha, E_NALPHA), r2x, E_ARG), E_VALUE)
                v = convert(ea, ev, ex, C_VALUE)
                R = acc_add(ea, R, mul(ea, const(ea, coeffs[p], C_COEFF), v, C_TERM),
                            C_RADIAL)
                if derivs:
                    c = coeffs[p]
                    dR = acc_add(ea, dR, mul(ea, const(ea, -2.0 * alpha * c, C_DCOEFF), v,
                                             C_DTERM), C_DRADIAL)
                    ddR = acc_add(ea, ddR, mul(ea, const(ea, 4.0 * alpha * alpha * c,
                                                         C_DDCOEFF), v, C_DDTERM),
                                  C_DDRADIAL)
            if not used:
                continue
            Rv = acc_value(ea, R, C_RADIAL)
            if derivs:
                dRv = acc_value(ea, dR, C_DRADIAL)
                ddRv = acc_value(ea, ddR, C_DDRADIAL)
                for i in range(shell_ao[s], shell_ao[s + 1]):
                    P = _ao_value(ea, dcx, dcy, dcz, Rv, powers[i], i, ao)
                    _ao_derivatives(ea, dcx, dcy, dcz, r2a, P, Rv, dRv, ddRv, shell_l[s],
                                    powers[i], i, dao)
            else:  # a loop of its own: values only run 20 % faster
                for i in range(shell_ao[s], shell_ao[s + 1]):
                    _ao_value(ea, dcx, dcy, dcz, Rv, powers[i], i, ao)
            for i in range(shell_ao[s], shell_ao[s + 1]):
                active[n_active] = i
                n_active += 1
    return n_active


@njit(inline="always")
def _mo_values(em, n_active, active, aom, cm, vbuf, out_v):
    """``out_v[k] = sum_t C[active[t], k] aom[t]`` (``orbitals.value`` words) in ``em``;
    returns the event flag of the sums (quiet contexts; 0 otherwise)."""
    acc_array_clear(em, vbuf)
    for t in range(n_active):
        row = cm[active[t]]
        x = load(em, aom[t], M_AO)
        for k in range(cm.shape[1]):
            acc_array_add(em, vbuf, k, mul(em, load(em, row[k], M_COEFF), x, M_TERM), M_VALUE)
    flag = np.int64(0)
    for k in range(cm.shape[1]):
        v = acc_array_value(em, vbuf, k, M_VALUE)
        flag |= events(em, v)
        out_v[k] = store(em, v)
    return flag


@njit(inline="always")
def _mo_derivatives(eg, n_active, active, daom, cg, dbuf, out_d):
    """``out_d[k, c] = sum_t C[active[t], k] daom[t, c]`` (``derivatives.grad`` words for
    c < 3, ``lap`` for c = 3) in ``eg``; returns the event flag of the sums (quiet
    contexts; 0 otherwise)."""
    n_mo = cg.shape[1]
    acc_array_clear(eg, dbuf)
    for t in range(n_active):
        row = cg[active[t]]
        x0, x1 = load(eg, daom[t, 0], G_DAO), load(eg, daom[t, 1], G_DAO)
        x2, x3 = load(eg, daom[t, 2], G_DAO), load(eg, daom[t, 3], G_DAO)
        for k in range(n_mo):
            c = load(eg, row[k], G_COEFF)
            acc_array_add(eg, dbuf, k, mul(eg, c, x0, G_TERM), G_GRAD)
            acc_array_add(eg, dbuf, n_mo + k, mul(eg, c, x1, G_TERM), G_GRAD)
            acc_array_add(eg, dbuf, 2 * n_mo + k, mul(eg, c, x2, G_TERM), G_GRAD)
            acc_array_add(eg, dbuf, 3 * n_mo + k, mul(eg, c, x3, G_TERM), G_LAP)
    flag = np.int64(0)
    for k in range(n_mo):
        for c in range(3):
            v = acc_array_value(eg, dbuf, c * n_mo + k, G_GRAD)
            flag |= events(eg, v)
            out_d[k, c] = store(eg, v)
        v = acc_array_value(eg, dbuf, 3 * n_mo + k, G_LAP)
        flag |= events(eg, v)
        out_d[k, 3] = store(eg, v)
    return flag


@njit
def _point_mos(ea, em, eg, derivs, n_active, active, ao, dao, cm, cg, aom, daom, vbuf, dbuf,
               qvbuf, qdbuf, out_v, out_d):
    """MO values (and gradients, Laplacians) at one point from its active AOs: ``cm``
    (n_cart, n_mo) words of ``orbitals.coeff`` (the transposed MO coefficients, so that a
    row holds every MO's coefficient of one AO), ``cg`` of ``derivatives.coeff``.

    The seed's streaming order: per active AO, one multiply-add into the accumulator of
    every MO (``vbuf``, and ``dbuf`` for the three gradient components and the Laplacian of
    each MO, :func:`~fixedqmc.numerics.kernel.acc_array`).  The loop over MOs vectorises in
    float kernels; each MO's terms are added in AO order (fixed point: the same exact sums
    and, since stochastic rounding draws by element and variable, the same words in any
    order).  Values and derivatives each go through a quiet pass first (``qvbuf``,
    ``qdbuf``, :func:`~fixedqmc.numerics.kernel.quiet`: no event counted in the loop, int64
    accumulators, so that fixed-point loops vectorise too); only if an operation of it
    overflowed, or its accumulators could not hold ``n_active`` terms, are they recomputed
    with every event counted (the same words)."""
    for t in range(n_active):
        i = active[t]
        aom[t] = store(em, convert(em, load(ea, ao[i], C_AO), ea, M_AO))
        if derivs:
            for c in range(3):
                daom[t, c] = store(eg, convert(eg, load(ea, dao[i, c], C_GRAD), ea, G_DAO))
            daom[t, 3] = store(eg, convert(eg, load(ea, dao[i, 3], C_LAP), ea, G_DAO))
    qm = quiet(em)
    if not acc_fits(qm, M_VALUE, n_active) or _mo_values(qm, n_active, active, aom, cm, qvbuf,
                                                         out_v):
        _mo_values(em, n_active, active, aom, cm, vbuf, out_v)
    if not derivs:
        return
    qg = quiet(eg)
    if not (acc_fits(qg, G_GRAD, n_active) and acc_fits(qg, G_LAP, n_active)) or \
            _mo_derivatives(qg, n_active, active, daom, cg, qdbuf, out_d):
        _mo_derivatives(eg, n_active, active, daom, cg, dbuf, out_d)


@njit
def _orbital_chunk(cd, cx, ca, cm_ctx, cg_ctx, k, derivs, pf, pt, basis, cm, cg, scratch,
                   out_v, out_d):
    ed0, ex0, ea0 = chunk(cd, k), chunk(cx, k), chunk(ca, k)
    em0, eg0 = chunk(cm_ctx, k), chunk(cg_ctx, k)
    ao, dao, aom, daom, active = scratch
    lo, hi = chunk_bounds(cd, pf.shape[0], k)
    vbuf = acc_array(at(em0, lo), cm.shape[1], M_VALUE)
    dbuf = acc_array(at(eg0, lo), 4 * cm.shape[1] if derivs else 0, G_GRAD)
    qvbuf = acc_array(quiet(at(em0, lo)), cm.shape[1], M_VALUE)
    qdbuf = acc_array(quiet(at(eg0, lo)), 4 * cm.shape[1] if derivs else 0, G_GRAD)
    for p in range(lo, hi):
        ed, ex, ea, em, eg = at(ed0, p), at(ex0, p), at(ea0, p), at(em0, p), at(eg0, p)
        n = _point_aos(ed, ex, ea, derivs, pf[p], pt[p], basis, ao[k], dao[k], active[k])
        _point_mos(ea, em, eg, derivs, n, active[k], ao[k], dao[k], cm, cg, aom[k], daom[k],
                   vbuf, dbuf, qvbuf, qdbuf, out_v[p], out_d[p])


@njit(parallel=True, cache=True)
def orbital_kernel(cd, cx, ca, cm_ctx, cg_ctx, derivs, pf, pt, basis, cm, cg, scratch, out_v,
                   out_d):
    """Molecular orbitals at points, through the five orbital kernels.

    ``cd, cx, ca, cm_ctx, cg_ctx`` the contexts of the distance, exp, contraction, orbitals
    and derivatives kernels (separate arguments: numba's parallel loops take no nested
    tuples of arrays); ``pf``
    (n_p, 3) float64 points (bohr; screening), ``pt`` the same as ``distance.x`` words;
    ``basis`` the tuple of :meth:`OrbitalKernels.basis_args`; ``cm``/``cg`` (n_cart, n_mo)
    the transposed MO coefficients as ``orbitals.coeff``/``derivatives.coeff`` words;
    ``scratch`` per chunk (:meth:`OrbitalKernels.scratch`).  Writes ``out_v`` (n_p, n_mo)
    ``orbitals.value`` words and, if ``derivs``, ``out_d`` (n_p, n_mo, 4) gradient
    components and Laplacian (``derivatives.grad``/``lap``)."""
    for k in prange(n_chunks(cd, pf.shape[0])):
        _orbital_chunk(cd, cx, ca, cm_ctx, cg_ctx, k, derivs, pf, pt, basis, cm, cg, scratch,
                       out_v, out_d)


# ---------------------------------------------------------------------- Coulomb --
@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _inv_distance(e, ax, ay, az, bx, by, bz):
    """1 / |a - b| of two points given by their coordinate values (``inv_r``)."""
    dx, dy, dz = sub(e, ax, bx, V_D), sub(e, ay, by, V_D), sub(e, az, bz, V_D)
    acc = acc_add(e, acc_zero(e, V_R2), mul(e, dx, dx, V_D2), V_R2)
    acc = acc_add(e, acc, mul(e, dy, dy, V_D2), V_R2)
    acc = acc_add(e, acc, mul(e, dz, dz, V_D2), V_R2)
    return rsqrt(e, acc_value(e, acc, V_R2), V_INV_R)


@njit
def _coulomb_walker(e, pos, nuc, charges, out):
    n, n_nuc = pos.shape[0], nuc.shape[0]
    ee = acc_zero(e, V_EE)
    en = acc_zero(e, V_EN)
    for i in range(n):
        xi, yi, zi = load(e, pos[i, 0], V_X), load(e, pos[i, 1], V_X), load(e, pos[i, 2], V_X)
        for j in range(i + 1, n):
            inv = _inv_distance(e, xi, yi, zi, load(e, pos[j, 0], V_X),
                                load(e, pos[j, 1], V_X), load(e, pos[j, 2], V_X))
            ee = acc_add(e, ee, inv, V_EE)
        for a in range(n_nuc):
            inv = _inv_distance(e, xi, yi, zi, const(e, nuc[a, 0], V_NUC),
                                const(e, nuc[a, 1], V_NUC), const(e, nuc[a, 2], V_NUC))
            en = acc_add(e, en, mul(e, const(e, charges[a], V_CHARGE), inv, V_QINV), V_EN)
    out[0] = store(e, acc_value(e, ee, V_EE))
    out[1] = store(e, acc_value(e, en, V_EN))


@njit
def _coulomb_chunk(cv, k, pos, nuc, charges, out):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, pos.shape[0], k)
    for w in range(lo, hi):
        _coulomb_walker(at(c, w), pos[w], nuc, charges, out[w])


@njit(parallel=True, cache=True)
def coulomb_kernel(cv, pos, nuc, charges, out):
    """``out[w] = (ee, en)`` (``coulomb.ee``/``en`` words, hartree) of walkers ``pos``
    (n_w, n, 3) ``coulomb.x`` words; nuclei ``nuc`` (n_nuc, 3) and ``charges`` float64."""
    for k in prange(n_chunks(cv, pos.shape[0])):
        _coulomb_chunk(cv, k, pos, nuc, charges, out)


@njit(cache=True)
def nuclear_repulsion_kernel(cv, nuc, charges):
    """``sum_{A<B} Z_A Z_B / R_AB`` (a ``coulomb.nn`` word)."""
    e = at(chunk(cv, 0), 0)
    nn = acc_zero(e, V_NN)
    for a in range(nuc.shape[0]):
        for b in range(a + 1, nuc.shape[0]):
            inv = _inv_distance(e, const(e, nuc[a, 0], V_NUC), const(e, nuc[a, 1], V_NUC),
                                const(e, nuc[a, 2], V_NUC), const(e, nuc[b, 0], V_NUC),
                                const(e, nuc[b, 1], V_NUC), const(e, nuc[b, 2], V_NUC))
            nn = acc_add(e, nn, mul(e, const(e, charges[a] * charges[b], V_CHARGE), inv,
                                    V_QINV), V_NN)
    return store(e, acc_value(e, nn, V_NN))
