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
receiving kernel's formats).

Sums over pairs (``sum`` of V and T2, ``lap_sum``, ``grad2_sum``) are accumulators
(:func:`~fixedqmc.numerics.kernel.acc_add`): each term is rounded once into the sum's format
and added exactly, and the total is overflow-handled once, as a hardware accumulator does.
Fixed-point sums are therefore exact and independent of the order of the pairs; float sums
may be split into vector lanes by the compiler (reproducible on a given machine).  The
per-atom gradient ``grad`` is a running sum rounded at every step, in the order ``i < j``.

Evaluation, per walker (the kernel is parallel over walkers in the fixed chunks of
:mod:`fixedqmc.numerics.kernel`, so results do not depend on the thread count):

1. the *quiet pass* (:func:`_make_pair_sums`): all pairs for ln psi and V in quiet contexts
   (:func:`~fixedqmc.numerics.kernel.quiet`), a pair loop with no store whose sums are
   reductions, so LLVM vectorises it (AVX-512; compiled under
   :func:`~fixedqmc.numerics.vectorise.vectorising_compile`, whose target loads the table
   coefficients lane by lane rather than by gathers);
2. if any operation of the quiet pass overflowed (fixed point), or its int64 accumulators
   could not hold every pair, the *counting pass* (:func:`_walker`) recomputes ln psi and V
   with every overflow event counted per variable: the same operations, so the same values;
3. with the kinetic term, the counting pass for the kinetic sums and the gradient (their
   distance operations are those of the quiet pass, so no event is counted twice).

Float kernels (``float64``/``float32``) may also be *analytic*: a compiled function of s
instead of the table (see :mod:`fixedqmc.systems.helium.analytic`); a table source is a
tuple ``(s_lo, inv, off, scale, abc, n1_bits, n_seg, bin_bits)`` with the coefficients of
bin k in row k of ``abc`` (shape (n_bins, 4): a, b, c and a pad, so that one bin's three
coefficients share a cache line; made scalar by :func:`prepare` inside the kernel), an analytic one a tuple ``(function, coefficients)``
with ``function(s, coefficients)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.core import types
from numba.extending import overload

from fixedqmc.numerics.kernel import (acc_add, acc_fits, acc_value, acc_zero, add, at, chunk,
                                      chunk_bounds, const, convert, events, is_bound_context,
                                      is_float_format_context, less, load, mul, n_chunks,
                                      quiet, store, sub)
from fixedqmc.tables.lookup import (LOOKUP_VARIABLES, UNSCALE_VARIABLES, make_lookup,
                                    prepare_table)

#: Variables of one table lookup, in id order from the table's base id
#: (:mod:`fixedqmc.tables.lookup`, with the rescaling undone in the kernel).
TABLE_VARIABLES = tuple(name for name, _ in LOOKUP_VARIABLES + UNSCALE_VARIABLES)
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
def prepare(src):
    pass


@overload(prepare)
def _prepare(src):
    """A pair-function source as the kernels read it: a table source prepared by
    :func:`~fixedqmc.tables.lookup.prepare_table` (constants as scalars, coefficients by
    address, so that no array is reference-counted in a pair loop, which would keep it from
    vectorising; the caller keeps the arrays alive); an analytic source unchanged."""
    if isinstance(src[0], types.Dispatcher):
        return lambda src: src
    return lambda src: prepare_table(src)


def _make_pair_value(base: int):
    """``pair_value(e, src, s_value)``: f(s) in e's kernel as variable ``base + f``, from a
    prepared table source or, in float kernels, an analytic one (module docstring)."""
    _, _, lookup = make_lookup(base, unscale=True)
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


@njit(nogil=True, inline="always")
def _atom(ed, pos, w, i):
    """x, y, z of atom i of walker w (positions by coordinate) as distance-kernel values."""
    return load(ed, pos[w, 0, i], X), load(ed, pos[w, 1, i], X), load(ed, pos[w, 2, i], X)


@njit(nogil=True, inline="always")
def _distance(ed, pos, w, xi, yi, zi, j):
    """dx, dy, dz (x_i - x_j) and s = |r_i - r_j|**2 of atoms i (at xi, yi, zi) and j."""
    xj, yj, zj = _atom(ed, pos, w, j)
    dx, dy, dz = sub(ed, xi, xj, DX), sub(ed, yi, yj, DX), sub(ed, zi, zj, DX)
    s = add(ed, add(ed, mul(ed, dx, dx, DX2), mul(ed, dy, dy, DX2), S), mul(ed, dz, dz, DX2), S)
    return dx, dy, dz, s


@njit(nogil=True, inline="always")
def _vw_pair(ed, ep, ew, s, smax, tp, tw, av, aw, do_pot):
    """One pair's terms of ln psi and V added to their accumulators, and 1 if the pair lies
    beyond the trial function's support: the same operations in the quiet and the counting
    pass, which is what lets the counting pass stand in for an overflowing quiet one."""
    sw = convert(ew, s, ed, _S0)
    aw = acc_add(ew, aw, _value_0(ew, tw, sw), SUM)
    if do_pot:
        av = acc_add(ep, av, _value_0(ep, tp, convert(ep, s, ed, _S0)), SUM)
    return av, aw, np.int64(not less(ew, sw, smax))


# ------------------------------------------------------- the pair sums, quiet pass --
def _make_pair_sums(do_pot: bool):
    """The pass over all pairs of walker w for ln psi (and V), in quiet contexts: no store in
    the pair loop, every sum an accumulator, so the loop vectorises (float and fixed).
    Returns (V, ln psi, pairs outside, event flag); in fixed point the flag is 1 if any
    operation overflowed, and the caller then recomputes the walker in the counting
    contexts (same values, events counted per variable)."""
    def pair_sums(cd, cp, cw, w, pos, tp, tw, s_max_w):
        n = pos.shape[2]
        ed, ep, ew = quiet(at(cd, w)), quiet(at(cp, w)), quiet(at(cw, w))
        av, aw = acc_zero(ep, SUM), acc_zero(ew, SUM)
        smax = load(ew, s_max_w, S_MAX)
        outside = np.int64(0)
        for i in range(n):
            xi, yi, zi = _atom(ed, pos, w, i)
            for j in range(i + 1, n):
                _, _, _, s = _distance(ed, pos, w, xi, yi, zi, j)
                av, aw, out = _vw_pair(ed, ep, ew, s, smax, tp, tw, av, aw, do_pot)
                outside += out
        v, lw = acc_value(ep, av, SUM), acc_value(ew, aw, SUM)
        return store(ep, v), store(ew, lw), outside, events(ep, v) | events(ew, lw)
    return njit(pair_sums, nogil=True)


_pair_sums_vw, _pair_sums_w = _make_pair_sums(True), _make_pair_sums(False)


# ------------------------------------------------------------- the counting pass --
@njit(nogil=True)
def _walker(cd, cp, cw, ck, w, do_vw, do_pot, do_kin, pos, tp, tw, tg, tl, s_max_w, out_v,
            out_w, out_outside, out_lap, out_g2, out_grad):
    """Pair work of walker ``w`` in the counting contexts: ln psi and V (if ``do_vw``; V
    only with ``do_pot``) and the kinetic sums (if ``do_kin``).  The same operations as the
    quiet pass, so a walker whose quiet pass overflowed gets the same values here, with
    every event counted."""
    n = pos.shape[2]
    ed, ep, ew, ek = at(cd, w), at(cp, w), at(cw, w), at(ck, w)
    av, aw, alap = acc_zero(ep, SUM), acc_zero(ew, SUM), acc_zero(ek, K_LAP_SUM)
    smax = load(ew, s_max_w, S_MAX)
    outside = np.int64(0)
    if do_kin:
        zero = store(ek, const(ek, 0.0, K_GRAD))
        for i in range(n):
            for c in range(3):
                out_grad[w, i, c] = zero
    for i in range(n):
        xi, yi, zi = _atom(ed, pos, w, i)
        for j in range(i + 1, n):
            dx, dy, dz, s = _distance(ed, pos, w, xi, yi, zi, j)
            if do_vw:
                av, aw, out = _vw_pair(ed, ep, ew, s, smax, tp, tw, av, aw, do_pot)
                outside += out
            if do_kin:
                alap = acc_add(ek, alap, _value_l(ek, tl, convert(ek, s, ed, _SL)), K_LAP_SUM)
                g = _value_g(ek, tg, convert(ek, s, ed, _SG))
                for c in range(3):
                    d = dx if c == 0 else (dy if c == 1 else dz)
                    gd = mul(ek, g, convert(ek, d, ed, K_DX), K_GDX)
                    out_grad[w, i, c] = store(ek, add(ek, load(ek, out_grad[w, i, c], K_GRAD),
                                                      gd, K_GRAD))
                    out_grad[w, j, c] = store(ek, sub(ek, load(ek, out_grad[w, j, c], K_GRAD),
                                                      gd, K_GRAD))
    if do_vw:
        out_w[w] = store(ew, acc_value(ew, aw, SUM))
        out_outside[w] = outside
        if do_pot:
            out_v[w] = store(ep, acc_value(ep, av, SUM))
    if do_kin:
        g2 = acc_zero(ek, K_GRAD2_SUM)
        for i in range(n):
            for c in range(3):
                gc = load(ek, out_grad[w, i, c], K_GRAD)
                g2 = acc_add(ek, g2, mul(ek, gc, gc, K_GRAD2), K_GRAD2_SUM)
        out_lap[w] = store(ek, acc_value(ek, alap, K_LAP_SUM))
        out_g2[w] = store(ek, acc_value(ek, g2, K_GRAD2_SUM))


def _kinetic_distance_context(cd):
    pass


@overload(_kinetic_distance_context)
def _ol_kinetic_distance_context(cd):
    """The distance context of a kinetic-only counting pass that follows a successful quiet
    pass.  Typed fixed contexts: the same (their quiet pass counted nothing; an overflow
    would have sent the walker to the full counting pass).  Run-time-format contexts have
    no quiet form, so their quiet pass already counted every distance event: this pass
    counts into a scratch copy of the event rows, and each event is counted once (so do
    float-format and bound contexts, which have no quiet form either: a bound context's
    distance decisions and unbounded elements were recorded by the first pass)."""
    if is_float_format_context(cd) or is_bound_context(cd):
        return lambda cd: (cd[0], np.zeros_like(cd[1]), cd[2], cd[3])
    if isinstance(cd, types.BaseTuple) and isinstance(cd[0], types.Array):
        return lambda cd: (cd[0], np.zeros_like(cd[1]), cd[2])
    return lambda cd: cd


@njit(nogil=True, cache=True)
def _cluster_chunk(cd, cp, cw, ck, k, flags, pos, src_p, src_w, src_g, src_l, s_max_w,
                   out_v, out_w, out_outside, out_lap, out_g2, out_grad):
    """Chunk k of the walkers: a serial function compiled before the parallel loop that
    calls it (the parallel pipeline then only wraps a call; see tables.evaluate).

    Per walker: the quiet pass for ln psi and V; if it overflowed (fixed point) or its
    accumulators could not hold every pair, the counting pass instead; then the counting
    pass for the kinetic sums only, if asked for (its distance operations are those of the
    quiet pass, and :func:`_kinetic_distance_context` keeps them from being counted twice)."""
    do_pot, do_kin = flags[0] != 0, flags[1] != 0
    tp, tw, tg, tl = prepare(src_p), prepare(src_w), prepare(src_g), prepare(src_l)
    ccd, ccp, ccw, cck = chunk(cd, k), chunk(cp, k), chunk(cw, k), chunk(ck, k)
    ckd = chunk(_kinetic_distance_context(cd), k)
    lo, hi = chunk_bounds(cd, pos.shape[0], k)
    n = pos.shape[2]
    n_pairs = n * (n - 1) // 2
    for w in range(lo, hi):
        ep, ew = quiet(at(ccp, w)), quiet(at(ccw, w))
        quiet_ok = acc_fits(ew, SUM, n_pairs) and (not do_pot or acc_fits(ep, SUM, n_pairs))
        if quiet_ok:
            if do_pot:
                v, lw, outside, flag = _pair_sums_vw(ccd, ccp, ccw, w, pos, tp, tw, s_max_w)
            else:
                v, lw, outside, flag = _pair_sums_w(ccd, ccp, ccw, w, pos, tp, tw, s_max_w)
            quiet_ok = flag == 0
            if quiet_ok:
                out_w[w] = lw
                out_outside[w] = outside
                if do_pot:
                    out_v[w] = v
        if do_kin or not quiet_ok:
            _walker(ckd if quiet_ok else ccd, ccp, ccw, cck, w, not quiet_ok, do_pot, do_kin,
                    pos, tp, tw, tg, tl, s_max_w, out_v, out_w, out_outside, out_lap, out_g2,
                    out_grad)


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
    pos : (n_walkers, 3, n_atoms)
        Positions (A) by coordinate, as floats of the distance kernel's type or raw words
        of ``x``.
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
    tw = prepare(src_w)
    ccd, ccw = chunk(cd, k), chunk(cw, k)
    lo, hi = chunk_bounds(cd, pos.shape[0], k)
    n = pos.shape[1]
    for w in range(lo, hi):
        ed, ew = at(ccd, w), at(ccw, w)
        smax = load(ew, s_max_w, S_MAX)
        old = acc_zero(ew, SUM)
        nw = acc_zero(ew, SUM)
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
                t2 = _value_0(ew, tw, sw)
                if which == 0:
                    old = acc_add(ew, old, t2, SUM)
                else:
                    nw = acc_add(ew, nw, t2, SUM)
                    if not less(ew, sw, smax):
                        outside += 1
        out_old[w] = store(ew, acc_value(ew, old, SUM))
        out_new[w] = store(ew, acc_value(ew, nw, SUM))
        out_outside[w] = outside


@njit(parallel=True, cache=True)
def atom_kernel(cd, cw, pos, atom, new, src_w, s_max_w, out_old, out_new, out_outside):
    """For a move of atom ``atom`` of every walker to ``new`` (n_walkers, 3): the sums of
    T2 over its pairs before (``out_old``) and after (``out_new``), and the new pairs
    outside the wave-function table; ``ln psi' - ln psi = new - old``.  ``pos`` is
    (n_walkers, n_atoms, 3) here.  Sums are accumulators (exact in fixed point), so the
    difference of the two is that of the full-configuration sums up to the rounding of
    each sum into its format."""
    for k in prange(n_chunks(cd, pos.shape[0])):
        _atom_chunk(cd, cw, np.int64(k), pos, atom, new, src_w, s_max_w, out_old, out_new,
                    out_outside)
