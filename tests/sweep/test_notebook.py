"""The tutorial notebooks execute from top to bottom (so they never rot)."""

import pytest

from tests.notebooks import execute, shown


#: notebook -> what its outputs must show besides the sweep table
NOTEBOOK_CHECKS = {"helium_bitwidth": (), "h2_lattice_bitwidth": (),
                   "heg_precision": ("ewald_recip", "speed vs float64")}


#: these sample a molecule or an electron gas and sweep every kernel: minutes on 2 cores
SLOW = {"h2_lattice_bitwidth", "heg_precision"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in NOTEBOOK_CHECKS])
def test_notebook_runs(tmp_path, name):
    text = shown(execute(name, tmp_path, 900), streams=False)
    assert "narrowest_width" in text and "paired_diff" in text
    for expected in NOTEBOOK_CHECKS[name]:
        assert expected in text, expected
