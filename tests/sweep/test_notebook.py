"""The tutorial notebooks execute from top to bottom (so they never rot)."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


#: notebook -> what its outputs must show besides the sweep table
NOTEBOOK_CHECKS = {"helium_bitwidth": (), "h2_lattice_bitwidth": (),
                   "heg_precision": ("ewald_recip", "speed vs float64")}


#: these sample a molecule or an electron gas and sweep every kernel: minutes on 2 cores
SLOW = {"h2_lattice_bitwidth", "heg_precision"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in NOTEBOOK_CHECKS])
def test_notebook_runs(tmp_path, name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "narrowest_width" in text and "paired_diff" in text
    for expected in NOTEBOOK_CHECKS[name]:
        assert expected in text, expected
