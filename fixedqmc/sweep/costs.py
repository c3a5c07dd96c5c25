"""What each sweep point costs in hardware (``docs/cost_models.md``).

The operations of one local-energy evaluation are counted once per sweep, on the float64
system and walkers of the reference's last block, with the constant arrays the data path
stores (:func:`sweep_counts`); each point is priced at its own formats (the ``formats`` of its row: the variables of its kernel set) by
a cost model (:func:`point_costs`), the answer gets the cost of its chosen width, and
``pareto.png`` shows cost against what the answer rule compares with the tolerance.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fixedqmc.cost import RESOURCES, totals
from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.counts import counts_operations, operations_and_arrays, priced

#: walkers of the reference's last block whose operations are counted (counts are means
#: per walker; a few walkers give them to within the spread of the loops' lengths)
COUNT_WALKERS = 8
#: the resource a figure shows, first present first
PRIMARY = ("dsp", "seconds", "luts", "memory", "flops", "bytes", "operators")


def sweep_counts(system, samples: np.ndarray) -> tuple | None:
    """``(operations, arrays)``: the operations of one local-energy evaluation per walker
    (the ``evaluation`` stage of :func:`~fixedqmc.qmc.counts.operations_and_arrays`) on the
    last block of ``samples`` (n_blocks, n_walkers, N, 3), at most :data:`COUNT_WALKERS`
    walkers, and the arrays the system stores; None for a system that does not count its
    operations (the optional protocol member ``operation_counts``)."""
    if not counts_operations(system):
        return None
    counts, arrays = operations_and_arrays(system, samples[-1][:COUNT_WALKERS])
    counts = counts[counts["stage"] == "evaluation"].drop(columns="stage")
    return counts.reset_index(drop=True), arrays


def point_costs(table: pd.DataFrame, counts: tuple, model: str) -> pd.DataFrame:
    """``cost_<resource>`` columns (:data:`fixedqmc.cost.RESOURCES` the model reports) per
    row of a sweep ``table``: the operations and arrays (``counts``, of
    :func:`sweep_counts`) of the row's kernels at the row's formats.  A row without
    formats (its formats do not fit) gets NaN; a row the model cannot price gets NaN and
    its message in ``cost_note``."""
    ops, arrays = counts
    out = []
    for formats_json in table["formats"]:
        formats = json.loads(formats_json) if isinstance(formats_json, str) else {}
        if not formats:
            out.append({})
            continue
        try:
            row = totals(priced(ops, arrays, formats, model))
        except FixedQMCError as err:
            row = {"note": str(err)}
        out.append(row)
    frame = pd.DataFrame(out, index=table.index)
    frame = frame[[c for c in (*RESOURCES, "note") if c in frame]]
    return frame.add_prefix("cost_")


def primary_resource(table: pd.DataFrame) -> str | None:
    """The resource a figure shows: the first of :data:`PRIMARY` with a cost."""
    return next((r for r in PRIMARY if f"cost_{r}" in table
                 and table[f"cost_{r}"].notna().any()), None)


def answer_costs(table: pd.DataFrame, answers: list) -> None:
    """Each answer's ``cost_at_width``: ``{resource: cost}`` of its kernel set's point at
    the narrowest width (None without one), in place."""
    resources = [c for c in table if c.startswith("cost_") and c != "cost_note"]
    for a in answers:
        w = a.get("narrowest_width")
        rows = table[(table["kernels"] == a["kernels"]) & _at(table["width"], w)]
        a["cost_at_width"] = ({c[5:]: float(rows[c].iloc[0]) for c in resources}
                              if len(rows) else None)


def _at(widths: pd.Series, w) -> pd.Series:
    """Rows at width ``w`` (none for None; float32 and float-format rows have no width)."""
    if w is None:
        return pd.Series(False, index=widths.index)
    return (widths == w).fillna(False).astype(bool)


def plot_pareto(table: pd.DataFrame, tolerance: float, rule_value, estimate: str, path=None,
                *, unit: str = "K", model: str = "", answers: list | None = None):
    """Cost (the primary resource) against ``|diff| + 2 sigma`` of ``estimate`` for every
    point of every kernel set, the tolerance line, each set's answer circled.  Returns the
    matplotlib figure."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    resource = primary_resource(table)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    chosen = {a["kernels"]: a.get("narrowest_width") for a in answers or ()}
    if resource is not None:
        for i, (k, grp) in enumerate(table.groupby("kernels", sort=False)):
            x = grp[f"cost_{resource}"].to_numpy(float)
            y = rule_value(grp, estimate).to_numpy(float)
            ok = np.isfinite(x) & np.isfinite(y) & (y > 0)
            color = colors[i % len(colors)]
            ax.scatter(x[ok], y[ok], s=18, color=color, label=k)
            pick = ok & _at(grp["width"], chosen.get(k)).to_numpy(bool)
            ax.scatter(x[pick], y[pick], s=120, facecolors="none", edgecolors=color, lw=1.5)
        ax.set_yscale("log")
    ax.axhline(tolerance, color="green", lw=1.2, label=f"tolerance {tolerance:g} {unit}")
    ax.set_xlabel(f"{resource or 'cost'} ({model}; circled: the chosen width)")
    ax.set_ylabel(f"|E(trial) - E(float64)| + 2 sigma ({unit}, {estimate})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    if resource is None:
        ax.set_title("no point has a cost")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def check_model(model: str, counts: tuple, formats: dict) -> None:
    """Refuse a model that cannot price the float64 data path (``counts`` of
    :func:`sweep_counts`, ``formats``: the float64 system's) before the points are run."""
    try:
        priced(*counts, formats, model)
    except FixedQMCError as err:
        raise FixedQMCError(f"--cost-model {model!r}: {err}") from None
