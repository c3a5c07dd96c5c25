"""The ``helium`` system kind: input sections, checks and builder of :class:`HeliumCluster`.

Registered through the ``fixedqmc.system_kinds`` entry point (``pyproject.toml``).  Input keys
and defaults (the ``[system]`` section also holds the engine's ``kind``)::

    [system]
    n_atoms = 3
    potential = "SAPT2"           # SAPT2, HFD-B, HFDHE2, LM2M2, or "module:function"
                                  # (imported and called: it runs your code)
    hbar2_2m = 6.0596481          # K A^2
    geometry = "lattice"          # or "random"
    spacing = 4.2334              # A, nearest-neighbour distance of the start (8 bohr)
    jitter = 0.1                  # random displacement of lattice starts, in spacings

    [trial]                       # T2(r) = b ln r + a r^alpha + sum_k a_k r^-k (HAQMC Eq. 17)
    b = -1.08
    a = -0.0095
    alpha = 1.0
    a_k = [0, 0, -2.57, 0, 0, -118.8]

    [tables]                      # pair-function tables (A); r_max bounds the cluster
    r_min = 1.4
    r_max = 100.0
    n1 = 256
    n_seg = 21
    n_bin = 64
    coef_format = ""              # e.g. "Q1.30" to quantize the coefficients

    [kernels]                     # "table" or "analytic" (analytic: float kernels only)
    potential = "table"
    wavefunction = "table"
    kinetic = "table"

Energies in K (also mK, hartree, microhartree), lengths in A.
"""

from __future__ import annotations

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import (check_choice, check_int, check_number, check_numbers,
                                   check_positive, check_str)
from fixedqmc.qmc.registry import SystemPlugin
from fixedqmc.systems.helium.cluster import (SOURCES, UNITS, HeliumCluster, StartSettings,
                                             TableSettings)
from fixedqmc.systems.helium.trial import PairProductParams
from fixedqmc.systems.helium.walkers import GEOMETRIES

SECTIONS = {
    "system": {"n_atoms": 3, "potential": "SAPT2", "hbar2_2m": 6.0596481,
               "geometry": "lattice", "spacing": 4.2334, "jitter": 0.1},
    "trial": {"b": -1.08, "a": -0.0095, "alpha": 1.0, "a_k": [0.0, 0.0, -2.57, 0.0, 0.0, -118.8]},
    "tables": {"r_min": 1.4, "r_max": 100.0, "n1": 256, "n_seg": 21, "n_bin": 64,
               "coef_format": ""},
    "kernels": {"potential": "table", "wavefunction": "table", "kinetic": "table"},
}


def check(config: dict) -> None:
    s, t, tb = config["system"], config["trial"], config["tables"]
    check_int("system.n_atoms", s["n_atoms"], 2)
    check_str("system.potential", s["potential"])
    check_positive("system.hbar2_2m", s["hbar2_2m"])
    check_choice("system.geometry", s["geometry"], GEOMETRIES)
    check_positive("system.spacing", s["spacing"])
    check_number("system.jitter", s["jitter"], 0.0)
    for key in ("b", "a", "alpha"):
        check_numbers(f"trial.{key}", [t[key]])
    check_numbers("trial.a_k", t["a_k"], 6)
    for key in ("r_min", "r_max"):
        check_positive(f"tables.{key}", tb[key])
    for key in ("n1", "n_seg", "n_bin"):
        check_int(f"tables.{key}", tb[key])
    check_str("tables.coef_format", tb["coef_format"])
    for key, v in config["kernels"].items():
        check_choice(f"kernels.{key}", v, SOURCES)


#: distances (A) a user potential is called on once at validation
PROBE_R = np.array([2.0, 2.9, 3.5, 5.0, 10.0])


def _checked_user_potential(spec: str):
    """Import ``module:function`` (this runs the user's code) and call it once on
    :data:`PROBE_R`: anything but finite floats of the same shape is an error naming
    ``system.potential``, before any work starts."""
    from fixedqmc.tables.builtin import resolve_function
    try:
        fn = resolve_function(spec)
    except FixedQMCError as exc:
        raise FixedQMCError(f"system.potential = {spec!r}: {exc}") from None
    try:
        v = fn(PROBE_R.copy())
    except Exception as exc:  # the user's code
        raise FixedQMCError(f"system.potential = {spec!r}: calling it on r = {PROBE_R.tolist()} "
                            f"A raised {type(exc).__name__}: {exc}") from None
    try:
        arr = np.asarray(v, np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.shape != PROBE_R.shape or not np.isfinite(arr).all():
        raise FixedQMCError(f"system.potential = {spec!r} must return finite energies (K), "
                            f"one per distance, as an array of shape {PROBE_R.shape}; on r = "
                            f"{PROBE_R.tolist()} A it returned {v!r}")
    return fn


def build(config: dict, *, precision, ranges=None, seed: int = 0, specialise: bool = False
          ) -> HeliumCluster:
    s, t, tb = config["system"], config["trial"], config["tables"]
    potential = s["potential"]
    if ":" in potential:
        potential = _checked_user_potential(potential)
    params = PairProductParams(b=t["b"], a=t["a"], alpha=t["alpha"], a_k=tuple(t["a_k"]))
    tables = TableSettings(r_min=tb["r_min"], r_max=tb["r_max"], n1=tb["n1"],
                           n_seg=tb["n_seg"], n_bin=tb["n_bin"],
                           coef_format=tb["coef_format"] or None)
    return HeliumCluster(s["n_atoms"], potential, params, precision, sources=config["kernels"],
                         tables=tables, hbar2_2m=s["hbar2_2m"], seed=seed,
                         specialise=specialise, ranges=ranges,
                         start=StartSettings(s["geometry"], s["spacing"], s["jitter"]))


PLUGIN = SystemPlugin("helium", SECTIONS, build, UNITS, check,
                      "bosonic He_N cluster, pair potential and pair-product trial function "
                      "(HAQMC, seed 002)")
