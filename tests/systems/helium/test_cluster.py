"""Compiled cluster kernels against the float64 numpy reference, across precisions."""

import numba
import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError, PrecisionSpecError
from fixedqmc.systems.helium.cluster import HeliumCluster, TableSettings
from fixedqmc.systems.helium.trial import (DEFAULT_PAIR_PARAMS as P, grad_lap_ln_psi, ln_psi,
                                           local_energy_pair_sum)

TABLES = TableSettings(r_max=30.0)


def configs(n_walkers=6, n_atoms=5, seed=3):
    """Compact random clusters (no pair closer than 2.2 A, none beyond r_max)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n_walkers:
        r = rng.normal(scale=3.0, size=(n_atoms, 3))
        d = np.linalg.norm(r[:, None] - r[None], axis=-1)[np.triu_indices(n_atoms, 1)]
        if d.min() > 2.2 and d.max() < 25.0:
            out.append(r)
    return np.array(out)


@pytest.fixture(scope="module")
def reference():
    R = configs()
    ref = HeliumCluster(5, tables=TABLES).evaluate(R)
    return R, ref


def test_float64_tables_match_the_analytic_reference(reference):
    R, ev = reference
    for w in range(R.shape[0]):
        k, v = local_energy_pair_sum(R[w], P)
        grad, _ = grad_lap_ln_psi(R[w], P)
        assert ev.ln_psi[w] == pytest.approx(ln_psi(R[w], P), abs=1e-6)
        assert ev.potential[w] == pytest.approx(v, abs=1e-4 * max(1.0, abs(v)))
        assert ev.kinetic[w] == pytest.approx(k, abs=1e-4 * max(1.0, abs(k)))
        np.testing.assert_allclose(ev.grad[w], grad, atol=1e-5)
    assert (ev.outside == 0).all()


def test_wide_fixed_agrees_and_narrow_fixed_degrades_measurably(reference):
    R, ref = reference
    errs = {}
    for width in (48, 24):
        sysm = HeliumCluster(5, precision=f"fixed:{width}", tables=TABLES)
        ev = sysm.evaluate(R)
        errs[width] = np.max(np.abs(ev.local_energy - ref.local_energy))
        assert np.isfinite(ev.local_energy).all()
    assert errs[48] < 1e-4  # K
    assert errs[24] > 100 * errs[48]  # measurably worse, not silently equal


def test_fixed_results_do_not_depend_on_thread_count(reference):
    R, _ = reference
    sysm = HeliumCluster(5, precision="fixed:32:stochastic", tables=TABLES)
    runs = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        try:
            ev = sysm.evaluate(R, step=7)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        runs.append(np.concatenate([ev.ln_psi, ev.local_energy, ev.grad.ravel()]))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_single_atom_move_matches_full_difference(reference):
    R, _ = reference
    sysm = HeliumCluster(5, tables=TABLES)
    rng = np.random.default_rng(0)
    new = R[:, 2] + rng.uniform(-0.4, 0.4, (R.shape[0], 3))
    delta, outside = sysm.atom_move(R, 2, new)
    moved = R.copy()
    moved[:, 2] = new
    full = sysm.evaluate(moved).ln_psi - sysm.evaluate(R).ln_psi
    np.testing.assert_allclose(delta, full, atol=1e-9)
    assert (outside == 0).all()


def test_pairs_beyond_r_max_are_outside():
    R = np.zeros((1, 2, 3))
    R[0, 1, 0] = 31.0
    assert HeliumCluster(2, tables=TABLES).evaluate(R).outside[0] == 1


def test_overflow_of_a_narrow_format_is_counted(reference):
    R, _ = reference
    sysm = HeliumCluster(5, precision="default=float64,potential=fixed:48,potential.sum=fixed:Q4.8",
                         tables=TABLES)
    sysm.evaluate(R)
    assert sysm.log.events["potential.sum"] > 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_atoms=1), "n_atoms"),
    (dict(n_atoms=3, potential="nope"), "nope"),
    (dict(n_atoms=3, precision="bogus=fixed:32"), "bogus"),
    (dict(n_atoms=3, precision="potential.zz=fixed:32"), "zz"),
    (dict(n_atoms=3, sources={"potential": "magic"}), "magic"),
])
def test_bad_system_input_names_the_problem(kwargs, match):
    with pytest.raises((FixedQMCError, PrecisionSpecError), match=match):
        HeliumCluster(tables=TABLES, **kwargs)


def test_nan_configuration_is_rejected():
    R = configs(1, 3)
    R[0, 1, 2] = np.nan
    with pytest.raises(FixedQMCError, match=r"positions\[0, 1, 2\]"):
        HeliumCluster(3, tables=TABLES).evaluate(R)


def test_analytic_kernels_match_tables_and_run_in_float32(reference):
    R, ref = reference
    sources = {"potential": "analytic", "wavefunction": "analytic", "kinetic": "analytic"}
    ana = HeliumCluster(5, sources=sources, tables=TABLES).evaluate(R)
    for w in range(R.shape[0]):
        k, v = local_energy_pair_sum(R[w], P)
        assert ana.ln_psi[w] == pytest.approx(ln_psi(R[w], P), rel=1e-12)
        assert ana.local_energy[w] == pytest.approx(k + v, rel=1e-9, abs=1e-9)
    single = HeliumCluster(5, precision="float32", sources=sources, tables=TABLES).evaluate(R)
    rel = np.abs(single.local_energy - ana.local_energy) / np.abs(ana.potential).max()
    assert 0 < rel.max() < 1e-4  # float32 arithmetic: different, and close


def test_analytic_needs_a_float_kernel_and_a_builtin_potential():
    with pytest.raises(FixedQMCError, match="float64 or float32"):
        HeliumCluster(3, precision="potential=fixed:32", sources={"potential": "analytic"},
                      tables=TABLES)
    with pytest.raises(FixedQMCError, match="built-in"):
        HeliumCluster(3, lambda r: 0.0 * r, sources={"potential": "analytic"}, tables=TABLES)


def test_fixed_sums_do_not_depend_on_the_order_of_the_pairs(reference):
    """Sums over pairs are exact accumulators: relabelling the atoms (another pair order)
    gives the same fixed-point ln psi and V, bit for bit.  (The per-atom gradient is a
    running sum rounded at each step, so it may differ in its last bits.)"""
    R, _ = reference
    sysm = HeliumCluster(5, precision="fixed:32", tables=TABLES)
    a = sysm.evaluate(R)
    perm = np.random.default_rng(0).permutation(5)
    b = sysm.evaluate(R[:, perm])
    np.testing.assert_array_equal(a.ln_psi, b.ln_psi)
    np.testing.assert_array_equal(a.potential, b.potential)
    lsb = 2.0 ** -sysm.precisions["kinetic"].format_of("grad").frac_bits
    np.testing.assert_allclose(a.grad[:, perm], b.grad, atol=8 * lsb, rtol=0)


@pytest.mark.slow  # compiles the typed (specialised) pair kernel: minutes
def test_quiet_pass_with_overflow_equals_the_counting_kernel_bit_for_bit(reference):
    """The vectorised quiet pass (compile-time formats) carries overflow events in its
    values and recomputes an overflowing walker in the counting pass; the run-time-format
    kernel counts in one pass.  Same values and the same per-variable event counts, with a
    potential-sum format that some walkers overflow and some do not."""
    R, ref = reference
    # walkers spread over sum V by moving one atom of some of them close to another
    R = np.concatenate([R, R[:3]])
    R[-3:, 1] = R[-3:, 0] + np.array([2.4, 0.0, 0.0])  # V(2.4 A) ~ +80 K
    ref = HeliumCluster(5, tables=TABLES).evaluate(R)
    v = np.abs(ref.potential)
    int_bits = next(i for i in range(1, 20) if np.sum(v < 2.0**i) * 2 >= len(v))
    inside = int(np.sum(v < 2.0**int_bits * (1 - 1e-3)))
    outside = int(np.sum(v > 2.0**int_bits * (1 + 1e-3)))
    assert inside > 0 and outside > 0 and inside + outside == len(v)
    spec = f"default=float64,potential=fixed:32,potential.sum=fixed:Q{int_bits}.20"
    runs = {}
    for specialise in (True, False):
        sysm = HeliumCluster(5, precision=spec, tables=TABLES, specialise=specialise)
        assert sysm.runtime is not specialise  # typed (quiet-capable) vs run-time formats
        runs[specialise] = (sysm.evaluate(R), sysm.log.events)
    (a, log_a), (b, log_b) = runs[True], runs[False]
    np.testing.assert_array_equal(a.potential, b.potential)  # the fixed kernel: exact
    np.testing.assert_array_equal(a.outside, b.outside)
    # float64 kernels: typed float sums may be split into vector lanes, run-time ones not
    np.testing.assert_allclose(a.ln_psi, b.ln_psi, rtol=1e-13)
    np.testing.assert_allclose(a.kinetic, b.kinetic, rtol=1e-12)
    assert log_a == log_b
    # one saturation per overflowing total, plus any single pair term (a close pair of
    # +80 K) that does not fit the sum's format on its own
    assert log_a["potential.sum"] >= outside > 0


def test_profile_measures_kernel_inputs_on_the_host(reference):
    """Positions and table constants are profiled on their real values: the smallest
    nonzero |x| of the positions, not min(|min|, |max|)."""
    R, _ = reference
    system = HeliumCluster(5, tables=TABLES)
    stats = system.profile(R)
    lo, hi, mx, mn = stats["distance"]["x"]
    a = np.abs(R[R != 0])
    assert (lo, hi, mx, mn) == (R.min(), R.max(), a.max(), a.min())
    coef = np.concatenate([system.tables["potential"].a1, system.tables["potential"].a2])
    assert stats["potential"]["a"][:2] == (coef.min(), coef.max())
