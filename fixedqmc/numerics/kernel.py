"""One kernel source, every precision.

A kernel is a numba-compiled function written once against the generic operations of this
module (:func:`load`, :func:`add`, :func:`sub`, :func:`mul`, :func:`const`, :func:`store`).
Its first argument is a *context*; numba compiles the kernel separately for each context
type, and each operation specialises on it at compile time:

* ``np.float64(0)`` / ``np.float32(0)``: values are floats of that type and the operations
  are the plain float operations;
* a fixed context (built by :meth:`KernelPrecision.context`): values are ``(raw, var)``
  pairs, a raw int64 word plus the index of the variable whose format it is in, and every
  operation is the exact fixed-point operation of :mod:`quantize`, rounded and
  overflow-handled into the format of its output variable, with overflow events counted per
  variable.

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.core import types
from numba.core.errors import TypingError
from llvmlite import ir
from numba.extending import (NativeValue, intrinsic, models, overload, register_model,
                             typeof_impl, unbox)

from fixedqmc.errors import FixedOverflowError, FixedQMCError
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.modes import STOCHASTIC, overflow_code, rounding_code
from fixedqmc.numerics.overflow import OverflowLog, default_log
from fixedqmc.numerics.policy import PrecisionPolicy, format_for_range, parse_precision
from fixedqmc.numerics.qformat import QFormat

#: Chunks per kernel call: a fixed partition, independent of the thread count.
N_CHUNKS = 64


# --------------------------------------------------------------- declared variables --
@dataclass(frozen=True)
class Variable:
    """A named kernel variable with its declared range [lo, hi] (in the variable's units)."""

    name: str
    lo: float
    hi: float
    doc: str = ""


@dataclass(frozen=True)
class KernelSpec:
    """A kernel's name and its variables; a variable's index is its position."""

    name: str
    variables: tuple

    def index(self, name: str) -> int:
        for i, v in enumerate(self.variables):
            if v.name == name:
                return i
        raise FixedQMCError(
            f"kernel {self.name!r} has no variable {name!r}; it has: "
            f"{', '.join(v.name for v in self.variables)}"
        )

    @property
    def names(self) -> tuple:
        return tuple(v.name for v in self.variables)

    def resolve(self, policy: "str | PrecisionPolicy", ranges: dict | None = None
                ) -> "KernelPrecision":
        """Formats for every variable under a policy.

        ``ranges`` (variable -> (lo, hi), e.g. from a range profile) overrides the declared
        ranges when a width-only spec ``fixed:W`` sizes the integer bits.
        """
        policy = parse_precision(policy)
        kp = policy.for_kernel(self.name)
        if kp.kind != "fixed" and not any(k == self.name for k, _ in policy.variables):
            return KernelPrecision(self, kp.kind, (), (), ())
        if kp.kind != "fixed":
            raise FixedQMCError(
                f"kernel {self.name!r} runs in {kp.kind} but the spec gives some of its "
                "variables fixed formats; give the kernel a fixed precision too"
            )
        fmts, rnds, ovfs = [], [], []
        for v in self.variables:
            p = policy.for_variable(self.name, v.name)
            if p.fmt is not None:
                fmt = p.fmt
            else:
                lo, hi = (ranges or {}).get(v.name, (v.lo, v.hi))
                fmt = format_for_range(lo, hi, p.word_bits, f"{self.name}.{v.name}")
            fmts.append(fmt)
            rnds.append(p.rounding)
            ovfs.append(p.overflow)
        return KernelPrecision(self, "fixed", tuple(fmts), tuple(rnds), tuple(ovfs))


@dataclass(frozen=True)
class KernelPrecision:
    """A kernel's resolved precision: float64, float32, or a format per variable."""

    spec: KernelSpec
    kind: str
    formats: tuple
    roundings: tuple
    overflows: tuple

    @property
    def dtype(self):
        return {"float64": np.float64, "float32": np.float32, "fixed": np.int64}[self.kind]

    def format_of(self, name: str) -> QFormat:
        return self.formats[self.spec.index(name)]

    def table(self) -> tuple:
        """Per variable (signed, word bits, frac bits, rounding code, overflow code)."""
        return tuple(
            (int(f.signed), f.word_bits, f.frac_bits, rounding_code(r), overflow_code(o))
            for f, r, o in zip(self.formats, self.roundings, self.overflows)
        )

    def context(self, seed: int = 0):
        """The context argument of a compiled kernel for this precision."""
        if self.kind == "float64":
            return np.float64(0.0)
        if self.kind == "float32":
            return np.float32(0.0)
        events = np.zeros((N_CHUNKS, len(self.formats)), np.int64)
        return (FormatTable(self.table()), events, np.uint64(seed))

    def encode(self, name: str, x, seed: int = 0, log: OverflowLog | None = None) -> np.ndarray:
        """Kernel input for variable ``name``: floats of the kernel's type, or raw words
        (conversion overflow is counted under the variable's name)."""
        if self.kind != "fixed":
            return np.ascontiguousarray(x, dtype=self.dtype)
        i = self.spec.index(name)
        fx = Fixed.from_float(x, self.formats[i], self.roundings[i], self.overflows[i],
                              name=f"{self.spec.name}.{name}", log=log, seed=seed)
        return np.ascontiguousarray(fx.raw)

    def decode(self, name: str, y: np.ndarray) -> np.ndarray:
        """Kernel output of variable ``name`` as float64 values."""
        if self.kind != "fixed":
            return np.asarray(y, dtype=np.float64)
        return Fixed(np.asarray(y, np.int64), self.format_of(name)).to_float()

    def report(self, ctx, log: OverflowLog | None = None) -> dict:
        """Record a fixed run's overflow events in ``log`` and return them per variable;
        raise for variables in ``raise`` mode that overflowed."""
        if self.kind != "fixed":
            return {}
        counts = ctx[1].sum(axis=0)
        log = default_log if log is None else log
        out = {}
        for v, n, fmt, ovf in zip(self.spec.names, counts, self.formats, self.overflows):
            out[v] = int(n)
            log.record(f"{self.spec.name}.{v}", int(n), 0, str(fmt), ovf)
            if n and ovf == "raise":
                raise FixedOverflowError(
                    f"{n} value(s) of {self.spec.name}.{v} do not fit {fmt} under overflow='raise'"
                )
        return out


# ----------------------------------------------------- the format table as a type --
class FormatTable:
    """Per-variable (signed, word bits, frac bits, rounding code, overflow code), carried in
    the *type* of a fixed context so that every operation is compiled with its formats as
    constants."""

    def __init__(self, table: tuple):
        self.table = tuple(tuple(int(x) for x in row) for row in table)


class FormatTableType(types.Type):
    def __init__(self, table: tuple):
        self.table = table
        super().__init__(name=f"FormatTable{table}")


register_model(FormatTableType)(models.OpaqueModel)


@typeof_impl.register(FormatTable)
def _typeof_table(val, c):
    return FormatTableType(val.table)


@unbox(FormatTableType)
def _unbox_table(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


# ------------------------------------------------------------- generic operations --
def _stub(name):
    """A Python-level stand-in; the real implementations are the numba overloads below."""

    def op(*args):
        raise NotImplementedError(f"{name}() is usable only inside numba-compiled kernels")

    op.__name__ = op.__qualname__ = name
    return op


chunk, at, load, const, add, sub, mul, store = map(
    _stub, ("chunk", "at", "load", "const", "add", "sub", "mul", "store"))


def _is_fixed(ctx) -> bool:
    return isinstance(ctx, types.BaseTuple)


def _var(table, v, what):
    """The format row of variable id ``v`` (a compile-time constant) at typing time."""
    if not isinstance(v, types.IntegerLiteral):
        raise TypingError(f"{what}: kernel variable ids must be compile-time integer constants")
    return table[v.literal_value]


@njit(cache=True)
def n_chunks(ctx, n):
    """Number of chunks a kernel over ``n`` elements loops over (the same for every
    precision, so event arrays can be indexed by chunk)."""
    return N_CHUNKS


@njit(cache=True)
def chunk_bounds(ctx, n, k):
    """Index range [lo, hi) of chunk k of n elements."""
    return (n * k) // N_CHUNKS, (n * (k + 1)) // N_CHUNKS


@intrinsic
def _bump(typingctx, address, index):
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


@overload(chunk)
def _chunk(ctx, k):
    if _is_fixed(ctx):
        def impl(ctx, k):
            row = ctx[1][k]
            return (ctx[0], np.int64(row.ctypes.data), ctx[2], np.int64(0))
        return impl
    return lambda ctx, k: ctx


@overload(at)
def _at(ctx, i):
    if _is_fixed(ctx):
        return lambda ctx, i: (ctx[0], ctx[1], ctx[2], np.int64(i))
    return lambda ctx, i: ctx


@njit(cache=True)
def _random(e, v):
    return Q.random_bits(e[2], e[3], v)


@overload(load, prefer_literal=True)
def _load(e, x, v):
    """A kernel input element: a float cast to the context's type, or a raw word of var v."""
    if _is_fixed(e):
        _var(e.types[0].table, v, "load")
        return lambda e, x, v: (np.int64(x), v)
    dt = e
    return lambda e, x, v: dt(x)


@overload(const, prefer_literal=True)
def _const(e, x, v):
    """A float constant rounded into variable v's format (or cast to the float type)."""
    if _is_fixed(e):
        so, wo, fo, rnd, ovf = _var(e.types[0].table, v, "const")
        so = so != 0
        stochastic = rnd == STOCHASTIC

        def impl(e, x, v):
            rb = _random(e, v) if stochastic else np.uint64(0)
            r, ev = Q.from_float_raw(np.float64(x), so, wo, fo, rnd, ovf, rb)
            if ev:
                _bump(e[1], v)
            return (r, v)
        return impl
    dt = e
    return lambda e, x, v: dt(x)


def _binary_overload(name, raw_op, float_op):
    def ol(e, x, y, v):
        if not _is_fixed(e):
            return float_op
        table = e.types[0].table
        sa, _, fa, _, _ = _var(table, x.types[1], f"{name} (first operand)")
        sb, _, fb, _, _ = _var(table, y.types[1], f"{name} (second operand)")
        so, wo, fo, rnd, ovf = _var(table, v, name)
        sa, sb, so = sa != 0, sb != 0, so != 0
        stochastic = rnd == STOCHASTIC

        def impl(e, x, y, v):
            rb = _random(e, v) if stochastic else np.uint64(0)
            r, ev = raw_op(x[0], sa, fa, y[0], sb, fb, so, wo, fo, rnd, ovf, rb)
            if ev:
                _bump(e[1], v)
            return (r, v)
        return impl
    return ol


overload(add, prefer_literal=True)(_binary_overload("add", Q.add_raw, lambda e, x, y, v: x + y))
overload(sub, prefer_literal=True)(_binary_overload("sub", Q.sub_raw, lambda e, x, y, v: x - y))
overload(mul, prefer_literal=True)(_binary_overload("mul", Q.mul_raw, lambda e, x, y, v: x * y))


@overload(store)
def _store(e, x):
    """What a kernel writes to its output array: the float, or the raw word."""
    if _is_fixed(e):
        return lambda e, x: x[0]
    return lambda e, x: x
