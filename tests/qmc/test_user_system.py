"""A user-defined system through the public API alone (examples/trapped_fermions.py,
loaded from a TOML input's ``plugins``): VMC, DMC, fixed-node DMC, profile and sweep reach
the exact energies (oscillator units, hbar omega)."""

import json
import shutil

import numpy as np
import pytest

from fixedqmc.cli import main
from fixedqmc.errors import FixedQMCError
from fixedqmc.run import run
from fixedqmc.sweep import sweep, tune
from tests.qmc.user_system import EXAMPLE

# One worker runs this module and test_float_sweep.py (make test: --dist loadgroup): both
# compile the example fermion system's kernels, float formats included.
pytestmark = pytest.mark.xdist_group("user_system")

TOML = EXAMPLE.with_name("trapped_fermions_vmc.toml")


def inputs(tmp_path, name, method=None, system=None, alpha=0.8, seed=1):
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)
    m = {"kind": "dmc", "walkers": 300, "blocks": 30, "equil_blocks": 10,
         "steps_per_block": 20, "taus": [0.04, 0.02], "vmc_blocks": 10, **(method or {})}
    return {"plugins": [str(tmp_path / EXAMPLE.name)], "output": str(tmp_path / name),
            "seed": seed, "system": {"kind": "trapped_fermions", **(system or {})},
            "trial": {"alpha": alpha}, "method": m}


def test_exact_trial_function_has_zero_variance(tmp_path, capsys):
    """alpha = 1 is the exact ground state: every local energy is 18 (8 fermions)."""
    out = tmp_path / "vmc"
    assert main(["run", str(TOML), "--set", f"output='{out}'", "--set", "trial.alpha=1.0",
                 "--set", "method.blocks=4", "--set", "method.equil_blocks=1"]) == 0
    assert "energy: 18 +/- 0 hbar_omega" in capsys.readouterr().out
    s = json.loads((out / "summary.json").read_text())
    assert s["energy"] == pytest.approx(18.0, abs=1e-10) and s["energy_error"] < 1e-10
    assert s["units"] == "hbar_omega" and s["system"] == "trapped_fermions"
    # single-particle moves: Sherman-Morrison updates, rebuilt every block
    drift = s["stages"]["vmc"]["recompute_inverse_error_max"]
    assert 0 <= drift < 1e-9


def test_vmc_with_an_approximate_trial_function_is_variational(tmp_path):
    s = run(TOML, sets=[f"output='{tmp_path / 'v'}'", "trial.alpha=0.8"], progress=False).summary
    assert s["energy"] > 18.0 + 5 * s["energy_error"]


@pytest.mark.parametrize("move", ["all", pytest.param("single", marks=pytest.mark.heavy)])
def test_dmc_reaches_the_exact_energy_from_an_approximate_trial_function(tmp_path, move):
    """The nodes of det[P_k(r_i)] are exact for any alpha: fixed-node DMC is exact."""
    method = {} if move == "all" else {"move": "single", "walkers": 200, "blocks": 20}
    s = run(overrides=inputs(tmp_path, move, method), progress=False).summary
    vmc = s["stages"]["vmc"]
    # no check fails (population, stationarity, trend, equilibration); 20-30 blocks may
    # be too few correlation times to trust an error bar, which the stages only say
    assert not [w for w in s["warnings"] if "too short for its correlation time" not in w]
    assert s["extrapolation"]["stages"] == ["dmc_tau0.04", "dmc_tau0.02"]
    assert all(st["projection"]["bias_bound"] < st["energy_error"]
               for name, st in s["stages"].items() if name.startswith("dmc"))
    assert abs(s["energy"] - 18.0) < 4 * s["energy_error"] + 0.01
    assert s["energy"] < vmc["energy"] - 0.1  # DMC projects out the excited components


def test_fixed_node_dmc_gives_the_energy_of_the_node(tmp_path):
    """Two same-spin fermions: psi = (x2 - x1) g(r1) g(r2), exact energy 4 (an excited
    state: the nodeless ground state has 3).  Node crossings are rejected and counted."""
    s = run(overrides=inputs(tmp_path, "fn", system={"n_up": 2, "n_down": 0}, alpha=0.7),
            progress=False).summary
    assert abs(s["energy"] - 4.0) < 4 * s["energy_error"] + 0.005
    assert all(s["stages"][n]["node_crossings"] > 0 for n in ("dmc_tau0.04", "dmc_tau0.02"))


@pytest.mark.heavy
def test_profile_and_sweep_of_a_user_system(tmp_path, capsys):
    cfg = inputs(tmp_path, "sw", {"kind": "vmc", "walkers": 40, "blocks": 6,
                                  "equil_blocks": 2, "steps_per_block": 5})
    res = sweep(overrides=cfg, widths="12,20,44", kernels="potential", workers=1,
                float32=True, progress=False, tolerance=1e-3)
    t = res.table.sort_values("width")
    fixed = t.dropna(subset=["width"])
    d = fixed.paired_diff.abs().to_numpy()
    assert d[0] > d[1] > d[2]  # shrinks with the width ...
    assert d[0] > 1e-3 and d[2] < 1e-9  # ... from a real shift at 12 bits to nothing at 44
    assert res.summary["energy_unit"] == "hbar_omega"
    assert t[t.precision == "float32"].paired_diff.abs().iloc[0] < 1e-4
    # composed of Slater-Jastrow parts, the user's system counts its operations: every
    # fixed point has a cost, wider ones more
    assert res.summary["cost_model"] is not None
    dsp = fixed.cost_dsp.to_numpy()
    assert np.all(dsp > 0) and dsp[0] <= dsp[2]
    toml = tmp_path / "in.toml"
    toml.write_text(TOML.read_text().replace('output = "results/trapped_fermions"',
                                             f'output = "{tmp_path / "prof"}"'))
    shutil.copy(EXAMPLE, tmp_path / EXAMPLE.name)  # plugins: relative to the input file
    assert main(["profile", str(toml), "--set", "method.blocks=3", "--width", "24"]) == 0
    text = capsys.readouterr().out
    assert "potential" in text and "hbar_omega" in text
    # a system without bound_evaluation (optional): refused by name, nothing left behind
    assert main(["bound", str(toml), "--precision", "fixed:24"]) != 0
    assert "'trapped_fermions' cannot be bounded yet" in capsys.readouterr().err
    assert not (tmp_path / "prof" / "bound").exists()


def test_walker_state_travels_with_dmc_branching_and_checkpoints(tmp_path):
    """Interrupt a single-move DMC run twice: the resumed run ends with the same bits."""
    cfg = inputs(tmp_path, "whole", {"move": "single", "walkers": 30, "blocks": 3,
                                      "equil_blocks": 1, "steps_per_block": 4,
                                      "vmc_blocks": 1})
    whole = run(overrides=cfg, progress=False)
    cfg["output"] = str(tmp_path / "parts")
    run(overrides=cfg, progress=False, stop_after_blocks=3)
    run(overrides=cfg, progress=False, stop_after_blocks=4)
    parts = run(overrides=cfg, progress=False)
    assert parts.trace.equals(whole.trace)
    assert np.isfinite(parts.summary["energy"])


def test_tune_of_a_system_without_operation_counts_is_refused(tmp_path):
    """Plans are priced from the counted operations: a system without them is named (the
    example, composed of Slater-Jastrow parts, counts them; a copy made not to)."""
    cfg = inputs(tmp_path, "tu")
    copy = tmp_path / EXAMPLE.name
    copy.write_text(copy.read_text() + "\nTrappedFermions.operation_counts = None\n")
    with pytest.raises(FixedQMCError, match="'trapped_fermions' does not count its "
                                            "operations.*tune needs them"):
        tune(overrides=cfg, tolerance=1e-3, kernels="potential", workers=1, progress=False)
    assert not (tmp_path / "tu" / "tune" / "reference.pkl").exists()
