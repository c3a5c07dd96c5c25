"""Planning a run: the system of an input (through its kind's plug-in) and the driver
stages of its method (VMC, or a VMC preparation and one DMC stage per time step), with
their settings read from the input's ``method`` section."""

from __future__ import annotations

from dataclasses import dataclass

from fixedqmc.qmc.dmc import DMCSettings, blocks_for_time
from fixedqmc.qmc.registry import get_plugin, load_plugins
from fixedqmc.qmc.vmc import VMCSettings

__all__ = ["Stage", "build_system", "dmc_settings", "stages", "vmc_settings"]


def build_system(config: dict, ranges: dict | None = None):
    """The system of an input (validated config), built by its kind's plugin; ``ranges``
    (a range profile's ``{kernel: {variable: (lo, hi, min nonzero |x|)}}``,
    :meth:`~fixedqmc.qmc.profile.RangeProfile.ranges`) size width-only fixed specs
    (``fixed:W``, from ``(lo, hi)``) and the exponent bits of ``float:m<M>``."""
    load_plugins(config.get("plugins", []))  # worker processes import them anew
    plugin = get_plugin(config["system"]["kind"])
    return plugin.make(config, precision=config["precision"], ranges=ranges,
                       seed=config["seed"], specialise=config["specialise"])


def vmc_settings(m: dict, blocks: int | None = None, equil: int | None = None) -> VMCSettings:
    """The VMC settings of an input's ``method`` section."""
    return VMCSettings(n_blocks=m["blocks"] if blocks is None else blocks,
                       equil_blocks=m["equil_blocks"] if equil is None else equil,
                       steps_per_block=m["steps_per_block"], step_size=m["step_size"],
                       move=m["move"], target_acceptance=m["target_acceptance"],
                       recompute_every=m["recompute_every"])


def dmc_settings(m: dict, tau: float) -> DMCSettings:
    """The settings of the DMC stage at time step ``tau``: equilibration and production
    blocks from ``equil_time`` / ``production_time`` (imaginary time, the system's
    1/energy; :func:`fixedqmc.qmc.dmc.blocks_for_time`) when they are set (> 0), else
    ``equil_blocks`` / ``blocks``."""
    steps = m["steps_per_block"]
    equil_time, production_time = m.get("equil_time", 0), m.get("production_time", 0)
    equil = (blocks_for_time(equil_time, tau, steps) if equil_time > 0
             else m["equil_blocks"])
    blocks = (blocks_for_time(production_time, tau, steps) if production_time > 0
              else m["blocks"])
    return DMCSettings(tau=tau, n_blocks=blocks, equil_blocks=equil,
                       steps_per_block=steps,
                       target_population=m["target_population"] or m["walkers"],
                       move=m["move"], energy_cutoff=float(m["energy_cutoff"]),
                       max_age=m["max_age"], recompute_every=m["recompute_every"])


@dataclass
class Stage:
    """One driver run of a calculation: VMC, or DMC at one time step."""

    name: str
    kind: str
    settings: object


def stages(config: dict) -> list[Stage]:
    m = config["method"]
    if m["kind"] == "vmc":
        return [Stage("vmc", "vmc", vmc_settings(m))]
    out = []
    if m["vmc_blocks"]:
        out.append(Stage("vmc", "vmc", vmc_settings(m, blocks=m["vmc_blocks"], equil=0)))
    out += [Stage(f"dmc_tau{tau:g}", "dmc", dmc_settings(m, tau)) for tau in m["taus"]]
    return out
