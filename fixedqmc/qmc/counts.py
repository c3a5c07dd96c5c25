"""Operation counts of a system, measured by the emulation, and what they cost in hardware.

``count_operations(system, positions)`` asks a system for the operations of a float64
evaluation of ``positions`` and of single-particle moves from them (the optional protocol
member ``operation_counts``: :mod:`fixedqmc.qmc.system`), counted by the profiling
contexts (``docs/cost_models.md``), and returns them per walker (an evaluation) or per move.
``hardware_cost(system, positions, model)`` puts the system's own formats beside them and
prices them with a cost model of :mod:`fixedqmc.cost`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fixedqmc.cost import DEFAULT_MODEL, check_cycles, cost, with_formats
from fixedqmc.errors import FixedQMCError

#: the stages a system counts, and what a count is per
STAGES = {"evaluation": "walker", "move": "move"}
COLUMNS = ("stage", "kernel", "variable", "op", "count", "a", "b")
ARRAY_COLUMNS = ("kernel", "array", "entries", "variable")


def count_operations(system, positions, *, step: int = 0) -> pd.DataFrame:
    """The operations of ``system`` at ``positions`` (n_w, N, 3): one row per stage
    (``evaluation``: per walker, a local-energy evaluation with its gradient; ``move``: per
    single-particle move), kernel, result variable and operation, with the operands'
    variables ``a``, ``b`` (``|``-joined where several) and the mean ``count``."""
    return operations_and_arrays(system, positions, step=step)[0]


def counts_operations(system) -> bool:
    """Whether ``system`` provides the optional protocol member ``operation_counts``."""
    return callable(getattr(system, "operation_counts", None))


def operations_and_arrays(system, positions, *, step: int = 0) -> tuple:
    """``(operations, arrays)``: :func:`count_operations`' frame and the constant arrays
    the system's data path stores (tables, coefficients: ``kernel``, ``array``,
    ``entries``, ``variable``; none for a system that names none)."""
    if not counts_operations(system):
        raise FixedQMCError(f"system {type(system).__name__} does not count its operations: "
                            "it needs the optional protocol member operation_counts("
                            "positions, step=) (fixedqmc.qmc.system)")
    positions = np.asarray(positions, np.float64)
    if positions.ndim != 3 or positions.shape[0] < 1:
        raise FixedQMCError(f"positions must have shape (n_walkers >= 1, N, 3), got "
                            f"{positions.shape}")
    counted = system.operation_counts(positions, step=step)
    rows = []
    for stage in STAGES:
        if stage not in counted:
            raise FixedQMCError(f"system {type(system).__name__}: operation_counts returned "
                                f"no {stage!r} stage (it must give {', '.join(STAGES)})")
        n, kernels = counted[stage]
        for kernel, kernel_rows in kernels.items():
            for r in kernel_rows:
                rows.append({"stage": stage, "kernel": kernel, **r,
                             "count": r["count"] / n})
    arrays = pd.DataFrame(counted.get("arrays", []), columns=list(ARRAY_COLUMNS))
    return pd.DataFrame(rows, columns=list(COLUMNS)), arrays


def arrays_with_formats(arrays: pd.DataFrame, formats: dict) -> pd.DataFrame:
    """``arrays`` of the kernels ``formats`` ``{"kernel.variable": format}`` names, each
    with its variable's ``format`` (the input of :func:`fixedqmc.cost.cost`)."""
    kernels = {k.split(".")[0] for k in formats}
    part = arrays[arrays["kernel"].isin(kernels)]
    return part.assign(format=[formats[f"{k}.{v}"] for k, v in zip(part["kernel"],
                                                                     part["variable"])])


def priced(ops: pd.DataFrame, arrays: pd.DataFrame, formats: dict,
           model: str = DEFAULT_MODEL, *, cycles: int = 1) -> pd.DataFrame:
    """The cost rows (:func:`fixedqmc.cost.cost`, operators shared over ``cycles``) of the
    operations and arrays of the kernels ``formats`` ``{"kernel.variable": format}``
    names, at those formats."""
    kernels = {k.split(".")[0] for k in formats}
    return cost(with_formats(ops[ops["kernel"].isin(kernels)], formats),
                arrays_with_formats(arrays, formats), model=model, cycles=cycles)


def hardware_cost(system, positions, model: str = DEFAULT_MODEL, *, step: int = 0,
                  stage: str = "evaluation", cycles: int = 1) -> pd.DataFrame:
    """The cost rows (:func:`fixedqmc.cost.cost`) of one ``stage`` of ``system``'s
    operations (per walker or per move) and of the arrays it stores, in the system's own
    formats (``system.formats()``: its precision, width-only specs sized by its ranges);
    ``cycles`` > 1 shares each operator over that many cycles per walker or move (a
    streaming data path; FPGA models)."""
    if stage not in STAGES:
        raise FixedQMCError(f"stage {stage!r}; allowed: {', '.join(STAGES)}")
    check_cycles(model, cycles)
    counts, arrays = operations_and_arrays(system, positions, step=step)
    return priced(counts[counts["stage"] == stage], arrays, system.formats(), model,
                  cycles=cycles)
