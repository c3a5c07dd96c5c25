"""State files: sealed content is given back whole or refused; writes are atomic and a full
disk is a clear error that keeps the last good file and leaves no temporary file."""

import errno
import pickle

import numpy as np
import pytest
from hypothesis import given
from strategies import damaged_bytes

from fixedqmc import state_files as sf
from fixedqmc.errors import FixedQMCError

STATE = {"stage": 2, "positions": np.arange(12.0).reshape(2, 2, 3), "rows": [{"e": -1.5}],
         "rng": np.random.default_rng(3)}
ROW = {"kernels": "potential", "width": 24, "paired_diff": -1.25e-3, "paired_error": None,
       "note": "", "fits": True}


def same_state(a, b):
    return pickle.dumps(a) == pickle.dumps(b)


def test_sealed_pickle_round_trip_and_input_hash(tmp_path):
    p = tmp_path / "ck.pkl"
    sf.write_state(p, STATE, "abc123")
    obj, h = sf.read_state(p, "abc123")
    assert h == "abc123" and same_state(obj, STATE)
    with pytest.raises(sf.OtherInputError, match="different input.*abc123.*zzz"):
        sf.read_state(p, "zzz")
    p.write_bytes(pickle.dumps(STATE))  # an unsealed (older) checkpoint
    with pytest.raises(sf.DamagedStateError, match="ck.pkl.*no fixedqmc state header.*delete"):
        sf.read_state(p)


BLOB = sf.seal(STATE, "abc123")
TEXT = sf.seal_json(ROW, "abc123").encode()


@given(damaged=damaged_bytes(BLOB))
def test_a_truncated_or_flipped_sealed_pickle_is_never_read_as_another_state(damaged):
    path = _tmp_file(damaged)
    try:
        obj, _ = sf.read_state(path, "abc123")
    except FixedQMCError as exc:
        assert str(path) in str(exc)
    else:  # only an intact file is read
        assert damaged == BLOB and same_state(obj, STATE)
    finally:
        path.unlink()


@given(damaged=damaged_bytes(TEXT))
def test_a_truncated_or_flipped_sealed_json_is_never_read_as_another_row(damaged):
    path = _tmp_file(damaged)
    try:
        obj = sf.read_json_state(path, "abc123")
    except FixedQMCError as exc:
        assert str(path) in str(exc)
    else:  # the spelling may change (1e-3 / 1E-3); the content never does
        assert obj == ROW
    finally:
        path.unlink()


def _tmp_file(data: bytes):
    import tempfile
    from pathlib import Path
    fd, name = tempfile.mkstemp(suffix=".state")
    with open(fd, "wb") as f:
        f.write(data)
    return Path(name)


def test_sealed_json_is_strict_and_round_trips(tmp_path):
    p = tmp_path / "row.json"
    sf.write_atomic(p, sf.seal_json({**ROW, "x": np.float64(np.nan)}, "h").encode())
    assert "NaN" not in p.read_text()
    assert sf.read_json_state(p, "h") == {**ROW, "x": None}
    p.write_text('{"a": 1}')
    with pytest.raises(sf.DamagedStateError, match="no fixedqmc state seal"):
        sf.read_json_state(p)


def test_atomic_output_keeps_the_old_file_when_the_disk_is_full(tmp_path, monkeypatch):
    p = tmp_path / "checkpoint.pkl"
    sf.write_atomic(p, b"old")

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(sf.Path, "write_bytes", full)
    with pytest.raises(FixedQMCError, match=rf"no room to write in '{tmp_path}' \(5 bytes "
                                            r"needed, .* free.*resume"):
        sf.write_atomic(p, b"newer")
    monkeypatch.undo()
    assert p.read_bytes() == b"old"
    assert [f.name for f in tmp_path.iterdir()] == ["checkpoint.pkl"]  # no temporary left


def test_atomic_output_removes_its_file_on_any_failure_and_keeps_the_suffix(tmp_path):
    p = tmp_path / "fig.png"
    with pytest.raises(RuntimeError):
        with sf.atomic_output(p) as tmp:
            assert tmp.parent == tmp_path and tmp.suffix == ".png" and tmp != p
            tmp.write_bytes(b"half")
            raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []
    with sf.atomic_output(p) as tmp:
        tmp.write_bytes(b"whole")
    assert p.read_bytes() == b"whole" and list(tmp_path.iterdir()) == [p]


def test_two_writers_never_share_a_temporary_file(tmp_path):
    p = tmp_path / "x.json"
    with sf.atomic_output(p) as a, sf.atomic_output(p) as b:
        assert a != b
        a.write_bytes(b"a")
        b.write_bytes(b"b")
    assert p.read_bytes() == b"a" and list(tmp_path.iterdir()) == [p]


def test_write_errors_name_the_folder_and_what_to_do(tmp_path):
    e = sf.write_error(OSError(errno.EROFS, "Read-only file system"), tmp_path)
    assert str(tmp_path) in str(e) and "make it writable" in str(e)
    e = sf.write_error(OSError(errno.EIO, "Input/output error"), tmp_path)
    assert "Input/output error" in str(e) and "resume" in str(e)
    assert sf.readable_bytes(3.2e9) == "3.2 GB" and sf.readable_bytes(12) == "12 bytes"
