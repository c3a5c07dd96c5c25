"""Which GPU float formats can each QMC kernel take? bfloat16, float16, tf32 and the fp8
formats per kernel of helium, the 64-H2 lattice and the electron gas, the narrowest float
mantissa, and one tensor-core plan per system confirmed by a full VMC run.

Systems (the seeds' systems; sizes as in the other studies, fewer samples):

- **He3**, SAPT2 potential, two-region tables (seed 002). Tolerance 10 mK (total energy).
- **64 H2**: the 4 x 4 x 4 lattice of seed 001 (STO-6G, RHF). Tolerance 5e-4 hartree.
- **Electron gas**, 14 and 54 electrons at r_s = 2 in 3D, Ewald sums, Jastrow u + p (seed
  000). Tolerance 1e-4 hartree per electron.

For every kernel alone (the others float64) and all together, on the samples of one float64
VMC run (paired estimates, :func:`fixedqmc.sweep.sweep`):

- the named formats ``fp8e5m2``, ``fp8e4m3``, ``bfloat16``, ``float16``, ``tf32``: a format
  passes when ``|dE| + 2 sigma <= tolerance`` at its own point;
- ``float:m<M>`` for M in :data:`MANTISSAS`, exponent bits sized from the range profile: the
  narrowest M that passes at it and every wider M;
- float32 (the machine's).

Why a format fails: **precision** when its mantissa is narrower than the kernel set's
narrowest passing mantissa, else **range** (its exponent width); **non-finite energies**
when the local energies overflowed to inf or NaN.  The variables that overflowed,
underflowed to zero or gave NaN at run time are named beside it.

The tensor-core plan of a system: each kernel at the cheapest format of :data:`LADDER` that
passes alone, the others float64; judged with every kernel at its format together (paired)
and confirmed by a full VMC run at the plan (the same random numbers as the float64 run,
the sweep's ``plans``; not for the 64-H2 lattice, whose full run with every kernel
emulated would take hours on 2 cores).  If the plan fails together, the kernel whose own point is worst
moves one rung up the ladder, until it passes (at most one move per kernel).

Uses only the public API.  Writes into ``results/`` (or ``--output``): one sweep folder per
system, ``formats.csv`` (per system and kernel set: passing formats, narrowest mantissa,
float32, why each format fails), ``plans.csv`` (every plan judged), ``summary.json`` (with
the machine and wall times) and ``formats.png``.

Which variable: ``--which SYSTEM:KERNELS`` instead asks :func:`fixedqmc.sweep.tune` with
``family="formats"`` for the cheapest format per variable of one kernel set, from the
ladder :data:`WHICH_LADDER` or ``--ladder`` (GPU roofline ``gpu-h100``; no confirming
run): the variables left at the top of the ladder are the ones that need its bits.  It writes ``which_<system>_<kernels>.csv``
(the plan, a row per variable) and prints the spec.

    python studies/float_formats/study.py                     # every system
    python studies/float_formats/study.py --systems He3,"HEG 14e"
    python studies/float_formats/study.py --which He3:kinetic  # about 7 min
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
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fixedqmc.numerics.float_format import parse_float_format  # noqa: E402
from fixedqmc.run import build_system, load_config  # noqa: E402
from fixedqmc.sweep import rule_value, sweep, tune  # noqa: E402

HERE = Path(__file__).resolve().parent
FORMATS = ("fp8e5m2", "fp8e4m3", "bfloat16", "float16", "tf32")
MANTISSAS = "2,3,5,7,10,13,16,19,23"
#: rungs of a tensor-core plan, cheapest first: formats of one rung cost the same (their
#: storage bits and tensor-core rate); float32 and float64 are the machine's
LADDER = (("fp8e5m2", "fp8e4m3"), ("bfloat16", "float16"), ("tf32",), ("float32",),
          ("float64",))
#: the formats a variable may take in ``--which``, narrowest first
WHICH_LADDER = ("bfloat16", "float16", "float32")
#: the electron gas's Jastrow factor: the u term with its cusp and a small p term on the
#: first two stars (illustrative values, as in ``studies/heg_precision``)
HEG_JASTROW = {"enabled": True, "p_coefficients": [0.02, 0.01]}


def _heg(electrons: int, walkers: int, blocks: int) -> dict:
    return {"config": {"seed": 1,
                       "system": {"kind": "heg", "electrons": electrons, "r_s": 2.0, "dim": 3},
                       "jastrow": dict(HEG_JASTROW),
                       "method": {"kind": "vmc", "move": "single", "walkers": walkers,
                                  "blocks": blocks, "equil_blocks": 5, "steps_per_block": 5,
                                  "step_size": 2.0}},
            "tolerance": 1e-4 * electrons, "unit": "hartree"}


#: per system: the input (a nested dict of input keys), the tolerance and its unit
SYSTEMS = {
    "He3": {"config": {"seed": 1, "system": {"n_atoms": 3, "potential": "SAPT2"},
                       "tables": {"r_max": 60.0},
                       "method": {"kind": "vmc", "walkers": 50, "blocks": 20,
                                  "equil_blocks": 10, "steps_per_block": 20,
                                  "step_size": 2.0}},
            "tolerance": 10.0, "unit": "mK"},
    "64 H2": {"config": {"seed": 1,
                         "system": {"kind": "molecule", "lattice": 4, "bond": 1.4,
                                    "spacing": 6.0, "basis": "sto-6g"},
                         "trial": {"scf": "rhf"},
                         "method": {"kind": "vmc", "walkers": 64, "blocks": 2,
                                    "equil_blocks": 20, "steps_per_block": 5,
                                    "step_size": 0.6}},
              "tolerance": 5e-4, "unit": "hartree",
              # a full VMC run with every kernel emulated: about 0.3 s per walker
              # evaluation here (2 cores), hours for the reference's length
              "confirm": False},
    "HEG 14e": _heg(14, 64, 8),
    "HEG 54e": _heg(54, 32, 4),
}


def slug(name: str) -> str:
    return name.lower().replace(" ", "_")


def kernel_sets(config: dict, folder: Path) -> list[str]:
    """Every kernel of the system alone, then all together (built at float64 with its output
    in the sweep's folder, where the sweep finds a mean-field cache again)."""
    full = load_config(overrides={**config, "precision": "float64", "output": str(folder)})
    return [*build_system(full).kernels, "all"]


def sweep_system(name: str, out: Path, workers: int, sets: list, plans: dict | None = None):
    """The format, mantissa and float32 points of the kernel sets ``sets`` of one system
    (resumed from its folder), and the ``plans`` given (label: precision spec), confirmed by
    a full run unless the system says ``confirm: False``."""
    case = SYSTEMS[name]
    return sweep(overrides=case["config"], mantissas=MANTISSAS, formats=",".join(FORMATS),
                 kernels=",".join(sets),
                 tolerance=case["tolerance"], units=case["unit"], mode="paired",
                 output=out / slug(name), workers=workers, plans=plans or {},
                 confirm_plans=case.get("confirm", True))


def range_events(row: pd.Series) -> str:
    """The variables of a point's row that overflowed, underflowed to zero or gave NaN
    (``overflow: a, b; underflow: c``), or ""."""
    kinds = {"overflow": sorted(json.loads(row.overflow_vars or "{}")), "underflow": [],
             "nan": []}
    for var, counts in sorted(json.loads(row.get("float_events") or "{}").items()):
        for kind in ("underflow", "nan"):
            if counts.get(kind):
                kinds[kind].append(var)
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in kinds.items() if v)


def why_fails(row: pd.Series, narrowest_mantissa, value: float) -> str:
    """Why a format's point fails: ``non-finite energies`` when its rule value is NaN;
    ``range`` when its mantissa is at least the kernel set's narrowest passing mantissa (so
    its exponent range is what fails); else ``precision (needs m<M>)``; with the variables
    of any range events (:func:`range_events`) beside it."""
    events = range_events(row)
    man = parse_float_format(row.format).man_bits
    if np.isnan(value):
        why = "non-finite energies"
    elif not pd.isna(narrowest_mantissa) and man >= narrowest_mantissa:
        why = "range"
    else:
        why = "precision (" + ("no swept mantissa passes" if pd.isna(narrowest_mantissa)
                               else f"needs m{narrowest_mantissa}") + ")"
    return f"{why}; {events}" if events else why


def format_rows(name: str, res) -> pd.DataFrame:
    """Per kernel set of a system's sweep: the passing formats, the narrowest mantissa,
    whether float32 passes, the estimate that judged them (``paired``, or ``reweighted``
    for a set that acts only through sampling), each format's rule value (``value_<f>``,
    by that estimate) and why each failing format fails."""
    case, table = SYSTEMS[name], res.table
    rows = []
    for a in res.answer.to_dict("records"):
        k, passing = a["kernels"], a.get("passing_formats") or []
        grp = table[table.kernels == k]
        judge = (a["judged_by"] or ["paired"])[0]
        value = rule_value(grp, judge)
        f32 = grp[grp.width.isna() & grp.mantissa.isna() & grp.format.isna()]
        row = {"system": name, "kernels": k, "tolerance": case["tolerance"],
               "unit": case["unit"], "judged_by": judge, "passing": passing,
               "narrowest_mantissa": a.get("narrowest_mantissa"),
               "float32_passes": bool(value[f32.index[0]] <= case["tolerance"])
               if len(f32) else None}
        for _, r in grp[grp.format.notna()].iterrows():
            row[f"value_{r.format}"] = float(value[r.name])
            row[f"why_{r.format}"] = ("passes" if r.format in passing else
                                      why_fails(r, a.get("narrowest_mantissa"), value[r.name]))
        if len(f32):
            row["value_float32"] = float(value[f32.index[0]])
        rows.append(row)
    return pd.DataFrame(rows)


def cheapest(row: dict) -> tuple[int, str]:
    """The rung of :data:`LADDER` and the format of one kernel alone: the cheapest format
    that passes (the smaller rule value within a rung); float64 when nothing narrower
    passes."""
    for rung, fmts in enumerate(LADDER):
        ok = [f for f in fmts if f in row["passing"]
              or (f == "float32" and row["float32_passes"]) or f == "float64"]
        if ok:
            return rung, min(ok, key=lambda f: row.get(f"value_{f}", 0.0))
    raise AssertionError("float64 always passes")


def plan_spec(choice: dict) -> str:
    """The precision spec of ``{kernel: format}``, float64 kernels left to the default."""
    return ",".join(["default=float64", *(f"{k}={f}" for k, f in choice.items()
                                          if f != "float64")])


def tensor_core_plan(name: str, out: Path, workers: int, formats: pd.DataFrame):
    """The system's plan (:data:`LADDER`, module docstring), judged paired and confirmed by
    a full run; every plan judged as a row."""
    per = {r["kernels"]: r for r in formats.to_dict("records") if r["kernels"] != "all"}
    rungs = {k: cheapest(r)[0] for k, r in per.items()}
    choice = {k: cheapest(r)[1] for k, r in per.items()}
    moved, rows = set(), []
    for attempt in range(len(per) + 1):
        spec = plan_spec(choice)
        res = sweep_system(name, out, workers, list(formats.kernels),
                           plans={f"plan{attempt}": spec})
        p = res.summary["plans"][f"plan{attempt}"]
        rows.append({"system": name, "attempt": attempt, "spec": spec, **p})
        if p["paired_verdict"] == "passes":
            break
        # the worst kernel (by its own point) not yet moved goes one rung up
        worst = max((k for k in per if k not in moved and choice[k] != "float64"),
                    key=lambda k: per[k].get(f"value_{choice[k]}", 0.0), default=None)
        if worst is None:
            break
        moved.add(worst)
        rungs[worst] += 1
        choice[worst] = min(LADDER[rungs[worst]],
                            key=lambda f: per[worst].get(f"value_{f}", np.inf))
    return pd.DataFrame(rows)


def plot(formats: pd.DataFrame, path: Path) -> None:
    """One panel per system: kernel sets (rows) by formats (columns), coloured by
    ``(|dE| + 2 sigma) / tolerance`` (log scale; below 1 passes), the ratio printed (NaN:
    non-finite energies)."""
    names = list(dict.fromkeys(formats.system))
    cols = [*FORMATS, "float32"]
    fig, axes = plt.subplots(1, len(names), figsize=(4.6 * len(names), 4.0), squeeze=False)
    for ax, name in zip(axes[0], names):
        f = formats[formats.system == name]
        ratio = np.array([[r.get(f"value_{c}", np.nan) / r["tolerance"] for c in cols]
                          for r in f.to_dict("records")], dtype=float)
        im = ax.imshow(np.log10(np.clip(ratio, 1e-4, 1e4)), cmap="RdYlGn_r", vmin=-4, vmax=4)
        for (i, j), v in np.ndenumerate(ratio):
            ax.text(j, i, "NaN" if np.isnan(v) else f"{v:.0e}", ha="center", va="center",
                    fontsize=6)
        ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(f)), list(f.kernels), fontsize=7)
        ax.set_title(f"{name}: (|dE| + 2 sigma) / tolerance", fontsize=8)
    fig.colorbar(im, ax=axes[0].tolist(), shrink=0.7, label="log10 of the ratio")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def which_variables(name: str, kernels: str, out: Path, workers: int,
                    ladder=WHICH_LADDER) -> pd.DataFrame:
    """The ``--which`` part (module docstring): the tuned format of every variable of the
    kernel set ``kernels`` of system ``name`` from ``ladder``, with the tuned and the
    common plan's paired estimates in the frame's ``attrs``."""
    case = SYSTEMS[name]
    res = tune(overrides={**case["config"], "output": str(out / slug(name))},
               kernels=kernels, tolerance=case["tolerance"], units=case["unit"],
               family="formats", formats=",".join(ladder), model="gpu-h100",
               output=out / slug(name) / f"which_{kernels.replace('+', '_')}",
               workers=workers, confirm=False)
    plan = res.plan[["variable", "precision", "floor", "seen"]].rename(
        columns={"precision": "format"})
    plan.attrs = {k: res.summary[k] for k in ("spec", "paired_diff", "paired_error",
                                               "common_paired_diff", "common_paired_error",
                                               "common_width", "plans_judged")}
    return plan


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--systems", default=",".join(SYSTEMS),
                   help=f"comma-separated, of: {', '.join(SYSTEMS)}")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--output", default=str(HERE / "results"))
    p.add_argument("--which", default=None, metavar="SYSTEM:KERNELS",
                   help="only tune the format of every variable of one kernel set "
                        "(e.g. He3:kinetic)")
    p.add_argument("--ladder", default=",".join(WHICH_LADDER),
                   help="with --which: the formats a variable may take, narrowest first "
                        f"(default {','.join(WHICH_LADDER)})")
    args = p.parse_args(argv)
    if args.which is not None:
        name, _, kernels = args.which.partition(":")
        if name not in SYSTEMS or not kernels:
            p.error(f"--which {args.which!r}: SYSTEM:KERNELS, SYSTEM of {list(SYSTEMS)}")
        out = Path(args.output)
        ladder = tuple(f.strip() for f in args.ladder.split(","))
        plan = which_variables(name, kernels, out, args.workers, ladder)
        path = out / f"which_{slug(name)}_{kernels.replace('+', '_')}.csv"
        plan.to_csv(path, index=False)
        a, unit = plan.attrs, SYSTEMS[name]["unit"]
        print(plan.to_string(index=False))
        print(f"{name} {kernels}: {a['spec']}\npaired {a['paired_diff']:.3g} +/- "
              f"{a['paired_error']:.2g} {unit} (every variable at "
              f"{ladder[a['common_width'] - 1]}: {a['common_paired_diff']:.3g} +/- "
              f"{a['common_paired_error']:.2g}); {a['plans_judged']} plans judged; "
              f"wrote {path}")
        return 0
    names = [s.strip() for s in args.systems.split(",")]
    bad = [s for s in names if s not in SYSTEMS]
    if bad:
        p.error(f"--systems: {bad} not among {list(SYSTEMS)}")
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    formats, plans, walls = [], [], {}
    for name in names:
        t = time.perf_counter()
        print(f"== {name}: {', '.join(FORMATS)}, float:m{{{MANTISSAS}}} and float32", flush=True)
        sets = kernel_sets(SYSTEMS[name]["config"], out / slug(name))
        f = format_rows(name, sweep_system(name, out, args.workers, sets))
        formats.append(f)
        print(f"== {name}: the tensor-core plan", flush=True)
        plans.append(tensor_core_plan(name, out, args.workers, f))
        walls[name] = round(time.perf_counter() - t, 1)
    formats, plans = pd.concat(formats, ignore_index=True), pd.concat(plans, ignore_index=True)
    formats.to_csv(out / "formats.csv", index=False)
    plans.to_csv(out / "plans.csv", index=False)
    plot(formats, out / "formats.png")
    summary = {"formats": list(FORMATS), "mantissas": MANTISSAS, "ladder": LADDER,
               "systems": {n: {"tolerance": SYSTEMS[n]["tolerance"],
                               "unit": SYSTEMS[n]["unit"], "input": SYSTEMS[n]["config"]}
                           for n in names},
               "answer": json.loads(formats.to_json(orient="records")),
               "plans": json.loads(plans.to_json(orient="records")),
               "wall_time_s": {**walls, "total": round(time.perf_counter() - t0, 1)},
               "machine": {"cpu": platform.processor() or platform.machine(),
                           "python": platform.python_version()}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    with pd.option_context("display.width", 220, "display.max_columns", 30,
                           "display.max_colwidth", 60):
        print(formats[["system", "kernels", "passing", "narrowest_mantissa",
                       "float32_passes"]].to_string(index=False))
        print(plans.to_string(index=False))
    print(f"\nwrote {out}/formats.csv, plans.csv, summary.json and formats.png; wall time "
          f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
