"""The named kernels of a system at one precision: what a system needs to run its
one-source kernels (:mod:`fixedqmc.numerics.kernel`) at any precision spec.

A :class:`KernelSet` resolves a precision spec over a system's kernels (each a
:class:`KernelSpec` with named variables and declared ranges), gives each kernel call its
context (the stochastic-rounding stream of MC step ``step``), encodes inputs, decodes
outputs, records overflow events in one :class:`OverflowLog`, lists every variable's format
and profiles ranges.  Fixed-point kernels run with run-time formats by default (one
compilation for every width: what sweeps need), float kernels in their own type
(:meth:`KernelSet.launch` compiles them for loop vectorisation).
"""

from __future__ import annotations

import copy
from functools import lru_cache

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel import KernelPrecision
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.policy import parse_precision
from fixedqmc.numerics.vectorise import vectorised


@lru_cache(maxsize=1 << 14)
def step_seed(seed: int, step: int) -> int:
    """Seed of the stochastic-rounding stream of MC step ``step`` of a run seeded ``seed``
    (memoised: a step asks for it once per kernel call and per encoded input)."""
    return int(np.random.SeedSequence([int(seed), int(step)]).generate_state(1, np.uint64)[0])


def host_stats(x) -> tuple:
    """``(min, max, max |x|, min nonzero |x|)`` of an array (a kernel input's profile)."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    nz = a[a > 0]
    return (float(x.min()), float(x.max()), float(a.max()),
            float(nz.min()) if nz.size else float("inf"))


def merge_stats(a: tuple | None, b: tuple) -> tuple:
    """The profile statistics of two sets of values together."""
    if a is None:
        return b
    return (min(a[0], b[0]), max(a[1], b[1]), max(a[2], b[2]), min(a[3], b[3]))


def formats_of(precisions: dict) -> dict:
    """``{"kernel.variable": format or float type}`` of ``{kernel: KernelPrecision}``."""
    out = {}
    for k, kp in precisions.items():
        for v in kp.spec.names:
            out[f"{k}.{v}"] = kp.format_name(v)
    return out


def merge_counts(*runs: list) -> list:
    """Operation counts (rows of :meth:`KernelPrecision.counts`) of several runs of one
    kernel together: counts summed, operand variables joined, in first-seen order."""
    out: dict = {}
    for rows in runs:
        for r in rows:
            key = (r["variable"], r["op"])
            if key not in out:
                out[key] = dict(r)
                continue
            m = out[key]
            m["count"] += r["count"]
            for side in ("a", "b"):
                names = [x for x in m[side].split("|") if x]
                names += [x for x in r[side].split("|") if x and x not in names]
                m[side] = "|".join(names)
    return list(out.values())


class KernelSet:
    """Kernels ``{name: KernelSpec}`` resolved at ``precision`` (a spec string or policy);
    ``ranges`` ``{kernel: {variable: (lo, hi)}}`` (a range profile) size width-only specs;
    ``runtime``: fixed kernels read their formats at run time (default)."""

    #: of a bound set (:meth:`bounding`): the set it bounds, with an overflow log of its own
    trial: "KernelSet | None" = None

    def __init__(self, specs: dict, precision="float64", *, ranges: dict | None = None,
                 seed: int = 0, runtime: bool = True):
        self.specs = dict(specs)
        self.policy = parse_precision(precision)
        self.policy.check_kernels({k: s.names for k, s in self.specs.items()})
        ranges = ranges or {}
        self.precisions: dict[str, KernelPrecision] = {}
        for name, spec in self.specs.items():
            kp = spec.resolve(self.policy, ranges.get(name))
            self.precisions[name] = kp.at_runtime() if runtime and kp.kind == "formats" else kp
        self.seed = int(seed)
        self.log = OverflowLog()
        self._profiles: dict | None = None  # profiling: one context per kernel
        self._vectorised: set = set()  # (kernel, name) launched: compiled in this process

    def __getitem__(self, name: str) -> KernelPrecision:
        return self.precisions[name]

    def __getstate__(self) -> dict:
        """Pickled (or copied) without the record of :meth:`launch`: compiled code belongs
        to one process, so a copy checks again."""
        state = dict(self.__dict__)
        state.pop("_vectorised", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._vectorised = set()

    def launch(self, kernel, args: tuple, name: str) -> None:
        """Run ``kernel(*args)``, a compiled kernel of ``name``.  A float kernel is first
        compiled for loop vectorisation (:func:`~fixedqmc.numerics.vectorise.vectorised`:
        its term loops vectorise; fixed-point ones gain little and compile far longer).  The
        argument types of a kernel are fixed per kernel set, so the compile check runs once
        per set and kernel (typing the arguments costs more than a small move)."""
        float_kernel = self.precisions[name].kind in ("float64", "float32")
        if float_kernel and (kernel, name) not in self._vectorised:
            vectorised(kernel, *args)
            self._vectorised.add((kernel, name))
        kernel(*args)

    def context(self, name: str, step: int = 0):
        """The context argument of kernel ``name`` for MC step ``step`` (of a profiling set:
        the same context for every call, so that its statistics cover all of them)."""
        if self._profiles is not None:
            if name not in self._profiles:
                self._profiles[name] = self.precisions[name].context(0)
            return self._profiles[name]
        return self.precisions[name].context(step_seed(self.seed, step))

    def encode(self, name: str, variable: str, x, step: int = 0) -> np.ndarray:
        """Input ``x`` of ``name.variable`` in the kernel's number type (overflow logged; a
        profiling set records its statistics)."""
        if self._profiles is not None and np.size(x):
            inputs = self._profiles.setdefault(("inputs", name), {})
            inputs[variable] = merge_stats(inputs.get(variable), host_stats(x))
        return self.precisions[name].encode(variable, x, step_seed(self.seed, step), self.log)

    def constants(self, name: str, *arrays) -> tuple:
        """Constant arrays of kernel ``name`` (values its ``const`` reads) in the kernel's
        float type: float32 for a float32 kernel (rounded once here instead of at every
        use: the same values, and no conversions in its loops), else float64 (fixed point
        rounds each constant from float64)."""
        dt = np.float32 if self.precisions[name].kind == "float32" else np.float64
        return tuple(np.ascontiguousarray(a, dt) for a in arrays)

    def decode(self, name: str, variable: str, y) -> np.ndarray:
        """Output words of ``name.variable`` as float64 values; of a bound set, as bound
        words ``value + 1j * bound`` (a copy; :mod:`~fixedqmc.numerics.bound_words`)."""
        if self.trial is not None:
            return np.array(y, np.complex128)
        return self.precisions[name].decode(variable, y)

    @property
    def host_dtype(self):
        """The type of kernel outputs on the host: float64, or complex128 for the bound
        words of a bound set."""
        return np.float64 if self.trial is None else np.complex128

    def report(self, name: str, ctx) -> dict:
        """Record the overflow events of a finished call in :attr:`log`; of a bound set,
        count its unbounded elements per variable (:attr:`unbounded`) and its ambiguous
        decisions (:attr:`ambiguous`)."""
        kp = self.precisions[name]
        out = kp.report(ctx, self.log)
        if self.trial is not None:
            for v, c in out.items():
                key = f"{name}.{v}"
                self.unbounded[key] = self.unbounded.get(key, 0) + c
            self.ambiguous += kp.ambiguous(ctx)
        return out

    def bounding(self) -> "KernelSet":
        """The same kernels in the bound context (:meth:`KernelPrecision.bounding`): inputs
        are float64 values or bound words, outputs decode to bound words, and :attr:`trial`
        is a copy of this set with an overflow log of its own (for host steps that need the
        trial's values themselves, e.g. a fresh inverse).  :attr:`unbounded` and
        :attr:`ambiguous` count over every call."""
        out = copy.copy(self)
        out.precisions = {k: kp.bounding() for k, kp in self.precisions.items()}
        out.log, out._profiles = OverflowLog(), None
        out.trial = copy.copy(self)
        out.trial.log = OverflowLog()
        out.unbounded, out.ambiguous = {}, 0
        return out

    def formats(self) -> dict:
        """``{"kernel.variable": format or float type}`` of every variable."""
        return formats_of(self.precisions)

    def profiling(self) -> "KernelSet":
        """The same kernels in float64 recording every operation's range
        (:meth:`KernelPrecision.profiling`); :meth:`context` gives one context per kernel,
        whose statistics over every call :meth:`stats` reads."""
        out = KernelSet(self.specs, "float64", seed=self.seed)
        out.precisions = {k: kp.profiling() for k, kp in out.precisions.items()}
        out._profiles = {}
        return out

    def reset_profiles(self) -> None:
        """Start a profiling set's statistics and operation counts afresh."""
        self._profiles = {}

    def counts(self, name: str) -> list:
        """The operations the profiling calls of kernel ``name`` counted
        (:meth:`KernelPrecision.counts`: a row per result variable and operation)."""
        if self._profiles is None:
            raise FixedQMCError("operation counts come from a profiling kernel set "
                                "(KernelSet.profiling())")
        return self.precisions[name].counts(self.context(name))

    def stats(self, name: str, ctx=None, inputs: dict | None = None) -> dict:
        """``{variable: (min, max, max|x|, min nonzero |x|)}`` of the profiling calls of
        kernel ``name`` (``ctx``: of one call's context instead); ``inputs`` ``{variable:
        array}`` gives kernel input values measured on the host.  A variable's statistics
        cover every value it held: operation results, encoded and given inputs together."""
        out = self.precisions[name].profile(self.context(name) if ctx is None else ctx)
        if self._profiles is not None:
            for v, st in self._profiles.get(("inputs", name), {}).items():
                out[v] = merge_stats(out.get(v), st)
        for v, x in (inputs or {}).items():
            out[v] = merge_stats(out.get(v), host_stats(x))
        return out
