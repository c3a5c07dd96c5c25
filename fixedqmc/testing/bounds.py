"""Assert a kernel's error bound in a test: :func:`assert_within_bound`."""

from __future__ import annotations

import numpy as np

from fixedqmc.numerics.bound_run import KernelBound, bound_kernel


def assert_within_bound(spec, kernel, inputs: dict, outputs, precision, *,
                        constants: tuple = (), ranges: dict | None = None, seed: int = 0,
                        allow_unbounded: bool = False) -> KernelBound:
    """Run ``kernel`` at ``precision`` and in the bound context
    (:func:`~fixedqmc.numerics.bound_run.bound_kernel`, same arguments) and fail with an
    ``AssertionError`` naming the output variable, the worst element, its inputs, error and
    bound if a measured error exceeds its bound, or (unless ``allow_unbounded``) if a bound
    is infinite (the trial may overflow a format, divide by an interval holding 0, take the
    root of a negative operand or decide a comparison otherwise: the message names the
    variables where it became infinite and the number of ambiguous decisions).  Returns the :class:`~fixedqmc.numerics.bound_run.KernelBound`."""
    res = bound_kernel(spec, kernel, inputs, outputs, precision, constants=constants,
                       ranges=ranges, seed=seed)

    def where(i):
        return ", ".join(f"{k}={np.ravel(v)[i]!r}" for k, v in inputs.items())

    for k in res.error:
        err, b = res.error[k], res.bound[k]
        over = np.flatnonzero(err > b)
        if over.size:
            i = over[np.argmax(err[over] - b[over])]
            raise AssertionError(
                f"{spec.name}.{k} at {precision}: {over.size} element(s) exceed the bound; "
                f"worst element {i} ({where(i)}): trial {res.trial[k][i]!r}, value "
                f"{res.value[k][i]!r}, error {err[i]:.6g} > bound {b[i]:.6g}")
        inf = np.flatnonzero(~np.isfinite(b))
        if inf.size and not allow_unbounded:
            at = {v: c for v, c in res.unbounded.items() if c}
            raise AssertionError(
                f"{spec.name}.{k} at {precision}: the bound is infinite for {inf.size} "
                f"element(s), first {inf[0]} ({where(inf[0])}); it became infinite at "
                f"{at or 'no variable'} (a format may overflow, a divisor's interval holds "
                "0 or a root's operand may be negative) and after "
                f"{res.ambiguous} ambiguous decision(s) (comparisons or floors the trial "
                "may take otherwise)")
    return res
