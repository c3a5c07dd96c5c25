"""Output folders: probed before work, locked against a second command, a dead holder's
lock taken over."""

import json
import os
import signal
import subprocess
import sys

import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.output_folder import LOCK_NAME, FolderLock, claim, probe_folder


def test_a_second_lock_is_refused_naming_the_folder_and_holder(tmp_path):
    with FolderLock(tmp_path, "run"):
        info = json.loads((tmp_path / LOCK_NAME).read_text())
        assert info["pid"] == os.getpid() and info["what"] == "run"
        with pytest.raises(FixedQMCError, match=rf"'{tmp_path}' is in use by another "
                                                rf"fixedqmc command \(run pid {os.getpid()}"):
            FolderLock(tmp_path, "sweep").acquire()
    assert not (tmp_path / LOCK_NAME).exists()  # released and removed
    FolderLock(tmp_path).acquire().release()


def test_the_lock_of_a_killed_process_is_taken_over(tmp_path):
    code = ("import sys, time; from fixedqmc.output_folder import FolderLock; "
            f"FolderLock({str(tmp_path)!r}, 'run').acquire(); print('locked', flush=True); "
            "time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(FixedQMCError, match=f"run pid {child.pid}"):
            FolderLock(tmp_path).acquire()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert (tmp_path / LOCK_NAME).exists()  # left behind by the killed process: stale
    lock = FolderLock(tmp_path, "run").acquire()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    lock.release()


def test_a_stale_lock_file_without_a_holder_is_taken_over(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": 999999, "host": "elsewhere"}))
    with FolderLock(tmp_path):
        pass
    assert list(tmp_path.iterdir()) == []


def test_claim_creates_and_release_removes_what_it_created_while_empty(tmp_path):
    out = tmp_path / "a" / "b"
    lock = claim(out, "run")
    assert out.is_dir() and lock.created == [tmp_path / "a", out]
    lock.release()
    assert not (tmp_path / "a").exists()  # nothing was written: nothing left
    with claim(out, "run"):
        (out / "checkpoint.pkl").write_bytes(b"x")
    assert [f.name for f in out.iterdir()] == ["checkpoint.pkl"]  # work is kept
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(FixedQMCError, match="is a file"):
        probe_folder(afile)
    with pytest.raises(FixedQMCError, match="cannot be created"):
        probe_folder(afile / "sub")


def test_an_unwritable_folder_is_named(tmp_path, monkeypatch):
    from pathlib import Path

    def refuse(self, data):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(Path, "write_bytes", refuse)
    with pytest.raises(FixedQMCError, match=f"'{tmp_path}' is not writable: Permission denied"):
        probe_folder(tmp_path)
