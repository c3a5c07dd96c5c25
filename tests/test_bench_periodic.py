"""``fixedqmc bench periodic`` on a tiny case: 8 and 16 electrons, 2 configurations.

The printed rows, ratios and growth lines are checked, that our Ewald energies agree with
PyQMC's on the same configurations and that the Jastrow rows are there; never a timing.
"""

import numpy as np
import pytest

from fixedqmc.bench import periodic as bench
from fixedqmc.cli import main

#: only the tests that compare with PyQMC need it (the `bench` extra)
needs_pyqmc = pytest.mark.skipif(bench.pyqmc_available() is not None,
                                 reason="PyQMC (the bench extra) is not installed")


@needs_pyqmc
def test_bench_periodic_tiny_case_prints_rows_ratios_and_growth(capsys):
    code = main(["bench", "periodic", "--electrons", "8,16", "--walkers", "2",
                 "--precisions", "float64", "float32", "fixed:40", "--min-time", "0.01"])
    assert code == 0
    out = capsys.readouterr().out
    assert "CPU: " in out and "vector ISA: " in out
    for n in (8, 16):
        for label in ("fixedqmc float64", "fixedqmc float32", "fixedqmc fixed:40",
                      "PyQMC float64"):
            assert any(line.split()[:3] == [str(n), *label.split()] for line in
                       out.splitlines()), (n, label)
    assert "grows as N^" in out and "target: our float64 Ewald >= 10x PyQMC's" in out
    assert "target: float32 >= 1.4x our float64" in out


@needs_pyqmc
def test_ours_and_pyqmc_agree_on_the_same_configurations():
    df = bench.run_periodic(sizes=(8,), precisions=("float64", "fixed:40"), configs=3,
                            min_time=0.0, log=lambda *a: None)
    ewald = df[df.part == "ewald"]
    dE = dict(zip(ewald.code + " " + ewald.precision, ewald.max_abs_dE))
    assert dE["PyQMC float64 (NumPy)"] < 1e-5  # PyQMC's own truncation, ~1e-7 Ha
    assert 0 < dE["fixedqmc fixed:40"] < 1e-4
    jastrow = df[df.part == "jastrow"].set_index("precision")
    assert set(jastrow.index) == {"float64", "fixed:40"}
    assert 0 < jastrow.loc["fixed:40", "max_abs_dE"] < 1e-4  # J and its Laplacians
    moves = df[df.part == "jastrow move"].set_index("precision")
    assert moves.loc["float64", "max_abs_dE"] < 1e-12  # against the float64 reference
    assert 0 < moves.loc["fixed:40", "max_abs_dE"] < 1e-4
    assert np.all(df.configs_per_s > 0)


def test_bench_periodic_without_pyqmc_says_so(capsys):
    assert main(["bench", "periodic", "--electrons", "8", "--walkers", "2", "--precisions",
                 "float64", "--min-time", "0.01", "--no-pyqmc"]) == 0
    out = capsys.readouterr().out
    assert "PyQMC's Ewald not timed: skipped (--no-pyqmc)" in out
    assert "PyQMC float64" not in out


@pytest.mark.parametrize("args, message", [
    (["--electrons", "0"], "--electrons values must be at least 1"),
    (["--walkers", "0"], "--walkers must be an integer >= 1"),
    (["--precisions", "float8"], "unknown precision"),
])
def test_bench_periodic_bad_options_are_clear_errors(args, message, capsys):
    assert main(["bench", "periodic", *args]) != 0
    assert message in capsys.readouterr().err
