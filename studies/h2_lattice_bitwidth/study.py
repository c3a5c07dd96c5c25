"""Seed 001's Table 1: the ensemble-averaged local energy of an H2 lattice vs word width.

A 4 x 4 x 4 lattice of H2 molecules (64 H2, 128 electrons, STO-6G, RHF orbitals from PySCF)
is sampled by float64 VMC; on the *same* samples the local energy is evaluated again with
every kernel in fixed point at one common word width W (each variable's integer bits from a
range profile, as the seed did), W = 30..40, and with every kernel in float32.  The table has
the seed's layout: rows N_w (walkers), columns W and double; the narrowest W within
5e-4 Ha of double at this and every wider width; then the same per kernel (one kernel at
fixed:W, the others float64) to show which kernel sets the width.  Uses only the public
API (:func:`fixedqmc.sweep.sweep`).

    python studies/h2_lattice_bitwidth/study.py              # 64 H2, N_w = 128 .. 2048
    python studies/h2_lattice_bitwidth/study.py --reduced    # 8 H2, N_w = 64, 128 (minutes)
    python studies/h2_lattice_bitwidth/study.py --walkers 128 --widths 30:40:2 \
        --kernels all,exp,orbitals,determinant --output results/h2x4_w128   # a 64-H2 slice

Writes ``results/<case>/...`` (sweep folders) and ``results/table1.csv``,
``results/per_kernel.csv``, ``results/table1.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from fixedqmc.sweep import sweep

HERE = Path(__file__).resolve().parent
TOLERANCE = 5e-4  # hartree (seed 001: "an acceptable standard error")
KERNELS = "all,distance,exp,contraction,orbitals,derivatives,determinant,coulomb,energy"
#: Equilibration blocks (x 5 sweeps) before the samples: 3 blocks left 64 H2 about 14 Ha
#: above its RHF energy, far from |psi|^2; 20 blocks (100 sweeps) reach it.
EQUIL_BLOCKS = 20


def case_input(lattice: int, walkers: int, blocks: int, steps: int, cache: Path) -> dict:
    return {"system": {"kind": "molecule", "lattice": lattice},
            "trial": {"scf_cache": str(cache)},  # one RHF for every walker count
            "method": {"kind": "vmc", "walkers": walkers, "blocks": blocks,
                       "steps_per_block": steps, "equil_blocks": EQUIL_BLOCKS,
                       "step_size": 0.6},
            "seed": 1}


def run(lattice: int, walker_counts, widths: str, kernels: str, blocks: int, steps: int,
        workers: int, out: Path, mode: str) -> pd.DataFrame:
    rows = []
    for nw in walker_counts:
        folder = out / f"h2x{lattice}" / f"walkers{nw}"
        res = sweep(overrides={**case_input(lattice, nw, blocks, steps, out / "scf"),
                               "output": str(folder)},
                    output=folder / "sweep", widths=widths, kernels=kernels,
                    tolerance=TOLERANCE, mode=mode, workers=workers, units="hartree")
        t = res.table.assign(walkers=nw, double=res.summary["float64_energy"])
        rows.append(t.merge(res.answer[["kernels", "narrowest_width"]], on="kernels"))
    return pd.concat(rows, ignore_index=True)


def table1(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows N_w, columns W (and float32, double): the mean local energy on the same
    samples, float64 energy + paired difference, every kernel at the width."""
    t = rows[rows.kernels == "all"].copy()
    t["column"] = t.precision.str.replace("fixed:", "W=", regex=False)
    t["energy"] = t.double + t.paired_diff
    table = t.pivot_table(index="walkers", columns="column", values="energy")
    table["double"] = t.groupby("walkers").double.first()
    return table


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reduced", action="store_true", help="8 H2 and two walker counts")
    p.add_argument("--walkers", default=None,
                   help="walker counts, comma-separated (default 128,256,512,1024,2048; "
                        "reduced 64,128)")
    p.add_argument("--widths", default=None, help="word widths lo:hi[:step] (default 30:40; "
                                                  "reduced 30:40:2)")
    p.add_argument("--kernels", default=None,
                   help=f"kernel sets, comma-separated (default {KERNELS}; reduced "
                        "all,exp,orbitals,determinant)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--output", default=None,
                   help="results folder (default results/, results/reduced/ with --reduced)")
    args = p.parse_args(argv)
    if args.reduced:
        lattice, walkers, widths, kernels = 2, "64,128", "30:40:2", "all,exp,orbitals,determinant"
    else:
        lattice, walkers, widths, kernels = 4, "128,256,512,1024,2048", "30:40", KERNELS
    try:
        walker_counts = tuple(int(w) for w in (args.walkers or walkers).split(","))
    except ValueError:
        p.error(f"--walkers takes comma-separated integers, got {args.walkers!r}")
    out = Path(args.output) if args.output else HERE / "results" / (
        "reduced" if args.reduced else "")
    rows = run(lattice, walker_counts, args.widths or widths, args.kernels or kernels, 4, 5,
               args.workers, out, "paired")
    out.mkdir(parents=True, exist_ok=True)
    rows.to_csv(out / "per_kernel.csv", index=False)
    t1 = table1(rows)
    t1.to_csv(out / "table1.csv")
    narrow = rows.groupby(["kernels", "walkers"]).narrowest_width.first().unstack("walkers")
    with pd.option_context("display.width", 250, "display.max_columns", None,
                           "display.float_format", "{:.6f}".format):
        text = (f"Ensemble-averaged local energy (Ha) on the same samples\n{t1}\n\n"
                f"narrowest W with |dE| + 2 sigma <= {TOLERANCE} Ha at it and every wider "
                f"width (paired estimate):\n{narrow}\n")
    (out / "table1.md").write_text("```\n" + text + "```\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
