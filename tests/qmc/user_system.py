"""The example user-defined system (examples/trapped_fermions.py), imported as a run input
imports it: through the registry's plugin loader."""

import sys
from pathlib import Path

from fixedqmc.qmc.registry import load_plugins

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trapped_fermions.py"


def fermions_module():
    load_plugins([str(EXAMPLE)])
    return sys.modules["fixedqmc_plugin_trapped_fermions"]
