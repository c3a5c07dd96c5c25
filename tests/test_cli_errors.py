"""User-caused failures through the command line, as a user meets them (a subprocess):
exit status 2, a message naming the key and what is allowed, no traceback, no output
folder left behind; and progress lines when stderr is not a terminal."""

import json
import math
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

from fixedqmc.cli import main
from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.system import Walkers
from fixedqmc.run import memory, run
from fixedqmc.state_files import readable_bytes

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


@pytest.mark.parametrize("command", [
    ["run", *SMALL], ["profile", *SMALL], ["sweep", *SMALL, "--widths", "20"],
    ["tables", "generate", "--function", "lj", "--coef-format", "Q4.30"]])
def test_a_read_only_output_folder_is_named_before_any_work(tmp_path, monkeypatch, capsys,
                                                            command):
    """The folder can be created but not written (as a read-only mount refuses): a clear
    error naming it, for every command that writes one."""
    from pathlib import Path
    write_bytes = Path.write_bytes

    def read_only(self, data):
        if self.name == ".write-probe":
            raise OSError(30, "Read-only file system")
        return write_bytes(self, data)
    monkeypatch.setattr(Path, "write_bytes", read_only)
    out = tmp_path / "ro"
    where = ["--out", str(out)] if command[0] == "tables" else ["--set", f"output='{out}'"]
    assert main([*command, *where]) == 2
    err = capsys.readouterr().err
    assert "is not writable: Read-only file system" in err and str(out) in err
    assert "Traceback" not in err and not out.exists()


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
    from fixedqmc.run.plan import build_system

    system = build_system(load_config(overrides={"system": {"n_atoms": 5}}))
    per_walker, per_position = memory.walker_bytes(system)
    assert per_position == 5 * 3 * 8
    assert per_walker >= 2 * per_position + 3 * 8  # positions, gradient, ln psi, sign, ...
    assert memory.available_bytes() is None or memory.available_bytes() > 0
    assert readable_bytes(2.5e12) == "2.5 TB" and readable_bytes(512) == "512 bytes"


def test_the_probe_leaves_no_overflow_events():
    from fixedqmc.run.config import load_config
    from fixedqmc.run.plan import build_system

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


# -------------------------------------------------------- random malformed inputs --
BASE = {"system": {"n_atoms": 3}, "tables": {"r_max": 30.0},
        "method": {"walkers": 4, "blocks": 2, "equil_blocks": 0, "steps_per_block": 1}}
ODD = "ßλ中é\u200b😀"  # no key, kind or precision spec contains one of these
INT_KEYS = ["method.walkers", "method.blocks", "method.steps_per_block", "method.equil_blocks",
            "method.max_age", "method.recompute_every", "method.target_population",
            "method.vmc_blocks", "system.n_atoms", "seed"]
FLOAT_KEYS = ["method.step_size", "method.target_acceptance", "method.energy_cutoff",
              "tables.r_max"]
STR_KEYS = ["precision", "units", "output", "system.kind", "method.kind", "method.move",
            "system.potential"]


def _text(rng, alphabet="abcxyz_-:=."):
    """Random text with at least one character no valid name or spec has."""
    return "".join(rng.choice(alphabet + ODD) for _ in range(rng.randint(0, 8))) + rng.choice(ODD)


def _wrong_type(rng):
    key = rng.choice(INT_KEYS + FLOAT_KEYS + STR_KEYS + ["specialise", "method.taus", "plugins"])
    if key in INT_KEYS:
        bad = [rng.randint(-9, 9) + 0.5, _text(rng), rng.random() < 0.5, [1, 2], {"a": 1}]
    elif key in FLOAT_KEYS:
        bad = [_text(rng), rng.random() < 0.5, [0.5], {"x": 1.0}]
    elif key in STR_KEYS:
        bad = [rng.randint(-5, 5), rng.random(), rng.random() < 0.5, [_text(rng)],
               {"a": _text(rng)}]
    else:
        bad = {"specialise": [1, _text(rng), [True]],
               "method.taus": [_text(rng), {"a": 1.0}, [_text(rng)], [True], []],
               "plugins": [5, [3], "", [""], {"a": "b"}]}[key]
    return key, rng.choice(bad), key


def _out_of_range(rng):
    k, x, nan, inf = rng.randint(1, 10**6), rng.uniform(1e-3, 1e6), float("nan"), float("inf")
    key, bad = rng.choice([
        ("method.walkers", rng.choice([0, -k, 10 ** rng.randint(13, 18)])),
        ("method.blocks", rng.choice([0, 1, -k])), ("method.steps_per_block", -k),
        ("method.step_size", rng.choice([0.0, -x, nan, inf])),
        ("method.target_acceptance", rng.choice([0.0, 1.0, 1 + x, -x, nan])),
        ("method.energy_cutoff", rng.choice([-x, nan, inf])),
        ("method.taus", rng.choice([[0.0], [-x], [nan], [0.01, inf]])),
        ("system.n_atoms", rng.choice([0, 1, -k, 10**9])), ("seed", -k),
        ("method.max_age", 0), ("method.recompute_every", 0), ("method.equil_blocks", -k),
        ("tables.r_max", rng.choice([-x, 0.0, nan, inf]))])
    huge = isinstance(bad, int) and bad >= 10**9  # refused by the memory estimate
    return key, bad, "this needs" if huge else key


def _unknown_key(rng):
    key = rng.choice(["", "system.", "method.", "tables.", "methd."]) + _text(rng, "abcxyz_-")
    return key, 1, repr(key.split(".")[0] if key.startswith("methd.") else key)


def _unknown_kind(rng):
    key = rng.choice(["system.kind", "method.kind", "method.move"])
    return key, _text(rng), key


def _bad_precision(rng):
    k = rng.randint(1, 99)
    return "precision", rng.choice([
        "fixed:0", f"fixed:{64 + k}", f"fixed:-{k}", "float128", "", "fixed:Q1.x",
        "potential=fixed:32:banana", f"nokernel{k}=fixed:32", "kinetic.nope=fixed:32",
        "fixed:32:nearest:bogus", "potential=", "=fixed:32", f"fixed:Q{64 + k}.10",
        _text(rng)]), "precision"


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else "inf" if v > 0 else "-inf"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(map(_toml_value, v)) + "]"
    return "{" + ", ".join(f"{_toml_value(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


def _toml(config: dict) -> str:
    lines = [f"{_toml_value(k)} = {_toml_value(v)}" for k, v in config.items()
             if not isinstance(v, dict)]
    for name, keys in config.items():
        if isinstance(keys, dict):
            lines += [f"[{_toml_value(name)}]"] + [f"{_toml_value(k)} = {_toml_value(v)}"
                                                   for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def malformed(seed: int, output: str) -> tuple[str, bytes, str]:
    """Case ``seed``: (what is broken, the input file's bytes, a text the error must
    contain); one of wrong types, out-of-range / NaN / huge values, unknown keys (unicode,
    empty), unknown kinds, bad precision specs and files that are not TOML."""
    rng = random.Random(seed)
    kinds = [_wrong_type, _out_of_range, _unknown_key, _unknown_kind, _bad_precision, None]
    make = kinds[seed % len(kinds)]
    if make is None:
        return "not TOML", rng.choice([b"[method\nwalkers = 3\n", b"walkers = \n",
                                       b"\xff\xfe\x00bad", b"[system]\n[system]\n"]), "in.toml"
    key, bad, named = make(rng)
    config = json.loads(json.dumps(BASE))
    config["output"] = output
    *sections, name = key.split(".")
    node = config
    for s in sections:
        node = node.setdefault(s, {})
    node[name] = bad
    return f"{key} = {bad!r}", _toml(config).encode(), named or key


def test_random_malformed_inputs_end_in_a_named_error_before_any_output(tmp_path, capsys):
    """20 seeded malformed inputs through ``fixedqmc run FILE``: exit 2, the key (or file)
    named, no traceback, and no output folder (nor its missing parent) created.  The
    command's ``main`` runs in this process; the first four cases also as ``fixedqmc`` in
    a subprocess (a process start costs seconds)."""
    cases = []
    for seed in range(20):
        folder = tmp_path / f"case{seed}"
        folder.mkdir()
        what, data, named = malformed(seed, str(folder / "new" / "out"))
        (folder / "in.toml").write_bytes(data)
        cases.append((what, folder, named))
    results = []
    for _, folder, _ in cases:
        code = main(["run", str(folder / "in.toml")])
        results.append(SimpleNamespace(returncode=code, stderr=capsys.readouterr().err))
    with ThreadPoolExecutor(max_workers=4) as pool:
        results += list(pool.map(lambda case: cli("run", case[1] / "in.toml"), cases[:4]))
    for (what, folder, named), r in zip(cases + cases[:4], results):
        assert r.returncode == 2, (what, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.startswith("fixedqmc: error:"), what
        assert named in r.stderr, (what, named, r.stderr)
        assert not (folder / "new").exists(), what
