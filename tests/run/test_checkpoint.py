"""Faults of long runs: a damaged checkpoint, a second run into the same folder, a full
disk. Each ends in a clear error and loses nothing; the run then resumes to the same bits."""

import os
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import damaged_bytes

from fixedqmc.cli import main
from fixedqmc.errors import FixedQMCError
from fixedqmc.output_folder import LOCK_NAME, FolderLock
from fixedqmc.run import run
from fixedqmc.run.optimize import optimize

SMALL = {"system": {"n_atoms": 3}, "tables": {"r_max": 30.0}, "precision": "float64",
         "method": {"walkers": 16, "blocks": 4, "equil_blocks": 2, "steps_per_block": 5}}


def small(tmp_path, name):
    return {**SMALL, "output": str(tmp_path / name)}


def test_a_checkpoint_altered_inside_is_refused_not_resumed(tmp_path, capsys):
    cfg = small(tmp_path, "d")
    run(overrides=cfg, progress=False, stop_after_blocks=2)
    ck = tmp_path / "d" / "checkpoint.pkl"
    data = bytearray(ck.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)  # 64 bytes overwritten inside
    ck.write_bytes(bytes(data))
    with pytest.raises(FixedQMCError, match="checkpoint.pkl.*damaged.*does not match its "
                                            "checksum.*delete it to start again"):
        run(overrides=cfg, progress=False)
    assert main(["run", "--set", f"output='{cfg['output']}'", "--set", "system.n_atoms=3",
                 "--set", "tables.r_max=30.0"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert ck.read_bytes() == bytes(data)  # left for the user to inspect


def test_a_second_run_into_a_folder_in_use_is_refused_at_once(tmp_path):
    cfg = small(tmp_path, "busy")
    run(overrides=cfg, progress=False, stop_after_blocks=1)
    before = (tmp_path / "busy" / "checkpoint.pkl").read_bytes()
    with FolderLock(tmp_path / "busy", "run"):  # as a running command holds it
        for call in (lambda: run(overrides=cfg, progress=False),
                     lambda: optimize(overrides={"system": {"kind": "heg"}, "output":
                                                 cfg["output"]}, progress=False)):
            with pytest.raises(FixedQMCError, match=f"'{tmp_path / 'busy'}' is in use by "
                                                    f"another fixedqmc command \\(run pid "
                                                    f"{os.getpid()}"):
                call()
    assert (tmp_path / "busy" / "checkpoint.pkl").read_bytes() == before
    res = run(overrides=cfg, progress=False)  # released: the run resumes and finishes
    assert len(res.trace) == 6 and not (tmp_path / "busy" / LOCK_NAME).exists()


def test_a_full_disk_is_a_clear_error_and_the_run_resumes_to_the_same_bits(tmp_path):
    whole = run(overrides=small(tmp_path, "whole"), progress=False)
    cfg = small(tmp_path, "full")
    run(overrides=cfg, progress=False, stop_after_blocks=2)
    out = tmp_path / "full"
    ck = (out / "checkpoint.pkl").read_bytes()
    # the kernel refuses any file beyond the checkpoint's present size (EFBIG, as a full
    # disk refuses with ENOSPC): the next checkpoint, one block longer, cannot be written
    code = ("import resource, sys; "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({len(ck)}, {len(ck)})); "
            "from fixedqmc.cli import main; "
            f"sys.exit(main(['run', '--set', \"output='{out}'\", '--set', 'system.n_atoms=3', "
            "'--set', 'tables.r_max=30.0', '--set', 'method.walkers=16', '--set', "
            "'method.blocks=4', '--set', 'method.equil_blocks=2', '--set', "
            "'method.steps_per_block=5']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert f"no room to write in '{out}'" in proc.stderr and "needed" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(f.name for f in out.iterdir()) == ["checkpoint.pkl"]  # no temporary left
    assert (out / "checkpoint.pkl").read_bytes() == ck  # the last good state, kept
    parts = run(overrides=cfg, progress=False)
    pd.testing.assert_frame_equal(parts.trace, whole.trace, check_exact=True)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """A whole run's trace, and the checkpoint of the same run after two blocks."""
    tmp = tmp_path_factory.mktemp("interrupted")
    whole = run(overrides=small(tmp, "whole"), progress=False)
    run(overrides=small(tmp, "part"), progress=False, stop_after_blocks=2)
    return whole.trace, (tmp / "part" / "checkpoint.pkl").read_bytes()


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_truncated_or_flipped_checkpoint_resumes_to_the_same_bits_or_is_named(
        interrupted, tmp_path, data):
    trace, blob = interrupted
    damaged = data.draw(damaged_bytes(blob, max_flips=1))
    out = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    out.mkdir()
    (out / "checkpoint.pkl").write_bytes(damaged)
    try:
        res = run(overrides={**SMALL, "output": str(out)}, progress=False)
    except FixedQMCError as exc:
        assert "checkpoint.pkl" in str(exc) and "delete it" in str(exc)
    else:
        pd.testing.assert_frame_equal(res.trace, trace, check_exact=True)
