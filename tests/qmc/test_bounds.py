"""Error bounds of a whole system's evaluation (``fixedqmc.bound``) beside the errors
measured: a helium cluster at several precisions, on drawn walkers."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fixedqmc
from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.sweep.estimates import Reference, paired_estimate
from fixedqmc.systems.helium.cluster import HeliumCluster, TableSettings
from fixedqmc.testing import assert_system_within_bound
from fixedqmc.testing.strategies import walker_positions

TABLES = TableSettings(r_max=30.0)
QUANTITIES = {"potential.sum", "wavefunction.sum", "kinetic.lap_sum", "kinetic.grad2_sum",
              "kinetic.grad", "potential", "kinetic", "local_energy", "ln_psi"}


@pytest.fixture(scope="module")
def he3():
    """He3 at fixed:24, formats sized from a range profile of the walkers (as sweeps and
    ``fixedqmc bound`` size them), and its bound on 32 walkers."""
    f64 = HeliumCluster(3, tables=TABLES)
    positions = f64.initial_positions(32, np.random.default_rng(5))
    ranges = RangeProfile.from_system(f64, [positions]).ranges()
    system = HeliumCluster(3, precision="fixed:24", tables=TABLES, ranges=ranges, seed=2)
    return system, positions, fixedqmc.bound(system, positions)


def test_the_bound_holds_and_the_trial_is_the_systems_own(he3):
    """Every quantity's measured error lies within its bound; the bound's trial values are
    the system's own evaluation, bit for bit; the bound run's values are float64's within
    their bound; the local energy's bound is finite for every walker (no decision is
    ambiguous) and within a small factor of the largest error."""
    system, positions, res = he3
    table = res.table()
    assert set(table.index) == QUANTITIES
    assert (table.violations == 0).all(), table
    ev = system.evaluate(positions)
    assert np.array_equal(res.trial["local_energy"], ev.local_energy)
    assert np.array_equal(res.trial["kinetic.grad"], ev.grad)
    assert np.array_equal(res.trial["wavefunction.sum"], ev.ln_psi)
    assert np.array_equal(res.trial["ln_psi"], ev.ln_psi)
    f64 = HeliumCluster(3, tables=TABLES).evaluate(positions)
    b = res.bound["local_energy"]
    finite = np.isfinite(b)
    assert res.ambiguous == 0 and finite.all()  # (table bins crossed are followed)
    assert (np.abs(f64.local_energy - res.value["local_energy"])[finite] <= b[finite]).all()
    row = table.loc["local_energy"]
    assert 1.0 <= row.ratio < 20.0, row


def test_a_bounded_paired_point_is_the_evaluated_one_bit_for_bit(he3):
    """A sweep's paired point of a system that can be bounded takes the trial's energies,
    ln|psi| and overflow events from the bound runs instead of evaluating the samples again:
    every paired and reweighted column, and the log, equal those of the evaluations (two
    blocks, so two stochastic-rounding streams; coordinates in Q1.8 (|x| < 2 A) overflow,
    so there are events to log)."""
    _, positions, _ = he3
    f64 = HeliumCluster(3, tables=TABLES)
    blocks = positions.reshape(2, 16, *positions.shape[1:])
    evs = [f64.evaluate(b) for b in blocks]
    ref = Reference(blocks, np.array([e.local_energy for e in evs]), 0.0, 1.0, 0.5, None,
                    0.0, None, np.array([e.ln_psi for e in evs]))
    spec = "fixed:20:stochastic,distance.x=fixed:Q1.8"
    got = {}
    for bounds in (True, False):
        system = HeliumCluster(3, precision=spec, tables=TABLES, seed=2)
        got[bounds] = paired_estimate(system, ref, bounds=bounds), system.log
    (with_bounds, log), (evaluated, log_ev) = got[True], got[False]
    assert with_bounds["bound_samples"] == 32 and "bound_samples" not in evaluated
    assert with_bounds.keys() > evaluated.keys()
    assert all(np.array_equal(with_bounds[k], evaluated[k], equal_nan=True) for k in evaluated)
    assert log.total_events > 0
    assert dict(log.events) == dict(log_ev.events) and log.formats == log_ev.formats


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), spec=st.sampled_from([
    "fixed:20", "fixed:22:floor", "fixed:28:stochastic", "fixed:24,potential.sum=fixed:Q2.10",
    "fixed:24,potential.sum=fixed:Q2.10:floor:wrap"]))
def test_the_bound_holds_on_drawn_walkers_and_formats(he3, data, spec):
    """On walkers drawn around the cluster's starts (``walker_positions``) at narrow, wide,
    floor, stochastic, saturating and wrapping formats (He3's sum of V, about -10 K, does
    not fit Q2.10), no measured error exceeds its bound; a wrapped sum is unbounded and the
    assertion says where."""
    system = HeliumCluster(3, precision=spec, tables=TABLES, seed=2)
    positions = data.draw(walker_positions(system, 4, max_displacement=0.3))
    res = assert_system_within_bound(system, positions, allow_unbounded=True)
    if "wrap" in spec:
        with pytest.raises(AssertionError, match=r"bound is infinite .* walker \d+ at .*"
                           r"'potential.sum': \d+"):
            assert_system_within_bound(system, positions)
        assert res.unbounded["potential.sum"] > 0
        assert np.isinf(res.bound["local_energy"]).any()


@pytest.mark.heavy
def test_float32_is_bounded_like_any_format(he3):
    """The machine's float32 as the trial: bounded at nearest even with its own sums'
    order left free; the measured error of the local energy is within the bound."""
    _, positions, _ = he3
    res = fixedqmc.bound(HeliumCluster(3, precision="float32", tables=TABLES), positions)
    assert (res.table().violations == 0).all()
    assert np.isfinite(res.bound["local_energy"]).all()


def test_systems_that_cannot_be_bounded_are_refused_by_name(he3):
    with pytest.raises(FixedQMCError, match="object provides no bound_evaluation"):
        fixedqmc.bound(object(), he3[1])
    analytic = HeliumCluster(3, tables=TABLES, sources={"wavefunction": "analytic"})
    with pytest.raises(FixedQMCError, match="source 'table'"):
        fixedqmc.bound(analytic, he3[1])
