"""Sweeps of float formats: mantissa points (float:m<M>, exponent bits from the profile) and
named or spelled-out float formats, alone or with widths; the answer rule, table, figure
and resume as for widths; bad --mantissas / --formats refused before any work.

The end-to-end sweeps run the example user system (examples/trapped_fermions.py, kernel
``potential``: a sum of squared coordinates), whose kernels compile in seconds."""

import importlib
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from fixedqmc.cli import main
from fixedqmc.sweep import sweep
from fixedqmc.sweep.sweep import (
    Point,
    format_results,
    narrowest_mantissa,
    narrowest_width,
    parse_formats,
    parse_mantissa_mode,
    parse_mantissas,
    plot_sweep,
)
from tests.qmc.user_system import EXAMPLE, fermions_input

# One worker runs this module and test_user_system.py (make test: --dist loadgroup): both
# compile the example fermion system's kernels, float formats included.
pytestmark = pytest.mark.xdist_group("user_system")

#: the module (``fixedqmc.sweep.sweep`` as an attribute is the function)
sweep_module = importlib.import_module("fixedqmc.sweep.sweep")

E5M2 = "float:e5m2:nearest_even:nosubnormals,saturate"
FORMATS = f"bfloat16,fp8e4m3,{E5M2}"
TOLERANCE = 0.05  # hbar omega


def fermions(tmp_path, name):
    return fermions_input(tmp_path / name)


def run_fermions(tmp_path, name, **kw):
    return sweep(overrides=fermions(tmp_path, name), kernels="potential", workers=1,
                 progress=False, tolerance=TOLERANCE, **kw)


def fermions_toml(tmp_path, name):
    """The input of :func:`fermions` as a TOML file."""
    toml = tmp_path / f"{name}.toml"
    toml.write_text(f'plugins = ["{EXAMPLE}"]\noutput = "{tmp_path / name}"\nseed = 1\n'
                    '[system]\nkind = "trapped_fermions"\n[trial]\nalpha = 0.8\n'
                    '[method]\nkind = "vmc"\nwalkers = 40\nblocks = 6\nequil_blocks = 2\n'
                    'steps_per_block = 5\n')
    return toml


@pytest.fixture(scope="module")
def mantissa_sweep(tmp_path_factory):
    return run_fermions(tmp_path_factory.mktemp("float_sweep"), "m", mantissas="4,10,23")


@pytest.mark.heavy
def test_mantissa_points_answer_with_the_width_rule(mantissa_sweep):
    t = mantissa_sweep.table
    assert {"width", "mantissa", "format", "precision", "float_range"} <= set(t.columns)
    m = t.dropna(subset=["mantissa"]).sort_values("mantissa")
    assert m.mantissa.tolist() == [4, 10, 23] and m.width.isna().all()
    assert m.precision.tolist() == [f"default=float64,potential=float:m{k}" for k in (4, 10, 23)]
    assert t.precision.iloc[-1] == "float32" and t.mantissa.isna().iloc[-1]  # the float32 row
    for row in m.itertuples():  # every variable has the point's mantissa, E from the profile
        formats = json.loads(row.formats)
        assert set(formats) == {"potential.x", "potential.x2", "potential.sum"}
        assert all(f"m{row.mantissa}:" in f for f in formats.values())
        assert json.loads(row.float_range) == {}  # every range fits some exponent width
    d = (m.paired_diff.abs() + 2 * m.paired_error).to_numpy()
    assert d[0] > 3 * TOLERANCE and d[1] < TOLERANCE / 10 and d[2] < 1e-5
    a = mantissa_sweep.answer.set_index("kernels").loc["potential"]
    assert a.narrowest_mantissa == 10 == narrowest_mantissa(t, TOLERANCE, "paired")
    assert a.narrowest_width is None and a.reason_paired == "no fixed-point width was tried"
    assert "passing_formats" not in mantissa_sweep.answer  # no formats were swept
    assert a.note == ""
    summary = json.loads((mantissa_sweep.output / "answer.json").read_text())
    assert summary["mantissas"] == [4, 10, 23] and summary["widths"] == []
    assert summary["answer"][0]["narrowest_mantissa"] == 10
    assert sorted(p.name for p in (mantissa_sweep.output / "points").iterdir()) == [
        "potential_float32.json", "potential_m04.json", "potential_m10.json",
        "potential_m23.json"]
    saved = pd.read_parquet(mantissa_sweep.output / "sweep.parquet")
    assert saved.mantissa.tolist() == t.mantissa.tolist()
    assert (mantissa_sweep.output / "sweep.png").stat().st_size > 0


@pytest.mark.heavy
def test_a_second_call_computes_no_point(mantissa_sweep, monkeypatch):
    def refuse(*args, **kw):
        raise AssertionError("a finished point was computed again")
    monkeypatch.setattr(sweep_module, "run_point", refuse)
    again = sweep(overrides=fermions(mantissa_sweep.output.parents[1], "m"),
                  kernels="potential", workers=1, progress=False, tolerance=TOLERANCE,
                  mantissas="4,10,23")
    cols = ["kernels", "mantissa", "precision", "paired_diff", "paired_error", "formats"]
    pd.testing.assert_frame_equal(again.table[cols], mantissa_sweep.table[cols],
                                  check_exact=True)


def _resumed_copy(finished, folder, monkeypatch) -> list:
    """A copy of a finished sweep's folder as ``folder/sweep``, and the list the keys of
    the points computed from now on go to."""
    shutil.copytree(finished.output, folder / "sweep")
    computed = []
    real = sweep_module.run_point

    def counting(config, point, *args, **kw):
        computed.append(point.key)
        return real(config, point, *args, **kw)
    monkeypatch.setattr(sweep_module, "run_point", counting)
    return computed


@pytest.mark.heavy
def test_formats_added_to_a_finished_sweep_compute_only_their_points(mantissa_sweep,
                                                                    tmp_path, monkeypatch):
    """The same folder with --formats (and the mantissas again): only the three format
    points are computed; the answer names the formats that pass and those that fail."""
    computed = _resumed_copy(mantissa_sweep, tmp_path / "m", monkeypatch)
    res = run_fermions(tmp_path, "m", mantissas="4,10,23", formats=FORMATS)
    assert computed == ["potential_f_bfloat16", "potential_f_fp8e4m3",
                        "potential_f_float_e5m2_nearest_even_nosubnormals_saturate"]
    t = res.table
    f = t.dropna(subset=["format"]).set_index("format")
    assert f.index.tolist() == ["bfloat16", "fp8e4m3", E5M2]
    assert f.precision.tolist() == ["default=float64,potential=bfloat16",
                                    "default=float64,potential=fp8e4m3",
                                    f"default=float64,potential={E5M2}"]
    assert f.mantissa.isna().all() and f.width.isna().all()
    assert json.loads(f.loc["bfloat16", "formats"])["potential.sum"] == "bfloat16"
    a = res.answer.set_index("kernels").loc["potential"]
    assert a.narrowest_mantissa == 10
    # bfloat16 (7 mantissa bits, between 4 and 10) passes; the 8-bit formats do not
    assert a.passing_formats == ["bfloat16"] and a.failing_formats == ["fp8e4m3", E5M2]
    assert format_results(t, TOLERANCE, "paired") == {"bfloat16": True, "fp8e4m3": False,
                                                      E5M2: False}
    summary = json.loads((res.output / "answer.json").read_text())
    assert summary["formats"] == ["bfloat16", "fp8e4m3", E5M2]
    assert summary["answer"][0]["passing_formats"] == ["bfloat16"]
    assert "a format passes when its own point does" in summary["answer"][0]["rule"]


@pytest.mark.heavy
def test_a_mantissa_mode_sweeps_its_own_points_beside_the_default(mantissa_sweep, tmp_path,
                                                                 monkeypatch, capsys):
    """--mantissa-mode stochastic in the folder of a finished (nearest-even) mantissa sweep:
    only its own points are computed, under their own names; its kernels' formats round
    stochastically, and at M = 4 that changes the energy; the default's points and answer
    are untouched (the same command without the mode recomputes nothing)."""
    computed = _resumed_copy(mantissa_sweep, tmp_path / "m", monkeypatch)
    toml = fermions_toml(tmp_path, "m")
    assert main(["sweep", str(toml), "--kernels", "potential", "--mantissas", "4,10",
                 "--mantissa-mode", "stochastic", "--tolerance", str(TOLERANCE),
                 "--workers", "1", "--no-float32"]) == 0
    assert "float:m4:stochastic:subnormals,inf" in capsys.readouterr().out
    mode = "stochastic:subnormals,inf"
    assert computed == [f"potential_m04_{mode.replace(':', '_').replace(',', '_')}",
                        f"potential_m10_{mode.replace(':', '_').replace(',', '_')}"]
    t = pd.read_parquet(tmp_path / "m" / "sweep" / "sweep.parquet")
    assert t.mantissa.tolist() == [4, 10] and t.mantissa_mode.tolist() == [mode, mode]
    assert t.precision.tolist() == [f"default=float64,potential=float:m{k}:{mode}"
                                    for k in (4, 10)]
    for row in t.itertuples():
        assert all(f.endswith(f"m{row.mantissa}:{mode}")
                   for f in json.loads(row.formats).values())
    nearest = mantissa_sweep.table.set_index("mantissa")
    assert t.paired_diff.iloc[0] != nearest.paired_diff.loc[4]  # another rounding
    summary = json.loads((tmp_path / "m" / "sweep" / "answer.json").read_text())
    assert summary["mantissa_mode"] == mode and summary["mantissas"] == [4, 10]
    computed.clear()
    again = run_fermions(tmp_path, "m", mantissas="4,10,23")  # the default mode
    assert computed == []
    assert again.table.mantissa_mode.isna().all()
    assert again.summary["mantissa_mode"] == "nearest_even:subnormals,inf"
    cols = ["mantissa", "paired_diff", "paired_error"]
    pd.testing.assert_frame_equal(again.table[cols], mantissa_sweep.table[cols])


@pytest.mark.heavy
def test_a_formats_sweep_alone_from_the_command_line(mantissa_sweep, tmp_path, capsys):
    """--formats alone (no widths, no mantissas): format points and the float32 row; the
    printed answer names the passing formats.  A --plan with the bfloat16 point's spec gets
    its paired bits, a full run and verdicts, printed."""
    toml = fermions_toml(tmp_path, "f")
    spec = "default=float64,potential=bfloat16"
    assert main(["sweep", str(toml), "--kernels", "potential", "--formats", FORMATS,
                 "--tolerance", str(TOLERANCE), "--workers", "1", "--plan", f"pb={spec}"]) == 0
    out = capsys.readouterr().out
    assert "full_verdict" in out and spec in out
    assert "passing_formats" in out and "narrowest_width" not in out
    lines = out.splitlines()
    header = max(i for i, line in enumerate(lines) if "passing_formats" in line)
    assert lines[header + 1].split()[:2] == ["potential", "[bfloat16]"]  # the answer
    points = sorted(p.name for p in (tmp_path / "f" / "sweep" / "points").iterdir())
    e5m2 = "potential_f_float_e5m2_nearest_even_nosubnormals_saturate.json"
    assert points[1:] == ["potential_f_bfloat16.json", e5m2, "potential_f_fp8e4m3.json",
                          "potential_float32.json"] and points[0].startswith("plan_pb_")
    t = pd.read_csv(tmp_path / "f" / "sweep" / "sweep.csv")
    assert t.width.isna().all() and t.mantissa.isna().all()
    assert t.format.tolist()[:3] == ["bfloat16", "fp8e4m3", E5M2]
    # fp8e4m3's smallest normal is 2**-6: coordinates near the trap's centre go subnormal
    # (or to zero when squared); bfloat16's (2**-126) is never reached
    events = {f: json.loads(e) for f, e in zip(t.format, t.float_events) if isinstance(f, str)}
    assert events["bfloat16"] == {}
    assert events["fp8e4m3"] and set(events["fp8e4m3"]) <= {"potential.x", "potential.x2",
                                                             "potential.sum"}
    assert all(n > 0 and kind in ("underflow", "subnormal", "nan")
               for kinds in events["fp8e4m3"].values() for kind, n in kinds.items())
    plan, point = t[t.plan == "pb"].iloc[0], t[t.format == "bfloat16"].iloc[0]
    assert (plan.paired_diff, plan.paired_error) == (point.paired_diff, point.paired_error)
    v = json.loads((tmp_path / "f" / "sweep" / "answer.json").read_text())["plans"]["pb"]
    assert v["spec"] == spec and v["full_verdict"] in ("passes", "fails", "unresolved")
    assert np.isfinite(v["full_diff"]) and v["error_ratio"] > 0
    lo, hi = v["error_ratio_interval"]  # the bootstrap's, over the walkers
    assert 0 < lo < hi and (plan.full_error_ratio_low, plan.full_error_ratio_high) == (lo, hi)


@pytest.mark.heavy
def test_a_run_sizes_float_m_from_a_profile(mantissa_sweep, tmp_path):
    """fixedqmc run --profile: the profile's largest and smallest nonzero magnitudes reach
    the sizing of float:m<M> (the same formats as the sweep's point)."""
    from fixedqmc.run import run
    cfg = {**fermions(tmp_path, "run"), "precision": "default=float64,potential=float:m10"}
    cfg["method"] = {**cfg["method"], "blocks": 2, "equil_blocks": 1}
    s = run(overrides=cfg, profile={"stats": mantissa_sweep.summary["profile"]},
            progress=False).summary
    point = mantissa_sweep.table.query("mantissa == 10").formats.iloc[0]
    assert {k: v for k, v in s["formats"].items() if k.startswith("potential.")} == \
        json.loads(point)
    assert np.isfinite(s["energy"])


@pytest.mark.heavy
def test_profile_command_shows_the_formats_of_a_mantissa(mantissa_sweep, tmp_path, capsys):
    toml = fermions_toml(tmp_path, "p")
    assert main(["profile", str(toml), "--mantissa", "float:m10:toward_zero"]) == 0
    out = capsys.readouterr().out
    assert "float_format" in out and "float_range" in out and "no exponent width" not in out
    frame = pd.read_csv(tmp_path / "p" / "profile" / "profile.csv")
    assert frame.float_format.str.fullmatch(r"float:e\d+m10:toward_zero:subnormals,inf").all()
    assert frame.float_range.isna().all()  # "" for every variable: empty in the CSV
    assert main(["profile", str(toml), "--mantissa", "0", "--set",
                 f"output='{tmp_path / 'new' / 'p'}'"]) == 2
    assert "M=0 in 'float:m0' out of range" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


# ---------------------------------------------------------------- refused early --
@pytest.mark.parametrize("option, value, words", [
    ("--mantissas", "0:4", ["mantissas must lie in 1..52 bits; got [0]"]),
    ("--mantissas", "3:60:10", ["mantissas must lie in 1..52 bits; got [53]"]),
    ("--mantissas", "seven", ["--mantissas: 'seven' is not start:stop[:step]"]),
    ("--mantissas", "9:3", ["gives no mantissa width"]),
    ("--mantissa-mode", "sideways", ["--mantissa-mode 'sideways'", "roundings: nearest_even"]),
    ("--mantissa-mode", "stochastic:satur", ["unknown rounding or option 'satur'"]),
    ("--formats", "bfloat16,float9", ["unknown float format 'float9'"]),
    ("--formats", "float:e5m2:nearest_even:nosubnormals,satur",
     ["unknown float format 'satur'", "options stay with it"]),
    ("--formats", "float:e12m3", ["E=12 out of range; allowed: 2..11"]),
    ("--formats", "float:m7", ["has no exponent width", "--mantissas"]),
    ("--formats", ",", ["gives no float format"]),
    ("--plan", "nolabel", ["--plan 'nolabel': give LABEL=SPEC"]),
    ("--plan", "p=jastrow=bfloat16", ["plan 'p'", "kernel 'jastrow'"]),
])
def test_bad_mantissas_and_formats_are_refused_before_any_work(tmp_path, capsys, option,
                                                              value, words):
    out = tmp_path / "new" / "out"
    assert main(["sweep", option, value, "--set", f"output='{out}'"]) == 2
    err = capsys.readouterr().err
    assert "fixedqmc: error:" in err and "Traceback" not in err
    for w in words:
        assert w in err, err
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------------- pieces --
def test_a_format_list_keeps_each_formats_options():
    """Comma separated; a piece that is a format option (subnormals, nosubnormals, inf,
    saturate, fn) belongs to the format before it; labels are names or canonical specs."""
    assert parse_formats(f"fp8e4m3,{E5M2},bfloat16, tf32:toward_zero,float16:nosubnormals,"
                         "saturate,fp8e4m3") == [
        "fp8e4m3", E5M2, "bfloat16", "float:e8m10:toward_zero:subnormals,inf",
        "float:e5m10:nearest_even:nosubnormals,saturate"]
    # float32 / float64 as formats are emulated: spelled out, never the machine's float32
    assert parse_formats("float32,float:e8m7") == ["float:e8m23:nearest_even:subnormals,inf",
                                                    "bfloat16"]
    from fixedqmc.numerics.float_format import NAMED_FORMATS
    assert parse_formats([NAMED_FORMATS["tf32"], "fp8e5m2"]) == ["tf32", "fp8e5m2"]
    assert parse_mantissas("3:23:5") == [3, 8, 13, 18, 23] and parse_mantissas([7, 7]) == [7]


def test_point_keys_of_width_sweeps_are_unchanged():
    """Folders of width sweeps resume: their point files keep their names, and a saved
    row without the mantissa and format keys is the same point."""
    assert Point("all", 24).key == "all_w24" and Point("potential", 8).key == "potential_w08"
    assert Point("distance+kinetic", None).key == "distance+kinetic_float32"
    old_row = {"kernels": "all", "width": 24, "precision": "fixed:24"}
    assert Point.of_row(old_row) == Point("all", 24)
    assert Point.of_row({"kernels": "all", "width": None}).kind == "float32"
    p = Point("a+b", mantissa=7)
    assert (p.key, p.label, p.precision) == ("a+b_m07", "float:m7",
                                             "default=float64,a=float:m7,b=float:m7")
    s = Point("a", mantissa=7, mantissa_mode=parse_mantissa_mode("toward_zero:saturate"))
    assert (s.key, s.label) == ("a_m07_toward_zero_subnormals_saturate",
                                "float:m7:toward_zero:subnormals,saturate")
    assert Point.of_row({"kernels": "a", "mantissa": 7,
                         "mantissa_mode": "toward_zero:subnormals,saturate"}) == s
    assert parse_mantissa_mode("nearest_even:subnormals") == parse_mantissa_mode(None) == ""
    q = Point("all", format=E5M2)
    assert q.key == "all_f_float_e5m2_nearest_even_nosubnormals_saturate"
    assert Point.of_row({"kernels": "all", "width": float("nan"), "mantissa": None,
                         "format": E5M2}) == q
    from fixedqmc.numerics.policy import parse_precision
    pol = parse_precision(Point("a+b", format=E5M2).precision)  # its options stay with it
    assert str(pol.kernels["b"]) == E5M2 and pol.default.kind == "float64"


def _rows():
    """One kernel set: widths 16..32, mantissas 4..23, three formats and float32."""
    return pd.DataFrame({
        "kernels": "k",
        "width": pd.array([16, 24, 32, None, None, None, None, None, None, None], "Int64"),
        "mantissa": pd.array([None, None, None, 4, 7, 10, 23, None, None, None], "Int64"),
        "format": [None] * 7 + ["bfloat16", "fp8e4m3", None],
        "paired_diff": [0.5, 0.001, 0.0, 0.3, 0.02, 0.001, 1e-6, 0.004, 0.2, 1e-7],
        "paired_error": [0.0, 0.001, 0.0, 0.01, 0.001, 0.001, 1e-6, 0.001, 0.01, 1e-7],
        "full_diff": [0.5, 0.02, 0.0, 0.3, 0.001, 0.02, 0.0, 0.001, 0.2, 0.0],
        "full_diff_error": [0.01, 0.001, 0.001, 0.01, 0.001, 0.001, 0.001, 0.001, 0.01, 0.0]})


def test_mantissa_rule_and_formats_under_each_mode():
    rows = _rows()
    assert narrowest_width(rows, 0.01, "paired") == 24  # the mantissa rows do not enter
    assert narrowest_mantissa(rows, 0.01, "paired") == 10  # 7 passes too, but 7 < 10 fails
    assert narrowest_mantissa(rows, 0.03, "paired") == 7
    assert narrowest_mantissa(rows, 0.01, "full") == 23  # 10 fails the full rule
    assert narrowest_mantissa(rows, 0.01, "both") == 23
    assert format_results(rows, 0.01, "paired") == {"bfloat16": True, "fp8e4m3": False}
    assert format_results(rows, 0.01, "both") == {"bfloat16": True, "fp8e4m3": False}
    assert format_results(rows, 0.001, "full") == {"bfloat16": False, "fp8e4m3": False}
    blind = rows.assign(paired_diff=0.0, paired_error=0.0)  # acts through sampling only
    assert narrowest_mantissa(blind, 0.01, "paired") is None
    assert format_results(blind, 0.01, "paired") is None
    assert narrowest_mantissa(rows.drop(columns=["mantissa"]), 0.01, "paired") is None


def test_the_figure_puts_mantissas_and_formats_on_their_own_panel(tmp_path):
    rows = _rows()
    fig = plot_sweep(rows, 0.01, "both", tmp_path / "f.png",
                     answers=[{"kernels": "k", "narrowest_width": 24,
                               "narrowest_mantissa": 23}])
    assert len(fig.axes) == 2 and (tmp_path / "f.png").stat().st_size > 0
    width_ax, float_ax = fig.axes
    assert "word width" in width_ax.get_xlabel() and "mantissa bits" in float_ax.get_xlabel()
    labels = {t.get_text() for t in float_ax.texts}
    assert labels == {"bfloat16", "fp8e4m3"}  # formats as labelled points
    mode = "stochastic:subnormals,inf"
    named = plot_sweep(rows.assign(mantissa_mode=[None] * 3 + [mode] * 4 + [None] * 3),
                       0.01, "paired")
    assert f"float:m<M>:{mode}" in named.axes[1].get_xlabel()
    only_floats = rows[rows.width.isna()]
    assert len(plot_sweep(only_floats, 0.01, "paired").axes) == 1
    assert len(plot_sweep(rows[rows.mantissa.isna() & rows.format.isna()], 0.01,
                          "paired").axes) == 1
    assert np.isfinite(fig.axes[0].get_ylim()).all()
