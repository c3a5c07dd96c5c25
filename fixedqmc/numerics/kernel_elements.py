"""Chunks and element contexts inside a kernel: the fixed partition of the index range
(:data:`N_CHUNKS`, :func:`n_chunks`, :func:`chunk_bounds`), a chunk's context
(:func:`chunk`), an element's context (:func:`at`) and its quiet form (:func:`quiet`,
:func:`events`, :func:`is_quiet`).

A chunk context of a fixed kernel carries the address of the chunk's private event row, an
element context also the element index (which stochastic rounding hashes); float contexts
pass through unchanged.  The partition does not depend on the thread count, so neither do
the results.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import overload

from fixedqmc.numerics.kernel_core import (flag_of, is_bound_context, is_fixed_context,
                                           is_float_format_context,
                                           is_quiet_context, is_runtime_context,
                                           operation_stub)

#: Chunks per kernel call: a fixed partition, independent of the thread count.
N_CHUNKS = 64

chunk, at, quiet, events, is_quiet = map(operation_stub, ("chunk", "at", "quiet", "events",
                                                          "is_quiet"))
chunk.__doc__ = """``chunk(ctx, k)``: the context of chunk k of a kernel call (fixed: the
address of the chunk's event row)."""
at.__doc__ = """``at(c, i)``: the element context of element i of chunk context c."""
quiet.__doc__ = """``quiet(e)``: the element context ``e`` with overflow events carried in the
values instead of counted in memory, so that a loop of operations has no store and vectorises.

In a quiet fixed context every value is ``(raw, var, flag)``: ``flag`` is 1 if any operation
that produced the value or one of its operands overflowed (the operations are otherwise the
same, bit for bit).  :func:`events` reads the flag of a result; a kernel that finds it set
recomputes in the counting context to count the events per variable (see
:mod:`fixedqmc.systems.helium.kernels`).  Float and run-time-format contexts are returned
unchanged (run-time formats keep counting in memory, and :func:`events` is 0 there)."""
events.__doc__ = """``events(e, x)``: 1 if the quiet value x carries an overflow event, else 0."""
is_quiet.__doc__ = """``is_quiet(e)``: True (a compile-time constant) if ``e`` is a quiet fixed
context, whose events are known only once a result's flag is read: a kernel that updates an
array in place then writes to scratch first, so that a recount can start from the original
words."""


@njit(cache=True)
def n_chunks(ctx, n):
    """Number of chunks a kernel over ``n`` elements loops over (the same for every
    precision, so event arrays can be indexed by chunk)."""
    return N_CHUNKS


@njit(cache=True)
def chunk_bounds(ctx, n, k):
    """Index range [lo, hi) of chunk k of n elements."""
    return (n * k) // N_CHUNKS, (n * (k + 1)) // N_CHUNKS


@overload(chunk)
def _chunk(ctx, k):
    if is_float_format_context(ctx) or is_bound_context(ctx):  # (params, events, seed, mark)
        def float_formats(ctx, k):
            row = ctx[1][k]
            return (np.int64(ctx[0].ctypes.data), np.int64(row.ctypes.data), ctx[2],
                    np.int64(0), ctx[3])
        return float_formats
    if is_fixed_context(ctx):
        if isinstance(ctx.types[0], types.Array):
            def runtime(ctx, k):
                row = ctx[1][k]
                return (np.int64(ctx[0].ctypes.data), np.int64(row.ctypes.data), ctx[2],
                        np.int64(0))
            return runtime

        def impl(ctx, k):
            row = ctx[1][k]
            return (ctx[0], np.int64(row.ctypes.data), ctx[2], np.int64(0))
        return impl
    return lambda ctx, k: ctx


@overload(at)
def _at(ctx, i):
    if is_float_format_context(ctx) or is_bound_context(ctx):
        return lambda ctx, i: (ctx[0], ctx[1], ctx[2], np.int64(i), ctx[4])
    if is_fixed_context(ctx):
        return lambda ctx, i: (ctx[0], ctx[1], ctx[2], np.int64(i))
    return lambda ctx, i: ctx


@overload(quiet)
def _quiet(e):
    if is_fixed_context(e) and not is_runtime_context(e):
        return lambda e: (e[0], None, e[2], e[3])
    return lambda e: e


@overload(is_quiet, inline="always")
def _ol_is_quiet(e):
    q = is_quiet_context(e)
    return lambda e: q


@overload(events, inline="always")
def _events(e, x):
    if is_bound_context(e):
        return lambda e, x: np.int64(0)
    return lambda e, x: flag_of(x)
