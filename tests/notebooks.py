"""Executing the project's notebooks in tests: every code cell top to bottom, in a scratch
folder, failing on any error output."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute(name: str, folder, timeout: int) -> list:
    """The outputs of every code cell of ``notebooks/<name>.ipynb`` executed in ``folder``
    (each cell at most ``timeout`` s); asserts that none is an error."""
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


def shown(outputs: list, streams: bool = True) -> str:
    """The text the outputs show: their plain-text results and (``streams``) printed text."""
    return "".join(str(o.get("data", {}).get("text/plain", ""))
                   + (o.get("text", "") if streams else "") for o in outputs)
