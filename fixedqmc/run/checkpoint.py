"""Checkpoint I/O of ``run`` and ``optimize``: sealed checkpoints, finished summaries, and
the check that an output folder holds this input's work and nothing else.

A checkpoint is a sealed state file (:mod:`fixedqmc.state_files`: SHA-256 of its content
and the input hash, written atomically); a checkpoint that is truncated or altered is
never resumed: the command stops and names it.  A summary (JSON) marks finished work.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixedqmc.errors import FixedQMCError
from fixedqmc.output_folder import claim
from fixedqmc.state_files import DamagedStateError, read_state, write_state

__all__ = ["check_folder", "open_folder", "read_summary", "write_checkpoint"]

RESTART = "delete it to start again from the beginning"


def write_checkpoint(path: Path, ck: dict) -> None:
    """Seal and write a checkpoint dict (it holds its ``input_hash``)."""
    write_state(path, ck, ck["input_hash"])


def read_summary(path: Path) -> dict:
    """A finished command's JSON summary; a damaged one is named, with what to do."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DamagedStateError(path, f"{type(exc).__name__}: {exc}",
                                "delete it (and the other results beside it) to run again, "
                                "or keep the folder and choose another output") from None
    if not isinstance(data, dict):
        raise FixedQMCError(f"{str(path)!r} is not a fixedqmc summary; delete it or choose "
                            "another output folder")
    return data


def differing_keys(a: dict, b: dict, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two inputs (``output`` and ``units``
    aside), each with both values."""
    keys = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            keys += differing_keys(x, y, f"{prefix}{k}.")
        elif x != y and k not in ("output", "units"):
            keys.append(f"{prefix}{k} ({x!r} there, {y!r} here)")
    return keys


def check_folder(out: Path, digest: str, config: dict, checkpoint: str,
                 summary: str) -> tuple[dict | None, dict | None]:
    """``(checkpoint dict to resume, summary of finished work)`` of ``out`` (None, None:
    start fresh); refuse a folder whose checkpoint or summary is of another input, naming
    the keys that differ."""
    for name in (checkpoint, summary):
        p = out / name
        if not p.exists():
            continue
        if name == checkpoint:
            data, _ = read_state(p, advice=RESTART)
            if not isinstance(data, dict):
                raise DamagedStateError(p, "not a checkpoint", RESTART)
        else:
            data = read_summary(p)
        if data.get("input_hash") != digest:
            keys = differing_keys(data.get("input") or {}, config)
            detail = (f"keys that differ: {'; '.join(keys)}" if keys else
                      f"hash {data.get('input_hash')}, this input {digest} (e.g. another "
                      "range profile)")
            raise FixedQMCError(
                f"output folder {str(out)!r} holds results of a different input ({detail}); "
                "refusing to resume or overwrite it: choose another output folder or delete "
                "that one")
        return (data, None) if name == checkpoint else (None, data)
    return None, None


def open_folder(out: Path, digest: str, config: dict, checkpoint: str, summary: str,
                what: str):
    """``(lock, checkpoint, summary)`` of a command's output folder: finished work
    (a summary and no checkpoint) is only read (``lock`` None); otherwise the folder is
    probed and locked (:func:`fixedqmc.output_folder.claim`; a second command is refused)
    and its checkpoint, if any, read under the lock.  The caller releases the lock
    (which removes the folders the probe created if the command wrote nothing), or
    abandons it when the input is refused (which also removes what it wrote)."""
    finished = (out / summary).exists() and not (out / checkpoint).exists()
    lock = None if finished else claim(out, what)
    try:
        ck, done = check_folder(out, digest, config, checkpoint, summary)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    if done is not None and lock is not None:  # finished while we waited for the lock
        lock.release()
        lock = None
    return lock, ck, done
