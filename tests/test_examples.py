"""Every example input validates (keys, values, system kind) without running; the README's
fixed-node DMC example reproduces the exact energy, and its old short settings are flagged."""

import json
import re
import shlex
from pathlib import Path

import pytest

from fixedqmc.cli import main
from fixedqmc.run.config import load_config

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))
FERMIONS = ROOT / "examples" / "trapped_fermions_vmc.toml"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_input_is_valid(path):
    config = load_config(path)
    assert config["system"]["kind"]


def readme_dmc_command() -> list[str]:
    """The README's fixed-node DMC command of the trapped fermions, as CLI arguments
    (the input's path made absolute)."""
    lines = [ln for ln in (ROOT / "README.md").read_text().splitlines()
             if re.match(r"fixedqmc run examples/trapped_fermions_vmc\.toml .*method\.kind=dmc",
                         ln)]
    assert len(lines) == 1, lines
    args = shlex.split(lines[0].split("#")[0])[1:]
    return [str(ROOT / a) if a.startswith("examples/") else a for a in args]


def fermion_dmc(tmp_path, *sets):
    args = [*readme_dmc_command(), "--set", f"output='{tmp_path / 'dmc'}'"]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 0
    return json.loads((tmp_path / "dmc" / "summary.json").read_text())


@pytest.mark.slow
def test_readme_fixed_node_dmc_reproduces_18(tmp_path):
    """The exact nodes make fixed-node DMC exact: 18 hbar omega within 3 error bars, with
    every stage passing its checks (20-35 s on 2 cores, 6350 steps of 200
    walkers)."""
    s = fermion_dmc(tmp_path)
    assert s["warnings"] == []
    assert s["extrapolation"]["stages"] == ["dmc_tau0.04", "dmc_tau0.02"]
    assert 0 < s["energy_error"] < 0.02
    assert abs(s["energy"] - 18.0) < 3 * s["energy_error"]
    for name, blocks in (("dmc_tau0.04", 200), ("dmc_tau0.02", 400)):  # 80 / (tau x 10)
        st = s["stages"][name]
        assert st["blocks"] == blocks
        # 4 units of tau (100 and 200 blocks), a few % less of tau_eff (rejected moves)
        assert 3.8 < st["projection"]["equil_time"] <= 4.0
        assert st["projection"]["bias_bound"] < 0.01 * st["energy_error"]


@pytest.mark.heavy
def test_the_old_short_dmc_settings_are_flagged(tmp_path):
    """The settings the README's command used to run (20 + 5 blocks of 10 steps at tau 0.02
    and 0.01: 2-4 units of imaginary time): it printed 18.025 +/- 0.002, 12 error bars high,
    from error bars that reblocking had taken from 2 blocks.  Now both stages say their
    error bars cannot be trusted."""
    s = fermion_dmc(tmp_path, "method.taus=[0.02, 0.01]", "method.equil_time=0",
                    "method.production_time=0")
    assert [st["blocks"] for st in s["stages"].values()] == [5, 20, 20]
    for name in ("dmc_tau0.02", "dmc_tau0.01"):
        assert s["stages"][name]["error_trusted"] is False
        assert any(w.startswith(f"{name}: the production is too short for its correlation "
                                "time") for w in s["warnings"]), s["warnings"]
