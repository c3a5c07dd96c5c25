"""Files of long work, written so that nothing half written is ever read back as good.

Every file a run, an optimisation, a profile or a sweep writes goes through
:func:`atomic_output`: it is written to a temporary file of a unique name in the same
folder (two writers never share one), flushed to disk and renamed over its name, so a
reader sees the old file or the new one, never a part.  A write that fails (disk full,
quota, a folder made read-only) removes its temporary file, keeps the last good file and
raises a :class:`~fixedqmc.errors.FixedQMCError` naming the folder, the bytes it needed
and the bytes free.

*State files* (what a command reads back to resume: checkpoints, the sweep's reference,
points and meta) are also *sealed*: they carry the SHA-256 of their content and the hash
of the input they belong to.

- binary state (pickles): a header line ``fixedqmc-state 1 <sha256> <input hash>`` and
  then the payload, whose SHA-256 the header states;
- JSON state: the object with one more key, ``"_state": {"sha256": ..., "input_hash":
  ...}``, the SHA-256 of the other keys' canonical JSON (sorted keys, no spaces).

:func:`read_state` and :func:`read_json_state` give the content back only when it is
whole and of the expected input; otherwise they raise :class:`DamagedStateError` (a
``FixedQMCError``) naming the file and what to do, or :class:`OtherInputError`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path

from fixedqmc import jsonio
from fixedqmc.errors import FixedQMCError

MAGIC = b"fixedqmc-state 1 "
#: errno values of a write that failed for want of room or permission (not a bug)
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_NO_WRITE = {errno.EACCES, errno.EPERM, errno.EROFS}


class DamagedStateError(FixedQMCError):
    """A state file is truncated, altered or not a fixedqmc state file."""

    def __init__(self, path, reason: str, advice: str):
        self.path = Path(path)
        super().__init__(f"{str(path)!r} is damaged and cannot be used ({reason}); {advice}")


class OtherInputError(FixedQMCError):
    """A whole state file of a different input."""


def readable_bytes(n: float) -> str:
    """Bytes in readable units (decimal: kB, MB, GB, TB, PB), three significant digits."""
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 1000:
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"


def write_error(exc: OSError, folder: Path, need: int | None = None) -> FixedQMCError:
    """The clear error of a failed write into ``folder`` (``need``: bytes it was writing)."""
    if exc.errno in _NO_ROOM:
        try:
            free = readable_bytes(shutil.disk_usage(folder).free)
        except OSError:
            free = "unknown"
        size = f"{readable_bytes(need)} needed, " if need is not None else ""
        return FixedQMCError(
            f"no room to write in {str(folder)!r} ({size}{free} free: {exc.strerror}); the "
            "last complete state is kept: free some space and run the same command again "
            "to resume")
    if exc.errno in _NO_WRITE:
        return FixedQMCError(f"cannot write in {str(folder)!r} ({exc.strerror}); make it "
                             "writable or choose another output folder")
    return FixedQMCError(f"writing in {str(folder)!r} failed ({exc.strerror or exc}); the "
                         "last complete state is kept: run the same command again to resume")


@contextlib.contextmanager
def atomic_output(path, need: int | None = None):
    """Write ``path`` atomically: yields a temporary path in the same folder to write to
    (a unique name with ``path``'s suffix, for writers that choose the format by it);
    on leaving the block it is fsynced and renamed over ``path``.  Any failure removes
    the temporary file and leaves ``path`` as it was; an ``OSError`` becomes the clear
    error of :func:`write_error` (``need``: the bytes being written, if known)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.",
                                   suffix=f".tmp{path.suffix}")
        os.close(fd)
    except OSError as exc:
        raise write_error(exc, path.parent, need) from None
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise write_error(exc, path.parent, need) from None
    except BaseException:
        _unlink(tmp)
        raise


def write_atomic(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (:func:`atomic_output`)."""
    with atomic_output(path, len(data)) as tmp:
        tmp.write_bytes(data)


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except OSError:
        pass


# ------------------------------------------------------------------- sealed pickles --
def seal(obj, input_hash: str) -> bytes:
    """The sealed bytes of a picklable state object (module docstring)."""
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.sha256(payload).hexdigest()
    return MAGIC + f"{digest} {input_hash}\n".encode() + payload


def write_state(path, obj, input_hash: str) -> None:
    """Seal ``obj`` with ``input_hash`` and write it atomically."""
    write_atomic(path, seal(obj, input_hash))


def read_state(path, input_hash: str | None = None, advice: str = "delete it"):
    """The object of a sealed state file; a damaged file raises
    :class:`DamagedStateError` (with ``advice``), a whole one of another input (when
    ``input_hash`` is given) :class:`OtherInputError`.  Returns ``(obj, its input hash)``."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DamagedStateError(path, f"unreadable: {exc.strerror or exc}", advice) from None
    if not data.startswith(MAGIC):
        raise DamagedStateError(path, "no fixedqmc state header: damaged, or written by an "
                                "older fixedqmc", advice)
    head, sep, payload = data[len(MAGIC):].partition(b"\n")
    fields = head.decode("ascii", "replace").split(" ")
    if not sep or len(fields) != 2:
        raise DamagedStateError(path, "truncated header", advice)
    digest, stored_hash = fields
    if hashlib.sha256(payload).hexdigest() != digest:
        raise DamagedStateError(path, f"its content ({len(payload)} bytes) does not match "
                                "its checksum: truncated or altered", advice)
    _check_input(path, stored_hash, input_hash)
    try:
        return pickle.loads(payload), stored_hash
    except Exception as exc:  # checksum right, content unreadable: another version's classes
        raise DamagedStateError(path, f"{type(exc).__name__}: {exc}", advice) from None


def _check_input(path: Path, stored: str, expected: str | None) -> None:
    if expected is not None and stored != expected:
        raise OtherInputError(f"{str(path)!r} belongs to a different input (hash {stored}, "
                              f"this one {expected}); choose another output folder or "
                              "delete that one")


# ----------------------------------------------------------------------- sealed JSON --
def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def seal_json(obj: dict, input_hash: str, **dump_kwargs) -> str:
    """Strict JSON (:mod:`fixedqmc.jsonio`) of ``obj`` with its ``_state`` seal."""
    plain = jsonio.strict(obj)
    plain["_state"] = {"sha256": hashlib.sha256(_canonical(plain)).hexdigest(),
                       "input_hash": input_hash}
    return json.dumps(plain, allow_nan=False, **dump_kwargs)


def read_json_state(path, input_hash: str | None = None, advice: str = "delete it") -> dict:
    """The object of a sealed JSON state file (without ``_state``); errors as for
    :func:`read_state`."""
    path = Path(path)
    try:
        obj = json.loads(path.read_bytes())
    except OSError as exc:
        raise DamagedStateError(path, f"unreadable: {exc.strerror or exc}", advice) from None
    except ValueError as exc:
        raise DamagedStateError(path, f"not JSON: {exc}", advice) from None
    seal_ = obj.pop("_state", None) if isinstance(obj, dict) else None
    if not isinstance(seal_, dict) or set(seal_) != {"sha256", "input_hash"}:
        raise DamagedStateError(path, "no fixedqmc state seal: damaged, or written by an "
                                "older fixedqmc", advice)
    try:
        ok = hashlib.sha256(_canonical(obj)).hexdigest() == seal_["sha256"]
    except ValueError:
        ok = False
    if not ok:
        raise DamagedStateError(path, "its content does not match its checksum: altered",
                                advice)
    _check_input(path, seal_["input_hash"], input_hash)
    return obj
