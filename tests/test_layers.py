"""The package's layers, written once: every import (module-level or inside a function)
points down this list or stays within its own layer; ``import fixedqmc`` loads no system.

    base < numerics < cost < tables < protocol < systems < qmc < run < sweep < bench, cli

``base`` holds the helpers every layer may use (errors, input checks, JSON, progress, state
files and output folders); ``protocol`` is the system protocol and registry that systems
implement and the drivers call (``qmc/system.py``, ``qmc/registry.py``).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fixedqmc"
LAYERS = ["base", "numerics", "cost", "tables", "protocol", "systems", "qmc", "run", "sweep",
          "top"]
BASE = {"errors", "input_checks", "jsonio", "progress", "state_files", "output_folder",
        "_numba_cache", "_numba_rounds"}
PROTOCOL = {"qmc.system", "qmc.registry"}


def layer(module: str) -> str:
    """The layer of a module named without the ``fixedqmc.`` prefix."""
    parts = module.split(".")
    if module in BASE or parts[0] in BASE:
        return "base"
    if ".".join(parts[:2]) in PROTOCOL:
        return "protocol"
    if parts[0] in ("numerics", "cost", "tables", "systems", "qmc", "run", "sweep"):
        return parts[0]
    if parts[0] == "testing":  # check_system, the hypothesis strategies: above the systems
        return "qmc"
    return "top"  # cli, bench, the package's own __init__


def imports(path: Path):
    """``(line, imported fixedqmc module)`` of every import statement in a file."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = ([f"fixedqmc.{a.name}" for a in node.names] if node.module == "fixedqmc"
                     else [node.module])
        else:
            continue
        for name in names:
            if name.startswith("fixedqmc."):
                yield node.lineno, name.removeprefix("fixedqmc.")


def _own(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return ".".join(p for p in rel.parts if p != "__init__")


def test_no_import_points_up_a_layer():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _own(path)
        if not own:  # fixedqmc/__init__.py: the public API, above everything
            continue
        for line, name in imports(path):
            target = layer(name)
            if target == "top" and name.split(".")[0] not in ("cli", "bench"):
                continue  # "from fixedqmc import x" resolved through its submodule name
            if LAYERS.index(target) > LAYERS.index(layer(own)):
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({layer(own)}) "
                              f"imports fixedqmc.{name} ({target})")
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


@pytest.mark.parametrize("module, expected", [
    ("errors", "base"), ("numerics.kernel", "numerics"), ("qmc.system", "protocol"),
    ("qmc.vmc", "qmc"), ("systems.helium.plugin", "systems"), ("sweep.sweep", "sweep"),
    ("cli", "top"), ("bench.h2", "top"), ("testing", "qmc"), ("testing.system_check", "qmc"),
    ("testing.strategies", "qmc"), ("cost.fpga", "cost")])
def test_the_layer_map(module, expected):
    assert layer(module) == expected


def test_importing_fixedqmc_loads_no_system():
    code = ("import sys, fixedqmc; "
            "print([m for m in sys.modules if m.startswith('fixedqmc.systems')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
