"""Quantum Monte Carlo statistics: error bars of serially correlated samples (reblocking)."""

from fixedqmc.qmc.estimators import ReblockResult, autocorrelation_time, reblock

__all__ = ["ReblockResult", "autocorrelation_time", "reblock"]
