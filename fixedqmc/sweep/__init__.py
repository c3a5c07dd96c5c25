"""Bit-width sweeps: range profiles, paired and full estimates, local and Dask execution."""

from fixedqmc.qmc.profile import RangeProfile
from fixedqmc.sweep.sweep import SweepResult, plot_sweep, rule_value, sweep

__all__ = ["RangeProfile", "SweepResult", "plot_sweep", "rule_value", "sweep"]
