"""``fixedqmc bench h2`` on a tiny case: one H2 molecule, 8 walkers, one sweep (two rounds in
the first test, one in the others); ``fixedqmc bench floats`` on a few thousand elements and
its bit-identity check on hand-made mismatches.

Only the printed table's rows and lines are checked, never a timing.
"""

import numpy as np
import pytest

from fixedqmc.bench import float_systems
from fixedqmc.bench import floats as bench_floats
from fixedqmc.bench import h2 as bench_h2
from fixedqmc.bench import machine as bench_machine
from fixedqmc.bench.floats import describe, explain_mismatches, same_bits
from fixedqmc.cli import main
from fixedqmc.numerics.float_format import parse_float_format, round_to_format
from fixedqmc.numerics.polynomial import evaluate_quadratic


@pytest.fixture(autouse=True)
def _run_time_formats_only(monkeypatch):
    """Formats compiled into the kernels (``specialise``) cost a compilation per set of
    formats, minutes each: the tests time the run-time-format fixed path only."""
    monkeypatch.setattr(bench_h2, "can_specialise", lambda: False)


@pytest.mark.heavy
def test_bench_h2_tiny_case_prints_every_row_and_ratio(capsys, tmp_path):
    code = main(["bench", "h2", "--lattice", "1", "--walkers", "8", "--sweeps", "1",
                 "--min-time", "0.01", "--scf-cache", str(tmp_path), "--breakdown",
                 "--rounds", "2"])
    assert code == 0
    out = capsys.readouterr().out
    assert "CPU: " in out and "vector ISA: " in out and "threads: numba" in out
    lines = out.splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("VMC sweeps")) + 1:]
    header = table[0].split()
    for col in ("H2", "electrons", "round", "code", "precision", "walker_sweeps_per_s",
                "moves_per_s", "evaluate_us_per_walker"):
        assert col in header
    for label in ("fixedqmc float64", "fixedqmc float32",
                  "fixedqmc fixed:40 run-time formats"):
        code_name, prec = label.split(" ", 1)
        for rnd in ("0", "1"):  # a row per round
            assert any(line.split()[:5] == ["1", "2", rnd, code_name, *prec.split()[:1]]
                       and prec in line for line in table), (label, rnd)
    assert "fixed point: run-time formats only" in out
    assert "one lattice size only" in out
    assert "where one sweep goes, fixedqmc float64" in out
    assert "kernel: orbitals" in out and "glue: encode inputs" in out
    if bench_h2.pyqmc_available():
        for prec in ("float64 testvalue/updateinternals", "float64 vmc() drift-diffusion"):
            assert any(line.split()[3:4] == ["pyqmc"] and prec in line for line in table)
        rtable = lines[next(i for i, line in enumerate(lines)
                            if line.startswith("ratios measured in this run")) + 1:]
        assert rtable[0].split() == ["lattice", "ratio", "sweeps", "sweeps_min", "sweeps_max",
                                     "evaluate", "rounds"]
        for ratio in ("float64 / PyQMC", "float32 / PyQMC", "float32 / float64",
                      "fixed:40 run-time formats / PyQMC", "fixed:40 run-time formats / float64"):
            row = next(line for line in rtable if ratio in line).split()
            mid, lo, hi = float(row[-5]), float(row[-4]), float(row[-3])
            assert row[-1] == "2" and lo <= mid <= hi, row  # the median of two rounds
        # PyQMC's driver runs in the first round only
        row = next(line for line in rtable if "PyQMC vmc() / PyQMC Metropolis loop" in line)
        assert row.split()[-1] == "1"
        assert "same wave function" in out
    else:
        assert "PyQMC is not installed" in out
    assert list(tmp_path.glob("scf-rhf-*.npz"))  # the RHF went to the given cache


def test_bench_h2_without_pyqmc_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(bench_h2, "pyqmc_available", lambda: None)
    assert main(["bench", "h2", "--lattice", "1", "--walkers", "4", "--sweeps", "1",
                 "--min-time", "0.01", "--precisions", "float64", "--rounds", "1",
                 "--scf-cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "PyQMC is not installed: skipping the PyQMC peer" in out
    assert "fixedqmc" in out and "pyqmc float64" not in out and "/ PyQMC" not in out


def test_bench_h2_fits_the_exponent_over_two_lattices(capsys, tmp_path):
    assert main(["bench", "h2", "--lattice", "1,2", "--walkers", "4", "--sweeps", "1",
                 "--min-time", "0.01", "--precisions", "float64", "fixed:12", "--no-pyqmc",
                 "--rounds", "1", "--scf-cache", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "fixedqmc float64: cost per sweep grows as N^" in out
    assert "over N = 2..16 electrons" in out
    # 12-bit words cannot hold every profiled range: those kernels run in float64, said so
    assert "fixed:12: " in out and "=float64" in out
    assert "cost per sweep grows as N^" in out.split("fixedqmc float64: cost per sweep")[1]


@pytest.mark.parametrize("args, message", [
    (["--lattice", "0"], "--lattice values must be at least 1"),
    (["--lattice", "2,x"], "--lattice takes comma-separated integers"),
    (["--walkers", "0"], "--walkers must be an integer >= 1"),
    (["--rounds", "0"], "--rounds must be an integer >= 1"),
    (["--precisions", "float8"], "unknown precision"),
])
def test_bench_h2_bad_options_are_clear_errors(args, message, capsys):
    assert main(["bench", "h2", *args]) != 0
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- bench floats --
def test_bench_floats_small_run_prints_table_bits_and_targets(capsys):
    """``fixedqmc bench floats`` on 5000 elements: every row, column and target line."""
    assert main(["bench", "floats", "--n", "5000", "--repeats", "1", "--systems", "none"]) == 0
    out = capsys.readouterr().out
    assert "CPU: " in out and "vector ISA: " in out and "threads: numba" in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["format", "method"])
    assert lines[head].split() == ["format", "method", "timed", "time_ms", "best_ms",
                                   "elements_per_s", "ratio_to_ours", "bit_identical",
                                   "mismatches", "repeats"]
    table = lines[head + 1:lines.index(next(line for line in lines
                                            if line.startswith("edge inputs")))]
    present = {p: bench_floats.peer_status(p) is None
               for p in ("apytypes", "pychop", "gfloat", "ml_dtypes")}
    for spec in ("bfloat16", "float:e6m9"):
        mine = [line for line in table if line.split()[0] == spec]
        assert any(" ours " in line and "call only" in line for line in mine)
        assert any(" ours " in line and "end to end" in line for line in mine)
        for peer, label in (("apytypes", "APyTypes APyFloatArray"), ("pychop", "pychop Chop"),
                            ("gfloat", "gfloat round_ndarray")):
            rows = [line for line in mine if label in line]
            if present[peer]:
                assert rows and all(line.split()[-3:-1] == ["yes", "0"] for line in rows), rows
                assert f"{spec}, {label}: " in out  # the edge inputs were compared too
            else:
                assert not rows and f"{peer} is not installed: skipping it" in out
    for spec in ("float32", "float64"):
        assert sum(line.split()[0] == spec for line in table) == 2
    for what in ("our float32 kernel", "our bfloat16 kernel"):
        assert f"first call of {what}: " in out
    targets = [line for line in lines if line.strip().endswith(("PASS", "FAIL"))]
    assert sum("ours / our float32" in line for line in targets) == 4
    if present["apytypes"]:
        assert sum("(target >= 30x)" in line for line in targets) == 4
    assert sum("(target >= 100x)" in line for line in targets) == 2 * (
        present["pychop"] + present["gfloat"])
    for line in targets:  # a measured ratio, not a fixed text
        assert np.isfinite(float(line.split("x  (target")[0].split()[-1]))


def test_bench_floats_unknown_system_is_a_clear_error(capsys):
    assert main(["bench", "floats", "--systems", "he64,argon"]) == 2
    err = capsys.readouterr().err
    assert "--systems: 'argon' not one of he64, h2x8, heg14 (or 'none')" in err


@pytest.mark.slow  # compiles the electron gas's kernels in the float-format context
def test_bench_floats_whole_evaluations_at_bfloat16(capsys):
    """The whole-evaluation part on a tiny case: a row per precision, the same walkers
    (energies near float64's), and the ratio and target line."""
    df = float_systems.run_systems(["heg14"], walkers=2, repeats=1)
    assert list(df.precision) == ["float64", "float32", "bfloat16"]
    assert (df.time_ms > 0).all() and (df.first_call_s > 0).all()
    e64 = df.energy.iloc[0]
    assert abs(df.energy.iloc[1] - e64) < 1e-4 * abs(e64)  # float32: close
    assert np.isfinite(df.energy.iloc[2]) and df.energy.iloc[2] != e64  # bfloat16
    assert df.ratio_to_float32.iloc[1] == 1.0
    float_systems.print_systems(df)
    out = capsys.readouterr().out
    assert "heg14    bfloat16 / float32 (whole evaluation)" in out
    assert out.rstrip().endswith(("PASS", "FAIL"))


def test_bench_floats_bit_check_finds_and_explains_mismatches():
    """A changed bit is found and left unexplained; a double rounding via float32 and an
    overflow that a peer handles otherwise are found and explained."""
    fmt = parse_float_format("bfloat16")
    big = fmt.max_finite
    # element 0: 1 + 2**-8 + 2**-40, rounded once 1 + 2**-7, through float32 a tie: 1.0;
    # element 1: b + u c overflows (ours: inf); elements 2, 3: ordinary
    x = (np.array([1 + 2.0**-8 + 2.0**-40, 0.0, 0.5, -0.25]), np.array([0.0, big, 0.25, 0.5]),
         np.array([0.0, big, -1.0, 0.75]), np.array([0.0, 0.75, 0.5, 0.125]))
    ours = evaluate_quadratic(*x, "bfloat16").values
    assert ours[0] == 1 + 2.0**-7 and np.isinf(ours[1])
    assert same_bits(ours, ours.copy()).all() and explain_mismatches(x, ours, ours, fmt) == {}
    nan = np.array([np.nan, -np.nan])
    assert same_bits(nan, nan[::-1]).all()  # NaNs compare equal whatever their payload
    theirs = ours.copy()
    theirs[0] = round_to_format(np.float32(x[0][:1]).astype(np.float64), fmt)[0]  # via float32
    theirs[1] = 0.0  # an overflow turned into zero
    theirs[3] = np.nextafter(np.float32(ours[3]), np.float32(1)).astype(np.float64)  # a bit
    assert (~same_bits(ours, theirs)).sum() == 3
    why = explain_mismatches(x, ours, theirs, fmt)
    assert why == {"double rounding via float32 (float32 cast or operation, then a cast)": 1,
                   "overflow handling (ours inf, theirs 0)": 1, "unexplained": 1}, why
    assert "1 unexplained" in describe(why)


def test_bench_floats_unexplained_peer_mismatch_fails_the_run(monkeypatch, capsys):
    """A peer whose results differ without a reason makes the bench exit 1."""
    pytest.importorskip("apytypes")
    original = bench_floats.apytypes_chain

    def wrong(E, M, x):
        e2e, chain = original(E, M, x)

        def bad():
            y = e2e().copy()
            y[0] = -y[0] if y[0] else 1.0
            return y
        return bad, chain

    monkeypatch.setattr(bench_floats, "apytypes_chain", wrong)
    monkeypatch.setattr(bench_machine, "print_machine", lambda: None)  # checked above
    run = bench_floats.run_benchmark
    monkeypatch.setattr(bench_floats, "run_benchmark", lambda n, repeats: run(
        n=n, repeats=repeats, edge_n=200, peers=("apytypes",)))
    assert main(["bench", "floats", "--n", "2000", "--repeats", "1", "--systems", "none"]) == 1
    out = capsys.readouterr().out
    for spec in ("bfloat16", "float:e6m9"):
        assert (f"{spec}, APyTypes APyFloatArray (end to end) differs from ours: "
                "1 unexplained") in out
        row = next(line for line in out.splitlines() if line.startswith(f"{spec:>10}")
                   and "APyFloatArray end to end" in line)
        assert row.split()[-3:] == ["no", "1", "1"]
    assert "some mismatches with a peer are unexplained (exit code 1)" in out
