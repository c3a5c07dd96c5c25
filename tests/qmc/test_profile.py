"""Range profiles record the real statistics of every variable: a variable that holds both
operation results and kernel inputs covers both, and profiles of several batches merge
statistic by statistic (never derived from min and max)."""

import numpy as np

from fixedqmc.numerics.kernel import KernelPrecision, KernelSpec, Variable
from fixedqmc.numerics.kernel_set import KernelSet, host_stats
from fixedqmc.qmc.profile import RangeProfile


def test_a_variable_covers_operation_results_and_its_inputs(monkeypatch):
    ks = KernelSet({"k": KernelSpec("k", (Variable("y", -4.0, 4.0),))}).profiling()
    ks.encode("k", "y", np.array([-3.0, 0.01, 0.0]))  # an input loaded into y
    monkeypatch.setattr(KernelPrecision, "profile", lambda self, ctx: {"y": (0.5, 2.0, 2.0, 0.5)})
    assert ks.stats("k") == {"y": (-3.0, 2.0, 3.0, 0.01)}
    assert ks.stats("k", inputs={"y": [7.0, -1e-4]})["y"] == (-3.0, 7.0, 7.0, 1e-4)


class _Batches:
    """A system whose profile of a batch is the host statistics of its values."""

    def profile(self, batch, *, step=0):
        return {"k": {"x": host_stats(batch)}}


def test_profiles_of_batches_merge_each_statistic():
    batches = [np.array([-8.0, 5.0, 0.25]), np.array([3.0, 0.0, -0.002])]
    stats = RangeProfile.from_system(_Batches(), batches).stats["k"]["x"]
    assert stats == host_stats(np.concatenate(batches)) == (-8.0, 5.0, 8.0, 0.002)
    frame = RangeProfile({"k": {"x": stats}}).frame()
    assert frame.loc[0, "min_nonzero_abs"] == 0.002  # not min(|min|, |max|) = 5


def test_helium_table_positions_cover_the_tables_region_starts():
    """The region starts [s_min, sigma] of each table are loaded into the kernel's s: its
    statistics include them as well as the profiled squared distances."""
    from fixedqmc.run.config import load_config
    from fixedqmc.run.plan import build_system

    system = build_system(load_config(overrides={"system": {"n_atoms": 3},
                                                 "tables": {"r_max": 40.0}}))
    pos = system.initial_positions(12, np.random.default_rng(1))
    stats = system.profile(pos)
    for kernel, table, prefix in system.TABLE_USES:
        t = system.tables[table]
        lo, hi, mx, mn = stats[kernel][prefix + "s"]
        assert lo <= t.s_min and mn <= t.s_min and hi >= t.sigma and mx >= t.sigma, (kernel, table)
        assert hi >= stats["distance"]["s"][1] or hi >= t.s_max  # distances (clamped) too


def test_only_table_positions_named_u_or_t_are_pinned_to_the_unit_interval():
    """A lookup's ``u`` in [0, 1) gets exactly [0, 1); a signed ``u`` of another kernel (the
    erfc form's Chebyshev variable, a Sherman-Morrison sum) is widened like any variable."""
    prof = RangeProfile({"table": {"u": (0.0, 0.99, 0.99, 1e-3)},
                         "ewald_real": {"u": (-0.61, 0.95, 0.95, 1e-4)},
                         "determinant": {"u": (-3.0, 40.0, 40.0, 1e-6)}})
    r = prof.ranges(margin_bits=1)
    assert r["table"]["u"] == (0.0, float(np.nextafter(1.0, 0.0)))
    assert r["ewald_real"]["u"] == (-1.22, 1.9)
    assert r["determinant"]["u"] == (-6.0, 80.0)
