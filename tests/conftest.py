import os
import sys

from hypothesis import HealthCheck, settings

sys.path.insert(0, os.path.dirname(__file__))  # shared helpers: strategies, reference

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


#: test folders whose tests run on one worker (``make test`` distributes by group): their
#: tests share large compiled kernels, which two workers would otherwise compile at once
#: (numba's disk cache serves a worker only once the other has finished compiling); a test
#: elsewhere that compiles the same kernels joins the group with its own
#: ``xdist_group`` mark
SHARED_KERNELS = {"systems/molecule": "molecule", "systems/periodic": "periodic"}


def pytest_collection_modifyitems(config, items):
    import pytest

    root = os.path.dirname(__file__)
    for item in items:
        folder = os.path.relpath(os.path.dirname(str(item.fspath)), root).replace(os.sep, "/")
        group = SHARED_KERNELS.get(folder)
        if group and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
