"""Jastrow optimisation of the electron gas (fixedqmc optimize): the quadratic local energy
of the linear parameters against systems rebuilt with other parameters, variance and energy
minimisation lowering the variance and the energy, outputs, resume and bad input."""

import json
import tomllib

import numpy as np
import pytest

from fixedqmc.cli import main
from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.optimize import QuadraticEnergy
from fixedqmc.qmc.registry import get_plugin
from fixedqmc.qmc.system import LinearParameters, Walkers
from fixedqmc.run import run
from fixedqmc.run.config import load_config
from fixedqmc.run.optimize import optimize

# One worker runs this module and test_heg.py (make test: --dist loadgroup): both
# compile the electron gas's system kernels.
pytestmark = pytest.mark.xdist_group("heg_system")

JASTROW = {"enabled": True, "alpha_parallel": [0.0, 0.0], "alpha_antiparallel": [0.0, 0.0],
           "p_coefficients": [0.0]}


def _input(tmp_path, name, dim=3, method="variance", cycles=2, **jastrow):
    system = {"kind": "heg", "electrons": 14 if dim == 3 else 10, "r_s": 2.0, "dim": dim}
    return {"output": str(tmp_path / name), "seed": 5, "system": system,
            "jastrow": {**JASTROW, **jastrow},
            "method": {"walkers": 60, "blocks": 6, "equil_blocks": 3, "steps_per_block": 3},
            "optimize": {"method": method, "cycles": cycles}}


@pytest.mark.parametrize("dim", [3, 2])
def test_quadratic_local_energy_equals_a_rebuilt_system(tmp_path, dim):
    """E_L and ln|psi| of parameters c1, predicted from an evaluation at c0 and the linear
    basis, equal those of the system built from c1's input keys (its compiled Jastrow
    kernels, not the reference the basis comes from)."""
    cfg = load_config(overrides=_input(tmp_path, "q", dim, alpha_parallel=[0.01, 0.001],
                                       alpha_antiparallel=[0.02, -0.001],
                                       p_coefficients=[0.01]))
    plugin = get_plugin("heg")
    gas = plugin.build(cfg, precision="float64")
    assert isinstance(gas, LinearParameters) and len(gas.parameter_names()) == 5
    pos = gas.initial_positions(12, np.random.default_rng(2))
    ev0 = gas.evaluate(Walkers(pos.copy(), None))
    q = QuadraticEnergy.from_samples(gas.parameter_vector(), ev0.local_energy, ev0.grad,
                                     *gas.parameter_basis(pos), gas.hbar2_2m)
    c1 = gas.parameter_vector() + np.array([0.004, -0.0005, 0.003, 0.0008, -0.02])
    cfg1 = {**cfg, "jastrow": {**cfg["jastrow"], **gas.parameter_input(c1)["jastrow"]}}
    ev1 = plugin.build(cfg1, precision="float64").evaluate(Walkers(pos.copy(), None))
    phi = gas.parameter_basis(pos)[0]
    assert np.abs(ev1.local_energy - ev0.local_energy).max() > 0.05
    assert np.allclose(q.energies(c1), ev1.local_energy, rtol=1e-10, atol=1e-10)
    assert np.allclose(ev0.ln_psi + phi @ (c1 - q.c0), ev1.ln_psi, rtol=0, atol=1e-10)


def test_variance_minimisation_lowers_variance_and_energy_and_writes_a_reusable_input(tmp_path):
    res = optimize(overrides=_input(tmp_path, "opt"), progress=False)
    t, s = res.table, res.summary
    assert list(t["cycle"]) == [0, 1, 2]
    assert t["variance"].iloc[-1] < 0.2 * t["variance"].iloc[0]
    assert s["energy"] < s["initial_energy"] - 5 * np.hypot(s["energy_error"],
                                                            s["initial_energy_error"])
    # the prediction on cycle 0's samples agrees with the next cycle's measured variance
    assert t["predicted_variance"].iloc[0] == pytest.approx(t["variance"].iloc[1], rel=0.5)
    for name in ("optimize.parquet", "optimize.csv", "optimize.json", "optimize.png",
                 "optimized.toml"):
        assert (res.output / name).is_file()
    assert not (res.output / "optimize_checkpoint.pkl").exists()
    stored = json.loads((res.output / "optimize.json").read_text())
    assert stored["parameters"] == s["parameters"]
    new_input = tomllib.loads(res.input_file.read_text())
    assert new_input["jastrow"]["alpha_antiparallel"] == [
        s["parameters"][f"jastrow.alpha_antiparallel[{k}]"] for k in range(2)]
    later = run(res.input_file, sets=["method.blocks=2", "method.equil_blocks=0"],
                progress=False)
    assert later.output == res.output / "run" and np.isfinite(later.summary["energy"])


def test_an_interrupted_optimisation_resumes_to_the_same_bits(tmp_path):
    cfg = _input(tmp_path, "whole", cycles=1)
    whole = optimize(overrides=cfg, progress=False).table
    cfg["output"] = str(tmp_path / "parts")
    assert optimize(overrides=cfg, progress=False, stop_after_cycles=1).summary["stopped"]
    assert (tmp_path / "parts" / "optimize_checkpoint.pkl").exists()
    resumed = optimize(overrides=cfg, progress=False).table
    assert resumed.equals(whole)
    again = optimize(overrides=cfg, progress=False)  # finished: the stored results
    assert again.table.equals(whole)


@pytest.mark.slow  # the method itself is checked on the oscillator (tests/qmc)
def test_the_linear_method_lowers_the_energy(tmp_path, capsys):
    cfg = _input(tmp_path, "lin", method="energy", cycles=2)
    path = tmp_path / "lin.toml"
    import tomli_w
    path.write_text(tomli_w.dumps(cfg))
    assert main(["optimize", str(path)]) == 0
    s = json.loads((tmp_path / "lin" / "optimize.json").read_text())
    assert s["method"] == "energy" and s["chosen_cycle"] > 0
    assert s["energy"] < s["initial_energy"] - 5 * np.hypot(s["energy_error"],
                                                            s["initial_energy_error"])
    assert "energy minimisation: cycle" in capsys.readouterr().out


@pytest.mark.parametrize("change, match", [
    ({"jastrow": {"enabled": False}}, "nothing to optimise.*jastrow.enabled"),
    ({"optimize": {"method": "newton"}}, "optimize.method"),
    ({"optimize": {"cycles": 0}}, "optimize.cycles"),
    ({"system": {"kind": "helium"}, "jastrow": None}, "'helium' has no optimisable"),
])
def test_bad_optimisation_input_is_named_before_work(tmp_path, change, match):
    cfg = _input(tmp_path, "bad")
    for k, v in change.items():
        if v is None:
            del cfg[k]
        elif k == "system" and "kind" in v:
            cfg[k] = v
        else:
            cfg[k] = {**cfg[k], **v}
    if cfg["system"]["kind"] == "helium":
        cfg["method"]["move"] = "all"
    with pytest.raises(FixedQMCError, match=match):
        optimize(overrides=cfg, progress=False)
    assert not (tmp_path / "bad").exists()


def test_a_folder_of_another_input_is_refused(tmp_path):
    cfg = _input(tmp_path, "f", cycles=1)
    optimize(overrides=cfg, progress=False, stop_after_cycles=1)
    cfg["optimize"]["cycles"] = 2
    with pytest.raises(FixedQMCError, match="optimize.cycles"):
        optimize(overrides=cfg, progress=False)


def test_samples_on_a_node_are_dropped_not_propagated(tmp_path, monkeypatch):
    """A sample whose E_L is not finite (psi = 0) is left out of the update and counted."""
    from fixedqmc.systems.periodic.heg import ElectronGas
    evaluate = ElectronGas.evaluate

    def on_a_node(self, walkers, **kw):
        ev = evaluate(self, walkers, **kw)
        if walkers.n_walkers > 100:  # the optimiser's batch of samples, not the VMC walkers
            ev.parts["kinetic"][0] = np.inf
        return ev
    monkeypatch.setattr(ElectronGas, "evaluate", on_a_node)
    res = optimize(overrides=_input(tmp_path, "node", cycles=1), progress=False)
    assert list(res.table["dropped"]) == [1, 1]
    assert list(res.table["samples"]) == [359, 359]
    assert np.isfinite(res.table["variance"]).all()
    assert res.table["variance"].iloc[1] < res.table["variance"].iloc[0]
