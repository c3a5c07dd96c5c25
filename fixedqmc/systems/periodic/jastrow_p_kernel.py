"""The compiled Jastrow p kernel by structure factors, written once for every precision (seed
000, Eq. 9-10): O(N n_G) work per walker instead of a loop over pairs.

``jastrow_p`` is a named kernel with its own precision (its own context), parallel over
walkers in the fixed chunks of :mod:`fixedqmc.numerics.kernel`.  Positions enter as
*fractional coordinates* ``frac`` in [0, 1) of the cell's reduced basis
(:attr:`Cell.reduced`), shape (n_walkers, N, 3); a 2D cell pads the third coordinate and the
G vectors with zeros.  Lengths in bohr, J dimensionless.

The p term (Eq. 9) over the half set of G vectors with coefficients ``a_G`` (the star's
``a_m``) is ``J_p = sum_{i<j} sum_G a_G cos(G . r_ij)``.  With the plane waves ``z_j(G) =
e^{i G . r_j}`` and the structure factor ``S(G) = sum_j z_j(G)`` (all charges 1):

* ``sum_{i<j} cos(G . r_ij) = sum_{i<j} Re(z_i conj z_j) = (|S|**2 - sum_j |z_j|**2) / 2 =
  (|S|**2 - N) / 2``, so ``J_p = sum_G a_G (|S(G)|**2 - N) / 2``;
* ``grad_i sum_{j != i} a_G cos(G . (r_i - r_j)) = -a_G G Im(z_i conj S_{-i})`` with
  ``S_{-i} = S - z_i``, and ``Im(z_i conj z_i) = 0``, so this is ``-a_G G Im(z_i conj S)``
  (1/bohr);
* ``lap_i`` of the same sum ``= -a_G |G|**2 Re(z_i conj S_{-i}) = -a_G |G|**2 (Re(z_i conj
  S) - |z_i|**2)`` (1/bohr**2);
* a move of electron i from ``r_i`` to ``r_i'`` (``z_i' = e^{i G . r_i'}``): electron i's
  pair sum at a place ``r`` is ``sum_{j != i} p(r - r_j) = sum_G a_G Re(z(r) conj
  S_{-i})``, ``S_{-i} = S - z_i = S' - z_i'`` (``S' = S - z_i + z_i'`` the structure factor
  after the move: ``S_{-i}`` is the part both share), so the change of J is ``sum_G a_G
  Re((z_i' - z_i) conj S_{-i}) = sum_G a_G (|S'|**2 - |S|**2) / 2`` (as ``|z_i|**2 =
  |z_i'|**2 = 1``) and the gradient at the new place ``-sum_G a_G G Im(z_i' conj
  S_{-i})``.

Two modes, chosen by ``imove`` (the outputs of the pair kernel it replaces, so callers do not
change):

* ``imove < 0``, a full evaluation: ``out_sum[w, 0]`` = J_p, ``out_grad[w, i]`` = grad_i J_p
  (1/bohr, 3 components), ``out_lap[w, i]`` = lap_i J_p (1/bohr**2);
* ``imove = i``, a single-electron move of electron i to ``fnew[w]``: ``out_sum[w, 0]`` =
  ``sum_{j != i} p(r_i - r_j)`` at the old place, ``out_sum[w, 1]`` at the new place,
  ``out_grad[w, 0]`` its gradient at the new place.

The steps (the variables in the order of :data:`P_VARIABLES`):

1. Per electron j and axis k the powers ``e^{2 pi i m frac_jk}``, m = -nmax..nmax, by
   :func:`.phasors.all_powers` (shared with ``ewald_recip``; per value the operations of
   :func:`.phasors.powers`: ``cos``, ``sin`` = ``cos_turns``, ``sin_turns(frac)``; the
   consts 1 and 0; ``pp`` products and ``pw`` components of each next power, negative
   powers as conjugates ``0 - im``): ``3 nmax`` complex products and 3 cosines and sines
   per electron, buffered per axis, exponent and component with the electrons innermost,
   (3, 2 nmax + 1, 2, N).  Each step is a loop over the electrons, so the loops read memory
   in order and vectorise in float contexts (the cosines and sines stay calls).  A move
   also buffers the powers of the new place (:func:`.phasors.powers`).
2. Per G of the half set (reduced integer coordinates ``gint``): ``z_j`` as the product of
   the three buffered powers of every electron (:func:`.phasors.times`, components ``zz``;
   two complex products in 3D, one in 2D).  Full evaluation: the accumulators ``sre``,
   ``sim`` of ``Re z_j``, ``Im z_j`` (S), the ``z_j`` words kept (n_G, 2, N) for step 3;
   ``sq`` = (Re S)**2, (Im S)**2, ``mag = sq + sq``, ``pair = mag - nel`` (``nel`` = N, a
   const), ``pterm = ahalf pair`` (``ahalf = a_G / 2``) into ``sum``.  Move of electron i:
   the ``z_j`` words of one G in a row, z_i's replaced by the const 0 of ``zz``, then
   ``sre``, ``sim`` over the row (``S_{-i}``, summed in a loop without a branch); ``z_i``
   (its words from the row) and ``z_i'`` (from the new place's powers), ``zs`` the
   component products, ``cre = Re(z conj S_{-i})`` at both places and ``cim = Im(z_i' conj
   S_{-i})``; ``eterm = ag cre`` (``ag = a_G``) into the old and the new ``sum``, ``gterm
   = agc cim`` (``agc = -a_G G_c``) into ``grad``.
3. Full evaluation, per electron i and G: the kept ``z_i`` and S words, ``zs`` the products,
   ``cre = Re(z_i conj S) = Re z Re S + Im z Im S``, ``cim = Im(z_i conj S) = Im z Re S -
   Re z Im S``, the self term ``|z_i|**2`` with the *same* operations (``zs`` products, the
   sum in ``cre``), ``cdiff = cre - |z_i|**2``; ``gterm = agc cim`` into ``grad``, ``lterm =
   ag2 cdiff`` (``ag2 = -a_G |G|**2``) into ``lap``.

Cost per walker: ``3 N`` cosines and sines and ``3 N nmax`` complex products (step 1), ``N
n_G`` (2D) or ``2 N n_G`` (3D) complex products (step 2) and ``N n_G`` times 6 products
(step 3): O(N n_G), against ``N (N - 1)`` times step 1 and ``N (N - 1) n_G`` times step 2
(with 5 products) in the pair loop.  A move costs steps 1 and 2, O(N n_G), as before, but
computes the powers and plane waves of each electron once instead of once per place.

*Fixed-point error.*  The phasors carry the error of :mod:`.phasors`: about ``|n_0| + |n_1|
+ |n_2| + 2`` units of the ``pw``/``pp``/``zz`` formats per ``z_j``, and ``|z_j|**2`` drifts
from 1 by as much.  Two consequences are new:

* The sums over electrons come before the products.  ``sre``, ``sim`` must hold N (about
  ``log2 N`` more integer bits than ``zz``), ``sq``, ``mag``, ``pair`` N**2 (about ``2 log2
  N`` more), ``zs``, ``cre``, ``cim`` N.  ``J_p`` is a difference ``|S|**2 - N`` of numbers
  up to N**2 whose result is typically of size N (random positions), so every G adds a few
  units of the ``mag`` and ``pair`` formats (``N**2 2**-(W-1)`` at W bits) to it; the
  gradient and Laplacian get a few units of ``zs`` (``N 2**-(W-1)``) per G.  In float32
  the same holds for float32 roundings (about ``6e-8 |S|**2`` per G).  These are n_G
  errors, where the pair loop rounded ``N (N - 1) n_G / 2`` terms into the format of the
  whole sum (measured: smaller errors than the pair loop's, ``docs/periodic.md``).  Using
  N for ``sum_j |z_j|**2`` puts the drift ``sum_j (|z_j|**2 - 1) / 2`` (about N units of
  ``zz``) into J_p, far below the units of ``mag``.
* The self terms.  In the gradient, ``Im(z_i conj S) = sum_j Im(z_i conj z_j)`` before
  rounding, and the j = i part ``Im z_i Re z_i - Re z_i Im z_i`` is exactly zero for any
  words (the same two words, multiplied in either order): nothing is subtracted, and the
  ``z_i`` words of step 3 are the very words summed into S (kept, not recomputed), so the
  cancellation is exact; only the roundings of S, of the two ``zs`` products and of ``cim``
  remain.  In the Laplacian the self term ``|z_i|**2`` does not vanish; it is computed from
  the same words with the same operations as ``Re(z_i conj S)`` (products rounded into
  ``zs``, the sum into ``cre``) and subtracted, instead of 1, so the drift of ``|z_i|**2``
  from 1 cancels.  A move sums S over j != i and has no self term at all.
* The move's two sums are words of ``sum``, whose format holds the full J_p (N (N - 1) / 2
  pair sums), about ``log2(N / 2)`` bits coarser than the ``(N - 1)`` pairs of one
  electron need; the move's change of J is a difference of two such words.

Constants: ``pcoef`` (n_G, 5): ``a_G, -a_G G_x, -a_G G_y, -a_G G_z, -a_G |G|**2`` (1,
1/bohr, 1/bohr**2); ``gint`` (n_G, 3) int64 reduced integer coordinates (``G . r =
2 pi sum_k gint_k frac_k``), ``nmax = max |gint|``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics.kernel import (acc_add, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, load, mul, n_chunks, store, sub)
from fixedqmc.systems.periodic.phasors import (FRAC, PHASOR_VARIABLES, PW, ZZ, all_powers,
                                               powers, times)

P_VARIABLES = PHASOR_VARIABLES + (
    ("sre", "Re S(G) = sum_j cos(G . r_j) (sum; a move: over j != i)"),
    ("sim", "Im S(G) = sum_j sin(G . r_j) (sum; a move: over j != i)"),
    ("sq", "(Re S)**2 or (Im S)**2"),
    ("mag", "|S(G)|**2"),
    ("nel", "N, the number of electrons"),
    ("pair", "|S(G)|**2 - N = 2 sum_{i<j} cos(G . r_ij)"),
    ("ahalf", "a_G / 2"),
    ("pterm", "a_G (|S(G)|**2 - N) / 2"),
    ("zs", "a product of a component of z_i (or z_i') and one of S (or of z_i)"),
    ("cre", "Re(z conj S) = Re z Re S + Im z Im S (or |z_i|**2 = Re(z_i conj z_i))"),
    ("cim", "Im(z conj S) = Im z Re S - Re z Im S"),
    ("cdiff", "Re(z_i conj S) - |z_i|**2 = sum_{j != i} cos(G . r_ij)"),
    ("ag", "a_G"),
    ("eterm", "a_G Re(z conj S_{-i}): electron i's pair sum at one place, one G"),
    ("agc", "-a_G G_c (1/bohr)"),
    ("gterm", "-a_G G_c Im(z_i conj S) (1/bohr)"),
    ("ag2", "-a_G |G|**2 (1/bohr**2)"),
    ("lterm", "-a_G |G|**2 sum_{j != i} cos(G . r_ij) (1/bohr**2)"),
    ("sum", "J_p (full) or electron i's pair sum (move) (sum)"),
    ("grad", "grad_i J_p component (sum, 1/bohr)"),
    ("lap", "lap_i J_p (sum, 1/bohr**2)"),
)
(SRE, SIM, SQ, MAG, NEL, PAIR, AHALF, PTERM, ZS, CRE, CIM, CDIFF, AG, ETERM, AGC, GTERM, AG2,
 LTERM, SUM, GRAD, LAP) = range(len(PHASOR_VARIABLES), len(PHASOR_VARIABLES) + 21)

assert len(P_VARIABLES) == LAP + 1


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _z(e, buf, n0, n1, n2, j, three):
    """``z_j(G)`` (``zz``) of the G of power rows ``n0``, ``n1``, ``n2`` (the loops over
    electrons write this out: arrays passed to a helper in a loop cost reference counts)."""
    zr, zi = times(e, load(e, buf[0, n0, 0, j], PW), load(e, buf[0, n0, 1, j], PW),
                   load(e, buf[1, n1, 0, j], PW), load(e, buf[1, n1, 1, j], PW))
    if three:
        zr, zi = times(e, zr, zi, load(e, buf[2, n2, 0, j], PW), load(e, buf[2, n2, 1, j], PW))
    return zr, zi


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _re_conj(e, zr, zi, sr, si):
    """``Re(z conj s)`` (``zs`` products, ``cre``)."""
    return add(e, mul(e, zr, sr, ZS), mul(e, zi, si, ZS), CRE)


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def _im_conj(e, zr, zi, sr, si):
    """``Im(z conj s)`` (``zs`` products, ``cim``)."""
    return sub(e, mul(e, zi, sr, ZS), mul(e, zr, si, ZS), CIM)


@njit
def _full(e, f, gint, pcoef, nmax, three, out_sum, out_grad, out_lap):
    n, ng = f.shape[0], gint.shape[0]
    buf = np.empty((3, 2 * nmax + 1, 2, n), out_sum.dtype)
    zbuf = np.empty((ng, 2, n), out_sum.dtype)  # z_j(G), electrons innermost
    sbuf = np.empty((ng, 2), out_sum.dtype)  # S(G)
    all_powers(e, f, buf, nmax, three)
    total = acc_zero(e, SUM)
    nel = const(e, np.float64(n), NEL)
    for g in range(ng):
        n0, n1, n2 = gint[g, 0] + nmax, gint[g, 1] + nmax, gint[g, 2] + nmax
        a_re, a_im, b_re, b_im = buf[0, n0, 0], buf[0, n0, 1], buf[1, n1, 0], buf[1, n1, 1]
        c_re, c_im = buf[2, n2, 0], buf[2, n2, 1]
        z_re, z_im = zbuf[g, 0], zbuf[g, 1]
        sre = acc_zero(e, SRE)
        sim = acc_zero(e, SIM)
        # a loop that vectorises in float contexts (written out: an array passed to a helper
        # inside it would cost reference counts per electron)
        for j in range(n):
            zr, zi = times(e, load(e, a_re[j], PW), load(e, a_im[j], PW),
                           load(e, b_re[j], PW), load(e, b_im[j], PW))
            if three:
                zr, zi = times(e, zr, zi, load(e, c_re[j], PW), load(e, c_im[j], PW))
            z_re[j], z_im[j] = store(e, zr), store(e, zi)
            sre = acc_add(e, sre, zr, SRE)
            sim = acc_add(e, sim, zi, SIM)
        re = acc_value(e, sre, SRE)
        im = acc_value(e, sim, SIM)
        sbuf[g, 0], sbuf[g, 1] = store(e, re), store(e, im)
        mag = add(e, mul(e, re, re, SQ), mul(e, im, im, SQ), MAG)
        pair = sub(e, mag, nel, PAIR)
        total = acc_add(e, total, mul(e, const(e, pcoef[g, 0] * 0.5, AHALF), pair, PTERM),
                        SUM)
    out_sum[0] = store(e, acc_value(e, total, SUM))
    for i in range(n):
        gx, gy, gz = acc_zero(e, GRAD), acc_zero(e, GRAD), acc_zero(e, GRAD)
        lap = acc_zero(e, LAP)
        for g in range(ng):
            zr, zi = load(e, zbuf[g, 0, i], ZZ), load(e, zbuf[g, 1, i], ZZ)
            sr, si = load(e, sbuf[g, 0], SRE), load(e, sbuf[g, 1], SIM)
            cim = _im_conj(e, zr, zi, sr, si)  # the self term cancels exactly (docstring)
            cdiff = sub(e, _re_conj(e, zr, zi, sr, si), _re_conj(e, zr, zi, zr, zi), CDIFF)
            gx = acc_add(e, gx, mul(e, const(e, pcoef[g, 1], AGC), cim, GTERM), GRAD)
            gy = acc_add(e, gy, mul(e, const(e, pcoef[g, 2], AGC), cim, GTERM), GRAD)
            gz = acc_add(e, gz, mul(e, const(e, pcoef[g, 3], AGC), cim, GTERM), GRAD)
            lap = acc_add(e, lap, mul(e, const(e, pcoef[g, 4], AG2), cdiff, LTERM), LAP)
        out_grad[i, 0], out_grad[i, 1], out_grad[i, 2] = (
            store(e, acc_value(e, gx, GRAD)), store(e, acc_value(e, gy, GRAD)),
            store(e, acc_value(e, gz, GRAD)))
        out_lap[i] = store(e, acc_value(e, lap, LAP))


@njit
def _move(e, f, fnew, i, gint, pcoef, nmax, three, out_sum, out_grad):
    n, ng = f.shape[0], gint.shape[0]
    buf = np.empty((3, 2 * nmax + 1, 2, n), out_sum.dtype)
    nbuf = np.empty((3, 2 * nmax + 1, 2, 1), out_sum.dtype)  # the new place
    zrow = np.empty((2, n), out_sum.dtype)  # z_j(G) of one G
    all_powers(e, f, buf, nmax, three)
    for k in range(3 if three else 2):
        powers(e, load(e, fnew[k], FRAC), nbuf[k, :, :, 0], nmax)
    zero = const(e, 0.0, ZZ)
    old, new = acc_zero(e, SUM), acc_zero(e, SUM)
    gx, gy, gz = acc_zero(e, GRAD), acc_zero(e, GRAD), acc_zero(e, GRAD)
    for g in range(ng):
        n0, n1, n2 = gint[g, 0] + nmax, gint[g, 1] + nmax, gint[g, 2] + nmax
        a_re, a_im, b_re, b_im = buf[0, n0, 0], buf[0, n0, 1], buf[1, n1, 0], buf[1, n1, 1]
        c_re, c_im = buf[2, n2, 0], buf[2, n2, 1]
        sre = acc_zero(e, SRE)
        sim = acc_zero(e, SIM)
        for j in range(n):  # every z_j (vectorises in float contexts; as in _full)
            zr, zi = times(e, load(e, a_re[j], PW), load(e, a_im[j], PW),
                           load(e, b_re[j], PW), load(e, b_im[j], PW))
            if three:
                zr, zi = times(e, zr, zi, load(e, c_re[j], PW), load(e, c_im[j], PW))
            zrow[0, j], zrow[1, j] = store(e, zr), store(e, zi)
        zr, zi = load(e, zrow[0, i], ZZ), load(e, zrow[1, i], ZZ)
        # S_{-i}: z_i's place set to 0, so that the sum has no branch and vectorises
        zrow[0, i], zrow[1, i] = store(e, zero), store(e, zero)
        for j in range(n):
            sre = acc_add(e, sre, load(e, zrow[0, j], ZZ), SRE)
            sim = acc_add(e, sim, load(e, zrow[1, j], ZZ), SIM)
        sr = acc_value(e, sre, SRE)
        si = acc_value(e, sim, SIM)
        ag = const(e, pcoef[g, 0], AG)
        old = acc_add(e, old, mul(e, ag, _re_conj(e, zr, zi, sr, si), ETERM), SUM)
        zr, zi = _z(e, nbuf, n0, n1, n2, 0, three)
        new = acc_add(e, new, mul(e, ag, _re_conj(e, zr, zi, sr, si), ETERM), SUM)
        cim = _im_conj(e, zr, zi, sr, si)
        gx = acc_add(e, gx, mul(e, const(e, pcoef[g, 1], AGC), cim, GTERM), GRAD)
        gy = acc_add(e, gy, mul(e, const(e, pcoef[g, 2], AGC), cim, GTERM), GRAD)
        gz = acc_add(e, gz, mul(e, const(e, pcoef[g, 3], AGC), cim, GTERM), GRAD)
    out_sum[0] = store(e, acc_value(e, old, SUM))
    out_sum[1] = store(e, acc_value(e, new, SUM))
    out_grad[0, 0], out_grad[0, 1], out_grad[0, 2] = (
        store(e, acc_value(e, gx, GRAD)), store(e, acc_value(e, gy, GRAD)),
        store(e, acc_value(e, gz, GRAD)))


@njit
def _p_chunk(cv, k, f, fnew, imove, gint, pcoef, nmax, three, out_sum, out_grad, out_lap):
    c = chunk(cv, k)
    lo, hi = chunk_bounds(cv, f.shape[0], k)
    for w in range(lo, hi):
        if imove < 0:
            _full(at(c, w), f[w], gint, pcoef, nmax, three, out_sum[w], out_grad[w],
                  out_lap[w])
        else:
            _move(at(c, w), f[w], fnew[w], imove, gint, pcoef, nmax, three, out_sum[w],
                  out_grad[w])


@njit(parallel=True, cache=True)
def p_kernel(cv, f, fnew, imove, gint, pcoef, nmax, three, out_sum, out_grad, out_lap):
    """The p term (Eq. 9-10) of walkers ``f`` (n_w, N, 3) ``jastrow_p.frac`` words by
    structure factors; ``fnew`` (n_w, 3) the moved electron's new coordinates (read only if
    ``imove >= 0``); ``gint`` (n_G, 3) int64 reduced integer coordinates of the half set,
    ``pcoef`` (n_G, 5), ``nmax`` = max |gint|, ``three``: a 3D cell.  Outputs (``sum``,
    ``grad``, ``lap`` words): ``out_sum`` (n_w, 2), ``out_grad`` (n_w, N, 3) (a move: (n_w,
    1, 3)), ``out_lap`` (n_w, N) (a move: untouched); see the module docstring for the two
    modes."""
    for k in prange(n_chunks(cv, f.shape[0])):
        _p_chunk(cv, k, f, fnew, imove, gint, pcoef, nmax, three, out_sum, out_grad, out_lap)
