"""The studies of ``studies/`` as modules, for their tests (they are scripts, not a
package)."""

import importlib.util
from pathlib import Path

STUDIES = Path(__file__).resolve().parents[2] / "studies"


def load_study(name: str):
    """``studies/<name>/study.py`` imported as a module."""
    spec = importlib.util.spec_from_file_location(f"{name}_study", STUDIES / name / "study.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
