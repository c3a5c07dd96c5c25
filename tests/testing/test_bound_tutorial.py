"""The error-bound tutorial notebook executes from top to bottom and shows what it says:
the bound table, the property test passing, the narrow format named."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "error_bounds.ipynb"


def test_error_bound_tutorial_runs(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(str(o.get("data", {}).get("text/plain", "")) + o.get("text", "")
                   for o in outputs)
    assert "max_bound" in text and "bfloat16" in text
    assert "property holds" in text
    assert "became infinite at {'arg'" in text
