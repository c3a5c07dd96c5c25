"""Comparison and table lookup: :func:`less`, :func:`uniform_bin` and :func:`log2_bin`.

Generic operations of the two-region table kernel (:mod:`fixedqmc.tables.evaluate`; HAQMC,
seed 002, Sec. 3): the region test and the bin index, the one step of a table lookup whose
arithmetic depends on the number type.  Float contexts compute the index with floor and
frexp; fixed contexts read it straight off the bits of the raw word of t, as hardware does.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros as _leading_zeros
from numba.extending import overload

from fixedqmc.numerics import kernel_float as KF
from fixedqmc.numerics import narrow
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics import kernel_bound as KB
from fixedqmc.numerics.kernel_core import (COUNTED_OPERATIONS, count_event, count_operation,
                                           emit_result, flag_of, float_from_bits, format_row,
                                           is_fixed_context, is_float_format_context,
                                           is_runtime_context,
                                           operation_stub, rounding_bits, runtime_float_into,
                                           runtime_format, runtime_value, is_bound_context)

less, uniform_bin, log2_bin = map(operation_stub, ("less", "uniform_bin", "log2_bin"))
less.__doc__ = """``less(e, x, y)``: exact ``x < y`` (a bool) of two kernel values, any formats."""
uniform_bin.__doc__ = """``uniform_bin(e, t, n_bits, vu) -> (k, u)``: bin of ``t`` among
``2**n_bits`` uniform bins of [0, 1).

``t`` is clamped to [0, 1) (a fixed ``t`` outside [0, 1 - lsb] is counted as an overflow event
of t's variable), ``k = floor(t 2**n_bits)`` (int64) and ``u = t 2**n_bits - k`` in [0, 1),
a value of variable ``vu``.  Fixed: ``k`` is the top ``n_bits`` of t's ``F_t`` fractional
bits, ``u`` the remaining ``F_t - n_bits`` bits (a UQ0.(F_t - n_bits) value) cast once into
``vu``'s format with its rounding and overflow modes.  Float: the same with ``floor``."""
log2_bin.__doc__ = """``log2_bin(e, t, n_seg, bin_bits, vu) -> (index, u)``: the bin of ``t`` in
``n_seg`` power-of-two segments of ``2**bin_bits`` uniform bins each.

Segment ``j < n_seg - 1`` covers [2**-(j+1), 2**-j) with local coordinate
``w = (t - 2**-(j+1)) 2**(j+1)``; the last covers [0, 2**-(n_seg-1)) with ``w = t 2**(n_seg-1)``.
``m = floor(w 2**bin_bits)``, ``u = w 2**bin_bits - m``; ``index = j 2**bin_bits + m``.
Fixed: ``j`` is the leading-zero count of t's ``F_t``-bit word (capped at ``n_seg - 1``), ``m``
the ``bin_bits`` bits after the leading one (at the fixed position ``F_t - n_seg + 1`` for the
last segment), ``u`` the bits below them, cast once into ``vu``'s format.  Float: the binary
exponent of t (as ``frexp``, read exactly with a leading-zero count of ``floor(t 2**63)``).
``t`` is clamped like in :func:`uniform_bin`."""

_U0, _U1 = np.uint64(0), np.uint64(1)


@njit(nogil=True, cache=True)
def _rt_less(e, ra, va, rb_, vb):
    """Run-time-format less: exact compare of fixed words, float64 compare otherwise."""
    sa, wa, fa, _, _ = runtime_format(e, va)
    sb, wb, fb, _, _ = runtime_format(e, vb)
    if wa <= 0 or wb <= 0:
        count_operation(e, _LESS, va, vb, va)
        return runtime_value(ra, sa, wa, fa) < runtime_value(rb_, sb, wb, fb)
    return Q.compare_raw(ra, sa, fa, rb_, sb, fb) < 0


@overload(less, prefer_literal=True)
def _less(e, x, y):
    """Exact ``x < y`` (a bool) of two values, in any formats."""
    if is_bound_context(e):
        return lambda e, x, y: KB.less(e, x, y)
    if not is_fixed_context(e):
        return lambda e, x, y: x < y
    if is_runtime_context(e):
        return lambda e, x, y: _rt_less(e, x[0], np.int64(x[1]), y[0], np.int64(y[1]))
    table = e.types[0].table
    sa, wa, fa, _, _ = format_row(table, x.types[1], "less (first operand)")
    sb, wb, fb, _, _ = format_row(table, y.types[1], "less (second operand)")
    sa, sb = sa != 0, sb != 0
    if sa == sb and fa == fb:
        if sa:
            return lambda e, x, y: x[0] < y[0]
        return lambda e, x, y: np.uint64(x[0]) < np.uint64(y[0])  # 64-bit unsigned words
    g = max(fa, fb)
    sha, shb = np.int64(g - fa), np.int64(g - fb)
    if max(narrow.magnitude_bits(sa, wa) + g - fa, narrow.magnitude_bits(sb, wb) + g - fb) <= 62:
        return lambda e, x, y: (x[0] << sha) < (y[0] << shb)  # both aligned words fit int64
    return lambda e, x, y: Q.compare_raw(x[0], sa, fa, y[0], sb, fb) < 0


@njit
def _unit_word(raw, signed, frac):
    """A word of ``frac`` fractional bits clamped to [0, 1 - 2**-frac] as a uint64 of at
    most ``frac`` bits, and 1 if it had to be clamped."""
    if signed and raw < 0:
        return _U0, 1
    w = np.uint64(raw)
    if frac < 64:
        top = (_U1 << np.uint64(frac)) - _U1
        if w > top:
            return top, 1
    return w, 0


@njit
def _split(w, sh, shmax):
    """(w >> sh, low sh bits of w) for 0 <= sh <= 64; (w << -sh, 0) for sh < 0.  ``shmax``
    bounds sh (t's fractional bits: a compile-time constant in typed kernels)."""
    if shmax >= 64 and sh >= 64:
        return _U0, w
    if sh >= 0:
        return w >> np.uint64(sh), w & ((_U1 << np.uint64(sh)) - _U1)
    if sh <= -64:
        return _U0, _U0
    return w << np.uint64(-sh), _U0


@njit
def _fraction_to(ur, fsrc, fmax, su, wu, fu, rnd, ovf, rbits):
    """The fraction ``ur * 2**-fsrc`` (``ur < 2**fsrc``, a value in [0, 1)) rounded once into
    the format (su, wu, fu); returns (raw, event).  Exact (no event) when fsrc <= fu and the
    format holds every value below 1 (``fu <= wu - su``: no negative integer bits); a format
    with negative integer bits takes the general cast, which saturates or wraps and counts.
    ``fmax`` bounds fsrc (t's fractional bits: a compile-time constant in typed kernels,
    where it removes the 192-bit path from the code when it is at most 62)."""
    if fmax <= fu or fsrc <= fu:  # (the first test prunes the rest at compile time)
        if fu <= wu - su:
            return np.int64(ur << np.uint64(fu - fsrc)), 0
        return Q.cast_raw(np.int64(ur), False, fsrc, su, wu, fu, rnd, ovf, rbits)
    if fmax <= 62 or fsrc <= 62:
        return Q.finish_i64(np.int64(ur), fsrc - fu, su, wu, rnd, ovf, rbits)
    return Q.cast_raw(np.int64(ur), False, fsrc, su, wu, fu, rnd, ovf, rbits)


def _bin_typing(name, e, t, vu, core, float_impl_maker, impl_maker):
    """The implementation of a bin operation for a context type: float, run-time formats
    or a format table; the two fixed ones call ``core`` on the raw word of t; float formats
    the float64 operation, u rounded once into vu."""
    if is_bound_context(e):  # the bin of t's float64 value, its cell checked
        if name == "uniform_bin":
            def bounded_uniform(e, t, n_bits, vu):
                k, u = _uniform_f64(e, t[0], n_bits, vu)
                return KB.uniform_bin(e, t, k, u, n_bits, np.int64(vu))
            return bounded_uniform

        def bounded_log2(e, t, n_seg, bin_bits, vu):
            k, u = _log2_f64(e, t[0], n_seg, bin_bits, vu)
            return KB.log2_bin(e, t, k, u, n_seg, bin_bits, np.int64(vu))
        return bounded_log2
    if is_float_format_context(e):
        if name == "uniform_bin":
            def uniform(e, t, n_bits, vu):
                k, u = _uniform_f64(e, t, n_bits, vu)
                return k, KF.round_into(e, u, np.int64(vu))
            return uniform

        def log2(e, t, n_seg, bin_bits, vu):
            k, u = _log2_f64(e, t, n_seg, bin_bits, vu)
            return k, KF.round_into(e, u, np.int64(vu))
        return log2
    if not is_fixed_context(e):
        one = np.dtype(str(e)).type(1.0)
        # the largest float below 1 in the context's type: t is clamped to [0, this]
        return float_impl_maker(e, np.nextafter(one, one - one))
    if is_runtime_context(e):
        return impl_maker(_RUNTIME_BINS[core], None)
    table = e.types[0].table
    st, _, ft, _, _ = format_row(table, t.types[1], f"{name} (t)")
    su, wu, fu, rnd, ovf = format_row(table, vu, name)
    fmts = (st != 0, ft, t.types[1].literal_value, su != 0, wu, fu, rnd, ovf)
    return impl_maker(core, njit(lambda e, t, vu: fmts))


def _uniform_impl(core, formats):
    if formats is None:  # run-time formats: core reads them
        def runtime(e, t, n_bits, vu):
            k, r = core(e, t[0], np.int64(t[1]), (n_bits,), np.int64(vu))
            return k, (r, vu)
        return runtime

    def impl(e, t, n_bits, vu):
        st, ft, tv, su, wu, fu, rnd, ovf = formats(e, t, vu)
        k, r, et, eu = core(e, t[0], st, ft, (n_bits,), su, wu, fu, rnd, ovf, np.int64(vu))
        count_event(e, et, tv)
        return k, emit_result(e, r, eu, vu, flag_of(t) | et)
    return impl


def _log2_impl(core, formats):
    if formats is None:
        def runtime(e, t, n_seg, bin_bits, vu):
            k, r = core(e, t[0], np.int64(t[1]), (n_seg, bin_bits), np.int64(vu))
            return k, (r, vu)
        return runtime

    def impl(e, t, n_seg, bin_bits, vu):
        st, ft, tv, su, wu, fu, rnd, ovf = formats(e, t, vu)
        k, r, et, eu = core(e, t[0], st, ft, (n_seg, bin_bits), su, wu, fu, rnd, ovf,
                            np.int64(vu))
        count_event(e, et, tv)
        return k, emit_result(e, r, eu, vu, flag_of(t) | et)
    return impl


@njit(nogil=True)
def _uniform_core(e, traw, st, ft, layout, su, wu, fu, rnd, ovf, vu):
    """Fixed uniform_bin on the raw word of t: (k, raw u, event of t, event of u)."""
    (n_bits,) = layout
    w, et = _unit_word(traw, st, ft)
    sh = ft - n_bits
    k, ur = _split(w, sh, ft)
    r, eu = _fraction_to(ur, max(sh, 0), ft, su, wu, fu, rnd, ovf, rounding_bits(e, vu, rnd))
    return np.int64(k), r, et, eu


def _uniform_float(dt, one_below):
    def impl(e, t, n_bits, vu):
        tc = min(max(t, dt(0.0)), one_below)
        n = np.int64(1) << n_bits
        x = tc * dt(n)  # exact (a power of two), below n: floor(x) <= n - 1
        k = np.floor(x)
        return np.int64(k), dt(x - k)
    return impl


@njit(nogil=True)
def _log2_core(e, traw, st, ft, layout, su, wu, fu, rnd, ovf, vu):
    """Fixed log2_bin on the raw word of t: (index, raw u, event of t, event of u)."""
    n_seg, bin_bits = layout
    w, et = _unit_word(traw, st, ft)
    last = n_seg - 1
    j = last
    p = ft - last  # fractional bits of w within the last (denormal) segment
    x = w
    if w != _U0:
        lz = np.int64(_leading_zeros(w)) - (64 - ft)  # leading zeros of the ft-bit word
        if lz < last:
            j = lz
            p = ft - lz - 1  # bits after the leading one
            x = w - (_U1 << np.uint64(p))
    sh = p - bin_bits
    m, ur = _split(x, sh, ft)
    r, eu = _fraction_to(ur, max(sh, 0), ft, su, wu, fu, rnd, ovf, rounding_bits(e, vu, rnd))
    return (j << bin_bits) + np.int64(m), r, et, eu


def _log2_float(dt, one_below):
    two63 = np.float64(2.0**63)

    def impl(e, t, n_seg, bin_bits, vu):
        tc = np.float64(min(max(t, dt(0.0)), one_below))
        last = n_seg - 1
        # the binary exponent of tc as frexp would give it, without a libm call: for tc in
        # [2**-(j+1), 2**-j) the integer floor(tc 2**63) lies in [2**(62-j), 2**(63-j))
        lz = np.int64(_leading_zeros(np.uint64(tc * two63))) - 1  # = j (64 for tc < 2**-63)
        inner = lz < last
        j = min(lz, last)
        # exact: w = tc 2**(j+1) - 1 (Sterbenz) in segment j < last, tc 2**last in the last;
        # the power of two built from its exponent bits (no division, no branch)
        w = (tc * float_from_bits((np.int64(1023) + j + np.int64(inner)) << 52)
             - (1.0 if inner else 0.0))
        nb = np.int64(1) << bin_bits
        x = w * nb  # exact, and below nb since w < 1: floor(x) <= nb - 1
        m = np.floor(x)
        return j * nb + np.int64(m), dt(x - m)  # x - m is exact in dt (as many bits as t)
    return impl


_ONE_BELOW = np.nextafter(1.0, 0.0)
_uniform_f64 = njit(_uniform_float(np.float64, _ONE_BELOW), nogil=True)
_log2_f64 = njit(_log2_float(np.float64, _ONE_BELOW), nogil=True)


def _runtime_bin(core, float_bin, code):
    """A bin operation with run-time formats: the fixed ``core`` on a fixed t, the float64
    operation on a float64 t; u stored into its variable's format (or as float64 bits);
    counted as operation ``code`` in a profiling context."""
    @njit(nogil=True)
    def rt(e, traw, tv, layout, vu):
        st, wt, ft, _, _ = runtime_format(e, tv)
        su, wu, fu, rnd, ovf = runtime_format(e, vu)
        if wt > 0 and wu > 0:
            k, r, et, eu = core(e, traw, st, ft, layout, su, wu, fu, rnd, ovf, vu)
            count_event(e, et, tv)
            count_event(e, eu, vu)
            return k, r
        if wt <= 0:
            count_operation(e, code, tv, -1, vu)
            k, u = float_bin(0.0, float_from_bits(traw), *layout, 0)
        else:  # fixed t, float64 u: the fixed bin, then u's exact value
            k, r, et, _ = core(e, traw, st, ft, layout, False, 64, 64, 0, 0, vu)
            count_event(e, et, tv)
            u = np.float64(np.uint64(r)) * 2.0 ** -64
        return k, runtime_float_into(e, u, vu, su, wu, fu, rnd, ovf)
    return rt


@overload(uniform_bin, prefer_literal=True, inline="always")
def _uniform_bin(e, t, n_bits, vu):
    return _bin_typing("uniform_bin", e, t, vu, _uniform_core, _uniform_float, _uniform_impl)


@overload(log2_bin, prefer_literal=True, inline="always")
def _log2_bin(e, t, n_seg, bin_bits, vu):
    return _bin_typing("log2_bin", e, t, vu, _log2_core, _log2_float, _log2_impl)


_RUNTIME_BINS = {
    _uniform_core: _runtime_bin(_uniform_core, _uniform_f64,
                                COUNTED_OPERATIONS.index("uniform_bin")),
    _log2_core: _runtime_bin(_log2_core, _log2_f64, COUNTED_OPERATIONS.index("log2_bin"))}
_LESS = COUNTED_OPERATIONS.index("less")


@njit(nogil=True)
def bounded_bins(e, t, two, n1_bits, n_seg, bin_bits, vu):
    """A table's bin of t in a bound context (region II's :func:`log2_bin` if ``two``,
    else region I's :func:`uniform_bin`), following the trial into an adjacent bin:
    ``(k, u, k2, u2, cross_x)``, with ``k2 = -1`` when t's intervals lie inside bin k (or
    the crossing is ambiguous: counted), else the neighbour's index and t's local
    coordinate there; the lookup evaluates both pieces and joins them
    (:func:`~fixedqmc.numerics.kernel_bound.either`)."""
    if two:
        k, uf = _log2_f64(e, t[0], n_seg, bin_bits, vu)
        lo, hi, slope = KB.log2_edges(k, n_seg, bin_bits)
    else:
        k, uf = _uniform_f64(e, t[0], n1_bits, vu)
        lo, hi, slope = KB.uniform_edges(k, n1_bits)
    u, side, cross_x = KB.bin_crossing(e, t, k, uf, lo, hi, slope, vu)
    if side == 0:
        return k, u, np.int64(-1), u, cross_x
    across = hi if side > 0 else np.nextafter(lo, -np.inf)  # the neighbour's first value
    if two:
        k2, _ = _log2_f64(e, across, n_seg, bin_bits, vu)
        lo2, hi2, slope2 = KB.log2_edges(k2, n_seg, bin_bits)
    else:
        k2, _ = _uniform_f64(e, across, n1_bits, vu)
        lo2, hi2, slope2 = KB.uniform_edges(k2, n1_bits)
    reach = (t[1] + t[2]) * KB.WIDEN
    # the neighbour must share the crossed edge and hold t's whole interval on its side
    if (lo2 != hi if side > 0 else hi2 != lo) or not (
            t[0] + reach < hi2 if side > 0 else t[0] - reach > lo2):
        KB.decide(e, True)
        return k, u, np.int64(-1), u, cross_x
    return k, u, k2, KB.neighbour_u(e, t, lo2, slope2, vu), cross_x
