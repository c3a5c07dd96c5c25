"""Compiled pair kernels of a helium cluster, written once for every precision.

The O(N**2) work of one configuration (HAQMC, seed 002, Sec. 4 and Fig. 9: ``distCalc``,
``top_PE``, ``top_WF``, ``top_KE``), as four named kernels, each with its own precision
(:mod:`fixedqmc.numerics.policy`; a spec such as ``potential=fixed:24`` changes only the
potential kernel):

``distance``
    per pair ``dx = x_i - x_j`` (three components), ``dx2 = dx * dx``, ``s = dx2_x + dx2_y
    + dx2_z`` (A, A**2).
``potential``
    ``V(s)`` per pair from a two-region table (K), summed over pairs: ``V = sum_{i<j}
    V(r_ij)`` (Eq. 9).
``wavefunction``
    ``T2(s)`` per pair from a table, summed: ``ln psi = sum_{i<j} T2(r_ij)`` (Eq. 11); pairs
    with ``s >= s_max`` of this table are counted as *outside* (psi is taken as 0 there:
    the table range is the support of the trial function).
``kinetic``
    two tables, ``G = T2'(r) / r`` (prefix ``g_``) and ``L = T2'' + 2 T2' / r`` (prefix
    ``l_``, HAQMC's "partial kinetic energy term", Sec. 3 Kernel 3); per atom the gradient
    ``grad_i ln psi = sum_{j != i} G(r_ij) (r_i - r_j)`` (``gdx = G dx`` accumulated into
    ``grad``), and the sums ``lap_sum = sum_{i<j} L(r_ij)`` and ``grad2_sum = sum_i
    |grad_i|**2`` (``grad2`` per component).  The kinetic energy (Eq. 8, 18-19) is then
    ``K = -hbar2_2m (2 lap_sum + grad2_sum)``, formed on the host in float64.

Table lookup (every table kernel; the same steps as :mod:`fixedqmc.tables.evaluate`):
region by ``s < sigma``; ``t = (s - s_lo) inv``; the bin index bit-sliced from t (uniform in
region I, power-of-two segments in region II); ``y = a + u (b + u c)``; then the rescaling
is undone in the kernel, ``f = y scale + off`` (variables ``ys`` and ``f``), so that sums are
in physical units.  Variables of a table (with prefix ``g_``/``l_`` in the kinetic kernel)::

    s ds inv t u a b c uc buc ubuc y scale off ys f

Values cross from one kernel to another with :func:`~fixedqmc.numerics.kernel.convert`
(``s`` and ``dx`` leave the distance kernel in its formats and are rounded once into the
receiving kernel's formats).  Fixed-point results are bit-exact and independent of the
thread count: the kernel is parallel over walkers in the fixed chunks of
:mod:`fixedqmc.numerics.kernel`, and every sum over pairs runs in one fixed order
(``i < j`` lexicographic).

Float kernels (``float64``/``float32``) may also be *analytic*: a compiled function of s
instead of the table (see :mod:`fixedqmc.systems.helium.analytic`); a table source is a
tuple ``(s_lo, inv, off, scale, a, b, c, n1_bits, n_seg, bin_bits)``, an analytic one a
tuple ``(function, coefficients)`` with ``function(s, coefficients)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.core import types
from numba.extending import overload

from fixedqmc.numerics.kernel import (add, at, chunk, chunk_bounds, const, convert, less,
                                      load, log2_bin, mul, n_chunks, store, sub, uniform_bin)

#: Variables of one table lookup, in id order from the table's base id.
TABLE_VARIABLES = ("s", "ds", "inv", "t", "u", "a", "b", "c", "uc", "buc", "ubuc", "y",
                   "scale", "off", "ys", "f")
DISTANCE_VARIABLES = ("x", "dx", "dx2", "s")
POTENTIAL_VARIABLES = TABLE_VARIABLES + ("sum",)
WAVEFUNCTION_VARIABLES = TABLE_VARIABLES + ("sum", "s_max")
KINETIC_VARIABLES = (tuple("g_" + v for v in TABLE_VARIABLES)
                     + tuple("l_" + v for v in TABLE_VARIABLES)
                     + ("dx", "gdx", "grad", "grad2", "grad2_sum", "lap_sum"))

X, DX, DX2, S = range(4)
N_TAB = len(TABLE_VARIABLES)
SUM = N_TAB  # potential and wavefunction
S_MAX = N_TAB + 1  # wavefunction
G_BASE, L_BASE = 0, N_TAB
K_DX, K_GDX, K_GRAD, K_GRAD2, K_GRAD2_SUM, K_LAP_SUM = range(2 * N_TAB, 2 * N_TAB + 6)


# -------------------------------------------------------------------- table lookup --
def _make_lookup(base: int):
    """The table lookup with variable ids ``base + TABLE_VARIABLES.index(name)``."""
    vs, vds, vinv, vt, vu, va, vb, vc, vuc, vbuc, vubuc, vy, vscale, voff, vys, vf = (
        base + k for k in range(N_TAB))

    def lookup(e, tab, s):
        s_lo, inv, off, scale, a, b, c, n1_bits, n_seg, bin_bits = tab
        r = 0 if less(e, s, load(e, s_lo[1], vs)) else 1
        t = mul(e, sub(e, s, load(e, s_lo[r], vs), vds), load(e, inv[r], vinv), vt)
        if r == 0:
            idx, u = uniform_bin(e, t, n1_bits, vu)
        else:
            idx, u = log2_bin(e, t, n_seg, bin_bits, vu)
            idx += np.int64(1) << n1_bits
        y = mul(e, u, load(e, c[idx], vc), vuc)
        y = add(e, load(e, b[idx], vb), y, vbuc)
        y = mul(e, u, y, vubuc)
        y = add(e, load(e, a[idx], va), y, vy)
        return add(e, mul(e, y, load(e, scale[r], vscale), vys), load(e, off[r], voff), vf)

    return lookup


def _make_pair_value(base: int):
    """``pair_value(e, src, s_value)``: f(s) in e's kernel as variable ``base + f``, from a
    table source or, in float kernels, an analytic one (module docstring)."""
    lookup = njit(_make_lookup(base), nogil=True, inline="always")
    vs, vf = base + TABLE_VARIABLES.index("s"), base + TABLE_VARIABLES.index("f")

    def pair_value(e, src, s_value):
        pass

    @overload(pair_value, inline="always")
    def _ol(e, src, s_value):
        if isinstance(src[0], types.Dispatcher):
            if isinstance(e, types.BaseTuple):
                raise TypeError("analytic pair functions run in float kernels only")
            dt = e
            return lambda e, src, s_value: dt(src[0](dt(s_value), src[1]))
        return lambda e, src, s_value: lookup(e, src, s_value)

    return pair_value, vs, vf


_value_0, _S0, _F0 = _make_pair_value(0)  # potential, wavefunction
_value_g, _SG, _FG = _make_pair_value(G_BASE)
_value_l, _SL, _FL = _make_pair_value(L_BASE)


# --------------------------------------------------------------- the cluster kernel --
@njit(nogil=True, cache=True)
def _walker(cd, cp, cw, ck, w, flags, pos, src_p, src_w, src_g, src_l, s_max_w, out_v,
            out_w, out_outside, out_lap, out_g2, out_grad):
    """All pair work of walker ``w`` (see :func:`cluster_kernel`)."""
    do_pot, do_kin = flags[0] != 0, flags[1] != 0
    n = pos.shape[1]
    ed, ep, ew, ek = at(cd, w), at(cp, w), at(cw, w), at(ck, w)
    v_sum = const(ep, 0.0, SUM)
    w_sum = const(ew, 0.0, SUM)
    lap = const(ek, 0.0, K_LAP_SUM)
    smax = load(ew, s_max_w, S_MAX)
    outside = 0
    if do_kin:
        zero = store(ek, const(ek, 0.0, K_GRAD))
        for i in range(n):
            for c in range(3):
                out_grad[w, i, c] = zero
    for i in range(n):
        xi = load(ed, pos[w, i, 0], X)
        yi = load(ed, pos[w, i, 1], X)
        zi = load(ed, pos[w, i, 2], X)
        for j in range(i + 1, n):
            dx = sub(ed, xi, load(ed, pos[w, j, 0], X), DX)
            dy = sub(ed, yi, load(ed, pos[w, j, 1], X), DX)
            dz = sub(ed, zi, load(ed, pos[w, j, 2], X), DX)
            s = add(ed, add(ed, mul(ed, dx, dx, DX2), mul(ed, dy, dy, DX2), S),
                    mul(ed, dz, dz, DX2), S)
            sw = convert(ew, s, ed, _S0)
            if not less(ew, sw, smax):
                outside += 1
            w_sum = add(ew, w_sum, _value_0(ew, src_w, sw), SUM)
            if do_pot:
                v_sum = add(ep, v_sum, _value_0(ep, src_p, convert(ep, s, ed, _S0)), SUM)
            if do_kin:
                lap = add(ek, lap, _value_l(ek, src_l, convert(ek, s, ed, _SL)), K_LAP_SUM)
                g = _value_g(ek, src_g, convert(ek, s, ed, _SG))
                for c in range(3):
                    d = dx if c == 0 else (dy if c == 1 else dz)
                    gd = mul(ek, g, convert(ek, d, ed, K_DX), K_GDX)
                    out_grad[w, i, c] = store(ek, add(ek, load(ek, out_grad[w, i, c], K_GRAD),
                                                      gd, K_GRAD))
                    out_grad[w, j, c] = store(ek, sub(ek, load(ek, out_grad[w, j, c], K_GRAD),
                                                      gd, K_GRAD))
    out_w[w] = store(ew, w_sum)
    out_outside[w] = outside
    if do_pot:
        out_v[w] = store(ep, v_sum)
    if do_kin:
        g2 = const(ek, 0.0, K_GRAD2_SUM)
        for i in range(n):
            for c in range(3):
                gc = load(ek, out_grad[w, i, c], K_GRAD)
                g2 = add(ek, g2, mul(ek, gc, gc, K_GRAD2), K_GRAD2_SUM)
        out_lap[w] = store(ek, lap)
        out_g2[w] = store(ek, g2)


@njit(nogil=True, cache=True)
def _cluster_chunk(cd, cp, cw, ck, k, flags, pos, src_p, src_w, src_g, src_l, s_max_w,
                   out_v, out_w, out_outside, out_lap, out_g2, out_grad):
    """Chunk k of the walkers: a serial function compiled before the parallel loop that
    calls it (the parallel pipeline then only wraps a call; see tables.evaluate)."""
    ccd, ccp, ccw, cck = chunk(cd, k), chunk(cp, k), chunk(cw, k), chunk(ck, k)
    lo, hi = chunk_bounds(cd, pos.shape[0], k)
    for w in range(lo, hi):
        _walker(ccd, ccp, ccw, cck, w, flags, pos, src_p, src_w, src_g, src_l, s_max_w,
                out_v, out_w, out_outside, out_lap, out_g2, out_grad)


@njit(parallel=True, cache=True)
def cluster_kernel(cd, cp, cw, ck, flags, pos, src_p, src_w, src_g, src_l, s_max_w, out_v,
                   out_w, out_outside, out_lap, out_g2, out_grad):
    """Pair sums of every walker of a cluster, for every precision.

    Parameters
    ----------
    cd, cp, cw, ck : kernel contexts of ``distance``, ``potential``, ``wavefunction``,
        ``kinetic`` (:meth:`KernelPrecision.context`).
    flags : int64 array (2,)
        ``(do_potential, do_kinetic)``; the wave function is always evaluated.
    pos : (n_walkers, n_atoms, 3)
        Positions (A), as floats of the distance kernel's type or raw words of ``x``.
    src_p, src_w, src_g, src_l : pair-function sources (module docstring).
    s_max_w : the wave-function table's s_max, in the format of ``wavefunction.s_max``.
    out_v, out_w, out_lap, out_g2 : (n_walkers,)
        ``sum V``, ``ln psi``, ``lap_sum``, ``grad2_sum`` (kernel types / raw words).
    out_outside : int64 (n_walkers,)
        Pairs outside the wave function's table.
    out_grad : (n_walkers, n_atoms, 3)
        ``grad_i ln psi`` (1/A).
    """
    for k in prange(n_chunks(cd, pos.shape[0])):
        _cluster_chunk(cd, cp, cw, ck, np.int64(k), flags, pos, src_p, src_w, src_g, src_l,
                       s_max_w, out_v, out_w, out_outside, out_lap, out_g2, out_grad)


# --------------------------------------------------------------- single-atom moves --
@njit(nogil=True, cache=True)
def _atom_chunk(cd, cw, k, pos, atom, new, src_w, s_max_w, out_old, out_new, out_outside):
    ccd, ccw = chunk(cd, k), chunk(cw, k)
    lo, hi = chunk_bounds(cd, pos.shape[0], k)
    n = pos.shape[1]
    for w in range(lo, hi):
        ed, ew = at(ccd, w), at(ccw, w)
        smax = load(ew, s_max_w, S_MAX)
        old = const(ew, 0.0, SUM)
        nw = const(ew, 0.0, SUM)
        outside = 0
        for j in range(n):
            if j == atom:
                continue
            xj = load(ed, pos[w, j, 0], X)
            yj = load(ed, pos[w, j, 1], X)
            zj = load(ed, pos[w, j, 2], X)
            for which in range(2):
                src = pos[w, atom] if which == 0 else new[w]
                dx = sub(ed, load(ed, src[0], X), xj, DX)
                dy = sub(ed, load(ed, src[1], X), yj, DX)
                dz = sub(ed, load(ed, src[2], X), zj, DX)
                s = add(ed, add(ed, mul(ed, dx, dx, DX2), mul(ed, dy, dy, DX2), S),
                        mul(ed, dz, dz, DX2), S)
                sw = convert(ew, s, ed, _S0)
                t2 = _value_0(ew, src_w, sw)
                if which == 0:
                    old = add(ew, old, t2, SUM)
                else:
                    nw = add(ew, nw, t2, SUM)
                    if not less(ew, sw, smax):
                        outside += 1
        out_old[w] = store(ew, old)
        out_new[w] = store(ew, nw)
        out_outside[w] = outside


@njit(parallel=True, cache=True)
def atom_kernel(cd, cw, pos, atom, new, src_w, s_max_w, out_old, out_new, out_outside):
    """For a move of atom ``atom`` of every walker to ``new`` (n_walkers, 3): the sums of
    T2 over its pairs before (``out_old``) and after (``out_new``), and the new pairs
    outside the wave-function table; ``ln psi' - ln psi = new - old``.  Pairs are summed in
    the order j = 0..n-1 (j != atom), so a sum of T2 over one atom's pairs is
    reproducible but not the same rounding sequence as the full-configuration sum."""
    for k in prange(n_chunks(cd, pos.shape[0])):
        _atom_chunk(cd, cw, np.int64(k), pos, atom, new, src_w, s_max_w, out_old, out_new,
                    out_outside)
