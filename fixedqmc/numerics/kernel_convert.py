"""Conversion between kernels: :func:`convert`, a value of one kernel's element context as a
value of a variable of another's (the wire between two hardware units whose formats differ),
for every pair of context kinds (float, formats compiled in, formats read at run time).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core.errors import TypingError

from fixedqmc.numerics import kernel_bound as KB
from fixedqmc.numerics import kernel_float as KF
from fixedqmc.numerics import narrow
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics.kernel_core import (COUNTED_OPERATIONS, count_operation,
                                           element_random_bits, emit_result, flag_of,
                                           float_from_bits, format_row, ids_at_run_time,
                                           is_bound_context, is_fixed_context,
                                           is_float_format_context,
                                           is_runtime_context, operation_stub, overload_operation,
                                           runtime_convert,
                                           runtime_format, runtime_from_float, runtime_value)
from fixedqmc.numerics.modes import STOCHASTIC

_CONVERT = COUNTED_OPERATIONS.index("convert")

convert = operation_stub("convert")
convert.__doc__ = """``convert(e, x, src, v)``: value ``x`` of another kernel's element context
``src`` as a value of variable ``v`` of ``e``'s kernel (the wire between two hardware units whose
formats differ).  Fixed to fixed: the exact value rounded once into v's format with v's
rounding and overflow modes (an overflow counts as an event of v); float to fixed: the
float rounded once likewise; fixed to float: the word's value in the float type (exact for
words of at most 24 (float32) or 53 (float64) significant bits, else rounded to nearest);
float to float: a cast."""


def _convert(e, x, src, v):
    """The typing of :func:`convert` (registered by
    :func:`~fixedqmc.numerics.kernel_core.overload_operation`); ids as int64s where both
    contexts read formats at run time (a source with formats compiled in needs its value's
    literal id)."""
    if (ids_at_run_time(e, x, v)
            and not (is_fixed_context(src) and not is_runtime_context(src))):
        return None
    if is_bound_context(e) or is_bound_context(src):
        if not (is_bound_context(e) and is_bound_context(src)):
            raise TypingError("convert: a bound context converts only values of another "
                              "bound context (run every kernel of the chain bounded)")
        return lambda e, x, src, v: KB.result(e, np.int64(v), x[0], x[1], x[2])
    if is_float_format_context(e):
        return _convert_to_float_format(src, x)
    if not is_fixed_context(e):
        dt = e
        if not is_fixed_context(src):
            return lambda e, x, src, v: dt(x)
        if is_runtime_context(src):
            def rt_to_float(e, x, src, v):
                sa, wa, fa, _, _ = runtime_format(src, x[1])
                return dt(runtime_value(x[0], sa, wa, fa))
            return rt_to_float
        sa, _, fa, _, _ = format_row(src.types[0].table, x.types[1], "convert (source)")
        scale = 2.0 ** -fa
        if sa:
            return lambda e, x, src, v: dt(np.float64(x[0]) * scale)
        return lambda e, x, src, v: dt(np.float64(np.uint64(x[0])) * scale)
    if is_runtime_context(e):
        # (counted in a profiling context, its operand unnamed: it may be another kernel's)
        if not is_fixed_context(src):
            def from_float(e, x, src, v):
                count_operation(e, _CONVERT, -1, -1, v)
                return (runtime_from_float(e, np.float64(x), np.int64(v)), v)
            return from_float
        if is_runtime_context(src):
            def rt_rt(e, x, src, v):
                count_operation(e, _CONVERT, -1, -1, v)
                sa, wa, fa, _, _ = runtime_format(src, x[1])
                return (runtime_convert(e, x[0], sa, wa, fa, np.int64(v)), v)
            return rt_rt
        sa, wa, fa, _, _ = format_row(src.types[0].table, x.types[1], "convert (source)")
        sa = sa != 0

        def typed_rt(e, x, src, v):
            count_operation(e, _CONVERT, -1, -1, v)
            return (runtime_convert(e, x[0], sa, wa, fa, np.int64(v)), v)
        return typed_rt
    so, wo, fo, rnd, ovf = format_row(e.types[0].table, v, "convert")
    so = so != 0
    stochastic = rnd == STOCHASTIC
    if not is_fixed_context(src):
        def from_float(e, x, src, v):
            rb = element_random_bits(e, v) if stochastic else np.uint64(0)
            r, ev = Q.from_float_raw(np.float64(x), so, wo, fo, rnd, ovf, rb)
            return emit_result(e, r, ev, v, np.int64(0))
        return from_float
    if is_runtime_context(src):
        def from_rt(e, x, src, v):
            sa, wa, fa, _, _ = runtime_format(src, x[1])
            rb = element_random_bits(e, v) if stochastic else np.uint64(0)
            if wa <= 0:
                r, ev = Q.from_float_raw(float_from_bits(x[0]), so, wo, fo, rnd, ovf, rb)
            else:
                r, ev = Q.add_raw(x[0], sa, fa, np.int64(0), True, fa, so, wo, fo, rnd, ovf, rb)
            return emit_result(e, r, ev, v, np.int64(0))
        return from_rt
    sa, wa, fa, _, _ = format_row(src.types[0].table, x.types[1], "convert (source)")
    sa = sa != 0
    op = narrow.cast((sa, wa, fa), (so, wo, fo, rnd, ovf))
    if op is None:
        op = njit(lambda ra, rbits: Q.add_raw(ra, sa, fa, np.int64(0), True, fa, so, wo, fo,
                                              rnd, ovf, rbits), nogil=True, inline="always")

    def impl(e, x, src, v):
        rb = element_random_bits(e, v) if stochastic else np.uint64(0)
        r, ev = op(x[0], rb)
        return emit_result(e, r, ev, v, flag_of(x))
    return impl


def _convert_to_float_format(src, x):
    """convert into a float-format context: a float (or float-format) value rounded once
    into v; a fixed word's exact value rounded once."""
    if not is_fixed_context(src):
        return lambda e, x, src, v: KF.round_into(e, np.float64(x), np.int64(v))
    if is_runtime_context(src):
        def from_rt(e, x, src, v):
            sa, wa, fa, _, _ = runtime_format(src, x[1])
            if wa <= 0:
                return KF.round_into(e, float_from_bits(x[0]), np.int64(v))
            return KF.fixed_into(e, x[0], sa, fa, np.int64(v))
        return from_rt
    sa, _, fa, _, _ = format_row(src.types[0].table, x.types[1], "convert (source)")
    sa = sa != 0
    return lambda e, x, src, v: KF.fixed_into(e, x[0], sa, fa, np.int64(v))


overload_operation(convert, _convert)
