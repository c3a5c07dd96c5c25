"""The mission at a glance (``make run``): for each of the three seed systems, at a reduced
size, and each kernel set, the narrowest fixed-point word width, whether float32 passes and
the narrowest float mantissa, judged against the system's energy tolerance.

Systems (reduced sizes; the seeds' full sizes are in the other studies):

- **He3** with the SAPT2 potential and the two-region tables of seed 002 (HAQMC). Tolerance
  10 mK on the total energy, as in ``studies/helium_bitwidth``.
- **8 H2**: seed 001's 2 x 2 x 2 lattice of H2 molecules in STO-6G, with one RHF
  determinant per spin. Tolerance 5e-4 hartree, seed 001's "acceptable standard error",
  as in ``studies/h2_lattice_bitwidth``.
- **Electron gas**: seed 000's 14 electrons at r_s = 2 in 3D, with Ewald sums and a
  plane-wave determinant. Tolerance 1e-4 hartree per electron, as in
  ``studies/heg_precision``.

Each system has one float64 VMC run (the reference samples). Every point then evaluates the
local energies of the same samples with one kernel set at a trial precision (the paired
estimate of :mod:`fixedqmc.sweep`). The trial precisions are:

- ``fixed:W``: integer bits sized from the range profile;
- ``float32``;
- ``float:m<M>``: exponent bits sized from the range profile.

A width (or mantissa) passes when ``|dE| + 2 sigma <= tolerance`` at it and at every wider
one of the sweep. ``all`` puts every kernel at the precision together.

Uses only the public API (:func:`fixedqmc.sweep.sweep`). Writes into ``results/`` (or
``--output``):

- one sweep folder per system (its table, ``answer.json`` and figure);
- ``mission.csv``: the one table printed at the end;
- ``mission.json``: the table with the tolerances, sizes, machine and wall times;
- ``mission.png``: per system, ``|dE| + 2 sigma`` against bits, with the fixed widths,
  the mantissas and float32.

    python studies/mission/study.py             # a few minutes on 2 cores (make run)
    python studies/mission/study.py --quick     # a smoke run: fewer samples and points
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from fixedqmc.run import build_system, load_config  # noqa: E402
from fixedqmc.sweep import rule_value, sweep  # noqa: E402

HERE = Path(__file__).resolve().parent

#: per system: the input (a nested dict of input keys), the tolerance and its unit
SYSTEMS = {
    "He3": {
        "config": {"seed": 1, "units": "mK",
                   "system": {"n_atoms": 3, "potential": "SAPT2"},
                   "tables": {"r_max": 60.0},
                   "method": {"kind": "vmc", "walkers": 50, "blocks": 20,
                              "equil_blocks": 10, "steps_per_block": 20, "step_size": 2.0}},
        "tolerance": 10.0, "unit": "mK"},
    "8 H2": {
        "config": {"seed": 1,
                   "system": {"kind": "molecule", "lattice": 2, "bond": 1.4, "spacing": 6.0,
                              "basis": "sto-6g"},
                   "trial": {"scf": "rhf"},
                   "method": {"kind": "vmc", "walkers": 32, "blocks": 8,
                              "equil_blocks": 3, "steps_per_block": 5}},
        "tolerance": 5e-4, "unit": "hartree"},
    "HEG 14e": {
        "config": {"seed": 1,
                   "system": {"kind": "heg", "electrons": 14, "r_s": 2.0, "dim": 3,
                              "polarisation": 0.0, "ewald_accuracy": 1e-8},
                   "method": {"kind": "vmc", "move": "single", "walkers": 32, "blocks": 8,
                              "equil_blocks": 3, "steps_per_block": 5, "step_size": 2.0}},
        "tolerance": 14 * 1e-4, "unit": "hartree"},
}
WIDTHS = "16:48:4"
MANTISSAS = "4:24:4"
#: --quick: fewer samples and points (a smoke run of the whole pipeline)
QUICK = {"walkers": 8, "blocks": 4, "equil_blocks": 2, "steps_per_block": 2}
QUICK_WIDTHS, QUICK_MANTISSAS = "24:48:12", "8:24:8"


def run_system(name: str, case: dict, out: Path, widths: str, mantissas: str,
               workers: int, quick: bool) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Sweep one system: every kernel alone and all together, at every width and mantissa
    and float32. Returns (answer rows, the sweep's table, wall time in s)."""
    config = json.loads(json.dumps(case["config"]))
    if quick:
        config["method"].update(QUICK)
    t0 = time.perf_counter()
    folder = out / _slug(name)
    res = sweep(overrides=config, widths=widths, mantissas=mantissas,
                kernels=_sets(config, folder), tolerance=case["tolerance"], units=case["unit"],
                mode="paired", output=folder, workers=workers)
    wall = time.perf_counter() - t0
    return answer_rows(name, case, res.table, res.answer), res.table.assign(system=name), wall


def answer_rows(name: str, case: dict, table: pd.DataFrame, answer: pd.DataFrame
                ) -> pd.DataFrame:
    """One row per kernel set of a sweep's ``answer``: the narrowest width and mantissa (as
    the sweep answered), whether the set's float32 point passes the tolerance
    (``|dE| + 2 sigma``, paired), and the sweep's note."""
    answer = answer.set_index("kernels")
    rows = []
    for k in answer.index:
        f32 = table[(table.kernels == k) & table.width.isna() & table.mantissa.isna()]
        passes = rule_value(f32, "paired") <= case["tolerance"]
        rows.append({"system": name, "kernels": k,
                     "narrowest_width": answer.loc[k, "narrowest_width"],
                     "float32_passes": bool(passes.iloc[0]) if len(f32) else None,
                     "narrowest_mantissa": answer.loc[k, "narrowest_mantissa"],
                     "tolerance": case["tolerance"], "unit": case["unit"],
                     "note": answer.loc[k, "note"]})
    df = pd.DataFrame(rows)
    for c in ("narrowest_width", "narrowest_mantissa"):  # bits, or <NA>: none passes
        df[c] = pd.array([None if pd.isna(v) else int(v) for v in df[c]], dtype="Int64")
    return df


def _sets(config: dict, folder: Path) -> str:
    """Every kernel of the system alone, then all together (the system built at float64 with
    its output in the sweep's folder, where the sweep finds a mean-field cache again)."""
    full = load_config(overrides={**config, "precision": "float64", "output": str(folder)})
    return ",".join([*build_system(full).kernels, "all"])


def _slug(name: str) -> str:
    return name.lower().replace(" ", "_")


def plot(tables: pd.DataFrame, systems: dict, path: Path) -> None:
    """One panel per system: |dE| + 2 sigma (in the system's unit) against bits (the fixed
    word width, or the float mantissa bits), per kernel set; fixed widths solid, mantissas
    dashed, float32 a dotted line, the tolerance in green."""
    names = list(dict.fromkeys(tables.system))
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        t = tables[tables.system == name]
        for i, (k, g) in enumerate(t.groupby("kernels", sort=False)):
            col = f"C{i % 10}"
            y = rule_value(g, "paired")
            w = g.width.notna()
            m = g.mantissa.notna()
            ax.plot(g.width[w], y[w], "o-", color=col, label=k)
            ax.plot(g.mantissa[m], y[m], "s--", color=col, alpha=0.7)
            f32 = ~(w | m)
            if f32.any():
                ax.axhline(float(y[f32].iloc[0]), color=col, ls=":", lw=1)
        ax.axhline(systems[name]["tolerance"], color="green", lw=2, label="tolerance")
        ax.set_yscale("log")
        ax.set_xlabel("fixed word width (o, solid) / float mantissa bits (s, dashed)")
        ax.set_ylabel(f"|dE| + 2 sigma ({systems[name]['unit']})")
        ax.set_title(f"{name}: float32 dotted")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a smoke run: fewer samples, points")
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated, of: {', '.join(SYSTEMS)}")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--output", default=str(HERE / "results"))
    args = p.parse_args(argv)
    names = [s.strip() for s in args.systems.split(",")]
    bad = [s for s in names if s not in SYSTEMS]
    if bad:
        p.error(f"--systems: {bad} not among {list(SYSTEMS)}")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    widths, mantissas = (QUICK_WIDTHS, QUICK_MANTISSAS) if args.quick else (WIDTHS, MANTISSAS)
    t0 = time.perf_counter()
    answers, tables, walls = [], [], {}
    for name in names:
        print(f"== {name}: sweeping fixed:{widths}, float:m{mantissas} and float32", flush=True)
        a, t, walls[name] = run_system(name, SYSTEMS[name], out, widths, mantissas,
                                       args.workers, args.quick)
        answers.append(a)
        tables.append(t)
    answer = pd.concat(answers, ignore_index=True)
    answer.to_csv(out / "mission.csv", index=False)
    plot(pd.concat(tables, ignore_index=True), SYSTEMS, out / "mission.png")
    summary = {"answer": json.loads(answer.to_json(orient="records")),
               "widths": widths, "mantissas": mantissas, "quick": args.quick,
               "rule": "|dE| + 2 sigma <= tolerance at this and every wider width "
                       "(mantissa) of the sweep; paired same-sample estimates",
               "wall_time_s": {**{k: round(v, 1) for k, v in walls.items()},
                               "total": round(time.perf_counter() - t0, 1)},
               "machine": {"cpu": platform.processor() or platform.machine(),
                           "python": platform.python_version()}}
    (out / "mission.json").write_text(json.dumps(summary, indent=2))
    shown = answer.drop(columns=["note"])
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print("\nnarrowest fixed width, float32 verdict and narrowest float mantissa per "
              "kernel set (paired estimates; None: no width of the sweep passes):")
        print(shown.to_string(index=False))
    notes = answer[answer.note.astype(bool)]
    for _, r in notes.iterrows():
        print(f"  {r.system} / {r.kernels}: {r.note}")
    print(f"\nwrote {out}/mission.csv, mission.json and mission.png, and one sweep folder "
          f"per system ({', '.join(str(out / _slug(n)) for n in names)}); wall time "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
