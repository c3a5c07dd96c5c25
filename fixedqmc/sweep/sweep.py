"""Bit-width sweeps: which word width (or float mantissa, or float format) does each kernel
need for the energy to stay within a tolerance?  (Seed 001, Table 1 and Sec. 4; HAQMC's
accuracy study, seed 002.)

:func:`sweep` runs, for every kernel set (one kernel, a group of kernels joined by ``+``
such as seed 001's FPGA data path ``distance+exp+contraction+orbitals+derivatives``, or
``all`` of them) and every width W, the system with that set at ``fixed:W`` (formats from
the float64 range profile, :mod:`fixedqmc.qmc.profile`) and every other kernel at
float64, plus a ``float32`` row per kernel set, and estimates the energy change
(:mod:`fixedqmc.sweep.estimates`).  Float formats are swept the same way:

``mantissas`` (``--mantissas 3:23``)
    a point per mantissa width M: the set's kernels at ``float:m<M>``, each variable's
    exponent bits sized from the profile (:func:`fixedqmc.numerics.policy.float_format_for_range`;
    a variable no exponent width holds is named in the point's ``float_range``).  With
    ``mantissa_mode`` (``--mantissa-mode stochastic``, ``toward_zero:nosubnormals``, any
    ``<rounding>[:<options>]`` of a float format) every mantissa point rounds that way,
    ``float:m<M>:<mode>`` (default nearest even with subnormals and infinities).
``formats`` (``--formats bfloat16,float16,tf32,fp8e4m3``)
    a point per float format: a name or ``float:e<E>m<M>[:rounding][:options]``, comma
    separated; a piece that is a format option (``subnormals``, ``nosubnormals``, ``inf``,
    ``saturate``, ``fn``) belongs to the format before it, so
    ``float:e5m2:nearest_even:nosubnormals,saturate,bfloat16`` is two formats (as in a
    precision spec).  Each format is kept under its label: its name if it is a named
    format as given (``bfloat16``), else its canonical spec.

Widths are the default (``16:48:4``) when neither is given; any of the three may be
combined in one sweep (their points share the float64 reference and the float32 rows).
The estimates:

``paired``  same-sample difference and its paired error (fast, sharp);
``full``    a complete VMC run at the trial precision against the float64 run (same
            random numbers walker by walker: the error of the difference is the spread
            of the per-walker differences, small while the trajectories agree);
``both``    the two.

The answer per kernel set: **the narrowest width W such that, at W and at every wider
width of the sweep, |difference| + 2 sigma <= tolerance**, judged by the paired estimate
in ``paired`` mode, by the full estimate in ``full`` mode, and in ``both`` mode by both
(the narrowest width that passes both rules; each rule's own answer is reported too).
None if no width qualifies.  Where the system can be bounded (the optional protocol member
``bound_evaluation``) each answer also has ``predicted_width``: the narrowest width such
that at it and every wider width the rigorous bound on the local energy's error meets the
tolerance on every bounded sample (finite everywhere, largest <= tolerance;
:func:`predicted_width`; None for a set that acts only through sampling, which the local
energy on fixed samples does not see), and ``bound_defects``: the widths whose measured error ever
exceeded its bound (a defect, also warned).  The same rule on the mantissa points gives
``narrowest_mantissa`` (every wider mantissa of the sweep passes too); a format passes
when its own point does (``passing_formats``, ``failing_formats``).  A width too narrow for the integer bits of some profiled range
(e.g. the inverse Slater matrices of a walker near a node) is a point that does not fit:
``fits`` is False, its estimates are NaN and ``note`` names the variable; it fails the
rule, like an energy outside the tolerance.  A kernel set whose paired difference is exactly zero at every
width acts only through sampling (helium's wave-function kernel): the paired estimate
cannot see it, so the paired rule judges it by the reweighted estimate of the same points
(the same samples weighted by ``|psi_trial / psi_64|^2``,
:func:`~fixedqmc.sweep.estimates.reweighted_estimate`); only a set that neither sees gets
no paired answer (``note`` says so; use ``full``).
Every estimate without an answer says why in ``reason_paired`` / ``reason_full`` (and
``note``): invisible, not fitting, or too noisy to resolve the tolerance (with the run
length that would), or failing at the widest width.
The tolerance, table and figure are in the system's energy unit, or in ``units`` (any unit
the system converts to, e.g. mK or hartree for helium).

Points are independent tasks: a local process pool by default, or a Dask cluster (a
``dask.distributed.Client``, or ``scheduler="tcp://host:port"``; while the scheduler has
no worker a status line comes every few seconds, and after ``worker_wait`` seconds the
sweep stops with a clear error).  Each finished point is written at once to
``<output>/points/``; re-running an interrupted sweep skips finished points, and the final
table is the same as an uninterrupted run's.  A folder holding a sweep of a different
input is refused, and so is a second command into a folder in use (it is locked,
:mod:`fixedqmc.output_folder`).  The state files (``meta.json``, ``reference.pkl``, the
points) are sealed with their checksum and the sweep's hash (:mod:`fixedqmc.state_files`):
a damaged point or reference is computed again (a line says so), a damaged ``meta.json``
is named in a clear error.  A point's file is ``points/<kernels>_<tail>.json`` with tail
``w24`` (width), ``float32``, ``m07`` (mantissa; ``m07_<mode>`` with a mantissa mode) or
``f_<label>`` (format; in both, characters other than letters, digits, ``_.+-`` as ``_``),
so a folder of a width sweep
resumes as before, and adding mantissas or formats to a finished sweep computes only
the new points.  Before anything is written the memory the sweep
needs (the float64 reference and its samples, held by this process and every local worker)
is compared with what the machine has (:mod:`fixedqmc.run.memory`).  Outputs: ``sweep.parquet``, ``sweep.csv``,
``answer.json`` (summary) and ``sweep.png`` (energy difference vs width on a log axis with
the tolerance band; mantissa and format points in a second panel vs mantissa bits).

Table columns (one row per point): ``kernels``, ``width`` (fixed:W points), ``mantissa``
(float:m<M> points), ``mantissa_mode`` (their canonical ``<rounding>:<options>``, None for
the default), ``format`` (format points: the label), ``precision`` (the spec
run), ``fits``, the estimates (``paired_diff``, ``paired_error``, ``paired_energy``, ...;
``full_*``, with ``full_parted``: the walkers whose trajectory parted from float64's),
the bound columns of a system that can be bounded (paired points: ``bound_mean``,
``bound_max``, ``bound_error_max``, ``bound_unbounded``, ``bound_violations``,
``bound_samples``, :func:`~fixedqmc.sweep.estimates.bound_columns`, on every sample),
``formats`` (JSON: every variable of the set and its format), ``overflow_events``,
``overflow_vars``, ``float_events`` (JSON: per float-format variable, its nonzero counts of
``underflow`` to zero, ``subnormal`` results and ``nan``), ``float_range`` (JSON:
variables whose profiled range no exponent width holds, mantissa points), ``note``,
``wall_time_s``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc import jsonio
from fixedqmc.cost import DEFAULT_MODEL
from fixedqmc.cost import cost_model as find_cost_model
from fixedqmc.errors import FixedQMCError, FloatRangeWarning
from fixedqmc.numerics.float_format import NAMED_FORMATS, FloatFormat, parse_float_format
from fixedqmc.numerics.policy import parse_precision, sized_float, spec_items
from fixedqmc.numerics.qformat import MAX_WORD_BITS
from fixedqmc.output_folder import claim
from fixedqmc.progress import progress as progress_bar
from fixedqmc.progress import say
from fixedqmc.run.config import input_hash, load_config
from fixedqmc.run.memory import check_memory
from fixedqmc.state_files import (DamagedStateError, atomic_output, read_json_state,
                                  read_state, seal_json, write_atomic, write_state)
from fixedqmc.sweep.costs import (answer_costs, check_model, plot_pareto, point_costs,
                                  sweep_counts)
from fixedqmc.sweep.executors import Tasks, dask_client

MODES = ("paired", "full", "both")
MAX_WIDTH = MAX_WORD_BITS  # the same range as fixed:W in a precision spec
MAX_MANTISSA = 52  # the same range as float:m<M>
#: the widths of a sweep given neither widths, mantissas nor formats
DEFAULT_WIDTHS = "16:48:4"


@dataclass(frozen=True)
class Point:
    """One sweep point: a kernel set at one precision, given by at most one of ``width``
    (``fixed:W``), ``mantissa`` (``float:m<M>``: exponent bits from the profile) and
    ``format`` (a float format's label, :func:`format_label`); none of them: float32.
    ``mantissa_mode``: a mantissa point's rounding and options (:func:`parse_mantissa_mode`;
    "" for the default).  A plan is a point with a whole precision ``spec`` and kernels
    ``plan:<label>`` (:func:`plan_point`)."""

    kernels: str  # a kernel name, names joined by "+", "all", or "plan:<label>"
    width: int | None = None
    mantissa: int | None = None
    format: str | None = None
    mantissa_mode: str = ""
    spec: str = ""  # a plan's precision spec
    confirm: bool = True  # a plan: confirmed by a full run

    @classmethod
    def of_row(cls, row: dict) -> Point:
        """The point of a table row (or a saved point's; one of a width sweep written
        before mantissas and formats has neither key)."""
        def num(x):
            return None if x is None or (isinstance(x, float) and math.isnan(x)) else int(x)
        if isinstance(row.get("plan"), str):
            return plan_point(row["plan"], row["precision"], row.get("plan_confirmed", True))
        fmt, mode = row.get("format"), row.get("mantissa_mode")
        return cls(row["kernels"], num(row.get("width")), num(row.get("mantissa")),
                   fmt if isinstance(fmt, str) else None, mode if isinstance(mode, str) else "")

    @property
    def kind(self) -> str:
        """``width``, ``mantissa``, ``format``, ``plan`` or ``float32``."""
        return ("width" if self.width is not None else "mantissa" if self.mantissa is not None
                else "format" if self.format is not None else "plan" if self.spec
                else "float32")

    @property
    def members(self) -> tuple[str, ...]:
        """The kernels of the set ("all" for every kernel)."""
        return tuple(self.kernels.split("+"))

    @property
    def label(self) -> str:
        """The precision of the set's kernels: ``fixed:W``, ``float:m<M>[:<mode>]``, the
        format's label or ``float32``."""
        mode = f":{self.mantissa_mode}" if self.mantissa_mode else ""
        return {"width": f"fixed:{self.width}", "mantissa": f"float:m{self.mantissa}{mode}",
                "format": self.format, "float32": "float32",
                "plan": self.kernels.removeprefix("plan:")}[self.kind]

    @property
    def precision(self) -> str:
        if self.spec:
            return self.spec
        p = self.label
        if self.kernels == "all":
            return p
        return "default=float64," + ",".join(f"{k}={p}" for k in self.members)

    @property
    def key(self) -> str:
        """The point's file name in ``points/`` (without ``.json``): ``<kernels>_w24``,
        ``_float32``, ``_m07`` (``_m07_<mode>``) or ``_f_<label>`` (width sweeps' keys are
        as ever); a plan's ``plan_<label>_<hash of its spec>`` (``_paired`` when it is not
        confirmed by a full run)."""
        kind = self.kind
        if kind == "plan":
            digest = hashlib.sha256(self.spec.encode()).hexdigest()[:12]
            return f"plan_{self.label}_{digest}" + ("" if self.confirm else "_paired")
        mode = "_" + _file_safe(self.mantissa_mode) if self.mantissa_mode else ""
        tail = (f"w{self.width:02d}" if kind == "width" else
                f"m{self.mantissa:02d}{mode}" if kind == "mantissa" else
                "f_" + _file_safe(self.format) if kind == "format" else "float32")
        return f"{self.kernels}_{tail}"


def _file_safe(text: str) -> str:
    """``text`` with characters other than letters, digits and ``_.+-`` as ``_``."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def int_list(text, option: str, noun: str, lo: int, hi: int) -> list[int]:
    """``"16:48:2"`` (start:stop:step, inclusive), ``"24,32,40"`` or a list of ints, each
    in lo..hi; errors name ``option``."""
    if isinstance(text, str):
        try:
            if ":" in text:
                parts = [int(x) for x in text.split(":")]
                if len(parts) not in (2, 3):
                    raise ValueError
                start, stop, step = parts[0], parts[1], parts[2] if len(parts) == 3 else 1
                if step <= 0:
                    raise ValueError
                values = list(range(start, stop + 1, step))
            else:
                values = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise FixedQMCError(f"{option}: {text!r} is not start:stop[:step] or a comma list "
                                "of integers") from None
    else:
        try:
            values = [int(w) for w in text]
        except (TypeError, ValueError):
            raise FixedQMCError(f"{option}: {text!r} is not a list of integers") from None
    if not values:
        raise FixedQMCError(f"{option} {text!r} gives no {noun}")
    bad = [w for w in values if not lo <= w <= hi]
    if bad:
        raise FixedQMCError(f"{option.lstrip('-')} must lie in {lo}..{hi} bits; got {bad}")
    return sorted(set(values))


def parse_widths(text) -> list[int]:
    """``"16:48:2"`` (start:stop:step, inclusive), ``"24,32,40"`` or a list of ints."""
    return int_list(text, "--widths", "width", 1, MAX_WIDTH)


def parse_mantissas(text) -> list[int]:
    """Mantissa widths M of ``float:m<M>`` points: ``"3:23"`` (start:stop[:step],
    inclusive), ``"7,10,23"`` or a list of ints, each in 1..52."""
    return int_list(text, "--mantissas", "mantissa width", 1, MAX_MANTISSA)


def _mode(rest: list, text: str) -> str:
    """The canonical ``<rounding>:<options>`` of a ``float:m<M>`` precision whose
    ``[:rounding][:options]`` parts are ``rest`` (of ``text``, named in the errors)."""
    return str(sized_float(1, rest, text)).split(":", 2)[2]


#: the canonical mode of a ``float:m<M>`` precision given no rounding or options
DEFAULT_MANTISSA_MODE = _mode([], "")


def parse_mantissa_mode(text) -> str:
    """The rounding and options of every mantissa point, as in a float format:
    ``<rounding>[:<options>]`` (``stochastic``, ``toward_zero:nosubnormals,saturate``) or
    only options (``nosubnormals``); None or "" for the default (nearest even, subnormals,
    infinities).  Returns the canonical ``<rounding>:<options>`` ("" for the default, so
    default points keep their keys)."""
    if text is None or text == "":
        return ""
    if not isinstance(text, str):
        raise FixedQMCError(f"--mantissa-mode: {text!r} is not a text such as "
                            "'stochastic' or 'toward_zero:nosubnormals'")
    try:
        mode = _mode(text.strip().split(":"), text)
    except FixedQMCError as exc:
        raise FixedQMCError(f"--mantissa-mode {text!r}: {exc} (a rounding and/or options of "
                            "a float format, e.g. stochastic or toward_zero:nosubnormals)"
                            ) from None
    return "" if mode == DEFAULT_MANTISSA_MODE else mode


def format_label(fmt: FloatFormat) -> str:
    """A float format's label in a sweep: its name if it is a named format exactly
    (``bfloat16``; not ``float32`` and ``float64``, which as precisions mean the machine's
    arithmetic), else its canonical spec (every option spelled out)."""
    name = next((k for k, f in NAMED_FORMATS.items() if f == fmt), None)
    return name if name is not None and name not in ("float32", "float64") else fmt.spec


def parse_formats(text) -> list[str]:
    """Float formats of format points, as labels (:func:`format_label`; duplicates
    dropped, order kept): a comma list of names or ``float:e<E>m<M>[:rounding][:options]``
    specs, where a piece that is a format option (``subnormals``, ``nosubnormals``, ``inf``,
    ``saturate``, ``fn``) belongs to the format before it (``float:e5m2:nearest_even:
    nosubnormals,saturate,bfloat16`` is two formats); or a list of specs or
    :class:`FloatFormat` objects."""
    if isinstance(text, str):
        items = [item for item in spec_items(text) if item]
    elif isinstance(text, FloatFormat):
        items = [text]
    else:
        try:
            items = list(text)
        except TypeError:
            raise FixedQMCError(f"--formats: {text!r} is not a comma list of float formats"
                                ) from None
    if not items:
        raise FixedQMCError(f"--formats {text!r} gives no float format")
    labels = []
    for item in items:
        if isinstance(item, FloatFormat):
            labels.append(format_label(item))
            continue
        if not isinstance(item, str):
            raise FixedQMCError(f"--formats: {item!r} is not a float format spec")
        if item.strip().startswith("float:m"):
            raise FixedQMCError(f"--formats: {item!r} has no exponent width; sweep mantissa "
                                "widths with --mantissas (exponent bits from the profile)")
        try:
            labels.append(format_label(parse_float_format(item)))
        except FixedQMCError as exc:
            raise FixedQMCError(
                f"--formats: {exc} (formats are comma separated; a format's options stay "
                "with it: float:e5m2:nearest_even:nosubnormals,saturate)") from None
    return list(dict.fromkeys(labels))


def parse_kernels(text, kernel_names) -> list[str]:
    """Kernel sets, comma separated: ``all``, a name of the system's kernels
    (``kernel_names``) or a group of them joined by ``+`` (put at the width together)."""
    sets = [k.strip() for k in text.split(",")] if isinstance(text, str) else list(text)

    def valid(k):
        members = k.split("+")
        return k == "all" or (set(members) <= set(kernel_names)
                              and len(set(members)) == len(members))
    bad = [k for k in sets if not valid(k)]
    if bad or not sets:
        raise FixedQMCError(f"kernel set(s) {bad or text!r} not in this system: a set is "
                            f"'all', one of {', '.join(kernel_names)}, or distinct ones "
                            "joined by '+'")
    return list(dict.fromkeys(sets))


def plan_point(label: str, spec: str, confirm: bool = True) -> Point:
    """The point of a plan: ``spec`` (a precision spec) under ``label``; ``confirm``: also
    a full run."""
    return Point(f"plan:{label}", spec=spec, confirm=bool(confirm))


def parse_plans(plans, kernels: dict) -> dict:
    """``{label: precision spec}`` of a sweep's plans, checked: a label of letters, digits
    and ``_.+-``; a spec that parses and names only kernels and variables of the system
    (``kernels``: its :class:`KernelSpec` by name).  ``plans``: a dict, or ``LABEL=SPEC``
    strings (``--plan``)."""
    if not plans:
        return {}
    if not isinstance(plans, dict):
        items = [plans] if isinstance(plans, str) else list(plans)
        bad = [p for p in items if not isinstance(p, str) or "=" not in p]
        if bad:
            raise FixedQMCError(f"--plan {bad[0]!r}: give LABEL=SPEC, e.g. "
                                "tc=default=float64,exp=bfloat16")
        pairs = [p.split("=", 1) for p in items]
        if len({label for label, _ in pairs}) < len(pairs):
            raise FixedQMCError(f"--plan: a label given twice in {items}")
        plans = dict(pairs)
    known = {k: [v.name for v in spec.variables] for k, spec in kernels.items()}
    out = {}
    for label, spec in plans.items():
        if not isinstance(label, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", label):
            raise FixedQMCError(f"plan label {label!r}: use letters, digits and _.+- only")
        try:
            parse_precision(spec).check_kernels(known)
        except FixedQMCError as exc:
            raise FixedQMCError(f"plan {label!r}: {exc}") from None
        out[label] = spec.strip()
    return out


def verdict(diff: float, error: float, tolerance: float) -> str:
    """``passes`` (``|diff| + 2 error <= tolerance``), ``fails`` (``|diff| - 2 error >
    tolerance``) or ``unresolved`` (the estimate is too noisy to tell)."""
    diff = abs(diff)
    return ("passes" if diff + 2 * error <= tolerance else
            "fails" if diff - 2 * error > tolerance else "unresolved")


# ------------------------------------------------------------------------- one point --
def run_point(config: dict, point: Point, reference, mode: str, bounds: bool = True) -> dict:
    """Estimate one point (a task: runs in a worker process or on a Dask worker);
    ``bounds``: with the bound columns of a system that can be bounded."""
    from fixedqmc.errors import FormatError
    from fixedqmc.sweep.estimates import full_estimate, paired_estimate, trial_system

    t0 = time.perf_counter()
    row = {"kernels": point.kernels, "width": point.width, "mantissa": point.mantissa,
           "mantissa_mode": point.mantissa_mode or None, "format": point.format,
           "plan": point.label if point.kind == "plan" else None,
           "precision": point.precision if point.kind != "float32" else "float32"}
    if point.kind == "plan":  # paired, and confirmed by a full run whatever the mode
        row["plan_confirmed"] = point.confirm
        mode = "both" if point.confirm else "paired"
    try:
        system, narrow = build_trial(config, point.precision, reference.profile,
                                       trial_system)
    except FormatError as exc:  # a profiled range needs more integer bits than W has
        row.update({c: math.nan for cols in ESTIMATE_COLUMNS.values() for c in cols})
        row.update({"fits": False, "note": str(exc), "formats": "{}", "overflow_events": 0,
                    "overflow_vars": "{}", "float_events": "{}", "float_range": "{}",
                    "wall_time_s": time.perf_counter() - t0})
        return row
    row["fits"] = True
    row["float_range"] = json.dumps(narrow)
    if mode in ("paired", "both"):
        row.update(paired_estimate(system, reference, bounds=bounds))
    if mode in ("full", "both"):
        row.update(full_estimate(config, system, reference))
    fixed = {k: v for k, v in system.formats().items()
             if point.kernels == "all" or point.kind == "plan"
             or k.split(".")[0] in point.members}
    row["formats"] = json.dumps(fixed)
    row["overflow_events"] = int(system.log.total_events)
    hot = {k: int(v) for k, v in system.log.events.items() if v}
    row["overflow_vars"] = json.dumps(hot)
    row["float_events"] = json.dumps({k: {kind: int(n) for kind, n in kinds.items() if n}
                                      for k, kinds in system.log.kinds.items()
                                      if any(kinds.values())})
    row["wall_time_s"] = time.perf_counter() - t0
    return row


def build_trial(config, precision, profile, build):
    """The trial system and ``{"kernel.variable": "overflow" | "subnormal" | ...}`` of the
    variables whose profiled range no exponent width holds (``float:m<M>`` points; their
    :class:`FloatRangeWarning` is recorded in the row, not printed; other warnings pass)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FloatRangeWarning)
        system = build(config, precision, profile)
    narrow = {}
    for w in caught:
        if issubclass(w.category, FloatRangeWarning):
            narrow.update(getattr(w.message, "variables", {}))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return system, narrow


# ----------------------------------------------------------------------------- sweep --
@dataclass
class SweepResult:
    """The sweep table (one row per point), the answer per kernel set and the folder."""

    table: pd.DataFrame
    answer: pd.DataFrame
    summary: dict
    output: Path


ESTIMATE_COLUMNS = {"paired": ("paired_diff", "paired_error"),
                    "full": ("full_diff", "full_diff_error"),
                    "reweighted": ("reweighted_diff", "reweighted_error")}


#: paired differences below this fraction of the energy are float64 rounding of the
#: energy sums (a kernel set that does not enter the local energy, evaluated in another
#: order), not an effect of the trial precision
BLIND_RELATIVE = 2.0**-40


#: the columns that say which precision a point is (float32: none of them)
POINT_COLUMNS = ("width", "mantissa", "format")


def _trial_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of fixed widths, mantissas and formats (not float32)."""
    mask = pd.Series(False, index=rows.index)
    for c in POINT_COLUMNS:
        if c in rows:
            mask |= rows[c].notna()
    return rows[mask]


def rule_value(rows: pd.DataFrame, estimate: str) -> pd.Series:
    """What the answer rule compares with the tolerance, ``|diff| + 2 sigma`` of one
    estimate (``paired`` or ``full``), per row."""
    d, e = ESTIMATE_COLUMNS[estimate]
    return rows[d].abs() + 2 * rows[e]


def check_options(tolerance, workers, worker_wait) -> None:
    """The options a sweep and a tune share: a positive energy ``tolerance``, ``workers``
    an integer >= 1 and ``worker_wait`` seconds >= 0 (None: the defaults)."""
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise FixedQMCError(f"--tolerance must be a positive energy, got {tolerance!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise FixedQMCError(f"--workers must be an integer >= 1, got {workers!r}")
    if worker_wait is not None and not (isinstance(worker_wait, (int, float))
                                        and math.isfinite(worker_wait) and worker_wait >= 0):
        raise FixedQMCError(f"--worker-wait must be a number of seconds >= 0, got "
                            f"{worker_wait!r}")


def invisible(diff, error, energy):
    """Whether a paired difference and its error are zero up to float64 rounding of the
    energy (:data:`BLIND_RELATIVE` of ``|energy|``): values or pandas Series alike."""
    return abs(diff) + error <= BLIND_RELATIVE * abs(energy)


def longer_run(diff: float, error: float, tolerance: float) -> float | None:
    """About how many times longer a run would resolve ``|diff| + 2 sigma <= tolerance``
    (errors fall as 1/sqrt(samples)); None when ``|diff|`` is not below the tolerance or
    the run already resolves it."""
    diff = abs(diff)
    if diff < tolerance and 2 * error > tolerance - diff:
        return (2 * error / (tolerance - diff)) ** 2
    return None


def estimate_blind(rows: pd.DataFrame, estimate: str = "paired") -> bool:
    """True when one estimate's difference and error (``paired`` or ``reweighted``) are
    zero at every fixed width (and mantissa and format), up to float64 rounding of the
    energy (:data:`BLIND_RELATIVE` of ``|paired_energy|``, where the rows have it; exactly
    zero otherwise): the estimate cannot see the kernel set."""
    d, e = ESTIMATE_COLUMNS[estimate]
    fixed = _trial_rows(rows).dropna(subset=[d])  # points that fit
    tiny = invisible(fixed[d], fixed[e],
                     fixed["paired_energy"] if "paired_energy" in fixed else 0.0)
    return bool(len(fixed)) and bool(tiny.all())


def paired_blind(rows: pd.DataFrame) -> bool:
    """The paired estimate cannot see the kernel set (:func:`estimate_blind`): it acts
    only through sampling."""
    return estimate_blind(rows, "paired")


def paired_judge(rows: pd.DataFrame) -> str | None:
    """The estimate that judges a kernel set's points in ``paired`` mode: ``paired``;
    where that cannot see the set (it acts only through sampling, e.g. helium's
    wave-function kernel), ``reweighted`` (the same samples weighted by
    ``|psi_trial / psi_64|^2``: what sampling at the trial does), if the points have it
    and it sees the set; None when neither does (or no point has the reweighted estimate:
    points saved before it)."""
    if not paired_blind(rows):
        return "paired"
    has = "reweighted_diff" in rows and _trial_rows(rows).reweighted_diff.notna().any()
    return "reweighted" if has and not estimate_blind(rows, "reweighted") else None


def _judges(rows: pd.DataFrame, mode: str) -> list:
    """The estimates that judge ``mode`` (``paired``, ``full`` or ``both``) on these rows
    (:func:`paired_judge` for the paired one; None where it cannot see the set)."""
    return [paired_judge(rows) if m == "paired" else m
            for m in (("paired", "full") if mode == "both" else (mode,))]


def narrowest_width(rows: pd.DataFrame, tolerance: float, mode: str,
                    column: str = "width") -> int | None:
    """The rule of the module docstring on one kernel set's fixed rows, for one estimate
    (``paired`` or ``full``; ``both``: the wider of the two answers, None if either is);
    ``column="mantissa"``: the same rule on the mantissa points (:func:`narrowest_mantissa`)."""
    if mode == "both":
        ws = [narrowest_width(rows, tolerance, m, column) for m in ("paired", "full")]
        return None if None in ws else max(ws)
    (mode,) = _judges(rows, mode)
    if mode is None or column not in rows:
        return None
    fixed = rows.dropna(subset=[column]).sort_values(column)
    return _narrowest_passing(fixed[column], rule_value(fixed, mode) <= tolerance)


def _narrowest_passing(widths: pd.Series, ok: pd.Series) -> int | None:
    """The narrowest of ``widths`` (ascending) at which, and at every wider one, ``ok``
    holds; None if the widest fails."""
    best = None
    for w, good in zip(widths.to_numpy()[::-1], ok.to_numpy()[::-1]):
        if not good:
            break
        best = int(w)
    return best


def predicted_width(rows: pd.DataFrame, tolerance: float, column: str = "width"
                    ) -> int | None:
    """The narrowest width of one kernel set's fixed rows such that, at it and at every
    wider width, the bound on the local energy's error is finite on every bounded sample
    and at most ``tolerance`` (``bound_unbounded == 0`` and ``bound_max <= tolerance``);
    None without bound columns or if the widest width does not qualify.
    ``column="mantissa"``: the same rule on the ``float:m<M>`` points."""
    if "bound_max" not in rows or column not in rows:
        return None
    fixed = rows.dropna(subset=[column]).sort_values(column)
    return _narrowest_passing(fixed[column],
                              (fixed.bound_max <= tolerance) & (fixed.bound_unbounded == 0))


def bound_defects(rows: pd.DataFrame) -> list:
    """The precisions of one kernel set's rows whose measured error exceeded its bound on
    some sample (``bound_violations > 0``): defects of the bound context."""
    if "bound_violations" not in rows:
        return []
    return rows.loc[rows.bound_violations.fillna(0) > 0, "precision"].tolist()


def narrowest_mantissa(rows: pd.DataFrame, tolerance: float, mode: str) -> int | None:
    """The narrowest mantissa M of one kernel set's ``float:m<M>`` rows such that at M and
    every wider mantissa of the sweep ``|diff| + 2 sigma <= tolerance`` (the rule of
    :func:`narrowest_width`)."""
    return narrowest_width(rows, tolerance, mode, "mantissa")


def format_results(rows: pd.DataFrame, tolerance: float, mode: str) -> dict | None:
    """``{format label: passes}`` of one kernel set's format rows: a format passes when
    ``|diff| + 2 sigma <= tolerance`` at its own point (by every estimate of ``both``);
    None when the paired estimate judges and neither it nor the reweighted one can see
    the kernel set (:func:`paired_judge`)."""
    judges = _judges(rows, mode)
    if None in judges:
        return None
    if "format" not in rows:
        return {}
    fr = rows.dropna(subset=["format"])
    ok = pd.Series(True, index=fr.index)
    for m in judges:
        ok &= rule_value(fr, m) <= tolerance
    return {str(f): bool(g) for f, g in zip(fr["format"], ok)}


def sweep(path=None, *, widths=None, kernels="all", tolerance: float = 0.01,
          mode: str = "paired", sets=(), overrides: dict | None = None, output=None,
          workers: int | None = None, client=None, scheduler: str | None = None,
          float32: bool = True, progress: bool | None = None, units: str | None = None,
          profile=None, worker_wait: float | None = None, mantissas=None,
          formats=None, cost_model: str = DEFAULT_MODEL, mantissa_mode=None,
          plans=None, confirm_plans: bool = True, bounds: bool = True) -> SweepResult:
    """Run (or resume) a bit-width sweep of an input; see the module docstring.

    ``widths`` (:func:`parse_widths`; default ``"16:48:4"`` when neither ``mantissas`` nor
    ``formats`` is given, else none), ``mantissas`` (:func:`parse_mantissas`, e.g.
    ``"3:23"``: points at ``float:m<M>``) and ``formats`` (:func:`parse_formats`, e.g.
    ``"bfloat16,float16,tf32,fp8e4m3"`` or a list) choose the points of every kernel set;
    any combination works.  ``mantissa_mode`` (:func:`parse_mantissa_mode`, e.g.
    ``"stochastic"``): the rounding and options of the mantissa points.  All are checked
    before any work.

    ``profile``: size every point's formats from this range profile (a
    :class:`~fixedqmc.qmc.profile.RangeProfile`, or the folder of a finished sweep, whose
    ``answer.json`` holds its profile) instead of this sweep's own samples: one set of
    formats for several sweeps, as seed 001's Table 1 sizes its formats once for every
    walker count (and, with formats compiled in, one compilation per width).  Values of
    these samples outside it are counted overflow events of the points.

    ``worker_wait``: on a Dask cluster, the seconds to wait while the scheduler has no
    worker (default :data:`~fixedqmc.sweep.executors.WORKER_WAIT_S`) before the sweep stops with a clear error; the
    finished points are kept, and the same call resumes.

    ``plans`` (``--plan LABEL=SPEC``): whole precision specs judged beside the points,
    ``{label: spec}`` (e.g. ``{"tc": "default=float64,exp=bfloat16,orbitals=float16"}``)
    or a list of ``LABEL=SPEC``.  A plan is judged by the paired estimate and, whatever
    ``mode``, confirmed by a full run (a VMC run at the plan against the float64 run, the
    same random numbers): ``summary["plans"][label]`` holds the estimates (and the
    reweighted one), their rule values and verdicts (``passes``, ``fails`` or
    ``unresolved``) and ``passes`` (paired and full pass; :func:`plan_verdicts`); its row
    in the table has kernels ``plan:<label>``.  A plan's point is saved
    under its label and a hash of its spec, so a changed spec is judged anew.
    ``confirm_plans=False`` (``--no-confirm-plans``): the plans get the paired estimate
    only (``full_verdict`` ``not run``, ``passes`` None), when a full run at the plan
    would take too long.

    ``bounds=False`` (``--no-bounds``): no bound columns (and no predicted widths) even
    for a system that can be bounded, whose bound runs (scalar code) may cost several of
    its evaluations per point.

    ``cost_model``: the model of :mod:`fixedqmc.cost` that prices every point at its
    formats (:mod:`fixedqmc.sweep.costs`; default FPGA DSP48E2).

    ``tolerance`` is in ``units`` (default: the system's energy unit, K for helium).
    ``output`` defaults to ``<input output>/sweep``.  ``workers``: local worker processes
    (default 2, 1 = in this process).  ``progress``: None (default) progress bars when
    stderr is a terminal, else plain lines for the float64 reference and the points
    (:mod:`fixedqmc.progress`); False: none.
    """
    from fixedqmc.run.plan import build_system
    if mode not in MODES:
        raise FixedQMCError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    check_options(tolerance, workers, worker_wait)
    if widths is None and mantissas is None and formats is None and not plans:
        widths = DEFAULT_WIDTHS
    widths = [] if widths is None else parse_widths(widths)
    mantissas = [] if mantissas is None else parse_mantissas(mantissas)
    formats = [] if formats is None else parse_formats(formats)
    mantissa_mode = parse_mantissa_mode(mantissa_mode)
    find_cost_model(cost_model)  # an unknown model, before any work
    client = dask_client(scheduler) if scheduler is not None else client
    config = load_config(path, sets, overrides)
    out = Path(output or Path(config["output"]) / "sweep")
    config = {**config, "output": str(out)}  # what a system writes (a mean-field cache) too
    sizing = _profile(profile)
    lock = claim(out, "sweep")
    try:
        try:  # input errors: nothing this call wrote is left
            system = build_system({**config, "precision": "float64"})
            kernel_sets = parse_kernels(kernels, tuple(system.kernels))
            plans = parse_plans(plans, system.kernels)
            unit = units or system.units.energy
            system.units.factor(unit)  # one the system converts to
            local = (workers or 2) if client is None else 0  # processes of the local pool
            check_memory(system, config, samples=True, copies=1 + local if local > 1 else 1)
            meta = {"input_hash": input_hash(config), "mode": mode}
            if sizing is not None:
                meta["profile_hash"] = hashlib.sha256(jsonio.dumps(sizing.to_json()).encode()
                                                      ).hexdigest()[:16]
            check_meta(out, meta)
        except BaseException:
            lock.abandon()
            raise
        digest = hashlib.sha256(jsonio.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]
        (out / "points").mkdir(exist_ok=True)
        write_atomic(out / META, seal_json(meta, digest).encode())
        reference = saved_reference(config, out, system, progress, digest)
        if sizing is not None:
            reference = replace(reference, profile=sizing)
        counts = sweep_counts(system, reference.samples)
        if counts is not None:
            check_model(cost_model, counts, system.formats())
        tasks = [Point(k, w) for k in kernel_sets for w in widths]
        tasks += [Point(k, mantissa=m, mantissa_mode=mantissa_mode) for k in kernel_sets
                  for m in mantissas]
        tasks += [Point(k, format=f) for k in kernel_sets for f in formats]
        if float32:
            tasks += [Point(k, None) for k in kernel_sets]
        tasks += [plan_point(label, spec, confirm_plans) for label, spec in plans.items()]
        rows = {p.key: row for p in tasks
                if (row := _read_point(out, p, digest, progress)) is not None}
        todo = [p for p in tasks if p.key not in rows]
        bar = progress_bar(len(tasks), initial=len(rows), unit="point", desc="sweep",
                           show=progress)
        try:
            with Tasks(workers or 2, client, worker_wait, progress) as runner:
                for row in runner.run(run_point, [(config, p, reference, mode, bounds)
                                                for p in todo],
                                      len(tasks)):
                    key = Point.of_row(row).key
                    text = seal_json(row, digest)
                    write_atomic(out / "points" / f"{key}.json", text.encode())
                    rows[key] = _unsealed(text)
                    bar.update(1)
        finally:
            bar.close()
        return _finish(config, [rows[p.key] for p in tasks], reference, tolerance, mode,
                       out, unit, sizing is not None,
                       swept={"widths": widths, "mantissas": mantissas, "formats": formats,
                              "mantissa_mode": mantissa_mode},
                       costs=(counts, cost_model))
    finally:
        lock.release()


def _profile(profile):
    """A sizing profile given as itself or as a finished sweep's folder (None: none)."""
    from fixedqmc.qmc.profile import RangeProfile
    if profile is None or isinstance(profile, RangeProfile):
        return profile
    p = Path(profile) / "answer.json"
    if not p.is_file():
        raise FixedQMCError(f"profile={str(profile)!r}: not a finished sweep's folder (no "
                            "answer.json); give a RangeProfile or such a folder")
    return RangeProfile.from_json(json.loads(p.read_text())["profile"])


META = "meta.json"
#: what to do with a damaged meta.json (the points and reference carry their own seals)
META_ADVICE = ("delete it and run the same command again: the saved points and reference "
               "carry their own input hash and are reused only if they belong to this input")


def check_meta(out: Path, meta: dict, what: str = "sweep") -> None:
    """Refuse a folder whose ``meta.json`` is not ``meta`` (the work of another input;
    ``what``: the command, in the message)."""
    p = out / META
    if p.exists():
        old = read_json_state(p, advice=META_ADVICE)
        if old != meta:
            raise FixedQMCError(
                f"{what} folder {str(out)!r} holds a {what} of another input or mode ({old}); "
                f"this one is {meta}: refusing to resume it; choose another output folder")


def _unsealed(text: str) -> dict:
    """A sealed JSON text's object without its seal (as :func:`read_json_state` gives)."""
    obj = json.loads(text)
    del obj["_state"]
    return obj


def _read_point(out: Path, point: Point, digest: str, progress) -> dict | None:
    """A saved point's row; None if there is none or it is damaged (then it is computed
    again, and a line says so)."""
    p = out / "points" / f"{point.key}.json"
    if not p.exists():
        return None
    try:
        return read_json_state(p, digest)
    except DamagedStateError as exc:
        say(progress, f"{exc}: computing this point again")
        return None


def saved_reference(config, out: Path, system, progress, digest: str):
    """The float64 reference: saved in ``reference.pkl`` (sealed), or sampled anew when
    there is none or it is damaged (a line says so); one saved before references kept
    ln|psi| of their samples gets it (and is saved again)."""
    from fixedqmc.sweep.estimates import sample_ln_psi, sample_reference
    p = out / "reference.pkl"
    if p.exists():
        try:
            ref = read_state(p, digest)[0]
        except DamagedStateError as exc:
            say(progress, f"{exc}: sampling the float64 reference again")
        else:
            if ref.ln_psi is None:
                ref.ln_psi = sample_ln_psi(system, ref.samples)
                write_state(p, ref, digest)
            return ref
    ref = sample_reference(config, progress=progress, system=system)
    write_state(p, ref, digest)
    return ref


#: how :func:`no_answer_reason` names a point of each column: (no points, the widest's
#: bits, what passes, what to try)
_REASON_WORDS = {"width": ("no fixed-point width was tried", "{} bits", "width",
                           "wider widths"),
                 "mantissa": ("no mantissa width was tried", "{} mantissa bits", "mantissa",
                              "wider mantissas")}


def no_answer_reason(rows: pd.DataFrame, tolerance: float, mode: str, unit: str,
                     column: str = "width") -> str:
    """Why one estimate (``paired`` or ``full``) gives a kernel set's rows no width ("" if
    it gives one): the kernel set is invisible to it, the widest width does not fit, the
    estimate's noise is above the tolerance (with the run length that would resolve it:
    errors fall as 1/sqrt(samples)), or the widest width's error is itself too large
    (``column="mantissa"``: the same for the mantissa points)."""
    if narrowest_width(rows, tolerance, mode, column) is not None:
        return ""
    (mode,) = _judges(rows, mode)
    if mode is None:
        return ("the paired estimate cannot see this kernel set (its difference is zero, to "
                "float64 rounding: it acts only through sampling, and the reweighted "
                "estimate sees no change either); judge it with the full estimate")
    none_tried, bits, noun, wider = _REASON_WORDS[column]
    d, e = ESTIMATE_COLUMNS[mode]
    fixed = rows.dropna(subset=[column]).sort_values(column) if column in rows else rows[:0]
    if fixed.empty:
        return none_tried
    widest = fixed.iloc[-1]
    w = bits.format(int(widest[column]))
    if not bool(widest.get("fits", True)):
        return f"{mode}: the widest {noun}, {w}, does not fit: {widest.get('note', '')}"
    diff, err = abs(float(widest[d])), float(widest[e])
    longer = longer_run(diff, err, tolerance)
    if longer is not None:
        return (f"{mode}: the estimate cannot resolve the tolerance: at {w} |diff| = "
                f"{diff:.3g} and 2 sigma = {2 * err:.3g} {unit}; a run about {longer:.3g}x "
                "longer would (errors fall as 1/sqrt(samples))")
    return (f"{mode}: no {noun} passes: at the widest, {w}, |diff| + 2 sigma = "
            f"{diff + 2 * err:.3g} {unit} > {tolerance:g}; try {wider}")


RULE = "|diff| + 2 sigma <= tolerance at this and every wider width"


def _answers(table: pd.DataFrame, tolerance: float, mode: str, unit: str,
             swept: dict | None = None) -> list[dict]:
    """One answer per kernel set: ``judged_by`` (the estimates the rule used: ``paired``
    or, for a set only sampling shows, ``reweighted``, and ``full``), ``narrowest_width``
    (None without width points; in
    ``both`` mode also ``narrowest_width_paired`` / ``_full``, and a ``reason_<estimate>``
    each), with mantissa points ``narrowest_mantissa`` (``narrowest_mantissa_paired`` /
    ``_full``, ``reason_mantissa_<estimate>``), with format points ``passing_formats`` and
    ``failing_formats`` (lists of labels; None if the paired estimate cannot see the set,
    ``reason_formats`` says so), and a ``note`` joining every reason."""
    swept = swept if swept is not None else {
        "widths": [1] if table.width.notna().any() else [],
        "mantissas": [1] if "mantissa" in table and table.mantissa.notna().any() else [],
        "formats": [1] if "format" in table and table.format.notna().any() else []}
    answers = []
    estimates = ("paired", "full") if mode == "both" else (mode,)
    rule = RULE
    if swept["mantissas"]:
        rule += " (mantissas: at this and every wider mantissa)"
    if swept["formats"]:
        rule += "; a format passes when its own point does"
    for k, grp in table.groupby("kernels", sort=False):
        row = {"kernels": k, "narrowest_width": narrowest_width(grp, tolerance, mode),
               "mode": mode, "tolerance": tolerance, "energy_unit": unit, "rule": rule,
               "judged_by": [j for j in _judges(grp, mode) if j is not None]}
        notes = []
        if "bound_max" in grp:
            # a bound on the local energy at fixed samples says nothing of a set that acts
            # only through sampling (helium's wave function): no prediction for it
            sees = paired_judge(grp) == "paired"
            row["predicted_width"] = predicted_width(grp, tolerance) if sees else None
            if swept["mantissas"]:
                row["predicted_mantissa"] = (predicted_width(grp, tolerance, "mantissa")
                                             if sees else None)
            row["bound_defects"] = bound_defects(grp)
            if not sees:
                notes.append("predicted: the bounds cover the local energy on fixed samples, "
                             "which this kernel set does not change (it acts through "
                             "sampling)")
            if row["bound_defects"]:
                notes.append(f"DEFECT: measured errors exceed their bound at "
                             f"{', '.join(row['bound_defects'])}")
        for m in estimates:
            if mode == "both":
                row[f"narrowest_width_{m}"] = narrowest_width(grp, tolerance, m)
            row[f"reason_{m}"] = no_answer_reason(grp, tolerance, m, unit)
            if swept["widths"] or not (swept["mantissas"] or swept["formats"]):
                notes += [row[f"reason_{m}"]] if row[f"reason_{m}"] else []
        widths = grp.width.dropna()
        if row["narrowest_width"] is not None and row["narrowest_width"] == widths.min():
            notes.append("the narrowest tested width passes: narrower widths were not tried")
        if swept["mantissas"]:
            row["narrowest_mantissa"] = narrowest_mantissa(grp, tolerance, mode)
            for m in estimates:
                if mode == "both":
                    row[f"narrowest_mantissa_{m}"] = narrowest_mantissa(grp, tolerance, m)
                why = no_answer_reason(grp, tolerance, m, unit, "mantissa")
                row[f"reason_mantissa_{m}"] = why
                notes += [why] if why else []
            ms = grp.mantissa.dropna()
            if row["narrowest_mantissa"] is not None and row["narrowest_mantissa"] == ms.min():
                notes.append("the narrowest tested mantissa passes: narrower mantissas were "
                             "not tried")
        if swept["formats"]:
            res = format_results(grp, tolerance, mode)
            row["passing_formats"] = None if res is None else [f for f, g in res.items() if g]
            row["failing_formats"] = None if res is None else [f for f, g in res.items()
                                                               if not g]
            row["reason_formats"] = "" if res is not None else (
                "formats: neither the paired nor the reweighted estimate can see this kernel "
                "set; judge its formats with the full estimate")
            notes += [row["reason_formats"]] if row["reason_formats"] else []
        row["note"] = "; ".join(dict.fromkeys(notes))
        answers.append(row)
    return answers


#: energy columns of a sweep point (converted to the sweep's unit in the table)
ENERGY_COLUMNS = ("paired_diff", "paired_error", "paired_energy", "paired_energy_error",
                  "reweighted_diff", "reweighted_error",
                  "bound_mean", "bound_max", "bound_error_max",
                  "full_energy", "full_error", "full_diff", "full_diff_error",
                  "full_diff_independent_error")


def plan_verdicts(rows: pd.DataFrame, tolerance: float, reference, f: float) -> dict:
    """Per plan row (energies already in the sweep's unit, ``f`` per system unit): the spec,
    ``fits``, the paired, reweighted (where the reference has ln|psi|) and full estimates,
    each with its rule value and verdict (:func:`verdict`), ``passes`` (the paired and
    full verdicts pass; the reweighted estimate is for the reader: what sampling at the
    plan does, judged on the same samples), ``error_ratio`` (the full run's error over the
    float64 run's: a plan that samples worse shows here) with its 95 % bootstrap
    ``error_ratio_interval`` (NaN for points saved before it) and ``longer`` (about how many
    times longer a full run would resolve an unresolved verdict, when ``|diff| <
    tolerance``)."""
    out = {}
    for _, r in rows.iterrows():
        note = r.get("note")
        v = {"spec": r["precision"], "fits": bool(r["fits"]),
             "note": note if isinstance(note, str) else ""}
        for est in ("paired", "reweighted", "full"):
            d, e = ESTIMATE_COLUMNS[est]
            if est == "full" and not bool(r.get("plan_confirmed", True)):  # NaN: older
                v[d] = v[e] = v["full_value"] = None
                v["full_verdict"] = "not run"
                continue
            if d not in r:  # no reweighted estimate: a reference without ln|psi|
                continue
            ok = v["fits"] and not (math.isnan(r[d]) or math.isnan(r[e]))
            v[d], v[e] = (float(r[d]), float(r[e])) if ok else (None, None)
            v[f"{est}_value"] = abs(r[d]) + 2 * r[e] if ok else None
            v[f"{est}_verdict"] = (verdict(r[d], r[e], tolerance) if ok else
                                   "unresolved" if v["fits"] else "fails")
        v["passes"] = (None if v["full_verdict"] == "not run" else
                       v["paired_verdict"] == v["full_verdict"] == "passes")
        if v["fits"] and v["full_verdict"] != "not run":
            v["error_ratio"] = float(r["full_error"] / (reference.error * f))
            v["error_ratio_interval"] = [float(r.get(f"full_error_ratio_{k}", math.nan))
                                         for k in ("low", "high")]
        v["longer"] = (longer_run(abs(r["full_diff"]), r["full_diff_error"], tolerance)
                       if v["full_verdict"] == "unresolved" else None)
        out[r["plan"]] = v
    return out


def _finish(config, rows: list[dict], reference, tolerance, mode, out: Path, unit: str,
            given_profile: bool = False, swept: dict | None = None,
            costs: tuple | None = None) -> SweepResult:
    from fixedqmc.qmc.registry import get_plugin
    f = get_plugin(config["system"]["kind"]).units.factor(unit)
    table = pd.DataFrame(rows)
    for c in (*POINT_COLUMNS, "plan"):  # points saved before mantissas, formats and plans
        if c not in table:
            table[c] = None
    table["width"] = table["width"].astype("Int64")
    table["mantissa"] = table["mantissa"].astype("Int64")
    table["format"] = table["format"].astype(object).where(table["format"].notna(), None)
    for c in ("float_range", "float_events"):  # "float_events": not in older points
        if c in table:
            table[c] = table[c].fillna("{}")
    for c in ENERGY_COLUMNS:
        if c in table:
            table[c] = table[c] * f
    counts, model = costs if costs is not None and costs[0] is not None else (None, None)
    if counts is not None:
        table = pd.concat([table, point_costs(table, counts, model)], axis=1)
    points = table[table["plan"].isna()]
    answers = _answers(points, tolerance, mode, unit, swept)
    for a in answers:
        if a.get("bound_defects"):
            warnings.warn(f"{a['kernels']}: measured errors exceed their rigorous bound at "
                          f"{', '.join(a['bound_defects'])}: a defect of the bound context "
                          "(please report it)", RuntimeWarning, stacklevel=2)
    if counts is not None:
        answer_costs(table, answers)
    answer = pd.DataFrame(answers)
    swept = swept or {}
    summary = {"input_hash": input_hash(config), "mode": mode, "energy_unit": unit,
               "tolerance": tolerance, "widths": list(swept.get("widths", [])),
               "mantissas": list(swept.get("mantissas", [])),
               "mantissa_mode": swept.get("mantissa_mode") or DEFAULT_MANTISSA_MODE,
               "formats": list(swept.get("formats", [])),
               "float64_energy": reference.energy * f,
               "float64_error": reference.error * f, "float64_acceptance": reference.acceptance,
               "samples": list(reference.samples.shape), "answer": answers,
               "plans": plan_verdicts(table[table["plan"].notna()], tolerance, reference, f),
               "profile": reference.profile.to_json(),
               "profile_source": "given" if given_profile else "samples",
               "cost_model": model, "input": config}
    with atomic_output(out / "sweep.parquet") as tmp:
        table.to_parquet(tmp, index=False)
    with atomic_output(out / "sweep.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_output(out / "profile.csv") as tmp:
        reference.profile.frame().to_csv(tmp, index=False)
    write_atomic(out / "answer.json", jsonio.dumps(summary, indent=2).encode())
    with atomic_output(out / "sweep.png") as tmp:
        plot_sweep(points, tolerance, mode, tmp, unit=unit, answers=answers)
    if counts is not None:
        with atomic_output(out / "counts.csv") as tmp:
            counts[0].to_csv(tmp, index=False)
        with atomic_output(out / "arrays.csv") as tmp:
            counts[1].to_csv(tmp, index=False)
        with atomic_output(out / "pareto.png") as tmp:
            plot_pareto(points, tolerance, rule_value, "full" if mode == "full" else "paired",
                        tmp, unit=unit, model=model, answers=answers)
    return SweepResult(table, answer, summary, out)


def plot_sweep(table: pd.DataFrame, tolerance: float, mode: str, path=None, *,
               unit: str = "K", answers: list | None = None):
    """What the answer rule uses, ``|diff| + 2 sigma``, per kernel set (``both``: paired
    solid, full dashed; reweighted in place of paired for a set the paired estimate cannot
    see, :func:`paired_judge`), the tolerance line and float32 rows as horizontal dotted lines.
    Width points: vs width W (left panel), each set's chosen width as a vertical dotted
    line; where points have bounds, the largest bound on the local energy's error
    (dash-dot, crosses; missing where some sample is unbounded) and the predicted width
    (vertical dash-dot).  Mantissa and format points (right panel, or the only one): vs mantissa bits M,
    ``float:m<M>`` points as lines with the chosen mantissa dotted, each float format as a
    labelled square at its M.  The y axis (log, shared) spans the data.  Returns the
    matplotlib figure."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    answers = answers or ()
    predicted = {a["kernels"]: a.get("predicted_width") for a in answers}
    chosen = {"width": {a["kernels"]: a.get("narrowest_width") for a in answers},
              "mantissa": {a["kernels"]: a.get("narrowest_mantissa") for a in answers}}

    def present(c):
        return c in table and table[c].notna().any()
    floats = present("mantissa") or present("format")
    rounded = "".join(f":{m}" for m in table["mantissa_mode"].dropna().unique()) \
        if present("mantissa_mode") else ""
    panels = (["width"] if present("width") or not floats else []) + (
        ["mantissa"] if floats else [])
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.5), sharey=True,
                             squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ys = [tolerance]

    for ax, column in zip(axes[0], panels):
        for i, (k, grp) in enumerate(table.groupby("kernels", sort=False)):
            color = colors[i % len(colors)]
            judges = _judges(grp, mode)
            for m, style in zip(judges, ("-", "--")):
                if m is None:
                    continue
                tag = f" ({m})"
                pts = grp.dropna(subset=[column]).sort_values(column) if present(column) \
                    else grp[:0]
                if len(pts):
                    y = rule_value(pts, m).to_numpy(float)
                    ax.plot(pts[column].astype(int), y, style, marker="o", ms=4, color=color,
                            label=f"{k}{tag}")
                    ys += [v for v in y if 0 < v < math.inf]
                if column == "mantissa" and present("format"):
                    fr = grp.dropna(subset=["format"])
                    y = rule_value(fr, m).to_numpy(float)
                    x = [parse_float_format(f).man_bits for f in fr["format"]]
                    ax.scatter(x, np.where(np.isfinite(y) & (y > 0), y, np.nan), marker="s",
                               s=30, color=color, facecolors="none" if style == "--" else color,
                               label=None if len(pts) else f"{k} formats{tag}")
                    if m == judges[-1]:  # one label per format, stacked at a shared M
                        seen: dict = {}
                        for xi, yi, f in zip(x, y, fr["format"]):
                            if 0 < yi < math.inf:
                                j = seen[xi] = seen.get(xi, -1) + 1
                                ax.annotate(f, (xi, yi), textcoords="offset points",
                                            xytext=(5, 2 - 9 * j), fontsize=7, color=color)
                    ys += [v for v in y if 0 < v < math.inf]
                f32 = grp.loc[grp.index.difference(_trial_rows(grp).index)]
                if len(f32):
                    v = float(rule_value(f32, m).iloc[0])
                    ax.axhline(v, ls=":", color=color, lw=1, label=f"{k} float32{tag}")
                    ys += [v] if 0 < v < math.inf else []
            if column == "width" and "bound_max" in grp and grp.bound_max.notna().any():
                pts = grp.dropna(subset=["width"]).sort_values("width")
                y = pts.bound_max.where(pts.bound_unbounded == 0).to_numpy(float)
                ax.plot(pts.width.astype(int), y, "-.", marker="x", ms=4, color=color, lw=1,
                        label=f"{k} bound (largest, every sample)")
                ys += [v for v in y if 0 < v < math.inf]
                if predicted.get(k) is not None:
                    ax.axvline(predicted[k], ls="-.", color=color, lw=1)
            if chosen[column].get(k) is not None:
                ax.axvline(chosen[column][k], ls=":", color=color, lw=1.5)
        ax.axhline(tolerance, color="green", lw=1.2, label=f"tolerance {tolerance:g} {unit}")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.margins(x=0.08)  # room for the formats' labels
        ax.set_xlabel("word width W (bits); dotted vertical: the chosen width; dash-dot: "
                      "the predicted width (bounds)" if column == "width" and predicted
                      and any(v is not None for v in predicted.values()) else
                      "word width W (bits); dotted vertical: the chosen width"
                      if column == "width" else
                      f"mantissa bits M (float:m<M>{rounded}, exponent bits from the profile; "
                      "squares: formats at their M); dotted: the chosen M", fontsize=8)
        if ax is axes[0][0] or column == "mantissa" and present("format") and \
                not present("mantissa"):  # one legend (the squares' own if they have none)
            ax.legend(fontsize=7, ncol=2)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylim(min(ys) / 3, max(ys) * 3)
    axes[0][0].set_ylabel(f"|E(trial) - E(float64)| + 2 sigma ({unit})")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
