"""Seed 000's question for the homogeneous electron gas: is single precision good enough,
per kernel, and how many fixed-point bits does each kernel need?

Two cases, each a Slater-Jastrow wave function (a plane-wave determinant per spin; by default
the Jastrow factor u (N_u = 4 per spin, Kato cusp) + p (3 stars) optimised first by
variance minimisation, ``fixedqmc optimize``; ``--jastrow`` for the others) with Ewald
interactions (system kind ``heg``), sampled by float64 VMC:

``heg3d``  3D gas in a simple-cubic cell, N = 14 by default (``--electrons3d 54``), r_s = 2;
``heg2d``  2D gas (a periodic plane) in a square cell, N = 10 by default (``--electrons2d 18``).

For every kernel set (each kernel of the system alone at the trial precision, the others at
float64, and ``all`` of them together; Jastrow kernels ``jastrow_u``, ``jastrow_p`` are
included when the system exposes them) the energy difference from float64 is estimated

* *paired*: the local energy at float32 and at ``fixed:W`` (W = 16..40 in steps of 4; each
  variable's integer bits from the float64 range profile plus one bit) on the same float64
  samples (:func:`fixedqmc.sweep.sweep`, mode ``paired``);
* *full*: a complete VMC run sampling at the trial precision (same seed) against the
  float64 run, for ``all`` kernels at float32 and at the narrowest passing width (the widest
  width tried if none passes); ``--full none`` skips it.

The tolerance is **1e-4 Ha per electron** (``--tolerance``), i.e. 1e-4 N Ha on the total
energy; a width passes when ``|dE| + 2 sigma <= tolerance`` at it and every wider width.

Speed: the local-energy evaluation (the system's ``evaluate``: orbitals, determinants,
kinetic energy, Ewald sums) of one batch of walkers, timed per kernel set with that set at
float32 and the rest at float64, against everything at float64, on one thread by default
(``--timing-threads``: on a loaded machine a parallel kernel launch costs more than the
kernels of a small HEG, which would hide the arithmetic being timed); the walkers are exact
independent samples of |psi|^2 (the system's starting walkers), the same for every
precision.  The same batch gives a second, independent check of the energy change
(mean of ``E_L(trial) - E_L(float64)`` and its standard error) and a control: a second
float64 system on the same walkers must give exactly the same local energies.

    python studies/heg_precision/study.py --reduced     # minutes: N = 14 and 10, few samples
    python studies/heg_precision/study.py               # 256 walkers x 20 blocks per case
    python studies/heg_precision/study.py --electrons3d 54 --cases heg3d

Writes ``results/<case>/`` (the sweep folders ``sweep/`` and ``sweep_full/``, and
``paired.csv``, ``full.csv``, ``answer.csv``, ``speed.csv``), ``results/table.md``,
``results/figure.png`` and ``results/summary.json`` (``results/reduced/`` with
``--reduced``).  Uses only the public API (``fixedqmc.run``, ``fixedqmc.sweep``, the
system protocol).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc.qmc.system import Walkers
from fixedqmc.run import build_system, load_config, optimize
from fixedqmc.sweep import RangeProfile, sweep

HERE = Path(__file__).resolve().parent
TOLERANCE_PER_ELECTRON = 1e-4  # hartree per electron
R_S = 2.0
#: kernel sets in the order of the tables; those the system does not have are left out,
#: kernels of the system not listed here are appended
KERNEL_ORDER = ("all", "ewald_real", "ewald_recip", "jastrow_u", "jastrow_p", "orbitals",
                "determinant", "energy")
WIDTHS = "16:40:4"

#: run sizes: walkers, production blocks, equilibration blocks, steps per block
FULL_RUN = {"walkers": 256, "blocks": 20, "equil_blocks": 5, "steps_per_block": 5}
REDUCED_RUN = {"walkers": 32, "blocks": 6, "equil_blocks": 3, "steps_per_block": 3}


# ----------------------------------------------------------------------------- inputs --
#: Jastrow factors: none, the u term with the Kato cusp alone (the heg kind's default u),
#: that and a small p term on the first two stars (illustrative values, not optimised), or
#: u (N_u = 4 per spin) + p (3 stars) optimised by variance minimisation (``optimised``:
#: these are its zero starting values)
JASTROWS = {"none": None, "u": {"enabled": True},
            "u+p": {"enabled": True, "p_coefficients": [0.02, 0.01]},
            "optimised": {"enabled": True, "alpha_parallel": [0.0] * 4,
                          "alpha_antiparallel": [0.0] * 4, "p_coefficients": [0.0] * 3}}
#: VMC sampling and cycles of the optimisation (``fixedqmc optimize``), full and reduced
OPTIMISE_RUN = {"walkers": 200, "blocks": 20, "equil_blocks": 5, "steps_per_block": 5}
OPTIMISE_REDUCED = {"walkers": 100, "blocks": 10, "equil_blocks": 3, "steps_per_block": 3}
OPTIMISE_CYCLES = {"full": 4, "reduced": 2}


def case_input(dim: int, electrons: int, r_s: float, run: dict, seed: int = 1,
               jastrow: str = "u+p") -> dict:
    """The input (overrides) of one case: float64 VMC of the HEG, single-electron moves,
    with the Jastrow factor ``JASTROWS[jastrow]``."""
    inp = {"system": {"kind": "heg", "electrons": electrons, "r_s": r_s, "dim": dim},
           "method": {"kind": "vmc", "move": "single", **run},
           "seed": seed}
    if JASTROWS[jastrow] is not None:
        inp["jastrow"] = dict(JASTROWS[jastrow])
    return inp


def _shown(path: Path) -> str:
    """A path as recorded in the summary: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(HERE.parents[1]))
    except ValueError:
        return str(path)


def optimise_jastrow(overrides: dict, folder: Path, *, reduced: bool, progress=None) -> dict:
    """Variance-minimise the Jastrow factor of a case (``fixedqmc optimize`` in
    ``folder/optimize``, resumable) and return the overrides with the chosen parameters and
    the optimisation's summary."""
    size = "reduced" if reduced else "full"
    res = optimize(overrides={**overrides, "output": str(folder / "optimize"),
                              "method": {**overrides["method"],
                                         **(OPTIMISE_REDUCED if reduced else OPTIMISE_RUN)},
                              "optimize": {"method": "variance",
                                           "cycles": OPTIMISE_CYCLES[size]}},
                   progress=progress)
    chosen = tomllib.loads(res.input_file.read_text())["jastrow"]
    keys = {k: res.summary[k] for k in ("chosen_cycle", "energy", "energy_error", "variance",
                                        "initial_energy", "initial_variance", "parameters")}
    return {**overrides, "jastrow": chosen}, keys


def kernel_sets(overrides: dict, wanted=None) -> list[str]:
    """``all`` and every kernel of the system (``KERNEL_ORDER`` first); ``wanted``: a
    comma list or sequence to keep (kernels the system lacks are dropped, with a note)."""
    system = build_system(load_config(overrides=overrides))
    names = [k for k in KERNEL_ORDER if k == "all" or k in system.kernels]
    names += [k for k in system.kernels if k not in names]
    if wanted is None:
        return names
    wanted = [k.strip() for k in wanted.split(",")] if isinstance(wanted, str) else list(wanted)
    missing = [k for k in wanted if k not in names]
    if missing:
        print(f"kernel sets {missing} are not in this system (it has {names[1:]}): skipped")
    return [k for k in names if k in wanted]


def precision_spec(kernels: str, precision: str) -> str:
    return precision if kernels == "all" else f"default=float64,{kernels}={precision}"


# ----------------------------------------------------------------------------- speed --
def time_evaluations(overrides: dict, sets, *, walkers: int, min_time: float, repeats: int,
                     fixed_width: int | None = None, profile: dict | None = None,
                     threads: int | None = 1, seed: int = 7) -> pd.DataFrame:
    """Time ``evaluate`` of one batch of ``walkers`` exact samples of |psi|^2 per kernel set
    at float32 (and ``all`` at ``fixed:<fixed_width>`` with formats from ``profile``, the
    sweep's range profile) against float64, and the local-energy change on that batch.

    Precisions are interleaved over ``repeats`` rounds (a shared machine drifts); each round
    runs whole evaluations for at least ``min_time`` s; the best round's time per evaluation
    is kept.  Row ``float64 (control)``: a second float64 system, whose local energies must
    equal the first's exactly; ``repeatable``: a second evaluation of the batch by the same
    system gives the same local energies bit for bit.

    ``threads``: compiled-kernel threads while timing (default 1: the per-core speed; a
    parallel launch costs milliseconds on a loaded machine, more than a small HEG's kernels
    take; None: leave the current setting)."""
    import numba
    old_threads = numba.get_num_threads()
    if threads:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        return _time_evaluations(overrides, sets, walkers, min_time, repeats, fixed_width,
                                 profile, seed, numba.get_num_threads())
    finally:
        numba.set_num_threads(old_threads)


def _time_evaluations(overrides, sets, walkers, min_time, repeats, fixed_width, profile, seed,
                      threads) -> pd.DataFrame:
    config = load_config(overrides=overrides)
    base = build_system({**config, "precision": "float64"})
    rng = np.random.default_rng(seed)
    pos = base.initial_positions(walkers, rng)
    e64 = base.evaluate(Walkers(pos.copy(), None)).local_energy
    ranges = RangeProfile.from_json(profile).ranges() if profile is not None else None
    jobs = [("all", "float64", base, "float64"),
            ("all", "float64 (control)",
             build_system({**config, "precision": "float64"}), "float64")]
    for k in sets:
        jobs.append((k, "float32", build_system({**config,
                                                 "precision": precision_spec(k, "float32")}),
                     "float32"))
    if fixed_width is not None:
        p = f"fixed:{fixed_width}"
        jobs.append(("all", p, build_system({**config, "precision": p}, ranges=ranges), p))
    best = {i: np.inf for i in range(len(jobs))}
    energies, repeatable = {}, {}
    for i, (_, _, system, _) in enumerate(jobs):  # warm-up (compilation) and the energies
        energies[i] = system.evaluate(Walkers(pos.copy(), None)).local_energy
        again = system.evaluate(Walkers(pos.copy(), None)).local_energy
        repeatable[i] = bool(np.array_equal(energies[i], again))
    for _ in range(repeats):
        for i, (_, _, system, _) in enumerate(jobs):
            calls, t0 = 0, time.perf_counter()
            while True:
                system.evaluate(Walkers(pos.copy(), None))
                calls += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= min_time:
                    break
            best[i] = min(best[i], elapsed / calls)
    rows = []
    t64 = best[0]
    n = base.n_particles
    for i, (k, label, system, spec) in enumerate(jobs):
        d = energies[i] - e64
        rows.append({"kernels": k, "precision": label, "spec": precision_spec(k, spec),
                     "walkers": walkers, "electrons": n, "threads": threads,
                     "seconds_per_eval": best[i], "evals_per_second": 1.0 / best[i],
                     "speed_vs_float64": t64 / best[i],
                     "mean_diff": float(d.mean()),
                     "mean_diff_error": float(d.std(ddof=1) / np.sqrt(len(d))),
                     "max_abs_diff": float(np.abs(d).max()),
                     "identical": bool(np.array_equal(energies[i], e64)),
                     "repeatable": repeatable[i],
                     "overflow_events": int(system.log.total_events)})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------ case --
def run_case(name: str, dim: int, electrons: int, r_s: float, run: dict, *, widths: str,
             kernels, full: str, tolerance_per_electron: float, workers: int, out: Path,
             timing_walkers: int, timing_seconds: float, timing_repeats: int,
             timing_threads: int | None = 1, jastrow: str = "u+p", reduced: bool = True,
             progress=None) -> dict:
    """One case: the Jastrow optimisation (``jastrow = "optimised"``; ``reduced`` sizes
    it), the paired sweep, the full estimates, the timings; tables written to
    ``out/<name>/``.  Returns the case's summary (also in the tables' files)."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    overrides = {**case_input(dim, electrons, r_s, run, jastrow=jastrow),
                 "output": str(folder / "vmc")}
    optimisation = None
    if jastrow == "optimised":
        overrides, optimisation = optimise_jastrow(overrides, folder, reduced=reduced,
                                                   progress=progress)
    sets = kernel_sets(overrides, kernels)
    tol = tolerance_per_electron * electrons
    t0 = time.perf_counter()
    res = sweep(overrides=overrides, output=folder / "sweep", widths=widths,
                kernels=",".join(sets), tolerance=tol, mode="paired", workers=workers,
                float32=True, units="hartree", progress=progress,
                bounds=False)  # (its answers are the measured ones; bounds: docs/error_bounds.md)
    paired_time = time.perf_counter() - t0
    table = res.table.assign(case=name, dim=dim, electrons=electrons, r_s=r_s)
    table["precision_label"] = np.where(table.width.isna(), "float32",
                                        "fixed:" + table.width.astype(str))
    table["paired_diff_per_electron"] = table.paired_diff / electrons
    table["passes"] = table.paired_diff.abs() + 2 * table.paired_error <= tol
    table.to_csv(folder / "paired.csv", index=False)
    answer = res.answer.assign(case=name, tolerance_per_electron=tolerance_per_electron)
    answer.to_csv(folder / "answer.csv", index=False)
    narrow = dict(zip(answer.kernels, answer.narrowest_width))

    full_rows = pd.DataFrame()
    if full != "none" and "all" in sets:
        w = narrow.get("all")
        w = int(w) if w is not None and not pd.isna(w) else max(
            int(x) for x in table.width.dropna())
        t1 = time.perf_counter()
        fres = sweep(overrides=overrides, output=folder / "sweep_full", widths=[w],
                     kernels="all", tolerance=tol, mode="full", workers=workers,
                     float32=(full == "both"), units="hartree", progress=progress)
        full_rows = fres.table.assign(case=name, electrons=electrons,
                                      full_wall_time_s=time.perf_counter() - t1)
        full_rows["full_diff_per_electron"] = full_rows.full_diff / electrons
        full_rows.to_csv(folder / "full.csv", index=False)

    speed = time_evaluations(overrides, sets, walkers=timing_walkers, min_time=timing_seconds,
                             repeats=timing_repeats, threads=timing_threads,
                             fixed_width=narrow.get("all") if narrow.get("all") is not None
                             and not pd.isna(narrow.get("all")) else 32,
                             profile=res.summary["profile"])
    speed.insert(0, "case", name)
    speed.to_csv(folder / "speed.csv", index=False)
    return {"case": name, "dim": dim, "electrons": electrons, "r_s": r_s, "run": run,
            "jastrow": jastrow, "optimisation": optimisation,
            "input": {**overrides, "output": _shown(folder / "vmc")},
            "kernel_sets": sets, "widths": widths,
            "tolerance_hartree": tol, "tolerance_per_electron": tolerance_per_electron,
            "float64_energy": res.summary["float64_energy"],
            "float64_error": res.summary["float64_error"],
            "float64_energy_per_electron": res.summary["float64_energy"] / electrons,
            "samples": res.summary["samples"], "paired_wall_time_s": paired_time,
            "narrowest_width": {k: (None if v is None or pd.isna(v) else int(v))
                                for k, v in narrow.items()},
            "overflow_points": table.loc[table.overflow_events > 0,
                                         ["kernels", "precision_label", "overflow_vars"]
                                         ].to_dict("records"),
            "full": full_rows[[c for c in ("kernels", "precision", "full_energy", "full_error",
                                           "full_diff", "full_diff_error",
                                           "full_acceptance")
                               if c in full_rows]].to_dict("records"),
            "speed": speed[["kernels", "precision", "seconds_per_eval", "speed_vs_float64",
                            "mean_diff", "mean_diff_error", "identical", "repeatable"]
                           ].to_dict("records")}


# ---------------------------------------------------------------------------- report --
def _pm(d, e) -> str:
    return f"{d:+.1e} ({e:.0e})"


def markdown(cases: list[dict], out: Path) -> str:
    """The study's tables: per case, the paired difference per kernel set and precision,
    the narrowest width, the full estimates and the speed ratio."""
    lines = []
    for c in cases:
        name = c["case"]
        t = pd.read_csv(out / name / "paired.csv")
        sp = pd.read_csv(out / name / "speed.csv")
        widths = sorted(int(w) for w in t.width.dropna().unique())
        lines += [f"### {name}: {c['dim']}D HEG, N = {c['electrons']}, r_s = {c['r_s']}, "
                  f"Jastrow {c['jastrow']}",
                  ""]
        o = c.get("optimisation")
        if o:
            lines += [f"Jastrow optimised by variance minimisation (`fixedqmc optimize`, cycle "
                      f"{o['chosen_cycle']} chosen): VMC energy {o['initial_energy']:.5f} -> "
                      f"{o['energy']:.5f} +- {o['energy_error']:.5f} Ha, variance of E_L "
                      f"{o['initial_variance']:.4g} -> {o['variance']:.4g} Ha^2.", ""]
        lines += [f"float64 VMC energy {c['float64_energy']:.5f} +- {c['float64_error']:.5f} "
                  f"Ha ({c['float64_energy_per_electron']:.6f} Ha per electron); samples "
                  f"{c['samples'][0]} blocks x {c['samples'][1]} walkers.  Paired "
                  f"E(trial) - E(float64) in Ha (error in brackets); tolerance "
                  f"{c['tolerance_per_electron']:g} Ha per electron = "
                  f"{c['tolerance_hartree']:.2g} Ha; `!` marks points with overflow events.",
                  "",
                  "| kernels | float32 | " + " | ".join(f"W={w}" for w in widths)
                  + " | narrowest W | eval speed float64/float32 |",
                  "|---" * (len(widths) + 4) + "|"]
        for k in c["kernel_sets"]:
            g = t[t.kernels == k]
            cells = []
            for w in [None, *widths]:
                r = g[g.width.isna()] if w is None else g[g.width == w]
                if not len(r):
                    cells.append("")
                    continue
                r = r.iloc[0]
                cells.append(_pm(r.paired_diff, r.paired_error)
                             + ("!" if r.overflow_events > 0 else ""))
            nw = c["narrowest_width"].get(k)
            s = sp[(sp.kernels == k) & (sp.precision == "float32")]
            ratio = f"{s.speed_vs_float64.iloc[0]:.2f}" if len(s) else ""
            lines.append(f"| {k} | " + " | ".join(cells)
                         + f" | {nw if nw is not None else 'none'} | {ratio} |")
        lines.append("")
        if c["full"]:
            lines += ["Full estimates (VMC sampling at the trial precision, same seed):", "",
                      "| kernels | precision | E (Ha) | E - E(float64) (Ha) | acceptance |",
                      "|---|---|---|---|---|"]
            for f in c["full"]:
                lines.append(f"| {f['kernels']} | {f['precision']} | "
                             f"{f['full_energy']:.5f} +- {f['full_error']:.5f} | "
                             f"{_pm(f['full_diff'], f['full_diff_error'])} | "
                             f"{f.get('full_acceptance', float('nan')):.3f} |")
            lines.append("")
        lines += [f"Local-energy evaluation of {int(sp.walkers.iloc[0])} walkers on "
                  f"{int(sp.threads.iloc[0])} thread(s) (best of interleaved rounds) and the "
                  "change of E_L on that batch of exact samples:",
                  "", "| kernels | precision | ms per evaluation | speed vs float64 | "
                  "mean dE_L (Ha) | identical to float64 | repeatable |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in sp.iterrows():
            lines.append(f"| {r.kernels} | {r.precision} | {1e3 * r.seconds_per_eval:.2f} | "
                         f"{r.speed_vs_float64:.2f} | {_pm(r.mean_diff, r.mean_diff_error)} | "
                         f"{'yes' if r.identical else 'no'} | "
                         f"{'yes' if r.repeatable else 'NO'} |")
        if c["overflow_points"]:
            hot = sorted({v for p in c["overflow_points"]
                          for v in json.loads(p["overflow_vars"])})
            lines += ["", f"Overflow events at {len(c['overflow_points'])} points, in "
                      f"{', '.join(hot)}."]
        lines.append("")
    return "\n".join(lines)


def figure(cases: list[dict], out: Path, path: Path | None = None):
    """|paired dE| per electron against W per kernel set (log axis), float32 as a dotted
    line of the same colour, the tolerance as a green line; one panel per case."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cases), figsize=(6.5 * len(cases), 4.6), squeeze=False)
    for ax, c in zip(axes[0], cases):
        t = pd.read_csv(out / c["case"] / "paired.csv")
        n = c["electrons"]
        ys = [c["tolerance_per_electron"]]
        for k in c["kernel_sets"]:
            g = t[t.kernels == k]
            fx = g.dropna(subset=["width"]).sort_values("width")
            y = (fx.paired_diff.abs() / n).to_numpy(float)
            err = (fx.paired_error / n).to_numpy(float)
            keep = y > 0
            line = ax.errorbar(fx.width[keep], y[keep], yerr=err[keep], marker="o", ms=4,
                               capsize=2, label=k, lw=1.8 if k == "all" else 1.2)
            color = line[0].get_color()
            ys += list(y[keep])
            f32 = g[g.width.isna()]
            if len(f32) and f32.paired_diff.iloc[0] != 0:
                v = abs(float(f32.paired_diff.iloc[0])) / n
                ax.axhline(v, ls=":", color=color, lw=1.2)
                ax.plot([fx.width.max() + 2], [v], marker="*", ms=9, color=color)
                ys.append(v)
        ax.axhline(c["tolerance_per_electron"], color="green", lw=1.5,
                   label=f"tolerance {c['tolerance_per_electron']:g} Ha/electron")
        ax.set_yscale("log")
        ax.set_ylim(min(ys) / 3, max(ys) * 3)
        ax.set_title(f"{c['case']}: {c['dim']}D HEG, N = {n}, r_s = {c['r_s']}")
        ax.set_xlabel("word width W (bits); stars and dotted lines: float32")
        ax.set_ylabel("|E(trial) - E(float64)| per electron (Ha), paired")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


# ------------------------------------------------------------------------------ main --
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reduced", action="store_true",
                   help=f"small runs ({REDUCED_RUN['walkers']} walkers x "
                        f"{REDUCED_RUN['blocks']} blocks), a few minutes")
    p.add_argument("--cases", default="heg3d,heg2d", help="heg3d, heg2d or both")
    p.add_argument("--electrons3d", type=int, default=14, help="3D electrons (14, 38, 54, ...)")
    p.add_argument("--electrons2d", type=int, default=10, help="2D electrons (10, 18, 26, ...)")
    p.add_argument("--jastrow", choices=tuple(JASTROWS), default="optimised",
                   help="Jastrow factor: none, u (cusp term), u+p (and a small p term)")
    p.add_argument("--rs", type=float, default=R_S, help="density parameter r_s (bohr)")
    p.add_argument("--walkers", type=int, default=None)
    p.add_argument("--blocks", type=int, default=None, help="production blocks")
    p.add_argument("--steps", type=int, default=None, help="steps per block")
    p.add_argument("--widths", default=WIDTHS, help="word widths lo:hi[:step] or a list")
    p.add_argument("--kernels", default=None,
                   help="kernel sets, comma-separated (default: all and every kernel)")
    p.add_argument("--tolerance", type=float, default=TOLERANCE_PER_ELECTRON,
                   help="tolerance in Ha per electron")
    p.add_argument("--full", choices=("none", "narrowest", "both"), default="both",
                   help="full estimates of 'all': at the narrowest width (and float32)")
    p.add_argument("--timing-walkers", type=int, default=None)
    p.add_argument("--timing-seconds", type=float, default=None)
    p.add_argument("--timing-repeats", type=int, default=None)
    p.add_argument("--timing-threads", type=int, default=1,
                   help="kernel threads while timing (default 1; 0: leave as is)")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--output", default=None,
                   help="results folder (default results/, results/reduced/ with --reduced)")
    args = p.parse_args(argv)
    run = dict(REDUCED_RUN if args.reduced else FULL_RUN)
    for key, val in (("walkers", args.walkers), ("blocks", args.blocks),
                     ("steps_per_block", args.steps)):
        if val is not None:
            run[key] = val
    timing = {"timing_walkers": args.timing_walkers or (64 if args.reduced else 128),
              "timing_seconds": args.timing_seconds or (0.3 if args.reduced else 1.0),
              "timing_repeats": args.timing_repeats or (5 if args.reduced else 7),
              "timing_threads": args.timing_threads or None}
    out = Path(args.output) if args.output else HERE / "results" / (
        "reduced" if args.reduced else "")
    specs = {"heg3d": (3, args.electrons3d), "heg2d": (2, args.electrons2d)}
    names = [c.strip() for c in args.cases.split(",") if c.strip()]
    bad = [c for c in names if c not in specs]
    if bad or not names:
        p.error(f"--cases: {bad or args.cases!r} not among {', '.join(specs)}")
    t0 = time.perf_counter()
    cases = []
    for name in names:
        dim, n = specs[name]
        print(f"== {name}: {dim}D HEG, N = {n}, r_s = {args.rs}, {run}", flush=True)
        cases.append(run_case(name, dim, n, args.rs, run, widths=args.widths,
                              kernels=args.kernels, full=args.full,
                              tolerance_per_electron=args.tolerance, workers=args.workers,
                              out=out, jastrow=args.jastrow, reduced=args.reduced,
                              **timing))
    text = markdown(cases, out)
    (out / "table.md").write_text(text)
    figure(cases, out, out / "figure.png")
    import numba
    summary = {"cases": cases, "wall_time_s": time.perf_counter() - t0,
               "machine": {"cpu_count": os.cpu_count(), "numba_threads": numba.get_num_threads(),
                           "load_average": list(os.getloadavg()),
                           "python": platform.python_version(), "numpy": np.__version__},
               "command": " ".join(["study.py", *(argv if argv is not None else
                                                  __import__("sys").argv[1:])])}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    print(text)
    print(f"wall time {summary['wall_time_s']:.0f} s; written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
