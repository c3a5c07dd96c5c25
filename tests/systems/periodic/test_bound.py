"""Error bounds of the electron gas's evaluation (``fixedqmc.bound``): plane-wave
determinants through the host's fresh inverses, the Jastrow terms u + p and the Ewald sums,
beside the errors measured (the gas kernels' bound contexts compile once: minutes cold)."""

import numpy as np
import pytest

import fixedqmc
from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.qmc.system import Walkers
from fixedqmc.systems.periodic.cell import heg_cell
from fixedqmc.systems.periodic.heg import ElectronGas
from fixedqmc.systems.periodic.jastrow import jastrow_parameters
from fixedqmc.systems.periodic.jastrow_eval import JastrowEvaluator
from fixedqmc.testing import assert_system_within_bound

pytestmark = [pytest.mark.heavy, pytest.mark.xdist_group("heg_bound")]

QUANTITIES = {"determinant.ln_det", "determinant.grad", "determinant.lap", "jastrow.value",
              "jastrow.grad", "jastrow.lap", "kinetic", "ewald_real", "ewald_recip",
              "ewald_constant", "local_energy", "ln_psi"}


@pytest.mark.parametrize("spec", ["fixed:24", "fixed:32:stochastic"])
def test_the_gas_is_bounded_and_the_trial_is_evaluate(spec):
    """14 electrons at r_s = 2 with u + p: no measured error exceeds its bound; every bound
    is finite at nearest rounding, while stochastic rounding of the coordinates makes the
    Jastrow terms' cell decisions ambiguous (counted; those outputs unbounded); the constant
    Ewald part (a float64 input of both runs) has a zero bound; the trial's local energy,
    ln|psi| and overflow events are :meth:`evaluate`'s."""
    cell = heg_cell(14, 2.0, 3, None)
    jp = jastrow_parameters(cell, 14, 7, alpha_parallel=[0.05, 0.01],
                            alpha_antiparallel=[0.1, -0.02], p_coefficients=[0.02, -0.01])

    def gas(precision, **kw):
        return ElectronGas(cell, 7, 7, precision, jastrow=JastrowEvaluator(jp), **kw)
    f64 = gas("float64")
    pos = f64.initial_positions(24, np.random.default_rng(1))
    ranges = RangeProfile.from_system(f64, [pos]).ranges()
    stochastic = spec.endswith("stochastic")
    res = assert_system_within_bound(gas(spec, ranges=ranges, seed=2), pos, step=3,
                                     allow_unbounded=stochastic)
    assert (res.ambiguous > 0) == stochastic
    assert set(res.value) == QUANTITIES
    assert (res.bound["ewald_constant"] == 0).all()
    fresh = gas(spec, ranges=ranges, seed=2)
    ev = fresh.evaluate(Walkers(pos, None), step=3)
    assert np.array_equal(res.trial["local_energy"], ev.local_energy)
    assert np.array_equal(res.trial["ln_psi"], ev.ln_psi)
    assert dict(res.log.events) == dict(fresh.log.events)
    if not stochastic:
        row = res.table().loc["local_energy"]
        assert row.max_error > 0 and row.ratio < 1e3, row


def test_the_gas_without_a_jastrow_factor_is_bounded():
    gas = ElectronGas.from_density(14, 2.0)
    pos = gas.initial_positions(8, np.random.default_rng(2))
    ranges = RangeProfile.from_system(gas, [pos]).ranges()
    res = fixedqmc.bound(ElectronGas.from_density(14, 2.0, precision="fixed:28",
                                                  ranges=ranges), pos)
    assert (res.table().violations == 0).all()
    assert np.isfinite(res.bound["local_energy"]).all()
