"""The float-formats study (studies/float_formats/study.py): why a format fails, the
cheapest format per kernel, the plan's spec, and its notebook over the committed results."""

import pandas as pd
import pytest

from tests.notebooks import execute, shown
from tests.sweep.studies import load_study


@pytest.fixture(scope="module")
def study():
    return load_study("float_formats")


def test_a_format_fails_on_precision_below_the_narrowest_mantissa_else_on_range(study):
    row = pd.Series({"format": "bfloat16", "overflow_vars": "{}", "float_events": "{}"})
    assert study.why_fails(row, 10, 0.5) == "precision (needs m10)"
    assert study.why_fails(row, float("nan"), 0.5) == "precision (no swept mantissa passes)"
    assert study.why_fails(row, 10, float("nan")) == "non-finite energies"
    row = pd.Series({"format": "float16", "overflow_vars": '{"k.x": 1, "energy.lap": 3}',
                     "float_events": '{"k.y": {"underflow": 2, "subnormal": 5}, '
                                     '"k.z": {"subnormal": 9}, "k.w": {"nan": 1}}'})
    events = "overflow: energy.lap, k.x; underflow: k.y; nan: k.w"
    assert study.why_fails(row, 10, 0.5) == f"range; {events}"  # m10 is enough bits
    assert study.why_fails(row, 13, 0.5) == f"precision (needs m13); {events}"


def test_the_cheapest_format_is_the_lowest_rung_that_passes(study):
    row = {"passing": ["float16", "bfloat16", "tf32"], "float32_passes": True,
           "value_bfloat16": 0.5, "value_float16": 0.2, "value_tf32": 0.2}
    assert study.cheapest(row) == (1, "float16")  # the 16-bit rung, the smaller value
    row = {"passing": [], "float32_passes": True}
    assert study.cheapest(row) == (3, "float32")
    row = {"passing": [], "float32_passes": False}
    assert study.cheapest(row) == (4, "float64")
    row = {"passing": ["fp8e4m3"], "float32_passes": True, "value_fp8e4m3": 1.0}
    assert study.cheapest(row) == (0, "fp8e4m3")


def test_a_plan_spec_leaves_float64_kernels_to_the_default(study):
    assert study.plan_spec({"distance": "bfloat16", "kinetic": "float64",
                            "potential": "float32"}) == (
        "default=float64,distance=bfloat16,potential=float32")


def test_the_notebook_shows_the_committed_results(tmp_path):
    outputs = execute("float_formats", tmp_path, 300)
    text = shown(outputs)
    assert "== He3" in text and "narrowest mantissa" in text and "precision (needs m" in text
    assert "full_verdict" in text and "default=float64," in text
    assert any("image/png" in o.get("data", {}) for o in outputs)


@pytest.mark.parametrize("which", ["Ne3:kinetic", "He3", "He3:"])
def test_which_needs_a_system_and_its_kernels(study, which, capsys):
    with pytest.raises(SystemExit):
        study.main(["--which", which])
    assert "--which" in capsys.readouterr().err
