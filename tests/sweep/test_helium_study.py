"""The helium bit-width study (studies/helium_bitwidth/study.py): its printed table has, in
every cell, a width or the stated reason why there is none."""

import re

import pandas as pd
import pytest

from fixedqmc.sweep import sweep
from tests.sweep.studies import load_study

TINY = {"system": {"n_atoms": 3}, "tables": {"r_max": 40.0},
        "method": {"walkers": 10, "blocks": 6, "equil_blocks": 2, "steps_per_block": 4}}


@pytest.fixture(scope="module")
def study():
    return load_study("helium_bitwidth")


def test_every_cell_has_a_width_or_a_reason(study, tmp_path):
    """A tiny sweep in mode both where some estimates cannot answer (for seed 2, widths too
    narrow for a 1 nK tolerance); the wave-function kernel, invisible to the paired
    estimate, gets its paired widths from the reweighted one."""
    answers = []
    for seed, tol in ((1, 0.01), (2, 1e-9)):
        res = sweep(overrides={**TINY, "seed": seed, "output": str(tmp_path / f"s{seed}")},
                    widths="14,40", kernels="wavefunction,potential", tolerance=tol,
                    mode="both", workers=1, float32=False, progress=False)
        answers.append(res.answer.assign(case="He3", seed=seed))
    table = study.answer_table(pd.concat(answers, ignore_index=True))
    assert list(table.columns) == ["case", "kernels", "paired W (per seed)", "why no paired W",
                                   "full W (per seed)", "why no full W",
                                   "predicted W (bounds)"]
    assert len(table) == 2
    for _, row in table.iterrows():
        for m in ("paired", "full"):
            said = {seed for reason in filter(None, row[f"why no {m} W"].split(" | "))
                    for seed in re.match(r"seeds? ([\d, ]+): ", reason).group(1).split(", ")}
            for seed, w in zip(("1", "2"), row[f"{m} W (per seed)"].split(", ")):
                assert w.isdigit() != (seed in said), (row, m, seed)  # a width or a reason
    wave, pot = table.set_index("kernels").loc[["wavefunction", "potential"]].iloc
    # the wave function acts only through sampling: the reweighted estimate judges it
    for ans in answers:
        judged = ans.set_index("kernels").judged_by
        assert judged["wavefunction"] == ["reweighted", "full"]
        assert judged["potential"] == ["paired", "full"]
    assert all(w.isdigit() for w in wave["paired W (per seed)"].split(", "))
    assert wave["why no paired W"] == ""
    assert pot["paired W (per seed)"] == "40, none"
    # the bounds: 40 bits meet 10 mK on every sample, nothing meets 1 nK
    assert pot["predicted W (bounds)"] == "40, none"
    assert wave["predicted W (bounds)"] == "none, none"  # acts through sampling only
    assert pot["why no paired W"].startswith("seed 2: paired: no width passes: at the "
                                             "widest, 40 bits")


def test_resources_stream_one_pair_per_cycle(study):
    """He3 at 32 bits, one atom pair per cycle: the squared distance takes 3 products per
    pair, the potential's and the wave function's quadratic lookups 4 each (scaling, u c,
    u (b + u c), the rescaling); a signed 32 x 32 product takes 2 x 2 DSP48 slices; each
    kernel's three coefficient tables of 1,600 32-bit words take 4 block RAMs each."""
    table = study.seed_resources("He3", widths=(32,)).set_index("kernels")
    assert list(table["products per pair"][:2]) == [3 + 4, 3 + 4 + 4]
    assert list(table.dsp48[:2]) == [4 * 7, 4 * 11]
    assert list(table.bram18) == [12, 24, 48]
    assert list(table["dsp48 (seed)"]) == [25, 50, 75]
