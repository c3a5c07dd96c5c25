"""One kernel source, every precision: the operation core every kernel operation builds on.

A kernel is a numba-compiled function written once against the generic operations of
:mod:`fixedqmc.numerics.kernel` (:func:`load`, :func:`add`, :func:`sub`, :func:`mul`,
:func:`const`, :func:`store`).  Its first argument is a *context*; numba compiles the kernel
separately for each context type, and each operation specialises on it at compile time:

* ``np.float64(0)`` / ``np.float32(0)``: values are floats of that type and the operations
  are the plain float operations;
* a fixed context (built by :meth:`KernelPrecision.context`): values are ``(raw, var)``
  pairs, a raw int64 word plus the index of the variable whose format it is in, and every
  operation is the exact fixed-point operation of :mod:`quantize`, rounded and
  overflow-handled into the format of its output variable, with overflow events counted per
  variable.

Division, square roots, the exponential, cosine and sine, rounding to integers, abs,
min/max and select are in :mod:`fixedqmc.numerics.kernel_ops`, used the same way.

So there are never three hand-written copies.  Each intermediate has a named
:class:`Variable` (with a declared range) so that a precision policy can give it a format
and a run can report where a format was too narrow.

Kernel pattern (see :mod:`fixedqmc.numerics.polynomial` for a complete one)::

    @njit(parallel=True)
    def kernel(ctx, x, out):
        for k in prange(n_chunks(ctx, x.size)):
            c = chunk(ctx, k)
            lo, hi = chunk_bounds(ctx, x.size, k)
            for i in range(lo, hi):
                e = at(c, i)
                y = mul(e, load(e, x[i], X), load(e, x[i], X), Y)
                out[i] = store(e, y)

Element results never depend on the number of threads: chunks are a fixed partition of the
index range, stochastic rounding draws bits from (seed, element index, variable), and event
counts are summed per chunk.

Where the operations live: :mod:`~fixedqmc.numerics.kernel_spec` (variables, kernel specs,
precisions and the contexts they build), :mod:`~fixedqmc.numerics.kernel_types` (the format
table as a numba type), :mod:`~fixedqmc.numerics.kernel_elements` (chunks, element and quiet
contexts), :mod:`~fixedqmc.numerics.kernel_arith` (load, const, add, sub, mul, store),
:mod:`~fixedqmc.numerics.kernel_convert`, :mod:`~fixedqmc.numerics.kernel_lookup` (less and
the table bins), :mod:`~fixedqmc.numerics.kernel_accumulators` and
:mod:`~fixedqmc.numerics.kernel_ops`.

This module holds what those operation modules share, for writing a new operation:

* at typing time (arguments are numba types): :func:`is_fixed_context`,
  :func:`is_runtime_context`, :func:`is_quiet_context` tell the context kind, and
  :func:`format_row` reads a variable's format from a typed context's format table;
* in compiled code: :func:`runtime_format` reads a variable's format from a run-time format
  table, :func:`element_random_bits` and :func:`rounding_bits` give the bits of stochastic
  rounding, :func:`count_event`, :func:`emit_result` and :func:`flag_of` count overflow
  events or carry them in quiet values, and :func:`runtime_value`,
  :func:`runtime_float_into`, :func:`runtime_from_float`, :func:`runtime_convert`,
  :func:`record_range`, :func:`float_from_bits`, :func:`float_params`,
  :func:`float_result` and :func:`count_float_events` are the steps of run-time-format
  operations;
* :func:`operation_stub` makes the Python-level name of an operation, and
  :func:`binary_overload` the overload of a binary operation for every context kind.

Format rows are ``(signed, word bits, frac bits, rounding code, overflow code)``; a run-time
row with word 0 marks a float64 variable (its value travels as its bit pattern), word -1 a
profiled float64 variable whose results update range statistics at column ``frac`` (a
profiling context of ``n`` variables puts variable i's at ``n + 4 i``, then counts the
operations, :func:`count_operation`), word -2
a variable in a floating-point format ``(E, -2, M, rounding code, options)`` (options:
:meth:`~fixedqmc.numerics.kernel_spec.KernelPrecision.table`; its value travels as the bit
pattern of the float64 that equals it, :func:`float_params` gives the format's parameters
and :func:`count_float_events` counts its events).  A float-format result is the exact
result of its operands' values rounded once (:mod:`fixedqmc.numerics.float_ops`); a fixed
operand's value enters as a float64, exact for words of at most 53 significant bits.
"""

from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from fixedqmc.numerics import float_format as FF
from fixedqmc.numerics import float_ops as FO
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics.kernel_types import BoundsType, FloatFormatsType, FormatTableType
from fixedqmc.numerics.modes import STOCHASTIC


def operation_stub(name):
    """A Python-level stand-in for the operation ``name``; the real implementations are the
    numba overloads registered on it."""

    def op(*args):
        raise NotImplementedError(f"{name}() is usable only inside numba-compiled kernels")

    op.__name__ = op.__qualname__ = name
    return op


# ------------------------------------------------------- context kinds (typing time) --
def is_fixed_context(ctx) -> bool:
    """A fixed context (a tuple type), typed or run-time formats, counting or quiet; float
    contexts are float types, float-format and bound contexts tuples ending in the
    :class:`~fixedqmc.numerics.kernel_types.FloatFormats` or
    :class:`~fixedqmc.numerics.kernel_types.Bounds` marker."""
    return (isinstance(ctx, types.BaseTuple) and not is_float_format_context(ctx)
            and not is_bound_context(ctx))


def _ends_in(ctx, marker) -> bool:
    return (isinstance(ctx, types.BaseTuple) and len(ctx) > 0
            and isinstance(ctx.types[-1], marker))


def is_float_format_context(ctx) -> bool:
    """A float-format context (kernel, chunk or element): values are float64s, each result
    rounded once into its variable's format (:mod:`fixedqmc.numerics.kernel_float`)."""
    return _ends_in(ctx, FloatFormatsType)


def is_bound_context(ctx) -> bool:
    """A bound context (kernel, chunk or element): values are ``(value, r, b)`` triples
    carrying rigorous error bounds (:mod:`fixedqmc.numerics.kernel_bound`)."""
    return _ends_in(ctx, BoundsType)


def ids_at_run_time(e, *args) -> bool:
    """True when context ``e`` reads its variables' formats at run time (run-time fixed
    formats, float formats, bounds) and ``args`` still hold literal variable ids (an output
    id, or a value's id).  There an id only indexes rows, so an overload returns None for
    these types and numba types it again with every id as an int64: one compilation for
    all variables instead of one per id (prefer_literal tries literal types first)."""
    runtime = (is_bound_context(e) or is_float_format_context(e)
               or (is_fixed_context(e) and is_runtime_context(e)))
    return runtime and any(types.unliteral(a) != a for a in args)


def format_row(table, v, what):
    """The format row of variable id ``v`` (a compile-time constant) at typing time; ``what``
    names the operation (and operand) in the error for an id that is not a constant."""
    if not isinstance(v, types.IntegerLiteral):
        raise TypingError(f"{what}: kernel variable ids must be compile-time integer constants")
    return table[v.literal_value]


def is_runtime_context(e) -> bool:
    """A fixed context whose formats are read at run time (not part of its type)."""
    return not isinstance(e.types[0], FormatTableType)


def is_quiet_context(e) -> bool:
    """A quiet element context (:func:`~fixedqmc.numerics.kernel_elements.quiet`): events
    travel in the values."""
    return is_fixed_context(e) and len(e) == 4 and isinstance(e.types[1], types.NoneType)


# ------------------------------------------------------------------ memory by address --
@intrinsic
def bump(typingctx, address, index):
    """Add one to the int64 at ``address`` + 8 * ``index`` (a chunk's private event row).

    Element contexts carry the row's address rather than the array so that the inner loop
    does no reference counting."""
    sig = types.void(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        addr, idx = args
        i64 = ir.IntType(64)
        ptr = builder.gep(builder.inttoptr(addr, i64.as_pointer()), [idx])
        builder.store(builder.add(builder.load(ptr), ir.Constant(i64, 1)), ptr)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def peek(typingctx, address, index):
    """The int64 at ``address`` + 8 * ``index`` (a run-time format table)."""
    sig = types.int64(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        addr, idx = args
        i64 = ir.IntType(64)
        return builder.load(builder.gep(builder.inttoptr(addr, i64.as_pointer()), [idx]))

    return sig, codegen


@intrinsic
def poke(typingctx, address, index, value):
    """Store the int64 ``value`` at ``address`` + 8 * ``index``."""
    sig = types.void(types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        addr, idx, val = args
        i64 = ir.IntType(64)
        builder.store(val, builder.gep(builder.inttoptr(addr, i64.as_pointer()), [idx]))
        return context.get_dummy_value()

    return sig, codegen


# ------------------------------------------------------------------- overflow events --
flag_of, count_event, emit_result = map(operation_stub, ("flag_of", "count_event",
                                                         "emit_result"))
flag_of.__doc__ = """``flag_of(x)``: the overflow flag of a quiet fixed value ``(raw, var,
flag)``, else 0."""
count_event.__doc__ = """``count_event(e, ev, v)``: count event ``ev`` (0 or 1) of variable
``v`` in the chunk's event row (typed or run-time formats; nothing in a quiet context, whose
values carry their events)."""
emit_result.__doc__ = """``emit_result(e, r, ev, v, flag)``: the value of a typed fixed
result word ``r`` of variable ``v`` with overflow event ``ev``: ``(r, v)`` with the event
counted, or (quiet) ``(r, v, flag | ev)`` with ``flag`` the operands' flags."""


@overload(flag_of, inline="always")
def _ol_flag_of(x):
    if isinstance(x, types.BaseTuple) and len(x) == 3:
        return lambda x: x[2]
    return lambda x: np.int64(0)


@overload(count_event, inline="always")
def _ol_count(e, ev, v):
    """Count event ``ev`` of variable v in the chunk's event row (typed or run-time formats;
    nothing in a quiet context, whose values carry it)."""
    if is_quiet_context(e):
        return lambda e, ev, v: None

    def counted(e, ev, v):
        if ev:
            bump(e[1], v)
    return counted


@overload(emit_result, prefer_literal=True, inline="always")
def _ol_emit(e, r, ev, v, flag):
    """A typed fixed result ``r`` of variable v with overflow event ``ev``: counted in the
    chunk's event row, or (quiet) carried with the operands' flags."""
    if is_quiet_context(e):
        return lambda e, r, ev, v, flag: (r, v, flag | np.int64(ev))

    def counted(e, r, ev, v, flag):
        count_event(e, ev, v)
        return (r, v)
    return counted


# ------------------------------------------------------ formats and stochastic bits --
@njit(nogil=True)
def runtime_format(e, v):
    """(signed, word, frac, rounding, overflow) of variable v of a run-time format table."""
    b = np.int64(v) * 5
    return (peek(e[0], b) != 0, peek(e[0], b + 1), peek(e[0], b + 2), peek(e[0], b + 3),
            peek(e[0], b + 4))


@njit(cache=True)
def element_random_bits(e, v):
    """The 64 random bits of stochastic rounding of variable v at element context e (a hash
    of the seed, the element index and v)."""
    return Q.random_bits(e[2], e[3], v)


@njit(nogil=True)
def rounding_bits(e, v, rnd):
    """The random bits of variable v at e if the rounding code ``rnd`` is stochastic, else
    0 (run-time formats, whose rounding is known only as the kernel runs)."""
    return Q.random_bits(e[2], e[3], v) if rnd == STOCHASTIC else np.uint64(0)


# ------------------------------------------------------- run-time-format operations --
@intrinsic
def _f2i(typingctx, x):
    """The bit pattern of a float64 as an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def float_from_bits(typingctx, x):
    """The float64 whose bit pattern is the int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(nogil=True)
def runtime_value(raw, signed, word, frac):
    """float64 value of a run-time-format word (word <= 0: a float64 bit pattern)."""
    if word <= 0:
        return float_from_bits(raw)
    w = np.float64(raw) if signed else np.float64(np.uint64(raw))
    return w * 2.0 ** -frac


#: the operations a profiling run counts per output variable (:func:`count_operation`), in
#: column order: the arithmetic, then the binary and the unary operations of
#: :mod:`~fixedqmc.numerics.kernel_ops` in its order, then conversions, accumulator terms,
#: comparisons (counted under the first operand's variable) and table bins
COUNTED_OPERATIONS = ("add", "sub", "mul", "div", "minimum", "maximum", "recip", "sqrt",
                      "rsqrt", "floor", "round_int", "abs_", "exp", "cos_turns", "sin_turns",
                      "cos", "sin", "convert", "acc_add", "less", "uniform_bin", "log2_bin")
N_COUNTED = len(COUNTED_OPERATIONS)
_TOP_BIT = np.int64(63)


@njit(nogil=True)
def count_operation(e, code, va, vb, vo):
    """In a profiling context (variable vo's row has word -1), count operation ``code``
    (an index into :data:`COUNTED_OPERATIONS`) with result variable vo and operand variables
    va, vb (-1: none, or another kernel's): at column ``5 n + 3 (vo N_COUNTED + code)`` of
    the chunk's row its count, then a bit mask of the first operand's variables and one of
    the second's (bit ``min(v, 63)``).  Elsewhere nothing."""
    if peek(e[0], np.int64(vo) * 5 + 1) != -1:
        return
    col = 5 * peek(e[0], 2) + 3 * (np.int64(vo) * N_COUNTED + code)
    bump(e[1], col)
    if va >= 0:
        poke(e[1], col + 1, peek(e[1], col + 1) | (np.int64(1) << min(np.int64(va), _TOP_BIT)))
    if vb >= 0:
        poke(e[1], col + 2, peek(e[1], col + 2) | (np.int64(1) << min(np.int64(vb), _TOP_BIT)))


@njit(nogil=True)
def record_range(row, base, x):
    """Update the range statistics (min, max, max |x|, min nonzero |x|) at ``base`` of a
    chunk's row with the value x (a profiled variable, format row word -1)."""
    a = abs(x)
    if x < float_from_bits(peek(row, base)):
        poke(row, base, _f2i(x))
    if x > float_from_bits(peek(row, base + 1)):
        poke(row, base + 1, _f2i(x))
    if a > float_from_bits(peek(row, base + 2)):
        poke(row, base + 2, _f2i(a))
    if 0.0 < a < float_from_bits(peek(row, base + 3)):
        poke(row, base + 3, _f2i(a))


@njit(nogil=True, cache=True)
def float_params(e, v):
    """The parameters ``P`` (:func:`fixedqmc.numerics.float_format.format_params`) of the
    float format of variable v, a run-time row ``(E, -2, M, rounding, options)``."""
    b = np.int64(v) * 5
    E, M, opts = peek(e[0], b), peek(e[0], b + 2), peek(e[0], b + 4)
    fn = (opts & 4) != 0
    bias = (np.int64(1) << (E - 1)) - 1
    emax = bias + np.int64(fn)
    nmax = (np.uint64(1) << np.uint64(M + 1)) - np.uint64(1) - np.uint64(fn)
    return (M, 1 - bias, emax, nmax, (opts & 1) != 0, (opts & 2) != 0, fn,
            FF.value_bits(np.uint64(0), nmax, emax - M))


@njit(nogil=True)
def count_float_events(e, ev, v, c):
    """Count the events ``ev`` (flags of :mod:`~fixedqmc.numerics.float_format`) of a
    float-format result of variable v: an overflow in v's column, underflow, subnormal and
    NaN in the three columns from ``c`` (of a run-time row: its ``options >> 8``; of a
    float-format context: its parameter row's event column)."""
    if ev & FF.EV_OVER:
        bump(e[1], v)
    if ev & FF.EV_UNDER:
        bump(e[1], c)
    if ev & FF.EV_SUB:
        bump(e[1], c + 1)
    if ev & FF.EV_NAN:
        bump(e[1], c + 2)


@njit(nogil=True)
def float_result(e, bits_ev, v):
    """The word of a float-format result ``(float64 bits, events)`` of variable v, its
    events counted."""
    if bits_ev[1]:
        count_float_events(e, bits_ev[1], v, peek(e[0], np.int64(v) * 5 + 4) >> 8)
    return np.int64(bits_ev[0])


@njit(nogil=True)
def runtime_float_into(e, x, vo, so, wo, fo, rnd, ovf):
    """A float64 result into output variable vo (its bits if vo is float64; profiled
    float64 (word -1) also records x in the statistics at column ``fo``; a float format
    (word -2) rounds it once)."""
    if wo == -1:
        record_range(e[1], fo, x)
    if wo == -2:
        return float_result(e, FF.cast_bits(FO.as_bits(x), 0, float_params(e, vo), rnd, e[2],
                                            e[3], vo), vo)
    if wo <= 0:
        return _f2i(x)
    r, ev = Q.from_float_raw(x, so, wo, fo, rnd, ovf, rounding_bits(e, vo, rnd))
    count_event(e, ev, vo)
    return r


@njit(nogil=True, cache=True)
def runtime_from_float(e, x, vo):
    """A float64 into run-time variable vo (as :func:`runtime_float_into`, reading vo's
    format)."""
    so, wo, fo, rnd, ovf = runtime_format(e, vo)
    return runtime_float_into(e, x, vo, so, wo, fo, rnd, ovf)


@njit(nogil=True, cache=True)
def runtime_convert(e, ra, sa, wa, fa, vo):
    """A word (word bits ``wa``, 0 and below: a float64 bit pattern) into run-time variable
    vo; a fixed word into a float format is rounded once from its exact value."""
    so, wo, fo, rnd, ovf = runtime_format(e, vo)
    if wa > 0 and wo == -2:
        neg = sa and ra < 0
        mag = np.uint64(-ra) if neg else np.uint64(ra)
        if mag == np.uint64(0):
            return np.int64(0)
        return float_result(e, FO.round_exact(neg, np.uint64(0), mag, -fa, False,
                                              float_params(e, vo), rnd, e[2], e[3], vo), vo)
    if wa <= 0 or wo <= 0:
        return runtime_float_into(e, runtime_value(ra, sa, wa, fa), vo, so, wo, fo, rnd, ovf)
    r, ev = Q.add_raw(ra, sa, fa, np.int64(0), True, fa, so, wo, fo, rnd, ovf,
                      rounding_bits(e, vo, rnd))
    count_event(e, ev, vo)
    return r


# ----------------------------------------------------------- registering operations --
def overload_operation(op, typing):
    """Register ``typing`` (a numba typing function ``typing(e, ...)`` of operation ``op``,
    the context first) twice: for float contexts inlined at numba-IR level (a float
    instruction or two), for every other context compiled once per signature and called,
    LLVM inlining what is small.  Inlining the others at numba-IR level costs a type
    inference of the implementation at every call site, and the float-format fast paths
    bring their own inlined helpers again each time: 20x the compile time of a float-format
    kernel, 2x with fixed formats compiled in (docs/architecture.md).  With
    :func:`ids_at_run_time`, every call site of one operand type in a run-time context
    shares a single compilation."""
    @functools.wraps(typing)  # (numba checks the typing function's signature)
    def in_float(*args):
        return typing(*args) if isinstance(args[0], types.Float) else None

    @functools.wraps(typing)
    def elsewhere(*args):
        return None if isinstance(args[0], types.Float) else typing(*args)

    overload(op, prefer_literal=True, inline="always")(in_float)
    overload(op, prefer_literal=True)(elsewhere)
    return typing


# ---------------------------------------------------------------- binary operations --
def binary_overload(name, opcode, raw_op, float_impl, runtime_op, narrow_op=None,
                    inline_general=False, float_format_op=None, bound_op=None):
    """The overload (a typing function for ``numba.extending.overload``) of a binary
    operation ``name(e, x, y, v)`` with an output variable v, for every context kind:

    * float contexts: ``float_impl(dt)``, the implementation for the context's float type
      ``dt``;
    * float-format contexts: ``float_format_op(e, x, y, v)``, a compiled function of the
      float64 operands (:mod:`~fixedqmc.numerics.kernel_float`);
    * bound contexts: ``bound_op(e, x, y, v)`` (:mod:`~fixedqmc.numerics.kernel_bound`);
    * run-time formats: ``runtime_op(opcode, e, raw x, var x, raw y, var y, v)``, a compiled
      routine returning the raw result word (float64 operands and outputs included);
    * formats compiled in (counting or quiet): ``narrow_op(opcode, (sa, wa, fa), (sb, wb,
      fb), (so, wo, fo, rnd, ovf), vector=quiet)``, a machine-word form for these formats or
      None (no ``narrow_op``: always None), else the exact ``raw_op(ra, sa, fa, rb, sb, fb,
      so, wo, fo, rnd, ovf, rbits)``, compiled per set of formats (inlined at numba-IR
      level if ``inline_general``); either returns (raw, event), and the event is counted
      (or carried, quiet) as an event of v.
    """
    options = {"nogil": True, **({"inline": "always"} if inline_general else {})}

    def ol(e, x, y, v):
        if ids_at_run_time(e, x, y, v):
            return None
        if is_bound_context(e):
            return lambda e, x, y, v: bound_op(e, x, y, v)
        if is_float_format_context(e):
            return lambda e, x, y, v: float_format_op(e, x, y, v)
        if not is_fixed_context(e):
            return float_impl(e)
        if is_runtime_context(e):
            return lambda e, x, y, v: (runtime_op(opcode, e, x[0], np.int64(x[1]), y[0],
                                                  np.int64(y[1]), np.int64(v)), v)
        table = e.types[0].table
        sa, wa, fa, _, _ = format_row(table, x.types[1], f"{name} (first operand)")
        sb, wb, fb, _, _ = format_row(table, y.types[1], f"{name} (second operand)")
        so, wo, fo, rnd, ovf = format_row(table, v, name)
        sa, sb, so = sa != 0, sb != 0, so != 0
        stochastic = rnd == STOCHASTIC
        op = None
        if narrow_op is not None:
            op = narrow_op(opcode, (sa, wa, fa), (sb, wb, fb), (so, wo, fo, rnd, ovf),
                           vector=is_quiet_context(e))
        if op is None:  # the general exact operation (192-bit fallback out of line)
            op = njit(lambda ra, rb, rbits: raw_op(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd,
                                                   ovf, rbits), **options)

        def impl(e, x, y, v):
            rb = element_random_bits(e, v) if stochastic else np.uint64(0)
            r, ev = op(x[0], y[0], rb)
            return emit_result(e, r, ev, v, flag_of(x) | flag_of(y))
        return impl
    return ol
