"""Error bounds of a whole system's evaluation, beside the errors measured.

``bound(system, positions)`` asks a system built at a trial precision for rigorous bounds
on the errors of that precision (the optional protocol member ``bound_evaluation``:
:mod:`fixedqmc.qmc.system`): its kernels run at the trial precision and in the bound
context (:mod:`fixedqmc.numerics.kernel_bound`) on the same configurations, and its host
combinations (energy parts built from several outputs) are bounded by
:func:`fixedqmc.numerics.bound_run.linear_bound` (``docs/error_bounds.md``).
"""

from __future__ import annotations

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.bound_run import KernelBound


def bounds_evaluations(system) -> bool:
    """Whether ``system`` provides the optional protocol member ``bound_evaluation``."""
    return callable(getattr(system, "bound_evaluation", None))


def bound(system, positions, *, step: int = 0) -> KernelBound:
    """Bounds on the errors of ``system``'s precision at ``positions`` ((n_w, N, 3), or
    (n_blocks, n_w, N, 3) samples taken together) beside the errors measured: per quantity
    (each kernel output the energy depends on, the energy parts and ``local_energy``, in
    the system's units) the float64 value, the bound, the trial's value and its error
    (:class:`~fixedqmc.numerics.bound_run.KernelBound`; ``table()`` summarises).  A system
    that does not provide ``bound_evaluation`` is refused by name."""
    if not bounds_evaluations(system):
        raise FixedQMCError(
            f"{type(system).__name__} provides no bound_evaluation(positions, step=), so its "
            "errors cannot be bounded yet (the built-in systems can); bound its "
            "kernels one by one with fixedqmc.bound_kernel")
    pos = np.asarray(positions, np.float64)
    if pos.ndim == 4:
        pos = pos.reshape(-1, *pos.shape[2:])
    return system.bound_evaluation(pos, step=step)
