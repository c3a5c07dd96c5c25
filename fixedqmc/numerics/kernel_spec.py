"""Kernel specs and precisions on the host side: :class:`Variable` (a named kernel variable
with its declared range), :class:`KernelSpec` (a kernel's variables) and
:class:`KernelPrecision` (a format, rounding and overflow mode per variable under a precision
policy), which encodes a kernel's inputs, builds the context its compiled kernel is called
with (float, typed fixed, run-time formats or profiling), decodes its outputs and reports its
overflow events.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from fixedqmc.errors import FixedOverflowError, FixedQMCError
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.kernel_elements import N_CHUNKS
from fixedqmc.numerics.kernel_types import FormatTable, TypedContext
from fixedqmc.numerics.modes import overflow_code, rounding_code
from fixedqmc.numerics.overflow import OverflowLog, default_log
from fixedqmc.numerics.policy import PrecisionPolicy, format_for_range, parse_precision
from fixedqmc.numerics.qformat import QFormat


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
