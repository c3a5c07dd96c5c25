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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from numba import njit
from numba.core import types
from numba.core.errors import TypingError
from llvmlite import ir
from numba.extending import (NativeValue, intrinsic, models, overload, register_model,
                             typeof_impl, unbox)

from fixedqmc.errors import FixedOverflowError, FixedQMCError
from fixedqmc.numerics import narrow
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics import wideint as W
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
    runtime: bool = False  # formats read at run time (see ``context``)

    def profiling(self) -> "KernelPrecision":
        """float64 arithmetic that records, per variable, the range of the values every
        operation produces (run-time formats; :meth:`profile`)."""
        return replace(self, kind="profile", formats=(), roundings=(), overflows=(),
                       runtime=True)

    def profile(self, ctx) -> dict:
        """``{variable: (min, max, max |x|, min nonzero |x|)}`` of a profiling run (the
        variables no operation produced, e.g. kernel inputs, are absent)."""
        n = len(self.spec.variables)
        stats = ctx[1][:, n:].reshape(N_CHUNKS, n, 4).view(np.float64)
        out = {}
        for i, name in enumerate(self.spec.names):
            st = stats[:, i]
            lo, hi = st[:, 0].min(), st[:, 1].max()
            if lo <= hi:
                out[name] = (float(lo), float(hi), float(st[:, 2].max()), float(st[:, 3].min()))
        return out

    def at_runtime(self) -> "KernelPrecision":
        """The same precision with formats read at run time: one compiled kernel serves
        every format and float64 (float64 values travel as their bit patterns in int64
        words); float32 needs its own typed compilation."""
        if self.kind == "float32":
            raise FixedQMCError(f"kernel {self.spec.name!r}: float32 has no run-time-format "
                                "form; use the typed float32 kernel")
        return replace(self, runtime=True)

    @property
    def dtype(self):
        if self.runtime:
            return np.int64
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
        """The context argument of a compiled kernel for this precision.

        Typed (default): a float of the kernel's type, or for fixed point a context whose
        *type* holds the format table, so each set of formats is compiled into its own
        specialisation (fastest to run; a compilation per set of formats).  Run time
        (:meth:`at_runtime`): the format table is an array read as the kernel runs (rows
        of zeros for float64 variables), so one compilation serves every width and every
        mix of fixed and float64 kernels.  Both give bit-identical results."""
        if self.runtime:
            n = len(self.spec.variables)
            if self.kind == "profile":  # word -1: float64, statistics at column n + 4 i
                table = tuple((0, -1, n + 4 * i, 0, 0) for i in range(n))
                init = np.array([np.inf, -np.inf, 0.0, np.inf]).view(np.int64)
                events = np.concatenate([np.zeros((N_CHUNKS, n), np.int64),
                                         np.tile(init, (N_CHUNKS, n))], axis=1)
            else:
                table = self.table() if self.kind == "fixed" else ((0, 0, 0, 0, 0),) * n
                events = np.zeros((N_CHUNKS, n), np.int64)
            return (np.array(table, np.int64).reshape(n, 5), events, np.uint64(seed))
        if self.kind == "float64":
            return np.float64(0.0)
        if self.kind == "float32":
            return np.float32(0.0)
        events = np.zeros((N_CHUNKS, len(self.formats)), np.int64)
        return TypedContext((self._format_table, events, np.uint64(seed)))

    @cached_property
    def _format_table(self) -> "FormatTable":
        """The :class:`FormatTable` of a typed fixed context, built once (every call's
        context shares it, and numba types it once)."""
        return FormatTable(self.table())

    def encode(self, name: str, x, seed: int = 0, log: OverflowLog | None = None) -> np.ndarray:
        """Kernel input for variable ``name``: floats of the kernel's type, or raw words
        (conversion overflow is counted under the variable's name); always a writable
        C-contiguous array, so that the compiled kernel's argument types do not vary."""
        if self.kind != "fixed":
            out = np.require(x, dtype=np.float32 if self.kind == "float32" else np.float64,
                             requirements=["C", "W"])
            return out.view(np.int64) if self.runtime else out
        i = self.spec.index(name)
        fx = Fixed.from_float(x, self.formats[i], self.roundings[i], self.overflows[i],
                              name=f"{self.spec.name}.{name}", log=log, seed=seed)
        # writable: kernels are compiled per array type, read-only being part of it
        return np.require(fx.raw, requirements=["C", "W"])

    def decode(self, name: str, y: np.ndarray) -> np.ndarray:
        """Kernel output of variable ``name`` as float64 values."""
        if self.kind != "fixed":
            y = np.ascontiguousarray(y)
            return y.view(np.float64) if self.runtime else np.asarray(y, dtype=np.float64)
        # a view: Fixed freezes its words, which must not make the caller's array read-only
        return Fixed(np.asarray(y, np.int64).view(), self.format_of(name)).to_float()

    def report(self, ctx, log: OverflowLog | None = None) -> dict:
        """Record a fixed run's overflow events in ``log`` and return them per variable;
        raise for variables in ``raise`` mode that overflowed."""
        if self.kind != "fixed":
            return {}
        counts = ctx[1].sum(axis=0).tolist()
        log = default_log if log is None else log
        keys = self._log_keys
        if log.registered.get(self.spec.name) is not self:
            # the first report of this precision into this log: every format and mode (later
            # reports only add events; the per-variable loop cost 20-30 us per call)
            for key, fmt, ovf in zip(keys, self.formats, self.overflows):
                log.record(key, 0, 0, str(fmt), ovf)
            log.registered[self.spec.name] = self
        for key, n, fmt, ovf in zip(keys, counts, self.formats, self.overflows):
            if n:
                log.record(key, n, 0, str(fmt), ovf)
                if ovf == "raise":
                    raise FixedOverflowError(
                        f"{n} value(s) of {key} do not fit {fmt} under overflow='raise'")
        return dict(zip(self.spec.names, counts))

    @cached_property
    def _log_keys(self) -> tuple:
        return tuple(f"{self.spec.name}.{v}" for v in self.spec.names)


# ----------------------------------------------------- the format table as a type --
class FormatTable:
    """Per-variable (signed, word bits, frac bits, rounding code, overflow code), carried in
    the *type* of a fixed context so that every operation is compiled with its formats as
    constants."""

    def __init__(self, table: tuple):
        self.table = tuple(tuple(int(x) for x in row) for row in table)
        self.numba_type = FormatTableType(self.table)  # typed once, not at every call
        #: the type of a :class:`TypedContext` of this table, built once as well
        self.context_type = types.Tuple((self.numba_type, types.Array(types.int64, 2, "C"),
                                         types.uint64))


class TypedContext(tuple):
    """A typed fixed context ``(FormatTable, events (N_CHUNKS, n) int64, seed uint64)``.

    A plain tuple holding a :class:`FormatTable` is typed by numba's dispatcher in Python,
    element by element, at every kernel call (73 us; a quarter of a fixed-point H2 sweep);
    this subclass is typed by a lookup of its table's :attr:`FormatTable.context_type`."""

    __slots__ = ()


class FormatTableType(types.Type):
    def __init__(self, table: tuple):
        self.table = table
        super().__init__(name=f"FormatTable{table}")


register_model(FormatTableType)(models.OpaqueModel)


@typeof_impl.register(FormatTable)
def _typeof_table(val, c):
    return val.numba_type


@typeof_impl.register(TypedContext)
def _typeof_context(val, c):
    return val[0].context_type


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


@intrinsic
def _peek(typingctx, address, index):
    """The int64 at ``address`` + 8 * ``index`` (a run-time format table)."""
    sig = types.int64(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        addr, idx = args
        i64 = ir.IntType(64)
        return builder.load(builder.gep(builder.inttoptr(addr, i64.as_pointer()), [idx]))

    return sig, codegen


def _is_runtime(e) -> bool:
    """A fixed context whose formats are read at run time (not part of its type)."""
    return not isinstance(e.types[0], FormatTableType)


def _is_quiet(e) -> bool:
    """A quiet element context (:func:`quiet`): events travel in the values."""
    return _is_fixed(e) and len(e) == 4 and isinstance(e.types[1], types.NoneType)


quiet, events, is_quiet, _flag_of, _emit = map(_stub, ("quiet", "events", "is_quiet",
                                                       "_flag_of", "_emit"))
quiet.__doc__ = """``quiet(e)``: the element context ``e`` with overflow events carried in the values
instead of counted in memory, so that a loop of operations has no store and vectorises.

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


@overload(quiet)
def _quiet(e):
    if _is_fixed(e) and not _is_runtime(e):
        return lambda e: (e[0], None, e[2], e[3])
    return lambda e: e


@overload(is_quiet, inline="always")
def _ol_is_quiet(e):
    q = _is_quiet(e)
    return lambda e: q


@overload(_flag_of, inline="always")
def _ol_flag_of(x):
    if isinstance(x, types.BaseTuple) and len(x) == 3:
        return lambda x: x[2]
    return lambda x: np.int64(0)


@overload(events, inline="always")
def _events(e, x):
    return lambda e, x: _flag_of(x)


_count = _stub("_count")


@overload(_count, inline="always")
def _ol_count(e, ev, v):
    """Count event ``ev`` of variable v in the chunk's event row (typed or run-time formats;
    nothing in a quiet context, whose values carry it)."""
    if _is_quiet(e):
        return lambda e, ev, v: None

    def counted(e, ev, v):
        if ev:
            _bump(e[1], v)
    return counted


@overload(_emit, prefer_literal=True, inline="always")
def _ol_emit(e, r, ev, v, flag):
    """A typed fixed result ``r`` of variable v with overflow event ``ev``: counted in the
    chunk's event row, or (quiet) carried with the operands' flags."""
    if _is_quiet(e):
        return lambda e, r, ev, v, flag: (r, v, flag | np.int64(ev))

    def counted(e, r, ev, v, flag):
        _count(e, ev, v)
        return (r, v)
    return counted


@njit(nogil=True)
def _fmt(e, v):
    """(signed, word, frac, rounding, overflow) of variable v of a run-time format table."""
    b = np.int64(v) * 5
    return (_peek(e[0], b) != 0, _peek(e[0], b + 1), _peek(e[0], b + 2), _peek(e[0], b + 3),
            _peek(e[0], b + 4))


@njit(nogil=True)
def _rbits(e, v, rnd):
    return Q.random_bits(e[2], e[3], v) if rnd == STOCHASTIC else np.uint64(0)


@intrinsic
def _f2i(typingctx, x):
    """The bit pattern of a float64 as an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _i2f(typingctx, x):
    """The float64 whose bit pattern is the int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@njit(nogil=True)
def _rt_value(raw, signed, word, frac):
    """float64 value of a run-time-format word (word <= 0: a float64 bit pattern)."""
    if word <= 0:
        return _i2f(raw)
    w = np.float64(raw) if signed else np.float64(np.uint64(raw))
    return w * 2.0 ** -frac


@intrinsic
def _poke(typingctx, address, index, value):
    """Store the int64 ``value`` at ``address`` + 8 * ``index``."""
    sig = types.void(types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        addr, idx, val = args
        i64 = ir.IntType(64)
        builder.store(val, builder.gep(builder.inttoptr(addr, i64.as_pointer()), [idx]))
        return context.get_dummy_value()

    return sig, codegen


@njit(nogil=True)
def _record(row, base, x):
    """Update the range statistics (min, max, max |x|, min nonzero |x|) at ``base`` of a
    chunk's row with the value x (a profiled variable, format row word -1)."""
    a = abs(x)
    if x < _i2f(_peek(row, base)):
        _poke(row, base, _f2i(x))
    if x > _i2f(_peek(row, base + 1)):
        _poke(row, base + 1, _f2i(x))
    if a > _i2f(_peek(row, base + 2)):
        _poke(row, base + 2, _f2i(a))
    if 0.0 < a < _i2f(_peek(row, base + 3)):
        _poke(row, base + 3, _f2i(a))


@njit(nogil=True)
def _rt_float_to(e, x, vo, so, wo, fo, rnd, ovf):
    """A float64 result into output variable vo (its bits if vo is float64; profiled
    float64 (word -1) also records x in the statistics at column ``fo``)."""
    if wo == -1:
        _record(e[1], fo, x)
    if wo <= 0:
        return _f2i(x)
    r, ev = Q.from_float_raw(x, so, wo, fo, rnd, ovf, _rbits(e, vo, rnd))
    _count(e, ev, vo)
    return r


@njit(nogil=True, cache=True)
def _rt_binary(op, e, ra, va, rb_, vb, vo):
    """Run-time-format add (op 0), sub (1) or mul (2): one compiled routine for every format.

    Fixed operands and output: the exact operation rounded once.  A float64 output (format
    row of zeros): the operation in float64 on the operands' values.  A float64 operand
    and a fixed output: the float64 result rounded once into the output format."""
    sa, wa, fa, _, _ = _fmt(e, va)
    sb, wb, fb, _, _ = _fmt(e, vb)
    so, wo, fo, rnd, ovf = _fmt(e, vo)
    if wo <= 0 or wa <= 0 or wb <= 0:
        a = _rt_value(ra, sa, wa, fa)
        b = _rt_value(rb_, sb, wb, fb)
        x = a + b if op == 0 else (a - b if op == 1 else a * b)
        return _rt_float_to(e, x, vo, so, wo, fo, rnd, ovf)
    rbits = _rbits(e, vo, rnd)
    if op == 0:
        r, ev = Q.add_raw(ra, sa, fa, rb_, sb, fb, so, wo, fo, rnd, ovf, rbits)
    elif op == 1:
        r, ev = Q.sub_raw(ra, sa, fa, rb_, sb, fb, so, wo, fo, rnd, ovf, rbits)
    else:
        r, ev = Q.mul_raw(ra, sa, fa, rb_, sb, fb, so, wo, fo, rnd, ovf, rbits)
    _count(e, ev, vo)
    return r


@njit(nogil=True, cache=True)
def _rt_from_float(e, x, vo):
    so, wo, fo, rnd, ovf = _fmt(e, vo)
    return _rt_float_to(e, x, vo, so, wo, fo, rnd, ovf)


@njit(nogil=True, cache=True)
def _rt_convert(e, ra, sa, wa, fa, vo):
    """A word (word bits ``wa``, 0: float64) into run-time variable vo."""
    so, wo, fo, rnd, ovf = _fmt(e, vo)
    if wa <= 0 or wo <= 0:
        return _rt_float_to(e, _rt_value(ra, sa, wa, fa), vo, so, wo, fo, rnd, ovf)
    r, ev = Q.add_raw(ra, sa, fa, np.int64(0), True, fa, so, wo, fo, rnd, ovf,
                      _rbits(e, vo, rnd))
    _count(e, ev, vo)
    return r


@njit(nogil=True, cache=True)
def _rt_less(e, ra, va, rb_, vb):
    sa, wa, fa, _, _ = _fmt(e, va)
    sb, wb, fb, _, _ = _fmt(e, vb)
    if wa <= 0 or wb <= 0:
        return _rt_value(ra, sa, wa, fa) < _rt_value(rb_, sb, wb, fb)
    return Q.compare_raw(ra, sa, fa, rb_, sb, fb) < 0


@overload(chunk)
def _chunk(ctx, k):
    if _is_fixed(ctx):
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
        if not _is_runtime(e):
            _var(e.types[0].table, v, "load")
        if _is_quiet(e):
            return lambda e, x, v: (np.int64(x), v, np.int64(0))
        return lambda e, x, v: (np.int64(x), v)
    dt = e
    return lambda e, x, v: dt(x)


@overload(const, prefer_literal=True)
def _const(e, x, v):
    """A float constant rounded into variable v's format (or cast to the float type)."""
    if _is_fixed(e) and _is_runtime(e):
        return lambda e, x, v: (_rt_from_float(e, np.float64(x), np.int64(v)), v)
    if _is_fixed(e):
        so, wo, fo, rnd, ovf = _var(e.types[0].table, v, "const")
        so = so != 0
        stochastic = rnd == STOCHASTIC

        def impl(e, x, v):
            rb = _random(e, v) if stochastic else np.uint64(0)
            r, ev = Q.from_float_raw(np.float64(x), so, wo, fo, rnd, ovf, rb)
            return _emit(e, r, ev, v, np.int64(0))
        return impl
    dt = e
    return lambda e, x, v: dt(x)


def _binary_overload(name, raw_op, float_op, opcode):
    def ol(e, x, y, v):
        if not _is_fixed(e):
            return float_op
        if _is_runtime(e):
            return lambda e, x, y, v: (_rt_binary(opcode, e, x[0], np.int64(x[1]), y[0],
                                                  np.int64(y[1]), np.int64(v)), v)
        table = e.types[0].table
        sa, wa, fa, _, _ = _var(table, x.types[1], f"{name} (first operand)")
        sb, wb, fb, _, _ = _var(table, y.types[1], f"{name} (second operand)")
        so, wo, fo, rnd, ovf = _var(table, v, name)
        sa, sb, so = sa != 0, sb != 0, so != 0
        stochastic = rnd == STOCHASTIC
        op = narrow.binary(opcode, (sa, wa, fa), (sb, wb, fb), (so, wo, fo, rnd, ovf),
                           vector=_is_quiet(e))
        if op is None:  # the general exact operation (192-bit fallback out of line)
            op = njit(lambda ra, rb, rbits: raw_op(ra, sa, fa, rb, sb, fb, so, wo, fo, rnd,
                                                   ovf, rbits), nogil=True, inline="always")

        def impl(e, x, y, v):
            rb = _random(e, v) if stochastic else np.uint64(0)
            r, ev = op(x[0], y[0], rb)
            return _emit(e, r, ev, v, _flag_of(x) | _flag_of(y))
        return impl
    return ol


# inlined at numba-IR level: each fixed operation would otherwise be a real call
for _code, (_op, _raw, _float) in enumerate(((add, Q.add_raw, lambda e, x, y, v: x + y),
                                             (sub, Q.sub_raw, lambda e, x, y, v: x - y),
                                             (mul, Q.mul_raw, lambda e, x, y, v: x * y))):
    overload(_op, prefer_literal=True, inline="always")(
        _binary_overload(_op.__name__, _raw, _float, _code))


@overload(store)
def _store(e, x):
    """What a kernel writes to its output array: the float, or the raw word."""
    if _is_fixed(e):
        return lambda e, x: x[0]
    return lambda e, x: x


# ------------------------------------------------------- conversion between kernels --
convert = _stub("convert")
convert.__doc__ = """``convert(e, x, src, v)``: value ``x`` of another kernel's element context ``src``
as a value of variable ``v`` of ``e``'s kernel (the wire between two hardware units whose
formats differ).  Fixed to fixed: the exact value rounded once into v's format with v's
rounding and overflow modes (an overflow counts as an event of v); float to fixed: the
float rounded once likewise; fixed to float: the word's value in the float type (exact for
words of at most 24 (float32) or 53 (float64) significant bits, else rounded to nearest);
float to float: a cast."""


@overload(convert, prefer_literal=True, inline="always")
def _convert(e, x, src, v):
    if not _is_fixed(e):
        dt = e
        if not _is_fixed(src):
            return lambda e, x, src, v: dt(x)
        if _is_runtime(src):
            def rt_to_float(e, x, src, v):
                sa, wa, fa, _, _ = _fmt(src, x[1])
                return dt(_rt_value(x[0], sa, wa, fa))
            return rt_to_float
        sa, _, fa, _, _ = _var(src.types[0].table, x.types[1], "convert (source)")
        scale = 2.0 ** -fa
        if sa:
            return lambda e, x, src, v: dt(np.float64(x[0]) * scale)
        return lambda e, x, src, v: dt(np.float64(np.uint64(x[0])) * scale)
    if _is_runtime(e):
        if not _is_fixed(src):
            return lambda e, x, src, v: (_rt_from_float(e, np.float64(x), np.int64(v)), v)
        if _is_runtime(src):
            def rt_rt(e, x, src, v):
                sa, wa, fa, _, _ = _fmt(src, x[1])
                return (_rt_convert(e, x[0], sa, wa, fa, np.int64(v)), v)
            return rt_rt
        sa, wa, fa, _, _ = _var(src.types[0].table, x.types[1], "convert (source)")
        sa = sa != 0
        return lambda e, x, src, v: (_rt_convert(e, x[0], sa, wa, fa, np.int64(v)), v)
    so, wo, fo, rnd, ovf = _var(e.types[0].table, v, "convert")
    so = so != 0
    stochastic = rnd == STOCHASTIC
    if not _is_fixed(src):
        def from_float(e, x, src, v):
            rb = _random(e, v) if stochastic else np.uint64(0)
            r, ev = Q.from_float_raw(np.float64(x), so, wo, fo, rnd, ovf, rb)
            return _emit(e, r, ev, v, np.int64(0))
        return from_float
    if _is_runtime(src):
        def from_rt(e, x, src, v):
            sa, wa, fa, _, _ = _fmt(src, x[1])
            rb = _random(e, v) if stochastic else np.uint64(0)
            if wa <= 0:
                r, ev = Q.from_float_raw(_i2f(x[0]), so, wo, fo, rnd, ovf, rb)
            else:
                r, ev = Q.add_raw(x[0], sa, fa, np.int64(0), True, fa, so, wo, fo, rnd, ovf, rb)
            return _emit(e, r, ev, v, np.int64(0))
        return from_rt
    sa, wa, fa, _, _ = _var(src.types[0].table, x.types[1], "convert (source)")
    sa = sa != 0
    op = narrow.cast((sa, wa, fa), (so, wo, fo, rnd, ovf))
    if op is None:
        op = njit(lambda ra, rbits: Q.add_raw(ra, sa, fa, np.int64(0), True, fa, so, wo, fo,
                                              rnd, ovf, rbits), nogil=True, inline="always")

    def impl(e, x, src, v):
        rb = _random(e, v) if stochastic else np.uint64(0)
        r, ev = op(x[0], rb)
        return _emit(e, r, ev, v, _flag_of(x))
    return impl


# ------------------------------------------------------- comparison and table lookup --
# Generic operations of the two-region table kernel (fixedqmc.tables.evaluate; HAQMC, seed
# 002, Sec. 3): the region test and the bin index, the one step of a table lookup whose
# arithmetic depends on the number type.  Float contexts compute the index with floor and
# frexp; fixed contexts read it straight off the bits of the raw word of t, as hardware does.
from numba.cpython.unsafe.numbers import leading_zeros as _leading_zeros  # noqa: E402

less, uniform_bin, log2_bin = map(_stub, ("less", "uniform_bin", "log2_bin"))
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


@overload(less, prefer_literal=True)
def _less(e, x, y):
    """Exact ``x < y`` (a bool) of two values, in any formats."""
    if not _is_fixed(e):
        return lambda e, x, y: x < y
    if _is_runtime(e):
        return lambda e, x, y: _rt_less(e, x[0], np.int64(x[1]), y[0], np.int64(y[1]))
    table = e.types[0].table
    sa, wa, fa, _, _ = _var(table, x.types[1], "less (first operand)")
    sb, wb, fb, _, _ = _var(table, y.types[1], "less (second operand)")
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
    or a format table; the two fixed ones call ``core`` on the raw word of t."""
    if not _is_fixed(e):
        one = np.dtype(str(e)).type(1.0)
        # the largest float below 1 in the context's type: t is clamped to [0, this]
        return float_impl_maker(e, np.nextafter(one, one - one))
    if _is_runtime(e):
        return impl_maker(_RUNTIME_BINS[core], None)
    table = e.types[0].table
    st, _, ft, _, _ = _var(table, t.types[1], f"{name} (t)")
    su, wu, fu, rnd, ovf = _var(table, vu, name)
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
        _count(e, et, tv)
        return k, _emit(e, r, eu, vu, _flag_of(t) | et)
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
        _count(e, et, tv)
        return k, _emit(e, r, eu, vu, _flag_of(t) | et)
    return impl


@njit(nogil=True)
def _uniform_core(e, traw, st, ft, layout, su, wu, fu, rnd, ovf, vu):
    """Fixed uniform_bin on the raw word of t: (k, raw u, event of t, event of u)."""
    (n_bits,) = layout
    w, et = _unit_word(traw, st, ft)
    sh = ft - n_bits
    k, ur = _split(w, sh, ft)
    r, eu = _fraction_to(ur, max(sh, 0), ft, su, wu, fu, rnd, ovf, _rbits(e, vu, rnd))
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
    r, eu = _fraction_to(ur, max(sh, 0), ft, su, wu, fu, rnd, ovf, _rbits(e, vu, rnd))
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
        w = tc * _i2f((np.int64(1023) + j + np.int64(inner)) << 52) - (1.0 if inner else 0.0)
        nb = np.int64(1) << bin_bits
        x = w * nb  # exact, and below nb since w < 1: floor(x) <= nb - 1
        m = np.floor(x)
        return j * nb + np.int64(m), dt(x - m)  # x - m is exact in dt (as many bits as t)
    return impl


_ONE_BELOW = np.nextafter(1.0, 0.0)
_uniform_f64 = njit(_uniform_float(np.float64, _ONE_BELOW), nogil=True)
_log2_f64 = njit(_log2_float(np.float64, _ONE_BELOW), nogil=True)


def _runtime_bin(core, float_bin):
    """A bin operation with run-time formats: the fixed ``core`` on a fixed t, the float64
    operation on a float64 t; u stored into its variable's format (or as float64 bits)."""
    @njit(nogil=True)
    def rt(e, traw, tv, layout, vu):
        st, wt, ft, _, _ = _fmt(e, tv)
        su, wu, fu, rnd, ovf = _fmt(e, vu)
        if wt > 0 and wu > 0:
            k, r, et, eu = core(e, traw, st, ft, layout, su, wu, fu, rnd, ovf, vu)
            _count(e, et, tv)
            _count(e, eu, vu)
            return k, r
        if wt <= 0:
            k, u = float_bin(0.0, _i2f(traw), *layout, 0)
        else:  # fixed t, float64 u: the fixed bin, then u's exact value
            k, r, et, _ = core(e, traw, st, ft, layout, False, 64, 64, 0, 0, vu)
            _count(e, et, tv)
            u = np.float64(np.uint64(r)) * 2.0 ** -64
        return k, _rt_float_to(e, u, vu, su, wu, fu, rnd, ovf)
    return rt


@overload(uniform_bin, prefer_literal=True, inline="always")
def _uniform_bin(e, t, n_bits, vu):
    return _bin_typing("uniform_bin", e, t, vu, _uniform_core, _uniform_float, _uniform_impl)


@overload(log2_bin, prefer_literal=True, inline="always")
def _log2_bin(e, t, n_seg, bin_bits, vu):
    return _bin_typing("log2_bin", e, t, vu, _log2_core, _log2_float, _log2_impl)


_RUNTIME_BINS = {_uniform_core: _runtime_bin(_uniform_core, _uniform_f64),
                 _log2_core: _runtime_bin(_log2_core, _log2_f64)}


# -------------------------------------------------------------------- accumulators --
# Sums over many terms (pairs of a cluster) as hardware accumulates them: each term is
# rounded once into the sum variable's format, the terms are added exactly in a register
# wide enough for all of them, and the total is overflow-handled once into the format.  An
# exact sum is associative, so a loop of them is a reduction and vectorises; fixed results
# do not depend on the order of the terms.
acc_zero, acc_add, acc_value, acc_fits = map(_stub, ("acc_zero", "acc_add", "acc_value",
                                                     "acc_fits"))
acc_array, acc_array_clear, _acc_get, _acc_put = map(
    _stub, ("acc_array", "acc_array_clear", "_acc_get", "_acc_put"))
acc_zero.__doc__ = """``acc_zero(e, v)``: an empty accumulator for sums of variable ``v``."""
acc_add.__doc__ = """``acc_add(e, acc, x, v)``: ``acc`` plus the value x rounded once into v's format
(an overflow of that rounding is an event of v).  Float contexts add in the context's type
with a reassociable add: the compiler may split the sum into partial sums (vector lanes),
so float sums are reproducible for a given machine and compiled kernel, not bit-identical to
a left-to-right sum."""
acc_value.__doc__ = """``acc_value(e, acc, v)``: the exact sum of the accumulator, overflow-handled once into
v's format (saturate, wrap or raise, one event of v if it does not fit), as a value of v."""
acc_fits.__doc__ = """``acc_fits(e, v, n)``: whether a quiet accumulator of v is exact for n terms (its int64
register needs ``E_v + bit_length(n) <= 62``, see :mod:`fixedqmc.numerics.narrow`); always
true in other contexts, whose fixed accumulators hold 192 bits."""
acc_array.__doc__ = """``acc_array(e, n, v)``: ``n`` empty accumulators of variable ``v`` in one buffer
(float contexts: an array of the context's type; fixed ones: the exact accumulators' words).
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


@overload(acc_zero, prefer_literal=True, inline="always")
def _acc_zero(e, v):
    if not _is_fixed(e):
        dt = e
        return lambda e, v: dt(0.0)
    if _is_quiet(e):
        return lambda e, v: (np.int64(0), np.int64(0))
    if _is_runtime(e):
        return lambda e, v: (_W0, 0.0)
    return lambda e, v: _W0


@overload(acc_fits, prefer_literal=True, inline="always")
def _acc_fits(e, v, n):
    if not _is_quiet(e):
        return lambda e, v, n: True
    sv, wv, _, _, _ = _var(e.types[0].table, v, "acc_fits")
    room = 62 - narrow.magnitude_bits(sv != 0, wv)
    return lambda e, v, n: room >= 0 and (np.int64(n) >> np.int64(min(room, 63))) == 0


@overload(acc_add, prefer_literal=True, inline="always")
def _acc_add(e, acc, x, v):
    if not _is_fixed(e):
        dt = e
        return lambda e, acc, x, v: _radd(acc, dt(x))
    if _is_runtime(e):
        def runtime(e, acc, x, v):
            sa, wa, fa, _, _ = _fmt(e, x[1])
            so, wo, fo, rnd, ovf = _fmt(e, v)
            if wo <= 0:  # float64 sum (profiled: the term's range is recorded)
                t = _rt_value(x[0], sa, wa, fa)
                if wo == -1:
                    _record(e[1], fo, t)
                return (acc[0], acc[1] + t)
            r = _rt_convert(e, x[0], sa, wa, fa, np.int64(v))
            return (W.add(acc[0], W.from_raw(r, so)), acc[1])
        return runtime
    so = _var(e.types[0].table, v, "acc_add")[0] != 0
    if _is_quiet(e):
        def quiet_add(e, acc, x, v):
            t = convert(e, x, e, v)
            return (acc[0] + t[0], acc[1] | t[2])
        return quiet_add
    return lambda e, acc, x, v: W.add(acc, W.from_raw(convert(e, x, e, v)[0], so))


@overload(acc_value, prefer_literal=True, inline="always")
def _acc_value(e, acc, v):
    if not _is_fixed(e):
        return lambda e, acc, v: acc
    if _is_runtime(e):
        def runtime(e, acc, v):
            so, wo, fo, rnd, ovf = _fmt(e, v)
            if wo <= 0:
                return (_rt_float_to(e, acc[1], np.int64(v), so, wo, fo, rnd, ovf), v)
            r, ev = Q.store(acc[0], so, wo, ovf)
            _count(e, ev, np.int64(v))
            return (r, v)
        return runtime
    so, wo, _, _, ovf = _var(e.types[0].table, v, "acc_value")
    so = so != 0
    if _is_quiet(e):
        def quiet_value(e, acc, v):
            r, ev = Q.store_i64(acc[0], so, wo, ovf)
            return (r, v, acc[1] | ev)
        return quiet_value

    def counted(e, acc, v):
        r, ev = Q.store(acc, so, wo, ovf)
        return _emit(e, r, ev, v, np.int64(0))
    return counted


# Accumulator arrays: the accumulators of acc_zero/acc_add/acc_value kept in a buffer (float:
# the sums; counted fixed: the three uint64 limbs of each 192-bit sum; quiet: a row of int64
# sums and a row of their flags, so that a loop over the accumulators reads and writes memory
# in order and vectorises; run-time formats: the limbs and the float64 shadow sum).
@overload(acc_array, prefer_literal=True)
def _acc_array(e, n, v):
    if not _is_fixed(e):
        dt = e
        return lambda e, n, v: np.zeros(n, dt)
    if _is_quiet(e):
        return lambda e, n, v: np.zeros((2, n), np.int64)
    if _is_runtime(e):
        return lambda e, n, v: (np.zeros((n, 3), np.uint64), np.zeros(n, np.float64))
    return lambda e, n, v: np.zeros((n, 3), np.uint64)


@njit(inline="always")
def _clear(a):
    flat = a.reshape(a.size)
    for i in range(flat.size):
        flat[i] = 0


@overload(acc_array_clear)
def _acc_array_clear(e, buf):
    if _is_fixed(e) and _is_runtime(e):
        def runtime(e, buf):
            _clear(buf[0])
            _clear(buf[1])
        return runtime
    return lambda e, buf: _clear(buf)


@overload(_acc_get, inline="always")
def _ol_acc_get(e, buf, k):
    """Accumulator k of ``buf`` as the value :func:`acc_add` takes."""
    if not _is_fixed(e):
        return lambda e, buf, k: buf[k]
    if _is_quiet(e):
        return lambda e, buf, k: (buf[0, k], buf[1, k])
    if _is_runtime(e):
        return lambda e, buf, k: ((buf[0][k, 0], buf[0][k, 1], buf[0][k, 2]), buf[1][k])
    return lambda e, buf, k: (buf[k, 0], buf[k, 1], buf[k, 2])


@overload(_acc_put, inline="always")
def _ol_acc_put(e, buf, k, acc):
    """Accumulator k of ``buf`` set to ``acc``."""
    if not _is_fixed(e):
        def put(e, buf, k, acc):
            buf[k] = acc
    elif _is_quiet(e):
        def put(e, buf, k, acc):
            buf[0, k], buf[1, k] = acc
    elif _is_runtime(e):
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
