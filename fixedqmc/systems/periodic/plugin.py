"""The ``heg`` system kind: the homogeneous electron gas, plane-wave Slater determinants with
Ewald interactions (seed 000).

Registered through the ``fixedqmc.system_kinds`` entry point (``pyproject.toml``).  Input keys
and defaults (lengths in bohr, energies in hartree)::

    [system]
    electrons = 14          # N; each spin must fill closed shells (3D cubic: 1, 7, 19, 27,
                            # 33, 57, ... per spin, so 2, 14, 38, 54, 66, 114 unpolarised)
    r_s = 2.0               # density parameter (bohr), > 0
    dim = 3                 # 3 (bulk) or 2 (a periodic plane)
    shape = ""              # cell: 3D cubic (default), bcc, fcc; 2D square (default), hexagonal
    polarisation = 0.0      # zeta = (N_up - N_down) / N in [0, 1]
    ewald_accuracy = 1e-8   # relative truncation error of the Ewald sums

    [jastrow]               # the two-body Jastrow factor u + p of seed 000 (Eq. 8-10)
    enabled = false         # false: the Slater determinant alone (VMC = Hartree-Fock)
    cutoff = 0.0            # L_u (bohr); 0 = the largest allowed, half the shortest
                            # lattice vector
    C = 3                   # 2 or 3: u is C-1 times continuously differentiable at L_u
    alpha_parallel = []     # [alpha_0, alpha_2, ..., alpha_N_u] (alpha_1: Kato cusp);
    alpha_antiparallel = [] # the same length N_u (1 <= N_u <= 12); [] = the cusp term
    p_coefficients = []     # [a_1, ..., a_N_p]: one per star of reciprocal-lattice vectors

With the defaults the Jastrow factor is the monotone cusp term alone, ``u = alpha_0 (r -
L_u)**C`` with ``alpha_0`` set by the Kato cusp (``alpha_1 = 0``).  Every key is checked, and the closed shells of both spins, before any work; an
open shell names the key and lists the allowed counts.
"""

from __future__ import annotations

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import (check_bool, check_choice, check_int, check_number,
                                   check_positive, check_str)
from fixedqmc.qmc.registry import SystemPlugin
from fixedqmc.systems.periodic.cell import HEG_SHAPES, heg_cell
from fixedqmc.systems.periodic.ewald import ACCURACY_RANGE
from fixedqmc.systems.periodic.heg import UNITS, ElectronGas, spin_counts
from fixedqmc.systems.periodic.jastrow import (C_VALUES, cusp_only_alpha0, jastrow_parameters,
                                               kato_gamma)
from fixedqmc.systems.periodic.jastrow_eval import JastrowEvaluator
from fixedqmc.systems.periodic.shells import allowed_text, closed_shell_counts

SECTIONS = {"system": {"electrons": 14, "r_s": 2.0, "dim": 3, "shape": "",
                       "polarisation": 0.0, "ewald_accuracy": 1e-8},
            "jastrow": {"enabled": False, "cutoff": 0.0, "C": 3, "alpha_parallel": [],
                        "alpha_antiparallel": [], "p_coefficients": []}}


def _cell(s: dict):
    return heg_cell(s["electrons"], s["r_s"], s["dim"], s["shape"] or None)


def _jastrow_parameters(config: dict, cell, n_up: int):
    """The checked Jastrow parameters of an input (their checks name the keys)."""
    j = config["jastrow"]
    check_number("jastrow.cutoff", j["cutoff"], 0.0)
    cutoff = float(j["cutoff"]) or cell.inscribed_radius
    alphas = {}
    for key, parallel in (("alpha_parallel", True), ("alpha_antiparallel", False)):
        v = j[key]
        if isinstance(v, list) and not v:  # the monotone cusp term alone
            if isinstance(j["C"], bool) or j["C"] not in C_VALUES:
                v = [0.0]  # jastrow_parameters names the bad C
            else:
                v = [cusp_only_alpha0(cutoff, j["C"], kato_gamma(cell.dim, parallel))]
        alphas[key] = v
    return jastrow_parameters(cell, config["system"]["electrons"], n_up,
                              cutoff=float(j["cutoff"]) or None, c=j["C"],
                              p_coefficients=j["p_coefficients"], **alphas)


def check(config: dict) -> None:
    s = config["system"]
    check_int("system.electrons", s["electrons"], 1)
    check_positive("system.r_s", s["r_s"])
    if isinstance(s["dim"], bool) or s["dim"] not in HEG_SHAPES:
        raise FixedQMCError(f"system.dim = {s['dim']!r} is not allowed; choose 3 or 2")
    check_str("system.shape", s["shape"])
    if s["shape"]:
        check_choice(f"system.shape (dim = {s['dim']})", s["shape"], HEG_SHAPES[s["dim"]])
    check_number("system.polarisation", s["polarisation"], 0.0)
    if s["polarisation"] > 1:
        raise FixedQMCError(f"system.polarisation = {s['polarisation']!r} is not allowed; "
                            "choose zeta = (N_up - N_down) / N in [0, 1]")
    check_number("system.ewald_accuracy", s["ewald_accuracy"])
    lo, hi = ACCURACY_RANGE
    if not lo <= s["ewald_accuracy"] <= hi:
        raise FixedQMCError(f"system.ewald_accuracy = {s['ewald_accuracy']!r} is not allowed; "
                            f"choose {lo:g} <= ewald_accuracy <= {hi:g}")
    n_up, n_down = spin_counts(s["electrons"], s["polarisation"])
    cell = _cell(s)
    counts = closed_shell_counts(cell, max(n_up, n_down))
    for name, n in (("N_up", n_up), ("N_down", n_down)):
        if n and n not in counts:
            zeta = s["polarisation"]
            more = (f"; allowed system.electrons (unpolarised): {allowed_text(counts, n, 2)}"
                    if zeta == 0 else "")
            raise FixedQMCError(
                f"system.electrons = {s['electrons']} at system.polarisation = {zeta!r} gives "
                f"{name} = {n}, not a closed shell of the {cell.dim}D "
                f"{s['shape'] or HEG_SHAPES[cell.dim][0]} cell; allowed electrons per spin: "
                f"{allowed_text(counts, n)}{more}")
    check_bool("jastrow.enabled", config["jastrow"]["enabled"])
    if config["jastrow"]["enabled"]:
        _jastrow_parameters(config, cell, n_up)


def build(config: dict, *, precision, ranges=None, seed: int = 0, specialise: bool = False
          ) -> ElectronGas:
    s = config["system"]
    n_up, n_down = spin_counts(s["electrons"], s["polarisation"])
    cell = _cell(s)
    jastrow = (JastrowEvaluator(_jastrow_parameters(config, cell, n_up))
               if config["jastrow"]["enabled"] else None)
    return ElectronGas(cell, n_up, n_down, precision,
                       ewald_accuracy=float(s["ewald_accuracy"]), jastrow=jastrow,
                       ranges=ranges, seed=seed, specialise=specialise)


PLUGIN = SystemPlugin("heg", SECTIONS, build, UNITS, check,
                      "homogeneous electron gas (3D or 2D), plane-wave Slater determinants, "
                      "optional Jastrow u + p, Ewald interactions (seed 000)",
                      method_defaults={"step_size": 2.0, "move": "single",
                                       "taus": [0.02, 0.01], "recompute_every": 1})
