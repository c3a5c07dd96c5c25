"""Accumulators: sums over many terms (pairs of a cluster) as hardware accumulates them
(:func:`acc_zero`, :func:`acc_add`, :func:`acc_value`, :func:`acc_fits`), and many of them
in one buffer (:func:`acc_array`, :func:`acc_array_clear`, :func:`acc_array_add`,
:func:`acc_array_value`).

Each term is rounded once into the sum variable's format, the terms are added exactly in a
register wide enough for all of them, and the total is overflow-handled once into the
format.  An exact sum is associative, so a loop of them is a reduction and vectorises; fixed
results do not depend on the order of the terms.  A sum in a float format (run-time
formats) is what a float accumulator does: each term rounded once into the format, then
each partial sum rounded once, in the kernel's order of the terms.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import intrinsic, overload

from fixedqmc.numerics import float_ops as FO
from fixedqmc.numerics import kernel_bound as KB
from fixedqmc.numerics import kernel_float as KF
from fixedqmc.numerics import narrow
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics import wideint as W
from fixedqmc.numerics.float_ops import as_bits
from fixedqmc.numerics.kernel_convert import convert
from fixedqmc.numerics.kernel_core import (COUNTED_OPERATIONS, count_event, count_operation,
                                           emit_result, float_from_bits,
                                           float_params, float_result, format_row,
                                           is_float_format_context,
                                           is_fixed_context, is_quiet_context,
                                           is_runtime_context, operation_stub, record_range,
                                           runtime_convert, runtime_float_into, runtime_format,
                                           runtime_value, is_bound_context, ids_at_run_time,
                                           overload_operation)

acc_zero, acc_add, acc_value, acc_fits = map(operation_stub, ("acc_zero", "acc_add",
                                                              "acc_value", "acc_fits"))
acc_array, acc_array_clear, _acc_get, _acc_put = map(
    operation_stub, ("acc_array", "acc_array_clear", "_acc_get", "_acc_put"))
acc_zero.__doc__ = """``acc_zero(e, v)``: an empty accumulator for sums of variable ``v``."""
acc_add.__doc__ = """``acc_add(e, acc, x, v)``: ``acc`` plus the value x rounded once into v's
format (an overflow of that rounding is an event of v).  Float contexts add in the context's
type with a reassociable add: the compiler may split the sum into partial sums (vector
lanes), so float sums are reproducible for a given machine and compiled kernel, not
bit-identical to a left-to-right sum."""
acc_value.__doc__ = """``acc_value(e, acc, v)``: the exact sum of the accumulator,
overflow-handled once into v's format (saturate, wrap or raise, one event of v if it does not
fit), as a value of v."""
acc_fits.__doc__ = """``acc_fits(e, v, n)``: whether a quiet accumulator of v is exact for n
terms (its int64 register needs ``E_v + bit_length(n) <= 62``, see
:mod:`fixedqmc.numerics.narrow`); always true in other contexts, whose fixed accumulators
hold 192 bits."""
acc_array.__doc__ = """``acc_array(e, n, v)``: ``n`` empty accumulators of variable ``v`` in one
buffer (float contexts: an array of the context's type; fixed ones: the exact accumulators'
words).
A loop over the accumulators that adds one term to each (an axpy: ``acc[k] += c[k] x``)
vectorises in float contexts, where a loop over terms into one scalar accumulator cannot
vectorise over the accumulators.  Each accumulator gets the same words as :func:`acc_zero`,
:func:`acc_add` and :func:`acc_value` with the same terms (in fixed point, in any order)."""
acc_array_clear.__doc__ = """``acc_array_clear(e, buf)``: empties every accumulator of ``buf``."""


@intrinsic
def _radd(typingctx, x, y):
    """x + y with LLVM's ``reassoc`` flag (only this add may be reassociated)."""
    def codegen(context, builder, signature, args):
        return builder.fadd(args[0], args[1], flags=("reassoc",))
    return x(x, y), codegen


_W0 = (np.uint64(0), np.uint64(0), np.uint64(0))
_ACC_ADD = COUNTED_OPERATIONS.index("acc_add")


@overload(acc_zero, prefer_literal=True, inline="always")
def _acc_zero(e, v):
    if is_bound_context(e):
        return lambda e, v: KB.acc_zero()
    if is_float_format_context(e):
        return lambda e, v: 0.0
    if not is_fixed_context(e):
        dt = e
        return lambda e, v: dt(0.0)
    if is_quiet_context(e):
        return lambda e, v: (np.int64(0), np.int64(0))
    if is_runtime_context(e):
        return lambda e, v: (_W0, 0.0)
    return lambda e, v: _W0


@overload(acc_fits, prefer_literal=True, inline="always")
def _acc_fits(e, v, n):
    if not is_quiet_context(e):
        return lambda e, v, n: True
    sv, wv, _, _, _ = format_row(e.types[0].table, v, "acc_fits")
    room = 62 - narrow.magnitude_bits(sv != 0, wv)
    return lambda e, v, n: room >= 0 and (np.int64(n) >> np.int64(min(room, 63))) == 0


def _acc_add(e, acc, x, v):
    if ids_at_run_time(e, x, v):
        return None
    if is_bound_context(e):
        return lambda e, acc, x, v: KB.acc_add(e, acc, x, v)
    if is_float_format_context(e):  # the term rounded into v, then the sum rounded
        return lambda e, acc, x, v: KF.add(e, acc, KF.round_into(e, np.float64(x), v), v)
    if not is_fixed_context(e):
        dt = e
        return lambda e, acc, x, v: _radd(acc, dt(x))
    if is_runtime_context(e):
        def runtime(e, acc, x, v):
            sa, wa, fa, _, _ = runtime_format(e, x[1])
            so, wo, fo, rnd, ovf = runtime_format(e, v)
            if wo == -2:  # float format: the term rounded into v, then each sum rounded
                vo = np.int64(v)
                t = runtime_convert(e, x[0], sa, wa, fa, vo)
                s = float_result(e, FO.add_bits(as_bits(acc[1]), np.uint64(t),
                                                float_params(e, vo), rnd, e[2], e[3], vo), vo)
                return (acc[0], float_from_bits(s))
            if wo <= 0:  # float64 sum (profiled: the term's range is recorded)
                t = runtime_value(x[0], sa, wa, fa)
                if wo == -1:
                    record_range(e[1], fo, t)
                    count_operation(e, _ACC_ADD, x[1], -1, v)
                return (acc[0], acc[1] + t)
            r = runtime_convert(e, x[0], sa, wa, fa, np.int64(v))
            return (W.add(acc[0], W.from_raw(r, so)), acc[1])
        return runtime
    so = format_row(e.types[0].table, v, "acc_add")[0] != 0
    if is_quiet_context(e):
        def quiet_add(e, acc, x, v):
            t = convert(e, x, e, v)
            return (acc[0] + t[0], acc[1] | t[2])
        return quiet_add
    return lambda e, acc, x, v: W.add(acc, W.from_raw(convert(e, x, e, v)[0], so))


def _acc_value(e, acc, v):
    if ids_at_run_time(e, v):
        return None
    if is_bound_context(e):
        return lambda e, acc, v: KB.acc_value(e, acc, v)
    if not is_fixed_context(e):
        return lambda e, acc, v: acc
    if is_runtime_context(e):
        def runtime(e, acc, v):
            so, wo, fo, rnd, ovf = runtime_format(e, v)
            if wo == -2:  # float format: the sum is in v's format already
                return (np.int64(as_bits(acc[1])), v)
            if wo <= 0:
                return (runtime_float_into(e, acc[1], np.int64(v), so, wo, fo, rnd, ovf), v)
            r, ev = Q.store(acc[0], so, wo, ovf)
            count_event(e, ev, np.int64(v))
            return (r, v)
        return runtime
    so, wo, _, _, ovf = format_row(e.types[0].table, v, "acc_value")
    so = so != 0
    if is_quiet_context(e):
        def quiet_value(e, acc, v):
            r, ev = Q.store_i64(acc[0], so, wo, ovf)
            return (r, v, acc[1] | ev)
        return quiet_value

    def counted(e, acc, v):
        r, ev = Q.store(acc, so, wo, ovf)
        return emit_result(e, r, ev, v, np.int64(0))
    return counted


overload_operation(acc_add, _acc_add)
overload_operation(acc_value, _acc_value)


# Accumulator arrays: the accumulators of acc_zero/acc_add/acc_value kept in a buffer (float:
# the sums; counted fixed: the three uint64 limbs of each 192-bit sum; quiet: a row of int64
# sums and a row of their flags, so that a loop over the accumulators reads and writes memory
# in order and vectorises; run-time formats: the limbs and the float64 shadow sum).
@overload(acc_array, prefer_literal=True)
def _acc_array(e, n, v):
    if is_bound_context(e):  # a row (v, r, bt, bs, asum, n) per sum (kernel_bound.acc_zero)
        return lambda e, n, v: np.zeros((n, 6), np.float64)
    if is_float_format_context(e):
        return lambda e, n, v: np.zeros(n, np.float64)
    if not is_fixed_context(e):
        dt = e
        return lambda e, n, v: np.zeros(n, dt)
    if is_quiet_context(e):
        return lambda e, n, v: np.zeros((2, n), np.int64)
    if is_runtime_context(e):
        return lambda e, n, v: (np.zeros((n, 3), np.uint64), np.zeros(n, np.float64))
    return lambda e, n, v: np.zeros((n, 3), np.uint64)


@njit(inline="always")
def _clear(a):
    flat = a.reshape(a.size)
    for i in range(flat.size):
        flat[i] = 0


@overload(acc_array_clear)
def _acc_array_clear(e, buf):
    if is_fixed_context(e) and is_runtime_context(e):
        def runtime(e, buf):
            _clear(buf[0])
            _clear(buf[1])
        return runtime
    return lambda e, buf: _clear(buf)


@overload(_acc_get, inline="always")
def _ol_acc_get(e, buf, k):
    """Accumulator k of ``buf`` as the value :func:`acc_add` takes."""
    if is_bound_context(e):
        return lambda e, buf, k: (buf[k, 0], buf[k, 1], buf[k, 2], buf[k, 3], buf[k, 4],
                                  buf[k, 5])
    if not is_fixed_context(e):
        return lambda e, buf, k: buf[k]
    if is_quiet_context(e):
        return lambda e, buf, k: (buf[0, k], buf[1, k])
    if is_runtime_context(e):
        return lambda e, buf, k: ((buf[0][k, 0], buf[0][k, 1], buf[0][k, 2]), buf[1][k])
    return lambda e, buf, k: (buf[k, 0], buf[k, 1], buf[k, 2])


@overload(_acc_put, inline="always")
def _ol_acc_put(e, buf, k, acc):
    """Accumulator k of ``buf`` set to ``acc``."""
    if is_bound_context(e):
        def put(e, buf, k, acc):
            buf[k, 0], buf[k, 1], buf[k, 2], buf[k, 3], buf[k, 4], buf[k, 5] = acc
    elif not is_fixed_context(e):
        def put(e, buf, k, acc):
            buf[k] = acc
    elif is_quiet_context(e):
        def put(e, buf, k, acc):
            buf[0, k], buf[1, k] = acc
    elif is_runtime_context(e):
        def put(e, buf, k, acc):
            buf[0][k, 0], buf[0][k, 1], buf[0][k, 2] = acc[0]
            buf[1][k] = acc[1]
    else:
        def put(e, buf, k, acc):
            buf[k, 0], buf[k, 1], buf[k, 2] = acc
    return put


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def acc_array_add(e, buf, k, x, v):
    """``acc_array_add(e, buf, k, x, v)``: adds the value x, rounded once into v's format, to
    accumulator k of ``buf`` (as :func:`acc_add`)."""
    _acc_put(e, buf, k, acc_add(e, _acc_get(e, buf, k), x, v))


@njit(inline="always")  # takes kernel values: their variable ids must stay literal
def acc_array_value(e, buf, k, v):
    """``acc_array_value(e, buf, k, v)``: accumulator k's sum overflow-handled once into v's
    format, a value of v (as :func:`acc_value`)."""
    return acc_value(e, _acc_get(e, buf, k), v)
