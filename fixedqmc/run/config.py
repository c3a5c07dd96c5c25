"""Run input: TOML files, ``--set key=value`` overrides, defaults and validation.

The engine's keys, their defaults and meaning (:data:`DEFAULTS`); every system kind adds
its own sections and keys (its plugin's ``sections``, e.g. those of the helium plug-in)
and its own method defaults::

    seed = 1                      # one seed for the whole run (walkers, moves, rounding)
    precision = "float64"         # precision spec over the system's kernels
                                  # (fixedqmc.numerics.policy); "@FILE": the spec in a
                                  # file (e.g. the plan.spec of fixedqmc tune)
    specialise = false            # compile fixed formats into the kernels (bench speed)
    output = "results/run"        # folder for trace, summary and checkpoints
    units = ""                    # energy unit of printed results; "": the system's own
    plugins = []                  # files (relative to the input) or modules registering
                                  # system kinds of your own (their code is run)

    [system]
    kind = "helium"               # a registered system kind (fixedqmc.qmc.registry)
    ...                           # the kind's own keys

    [method]
    kind = "vmc"                  # "vmc" or "dmc"
    walkers = 100
    blocks = 20                   # production blocks
    equil_blocks = 5              # equilibration blocks (VMC tunes step_size in them)
    steps_per_block = 20
    step_size = 1.0               # VMC move size (system length unit), tuned in equilibration
    move = "all"                  # "all" (all-particle moves) or "single" (VMC and DMC)
    target_acceptance = 0.5
    recompute_every = 1           # blocks between rebuilds of per-walker state (drift check)
    taus = [0.002]                # DMC time steps (1/energy unit); several: a series
    target_population = 0         # DMC; 0: the number of walkers
    vmc_blocks = 5                # DMC: VMC blocks that prepare the walkers
    equil_time = 0.0              # DMC: equilibration of every time step in imaginary time
                                  # (1/energy unit: tau x steps); it sets the stage's
                                  # ceil(equil_time / (tau x steps_per_block)) equilibration
                                  # blocks in place of equil_blocks; 0: equil_blocks
    production_time = 0.0         # DMC: production of every time step in imaginary time,
                                  # in place of blocks likewise; 0: blocks
    energy_cutoff = 10.0          # DMC: local-energy cutoff in the weights, in sigmas; 0: off
    max_age = 50                  # DMC: steps without an accepted move before a walker
                                  # may no longer multiply

    [optimize]                    # fixedqmc optimize (fixedqmc.run.optimize); a run ignores it
    method = "variance"           # "variance" (unreweighted variance minimisation) or
                                  # "energy" (the linear method)
    cycles = 4                    # optimisation cycles, each on a fresh VMC sample

Unknown keys (naming what the system kind allows), wrong types and impossible values raise
a :class:`FixedQMCError` naming the key and what is allowed, before any work starts.

A DMC stage warns (and is left out of the time-step extrapolation) when its equilibration
is provably too short for the trial function's energy excess and spread or when its
production energies still drift, and cautions when its production is too short for its
correlation time to trust its error bar (:func:`fixedqmc.qmc.stage_estimate.estimate`); times in
the system's inverse energy unit (``equil_time``, ``production_time``) keep them the same
at every time step.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
from pathlib import Path

from fixedqmc.errors import FixedQMCError
from fixedqmc.input_checks import (check_bool, check_choice, check_int, check_number,
                                   check_positive, check_str)
from fixedqmc.numerics.policy import parse_precision
from fixedqmc.qmc.dmc import DMCSettings, blocks_for_time
from fixedqmc.qmc.registry import get_plugin, load_plugins
from fixedqmc.qmc.vmc import VMCSettings

DEFAULT_KIND = "helium"
_VMC, _DMC = VMCSettings(), DMCSettings()  # the drivers' defaults, the one place they live
DEFAULTS: dict = {
    "seed": 1,
    "precision": "float64",
    "specialise": False,
    "output": "results/run",
    "units": "",
    "plugins": [],
    "system": {"kind": DEFAULT_KIND},
    "method": {"kind": "vmc", "walkers": 100, "blocks": _VMC.n_blocks,
               "equil_blocks": _VMC.equil_blocks, "steps_per_block": _VMC.steps_per_block,
               "step_size": _VMC.step_size, "move": _VMC.move,
               "target_acceptance": _VMC.target_acceptance,
               "recompute_every": _VMC.recompute_every, "taus": [_DMC.tau],
               "target_population": 0, "vmc_blocks": 5, "energy_cutoff": _DMC.energy_cutoff,
               "max_age": _DMC.max_age, "equil_time": 0.0, "production_time": 0.0},
    "optimize": {"method": "variance", "cycles": 4},
}
CHOICES = {"method.kind": ("vmc", "dmc"), "method.move": ("all", "single"),
           "optimize.method": ("variance", "energy")}
POSITIVE_INT = ("method.walkers", "method.blocks", "method.steps_per_block",
                "method.recompute_every", "method.max_age", "optimize.cycles")
NONNEGATIVE_INT = ("method.equil_blocks", "method.target_population", "method.vmc_blocks",
                   "seed")
IMAGINARY_TIMES = ("method.equil_time", "method.production_time")
# keys added after outputs were written: while off (0) they do not enter the input hash,
# so the checkpoints and summaries of earlier inputs are still recognised
HASHED_WHEN_SET = {"method": ("equil_time", "production_time")}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def _merge(base: dict, new: dict, where: str = "", kind: str = "") -> None:
    """Merge ``new`` into ``base``; every key must exist in ``base``."""
    for k, v in new.items():
        key = f"{where}{k}"
        if k not in base:
            allowed = ", ".join(sorted(base))
            raise FixedQMCError(f"unknown input key {key!r} for system.kind {kind!r}; "
                                f"allowed here: {allowed}")
        if isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise FixedQMCError(f"input key {key!r} must be a table of keys, got {v!r}")
            _merge(base[k], v, key + ".", kind)
        elif isinstance(v, dict):
            raise FixedQMCError(f"input key {key!r} takes a value, not a table of keys; "
                                f"got {v!r}")
        else:
            base[k] = v


def _update(dst: dict, src: dict) -> None:
    """Deep update without checks (the user's layers: file, overrides, --set)."""
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _update(dst[k], v)
        else:
            dst[k] = copy.deepcopy(v)


def parse_value(text: str):
    """A ``--set`` value: TOML syntax if it parses (numbers, booleans, arrays, quoted
    strings), else the bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _assignment(assignment: str) -> dict:
    """One ``key.sub=value`` override as a nested dict."""
    if not isinstance(assignment, str) or "=" not in assignment:
        raise FixedQMCError(f"--set expects key=value, got {assignment!r}")
    key, text = assignment.split("=", 1)
    parts = key.strip().split(".")
    if not all(parts):
        raise FixedQMCError(f"--set: {key.strip()!r} is not a key (section.key=value)")
    node: dict = {}
    cur = node
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = parse_value(text.strip())
    return node


def defaults_for(kind: str) -> dict:
    """The complete default input of a system kind (engine keys + the kind's sections)."""
    plugin = get_plugin(kind)
    config = copy.deepcopy(DEFAULTS)
    for name, keys in plugin.sections.items():
        config.setdefault(name, {}).update(copy.deepcopy(keys))
    config["method"].update(copy.deepcopy(plugin.method_defaults))
    config["system"]["kind"] = kind
    return config


def load_config(path=None, sets=(), overrides: dict | None = None) -> dict:
    """Defaults of the input's system kind, then the TOML file, then ``overrides`` (a
    nested dict), then ``--set`` assignments; plugins imported; validated
    (:func:`validate`)."""
    user: dict = {}
    base = None
    if path is not None:
        p = Path(path)
        if not p.is_file():
            what = "is a folder, not a file" if p.is_dir() else "does not exist"
            raise FixedQMCError(f"input file {str(p)!r} {what}")
        try:
            _update(user, tomllib.loads(p.read_text()))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise FixedQMCError(f"input file {str(p)!r} is not valid TOML: {exc}") from None
        base = p.resolve().parent
    if overrides:
        if not isinstance(overrides, dict):
            raise FixedQMCError(f"overrides must be a dict of input keys, got {overrides!r}")
        _update(user, overrides)
    for s in sets:
        _update(user, _assignment(s))
    plugins = user.get("plugins", [])
    load_plugins(plugins, base)
    user["plugins"] = [str((base / s).resolve()) if base is not None and s.endswith(".py")
                       and not Path(s).is_absolute() else s for s in plugins]
    system = user.get("system", {})
    kind = system.get("kind", DEFAULT_KIND) if isinstance(system, dict) else DEFAULT_KIND
    config = defaults_for(kind)
    _merge(config, user, kind=kind)
    if isinstance(config["precision"], str) and config["precision"].startswith("@"):
        config["precision"] = read_precision_file(config["precision"][1:])
    validate(config)
    return config


def read_precision_file(path) -> str:
    """The precision spec in a file (``precision = "@plan.spec"``, ``--precision
    @plan.spec``; relative paths from the current folder), e.g. the plan ``fixedqmc tune``
    writes: its items one per line or comma separated, ``#`` comments and blank lines
    ignored.  A file that is missing or does not parse is named in the error."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise FixedQMCError(f"precision = '@{path}': cannot read the precision file "
                            f"({exc.strerror or exc})") from None
    items = [line.split("#", 1)[0].strip().strip(",") for line in text.splitlines()]
    spec = ",".join(i for i in items if i)
    try:
        parse_precision(spec)
    except FixedQMCError as exc:
        raise type(exc)(f"precision file {str(p)!r}: {exc}") from None
    return spec


def _get(config: dict, key: str):
    node = config
    for p in key.split("."):
        node = node[p]
    return node


def validate(config: dict) -> None:
    """Check types and values of every key (raises naming the key): the engine's keys here,
    the system's sections by its plugin's ``check``."""
    flat = _flat(config)
    for key, allowed in CHOICES.items():
        check_choice(key, flat[key], allowed)
    for key in POSITIVE_INT:
        check_int(key, flat[key], 1)
    if flat["method.blocks"] < 2:
        raise FixedQMCError(f"method.blocks = {flat['method.blocks']}: the reblocked error bar "
                            "of a stage needs at least 2 production blocks (use 10 or more "
                            "for a reliable error bar)")
    for key in NONNEGATIVE_INT:
        check_int(key, flat[key], 0)
    check_positive("method.step_size", flat["method.step_size"])
    check_number("method.energy_cutoff", flat["method.energy_cutoff"], 0.0)
    taus = flat["method.taus"]
    if isinstance(taus, (int, float)) and not isinstance(taus, bool):
        taus = [taus]
        config["method"]["taus"] = taus
    if not isinstance(taus, list) or not taus:
        raise FixedQMCError(f"method.taus must be a list of positive time steps, got {taus!r}")
    for t in taus:
        check_positive("method.taus", t)
    _check_times(flat, taus)
    check_number("method.target_acceptance", flat["method.target_acceptance"])
    if not 0 < flat["method.target_acceptance"] < 1:
        raise FixedQMCError("method.target_acceptance must lie in (0, 1), got "
                            f"{flat['method.target_acceptance']!r}")
    for key in ("precision", "output", "units"):
        check_str(key, flat[key])
    try:
        parse_precision(flat["precision"])
    except FixedQMCError as exc:
        raise type(exc)(f"precision = {flat['precision']!r}: {exc}") from None
    check_bool("specialise", flat["specialise"])
    plugin = get_plugin(config["system"]["kind"])
    plugin.units.factor(config["units"])  # a unit this system can show
    if plugin.check is not None:
        plugin.check(config)


def _check_times(flat: dict, taus: list) -> None:
    """``method.equil_time`` and ``method.production_time``: finite numbers >= 0; under DMC
    a production time must give every time step at least 2 production blocks."""
    for key in IMAGINARY_TIMES:
        check_number(key, flat[key], 0.0)
    time, steps = flat["method.production_time"], flat["method.steps_per_block"]
    if flat["method.kind"] != "dmc" or time == 0:
        return
    for tau in taus:
        n = blocks_for_time(time, tau, steps)
        if n < 2:
            raise FixedQMCError(
                f"method.production_time = {time!r} gives {n} production block at tau = "
                f"{tau:g} (a block is {steps} steps, {tau * steps:g} of imaginary time); the "
                f"reblocked error bar needs at least 2: set it to at least "
                f"{2 * tau * steps:g} (10 or more blocks for a reliable error bar), or to 0 "
                "to use method.blocks")


def energy_unit(config: dict) -> tuple[str, float]:
    """The unit results are shown in and its factor from the system's energy unit."""
    units = get_plugin(config["system"]["kind"]).units
    name = config["units"] or units.energy
    return name, units.factor(name)


def input_hash(config: dict, *, optimize: bool = False) -> str:
    """Hash of everything that determines the results of a run (all keys but ``output``
    and ``units``, which change neither a bit nor a sample, and ``optimize``, which a run
    does not read) or, with ``optimize``, of ``fixedqmc optimize`` (its section included).
    ``specialise`` is included: compiled-in formats let LLVM vectorise float sums, which
    may change float64 bits.  Keys of :data:`HASHED_WHEN_SET` enter only when set (not 0),
    so an input that leaves them off keeps the hash it had before they existed."""
    skip = ("output", "units") if optimize else ("output", "units", "optimize")
    physics = {k: v for k, v in config.items() if k not in skip}
    for section, keys in HASHED_WHEN_SET.items():  # off: hashed as before they existed
        if isinstance(physics.get(section), dict):
            physics[section] = {k: v for k, v in physics[section].items()
                                if not (k in keys and v == 0)}
    return hashlib.sha256(json.dumps(physics, sort_keys=True).encode()).hexdigest()[:16]
