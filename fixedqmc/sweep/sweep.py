"""Bit-width sweeps: which word width does each kernel need for the energy to stay within a
tolerance?  (Seed 001, Table 1 and Sec. 4; HAQMC's accuracy study, seed 002.)

:func:`sweep` runs, for every kernel set (one kernel, a group of kernels joined by ``+``
such as seed 001's FPGA data path ``distance+exp+contraction+orbitals+derivatives``, or
``all`` of them) and every width W, the system with that set at ``fixed:W`` (formats from
the float64 range profile, :mod:`fixedqmc.qmc.profile`) and every other kernel at
float64, plus a ``float32`` row per kernel set, and estimates the energy change
(:mod:`fixedqmc.sweep.estimates`):

``paired``  same-sample difference and its paired error (fast, sharp);
``full``    a complete VMC run at the trial precision against the float64 run (same
            random numbers walker by walker: the error of the difference is the spread
            of the per-walker differences, small while the trajectories agree);
``both``    the two.

The answer per kernel set: **the narrowest width W such that, at W and at every wider
width of the sweep, |difference| + 2 sigma <= tolerance**, judged by the paired estimate
in ``paired`` mode, by the full estimate in ``full`` mode, and in ``both`` mode by both
(the narrowest width that passes both rules; each rule's own answer is reported too).
None if no width qualifies.  A width too narrow for the integer bits of some profiled range
(e.g. the inverse Slater matrices of a walker near a node) is a point that does not fit:
``fits`` is False, its estimates are NaN and ``note`` names the variable; it fails the
rule, like an energy outside the tolerance.  A kernel set whose paired difference is exactly zero at every
width acts only through sampling (helium's wave-function kernel): the paired estimate
cannot see it, so no paired answer is reported for it (``note`` says so; use ``full``).
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
is named in a clear error.  Before anything is written the memory the sweep
needs (the float64 reference and its samples, held by this process and every local worker)
is compared with what the machine has (:mod:`fixedqmc.run.memory`).  Outputs: ``sweep.parquet``, ``sweep.csv``,
``answer.json`` (summary) and ``sweep.png`` (energy difference vs width on a log axis with
the tolerance band).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from fixedqmc import jsonio
from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.qformat import MAX_WORD_BITS
from fixedqmc.output_folder import claim
from fixedqmc.progress import progress as progress_bar
from fixedqmc.progress import say
from fixedqmc.run.config import input_hash, load_config
from fixedqmc.run.memory import check_memory
from fixedqmc.state_files import (DamagedStateError, atomic_output, read_json_state,
                                  read_state, seal_json, write_atomic, write_state)

MODES = ("paired", "full", "both")
MAX_WIDTH = MAX_WORD_BITS  # the same range as fixed:W in a precision spec


@dataclass(frozen=True)
class Point:
    """One sweep point: a kernel set at a precision (``width`` None: float32)."""

    kernels: str  # a kernel name, names joined by "+", or "all"
    width: int | None

    @property
    def members(self) -> tuple[str, ...]:
        """The kernels of the set ("all" for every kernel)."""
        return tuple(self.kernels.split("+"))

    @property
    def precision(self) -> str:
        p = "float32" if self.width is None else f"fixed:{self.width}"
        if self.kernels == "all":
            return p
        return "default=float64," + ",".join(f"{k}={p}" for k in self.members)

    @property
    def key(self) -> str:
        return f"{self.kernels}_{'float32' if self.width is None else f'w{self.width:02d}'}"


def parse_widths(text) -> list[int]:
    """``"16:48:2"`` (start:stop:step, inclusive), ``"24,32,40"`` or a list of ints."""
    if isinstance(text, str):
        try:
            if ":" in text:
                parts = [int(x) for x in text.split(":")]
                if len(parts) not in (2, 3):
                    raise ValueError
                start, stop, step = parts[0], parts[1], parts[2] if len(parts) == 3 else 1
                if step <= 0:
                    raise ValueError
                widths = list(range(start, stop + 1, step))
            else:
                widths = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise FixedQMCError(f"--widths: {text!r} is not start:stop[:step] or a comma list "
                                "of integers") from None
    else:
        widths = [int(w) for w in text]
    if not widths:
        raise FixedQMCError(f"--widths {text!r} gives no width")
    bad = [w for w in widths if not 1 <= w <= MAX_WIDTH]
    if bad:
        raise FixedQMCError(f"widths must lie in 1..{MAX_WIDTH} bits; got {bad}")
    return sorted(set(widths))


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


# ------------------------------------------------------------------------- one point --
def run_point(config: dict, point: Point, reference, mode: str, threads: int | None = None
              ) -> dict:
    """Estimate one point (a task: runs in a worker process or on a Dask worker)."""
    import numba

    from fixedqmc.sweep.estimates import full_estimate, paired_estimate, trial_system
    if threads:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    from fixedqmc.errors import FormatError

    t0 = time.perf_counter()
    row = {"kernels": point.kernels, "width": point.width,
           "precision": point.precision if point.width is not None else "float32"}
    try:
        system = trial_system(config, point.precision, reference.profile)
    except FormatError as exc:  # a profiled range needs more integer bits than W has
        row.update({c: math.nan for cols in ESTIMATE_COLUMNS.values() for c in cols})
        row.update({"fits": False, "note": str(exc), "formats": "{}", "overflow_events": 0,
                    "overflow_vars": "{}", "wall_time_s": time.perf_counter() - t0})
        return row
    row["fits"] = True
    if mode in ("paired", "both"):
        row.update(paired_estimate(system, reference))
    if mode in ("full", "both"):
        row.update(full_estimate(config, system, reference))
    fixed = {k: v for k, v in system.formats().items()
             if point.kernels == "all" or k.split(".")[0] in point.members}
    row["formats"] = json.dumps(fixed)
    row["overflow_events"] = int(system.log.total_events)
    hot = {k: int(v) for k, v in system.log.events.items() if v}
    row["overflow_vars"] = json.dumps(hot)
    row["wall_time_s"] = time.perf_counter() - t0
    return row


# ----------------------------------------------------------------------- executors --
def _client(scheduler):
    """A dask.distributed Client for an address (fail fast, naming it) or as given."""
    if scheduler is None or not isinstance(scheduler, str):
        return scheduler
    if not re.fullmatch(r"(?:(?:tcp|tls|ucx|ws|wss)://)?[\w.\-\[\]:]+:\d+", scheduler):
        raise FixedQMCError(f"--scheduler {scheduler!r} is not a Dask scheduler address; "
                            "expected tcp://HOST:PORT (or HOST:PORT)")
    try:
        from distributed import Client
    except ImportError:
        raise FixedQMCError("--scheduler needs dask.distributed (pip install distributed)") from None
    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise FixedQMCError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}") from None


def _execute(tasks, config, reference, mode, workers, client, wait_s=None, progress=None,
             total=None):
    """Yield finished rows as points complete (``total``: the sweep's points, for
    messages)."""
    if client is not None:
        yield from _dask_rows(client, tasks, config, reference, mode, wait_s, progress,
                              total or len(tasks))
        return
    if workers <= 1:
        for p in tasks:
            yield run_point(config, p, reference, mode)
        return
    import multiprocessing as mp
    threads = max(1, (os.cpu_count() or 1) // workers)
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(run_point, config, p, reference, mode, threads) for p in tasks]
        for fut in as_completed(futures):
            yield fut.result()


#: seconds between two looks at unfinished Dask points and the scheduler's workers
DASK_POLL_S = 0.5
#: default seconds a Dask sweep waits while its scheduler has no worker before it stops
WORKER_WAIT_S = 300.0


def _dask_rows(client, tasks, config, reference, mode, wait_s, progress, total):
    """Rows of points computed on a Dask cluster, as they finish.  While the scheduler has
    no worker a status line comes every :data:`~fixedqmc.progress.INTERVAL_S` seconds, and
    after ``wait_s`` seconds without one the sweep stops with a clear error (the finished
    points are saved: a rerun resumes)."""
    from fixedqmc.progress import INTERVAL_S, say
    wait_s = WORKER_WAIT_S if wait_s is None else wait_s
    address = getattr(client, "scheduler", None)
    address = getattr(address, "address", None) or "the scheduler"
    pending = [client.submit(run_point, config, p, reference, mode, pure=False) for p in tasks]
    alone_since = said = None
    try:
        while pending:
            done = [f for f in pending if f.done()]
            for f in done:
                pending.remove(f)
                yield f.result()
            if done:
                continue
            now = time.monotonic()
            try:
                workers = len(client.scheduler_info()["workers"])
            except Exception:  # the client lost its scheduler: no workers to be had
                workers = 0
            if workers:
                alone_since = said = None
            else:
                alone_since = alone_since or now
                gone = now - alone_since
                if gone >= wait_s:
                    raise FixedQMCError(
                        f"the Dask scheduler at {address} has had no worker for {gone:.0f} s "
                        f"(--worker-wait {wait_s:g}); {total - len(pending)} of {total} "
                        "points of the sweep are finished and saved: start "
                        "workers (or run without --scheduler) and run the same command "
                        "again to resume")
                if said is None or now - said >= INTERVAL_S:
                    say(progress, f"sweep: waiting for Dask workers at {address}: none for "
                        f"{gone:.0f} s (stopping after {wait_s:g} s), "
                        f"{len(pending)} points to go")
                    said = now
            time.sleep(DASK_POLL_S)
    finally:
        for f in pending:
            f.cancel()


# ----------------------------------------------------------------------------- sweep --
@dataclass
class SweepResult:
    """The sweep table (one row per point), the answer per kernel set and the folder."""

    table: pd.DataFrame
    answer: pd.DataFrame
    summary: dict
    output: Path


ESTIMATE_COLUMNS = {"paired": ("paired_diff", "paired_error"),
                    "full": ("full_diff", "full_diff_error")}


#: paired differences below this fraction of the energy are float64 rounding of the
#: energy sums (a kernel set that does not enter the local energy, evaluated in another
#: order), not an effect of the trial precision
BLIND_RELATIVE = 2.0**-40


def paired_blind(rows: pd.DataFrame) -> bool:
    """True when the paired difference and its error are zero at every fixed width, up to
    float64 rounding of the energy (:data:`BLIND_RELATIVE` of ``|paired_energy|``, where
    the rows have it; exactly zero otherwise): the kernel set acts only through sampling."""
    fixed = rows.dropna(subset=["width", "paired_diff"])  # widths that fit
    scale = fixed["paired_energy"].abs() if "paired_energy" in fixed else 0.0
    tiny = fixed.paired_diff.abs() + fixed.paired_error <= BLIND_RELATIVE * scale
    return bool(len(fixed)) and bool(tiny.all())


def narrowest_width(rows: pd.DataFrame, tolerance: float, mode: str) -> int | None:
    """The rule of the module docstring on one kernel set's fixed rows, for one estimate
    (``paired`` or ``full``; ``both``: the wider of the two answers, None if either is)."""
    if mode == "both":
        ws = [narrowest_width(rows, tolerance, m) for m in ("paired", "full")]
        return None if None in ws else max(ws)
    if mode == "paired" and paired_blind(rows):
        return None
    d, e = ESTIMATE_COLUMNS[mode]
    fixed = rows.dropna(subset=["width"]).sort_values("width")
    ok = (fixed[d].abs() + 2 * fixed[e] <= tolerance).to_numpy()
    best = None
    for w, good in zip(fixed.width.to_numpy()[::-1], ok[::-1]):
        if not good:
            break
        best = int(w)
    return best


def sweep(path=None, *, widths="16:48:4", kernels="all", tolerance: float = 0.01,
          mode: str = "paired", sets=(), overrides: dict | None = None, output=None,
          workers: int | None = None, client=None, scheduler: str | None = None,
          float32: bool = True, progress: bool | None = None, units: str | None = None,
          profile=None, worker_wait: float | None = None) -> SweepResult:
    """Run (or resume) a bit-width sweep of an input; see the module docstring.

    ``profile``: size every point's formats from this range profile (a
    :class:`~fixedqmc.qmc.profile.RangeProfile`, or the folder of a finished sweep, whose
    ``answer.json`` holds its profile) instead of this sweep's own samples: one set of
    formats for several sweeps, as seed 001's Table 1 sizes its formats once for every
    walker count (and, with formats compiled in, one compilation per width).  Values of
    these samples outside it are counted overflow events of the points.

    ``worker_wait``: on a Dask cluster, the seconds to wait while the scheduler has no
    worker (default :data:`WORKER_WAIT_S`) before the sweep stops with a clear error; the
    finished points are kept, and the same call resumes.

    ``tolerance`` is in ``units`` (default: the system's energy unit, K for helium).
    ``output`` defaults to ``<input output>/sweep``.  ``workers``: local worker processes
    (default 2, 1 = in this process).  ``progress``: None (default) progress bars when
    stderr is a terminal, else plain lines for the float64 reference and the points
    (:mod:`fixedqmc.progress`); False: none.
    """
    from fixedqmc.run.plan import build_system
    if mode not in MODES:
        raise FixedQMCError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance > 0):
        raise FixedQMCError(f"--tolerance must be a positive energy, got {tolerance!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise FixedQMCError(f"--workers must be an integer >= 1, got {workers!r}")
    if worker_wait is not None and not (isinstance(worker_wait, (int, float))
                                        and math.isfinite(worker_wait) and worker_wait >= 0):
        raise FixedQMCError(f"--worker-wait must be a number of seconds >= 0, got "
                            f"{worker_wait!r}")
    widths = parse_widths(widths)
    client = _client(scheduler) if scheduler is not None else client
    config = load_config(path, sets, overrides)
    out = Path(output or Path(config["output"]) / "sweep")
    config = {**config, "output": str(out)}  # what a system writes (a mean-field cache) too
    sizing = _profile(profile)
    lock = claim(out, "sweep")
    try:
        try:  # input errors: nothing this call wrote is left
            system = build_system({**config, "precision": "float64"})
            kernel_sets = parse_kernels(kernels, tuple(system.kernels))
            unit = units or system.units.energy
            system.units.factor(unit)  # one the system converts to
            local = (workers or 2) if client is None else 0  # processes of the local pool
            check_memory(system, config, samples=True, copies=1 + local if local > 1 else 1)
            meta = {"input_hash": input_hash(config), "mode": mode}
            if sizing is not None:
                meta["profile_hash"] = hashlib.sha256(jsonio.dumps(sizing.to_json()).encode()
                                                      ).hexdigest()[:16]
            _check_meta(out, meta)
        except BaseException:
            lock.abandon()
            raise
        digest = hashlib.sha256(jsonio.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]
        (out / "points").mkdir(exist_ok=True)
        write_atomic(out / META, seal_json(meta, digest).encode())
        reference = _reference(config, out, system, progress, digest)
        if sizing is not None:
            reference = replace(reference, profile=sizing)
        tasks = [Point(k, w) for k in kernel_sets for w in widths]
        if float32:
            tasks += [Point(k, None) for k in kernel_sets]
        rows = {p.key: row for p in tasks
                if (row := _read_point(out, p, digest, progress)) is not None}
        todo = [p for p in tasks if p.key not in rows]
        bar = progress_bar(len(tasks), initial=len(rows), unit="point", desc="sweep",
                           show=progress)
        try:
            for row in _execute(todo, config, reference, mode, workers or 2, client,
                                worker_wait, progress, len(tasks)):
                key = Point(row["kernels"], row["width"]).key
                text = seal_json(row, digest)
                write_atomic(out / "points" / f"{key}.json", text.encode())
                rows[key] = _unsealed(text)
                bar.update(1)
        finally:
            bar.close()
        return _finish(config, [rows[p.key] for p in tasks], reference, tolerance, mode,
                       out, unit, sizing is not None)
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


def _check_meta(out: Path, meta: dict) -> None:
    p = out / META
    if p.exists():
        old = read_json_state(p, advice=META_ADVICE)
        if old != meta:
            raise FixedQMCError(
                f"sweep folder {str(out)!r} holds a sweep of another input or mode ({old}); "
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


def _reference(config, out: Path, system, progress, digest: str):
    """The float64 reference: saved in ``reference.pkl`` (sealed), or sampled anew when
    there is none or it is damaged (a line says so)."""
    from fixedqmc.sweep.estimates import sample_reference
    p = out / "reference.pkl"
    if p.exists():
        try:
            return read_state(p, digest)[0]
        except DamagedStateError as exc:
            say(progress, f"{exc}: sampling the float64 reference again")
    ref = sample_reference(config, progress=progress, system=system)
    write_state(p, ref, digest)
    return ref


def no_answer_reason(rows: pd.DataFrame, tolerance: float, mode: str, unit: str) -> str:
    """Why one estimate (``paired`` or ``full``) gives a kernel set's rows no width ("" if
    it gives one): the kernel set is invisible to it, the widest width does not fit, the
    estimate's noise is above the tolerance (with the run length that would resolve it:
    errors fall as 1/sqrt(samples)), or the widest width's error is itself too large."""
    if narrowest_width(rows, tolerance, mode) is not None:
        return ""
    if mode == "paired" and paired_blind(rows):
        return ("the paired estimate cannot see this kernel set (its difference is zero, to "
                "float64 rounding: it acts only through sampling); judge it with the full "
                "estimate")
    d, e = ESTIMATE_COLUMNS[mode]
    fixed = rows.dropna(subset=["width"]).sort_values("width")
    if fixed.empty:
        return "no fixed-point width was tried"
    widest = fixed.iloc[-1]
    w = int(widest.width)
    if not bool(widest.get("fits", True)):
        return f"{mode}: the widest width, {w} bits, does not fit: {widest.get('note', '')}"
    diff, err = abs(float(widest[d])), float(widest[e])
    if diff < tolerance and 2 * err > tolerance - diff:
        longer = (2 * err / (tolerance - diff)) ** 2
        return (f"{mode}: the estimate cannot resolve the tolerance: at {w} bits |diff| = "
                f"{diff:.3g} and 2 sigma = {2 * err:.3g} {unit}; a run about {longer:.3g}x "
                "longer would (errors fall as 1/sqrt(samples))")
    return (f"{mode}: no width passes: at the widest, {w} bits, |diff| + 2 sigma = "
            f"{diff + 2 * err:.3g} {unit} > {tolerance:g}; try wider widths")


def _answers(table: pd.DataFrame, tolerance: float, mode: str, unit: str) -> list[dict]:
    answers = []
    estimates = ("paired", "full") if mode == "both" else (mode,)
    for k, grp in table.groupby("kernels", sort=False):
        row = {"kernels": k, "narrowest_width": narrowest_width(grp, tolerance, mode),
               "mode": mode, "tolerance": tolerance, "energy_unit": unit,
               "rule": "|diff| + 2 sigma <= tolerance at this and every wider width"}
        notes = []
        for m in estimates:
            if mode == "both":
                row[f"narrowest_width_{m}"] = narrowest_width(grp, tolerance, m)
            row[f"reason_{m}"] = no_answer_reason(grp, tolerance, m, unit)
            notes += [row[f"reason_{m}"]] if row[f"reason_{m}"] else []
        widths = grp.width.dropna()
        if row["narrowest_width"] is not None and row["narrowest_width"] == widths.min():
            notes.append("the narrowest tested width passes: narrower widths were not tried")
        row["note"] = "; ".join(notes)
        answers.append(row)
    return answers


#: energy columns of a sweep point (converted to the sweep's unit in the table)
ENERGY_COLUMNS = ("paired_diff", "paired_error", "paired_energy", "paired_energy_error",
                  "full_energy", "full_error", "full_diff", "full_diff_error",
                  "full_diff_independent_error")


def _finish(config, rows: list[dict], reference, tolerance, mode, out: Path, unit: str,
            given_profile: bool = False) -> SweepResult:
    from fixedqmc.qmc.registry import get_plugin
    f = get_plugin(config["system"]["kind"]).units.factor(unit)
    table = pd.DataFrame(rows)
    table["width"] = table["width"].astype("Int64")
    for c in ENERGY_COLUMNS:
        if c in table:
            table[c] = table[c] * f
    answers = _answers(table, tolerance, mode, unit)
    answer = pd.DataFrame(answers)
    summary = {"input_hash": input_hash(config), "mode": mode, "energy_unit": unit,
               "tolerance": tolerance, "float64_energy": reference.energy * f,
               "float64_error": reference.error * f, "float64_acceptance": reference.acceptance,
               "samples": list(reference.samples.shape), "answer": answers,
               "profile": reference.profile.to_json(),
               "profile_source": "given" if given_profile else "samples",
               "input": config}
    with atomic_output(out / "sweep.parquet") as tmp:
        table.to_parquet(tmp, index=False)
    with atomic_output(out / "sweep.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_output(out / "profile.csv") as tmp:
        reference.profile.frame().to_csv(tmp, index=False)
    write_atomic(out / "answer.json", jsonio.dumps(summary, indent=2).encode())
    with atomic_output(out / "sweep.png") as tmp:
        plot_sweep(table, tolerance, mode, tmp, unit=unit, answers=answers)
    return SweepResult(table, answer, summary, out)


def plot_sweep(table: pd.DataFrame, tolerance: float, mode: str, path=None, *,
               unit: str = "K", answers: list | None = None):
    """What the answer rule uses, ``|diff| + 2 sigma``, vs width (log axis) per kernel set
    (``both``: paired solid, full dashed), the tolerance line, each set's chosen width as
    a vertical dotted line, float32 rows as horizontal dotted lines; the y axis spans the
    data.  Returns the matplotlib figure."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    estimates = ("paired", "full") if mode == "both" else (mode,)
    chosen = {a["kernels"]: a["narrowest_width"] for a in answers or ()}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ys = [tolerance]
    for k, grp in table.groupby("kernels", sort=False):
        fx = grp.dropna(subset=["width"]).sort_values("width")
        color = None
        for m, style in zip(estimates, ("-", "--")):
            d, e = ESTIMATE_COLUMNS[m]
            if m == "paired" and paired_blind(grp):
                continue
            y = (fx[d].abs() + 2 * fx[e]).to_numpy(float)
            line, = ax.plot(fx.width.astype(int), y, style, marker="o", ms=4, color=color,
                            label=f"{k} ({m})")
            color = line.get_color()
            ys += [v for v in y if v > 0]
            f32 = grp[grp.width.isna()]
            if len(f32):
                v = abs(float(f32[d].iloc[0])) + 2 * float(f32[e].iloc[0])
                ax.axhline(v, ls=":", color=color, lw=1, label=f"{k} float32 ({m})")
                ys += [v] if v > 0 else []
        if chosen.get(k) is not None:
            ax.axvline(chosen[k], ls=":", color=color, lw=1.5)
    ax.axhline(tolerance, color="green", lw=1.2, label=f"tolerance {tolerance:g} {unit}")
    ax.set_yscale("log")
    ax.set_ylim(min(ys) / 3, max(ys) * 3)
    ax.set_xlabel("word width W (bits); dotted vertical: the chosen width")
    ax.set_ylabel(f"|E(fixed:W) - E(float64)| + 2 sigma ({unit})")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
