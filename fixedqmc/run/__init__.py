"""Running calculations from inputs: configuration (TOML, overrides), the runner and the
optimiser."""

from fixedqmc.run.config import DEFAULTS, load_config
from fixedqmc.run.optimize import OptimizeResult, optimize
from fixedqmc.run.outputs import RunResult
from fixedqmc.run.plan import build_system
from fixedqmc.run.runner import run

__all__ = ["DEFAULTS", "OptimizeResult", "RunResult", "build_system", "load_config",
           "optimize", "run"]
