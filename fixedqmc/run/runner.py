"""``fixedqmc run``: a complete VMC or DMC calculation from an input, with checkpoints.

:func:`run` validates the input (:mod:`fixedqmc.run.config`), builds the system of its
``system.kind`` through the registry and plans the driver stages (:mod:`fixedqmc.run.plan`;
the runner knows no concrete system), runs the method block by block with its starting
walkers and writes to the output folder (:mod:`fixedqmc.run.outputs`):

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
    variable, overflow counts, timings, versions, the input and its hash (stage estimates:
    :mod:`fixedqmc.qmc.stage_estimate`).
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
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc.errors import FixedQMCError
from fixedqmc.progress import progress as progress_bar
from fixedqmc.progress import say
from fixedqmc.qmc.dmc import dmc_block, start_dmc
from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.qmc.system import Walkers
from fixedqmc.qmc.vmc import start_vmc, vmc_block
from fixedqmc.run.checkpoint import open_folder, write_checkpoint
from fixedqmc.run.config import input_hash, load_config
from fixedqmc.run.memory import check_memory
from fixedqmc.run.outputs import SUMMARY, RunResult, finish
from fixedqmc.run.plan import build_system, stages

__all__ = ["RunResult", "run"]
CHECKPOINT = "checkpoint.pkl"


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


def _check_sizing(config: dict, ranges: dict | None) -> None:
    """Before any work: a ``float:m<M>`` precision sizes its exponent bits from a range
    profile, so without one the run cannot start (the error names the first target)."""
    if ranges is not None:
        return
    from fixedqmc.numerics.policy import PROFILE_SOURCES, parse_precision
    targets = parse_precision(config["precision"]).sized_floats()
    if targets:
        target, p = next(iter(targets.items()))
        raise FixedQMCError(
            f"precision {config['precision']!r}: {target}={p} sizes the exponent bits of "
            "each variable from its profiled largest and smallest nonzero magnitudes, so "
            f"it needs a range profile: {PROFILE_SOURCES}")


def run(path=None, *, sets=(), overrides: dict | None = None, profile=None,
        progress: bool | None = None, stop_after_blocks: int | None = None) -> RunResult:
    """Run (or resume) the calculation of an input file and/or overrides.

    ``profile``: a range profile (``profile.json`` of ``fixedqmc profile``) whose ranges,
    with their safety margin, size the formats of width-only fixed specs (``fixed:W``;
    without it the declared ranges do) and the exponent bits of mantissa-only float specs
    (``float:m<M>``, which need it: without one the run stops before any work).  ``stop_after_blocks`` stops (leaving the
    checkpoint) once that many blocks have been run in this call, as an interruption
    would; ``progress``: None (default) a progress bar when stderr is a terminal, else a
    plain line per tenth of the blocks or per 10 s (:mod:`fixedqmc.progress`); False: none.
    """
    config = load_config(path, sets, overrides)
    ranges, profile_digest = _profile_ranges(profile)
    _check_sizing(config, ranges)
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
    result = finish(config, digest, system, ck["done"], elapsed, out)
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
