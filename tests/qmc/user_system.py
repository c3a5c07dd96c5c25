"""The example user-defined system (examples/trapped_fermions.py), imported as a run input
imports it: through the registry's plugin loader."""

import sys
from pathlib import Path

from fixedqmc.qmc.registry import load_plugins

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trapped_fermions.py"


def fermions_input(output) -> dict:
    """A short VMC input of the example system writing to ``output`` (its kernel
    ``potential`` compiles in seconds: sweeps and tunes of it run end to end in tests)."""
    return {"plugins": [str(EXAMPLE)], "output": str(output), "seed": 1,
            "system": {"kind": "trapped_fermions"}, "trial": {"alpha": 0.8},
            "method": {"kind": "vmc", "walkers": 40, "blocks": 6, "equil_blocks": 2,
                       "steps_per_block": 5}}


def fermions_module():
    load_plugins([str(EXAMPLE)])
    return sys.modules["fixedqmc_plugin_trapped_fermions"]
