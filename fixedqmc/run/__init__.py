"""Running calculations from inputs: configuration (TOML, overrides) and the runner."""

from fixedqmc.run.config import DEFAULTS, load_config
from fixedqmc.run.runner import RunResult, build_system, run

__all__ = ["DEFAULTS", "RunResult", "build_system", "load_config", "run"]
