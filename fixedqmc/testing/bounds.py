"""Assert error bounds in a test: :func:`assert_within_bound` (a kernel) and
:func:`assert_system_within_bound` (a system's evaluation)."""

from __future__ import annotations

import numpy as np

from fixedqmc.numerics.bound_run import KernelBound, bound_kernel
from fixedqmc.qmc.bounds import bound


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

    def where(k, i):
        return f"element {i} (" + ", ".join(f"{n}={np.ravel(v)[i]!r}"
                                            for n, v in inputs.items()) + ")"

    _check(res, f"{spec.name}.", precision, where, allow_unbounded)
    return res


def assert_system_within_bound(system, positions, *, step: int = 0,
                               allow_unbounded: bool = False) -> KernelBound:
    """:func:`fixedqmc.bound` of ``system`` (built at the trial precision) at ``positions``
    (n_w, N, 3), failing as :func:`assert_within_bound` does, naming the quantity (a kernel
    output, an energy part or ``local_energy``), the worst walker and its positions.
    Returns the :class:`~fixedqmc.numerics.bound_run.KernelBound`."""
    res = bound(system, positions, step=step)
    pos = np.asarray(positions, np.float64).reshape(-1, *np.shape(positions)[-2:])

    def where(k, i):
        w = np.unravel_index(i, np.shape(res.error[k]))[0]
        return f"walker {w} at {pos[w].tolist()!r}"

    _check(res, "", str(getattr(system, "policy", "its precision")), where, allow_unbounded)
    return res


def _check(res: KernelBound, prefix: str, precision, where, allow_unbounded: bool) -> None:
    """Fail on the first quantity of ``res`` whose error exceeds its bound (the worst
    element, ``where(quantity, flat index)``) or, unless allowed, whose bound is infinite."""
    for k in res.error:
        err, b = np.ravel(res.error[k]), np.ravel(res.bound[k])
        over = np.flatnonzero(err > b)
        if over.size:
            i = over[np.argmax(err[over] - b[over])]
            raise AssertionError(
                f"{prefix}{k} at {precision}: {over.size} element(s) exceed the bound; "
                f"worst {where(k, i)}: trial {np.ravel(res.trial[k])[i]!r}, value "
                f"{np.ravel(res.value[k])[i]!r}, error {err[i]:.6g} > bound {b[i]:.6g}")
        inf = np.flatnonzero(~np.isfinite(b))
        if inf.size and not allow_unbounded:
            at = {v: c for v, c in res.unbounded.items() if c}
            raise AssertionError(
                f"{prefix}{k} at {precision}: the bound is infinite for {inf.size} "
                f"element(s), first {where(k, inf[0])}; it became infinite at "
                f"{at or 'no variable'} (a format may overflow, a divisor's interval holds "
                "0 or a root's operand may be negative) and after "
                f"{res.ambiguous} ambiguous decision(s) (comparisons or floors the trial "
                "may take otherwise)")
