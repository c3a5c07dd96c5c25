"""The two-region table lookup, written once for every kernel that reads a table.

The lookup of HAQMC (seed 002, Sec. 3; the kernels of its Fig. 9) for a
:class:`~fixedqmc.tables.two_region.TwoRegionTable` at a squared distance ``s``, against the
generic operations of :mod:`fixedqmc.numerics.kernel`, so that one source serves float64,
float32 and fixed point::

    region  = I if s < sigma else II
    ds      = s - s_lo                     s_lo = s_min (I) or sigma (II)
    t       = ds * inv                     inv = 1 / (s_hi - s_lo) per region, t in [0, 1)
    (k, u)  = uniform_bin(t, log2 n1)      region I: n1 uniform bins
            | log2_bin(t, n_seg, log2 n_bin)   region II: power-of-two segments
    y       = a[k] + u (b[k] + u c[k])     Horner: uc = u c, buc = b + uc, ubuc = u buc

and, in a lookup that undoes the rescaling in the kernel (``unscale=True``),

    ys      = y * scale                    scale, off per region (TwoRegionTable.scale,
    f       = ys + off                     .offset): f in the table's units

Both :mod:`fixedqmc.tables.evaluate` (``unscale=False``: the host undoes the rescaling and
the transform) and the helium pair kernels (:mod:`fixedqmc.systems.helium.kernels`, sums in
physical units) compile this lookup, through :func:`make_lookup`: the variable ids are
closure constants ``base + position`` in :data:`LOOKUP_VARIABLES` (then
:data:`UNSCALE_VARIABLES`), so a kernel holding several tables gives each its own base.  The
fixed-point semantics of every step are those documented in :mod:`fixedqmc.tables.evaluate`.

A *table source* (host side) is the tuple ``(s_lo, inv, abc, n1_bits, n_seg, bin_bits)``,
followed by ``(off, scale)`` for an unscaling lookup: ``s_lo = (s_min, sigma)``, ``inv``,
``off`` and ``scale`` arrays of shape (2,) (per region), the coefficients of bin k in row k of
``abc`` (shape (n_bins, 4): a, b, c and a pad, so that one bin's three coefficients share a
cache line; region I's ``n1`` bins then region II's), all in the kernel's number type (fixed:
raw words of the variables' formats, see :func:`coefficient_rows`).  Inside a kernel
:func:`prepare_table` turns it into scalars and the address of ``abc``, which the lookup reads
by :func:`table_at`: no array is reference-counted in the loop that calls the lookup, so a
store-free pair loop can vectorise (:mod:`fixedqmc.numerics.vectorise`).  The caller keeps
``abc`` alive.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import intrinsic, overload

from fixedqmc.numerics.kernel import (add, is_bound_context, is_fixed_context,
                                      is_float_format_context, less, load, log2_bin, mul, sub,
                                      uniform_bin)
from fixedqmc.numerics.kernel_bound import either
from fixedqmc.numerics.kernel_lookup import bounded_bins

__all__ = ["LOOKUP_VARIABLES", "UNSCALE_VARIABLES", "coefficient_rows", "make_lookup",
           "prepare_table", "table_at"]

#: Variables of a lookup, in id order from its base id: (name, meaning).
LOOKUP_VARIABLES = (
    ("s", "input squared distance s (s units)"),
    ("ds", "s - s_lo of the region (s units)"),
    ("inv", "1 / (s_hi - s_lo), per region (1 / s units)"),
    ("t", "position in the region, [0, 1)"),
    ("u", "position in the bin, [0, 1)"),
    ("a", "constant coefficient"),
    ("b", "linear coefficient"),
    ("c", "quadratic coefficient"),
    ("uc", "u * c"),
    ("buc", "b + u c"),
    ("ubuc", "u (b + u c)"),
    ("y", "rescaled value g = a + u (b + u c)"),
)
#: Variables that follow :data:`LOOKUP_VARIABLES` in a lookup that undoes the rescaling.
UNSCALE_VARIABLES = (
    ("scale", "scale of the region's rescaling"),
    ("off", "offset of the region's rescaling"),
    ("ys", "y * scale"),
    ("f", "f = y scale + off (the table's units)"),
)


def coefficient_rows(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The ``abc`` array of a table source: row k = (a[k], b[k], c[k], 0), in a's dtype."""
    abc = np.zeros((np.size(a), 4), np.asarray(a).dtype)
    abc[:, 0], abc[:, 1], abc[:, 2] = a, b, c
    return abc


# ------------------------------------------------------ coefficients by address --
def _peek_of(nbtype):
    """``peek(address, index)``: element ``index`` of the ``nbtype`` array at ``address``."""
    @intrinsic
    def peek(typingctx, address, index):
        def codegen(context, builder, signature, args):
            ptr = builder.inttoptr(args[0], context.get_data_type(nbtype).as_pointer())
            return builder.load(builder.gep(ptr, [args[1]]))
        return nbtype(types.int64, types.uint64), codegen
    return peek


_PEEK = {t: _peek_of(t) for t in (types.float64, types.float32, types.int64)}


def table_at(e, address, k):
    """``table_at(e, address, k)``: element k of a prepared table's ``abc`` (numba only)."""
    raise NotImplementedError("table_at() is usable only inside numba-compiled kernels")


@overload(table_at, inline="always")
def _ol_table_at(e, address, k):
    """Coefficient k of a prepared table in e's number type (fixed: raw int64 words;
    float-format and bound contexts: float64 values)."""
    peek = _PEEK[types.int64 if is_fixed_context(e)
                 else types.float64 if is_float_format_context(e) or is_bound_context(e)
                 else e]
    return lambda e, address, k: peek(address, k)


def prepare_table(src):
    """``prepare_table(src)``: a table source as the lookup reads it (numba only)."""
    raise NotImplementedError("prepare_table() is usable only inside numba-compiled kernels")


@overload(prepare_table)
def _ol_prepare_table(src):
    """``(s_lo0, s_lo1, inv0, inv1, address of abc, n1_bits, n_seg, bin_bits)`` and, for a
    source with the rescaling, ``(off0, off1, scale0, scale1)`` after them."""
    if len(src) == 8:
        def with_scaling(src):
            s_lo, inv, abc, n1_bits, n_seg, bin_bits, off, scale = src
            return (s_lo[0], s_lo[1], inv[0], inv[1], np.int64(abc.ctypes.data), n1_bits,
                    n_seg, bin_bits, off[0], off[1], scale[0], scale[1])
        return with_scaling

    def plain(src):
        s_lo, inv, abc, n1_bits, n_seg, bin_bits = src
        return (s_lo[0], s_lo[1], inv[0], inv[1], np.int64(abc.ctypes.data), n1_bits, n_seg,
                bin_bits)
    return plain


# ------------------------------------------------------------------- the lookup --
def make_lookup(base: int, unscale: bool):
    """The lookup with variable ids ``base + k`` (k: position in :data:`LOOKUP_VARIABLES`
    followed, if ``unscale``, by :data:`UNSCALE_VARIABLES`), compiled inline wherever it
    is called.  Returns ``(region_two, lookup_in, lookup)``:

    ``region_two(e, tab, s)``
        True if ``s`` (a value of variable s) lies in region II: ``not s < sigma``;
    ``lookup_in(e, tab, s, r)``
        the value at ``s`` in region II if ``r`` else I: ``y``, or ``f`` if ``unscale``;
    ``lookup(e, tab, s)``
        ``lookup_in(e, tab, s, region_two(e, tab, s))``.

    ``tab`` is a prepared table (:func:`prepare_table`; with the rescaling if ``unscale``).
    A kernel may call ``region_two`` and ``lookup_in`` apart, e.g. to sort a block of
    elements by region first (:mod:`fixedqmc.tables.evaluate`)."""
    vs, vds, vinv, vt, vu, va, vb, vc, vuc, vbuc, vubuc, vy = (
        base + k for k in range(len(LOOKUP_VARIABLES)))
    vscale, voff, vys, vf = (base + len(LOOKUP_VARIABLES) + k
                             for k in range(len(UNSCALE_VARIABLES)))

    def region_two(e, tab, s):
        return not less(e, s, load(e, tab[1], vs))

    def horner(e, p_abc, idx, u):
        k = np.uint64(idx) << np.uint64(2)  # row idx of abc
        y = mul(e, u, load(e, table_at(e, p_abc, k + np.uint64(2)), vc), vuc)
        y = add(e, load(e, table_at(e, p_abc, k + np.uint64(1)), vb), y, vbuc)
        y = mul(e, u, y, vubuc)
        return add(e, load(e, table_at(e, p_abc, k), va), y, vy)

    def position(e, tab, s, r):
        s_lo0, s_lo1, inv0, inv1 = tab[:4]
        return mul(e, sub(e, s, load(e, s_lo1 if r else s_lo0, vs), vds),
                   load(e, inv1 if r else inv0, vinv), vt)

    horner = njit(horner, nogil=True, inline="always")
    position = njit(position, nogil=True, inline="always")

    def quadratic(e, tab, s, r):
        p_abc, n1_bits, n_seg, bin_bits = tab[4:8]
        t = position(e, tab, s, r)
        if r:
            idx, u = log2_bin(e, t, n_seg, bin_bits, vu)
            idx += np.int64(1) << n1_bits
        else:
            idx, u = uniform_bin(e, t, n1_bits, vu)
        return horner(e, p_abc, idx, u)

    def quadratic_bounded(e, tab, s, r):
        # the trial may take an adjacent bin: both pieces, joined (docs/error_bounds.md)
        p_abc, n1_bits, n_seg, bin_bits = tab[4:8]
        t = position(e, tab, s, r)
        k, u, k2, u2, cross_x = bounded_bins(e, t, r, n1_bits, n_seg, bin_bits, vu)
        first = (np.int64(1) << n1_bits) if r else np.int64(0)
        y = horner(e, p_abc, k + first, u)
        if k2 < 0:
            return y
        return either(y, horner(e, p_abc, k2 + first, u2), cross_x)

    def value_of(e, tab, s, r):
        raise NotImplementedError("usable only inside numba-compiled kernels")

    @overload(value_of, inline="always")
    def _ol_value_of(e, tab, s, r):  # the bound context follows a bin crossing
        return quadratic_bounded if is_bound_context(e) else quadratic

    if unscale:
        def lookup_in(e, tab, s, r):
            y = value_of(e, tab, s, r)
            off0, off1, sc0, sc1 = tab[8:]
            return add(e, mul(e, y, load(e, sc1 if r else sc0, vscale), vys),
                       load(e, off1 if r else off0, voff), vf)
    else:
        lookup_in = value_of
    region_two = njit(region_two, nogil=True, inline="always")
    if unscale:
        lookup_in = njit(lookup_in, nogil=True, inline="always")

    def lookup(e, tab, s):
        return lookup_in(e, tab, s, region_two(e, tab, s))

    return region_two, lookup_in, njit(lookup, nogil=True, inline="always")
