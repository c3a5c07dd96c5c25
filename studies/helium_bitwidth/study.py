"""HAQMC-style accuracy study: energy of He_N clusters vs fixed-point word width, per kernel.

He_N with SAPT2 and the two-region tables of HAQMC (seed 002), every kernel at fixed:W in
turn (the others float64) and all of them together, W from 16 to 48 bits; the narrowest
width whose energy stays within the tolerance, with its spread over seeds.  Uses only the
public API (fixedqmc.sweep.sweep).

    python studies/helium_bitwidth/study.py            # full study (about 10 min, 2 cores)
    python studies/helium_bitwidth/study.py --reduced  # make run: He3, a few widths (<3 min)
    python studies/helium_bitwidth/study.py --resources  # seed 002's Table 1 (seconds)

Writes results/<case>/... (sweep tables, figures) and results/answer.csv.  ``--resources``
instead prices the seed's pipeline (:func:`seed_resources`): ``results/resources.csv``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc.qmc.counts import operations_and_arrays, priced
from fixedqmc.run import build_system, load_config
from fixedqmc.sweep import sweep

HERE = Path(__file__).resolve().parent
TOLERANCE = 0.01  # K: 10 mK on the total energy
CASES = {
    # small N: He3 from a jittered lattice start
    "He3": {"system": {"n_atoms": 3}, "tables": {"r_max": 60.0},
            "method": {"walkers": 50, "blocks": 30, "equil_blocks": 10, "steps_per_block": 20,
                       "step_size": 2.0}},
    # the seed's 64-atom 4x4x4 start at 8 bohr (4.2334 A)
    "He64": {"system": {"n_atoms": 64, "spacing": 4.2334}, "tables": {"r_max": 60.0},
             "method": {"walkers": 16, "blocks": 12, "equil_blocks": 8, "steps_per_block": 10,
                        "step_size": 0.6}},
}
KERNELS = "distance,potential,kinetic,wavefunction,all"
#: seed 002's device (Virtex-4 LX160: 96 DSP48 slices, 288 18-Kb block RAMs) and its
#: Table 1: the share of each used by its pipelines, kernel 1 (the potential with the
#: squared distances), kernels 1 and 2 (and the wave function), 1, 2 and 3 (and part of the
#: kinetic energy)
SEED_MODEL = "fpga-virtex4"
SEED_DEVICE = {"dsp48": 96, "bram18": 288}
SEED_TABLE1 = {"kernel 1": (0.26, 0.31), "kernels 1, 2": (0.52, 0.51),
               "kernels 1, 2, 3": (0.78, 0.70)}
#: our kernels in each of the seed's columns
SEED_KERNELS = {"kernel 1": ("distance", "potential"),
                "kernels 1, 2": ("distance", "potential", "wavefunction"),
                "kernels 1, 2, 3": ("distance", "potential", "wavefunction", "kinetic")}


def run_case(name: str, widths: str, kernels: str, mode: str, seeds, workers: int,
             float32: bool, out: Path) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        res = sweep(overrides={**CASES[name], "seed": seed, "output": str(out / name)},
                    output=out / name / f"seed{seed}", widths=widths, kernels=kernels,
                    tolerance=TOLERANCE, mode=mode, workers=workers, float32=float32)
        ans = res.answer.assign(case=name, seed=seed,
                                float64_energy_K=res.summary["float64_energy"],
                                float64_error_K=res.summary["float64_error"])
        rows.append(ans)
    return pd.concat(rows, ignore_index=True)


def _cell(answers: pd.DataFrame, estimate: str) -> tuple[str, str]:
    """One estimate's widths over the seeds ("20, 24") and the reasons of those without."""
    col = f"narrowest_width_{estimate}" if f"narrowest_width_{estimate}" in answers \
        else "narrowest_width"
    widths, reasons = [], {}
    for _, a in answers.sort_values("seed").iterrows():
        w = a[col]
        if pd.isna(w):
            widths.append("none")
            reasons.setdefault(a[f"reason_{estimate}"], []).append(str(a.seed))
        else:
            widths.append(str(int(w)))
    why = [f"seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)}: {reason}"
           for reason, seeds in reasons.items()]
    return ", ".join(widths), " | ".join(why)


def answer_table(answer: pd.DataFrame) -> pd.DataFrame:
    """Per case and kernel set: the narrowest width of each estimate the sweeps ran
    (paired, full), one entry per seed, each beside the reasons of the seeds without
    one, and the width the rigorous error bounds predict (every sample's bound on the
    local energy within the tolerance; "none": no width of the sweep)."""
    rows = []
    estimates = [m for m in ("paired", "full") if f"reason_{m}" in answer]
    for (case, kernels), grp in answer.groupby(["case", "kernels"], sort=False):
        row = {"case": case, "kernels": kernels}
        for m in estimates:
            row[f"{m} W (per seed)"], row[f"why no {m} W"] = _cell(grp, m)
        if "predicted_width" in grp:
            row["predicted W (bounds)"] = ", ".join(
                "none" if pd.isna(w) else str(int(w))
                for w in grp.sort_values("seed").predicted_width)
        rows.append(row)
    return pd.DataFrame(rows)


def seed_resources(case: str = "He64", widths=(32, 36)) -> pd.DataFrame:
    """Seed 002's Table 1 beside our cost model: its pipeline takes one atom pair per clock
    cycle (Eq. 21: N(N-1)/2 cycles per configuration), so each operator counted in one
    evaluation of ``case`` (at its initial positions, 4 walkers) is shared over a walker's
    pairs; the data path at ``fixed:W`` (formats from the declared ranges: the integer
    bits do not change the blocks of a W-bit product), DSP48 slices and 18-Kb block RAMs
    of :data:`SEED_MODEL` per column of the seed's table, beside the seed's share of its
    device.  The operations are counted once (the profiling run is float64 at every
    width); each width only brings its formats."""
    system = build_system(load_config(overrides={**CASES[case], "precision": "float64"}))
    n = system.n_particles
    ops, arrays = operations_and_arrays(system, system.initial_positions(
        4, np.random.default_rng(1)))
    ops = ops[ops["stage"] == "evaluation"]
    rows = []
    for w in widths:
        formats = build_system(load_config(overrides={**CASES[case],
                                                      "precision": f"fixed:{w}"})).formats()
        for column, kernels in SEED_KERNELS.items():
            part = {k: f for k, f in formats.items() if k.split(".")[0] in kernels}
            r = priced(ops, arrays, part, SEED_MODEL, cycles=n * (n - 1) // 2)
            dsp, bram = SEED_TABLE1[column]
            rows.append({"precision": f"fixed:{w}", "kernels": column,
                         "dsp48": r["dsp"].sum(),
                         "dsp48 (seed)": round(dsp * SEED_DEVICE["dsp48"]),
                         "bram18": r["memory"].sum(),
                         "bram18 (seed)": round(bram * SEED_DEVICE["bram18"]),
                         "products per pair": int(r.loc[r.op == "mul", "operators"].sum()),
                         "luts": r["luts"].sum()})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reduced", action="store_true", help="the quick version run by make run")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--output", default=str(HERE / "results"))
    p.add_argument("--resources", action="store_true",
                   help="only price seed 002's pipeline beside its Table 1 (He64, 32 and 36 "
                        "bits)")
    args = p.parse_args(argv)
    out = Path(args.output)
    t0 = time.perf_counter()
    if args.resources:
        out.mkdir(parents=True, exist_ok=True)
        table = seed_resources()
        table.to_csv(out / "resources.csv", index=False)
        print(f"Seed 002's Table 1 (Virtex-4 LX160) beside {SEED_MODEL}, one atom pair per "
              f"cycle:\n{table.to_string(index=False)}\nsaved {out}/resources.csv")
        return 0
    if args.reduced:
        answer = run_case("He3", "16:40:4", "potential,kinetic,all", "paired", [1],
                          args.workers, False, out / "reduced")
    else:
        answer = pd.concat([
            run_case("He3", "16:48:4", KERNELS, "both", [1, 2], args.workers, True, out),
            run_case("He64", "16:48:4", KERNELS, "both", [1, 2], args.workers, True, out),
        ], ignore_index=True)
    table = answer_table(answer)
    name = "reduced_answer" if args.reduced else "answer"
    answer.to_csv(out / f"{name}.csv", index=False)
    table.to_csv(out / f"{name}_table.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 400):
        print(f"narrowest word width with |dE| + 2 sigma <= {TOLERANCE} K at it and every "
              f"wider width ({'paired estimate' if args.reduced else 'paired and full estimates'}"
              "; one entry per seed):")
        print(table.to_string(index=False))
    print(f"tables in {out}/{name}.csv and {name}_table.csv; wall time "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
