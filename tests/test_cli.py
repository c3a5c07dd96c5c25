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


def he3_sets(out):
    """--set options of a tiny He3 input writing into ``out``: 2 blocks of 8 walkers."""
    return ["--set", "system.n_atoms=3", "--set", "tables.r_max=30.0", "--set",
            "method.blocks=2", "--set", "method.walkers=8", "--set", f"output='{out}'"]


def test_cost_of_helium_at_a_width(tmp_path, capsys):
    """`fixedqmc cost`: a float64 sample, formats sized from its profile, the counted
    operations and stored tables priced; the totals are the model's on the saved rows."""
    import json

    import pandas as pd

    from fixedqmc.cost import totals
    out = tmp_path / "c"
    sets = he3_sets(out)
    assert main(["cost", *sets, "--precision", "fixed:32"]) == 0
    text = capsys.readouterr().out
    assert "potential" in text and "total (fpga-dsp48e2" in text
    rows = pd.read_csv(out / "cost" / "cost.csv")
    summary = json.loads((out / "cost" / "cost.json").read_text())
    assert summary["totals"] == pytest.approx(totals(rows))
    assert summary["totals"]["dsp"] > 0 and summary["totals"]["memory"] > 0
    assert set(rows.loc[rows.op != "array", "result"]) <= set(summary["formats"].values())
    # a streaming data path, one evaluation every 3 cycles: each operator shared over them
    assert main(["cost", *sets, "--precision", "fixed:32", "--cycles", "3"]) == 0
    assert "every 3 cycles" in capsys.readouterr().out
    streamed = pd.read_csv(out / "cost" / "cost.csv")
    ops, s_ops = rows[rows.op != "array"], streamed[streamed.op != "array"]
    assert list(s_ops.operators) == [-(-c // 3) for c in ops["count"]]
    assert streamed.memory.sum() == rows.memory.sum()
    assert main(["cost", *sets, "--precision", "bfloat16", "--model", "gpu-h100",
                 "--stage", "move"]) == 0
    gpu = json.loads((out / "cost" / "cost.json").read_text())
    assert gpu["per"] == "move" and gpu["totals"]["seconds"] > 0


def test_bound_of_helium_at_a_width(tmp_path, capsys):
    """`fixedqmc bound`: float64 samples, formats sized from their profile, the bound of
    every quantity beside its measured error, saved as CSV and JSON; none exceeded."""
    import json

    import pandas as pd
    out = tmp_path / "b"
    sets = he3_sets(out)
    assert main(["bound", *sets, "--precision", "fixed:32"]) == 0
    text = capsys.readouterr().out
    assert "local_energy" in text and "precision fixed:32, 16 float64 samples" in text
    table = pd.read_csv(out / "bound" / "bound.csv", index_col=0)
    summary = json.loads((out / "bound" / "bound.json").read_text())
    assert summary["violations"] == 0 and summary["samples"] == [2, 8]
    assert (table.max_error <= table.max_bound).all()
    assert summary["quantities"]["local_energy"]["max_bound"] == table.max_bound["local_energy"]


@pytest.mark.parametrize("extra, match", [
    (["--model", "asic"], "unknown cost model 'asic'"), (["--stage", "sweep"], "--stage 'sweep'"),
    (["--cycles", "0"], "cycles = 0"),
    (["--model", "gpu-h100", "--cycles", "4"], "does not share operators over cycles")])
def test_cost_refuses_bad_options_before_any_work(tmp_path, capsys, extra, match):
    out = tmp_path / "c"
    assert main(["cost", "--set", f"output='{out}'", *extra]) != 0
    assert match in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("command", ["sweep", "tune"])
def test_options_keep_the_defaults_of_the_function_they_reach(command):
    """Defaults live in one place: an option named like a parameter of sweep() or tune()
    with a default of its own is None unless given, so the function's default applies."""
    import inspect

    from fixedqmc.cli import build_parser
    from fixedqmc.sweep import sweep, tune

    func = {"sweep": sweep, "tune": tune}[command]
    required = ["--tolerance", "1"] if command == "tune" else []
    args = vars(build_parser().parse_args([command, *required]))
    params = {n: p.default for n, p in inspect.signature(func).parameters.items() if n in args}
    assert {"kernels", "widths"} <= set(params)
    repeated = [n for n, default in params.items()
                if default not in (inspect.Parameter.empty, None) and args[n] is not None]
    assert not repeated, f"{command} options repeating the function's defaults: {repeated}"


@pytest.mark.parametrize("what", ["numerics", "floats", "tables", "lutexp", "helium", "h2",
                                  "periodic"])
def test_bench_options_reach_their_function_and_keep_its_defaults(what):
    """Every option of a benchmark names a parameter of its entry function; options left
    unset pass nothing (the function's defaults apply), set ones arrive converted."""
    import inspect

    from fixedqmc.cli import BENCHMARKS, bench_call, build_parser

    parser = build_parser()
    func, kwargs = bench_call(parser.parse_args(["bench", what]))
    params = inspect.signature(func).parameters
    assert set(BENCHMARKS[what][2]) <= set(params)
    assert all(params[k].default == v for k, v in kwargs.items()), kwargs
    args = parser.parse_args(["bench", what, "--min-time", "3", "--precisions", "float32",
                              "--lattice", "2,4", "--electrons", "54", "--atoms", "64"])
    _, kwargs = bench_call(args)
    expect = {"min_time": 3.0, "precisions": ("float32",), "lattices": (2, 4), "sizes": (54,),
              "atoms": (64,)}
    assert {k: v for k, v in expect.items() if k in params} == {
        k: v for k, v in kwargs.items() if k in expect}
