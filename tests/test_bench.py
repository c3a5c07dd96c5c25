"""``fixedqmc bench h2`` on a tiny case: one H2 molecule, 8 walkers, one sweep (two rounds in
the first test, one in the others).

Only the printed table's rows and lines are checked, never a timing.
"""

import pytest

from fixedqmc.bench import h2 as bench_h2
from fixedqmc.cli import main


@pytest.fixture(autouse=True)
def _run_time_formats_only(monkeypatch):
    """Formats compiled into the kernels (``specialise``) cost a compilation per set of
    formats, minutes each: the tests time the run-time-format fixed path only."""
    monkeypatch.setattr(bench_h2, "can_specialise", lambda: False)


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
    (["--precisions", "float16"], "unknown precision"),
])
def test_bench_h2_bad_options_are_clear_errors(args, message, capsys):
    assert main(["bench", "h2", *args]) != 0
    assert message in capsys.readouterr().err
