"""``fixedqmc optimize``: optimise a system's linear wave-function parameters (e.g. the Jastrow
factor of the electron gas) by VMC cycles, with checkpoints.

Each of ``optimize.cycles`` cycles samples ``|psi(c)|**2`` by VMC with the input's
``[method]`` settings (``walkers``, ``equil_blocks``, ``blocks``, ``steps_per_block``,
``move``; the first cycle equilibrates from the system's starting walkers, later ones
continue from the last walkers after one equilibration block), keeps the walkers at the end of every production block as
the samples (walkers x blocks), evaluates them at float64 and updates c on those samples
with :mod:`fixedqmc.qmc.optimize` (``optimize.method``: ``variance`` or ``energy``).  One
more VMC at the last parameters closes the series.  The parameters of the cycle with the
lowest objective (the variance of E_L, or the energy) are the result.  Optimisation always
runs at float64, whatever ``precision`` says; the parameters are a property of the trial
function, which later runs evaluate at any precision.

Output folder (``output``):

``optimize.parquet`` / ``optimize.csv``
    one row per cycle: VMC energy and error bar (reblocked), variance of E_L, acceptance,
    samples (and ``dropped``: samples on a node of psi, whose E_L or gradient is not
    finite, left out of the update), every parameter (its input key as the column name), and for the cycles that
    made a step the prediction on their own samples (``predicted_energy``,
    ``predicted_variance``, ``effective_samples``).
``optimize.json``
    the chosen cycle, its parameters and energy, the first cycle's energy and variance,
    the input and its hash, timings and versions.
``optimized.toml``
    the complete input with the chosen parameters (and ``output`` = ``<output>/run``):
    ``fixedqmc run optimized.toml`` uses them.
``optimize.png``
    energy and variance per cycle.
``optimize_checkpoint.pkl``
    the state after the last finished cycle, sealed and written atomically
    (:mod:`fixedqmc.run.checkpoint`; the folder is locked as for a run): an interrupted
    optimisation resumes there and ends with the same bits as an uninterrupted one.

A system without linear parameters (:class:`~fixedqmc.qmc.system.LinearParameters`), or
with none in this input, is refused with a clear error before any work.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from fixedqmc import jsonio
from fixedqmc.errors import FixedQMCError
from fixedqmc.progress import progress as progress_bar
from fixedqmc.progress import say
from fixedqmc.qmc.optimize import (QuadraticEnergy, linear_method_step, minimise_variance,
                                   reweighted)
from fixedqmc.qmc.stage_estimate import estimate
from fixedqmc.qmc.system import LinearParameters, Walkers
from fixedqmc.qmc.vmc import start_vmc, vmc_block
from fixedqmc.run.checkpoint import open_folder, write_checkpoint
from fixedqmc.run.config import input_hash, load_config
from fixedqmc.run.memory import available_bytes, check_memory
from fixedqmc.run.outputs import versions
from fixedqmc.run.plan import build_system, vmc_settings
from fixedqmc.state_files import atomic_output, readable_bytes, write_atomic

__all__ = ["OptimizeResult", "optimize"]
CHECKPOINT = "optimize_checkpoint.pkl"
SUMMARY = "optimize.json"


@dataclass
class OptimizeResult:
    """What :func:`optimize` returns: the per-cycle table, the summary, the output folder
    and the path of the optimised input."""

    table: pd.DataFrame
    summary: dict
    output: Path

    @property
    def input_file(self) -> Path:
        return self.output / "optimized.toml"


def _with_parameters(config: dict, sections: dict) -> dict:
    out = copy.deepcopy(config)
    for name, keys in sections.items():
        out[name].update(keys)
    return out


def _float64_system(config: dict, c=None, template=None):
    """The system of ``config`` at float64 (parameters c if given, through the
    ``template`` system's ``parameter_input``)."""
    if c is not None:
        config = _with_parameters(config, template.parameter_input(c))
    return build_system({**config, "precision": "float64", "specialise": False})


def _check_system(system, config: dict) -> None:
    kind = config["system"]["kind"]
    if not isinstance(system, LinearParameters):
        raise FixedQMCError(
            f"system.kind {kind!r} has no optimisable linear parameters (it does not "
            "implement parameter_names, parameter_vector, parameter_basis and "
            "parameter_input of fixedqmc.qmc.system.LinearParameters)")
    if not system.parameter_names():
        raise FixedQMCError(
            f"this {kind!r} input has no optimisable parameters: nothing to optimise "
            "(for the electron gas, set jastrow.enabled = true)")
    m = config["method"]
    n_s = m["walkers"] * m["blocks"]
    need = 8.0 * n_s * len(system.parameter_names()) * (4 * system.n_particles + 2) * 1.5
    avail = available_bytes()
    if avail is not None and need > 0.8 * avail:
        raise FixedQMCError(
            f"the optimisation keeps {n_s} samples (method.walkers x method.blocks) with "
            f"their basis derivatives, about {readable_bytes(need)}, more than the "
            f"{readable_bytes(avail)} available; lower method.walkers or method.blocks")


def _sample(system, positions, settings, rng):
    """One VMC series: the state and the walkers at the end of each production block."""
    st = start_vmc(system, positions, settings, rng)
    samples = []
    while st.block < settings.total_blocks:
        row = vmc_block(system, st, settings)
        if row["phase"] == "production":
            samples.append(st.positions.copy())
    return st, np.concatenate(samples)


def _cycle(system, ck: dict, config: dict, method: str, last: bool) -> dict:
    """Sample at the checkpoint's parameters, then (unless ``last``) update them."""
    m = config["method"]
    equil = m["equil_blocks"] if ck["cycle"] == 0 else min(m["equil_blocks"], 1)
    settings = replace(vmc_settings(m, equil=equil), step_size=ck["step_size"])
    st, samples = _sample(system, ck["positions"], settings, ck["rng"])
    est = estimate(st.rows)
    ev = system.evaluate(Walkers(samples.copy(), None))
    ok = np.isfinite(ev.local_energy) & np.isfinite(ev.grad).all(axis=(1, 2))
    e, grad, samples = ev.local_energy[ok], ev.grad[ok], samples[ok]
    names = system.parameter_names()
    row = {"cycle": ck["cycle"], "energy": est["energy"], "energy_error": est["energy_error"],
           "variance": float(np.var(e)), "acceptance": est["acceptance"],
           "samples": int(e.size), "dropped": int((~ok).sum()),
           **dict(zip(names, ck["c"].tolist()))}
    if not last:
        q = QuadraticEnergy.from_samples(ck["c"], e, grad, *system.parameter_basis(samples),
                                         system.hbar2_2m)
        c, info = minimise_variance(q) if method == "variance" else linear_method_step(q)
        pred = reweighted(q, c)
        row.update(predicted_energy=pred["energy"], predicted_variance=pred["variance"],
                   effective_samples=pred["effective"])
        ck["c"] = c
    ck.update(positions=st.positions, rng=st.rng, step_size=st.step_size)
    return row


def optimize(path=None, *, sets=(), overrides: dict | None = None,
             progress: bool | None = None, stop_after_cycles: int | None = None
             ) -> OptimizeResult:
    """Run (or resume) ``fixedqmc optimize`` on an input file and/or overrides (module
    docstring).  ``stop_after_cycles`` stops after that many cycles of this call, leaving
    the checkpoint, as an interruption would; ``progress`` as for :func:`~.runner.run`."""
    config = load_config(path, sets, overrides)
    digest = input_hash(config, optimize=True)
    out = Path(config["output"])
    lock, ck, done = open_folder(out, digest, config, CHECKPOINT, SUMMARY, "optimize")
    if done is not None:
        say(progress, f"{out}: optimised earlier; reporting its stored results")
        return OptimizeResult(pd.read_parquet(out / "optimize.parquet"), done, out)
    try:
        return _optimize(config, digest, out, lock, ck, progress, stop_after_cycles)
    finally:
        lock.release()


def _optimize(config, digest, out, lock, ck, progress, stop_after_cycles) -> OptimizeResult:
    opt = config["optimize"]
    try:  # input errors: nothing this call wrote is left (e.g. a mean-field cache)
        base = _float64_system(config)
        _check_system(base, config)
        check_memory(base, config, samples=True)
    except BaseException:
        lock.abandon()
        raise
    if ck is None:
        rng = np.random.default_rng(np.random.SeedSequence(config["seed"]))
        ck = {"input_hash": digest, "input": config, "cycle": 0, "rows": [],
              "c": base.parameter_vector(), "rng": rng, "elapsed": 0.0,
              "positions": base.initial_positions(config["method"]["walkers"], rng),
              "step_size": float(config["method"]["step_size"])}
    else:
        say(progress, f"{out}: resuming at cycle {ck['cycle']} of {opt['cycles'] + 1}")
    total = opt["cycles"] + 1
    bar = progress_bar(total, initial=ck["cycle"], unit="cycle", desc="optimize", show=progress)
    t0, ran = time.perf_counter(), 0
    try:
        while ck["cycle"] < total:
            if stop_after_cycles is not None and ran >= stop_after_cycles:
                return OptimizeResult(pd.DataFrame(ck["rows"]), {"stopped": True}, out)
            system = base if ck["cycle"] == 0 else _float64_system(config, ck["c"], base)
            ck["rows"].append(_cycle(system, ck, config, opt["method"],
                                     last=ck["cycle"] == total - 1))
            ck["cycle"] += 1
            ck["elapsed"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            ran += 1
            write_checkpoint(out / CHECKPOINT, ck)
            bar.update(1)
    finally:
        bar.close()
    result = _finish(config, digest, base, ck, out)
    (out / CHECKPOINT).unlink()
    return result


def _finish(config: dict, digest: str, base, ck: dict, out: Path) -> OptimizeResult:
    import tomli_w

    table = pd.DataFrame(ck["rows"])
    names = base.parameter_names()
    objective = config["optimize"]["method"]  # the table column it minimises
    best = int(table[objective].idxmin())
    c = table.loc[best, names].to_numpy(np.float64)
    optimised = _with_parameters(config, base.parameter_input(c))
    optimised["output"] = str(out / "run")
    first, chosen = table.iloc[0], table.iloc[best]
    summary = {"input_hash": digest, "system": config["system"]["kind"],
               "method": config["optimize"]["method"], "cycles": int(len(table) - 1),
               "chosen_cycle": best, "objective": objective,
               "parameters": dict(zip(names, c.tolist())),
               "energy": float(chosen["energy"]), "energy_error": float(chosen["energy_error"]),
               "variance": float(chosen["variance"]),
               "initial_energy": float(first["energy"]),
               "initial_energy_error": float(first["energy_error"]),
               "initial_variance": float(first["variance"]),
               "energy_unit": base.units.energy, "wall_time_s": ck["elapsed"],
               "versions": versions(), "input": config}
    for name, write in (("optimize.parquet", lambda p: table.to_parquet(p, index=False)),
                        ("optimize.csv", lambda p: table.to_csv(p, index=False)),
                        ("optimize.png", lambda p: _figure(table, base.units.energy, p))):
        with atomic_output(out / name) as tmp:
            write(tmp)
    write_atomic(out / "optimized.toml", tomli_w.dumps(optimised).encode())
    write_atomic(out / SUMMARY, jsonio.dumps(summary, indent=2).encode())
    return OptimizeResult(table, summary, out)


def _figure(table: pd.DataFrame, unit: str, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(5, 5))
    ax1.errorbar(table["cycle"], table["energy"], table["energy_error"], marker="o")
    ax1.set_ylabel(f"VMC energy ({unit})")
    ax2.plot(table["cycle"], table["variance"], marker="o")
    ax2.set_ylabel(f"variance of E_L ({unit}$^2$)")
    ax2.set_yscale("log")
    ax2.set_xlabel("cycle")
    ax2.xaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)
