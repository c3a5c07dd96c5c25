"""The suite's own set-up: under ``--dist loadgroup`` (``make test``) the tests of one
``xdist_group`` run on one worker, so that what they compile is compiled once."""

import pytest


@pytest.mark.xdist_group("grouping_check")
def test_loadgroup_groups_the_marked_tests(request):
    """pytest-xdist groups by a suffix of the node id, which pytest 9.2's structured node ids
    silently drop (pytest-xdist issue 1386): the test extra excludes that pytest
    (pyproject.toml), and this test fails if grouping is lost again."""
    if not getattr(request.config.option, "loadgroup", False):  # (set in xdist workers)
        pytest.skip("grouping exists only under --dist loadgroup (make test); "
                    "this run has no xdist groups to check")
    assert request.node.nodeid.endswith("@grouping_check"), (
        f"--dist loadgroup does not group (pytest {pytest.__version__}): node id "
        f"{request.node.nodeid!r} has no group suffix")
