"""``fixedqmc tune`` on a small helium cluster: the tuned plan passes the rule, costs no more
than the common width, is a precision spec that reproduces its estimate, and the folder
resumes; bad input is refused before any work."""

import importlib
import json
import shutil

import pytest

from fixedqmc.cli import main
from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.float_format import parse_float_format
from fixedqmc.numerics.policy import parse_precision, spec_items
from fixedqmc.state_files import read_state
from fixedqmc.sweep.estimates import paired_estimate, trial_system
from fixedqmc.sweep.tune import plan_spec, tune

tune_module = importlib.import_module("fixedqmc.sweep.tune")

TOML = """seed = 7
output = "{out}"
[system]
kind = "helium"
n_atoms = 3
[tables]
r_max = 40.0
[method]
walkers = 12
blocks = 8
equil_blocks = 2
steps_per_block = 6
"""
TOL = 0.01  # K
ARGS = {"tolerance": TOL, "kernels": "potential", "widths": "16:28:4", "workers": 1,
        "progress": False}


def write_input(folder, name="in.toml", **subs):
    folder.mkdir(parents=True, exist_ok=True)
    text = TOML.format(out=folder / "out")
    for k, v in subs.items():
        text = text.replace(k, v)
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune")
    return tune(write_input(folder), **ARGS)


@pytest.mark.heavy  # the tune of helium: its kernels in five contexts
def test_the_tuned_plan_passes_and_costs_no_more_than_the_common_width(tuned):
    s = tuned.summary
    assert s["common_width"] in (16, 20, 24, 28)
    assert abs(s["paired_diff"]) + 2 * s["paired_error"] <= TOL
    resources = s["resources"]
    assert resources[0] == "dsp"  # the FPGA model's first resource
    tuned_cost = tuple(s["cost"][r] for r in resources)
    common_cost = tuple(s["common_cost"][r] for r in resources)
    assert tuned_cost <= common_cost and s["cost"]["dsp"] < s["common_cost"]["dsp"]
    plan = tuned.plan
    assert (plan["floor"] <= plan["width"]).all()
    assert (plan["width"] <= plan["common_width"]).all()
    assert (plan["width"] < plan["common_width"]).any()
    assert 0.0 <= s["gap_bound"] < 1.0
    assert s["plans_judged"] == len(tuned.log) and s["plans_computed"] >= s["plans_judged"]
    for plan in ("tuned", "common"):
        c = s["confirmation"][plan]
        assert c["verdict"] in ("passes", "fails", "unresolved") and c["full_error"] > 0
        assert 0 < c["error_ratio_interval"][0] < c["error_ratio_interval"][1]
    assert s["confirmation"]["common"]["spec"] == s["common_spec"]
    for pre in ("", "common_"):  # what sampling at each plan does, on the same samples
        assert 0.5 < s[f"{pre}reweighted_ess"] <= 1.0 and s[f"{pre}reweighted_error"] > 0
    for name in ("plan.csv", "plans.csv", "tune.json", "tune.png", "counts.csv", "arrays.csv",
                 "plan.spec"):
        assert (tuned.output / name).stat().st_size > 0


@pytest.mark.heavy  # the tune of helium: its kernels in five contexts
def test_the_spec_is_a_precision_that_reproduces_the_estimate(tuned):
    """Built anew from the spec string, the system gives the summary's paired estimate bit
    for bit, and every variable has the width of its row."""
    policy = parse_precision(tuned.spec)
    widths = dict(zip(tuned.plan["variable"], tuned.plan["width"]))
    for name, w in widths.items():
        k, v = name.split(".")
        assert policy.for_variable(k, v).word_bits == w
    config = json.loads((tuned.output / "tune.json").read_text())["input"]
    ref = read_state(tuned.output / "reference.pkl")[0]
    again = paired_estimate(trial_system(config, tuned.spec, ref.profile), ref)
    assert again["paired_diff"] == tuned.summary["paired_diff"]
    assert again["paired_error"] == tuned.summary["paired_error"]
    assert plan_spec(widths) == tuned.spec


@pytest.mark.heavy
def test_an_interrupted_tune_resumes_to_the_same_plan(tuned, tmp_path, monkeypatch):
    """A folder that lost its last ten plans (as if stopped) and is stopped again after four
    more resumes, on a Dask cluster: only the missing plans are computed, and the plan is
    the same."""
    folder = tmp_path / "t"
    shutil.copytree(tuned.output, folder)
    for name in ("tune.json", "plan.csv", "plans.csv", "tune.png"):
        (folder / name).unlink()
    lost = sorted((folder / "plans").iterdir(), key=lambda p: p.stat().st_mtime)[-10:]
    for p in lost:
        p.unlink()
    real, calls = tune_module.evaluate_plan, []

    def stopped(*args):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(args[1])
        return real(*args)

    path = write_input(tmp_path / "again")
    monkeypatch.setattr(tune_module, "evaluate_plan", stopped)
    with pytest.raises(KeyboardInterrupt):
        tune(path, output=folder, confirm=False, **ARGS)
    monkeypatch.setattr(tune_module, "evaluate_plan", real)
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:  # the rest on a Dask cluster
        res = tune(path, output=folder, confirm=False, client=client, **ARGS)
    assert res.spec == tuned.spec
    assert res.summary["plans_computed"] == 6


@pytest.mark.heavy  # the tune of helium: its kernels in five contexts
def test_the_plan_file_is_read_back_as_the_precision(tuned, tmp_path):
    """``plan.spec`` (comments, one item per line) given as ``--precision @FILE`` is the
    tuned spec; a file that does not parse is named with the item that does not."""
    from fixedqmc.run.config import load_config
    path = write_input(tmp_path / "p")
    plan = tuned.output / "plan.spec"
    assert plan.read_text().startswith("# fixedqmc tune: potential")
    config = load_config(path, [f"precision='@{plan}'"])
    assert config["precision"] == tuned.spec
    bad = tmp_path / "bad.spec"
    bad.write_text("# a plan\ndefault=float64\npotential.u=fixed:0\n")
    with pytest.raises(FixedQMCError, match=r"precision file '.*bad.spec'.*fixed:0"):
        load_config(path, [f"precision='@{bad}'"])
    with pytest.raises(FixedQMCError, match="cannot read the precision file"):
        load_config(path, [f"precision='@{tmp_path / 'none.spec'}'"])


@pytest.mark.heavy  # the tune of helium: its kernels in five contexts
def test_the_command_prints_the_spec_and_refuses_another_input(tuned, tmp_path, capsys):
    folder = tmp_path / "t"
    shutil.copytree(tuned.output, folder)
    path = write_input(tmp_path / "cli")
    assert main(["tune", str(path), "--tolerance", str(TOL), "--kernels", "potential",
                 "--widths", "16:28:4", "--workers", "1", "--output", str(folder),
                 "--confirm-blocks", "10"]) == 0
    out = capsys.readouterr().out
    assert tuned.spec in out and "0 computed by this run" in out and "% saved" in out
    assert "full run at the tuned plan (10 blocks)" in out
    longer = json.loads((folder / "tune.json").read_text())["confirmation"]["common"]
    assert longer["blocks"] == 10 and longer["full_parted"] == 0  # paired with its own run
    assert (folder / "confirm_b10" / "reference.pkl").exists()
    other = write_input(tmp_path / "other", **{"seed = 7": "seed = 8"})
    with pytest.raises(FixedQMCError, match="holds a tune of another input"):
        tune(other, output=folder, **ARGS)


@pytest.mark.slow  # compiles helium's float-format kernels (about 5 min on 2 cores)
def test_mantissa_widths_are_tuned_the_same_way(tmp_path):
    """``family="float"``: a mantissa width per variable (``float:m<M>``, exponent bits from
    the profile), priced by the model's float operators."""
    res = tune(write_input(tmp_path), **{**ARGS, "family": "float", "widths": "6:18:4"},
               confirm=False)
    s = res.summary
    assert res.plan["precision"].str.startswith("float:m").all()
    fmts = [parse_float_format(f) for f in res.plan["format"]]  # names or float:e<E>m<M>
    assert [f.man_bits for f in fmts] == list(res.plan["width"])
    assert abs(s["paired_diff"]) + 2 * s["paired_error"] <= TOL
    assert s["cost"]["dsp"] <= s["common_cost"]["dsp"]
    assert parse_precision(res.spec).for_kernel("potential").sized_float


def test_a_mantissa_mode_rounds_every_tuned_width(tmp_path):
    """``family="float", mantissa_mode="toward_zero"`` (the example user system, whose
    kernel compiles in seconds): every plan judged, the tuned one included, rounds toward
    zero; the plan file says so; the tuned plan passes."""
    from tests.qmc.user_system import fermions_input
    res = tune(overrides=fermions_input(tmp_path / "f"), kernels="potential", tolerance=0.05, family="float",
               mantissa_mode="toward_zero", widths="4:16:4", min_width=2, workers=1,
               progress=False, confirm=False)
    mode = "toward_zero:subnormals,inf"
    s = res.summary
    assert s["precision"] == f"float:m<W>:{mode}" and s["family"] == "float"
    assert (res.plan["precision"] == [f"float:m{w}:{mode}" for w in res.plan["width"]]).all()
    assert all(f.endswith(f":{mode}") for f in res.plan["format"])
    assert all(item.endswith(mode) for item in spec_items(s["spec"])[1:])
    assert res.log["spec"].str.count(":toward_zero:").ge(1).all()
    assert f"float:m<W>:{mode}" in (res.output / "plan.spec").read_text()
    assert abs(s["paired_diff"]) + 2 * s["paired_error"] <= 0.05


def test_named_formats_are_tuned_from_a_ladder(tmp_path):
    """``family="formats"`` (the example user system): each variable takes a format of the
    ladder; every plan judged and the tuned plan name only those; the tuned plan passes
    and costs no more than the common format."""
    from tests.qmc.user_system import fermions_input
    ladder = ("bfloat16", "float16", "tf32", "float32")
    res = tune(overrides=fermions_input(tmp_path / "f"), kernels="potential", tolerance=0.05,
               family="formats", formats=",".join(ladder), workers=1, progress=False,
               confirm=False)
    s = res.summary
    assert s["family"] == "formats" and s["ladder"] == list(ladder)
    assert s["precision"].startswith("one of bfloat16 < float16 < tf32 < float32")
    assert (res.plan["precision"] == [ladder[w - 1] for w in res.plan["width"]]).all()
    for spec in res.log["spec"]:
        assert all(item.split("=")[1] in ladder for item in spec_items(spec)[1:])
    assert abs(s["paired_diff"]) + 2 * s["paired_error"] <= 0.05
    assert s["cost"]["dsp"] <= s["common_cost"]["dsp"]
    assert parse_precision(res.spec).for_kernel("potential")


@pytest.mark.parametrize("kw, match", [
    ({"family": "posit"}, "--family 'posit'"),
    ({"mantissa_mode": "stochastic"}, "needs --family float"),
    ({"mantissa_mode": "nearest_even"}, "needs --family float"),  # the default, given
    ({"family": "float", "mantissa_mode": "sideways"}, "--mantissa-mode 'sideways'"),
    ({"tolerance": -1.0}, "--tolerance must be a positive"),
    ({"objective": "watts"}, "--objective 'watts'"),
    ({"model": "asic"}, "unknown cost model 'asic'"),
    ({"model": "gpu-h100"}, "'gpu-h100' cannot price --family fixed formats"),
    ({"model": "gpu-h100", "family": "float", "objective": "dsp"},
     "--objective 'dsp': model 'gpu-h100' reports seconds, flops, bytes"),
    ({"min_width": 40}, "--min-width must be an integer in 1..16"),
    ({"widths": "16:90"}, "must lie in 1..64"),
    ({"confirm_blocks": 1}, "--confirm-blocks must be an integer >= 2"),
    ({"worker_wait": -1.0}, "--worker-wait must be a number of seconds >= 0"),
    ({"kernels": "potential,distance"}, "tune takes one kernel set"),
    ({"kernels": "nonesuch"}, "not in this system"),
    ({"formats": "bfloat16,float32"}, "--formats 'bfloat16,float32' is a ladder of named "
                                      "formats: it needs --family formats"),
    ({"family": "formats", "formats": "bfloat16,posit8"}, "unknown float format 'posit8'"),
    ({"family": "formats", "formats": "bfloat16"}, "two or more different float formats"),
    ({"family": "formats", "formats": ["tf32", "tf32"]}, "two or more different"),
    ({"family": "formats", "widths": "1:9"}, "must lie in 1..6"),
])
def test_bad_input_is_refused_before_any_work(tmp_path, kw, match):
    path = write_input(tmp_path)
    with pytest.raises(FixedQMCError, match=match):
        tune(path, **{**ARGS, **kw})
    assert not (tmp_path / "out" / "tune" / "reference.pkl").exists()


def test_a_kernel_the_paired_estimate_cannot_see_is_refused(tmp_path):
    with pytest.raises(FixedQMCError, match="wavefunction act.* only through sampling"):
        tune(write_input(tmp_path), **{**ARGS, "kernels": "potential+wavefunction"})


def test_a_tolerance_no_plan_meets_names_the_variables_that_block_it(tmp_path):
    with pytest.raises(FixedQMCError, match=r"no plan meets it: every variable at the widest "
                                            r"width, 20.*alone at that width, potential\.\w+"):
        tune(write_input(tmp_path), **{**ARGS, "tolerance": 1e-9, "widths": "16,20"})


def test_plan_spec_keeps_each_kernels_common_width_and_the_exceptions():
    plan = {"a.x": 20, "a.y": 20, "a.z": 12, "b.u": 9, "b.v": 11}
    assert plan_spec(plan) == ("default=float64,a=fixed:20,a.z=fixed:12,b=fixed:11,"
                               "b.u=fixed:9")
    assert plan_spec({"a.x": 7}, "float") == "default=float64,a=float:m7"
    ladder = tune_module._ladder("bfloat16,float16,float32")
    assert plan_spec({"a.x": 1, "a.y": 3, "a.z": 3}, ladder) == \
        "default=float64,a=float32,a.x=bfloat16"
    assert plan_spec({"b.u": 2}, "formats") == "default=float64,b=fp8e4m3"  # the default
