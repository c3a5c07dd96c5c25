"""A refused input leaves nothing behind: not the output folder, not a mean-field cache
written while the system was built, not anything in a folder that existed before."""

import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.run import run
from fixedqmc.sweep import sweep

H2 = {"system": {"kind": "molecule", "lattice": 1},
      "method": {"walkers": 4, "blocks": 2, "equil_blocks": 1, "steps_per_block": 2}}


@pytest.mark.parametrize("sets, match", [
    ({"precision": "orbitals.nope=fixed:32"}, "names variable orbitals.nope"),
    ({"method": {**H2["method"], "walkers": 10 ** 11}}, "method.walkers = 100000000000"),
])
def test_a_refused_molecule_run_leaves_no_folder_and_no_mean_field_cache(tmp_path, sets,
                                                                         match):
    new = tmp_path / "new" / "out"
    with pytest.raises(FixedQMCError, match=match):
        run(overrides={**H2, **sets, "output": str(new)}, progress=False)
    assert not (tmp_path / "new").exists()
    old = tmp_path / "old"
    old.mkdir()
    (old / "notes.txt").write_text("mine")
    with pytest.raises(FixedQMCError, match=match):
        run(overrides={**H2, **sets, "output": str(old)}, progress=False)
    assert [f.name for f in old.iterdir()] == ["notes.txt"]


def test_a_refused_sweep_leaves_nothing_and_its_mean_field_cache_lives_in_its_folder(
        tmp_path):
    out = tmp_path / "o"
    with pytest.raises(FixedQMCError, match="kernel set"):
        sweep(overrides={**H2, "output": str(out)}, kernels="nope", widths="24",
              progress=False)
    assert not out.exists()
