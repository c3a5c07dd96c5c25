"""VMC against quadrature and DMC against an exact radial solve (toy dimer, tests/qmc/toy.py)."""

import numpy as np
import pytest

from fixedqmc.qmc import reblock
from fixedqmc.qmc.dmc import DMCSettings, run_dmc, start_dmc, timestep_extrapolation
from fixedqmc.qmc.vmc import VMCSettings, run_vmc, start_vmc
from fixedqmc.systems.helium.walkers import initial_walkers
from fixedqmc.systems.helium.cluster import HeliumCluster, TableSettings
from tests.systems.helium.dimer_reference import dimer_ground_state, dimer_vmc_energy
from tests.qmc.toy import PARAMS, toy_potential

TABLES = TableSettings(r_min=1.4, r_max=30.0)


@pytest.fixture(scope="module")
def toy():
    system = HeliumCluster(2, toy_potential, PARAMS, tables=TABLES)
    exact = dimer_ground_state(toy_potential, r_min=1.0, r_max=60.0, n=20000).energy
    vmc = dimer_vmc_energy(PARAMS, toy_potential).energy
    return system, exact, vmc


def production(st):
    tr = st.trace()
    return reblock(tr[tr.phase == "production"].energy.to_numpy())


@pytest.mark.parametrize("move, blocks", [("all", 40), ("single", 25)])
def test_vmc_energy_matches_quadrature(toy, move, blocks):
    system, _, e_vmc = toy
    rng = np.random.default_rng(11)
    settings = VMCSettings(n_blocks=blocks, equil_blocks=5, steps_per_block=40, step_size=1.5,
                           move=move)
    st = run_vmc(system, start_vmc(system, initial_walkers(200, 2, rng, spacing=3.5), settings,
                                   rng), settings)
    rb = production(st)
    assert rb.error < 0.004
    assert abs(rb.mean - e_vmc) < 3.5 * rb.error + 2e-4  # 2e-4 K: table interpolation
    accept = st.trace().query("phase == 'production'").acceptance.mean()
    assert 0.3 < accept < 0.7  # tuned towards the 0.5 target


def test_dmc_recovers_the_exact_ground_state(toy):
    system, exact, e_vmc = toy
    assert exact < e_vmc - 0.01  # the bump lowers the exact energy measurably
    taus, energies, errors = [], [], []
    for tau, seed in ((0.05, 1), (0.025, 2)):
        rng = np.random.default_rng(seed)
        settings = DMCSettings(tau=tau, n_blocks=50, equil_blocks=5, steps_per_block=40)
        st = run_dmc(system, start_dmc(system, initial_walkers(200, 2, rng, spacing=3.5),
                                       settings, rng), settings)
        rb = production(st)
        taus.append(tau)
        energies.append(rb.mean)
        errors.append(rb.error)
        pop = st.trace().population
        assert 150 < pop.mean() < 250  # population control holds the target of 200
        assert rb.mean < e_vmc - 3 * rb.error  # DMC goes below VMC at every time step
    x = timestep_extrapolation(taus, energies, errors)
    assert abs(x["energy"] - exact) < 3.5 * x["error"] + 5e-4


def test_timestep_extrapolation_is_exact_on_a_line():
    x = timestep_extrapolation([0.01, 0.02, 0.04], [1.01, 1.02, 1.04], [1e-3, 1e-3, 1e-3])
    assert x["energy"] == pytest.approx(1.0, abs=1e-12)
    assert x["slope"] == pytest.approx(1.0, abs=1e-9)
