"""Seed 001's Table 1: the ensemble-averaged local energy of an H2 lattice vs word width.

A 4 x 4 x 4 lattice of H2 molecules (64 H2, 128 electrons, STO-6G, RHF orbitals from PySCF)
is sampled by float64 VMC.  As in the seed, an ensemble of N_w walkers is evaluated again on
the *same* configurations (two per walker, 5 sweeps apart: a sweep's samples need two
blocks; the paired error is the spread over the independent walkers) with the
seed's FPGA data path, the kernels that build the Slater matrices and their derivatives
(``distance+exp+contraction+orbitals+derivatives``, :data:`DATA_PATH`), in fixed point at
one common word width W (each variable's integer bits from the range profile of the largest
ensemble, one set of formats for the table, as the seed did), the determinants, Coulomb sums and energy assembly staying float64 as on the seed's
host.  Three parts, each using only the public API (:func:`fixedqmc.sweep.sweep`):

``table1``
    rows N_w = 128 .. 2048, columns W = 30, 32, .. 40, float32 and double: the mean local
    energy (float64 energy + paired difference), and the narrowest W within 5e-4 Ha;
``per_kernel``
    an ensemble of 256 walkers: each kernel of the data path alone at fixed:W, W = 34 ..
    48 (the others float64; run-time formats, one compilation): which kernel sets the
    width?  (``--kernels`` takes any sets, e.g. ``all,determinant``.)
``full``
    VMC of 128 walkers sampled at the data path's narrowest width and 2 bits below it: energy against the float64 run and the acceptance rates (the seed's remark on
    sampling at narrow widths).
``table2`` (not part of ``all``; ``--part table2``, after ``table1``)
    seed 001's Table 2 beside our cost model: the data path at 38 and 40 bits (the formats
    of ``table1_points.csv``) and the tuned plan (``tune_plan.csv``, if the tune part ran)
    as the seed's streaming pipeline, one active (electron, AO) pair per clock cycle, each
    counted operator shared over a walker's pairs (:data:`SEED_MODEL`); all of it (values,
    gradients, Laplacians) and the seed's part (values and Laplacians:
    :func:`value_and_laplacian`): M20K blocks (the seed's limit) first, then DSP blocks
    and 18 x 18 multipliers.
``tune`` (not part of ``all``; ``--part tune``)
    must every variable of the data path have the common width?  :func:`fixedqmc.sweep.tune`
    on the per-kernel part's input (256 walkers; reduced 64): a width per variable, the
    cheapest by a cost model (``--model``, default ``fpga-intel27x27``, the nearest to the
    seed's Stratix V DSP blocks; ``--objective memory`` ranks memory, the seed's limit,
    first), its cost beside the common width's, and the plan as a precision spec.

    python studies/h2_lattice_bitwidth/study.py              # all three parts (about 1 h)
    python studies/h2_lattice_bitwidth/study.py --part table1 --walkers 128,256
    python studies/h2_lattice_bitwidth/study.py --reduced    # 8 H2, 64 and 128 walkers
    python studies/h2_lattice_bitwidth/study.py --reduced --part tune   # about 5 min
    python studies/h2_lattice_bitwidth/study.py --part table2   # about 6 min

Writes the sweep folders and ``table1.csv``, ``table1.md``, ``table1.png``,
``per_kernel.csv``, ``full.csv`` (and ``tune.md``, ``tune_plan.csv``, ``table2.csv``,
``table2.md``) under ``results/`` (``results/reduced/`` with ``--reduced``).  Finished
points are kept: an interrupted study resumes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc import QFormat
from fixedqmc.qmc.counts import operations_and_arrays, priced
from fixedqmc.run import build_system, load_config
from fixedqmc.sweep import plot_sweep, sweep, tune

HERE = Path(__file__).resolve().parent
TOLERANCE = 5e-4  # hartree (seed 001: "an acceptable standard error")
DATA_PATH = "distance+exp+contraction+orbitals+derivatives"
#: the per-kernel part: each kernel of the data path alone, at the widths near the answer
PER_KERNEL = "distance,exp,contraction,orbitals,derivatives"
PER_KERNEL_WIDTHS = "34:48:2"
#: Equilibration sweeps before the samples: 15 left 64 H2 about 14 Ha above its RHF
#: energy, far from |psi|^2; 100 reach it.
EQUIL_SWEEPS = 100
PARTS = ("table1", "per_kernel", "full")
#: production blocks of the tune part's confirming full runs (its paired samples: 2)
CONFIRM_BLOCKS = 20
#: the cost model nearest the seed's MAIA board (Intel Stratix V: a DSP block is two
#: 18 x 18 multipliers or one 27 x 27; M20K memory)
SEED_MODEL = "fpga-intel18x19"
#: seed 001's Table 2 (MAIA, Stratix V): 32.32 % of 3,926 18 x 18 multipliers, 36.37 % of
#: 1,963 DSP blocks, 98.64 % of 2,567 M20K blocks
SEED_TABLE2 = {"multipliers_18x18": 1269, "dsp_blocks": 714, "m20k": 2532}
#: variables only the gradient needs: the seed's device computes the Slater matrix and its
#: Laplacian, not the gradient
GRADIENT_ONLY = ("contraction.pd", "contraction.gterm", "contraction.grad",
                 "contraction.dang", "derivatives.grad")


def case_input(lattice: int, walkers: int, blocks: int, steps: int, cache: Path,
               specialise: bool) -> dict:
    """The VMC input of one case: ``blocks`` x ``steps`` production sweeps after
    :data:`EQUIL_SWEEPS`, the walkers kept at the end of each block as samples."""
    return {"system": {"kind": "molecule", "lattice": lattice},
            "trial": {"scf_cache": str(cache)},  # one RHF for every case
            "method": {"kind": "vmc", "walkers": walkers, "blocks": blocks,
                       "steps_per_block": steps, "equil_blocks": EQUIL_SWEEPS // steps,
                       "step_size": 0.6},
            "specialise": specialise, "seed": 1}


def run_sweep(lattice, walkers, widths, kernels, out: Path, *, blocks=2, steps=5,
              specialise=False, mode="paired", workers=2, profile=None) -> pd.DataFrame:
    """One sweep (or its resumption) in ``out`` (formats sized from ``profile``, a finished
    sweep's folder, if given); its table with walkers, double and the narrowest width of
    each kernel set."""
    res = sweep(overrides={**case_input(lattice, walkers, blocks, steps,
                                        out.parent / "scf", specialise),
                           "output": str(out)},
                output=out / "sweep", widths=widths, kernels=kernels, tolerance=TOLERANCE,
                mode=mode, workers=workers, units="hartree", float32=mode != "full",
                profile=profile, bounds=False)  # (a bound run: 2.4 evaluations at 8 H2)
    t = res.table.assign(walkers=walkers, double=res.summary["float64_energy"],
                         double_error=res.summary["float64_error"],
                         double_acceptance=res.summary["float64_acceptance"])
    return t.merge(res.answer[["kernels", "narrowest_width"]], on="kernels")


def table1(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows N_w, columns W, float32 and double: the mean local energy on the same samples
    (float64 energy + paired difference), the data path at the column's precision."""
    t = rows.copy()
    t["column"] = t.precision.str.extract(r"(fixed:\d+|float32)$")[0].str.replace(
        "fixed:", "W=", regex=False)
    t["energy"] = t.double + t.paired_diff
    table = t.pivot_table(index="walkers", columns="column", values="energy")
    table = table[sorted(table.columns, key=lambda c: (c == "float32", len(c), c))]
    table["double"] = t.groupby("walkers").double.first()
    table["narrowest W"] = t.groupby("walkers").narrowest_width.first()
    table["seed's rule"] = t.groupby("walkers")[["width", "paired_diff"]].apply(
        seed_rule).astype("Int64")
    return table


def seed_rule(rows: pd.DataFrame) -> float:
    """The seed's criterion, ``|dE| < 5e-4 Ha`` without the error bar, at the width and
    every wider one: the narrowest such width (NaN if none)."""
    fixed = rows.dropna(subset=["width"]).sort_values("width", ascending=False)
    best = float("nan")
    for w, d in zip(fixed.width, fixed.paired_diff):
        if not abs(d) < TOLERANCE:
            break
        best = int(w)
    return best


def write(out: Path, name: str, frame: pd.DataFrame, title: str, digits: int = 6) -> None:
    frame.to_csv(out / f"{name}.csv")
    with pd.option_context("display.width", 250, "display.max_columns", None,
                           "display.float_format", f"{{:.{digits}f}}".format):
        text = f"{title}\n{frame}\n"
    (out / f"{name}.md").write_text("```\n" + text + "```\n")
    print(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reduced", action="store_true",
                   help="8 H2, walkers 64,128, per kernel and full runs at 64")
    p.add_argument("--part", choices=(*PARTS, "all", "tune", "table2"), default="all",
                   help="one part, or all three of the seed's (tune, table2: only when named)")
    p.add_argument("--model", default="fpga-intel27x27", help="tune: the cost model")
    p.add_argument("--objective", default=None, help="tune: the resource minimised first")
    p.add_argument("--walkers", default=None,
                   help="Table 1 walker counts, comma-separated (default 128,256,512,1024,"
                        "2048; reduced 64,128)")
    p.add_argument("--widths", default="30:40:2", help="word widths lo:hi[:step] (default "
                                                       "30:40:2, the seed's columns)")
    p.add_argument("--kernels", default=PER_KERNEL,
                   help=f"kernel sets of the per-kernel part (default {PER_KERNEL})")
    p.add_argument("--kernel-widths", default=PER_KERNEL_WIDTHS,
                   help=f"widths of the per-kernel part (default {PER_KERNEL_WIDTHS})")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--output", default=None,
                   help="results folder (default results/, results/reduced/ with --reduced)")
    args = p.parse_args(argv)
    lattice, walkers, per_w, full_w = ((2, "64,128", 64, 64) if args.reduced
                                       else (4, "128,256,512,1024,2048", 256, 128))
    try:
        walker_counts = tuple(int(w) for w in (args.walkers or walkers).split(","))
    except ValueError:
        p.error(f"--walkers takes comma-separated integers, got {args.walkers!r}")
    out = Path(args.output) if args.output else HERE / "results" / (
        "reduced" if args.reduced else "")
    out.mkdir(parents=True, exist_ok=True)
    parts = PARTS if args.part == "all" else (args.part,)
    w = args.workers
    narrowest = None
    # the largest ensemble's profile sizes every Table 1 and full-run format (one set of
    # formats, as the seed; formats compiled in, so one compilation per width)
    sizing = out / "table1" / f"walkers{max(walker_counts)}" / "sweep"
    if "table1" in parts:
        rows = pd.concat([run_sweep(lattice, nw, args.widths, DATA_PATH,
                                    out / "table1" / f"walkers{nw}", specialise=True,
                                    workers=w, profile=None if nw == max(walker_counts)
                                    else sizing)
                          for nw in sorted(walker_counts, reverse=True)], ignore_index=True)
        rows.to_csv(out / "table1_points.csv", index=False)
        by_nw = rows.assign(kernels=[f"N_w = {n}" for n in rows.walkers])
        chosen = [{"kernels": k, "narrowest_width": None if pd.isna(w) else int(w)}
                  for k, w in by_nw.groupby("kernels", sort=False).narrowest_width.first()
                  .items()]
        plot_sweep(by_nw, TOLERANCE, "paired", out / "table1.png", unit="hartree",
                   answers=chosen)
        write(out, "table1", table1(rows),
              f"Ensemble-averaged local energy (Ha), an ensemble of N_w walkers, the data "
              f"path ({DATA_PATH}) at W bits or float32; narrowest W: |dE| + 2 sigma <= "
              f"{TOLERANCE} Ha at it and every wider width (the seed's rule: |dE| < "
              f"{TOLERANCE} Ha)")
        narrowest = rows.narrowest_width.dropna().max()
    if "per_kernel" in parts:
        rows = run_sweep(lattice, per_w, args.kernel_widths, args.kernels,
                         out / "per_kernel" / f"walkers{per_w}", workers=w)
        rows.to_csv(out / "per_kernel.csv", index=False)
        cols = ["kernels", "precision", "paired_diff", "paired_error", "overflow_events"]
        print(rows[cols].to_string())
        print(rows.groupby("kernels", sort=False).narrowest_width.first().to_string())
    if "full" in parts:
        if narrowest is None or pd.isna(narrowest):
            done = out / "table1_points.csv"
            if not done.exists():
                p.error("--part full needs the Table 1 part's narrowest width: run it first")
            narrowest = pd.read_csv(done).narrowest_width.dropna().max()
        if pd.isna(narrowest):
            p.error("no width of Table 1 passed: nothing to sample at")
        nw = int(narrowest)
        rows = run_sweep(lattice, full_w, f"{nw - 2},{nw}", DATA_PATH,
                         out / "full" / f"walkers{full_w}", blocks=4, steps=5,
                         specialise=True, mode="full", workers=w, profile=sizing)
        cols = ["precision", "full_energy", "full_error", "full_diff", "full_diff_error",
                "full_acceptance", "double", "double_error", "double_acceptance"]
        rows[cols].to_csv(out / "full.csv", index=False)
        print(rows[cols].to_string())
    if "tune" in parts:
        run_tune(lattice, per_w, out, args.model, args.objective, w)
    if "table2" in parts:
        write(out, "table2", seed_table2(lattice, out).set_index(["plan", "data path"]),
              f"Seed 001's Table 2 beside the cost model {SEED_MODEL}: the data path "
              f"({DATA_PATH}) streaming one active (electron, AO) pair per cycle", digits=1)
    return 0


def value_and_laplacian(ops: pd.DataFrame) -> pd.DataFrame:
    """The operations of the seed's device, the data path's values and Laplacians: the rows
    of :data:`GRADIENT_ONLY` dropped; the derivatives kernel's conversions and products,
    which serve three gradient components and the Laplacian alike, at the Laplacian's share
    of its sums."""
    name = ops["kernel"] + "." + ops["variable"]
    kept = ops[~name.isin(GRADIENT_ONLY)].copy()
    d = ops[ops["kernel"] == "derivatives"]
    lap = d.loc[d["variable"] == "lap", "count"].sum()
    share = lap / (lap + d.loc[d["variable"] == "grad", "count"].sum())
    shared = (kept["kernel"] == "derivatives") & kept["variable"].isin(["term", "dao"])
    kept.loc[shared, "count"] *= share
    return kept


def seed_table2(lattice: int, out: Path, model: str = SEED_MODEL) -> pd.DataFrame:
    """The ``table2`` part (module docstring): one row per plan and data path, and the
    seed's own row.  The operations are counted once, on 8 walkers with their electrons
    around the nuclei (the system's initial positions), and priced at each plan's formats."""
    points = out / "table1_points.csv"
    if not points.exists():
        raise SystemExit(f"--part table2 prices the formats of {points}: run --part table1 "
                         "first")
    rows = pd.read_csv(points)
    rows = rows[rows.kernels == DATA_PATH]
    plans = {f"W = {w}": json.loads(rows[rows.width == w].formats.iloc[0])
             for w in (38, 40) if (rows.width == w).any()}
    if (out / "tune_plan.csv").exists():
        plan = pd.read_csv(out / "tune_plan.csv")
        plans["tuned plan"] = dict(zip(plan.variable, plan.format))
        # its common width: every variable with the same integer bits, W bits in all
        plans[f"common width {plan.common_width.iloc[0]}"] = {
            v: str(QFormat(q.signed, q.int_bits, int(w) - q.int_bits - q.signed))
            for v, w, q in zip(plan.variable, plan.common_width, map(QFormat.parse,
                                                                    plan.format))}
    system = build_system(load_config(overrides={"system": {"kind": "molecule",
                                                            "lattice": lattice},
                                                 "trial": {"scf_cache": str(out / "scf")}}))
    positions = system.initial_positions(8, np.random.default_rng(1))
    ops, arrays = operations_and_arrays(system, positions)
    ops = ops[ops["stage"] == "evaluation"]
    # the seed's clock: one active (electron, AO) pair, whose AO value the orbitals kernel
    # converts once
    pairs = int(round(ops.loc[(ops.kernel == "orbitals") & (ops.variable == "ao"),
                              "count"].sum()))
    table = []
    for label, formats in plans.items():
        for part, part_ops in (("values, gradients, Laplacians", ops),
                               ("values, Laplacians (the seed's)", value_and_laplacian(ops))):
            r = priced(part_ops, arrays, formats, model, cycles=pairs)
            arr = r["op"] == "array"
            table.append({"plan": label, "data path": part, "m20k": r["memory"].sum(),
                          "m20k exp tables": r.loc[r.op == "exp", "memory"].sum(),
                          "m20k MO coefficients": r.loc[arr, "memory"].sum(),
                          "dsp_blocks": r["dsp"].sum(),
                          "multipliers_18x18": 2 * r["dsp"].sum(),  # two per block
                          "products": int(r.loc[r.op == "mul", "operators"].sum()),
                          "luts": r["luts"].sum(), "pairs per walker": pairs})
    table.append({"plan": "seed 001 Table 2", "data path": "as synthesized (Stratix V)",
                  **SEED_TABLE2})
    return pd.DataFrame(table)


def run_tune(lattice, walkers, out: Path, model, objective, workers) -> None:
    """The tune part (module docstring): ``tune.md`` and ``tune_plan.csv`` in ``out``."""
    res = tune(overrides={**case_input(lattice, walkers, 2, 5, out / "scf", False),
                          "output": str(out)},
               tolerance=TOLERANCE, kernels=DATA_PATH, model=model, objective=objective,
               output=out / "tune" / f"walkers{walkers}", workers=workers,
               confirm_blocks=CONFIRM_BLOCKS)
    s = res.summary
    res.plan.to_csv(out / "tune_plan.csv", index=False)
    costs = pd.DataFrame({"tuned": s["cost"], "common width": s["common_cost"]})
    costs["saved"] = [f"{100 * s['saving'].get(r, 0):.1f} %" for r in costs.index]
    lines = [f"Tuned data path ({DATA_PATH}), {walkers} walkers, model {model}, objective "
             f"{s['objective']}, tolerance {TOLERANCE} Ha",
             f"common width {s['common_width']}: paired {s['common_paired_diff']:.3g} +/- "
             f"{s['common_paired_error']:.2g} Ha; tuned: {s['paired_diff']:.3g} +/- "
             f"{s['paired_error']:.2g} Ha",
             f"reweighted (sampling at the plan, judged on the same samples): tuned "
             f"{s['reweighted_diff']:.3g} +/- {s['reweighted_error']:.2g} Ha (effective "
             f"sample fraction {s['reweighted_ess']:.4f}); common width "
             f"{s['common_reweighted_diff']:.3g} +/- {s['common_reweighted_error']:.2g} Ha",
             *[f"full run at the {k} plan ({c['blocks']} blocks x 5 sweeps): "
               f"{c['full_diff']:.3g} +/- {c['full_diff_error']:.2g} Ha ({c['verdict']}; "
               f"{c['full_parted']} of {c['walkers']} walkers parted from float64's "
               f"trajectories; its error {c['error_ratio']:.2g}x the float64 run's)"
               for k, c in s["confirmation"].items()],
             f"{s['plans_judged']} plans judged in {s['wall_time_s']:.0f} s; gap bound "
             f"{100 * s['gap_bound']:.1f} %", "", costs.to_string(), "",
             res.plan.to_string(index=False), "", "spec:", s["spec"]]
    text = "\n".join(lines)
    (out / "tune.md").write_text("```\n" + text + "\n```\n")
    print(text)


if __name__ == "__main__":
    raise SystemExit(main())
