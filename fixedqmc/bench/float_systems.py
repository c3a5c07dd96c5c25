"""The second part of ``fixedqmc bench floats``: one whole local-energy evaluation of each
seed system with every kernel at bfloat16, against float32 and float64.

Systems, built from their inputs as ``fixedqmc run`` builds them:

- ``he64``: He64 with SAPT2 and the two-region tables, on the seed's 4 x 4 x 4 lattice
  start;
- ``h2x8``: 8 H2 on the 2 x 2 x 2 lattice in STO-6G, with RHF orbitals;
- ``heg14``: the electron gas with 14 electrons at r_s = 2 in 3D, with Ewald sums.

Each system is evaluated at the precisions ``float64``, ``float32`` and ``bfloat16`` (every
kernel in the format; the bfloat16 kernels run in the float-format context).

For each system and precision the bench times ``system.evaluate(walkers)`` on the same
walkers (:data:`WALKERS` from ``initial_positions``, seed 0). It reports:

- the first call (compilation or cache loading), timed apart;
- the median and the best of ``repeats`` timed calls, the precisions interleaved round by
  round;
- the ratio of bfloat16 to float32, against the issue's target (at most
  :data:`TARGET_FLOAT32` times).

numba runs on one thread, restored afterwards.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
import pandas as pd

#: the issue's target: a bfloat16 evaluation within this many times its float32 time
TARGET_FLOAT32 = 2.0
PRECISIONS = ("float64", "float32", "bfloat16")
WALKERS = 32
#: the systems' inputs (nested dicts of input keys)
SYSTEMS = {
    "he64": {"system": {"n_atoms": 64, "spacing": 4.2334, "potential": "SAPT2"},
             "tables": {"r_max": 60.0}},
    "h2x8": {"system": {"kind": "molecule", "lattice": 2, "bond": 1.4, "spacing": 6.0,
                        "basis": "sto-6g"}, "trial": {"scf": "rhf"}},
    "heg14": {"system": {"kind": "heg", "electrons": 14, "r_s": 2.0, "dim": 3,
                         "polarisation": 0.0, "ewald_accuracy": 1e-8},
              "method": {"move": "single"}},
}


def build(name: str, precision: str, folder: str, overrides: dict | None = None):
    """System ``name`` of :data:`SYSTEMS` at ``precision`` (its output, e.g. a mean-field
    cache, in ``folder``)."""
    from fixedqmc.run import build_system, load_config
    config = {**SYSTEMS[name], **(overrides or {}), "precision": precision, "output": folder}
    return build_system(load_config(overrides=config))


def run_systems(names=tuple(SYSTEMS), walkers: int = WALKERS, repeats: int = 5,
                overrides: dict | None = None) -> pd.DataFrame:
    """Time one local-energy evaluation per system and precision (module docstring): a row
    per (system, precision) with ``first_call_s``, ``time_ms`` (median), ``best_ms``,
    ``repeats``, ``energy`` (the mean local energy: a check that the evaluations did the
    same work) and ``ratio_to_float32``. ``overrides`` apply to every system's input."""
    import numba

    from fixedqmc.qmc.system import Walkers
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for name in names:
                systems = {p: build(name, p, folder, overrides) for p in PRECISIONS}
                pos = systems["float64"].initial_positions(walkers, np.random.default_rng(0))
                calls, first, energy = {}, {}, {}
                for p, s in systems.items():
                    call = (lambda s=s: s.evaluate(Walkers(pos.copy())))
                    t0 = time.perf_counter()
                    energy[p] = float(np.mean(call().local_energy))
                    first[p] = time.perf_counter() - t0
                    calls[p] = call
                times = {p: [] for p in PRECISIONS}
                for _ in range(repeats):  # interleaved: a change of load hits all alike
                    for p in PRECISIONS:
                        t0 = time.perf_counter()
                        calls[p]()
                        times[p].append(time.perf_counter() - t0)
                for p in PRECISIONS:
                    rows.append({"system": name, "precision": p, "walkers": walkers,
                                 "first_call_s": first[p],
                                 "time_ms": 1e3 * float(np.median(times[p])),
                                 "best_ms": 1e3 * min(times[p]), "repeats": repeats,
                                 "energy": energy[p]})
    finally:
        numba.set_num_threads(threads)
    df = pd.DataFrame(rows)
    f32 = df[df.precision == "float32"].set_index("system").time_ms
    df["ratio_to_float32"] = df.time_ms / df.system.map(f32)
    return df


def targets(df: pd.DataFrame) -> list:
    """``(system, ratio, passed)``: bfloat16 over float32 per system."""
    b = df[df.precision == "bfloat16"]
    return [(r.system, r.ratio_to_float32, r.ratio_to_float32 <= TARGET_FLOAT32)
            for r in b.itertuples()]


def print_systems(df: pd.DataFrame) -> None:
    """The table and the targets, as ``fixedqmc bench floats`` prints them."""
    print(f"Whole local-energy evaluation ({df.walkers.iloc[0]} walkers, every kernel at the "
          "precision; numba on 1 thread; precisions interleaved; time_ms the median):")
    with pd.option_context("display.width", 200):
        print(df.drop(columns="walkers").to_string(index=False, formatters={
            "first_call_s": "{:.3g}".format, "time_ms": "{:.4g}".format,
            "best_ms": "{:.4g}".format, "energy": "{:.6g}".format,
            "ratio_to_float32": "{:.3g}x".format}))
    for system, ratio, passed in targets(df):
        print(f"  {system:<8} bfloat16 / float32 (whole evaluation) {ratio:8.3g}x  "
              f"(target <= {TARGET_FLOAT32:g}x)  {'PASS' if passed else 'FAIL'}")


def parse_systems(text: str | None) -> list[str]:
    """``--systems``: None (all of :data:`SYSTEMS`), ``none`` (none) or names, comma
    separated; an unknown name is a clear error."""
    from fixedqmc.errors import FixedQMCError
    if text is None:
        return list(SYSTEMS)
    if text.strip() == "none":
        return []
    names = [t.strip() for t in text.split(",")]
    bad = [t for t in names if t not in SYSTEMS]
    if bad:
        raise FixedQMCError(f"--systems: {', '.join(map(repr, bad))} not one of "
                            f"{', '.join(SYSTEMS)} (or 'none')")
    return names
