"""The ``fixedqmc`` command line.

Subcommands::

    fixedqmc run INPUT.toml       a VMC or DMC calculation (``--set key=value`` overrides)
    fixedqmc optimize INPUT.toml  optimise the trial function's linear parameters (Jastrow)
    fixedqmc profile INPUT.toml   float64 range profile of every kernel variable
    fixedqmc sweep INPUT.toml     energy vs word width, float mantissa or float format per kernel
    fixedqmc tune INPUT.toml --tolerance T   the cheapest per-variable formats (cost model)
    fixedqmc cost INPUT.toml      hardware cost of the data path at a precision (DSP, LUTs, ...)
    fixedqmc bound INPUT.toml     rigorous error bounds at a precision beside the errors measured
    fixedqmc systems              registered system kinds and their input keys
    fixedqmc info                 versions, numba threading layer and thread count
    fixedqmc bench numerics       fixed-point kernel vs APyTypes, fxpmath and float64
    fixedqmc bench floats         float-format kernels (bfloat16, e6m9) vs APyTypes, pychop, gfloat
    fixedqmc bench tables         two-region table evaluation, float64 and fixed (elements/s)
    fixedqmc bench lutexp         LUT exponential, float64 / float32 / fixed (elements/s)
    fixedqmc bench helium         HAQMC Table 2 workload: VMC of He_N, pair evaluations/s
    fixedqmc bench h2             VMC of H2 lattices, ours at 3 precisions vs PyQMC (sweeps/s)
    fixedqmc bench periodic       Ewald energy of the 3D electron gas vs PyQMC's (configs/s)
    fixedqmc tables ...           generate, check and evaluate two-region tables
    fixedqmc lutexp               error report of a lookup-table exponential
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
from contextlib import contextmanager
from importlib import metadata

from fixedqmc.cost import DEFAULT_MODEL
from fixedqmc.errors import FixedQMCError
from fixedqmc.tables.cli import add_table_commands


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def cmd_info(args: argparse.Namespace) -> int:
    import numba

    from fixedqmc.numerics.kernel import N_CHUNKS

    try:  # run a tiny parallel function so numba picks its threading layer
        import numpy as np
        from numba import prange

        @numba.njit(parallel=True)
        def _touch(n):
            s = 0.0
            for i in prange(n):
                s += np.sqrt(i)
            return s

        _touch(100)
        layer = numba.threading_layer()
    except Exception as exc:  # report, do not fail: info is a diagnostic
        layer = f"unavailable ({exc})"
    print(f"fixedqmc {_version('fixedqmc')}")
    print(f"python {platform.python_version()} on {platform.platform()}")
    for dist in ("numpy", "scipy", "pandas", "matplotlib", "numba", "llvmlite", "fxpmath",
                 "apytypes", "hypothesis"):
        print(f"  {dist:<11} {_version(dist)}")
    print(f"numba threading layer: {layer}")
    print(f"numba threads: {numba.get_num_threads()} (NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS})")
    print(f"kernel chunks per call (fixed, thread-independent): {N_CHUNKS}")
    return 0


#: Per benchmark: its module, entry function and ``{function parameter: option}``; an
#: option not given keeps the function's default (written there only).
BENCHMARKS = {
    "numerics": ("numerics", "main", {"n": "n", "repeats": "repeats"}),
    "floats": ("floats", "main_floats", {"n": "n", "repeats": "repeats", "systems": "systems",
                                          "walkers": "walkers"}),
    "tables": ("tables", "main_tables", {"n": "n", "repeats": "repeats"}),
    "lutexp": ("tables", "main_lutexp", {"n": "n", "repeats": "repeats"}),
    "helium": ("helium", "main_helium", {"atoms": "atoms", "min_time": "min_time"}),
    "h2": ("h2", "main_h2", {"lattices": "lattice", "walkers": "walkers",
                             "precisions": "precisions", "min_time": "min_time",
                             "max_sweeps": "sweeps", "cache_dir": "scf_cache",
                             "pyqmc": "pyqmc", "breakdown": "breakdown", "rounds": "rounds"}),
    "periodic": ("periodic", "main_periodic", {"sizes": "electrons", "precisions": "precisions",
                                               "configs": "walkers", "min_time": "min_time",
                                               "pyqmc": "pyqmc"}),
}


def cmd_bench(args: argparse.Namespace) -> int:
    func, kwargs = bench_call(args)
    return func(**kwargs)


def bench_call(args: argparse.Namespace) -> tuple:
    """The entry function of ``args.what`` and the keyword arguments of the options given."""
    import importlib

    if args.what not in BENCHMARKS:
        raise FixedQMCError(f"unknown benchmark {args.what!r}")
    module, name, params = BENCHMARKS[args.what]
    given = _given(args, "n", "repeats", "systems", "min_time", "walkers", "sweeps", "rounds",
                   "scf_cache", "breakdown")
    given["pyqmc"] = not args.no_pyqmc
    for option, value in (("atoms", args.atoms), ("precisions", args.precisions)):
        if value:
            given[option] = tuple(value)
    for option in ("lattice", "electrons"):
        if getattr(args, option):
            given[option] = _int_list(f"--{option}", getattr(args, option))
    func = getattr(importlib.import_module(f"fixedqmc.bench.{module}"), name)
    return func, {p: given[o] for p, o in params.items() if o in given}


def _int_list(option: str, text: str) -> tuple:
    """``"2,4"`` as ``(2, 4)``; each at least 1."""
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise FixedQMCError(f"{option} takes comma-separated integers (e.g. 2,4), got "
                            f"{text!r}") from None
    if not values or min(values) < 1:
        raise FixedQMCError(f"{option} values must be at least 1, got {text!r}")
    return values


def _sets(args: argparse.Namespace) -> list:
    """``--set`` assignments, with ``--precision SPEC`` as ``precision=SPEC`` last."""
    sets = list(args.set or ())
    if getattr(args, "precision", None) is not None:
        sets.append(f"precision={args.precision!r}" if "'" not in args.precision
                    else f'precision="{args.precision}"')
    return sets


def cmd_systems(args: argparse.Namespace) -> int:
    import json

    from fixedqmc.qmc.registry import get_plugin, system_kinds
    from fixedqmc.run.config import defaults_for

    for kind in system_kinds():
        plugin = get_plugin(kind)
        print(f"{kind}: {plugin.description} (energies in {plugin.units.energy}, lengths in "
              f"{plugin.units.length})")
        for name in plugin.sections:
            print(f"  [{name}] {json.dumps(defaults_for(kind)[name])}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from fixedqmc.run.runner import run

    result = run(args.input, sets=_sets(args), profile=args.profile)
    s = result.summary
    u = s["units"]
    with pd.option_context("display.width", 160, "display.max_columns", 20,
                           "display.float_format", "{:.6g}".format):
        print(result.table().to_string(index=False))
    print(f"energy: {s[f'energy_{u}']:.6g} +/- {s[f'energy_error_{u}']:.2g} {u}")
    if s["overflow_total"]:
        hot = {k: v for k, v in s["overflow"].items() if v}
        print(f"overflow/saturation events: {s['overflow_total']} ({hot})")
    print(f"results in {result.output}/ (trace.parquet, trace.csv, summary.json); "
          f"wall time {s['wall_time_s']:.1f} s")
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    import pandas as pd

    from fixedqmc.run.optimize import optimize

    result = optimize(args.input, sets=_sets(args))
    s = result.summary
    u = s["energy_unit"]
    cols = [c for c in ("cycle", "energy", "energy_error", "variance", "acceptance",
                        "predicted_energy", "predicted_variance", "effective_samples")
            if c in result.table]
    with pd.option_context("display.width", 160, "display.float_format", "{:.6g}".format):
        print(result.table[cols].to_string(index=False))
    print(f"{s['method']} minimisation: cycle {s['chosen_cycle']} chosen, energy "
          f"{s['energy']:.6g} +/- {s['energy_error']:.2g} {u} (start {s['initial_energy']:.6g}"
          f" +/- {s['initial_energy_error']:.2g}), variance {s['variance']:.4g} {u}^2 (start "
          f"{s['initial_variance']:.4g})")
    print(f"results in {result.output}/ (optimize.parquet, optimize.csv, optimize.json, "
          f"optimize.png); run with them: fixedqmc run {result.input_file}")
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from pathlib import Path

    import pandas as pd

    from fixedqmc import jsonio
    from fixedqmc.output_folder import claim
    from fixedqmc.qmc.profile import mantissa_precision
    from fixedqmc.qmc.registry import get_plugin
    from fixedqmc.run.config import load_config
    from fixedqmc.run.memory import check_memory
    from fixedqmc.run.plan import build_system
    from fixedqmc.state_files import atomic_output, write_atomic
    from fixedqmc.sweep.estimates import sample_reference

    mantissa = args.mantissa
    if mantissa is not None:  # checked before any work
        mantissa = mantissa_precision(int(mantissa) if mantissa.isdigit() else mantissa)
    config = load_config(args.input, _sets(args))
    unit = get_plugin(config["system"]["kind"]).units.energy
    out = Path(config["output"]) / "profile"
    config = {**config, "output": str(out)}  # what a system writes (a mean-field cache) too
    with claim(out, "profile") as lock:
        try:  # input errors: nothing this call wrote is left
            system = build_system({**config, "precision": "float64"})
            check_memory(system, config, samples=True)
        except BaseException:
            lock.abandon()
            raise
        ref = sample_reference(config, progress=None, system=system)
        frame = ref.profile.frame(args.width, float_mantissa=mantissa)
        with atomic_output(out / "profile.csv") as tmp:
            frame.to_csv(tmp, index=False)
        write_atomic(out / "profile.json", jsonio.dumps(
            {"samples": list(ref.samples.shape), "energy_unit": unit,
             "float64_energy": ref.energy, "float64_error": ref.error, "margin_bits": 1,
             "stats": ref.profile.to_json()}, indent=2).encode())
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.float_format", "{:.4g}".format):
        print(frame.to_string(index=False))
    print(f"float64 VMC on the samples: {ref.energy:.6g} +/- {ref.error:.2g} {unit}; "
          f"{ref.samples.shape[0]} blocks x {ref.samples.shape[1]} walkers profiled")
    if mantissa is not None:
        bad = ref.profile.float_problems(mantissa)
        if bad:
            print(f"no exponent width holds the range at {mantissa}: "
                  + "; ".join(f"{name} ({p})" for name, p in bad.items()))
    print(f"saved {out}/profile.csv and profile.json")
    return 0


@contextmanager
def _sampled_trial(args: argparse.Namespace, name: str, supports, missing: str):
    """``(config, out, reference, trial)`` of a command that works on float64 samples of
    its input: the folder ``<output>/<name>`` claimed (and left as it was on an input
    error), the float64 system checked by ``supports`` (else a clear error: the kind
    ``missing`` ...) and for memory before any work, the reference sampled, and the trial
    system at the input's precision, formats sized from the samples' profile."""
    from pathlib import Path

    from fixedqmc.output_folder import claim
    from fixedqmc.run.config import load_config
    from fixedqmc.run.memory import check_memory
    from fixedqmc.run.plan import build_system
    from fixedqmc.sweep.estimates import sample_reference, trial_system

    config = load_config(args.input, _sets(args))
    out = Path(config["output"]) / name
    config = {**config, "output": str(out)}
    with claim(out, name) as lock:
        try:  # input errors: nothing this call wrote is left
            system = build_system({**config, "precision": "float64"})
            if not supports(system):
                raise FixedQMCError(f"system kind {config['system']['kind']!r} {missing}")
            check_memory(system, config, samples=True)
        except BaseException:
            lock.abandon()
            raise
        ref = sample_reference(config, progress=None, system=system)
        yield config, out, ref, trial_system(config, config["precision"], ref.profile)


def cmd_cost(args: argparse.Namespace) -> int:
    import pandas as pd

    from fixedqmc import jsonio
    from fixedqmc.cost import RESOURCES, check_cycles, totals
    from fixedqmc.qmc.counts import STAGES, counts_operations, hardware_cost
    from fixedqmc.state_files import atomic_output, write_atomic
    from fixedqmc.sweep.costs import COUNT_WALKERS

    check_cycles(args.model, args.cycles)  # an unknown model or bad cycles, before any work
    if args.stage not in STAGES:
        raise FixedQMCError(f"--stage {args.stage!r}; allowed: {', '.join(STAGES)}")
    with _sampled_trial(args, "cost", counts_operations,
                        "does not count its operations (the optional protocol member "
                        "operation_counts)") as (config, out, ref, trial):
        rows = hardware_cost(trial, ref.samples[-1][:COUNT_WALKERS], args.model,
                             stage=args.stage, cycles=args.cycles)
        per_kernel = rows.groupby("kernel", sort=False)[
            [c for c in RESOURCES if c in rows]].sum()
        summary = {"model": args.model, "stage": args.stage, "cycles": args.cycles,
                   "precision": config["precision"],
                   "per": "walker" if args.stage == "evaluation" else "move",
                   "totals": totals(rows), "kernels": per_kernel.to_dict(orient="index"),
                   "formats": trial.formats()}
        with atomic_output(out / "cost.csv") as tmp:
            rows.to_csv(tmp, index=False)
        write_atomic(out / "cost.json", jsonio.dumps(summary, indent=2).encode())
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(per_kernel.to_string())
    every = f" every {args.cycles} cycles" if args.cycles > 1 else ""
    print(f"total ({args.model}, one {args.stage} per {summary['per']}{every}, precision "
          f"{config['precision']}): " + ", ".join(f"{k} {v:.4g}" for k, v
                                                   in summary["totals"].items()))
    print(f"saved {out}/cost.csv and cost.json (docs/cost_models.md)")
    return 0


def cmd_bound(args: argparse.Namespace) -> int:
    import pandas as pd

    from fixedqmc import jsonio
    from fixedqmc.qmc.bounds import bound, bounds_evaluations
    from fixedqmc.qmc.registry import get_plugin
    from fixedqmc.state_files import atomic_output, write_atomic

    with _sampled_trial(args, "bound", bounds_evaluations,
                        "cannot be bounded yet (the optional protocol member "
                        "bound_evaluation; docs/error_bounds.md)") as (config, out, ref, trial):
        unit = get_plugin(config["system"]["kind"]).units.energy
        res = bound(trial, ref.samples)
        table = res.table()
        summary = {"precision": config["precision"], "energy_unit": unit,
                   "samples": list(ref.samples.shape[:2]), "ambiguous": res.ambiguous,
                   "unbounded": {k: c for k, c in res.unbounded.items() if c},
                   "violations": int(table.violations.sum()),
                   "quantities": table.to_dict(orient="index"), "formats": trial.formats()}
        with atomic_output(out / "bound.csv") as tmp:
            table.to_csv(tmp)
        write_atomic(out / "bound.json", jsonio.dumps(summary, indent=2).encode())
    with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
        print(table.to_string())
    n = ref.samples.shape[0] * ref.samples.shape[1]
    print(f"precision {config['precision']}, {n} float64 samples; energies in {unit}; "
          f"{res.ambiguous} ambiguous decision(s)")
    print(f"saved {out}/bound.csv and bound.json (docs/error_bounds.md)")
    if summary["violations"]:
        print(f"DEFECT: {summary['violations']} measured error(s) exceed their bound "
              "(a bound that does not hold is a bug: please report it)", file=sys.stderr)
        return 1
    return 0


def _given(args: argparse.Namespace, *names: str) -> dict:
    """The options among ``names`` given on the command line (not None): the others keep the
    defaults of the function they are passed to, written there only."""
    return {n: getattr(args, n) for n in names if getattr(args, n) is not None}


def cmd_sweep(args: argparse.Namespace) -> int:
    import pandas as pd

    from fixedqmc.sweep import sweep

    res = sweep(args.input, widths=args.widths,
                **_given(args, "kernels", "tolerance", "mode", "cost_model"),
                sets=_sets(args), output=args.output, workers=args.workers,
                scheduler=args.scheduler, float32=not args.no_float32, units=args.units,
                profile=args.profile_from, worker_wait=args.worker_wait,
                mantissas=args.mantissas, formats=args.formats,
                mantissa_mode=args.mantissa_mode, plans=args.plan,
                confirm_plans=not args.no_confirm_plans, bounds=not args.no_bounds)
    unit = res.summary["energy_unit"]
    cols = ["kernels", "precision"]
    cols += [c for c in ("paired_diff", "paired_error", "full_diff", "full_diff_error",
                         "full_acceptance", "bound_max", "bound_unbounded") if c in res.table]
    cols += [c for c in ("cost_dsp", "cost_luts", "cost_memory", "cost_seconds")
             if c in res.table]
    cols += ["overflow_events", "wall_time_s"]
    table = res.table[cols].rename(columns={
        c: f"{c} ({unit})" for c in cols if c.endswith(("_diff", "_error", "_max"))})
    swept = res.summary.get("widths") or not (res.summary.get("mantissas")
                                              or res.summary.get("formats"))
    answer = ["kernels"] + [c for c in ("narrowest_width", "narrowest_width_paired",
                                        "narrowest_width_full", "predicted_width")
                            if c in res.answer and swept]
    answer += [c for c in ("narrowest_mantissa", "narrowest_mantissa_paired",
                           "narrowest_mantissa_full", "passing_formats", "cost_at_width",
                           "note")
               if c in res.answer]
    with pd.option_context("display.width", 200, "display.max_rows", 500,
                           "display.max_colwidth", 120, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))
        print()
        print(res.answer[answer].to_string(index=False))
        if res.summary["plans"]:
            plans = pd.DataFrame.from_dict(res.summary["plans"], orient="index")
            print()
            print(plans[["spec", "paired_value", "paired_verdict", "full_value",
                         "full_verdict", "passes"]].to_string())
    print(f"rule ({res.summary['mode']}): {res.answer.rule.iloc[0]}, tolerance "
          f"{res.summary['tolerance']:g} {unit}; float64 energy "
          f"{res.summary['float64_energy']:.6g} +/- {res.summary['float64_error']:.2g} {unit}")
    print(f"costs: {res.summary['cost_model']} (docs/cost_models.md), per walker evaluation"
          if res.summary["cost_model"] else
          "costs: none (the system does not count its operations: operation_counts)")
    print(f"results in {res.output}/ (sweep.parquet, sweep.csv, answer.json, sweep.png, "
          "pareto.png, counts.csv)")
    return 0


def _interval(bounds) -> str:
    """``lo-hi`` of an error ratio's interval; unknown (NaN) with fewer than 3 walkers."""
    lo, hi = bounds
    return "unknown" if math.isnan(lo) or math.isnan(hi) else f"{lo:.2g}-{hi:.2g}"


def cmd_tune(args: argparse.Namespace) -> int:
    import pandas as pd

    from fixedqmc.sweep import tune

    res = tune(args.input, tolerance=args.tolerance,
               **_given(args, "kernels", "family", "model", "mantissa_mode", "formats"),
               objective=args.objective,
               widths=args.widths, min_width=args.min_width, sets=_sets(args), output=args.output,
               workers=args.workers, scheduler=args.scheduler, worker_wait=args.worker_wait,
               units=args.units, confirm=not args.no_confirm,
               confirm_blocks=args.confirm_blocks)
    s = res.summary
    narrowed = res.plan[res.plan["width"] < res.plan["common_width"]]
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(narrowed.to_string(index=False) if len(narrowed) else
              "no variable could be narrowed below the common width")
    common = (s["ladder"][s["common_width"] - 1] if s.get("ladder")
              else s["common_width"])
    print(f"\n{len(narrowed)} of {len(res.plan)} variables narrowed from the common width "
          f"{common} ({s['kernels']}, {s['precision']})")
    if s["invisible"]:
        print(f"kept at the common width, unseen by the paired estimate (they act through "
              f"sampling; the full run judges them): {', '.join(s['invisible'])}")
    print(f"cost ({s['model']}, per walker evaluation; objective {s['objective']}):")
    for r in s["resources"] or ():
        print(f"  {r:10s} {s['cost'][r]:12.4g} tuned  {s['common_cost'][r]:12.4g} common"
              + (f"  ({100 * s['saving'][r]:.1f} % saved)" if r in s["saving"] else ""))
    print(f"  at most {100 * s['gap_bound']:.1f} % of the tuned {s['objective']} above the "
          "optimum (floors plan bound, docs/tuning.md)")
    unit = s["energy_unit"]
    print(f"paired: {s['paired_diff']:.3g} +/- {s['paired_error']:.2g} {unit} (tolerance "
          f"{s['tolerance']:g}; common width: {s['common_paired_diff']:.3g} +/- "
          f"{s['common_paired_error']:.2g})")
    for name, c in (s["confirmation"] or {}).items():
        print(f"full run at the {name} plan ({c['blocks']} blocks): {c['full_diff']:.3g} +/- "
              f"{c['full_diff_error']:.2g} {unit} ({c['full_parted']} of {c['walkers']} "
              f"walkers parted from float64's trajectories; its error {c['error_ratio']:.2g}x "
              f"the float64 run's, 95 % interval {_interval(c['error_ratio_interval'])}): "
              f"{c['verdict'].upper()}"
              + (f" (a run about {c['longer']:.3g}x longer would resolve it)"
                 if c.get("longer") else ""))
    print(f"{s['plans_judged']} plans judged ({s['plans_computed']} computed by this run) in "
          f"{s['wall_time_s']:.0f} s")
    print(f"\nprecision spec (paste into --precision, or --precision @{res.output}/plan.spec):"
          f"\n{res.spec}")
    print(f"\nresults in {res.output}/ (plan.spec, plan.csv, plans.csv, tune.json, tune.png, "
          "counts.csv)")
    return 0


def _precision_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precision", default=None, metavar="SPEC",
                   help="precision spec of the kernels (same as --set precision=SPEC)")


def _task_options(p: argparse.ArgumentParser, kept: str) -> None:
    """Where the tasks of a sweep or a tune run: a local pool or a Dask cluster."""
    p.add_argument("--workers", type=int, default=None, help="local worker processes (2)")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address tcp://HOST:PORT")
    p.add_argument("--worker-wait", type=float, default=None, metavar="SECONDS",
                   help=f"with --scheduler: stop (keeping {kept}) after this many seconds "
                        "without a worker (default 300)")


_COST_MODEL_HELP = (f"cost model (docs/cost_models.md): {DEFAULT_MODEL} (default), fpga-dsp58, "
                    "fpga-intel27x27, fpga-intel18x19, fpga-virtex4, fpga-lut, gpu-h100, "
                    "gpu:<device.toml> or a registered model")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fixedqmc",
        description="Fixed-point numerics and precision exploration for quantum Monte Carlo.",
    )
    p.add_argument("--version", action="version", version=f"fixedqmc {_version('fixedqmc')}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    runp = sub.add_parser("run", help="run a VMC or DMC calculation from a TOML input")
    runp.add_argument("input", nargs="?", default=None,
                      help="TOML input file (omit to run the built-in defaults)")
    runp.add_argument("--set", action="append", metavar="KEY=VALUE",
                      help="override an input key, e.g. --set method.walkers=200 (repeatable)")
    _precision_option(runp)
    runp.add_argument("--profile", default=None, metavar="PROFILE.json",
                      help="size fixed:W formats and float:m<M> exponents from this range "
                           "profile (fixedqmc profile); float:m<M> needs one")
    runp.set_defaults(func=cmd_run)

    optp = sub.add_parser("optimize", help="optimise the trial function's linear parameters "
                          "(e.g. the electron gas's Jastrow factor) by VMC cycles")
    optp.add_argument("input", nargs="?", default=None, help="TOML input file")
    optp.add_argument("--set", action="append", metavar="KEY=VALUE",
                      help="override an input key, e.g. --set optimize.method=energy")
    optp.set_defaults(func=cmd_optimize)

    prof = sub.add_parser("profile", help="float64 range profile of every kernel variable")
    prof.add_argument("input", nargs="?", default=None, help="TOML input file")
    prof.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an input key")
    _precision_option(prof)
    prof.add_argument("--width", type=int, default=None,
                      help="also show the format of every variable at this word width")
    prof.add_argument("--mantissa", default=None, metavar="M",
                      help="also show every variable's float format at float:m<M> (M, or "
                           "float:m<M>[:rounding][:options]) and the variables no exponent "
                           "width holds (float_range: overflow / subnormal)")
    prof.set_defaults(func=cmd_profile)

    co = sub.add_parser("cost", help="hardware cost of a system's data path at a precision, "
                        "from the operations the emulation counts")
    co.add_argument("input", nargs="?", default=None, help="TOML input file")
    co.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an input key")
    _precision_option(co)
    co.add_argument("--model", default=DEFAULT_MODEL, metavar="MODEL", help=_COST_MODEL_HELP)
    co.add_argument("--stage", default="evaluation",
                    help="evaluation (per walker, default) or move (per single-particle move)")
    co.add_argument("--cycles", type=int, default=1, metavar="K",
                    help="a streaming data path: one evaluation (or move) every K clock "
                         "cycles, each operator shared over them (FPGA models; default 1)")
    co.set_defaults(func=cmd_cost)

    bo = sub.add_parser("bound", help="rigorous error bounds of a system's evaluation at a "
                        "precision beside the errors measured on float64 samples")
    bo.add_argument("input", nargs="?", default=None, help="TOML input file")
    bo.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an input key")
    _precision_option(bo)
    bo.set_defaults(func=cmd_bound)

    sw = sub.add_parser("sweep", help="energy vs word width, float mantissa or float format "
                        "per kernel against a tolerance")
    sw.add_argument("input", nargs="?", default=None, help="TOML input file")
    sw.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an input key")
    _precision_option(sw)
    sw.add_argument("--widths", default=None,
                    help="fixed:W word widths, start:stop[:step] or a comma list (default "
                         "16:48:4 unless --mantissas or --formats is given)")
    sw.add_argument("--mantissas", default=None, metavar="M",
                    help="float:m<M> mantissa widths (1..52), start:stop[:step] or a comma "
                         "list, e.g. 3:23; each variable's exponent bits from the profile")
    sw.add_argument("--mantissa-mode", default=None, metavar="MODE",
                    help="rounding and options of every --mantissas point, as in a float "
                         "format: <rounding>[:<options>], e.g. stochastic, toward_zero, "
                         "nearest_even:nosubnormals,saturate (default nearest_even:"
                         "subnormals,inf)")
    sw.add_argument("--formats", default=None, metavar="FORMATS",
                    help="float formats, comma separated: names (bfloat16, float16, tf32, "
                         "fp8e4m3, fp8e5m2) or float:e<E>m<M>[:rounding][:options]; an option "
                         "after a comma stays with its format (float:e5m2:nearest_even:"
                         "nosubnormals,saturate)")
    sw.add_argument("--kernels", default=None,
                    help="comma list of kernel sets: 'all', a kernel, or kernels joined by '+' "
                         "(one set at the width together; default all)")
    sw.add_argument("--plan", action="append", default=None, metavar="LABEL=SPEC",
                    help="a whole precision spec judged beside the points, paired and by a "
                         "full run, e.g. tc=default=float64,exp=bfloat16 (repeatable)")
    sw.add_argument("--no-confirm-plans", action="store_true",
                    help="judge the --plan specs by the paired estimate only (no full run)")
    sw.add_argument("--no-bounds", action="store_true",
                    help="no error-bound columns (and no predicted widths) for a system "
                         "that can be bounded: its bound runs are scalar code")
    sw.add_argument("--tolerance", type=float, default=None,
                    help="energy tolerance, in --units (default 0.01 in the system's energy "
                         "unit, K for helium)")
    sw.add_argument("--units", default=None,
                    help="energy unit of the tolerance, table and figure (e.g. mK, hartree)")
    sw.add_argument("--mode", default=None, choices=["paired", "full", "both"],
                    help="paired (default), full or both")
    _task_options(sw, "the finished points")
    sw.add_argument("--output", default=None, help="sweep folder (default <output>/sweep)")
    sw.add_argument("--no-float32", action="store_true", help="skip the float32 rows")
    sw.add_argument("--cost-model", default=None, metavar="MODEL",
                    help="the cost beside every point: " + _COST_MODEL_HELP)
    sw.add_argument("--profile-from", default=None, metavar="SWEEP_FOLDER",
                    help="size the formats from a finished sweep's range profile instead of "
                         "this sweep's samples (one set of formats for several sweeps)")
    sw.set_defaults(func=cmd_sweep)

    tu = sub.add_parser("tune", help="the cheapest per-variable formats that keep the energy "
                        "within a tolerance, by a cost model")
    tu.add_argument("input", nargs="?", default=None, help="TOML input file")
    tu.add_argument("--set", action="append", metavar="KEY=VALUE", help="override an input key")
    tu.add_argument("--tolerance", type=float, required=True,
                    help="energy tolerance, in --units (default: the system's energy unit)")
    tu.add_argument("--units", default=None, help="energy unit of the tolerance (e.g. mK)")
    tu.add_argument("--kernels", default=None,
                    help="one kernel set: 'all' (default), a kernel, or kernels joined by '+'")
    tu.add_argument("--model", default=None, metavar="MODEL", help=_COST_MODEL_HELP)
    tu.add_argument("--objective", default=None, metavar="RESOURCE",
                    help="the resource minimised first (default: dsp for FPGA models, seconds "
                         "for GPU ones); the others break ties")
    tu.add_argument("--family", default=None, choices=["fixed", "float", "formats"],
                    help="fixed: word widths fixed:W (default); float: mantissa widths "
                         "float:m<M>, exponent bits from the profile; formats: a float "
                         "format per variable from the ladder --formats")
    tu.add_argument("--formats", default=None, metavar="LIST",
                    help="with --family formats: the float formats a variable may take, "
                         "narrowest first (default fp8e5m2,fp8e4m3,bfloat16,float16,tf32,"
                         "float32)")
    tu.add_argument("--mantissa-mode", default=None, metavar="MODE",
                    help="with --family float: rounding and options of every mantissa "
                         "width, as in a float format (e.g. stochastic, toward_zero:"
                         "nosubnormals; default nearest_even:subnormals,inf)")
    tu.add_argument("--widths", default=None,
                    help="grid of the common width, start:stop[:step] or a comma list "
                         "(default 16:48:2; float 4:30:2; formats: places in the ladder, "
                         "all of them)")
    tu.add_argument("--min-width", type=int, default=None,
                    help="narrowest width tried for any variable (default 8; float 2; "
                         "formats 1)")
    _task_options(tu, "the plans judged")
    tu.add_argument("--output", default=None, help="tune folder (default <output>/tune)")
    tu.add_argument("--no-confirm", action="store_true",
                    help="skip the full VMC runs that confirm the tuned plan")
    tu.add_argument("--confirm-blocks", type=int, default=None, metavar="N",
                    help="production blocks of the confirming runs (default the input's; "
                         "longer: with a float64 run of that length to pair with)")
    tu.set_defaults(func=cmd_tune)

    syst = sub.add_parser("systems", help="list the registered system kinds and their input")
    syst.set_defaults(func=cmd_systems)

    info = sub.add_parser("info", help="print versions, numba threading layer and thread count")
    info.set_defaults(func=cmd_info)

    bench = sub.add_parser("bench", help="run a benchmark and print measured figures and ratios")
    bench.add_argument("what", choices=["numerics", "floats", "tables", "lutexp", "helium",
                                        "h2", "periodic"],
                       help="which benchmark")
    bench.add_argument("--n", type=int, default=None,
                       help="elements (default 1e6; 1e7 for tables)")
    bench.add_argument("--repeats", type=int, default=None,
                       help="timed repeats, best taken (floats: the median; default 5)")
    bench.add_argument("--systems", default=None,
                       help="floats: the systems of the whole-evaluation part, comma-separated, "
                       "of he64, h2x8, heg14 (default all three; 'none': the chain only)")
    bench.add_argument("--atoms", type=int, nargs="+", default=None,
                       help="helium: cluster sizes (default 64 ... 4096)")
    bench.add_argument("--min-time", type=float, default=None,
                       help="helium, h2, periodic: seconds timed per point (whole iterations or "
                       "sweeps, >= 1; default 2)")
    bench.add_argument("--lattice", default=None,
                       help="h2: H2 molecules per lattice edge, comma-separated (default 2: "
                       "8 H2; 2,4 adds 64 H2)")
    bench.add_argument("--walkers", type=int, default=None,
                       help="h2: walkers (default 256); periodic: configurations (default 16); "
                       "floats: walkers of the whole evaluations (default 32)")
    bench.add_argument("--electrons", default=None,
                       help="periodic: electron counts, comma-separated (default "
                            "54,128,250,512,1024)")
    bench.add_argument("--sweeps", type=int, default=None,
                       help="h2: at most this many timed sweeps per point (default 20)")
    bench.add_argument("--rounds", type=int, default=None,
                       help="h2: timed rounds (ours, then PyQMC); ratios are the median over "
                       "the rounds (default 3)")
    bench.add_argument("--precisions", nargs="+", default=None, metavar="SPEC",
                       help="h2, periodic: our precision specs, space-separated (default float64 "
                       "float32 fixed:40; a kernel whose profiled range does not fit a "
                       "fixed width runs in float64, which is printed)")
    bench.add_argument("--scf-cache", default=None,
                       help="h2: folder of the RHF cache (default ~/.cache/fixedqmc/scf)")
    bench.add_argument("--no-pyqmc", action="store_true", help="h2, periodic: skip the PyQMC peer")
    bench.add_argument("--breakdown", action="store_true",
                       help="h2: also print where one of our sweeps spends its time")
    bench.set_defaults(func=cmd_bench)

    add_table_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except FixedQMCError as exc:
        print(f"fixedqmc: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. head, which stopped reading
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("fixedqmc: interrupted (a run or sweep resumes from its last checkpoint)",
              file=sys.stderr)
        return 130
    except Exception:  # not the user's doing: say so, keep the traceback for the report
        import traceback
        traceback.print_exc()
        print("fixedqmc: internal error: this is a bug in fixedqmc; please report it with "
              "the command line and the traceback above", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
