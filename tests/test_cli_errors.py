"""User-caused failures through the command line, as a user meets them (a subprocess):
exit status 2, a message naming the key and what is allowed, no traceback, no output
folder left behind; and progress lines when stderr is not a terminal."""

import subprocess
import sys

import numpy as np
import pytest

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.system import Walkers
from fixedqmc.run import memory, run

SMALL = ["--set", "system.n_atoms=3", "--set", "tables.r_max=30.0"]


def cli(*args, timeout=600):
    """``fixedqmc ARGS`` in a subprocess, stdout and stderr captured through pipes."""
    return subprocess.run([sys.executable, "-m", "fixedqmc.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def refused(r, *words):
    """Exit 2 with a ``fixedqmc: error:`` naming ``words``, no traceback."""
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "fixedqmc: error:" in r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


# ------------------------------------------------------------------ impossible sizes --
@pytest.mark.parametrize("command, sets, keys", [
    ("run", ["method.walkers=1000000000000"], ["method.walkers = 1000000000000"]),
    ("run", ["method.kind='dmc'", "method.target_population=1000000000000"],
     ["method.target_population = 1000000000000", "DMC population of up to 2 x"]),
    ("profile", ["method.blocks=100000000000"], ["method.blocks = 100000000000"]),
    ("sweep", ["method.walkers=10000000000"], ["method.walkers = 10000000000", "processes"]),
    ("run", ["system.n_atoms=1000000000"], ["1000000000 particles per walker", "at least"]),
])
def test_impossible_sizes_are_refused_with_an_estimate(tmp_path, command, sets, keys):
    out = tmp_path / "new" / "out"  # both folders would be created by the call
    r = cli(command, *SMALL, *[a for s in sets for a in ("--set", s)],
            "--set", f"output='{out}'")
    refused(r, *keys, "particles per walker): this needs", "available on this machine",
            "reduce")
    assert not (tmp_path / "new").exists()


def test_memory_estimate_against_the_available_memory(tmp_path, monkeypatch):
    cfg = {"system": {"n_atoms": 3}, "tables": {"r_max": 30.0}, "output": str(tmp_path / "m"),
           "method": {"walkers": 1000, "blocks": 2, "equil_blocks": 0, "steps_per_block": 1}}
    monkeypatch.setattr(memory, "available_bytes", lambda: 600_000)
    with pytest.raises(FixedQMCError, match=r"method.walkers = 1000 \(3 particles per walker\): "
                                            r"this needs about 736 kB of memory \(184 bytes per "
                                            r"walker x 4 driver copies x 1000 walkers\), but "
                                            r"600 kB is available"):
        run(overrides=cfg, progress=False)
    monkeypatch.setattr(memory, "available_bytes", lambda: 500_000)  # below the floor
    with pytest.raises(FixedQMCError, match=r"needs at least 576 kB .*\(144 bytes per walker"):
        run(overrides=cfg, progress=False)
    assert not (tmp_path / "m").exists()
    monkeypatch.setattr(memory, "available_bytes", lambda: None)  # unknown: not checked
    assert run(overrides=cfg, progress=False).summary["stages"]["vmc"]["blocks"] == 2


def test_walker_bytes_are_measured_on_the_system():
    from fixedqmc.run.config import load_config
    from fixedqmc.run.runner import build_system

    system = build_system(load_config(overrides={"system": {"n_atoms": 5}}))
    per_walker, per_position = memory.walker_bytes(system)
    assert per_position == 5 * 3 * 8
    assert per_walker >= 2 * per_position + 3 * 8  # positions, gradient, ln psi, sign, ...
    assert memory.available_bytes() is None or memory.available_bytes() > 0
    assert memory.readable(2.5e12) == "2.5 TB" and memory.readable(512) == "512 bytes"


def test_the_probe_leaves_no_overflow_events():
    from fixedqmc.run.config import load_config
    from fixedqmc.run.runner import build_system

    spec = "potential=fixed:24,potential.sum=fixed:Q1.10"  # the sum overflows
    system = build_system(load_config(overrides={"system": {"n_atoms": 3}, "precision": spec}))
    memory.walker_bytes(system)
    assert system.log.total_events == 0
    system.evaluate(Walkers(system.initial_positions(2, np.random.default_rng(0)), None))
    assert system.log.total_events > 0  # what the probe kept out of the log


# ------------------------------------------------------------------- progress lines --
def test_progress_is_plain_lines_when_stderr_is_not_a_terminal(tmp_path):
    r = cli("run", *SMALL, "--set", "method.walkers=8", "--set", "method.blocks=4",
            "--set", "method.equil_blocks=2", "--set", "method.steps_per_block=2",
            "--set", f"output='{tmp_path / 'run'}'")
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("fixedqmc: run: block")]
    assert [x.split(",")[0] for x in lines] == [
        f"fixedqmc: run: block {k}/6 ({100 * k // 6}%)" for k in range(1, 7)]


def test_sweep_progress_shows_the_reference_phase_and_the_points(tmp_path):
    r = cli("sweep", *SMALL, "--set", "method.walkers=8", "--set", "method.blocks=3",
            "--set", "method.equil_blocks=1", "--set", "method.steps_per_block=2",
            "--set", f"output='{tmp_path}'", "--widths", "40", "--kernels", "potential",
            "--no-float32", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr
    assert "fixedqmc: float64 reference: block 4/4 (100%)" in r.stderr
    assert "fixedqmc: sweep: point 1/1 (100%)" in r.stderr


def test_plain_lines_at_each_tenth_or_after_a_silence(monkeypatch):
    import io

    from fixedqmc import progress

    clock = iter([0.0, 1.0, 2.0, 3.0, 15.0, 16.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = progress.Lines(100, unit="point", desc="sweep", stream=out)
    for n in (5, 6, 1, 1):  # 5%, 11% (a tenth), 12%, 13% (15 s after the last line)
        bar.update(n)
    bar.close()
    assert out.getvalue().splitlines() == ["fixedqmc: sweep: point 11/100 (11%), 0m02s",
                                           "fixedqmc: sweep: point 13/100 (13%), 0m15s"]
