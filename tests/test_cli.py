"""The command line: subcommands run, help works, bad input gives a clear error."""

import subprocess
import sys

import pytest

from fixedqmc.cli import main


def run(*args):
    return subprocess.run([sys.executable, "-m", "fixedqmc.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_info_prints_versions_and_threads(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "numba threading layer" in out and "numba threads" in out and "fxpmath" in out


@pytest.mark.parametrize("args", [["--help"], ["info", "--help"], ["bench", "--help"]])
def test_help_everywhere(args):
    r = run(*args)
    assert r.returncode == 0 and "usage: fixedqmc" in r.stdout


def test_bench_numerics_small_run_prints_ratios_and_checks_bits(capsys):
    assert main(["bench", "numerics", "--n", "20000", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "bit-identical to APyTypes: True" in out
    for peer in ("APyTypes", "fxpmath", "float64"):
        assert f"fixed vs {peer}" in out


def test_unknown_subcommand_is_a_usage_error():
    r = run("frobnicate")
    assert r.returncode == 2 and "invalid choice" in r.stderr
