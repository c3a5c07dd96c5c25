"""Memory a calculation needs, estimated before anything is allocated, against what the
machine has.

The bytes of one walker are measured on the system itself, through the system protocol
only (:mod:`fixedqmc.qmc.system`): two starting walkers (``initial_positions``) are
evaluated (``evaluate``) and the bytes of their positions, of every array of the
:class:`~fixedqmc.qmc.system.Evaluation` and of the per-walker state are counted.  A run
holds about :data:`DRIVER_COPIES` such copies per walker (the walkers and their
evaluation, a proposed move and its evaluation, the branching or checkpoint copy); a DMC
population may grow to twice its target.  A sampling phase (the float64 reference of
``fixedqmc profile`` and ``fixedqmc sweep``) also keeps the walkers' positions and local
energy at the end of every production block.  Before the two probe walkers are made, a
floor of ``n_particles`` positions and gradients (float64) per walker is checked, so that a
system too large for even that is refused without allocating anything.

Available memory: ``psutil.virtual_memory().available`` if psutil is installed, else
``MemAvailable`` of ``/proc/meminfo``, else ``os.sysconf`` (available physical pages); when
none is known the check is skipped.  A run that would not fit raises a
:class:`~fixedqmc.errors.FixedQMCError` naming the keys, the estimate and what is available.
"""

from __future__ import annotations

import os

import numpy as np

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.system import Walkers
from fixedqmc.state_files import readable_bytes

DRIVER_COPIES = 4  # walkers + evaluation, proposal + its evaluation, branching/checkpoint


def available_bytes() -> int | None:
    """Memory available to a new allocation on this machine (None: unknown)."""
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def walker_bytes(system) -> tuple[float, float]:
    """``(bytes of one walker, bytes of its positions)``, measured on two starting walkers:
    positions, every array of their evaluation and their per-walker state.  Overflow
    events of this probe are not kept in the system's log."""
    log = system.log
    saved = {k: dict(getattr(log, k)) for k in ("events", "values") if hasattr(log, k)}
    try:
        pos = system.wrap(system.initial_positions(2, np.random.default_rng(0)))
        ev = system.evaluate(Walkers(pos, None))
    finally:
        for k, counts in saved.items():
            getattr(log, k).clear()
            getattr(log, k).update(counts)
    arrays = [pos, ev.ln_psi, ev.sign, ev.grad, ev.outside, *ev.parts.values(),
              *(ev.state or {}).values()]
    total = sum(np.asarray(a).nbytes for a in arrays if a is not None)
    return total / 2, pos.nbytes / 2


def _population(method: dict) -> tuple[int, str]:
    """The largest number of walkers a run holds and how it follows from the input."""
    n = method["walkers"]
    if method["kind"] != "dmc":
        return n, f"{n} walkers"
    target = method["target_population"] or n
    return max(n, 2 * target), f"a DMC population of up to 2 x {target}"


def check_memory(system, config: dict, *, samples: bool = False, copies: int = 1) -> None:
    """Refuse a calculation of ``config`` on ``system`` that does not fit in the available
    memory (module docstring).  ``samples``: the run also keeps its production samples
    (a float64 reference); ``copies``: processes holding it at once (a local sweep pool).
    A run that cannot fit even at the floor of ``n_particles`` positions and gradients per
    walker is refused before the two probe walkers are made."""
    avail = available_bytes()
    if avail is None:
        return
    floor = int(system.n_particles) * 3 * 8
    _refuse_beyond(avail, config, system, 2 * floor, floor, samples, copies, "at least")
    per_walker, per_position = walker_bytes(system)
    _refuse_beyond(avail, config, system, per_walker, per_position, samples, copies, "about")


def _refuse_beyond(avail, config, system, per_walker, per_position, samples, copies, how_sure):
    """Raise, naming the keys and the estimate, if the calculation at ``per_walker`` bytes
    per walker (``per_position`` of them positions) needs more than ``avail``."""
    m = config["method"]
    population, how = _population(m)
    need = per_walker * DRIVER_COPIES * max(population, 2)
    parts = [f"{readable_bytes(per_walker)} per walker x {DRIVER_COPIES} driver copies x {how}"]
    keys = ["method.walkers"] + (["method.target_population"]
                                 if m["kind"] == "dmc" and m["target_population"] else [])
    if samples:
        kept = m["blocks"] * m["walkers"] * (per_position + 8)
        need += kept
        parts.append(f"{readable_bytes(kept)} of samples kept over {m['blocks']} blocks")
        keys.append("method.blocks")
    if copies > 1:
        need *= copies
        parts.append(f"x {copies} processes")
    if need > avail:
        shown = ", ".join(f"{k} = {_get(config, k)}" for k in keys)
        raise FixedQMCError(
            f"{shown} ({system.n_particles} particles per walker): this needs {how_sure} "
            f"{readable_bytes(need)} of memory ({'; '.join(parts)}), but {readable_bytes(avail)} is "
            f"available on this machine; reduce {' or '.join(keys)} or the system's size")


def _get(config: dict, key: str):
    section, name = key.split(".")
    return config[section][name]
