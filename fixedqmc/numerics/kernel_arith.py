"""Values in and out of a kernel and their arithmetic: :func:`load`, :func:`const`,
:func:`add`, :func:`sub`, :func:`mul` and :func:`store`, for every context kind.

Float contexts: the float cast and the float operation. Fixed contexts with formats compiled
in: the exact operation of :mod:`~fixedqmc.numerics.quantize` rounded once into the output
variable's format (the machine-word forms of :mod:`~fixedqmc.numerics.narrow` where the
formats allow them), compiled once per call signature
(:func:`~fixedqmc.numerics.kernel_core.overload_operation`). Run-time formats: one compiled
routine for every format (``_rt_binary``), float formats included
(:mod:`~fixedqmc.numerics.float_ops`: the exact result rounded once). See
:mod:`fixedqmc.numerics.kernel_core`.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import overload

from fixedqmc.numerics import float_ops as FO
from fixedqmc.numerics import kernel_bound as KB
from fixedqmc.numerics import kernel_float as KF
from fixedqmc.numerics import narrow
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics.float_format import SIGN_BIT
from fixedqmc.numerics.float_ops import as_bits
from fixedqmc.numerics.kernel_core import (COUNTED_OPERATIONS, binary_overload, count_event,
                                           count_operation, element_random_bits,
                                           emit_result, float_params, float_result,
                                           format_row, ids_at_run_time, is_bound_context,
                                           is_fixed_context, is_float_format_context,
                                           is_quiet_context, is_runtime_context,
                                           operation_stub, overload_operation, rounding_bits,
                                           runtime_float_into, runtime_format,
                                           runtime_from_float, runtime_value)
from fixedqmc.numerics.modes import STOCHASTIC

load, const, add, sub, mul, store = map(operation_stub, ("load", "const", "add", "sub", "mul",
                                                         "store"))
load.__doc__ = """``load(e, x, v)``: a kernel input element x (a float, or a raw word of
variable v's format) as a value of v."""
const.__doc__ = """``const(e, x, v)``: the float constant x rounded once into variable v's
format (or cast to the float type)."""
add.__doc__ = """``add(e, x, y, v)``: x + y, exact, rounded once into variable v's format."""
sub.__doc__ = """``sub(e, x, y, v)``: x - y, exact, rounded once into variable v's format."""
mul.__doc__ = """``mul(e, x, y, v)``: x * y, exact, rounded once into variable v's format."""
store.__doc__ = """``store(e, x)``: what a kernel writes to its output array for the value x:
the float, or the raw word."""


@overload(load, prefer_literal=True)
def _load(e, x, v):
    """A kernel input element: a float cast to the context's type, or a raw word of var v."""
    if ids_at_run_time(e, v):
        return None
    if is_bound_context(e):  # the exact input, rounded into v by the trial
        if isinstance(x, types.Complex):  # a bound run's output: value + 1j * bound
            return lambda e, x, v: KB.load_bounded(e, x, v)
        return lambda e, x, v: KB.load(e, np.float64(x), v)
    if is_float_format_context(e):  # inputs are encoded into their formats
        return lambda e, x, v: np.float64(x)
    if is_fixed_context(e):
        if not is_runtime_context(e):
            format_row(e.types[0].table, v, "load")
        if is_quiet_context(e):
            return lambda e, x, v: (np.int64(x), v, np.int64(0))
        return lambda e, x, v: (np.int64(x), v)
    dt = e
    return lambda e, x, v: dt(x)


@overload(const, prefer_literal=True)
def _const(e, x, v):
    """A float constant rounded into variable v's format (or cast to the float type)."""
    if ids_at_run_time(e, v):
        return None
    if is_bound_context(e):
        return lambda e, x, v: KB.load(e, np.float64(x), v)
    if is_float_format_context(e):
        return lambda e, x, v: KF.round_into(e, np.float64(x), v)
    if is_fixed_context(e) and is_runtime_context(e):
        return lambda e, x, v: (runtime_from_float(e, np.float64(x), np.int64(v)), v)
    if is_fixed_context(e):
        so, wo, fo, rnd, ovf = format_row(e.types[0].table, v, "const")
        so = so != 0
        stochastic = rnd == STOCHASTIC

        def impl(e, x, v):
            rb = element_random_bits(e, v) if stochastic else np.uint64(0)
            r, ev = Q.from_float_raw(np.float64(x), so, wo, fo, rnd, ovf, rb)
            return emit_result(e, r, ev, v, np.int64(0))
        return impl
    dt = e
    return lambda e, x, v: dt(x)


@njit(nogil=True, cache=True)
def _rt_binary(op, e, ra, va, rb_, vb, vo):
    """Run-time-format add (op 0), sub (1) or mul (2): one compiled routine for every format.

    Fixed operands and output: the exact operation rounded once.  A float-format output:
    the exact operation on the operands' values rounded once into it.  A float64 output
    (format row of zeros): the operation in float64 on the operands' values.  A float64
    operand and a fixed output: the float64 result rounded once into the output format."""
    sa, wa, fa, _, _ = runtime_format(e, va)
    sb, wb, fb, _, _ = runtime_format(e, vb)
    so, wo, fo, rnd, ovf = runtime_format(e, vo)
    if wo == -2:
        a = as_bits(runtime_value(ra, sa, wa, fa))
        b = as_bits(runtime_value(rb_, sb, wb, fb))
        P = float_params(e, vo)
        if op == 2:
            return float_result(e, FO.mul_bits(a, b, P, rnd, e[2], e[3], vo), vo)
        if op == 1:
            b = b ^ SIGN_BIT
        return float_result(e, FO.add_bits(a, b, P, rnd, e[2], e[3], vo), vo)
    if wo <= 0 or wa <= 0 or wb <= 0:
        count_operation(e, op, va, vb, vo)  # (a profiling context: add, sub, mul are 0-2)
        a = runtime_value(ra, sa, wa, fa)
        b = runtime_value(rb_, sb, wb, fb)
        x = a + b if op == 0 else (a - b if op == 1 else a * b)
        return runtime_float_into(e, x, vo, so, wo, fo, rnd, ovf)
    rbits = rounding_bits(e, vo, rnd)
    if op == 0:
        r, ev = Q.add_raw(ra, sa, fa, rb_, sb, fb, so, wo, fo, rnd, ovf, rbits)
    elif op == 1:
        r, ev = Q.sub_raw(ra, sa, fa, rb_, sb, fb, so, wo, fo, rnd, ovf, rbits)
    else:
        r, ev = Q.mul_raw(ra, sa, fa, rb_, sb, fb, so, wo, fo, rnd, ovf, rbits)
    count_event(e, ev, vo)
    return r


@njit(nogil=True, inline="always")
def _ff_sub(e, x, y, v):
    return KF.add(e, x, -y, v)


assert COUNTED_OPERATIONS[:3] == ("add", "sub", "mul")  # _rt_binary's op codes
# (operation, exact raw operation, float implementation for a float type, float formats,
#  bounds)
_ARITH = ((add, Q.add_raw, lambda dt: lambda e, x, y, v: x + y, KF.add, KB.add),
          (sub, Q.sub_raw, lambda dt: lambda e, x, y, v: x - y, _ff_sub, KB.sub),
          (mul, Q.mul_raw, lambda dt: lambda e, x, y, v: x * y, KF.mul, KB.mul))

for _code, (_op, _raw, _float, _ff, _kb) in enumerate(_ARITH):
    overload_operation(_op, binary_overload(_op.__name__, _code, _raw, _float, _rt_binary,
                                            narrow_op=narrow.binary, inline_general=True,
                                            float_format_op=_ff, bound_op=_kb))


@overload(store)
def _store(e, x):
    """What a kernel writes to its output array: the float, or the raw word (a bound
    context: the value and its bound as one complex number)."""
    if is_bound_context(e):
        return lambda e, x: KB.store(e, x)
    if is_fixed_context(e):
        return lambda e, x: x[0]
    return lambda e, x: x
