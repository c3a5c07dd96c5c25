"""``fixedqmc tables generate|check|eval``, ``fixedqmc lutexp`` and the table benchmarks,
run through fixedqmc.cli.main: round trips, bit-identical files, exit codes, clear errors."""

import json
import re

import numpy as np
import pytest

import fixedqmc.bench.tables as bench_tables
from fixedqmc.cli import main
from fixedqmc.errors import FixedQMCError
from fixedqmc.tables.builtin import builtin_names, get_builtin, resolve_function
from fixedqmc.tables.coeff_files import read_table, write_table
from fixedqmc.tables.evaluate import evaluate_table

# One xdist worker runs this module's tests (make test: --dist loadgroup):
# the table kernels at fixed formats compile once for both modules.
pytestmark = pytest.mark.xdist_group("table_kernels")

SMALL = ["--n1", "32", "--n-seg", "6", "--n-bin", "8"]


@pytest.fixture(scope="module")
def sapt2_folder(tmp_path_factory):
    """A generated SAPT2 table in the HAQMC layout with Q1.30 coefficients."""
    folder = tmp_path_factory.mktemp("tables") / "sapt2"
    assert main(["tables", "generate", "--function", "sapt2", "--coef-format", "Q1.30",
                 "--out", str(folder)]) == 0
    return folder


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def error_of(capsys, *args):
    code, out, err = run(capsys, *args)
    assert code == 2, out + err
    assert err.startswith("fixedqmc: error: ")
    return err


# --------------------------------------------------------------------- round trip ---
def test_generated_files_read_back_bit_identical(sapt2_folder):
    table = read_table(sapt2_folder)
    assert table == get_builtin("sapt2").build(coef_format="Q1.30")
    assert (table.n1, table.n2, table.transform) == (256, 1344, ("none", "exp"))
    hex_words = [int(x, 16) for x in (sapt2_folder / "faII.hex").read_text().split()]
    assert hex_words == table.quantized["a2"].bits().tolist()
    record = json.loads((sapt2_folder / "table.json").read_text())["quantization"]
    assert record["coef_format"] == "Q1.30" and record["lossy"] is False


def test_generate_prints_layout_and_error_report(tmp_path, capsys):
    code, out, _ = run(capsys, "tables", "generate", "--function", "lj", *SMALL,
                       "--out", str(tmp_path / "lj"))
    assert code == 0
    assert "sigma = 1 A^2 (r = 1 A)" in out and "read back bit-identical: True" in out
    assert "max_abs_err" in out and "bound_f" in out and "within_bound" in out
    assert "coefficients float64" in out


def test_check_passes_and_fails_on_tolerance(sapt2_folder, capsys):
    code, out, _ = run(capsys, "tables", "check", str(sapt2_folder), "--function", "sapt2")
    assert code == 0 and "check passed" in out and "max_abs_err" in out
    code, out, _ = run(capsys, "tables", "check", str(sapt2_folder), "--function", "sapt2",
                       "--tolerance", "1e-6")
    assert code == 1 and "check FAILED" in out
    code, out, _ = run(capsys, "tables", "check", str(sapt2_folder))  # structural
    assert code == 0 and "max_jump" in out


def test_check_without_function_uses_the_stored_bounds(tmp_path, capsys):
    """A float64 table whose fa.dat line 10 was changed to 0.5 fails the structural check,
    naming the file, the lines and the jump against the bound table.json stores; the
    untouched table passes; a table written without its function says that only
    readability was checked."""
    folder = tmp_path / "lj"
    assert main(["tables", "generate", "--function", "lj", *SMALL, "--out", str(folder)]) == 0
    capsys.readouterr()
    meta = json.loads((folder / "table.json").read_text())
    assert [len(meta["bound_g"][r]) for r in ("I", "II")] == [32, 48]
    code, out, _ = run(capsys, "tables", "check", str(folder))
    assert code == 0 and "adjacent bins meet within the error bounds" in out, out
    lines = (folder / "fa.dat").read_text().splitlines()
    lines[9] = "0.5"
    (folder / "fa.dat").write_text("\n".join(lines) + "\n")
    code, out, _ = run(capsys, "tables", "check", str(folder))
    assert code == 1 and "check FAILED" in out
    assert re.search(r"region I: 2 junction\(s\) beyond the stored error bound; worst: bins "
                     r"\d+ and \d+ \(lines (9 and 10|10 and 11) of fa.dat, fb.dat, fc.dat\) "
                     r"do not meet: jump [\d.e+-]+ > bound [\d.e+-]+ \(rescaled units g\); "
                     r"line\(s\) 10 meet neither neighbour", out), out

    plain = write_table(read_table(folder), tmp_path / "plain")  # no function: no bounds
    code, out, _ = run(capsys, "tables", "check", str(plain))
    assert code == 0 and "only readability and layout were checked" in out
    meta["bound_g"]["I"] = meta["bound_g"]["I"][:5]
    (folder / "table.json").write_text(json.dumps(meta))
    assert "table.json: bound_g.I must be a list of 32 bounds" in error_of(
        capsys, "tables", "check", str(folder))


def test_generate_refuses_a_format_that_loses_the_fit(tmp_path, capsys):
    """The reported command: Q1.2 rounds every b and c of SAPT2 to 0 (437 % relative error).
    Refused, naming the option, the format, the measured errors and the fractional bits that
    keep the fit; nothing is written."""
    out = tmp_path / "q12"
    err = error_of(capsys, "tables", "generate", "--function", "sapt2", "--coef-format", "Q1.2",
                   "--out", str(out))
    assert err.startswith("fixedqmc: error: --coef-format: coef_format Q1.2 loses the fit of "
                          "'sapt2': the largest measured |error| is ")
    assert re.search(r"is ([\d.]+) in region I \(unquantized fit [\d.e-]+; allowed ([\d.]+)\) "
                     r"and ([\d.]+) in region II", err), err
    assert "exceeds both 10 x the unquantized fit's and 1% of the region's range of f" in err
    need = re.search(r"--coef-format Q1\.(\d+) keeps it \(.*\): use at least (\d+) fractional "
                     r"bits .*, or --allow-lossy to write the table anyway", err)
    assert need and need[1] == need[2] and int(need[1]) > 2, err
    assert not out.exists()


def test_allow_lossy_writes_with_a_warning_and_check_fails_it(tmp_path, capsys):
    folder = tmp_path / "q12"
    code, out, err = run(capsys, "tables", "generate", "--function", "sapt2", "--coef-format",
                         "Q1.2", "--allow-lossy", "--out", str(folder))
    assert code == 0 and "coefficients Q1.2 -- LOSSY, written because of --allow-lossy" in out
    assert err.startswith("fixedqmc: WARNING: --allow-lossy: coef_format Q1.2 loses the fit of "
                          "'sapt2' (built anyway, as allowed): the largest measured |error| is")
    assert "`fixedqmc tables check` fails this table" in err
    assert re.search(r"\nII +exp +Q1\.2 .* inf +[\d.]+ +False\n", out), out  # never "within"
    table = read_table(folder)
    assert not any(getattr(table, k).any() for k in ("b1", "c1", "b2", "c2"))
    meta = json.loads((folder / "table.json").read_text())
    assert meta["quantization"]["lossy"] and meta["quantization"]["regions"]["II"]["lossy"]

    code, out, _ = run(capsys, "tables", "check", str(folder))  # structural
    assert code == 1 and "check FAILED" in out, out
    assert re.search(r"region I: coefficients Q1\.2 lose the fit: largest \|error\| [\d.]+ > "
                     r"allowed [\d.]+ \(f units; 10 x the unquantized fit's", out), out
    code, out, _ = run(capsys, "tables", "check", str(folder), "--function", "sapt2")
    assert code == 1 and "check FAILED" in out
    assert re.search(r"region II: coefficients Q1\.2 lose the fit: .*; the a-priori error bound "
                     r"is infinite", out), out

    del meta["quantization"]  # as a table written before the record existed
    (folder / "table.json").write_text(json.dumps(meta))
    code, out, _ = run(capsys, "tables", "check", str(folder))
    assert code == 1 and "check FAILED" in out
    assert "region II: every b and c coefficient is 0: the table is piecewise constant" in out


def test_eval_matches_the_api(sapt2_folder, capsys):
    s = [2.0, 4.0, 7.5, 9.0, 30.0, 250.0]
    code, out, _ = run(capsys, "tables", "eval", str(sapt2_folder), "--s", *map(str, s))
    assert code == 0
    printed = [float(line.split()[2]) for line in out.splitlines()[2:]]
    expected = evaluate_table(read_table(sapt2_folder), s).values
    assert np.allclose(printed, expected, rtol=1e-9, atol=0)
    code, out, _ = run(capsys, "tables", "eval", str(sapt2_folder), "--r", "2.9", "5",
                       "--precision", "fixed:48")
    assert code == 0 and "g_word" in out and "overflow events: none" in out


def test_user_function_by_module_name(tmp_path, capsys):
    code, out, _ = run(capsys, "tables", "generate", "--function",
                       "fixedqmc.tables.builtin:lennard_jones", "--r-min", "0.9", "--r-max", "3",
                       "--sigma", "1.0", *SMALL, "--out", str(tmp_path / "user"))
    assert code == 0
    table = read_table(tmp_path / "user")
    assert table.name == "fixedqmc.tables.builtin:lennard_jones" and table.sigma == 1.0
    assert table.transform == ("none", "none")


def test_lutexp_report_and_tolerance(capsys):
    code, out, _ = run(capsys, "lutexp", "--n", "2000")
    assert code == 0 and "max_rel_error" in out and "within_bound    True" in out
    code, out, _ = run(capsys, "lutexp", "--n", "2000", "--tolerance", "1e-20")
    assert code == 1 and "EXCEEDED" in out
    code, out, _ = run(capsys, "lutexp", "--n", "500", "--chunk-bits", "10,10",
                       "--table-format", "UQ1.39", "--precision", "fixed", "--x-min", "-5")
    assert code == 0 and "table=UQ1.39" in out


# ---------------------------------------------------------------------- bad input ---
@pytest.mark.parametrize("args, message", [
    (["--function", "nosuch"], "--function: unknown table function 'nosuch'; allowed: "
                               "hfd-b, kinetic, lm2m2, psi, sapt2, lj"),
    (["--function", "no_such_module_xyz:f", "--r-min", "1", "--r-max", "2"],
     "module 'no_such_module_xyz' not found"),
    (["--function", "fixedqmc.tables.builtin:nothing"], "has no attribute 'nothing'"),
    (["--function", "fixedqmc.tables.builtin:lennard_jones"], "--r-min and --r-max needed"),
    (["--function", "lj", "--n1", "100"], "--n1: n1 must be a power of two"),
    (["--function", "lj", "--n-seg", "65"], "--n-seg: n_seg must be an integer in 1..64"),
    (["--function", "lj", "--coef-format", "Q9"], "--coef-format: malformed format 'Q9'"),
    (["--function", "lj", "--coef-format", "Q0.8"], "--coef-format: coef_format Q0.8 cannot"),
    (["--function", "lj", "--sigma", "banana"], "--sigma must be one of zero, max, sign_change"),
    (["--function", "lj", "--sigma", "7"], "--sigma must lie strictly inside"),
    (["--function", "psi", "--sigma", "zero"], "--sigma: sigma='zero': f has no root"),
    (["--function", "lj", "--r-min", "3", "--r-max", "2"], "--r-min must be < --r-max"),
    (["--function", "lj", "--r-min", "1", "--s-max", "4"], "not both"),
    (["--function", "lj", "--r-min", "nan"], "--r-min must be a finite number"),
    (["--function", "lj", "--transform", "log"], "--transform must be one of none, exp"),
])
def test_generate_bad_input(tmp_path, capsys, args, message):
    err = error_of(capsys, "tables", "generate", *SMALL, *args, "--out", str(tmp_path / "x"))
    assert message in err


def test_other_bad_input(tmp_path, capsys, sapt2_folder):
    assert "file not found" in error_of(capsys, "tables", "check", str(tmp_path / "none"))
    assert "exactly one of them" in error_of(capsys, "tables", "eval", str(sapt2_folder))
    assert "--precision: unknown precision" in error_of(
        capsys, "tables", "eval", str(sapt2_folder), "--s", "5", "--precision", "double")
    assert "--chunk-bits must be comma-separated integers" in error_of(
        capsys, "lutexp", "--chunk-bits", "12,x")
    assert "--chunk-bits: chunk bits must be in 1..20" in error_of(
        capsys, "lutexp", "--chunk-bits", "25")
    assert "--precision fixed needs --table-format" in error_of(
        capsys, "lutexp", "--precision", "fixed")
    assert "--x-min must be < --x-max" in error_of(capsys, "lutexp", "--x-min", "3",
                                                  "--x-max", "1")
    with pytest.raises(SystemExit):  # argparse: not an integer
        main(["tables", "generate", "--function", "lj", "--n1", "abc", "--out", "x"])


def test_resolve_function():
    assert resolve_function("LJ") is get_builtin("lj").func
    assert callable(resolve_function("numpy:cos"))
    for spec, msg in [("numpy:pi", "not callable"), ("a:b:c", "malformed"),
                      ("", "built-in name")]:
        with pytest.raises(FixedQMCError, match=msg):
            resolve_function(spec)
    assert builtin_names() == ["hfd-b", "kinetic", "lm2m2", "psi", "sapt2", "lj"]


def test_table_functions_of_a_system_are_registered_not_imported(capsys):
    """The helium functions come through the entry-point group: tables list them without
    importing the helium system, which is imported when one is used."""
    import subprocess
    import sys
    code = ("import sys; from fixedqmc.tables.builtin import builtin_names; "
            "names = builtin_names(); "
            "print(names, any(m.startswith('fixedqmc.systems') for m in sys.modules)); "
            "from fixedqmc.tables.builtin import get_builtin; get_builtin('sapt2'); "
            "print('fixedqmc.systems.helium' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0].endswith("'sapt2', 'lj'] False") and out[1] == "True"
    assert main(["tables", "functions"]) == 0
    listed = capsys.readouterr().out
    assert "sapt2    K      r in [1.5, 15] A, sigma zero, transform none,exp" in listed


# ---------------------------------------------------------------------- benchmarks --
def test_bench_tables_prints_rates_and_target(capsys, monkeypatch):
    # one fixed format (shared with test_evaluate's compiled specialisation) keeps it short
    monkeypatch.setattr(bench_tables, "TABLE_PRECISIONS", ("float64", "fixed:48"))
    code, out, _ = run(capsys, "bench", "tables", "--n", "2000", "--repeats", "1")
    assert code == 0 and "kernel_per_s" in out and "call_per_s" in out
    assert "target: fixed path >= 100 M evaluations/s -- fixed:48:" in out


def test_bench_lutexp_prints_rates(capsys):
    code, out, _ = run(capsys, "bench", "lutexp", "--n", "2000", "--repeats", "1")
    assert code == 0
    for prec in ("float64", "float32", "fixed"):
        assert f"\n{prec:>9}" in out
    assert "elements_per_s" in out and "Fixed-array operations" in out
