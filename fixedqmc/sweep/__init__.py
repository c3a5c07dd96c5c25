"""Bit-width sweeps (range profiles, paired and full estimates, local and Dask execution)
and the tuning of per-variable formats against a tolerance and a cost model."""

from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.sweep.sweep import SweepResult, plot_sweep, rule_value, sweep
from fixedqmc.sweep.tune import TuneResult, plan_spec, tune

__all__ = ["RangeProfile", "SweepResult", "TuneResult", "plan_spec", "plot_sweep",
           "rule_value", "sweep", "tune"]
