"""Kernel specs and precisions on the host side: :class:`Variable` (a named kernel variable
with its declared range), :class:`KernelSpec` (a kernel's variables) and
:class:`KernelPrecision` (a format, rounding and overflow mode per variable under a precision
policy), which encodes a kernel's inputs, builds the context its compiled kernel is called
with (float, typed fixed, run-time formats or profiling), decodes its outputs and reports its
overflow events.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from fixedqmc.errors import FixedOverflowError, FixedQMCError, FloatRangeWarning
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.float_format import NAMED_FORMATS, FloatFormat, round_with_events
from fixedqmc.numerics.float_format import rounding_code as float_rounding_code
from fixedqmc.numerics import kernel_bound
from fixedqmc.numerics.kernel_core import COUNTED_OPERATIONS, N_COUNTED
from fixedqmc.numerics.kernel_elements import N_CHUNKS
from fixedqmc.numerics.kernel_float import param_rows
from fixedqmc.numerics.kernel_types import Bounds, FloatFormats, FormatTable, TypedContext
from fixedqmc.numerics.modes import overflow_code, rounding_code
from fixedqmc.numerics.overflow import FLOAT_EVENT_KINDS, OverflowLog, default_log
from fixedqmc.numerics.policy import (PrecisionPolicy, float_range_message, format_for_range,
                                      parse_precision, sized_float_format)


def symmetric_range(x) -> tuple[float, float]:
    """``(-|x|, |x|)``: the declared range of a variable bounded by ``|x|`` in magnitude."""
    x = float(abs(x))
    return (-x, x)


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

        A kernel whose precision is float64 or float32 and none of whose variables the
        policy names runs in that float type; any other kernel gets a format per variable:
        a fixed-point :class:`QFormat` or a :class:`FloatFormat` (its variables that the
        policy does not name get the kernel's precision, float64 and float32 as the
        formats e11m52 and e8m23).  ``ranges`` (variable -> ``(lo, hi)`` or
        ``(lo, hi, min nonzero |x|)``, e.g. from a range profile,
        :meth:`~fixedqmc.qmc.profile.RangeProfile.ranges`) overrides the declared ranges
        when a width-only spec ``fixed:W`` sizes the integer bits, and sizes the exponent
        bits of a mantissa-only spec ``float:m<M>``
        (:func:`~fixedqmc.numerics.policy.float_format_for_range`), which needs the
        smallest nonzero magnitude: a variable without one (no ``ranges``, or a pair) is a
        :class:`~fixedqmc.errors.PrecisionSpecError` naming it.  Variables no exponent
        width holds get the widest one and a :class:`~fixedqmc.errors.FloatRangeWarning`
        naming them.
        """
        policy = parse_precision(policy)
        kp = policy.for_kernel(self.name)
        if kp.kind in NATIVE_FLOATS and not any(k == self.name for k, _ in policy.variables):
            return KernelPrecision(self, kp.kind, (), (), ())
        fmts, rnds, ovfs, problems = [], [], [], {}
        for v in self.variables:
            p = policy.for_variable(self.name, v.name)
            name = f"{self.name}.{v.name}"
            if p.kind in NATIVE_FLOATS:
                fmt = NAMED_FORMATS[p.kind]
            elif p.sized_float:
                fmt, problem = sized_float_format(p, ranges, v, name)
                if problem:
                    problems[name] = problem
            elif p.fmt is not None:  # a float format or an explicit fixed format
                fmt = p.fmt
            else:
                lo, hi = tuple((ranges or {}).get(v.name, (v.lo, v.hi)))[:2]
                fmt = format_for_range(lo, hi, p.word_bits, name)
            fmts.append(fmt)
            floating = isinstance(fmt, FloatFormat)
            rnds.append(fmt.rounding if floating else p.rounding)
            ovfs.append(fmt.overflow if floating else p.overflow)
        if problems:
            warnings.warn(FloatRangeWarning(float_range_message(self.name, problems),
                                            problems), stacklevel=2)
        # float formats (float64 too) are read at run time: no typed form of their rows
        return KernelPrecision(self, "formats", tuple(fmts), tuple(rnds), tuple(ovfs),
                               runtime=any(isinstance(f, FloatFormat) for f in fmts))


#: the precisions that run in the machine's own float arithmetic
NATIVE_FLOATS = ("float64", "float32")


def _is_native64(fmt) -> bool:
    """Whether a float format is float64 itself (nearest even, IEEE): its correctly rounded
    operations are the machine's float64 operations, so its values need no rounding."""
    return fmt == NAMED_FORMATS["float64"]


@dataclass(frozen=True)
class KernelPrecision:
    """A kernel's resolved precision: ``kind`` float64 or float32 (the machine's
    arithmetic), ``formats`` (a format per variable: :class:`QFormat` fixed point or
    :class:`FloatFormat`, with its rounding and overflow modes), ``profile`` or ``bound``
    (:meth:`bounding`)."""

    spec: KernelSpec
    kind: str
    formats: tuple
    roundings: tuple
    overflows: tuple
    runtime: bool = False  # formats read at run time (see ``context``)
    #: float formats only: the float-format context (False: the general run-time context,
    #: bit-identical and slower; for comparisons)
    float_context: bool = True
    #: a bound precision: the kind of the precision it bounds (:meth:`bounding`)
    trial: str = ""

    def profiling(self) -> "KernelPrecision":
        """float64 arithmetic that records, per variable, the range of the values every
        operation produces (run-time formats; :meth:`profile`)."""
        return replace(self, kind="profile", formats=(), roundings=(), overflows=(),
                       runtime=True)

    def bounding(self) -> "KernelPrecision":
        """float64 arithmetic carrying, per value, rigorous bounds on its own error and on
        the error of this precision (the *trial*): the bound context of
        :mod:`~fixedqmc.numerics.kernel_bound`.  Inputs are float64 values (exact); each
        output element is ``value + 1j * bound`` (:meth:`decode`, :meth:`bounds`); a float64
        or float32 kernel's trial is that format at nearest even."""
        if self.kind in ("profile", "bound"):
            raise FixedQMCError(f"kernel {self.spec.name!r}: a {self.kind} precision has no "
                                "bound form; bound the precision itself")
        if self.kind in NATIVE_FLOATS:
            n = len(self.spec.variables)
            fmt = NAMED_FORMATS[self.kind]
            formats, rnds, ovfs = (fmt,) * n, ("nearest_even",) * n, (fmt.overflow,) * n
        else:
            formats, rnds, ovfs = self.formats, self.roundings, self.overflows
        return replace(self, kind="bound", formats=formats, roundings=rnds, overflows=ovfs,
                       runtime=False, trial=self.kind)

    def ambiguous(self, ctx) -> int:
        """The ambiguous decisions of a bound run (comparisons the trial or the exact
        arithmetic may decide otherwise; :mod:`~fixedqmc.numerics.kernel_bound`)."""
        return int(ctx[1][:, kernel_bound.DECISIONS].sum())

    def bounds(self, name: str, y: np.ndarray) -> np.ndarray:
        """The bounds of a bound run's output ``y`` of variable ``name`` (float64 array):
        ``|trial - value|`` and ``|trial - exact|`` never exceed them (inf: unbounded)."""
        return np.asarray(y).imag.astype(np.float64)

    def profile(self, ctx) -> dict:
        """``{variable: (min, max, max |x|, min nonzero |x|)}`` of a profiling run (the
        variables no operation produced, e.g. kernel inputs, are absent)."""
        n = len(self.spec.variables)
        stats = ctx[1][:, n:5 * n].reshape(N_CHUNKS, n, 4).view(np.float64)
        out = {}
        for i, name in enumerate(self.spec.names):
            st = stats[:, i]
            lo, hi = st[:, 0].min(), st[:, 1].max()
            if lo <= hi:
                out[name] = (float(lo), float(hi), float(st[:, 2].max()), float(st[:, 3].min()))
        return out

    def counts(self, ctx) -> list:
        """The operations a profiling run counted: one ``{"variable", "op", "count", "a",
        "b"}`` per result variable and operation (``a``, ``b``: the operands' variables,
        several joined by ``|``, ``""`` for none or another kernel's; a comparison is
        counted under its first operand), in variable then operation order.  Counted:
        :data:`~fixedqmc.numerics.kernel_core.COUNTED_OPERATIONS`; not counted: loads,
        constants, stores, ``select`` and accumulator reads (wires, registers and
        multiplexers)."""
        n = len(self.spec.variables)
        cols = ctx[1][:, 5 * n:].reshape(N_CHUNKS, n, N_COUNTED, 3)
        count = cols[..., 0].sum(axis=0)
        masks = np.bitwise_or.reduce(cols[..., 1:], axis=0)
        names = self.spec.names

        def operands(mask: int) -> str:
            bits = [i for i in range(64) if (mask >> i) & 1]
            picked = [names[i] for i in bits if i < 63] + (list(names[63:]) if 63 in bits
                                                           else [])
            return "|".join(picked)

        return [{"variable": names[v], "op": COUNTED_OPERATIONS[c], "count": int(count[v, c]),
                 "a": operands(int(masks[v, c, 0])), "b": operands(int(masks[v, c, 1]))}
                for v in range(n) for c in range(N_COUNTED) if count[v, c]]

    def at_runtime(self) -> "KernelPrecision":
        """The same precision with formats read at run time: one compiled kernel serves
        every format and float64 (float64 values travel as their bit patterns in int64
        words); float32 needs its own typed compilation."""
        if self.kind == "float32":
            raise FixedQMCError(f"kernel {self.spec.name!r}: float32 has no run-time-format "
                                "form; use the typed float32 kernel")
        return replace(self, runtime=True)

    def in_float_context(self) -> "KernelPrecision":
        """A float64 precision as float64 rows of the float-format context
        (:mod:`~fixedqmc.numerics.kernel_float`): every variable the format float64 at
        nearest even, whose results are the machine's float64 results, unrounded; so a
        compiled kernel that also takes float-format kernels' contexts has one type for
        every choice of which of them are float64 (:func:`shared_context_kind`)."""
        if self.kind != "float64":
            raise FixedQMCError(f"kernel {self.spec.name!r}: only a float64 precision has "
                                f"a float-context form, not {self.kind}")
        fmt, n = NAMED_FORMATS["float64"], len(self.spec.variables)
        return replace(self, kind="formats", formats=(fmt,) * n, roundings=(fmt.rounding,) * n,
                       overflows=(fmt.overflow,) * n, runtime=True)

    @cached_property
    def float_only(self) -> bool:
        """Every variable in a float format (float64 and emulated float32 included): the
        kernel runs in the float-format context (:mod:`~fixedqmc.numerics.kernel_float`),
        whatever :attr:`runtime` says."""
        return (self.kind == "formats" and self.float_context
                and all(isinstance(f, FloatFormat) for f in self.formats))

    @property
    def dtype(self):
        if self.kind == "bound":
            return np.complex128
        if self.float_only:
            return np.float64
        if self.runtime:
            return np.int64
        return {"float64": np.float64, "float32": np.float32, "formats": np.int64}[self.kind]

    def format_of(self, name: str):
        """The format (:class:`QFormat` or :class:`FloatFormat`) of variable ``name``."""
        return self.formats[self.spec.index(name)]

    def format_name(self, name: str) -> str:
        """The format of variable ``name`` as its spec string (a float format's name if it
        has one, e.g. ``bfloat16``), or the float type."""
        if self.kind != "formats":
            return self.kind
        fmt = self.format_of(name)
        if _is_native64(fmt):
            return "float64"
        # (an emulated float32 keeps its spec: "float32" names the machine's arithmetic)
        return next((k for k, f in NAMED_FORMATS.items() if f == fmt and k != "float32"),
                    str(fmt))

    @cached_property
    def float_variables(self) -> tuple:
        """Indices of the variables in an emulated float format (not float64 itself)."""
        return tuple(i for i, f in enumerate(self.formats)
                     if isinstance(f, FloatFormat) and not _is_native64(f))

    def table(self) -> tuple:
        """Per variable a row of five integers, the format as the compiled operations read
        it: fixed point ``(signed, word bits, frac bits, rounding code, overflow code)``;
        float64 ``(0, 0, 0, 0, 0)``; a float format ``(E, -2, M, rounding code, options)``
        with options ``subnormals + 2 saturate + 4 fn + 256 c``, ``c`` the first of the
        variable's three columns of underflow, subnormal and NaN counts in the event rows
        (after the n columns of overflow counts)."""
        n = len(self.formats)
        rows = []
        for i, (f, r, o) in enumerate(zip(self.formats, self.roundings, self.overflows)):
            if isinstance(f, FloatFormat):
                if _is_native64(f):
                    rows.append((0, 0, 0, 0, 0))
                    continue
                opts = (int(f.subnormals) + 2 * (f.overflow == "saturate") + 4 * int(f.fn)
                        + 256 * (n + 3 * i))
                rows.append((f.exp_bits, -2, f.man_bits, float_rounding_code(r), opts))
            else:
                rows.append((int(f.signed), f.word_bits, f.frac_bits, rounding_code(r),
                             overflow_code(o)))
        return tuple(rows)

    def context(self, seed: int = 0):
        """The context argument of a compiled kernel for this precision.

        Typed (default): a float of the kernel's type, or for fixed point a context whose
        *type* holds the format table, so each set of formats is compiled into its own
        specialisation (fastest to run; a compilation per set of formats).  Run time
        (:meth:`at_runtime`, and always with float formats): the format table is an array
        read as the kernel runs (rows of zeros for float64 variables), so one compilation
        serves every width and every mix of fixed point, float formats and float64.  Both
        give bit-identical results.  With float formats the event rows hold, after the
        overflow counts, three columns per variable (underflows to zero, subnormal
        results, NaNs).  A precision of float formats only (:attr:`float_only`) gets the
        float-format context ``(parameters, events, seed, FloatFormats())`` of
        :mod:`~fixedqmc.numerics.kernel_float` (float64 values; one compilation for every
        float format), bit-identical to the run-time form."""
        if self.kind == "bound":
            return (self._bound_params,
                    np.zeros((N_CHUNKS, kernel_bound.DECISION_COLUMNS + len(self.formats)),
                             np.int64), np.uint64(seed), Bounds())
        if self.float_only:
            n = len(self.formats)
            return (self._float_params, np.zeros((N_CHUNKS, 4 * n), np.int64),
                    np.uint64(seed), FloatFormats())
        if self.runtime:
            n = len(self.spec.variables)
            if self.kind == "profile":  # word -1: float64, statistics at column n + 4 i,
                # then operation counts (kernel_core.count_operation)
                table = tuple((0, -1, n + 4 * i, 0, 0) for i in range(n))
                init = np.array([np.inf, -np.inf, 0.0, np.inf]).view(np.int64)
                events = np.concatenate([np.zeros((N_CHUNKS, n), np.int64),
                                         np.tile(init, (N_CHUNKS, n)),
                                         np.zeros((N_CHUNKS, 3 * n * N_COUNTED), np.int64)],
                                        axis=1)
            else:
                table = self.table() if self.kind == "formats" else ((0, 0, 0, 0, 0),) * n
                width = 4 * n if self.float_variables else n
                events = np.zeros((N_CHUNKS, width), np.int64)
            return (np.array(table, np.int64).reshape(n, 5), events, np.uint64(seed))
        if self.kind == "float64":
            return np.float64(0.0)
        if self.kind == "float32":
            return np.float32(0.0)
        events = np.zeros((N_CHUNKS, len(self.formats)), np.int64)
        return TypedContext((self._format_table, events, np.uint64(seed)))

    @cached_property
    def _bound_params(self) -> np.ndarray:
        """The parameter rows of a bound context, built once."""
        return kernel_bound.param_rows(self.formats, self.roundings, self.overflows,
                                       native=self.trial in NATIVE_FLOATS)

    @cached_property
    def _float_params(self) -> np.ndarray:
        """The parameter rows of a float-format context, built once."""
        return param_rows(self.formats, self.roundings, len(self.formats))

    @cached_property
    def _format_table(self) -> "FormatTable":
        """The :class:`FormatTable` of a typed fixed context, built once (every call's
        context shares it, and numba types it once)."""
        return FormatTable(self.table())

    def encode(self, name: str, x, seed: int = 0, log: OverflowLog | None = None) -> np.ndarray:
        """Kernel input for variable ``name``: floats of the kernel's type, or raw words
        (fixed point; float formats and float64 as float64 bit patterns, or as float64s in
        a float-format context; a float format's values rounded once into it); conversion
        events are counted under the variable's name.  Always a writable C-contiguous array, so that the compiled kernel's argument
        types do not vary."""
        if self.kind == "bound" and np.iscomplexobj(x):  # a bound run's own output
            return np.require(x, np.complex128, ["C", "W"])
        if self.kind != "formats":  # float64 and float32, profiles and bounds
            out = np.require(x, dtype=np.float32 if self.kind == "float32" else np.float64,
                             requirements=["C", "W"])
            return out.view(np.int64) if self.runtime else out
        i = self.spec.index(name)
        fmt, key = self.formats[i], f"{self.spec.name}.{name}"
        if isinstance(fmt, FloatFormat):
            x = np.asarray(x, np.float64)
            if i in self.float_variables:
                x, counts = round_with_events(x, fmt, self.roundings[i], seed, i)
                log = default_log if log is None else log
                log.record(key, counts["overflow"], 0, str(fmt), fmt.overflow,
                           kinds={k: counts[k] for k in FLOAT_EVENT_KINDS})
            x = np.require(x, np.float64, requirements=["C", "W"])
            return x if self.float_only else x.view(np.int64)
        fx = Fixed.from_float(x, fmt, self.roundings[i], self.overflows[i], name=key, log=log,
                              seed=seed)
        # writable: kernels are compiled per array type, read-only being part of it
        return np.require(fx.raw, requirements=["C", "W"])

    def decode(self, name: str, y: np.ndarray) -> np.ndarray:
        """Kernel output of variable ``name`` as float64 values (of a bound run: its
        float64 values; :meth:`bounds` their bounds)."""
        if self.kind == "bound":
            return np.asarray(y).real.astype(np.float64)
        if self.kind != "formats" or isinstance(self.format_of(name), FloatFormat):
            y = np.ascontiguousarray(y)
            return y.view(np.float64) if y.dtype == np.int64 else np.asarray(y, np.float64)
        # a view: Fixed freezes its words, which must not make the caller's array read-only
        return Fixed(np.asarray(y, np.int64).view(), self.format_of(name)).to_float()

    def report(self, ctx, log: OverflowLog | None = None) -> dict:
        """Record a run's overflow events (and a float format's underflows, subnormal
        results and NaNs) in ``log`` and return the overflow counts per variable; raise for
        variables in ``raise`` mode that overflowed.  Of a bound run: ``{variable: elements
        whose bound became infinite there}`` (nothing logged)."""
        if self.kind == "bound":
            counts = ctx[1][:, kernel_bound.DECISION_COLUMNS:].sum(axis=0).tolist()
            return dict(zip(self.spec.names, counts))
        if self.kind != "formats":
            return {}
        n = len(self.formats)
        all_counts = ctx[1].sum(axis=0).tolist()
        counts = all_counts[:n]
        log = default_log if log is None else log
        keys = self._log_keys
        if log.registered.get(self.spec.name) is not self:
            # the first report of this precision into this log: every format and mode (later
            # reports only add events; the per-variable loop cost 20-30 us per call)
            for i, (key, ovf) in enumerate(zip(keys, self.overflows)):
                log.record(key, 0, 0, self.format_name(self.spec.names[i]), ovf)
            log.registered[self.spec.name] = self
        for i in self.float_variables:
            kinds = dict(zip(FLOAT_EVENT_KINDS, all_counts[n + 3 * i:n + 3 * i + 3]))
            if any(kinds.values()):
                log.record(keys[i], 0, 0, kinds=kinds)
        for key, k, ovf in zip(keys, counts, self.overflows):
            if k:
                log.record(key, k, 0)
                if ovf == "raise":
                    raise FixedOverflowError(
                        f"{k} value(s) of {key} do not fit {log.formats.get(key, '')} under "
                        "overflow='raise'")
        return dict(zip(self.spec.names, counts))

    @cached_property
    def _log_keys(self) -> tuple:
        return tuple(f"{self.spec.name}.{v}" for v in self.spec.names)


def shared_context_kind(precisions: dict) -> dict:
    """``{kernel: KernelPrecision}`` of kernels compiled together (a fused kernel taking each
    one's context) with their float64 kernels moved into the context kind of the emulated
    ones, so that one compilation serves every choice of which kernels are emulated (a
    sweep's kernel sets): with any fixed-point format every kernel reads its formats at run
    time (:meth:`KernelPrecision.at_runtime`; float64 as bit patterns), with float formats
    only the float64 kernels run as float64 rows of the float-format context
    (:meth:`KernelPrecision.in_float_context`).  Either way a float64 kernel computes the
    machine's float64 results, in order (tests compare its bits with the typed float64
    kernel's).  Precisions without fixed or float formats, or with a float32 kernel (no
    run-time form), are returned as they are."""
    kinds = {kp.kind for kp in precisions.values()}
    if "formats" not in kinds or "float32" in kinds:
        return dict(precisions)
    if all(kp.float_only for kp in precisions.values() if kp.kind == "formats"):
        return {k: kp.in_float_context() if kp.kind == "float64" else kp
                for k, kp in precisions.items()}
    return {k: kp.at_runtime() for k, kp in precisions.items()}
