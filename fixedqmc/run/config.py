"""Run input: TOML files, ``--set key=value`` overrides, defaults and validation.

Every key, its default and what it means, in one place (:data:`DEFAULTS`)::

    seed = 1                      # one seed for the whole run (walkers, moves, rounding)
    precision = "float64"         # precision spec over the kernels distance, potential,
                                  # wavefunction, kinetic (fixedqmc.numerics.policy)
    specialise = false            # compile fixed formats into the kernels (bench speed)
    output = "results/run"        # folder for trace, summary and checkpoints
    units = "K"                   # K, mK, hartree or microhartree (printed and summary)

    [system]
    kind = "helium"
    n_atoms = 3
    potential = "SAPT2"           # SAPT2, HFD-B, HFDHE2, LM2M2, or "module:function"
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

    [method]
    kind = "vmc"                  # "vmc" or "dmc"
    walkers = 100
    blocks = 20                   # production blocks
    equil_blocks = 5
    steps_per_block = 20
    step_size = 1.0               # VMC move size (A), tuned in equilibration
    move = "all"                  # VMC: "all" (all-atom moves) or "single"
    target_acceptance = 0.5
    taus = [0.002]                # DMC time steps (1/K); several give a time-step series
    target_population = 0         # DMC; 0: the number of walkers
    vmc_blocks = 5                # DMC: VMC blocks that prepare the walkers

Unknown keys, wrong types and impossible values raise a :class:`FixedQMCError` naming the
key and what is allowed, before any work starts.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import tomllib
from pathlib import Path

from fixedqmc.errors import FixedQMCError

DEFAULTS: dict = {
    "seed": 1,
    "precision": "float64",
    "specialise": False,
    "output": "results/run",
    "units": "K",
    "system": {"kind": "helium", "n_atoms": 3, "potential": "SAPT2", "hbar2_2m": 6.0596481,
               "geometry": "lattice", "spacing": 4.2334, "jitter": 0.1},
    "trial": {"b": -1.08, "a": -0.0095, "alpha": 1.0, "a_k": [0.0, 0.0, -2.57, 0.0, 0.0, -118.8]},
    "tables": {"r_min": 1.4, "r_max": 100.0, "n1": 256, "n_seg": 21, "n_bin": 64,
               "coef_format": ""},
    "kernels": {"potential": "table", "wavefunction": "table", "kinetic": "table"},
    "method": {"kind": "vmc", "walkers": 100, "blocks": 20, "equil_blocks": 5,
               "steps_per_block": 20, "step_size": 1.0, "move": "all",
               "target_acceptance": 0.5, "taus": [0.002], "target_population": 0,
               "vmc_blocks": 5},
}

CHOICES = {
    "units": ("K", "mK", "hartree", "microhartree"),
    "system.kind": ("helium",),
    "system.geometry": ("lattice", "random"),
    "method.kind": ("vmc", "dmc"),
    "method.move": ("all", "single"),
    "kernels.potential": ("table", "analytic"),
    "kernels.wavefunction": ("table", "analytic"),
    "kernels.kinetic": ("table", "analytic"),
}
POSITIVE_INT = ("system.n_atoms", "method.walkers", "method.blocks", "method.steps_per_block",
                "tables.n1", "tables.n_seg", "tables.n_bin")
NONNEGATIVE_INT = ("method.equil_blocks", "method.target_population", "method.vmc_blocks",
                   "seed")
POSITIVE_FLOAT = ("system.hbar2_2m", "system.spacing", "method.step_size", "tables.r_min",
                  "tables.r_max")


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _merge(base: dict, new: dict, where: str = "") -> None:
    for k, v in new.items():
        key = f"{where}{k}"
        if k not in base:
            allowed = ", ".join(sorted(base))
            raise FixedQMCError(f"unknown input key {key!r}; allowed here: {allowed}")
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise FixedQMCError(f"input key {key!r} must be a table of keys, got {v!r}")
            _merge(base[k], v, key + ".")
        else:
            base[k] = v


def parse_value(text: str):
    """A ``--set`` value: TOML syntax if it parses (numbers, booleans, arrays, quoted
    strings), else the bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_set(config: dict, assignment: str) -> None:
    """Apply one ``key.sub=value`` override."""
    if "=" not in assignment:
        raise FixedQMCError(f"--set expects key=value, got {assignment!r}")
    key, text = assignment.split("=", 1)
    parts = key.strip().split(".")
    node: dict = {}
    cur = node
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = parse_value(text.strip())
    _merge(config, node)


def load_config(path=None, sets=(), overrides: dict | None = None) -> dict:
    """Defaults, then the TOML file, then ``overrides`` (a nested dict), then ``--set``
    assignments; validated (:func:`validate`)."""
    config = copy.deepcopy(DEFAULTS)
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise FixedQMCError(f"input file {str(p)!r} does not exist")
        try:
            data = tomllib.loads(p.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise FixedQMCError(f"input file {str(p)!r} is not valid TOML: {exc}") from None
        _merge(config, data)
    if overrides:
        _merge(config, copy.deepcopy(overrides))
    for s in sets:
        apply_set(config, s)
    validate(config)
    return config


def _get(config: dict, key: str):
    node = config
    for p in key.split("."):
        node = node[p]
    return node


def validate(config: dict) -> None:
    """Check types and values of every key (raises naming the key)."""
    flat = _flat(config)
    for key, allowed in CHOICES.items():
        if flat[key] not in allowed:
            raise FixedQMCError(f"{key} = {flat[key]!r} is not allowed; choose one of "
                                f"{', '.join(allowed)}")
    for key in POSITIVE_INT + NONNEGATIVE_INT:
        v = flat[key]
        low = 1 if key in POSITIVE_INT else 0
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise FixedQMCError(f"{key} must be an integer >= {low}, got {v!r}")
    for key in POSITIVE_FLOAT:
        v = flat[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise FixedQMCError(f"{key} must be a positive number, got {v!r}")
    if flat["system.n_atoms"] < 2:
        raise FixedQMCError(f"system.n_atoms must be >= 2, got {flat['system.n_atoms']}")
    taus = flat["method.taus"]
    if isinstance(taus, (int, float)) and not isinstance(taus, bool):
        taus = [taus]
        config["method"]["taus"] = taus
    if not isinstance(taus, list) or not taus or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0
            for t in taus):
        raise FixedQMCError(f"method.taus must be a list of positive time steps (1/K), got {taus!r}")
    if not 0 < flat["method.target_acceptance"] < 1:
        raise FixedQMCError("method.target_acceptance must lie in (0, 1), got "
                            f"{flat['method.target_acceptance']!r}")
    a_k = flat["trial.a_k"]
    if not isinstance(a_k, list) or len(a_k) > 6 or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in a_k):
        raise FixedQMCError(f"trial.a_k must be a list of at most 6 numbers (a_0..a_5), got {a_k!r}")
    for key in ("precision", "output", "system.potential", "tables.coef_format"):
        if not isinstance(flat[key], str):
            raise FixedQMCError(f"{key} must be a string, got {flat[key]!r}")
    if not isinstance(flat["specialise"], bool):
        raise FixedQMCError(f"specialise must be true or false, got {flat['specialise']!r}")


def input_hash(config: dict) -> str:
    """Hash of everything that determines the results (all keys but ``output``,
    ``specialise`` and ``units``, which change neither a bit nor a sample)."""
    physics = {k: v for k, v in config.items() if k not in ("output", "specialise", "units")}
    return hashlib.sha256(json.dumps(physics, sort_keys=True).encode()).hexdigest()[:16]
