import os
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # shared helpers: strategies, reference

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.hookimpl(tryfirst=True)  # (before pytest-xdist reads the marks)
def pytest_collection_modifyitems(items):
    """Under ``--dist loadgroup`` (``make test``), a module's tests run on one worker unless
    the module names a group of its own (``pytestmark = pytest.mark.xdist_group(...)``,
    shared by modules that compile the same kernels): what a module's tests compile is
    compiled once, not once per worker (numba compiles in each process)."""
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
