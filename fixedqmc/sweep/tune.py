"""``fixedqmc tune``: the cheapest per-variable formats that keep the energy within a
tolerance, by a cost model of :mod:`fixedqmc.cost` (``docs/tuning.md``).

A sweep answers with one width for a kernel set; :func:`tune` gives each variable of the
set a width of its own.  Every plan is judged as a sweep point is, by the paired estimate
on the float64 reference's samples (:mod:`fixedqmc.sweep.estimates`: same samples, so a
plan costs one re-evaluation) and the sweep's rule, ``|diff| + 2 sigma <= tolerance``; and
priced by the model on the operations the emulation counted (:mod:`fixedqmc.sweep.costs`).
The search (:mod:`fixedqmc.sweep.search`): the common width ``W0`` by the sweep's rule on
``widths``, each variable's floor (its narrowest passing width with the others at ``W0``),
then greedy narrowing in order of cost saved per change of the rule's value.  Widths are
fixed-point word bits (``fixed:W`` per variable, integer bits from the profile) or, with
``family="float"``, mantissa bits (``float:m<M>``, exponent bits from the profile; with
``mantissa_mode``, rounded as it says: ``float:m<M>:stochastic``, as a sweep's
``--mantissa-mode``).

The tuned plan is confirmed by a full VMC run at it against the float64 run (the full
estimate of a sweep, same random numbers walker by walker; the common-width plan's run
beside it), and written as a precision spec to paste into ``--precision``, with its cost
beside the common-width plan's.

Outputs in ``<output>/tune`` (default): ``plan.csv`` (per variable: the common width, the
floor, the tuned width and format), ``plans.csv`` (every plan judged, in order: phase,
variable, width, spec, the paired estimate, the rule's value, passes, the objective's
cost), ``tune.json`` (summary: the spec, costs, gap bound, confirmation, plans judged,
wall time), ``plan.spec`` (the spec, one item per line: ``--precision @plan.spec``),
``tune.png``, and the operations and arrays priced (``counts.csv``, ``arrays.csv``, as a
sweep's).  Every plan judged is saved at once in ``plans/`` (sealed with
the input's hash): an interrupted tune run again resumes, replaying the decisions on the
saved plans; another tolerance or model in the same folder reuses them.  A folder of
another input is refused, and so is a second command in a folder in use.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from fixedqmc import jsonio
from fixedqmc.cost import DEFAULT_MODEL, RESOURCES, cost, totals
from fixedqmc.errors import FixedQMCError, FormatError, PrecisionSpecError
from fixedqmc.numerics.float_format import parse_float_format
from fixedqmc.numerics.policy import spec_items
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.output_folder import claim
from fixedqmc.progress import INTERVAL_S, say
from fixedqmc.qmc.counts import counts_operations, priced
from fixedqmc.run.config import input_hash, load_config
from fixedqmc.run.memory import check_memory
from fixedqmc.state_files import (DamagedStateError, atomic_output, read_json_state,
                                  seal_json, write_atomic)
from fixedqmc.sweep.costs import PRIMARY, sweep_counts
from fixedqmc.sweep.executors import Tasks, dask_client
from fixedqmc.sweep.search import NoPlanError, common_width, gap, tune_plan
from fixedqmc.sweep.sweep import (ENERGY_COLUMNS, MAX_MANTISSA, MAX_WIDTH, META, build_trial,
                                  check_meta, check_options, int_list, invisible,
                                  longer_run, parse_kernels, parse_mantissa_mode,
                                  saved_reference, verdict)


@dataclass(frozen=True)
class Family:
    """What a width means: the precision of a variable at width ``w`` (:meth:`precision`:
    ``template.format(w)``, or the ``w``-th format of a ``ladder``, 1 the first), the
    default grid of the common width, the default narrowest width tried, the widest
    allowed, and a format of the family (to ask a model, before any work, whether it prices
    the family and which resources it reports)."""

    template: str
    grid: str
    low: int
    high: int
    example: str
    ladder: tuple = ()

    def precision(self, w: int) -> str:
        """A variable's precision at width ``w``."""
        return self.ladder[w - 1] if self.ladder else self.template.format(w)

    def describe(self) -> str:
        """The precision of a width ``<W>``, in words for a ladder."""
        if self.ladder:
            return (f"one of {' < '.join(self.ladder)} (<W>: its place, 1 = "
                    f"{self.ladder[0]})")
        return self.template.replace("{}", "<W>")


#: the formats family's ladder by default: named float formats by mantissa bits
DEFAULT_LADDER = ("fp8e5m2", "fp8e4m3", "bfloat16", "float16", "tf32", "float32")


def _ladder(formats) -> Family:
    """The formats family of the ladder ``formats`` (a comma-separated string or a
    sequence of float formats: names or ``float:e<E>m<M>[:rounding][:options]``)."""
    items = [f.strip() for f in formats.split(",")] if isinstance(formats, str) \
        else [str(f) for f in formats]
    for item in items:
        try:
            parse_float_format(item)
        except PrecisionSpecError as exc:
            raise FixedQMCError(f"--formats: {exc}") from None
    if len(items) < 2 or len(set(items)) < len(items):
        raise FixedQMCError(f"--formats {formats!r}: two or more different float formats, "
                            "narrowest first")
    return Family("{}", f"1:{len(items)}", 1, len(items), items[0], tuple(items))


FAMILIES = {"fixed": Family("fixed:{}", "16:48:2", 8, MAX_WIDTH, "Q3.20"),
            "float": Family("float:m{}", "4:30:2", 2, MAX_MANTISSA, "float:e5m10"),
            "formats": _ladder(DEFAULT_LADDER)}


def _family(family: str, mantissa_mode=None, formats=None) -> Family:
    """The :class:`Family` named ``family``; for ``float``, its widths rounded as
    ``mantissa_mode`` says (:func:`~fixedqmc.sweep.sweep.parse_mantissa_mode`); for
    ``formats``, the ladder ``formats`` (comma-separated float formats, narrowest first;
    default :data:`DEFAULT_LADDER`)."""
    if family not in FAMILIES:
        raise FixedQMCError(f"--family {family!r}; allowed: {', '.join(FAMILIES)}")
    mode = parse_mantissa_mode(mantissa_mode)
    if mantissa_mode not in (None, "") and family != "float":
        raise FixedQMCError(f"--mantissa-mode {mantissa_mode!r} rounds mantissa widths: it "
                            "needs --family float")
    if formats not in (None, "") and family != "formats":
        raise FixedQMCError(f"--formats {formats!r} is a ladder of named formats: it needs "
                            "--family formats")
    fam = _ladder(formats) if family == "formats" and formats not in (None, "") \
        else FAMILIES[family]
    return replace(fam, template=f"{fam.template}:{mode}") if mode else fam


def _resources(model: str, family: str, objective: str | None, fam: Family) -> list:
    """The resources of ``model`` in the order plans compare them: ``objective`` (default
    the first of :data:`~fixedqmc.sweep.costs.PRIMARY` the model reports), then the rest
    of ``PRIMARY``; refuses a model that cannot price a product in the family's formats."""
    f = fam.example
    probe = pd.DataFrame({"op": ["mul"], "count": [1.0], "result": [f], "a": [f], "b": [f]})
    try:
        reported = totals(cost(probe, None, model))
    except FixedQMCError as exc:
        raise FixedQMCError(f"--model {model!r} cannot price --family {family} formats: "
                            f"{exc}") from None
    present = [r for r in PRIMARY if r in reported]
    first = objective or present[0]
    if first not in reported:
        raise FixedQMCError(f"--objective {first!r}: model {model!r} reports "
                            f"{', '.join(present)}")
    return [first] + [r for r in present if r != first]


@dataclass
class TuneResult:
    """The tuned plan (``plan``: a row per variable), every plan judged (``log``), the
    summary (``tune.json``) and the folder."""

    plan: pd.DataFrame
    log: pd.DataFrame
    summary: dict
    output: Path

    @property
    def spec(self) -> str:
        """The tuned plan as a precision spec (paste it into ``--precision``)."""
        return self.summary["spec"]


def plan_spec(plan: dict, family: str | Family = "fixed") -> str:
    """A plan ``{"kernel.variable": width}`` as a precision spec: ``default=float64``, each
    kernel at its most common width (the wider on a tie) and the variables that differ;
    ``family``: a name of :data:`FAMILIES` or a :class:`Family`."""
    fam = FAMILIES[family] if isinstance(family, str) else family
    kernels: dict = {}
    for name, w in plan.items():
        kernel, var = name.split(".")
        kernels.setdefault(kernel, {})[var] = w
    items = ["default=float64"]
    for kernel, widths in kernels.items():
        common = max(Counter(widths.values()).items(), key=lambda kv: (kv[1], kv[0]))[0]
        items.append(f"{kernel}={fam.precision(common)}")
        items += [f"{kernel}.{v}={fam.precision(w)}" for v, w in widths.items()
                  if w != common]
    return ",".join(items)


def evaluate_plan(config: dict, spec: str, reference, members: tuple) -> dict:
    """The paired estimate of one plan (a task: runs in a worker process or on a Dask
    worker): ``spec``, ``fits``, ``paired_diff``, ``paired_error``, ``paired_energy``,
    ``formats`` (of the variables of the kernels ``members``), ``overflow_events``,
    ``note``."""
    from fixedqmc.sweep.estimates import paired_estimate, trial_system
    t0 = time.perf_counter()
    try:
        system, narrow = build_trial(config, spec, reference.profile, trial_system)
    except FormatError as exc:  # a profiled range needs more integer bits than w has
        return {"spec": spec, "fits": False, "note": str(exc), "formats": {},
                "overflow_events": 0, "wall_time_s": time.perf_counter() - t0}
    row = {"spec": spec, "fits": True, **paired_estimate(system, reference, bounds=False)}
    row["formats"] = {k: str(v) for k, v in system.formats().items()
                      if k.split(".")[0] in members}
    row["overflow_events"] = int(system.log.total_events)
    row["note"] = f"no exponent width holds {sorted(narrow)}" if narrow else ""
    row["wall_time_s"] = time.perf_counter() - t0
    return row


def plan_value(row: dict) -> float:
    """``|paired_diff| + 2 paired_error`` of an evaluated plan (inf if it does not fit)."""
    if not row["fits"]:
        return math.inf
    return abs(row["paired_diff"]) + 2 * row["paired_error"]


class _Plans:
    """The plans judged so far (``plans/<hash>.json``, sealed) and the judging of new ones
    on the task runner."""

    def __init__(self, out: Path, digest: str, config, reference, members, runner,
                 family: Family, progress):
        self.dir = out / "plans"
        self.dir.mkdir(exist_ok=True)
        self.digest, self.config, self.reference = digest, config, reference
        self.members, self.runner = members, runner
        self.family, self.progress = family, progress
        self.rows: dict = {}
        self.computed = 0
        self._said = -math.inf

    def _path(self, spec: str) -> Path:
        return self.dir / (hashlib.sha256(spec.encode()).hexdigest()[:20] + ".json")

    def row(self, spec: str) -> dict | None:
        if spec not in self.rows and self._path(spec).exists():
            try:
                self.rows[spec] = read_json_state(self._path(spec), self.digest)
            except DamagedStateError as exc:
                say(self.progress, f"{exc}: judging this plan again")
        return self.rows.get(spec)

    def rows_of(self, specs: list) -> list:
        """The evaluated rows of ``specs`` (judging those not saved, in parallel)."""
        todo = list(dict.fromkeys(s for s in specs if self.row(s) is None))
        calls = [(self.config, s, self.reference, self.members) for s in todo]
        for row in self.runner.run(evaluate_plan, calls):
            write_atomic(self._path(row["spec"]), seal_json(row, self.digest).encode())
            self.rows[row["spec"]] = row
            self.computed += 1
            if time.monotonic() - self._said >= INTERVAL_S:
                say(self.progress, f"tune: {len(self.rows)} plans judged ({self.computed} "
                    f"by this run), the last |diff| + 2 sigma {plan_value(row):.3g} in the "
                    "system's unit")
                self._said = time.monotonic()
        return [self.rows[s] for s in specs]

    def evaluate(self, plans: list) -> list:
        """The search's ``evaluate``: the rule's value of each plan."""
        return [plan_value(r) for r in self.rows_of([plan_spec(p, self.family)
                                                     for p in plans])]


def _low_widths(variables, formats: dict, low: int) -> dict:
    """Each variable's narrowest width to try: ``low``, or the integer and sign bits of its
    fixed format (the narrowest word its profiled range fits)."""
    out = {}
    for v in variables:
        need = 1
        try:
            fmt = QFormat.parse(formats[v])
            need = fmt.int_bits + int(fmt.signed)
        except (FormatError, ValueError):
            pass  # a float format: every mantissa width fits
        out[v] = max(low, need, 1)
    return out


def _blind_kernels(plans: _Plans, members, width: int, family: Family) -> list:
    """Kernels whose paired difference is zero (to float64 rounding of the energy,
    :data:`~fixedqmc.sweep.sweep.BLIND_RELATIVE`) with only them at ``width``: they act
    through sampling alone, which the paired estimate cannot judge."""
    specs = [f"default=float64,{k}={family.precision(width)}" for k in members]
    blind = []
    for k, row in zip(members, plans.rows_of(specs)):
        if row["fits"] and invisible(row["paired_diff"], row["paired_error"],
                                     row["paired_energy"]):
            blind.append(k)
    return blind


def _no_plan(plans: _Plans, variables, exc: NoPlanError, family, tolerance, unit, f) -> str:
    """The error of a tolerance no plan meets: the widest width's value and the variables
    that fail alone at it (the others at float64)."""
    specs = [f"default=float64,{v}={family.precision(exc.width)}" for v in variables]
    alone = [(v, plan_value(r)) for v, r in zip(variables, plans.rows_of(specs))]
    failing = [f"{v} ({x * f:.3g} {unit})" for v, x in alone if not x * f <= tolerance]
    who = ("alone at that width, " + ", ".join(failing) + " already fail" if failing else
           "no variable fails alone at that width: together they do")
    return (f"--tolerance {tolerance:g} {unit}: no plan meets it: every variable at the "
            f"widest width, {exc.width}, gives |diff| + 2 sigma = {exc.value * f:.3g} {unit}; "
            f"{who} (try wider --widths or a larger tolerance)")


def tune(path=None, *, tolerance: float, kernels: str = "all", model: str = DEFAULT_MODEL,
         objective: str | None = None, family: str = "fixed", widths=None,
         min_width: int | None = None, sets=(), overrides: dict | None = None, output=None,
         workers: int | None = None, client=None, scheduler: str | None = None,
         worker_wait: float | None = None, progress: bool | None = None,
         units: str | None = None, confirm: bool = True,
         confirm_blocks: int | None = None, mantissa_mode=None,
         formats=None) -> TuneResult:
    """Tune (or resume tuning) the formats of one kernel set of an input; see the module
    docstring and ``docs/tuning.md``.

    ``tolerance`` in ``units`` (default: the system's energy unit); ``kernels``: one kernel
    set (``all``, a kernel, or kernels joined by ``+``); ``model``: a cost model of
    :mod:`fixedqmc.cost`; ``objective``: the resource minimised first (default: the first
    of ``dsp``, ``seconds``, ``luts``, ``memory``, ... the model reports), the others
    breaking ties in that order; ``family``: ``fixed`` (word widths), ``float``
    (mantissa widths; ``mantissa_mode``, e.g. ``"stochastic"``, rounds them as a sweep's
    does) or ``formats`` (a variable takes one of the float formats of the ladder
    ``formats``, narrowest first, default :data:`DEFAULT_LADDER`; a width is a format's
    place in it, 1 the first); ``widths``: the grid of the common width (default
    ``16:48:2``, float ``4:30:2``, formats every place); ``min_width``: the narrowest width
    tried for any variable (default 8, float 2, formats 1); ``confirm``: run the full VMC
    estimate of the tuned plan (and of the common width), ``confirm_blocks`` production blocks long (default: the input's ``method.blocks``; a
    longer run samples its own float64 run of that length to pair with).  ``workers``,
    ``client``,
    ``scheduler``, ``worker_wait`` and ``progress`` as for :func:`~fixedqmc.sweep.sweep`.
    """
    from fixedqmc.run.plan import build_system
    from fixedqmc.sweep.estimates import trial_system
    fam = _family(family, mantissa_mode, formats)
    check_options(tolerance, workers, worker_wait)
    grid = int_list(fam.grid if widths is None else widths, "--widths", "width", 1, fam.high)
    low = fam.low if min_width is None else min_width
    if isinstance(low, bool) or not isinstance(low, int) or not 1 <= low <= min(grid):
        raise FixedQMCError(f"--min-width must be an integer in 1..{min(grid)} (the narrowest "
                            f"of --widths), got {min_width!r}")
    if confirm_blocks is not None and (isinstance(confirm_blocks, bool) or not isinstance(
            confirm_blocks, int) or confirm_blocks < 2):
        raise FixedQMCError(f"--confirm-blocks must be an integer >= 2, got {confirm_blocks!r}")
    if objective is not None and objective not in RESOURCES:
        raise FixedQMCError(f"--objective {objective!r}; allowed: {', '.join(RESOURCES)}")
    resources = _resources(model, family, objective, fam)
    client = dask_client(scheduler) if scheduler is not None else client
    config = load_config(path, sets, overrides)
    out = Path(output or Path(config["output"]) / "tune")
    config = {**config, "output": str(out)}
    lock = claim(out, "tune")
    t0 = time.perf_counter()
    try:
        try:  # input errors: nothing this call wrote is left
            system = build_system({**config, "precision": "float64"})
            (kernel_set,) = parse_kernels([kernels], tuple(system.kernels)) \
                if "," not in kernels else (None,)
            if kernel_set is None:
                raise FixedQMCError(f"--kernels {kernels!r}: tune takes one kernel set "
                                    "('all', a kernel, or kernels joined by '+')")
            members = tuple(system.kernels) if kernel_set == "all" else tuple(
                kernel_set.split("+"))
            if not counts_operations(system):
                raise FixedQMCError(f"system kind {config['system']['kind']!r} does not count "
                                    "its operations (the optional protocol member "
                                    "operation_counts): tune needs them to price plans")
            unit = units or system.units.energy
            f = system.units.factor(unit)
            local = (workers or 2) if client is None else 0
            check_memory(system, config, samples=True, copies=1 + local if local > 1 else 1)
            meta = {"input_hash": input_hash(config), "command": "tune"}
            check_meta(out, meta, "tune")
        except BaseException:
            lock.abandon()
            raise
        digest = hashlib.sha256(jsonio.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]
        write_atomic(out / META, seal_json(meta, digest).encode())
        reference = saved_reference(config, out, system, progress, digest)
        counts = sweep_counts(system, reference.samples)
        variables = [v for v in system.formats() if v.split(".")[0] in members]
        tol = tolerance / f  # in the system's unit, as the estimates are
        with Tasks(workers or 2, client, worker_wait, progress, "tune", "plans") as runner:
            plans = _Plans(out, digest, config, reference, members, runner, fam, progress)
            batch = (workers or 2) if client is None else max(
                2, len(client.scheduler_info().get("workers", {})))
            say(progress, f"tune: {len(variables)} variables of {kernel_set}, "
                f"{model}, tolerance {tolerance:g} {unit}")
            blind = _blind_kernels(plans, members, (low + max(grid)) // 2, fam)
            if blind:
                raise FixedQMCError(
                    f"--kernels {kernel_set!r}: {', '.join(blind)} act(s) only through "
                    "sampling (the paired estimate of a plan cannot see them: zero "
                    "difference); tune the other kernels (e.g. --kernels "
                    f"{'+'.join(k for k in members if k not in blind) or '...'}) and judge "
                    "these with a sweep (its reweighted estimate sees them)")

            formats: dict = {}

            def price(plan: dict) -> tuple:
                """The plan's cost, resources in the order of the objective (inf: it does
                not fit); its formats from the profile, without judging it."""
                spec = plan_spec(plan, fam)
                if spec not in formats:
                    try:
                        trial = build_trial(config, spec, reference.profile, trial_system)[0]
                        formats[spec] = {k: str(v) for k, v in trial.formats().items()
                                         if k.split(".")[0] in members}
                    except FormatError:
                        formats[spec] = None
                if formats[spec] is None:
                    return (math.inf,) * len(resources)
                tot = totals(priced(*counts, formats[spec], model))
                return tuple(tot.get(r, math.inf) for r in resources)

            log: list = []
            try:
                w0, v0 = common_width(variables, grid, plans.evaluate, tol, batch=batch,
                                      log=log)
            except NoPlanError as exc:
                raise FixedQMCError(_no_plan(plans, variables, exc, fam, tolerance, unit,
                                             f)) from None
            say(progress, f"tune: common width {w0} ({fam.precision(w0)}); "
                "floors and greedy search")
            common_spec = plan_spec(dict.fromkeys(variables, w0), fam)
            lows = _low_widths(variables, plans.rows_of([common_spec])[0]["formats"], low)
            res = tune_plan(variables, w0, v0, lows, plans.evaluate, price, tol, log=log)
            spec = plan_spec(res.plan, fam)
            confirmation = None
            if confirm:
                long = config if confirm_blocks in (None, config["method"]["blocks"]) else {
                    **config, "method": {**config["method"], "blocks": confirm_blocks}}
                if long is not config:  # its own float64 run of that length
                    (out / f"confirm_b{confirm_blocks}").mkdir(exist_ok=True)
                paired_with = reference if long is config else saved_reference(
                    long, out / f"confirm_b{confirm_blocks}", system, progress, digest)
                confirmation = _confirm(long, {"tuned": spec, "common": common_spec},
                                        paired_with, runner, tol, f)
        summary = _summary(res, spec, common_spec, plans, counts, model, resources, fam,
                           family, kernel_set, tolerance, unit, f, confirmation, config,
                           time.perf_counter() - t0)
        return _write(out, res, summary, plans, fam, f, counts)
    finally:
        lock.release()


def _confirm_task(config, spec, reference) -> dict:
    from fixedqmc.sweep.estimates import full_estimate, trial_system
    row = full_estimate(config, trial_system(config, spec, reference.profile), reference)
    return {"spec": spec, **row}


def _confirm(config, specs: dict, reference, runner, tol, f) -> dict:
    """The full estimate (a VMC run at the plan, same random numbers as the float64 run) of
    each plan of ``specs`` (``{"tuned": spec, "common": spec}``, run side by side: the
    common-width plan's shows what the same run says of the sweep's own answer), in the
    energy unit of ``f``, with ``error_ratio``, the run's error over the float64 run's (a
    plan that samples worse shows here; ``error_ratio_interval``: its 95 % bootstrap
    interval over walkers), and its ``verdict``: ``passes`` (``|diff| + 2 sigma <=
    tolerance``), ``fails`` (``|diff| - 2 sigma > tolerance``) or ``unresolved`` (the run
    is too short to tell; ``longer``: about how many times longer a run would resolve it,
    when ``|diff| < tolerance``)."""
    rows = {r["spec"]: r for r in runner.run(_confirm_task, [(config, s, reference)
                                                             for s in specs.values()])}
    out = {}
    for name, spec in specs.items():
        row = rows[spec]
        diff, err = abs(row["full_diff"]), row["full_diff_error"]
        judged = verdict(diff, err, tol)
        out[name] = {**{k: v * f if k in ENERGY_COLUMNS else v for k, v in row.items()},
                     "float64_error": reference.error * f,
                     "error_ratio": row["full_error"] / reference.error,
                     "error_ratio_interval": [row["full_error_ratio_low"],
                                              row["full_error_ratio_high"]],
                     "blocks": config["method"]["blocks"],
                     "walkers": config["method"]["walkers"], "verdict": judged,
                     "longer": longer_run(diff, err, tol) if judged == "unresolved"
                     else None}
    return out


def _summary(res, spec, common_spec, plans, counts, model, resources, fam, family,
             kernel_set, tolerance, unit, f, confirmation, config, wall) -> dict:
    tuned, common = plans.rows_of([spec, common_spec])
    costs = {k: totals(priced(*counts, r["formats"], model)) for k, r in
             (("tuned", tuned), ("common", common))}
    return {"spec": spec, "kernels": kernel_set, "family": family,
            "precision": fam.describe(), "ladder": list(fam.ladder), "model": model,
            "objective": resources[0], "resources": resources,
            "tolerance": tolerance, "energy_unit": unit,
            "rule": "|paired diff| + 2 sigma <= tolerance",
            "common_width": res.common, "common_spec": common["spec"],
            "cost": costs["tuned"], "common_cost": costs["common"],
            "saving": {r: 1 - costs["tuned"][r] / costs["common"][r]
                       for r in costs["tuned"] if costs["common"].get(r)},
            "gap_bound": gap(res), "invisible": res.invisible,
            "paired_diff": tuned["paired_diff"] * f, "paired_error": tuned["paired_error"] * f,
            "common_paired_diff": common["paired_diff"] * f,
            "common_paired_error": common["paired_error"] * f,
            **{f"{pre}reweighted_{k}": row.get(f"reweighted_{k}", math.nan) * (
                1 if k == "ess" else f) for pre, row in (("", tuned), ("common_", common))
               for k in ("diff", "error", "ess")},
            "confirmation": confirmation,
            "plans_judged": res.evaluations, "plans_computed": plans.computed,
            "wall_time_s": wall, "input": config}


def _write(out, res, summary, plans, family: Family, f, counts) -> TuneResult:
    tuned_formats = plans.rows_of([summary["spec"]])[0]["formats"]
    plan = pd.DataFrame([{"variable": v, "common_width": res.common,
                          "floor": res.floors[v], "width": w,
                          "precision": family.precision(w), "format": tuned_formats.get(v),
                          "seen": v not in res.invisible}
                         for v, w in res.plan.items()])
    rows = []
    for r in res.log:
        spec = plan_spec(r["plan"], family)
        ev = plans.rows_of([spec])[0]
        rows.append({"phase": r["phase"], "variable": r["variable"], "width": r["width"],
                     "spec": spec, "fits": ev["fits"],
                     "paired_diff": ev.get("paired_diff", math.nan) * f,
                     "paired_error": ev.get("paired_error", math.nan) * f,
                     "value": r["value"] * f, "passes": r["passes"],
                     "accepted": r["accepted"]})
    log = pd.DataFrame(rows)
    with atomic_output(out / "plan.csv") as tmp:
        plan.to_csv(tmp, index=False)
    with atomic_output(out / "plans.csv") as tmp:
        log.to_csv(tmp, index=False)
    for name, frame in zip(("counts.csv", "arrays.csv"), counts):
        with atomic_output(out / name) as tmp:
            frame.to_csv(tmp, index=False)
    write_atomic(out / "tune.json", jsonio.dumps(summary, indent=2).encode())
    write_atomic(out / "plan.spec", plan_file(summary).encode())
    with atomic_output(out / "tune.png") as tmp:
        plot_tune(plan, log, summary, tmp)
    return TuneResult(plan, log, summary, out)


def plan_file(summary: dict) -> str:
    """``plan.spec``: the tuned spec, one item per line, under comments saying what it is
    (``--precision @plan.spec`` reads it back)."""
    s = summary
    head = [f"# fixedqmc tune: {s['kernels']}, {s['precision']}, tolerance {s['tolerance']:g} "
            f"{s['energy_unit']}, model {s['model']} (objective {s['objective']})",
            f"# {s['objective']}: {s['cost'][s['objective']]:.6g} tuned, "
            f"{s['common_cost'][s['objective']]:.6g} at the common width "
            f"{s['common_width']}",
            "# use: --precision @plan.spec (or precision = \"@plan.spec\" in an input)"]
    return "\n".join(head + spec_items(s["spec"])) + "\n"


def plot_tune(plan: pd.DataFrame, log: pd.DataFrame, summary: dict, path=None):
    """Left: each variable's common width, floor and tuned width.  Right: the rule's value
    of every plan judged, in order, by phase, with the tolerance.  Returns the figure."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, max(4.5, 0.18 * len(plan))),
                                      gridspec_kw={"width_ratios": [1.2, 1]})
    y = range(len(plan))
    left.barh(y, plan["common_width"], color="0.85", label="common width")
    left.barh(y, plan["width"], color="tab:blue", height=0.5, label="tuned")
    left.scatter(plan["floor"], y, marker="|", s=80, color="tab:red", label="floor")
    left.set_yticks(list(y))
    left.set_yticklabels(plan["variable"], fontsize=6)
    left.invert_yaxis()
    ladder = summary.get("ladder")
    if ladder:
        left.set_xticks(range(1, len(ladder) + 1))
        left.set_xticklabels(ladder, fontsize=7, rotation=30)
    left.set_xlabel("format (its place in the ladder)" if ladder else "width (bits)")
    left.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
                frameon=False)
    cost = summary["cost"].get(summary["objective"]) if summary["objective"] else None
    common = summary["common_cost"].get(summary["objective"]) if summary["objective"] else None
    left.set_title(f"{summary['objective']}: {cost:.4g} tuned, {common:.4g} at the common width"
                   if cost is not None and common is not None else "tuned widths", fontsize=9,
                   pad=20)
    for phase, marker in (("common", "s"), ("floor", "."), ("greedy", "o")):
        part = log[log["phase"] == phase]
        v = part["value"].where(part["value"] > 0)
        right.scatter(part.index, v, marker=marker, s=14, label=phase)
    acc = log[log["accepted"]]
    right.scatter(acc.index, acc["value"].where(acc["value"] > 0), s=60, facecolors="none",
                  edgecolors="k", label="accepted")
    right.axhline(summary["tolerance"], color="green",
                  label=f"tolerance {summary['tolerance']:g} {summary['energy_unit']}")
    right.set_yscale("log")
    right.set_xlabel("plan judged (in order)")
    right.set_ylabel(f"|diff| + 2 sigma ({summary['energy_unit']})")
    right.legend(fontsize=7)
    right.grid(alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig


__all__ = ["DEFAULT_LADDER", "FAMILIES", "TuneResult", "evaluate_plan", "plan_file", "plan_spec", "plan_value",
           "plot_tune", "tune"]
