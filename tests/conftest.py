"""Shared test set-up.

Tests that compile the same numba kernels, and would otherwise compile them in both worker
processes at once (a context's first compilation costs minutes), carry the same
``@pytest.mark.xdist_group(name)``; ``make test`` runs with ``--dist loadgroup``, which
keeps a group in one worker.  Groups (each pair measured on a cold cache, one process:
the second test's time with the first before it, against both in two workers):
``molecule_runtime_fixed`` (the molecule's orbital kernels at run-time fixed formats: 0.05 s
against about 100 s), ``periodic_ewald`` (14 s against 46 s), ``helium_profile`` (11 s
against 23 s).
"""

import os
import sys

from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # shared helpers: strategies, reference

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

