"""``fixedqmc bench periodic``: the Ewald energy and the Jastrow factor (u + p: values,
gradients, Laplacians) of the 3D electron gas per configuration, ours at several precisions
and PyQMC's ``Ewald`` side by side in one run (seed 000's dominant periodic kernels).

For each electron count N (3D HEG, simple-cubic cell at ``r_s``, uniform random electrons,
a neutralising background) the same ``CONFIGS`` configurations are evaluated by

* ours: :class:`~fixedqmc.systems.periodic.evaluator.EwaldEvaluator` (kernels ``ewald_real``
  and ``ewald_recip``, parallel over configurations, gamma and cut-offs from the
  work-balancing rule at ``ACCURACY``) at float64, float32 and fixed point (run-time
  formats sized from the declared ranges);
* PyQMC 0.8's ``pyqmc.observables.ewald.Ewald`` on the same cell and configurations (its
  own splitting parameter, 27 lattice images and G vectors of weight > 1e-10), NumPy;
* ours at float64 again at *PyQMC's accuracy* (row ``float64@PyQMC-error``): the requested
  accuracy whose truncation estimate equals PyQMC's measured error against our
  ``ACCURACY`` energies, so that the two codes are also compared at equal accuracy (both
  measured errors are printed).

The Jastrow factor (:func:`bench_jastrow`: N_u = 8, C = 3, 4 stars of p) is timed on the
same configurations (full evaluation: J, grad_i J, lap_i J of every electron) and for a
single-electron move (the change of J and the gradient at the new place, O(N)); PyQMC has
no such u + p form, so it is compared only with our own float64.  Both Ewald codes give the
whole electron-electron energy in the background; PyQMC leaves out the
constant ``N/2 sum_{n != 0} erfc(alpha |n|) / |n|`` (an electron with its own images), which
is added back before the two are compared.  Rates are configurations per second (whole
calls, host work included): our precisions are timed in turn, in :data:`ROUNDS` rounds of
``min_time / ROUNDS`` each, and the median rate over the rounds is reported, so a slow
phase of the machine (seconds long on a shared 2-core VM) does not fall on one precision
only; ratios are taken within the run, the cost growth with N is a least-squares power law
over the sizes.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy.special import erfc

from fixedqmc.bench.machine import load_average, print_machine

#: Electron counts of the 3D HEG (the cost-growth fit runs over them).
SIZES = (54, 128, 250, 512, 1024)
R_S = 2.0
CONFIGS = 16
#: Requested accuracy of our Ewald sums (relative to sum q**2 / a).
ACCURACY = 1e-10
PRECISIONS = ("float64", "float32", "fixed:40")
#: Rounds in which our precisions are timed in turn (the median rate is reported).
ROUNDS = 5
#: The row of our float64 Ewald at PyQMC's accuracy.
MATCHED = "float64@PyQMC-error"
SEED = 5


def configurations(cell, n: int, configs: int = CONFIGS, seed: int = SEED) -> np.ndarray:
    """``configs`` uniform random configurations of ``n`` electrons in ``cell`` (bohr)."""
    rng = np.random.default_rng(seed)
    return rng.random((configs, n, 3)) @ cell.lattice


def _timed(f, min_time: float) -> tuple[int, float]:
    """(calls, seconds) of whole calls of ``f`` for at least ``min_time`` (one at least)."""
    calls, t0 = 0, time.perf_counter()
    while True:
        f()
        calls += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return calls, elapsed


def _interleaved(calls: dict, min_time: float, rounds: int = ROUNDS) -> dict:
    """``{key: calls per second}`` of the functions ``calls`` ``{key: f}``, timed in turn in
    ``rounds`` rounds of ``min_time / rounds`` seconds each (one call at least), the median
    over the rounds: a slow phase of the machine then falls on every key alike."""
    rates = {k: [] for k in calls}
    for _ in range(rounds):
        for k, f in calls.items():
            n, sec = _timed(f, min_time / rounds)
            rates[k].append(n / sec)
    return {k: float(np.median(v)) for k, v in rates.items()}


def pyqmc_available() -> str | None:
    """None if PyQMC's Ewald imports, else why not."""
    try:
        from pyqmc.configurations.coord import PeriodicConfigs  # noqa: F401
        from pyqmc.observables.ewald import Ewald  # noqa: F401
    except Exception as exc:  # ImportError, or PyQMC's own dependencies
        return f"{type(exc).__name__}: {exc}"
    return None


def pyqmc_ewald(cell, n: int):
    """PyQMC's ``Ewald`` for ``n`` electrons in ``cell`` and no ions (one ghost ion of
    charge 0: PyQMC needs at least one), and the constant it leaves out (hartree)."""
    from pyqmc.observables.ewald import Ewald
    lat = np.asarray(cell.lattice, np.float64)
    host = SimpleNamespace(nelec=np.array([n - n // 2, n // 2]),
                           atom_coords=lambda: np.zeros((1, 3)),
                           atom_charges=lambda: np.zeros(1),
                           lattice_vectors=lambda: lat)
    ew = Ewald(host)
    images = np.asarray(ew.lattice_displacements)
    r = np.linalg.norm(images, axis=1)
    r = r[r > 0]
    return ew, n / 2 * 0.5 * float(np.sum(erfc(ew.alpha * r) / r))


def bench_jastrow(cell, n: int):
    """The Jastrow factor timed: u with N_u = 8 (alpha_0 of the monotone cusp term, small
    higher coefficients) at the largest L_u, and p with 4 stars, for ``n`` electrons."""
    from fixedqmc.systems.periodic.jastrow import (cusp_only_alpha0, jastrow_parameters,
                                                   kato_gamma)
    big_l = cell.inscribed_radius
    tail = [0.01 / big_l ** (k + 3) for k in range(2, 9)]
    alphas = {f"alpha_{name}": [cusp_only_alpha0(big_l, 3, kato_gamma(3, par)), *tail]
              for name, par in (("parallel", True), ("antiparallel", False))}
    return jastrow_parameters(cell, n, c=3, p_coefficients=[0.01, -0.005, 0.002, -0.001],
                              **alphas)


def run_periodic(sizes=SIZES, precisions=PRECISIONS, configs: int = CONFIGS,
                 min_time: float = 1.0, pyqmc: bool = True,
                 log=lambda *a: print(*a, flush=True)) -> pd.DataFrame:
    """One row per (N, code and precision): configurations/s, seconds per configuration,
    and the largest |E - E_float64| per configuration (hartree)."""
    from fixedqmc.systems.periodic import JastrowEvaluator, heg_cell
    from fixedqmc.systems.periodic.evaluator import EwaldEvaluator
    rows = []
    why = pyqmc_available() if pyqmc else "skipped (--no-pyqmc)"
    if why is not None:
        log(f"PyQMC's Ewald not timed: {why}")
    for n in sizes:
        cell = heg_cell(n, R_S, 3)
        pos = configurations(cell, n, configs)
        charges = -np.ones(n)
        evs = {}
        for spec in precisions:
            ev = EwaldEvaluator(cell, charges, precision=spec, accuracy=ACCURACY)
            evs[spec] = (ev, ev.energy(pos).total)  # compile / warm up
        rates = _interleaved({s: (lambda ev=ev: ev.energy(pos)) for s, (ev, _) in evs.items()},
                             min_time)
        ref = evs[precisions[0]][1]
        for spec, (ev, e) in evs.items():
            p = ev.params
            rows.append({"N": n, "code": "fixedqmc", "precision": spec, "part": "ewald",
                         "configs_per_s": rates[spec] * configs,
                         "s_per_config": 1 / (rates[spec] * configs),
                         "max_abs_dE": float(np.abs(e - ref).max()),
                         "detail": f"gamma {p.gamma:.3g}/bohr, {len(p.images)} images, "
                                   f"{len(p.gints)} G"})
            log(f"N = {n:5d} fixedqmc {spec:10s} {rows[-1]['configs_per_s']:.4g} configs/s")
        jp = bench_jastrow(cell, n)
        jevs = {}
        for spec in precisions:
            ev = JastrowEvaluator(jp, spec)
            jevs[spec] = (ev, ev.evaluate(pos))  # compile / warm up
        rates = _interleaved({s: (lambda ev=ev: ev.evaluate(pos)) for s, (ev, _) in
                              jevs.items()}, min_time)
        jref = jevs[precisions[0]][1]
        for spec, (ev, v) in jevs.items():
            rows.append({"N": n, "code": "fixedqmc", "precision": spec, "part": "jastrow",
                         "configs_per_s": rates[spec] * configs,
                         "s_per_config": 1 / (rates[spec] * configs),
                         "max_abs_dE": float(max(np.abs(v.value - jref.value).max(),
                                                 np.abs(v.lap - jref.lap).max())),
                         "detail": f"N_u {jp.n_u}, {jp.n_p} stars, L_u {jp.cutoff:.3g} bohr"})
            log(f"N = {n:5d} fixedqmc {spec:10s} Jastrow {rows[-1]['configs_per_s']:.4g} "
                "configs/s")
        for row in _jastrow_moves({s: ev for s, (ev, _) in jevs.items()}, pos, n, min_time):
            rows.append(row)
            log(f"N = {n:5d} fixedqmc {row['precision']:10s} Jastrow move "
                f"{row['configs_per_s']:.4g} moves/s")
        if why is None:
            from pyqmc.configurations.coord import PeriodicConfigs
            ew, missing = pyqmc_ewald(cell, n)
            cfg = PeriodicConfigs(pos.copy(), np.asarray(cell.lattice, np.float64))
            e = ew.energy(cfg)[0] + missing
            calls, sec = _timed(lambda: ew.energy(cfg), min_time)
            err = float(np.abs(e - ref).max())
            rows.append({"N": n, "code": "PyQMC", "precision": "float64 (NumPy)",
                         "part": "ewald", "configs_per_s": calls * configs / sec,
                         "s_per_config": sec / (calls * configs), "max_abs_dE": err,
                         "detail": f"alpha {ew.alpha:.3g}/bohr, 27 images, "
                                   f"{len(ew.gpoints)} G"})
            log(f"N = {n:5d} PyQMC Ewald          {rows[-1]['configs_per_s']:.4g} configs/s")
            scale = evs[precisions[0]][0].params.energy_scale
            rows.append(_at_matched_accuracy(cell, charges, pos, ref, err / scale,
                                             min_time))
            log(f"N = {n:5d} fixedqmc float64 at PyQMC's error "
                f"{rows[-1]['configs_per_s']:.4g} configs/s")
    return pd.DataFrame(rows)


def _jastrow_moves(evs: dict, pos, n: int, min_time: float) -> list:
    """Rows of one single-electron move of every configuration (electron ``n // 2`` by 0.3
    bohr) by the Jastrow evaluators ``evs`` ``{spec: evaluator}``: the change of J and grad_i
    J at the new place (O(N) per move); the rate counts moves (one per configuration),
    ``max_abs_dE`` is the largest error of the change of J against the float64 reference
    (:func:`~fixedqmc.systems.periodic.jastrow.move`)."""
    from fixedqmc.systems.periodic.jastrow import move
    i = n // 2
    new = pos[:, i] + 0.3
    changes = {s: ev.move(pos, i, new)[0] for s, ev in evs.items()}  # compile / warm up
    rates = _interleaved({s: (lambda ev=ev: ev.move(pos, i, new)) for s, ev in evs.items()},
                         min_time)
    ref, _ = move(next(iter(evs.values())).params, pos, i, new)
    return [{"N": n, "code": "fixedqmc", "precision": s, "part": "jastrow move",
             "configs_per_s": rates[s] * len(pos), "s_per_config": 1 / (rates[s] * len(pos)),
             "max_abs_dE": float(np.abs(dj - ref).max()), "detail": f"electron {i}, 0.3 bohr"}
            for s, dj in changes.items()]


def _at_matched_accuracy(cell, charges, pos, ref, relative_err: float, min_time: float
                         ) -> dict:
    """Our float64 Ewald at the requested accuracy whose truncation estimate equals PyQMC's
    measured error (``relative_err``: against our ``ACCURACY`` energies ``ref``, relative to
    the Ewald energy scale): the two codes timed at equal accuracy; its own measured error
    is in the row."""
    from fixedqmc.systems.periodic.evaluator import EwaldEvaluator
    from fixedqmc.systems.periodic.ewald import ACCURACY_RANGE
    accuracy = float(np.clip(relative_err, ACCURACY, ACCURACY_RANGE[1]))
    ev = EwaldEvaluator(cell, charges, precision="float64", accuracy=accuracy)
    e = ev.energy(pos).total
    calls, sec = _timed(lambda: ev.energy(pos), min_time)
    p = ev.params
    return {"N": len(charges), "code": "fixedqmc", "precision": MATCHED, "part": "ewald",
            "configs_per_s": calls * len(pos) / sec, "s_per_config": sec / (calls * len(pos)),
            "max_abs_dE": float(np.abs(e - ref).max()),
            "detail": f"accuracy {accuracy:.2g}: gamma {p.gamma:.3g}/bohr, {len(p.images)} "
                      f"images, {len(p.gints)} G"}


def ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Per N: each of our precisions against our float64 and against PyQMC."""
    out = []
    for (n, part), g in df.groupby(["N", "part"]):
        rate = dict(zip(g.code + " " + g.precision, g.configs_per_s))
        f64 = rate.get("fixedqmc float64")
        peer = next((v for k, v in rate.items() if k.startswith("PyQMC")), None)
        for k, v in rate.items():
            if k.startswith("fixedqmc"):
                out.append({"N": n, "part": part, "ours": k.split(" ", 1)[1],
                            "vs_our_float64": v / f64 if f64 else np.nan,
                            "vs_PyQMC": v / peer if peer else np.nan})
    return pd.DataFrame(out)


def growth(df: pd.DataFrame) -> dict:
    """Least-squares exponent p of seconds per configuration ~ N**p, per code/precision."""
    out = {}
    for (part, code, spec), g in df.groupby(["part", "code", "precision"]):
        if len(g) > 1:
            out[f"{part}: {code} {spec}"] = float(np.polyfit(np.log(g.N),
                                                             np.log(g.s_per_config), 1)[0])
    return out


def main_periodic(sizes=SIZES, precisions=PRECISIONS, configs: int = CONFIGS,
                  min_time: float = 2.0, pyqmc: bool = True) -> int:
    from fixedqmc.input_checks import check_int, check_positive
    from fixedqmc.numerics.policy import parse_precision

    check_int("--walkers", configs)
    check_positive("--min-time", min_time)
    for n in sizes:
        check_int("--electrons", n)
    for p in precisions:
        parse_precision(p)
    print_machine()
    print(f"3D electron gas, r_s = {R_S} bohr, simple-cubic cell, {configs} random "
          f"configurations per N; our accuracy {ACCURACY:g} (relative to sum q**2 / a)")
    df = run_periodic(sizes, precisions, configs, min_time, pyqmc)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(df.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        r = ratios(df)
        print(r.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    for k, p in growth(df).items():
        print(f"cost per configuration grows as N^{p:.2f} ({k}, N = {min(sizes)}..{max(sizes)})")
    big = r[r.N == r.N.max()]
    for _, row in big.iterrows():
        if row.part == "ewald" and row.ours == "float64" and np.isfinite(row.vs_PyQMC):
            print(f"target: our float64 Ewald >= 10x PyQMC's: {row.vs_PyQMC:.3g}x at N = {row.N}"
                  f" (ours at accuracy {ACCURACY:g})")
        if row.part == "ewald" and row.ours == MATCHED:
            print(f"target: our float64 Ewald >= 10x PyQMC's at equal accuracy: "
                  f"{row.vs_PyQMC:.3g}x at N = {row.N}")
        if row.ours == "float32":
            print(f"target: float32 >= 1.4x our float64 ({row.part}): "
                  f"{row.vs_our_float64:.3g}x at N = {row.N}")
    print(f"load average at the end: {load_average()}")
    return 0
