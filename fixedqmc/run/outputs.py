"""What a run writes and returns: the trace (Parquet and CSV), ``summary.json`` (stage
estimates in the system's and the chosen units, the time-step extrapolation, formats,
overflow counts, timings, versions, the input and its hash) and :class:`RunResult`.  Every
file is written atomically (:mod:`fixedqmc.state_files`)."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pandas as pd

from fixedqmc import jsonio
from fixedqmc.qmc.dmc import timestep_extrapolation
from fixedqmc.qmc.stage_estimate import estimate
from fixedqmc.run.config import energy_unit
from fixedqmc.state_files import atomic_output, write_atomic

__all__ = ["RunResult", "finish", "versions"]
SUMMARY = "summary.json"


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


def finish(config, digest, system, done: dict, elapsed: float, out: Path) -> RunResult:
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
