"""Error bounds of a kernel beside its measured errors: :func:`bound_kernel` runs one
element-wise kernel at a trial precision and in the bound context
(:mod:`~fixedqmc.numerics.kernel_bound`) on the same inputs and returns, per output
variable, the float64 value, the rigorous bound on the trial's error and the error measured.

A kernel is called ``kernel(ctx, *inputs, *constants, *outputs)``: its input arrays (one
per named input variable, all of one length n), any constant arrays it reads with
``const``, and one output array of length n per named output variable; the kernel pattern of
:mod:`fixedqmc.numerics.kernel_core`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import pandas as pd

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel_spec import KernelSpec
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.numerics.qformat import QFormat


@dataclass
class KernelBound:
    """Per output variable (dicts keyed by name), arrays of shape (n,) (of a system,
    :func:`system_bound`: per quantity, arrays per walker): ``value`` (float64,
    the bound run's), ``bound`` (rigorous: ``|trial - value|`` and ``|trial - exact|`` never
    exceed it; inf where the trial may overflow or divide by an interval holding 0),
    ``trial`` (the trial precision's result, decoded to float64) and ``error``
    ``|trial - value|`` (rounded once; from the words for fixed words over 53 bits);
    ``unbounded``: per kernel variable, the elements whose bound became infinite there;
    ``ambiguous``: decisions the trial or the exact arithmetic may take otherwise (their
    elements' later outputs are unbounded); ``log``: the trial run's overflow events."""

    kernel: str
    precision: str
    value: dict
    bound: dict
    trial: dict
    error: dict
    unbounded: dict
    ambiguous: int
    log: OverflowLog

    def table(self) -> pd.DataFrame:
        """One row per output variable: the largest measured error and bound, their ratio
        (the tightness: the bound over the largest observed error), the element with the
        largest error and its bound, unbounded elements and violations."""
        rows = []
        for k, err in self.error.items():
            err, b = np.ravel(err), np.ravel(self.bound[k])
            finite = np.isfinite(b)
            worst = int(np.argmax(err)) if err.size else -1
            max_err = float(err.max()) if err.size else 0.0
            max_b = float(b[finite].max()) if finite.any() else np.inf
            rows.append({
                "output": k, "max_error": max_err, "max_bound": max_b,
                "ratio": max_b / max_err if max_err > 0 else np.inf,
                "worst": worst, "bound_at_worst": float(b[worst]) if err.size else np.nan,
                "unbounded": int((~finite).sum()),
                "violations": int((err > b).sum()),
            })
        return pd.DataFrame(rows).set_index("output")


def linear_bound(terms) -> tuple[np.ndarray, np.ndarray]:
    """A host-side combination ``sum_i c_i x_i`` of bounded kernel outputs: ``terms`` is a
    sequence of ``(c, value, bound)`` (a float64 coefficient and arrays of one shape; the
    bound ``B_i >= r_i + b_i`` as a bound run stores it: ``|v_i - X_i| <= r_i``, ``|T_i -
    X_i| <= b_i``).  Returns the float64 value ``v = sum_i c_i v_i`` and ``B >= r + b`` of
    the combination, so ``B`` bounds ``|T - X|``, ``|v - X|`` and ``|T - v|``, for a trial
    ``T`` that evaluates the same combination of its own outputs in float64, in any order
    with at most one product per term (``k`` terms: at most ``k`` roundings on any term,
    Higham's ``gamma_k``)::

        B = sum_i |c_i| B_i + gamma_k sum_i |c_i| (2 |v_i| + B_i) + 2 k 2**-1074

    (float64's roundings on ``v`` and the trial's on ``T``, ``|T_i| <= |v_i| + B_i``; the
    last term: products that underflow, at most half a subnormal step each), inflated
    by ``1 + 2**-45`` for the rounding of the bound's own float64 evaluation.  A value that
    is not a number has an infinite bound."""
    terms = [(float(c), np.asarray(v, np.float64), np.asarray(b, np.float64))
             for c, v, b in terms]
    k = len(terms)
    u = 2.0 ** -53
    gamma = k * u / (1.0 - k * u)
    value = sum(c * v for c, v, _ in terms)
    carried = sum(abs(c) * b for c, _, b in terms)
    rounding = sum(abs(c) * (2.0 * np.abs(v) + b) for c, v, b in terms)
    bound = (carried + gamma * rounding + k * 2.0 ** -1073) * (1.0 + 2.0 ** -45)
    return value, np.where(np.isnan(value), np.inf, bound)


def system_bound(name: str, precision: str, value: dict, bound: dict, trial: dict,
                 unbounded: dict, ambiguous: int, log: OverflowLog) -> KernelBound:
    """The :class:`KernelBound` of a system's evaluation (``name``: the system kind): per
    quantity ``value`` and ``bound`` of the bound run, ``trial`` (float64 values of the
    trial's own evaluation); the errors are ``|trial - value|`` (inf where either is not a
    number)."""
    error = {k: _distance(np.asarray(trial[k], np.float64), value[k]) for k in value}
    return KernelBound(name, precision, value, bound, trial, error, unbounded, ambiguous, log)


def _distance(trial: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``|trial - value|`` of float64 arrays, inf where either is not a number."""
    err = np.abs(trial - value)
    return np.where(np.isnan(err), np.inf, err)


def _errors(kp, name: str, words: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``|trial - value|`` rounded once: a fixed word of more than 53 bits (whose float64
    decode may round) exactly, from the word, else from the float64 decode (exact); inf
    where the trial or the value is not a number."""
    fmt = kp.format_of(name) if kp.kind == "formats" else None
    if not (isinstance(fmt, QFormat) and fmt.word_bits > 53):
        return _distance(kp.decode(name, words), value)
    unit = Fraction(2) ** -fmt.frac_bits
    ints = np.asarray(words, np.int64)
    ints = ints if fmt.signed else ints.view(np.uint64)
    return np.array([float(abs(int(w) * unit - Fraction(float(x))))
                     for w, x in zip(ints.tolist(), value.tolist())], np.float64)


def _check_arity(spec, kernel, n_in: int, n_const: int, n_out: int) -> None:
    """A kernel (a numba dispatcher or a Python function) whose parameters are not the
    context plus the given arrays is refused by name before any compilation."""
    fn = getattr(kernel, "py_func", kernel)
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature to read: the call will tell
        return
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return
    want = 1 + n_in + n_const + n_out
    if len(params) != want:
        raise FixedQMCError(
            f"kernel {spec.name!r}: {getattr(fn, '__name__', fn)} takes {len(params)} "
            f"arguments, but the context, {n_in} input(s), {n_const} constant array(s) and "
            f"{n_out} output(s) make {want}; name every output the kernel writes")


def bound_kernel(spec: KernelSpec, kernel, inputs: dict, outputs, precision, *,
                 constants: tuple = (), ranges: dict | None = None, seed: int = 0
                 ) -> KernelBound:
    """Run ``kernel`` (compiled, of ``spec``) at ``precision`` (a spec string or policy:
    the trial) and in the bound context on ``inputs`` ``{input variable: array (n,)}`` (in
    the kernel's argument order), with ``constants`` (extra arrays it reads with
    ``const``); ``outputs`` names its output variables in argument order.  ``ranges``
    ``{variable: (lo, hi)}`` size width-only specs (default: the declared ranges).  Bad
    names or shapes raise a :class:`~fixedqmc.errors.FixedQMCError` before any work."""
    outputs = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    for name in (*inputs, *outputs):
        spec.index(name)  # names the kernel's variables if unknown
    _check_arity(spec, kernel, len(inputs), len(constants), len(outputs))
    arrays = {k: np.ascontiguousarray(v, np.float64).ravel() for k, v in inputs.items()}
    sizes = {k: a.size for k, a in arrays.items()}
    if len(set(sizes.values())) > 1:
        raise FixedQMCError(f"kernel {spec.name!r}: inputs of different lengths {sizes}; "
                            "give one value per element for every input")
    n = next(iter(sizes.values()), 0)
    kp = spec.resolve(precision, ranges)
    if kp.kind == "formats":  # one compilation for every format, float formats included
        kp = replace(kp.at_runtime(), float_context=False)  # (bit-identical, compiles fast)
    kb = kp.bounding()
    log = OverflowLog()

    def run(p):
        ins = [p.encode(k, a, seed, log) for k, a in arrays.items()]
        outs = [np.empty(n, p.dtype) for _ in outputs]
        ctx = p.context(seed)
        kernel(ctx, *ins, *constants, *outs)
        return outs, p.report(ctx, log), ctx

    bound_out, unbounded, ctx = run(kb)  # first: an operation without a bound form fails
    trial_out, _, _ = run(kp)
    trial = {k: kp.decode(k, y) for k, y in zip(outputs, trial_out)}
    value = {k: kb.decode(k, y) for k, y in zip(outputs, bound_out)}
    bound = {k: kb.bounds(k, y) for k, y in zip(outputs, bound_out)}
    error = {k: _errors(kp, k, y, value[k]) for k, y in zip(outputs, trial_out)}
    return KernelBound(spec.name, str(precision), value, bound, trial, error, unbounded,
                       kb.ambiguous(ctx), log)
