"""``fixedqmc run``: inputs, outputs, reproducibility, interruption and resume."""

import json

import numpy as np
import pandas as pd
import pytest

from fixedqmc.cli import main
from fixedqmc.errors import FixedQMCError
from fixedqmc.run import load_config, run

SMALL = {"system": {"n_atoms": 3}, "tables": {"r_max": 30.0},
         "method": {"walkers": 16, "blocks": 4, "equil_blocks": 2, "steps_per_block": 5}}
DMC = {"method": {"kind": "dmc", "taus": [0.01, 0.005], "vmc_blocks": 1, "blocks": 3,
                  "equil_blocks": 1}}


def strict_json(path):
    """Load a JSON file with a strict parser (NaN / Infinity tokens are errors)."""
    def refuse(token):
        raise ValueError(f"{path.name}: non-standard JSON token {token}")
    return json.loads(path.read_text(), parse_constant=refuse)


def small(tmp_path, name, extra=None, precision="float64"):
    cfg = {**SMALL, "output": str(tmp_path / name), "precision": precision}
    if extra:
        cfg = {**cfg, "method": {**SMALL["method"], **extra["method"]}}
    return cfg


def test_outputs_and_summary(tmp_path):
    res = run(overrides=small(tmp_path, "a"), progress=False)
    out = tmp_path / "a"
    trace = pd.read_parquet(out / "trace.parquet")
    assert len(trace) == 6 and set(trace.phase) == {"equilibration", "production"}
    pd.testing.assert_frame_equal(pd.read_csv(out / "trace.csv"), trace, check_dtype=False)
    s = strict_json(out / "summary.json")
    assert s["energy"] == res.summary["energy"] and np.isfinite(s["energy_error"])
    assert s["units"] == "K" and s["system"] == "helium" and s["warnings"] == []
    assert s["formats"]["potential.sum"] == "float64"
    assert s["input"]["system"]["n_atoms"] == 3 and "numba" in s["versions"]
    assert not (out / "checkpoint.pkl").exists()


@pytest.mark.parametrize("extra, precision", [
    (None, "float64"), (DMC, "float64"),
    pytest.param(None, "potential=fixed:24:stochastic", marks=pytest.mark.slow)])
def test_interrupted_run_resumes_to_identical_bits(tmp_path, extra, precision):
    whole = run(overrides=small(tmp_path, "whole", extra, precision), progress=False)
    cfg = small(tmp_path, "parts", extra, precision)
    first = run(overrides=cfg, progress=False, stop_after_blocks=3)
    assert first.summary == {"stopped": True}
    assert (tmp_path / "parts" / "checkpoint.pkl").exists()
    run(overrides=cfg, progress=False, stop_after_blocks=2)
    parts = run(overrides=cfg, progress=False)
    pd.testing.assert_frame_equal(parts.trace, whole.trace, check_exact=True)
    assert parts.summary["energy"] == whole.summary["energy"]
    assert parts.summary["overflow"] == whole.summary["overflow"]


def test_same_seed_same_bits_other_seed_differs(tmp_path):
    a = run(overrides=small(tmp_path, "a"), progress=False).trace
    b = run(overrides=small(tmp_path, "b"), progress=False).trace
    c = run(overrides={**small(tmp_path, "c"), "seed": 2}, progress=False).trace
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert not np.array_equal(a.energy, c.energy)


def test_refuses_to_resume_a_different_input(tmp_path):
    cfg = small(tmp_path, "x")
    run(overrides=cfg, progress=False, stop_after_blocks=1)
    with pytest.raises(FixedQMCError, match=r"different input \(keys that differ: seed \(1 there, 9"):
        run(overrides={**cfg, "seed": 9}, progress=False)


def test_output_location_errors_are_named_before_work(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, match in ((afile, "is a file"), (afile / "sub", "cannot be created")):
        with pytest.raises(FixedQMCError, match=match):
            run(overrides={**small(tmp_path, "unused"), "output": str(out)}, progress=False)
        assert main(["run", "--set", f"output='{out}'"]) == 2
        err = capsys.readouterr().err
        assert str(out) in err and "Traceback" not in err
    assert afile.read_text() == "x"


@pytest.mark.parametrize("name", ["checkpoint.pkl", "summary.json"])
def test_a_damaged_state_file_is_named(tmp_path, name):
    cfg = small(tmp_path, "d")
    run(overrides=cfg, progress=False, stop_after_blocks=1 if name == "checkpoint.pkl" else None)
    (tmp_path / "d" / name).write_bytes(b"\x80garbage")
    with pytest.raises(FixedQMCError, match=f"{name}.*damaged.*delete it"):
        run(overrides=cfg, progress=False)


@pytest.mark.parametrize("sets, match", [
    (["method.walkerz=3"], "walkerz"),
    (["system.n_atoms=1"], "n_atoms"),
    (["method.taus=[0.01, -1]"], "taus"),
    (["method.walkers=0"], "walkers"),
    (["method.kind='pimc'"], "pimc"),
    (["system.potential='XYZ'"], "XYZ"),
    (["trial.a=0.0", "trial.b=0.0", "trial.a_k=[0,0,0,0,0,-118.8]"], "normalis"),
    (["precision='kinetic.nope=fixed:32'"], "nope"),
    (["method.kind='dmc'", "method.move='single'"], "move = 'single'.*helium"),
    (["method.blocks=1"], "at least 2"),
    (["method.kind='dmc'", "method.taus=[0.01, 0.005]", "method.blocks=1"], "method.blocks"),
    (["precision='fixed:Q-1.5'"], r"psi = 0 at this precision: values overflowed the formats "
                                  r"of distance.x \(Q-1.5, \d+ events\).*more integer bits"),
])
def test_bad_input_fails_before_writing(tmp_path, sets, match):
    out = tmp_path / "bad"
    with pytest.raises(FixedQMCError, match=match):
        run(sets=[f"output='{out}'", *sets], progress=False)
    assert not out.exists()


def test_toml_file_and_cli(tmp_path, capsys):
    f = tmp_path / "in.toml"
    f.write_text(f'output = "{tmp_path / "cli"}"\n[system]\nn_atoms = 3\n[tables]\nr_max = 30.0\n'
                 '[method]\nwalkers = 8\nblocks = 2\nequil_blocks = 1\nsteps_per_block = 3\n')
    assert load_config(f)["method"]["walkers"] == 8
    assert main(["run", str(f), "--set", "units='mK'"]) == 0
    out = capsys.readouterr().out
    assert "energy (mK)" in out and "summary.json" in out
    assert main(["run", str(tmp_path / "missing.toml")]) == 2


def test_profile_sizes_fixed_formats_of_a_run(tmp_path):
    from fixedqmc.run.config import load_config as load
    from fixedqmc.sweep.estimates import sample_reference

    cfg = small(tmp_path, "p", precision="potential=fixed:28")
    ref = sample_reference(load(overrides=cfg))
    declared = run(overrides=cfg, progress=False)
    profiled = run(overrides={**cfg, "output": str(tmp_path / "p2")},
                   profile={"stats": ref.profile.to_json()}, progress=False)
    f_decl = declared.summary["formats"]["potential.sum"]
    f_prof = profiled.summary["formats"]["potential.sum"]
    assert f_decl != f_prof  # the profile's range of the sum is far narrower
    with pytest.raises(FixedQMCError, match="does not exist"):
        run(overrides=cfg, profile=str(tmp_path / "nope.json"))


@pytest.mark.parametrize("function, match", [
    ("os:system", "raised TypeError"),
    ("user_pots:raises", "raised RuntimeError: nope"),
    ("user_pots:scalar", "must return finite energies.*returned 1.0"),
    ("user_pots:nan", "must return finite energies"),
])
def test_user_potentials_are_probed_before_work(tmp_path, monkeypatch, capsys, function, match):
    (tmp_path / "user_pots.py").write_text(
        "def raises(r):\n    raise RuntimeError('nope')\n"
        "def scalar(r):\n    return 1.0\n"
        "def nan(r):\n    return r * float('nan')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    with pytest.raises(FixedQMCError, match=f"system.potential = '{function}'.*{match}"):
        run(overrides={"system": {"potential": function}, "output": str(out)}, progress=False)
    assert main(["run", "--set", f"system.potential='{function}'", "--set",
                 f"output='{out}'"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert not out.exists()


def test_the_inputs_method_defaults_are_the_drivers_defaults():
    """One place per layer: the run input's method defaults are read from the drivers'
    settings, and VMC and DMC agree on the keys an input shares between them."""
    from fixedqmc.qmc.dmc import DMCSettings
    from fixedqmc.qmc.vmc import VMCSettings
    from fixedqmc.run.config import DEFAULTS
    m, vmc, dmc = DEFAULTS["method"], VMCSettings(), DMCSettings()
    for key, field in (("blocks", "n_blocks"), ("equil_blocks", "equil_blocks"),
                       ("steps_per_block", "steps_per_block"), ("move", "move"),
                       ("recompute_every", "recompute_every")):
        assert m[key] == getattr(vmc, field) == getattr(dmc, field), key
    assert (m["step_size"], m["target_acceptance"]) == (vmc.step_size, vmc.target_acceptance)
    assert (m["taus"], m["energy_cutoff"], m["max_age"]) == ([dmc.tau], dmc.energy_cutoff,
                                                             dmc.max_age)
