"""The error-bound tutorial notebook executes from top to bottom and shows what it says:
the bound table, the property test passing, the narrow format named."""

import pytest

from tests.notebooks import execute, shown


@pytest.mark.heavy
def test_error_bound_tutorial_runs(tmp_path):
    text = shown(execute("error_bounds", tmp_path, 600))
    assert "max_bound" in text and "bfloat16" in text
    assert "property holds" in text
    assert "became infinite at {'arg'" in text
