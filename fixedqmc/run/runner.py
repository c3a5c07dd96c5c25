"""``fixedqmc run``: a complete VMC or DMC calculation from an input, with checkpoints.

:func:`run` validates the input (:mod:`fixedqmc.run.config`), builds the system of its
``system.kind`` through the registry (:mod:`fixedqmc.qmc.registry`; the runner knows no
concrete system) and its starting walkers, runs the method block by block and writes to the
output folder:

``trace.parquet`` / ``trace.csv``
    one row per block (and per time step for a DMC series): energies and every named
    energy part (the system's energy unit), acceptance, step size or time step,
    population, DMC counts (node crossings, energy cuts, persistent walkers) and the
    recompute drift diagnostics.
``summary.json``
    energy and error bar (reblocked production blocks, :func:`fixedqmc.qmc.reblock`) in
    the system's unit and in the chosen ``units``, every energy part, acceptance, per-stage
    checks (stationarity of the energy series, population within a factor 2 of the
    target, counts of the DMC safeguards) with ``warnings``, the time-step series and its
    extrapolation over the stages that passed their checks (DMC), formats of every kernel
    variable, overflow counts, timings, versions, the input and its hash.
``checkpoint.pkl``
    the complete state after the last finished block, sealed with its checksum and the
    input hash and written atomically (:mod:`fixedqmc.run.checkpoint`), so a run killed
    at any moment restarts from its last finished block and ends with the same bits as an
    uninterrupted run.  A checkpoint or summary of a different input is never resumed or
    overwritten, and a damaged checkpoint is never resumed: the run stops and says why.

Before any work the output folder is probed (created and written) and locked (a second
command into it is refused, naming the first: :mod:`fixedqmc.output_folder`), the system
is built and the memory the run needs is estimated and compared with what the machine has
(:mod:`fixedqmc.run.memory`); a failure of any of these removes the folders this call
created.  A full disk stops the run with a clear error and keeps its last checkpoint.

Reproducibility: all randomness comes from one ``numpy.random.SeedSequence(seed)``; kernel
results do not depend on the thread count.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc import jsonio
from fixedqmc.errors import FixedQMCError
from fixedqmc.progress import progress as progress_bar
from fixedqmc.progress import say
from fixedqmc.qmc.dmc import (DMCSettings, blocks_for_time, dmc_block, start_dmc,
                              timestep_extrapolation)
from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.qmc.registry import get_plugin, load_plugins
from fixedqmc.qmc.stage_estimate import estimate
from fixedqmc.qmc.system import Walkers
from fixedqmc.qmc.vmc import VMCSettings, start_vmc, vmc_block
from fixedqmc.run.checkpoint import open_folder, write_checkpoint
from fixedqmc.run.config import energy_unit, input_hash, load_config
from fixedqmc.run.memory import check_memory
from fixedqmc.state_files import atomic_output, write_atomic

__all__ = ["RunResult", "build_system", "estimate", "run", "stages", "versions",
           "vmc_settings"]
CHECKPOINT = "checkpoint.pkl"
SUMMARY = "summary.json"


# ------------------------------------------------------------------------ building --
def build_system(config: dict, ranges: dict | None = None):
    """The system of an input (validated config), built by its kind's plugin; ``ranges``
    (a range profile's ``{kernel: {variable: (lo, hi)}}``) size width-only fixed specs."""
    load_plugins(config.get("plugins", []))  # worker processes import them anew
    plugin = get_plugin(config["system"]["kind"])
    return plugin.make(config, precision=config["precision"], ranges=ranges,
                       seed=config["seed"], specialise=config["specialise"])


def vmc_settings(m: dict, blocks: int | None = None, equil: int | None = None) -> VMCSettings:
    """The VMC settings of an input's ``method`` section."""
    return VMCSettings(n_blocks=m["blocks"] if blocks is None else blocks,
                       equil_blocks=m["equil_blocks"] if equil is None else equil,
                       steps_per_block=m["steps_per_block"], step_size=m["step_size"],
                       move=m["move"], target_acceptance=m["target_acceptance"],
                       recompute_every=m["recompute_every"])


def _dmc_settings(m: dict, tau: float) -> DMCSettings:
    """The settings of the DMC stage at time step ``tau``: equilibration and production
    blocks from ``equil_time`` / ``production_time`` (imaginary time, the system's
    1/energy; :func:`fixedqmc.qmc.dmc.blocks_for_time`) when they are set (> 0), else
    ``equil_blocks`` / ``blocks``."""
    steps = m["steps_per_block"]
    equil_time, production_time = m.get("equil_time", 0), m.get("production_time", 0)
    equil = (blocks_for_time(equil_time, tau, steps) if equil_time > 0
             else m["equil_blocks"])
    blocks = (blocks_for_time(production_time, tau, steps) if production_time > 0
              else m["blocks"])
    return DMCSettings(tau=tau, n_blocks=blocks, equil_blocks=equil,
                       steps_per_block=steps,
                       target_population=m["target_population"] or m["walkers"],
                       move=m["move"], energy_cutoff=float(m["energy_cutoff"]),
                       max_age=m["max_age"], recompute_every=m["recompute_every"])


@dataclass
class Stage:
    """One driver run of a calculation: VMC, or DMC at one time step."""

    name: str
    kind: str
    settings: object


def stages(config: dict) -> list[Stage]:
    m = config["method"]
    if m["kind"] == "vmc":
        return [Stage("vmc", "vmc", vmc_settings(m))]
    out = []
    if m["vmc_blocks"]:
        out.append(Stage("vmc", "vmc", vmc_settings(m, blocks=m["vmc_blocks"], equil=0)))
    out += [Stage(f"dmc_tau{tau:g}", "dmc", _dmc_settings(m, tau)) for tau in m["taus"]]
    return out


# ------------------------------------------------------------------------- results --
def versions() -> dict:
    """Versions of Python and the packages whose results a summary depends on."""
    out = {"python": platform.python_version()}
    for dist in ("fixedqmc", "numpy", "numba", "scipy", "pandas"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _convert(est: dict, factor: float) -> dict:
    """Energies of a stage estimate (its ``energy_columns`` and their errors) times
    ``factor``."""
    cols = set(est.get("energy_columns", ("energy",)))
    return {k: (v * factor if isinstance(v, float) and k.removesuffix("_error") in cols
                else v) for k, v in est.items()}


@dataclass
class RunResult:
    """What :func:`run` returns: the trace, the summary dict and the output folder."""

    trace: pd.DataFrame
    summary: dict
    output: Path

    def table(self) -> pd.DataFrame:
        """The short table printed by the CLI: one row per stage, energies in the
        summary's units."""
        units, f = self.summary["units"], self.summary["unit_factor"]
        rows = []
        for name, est in self.summary["stages"].items():
            e = _convert(est, f)
            rows.append({"stage": name, f"energy ({units})": e["energy"],
                         f"error ({units})": e["energy_error"],
                         f"V ({units})": e["potential"], f"K ({units})": e["kinetic"],
                         "acceptance": e["acceptance"], "blocks": e["blocks"]})
        if "extrapolation" in self.summary:
            x = _convert(self.summary["extrapolation"], f)
            rows.append({"stage": "dmc tau->0", f"energy ({units})": x["energy"],
                         f"error ({units})": x["energy_error"]})
        return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- run --
def _profile_ranges(profile) -> tuple[dict | None, str]:
    """Ranges (with the profile's safety margin) and a digest of a range profile given as
    the ``profile.json`` of ``fixedqmc profile``, its dict, or a RangeProfile."""
    if profile is None:
        return None, ""
    if not isinstance(profile, RangeProfile):
        data = profile
        if not isinstance(profile, dict):
            p = Path(profile)
            if not p.is_file():
                raise FixedQMCError(f"range profile {str(p)!r} does not exist (write one with "
                                    "fixedqmc profile)")
            data = json.loads(p.read_text())
        profile = RangeProfile.from_json(data.get("stats", data))
    text = json.dumps(profile.to_json(), sort_keys=True)
    return profile.ranges(), hashlib.sha256(text.encode()).hexdigest()[:16]


def run(path=None, *, sets=(), overrides: dict | None = None, profile=None,
        progress: bool | None = None, stop_after_blocks: int | None = None) -> RunResult:
    """Run (or resume) the calculation of an input file and/or overrides.

    ``profile``: a range profile (``profile.json`` of ``fixedqmc profile``) whose ranges,
    with their safety margin, size the formats of width-only fixed specs (``fixed:W``);
    without it the declared ranges do.  ``stop_after_blocks`` stops (leaving the
    checkpoint) once that many blocks have been run in this call, as an interruption
    would; ``progress``: None (default) a progress bar when stderr is a terminal, else a
    plain line per tenth of the blocks or per 10 s (:mod:`fixedqmc.progress`); False: none.
    """
    config = load_config(path, sets, overrides)
    ranges, profile_digest = _profile_ranges(profile)
    digest = input_hash(config) + profile_digest
    out = Path(config["output"])
    lock, ck, done = open_folder(out, digest, config, CHECKPOINT, SUMMARY, "run")
    if done is not None:
        say(progress, f"{out}: finished earlier; reporting its stored results")
        return RunResult(pd.read_parquet(out / "trace.parquet"), done, out)
    try:
        return _run(config, ranges, digest, out, lock, ck, progress, stop_after_blocks)
    finally:
        lock.release()


def _run(config, ranges, digest, out, lock, ck, progress, stop_after_blocks) -> RunResult:
    try:  # input errors: nothing this call wrote is left (e.g. a mean-field cache)
        system = build_system(config, ranges)
        check_memory(system, config)
        _check_moves(system, config)
    except BaseException:
        lock.abandon()
        raise
    plan = stages(config)
    t0 = time.perf_counter()
    base = ck["elapsed"] if ck is not None else 0.0
    if ck is None:
        seq = np.random.SeedSequence(config["seed"])
        rng = np.random.default_rng(seq)
        walkers = system.initial_positions(config["method"]["walkers"], rng)
        ck = {"input_hash": digest, "input": config, "stage": 0, "state": None, "done": {},
              "positions": walkers, "rng": rng, "elapsed": 0.0, "overflow": {}}
    else:
        system.log.events.update(ck["overflow"])
    total = sum(st.settings.total_blocks for st in plan)
    finished = sum(plan[i].settings.total_blocks for i in range(ck["stage"])) + (
        ck["state"].block if ck["state"] is not None else 0)
    if finished:
        say(progress, f"{out}: resuming at block {finished} of {total}")
    bar = progress_bar(total, initial=finished, unit="block", desc="run", show=progress)
    ran = 0
    try:
        while ck["stage"] < len(plan):
            stage = plan[ck["stage"]]
            st = ck["state"]
            if st is None:
                start = start_vmc if stage.kind == "vmc" else start_dmc
                st = start(system, ck["positions"], stage.settings, ck["rng"])
            block = vmc_block if stage.kind == "vmc" else dmc_block
            while st.block < stage.settings.total_blocks:
                if stop_after_blocks is not None and ran >= stop_after_blocks:
                    return RunResult(pd.DataFrame(), {"stopped": True}, out)
                block(system, st, stage.settings)
                ran += 1
                ck["state"] = st
                ck["overflow"] = dict(system.log.events)
                ck["elapsed"] = base + time.perf_counter() - t0
                write_checkpoint(out / CHECKPOINT, ck)
                bar.update(1)
            ck["done"][stage.name] = {"kind": stage.kind, "rows": st.rows,
                                      "tau": getattr(stage.settings, "tau", None),
                                      "target": st.extra.get("target"),
                                      "resampled_from": st.extra.get("resampled_from", 0)}
            ck["positions"] = st.positions
            ck["rng"] = st.rng
            ck["state"] = None
            ck["stage"] += 1
            write_checkpoint(out / CHECKPOINT, ck)
    finally:
        bar.close()
    elapsed = base + time.perf_counter() - t0
    result = _finish(config, digest, system, ck["done"], elapsed, out)
    (out / CHECKPOINT).unlink()
    return result


def _check_moves(system, config: dict) -> None:
    """DMC single-particle moves need the gradient at a proposed position: probe the
    system once on two starting walkers, before any work."""
    method = config["method"]
    if method["kind"] != "dmc" or method["move"] != "single":
        return
    pos = system.initial_positions(2, np.random.default_rng(0))
    walkers = Walkers(system.wrap(pos), None)
    walkers.state = system.evaluate(walkers).state
    if system.propose(walkers, 0, walkers.positions[:, 0].copy()).grad is None:
        raise FixedQMCError(f"method.move = 'single' under DMC needs the gradient at a "
                            f"proposed position, which system.kind "
                            f"{config['system']['kind']!r} does not give; use method.move = 'all'")


def _finish(config, digest, system, done: dict, elapsed: float, out: Path) -> RunResult:
    frames = []
    for name, d in done.items():
        df = pd.DataFrame(d["rows"])
        df.insert(0, "stage", name)
        frames.append(df)
    trace = pd.concat(frames, ignore_index=True)
    stage_est = {}
    for name, d in done.items():
        est = stage_est[name] = estimate(d["rows"], d.get("target"),
                                         config["method"]["steps_per_block"])
        if d.get("resampled_from"):
            est["resampled_from"] = d["resampled_from"]
    units, factor = energy_unit(config)
    summary = {"input_hash": digest, "system": config["system"]["kind"], "units": units,
               "unit_factor": factor, "energy_unit_stored": system.units.energy,
               "length_unit": system.units.length, "stages": stage_est, "formats": system.formats(),
               "overflow": {k: int(v) for k, v in system.log.events.items()},
               "overflow_total": int(system.log.total_events),
               "wall_time_s": elapsed, "versions": versions(), "input": config}
    dmc = [(d["tau"], n) for n, d in done.items() if d["kind"] == "dmc"]
    final = stage_est[list(done)[-1]]
    summary["warnings"] = [f"{n}: {w}" for n, e in stage_est.items()
                           for w in e["warnings"] + e.get("cautions", [])]
    if len(dmc) >= 2:
        good = [(t, n) for t, n in dmc if not stage_est[n]["warnings"]]
        if len(good) >= 2:
            x = timestep_extrapolation([t for t, _ in good],
                                       [stage_est[n]["energy"] for _, n in good],
                                       [stage_est[n]["energy_error"] for _, n in good])
            summary["extrapolation"] = {"energy": x["energy"], "energy_error": x["error"],
                                        "slope": x["slope"], "chi2": x["chi2"],
                                        "stages": [n for _, n in good]}
            final = {"energy": x["energy"], "energy_error": x["error"]}
        else:
            summary["warnings"].append(
                "no time-step extrapolation: fewer than two DMC stages passed their checks "
                "(the energy is the last stage's)")
    summary["energy"] = final["energy"]
    summary["energy_error"] = final["energy_error"]
    summary[f"energy_{units}"] = final["energy"] * factor
    summary[f"energy_error_{units}"] = final["energy_error"] * factor
    with atomic_output(out / "trace.parquet") as tmp:
        trace.to_parquet(tmp, index=False)
    with atomic_output(out / "trace.csv") as tmp:
        trace.to_csv(tmp, index=False)
    write_atomic(out / SUMMARY, jsonio.dumps(summary, indent=2).encode())
    return RunResult(trace, summary, out)

