"""The HEG precision study (studies/heg_precision/study.py) on a tiny case: its tables have
the rows and columns the README describes, float64 against float64 is exact, and narrow
fixed point and float32 really change the energy."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.sweep.studies import load_study

TINY = {"walkers": 8, "blocks": 3, "equil_blocks": 2, "steps_per_block": 2}
KERNELS = ("all", "ewald_real", "orbitals")


@pytest.fixture(scope="module")
def study():
    return load_study("heg_precision")


@pytest.fixture(scope="module")
def case(study, tmp_path_factory):
    out = tmp_path_factory.mktemp("heg_study")
    summary = study.run_case("heg3d", 3, 14, 2.0, TINY, widths="16,32",
                             kernels=",".join(KERNELS), full="none",
                             tolerance_per_electron=1e-4, workers=1, out=out,
                             timing_walkers=8, timing_seconds=0.01, timing_repeats=1,
                             progress=False)
    return study, summary, out


@pytest.mark.slow  # the tiny study case: minutes of sweeps
def test_paired_table_rows_and_columns(case):
    _, summary, out = case
    t = pd.read_csv(out / "heg3d" / "paired.csv")
    for c in ("kernels", "width", "precision_label", "paired_diff", "paired_error",
              "paired_diff_per_electron", "passes", "overflow_events", "electrons"):
        assert c in t.columns, c
    # every kernel set at W = 16, 32 and float32, nothing else
    assert sorted(t.kernels.unique()) == sorted(KERNELS)
    assert len(t) == len(KERNELS) * 3
    for k in KERNELS:
        labels = sorted(t[t.kernels == k].precision_label)
        assert labels == ["fixed:16", "fixed:32", "float32"], (k, labels)
    assert (t.electrons == 14).all()
    assert np.allclose(t.paired_diff_per_electron * 14, t.paired_diff)
    assert summary["kernel_sets"] == list(KERNELS)
    assert summary["tolerance_hartree"] == pytest.approx(14e-4)
    assert summary["samples"] == [3, 8, 14, 3]
    answer = pd.read_csv(out / "heg3d" / "answer.csv")
    assert sorted(answer.kernels) == sorted(KERNELS)


@pytest.mark.slow  # the tiny study case: minutes of sweeps
def test_fixed16_and_float32_change_the_energy_float64_does_not(case):
    _, _, out = case
    t = pd.read_csv(out / "heg3d" / "paired.csv")
    w16 = t[t.precision_label == "fixed:16"]
    assert (w16.paired_diff != 0).all()
    assert (t[t.precision_label == "float32"].paired_diff != 0).all()
    # the orbitals converge: 16 bits far from float64, 32 bits much closer
    orb = t[t.kernels == "orbitals"].set_index("precision_label")
    assert abs(orb.paired_diff["fixed:32"]) < abs(orb.paired_diff["fixed:16"]) / 100
    assert abs(orb.paired_diff["float32"]) < 1e-5

    sp = pd.read_csv(out / "heg3d" / "speed.csv")
    ctrl = sp[sp.precision.isin(["float64", "float64 (control)"])]
    assert len(ctrl) == 2 and ctrl.identical.all()
    assert (ctrl.mean_diff == 0).all() and (ctrl.max_abs_diff == 0).all()
    f32 = sp[sp.precision == "float32"]
    assert sorted(f32.kernels) == sorted(KERNELS)
    assert not f32.identical.any() and (f32.max_abs_diff > 0).all()
    assert (f32.max_abs_diff < 1e-3).all()
    assert sp.repeatable.all()
    assert (sp.seconds_per_eval > 0).all() and (sp.threads == 1).all()


@pytest.mark.slow  # the tiny study case: minutes of sweeps
def test_report_table_and_figure(case, tmp_path):
    study, summary, out = case
    text = study.markdown([summary], out)
    assert "| kernels | float32 | W=16 | W=32 | narrowest W |" in text
    for k in KERNELS:
        assert f"| {k} | " in text
    fig = study.figure([summary], out, tmp_path / "f.png")
    assert fig is not None and (tmp_path / "f.png").stat().st_size > 1000
    json.dumps(summary, default=str)  # the summary is JSON


def test_kernel_sets_follow_the_system(study):
    ov = study.case_input(2, 10, 2.0, TINY)
    sets = study.kernel_sets(ov)
    assert sets[0] == "all"
    assert {"ewald_real", "ewald_recip", "orbitals", "determinant", "energy"} <= set(sets)
    assert study.kernel_sets(ov, "all,orbitals,jastrow_zz") == ["all", "orbitals"]


@pytest.mark.slow  # an optimisation and its compilation: most of a minute
def test_the_optimised_jastrow_enters_the_case_input(study, tmp_path, monkeypatch):
    """--jastrow optimised: fixedqmc optimize runs first and its chosen parameters, not the
    zero start, are what the sweep samples with."""
    monkeypatch.setattr(study, "OPTIMISE_REDUCED", {"walkers": 30, "blocks": 4,
                                                    "equil_blocks": 2, "steps_per_block": 2})
    monkeypatch.setitem(study.OPTIMISE_CYCLES, "reduced", 1)
    base = {**study.case_input(3, 14, 2.0, TINY, jastrow="optimised"),
            "output": str(tmp_path / "vmc")}
    new, info = study.optimise_jastrow(base, tmp_path, reduced=True, progress=False)
    assert base["jastrow"]["alpha_parallel"] == [0.0] * 4
    values = new["jastrow"]["alpha_parallel"] + new["jastrow"]["p_coefficients"]
    assert len(values) == 7 and any(v != 0 for v in values)
    assert info["parameters"]["jastrow.p_coefficients[0]"] == new["jastrow"]["p_coefficients"][0]
    assert info["variance"] < info["initial_variance"]
    assert (tmp_path / "optimize" / "optimized.toml").is_file()
