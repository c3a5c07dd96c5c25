"""The mission-at-a-glance study (studies/mission/study.py, ``make run``): its answer rows
from a sweep's table and answer, its figure, and (slow) a quick run of He3."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.sweep.studies import load_study


@pytest.fixture(scope="module")
def study():
    return load_study("mission")


def sweep_table():
    """A sweep table of two kernel sets: widths 16, 24, 32, mantissas 4, 8 and float32."""
    rows = []
    for k, f32_error in (("potential", 0.001), ("all", 0.5)):
        for w, d in ((16, 0.3), (24, 0.004), (32, 0.0)):
            rows.append({"kernels": k, "width": w, "mantissa": np.nan,
                         "paired_diff": d, "paired_error": 0.001})
        for m, d in ((4, 0.2), (8, 0.003)):
            rows.append({"kernels": k, "width": np.nan, "mantissa": m,
                         "paired_diff": d, "paired_error": 0.001})
        rows.append({"kernels": k, "width": np.nan, "mantissa": np.nan,
                     "paired_diff": f32_error, "paired_error": 0.001})
    return pd.DataFrame(rows)


def test_answer_rows_take_the_sweeps_answer_and_judge_float32(study):
    answer = pd.DataFrame({"kernels": ["potential", "all"], "narrowest_width": [24, 24],
                           "narrowest_mantissa": [8, 8], "note": ["", "a note"]})
    case = {"tolerance": 0.01, "unit": "K"}
    rows = study.answer_rows("He3", case, sweep_table(), answer)
    assert list(rows.kernels) == ["potential", "all"]
    assert list(rows.float32_passes) == [True, False]  # 0.003 <= 0.01 < 0.502
    assert list(rows.narrowest_width) == [24, 24] and list(rows.narrowest_mantissa) == [8, 8]
    assert set(rows.system) == {"He3"} and list(rows.note) == ["", "a note"]


def test_figure_has_a_panel_per_system(study, tmp_path):
    tables = pd.concat([sweep_table().assign(system=s) for s in ("He3", "8 H2")])
    systems = {"He3": {"tolerance": 0.01, "unit": "K"},
               "8 H2": {"tolerance": 5e-4, "unit": "hartree"}}
    study.plot(tables, systems, tmp_path / "m.png")
    assert (tmp_path / "m.png").stat().st_size > 10_000


def test_unknown_system_is_refused(study, capsys):
    with pytest.raises(SystemExit):
        study.main(["--systems", "Ar12"])
    assert "Ar12" in capsys.readouterr().err


@pytest.mark.slow  # sweeps every helium kernel set: compilations of several contexts
def test_quick_run_of_he3_writes_the_table_summary_and_figure(study, tmp_path, capsys):
    assert study.main(["--quick", "--systems", "He3", "--output", str(tmp_path),
                       "--workers", "1"]) == 0
    table = pd.read_csv(tmp_path / "mission.csv")
    assert set(table.kernels) == {"distance", "potential", "wavefunction", "kinetic", "all"}
    assert table.float32_passes.isin([True, False]).all()
    summary = json.loads((tmp_path / "mission.json").read_text())
    assert summary["quick"] and summary["wall_time_s"]["He3"] > 0
    assert (tmp_path / "mission.png").is_file()
    assert (tmp_path / "he3" / "answer.json").is_file()
    out = capsys.readouterr().out
    assert "narrowest fixed width" in out and "mission.csv" in out
