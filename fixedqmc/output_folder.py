"""Output folders of long work: probed before any work, and held by one process at a time.

:func:`probe_folder` makes sure a folder can be created and written before a command
starts its work (a clear error otherwise, and nothing left behind).

:class:`FolderLock` keeps a second command from writing into a folder that a running
one uses.  The lock is an advisory ``flock`` on ``<folder>/.fixedqmc.lock``, which the
kernel releases when its process ends in any way (even ``kill -9``), so a lock left by a
dead process is taken over by the next command without any clean-up; the file holds the
holder's process id, host, start time and command line for the refusal message.  On a
network file system the lock works where the file system supports ``flock`` (NFS v4
does, through its byte-range locks).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path

from fixedqmc.errors import FixedQMCError

LOCK_NAME = ".fixedqmc.lock"


def probe_folder(out: Path, what: str = "output folder") -> list[Path]:
    """Make sure ``out`` can be created and written, before any work: returns the
    folders it created (for :func:`remove_created` if the command fails before it
    writes anything)."""
    out = Path(out)
    created = []
    if out.exists() and not out.is_dir():
        raise FixedQMCError(f"{what} {str(out)!r} is a file, not a folder; choose a folder")
    missing = [d for d in (out, *out.parents) if not d.exists()]
    for d in reversed(missing):
        try:
            d.mkdir()
        except OSError as exc:
            remove_created(created)
            raise FixedQMCError(f"{what} {str(out)!r} cannot be created: {str(d)!r}: "
                                f"{exc.strerror or exc}") from None
        created.append(d)
    probe = out / ".write-probe"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        remove_created(created)
        raise FixedQMCError(f"{what} {str(out)!r} is not writable: "
                            f"{exc.strerror or exc}") from None
    return created


def remove_created(folders: list[Path]) -> None:
    """Remove the folders :func:`probe_folder` created, innermost first, where they are
    empty (a folder with anything in it is kept)."""
    for d in reversed(folders):
        try:
            d.rmdir()
        except OSError:
            pass


def claim(out, what: str) -> "FolderLock":
    """Probe ``out`` (:func:`probe_folder`) and lock it for this process; releasing the
    lock also removes the folders the probe created if nothing was written into them (a
    command refused before any work leaves nothing behind)."""
    created = probe_folder(out)
    lock = FolderLock(out, what)
    try:
        lock.acquire()
    except BaseException:
        remove_created(created)
        raise
    lock.created = created
    return lock


class FolderLock:
    """The exclusive use of a folder by this process (module docstring); a context
    manager, also released by :meth:`release`.  ``what`` names the command in the
    refusal message of a second one."""

    def __init__(self, folder, what: str = "fixedqmc"):
        self.folder = Path(folder)
        self.path = self.folder / LOCK_NAME
        self.what = what
        self.created: list[Path] = []
        self._fd: int | None = None
        self._before: set[str] = set()

    def acquire(self) -> "FolderLock":
        """Take the lock, or raise a FixedQMCError naming the folder and its holder."""
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise FixedQMCError(f"cannot lock the folder {str(self.folder)!r} "
                                    f"({exc.strerror or exc})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise FixedQMCError(
                    f"the folder {str(self.folder)!r} is in use by another fixedqmc command "
                    f"({holder}); wait for it to finish, stop it, or choose another output "
                    "folder") from None
            # the holder before us may have removed the file between our open and our
            # lock: then we hold a lock on a file nobody else sees, so start again
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "what": self.what,
                "started": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        self._before = set(os.listdir(self.folder))
        return self

    def release(self) -> None:
        """Remove the lock file, release the lock and remove the folders :func:`claim`
        created that are still empty (idempotent)."""
        if self._fd is None:
            return
        try:
            self.path.unlink()
        except OSError:
            pass
        os.close(self._fd)
        self._fd = None
        remove_created(self.created)

    def abandon(self) -> None:
        """Remove what was written into the folder since the lock was taken (a command
        refused before any work, e.g. after a mean-field cache was written), then
        release the lock (which removes the folders :func:`claim` created)."""
        if self._fd is not None:
            for name in set(os.listdir(self.folder)) - self._before:
                p = self.folder / name
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        self.release()

    def __enter__(self) -> "FolderLock":
        return self if self._fd is not None else self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _holder(fd: int) -> str:
    """The holder's description from the lock file (best effort)."""
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return (f"{info.get('what', 'fixedqmc')} pid {info['pid']} on {info['host']}, "
                f"started {info['started']}: {info.get('command', '')}").rstrip(": ")
    except (ValueError, KeyError, OSError):
        return "a process that is still starting"
