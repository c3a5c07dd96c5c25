"""More generic kernel operations: division, roots, rounding to integers, abs, min/max,
select, and the exponential, cosine and sine.

Used inside ``@njit`` kernels exactly like :func:`~fixedqmc.numerics.kernel.add`: the first
argument is the element context ``e`` and the last, for an operation producing a value, the
output variable id ``v`` (a compile-time integer).  One kernel source serves every context:

* float64 / float32: the plain float operation in the context's type (IEEE division, so
  ``x / 0`` is inf or nan; ``rsqrt`` is ``1 / sqrt(x)``, two roundings; ``round_int`` is
  ``rint``, ties to even; ``cos_turns(x)`` is ``cos(2 pi (x - rint(x)))``; ``exp`` is the
  branch-free :mod:`~fixedqmc.numerics.float_exp`, within 1.2 ulp, so loops calling it
  vectorise);
* fixed, formats compiled in or read at run time (bit-identical), quiet or counting: the
  exact operation of :mod:`fixedqmc.numerics.exact_ops` (correctly rounded once into v's
  format with v's rounding and overflow modes) or the table methods of
  :mod:`fixedqmc.numerics.transcendental` (stated error bounds);
* run-time formats with float64 (or profiled) variables: the float64 operation, rounded into
  v's format if v is fixed (and recorded if v is profiled);
* a float-format output v (run-time formats): div, recip and sqrt exact, rounded once into
  v (:mod:`~fixedqmc.numerics.float_ops`); floor, round_int, abs_, minimum, maximum and
  select exact in float64, so rounded once too; rsqrt, exp, cos, sin (and their turns forms)
  the float64 operation then one rounding into v: within v's rounding error plus
  the float64 operation's (``docs/kernel_operations.md``).

Built on the operation core :mod:`fixedqmc.numerics.kernel_core`, like the operations that
:mod:`fixedqmc.numerics.kernel` exports (the binary ones through its one factory,
:func:`~fixedqmc.numerics.kernel_core.binary_overload`).  Semantics, special cases and
bounds: ``docs/kernel_operations.md``.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic, overload

from fixedqmc.numerics import exact_ops as X
from fixedqmc.numerics import float_ops as FO
from fixedqmc.numerics import kernel_bound as KB
from fixedqmc.numerics import kernel_float as KF
from fixedqmc.numerics import transcendental as T
from fixedqmc.numerics.float_exp import exp32, exp64
from fixedqmc.numerics.float_ops import as_bits
from fixedqmc.numerics.kernel_core import (COUNTED_OPERATIONS, binary_overload, count_event,
                                           count_operation, element_random_bits,
                                           emit_result, flag_of, float_params, float_result,
                                           format_row, ids_at_run_time, is_bound_context,
                                           is_fixed_context, is_float_format_context,
                                           is_runtime_context,
                                           operation_stub, rounding_bits,
                                           runtime_float_into, runtime_format, runtime_value)
from fixedqmc.numerics.modes import STOCHASTIC

__all__ = ["div", "recip", "sqrt", "rsqrt", "exp", "cos_turns", "sin_turns", "cos", "sin",
           "floor", "round_int", "abs_", "minimum", "maximum", "select"]


@intrinsic
def _fdiv(typingctx, x, y):
    """IEEE x / y (numba's ``/`` raises on a zero divisor under its default error model)."""
    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])
    return x(x, y), codegen


_TWO_PI = 2.0 * np.pi


def _turns(f):
    """f(2 pi t) of an argument x in turns, t = x - rint(x) in [-1/2, 1/2] (exact)."""
    def maker(dt):
        two_pi = dt(_TWO_PI)
        return lambda x: f(two_pi * (x - np.rint(x)))
    return maker


# name -> (exact or table fixed-point operation, float operation maker: dtype -> f(x))
_UNARY = {
    "recip": (X.recip_raw, lambda dt: lambda x: _fdiv(dt(1.0), x)),
    "sqrt": (X.sqrt_raw, lambda dt: lambda x: np.sqrt(x)),
    "rsqrt": (X.rsqrt_raw, lambda dt: lambda x: _fdiv(dt(1.0), np.sqrt(x))),
    "floor": (X.floor_raw, lambda dt: lambda x: np.floor(x)),
    "round_int": (X.round_int_raw, lambda dt: lambda x: np.rint(x)),
    "abs_": (X.abs_raw, lambda dt: lambda x: abs(x)),
    "exp": (T.exp_raw, lambda dt: ((lambda x: exp32(x)) if dt in (types.float32, np.float32)
                                   else (lambda x: exp64(x)))),
    "cos_turns": (T.cos_turns_raw, _turns(np.cos)),
    "sin_turns": (T.sin_turns_raw, _turns(np.sin)),
    "cos": (T.cos_raw, lambda dt: lambda x: np.cos(x)),
    "sin": (T.sin_raw, lambda dt: lambda x: np.sin(x)),
}
#: name -> maker of the same operation on machine words for formats compiled in, or None
#: where the formats need the general one (bit-identical; typed fixed contexts only)
_NARROW = {"exp": T.exp_narrow}
_BINARY = {
    "div": (X.div_raw, lambda dt: lambda x, y: _fdiv(x, y)),
    "minimum": (X.min_raw, lambda dt: lambda x, y: min(x, y)),
    "maximum": (X.max_raw, lambda dt: lambda x, y: max(x, y)),
}
#: the operations with a bound-context form (:mod:`~fixedqmc.numerics.kernel_bound`)
_BOUND = {"recip": KB.recip, "sqrt": KB.sqrt, "rsqrt": KB.rsqrt, "div": KB.div, "abs_": KB.abs_,
          "minimum": KB.minimum, "maximum": KB.maximum, "exp": KB.exp, "floor": KB.floor,
          "cos_turns": KB.cos_turns, "sin_turns": KB.sin_turns, "cos": KB.cos, "sin": KB.sin,
          "round_int": KB.round_int}
# their codes among the operations a profiling context counts
_UNARY_CODE = COUNTED_OPERATIONS.index("recip")
_BINARY_CODE = COUNTED_OPERATIONS.index("div")
assert COUNTED_OPERATIONS[_UNARY_CODE:_UNARY_CODE + len(_UNARY)] == tuple(_UNARY)
assert COUNTED_OPERATIONS[_BINARY_CODE:_BINARY_CODE + len(_BINARY)] == tuple(_BINARY)
_SQRT = list(_UNARY).index("sqrt")
_DIV = list(_BINARY).index("div")
assert list(_UNARY)[:2] == ["recip", "sqrt"]  # _rt_unary's exact float-format cases
_ONE_BITS = np.uint64(0x3FF0000000000000)  # 1.0
_F64_UNARY = tuple(njit(m(np.float64), nogil=True) for _, m in _UNARY.values())
_F64_BINARY = tuple(njit(m(np.float64), nogil=True) for _, m in _BINARY.values())


def _dispatch(fns, n_args):
    """One compiled function calling ``fns[op](*args)`` for a run-time opcode (an if-chain:
    numba cannot index a tuple of functions at run time)."""
    args = ", ".join(f"a{i}" for i in range(n_args))
    lines = [f"def call(op, {args}):"]
    for i in range(len(fns)):
        lines.append(f"    {'if' if i == 0 else 'elif'} op == {i}:")
        lines.append(f"        return f{i}({args})")
    lines.append(f"    return f0({args})")
    scope = {f"f{i}": f for i, f in enumerate(fns)}
    exec("\n".join(lines), scope)
    return njit(scope["call"], nogil=True)


_raw_unary = _dispatch([r for r, _ in _UNARY.values()], 10)
_f64_unary = _dispatch(_F64_UNARY, 1)
_raw_binary = _dispatch([r for r, _ in _BINARY.values()], 12)
_f64_binary = _dispatch(_F64_BINARY, 2)


@njit(nogil=True, cache=True)
def _rt_unary(op, e, ra, va, vo):
    """Run-time-format unary operation ``op`` (index into ``_UNARY``): one compiled routine
    for every format; float64 operand or output: the float64 operation."""
    sa, wa, fa, _, _ = runtime_format(e, va)
    so, wo, fo, rnd, ovf = runtime_format(e, vo)
    if wo == -2 and op <= _SQRT:  # recip and sqrt: exact, rounded once
        P = float_params(e, vo)
        a = as_bits(runtime_value(ra, sa, wa, fa))
        if op == _SQRT:
            return float_result(e, FO.sqrt_bits(a, P, rnd, e[2], e[3], vo), vo)
        return float_result(e, FO.div_bits(_ONE_BITS, a, P, rnd, e[2], e[3], vo), vo)
    if wa <= 0 or wo <= 0:
        count_operation(e, _UNARY_CODE + op, va, -1, vo)
        x = _f64_unary(op, runtime_value(ra, sa, wa, fa))
        return runtime_float_into(e, x, vo, so, wo, fo, rnd, ovf)
    r, ev = _raw_unary(op, ra, sa, wa, fa, so, wo, fo, rnd, ovf, rounding_bits(e, vo, rnd))
    count_event(e, ev, vo)
    return r


@njit(nogil=True, cache=True)
def _rt_binary(op, e, ra, va, rb, vb, vo):
    """Run-time-format binary operation ``op`` (index into ``_BINARY``)."""
    sa, wa, fa, _, _ = runtime_format(e, va)
    sb, wb, fb, _, _ = runtime_format(e, vb)
    so, wo, fo, rnd, ovf = runtime_format(e, vo)
    if wo == -2 and op == _DIV:  # exact, rounded once
        return float_result(e, FO.div_bits(as_bits(runtime_value(ra, sa, wa, fa)),
                                           as_bits(runtime_value(rb, sb, wb, fb)),
                                           float_params(e, vo), rnd, e[2], e[3], vo),
                            vo)
    if wa <= 0 or wb <= 0 or wo <= 0:
        count_operation(e, _BINARY_CODE + op, va, vb, vo)
        x = _f64_binary(op, runtime_value(ra, sa, wa, fa), runtime_value(rb, sb, wb, fb))
        return runtime_float_into(e, x, vo, so, wo, fo, rnd, ovf)
    r, ev = _raw_binary(op, ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf,
                        rounding_bits(e, vo, rnd))
    count_event(e, ev, vo)
    return r


def _unary_overload(name, opcode, raw_op, float_maker):
    if name == "recip":
        ff_op = njit(lambda e, x, v: KF.div(e, 1.0, x, v), nogil=True)
    elif name == "sqrt":
        ff_op = KF.sqrt
    else:  # exact in float64 (floor, round_int, abs_) or within its float64 bound
        f64 = njit(float_maker(np.float64), nogil=True)
        ff_op = njit(lambda e, x, v: KF.round_into(e, f64(x), v), nogil=True)

    bound_op = _BOUND[name]

    def ol(e, x, v):
        if ids_at_run_time(e, x, v):
            return None
        if is_bound_context(e):
            return lambda e, x, v: bound_op(e, x, v)
        if is_float_format_context(e):
            return lambda e, x, v: ff_op(e, x, v)
        if not is_fixed_context(e):
            f = njit(float_maker(e), nogil=True)
            return lambda e, x, v: f(x)
        if is_runtime_context(e):
            return lambda e, x, v: (_rt_unary(opcode, e, x[0], np.int64(x[1]), np.int64(v)), v)
        table = e.types[0].table
        sa, wa, fa, _, _ = format_row(table, x.types[1], f"{name} (operand)")
        so, wo, fo, rnd, ovf = format_row(table, v, name)
        sa, so, stochastic = sa != 0, so != 0, rnd == STOCHASTIC
        op = _NARROW[name](sa, wa, fa, so, wo, fo, rnd, ovf) if name in _NARROW else None
        if op is None:
            op = njit(lambda ra, rbits: raw_op(ra, sa, wa, fa, so, wo, fo, rnd, ovf, rbits),
                      nogil=True)

        def impl(e, x, v):
            rb = element_random_bits(e, v) if stochastic else np.uint64(0)
            r, ev = op(x[0], rb)
            return emit_result(e, r, ev, v, flag_of(x))
        return impl
    return ol


def _float_binary(float_maker):
    """The float implementation of a binary operation: ``float_maker(dt)`` compiled for the
    context's float type dt and called on x and y."""
    def float_impl(dt):
        f = njit(float_maker(dt), nogil=True)
        return lambda e, x, y, v: f(x, y)
    return float_impl


_DOCS = {
    "div": "``div(e, x, y, v)``: x / y, correctly rounded into v (fixed: x / 0 is v's max "
           "for x >= 0, its min for x < 0, an event of v).",
    "recip": "``recip(e, x, v)``: 1 / x, correctly rounded into v (fixed: 1 / 0 is v's "
             "max, an event).",
    "sqrt": "``sqrt(e, x, v)``: sqrt(x), correctly rounded into v (fixed: x < 0 gives 0, an "
            "event; float: nan).",
    "rsqrt": "``rsqrt(e, x, v)``: 1 / sqrt(x); fixed: correctly rounded (x < 0 gives 0, x = "
             "0 v's max, each an event); float: 1 / sqrt(x), two roundings.",
    "floor": "``floor(e, x, v)``: the largest integer <= x, stored in v.",
    "round_int": "``round_int(e, x, v)``: x rounded to an integer with v's rounding mode "
                 "(fixed; half_even by default), ``rint`` (ties to even) in float contexts.",
    "abs_": "``abs_(e, x, v)``: |x| rounded once into v.",
    "minimum": "``minimum(e, x, y, v)``: the smaller of x and y (exact compare) rounded into v.",
    "maximum": "``maximum(e, x, y, v)``: the larger of x and y (exact compare) rounded into v.",
    "exp": "``exp(e, x, v)``: e**x; fixed: the LUT exponential (8K words, 3 lookups), then "
           "one rounding into v (bound: :func:`fixedqmc.numerics.transcendental.exp_bound`).",
    "cos_turns": "``cos_turns(e, x, v)``: cos(2 pi x), x in turns; fixed: quarter-wave table "
                 "and angle addition (bound: :data:`transcendental.TRIG_ABS_ERROR` + one "
                 "rounding into v).",
    "sin_turns": "``sin_turns(e, x, v)``: sin(2 pi x), x in turns (as :func:`cos_turns`).",
    "cos": "``cos(e, x, v)``: cos(x), x in radians; fixed: x / (2 pi) in turns, then "
           ":func:`cos_turns` (bound: :func:`transcendental.trig_radians_bound`).",
    "sin": "``sin(e, x, v)``: sin(x), x in radians (as :func:`cos`).",
}


def _define(name, ol):
    op = operation_stub(name)
    op.__doc__ = _DOCS[name]
    overload(op, prefer_literal=True)(ol)
    return op


for _i, (_name, (_raw, _maker)) in enumerate(_UNARY.items()):
    globals()[_name] = _define(_name, _unary_overload(_name, _i, _raw, _maker))


def _float_format_binary(name, float_maker):
    """The float-format-context form of a binary operation: div rounded once from the
    exact quotient, min and max (exact) rounded into v."""
    if name == "div":
        return KF.div
    f64 = njit(float_maker(np.float64), nogil=True)
    return njit(lambda e, x, y, v: KF.round_into(e, f64(x, y), v), nogil=True)


for _i, (_name, (_raw, _maker)) in enumerate(_BINARY.items()):
    globals()[_name] = _define(_name, binary_overload(
        _name, _i, _raw, _float_binary(_maker), _rt_binary,
        float_format_op=_float_format_binary(_name, _maker), bound_op=_BOUND[_name]))

select = operation_stub("select")
select.__doc__ = """``select(e, cond, x, y)``: x if cond else y (cond a bool, e.g. from
:func:`~fixedqmc.numerics.kernel.less`), unchanged: no rounding, no event.  In fixed
contexts x and y must be values of the same variable (convert one first otherwise); a quiet
value keeps the overflow flag of the one selected."""


@intrinsic
def _llvm_select(typingctx, cond, x, y):
    """LLVM's ``select`` of two values of one type (floats or fixed (word, variable) pairs):
    no branch, so loops over it vectorise."""
    def codegen(context, builder, signature, args):
        c = context.cast(builder, args[0], signature.args[0], types.boolean)
        return builder.select(c, args[1], args[2])
    return x(cond, x, y), codegen


@overload(select, prefer_literal=True, inline="always")
def _select(e, cond, x, y):
    if is_fixed_context(e) and is_runtime_context(e):
        # run-time formats carry ids as int64s (ids_at_run_time): one variable checked as
        # the kernel runs (formats compiled in check it while typing, below)
        if types.unliteral(x) != types.unliteral(y):
            raise TypingError(f"select: x and y must be of one type, got {x} and {y}")

        def runtime(e, cond, x, y):
            if x[1] != y[1]:
                raise ValueError("select: x and y must be values of the same kernel variable;"
                                 " convert one to the other's first")
            return (_llvm_select(cond, x[0], y[0]), np.int64(x[1]))
        return runtime
    # (numba retries a failed literal typing with the literals erased: refuse that too)
    if is_fixed_context(e) and (x.types[1] != y.types[1]
                                or not isinstance(x.types[1], types.IntegerLiteral)):
        raise TypingError(f"select: x and y must be values of the same kernel variable, got "
                          f"{x.types[1]} and {y.types[1]}; convert one to the other's first")
    if x != y:
        raise TypingError(f"select: x and y must be of one type, got {x} and {y}")
    if is_fixed_context(e):
        # typed formats: select the words (and quiet flags) and rebuild the value with its
        # variable id as a constant; a selected tuple would lose the id's literal type,
        # which every further operation needs
        vid = x.types[1].literal_value
        if len(x.types) == 3:  # quiet: (word, variable, flag)
            return lambda e, cond, x, y: (_llvm_select(cond, x[0], y[0]), vid,
                                          _llvm_select(cond, x[2], y[2]))
        return lambda e, cond, x, y: (_llvm_select(cond, x[0], y[0]), vid)
    return lambda e, cond, x, y: _llvm_select(cond, x, y)
